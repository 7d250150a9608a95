//! `elevator kernel compare`: one workload under each of the kernel's schedulers on one real
//! device, reported like a simulated or live run with `mode: "kernel"`.
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
use elevator_workload::WorkloadSpec;

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
    for scheduler in schedulers {
        let name = check_scheduler_name(device, &line, &scheduler.name)?;
        check_settings(sysfs, device, &line, name, &scheduler.settings)?;
    }
    Ok(())
}

/// Runs `workload` on `target` (the device node of `device`, opened by the caller with the
/// live engine's safety checks) under each scheduler. `guard` restores the device whatever
/// happens; `starting` is told each scheduler once it is switched to and tuned, with what the
/// settings became (the kernel may clamp or round: [`Applied::adjustment`]), before it runs.
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
    let schedulers = schedulers_to_run(sysfs, device, options)?;
    validate(sysfs, device, &schedulers)?;
    let original = guard.snapshot();
    let mut runs = Vec::new();
    for scheduler in schedulers {
        set_scheduler(sysfs, device, &scheduler.name)?;
        let applied = tune(sysfs, device, &scheduler.settings)?;
        starting(&scheduler, &applied);
        let plan = workload.plan(&[workload_target(target)], &Prng::new(options.seed))?;
        // A job file's run carries fio's disk_util of the device (elevator_live::diskutil).
        let disk_util = (!workload.fio_reporting().is_empty())
            .then(|| DiskUtilProbe::start(target.path()))
            .flatten();
        let before = DiskStats::read(sysfs, device)?;
        let result = passthrough::run_plan(target, plan, &options.passthrough, progress)?;
        let after = DiskStats::read(sysfs, device)?;
        let stats = after.since(&before);
        let mut config = BTreeMap::new();
        let mut set = |key: String, value: String| {
            config.insert(key, value);
        };
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
        for change in &applied {
            set(format!("kernel.set.{}", change.key), change.after.clone());
            if change.adjustment().is_some() {
                set(format!("kernel.asked.{}", change.key), change.written.clone());
            }
        }
        if let Some(original) = &original {
            set("kernel.original_scheduler".into(), original.scheduler.clone());
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
        set("target.path".into(), target.path().display().to_string());
        set("target.description".into(), target.describe());
        set("target.size_bytes".into(), target.size_bytes().to_string());
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
        let requests = stats.reads + stats.writes + stats.flushes;
        let mut extra: BTreeMap<String, u64> = [
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
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        if let Some(probe) = disk_util {
            probe.finish(&mut extra);
        }
        let run = Run {
            mode: Mode::Kernel,
            experiment: None,
            device: device.dev_path().display().to_string(),
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
                busy_ns: stats.io_ms * 1_000_000,
                seek_distance_sectors: 0,
                extra,
            },
            host_stats: BTreeMap::new(),
            partial: result.interrupted,
            partial_reason: result.interrupted.then(|| match &result.stopping_error {
                Some(what) => format!("stopped at the first failed I/O: {what}"),
                None => elevator_live::run::STOPPED.to_owned(),
            }),
        };
        let interrupted = result.interrupted;
        runs.push(KernelRun { run, interrupted, io_errors: result.io_errors });
        if interrupted {
            break;
        }
    }
    Ok(runs)
}
