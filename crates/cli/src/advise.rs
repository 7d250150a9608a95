//! `elevator advise`: which scheduler, with which tunables, for this device and this
//! workload — ranked in the simulator (`elevator_sim::advise`), explained, and the commands
//! that apply and persist it; `--apply` does, `--live` confirms the top candidates with the
//! kernel's schedulers on the real device.
//!
//! The target is a block device (its kernel's offered schedulers are the candidates; its model
//! is `-d`, else `hdd` for a rotational queue and `ssd` for another) or a device preset (`-d`
//! alone does the same). `--apply` switches and tunes the device through a `RestoreGuard`
//! whose snapshot it leaves on disk, so that `elevator kernel restore DEV` puts the device back
//! — and then removes the udev rule `--apply` installed, from the record this module keeps
//! beside the snapshots (`STATE/advise/NAME@MAJ:MIN`, [`restore_rule`]).
//!
//! Deviations: the TuneD snippet sets the scheduler in a `[disk]` section (TuneD's disk plugin,
//! option `elevator`) and tunables in a `[sysfs]` section (TuneD's sysfs plugin), as TuneD's
//! documentation (tuned-profiles(7), `plugin_disk.py`, `plugin_sysfs.py`) describes; it is
//! printed, never installed.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Parser;
use elevator_kernel::persist;
use elevator_kernel::queue;
use elevator_kernel::{BlockDevice, RestoreGuard, Setting, Sysfs};
use elevator_report::Report;
use elevator_sched::SchedulerSpec;
use elevator_sim::advise::{self, Advice, Era, Goal, Prepared};
use elevator_sim::{DEFAULT_DEVICE, DEFAULT_HOST, DeviceSpec, HostSpec, QueueSettings, SimConfig};
use serde::Serialize;

use crate::term::note;

/// `elevator advise`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct AdviseArgs {
    /// A block device (`sda`, `/dev/nvme0n1`: its kernel's schedulers are the candidates) or a
    /// device preset (`hdd`, `nvme-gen4-consumer`); may be left out with -d.
    #[arg(value_name = "TARGET")]
    pub(crate) target: Option<String>,

    /// The workload: a spec (`job:rw=randrw,bs=4k,numjobs=2`), an fio job file (`fio:FILE`
    /// or its path) or a trace (`trace:PATH` or its path).
    #[arg(short, long, value_name = "WORKLOAD|JOBFILE|TRACE")]
    pub(crate) workload: String,

    /// What to rank by: throughput (total MB/s), latency (p99 of the latency-sensitive
    /// jobs: iodepth 1 or synchronous; all jobs when none is), fairness (Jain's index over the
    /// jobs' throughputs) or responsiveness (start-up time of a burst of small synchronous
    /// reads under the workload, as the BFQ authors measure it).
    #[arg(long, default_value = "throughput", value_name = "GOAL")]
    pub(crate) goal: String,

    /// The device model to simulate (a preset, a spec or a device file `./mydisk.toml`).
    #[arg(short, long)]
    pub(crate) device: Option<String>,

    /// For a model, which scheduler set to try: `legacy` (noop, anticipatory, deadline,
    /// cfq) or `blk-mq` (none, mq-deadline, bfq, kyber); default: the device's era.
    #[arg(long, value_name = "ERA")]
    pub(crate) era: Option<String>,

    /// Run the top 3 candidates with the kernel's schedulers on TARGET (`kernel compare`,
    /// the device restored afterwards) and show simulated and live side by side (for
    /// responsiveness, the start-up burst runs live as one more fio job of the workload).
    #[arg(long)]
    pub(crate) live: bool,

    /// With --live: let the workload write to the device even where the safety checks
    /// refuse. This destroys data.
    #[arg(long, requires = "live")]
    pub(crate) force: bool,

    /// Switch and tune TARGET to the winner now and install its udev rule; `elevator kernel
    /// restore TARGET` undoes both.
    #[arg(long)]
    pub(crate) apply: bool,

    /// Where --apply writes the udev rule.
    #[arg(long, value_name = "DIR", default_value = persist::RULES_DIR)]
    pub(crate) rules_dir: PathBuf,

    /// With --apply: write the rule only, do not run udevadm.
    #[arg(long, requires = "apply")]
    pub(crate) no_reload: bool,

    /// The seed of every simulation.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,

    /// Output format: a table for people, or the whole advice as JSON.
    #[arg(long, value_enum, default_value_t = AdviseFormat::Table)]
    pub(crate) format: AdviseFormat,

    /// Read and write this sysfs tree instead of /sys (tests).
    #[arg(long, value_name = "DIR", default_value = "/sys", hide = true)]
    pub(crate) sysfs_root: PathBuf,

    /// Keep snapshots here instead of the default state directory (tests).
    #[arg(long, value_name = "DIR", hide = true)]
    pub(crate) state_dir: Option<PathBuf>,

    /// Read the kernel release under this root instead of / (tests).
    #[arg(long, value_name = "DIR", default_value = "/", hide = true)]
    pub(crate) system_root: PathBuf,
}

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum AdviseFormat {
    /// A ranked table with the explanation and the commands.
    Table,
    /// The whole advice (schema `elevator.advice/1`).
    Json,
}

/// The winner's commands and persistent forms.
#[derive(Debug, Serialize)]
struct ApplyPlan {
    /// The device they name (`DEV` for a model).
    device: String,
    /// `elevator kernel set`/`tune` lines.
    commands: Vec<String>,
    /// The udev rule file's text.
    udev_rule: String,
    /// A TuneD profile snippet.
    tuned: String,
}

/// Simulated against live for one candidate.
#[derive(Debug, Serialize)]
struct LiveRow {
    scheduler: String,
    simulated: f64,
    live: f64,
}

/// What `--format json` prints.
#[derive(Debug, Serialize)]
struct Output<'a> {
    #[serde(flatten)]
    advice: &'a Advice,
    /// Whether the target is a real device (`kernel`) or a model (`model`).
    target: &'a str,
    /// The scheduler set tried and why.
    candidates_from: String,
    apply: ApplyPlan,
    #[serde(skip_serializing_if = "Option::is_none")]
    live: Option<Vec<LiveRow>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    applied: Vec<String>,
}

/// The target: a real device with its sysfs, or a model only.
struct Target {
    sysfs: Option<(Sysfs, BlockDevice)>,
    model: String,
    candidates: Vec<SchedulerSpec>,
    from: String,
}

fn sysfs_of(args: &AdviseArgs) -> Sysfs {
    let sysfs = Sysfs::at(&args.sysfs_root);
    match &args.state_dir {
        Some(dir) => sysfs.with_state_dir(dir),
        None => sysfs,
    }
}

fn resolve_target(args: &AdviseArgs) -> Result<Target> {
    let sysfs = sysfs_of(args);
    let real = args.target.as_deref().and_then(|given| {
        // A name that is a block device here is that device: presets are never kernel names.
        sysfs.device(given).ok()
    });
    if let Some(device) = real {
        if args.era.is_some() {
            bail!("--era picks a model's scheduler set; a real device offers its own");
        }
        let line = sysfs.scheduler(&device)?;
        let rotational = sysfs
            .read_optional(&device.queue_attr("rotational"))
            .is_some_and(|text| text.trim() == "1");
        let model = args
            .device
            .clone()
            .unwrap_or_else(|| if rotational { "hdd" } else { "ssd" }.to_owned());
        let mut kinds = Vec::new();
        let mut unknown = Vec::new();
        for name in &line.available {
            match SchedulerSpec::parse(name) {
                Ok(spec) if !kinds.contains(&spec.kind()) => kinds.push(spec.kind()),
                Ok(_) => {}
                Err(_) => unknown.push(name.clone()),
            }
        }
        if !unknown.is_empty() {
            note(&format!(
                "{device}: elevator does not model {}; left out of the candidates",
                unknown.join(", ")
            ));
        }
        let candidates = advise::candidates(&kinds)?;
        let from = format!("{device}'s kernel offers: {}", line.render());
        return Ok(Target { sysfs: Some((sysfs, device)), model, candidates, from });
    }
    let model = match (args.target.as_deref(), args.device.as_deref()) {
        (Some(target), Some(device)) => bail!(
            "`{target}` is not a block device here, and -d {device} names the model: give a \
             device preset as TARGET or with -d, not both"
        ),
        (Some(target), None) => target.to_owned(),
        (None, Some(device)) => device.to_owned(),
        (None, None) => DEFAULT_DEVICE.to_owned(),
    };
    let spec = DeviceSpec::parse(&model).with_context(|| match args.target.as_deref() {
        Some(target) if target == model => {
            format!("`{target}` is neither a block device here nor a device preset")
        }
        _ => format!("the device model `{model}`"),
    })?;
    if args.apply || args.live {
        bail!("--apply and --live need a real block device as TARGET (`{model}` is a model)");
    }
    let era = match args.era.as_deref() {
        None => Era::of(&model, &spec),
        Some("legacy") => Era::Legacy,
        Some("blk-mq") => Era::BlkMq,
        Some(other) => bail!("unknown --era `{other}` (accepted: legacy, blk-mq)"),
    };
    let names: Vec<&str> = era.schedulers().iter().map(|kind| kind.name()).collect();
    let how = if args.era.is_some() { "asked for" } else { "the device's era" };
    let from = format!("the {} set ({how}): {}", era.name(), names.join(", "));
    Ok(Target { sysfs: None, model, candidates: advise::candidates(era.schedulers())?, from })
}

/// The simulation configuration `elevator compare -d MODEL -w ...` uses, so that its
/// figures can be reproduced there.
fn config(model: &str, seed: u64) -> Result<SimConfig> {
    let device = DeviceSpec::parse(model)?;
    crate::list::warn_about_files(std::slice::from_ref(&device));
    let mut config = SimConfig::new(seed, device);
    config.host = HostSpec::parse(DEFAULT_HOST)?;
    // A calibrated preset's own request size, as `compare -d MODEL` takes it (issue 21).
    config.queue = QueueSettings {
        max_sectors_kb: elevator_sim::device::table::measured_max_sectors_kb(model),
        ..QueueSettings::default()
    };
    Ok(config)
}

/// The device a workload addresses first on `config`.
fn first_target(config: &SimConfig) -> Result<elevator_workload::Target> {
    elevator_sim::targets(config)?
        .into_iter()
        .next()
        .context("the device model has no device for the workload")
}

/// The scheduler's name and its `key=value` tunables of a spec text (`bfq:slice_idle=0`).
fn split_spec(text: &str) -> (String, Vec<String>) {
    match text.split_once(':') {
        Some((name, keys)) => (name.to_owned(), keys.split(',').map(str::to_owned).collect()),
        None => (text.to_owned(), Vec::new()),
    }
}

fn apply_plan(advice: &Advice, target: &Target) -> Result<ApplyPlan> {
    let winner = &advice.ranking[0].scheduler;
    let (name, settings) = split_spec(winner);
    let device = target.sysfs.as_ref().map_or_else(|| "DEV".to_owned(), |(_, d)| d.name.clone());
    let mut commands = vec![format!("elevator kernel set {device} {name}")];
    let legacy = SchedulerSpec::parse(&name)
        .is_ok_and(|spec| elevator_sched::SchedulerKind::LEGACY.contains(&spec.kind()));
    if target.sysfs.is_none() && legacy {
        // A model of the 2.6 era ranks the 2.6 set; today's kernels offer none of it.
        note(&format!(
            "{name} is a 2.6 kernel's scheduler (Linux 5.0+ offers none, mq-deadline, bfq, \
             kyber): for today's kernel run advise with --era blk-mq"
        ));
    }
    if !settings.is_empty() {
        commands.push(format!("elevator kernel tune {device} {}", settings.join(" ")));
    }
    let udev_rule = match &target.sysfs {
        Some((sysfs, block)) => {
            let parsed = settings
                .iter()
                .map(|text| Setting::parse(&block.name, text))
                .collect::<Result<Vec<_>, _>>()?;
            let command = format!("elevator advise {device} --apply");
            let host = persist::Host::running();
            persist::plan_on(sysfs, block, &name, &parsed, &command, &host)?.text
        }
        None => {
            // No device to match stably: the kernel name stands in, as `persist` does with
            // a warning when nothing stabler exists.
            let mut rule = format!(
                "ACTION==\"add|change\", SUBSYSTEM==\"block\", ENV{{DEVTYPE}}==\"disk\", \
                 KERNEL==\"{device}\", ATTR{{queue/scheduler}}=\"{name}\""
            );
            for setting in &settings {
                if let Some((key, value)) = setting.split_once('=') {
                    rule.push_str(&format!(", ATTR{{queue/iosched/{key}}}=\"{value}\""));
                }
            }
            format!(
                "# {}/99-elevator-{device}.rules (replace {device} with the device; on a real \
                 device `elevator kernel persist` matches it by WWID or serial)\n{rule}\n",
                persist::RULES_DIR
            )
        }
    };
    let mut tuned = format!("[disk]\ndevices={device}\nelevator={name}\n");
    if !settings.is_empty() {
        tuned.push_str("\n[sysfs]\n");
        for setting in &settings {
            if let Some((key, value)) = setting.split_once('=') {
                tuned.push_str(&format!("/sys/block/{device}/queue/iosched/{key}={value}\n"));
            }
        }
    }
    Ok(ApplyPlan { device, commands, udev_rule, tuned })
}

/// The record of the rule `--apply` installed for `device`: where `kernel restore` finds it.
fn rule_record(sysfs: &Sysfs, device: &BlockDevice) -> PathBuf {
    let key = match sysfs.dev_id(device) {
        Some(dev) => format!("{}@{dev}", device.name),
        None => device.name.clone(),
    };
    sysfs.state_dir().join("advise").join(key)
}

/// Switches and tunes the device to the winner, leaving the snapshot from before on disk
/// for `elevator kernel restore`, and installs the udev rule. Returns what it did.
fn apply(args: &AdviseArgs, advice: &Advice, target: &Target) -> Result<Vec<String>> {
    let Some((sysfs, device)) = &target.sysfs else {
        bail!("--apply needs a real block device");
    };
    let _lock = crate::kernel::lock_queue(sysfs, device)?;
    let (name, settings) = split_spec(&advice.ranking[0].scheduler);
    let parsed = settings
        .iter()
        .map(|text| Setting::parse(&device.name, text))
        .collect::<Result<Vec<_>, _>>()?;
    let before = sysfs.scheduler(device)?;
    queue::check_scheduler_name(device, &before, &name)?;
    let guard = RestoreGuard::new(sysfs, device)?;
    let mut done = Vec::new();
    let after = queue::set_scheduler(sysfs, device, &name)?;
    done.push(format!("{device}: {} -> {}", before.render(), after.render()));
    if !parsed.is_empty() {
        queue::check_settings(sysfs, device, &after, &after.current, &parsed)?;
        for applied in queue::tune(sysfs, device, &parsed)? {
            done.push(format!(
                "{device}: {}: {} -> {}",
                applied.key, applied.before, applied.after
            ));
        }
    }
    let real_root = args.system_root == Path::new("/");
    let reload = !args.no_reload && real_root && args.sysfs_root == Path::new("/sys");
    let host = persist::Host::read(&args.system_root)?;
    let command = format!("elevator advise {device} --apply");
    let rule = persist::plan_on(sysfs, device, &name, &parsed, &command, &host)?;
    let (path, notes) = persist::apply(&rule, device, &args.rules_dir, reload)?;
    for text in notes {
        note(&text);
    }
    let record = rule_record(sysfs, device);
    if let Some(dir) = record.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&record, format!("{}\n", path.display()))
        .with_context(|| format!("writing {}", record.display()))?;
    done.push(format!("{device}: wrote {}", path.display()));
    // The snapshot from before stays on disk as the record to undo from: dropping the guard
    // would put the device back, so it is deliberately leaked; once this process exits the
    // snapshot is stale and `elevator kernel restore DEV` restores it.
    std::mem::forget(guard);
    done.push(format!("undo with: elevator kernel restore {device}"));
    Ok(done)
}

/// Called by `elevator kernel restore DEV` after the snapshot was restored (or discarded):
/// removes the udev rule `advise --apply` installed for `device` (when restoring) and the
/// record of it. Says what it did on `stdout`.
pub(crate) fn restore_rule(
    sysfs: &Sysfs,
    device: &BlockDevice,
    discard: bool,
    stdout: &mut dyn Write,
) -> Result<()> {
    let record = rule_record(sysfs, device);
    let Ok(text) = std::fs::read_to_string(&record) else { return Ok(()) };
    let rule = PathBuf::from(text.trim());
    if !discard {
        match std::fs::remove_file(&rule) {
            Ok(()) => writeln!(stdout, "{device}: removed {}", rule.display())?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(error).with_context(|| format!("removing {}", rule.display()));
            }
        }
    }
    std::fs::remove_file(&record).with_context(|| format!("removing {}", record.display()))?;
    if let Some(dir) = record.parent() {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}

/// The workload with the start-up burst, as an fio job file for `kernel compare` on a real
/// device (in the temporary directory; removed when dropped).
struct StartupJobFile {
    path: PathBuf,
}

impl StartupJobFile {
    fn write(workload: &str, device: &BlockDevice) -> Result<StartupJobFile> {
        let dev_path = match &device.partition {
            Some(partition) => PathBuf::from("/dev").join(partition),
            None => device.dev_path(),
        };
        let options = elevator_live::TargetOptions {
            write: false,
            force: false,
            create_bytes: None,
            stop: None,
        };
        let capacity_bytes = elevator_live::Target::open(&dev_path, &options)
            .with_context(|| format!("opening {}", dev_path.display()))?
            .size_bytes();
        let target = elevator_workload::Target {
            name: dev_path.display().to_string(),
            capacity_bytes,
            zones: None,
        };
        let (text, _, _) = advise::with_startup_job(workload, &target)?;
        let path = std::env::temp_dir().join(format!(
            "elevator-advise-{}-{}.fio",
            device.name,
            std::process::id()
        ));
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(StartupJobFile { path })
    }
}

impl Drop for StartupJobFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Runs the top candidates with the kernel's schedulers through `elevator kernel compare`
/// (restoring the device) and pairs each live figure with its simulated one.
fn live(args: &AdviseArgs, advice: &Advice, target: &Target) -> Result<Vec<LiveRow>> {
    let Some((_, device)) = &target.sysfs else { bail!("--live needs a real block device") };
    let top: Vec<&advise::Ranked> = advice.ranking.iter().take(3).collect();
    let mut argv: Vec<String> = vec!["elevator".into(), "kernel".into()];
    argv.extend(["--sysfs-root".into(), args.sysfs_root.display().to_string()]);
    if let Some(dir) = &args.state_dir {
        argv.extend(["--state-dir".into(), dir.display().to_string()]);
    }
    argv.extend(["compare".into(), device.name.clone()]);
    // The responsiveness goal's start-up burst joins the workload as one more fio job, on
    // the real device: the job file `kernel compare` runs.
    let job_file = match advice.goal {
        Goal::Responsiveness => Some(StartupJobFile::write(&args.workload, device)?),
        _ => None,
    };
    if let Some(file) = &job_file {
        argv.push(file.path.display().to_string());
    }
    for ranked in &top {
        argv.extend(["-s".into(), ranked.scheduler.clone()]);
    }
    if job_file.is_none() {
        argv.extend(["-w".into(), args.workload.clone()]);
    }
    argv.extend(["--format".into(), "json".into()]);
    argv.extend(["--seed".into(), args.seed.to_string()]);
    if args.force {
        argv.push("--force".into());
    }
    let parsed = crate::args::Args::try_parse_from(&argv)
        .map_err(|error| anyhow::anyhow!("building the live comparison: {error}"))?;
    let crate::args::Command::Kernel(kernel) = &parsed.command else {
        unreachable!("built as a kernel command")
    };
    let mut json = Vec::new();
    crate::kernel::run_command(kernel, &mut json)?;
    let report: Report =
        serde_json::from_slice(&json).context("reading the live comparison's report")?;
    let prepared = advise::prepare(
        &args.workload,
        advice.goal,
        &first_target(&config(&target.model, args.seed)?)?,
    )?;
    Ok(top
        .iter()
        .zip(&report.runs)
        .map(|(ranked, run)| LiveRow {
            scheduler: ranked.scheduler.clone(),
            simulated: ranked.score,
            live: advise::Figures::of(run, &prepared).score(advice.goal),
        })
        .collect())
}

pub(crate) fn run_command(args: &AdviseArgs, stdout: &mut dyn Write) -> Result<()> {
    let goal = Goal::parse(&args.goal)?;
    let target = resolve_target(args)?;
    let config = config(&target.model, args.seed)?;
    let device = first_target(&config)?;
    let prepared: Prepared = advise::prepare(&args.workload, goal, &device)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let progress = crate::term::simulation_counter(target.candidates.len());
    let runs = advise::run_candidates(&config, &target.candidates, &prepared, threads, &|name| {
        progress.set_message(format!("advise: {name}"));
        progress.inc(1);
    })?;
    progress.finish_and_clear();
    let advice = advise::rank(runs, &prepared, &target.model, args.seed)?;
    let unloaded: Vec<&str> = advice
        .ranking
        .iter()
        .filter(|ranked| ranked.figures.startup_outlived_background)
        .map(|ranked| ranked.scheduler.as_str())
        .collect();
    if !unloaded.is_empty() {
        note(&format!(
            "warning: the start-up burst outlived the background workload under {}: it ran \
             partly unloaded; a longer workload (time_based=1,runtime=...) measures better",
            unloaded.join(", ")
        ));
    }
    let plan = apply_plan(&advice, &target)?;
    let live = if args.live { Some(live(args, &advice, &target)?) } else { None };
    let applied = if args.apply { apply(args, &advice, &target)? } else { Vec::new() };
    let kind = if target.sysfs.is_some() { "kernel" } else { "model" };
    let output = Output {
        advice: &advice,
        target: kind,
        candidates_from: target.from.clone(),
        apply: plan,
        live,
        applied,
    };
    match args.format {
        AdviseFormat::Json => {
            serde_json::to_writer_pretty(&mut *stdout, &output)?;
            writeln!(stdout)?;
        }
        AdviseFormat::Table => render(&output, stdout)?,
    }
    Ok(())
}

fn render(output: &Output<'_>, out: &mut dyn Write) -> Result<()> {
    let advice = output.advice;
    let goal = advice.goal;
    writeln!(
        out,
        "advise: {} on {} ({}), goal {}, seed {}",
        advice.workload,
        advice.device,
        output.target,
        goal.name(),
        advice.seed
    )?;
    writeln!(out, "candidates: {}", output.candidates_from)?;
    writeln!(
        out,
        "{:>4}  {:<34} {:>12}  {:>9}  {:>9}  {:>8}  {:>8}",
        "rank",
        "scheduler",
        format!("[{}]", goal.heading()),
        "MB/s",
        "p99 ms",
        "Jain",
        "max/min"
    )?;
    for ranked in &advice.ranking {
        let figures = &ranked.figures;
        writeln!(
            out,
            "{:>4}  {:<34} {:>12}  {:>9.2}  {:>9.3}  {:>8.4}  {:>8.2}",
            ranked.rank,
            ranked.scheduler,
            goal.display(ranked.score),
            figures.throughput_bytes_per_s / 1e6,
            figures.latency_ns_p99 as f64 / 1e6,
            figures.jain_index,
            figures.max_min_share
        )?;
    }
    let winner = &advice.ranking[0];
    if let (Some(runner_up), Some(confidence)) = (advice.ranking.get(1), &advice.confidence) {
        writeln!(
            out,
            "winner: {} ({}: {} against {} for the runner-up {}, {:+.1}%)",
            winner.scheduler,
            goal.heading(),
            goal.display(winner.score),
            goal.display(runner_up.score),
            runner_up.scheduler,
            confidence.margin_percent
        )?;
        if !advice.explanation.is_empty() {
            writeln!(out, "why ({} vs {}):", winner.scheduler, runner_up.scheduler)?;
            for mechanism in &advice.explanation {
                writeln!(
                    out,
                    "  {:<28} {:>14.3} vs {:>14.3}",
                    mechanism.name, mechanism.winner, mechanism.runner_up
                )?;
            }
        }
        let against = match confidence.model_error_percent {
            // A calibrated model: its measurements' own spread bounds the advice too.
            Some(model) if model > confidence.sim_error_percent => format!(
                "the calibrated model's stated error of {model:.0}% (its preset file's \
                 [measured] error_percent)"
            ),
            _ => format!(
                "the simulator's validated error of {:.0}%, docs/validation.md",
                confidence.sim_error_percent
            ),
        };
        writeln!(
            out,
            "confidence: {} (margin {:.1}% {} {against})",
            confidence.level,
            confidence.margin_percent,
            if confidence.level == "low" { "within" } else { "beyond" },
        )?;
    } else {
        writeln!(out, "winner: {} (the only candidate)", winner.scheduler)?;
    }
    if let Some(live) = &output.live {
        writeln!(out, "live (the kernel's schedulers on {}):", output.apply.device)?;
        writeln!(out, "  {:<34} {:>12}  {:>12}", "scheduler", "simulated", "live")?;
        for row in live {
            writeln!(
                out,
                "  {:<34} {:>12}  {:>12}",
                row.scheduler,
                goal.display(row.simulated),
                goal.display(row.live)
            )?;
        }
    }
    writeln!(out, "apply now:")?;
    for command in &output.apply.commands {
        writeln!(out, "  {command}")?;
    }
    writeln!(out, "persist (udev rule):")?;
    for line in output.apply.udev_rule.lines() {
        writeln!(out, "  {line}")?;
    }
    writeln!(out, "persist (TuneD profile, /etc/tuned/PROFILE/tuned.conf):")?;
    for line in output.apply.tuned.lines() {
        writeln!(out, "  {line}")?;
    }
    for line in &output.applied {
        writeln!(out, "applied: {line}")?;
    }
    writeln!(out, "units: MB = 10^6 bytes; ms = 10^-3 s; Jain: 1 = even shares")?;
    Ok(())
}
