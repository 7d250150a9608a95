//! Latency recorders: exact while the samples fit in a bounded buffer, an HDR histogram after.
//!
//! The simulator must not grow with the amount of simulated I/O, yet exact percentiles need
//! every sample. A [`LatencyRecorder`] keeps raw samples up to a bound ([`EXACT_SAMPLE_LIMIT`]
//! per recorder, 32 MiB) and then folds them into an HDR histogram with three significant
//! digits; the summary says which ([`LatencyMethod`]).

use elevator_core::{Duration, Instant};
use hdrhistogram::Histogram;

use crate::model::{IoErrors, IssuerLatency, IssuerSummary, LatencyMethod, LatencySummary, Phase};

/// Raw samples one recorder keeps before switching to a histogram.
pub const EXACT_SAMPLE_LIMIT: usize = 4 << 20;
/// Decimal digits the fallback histogram keeps.
pub const HISTOGRAM_DIGITS: u8 = 3;

/// Latency samples in nanoseconds.
#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    exact: Vec<u64>,
    histogram: Option<Histogram<u64>>,
    limit: usize,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Default for LatencyRecorder {
    fn default() -> LatencyRecorder {
        LatencyRecorder::with_limit(EXACT_SAMPLE_LIMIT)
    }
}

fn new_histogram() -> Histogram<u64> {
    // 1 ns to about 73 minutes at 3 digits: every latency a run can produce within its time
    // bound; longer ones saturate at the top and still count.
    Histogram::new_with_bounds(1, 1 << 42, HISTOGRAM_DIGITS).expect("valid histogram bounds")
}

/// The nearest-rank index of percentile `p` among `count` sorted samples.
fn nearest_rank(count: usize, p: f64) -> usize {
    let rank = (p / 100.0 * count as f64).ceil() as usize;
    rank.clamp(1, count) - 1
}

impl LatencyRecorder {
    /// A recorder that keeps up to `limit` raw samples.
    pub fn with_limit(limit: usize) -> LatencyRecorder {
        LatencyRecorder {
            exact: Vec::new(),
            histogram: None,
            limit,
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }

    /// Adds one sample.
    pub fn record(&mut self, latency: Duration) {
        let nanos = latency.as_nanos();
        self.count += 1;
        self.sum_ns += u128::from(nanos);
        self.max_ns = self.max_ns.max(nanos);
        match &mut self.histogram {
            Some(histogram) => histogram.saturating_record(nanos.max(1)),
            None if self.exact.len() < self.limit => self.exact.push(nanos),
            None => {
                let mut histogram = new_histogram();
                for &sample in &self.exact {
                    histogram.saturating_record(sample.max(1));
                }
                histogram.saturating_record(nanos.max(1));
                self.exact = Vec::new();
                self.histogram = Some(histogram);
            }
        }
    }

    /// How many samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Folds `other`'s samples into this one.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        if self.histogram.is_none()
            && other.histogram.is_none()
            && self.exact.len() + other.exact.len() <= self.limit
        {
            self.exact.extend_from_slice(&other.exact);
        } else {
            let histogram = self.histogram.get_or_insert_with(new_histogram);
            for &sample in self.exact.iter().chain(&other.exact) {
                histogram.saturating_record(sample.max(1));
            }
            if let Some(theirs) = &other.histogram {
                histogram.add(theirs).expect("histograms with equal bounds");
            }
            self.exact = Vec::new();
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// How the percentiles will be computed.
    pub fn method(&self) -> LatencyMethod {
        match self.histogram {
            Some(_) => LatencyMethod::Histogram { significant_digits: HISTOGRAM_DIGITS },
            None => LatencyMethod::ExactNearestRank,
        }
    }

    /// The values at each percentile in `percentiles` (0 < p <= 100), in order. Sorts the raw
    /// samples in place (recording more afterwards is fine).
    pub fn percentiles(&mut self, percentiles: &[f64]) -> Vec<u64> {
        if self.count == 0 {
            return vec![0; percentiles.len()];
        }
        match &self.histogram {
            Some(histogram) => percentiles
                .iter()
                .map(|&p| histogram.value_at_percentile(p).min(self.max_ns))
                .collect(),
            None => {
                // Sorting in place keeps the peak memory at one copy of the samples.
                self.exact.sort_unstable();
                let sorted = &self.exact;
                percentiles.iter().map(|&p| sorted[nearest_rank(sorted.len(), p)]).collect()
            }
        }
    }

    /// Mean, p50, p90, p99, p99.9 and max.
    pub fn summary(&mut self) -> LatencySummary {
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
}

impl PhaseRecorder {
    /// A phase that starts at `started`, with issuers named `issuer_names` (indexed from 0).
    pub fn new(name: impl Into<String>, started: Instant, issuer_names: Vec<String>) -> Self {
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
                    latency: LatencyRecorder::default(),
                    cpu_ns: None,
                    bytes_at_stonewall: None,
                    errors: IoErrors::default(),
                })
                .collect(),
            stonewall: None,
            counters: Default::default(),
            process_cpu_ns: None,
            first_error: None,
        }
    }

    /// The same recorder keeping every latency in an HDR histogram from the first sample
    /// (3 significant digits), as a live run does: its memory stays fixed however long it runs.
    pub fn histogram_only(mut self) -> Self {
        for issuer in &mut self.issuers {
            issuer.latency = LatencyRecorder::with_limit(0);
        }
        self
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
        let record = &mut self.issuers[issuer];
        record.bytes += bytes;
        record.ops += 1;
        record.first_submit = Some(record.first_submit.map_or(submitted, |t| t.min(submitted)));
        record.last_complete = Some(record.last_complete.map_or(completed, |t| t.max(completed)));
        record.latency.record(completed.saturating_since(submitted));
        self.ended = self.ended.max(completed);
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

    /// The finished phase. Its CPU utilisation is iozone's `-+u` figure: 100 × the issuers'
    /// CPU time over the longest issuer's wall time (so it can exceed 100 with several CPUs);
    /// `None` when no issuer's CPU time was recorded.
    pub fn finish(&mut self) -> Phase {
        let limit = self.issuers.first().map_or(EXACT_SAMPLE_LIMIT, |issuer| issuer.latency.limit);
        let mut all = LatencyRecorder::with_limit(limit);
        for issuer in &self.issuers {
            all.merge(&issuer.latency);
        }
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
            latency_ns: all.summary(),
            latency_method: all.method(),
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
                    }
                })
                .collect(),
            counters: self.counters.clone(),
            stonewall_ns: stonewall.map(|at| at.saturating_since(started).as_nanos()),
            errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves nearest-rank percentiles on a known sample: 1..=100 ns gives p50 = 50, p90 = 90,
    // p99 = 99, p99.9 = 100, mean 50 (50.5 truncated).
    #[test]
    fn exact_percentiles_are_nearest_rank() {
        let mut recorder = LatencyRecorder::default();
        for nanos in (1..=100).rev() {
            recorder.record(Duration::from_nanos(nanos));
        }
        let summary = recorder.summary();
        assert_eq!(
            (summary.p50, summary.p90, summary.p99, summary.p99_9, summary.max),
            (50, 90, 99, 100, 100)
        );
        assert_eq!(summary.mean, 50);
        assert_eq!(recorder.method(), LatencyMethod::ExactNearestRank);
    }

    // Proves the bound: past the limit the recorder switches to a histogram, says so, and its
    // percentiles stay within the stated precision.
    #[test]
    fn past_the_limit_a_histogram_takes_over() {
        let mut recorder = LatencyRecorder::with_limit(1000);
        for nanos in 1..=10_000u64 {
            recorder.record(Duration::from_nanos(nanos * 1000));
        }
        assert_eq!(recorder.method(), LatencyMethod::Histogram { significant_digits: 3 });
        let p50 = recorder.summary().p50 as f64;
        assert!((p50 / 5_000_000.0 - 1.0).abs() < 0.001, "{p50}");
        assert_eq!(recorder.summary().max, 10_000_000);
    }

    // Proves merging keeps exactness when it can and every sample either way.
    #[test]
    fn merging_keeps_every_sample() {
        let mut a = LatencyRecorder::default();
        let mut b = LatencyRecorder::default();
        a.record(Duration::from_nanos(10));
        b.record(Duration::from_nanos(30));
        b.record(Duration::from_nanos(20));
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.percentiles(&[50.0]), [20]);
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

    // Proves a live phase's recorder: latencies go to the histogram from the first sample
    // (the report says so), and the process's CPU over the phase's duration is its
    // utilisation when no issuer has its own figure.
    #[test]
    fn histogram_only_phases_and_process_cpu() {
        let start = Instant::ZERO;
        let mut phase =
            PhaseRecorder::new("randread", start, vec!["a".into(), "b".into()]).histogram_only();
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
}
