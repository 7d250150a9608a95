//! fio's output formats from elevator's runs (fio-compat.md §4, read by the tools of §5):
//! `normal` (text), `json`, `json+` and `terse` (v3), one output per run (scheduler).
//!
//! A fio "job" here is one of the run's issuers (a job clone, named `NAME/N`); its figures are
//! the [`JobStats`] the recorder kept for it ([`crate::PhaseRecorder::record_submit`]). A run's
//! phases are fio's reporting groups (`groupid` = phase index: a job file's groups run as
//! phases). Jobs with `group_reporting` merge with the consecutive jobs of their group that
//! have it too (§4.4, [`JobStats::merge`]).
//!
//! # What fills fio's keys
//!
//! * `io_bytes`, `total_ios`, `runtime`, `bw*`, `iops*`: the simulated completions, fio's
//!   arithmetic (§4.2); `runtime` is from the group's start to the job's last completion, µs
//!   rounded up to ms as fio's `update_runtime`.
//! * `clat_ns` and `lat_ns`: submission to completion on the simulated clock (the same
//!   figure: see slat below); `clat_ns.percentile` and json+ `bins` from fio's histogram
//!   ([`hist`]) over the same samples, so they are fio's quantised values.
//! * `bw_*`, `iops_*`: statistics of 500 ms interval samples (fio's `bwavgtime`,
//!   `iopsavgtime` defaults), `bw_agg` against the group's aggregate as fio's
//!   `convert_agg_kbytes_percent`. A job writing a bw (iops) log samples as its log does,
//!   as fio: per operation without `log_avg_msec`, else every `log_avg_msec`.
//! * `iodepth_level`: the issuer's in-flight count at each submission; `iodepth_submit` and
//!   `iodepth_complete`: every call moves one I/O (the `"4"` bucket).
//! * `latency_ns|us|ms`: the completion latencies, fio's buckets, % of read+write+trim I/Os.
//! * `usr_cpu`, `sys_cpu`: the host model's CPU time of the issuer's process over its run time
//!   (a live run: the process's CPU shared out among a group's jobs by I/Os completed).
//! * `timestamp`, `timestamp_ms`, `time`, `job_start`, `elapsed`: in a simulation the
//!   simulated clock, whose epoch is the run's start (1970-01-01 00:00:00 UTC), so output is
//!   deterministic; in a live or kernel run (`elevator run`, `elevator kernel compare`,
//!   `elevator fio` live or kernel) the wall clock, as fio's, the figures themselves measured
//!   on the engine's monotonic clock.
//! * `sync`: the jobs' fsync/fdatasync calls and their latencies, simulated or, live and
//!   in kernel runs, measured (a kernel run's sync is an `fdatasync` of the target).
//! * `disk_util`: see the Deviations; in live and kernel runs the kernel's own counters of
//!   the target's block device (`elevator_live::diskutil`).
//! * Extra key, per job: `"elevator" : {"mode", "scheduler", "device", "seed"}`.
//!
//! Zero because the simulator does not model them: `slat_ns` (N = 0, as fio prints for
//! synchronous engines), `short_ios`, `drop_ios`, `error`, `eta`, `ctx`, `majf`, `minf`,
//! `latency_target`, `latency_window`.
//!
//! # Deviations from fio
//!
//! * **No submission latency.** A simulated issuer's submission takes no simulated time (it
//!   blocks only when the request pool is full, which the simulator counts in the latency),
//!   so `slat_ns` is never sampled and `clat_ns` = `lat_ns` = submission to completion. fio's
//!   libaio and io_uring jobs have a small non-zero slat.
//! * **One I/O per submission and per reaping call**: the simulator's issuers submit and reap
//!   one at a time, so `iodepth_submit` and `iodepth_complete` put 100 % in `"4"` where fio's
//!   `iodepth_batch*` would spread them.
//! * **Interval samples at exact 500 ms boundaries** from the group's start; fio takes them
//!   when its helper thread sees 500 ms or more have passed, over the time actually spent.
//!   Windows are closed at each submission and completion and at the job's end; a final
//!   partial window gives no sample.
//! * **`disk_util`** is the simulated devices' requests, per direction, over the whole run
//!   (`/proc/diskstats` as fio reads it): `ios` completed read and write requests (flushes and
//!   discards not counted), `merges` bios merged into them, `sectors`, `ticks` their time
//!   from creation to completion summed (ms), `in_queue` = read + write ticks (no separate
//!   queue-time weighting), `util` the device model's busy time over the run's simulated
//!   time. The figures ride in the run's `device_stats.extra` as `fio.disk_util.DEVICE.KEY`
//!   ([`DISK_UTIL_PREFIX`]), recorded for job-file runs only, so elevator's own report of a
//!   job file shows them there too. Terse lines carry them after fio's 121 fields (130 with
//!   one device), as fio run locally does. With `disk_util=0` on every job none is printed;
//!   otherwise every simulated device is (fio lists the devices its jobs' files are on).
//! * **`disk_util` of live and kernel runs** is `/sys/block/DEV/stat`'s differences between
//!   the run's start and end for the device the target is on (its whole disk, and a stacked
//!   device's slaves; `elevator_live::diskutil`), with the real `time_in_queue` (key
//!   `in_queue_ns`). fio samples every 250 ms from each file's setup; here two reads bracket
//!   the run, so `util` is over the whole run. A stacked device's `aggr_*` averages are not
//!   written, and devices are listed by name. Under `elevator run` the figures are the
//!   device *under* our user-space scheduler: `ios` are the transfers our queue dispatched
//!   as the kernel completed them, `merges` the kernel's merges of them; our scheduler's own
//!   merges are in elevator's report (`scheduler_stats`), not here.
//! * **`job_start`** is ms on the simulated clock, not since the Unix epoch (a live or kernel
//!   run's is the wall clock's, as fio's).
//! * Normal output's `pid=` is the job's 1-based process number.
//! * **Percentiles of `lat`** (`lat_percentiles=1`) are clat's: with no submission latency
//!   the two are the same samples. `slat_percentiles=1` prints none (slat has no samples).
//! * **Log files** ([`logs`]): the `slat` log is empty (no submission latency); the priority
//!   column is the job's `prio`/`prioclass` (fio's `ioprio`), not `cmdprio_*`'s per-I/O
//!   choice; bw and iops logs with `log_avg_msec` take a line per whole window at its exact
//!   end (fio's helper thread samples when it wakes, some ms late) and none for the final
//!   partial window (so too the json's `bw_*`/`iops_*` statistics, which such a log sets
//!   as fio does: per operation, or every `log_avg_msec`).
//! * **Issue time** (`log_issue_time`): the submission on the simulated clock, which is the
//!   issue (no submission latency); fio's is when the engine took the I/O.
//! * **`log_window_value`, `log_issue_time`** follow the log layout of the fio releases that
//!   have them (3.37 and 3.38 on); fio 3.36, whose outputs are followed otherwise, has
//!   neither (its `log_max_value` is a boolean, `0`/`1` here too).
//! * **`clat_hist` log**: whole windows only, as fio's; a window's line is taken at the
//!   completion that ends it on the simulated clock (fio's at its own). The log's buckets
//!   are those of json+'s `bins`, so the two agree bucket for bucket up to the last,
//!   unlogged, partial window. `log_hist_coarseness` above 6 is refused (fio documents 0
//!   to 6 but does not check; above 6 its last column overlaps the one before).
//! * **`unified_rw_reporting=both`**: as fio's stat.c, including its quirks: the `mixed`
//!   direction's bandwidth share (`per=`, `bw_agg`, terse) is of the group's *read*
//!   aggregate, and a group whose jobs mix `mixed` and `both` prints plain directions (fio
//!   ORs the modes to 3).
//!
//! # The json+ peer check
//!
//! `crates/cli/tests/fio_peer.rs` runs one job file by real fio on a RAM-backed loop device
//! and by `elevator sim`, and compares `jobs[0]`'s key paths. Ours only: `elevator` (our
//! extra object) and `job_start` (added in fio 3.36, the layout followed here; an older peer
//! lacks it). Fio's only: none. The top level's keys and `disk_util`'s are compared too
//! (`read_sectors`/`write_sectors` are fio 3.36's, excused with an older peer).
//! * **`fio version`** is [`FIO_VERSION`], the fio release whose output layout is followed.

pub mod hist;
mod json;
pub mod logs;
mod normal;
mod stats;
mod terse;

pub use json::render_json;
pub use logs::{FioLogs, write_logs};
pub use normal::{render_banners, render_normal};
pub use stats::{
    AVG_TIME_NS, DirectionStats, FioDirection, IoSample, IoStat, JobStats, distribution,
};
pub use terse::render_terse;

use crate::model::Run;

/// Where a run's device statistics carry fio's `disk_util` figures:
/// `fio.disk_util.DEVICE.KEY` (read_ios, write_ios, read_merges, write_merges, read_sectors,
/// write_sectors, read_ticks_ns, write_ticks_ns, busy_ns, elapsed_ns, and from a real device
/// in_queue_ns: its `time_in_queue`, which the simulator's runs leave to the ticks' sum).
pub const DISK_UTIL_PREFIX: &str = "fio.disk_util.";

/// One device's `disk_util` (fio's `disk_util_stat`; fio-compat.md §4.2).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct DiskUtil {
    pub(crate) name: String,
    /// Read, write.
    pub(crate) ios: [u64; 2],
    pub(crate) merges: [u64; 2],
    pub(crate) sectors: [u64; 2],
    /// ms.
    pub(crate) ticks: [u64; 2],
    /// ms: the requests' time summed (`time_in_queue`).
    pub(crate) in_queue: u64,
    /// % of the run the device was busy (`io_ticks` / `msec`), at most 100.
    pub(crate) util: f64,
}

/// The run's devices' `disk_util`, by name: empty when the run did not record them or every
/// job says `disk_util=0` (fio gathers a device's figures for the jobs that ask).
pub(crate) fn disk_utils(run: &Run, setup: &FioSetup) -> Vec<DiskUtil> {
    if setup.jobs.iter().all(|job| job.no_disk_util) {
        return Vec::new();
    }
    let mut disks: Vec<DiskUtil> = Vec::new();
    let mut busy = Vec::new();
    // A real device's time_in_queue (live and kernel runs); the simulator sums the ticks.
    let mut in_queue: Vec<Option<u64>> = Vec::new();
    for (key, &value) in &run.device_stats.extra {
        let Some(rest) = key.strip_prefix(DISK_UTIL_PREFIX) else { continue };
        let Some((name, field)) = rest.rsplit_once('.') else { continue };
        if disks.last().is_none_or(|disk| disk.name != name) {
            disks.push(DiskUtil { name: name.to_owned(), ..DiskUtil::default() });
            busy.push((0u64, 0u64));
            in_queue.push(None);
        }
        let disk = disks.last_mut().expect("pushed above");
        let times = busy.last_mut().expect("pushed above");
        match field {
            "read_ios" => disk.ios[0] = value,
            "write_ios" => disk.ios[1] = value,
            "read_merges" => disk.merges[0] = value,
            "write_merges" => disk.merges[1] = value,
            "read_sectors" => disk.sectors[0] = value,
            "write_sectors" => disk.sectors[1] = value,
            "read_ticks_ns" => disk.ticks[0] = value / 1_000_000,
            "write_ticks_ns" => disk.ticks[1] = value / 1_000_000,
            "in_queue_ns" => in_queue[disks.len() - 1] = Some(value / 1_000_000),
            "busy_ns" => times.0 = value,
            "elapsed_ns" => times.1 = value,
            _ => {}
        }
    }
    for ((disk, (busy_ns, elapsed_ns)), in_queue) in disks.iter_mut().zip(busy).zip(in_queue) {
        disk.in_queue = in_queue.unwrap_or(disk.ticks[0] + disk.ticks[1]);
        // fio: 100 · io_ticks / msec, at most 100.
        let (io_ticks, msec) = (busy_ns / 1_000_000, elapsed_ns / 1_000_000);
        disk.util =
            if msec == 0 { 0.0 } else { (100.0 * io_ticks as f64 / msec as f64).min(100.0) };
    }
    disks
}

/// The fio version the outputs claim: the release whose layout they follow (tools check for
/// `fio-3`).
pub const FIO_VERSION: &str = "fio-3.36";

/// What a fio job file said, as the outputs echo it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioSetup {
    /// Options given in global sections (or before the first `--name`), in order: canonical
    /// name and value as written; value-less flags left out (fio's `global options`).
    pub global_options: Vec<(String, String)>,
    /// The file's jobs, in order.
    pub jobs: Vec<FioJobSetup>,
}

/// One job of a job file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioJobSetup {
    /// Its name (the issuers of its clones are `NAME/N`).
    pub name: String,
    /// Its clones (`numjobs`).
    pub clones: u32,
    /// The options its own section gave, as `global_options` (fio's `job options`).
    pub options: Vec<(String, String)>,
    /// `group_reporting` is on.
    pub group_reporting: bool,
    /// `percentile_list` (default [`hist::DEFAULT_PERCENTILES`]).
    pub percentile_list: Option<Vec<f64>>,
    /// `iodepth` (fio's `latency_depth` without `latency_target`).
    pub iodepth: u64,
    /// `description`.
    pub description: Option<String>,
    /// It starts a new reporting group (`stonewall`, `new_group`).
    pub new_group: bool,
    /// `rw` as written (`read` by default), for the banner.
    pub rw: String,
    /// Smallest and largest block size per direction (read, write, trim), for the banner.
    pub block_sizes: [(u64, u64); 3],
    /// The I/O engine, for the banner.
    pub ioengine: String,
    /// Its log files ([`write_logs`]).
    pub logs: FioLogs,
    /// `clat_percentiles`, `lat_percentiles`, `slat_percentiles`.
    pub percentile_switches: PercentileSwitches,
    /// `unified_rw_reporting=mixed` (or `1`): one `mixed` direction for read, write and trim.
    pub unified_mixed: bool,
    /// `unified_rw_reporting=both`: each direction, then the `mixed` one after them.
    pub unified_both: bool,
    /// `disk_util=0`: the job does not ask for its devices' figures.
    pub no_disk_util: bool,
}

/// Which latencies get percentiles (and json+ bins): fio's `clat_percentiles` (on by
/// default), `lat_percentiles` and `slat_percentiles` (off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PercentileSwitches {
    /// `clat_percentiles`.
    pub clat: bool,
    /// `lat_percentiles`.
    pub lat: bool,
    /// `slat_percentiles`.
    pub slat: bool,
}

impl Default for PercentileSwitches {
    fn default() -> Self {
        PercentileSwitches { clat: true, lat: false, slat: false }
    }
}

/// One reported fio job (or merged group): what every format prints.
#[derive(Clone, Debug)]
pub(crate) struct Reported<'a> {
    pub(crate) setup: &'a FioJobSetup,
    pub(crate) groupid: usize,
    pub(crate) stats: JobStats,
    /// The percentiles, sorted (fio sorts `percentile_list`), at most 20.
    pub(crate) percentiles: Vec<f64>,
}

/// A reporting group's totals (fio's `group_run_stats`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GroupTotals {
    /// Per direction (read, write, trim): Σ io_bytes · 1000 / the longest runtime, bytes/s.
    pub(crate) agg_bytes_per_s: [u64; 3],
}

/// The phases fio's figures count: all but those a job file's planner runs before a group's
/// clock starts, its `ramp_time` (`NAME (ramp)`) and `pre_read` (`NAME (pre_read)`) phases
/// (`elevator_workload`'s fio_run.rs), whose I/O fio leaves out of its job's figures.
pub(crate) fn measured_phases(run: &Run) -> impl Iterator<Item = &crate::model::Phase> {
    run.phases
        .iter()
        .filter(|phase| !phase.name.ends_with(" (ramp)") && !phase.name.ends_with(" (pre_read)"))
}

/// The run's jobs as fio reports them, matched to `setup`'s jobs and merged per
/// `group_reporting`, with each group's totals. Errors when the run's issuers are not
/// `setup`'s job clones, in order.
pub(crate) fn reported<'a>(
    run: &Run,
    setup: &'a FioSetup,
) -> Result<(Vec<Reported<'a>>, Vec<GroupTotals>), String> {
    let expected: Vec<&FioJobSetup> =
        setup.jobs.iter().flat_map(|job| std::iter::repeat_n(job, job.clones as usize)).collect();
    let mut next = expected.iter();
    let mut reported: Vec<Reported<'a>> = Vec::new();
    let mut groups = Vec::new();
    for (groupid, phase) in measured_phases(run).enumerate() {
        let mut totals = GroupTotals::default();
        let mut bytes = [0u64; 3];
        let mut longest_ms = [0u64; 3];
        let first_of_group = reported.len();
        for issuer in &phase.issuers {
            let Some(&job) = next.next() else {
                return Err(format!("issuer `{}` is not a clone of any job", issuer.name));
            };
            let job_name = issuer.name.rsplit_once('/').map_or(issuer.name.as_str(), |(n, _)| n);
            if job_name != job.name {
                return Err(format!(
                    "issuer `{}` does not match job `{}` of the file",
                    issuer.name, job.name
                ));
            }
            let mut stats = issuer.fio.as_deref().cloned().unwrap_or_else(|| {
                let mut empty = JobStats::new(0);
                empty.finish(0, 0, 0);
                empty
            });
            // A bw or iops log sets fio's sampling of those statistics (logs::resample).
            if job.logs.bw.is_some() || job.logs.iops.is_some() {
                logs::resample(&mut stats, &job.logs);
            }
            // Folded before the group's totals, as fio folds each job's figures as it sums
            // them (`sum_thread_stats`), so the group's aggregate is mixed too.
            if job.unified_mixed {
                stats.fold_mixed();
            }
            for direction in 0..3 {
                bytes[direction] += stats.directions[direction].io_bytes;
                longest_ms[direction] =
                    longest_ms[direction].max(stats.directions[direction].runtime_ms);
            }
            // fio's __show_run_stats: a job joins the previous result when both have
            // group_reporting and share the group.
            let in_group = reported.len() > first_of_group;
            let merge_into = reported
                .last_mut()
                .filter(|last| in_group && last.setup.group_reporting && job.group_reporting);
            match merge_into {
                Some(last) => last.stats.merge(&stats),
                None => {
                    let mut percentiles = job
                        .percentile_list
                        .clone()
                        .unwrap_or_else(|| hist::DEFAULT_PERCENTILES.to_vec());
                    percentiles.truncate(20);
                    percentiles.sort_by(f64::total_cmp);
                    reported.push(Reported { setup: job, groupid, stats, percentiles });
                }
            }
        }
        for direction in 0..3 {
            totals.agg_bytes_per_s[direction] =
                (bytes[direction] * 1000).checked_div(longest_ms[direction]).unwrap_or(0);
        }
        groups.push(totals);
    }
    if next.next().is_some() {
        return Err("the run has fewer issuers than the file's jobs have clones".to_owned());
    }
    Ok((reported, groups))
}

/// fio's `gen_mixed_ddir_stats_from_ts` for `unified_rw_reporting=both` (fio-compat.md §4.1,
/// §4.2): `f` sees the job with read, write and trim folded into a `mixed` first direction
/// (the job's setup as with `mixed`), and its result is returned; `None` for other jobs.
/// The group's totals stay per direction, so the mixed bandwidth's share of the aggregate is
/// against the group's read aggregate, as fio's `show_ddir_status(rs, ts_lcl, DDIR_READ)`.
pub(crate) fn with_mixed<R>(job: &Reported<'_>, f: impl FnOnce(&Reported<'_>) -> R) -> Option<R> {
    if !job.setup.unified_both {
        return None;
    }
    let setup = FioJobSetup { unified_mixed: true, unified_both: false, ..job.setup.clone() };
    let mut stats = job.stats.clone();
    stats.fold_mixed();
    let mixed = Reported {
        setup: &setup,
        groupid: job.groupid,
        stats,
        percentiles: job.percentiles.clone(),
    };
    Some(f(&mixed))
}

/// fio's `convert_agg_kbytes_percent`: a job's mean bandwidth (KiB/s) as a percentage of its
/// group's aggregate, at most 100.
pub(crate) fn percent_of_aggregate(mean_kib_s: f64, agg_bytes_per_s: u64) -> f64 {
    if agg_bytes_per_s == 0 {
        return 100.0;
    }
    (mean_kib_s * 100.0 / (agg_bytes_per_s as f64 / 1024.0)).min(100.0)
}

/// `ctime`'s text for `seconds` after the epoch, in UTC (`Thu Jan  1 00:00:05 1970`).
pub(crate) fn ctime(seconds: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let time = elevator_core::units::UtcTime::from_unix_seconds(seconds);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(time.days_since_epoch % 7) as usize],
        MONTHS[(time.month - 1) as usize],
        time.day,
        time.hour,
        time.minute,
        time.second,
        time.year
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::PhaseRecorder;
    use crate::model::{DeviceStats, Mode, QueueStats, SchedulerStats};
    use elevator_core::Instant;

    /// A run of one phase whose issuers `names` each read `ios` 4 KiB blocks, one at a time,
    /// each taking `latency_us[issuer]` µs.
    fn run(names: &[&str], ios: u64, latency_us: &[u64]) -> Run {
        let issuers = names.iter().map(|name| (*name).to_owned()).collect();
        let mut recorder = PhaseRecorder::new("g", Instant::ZERO, issuers);
        for (issuer, &latency) in latency_us.iter().enumerate() {
            for io in 0..ios {
                let submitted = Instant::from_nanos(io * latency * 1000);
                recorder.record_submit(issuer, io, FioDirection::Read, io * 4096, submitted);
                let completed = Instant::from_nanos((io + 1) * latency * 1000);
                recorder.record_io(issuer, io, 4096, submitted, completed);
            }
        }
        Run {
            mode: Mode::Sim,
            experiment: None,
            device: "ssd".into(),
            workload: "fio".into(),
            scheduler: "noop".into(),
            config: Default::default(),
            phases: vec![recorder.finish()],
            scheduler_stats: SchedulerStats::default(),
            queue_stats: QueueStats::default(),
            device_stats: DeviceStats::default(),
            host_stats: Default::default(),
            partial: false,
            partial_reason: None,
            host_cpu: None,
            dispatches: None,
        }
    }

    // Proves a `pre_read` (or `ramp_time`) phase before a group is left out of fio's
    // figures: the job is reported once, with the measured phase's I/O only, as group 0.
    #[test]
    fn unmeasured_phases_are_left_out() {
        let mut two = run(&["j/0"], 10, &[100]);
        let mut pre = run(&["j/0"], 1000, &[1]).phases.remove(0);
        pre.name = "j (pre_read)".into();
        two.phases.insert(0, pre);
        let setup = FioSetup { jobs: vec![job("j", 1, false)], ..FioSetup::default() };
        let (jobs, groups) = reported(&two, &setup).unwrap();
        assert_eq!((jobs.len(), groups.len(), jobs[0].groupid), (1, 1, 0));
        assert_eq!(jobs[0].stats.directions[0].total_ios, 10, "the measured phase's I/O only");
        two.phases[0].name = "j".into();
        assert!(reported(&two, &setup).is_err(), "a measured phase too many is an error");
    }

    fn job(name: &str, clones: u32, group_reporting: bool) -> FioJobSetup {
        FioJobSetup { name: name.into(), clones, group_reporting, iodepth: 1, ..Default::default() }
    }

    // Proves `percentile_list` is honoured exactly (PKB indexes its keys literally, §5.2):
    // given 99:25:50 the keys are fio's sorted `%f` forms and nothing else, each a bucket
    // midpoint; terse carries the same three then 17 `0%=0`.
    #[test]
    fn percentile_list_is_honoured() {
        let run = run(&["j/0"], 1000, &[100]);
        let mut setup = FioSetup { jobs: vec![job("j", 1, false)], ..FioSetup::default() };
        setup.jobs[0].percentile_list = Some(vec![99.0, 25.0, 50.0]);
        let mut out = Vec::new();
        render_json(&run, 1, &setup, false, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let at = text.find("\"percentile\" : {").unwrap();
        let block = &text[at..at + text[at..].find('}').unwrap()];
        let keys: Vec<&str> =
            block.lines().skip(1).filter_map(|line| line.trim().split('"').nth(1)).collect();
        assert_eq!(keys, ["25.000000", "50.000000", "99.000000"]);
        // Every latency is 100 µs: each percentile is its bucket's midpoint.
        assert!(block.contains(&format!(": {}", hist::idx_to_val(hist::val_to_idx(100_000)))));
        let mut terse = Vec::new();
        render_terse(&run, &setup, &mut terse).unwrap();
        let line = String::from_utf8(terse).unwrap();
        let fields: Vec<&str> = line.trim_end().split(';').collect();
        // 100 000 ns lies in the bucket of midpoint 2^16 + 33.5 · 2^10 = 99 840 ns: 99 µs.
        assert_eq!(fields[17..20], ["25.000000%=99", "50.000000%=99", "99.000000%=99"]);
        assert!(fields[20..37].iter().all(|field| *field == "0%=0"));
    }

    // Proves unified_rw_reporting=both in normal output, as fio's stat.c: two read-only jobs
    // with `both` print `read:` then a `mixed:` line with the same figures (only reads to
    // fold), and the group `READ:` then `MIXED:` with the same aggregate, bounds, io and runs
    // (fio's show_mixed_group_stats over the one direction). One job `mixed` and one `both`
    // in the group OR to fio's rs->unified_rw_rep 3, neither mode: the group line is plain
    // `READ:` and no `MIXED:` follows, while each job still prints its own way.
    #[test]
    fn unified_both_in_normal_output() {
        let run = run(&["a/0", "b/0"], 2000, &[250, 500]);
        let both = FioJobSetup { unified_both: true, ..job("a", 1, false) };
        let setup = FioSetup {
            jobs: vec![both.clone(), FioJobSetup { name: "b".into(), ..both.clone() }],
            ..FioSetup::default()
        };
        let normal = |setup: &FioSetup| {
            let mut out = Vec::new();
            render_normal(&run, setup, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let text = normal(&setup);
        let after = |label: &str| -> Vec<String> {
            text.lines().filter_map(|line| line.strip_prefix(label).map(str::to_owned)).collect()
        };
        assert_eq!(after("  read: ").len(), 2);
        assert_eq!(after("  read: "), after("  mixed: "));
        assert_eq!(after("   READ: ").len(), 1);
        assert_eq!(after("   READ: "), after("  MIXED: "));
        let read_at = text.find("   READ: ").unwrap();
        assert!(text.find("  MIXED: ").unwrap() > read_at);

        let mixed_b =
            FioJobSetup { unified_mixed: true, unified_both: false, ..setup.jobs[1].clone() };
        let setup = FioSetup { jobs: vec![both, mixed_b], ..FioSetup::default() };
        let text = normal(&setup);
        assert!(text.contains("\n   READ: bw=") && !text.contains("MIXED"), "{text}");
        assert_eq!(text.matches("\n  mixed: IOPS=").count(), 2);
        assert_eq!(text.matches("\n  read: IOPS=").count(), 1);
    }

    // Proves group_reporting and the group's aggregate by hand: two clones each read 2000 ×
    // 4 KiB one at a time, clone 0 at 250 µs a read (0.5 s), clone 1 at 500 µs (1 s).
    // Merged: 4000 I/Os, runtime the longer 1000 ms, job_runtime summed; the aggregate is
    // 16 384 000 B · 1000 / 1000 ms. Interval samples (a window closes when a completion at or
    // past its end arrives, before that completion counts): clone 0 has one of 1999 reads,
    // 15 992 KiB/s; clone 1 two, 999 and 1000 reads, 7992 and 8000 KiB/s; merged member by
    // member. Without group_reporting the run reports two jobs whose `bw_agg` is each mean
    // as a share of the aggregate (16 000 KiB/s).
    #[test]
    fn group_reporting_merges_clones() {
        let run = run(&["j/0", "j/1"], 2000, &[250, 500]);
        let merged = FioSetup { jobs: vec![job("j", 2, true)], ..FioSetup::default() };
        let (jobs, groups) = reported(&run, &merged).unwrap();
        assert_eq!(jobs.len(), 1);
        let read = &jobs[0].stats.directions[0];
        assert_eq!((read.total_ios, read.io_bytes, read.runtime_ms), (4000, 16_384_000, 1000));
        assert_eq!(jobs[0].stats.job_runtime_ms, 500 + 1000);
        assert_eq!(groups[0].agg_bytes_per_s[0], 16_384_000);
        assert_eq!(read.bw.samples, 1 + 2);
        assert_eq!((read.bw.min, read.bw.max), (15_992 + 7992, 15_992 + 8000));
        assert!((read.bw.mean - (15_992.0 + 7996.0)).abs() < 1e-9);
        let separate = FioSetup { jobs: vec![job("j", 2, false)], ..FioSetup::default() };
        let (jobs, _) = reported(&run, &separate).unwrap();
        assert_eq!(jobs.len(), 2);
        let agg = |job: &Reported<'_>| {
            percent_of_aggregate(job.stats.directions[0].bw.mean, groups[0].agg_bytes_per_s[0])
        };
        assert!((agg(&jobs[0]) - 15_992.0 * 100.0 / 16_000.0).abs() < 1e-9);
        assert!((agg(&jobs[1]) - 7996.0 * 100.0 / 16_000.0).abs() < 1e-9);
    }

    // Proves a run whose issuers are not the file's job clones is refused, naming the issuer.
    #[test]
    fn mismatched_jobs_are_refused() {
        let run = run(&["other/0"], 1, &[100]);
        let setup = FioSetup { jobs: vec![job("j", 1, false)], ..FioSetup::default() };
        let error = reported(&run, &setup).unwrap_err();
        assert!(error.contains("other/0"), "{error}");
    }

    // Proves ctime's layout and calendar: day 0 is a Thursday, the day pads to two columns,
    // and a leap day lands right (951 782 400 s is 2000-02-29).
    #[test]
    fn ctime_text() {
        assert_eq!(ctime(5), "Thu Jan  1 00:00:05 1970");
        assert_eq!(ctime(951_782_400 + 3661), "Tue Feb 29 01:01:01 2000");
    }
}
