//! The runner: one workload, one scheduler, one topology, start to finish.
//!
//! ```text
//! issuer.poll ─Submit(io)─> split into bios ─> BlockQueue::submit ─> scheduler
//!                                                   │ next_request: Issue
//!                           (link: write data) ─> DeviceModel::submit ... advance ─> finished
//!                           (link: read data)  ─> BlockQueue::complete ─> bios ─> io done
//!                                                   └─> issuer.complete ─> poll again
//! ```
//!
//! Everything happens at events popped from one [`EventQueue`] in (time, sequence) order:
//! issuers waking from think time, device steps, the scheduler's `Idle`/plug wake-ups and link
//! transfers. After every event the devices it touched are pumped: the queue is asked for
//! requests while the device has room. Phases run one after another; a phase ends when all its
//! issuers are done and none of their operations is outstanding.
//!
//! Every run is bounded ([`Bounds`]); hitting a bound, or a stall (issuers waiting with
//! nothing that could ever wake them), is an error that says where and when.

use std::collections::{BTreeMap, BTreeSet};

use elevator_core::check::check_queue;
use elevator_core::{
    Bio, BioTag, BlockQueue, Duration, Instant, Op, Prng, ProcessId, Pull, QueueConfig,
    RequestFlags, RequestId, SECTOR_SIZE_BYTES, Sector, Submitted,
};
use elevator_report::{
    DeviceStats as ReportDeviceStats, Mode, PhaseRecorder, QueueStats as ReportQueueStats, Run,
    SchedulerStats,
};
use elevator_sched::SchedulerSpec;
use elevator_workload::{Io, IoId, IoKind, Issuer, Place, Poll, Target, WorkloadSpec};

use crate::device::{Command, CommandId, DeviceSpec};
use crate::engine::EventQueue;
use crate::topology::Topology;

/// Limits on a run. Reaching one is an error, never a silent stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Events processed.
    pub max_events: u64,
    /// Simulated time.
    pub max_time: Duration,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds { max_events: 1 << 34, max_time: Duration::from_secs(7 * 24 * 3600) }
    }
}

/// Block-layer settings that do not come from the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSettings {
    /// `nr_requests`.
    pub nr_requests: u32,
    /// `max_sectors_kb`.
    pub max_sectors_kb: u32,
    /// Plugging on or off.
    pub plugging: bool,
    /// Overrides the device's own queue depth.
    pub depth: Option<u32>,
}

impl Default for QueueSettings {
    fn default() -> QueueSettings {
        let defaults = QueueConfig::default();
        QueueSettings {
            nr_requests: defaults.nr_requests,
            max_sectors_kb: defaults.max_sectors_kb,
            plugging: defaults.plugging,
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
    /// Block-layer settings.
    pub queue: QueueSettings,
    /// Limits.
    pub bounds: Bounds,
    /// Audit every queue after every event (slow; for tests).
    pub check_invariants: bool,
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

/// Simulates `workload` under `scheduler` on `config.device`; returns the run's report.
pub fn run(
    config: &SimConfig,
    scheduler: &SchedulerSpec,
    workload: &WorkloadSpec,
) -> Result<Run, SimError> {
    let topology = config.device.topology()?;
    let mut sim = Simulation::new(config, scheduler, topology)?;
    let targets: Vec<Target> = sim
        .devices
        .iter()
        .map(|device| Target {
            name: device.name.clone(),
            capacity_bytes: device.capacity_sectors * SECTOR_SIZE_BYTES,
        })
        .collect();
    let prng = Prng::new(config.seed);
    let plan = workload.plan(&targets, &prng.fork("workload"))?;
    let last_phase_of = last_phase_of_each_process(&plan);
    let mut phases = Vec::with_capacity(plan.phases.len());
    for (index, phase) in plan.phases.into_iter().enumerate() {
        let exits: Vec<bool> =
            phase.issuers.iter().map(|issuer| last_phase_of[&issuer.process()] == index).collect();
        let names = phase.issuers.iter().map(|issuer| issuer.name().to_owned()).collect();
        let mut recorder = PhaseRecorder::new(phase.name, sim.now, names);
        sim.run_phase(phase.issuers, &exits, &mut recorder)?;
        phases.push(recorder.finish(None));
    }
    sim.settle()?;
    Ok(sim.report(config, scheduler, workload, phases))
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
    /// A device's next internal event (stale unless the generation matches).
    DeviceStep { device: usize, generation: u64 },
    /// A scheduler's idle or a plug times out (stale unless the generation matches).
    QueueWake { device: usize, generation: u64 },
    /// A command reaches the device after crossing the link.
    ReachDevice { device: usize, request: RequestId },
    /// A read's data has crossed the link back: the request is done.
    ReachHost { device: usize, request: RequestId },
}

struct DeviceSlot {
    name: String,
    capacity_sectors: u64,
    queue: BlockQueue,
    model: Box<dyn crate::device::DeviceModel>,
    link: Option<usize>,
    /// Requests at the device by slot index (the command id).
    commands: Vec<Option<RequestId>>,
    step_generation: u64,
    step_at: Option<Instant>,
    wake_generation: u64,
    dirty: bool,
}

#[derive(Debug)]
struct PendingIo {
    issuer: usize,
    io: IoId,
    bios_left: u32,
    submitted: Instant,
    bytes: u64,
}

struct IssuerSlot {
    issuer: Box<dyn Issuer>,
    /// Bios of the current operation the pool refused, waiting for a wake-up.
    blocked: Vec<Bio>,
    blocked_device: usize,
    outstanding: u32,
    wake_generation: u64,
    sleeping: bool,
    done: bool,
    exits: bool,
}

struct Simulation {
    now: Instant,
    events: EventQueue<Event>,
    devices: Vec<DeviceSlot>,
    links: Vec<crate::topology::Link>,
    issuers: Vec<IssuerSlot>,
    pending: Vec<Option<PendingIo>>,
    free_pending: Vec<usize>,
    event_count: u64,
    /// Sleep generations are unique across phases, so a stale wake-up of an issuer of an
    /// earlier phase never wakes the one that took its index.
    next_wake_generation: u64,
    bounds: Bounds,
    check: bool,
    finished: Vec<CommandId>,
    tags: Vec<BioTag>,
    ready: Vec<usize>,
}

impl Simulation {
    fn new(
        config: &SimConfig,
        scheduler: &SchedulerSpec,
        topology: Topology,
    ) -> Result<Simulation, SimError> {
        let mut devices = Vec::with_capacity(topology.devices.len());
        for device in topology.devices {
            let queue_config = QueueConfig {
                nr_requests: config.queue.nr_requests,
                depth: config.queue.depth.unwrap_or_else(|| device.model.queue_depth()),
                max_sectors_kb: config.queue.max_sectors_kb,
                plugging: config.queue.plugging,
                ..QueueConfig::default()
            };
            if queue_config.depth > device.model.queue_depth() {
                return Err(SimError::Param(elevator_core::ParamError::Impossible {
                    component: "queue".to_owned(),
                    key: "depth",
                    problem: format!(
                        "{} accepts at most {} commands",
                        device.name,
                        device.model.queue_depth()
                    ),
                }));
            }
            let queue = BlockQueue::new(queue_config, scheduler.build())?;
            let capacity = queue.requests().capacity();
            devices.push(DeviceSlot {
                name: device.name,
                capacity_sectors: device.model.capacity_sectors(),
                queue,
                model: device.model,
                link: device.link,
                commands: vec![None; capacity],
                step_generation: 0,
                step_at: None,
                wake_generation: 0,
                dirty: false,
            });
        }
        Ok(Simulation {
            now: Instant::ZERO,
            events: EventQueue::new(),
            devices,
            links: topology.links,
            issuers: Vec::new(),
            pending: Vec::new(),
            free_pending: Vec::new(),
            event_count: 0,
            next_wake_generation: 0,
            bounds: config.bounds,
            check: config.check_invariants,
            finished: Vec::new(),
            tags: Vec::new(),
            ready: Vec::new(),
        })
    }

    fn run_phase(
        &mut self,
        issuers: Vec<Box<dyn Issuer>>,
        exits: &[bool],
        recorder: &mut PhaseRecorder,
    ) -> Result<(), SimError> {
        self.issuers = issuers
            .into_iter()
            .zip(exits)
            .map(|(issuer, &exits)| IssuerSlot {
                issuer,
                blocked: Vec::new(),
                blocked_device: 0,
                outstanding: 0,
                wake_generation: 0,
                sleeping: false,
                done: false,
                exits,
            })
            .collect();
        self.ready = (0..self.issuers.len()).collect();
        loop {
            self.run_ready_issuers(recorder)?;
            self.pump_dirty_devices()?;
            if self.issuers.iter().all(|slot| slot.done) {
                return Ok(());
            }
            let Some((at, event)) = self.events.pop() else {
                return Err(self.stall());
            };
            self.advance_clock(at)?;
            self.handle(event, recorder)?;
        }
    }

    /// Runs the devices' remaining internal work (write-back caches) after the last phase.
    fn settle(&mut self) -> Result<(), SimError> {
        let mut recorder = PhaseRecorder::new("settle", self.now, Vec::new());
        while let Some((at, event)) = self.events.pop() {
            self.advance_clock(at)?;
            self.handle(event, &mut recorder)?;
            self.pump_dirty_devices()?;
        }
        Ok(())
    }

    fn advance_clock(&mut self, at: Instant) -> Result<(), SimError> {
        debug_assert!(at >= self.now, "event in the past");
        self.now = at;
        self.event_count += 1;
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
                }
            }
            Event::DeviceStep { device, generation } => {
                if self.devices[device].step_generation == generation {
                    self.devices[device].step_at = None;
                    self.step_device(device, recorder)?;
                }
            }
            Event::QueueWake { device, generation } => {
                if self.devices[device].wake_generation == generation {
                    self.devices[device].dirty = true;
                }
            }
            Event::ReachDevice { device, request } => {
                let slot = &mut self.devices[device];
                let command = command_for(&slot.queue, request);
                slot.model.submit(self.now, command);
                self.reschedule_device(device);
            }
            Event::ReachHost { device, request } => {
                self.complete_request(device, request, recorder)?;
            }
        }
        Ok(())
    }

    fn step_device(&mut self, device: usize, recorder: &mut PhaseRecorder) -> Result<(), SimError> {
        let mut finished = std::mem::take(&mut self.finished);
        finished.clear();
        self.devices[device].model.advance(self.now, &mut finished);
        for &CommandId(index) in &finished {
            let slot = &mut self.devices[device];
            let request = slot.commands[index as usize]
                .take()
                .unwrap_or_else(|| panic!("{}: finished unknown command {index}", slot.name));
            let is_read = slot.queue.request(request).is_some_and(|r| r.op == Op::Read);
            match slot.link {
                Some(link) if is_read => {
                    let bytes = slot.queue.request(request).map_or(0, |r| r.size_bytes());
                    let at = self.links[link].transfer(self.now, bytes);
                    self.events.push(at, Event::ReachHost { device, request });
                }
                _ => self.complete_request(device, request, recorder)?,
            }
        }
        self.finished = finished;
        self.reschedule_device(device);
        Ok(())
    }

    fn complete_request(
        &mut self,
        device: usize,
        request: RequestId,
        recorder: &mut PhaseRecorder,
    ) -> Result<(), SimError> {
        let mut tags = std::mem::take(&mut self.tags);
        tags.clear();
        let slot = &mut self.devices[device];
        slot.queue.complete(self.now, request, &mut tags);
        slot.dirty = true;
        for &BioTag(index) in &tags {
            let entry = self.pending[index as usize].as_mut().expect("a live pending I/O");
            entry.bios_left -= 1;
            if entry.bios_left > 0 {
                continue;
            }
            let done = self.pending[index as usize].take().expect("checked above");
            self.free_pending.push(index as usize);
            recorder.record(done.issuer, done.bytes, done.submitted, self.now);
            let slot = &mut self.issuers[done.issuer];
            slot.outstanding -= 1;
            slot.issuer.complete(self.now, done.io);
            if !slot.sleeping && slot.blocked.is_empty() {
                self.ready.push(done.issuer);
            }
        }
        self.tags = tags;
        self.wake_blocked(device);
        self.audit(device)
    }

    /// Lets processes the pool woke try their refused bios again.
    fn wake_blocked(&mut self, device: usize) {
        while let Some(process) = self.devices[device].queue.pop_woken() {
            let waiting: Vec<usize> = (0..self.issuers.len())
                .filter(|&index| {
                    let slot = &self.issuers[index];
                    !slot.blocked.is_empty()
                        && slot.blocked_device == device
                        && slot.issuer.process() == process
                })
                .collect();
            for index in waiting {
                if self.resubmit_blocked(index) {
                    self.ready.push(index);
                }
            }
        }
    }

    /// Submits an issuer's refused bios in order; true when all went in.
    fn resubmit_blocked(&mut self, index: usize) -> bool {
        let device = self.issuers[index].blocked_device;
        let bios = std::mem::take(&mut self.issuers[index].blocked);
        for (position, &bio) in bios.iter().enumerate() {
            let queue = &mut self.devices[device].queue;
            let outcome = queue.submit(self.now, bio).expect("bios were validated on first submit");
            self.devices[device].dirty = true;
            if outcome == Submitted::Blocked {
                self.issuers[index].blocked = bios[position..].to_vec();
                return false;
            }
        }
        true
    }

    fn run_ready_issuers(&mut self, recorder: &mut PhaseRecorder) -> Result<(), SimError> {
        while let Some(index) = self.ready.pop() {
            self.run_issuer(index, recorder)?;
        }
        Ok(())
    }

    /// Polls an issuer until it sleeps, waits, blocks or is done.
    fn run_issuer(&mut self, index: usize, recorder: &mut PhaseRecorder) -> Result<(), SimError> {
        loop {
            let slot = &mut self.issuers[index];
            if slot.done || slot.sleeping || !slot.blocked.is_empty() {
                return Ok(());
            }
            match slot.issuer.poll(self.now) {
                Poll::Submit(io) => {
                    if !self.submit_io(index, io)? {
                        return Ok(());
                    }
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
                    recorder.extend_to(self.now);
                    if slot.exits {
                        let process = slot.issuer.process();
                        for device in &mut self.devices {
                            device.queue.process_exited(self.now, process);
                            device.dirty = true;
                        }
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Splits `io` into bios and submits them; false when the pool refused one (the issuer
    /// then waits for a wake-up).
    fn submit_io(&mut self, index: usize, io: Io) -> Result<bool, SimError> {
        let issuer = &self.issuers[index].issuer;
        let bad = |problem: String| SimError::BadIo { issuer: issuer.name().to_owned(), problem };
        let Place::Device(target) = io.place else {
            return Err(bad("file I/O needs the host model".to_owned()));
        };
        if !io.direct {
            return Err(bad("buffered I/O needs the host model".to_owned()));
        }
        let op = match io.kind {
            IoKind::Read => Op::Read,
            IoKind::Write => Op::Write,
            IoKind::Sync => Op::Flush,
            IoKind::Discard => Op::Discard,
            IoKind::DropCaches => {
                return Err(bad("dropping caches needs the host model".to_owned()));
            }
        };
        let Some(device) = self.devices.get(target) else {
            return Err(bad(format!("target {target} does not exist")));
        };
        if io.offset_bytes % SECTOR_SIZE_BYTES != 0 || io.size_bytes % SECTOR_SIZE_BYTES != 0 {
            return Err(bad(format!(
                "I/O at {} of {} bytes is not sector aligned",
                io.offset_bytes, io.size_bytes
            )));
        }
        let start = io.offset_bytes / SECTOR_SIZE_BYTES;
        let sectors = io.size_bytes / SECTOR_SIZE_BYTES;
        if start + sectors > device.capacity_sectors {
            return Err(bad(format!(
                "I/O at sector {start} of {sectors} sectors runs past the end of {} ({} sectors)",
                device.name, device.capacity_sectors
            )));
        }
        if (op == Op::Flush) != (sectors == 0) {
            return Err(bad(format!("{op:?} of {sectors} sectors")));
        }
        let max_sectors = u64::from(device.queue.config().max_sectors());
        let bio_count = if sectors == 0 { 1 } else { sectors.div_ceil(max_sectors) };
        let tag = self.free_pending.pop().unwrap_or_else(|| {
            self.pending.push(None);
            self.pending.len() - 1
        });
        self.pending[tag] = Some(PendingIo {
            issuer: index,
            io: io.id,
            bios_left: bio_count as u32,
            submitted: self.now,
            bytes: io.size_bytes,
        });
        let slot = &mut self.issuers[index];
        slot.outstanding += 1;
        let template = Bio {
            op,
            start: Sector(start),
            sector_count: 0,
            flags: io.flags,
            priority: slot.issuer.priority(),
            process: slot.issuer.process(),
            tag: BioTag(tag as u64),
        };
        let mut bios = Vec::new();
        for chunk in 0..bio_count {
            let first = start + chunk * max_sectors;
            let count = if sectors == 0 { 0 } else { (start + sectors - first).min(max_sectors) };
            bios.push(Bio { start: Sector(first), sector_count: count as u32, ..template });
        }
        let queue = &mut self.devices[target].queue;
        for (position, &bio) in bios.iter().enumerate() {
            let outcome = queue.submit(self.now, bio).map_err(|error| SimError::BadIo {
                issuer: self.issuers[index].issuer.name().to_owned(),
                problem: error.to_string(),
            })?;
            if outcome == Submitted::Blocked {
                let slot = &mut self.issuers[index];
                slot.blocked = bios[position..].to_vec();
                slot.blocked_device = target;
                self.devices[target].dirty = true;
                return Ok(false);
            }
        }
        self.devices[target].dirty = true;
        Ok(true)
    }

    fn pump_dirty_devices(&mut self) -> Result<(), SimError> {
        for device in 0..self.devices.len() {
            if self.devices[device].dirty {
                self.devices[device].dirty = false;
                self.pump(device);
                self.audit(device)?;
            }
        }
        Ok(())
    }

    /// Gives the device what the queue lets it have now.
    fn pump(&mut self, device: usize) {
        loop {
            let slot = &mut self.devices[device];
            match slot.queue.next_request(self.now) {
                Pull::Issue(request) => {
                    let index = request.index();
                    if index >= slot.commands.len() {
                        slot.commands.resize(index + 1, None);
                    }
                    slot.commands[index] = Some(request);
                    let command = command_for(&slot.queue, request);
                    match slot.link {
                        Some(link) => {
                            let link_state = &mut self.links[link];
                            let ready = self.now + link_state.spec().command_latency;
                            let at = if command.op == Op::Write {
                                link_state.transfer(ready, command.size_bytes())
                            } else {
                                ready
                            };
                            self.events.push(at, Event::ReachDevice { device, request });
                        }
                        None => {
                            slot.model.submit(self.now, command);
                        }
                    }
                }
                Pull::Idle { until } | Pull::Plugged { until } => {
                    slot.wake_generation += 1;
                    let generation = slot.wake_generation;
                    self.events.push(until, Event::QueueWake { device, generation });
                    break;
                }
                Pull::Busy | Pull::Empty => break,
            }
        }
        self.reschedule_device(device);
    }

    /// Keeps exactly one live step event per device, at its model's next event.
    fn reschedule_device(&mut self, device: usize) {
        let slot = &mut self.devices[device];
        let next = slot.model.next_event();
        if next != slot.step_at {
            slot.step_generation += 1;
            slot.step_at = next;
            if let Some(at) = next {
                let generation = slot.step_generation;
                self.events.push(at.max(self.now), Event::DeviceStep { device, generation });
            }
        }
    }

    fn audit(&self, device: usize) -> Result<(), SimError> {
        if self.check {
            check_queue(&self.devices[device].queue)?;
        }
        Ok(())
    }

    fn stall(&self) -> SimError {
        let waiting: Vec<String> = self
            .issuers
            .iter()
            .filter(|slot| !slot.done)
            .map(|slot| {
                let state = if !slot.blocked.is_empty() {
                    "blocked on a full request pool"
                } else if slot.sleeping {
                    "asleep"
                } else {
                    "waiting"
                };
                format!("{} {state} with {} I/O outstanding", slot.issuer.name(), slot.outstanding)
            })
            .collect();
        SimError::Stalled { at: self.now, detail: waiting.join("; ") }
    }

    fn report(
        &self,
        config: &SimConfig,
        scheduler: &SchedulerSpec,
        workload: &WorkloadSpec,
        phases: Vec<elevator_report::Phase>,
    ) -> Run {
        let mut settings = BTreeMap::new();
        settings.insert("sim.seed".to_owned(), config.seed.to_string());
        for (key, value) in config.device.resolved() {
            settings.insert(format!("device.{key}"), value);
        }
        for (key, value) in scheduler.resolved() {
            settings.insert(format!("scheduler.{key}"), value.to_string());
        }
        for (key, value) in workload.resolved() {
            settings.insert(format!("workload.{key}"), value);
        }
        let mut scheduler_stats = SchedulerStats::default();
        let mut queue_stats = ReportQueueStats::default();
        let mut device_stats = ReportDeviceStats::default();
        let mut described = BTreeSet::new();
        for device in &self.devices {
            let queue = device.queue.config();
            settings.insert(
                format!("queue.{}.nr_requests", device.name),
                queue.nr_requests.to_string(),
            );
            settings.insert(format!("queue.{}.depth", device.name), queue.depth.to_string());
            settings.insert(
                format!("queue.{}.max_sectors_kb", device.name),
                queue.max_sectors_kb.to_string(),
            );
            settings.insert(
                format!("queue.{}.plugging", device.name),
                u8::from(queue.plugging).to_string(),
            );
            described.insert(format!("{}: {}", device.name, device.model.describe()));
            let stats = device.queue.stats(self.now);
            scheduler_stats.dispatched += stats.dispatched;
            scheduler_stats.merged += stats.back_merges + stats.front_merges + stats.requests_fused;
            scheduler_stats.idle_ns += stats.idle_ns;
            for counter in device.queue.scheduler().counters() {
                *scheduler_stats.counters.entry(counter.name.to_owned()).or_default() +=
                    counter.value;
            }
            queue_stats.bios += stats.bios;
            queue_stats.back_merges += stats.back_merges;
            queue_stats.front_merges += stats.front_merges;
            queue_stats.requests_fused += stats.requests_fused;
            queue_stats.requests_issued += stats.issued;
            queue_stats.blocked += stats.blocked;
            queue_stats.held += stats.held;
            queue_stats.plugs += stats.plugs;
            queue_stats.seek_distance_sectors += stats.seek_distance_sectors;
            let model = device.model.stats();
            device_stats.requests += model.commands;
            device_stats.busy_ns += model.busy_ns;
            device_stats.seek_distance_sectors += model.seek_distance_sectors;
            for (name, value) in model.extra {
                *device_stats.extra.entry(name.to_owned()).or_default() += value;
            }
        }
        for (index, description) in described.into_iter().enumerate() {
            settings.insert(format!("device.model.{index}"), description);
        }
        Run {
            mode: Mode::Sim,
            experiment: None,
            device: config.device.to_string(),
            workload: workload.to_string(),
            scheduler: scheduler.to_string(),
            config: settings,
            phases,
            scheduler_stats,
            queue_stats,
            device_stats,
        }
    }
}

fn command_for(queue: &BlockQueue, request: RequestId) -> Command {
    let r = queue.request(request).expect("an issued request lives until it completes");
    Command {
        id: CommandId(request.index() as u64),
        op: r.op,
        start: r.start,
        sector_count: r.sector_count,
        fua: r.flags.contains(RequestFlags::FUA),
    }
}
