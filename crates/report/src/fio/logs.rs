//! fio's log files (fio-compat.md §4.6; fio's `init.c` `gen_log_name`, `stat.c`
//! `add_log_sample`, `__add_samples`, `finalize_logs`; `iolog.c` `flush_samples`):
//! `write_bw_log`, `write_lat_log` (lat, slat, clat), `write_iops_log`, `write_hist_log`
//! (clat_hist), with `log_avg_msec`, `log_window_value` (`log_max_value`: avg, max, both),
//! `log_offset`, `log_prio`, `log_issue_time`, `log_hist_msec`, `log_hist_coarseness` and
//! `per_job_logs`, from the operations each job's issuer kept
//! ([`crate::PhaseRecorder::keep_io_samples`]).
//!
//! Names: `PREFIX_TYPE.N.log` (`N` = fio's `thread_number`: 1-based over every job clone of
//! the file, in order), `PREFIX_TYPE.log` with `per_job_logs=0` (jobs sharing a name append in
//! job order); `PREFIX` is the option's value, or the job's name when it has none. Lines
//! (fio 3.38's `flush_samples`, §4.6; `value1` from 3.37, `issue_time_ns` from 3.38):
//! `time_ms, value[, value1], direction, block_size[, offset], priority[, issue_time_ns]`,
//! time since the job's start on the simulated clock; `value1` with `log_window_value=both`,
//! `issue_time_ns` with `log_issue_time`. The histogram log's lines are
//! `time_ms, direction, block_size, bin…` ([`hist_text`]).
//!
//! Values: clat and lat in ns; bw in KiB/s, iops in I/Os. Without `log_avg_msec` every
//! operation gives a line (bw: `bytes · 10^6 / clat_ns`, iops: 1, as fio's per-I/O
//! `add_bw_sample`/`add_iops_sample`). With it, latency logs average each direction's window
//! (a line when an operation arrives `log_avg_msec` or more after the window's start, and at
//! the job's end: fio's `add_log_sample`, `finalize_logs`), block size and offset 0; bw and
//! iops logs take one line per direction per window of `log_avg_msec` with I/O, the rate over
//! the window (fio's `__add_samples`), block size the job's when it has one.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::hist::{PLAT_NR, val_to_idx};
use super::stats::{IoSample, IoStat};
use super::{FioJobSetup, FioSetup};
use crate::model::Run;

/// A job's log options (fio-compat.md §2.1 "Logging and reporting").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioLogs {
    /// `write_bw_log`: its prefix (empty: the job's name).
    pub bw: Option<String>,
    /// `write_lat_log`: its prefix, for the lat, slat and clat logs.
    pub lat: Option<String>,
    /// `write_iops_log`: its prefix.
    pub iops: Option<String>,
    /// `log_avg_msec` (0: a line per operation).
    pub avg_msec: u64,
    /// `log_max_value`: windows log their largest value, not their mean.
    pub max_value: bool,
    /// `log_offset`: lines carry the operation's offset.
    pub offset: bool,
    /// `log_prio`: lines carry the I/O priority as `0x%04x` (else 1 for the RT class, 0).
    pub prio: bool,
    /// `per_job_logs=0`: one file per prefix for all jobs, without `.N`.
    pub shared: bool,
    /// The job's I/O priority (fio's `ioprio`: class << 13 | level; 0 when not set).
    pub ioprio: u32,
    /// `log_window_value=both`: every line of the bw, iops and latency logs carries a second
    /// value, the window's largest after its mean (0 on per-operation lines).
    pub window_both: bool,
    /// `log_issue_time`: lines end with the I/O's issue time, ns since the job's start (clat
    /// and slat logs per operation; 0 elsewhere).
    pub issue_time: bool,
    /// `write_hist_log`: its prefix, for the `clat_hist` log.
    pub hist: Option<String>,
    /// `log_hist_msec` (0: the histogram log stays empty, as fio's).
    pub hist_msec: u64,
    /// `log_hist_coarseness` (0 to 6): each step halves the histogram log's bins.
    pub hist_coarseness: u32,
}

impl FioLogs {
    /// Whether any log is asked for.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.lat.is_some() || self.iops.is_some() || self.hist.is_some()
    }
}

/// Which log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bw,
    Iops,
    Lat,
    Slat,
    Clat,
    ClatHist,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Bw => "bw",
            Kind::Iops => "iops",
            Kind::Lat => "lat",
            Kind::Slat => "slat",
            Kind::Clat => "clat",
            Kind::ClatHist => "clat_hist",
        }
    }
}

/// fio's log file name (`gen_log_name`), in `dir` unless the prefix is absolute, with
/// `.TAG` before `.log` when `tag` is given (several schedulers).
fn file_name(
    dir: &Path,
    prefix: &str,
    job: &FioJobSetup,
    kind: Kind,
    thread_number: usize,
    tag: Option<&str>,
) -> PathBuf {
    let prefix = if prefix.is_empty() { job.name.as_str() } else { prefix };
    let mut name = if job.logs.shared {
        format!("{prefix}_{}", kind.name())
    } else {
        format!("{prefix}_{}.{thread_number}", kind.name())
    };
    if let Some(tag) = tag {
        name.push('.');
        name.push_str(tag);
    }
    name.push_str(".log");
    dir.join(name)
}

/// One windowed line (`flush_samples` of a `__add_stat_to_log` sample): offset and issue
/// time 0, the job's priority.
fn line(
    out: &mut String,
    time_ms: u64,
    values: (u64, u64),
    direction: usize,
    bs: u64,
    logs: &FioLogs,
) {
    head(out, time_ms, values, logs);
    tail(out, direction, bs, 0, 0, logs);
}

/// A line's time and value columns: `time, value`, and `value1` with
/// `log_window_value=both` (fio's `LOG_AVG_MAX_SAMPLE_BIT`).
fn head(out: &mut String, time_ms: u64, (value, value1): (u64, u64), logs: &FioLogs) {
    out.push_str(&format!("{time_ms}, {value}"));
    if logs.window_both {
        out.push_str(&format!(", {value1}"));
    }
}

/// A line's remaining columns: `direction, block_size[, offset], priority[, issue_time]`.
fn tail(out: &mut String, direction: usize, bs: u64, offset: u64, issue_ns: u64, logs: &FioLogs) {
    out.push_str(&format!(", {direction}, {bs}"));
    if logs.offset {
        out.push_str(&format!(", {offset}"));
    }
    if logs.prio {
        out.push_str(&format!(", 0x{:04x}", logs.ioprio));
    } else {
        // ioprio_value_is_class_rt: class 1 is real time.
        out.push_str(&format!(", {}", u32::from(logs.ioprio >> 13 == 1)));
    }
    if logs.issue_time {
        out.push_str(&format!(", {issue_ns}"));
    }
    out.push('\n');
}

/// fio's `__add_samples` every `avg_msec` from the job's start: per window end, per direction
/// with I/O in the window, the rate over it (`bw`: KiB/s, else I/O/s); no sample for the
/// final partial window.
fn window_rates(
    bw: bool,
    samples: &[IoSample],
    start_ns: u64,
    end_ns: u64,
    avg_msec: u64,
) -> Vec<(u64, usize, u64)> {
    let elapsed_ms = |at_ns: u64| at_ns.saturating_sub(start_ns) / 1_000_000;
    let end_ms = elapsed_ms(end_ns);
    let mut rates = Vec::new();
    let mut window_end_ms = avg_msec;
    let mut next = 0;
    while window_end_ms <= end_ms {
        let mut bytes = [0u64; 3];
        let mut ios = [0u64; 3];
        while next < samples.len() && elapsed_ms(samples[next].completed_ns) < window_end_ms {
            bytes[samples[next].direction as usize] += samples[next].bytes;
            ios[samples[next].direction as usize] += 1;
            next += 1;
        }
        for direction in 0..3 {
            if ios[direction] > 0 {
                let value = if bw {
                    bytes[direction] * 1000 / avg_msec / 1024
                } else {
                    ios[direction] * 1000 / avg_msec
                };
                rates.push((window_end_ms, direction, value));
            }
        }
        window_end_ms += avg_msec;
    }
    rates
}

/// fio's bandwidth and IOPS statistics when the job writes a bw or iops log
/// (`init.c`: the log's `log_avg_msec` becomes `bw_avg_time`/`iops_avg_time`): with
/// `log_avg_msec=0` one sample per operation (`add_bw_sample`: `bytes · 10^6 / clat_ns`;
/// `add_iops_sample`: 1) and no interval samples, else interval samples every `log_avg_msec`.
/// Replaces `stats`' 500 ms figures of the logged kind; needs the kept operations.
pub(crate) fn resample(stats: &mut super::JobStats, logs: &FioLogs) {
    let Some(samples) = stats.io_samples.take() else { return };
    let end_ns = samples.last().map_or(stats.start_ns, |last| last.completed_ns);
    for (bw, logged) in [(true, logs.bw.is_some()), (false, logs.iops.is_some())] {
        if !logged {
            continue;
        }
        let mut fresh = [IoStat::default(); 3];
        if logs.avg_msec == 0 {
            for sample in &samples {
                let value = if bw {
                    (sample.bytes * 1_000_000).checked_div(sample.latency_ns).unwrap_or(0)
                } else {
                    1
                };
                fresh[sample.direction as usize].add(value);
            }
        } else {
            for (_, direction, value) in
                window_rates(bw, &samples, stats.start_ns, end_ns, logs.avg_msec)
            {
                fresh[direction].add(value);
            }
        }
        for (direction, stat) in stats.directions[..3].iter_mut().zip(fresh) {
            if bw {
                direction.bw = stat;
            } else {
                direction.iops = stat;
            }
        }
    }
    stats.io_samples = Some(samples);
}

/// The lines of one log of one job.
fn log_text(
    kind: Kind,
    samples: &[IoSample],
    start_ns: u64,
    end_ns: u64,
    job: &FioJobSetup,
) -> String {
    let logs = &job.logs;
    let mut out = String::new();
    let elapsed_ms = |at_ns: u64| at_ns.saturating_sub(start_ns) / 1_000_000;
    // The simulator's submissions take no time: no slat samples (module deviations).
    if kind == Kind::Slat {
        return out;
    }
    if kind == Kind::ClatHist {
        return hist_text(samples, start_ns, job);
    }
    if logs.avg_msec == 0 {
        for sample in samples {
            let value = match kind {
                Kind::Lat | Kind::Clat | Kind::Slat | Kind::ClatHist => sample.latency_ns,
                Kind::Bw => (sample.bytes * 1_000_000).checked_div(sample.latency_ns).unwrap_or(0),
                Kind::Iops => 1,
            };
            // fio's clat and slat samples carry the issue time (`ntime_since(epoch,
            // issue_time)`); lat, bw and iops samples 0. Submission is the issue here.
            let issue_ns = match kind {
                Kind::Clat | Kind::Slat => {
                    (sample.completed_ns - sample.latency_ns).saturating_sub(start_ns)
                }
                _ => 0,
            };
            // Per-operation samples have no second value (`sample_val`: val1 = 0).
            head(&mut out, elapsed_ms(sample.completed_ns), (value, 0), logs);
            tail(
                &mut out,
                sample.direction as usize,
                sample.bytes,
                sample.offset_bytes,
                issue_ns,
                logs,
            );
        }
        return out;
    }
    let avg_msec = logs.avg_msec;
    match kind {
        Kind::Bw | Kind::Iops => {
            for (time_ms, direction, value) in
                window_rates(kind == Kind::Bw, samples, start_ns, end_ns, avg_msec)
            {
                let (lo, hi) = job.block_sizes[direction];
                let bs = if lo == hi { lo } else { 0 };
                // One rate per window: its mean and its max are the same.
                line(&mut out, time_ms, (value, value), direction, bs, logs);
            }
        }
        Kind::Lat | Kind::Clat | Kind::Slat | Kind::ClatHist => {
            let mut windows = [IoStat::default(); 3];
            let mut window_start_ms = [0u64; 3];
            // `__add_stat_to_log`: avg (mean rounded), max, or both.
            let value = |window: &IoStat| {
                let mean = (window.mean + 0.5) as u64;
                if logs.window_both {
                    (mean, window.max)
                } else if logs.max_value {
                    (window.max, 0)
                } else {
                    (mean, 0)
                }
            };
            for sample in samples {
                let direction = sample.direction as usize;
                let elapsed = elapsed_ms(sample.completed_ns);
                windows[direction].add(sample.latency_ns);
                // Latency logs are "inline": no slack, the window must be whole.
                if elapsed < window_start_ms[direction] + avg_msec {
                    continue;
                }
                line(&mut out, elapsed, value(&windows[direction]), direction, 0, logs);
                windows[direction] = IoStat::default();
                window_start_ms[direction] = elapsed - elapsed % avg_msec;
            }
            // finalize_logs: what is left, at the job's end.
            for (direction, window) in windows.iter().enumerate() {
                if window.samples > 0 {
                    line(&mut out, elapsed_ms(end_ns), value(window), direction, 0, logs);
                }
            }
        }
    }
    out
}

/// The `clat_hist` log (fio's `add_clat_sample` and `flush_hist_samples`): per direction, when
/// a completion comes `log_hist_msec` or more after the direction's window began (the first
/// completion begins the first), a line `time_ms, direction, block_size, bins…` of the
/// completions since the previous line, the triggering one included, in fio's 1856 latency
/// buckets ([`super::hist`]) summed `2^log_hist_coarseness` at a time. The window's next start
/// is its start plus `log_hist_msec` (fio keeps the drift). No line for what is left at the
/// job's end (fio writes none), and none at all with `log_hist_msec=0`. The buckets are
/// fio's clat percentile histogram: all zero with `clat_percentiles=0`, as fio's.
fn hist_text(samples: &[IoSample], start_ns: u64, job: &FioJobSetup) -> String {
    let logs = &job.logs;
    let mut out = String::new();
    if logs.hist_msec == 0 {
        return out;
    }
    let stride = 1usize << logs.hist_coarseness.min(6);
    let mut now = vec![vec![0u64; PLAT_NR]; 3];
    let mut before = now.clone();
    let mut window_start_ms = [0u64; 3];
    for sample in samples {
        let direction = sample.direction as usize;
        if direction >= 3 {
            continue;
        }
        if job.percentile_switches.clat {
            now[direction][val_to_idx(sample.latency_ns)] += 1;
        }
        let elapsed_ms = sample.completed_ns.saturating_sub(start_ns) / 1_000_000;
        // fio's `hist_last` of 0 means "not begun": a window begun at 0 ms begins again.
        if window_start_ms[direction] == 0 {
            window_start_ms[direction] = elapsed_ms;
        }
        let window_ms = elapsed_ms - window_start_ms[direction];
        if window_ms < logs.hist_msec {
            continue;
        }
        out.push_str(&format!("{elapsed_ms}, {direction}, {}", sample.bytes));
        for (bins_now, bins_before) in
            now[direction].chunks(stride).zip(before[direction].chunks(stride))
        {
            let sum: u64 = bins_now.iter().sum::<u64>() - bins_before.iter().sum::<u64>();
            out.push_str(&format!(", {sum}"));
        }
        out.push('\n');
        before[direction].clone_from(&now[direction]);
        window_start_ms[direction] = elapsed_ms - (window_ms - logs.hist_msec);
    }
    out
}

/// Writes the log files `setup`'s jobs ask for, from `run`, in `dir` (`tag`: the scheduler,
/// put in each name when a command runs several). Returns the files written, in order.
/// Errors when the run's issuers are not the file's job clones.
pub fn write_logs(
    run: &Run,
    setup: &FioSetup,
    dir: &Path,
    tag: Option<&str>,
) -> io::Result<Vec<PathBuf>> {
    let expected: Vec<&FioJobSetup> =
        setup.jobs.iter().flat_map(|job| std::iter::repeat_n(job, job.clones as usize)).collect();
    let issuers: Vec<_> = super::measured_phases(run).flat_map(|phase| &phase.issuers).collect();
    if issuers.len() != expected.len() {
        return Err(io::Error::other(format!(
            "the run has {} issuers where the file's jobs have {} clones",
            issuers.len(),
            expected.len()
        )));
    }
    let mut written: Vec<PathBuf> = Vec::new();
    let mut created = BTreeSet::new();
    for (index, (issuer, job)) in issuers.iter().zip(&expected).enumerate() {
        let kinds = [
            (job.logs.bw.as_ref(), Kind::Bw),
            (job.logs.lat.as_ref(), Kind::Lat),
            (job.logs.lat.as_ref(), Kind::Slat),
            (job.logs.lat.as_ref(), Kind::Clat),
            (job.logs.iops.as_ref(), Kind::Iops),
            (job.logs.hist.as_ref(), Kind::ClatHist),
        ];
        let (samples, start_ns, end_ns) = match issuer.fio.as_deref() {
            Some(stats) => (
                stats.io_samples.as_deref().unwrap_or(&[]),
                stats.start_ns,
                stats.start_ns + stats.job_runtime_ms * 1_000_000,
            ),
            None => (&[][..], 0, 0),
        };
        // The job's end: its last completion (the runtime is rounded up to ms).
        let end_ns = samples.last().map_or(end_ns, |last| last.completed_ns.max(start_ns));
        for (prefix, kind) in kinds {
            let Some(prefix) = prefix else { continue };
            let path = file_name(dir, prefix, job, kind, index + 1, tag);
            let text = log_text(kind, samples, start_ns, end_ns, job);
            // Jobs sharing a name (per_job_logs=0) append, in job order.
            let mut file = if created.insert(path.clone()) {
                written.push(path.clone());
                std::fs::File::create(&path)
            } else {
                std::fs::OpenOptions::new().append(true).open(&path)
            }
            .map_err(|error| {
                io::Error::new(error.kind(), format!("{}: {error}", path.display()))
            })?;
            file.write_all(text.as_bytes())?;
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::FioDirection;

    fn sample(completed_ms: u64, latency_us: u64, direction: FioDirection) -> IoSample {
        IoSample {
            completed_ns: completed_ms * 1_000_000,
            latency_ns: latency_us * 1000,
            direction,
            bytes: 4096,
            offset_bytes: completed_ms * 4096,
        }
    }

    fn job(logs: FioLogs) -> FioJobSetup {
        FioJobSetup {
            name: "j".into(),
            clones: 1,
            block_sizes: [(4096, 4096); 3],
            logs,
            ..FioJobSetup::default()
        }
    }

    // Proves the per-operation lines by hand: clat in ns, bw as bytes · 10^6 / clat_ns
    // (4096 B in 100 µs: 40 960), iops 1, offset and fio's `0x%04x` priority columns when
    // asked, time in whole ms since the job's start.
    #[test]
    fn per_operation_lines() {
        let logs = FioLogs { offset: true, prio: true, ioprio: 2 << 13 | 4, ..FioLogs::default() };
        let job = job(logs);
        let start = 5_000_000_000;
        let samples =
            [IoSample { completed_ns: start + 1_700_000, ..sample(0, 100, FioDirection::Write) }];
        let samples = [IoSample { offset_bytes: 8192, ..samples[0] }];
        let end = start + 2_000_000;
        assert_eq!(
            log_text(Kind::Clat, &samples, start, end, &job),
            "1, 100000, 1, 4096, 8192, 0x4004\n"
        );
        assert_eq!(
            log_text(Kind::Bw, &samples, start, end, &job),
            "1, 40960, 1, 4096, 8192, 0x4004\n"
        );
        assert_eq!(
            log_text(Kind::Iops, &samples, start, end, &job),
            "1, 1, 1, 4096, 8192, 0x4004\n"
        );
        assert_eq!(log_text(Kind::Slat, &samples, start, end, &job), "");
    }

    // Proves `log_avg_msec` by hand: reads at 10, 60, 120, 130 ms with 100, 300, 500, 700 µs;
    // windows of 100 ms. Latency: the window closes at the first read ≥ 100 ms (120 ms, mean
    // of 100/300/500 µs = 300 µs), restarts at 100 ms, and 130 ms is left for the job's end
    // (150 ms); with log_max_value the maxima. bw/iops: one line per whole window (the part
    // after 100 ms is not whole), 2 reads · 4096 B over 100 ms = 80 KiB/s, 20 I/O/s.
    #[test]
    fn averaged_windows() {
        let samples = [
            sample(10, 100, FioDirection::Read),
            sample(60, 300, FioDirection::Read),
            sample(120, 500, FioDirection::Read),
            sample(130, 700, FioDirection::Read),
        ];
        let mut logs = FioLogs { avg_msec: 100, ..FioLogs::default() };
        let end = 150_000_000;
        assert_eq!(
            log_text(Kind::Lat, &samples, 0, end, &job(logs.clone())),
            "120, 300000, 0, 0, 0\n150, 700000, 0, 0, 0\n"
        );
        assert_eq!(
            log_text(Kind::Bw, &samples, 0, end, &job(logs.clone())),
            "100, 80, 0, 4096, 0\n"
        );
        assert_eq!(
            log_text(Kind::Iops, &samples, 0, end, &job(logs.clone())),
            "100, 20, 0, 4096, 0\n"
        );
        logs.max_value = true;
        assert_eq!(
            log_text(Kind::Clat, &samples, 0, end, &job(logs)),
            "120, 500000, 0, 0, 0\n150, 700000, 0, 0, 0\n"
        );
    }

    // Proves `log_issue_time` and `log_window_value=both` on per-operation lines: the clat
    // line ends with the issue time in ns since the job's start (completion 1.7 ms less the
    // 100 µs latency: 1 600 000), the lat line with 0 (fio fills it for clat and slat only);
    // the second value sits after the first and is 0 (fio's `sample_val` leaves val1 0).
    #[test]
    fn issue_time_and_second_value_per_operation() {
        let logs =
            FioLogs { offset: true, issue_time: true, window_both: true, ..FioLogs::default() };
        let job = job(logs);
        let start = 5_000_000_000;
        let samples = [IoSample {
            completed_ns: start + 1_700_000,
            offset_bytes: 8192,
            ..sample(0, 100, FioDirection::Read)
        }];
        let end = start + 2_000_000;
        assert_eq!(
            log_text(Kind::Clat, &samples, start, end, &job),
            "1, 100000, 0, 0, 4096, 8192, 0, 1600000\n"
        );
        assert_eq!(
            log_text(Kind::Lat, &samples, start, end, &job),
            "1, 100000, 0, 0, 4096, 8192, 0, 0\n"
        );
    }

    // Proves `log_window_value=both` with `log_avg_msec`: latency windows give mean then max
    // (300/500 µs, then the lone 700 µs twice), bw and iops windows their one rate twice, as
    // fio's `__add_stat_to_log` with `IO_LOG_SAMPLE_BOTH`.
    #[test]
    fn both_window_values() {
        let samples = [
            sample(10, 100, FioDirection::Read),
            sample(60, 300, FioDirection::Read),
            sample(120, 500, FioDirection::Read),
            sample(130, 700, FioDirection::Read),
        ];
        let logs = FioLogs { avg_msec: 100, window_both: true, ..FioLogs::default() };
        let end = 150_000_000;
        assert_eq!(
            log_text(Kind::Clat, &samples, 0, end, &job(logs.clone())),
            "120, 300000, 500000, 0, 0, 0\n150, 700000, 700000, 0, 0, 0\n"
        );
        assert_eq!(log_text(Kind::Bw, &samples, 0, end, &job(logs)), "100, 80, 80, 0, 4096, 0\n");
    }

    /// A histogram line's columns.
    fn hist_lines(text: &str) -> Vec<Vec<u64>> {
        text.lines().map(|line| line.split(", ").map(|f| f.parse().unwrap()).collect()).collect()
    }

    // Proves the clat_hist log by hand: reads at 10, 60, 120, 130 ms of 100, 300, 500, 700 µs
    // with log_hist_msec=100. The read window begins at the first read (10 ms) and closes at
    // 120 ms (110 ≥ 100), one line `120, 0, 4096` holding the three reads so far in fio's
    // buckets 737, 841 and 890 (worked by hand from plat_val_to_idx); 130 ms is in the next
    // window, which never closes, so no line (fio logs no partial window). Writes at 0 and
    // 150 ms give none: fio's window start of 0 reads as "not begun", so the 150 ms write
    // begins it. Coarseness 2 sums 4 buckets a column (464 columns: 184, 210, 222);
    // clat_percentiles=0 leaves every bucket 0, as fio's histogram is the percentiles'.
    #[test]
    fn histogram_lines() {
        let samples = [
            sample(0, 50, FioDirection::Write),
            sample(10, 100, FioDirection::Read),
            sample(60, 300, FioDirection::Read),
            sample(120, 500, FioDirection::Read),
            sample(130, 700, FioDirection::Read),
            sample(150, 80, FioDirection::Write),
        ];
        let mut logs = FioLogs { hist: Some(String::new()), hist_msec: 100, ..FioLogs::default() };
        let lines = hist_lines(&hist_text(&samples, 0, &job(logs.clone())));
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len(), 3 + 1856);
        assert_eq!(lines[0][..3], [120, 0, 4096]);
        let full: Vec<usize> = (0..1856).filter(|&i| lines[0][3 + i] > 0).collect();
        assert_eq!(full, [737, 841, 890]);
        assert!(full.iter().all(|&i| lines[0][3 + i] == 1));

        logs.hist_coarseness = 2;
        let lines = hist_lines(&hist_text(&samples, 0, &job(logs.clone())));
        assert_eq!(lines[0].len(), 3 + 464);
        let full: Vec<usize> = (0..464).filter(|&i| lines[0][3 + i] > 0).collect();
        assert_eq!(full, [184, 210, 222]);

        let mut quiet = job(logs.clone());
        quiet.percentile_switches.clat = false;
        let lines = hist_lines(&hist_text(&samples, 0, &quiet));
        assert_eq!(lines.len(), 1);
        assert!(lines[0][3..].iter().all(|&count| count == 0));

        logs.hist_msec = 0;
        assert_eq!(hist_text(&samples, 0, &job(logs)), "");
    }
}
