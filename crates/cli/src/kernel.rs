//! `elevator kernel`: show, set, tune, persist, compare and restore the kernel's own
//! schedulers.
//!
//! Every command that changes a device (`set`, `tune`, `compare`) first keeps a snapshot of
//! it on disk through a `RestoreGuard`, and refuses while another command's snapshot of it
//! is there. `compare` restores when it ends; `set` and `tune` mean their change to last, so
//! they restore only when they fail half-way (a `tune` applies all its settings or none) and
//! otherwise forget the snapshot — it covers the moments of the change itself.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use anyhow::{Context, Result};
use elevator_core::split_spec_list;
use elevator_kernel::bootline::{self, Generation, QueueKind};
use elevator_kernel::compare::{self, CompareOptions, KernelScheduler};
use elevator_kernel::persist;
use elevator_kernel::queue::{self, QueueInfo};
use elevator_kernel::{
    Applied, BlockDevice, KernelError, RestoreGuard, Setting, SnapshotStore, Sysfs,
};
use elevator_live::passthrough::{CacheDrop, PassthroughOptions};
use elevator_live::run::Progress;
use elevator_live::{Target, TargetLock, TargetOptions};
use elevator_report::Report;
use elevator_workload::WorkloadSpec;

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
    }
    Ok(())
}

/// Locks the disk whose queue `set`/`tune` is about to change, so that a run or a compare
/// on it (which hold the same lock) is not changed under its feet. Only against the real
/// `/sys`: a fake tree's devices have no nodes to lock.
fn lock_queue(sysfs: &Sysfs, device: &BlockDevice) -> Result<Option<TargetLock>> {
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
/// the device at once and exits.
static SIGNALS: AtomicU32 = AtomicU32::new(0);

/// The first SIGINT (or SIGTERM, SIGHUP) sets the returned flag: the run stops issuing, waits
/// for I/O in flight and restores the device as it ends; a second restores the device at once
/// and exits.
fn stop_or_restore_on_signals(guard: &RestoreGuard) -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = Arc::clone(&stop);
    let handle = guard.handle();
    ctrlc::set_handler(move || {
        if SIGNALS.fetch_add(1, Ordering::SeqCst) == 0 {
            handler_stop.store(true, Ordering::SeqCst);
            note("stopping: waiting for I/O in flight, then restoring the device (again to force)");
        } else {
            let restored = handle.restore_now();
            if let Err(error) = &restored {
                note(&format!("could not restore the device: {error}"));
            }
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    })
    .context("installing the signal handler")?;
    Ok(stop)
}

fn run_compare(sysfs: &Sysfs, args: &KernelCompareArgs, stdout: &mut dyn Write) -> Result<()> {
    let device = sysfs.device(&args.device)?;
    let written = args.workload.as_deref().unwrap_or_default();
    let job_path = fio_live::job_file_of(args.job_file.as_deref(), written);
    // A bad --output-format is refused before anything runs.
    let formats =
        crate::sim::fio_formats(args.output_format.as_deref(), args.minimal, job_path, written)?;
    let job_file = job_path.map(|path| fio_live::load(path, LiveMode::Kernel)).transpose()?;
    let workload = match &job_file {
        Some(file) => file.spec.clone(),
        None => WorkloadSpec::parse(written)?,
    };
    let schedulers: Vec<KernelScheduler> = split_spec_list("scheduler", &args.schedulers)?
        .iter()
        .map(|text| KernelScheduler::parse(&device.name, text))
        .collect::<Result<_, _>>()?;
    compare::validate(sysfs, &device, &schedulers)?;
    let continue_on_error = plan::continue_on_error(&args.io)?;
    let path = match &device.partition {
        Some(partition) => PathBuf::from("/dev").join(partition),
        None => device.dev_path(),
    };
    if let Some(file) = &job_file {
        // The device is the target: a `filename` in the file must name it.
        file.target_path(Some(&path))?;
    }
    let target = Target::open(
        &path,
        &TargetOptions {
            write: workload.may_write(),
            force: args.io.force,
            create_bytes: None,
            stop: None,
        },
    )?;
    let workload = fio_live::on_target(&workload, &target);
    let guard = RestoreGuard::new(sysfs, &device)?;
    let stop = stop_or_restore_on_signals(&guard)?;
    let signals = StopSignals::record_only().context("installing the signal handlers")?;
    let options = CompareOptions {
        schedulers,
        seed: args.io.seed,
        passthrough: PassthroughOptions {
            backend: args.io.engine.into(),
            cache_drop: if args.drop_caches { CacheDrop::System } else { CacheDrop::Target },
            stop: Some(Arc::clone(&stop)),
            continue_on_error,
            keep_io_samples: elevator_live::run::fio_io_samples(&workload),
            ..PassthroughOptions::default()
        },
    };
    let bar = LiveProgress::new();
    let current = std::cell::RefCell::new(String::new());
    let mut starting = |scheduler: &KernelScheduler, applied: &[Applied]| {
        *current.borrow_mut() = scheduler.label();
        for setting in applied {
            warn_adjusted(&device, Some(&scheduler.name), setting);
        }
        note(&format!("{device}: running {workload} under the kernel's {}", scheduler.label()));
    };
    let mut progress = |now: &Progress| bar.show(&current.borrow(), now);
    let runs = compare::compare(
        sysfs,
        &device,
        &target,
        &workload,
        &options,
        &guard,
        &mut starting,
        &mut progress,
    )
    .with_context(|| format!("comparing kernel schedulers on {device} with {workload}"))?;
    bar.finish();
    let restored = guard.restore().context("restoring the device's scheduler settings")?;
    if !restored.is_empty() {
        note(&format!("{device}: restored {}", restored.join(", ")));
    }
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
            "interrupted: stopped issuing, waited for I/O in flight, restored the device; the report is partial",
        );
        return Err(Interrupted { signal: signals.received() }.into());
    }
    if !failures.is_empty() {
        return Err(CheckFailed(failures.join("\n")).into());
    }
    Ok(())
}

/// `elevator fio` on the kernel (`ELEVATOR_FIO_MODE=kernel`): `job`'s jobs on the block
/// device `given` names (`ELEVATOR_FIO_TARGET`) or the jobs' `filename`, under the kernel's
/// `scheduler` (`SCHED[:K=V,...]`, as `kernel compare -s` takes it) or, without one, the
/// device's current scheduler as it is. The device's scheduler and settings are snapshotted
/// first and restored afterwards, as `kernel compare` does. Says nothing on stderr (tools
/// that run fio read it, fio-compat.md R6): the report, and why the run failed when an I/O
/// failed, for the caller to say.
pub(crate) fn run_fio_kernel(
    job: &fio_live::LiveJobFile,
    given: Option<&Path>,
    scheduler: Option<&str>,
    seed: u64,
) -> Result<(Report, Option<String>)> {
    let named = match (given, &job.filename) {
        (Some(given), _) => given.to_path_buf(),
        (None, Some((named, _))) => named.clone(),
        (None, None) => anyhow::bail!(
            "ELEVATOR_FIO_MODE=kernel needs a block device: a `filename=` in the jobs or \
             ELEVATOR_FIO_TARGET (e.g. /dev/loop0)"
        ),
    };
    let sysfs = Sysfs::at("/sys");
    let device = sysfs.device(&named.display().to_string())?;
    let current;
    let text = match scheduler {
        Some(text) => text,
        None => {
            current = sysfs.scheduler(&device)?.current;
            current.as_str()
        }
    };
    let schedulers = vec![KernelScheduler::parse(&device.name, text)?];
    compare::validate(&sysfs, &device, &schedulers)?;
    let path = match &device.partition {
        Some(partition) => PathBuf::from("/dev").join(partition),
        None => device.dev_path(),
    };
    // A `filename` in the jobs must name the device.
    job.target_path(Some(&path))?;
    let workload = &job.spec;
    let target = Target::open(
        &path,
        &TargetOptions {
            write: workload.may_write(),
            force: false,
            create_bytes: None,
            stop: None,
        },
    )?;
    let workload = fio_live::on_target(workload, &target);
    let guard = RestoreGuard::new(&sysfs, &device)?;
    let stop = stop_or_restore_on_signals(&guard)?;
    let options = CompareOptions {
        schedulers,
        seed,
        passthrough: PassthroughOptions {
            stop: Some(stop),
            keep_io_samples: elevator_live::run::fio_io_samples(&workload),
            ..PassthroughOptions::default()
        },
    };
    let runs = compare::compare(
        &sysfs,
        &device,
        &target,
        &workload,
        &options,
        &guard,
        &mut |_, _| {},
        &mut |_| {},
    )
    .with_context(|| format!("running {workload} on {device} under the kernel's {text}"))?;
    guard.restore().context("restoring the device's scheduler settings")?;
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
