//! Per-interval time series (issue 19, "every run records per-interval throughput, IOPS and
//! latency percentiles per job and direction"): how a phase evolved, for the plots.
//!
//! [`crate::PhaseRecorder`] feeds each completed operation to a [`SeriesRecorder`], which
//! keeps one line per job × direction. A line holds one open interval — its bytes, operations
//! and a latency histogram of [`SERIES_DIGITS`] significant digits — and a summary of each
//! closed one; when a completion falls in a later interval, the open one is summarised
//! (p50, p90, p99, max) and its histogram reset and reused. Memory is therefore one histogram
//! per line plus a few dozen bytes per closed interval, whatever the rate: nothing is allocated
//! per operation. An interval's first 256 latencies are kept as values (2 KiB per line) and
//! sorted for its percentiles, the same values the histogram gives, so an interval with few
//! completions (a disk at depth 1) does not pay for scans and a reset of the whole histogram
//! (`BufferedLatency` in `crate::metrics`).
//!
//! Intervals are aligned to the phase's start and closed at their end: interval k holds the
//! completions at `(k × interval, (k + 1) × interval]` after the start (the first also those
//! at the start itself), so a phase of exactly 3 s at 1 s has 3 full intervals. The last one
//! ends with the phase and says its true length. An operation counts in the interval its
//! completion falls in, as fio's bandwidth and IOPS logs count it (fio-compat.md §4.6).
//!
//! The interval is the command's `--interval` ([`set_interval`], default [`DEFAULT_INTERVAL`]):
//! simulated time in the simulator, wall time live and on the kernel's schedulers.
//!
//! # Deviations
//!
//! * fio averages its logs over `log_avg_msec` windows timed from each job's start and writes
//!   a window only once it has passed; here windows are timed from the phase's start (every job
//!   of a phase shares one time axis, which is what a plot of schedulers side by side needs),
//!   and a phase's last, partial window is kept with its length.
//! * A completion timestamped in an interval already closed (live runs reap completions in
//!   batches, so one may arrive after a later one) adds its bytes and operation to that
//!   interval and raises its maximum, but its percentiles stay as they were summarised. The
//!   simulator completes in time order, so it never happens there.
//! * The interval is process-wide ([`set_interval`]) rather than part of each run's
//!   configuration: the simulator's runner, which makes the recorders, belongs to another part
//!   of the code and takes no interval yet. Every run in a process uses the same interval.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use elevator_core::{Duration, Instant};

use crate::fio::FioDirection;
use crate::metrics::BufferedLatency;
use crate::model::{Series, SeriesInterval, SeriesLatency, SeriesLine};

/// Significant digits of each interval's latency histogram (relative error under 1 %, finer
/// than fio's 1.6 % latency buckets; about 37 KiB a line).
pub const SERIES_DIGITS: u8 = 2;
/// The interval when none is given: one second, as the issue asks.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest interval accepted: below a millisecond, a long run's series would outgrow its
/// report (an hour at 1 ms is 3.6 million entries a line).
pub const INTERVAL_MIN: Duration = Duration::from_millis(1);
/// The longest interval accepted: an hour.
pub const INTERVAL_MAX: Duration = Duration::from_secs(3600);

/// The interval every [`crate::PhaseRecorder`] made from now on uses, in nanoseconds.
static INTERVAL_NS: AtomicU64 = AtomicU64::new(DEFAULT_INTERVAL.as_nanos());

/// Sets the interval of every series recorded from now on in this process (the command's
/// `--interval`).
///
/// # Errors
///
/// Outside [`INTERVAL_MIN`]..=[`INTERVAL_MAX`], a message naming the accepted range.
pub fn set_interval(interval: Duration) -> Result<(), String> {
    check_interval(interval)?;
    INTERVAL_NS.store(interval.as_nanos(), Ordering::Relaxed);
    Ok(())
}

/// The interval series are recorded at ([`set_interval`]).
pub fn interval() -> Duration {
    Duration::from_nanos(INTERVAL_NS.load(Ordering::Relaxed))
}

/// `interval` if it is in the accepted range, else a message naming the range.
///
/// # Errors
///
/// Outside [`INTERVAL_MIN`]..=[`INTERVAL_MAX`].
pub fn check_interval(interval: Duration) -> Result<Duration, String> {
    if interval < INTERVAL_MIN || interval > INTERVAL_MAX {
        return Err(format!(
            "interval {interval} is out of range: accepted {INTERVAL_MIN} to {INTERVAL_MAX}"
        ));
    }
    Ok(interval)
}

/// `--interval`'s text: a time (`250ms`; a bare number is seconds) in the accepted range.
/// The CLI's value parser, the Python package's `interval=` and a sweep grid's all read it
/// here, so that they accept the same texts with the same messages.
///
/// # Errors
///
/// Text that is not a time, or a time outside [`INTERVAL_MIN`]..=[`INTERVAL_MAX`]: a message
/// naming the accepted range.
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let interval = elevator_core::units::parse_duration(text, 1_000_000_000)
        .map_err(|error| format!("{error}; accepted {INTERVAL_MIN} to {INTERVAL_MAX}"))?;
    check_interval(interval)
}

/// The job an issuer belongs to: its name without a trailing clone number (`seqread/1` →
/// `seqread`, as fio names a job's clones), else the whole name.
pub fn job_of(issuer_name: &str) -> &str {
    match issuer_name.rsplit_once('/') {
        Some((job, clone))
            if !job.is_empty()
                && !clone.is_empty()
                && clone.bytes().all(|byte| byte.is_ascii_digit()) =>
        {
            job
        }
        _ => issuer_name,
    }
}

/// Directions a line can have, in the report's order; the last is for operations recorded
/// without a direction.
const DIRECTION_NAMES: [&str; 5] = ["read", "write", "trim", "sync", "unknown"];

fn direction_slot(direction: Option<FioDirection>) -> usize {
    match direction {
        Some(FioDirection::Read) => 0,
        Some(FioDirection::Write) => 1,
        Some(FioDirection::Trim) => 2,
        Some(FioDirection::Sync) => 3,
        None => 4,
    }
}

/// A closed interval, summarised.
#[derive(Clone, Copy, Debug, Default)]
struct ClosedInterval {
    bytes: u64,
    ops: u64,
    latency_ns: SeriesLatency,
}

/// One job × direction.
#[derive(Clone, Debug)]
struct LineRecorder {
    job: usize,
    slot: usize,
    /// Summaries of the intervals before `open_index`, one each.
    closed: Vec<ClosedInterval>,
    open_index: u64,
    open_bytes: u64,
    open_ops: u64,
    open_latency: BufferedLatency,
}

impl LineRecorder {
    /// Summarises the open interval and opens the empty ones up to `index`.
    fn advance_to(&mut self, index: u64) {
        debug_assert!(index > self.open_index);
        let summary = self.summarise_open();
        self.closed.push(summary);
        // Intervals with no completion in between: zeros.
        for _ in self.open_index + 1..index {
            self.closed.push(ClosedInterval::default());
        }
        self.open_index = index;
        self.open_bytes = 0;
        self.open_ops = 0;
        self.open_latency.reset();
    }

    fn summarise_open(&self) -> ClosedInterval {
        let values = self.open_latency.percentiles(&[50.0, 90.0, 99.0]);
        ClosedInterval {
            bytes: self.open_bytes,
            ops: self.open_ops,
            latency_ns: SeriesLatency {
                p50: values[0],
                p90: values[1],
                p99: values[2],
                max: self.open_latency.max_ns(),
            },
        }
    }
}

/// Records a phase's series with bounded memory (see the module's documentation).
#[derive(Clone, Debug)]
pub struct SeriesRecorder {
    started: Instant,
    interval_ns: u64,
    /// Each issuer's job, as an index into `jobs`.
    issuer_jobs: Vec<usize>,
    /// Job names in the order of their first issuer.
    jobs: Vec<String>,
    /// Per job, per direction slot: the line's index in `lines`, once it has an operation.
    line_of: Vec<[Option<usize>; DIRECTION_NAMES.len()]>,
    lines: Vec<LineRecorder>,
}

impl SeriesRecorder {
    /// A series from `started` at `interval` for issuers named `issuer_names` (indexed from 0).
    ///
    /// # Panics
    ///
    /// When `interval` is zero.
    pub fn new<'a>(
        started: Instant,
        interval: Duration,
        issuer_names: impl IntoIterator<Item = &'a str>,
    ) -> SeriesRecorder {
        assert!(interval.as_nanos() > 0, "a series needs an interval longer than zero");
        let mut jobs: Vec<String> = Vec::new();
        // Lookup only (the order is `jobs`'), so thousands of issuers cost n log n.
        let mut job_index: BTreeMap<&str, usize> = BTreeMap::new();
        let issuer_jobs = issuer_names
            .into_iter()
            .map(|name| {
                let job = job_of(name);
                *job_index.entry(job).or_insert_with(|| {
                    jobs.push(job.to_owned());
                    jobs.len() - 1
                })
            })
            .collect();
        let line_of = vec![[None; DIRECTION_NAMES.len()]; jobs.len()];
        SeriesRecorder {
            started,
            interval_ns: interval.as_nanos(),
            issuer_jobs,
            jobs,
            line_of,
            lines: Vec::new(),
        }
    }

    /// Bytes its histograms and closed intervals take (for the memory bound).
    pub fn memory_bytes(&self) -> usize {
        self.lines
            .iter()
            .map(|line| {
                line.open_latency.memory_bytes()
                    + line.closed.capacity() * std::mem::size_of::<ClosedInterval>()
            })
            .sum()
    }

    /// The interval an operation completed at `completed` falls in.
    fn index_of(&self, completed: Instant) -> u64 {
        let offset_ns = completed.saturating_since(self.started).as_nanos();
        // Closed at the end: a completion exactly on a boundary belongs to the interval ending
        // there.
        offset_ns.saturating_sub(1) / self.interval_ns
    }

    /// Issuer `issuer`'s operation of `bytes` going `direction` (`None` when unknown),
    /// submitted at `submitted`, completed at `completed`.
    pub fn record(
        &mut self,
        issuer: usize,
        direction: Option<FioDirection>,
        bytes: u64,
        submitted: Instant,
        completed: Instant,
    ) {
        let index = self.index_of(completed);
        let job = self.issuer_jobs[issuer];
        let slot = direction_slot(direction);
        let line = match self.line_of[job][slot] {
            Some(line) => line,
            None => {
                // A new line (once per job × direction, not per operation); it starts at the
                // interval of its first completion, the ones before are zeros.
                self.lines.push(LineRecorder {
                    job,
                    slot,
                    closed: vec![ClosedInterval::default(); index as usize],
                    open_index: index,
                    open_bytes: 0,
                    open_ops: 0,
                    open_latency: BufferedLatency::new(SERIES_DIGITS),
                });
                self.line_of[job][slot] = Some(self.lines.len() - 1);
                self.lines.len() - 1
            }
        };
        let line = &mut self.lines[line];
        let latency = completed.saturating_since(submitted);
        if index > line.open_index {
            line.advance_to(index);
        }
        if index == line.open_index {
            line.open_bytes += bytes;
            line.open_ops += 1;
            line.open_latency.record(latency);
        } else {
            // Late: its interval is closed (see the module's Deviations).
            let closed = &mut line.closed[index as usize];
            closed.bytes += bytes;
            closed.ops += 1;
            closed.latency_ns.max = closed.latency_ns.max.max(latency.as_nanos());
        }
    }

    /// The series of a phase that ended at `ended`: every line has one entry per interval
    /// from the start to `ended` (at least one).
    pub fn finish(&mut self, ended: Instant) -> Series {
        let duration_ns = ended.saturating_since(self.started).as_nanos();
        let count = duration_ns.div_ceil(self.interval_ns).max(1);
        let interval_ns = self.interval_ns;
        let mut order: Vec<usize> = (0..self.lines.len()).collect();
        order.sort_by_key(|&line| (self.lines[line].job, self.lines[line].slot));
        let lines = order
            .into_iter()
            .map(|line| {
                let line = &mut self.lines[line];
                // Close the open interval and pad to the phase's end.
                if count > line.open_index + 1 {
                    line.advance_to(count);
                } else {
                    let summary = line.summarise_open();
                    line.closed.push(summary);
                }
                let intervals = line
                    .closed
                    .iter()
                    .take(count as usize)
                    .enumerate()
                    .map(|(index, closed)| {
                        let start_ns = index as u64 * interval_ns;
                        let length_ns = interval_ns.min(duration_ns.saturating_sub(start_ns));
                        let per_second = |amount: u64| {
                            if length_ns == 0 {
                                0.0
                            } else {
                                amount as f64 * 1e9 / length_ns as f64
                            }
                        };
                        SeriesInterval {
                            start_ns,
                            duration_ns: length_ns,
                            bytes: closed.bytes,
                            ops: closed.ops,
                            throughput_bytes_per_s: per_second(closed.bytes),
                            iops: per_second(closed.ops),
                            latency_ns: closed.latency_ns,
                        }
                    })
                    .collect();
                SeriesLine {
                    job: self.jobs[line.job].clone(),
                    direction: DIRECTION_NAMES[line.slot].to_owned(),
                    intervals,
                }
            })
            .collect();
        Series { interval_ns, significant_digits: SERIES_DIGITS, lines }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    // Proves `--interval` texts read as the CLI documents them: a bare number is seconds, a
    // unit is honoured, the range's ends are inclusive, and text that is not a time or a time
    // outside the range is refused naming the accepted range.
    #[test]
    fn interval_texts_are_times_within_the_accepted_range() {
        assert_eq!(parse_interval("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_interval("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_interval("50ms"), Ok(Duration::from_millis(50)));
        assert_eq!(parse_interval("1ms"), Ok(INTERVAL_MIN));
        assert_eq!(parse_interval("3600s"), Ok(INTERVAL_MAX));
        for bad in ["999us", "3601s", "0"] {
            let error = parse_interval(bad).unwrap_err();
            assert!(error.contains("out of range: accepted 1ms to 3600s"), "{bad}: {error}");
        }
        let error = parse_interval("soon").unwrap_err();
        assert!(error.ends_with("; accepted 1ms to 3600s"), "{error}");
    }

    // Proves fio's clone numbers are stripped and nothing else is: `job/3` is job `job`, but a
    // name whose tail is not a number, or that is only a number after the slash, stays whole.
    #[test]
    fn jobs_are_issuer_names_without_their_clone_number() {
        assert_eq!(job_of("seqread/0"), "seqread");
        assert_eq!(job_of("a/b/12"), "a/b");
        assert_eq!(job_of("dd"), "dd");
        assert_eq!(job_of("child 3"), "child 3");
        assert_eq!(job_of("dir/file"), "dir/file");
        assert_eq!(job_of("/7"), "/7");
        assert_eq!(job_of("x/"), "x/");
    }

    // Proves interval boundaries are exact and closed at their end: a completion at exactly
    // 1 s is in the first interval, one a nanosecond later in the second; the last interval
    // has the phase's remaining length; an interval with nothing is zeros; rates are over
    // each interval's true length.
    #[test]
    fn boundaries_are_exact_and_the_last_interval_is_partial() {
        let mut series = SeriesRecorder::new(at_ms(0), Duration::from_secs(1), ["a"]);
        let read = Some(FioDirection::Read);
        series.record(0, read, 4096, at_ms(0), Instant::from_nanos(1_000_000_000));
        series.record(0, read, 4096, at_ms(0), Instant::from_nanos(1_000_000_001));
        series.record(0, read, 8192, at_ms(3000), at_ms(3500));
        let done = series.finish(at_ms(3500));
        assert_eq!((done.interval_ns, done.significant_digits), (1_000_000_000, SERIES_DIGITS));
        let line = &done.lines[0];
        let ops: Vec<u64> = line.intervals.iter().map(|i| i.ops).collect();
        assert_eq!(ops, [1, 1, 0, 1]);
        let starts: Vec<u64> = line.intervals.iter().map(|i| i.start_ns).collect();
        assert_eq!(starts, [0, 1_000_000_000, 2_000_000_000, 3_000_000_000]);
        assert_eq!(line.intervals[3].duration_ns, 500_000_000);
        assert_eq!(line.intervals[3].iops, 2.0, "one operation over half a second");
        assert_eq!(line.intervals[3].throughput_bytes_per_s, 16384.0);
        assert_eq!(line.intervals[3].latency_ns.max, 500_000_000);
        assert_eq!(line.intervals[2].latency_ns, SeriesLatency::default());
    }

    // Proves lines are kept per job and direction, in the order of the jobs' first issuers
    // and fio's direction order, and a line that starts late or stops early still covers the
    // whole phase (zeros before and after).
    #[test]
    fn lines_per_job_and_direction_cover_the_phase() {
        let names = ["w/0", "r/0", "r/1"];
        let mut series = SeriesRecorder::new(at_ms(0), Duration::from_millis(100), names);
        series.record(1, Some(FioDirection::Read), 1, at_ms(0), at_ms(250));
        series.record(2, Some(FioDirection::Read), 1, at_ms(0), at_ms(260));
        series.record(0, Some(FioDirection::Write), 1, at_ms(0), at_ms(50));
        series.record(1, None, 1, at_ms(0), at_ms(50));
        let done = series.finish(at_ms(400));
        let keys: Vec<(&str, &str)> =
            done.lines.iter().map(|line| (line.job.as_str(), line.direction.as_str())).collect();
        assert_eq!(keys, [("w", "write"), ("r", "read"), ("r", "unknown")]);
        let reads: Vec<u64> = done.lines[1].intervals.iter().map(|i| i.ops).collect();
        assert_eq!(reads, [0, 0, 2, 0], "both clones of r, in (200, 300] ms");
        assert!(done.lines.iter().all(|line| line.intervals.len() == 4));
    }

    // Proves the percentiles are each interval's own: a slow interval after a fast one shows
    // its own p50 within the stated precision, not a blend.
    #[test]
    fn percentiles_are_per_interval() {
        let mut series = SeriesRecorder::new(at_ms(0), Duration::from_secs(1), ["a"]);
        for i in 0..100u64 {
            let done = at_ms(10 + i);
            let submitted = Instant::from_nanos(done.as_nanos() - 100_000);
            series.record(0, Some(FioDirection::Read), 1, submitted, done);
            let late = at_ms(1010 + i);
            let submitted = Instant::from_nanos(late.as_nanos() - 5_000_000);
            series.record(0, Some(FioDirection::Read), 1, submitted, late);
        }
        let done = series.finish(at_ms(2000));
        let [fast, slow] = &done.lines[0].intervals[..] else { panic!("two intervals") };
        for (latency, exact) in [(fast.latency_ns, 100_000.0), (slow.latency_ns, 5_000_000.0)] {
            for value in [latency.p50, latency.p90, latency.p99, latency.max] {
                assert!((value as f64 / exact - 1.0).abs() < 0.01, "{value} for {exact}");
            }
        }
    }

    // Proves a late completion (live reaping) still counts its bytes and operation in its own
    // interval, so the series adds up to the phase.
    #[test]
    fn a_late_completion_counts_in_its_interval() {
        let mut series = SeriesRecorder::new(at_ms(0), Duration::from_secs(1), ["a"]);
        series.record(0, Some(FioDirection::Write), 10, at_ms(0), at_ms(1500));
        series.record(0, Some(FioDirection::Write), 20, at_ms(0), at_ms(900));
        let done = series.finish(at_ms(1500));
        let bytes: Vec<u64> = done.lines[0].intervals.iter().map(|i| i.bytes).collect();
        assert_eq!(bytes, [20, 10]);
        assert_eq!(done.lines[0].intervals[0].latency_ns.max, 900_000_000);
    }

    // Proves memory is bounded by lines and intervals, not operations: a hundred thousand more
    // operations in the open interval take no more memory, and each later interval adds one
    // small summary, the histogram being reused.
    #[test]
    fn memory_grows_with_intervals_not_operations() {
        let mut series = SeriesRecorder::new(at_ms(0), Duration::from_millis(1), ["a"]);
        let read = Some(FioDirection::Read);
        let record = |series: &mut SeriesRecorder, nanos: u64, latency_ns: u64| {
            let done = Instant::from_nanos(nanos);
            series.record(0, read, 4096, Instant::from_nanos(nanos - latency_ns), done);
        };
        for latency_ns in 1..=1000 {
            record(&mut series, 1_000_000, latency_ns * 997);
        }
        let one_interval = series.memory_bytes();
        for index in 0..100_000u64 {
            record(&mut series, 1_000_000, 1 + index % 997_000);
        }
        assert_eq!(series.memory_bytes(), one_interval, "no memory per operation");
        for interval in 1..=1000u64 {
            for latency_ns in 1..=100 {
                record(&mut series, 1_000_000 * (interval + 1), latency_ns * 9_000);
            }
        }
        let per_interval = (series.memory_bytes() - one_interval) / 1000;
        assert!(per_interval <= 2 * std::mem::size_of::<ClosedInterval>(), "{per_interval}");
        assert_eq!(
            series.finish(Instant::from_nanos(1_001_000_000)).lines[0].intervals.len(),
            1001
        );
    }

    // Proves the accepted range is enforced and named.
    #[test]
    fn intervals_outside_the_range_are_refused() {
        assert!(check_interval(Duration::from_micros(999)).unwrap_err().contains("accepted"));
        assert!(check_interval(Duration::from_secs(3601)).is_err());
        assert_eq!(check_interval(INTERVAL_MIN), Ok(INTERVAL_MIN));
    }
}
