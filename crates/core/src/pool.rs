//! The request pool: `nr_requests`, the full-queue rules, congestion and batching of 2.6.18.
//!
//! Each pending request (in the scheduler, on the dispatch list or at the device, until it
//! completes) counts against its class: data direction in 2.6.18, sync/async from 2.6.30 on
//! ([`PoolSplit`]). Allocation follows `get_request`:
//!
//! * from `congestion_on = n − n/8 + 1` (113 for 128) the class is marked congested, and it stays
//!   so until the count drops below `congestion_off = n − n/8 − n/16 − 1` (103; vanilla
//!   2.6.9: `n − n/8 − 1`, 111 — the only version-dependent rule here, see
//!   [`KernelVersion::congestion_off`]);
//! * at `n` the class is *full*: the first process to hit that becomes a **batcher** and marks
//!   the queue full; after that only batchers, and processes the scheduler votes
//!   [`MayQueue::Must`] for, may allocate;
//! * never more than `3n/2` (192) in a class — a 2.6.18 rule that 2.6.9 lacks; it is kept for
//!   every release here because the request table is sized by it (a deviation for 2.6.9 hosts,
//!   whose batchers could take a class past 192);
//! * a batcher may allocate up to 32 requests (`nr_batching`) within 20 ms (`HZ/50`) of becoming
//!   one.
//!
//! A process that cannot allocate waits in its class's FIFO; each freed request that brings the
//! count back to at most `n − 1` wakes one waiter, who becomes a batcher, and clears the full
//! mark (`__freed_request`).
//!
//! A 2.4.21 queue ([`PoolRules::Linux2_4`], linux-2.4-elevator.md §5) has none of that: each
//! direction has a fixed number of free requests; a task takes one while any is free, whoever
//! else sleeps (no batcher, no full mark, no congestion). A task finding none joins its
//! direction's waiters (all of them woken together) and unplugs its own queue; the
//! request function that unplug runs may free requests at once (SCSI returns a request to the
//! pool when it starts it), and a waiter who finds one then does not sleep. Once asleep, it is
//! woken by a free that leaves at least `batch_requests` free, or after 1 s (RHEL 3; vanilla
//! 2.4.21 sleeps without a timeout).
//!
//! Deviation (2.4): a woken waiter who finds no request again joins the end of the waiter
//! list; the kernel's non-exclusive wait queue keeps its place (all are woken together, so
//! only the retry order among them differs).

use std::collections::{BTreeMap, VecDeque};

use crate::kernel::KernelVersion;
use crate::request::{Direction, Op, ProcessId, RequestFlags};
use crate::scheduler::MayQueue;
use crate::time::{Duration, HZ, Instant};

/// How many requests a batcher may allocate past a full pool (`BLK_BATCH_REQ`).
pub const BATCH_REQUESTS: u32 = 32;
/// How long a process stays a batcher (`BLK_BATCH_TIME` = HZ/50).
pub const BATCH_TIME: Duration = Duration::from_jiffies(HZ / 50);
/// The smallest `nr_requests` the kernel accepts (`BLKDEV_MIN_RQ`).
pub const MIN_NR_REQUESTS: u32 = 4;

/// What the request pool counts separately.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum PoolSplit {
    /// Reads and writes (2.6.18 to 2.6.29).
    #[default]
    ByDirection,
    /// Sync and async requests (2.6.30 on).
    BySync,
    /// One class for every request: blk-mq's scheduler tags (one `sbitmap` of `nr_requests`
    /// per hardware queue, modern-vs-kernel.md row 8). A queue with this split allocates under
    /// [`PoolRules::BlkMq`].
    Shared,
}

impl PoolSplit {
    /// The pool class (0 or 1) of a request of this shape.
    // Hot from the simulator's crate (several calls per I/O): inline there.
    #[inline]
    pub fn class(self, op: Op, flags: RequestFlags) -> usize {
        match self {
            PoolSplit::ByDirection => op.direction().index(),
            PoolSplit::BySync => {
                let sync = op == Op::Read || flags.is_sync();
                usize::from(!sync)
            }
            PoolSplit::Shared => 0,
        }
    }

    /// The name of pool class `class` for messages.
    pub fn class_name(self, class: usize) -> &'static str {
        match (self, class) {
            (PoolSplit::ByDirection, 0) => Direction::Read.name(),
            (PoolSplit::ByDirection, _) => Direction::Write.name(),
            (PoolSplit::BySync, 0) => "sync",
            (PoolSplit::BySync, _) => "async",
            (PoolSplit::Shared, _) => "any",
        }
    }
}

/// Which kernel's pool rules apply.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum PoolRules {
    /// 2.6: congestion, the full mark, batchers, the 3/2 hard cap (the module's head).
    #[default]
    Linux2_6,
    /// 2.4.21 (linux-2.4-elevator.md §5): `nr_requests` free requests per direction, no
    /// congestion or batching; waiters woken together at `batch_requests` free.
    Linux2_4 {
        /// Whether a sleeping waiter gives up after 1 s and retries (RHEL 3's
        /// `get_request_wait`); vanilla 2.4.21 sleeps until woken.
        timed_wait: bool,
    },
    /// blk-mq scheduler tags (`blk_mq_get_tag`): a request is allocated while fewer than
    /// `nr_requests` are, whoever asks, and the scheduler's vote ([`MayQueue::No`]: its
    /// `limit_depth`) can refuse it; no congestion, full mark, batchers or hard cap. Each free
    /// wakes the longest waiter.
    BlkMq,
}

/// How long a RHEL 3 task sleeps for a free request before it tries again (`HZ`, 1 s;
/// linux-2.4-elevator.md §5).
pub const POOL_WAIT_2_4: Duration = Duration::from_millis(1000);

/// 2.4's `batch_requests` for `per_direction` requests in each direction: a quarter of the
/// whole pool, at most 32 (linux-2.4-elevator.md §5; 32 on every pool of 128 or more).
pub const fn batch_requests_2_4(per_direction: u32) -> u32 {
    let quarter = 2 * per_direction / 4;
    if quarter < 32 { quarter } else { 32 }
}

/// A 2.4 waiter: since when it waits, and whether it has gone to sleep yet (before that, the
/// request function its unplug ran may free a request it takes at once).
#[derive(Clone, Copy, Debug)]
struct Waiter2_4 {
    process: ProcessId,
    since: Instant,
    asleep: bool,
}

#[derive(Clone, Copy, Debug)]
struct Batcher {
    remaining: u32,
    since: Instant,
}

/// Allocation counts and the waiters of one queue.
#[derive(Clone, Debug)]
pub(crate) struct RequestPool {
    nr_requests: u32,
    pub(crate) split: PoolSplit,
    pub(crate) count: [u32; 2],
    full: [bool; 2],
    congested: [bool; 2],
    /// How many times a `congested` mark has flipped: a caller that saw the same count last
    /// time knows the marks are as it saw them (issue 20: the simulator asks after every pump).
    pub(crate) congestion_flips: u64,
    waiters: [VecDeque<ProcessId>; 2],
    batchers: BTreeMap<ProcessId, Batcher>,
    /// The release whose congestion-off threshold applies.
    pub(crate) kernel: KernelVersion,
    /// 2.6 or 2.4 rules.
    pub(crate) rules: PoolRules,
    /// 2.4's waiters per direction, in arrival order.
    waiters_2_4: [Vec<Waiter2_4>; 2],
}

impl RequestPool {
    pub(crate) fn new(nr_requests: u32, split: PoolSplit) -> RequestPool {
        RequestPool {
            nr_requests,
            split,
            count: [0; 2],
            full: [false; 2],
            congested: [false; 2],
            congestion_flips: 0,
            waiters: [VecDeque::new(), VecDeque::new()],
            batchers: BTreeMap::new(),
            kernel: KernelVersion::Linux2_6_18,
            rules: PoolRules::Linux2_6,
            waiters_2_4: [Vec::new(), Vec::new()],
        }
    }

    /// The same pool under `rules`.
    pub(crate) fn with_rules(mut self, rules: PoolRules) -> RequestPool {
        self.rules = rules;
        self
    }

    /// Whether 2.4's rules apply.
    // Hot from the simulator's crate (several calls per I/O): inline there.
    #[inline]
    pub(crate) fn is_2_4(&self) -> bool {
        matches!(self.rules, PoolRules::Linux2_4 { .. })
    }

    /// The same pool under `kernel`'s thresholds.
    pub(crate) fn for_kernel(mut self, kernel: KernelVersion) -> RequestPool {
        self.kernel = kernel;
        self
    }

    pub(crate) fn set_nr_requests(&mut self, nr_requests: u32) {
        self.nr_requests = nr_requests;
        // The kernel re-evaluates the marks against the new thresholds at once.
        for class in 0..2 {
            self.set_congested(class, self.count[class] >= self.congestion_on());
            self.full[class] = self.count[class] >= nr_requests;
        }
    }

    /// The hard cap per class: 3/2 of `nr_requests`.
    pub(crate) fn hard_cap(nr_requests: u32) -> u32 {
        3 * nr_requests / 2
    }

    pub(crate) fn congestion_on(&self) -> u32 {
        let n = self.nr_requests;
        (n - n / 8 + 1).min(n)
    }

    /// Below this count a congested class clears: 103 of 128 in 2.6.18 and every RHEL 4,
    /// 111 in vanilla 2.6.9 (host-mechanisms.md §2.4).
    pub(crate) fn congestion_off(&self) -> u32 {
        self.kernel.congestion_off(self.nr_requests)
    }

    /// Marks `class` congested or not, counting a flip.
    fn set_congested(&mut self, class: usize, congested: bool) {
        if self.congested[class] != congested {
            self.congested[class] = congested;
            self.congestion_flips += 1;
        }
    }

    // Hot from the simulator's crate (several calls per I/O): inline there.
    #[inline]
    pub(crate) fn is_congested(&self, class: usize) -> bool {
        // 2.4 and blk-mq have no congestion state (linux-2.4-elevator.md §5).
        !self.is_2_4() && self.rules != PoolRules::BlkMq && self.congested[class]
    }

    fn is_batching(&self, process: ProcessId, now: Instant) -> bool {
        self.batchers.get(&process).is_some_and(|batcher| {
            batcher.remaining == BATCH_REQUESTS
                || (batcher.remaining > 0 && now < batcher.since + BATCH_TIME)
        })
    }

    /// `ioc_set_batching`: a process already batching keeps its remaining allowance and its
    /// start time (spec legacy-vs-kernel.md row 17); only a fresh batcher gets 32 and now.
    fn make_batcher(&mut self, process: ProcessId, now: Instant) {
        if self.is_batching(process, now) {
            return;
        }
        self.batchers.insert(process, Batcher { remaining: BATCH_REQUESTS, since: now });
    }

    /// Tries to allocate one request of `class` for `process`.
    pub(crate) fn try_alloc(
        &mut self,
        class: usize,
        process: ProcessId,
        vote: MayQueue,
        now: Instant,
    ) -> bool {
        if vote == MayQueue::No {
            return false;
        }
        if self.rules == PoolRules::BlkMq {
            if self.count[class] >= self.nr_requests {
                return false;
            }
            self.count[class] += 1;
            return true;
        }
        if self.is_2_4() {
            // §5: any free request goes to whoever asks, sleepers or not.
            if self.count[class] >= self.nr_requests {
                return false;
            }
            self.count[class] += 1;
            return true;
        }
        let count = self.count[class];
        if count + 1 >= self.congestion_on() {
            if count + 1 >= self.nr_requests {
                if !self.full[class] {
                    self.make_batcher(process, now);
                    self.full[class] = true;
                } else if vote != MayQueue::Must && !self.is_batching(process, now) {
                    return false;
                }
            }
            self.set_congested(class, true);
        }
        if count >= Self::hard_cap(self.nr_requests) {
            return false;
        }
        self.count[class] += 1;
        if self.is_batching(process, now)
            && let Some(batcher) = self.batchers.get_mut(&process)
        {
            batcher.remaining -= 1;
        }
        true
    }

    /// Records that `process` waits for a request of `class`.
    pub(crate) fn wait(&mut self, class: usize, process: ProcessId) {
        if !self.waiters[class].contains(&process) {
            self.waiters[class].push_back(process);
        }
    }

    /// 2.4: records that `process` waits for a request of `class` (not yet asleep: its
    /// unplug is about to run the request function).
    pub(crate) fn wait_2_4(&mut self, class: usize, process: ProcessId, now: Instant) {
        let waiters = &mut self.waiters_2_4[class];
        match waiters.iter_mut().find(|waiter| waiter.process == process) {
            // A woken waiter that lost the race joins again, not yet asleep.
            Some(waiter) => waiter.asleep = false,
            None => waiters.push(Waiter2_4 { process, since: now, asleep: false }),
        }
    }

    /// Whether anyone waits.
    pub(crate) fn waiter_count(&self) -> usize {
        self.waiters[0].len()
            + self.waiters[1].len()
            + self.waiters_2_4[0].len()
            + self.waiters_2_4[1].len()
    }

    /// 2.4: the request function the waiters' unplug ran has finished; whoever still has no
    /// request goes to sleep now (their wait restarts the 1 s timeout).
    pub(crate) fn sleep_waiters_2_4(&mut self, now: Instant) {
        for waiters in &mut self.waiters_2_4 {
            for waiter in waiters.iter_mut().filter(|waiter| !waiter.asleep) {
                waiter.asleep = true;
                waiter.since = now;
            }
        }
    }

    /// 2.4: moves to `woken` every sleeper whose 1 s timeout has passed by `now` (RHEL 3).
    pub(crate) fn expire_waiters_2_4(&mut self, now: Instant, woken: &mut VecDeque<ProcessId>) {
        if self.rules != (PoolRules::Linux2_4 { timed_wait: true }) {
            return;
        }
        for waiters in &mut self.waiters_2_4 {
            waiters.retain(|waiter| {
                let expired = waiter.asleep && now >= waiter.since + POOL_WAIT_2_4;
                if expired {
                    woken.push_back(waiter.process);
                }
                !expired
            });
        }
    }

    /// 2.4: when the next sleeper's timeout ends, if anyone sleeps (RHEL 3).
    pub(crate) fn next_timeout_2_4(&self) -> Option<Instant> {
        if self.rules != (PoolRules::Linux2_4 { timed_wait: true }) {
            return None;
        }
        self.waiters_2_4
            .iter()
            .flatten()
            .filter(|waiter| waiter.asleep)
            .map(|waiter| waiter.since + POOL_WAIT_2_4)
            .min()
    }

    /// 2.4's `blkdev_release_request`: one request of `class` back; a waiter not yet asleep
    /// takes it, and a free that leaves `batch_requests` free wakes every sleeper of the
    /// direction (§5). Appends the woken to `woken`.
    fn free_2_4(&mut self, class: usize, woken: &mut VecDeque<ProcessId>) {
        self.count[class] = self.count[class].checked_sub(1).expect("pool count underflow");
        let free = self.nr_requests - self.count[class].min(self.nr_requests);
        let waiters = &mut self.waiters_2_4[class];
        if free >= batch_requests_2_4(self.nr_requests) {
            woken.extend(waiters.drain(..).map(|waiter| waiter.process));
        } else if let Some(position) = waiters.iter().position(|waiter| !waiter.asleep) {
            woken.push_back(waiters.remove(position).process);
        }
    }

    /// Returns one request of `class`; says which waiter (if any) may now try again.
    /// Returns one request of `class` under the pool's rules; appends whoever may now try
    /// again to `woken`.
    pub(crate) fn release(&mut self, class: usize, now: Instant, woken: &mut VecDeque<ProcessId>) {
        if self.is_2_4() {
            self.free_2_4(class, woken);
            return;
        }
        if self.rules == PoolRules::BlkMq {
            // Deviation: `sbitmap_queue` wakes waiters in batches of `wake_batch` frees; here
            // every free wakes one, who retries at once.
            self.count[class] = self.count[class].checked_sub(1).expect("pool count underflow");
            woken.extend(self.waiters[class].pop_front());
            return;
        }
        if let Some(process) = self.free(class, now) {
            woken.push_back(process);
        }
    }

    /// 2.6: returns one request of `class`; says which waiter (if any) may now try again.
    pub(crate) fn free(&mut self, class: usize, now: Instant) -> Option<ProcessId> {
        self.count[class] = self.count[class].checked_sub(1).expect("pool count underflow");
        if self.count[class] < self.congestion_off() {
            self.set_congested(class, false);
        }
        // The kernel's test is `count + 1 <= nr_requests`: room for one more.
        if self.count[class] < self.nr_requests {
            self.full[class] = false;
            let woken = self.waiters[class].pop_front()?;
            self.make_batcher(woken, now);
            return Some(woken);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P1: ProcessId = ProcessId(1);
    const P2: ProcessId = ProcessId(2);

    // Proves the flip count moves exactly when a congestion mark flips: not on allocations
    // below 113 of 128 nor above it, once at 113, not on frees down to 103, once below it.
    #[test]
    fn congestion_flips_count_mark_changes_only() {
        let mut pool = RequestPool::new(128, PoolSplit::ByDirection);
        let now = Instant::ZERO;
        for _ in 0..112 {
            assert!(pool.try_alloc(0, P1, MayQueue::May, now));
        }
        assert_eq!((pool.congestion_flips, pool.is_congested(0)), (0, false));
        for _ in 0..5 {
            assert!(pool.try_alloc(0, P1, MayQueue::May, now));
        }
        assert_eq!((pool.congestion_flips, pool.is_congested(0)), (1, true));
        while pool.count[0] > 103 {
            pool.free(0, now);
        }
        assert_eq!((pool.congestion_flips, pool.is_congested(0)), (1, true));
        pool.free(0, now);
        assert_eq!((pool.congestion_flips, pool.is_congested(0)), (2, false));
        pool.set_nr_requests(64);
        assert_eq!((pool.congestion_flips, pool.is_congested(0)), (3, true), "102 ≥ 57");
    }

    // Proves the thresholds the spec gives for nr_requests = 128.
    #[test]
    fn thresholds_for_128() {
        let mut pool = RequestPool::new(128, PoolSplit::ByDirection);
        assert_eq!(pool.congestion_on(), 113);
        assert_eq!(pool.congestion_off(), 103);
        pool.kernel = KernelVersion::Linux2_6_9;
        assert_eq!(pool.congestion_off(), 111);
        pool.kernel = KernelVersion::Rhel4;
        assert_eq!(pool.congestion_off(), 103);
        assert_eq!(RequestPool::hard_cap(128), 192);
    }

    // Proves the full-queue rule: the first process to fill the pool becomes a batcher and may
    // go on (up to 32 more within 20 ms); a second process is refused; the hard cap holds.
    #[test]
    fn the_first_to_fill_the_pool_batches_and_others_wait() {
        let mut pool = RequestPool::new(128, PoolSplit::ByDirection);
        let now = Instant::ZERO;
        for _ in 0..127 {
            assert!(pool.try_alloc(0, P1, MayQueue::May, now));
        }
        assert!(pool.is_congested(0));
        // The 128th allocation finds the pool full: P1 becomes a batcher.
        assert!(pool.try_alloc(0, P1, MayQueue::May, now));
        assert!(!pool.try_alloc(0, P2, MayQueue::May, now), "a non-batcher is refused");
        assert!(pool.try_alloc(0, P2, MayQueue::Must, now), "the scheduler's MUST overrides");
        // P1 used one of its 32 on the 128th; 31 remain, and its window is 20 ms.
        let mut granted = 0;
        while pool.try_alloc(0, P1, MayQueue::May, now) {
            granted += 1;
        }
        assert_eq!(granted, 31);
        assert!(!pool.try_alloc(0, P1, MayQueue::Must, now) || pool.count[0] <= 192);
        // The other direction is untouched.
        assert!(pool.try_alloc(1, P2, MayQueue::May, now));
    }

    // Proves the hard cap of 3/2 nr_requests holds even for MUST votes.
    #[test]
    fn the_hard_cap_holds() {
        let mut pool = RequestPool::new(8, PoolSplit::ByDirection);
        let mut granted = 0;
        while pool.try_alloc(0, P1, MayQueue::Must, Instant::ZERO) {
            granted += 1;
        }
        assert_eq!(granted, 12);
    }

    // Proves a freed request wakes one waiter, in FIFO order, and clears the marks.
    #[test]
    fn freeing_wakes_one_waiter_in_order() {
        let mut pool = RequestPool::new(4, PoolSplit::ByDirection);
        let now = Instant::ZERO;
        for _ in 0..4 {
            assert!(pool.try_alloc(0, P1, MayQueue::May, now));
        }
        pool.wait(0, P2);
        pool.wait(0, ProcessId(3));
        assert_eq!(pool.free(0, now), Some(P2));
        assert_eq!(pool.free(0, now), Some(ProcessId(3)));
        assert_eq!(pool.free(0, now), None);
        assert_eq!(pool.waiter_count(), 0);
    }

    // Proves the batching window closes after 20 ms once a request has been used.
    #[test]
    fn batching_expires_after_20ms() {
        let mut pool = RequestPool::new(4, PoolSplit::ByDirection);
        let start = Instant::ZERO;
        for _ in 0..4 {
            assert!(pool.try_alloc(0, P1, MayQueue::May, start));
        }
        let later = start + Duration::from_millis(21);
        assert!(!pool.try_alloc(0, P1, MayQueue::May, later));
    }

    // Proves row 17 (`ll_rw_blk.c:ioc_set_batching` returns at once for a process for which
    // `ioc_batching` holds): P1 fills a 128-request pool at 0 ms (batcher, 32 allowed, one
    // used on the 128th), uses 10 more by 5 ms, then waits and is woken at 10 ms. The kernel keeps
    // its 21 remaining and its 0 ms start, so at 21 ms (past 0 + 20 ms) it is refused; a reset
    // at the wake-up would have let it go on until 30 ms.
    #[test]
    fn waking_a_batcher_keeps_its_allowance_and_start() {
        let mut pool = RequestPool::new(128, PoolSplit::ByDirection);
        let start = Instant::ZERO;
        for _ in 0..128 {
            assert!(pool.try_alloc(0, P1, MayQueue::May, start));
        }
        let at_5ms = start + Duration::from_millis(5);
        for _ in 0..10 {
            assert!(pool.try_alloc(0, P1, MayQueue::May, at_5ms));
        }
        assert_eq!(pool.batchers[&P1].remaining, 21);
        pool.wait(0, P1);
        // Free back below nr_requests: 138 allocated, 11 frees leave 127 < 128, waking P1.
        let at_10ms = start + Duration::from_millis(10);
        let mut woken = None;
        for _ in 0..11 {
            woken = woken.or(pool.free(0, at_10ms));
        }
        assert_eq!(woken, Some(P1));
        assert_eq!(pool.batchers[&P1].remaining, 21, "allowance kept");
        assert_eq!(pool.batchers[&P1].since, start, "start time kept");
        // P2 fills the pool again (127 → 128); P1 is then refused once 20 ms since its 0 ms
        // start have gone, though only 11 ms passed since its wake-up.
        assert!(pool.try_alloc(0, P2, MayQueue::May, at_10ms));
        let at_21ms = start + Duration::from_millis(21);
        assert!(!pool.try_alloc(0, P1, MayQueue::May, at_21ms));
    }

    // Proves blk-mq's scheduler tags: one class for reads and writes, exactly nr_requests of
    // them (no batcher past the limit, no MUST override), the scheduler's refusal honoured, and
    // each free waking the longest waiter.
    #[test]
    fn blk_mq_tags_are_one_hard_pool() {
        let mut pool = RequestPool::new(8, PoolSplit::Shared).with_rules(PoolRules::BlkMq);
        let now = Instant::ZERO;
        let read = PoolSplit::Shared.class(Op::Read, RequestFlags::SYNC);
        let write = PoolSplit::Shared.class(Op::Write, RequestFlags::NONE);
        assert_eq!(read, write);
        assert!(!pool.try_alloc(read, P1, MayQueue::No, now));
        for _ in 0..8 {
            assert!(pool.try_alloc(read, P1, MayQueue::May, now));
        }
        assert!(!pool.try_alloc(write, P1, MayQueue::Must, now));
        assert!(!pool.is_congested(read));
        pool.wait(write, P2);
        pool.wait(write, ProcessId(3));
        let mut woken = VecDeque::new();
        pool.release(read, now, &mut woken);
        assert_eq!(woken, [P2]);
        assert!(pool.try_alloc(write, P2, MayQueue::May, now));
    }

    #[test]
    fn sync_split_files_sync_writes_with_reads() {
        let split = PoolSplit::BySync;
        assert_eq!(split.class(Op::Read, RequestFlags::SYNC), 0);
        assert_eq!(split.class(Op::Write, RequestFlags::SYNC), 0);
        assert_eq!(split.class(Op::Write, RequestFlags::NONE), 1);
        assert_eq!(PoolSplit::ByDirection.class(Op::Write, RequestFlags::SYNC), 1);
    }
}
