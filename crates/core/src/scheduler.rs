//! The contract between the block layer and an I/O scheduler.
//!
//! The shape follows the kernel's elevator operations: the queue inserts requests, asks for one
//! request at a time, reports merges and completions, and drains the scheduler when it switches
//! to another or must empty it for a flush. Two things differ on purpose:
//!
//! * **Time is injected.** A scheduler never reads a clock; [`Ctx::now`] is the time of the
//!   call. The simulator passes simulated time, the live engine the one real clock.
//! * **Idling is a value.** Where the kernel's anticipatory, cfq and bfq schedulers arm a timer
//!   and return nothing, a scheduler here returns [`Dispatch::Idle`] with the instant it wants to
//!   be asked again. The simulator turns that into an event, the live engine into an io_uring
//!   timeout; either may ask earlier, when a request arrives or completes, and the scheduler
//!   then does what its timer would have done if `until` has passed.
//!
//! Requests live in the queue's [`RequestTable`]; a scheduler holds [`RequestId`]s and reads the
//! requests through [`Ctx::requests`]. The queue checks every answer: an id returned by
//! `dispatch` must be one the scheduler holds, `Idle.until` must lie in the future, and
//! `drain` must leave the scheduler empty.

use std::fmt;

use crate::request::{Bio, Op, ProcessId, Sector};
use crate::table::{RequestId, RequestTable};
use crate::time::{Duration, Instant};
use crate::tunable::{TunableError, TunableSpec};

/// Everything a scheduler may look at during a call.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    /// The time of the call.
    pub now: Instant,
    /// Every request of the queue.
    pub requests: &'a RequestTable,
    /// Requests at the device now, plus any the driver fetched and activated while the device
    /// was full ([`DriverFetch::BeforeDepthCheck`](crate::DriverFetch)): the kernel's
    /// `rq_in_driver`.
    pub in_flight: u32,
    /// How many requests the device accepts at once (the hardware queue depth).
    pub depth: u32,
}

/// What the queue should do next, as the scheduler sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Dispatch {
    /// Hand this request to the device now. The scheduler has forgotten it.
    Issue(RequestId),
    /// Requests are queued, but the scheduler is idling on purpose (anticipation, `slice_idle`).
    /// Ask again at `until` (which is later than now), or earlier if a request arrives or
    /// completes.
    Idle {
        /// When to ask again at the latest.
        until: Instant,
    },
    /// Requests are queued, but the scheduler holds them until a request at the device
    /// completes (kyber with every token of the domains it could serve in use). Only valid
    /// while requests are in flight: a completion is what ends the wait (on a blk-mq queue:
    /// an insertion, the delayed run or [`Scheduler::completion_reruns`]; see
    /// [`crate::BlkMqQueue`]).
    Throttled,
    /// Nothing is queued.
    Empty,
}

/// How the queue puts a dispatched request on its dispatch list (see
/// [`DispatchList`](crate::DispatchList)).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DispatchInsert {
    /// Sorted into the one-way sweep from the head position (noop, anticipatory, cfq).
    Sort,
    /// Appended in dispatch order (deadline).
    Tail,
}

/// Which merge lookups a scheduler offers for new bios, beyond the one-hit `last_merge` cache
/// that every scheduler gets.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MergeLookups {
    /// Look up a queued request ending where the bio starts.
    pub back: bool,
    /// Look up a queued request starting where the bio ends.
    pub front: bool,
}

impl MergeLookups {
    /// Both lookups.
    pub const ALL: MergeLookups = MergeLookups { back: true, front: true };
    /// Only the `last_merge` cache.
    pub const CACHE_ONLY: MergeLookups = MergeLookups { back: false, front: false };
}

/// What a scheduler that finds merges itself decided for a new bio
/// ([`Scheduler::choose_merge`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MergeChoice {
    /// Let the block layer look (the `last_merge` cache, then [`Scheduler::merge_lookups`]):
    /// every scheduler but the 2.4 elevator.
    Core,
    /// No merge: the bio gets a request of its own.
    NoMerge,
    /// Join `target` at the `kind` end. The block layer's own rules (the driver's size limit,
    /// direction) still apply; if they refuse, the bio gets a request of its own and `target`
    /// is not marked no-merge (2.4's driver refusal marks nothing).
    Into {
        /// The queued request the scheduler picked.
        target: RequestId,
        /// Which end the bio joins.
        kind: MergeKind,
    },
}

/// Which end of a request a bio joined.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MergeKind {
    /// The bio was appended: the request's end moved.
    Back,
    /// The bio was prepended: the request's start moved from `old_start`.
    Front {
        /// Where the request started before the merge (its old sort key).
        old_start: Sector,
    },
}

/// The scheduler's vote on allocating a request for a process (the kernel's `may_queue`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MayQueue {
    /// Refuse: the process waits as if the pool were full.
    No,
    /// Allocate under the normal pool rules.
    May,
    /// Allocate even past a full pool (up to the hard cap): the scheduler is waiting for this
    /// process's next request.
    Must,
}

/// A request the device finished, as the scheduler's `complete` hook sees it. The request is
/// still in the table during the call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Completion {
    /// The request.
    pub id: RequestId,
    /// When the device took it.
    pub issued_at: Instant,
    /// Time at the device: issue to completion (what kyber measures as device latency).
    pub device_time: Duration,
    /// Time since the request was created (what kyber measures as total latency).
    pub total_time: Duration,
}

/// A named counter a scheduler reports (anticipation waits, slices expired, ...).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Counter {
    /// A snake_case name.
    pub name: &'static str,
    /// Its value.
    pub value: u64,
}

/// An I/O scheduler.
///
/// Calls come from one thread at a time, in time order. Hooks with a default are optional;
/// the defaults are what the kernel's block layer does for an elevator that leaves the hook
/// unset.
pub trait Scheduler: fmt::Debug + Send {
    /// The kernel's name: `deadline`, `mq-deadline`, ...
    fn name(&self) -> &'static str;

    /// Takes a new request (in state queued).
    fn insert(&mut self, cx: &Ctx<'_>, id: RequestId);

    /// Picks the next request for the device, or says why not. Called only when the device can
    /// take a request.
    fn dispatch(&mut self, cx: &Ctx<'_>) -> Dispatch;

    /// Gives back every queued request, ignoring idling and batching (a scheduler switch, or a
    /// flush that must see everything before it on the device). Leaves the scheduler empty.
    fn drain(&mut self, cx: &Ctx<'_>, out: &mut Vec<RequestId>);

    /// How many requests it holds.
    fn queued(&self) -> usize;

    /// How the queue files the requests it dispatches.
    fn dispatch_insert(&self) -> DispatchInsert {
        DispatchInsert::Sort
    }

    /// Which merge lookups new bios get.
    fn merge_lookups(&self) -> MergeLookups {
        MergeLookups::ALL
    }

    /// Picks the request a new bio joins, instead of the block layer's lookups: the 2.4
    /// elevator scans its list from the tail, charges what it passes and takes the first
    /// candidate, so the choice (and its side effects) is its own. Called once per bio that
    /// may merge, before a request is allocated; the scheduler learns the outcome from
    /// [`Scheduler::merged`] or from the [`Scheduler::insert`] of the bio's new request. The
    /// default leaves it to the block layer.
    fn choose_merge(&mut self, _cx: &Ctx<'_>, _bio: &Bio) -> MergeChoice {
        MergeChoice::Core
    }

    /// Whether `bio` may join the queued request `target` (the block layer's own rules have
    /// already passed).
    fn allow_merge(&self, _cx: &Ctx<'_>, _target: RequestId, _bio: &Bio) -> bool {
        true
    }

    /// Whether the front index may offer `target` to `bio` (after [`Scheduler::allow_merge`]
    /// passed): a scheduler whose kernel looks front merges up in a narrower structure than
    /// the core's index vetoes the rest here (anticipatory's tree indexed by data direction).
    /// The `last_merge` cache is not subject to it.
    fn allow_front_lookup(&self, _cx: &Ctx<'_>, _target: RequestId, _bio: &Bio) -> bool {
        true
    }

    /// A bio joined `target`; its sectors (and for a front merge its start) changed.
    fn merged(&mut self, _cx: &Ctx<'_>, _target: RequestId, _kind: MergeKind) {}

    /// The queued request that `id` could fuse with after a bio merge of `kind`: for a back
    /// merge its successor, for a front merge its predecessor, in the scheduler's own order
    /// (sector order for deadline, FIFO order for noop). `None` to never fuse.
    fn merge_neighbour(
        &self,
        _cx: &Ctx<'_>,
        _id: RequestId,
        _kind: MergeKind,
    ) -> Option<RequestId> {
        None
    }

    /// `absorbed` was fused into `kept` and leaves the scheduler; forget it. `kept` keeps the
    /// earlier creation time and the better priority.
    fn requests_merged(&mut self, _cx: &Ctx<'_>, _kept: RequestId, _absorbed: RequestId) {}

    /// Votes on allocating a request for `process` doing `op`.
    fn may_queue(&self, _cx: &Ctx<'_>, _process: ProcessId, _op: Op) -> MayQueue {
        MayQueue::May
    }

    /// The device took `id` from the dispatch list (the kernel's `activate_request`).
    fn activate(&mut self, _cx: &Ctx<'_>, _id: RequestId) {}

    /// The device gave `id` back unfinished; it returns to the front of the dispatch list.
    fn deactivate(&mut self, _cx: &Ctx<'_>, _id: RequestId) {}

    /// The device finished a request this scheduler dispatched.
    fn complete(&mut self, _cx: &Ctx<'_>, _done: &Completion) {}

    /// The queue's `nr_requests` (its pool, blk-mq's scheduler tags) is `nr_requests` now: at
    /// attach and whenever it changes (the kernel's `depth_updated` elevator op, which
    /// mq-deadline and kyber size their write limits from). Default: nothing.
    fn depth_updated(&mut self, _nr_requests: u32) {}

    /// The running kernel's tick rate, on a blk-mq queue ([`crate::BlkMqQueue`]): a scheduler
    /// that counts in jiffies rounds to its ticks (mq-deadline's expiry and tunables, kyber's
    /// timer and window; modern-vs-kernel.md rows 11, 19). Not called on a legacy queue, whose
    /// schedulers count at [`crate::HZ`]. Default: nothing.
    fn set_tick_rate(&mut self, _tick_rate: crate::TickRate) {}

    /// Whether the device has moving parts (the queue's rotational flag,
    /// [`crate::QueueConfig::rotational`]), at attach: the kernel's bfq reads
    /// `blk_queue_nonrot` when it is attached and picks its reference rate, raising duration,
    /// seekiness threshold, idling and queue merging by it. Default: nothing.
    fn set_rotational(&mut self, _rotational: bool) {}

    /// Right after [`Scheduler::complete`]: whether that completion runs the queue again on a
    /// blk-mq queue ([`crate::BlkMqQueue`]) where dispatch last answered
    /// [`Dispatch::Throttled`]. blk-mq re-runs a queue at a completion only through the
    /// scheduler's own wake-up (kyber's token wait queue, bfq's `bfq_schedule_dispatch`);
    /// mq-deadline has none (modern-vs-kernel.md rows 1–2). Default: yes. Legacy queues ask
    /// the scheduler after every completion and ignore the answer.
    fn completion_reruns(&mut self) -> bool {
        true
    }

    /// `process` exited (its I/O context went away): anticipatory stops waiting for it and
    /// counts it in its exit statistics; cfq turns its idle window off.
    fn process_exited(&mut self, _cx: &Ctx<'_>, _process: ProcessId) {}

    /// Its tunables, in the order sysfs lists them.
    fn tunables(&self) -> &'static [TunableSpec];

    /// The current value of a tunable, in its unit.
    fn tunable(&self, name: &str) -> Result<i64, TunableError>;

    /// Sets a tunable; the value is range-checked against the table.
    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError>;

    /// Counters for reports.
    fn counters(&self) -> Vec<Counter> {
        Vec::new()
    }

    // ---- Conformance replay hook (issue 25, `elevator_sched::conform`) -------------------
    /// Resynchronises with the kernel after a disagreement: the kernel dispatched the queued
    /// request `id` now. If `instead_of` is given, this scheduler's last `dispatch` handed out
    /// that request in `id`'s place (other calls, such as inserts, may have come since, but no
    /// other `dispatch`, and it is not at the device): it goes back to the queue first. Then
    /// `id` leaves the queue as if `dispatch` had picked it, with the side effects a pick of it
    /// has (batch and sweep state, tokens, budget charge). Answers whether it could; the
    /// default cannot, and leaves everything unchanged. Used only by the conformance replay,
    /// which drives a scheduler with a kernel's recorded decisions.
    fn dispatch_request(
        &mut self,
        _cx: &Ctx<'_>,
        _id: RequestId,
        _instead_of: Option<RequestId>,
    ) -> bool {
        false
    }
    // ---- end of the conformance replay hook ----------------------------------------------
}
