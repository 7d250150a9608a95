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
    /// Where the simulated host's CPU went: cores, threads, locks and each request's path
    /// (`blk-mq-host.md` §6.4). Absent where the mode does not model cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<HostCpu>,
    /// The requests as the devices received them, sampled, for the picture of what the
    /// elevator did (sector over time, a colour per process). Recorded when asked for (an
    /// HTML report); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatches: Option<DispatchSamples>,
}

/// Dispatched requests, one sample in every `every`, in dispatch order: parallel vectors.
/// When the samples reach their cap the recorder keeps every other one and doubles `every`,
/// so a run of any length keeps an even, deterministic sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DispatchSamples {
    /// One dispatched request kept in this many.
    pub every: u64,
    /// When each was dispatched, ns since the run started.
    pub time_ns: Vec<u64>,
    /// Its first sector (512-byte units).
    pub sector: Vec<u64>,
    /// Its size in sectors.
    pub sectors: Vec<u32>,
    /// The process whose bio created it (the simulator's process id).
    pub process: Vec<u32>,
    /// The device it went to (index in the run's devices).
    pub device: Vec<u32>,
    /// Whether it wrote.
    pub write: Vec<bool>,
}

impl DispatchSamples {
    /// An empty sample set that will hold at most `cap` samples (at least 2).
    pub fn with_cap(cap: usize) -> DispatchSamples {
        let cap = cap.max(2);
        DispatchSamples {
            every: 1,
            time_ns: Vec::with_capacity(cap),
            sector: Vec::with_capacity(cap),
            sectors: Vec::with_capacity(cap),
            process: Vec::with_capacity(cap),
            device: Vec::with_capacity(cap),
            write: Vec::with_capacity(cap),
        }
    }

    /// How many samples it holds.
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }

    /// Offers the `index`-th dispatched request of the run (from 0); kept when `index` is a
    /// multiple of `every`. `cap` is the most samples held.
    #[allow(clippy::too_many_arguments, reason = "one sample's fields, as the vectors hold them")]
    pub fn offer(
        &mut self,
        cap: usize,
        index: u64,
        time_ns: u64,
        sector: u64,
        sectors: u32,
        process: u32,
        device: u32,
        write: bool,
    ) {
        if index % self.every != 0 {
            return;
        }
        if self.len() >= cap.max(2) {
            self.halve();
            if index % self.every != 0 {
                return;
            }
        }
        self.time_ns.push(time_ns);
        self.sector.push(sector);
        self.sectors.push(sectors);
        self.process.push(process);
        self.device.push(device);
        self.write.push(write);
    }

    /// Keeps every other sample (those at multiples of the doubled `every`).
    fn halve(&mut self) {
        fn keep_even<T: Copy>(values: &mut Vec<T>) {
            let mut index = 0;
            values.retain(|_| {
                let keep = index % 2 == 0;
                index += 1;
                keep
            });
        }
        keep_even(&mut self.time_ns);
        keep_even(&mut self.sector);
        keep_even(&mut self.sectors);
        keep_even(&mut self.process);
        keep_even(&mut self.device);
        keep_even(&mut self.write);
        self.every *= 2;
    }
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
    /// How the phase evolved: per job and direction, figures for each interval of run time
    /// from the phase's start (issue 19; absent in reports made before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Series>,
}

/// A phase's per-interval figures ([`crate::series`]): every line has one entry per interval,
/// from the phase's start to its end, intervals with nothing completed included (as zeros).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The interval's length (`--interval`): simulated time in the simulator, wall time live.
    pub interval_ns: u64,
    /// Decimal digits of precision of each interval's latency histogram (relative error below
    /// 10^-digits; the maximum is exact).
    pub significant_digits: u8,
    /// One line per job and direction: jobs in the order of their first issuer, directions
    /// in fio's order (`read`, `write`, `trim`, `sync`, then `unknown` for operations recorded
    /// without one).
    pub lines: Vec<SeriesLine>,
}

/// One job's operations in one direction, interval by interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesLine {
    /// The job: an issuer's name without its clone number (`seqread` for `seqread/0` and
    /// `seqread/1`), or the issuer's whole name when it has none.
    pub job: String,
    /// `read`, `write`, `trim`, `sync` or `unknown`.
    pub direction: String,
    /// Consecutive intervals, the first starting at the phase's start.
    pub intervals: Vec<SeriesInterval>,
}

/// What completed in one interval (an operation counts in the interval its completion falls
/// in; intervals are closed at their end: `(start, start + duration]`, the first also holding
/// completions at the phase's start).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesInterval {
    /// From the phase's start to the interval's start.
    pub start_ns: u64,
    /// Its length: the series' interval, or less for the last one (the phase ended inside).
    pub duration_ns: u64,
    /// Bytes completed in it.
    pub bytes: u64,
    /// Operations completed in it.
    pub ops: u64,
    /// `bytes` over `duration_ns` (0 when the length is 0).
    pub throughput_bytes_per_s: f64,
    /// `ops` over `duration_ns` (0 when the length is 0).
    pub iops: f64,
    /// Latencies of the operations completed in it (0 when none did).
    pub latency_ns: SeriesLatency,
}

/// An interval's latencies in nanoseconds: percentiles from a histogram of the series'
/// `significant_digits`, the maximum exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesLatency {
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
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

/// Where a simulated blk-mq host spent its CPU over a run (`blk-mq-host.md` §6.4): per core,
/// per thread, per scheduler lock, and per request by path step. The simulator fills it when it
/// models cores (issue 18); other modes leave it absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCpu {
    /// Per core, by index.
    pub cores: Vec<CoreCpu>,
    /// Per simulated thread, application and kernel (kworker, IRQ, io-wq, SQPOLL).
    pub threads: Vec<ThreadCpu>,
    /// Per scheduler lock (one per device and scheduler instance that has one).
    pub locks: Vec<LockCpu>,
    /// Time per request by path step, in nanoseconds, summed over the `requests` requests. The
    /// simulator chooses the keys; reports show those of [`PATH_STEPS`] first, in that order,
    /// then any other in key order.
    pub path_ns: BTreeMap<String, u64>,
    /// Requests the `path_ns` sums cover.
    pub requests: u64,
    /// Wall (simulated) time the utilisations are over, in nanoseconds.
    pub window_ns: u64,
}

/// The path steps of one request (`blk-mq-host.md` §6.4, "per request, summing to its
/// latency"), in the order a request meets them, which is the order reports show them in:
///
/// * `user` — the application preparing the I/O (user CPU before the system call);
/// * `submit` — system call or SQPOLL, io_uring, bio and request allocation, plugging, insert;
/// * `lock_wait` — spinning for a scheduler's (or SQ) lock (§3);
/// * `core_wait` — runnable, waiting for its core (kblockd punt, a busy core);
/// * `sched_queue` — held in the scheduler before dispatch;
/// * `device` — from the driver's doorbell to the device's completion (tag, SQ, service);
/// * `completion` — interrupt or poll, IPI and softirq, end of request;
/// * `task_work` — io_uring task_work and CQE wait until the application reaps it.
///
/// §6.4 names a few finer steps (plug wait, dispatch, reap); a simulator that keeps them
/// separately reports them under their own keys, which are shown after these.
pub const PATH_STEPS: &[&str] = &[
    "user",
    "submit",
    "lock_wait",
    "core_wait",
    "sched_queue",
    "device",
    "completion",
    "task_work",
];

/// One core's time over the window (`blk-mq-host.md` §6.4, "per core").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CoreCpu {
    /// Its index (CPU number).
    pub core: u32,
    /// User time, in nanoseconds.
    pub user_ns: u64,
    /// System time (outside interrupts), in nanoseconds, spinning excluded.
    pub sys_ns: u64,
    /// Hard interrupt time, in nanoseconds.
    pub irq_ns: u64,
    /// Softirq time, in nanoseconds.
    pub softirq_ns: u64,
    /// Time spinning for a lock, in nanoseconds (Linux counts it as system time).
    pub spin_ns: u64,
    /// Share of the window the core was not idle, in percent (0–100).
    pub busy_percent: f64,
    /// Mean number of runnable threads on it (time-weighted, the running one included).
    pub run_queue_mean: f64,
}

/// One simulated thread's time over the window (`blk-mq-host.md` §6.4, "per process/thread").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadCpu {
    /// Its name (`job/0`, `kworker/1:1H`, `iou-sqp-12`).
    pub name: String,
    /// What it is: `application`, `kworker`, `irq`, `io-wq`, `sqpoll`, ...
    pub kind: String,
    /// The core it ran on (the last one, if it moved).
    pub core: u32,
    /// User time, in nanoseconds.
    pub user_ns: u64,
    /// System time, in nanoseconds, spinning excluded.
    pub sys_ns: u64,
    /// Hard interrupt time charged to it, in nanoseconds.
    pub irq_ns: u64,
    /// Softirq time charged to it, in nanoseconds.
    pub softirq_ns: u64,
    /// Time spinning for a lock, in nanoseconds.
    pub spin_ns: u64,
    /// Time runnable but waiting for its core, in nanoseconds.
    pub core_wait_ns: u64,
    /// CPU time other contexts spent on its I/O (kworker dispatch, IRQ, IPI and softirq, io-wq,
    /// SQPOLL), in nanoseconds: what it caused beyond what Linux charges it (§6.4).
    pub attributed_ns: u64,
    /// Its own CPU time (user + sys + irq + softirq + spin) over the window, in percent of one
    /// core (0–100).
    pub cpu_percent: f64,
}

/// One scheduler lock over the window (`blk-mq-host.md` §3, §6.4 "per lock").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LockCpu {
    /// Its name (`mq-deadline nvme0n1`, `bfq sda`).
    pub name: String,
    /// Times it was taken.
    pub acquisitions: u64,
    /// Acquisitions that found it held and waited.
    pub contended: u64,
    /// Acquisitions that took it from a holder on another core (the cache line moved).
    pub cross_core_handoffs: u64,
    /// Time it was held, summed over acquisitions, in nanoseconds.
    pub hold_ns: u64,
    /// Time spent moving it between cores, summed over hand-offs, in nanoseconds.
    pub handoff_ns: u64,
    /// Mean wait per acquisition (uncontended ones count as 0), in nanoseconds.
    pub wait_mean_ns: f64,
    /// 99th percentile of the wait per acquisition, in nanoseconds.
    pub wait_p99_ns: u64,
}

/// What limits a run, as [`HostCpu::bottleneck`] decides it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bottleneck {
    /// The device (or devices) were busy nearly all the time.
    Device,
    /// A core was busy nearly all the time.
    Core {
        /// Its index.
        core: u32,
    },
    /// A scheduler lock was held or moving between cores nearly all the time.
    Lock {
        /// Its name.
        name: String,
    },
    /// Nothing was saturated (think time, queue depth, a workload that does not push).
    None,
}

/// A lock whose occupancy reaches this share of the window limits the run. A reporting
/// choice, not a kernel constant: a serialising lock cannot be occupied 100 % (there is always
/// a gap between one holder's release and the next one's acquisition), so 90 % already means
/// the lock decides the pace.
pub const LOCK_BOTTLENECK_PERCENT: f64 = 90.0;
/// A core busy at least this share of the window limits the run (a reporting choice).
pub const CORE_BOTTLENECK_PERCENT: f64 = 95.0;
/// A device busy at least this share of the window limits the run (a reporting choice).
pub const DEVICE_BOTTLENECK_PERCENT: f64 = 95.0;

impl LockCpu {
    /// The share of `window_ns` the lock was held or moving between cores, in percent: the
    /// time nobody else could have it.
    pub fn occupancy_percent(&self, window_ns: u64) -> f64 {
        if window_ns == 0 {
            return 0.0;
        }
        self.hold_ns.saturating_add(self.handoff_ns) as f64 / window_ns as f64 * 100.0
    }
}

impl HostCpu {
    /// What limits the run, checked in this order (the thresholds are a reporting choice, see
    /// the constants):
    ///
    /// 1. a lock occupied (held + hand-off) at least [`LOCK_BOTTLENECK_PERCENT`] of the window
    ///    — the most occupied one; a saturated lock also keeps cores busy spinning, so it is
    ///    the cause and is named first;
    /// 2. else a core at least [`CORE_BOTTLENECK_PERCENT`] busy — the busiest, the lowest
    ///    index on a tie;
    /// 3. else the device, if `device_busy_percent` (its busy time over the window) is at
    ///    least [`DEVICE_BOTTLENECK_PERCENT`];
    /// 4. else [`Bottleneck::None`].
    pub fn bottleneck(&self, device_busy_percent: f64) -> Bottleneck {
        let lock = self
            .locks
            .iter()
            .map(|lock| (lock, lock.occupancy_percent(self.window_ns)))
            .filter(|(_, percent)| *percent >= LOCK_BOTTLENECK_PERCENT)
            // The first of equals, so the choice does not depend on float ties' order.
            .fold(None::<(&LockCpu, f64)>, |best, (lock, percent)| match best {
                Some((_, best_percent)) if best_percent >= percent => best,
                _ => Some((lock, percent)),
            });
        if let Some((lock, _)) = lock {
            return Bottleneck::Lock { name: lock.name.clone() };
        }
        let core = self
            .cores
            .iter()
            .filter(|core| core.busy_percent >= CORE_BOTTLENECK_PERCENT)
            .fold(None::<&CoreCpu>, |best, core| match best {
                Some(best) if best.busy_percent >= core.busy_percent => Some(best),
                _ => Some(core),
            });
        if let Some(core) = core {
            return Bottleneck::Core { core: core.core };
        }
        if device_busy_percent >= DEVICE_BOTTLENECK_PERCENT {
            return Bottleneck::Device;
        }
        Bottleneck::None
    }

    /// The `path_ns` keys in report order: [`PATH_STEPS`] that are present, then the others in
    /// key order.
    pub fn path_steps(&self) -> Vec<&str> {
        let known = PATH_STEPS.iter().copied().filter(|step| self.path_ns.contains_key(*step));
        let others =
            self.path_ns.keys().map(String::as_str).filter(|key| !PATH_STEPS.contains(key));
        known.chain(others).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {

    // Proves the dispatch sampler keeps an even sample within its cap whatever the run's
    // length: every sample it holds is at a multiple of `every`, in order, and the sample is
    // the same whether the requests came in one run or were offered one by one.
    #[test]
    fn dispatch_samples_thin_evenly_within_their_cap() {
        let mut samples = DispatchSamples::with_cap(100);
        for index in 0..10_000u64 {
            samples.offer(100, index, index * 10, index, 8, (index % 3) as u32, 0, index % 2 == 1);
        }
        assert!(samples.len() <= 100 && samples.len() > 50, "{}", samples.len());
        assert_eq!(samples.every, 128);
        for (position, &sector) in samples.sector.iter().enumerate() {
            assert_eq!(sector, position as u64 * samples.every);
            assert_eq!(samples.time_ns[position], sector * 10);
            assert_eq!(samples.write[position], sector % 2 == 1);
        }
        let mut small = DispatchSamples::with_cap(100);
        for index in 0..50u64 {
            small.offer(100, index, index, index, 8, 0, 0, false);
        }
        assert_eq!((small.len(), small.every), (50, 1));
    }

    use super::*;

    /// Two cores, a kworker beside the application, one lock, three path steps and one the
    /// simulator added: every kind of figure a renderer has to show.
    pub(crate) fn host_cpu() -> HostCpu {
        HostCpu {
            cores: vec![
                CoreCpu {
                    core: 0,
                    user_ns: 100_000_000,
                    sys_ns: 600_000_000,
                    irq_ns: 50_000_000,
                    softirq_ns: 20_000_000,
                    spin_ns: 130_000_000,
                    busy_percent: 90.0,
                    run_queue_mean: 1.25,
                },
                CoreCpu { core: 1, busy_percent: 40.0, ..CoreCpu::default() },
            ],
            threads: vec![
                ThreadCpu {
                    name: "job/0".to_owned(),
                    kind: "application".to_owned(),
                    core: 0,
                    user_ns: 100_000_000,
                    sys_ns: 500_000_000,
                    spin_ns: 130_000_000,
                    core_wait_ns: 7_000_000,
                    attributed_ns: 150_000_000,
                    cpu_percent: 73.0,
                    ..ThreadCpu::default()
                },
                ThreadCpu {
                    name: "kworker/0:1H".to_owned(),
                    kind: "kworker".to_owned(),
                    sys_ns: 100_000_000,
                    cpu_percent: 10.0,
                    ..ThreadCpu::default()
                },
            ],
            locks: vec![LockCpu {
                name: "mq-deadline nvme0n1".to_owned(),
                acquisitions: 2_000_000,
                contended: 500_000,
                cross_core_handoffs: 400_000,
                hold_ns: 500_000_000,
                handoff_ns: 100_000_000,
                wait_mean_ns: 250.0,
                wait_p99_ns: 4_100,
            }],
            path_ns: [("device", 60_000_000_000), ("submit", 1_500_000_000), ("zz_extra", 10)]
                .into_iter()
                .map(|(step, nanos)| (step.to_owned(), nanos))
                .collect(),
            requests: 1_000_000,
            window_ns: 1_000_000_000,
        }
    }

    fn run() -> Run {
        Run {
            mode: Mode::Sim,
            experiment: None,
            device: "d".to_owned(),
            workload: "w".to_owned(),
            scheduler: "mq-deadline".to_owned(),
            config: BTreeMap::new(),
            phases: Vec::new(),
            scheduler_stats: SchedulerStats::default(),
            queue_stats: QueueStats::default(),
            device_stats: DeviceStats::default(),
            host_stats: BTreeMap::new(),
            partial: false,
            partial_reason: None,
            host_cpu: None,
            dispatches: None,
        }
    }

    // Proves every host CPU figure survives a JSON round trip under the `host_cpu` key.
    #[test]
    fn host_cpu_round_trips_through_json() {
        let run = Run { host_cpu: Some(host_cpu()), ..run() };
        let json = serde_json::to_value(&run).unwrap();
        assert_eq!(json["host_cpu"]["locks"][0]["wait_p99_ns"], 4_100);
        let back: Run = serde_json::from_value(json).unwrap();
        assert_eq!(back, run);
    }

    // Proves a run without host CPU figures writes no `host_cpu` key (so earlier reports'
    // JSON is unchanged) and a report without the key still reads.
    #[test]
    fn an_absent_host_cpu_leaves_no_key_and_reads_back() {
        let json = serde_json::to_string(&run()).unwrap();
        assert!(!json.contains("host_cpu"), "{json}");
        let back: Run = serde_json::from_str(&json).unwrap();
        assert_eq!(back.host_cpu, None);
    }

    // Proves the rule's order and thresholds: a saturated lock wins over a saturated core
    // and device, a saturated core over the device, the device alone, and nothing when all are
    // below their thresholds; the lock counts hold plus hand-off time, not hold alone.
    #[test]
    fn the_bottleneck_is_the_lock_then_a_core_then_the_device() {
        let mut cpu = host_cpu();
        // 500 ms held + 100 ms hand-offs = 60 % of 1 s; core 0 at 90 %.
        assert_eq!(cpu.bottleneck(99.0), Bottleneck::Device);
        assert_eq!(cpu.bottleneck(94.9), Bottleneck::None);
        cpu.cores[1].busy_percent = 96.0;
        assert_eq!(cpu.bottleneck(99.0), Bottleneck::Core { core: 1 });
        cpu.cores[0].busy_percent = 99.0;
        assert_eq!(cpu.bottleneck(99.0), Bottleneck::Core { core: 0 });
        // 850 ms held alone is below 90 %; with 100 ms of hand-offs it is 95 %.
        cpu.locks[0].hold_ns = 850_000_000;
        cpu.locks[0].handoff_ns = 0;
        assert_eq!(cpu.bottleneck(99.0), Bottleneck::Core { core: 0 });
        cpu.locks[0].handoff_ns = 100_000_000;
        let lock = Bottleneck::Lock { name: "mq-deadline nvme0n1".to_owned() };
        assert_eq!(cpu.bottleneck(99.0), lock);
        // Of two saturated locks, the more occupied one.
        let mut other = cpu.locks[0].clone();
        other.name = "bfq nvme1n1".to_owned();
        other.hold_ns = 990_000_000;
        cpu.locks.push(other);
        assert_eq!(cpu.bottleneck(0.0), Bottleneck::Lock { name: "bfq nvme1n1".to_owned() });
        // An empty window divides by nothing.
        cpu.window_ns = 0;
        cpu.cores.clear();
        assert_eq!(cpu.bottleneck(0.0), Bottleneck::None);
    }

    // Proves the path steps come in PATH_STEPS order (not the map's alphabetical order), only
    // those present, then the simulator's own keys.
    #[test]
    fn path_steps_follow_the_request_then_the_extra_keys() {
        assert_eq!(host_cpu().path_steps(), ["submit", "device", "zz_extra"]);
    }
}
