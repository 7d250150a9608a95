//! `elevator conform [DEV] -s SCHED[:K=V,...],... -w SPEC|JOBFILE`: each kernel scheduler's
//! decisions on a device captured through its tracepoints ([`elevator_kernel::conform`]),
//! one capture file per scheduler (`DIR/conform-SCHED.sched`, the format of
//! [`elevator_kernel::conform::sched_log`]), and the event counts of each on stdout; then
//! each capture replayed into our scheduler of the same name and tunables
//! ([`elevator_sched::conform`]): the agreement, the first disagreements with both sides'
//! state, the disagreements by cause on stdout, the whole report as JSON beside the capture
//! (`DIR/conform-SCHED.json`); then each process's share of service with ours deciding in a
//! closed loop against the kernel's ([`elevator_sched::conform::share_replay`]), on stdout
//! and as JSON beside the capture (`DIR/conform-SCHED.share.json`). `elevator conform
//! --replay FILE.sched ...` replays saved captures (no root, no device).
//!
//! Without DEV the run is on a scratch loop device over a RAM-backed file, made and removed
//! here; a named device is opened under the write-safety rules of `elevator kernel compare`
//! (DESIGN.md §7) and its queue is put back as found, also on failure.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use elevator_core::split_spec_list;
use elevator_kernel::compare::{self, CompareOptions, KernelScheduler};
use elevator_kernel::conform::{self, ConformOptions, ScratchLoop, sched_log};
use elevator_kernel::{RestoreGuard, Sysfs};
use elevator_live::passthrough::{CacheDrop, PassthroughOptions};
use elevator_live::{Target, TargetOptions};
use elevator_workload::WorkloadSpec;

use crate::Interrupted;
use crate::fio_live::{self, LiveMode};
use crate::term::note;

/// `elevator conform`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ConformArgs {
    /// The block device (`loop0`, `/dev/sdb`); default: a scratch loop device over a
    /// RAM-backed file in /dev/shm, made for the run and removed after it.
    #[arg(value_name = "DEV")]
    pub(crate) device: Option<String>,

    /// The kernel schedulers, each with its tunables: `mq-deadline,kyber,bfq`,
    /// `mq-deadline:fifo_batch=8,read_expire=250,bfq:low_latency=0`.
    #[arg(
        short,
        long = "schedulers",
        value_name = "SCHED[:K=V,...]",
        required_unless_present = "replay"
    )]
    pub(crate) schedulers: Vec<String>,

    /// The workload: a spec (`job:rw=randrw,bs=4k,iodepth=32`) or an fio job file
    /// (`FILE.fio` or `fio:FILE`).
    #[arg(short, long, value_name = "SPEC|JOBFILE", required_unless_present = "replay")]
    pub(crate) workload: Option<String>,

    /// The longest each job runs (a job file's jobs capped; a `job:` spec without its own
    /// `runtime` gets it).
    #[arg(long, value_name = "TIME", default_value = "2s", value_parser = parse_duration_arg)]
    pub(crate) runtime: elevator_core::Duration,

    /// Where the capture files go (`DIR/conform-SCHED.sched`).
    #[arg(short, long, value_name = "DIR", default_value = ".")]
    pub(crate) output: PathBuf,

    /// The capture's ring buffer per CPU, KiB [default: 65536].
    #[arg(long, value_name = "KIB")]
    pub(crate) buffer_size_kb: Option<u64>,

    /// The workload's random streams.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,

    /// Write to a named device that carries data (a filesystem, a partition table), which
    /// is refused otherwise.
    #[arg(long)]
    pub(crate) force: bool,

    /// Replay these saved captures (`.sched` files) into ours instead of capturing: no root,
    /// no device.
    #[arg(
        long,
        value_name = "FILE.sched",
        num_args = 1..,
        conflicts_with_all = ["device", "schedulers", "workload", "force"]
    )]
    pub(crate) replay: Vec<PathBuf>,

    /// How many disagreements each replay lists with both sides' state.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) first: usize,

    /// Print each replay's report as JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,

    /// Replay with the kblockd-run model (`ConformOptions::kblockd_runs`, off by default), to
    /// measure what it changes.
    #[arg(long, hide = true)]
    pub(crate) kblockd_runs: bool,

    /// Replay with kblockd runs picking at their start as many requests as they issue
    /// (`ConformOptions::kblockd_batch`, with the kblockd-run model), to measure what it
    /// changes.
    #[arg(long, hide = true)]
    pub(crate) kblockd_batch: bool,

    /// Replay with this window for concurrent issues on two CPUs, µs
    /// (`ConformOptions::concurrent_issue`), to measure what it changes.
    #[arg(long, hide = true, value_name = "US")]
    pub(crate) concurrent_issue_us: Option<u64>,

    /// Keep the queue's snapshot here instead of /run/elevator (for tests).
    #[arg(long, value_name = "DIR", hide = true)]
    pub(crate) state_dir: Option<PathBuf>,
}

/// A time argument (`2s`, `500ms`, seconds if bare).
fn parse_duration_arg(text: &str) -> Result<elevator_core::Duration, String> {
    elevator_core::units::parse_duration(text, 1_000_000_000).map_err(|error| error.to_string())
}

/// The workload `-w` names, with `runtime` applied: a job file (`fio:FILE`, or a path that
/// exists) or a spec.
fn workload(args: &ConformArgs) -> Result<(WorkloadSpec, Option<fio_live::LiveJobFile>)> {
    let text = args.workload.as_deref().context("a capture needs a workload (-w)")?;
    let job_path = text.strip_prefix("fio:").or_else(|| Path::new(text).is_file().then_some(text));
    if let Some(path) = job_path {
        let file = fio_live::load(path, LiveMode::Kernel)?;
        if !file.targets.is_empty() {
            anyhow::bail!(
                "{path}: the job file names several devices; elevator conform captures one \
                 device: give it as DEV and drop the `filename`s"
            );
        }
        let spec = file.spec.fio_capped(None, Some(args.runtime))?;
        return Ok((spec, Some(file)));
    }
    let spec = WorkloadSpec::parse(text)?;
    if (text.starts_with("job:") || text == "job") && !text.contains("runtime=") {
        let separator = if text.contains(':') { "," } else { ":" };
        let runtime_ns = args.runtime.as_nanos();
        return Ok((
            WorkloadSpec::parse(&format!("{text}{separator}runtime={runtime_ns}ns"))?,
            None,
        ));
    }
    Ok((spec, None))
}

/// Runs the captures, writes the files, prints the counts.
pub(crate) fn run_command(args: &ConformArgs, stdout: &mut dyn Write) -> Result<()> {
    if !args.replay.is_empty() {
        return replay_files(args, stdout);
    }
    // What is missing is said before anything is made or changed (exit 2).
    elevator_kernel::trace::check_privileges()
        .context("elevator conform captures the kernel's tracepoints")?;
    let (workload, job_file) = workload(args)?;
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("creating the output directory {}", args.output.display()))?;
    let mut sysfs = Sysfs::system();
    if let Some(dir) = &args.state_dir {
        sysfs = sysfs.with_state_dir(dir);
    }
    let scratch = match &args.device {
        Some(_) => None,
        None => Some(ScratchLoop::attach(conform::SCRATCH_SIZE_BYTES)?),
    };
    let given = match (&args.device, &scratch) {
        (Some(device), _) => device.clone(),
        (None, Some(scratch)) => scratch.path().display().to_string(),
        (None, None) => unreachable!("a scratch device is made when none is named"),
    };
    let result = capture_all(args, &sysfs, &given, &workload, job_file.as_ref(), stdout);
    if let Some(scratch) = scratch {
        // After the guard has put the queue back: a loop device's queue outlives `losetup -d`.
        scratch.detach()?;
    }
    result
}

fn capture_all(
    args: &ConformArgs,
    sysfs: &Sysfs,
    given: &str,
    workload: &WorkloadSpec,
    job_file: Option<&fio_live::LiveJobFile>,
    stdout: &mut dyn Write,
) -> Result<()> {
    let device = sysfs.device(given)?;
    if device.partition.is_some() {
        anyhow::bail!(
            "{given}: a partition; the scheduler and its tracepoints are the disk's: give the disk"
        );
    }
    let path = device.dev_path();
    if let Some(file) = job_file {
        // The device is the target: a `filename` in the file must name it.
        file.target_path(Some(&path))?;
    }
    let schedulers: Vec<KernelScheduler> = split_spec_list("scheduler", &args.schedulers)?
        .iter()
        .map(|text| KernelScheduler::parse(&device.name, text))
        .collect::<Result<_, _>>()?;
    compare::validate(sysfs, &device, &schedulers)?;
    let options = TargetOptions {
        write: workload.may_write(),
        force: args.force,
        create_bytes: None,
        stop: None,
    };
    let target = Target::open(&path, &options)?;
    let workload = fio_live::on_target(workload, &target);
    let guard = RestoreGuard::new(sysfs, &device)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in
        [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP]
    {
        // Only a flag: the run stops issuing, the capture ends, the guard restores the queue.
        signal_hook::flag::register(signal, stop.clone())
            .context("installing the Ctrl-C handler")?;
    }
    let options = ConformOptions {
        compare: CompareOptions {
            schedulers: Vec::new(),
            seed: args.seed,
            passthrough: PassthroughOptions {
                cache_drop: CacheDrop::Target,
                stop: Some(Arc::clone(&stop)),
                ..PassthroughOptions::default()
            },
        },
        workload_label: args.workload.clone().unwrap_or_default(),
        buffer_size_kb: args.buffer_size_kb,
    };
    let mut written: Vec<String> = Vec::new();
    let mut failed = None;
    for scheduler in &schedulers {
        note(&format!(
            "{}: capturing the kernel's {} under {workload}",
            device.name,
            scheduler.label()
        ));
        let run = conform::capture_scheduler(
            sysfs,
            &device,
            &target,
            &workload,
            scheduler,
            &options,
            &guard,
            &mut |_| {},
        );
        let run = match run {
            Ok(run) => run,
            Err(error) => {
                failed = Some(anyhow::Error::from(error));
                break;
            }
        };
        if stop.load(Ordering::SeqCst) {
            break;
        }
        for line in &run.notes {
            note(&format!("{}: {line}", scheduler.label()));
        }
        // Two runs of one scheduler (other tunables) each keep their file.
        let mut name = format!("conform-{}", scheduler.name);
        let same = written.iter().filter(|known| known.starts_with(&name)).count();
        if same > 0 {
            name = format!("{name}-{}", same + 1);
        }
        let file = args.output.join(format!("{name}.sched"));
        let mut out = std::fs::File::create(&file)
            .with_context(|| format!("creating the capture file {}", file.display()))?;
        sched_log::write(&run.capture, &mut out)
            .with_context(|| format!("writing the capture file {}", file.display()))?;
        written.push(name);
        let counts = run.counts;
        writeln!(
            stdout,
            "{}: {} inserts, {} merges, {} issues, {} requeues, {} completions, {} lost -> {}",
            scheduler.label(),
            counts.inserts,
            counts.merges,
            counts.issues,
            counts.requeues,
            counts.completions,
            counts.lost,
            file.display()
        )?;
        if let Err(error) =
            replay_one(&run.capture, Some(&file.with_extension("json")), args, stdout)
        {
            failed = Some(error);
            break;
        }
    }
    let restored = guard.restore();
    if let Some(error) = failed {
        return Err(error);
    }
    let restored = restored?;
    if !restored.is_empty() {
        note(&format!("{}: restored {}", device.name, restored.join(", ")));
    }
    if stop.load(Ordering::SeqCst) {
        note("interrupted: stopped issuing, restored the device; captures written so far are kept");
        return Err(Interrupted { signal: None }.into());
    }
    Ok(())
}

/// `--replay`: each saved capture replayed into ours, its report on stdout.
fn replay_files(args: &ConformArgs, stdout: &mut dyn Write) -> Result<()> {
    for path in &args.replay {
        let capture = sched_log::read(path)?;
        replay_one(&capture, None, args, stdout)
            .with_context(|| format!("replaying {}", path.display()))?;
    }
    Ok(())
}

/// Replays `capture` into our scheduler of its name and prints the report (text, or JSON
/// with `--json`); with `json_path`, the JSON report is written there as well.
fn replay_one(
    capture: &sched_log::SchedCapture,
    json_path: Option<&Path>,
    args: &ConformArgs,
    stdout: &mut dyn Write,
) -> Result<()> {
    if capture.header.scheduler == "none" {
        // `none` dispatches in arrival order: there is no decision of its own to compare.
        writeln!(stdout, "none: no scheduler decisions to replay")?;
        return Ok(());
    }
    let options = elevator_sched::conform::ConformOptions {
        first_disagreements: args.first,
        kblockd_runs: args.kblockd_runs || args.kblockd_batch,
        kblockd_batch: args.kblockd_batch,
        ..elevator_sched::conform::ConformOptions::default()
    };
    let options = match args.concurrent_issue_us {
        Some(window_us) => elevator_sched::conform::ConformOptions {
            concurrent_issue: elevator_core::Duration::from_micros(window_us),
            ..options
        },
        None => options,
    };
    let report = elevator_sched::conform::replay(capture, options)?;
    let json = report.to_json();
    if let Some(path) = json_path {
        std::fs::write(path, format!("{json}\n"))
            .with_context(|| format!("writing the replay report {}", path.display()))?;
    }
    // Each process's share of service under ours in a closed loop against the kernel's
    // (`elevator_sched::conform::share_replay`): `DIR/conform-SCHED.share.json` beside the
    // capture; its text after the decision report, or with `--json` the decision report's
    // `share_of_service` member.
    let share = elevator_sched::conform::share_replay(
        capture,
        elevator_sched::conform::ShareOptions::default(),
    )?;
    if let Some(path) = json_path {
        let path = path.with_extension("share.json");
        std::fs::write(&path, format!("{}\n", share.to_json()))
            .with_context(|| format!("writing the share report {}", path.display()))?;
    }
    if args.json {
        let mut combined: serde_json::Value =
            serde_json::from_str(&json).context("the replay report as JSON")?;
        combined["share_of_service"] =
            serde_json::from_str(&share.to_json()).context("the share report as JSON")?;
        writeln!(stdout, "{}", serde_json::to_string_pretty(&combined)?)?;
    } else {
        write!(stdout, "{report}")?;
        write!(stdout, "{share}")?;
    }
    Ok(())
}
