//! Workloads: what issuers do, as state machines that produce one operation at a time.
//!
//! An [`Issuer`] is a process (or a fio job clone, an iozone child) reduced to its I/O: asked
//! with [`Issuer::poll`], it says what it wants next — submit an operation, sleep until an
//! instant (think time), wait for one of its operations to complete, or nothing more. It is
//! told of completions with [`Issuer::complete`]. Nothing here knows about the simulator or the
//! live engine: the same issuers run under simulated time and under the real clock.
//!
//! A workload is written as a spec (`job:rw=randread,bs=4k,iodepth=32`) and turned into a
//! [`WorkloadPlan`] — phases of issuers — for a set of [`Target`] devices and a seed.

#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

use std::fmt;

use elevator_core::{
    ComponentSpec, Instant, IoPriority, KeySpec, ParamError, Params, Prng, ProcessId, RequestFlags,
};

pub mod job;

/// An issuer's handle for one of its operations.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct IoId(pub u64);

/// What an operation does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IoKind {
    /// `read(2)` / `pread(2)`.
    Read,
    /// `write(2)` / `pwrite(2)`.
    Write,
    /// `fsync(2)` of a file, or of a block device opened buffered; a cache flush command for a
    /// device opened with O_DIRECT. Carries no bytes.
    Sync,
    /// Tell the device the range is unused (`BLKDISCARD`).
    Discard,
    /// Drop the host's clean cached pages (`echo 3 > /proc/sys/vm/drop_caches`, or hdparm's
    /// `BLKFLSBUF` on a device). Carries no bytes.
    DropCaches,
}

/// Where an operation goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Place {
    /// A whole block device (`/dev/sda`), by index into the plan's targets.
    Device(usize),
    /// A file, by index into the plan's files.
    File(usize),
}

/// One operation an issuer wants done.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Io {
    /// Its handle, unique within the issuer.
    pub id: IoId,
    /// What it does.
    pub kind: IoKind,
    /// Where.
    pub place: Place,
    /// Byte offset (sector aligned for direct I/O).
    pub offset_bytes: u64,
    /// Size in bytes (a multiple of 512 for direct I/O; 0 for sync and drop-caches).
    pub size_bytes: u64,
    /// O_DIRECT: straight to the block layer. Otherwise through the host's page cache.
    pub direct: bool,
    /// For direct I/O, the request flags (every read is sync; O_DIRECT writes are too; FUA).
    pub flags: RequestFlags,
}

/// A file a workload uses, and where it lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSpec {
    /// Its name in reports.
    pub name: String,
    /// The device (index into the targets) whose filesystem holds it.
    pub device: usize,
    /// Bytes of data it holds before the run (laid out contiguously before the run starts);
    /// 0 for a file the workload creates by writing it.
    pub size_bytes: u64,
}

/// What an issuer wants next.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Poll {
    /// Submit this operation now (and poll again).
    Submit(Io),
    /// Nothing until `until` (think time, a paced rate).
    Sleep {
        /// When to poll again.
        until: Instant,
    },
    /// Nothing until one of its operations completes.
    Wait,
    /// Finished: no more operations.
    Done,
}

/// A process as far as I/O goes.
pub trait Issuer: fmt::Debug + Send {
    /// Its name in reports (`job/0`).
    fn name(&self) -> &str;

    /// The process (I/O context) its operations belong to.
    fn process(&self) -> ProcessId;

    /// Its I/O priority.
    fn priority(&self) -> IoPriority;

    /// What it wants to do at `now`. Called again after every `Submit` until it answers
    /// something else, after every completion, and when a `Sleep` ends.
    fn poll(&mut self, now: Instant) -> Poll;

    /// One of its operations completed at `now`.
    fn complete(&mut self, now: Instant, io: IoId);

    /// Counters the workload reports for the phase (an OLTP user's transactions), in a fixed
    /// order; summed over the phase's issuers.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// A device a workload can address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Its name (`sda`), as `filename=` refers to it.
    pub name: String,
    /// Size in bytes.
    pub capacity_bytes: u64,
}

/// Issuers that run together; a phase ends when all of them are done and idle.
#[derive(Debug)]
pub struct PhasePlan {
    /// Its name (`randread`, iozone's `write`).
    pub name: String,
    /// Its issuers.
    pub issuers: Vec<Box<dyn Issuer>>,
    /// iozone's stonewalling: when the first issuer finishes, every issuer's throughput counts
    /// only what it had done by then, over the time until then.
    pub stonewall: bool,
}

/// A workload ready to run: its files and its phases in order.
#[derive(Debug)]
pub struct WorkloadPlan {
    /// Files the phases address with [`Place::File`].
    pub files: Vec<FileSpec>,
    /// The phases.
    pub phases: Vec<PhasePlan>,
}

/// A kind of workload.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum WorkloadKind {
    /// fio-style block-level job.
    Job,
}

impl WorkloadKind {
    /// Every kind, in listing order.
    pub const ALL: &'static [WorkloadKind] = &[WorkloadKind::Job];

    /// The name users write.
    pub const fn name(self) -> &'static str {
        match self {
            WorkloadKind::Job => "job",
        }
    }

    /// One line on what it does.
    pub const fn summary(self) -> &'static str {
        match self {
            WorkloadKind::Job => job::SUMMARY,
        }
    }

    /// Its keys.
    pub const fn keys(self) -> &'static [KeySpec] {
        match self {
            WorkloadKind::Job => job::KEYS,
        }
    }
}

/// A workload as written, checked against its kind's keys.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    kind: WorkloadKind,
    params: Params,
}

impl WorkloadSpec {
    /// Parses `kind[:key=value,...]`.
    pub fn parse(text: &str) -> Result<WorkloadSpec, ParamError> {
        let spec = ComponentSpec::parse("workload", text)?;
        let kind = WorkloadKind::ALL.iter().copied().find(|kind| kind.name() == spec.name);
        let Some(kind) = kind else {
            return Err(ParamError::UnknownName {
                kind: "workload",
                name: spec.name,
                accepted: WorkloadKind::ALL.iter().map(|kind| kind.name()).collect(),
            });
        };
        let params = Params::resolve(&spec, kind.keys(), &[])?;
        let workload = WorkloadSpec { kind, params };
        workload.validate()?;
        Ok(workload)
    }

    /// The kind.
    pub fn kind(&self) -> WorkloadKind {
        self.kind
    }

    /// Every key with its value in force.
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        self.params.resolved()
    }

    fn validate(&self) -> Result<(), ParamError> {
        match self.kind {
            WorkloadKind::Job => job::JobConfig::from_params(&self.params).map(|_| ()),
        }
    }

    /// The issuers for `targets`, their random streams forked from `prng`. Fails when the
    /// workload does not fit the targets (a block size over the device, an unknown filename).
    pub fn plan(&self, targets: &[Target], prng: &Prng) -> Result<WorkloadPlan, ParamError> {
        match self.kind {
            WorkloadKind::Job => {
                let config = job::JobConfig::from_params(&self.params)?;
                config.plan(&self.params, targets, prng)
            }
        }
    }
}

impl fmt::Display for WorkloadSpec {
    /// `kind` plus the keys the user set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        let mut separator = ':';
        for (key, value) in self.params.resolved() {
            if self.params.is_set(key) {
                write!(f, "{separator}{key}={value}")?;
                separator = ',';
            }
        }
        Ok(())
    }
}
