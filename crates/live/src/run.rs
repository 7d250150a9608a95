//! `elevator run`: a workload's issuers (the state machines of `elevator-workload`) driven by
//! real time through a reactor on the calling thread, reported like a simulated run with
//! `mode: "live"`.
//!
//! Live runs take block-level workloads: direct I/O to the target as a whole device (the
//! `job` kind, `dd` and `hdparm` reading a raw device). Workloads that need files and the page
//! cache (iozone, dd to a file, the database loads) run in the simulator's host model.
//!
//! With `verify`, every write carries the verify stamp of its blocks and a fresh generation,
//! and every read is checked against the generation the last write submitted before it left
//! there (the block queue orders overlapping requests, so that is what the device must
//! return); blocks the run did not write are checked as far as can be known (see
//! [`crate::verify`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use elevator_core::{Duration, Instant, Prng};
use elevator_report::fio::FioDirection;
use elevator_report::{
    DeviceStats, ErrorDirection, Mode, Phase, PhaseRecorder, QueueStats as ReportQueueStats, Run,
    SchedulerStats,
};
use elevator_workload::{Io, IoKind, Issuer, Place, Poll, Target as WorkloadTarget, WorkloadSpec};

use crate::backend;
use crate::buffer::{AlignedBuf, BufferPool};
use crate::clock::Clock;
use crate::cpu::process_cpu_ns;
use crate::engine::EngineOptions;
use crate::error::LiveError;
use crate::multi::Reactors;
use crate::reactor::{IoFinished, IoOp, IoRequest, Reactor};
use crate::target::Target;
use crate::verify::{self, Generations, Mismatch, VERIFY_BLOCK_BYTES};

/// The workload a live run uses when none is named: two processes reading 4 KiB blocks at
/// random, 16 at a time each, for five seconds.
pub const DEFAULT_WORKLOAD: &str =
    "job:rw=randread,bs=4k,iodepth=16,numjobs=2,runtime=5s,time_based=1";
/// The target when none is named: a scratch file on a disk-backed filesystem (not /tmp, which
/// is often tmpfs and would measure memory).
pub const DEFAULT_SCRATCH_PATH: &str = "/var/tmp/elevator.scratch";
/// The size of a scratch file created without an explicit size.
pub const DEFAULT_SCRATCH_BYTES: u64 = 1 << 30;

/// How to run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Scheduler, depth, queue settings and backend.
    pub engine: EngineOptions,
    /// Stamp every write and check every read.
    pub verify: bool,
    /// The workload's random streams.
    pub seed: u64,
    /// Set (by a Ctrl-C handler) to stop issuing: in-flight I/O finishes and the run reports
    /// what it did.
    pub stop: Option<Arc<AtomicBool>>,
    /// Which failed I/Os the run goes on after (fio's `continue_on_error`); on any other, it
    /// stops issuing at the first failure, as fio stops a job.
    pub continue_on_error: ContinueOnError,
}

/// fio's `continue_on_error`: which errors a run goes on after.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ContinueOnError {
    /// Stop at the first failed I/O (fio's default).
    #[default]
    None,
    /// Go on after failed reads.
    Read,
    /// Go on after failed writes.
    Write,
    /// Go on after any failed I/O.
    Io,
    /// Go on after verify mismatches (they are reported at the end).
    Verify,
    /// Go on after anything.
    All,
}

impl ContinueOnError {
    /// Parses fio's words: `none`, `read`, `write`, `io`, `verify`, `all`.
    pub fn parse(text: &str) -> Option<ContinueOnError> {
        Some(match text {
            "none" => ContinueOnError::None,
            "read" => ContinueOnError::Read,
            "write" => ContinueOnError::Write,
            "io" => ContinueOnError::Io,
            "verify" => ContinueOnError::Verify,
            "all" => ContinueOnError::All,
            _ => return None,
        })
    }

    /// Whether a failed I/O of `kind` lets the run go on.
    pub fn tolerates(self, kind: IoKind) -> bool {
        match self {
            ContinueOnError::None | ContinueOnError::Verify => false,
            ContinueOnError::Read => kind == IoKind::Read,
            ContinueOnError::Write => kind == IoKind::Write,
            ContinueOnError::Io | ContinueOnError::All => true,
        }
    }

    /// Whether verify mismatches leave the run's outcome alone.
    pub fn tolerates_verify(self) -> bool {
        matches!(self, ContinueOnError::Verify | ContinueOnError::All)
    }
}

/// Where a run is, for a progress line.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// The phase running.
    pub phase: String,
    /// Time since the run started.
    pub elapsed: Duration,
    /// Bytes moved so far in the run.
    pub bytes: u64,
    /// I/Os completed so far in the run.
    pub ios: u64,
}

/// What `--verify` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifySummary {
    /// Blocks (512 bytes) written with a stamp.
    pub blocks_written: u64,
    /// Blocks read and checked.
    pub blocks_checked: u64,
    /// Blocks read whose content the run could not know (a device region no write of the
    /// run touched).
    pub blocks_unknown: u64,
    /// Blocks that did not read back as expected.
    pub mismatches: u64,
    /// The first few mismatches.
    pub examples: Vec<Mismatch>,
}

/// A finished live run.
#[derive(Clone, Debug)]
pub struct LiveRun {
    /// The report.
    pub run: Run,
    /// What `--verify` found, when asked.
    pub verify: Option<VerifySummary>,
    /// Stopped early by the stop flag.
    pub interrupted: bool,
    /// I/Os that failed, and the first error.
    pub io_errors: (u64, Option<String>),
    /// `io_uring` or `threads`.
    pub backend: &'static str,
    /// Why io_uring was not used, when the run fell back to the thread pool.
    pub fallback: Option<String>,
}

/// Why an interrupted run is partial, unless its caller knows better (which signal).
pub const STOPPED: &str = "stopped on request: issuing ended, I/O in flight completed";

/// How many mismatches a summary keeps as examples.
const MISMATCH_EXAMPLES: usize = 10;

/// One of the run's I/Os in flight.
struct LiveIo {
    issuer: usize,
    io: Io,
    buf: Option<AlignedBuf>,
    /// For a verified read: what each block must hold.
    expected: Vec<verify::Expect>,
}

struct IssuerState {
    issuer: Box<dyn Issuer>,
    /// Poll it now (new, after a completion, after a sleep).
    wants_poll: bool,
    sleeping_until: Option<Instant>,
    done: bool,
}

/// Runs `workload` on `target` once, as `options` say; `progress` is called about once a
/// second.
pub fn run_workload(
    target: &Target,
    workload: &WorkloadSpec,
    options: &RunOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<LiveRun, LiveError> {
    let planned = [workload_target(target)];
    run_workload_on(std::slice::from_ref(target), &planned, workload, options, progress)
}

/// [`run_workload`] on several targets at once (an fio job file whose jobs name different
/// files or devices): `targets[i]` is the workload's device `i`, planned as `planned[i]` (the
/// name its jobs' `filename` use). Each target has its own queue and scheduler instance, as
/// the kernel has one per request queue; one thread and one backend serve them all
/// (`crate::multi`).
pub fn run_workload_on(
    targets: &[Target],
    planned: &[WorkloadTarget],
    workload: &WorkloadSpec,
    options: &RunOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<LiveRun, LiveError> {
    let plan = workload.plan(planned, &Prng::new(options.seed))?;
    if !plan.files.is_empty() {
        return Err(LiveError::BadIo(format!(
            "`{}` works on files through the page cache; live runs take block-level workloads \
             (job, dd mode=read, hdparm): run it with `elevator sim`",
            workload.kind().name()
        )));
    }
    // With several targets some may be only read (opened read-only); a write to one of them
    // is refused as it is submitted.
    if workload.may_write() && targets.iter().all(|target| !target.writable()) {
        return Err(LiveError::BadIo(format!(
            "`{workload}` writes, but the target was opened read-only"
        )));
    }
    let settings: Vec<(String, String)> =
        workload.resolved().into_iter().map(|(key, value)| (key.to_owned(), value)).collect();
    let keep_io_samples = fio_io_samples(workload);
    // A job file's run carries fio's disk_util of the devices under its targets (diskutil.rs).
    let disk_util = (!workload.fio_reporting().is_empty())
        .then(|| crate::diskutil::DiskUtilProbe::start_all(targets.iter().map(Target::path)))
        .flatten();
    let mut live = run_plan_recording(
        targets,
        plan,
        &workload.to_string(),
        &settings,
        options,
        keep_io_samples,
        progress,
    )?;
    if let Some(probe) = disk_util {
        probe.finish(&mut live.run.device_stats.extra);
    }
    Ok(live)
}

/// The I/Os `workload` keeps in flight at most: `iodepth × numjobs` summed over its jobs (one
/// job, or each job of an fio job file), as fio reads those keys; `None` for workloads without
/// them (traces, `dd`, `hdparm`). A synchronous engine's job counts its `iodepth` though it
/// keeps one I/O in flight: an estimate from above, for sizing queues.
pub fn workload_iodepth(workload: &WorkloadSpec) -> Option<u32> {
    let resolved = workload.resolved();
    let of_job = |settings: &[(&'static str, String)]| -> Option<u64> {
        let key = |name: &str| {
            settings.iter().find(|(key, _)| *key == name).and_then(|(_, v)| v.parse::<u64>().ok())
        };
        Some(key("iodepth")?.saturating_mul(key("numjobs").unwrap_or(1)))
    };
    let total = if resolved.iter().any(|(key, _)| *key == "fio") {
        // A job file: each `job` entry is `NAME: SPEC`, the job as a workload.
        let mut total = 0u64;
        for (_, text) in resolved.iter().filter(|(key, _)| *key == "job") {
            let spec = text.split_once(": ").map_or(text.as_str(), |(_, spec)| spec);
            let job = WorkloadSpec::parse(spec).ok()?;
            total = total.saturating_add(of_job(&job.resolved())?);
        }
        (total > 0).then_some(total)?
    } else {
        of_job(&resolved)?
    };
    Some(u32::try_from(total).unwrap_or(u32::MAX))
}

/// Whether a run of `workload` keeps every I/O for fio's log files: an fio job file whose
/// jobs ask for one (`write_bw_log`, `write_lat_log`, `write_iops_log`; fio-compat.md §4.6),
/// as the simulator decides. Memory grows with the I/Os, so other runs do not.
pub fn fio_io_samples(workload: &WorkloadSpec) -> bool {
    workload.fio_reporting().iter().any(|job| {
        job.options.iter().any(|(name, _)| name.starts_with("write_") && name.ends_with("_log"))
    })
}

/// fio's direction for an operation (`elevator_report::fio`); `None` for what fio does not
/// count (dropping the page cache).
pub(crate) fn fio_direction(kind: IoKind) -> Option<FioDirection> {
    match kind {
        IoKind::Read => Some(FioDirection::Read),
        IoKind::Write => Some(FioDirection::Write),
        IoKind::Discard => Some(FioDirection::Trim),
        IoKind::Sync => Some(FioDirection::Sync),
        IoKind::DropCaches => None,
    }
}

/// Turns a live phase's fio figures (each issuer's [`elevator_report::fio::JobStats`]) into
/// what fio reports of a real run:
///
/// * dates: the recorder measured on the engine's monotonic clock from its zero; fio dates
///   a job (`job_start`, and `timestamp`/`time` from it) and its log samples by the wall
///   clock, so they move by `unix_ns_at_zero` (the wall clock at the engine's zero). Every
///   figure is a difference of two times, so none changes.
/// * CPU: fio's `usr_cpu`/`sys_cpu` are each job process's own `getrusage`; a live run's
///   issuers share the engine's threads, so the process's CPU over the phase is shared out
///   among the jobs by the I/Os each completed (all of it to a phase's one job).
pub(crate) fn fio_figures_of_live_phase(phase: &mut Phase, unix_ns_at_zero: u64) {
    let (usr_ns, sys_ns) = (phase.cpu_user_ns.unwrap_or(0), phase.cpu_sys_ns.unwrap_or(0));
    let total_ops: u64 = phase.issuers.iter().map(|issuer| issuer.ops).sum();
    let jobs = phase.issuers.iter().filter(|issuer| issuer.fio.is_some()).count() as u64;
    for issuer in &mut phase.issuers {
        let ops = issuer.ops;
        let Some(job) = issuer.fio.as_deref_mut() else { continue };
        job.start_ns += unix_ns_at_zero;
        for sample in job.io_samples.iter_mut().flatten() {
            sample.completed_ns += unix_ns_at_zero;
        }
        let share = |ns: u64| match total_ops {
            0 => ns / jobs.max(1),
            _ => (u128::from(ns) * u128::from(ops) / u128::from(total_ops)) as u64,
        };
        job.usr_ns = share(usr_ns);
        job.sys_ns = share(sys_ns);
    }
}

/// The target as a workload plans for it: one device, named after the file.
pub fn workload_target(target: &Target) -> WorkloadTarget {
    let name = target.path().file_name().map_or_else(
        || target.path().display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    // Zones are not read from a live device (sysfs `queue/zoned`, BLKREPORTZONE): fio's
    // zonemode=zbd refuses it as not zoned.
    WorkloadTarget { name, capacity_bytes: target.size_bytes(), zones: None }
}

/// Runs a plan built by hand (issuers of several workloads, scripted issuers) on `target`;
/// `label` and `settings` describe it in the report. Its operations must address the target
/// as device 0, directly.
pub fn run_plan(
    target: &Target,
    plan: elevator_workload::WorkloadPlan,
    label: &str,
    settings: &[(String, String)],
    options: &RunOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<LiveRun, LiveError> {
    run_plan_recording(
        std::slice::from_ref(target),
        plan,
        label,
        settings,
        options,
        false,
        progress,
    )
}

/// [`run_plan`], keeping every I/O for fio's log files when `keep_io_samples`
/// ([`fio_io_samples`]).
fn run_plan_recording(
    targets: &[Target],
    plan: elevator_workload::WorkloadPlan,
    label: &str,
    settings: &[(String, String)],
    options: &RunOptions,
    keep_io_samples: bool,
    progress: &mut dyn FnMut(&Progress),
) -> Result<LiveRun, LiveError> {
    let target = &targets[0];
    if options.verify && targets.len() > 1 {
        return Err(LiveError::BadIo(format!(
            "--verify checks one target; this run has {}",
            targets.len()
        )));
    }
    let fds: Vec<_> = targets.iter().map(Target::fd).collect();
    // Room for every queue's `depth` transfers in the one backend.
    let depth = options.engine.depth.saturating_mul(targets.len() as u32);
    let ring_entries =
        options.engine.ring_entries.map(|entries| entries.saturating_mul(targets.len() as u32));
    let (backend, fallback) =
        backend::build_many(options.engine.backend, &fds, depth, ring_entries)
            .map_err(|source| LiveError::Backend { backend: "setup", source })?;
    let clock = Clock::start();
    let unix_ns_at_zero = clock.unix_ns_at_zero();
    let backend = backend::with_faults(backend, clock, &options.engine.faults);
    let reactors = if targets.len() == 1 {
        vec![Reactor::new(
            options.engine.queue(crate::engine::rotational(&targets[0]))?,
            backend,
            clock,
        )]
    } else {
        crate::multi::Part::split(backend, targets.len())
            .into_iter()
            .zip(targets)
            .map(|(part, target)| {
                let queue = options.engine.queue(crate::engine::rotational(target))?;
                Ok(Reactor::new(queue, Box::new(part), clock))
            })
            .collect::<Result<_, LiveError>>()?
    };
    let mut driver = Driver {
        reactor: Reactors::new(reactors),
        target,
        targets,
        pool: BufferPool::default(),
        registered: BTreeMap::new(),
        ios: Vec::new(),
        free: Vec::new(),
        generations: options
            .verify
            .then(|| Generations::new(target.is_scratch(), Generations::random_first())),
        verify: options.verify.then(VerifySummary::default),
        io_errors: (0, None),
        continue_on_error: options.continue_on_error,
        stopping_error: None,
        bytes: 0,
        completed: 0,
    };
    let stop = options.stop.clone();
    let stopped = || stop.as_ref().is_some_and(|flag| flag.load(Ordering::SeqCst));
    let mut phases = Vec::new();
    let mut counters_by_phase = Vec::new();
    let mut interrupted = false;
    let mut last_progress = Instant::ZERO;
    // The phase after which each process has nothing left to do: there it exits.
    let mut last_phase_of = BTreeMap::new();
    for (index, phase) in plan.phases.iter().enumerate() {
        for issuer in &phase.issuers {
            last_phase_of.insert(issuer.process(), index);
        }
    }
    for (phase_index, phase) in plan.phases.into_iter().enumerate() {
        let started = clock.now();
        let names = phase.issuers.iter().map(|issuer| issuer.name().to_owned()).collect();
        let mut recorder = PhaseRecorder::new(phase.name.clone(), started, names);
        if keep_io_samples {
            recorder.keep_io_samples();
        }
        let mut issuers: Vec<IssuerState> = phase
            .issuers
            .into_iter()
            .map(|issuer| IssuerState {
                issuer,
                wants_poll: true,
                sleeping_until: None,
                done: false,
            })
            .collect();
        let cpu_at_start = process_cpu_ns();
        let mut finished = Vec::new();
        loop {
            let now = clock.now();
            if !interrupted && (stopped() || driver.stopping_error.is_some()) {
                interrupted = true;
            }
            if !interrupted {
                for (index, state) in issuers.iter_mut().enumerate() {
                    let was_done = state.done;
                    driver.poll_issuer(index, state, now, phase.stonewall, &mut recorder)?;
                    let process = state.issuer.process();
                    if state.done && !was_done && last_phase_of[&process] == phase_index {
                        driver.reactor.process_exited(process)?;
                    }
                }
            }
            let all_done = interrupted || issuers.iter().all(|state| state.done);
            if all_done && driver.reactor.outstanding() == 0 {
                recorder.extend_to(clock.now());
                break;
            }
            let now = clock.now();
            if all_done || issuers.iter().all(|s| s.done || s.issuer.finishing(now)) {
                // Nothing more will arrive: a scheduler idling for a next request (cfq's
                // slice_idle, anticipation) would hold the rest back for nothing, and the run
                // past its runtime or its stop.
                driver.reactor.force_dispatch()?;
            }
            let wake = issuers.iter().filter(|s| !s.done).filter_map(|s| s.sleeping_until).min();
            // Look again at least every 100 ms: for the stop flag, and for issuers whose
            // runtime passed while they waited (the run then stops waiting for idling).
            let check = now + Duration::from_millis(100);
            let wake = Some(wake.map_or(check, |at| at.min(check)));
            driver.reactor.wait(wake, true, &mut finished)?;
            for done in finished.drain(..) {
                driver.finish(done, &mut issuers, &mut recorder);
            }
            let now = clock.now();
            if now.saturating_since(last_progress) >= Duration::from_secs(1) {
                last_progress = now;
                progress(&Progress {
                    phase: phase.name.clone(),
                    elapsed: now.saturating_since(Instant::ZERO),
                    bytes: driver.bytes,
                    ios: driver.completed,
                });
            }
        }
        let cpu_at_end = process_cpu_ns();
        recorder.record_process_cpu(
            cpu_at_end.0.saturating_sub(cpu_at_start.0),
            cpu_at_end.1.saturating_sub(cpu_at_start.1),
        );
        let mut counters: BTreeMap<&'static str, u64> = BTreeMap::new();
        for state in &issuers {
            for (name, value) in state.issuer.counters() {
                *counters.entry(name).or_default() += value;
            }
        }
        for (&name, &value) in &counters {
            recorder.add_counter(name, value);
        }
        counters_by_phase.push(counters);
        let mut measured = recorder.finish();
        fio_figures_of_live_phase(&mut measured, unix_ns_at_zero);
        phases.push(measured);
        if interrupted {
            break;
        }
    }
    if !interrupted {
        driver.verify_written()?;
    }
    let mut run = driver.report(label, settings, options, phases, fallback.as_deref());
    if interrupted {
        run.partial = true;
        run.partial_reason = Some(match &driver.stopping_error {
            Some(what) => format!("stopped at the first failed I/O: {what}"),
            None => STOPPED.to_owned(),
        });
    }
    Ok(LiveRun {
        run,
        verify: driver.verify,
        interrupted,
        io_errors: driver.io_errors,
        backend: driver.reactor.backend_name(),
        fallback,
    })
}

/// The run's state besides the issuers.
struct Driver<'t> {
    reactor: Reactors,
    /// The first target (the only one unless a job file names several).
    target: &'t Target,
    /// Every target, by the workload's device index (`Place::Device(i)`).
    targets: &'t [Target],
    pool: BufferPool,
    /// The backend's registered-buffer index of each pool buffer seen, by address.
    registered: BTreeMap<usize, Option<u16>>,
    ios: Vec<Option<LiveIo>>,
    free: Vec<usize>,
    generations: Option<Generations>,
    verify: Option<VerifySummary>,
    io_errors: (u64, Option<String>),
    continue_on_error: ContinueOnError,
    /// The failed I/O that stops the run (one `continue_on_error` does not cover).
    stopping_error: Option<String>,
    bytes: u64,
    completed: u64,
}

impl Driver<'_> {
    /// Polls one issuer if it is due, submitting what it asks for.
    fn poll_issuer(
        &mut self,
        index: usize,
        state: &mut IssuerState,
        now: Instant,
        stonewall: bool,
        recorder: &mut PhaseRecorder,
    ) -> Result<(), LiveError> {
        if state.done {
            return Ok(());
        }
        let due = state.sleeping_until.is_some_and(|at| at <= now);
        if !state.wants_poll && !due {
            return Ok(());
        }
        state.wants_poll = false;
        state.sleeping_until = None;
        loop {
            match state.issuer.poll(now) {
                Poll::Submit(io) => {
                    self.submit(index, state.issuer.as_ref(), io, now, recorder)?;
                }
                Poll::Sleep { until } => {
                    state.sleeping_until = Some(until);
                    return Ok(());
                }
                Poll::Wait => return Ok(()),
                Poll::Done => {
                    state.done = true;
                    if stonewall {
                        recorder.stonewall(now);
                    }
                    recorder.extend_to(now);
                    return Ok(());
                }
            }
        }
    }

    /// Checks `io` against the target and hands it to the reactor.
    fn submit(
        &mut self,
        issuer: usize,
        owner: &dyn Issuer,
        io: Io,
        now: Instant,
        recorder: &mut PhaseRecorder,
    ) -> Result<(), LiveError> {
        let bad = |problem: String| LiveError::BadIo(format!("{}: {problem}", owner.name()));
        let target_index = match io.place {
            Place::Device(index) if index < self.targets.len() => index,
            _ => return Err(bad("live runs address each target as one device".into())),
        };
        let target = &self.targets[target_index];
        let op = match io.kind {
            IoKind::Read => IoOp::Read,
            IoKind::Write => IoOp::Write,
            IoKind::Sync => IoOp::Flush,
            IoKind::Discard | IoKind::DropCaches => {
                return Err(bad(format!("{:?} is not supported by live runs", io.kind)));
            }
        };
        if !io.direct && op != IoOp::Flush {
            return Err(bad(
                "buffered I/O (direct=0) needs the page cache: set direct=1, or run it with \
                 `elevator sim`"
                    .into(),
            ));
        }
        if op == IoOp::Write && !target.writable() {
            return Err(bad(format!(
                "a write to {}, which was opened read-only",
                target.describe()
            )));
        }
        let align = target.align_bytes();
        let len = io.size_bytes;
        if op != IoOp::Flush {
            if io.offset_bytes % align != 0 || len % align != 0 || len == 0 {
                return Err(bad(format!(
                    "an I/O of {len} bytes at byte {} is not a multiple of the target's \
                     {align}-byte O_DIRECT alignment (use block sizes and offsets in multiples \
                     of {align})",
                    io.offset_bytes
                )));
            }
            if io.offset_bytes + len > target.size_bytes() {
                return Err(bad(format!(
                    "an I/O at byte {} of {len} bytes runs past the end of {} ({} bytes)",
                    io.offset_bytes,
                    target.describe(),
                    target.size_bytes()
                )));
            }
        }
        let mut buf = (op != IoOp::Flush).then(|| self.pool.take(len as usize));
        let mut expected = Vec::new();
        if let (Some(generations), Some(buf)) = (&mut self.generations, &mut buf) {
            let blocks = len as usize / VERIFY_BLOCK_BYTES;
            match op {
                IoOp::Write => {
                    let generation = generations.write(io.offset_bytes, io.offset_bytes + len);
                    verify::stamp(buf.as_mut_slice(), io.offset_bytes, generation);
                    if let Some(summary) = &mut self.verify {
                        summary.blocks_written += blocks as u64;
                    }
                }
                IoOp::Read => {
                    expected = (0..blocks)
                        .map(|block| {
                            generations
                                .expected(io.offset_bytes + (block * VERIFY_BLOCK_BYTES) as u64)
                        })
                        .collect();
                }
                IoOp::Flush => {}
            }
        }
        let (ptr, buf_len) =
            buf.as_mut().map_or((std::ptr::null_mut(), 0), |b| (b.as_mut_ptr(), b.len()));
        // The pool's buffers live, at their addresses, for the whole run (it never frees
        // one): each is registered with the backend once, the first time it is used.
        let buffer = match &buf {
            Some(b) => {
                let reactor = &mut self.reactor;
                *self
                    .registered
                    .entry(ptr as usize)
                    .or_insert_with(|| reactor.register_buffer(ptr, b.capacity()))
            }
            None => None,
        };
        let key = match self.free.pop() {
            Some(key) => key,
            None => {
                self.ios.push(None);
                self.ios.len() - 1
            }
        };
        // fio's figures by direction and its logs' offsets (elevator_report::fio).
        if let Some(direction) = fio_direction(io.kind) {
            recorder.record_submit(issuer, io.id.0, direction, io.offset_bytes, now);
        }
        self.ios[key] = Some(LiveIo { issuer, io, buf, expected });
        self.reactor.submit(
            target_index,
            IoRequest {
                key: key as u64,
                op,
                offset: io.offset_bytes,
                len: buf_len,
                ptr,
                process: owner.process(),
                priority: owner.priority(),
                flags: io.flags,
                buffer,
            },
        )
    }

    /// fio's verify phase (`do_verify`): reads back every block the run wrote and checks it
    /// holds the last write's stamp, so that a run that writes without reading verifies too.
    /// Plain positional reads after the run, outside the queue and the report's figures.
    fn verify_written(&mut self) -> Result<(), LiveError> {
        let (Some(generations), Some(summary)) = (&self.generations, &mut self.verify) else {
            return Ok(());
        };
        const CHUNK_BYTES: u64 = 1 << 20;
        let mut buf = AlignedBuf::zeroed(CHUNK_BYTES as usize);
        for (start, end) in generations.written() {
            let mut offset = start;
            while offset < end {
                let len = (end - offset).min(CHUNK_BYTES) as usize;
                let chunk = &mut buf.as_mut_slice()[..len];
                let mut done = 0;
                while done < len {
                    let read = rustix::io::pread(
                        self.target.fd(),
                        &mut chunk[done..],
                        offset + done as u64,
                    )
                    .map_err(|e| {
                        LiveError::io(self.target.path(), "reading back for verify", e.into())
                    })?;
                    if read == 0 {
                        break;
                    }
                    done += read;
                }
                let expected: Vec<verify::Expect> = (0..done / VERIFY_BLOCK_BYTES)
                    .map(|block| generations.expected(offset + (block * VERIFY_BLOCK_BYTES) as u64))
                    .collect();
                let (mismatches, checked) = verify::check_read(&chunk[..done], offset, &expected);
                summary.blocks_checked += checked;
                summary.mismatches += mismatches.len() as u64;
                let room = MISMATCH_EXAMPLES.saturating_sub(summary.examples.len());
                summary.examples.extend(mismatches.into_iter().take(room));
                offset += len as u64;
            }
        }
        Ok(())
    }

    /// Accounts a finished I/O and tells its issuer.
    fn finish(
        &mut self,
        done: IoFinished,
        issuers: &mut [IssuerState],
        recorder: &mut PhaseRecorder,
    ) {
        let key = done.key as usize;
        let live = self.ios[key].take().expect("a live I/O");
        self.free.push(key);
        if let Err(code) = done.result {
            let what = || {
                format!(
                    "{} of {} bytes at byte {}: {}",
                    live.io.kind.name(),
                    live.io.size_bytes,
                    live.io.offset_bytes,
                    Reactor::error_of(code)
                )
            };
            self.io_errors.0 += 1;
            if self.io_errors.1.is_none() {
                self.io_errors.1 = Some(what());
            }
            let direction = match live.io.kind {
                IoKind::Read => ErrorDirection::Read,
                IoKind::Write => ErrorDirection::Write,
                _ => ErrorDirection::Other,
            };
            if !self.continue_on_error.tolerates(live.io.kind) && self.stopping_error.is_none() {
                self.stopping_error = Some(what());
            }
            // A failed operation moves nothing: it is an error, never an operation or a
            // latency sample.
            recorder.record_error(live.issuer, direction, done.completed, what);
        }
        if let (Some(summary), Some(buf), Ok(_)) = (&mut self.verify, &live.buf, done.result)
            && live.io.kind == IoKind::Read
        {
            let (mismatches, checked) =
                verify::check_read(buf.as_slice(), live.io.offset_bytes, &live.expected);
            summary.blocks_checked += checked;
            summary.blocks_unknown += live.expected.len() as u64 - checked;
            summary.mismatches += mismatches.len() as u64;
            let room = MISMATCH_EXAMPLES.saturating_sub(summary.examples.len());
            summary.examples.extend(mismatches.into_iter().take(room));
        }
        if let Some(buf) = live.buf {
            self.pool.give(buf);
        }
        if let Ok(bytes) = done.result {
            self.bytes += bytes as u64;
            self.completed += 1;
            let (id, bytes) = (live.io.id.0, bytes as u64);
            recorder.record_io(live.issuer, id, bytes, done.submitted, done.completed);
        }
        let state = &mut issuers[live.issuer];
        state.issuer.complete(done.completed, live.io.id);
        state.wants_poll = true;
    }

    fn report(
        &self,
        label: &str,
        settings: &[(String, String)],
        options: &RunOptions,
        phases: Vec<elevator_report::Phase>,
        fallback: Option<&str>,
    ) -> Run {
        let engine = &options.engine;
        let mut config = BTreeMap::new();
        let mut set = |key: &str, value: String| {
            config.insert(key.to_owned(), value);
        };
        set("live.backend", self.reactor.backend_name().to_owned());
        if let Some(reason) = fallback {
            set("live.fallback", reason.to_owned());
        }
        set("live.seed", options.seed.to_string());
        set("live.verify", u8::from(options.verify).to_string());
        // Several targets: each key lists them in device order, `:`-separated as fio's
        // `filename` lists (the description, which may hold `:`, by `; `).
        let each = |value: &dyn Fn(&Target) -> String, separator: &str| {
            self.targets.iter().map(value).collect::<Vec<_>>().join(separator)
        };
        let device = each(&|t| t.path().display().to_string(), ":");
        set("target.path", device.clone());
        set("target.description", each(&Target::describe, "; "));
        set("target.size_bytes", each(&|t| t.size_bytes().to_string(), ":"));
        set("target.align_bytes", each(&|t| t.align_bytes().to_string(), ":"));
        set("queue.depth", engine.depth.to_string());
        set("queue.nr_requests", engine.nr_requests.to_string());
        set("queue.max_sectors_kb", engine.max_sectors_kb.to_string());
        for (key, value) in engine.scheduler.resolved() {
            set(&format!("scheduler.{key}"), value.to_string());
        }
        for (key, value) in settings {
            set(&format!("workload.{key}"), value.clone());
        }
        // Every target's queue adds in, as the simulator adds its devices' queues.
        let mut scheduler_stats = SchedulerStats::default();
        let mut queue_stats = ReportQueueStats::default();
        let mut seek_distance_sectors = 0;
        let mut reactor = crate::ReactorStats::default();
        for part in self.reactor.all() {
            let stats = part.queue_stats();
            scheduler_stats.add_queue(&stats, &part.queue().scheduler().counters());
            queue_stats.add_queue(&stats);
            seek_distance_sectors += stats.seek_distance_sectors;
            let counts = part.stats();
            reactor.transfers += counts.transfers;
            reactor.short_transfers += counts.short_transfers;
            reactor.failed_transfers += counts.failed_transfers;
            reactor.parked_bios += counts.parked_bios;
            reactor.timer_wakeups += counts.timer_wakeups;
            reactor.busy_ns += counts.busy_ns;
            reactor.injected_failures += counts.injected_failures;
            reactor.injected_delays += counts.injected_delays;
        }
        let extra: BTreeMap<String, u64> = [
            ("short_transfers", reactor.short_transfers),
            ("failed_transfers", reactor.failed_transfers),
            ("parked_bios", reactor.parked_bios),
            ("timer_wakeups", reactor.timer_wakeups),
            ("injected_failures", reactor.injected_failures),
            ("injected_delays", reactor.injected_delays),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        Run {
            mode: Mode::Live,
            experiment: None,
            device,
            workload: label.to_owned(),
            scheduler: engine.scheduler.to_string(),
            config,
            phases,
            scheduler_stats,
            queue_stats,
            partial: false,
            partial_reason: None,
            host_cpu: None,
            dispatches: None,
            device_stats: DeviceStats {
                requests: reactor.transfers,
                busy_ns: reactor.busy_ns,
                seek_distance_sectors,
                extra,
            },
            host_stats: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the I/Os in flight a default run sizes its queue for are iodepth × numjobs summed
    // over every job (one job, or each job of an fio job file with its own keys and the
    // global ones), that fio's defaults count (iodepth 1, numjobs 1), and that a workload
    // without an iodepth gives none (so the fixed defaults apply).
    #[test]
    fn the_workload_iodepth_adds_every_jobs_iodepth_times_numjobs() {
        let parse = |text: &str| WorkloadSpec::parse(text).unwrap();
        assert_eq!(workload_iodepth(&parse("job:rw=randread,iodepth=64,numjobs=2")), Some(128));
        assert_eq!(workload_iodepth(&parse("job:rw=randread,iodepth=16")), Some(16));
        assert_eq!(workload_iodepth(&parse("job:rw=randread")), Some(1));
        assert_eq!(workload_iodepth(&parse("dd:mode=read,count=10")), None);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.fio");
        std::fs::write(
            &path,
            "[global]\nrw=randread\ndirect=1\nsize=1m\niodepth=4\n\
             [a]\niodepth=8\nnumjobs=2\n[b]\n",
        )
        .unwrap();
        let file = WorkloadSpec::parse_fio_file(path.to_str().unwrap()).unwrap();
        assert_eq!(workload_iodepth(&file), Some(8 * 2 + 4));
    }

    // Proves the sized defaults take every I/O of the workload at once and keep a request
    // pool of twice the depth, never below the fixed default, and that an unknown workload
    // keeps the fixed defaults.
    #[test]
    fn sized_engine_options_fit_the_workload() {
        let fixed = EngineOptions::default();
        let sized = EngineOptions::sized_for(Some(128));
        assert_eq!((sized.depth, sized.nr_requests), (128, 256));
        let shallow = EngineOptions::sized_for(Some(1));
        assert_eq!((shallow.depth, shallow.nr_requests), (1, fixed.nr_requests));
        let unknown = EngineOptions::sized_for(None);
        assert_eq!((unknown.depth, unknown.nr_requests), (fixed.depth, fixed.nr_requests));
        let huge = EngineOptions::sized_for(Some(u32::MAX));
        assert_eq!(huge.depth, crate::engine::SIZED_DEPTH_LIMIT);
        assert!(huge.queue(true).is_ok(), "the largest sized queue is a valid one");
    }

    // Proves a run's depth and pool: each given one is used; a depth given alone sizes the
    // pool from that depth (so a deep --depth is not throttled by a pool sized for a shallow
    // workload); nothing given sizes both from the workload.
    #[test]
    fn depth_and_pool_take_what_is_given_and_size_the_rest() {
        assert_eq!(EngineOptions::depth_and_pool(Some(128), None, None), (128, 256));
        assert_eq!(EngineOptions::depth_and_pool(Some(4), Some(512), None), (512, 1024));
        assert_eq!(EngineOptions::depth_and_pool(Some(128), None, Some(64)), (128, 64));
        assert_eq!(EngineOptions::depth_and_pool(Some(128), Some(8), Some(32)), (8, 32));
    }

    // Proves a live phase's fio figures are dated by the wall clock and carry the process's
    // CPU shared by I/Os: two jobs that completed 1 and 3 reads get a quarter and three
    // quarters of the phase's user and system time, their start and every logged sample move
    // by the wall clock at the engine's zero, and the measured latencies and run time do not
    // change.
    #[test]
    fn live_jobs_are_dated_by_the_wall_clock_and_share_the_process_cpu() {
        let mut recorder =
            PhaseRecorder::new("p", Instant::from_millis(5), vec!["a".into(), "b".into()]);
        recorder.keep_io_samples();
        let mut id = 0;
        for (issuer, count) in [(0, 1), (1, 3)] {
            for _ in 0..count {
                id += 1;
                let at = Instant::from_millis(5 + id);
                recorder.record_submit(issuer, id, FioDirection::Read, 4096 * id, at);
                recorder.record_io(issuer, id, 4096, at, at + Duration::from_micros(100));
            }
        }
        recorder.record_process_cpu(400_000, 800_000);
        let mut phase = recorder.finish();
        let before = phase.clone();
        let unix_ns_at_zero = 1_800_000_000_000_000_000;
        fio_figures_of_live_phase(&mut phase, unix_ns_at_zero);
        let jobs: Vec<_> = phase.issuers.iter().map(|i| i.fio.as_deref().unwrap()).collect();
        assert_eq!((jobs[0].usr_ns, jobs[0].sys_ns), (100_000, 200_000));
        assert_eq!((jobs[1].usr_ns, jobs[1].sys_ns), (300_000, 600_000));
        for (job, old) in jobs.iter().zip(&before.issuers) {
            let old = old.fio.as_deref().unwrap();
            assert_eq!(job.start_ns, 5_000_000 + unix_ns_at_zero);
            assert_eq!(job.job_runtime_ms, old.job_runtime_ms);
            let samples = job.io_samples.as_ref().unwrap();
            let old_samples = old.io_samples.as_ref().unwrap();
            assert_eq!(samples.len(), old_samples.len());
            for (new, old) in samples.iter().zip(old_samples) {
                assert_eq!(new.completed_ns, old.completed_ns + unix_ns_at_zero);
                assert_eq!(new.latency_ns, 100_000);
            }
        }
    }
}
