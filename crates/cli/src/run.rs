//! `elevator run`: a workload live on a real file or block device, once per scheduler.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use elevator_core::units::parse_size_bytes;
use elevator_live::run::{
    ContinueOnError, DEFAULT_SCRATCH_BYTES, DEFAULT_SCRATCH_PATH, LiveRun, Progress, RunOptions,
    run_workload_on, workload_target,
};
use elevator_live::{BackendChoice, EngineOptions, Fault, LiveError, Target, TargetOptions};
use elevator_report::Report;
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_workload::WorkloadSpec;

use crate::args::RunArgs;
use crate::fio_live::{self, LiveMode};
use crate::term::{LiveProgress, StopSignals, note};
use crate::{CheckFailed, Interrupted, plan};

pub(crate) fn run_command(args: &RunArgs, stdout: &mut dyn Write) -> Result<()> {
    let job_path = fio_live::job_file_of(args.job_file.as_deref(), &args.workload);
    // A bad --output-format is refused before anything runs.
    let formats = crate::sim::fio_formats(
        args.output_format.as_deref(),
        args.minimal,
        job_path,
        &args.workload,
    )?;
    // A job file (positional or `-w fio:FILE`) may name the target itself (`filename`).
    let job_file = job_path.map(|path| fio_live::load(path, LiveMode::Run)).transpose()?;
    let workload = match &job_file {
        Some(file) => file.spec.clone(),
        None => WorkloadSpec::parse(&args.workload)?,
    };
    let schedulers = plan::schedulers(&args.schedulers, SchedulerKind::ALL)?;
    let faults = args
        .inject
        .iter()
        .map(|text| Fault::parse(text).with_context(|| format!("--inject {text}")))
        .collect::<Result<Vec<_>>>()?;
    let continue_on_error = plan::continue_on_error(&args.io)?;
    let size = args
        .size
        .as_deref()
        .map(|text| {
            parse_size_bytes(text).map_err(|problem| {
                anyhow::anyhow!("--size: {problem} (accepted: a size such as 256m or 4g)")
            })
        })
        .transpose()?;
    if let Some(file) = job_file.as_ref().filter(|file| args.verify && file.targets.len() > 1) {
        anyhow::bail!("--verify checks one target; the job file names {}", file.targets.len());
    }
    // Installed before the target opens: creating a large scratch file takes a while, and a
    // signal then stops it and removes what was written.
    let signals = StopSignals::install().context("installing the signal handlers")?;
    let stop = Arc::clone(&signals.stop);
    let opened = open_targets(
        job_file.as_ref(),
        args.target.as_deref(),
        size,
        workload.may_write(),
        args.io.force,
        Arc::clone(&stop),
    );
    let (targets, planned, path) = match opened {
        Err(error) if matches!(error.downcast_ref(), Some(LiveError::Interrupted { .. })) => {
            note(&format!("interrupted: {error}"));
            return Err(Interrupted { signal: signals.received() }.into());
        }
        opened => opened?,
    };
    let target = &targets[0];
    // One target: every job's I/O goes there (its own `filename`s or none); several: the
    // jobs keep their names, each a device of `planned`.
    let workload =
        if targets.len() == 1 { fio_live::on_target(&workload, target) } else { workload };
    if args.verify && !workload.may_write() && !target.is_scratch() {
        // A scratch file's content is known (elevator wrote it); a device or file it did not
        // create holds what it holds, and a run that never writes has nothing to check.
        anyhow::bail!(
            "--verify on {} needs a workload that writes (its content before the run is \
             unknown, so reads alone check nothing); `{workload}` only reads",
            target.describe()
        );
    }
    for target in targets.iter().filter(|target| target.created()) {
        note(&format!("created {} (later runs reuse it; delete it when done)", target.describe()));
    }
    let backend = BackendChoice::from(args.io.engine);
    let mut report = Report::new(args.io.seed, env!("CARGO_PKG_VERSION"));
    let mut failures = Vec::new();
    let mut interrupted = false;
    let mut said_fallback = false;
    // Unless given, the queue is sized from the workload so the default run is not throttled
    // by the queue (issue 20).
    let (depth, nr_requests) = EngineOptions::depth_and_pool(
        elevator_live::run::workload_iodepth(&workload),
        args.depth,
        args.nr_requests,
    );
    for scheduler in &schedulers {
        let options = RunOptions {
            engine: EngineOptions {
                scheduler: scheduler.clone(),
                depth,
                nr_requests,
                max_sectors_kb: args.max_sectors_kb,
                backend,
                ring_entries: None,
                faults: faults.clone(),
            },
            verify: args.verify,
            seed: args.io.seed,
            stop: Some(Arc::clone(&stop)),
            continue_on_error,
        };
        let bar = LiveProgress::new();
        let label = scheduler.to_string();
        let mut progress = |now: &Progress| bar.show(&label, now);
        // With several schedulers each run writes its own `write_iolog` file, as in `sim`.
        let tagged;
        let workload = if schedulers.len() > 1 {
            tagged = workload.fio_tagged(&crate::sim::safe_name(&label));
            &tagged
        } else {
            &workload
        };
        let live = run_workload_on(&targets, &planned, workload, &options, &mut progress)
            .with_context(|| format!("running {workload} under {scheduler} on {path}"))?;
        bar.finish();
        if let (Some(reason), false) = (&live.fallback, said_fallback) {
            note(reason);
            said_fallback = true;
        }
        failures.extend(check(&live, scheduler, continue_on_error));
        interrupted |= live.interrupted && signals.received().is_some();
        let mut run = live.run;
        if let Some(reason) = signals.reason().filter(|_| run.partial) {
            run.partial_reason = Some(reason);
        }
        report.runs.push(run);
        if interrupted {
            break;
        }
    }
    let output = args.io.report.output.as_deref();
    let fio_written = match job_path {
        Some(path) => {
            crate::sim::write_fio_report(&report, path, formats.as_deref(), output, stdout)?
        }
        None => false,
    };
    if !fio_written {
        plan::write_report(&report, &args.io.report, stdout)?;
    }
    if interrupted {
        note("interrupted: stopped issuing, waited for I/O in flight; the report is partial");
        return Err(Interrupted { signal: signals.received() }.into());
    }
    if !failures.is_empty() {
        return Err(CheckFailed(failures.join("\n")).into());
    }
    Ok(())
}

/// Opens what a live run does its I/O on, under the write-safety rules (DESIGN.md §7): the
/// one target of [`target_options`], or every target a job file names (`filename` lists,
/// jobs on different files), each created at its jobs' size when it is a missing regular
/// file (`size_bytes`, `--size`, wins). Returns the targets, the devices the workload is
/// planned on (by target index), and the paths for messages (`:`-separated, as fio's lists).
pub(crate) fn open_targets(
    job_file: Option<&fio_live::LiveJobFile>,
    given: Option<&std::path::Path>,
    size_bytes: Option<u64>,
    write: bool,
    force: bool,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Result<(Vec<Target>, Vec<elevator_workload::Target>, String)> {
    let several = job_file.map_or(&[][..], |file| &file.targets[..]);
    if several.is_empty() {
        let (path, options) = target_options(job_file, given, size_bytes, write, force, stop)?;
        let target = Target::open(&path, &options)?;
        let planned = vec![workload_target(&target)];
        return Ok((vec![target], planned, path.display().to_string()));
    }
    if let Some(given) = given {
        anyhow::bail!(
            "the job file names its own targets ({}): the target given on the command line \
             ({}) would be one more; drop it",
            several
                .iter()
                .map(|t| format!("`{}` at {}", t.written, t.at))
                .collect::<Vec<_>>()
                .join(", "),
            given.display()
        );
    }
    let mut targets = Vec::with_capacity(several.len());
    let mut planned = Vec::with_capacity(several.len());
    for named in several {
        let path = PathBuf::from(&named.written);
        let create_bytes = if path.exists() {
            size_bytes
        } else {
            // fio refuses to lay out a file it has no size for (filesetup.c: "you need to
            // specify size="); so does this, rather than guess one.
            let Some(bytes) = size_bytes.or(named.size_bytes) else {
                anyhow::bail!(
                    "fio {}: `{}` does not exist and no job naming it gives `size` (fio's rule \
                     for a file it creates); add size= or --size, or create it",
                    named.at,
                    named.written
                );
            };
            Some(bytes)
        };
        // Opened for writing only when a job naming it may write (and the workload does).
        let write = write && named.writes;
        let options = TargetOptions { write, force, create_bytes, stop: Some(Arc::clone(&stop)) };
        let target = Target::open(&path, &options)
            .with_context(|| format!("fio {}: option: filename={}", named.at, named.written))?;
        planned.push(elevator_workload::Target {
            name: named.device_name().to_owned(),
            capacity_bytes: target.size_bytes(),
            zones: None,
        });
        targets.push(target);
    }
    let paths = several.iter().map(|t| t.written.as_str()).collect::<Vec<_>>().join(":");
    Ok((targets, planned, paths))
}

/// The path a live run opens and how: the job file's `filename` or `given` (they must agree
/// when both are there), else elevator's scratch file. A path that does not exist yet is
/// created at `size_bytes`, else at the job file's largest `size` (fio lays a job's file out
/// at its size), else at the scratch default. `stop` ends a long creation.
pub(crate) fn target_options(
    job_file: Option<&fio_live::LiveJobFile>,
    given: Option<&std::path::Path>,
    size_bytes: Option<u64>,
    write: bool,
    force: bool,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Result<(PathBuf, TargetOptions)> {
    let given = match job_file {
        Some(file) => file.target_path(given)?,
        None => given.map(std::path::Path::to_path_buf),
    };
    let path = given.unwrap_or_else(|| PathBuf::from(DEFAULT_SCRATCH_PATH));
    let create_bytes = if path.exists() {
        size_bytes
    } else {
        let from_file = job_file.and_then(|file| file.size_bytes);
        Some(size_bytes.or(from_file).unwrap_or(DEFAULT_SCRATCH_BYTES))
    };
    Ok((path, TargetOptions { write, force, create_bytes, stop: Some(stop) }))
}

/// What went wrong in a run that completed: verify mismatches and failed I/O.
fn check(
    live: &LiveRun,
    scheduler: &SchedulerSpec,
    continue_on_error: ContinueOnError,
) -> Vec<String> {
    let mut failures = Vec::new();
    if let Some(verify) = &live.verify {
        if verify.blocks_checked == 0 && !live.interrupted {
            failures.push(format!(
                "verify under {scheduler}: no block was read back and checked ({} written): the \
                 workload must read what it writes",
                verify.blocks_written
            ));
        } else if verify.mismatches > 0 && !continue_on_error.tolerates_verify() {
            let examples: Vec<String> =
                verify.examples.iter().map(|mismatch| format!("  {mismatch}")).collect();
            failures.push(format!(
                "verify under {scheduler}: {} of {} blocks read back wrong:\n{}",
                verify.mismatches,
                verify.blocks_checked,
                examples.join("\n")
            ));
        } else {
            note(&format!(
                "verify under {scheduler}: {} blocks written, {} read back and checked, {} \
                 unknown (never written by this run), no mismatch",
                verify.blocks_written, verify.blocks_checked, verify.blocks_unknown
            ));
        }
    }
    failures.extend(plan::io_error_failure(&live.run, &live.io_errors, continue_on_error));
    failures
}

/// `elevator fio` live (`ELEVATOR_FIO_MODE=live`): `job`'s jobs under `scheduler` on the
/// target its `filename` names or `given` (`ELEVATOR_FIO_TARGET`), opened under `elevator
/// run`'s write-safety rules (never forced), with the engine's defaults. Says nothing on
/// stderr (tools that run fio read it, fio-compat.md R6): the report, and why the run failed
/// when an I/O failed (fio's default `continue_on_error=none`), for the caller to say.
pub(crate) fn run_fio_live(
    job: &fio_live::LiveJobFile,
    given: Option<&std::path::Path>,
    scheduler: &SchedulerSpec,
    seed: u64,
) -> Result<(Report, Option<String>)> {
    let workload = &job.spec;
    if given.is_none() && job.filename.is_none() && job.targets.is_empty() {
        anyhow::bail!(
            "ELEVATOR_FIO_MODE=live needs a target: a `filename=` in the jobs or \
             ELEVATOR_FIO_TARGET (a file or a block device)"
        );
    }
    // A signal stops issuing (and a file's creation); the report of what was done is written.
    let signals = StopSignals::install().context("installing the signal handlers")?;
    let stop = Arc::clone(&signals.stop);
    let (targets, planned, path) =
        open_targets(Some(job), given, None, workload.may_write(), false, Arc::clone(&stop))?;
    let workload = match &targets[..] {
        [target] => fio_live::on_target(workload, target),
        _ => workload.clone(),
    };
    let options = RunOptions {
        engine: EngineOptions { scheduler: scheduler.clone(), ..EngineOptions::default() },
        verify: false,
        seed,
        stop: Some(stop),
        continue_on_error: ContinueOnError::None,
    };
    let live = run_workload_on(&targets, &planned, &workload, &options, &mut |_| {})
        .with_context(|| format!("running {workload} under {scheduler} on {path}"))?;
    let mut failure = plan::io_error_failure(&live.run, &live.io_errors, ContinueOnError::None);
    let mut run = live.run;
    if let Some(reason) = signals.reason().filter(|_| run.partial) {
        failure = failure.or_else(|| Some(reason.clone()));
        run.partial_reason = Some(reason);
    }
    let mut report = Report::new(seed, env!("CARGO_PKG_VERSION"));
    report.runs.push(run);
    Ok((report, failure))
}
