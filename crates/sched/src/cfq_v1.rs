//! cfq v1: one sector-sorted queue per process, served round-robin in quanta; no slices.
//!
//! Follows Linux 2.6.9 `drivers/block/cfq-iosched.c` (the first CFQ, "version 1", mainline
//! 2.6.9 = RHEL 4 GA/U1), from specs/workload-mechanisms.md §4.1.
//!
//! Each process (the request's `process` stands for the TGID of the task that allocated it)
//! gets a queue on demand, freed as soon as it is empty. A queue keeps its requests sorted by
//! start sector. Queues that hold requests are on `rr_list`; a queue that becomes busy is put at
//! its **front**. Dispatch happens only when the dispatch list is empty: it then refills it in
//! passes over `rr_list`, moving each queue's lowest-sector request, until at least `quantum`
//! requests were moved or every queue is empty.
//!
//! Two 2.6.9 behaviours are reproduced on purpose:
//!
//! * **The round-robin bug** of mainline 2.6.9 and RHEL 4 GA–U3: every step of a pass takes
//!   the request from the queue at the *front* of `rr_list`, not from the queue the pass is
//!   visiting. A pass still has one step per busy queue, so the most recently activated queue is
//!   drained first, N requests per pass for N busy queues. RHEL 4.4 (2.6.9-42.EL) fixed it; the
//!   fixed variant ([`CfqV1::fixed_round_robin`]) is here for comparison, not registered.
//! * **The dispatch-list insertion rule**, which is not a sort: into an empty list a request is
//!   appended; one below the head's start sector goes just before the last element; any other
//!   is linked before the element nearest the tail whose start sector is at or above its own,
//!   or appended if there is none. So anything at or below the tail's sector lands just before
//!   the tail.
//!
//! There are no time slices, no idling, no FIFO expiry, no priorities and no read/write
//! distinction (reads and writes share a process's queue). A new request with the start sector
//! of one its queue holds (an alias) forces the old one onto the dispatch list. Merging: the
//! block layer's `last_merge` cache and its back-merge index (any queue), front merges only
//! into the submitting process's own queue. `may_queue` is an exemption, not a cap: 2.6.9's
//! `get_request` consults it only when the pool is full, and lets a process through unless its
//! queue already holds more than `(nr_requests − queued) / busy queues` requests (at least 3,
//! at most 128) in that direction.
//!
//! # Tunables
//!
//! | name | unit | default | range | meaning |
//! |---|---|---|---|---|
//! | `quantum` | requests | 4 | 1..=2147483647 | a refill moves passes' worth of requests until at least this many moved |
//! | `queued` | requests | 8 | 1..=2147483647 | subtracted from `nr_requests` before sharing it among busy queues in `may_queue` |
//!
//! # Deviations from Linux
//!
//! * The queue asks a scheduler for one request at a time, so this module keeps the 2.6.9
//!   dispatch list itself and hands its head out one request at a time (the queue appends it,
//!   [`DispatchInsert::Tail`], onto its own list, which it empties before asking again). The
//!   request already handed out but not yet taken by a busy device is therefore not seen by
//!   the insertion rule as the list head; when the device takes requests at once (the usual
//!   case) the orders are identical.
//! * Requests on that private dispatch list are still counted in [`Scheduler::queued`] and
//!   refused as merge targets through [`Scheduler::allow_merge`] (in 2.6.9 they left the merge
//!   hash). A front merge through the `last_merge` cache into *another* process's queue is
//!   refused too (the hook cannot tell the cache from the front lookup); 2.6.9 allowed it.
//! * Selecting cfq sets `nr_requests` to 8192 in 2.6.9; the queue has no hook for that, so the
//!   simulator's runner sets it when it builds a queue for this scheduler (from
//!   `KernelVersion::cfq_nr_requests`). A scheduler cannot read the queue's `nr_requests`
//!   either, so `may_queue` assumes [`NR_REQUESTS`] (8192) unless told otherwise through
//!   [`CfqV1::set_nr_requests`]: a queue given another `nr_requests` by hand still shares 8192.
//!   With 8192 the limit is the cap of 128 ([`MAX_QUEUED`]) for up to 63 busy queues.
//! * Values below 1 are rejected, where 2.6.9's sysfs store clamps them to 1.
//! * Back-inserted requests (barriers) are the queue's flush path, which drains every queue
//!   through the refill loop (as 2.6.9 does before a back insert) and appends in that order.

use std::collections::{BTreeMap, VecDeque};

use elevator_core::tunable::INT_MAX;
use elevator_core::{
    Bio, Counter, Ctx, Dispatch, DispatchInsert, MayQueue, MergeKind, Op, ProcessId, RequestId,
    Scheduler, Sector, TunableError, TunableSpec, Unit,
};

/// The kernel's name.
pub const NAME: &str = "cfq";

/// One line for `elevator list`.
pub const SUMMARY: &str = "cfq v1: a sector-sorted queue per process, round-robin \
                           refills of `quantum` requests; no slices, no idling";

/// What selecting cfq sets the queue's `nr_requests` to in 2.6.9 (`cfq_init`; §4.1: mainline
/// 2.6.9 and RHEL 4 up to U5).
pub const NR_REQUESTS: u32 = 8192;

/// `may_queue`'s upper bound on a queue's share: the `nr_requests` the queue had before cfq
/// raised it (2.6.9's `max_queued`, the default 128; §4.1 "in GA–U5 also at most 128").
pub const MAX_QUEUED: u32 = 128;

/// `may_queue`'s lower bound on a queue's share (§4.1).
pub const MIN_QUEUED: u32 = 3;

/// cfq v1's tunables, in sysfs order, with the 2.6.9 defaults.
pub const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "quantum",
        unit: Unit::Requests,
        default: 4,
        min: 1,
        max: INT_MAX,
        help: "a refill repeats its passes over the busy queues until this many requests moved",
    },
    TunableSpec {
        name: "queued",
        unit: Unit::Requests,
        default: 8,
        min: 1,
        max: INT_MAX,
        help: "taken off nr_requests before may_queue shares it among the busy queues",
    },
];

/// One process's queue (the kernel's `cfq_queue`).
#[derive(Clone, Debug, Default)]
struct ProcessQueue {
    /// Requests by start sector (the kernel's `sort_list`); aliases never coexist.
    sorted: BTreeMap<Sector, RequestId>,
    /// Requests per data direction (the kernel's `queued[rw]`), indexed by `Direction::index`.
    queued: [u32; 2],
}

/// The 2.6.9 cfq scheduler.
#[derive(Debug)]
pub struct CfqV1 {
    quantum: u32,
    queued_reserve: u32,
    /// Whether a refill step takes from the queue it visits (RHEL 4.4 on) rather than from the
    /// queue at the front of `rr_list` (mainline 2.6.9, RHEL 4 GA–U3).
    fixed_round_robin: bool,
    /// The queue's `nr_requests`, for `may_queue`.
    nr_requests: u32,
    queues: BTreeMap<ProcessId, ProcessQueue>,
    /// Busy queues, front first.
    rr_list: VecDeque<ProcessId>,
    /// Each request held in a process queue, with its queue.
    owner: BTreeMap<RequestId, ProcessId>,
    /// The 2.6.9 dispatch list (`q->queue_head`), head first.
    dispatch_list: VecDeque<RequestId>,
    refills: u64,
    aliases_forced: u64,
}

impl Default for CfqV1 {
    fn default() -> CfqV1 {
        CfqV1::new()
    }
}

impl CfqV1 {
    /// A new instance with 2.6.9's defaults and its round-robin bug.
    pub fn new() -> CfqV1 {
        CfqV1 {
            quantum: TUNABLES[0].default as u32,
            queued_reserve: TUNABLES[1].default as u32,
            fixed_round_robin: false,
            nr_requests: NR_REQUESTS,
            queues: BTreeMap::new(),
            rr_list: VecDeque::new(),
            owner: BTreeMap::new(),
            dispatch_list: VecDeque::new(),
            refills: 0,
            aliases_forced: 0,
        }
    }

    /// The RHEL 4.4 (2.6.9-42.EL) variant: each refill step takes from the queue it visits,
    /// a true round-robin of one request per queue per pass.
    pub fn fixed_round_robin() -> CfqV1 {
        CfqV1 { fixed_round_robin: true, ..CfqV1::new() }
    }

    /// Tells `may_queue` the queue's `nr_requests` (8192 by default, [`NR_REQUESTS`]).
    pub fn set_nr_requests(&mut self, nr_requests: u32) {
        self.nr_requests = nr_requests;
    }

    /// `may_queue`'s per-queue limit with the current busy queues (§4.1).
    fn queue_limit(&self) -> u32 {
        let busy = self.rr_list.len().max(1) as u32;
        let limit = self.nr_requests.saturating_sub(self.queued_reserve) / busy;
        limit.clamp(MIN_QUEUED, MAX_QUEUED)
    }

    // ---- helpers of insert and merged ----

    /// Files `id` in `process`'s queue at its start sector; an alias goes to the dispatch list.
    fn add_sorted(&mut self, cx: &Ctx<'_>, process: ProcessId, id: RequestId) {
        let request = &cx.requests[id];
        let queue = self.queues.entry(process).or_default();
        let was_empty = queue.sorted.is_empty();
        if let Some(alias) = queue.sorted.insert(request.start, id) {
            queue.queued[cx.requests[alias].direction().index()] -= 1;
            self.owner.remove(&alias);
            self.aliases_forced += 1;
            self.insert_dispatch(cx, alias);
        }
        let queue = self.queues.get_mut(&process).expect("just filed");
        queue.queued[request.direction().index()] += 1;
        self.owner.insert(id, process);
        if was_empty {
            self.rr_list.push_front(process);
        }
    }

    /// Takes `id` out of its queue; an emptied queue leaves `rr_list` and is freed.
    fn remove_sorted(&mut self, cx: &Ctx<'_>, id: RequestId, start: Sector) -> ProcessId {
        let process = self.owner.remove(&id).expect("request held in a queue");
        let queue = self.queues.get_mut(&process).expect("owner's queue exists");
        let removed = queue.sorted.remove(&start);
        debug_assert_eq!(removed, Some(id));
        queue.queued[cx.requests[id].direction().index()] -= 1;
        if queue.sorted.is_empty() {
            self.queues.remove(&process);
            self.rr_list.retain(|&busy| busy != process);
        }
        process
    }

    // ---- helpers of dispatch ----

    /// The 2.6.9 insertion rule (§4.1), not a sort.
    fn insert_dispatch(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let list = &mut self.dispatch_list;
        let start = cx.requests[id].start;
        let Some(&head) = list.front() else {
            list.push_back(id);
            return;
        };
        if start < cx.requests[head].start {
            list.insert(list.len() - 1, id);
            return;
        }
        let position = (0..list.len()).rev().find(|&index| cx.requests[list[index]].start >= start);
        match position {
            Some(index) => list.insert(index, id),
            None => list.push_back(id),
        }
    }

    /// Moves the lowest-sector request of `process`'s queue onto the dispatch list; says
    /// whether the queue still holds requests.
    fn move_lowest(&mut self, cx: &Ctx<'_>, process: ProcessId) -> bool {
        let queue = &self.queues[&process];
        let (&start, &id) = queue.sorted.first_key_value().expect("busy queues hold requests");
        self.remove_sorted(cx, id, start);
        self.insert_dispatch(cx, id);
        self.queues.contains_key(&process)
    }

    /// Refills the dispatch list (the kernel's `cfq_dispatch_requests`); returns how many
    /// requests moved.
    fn refill(&mut self, cx: &Ctx<'_>) -> u32 {
        let mut moved = 0u32;
        if self.rr_list.is_empty() {
            return 0;
        }
        self.refills += 1;
        loop {
            let mut good_queues = 0u32;
            // One step per queue visited, walking rr_list front to back; the next queue to
            // visit is fixed before the step, as the kernel's safe list walk does.
            let mut visiting = self.rr_list.front().copied();
            while let Some(visited) = visiting {
                let index = self.rr_list.iter().position(|&busy| busy == visited);
                let next = index.and_then(|index| self.rr_list.get(index + 1).copied());
                let served = if self.fixed_round_robin {
                    visited
                } else {
                    *self.rr_list.front().expect("a pass visits only while queues are busy")
                };
                if self.move_lowest(cx, served) {
                    good_queues += 1;
                }
                moved += 1;
                visiting = next;
            }
            if moved >= self.quantum || good_queues == 0 {
                return moved;
            }
        }
    }
}

impl Scheduler for CfqV1 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn insert(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let process = cx.requests[id].process;
        self.add_sorted(cx, process, id);
    }

    fn dispatch(&mut self, cx: &Ctx<'_>) -> Dispatch {
        if self.dispatch_list.is_empty() {
            self.refill(cx);
        }
        match self.dispatch_list.pop_front() {
            Some(id) => Dispatch::Issue(id),
            None => Dispatch::Empty,
        }
    }

    fn drain(&mut self, cx: &Ctx<'_>, out: &mut Vec<RequestId>) {
        // 2.6.9 empties every queue through the refill loop before a back insertion.
        while self.refill(cx) > 0 {}
        out.extend(self.dispatch_list.drain(..));
    }

    fn queued(&self) -> usize {
        self.owner.len() + self.dispatch_list.len()
    }

    fn dispatch_insert(&self) -> DispatchInsert {
        // The order is this module's dispatch list's; the queue must keep it.
        DispatchInsert::Tail
    }

    fn allow_merge(&self, cx: &Ctx<'_>, target: RequestId, bio: &Bio) -> bool {
        let Some(&owner) = self.owner.get(&target) else {
            // On the dispatch list: out of the merge hash in 2.6.9.
            return false;
        };
        let request = &cx.requests[target];
        // A back merge may join any queue (the global hash); a front merge only the
        // submitter's own (the lookup searches the current TGID's tree).
        request.end() == bio.start || owner == bio.process
    }

    fn merged(&mut self, cx: &Ctx<'_>, target: RequestId, kind: MergeKind) {
        if let MergeKind::Front { old_start } = kind {
            // Re-filed at its new start, where it may meet an alias; the queue keeps the
            // request, so it stays busy and keeps its place on rr_list.
            let process = self.owner[&target];
            let queue = self.queues.get_mut(&process).expect("owner's queue exists");
            queue.sorted.remove(&old_start);
            if let Some(alias) = queue.sorted.insert(cx.requests[target].start, target) {
                queue.queued[cx.requests[alias].direction().index()] -= 1;
                self.owner.remove(&alias);
                self.aliases_forced += 1;
                self.insert_dispatch(cx, alias);
            }
        }
    }

    fn merge_neighbour(&self, cx: &Ctx<'_>, id: RequestId, kind: MergeKind) -> Option<RequestId> {
        let process = self.owner.get(&id)?;
        let queue = &self.queues[process];
        let start = cx.requests[id].start;
        match kind {
            MergeKind::Back => queue.sorted.range(start..).nth(1).map(|(_, &next)| next),
            MergeKind::Front { .. } => queue.sorted.range(..start).next_back().map(|(_, &p)| p),
        }
    }

    fn requests_merged(&mut self, cx: &Ctx<'_>, _kept: RequestId, absorbed: RequestId) {
        // The absorbed request's start is unchanged (only the kept one grew).
        let start = cx.requests[absorbed].start;
        if self.owner.contains_key(&absorbed) {
            self.remove_sorted(cx, absorbed, start);
        } else {
            self.dispatch_list.retain(|&held| held != absorbed);
        }
    }

    fn may_queue(&self, _cx: &Ctx<'_>, process: ProcessId, op: Op) -> MayQueue {
        // 2.6.9 asks only when the pool is full, and then "yes" lets the process past it:
        // that is `Must` here; "no" leaves it to the pool's rules (`May`), which refuse it
        // unless it is the batcher.
        let over_limit = self
            .queues
            .get(&process)
            .is_some_and(|queue| queue.queued[op.direction().index()] > self.queue_limit());
        if over_limit { MayQueue::May } else { MayQueue::Must }
    }

    fn tunables(&self) -> &'static [TunableSpec] {
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        let spec = elevator_core::tunable::find(TUNABLES, NAME, name)?;
        Ok(match spec.name {
            "quantum" => i64::from(self.quantum),
            "queued" => i64::from(self.queued_reserve),
            other => unreachable!("tunable {other} is in the table but not handled"),
        })
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let spec = crate::checked(TUNABLES, NAME, name, value)?;
        // The range check above makes the conversions lossless.
        match spec.name {
            "quantum" => self.quantum = value as u32,
            "queued" => self.queued_reserve = value as u32,
            other => unreachable!("tunable {other} is in the table but not handled"),
        }
        Ok(())
    }

    fn counters(&self) -> Vec<Counter> {
        vec![
            Counter { name: "refills", value: self.refills },
            Counter { name: "aliases_forced", value: self.aliases_forced },
        ]
    }
}

#[cfg(test)]
mod tests;
