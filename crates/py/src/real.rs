//! Real I/O from Python: `elevator.live` (the live engine, `elevator run`) and
//! `elevator.kernel_compare` (the kernel's own schedulers, `elevator kernel compare`).
//!
//! Both follow their command's rules and say its messages: targets are opened under the
//! write-safety rules of DESIGN.md §7 (`elevator_live::Target::open`: a device that is
//! mounted, partitioned, held or carries a signature, or a file elevator did not create, is
//! written only with `force=True`); a kernel comparison snapshots the device's queue first
//! and puts it back afterwards, also when the run fails or is interrupted
//! ([`RestoreGuard`], which restores when dropped).
//!
//! The GIL is released while the I/O runs. Ctrl-C (Python's SIGINT handler) is looked for as
//! the run reports progress: it stops issuing, the I/O in flight completes, a kernel device is
//! restored, and `KeyboardInterrupt` is raised.
//!
//! # Deviations
//!
//! * The workload is a spec or an fio job file whose jobs run on the one target given; a job
//!   file naming its own targets (`filename=` of several devices) is `elevator run FILE` /
//!   `elevator kernel compare FILE`'s, not this.
//! * `runtime=` (not an option of the commands) stops each scheduler's run after that wall
//!   time, as Ctrl-C would: the run is `partial`, `partial_reason` says so.
//! * A failed I/O or verify mismatch, which makes the commands exit 1 after writing the
//!   report, raises `ElevatorError` with the command's message; the report is not returned.
//! * The commands' stderr notes (a file created, the fallback from io_uring to threads, a
//!   tunable the kernel clamped, what was restored) are not printed; the report's `config`
//!   records the backend and fallback.
//! * `--inject`, `--continue-on-error` and `--output-format` (fio's outputs) are not taken.
//! * `interval=` sets the series interval of the whole process (the live recorders read a
//!   process-wide one, elevator_report::series): concurrent live runs from several Python
//!   threads share the last one set.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use elevator_core::{Duration, split_spec_list};
use elevator_kernel::compare::{self, CompareOptions, CompareTarget, KernelScheduler};
use elevator_kernel::{BlockDevice, RestoreGuard, Sysfs};
use elevator_live::passthrough::{CacheDrop, PassthroughOptions};
use elevator_live::run::{
    ContinueOnError, DEFAULT_SCRATCH_BYTES, DEFAULT_SCRATCH_PATH, Progress, RunOptions,
    run_workload_on, workload_target,
};
use elevator_live::{BackendChoice, EngineOptions, Target, TargetOptions};
use elevator_report::{Report, Run};
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_workload::WorkloadSpec;
use pyo3::prelude::*;

/// What `elevator.live` takes (the options of `elevator run`).
#[derive(Debug)]
pub(crate) struct LiveArgs {
    pub(crate) target: Option<PathBuf>,
    pub(crate) workload: String,
    pub(crate) schedulers: Vec<String>,
    pub(crate) runtime: Option<String>,
    pub(crate) seed: u64,
    pub(crate) size: Option<String>,
    pub(crate) force: bool,
    pub(crate) verify: bool,
    pub(crate) depth: Option<u32>,
    pub(crate) nr_requests: Option<u32>,
    pub(crate) max_sectors_kb: Option<u32>,
    pub(crate) engine: String,
    pub(crate) interval: Option<String>,
}

/// What `elevator.kernel_compare` takes (the options of `elevator kernel compare`).
#[derive(Debug)]
pub(crate) struct KernelArgs {
    pub(crate) device: String,
    pub(crate) workload: String,
    pub(crate) schedulers: Vec<String>,
    pub(crate) runtime: Option<String>,
    pub(crate) seed: u64,
    pub(crate) force: bool,
    pub(crate) engine: String,
    pub(crate) drop_caches: bool,
    pub(crate) interval: Option<String>,
}

/// Why a run ended with an error: the command's message, or Python's pending exception
/// (KeyboardInterrupt) to raise as it is.
pub(crate) enum Failure {
    Message(anyhow::Error),
    Python(PyErr),
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Failure {
        Failure::Message(error)
    }
}

/// Watches a run from inside its progress callback: Python's pending signals (Ctrl-C) and the
/// `runtime` limit both set the run's stop flag.
struct Watch {
    stop: Arc<AtomicBool>,
    runtime: Option<Duration>,
    signal: Option<PyErr>,
    /// The run's elapsed time when signals were last looked for.
    last_check: Option<Duration>,
}

impl Watch {
    fn new(runtime: Option<Duration>) -> Watch {
        Watch { stop: Arc::new(AtomicBool::new(false)), runtime, signal: None, last_check: None }
    }

    /// Called with each progress report (a few times a second).
    fn check(&mut self, progress: &Progress) {
        if self.runtime.is_some_and(|runtime| progress.elapsed >= runtime) {
            self.stop.store(true, Ordering::SeqCst);
        }
        // Taking the GIL costs little, but not at every report: ten times a second is what a
        // Ctrl-C needs.
        let due = self
            .last_check
            .is_none_or(|last| progress.elapsed.saturating_sub(last) >= Duration::from_millis(100));
        if self.signal.is_none() && due {
            self.last_check = Some(progress.elapsed);
            if let Err(error) = Python::attach(|py| py.check_signals()) {
                self.signal = Some(error);
                self.stop.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// A time as the CLI's options take it (a bare number is seconds); `what` names the option.
fn parse_time(what: &str, text: &str) -> Result<Duration> {
    elevator_core::units::parse_duration(text, 1_000_000_000)
        .map_err(|error| anyhow::anyhow!("invalid value '{text}' for '{what}': {error}"))
}

/// `runtime=`: a positive time.
fn runtime(text: Option<&str>) -> Result<Option<Duration>> {
    let Some(text) = text else { return Ok(None) };
    let runtime = parse_time("runtime", text)?;
    if runtime.as_nanos() == 0 {
        bail!("invalid value '{text}' for 'runtime': a time above 0 (such as 2s or 500ms)");
    }
    Ok(Some(runtime))
}

/// `--engine`, as clap refuses a bad one.
fn backend(text: &str) -> Result<BackendChoice> {
    BackendChoice::parse(text).ok_or_else(|| {
        anyhow::anyhow!(
            "invalid value '{text}' for '--engine <ENGINE>' [possible values: auto, io-uring, \
             threads]"
        )
    })
}

/// `--interval` for the live recorders (process-wide, see the module's deviations).
fn set_interval(text: Option<&str>) -> Result<()> {
    let interval = crate::series_interval(text)?;
    elevator_report::series::set_interval(interval).map_err(anyhow::Error::msg)
}

/// A job file's jobs on `target` (device 0, what the engines address), as the commands'
/// `fio_live::on_target`; other workloads unchanged.
fn on_target(spec: WorkloadSpec, target: &Target) -> WorkloadSpec {
    spec.fio_on_one_device(&workload_target(target).name).unwrap_or(spec)
}

/// The command's message for a run whose I/O failed (`plan::io_error_failure`): under fio's
/// default `continue_on_error=none`, which these runs use, every failed I/O fails the run.
fn io_failure(run: &Run, io_errors: &(u64, Option<String>)) -> Option<String> {
    let (count @ 1.., Some(first)) = io_errors else { return None };
    Some(format!("{count} I/Os failed under {}; the first: {first}", run.scheduler))
}

/// `elevator run` from Python: `workload` live on `target` (default elevator's scratch file)
/// under each scheduler.
pub(crate) fn live(args: &LiveArgs) -> Result<Report, Failure> {
    // Checked before anything is opened, as clap checks the options first.
    set_interval(args.interval.as_deref())?;
    let runtime = runtime(args.runtime.as_deref())?;
    let backend = backend(&args.engine)?;
    let size = args
        .size
        .as_deref()
        .map(|text| {
            elevator_core::units::parse_size_bytes(text).map_err(|problem| {
                anyhow::anyhow!("--size: {problem} (accepted: a size such as 256m or 4g)")
            })
        })
        .transpose()?;
    let spec = crate::workload_spec(&args.workload, None, None)?;
    let schedulers: Vec<SchedulerSpec> = if args.schedulers.is_empty() {
        SchedulerKind::ALL.iter().map(|&kind| SchedulerSpec::new(kind)).collect()
    } else {
        let texts = split_spec_list("scheduler", &args.schedulers).map_err(anyhow::Error::from)?;
        texts
            .iter()
            .map(|text| SchedulerSpec::parse(text))
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::from)?
    };
    // `run::target_options`: the given path or the scratch file, created when missing.
    let path = args.target.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_SCRATCH_PATH));
    let create_bytes =
        if path.exists() { size } else { Some(size.unwrap_or(DEFAULT_SCRATCH_BYTES)) };
    let options =
        TargetOptions { write: spec.may_write(), force: args.force, create_bytes, stop: None };
    let target = Target::open(&path, &options).map_err(anyhow::Error::from)?;
    let workload = on_target(spec, &target);
    if args.verify && !workload.may_write() && !target.is_scratch() {
        return Err(anyhow::anyhow!(
            "--verify on {} needs a workload that writes (its content before the run is \
             unknown, so reads alone check nothing); `{workload}` only reads",
            target.describe()
        )
        .into());
    }
    let planned = vec![workload_target(&target)];
    // Sized from the workload unless given, as `elevator run` (issue 20).
    let (depth, nr_requests) = EngineOptions::depth_and_pool(
        elevator_live::run::workload_iodepth(&workload),
        args.depth,
        args.nr_requests,
    );
    let mut report = Report::new(args.seed, crate::VERSION);
    for scheduler in &schedulers {
        let mut watch = Watch::new(runtime);
        let options = RunOptions {
            engine: EngineOptions {
                scheduler: scheduler.clone(),
                depth,
                nr_requests,
                max_sectors_kb: args
                    .max_sectors_kb
                    .unwrap_or(EngineOptions::default().max_sectors_kb),
                backend,
                ring_entries: None,
                faults: Vec::new(),
            },
            verify: args.verify,
            seed: args.seed,
            stop: Some(Arc::clone(&watch.stop)),
            continue_on_error: ContinueOnError::None,
        };
        let mut progress = |now: &Progress| watch.check(now);
        let live = run_workload_on(
            std::slice::from_ref(&target),
            &planned,
            &workload,
            &options,
            &mut progress,
        )
        .with_context(|| format!("running {workload} under {scheduler} on {}", path.display()))?;
        if let Some(signal) = watch.signal.take() {
            return Err(Failure::Python(signal));
        }
        if let Some(verify) = &live.verify {
            if verify.blocks_checked == 0 && !live.interrupted {
                return Err(anyhow::anyhow!(
                    "verify under {scheduler}: no block was read back and checked ({} \
                     written): the workload must read what it writes",
                    verify.blocks_written
                )
                .into());
            }
            if verify.mismatches > 0 {
                let examples: Vec<String> =
                    verify.examples.iter().map(|mismatch| format!("  {mismatch}")).collect();
                return Err(anyhow::anyhow!(
                    "verify under {scheduler}: {} of {} blocks read back wrong:\n{}",
                    verify.mismatches,
                    verify.blocks_checked,
                    examples.join("\n")
                )
                .into());
            }
        }
        if let Some(failure) = io_failure(&live.run, &live.io_errors) {
            return Err(anyhow::anyhow!(failure).into());
        }
        let mut run = live.run;
        if run.partial && live.interrupted {
            run.partial_reason = Some(format!(
                "stopped after runtime={} (elevator.live)",
                args.runtime.as_deref().unwrap_or_default()
            ));
        }
        report.runs.push(run);
    }
    Ok(report)
}

/// `elevator kernel compare DEV -w WORKLOAD -s ...` from Python: the device's queue is
/// snapshotted, switched to each scheduler in turn, and put back.
pub(crate) fn kernel_compare(args: &KernelArgs) -> Result<Report, Failure> {
    set_interval(args.interval.as_deref())?;
    let runtime = runtime(args.runtime.as_deref())?;
    let backend = backend(&args.engine)?;
    let sysfs = Sysfs::system();
    let spec = crate::workload_spec(&args.workload, None, None)?;
    let device: BlockDevice = sysfs.device(&args.device).map_err(anyhow::Error::from)?;
    let path = match &device.partition {
        Some(partition) => PathBuf::from("/dev").join(partition),
        None => device.dev_path(),
    };
    let options = TargetOptions {
        write: spec.may_write(),
        force: args.force,
        create_bytes: None,
        stop: None,
    };
    let target = Target::open(&path, &options).map_err(anyhow::Error::from)?;
    let workload = on_target(spec, &target);
    let planned = workload_target(&target);
    let schedulers: Vec<KernelScheduler> = split_spec_list("scheduler", &args.schedulers)
        .map_err(anyhow::Error::from)?
        .iter()
        .map(|text| KernelScheduler::parse(&device.name, text))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::from)?;
    compare::validate(&sysfs, &device, &schedulers).map_err(anyhow::Error::from)?;
    // Restores the queue when dropped: also on an error or a panic below.
    let guard = RestoreGuard::new(&sysfs, &device).map_err(anyhow::Error::from)?;
    let passthrough = |stop: &Arc<AtomicBool>| PassthroughOptions {
        backend,
        cache_drop: if args.drop_caches { CacheDrop::System } else { CacheDrop::Target },
        stop: Some(Arc::clone(stop)),
        continue_on_error: ContinueOnError::None,
        keep_io_samples: elevator_live::run::fio_io_samples(&workload),
        ..PassthroughOptions::default()
    };
    // Every scheduler the device offers when none is named, as the command.
    let all =
        CompareOptions { schedulers, seed: args.seed, passthrough: PassthroughOptions::default() };
    let schedulers =
        compare::schedulers_to_run(&sysfs, &device, &all).map_err(anyhow::Error::from)?;
    let devices = [(device.clone(), &guard)];
    let targets = [CompareTarget { target: &target, planned }];
    let mut runs = Vec::new();
    let mut failure: Option<Failure> = None;
    // One scheduler at a time: `runtime` and its stop flag are each run's (`compare_on` ends
    // the comparison at a stopped run).
    for scheduler in schedulers {
        let mut watch = Watch::new(runtime);
        let options = CompareOptions {
            schedulers: vec![scheduler],
            seed: args.seed,
            passthrough: passthrough(&watch.stop),
        };
        let mut progress = |now: &Progress| watch.check(now);
        let result = compare::compare_on(
            &sysfs,
            &devices,
            &targets,
            &workload,
            &options,
            &mut |_, _| {},
            &mut progress,
        );
        match (watch.signal.take(), result) {
            (Some(signal), _) => failure = Some(Failure::Python(signal)),
            (None, Err(error)) => {
                failure = Some(Failure::Message(anyhow::Error::from(error).context(format!(
                    "comparing kernel schedulers on {} with {workload}",
                    device.dev_path().display()
                ))));
            }
            (None, Ok(done)) => runs.extend(done),
        }
        if failure.is_some() {
            break;
        }
    }
    drop(devices);
    let restored = guard.restore();
    if let Some(failure) = failure {
        return Err(failure);
    }
    restored
        .map_err(anyhow::Error::from)
        .with_context(|| format!("restoring {device}'s scheduler settings"))?;
    let mut report = Report::new(args.seed, crate::VERSION);
    for run in runs {
        if let Some(failure) = io_failure(&run.run, &run.io_errors) {
            return Err(anyhow::anyhow!(failure).into());
        }
        let mut kernel_run = run.run;
        if kernel_run.partial && run.interrupted {
            kernel_run.partial_reason = Some(format!(
                "stopped after runtime={} (elevator.kernel_compare)",
                args.runtime.as_deref().unwrap_or_default()
            ));
        }
        report.runs.push(kernel_run);
    }
    Ok(report)
}
