//! The report model, schema `elevator.report/1` (DESIGN §5).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The schema this crate writes. Bumped whenever a field's meaning changes.
pub const SCHEMA: &str = "elevator.report/1";

/// The config key of a study experiment's title (the table heading prints it).
pub const CONFIG_TITLE: &str = "experiment.title";
/// The config key of a study experiment's machine, as the write-ups describe it.
pub const CONFIG_MACHINE: &str = "experiment.machine";
/// The config key of the factor a scaled-down study ran at (absent at full size).
pub const CONFIG_SCALE: &str = "study.scale";
/// `Run::config` key marking the run an experiment's table is relative to (the study's RHEL 3
/// row of the database experiments); its value says what it stands for.
pub const CONFIG_BASELINE: &str = "experiment.baseline";

/// A whole report: one or more runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// What wrote it.
    pub tool: Tool,
    /// The seed every simulated run used (live and kernel runs record it too).
    pub seed: u64,
    /// The runs, in the order they were requested.
    pub runs: Vec<Run>,
}

impl Report {
    /// An empty report for `seed`, written by this version of elevator.
    pub fn new(seed: u64, version: &str) -> Report {
        Report {
            schema: SCHEMA.to_owned(),
            tool: Tool { name: "elevator".to_owned(), version: version.to_owned() },
            seed,
            runs: Vec::new(),
        }
    }
}

/// The tool that wrote a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    /// `elevator`.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// Where a run happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// In the simulator.
    Sim,
    /// Live, our scheduler in front of a real device.
    Live,
    /// The kernel's own scheduler on a real device.
    Kernel,
}

/// One workload under one scheduler on one device (or topology).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Where it ran.
    pub mode: Mode,
    /// The experiment it belongs to (`elevator compare`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<String>,
    /// The device as specified.
    pub device: String,
    /// The workload as specified.
    pub workload: String,
    /// The scheduler as specified.
    pub scheduler: String,
    /// Every resolved parameter (`device.rpm`, `queue.nr_requests`, `scheduler.fifo_batch`,
    /// ...), as text, ordered by name.
    pub config: BTreeMap<String, String>,
    /// Phases in the order they ran.
    pub phases: Vec<Phase>,
    /// What the scheduler did.
    pub scheduler_stats: SchedulerStats,
    /// What the block layer did.
    pub queue_stats: QueueStats,
    /// What the device did.
    pub device_stats: DeviceStats,
    /// What the host's page cache and write-back did (simulated buffered I/O only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub host_stats: BTreeMap<String, u64>,
    /// The run stopped before its workload finished (a signal, a stop request): its figures
    /// cover only what was done. Absent when the run finished.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// Why the run is partial (`interrupted by SIGINT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_reason: Option<String>,
}

/// Operations that failed, per direction (fio's `total_err`, split), and the first failure
/// (fio's `error`). Failed operations count in no throughput, IOPS or latency figure.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoErrors {
    /// Failed reads.
    pub read: u64,
    /// Failed writes.
    pub write: u64,
    /// Failed flushes, syncs and discards.
    pub other: u64,
    /// The first failure: what, where and the system's error (`read of 4096 bytes at byte
    /// 8192: Input/output error (os error 5)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

impl IoErrors {
    /// No failure.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// Every failure.
    pub fn total(&self) -> u64 {
        self.read + self.write + self.other
    }

    /// Adds `other`'s counts; keeps this one's first failure if it has one.
    pub fn add(&mut self, other: &IoErrors) {
        self.read += other.read;
        self.write += other.write;
        self.other += other.other;
        if self.first.is_none() {
            self.first.clone_from(&other.first);
        }
    }
}

/// One phase of a workload (iozone's write, re-write, read, re-read; a fio job's one phase).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Its name.
    pub name: String,
    /// From the phase's start to its last completion.
    pub duration_ns: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Operations completed.
    pub ops: u64,
    /// `bytes` over `duration_ns`.
    pub throughput_bytes_per_s: f64,
    /// `ops` over `duration_ns`.
    pub iops: f64,
    /// Submission-to-completion latency of every operation.
    pub latency_ns: LatencySummary,
    /// How the percentiles were computed.
    pub latency_method: LatencyMethod,
    /// CPU time over wall time, in percent, where the mode measures or models it (`null`
    /// where it does not).
    pub cpu_utilization_percent: Option<f64>,
    /// User CPU time of the whole process over the phase, where it was measured as one
    /// (live runs, whose issuers share a thread); per-issuer figures are in `issuers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_user_ns: Option<u64>,
    /// System CPU time of the whole process over the phase, as `cpu_user_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_sys_ns: Option<u64>,
    /// Per issuer (process, job clone, iozone child).
    pub issuers: Vec<IssuerSummary>,
    /// Counters the workload reports (an OLTP load's `transactions`, hdparm's timed loop),
    /// summed over the issuers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
    /// When the phase was stonewalled (iozone), the time from its start to the first issuer
    /// finishing: issuers' throughput counts only what they did until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall_ns: Option<u64>,
    /// Operations that failed, over every issuer (absent when none did).
    #[serde(default, skip_serializing_if = "IoErrors::is_empty")]
    pub errors: IoErrors,
    /// What the block layer did during this phase alone (the run's `queue_stats` cover the
    /// whole run): simulated runs, which see every queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_stats: Option<QueueStats>,
    /// The phase's operations split by direction (`read`, `write`, `trim`, `sync`; only those
    /// that had operations), as fio splits its figures: modes that record directions
    /// (simulated runs) fill it, others leave it empty (absent).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub directions: BTreeMap<String, DirectionSummary>,
}

/// One direction of a phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionSummary {
    /// Bytes moved this way.
    pub bytes: u64,
    /// Operations completed this way.
    pub ops: u64,
    /// `bytes` over the phase's duration.
    pub throughput_bytes_per_s: f64,
    /// `ops` over the phase's duration.
    pub iops: f64,
    /// Submission-to-completion latency of these operations (percentiles from a histogram
    /// at the phase's precision, as the phase's `latency_ns`).
    pub latency_ns: LatencySummary,
}

/// Latency statistics in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Arithmetic mean, rounded to the nanosecond.
    pub mean: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p99_9: u64,
    /// Largest.
    pub max: u64,
}

/// How percentiles were computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LatencyMethod {
    /// Over every sample, nearest rank (the smallest value with at least p % of samples at
    /// or below it). Reports before latencies became histograms only (issue 14) used it; it
    /// is kept so that they still read.
    ExactNearestRank,
    /// From an HDR histogram keeping `significant_digits` decimal digits of every value
    /// (relative error below 10^-digits).
    Histogram {
        /// Decimal digits of precision.
        significant_digits: u8,
    },
}

/// One issuer's share of a phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IssuerSummary {
    /// Its name (`job/0`, `child 3`).
    pub name: String,
    /// Bytes it moved.
    pub bytes: u64,
    /// Operations it completed.
    pub ops: u64,
    /// Its bytes over its own active time (first submission to last completion) — or, in a
    /// stonewalled phase, its bytes until the stonewall over the time until then: the figure
    /// iozone's "Children see throughput" adds up.
    pub throughput_bytes_per_s: f64,
    /// Its latencies.
    pub latency_ns: IssuerLatency,
    /// User CPU time it used in the phase, where the mode models or measures it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_user_ns: Option<u64>,
    /// System CPU time it used in the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_sys_ns: Option<u64>,
    /// Its operations that failed (absent when none did).
    #[serde(default, skip_serializing_if = "IoErrors::is_empty")]
    pub errors: IoErrors,
    /// Its figures as fio keeps them for a job, for the fio output formats
    /// ([`crate::fio`]); recorded by modes that report operations with their direction
    /// (simulated runs). Not part of the JSON report.
    #[serde(skip)]
    pub fio: Option<Box<crate::fio::JobStats>>,
}

/// An issuer's latency figures in nanoseconds: percentiles from its own histogram, at two
/// significant digits (`metrics::ISSUER_DIGITS`, under 1 % error); the maximum is exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuerLatency {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

/// What the scheduler did over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerStats {
    /// Requests it handed out.
    pub dispatched: u64,
    /// Bios merged into queued requests plus requests fused with a neighbour.
    pub merged: u64,
    /// Time the device sat idle with requests queued because the scheduler chose to wait.
    pub idle_ns: u64,
    /// The scheduler's own counters, by name.
    pub counters: BTreeMap<String, u64>,
}

/// What the block layer did over a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueStats {
    /// Bios accepted.
    pub bios: u64,
    /// Bios appended to a queued request.
    pub back_merges: u64,
    /// Bios prepended to a queued request.
    pub front_merges: u64,
    /// Requests fused into a neighbour.
    pub requests_fused: u64,
    /// Requests started on the device.
    pub requests_issued: u64,
    /// Submissions refused because the request pool was full.
    pub blocked: u64,
    /// Requests held behind an overlapping earlier request.
    pub held: u64,
    /// Times the queue was plugged.
    pub plugs: u64,
    /// Head movement the issued order asked for, in sectors.
    pub seek_distance_sectors: u64,
    /// Mean head movement per issued request, in sectors.
    #[serde(default)]
    pub seek_distance_mean_sectors: f64,
    /// The longest single head movement, in sectors.
    #[serde(default)]
    pub seek_distance_max_sectors: u64,
    /// Mean number of requests the schedulers held (time-weighted, summed over queues): how
    /// much the scheduler had to choose from.
    #[serde(default)]
    pub sched_queue_mean: f64,
    /// Mean number of requests at the devices (time-weighted, summed over queues).
    #[serde(default)]
    pub device_queue_mean: f64,
    /// The longest any request waited in the block layer, from creation to issue.
    #[serde(default)]
    pub max_wait_ns: u64,
    /// Time processes spent blocked waiting for a free request, summed over processes.
    #[serde(default)]
    pub blocked_ns: u64,
    /// Time the device sat idle with requests queued because the scheduler chose to wait
    /// (anticipation, cfq's and bfq's idling), summed over queues.
    #[serde(default)]
    pub idle_ns: u64,
}

impl SchedulerStats {
    /// Adds what one block queue's scheduler did (`stats` from `BlockQueue::stats`, the
    /// scheduler's own `counters`).
    pub fn add_queue(
        &mut self,
        stats: &elevator_core::QueueStats,
        counters: &[elevator_core::Counter],
    ) {
        self.dispatched += stats.dispatched;
        self.merged += stats.back_merges + stats.front_merges + stats.requests_fused;
        self.idle_ns += stats.idle_ns;
        for counter in counters {
            *self.counters.entry(counter.name.to_owned()).or_default() += counter.value;
        }
    }
}

impl QueueStats {
    /// Adds what one block queue did.
    pub fn add_queue(&mut self, stats: &elevator_core::QueueStats) {
        self.bios += stats.bios;
        self.back_merges += stats.back_merges;
        self.front_merges += stats.front_merges;
        self.requests_fused += stats.requests_fused;
        self.requests_issued += stats.issued;
        self.blocked += stats.blocked;
        self.held += stats.held;
        self.plugs += stats.plugs;
        self.seek_distance_sectors += stats.seek_distance_sectors;
        self.seek_distance_mean_sectors = if self.requests_issued == 0 {
            0.0
        } else {
            self.seek_distance_sectors as f64 / self.requests_issued as f64
        };
        self.seek_distance_max_sectors =
            self.seek_distance_max_sectors.max(stats.seek_distance_max_sectors);
        self.sched_queue_mean += stats.sched_queue_mean();
        self.device_queue_mean += stats.device_queue_mean();
        self.max_wait_ns = self.max_wait_ns.max(stats.max_wait_ns);
        self.blocked_ns += stats.blocked_ns;
        self.idle_ns += stats.idle_ns;
    }
}

/// What the device did over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceStats {
    /// Commands it finished.
    pub requests: u64,
    /// Time with at least one command inside.
    pub busy_ns: u64,
    /// Head movement in sectors (mechanical devices).
    pub seek_distance_sectors: u64,
    /// Model-specific counters (cache hits, destages...), by name.
    pub extra: BTreeMap<String, u64>,
}
