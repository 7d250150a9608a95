//! cfq: per-process time slices, ordered by I/O priority, with idling for the next sync request.
//!
//! Follows Linux 2.6.18 `block/cfq-iosched.c` (time-sliced "CFQ v3", the default scheduler from
//! 2.6.18 on) and `Documentation/block/ioprio.txt`, at HZ=1000, as legacy-schedulers.md §5–§6
//! describe it; as profiles, Red Hat's Linux 2.6.18-92.el5, Linux 2.6.18-194.el5 and
//! Linux 2.6.18-194.8.1.el5 versions of that file (see "Profiles" below).
//!
//! Every process gets a **sync queue** for its reads; buffered writes go to **async queues**
//! shared per priority. A queue carries its issuer's I/O priority: class real-time, best-effort
//! or idle, level 0 (highest) to 7. cfq serves one queue at a time, the *active* queue, for a
//! **time slice** whose length grows with priority (sync 180 ms at level 0 down to 40 ms at
//! level 7, async 72 down to 16 ms); an async queue also ends its slice after `2 ·
//! slice_async_rq · (8 − level)` requests. Each dispatch round moves up to `quantum` requests
//! from the active queue, the best next one by sector (backward seeks up to `back_seek_max`,
//! costed `back_seek_penalty` times) unless the oldest has waited past its FIFO expiry (checked
//! once per slice).
//!
//! When a sync queue runs dry inside its slice, cfq **idles** up to `slice_idle` (2 ms for a
//! seeky process) for that process's next request, which a sequential reader sends almost at
//! once: concurrent sequential readers then stream instead of seeking between each other. A
//! process whose mean think time exceeds `slice_idle` loses its idle window; on a device that
//! queues (more than 4 requests in the driver at once, `hw_tag`) a process whose mean seek
//! exceeds 64 MiB does too.
//!
//! Queues wait for service on round-robin lists (see `rr.rs`): real-time queues on the current
//! round, best-effort queues on a list per level, idle-class queues on their own. When the
//! current round is empty it is refilled from one level list, chosen by a window of levels that
//! grows one level per pass (`0 | 0 1 | 0 1 2 | ...`), so level k gets `8 − k` turns for every
//! one of level 7. A queue that still has requests out when its slice ends waits on the busy
//! list instead, which is served only when no level list has a queue. Idle-class queues are
//! served only when nothing else is queued and no other request has completed for 100 ms; a
//! sync request of any other class preempts an active idle-class queue (which, see below,
//! almost never is active).
//!
//! # How the kernel's calls map onto ours
//!
//! * **Dispatch rounds.** 2.6.18 is asked for work only when the block layer's dispatch list is
//!   empty, and then moves up to `quantum` requests onto it, sorted into the one-way sweep. Our
//!   queue asks for one request per call, also only when its dispatch list is empty. So cfq
//!   keeps a staged list (a [`DispatchList`] with the same sorted insertion): when it is empty a
//!   call runs a whole 2.6.18 round into it, and every call hands out its head. Staged requests
//!   count as queued and are drained with the rest; they take no bio merges (on the kernel's
//!   dispatch list a request is out of cfq's hash and tree); the queue appends them as given
//!   ([`DispatchInsert::Tail`]). The head
//!   position for request choice (`last_sector`) is the end of the staged list's tail.
//! * **Timers.** Where 2.6.18 arms the idle-slice or the idle-class timer, `dispatch` answers
//!   [`Dispatch::Idle`] until the timer's jiffy. A timer whose jiffy has come is run first thing
//!   in the next call of any hook, with its own jiffy as the time, which is exact because
//!   nothing else happened in between.
//! * **Queue runs.** 2.6.18's queue runs after every completion, when a request arrives at an
//!   empty scheduler, and when cfq kicks itself (an arrival for the queue it idles on, a
//!   preemption, a timer); an arrival at a busy scheduler does *not* run it. Our queue calls
//!   `dispatch` after every arrival, so after an `Idle` answer cfq repeats that answer until one
//!   of those events happens or the wake-up comes. So, as in 2.6.18, an arrival at a busy
//!   scheduler neither re-arms the idle timer (an arrival at an empty one does) nor gets a
//!   best-effort request past the grace timer an idle-class queue waits on.
//! * **Waiting for requests in flight.** An active queue with nothing queued but requests at
//!   the device makes 2.6.18 dispatch nothing until a completion, with no timer; cfq answers
//!   `Idle` for up to one second (a completion comes long before).
//! * `cx.in_flight` is the kernel's `rq_in_driver`; a queue's requests "on dispatch" are those
//!   staged or at the device. `may_queue` answers `Must` once per slice to the process cfq idles
//!   for; `process_exited` is the task's exit: the active slice ends if it belongs to one of
//!   the process's queues, and its sync queue is freed once its last request completes. The
//!   queue keeps its idle window: what stops cfq idling for a dead process is the idle-arming
//!   test, which finds the task gone, so a dead process's queue with requests left is served
//!   to the end of its slice (2.6.18 `exit_io_context` clears only the context's task).
//! * **Shared helpers** (`crate::common`, one copy for the schedulers whose kernels agree): a
//!   queue's class and level come from `common::queue_priority` (2.6.18's
//!   `cfq_init_prio_data`: class none is best-effort at the level its nice value maps to, the
//!   idle class is level 7), and the async queue of a class and level is
//!   `common::async_queue_slot` (2.6.18 keys async queues by priority). The request choice
//!   inside a queue, `choose_first` (`cfq_choose_req`), puts a sync request before an async
//!   one and otherwise applies the shared seek rule `common::seek_prefers_first` with the
//!   `back_seek_max` and `back_seek_penalty` tunables.
//!
//! # Profiles
//!
//! Red Hat changed `cfq-iosched.c` at 92.el5, 194.el5, 194.8.1.el5 (and later, past what the
//! study needs). One module serves every build; a [`Profile`] of switches is consulted at the
//! few places that differ. Source tags are legacy-vs-kernel.md's (C92 = 2.6.18-92.el5, C194 =
//! 2.6.18-194.el5, C194.8 = 2.6.18-194.8.1.el5; R2–R7 are its RHEL 5 gaps):
//!
//! | switch | source | what changes |
//! |---|---|---|
//! | `kick_when_driver_empty` | C92 (R6) | after a completion cfq kicks the queue when the driver is empty, not after an idle wait it could not arm; the driver here runs the queue after every completion, so this changes nothing observable |
//! | `cooperating_queues` | C194 (R3) | an active sync queue with nothing queued yields to the busy queue of its level whose next request is within its mean seek (4 MiB before the mean is valid) of the head — even with requests out; the two queues are set to merge (fewer processes into more) and each process moves at its next sync request; a merged queue seeky for over 1 s (`CFQQ_COOP_TOUT`) is split at its processes' next requests; no idle wait at a completion while a cooperator exists |
//! | `queue_seek_stats` | C194 (R4) | seek statistics per queue, measured from the queue's last sync request (0 for the first), seeky above 8192 sectors (4 MiB) for the idle window on a queuing device and the 2 ms wait |
//! | `position_at_activation` | C194 (R5) | request choice measures from the end of the request the driver last activated, not from the staged list's tail |
//! | `kick_large_or_busy` | C194 (R6) | an arrival for the queue cfq idles on runs the queue only if larger than a page or other queues are busy |
//! | `may_queue_async_lookup` | C194 | `may_queue` looks up the async queue, so never answers `Must` |
//! | `async_queues` | C194 / C194.8 (R7) | one async queue per process (194.el5, 194.3.1) or per (class, level) (194.8.1 on, and here vanilla) |
//! | `sync_writes` | C194.8 (R2) | writes flagged sync (O_DIRECT) go to the process's sync queue |
//!
//! | profile | registered as | builds |
//! |---|---|---|
//! | [`Profile::VANILLA`] | `cfq` (`cfq@2.6.18`) | 2.6.18, 2.6.18-8.el5 (RHEL 5.0, 5.1) |
//! | [`Profile::RHEL5_92`] | `cfq@2.6.18-92.el5` (`cfq@rhel5.2`) | 92.el5 to 164.el5 (RHEL 5.2–5.4) |
//! | [`Profile::RHEL5_194`] | `cfq@2.6.18-194.el5` | 194.el5, 194.3.1.el5 (RHEL 5.5 GA) |
//! | [`Profile::RHEL5_194_8`] | `cfq@2.6.18-194.8.1.el5` (`cfq@rhel5.5`, `cfq@2.6.18-194.11.4.el5`) | 194.8.1.el5 and later 5.5 errata |
//!
//! A host whose kernel names a RHEL 5 build runs that build's profile for a bare `cfq`.
//!
//! # Tunables
//!
//! | name | unit | default | range | meaning |
//! |---|---|---|---|---|
//! | `quantum` | requests | 4 | 1..=2147483647 | most requests moved per dispatch round |
//! | `queued` | requests | 8 | 1..=2147483647 | exposed by 2.6.18 but never used |
//! | `fifo_expire_sync` | ms | 125 | 1..=2147483647 | FIFO expiry of a sync queue's requests |
//! | `fifo_expire_async` | ms | 250 | 1..=2147483647 | FIFO expiry of an async queue's requests |
//! | `back_seek_max` | KiB | 16384 | 0..=2147483647 | longest backward seek to a queue's next request |
//! | `back_seek_penalty` | factor | 2 | 1..=2147483647 | cost of a backward seek against a forward one |
//! | `slice_sync` | ms | 100 | 1..=2147483647 | base slice of a sync queue (level 4) |
//! | `slice_async` | ms | 40 | 1..=2147483647 | base slice of an async queue (level 4) |
//! | `slice_async_rq` | requests | 2 | 1..=2147483647 | base of an async queue's requests per slice |
//! | `slice_idle` | ms | 8 | 0..=2147483647 | idle wait for a sync queue's next request; 0 never idles |
//!
//! # 2.6.18 behaviours kept on purpose
//!
//! * Only **reads** are sync. 2.6.18's test for a sync write never matches, so O_DIRECT and
//!   O_SYNC writes go to the shared async queues (fixed in 2.6.20, and in RHEL 5 from
//!   194.8.1.el5: the `sync_writes` switch).
//! * The level window gives a best-effort level k `8 − k` turns per cycle whatever other levels
//!   are busy: two saturating readers at levels 0 and 7 get 8 slices of 180 ms for each slice
//!   of 40 ms, a device-time ratio of 36:1, not the 4.5:1 of their slice lengths.
//! * Real-time queues wait on the current round sorted by when they were last served, like the
//!   best-effort queues spliced into it: a real-time queue goes first only when the round is
//!   refilled, not ahead of best-effort queues already in it.
//! * Preemption is all but dead code. Only an active idle-class queue can be preempted (the
//!   other rules need a flag that only the active queue carries), and an idle-class queue ends
//!   its slice right after its one request per round, so an arrival finds one active only if a
//!   process turned idle-class while its queue was being served. When it does happen, the
//!   queues re-filed as preempted go *before the tail* of their lists (at the head only when a
//!   list held at most one queue), which is what the kernel's list call does, whatever its
//!   comment says; and the slice the preempting queue is promised is reset by its activation,
//!   so it gets a full one.
//! * A real-time request does not preempt a running best-effort slice (that came in 2.6.29): it
//!   waits for the slice to end, up to 180 ms.
//! * The idle wait is always `slice_idle` (or 2 ms when seeky): the kernel's cap by the
//!   remaining slice compares against an absolute time and never binds.
//! * An active queue whose slice never started (its first request not yet dispatched) counts as
//!   expired at a completion, as 2.6.18's `slice_end == 0` test does.
//! * The idle window is not re-enabled or disabled for async queues (it is set when they are
//!   created) and an idle-class queue that gets sync requests re-evaluates it like any other.
//! * After the idle-slice timer fires with no other queue busy, cfq does nothing: the queue it
//!   idled on stays active until its next request, another queue's arrival or the slice end.
//! * Four-request `hw_tag` detection is permanent.
//! * The `queued` tunable is kept for sysfs fidelity and has no effect.
//!
//! # Deviations from Linux
//!
//! * HZ is fixed at 1000 (one jiffy is one millisecond). Times compare in jiffies, strictly
//!   after for expiry, as the kernel does; jiffy 0 is a real time here, so "never served" is
//!   kept apart from "served at jiffy 0".
//! * Async queues are one per (class, level) — RT 0–7, BE 0–7, idle — as from 2.6.23 and in
//!   RHEL 5 from 194.8.1.el5. Vanilla 2.6.18 (and RHEL 5 up to 164.el5) looked them up by
//!   (async key, ioprio value), where a process with no explicit priority (value 0) matched
//!   any existing async queue.
//! * A front merge that makes the grown request touch its neighbour re-sorts it and re-runs the
//!   next-request choice before the two fuse; 2.6.18 skips `elv_merged_request` when the front
//!   merge fuses (row 11). The block layer (`core/src/queue.rs`) tells the scheduler of the
//!   merge before it tries the fusion, so the fix belongs there; it differs only after a front
//!   merge that closes a gap.
//! * 194.el5's cooperator search uses a per-level tree of busy queues keyed by each queue's
//!   next request, re-keyed only at some events, and checks first the tree node where the
//!   search ended (either neighbour of the head). Here every busy queue of the level is looked
//!   at with its current next request, and the nearer neighbour is checked first; queues whose
//!   next requests start at the same sector are all candidates (the kernel's tree keeps one).
//! * The per-process state of 194.el5 follows the request's issuer at insertion, where the
//!   kernel decides at request allocation (`cfq_set_request`); the order of one process's
//!   requests is the same. A process that issues I/O after exiting finds its old sync queue
//!   (2.6.18's pid-keyed lookup) in every profile; 194.el5 would give it a new one.
//! * A queue's priority is its requests' effective priority ([`IoPriority::effective_class`],
//!   level; idle is level 7): a sync queue takes a new priority when its process's next
//!   request carries one (2.6.18 notices `ioprio_set` at the next request). The temporary
//!   boost of a process holding a filesystem-exclusive resource is not modelled.
//! * Front merges are looked up among all queued requests; 2.6.18 cfq searched only the
//!   submitting process's own queue. Back merges use the block layer's index (2.6.18: cfq's
//!   64-bucket hash, same result except when several requests end at one sector). A queue
//!   built with the core's default configuration requires equal sync-ness for a merge; the
//!   simulator's legacy queues do not, as 2.6.18 did not (`QueueConfig::merges_ignore_sync`).
//! * The sort boundary of the staged list moves when cfq hands a request out, not when the
//!   driver takes one from the block layer's list (they differ only after a requeue).
//! * Allocation failures (`must_alloc`, the "starved" wake-up) cannot happen here.
//! * Seek and think-time arithmetic saturate instead of wrapping.

mod process;
mod rr;
#[cfg(test)]
mod tests;

use std::cell::Cell;
use std::collections::BTreeMap;

use elevator_core::tunable::INT_MAX;
use elevator_core::{
    Completion, Counter, Ctx, Dispatch, DispatchInsert, DispatchList, HZ, IdList, Instant, IoClass,
    IoPriority, ListLinks, MayQueue, MergeKind, MergeLookups, Op, ProcessId, Request, RequestId,
    Scheduler, Sector, SideTable, TunableError, TunableSpec, Unit,
};

use self::process::{Process, SeekStats};
use self::rr::{LEVELS, ListId, QueueIndex, RoundRobin};
use crate::common::{self, ASYNC_QUEUE_SLOTS, queue_priority};
use crate::sorted::SortedMap;

/// The kernel's name.
pub const NAME: &str = "cfq";

/// One line for `elevator list`.
pub const SUMMARY: &str =
    "per-process time slices ordered by I/O priority, idling for each reader's next request";

/// A default of `jiffies`, raised to one jiffy as the kernel does when HZ makes it 0.
const fn at_least_one_jiffy(jiffies: u64) -> u64 {
    if jiffies == 0 { 1 } else { jiffies }
}

/// cfq's tunables, in 2.6.18 sysfs order, with the 2.6.18 defaults at HZ=1000.
pub const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "quantum",
        unit: Unit::Requests,
        default: 4,
        min: 1,
        max: INT_MAX,
        help: "most requests moved from the active queue per dispatch round",
    },
    TunableSpec {
        name: "queued",
        unit: Unit::Requests,
        default: 8,
        min: 1,
        max: INT_MAX,
        help: "exposed by 2.6.18 but never used",
    },
    TunableSpec {
        name: "fifo_expire_sync",
        unit: Unit::Milliseconds,
        default: (HZ / 8) as i64,
        min: 1,
        max: INT_MAX,
        help: "FIFO expiry of a sync queue's requests, from their creation",
    },
    TunableSpec {
        name: "fifo_expire_async",
        unit: Unit::Milliseconds,
        default: (HZ / 4) as i64,
        min: 1,
        max: INT_MAX,
        help: "FIFO expiry of an async queue's requests, from their creation",
    },
    common::BACK_SEEK_MAX,
    common::BACK_SEEK_PENALTY,
    TunableSpec {
        name: "slice_sync",
        unit: Unit::Milliseconds,
        default: (HZ / 10) as i64,
        min: 1,
        max: INT_MAX,
        help: "time slice of a sync queue at level 4 (180..40 ms over levels 0..7)",
    },
    TunableSpec {
        name: "slice_async",
        unit: Unit::Milliseconds,
        default: at_least_one_jiffy(HZ / 25) as i64,
        min: 1,
        max: INT_MAX,
        help: "time slice of an async queue at level 4 (72..16 ms over levels 0..7)",
    },
    TunableSpec {
        name: "slice_async_rq",
        unit: Unit::Requests,
        default: 2,
        min: 1,
        max: INT_MAX,
        help: "async requests per slice at level 4 are 8 times this (2·n·(8−level))",
    },
    TunableSpec {
        name: "slice_idle",
        unit: Unit::Milliseconds,
        default: at_least_one_jiffy(HZ / 125) as i64,
        min: 0,
        max: INT_MAX,
        help: "idle wait for a sync queue's next request; 0 never idles",
    },
];

/// `CFQ_SLICE_SCALE`: each level away from 4 changes a slice by a fifth of the base slice.
const SLICE_SCALE: i64 = 5;
/// `CFQ_IDLE_GRACE`: idle-class queues wait this long after any other request completed.
const IDLE_GRACE_JIFFIES: u64 = HZ / 10;
/// The idle wait for a seeky process (2 ms).
const SEEKY_IDLE_JIFFIES: u64 = 2 * HZ / 1000;
/// More requests than this in the driver at once means the device queues (`hw_tag`).
const HW_TAG_IN_FLIGHT: u32 = 4;
/// How long to wait for a completion that 2.6.18 waits for without a timer.
const COMPLETION_WAIT_JIFFIES: u64 = HZ;

/// The slice of a queue at `level` whose class slice is `base_jiffies`: the base at level 4,
/// a fifth of it more per level above, less per level below (`cfq_prio_to_slice`).
pub(crate) const fn slice_jiffies(base_jiffies: u64, level: u8) -> u64 {
    // Tunables are at most INT_MAX, so this cannot overflow, and the result stays positive.
    let base = base_jiffies as i64;
    (base + base / SLICE_SCALE * (4 - level as i64)) as u64
}

/// How many requests an async queue at `level` may dispatch in one slice
/// (`cfq_prio_to_maxrq`): 32 at level 0 down to 4 at level 7 with the default 2.
pub(crate) const fn max_async_requests(slice_async_rq: u64, level: u8) -> u64 {
    2 * slice_async_rq * (LEVELS - level) as u64
}

/// Which of two candidates the head at `last` should serve first (`cfq_choose_req`, lifted from
/// anticipatory): a sync request beats an async one; then the shared seek rule
/// (`common::seek_prefers_first`): the one nearer ahead of the head, where a request up to
/// `back_max_sectors` behind costs `penalty` times its distance and one further behind "wraps"
/// and loses to any that does not; of two that wrap, the lower sector; on equal cost, the
/// higher sector.
pub(crate) fn choose_first(
    last: Sector,
    back_max_sectors: u64,
    penalty: u64,
    first: (Sector, bool),
    second: (Sector, bool),
) -> bool {
    let ((first_start, first_sync), (second_start, second_sync)) = (first, second);
    if first_sync != second_sync {
        return first_sync;
    }
    common::seek_prefers_first(last, back_max_sectors, penalty, first_start, second_start)
}

/// Where a build's cfq differs from vanilla 2.6.18: one switch per change, each tagged with
/// its source commit in legacy-vs-kernel.md (see "Profiles" in the module header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// C92 (R6): a completion kicks the queue whenever the driver holds no request, and no
    /// longer after an idle wait that could not be armed.
    pub kick_when_driver_empty: bool,
    /// C194 (R3): an empty active sync queue yields to a close cooperator, the two queues
    /// merge, and a merged queue splits after `CFQQ_COOP_TOUT` (1 s) of seeky I/O.
    pub cooperating_queues: bool,
    /// C194 (R4): seek statistics per queue, from the queue's last request (0 for the first
    /// sample), seeky above 8192 sectors (4 MiB).
    pub queue_seek_stats: bool,
    /// C194 (R5): the head position request choice measures from is the end of the last
    /// request the driver activated (`last_position`).
    pub position_at_activation: bool,
    /// C194 (R6): an arrival for the queue cfq idles on runs the queue only if it is larger
    /// than a page or other queues are busy (`must_dispatch` is set either way).
    pub kick_large_or_busy: bool,
    /// C194: `cfq_may_queue` looks up `cic->cfqq[rw & REQ_RW_SYNC]` with a bare direction,
    /// always the async queue, which is never idled on: it never answers MUST.
    pub may_queue_async_lookup: bool,
    /// How async queues are shared (R7).
    pub async_queues: AsyncQueues,
    /// C194.8 (R2): a write flagged sync (`REQ_RW_SYNC`: O_DIRECT) goes to the process's sync
    /// queue (`rq_is_sync`).
    pub sync_writes: bool,
}

/// Whose buffered writes share an async queue (R7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncQueues {
    /// One per (class, level) (`cfq_async_queue_prio`, C194.8; vanilla too here, see
    /// "Deviations from Linux").
    PerPriority,
    /// One per process (`cic->cfqq[ASYNC]`, C194 and 194.3.1).
    PerProcess,
}

impl Profile {
    /// Vanilla 2.6.18 and 2.6.18-8.el5 (C8: the file is identical).
    pub const VANILLA: Profile = Profile {
        kick_when_driver_empty: false,
        cooperating_queues: false,
        queue_seek_stats: false,
        position_at_activation: false,
        kick_large_or_busy: false,
        may_queue_async_lookup: false,
        async_queues: AsyncQueues::PerPriority,
        sync_writes: false,
    };
    /// 2.6.18-92.el5 (RHEL 5.2) up to 164.el5.
    pub const RHEL5_92: Profile = Profile { kick_when_driver_empty: true, ..Profile::VANILLA };
    /// 2.6.18-194.el5 (RHEL 5.5 GA) and 194.3.1.el5.
    pub const RHEL5_194: Profile = Profile {
        kick_when_driver_empty: true,
        cooperating_queues: true,
        queue_seek_stats: true,
        position_at_activation: true,
        kick_large_or_busy: true,
        may_queue_async_lookup: true,
        async_queues: AsyncQueues::PerProcess,
        sync_writes: false,
    };
    /// 2.6.18-194.8.1.el5 and later 5.5 errata (194.11.4.el5, the iozone file server's).
    pub const RHEL5_194_8: Profile =
        Profile { async_queues: AsyncQueues::PerPriority, sync_writes: true, ..Profile::RHEL5_194 };

    /// Whether cfq files `request` as sync: in 2.6.18, reads and nothing else (its test for a
    /// sync write compares a bare direction with `WRITE_SYNC` and never matches); from
    /// 194.8.1.el5, reads and writes flagged sync.
    fn is_sync(self, request: &Request) -> bool {
        request.op == Op::Read || (self.sync_writes && request.flags.is_sync())
    }

    /// The mean seek distance above which a stream is seeky: 64 MiB per process (vanilla
    /// `CIC_SEEKY`), 4 MiB per queue from 194.el5 (`CFQQ_SEEK_THR`).
    fn seeky_mean_sectors(self) -> u64 {
        if self.queue_seek_stats { QUEUE_SEEKY_MEAN_SECTORS } else { process::SEEKY_MEAN_SECTORS }
    }
}

/// `CFQQ_SEEK_THR` (C194): a queue whose mean seek exceeds 8192 sectors (4 MiB) is seeky.
const QUEUE_SEEKY_MEAN_SECTORS: u64 = 8 * 1024;
/// `CFQQ_COOP_TOUT` (C194): a merged queue seeky for longer than this is split again.
const COOP_TIMEOUT_JIFFIES: u64 = HZ;
/// The page size `cfq_crq_enqueued` compares a request's bytes with (C194).
const PAGE_BYTES: u64 = 4096;

/// cfq's tunables in their working form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tunables {
    quantum: u64,
    queued: u64,
    /// FIFO expiry in jiffies, indexed `[async, sync]` like the kernel's.
    fifo_expire_jiffies: [u64; 2],
    back_seek_max_kib: u64,
    back_seek_penalty: u64,
    /// Base slices in jiffies, indexed `[async, sync]`.
    slice_jiffies: [u64; 2],
    slice_async_rq: u64,
    slice_idle_jiffies: u64,
}

impl Default for Tunables {
    fn default() -> Tunables {
        let default = |index: usize| TUNABLES[index].default as u64;
        Tunables {
            quantum: default(0),
            queued: default(1),
            fifo_expire_jiffies: [default(3), default(2)],
            back_seek_max_kib: default(4),
            back_seek_penalty: default(5),
            slice_jiffies: [default(7), default(6)],
            slice_async_rq: default(8),
            slice_idle_jiffies: default(9),
        }
    }
}

/// Whose requests a queue holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Owner {
    /// One process's sync requests (with cooperating queues, possibly other processes' too).
    Process(ProcessId),
    /// One process's async requests (194.el5's per-process async queues).
    ProcessAsync(ProcessId),
    /// Async requests of every process at one priority.
    Shared,
    /// A freed slot, waiting for reuse.
    Free,
}

/// One cfq queue (`cfq_queue`).
#[derive(Debug)]
struct CfqQueue {
    owner: Owner,
    /// Real-time, best-effort or idle (never none).
    class: IoClass,
    /// 0..=7; 7 for the idle class.
    level: u8,
    /// Queued requests by start sector.
    sort: SortedMap<Sector, RequestId>,
    /// Queued requests in arrival order.
    fifo: IdList,
    /// The request to serve next if the FIFO has not expired (`next_crq`).
    next_request: Option<RequestId>,
    /// Requests staged or at the device, indexed `[async, sync]`.
    on_dispatch: [u32; 2],
    /// The jiffy after which the slice is over; 0 until the slice's first dispatch.
    slice_end_jiffies: u64,
    /// When the queue last ran dry at a slice end or completion (`None`: never).
    service_last_jiffies: Option<u64>,
    /// On a round-robin list: it has queued requests.
    on_rr: bool,
    /// cfq idles waiting for this (active) queue's next request.
    wait_request: bool,
    /// Keep this queue active at the next dispatch even if its slice is over.
    must_dispatch: bool,
    /// The FIFO was looked at in this slice.
    fifo_expire: bool,
    /// Idling for this queue's next request pays.
    idle_window: bool,
    /// `may_queue` said `Must` in this slice already (interior: that hook reads `&self`).
    must_alloc_slice: Cell<bool>,
    /// The queue's seek statistics (194.el5 on; vanilla keeps them per process).
    seek: SeekStats,
    /// End of the queue's last sync request (0: none yet, as the kernel's test reads it).
    last_request_pos: Sector,
    /// Live processes whose sync queue this is.
    sync_refs: u32,
    /// References a planned merge added ahead of the processes moving in (`cfq_setup_merge`).
    merge_refs: u32,
    /// The queue its processes move to at their next request (`new_cfqq`).
    merge_into: Option<QueueIndex>,
    /// Shared by cooperating processes after a merge (`coop`).
    coop: bool,
    /// Since when a merged queue has been seeky (`seeky_start`).
    seeky_since_jiffies: Option<u64>,
}

impl CfqQueue {
    fn new(owner: Owner, class: IoClass, level: u8) -> CfqQueue {
        CfqQueue {
            owner,
            class,
            level,
            sort: SortedMap::new(),
            fifo: IdList::new(),
            next_request: None,
            on_dispatch: [0, 0],
            slice_end_jiffies: 0,
            service_last_jiffies: None,
            on_rr: false,
            wait_request: false,
            must_dispatch: false,
            fifo_expire: false,
            idle_window: class != IoClass::Idle,
            must_alloc_slice: Cell::new(false),
            seek: SeekStats::default(),
            last_request_pos: Sector(0),
            sync_refs: 0,
            merge_refs: 0,
            merge_into: None,
            coop: false,
            seeky_since_jiffies: None,
        }
    }

    /// Processes referring to it, counting those a planned merge will bring
    /// (`cfqq_process_refs`).
    fn process_refs(&self) -> u32 {
        self.sync_refs + self.merge_refs
    }

    /// Requests staged or at the device.
    fn dispatched(&self) -> u32 {
        self.on_dispatch[0] + self.on_dispatch[1]
    }

    /// A process's queue (`cfq_cfqq_class_sync`).
    fn is_process_queue(&self) -> bool {
        matches!(self.owner, Owner::Process(_))
    }

    /// Sync for slice length and the async cap: a process's queue, or one with sync requests
    /// out (`cfq_cfqq_sync`).
    fn is_sync(&self) -> bool {
        self.is_process_queue() || self.on_dispatch[1] > 0
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    slices: u64,
    slices_expired: u64,
    idle_waits: u64,
    idle_timeouts: u64,
    idle_class_waits: u64,
    preemptions: u64,
    fifo_expiries: u64,
    async_cap_expiries: u64,
    aliases: u64,
    sync_queues_created: u64,
    async_queues_created: u64,
    /// Requests filed into a process's sync queue and into an async queue.
    sync_requests: u64,
    async_requests: u64,
    /// 194.el5 on: an empty active queue yielded to a close cooperator; a process moved into
    /// the queue it was merged with; a merged queue was split.
    cooperator_switches: u64,
    queue_merges: u64,
    queue_splits: u64,
}

/// The cfq scheduler.
#[derive(Debug)]
pub struct Cfq {
    profile: Profile,
    tunables: Tunables,
    /// Every queue; freed slots are reused.
    queues: Vec<CfqQueue>,
    free_queues: Vec<QueueIndex>,
    /// Per-process contexts, which also find a process's sync queue.
    processes: BTreeMap<ProcessId, Process>,
    async_queues: [Option<QueueIndex>; ASYNC_QUEUE_SLOTS],
    lists: RoundRobin,
    /// Queues with queued requests (`busy_queues`).
    busy_queues: usize,
    active: Option<QueueIndex>,
    /// The process whose request the active slice dispatched first (`active_cic`).
    active_process: Option<ProcessId>,
    /// Requests dispatched in the current slice.
    dispatch_slice: u64,
    idle_slice_timer_jiffies: Option<u64>,
    idle_class_timer_jiffies: Option<u64>,
    /// End of the staged list's tail: the head position request choice measures from
    /// (vanilla).
    last_sector: Sector,
    /// End of the last request the driver activated (`last_position`, 194.el5 on).
    last_position: Sector,
    /// When a request of a non-idle queue last completed (`None`: none yet, which the kernel's
    /// boot-time jiffies make long ago).
    last_end_request_jiffies: Option<u64>,
    hw_tag: bool,
    /// Requests a round moved out, in the sweep order the kernel's dispatch list would hold.
    staged: DispatchList,
    /// Requests in the queues' sort trees.
    queued_count: usize,
    request_queue: SideTable<QueueIndex>,
    /// Creation jiffy of each queued request, as the FIFO compares them at a fusion.
    created_jiffies: SideTable<u64>,
    /// Whether each request is out of cfq (staged or at the device) and counted in its
    /// queue's `on_dispatch`. The queue also reports completions of requests that never
    /// entered cfq (a flush, a held request released ahead of one); those are ignored.
    out: SideTable<bool>,
    fifo_links: ListLinks,
    /// The kernel would run the queue now (see "Queue runs" in the module docs).
    run_pending: bool,
    /// The last `Idle` answer's wake-up, repeated until a queue run.
    idle_until: Option<Instant>,
    counters: Counters,
}

impl Cfq {
    /// A new, empty vanilla 2.6.18 cfq with the kernel's defaults.
    pub fn new() -> Cfq {
        Cfq::with_profile(Profile::VANILLA)
    }

    /// A new, empty cfq as the builds of `profile` shipped it, with the kernel's defaults.
    pub fn with_profile(profile: Profile) -> Cfq {
        Cfq {
            profile,
            tunables: Tunables::default(),
            queues: Vec::new(),
            free_queues: Vec::new(),
            processes: BTreeMap::new(),
            async_queues: [None; ASYNC_QUEUE_SLOTS],
            lists: RoundRobin::new(),
            busy_queues: 0,
            active: None,
            active_process: None,
            dispatch_slice: 0,
            idle_slice_timer_jiffies: None,
            idle_class_timer_jiffies: None,
            last_sector: Sector(0),
            last_position: Sector(0),
            last_end_request_jiffies: None,
            hw_tag: false,
            staged: DispatchList::new(),
            queued_count: 0,
            request_queue: SideTable::new(0),
            created_jiffies: SideTable::new(0),
            out: SideTable::new(0),
            fifo_links: ListLinks::new(0),
            run_pending: false,
            idle_until: None,
            counters: Counters::default(),
        }
    }
}

impl Default for Cfq {
    fn default() -> Cfq {
        Cfq::new()
    }
}

impl Scheduler for Cfq {
    fn name(&self) -> &'static str {
        NAME
    }

    fn insert(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let capacity = cx.requests.capacity();
        self.fifo_links.ensure_capacity(capacity);
        self.request_queue.ensure_capacity(capacity);
        self.created_jiffies.ensure_capacity(capacity);
        self.out.ensure_capacity(capacity);
        let now = cx.now.jiffies();
        self.fire_timers(now);
        // An arrival at an empty scheduler plugs and unplugs the queue: the queue runs.
        let scheduler_was_empty = self.busy_queues == 0 && self.staged.is_empty();
        let request = &cx.requests[id];
        let sync = self.profile.is_sync(request);
        let process = self.processes.entry(request.process).or_insert_with(|| Process::new(now));
        if !process.alive {
            process.revive(now);
            if let Some(queue) = process.sync_queue {
                self.queues[queue.slot()].sync_refs += 1;
            }
        }
        let sync_queue = process.sync_queue;
        let queue = if sync {
            self.counters.sync_requests += 1;
            self.insert_sync_queue(now, request.process, sync_queue, request.priority)
        } else {
            self.counters.async_requests += 1;
            self.insert_async_queue(request.process, request.priority)
        };
        self.request_queue[id] = queue;
        self.created_jiffies[id] = request.created.jiffies();
        self.add_sorted(cx, queue, id);
        self.queues[queue.slot()].fifo.push_back(&mut self.fifo_links, id);
        self.insert_enqueued(cx, queue, id);
        if scheduler_was_empty {
            self.run_pending = true;
        }
    }

    fn dispatch(&mut self, cx: &Ctx<'_>) -> Dispatch {
        self.fire_timers(cx.now.jiffies());
        // The driver takes the head of the kernel's dispatch list without asking cfq.
        if let Some(id) = self.staged.pop_front(cx.requests) {
            self.idle_until = None;
            return Dispatch::Issue(id);
        }
        if self.busy_queues == 0 {
            self.idle_until = None;
            return Dispatch::Empty;
        }
        if !self.run_pending
            && let Some(until) = self.idle_until
            && cx.now < until
        {
            return Dispatch::Idle { until };
        }
        self.run_pending = false;
        self.dispatch_round(cx);
        if let Some(id) = self.staged.pop_front(cx.requests) {
            self.idle_until = None;
            return Dispatch::Issue(id);
        }
        let until = self.dispatch_wake_up(cx.now.jiffies());
        self.idle_until = Some(until);
        Dispatch::Idle { until }
    }

    fn drain(&mut self, cx: &Ctx<'_>, out: &mut Vec<RequestId>) {
        let now = cx.now.jiffies();
        self.fire_timers(now);
        // 2.6.18's forced dispatch: every queue of every list, each emptied by following its
        // next request, then the active slice ends.
        for list in ListId::DRAIN_ORDER {
            let mut cursor = self.lists.front(list);
            while let Some(queue) = cursor {
                cursor = self.lists.next(queue);
                while let Some(id) = self.queues[queue.slot()].next_request {
                    self.move_to_staged(cx, queue, id);
                }
            }
        }
        self.slice_expired(now, false);
        assert!(
            self.busy_queues == 0 && self.queued_count == 0,
            "cfq: forced dispatch left {} requests in {} busy queues",
            self.queued_count,
            self.busy_queues
        );
        while let Some(id) = self.staged.pop_front(cx.requests) {
            out.push(id);
        }
        self.run_pending = false;
        self.idle_until = None;
    }

    fn queued(&self) -> usize {
        self.queued_count + self.staged.count()
    }

    fn dispatch_insert(&self) -> DispatchInsert {
        // The staged list is already in the kernel's sorted order.
        DispatchInsert::Tail
    }

    fn merge_lookups(&self) -> MergeLookups {
        MergeLookups::ALL
    }

    fn allow_merge(&self, _cx: &Ctx<'_>, target: RequestId, _bio: &elevator_core::Bio) -> bool {
        // A staged request is on the kernel's dispatch list: out of every merge lookup.
        self.fifo_links.is_linked(target)
    }

    fn merged(&mut self, cx: &Ctx<'_>, target: RequestId, kind: MergeKind) {
        let MergeKind::Front { old_start } = kind else { return };
        // The start moved: re-key the request in its queue's tree, moving the next-request
        // mark off it first as a removal would.
        let queue = self.request_queue[target];
        if self.queues[queue.slot()].next_request == Some(target) {
            self.queues[queue.slot()].next_request = self.find_next(cx, queue, old_start);
        }
        let removed = self.queues[queue.slot()].sort.remove(&old_start);
        debug_assert_eq!(removed, Some(target), "cfq: sort tree out of step at {old_start:?}");
        self.queued_count -= 1;
        self.add_sorted(cx, queue, target);
    }

    fn merge_neighbour(&self, cx: &Ctx<'_>, id: RequestId, kind: MergeKind) -> Option<RequestId> {
        let start = cx.requests[id].start;
        let sort = &self.queues[self.request_queue[id].slot()].sort;
        match kind {
            MergeKind::Back => sort.after(&start),
            MergeKind::Front { .. } => sort.before(&start),
        }
        .map(|(_, neighbour)| neighbour)
    }

    fn requests_merged(&mut self, cx: &Ctx<'_>, kept: RequestId, absorbed: RequestId) {
        let queue = self.request_queue[kept];
        debug_assert_eq!(queue, self.request_queue[absorbed], "cfq: fused across queues");
        // The block layer's `attempt_merge` lowers the survivor's start time to the older one
        // *before* it calls cfq, so `cfq_merged_requests`' "the absorbed one is older: take its
        // FIFO place" test never holds: the survivor keeps its own FIFO place and carries the
        // older time into the expiry test (legacy-vs-kernel.md row 10).
        if self.fifo_links.is_linked(kept) && self.fifo_links.is_linked(absorbed) {
            self.created_jiffies[kept] =
                self.created_jiffies[kept].min(self.created_jiffies[absorbed]);
        }
        self.remove_queued(cx, queue, absorbed, cx.requests[absorbed].start);
    }

    fn may_queue(&self, _cx: &Ctx<'_>, process: ProcessId, op: Op) -> MayQueue {
        // Only a sync queue can be idled on; writes always go to an async queue in 2.6.18.
        // From 194.el5 the lookup is of the async queue for every request, so never `Must`.
        if op != Op::Read || self.profile.may_queue_async_lookup {
            return MayQueue::May;
        }
        let Some(queue) = self.processes.get(&process).and_then(|process| process.sync_queue)
        else {
            return MayQueue::May;
        };
        let queue = &self.queues[queue.slot()];
        if queue.wait_request && !queue.must_alloc_slice.get() {
            queue.must_alloc_slice.set(true);
            return MayQueue::Must;
        }
        MayQueue::May
    }

    fn activate(&mut self, cx: &Ctx<'_>, id: RequestId) {
        if cx.in_flight > HW_TAG_IN_FLIGHT {
            self.hw_tag = true;
        }
        // 194.el5's `last_position` (read only by that profile).
        self.last_position = cx.requests[id].end();
    }

    fn complete(&mut self, cx: &Ctx<'_>, done: &Completion) {
        let now = cx.now.jiffies();
        self.fire_timers(now);
        // The block layer completes only requests this scheduler handed out.
        let was_out = std::mem::take(&mut self.out[done.id]);
        debug_assert!(was_out, "cfq: complete for {:?}, which it never handed out", done.id);
        let request = &cx.requests[done.id];
        let sync = self.profile.is_sync(request);
        let queue = self.request_queue[done.id];
        let entry = &mut self.queues[queue.slot()];
        assert!(entry.on_dispatch[usize::from(sync)] > 0, "cfq: {:?} out of step", done.id);
        entry.on_dispatch[usize::from(sync)] -= 1;
        if entry.class != IoClass::Idle {
            self.last_end_request_jiffies = Some(now);
        }
        if entry.dispatched() == 0 && entry.on_rr {
            entry.service_last_jiffies = Some(now);
            self.resort(queue, false);
        }
        if sync && let Some(process) = self.processes.get_mut(&request.process) {
            process.last_end_request_jiffies = now;
        }
        if self.active == Some(queue) {
            if now > self.queues[queue.slot()].slice_end_jiffies {
                self.slice_expired(now, false);
            } else if sync
                && self.queues[queue.slot()].sort.is_empty()
                && !(self.profile.cooperating_queues && self.close_cooperator(cx, queue).is_some())
            {
                self.arm_idle_timer(now, queue);
            }
        }
        // The driver asks for more after a completion. (So 92.el5's change of when cfq kicks
        // the queue itself after one, `kick_when_driver_empty`, is never observable here.)
        self.run_pending = true;
        self.release_if_unused(queue);
    }

    fn process_exited(&mut self, cx: &Ctx<'_>, process: ProcessId) {
        let now = cx.now.jiffies();
        self.fire_timers(now);
        let Some(context) = self.processes.get_mut(&process) else { return };
        if !context.alive {
            return;
        }
        context.alive = false;
        let (async_queue, sync_queue) = (context.async_queue.take(), context.sync_queue);
        // The exit drops the process's queues, ending the slice of whichever is active. The
        // idle window stays as it is (row 12): `arm_idle_timer` finds the process gone.
        for queue in [async_queue, sync_queue].into_iter().flatten() {
            if self.active == Some(queue) {
                self.slice_expired(now, false);
            }
        }
        if let Some(queue) = async_queue {
            self.release_if_unused(queue);
        }
        match sync_queue {
            Some(queue) => {
                // The process's reference goes, and one along its planned merges
                // (`cfq_exit_cfqq`).
                let entry = &mut self.queues[queue.slot()];
                entry.sync_refs = entry.sync_refs.saturating_sub(1);
                let mut next = entry.merge_into;
                for _ in 0..self.queues.len() {
                    let Some(target) = next.filter(|&target| target != queue) else { break };
                    let target = &mut self.queues[target.slot()];
                    target.merge_refs = target.merge_refs.saturating_sub(1);
                    next = target.merge_into;
                }
                self.release_if_unused(queue);
            }
            None => {
                self.processes.remove(&process);
            }
        }
    }

    fn tunables(&self) -> &'static [TunableSpec] {
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        let spec = elevator_core::tunable::find(TUNABLES, NAME, name)?;
        let tunables = &self.tunables;
        let value = match spec.name {
            "quantum" => tunables.quantum,
            "queued" => tunables.queued,
            "fifo_expire_sync" => tunables.fifo_expire_jiffies[1],
            "fifo_expire_async" => tunables.fifo_expire_jiffies[0],
            "back_seek_max" => tunables.back_seek_max_kib,
            "back_seek_penalty" => tunables.back_seek_penalty,
            "slice_sync" => tunables.slice_jiffies[1],
            "slice_async" => tunables.slice_jiffies[0],
            "slice_async_rq" => tunables.slice_async_rq,
            "slice_idle" => tunables.slice_idle_jiffies,
            other => unreachable!("tunable {other} is in the table but not handled"),
        };
        // Every value came through the range check, so it fits.
        Ok(value as i64)
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let spec = crate::checked(TUNABLES, NAME, name, value)?;
        // The range check makes the value non-negative; ms are jiffies at HZ=1000.
        let value = value as u64;
        let tunables = &mut self.tunables;
        match spec.name {
            "quantum" => tunables.quantum = value,
            "queued" => tunables.queued = value,
            "fifo_expire_sync" => tunables.fifo_expire_jiffies[1] = value,
            "fifo_expire_async" => tunables.fifo_expire_jiffies[0] = value,
            "back_seek_max" => tunables.back_seek_max_kib = value,
            "back_seek_penalty" => tunables.back_seek_penalty = value,
            "slice_sync" => tunables.slice_jiffies[1] = value,
            "slice_async" => tunables.slice_jiffies[0] = value,
            "slice_async_rq" => tunables.slice_async_rq = value,
            "slice_idle" => tunables.slice_idle_jiffies = value,
            other => unreachable!("tunable {other} is in the table but not handled"),
        }
        Ok(())
    }

    fn counters(&self) -> Vec<Counter> {
        let totals = self.counters;
        let mut counters = vec![
            Counter { name: "slices", value: totals.slices },
            Counter { name: "slices_expired", value: totals.slices_expired },
            Counter { name: "idle_waits", value: totals.idle_waits },
            Counter { name: "idle_timeouts", value: totals.idle_timeouts },
            Counter { name: "idle_class_waits", value: totals.idle_class_waits },
            Counter { name: "preemptions", value: totals.preemptions },
            Counter { name: "fifo_expiries", value: totals.fifo_expiries },
            Counter { name: "async_cap_expiries", value: totals.async_cap_expiries },
            Counter { name: "aliases", value: totals.aliases },
            Counter { name: "sync_queues_created", value: totals.sync_queues_created },
            Counter { name: "async_queues_created", value: totals.async_queues_created },
            Counter { name: "sync_requests", value: totals.sync_requests },
            Counter { name: "async_requests", value: totals.async_requests },
            Counter { name: "hw_tag", value: u64::from(self.hw_tag) },
        ];
        if self.profile.cooperating_queues {
            counters.extend([
                Counter { name: "cooperator_switches", value: totals.cooperator_switches },
                Counter { name: "queue_merges", value: totals.queue_merges },
                Counter { name: "queue_splits", value: totals.queue_splits },
            ]);
        }
        counters
    }
}

impl Cfq {
    /// The sync queue of `process`, created on its first read; a new priority on its request
    /// re-files it (the kernel's `cfq_init_prio_data` after `ioprio_set`). With cooperating
    /// queues (194.el5) an existing queue is first split or merged as `cfq_set_request` does.
    fn insert_sync_queue(
        &mut self,
        now: u64,
        process: ProcessId,
        existing: Option<QueueIndex>,
        priority: IoPriority,
    ) -> QueueIndex {
        let (class, level) = queue_priority(priority);
        let existing = match existing {
            Some(queue) if self.profile.cooperating_queues => {
                self.insert_split_or_merge(now, process, queue)
            }
            other => other,
        };
        if let Some(queue) = existing {
            self.refile_priority(queue, class, level);
            return queue;
        }
        let queue = self.new_queue(Owner::Process(process), class, level);
        self.queues[queue.slot()].sync_refs = 1;
        self.counters.sync_queues_created += 1;
        self.processes.get_mut(&process).expect("context created above").sync_queue = Some(queue);
        queue
    }

    /// 194.el5's `cfq_set_request` for a process that has a sync queue: a merged queue seeky
    /// for longer than `CFQQ_COOP_TOUT` is split (`split_cfqq`: the last process keeps it,
    /// any other gets a new one, `None`), else a planned merge is carried out
    /// (`cfq_merge_cfqqs`: the process moves to the queue it was merged with).
    fn insert_split_or_merge(
        &mut self,
        now: u64,
        process: ProcessId,
        queue: QueueIndex,
    ) -> Option<QueueIndex> {
        let entry = &mut self.queues[queue.slot()];
        let split = entry.coop
            && entry.seeky_since_jiffies.is_some_and(|since| now > since + COOP_TIMEOUT_JIFFIES);
        let moved_to = if split {
            if entry.process_refs() == 1 {
                entry.seeky_since_jiffies = None;
                entry.coop = false;
                return Some(queue);
            }
            self.counters.queue_splits += 1;
            None
        } else {
            let Some(target) = entry.merge_into else { return Some(queue) };
            let target_entry = &mut self.queues[target.slot()];
            target_entry.coop = true;
            target_entry.merge_refs = target_entry.merge_refs.saturating_sub(1);
            target_entry.sync_refs += 1;
            self.counters.queue_merges += 1;
            Some(target)
        };
        let entry = &mut self.queues[queue.slot()];
        entry.sync_refs = entry.sync_refs.saturating_sub(1);
        self.processes.get_mut(&process).expect("context created on insert").sync_queue = moved_to;
        self.release_if_unused(queue);
        moved_to
    }

    /// Gives `queue` the priority of its newest request, re-filing it if that changed.
    fn refile_priority(&mut self, queue: QueueIndex, class: IoClass, level: u8) {
        let entry = &mut self.queues[queue.slot()];
        if (entry.class, entry.level) != (class, level) {
            entry.class = class;
            entry.level = level;
            if class == IoClass::Idle {
                entry.idle_window = false;
            }
            if entry.on_rr {
                self.resort(queue, false);
            }
        }
    }

    /// The async queue for a write of `process` at `priority`, created on first use: the
    /// shared one of its priority, or (194.el5) the process's own.
    fn insert_async_queue(&mut self, process: ProcessId, priority: IoPriority) -> QueueIndex {
        let (class, level) = queue_priority(priority);
        if self.profile.async_queues == AsyncQueues::PerProcess {
            let context = self.processes.get(&process).expect("context created above");
            if let Some(queue) = context.async_queue {
                self.refile_priority(queue, class, level);
                return queue;
            }
            let queue = self.new_queue(Owner::ProcessAsync(process), class, level);
            self.counters.async_queues_created += 1;
            self.processes.get_mut(&process).expect("context created above").async_queue =
                Some(queue);
            return queue;
        }
        let slot = common::async_queue_slot(class, level);
        let queue = match self.async_queues[slot] {
            Some(queue) => queue,
            None => {
                let queue = self.new_queue(Owner::Shared, class, level);
                self.async_queues[slot] = Some(queue);
                self.counters.async_queues_created += 1;
                queue
            }
        };
        self.processes.get_mut(&process).expect("context created above").async_queue = Some(queue);
        queue
    }

    fn new_queue(&mut self, owner: Owner, class: IoClass, level: u8) -> QueueIndex {
        let entry = CfqQueue::new(owner, class, level);
        let queue = match self.free_queues.pop() {
            Some(queue) => {
                self.queues[queue.slot()] = entry;
                queue
            }
            None => {
                let queue = QueueIndex(u32::try_from(self.queues.len()).expect("< 2^32 queues"));
                self.queues.push(entry);
                queue
            }
        };
        self.lists.ensure(queue);
        queue
    }

    /// What 2.6.18 does after putting a request in its queue (`cfq_crq_enqueued`).
    fn insert_enqueued(&mut self, cx: &Ctx<'_>, queue: QueueIndex, id: RequestId) {
        let now = cx.now.jiffies();
        let request = &cx.requests[id];
        let profile = self.profile;
        if !profile.is_sync(request) {
            // An async request from the process cfq idles for: it will not send a sync one
            // soon, so stop waiting.
            if self.active_process == Some(request.process)
                && self.idle_slice_timer_jiffies.take().is_some()
            {
                self.slice_expired(now, false);
                self.run_pending = true;
            }
            return;
        }
        let slice_idle = self.tunables.slice_idle_jiffies;
        let process = self.processes.get_mut(&request.process).expect("context created on insert");
        process.update_think_time(now, slice_idle);
        let entry = &mut self.queues[queue.slot()];
        let seek_mean_sectors = if profile.queue_seek_stats {
            // 194.el5's `cfq_update_io_seektime`: from the queue's last request, 0 for its first.
            let distance = if entry.last_request_pos == Sector(0) {
                0
            } else {
                request.start.distance(entry.last_request_pos)
            };
            entry.seek.update(distance);
            let seeky = entry.seek.mean_sectors() > QUEUE_SEEKY_MEAN_SECTORS;
            if entry.coop {
                if !seeky {
                    entry.seeky_since_jiffies = None;
                } else if entry.seeky_since_jiffies.is_none() {
                    entry.seeky_since_jiffies = Some(now);
                }
            }
            entry.seek.mean_sectors()
        } else {
            process.update_seek(request.start);
            process.seek.mean_sectors()
        };
        // Both versions test the mean here without asking whether it is valid yet.
        let seeky_on_hw_tag = self.hw_tag && seek_mean_sectors > profile.seeky_mean_sectors();
        entry.idle_window = process.idle_window(entry.idle_window, slice_idle, seeky_on_hw_tag);
        process.last_request_pos = request.end();
        entry.last_request_pos = request.end();
        if self.active == Some(queue) {
            let busy_queues = self.busy_queues;
            let entry = &mut self.queues[queue.slot()];
            if entry.wait_request {
                entry.must_dispatch = true;
                // 194.el5 leaves a small request alone on an otherwise idle scheduler, so that
                // plugging can merge the next ones into it; the idle timer or a bigger arrival
                // runs the queue.
                let bytes = u64::from(request.sector_count) * 512;
                if !profile.kick_large_or_busy || bytes > PAGE_BYTES || busy_queues > 1 {
                    self.idle_slice_timer_jiffies = None;
                    self.run_pending = true;
                }
            }
        } else if self.insert_should_preempt(queue) {
            self.insert_preempt(now, queue);
            self.queues[queue.slot()].must_dispatch = true;
            self.run_pending = true;
        }
    }

    /// Whether `queue`'s new sync request preempts the active queue. In 2.6.18 every rule past
    /// "the active queue is idle class" first needs `queue` to be waited on, which only the
    /// active queue can be, so none of them ever fires.
    fn insert_should_preempt(&self, queue: QueueIndex) -> bool {
        if self.queues[queue.slot()].class == IoClass::Idle {
            return false;
        }
        self.active.is_some_and(|active| self.queues[active.slot()].class == IoClass::Idle)
    }

    /// Puts `queue` in service at once: the current round's queues are re-filed as preempted,
    /// the active queue ends its slice as preempted, and `queue` is activated.
    fn insert_preempt(&mut self, now: u64, queue: QueueIndex) {
        // The kernel walks cur_rr while re-filing into it; with the one or two queues it can
        // hold here, walking a snapshot gives the same order.
        for current in self.lists.members(ListId::Current) {
            self.resort(current, true);
        }
        self.slice_expired(now, true);
        self.activate_queue(queue);
        self.counters.preemptions += 1;
    }

    /// Adds `id` to `queue`'s tree (`cfq_add_crq_rb`): a queued request with the same start (an
    /// alias) is moved out first; the queue becomes busy; the next request is re-chosen.
    fn add_sorted(&mut self, cx: &Ctx<'_>, queue: QueueIndex, id: RequestId) {
        let start = cx.requests[id].start;
        loop {
            match self.queues[queue.slot()].sort.insert_vacant(start, id) {
                Ok(()) => break,
                Err(alias) => {
                    self.counters.aliases += 1;
                    self.move_to_staged(cx, queue, alias);
                }
            }
        }
        self.queued_count += 1;
        if !self.queues[queue.slot()].on_rr {
            self.add_to_rr(queue);
        }
        let next = self.queues[queue.slot()].next_request;
        self.queues[queue.slot()].next_request = self.choose_request(cx, next, Some(id));
    }

    /// Moves `id` out of `queue` onto the staged list (`cfq_dispatch_insert`).
    fn move_to_staged(&mut self, cx: &Ctx<'_>, queue: QueueIndex, id: RequestId) {
        let request = &cx.requests[id];
        self.queues[queue.slot()].next_request = self.find_next(cx, queue, request.start);
        self.remove_queued(cx, queue, id, request.start);
        self.queues[queue.slot()].on_dispatch[usize::from(self.profile.is_sync(request))] += 1;
        self.out[id] = true;
        self.staged.add(cx.requests, id, DispatchInsert::Sort);
        let tail = self.staged.iter().last().expect("just staged");
        self.last_sector = cx.requests[tail].end();
    }

    /// Takes `id`, keyed at `start` in the tree, out of `queue` (`cfq_remove_request`); a queue
    /// left empty stops being busy.
    fn remove_queued(&mut self, cx: &Ctx<'_>, queue: QueueIndex, id: RequestId, start: Sector) {
        self.queues[queue.slot()].fifo.remove(&mut self.fifo_links, id);
        if self.queues[queue.slot()].next_request == Some(id) {
            self.queues[queue.slot()].next_request = self.find_next(cx, queue, start);
        }
        let entry = &mut self.queues[queue.slot()];
        let removed = entry.sort.remove(&start);
        debug_assert_eq!(removed, Some(id), "cfq: sort tree out of step at {start:?}");
        self.queued_count -= 1;
        if entry.on_rr && entry.sort.is_empty() {
            self.remove_from_rr(queue);
        }
    }

    /// The request to serve after the one keyed at `start` (`cfq_find_next_crq`): the better
    /// of its sector successor (wrapping to the lowest) and its predecessor.
    fn find_next(&self, cx: &Ctx<'_>, queue: QueueIndex, start: Sector) -> Option<RequestId> {
        let sort = &self.queues[queue.slot()].sort;
        let (predecessor, successor) = sort.neighbours(&start);
        let successor = successor
            .or_else(|| sort.first().filter(|&(first, _)| first != start))
            .map(|(_, id)| id);
        let predecessor = predecessor.map(|(_, id)| id);
        self.choose_request(cx, successor, predecessor)
    }

    /// [`choose_first`] over optional candidates, with the kernel's argument order.
    fn choose_request(
        &self,
        cx: &Ctx<'_>,
        first: Option<RequestId>,
        second: Option<RequestId>,
    ) -> Option<RequestId> {
        let profile = self.profile;
        let candidate = |id: RequestId| (cx.requests[id].start, profile.is_sync(&cx.requests[id]));
        let back_max_sectors = self.tunables.back_seek_max_kib * 2;
        let head =
            if profile.position_at_activation { self.last_position } else { self.last_sector };
        common::choose_request(first, second, |first, second| {
            choose_first(
                head,
                back_max_sectors,
                self.tunables.back_seek_penalty,
                candidate(first),
                candidate(second),
            )
        })
    }

    /// Makes `queue` busy (`cfq_add_cfqq_rr`).
    fn add_to_rr(&mut self, queue: QueueIndex) {
        self.queues[queue.slot()].on_rr = true;
        self.busy_queues += 1;
        self.resort(queue, false);
    }

    /// `queue` ran out of queued requests (`cfq_del_cfqq_rr`).
    fn remove_from_rr(&mut self, queue: QueueIndex) {
        self.queues[queue.slot()].on_rr = false;
        self.lists.remove(queue);
        self.busy_queues -= 1;
    }

    /// Files a busy queue on its round-robin list (`cfq_resort_rr_list`): real-time on the
    /// current round, idle class on the idle list, best-effort on the busy list while requests
    /// of it are out and on its level's list otherwise. A preempted queue goes before the
    /// list's tail; the busy list is FIFO; otherwise the list stays sorted by last service,
    /// never-served queues first and in arrival order, a queue going ahead of those served at
    /// the same jiffy.
    fn resort(&mut self, queue: QueueIndex, preempted: bool) {
        debug_assert!(self.queues[queue.slot()].on_rr, "cfq: re-filing a queue that is not busy");
        self.lists.remove(queue);
        let entry = &self.queues[queue.slot()];
        let list = match entry.class {
            IoClass::RealTime => ListId::Current,
            IoClass::Idle => ListId::Idle,
            _ if entry.dispatched() > 0 => ListId::Busy,
            _ => ListId::Level(entry.level),
        };
        if preempted {
            match self.lists.back(list) {
                Some(tail) => self.lists.insert_before(list, tail, queue),
                None => self.lists.push_back(list, queue),
            }
            return;
        }
        if list == ListId::Busy {
            self.lists.push_back(list, queue);
            return;
        }
        let service_last = entry.service_last_jiffies;
        let mut anchor = self.lists.back(list);
        while let Some(candidate) = anchor {
            let other = self.queues[candidate.slot()].service_last_jiffies;
            // `None` sorts below every jiffy, so never-served queues stay ahead.
            if other.is_none() || other < service_last {
                break;
            }
            anchor = self.lists.prev(candidate);
        }
        match anchor {
            Some(anchor) => self.lists.insert_after(list, anchor, queue),
            None => self.lists.push_front(list, queue),
        }
    }

    /// Makes `queue` the active queue with a fresh slice (`__cfq_set_active_queue`); the slice's
    /// end is set at its first dispatch.
    fn activate_queue(&mut self, queue: QueueIndex) {
        self.idle_class_timer_jiffies = None;
        let entry = &mut self.queues[queue.slot()];
        entry.slice_end_jiffies = 0;
        entry.must_alloc_slice.set(false);
        entry.fifo_expire = false;
        self.active = Some(queue);
        self.counters.slices += 1;
    }

    /// Ends the active queue's slice (`__cfq_slice_expired`): a queue with nothing out counts
    /// as served now (unless preempted), and a busy queue is re-filed.
    fn slice_expired(&mut self, now: u64, preempted: bool) {
        let Some(queue) = self.active else { return };
        let entry = &mut self.queues[queue.slot()];
        if entry.wait_request {
            self.idle_slice_timer_jiffies = None;
        }
        if !preempted && entry.dispatched() == 0 {
            entry.service_last_jiffies = Some(now);
            if self.busy_queues > 0 {
                self.run_pending = true;
            }
        }
        entry.must_dispatch = false;
        entry.wait_request = false;
        if entry.on_rr {
            self.resort(queue, preempted);
        }
        self.active = None;
        self.active_process = None;
        self.dispatch_slice = 0;
        self.counters.slices_expired += 1;
        self.release_if_unused(queue);
    }

    /// Starts an idle wait for the active sync `queue`'s next request, if its idle window is
    /// open and its process still lives (`cfq_arm_slice_timer`).
    fn arm_idle_timer(&mut self, now: u64, queue: QueueIndex) -> bool {
        let slice_idle = self.tunables.slice_idle_jiffies;
        if slice_idle == 0 || !self.queues[queue.slot()].idle_window {
            return false;
        }
        let process = self.active_process.and_then(|process| self.processes.get(&process));
        let Some(process) = process.filter(|process| process.alive) else { return false };
        let seeky = if self.profile.queue_seek_stats {
            self.queue_is_seeky(queue)
        } else {
            process.is_seeky()
        };
        let wait_jiffies = if seeky { slice_idle.min(SEEKY_IDLE_JIFFIES) } else { slice_idle };
        let entry = &mut self.queues[queue.slot()];
        entry.must_dispatch = true;
        entry.wait_request = true;
        self.idle_slice_timer_jiffies = Some(now + wait_jiffies);
        self.counters.idle_waits += 1;
        true
    }

    /// Runs the timers whose jiffy has come, in time order, each at its own jiffy.
    fn fire_timers(&mut self, now: u64) {
        // Each firing clears its timer or re-arms it later than its own jiffy, so this ends;
        // the bound only guards that.
        for _ in 0..4 {
            let slice = self.idle_slice_timer_jiffies.filter(|&at| at <= now);
            let class = self.idle_class_timer_jiffies.filter(|&at| at <= now);
            match (slice, class) {
                (Some(slice_at), class) if class.is_none_or(|class_at| slice_at <= class_at) => {
                    self.idle_slice_timer_jiffies = None;
                    self.fire_idle_slice_timer(slice_at);
                }
                (_, Some(class_at)) => {
                    self.idle_class_timer_jiffies = None;
                    self.fire_idle_class_timer(class_at);
                }
                _ => return,
            }
        }
    }

    /// The idle wait timed out (`cfq_idle_slice_timer`): end the slice, unless it has time left
    /// and either nothing else is busy (keep waiting) or a request came after all (serve it).
    fn fire_idle_slice_timer(&mut self, at: u64) {
        if let Some(queue) = self.active {
            let entry = &mut self.queues[queue.slot()];
            if at <= entry.slice_end_jiffies {
                if self.busy_queues == 0 {
                    return;
                }
                if !entry.sort.is_empty() {
                    entry.must_dispatch = true;
                    self.run_pending = true;
                    return;
                }
            }
        }
        self.counters.idle_timeouts += 1;
        self.slice_expired(at, false);
        if self.busy_queues > 0 {
            self.run_pending = true;
        }
    }

    /// The idle-class grace timer (`cfq_idle_class_timer`): run the queue once no other request
    /// has completed for the grace period, else wait on.
    fn fire_idle_class_timer(&mut self, at: u64) {
        let end = self.idle_grace_end_jiffies();
        if at < end {
            self.idle_class_timer_jiffies = Some(end);
        } else if self.busy_queues > 0 {
            self.run_pending = true;
        }
    }

    /// One 2.6.18 dispatch round (`cfq_dispatch_requests`): serve the selected queue, up to
    /// `quantum` requests (1 for the idle class), and go on to the next selected queue unless
    /// the one just served idles and is still active, or the same queue comes up again.
    fn dispatch_round(&mut self, cx: &Ctx<'_>) {
        let now = cx.now.jiffies();
        let mut previous = None;
        // Every pass moves at least one request, so the queued count bounds the passes.
        for _ in 0..=self.queued_count {
            let Some(queue) = self.dispatch_select_queue(cx, now) else { break };
            if previous == Some(queue) {
                break;
            }
            let entry = &mut self.queues[queue.slot()];
            entry.must_dispatch = false;
            entry.wait_request = false;
            self.idle_slice_timer_jiffies = None;
            let max = if entry.class == IoClass::Idle { 1 } else { self.tunables.quantum };
            self.dispatch_from(cx, queue, max);
            if self.queues[queue.slot()].idle_window && self.active.is_some() {
                break;
            }
            previous = Some(queue);
        }
    }

    /// The queue to serve now (`cfq_select_queue`): the active one while its slice lasts and it
    /// has requests; none while it waits for its requests out or for its next request; else a
    /// new one.
    fn dispatch_select_queue(&mut self, cx: &Ctx<'_>, now: u64) -> Option<QueueIndex> {
        if let Some(queue) = self.active {
            let entry = &self.queues[queue.slot()];
            if entry.must_dispatch || now <= entry.slice_end_jiffies {
                if !entry.sort.is_empty() {
                    return Some(queue);
                }
                // 194.el5: another queue's next request within this queue's mean seek of the
                // head runs now, even with this queue's requests still out, and the two
                // queues are set to merge.
                if self.profile.cooperating_queues
                    && let Some(cooperator) = self.close_cooperator(cx, queue)
                {
                    if self.queues[queue.slot()].merge_into.is_none() {
                        self.setup_merge(queue, cooperator);
                    }
                    self.slice_expired(now, false);
                    self.activate_queue(cooperator);
                    self.counters.cooperator_switches += 1;
                    return Some(cooperator);
                }
                let entry = &self.queues[queue.slot()];
                if entry.dispatched() > 0 {
                    return None;
                }
                if entry.is_process_queue() && self.arm_idle_timer(now, queue) {
                    return None;
                }
            }
            self.slice_expired(now, false);
        }
        self.dispatch_next_queue(now)
    }

    /// Activates the next queue (`cfq_set_active_queue`): the head of the current round,
    /// refilled from the level lists when empty; else the head of the busy list; else an
    /// idle-class queue once the grace period has passed (else the grace timer is armed).
    fn dispatch_next_queue(&mut self, now: u64) -> Option<QueueIndex> {
        let mut next = self.lists.front(ListId::Current);
        if next.is_none() && self.lists.refill_current().is_some() {
            next = self.lists.front(ListId::Current);
        }
        next = next.or_else(|| self.lists.front(ListId::Busy));
        if next.is_none() && !self.lists.is_empty(ListId::Idle) {
            let end = self.idle_grace_end_jiffies();
            if now >= end {
                next = self.lists.front(ListId::Idle);
            } else {
                if self.idle_class_timer_jiffies != Some(end) {
                    self.counters.idle_class_waits += 1;
                }
                self.idle_class_timer_jiffies = Some(end);
            }
        }
        match next {
            Some(queue) => self.activate_queue(queue),
            None => self.active = None,
        }
        next
    }

    /// Moves up to `max` requests of the active `queue` out (`__cfq_dispatch_requests`), starts
    /// the slice clock at the slice's first dispatch, and ends the slice at once for an async
    /// queue over its request cap, for the idle class, and for a queue without idle window.
    fn dispatch_from(&mut self, cx: &Ctx<'_>, queue: QueueIndex, max: u64) {
        let now = cx.now.jiffies();
        let mut dispatched = 0;
        loop {
            let id = match self.dispatch_expired_fifo(cx, queue) {
                Some(id) => id,
                None => self.queues[queue.slot()].next_request.expect("a busy queue has a next"),
            };
            self.move_to_staged(cx, queue, id);
            self.dispatch_slice += 1;
            dispatched += 1;
            if self.active_process.is_none() {
                self.active_process = Some(cx.requests[id].process);
            }
            if self.queues[queue.slot()].sort.is_empty() || dispatched >= max {
                break;
            }
        }
        let entry = &self.queues[queue.slot()];
        if entry.slice_end_jiffies == 0 {
            let base = self.tunables.slice_jiffies[usize::from(entry.is_sync())];
            let slice_end = now + slice_jiffies(base, entry.level);
            self.queues[queue.slot()].slice_end_jiffies = slice_end;
        }
        let entry = &self.queues[queue.slot()];
        let over_cap = !entry.is_sync()
            && self.dispatch_slice >= max_async_requests(self.tunables.slice_async_rq, entry.level);
        if over_cap || entry.class == IoClass::Idle || !entry.idle_window {
            if over_cap {
                self.counters.async_cap_expiries += 1;
            }
            self.slice_expired(now, false);
        }
    }

    /// The FIFO head if it has waited past its expiry, looked at once per slice
    /// (`cfq_check_fifo`).
    fn dispatch_expired_fifo(&mut self, cx: &Ctx<'_>, queue: QueueIndex) -> Option<RequestId> {
        let entry = &mut self.queues[queue.slot()];
        if entry.fifo_expire {
            return None;
        }
        let head = entry.fifo.front()?;
        let expire = self.tunables.fifo_expire_jiffies[usize::from(entry.is_process_queue())];
        if cx.now.jiffies() > self.created_jiffies[head].saturating_add(expire) {
            entry.fifo_expire = true;
            self.counters.fifo_expiries += 1;
            return Some(head);
        }
        None
    }

    /// When to be asked again after a round that moved nothing: the earliest timer, else (the
    /// active queue waits for its requests at the device) a completion's worth of time.
    fn dispatch_wake_up(&self, now: u64) -> Instant {
        let timer = match (self.idle_slice_timer_jiffies, self.idle_class_timer_jiffies) {
            (Some(slice), Some(class)) => Some(slice.min(class)),
            (slice, class) => slice.or(class),
        };
        Instant::from_jiffies(timer.unwrap_or(now + COMPLETION_WAIT_JIFFIES))
    }

    /// Frees a process's queue once nothing refers to it any more: a sync queue no live
    /// process (or planned merge) names, or an async queue of a process that exited, when it
    /// has nothing queued or out and is not active. Exited processes whose context only
    /// waited for it go with it.
    fn release_if_unused(&mut self, queue: QueueIndex) {
        let entry = &self.queues[queue.slot()];
        let used = match entry.owner {
            Owner::Process(_) => entry.process_refs() > 0,
            Owner::ProcessAsync(process) => self
                .processes
                .get(&process)
                .is_some_and(|context| context.alive && context.async_queue == Some(queue)),
            Owner::Shared | Owner::Free => return,
        };
        if used
            || entry.on_rr
            || !entry.sort.is_empty()
            || entry.dispatched() > 0
            || self.active == Some(queue)
        {
            return;
        }
        debug_assert!(self.lists.list_of(queue).is_none(), "cfq: freeing a listed queue");
        self.processes.retain(|_, context| context.alive || context.sync_queue != Some(queue));
        for other in &mut self.queues {
            if other.merge_into == Some(queue) {
                other.merge_into = None;
            }
        }
        self.queues[queue.slot()].owner = Owner::Free;
        self.free_queues.push(queue);
    }

    /// When idle-class queues may be served again: `CFQ_IDLE_GRACE` after the last completion
    /// of another class. Before any, at once: the kernel's `last_end_request` starts at 0
    /// while jiffies start near 2^32 at boot (`INITIAL_JIFFIES`), long after (row 13).
    fn idle_grace_end_jiffies(&self) -> u64 {
        self.last_end_request_jiffies.map_or(0, |last| last + IDLE_GRACE_JIFFIES)
    }

    /// Seeky by 194.el5's per-queue test with a valid mean (`sample_valid && CFQQ_SEEKY`).
    fn queue_is_seeky(&self, queue: QueueIndex) -> bool {
        let seek = &self.queues[queue.slot()].seek;
        seek.is_valid() && seek.mean_sectors() > QUEUE_SEEKY_MEAN_SECTORS
    }

    /// 194.el5's `cfq_close_cooperator`: for an active sync queue that is not seeky, the sync,
    /// not seeky queue whose next request is closest to the head, if within the active
    /// queue's mean seek distance of it (4 MiB until that mean is valid).
    fn close_cooperator(&self, cx: &Ctx<'_>, active: QueueIndex) -> Option<QueueIndex> {
        let eligible = |queue: QueueIndex| {
            self.queues[queue.slot()].is_process_queue() && !self.queue_is_seeky(queue)
        };
        if !eligible(active) {
            return None;
        }
        self.close_queue(cx, active).filter(|&queue| eligible(queue))
    }

    /// 194.el5's `cfqq_close`: among the busy queues of the active queue's level (except the
    /// idle class; the kernel's per-level tree keyed by each queue's next request), one whose
    /// next request starts at the head, else the nearer of the two either side of the head if
    /// close enough (`cfq_rq_close`), else the other one if close enough.
    fn close_queue(&self, cx: &Ctx<'_>, active: QueueIndex) -> Option<QueueIndex> {
        let head = self.last_position;
        let level = self.queues[active.slot()].level;
        let mut below: Option<(Sector, QueueIndex)> = None;
        let mut above: Option<(Sector, QueueIndex)> = None;
        for (slot, entry) in self.queues.iter().enumerate() {
            if slot == active.slot()
                || !entry.on_rr
                || entry.class == IoClass::Idle
                || entry.level != level
            {
                continue;
            }
            let Some(next) = entry.next_request else { continue };
            let start = cx.requests[next].start;
            let queue = QueueIndex(u32::try_from(slot).expect("< 2^32 queues"));
            if start == head {
                return Some(queue);
            }
            if start < head {
                if below.is_none_or(|(best, _)| start > best) {
                    below = Some((start, queue));
                }
            } else if above.is_none_or(|(best, _)| start < best) {
                above = Some((start, queue));
            }
        }
        let active_seek = &self.queues[active.slot()].seek;
        let reach_sectors = if active_seek.is_valid() {
            active_seek.mean_sectors()
        } else {
            QUEUE_SEEKY_MEAN_SECTORS
        };
        let mut candidates = [below, above];
        candidates.sort_by_key(|candidate| candidate.map(|(start, _)| start.distance(head)));
        candidates
            .into_iter()
            .flatten()
            .find(|&(start, _)| start.distance(head) <= reach_sectors)
            .map(|(_, queue)| queue)
    }

    /// 194.el5's `cfq_setup_merge`: plan to merge `active` with `cooperator` (following any
    /// merge `cooperator` already plans), in the direction of the fewer processes: the queue
    /// with fewer moves into the other at its processes' next requests.
    fn setup_merge(&mut self, active: QueueIndex, cooperator: QueueIndex) {
        let mut target = cooperator;
        for _ in 0..self.queues.len() {
            match self.queues[target.slot()].merge_into {
                Some(next) if next == active => return,
                Some(next) => target = next,
                None => break,
            }
        }
        let refs = self.queues[active.slot()].process_refs();
        if refs == 0 {
            return;
        }
        let target_refs = self.queues[target.slot()].process_refs();
        if target_refs >= refs {
            self.queues[active.slot()].merge_into = Some(target);
            self.queues[target.slot()].merge_refs += refs;
        } else {
            self.queues[target.slot()].merge_into = Some(active);
            self.queues[active.slot()].merge_refs += target_refs;
        }
    }
}
