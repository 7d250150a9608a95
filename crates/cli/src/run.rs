//! `elevator run`: a workload live on a real file or block device, once per scheduler.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use elevator_core::units::parse_size_bytes;
use elevator_live::run::{LiveRun, Progress, RunOptions, run_workload};
use elevator_live::{BackendChoice, EngineOptions, Target, TargetOptions};
use elevator_report::Report;
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_workload::WorkloadSpec;
use indicatif::{ProgressBar, ProgressStyle};

use crate::CheckFailed;
use crate::args::RunArgs;
use crate::sim::{output_format, write_report};

/// The workload `elevator run` uses when none is given: two processes reading 4 KiB blocks at
/// random, 16 at a time each, for five seconds.
pub(crate) const DEFAULT_WORKLOAD: &str =
    "job:rw=randread,bs=4k,iodepth=16,numjobs=2,runtime=5s,time_based=1";
/// The target when none is given: a scratch file on a disk-backed filesystem.
pub(crate) const DEFAULT_TARGET: &str = "/var/tmp/elevator.scratch";
/// The size of a scratch file created without --size.
const DEFAULT_SCRATCH_BYTES: u64 = 1 << 30;
/// Exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub(crate) const EXIT_INTERRUPTED: u8 = 130;
/// Progress is shown for runs that last longer than this.
const PROGRESS_AFTER_SECS: u64 = 3;

/// The run was stopped by Ctrl-C; its partial report was printed.
#[derive(Debug)]
pub(crate) struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// Says something to the person at the terminal, on stderr.
fn note(text: &str) {
    #[allow(clippy::print_stderr)]
    {
        eprintln!("elevator: {text}");
    }
}

pub(crate) fn run_command(args: &RunArgs, stdout: &mut dyn Write) -> Result<()> {
    let workload = WorkloadSpec::parse(&args.workload)?;
    let schedulers: Vec<SchedulerSpec> = if args.schedulers.is_empty() {
        SchedulerKind::ALL.iter().map(|&kind| SchedulerSpec::new(kind)).collect()
    } else {
        args.schedulers.iter().map(|text| SchedulerSpec::parse(text)).collect::<Result<_, _>>()?
    };
    let size = args
        .size
        .as_deref()
        .map(|text| {
            parse_size_bytes(text).map_err(|problem| {
                anyhow::anyhow!("--size: {problem} (accepted: a size such as 256m or 4g)")
            })
        })
        .transpose()?;
    let path = args.target.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_TARGET));
    let missing = !path.exists();
    let options = TargetOptions {
        write: workload.may_write(),
        force: args.io.force,
        create_bytes: if missing { Some(size.unwrap_or(DEFAULT_SCRATCH_BYTES)) } else { size },
    };
    let target = Target::open(&path, &options)?;
    if target.created() {
        note(&format!("created {} (later runs reuse it; delete it when done)", target.describe()));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = Arc::clone(&stop);
    ctrlc::set_handler(move || handler_stop.store(true, Ordering::SeqCst))
        .context("installing the Ctrl-C handler")?;
    let backend = BackendChoice::from(args.io.engine);
    let mut report = Report::new(args.io.seed, env!("CARGO_PKG_VERSION"));
    let mut failures = Vec::new();
    let mut interrupted = false;
    let mut said_fallback = false;
    for scheduler in &schedulers {
        let options = RunOptions {
            engine: EngineOptions {
                scheduler: scheduler.clone(),
                depth: args.depth,
                nr_requests: args.nr_requests,
                max_sectors_kb: args.max_sectors_kb,
                backend,
                ring_entries: None,
            },
            verify: args.verify,
            seed: args.io.seed,
            stop: Some(Arc::clone(&stop)),
        };
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("a valid template"));
        let mut progress = |now: &Progress| {
            if now.elapsed.as_nanos() >= PROGRESS_AFTER_SECS * 1_000_000_000 {
                let seconds = now.elapsed.as_secs_f64();
                bar.set_message(format!(
                    "{scheduler} {}: {:.1} s, {:.1} MB, {:.0} IOPS",
                    now.phase,
                    seconds,
                    now.bytes as f64 / 1e6,
                    now.ios as f64 / seconds
                ));
                bar.tick();
            }
        };
        let live =
            run_workload(&target, &workload, &options, &mut progress).with_context(|| {
                format!("running {workload} under {scheduler} on {}", path.display())
            })?;
        bar.finish_and_clear();
        if let (Some(reason), false) = (&live.fallback, said_fallback) {
            note(reason);
            said_fallback = true;
        }
        failures.extend(check(&live, scheduler));
        interrupted |= live.interrupted;
        report.runs.push(live.run);
        if interrupted {
            break;
        }
    }
    let format = output_format(args.io.report.format, args.io.report.output.as_deref());
    write_report(&report, format, args.io.report.output.as_deref(), stdout)?;
    if interrupted {
        note("interrupted: stopped issuing, waited for I/O in flight; the report is partial");
        return Err(Interrupted.into());
    }
    if !failures.is_empty() {
        return Err(CheckFailed(failures.join("\n")).into());
    }
    Ok(())
}

/// What went wrong in a run that completed: verify mismatches and failed I/O.
fn check(live: &LiveRun, scheduler: &SchedulerSpec) -> Vec<String> {
    let mut failures = Vec::new();
    if let Some(verify) = &live.verify {
        if verify.mismatches > 0 {
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
    if let (count @ 1.., Some(first)) = &live.io_errors {
        failures.push(format!("{count} I/Os failed under {scheduler}; the first: {first}"));
    }
    failures
}
