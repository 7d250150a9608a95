//! The CPU side of a Linux 6.x blk-mq host: every direct I/O's submission and completion
//! run as work items on the host's cores, with the scheduler's locks between them
//! (blk-mq-host.md §1, §2, §3, §5, §6; issue 18).
//!
//! The runner engages this model when the run's scheduler is one of the blk-mq set (`none`,
//! `mq-deadline`, `kyber`, `bfq`): those exist only on a blk-mq kernel. The 2.6 host's
//! charges ([`cpu`](super::cpu)) keep serving buffered I/O and legacy schedulers.
//!
//! # Threads and cores
//!
//! [`Cores`] has `cpus` cores (the host key). Each issuer of a phase is an application
//! thread pinned to one core: the lowest of its allowed cores that has the fewest
//! application threads so far (an even spread, as the kernel's load balancing would reach
//! with busy threads). Each core has a kblockd worker (a kernel thread, nice −20) and an
//! interrupt context. A thread runs one item at a time; an issuer cannot submit its next I/O
//! before its submission call returned (its last submission item ended): that is how a core
//! limits IOPS.
//!
//! # The path of one I/O (spec §2, per-step costs from `docs/blk-mq-costs.md` §5)
//!
//! On the issuer's thread, in order:
//!
//! 1. **user**: the application's own work per I/O and its reap of the CQE (rows 15–16).
//! 2. **submit** (system time): the system call (÷ the issuer's submission batch), SQE prep,
//!    page pinning (a registered buffer's lookup instead), bio allocation, submit checks,
//!    tag and request init (rows 1–7). With `none` the request is issued directly: driver
//!    prep and the doorbell (÷ batch, rows 8–9) in the same item, and the bios reach the
//!    device queue when it ends. With a scheduler, half the elevator framework's cost (S-F,
//!    the insert half), then:
//! 3. **locked hooks**: mq-deadline and bfq take their device-wide lock for the bio-merge
//!    attempt and for the insert (spec §3.1), each a [`SpinLock`] acquisition whose hold is
//!    the scheduler's own cost (S-A, split between its hooks) — waiting is spinning on the
//!    core; kyber's insert takes a per-CPU lock no other core wants (not modelled as a
//!    lock).
//! 4. **dispatch**: unplugged (a submission batch of ≤ 2, spec §2.2 and §5: fio's default),
//!    the hardware queue runs on the core's kblockd worker: the punt (K: wake-up and two
//!    switches), the framework's dispatch half, the dispatch hook (under the device lock for
//!    mq-deadline and bfq, the hardware context's lock for kyber), driver prep and doorbell.
//!    Plugged (batch > 2), the same dispatch runs on the issuer's thread before its call
//!    returns. The bios reach the block queue when the dispatch's last step ends.
//!
//! At completion:
//!
//! 5. **interrupt** on the core the queue's vector is affine to (the issuer's own core when
//!    the device has a queue per core; the first core of the group sharing a queue
//!    otherwise): entry and exit once per interrupt — a completion that finds the core's
//!    handler already running or waiting is drained by it (spec §2.10) — plus per CQE the
//!    fetch; the end of the request runs inline (per-core or grouped queues) or in a
//!    `BLOCK_SOFTIRQ` on that core (one queue, spec §2.10). bfq's `finish` takes its lock
//!    in that context.
//! 6. **task_work** on the issuer's thread: the CQE is posted (row 14); the issuer sees the
//!    completion when this item ends.
//!
//! A request's steps on another thread wait for the step that hands them over: kblockd's run
//! is planned when the insert ends, task_work when the interrupt side has ended the request.
//!
//! Per request the report sums, disjointly: `user`, `submit` (from the call to the block
//! queue, waits taken out), `lock_wait` (spinning), `core_wait` (an item ready but its core
//! busy with another thread's), `sched_queue` (in the block queue until dispatched), `device`
//! (from dispatch to the device's completion), `completion` (from the device until the
//! interrupt side — interrupt, softirq, bfq's finish — hands the CQE to task_work; a polled
//! completion's whole reap) and `task_work` (from that hand-off until the issuer sees the
//! CQE), waits taken out.
//!
//! # Locks (spec §3)
//!
//! mq-deadline's `dd->lock` and bfq's `bfqd->lock`, one per device; kyber's `khd->lock`, one
//! per hardware queue; `none` none. Contention follows [`SpinLock`]'s model with the host's
//! `mq_lock_handoff` (δ0) and `mq_lock_growth` (α).
//!
//! # Deviations from Linux
//!
//! * With a scheduler, the request reaches our block queue (whose scheduler instance chooses
//!   what the device gets) when its own dispatch work has run — on kblockd or inline — not
//!   when its insert ended: the CPU path of insert and dispatch is charged per request in
//!   order, and the scheduler's choice applies among the requests whose path is done and that
//!   wait for the device. In the kernel the insert puts the request in the scheduler at once
//!   and a dispatch run then takes whichever request the scheduler picks; a run absorbed by a
//!   waiting one (see 4.) dispatches for several requests.
//! * Every request takes its own insert acquisition; the kernel inserts a plugged batch
//!   under one acquisition (one per plug-flush group).
//! * Polled completions (`hipri`) skip the interrupt and complete on the submitting thread,
//!   but the thread's spinning while it waits is not charged (its core stays free for others
//!   between completions; the kernel's poller keeps it 100 % busy, spec §2.10).
//! * SQ polling (`sqthread_poll`) drops the system call; the SQ thread's own submission work
//!   is charged to the issuer's thread, not to a thread of its own on `sqthread_poll_cpu`.
//! * No io-wq workers (tag exhaustion parks the bio instead, as the 2.6 host does) and no IPIs:
//!   caches are taken as shared between all cores (`rq_affinity=1` then completes in the
//!   interrupt).
//! * A run of a one-queue device's kblockd is on the submitting core (the spec's "normally the
//!   local CPU"); several queues per core group round-robin every 8 runs is not modelled.
//! * One interrupt thread per core; interrupts wait for the running item (no preemption,
//!   see [`cores`](super::cores)).
//! * A thread stays on its core; no migration.
//! * Scheduler tags: mq-deadline and kyber get the kernel's one pool of 2 × min(depth, 128)
//!   scheduler tags for both directions (modern-schedulers.md §1.3, modern-vs-kernel.md row 8;
//!   `elevator_core::BlkMqQueue`), one per device where the kernel has one per hardware queue.
//!   bfq, whose `limit_depth` is not modelled, and `none` (whose requests are the driver's
//!   tags in the kernel) keep the 2.6 request pool (`nr_requests` per direction, congestion
//!   and batching).
//! * The block queue under a blk-mq scheduler follows blk-mq's rules of when the scheduler is
//!   asked, of flushes and of overlapping I/O, at the host's `mq_hz`
//!   (`elevator_core::BlkMqQueue`).

use std::collections::VecDeque;

use elevator_core::{Duration, Instant};
use elevator_report::{CoreCpu, HostCpu, LockCpu, ThreadCpu};
use elevator_sched::SchedulerKind;

use super::cores::{Acquire, Context, Cores, Handoff, SpinLock, ThreadId, ThreadKind};
use super::spec::HostSpec;

/// A spinning item's length until its grant reshapes it: longer than any run.
const SPINNING: Duration = Duration::from_nanos(u64::MAX / 4);

/// Our schedulers' own cost per request (insert + dispatch + complete, 128 queued), measured
/// on this project's VM (`docs/blk-mq-costs.md` §4.2, medians of three criterion sittings),
/// in nanoseconds at its 2.6 GHz.
const MEASURED_ALGORITHM_NS: [(&str, u64); 4] =
    [("none", 36), ("kyber", 56), ("mq-deadline", 243), ("bfq", 414)];

/// The clock ratio from that VM to the spec's reference core (2.6 / 5.0 GHz,
/// `docs/blk-mq-costs.md` §5, [U] same instructions per cycle).
const CLOCK_RATIO: f64 = 0.52;

/// Which blk-mq scheduler runs, as far as its CPU and locks go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MqScheduler {
    None,
    MqDeadline,
    Kyber,
    Bfq,
}

impl MqScheduler {
    fn of(kind: SchedulerKind) -> Option<MqScheduler> {
        match kind.name() {
            "none" => Some(MqScheduler::None),
            "mq-deadline" => Some(MqScheduler::MqDeadline),
            "kyber" => Some(MqScheduler::Kyber),
            "bfq" => Some(MqScheduler::Bfq),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            MqScheduler::None => "none",
            MqScheduler::MqDeadline => "mq-deadline",
            MqScheduler::Kyber => "kyber",
            MqScheduler::Bfq => "bfq",
        }
    }

    /// Its algorithm's cost per request on the reference core (S-A of `blk-mq-costs.md` §5).
    fn algorithm(self) -> Duration {
        let measured = MEASURED_ALGORITHM_NS
            .iter()
            .find(|(name, _)| *name == self.name())
            .map_or(0, |&(_, ns)| ns);
        Duration::from_nanos((measured as f64 * CLOCK_RATIO).round() as u64)
    }

    /// Whether one lock serves the whole device (`QUEUE_FLAG_SQ_SCHED` schedulers).
    fn device_lock(self) -> bool {
        matches!(self, MqScheduler::MqDeadline | MqScheduler::Bfq)
    }
}

/// The per-step costs of a host (its `mq_*` keys).
#[derive(Clone, Copy, Debug)]
struct Costs {
    user: Duration,
    syscall: Duration,
    submit: Duration,
    pin: Duration,
    pin_fixed: Duration,
    merge: Duration,
    driver: Duration,
    doorbell: Duration,
    irq: Duration,
    cqe: Duration,
    end_request: Duration,
    softirq: Duration,
    task_work: Duration,
    framework: Duration,
    kblockd: Duration,
    bfq_surplus: Duration,
}

impl Costs {
    fn of(spec: &HostSpec) -> Costs {
        let time = |key| spec.params.time(key);
        Costs {
            user: time("mq_user"),
            syscall: time("mq_syscall"),
            submit: time("mq_submit"),
            pin: time("mq_pin"),
            pin_fixed: time("mq_pin_fixed"),
            merge: time("mq_merge"),
            driver: time("mq_driver"),
            doorbell: time("mq_doorbell"),
            irq: time("mq_irq"),
            cqe: time("mq_cqe"),
            end_request: time("mq_end_request"),
            softirq: time("mq_softirq"),
            task_work: time("mq_task_work"),
            framework: time("mq_framework"),
            kblockd: time("mq_kblockd"),
            bfq_surplus: time("mq_bfq_surplus"),
        }
    }
}

/// How an issuer's thread submits (from its workload).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Submitter {
    /// The cores it may run on; empty: any.
    pub(crate) cpus_allowed: Vec<u32>,
    /// I/Os per submission call (≥ 1).
    pub(crate) batch: u32,
    /// Registered buffers: no page pinning per I/O.
    pub(crate) fixed_buffers: bool,
    /// Polled completions (`hipri`): no interrupt; the thread completes its own I/O.
    pub(crate) polled: bool,
    /// An SQ polling thread submits: no system call per batch.
    pub(crate) sq_poll: bool,
}

/// What the runner does when an item ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// The bios of the runner's pending entry `tag` reach their device's queue.
    Insert {
        /// The pending entry.
        tag: usize,
    },
    /// The issuer's submission call returned: it may poll again.
    Resume {
        /// The issuer (index in the phase).
        issuer: usize,
    },
    /// The completion of pending entry `tag` is posted to its issuer.
    Deliver {
        /// The pending entry.
        tag: usize,
    },
}

/// One work item's plan: what it does when it starts and ends.
#[derive(Clone, Copy, Debug)]
struct Step {
    /// The lock it takes as it starts (index into `locks`), held for its duration.
    lock: Option<u32>,
    context: Context,
    duration: Duration,
    /// User time before it (the issuer's own work, then this system call), one item.
    user: Duration,
    then: [Option<Action>; 2],
    /// A kblockd run's wake-up: while it waits to start, later punts join it.
    punt: bool,
    /// The request (runner's pending tag) it works for, [`NO_REQUEST`] for none.
    request: u32,
    /// When it ends, the request's steps waiting on other threads are planned (the insert
    /// hands the request to kblockd's run; the interrupt hands the CQE to task_work).
    hands_off: bool,
    /// When it was planned (its thread's earlier items aside, it could run from then).
    planned: Instant,
}

/// [`Step::request`] of work for no request.
const NO_REQUEST: u32 = u32::MAX;

impl Step {
    fn plain(context: Context, duration: Duration) -> Step {
        Step {
            lock: None,
            context,
            duration,
            user: Duration::ZERO,
            then: [None, None],
            punt: false,
            request: NO_REQUEST,
            hands_off: false,
            planned: Instant::ZERO,
        }
    }

    fn locked(lock: usize, context: Context, hold: Duration) -> Step {
        Step {
            lock: Some(u32::try_from(lock).expect("fewer than 2^32 locks")),
            context,
            duration: hold,
            user: Duration::ZERO,
            then: [None, None],
            punt: false,
            request: NO_REQUEST,
            hands_off: false,
            planned: Instant::ZERO,
        }
    }

    fn handing_off(mut self) -> Step {
        self.hands_off = true;
        self
    }

    fn after_user(mut self, user: Duration) -> Step {
        self.user = user;
        self
    }

    fn then(mut self, action: Action) -> Step {
        let slot = self.then.iter_mut().find(|slot| slot.is_none()).expect("two actions at most");
        *slot = Some(action);
        self
    }
}

/// A thread of the model, for reports.
#[derive(Clone, Debug)]
struct ThreadInfo {
    id: ThreadId,
    name: String,
    kind: &'static str,
    /// Work done on other threads for this thread's I/O (kblockd, interrupts), planned.
    attributed_ns: u64,
}

/// Per-request times, summed (spec §6.4 "per request").
#[derive(Clone, Copy, Debug, Default)]
struct PathTimes {
    requests: u64,
    user_ns: u64,
    submit_ns: u64,
    lock_wait_ns: u64,
    core_wait_ns: u64,
    sched_queue_ns: u64,
    device_ns: u64,
    completion_ns: u64,
    task_work_ns: u64,
}

/// One I/O in flight through the path.
#[derive(Clone, Copy, Debug, Default)]
struct InFlight {
    submitted: Instant,
    inserted: Instant,
    completed: Instant,
    /// When its interrupt side (interrupt, softirq, bfq's finish) ended and handed the CQE to
    /// task_work; `None` while it has not, or when it completes by polling.
    interrupt_done: Option<Instant>,
    /// Waits of its items for their cores and locks: [before it reached the queue, on the
    /// interrupt side after the device finished it, in task_work].
    core_wait_ns: [u64; 3],
    lock_wait_ns: [u64; 3],
    /// Whether it reached the queue (its waits count on the completion side from then).
    reached_queue: bool,
    /// Its issuer's thread, which work done elsewhere for it is attributed to.
    owner: Option<ThreadId>,
    /// Time its (last) request spent at the device, from dispatch to completion.
    device_ns: u64,
}

impl InFlight {
    fn side(&self) -> usize {
        match (self.reached_queue, self.interrupt_done) {
            (false, _) => 0,
            (true, None) => 1,
            (true, Some(_)) => 2,
        }
    }
}

/// The blk-mq host's cores, locks and path (see the module doc).
#[derive(Debug)]
pub(crate) struct BlkMq {
    cores: Cores,
    costs: Costs,
    /// [`BlkMq::holds`], worked out once.
    holds: (Duration, Duration, Duration),
    scheduler: MqScheduler,
    /// Hardware queues per device.
    hw_queues: Vec<u32>,
    /// Index of each device's first lock in `locks` (mq-deadline and bfq: its one lock;
    /// kyber: one per hardware queue).
    lock_base: Vec<usize>,
    locks: Vec<SpinLock>,
    lock_names: Vec<String>,
    kblockd: Vec<ThreadId>,
    irq: Vec<ThreadId>,
    /// Items planned per thread, in order, by thread index.
    plans: Vec<VecDeque<Step>>,
    /// Items of each core's interrupt thread planned and not ended.
    irq_in_flight: Vec<u32>,
    /// Whether each core's kblockd has a hardware-queue run queued and not started.
    kblockd_pending: Vec<bool>,
    threads: Vec<ThreadInfo>,
    /// The current phase's issuers: their thread and how they submit.
    issuers: Vec<(ThreadId, Submitter)>,
    /// Application threads placed per core (for the spread).
    placed: Vec<u32>,
    /// I/Os in flight by the runner's pending tag.
    in_flight: Vec<InFlight>,
    path: PathTimes,
    /// When each thread's latest item ended, by thread index.
    thread_free_at: Vec<Instant>,
    /// The request the items being planned work for.
    planning_for: u32,
    /// Steps of each request (by tag) waiting for a step on another thread to hand off:
    /// (thread, step), planned in order when it does. The vectors are reused.
    deferred: Vec<Vec<(ThreadId, Step)>>,
    /// Item ends the runner must turn into events: (instant, core).
    timers: Vec<(Instant, usize)>,
    /// Actions of ended items, for the runner.
    actions: Vec<Action>,
}

impl BlkMq {
    /// The model for a host `spec` running `scheduler`, with devices of `hw_queues` queues
    /// each; `None` when the scheduler is not a blk-mq one.
    pub(crate) fn new(
        spec: &HostSpec,
        scheduler: SchedulerKind,
        devices: &[(String, u32)],
    ) -> Option<BlkMq> {
        let scheduler = MqScheduler::of(scheduler)?;
        let cpus = spec.params.integer("cpus") as usize;
        let handoff =
            Handoff::new(spec.params.time("mq_lock_handoff"), spec.params.float("mq_lock_growth"))
                .expect("the key's range is finite and non-negative");
        let mut cores = Cores::new(cpus);
        let mut threads = Vec::new();
        let mut kblockd = Vec::with_capacity(cpus);
        let mut irq = Vec::with_capacity(cpus);
        for core in 0..cpus {
            let id = cores.add_thread(core, ThreadKind::Kernel);
            threads.push(ThreadInfo {
                id,
                name: format!("kworker/{core}:1H"),
                kind: "kworker",
                attributed_ns: 0,
            });
            kblockd.push(id);
            let id = cores.add_thread(core, ThreadKind::Kernel);
            threads.push(ThreadInfo {
                id,
                name: format!("irq/{core}"),
                kind: "irq",
                attributed_ns: 0,
            });
            irq.push(id);
        }
        let mut lock_base = Vec::with_capacity(devices.len());
        let mut locks = Vec::new();
        let mut lock_names = Vec::new();
        for (name, queues) in devices {
            lock_base.push(locks.len());
            match scheduler {
                MqScheduler::MqDeadline | MqScheduler::Bfq => {
                    let lock =
                        if scheduler == MqScheduler::Bfq { "bfqd->lock" } else { "dd->lock" };
                    locks.push(SpinLock::new(handoff));
                    lock_names.push(format!("{} {lock} {name}", scheduler.name()));
                }
                MqScheduler::Kyber => {
                    for hctx in 0..*queues {
                        locks.push(SpinLock::new(handoff));
                        lock_names.push(format!("kyber khd->lock {name} hctx{hctx}"));
                    }
                }
                MqScheduler::None => {}
            }
        }
        let plans = (0..threads.len()).map(|_| VecDeque::new()).collect();
        let threads_len = threads.len();
        let costs = Costs::of(spec);
        Some(BlkMq {
            cores,
            holds: BlkMq::holds_of(scheduler, &costs),
            costs,
            scheduler,
            hw_queues: devices.iter().map(|(_, queues)| (*queues).max(1)).collect(),
            lock_base,
            locks,
            lock_names,
            kblockd,
            irq,
            plans,
            irq_in_flight: vec![0; cpus],
            kblockd_pending: vec![false; cpus],
            threads,
            issuers: Vec::new(),
            placed: vec![0; cpus],
            in_flight: Vec::new(),
            path: PathTimes::default(),
            thread_free_at: vec![Instant::ZERO; threads_len],
            planning_for: NO_REQUEST,
            deferred: Vec::new(),
            timers: Vec::new(),
            actions: Vec::new(),
        })
    }

    /// How many cores.
    pub(crate) fn cores(&self) -> usize {
        self.cores.len()
    }

    /// A phase starts with these issuers (name, how it submits), each a new application
    /// thread. Returns the first core an issuer asks for that the host lacks.
    pub(crate) fn start_phase(
        &mut self,
        issuers: &[(String, Submitter)],
    ) -> Result<(), (usize, u32)> {
        self.issuers.clear();
        let cores = self.cores.len();
        for (index, (name, submitter)) in issuers.iter().enumerate() {
            if let Some(&missing) =
                submitter.cpus_allowed.iter().find(|&&cpu| cpu as usize >= cores)
            {
                return Err((index, missing));
            }
            let allowed = |core: usize| {
                submitter.cpus_allowed.is_empty() || submitter.cpus_allowed.contains(&(core as u32))
            };
            let core = (0..cores)
                .filter(|&core| allowed(core))
                .min_by_key(|&core| (self.placed[core], core))
                .expect("an allowed core exists: checked above");
            self.placed[core] += 1;
            let id = self.cores.add_thread(core, ThreadKind::Application);
            self.threads.push(ThreadInfo {
                id,
                name: name.clone(),
                kind: "application",
                attributed_ns: 0,
            });
            self.plans.push(VecDeque::new());
            self.thread_free_at.push(Instant::ZERO);
            let mut submitter = submitter.clone();
            submitter.batch = submitter.batch.max(1);
            self.issuers.push((id, submitter));
        }
        Ok(())
    }

    /// The core `issuer`'s thread is pinned to: the CPU its bios are submitted from, whose
    /// software queue their requests join ([`elevator_core::Bio::cpu`]; kyber stages per CPU).
    pub(crate) fn issuer_core(&self, issuer: usize) -> u16 {
        // Cores are numbered from a `u32` host key far below 65 536.
        u16::try_from(self.cores.core_of(self.issuers[issuer].0)).unwrap_or(u16::MAX)
    }

    /// CPU time of `issuer`'s thread so far: (user, system) nanoseconds.
    pub(crate) fn issuer_cpu_ns(&self, issuer: usize) -> (u64, u64) {
        let times = self.cores.thread_times(self.issuers[issuer].0);
        (times.get(Context::User), times.total_ns() - times.get(Context::User))
    }

    /// Issuer `issuer` submits at `now` the I/O whose bios are the runner's pending entry
    /// `tag`, to `device`: its submission items go on its thread (see the module doc).
    pub(crate) fn submit(&mut self, now: Instant, issuer: usize, device: usize, tag: usize) {
        if self.in_flight.len() <= tag {
            self.in_flight.resize(tag + 1, InFlight::default());
            self.deferred.resize_with(tag + 1, Vec::new);
        }
        let owner = Some(self.issuers[issuer].0);
        self.in_flight[tag] = InFlight { submitted: now, owner, ..InFlight::default() };
        self.planning_for = u32::try_from(tag).expect("fewer than 2^32 pending entries");
        self.submit_steps(now, issuer, device, tag);
        self.planning_for = NO_REQUEST;
    }

    fn submit_steps(&mut self, now: Instant, issuer: usize, device: usize, tag: usize) {
        let (thread, submitter) = &self.issuers[issuer];
        let (thread, batch, fixed) = (*thread, submitter.batch, submitter.fixed_buffers);
        let syscall = if submitter.sq_poll { Duration::ZERO } else { self.costs.syscall };
        let core = self.cores.core_of(thread);
        let costs = self.costs;
        let per_call = |cost: Duration| Duration::from_nanos(cost.as_nanos() / u64::from(batch));
        let pin = if fixed { costs.pin_fixed } else { costs.pin };
        let entry = per_call(syscall) + costs.submit + pin;
        let issue = costs.driver + per_call(costs.doorbell);
        if self.scheduler == MqScheduler::None {
            // Direct issue from the submitting thread (spec §2.6).
            let step = Step::plain(Context::Sys, entry + costs.merge + issue)
                .after_user(costs.user)
                .then(Action::Insert { tag })
                .then(Action::Resume { issuer });
            self.plan(now, thread, step);
            return;
        }
        let (merge_hold, insert_hold, dispatch_hold) = self.holds();
        let half_framework = Duration::from_nanos(costs.framework.as_nanos() / 2);
        let hctx = self.hctx(device, core);
        let device_lock = self.scheduler.device_lock().then(|| self.lock_base[device]);
        // Unplugged (a batch of at most 2 SQEs, spec §2.2): the hardware queue runs on
        // kblockd (§2.6, §5) and the call returns after the insert; plugged, the flush
        // dispatches in the submitting thread before it returns (§2.5).
        let punted = batch <= 2;
        let insert = match device_lock {
            Some(lock) => {
                let step = Step::plain(Context::Sys, entry + half_framework).after_user(costs.user);
                self.plan(now, thread, step);
                self.plan(now, thread, Step::locked(lock, Context::Sys, merge_hold));
                Step::locked(lock, Context::Sys, insert_hold)
            }
            // kyber: merge and insert under a per-CPU lock no other core takes.
            None => Step::plain(Context::Sys, entry + half_framework + merge_hold + insert_hold)
                .after_user(costs.user),
        };
        let dispatch_lock = device_lock.unwrap_or(self.lock_base[device] + hctx);
        // The request reaches the block queue (and the device, when it is free) once its
        // dispatch's work has run (see the deviations).
        let last = Step::plain(Context::Sys, costs.driver + per_call(costs.doorbell))
            .then(Action::Insert { tag });
        let dispatch = Step::locked(dispatch_lock, Context::Sys, dispatch_hold);
        if punted {
            // The call returns after the insert, which hands the request to kblockd's run.
            self.plan(now, thread, insert.then(Action::Resume { issuer }).handing_off());
            let kblockd = self.kblockd[core];
            let wake = Step::plain(Context::Sys, costs.kblockd + half_framework);
            self.defer(kblockd, Step { punt: true, ..wake });
            self.defer(kblockd, dispatch);
            self.defer(kblockd, last);
        } else {
            self.plan(now, thread, insert);
            self.plan(now, thread, Step::plain(Context::Sys, half_framework));
            self.plan(now, thread, dispatch);
            self.plan(now, thread, last.then(Action::Resume { issuer }));
        }
    }

    /// The device finished the I/O of pending entry `tag`, submitted by `issuer` to
    /// `device`, at `now`: its completion items go on the interrupt's core and the issuer's
    /// thread.
    pub(crate) fn complete(
        &mut self,
        now: Instant,
        issuer: usize,
        device: usize,
        tag: usize,
        device_time: Duration,
    ) {
        self.in_flight[tag].completed = now;
        self.in_flight[tag].device_ns = device_time.as_nanos();
        self.planning_for = u32::try_from(tag).expect("fewer than 2^32 pending entries");
        self.complete_steps(now, issuer, device, tag);
        self.planning_for = NO_REQUEST;
    }

    fn complete_steps(&mut self, now: Instant, issuer: usize, device: usize, tag: usize) {
        let (thread, polled) = (self.issuers[issuer].0, self.issuers[issuer].1.polled);
        if polled {
            // IOPOLL: the submitting thread reaps the CQE itself, no interrupt (spec §2.10).
            let costs = self.costs;
            let work = costs.cqe + costs.end_request + costs.task_work;
            if self.scheduler == MqScheduler::Bfq {
                let (_, _, finish) = self.holds();
                self.plan(now, thread, Step::locked(self.lock_base[device], Context::Sys, finish));
            }
            self.plan(now, thread, Step::plain(Context::Sys, work).then(Action::Deliver { tag }));
            return;
        }
        let core = self.cores.core_of(thread);
        let costs = self.costs;
        let queues = self.hw_queues[device] as usize;
        let cores = self.cores.len();
        // The vector of the queue this core maps to is affine to the first core of its group
        // (spec §2.7, §2.10): the core itself when queues are per core.
        let hctx = self.hctx(device, core);
        let irq_core = if queues >= cores { core } else { (hctx * cores).div_ceil(queues) };
        let entry = if self.irq_in_flight[irq_core] > 0 { Duration::ZERO } else { costs.irq };
        let mut steps = [None, None, None];
        if queues == 1 {
            // One hardware queue: the request ends in a BLOCK_SOFTIRQ on that core.
            steps[0] = Some(Step::plain(Context::Irq, entry + costs.cqe));
            steps[1] = Some(Step::plain(Context::Softirq, costs.softirq + costs.end_request));
        } else {
            steps[0] = Some(Step::plain(Context::Irq, entry + costs.cqe + costs.end_request));
        }
        if self.scheduler == MqScheduler::Bfq {
            // bfq's finish hook takes its lock in the completion's context (spec §3.1).
            let (_, _, finish) = self.holds();
            let context = if queues == 1 { Context::Softirq } else { Context::Irq };
            steps[2] = Some(Step::locked(self.lock_base[device], context, finish));
        }
        let last = steps.iter().rposition(Option::is_some).expect("an interrupt step");
        for (index, step) in steps.into_iter().enumerate() {
            if let Some(step) = step {
                let step = if index == last { step.handing_off() } else { step };
                self.plan_irq(now, irq_core, step);
            }
        }
        // The CQE is posted by task_work once the interrupt side has ended the request.
        let post = Step::plain(Context::Sys, costs.task_work).then(Action::Deliver { tag });
        self.defer(thread, post);
    }

    /// Hold times of the merge attempt, the insert and the dispatch (bfq: also the finish):
    /// the scheduler's own cost split between its insert, dispatch (and bfq's finish) hooks,
    /// the merge attempt a hash lookup (spec §2.12 row 6).
    fn holds(&self) -> (Duration, Duration, Duration) {
        self.holds
    }

    fn holds_of(scheduler: MqScheduler, costs: &Costs) -> (Duration, Duration, Duration) {
        let mut algorithm = scheduler.algorithm();
        let hooks = if scheduler == MqScheduler::Bfq {
            algorithm += costs.bfq_surplus;
            3
        } else {
            2
        };
        let share = Duration::from_nanos(algorithm.as_nanos() / hooks);
        (costs.merge, share, share)
    }

    /// The hardware queue `core` maps to on `device` (spec §2.7: one to one when there are
    /// enough queues, else cores grouped evenly).
    fn hctx(&self, device: usize, core: usize) -> usize {
        let queues = self.hw_queues[device] as usize;
        let cores = self.cores.len();
        if queues >= cores { core } else { core * queues / cores }
    }

    /// Keeps `step` on `thread` until the request's handing-off step ends.
    fn defer(&mut self, thread: ThreadId, step: Step) {
        self.deferred[self.planning_for as usize].push((thread, step));
    }

    fn plan_irq(&mut self, now: Instant, core: usize, step: Step) {
        self.irq_in_flight[core] += 1;
        let thread = self.irq[core];
        self.plan(now, thread, step);
    }

    /// Queues `step` on `thread` and runs it at once if its core is idle.
    fn plan(&mut self, now: Instant, thread: ThreadId, mut step: Step) {
        step.request = self.planning_for;
        step.planned = now;
        if step.punt {
            // A run already queued on kblockd and not started takes this request too: the
            // wake-up is paid once (`docs/blk-mq-costs.md` §4.3 item 7).
            let core = self.cores.core_of(thread);
            if self.kblockd_pending[core] {
                step.punt = false;
                step.duration = step.duration - self.costs.kblockd;
            } else {
                self.kblockd_pending[core] = true;
            }
        }
        if step.request != NO_REQUEST
            && let Some(owner) = self.in_flight[step.request as usize].owner
            && owner != thread
        {
            // Work done on another thread for the owner's I/O (spec §6.4 "attributed").
            self.threads[owner.index()].attributed_ns += step.duration.as_nanos();
        }
        self.plans[thread.index()].push_back(step);
        let placeholder = if step.lock.is_some() { Duration::ZERO } else { step.duration };
        if let super::cores::Run::Started { .. } =
            self.cores.run_after_user(now, thread, step.user, step.context, placeholder)
        {
            self.started(now, self.cores.core_of(thread));
        }
    }

    /// An item just started on `core`: a locked one acquires its lock.
    fn started(&mut self, now: Instant, core: usize) {
        let (thread, _) = self.cores.running(core).expect("an item just started");
        let step = *self.plans[thread.index()].front().expect("a started item has a plan");
        if step.punt {
            self.kblockd_pending[core] = false;
        }
        if step.request != NO_REQUEST {
            // Waiting for the core: from when it could run (planned, and its thread's earlier
            // item done) to now.
            let ready = step.planned.max(self.thread_free_at[thread.index()]);
            let request = &mut self.in_flight[step.request as usize];
            request.core_wait_ns[request.side()] += now.saturating_since(ready).as_nanos();
        }
        let Some(lock) = step.lock else {
            let ends = self.cores.busy_until(core).expect("running");
            self.timers.push((ends, core));
            return;
        };
        match self.locks[lock as usize].acquire(now, core, core as u64, step.duration) {
            Acquire::Granted(grant) => {
                let ends = self.cores.reshape_running(
                    now,
                    core,
                    step.context,
                    grant.releases.saturating_since(now),
                );
                self.timers.push((ends, core));
            }
            Acquire::Spinning => {
                // Spins until a release grants it (no end event until then).
                self.cores.reshape_running(now, core, Context::Spin, SPINNING);
            }
        }
    }

    /// The item running on `core` ends at `now` (an event the runner scheduled from
    /// [`take_timers`](BlkMq::take_timers)): its lock passes on, its actions are queued for
    /// the runner, and the core starts its next item.
    pub(crate) fn item_ended(&mut self, now: Instant, core: usize) {
        let (thread, _) = self.cores.running(core).expect("an item ends on a busy core");
        let step = self.plans[thread.index()].pop_front().expect("a running item has a plan");
        self.thread_free_at[thread.index()] = now;
        if self.irq[core] == thread {
            self.irq_in_flight[core] -= 1;
        }
        if let Some(lock) = step.lock
            && let Some(grant) = self.locks[lock as usize].release(now)
        {
            // The oldest spinner holds the lock now, on its own core, where it spun.
            let (waiter, _) = self.cores.running(grant.core).expect("a spinner runs");
            let waiting = *self.plans[waiter.index()].front().expect("a spinner has a plan");
            if waiting.request != NO_REQUEST {
                let request = &mut self.in_flight[waiting.request as usize];
                request.lock_wait_ns[request.side()] += grant.wait.as_nanos();
            }
            let ends = self.cores.reshape_running(
                now,
                grant.core,
                waiting.context,
                grant.releases.saturating_since(now),
            );
            self.timers.push((ends, grant.core));
        }
        if step.hands_off && step.request != NO_REQUEST {
            let request = &mut self.in_flight[step.request as usize];
            if request.reached_queue {
                // The interrupt side is done: the CQE now waits for task_work.
                request.interrupt_done = Some(now);
            }
            let mut waiting = std::mem::take(&mut self.deferred[step.request as usize]);
            self.planning_for = step.request;
            for (next_thread, next) in waiting.drain(..) {
                self.plan(now, next_thread, next);
            }
            self.planning_for = NO_REQUEST;
            self.deferred[step.request as usize] = waiting;
        }
        for action in step.then.into_iter().flatten() {
            match action {
                Action::Insert { tag } => {
                    self.in_flight[tag].inserted = now;
                    self.in_flight[tag].reached_queue = true;
                }
                Action::Deliver { tag } => {
                    let times = self.in_flight[tag];
                    let user_ns = self.costs.user.as_nanos();
                    let path = &mut self.path;
                    path.requests += 1;
                    // The parts are disjoint: waits are taken out of the span they fell in.
                    let [core_before, core_irq, core_task] = times.core_wait_ns;
                    let [lock_before, lock_irq, lock_task] = times.lock_wait_ns;
                    let submit = times.inserted.saturating_since(times.submitted).as_nanos();
                    path.user_ns += user_ns;
                    path.submit_ns += submit.saturating_sub(user_ns + core_before + lock_before);
                    path.core_wait_ns += core_before + core_irq + core_task;
                    path.lock_wait_ns += lock_before + lock_irq + lock_task;
                    let queued = times.completed.saturating_since(times.inserted).as_nanos();
                    path.sched_queue_ns += queued.saturating_sub(times.device_ns);
                    path.device_ns += times.device_ns.min(queued);
                    // Polled: reaped on the thread, no task_work hand-off.
                    let handed = times.interrupt_done.unwrap_or(now);
                    let completion = handed.saturating_since(times.completed).as_nanos();
                    path.completion_ns += completion.saturating_sub(core_irq + lock_irq);
                    let task_work = now.saturating_since(handed).as_nanos();
                    path.task_work_ns += task_work.saturating_sub(core_task + lock_task);
                }
                Action::Resume { .. } => {}
            }
            self.actions.push(action);
        }
        if self.cores.finish(now, core).is_some() {
            self.started(now, core);
        }
    }

    /// Hands each item end to schedule as an event since last asked, (instant, core), to
    /// `schedule`, in order.
    pub(crate) fn drain_timers(&mut self, mut schedule: impl FnMut(Instant, usize)) {
        for (at, core) in self.timers.drain(..) {
            schedule(at, core);
        }
    }

    /// Actions of ended items since last asked, in order.
    pub(crate) fn take_actions(&mut self, into: &mut Vec<Action>) {
        into.append(&mut self.actions);
    }

    /// The report's CPU section over the run so far, `window` long.
    pub(crate) fn report(&self, now: Instant, window: Duration) -> HostCpu {
        let window_ns = window.as_nanos().max(1);
        let percent = |ns: u64| ns as f64 * 100.0 / window_ns as f64;
        let cores = (0..self.cores.len())
            .map(|core| {
                let times = self.cores.core_times(core);
                CoreCpu {
                    core: core as u32,
                    user_ns: times.get(Context::User),
                    sys_ns: times.get(Context::Sys),
                    irq_ns: times.get(Context::Irq),
                    softirq_ns: times.get(Context::Softirq),
                    spin_ns: times.get(Context::Spin),
                    busy_percent: percent(self.cores.busy_through(core, now)),
                    // Little's law: the time items waited for this core, over the window, is
                    // the mean number waiting.
                    run_queue_mean: self
                        .threads
                        .iter()
                        .filter(|info| self.cores.core_of(info.id) == core)
                        .map(|info| self.cores.core_wait_ns(info.id))
                        .sum::<u64>() as f64
                        / window_ns as f64,
                }
            })
            .collect();
        let threads = self
            .threads
            .iter()
            .map(|info| {
                let times = self.cores.thread_times(info.id);
                ThreadCpu {
                    name: info.name.clone(),
                    kind: info.kind.to_owned(),
                    core: self.cores.core_of(info.id) as u32,
                    user_ns: times.get(Context::User),
                    sys_ns: times.get(Context::Sys),
                    irq_ns: times.get(Context::Irq),
                    softirq_ns: times.get(Context::Softirq),
                    spin_ns: times.get(Context::Spin),
                    core_wait_ns: self.cores.core_wait_ns(info.id),
                    attributed_ns: info.attributed_ns,
                    cpu_percent: percent(self.cores.thread_busy_through(info.id, now)),
                }
            })
            .collect();
        let locks = self
            .locks
            .iter()
            .zip(&self.lock_names)
            .map(|(lock, name)| {
                let stats = lock.stats();
                LockCpu {
                    name: name.clone(),
                    acquisitions: stats.acquisitions,
                    contended: stats.contended,
                    cross_core_handoffs: stats.cross_core_handoffs,
                    hold_ns: stats.hold_ns,
                    handoff_ns: stats.handoff_ns,
                    wait_mean_ns: stats.mean_wait_ns(),
                    wait_p99_ns: if stats.acquisitions == 0 { 0 } else { stats.p99_wait_ns() },
                }
            })
            .collect();
        let mut path_ns = std::collections::BTreeMap::new();
        let path = &self.path;
        for (step, ns) in [
            ("user", path.user_ns),
            ("submit", path.submit_ns),
            ("lock_wait", path.lock_wait_ns),
            ("core_wait", path.core_wait_ns),
            ("sched_queue", path.sched_queue_ns),
            ("device", path.device_ns),
            ("completion", path.completion_ns),
            ("task_work", path.task_work_ns),
        ] {
            path_ns.insert(step.to_owned(), ns);
        }
        HostCpu { cores, threads, locks, path_ns, requests: self.path.requests, window_ns }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves an issuer's bios leave from the core its thread is placed on (the software queue
    // kyber stages them on): pinned issuers from their allowed core, free ones spread over the
    // least-used cores, lowest first.
    #[test]
    fn an_issuer_submits_from_its_core() {
        let spec = HostSpec::parse("host:cpus=2").unwrap();
        let mut host = BlkMq::new(&spec, SchedulerKind::Kyber, &[("sda".to_owned(), 128)])
            .expect("kyber runs on the blk-mq host");
        let pinned = |core: u32| Submitter { cpus_allowed: vec![core], ..Submitter::default() };
        let issuers = [
            ("a".to_owned(), pinned(1)),
            ("b".to_owned(), Submitter::default()),
            ("c".to_owned(), pinned(1)),
        ];
        host.start_phase(&issuers).unwrap();
        let cores: Vec<u16> = (0..issuers.len()).map(|issuer| host.issuer_core(issuer)).collect();
        assert_eq!(cores, [1, 0, 1]);
    }
}
