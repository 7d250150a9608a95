//! A scripted world for scheduler tests: a clock, a device and issuers, driven through the real
//! [`BlockQueue`].
//!
//! [`Harness`] owns a queue with a scheduler attached, a simulated clock that only moves to the
//! next scripted event, and a device that takes up to `depth` requests and finishes each after a
//! service time you choose (fixed, or computed from the head position). Bios can be submitted
//! now or at a scripted time, and a closure can react to each completion by scheduling more
//! bios — a dependent reader with think time, a writer that keeps the queue full. Bios refused
//! because the request pool is full wait, as their process would, until the queue wakes it.
//!
//! After every step the harness audits the queue with
//! [`check_queue`](elevator_core::check::check_queue) and, at the end of a run, that every bio
//! completed exactly once. It records what the device was asked to do, so a test can state
//! what it proves in terms of issue order, seek distances and completion times.
//!
//! This is test support, public so that integration tests and benchmarks share it.

use std::collections::BTreeMap;

use elevator_core::check::check_queue;
use elevator_core::{
    Bio, BioTag, BlockQueue, Duration, Instant, IoPriority, Op, ProcessId, Pull, QueueConfig,
    Request, RequestFlags, RequestId, Scheduler, Sector, Submitted, Submitter,
};

/// How long the scripted device takes for a request, given where its head was.
pub type ServiceTime = Box<dyn FnMut(&Request, Sector) -> Duration>;

/// A reaction to a completed bio: more bios to submit, each at an absolute time.
pub type Follower = Box<dyn FnMut(&Done) -> Vec<(Instant, Bio)>>;

/// A read of `sector_count` sectors at `start` by process `process`, default priority.
pub fn read(process: u32, start: u64, sector_count: u32) -> Bio {
    Bio::read(ProcessId(process), Sector(start), sector_count, BioTag(0))
}

/// An asynchronous write of `sector_count` sectors at `start` by process `process`.
pub fn write(process: u32, start: u64, sector_count: u32) -> Bio {
    Bio::write(ProcessId(process), Sector(start), sector_count, BioTag(0))
}

/// A synchronous (O_DIRECT-style) write.
pub fn sync_write(process: u32, start: u64, sector_count: u32) -> Bio {
    write(process, start, sector_count).with_flags(RequestFlags::SYNC)
}

/// `bio` at `priority`.
pub fn with_priority(bio: Bio, priority: IoPriority) -> Bio {
    bio.with_priority(priority)
}

/// A device that takes `fixed` for every request.
pub fn fixed_service(fixed: Duration) -> ServiceTime {
    Box::new(move |_, _| fixed)
}

/// A crude disk: `base` per request plus `per_1k_sectors` for every 1024 sectors of head
/// movement, so that a scheduler's sorting shows in completion times.
pub fn seeking_service(base: Duration, per_1k_sectors: Duration) -> ServiceTime {
    Box::new(move |request, head| {
        let distance = head.distance(request.start);
        base + Duration::from_nanos(per_1k_sectors.as_nanos() * distance / 1024)
    })
}

/// A request the device was asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Issued {
    /// The request.
    pub id: RequestId,
    /// When the device took it.
    pub at: Instant,
    /// When it will finish.
    pub done_at: Instant,
    /// What it does.
    pub op: Op,
    /// First sector.
    pub start: u64,
    /// Sectors.
    pub sector_count: u32,
    /// The process whose bio created it.
    pub process: ProcessId,
    /// Whether it is synchronous.
    pub sync: bool,
}

/// A bio that completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    /// The tag the harness gave it.
    pub tag: BioTag,
    /// Its process.
    pub process: ProcessId,
    /// What it did.
    pub op: Op,
    /// Its first sector.
    pub start: u64,
    /// Its sectors.
    pub sector_count: u32,
    /// When it was submitted (first attempt, even if the pool blocked it).
    pub submitted: Instant,
    /// When it completed.
    pub completed: Instant,
}

impl Done {
    /// Submission to completion.
    pub fn latency(&self) -> Duration {
        self.completed - self.submitted
    }
}

/// The most events one run may take; hitting it is a test failure, not a silent stop.
pub const STEP_LIMIT: u64 = 20_000_000;

/// A queue, a scripted device and scripted issuers.
pub struct Harness {
    /// The queue with its submit side (splitting, parking, resubmitting).
    submitter: Submitter,
    now: Instant,
    service: ServiceTime,
    followers: Vec<Follower>,
    /// Scripted submissions by (time, order).
    arrivals: BTreeMap<(Instant, u64), Bio>,
    /// Requests at the device by (completion time, order).
    device: BTreeMap<(Instant, u64), RequestId>,
    /// Bios submitted and not yet completed: tag -> (bio, first submission time).
    pending: BTreeMap<BioTag, (Bio, Instant)>,
    wake: Option<Instant>,
    device_held: bool,
    head: Sector,
    order: u64,
    next_tag: u64,
    steps: u64,
    issued: Vec<Issued>,
    done: Vec<Done>,
    idle_answers: Vec<(Instant, Instant)>,
    checking: bool,
    bios_scratch: Vec<BioTag>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("now", &self.now)
            .field("scheduler", &self.submitter.queue().scheduler().name())
            .field("issued", &self.issued.len())
            .field("done", &self.done.len())
            .finish_non_exhaustive()
    }
}

impl Harness {
    /// A harness around `scheduler` with a device that takes 1 ms per request.
    pub fn new(scheduler: Box<dyn Scheduler>, config: QueueConfig) -> Harness {
        let queue = BlockQueue::new(config, scheduler).expect("valid queue config in a test");
        Harness {
            submitter: Submitter::new(queue),
            now: Instant::ZERO,
            service: fixed_service(Duration::from_millis(1)),
            followers: Vec::new(),
            arrivals: BTreeMap::new(),
            device: BTreeMap::new(),
            pending: BTreeMap::new(),
            wake: None,
            device_held: false,
            head: Sector(0),
            order: 0,
            next_tag: 1,
            steps: 0,
            issued: Vec::new(),
            done: Vec::new(),
            idle_answers: Vec::new(),
            checking: true,
            bios_scratch: Vec::new(),
        }
    }

    /// Replaces the device's service time.
    pub fn with_service(mut self, service: ServiceTime) -> Harness {
        self.service = service;
        self
    }

    /// Adds a reaction to completed bios.
    pub fn on_complete(&mut self, follower: impl FnMut(&Done) -> Vec<(Instant, Bio)> + 'static) {
        self.followers.push(Box::new(follower));
    }

    /// Turns the full invariant audit after every step off (for long benchmarks-like runs).
    pub fn set_checking(&mut self, checking: bool) {
        self.checking = checking;
    }

    /// Submits `bio` now (with a fresh tag). A bio refused by a full pool waits for its
    /// process to be woken and is then submitted again.
    pub fn submit(&mut self, mut bio: Bio) -> Submitted {
        bio.tag = BioTag(self.next_tag);
        self.next_tag += 1;
        self.pending.insert(bio.tag, (bio, self.now));
        let outcome = self.offer(bio);
        self.pump();
        outcome
    }

    /// Schedules `bio` for submission at `at` (not before now).
    pub fn submit_at(&mut self, at: Instant, bio: Bio) {
        assert!(at >= self.now, "cannot submit in the past");
        self.arrivals.insert((at, self.order), bio);
        self.order += 1;
    }

    /// `process` exits now (the scheduler is told; its later bios are still served).
    pub fn exit_process(&mut self, process: u32) {
        self.submitter.queue_mut().process_exited(self.now, ProcessId(process));
        self.pump();
    }

    /// Stops the device from taking requests (they pile up in the scheduler).
    pub fn hold_device(&mut self) {
        self.device_held = true;
    }

    /// Lets the device take requests again.
    pub fn release_device(&mut self) {
        self.device_held = false;
        self.pump();
    }

    /// Runs until nothing is left to do, then checks that every bio completed.
    pub fn run(&mut self) {
        self.run_until(Instant::MAX);
        assert!(
            self.pending.is_empty(),
            "{} bios never completed (first: {:?}); queue: {} queued, {} held, {} in flight",
            self.pending.len(),
            self.pending.values().next(),
            self.submitter.queue().queued(),
            self.submitter.queue().held_count(),
            self.submitter.queue().in_flight()
        );
    }

    /// Runs every event up to and including `limit`; the clock ends at the last event run.
    pub fn run_until(&mut self, limit: Instant) {
        self.pump();
        while let Some(next) = self.next_event_time() {
            if next > limit {
                break;
            }
            self.step_to(next);
        }
    }

    /// Moves the clock to `at` (not backwards) running every event on the way.
    pub fn advance_to(&mut self, at: Instant) {
        self.run_until(at);
        if self.now < at {
            self.now = at;
            self.pump();
        }
    }

    fn next_event_time(&self) -> Option<Instant> {
        let arrival = self.arrivals.keys().next().map(|&(at, _)| at);
        let completion = self.device.keys().next().map(|&(at, _)| at);
        [arrival, completion, self.wake].into_iter().flatten().min()
    }

    fn step_to(&mut self, at: Instant) {
        self.steps += 1;
        assert!(self.steps < STEP_LIMIT, "harness ran {STEP_LIMIT} steps without finishing");
        assert!(at >= self.now, "time went backwards");
        self.now = at;
        if self.wake.is_some_and(|wake| wake <= at) {
            self.wake = None;
        }
        while let Some((&(done_at, order), &id)) = self.device.iter().next() {
            if done_at > at {
                break;
            }
            self.device.remove(&(done_at, order));
            self.complete(id);
        }
        while let Some((&(arrive_at, order), &bio)) = self.arrivals.iter().next() {
            if arrive_at > at {
                break;
            }
            self.arrivals.remove(&(arrive_at, order));
            let mut bio = bio;
            bio.tag = BioTag(self.next_tag);
            self.next_tag += 1;
            self.pending.insert(bio.tag, (bio, self.now));
            self.offer(bio);
        }
        self.pump();
    }

    /// Submits a bio that already has its tag; the submitter parks it if its process waits.
    fn offer(&mut self, bio: Bio) -> Submitted {
        let offered = self.submitter.submit(self.now, bio).expect("harness bios are valid");
        self.audit();
        offered.into()
    }

    fn complete(&mut self, id: RequestId) {
        let mut tags = std::mem::take(&mut self.bios_scratch);
        tags.clear();
        self.submitter.queue_mut().complete(self.now, id, &mut tags);
        self.audit();
        for &tag in &tags {
            let (bio, submitted) =
                self.pending.remove(&tag).unwrap_or_else(|| panic!("{tag:?} completed twice"));
            let done = Done {
                tag,
                process: bio.process,
                op: bio.op,
                start: bio.start.0,
                sector_count: bio.sector_count,
                submitted,
                completed: self.now,
            };
            self.done.push(done);
            for follower in &mut self.followers {
                for (at, bio) in follower(&done) {
                    assert!(at >= self.now, "a follower scheduled a bio in the past");
                    self.arrivals.insert((at, self.order), bio);
                    self.order += 1;
                }
            }
        }
        self.bios_scratch = tags;
        let mut accepted = std::mem::take(&mut self.bios_scratch);
        accepted.clear();
        self.submitter.resubmit_woken(self.now, &mut accepted).expect("harness bios are valid");
        self.bios_scratch = accepted;
        self.audit();
    }

    /// Lets the device take whatever the queue gives it now.
    fn pump(&mut self) {
        if self.device_held {
            return;
        }
        self.wake = None;
        loop {
            match self.submitter.queue_mut().next_request(self.now) {
                Pull::Issue(id) => {
                    let request = self.submitter.queue().request(id).expect("issued request lives");
                    let service = (self.service)(request, self.head);
                    let done_at = self.now + service;
                    self.issued.push(Issued {
                        id,
                        at: self.now,
                        done_at,
                        op: request.op,
                        start: request.start.0,
                        sector_count: request.sector_count,
                        process: request.process,
                        sync: request.is_sync(),
                    });
                    self.head = request.end();
                    self.device.insert((done_at, self.order), id);
                    self.order += 1;
                }
                Pull::Idle { until } => {
                    self.idle_answers.push((self.now, until));
                    self.wake = Some(until);
                    break;
                }
                Pull::Plugged { until } => {
                    self.wake = Some(until);
                    break;
                }
                Pull::Busy | Pull::Empty => break,
            }
        }
        self.audit();
    }

    fn audit(&self) {
        if self.checking
            && let Err(violation) = check_queue(self.submitter.queue())
        {
            panic!(
                "at {:?} under {}: {violation}",
                self.now,
                self.submitter.queue().scheduler().name()
            );
        }
    }

    /// Submits `bios` while the device is held, so that dispatch sees them all at once, then
    /// runs to the end.
    pub fn queue_all(&mut self, bios: &[Bio]) {
        self.hold_device();
        for &bio in bios {
            self.submit(bio);
        }
        self.release_device();
        self.run();
    }

    /// A reader `process` that keeps two 8-sector reads queued just above the head, 16 sectors
    /// apart, from `start` until a completion after `stop`, so an upward sweep never runs dry.
    pub fn busy_reader_above(&mut self, process: u32, start: u64, stop: Instant) {
        // Both reads queue before the first dispatch, so a sweep's next request is set.
        self.hold_device();
        self.submit(read(process, start, 8));
        self.submit(read(process, start + 16, 8));
        self.release_device();
        let mut next_sector = start + 32;
        self.on_complete(move |done| {
            if done.process.0 != process || done.completed > stop {
                return Vec::new();
            }
            let bio = read(process, next_sector, 8);
            next_sector += 16;
            vec![(done.completed, bio)]
        });
    }

    /// The scheduler's counter `name` (panics if it has none of that name).
    pub fn counter(&self, name: &str) -> u64 {
        let counters = self.queue().scheduler().counters();
        let counter = counters.iter().find(|counter| counter.name == name);
        counter.unwrap_or_else(|| panic!("no counter `{name}` in {counters:?}")).value
    }

    /// The current time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The queue, for its counters and state.
    pub fn queue(&self) -> &BlockQueue {
        self.submitter.queue()
    }

    /// The queue, to switch schedulers or change tunables mid-run.
    pub fn queue_mut(&mut self) -> &mut BlockQueue {
        self.submitter.queue_mut()
    }

    /// Switches the scheduler now and lets the device go on.
    pub fn switch_scheduler(&mut self, scheduler: Box<dyn Scheduler>) {
        self.submitter.queue_mut().switch_scheduler(self.now, scheduler);
        self.audit();
        self.pump();
    }

    /// Every request the device took, in order.
    pub fn issued(&self) -> &[Issued] {
        &self.issued
    }

    /// Start sectors of the requests the device took, in order.
    pub fn issued_starts(&self) -> Vec<u64> {
        self.issued.iter().map(|issued| issued.start).collect()
    }

    /// (start, sectors) of the requests the device took, in order.
    pub fn issued_extents(&self) -> Vec<(u64, u32)> {
        self.issued.iter().map(|issued| (issued.start, issued.sector_count)).collect()
    }

    /// Every completed bio, in completion order.
    pub fn done(&self) -> &[Done] {
        &self.done
    }

    /// How many bios completed.
    pub fn completed_bios(&self) -> usize {
        self.done.len()
    }

    /// Bios submitted and not completed.
    pub fn pending_bios(&self) -> usize {
        self.pending.len()
    }

    /// Every `Idle` answer: (when it was given, until).
    pub fn idle_answers(&self) -> &[(Instant, Instant)] {
        &self.idle_answers
    }

    /// Head movements between consecutive issued requests longer than `threshold` sectors.
    pub fn long_seeks(&self, threshold: u64) -> usize {
        self.issued
            .windows(2)
            .filter(|pair| {
                let end = pair[0].start + u64::from(pair[0].sector_count);
                end.abs_diff(pair[1].start) > threshold
            })
            .count()
    }

    /// Device time spent on requests created by `process` (issue to completion, summed).
    /// Meaningful as a share of the device at depth 1.
    pub fn device_time(&self, process: u32) -> Duration {
        self.issued
            .iter()
            .filter(|issued| issued.process.0 == process)
            .fold(Duration::ZERO, |total, issued| total + (issued.done_at - issued.at))
    }

    /// Bytes completed for `process`.
    pub fn completed_bytes(&self, process: u32) -> u64 {
        self.done
            .iter()
            .filter(|done| done.process.0 == process)
            .map(|done| u64::from(done.sector_count) * elevator_core::SECTOR_SIZE_BYTES)
            .sum()
    }

    /// Sectors the head moved over all issued requests (from sector 0).
    pub fn seek_distance_sectors(&self) -> u64 {
        let mut head = 0u64;
        let mut total = 0;
        for issued in &self.issued {
            total += head.abs_diff(issued.start);
            head = issued.start + u64::from(issued.sector_count);
        }
        total
    }
}

/// A scheduler wrapper that checks the block layer's side of the contract: every hook names a
/// request this scheduler was given (inserted and not yet handed back), and `activate`,
/// `deactivate` and `complete` only name requests it dispatched. It panics on the first call
/// that breaks this, naming the hook.
#[derive(Debug)]
pub struct Spy {
    inner: Box<dyn Scheduler>,
    /// Requests inserted and not yet dispatched, drained or fused away.
    held: std::collections::BTreeSet<RequestId>,
    /// Requests dispatched and not yet completed.
    dispatched: std::collections::BTreeSet<RequestId>,
    /// Hook calls seen, for tests that want to know the spy saw traffic.
    pub calls: u64,
}

impl Spy {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn Scheduler>) -> Spy {
        Spy { inner, held: Default::default(), dispatched: Default::default(), calls: 0 }
    }

    fn expect_held(&self, hook: &str, id: RequestId) {
        assert!(
            self.held.contains(&id),
            "{}: {hook} for {id:?}, which it does not hold",
            self.inner.name()
        );
    }
}

impl Scheduler for Spy {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn insert(&mut self, cx: &elevator_core::Ctx<'_>, id: RequestId) {
        self.calls += 1;
        assert!(self.held.insert(id), "{}: {id:?} inserted twice", self.inner.name());
        self.inner.insert(cx, id);
    }

    fn dispatch(&mut self, cx: &elevator_core::Ctx<'_>) -> elevator_core::Dispatch {
        self.calls += 1;
        let decision = self.inner.dispatch(cx);
        if let elevator_core::Dispatch::Issue(id) = decision {
            self.expect_held("dispatch", id);
            self.held.remove(&id);
            self.dispatched.insert(id);
        }
        decision
    }

    fn drain(&mut self, cx: &elevator_core::Ctx<'_>, out: &mut Vec<RequestId>) {
        self.calls += 1;
        let first = out.len();
        self.inner.drain(cx, out);
        for &id in &out[first..] {
            self.expect_held("drain", id);
            self.held.remove(&id);
            // Drained for a flush, a request is dispatched; for a switch, the next scheduler
            // takes it and this one never hears of it again.
            self.dispatched.insert(id);
        }
    }

    fn queued(&self) -> usize {
        self.inner.queued()
    }

    fn dispatch_insert(&self) -> elevator_core::DispatchInsert {
        self.inner.dispatch_insert()
    }

    fn merge_lookups(&self) -> elevator_core::MergeLookups {
        self.inner.merge_lookups()
    }

    fn allow_merge(&self, cx: &elevator_core::Ctx<'_>, target: RequestId, bio: &Bio) -> bool {
        self.expect_held("allow_merge", target);
        self.inner.allow_merge(cx, target, bio)
    }

    fn allow_front_lookup(
        &self,
        cx: &elevator_core::Ctx<'_>,
        target: RequestId,
        bio: &Bio,
    ) -> bool {
        self.expect_held("allow_front_lookup", target);
        self.inner.allow_front_lookup(cx, target, bio)
    }

    fn merged(
        &mut self,
        cx: &elevator_core::Ctx<'_>,
        target: RequestId,
        kind: elevator_core::MergeKind,
    ) {
        self.calls += 1;
        self.expect_held("merged", target);
        self.inner.merged(cx, target, kind);
    }

    fn merge_neighbour(
        &self,
        cx: &elevator_core::Ctx<'_>,
        id: RequestId,
        kind: elevator_core::MergeKind,
    ) -> Option<RequestId> {
        self.expect_held("merge_neighbour", id);
        let neighbour = self.inner.merge_neighbour(cx, id, kind);
        if let Some(neighbour) = neighbour {
            self.expect_held("merge_neighbour's answer", neighbour);
        }
        neighbour
    }

    fn requests_merged(
        &mut self,
        cx: &elevator_core::Ctx<'_>,
        kept: RequestId,
        absorbed: RequestId,
    ) {
        self.calls += 1;
        self.expect_held("requests_merged (kept)", kept);
        self.expect_held("requests_merged (absorbed)", absorbed);
        self.held.remove(&absorbed);
        self.inner.requests_merged(cx, kept, absorbed);
    }

    fn may_queue(
        &self,
        cx: &elevator_core::Ctx<'_>,
        process: ProcessId,
        op: Op,
    ) -> elevator_core::MayQueue {
        self.inner.may_queue(cx, process, op)
    }

    fn activate(&mut self, cx: &elevator_core::Ctx<'_>, id: RequestId) {
        self.calls += 1;
        assert!(
            self.dispatched.contains(&id),
            "{}: activate for {id:?}, which it never dispatched",
            self.inner.name()
        );
        self.inner.activate(cx, id);
    }

    fn deactivate(&mut self, cx: &elevator_core::Ctx<'_>, id: RequestId) {
        self.calls += 1;
        assert!(
            self.dispatched.contains(&id),
            "{}: deactivate for {id:?}, which it never dispatched",
            self.inner.name()
        );
        self.inner.deactivate(cx, id);
    }

    fn complete(&mut self, cx: &elevator_core::Ctx<'_>, done: &elevator_core::Completion) {
        self.calls += 1;
        assert!(
            self.dispatched.remove(&done.id),
            "{}: complete for {:?}, which it never dispatched (or completed already)",
            self.inner.name(),
            done.id
        );
        self.inner.complete(cx, done);
    }

    fn process_exited(&mut self, cx: &elevator_core::Ctx<'_>, process: ProcessId) {
        self.inner.process_exited(cx, process);
    }

    fn tunables(&self) -> &'static [elevator_core::TunableSpec] {
        self.inner.tunables()
    }

    fn tunable(&self, name: &str) -> Result<i64, elevator_core::TunableError> {
        self.inner.tunable(name)
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), elevator_core::TunableError> {
        self.inner.set_tunable(name, value)
    }

    fn counters(&self) -> Vec<elevator_core::Counter> {
        self.inner.counters()
    }
}
