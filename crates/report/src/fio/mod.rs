//! fio's output formats from elevator's runs (fio-compat.md §4, read by the tools of §5):
//! `json`, `json+` and `terse` (v3), one document per run (scheduler).
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
//!   `convert_agg_kbytes_percent`.
//! * `iodepth_level`: the issuer's in-flight count at each submission; `iodepth_submit` and
//!   `iodepth_complete`: every call moves one I/O (the `"4"` bucket).
//! * `latency_ns|us|ms`: the completion latencies, fio's buckets, % of read+write+trim I/Os.
//! * `usr_cpu`, `sys_cpu`: the host model's CPU time of the issuer's process over its run time.
//! * `timestamp`, `timestamp_ms`, `time`, `job_start`, `elapsed`: the simulated clock, whose
//!   epoch is the run's start (1970-01-01 00:00:00 UTC), so output is deterministic.
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
//! * **`disk_util` is absent**, and terse lines have no per-disk fields (121 fields): the
//!   device statistics are not yet kept per direction as `/proc/diskstats` does. fio also
//!   omits it when it finds no block device.
//! * **`job_start`** is ms on the simulated clock, not since the Unix epoch.
//! * **Normal (text) output and log files (`write_*_log`) are not written yet**
//!   (`--output-format normal` is refused).
//! * **`fio version`** is [`FIO_VERSION`], the fio release whose output layout is followed.

pub mod hist;
mod json;
mod stats;
mod terse;

pub use json::render_json;
pub use stats::{AVG_TIME_NS, DirectionStats, FioDirection, IoStat, JobStats, distribution};
pub use terse::render_terse;

use crate::model::Run;

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
    for (groupid, phase) in run.phases.iter().enumerate() {
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
            let stats = issuer.fio.as_deref().cloned().unwrap_or_else(|| {
                let mut empty = JobStats::new(0);
                empty.finish(0, 0, 0);
                empty
            });
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
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    // Howard Hinnant's days-to-civil conversion.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        year
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves ctime's layout and calendar: day 0 is a Thursday, the day pads to two columns,
    // and a leap day lands right (951 782 400 s is 2000-02-29).
    #[test]
    fn ctime_text() {
        assert_eq!(ctime(5), "Thu Jan  1 00:00:05 1970");
        assert_eq!(ctime(951_782_400 + 3661), "Tue Feb 29 01:01:01 2000");
    }
}
