//! What fio's output formats need, per fio job (a job clone, one of elevator's issuers),
//! gathered as fio gathers it (fio-compat.md §4.2–§4.4; fio's `stat.c`, `io_u.c`).

use super::hist::PlatHistogram;

/// fio's bandwidth and IOPS sampling interval, `bwavgtime` = `iopsavgtime` = 500 ms.
pub const AVG_TIME_NS: u64 = 500_000_000;

/// An operation's direction, as fio splits its figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FioDirection {
    /// `read`.
    Read,
    /// `write`.
    Write,
    /// `trim` (discards).
    Trim,
    /// `sync` (fsync, fdatasync).
    Sync,
}

impl FioDirection {
    /// The four, in fio's order.
    pub const ALL: [FioDirection; 4] =
        [FioDirection::Read, FioDirection::Write, FioDirection::Trim, FioDirection::Sync];

    /// fio's name for it.
    pub fn name(self) -> &'static str {
        match self {
            FioDirection::Read => "read",
            FioDirection::Write => "write",
            FioDirection::Trim => "trim",
            FioDirection::Sync => "sync",
        }
    }
}

/// fio's `io_stat`: count, min, max and a running (Welford) mean and sum of squared
/// deviations, from which the standard deviation uses n − 1 (`stat.c` `add_stat_sample`,
/// `calc_lat`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IoStat {
    /// Samples.
    pub samples: u64,
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Running mean.
    pub mean: f64,
    /// Running sum of squared deviations from the mean (fio's `S`).
    pub s: f64,
}

impl IoStat {
    /// Adds one sample (fio's `add_stat_sample`).
    pub fn add(&mut self, value: u64) {
        if self.samples == 0 || value < self.min {
            self.min = value;
        }
        self.max = self.max.max(value);
        let delta = value as f64 - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (value as f64 - self.mean);
        }
        self.samples += 1;
    }

    /// The standard deviation (n − 1), 0 with fewer than two samples (fio's `calc_lat`).
    pub fn stddev(&self) -> f64 {
        if self.samples > 1 { (self.s / (self.samples - 1) as f64).sqrt() } else { 0.0 }
    }

    /// Pools `other` into this one exactly (fio's `__sum_stat`, for latencies).
    pub fn pool(&mut self, other: &IoStat) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *other;
            return;
        }
        let (n1, n2) = (self.samples as f64, other.samples as f64);
        let delta = other.mean - self.mean;
        self.mean = (other.mean * n2 + self.mean * n1) / (n1 + n2);
        self.s += other.s + delta * delta * (n1 * n2) / (n1 + n2);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.samples += other.samples;
    }

    /// Adds `other` member by member (fio's `sum_stat` with `pure_sum`, for bandwidth and
    /// IOPS under `group_reporting`: min, max, mean, S and samples are all summed).
    pub fn sum(&mut self, other: &IoStat) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *other;
            return;
        }
        self.min += other.min;
        self.max += other.max;
        self.mean += other.mean;
        self.s += other.s;
        self.samples += other.samples;
    }
}

/// One direction of one fio job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirectionStats {
    /// Bytes completed.
    pub io_bytes: u64,
    /// Operations completed (fio's `total_io_u`).
    pub total_ios: u64,
    /// Short operations (fio's `short_io_u`): none in the simulator.
    pub short_ios: u64,
    /// Dropped operations (fio's `drop_io_u`): none in the simulator.
    pub drop_ios: u64,
    /// Submission latency: never sampled (see the module's deviations).
    pub slat: IoStat,
    /// Completion latency.
    pub clat: IoStat,
    /// The completion latencies in fio's buckets.
    pub clat_hist: PlatHistogram,
    /// Whole latency (submission to completion).
    pub lat: IoStat,
    /// Bandwidth samples, KiB/s over each 500 ms window.
    pub bw: IoStat,
    /// IOPS samples over each 500 ms window.
    pub iops: IoStat,
    /// fio's `runtime[ddir]` in ms: the job's run time when it did I/O this way, else 0.
    pub runtime_ms: u64,
    /// Bytes and operations since the last interval sample.
    window_bytes: u64,
    window_ios: u64,
}

impl DirectionStats {
    /// Folds `other` in as fio's `sum_thread_stats` sums one direction: counts and bytes
    /// added, latencies pooled, histograms merged, bandwidth and IOPS statistics added
    /// member by member, runtime the longest.
    fn absorb(&mut self, other: &DirectionStats) {
        self.io_bytes += other.io_bytes;
        self.total_ios += other.total_ios;
        self.short_ios += other.short_ios;
        self.drop_ios += other.drop_ios;
        self.slat.pool(&other.slat);
        self.clat.pool(&other.clat);
        self.lat.pool(&other.lat);
        self.clat_hist.merge(&other.clat_hist);
        self.bw.sum(&other.bw);
        self.iops.sum(&other.iops);
        self.runtime_ms = self.runtime_ms.max(other.runtime_ms);
    }
}

/// One completed operation, for fio's log files (fio-compat.md §4.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoSample {
    /// When it completed, ns on the simulated clock.
    pub completed_ns: u64,
    /// Submission to completion, ns.
    pub latency_ns: u64,
    /// Its direction (read, write or trim).
    pub direction: FioDirection,
    /// Its size.
    pub bytes: u64,
    /// Its byte offset.
    pub offset_bytes: u64,
}

/// One fio job's figures (or a `group_reporting` group's, merged).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobStats {
    /// Read, write, trim, sync, in [`FioDirection::ALL`]'s order.
    pub directions: [DirectionStats; 4],
    /// fio's `io_u_map`: I/Os submitted at in-flight depth 1, 2–3, 4–7, …, ≥ 64.
    pub depth_map: [u64; 7],
    /// fio's `io_u_submit`: submission calls moving 0, 1–4, 5–8, …, > 64 I/Os.
    pub submit_map: [u64; 7],
    /// Submission calls.
    pub total_submit: u64,
    /// fio's `io_u_complete`: reaping calls returning 0, 1–4, …, > 64 I/Os.
    pub complete_map: [u64; 7],
    /// Reaping calls.
    pub total_complete: u64,
    /// Completions by latency, ns buckets < 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000.
    pub lat_n: [u64; 10],
    /// The same in µs.
    pub lat_u: [u64; 10],
    /// ms buckets: the same ten, < 2000 and ≥ 2000.
    pub lat_m: [u64; 12],
    /// User CPU time in ns.
    pub usr_ns: u64,
    /// System CPU time in ns.
    pub sys_ns: u64,
    /// Context switches, major and minor faults: not modelled, 0.
    pub ctx: u64,
    /// Major faults.
    pub majf: u64,
    /// Minor faults.
    pub minf: u64,
    /// fio's `total_run_time` in ms (summed under `group_reporting`).
    pub job_runtime_ms: u64,
    /// When the job started, ns on the simulated clock.
    pub start_ns: u64,
    /// Jobs these figures cover: 1, or a `group_reporting` group's count (fio's `members`).
    pub members: u32,
    /// Every read, write and trim completed, in completion order, when the run writes fio's
    /// log files ([`crate::PhaseRecorder::keep_io_samples`]); `None` otherwise. Per job:
    /// [`JobStats::merge`] leaves them out (fio's logs are per job, `group_reporting` or not).
    pub io_samples: Option<Vec<IoSample>>,
    /// Operations in flight now (while recording).
    in_flight: u32,
    /// The end of the current 500 ms window, ns on the simulated clock.
    next_sample_ns: u64,
}

/// fio's `update_runtime`: µs rounded up to ms.
fn ns_to_runtime_ms(ns: u64) -> u64 {
    (ns / 1000).div_ceil(1000)
}

impl JobStats {
    /// CPU time `ns` as a percentage of the job's run time (fio's `usr_cpu`/`sys_cpu`); 0
    /// for a job that did not run.
    pub fn cpu_percent(&self, ns: u64) -> f64 {
        match self.job_runtime_ms {
            0 => 0.0,
            runtime => ns as f64 / 1e6 * 100.0 / runtime as f64,
        }
    }

    /// A job starting at `start_ns` on the simulated clock.
    pub fn new(start_ns: u64) -> JobStats {
        JobStats {
            start_ns,
            members: 1,
            next_sample_ns: start_ns + AVG_TIME_NS,
            ..JobStats::default()
        }
    }

    /// An operation is submitted, alone (one I/O per call, as the simulator's issuers do):
    /// fio's `io_u_mark_depth` at the depth it makes and `io_u_mark_submit`.
    pub fn submitted(&mut self, now_ns: u64) {
        self.sample_until(now_ns);
        self.in_flight += 1;
        self.depth_map[depth_bucket(self.in_flight)] += 1;
        self.submit_map[batch_bucket(1)] += 1;
        self.total_submit += 1;
    }

    /// An operation of `bytes` in `direction`, submitted at `submitted_ns`, completed at
    /// `completed_ns`.
    pub fn completed(
        &mut self,
        direction: FioDirection,
        bytes: u64,
        submitted_ns: u64,
        completed_ns: u64,
    ) {
        self.sample_until(completed_ns);
        self.in_flight = self.in_flight.saturating_sub(1);
        self.complete_map[batch_bucket(1)] += 1;
        self.total_complete += 1;
        let latency_ns = completed_ns.saturating_sub(submitted_ns);
        let stats = &mut self.directions[direction as usize];
        stats.total_ios += 1;
        stats.io_bytes += bytes;
        stats.window_bytes += bytes;
        stats.window_ios += 1;
        stats.clat.add(latency_ns);
        // Submission latency is never sampled (the module's deviations), so the whole latency
        // is the completion latency: the same samples in the same order, hence the same
        // statistic bit for bit; a copy costs less than a second running mean's division.
        stats.lat = stats.clat;
        stats.clat_hist.add(latency_ns);
        if direction != FioDirection::Sync {
            self.mark_latency(latency_ns);
        }
    }

    /// Keeps the operation for the log files when they are kept ([`JobStats::io_samples`]);
    /// syncs are not logged (fio's `add_log_sample` takes only reads, writes and trims).
    pub fn sample_io(
        &mut self,
        direction: FioDirection,
        bytes: u64,
        offset_bytes: u64,
        submitted_ns: u64,
        completed_ns: u64,
    ) {
        if let Some(samples) = self.io_samples.as_mut()
            && direction != FioDirection::Sync
        {
            samples.push(IoSample {
                completed_ns,
                latency_ns: completed_ns.saturating_sub(submitted_ns),
                direction,
                bytes,
                offset_bytes,
            });
        }
    }

    /// fio's `io_u_mark_latency`: one completion in its ns, µs or ms bucket.
    fn mark_latency(&mut self, latency_ns: u64) {
        const TEN: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
        let bucket = |value: u64| TEN.iter().position(|&limit| value < limit);
        if latency_ns < 1000 {
            self.lat_n[bucket(latency_ns).unwrap_or(9)] += 1;
        } else if latency_ns < 1_000_000 {
            self.lat_u[bucket(latency_ns / 1000).unwrap_or(9)] += 1;
        } else {
            let ms = latency_ns / 1_000_000;
            let index = match bucket(ms) {
                Some(index) => index,
                None if ms < 2000 => 10,
                None => 11,
            };
            self.lat_m[index] += 1;
        }
    }

    /// Takes the interval samples of every 500 ms window that ended by `now_ns` (fio's
    /// `add_bw_samples`/`add_iops_samples`: KiB/s and I/O/s over the window; a window without
    /// I/O in a direction gives no sample).
    fn sample_until(&mut self, now_ns: u64) {
        while now_ns >= self.next_sample_ns {
            for stats in &mut self.directions[..3] {
                if stats.window_ios > 0 {
                    let spent_ms = AVG_TIME_NS / 1_000_000;
                    stats.bw.add(stats.window_bytes * 1000 / spent_ms / 1024);
                    stats.iops.add(stats.window_ios * 1000 / spent_ms);
                }
                stats.window_bytes = 0;
                stats.window_ios = 0;
            }
            self.next_sample_ns += AVG_TIME_NS;
        }
    }

    /// The job ended at `end_ns` having used `usr_ns` and `sys_ns` of CPU: closes the last
    /// whole window and sets the run times (fio's `update_runtime`: a direction's runtime is
    /// the job's, when it did I/O that way).
    pub fn finish(&mut self, end_ns: u64, usr_ns: u64, sys_ns: u64) {
        self.sample_until(end_ns);
        let runtime_ms = ns_to_runtime_ms(end_ns.saturating_sub(self.start_ns));
        self.job_runtime_ms = runtime_ms;
        for stats in &mut self.directions[..3] {
            stats.runtime_ms = if stats.io_bytes > 0 { runtime_ms } else { 0 };
        }
        self.usr_ns = usr_ns;
        self.sys_ns = sys_ns;
    }

    /// Folds another job of the same reporting group in (fio's `sum_thread_stats`,
    /// fio-compat.md §4.4): counts, histograms and CPU summed, latencies pooled, bandwidth
    /// and IOPS statistics added member by member, runtime the longest.
    pub fn merge(&mut self, other: &JobStats) {
        for (mine, theirs) in self.directions.iter_mut().zip(&other.directions) {
            mine.absorb(theirs);
        }
        let add = |mine: &mut [u64], theirs: &[u64]| {
            mine.iter_mut().zip(theirs).for_each(|(a, b)| *a += b);
        };
        add(&mut self.depth_map, &other.depth_map);
        add(&mut self.submit_map, &other.submit_map);
        add(&mut self.complete_map, &other.complete_map);
        add(&mut self.lat_n, &other.lat_n);
        add(&mut self.lat_u, &other.lat_u);
        add(&mut self.lat_m, &other.lat_m);
        self.total_submit += other.total_submit;
        self.total_complete += other.total_complete;
        self.usr_ns += other.usr_ns;
        self.sys_ns += other.sys_ns;
        self.ctx += other.ctx;
        self.majf += other.majf;
        self.minf += other.minf;
        self.job_runtime_ms += other.job_runtime_ms;
        self.members += other.members;
    }

    /// fio's `unified_rw_reporting=mixed`: read, write and trim folded into the first
    /// direction as `sum_thread_stats` does for `UNIFIED_MIXED` (latencies pooled,
    /// bandwidth and IOPS statistics summed member by member, bytes and counts summed,
    /// runtime the longest); write and trim left empty, sync untouched.
    pub fn fold_mixed(&mut self) {
        let [read, write, trim, _] = &mut self.directions;
        for other in [write, trim] {
            read.absorb(other);
            *other = DirectionStats::default();
        }
    }

    /// Read, write and trim operations completed (fio's `ddir_rw_sum(total_io_u)`).
    pub fn rw_ios(&self) -> u64 {
        self.directions[..3].iter().map(|stats| stats.total_ios).sum()
    }
}

/// fio's `io_u_mark_depth` bucket for an in-flight depth.
fn depth_bucket(depth: u32) -> usize {
    match depth {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// fio's `io_u_mark_submit`/`io_u_mark_complete` bucket for a call moving `count` I/Os.
fn batch_bucket(count: u32) -> usize {
    match count {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// fio's `stat_calc_dist`: each count as a percentage of `total` (0 when nothing counted).
pub fn distribution(counts: &[u64], total: u64) -> Vec<f64> {
    counts
        .iter()
        .map(
            |&count| {
                if total == 0 { 0.0 } else { (100.0 * count as f64 / total as f64).min(100.0) }
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves fio's Welford statistics: 2, 4, 4, 4, 5, 5, 7, 9 has mean 5 and sample
    // standard deviation sqrt(32/7).
    #[test]
    fn io_stat_mean_and_sample_stddev() {
        let mut stat = IoStat::default();
        for value in [2, 4, 4, 4, 5, 5, 7, 9] {
            stat.add(value);
        }
        assert_eq!((stat.samples, stat.min, stat.max), (8, 2, 9));
        assert!((stat.mean - 5.0).abs() < 1e-12);
        assert!((stat.stddev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    }

    // Proves group_reporting's arithmetic, worked by hand: latencies pool exactly (the
    // merged mean and stddev are those of all samples together), bandwidth statistics add
    // member by member (min 100 + 300, mean 150 + 300, samples 2 + 1), counts add and the
    // runtime is the longest member's while job_runtime sums.
    #[test]
    fn group_reporting_merge_by_hand() {
        let mut a = JobStats::new(0);
        let mut b = JobStats::new(0);
        // Job a: two 4 KiB reads of 1 and 3 µs; job b: one 8 KiB read of 5 µs.
        for (job, latencies) in [(&mut a, vec![1000u64, 3000]), (&mut b, vec![5000])] {
            for latency in latencies {
                job.submitted(0);
                job.completed(FioDirection::Read, 4096, 0, latency);
            }
        }
        b.directions[0].io_bytes += 4096; // b's read was 8 KiB
        a.directions[0].bw.add(100);
        a.directions[0].bw.add(200);
        b.directions[0].bw.add(300);
        a.finish(2_000_000, 10, 20);
        b.finish(3_500_000, 30, 40);
        let mut merged = a.clone();
        merged.merge(&b);
        let read = &merged.directions[0];
        assert_eq!((read.io_bytes, read.total_ios), (16384, 3));
        assert_eq!((read.clat.min, read.clat.max), (1000, 5000));
        assert!((read.clat.mean - 3000.0).abs() < 1e-9);
        // Samples 1000, 3000, 5000: S = 8e6, stddev = sqrt(8e6 / 2) = 2000.
        assert!((read.clat.stddev() - 2000.0).abs() < 1e-9);
        assert_eq!((read.bw.min, read.bw.max, read.bw.samples), (400, 500, 3));
        assert!((read.bw.mean - 450.0).abs() < 1e-9);
        assert_eq!(read.runtime_ms, 4, "the longest: 3.5 ms rounds up to 4");
        assert_eq!(merged.job_runtime_ms, 2 + 4);
        assert_eq!((merged.usr_ns, merged.sys_ns), (40, 60));
        assert_eq!(read.clat_hist.total(), 3);
        // The whole latency (submission to completion) pools as the completion latency does.
        assert_eq!((read.lat.samples, read.lat.min, read.lat.max), (3, 1000, 5000));
        assert!((read.lat.stddev() - 2000.0).abs() < 1e-9);
        assert_eq!(merged.lat_u[..3], [1, 1, 1], "1 µs in \"2\", 3 µs in \"4\", 5 µs in \"10\"");
    }

    // Proves the interval samples: 4 KiB completing every 1 ms for 1.2 s gives two whole
    // 500 ms windows (the partial third gives none) of 500 I/Os: 1000 IOPS, 4000 KiB/s.
    #[test]
    fn bandwidth_samples_every_500_ms() {
        let mut job = JobStats::new(0);
        for ms in 1..=1200u64 {
            job.submitted((ms - 1) * 1_000_000);
            job.completed(FioDirection::Write, 4096, (ms - 1) * 1_000_000, ms * 1_000_000);
        }
        job.finish(1_200_000_000, 0, 0);
        let write = &job.directions[1];
        assert_eq!(write.bw.samples, 2);
        // The completion at exactly 500 ms falls in the second window (fio samples when
        // 500 ms have passed, before that completion is counted).
        assert_eq!((write.iops.min, write.iops.max), (998, 1000));
        assert_eq!((write.bw.min, write.bw.max), (3992, 4000));
        assert_eq!(write.runtime_ms, 1200);
        assert_eq!(job.depth_map[0], 1200, "one in flight at a time: depth 1");
    }
}
