//! `elevator kernel compare`: one workload under each of the kernel's schedulers on one real
//! device, or on several at once (an fio job file naming several: [`compare_on`]), reported
//! like a simulated or live run with `mode: "kernel"`.
//!
//! With several devices every one of them is switched to the scheduler (and tuned) before
//! its run, the workload's jobs each do their I/O on their own devices, and each device has
//! its guard. The report names every device (`device` is fio's list `a:b`, `kernel.devices`
//! the queues) and carries each device's settings and counts under `device.NAME.`; with one
//! device the keys are as they always were.
//!
//! For each scheduler: switch (the kernel resets `nr_requests` to its default), apply the
//! tunables given with it, write and drop the device's cached pages so that every scheduler
//! starts cold, run the workload with user-space scheduling off (every issuer on its own
//! thread with its I/O priority set; see [`elevator_live::passthrough`]), and read the
//! device's own counters (`/sys/block/DEV/stat`) around the run. A [`RestoreGuard`] puts
//! the original scheduler, tunables and queue attributes back when the comparison ends,
//! fails, panics or is interrupted, and keeps its snapshot on disk meanwhile.
//!
//! Every scheduler and setting is checked ([`validate`]) before the first switch, so that a
//! typo in the last `-s` entry stops the comparison before it has changed or run anything.

use std::collections::BTreeMap;

use elevator_core::Prng;
use elevator_live::Target;
use elevator_live::diskutil::DiskUtilProbe;
use elevator_live::passthrough::{self, PassthroughOptions};
use elevator_live::run::{Progress, workload_target};
use elevator_report::{DeviceStats, Mode, QueueStats, Run, SchedulerStats};
use elevator_workload::{Target as WorkloadTarget, WorkloadSpec};

use crate::error::KernelError;
use crate::guard::RestoreGuard;
use crate::queue::{
    Applied, DiskStats, Setting, check_scheduler_name, check_settings, set_scheduler, tune,
};
use crate::sysfs::{BlockDevice, Sysfs};

/// A kernel scheduler and the tunables to set on it: `bfq`, `mq-deadline:fifo_batch=8`,
/// `kyber:read_lat_nsec=1000000`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelScheduler {
    /// The kernel's name.
    pub name: String,
    /// Tunables and queue attributes to set after switching.
    pub settings: Vec<Setting>,
}

impl KernelScheduler {
    /// Parses `NAME[:KEY=VALUE,...]`.
    pub fn parse(device: &str, text: &str) -> Result<KernelScheduler, KernelError> {
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let settings = rest
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| Setting::parse(device, s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(KernelScheduler { name: name.trim().to_owned(), settings })
    }

    /// `name:key=value,...` as given.
    pub fn label(&self) -> String {
        let settings: Vec<String> =
            self.settings.iter().map(|s| format!("{}={}", s.key, s.value)).collect();
        if settings.is_empty() {
            self.name.clone()
        } else {
            format!("{}:{}", self.name, settings.join(","))
        }
    }
}

/// How to compare.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// The schedulers, in order; empty: every one the device offers.
    pub schedulers: Vec<KernelScheduler>,
    /// The workload's random streams.
    pub seed: u64,
    /// Threads, backend, cache drops, stop flag.
    pub passthrough: PassthroughOptions,
}

/// One scheduler's run.
#[derive(Clone, Debug)]
pub struct KernelRun {
    /// The report (`mode: "kernel"`).
    pub run: Run,
    /// Stopped early.
    pub interrupted: bool,
    /// I/Os that failed, and the first error.
    pub io_errors: (u64, Option<String>),
}

/// The schedulers `options` names, or every one the device offers (in the kernel's order).
pub fn schedulers_to_run(
    sysfs: &Sysfs,
    device: &BlockDevice,
    options: &CompareOptions,
) -> Result<Vec<KernelScheduler>, KernelError> {
    if !options.schedulers.is_empty() {
        return Ok(options.schedulers.clone());
    }
    Ok(sysfs
        .scheduler(device)?
        .available
        .into_iter()
        .map(|name| KernelScheduler { name, settings: Vec::new() })
        .collect())
}

/// Checks every scheduler name and every setting against what `device` offers, before
/// anything is switched: tunables of a scheduler that is not current are checked against
/// elevator's table of it (the kernel's names), queue attributes against the device.
pub fn validate(
    sysfs: &Sysfs,
    device: &BlockDevice,
    schedulers: &[KernelScheduler],
) -> Result<(), KernelError> {
    let line = sysfs.scheduler(device)?;
    // Linux prints a queue that cannot have a scheduler (a bio-based device: brd, dm, md) as
    // `none` without brackets (block/elevator.c, elv_iosched_show) and refuses any switch;
    // a blk-mq scheduler's name passes `check_scheduler_name` unlisted (its module loads on
    // the write), so such a queue is refused here, before any device of a comparison changes.
    let raw = sysfs.read(&device.queue_attr("scheduler"))?;
    let takes_none = !raw.contains('[');
    for scheduler in schedulers {
        if takes_none && scheduler.name != "none" {
            return Err(KernelError::UnknownScheduler {
                device: device.name.clone(),
                name: scheduler.name.clone(),
                available: line.available.clone(),
                hint: " (this queue takes no I/O scheduler: the kernel lists `none` without \
                       brackets for a bio-based device)"
                    .to_owned(),
            });
        }
        let name = check_scheduler_name(device, &line, &scheduler.name)?;
        check_settings(sysfs, device, &line, name, &scheduler.settings)?;
    }
    Ok(())
}

/// Runs `workload` on `target` (the device node of `device`, opened by the caller with the
/// live engine's safety checks) under each scheduler. `guard` restores the device whatever
/// happens; `starting` is told each scheduler once it is switched to and tuned, with what the
/// settings became (the kernel may clamp or round: [`Applied::adjustment`]), before it runs.
/// The workload addresses the target as device 0 ([`workload_target`]).
#[allow(clippy::too_many_arguments)]
pub fn compare(
    sysfs: &Sysfs,
    device: &BlockDevice,
    target: &Target,
    workload: &WorkloadSpec,
    options: &CompareOptions,
    guard: &RestoreGuard,
    starting: &mut dyn FnMut(&KernelScheduler, &[Applied]),
    progress: &mut dyn FnMut(&Progress),
) -> Result<Vec<KernelRun>, KernelError> {
    let targets = [CompareTarget { target, planned: workload_target(target) }];
    compare_on(
        sysfs,
        &[(device.clone(), guard)],
        &targets,
        workload,
        options,
        &mut |scheduler, applied| starting(scheduler, &applied[0].1),
        progress,
    )
}

/// One target of a comparison: what the caller opened, and the device the workload plans it
/// as (the `i`-th target is `Place::Device(i)`).
#[derive(Debug)]
pub struct CompareTarget<'a> {
    /// The device node (or partition) the I/O goes to.
    pub target: &'a Target,
    /// Its name and size as the workload sees it (a job file's `filename` less `/dev/`).
    pub planned: WorkloadTarget,
}

/// What one device's settings became when its scheduler was switched to and tuned.
pub type AppliedOn = (BlockDevice, Vec<Applied>);

/// [`compare`] on several devices at once (a job file naming several): for each scheduler,
/// EVERY device in `devices` (each a queue: a disk, however many of `targets` are on it)
/// is switched to it and tuned before the run, and the workload runs on all `targets`
/// together, each job on its own. Each device's guard restores it whatever happens; the
/// callers take every snapshot before the first switch. Every scheduler and setting is
/// checked on every device first, so a device that lacks one stops the comparison before any
/// device is changed. With no schedulers given, those every device offers run (in the first
/// device's order).
pub fn compare_on(
    sysfs: &Sysfs,
    devices: &[(BlockDevice, &RestoreGuard)],
    targets: &[CompareTarget<'_>],
    workload: &WorkloadSpec,
    options: &CompareOptions,
    starting: &mut dyn FnMut(&KernelScheduler, &[AppliedOn]),
    progress: &mut dyn FnMut(&Progress),
) -> Result<Vec<KernelRun>, KernelError> {
    let Some((first, _)) = devices.first() else { return Ok(Vec::new()) };
    let mut schedulers = schedulers_to_run(sysfs, first, options)?;
    if options.schedulers.is_empty() {
        for (device, _) in &devices[1..] {
            let offered = sysfs.scheduler(device)?.available;
            schedulers.retain(|scheduler| offered.contains(&scheduler.name));
        }
    }
    for (device, _) in devices {
        validate(sysfs, device, &schedulers)?;
    }
    let several = devices.len() > 1;
    let target_refs: Vec<&Target> = targets.iter().map(|t| t.target).collect();
    let planned: Vec<WorkloadTarget> = targets.iter().map(|t| t.planned.clone()).collect();
    let mut runs = Vec::new();
    for scheduler in schedulers {
        let mut applied_on: Vec<AppliedOn> = Vec::new();
        for (device, _) in devices {
            set_scheduler(sysfs, device, &scheduler.name)?;
            let applied = tune(sysfs, device, &scheduler.settings)?;
            applied_on.push((device.clone(), applied));
        }
        starting(&scheduler, &applied_on);
        let plan = workload.plan(&planned, &Prng::new(options.seed))?;
        // A job file's run carries fio's disk_util of every device (elevator_live::diskutil).
        let disk_util = (!workload.fio_reporting().is_empty())
            .then(|| DiskUtilProbe::start_all(target_refs.iter().map(|t| t.path())))
            .flatten();
        let before = devices
            .iter()
            .map(|(device, _)| DiskStats::read(sysfs, device))
            .collect::<Result<Vec<_>, _>>()?;
        let result = passthrough::run_plan_on(&target_refs, plan, &options.passthrough, progress)?;
        let mut per_device = Vec::new();
        for ((device, _), before) in devices.iter().zip(&before) {
            per_device.push(DiskStats::read(sysfs, device)?.since(before));
        }
        let mut config = BTreeMap::new();
        for ((device, guard), (_, applied)) in devices.iter().zip(&applied_on) {
            // One device: the keys as they always were; several: each under `device.NAME.`.
            let prefix = if several { format!("device.{}.", device.name) } else { String::new() };
            queue_config(sysfs, device, guard, applied, &mut |key, value| {
                config.insert(format!("{prefix}{key}"), value);
            })?;
        }
        let mut set = |key: String, value: String| {
            config.insert(key, value);
        };
        if several {
            let names: Vec<&str> = devices.iter().map(|(device, _)| device.name.as_str()).collect();
            set("kernel.devices".into(), names.join(","));
        }
        set("kernel.backend".into(), result.backend.to_owned());
        if let Some(why) = &result.fallback {
            set("kernel.fallback".into(), why.clone());
        }
        set(
            "kernel.cache_drop".into(),
            format!("{:?}", options.passthrough.cache_drop).to_lowercase(),
        );
        set("live.seed".into(), options.seed.to_string());
        // fio's list notation (`a:b`) for several targets.
        let paths: Vec<String> =
            target_refs.iter().map(|t| t.path().display().to_string()).collect();
        set("target.path".into(), paths.join(":"));
        let described: Vec<String> = target_refs.iter().map(|t| t.describe()).collect();
        set("target.description".into(), described.join("; "));
        let size_bytes: u64 = target_refs.iter().map(|t| t.size_bytes()).sum();
        set("target.size_bytes".into(), size_bytes.to_string());
        if several {
            for target in targets {
                set(
                    format!("target.{}.size_bytes", target.planned.name),
                    target.target.size_bytes().to_string(),
                );
            }
        }
        for region in &result.files {
            set(
                format!("file.{}", region.name),
                format!(
                    "{} at {}",
                    elevator_core::format_size(region.len_bytes),
                    elevator_core::format_size(region.start_bytes)
                ),
            );
        }
        for (issuer, priority) in &result.priorities {
            set(format!("ioprio.{issuer}"), priority.clone());
        }
        for (key, value) in workload.resolved() {
            set(format!("workload.{key}"), value);
        }
        let stats = per_device.iter().fold(DiskStats::default(), |sum, one| sum.plus(one));
        let requests = stats.reads + stats.writes + stats.flushes;
        let mut extra: BTreeMap<String, u64> = BTreeMap::new();
        let mut counts = |prefix: &str, stats: &DiskStats| {
            for (name, value) in [
                ("reads", stats.reads),
                ("writes", stats.writes),
                ("flushes", stats.flushes),
                ("read_merges", stats.read_merges),
                ("write_merges", stats.write_merges),
                ("read_sectors", stats.read_sectors),
                ("write_sectors", stats.write_sectors),
                ("read_ms", stats.read_ms),
                ("write_ms", stats.write_ms),
                ("time_in_queue_ms", stats.queue_ms),
            ] {
                extra.insert(format!("{prefix}{name}"), value);
            }
        };
        // Summed over the devices, and (several) each device's own under `device.NAME.`.
        counts("", &stats);
        if several {
            for ((device, _), stats) in devices.iter().zip(&per_device) {
                counts(&format!("device.{}.", device.name), stats);
            }
        }
        if let Some(probe) = disk_util {
            probe.finish(&mut extra);
        }
        let device_paths: Vec<String> =
            devices.iter().map(|(device, _)| device.dev_path().display().to_string()).collect();
        let run = Run {
            mode: Mode::Kernel,
            experiment: None,
            device: device_paths.join(":"),
            workload: workload.to_string(),
            scheduler: scheduler.label(),
            config,
            phases: result.phases,
            scheduler_stats: SchedulerStats {
                dispatched: requests,
                merged: stats.read_merges + stats.write_merges,
                idle_ns: 0,
                counters: BTreeMap::new(),
            },
            queue_stats: QueueStats::default(),
            device_stats: DeviceStats {
                requests,
                // The busiest device's time: the devices work side by side.
                busy_ns: per_device.iter().map(|s| s.io_ms).max().unwrap_or(0) * 1_000_000,
                seek_distance_sectors: 0,
                extra,
            },
            host_stats: BTreeMap::new(),
            partial: result.interrupted,
            partial_reason: result.interrupted.then(|| match &result.stopping_error {
                Some(what) => format!("stopped at the first failed I/O: {what}"),
                None => elevator_live::run::STOPPED.to_owned(),
            }),
            host_cpu: None,
            dispatches: None,
        };
        let interrupted = result.interrupted;
        runs.push(KernelRun { run, interrupted, io_errors: result.io_errors });
        if interrupted {
            break;
        }
    }
    Ok(runs)
}

/// The report's description of one device's queue during a run: its scheduler line, the
/// scheduler's tunables, the queue attributes, what `-s` set and what it was before.
fn queue_config(
    sysfs: &Sysfs,
    device: &BlockDevice,
    guard: &RestoreGuard,
    applied: &[Applied],
    set: &mut dyn FnMut(String, String),
) -> Result<(), KernelError> {
    let line = sysfs.scheduler(device)?;
    set("kernel.scheduler_line".into(), line.render());
    for (name, value) in sysfs.iosched(device) {
        set(format!("scheduler.{name}"), value);
    }
    for attr in ["nr_requests", "read_ahead_kb", "max_sectors_kb", "rotational", "nomerges"] {
        if let Some(value) = sysfs.read_optional(&device.queue_attr(attr)) {
            set(format!("queue.{attr}"), value);
        }
    }
    for change in applied {
        set(format!("kernel.set.{}", change.key), change.after.clone());
        if change.adjustment().is_some() {
            set(format!("kernel.asked.{}", change.key), change.written.clone());
        }
    }
    if let Some(original) = guard.snapshot() {
        set("kernel.original_scheduler".into(), original.scheduler);
    }
    Ok(())
}
