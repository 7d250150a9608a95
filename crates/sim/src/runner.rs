//! The runner: one workload, one scheduler, one host and topology, start to finish.
//!
//! ```text
//! issuer.poll ─Submit(io)─┬─ O_DIRECT ─> bios ───────────────┐
//!                         └─ buffered ─> host (page cache) ──┴─> BlockQueue::submit ─> scheduler
//!                              │ read-ahead, write-back            │ next_request: Issue
//!                              │                  (link) DeviceModel::submit ... advance
//!   issuer.complete <─ host: done at <─ bios done <─ BlockQueue::complete <─┘
//! ```
//!
//! Everything happens at events popped from one [`EventQueue`] in (time, sequence) order:
//! issuers waking from think time, device steps, the scheduler's `Idle`/plug wake-ups, link
//! transfers, the host's timers and the host's finished operations. After every event the
//! devices it touched are pumped: the queue is asked for requests while the device has room.
//!
//! Each device's queue is driven through its [`Submitter`], the one submit path that the live
//! engine and the test harness use too: I/O is split into bios at `max_sectors_kb`, a bio the
//! request pool refuses is **parked** with every later bio of the same process for that device,
//! in order, and when the pool wakes the process its parked bios go in until one is refused
//! again. A process is one sleeping task, so whether the bios came from its own O_DIRECT
//! call or from the host acting for it (read-ahead, a throttled writer's write-back, the
//! flusher), they wait in one line. The host learns that a batch of its bios has been taken in
//! full, which is what a throttled writer and the flusher wait for.
//!
//! Phases run one after another; a phase ends when all its issuers are done and none of their
//! operations is outstanding. Host work (write-back) goes on across phases. Every run is bounded
//! ([`Bounds`]); hitting a bound, or a stall (issuers waiting with nothing that could ever wake
//! them), is an error that says where and when.
//!
//! A host running 2.4.21 (`KernelBase::V2_4_21`) gets the 2.4 block layer
//! (linux-2.4-elevator.md §1, §4.2, §5, §6.6; `QueueConfig::linux_2_4`): pools sized from
//! its memory, 4 KiB buffer heads from the page cache, RHEL 3's direct-I/O super bhs, and
//! plugging until `tq_disk`, which unplugs every queue of the host: run by a task that waits
//! for its I/O, after each direct-I/O submission, and whenever the host asks for an unplug
//! (its daemons). Deviations from Linux: a direct I/O larger than 512 KiB is submitted whole,
//! where 2.4 submits it 512 KiB at a time and waits for each chunk (§6.6); and when a 2.4
//! queue holds plugged requests and nothing else is left to happen, the runner runs
//! `tq_disk` at once where kupdated would within 5 s (§6.4), rather than report a stall.

use crate::LookupMap;
use std::collections::BTreeMap;

use elevator_core::check::check_queue;
use elevator_core::{
    BH_SECTORS_2_4, Bio, BioTag, BlockQueue, Duration, Instant, IoPriority, KernelBase,
    KernelVersion, Offered, Op, Prng, ProcessId, Pull, QueueConfig, RequestFlags, RequestId,
    SECTOR_SIZE_BYTES, Sector, Submitter,
};
use elevator_report::fio::FioDirection;
use elevator_report::{
    DeviceStats as ReportDeviceStats, ErrorDirection, Mode, PhaseRecorder,
    QueueStats as ReportQueueStats, Run, SchedulerStats,
};
use elevator_sched::{BlockLayer, SchedulerSpec};
use elevator_workload::{
    FailedIo, Io, IoFailure, IoId, IoKind, Issuer, Place, Poll, Target, WorkloadSpec,
};

use crate::device::{Command, CommandId, DeviceSpec};
use crate::engine::EventQueue;
use crate::host::blkmq::{self, BlkMq};
use crate::host::spec::HostSpec;
use crate::host::{Host, HostAction, HostDevice, HostError, HostOpKind, HostPlace};
use crate::iscsi::{Fabric, FabricAction, FabricStats};
use crate::topology::{Flow, Multipath, Topology};

/// Limits on a run. Reaching one is an error, never a silent stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Events processed.
    pub max_events: u64,
    /// Simulated time.
    pub max_time: Duration,
    /// Events at a single instant before the run is stopped as stuck: a device that completes
    /// work in no time, behind issuers that never wait, would otherwise run forever without
    /// simulated time moving (sweep seed 203349: an array with `overhead=0` and a write-back
    /// cache under OLTP users with no think time). The default, 2^22, is generous: a phase
    /// start with thousands of issuers takes a few thousand.
    pub max_events_at_one_instant: u64,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            max_events: 1 << 36,
            max_time: Duration::from_secs(7 * 24 * 3600),
            max_events_at_one_instant: 1 << 22,
        }
    }
}

/// Block-layer settings (`/sys/block/DEV/queue/*`). `max_sectors_kb` and `depth` come from
/// each device's driver (`device/driver.rs`) unless set here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSettings {
    /// `nr_requests`.
    pub nr_requests: u32,
    /// Overrides `max_sectors_kb`, which is otherwise the driver's request limit under the
    /// host's kernel.
    pub max_sectors_kb: Option<u32>,
    /// `read_ahead_kb`: the largest read-ahead window of buffered reads.
    pub read_ahead_kb: u32,
    /// Plugging on or off (default on, as every 2.6 kernel).
    pub plugging: bool,
    /// Overrides the queue depth, which is otherwise the driver's per-device depth (never
    /// more than the device takes).
    pub depth: Option<u32>,
}

/// A multipath path's depth when neither the spec nor the driver gives one: qla2xxx's 32,
/// the FC HBA the simulator assumed before drivers were modelled (host-mechanisms.md §2.3).
const GENERIC_PATH_DEPTH: u32 = 32;

impl Default for QueueSettings {
    fn default() -> QueueSettings {
        let defaults = QueueConfig::default();
        QueueSettings {
            nr_requests: defaults.nr_requests,
            max_sectors_kb: None,
            read_ahead_kb: 128,
            // Every 2.6 kernel plugged its queues; the simulator does too unless told not to.
            plugging: true,
            depth: None,
        }
    }
}

/// Everything a simulation needs besides the scheduler and the workload.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The seed: with the configuration, the whole input.
    pub seed: u64,
    /// The device (or topology) spec.
    pub device: DeviceSpec,
    /// The host: memory, processors, write-back tunables.
    pub host: HostSpec,
    /// Block-layer settings.
    pub queue: QueueSettings,
    /// Limits.
    pub bounds: Bounds,
    /// Audit every queue after every event ([`CHECK_BY_DEFAULT`]: on in debug builds, and so
    /// in every test, off in release builds, where it would cost more than the simulation).
    pub check_invariants: bool,
    /// Keep at most this many samples of the dispatched requests in the report
    /// ([`elevator_report::DispatchSamples`], for an HTML report's picture); 0: none.
    pub dispatch_samples: usize,
    /// The length of each interval of the phases' time series (`phases[].series`); `None`:
    /// the process's default (`elevator_report::series::interval`, 1 s unless set).
    pub series_interval: Option<elevator_core::Duration>,
}

/// Whether simulations audit their queues unless told otherwise: in debug builds (every test
/// and `cargo run` without `--release`) yes, in release builds no.
pub const CHECK_BY_DEFAULT: bool = cfg!(debug_assertions);

impl SimConfig {
    /// A configuration with the default host, queue settings and bounds.
    pub fn new(seed: u64, device: DeviceSpec) -> SimConfig {
        SimConfig {
            seed,
            device,
            host: HostSpec::default_host(),
            queue: QueueSettings::default(),
            bounds: Bounds::default(),
            check_invariants: CHECK_BY_DEFAULT,
            dispatch_samples: 0,
            series_interval: None,
        }
    }
}

/// Why a simulation stopped early.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The workload does not fit the devices, or a value is impossible.
    #[error(transparent)]
    Param(#[from] elevator_core::ParamError),
    /// The block-layer settings are out of range.
    #[error("queue settings: {0}")]
    Queue(#[from] elevator_core::QueueConfigError),
    /// A bound was hit.
    #[error(
        "the run hit its bound on {what} ({limit}) at simulated time {at}; raise it or shrink the workload"
    )]
    Bound {
        /// Which bound.
        what: &'static str,
        /// Its value.
        limit: String,
        /// When.
        at: Instant,
    },
    /// Issuers wait but nothing can wake them.
    #[error("the run stalled at {at}: {detail}")]
    Stalled {
        /// When.
        at: Instant,
        /// Who was waiting on what.
        detail: String,
    },
    /// Files grew past the space left on their device: the filesystem's journal or log and
    /// ext3's indirect blocks take space too, so files that fit by size may not fit once
    /// written.
    #[error("issuer {issuer}: {problem}")]
    NoSpace {
        /// The issuer.
        issuer: String,
        /// Which device filled up.
        problem: String,
    },
    /// An issuer asked for I/O the devices cannot take.
    #[error("issuer {issuer}: {problem}")]
    BadIo {
        /// The issuer.
        issuer: String,
        /// What was wrong.
        problem: String,
    },
    /// A queue invariant broke (a bug).
    #[error(transparent)]
    Invariant(#[from] elevator_core::check::InvariantViolation),
}

/// Simulates `workload` under `scheduler` on `config`'s host and device; returns the report.
pub fn run(
    config: &SimConfig,
    scheduler: &SchedulerSpec,
    workload: &WorkloadSpec,
) -> Result<Run, SimError> {
    run_audited(config, scheduler, workload).map(|(run, _)| run)
}

/// How far a running simulation got, for a progress display on another thread: the simulated
/// time and the phase, updated every few thousand events. Reading it never changes the run.
#[derive(Debug, Default)]
pub struct SimProgress {
    simulated_ns: std::sync::atomic::AtomicU64,
    phase: std::sync::atomic::AtomicUsize,
    phases: std::sync::atomic::AtomicUsize,
}

impl SimProgress {
    /// Simulated time reached.
    pub fn simulated(&self) -> elevator_core::Duration {
        elevator_core::Duration::from_nanos(
            self.simulated_ns.load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// The phase running (from 1) and how many there are; (0, 0) before the first.
    pub fn phase(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.phase.load(Relaxed), self.phases.load(Relaxed))
    }
}

/// Events between two updates of a [`SimProgress`].
const PROGRESS_EVERY_EVENTS: u64 = 1 << 14;

/// [`run`], reporting its progress in `progress` as it goes.
pub fn run_watched(
    config: &SimConfig,
    scheduler: &SchedulerSpec,
    workload: &WorkloadSpec,
    progress: &std::sync::Arc<SimProgress>,
) -> Result<Run, SimError> {
    run_audited_watched(config, scheduler, workload, Some(progress.clone())).map(|(run, _)| run)
}

/// What a finished run held at its peak, for checking that its memory stayed bounded (the
/// seeded sweep, [`crate::sweep`]). Counts, not bytes: each is a structure whose entries
/// have a fixed size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunAudit {
    /// Events processed.
    pub events: u64,
    /// Most events pending at once, superseded wake-ups included: a host or fabric timer
    /// rescheduled, or an issuer's sleep a post ended, leaves its old event in the heap until
    /// its time (a device's step and a queue's wake-up are moved in place instead).
    pub events_pending_peak: usize,
    /// Most events pending at once that were not superseded: at most one wake-up per issuer,
    /// one completion per host operation, one transfer or completion per request, one step
    /// and one wake-up per device and one host timer.
    pub live_events_peak: usize,
    /// Most host operations (buffered I/O of issuers) outstanding at once.
    pub host_ops_peak: usize,
    /// Queues in the topology: one per device, or one per path of a multipath device (each
    /// has a wake-up pending at most, and there are no more devices than queues to step).
    pub devices: usize,
    /// Most bios outstanding at once: the slab of bios waiting for their request (it is
    /// reused, so its length is its peak).
    pub bios_pending_peak: usize,
    /// Issuers of the largest phase.
    pub issuers_peak: usize,
    /// Requests every device's queue can hold at once, summed (their tables' capacity).
    pub requests_capacity: usize,
    /// Commands every device takes at once, summed (the queue depths in force).
    pub depth_total: u64,
    /// Page-cache chunks held at the end of the run.
    pub cache_chunks_at_end: u64,
    /// The page cache's capacity in chunks (it may overshoot while chunks are pinned, and
    /// evicts back on the next insertion).
    pub cache_capacity_chunks: u64,
}

/// [`run`], also returning the run's [`RunAudit`]. With `check_invariants`, the end of the run
/// is audited too: every request allocated completed exactly once or was merged away, every
/// queue, device, link and pending-bio slot is empty, every host operation finished.
pub fn run_audited(
    config: &SimConfig,
    scheduler: &SchedulerSpec,
    workload: &WorkloadSpec,
) -> Result<(Run, RunAudit), SimError> {
    run_audited_watched(config, scheduler, workload, None)
}

fn run_audited_watched(
    config: &SimConfig,
    scheduler: &SchedulerSpec,
    workload: &WorkloadSpec,
    progress: Option<std::sync::Arc<SimProgress>>,
) -> Result<(Run, RunAudit), SimError> {
    // The topology is built once: device models can be costly to set up (zone tables).
    let topology = config.device.topology()?;
    let targets = topology_targets(&topology);
    let prng = Prng::new(config.seed);
    let plan = workload.plan(&targets, &prng.fork("workload"))?;
    let label = workload.to_string();
    let settings: Vec<(String, String)> =
        workload.resolved().into_iter().map(|(key, value)| (key.to_owned(), value)).collect();
    let reporting = workload.fio_reporting();
    let fio = FioRecording {
        // fio's log files (`write_bw_log`, ...) need every I/O; kept only when a job asks.
        io_samples: reporting.iter().any(|job| {
            job.options.iter().any(|(name, _)| name.starts_with("write_") && name.ends_with("_log"))
        }),
        // A job file's run carries fio's disk_util figures for its outputs.
        disk_stats: !reporting.is_empty(),
    };
    run_topology(config, scheduler, topology, plan, &label, &settings, Watch { fio, progress })
}

/// What a run records for fio's outputs beyond elevator's report (elevator_report::fio).
#[derive(Clone, Copy, Debug, Default)]
struct FioRecording {
    /// Every operation, for fio's log files.
    io_samples: bool,
    /// Each device's `/proc/diskstats` figures, for `disk_util`.
    disk_stats: bool,
}

/// What a run records beside its report, and who watches it.
struct Watch {
    fio: FioRecording,
    progress: Option<std::sync::Arc<SimProgress>>,
}

/// The devices `config` stands for, as workloads address them.
pub fn targets(config: &SimConfig) -> Result<Vec<Target>, SimError> {
    Ok(topology_targets(&config.device.topology()?))
}

pub(crate) fn topology_targets(topology: &Topology) -> Vec<Target> {
    // An iSCSI topology's workload runs on the initiator, whose one target is the pool.
    if let Some(spec) = &topology.initiator {
        let lun_bytes = topology
            .devices
            .iter()
            .map(|device| device.model.capacity_sectors() * SECTOR_SIZE_BYTES)
            .min()
            .unwrap_or(0);
        let usable = lun_bytes
            .saturating_sub(crate::iscsi::zfs::LABEL_START_BYTES)
            .saturating_sub(crate::iscsi::zfs::LABEL_END_BYTES);
        return vec![Target {
            name: "pool".to_owned(),
            capacity_bytes: usable * u64::from(spec.mirrors),
            zones: None,
        }];
    }
    topology
        .devices
        .iter()
        .map(|device| Target {
            name: device.name.clone(),
            capacity_bytes: device.model.capacity_sectors() * SECTOR_SIZE_BYTES,
            zones: device.model.zones().map(|zones| elevator_workload::TargetZones {
                zone_size_bytes: zones.zone_size_sectors() * SECTOR_SIZE_BYTES,
                zone_capacity_bytes: zones.zone_capacity_sectors() * SECTOR_SIZE_BYTES,
                conventional_zones: zones.conventional_sectors() / zones.zone_size_sectors(),
                max_open_zones: zones.max_open_zones(),
            }),
        })
        .collect()
}

/// Simulates a ready-made plan (built for [`targets`]), reporting it as `label` with
/// `settings` as its resolved keys: for issuers written in code rather than a spec.
pub fn run_plan(
    config: &SimConfig,
    scheduler: &SchedulerSpec,
    plan: elevator_workload::WorkloadPlan,
    label: &str,
    settings: &[(String, String)],
) -> Result<Run, SimError> {
    let fio = FioRecording::default();
    let watch = Watch { fio, progress: None };
    run_topology(config, scheduler, config.device.topology()?, plan, label, settings, watch)
        .map(|(run, _)| run)
}

fn run_topology(
    config: &SimConfig,
    scheduler: &SchedulerSpec,
    topology: Topology,
    plan: elevator_workload::WorkloadPlan,
    label: &str,
    settings: &[(String, String)],
    watch: Watch,
) -> Result<(Run, RunAudit), SimError> {
    let Watch { fio, progress } = watch;
    if let Some(interval) = config.series_interval {
        elevator_report::series::check_interval(interval).map_err(|problem| {
            SimError::Param(elevator_core::ParamError::Impossible {
                component: "report".to_owned(),
                key: "series_interval",
                problem,
            })
        })?;
    }
    let files: Vec<(usize, u64)> = plan.files.iter().map(|f| (f.device, f.size_bytes)).collect();
    // A bare scheduler name runs the version the host's kernel has (a 2.6.9 host's `cfq` is
    // cfq v1, workload-mechanisms.md §4.4); the report names the version that ran.
    let scheduler = &scheduler.for_kernel(config.host.kernel()).map_err(|error| {
        SimError::Param(elevator_core::ParamError::Impossible {
            component: "scheduler".to_owned(),
            key: "kernel",
            problem: error.to_string(),
        })
    })?;
    let mut sim = Simulation::new(config, scheduler, topology, &files)?;
    if let Some(progress) = &progress {
        progress.phases.store(plan.phases.len(), std::sync::atomic::Ordering::Relaxed);
    }
    sim.progress = progress;
    let last_phase_of = last_phase_of_each_process(&plan);
    let mut phases = Vec::with_capacity(plan.phases.len());
    let issuers_peak = plan.phases.iter().map(|phase| phase.issuers.len()).max().unwrap_or(0);
    for (index, phase) in plan.phases.into_iter().enumerate() {
        let exits: Vec<bool> =
            phase.issuers.iter().map(|issuer| last_phase_of[&issuer.process()] == index).collect();
        let names = phase.issuers.iter().map(|issuer| issuer.name().to_owned()).collect();
        let mut recorder = PhaseRecorder::new(phase.name, sim.now, names);
        if let Some(interval) = config.series_interval {
            recorder.set_series_interval(interval);
        }
        if fio.io_samples {
            recorder.keep_io_samples();
        }
        if let Some(progress) = &sim.progress {
            progress.phase.store(index + 1, std::sync::atomic::Ordering::Relaxed);
        }
        let before = sim.start_queue_window();
        sim.run_phase(phase.issuers, &exits, phase.stonewall, &mut recorder)?;
        let mut finished = recorder.finish();
        finished.queue_stats = Some(sim.queue_window_since(&before));
        phases.push(finished);
    }
    sim.settle()?;
    if sim.check {
        sim.audit_end()?;
    }
    let audit = sim.run_audit(issuers_peak);
    let mut run = sim.report(config, scheduler, label, settings, phases);
    if fio.disk_stats {
        // fio's disk_util, per device (elevator_report::fio reads these keys).
        for device in &sim.devices {
            let busy_ns = device.model.stats().busy_ns;
            let disk = device.disk;
            let figures = [
                ("read_ios", disk.ios[0]),
                ("write_ios", disk.ios[1]),
                ("read_merges", disk.merges[0]),
                ("write_merges", disk.merges[1]),
                ("read_sectors", disk.sectors[0]),
                ("write_sectors", disk.sectors[1]),
                ("read_ticks_ns", disk.ticks_ns[0]),
                ("write_ticks_ns", disk.ticks_ns[1]),
                ("busy_ns", busy_ns),
                ("elapsed_ns", sim.now.as_nanos()),
            ];
            for (key, value) in figures {
                let key =
                    format!("{}{}.{key}", elevator_report::fio::DISK_UTIL_PREFIX, device.name);
                run.device_stats.extra.insert(key, value);
            }
        }
    }
    Ok((run, audit))
}

/// The queue's `nr_requests`: selecting 2.6.9's cfq sets it to what the host's release gives
/// (8192 through RHEL 4 U5, workload-mechanisms.md §4.1), unless the run sets another value
/// than the default itself (as writing sysfs after boot would). The queue has no hook for a
/// scheduler to set it at attach, so it is decided here.
///
/// A 2.4 queue's pool is sized once from the host's memory and is not tunable
/// (linux-2.4-elevator.md §5): `nr_requests` is then the count per direction, and a run that
/// sets another value is refused.
fn nr_requests_for(config: &SimConfig, scheduler: &SchedulerSpec) -> Result<u32, SimError> {
    let chosen = config.queue.nr_requests;
    let kernel = config.host.kernel();
    if let Some(per_direction) = kernel.requests_2_4(usable_ram_mib(config)) {
        if chosen != QueueSettings::default().nr_requests {
            return Err(SimError::Param(elevator_core::ParamError::Impossible {
                component: "queue".to_owned(),
                key: "nr_requests",
                problem: format!(
                    "{kernel} has no nr_requests: its pool is sized from the host's memory \
                     ({per_direction} reads + {per_direction} writes here)"
                ),
            }));
        }
        return Ok(per_direction);
    }
    if scheduler.kind() != elevator_sched::SchedulerKind::CfqV1
        || chosen != QueueSettings::default().nr_requests
    {
        return Ok(chosen);
    }
    Ok(kernel.cfq_nr_requests().unwrap_or(chosen))
}

/// sd's `max_sectors` under 2.4, the elevator's own merge limit for every disk
/// (linux-2.4-elevator.md §3.1).
const SD_MAX_SECTORS_2_4: u32 = 1024;

/// The host's memory in MiB as 2.4 sizes its request pools by: the nominal `ram` (the
/// kernel's count of usable pages is a little lower; see the deviations of `linux_2_4_queue`).
fn usable_ram_mib(config: &SimConfig) -> u64 {
    config.host.params.size("ram") >> 20
}

/// The 2.4 block layer's settings for a queue behind a driver with `limits`, on a 2.4 host
/// (linux-2.4-elevator.md §3.1, §4.1, §5, §6.2); `None` on 2.6.
///
/// Deviations from Linux: the pool is sized from the nominal memory, where the kernel counts
/// the usable pages (a little less; the sizes differ only on hosts of 512 MiB or less whose
/// usable memory crosses a multiple of 8 MiB). Requests return to the pool at dispatch for
/// every driver but IDE's (SCSI's rule, §5).
fn linux_2_4_queue(
    config: &SimConfig,
    limits: &crate::device::driver::DriverLimits,
) -> Option<elevator_core::Linux2_4Queue> {
    use crate::device::driver::Driver;
    let kernel = config.host.kernel();
    kernel.requests_2_4(usable_ram_mib(config))?;
    let elevator_sectors = config.queue.max_sectors_kb.map_or(SD_MAX_SECTORS_2_4, |kb| kb * 2);
    Some(elevator_core::Linux2_4Queue {
        driver_max_sectors: (limits.max_sectors_kb() * 2).min(elevator_sectors),
        free_at_dispatch: !matches!(limits.driver, Driver::Ide | Driver::IdeLba48),
        timed_pool_wait: kernel.timed_pool_wait(),
    })
}

fn last_phase_of_each_process(
    plan: &elevator_workload::WorkloadPlan,
) -> BTreeMap<ProcessId, usize> {
    let mut last = BTreeMap::new();
    for (index, phase) in plan.phases.iter().enumerate() {
        for issuer in &phase.issuers {
            last.insert(issuer.process(), index);
        }
    }
    last
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// An issuer's sleep ends (stale unless the generation matches).
    IssuerWake { issuer: usize, generation: u64 },
    /// A device's next internal event (the device's timer: never stale).
    DeviceStep { device: usize },
    /// A scheduler's idle or a plug times out (the queue's timer: never stale).
    QueueWake { device: usize, path: usize },
    /// A command reaches the device after crossing the link.
    ReachDevice { device: usize, path: usize, request: RequestId },
    /// A read's data has crossed the link back: the request is done.
    ReachHost { device: usize, path: usize, request: RequestId },
    /// The host's timer (stale unless the generation matches).
    HostWake { generation: u64 },
    /// The host finished a buffered operation.
    HostDone { op: u64 },
    /// The iSCSI fabric's next arrival (stale unless the generation matches).
    FabricWake { generation: u64 },
    /// The blk-mq host's item running on `core` ends.
    CoreDone { core: usize },
    /// A 2.6 host's direct call by `issuer` finished its CPU work: the bios of pending entry
    /// `tag` reach their queue.
    DirectCall { issuer: usize, tag: usize },
}

/// One wake-up that is moved rather than added to: at most one of its events is live; the
/// others stay in the heap until their time and are ignored by their generation.
#[derive(Clone, Copy, Debug, Default)]
struct WakeSlot {
    /// When the live event fires, if there is one.
    at: Option<Instant>,
    /// The live event's generation.
    generation: u64,
}

impl WakeSlot {
    /// Moves the wake-up to `next`. Returns the time and generation of the event to push, if
    /// a new one is needed, and counts the event it supersedes in `superseded`.
    fn move_to(&mut self, next: Option<Instant>, superseded: &mut usize) -> Option<(Instant, u64)> {
        if next == self.at {
            return None;
        }
        *superseded += usize::from(self.at.is_some());
        self.generation += 1;
        self.at = next;
        next.map(|at| (at, self.generation))
    }

    /// Whether an event of `generation` is the live one; if so it has fired.
    fn fires(&mut self, generation: u64) -> bool {
        let live = self.generation == generation;
        if live {
            self.at = None;
        }
        live
    }
}

/// A device as the host sees it (`sda`, or a multipath LUN's `dm-N`), with its queues.
struct DeviceSlot {
    name: String,
    capacity_sectors: u64,
    /// Its queues: one, or one per path under dm-multipath, which has no queue of its own.
    paths: Vec<PathSlot>,
    /// dm-multipath's policy and path selector, if the device is reached through it.
    multipath: Option<Multipath>,
    model: Box<dyn crate::device::DeviceModel>,
    link: Option<usize>,
    /// When its model's next event is due, as last asked: its `DeviceStep` is set on the
    /// event queue's timer of the device's index for this time.
    step_at: Option<Instant>,
    /// Whether some path is dirty.
    dirty: bool,
    /// The write congestion last reported to the host.
    congested: bool,
    /// The read congestion last reported to the host.
    read_congested: bool,
    /// The sum over its paths' queues of their congestion flips when the congestion was last
    /// worked out (`None`: never): while it stays the same, so do `congested` and
    /// `read_congested` ([`Simulation::report_congestion`]).
    congestion_flips: Option<u64>,
    /// The adapter whose command limit it shares (an index into `Simulation::adapters`).
    adapter: Option<usize>,
    /// `/proc/diskstats`' figures, for fio's `disk_util`.
    disk: DiskStat,
}

/// One device's `/proc/diskstats` figures per direction (read, write), as fio's `disk_util`
/// reports them: requests completed, bios merged into them, sectors, and their time from
/// creation to completion. Flushes and discards are not counted (Linux counts them apart).
#[derive(Clone, Copy, Debug, Default)]
struct DiskStat {
    ios: [u64; 2],
    merges: [u64; 2],
    sectors: [u64; 2],
    ticks_ns: [u64; 2],
}

/// An adapter whose command limit binds across its devices (`topology::HostAdapter`).
struct AdapterSlot {
    can_queue: u32,
    /// Commands it has out (issued, not completed).
    outstanding: u32,
    devices: Vec<usize>,
}

/// One queue of a device: the device's own, or one multipath path's SCSI device.
struct PathSlot {
    /// For reports: the device's name, or `sda.path1`.
    name: String,
    /// The block queue with its submit side (splitting, parking, resubmitting).
    submitter: Submitter,
    /// The link path its commands cross; `None`: whichever frees first.
    link_path: Option<usize>,
    /// Requests at the device by slot index (the command id, see [`command_for`]).
    commands: Vec<Option<RequestId>>,
    /// The event queue's timer its wake-ups are set on (a moved wake-up replaces the last).
    wake_timer: usize,
    /// Whether its wake-up is pending.
    wake_pending: bool,
    dirty: bool,
}

/// Who waits for a bio.
#[derive(Clone, Copy, Debug)]
enum BioOwner {
    /// A direct operation of an issuer: done when all its bios are.
    Issuer { issuer: usize, io: IoId, submitted: Instant, bytes: u64 },
    /// The host's bio `bio`, submitted in `batch`.
    Host { bio: u64, batch: u64 },
    /// An iSCSI target worker's command `token` (blockio).
    Fabric { token: u64 },
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    owner: BioOwner,
    bios_left: u32,
    /// The process its bios are submitted as (charged for the requests they allocate).
    process: ProcessId,
}

struct IssuerSlot {
    issuer: Box<dyn Issuer>,
    /// Bios of its current call still parked.
    parked: u32,
    outstanding: u32,
    wake_generation: u64,
    sleeping: bool,
    done: bool,
    exits: bool,
    cpu_at_start: crate::host::CpuTime,
    /// Whether it runs the queues it submitted to when it next waits: it waits for its own
    /// I/O (a read, O_DIRECT, fsync), as the kernel's `sync_page`/direct-I/O wait unplugs;
    /// not after a buffered write, whose writer sleeps in the congestion wait instead.
    wait_unplugs: bool,
    /// Devices its own direct I/O went to since it last waited (host work on its behalf is in
    /// `Simulation::touched`), one bit per device (see `device_bit`).
    touched: u64,
    /// On a blk-mq host: its submission call has not returned (its core is still working on
    /// it), so it cannot ask for its next operation.
    in_call: bool,
}

/// A buffered operation the host holds for an issuer.
#[derive(Clone, Copy, Debug)]
struct HostOp {
    issuer: usize,
    io: IoId,
    submitted: Instant,
    bytes: u64,
}

struct Simulation {
    now: Instant,
    events: EventQueue<Event>,
    devices: Vec<DeviceSlot>,
    links: Vec<crate::topology::Link>,
    /// Adapters whose command limit their devices share.
    adapters: Vec<AdapterSlot>,
    host: Host,
    host_ops: LookupMap<u64, HostOp>,
    /// The host's kernel release.
    kernel: KernelVersion,
    /// Devices each process submitted to since it last waited, one bit per device index
    /// (see `device_bit` and `unplug_devices`).
    touched: LookupMap<ProcessId, u64>,
    next_host_op: u64,
    /// The host's next timer.
    host_wake: WakeSlot,
    /// Bios of each host batch not yet taken by their queue.
    unaccepted: BTreeMap<u64, u32>,
    /// The buffer `run_host_actions` drains the host's actions into (kept for its memory).
    host_actions: Vec<HostAction>,
    issuers: Vec<IssuerSlot>,
    pending: Vec<Option<Pending>>,
    free_pending: Vec<usize>,
    event_count: u64,
    /// Events handled at the current instant, for `Bounds::max_events_at_one_instant`.
    events_at_this_instant: u64,
    /// Scratch for the bios of one direct operation.
    bio_scratch: Vec<Bio>,
    /// Most events pending at once (checked when an event is taken).
    events_pending_peak: usize,
    /// Pending events already superseded by a later one (a host or fabric wake-up
    /// rescheduled, an issuer's wake-up after a post ended its sleep): they stay in the heap
    /// until their time and are then ignored.
    superseded: usize,
    /// Most pending events at once that were not superseded.
    live_events_peak: usize,
    /// Most host operations outstanding at once.
    host_ops_peak: usize,
    /// Sleep generations are unique across phases, so a stale wake-up of an issuer of an
    /// earlier phase never wakes the one that took its index.
    next_wake_generation: u64,
    bounds: Bounds,
    check: bool,
    scheduler_kind: elevator_sched::SchedulerKind,
    finished: Vec<CommandId>,
    tags: Vec<BioTag>,
    ready: Vec<usize>,
    /// Scratch for the issuers one issuer posted (`Issuer::take_posts`).
    posted: Vec<usize>,
    /// The other host of an iSCSI topology: the initiator, links and target threads; the
    /// workload's reads go to it, and its worker threads' I/O to this host's queues.
    fabric: Option<Fabric>,
    /// The fabric's next arrival.
    fabric_wake: WakeSlot,
    /// The fabric's page reads (fileio) the host holds, by host op: the command's token.
    fabric_host_ops: LookupMap<u64, u64>,
    /// Scratch for the fabric's actions.
    fabric_actions: Vec<FabricAction>,
    /// The blk-mq host's cores, locks and I/O path, when the scheduler is a blk-mq one and no
    /// fabric is in the way (`host::blkmq`).
    mq: Option<BlkMq>,
    /// Bios of direct operations waiting for their insert on the blk-mq path, by pending
    /// tag: (device, bios); the vectors are reused.
    mq_bios: Vec<(usize, Vec<Bio>)>,
    /// Scratch for the blk-mq host's actions.
    mq_actions: Vec<blkmq::Action>,
    /// How many of the phase's issuers are done (the phase ends when all are).
    issuers_done: usize,
    /// Where a watcher reads how far the run got.
    progress: Option<std::sync::Arc<SimProgress>>,
    /// Samples of the dispatched requests, when asked for, with their cap.
    dispatches: Option<(elevator_report::DispatchSamples, usize)>,
    /// Requests dispatched so far (every device).
    dispatched: u64,
}

impl Simulation {
    fn new(
        config: &SimConfig,
        scheduler: &SchedulerSpec,
        topology: Topology,
        files: &[(usize, u64)],
    ) -> Result<Simulation, SimError> {
        let mut devices = Vec::with_capacity(topology.devices.len());
        let topology_devices = topology.devices.len();
        // Queue wake-up timers handed out so far (see `PathSlot::wake_timer`).
        let mut path_timers = 0;
        let mut host_devices = Vec::with_capacity(topology.devices.len());
        let initiator = topology.initiator;
        let lun_bytes = topology
            .devices
            .iter()
            .map(|device| device.model.capacity_sectors() * SECTOR_SIZE_BYTES)
            .min()
            .unwrap_or(0);
        let mut can_queue_under_kernel = Vec::with_capacity(topology.devices.len());
        for device in topology.devices {
            // The driver's limits under the host's kernel (host-mechanisms.md §2.3): its
            // per-device depth, never more than the device takes, and its request limit.
            let limits = device.driver.limits(config.host.kernel());
            let model_depth = device.model.queue_depth();
            // A multipath path's depth is the HBA's per-LUN depth (32 without a driver).
            let (paths, depth) = match &device.multipath {
                Some(multipath) => (
                    multipath.paths,
                    multipath.path_depth.or(limits.lun_depth).unwrap_or(GENERIC_PATH_DEPTH),
                ),
                None => (1, limits.lun_depth.map_or(model_depth, |lun| lun.min(model_depth))),
            };
            let legacy = scheduler.kind().registration().block_layer == BlockLayer::Legacy;
            let linux_2_4 = linux_2_4_queue(config, &limits);
            let queue_depth = config.queue.depth.unwrap_or(depth);
            // mq-deadline and kyber, whose `limit_depth` is modelled, get blk-mq's scheduler
            // tags: one pool of 2 × min(depth, 128) unless `nr_requests` is set
            // (`blk_mq_default_nr_requests`, modern-vs-kernel.md row 8). bfq and `none` keep
            // the per-direction pool (see `BlkMqQueue`).
            let sched_tags = matches!(
                scheduler.kind(),
                elevator_sched::SchedulerKind::MqDeadline | elevator_sched::SchedulerKind::Kyber
            );
            let nr_requests = match nr_requests_for(config, scheduler)? {
                unset if sched_tags && unset == QueueSettings::default().nr_requests => {
                    (2 * queue_depth.min(128)).max(elevator_core::pool::MIN_NR_REQUESTS)
                }
                chosen => chosen,
            };
            let queue_config = QueueConfig {
                nr_requests,
                depth: queue_depth,
                max_sectors_kb: config.queue.max_sectors_kb.unwrap_or(match linux_2_4 {
                    // 2.4: the elevator's own limit is sd's (§3.1); the driver's is separate.
                    Some(_) => SD_MAX_SECTORS_2_4 / 2,
                    None => limits.max_sectors_kb(),
                }),
                // The 2.6 queue plug (3 ms timer, 4 requests) belongs to the legacy request
                // queue; blk-mq replaced it with per-task plug lists, not modelled here.
                plugging: config.queue.plugging && legacy,
                kernel: config.host.kernel(),
                // The runner unplugs when a process waits, as the kernel's reader did.
                reads_unplug: false,
                // Legacy block layer only (issue 28 rows 5, 7): sync-blind merges, and the
                // driver's fetch model; blk-mq keeps the defaults.
                merges_ignore_sync: legacy && config.host.kernel().merges_ignore_sync(),
                driver_fetch: if legacy {
                    limits.fetch
                } else {
                    elevator_core::DriverFetch::WhenDeviceFree
                },
                linux_2_4,
                pool_split: if sched_tags {
                    elevator_core::PoolSplit::Shared
                } else {
                    QueueConfig::default().pool_split
                },
                // A zoned device's writes are ordered per zone (`ZoneWriteOrder`).
                zones: device.model.zones().map(|zones| zones.write_order()),
                // The device's rotational flag, which bfq reads at attach.
                rotational: device.model.rotational(),
                // A blk-mq scheduler runs on a blk-mq kernel: its queue-run, flush and overlap
                // rules (`BlkMqQueue`, modern-vs-kernel.md rows 1–4).
                blk_mq: (!legacy)
                    .then(|| elevator_core::BlkMqQueue { tick_rate: config.host.tick_rate() }),
                ..QueueConfig::default()
            };
            if u64::from(queue_config.depth) * paths as u64 > u64::from(device.model.queue_depth())
            {
                let paths_text = if paths > 1 {
                    format!(" ({paths} paths of that depth)")
                } else {
                    String::new()
                };
                return Err(SimError::Param(elevator_core::ParamError::Impossible {
                    component: "queue".to_owned(),
                    key: "depth",
                    problem: format!(
                        "{} accepts at most {} commands{paths_text}",
                        device.name,
                        device.model.queue_depth()
                    ),
                }));
            }
            let mut path_slots = Vec::with_capacity(paths);
            // Timers: one per device (its steps), then one per queue (its wake-ups).
            let wake_timer_base = topology_devices + path_timers;
            path_timers += paths;
            for path in 0..paths {
                // Each path is a SCSI device of its own: its own queue and scheduler instance.
                let queue = BlockQueue::new(queue_config.clone(), scheduler.build())?;
                let capacity = queue.requests().capacity();
                let multipath = device.multipath.is_some();
                path_slots.push(PathSlot {
                    name: if multipath {
                        format!("{}.path{path}", device.name)
                    } else {
                        device.name.clone()
                    },
                    submitter: Submitter::new(queue),
                    link_path: multipath.then_some(path),
                    commands: vec![None; capacity],
                    wake_timer: wake_timer_base + path,
                    wake_pending: false,
                    dirty: false,
                });
            }
            host_devices.push(HostDevice {
                capacity_sectors: device.model.capacity_sectors(),
                // 2.4's page cache hands the queue one 4 KiB buffer head per block
                // (linux-2.4-elevator.md §1, §6.1); 2.6's bios grow to the request limit.
                max_sectors: if queue_config.linux_2_4.is_some() {
                    BH_SECTORS_2_4
                } else {
                    queue_config.max_sectors()
                },
                read_ahead_pages: u64::from(config.queue.read_ahead_kb) / 4,
                block_bytes: HostDevice::block_bytes_for(device.model.capacity_sectors()),
            });
            can_queue_under_kernel.push(limits.host_can_queue);
            devices.push(DeviceSlot {
                name: device.name,
                capacity_sectors: device.model.capacity_sectors(),
                paths: path_slots,
                multipath: device.multipath,
                model: device.model,
                link: device.link,
                step_at: None,
                dirty: false,
                congested: false,
                adapter: device.adapter,
                read_congested: false,
                congestion_flips: None,
                disk: DiskStat::default(),
            });
        }
        let adapters = topology
            .adapters
            .into_iter()
            .map(|adapter| AdapterSlot {
                // The topology sizes the adapter by the driver's 2.6 value; a 2.4 driver may
                // take fewer (megaraid2's 125, linux-2.4-elevator.md §6.2).
                can_queue: adapter
                    .devices
                    .iter()
                    .filter_map(|&device| can_queue_under_kernel.get(device).copied().flatten())
                    .fold(adapter.can_queue, u32::min),
                outstanding: 0,
                devices: adapter.devices,
            })
            .collect();
        // With an iSCSI initiator the files are on its pool, not on this host's disks.
        let host_files = if initiator.is_some() { &[][..] } else { files };
        let mut host = Host::new(&config.host, host_devices, host_files).map_err(|error| {
            SimError::Param(elevator_core::ParamError::Impossible {
                component: "workload".to_owned(),
                key: "size",
                problem: host_error_text(&error, &devices),
            })
        })?;
        let mq = if initiator.is_none() {
            let queues: Vec<(String, u32)> =
                devices.iter().map(|slot| (slot.name.clone(), slot.model.hw_queues())).collect();
            BlkMq::new(&config.host, scheduler.kind(), &queues)
        } else {
            None
        };
        let fabric = match initiator {
            Some(spec) => {
                let sizes: Vec<u64> = files.iter().map(|&(_, bytes)| bytes).collect();
                let prng = Prng::new(config.seed).fork("iscsi target threads");
                let fabric = Fabric::new(spec, lun_bytes, &sizes, prng).map_err(|error| {
                    SimError::Param(elevator_core::ParamError::Impossible {
                        component: "workload".to_owned(),
                        key: "size",
                        problem: error.0,
                    })
                })?;
                // fileio opens each LUN's backing device once: its threads share that file's
                // read-ahead state.
                for lun in 0..spec.luns() {
                    let pids = fabric.worker_pids(lun);
                    for &pid in &pids {
                        host.share_read_ahead(pid, pids[0]);
                    }
                }
                Some(fabric)
            }
            None => None,
        };
        Ok(Simulation {
            now: Instant::ZERO,
            events: {
                // A core's running item ends once: its end has a lane of its own.
                let mut events = EventQueue::new();
                events.set_lanes(mq.as_ref().map_or(0, BlkMq::cores));
                events.set_timers(topology_devices + path_timers);
                events
            },
            devices,
            links: topology.links,
            adapters,
            host,
            host_ops: LookupMap::default(),
            kernel: config.host.kernel(),
            touched: LookupMap::default(),
            next_host_op: 0,
            host_wake: WakeSlot::default(),
            unaccepted: BTreeMap::new(),
            host_actions: Vec::new(),
            issuers: Vec::new(),
            pending: Vec::new(),
            free_pending: Vec::new(),
            event_count: 0,
            events_at_this_instant: 0,
            bio_scratch: Vec::new(),
            events_pending_peak: 0,
            superseded: 0,
            live_events_peak: 0,
            host_ops_peak: 0,
            next_wake_generation: 0,
            bounds: config.bounds,
            check: config.check_invariants,
            scheduler_kind: scheduler.kind(),
            finished: Vec::new(),
            tags: Vec::new(),
            ready: Vec::new(),
            posted: Vec::new(),
            fabric,
            fabric_wake: WakeSlot::default(),
            fabric_host_ops: LookupMap::default(),
            fabric_actions: Vec::new(),
            mq,
            mq_bios: Vec::new(),
            mq_actions: Vec::new(),
            issuers_done: 0,
            progress: None,
            dispatches: (config.dispatch_samples > 0).then(|| {
                let cap = config.dispatch_samples;
                (elevator_report::DispatchSamples::with_cap(cap), cap)
            }),
            dispatched: 0,
        })
    }

    /// Every queue's counters now, starting a new window for their maxima: a phase's "why"
    /// figures are what happened between this and [`Simulation::queue_window_since`].
    fn start_queue_window(&mut self) -> Vec<elevator_core::QueueStats> {
        let now = self.now;
        let mut snapshot = Vec::new();
        for device in &mut self.devices {
            for path in &mut device.paths {
                path.submitter.queue_mut().take_window_maxima();
                snapshot.push(path.submitter.stats(now));
            }
        }
        snapshot
    }

    /// What every queue did since `before` (from [`Simulation::start_queue_window`]), summed
    /// as the run's figures are.
    fn queue_window_since(&mut self, before: &[elevator_core::QueueStats]) -> ReportQueueStats {
        let now = self.now;
        let mut total = ReportQueueStats::default();
        let paths = self.devices.iter_mut().flat_map(|device| device.paths.iter_mut());
        for (path, earlier) in paths.zip(before) {
            let maxima = path.submitter.queue_mut().take_window_maxima();
            total.add_queue(&path.submitter.stats(now).since(earlier, maxima));
        }
        total
    }

    fn run_phase(
        &mut self,
        issuers: Vec<Box<dyn Issuer>>,
        exits: &[bool],
        stonewall: bool,
        recorder: &mut PhaseRecorder,
    ) -> Result<(), SimError> {
        self.issuers = issuers
            .into_iter()
            .zip(exits)
            .map(|(issuer, &exits)| {
                let cpu_at_start = self.host.cpu_time(issuer.process());
                IssuerSlot {
                    issuer,
                    parked: 0,
                    outstanding: 0,
                    wake_generation: 0,
                    sleeping: false,
                    done: false,
                    exits,
                    cpu_at_start,
                    wait_unplugs: false,
                    touched: 0,
                    in_call: false,
                }
            })
            .collect();
        if let Some(mq) = &mut self.mq {
            let threads: Vec<(String, blkmq::Submitter)> = self
                .issuers
                .iter()
                .map(|slot| (slot.issuer.name().to_owned(), submitter_of(slot.issuer.as_ref())))
                .collect();
            if let Err((index, cpu)) = mq.start_phase(&threads) {
                return Err(SimError::Param(elevator_core::ParamError::Impossible {
                    component: format!("workload issuer {}", threads[index].0),
                    key: "cpus_allowed",
                    problem: format!(
                        "CPU {cpu} does not exist: the host has {} (0-{}); set host:cpus",
                        mq.cores(),
                        mq.cores() - 1
                    ),
                }));
            }
        }
        self.ready = (0..self.issuers.len()).collect();
        self.issuers_done = 0;
        let fabric_before = self.fabric.as_ref().map(|fabric| fabric.stats().clone());
        loop {
            self.run_ready_issuers(recorder, stonewall)?;
            self.pump_dirty_devices()?;
            if self.issuers_done == self.issuers.len() {
                break;
            }
            let Some((at, event)) = self.events.pop() else {
                self.reach_cancelled_horizon()?;
                if self.tq_disk_plugging() && self.any_plugged() {
                    // 2.4: nothing left to run `tq_disk` before the stall; kupdated would
                    // within 5 s (§4.2, §6.4). Run it now rather than stall.
                    self.run_tq_disk();
                    continue;
                }
                return Err(self.stall());
            };
            self.advance_clock(at)?;
            self.handle(event, recorder)?;
        }
        for (index, slot) in self.issuers.iter().enumerate() {
            let cpu = self.host.cpu_time(slot.issuer.process());
            // On a blk-mq host the thread's own core time (its direct I/O) adds to what the
            // 2.6 charges gave its buffered calls.
            let (mq_user_ns, mq_sys_ns) =
                self.mq.as_ref().map_or((0, 0), |mq| mq.issuer_cpu_ns(index));
            recorder.record_cpu(
                index,
                cpu.user_ns - slot.cpu_at_start.user_ns + mq_user_ns,
                cpu.sys_ns - slot.cpu_at_start.sys_ns + mq_sys_ns,
            );
            for (name, value) in slot.issuer.counters() {
                recorder.add_counter(name, value);
            }
        }
        if let (Some(fabric), Some(before)) = (&self.fabric, fabric_before) {
            record_fabric_counters(fabric, &before, recorder);
        }
        Ok(())
    }

    /// Runs the remaining host and device work (write-back, destaging) after the last phase.
    fn settle(&mut self) -> Result<(), SimError> {
        let mut recorder = PhaseRecorder::new("settle", self.now, Vec::new());
        loop {
            while let Some((at, event)) = self.events.pop() {
                self.advance_clock(at)?;
                self.handle(event, &mut recorder)?;
                self.pump_dirty_devices()?;
            }
            self.reach_cancelled_horizon()?;
            if !(self.tq_disk_plugging() && self.any_plugged()) {
                return Ok(());
            }
            // 2.4: requests still plugged with nothing left to run `tq_disk`: kupdated would.
            self.run_tq_disk();
            self.pump_dirty_devices()?;
        }
    }

    fn advance_clock(&mut self, at: Instant) -> Result<(), SimError> {
        // Cheap, so on in release builds too: time going back is a bug in whoever scheduled
        // the event, and every later figure would be wrong.
        assert!(at >= self.now, "event at {at} is in the past (now {})", self.now);
        // The event being handled was just popped: count it as still pending.
        let pending = self.events.count() + 1;
        self.events_pending_peak = self.events_pending_peak.max(pending);
        self.live_events_peak = self.live_events_peak.max(pending - self.superseded);
        self.events_at_this_instant =
            if at == self.now { self.events_at_this_instant + 1 } else { 1 };
        if self.events_at_this_instant > self.bounds.max_events_at_one_instant {
            return Err(SimError::Stalled {
                at,
                detail: format!(
                    "simulated time stands still: {} events at one instant; some device or \
                     host completes work in no time (a zero overhead or latency) for issuers \
                     that never wait",
                    self.bounds.max_events_at_one_instant
                ),
            });
        }
        self.now = at;
        self.event_count += 1;
        if self.event_count % PROGRESS_EVERY_EVENTS == 0
            && let Some(progress) = &self.progress
        {
            progress.simulated_ns.store(at.as_nanos(), std::sync::atomic::Ordering::Relaxed);
        }
        if self.event_count > self.bounds.max_events {
            return Err(SimError::Bound {
                what: "events",
                limit: self.bounds.max_events.to_string(),
                at,
            });
        }
        if at.as_nanos() > self.bounds.max_time.as_nanos() {
            return Err(SimError::Bound {
                what: "simulated time",
                limit: self.bounds.max_time.to_string(),
                at,
            });
        }
        Ok(())
    }

    fn handle(&mut self, event: Event, recorder: &mut PhaseRecorder) -> Result<(), SimError> {
        match event {
            Event::IssuerWake { issuer, generation } => {
                if let Some(slot) = self.issuers.get_mut(issuer)
                    && slot.wake_generation == generation
                    && slot.sleeping
                {
                    slot.sleeping = false;
                    self.ready.push(issuer);
                } else {
                    // Only a post ends a sleep before its wake-up (`deliver_posts`).
                    self.superseded -= 1;
                }
            }
            Event::DeviceStep { device } => {
                self.devices[device].step_at = None;
                self.step_device(device, recorder)?;
            }
            Event::QueueWake { device, path } => {
                let slot = &mut self.devices[device];
                slot.paths[path].wake_pending = false;
                slot.paths[path].dirty = true;
                slot.dirty = true;
            }
            Event::ReachDevice { device, path, request } => {
                let slot = &mut self.devices[device];
                let command = command_for(
                    slot.paths[path].submitter.queue(),
                    request,
                    path,
                    slot.paths.len(),
                );
                slot.model.submit(self.now, command);
                self.reschedule_device(device);
            }
            Event::ReachHost { device, path, request } => {
                self.complete_request(device, path, request, recorder)?;
            }
            Event::HostWake { generation } => {
                if self.host_wake.fires(generation) {
                    self.host.wake(self.now);
                    self.run_host_actions()?;
                } else {
                    self.superseded -= 1;
                }
            }
            Event::HostDone { op } => {
                if let Some(token) = self.fabric_host_ops.remove(&op) {
                    // A target worker's page read (fileio).
                    self.fabric.as_mut().expect("a fabric").target_done(self.now, token);
                    self.run_fabric_actions()?;
                    return Ok(());
                }
                let done = self.host_ops.remove(&op).expect("a host operation finishes once");
                self.finish_io(done.issuer, done.io, done.submitted, done.bytes, recorder);
            }
            Event::CoreDone { core } => self.mq_item_ended(core, recorder)?,
            Event::DirectCall { issuer, tag } => self.direct_call_done(issuer, tag)?,
            Event::FabricWake { generation } => {
                if self.fabric_wake.fires(generation) {
                    self.fabric.as_mut().expect("a fabric").wake(self.now);
                    self.run_fabric_actions()?;
                } else {
                    self.superseded -= 1;
                }
            }
        }
        Ok(())
    }

    fn step_device(&mut self, device: usize, recorder: &mut PhaseRecorder) -> Result<(), SimError> {
        let mut finished = std::mem::take(&mut self.finished);
        finished.clear();
        self.devices[device].model.advance(self.now, &mut finished);
        // A step that finished nothing changed nothing outside the device (an SSD's die read
        // or channel transfer, say). When its next step comes before every pending event, it
        // is the next event: take it here rather than through the queue — the same clock, the
        // same order and the same event count, without the round trip.
        while finished.is_empty()
            && let Some(next) = self.devices[device].model.next_event()
            && self.events.peek_time().is_none_or(|pending| next < pending)
        {
            self.advance_clock(next.max(self.now))?;
            self.devices[device].model.advance(self.now, &mut finished);
        }
        for &CommandId(id) in &finished {
            let slot = &mut self.devices[device];
            let (path, index) = path_and_index(id, slot.paths.len());
            let queue_slot = &mut slot.paths[path];
            let request = queue_slot.commands[index]
                .take()
                .unwrap_or_else(|| panic!("{}: finished unknown command {id}", queue_slot.name));
            let queue = queue_slot.submitter.queue();
            let is_read = queue.request(request).is_some_and(|r| r.op == Op::Read);
            match slot.link {
                Some(link) if is_read => {
                    let bytes = queue.request(request).map_or(0, |r| r.size_bytes());
                    let link = &mut self.links[link];
                    let at = match queue_slot.link_path {
                        Some(on) => link.transfer_on(on, self.now, bytes, Flow::ToHost),
                        None => link.transfer(self.now, bytes, Flow::ToHost),
                    };
                    self.events.push(at, Event::ReachHost { device, path, request });
                }
                _ => self.complete_request(device, path, request, recorder)?,
            }
        }
        self.finished = finished;
        self.reschedule_device(device);
        Ok(())
    }

    fn complete_request(
        &mut self,
        device: usize,
        path: usize,
        request: RequestId,
        recorder: &mut PhaseRecorder,
    ) -> Result<(), SimError> {
        let mut tags = std::mem::take(&mut self.tags);
        tags.clear();
        let slot = &mut self.devices[device];
        let done = slot.paths[path].submitter.queue_mut().complete(self.now, request, &mut tags);
        let direction = match done.op {
            elevator_core::Op::Read => Some(0),
            elevator_core::Op::Write => Some(1),
            elevator_core::Op::Flush | elevator_core::Op::Discard => None,
        };
        if let Some(direction) = direction {
            let disk = &mut slot.disk;
            disk.ios[direction] += 1;
            disk.merges[direction] += u64::from(done.bio_count.saturating_sub(1));
            disk.sectors[direction] += u64::from(done.sector_count);
            disk.ticks_ns[direction] += done.total_time.as_nanos();
        }
        // The completion interrupt, charged to the process whose bio created the request
        // (on the blk-mq path a direct operation's interrupt runs on a core instead).
        if !self.on_mq_path(tags.first()) {
            self.host.charge_completion(self.now, done.process);
        }
        let slot = &mut self.devices[device];
        slot.paths[path].dirty = true;
        slot.dirty = true;
        if let Some(adapter) = slot.adapter {
            // A slot of the shared adapter is free: every device behind it may take it.
            let adapter = &mut self.adapters[adapter];
            adapter.outstanding -= 1;
            for &sibling in &adapter.devices {
                let sibling = &mut self.devices[sibling];
                sibling.dirty = true;
                sibling.paths.iter_mut().for_each(|path| path.dirty = true);
            }
        }
        for &BioTag(index) in &tags {
            let entry = self.pending[index as usize].as_mut().expect("a live pending bio");
            entry.bios_left -= 1;
            if entry.bios_left > 0 {
                continue;
            }
            if let (Some(mq), BioOwner::Issuer { issuer, .. }) = (&mut self.mq, entry.owner) {
                // blk-mq: the completion crosses the interrupt and the issuer's task_work
                // first; the entry stays until then (`run_mq_actions`, `Deliver`).
                mq.complete(self.now, issuer, device, index as usize, done.device_time);
                continue;
            }
            let done = self.pending[index as usize].take().expect("checked above");
            self.free_pending.push(index as usize);
            match done.owner {
                BioOwner::Issuer { issuer, io, submitted, bytes } => {
                    self.finish_io(issuer, io, submitted, bytes, recorder);
                }
                BioOwner::Host { bio, .. } => self.host.bio_done(self.now, bio),
                BioOwner::Fabric { token } => {
                    self.fabric.as_mut().expect("a fabric").target_done(self.now, token);
                }
            }
        }
        self.tags = tags;
        self.schedule_mq_timers();
        self.run_fabric_actions()?;
        self.wake_parked(device, path)?;
        self.report_congestion(device);
        self.run_host_actions()?;
        self.audit(device)
    }

    /// Whether the bio tagged `tag` is an issuer's direct operation on the blk-mq path,
    /// whose CPU work runs on the host's cores rather than in the 2.6 charges.
    fn on_mq_path(&self, tag: Option<&BioTag>) -> bool {
        self.mq.is_some()
            && tag.is_some_and(|&BioTag(index)| {
                self.pending
                    .get(index as usize)
                    .and_then(Option::as_ref)
                    .is_some_and(|entry| matches!(entry.owner, BioOwner::Issuer { .. }))
            })
    }

    /// Keeps the bios of pending entry `tag` until the call that submits them has done its CPU
    /// work (`mq_bios`, vectors reused).
    fn park_bios(&mut self, tag: usize, device: usize, bios: &[Bio]) {
        if self.mq_bios.len() <= tag {
            self.mq_bios.resize_with(tag + 1, || (0, Vec::new()));
        }
        let waiting = &mut self.mq_bios[tag];
        waiting.0 = device;
        waiting.1.clear();
        waiting.1.extend_from_slice(bios);
    }

    /// Submits the bios of pending entry `tag` that waited for their call's CPU work, as the
    /// issuer that made the call; returns how many were parked.
    fn submit_waiting_bios(&mut self, tag: usize, issuer: usize) -> Result<u32, SimError> {
        let (device, bios) = std::mem::take(&mut self.mq_bios[tag]);
        let submitted = self.submit_bios(device, &bios, Some(issuer));
        self.mq_bios[tag] = (device, bios);
        submitted.map_err(|problem| SimError::BadIo {
            issuer: self.issuers[issuer].issuer.name().to_owned(),
            problem,
        })
    }

    /// A 2.6 host's direct call finished its CPU work: its bios reach the queue and the
    /// issuer may go on.
    fn direct_call_done(&mut self, issuer: usize, tag: usize) -> Result<(), SimError> {
        let parked = self.submit_waiting_bios(tag, issuer)?;
        if self.tq_disk_plugging() {
            // 2.4 direct I/O runs `tq_disk` once its bhs are submitted (§6.6).
            self.run_tq_disk();
        }
        let slot = &mut self.issuers[issuer];
        slot.parked += parked;
        slot.in_call = false;
        if !slot.sleeping && slot.parked == 0 && !slot.done {
            self.ready.push(issuer);
        }
        Ok(())
    }

    /// Turns the blk-mq host's new item ends into events.
    fn schedule_mq_timers(&mut self) {
        let Some(mq) = &mut self.mq else { return };
        let events = &mut self.events;
        mq.drain_timers(|at, core| events.push_lane(core, at, Event::CoreDone { core }));
    }

    /// An item on a blk-mq core ended: its lock passes on, the core takes its next item, and
    /// what the item finished happens (bios reach their queue, a call returns, a completion
    /// reaches its issuer).
    fn mq_item_ended(&mut self, core: usize, recorder: &mut PhaseRecorder) -> Result<(), SimError> {
        let mq = self.mq.as_mut().expect("core events come from the blk-mq host");
        mq.item_ended(self.now, core);
        let mut actions = std::mem::take(&mut self.mq_actions);
        mq.take_actions(&mut actions);
        self.schedule_mq_timers();
        for action in actions.drain(..) {
            match action {
                blkmq::Action::Insert { tag } => {
                    let issuer = match self.pending[tag].as_ref().map(|entry| entry.owner) {
                        Some(BioOwner::Issuer { issuer, .. }) => issuer,
                        other => unreachable!("a blk-mq insert of {other:?}"),
                    };
                    let parked = self.submit_waiting_bios(tag, issuer)?;
                    self.issuers[issuer].parked += parked;
                }
                blkmq::Action::Resume { issuer } => {
                    let slot = &mut self.issuers[issuer];
                    slot.in_call = false;
                    if !slot.sleeping && slot.parked == 0 && !slot.done {
                        self.ready.push(issuer);
                    }
                }
                blkmq::Action::Deliver { tag } => {
                    let done = self.pending[tag].take().expect("a delivered operation is pending");
                    self.free_pending.push(tag);
                    let BioOwner::Issuer { issuer, io, submitted, bytes } = done.owner else {
                        unreachable!("only issuers' operations are delivered");
                    };
                    self.finish_io(issuer, io, submitted, bytes, recorder);
                }
            }
        }
        self.mq_actions = actions;
        Ok(())
    }

    /// An issuer's operation is done: record it and let the issuer go on.
    fn finish_io(
        &mut self,
        issuer: usize,
        io: IoId,
        submitted: Instant,
        bytes: u64,
        recorder: &mut PhaseRecorder,
    ) {
        recorder.record_io(issuer, io.0, bytes, submitted, self.now);
        let slot = &mut self.issuers[issuer];
        slot.outstanding -= 1;
        slot.issuer.complete(self.now, io);
        if !slot.sleeping && slot.parked == 0 {
            self.ready.push(issuer);
        }
        self.deliver_posts(issuer);
    }

    /// Wakes the sleeping issuers `from` posted: a semaphore post ends their sleep now (the
    /// wake-up event they were sleeping until goes stale by its generation).
    fn deliver_posts(&mut self, from: usize) {
        self.issuers[from].issuer.take_posts(&mut self.posted);
        if self.posted.is_empty() {
            // The common case (twice per I/O): nothing posted, nothing to move.
            return;
        }
        let mut posted = std::mem::take(&mut self.posted);
        for target in posted.drain(..) {
            if let Some(slot) = self.issuers.get_mut(target)
                && slot.sleeping
                && !slot.done
            {
                slot.sleeping = false;
                self.ready.push(target);
                // Its wake-up event is still queued, now stale.
                self.superseded += 1;
            }
        }
        self.posted = posted;
    }

    /// Lets processes the pool of `path`'s queue woke submit their parked bios.
    fn wake_parked(&mut self, device: usize, path: usize) -> Result<(), SimError> {
        let mut accepted = std::mem::take(&mut self.tags);
        accepted.clear();
        let submitter = &mut self.devices[device].paths[path].submitter;
        let allocated_before = submitter.queue().requests_allocated();
        submitter.resubmit_woken(self.now, &mut accepted).map_err(|error| SimError::BadIo {
            issuer: "parked bio".to_owned(),
            problem: error.to_string(),
        })?;
        if let Some(&BioTag(first)) = accepted.first() {
            // The bios were charged when first offered; the requests they allocated now are
            // charged to the first process let back in (host/cpu.rs, deviations).
            let allocated = submitter.queue().requests_allocated() - allocated_before;
            let process = self.pending[first as usize].as_ref().expect("a parked bio").process;
            if !self.on_mq_path(Some(&BioTag(first))) {
                self.host.charge_bios(self.now, process, 0, allocated, self.scheduler_kind);
            }
        }
        for &BioTag(index) in &accepted {
            self.accepted(index as usize);
        }
        self.tags = accepted;
        Ok(())
    }

    /// A parked bio of pending entry `index` got in: its issuer may go on, its host batch may be
    /// complete.
    fn accepted(&mut self, index: usize) {
        let owner = self.pending[index].as_ref().expect("a parked bio is pending").owner;
        match owner {
            BioOwner::Issuer { issuer, .. } => {
                let slot = &mut self.issuers[issuer];
                slot.parked -= 1;
                if slot.parked == 0 && !slot.sleeping && !slot.done {
                    self.ready.push(issuer);
                }
            }
            // A worker thread waits for its command, parked or not.
            BioOwner::Fabric { .. } => {}
            BioOwner::Host { batch, .. } => {
                let left = self.unaccepted.get_mut(&batch).expect("a batch with parked bios");
                *left -= 1;
                if *left == 0 {
                    self.unaccepted.remove(&batch);
                    self.host.batch_accepted(self.now, batch);
                }
            }
        }
    }

    /// Submits `bios` to `device`: each to the path dm-multipath chooses for it (bio-based
    /// dm decides before any queue), or to the one queue; the queue's submitter parks those
    /// whose process waits for a request. Returns how many were parked.
    fn submit_bios(
        &mut self,
        device: usize,
        bios: &[Bio],
        issuer: Option<usize>,
    ) -> Result<u32, String> {
        match (issuer, bios.first()) {
            (Some(issuer), _) => self.issuers[issuer].touched |= device_bit(device),
            (None, Some(first)) => {
                *self.touched.entry(first.process).or_default() |= device_bit(device);
            }
            (None, None) => {}
        }
        let mut parked = 0;
        let mut requests = 0;
        for &bio in bios {
            let slot = &mut self.devices[device];
            let path = slot.multipath.as_mut().map_or(0, |multipath| multipath.selector.select());
            let path_slot = &mut slot.paths[path];
            path_slot.dirty = true;
            match path_slot.submitter.submit(self.now, bio).map_err(|error| error.to_string())? {
                Offered::Parked => parked += 1,
                Offered::Queued { .. } => requests += 1,
                Offered::Merged { .. } => {}
            }
            // An unplugged queue runs its driver at each insertion, as `__make_request` did:
            // the device takes the request before the next bio can merge into it.
            if !path_slot.submitter.queue().is_plugged(self.now) && self.pump_path(device, path) {
                // The queue took all it could and said so without setting a timer: pumping
                // it again with nothing changed would ask the same question for the same
                // answer (issue 20: a quarter of a call per I/O). The device's own pump
                // (reschedule, congestion) stays due.
                self.devices[device].paths[path].dirty = false;
            }
        }
        let slot = &mut self.devices[device];
        if bios.is_empty() {
            slot.paths[0].dirty |= slot.multipath.is_none();
        }
        slot.dirty = true;
        if let Some(first) = bios.first() {
            // Every bio costs its process; a new request costs it more (a merged bio does not).
            let count = bios.len() as u64;
            if !(self.mq.is_some() && issuer.is_some()) {
                self.host.charge_bios(
                    self.now,
                    first.process,
                    count,
                    requests,
                    self.scheduler_kind,
                );
            }
        }
        Ok(parked)
    }

    /// A process is about to wait for its I/O: it runs (unplugs) every queue it submitted to
    /// since it last waited, `devices` (bits, see `device_bit`).
    fn unplug_devices(&mut self, mut devices: u64) {
        while devices != 0 {
            let device = devices.trailing_zeros() as usize;
            devices &= devices - 1;
            if device == 63 {
                for device in 63..self.devices.len() {
                    self.unplug_device(device);
                }
            } else {
                self.unplug_device(device);
            }
        }
    }

    /// Whether the host's queues plug the 2.4 way, until `tq_disk` runs (linux-2.4-elevator.md
    /// §4.2).
    fn tq_disk_plugging(&self) -> bool {
        self.kernel.base() == KernelBase::V2_4_21
    }

    /// 2.4's `run_task_queue(&tq_disk)`: unplugs every plugged queue of the host.
    fn run_tq_disk(&mut self) {
        for device in 0..self.devices.len() {
            self.unplug_device(device);
        }
    }

    /// Whether a 2.4 queue holds requests plugged.
    fn any_plugged(&self) -> bool {
        self.queues().any(|path| {
            let queue = path.submitter.queue();
            queue.is_plugged(self.now) && queue.queued() > 0
        })
    }

    /// Runs `device`'s queues now — under dm-multipath every path's, as dm's unplug does.
    fn unplug_device(&mut self, device: usize) {
        let slot = &mut self.devices[device];
        for path in &mut slot.paths {
            if path.submitter.queue().is_plugged(self.now) {
                path.submitter.queue_mut().unplug();
                path.dirty = true;
                slot.dirty = true;
            }
        }
    }

    fn run_ready_issuers(
        &mut self,
        recorder: &mut PhaseRecorder,
        stonewall: bool,
    ) -> Result<(), SimError> {
        while let Some(index) = self.ready.pop() {
            self.run_issuer(index, recorder, stonewall)?;
        }
        Ok(())
    }

    /// Polls an issuer until it sleeps, waits, is parked or is done.
    fn run_issuer(
        &mut self,
        index: usize,
        recorder: &mut PhaseRecorder,
        stonewall: bool,
    ) -> Result<(), SimError> {
        loop {
            let slot = &mut self.issuers[index];
            if slot.done || slot.sleeping || slot.parked > 0 || slot.in_call {
                return Ok(());
            }
            let poll = slot.issuer.poll(self.now);
            self.deliver_posts(index);
            match poll {
                Poll::Submit(io) => {
                    // fio's figures split by direction (elevator_report::fio); dropping the
                    // page cache is no I/O fio would count.
                    let direction = match io.kind {
                        IoKind::Read => Some(FioDirection::Read),
                        IoKind::Write => Some(FioDirection::Write),
                        IoKind::Discard => Some(FioDirection::Trim),
                        IoKind::Sync => Some(FioDirection::Sync),
                        IoKind::DropCaches => None,
                    };
                    if let Some(direction) = direction {
                        recorder.record_submit(
                            index,
                            io.id.0,
                            direction,
                            io.offset_bytes,
                            self.now,
                        );
                    }
                    let (id, kind) = (io.id, io.kind);
                    match self.submit_io(index, io) {
                        // A full filesystem fails the write (ENOSPC): the issuer decides
                        // whether that ends the run, is its error, or the end it expected.
                        Err(SimError::NoSpace { issuer, problem }) => {
                            let slot = &mut self.issuers[index];
                            match slot.issuer.failed(self.now, id, kind, IoFailure::NoSpace) {
                                FailedIo::Fatal => {
                                    return Err(SimError::NoSpace { issuer, problem });
                                }
                                FailedIo::Error => {
                                    let direction = match direction {
                                        Some(FioDirection::Read) => ErrorDirection::Read,
                                        Some(FioDirection::Write) => ErrorDirection::Write,
                                        _ => ErrorDirection::Other,
                                    };
                                    recorder.record_error(index, direction, self.now, || {
                                        format!("ENOSPC: {problem}")
                                    });
                                }
                                FailedIo::Expected => {}
                            }
                            self.deliver_posts(index);
                        }
                        other => other?,
                    }
                    self.run_host_actions()?;
                }
                Poll::Sleep { until } => {
                    self.next_wake_generation += 1;
                    let generation = self.next_wake_generation;
                    let slot = &mut self.issuers[index];
                    slot.sleeping = true;
                    slot.wake_generation = generation;
                    let at = until.max(self.now);
                    self.events.push(at, Event::IssuerWake { issuer: index, generation });
                    return Ok(());
                }
                Poll::Wait => {
                    let slot = &mut self.issuers[index];
                    let process = slot.issuer.process();
                    let own = std::mem::take(&mut slot.touched);
                    let unplugs = std::mem::take(&mut slot.wait_unplugs);
                    let on_its_behalf = if self.touched.is_empty() {
                        0
                    } else {
                        self.touched.get_mut(&process).map_or(0, std::mem::take)
                    };
                    if unplugs {
                        if self.tq_disk_plugging() {
                            // 2.4: a waiting task runs `tq_disk`, every plugged queue (§4.2).
                            self.run_tq_disk();
                        } else {
                            self.unplug_devices(own | on_its_behalf);
                        }
                    }
                    if self.issuers[index].outstanding == 0 {
                        return Err(SimError::Stalled {
                            at: self.now,
                            detail: format!(
                                "issuer {} waits for a completion but has no I/O outstanding",
                                self.issuers[index].issuer.name()
                            ),
                        });
                    }
                    return Ok(());
                }
                Poll::Done => {
                    let slot = &mut self.issuers[index];
                    if slot.outstanding > 0 {
                        return Err(SimError::BadIo {
                            issuer: slot.issuer.name().to_owned(),
                            problem: format!(
                                "said Done with {} I/Os outstanding",
                                slot.outstanding
                            ),
                        });
                    }
                    slot.done = true;
                    self.issuers_done += 1;
                    recorder.extend_to(self.now);
                    if stonewall {
                        recorder.stonewall(self.now);
                    }
                    if slot.exits {
                        let process = slot.issuer.process();
                        for device in &mut self.devices {
                            for path in &mut device.paths {
                                path.submitter.queue_mut().process_exited(self.now, process);
                                path.dirty = true;
                            }
                            device.dirty = true;
                        }
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Starts an issuer's operation: O_DIRECT I/O becomes bios here, everything else goes to
    /// the host.
    fn submit_io(&mut self, index: usize, io: Io) -> Result<(), SimError> {
        if self.issuers[index].issuer.null_engine() {
            // fio's null engine: done at once, touching neither host nor device; its bytes
            // count as moved, as fio counts them.
            let op = self.next_host_op;
            self.next_host_op += 1;
            self.issuers[index].outstanding += 1;
            let done =
                HostOp { issuer: index, io: io.id, submitted: self.now, bytes: io.size_bytes };
            self.host_ops.insert(op, done);
            self.host_ops_peak = self.host_ops_peak.max(self.host_ops.len());
            self.events.push(self.now, Event::HostDone { op });
            return Ok(());
        }
        if self.fabric.is_some() {
            return self.submit_to_fabric(index, io);
        }
        let process = self.issuers[index].issuer.process();
        let priority = self.issuers[index].issuer.priority();
        let bad = |sim: &Simulation, problem: String| SimError::BadIo {
            issuer: sim.issuers[index].issuer.name().to_owned(),
            problem,
        };
        let block_op = match io.kind {
            IoKind::Read => Some(Op::Read),
            IoKind::Write => Some(Op::Write),
            IoKind::Discard => Some(Op::Discard),
            IoKind::Sync | IoKind::DropCaches => None,
        };
        let direct_block_io = io.direct && block_op.is_some();
        let device_flush =
            io.direct && io.kind == IoKind::Sync && matches!(io.place, Place::Device(_));
        if !direct_block_io && !device_flush {
            return self.submit_to_host(index, io, process, priority);
        }
        // O_DIRECT: the pieces on the device, straight to its queue. A device's one piece
        // stays on the stack: no allocation per I/O.
        let one_piece: [(u64, u64); 1];
        let file_pieces: Vec<(u64, u64)>;
        let (device, pieces): (usize, &[(u64, u64)]) = match io.place {
            Place::Device(device) => {
                let Some(slot) = self.devices.get(device) else {
                    return Err(bad(self, format!("device {device} does not exist")));
                };
                if io.offset_bytes % SECTOR_SIZE_BYTES != 0
                    || io.size_bytes % SECTOR_SIZE_BYTES != 0
                {
                    return Err(bad(
                        self,
                        format!(
                            "O_DIRECT I/O at {} of {} bytes is not sector aligned",
                            io.offset_bytes, io.size_bytes
                        ),
                    ));
                }
                let start = io.offset_bytes / SECTOR_SIZE_BYTES;
                let sectors = io.size_bytes / SECTOR_SIZE_BYTES;
                if start + sectors > slot.capacity_sectors {
                    return Err(bad(
                        self,
                        format!(
                            "I/O at sector {start} of {sectors} sectors runs past the end of {} ({} sectors)",
                            slot.name, slot.capacity_sectors
                        ),
                    ));
                }
                one_piece = [if device_flush { (0, 0) } else { (start, sectors) }];
                (device, &one_piece)
            }
            Place::File(file) => {
                let Some(device) = self.host.file_device(file) else {
                    return Err(bad(self, format!("file {file} does not exist")));
                };
                let write = io.kind != IoKind::Read;
                file_pieces = self
                    .host
                    .map_direct(file, process, io.offset_bytes, io.size_bytes, write)
                    .map_err(|error| {
                        host_io_error(self.issuers[index].issuer.name(), &error, &self.devices)
                    })?;
                (device, &file_pieces)
            }
        };
        let op = if device_flush { Op::Flush } else { block_op.expect("direct block I/O") };
        // An O_DIRECT write is `WRITE_SYNC` in 2.6.18 (sync for anticipatory; it runs the
        // queue at once) and a plain `WRITE` in 2.6.9 (host-mechanisms.md §1.4, §1.6).
        let flags = match op {
            Op::Write if self.kernel.direct_writes_sync() => io.flags | RequestFlags::SYNC,
            Op::Write => io.flags.without(RequestFlags::SYNC),
            _ => io.flags,
        };
        self.issuers[index].wait_unplugs = true;
        // On the blk-mq host the bios leave from the issuer's core (its software queue).
        let cpu = self.mq.as_ref().map_or(0, |mq| mq.issuer_core(index));
        let template = Bio {
            op,
            start: Sector(0),
            sector_count: 0,
            flags,
            priority,
            process,
            tag: BioTag(0),
            cpu,
        };
        // Reused across calls: one operation's bios, so no allocation per I/O.
        let mut bios = std::mem::take(&mut self.bio_scratch);
        bios.clear();
        // RHEL 3's direct I/O groups its 4 KiB bhs into super bhs (linux-2.4-elevator.md
        // §6.6): each goes to the queue's tail, unmerged and unsorted.
        let super_bh_sectors =
            if op == Op::Flush { None } else { self.kernel.direct_io_group_sectors() };
        for &(start, sectors) in pieces {
            // dm's limits are its paths', all alike: any path's queue splits as dm would.
            let submitter = &self.devices[device].paths[0].submitter;
            match super_bh_sectors {
                Some(group) => submitter.split_at(
                    Bio { flags: template.flags | RequestFlags::UNSORTED, ..template },
                    Sector(start),
                    sectors,
                    group,
                    &mut bios,
                ),
                None => submitter.split(template, Sector(start), sectors, &mut bios),
            }
        }
        let slot = &mut self.issuers[index];
        slot.outstanding += 1;
        if bios.is_empty() {
            // A direct read past the end of a file: a short read of nothing, done at once.
            let op = self.next_host_op;
            self.next_host_op += 1;
            self.host_ops
                .insert(op, HostOp { issuer: index, io: io.id, submitted: self.now, bytes: 0 });
            self.host_ops_peak = self.host_ops_peak.max(self.host_ops.len());
            self.events.push(self.now, Event::HostDone { op });
            self.bio_scratch = bios;
            return Ok(());
        }
        let tag = self.new_pending(Pending {
            owner: BioOwner::Issuer {
                issuer: index,
                io: io.id,
                submitted: self.now,
                bytes: io.size_bytes,
            },
            bios_left: bios.len() as u32,
            process,
        });
        for bio in &mut bios {
            bio.tag = BioTag(tag as u64);
        }
        if self.mq.is_some() {
            // blk-mq: the bios reach the queue when the submission's work on the issuer's
            // core gets there; the issuer waits for its call to return.
            self.park_bios(tag, device, &bios);
            self.bio_scratch = bios;
            self.mq.as_mut().expect("checked").submit(self.now, index, device, tag);
            self.issuers[index].in_call = true;
            self.schedule_mq_timers();
            return Ok(());
        }
        let call_done = self.host.charge_direct(self.now, process);
        if call_done > self.now {
            // The call's CPU work runs first; its bios reach the queue when it ends and the
            // process is busy until then (host/cpu.rs).
            self.park_bios(tag, device, &bios);
            self.bio_scratch = bios;
            self.issuers[index].in_call = true;
            self.events.push(call_done, Event::DirectCall { issuer: index, tag });
            return Ok(());
        }
        let submitted = self.submit_bios(device, &bios, Some(index));
        self.bio_scratch = bios;
        let parked = submitted.map_err(|problem| bad(self, problem))?;
        if self.tq_disk_plugging() {
            // 2.4 direct I/O runs `tq_disk` once its bhs are submitted (§6.6).
            self.run_tq_disk();
        }
        self.issuers[index].parked += parked;
        Ok(())
    }

    /// An initiator process's call on an iSCSI topology: a file read goes to ZFS; a sync has
    /// nothing to write (the initiator only reads), so it is done at once.
    fn submit_to_fabric(&mut self, index: usize, io: Io) -> Result<(), SimError> {
        let file = match (io.kind, io.place) {
            (IoKind::Read, Place::File(file)) => Some(file),
            (IoKind::Sync, _) => None,
            (kind, place) => {
                // A workload this topology cannot run, not a bug in the workload: the
                // configuration is impossible, as a file larger than its device is.
                let what = match place {
                    Place::File(file) => format!("file {file}"),
                    Place::Device(device) => format!("device {device}"),
                };
                return Err(SimError::Param(elevator_core::ParamError::Impossible {
                    component: "workload".to_owned(),
                    key: "device",
                    problem: format!(
                        "{} asked for a {} of {what}, but on an iscsi device the workload runs \
                         on the ZFS initiator, which models reads of files only (accepted: \
                         workloads that read their files, such as seqread)",
                        self.issuers[index].issuer.name(),
                        format!("{kind:?}").to_lowercase(),
                    ),
                }));
            }
        };
        let op = self.next_host_op;
        self.next_host_op += 1;
        let bytes = if file.is_some() { io.size_bytes } else { 0 };
        self.host_ops.insert(op, HostOp { issuer: index, io: io.id, submitted: self.now, bytes });
        self.host_ops_peak = self.host_ops_peak.max(self.host_ops.len());
        self.issuers[index].outstanding += 1;
        let fabric = self.fabric.as_mut().expect("checked by the caller");
        match file {
            Some(file) => fabric.read(self.now, op, file, io.offset_bytes, io.size_bytes).map_err(
                |error| SimError::BadIo {
                    issuer: self.issuers[index].issuer.name().to_owned(),
                    problem: error.0,
                },
            )?,
            None => self.events.push(self.now, Event::HostDone { op }),
        }
        self.run_fabric_actions()
    }

    /// Carries out what the fabric asked for: finished reader calls, and worker threads' I/O
    /// on this host's disks — blockio's bios, submitted as the thread and run at once (the
    /// thread unplugs and waits), or fileio's page reads through the page cache.
    fn run_fabric_actions(&mut self) -> Result<(), SimError> {
        if self.fabric.is_none() {
            return Ok(());
        }
        let mut actions = std::mem::take(&mut self.fabric_actions);
        loop {
            actions.clear();
            self.fabric.as_mut().expect("checked above").take_actions(&mut actions);
            if actions.is_empty() {
                break;
            }
            for &action in &actions {
                match action {
                    FabricAction::ReadDone { op } => {
                        self.events.push(self.now, Event::HostDone { op });
                    }
                    FabricAction::TargetRead {
                        token,
                        process,
                        device,
                        offset_bytes,
                        bytes,
                        direct: true,
                    } => self.submit_target_bios(token, process, device, offset_bytes, bytes)?,
                    FabricAction::TargetRead {
                        token,
                        process,
                        device,
                        offset_bytes,
                        bytes,
                        ..
                    } => {
                        let op = self.next_host_op;
                        self.next_host_op += 1;
                        self.fabric_host_ops.insert(op, token);
                        self.host
                            .submit(
                                self.now,
                                op,
                                process,
                                IoPriority::default(),
                                HostOpKind::Read,
                                HostPlace::Device(device),
                                offset_bytes,
                                bytes,
                            )
                            .map_err(|error| {
                                host_io_error("iSCSI target thread", &error, &self.devices)
                            })?;
                        self.run_host_actions()?;
                    }
                }
            }
        }
        self.fabric_actions = actions;
        let next = self.fabric.as_ref().expect("checked above").next_event();
        if let Some((at, generation)) = self.fabric_wake.move_to(next, &mut self.superseded) {
            self.events.push(at.max(self.now), Event::FabricWake { generation });
        }
        Ok(())
    }

    /// blockio: worker `process` reads `bytes` at `offset_bytes` of `device` as bios it
    /// submits itself, then unplugs the queue and waits (IET `blockio_make_request`).
    fn submit_target_bios(
        &mut self,
        token: u64,
        process: ProcessId,
        device: usize,
        offset_bytes: u64,
        bytes: u64,
    ) -> Result<(), SimError> {
        let template = Bio {
            op: Op::Read,
            start: Sector(0),
            sector_count: 0,
            flags: RequestFlags::SYNC,
            priority: IoPriority::default(),
            process,
            tag: BioTag(0),
            cpu: 0,
        };
        let mut bios = std::mem::take(&mut self.bio_scratch);
        bios.clear();
        let (start, sectors) = (offset_bytes / SECTOR_SIZE_BYTES, bytes / SECTOR_SIZE_BYTES);
        self.devices[device].paths[0].submitter.split(template, Sector(start), sectors, &mut bios);
        let tag = self.new_pending(Pending {
            owner: BioOwner::Fabric { token },
            bios_left: bios.len() as u32,
            process,
        });
        for bio in &mut bios {
            bio.tag = BioTag(tag as u64);
        }
        self.host.charge_direct(self.now, process);
        let submitted = self.submit_bios(device, &bios, None);
        self.bio_scratch = bios;
        submitted.map_err(|problem| SimError::BadIo {
            issuer: "iSCSI target thread".to_owned(),
            problem,
        })?;
        self.unplug_device(device);
        // The thread waits: what it submitted is no longer "touched" by anyone.
        self.touched.remove(&process);
        Ok(())
    }

    fn submit_to_host(
        &mut self,
        index: usize,
        io: Io,
        process: ProcessId,
        priority: IoPriority,
    ) -> Result<(), SimError> {
        let kind = match io.kind {
            IoKind::Read => HostOpKind::Read,
            IoKind::Write => HostOpKind::Write,
            IoKind::Sync => HostOpKind::Sync,
            IoKind::DropCaches => HostOpKind::DropCaches,
            IoKind::Discard => {
                return Err(SimError::BadIo {
                    issuer: self.issuers[index].issuer.name().to_owned(),
                    problem: "a discard through the page cache (use direct)".to_owned(),
                });
            }
        };
        let place = match io.place {
            Place::Device(device) => HostPlace::Device(device),
            Place::File(file) => HostPlace::File(file),
        };
        let op = self.next_host_op;
        self.next_host_op += 1;
        self.issuers[index].wait_unplugs = kind != HostOpKind::Write;
        let bytes =
            if matches!(kind, HostOpKind::Read | HostOpKind::Write) { io.size_bytes } else { 0 };
        self.host_ops.insert(op, HostOp { issuer: index, io: io.id, submitted: self.now, bytes });
        self.host_ops_peak = self.host_ops_peak.max(self.host_ops.len());
        self.issuers[index].outstanding += 1;
        let submitted = self.host.submit(
            self.now,
            op,
            process,
            priority,
            kind,
            place,
            io.offset_bytes,
            io.size_bytes,
        );
        submitted.map_err(|error| {
            // Refused: the operation never started (a full filesystem fails the write).
            self.host_ops.remove(&op);
            self.issuers[index].outstanding -= 1;
            host_io_error(self.issuers[index].issuer.name(), &error, &self.devices)
        })
    }

    /// Carries out what the host asked for, until it asks for nothing more.
    ///
    /// Runs after every event, and most events (a direct I/O's steps) leave the host idle: the
    /// check is inlined into the callers, the work is not (the call's own frame cost more than
    /// the check, issue 20).
    #[inline]
    fn run_host_actions(&mut self) -> Result<(), SimError> {
        if !self.host.has_work() {
            return Ok(());
        }
        self.run_host_actions_now()
    }

    /// [`Simulation::run_host_actions`] when the host has work.
    #[inline(never)]
    fn run_host_actions_now(&mut self) -> Result<(), SimError> {
        // An action may run this again (re-entrantly); that call finds the buffer taken and
        // uses a fresh one, which is correct, only not allocation-free.
        let mut actions = std::mem::take(&mut self.host_actions);
        loop {
            self.host.swap_actions(&mut actions);
            if actions.is_empty() {
                break;
            }
            for action in actions.drain(..) {
                match action {
                    HostAction::Complete { op, at } => {
                        self.events.push(at, Event::HostDone { op });
                    }
                    // 2.4's daemons unplug by running `tq_disk`: every plugged queue (§4.2).
                    HostAction::Unplug { .. } if self.tq_disk_plugging() => self.run_tq_disk(),
                    HostAction::Unplug { device } => self.unplug_device(device),
                    HostAction::Submit { batch, device, process, priority, bios } => {
                        let mut block_bios = Vec::with_capacity(bios.len());
                        for host_bio in &bios {
                            let tag = self.new_pending(Pending {
                                owner: BioOwner::Host { bio: host_bio.id, batch },
                                bios_left: 1,
                                process,
                            });
                            block_bios.push(Bio {
                                op: host_bio.op,
                                start: host_bio.start,
                                sector_count: host_bio.sector_count,
                                flags: host_bio.flags,
                                priority,
                                process,
                                tag: BioTag(tag as u64),
                                cpu: 0,
                            });
                        }
                        let parked =
                            self.submit_bios(device, &block_bios, None).map_err(|problem| {
                                SimError::BadIo { issuer: "host".to_owned(), problem }
                            })?;
                        // Congestion first: a non-blocking flusher resumed by the acceptance
                        // checks it before its next page (`mpage_writepages`).
                        self.report_congestion(device);
                        if parked == 0 {
                            self.host.batch_accepted(self.now, batch);
                        } else {
                            self.unaccepted.insert(batch, parked);
                        }
                    }
                }
            }
        }
        self.host_actions = actions;
        if !self.host.take_timers_changed() {
            return Ok(());
        }
        let next = self.host.next_timer();
        if let Some((at, generation)) = self.host_wake.move_to(next, &mut self.superseded) {
            self.events.push(at.max(self.now), Event::HostWake { generation });
        }
        Ok(())
    }

    /// Tells the host whether `device` is write-congested, and whether read-congested: for
    /// dm, when any path is (`dm_table_any_congested`).
    // Inline: its usual outcome, nothing flipped, is a few loads at the caller.
    #[inline]
    fn report_congestion(&mut self, device: usize) {
        // This runs after every pump and completion; the queues' marks flip far more rarely
        // (at the congestion thresholds): when none flipped since the last look, the answer
        // is the one reported then (issue 20).
        let slot = &self.devices[device];
        let flips = match slot.paths.as_slice() {
            [only] => only.submitter.queue().congestion_flips(),
            paths => paths.iter().map(|path| path.submitter.queue().congestion_flips()).sum(),
        };
        if slot.congestion_flips != Some(flips) {
            self.devices[device].congestion_flips = Some(flips);
            self.report_congestion_now(device);
        }
    }

    /// [`Simulation::report_congestion`] when some mark flipped: works out both directions.
    #[cold]
    fn report_congestion_now(&mut self, device: usize) {
        // Both directions in one pass over the paths.
        let (mut congested, mut read_congested) = (false, false);
        for path in &self.devices[device].paths {
            let (reads, writes) = path.submitter.queue().congested_directions();
            congested |= writes;
            read_congested |= reads;
        }
        if congested != self.devices[device].congested {
            self.devices[device].congested = congested;
            self.host.set_congested(self.now, device, congested);
        }
        if read_congested != self.devices[device].read_congested {
            self.devices[device].read_congested = read_congested;
            self.host.set_read_congested(device, read_congested);
        }
    }

    fn new_pending(&mut self, pending: Pending) -> usize {
        match self.free_pending.pop() {
            Some(slot) => {
                self.pending[slot] = Some(pending);
                slot
            }
            None => {
                self.pending.push(Some(pending));
                self.pending.len() - 1
            }
        }
    }

    fn pump_dirty_devices(&mut self) -> Result<(), SimError> {
        for device in 0..self.devices.len() {
            if self.devices[device].dirty {
                self.devices[device].dirty = false;
                self.pump(device);
                if self.tq_disk_plugging() {
                    self.wake_freed_at_dispatch(device)?;
                }
                self.report_congestion(device);
                self.audit(device)?;
            }
        }
        self.run_host_actions()
    }

    /// 2.4: a SCSI request returns to the pool as the driver starts it, so pumping may wake
    /// tasks waiting for a request (and a RHEL 3 sleeper's 1 s may be up): let them in, and
    /// give the device what they queued (linux-2.4-elevator.md §5).
    fn wake_freed_at_dispatch(&mut self, device: usize) -> Result<(), SimError> {
        for path in 0..self.devices[device].paths.len() {
            while self.devices[device].paths[path].submitter.queue().has_woken() {
                self.wake_parked(device, path)?;
                self.pump_path(device, path);
            }
        }
        self.reschedule_device(device);
        Ok(())
    }

    /// Gives the device what its dirty queues let it have now.
    fn pump(&mut self, device: usize) {
        for path in 0..self.devices[device].paths.len() {
            if std::mem::take(&mut self.devices[device].paths[path].dirty) {
                self.pump_path(device, path);
            }
        }
        self.reschedule_device(device);
    }

    /// Gives the device what `path`'s queue lets it have now. Returns whether the queue is
    /// settled: its last answer was busy or empty (no wake-up timer set for it, no adapter
    /// limit in the way), so asking again before anything changes it would answer the same.
    fn pump_path(&mut self, device: usize, path: usize) -> bool {
        let paths = self.devices[device].paths.len();
        loop {
            let slot = &mut self.devices[device];
            // The adapter has all the commands it takes: the queue keeps its requests until
            // a command of one of the adapter's devices completes (§2.5).
            if let Some(adapter) = slot.adapter {
                let adapter = &self.adapters[adapter];
                if adapter.outstanding >= adapter.can_queue {
                    return false;
                }
            }
            let path_slot = &mut slot.paths[path];
            match path_slot.submitter.queue_mut().next_request(self.now) {
                Pull::Issue(request) => {
                    if let Some(adapter) = slot.adapter {
                        self.adapters[adapter].outstanding += 1;
                    }
                    let index = request.index();
                    if index >= path_slot.commands.len() {
                        path_slot.commands.resize(index + 1, None);
                    }
                    path_slot.commands[index] = Some(request);
                    let command = command_for(path_slot.submitter.queue(), request, path, paths);
                    if let Some((samples, cap)) = &mut self.dispatches
                        && let Some(dispatched) = path_slot.submitter.queue().request(request)
                    {
                        samples.offer(
                            *cap,
                            self.dispatched,
                            self.now.as_nanos(),
                            dispatched.start.0,
                            dispatched.sector_count,
                            dispatched.process.0,
                            device as u32,
                            dispatched.op == Op::Write,
                        );
                    }
                    self.dispatched += 1;
                    match slot.link {
                        Some(link) => {
                            let link_state = &mut self.links[link];
                            let ready = self.now + link_state.spec().command_latency;
                            let bytes = command.size_bytes();
                            let at = match (command.op == Op::Write, path_slot.link_path) {
                                (true, Some(on)) => {
                                    link_state.transfer_on(on, ready, bytes, Flow::ToDevice)
                                }
                                (true, None) => link_state.transfer(ready, bytes, Flow::ToDevice),
                                (false, _) => ready,
                            };
                            self.events.push(at, Event::ReachDevice { device, path, request });
                        }
                        None => slot.model.submit(self.now, command),
                    }
                }
                Pull::Idle { until } | Pull::Plugged { until } => {
                    // Replaces a pending wake-up: its event is moved, not left behind.
                    path_slot.wake_pending = true;
                    self.events.set_timer(
                        path_slot.wake_timer,
                        until,
                        Event::QueueWake { device, path },
                    );
                    return false;
                }
                Pull::Busy | Pull::Empty => {
                    // A RHEL 3 task sleeping for a request retries after 1 s (§5): wake the
                    // queue then, unless a wake-up is already pending.
                    if let Some(at) = path_slot.submitter.queue().next_pool_timeout()
                        && !path_slot.wake_pending
                    {
                        path_slot.wake_pending = true;
                        self.events.set_timer(
                            path_slot.wake_timer,
                            at,
                            Event::QueueWake { device, path },
                        );
                    }
                    return true;
                }
            }
        }
    }

    /// Keeps exactly one step event per device, at its model's next event: on the device's
    /// timer, so a moved step replaces the last rather than adding to it.
    fn reschedule_device(&mut self, device: usize) {
        let slot = &mut self.devices[device];
        let next = slot.model.next_event();
        if next == slot.step_at {
            return;
        }
        slot.step_at = next;
        match next {
            Some(at) => {
                self.events.set_timer(device, at.max(self.now), Event::DeviceStep { device })
            }
            None => self.events.clear_timer(device),
        }
    }

    /// The event queue ran dry: the clock reaches the latest moved or cleared timer's time,
    /// as it did when a superseded wake-up stayed queued and was ignored at its time (what
    /// the report reads of the clock after the run stays as it was).
    fn reach_cancelled_horizon(&mut self) -> Result<(), SimError> {
        match self.events.cancelled_horizon() {
            Some(at) if at > self.now => self.advance_clock(at),
            _ => Ok(()),
        }
    }

    fn audit(&self, device: usize) -> Result<(), SimError> {
        if self.check {
            for path in &self.devices[device].paths {
                check_queue(path.submitter.queue())?;
            }
        }
        Ok(())
    }

    /// Checks that the run left nothing behind: each queue completed every request it issued
    /// exactly once (less those the device gave back) and every request it allocated was
    /// completed or fused into another; nothing is queued, held, in flight, parked or at a
    /// device or link; every bio and host operation finished.
    fn audit_end(&self) -> Result<(), SimError> {
        let broken = |detail: String| {
            SimError::Invariant(elevator_core::check::InvariantViolation(format!(
                "at the end of the run: {detail}"
            )))
        };
        for device in &self.devices {
            let name = &device.name;
            let mut issued = 0;
            let mut completed = 0;
            for path in &device.paths {
                let queue = path.submitter.queue();
                let stats = queue.stats(self.now);
                let name = &path.name;
                if stats.completed + stats.requeued != stats.issued {
                    return Err(broken(format!(
                        "{name}: {} requests issued, {} requeued, {} completed",
                        stats.issued, stats.requeued, stats.completed
                    )));
                }
                if stats.requests_allocated != stats.completed + stats.requests_fused {
                    return Err(broken(format!(
                        "{name}: {} requests allocated, {} completed, {} fused",
                        stats.requests_allocated, stats.completed, stats.requests_fused
                    )));
                }
                if !queue.is_quiet() || queue.queued() > 0 || queue.in_flight() > 0 {
                    return Err(broken(format!(
                        "{name}: {} requests outstanding, {} queued, {} in flight",
                        queue.outstanding(),
                        queue.queued(),
                        queue.in_flight()
                    )));
                }
                if path.submitter.parked_count() > 0 {
                    return Err(broken(format!(
                        "{name}: {} bios still parked",
                        path.submitter.parked_count()
                    )));
                }
                if path.commands.iter().any(Option::is_some) {
                    return Err(broken(format!("{name}: a command is still at the device")));
                }
                issued += stats.issued - stats.requeued;
                completed += stats.completed;
            }
            if let Some(at) = device.model.next_event() {
                return Err(broken(format!("{name}: the device still has work due at {at}")));
            }
            let finished = device.model.stats().commands;
            if finished != issued {
                return Err(broken(format!(
                    "{name}: the device finished {finished} commands, the queue completed \
                     {completed}"
                )));
            }
        }
        let pending = self.pending.iter().filter(|slot| slot.is_some()).count();
        if pending > 0 || !self.unaccepted.is_empty() || !self.host_ops.is_empty() {
            return Err(broken(format!(
                "{pending} bios, {} host batches and {} host operations unfinished",
                self.unaccepted.len(),
                self.host_ops.len()
            )));
        }
        Ok(())
    }

    /// Every queue of every device.
    fn queues(&self) -> impl Iterator<Item = &PathSlot> {
        self.devices.iter().flat_map(|device| device.paths.iter())
    }

    fn run_audit(&self, issuers_peak: usize) -> RunAudit {
        RunAudit {
            events: self.event_count,
            events_pending_peak: self.events_pending_peak,
            live_events_peak: self.live_events_peak,
            host_ops_peak: self.host_ops_peak,
            devices: self.devices.iter().map(|device| device.paths.len()).sum(),
            bios_pending_peak: self.pending.len(),
            issuers_peak,
            requests_capacity: self
                .queues()
                .map(|path| path.submitter.queue().requests().capacity())
                .sum(),
            depth_total: self
                .queues()
                .map(|path| u64::from(path.submitter.queue().config().depth))
                .sum(),
            cache_chunks_at_end: self.host.occupancy().0,
            cache_capacity_chunks: self.host.cache_capacity_pages()
                / crate::host::cache::CHUNK_PAGES,
        }
    }

    fn stall(&self) -> SimError {
        let waiting: Vec<String> = self
            .issuers
            .iter()
            .filter(|slot| !slot.done)
            .map(|slot| {
                let state = if slot.parked > 0 {
                    "blocked on a full request pool"
                } else if slot.sleeping {
                    "asleep"
                } else {
                    "waiting"
                };
                format!("{} {state} with {} I/O outstanding", slot.issuer.name(), slot.outstanding)
            })
            .collect();
        let mut detail = waiting.join("; ");
        if !self.host_ops.is_empty() {
            detail.push_str("; ");
            detail.push_str(&self.host.stall_detail());
        }
        SimError::Stalled { at: self.now, detail }
    }

    fn report(
        &self,
        config: &SimConfig,
        scheduler: &SchedulerSpec,
        label: &str,
        workload_settings: &[(String, String)],
        phases: Vec<elevator_report::Phase>,
    ) -> Run {
        let mut settings = BTreeMap::new();
        settings.insert("sim.seed".to_owned(), config.seed.to_string());
        for (key, value) in config.device.resolved() {
            settings.insert(format!("device.{key}"), value);
        }
        for (key, value) in config.host.resolved() {
            // The blk-mq path's costs matter only to a run that took it.
            if key.starts_with("mq_") && self.mq.is_none() {
                continue;
            }
            // The release by its canonical name (`uname -r`), however the spec wrote it.
            let value =
                if key == "kernel" { config.host.kernel().name().to_owned() } else { value };
            settings.insert(format!("host.{key}"), value);
        }
        for (key, value) in scheduler.resolved() {
            settings.insert(format!("scheduler.{key}"), value.to_string());
        }
        for (key, value) in workload_settings {
            settings.insert(format!("workload.{key}"), value.clone());
        }
        let mut scheduler_stats = SchedulerStats::default();
        let mut queue_stats = ReportQueueStats::default();
        let mut device_stats = ReportDeviceStats::default();
        let mut descriptions = std::collections::BTreeSet::new();
        for device in &self.devices {
            // Per-path queues are reported each under its own name and summed in the stats,
            // as several devices' queues are.
            for path in &device.paths {
                let queue = path.submitter.queue().config();
                let prefix = format!("queue.{}", path.name);
                settings.insert(format!("{prefix}.nr_requests"), queue.nr_requests.to_string());
                settings.insert(format!("{prefix}.depth"), queue.depth.to_string());
                settings
                    .insert(format!("{prefix}.max_sectors_kb"), queue.max_sectors_kb.to_string());
                settings.insert(
                    format!("{prefix}.read_ahead_kb"),
                    config.queue.read_ahead_kb.to_string(),
                );
                settings.insert(format!("{prefix}.plugging"), u8::from(queue.plugging).to_string());
                let stats = path.submitter.stats(self.now);
                scheduler_stats.add_queue(&stats, &path.submitter.queue().scheduler().counters());
                queue_stats.add_queue(&stats);
            }
            let access = device.multipath.as_ref().map_or(String::new(), |multipath| {
                let group: Vec<String> =
                    multipath.selector.group().iter().map(usize::to_string).collect();
                format!(
                    "; dm-multipath {} over {} paths, active path {} (rr_min_io {}), {} commands \
                     a path",
                    multipath.policy.name(),
                    multipath.paths,
                    group.join("+"),
                    multipath.selector.rr_min_io(),
                    device.paths[0].submitter.queue().config().depth
                )
            });
            descriptions.insert(format!("{}: {}{access}", device.name, device.model.describe()));
            let model = device.model.stats();
            device_stats.requests += model.commands;
            device_stats.busy_ns += model.busy_ns;
            device_stats.seek_distance_sectors += model.seek_distance_sectors;
            for (name, value) in model.extra {
                *device_stats.extra.entry(name.to_owned()).or_default() += value;
            }
        }
        // Which paths carried the data, where dm-multipath chose them.
        if self.devices.iter().any(|device| device.multipath.is_some()) {
            for link in &self.links {
                for (path, &bytes) in link.path_bytes().iter().enumerate() {
                    *device_stats.extra.entry(format!("link_path{path}_bytes")).or_default() +=
                        bytes;
                }
            }
        }
        for (index, description) in descriptions.into_iter().enumerate() {
            settings.insert(format!("device.model.{index}"), description);
        }
        if let Some(fabric) = &self.fabric {
            // The other host and the links: the devices above are the target's disks.
            settings.insert("device.initiator".to_owned(), fabric.spec().describe());
            for (path, bytes) in fabric.link_path_bytes().iter().enumerate() {
                *device_stats.extra.entry(format!("link_path{path}_bytes")).or_default() += bytes;
            }
        }
        let host = self.host.stats;
        let (cached_chunks, dirty_pages, _) = self.host.occupancy();
        let host_stats: BTreeMap<String, u64> = [
            ("cached_bytes_at_end", cached_chunks * crate::host::cache::CHUNK_BYTES),
            ("dirty_bytes_at_end", dirty_pages * crate::host::cache::PAGE_BYTES),
            ("cache_hit_pages", host.cache_hit_pages),
            ("cache_miss_pages", host.cache_miss_pages),
            ("read_ahead_pages", host.read_ahead_pages),
            ("writeback_pages", host.writeback_pages),
            ("throttled_writes", host.throttled_writes),
            ("flusher_passes", host.flusher_passes),
            ("reread_evicted_pages", host.reread_evicted_pages),
            ("single_page_reads", host.single_page_reads),
            ("read_ahead_dropped_pages", host.read_ahead_dropped_pages),
            ("dirty_bytes_peak", host.dirty_pages_peak * crate::host::cache::PAGE_BYTES),
            ("dirty_bytes_limit", self.host.dirty_limit_pages() * crate::host::cache::PAGE_BYTES),
        ]
        .into_iter()
        .filter(|&(_, value)| value > 0)
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        Run {
            mode: Mode::Sim,
            experiment: None,
            device: config.device.to_string(),
            workload: label.to_owned(),
            scheduler: scheduler.to_string(),
            config: settings,
            phases,
            scheduler_stats,
            queue_stats,
            device_stats,
            host_stats,
            partial: false,
            partial_reason: None,
            host_cpu: self
                .mq
                .as_ref()
                .map(|mq| mq.report(self.now, self.now.saturating_since(Instant::ZERO))),
            dispatches: self.dispatches.as_ref().map(|(samples, _)| samples.clone()),
        }
    }
}

/// An issuer's operation the host refused: a device full of growing files is
/// [`SimError::NoSpace`], anything else [`SimError::BadIo`].
/// How `issuer`'s thread submits on a blk-mq host (its workload's `cpus_allowed`, batch and
/// io_uring flags, `Issuer::cpu`).
fn submitter_of(issuer: &dyn Issuer) -> blkmq::Submitter {
    let cpu = issuer.cpu();
    blkmq::Submitter {
        cpus_allowed: cpu.cpus_allowed,
        batch: cpu.batch_submit.max(1),
        fixed_buffers: cpu.fixed_buffers,
        polled: cpu.polled,
        sq_poll: cpu.sq_poll.is_some(),
    }
}

fn host_io_error(issuer: &str, error: &HostError, devices: &[DeviceSlot]) -> SimError {
    let (issuer, problem) = (issuer.to_owned(), host_error_text(error, devices));
    match error {
        HostError::OutOfSpace { .. } => SimError::NoSpace { issuer, problem },
        HostError::NoSuchPlace => SimError::BadIo { issuer, problem },
    }
}

fn host_error_text(error: &HostError, devices: &[DeviceSlot]) -> String {
    match error {
        HostError::OutOfSpace { device } => format!(
            "the files do not fit on {} ({} bytes)",
            devices[*device].name,
            devices[*device].capacity_sectors * SECTOR_SIZE_BYTES
        ),
        HostError::NoSuchPlace => "an operation names a file or device that does not exist".into(),
    }
}

/// The command for `request` of queue `path` of a device with `paths` queues: its id is the
/// request's slot index times `paths` plus `path`, so one device's paths never share an id (and
/// a lone queue's ids are its slot indexes).
fn command_for(queue: &BlockQueue, request: RequestId, path: usize, paths: usize) -> Command {
    let r = queue.request(request).expect("an issued request lives until it completes");
    Command {
        id: CommandId((request.index() * paths + path) as u64),
        op: r.op,
        start: r.start,
        sector_count: r.sector_count,
        fua: r.flags.contains(RequestFlags::FUA),
    }
}

/// The queue and slot index a command id stands for (see [`command_for`]).
fn path_and_index(id: u64, paths: usize) -> (usize, usize) {
    let id = id as usize;
    (id % paths, id / paths)
}

/// The bit of `device` in a process's set of touched devices: bit 63 stands for every device
/// from 63 on (no built-in topology has that many).
fn device_bit(device: usize) -> u64 {
    1 << device.min(63)
}

/// Adds the fabric's counters since `before` to the phase: what the initiator read and
/// prefetched, the waits for the session window and the target's threads, how many distinct
/// worker threads each LUN's scheduler saw, and the peaks of the vdev queues and busy threads.
fn record_fabric_counters(fabric: &Fabric, before: &FabricStats, recorder: &mut PhaseRecorder) {
    let now = fabric.stats();
    recorder.add_counter("iscsi_demand_reads", now.demand_reads - before.demand_reads);
    recorder.add_counter("iscsi_prefetch_reads", now.prefetch_reads - before.prefetch_reads);
    recorder.add_counter("iscsi_commands", now.commands - before.commands);
    recorder.add_counter("iscsi_window_waits", now.window_waits - before.window_waits);
    recorder.add_counter("iscsi_thread_waits", now.thread_waits - before.thread_waits);
    let (fewest, most) = fabric.threads_per_lun();
    if most > 0 {
        recorder.add_counter("iscsi_threads_per_lun_min", u64::from(fewest));
        recorder.add_counter("iscsi_threads_per_lun_max", u64::from(most));
    }
    recorder.add_counter("iscsi_vdev_pending_peak", u64::from(fabric.vdev_pending_peak()));
    recorder.add_counter("iscsi_busy_threads_peak", u64::from(fabric.busy_threads_peak()));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process that reads one page of `sda` through the page cache and waits for it.
    #[derive(Debug, Default)]
    struct OneRead {
        polls: u32,
        done: bool,
    }

    impl Issuer for OneRead {
        fn name(&self) -> &str {
            "reader"
        }
        fn process(&self) -> ProcessId {
            ProcessId(7)
        }
        fn poll(&mut self, _now: Instant) -> Poll {
            self.polls += 1;
            match (self.polls, self.done) {
                (1, _) => Poll::Submit(Io {
                    id: IoId(1),
                    kind: IoKind::Read,
                    place: Place::Device(0),
                    offset_bytes: 1 << 20,
                    size_bytes: 4096,
                    direct: false,
                    flags: RequestFlags::NONE,
                }),
                (_, false) => Poll::Wait,
                (_, true) => Poll::Done,
            }
        }
        fn complete(&mut self, _now: Instant, _io: IoId) {
            self.done = true;
        }
    }

    /// A simulation of `megaraid-8` on `host` with writes plugged on `sdc` (device 2), none
    /// of them the reader's, and a reader of `sda` polled until it waits for its page.
    fn reader_waits_beside_plugged_writes(host: &str) -> Simulation {
        let mut config = SimConfig::new(1, DeviceSpec::parse("megaraid-8").unwrap());
        config.host = HostSpec::parse(host).unwrap();
        let scheduler = SchedulerSpec::parse("noop").unwrap();
        let topology = config.device.topology().unwrap();
        let mut sim = Simulation::new(&config, &scheduler, topology, &[]).unwrap();
        let writer = ProcessId(3);
        // Two: 2.6 unplugs by itself at four.
        for block in 0..2 {
            let bio = Bio::write(writer, Sector(block * 1000), 8, BioTag(0));
            sim.devices[2].paths[0].submitter.submit(sim.now, bio).unwrap();
        }
        assert!(sim.devices[2].paths[0].submitter.queue().is_plugged(sim.now), "{host}");
        sim.issuers = vec![IssuerSlot {
            issuer: Box::<OneRead>::default(),
            parked: 0,
            outstanding: 0,
            wake_generation: 0,
            sleeping: false,
            done: false,
            exits: false,
            cpu_at_start: crate::host::CpuTime::default(),
            wait_unplugs: false,
            touched: 0,
            in_call: false,
        }];
        sim.ready = vec![0];
        let mut recorder = PhaseRecorder::new("test", sim.now, vec!["reader".to_owned()]);
        sim.run_ready_issuers(&mut recorder, false).unwrap();
        assert_eq!(sim.issuers[0].outstanding, 1, "{host}: the reader waits for its page");
        sim
    }

    // Proves §4.2's global `tq_disk` (linux-2.4-elevator.md §7.10): on a RHEL 3 host a reader
    // of sda going to wait for its page unplugs every plugged queue — sdc's writes, which
    // are not its own, included. On a 2.6 host it unplugs only the queues it submitted to:
    // sdc stays plugged (for its 3 ms timer).
    #[test]
    fn a_waiting_task_runs_tq_disk_on_every_queue_of_a_2_4_host() {
        let sim = reader_waits_beside_plugged_writes("host:kernel=rhel3");
        assert!(!sim.devices[2].paths[0].submitter.queue().is_plugged(sim.now));
        let sim = reader_waits_beside_plugged_writes("host:kernel=rhel4");
        assert!(sim.devices[2].paths[0].submitter.queue().is_plugged(sim.now));
    }
}
