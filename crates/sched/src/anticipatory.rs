//! anticipatory: deadline-style batches, plus a short, deliberate pause after each synchronous
//! request for the same process's next nearby one.
//!
//! Follows Linux 2.6.18 `block/as-iosched.c` and `Documentation/block/as-iosched.txt` at HZ=1000
//! (legacy-schedulers.md §4). RHEL5's AS has the same rules.
//!
//! Requests are filed by **class**, not data direction: synchronous (reads, and writes flagged
//! sync such as O_DIRECT) and asynchronous (write-back). Each class has a tree sorted by start
//! sector and a FIFO whose entries expire `read_expire` (sync) or `write_expire` (async) after
//! insertion. Within a class the next request is the one closest ahead of the head, by a
//! one-way elevator that also accepts a short backward seek (up to 1 048 576 sectors, costed
//! at twice the distance); a request further behind wraps to the next sweep.
//!
//! Dispatch serves **batches**. A read batch runs `read_batch_expire` from the completion of
//! its first request, but only while writes wait (with no writes its clock keeps restarting); a
//! write batch runs `write_batch_expire` or `write_batch_count` writes, a count retuned at each
//! write→read switch so that write batches last about `write_batch_expire`. Batches alternate
//! when both classes are busy, and a new batch starts only once every request of the previous
//! one has completed. FIFO deadlines are looked at for the current batch's class only, and at
//! most once per `read_expire` / `write_expire` (a rate limit against seek storms).
//!
//! **Anticipation.** During a read batch, after a synchronous request of process P the
//! scheduler may idle instead of moving the head elsewhere: while the request it would take
//! next is neither P's nor close to the head, and P's history says it usually comes back
//! quickly (mean think time within `antic_expire`), it answers [`Dispatch::Idle`] for up to
//! `antic_expire` after P's request completes. P's next request, or any request that may
//! break the wait (§4.6: close to the head, P has other requests queued, P exited and exited
//! processes rarely come back, the wait ran out), ends it. Per-process statistics — think time
//! and seek distance — are decaying averages in fixed point (1.0 = 256) updated whenever a
//! synchronous request arrives; global averages over new processes and two exit
//! probabilities judge processes without a history yet.
//!
//! The anticipation timer is not a timer here: a wait is the value `Idle { until }`, `until`
//! being the jiffy the kernel's timer would fire at. When the queue calls again at or after
//! that instant, or a hook runs after it, the scheduler first does what the timer would have
//! done (end the wait, update the exit statistics). Waiting for a request that has not
//! completed yet has no timer in the kernel (it ends at that completion); it is answered with a
//! safety bound of `antic_expire` (at least one jiffy) and asked again on every completion and
//! arrival anyway.
//!
//! **Choosing between two requests** (`as_choose_req`, for the next request after a dispatch
//! or a removal) uses the shared seek rule `common::seek_prefers_first` with 2.6.18's fixed
//! limits: a backward seek of up to `MAXBACK` (1 048 576 sectors) costs twice its distance.
//! The two candidates are always of one direction (the kernel asserts it), so unlike cfq and
//! bfq there is no sync-before-async step.
//!
//! # Tunables
//!
//! | name | unit | default | range | meaning |
//! |---|---|---|---|---|
//! | `read_expire` | ms | 125 (HZ/8) | 0..=2147483647 | FIFO deadline of a synchronous request |
//! | `write_expire` | ms | 250 (HZ/4) | 0..=2147483647 | FIFO deadline of an asynchronous write |
//! | `read_batch_expire` | ms | 500 (HZ/2) | 0..=2147483647 | length of a read batch while writes wait |
//! | `write_batch_expire` | ms | 125 (HZ/8) | 0..=2147483647 | target length of a write batch |
//! | `antic_expire` | ms | 6 (HZ/150, ≥ 1 jiffy) | 0..=2147483647 | longest anticipation wait; 0 turns anticipation off |
//!
//! The kernel's read-only `est_time` file is reported by [`Scheduler::counters`] instead, as
//! `est_exit_prob_percent`, `est_exit_no_coop_percent`, `est_new_ttime_ms` and
//! `est_new_seek_sectors` (the same integer figures the file prints).
//!
//! # Readings chosen where the spec is silent
//!
//! * Global statistics start at zero and the first batch is a write batch (the kernel zeroes
//!   its state); the first read batch's clock starts at the first insertion, since a scheduler
//!   learns the time only with its first call.
//! * `write_batch_count` starts at `write_batch_expire / 10` (at least 2) with the default
//!   `write_batch_expire`; changing the tunable later does not reset it, as in the kernel.
//! * Two 2.6.18 behaviours that §4 does not spell out are kept: when fused requests hand the
//!   earlier deadline to the survivor they also swap owners, and releasing the absorbed
//!   request's owner marks it as having had I/O complete at that moment (think time then counts
//!   from the fusion).
//!
//! # Deviations from Linux
//!
//! Quirks of 2.6.18 that are **kept**:
//!
//! * The close-request window (§4.5) measures the time since the wait began in milliseconds
//!   and compares it with `antic_expire` in jiffies (fixed in 2.6.22). At HZ=1000 both units
//!   coincide, so the bug has no effect here; the code keeps the two units apart.
//! * A write batch starts at the sweep's next write, not at the write FIFO's head (2.6.24
//!   changed it).
//! * When a batch switch waits for the old batch's requests to complete, the completion that
//!   ends the wait does not restart the new write batch's clock (fixed in 2.6.26): with more
//!   than one request at the device, a write batch can end after a single write (write
//!   starvation). At depth 1 the wait never happens.
//! * Think time is capped at HZ/50 − 1 = 19 jiffies; samples before the first completion count
//!   as zero think time.
//! * The read batch's clock is restarted on every dispatch while no write waits, and the first
//!   write→read switch doubles `write_batch_count` (the first "write batch" used all of its
//!   zero writes instantly).
//!
//! Differences **forced by the contract**, or dropped on purpose:
//!
//! * HZ is fixed at 1000, so one jiffy is one millisecond; all deadlines and waits are kept in
//!   jiffies and "expired" means strictly after, as in the kernel.
//! * The timer's effects are applied at the next call at or after its jiffy, not in interrupt
//!   context; the wait for a request still at the device answers with a safety bound (see
//!   above), and so does a batch switch waiting for the old batch to drain (the kernel just
//!   returns nothing and is re-run by the completion).
//! * Back and front merges use the block layer's index; the kernel's private hash finds the
//!   same request except when several queued requests end at one sector. The front index is
//!   narrowed to what 2.6.18's tree lookup can find (it indexes the class trees by the bio's
//!   data direction): only a write bio into a sync request; reads and buffered writes
//!   front-merge only through the one-hit cache, as there.
//! * A queue built with the core's default configuration requires equal sync-ness for a merge;
//!   the simulator's legacy queues merge an O_DIRECT write into a write-back request as 2.6.18
//!   does (`QueueConfig::merges_ignore_sync`).
//! * `est_time` is a counter set, not a file (see above).
//! * After a front merge moves an alias out, the grown request is offered to the sweep again;
//!   2.6.18 could leave the class without a next request there and strand the grown one.
//! * A process's statistics are forgotten once it has exited and nothing refers to it; a
//!   process that submits I/O after its exit then starts a fresh history (a new io context).
//! * Fixed-point sums saturate where the kernel's would wrap (seek distances beyond 2^56
//!   sectors).

use std::collections::BTreeMap;

use elevator_core::tunable::INT_MAX;
use elevator_core::{
    Bio, Completion, Counter, Ctx, Dispatch, DispatchInsert, HZ, IdList, Instant, ListLinks,
    MayQueue, MergeKind, MergeLookups, Op, ProcessId, Request, RequestId, Scheduler, Sector,
    SideTable, TunableError, TunableSpec, Unit,
};
use history::{FIXED_ONE, History, ProcessStats, decay};

use crate::common;
use crate::sorted::SortedMap;

mod history;

/// The kernel's name.
pub const NAME: &str = "anticipatory";

/// One line for `elevator list`.
pub const SUMMARY: &str =
    "read/write batches with FIFO deadlines; after a read, briefly waits for the reader's next one";

/// The kernel's default anticipation wait: HZ/150, at least one jiffy.
const DEFAULT_ANTIC_EXPIRE_JIFFIES: u64 = if HZ / 150 > 0 { HZ / 150 } else { 1 };

/// anticipatory's tunables, with the 2.6.18 defaults at HZ=1000 (one jiffy = one ms).
pub const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "read_expire",
        unit: Unit::Milliseconds,
        default: (HZ / 8) as i64,
        min: 0,
        max: INT_MAX,
        help: "deadline of a synchronous request (read or sync write), counted from insertion",
    },
    TunableSpec {
        name: "write_expire",
        unit: Unit::Milliseconds,
        default: (HZ / 4) as i64,
        min: 0,
        max: INT_MAX,
        help: "deadline of an asynchronous write, counted from insertion",
    },
    TunableSpec {
        name: "read_batch_expire",
        unit: Unit::Milliseconds,
        default: (HZ / 2) as i64,
        min: 0,
        max: INT_MAX,
        help: "how long a read batch runs while writes wait",
    },
    TunableSpec {
        name: "write_batch_expire",
        unit: Unit::Milliseconds,
        default: (HZ / 8) as i64,
        min: 0,
        max: INT_MAX,
        help: "target length of a write batch (the writes per batch are tuned to it)",
    },
    TunableSpec {
        name: "antic_expire",
        unit: Unit::Milliseconds,
        default: DEFAULT_ANTIC_EXPIRE_JIFFIES as i64,
        min: 0,
        max: INT_MAX,
        help: "longest wait for the last reader's next nearby request; 0 disables anticipation",
    },
];

/// How far behind the head the elevator still goes back instead of wrapping.
const MAXBACK_SECTORS: u64 = 1024 * 1024;
/// A backward seek counts this many times its distance.
const BACK_PENALTY: u64 = 2;
/// The close-request window right after the wait begins; it doubles every millisecond.
const CLOSE_WINDOW_SECTORS: u64 = 8192;
/// Beyond this many milliseconds of waiting every request counts as close.
const CLOSE_DELAY_MAX_MS: u64 = 20;
/// The two request classes AS files requests by; the index is the kernel's (async 0, sync 1).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum Class {
    /// Buffered write-back.
    #[default]
    Async = 0,
    /// Reads and writes someone waits for.
    Sync = 1,
}

impl Class {
    fn of(request: &Request) -> Class {
        if request.is_sync() { Class::Sync } else { Class::Async }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

const SYNC: usize = Class::Sync.index();
const ASYNC: usize = Class::Async.index();

/// anticipatory's tunables in their working form, each array indexed by [`Class::index`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tunables {
    fifo_expire_jiffies: [u64; 2],
    batch_expire_jiffies: [u64; 2],
    antic_expire_jiffies: u64,
}

impl Default for Tunables {
    fn default() -> Tunables {
        let default = |index: usize| TUNABLES[index].default as u64;
        Tunables {
            fifo_expire_jiffies: [default(1), default(0)],
            batch_expire_jiffies: [default(3), default(2)],
            antic_expire_jiffies: default(4),
        }
    }
}

/// What AS keeps per request (the kernel's `as_rq`).
#[derive(Clone, Copy, Debug, Default)]
struct RequestData {
    /// The jiffy after which the request's FIFO deadline has passed.
    expires_jiffies: u64,
    class: Class,
    /// The process the request counts for (its io context); fusion may swap it.
    owner: ProcessId,
    /// `Some(own id)` from the moment AS moves the request out until it completes. Holding the
    /// generational id means a slot reused by a request AS never saw cannot match.
    moved: Option<RequestId>,
}

/// The batch state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Batch {
    class: Class,
    /// A new batch is chosen but waits for the previous batch's requests to complete.
    changed: bool,
    /// A read batch started; its clock starts when its first request completes.
    awaiting_first_read: bool,
    expires_jiffies: u64,
    last_check_fifo_jiffies: [u64; 2],
    /// Writes per write batch, tuned so that a write batch lasts about `write_batch_expire`.
    write_batch_count: u64,
    /// Writes left in the current write batch.
    current_write_count: u64,
    /// The last write batch ran out of work, so its length says nothing about the device.
    write_batch_idled: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AnticStatus {
    /// Not waiting.
    Off,
    /// Waiting for the anticipated process's last request to complete (no timer yet).
    WaitRequest,
    /// Waiting for its next request, until the timer jiffy.
    WaitNext,
    /// A wait ended (broken or timed out); do not start another before the next move.
    Finished,
}

/// The anticipation state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Anticipation {
    status: AnticStatus,
    /// When the anticipated process's last request completed.
    start_jiffies: u64,
    /// When a `WaitNext` wait times out.
    timer_jiffies: u64,
    /// The owner of the last synchronous request moved out; `None` after an asynchronous one.
    process: Option<ProcessId>,
    /// A request of `process` has completed since the last move.
    process_io_done: bool,
}

impl Anticipation {
    const fn is_waiting(&self) -> bool {
        matches!(self.status, AnticStatus::WaitRequest | AnticStatus::WaitNext)
    }
}

/// The anticipatory scheduler.
#[derive(Debug)]
pub struct Anticipatory {
    tunables: Tunables,
    /// Queued requests by start sector, per class.
    sort: [SortedMap<Sector, RequestId>; 2],
    /// Queued requests in insertion order, per class.
    fifo: [IdList; 2],
    /// Links of the FIFOs and of the alias list (a request is in one of them at a time).
    links: ListLinks,
    data: SideTable<RequestData>,
    /// The next request of each class in elevator order (the kernel's `next_arq`). Set exactly
    /// when the class has queued requests.
    next: [Option<RequestId>; 2],
    /// End of the last request moved out, per class: the head position the elevator measures
    /// from.
    last_sector: [Sector; 2],
    /// Requests moved out by the alias rule, handed out before anything else.
    aliases: IdList,
    processes: BTreeMap<ProcessId, ProcessStats>,
    /// How many of `processes` have exited (and wait to be forgotten).
    exited_count: usize,
    history: History,
    batch: Batch,
    anticipation: Anticipation,
    /// Requests moved out and not yet complete.
    dispatched_count: u64,
    /// Whether the first insertion has started the first read batch's clock.
    started: bool,
    counters: Counters,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    waits: u64,
    hits: u64,
    breaks: u64,
    timeouts: u64,
    read_batches: u64,
    write_batches: u64,
    expired_fifo_heads: u64,
    aliases: u64,
}

impl Anticipatory {
    /// A new, empty anticipatory with the kernel's defaults.
    pub fn new() -> Anticipatory {
        let tunables = Tunables::default();
        Anticipatory {
            tunables,
            sort: [SortedMap::new(), SortedMap::new()],
            fifo: [IdList::new(), IdList::new()],
            links: ListLinks::new(0),
            data: SideTable::new(0),
            next: [None, None],
            last_sector: [Sector(0); 2],
            aliases: IdList::new(),
            processes: BTreeMap::new(),
            exited_count: 0,
            history: History::default(),
            batch: Batch {
                class: Class::Async,
                changed: false,
                awaiting_first_read: false,
                expires_jiffies: 0,
                last_check_fifo_jiffies: [0; 2],
                write_batch_count: (tunables.batch_expire_jiffies[ASYNC] / 10).max(2),
                current_write_count: 0,
                write_batch_idled: false,
            },
            anticipation: Anticipation {
                status: AnticStatus::Off,
                start_jiffies: 0,
                timer_jiffies: 0,
                process: None,
                process_io_done: false,
            },
            dispatched_count: 0,
            started: false,
            counters: Counters::default(),
        }
    }
}

impl Default for Anticipatory {
    fn default() -> Anticipatory {
        Anticipatory::new()
    }
}

impl Scheduler for Anticipatory {
    fn name(&self) -> &'static str {
        NAME
    }

    fn insert(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let capacity = cx.requests.capacity();
        self.links.ensure_capacity(capacity);
        self.data.ensure_capacity(capacity);
        let now_jiffies = cx.now.jiffies();
        if !self.started {
            // The kernel starts this clock when the elevator is attached; a scheduler here
            // learns the time with its first request.
            self.started = true;
            self.batch.expires_jiffies = now_jiffies + self.tunables.batch_expire_jiffies[SYNC];
        }
        self.run_antic_timer(now_jiffies);

        let request = &cx.requests[id];
        let class = Class::of(request);
        let owner = request.process;
        let stats = self.processes.entry(owner).or_insert_with(ProcessStats::new);
        if class == Class::Sync {
            stats.record_sync_request(&mut self.history, now_jiffies, request.start, request.end());
        }
        stats.queued_count += 1;
        stats.references += 1;
        self.data[id] = RequestData {
            expires_jiffies: now_jiffies + self.tunables.fifo_expire_jiffies[class.index()],
            class,
            owner,
            moved: None,
        };
        self.insert_sorted(cx, id);
        self.fifo[class.index()].push_back(&mut self.links, id);
        self.next[class.index()] = self.choose(cx, class, Some(id), self.next[class.index()]);

        if self.anticipation.is_waiting() && self.can_break(cx, Some(id)) {
            self.anticipation.status = AnticStatus::Finished;
            if self.anticipation.process == Some(owner) {
                self.counters.hits += 1;
            } else {
                self.counters.breaks += 1;
            }
        }
    }

    fn dispatch(&mut self, cx: &Ctx<'_>) -> Dispatch {
        if let Some(alias) = self.aliases.pop_front(&mut self.links) {
            return Dispatch::Issue(alias);
        }
        let now_jiffies = cx.now.jiffies();
        self.run_antic_timer(now_jiffies);
        let reads = !self.fifo[SYNC].is_empty();
        let writes = !self.fifo[ASYNC].is_empty();
        if self.batch.class == Class::Async
            && !reads
            && (self.batch.current_write_count == 0 || !writes)
        {
            self.batch.write_batch_idled = true;
        }
        if !(reads || writes) {
            return Dispatch::Empty;
        }
        if self.anticipation.is_waiting() || self.batch.changed {
            return self.dispatch_idle(now_jiffies);
        }

        // Continue the current batch unless both classes wait and it has run out.
        let mut chosen = None;
        let mut fifo_checked = false;
        if !(reads && writes && self.batch_expired(now_jiffies)) {
            let next = self.next[self.batch.class.index()];
            if self.batch.class == Class::Sync && self.tunables.antic_expire_jiffies > 0 {
                if self.fifo_expired(Class::Sync, now_jiffies) {
                    chosen = self.fifo[SYNC].front();
                    fifo_checked = true;
                    self.counters.expired_fifo_heads += 1;
                } else if self.can_anticipate(cx, next) {
                    self.dispatch_anticipate(now_jiffies);
                    return self.dispatch_idle(now_jiffies);
                }
            }
            if chosen.is_none()
                && let Some(next) = next
            {
                // The read batch's clock only runs while writes wait.
                if reads && !writes {
                    self.batch.expires_jiffies =
                        now_jiffies + self.tunables.batch_expire_jiffies[SYNC];
                }
                chosen = Some(next);
            }
        }
        let mut request = match chosen {
            Some(request) => request,
            None => self.dispatch_new_batch(reads, writes, now_jiffies),
        };
        if !fifo_checked && self.fifo_expired(self.batch.class, now_jiffies) {
            request = self.fifo[self.batch.class.index()].front().expect("expired FIFO has a head");
            self.counters.expired_fifo_heads += 1;
        }
        if self.batch.changed {
            // The new batch starts only once the old one has left the device.
            if self.dispatched_count > 0 {
                return self.dispatch_idle(now_jiffies);
            }
            match self.batch.class {
                Class::Async => {
                    self.batch.expires_jiffies =
                        now_jiffies + self.tunables.batch_expire_jiffies[ASYNC];
                }
                Class::Sync => self.batch.awaiting_first_read = true,
            }
            self.batch.changed = false;
        }
        self.move_request(cx, request);
        Dispatch::Issue(request)
    }

    fn drain(&mut self, cx: &Ctx<'_>, out: &mut Vec<RequestId>) {
        let now_jiffies = cx.now.jiffies();
        self.run_antic_timer(now_jiffies);
        while let Some(alias) = self.aliases.pop_front(&mut self.links) {
            out.push(alias);
        }
        // Forced dispatch: batch accounting would be meaningless, so it restarts as a read
        // batch (write-batch tuning happens at the write→read switch).
        self.batch.class = Class::Sync;
        self.batch.changed = false;
        self.batch.awaiting_first_read = false;
        for class in [Class::Sync, Class::Async] {
            while let Some(id) = self.next[class.index()] {
                self.move_request(cx, id);
                out.push(id);
            }
            self.batch.last_check_fifo_jiffies[class.index()] = now_jiffies;
        }
        assert!(self.queued() == 0, "{NAME}: drain left requests queued");
    }

    fn queued(&self) -> usize {
        self.fifo[SYNC].count() + self.fifo[ASYNC].count() + self.aliases.count()
    }

    fn dispatch_insert(&self) -> DispatchInsert {
        DispatchInsert::Sort
    }

    fn merge_lookups(&self) -> MergeLookups {
        MergeLookups::ALL
    }

    fn allow_merge(&self, _cx: &Ctx<'_>, target: RequestId, _bio: &Bio) -> bool {
        // A request moved out by the alias rule is on its way to the device.
        !self.is_moved(target)
    }

    fn allow_front_lookup(&self, _cx: &Ctx<'_>, target: RequestId, bio: &Bio) -> bool {
        // `as_merge` searches the sort tree of the class numbered like the bio's data
        // direction: READ (0) is the async tree, WRITE (1) the sync tree. A read there meets
        // only async writes, which `elv_rq_merge_ok` refuses; a write meets reads (refused)
        // and sync writes. So only a write bio front-merges through the tree, and only into a
        // sync request (legacy-vs-kernel.md row 9).
        bio.op == Op::Write && self.data[target].class == Class::Sync
    }

    fn merged(&mut self, cx: &Ctx<'_>, target: RequestId, kind: MergeKind) {
        if let MergeKind::Front { old_start } = kind {
            let class = self.data[target].class.index();
            let removed = self.sort[class].remove(&old_start);
            debug_assert_eq!(removed, Some(target), "sort tree out of step at {old_start:?}");
            // `next` keeps pointing at the request even if it now lies behind the head: the
            // kernel does not re-evaluate it either. But an alias moved out meanwhile chose the
            // sweep's next request without this one in the tree; offer it again, or the class
            // could be left with queued requests and no next one (2.6.18 would strand it).
            if self.insert_sorted(cx, target) {
                let class = self.data[target].class;
                self.next[class.index()] =
                    self.choose(cx, class, Some(target), self.next[class.index()]);
            }
        }
    }

    fn merge_neighbour(&self, cx: &Ctx<'_>, id: RequestId, kind: MergeKind) -> Option<RequestId> {
        if self.is_moved(id) {
            return None;
        }
        let start = cx.requests[id].start;
        let sort = &self.sort[self.data[id].class.index()];
        match kind {
            MergeKind::Back => sort.after(&start),
            MergeKind::Front { .. } => sort.before(&start),
        }
        .map(|(_, neighbour)| neighbour)
    }

    fn requests_merged(&mut self, cx: &Ctx<'_>, kept: RequestId, absorbed: RequestId) {
        debug_assert!(!self.is_moved(kept) && !self.is_moved(absorbed));
        let class = self.data[kept].class;
        debug_assert_eq!(class, self.data[absorbed].class, "fused requests share a class");
        if self.data[absorbed].expires_jiffies < self.data[kept].expires_jiffies {
            // The survivor inherits the earlier deadline, its FIFO place and its owner.
            let fifo = &mut self.fifo[class.index()];
            fifo.remove(&mut self.links, kept);
            fifo.insert_after(&mut self.links, absorbed, kept);
            self.data[kept].expires_jiffies = self.data[absorbed].expires_jiffies;
            let kept_owner = self.data[kept].owner;
            self.data[kept].owner = self.data[absorbed].owner;
            self.data[absorbed].owner = kept_owner;
        }
        self.unlink_queued(cx, absorbed);
        let owner = self.data[absorbed].owner;
        let stats = self.process_mut(owner);
        debug_assert!(stats.queued_count > 0, "{owner} has no queued request to fuse");
        stats.queued_count = stats.queued_count.saturating_sub(1);
        self.release_reference(owner, class, cx.now.jiffies());
    }

    fn may_queue(&self, cx: &Ctx<'_>, process: ProcessId, _op: Op) -> MayQueue {
        let waiting = match self.anticipation.status {
            AnticStatus::WaitRequest => true,
            AnticStatus::WaitNext => cx.now.jiffies() < self.anticipation.timer_jiffies,
            AnticStatus::Off | AnticStatus::Finished => false,
        };
        if waiting && self.anticipation.process == Some(process) {
            MayQueue::Must
        } else {
            MayQueue::May
        }
    }

    fn activate(&mut self, _cx: &Ctx<'_>, id: RequestId) {
        // The block layer calls this only for requests this scheduler moved out.
        debug_assert!(self.is_moved(id), "activate for {id:?}, which AS never moved out");
        let stats = self.process_mut(self.data[id].owner);
        debug_assert!(stats.dispatched_count > 0, "activate without a move");
        stats.dispatched_count = stats.dispatched_count.saturating_sub(1);
    }

    fn deactivate(&mut self, _cx: &Ctx<'_>, id: RequestId) {
        debug_assert!(self.is_moved(id), "deactivate for {id:?}, which AS never moved out");
        self.process_mut(self.data[id].owner).dispatched_count += 1;
    }

    fn complete(&mut self, cx: &Ctx<'_>, done: &Completion) {
        let id = done.id;
        debug_assert!(self.is_moved(id), "complete for {id:?}, which AS never moved out");
        let now_jiffies = cx.now.jiffies();
        self.run_antic_timer(now_jiffies);
        let RequestData { class, owner, .. } = self.data[id];
        self.data[id].moved = None;

        if self.batch.changed && self.dispatched_count == 1 {
            // The old batch's last request: the new batch may start (without restarting a
            // write batch's clock, the 2.6.18 behaviour).
            self.batch.changed = false;
            if self.batch.class == Class::Sync {
                self.batch.awaiting_first_read = true;
            }
        }
        debug_assert!(self.dispatched_count > 0, "completion without a move");
        self.dispatched_count = self.dispatched_count.saturating_sub(1);
        if self.batch.awaiting_first_read && self.batch.class == class {
            let write_batch_expire = self.tunables.batch_expire_jiffies[ASYNC];
            self.batch.update_write_batch(now_jiffies, write_batch_expire);
            self.batch.expires_jiffies = now_jiffies + self.tunables.batch_expire_jiffies[SYNC];
            self.batch.awaiting_first_read = false;
        }
        if self.anticipation.process == Some(owner) {
            self.anticipation.start_jiffies = now_jiffies;
            self.anticipation.process_io_done = true;
            if self.anticipation.status == AnticStatus::WaitRequest {
                self.arm_antic_timer();
            }
        }
        self.release_reference(owner, class, now_jiffies);
    }

    fn process_exited(&mut self, cx: &Ctx<'_>, process: ProcessId) {
        self.run_antic_timer(cx.now.jiffies());
        if let Some(stats) = self.processes.get_mut(&process)
            && stats.running
        {
            stats.running = false;
            self.exited_count += 1;
            self.forget_if_gone(process);
        }
    }

    fn tunables(&self) -> &'static [TunableSpec] {
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        let spec = elevator_core::tunable::find(TUNABLES, NAME, name)?;
        let tunables = &self.tunables;
        // At HZ=1000 the kernel's jiffies→ms conversion for sysfs is the identity.
        let jiffies = match spec.name {
            "read_expire" => tunables.fifo_expire_jiffies[SYNC],
            "write_expire" => tunables.fifo_expire_jiffies[ASYNC],
            "read_batch_expire" => tunables.batch_expire_jiffies[SYNC],
            "write_batch_expire" => tunables.batch_expire_jiffies[ASYNC],
            "antic_expire" => tunables.antic_expire_jiffies,
            other => unreachable!("tunable {other} is in the table but not handled"),
        };
        Ok(jiffies as i64)
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let spec = crate::checked(TUNABLES, NAME, name, value)?;
        // The range check above makes the conversion lossless; ms→jiffies is the identity.
        let jiffies = value as u64;
        let tunables = &mut self.tunables;
        match spec.name {
            "read_expire" => tunables.fifo_expire_jiffies[SYNC] = jiffies,
            "write_expire" => tunables.fifo_expire_jiffies[ASYNC] = jiffies,
            "read_batch_expire" => tunables.batch_expire_jiffies[SYNC] = jiffies,
            "write_batch_expire" => tunables.batch_expire_jiffies[ASYNC] = jiffies,
            "antic_expire" => tunables.antic_expire_jiffies = jiffies,
            other => unreachable!("tunable {other} is in the table but not handled"),
        }
        Ok(())
    }

    fn counters(&self) -> Vec<Counter> {
        let counters = self.counters;
        let history = self.history;
        vec![
            Counter { name: "anticipation_waits", value: counters.waits },
            Counter { name: "anticipation_hits", value: counters.hits },
            Counter { name: "anticipation_breaks", value: counters.breaks },
            Counter { name: "anticipation_timeouts", value: counters.timeouts },
            Counter { name: "read_batches", value: counters.read_batches },
            Counter { name: "write_batches", value: counters.write_batches },
            Counter { name: "write_batch_count", value: self.batch.write_batch_count },
            Counter { name: "expired_fifo_heads", value: counters.expired_fifo_heads },
            Counter { name: "aliases", value: counters.aliases },
            Counter { name: "est_exit_prob_percent", value: 100 * history.exit_prob / FIXED_ONE },
            Counter {
                name: "est_exit_no_coop_percent",
                value: 100 * history.exit_no_coop / FIXED_ONE,
            },
            Counter { name: "est_new_ttime_ms", value: history.new_ttime_mean_jiffies },
            Counter { name: "est_new_seek_sectors", value: history.new_seek_mean_sectors },
        ]
    }
}

impl Anticipatory {
    /// The answer while the scheduler waits on purpose: until the timer while one runs; while
    /// the awaited request is still at the device, or a new batch waits for the old one to
    /// leave it, the kernel has no timer and is re-run by the completion — a safety bound of
    /// `antic_expire` (at least a jiffy) stands in.
    fn dispatch_idle(&self, now_jiffies: u64) -> Dispatch {
        let until_jiffies = if self.anticipation.status == AnticStatus::WaitNext {
            self.anticipation.timer_jiffies
        } else {
            now_jiffies + self.tunables.antic_expire_jiffies.max(1)
        };
        debug_assert!(until_jiffies > now_jiffies, "an expired timer was not run");
        Dispatch::Idle { until: Instant::from_jiffies(until_jiffies) }
    }

    /// Starts a wait: on the next request at once if the anticipated process's last request
    /// is done (or there is no process), otherwise first on that request's completion.
    fn dispatch_anticipate(&mut self, now_jiffies: u64) {
        debug_assert_eq!(self.anticipation.status, AnticStatus::Off);
        self.counters.waits += 1;
        if self.anticipation.process.is_none() || self.anticipation.process_io_done {
            self.arm_antic_timer();
            debug_assert!(self.anticipation.timer_jiffies > now_jiffies);
        } else {
            self.anticipation.status = AnticStatus::WaitRequest;
        }
    }

    /// Picks the class and first request of a new batch: after a read batch, writes if any
    /// wait; otherwise reads from the FIFO head; writes where their sweep left off (2.6.18).
    fn dispatch_new_batch(&mut self, reads: bool, writes: bool, now_jiffies: u64) -> RequestId {
        let batch = &mut self.batch;
        if reads && !(writes && batch.class == Class::Sync) {
            if batch.class == Class::Async {
                batch.changed = true;
            }
            batch.class = Class::Sync;
            batch.last_check_fifo_jiffies[SYNC] = now_jiffies;
            self.counters.read_batches += 1;
            return self.fifo[SYNC].front().expect("reads are queued");
        }
        if batch.class == Class::Sync {
            batch.changed = true;
            batch.awaiting_first_read = false;
        }
        batch.class = Class::Async;
        batch.current_write_count = batch.write_batch_count;
        batch.write_batch_idled = false;
        self.counters.write_batches += 1;
        self.next[ASYNC].expect("writes are queued, so the write sweep has a next request")
    }

    /// Whether the current batch has run its course (never while a switch is under way).
    fn batch_expired(&self, now_jiffies: u64) -> bool {
        let batch = &self.batch;
        if batch.changed || batch.awaiting_first_read {
            return false;
        }
        let timed_out = now_jiffies > batch.expires_jiffies;
        match batch.class {
            Class::Sync => timed_out,
            Class::Async => timed_out || batch.current_write_count == 0,
        }
    }

    /// Whether `class`'s oldest request has passed its deadline; looked at no more than once
    /// per FIFO expiry interval so that a backlog of expired requests cannot cause a seek storm.
    fn fifo_expired(&mut self, class: Class, now_jiffies: u64) -> bool {
        let index = class.index();
        let since_check = now_jiffies.abs_diff(self.batch.last_check_fifo_jiffies[index]);
        if since_check < self.tunables.fifo_expire_jiffies[index] {
            return false;
        }
        self.batch.last_check_fifo_jiffies[index] = now_jiffies;
        self.fifo[index].front().is_some_and(|head| now_jiffies > self.data[head].expires_jiffies)
    }

    /// Whether to wait rather than take `candidate` (the next request of the read batch, if
    /// any).
    fn can_anticipate(&mut self, cx: &Ctx<'_>, candidate: Option<RequestId>) -> bool {
        self.anticipation.process.is_some()
            && self.anticipation.status != AnticStatus::Finished
            && !self.can_break(cx, candidate)
    }

    /// §4.6: whether `candidate` (or, with none, the mere passage of time) ends or forbids a
    /// wait for the anticipated process. Updates the exit statistics and, for a close request
    /// of another process, credits it to the awaited process's history (cooperating processes).
    fn can_break(&mut self, cx: &Ctx<'_>, candidate: Option<RequestId>) -> bool {
        let Some(process) = self.anticipation.process else {
            return true;
        };
        if candidate.is_some_and(|id| self.data[id].owner == process) {
            return true;
        }
        let now_jiffies = cx.now.jiffies();
        let antic_expire_jiffies = self.tunables.antic_expire_jiffies;
        let waited_jiffies = now_jiffies.saturating_sub(self.anticipation.start_jiffies);
        if self.anticipation.process_io_done && waited_jiffies >= antic_expire_jiffies {
            return true;
        }
        let Some(stats) = self.processes.get(&process) else {
            return false;
        };
        if stats.queued_count > 0 || stats.dispatched_count > 0 {
            return true;
        }
        let close = candidate
            .filter(|&id| self.data[id].class == Class::Sync && self.close_request(cx, stats, id));
        let history = &mut self.history;
        let stats = self.processes.get_mut(&process).expect("looked up above");
        if let Some(id) = close {
            if !stats.running {
                if stats.ttime_samples == 0 {
                    history.exit_prob = decay(history.exit_prob, FIXED_ONE);
                }
                history.exit_no_coop = decay(history.exit_no_coop, 0);
            }
            let request = &cx.requests[id];
            stats.record_sync_request(history, now_jiffies, request.start, request.end());
            return true;
        }
        if !stats.running {
            if stats.ttime_samples == 0 {
                history.exit_prob = decay(history.exit_prob, FIXED_ONE);
            }
            if history.exit_no_coop > FIXED_ONE / 2 {
                return true;
            }
        }
        if stats.ttime_samples == 0 {
            history.new_ttime_mean_jiffies > antic_expire_jiffies
                || history.exit_prob * history.exit_no_coop > FIXED_ONE / 2 * FIXED_ONE
        } else {
            stats.ttime_mean_jiffies > antic_expire_jiffies
        }
    }

    /// §4.5: whether `id` lies close enough to the head to be worth taking instead of waiting.
    /// The window grows the longer the wait has lasted.
    fn close_request(&self, cx: &Ctx<'_>, stats: &ProcessStats, id: RequestId) -> bool {
        let last = self.last_sector[self.batch.class.index()].0;
        let next = cx.requests[id].start.0;
        let anticipation = &self.anticipation;
        // 2.6.18 measures the delay in milliseconds and compares it with antic_expire in
        // jiffies; at HZ=1000 the two coincide.
        let delay_ms = if anticipation.status == AnticStatus::Off || !anticipation.process_io_done {
            0
        } else {
            cx.now.jiffies().saturating_sub(anticipation.start_jiffies) * 1000 / HZ
        };
        let window_sectors = if delay_ms == 0 {
            CLOSE_WINDOW_SECTORS
        } else if delay_ms <= CLOSE_DELAY_MAX_MS && delay_ms <= self.tunables.antic_expire_jiffies {
            CLOSE_WINDOW_SECTORS << delay_ms
        } else {
            return true;
        };
        if last <= next.saturating_add(window_sectors / 2) && next <= last + window_sectors {
            return true;
        }
        let expected_seek_sectors = if stats.seek_samples == 0 {
            self.history.new_seek_mean_sectors
        } else {
            stats.seek_mean_sectors
        };
        expected_seek_sectors > last.abs_diff(next)
    }

    /// Starts the `WaitNext` timer from the completion of the anticipated process's request.
    fn arm_antic_timer(&mut self) {
        self.anticipation.timer_jiffies =
            self.anticipation.start_jiffies + self.tunables.antic_expire_jiffies;
        self.anticipation.status = AnticStatus::WaitNext;
    }

    /// What the kernel's timer does when a `WaitNext` wait runs out, applied by the first call
    /// at or after its jiffy.
    fn run_antic_timer(&mut self, now_jiffies: u64) {
        if self.anticipation.status != AnticStatus::WaitNext
            || now_jiffies < self.anticipation.timer_jiffies
        {
            return;
        }
        self.anticipation.status = AnticStatus::Finished;
        self.counters.timeouts += 1;
        let process = self.anticipation.process.expect("a wait has a process");
        let stats = &self.processes[&process];
        if stats.ttime_samples == 0 {
            self.history.exit_prob = decay(self.history.exit_prob, FIXED_ONE);
        }
        if !stats.running {
            // No cooperating request came to the rescue of an exited process.
            self.history.exit_no_coop = decay(self.history.exit_no_coop, FIXED_ONE);
        }
    }

    /// The kernel's `as_move_to_dispatch`: any wait ends, the head moves to the request's
    /// end, its owner becomes the process to anticipate (or none after a write), and the
    /// sweep's next request is chosen before the request leaves the scheduler.
    fn move_request(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let RequestData { class, owner, .. } = self.data[id];
        let start = cx.requests[id].start;
        self.anticipation.status = AnticStatus::Off;
        self.last_sector[class.index()] = cx.requests[id].end();
        let previous = match class {
            Class::Sync => self.anticipation.process.replace(owner),
            Class::Async => {
                self.batch.current_write_count = self.batch.current_write_count.saturating_sub(1);
                self.anticipation.process.take()
            }
        };
        self.anticipation.process_io_done = false;
        self.next[class.index()] = self.find_next(cx, class, id, start);
        self.unlink_queued(cx, id);
        self.data[id].moved = Some(id);
        let stats = self.process_mut(owner);
        debug_assert!(stats.queued_count > 0, "{owner} has no queued request to move");
        stats.queued_count = stats.queued_count.saturating_sub(1);
        stats.dispatched_count += 1;
        self.dispatched_count += 1;
        if let Some(previous) = previous
            && previous != owner
        {
            self.forget_if_gone(previous);
        }
    }

    /// Takes a queued request out of the tree and the FIFO; if the sweep was to continue at
    /// it, it continues at the next request in elevator order instead. The caller accounts
    /// for the owner.
    fn unlink_queued(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let class = self.data[id].class;
        let start = cx.requests[id].start;
        if self.next[class.index()] == Some(id) {
            self.next[class.index()] = self.find_next(cx, class, id, start);
        }
        self.fifo[class.index()].remove(&mut self.links, id);
        let removed = self.sort[class.index()].remove(&start);
        debug_assert_eq!(removed, Some(id), "sort tree out of step at {start:?}");
    }

    /// The next request in elevator order after `id` (still in the tree at `start`): the
    /// better of its successor — or the lowest request, wrapping — and its predecessor.
    fn find_next(
        &self,
        cx: &Ctx<'_>,
        class: Class,
        id: RequestId,
        start: Sector,
    ) -> Option<RequestId> {
        let sort = &self.sort[class.index()];
        let (predecessor, successor) = sort.neighbours(&start);
        let successor = successor
            .map(|(_, successor)| successor)
            .or_else(|| sort.first().map(|(_, lowest)| lowest).filter(|&lowest| lowest != id));
        let predecessor = predecessor.map(|(_, predecessor)| predecessor);
        self.choose(cx, class, successor, predecessor)
    }

    /// The kernel's `as_choose_req`: the better of two requests of `class` for the head at
    /// the class's last sector.
    fn choose(
        &self,
        cx: &Ctx<'_>,
        class: Class,
        first: Option<RequestId>,
        second: Option<RequestId>,
    ) -> Option<RequestId> {
        let last = self.last_sector[class.index()];
        common::choose_request(first, second, |first, second| {
            prefers_first(last, cx.requests[first].start, cx.requests[second].start)
        })
    }

    /// Puts `id` in its class's tree. A queued request with the same start sector (an alias)
    /// is moved out first, which also ends any wait, and will be the next one dispatched.
    /// Returns whether that happened.
    fn insert_sorted(&mut self, cx: &Ctx<'_>, id: RequestId) -> bool {
        let start = cx.requests[id].start;
        let class = self.data[id].class.index();
        let mut moved_alias = false;
        loop {
            let Err(alias) = self.sort[class].insert_vacant(start, id) else {
                return moved_alias;
            };
            self.move_request(cx, alias);
            self.aliases.push_back(&mut self.links, alias);
            self.counters.aliases += 1;
            moved_alias = true;
        }
    }

    /// A request of `owner` leaves for good (completed or fused away). Like the kernel's
    /// release of the request's io context, a synchronous one marks the process as having had
    /// I/O complete now.
    fn release_reference(&mut self, owner: ProcessId, class: Class, now_jiffies: u64) {
        let stats = self.process_mut(owner);
        if class == Class::Sync {
            stats.io_running = true;
            stats.last_end_request_jiffies = now_jiffies;
        }
        debug_assert!(stats.references > 0, "{owner} released more requests than it had");
        stats.references = stats.references.saturating_sub(1);
        if !stats.running {
            self.forget_if_gone(owner);
        }
    }

    /// Drops the history of a process that has exited once no request and no wait refers to
    /// it, so that the map stays bounded by the processes with I/O in the scheduler.
    fn forget_if_gone(&mut self, process: ProcessId) {
        // Most calls come while no process has exited; skip the lookup then.
        if self.exited_count == 0 || self.anticipation.process == Some(process) {
            return;
        }
        if self.processes.get(&process).is_some_and(|stats| !stats.running && stats.references == 0)
        {
            self.processes.remove(&process);
            self.exited_count -= 1;
        }
    }

    /// Whether AS moved `id` out and has not yet seen it complete.
    fn is_moved(&self, id: RequestId) -> bool {
        self.data[id].moved == Some(id)
    }

    fn process_mut(&mut self, process: ProcessId) -> &mut ProcessStats {
        self.processes.get_mut(&process).expect("a process with requests in AS has a history")
    }
}

impl Batch {
    /// Retunes the writes per write batch at the write→read switch from how long the write
    /// batch lasted, unless it ran out of work.
    fn update_write_batch(&mut self, now_jiffies: u64, write_batch_expire_jiffies: u64) {
        let target = i128::from(write_batch_expire_jiffies);
        // The batch's clock was set to end `target` after it started.
        let lasted = i128::from(now_jiffies) - i128::from(self.expires_jiffies) + target;
        let lasted = lasted.max(0);
        if lasted > target && !self.write_batch_idled {
            if lasted > 3 * target {
                self.write_batch_count /= 2;
            } else {
                self.write_batch_count = self.write_batch_count.saturating_sub(1);
            }
        } else if lasted < target && self.current_write_count == 0 {
            if target > 3 * lasted {
                self.write_batch_count = self.write_batch_count.saturating_mul(2);
            } else {
                self.write_batch_count += 1;
            }
        }
        self.write_batch_count = self.write_batch_count.max(1);
    }
}

/// `as_choose_req`'s rule for two candidates at `first` and `second` with the head at `last`:
/// the shared seek rule (`common::seek_prefers_first`) with AS's fixed limits — ahead costs
/// the distance, behind by at most [`MAXBACK_SECTORS`] twice the distance, further behind
/// wraps to the next sweep. Not wrapping beats wrapping; of two wrapping, the lower sector
/// wins; otherwise the cheaper, and on a tie the higher sector.
fn prefers_first(last: Sector, first: Sector, second: Sector) -> bool {
    common::seek_prefers_first(last, MAXBACK_SECTORS, BACK_PENALTY, first, second)
}

#[cfg(test)]
mod tests {
    use elevator_core::{Duration, Instant, Op, QueueConfig};

    use super::*;
    use crate::SchedulerSpec;
    use crate::testkit::{Harness, ServiceTime, read, seeking_service, write};

    /// Half a millisecond per request plus 160 ns per 1024 sectors of head movement: a trip
    /// between regions 50 000 000 sectors apart costs about 8 ms, a sequential read 0.5 ms.
    fn disk() -> ServiceTime {
        seeking_service(Duration::from_micros(500), Duration::from_nanos(160))
    }

    fn harness(spec: &str) -> Harness {
        let scheduler = SchedulerSpec::parse(spec).unwrap().build();
        Harness::new(scheduler, QueueConfig::default()).with_service(disk())
    }

    /// A process reading 4 KiB blocks upward from `start`; each read is submitted `think` after
    /// the previous one completes, until `stop`.
    fn sequential_reader(
        h: &mut Harness,
        process: u32,
        start: u64,
        think: Duration,
        stop: Instant,
    ) {
        h.submit(read(process, start, 8));
        let mut next_sector = start + 8;
        h.on_complete(move |done| {
            if done.process.0 != process || done.completed >= stop {
                return Vec::new();
            }
            let bio = read(process, next_sector, 8);
            next_sector += 8;
            vec![(done.completed + think, bio)]
        });
    }

    /// Head movements of more than a million sectors: trips between the readers' regions.
    const LONG_SEEK_SECTORS: u64 = 1_000_000;

    /// Processes 1 and 2 read sequentially 50 000 000 sectors apart, 1 ms of think time each.
    fn two_readers(spec: &str) -> Harness {
        let stop = Instant::from_millis(1500);
        let mut h = harness(spec);
        sequential_reader(&mut h, 1, 0, Duration::from_millis(1), stop);
        sequential_reader(&mut h, 2, 50_000_000, Duration::from_millis(1), stop);
        h.run();
        h
    }

    /// Each Idle answer with the process it waited for: at depth 1, the owner of the last
    /// request issued before it.
    fn awaited(h: &Harness) -> Vec<(Instant, Instant, u32)> {
        h.idle_answers()
            .iter()
            .map(|&(at, until)| {
                let last = h.issued().iter().rev().find(|issued| issued.at <= at).unwrap();
                (at, until, last.process.0)
            })
            .collect()
    }

    fn pattern(h: &Harness) -> String {
        h.issued().iter().map(|issued| if issued.op == Op::Read { 'R' } else { 'W' }).collect()
    }

    // Proves anticipation defeats deceptive idleness: two sequential readers in distant
    // regions, each submitting its next read 1 ms after the last completes, for 1.5 s on a
    // seeking disk. deadline (and AS without anticipation) sees only the other reader's request
    // when one completes and swings the head across for every request (182 long seeks, 183
    // requests); anticipatory waits for the reader that just completed and serves each in
    // streaks that only a read FIFO expiry ends (6 long seeks, 977 requests). Asserted: at most
    // a tenth of deadline's long seeks, and at least three times the requests.
    #[test]
    fn anticipation_serves_sequential_readers_in_streaks() {
        let anticipatory = two_readers("anticipatory");
        let deadline = two_readers("deadline");
        let (as_seeks, deadline_seeks) =
            (anticipatory.long_seeks(LONG_SEEK_SECTORS), deadline.long_seeks(LONG_SEEK_SECTORS));
        assert!(deadline_seeks > 100, "deadline alternates: {deadline_seeks}");
        assert!(as_seeks * 10 <= deadline_seeks, "{as_seeks} vs deadline's {deadline_seeks}");
        assert!(anticipatory.issued().len() >= 3 * deadline.issued().len());
        // Every wait was ended by the awaited reader's own next read; the streaks end at FIFO
        // expiries, and both readers get a fair share.
        assert_eq!(
            anticipatory.counter("anticipation_hits"),
            anticipatory.counter("anticipation_waits")
        );
        assert!(anticipatory.counter("expired_fifo_heads") >= 4);
        let (first, second) = (anticipatory.completed_bytes(1), anticipatory.completed_bytes(2));
        assert!(first.abs_diff(second) * 10 < first + second, "{first} vs {second}");
    }

    // Proves a process that thinks longer than antic_expire is not waited for: reader 2 thinks
    // 20 ms between reads (sampled as 19, the cap), reader 1 thinks 1 ms; read_expire=20 makes
    // the FIFO hand reader 2 the disk often (17 reads). Reader 2 has no history after its first
    // read, so AS waits once (judged by the new-process averages) and times out; its first
    // think-time sample gives a mean of 23 jiffies > 6, after which no Idle answer waits for
    // it. Reader 1 (mean ≈ 1) is waited for hundreds of times.
    #[test]
    fn a_process_that_thinks_longer_than_antic_expire_is_not_waited_for() {
        let stop = Instant::from_millis(1000);
        let mut h = harness("anticipatory:read_expire=20");
        sequential_reader(&mut h, 1, 0, Duration::from_millis(1), stop);
        sequential_reader(&mut h, 2, 50_000_000, Duration::from_millis(20), stop);
        h.run();
        let second_read = h.done().iter().filter(|done| done.process.0 == 2).nth(1).unwrap();
        assert!(h.done().iter().filter(|done| done.process.0 == 2).count() >= 10);
        let waits = awaited(&h);
        let slow_waits: Vec<_> = waits.iter().filter(|wait| wait.2 == 2).collect();
        assert_eq!(slow_waits.len(), 1, "{slow_waits:?}");
        assert!(slow_waits[0].0 < second_read.submitted, "only before its first sample");
        // That wait ran out at the timer: completion jiffy + antic_expire.
        assert_eq!(slow_waits[0].1, Instant::from_jiffies(slow_waits[0].0.jiffies() + 6));
        assert!(waits.iter().filter(|wait| wait.2 == 1).count() > 300);
    }

    // Proves antic_expire=0 turns anticipation off and leaves deadline-like batching: on the
    // two-reader script AS never answers Idle and alternates between the readers like
    // deadline (182 long seeks each, measured), within a tenth.
    #[test]
    fn antic_expire_0_never_waits_and_alternates_like_deadline() {
        let plain = two_readers("anticipatory:antic_expire=0");
        let deadline = two_readers("deadline");
        assert!(plain.idle_answers().is_empty());
        assert_eq!(plain.counter("anticipation_waits"), 0);
        let (plain_seeks, deadline_seeks) =
            (plain.long_seeks(LONG_SEEK_SECTORS), deadline.long_seeks(LONG_SEEK_SECTORS));
        assert!(plain_seeks.abs_diff(deadline_seeks) * 10 <= deadline_seeks, "{plain_seeks}");
    }

    // Proves the read FIFO check interrupts a streak: while reader 1 streams upward from
    // sector 1 000 000 under anticipation, process 9's read at sector 10 (queued at t=2 ms,
    // deadline jiffy 127) is never the elevator's choice. FIFO checks are rate-limited to one
    // per read_expire from the batch start (jiffy 0): the check at jiffy 125 finds the deadline
    // not yet passed (expired means strictly after), the next one, at jiffy 250, takes the FIFO
    // head ahead of reader 1's next block.
    #[test]
    fn an_expired_read_is_taken_from_the_fifo_head_during_a_read_batch() {
        let mut h = harness("anticipatory");
        sequential_reader(
            &mut h,
            1,
            1_000_000,
            Duration::from_millis(1),
            Instant::from_millis(400),
        );
        h.submit_at(Instant::from_millis(2), read(9, 10, 8));
        h.run();
        let position = h.issued().iter().position(|issued| issued.process.0 == 9).unwrap();
        assert_eq!(h.issued()[position].at.jiffies(), 250);
        assert!(h.issued()[..position].iter().all(|issued| issued.process.0 == 1));
        assert_eq!(h.counter("expired_fifo_heads"), 1);
    }

    // Proves batches alternate when both classes wait: a 1 ms-think reader keeps a read batch
    // going (with waits between its reads) while 20 async writes are queued from t=0. The read
    // batch's clock starts when its first read completes (jiffy 0) and it expires strictly
    // after read_batch_expire, so the first write goes at jiffy 501; the writes then run as
    // one batch (20 < write_batch_count 24) and reads resume.
    #[test]
    fn a_write_batch_gets_its_turn_after_read_batch_expire() {
        let mut h = harness("anticipatory");
        sequential_reader(
            &mut h,
            1,
            1_000_000,
            Duration::from_millis(1),
            Instant::from_millis(700),
        );
        for i in 0..20 {
            h.submit(write(5, 10_000_000 + i * 64, 8));
        }
        h.run();
        let first_write = h.issued().iter().position(|issued| issued.op == Op::Write).unwrap();
        assert_eq!(h.issued()[first_write].at.jiffies(), 501);
        let pattern = pattern(&h);
        assert!(pattern[..first_write].bytes().all(|op| op == b'R'));
        assert_eq!(&pattern[first_write..first_write + 21], "WWWWWWWWWWWWWWWWWWWWR");
        assert_eq!(h.counter("write_batches"), 1);
        assert_eq!(h.counter("read_batches"), 2);
    }

    // Proves a close request of another process ends the wait at once (§4.6 rule 4): after
    // process 1's read at 1000 completes, process 2's queued read 100 sectors further is taken
    // without waiting; the same read 50 000 000 sectors away is waited past until the timer.
    #[test]
    fn a_close_request_of_another_process_is_taken_without_waiting() {
        for (start, waits) in [(1_100, 0), (50_000_000, 1)] {
            let mut h = harness("anticipatory");
            h.submit(read(1, 1_000, 8));
            h.submit(read(2, start, 8));
            h.run();
            assert_eq!(h.idle_answers().len(), waits, "other read at {start}");
            assert_eq!(h.counter("anticipation_timeouts"), waits as u64);
        }
    }

    // Proves may_queue favours the awaited process: while AS waits for process 1, process 1
    // must get a request even from a full pool, process 2 follows the normal rules; after the
    // timer's jiffy nobody is favoured.
    #[test]
    fn the_awaited_process_must_be_allowed_to_queue() {
        let mut h = harness("anticipatory");
        h.submit(read(1, 0, 8));
        h.submit(read(2, 50_000_000, 8));
        h.run_until(Instant::from_nanos(600_000));
        let (_, until) = *h.idle_answers().last().unwrap();
        let vote = |h: &Harness, at: Instant, process: u32| {
            let cx = Ctx { now: at, requests: h.queue().requests(), in_flight: 0, depth: 1 };
            h.queue().scheduler().may_queue(&cx, ProcessId(process), Op::Read)
        };
        assert_eq!(vote(&h, h.now(), 1), MayQueue::Must);
        assert_eq!(vote(&h, h.now(), 2), MayQueue::May);
        assert_eq!(vote(&h, until, 1), MayQueue::May);
        h.run();
    }

    /// Twelve rounds of a one-read process (exiting before or after its read completes) with
    /// process 99's far read queued behind it; whether AS waited for it in each round.
    fn exit_rounds(h: &mut Harness, exit_after_completion: bool) -> Vec<bool> {
        (1..=12u32)
            .map(|round| {
                let start = h.now();
                let idle_before = h.idle_answers().len();
                h.submit(read(round, u64::from(round) * 8, 8));
                h.submit(read(99, 50_000_000 + u64::from(round) * 8, 8));
                if exit_after_completion {
                    let done_at = h.issued().last().unwrap().done_at;
                    h.run_until(done_at);
                }
                h.exit_process(round);
                h.run();
                h.advance_to(start + Duration::from_millis(100));
                h.idle_answers().len() > idle_before
            })
            .collect()
    }

    // Proves the exit statistics. Twelve one-read processes each exit around their only read
    // while another process's far read waits; every wait for one runs to the timer, which
    // raises exit_prob (no history) and exit_no_coop (exited) from 0 by eighths towards 100 %
    // (32, 60, 84, 105, 123, 139, 153, 165, 176, 186 of 256). A process that exited before its
    // read completed is no longer waited for once exit_no_coop passes one half (after 6
    // timeouts); one that exits during the wait stops being waited for only when, having no
    // history, exit_prob · exit_no_coop passes one half: after 10 timeouts, 185 · 186 >
    // 128 · 256 (exit_prob lags by one decay: process 99's first think-time sample showed a
    // process coming back).
    #[test]
    fn exited_processes_stop_being_waited_for() {
        let mut h = harness("anticipatory");
        let waited = exit_rounds(&mut h, false);
        assert_eq!(waited, [[true; 6].as_slice(), &[false; 6]].concat());
        assert_eq!(h.counter("anticipation_timeouts"), 6);

        let mut h = harness("anticipatory");
        let waited = exit_rounds(&mut h, true);
        assert_eq!(waited, [[true; 10].as_slice(), &[false; 2]].concat());
        assert_eq!(h.counter("anticipation_timeouts"), 10);
        assert_eq!(h.counter("est_exit_no_coop_percent"), 100 * 186 / 256);
        assert!(h.counter("est_exit_prob_percent") > 71);
    }

    // Proves the alias rule: a second request at an already queued start sector sends the
    // queued one out first.
    #[test]
    fn an_alias_is_moved_out_first() {
        let mut h = harness("anticipatory");
        h.hold_device();
        h.submit(read(1, 5000, 8));
        h.submit(read(2, 100, 8));
        h.submit(read(3, 5000, 16));
        assert_eq!(h.counter("aliases"), 1);
        h.release_device();
        h.run();
        assert_eq!(h.issued_extents()[0], (5000, 8));
    }

    // Proves a front merge that lands on a queued request's start sector moves that alias out
    // and keeps the grown request reachable: read 100..108 grows to 92..108 while 92..96 is
    // queued; the alias goes first, and a drain (scheduler switch) still finds every request.
    #[test]
    fn a_front_merge_onto_an_alias_keeps_the_sweep_intact() {
        let mut h = harness("anticipatory");
        h.hold_device();
        h.submit(read(1, 100, 8));
        h.submit(read(2, 92, 4));
        assert!(matches!(h.submit(read(3, 92, 8)), elevator_core::Submitted::Merged { .. }));
        assert_eq!(h.counter("aliases"), 1);
        h.switch_scheduler(SchedulerSpec::parse("deadline").unwrap().build());
        h.release_device();
        h.run();
        assert_eq!(h.issued_extents(), [(92, 4), (92, 16)]);
    }

    // Proves choose_req: ahead costs the distance, behind up to MAXBACK (1 048 576 sectors)
    // twice the distance, further behind wraps; non-wrapping beats wrapping, the lower of two
    // wrapping requests wins, and a tie goes to the higher sector.
    #[test]
    fn choose_req_is_a_one_way_elevator_with_short_penalised_backward_seeks() {
        let first = |last: u64, a: u64, b: u64| prefers_first(Sector(last), Sector(a), Sector(b));
        assert!(first(1000, 1100, 1200), "nearer ahead");
        assert!(!first(1000, 900, 1150), "back 100 costs 200 > 150 ahead");
        assert!(first(1000, 900, 1250), "back 100 costs 200 < 250 ahead");
        assert!(!first(1000, 900, 1200), "tie at 200: the higher sector");
        assert!(first(1000, 1200, 900), "tie at 200: the higher sector");
        let last = 2_000_000;
        assert!(
            first(last, last - MAXBACK_SECTORS, 5_000_000),
            "at MAXBACK: 2 097 152 < 3 000 000"
        );
        assert!(!first(last, last - MAXBACK_SECTORS - 1, 1u64 << 40), "past MAXBACK wraps");
        assert!(!first(last, 10, 5), "both wrap: the lower");
        assert!(first(last, 5, 10), "both wrap: the lower");
    }

    // Proves write-batch autotuning against write_batch_expire B=125: a batch that lasted
    // over 3B halves the count, over B decrements it (unless the batch went idle); one that
    // used all its writes in under B/3 doubles it, in under B increments it; one that left
    // writes unused is not evidence; the count never drops below 1.
    #[test]
    fn write_batch_count_tracks_write_batch_expire() {
        let run = |count: u64, lasted: u64, idled: bool, left: u64| {
            let mut batch = Anticipatory::new().batch;
            assert_eq!(batch.write_batch_count, 12, "HZ/8/10 jiffies");
            batch.write_batch_count = count;
            batch.write_batch_idled = idled;
            batch.current_write_count = left;
            // The batch's clock was set to end 125 jiffies after it started.
            batch.expires_jiffies = 1000 + 125 - lasted;
            batch.update_write_batch(1000, 125);
            batch.write_batch_count
        };
        assert_eq!(run(12, 400, false, 0), 6);
        assert_eq!(run(12, 200, false, 0), 11);
        assert_eq!(run(12, 200, true, 0), 12);
        assert_eq!(run(12, 30, false, 0), 24);
        assert_eq!(run(12, 100, false, 0), 13);
        assert_eq!(run(12, 100, false, 3), 12);
        assert_eq!(run(1, 200, false, 0), 1);
        assert_eq!(run(1, 1000, false, 0), 1);
    }

    // Proves the tunables read back in ms and that the kernel's defaults are in place.
    #[test]
    fn defaults_and_tunables() {
        let mut scheduler = Anticipatory::new();
        let values: Vec<_> =
            TUNABLES.iter().map(|spec| scheduler.tunable(spec.name).unwrap()).collect();
        assert_eq!(values, [125, 250, 500, 125, 6]);
        scheduler.set_tunable("antic_expire", 0).unwrap();
        assert_eq!(scheduler.tunables.antic_expire_jiffies, 0);
        assert!(scheduler.set_tunable("est_time", 1).is_err(), "read-only in the kernel");
    }
}
