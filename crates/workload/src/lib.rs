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
//!
//! Besides the fio-style [`job`], the kinds recreate the classic tools of the 2.6-era scheduler
//! comparisons: [`iozone`] (throughput mode), [`dd`], [`hdparm`] (`-tT`), the database loads
//! [`oltp`] and [`dss`], and [`seqread`] (concurrent sequential file readers). The tools are
//! processes doing synchronous system calls, so their issuers keep one operation in flight;
//! their buffered and file operations are the host model's to carry out.
//!
//! [`fio`] reads fio's own job files and command-line jobs into resolved jobs; `fio:FILE`
//! ([`WorkloadSpec::parse_fio_file`]) runs a job file's jobs as `job`s, a group per phase.
//!
//! `trace:PATH[:key=value,...]` ([`trace_replay`]) replays a block trace, each of its
//! processes an issuer, at its recorded times (scaled) or as fast as possible.

#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

use std::fmt;

use elevator_core::{
    ComponentSpec, Duration, Instant, IoPriority, KeyKind, KeySpec, Param, ParamError, Params,
    Prng, ProcessId, RequestFlags, format_size,
};

pub mod dd;
pub mod dss;
pub mod fio;
mod fio_run;
pub use fio_run::FioReporting;
pub mod hdparm;
mod iolog;
pub mod iozone;
pub mod job;
pub mod oltp;
mod process;
pub mod seqread;
#[cfg(test)]
pub(crate) mod testing;
pub mod trace_replay;
mod zbd;

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

impl IoKind {
    /// A word for messages: `read`, `write`, `sync`, `discard`, `drop-caches`.
    pub const fn name(self) -> &'static str {
        match self {
            IoKind::Read => "read",
            IoKind::Write => "write",
            IoKind::Sync => "sync",
            IoKind::Discard => "discard",
            IoKind::DropCaches => "drop-caches",
        }
    }
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

/// Why an issuer's operation failed without reaching a device.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IoFailure {
    /// The filesystem has no free block for a write (`ENOSPC`).
    NoSpace,
}

/// What an issuer makes of its failed operation ([`Issuer::failed`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FailedIo {
    /// It does not handle the failure: the run stops with an error (the default).
    Fatal,
    /// The failure is an error of the issuer, counted in its figures; the issuer goes on or
    /// ends as it decided (fio's job ending with `error=ENOSPC`, or `continue_on_error`).
    Error,
    /// The failure is the expected end of its work, no error (fio's `fill_device`).
    Expected,
}

/// A process as far as I/O goes.
pub trait Issuer: fmt::Debug + Send {
    /// Its name in reports (`job/0`).
    fn name(&self) -> &str;

    /// The process (I/O context) its operations belong to.
    fn process(&self) -> ProcessId;

    /// Its I/O priority: by default what a process that never called `ioprio_set` has,
    /// best-effort at the level its nice value (0) gives.
    fn priority(&self) -> IoPriority {
        IoPriority::DEFAULT
    }

    /// What it wants to do at `now`. Called again after every `Submit` until it answers
    /// something else, after every completion, and when a `Sleep` ends.
    fn poll(&mut self, now: Instant) -> Poll;

    /// One of its operations completed at `now`.
    fn complete(&mut self, now: Instant, io: IoId);

    /// Its operation `io` of `kind`, submitted, failed at `now` with `failure` and never
    /// completes: the issuer no longer counts it outstanding. Issuers that cannot fail keep the
    /// default, under which the failure stops the run.
    fn failed(&mut self, _now: Instant, _io: IoId, _kind: IoKind, _failure: IoFailure) -> FailedIo {
        FailedIo::Fatal
    }

    /// Counters the workload reports for the phase (an OLTP user's transactions), in a fixed
    /// order; summed over the phase's issuers.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Moves into `posted` the issuers of its phase (by index in [`PhasePlan::issuers`]) it
    /// has woken since last asked, as a semaphore post does (Oracle's log writer waking the
    /// sessions whose commits it wrote): a driver polls each at once if it sleeps. Asked after
    /// every poll and completion. Issuers that never wake others keep the default.
    fn take_posts(&mut self, _posted: &mut Vec<usize>) {}

    /// Whether, at `now`, it has stopped submitting for good (past its runtime, its amount
    /// done) and only waits for its outstanding operations. A live driver whose issuers are
    /// all finishing stops waiting for a scheduler's idle window, which no arrival would end.
    fn finishing(&self, _now: Instant) -> bool {
        false
    }

    /// Whether its operations complete at once without host or device, as fio's `null` engine
    /// "pretends to" transfer (fio's HOWTO): a driver completes each where it is submitted.
    fn null_engine(&self) -> bool {
        false
    }

    /// Where its thread may run and how it submits: read by the simulator's blk-mq host,
    /// which runs the issuer on one of the cores it allows and charges each I/O the 6.x path
    /// its engine takes (blk-mq-host.md §1, §2.2). Issuers that model no engine keep the
    /// default: any CPU, one blocking system call per I/O.
    fn cpu(&self) -> IssuerCpu {
        IssuerCpu::default()
    }
}

/// How an issuer's thread submits I/O and where it may run: what the simulator's blk-mq
/// host charges per I/O and on which core (blk-mq-host.md §1, §2.2, §2.3, §2.10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuerCpu {
    /// CPUs the thread may run on, ascending, no duplicates (fio `cpus_allowed`, after
    /// `cpus_allowed_policy=split` gave this clone its share); empty: any CPU. The workload
    /// does not know the host's CPU count: the simulator refuses a CPU the host lacks (fio's
    /// "CPU N too large"), not this crate.
    pub cpus_allowed: Vec<u32>,
    /// How it submits.
    pub engine: SubmitEngine,
    /// I/Os handed to the kernel per submission call (fio `iodepth_batch_submit`, default
    /// 1). fio's 0, like a batch above `iodepth`, means `iodepth` (init.c `fixup_options`);
    /// 1 for the engines that make one call per I/O (the sync family, posixaio, sg, libzbc,
    /// xnvme: no commit hook in fio). The issuer still hands over each I/O as it forms it
    /// (`Poll::Submit`): grouping them into calls of this many, and the plug a batch of more
    /// than 2 opens (blk-mq-host.md §2.2), is the host's to model.
    pub batch_submit: u32,
    /// io_uring registered buffers (fio `fixedbufs`): no page pinning per I/O.
    pub fixed_buffers: bool,
    /// io_uring registered files (fio `registerfiles`); also set by `sqthread_poll`, which
    /// fio's io_uring engines turn on registered files for (engines/io_uring.c: "sqthread
    /// submission requires registered files").
    pub registered_files: bool,
    /// Polled completions (fio `hipri`: io_uring IOPOLL, pvsync2's RWF_HIPRI, sg's and
    /// xnvme's polled commands).
    pub polled: bool,
    /// io_uring SQ polling thread (fio `sqthread_poll`), and its CPU (`sqthread_poll_cpu`).
    pub sq_poll: Option<SqPoll>,
}

impl Default for IssuerCpu {
    /// Any CPU, one blocking system call per I/O, no io_uring features: a process doing
    /// `pread`/`pwrite`.
    fn default() -> IssuerCpu {
        IssuerCpu {
            cpus_allowed: Vec::new(),
            engine: SubmitEngine::Sync,
            batch_submit: 1,
            fixed_buffers: false,
            registered_files: false,
            polled: false,
            sq_poll: None,
        }
    }
}

/// io_uring's SQ polling thread (`IORING_SETUP_SQPOLL`, blk-mq-host.md §2.2): a kernel
/// thread of the process submits from the ring, so the issuer makes no system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqPoll {
    /// The CPU it is bound to (`IORING_SETUP_SQ_AFF`, fio `sqthread_poll_cpu`); `None`:
    /// wherever the kernel's scheduler places it. Checked against the host by the simulator.
    pub cpu: Option<u32>,
}

/// How an issuer's thread hands I/O to the kernel (fio's `ioengine`, blk-mq-host.md §2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitEngine {
    /// `psync`, `sync`, `pvsync`, `pvsync2`: one system call per I/O, which blocks until
    /// the I/O completes.
    Sync,
    /// `libaio`: `io_submit` per batch, `io_getevents` to reap.
    Libaio,
    /// `io_uring`: `io_uring_enter` per batch (or none, with an SQ polling thread).
    IoUring,
    /// Commands past the block layer's scheduler: `io_uring_cmd`, `xnvme`, `sg`, `libzbc`.
    Passthrough,
    /// `posixaio`: glibc's POSIX AIO, one `aio_read`/`aio_write` per I/O, served by glibc's
    /// helper threads.
    Posixaio,
    /// fio's `null` engine: no kernel entry at all.
    Null,
}

impl SubmitEngine {
    /// The engine fio's `ioengine=NAME` submits with (`None`: not an engine `job` runs).
    pub fn from_fio(name: &str) -> Option<SubmitEngine> {
        Some(match name {
            "psync" | "sync" | "pvsync" | "pvsync2" => SubmitEngine::Sync,
            "libaio" => SubmitEngine::Libaio,
            "io_uring" => SubmitEngine::IoUring,
            "io_uring_cmd" | "xnvme" | "sg" | "libzbc" => SubmitEngine::Passthrough,
            "posixaio" => SubmitEngine::Posixaio,
            "null" => SubmitEngine::Null,
            _ => return None,
        })
    }
}

/// A device a workload can address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Its name (`sda`), as `filename=` refers to it.
    pub name: String,
    /// Size in bytes.
    pub capacity_bytes: u64,
    /// A zoned device's zone layout (`None`: not zoned), for fio's `zonemode=zbd`.
    pub zones: Option<TargetZones>,
}

/// A zoned device's zones as a workload sees them (a zone report, `BLKREPORTZONE`): the
/// device starts with every sequential zone empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetZones {
    /// Bytes per zone.
    pub zone_size_bytes: u64,
    /// Writable bytes of each sequential zone.
    pub zone_capacity_bytes: u64,
    /// Conventional zones at the start of the device.
    pub conventional_zones: u64,
    /// The most zones open at once (0: no limit; sysfs `max_open_zones`).
    pub max_open_zones: u32,
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
    /// iozone throughput mode.
    Iozone,
    /// dd of a raw device, to a file, or both.
    Dd,
    /// hdparm `-tT`.
    Hdparm,
    /// An Oracle OLTP instance: sessions, a log writer, database writers.
    Oltp,
    /// A decision-support database's parallel scans.
    Dss,
    /// Concurrent sequential file readers.
    Seqread,
}

impl WorkloadKind {
    /// Every kind, in listing order.
    pub const ALL: &'static [WorkloadKind] = &[
        WorkloadKind::Job,
        WorkloadKind::Iozone,
        WorkloadKind::Dd,
        WorkloadKind::Hdparm,
        WorkloadKind::Oltp,
        WorkloadKind::Dss,
        WorkloadKind::Seqread,
    ];

    /// The name users write.
    pub const fn name(self) -> &'static str {
        match self {
            WorkloadKind::Job => "job",
            WorkloadKind::Iozone => "iozone",
            WorkloadKind::Dd => "dd",
            WorkloadKind::Hdparm => "hdparm",
            WorkloadKind::Oltp => "oltp",
            WorkloadKind::Dss => "dss",
            WorkloadKind::Seqread => "seqread",
        }
    }

    /// One line on what it does.
    pub const fn summary(self) -> &'static str {
        match self {
            WorkloadKind::Job => job::SUMMARY,
            WorkloadKind::Iozone => iozone::SUMMARY,
            WorkloadKind::Dd => dd::SUMMARY,
            WorkloadKind::Hdparm => hdparm::SUMMARY,
            WorkloadKind::Oltp => oltp::SUMMARY,
            WorkloadKind::Dss => dss::SUMMARY,
            WorkloadKind::Seqread => seqread::SUMMARY,
        }
    }

    /// Its keys.
    pub const fn keys(self) -> &'static [KeySpec] {
        match self {
            WorkloadKind::Job => job::KEYS,
            WorkloadKind::Iozone => iozone::KEYS,
            WorkloadKind::Dd => dd::KEYS,
            WorkloadKind::Hdparm => hdparm::KEYS,
            WorkloadKind::Oltp => oltp::KEYS,
            WorkloadKind::Dss => dss::KEYS,
            WorkloadKind::Seqread => seqread::KEYS,
        }
    }

    /// The keys holding amounts — bytes of data, counts of records, run times — that
    /// `elevator compare --scale F` shrinks with [`WorkloadSpec::scaled`]. Block and record
    /// sizes are never among them: they shape each operation, not how much is done.
    pub const fn scalable_keys(self) -> &'static [&'static str] {
        match self {
            WorkloadKind::Job => &["size", "io_size", "runtime"],
            WorkloadKind::Iozone | WorkloadKind::Seqread => &["size"],
            WorkloadKind::Dd => &["count"],
            WorkloadKind::Hdparm => &["cached_time", "device_time"],
            WorkloadKind::Oltp | WorkloadKind::Dss => &["size", "runtime"],
        }
    }
}

/// A workload as written, checked against its kind's keys.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    kind: WorkloadKind,
    params: Params,
    /// For `fio:FILE`, the file's jobs (each a `job`); `kind` is then [`WorkloadKind::Job`].
    fio: Option<Box<fio_run::FioRun>>,
    /// For `trace:PATH`, the trace to replay (`trace_replay`); `kind` is then
    /// [`WorkloadKind::Job`] with its defaults, unused.
    trace: Option<Box<trace_replay::TraceReplay>>,
}

impl WorkloadSpec {
    /// Parses `kind[:key=value,...]`, or `fio:FILE`, an fio job file whose jobs run as
    /// `job`s, the jobs of a group at once (see `fio_run`).
    pub fn parse(text: &str) -> Result<WorkloadSpec, ParamError> {
        if let Some(path) = text.strip_prefix("fio:") {
            return Self::parse_fio_file(path);
        }
        if let Some(rest) = text.strip_prefix(trace_replay::PREFIX) {
            let replay = trace_replay::TraceReplay::parse(rest)?;
            let params =
                Params::resolve(&ComponentSpec::parse("workload", "job")?, job::KEYS, &[])?;
            return Ok(WorkloadSpec {
                kind: WorkloadKind::Job,
                params,
                fio: None,
                trace: Some(Box::new(replay)),
            });
        }
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
        let workload = WorkloadSpec { kind, params, fio: None, trace: None };
        workload.validate()?;
        Ok(workload)
    }

    /// Reads the fio job file at `path` (with a fixed [`fio::FioEnv`]: no environment
    /// variables, 4 KiB pages, so the same file always gives the same workload).
    pub fn parse_fio_file(path: &str) -> Result<WorkloadSpec, ParamError> {
        let env =
            fio::FioEnv { page_size_bytes: 4096, memory_mib: 1024, cpus: 1, ..Default::default() };
        let file = fio::parse_file(std::path::Path::new(path), &env).map_err(|error| {
            ParamError::Impossible {
                component: format!("fio {}", error.at),
                key: "job file",
                problem: match &error.option {
                    Some(option) => format!("option `{option}`: {}", error.message),
                    None => error.message.clone(),
                },
            }
        })?;
        Self::from_fio_jobs(path, &file)
    }

    /// The jobs of a parsed job file or `fio` command line (`fio::parse_invocation`) as a
    /// workload; `name` names them in errors and reports (the first job file's path, or
    /// `command line`).
    pub fn from_fio_jobs(name: &str, file: &fio::FioJobFile) -> Result<WorkloadSpec, ParamError> {
        let run = fio_run::FioRun::new(name, file)?;
        let first = run.jobs[0].spec.clone();
        Ok(WorkloadSpec {
            kind: first.kind,
            params: first.params,
            fio: Some(Box::new(run)),
            trace: None,
        })
    }

    /// For `trace:PATH`, the byte the trace's I/O reaches furthest to: what a live scratch
    /// target must hold. `None` for other workloads.
    pub fn trace_extent_bytes(&self) -> Option<u64> {
        self.trace.as_ref().map(|replay| replay.extent_bytes())
    }

    /// The kind.
    pub fn kind(&self) -> WorkloadKind {
        self.kind
    }

    /// Every key with its value in force.
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        if let Some(replay) = &self.trace {
            return replay.resolved();
        }
        if let Some(run) = &self.fio {
            let mut resolved = vec![("fio", run.path.clone())];
            resolved
                .extend(run.jobs.iter().map(|job| ("job", format!("{}: {}", job.name, job.spec))));
            return resolved;
        }
        self.params.resolved()
    }

    /// Whether running it can write to its devices or files: what a live run must know
    /// before it opens a real target (reads never need the safety checks writes do).
    /// Conservative: true whenever some setting could write.
    pub fn may_write(&self) -> bool {
        if let Some(replay) = &self.trace {
            return replay.may_write();
        }
        if let Some(run) = &self.fio {
            // A replaying job does what its log says (read_iolog), whatever its `rw`.
            return run.jobs.iter().any(|job| match &job.replay {
                Some(replay) => replay.may_write(),
                None => job.spec.may_write(),
            });
        }
        let params = &self.params;
        match self.kind {
            WorkloadKind::Job => !matches!(params.text("rw"), "read" | "randread"),
            WorkloadKind::Dd => params.text("mode") != "read",
            WorkloadKind::Iozone | WorkloadKind::Oltp => true,
            WorkloadKind::Hdparm | WorkloadKind::Dss | WorkloadKind::Seqread => false,
        }
    }

    fn validate(&self) -> Result<(), ParamError> {
        self.size_step_bytes().map(|_| ())
    }

    /// What a scaled size is rounded to, and the least it may become, in bytes: the block or
    /// record size (for a range of sizes, a multiple of the smallest and at least the largest),
    /// or 1 MiB for a kind without one. Checks the whole configuration on the way.
    fn size_step_bytes(&self) -> Result<(u64, u64), ParamError> {
        let params = &self.params;
        const MIB: u64 = 1 << 20;
        Ok(match self.kind {
            WorkloadKind::Job => job::JobConfig::from_params(params)?.block_bounds_bytes(),
            WorkloadKind::Iozone => {
                let record = iozone::IozoneConfig::from_params(params)?.record_bytes;
                (record, record)
            }
            WorkloadKind::Dd => dd::DdConfig::from_params(params).map(|_| (MIB, MIB))?,
            WorkloadKind::Hdparm => {
                hdparm::HdparmConfig::from_params(params).map(|_| (MIB, MIB))?
            }
            WorkloadKind::Oltp => {
                let block = oltp::OltpConfig::from_params(params)?.block_bytes;
                (block, block)
            }
            WorkloadKind::Dss => {
                let extent = dss::DssConfig::from_params(params)?.extent_bytes;
                (extent, extent)
            }
            WorkloadKind::Seqread => {
                let block = seqread::SeqreadConfig::from_params(params)?.block_bytes;
                (block, block)
            }
        })
    }

    /// The issuers for `targets`, their random streams forked from `prng`. Fails when the
    /// workload does not fit the targets (a block size over the device, an unknown filename).
    pub fn plan(&self, targets: &[Target], prng: &Prng) -> Result<WorkloadPlan, ParamError> {
        if let Some(replay) = &self.trace {
            return replay.plan(targets);
        }
        if let Some(run) = &self.fio {
            return run.plan(targets, prng);
        }
        let params = &self.params;
        match self.kind {
            WorkloadKind::Job => job::JobConfig::from_params(params)?.plan(params, targets, prng),
            WorkloadKind::Iozone => {
                iozone::IozoneConfig::from_params(params)?.plan(params, targets, prng)
            }
            WorkloadKind::Dd => dd::DdConfig::from_params(params)?.plan(params, targets, prng),
            WorkloadKind::Hdparm => {
                hdparm::HdparmConfig::from_params(params)?.plan(params, targets, prng)
            }
            WorkloadKind::Oltp => {
                oltp::OltpConfig::from_params(params)?.plan(params, targets, prng)
            }
            WorkloadKind::Dss => dss::DssConfig::from_params(params)?.plan(params, targets, prng),
            WorkloadKind::Seqread => {
                seqread::SeqreadConfig::from_params(params)?.plan(params, targets, prng)
            }
        }
    }

    /// For `fio:FILE`, each job's options that change only fio's reports and logs
    /// (`write_bw_log`, `write_lat_log`, `write_iops_log`, `log_avg_msec`, `percentile_list`,
    /// `per_job_logs`, ...) and its reporting group; empty for other workloads.
    pub fn fio_reporting(&self) -> Vec<FioReporting> {
        self.fio.as_ref().map_or_else(Vec::new, |run| run.reporting())
    }

    /// For `fio:FILE`, every job capped: `size`/`io_size` at most `max_size_bytes` and
    /// `runtime` at most `max_runtime` (`elevator sim FILE.fio --max-size --max-runtime`, so
    /// fio's examples run quickly). Other workloads are returned unchanged.
    pub fn fio_capped(
        &self,
        max_size_bytes: Option<u64>,
        max_runtime: Option<Duration>,
    ) -> Result<WorkloadSpec, ParamError> {
        let Some(run) = &self.fio else {
            return Ok(self.clone());
        };
        let capped = run.capped(max_size_bytes, max_runtime)?;
        let first = capped.jobs[0].spec.clone();
        Ok(WorkloadSpec {
            kind: first.kind,
            params: first.params,
            fio: Some(Box::new(capped)),
            trace: None,
        })
    }

    /// For `fio:FILE`, the same jobs with each `write_iolog` path tagged `TAG` (`w.log` →
    /// `w.TAG.log`, `w` → `w.TAG`): with several schedulers every run writes its own log, as
    /// each run's fio log files carry the scheduler, instead of all runs appending to one file
    /// in whichever order they finish. Other workloads are returned unchanged.
    pub fn fio_tagged(&self, tag: &str) -> WorkloadSpec {
        let Some(run) = &self.fio else {
            return self.clone();
        };
        WorkloadSpec { fio: Some(Box::new(run.tagged(tag))), ..self.clone() }
    }

    /// The same workload with its amounts ([`WorkloadKind::scalable_keys`]) multiplied by
    /// `factor`, for quick looks at large experiments.
    ///
    /// Every scalable key with a value in force (given or default) is scaled and becomes a
    /// given key, so the result's `Display` shows what ran. Sizes are rounded down to a
    /// multiple of the block or record size (1 MiB without one) and counts and times to the
    /// nearest whole record and millisecond; none goes below one block, one record or 1 s
    /// unless it already was. A time of 0 (no limit) stays 0. The result is checked like a
    /// parsed spec; plan-time checks (sizes against devices) still apply when it is planned.
    pub fn scaled(&self, factor: f64) -> Result<WorkloadSpec, ParamError> {
        if self.trace.is_some() {
            // A trace's I/O is what it recorded: nothing to scale.
            return Ok(self.clone());
        }
        if !(factor.is_finite() && factor > 0.0) {
            return Err(ParamError::Impossible {
                component: self.kind.name().to_owned(),
                key: "scale",
                problem: format!("{factor} is not a positive factor"),
            });
        }
        if let Some(run) = &self.fio {
            let mut scaled = (**run).clone();
            for job in &mut scaled.jobs {
                job.spec = job.spec.scaled(factor)?;
                // A regular file is as large as the job's (scaled) size.
                if job.size_bytes.is_some() {
                    job.size_bytes = Some(job.spec.params.size("size"));
                }
                // `filesize` likewise, to whole 4 KiB pages (at least one, or its size).
                let shrink = |bytes: u64| {
                    ((bytes as f64 * factor) as u64 / 4096 * 4096).max(bytes.min(4096))
                };
                job.filesize = job.filesize.map(|(lo, hi)| (shrink(lo), shrink(hi)));
            }
            let first = scaled.jobs[0].spec.clone();
            return Ok(WorkloadSpec {
                kind: first.kind,
                params: first.params,
                fio: Some(Box::new(scaled)),
                trace: None,
            });
        }
        let (step_bytes, least_bytes) = self.size_step_bytes()?;
        let scalable = self.kind.scalable_keys();
        let mut given = Vec::new();
        for key in self.kind.keys() {
            if !self.params.has(key.key) {
                continue;
            }
            let value = self.params.text(key.key);
            let scaled = if scalable.contains(&key.key) {
                match key.kind {
                    KeyKind::Size { .. } => {
                        let bytes = self.params.size(key.key);
                        let product = (bytes as f64 * factor) as u64;
                        let rounded = product - product % step_bytes;
                        Some(format_size(rounded.max(least_bytes.min(bytes))))
                    }
                    KeyKind::Integer { .. } => {
                        let count = self.params.integer(key.key);
                        let rounded = (count as f64 * factor).round() as i64;
                        Some(rounded.max(count.min(1)).to_string())
                    }
                    KeyKind::Time { .. } => {
                        let time = self.params.time(key.key);
                        let millis = (time.as_nanos() as f64 * factor / 1e6).round() as u64;
                        let least = time.min(Duration::from_secs(1));
                        let scaled = Duration::from_millis(millis).max(least);
                        (time > Duration::ZERO).then(|| scaled.to_string())
                    }
                    _ => unreachable!(
                        "{}: scalable key {} is not an amount",
                        self.kind.name(),
                        key.key
                    ),
                }
            } else {
                None
            };
            match scaled {
                Some(value) => given.push(Param { key: key.key.to_owned(), value }),
                None if self.params.is_set(key.key) => {
                    given.push(Param { key: key.key.to_owned(), value: value.to_owned() });
                }
                None => {}
            }
        }
        let spec = ComponentSpec { name: self.kind.name().to_owned(), params: given };
        let params = Params::resolve(&spec, self.kind.keys(), &[])?;
        let workload = WorkloadSpec { kind: self.kind, params, fio: None, trace: None };
        workload.validate()?;
        Ok(workload)
    }
}

impl fmt::Display for WorkloadSpec {
    /// `kind` plus the keys the user set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(replay) = &self.trace {
            return write!(f, "{replay}");
        }
        if let Some(run) = &self.fio {
            return write!(f, "fio:{}", run.path);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    // Proves `may_write` never claims a workload reads only when running it writes: each
    // spec's plan is run through the test driver and its operations inspected.
    #[test]
    fn may_write_agrees_with_what_the_issuers_do() {
        let targets = [Target { name: "sda".into(), capacity_bytes: 1 << 30, zones: None }];
        for text in [
            "job:rw=read,size=1m",
            "job:rw=randread,size=1m",
            "job:rw=randrw,size=1m",
            "job:rw=write,size=1m",
            "dd:mode=read,bs=1m,count=4",
            "dd:mode=write,bs=1m,count=4",
            "hdparm:cached_time=10ms,device_time=10ms",
            "seqread:size=4m",
            "dss:streams=4,size=4m,runtime=10ms",
            "oltp:size=4m,runtime=10ms",
            "iozone:size=1m",
        ] {
            let spec = WorkloadSpec::parse(text).unwrap();
            let plan = spec.plan(&targets, &Prng::new(1)).unwrap();
            let run = testing::run(plan, |_| Duration::from_micros(100));
            let writes = run.records.iter().any(|record| record.io.kind == IoKind::Write);
            assert!(spec.may_write() || !writes, "{text} writes but says it does not");
            assert_eq!(spec.may_write(), writes, "{text}");
        }
    }

    // Proves every kind is listed in order, parses with its defaults, lists every key with a
    // range or choice and a line of help, and names only its own keys as scalable.
    #[test]
    fn every_kind_is_registered_with_documented_keys() {
        let names: Vec<&str> = WorkloadKind::ALL.iter().map(|kind| kind.name()).collect();
        assert_eq!(names, ["job", "iozone", "dd", "hdparm", "oltp", "dss", "seqread"]);
        for &kind in WorkloadKind::ALL {
            let spec = WorkloadSpec::parse(kind.name()).unwrap();
            assert_eq!(spec.kind(), kind);
            assert!(!kind.summary().is_empty());
            for key in kind.keys() {
                assert!(!key.help.is_empty(), "{}: {} has no help", kind.name(), key.key);
            }
            for scalable in kind.scalable_keys() {
                let key = kind.keys().iter().find(|key| key.key == *scalable).unwrap();
                assert!(
                    matches!(
                        key.kind,
                        KeyKind::Size { .. } | KeyKind::Integer { .. } | KeyKind::Time { .. }
                    ),
                    "{}: {scalable}",
                    kind.name()
                );
            }
        }
        let error = WorkloadSpec::parse("fio").unwrap_err().to_string();
        assert!(error.contains("(accepted: job, iozone, dd, hdparm, oltp, dss, seqread)"));
    }

    // Proves scaling shrinks sizes to a multiple of the record size, leaves record sizes alone,
    // scales defaulted keys too, and prints a spec that parses back to the same workload.
    #[test]
    fn scaled_sizes_shrink_aligned_and_reparse() {
        let iozone = WorkloadSpec::parse("iozone:size=24g,record=512k,threads=10").unwrap();
        let scaled = iozone.scaled(0.001).unwrap();
        // 24 GiB / 1000 = 25,769,803 bytes, down to a multiple of 512 KiB: 49 records.
        assert_eq!(scaled.to_string(), "iozone:threads=10,size=25088k,record=512k");
        assert_eq!(WorkloadSpec::parse(&scaled.to_string()).unwrap(), scaled);
        let tiny = iozone.scaled(1e-9).unwrap();
        assert_eq!(tiny.to_string(), "iozone:threads=10,size=512k,record=512k", "one record");
        let defaults = WorkloadSpec::parse("oltp").unwrap().scaled(0.1).unwrap();
        let resolved = defaults.resolved();
        let value = |key| resolved.iter().find(|(name, _)| *name == key).unwrap().1.clone();
        assert_eq!(value("size"), "104856k", "1g / 10 down to a multiple of 4k");
        assert_eq!(value("runtime"), "6s");
        assert_eq!(value("block"), "4k");
        assert_eq!(value("log_size"), "64m", "the log's size is space, not an amount of work");
        let dss = WorkloadSpec::parse("dss").unwrap().scaled(0.01).unwrap();
        assert_eq!(dss.to_string(), "dss:size=10m,runtime=1s", "a multiple of the 1m extent");
        assert_eq!(WorkloadSpec::parse(&dss.to_string()).unwrap(), dss);
    }

    // Proves counts and times scale with floors of 1 and 1 s, a zero time (no limit) stays,
    // and unset sizes stay unset.
    #[test]
    fn scaled_counts_and_times_keep_their_floors() {
        let dd = WorkloadSpec::parse("dd:bs=2m,count=300").unwrap();
        assert_eq!(dd.scaled(0.1).unwrap().to_string(), "dd:bs=2m,count=30");
        assert_eq!(dd.scaled(0.0001).unwrap().to_string(), "dd:bs=2m,count=1");
        let hdparm = WorkloadSpec::parse("hdparm").unwrap().scaled(0.5).unwrap();
        assert_eq!(hdparm.to_string(), "hdparm:cached_time=1s,device_time=1500ms");
        let short = WorkloadSpec::parse("hdparm:cached_time=10ms").unwrap().scaled(0.5).unwrap();
        assert!(short.to_string().contains("cached_time=10ms"), "never above the original");
        let job = WorkloadSpec::parse("job:rw=randread,bsrange=4k-16k,size=1g").unwrap();
        assert_eq!(
            job.scaled(0.001).unwrap().to_string(),
            "job:rw=randread,bsrange=4k-16k,size=1048k"
        );
        assert_eq!(WorkloadSpec::parse("job").unwrap().scaled(0.5).unwrap().to_string(), "job");
        let error = dd.scaled(0.0).unwrap_err().to_string();
        assert_eq!(error, "dd: scale: 0 is not a positive factor");
    }
}
