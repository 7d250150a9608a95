//! A scheduler-decision capture (issue 25): every event a kernel block-layer scheduler's
//! tracepoints record for one device, with what is needed to replay them into our
//! implementation of the same scheduler and compare its choice at each issue.
//!
//! A capture is the kernel run's settings ([`SchedCaptureHeader`]: kernel release, `HZ`,
//! scheduler, tunables, queue sizes, lost-event count) and its events ([`SchedEvent`]) in
//! time order. The block events keep every field the tracepoints print (`block_rq_insert`,
//! `block_rq_merge`, `block_rq_issue`, `block_rq_requeue`, `block_rq_complete`,
//! `block_bio_backmerge`, `block_bio_frontmerge`, `block_bio_queue`, `block_getrq`); kyber's own
//! tracepoints (`kyber_adjust`, `kyber_latency`, `kyber_throttled`) carry its domain depths
//! and latency evaluations.
//!
//! The types here are the interface between the capture (`elevator-kernel`) and the replay
//! (`elevator-sched`'s conformance driver); the file format that stores them is documented
//! with its reader and writer.

use crate::IoFlags;
use elevator_core::{IoPriority, Op};

/// The kernel run a capture comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedCaptureHeader {
    /// The running kernel's release (`uname -r`), e.g. `6.18.44`.
    pub kernel_release: String,
    /// The kernel's `CONFIG_HZ` (jiffies per second), which its schedulers count time in.
    pub hz: u32,
    /// The scheduler as sysfs names it (`mq-deadline`, `kyber`, `bfq`, `none`).
    pub scheduler: String,
    /// Every file of the queue's `iosched/` directory, name and value as read back after the
    /// run's tunables were written, in name order.
    pub tunables: Vec<(String, String)>,
    /// The queue's `nr_requests` with the scheduler attached (scheduler tags).
    pub nr_requests: u32,
    /// The hardware queue depth (driver tags), e.g. 128 for loop.
    pub queue_depth: u32,
    /// The number of hardware queues.
    pub hw_queues: u32,
    /// `max_sectors_kb` of the queue.
    pub max_sectors_kb: u32,
    /// The CPUs online during the capture.
    pub cpus: u32,
    /// Events the kernel's ring buffer lost (overruns, `[LOST n EVENTS]`, dropped); a capture
    /// with any is refused for judging.
    pub lost_events: u64,
    /// The device, `major,minor`.
    pub device: String,
    /// The workload that ran, as the user gave it (a `-w` spec or a job file's name).
    pub workload: String,
}

/// Which tracepoint an event of [`SchedEvent::Block`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockPoint {
    /// `block_bio_queue`: a bio entered the block layer (blkparse Q).
    BioQueue,
    /// `block_bio_backmerge`: a bio was merged at the back of a request (M); the extent is the
    /// bio's.
    BioBackMerge,
    /// `block_bio_frontmerge`: a bio was merged at the front of a request (F); the bio's
    /// extent.
    BioFrontMerge,
    /// `block_getrq`: a request was allocated for a bio (G).
    GetRq,
    /// `block_rq_insert`: a request went into the scheduler (I).
    Insert,
    /// `block_rq_merge`: a request was absorbed into another (the absorbed one's extent).
    Merge,
    /// `block_rq_issue`: a request went to the driver (D).
    Issue,
    /// `block_rq_requeue`: the driver gave a request back (R).
    Requeue,
    /// `block_rq_complete`: the device completed a request (C).
    Complete,
}

/// One block tracepoint event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRecord {
    /// Which tracepoint.
    pub point: BlockPoint,
    /// The trace clock (`mono`) in ns, since the capture's first event.
    pub time_ns: u64,
    /// The CPU the event fired on.
    pub cpu: u32,
    /// The running task's pid (for completions usually not the submitter).
    pub pid: u32,
    /// The task name the event prints (`comm`), when it prints one.
    pub command: Option<String>,
    /// The operation (from the RWBS letters; a flush without data is [`Op::Flush`]).
    pub op: Op,
    /// The other RWBS letters.
    pub flags: IoFlags,
    /// The first sector (512 bytes).
    pub sector: u64,
    /// The sectors.
    pub sectors: u32,
    /// The request's I/O priority as the event prints it (class, level); `None` for class
    /// `none` and for bio events, which print none.
    pub priority: Option<IoPriority>,
    /// The completion's error (0 on success), completion events only.
    pub error: Option<i32>,
}

/// One event of a capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchedEvent {
    /// A block tracepoint.
    Block(BlockRecord),
    /// `kyber_adjust`: kyber set a domain's depth.
    KyberAdjust {
        /// The trace clock in ns since the capture's first event.
        time_ns: u64,
        /// The domain (`READ`, `WRITE`, `DISCARD`, `OTHER`).
        domain: String,
        /// Its new depth.
        depth: u32,
    },
    /// `kyber_latency`: kyber evaluated a domain's latency percentile.
    KyberLatency {
        /// The trace clock in ns since the capture's first event.
        time_ns: u64,
        /// The domain.
        domain: String,
        /// `total` or `I/O`.
        kind: String,
        /// The percentile evaluated (90 or 99).
        percentile: u32,
        /// The bucket numerator of the latency estimate.
        numerator: u32,
        /// Its denominator.
        denominator: u32,
        /// Samples in the window.
        samples: u32,
    },
    /// `kyber_throttled`: a request of a domain found no token.
    KyberThrottled {
        /// The trace clock in ns since the capture's first event.
        time_ns: u64,
        /// The domain.
        domain: String,
    },
}

impl SchedEvent {
    /// Its time, ns since the capture's first event.
    pub fn time_ns(&self) -> u64 {
        match self {
            SchedEvent::Block(record) => record.time_ns,
            SchedEvent::KyberAdjust { time_ns, .. }
            | SchedEvent::KyberLatency { time_ns, .. }
            | SchedEvent::KyberThrottled { time_ns, .. } => *time_ns,
        }
    }
}

/// A whole capture: its settings and its events in time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedCapture {
    /// The kernel run's settings.
    pub header: SchedCaptureHeader,
    /// The events, by time (ties in the order the kernel's buffer gave them).
    pub events: Vec<SchedEvent>,
}
