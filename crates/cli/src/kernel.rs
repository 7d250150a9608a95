//! `elevator kernel`: show, set, tune, persist, compare and restore the kernel's own
//! schedulers.
//!
//! Every command that changes a device (`set`, `tune`, `compare`) first keeps a snapshot of
//! it on disk through a `RestoreGuard`, and refuses while another command's snapshot of it
//! is there. `compare` restores when it ends; `set` and `tune` mean their change to last, so
//! they restore only when they fail half-way (a `tune` applies all its settings or none) and
//! otherwise forget the snapshot — it covers the moments of the change itself.
//!
//! `compare` (and `elevator fio` kernel mode) over a job file naming several block devices
//! (`filename=/dev/sdb:/dev/sdc`, or a job per disk) switches EVERY one of them to each
//! scheduler of `-s`, with its tunables: every scheduler is checked on every device, then a
//! snapshot of every device is taken (one guard each), all before the first change; all are
//! restored when the comparison ends, fails or is interrupted (a second signal restores them
//! all at once). DEV may be left out when the file names its devices; given, it must be one
//! of them (else exit 2 naming the file and line).
//!
//! # Deviations from fio
//!
//! * fio runs a job file's regular files wherever they are; `kernel compare` switches the
//!   scheduler of block devices, so a regular file (or fio's `NAME.N.0` for a job naming no
//!   `filename` beside jobs naming devices) is refused with its file and line: the scheduler
//!   that matters for a file is its filesystem's disk's, which the job file should name.
//! * `elevator fio` kernel mode without `ELEVATOR_FIO_SCHEDULER` keeps each device's current
//!   scheduler only when all devices have the same one (the report has one scheduler per
//!   run); otherwise it is refused, asking for the variable.
//! * fio's `disk_util` is read before and after each run (not every 250 ms), for every device
//!   the targets are on (`elevator_live::diskutil`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use anyhow::{Context, Result};
use elevator_core::split_spec_list;
use elevator_kernel::bootline::{self, Generation, QueueKind};
use elevator_kernel::compare::{self, CompareOptions, CompareTarget, KernelScheduler};
use elevator_kernel::persist;
use elevator_kernel::queue::{self, QueueInfo};
use elevator_kernel::{
    Applied, BlockDevice, KernelError, RestoreGuard, RestoreHandle, Setting, SnapshotStore, Sysfs,
};
use elevator_live::passthrough::{CacheDrop, PassthroughOptions};
use elevator_live::run::Progress;
use elevator_live::{Target, TargetLock, TargetOptions};
use elevator_report::Report;
use elevator_workload::{WorkloadSpec, trace_replay};

use crate::args::{
    KernelArgs, KernelCommand, KernelCompareArgs, KernelPersistArgs, KernelRestoreArgs,
    KernelShowArgs, ListFormat,
};
use crate::fio_live::{self, LiveMode};
use crate::term::{LiveProgress, StopSignals, note};
use crate::{CheckFailed, EXIT_INTERRUPTED, Interrupted, plan};

pub(crate) fn run_command(args: &KernelArgs, stdout: &mut dyn Write) -> Result<()> {
    let mut sysfs = Sysfs::at(&args.sysfs_root);
    if let Some(dir) = &args.state_dir {
        sysfs = sysfs.with_state_dir(dir);
    }
    let sysfs = sysfs;
    match &args.command {
        KernelCommand::Show(show) => run_show(&sysfs, show, stdout),
        KernelCommand::Set(set) => {
            let device = sysfs.device(&set.device)?;
            let _lock = lock_queue(&sysfs, &device)?;
            let before = sysfs.scheduler(&device)?;
            queue::check_scheduler_name(&device, &before, &set.scheduler)?;
            let guard = RestoreGuard::new(&sysfs, &device)?;
            let after = queue::set_scheduler(&sysfs, &device, &set.scheduler)?;
            guard.keep_changes()?;
            writeln!(stdout, "{device}: {} -> {}", before.render(), after.render())?;
            Ok(())
        }
        KernelCommand::Tune(tune) => {
            let device = sysfs.device(&tune.device)?;
            let _lock = lock_queue(&sysfs, &device)?;
            let settings = tune
                .settings
                .iter()
                .map(|text| Setting::parse(&device.name, text))
                .collect::<Result<Vec<_>, _>>()?;
            let line = sysfs.scheduler(&device)?;
            queue::check_settings(&sysfs, &device, &line, &line.current, &settings)?;
            // Should a later setting be refused, the guard puts the earlier ones back.
            let guard = RestoreGuard::new(&sysfs, &device)?;
            let applied = queue::tune(&sysfs, &device, &settings)?;
            guard.keep_changes()?;
            for applied in applied {
                writeln!(
                    stdout,
                    "{device}: {}: {} -> {}",
                    applied.key, applied.before, applied.after
                )?;
                warn_adjusted(&device, None, &applied);
            }
            Ok(())
        }
        KernelCommand::Persist(persist_args) => {
            run_persist(&sysfs, &args.system_root, persist_args, stdout)
        }
        KernelCommand::Compare(compare_args) => run_compare(&sysfs, compare_args, stdout),
        KernelCommand::Restore(restore_args) => run_restore(&sysfs, restore_args, stdout),
    }
}

/// The warning line for a setting the kernel clamped or rounded.
fn warn_adjusted(device: &BlockDevice, scheduler: Option<&str>, applied: &Applied) {
    if let Some(adjustment) = applied.adjustment() {
        let under = scheduler.map(|s| format!(" under {s}")).unwrap_or_default();
        note(&format!("warning: {device}{under}: {adjustment}"));
    }
}

/// Says so when `device` carries a snapshot an earlier command left (commands that only
/// read go on; those that change the device refuse through their guard).
fn warn_stale(sysfs: &Sysfs, device: &BlockDevice) {
    if let Ok(Some(stored)) = SnapshotStore::new(sysfs).load(device) {
        let refusal = stored.refusal();
        if matches!(refusal, KernelError::StaleSnapshot { .. }) {
            note(&format!("warning: {refusal}"));
        }
    }
}

fn run_restore(sysfs: &Sysfs, args: &KernelRestoreArgs, stdout: &mut dyn Write) -> Result<()> {
    let store = SnapshotStore::new(sysfs);
    let devices: Vec<BlockDevice> = match &args.device {
        Some(given) => vec![sysfs.device(given)?],
        None => {
            let mut devices = Vec::new();
            for stored in store.all()? {
                match stored {
                    // Its owner restores it when it ends; every other device still goes back.
                    Ok(stored) if stored.owner.is_running() => note(&stored.refusal().to_string()),
                    Ok(stored) => devices.push(stored.snapshot.device),
                    Err(error) => note(&format!("skipping a snapshot: {error}")),
                }
            }
            devices
        }
    };
    if devices.is_empty() && args.device.is_none() {
        note(&format!("no snapshots in {}: nothing to restore", sysfs.state_dir().display()));
    }
    for device in devices {
        if args.discard {
            match store.discard(&device)? {
                Some(stored) => writeln!(
                    stdout,
                    "{device}: forgot the snapshot from before `{}`; the device keeps its \
                     settings",
                    stored.owner.command
                )?,
                None => note(&format!("{device}: no snapshot to forget")),
            }
            crate::advise::restore_rule(sysfs, &device, true, stdout)?;
            continue;
        }
        match store.restore(&device)? {
            None => note(&format!("{device}: no snapshot; nothing to restore")),
            Some((stored, changed)) => {
                if changed.is_empty() {
                    writeln!(
                        stdout,
                        "{device}: already as before `{}`; nothing to change",
                        stored.owner.command
                    )?;
                }
                for change in changed {
                    writeln!(stdout, "{device}: {change}")?;
                }
            }
        }
        crate::advise::restore_rule(sysfs, &device, false, stdout)?;
    }
    Ok(())
}

/// Locks the disk whose queue `set`/`tune` is about to change, so that a run or a compare
/// on it (which hold the same lock) is not changed under its feet. Only against the real
/// `/sys`: a fake tree's devices have no nodes to lock.
pub(crate) fn lock_queue(sysfs: &Sysfs, device: &BlockDevice) -> Result<Option<TargetLock>> {
    if sysfs.root() != Path::new("/sys") {
        return Ok(None);
    }
    Ok(TargetLock::acquire_queue(&device.dev_path())?)
}

fn run_show(sysfs: &Sysfs, args: &KernelShowArgs, stdout: &mut dyn Write) -> Result<()> {
    let devices = match &args.device {
        Some(given) => vec![sysfs.device(given)?],
        None => sysfs.devices()?,
    };
    let infos: Vec<QueueInfo> =
        devices.iter().map(|device| queue::queue_info(sysfs, device)).collect::<Result<_, _>>()?;
    for device in &devices {
        warn_stale(sysfs, device);
    }
    if args.format == ListFormat::Json {
        let document = serde_json::json!({ "schema": "elevator.kernel-show/1", "devices": infos });
        serde_json::to_writer_pretty(&mut *stdout, &document)?;
        writeln!(stdout)?;
        return Ok(());
    }
    let optional = |value: Option<u64>| value.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let mut table = crate::list::plain_table(&[
        "device",
        "scheduler",
        "rotational",
        "nr_requests",
        "read_ahead_kb",
        "max_sectors_kb",
        "hw_depth×queues",
        "tunables",
    ]);
    for info in &infos {
        let tunables: Vec<String> =
            info.tunables.iter().map(|(name, value)| format!("{name}={value}")).collect();
        table.add_row([
            info.device.clone(),
            info.scheduler_line.clone(),
            info.rotational.map_or("-".into(), |r| u8::from(r).to_string()),
            optional(info.nr_requests),
            optional(info.read_ahead_kb),
            optional(info.max_sectors_kb),
            format!("{} × {}", optional(info.hw_queue_depth), optional(info.hw_queues)),
            tunables.join(" "),
        ]);
    }
    crate::list::write_table(stdout, &table)
}

/// `persist`: the forms that make the choice survive a reboot on the running kernel (the
/// udev rule; on a single-queue kernel and device also the boot line; on 2.4 an `elvtune`
/// line), printed, or installed with `--apply`, and which one wins.
fn run_persist(
    sysfs: &Sysfs,
    system_root: &Path,
    args: &KernelPersistArgs,
    stdout: &mut dyn Write,
) -> Result<()> {
    let host = persist::Host::read(system_root)?;
    let release = &host.release;
    let name = args.device.trim_start_matches("/dev/");
    let settings = args
        .settings
        .iter()
        .map(|text| Setting::parse(name, text))
        .collect::<Result<Vec<_>, _>>()?;
    let mut command = format!("elevator kernel persist {name} {}", args.scheduler);
    for setting in &args.settings {
        command.push(' ');
        command.push_str(setting);
    }
    if release.generation() == Generation::Elevator2_4 {
        // A 2.4 host has no sysfs: the device is a name, and the form is printed only.
        let plan = bootline::plan_elvtune(release, name, &args.scheduler, &settings)?;
        if args.apply {
            return Err(KernelError::BootLoader(format!(
                "on Linux {release} elevator prints the elvtune line only: add it to {} by hand",
                bootline::RC_LOCAL
            ))
            .into());
        }
        for warning in &plan.warnings {
            note(warning);
        }
        write!(stdout, "{}", plan.text)?;
        note(&bootline::which_wins(release, QueueKind::SingleQueue, name, false, None));
        return Ok(());
    }
    let device = sysfs.device(&args.device)?;
    warn_stale(sysfs, &device);
    let queue = QueueKind::of(&device);
    let boot_line = host.boot_line_applies(&device);
    // Before 2.6.10 nothing switches a device after boot, so a rule could not either.
    let rule = !boot_line || release.switches_at_run_time();
    let plan = if rule {
        let plan = persist::plan_on(sysfs, &device, &args.scheduler, &settings, &command, &host)?;
        for warning in &plan.warnings {
            note(warning);
        }
        Some(plan)
    } else {
        None
    };
    let boot = if boot_line {
        let scheduler = bootline::single_queue_scheduler(release, &args.scheduler)?;
        Some(bootline::plan_boot_line(
            system_root,
            release,
            scheduler,
            &command,
            host.boot_elevator(),
        )?)
    } else {
        None
    };
    let mut startup = Vec::new();
    if !rule {
        // Tunables without a rule: set from rc.local at each boot.
        let scheduler = bootline::single_queue_scheduler(release, &args.scheduler)?;
        for setting in &settings {
            let value = queue::sysfs_value(&device.name, scheduler, setting)?;
            startup.push(format!("echo {value} > /sys/block/{device}/queue/{}", setting.attr()));
        }
    }
    let wins = bootline::which_wins(
        release,
        queue,
        &device.name,
        rule,
        boot.as_ref().map(|b| b.word.as_str()),
    );
    if !args.apply {
        let mut sections = Vec::new();
        if let Some(plan) = &plan {
            sections.push(plan.text.clone());
        }
        if let Some(boot) = &boot {
            sections.push(boot.text.clone());
        }
        if !startup.is_empty() {
            sections.push(format!(
                "# Tunables, from {} at each boot:\n{}\n",
                bootline::RC_LOCAL,
                startup.join("\n")
            ));
        }
        write!(stdout, "{}", sections.join("\n"))?;
        let mut installs = Vec::new();
        if let Some(plan) = &plan {
            installs.push(format!(
                "writes {}/{} and reloads udev",
                args.rules_dir.display(),
                plan.file_name
            ));
        }
        if let Some(boot) = &boot {
            installs.push(match &boot.edit {
                Some(edit) => format!("edits {}", edit.path.display()),
                None => "changes the boot line".to_owned(),
            });
            if !boot.commands.is_empty() {
                installs.push(format!("runs {}", boot.commands.join("; ")));
            }
        }
        note(&format!("{wins} Install with --apply ({}).", installs.join(", ")));
        return Ok(());
    }
    if let Some(boot) = &boot {
        // Refused before the rule is written, so that a refusal changes nothing.
        bootline::check_boot_line(boot, system_root, !args.no_reload)?;
    }
    // Under a fake system root the default rules directory is the root's own, and udev (the
    // running system's) is not told.
    let real_root = system_root == Path::new("/");
    let rules_dir = if real_root || args.rules_dir != Path::new(persist::RULES_DIR) {
        args.rules_dir.clone()
    } else {
        system_root.join(persist::RULES_DIR.trim_start_matches('/'))
    };
    if let Some(plan) = &plan {
        let reload = !args.no_reload && real_root;
        let (path, notes) = persist::apply(plan, &device, &rules_dir, reload)?;
        for text in notes {
            note(&text);
        }
        writeln!(stdout, "{}", path.display())?;
        note(&format!("wrote {}: {}", path.display(), plan.rule.render()));
    }
    if let Some(boot) = &boot {
        for text in bootline::apply_boot_line(boot, system_root, !args.no_reload)? {
            note(&text);
        }
        if let Some(edit) = &boot.edit {
            writeln!(stdout, "{}", edit.path.display())?;
        }
        note(&format!("undo the boot line: {}", boot.undo));
    }
    if !startup.is_empty() {
        note(&format!(
            "add to {} by hand (elevator does not edit it): {}",
            bootline::RC_LOCAL,
            startup.join("; ")
        ));
    }
    note(&wins);
    Ok(())
}

/// How many signals have arrived: the first stops the run gracefully, the second restores
/// the devices at once and exits.
static SIGNALS: AtomicU32 = AtomicU32::new(0);

/// The first SIGINT (or SIGTERM, SIGHUP) sets the returned flag: the run stops issuing, waits
/// for I/O in flight and restores the devices as it ends; a second restores every device at
/// once and exits.
fn stop_or_restore_on_signals(guards: &[RestoreGuard]) -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = Arc::clone(&stop);
    let handles: Vec<RestoreHandle> = guards.iter().map(RestoreGuard::handle).collect();
    ctrlc::set_handler(move || {
        if SIGNALS.fetch_add(1, Ordering::SeqCst) == 0 {
            handler_stop.store(true, Ordering::SeqCst);
            note(
                "stopping: waiting for I/O in flight, then restoring the devices (again to force)",
            );
        } else {
            // Every device, even when one fails: each that can go back does.
            for handle in &handles {
                if let Err(error) = handle.restore_now() {
                    note(&format!("could not restore a device: {error}"));
                }
            }
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    })
    .context("installing the signal handler")?;
    Ok(stop)
}

/// What a kernel run switches and where its I/O goes.
struct KernelTargets {
    /// Each request queue whose scheduler is switched (a disk; partitions count as their
    /// disk), once, in the order the job file first names it.
    devices: Vec<BlockDevice>,
    /// The opened targets, by the workload's device index (`Place::Device(i)`).
    targets: Vec<Target>,
    /// Each target as the workload plans it.
    planned: Vec<elevator_workload::Target>,
    /// The workload, addressing `planned`.
    workload: WorkloadSpec,
}

impl KernelTargets {
    /// The devices, as `/dev/a, /dev/b` for messages.
    fn names(&self) -> String {
        let names: Vec<String> =
            self.devices.iter().map(|device| device.dev_path().display().to_string()).collect();
        names.join(", ")
    }
}

/// Resolves and opens what a kernel run drives (the write-safety rules of DESIGN.md §7 on
/// each target):
///
/// * a job file naming several targets (`filename=/dev/sdb:/dev/sdc`, or jobs naming
///   different devices): every one of them, each job's I/O on its own; each must be a block
///   device (the scheduler under test is a block device's), and `given`, when there, must be
///   one of them;
/// * otherwise the one device `given` names, or the job file's `filename` when `given` is
///   left out (a `filename` beside `given` must name it).
fn kernel_targets(
    sysfs: &Sysfs,
    given: Option<&str>,
    job_file: Option<&fio_live::LiveJobFile>,
    workload: &WorkloadSpec,
    force: bool,
) -> Result<KernelTargets> {
    let several = job_file.map_or(&[][..], |file| &file.targets[..]);
    if several.is_empty() {
        let named = job_file.and_then(|file| file.filename.as_ref());
        let given = match (given, named) {
            (Some(given), _) => given.to_owned(),
            (None, Some((path, _))) => path.display().to_string(),
            (None, None) => anyhow::bail!(
                "name the device: give DEV (e.g. /dev/loop0) or a `filename=` in the job file"
            ),
        };
        let device = sysfs.device(&given)?;
        let path = match &device.partition {
            Some(partition) => PathBuf::from("/dev").join(partition),
            None => device.dev_path(),
        };
        if let Some(file) = job_file {
            // The device is the target: a `filename` in the file must name it.
            file.target_path(Some(&path))?;
        }
        let options =
            TargetOptions { write: workload.may_write(), force, create_bytes: None, stop: None };
        let target = Target::open(&path, &options)?;
        let workload = fio_live::on_target(workload, &target);
        let planned = vec![elevator_live::run::workload_target(&target)];
        return Ok(KernelTargets {
            devices: vec![device],
            targets: vec![target],
            planned,
            workload,
        });
    }
    let mut devices: Vec<BlockDevice> = Vec::new();
    let mut targets = Vec::with_capacity(several.len());
    let mut planned = Vec::with_capacity(several.len());
    for named in several {
        // fio opens `filename` as a path: `sdb` alone is a file in the working directory.
        let path = if named.written.contains('/') {
            PathBuf::from(&named.written)
        } else {
            Path::new(".").join(&named.written)
        };
        let device = sysfs.device(&path.display().to_string()).with_context(|| {
            format!(
                "fio {}: target `{}` (a `filename`, or fio's `JOB.N.0` for a job naming none \
                 beside jobs naming devices): elevator kernel compare switches the scheduler \
                 of block devices, and every target of the job file must be one (a regular \
                 file's I/O is scheduled by its filesystem's disk: name that disk, or run the \
                 file with `elevator run`)",
                named.at, named.written
            )
        })?;
        let options = TargetOptions {
            write: workload.may_write() && named.writes,
            force,
            create_bytes: None,
            stop: None,
        };
        let target = Target::open(&path, &options)
            .with_context(|| format!("fio {}: option: filename={}", named.at, named.written))?;
        planned.push(elevator_workload::Target {
            name: named.device_name().to_owned(),
            capacity_bytes: target.size_bytes(),
            zones: None,
        });
        targets.push(target);
        // Two partitions of one disk share its queue: it is switched once.
        if !devices.iter().any(|known| known.name == device.name) {
            devices.push(device);
        }
    }
    if let Some(given) = given {
        let device = sysfs.device(given)?;
        if !devices.iter().any(|known| known.name == device.name) {
            let first = &several[0];
            let listed: Vec<String> =
                several.iter().map(|t| format!("`{}` at {}", t.written, t.at)).collect();
            anyhow::bail!(
                "fio {}: the job file names its devices ({}): DEV {given} is none of them; drop \
                 DEV (each device the file names is compared) or give one of them",
                first.at,
                listed.join(", ")
            );
        }
    }
    Ok(KernelTargets { devices, targets, planned, workload: workload.clone() })
}

/// Checks the schedulers on every device (each must offer each, with its tunables) before
/// any snapshot is taken or anything changed.
fn validate_all(
    sysfs: &Sysfs,
    devices: &[BlockDevice],
    schedulers: &[KernelScheduler],
) -> Result<()> {
    for device in devices {
        compare::validate(sysfs, device, schedulers)?;
    }
    Ok(())
}

/// One guard per device, every snapshot taken before anything changes; if one device is
/// refused (another command holds it) the guards already made drop without changing anything.
fn guard_all(sysfs: &Sysfs, devices: &[BlockDevice]) -> Result<Vec<RestoreGuard>> {
    Ok(devices.iter().map(|device| RestoreGuard::new(sysfs, device)).collect::<Result<_, _>>()?)
}

/// Restores every device, each even when another fails; says what changed unless `quiet`.
/// The first failure is returned (the others were said).
fn restore_all(guards: Vec<RestoreGuard>, quiet: bool) -> Result<()> {
    let mut failed = None;
    for guard in guards {
        let device = guard.snapshot().map(|snapshot| snapshot.device);
        let name = device.map_or_else(|| "a device".to_owned(), |device| device.to_string());
        match guard.restore() {
            Ok(restored) if !restored.is_empty() && !quiet => {
                note(&format!("{name}: restored {}", restored.join(", ")));
            }
            Ok(_) => {}
            Err(error) => {
                let error = anyhow::Error::from(error)
                    .context(format!("restoring {name}'s scheduler settings"));
                if failed.is_some() && !quiet {
                    note(&format!("{error:#}"));
                }
                failed.get_or_insert(error);
            }
        }
    }
    failed.map_or(Ok(()), Err)
}

/// The device `kernel compare` was given and its job file: `elevator kernel compare FILE.fio`
/// (no JOBFILE, no -w) reads its one positional argument as the job file.
fn compare_inputs(args: &KernelCompareArgs) -> Result<(Option<&str>, Option<&str>)> {
    let written = args.workload.as_deref().unwrap_or_default();
    // `--trace T` is `-w trace:T`, which names no job file.
    let workload = args.workload.as_deref().or(args.trace.as_deref());
    match (args.device.as_deref(), args.job_file.as_deref(), workload) {
        (device, Some(job), None) => Ok((device, Some(job))),
        (Some(job), None, None) => Ok((None, Some(job))),
        (device, None, Some(_)) => Ok((device, fio_live::job_file_of(None, written))),
        (None, None, None) => anyhow::bail!(
            "give a job file (elevator kernel compare [DEV] FILE.fio), a workload (-w) or a \
             trace (--trace)"
        ),
        (_, Some(_), Some(_)) => anyhow::bail!("give a job file or -w, not both"),
    }
}

fn run_compare(sysfs: &Sysfs, args: &KernelCompareArgs, stdout: &mut dyn Write) -> Result<()> {
    let traced = args.trace.as_ref().map(|trace| format!("{}{trace}", trace_replay::PREFIX));
    let written = traced.as_deref().or(args.workload.as_deref()).unwrap_or_default();
    let (given, job_path) = compare_inputs(args)?;
    // A bad --output-format is refused before anything runs.
    let formats =
        crate::sim::fio_formats(args.output_format.as_deref(), args.minimal, job_path, written)?;
    let job_file = job_path.map(|path| fio_live::load(path, LiveMode::Kernel)).transpose()?;
    let workload = match &job_file {
        Some(file) => file.spec.clone(),
        None => WorkloadSpec::parse(written)?,
    };
    let kernel = kernel_targets(sysfs, given, job_file.as_ref(), &workload, args.io.force)?;
    let first = &kernel.devices[0];
    let schedulers: Vec<KernelScheduler> = split_spec_list("scheduler", &args.schedulers)?
        .iter()
        .map(|text| KernelScheduler::parse(&first.name, text))
        .collect::<Result<_, _>>()?;
    validate_all(sysfs, &kernel.devices, &schedulers)?;
    let continue_on_error = plan::continue_on_error(&args.io)?;
    let workload = &kernel.workload;
    let guards = guard_all(sysfs, &kernel.devices)?;
    let stop = stop_or_restore_on_signals(&guards)?;
    let signals = StopSignals::record_only().context("installing the signal handlers")?;
    let options = CompareOptions {
        schedulers,
        seed: args.io.seed,
        passthrough: PassthroughOptions {
            backend: args.io.engine.into(),
            cache_drop: if args.drop_caches { CacheDrop::System } else { CacheDrop::Target },
            stop: Some(Arc::clone(&stop)),
            continue_on_error,
            keep_io_samples: elevator_live::run::fio_io_samples(workload),
            ..PassthroughOptions::default()
        },
    };
    let bar = LiveProgress::new();
    let current = std::cell::RefCell::new(String::new());
    let names = kernel.names();
    let mut starting = |scheduler: &KernelScheduler, applied: &[compare::AppliedOn]| {
        *current.borrow_mut() = scheduler.label();
        for (device, settings) in applied {
            for setting in settings {
                warn_adjusted(device, Some(&scheduler.name), setting);
            }
        }
        note(&format!("{names}: running {workload} under the kernel's {}", scheduler.label()));
    };
    let mut progress = |now: &Progress| bar.show(&current.borrow(), now);
    let devices: Vec<(BlockDevice, &RestoreGuard)> =
        kernel.devices.iter().cloned().zip(&guards).collect();
    let targets: Vec<CompareTarget<'_>> = kernel
        .targets
        .iter()
        .zip(&kernel.planned)
        .map(|(target, planned)| CompareTarget { target, planned: planned.clone() })
        .collect();
    let runs = compare::compare_on(
        sysfs,
        &devices,
        &targets,
        workload,
        &options,
        &mut starting,
        &mut progress,
    )
    .with_context(|| format!("comparing kernel schedulers on {names} with {workload}"))?;
    bar.finish();
    drop(devices);
    restore_all(guards, false)?;
    let mut report = Report::new(args.io.seed, env!("CARGO_PKG_VERSION"));
    let mut failures = Vec::new();
    let mut interrupted = false;
    for mut run in runs {
        failures.extend(plan::io_error_failure(&run.run, &run.io_errors, continue_on_error));
        // A run stopped by a failed I/O is partial too, but failed rather than interrupted.
        interrupted |= run.interrupted && signals.received().is_some();
        if let Some(reason) = signals.reason().filter(|_| run.run.partial) {
            run.run.partial_reason = Some(reason);
        }
        report.runs.push(run.run);
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
        note(
            "interrupted: stopped issuing, waited for I/O in flight, restored the devices; the report is partial",
        );
        return Err(Interrupted { signal: signals.received() }.into());
    }
    if !failures.is_empty() {
        return Err(CheckFailed(failures.join("\n")).into());
    }
    Ok(())
}

/// `elevator fio` on the kernel (`ELEVATOR_FIO_MODE=kernel`): `job`'s jobs on the block
/// device `given` names (`ELEVATOR_FIO_TARGET`) or the jobs' `filename`s — every block
/// device they name, as `kernel compare` takes them — under the kernel's `scheduler`
/// (`SCHED[:K=V,...]`, as `kernel compare -s` takes it) or, without one, each device's
/// current scheduler as it is (several devices must then have the same one). Every device's
/// scheduler and settings are snapshotted first and restored afterwards, as `kernel compare`
/// does. Says nothing on stderr (tools that run fio read it, fio-compat.md R6): the report,
/// and why the run failed when an I/O failed, for the caller to say.
pub(crate) fn run_fio_kernel(
    job: &fio_live::LiveJobFile,
    given: Option<&Path>,
    scheduler: Option<&str>,
    seed: u64,
) -> Result<(Report, Option<String>)> {
    if given.is_none() && job.filename.is_none() && job.targets.is_empty() {
        anyhow::bail!(
            "ELEVATOR_FIO_MODE=kernel needs a block device: a `filename=` in the jobs or \
             ELEVATOR_FIO_TARGET (e.g. /dev/loop0)"
        );
    }
    let sysfs = Sysfs::at("/sys");
    let given = given.map(|path| path.display().to_string());
    let kernel = kernel_targets(&sysfs, given.as_deref(), Some(job), &job.spec, false)?;
    let current;
    let text = match scheduler {
        Some(text) => text,
        None => {
            current = sysfs.scheduler(&kernel.devices[0])?.current;
            for device in &kernel.devices[1..] {
                let theirs = sysfs.scheduler(device)?.current;
                if theirs != current {
                    anyhow::bail!(
                        "{} runs {current} and {device} runs {theirs}: one run has one \
                         scheduler; set ELEVATOR_FIO_SCHEDULER",
                        kernel.devices[0]
                    );
                }
            }
            current.as_str()
        }
    };
    let schedulers = vec![KernelScheduler::parse(&kernel.devices[0].name, text)?];
    validate_all(&sysfs, &kernel.devices, &schedulers)?;
    let workload = &kernel.workload;
    let guards = guard_all(&sysfs, &kernel.devices)?;
    let stop = stop_or_restore_on_signals(&guards)?;
    let options = CompareOptions {
        schedulers,
        seed,
        passthrough: PassthroughOptions {
            stop: Some(stop),
            keep_io_samples: elevator_live::run::fio_io_samples(workload),
            ..PassthroughOptions::default()
        },
    };
    let devices: Vec<(BlockDevice, &RestoreGuard)> =
        kernel.devices.iter().cloned().zip(&guards).collect();
    let targets: Vec<CompareTarget<'_>> = kernel
        .targets
        .iter()
        .zip(&kernel.planned)
        .map(|(target, planned)| CompareTarget { target, planned: planned.clone() })
        .collect();
    let runs = compare::compare_on(
        &sysfs,
        &devices,
        &targets,
        workload,
        &options,
        &mut |_, _| {},
        &mut |_| {},
    )
    .with_context(|| {
        format!("running {workload} on {} under the kernel's {text}", kernel.names())
    })?;
    drop(devices);
    restore_all(guards, true)?;
    let mut report = Report::new(seed, env!("CARGO_PKG_VERSION"));
    let mut failure = None;
    for run in runs {
        failure = failure.or(plan::io_error_failure(
            &run.run,
            &run.io_errors,
            elevator_live::run::ContinueOnError::None,
        ));
        if run.interrupted && failure.is_none() {
            failure = Some(format!("interrupted: {}", elevator_live::run::STOPPED));
        }
        report.runs.push(run.run);
    }
    Ok((report, failure))
}
