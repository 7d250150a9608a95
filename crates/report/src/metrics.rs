//! Latency recorders: HDR histograms of stated precision, fixed in size however long a run is
//! and however many issuers it has.
//!
//! A [`LatencyRecorder`] keeps every sample in an HDR histogram (`hdrhistogram`): exact count,
//! sum (so an exact mean) and maximum, and percentiles within a relative error of
//! 10^−digits. A phase records each sample twice: in its direction's histogram (the phase's
//! is their exact merge at the end) at [`PHASE_DIGITS`] (three significant digits, under
//! 0.1 %; about 270 KiB each) and in its
//! issuer's at [`ISSUER_DIGITS`] (two, under 1 %, finer than fio's 1.6 % buckets; about
//! 37 KiB), so a phase of 4096 jobs needs about 150 MiB. The report states the method
//! ([`LatencyMethod`]).

use elevator_core::{Duration, Instant};
use hdrhistogram::Histogram;

use crate::fio::{FioDirection, JobStats};
use crate::model::{
    DirectionSummary, IoErrors, IssuerLatency, IssuerSummary, LatencyMethod, LatencySummary, Phase,
};
use crate::series::{self, SeriesRecorder};

/// Significant digits of a phase's latency histogram.
pub const PHASE_DIGITS: u8 = 3;
/// Significant digits of each issuer's latency histogram.
pub const ISSUER_DIGITS: u8 = 2;
/// The largest latency a histogram resolves, 2^42 ns (about 73 minutes): every latency a run
/// can produce within its time bound; longer ones count at the top.
const HIGHEST_TRACKABLE_NS: u64 = 1 << 42;

/// Latency samples in nanoseconds.
#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    histogram: Histogram<u64>,
    digits: u8,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl LatencyRecorder {
    /// A recorder keeping `digits` significant decimal digits (1 to 5).
    pub fn new(digits: u8) -> LatencyRecorder {
        let histogram = Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NS, digits)
            .expect("valid histogram bounds and precision");
        LatencyRecorder { histogram, digits, count: 0, sum_ns: 0, max_ns: 0 }
    }

    /// Adds one sample.
    pub fn record(&mut self, latency: Duration) {
        let nanos = latency.as_nanos();
        self.count += 1;
        self.sum_ns += u128::from(nanos);
        self.max_ns = self.max_ns.max(nanos);
        self.histogram.saturating_record(nanos.max(1));
    }

    /// Forgets every sample, keeping the histogram's memory (a series' next interval).
    pub fn reset(&mut self) {
        self.histogram.reset();
        self.count = 0;
        self.sum_ns = 0;
        self.max_ns = 0;
    }

    /// How many samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The largest sample (exact; 0 with none): [`LatencyRecorder::summary`]'s `max` without
    /// the four percentile scans of the histogram that the rest of the summary costs.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// Bytes its histogram takes (for the memory bound).
    pub fn memory_bytes(&self) -> usize {
        self.histogram.distinct_values() * std::mem::size_of::<u64>()
    }

    /// Folds `other`'s samples into this one (at this one's precision).
    pub fn merge(&mut self, other: &LatencyRecorder) {
        if other.digits == self.digits {
            // Same bounds and precision: the buckets line up, so adding them count by count
            // (HdrHistogram's `add`) is exact — the merged histogram is the one that would have
            // recorded both sets of samples.
            self.histogram.add(&other.histogram).expect("histograms of the same bounds");
            self.count += other.count;
            self.sum_ns += other.sum_ns;
            self.max_ns = self.max_ns.max(other.max_ns);
            return;
        }
        for value in other.histogram.iter_recorded() {
            self.histogram
                .record_n(value.value_iterated_to(), value.count_at_value())
                .expect("values within the shared bounds");
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// How the percentiles are computed.
    pub fn method(&self) -> LatencyMethod {
        LatencyMethod::Histogram { significant_digits: self.digits }
    }

    /// The values at each percentile in `percentiles` (0 < p <= 100), in order: the highest
    /// value equivalent (at the recorder's precision) to the sample at that rank, never above
    /// the largest sample.
    pub fn percentiles(&self, percentiles: &[f64]) -> Vec<u64> {
        if self.count == 0 {
            return vec![0; percentiles.len()];
        }
        percentiles
            .iter()
            .map(|&p| self.histogram.value_at_percentile(p).min(self.max_ns))
            .collect()
    }

    /// Mean (exact, rounded down), p50, p90, p99, p99.9 and max (exact).
    pub fn summary(&self) -> LatencySummary {
        let values = self.percentiles(&[50.0, 90.0, 99.0, 99.9]);
        LatencySummary {
            mean: if self.count == 0 { 0 } else { (self.sum_ns / u128::from(self.count)) as u64 },
            p50: values[0],
            p90: values[1],
            p99: values[2],
            p99_9: values[3],
            max: self.max_ns,
        }
    }
}

/// Samples a [`BufferedLatency`] keeps as values before it moves them into its histogram.
/// Below this many, sorting them costs less than the histogram's percentile scans and its
/// reset (each a walk over thousands of buckets, paid per interval however few samples it
/// had: a disk at depth 1 completes about a hundred a second).
const BUFFERED_SAMPLES: usize = 256;

/// A [`LatencyRecorder`] for short windows reset often (a series' intervals): up to
/// [`BUFFERED_SAMPLES`] samples are kept as values, their percentiles found by sorting them
/// (the same values the histogram would give: see [`BufferedLatency::percentiles`]); beyond
/// that they go into the histogram, until the next reset.
#[derive(Clone, Debug)]
pub(crate) struct BufferedLatency {
    /// Its count, sum and maximum always; its histogram only the samples past the buffer.
    recorder: LatencyRecorder,
    /// The samples while there are at most [`BUFFERED_SAMPLES`] (the histogram holds none
    /// then), each at least 1 and at most the histogram's highest trackable value.
    samples: Vec<u64>,
    /// Whether samples go to `samples` rather than to the histogram (no spill since the last
    /// reset).
    buffering: bool,
}

impl BufferedLatency {
    /// An empty recorder keeping `digits` significant digits in its histogram.
    pub(crate) fn new(digits: u8) -> BufferedLatency {
        BufferedLatency {
            recorder: LatencyRecorder::new(digits),
            samples: Vec::with_capacity(BUFFERED_SAMPLES),
            buffering: true,
        }
    }

    /// Adds one sample.
    pub(crate) fn record(&mut self, latency: Duration) {
        let value = latency.as_nanos().max(1);
        if self.buffering
            && self.samples.len() < BUFFERED_SAMPLES
            && value <= self.recorder.histogram.high()
        {
            let recorder = &mut self.recorder;
            recorder.count += 1;
            recorder.sum_ns += u128::from(latency.as_nanos());
            recorder.max_ns = recorder.max_ns.max(latency.as_nanos());
            self.samples.push(value);
            return;
        }
        if self.buffering {
            self.spill();
        }
        self.recorder.record(latency);
    }

    /// Moves the buffered samples into the histogram (their count, sum and maximum are
    /// already counted); samples go there from now until the next reset.
    #[cold]
    fn spill(&mut self) {
        for &value in &self.samples {
            self.recorder.histogram.saturating_record(value);
        }
        self.samples.clear();
        self.buffering = false;
    }

    /// Forgets every sample, keeping the memory.
    pub(crate) fn reset(&mut self) {
        if self.buffering {
            // The histogram is empty: no walk over its buckets.
            let recorder = &mut self.recorder;
            recorder.count = 0;
            recorder.sum_ns = 0;
            recorder.max_ns = 0;
        } else {
            self.recorder.reset();
        }
        self.samples.clear();
        self.buffering = true;
    }

    /// The largest sample (exact; 0 with none).
    pub(crate) fn max_ns(&self) -> u64 {
        self.recorder.max_ns
    }

    /// Bytes it takes (for the memory bound).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.recorder.memory_bytes() + self.samples.capacity() * std::mem::size_of::<u64>()
    }

    /// [`LatencyRecorder::percentiles`] of the samples: exactly what the histogram holding
    /// them would answer. hdrhistogram's `value_at_quantile(q)` (7.5) takes the rank
    /// `k = max(1, ceil(q × count))` and walks its buckets to the first whose cumulative count
    /// reaches `k`: the bucket of the k-th smallest sample (every sample in a lower bucket is
    /// smaller, and the k smallest are all at or below it). It answers that bucket's highest
    /// equivalent value (its lowest for q = 0), which is the sample's own; every buffered
    /// sample is one the histogram records unclamped.
    pub(crate) fn percentiles(&self, percentiles: &[f64]) -> Vec<u64> {
        if !self.buffering || self.samples.is_empty() {
            return self.recorder.percentiles(percentiles);
        }
        let mut sorted = [0u64; BUFFERED_SAMPLES];
        let sorted = &mut sorted[..self.samples.len()];
        sorted.copy_from_slice(&self.samples);
        sorted.sort_unstable();
        let histogram = &self.recorder.histogram;
        percentiles
            .iter()
            .map(|&p| {
                // `value_at_percentile`'s arithmetic, step for step, so the rank is the same
                // float-rounded one.
                let quantile = p / 100.0;
                let quantile = if quantile > 1.0 { 1.0 } else { quantile };
                let rank = ((quantile * sorted.len() as f64).ceil() as u64).max(1) as usize;
                let sample = sorted[rank.min(sorted.len()) - 1];
                let value = if quantile == 0.0 {
                    histogram.lowest_equivalent(sample)
                } else {
                    histogram.highest_equivalent(sample)
                };
                value.min(self.recorder.max_ns)
            })
            .collect()
    }
}

/// One issuer's record of a phase.
#[derive(Clone, Debug)]
struct IssuerRecord {
    name: String,
    bytes: u64,
    ops: u64,
    first_submit: Option<Instant>,
    last_complete: Option<Instant>,
    latency: LatencyRecorder,
    /// (user, system) CPU nanoseconds, when known.
    cpu_ns: Option<(u64, u64)>,
    /// Bytes done when the phase was stonewalled.
    bytes_at_stonewall: Option<u64>,
    errors: IoErrors,
    /// fio's figures for it as a job, once an operation was submitted with its direction
    /// ([`PhaseRecorder::record_submit`]).
    fio: Option<Box<JobStats>>,
    /// Its operations in flight with their direction and byte offset, by the issuer's
    /// operation id.
    /// By I/O id: looked up once per operation, never walked, ids in increasing order: an
    /// `IdMap` (cheaper per operation than a hash map).
    in_flight: elevator_core::IdMap<(FioDirection, u64)>,
}

/// Which way a failed operation went, for [`PhaseRecorder::record_error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorDirection {
    /// A read.
    Read,
    /// A write.
    Write,
    /// A flush, sync or discard.
    Other,
}

/// Everything measured in one phase, per issuer.
#[derive(Clone, Debug)]
pub struct PhaseRecorder {
    name: String,
    started: Instant,
    ended: Instant,
    issuers: Vec<IssuerRecord>,
    stonewall: Option<Instant>,
    counters: std::collections::BTreeMap<String, u64>,
    /// The whole process's CPU over the phase, when measured as one.
    process_cpu_ns: Option<(u64, u64)>,
    /// The phase's first failure, whichever issuer had it.
    first_error: Option<String>,
    /// The latencies of operations recorded without a direction ([`PhaseRecorder::record`], or
    /// [`PhaseRecorder::record_io`] without a submission), at the phase's precision. The phase's
    /// histogram is this merged with the directions' at [`PhaseRecorder::finish`]
    /// ([`PhaseRecorder::phase_latency`]): each operation is recorded once at the phase's
    /// precision, not twice, and the merge of same-precision histograms is exact.
    undirected: LatencyRecorder,
    /// Per direction: bytes, operations and latencies at the phase's precision (operations
    /// recorded with [`PhaseRecorder::record_io`]).
    /// By `FioDirection as usize` (fio's order): a slot per direction, looked up per I/O.
    directions: [Option<(u64, u64, LatencyRecorder)>; 4],
    /// Every issuer keeps each operation for fio's log files ([`JobStats::io_samples`]).
    keep_io_samples: bool,
    /// Per job and direction, interval by interval ([`crate::series`]).
    series: SeriesRecorder,
}

impl PhaseRecorder {
    /// A phase that starts at `started`, with issuers named `issuer_names` (indexed from 0). Its
    /// series is recorded at the process's interval ([`series::set_interval`]).
    pub fn new(name: impl Into<String>, started: Instant, issuer_names: Vec<String>) -> Self {
        let series = SeriesRecorder::new(
            started,
            series::interval(),
            issuer_names.iter().map(String::as_str),
        );
        PhaseRecorder {
            name: name.into(),
            started,
            ended: started,
            issuers: issuer_names
                .into_iter()
                .map(|name| IssuerRecord {
                    name,
                    bytes: 0,
                    ops: 0,
                    first_submit: None,
                    last_complete: None,
                    latency: LatencyRecorder::new(ISSUER_DIGITS),
                    cpu_ns: None,
                    bytes_at_stonewall: None,
                    errors: IoErrors::default(),
                    fio: None,
                    in_flight: elevator_core::IdMap::new(),
                })
                .collect(),
            stonewall: None,
            counters: Default::default(),
            process_cpu_ns: None,
            first_error: None,
            undirected: LatencyRecorder::new(PHASE_DIGITS),
            directions: [None, None, None, None],
            keep_io_samples: false,
            series,
        }
    }

    /// Records the phase's series at `interval` instead of the process's (callers that carry
    /// their own interval; before any operation is recorded).
    ///
    /// # Panics
    ///
    /// When `interval` is zero.
    pub fn set_series_interval(&mut self, interval: Duration) {
        let names = self.issuers.iter().map(|issuer| issuer.name.as_str());
        self.series = SeriesRecorder::new(self.started, interval, names);
    }

    /// Every issuer keeps each of its operations ([`JobStats::io_samples`]) for fio's log
    /// files (`write_bw_log`, ...; fio-compat.md §4.6): memory grows with the I/Os, so only
    /// runs that write logs ask.
    pub fn keep_io_samples(&mut self) {
        self.keep_io_samples = true;
    }

    /// The whole process used `user_ns` and `sys_ns` of CPU in the phase (live runs, whose
    /// issuers share one thread). The phase's utilisation is then that over its duration.
    pub fn record_process_cpu(&mut self, user_ns: u64, sys_ns: u64) {
        self.process_cpu_ns = Some((user_ns, sys_ns));
    }

    /// iozone's stonewall: at `at` the first issuer finished; every issuer's throughput counts
    /// what it has done by now, over the time until now. Later calls change nothing.
    pub fn stonewall(&mut self, at: Instant) {
        if self.stonewall.is_some() {
            return;
        }
        self.stonewall = Some(at);
        for issuer in &mut self.issuers {
            issuer.bytes_at_stonewall = Some(issuer.bytes);
        }
    }

    /// Issuer `issuer` used `user_ns` and `sys_ns` of CPU in the phase.
    pub fn record_cpu(&mut self, issuer: usize, user_ns: u64, sys_ns: u64) {
        self.issuers[issuer].cpu_ns = Some((user_ns, sys_ns));
    }

    /// Adds `value` to the phase's counter `name`.
    pub fn add_counter(&mut self, name: &str, value: u64) {
        *self.counters.entry(name.to_owned()).or_default() += value;
    }

    /// Issuer `issuer` completed an operation of `bytes` submitted at `submitted`.
    pub fn record(&mut self, issuer: usize, bytes: u64, submitted: Instant, completed: Instant) {
        self.record_totals(issuer, bytes, submitted, completed);
        self.undirected.record(completed.saturating_since(submitted));
        self.series.record(issuer, None, bytes, submitted, completed);
    }

    /// [`PhaseRecorder::record`] without the series.
    fn record_totals(&mut self, issuer: usize, bytes: u64, submitted: Instant, completed: Instant) {
        let record = &mut self.issuers[issuer];
        record.bytes += bytes;
        record.ops += 1;
        record.first_submit = Some(record.first_submit.map_or(submitted, |t| t.min(submitted)));
        record.last_complete = Some(record.last_complete.map_or(completed, |t| t.max(completed)));
        let latency = completed.saturating_since(submitted);
        record.latency.record(latency);
        self.ended = self.ended.max(completed);
    }

    /// Issuer `issuer` submitted its operation `io_id` going `direction` at byte
    /// `offset_bytes` at `at`: the operation is then recorded by direction when
    /// [`PhaseRecorder::record_io`] completes it, and counts in the issuer's fio figures
    /// (depth at submission, fio-compat.md §4.2; the offset for fio's logs, §4.6).
    pub fn record_submit(
        &mut self,
        issuer: usize,
        io_id: u64,
        direction: FioDirection,
        offset_bytes: u64,
        at: Instant,
    ) {
        let started = self.started.as_nanos();
        let keep = self.keep_io_samples;
        let record = &mut self.issuers[issuer];
        let job = record.fio.get_or_insert_with(|| {
            let mut job = JobStats::new(started);
            if keep {
                job.io_samples = Some(Vec::new());
            }
            Box::new(job)
        });
        job.submitted(at.as_nanos());
        record.in_flight.insert(io_id, (direction, offset_bytes));
    }

    /// [`PhaseRecorder::record`] for an operation `io_id` whose submission was recorded with
    /// [`PhaseRecorder::record_submit`]: also counted by direction and in the issuer's fio
    /// figures. An operation submitted without a direction is recorded as `record` does.
    pub fn record_io(
        &mut self,
        issuer: usize,
        io_id: u64,
        bytes: u64,
        submitted: Instant,
        completed: Instant,
    ) {
        self.record_totals(issuer, bytes, submitted, completed);
        let record = &mut self.issuers[issuer];
        let Some((direction, offset_bytes)) = record.in_flight.remove(io_id) else {
            self.undirected.record(completed.saturating_since(submitted));
            self.series.record(issuer, None, bytes, submitted, completed);
            return;
        };
        self.series.record(issuer, Some(direction), bytes, submitted, completed);
        if let Some(job) = record.fio.as_mut() {
            job.completed(direction, bytes, submitted.as_nanos(), completed.as_nanos());
            job.sample_io(
                direction,
                bytes,
                offset_bytes,
                submitted.as_nanos(),
                completed.as_nanos(),
            );
        }
        let (dir_bytes, ops, latency) = self.directions[direction as usize]
            .get_or_insert_with(|| (0, 0, LatencyRecorder::new(PHASE_DIGITS)));
        *dir_bytes += bytes;
        *ops += 1;
        latency.record(completed.saturating_since(submitted));
    }

    /// Issuer `issuer`'s operation failed at `completed`: it counts as an error of its
    /// direction, never as bytes, an operation or a latency. `what` describes the failure (kept
    /// if it is the first).
    pub fn record_error(
        &mut self,
        issuer: usize,
        direction: ErrorDirection,
        completed: Instant,
        what: impl FnOnce() -> String,
    ) {
        let errors = &mut self.issuers[issuer].errors;
        match direction {
            ErrorDirection::Read => errors.read += 1,
            ErrorDirection::Write => errors.write += 1,
            ErrorDirection::Other => errors.other += 1,
        }
        if errors.first.is_none() {
            errors.first = Some(what());
        }
        if self.first_error.is_none() {
            self.first_error = errors.first.clone();
        }
        self.ended = self.ended.max(completed);
    }

    /// Moves the phase's end to at least `at` (an issuer that finished without I/O).
    pub fn extend_to(&mut self, at: Instant) {
        self.ended = self.ended.max(at);
    }

    /// Every operation's latency at the phase's precision: the undirected recorder merged with
    /// the directions' (borrowed when only one of them has samples, so no copy).
    fn phase_latency(&self) -> std::borrow::Cow<'_, LatencyRecorder> {
        let mut sources = std::iter::once(&self.undirected)
            .chain(self.directions.iter().flatten().map(|(_, _, latency)| latency))
            .filter(|recorder| recorder.count() > 0);
        let Some(first) = sources.next() else {
            return std::borrow::Cow::Borrowed(&self.undirected);
        };
        let mut merged = std::borrow::Cow::Borrowed(first);
        for other in sources {
            merged.to_mut().merge(other);
        }
        merged
    }

    /// The finished phase. Its CPU utilisation is iozone's `-+u` figure: 100 × the issuers'
    /// CPU time over the longest issuer's wall time (so it can exceed 100 with several CPUs);
    /// `None` when no issuer's CPU time was recorded.
    pub fn finish(&mut self) -> Phase {
        let (latency_ns, latency_method) = {
            let all = self.phase_latency();
            (all.summary(), all.method())
        };
        let duration = self.ended.saturating_since(self.started);
        let bytes: u64 = self.issuers.iter().map(|issuer| issuer.bytes).sum();
        let ops: u64 = self.issuers.iter().map(|issuer| issuer.ops).sum();
        let per_second = |amount: u64, span: Duration| {
            if span.as_nanos() == 0 { 0.0 } else { amount as f64 / span.as_secs_f64() }
        };
        let started = self.started;
        let wall = |issuer: &IssuerRecord| match issuer.last_complete {
            Some(last) => last.saturating_since(started),
            None => Duration::ZERO,
        };
        let longest_wall = self.issuers.iter().map(wall).max().unwrap_or(Duration::ZERO);
        let cpu_total: Option<u64> =
            self.issuers.iter().map(|issuer| issuer.cpu_ns.map(|(user, sys)| user + sys)).sum();
        let cpu_utilization_percent = cpu_total
            .filter(|_| longest_wall.as_nanos() > 0)
            .map(|cpu| 100.0 * cpu as f64 / longest_wall.as_nanos() as f64);
        let cpu_utilization_percent = cpu_utilization_percent.or_else(|| {
            let (user, sys) = self.process_cpu_ns?;
            (duration.as_nanos() > 0)
                .then(|| 100.0 * (user + sys) as f64 / duration.as_nanos() as f64)
        });
        let stonewall = self.stonewall;
        let series = self.series.finish(self.ended);
        let mut errors = IoErrors { first: self.first_error.clone(), ..IoErrors::default() };
        for issuer in &self.issuers {
            errors.add(&issuer.errors);
        }
        Phase {
            name: self.name.clone(),
            duration_ns: duration.as_nanos(),
            bytes,
            ops,
            throughput_bytes_per_s: per_second(bytes, duration),
            iops: per_second(ops, duration),
            latency_ns,
            latency_method,
            cpu_utilization_percent,
            cpu_user_ns: self.process_cpu_ns.map(|(user, _)| user),
            cpu_sys_ns: self.process_cpu_ns.map(|(_, sys)| sys),
            issuers: self
                .issuers
                .iter_mut()
                .map(|issuer| {
                    let throughput = match (stonewall, issuer.bytes_at_stonewall) {
                        (Some(at), Some(bytes)) => per_second(bytes, at.saturating_since(started)),
                        _ => {
                            let active = match (issuer.first_submit, issuer.last_complete) {
                                (Some(first), Some(last)) => last.saturating_since(first),
                                _ => Duration::ZERO,
                            };
                            per_second(issuer.bytes, active)
                        }
                    };
                    let values = issuer.latency.percentiles(&[50.0, 99.0]);
                    let fio = issuer.fio.clone().map(|mut job| {
                        let end = issuer.last_complete.unwrap_or(started).max(started);
                        let (usr, sys) = issuer.cpu_ns.unwrap_or((0, 0));
                        job.finish(end.as_nanos(), usr, sys);
                        job
                    });
                    IssuerSummary {
                        name: issuer.name.clone(),
                        bytes: issuer.bytes,
                        ops: issuer.ops,
                        throughput_bytes_per_s: throughput,
                        latency_ns: IssuerLatency {
                            p50: values[0],
                            p99: values[1],
                            max: issuer.latency.max_ns,
                        },
                        cpu_user_ns: issuer.cpu_ns.map(|(user, _)| user),
                        cpu_sys_ns: issuer.cpu_ns.map(|(_, sys)| sys),
                        errors: issuer.errors.clone(),
                        fio,
                    }
                })
                .collect(),
            counters: self.counters.clone(),
            stonewall_ns: stonewall.map(|at| at.saturating_since(started).as_nanos()),
            queue_stats: None,
            errors,
            directions: FioDirection::ALL
                .iter()
                .zip(&self.directions)
                .filter_map(|(direction, slot)| slot.as_ref().map(|slot| (direction, slot)))
                .map(|(direction, (bytes, ops, latency))| {
                    let summary = DirectionSummary {
                        bytes: *bytes,
                        ops: *ops,
                        throughput_bytes_per_s: per_second(*bytes, duration),
                        iops: per_second(*ops, duration),
                        latency_ns: latency.summary(),
                    };
                    (direction.name().to_owned(), summary)
                })
                .collect(),
            series: Some(series),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Proves the histogram's precision on a known sample: 1..=10000 µs gives percentiles
    // within 0.1 % at three digits and 1 % at two, an exact mean and an exact maximum, and the
    // report says which method.
    #[test]
    fn percentiles_hold_their_stated_precision() {
        for (digits, tolerance) in [(PHASE_DIGITS, 0.001), (ISSUER_DIGITS, 0.01)] {
            let mut recorder = LatencyRecorder::new(digits);
            for micros in (1..=10_000u64).rev() {
                recorder.record(Duration::from_micros(micros));
            }
            let summary = recorder.summary();
            for (value, exact) in [(summary.p50, 5_000_000.0), (summary.p99, 9_900_000.0)] {
                let error = (value as f64 / exact - 1.0).abs();
                assert!(error <= tolerance, "{digits} digits: {value} for {exact}");
            }
            assert_eq!(summary.mean, 5_000_500, "the mean is exact");
            assert_eq!(summary.max, 10_000_000, "the maximum is exact");
            assert_eq!(recorder.method(), LatencyMethod::Histogram { significant_digits: digits });
        }
    }

    // Proves merging keeps every sample.
    #[test]
    fn merging_keeps_every_sample() {
        let mut a = LatencyRecorder::new(PHASE_DIGITS);
        let mut b = LatencyRecorder::new(ISSUER_DIGITS);
        a.record(Duration::from_nanos(10));
        b.record(Duration::from_nanos(30));
        b.record(Duration::from_nanos(20));
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.percentiles(&[50.0]), [20]);
        assert_eq!(a.summary().max, 30);
    }

    // Proves the phase's histogram merged from its directions' at the end is exactly the one
    // that records every operation as it completes: the same count, mean, maximum and value at
    // every percentile, for reads, writes and undirected operations with overlapping
    // latencies (a merge that moved a sample by one bucket would change some percentile).
    #[test]
    fn the_merged_phase_histogram_equals_one_recorded_directly() {
        let start = Instant::ZERO;
        let mut phase = PhaseRecorder::new("mixed", start, vec!["a".into(), "b".into()]);
        let mut direct = LatencyRecorder::new(PHASE_DIGITS);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for io in 0..20_000u64 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let latency_ns = 1 + (state >> 33) % (1 << (8 + io % 24));
            let submitted = Instant::from_nanos(io * 1000);
            let completed = Instant::from_nanos(io * 1000 + latency_ns);
            let issuer = (io % 2) as usize;
            match io % 3 {
                0 => phase.record(issuer, 4096, submitted, completed),
                kind => {
                    let direction =
                        if kind == 1 { FioDirection::Read } else { FioDirection::Write };
                    phase.record_submit(issuer, io, direction, 0, submitted);
                    phase.record_io(issuer, io, 4096, submitted, completed);
                }
            }
            direct.record(Duration::from_nanos(latency_ns));
        }
        let percentiles: Vec<f64> = (1..=1000).map(|p| f64::from(p) / 10.0).collect();
        let merged = phase.phase_latency();
        assert_eq!(merged.count(), direct.count());
        assert_eq!(merged.percentiles(&percentiles), direct.percentiles(&percentiles));
        assert_eq!(phase.finish().latency_ns, direct.summary());
    }

    // Proves the memory bound (issue 14: a raw buffer of up to 32 MiB per job): a phase of
    // 4096 issuers that each recorded latencies from 1 µs to an hour keeps its histograms,
    // its series included, in well under 1 GiB — under 256 MiB.
    #[test]
    fn a_phase_of_4096_issuers_stays_small() {
        let names = (0..4096).map(|index| format!("job/{index}")).collect();
        let mut phase = PhaseRecorder::new("many", Instant::ZERO, names);
        for issuer in 0..4096 {
            for exponent in 0..12u32 {
                let latency = Instant::from_nanos(1_000 * 4u64.pow(exponent));
                phase.record(issuer, 4096, Instant::ZERO, latency);
            }
        }
        let bytes: usize = phase.issuers.iter().map(|issuer| issuer.latency.memory_bytes()).sum();
        let total = bytes + phase.undirected.memory_bytes() + phase.series.memory_bytes();
        assert!(total < 256 << 20, "{} MiB", total >> 20);
        assert_eq!(phase.finish().ops, 4096 * 12);
    }

    // Proves a phase adds up its issuers and measures each over its own active time.
    #[test]
    fn a_phase_adds_up_its_issuers() {
        let start = Instant::ZERO;
        let mut phase = PhaseRecorder::new("read", start, vec!["a".into(), "b".into()]);
        phase.record(0, 4096, start, Instant::from_millis(1));
        phase.record(1, 8192, Instant::from_millis(1), Instant::from_millis(3));
        let done = phase.finish();
        assert_eq!((done.bytes, done.ops, done.duration_ns), (12288, 2, 3_000_000));
        assert!((done.throughput_bytes_per_s - 4_096_000.0).abs() < 1e-6);
        assert!((done.issuers[1].throughput_bytes_per_s - 4_096_000.0).abs() < 1e-6);
        assert_eq!(done.issuers[0].latency_ns.max, 1_000_000);
    }

    // Proves a live phase's recorder: latencies are in the phase's histogram (the report says
    // so), and the process's CPU over the phase's duration is its
    // utilisation when no issuer has its own figure.
    #[test]
    fn histogram_only_phases_and_process_cpu() {
        let start = Instant::ZERO;
        let mut phase = PhaseRecorder::new("randread", start, vec!["a".into(), "b".into()]);
        for i in 1..=1000u64 {
            let done = Instant::from_nanos(i * 1000);
            phase.record((i % 2) as usize, 4096, Instant::from_nanos(i * 1000 - 500 - i), done);
        }
        phase.record_process_cpu(250_000, 250_000);
        let finished = phase.finish();
        assert_eq!(finished.latency_method, LatencyMethod::Histogram { significant_digits: 3 });
        assert_eq!(finished.ops, 1000);
        let p50 = finished.latency_ns.p50 as f64;
        assert!((p50 - 1000.0).abs() / 1000.0 < 0.01, "p50 {p50}");
        assert_eq!((finished.cpu_user_ns, finished.cpu_sys_ns), (Some(250_000), Some(250_000)));
        // 0.5 ms of CPU over the phase (from 0 to the last completion at 1 ms).
        let cpu = finished.cpu_utilization_percent.unwrap();
        assert!((cpu - 50.0).abs() < 0.1, "{cpu}");
    }

    /// Latencies shaped like a run's: mostly within a decade or two, with outliers up to and
    /// past the histogram's top (which it clamps), and runs of equal values.
    fn latencies() -> impl Strategy<Value = Vec<u64>> {
        let one = prop_oneof![
            8 => 1u64..20_000_000,
            1 => 0u64..4,
            1 => (HIGHEST_TRACKABLE_NS - 8)..(HIGHEST_TRACKABLE_NS * 4),
            1 => Just(5_000_000u64),
            1 => 0u64..=u64::MAX / 2,
        ];
        proptest::collection::vec(one, 0..(BUFFERED_SAMPLES * 2 + 40))
    }

    proptest! {
        // Proves a buffered recorder (a series' interval) answers every percentile exactly as
        // hdrhistogram's `value_at_percentile` on the same samples does (capped at the exact
        // maximum, as `percentiles` always is), below and above the buffer's size (where it
        // moves to the histogram) and after a reset, for percentiles at 0, 100 and the
        // float-rounded ranks in between; and that its maximum is exact.
        #[test]
        fn buffered_percentiles_are_the_histograms(
            first in latencies(),
            second in latencies(),
            percentiles in proptest::collection::vec(
                prop_oneof![Just(0.0), Just(100.0), Just(50.0), Just(99.9), 0.0f64..=100.0],
                1..8,
            ),
        ) {
            let digits = crate::series::SERIES_DIGITS;
            let mut buffered = BufferedLatency::new(digits);
            for samples in [&first, &second] {
                buffered.reset();
                let mut reference =
                    Histogram::<u64>::new_with_bounds(1, HIGHEST_TRACKABLE_NS, digits).unwrap();
                for &nanos in samples.iter() {
                    buffered.record(Duration::from_nanos(nanos));
                    reference.saturating_record(nanos.max(1));
                }
                let max = samples.iter().copied().max().unwrap_or(0);
                let expected: Vec<u64> = if samples.is_empty() {
                    vec![0; percentiles.len()]
                } else {
                    percentiles.iter().map(|&p| reference.value_at_percentile(p).min(max)).collect()
                };
                prop_assert_eq!(buffered.percentiles(&percentiles), expected);
                prop_assert_eq!(buffered.max_ns(), max);
            }
        }
    }
}
