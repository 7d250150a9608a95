//! mq-deadline: deadline for blk-mq, with three priority levels, priority aging and a tag limit
//! for writes.
//!
//! Follows Linux 6.17 `block/mq-deadline.c`, as modern-schedulers.md §1 and §2 describe it, and
//! `Documentation/block/deadline-iosched.rst`; its selection logic is unchanged through 6.18.y
//! (modern-vs-kernel.md §3), and where 6.18.2 changed behaviour (the one at-head list, row 10)
//! the order here is 6.18.2's (see "Deviations from Linux").
//!
//! Each request is filed by its I/O priority class into one of three **levels**: real-time,
//! best-effort (class none counts as best-effort) and idle. Within a level, requests are kept per
//! data direction twice: in a tree sorted by start sector and in a FIFO whose entries carry a
//! deadline (`insertion + read_expire` or `+ write_expire`).
//!
//! **Within a level** mq-deadline serves batches. A batch keeps taking the first request at or
//! above the start of the last one dispatched in its direction (a one-way sweep per direction,
//! gaps allowed), up to `fifo_batch` requests. When a batch ends, or the sweep runs out, it
//! chooses a direction: reads, unless writes wait and reads have already been chosen
//! `writes_starved` times; then it starts the new batch at the FIFO head if that request's
//! deadline has passed or nothing lies above the sweep, otherwise where the sweep left off.
//! Deadlines are looked at only between batches. The batch count, the last direction and the
//! starvation count are shared by the three levels; the sweep positions are per level.
//!
//! **Between levels** the order is strict: a level is served only when every higher level has
//! nothing queued *and nothing at the device*. One exception, **priority aging**: while at least
//! two levels have requests (queued or at the device), each dispatch first offers the
//! best-effort, then the idle level a turn with a cut-off: that level's own choice of request (by
//! the rules above, with their side effects on the batch state) goes out if it was inserted at
//! least `prio_aging_expire` ago. So an old request gets out once the level's sweep, or its FIFO
//! at the next batch start, reaches it; a young request the sweep picks first blocks the turn.
//!
//! **Write tag limit.** Writes, discards and every other non-read request may hold at most
//! `async_depth` of the queue's requests at once (counted from insertion to completion); an
//! issuer that would exceed it waits, as for a full request pool. Reads are never limited.
//!
//! A bio merges only into a request of its own I/O priority, and two requests fuse only if
//! their priorities are equal (the 6.x block layer's rule, `common::same_ioprio`, shared with
//! `none`), so a request never changes level. When a merge fuses two requests, the survivor takes the absorbed
//! one's FIFO place and deadline if that was earlier.
//!
//! # Tunables
//!
//! | name | unit | default | range | meaning |
//! |---|---|---|---|---|
//! | `read_expire` | ms | 500 | 0..=2147483647 | deadline of a read after insertion |
//! | `write_expire` | ms | 5000 | 0..=2147483647 | deadline of a write after insertion |
//! | `writes_starved` | count | 2 | −2147483648..=2147483647 | direction choices that may go to reads while writes wait |
//! | `front_merges` | bool | 1 | 0..=1 | look up front merges in the sector tree |
//! | `async_depth` | requests | `nr_requests` (128 unattached) | 1..=2147483647 | most non-read requests outstanding at once |
//! | `fifo_batch` | requests | 16 | 0..=2147483647 | most requests in one batch |
//! | `prio_aging_expire` | ms | 10000 | 0..=2147483647 | age after which a best-effort or idle request is served ahead of higher levels |
//!
//! # Deviations from Linux
//!
//! * **`async_depth` default.** Since 6.10 the kernel sets `async_depth` to `nr_requests`
//!   whenever the scheduler is attached or `nr_requests` changes (`dd_depth_updated`), so
//!   nothing is reserved for reads unless a user lowers it (5.14–6.9 reserved a quarter). Here
//!   the queue tells the scheduler its `nr_requests` ([`Scheduler::depth_updated`]) and the
//!   default follows it: 256 on a simulated blk-mq host with a 128-deep device (2 × min(depth,
//!   128), modern-vs-kernel.md row 8), 128 before any queue is attached (the table's default).
//!   A value set as a tunable is kept across attach and `nr_requests` changes, where the
//!   kernel's attach resets it (a setting here is applied before the attach, so resetting it
//!   would lose it).
//! * **`async_depth` accounting.** The kernel restricts which scheduler tags a non-read
//!   allocation may take (a shallow depth of the tag bitmap); here the limit counts this
//!   scheduler's non-read requests from insertion to completion, as the spec's "at most N of the
//!   nr_requests tags" suggests. Requests held back by a legacy queue's overlap ordering (a
//!   blk-mq queue holds none, as the kernel), or still owned by a previous scheduler, are not
//!   counted. The core's request pool counts reads and
//!   writes separately (2.6 style) where blk-mq has one pool of `nr_requests` tags, so with the
//!   default `async_depth` writes are bounded by their own pool, not by the reads'. A refused
//!   issuer waits in the pool's write queue and retries when a write-pool request frees. Flushes
//!   are never limited (blk-mq does not ask the scheduler about them).
//! * **Time.** On a blk-mq queue ([`elevator_core::BlkMqQueue`], what the simulator gives this
//!   scheduler) time counts in the host kernel's jiffies (default 250 Hz; modern-vs-kernel.md
//!   rows 11, 19): a request's deadline is its insertion tick plus the expiry, and passes at
//!   that tick (so (496, 500] ms after insertion at 250 Hz); ages compare ticks too; and
//!   `read_expire`, `write_expire` and `prio_aging_expire` are stored in jiffies, so a value
//!   that is no whole number of ticks reads back rounded up (10 reads back as 12 at 250 Hz).
//!   The ticks' phase is the clock's origin. At 300 Hz a tick is no whole number of
//!   milliseconds and the stored value is rounded up to one. On a legacy queue (unit tests, the
//!   live engine) time is exact nanoseconds.
//! * **At-head requests.** Linux 6.18.2 and later (and 6.17.13; the running kernel of
//!   modern-vs-kernel.md) put requests inserted at the head (requeues, the data of PREFLUSH
//!   writes) on one global dispatch list served before priority aging and every level
//!   (row 10); 6.17 kept one such list per level. Here a requeued request goes back to the
//!   front of the queue's dispatch list, which is likewise served before the scheduler is
//!   asked, so the order is 6.18.2's; but such a dispatch does not move the level's sweep
//!   position or count in its statistics, as `dd_start_request` does, and no PREFLUSH write
//!   with data exists here to re-insert.
//! * **When nothing may go out.** If requests are queued but dispatch hands none out (lower
//!   levels wait for a higher level's requests at the device), the answer is
//!   [`Dispatch::Throttled`]. On a blk-mq queue ([`elevator_core::BlkMqQueue`], what the
//!   simulator gives this scheduler) the wait ends at the next insertion or the delayed run one
//!   jiffy later, never at a completion: `dd_finish_request` wakes nothing and
//!   `blk_mq_sched_restart` acts only for driver-tag waits (modern-vs-kernel.md row 1;
//!   [`Scheduler::completion_reruns`] says no). On a legacy queue (unit tests, the live engine)
//!   the next completion ends it. If nothing is at the device either (only possible after
//!   `read_expire` or `write_expire` was lowered with requests queued, which makes their
//!   insertion time appear to lie in the future), it answers [`Dispatch::Idle`] for 3 ms, the
//!   kernel's delayed queue re-run (`BLK_MQ_BUDGET_DELAY`).
//! * **Merges.** Back merges use the block layer's index and front merges the queue's front
//!   index filtered by priority, instead of a lookup in the bio's own level tree; they find the
//!   same request except when several queued requests share the sector. There is no separate
//!   insert merge: a request is created only after the same lookups failed for its bio. The
//!   core's merge rules require equal sync-ness unless the queue says otherwise
//!   ([`elevator_core::QueueConfig::merges_ignore_sync`], off for blk-mq queues), where the
//!   kernel's `blk_rq_merge_ok` has no sync-ness rule (modern-vs-kernel.md row 15).
//! * **Drain.** A switch, or a flush on a legacy queue (the core's 2.6 barrier ordering), takes
//!   every queued request out level by level, reads then writes, each in FIFO order, without
//!   touching the batch state. On a blk-mq queue ([`elevator_core::BlkMqQueue`], what the
//!   simulator gives this scheduler) a flush bypasses the scheduler and drains nothing, as in
//!   the kernel (modern-vs-kernel.md row 3).
//! * **Alias.** The kernel also accepts `deadline` as a name for mq-deadline. Here `deadline`
//!   is the 2.6.18 scheduler ([`crate::deadline`]), so the alias is not registered.
//! * Out-of-range tunable values are rejected, where sysfs clamps them into range.
//! * **Priority aging before `prio_aging_expire`.** The aged pass runs from time zero, as the
//!   kernel's (whose jiffies never make the cut-off fail, row 7): before `prio_aging_expire`
//!   has passed nothing is old enough, but the pass's batch choice still changes the shared
//!   batch state.

use std::cell::Cell;

use elevator_core::tunable::INT_MAX;
use elevator_core::{
    Bio, Completion, Counter, Ctx, Direction, Dispatch, DispatchInsert, Duration, IdList, Instant,
    IoClass, IoPriority, ListLinks, MayQueue, MergeKind, MergeLookups, Op, ProcessId, RequestId,
    Scheduler, Sector, SideTable, TickRate, TunableError, TunableSpec, Unit,
};

use crate::common;
use crate::sorted::SortedMap;

/// The kernel's name.
pub const NAME: &str = "mq-deadline";

/// One line for `elevator list`.
pub const SUMMARY: &str = "deadline for blk-mq: RT/BE/IDLE levels with priority aging, \
                           sector-sorted batches, FIFO deadlines, a tag limit for writes";

/// How long the kernel waits before running a queue again when the scheduler had work but
/// handed nothing out (`BLK_MQ_BUDGET_DELAY`).
const RERUN_DELAY: Duration = Duration::from_millis(3);

/// mq-deadline's tunables, in sysfs order, with the 6.17 defaults.
pub const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "read_expire",
        unit: Unit::Milliseconds,
        default: 500,
        min: 0,
        max: INT_MAX,
        help: "deadline of a read, counted from its insertion",
    },
    TunableSpec {
        name: "write_expire",
        unit: Unit::Milliseconds,
        default: 5000,
        min: 0,
        max: INT_MAX,
        help: "deadline of a write, counted from its insertion",
    },
    TunableSpec {
        name: "writes_starved",
        unit: Unit::Count,
        default: 2,
        min: i32::MIN as i64,
        max: INT_MAX,
        help: "direction choices that may go to reads while writes wait",
    },
    TunableSpec {
        name: "front_merges",
        unit: Unit::Bool,
        default: 1,
        min: 0,
        max: 1,
        help: "look up front merges in the sector tree (the one-hit cache still front-merges)",
    },
    TunableSpec {
        name: "async_depth",
        unit: Unit::Requests,
        default: 128,
        min: 1,
        max: INT_MAX,
        help: "most non-read requests outstanding at once (the kernel sets it to nr_requests)",
    },
    TunableSpec {
        name: "fifo_batch",
        unit: Unit::Requests,
        default: 16,
        min: 0,
        max: INT_MAX,
        help: "most requests dispatched in one batch",
    },
    TunableSpec {
        name: "prio_aging_expire",
        unit: Unit::Milliseconds,
        default: 10_000,
        min: 0,
        max: INT_MAX,
        help: "wait after which a best-effort or idle request goes ahead of higher levels",
    },
];

/// A priority level: where a request's I/O class files it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
enum Level {
    RealTime = 0,
    #[default]
    BestEffort = 1,
    Idle = 2,
}

impl Level {
    /// Highest first.
    const ALL: [Level; 3] = [Level::RealTime, Level::BestEffort, Level::Idle];

    /// The levels priority aging may serve early, in the order it offers them a turn.
    const AGEABLE: [Level; 2] = [Level::BestEffort, Level::Idle];

    /// Class none is best-effort, as in the kernel's class table.
    fn of(priority: IoPriority) -> Level {
        match priority.effective_class() {
            IoClass::RealTime => Level::RealTime,
            IoClass::Idle => Level::Idle,
            IoClass::BestEffort | IoClass::None => Level::BestEffort,
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// The requests of one level (the kernel's per-priority data).
#[derive(Debug, Default)]
struct LevelQueue {
    /// Queued requests by (start sector, insertion order), per direction. Equal starts keep
    /// their insertion order, as the kernel's tree does.
    sort: [SortedMap<(Sector, u64), RequestId>; 2],
    /// Queued requests in deadline order, per direction.
    fifo: [IdList; 2],
    /// Start of the last request dispatched from this level, per direction: the sweep goes on
    /// from here.
    latest_start: [Sector; 2],
    /// Requests inserted and not yet completed (the kernel's `inserted − completed`): includes
    /// those at the device. Fused-away requests count as completed.
    outstanding: u32,
    /// Requests dispatched from this level.
    dispatched: u64,
}

impl LevelQueue {
    fn queued(&self) -> usize {
        self.fifo[0].count() + self.fifo[1].count()
    }

    /// The first request at or above the sweep position in `direction`.
    fn sweep_next(&self, direction: Direction) -> Option<RequestId> {
        let index = direction.index();
        self.sort[index].at_or_after(&(self.latest_start[index], 0)).map(|(_, id)| id)
    }
}

/// What mq-deadline remembers of a request from insertion to completion.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    level: Level,
    /// Tie-breaker in the sort tree: insertion order (renewed when a front merge re-keys it).
    sort_order: u64,
    /// When its deadline passes (the kernel's `fifo_time`).
    fifo_time: Instant,
    /// It counts against `async_depth`.
    write_limited: bool,
}

/// mq-deadline's tunables in their working form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tunables {
    /// FIFO expiry per direction, indexed by `Direction::index`.
    fifo_expire: [Duration; 2],
    writes_starved: i64,
    front_merges: bool,
    async_depth: u32,
    fifo_batch: u32,
    prio_aging_expire: Duration,
}

impl Default for Tunables {
    fn default() -> Tunables {
        Tunables {
            fifo_expire: [
                Duration::from_millis(TUNABLES[0].default as u64),
                Duration::from_millis(TUNABLES[1].default as u64),
            ],
            writes_starved: TUNABLES[2].default,
            front_merges: TUNABLES[3].default == 1,
            async_depth: TUNABLES[4].default as u32,
            fifo_batch: TUNABLES[5].default as u32,
            prio_aging_expire: Duration::from_millis(TUNABLES[6].default as u64),
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    batches: u64,
    expired_batch_starts: u64,
    write_starvation_switches: u64,
    aged_dispatches: u64,
    priority_waits: u64,
}

/// The mq-deadline scheduler.
#[derive(Debug)]
pub struct MqDeadline {
    tunables: Tunables,
    levels: [LevelQueue; 3],
    /// Direction of the current batch (the kernel's `last_dir`; writes at the start).
    last_direction: Direction,
    /// Requests dispatched in the current batch, whatever their level.
    batching: u32,
    /// Direction choices that went to reads while writes waited. Unsigned, and compared with
    /// `writes_starved` as unsigned, as in the kernel: a negative `writes_starved` is huge.
    starved: u32,
    fifo_links: ListLinks,
    entries: SideTable<Entry>,
    next_sort_order: u64,
    /// Non-read requests inserted and not yet completed.
    write_limited: u32,
    counters: Counters,
    /// Allocations refused by `async_depth` (interior: `may_queue` reads `&self`).
    async_depth_refusals: Cell<u64>,
    /// `async_depth` was set as a tunable: attaching to a queue keeps it.
    async_depth_set: bool,
    /// The kernel's tick rate on a blk-mq queue: times and time tunables count in its jiffies.
    /// `None` (a legacy queue): exact nanoseconds.
    tick_rate: Option<TickRate>,
}

impl MqDeadline {
    /// A new, empty mq-deadline with the kernel's defaults.
    pub fn new() -> MqDeadline {
        MqDeadline {
            tunables: Tunables::default(),
            levels: Default::default(),
            last_direction: Direction::Write,
            batching: 0,
            starved: 0,
            fifo_links: ListLinks::new(0),
            entries: SideTable::new(0),
            next_sort_order: 0,
            write_limited: 0,
            counters: Counters::default(),
            async_depth_refusals: Cell::new(0),
            async_depth_set: false,
            tick_rate: None,
        }
    }
}

impl Default for MqDeadline {
    fn default() -> MqDeadline {
        MqDeadline::new()
    }
}

impl Scheduler for MqDeadline {
    fn name(&self) -> &'static str {
        NAME
    }

    fn insert(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let capacity = cx.requests.capacity();
        self.fifo_links.ensure_capacity(capacity);
        self.entries.ensure_capacity(capacity);
        let request = &cx.requests[id];
        let level = Level::of(request.priority);
        let direction = request.direction();
        let write_limited = request.op != Op::Read;
        let entry = Entry {
            level,
            sort_order: self.take_sort_order(),
            fifo_time: self
                .tick(cx.now)
                .saturating_add(self.tunables.fifo_expire[direction.index()]),
            write_limited,
        };
        self.entries[id] = entry;
        self.write_limited += u32::from(write_limited);
        let queue = &mut self.levels[level.index()];
        queue.outstanding += 1;
        queue.sort[direction.index()].insert((request.start, entry.sort_order), id);
        queue.fifo[direction.index()].push_back(&mut self.fifo_links, id);
    }

    fn dispatch(&mut self, cx: &Ctx<'_>) -> Dispatch {
        if let Some(id) = self.dispatch_aged(cx) {
            self.counters.aged_dispatches += 1;
            return Dispatch::Issue(id);
        }
        for level in Level::ALL {
            if let Some(id) = self.dispatch_from_level(cx, level, Some(self.tick(cx.now))) {
                return Dispatch::Issue(id);
            }
            // A level with requests queued or at the device keeps every lower level waiting.
            if self.levels[level.index()].outstanding > 0 {
                break;
            }
        }
        if self.queued() == 0 {
            return Dispatch::Empty;
        }
        self.counters.priority_waits += 1;
        if cx.in_flight > 0 {
            Dispatch::Throttled
        } else {
            Dispatch::Idle { until: cx.now + RERUN_DELAY }
        }
    }

    fn drain(&mut self, cx: &Ctx<'_>, out: &mut Vec<RequestId>) {
        // Drained requests stay outstanding: a flush sends them to the device (and their
        // completions come here); a switch drops this scheduler.
        for queue in &mut self.levels {
            for direction in Direction::ALL {
                let index = direction.index();
                while let Some(id) = queue.fifo[index].pop_front(&mut self.fifo_links) {
                    let key = (cx.requests[id].start, self.entries[id].sort_order);
                    let removed = queue.sort[index].remove(&key);
                    debug_assert_eq!(removed, Some(id), "sort tree out of step at {key:?}");
                    out.push(id);
                }
                debug_assert!(queue.sort[index].is_empty(), "sort tree holds drained requests");
            }
        }
    }

    fn queued(&self) -> usize {
        self.levels.iter().map(LevelQueue::queued).sum()
    }

    fn dispatch_insert(&self) -> DispatchInsert {
        // blk-mq keeps no sorted dispatch list: requests go out in the order handed out.
        DispatchInsert::Tail
    }

    fn merge_lookups(&self) -> MergeLookups {
        MergeLookups { back: true, front: self.tunables.front_merges }
    }

    fn allow_merge(&self, cx: &Ctx<'_>, target: RequestId, bio: &Bio) -> bool {
        common::same_ioprio(cx.requests[target].priority, bio.priority)
    }

    fn merged(&mut self, cx: &Ctx<'_>, target: RequestId, kind: MergeKind) {
        let MergeKind::Front { old_start } = kind else {
            return;
        };
        // The start moved: re-key it, as the newest request at its new sector.
        let entry = self.entries[target];
        let sort_order = self.take_sort_order();
        self.entries[target].sort_order = sort_order;
        let request = &cx.requests[target];
        let sort = &mut self.levels[entry.level.index()].sort[request.direction().index()];
        let removed = sort.remove(&(old_start, entry.sort_order));
        debug_assert_eq!(removed, Some(target), "sort tree out of step at {old_start:?}");
        sort.insert((request.start, sort_order), target);
    }

    fn merge_neighbour(&self, cx: &Ctx<'_>, id: RequestId, kind: MergeKind) -> Option<RequestId> {
        let request = &cx.requests[id];
        let entry = self.entries[id];
        let sort = &self.levels[entry.level.index()].sort[request.direction().index()];
        let key = (request.start, entry.sort_order);
        let neighbour = match kind {
            MergeKind::Back => sort.after(&key),
            MergeKind::Front { .. } => sort.before(&key),
        }
        .map(|(_, neighbour)| neighbour)?;
        // The 6.x block layer fuses only requests of the same I/O priority.
        common::same_ioprio(cx.requests[neighbour].priority, request.priority).then_some(neighbour)
    }

    fn requests_merged(&mut self, cx: &Ctx<'_>, kept: RequestId, absorbed: RequestId) {
        let (kept_entry, absorbed_entry) = (self.entries[kept], self.entries[absorbed]);
        assert!(
            kept_entry.level == absorbed_entry.level,
            "{NAME}: fused requests of levels {:?} and {:?}",
            kept_entry.level,
            absorbed_entry.level
        );
        let direction = cx.requests[kept].direction();
        // The survivor takes the earlier deadline and with it the absorbed one's FIFO place.
        if absorbed_entry.fifo_time < kept_entry.fifo_time {
            let fifo = &mut self.levels[kept_entry.level.index()].fifo[direction.index()];
            fifo.remove(&mut self.fifo_links, kept);
            fifo.insert_after(&mut self.fifo_links, absorbed, kept);
            self.entries[kept].fifo_time = absorbed_entry.fifo_time;
        }
        self.remove_queued(cx, absorbed);
        // The kernel frees the absorbed request, which counts it as completed.
        self.finish(absorbed);
    }

    fn may_queue(&self, _cx: &Ctx<'_>, _process: ProcessId, op: Op) -> MayQueue {
        // Reads are never limited; flushes never reach the scheduler's limit in blk-mq.
        if matches!(op, Op::Read | Op::Flush) || self.write_limited < self.tunables.async_depth {
            return MayQueue::May;
        }
        self.async_depth_refusals.set(self.async_depth_refusals.get() + 1);
        MayQueue::No
    }

    fn complete(&mut self, _cx: &Ctx<'_>, done: &Completion) {
        self.finish(done.id);
    }

    fn set_tick_rate(&mut self, tick_rate: TickRate) {
        self.tick_rate = Some(tick_rate);
        // Values set before the attach are stored as the kernel stores them: in jiffies.
        let tunables = &mut self.tunables;
        for expire in &mut tunables.fifo_expire {
            *expire = Self::in_jiffies(Some(tick_rate), *expire);
        }
        tunables.prio_aging_expire = Self::in_jiffies(Some(tick_rate), tunables.prio_aging_expire);
    }

    fn depth_updated(&mut self, nr_requests: u32) {
        // `dd_depth_updated` (6.10+): `async_depth = nr_requests`, nothing reserved for reads.
        if !self.async_depth_set {
            self.tunables.async_depth = nr_requests.max(1);
        }
    }

    fn completion_reruns(&mut self) -> bool {
        // `dd_finish_request` wakes nothing: a priority wait ends at the next insertion or the
        // delayed run (modern-vs-kernel.md row 1).
        false
    }

    fn tunables(&self) -> &'static [TunableSpec] {
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        let spec = elevator_core::tunable::find(TUNABLES, NAME, name)?;
        let tunables = &self.tunables;
        let millis = |duration: Duration| duration.as_millis() as i64;
        Ok(match spec.name {
            "read_expire" => millis(tunables.fifo_expire[Direction::Read.index()]),
            "write_expire" => millis(tunables.fifo_expire[Direction::Write.index()]),
            "writes_starved" => tunables.writes_starved,
            "front_merges" => i64::from(tunables.front_merges),
            "async_depth" => i64::from(tunables.async_depth),
            "fifo_batch" => i64::from(tunables.fifo_batch),
            "prio_aging_expire" => millis(tunables.prio_aging_expire),
            other => unreachable!("tunable {other} is in the table but not handled"),
        })
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let spec = crate::checked(TUNABLES, NAME, name, value)?;
        let tunables = &mut self.tunables;
        // The range check above makes every conversion below lossless. On a blk-mq queue a
        // time is stored in jiffies (`STORE_JIFFIES`: `msecs_to_jiffies`, rounded up).
        let tick_rate = self.tick_rate;
        let millis = || Self::in_jiffies(tick_rate, Duration::from_millis(value as u64));
        match spec.name {
            "read_expire" => tunables.fifo_expire[Direction::Read.index()] = millis(),
            "write_expire" => tunables.fifo_expire[Direction::Write.index()] = millis(),
            "writes_starved" => tunables.writes_starved = value,
            "front_merges" => tunables.front_merges = value == 1,
            "async_depth" => {
                tunables.async_depth = value as u32;
                self.async_depth_set = true;
            }
            "fifo_batch" => tunables.fifo_batch = value as u32,
            "prio_aging_expire" => tunables.prio_aging_expire = millis(),
            other => unreachable!("tunable {other} is in the table but not handled"),
        }
        Ok(())
    }

    fn counters(&self) -> Vec<Counter> {
        let counters = self.counters;
        let [realtime, best_effort, idle] = &self.levels;
        vec![
            Counter { name: "batches", value: counters.batches },
            Counter { name: "expired_batch_starts", value: counters.expired_batch_starts },
            Counter {
                name: "write_starvation_switches",
                value: counters.write_starvation_switches,
            },
            Counter { name: "aged_dispatches", value: counters.aged_dispatches },
            Counter { name: "priority_waits", value: counters.priority_waits },
            Counter { name: "async_depth_refusals", value: self.async_depth_refusals.get() },
            Counter { name: "dispatched_realtime", value: realtime.dispatched },
            Counter { name: "dispatched_best_effort", value: best_effort.dispatched },
            Counter { name: "dispatched_idle", value: idle.dispatched },
        ]
    }

    // ---- Conformance replay hook (issue 25, `crate::conform`) -----------------------------
    // Resynchronisation after a disagreement with the kernel, and a state dump for reports.
    // Not used by the simulator or the live engine.
    fn dispatch_request(
        &mut self,
        cx: &Ctx<'_>,
        id: RequestId,
        instead_of: Option<RequestId>,
    ) -> bool {
        self.entries.ensure_capacity(cx.requests.capacity());
        self.fifo_links.ensure_capacity(cx.requests.capacity());
        if !self.conform_is_queued(cx, id) {
            return false;
        }
        if let Some(ours) = instead_of {
            if ours == id || self.conform_is_queued(cx, ours) {
                return false;
            }
            self.conform_put_back(cx, ours);
        }
        // A pick of `id` as `__dd_dispatch_request` makes it: it continues the batch if it
        // goes the batch's way and the batch has room, otherwise it starts a batch in its
        // direction (with the starvation count that choice implies).
        let entry = self.entries[id];
        let direction = cx.requests[id].direction();
        if direction != self.last_direction || self.batching >= self.tunables.fifo_batch {
            let queue = &self.levels[entry.level.index()];
            match direction {
                Direction::Read if !queue.fifo[Direction::Write.index()].is_empty() => {
                    self.starved = self.starved.wrapping_add(1);
                }
                Direction::Read => {}
                Direction::Write => self.starved = 0,
            }
            self.last_direction = direction;
            self.batching = 0;
        }
        self.batching = self.batching.saturating_add(1);
        self.remove_queued(cx, id);
        let queue = &mut self.levels[entry.level.index()];
        queue.latest_start[direction.index()] = cx.requests[id].start;
        queue.dispatched += 1;
        true
    }
}

impl MqDeadline {
    /// Whether `id` is queued here (in its level's tree).
    fn conform_is_queued(&self, cx: &Ctx<'_>, id: RequestId) -> bool {
        if !cx.requests.contains(id) {
            return false;
        }
        let entry = self.entries[id];
        let request = &cx.requests[id];
        self.levels[entry.level.index()].sort[request.direction().index()]
            .get(&(request.start, entry.sort_order))
            == Some(id)
    }

    /// Undoes the hand-out of `id` by the last `dispatch`: back into its tree and into its
    /// FIFO by deadline, the batch count one lower. The sweep position and starvation count
    /// that pick set are not restored (their earlier values are gone): a replay counts what
    /// follows from that as cascaded.
    fn conform_put_back(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let entry = self.entries[id];
        let request = &cx.requests[id];
        let index = request.direction().index();
        let queue = &mut self.levels[entry.level.index()];
        queue.sort[index].insert((request.start, entry.sort_order), id);
        let mut order: Vec<RequestId> = queue.fifo[index].iter(&self.fifo_links).collect();
        let at = order.partition_point(|&other| self.entries[other].fifo_time <= entry.fifo_time);
        order.insert(at, id);
        while queue.fifo[index].pop_front(&mut self.fifo_links).is_some() {}
        for other in order {
            queue.fifo[index].push_back(&mut self.fifo_links, other);
        }
        queue.dispatched = queue.dispatched.saturating_sub(1);
        self.batching = self.batching.saturating_sub(1);
    }

    /// mq-deadline's state for a conformance report: the batch state, then per level and
    /// direction with requests the sweep position, the first sorted starts at or after it, the
    /// FIFO head with its deadline (relative to `cx.now`) and the queued count.
    pub fn conform_state(&self, cx: &Ctx<'_>) -> String {
        use std::fmt::Write as _;
        let mut out = format!(
            "last_dir={} batching={}/{} starved={}/{}",
            self.last_direction.name(),
            self.batching,
            self.tunables.fifo_batch,
            self.starved,
            self.tunables.writes_starved
        );
        for level in Level::ALL {
            let queue = &self.levels[level.index()];
            if queue.outstanding == 0 {
                continue;
            }
            let _ = write!(out, "; {level:?}: outstanding={}", queue.outstanding);
            for direction in Direction::ALL {
                let index = direction.index();
                let Some(head) = queue.fifo[index].front() else { continue };
                let latest = queue.latest_start[index];
                let sort = &queue.sort[index];
                let near: Vec<String> =
                    std::iter::successors(sort.at_or_after(&(latest, 0)), |(key, _)| {
                        sort.after(key)
                    })
                    .take(4)
                    .map(|((start, _), _)| start.0.to_string())
                    .collect();
                let deadline_ms = (self.entries[head].fifo_time.as_nanos() as i128
                    - cx.now.as_nanos() as i128) as f64
                    / 1e6;
                let _ = write!(
                    out,
                    " {}[queued={} sweep_from={} next=[{}] fifo_head={}+{} due_in={deadline_ms:.3}ms]",
                    direction.name(),
                    queue.fifo[index].count(),
                    latest.0,
                    near.join(","),
                    cx.requests[head].start.0,
                    cx.requests[head].sector_count,
                );
            }
        }
        out
    }
}
// ---- end of the conformance replay hook ---------------------------------------------------

impl MqDeadline {
    /// Priority aging: with at least two levels active, the best-effort and then the idle level
    /// get a turn for requests inserted at least `prio_aging_expire` ago.
    fn dispatch_aged(&mut self, cx: &Ctx<'_>) -> Option<RequestId> {
        let active = self.levels.iter().filter(|queue| queue.outstanding > 0).count();
        if active < 2 {
            return None;
        }
        // The pass runs even before `prio_aging_expire` has passed since time zero, when
        // nothing can be old enough: its choice of a new batch still changes the shared batch
        // state (the kernel's jiffies never make the cut-off fail; modern-vs-kernel.md row 7).
        let aging_ns = self.tunables.prio_aging_expire.as_nanos();
        let latest_start =
            self.tick(cx.now).as_nanos().checked_sub(aging_ns).map(Instant::from_nanos);
        Level::AGEABLE
            .into_iter()
            .find_map(|level| self.dispatch_from_level(cx, level, latest_start))
    }

    /// One request of `level` by the batch rules, if the one they pick was inserted at or
    /// before `latest_start` (`None`: before the clock's origin, which nothing was). Choosing a
    /// new batch updates the shared batch state even when the pick is then refused as too
    /// young, as in the kernel.
    fn dispatch_from_level(
        &mut self,
        cx: &Ctx<'_>,
        level: Level,
        latest_start: Option<Instant>,
    ) -> Option<RequestId> {
        let queue = &self.levels[level.index()];
        let continued = queue
            .sweep_next(self.last_direction)
            .filter(|_| self.batching < self.tunables.fifo_batch);
        let (id, batch_start) = match continued {
            Some(id) => (id, None),
            None => {
                let (direction, starvation_switch) = self.dispatch_choose_direction(level)?;
                let queue = &self.levels[level.index()];
                let head = queue.fifo[direction.index()]
                    .front()
                    .expect("the chosen direction has requests");
                let expired = cx.now >= self.entries[head].fifo_time;
                let id = match queue.sweep_next(direction) {
                    Some(next) if !expired => next,
                    _ => head,
                };
                self.last_direction = direction;
                self.batching = 0;
                (id, Some((expired, starvation_switch)))
            }
        };
        if self.dispatch_inserted_after(cx, id, latest_start) {
            return None;
        }
        if let Some((expired, starvation_switch)) = batch_start {
            self.counters.batches += 1;
            self.counters.expired_batch_starts += u64::from(expired);
            self.counters.write_starvation_switches += u64::from(starvation_switch);
        }
        self.batching = self.batching.saturating_add(1);
        self.remove_queued(cx, id);
        let request = &cx.requests[id];
        let queue = &mut self.levels[level.index()];
        queue.latest_start[request.direction().index()] = request.start;
        queue.dispatched += 1;
        Some(id)
    }

    /// Reads, unless writes wait and reads were chosen `writes_starved` times already (the
    /// count is compared before it is incremented, so 2 lets two read choices pass). Says
    /// whether writes won because reads had starved them.
    fn dispatch_choose_direction(&mut self, level: Level) -> Option<(Direction, bool)> {
        let queue = &self.levels[level.index()];
        let reads = !queue.fifo[Direction::Read.index()].is_empty();
        let writes = !queue.fifo[Direction::Write.index()].is_empty();
        if reads {
            if writes {
                let starved = self.starved;
                self.starved = self.starved.wrapping_add(1);
                // The kernel compares an unsigned count with the int tunable as unsigned.
                if starved >= self.tunables.writes_starved as i32 as u32 {
                    self.starved = 0;
                    return Some((Direction::Write, true));
                }
            }
            return Some((Direction::Read, false));
        }
        if writes {
            self.starved = 0;
            return Some((Direction::Write, false));
        }
        None
    }

    /// Whether `id` was inserted after `latest_start`. Like the kernel, the insertion time is
    /// read back from the deadline minus the current expiry, so a fused request counts from
    /// the earlier deadline it inherited.
    fn dispatch_inserted_after(
        &self,
        cx: &Ctx<'_>,
        id: RequestId,
        latest_start: Option<Instant>,
    ) -> bool {
        let Some(latest_start) = latest_start else {
            return true;
        };
        let expire = self.tunables.fifo_expire[cx.requests[id].direction().index()];
        let inserted = self.entries[id].fifo_time.as_nanos().saturating_sub(expire.as_nanos());
        inserted > latest_start.as_nanos()
    }

    /// `now` as the kernel's `jiffies` sees it: the start of its tick on a blk-mq queue, so that
    /// deadlines and ages compare whole jiffies; exact on a legacy queue.
    fn tick(&self, now: Instant) -> Instant {
        self.tick_rate.map_or(now, |rate| rate.jiffy_start(rate.jiffies(now)))
    }

    /// `duration` as stored in jiffies at `tick_rate` and read back (`msecs_to_jiffies` rounds
    /// up, `jiffies_to_msecs` is exact at 100, 250 and 1000 Hz); unchanged without one.
    fn in_jiffies(tick_rate: Option<TickRate>, duration: Duration) -> Duration {
        tick_rate.map_or(duration, |rate| {
            let jiffies = rate.msecs_to_jiffies(duration.as_millis());
            Duration::from_millis(rate.jiffies_to_msecs(jiffies))
        })
    }

    /// Takes a queued request out of its level's tree and FIFO.
    fn remove_queued(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let request = &cx.requests[id];
        let entry = self.entries[id];
        let index = request.direction().index();
        let queue = &mut self.levels[entry.level.index()];
        let removed = queue.sort[index].remove(&(request.start, entry.sort_order));
        debug_assert_eq!(removed, Some(id), "sort tree out of step at {:?}", request.start);
        queue.fifo[index].remove(&mut self.fifo_links, id);
    }

    /// A request this scheduler was given is gone for good: completed, or fused away.
    fn finish(&mut self, id: RequestId) {
        let entry = self.entries[id];
        let queue = &mut self.levels[entry.level.index()];
        queue.outstanding =
            queue.outstanding.checked_sub(1).expect("mq-deadline: level count underflow");
        if entry.write_limited {
            self.write_limited =
                self.write_limited.checked_sub(1).expect("mq-deadline: write count underflow");
        }
    }

    /// The next tie-breaker for the sort tree.
    fn take_sort_order(&mut self) -> u64 {
        let order = self.next_sort_order;
        self.next_sort_order += 1;
        order
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::{Bio, Instant, IoPriority, Op, QueueConfig, Submitted};

    use crate::SchedulerSpec;
    use crate::testkit::{Harness, read, with_priority, write};

    fn harness(spec: &str) -> Harness {
        Harness::new(SchedulerSpec::parse(spec).unwrap().build(), QueueConfig::default())
    }

    fn realtime(bio: Bio) -> Bio {
        with_priority(bio, IoPriority::realtime(0).unwrap())
    }

    fn best_effort(bio: Bio) -> Bio {
        with_priority(bio, IoPriority::best_effort(4).unwrap())
    }

    fn idle(bio: Bio) -> Bio {
        with_priority(bio, IoPriority::idle())
    }

    // Proves the strict order between levels: best-effort reads queued first (lower sectors,
    // earlier) still wait while a real-time read queued after them goes out first.
    #[test]
    fn a_real_time_request_is_dispatched_before_best_effort_ones() {
        let mut h = harness("mq-deadline");
        let mut bios: Vec<Bio> = (0..6).map(|i| best_effort(read(1, 1000 + i * 100, 8))).collect();
        bios.push(realtime(read(2, 50_000, 8)));
        h.queue_all(&bios);
        assert_eq!(h.issued()[0].process.0, 2, "the real-time read goes first");
        assert!(h.issued()[1..].iter().all(|issued| issued.process.0 == 1));
        assert_eq!(h.counter("dispatched_realtime"), 1);
        assert_eq!(h.counter("dispatched_best_effort"), 6);
    }

    // Proves priority aging: a best-effort read queued at t=0 under a real-time reader that
    // keeps the device busy (two reads always outstanding, 1 ms each) waits exactly until it
    // has aged prio_aging_expire (10 s) — not one dispatch before — and then goes out at the
    // first dispatch at or after t=10 s, ahead of the queued real-time reads.
    #[test]
    fn a_best_effort_request_older_than_prio_aging_expire_is_not_starved_by_real_time_ones() {
        let mut h = harness("mq-deadline");
        let stop = Instant::from_millis(10_100);
        h.hold_device();
        h.submit(realtime(read(2, 0, 8)));
        h.submit(realtime(read(2, 1_000, 8)));
        h.submit(best_effort(read(1, 500_000, 8)));
        h.release_device();
        let mut next_sector = 2_000;
        h.on_complete(move |done| {
            if done.process.0 != 2 || done.completed > stop {
                return Vec::new();
            }
            // Spread over a region so the sweep wraps now and then.
            let bio = realtime(read(2, next_sector % 400_000, 8));
            next_sector += 1_000;
            vec![(done.completed, bio)]
        });
        h.run();
        let position = h.issued().iter().position(|issued| issued.process.0 == 1).unwrap();
        let aged = h.issued()[position];
        assert!(position > 9_000, "thousands of real-time reads went first");
        assert!(
            h.issued()[..position].iter().all(|issued| issued.at < Instant::from_millis(10_000))
        );
        assert_eq!(aged.at, Instant::from_millis(10_000), "the first dispatch at 10 s takes it");
        assert!(
            h.issued()[position + 1..].iter().any(|issued| issued.process.0 == 2),
            "real-time reads were still coming"
        );
        assert_eq!(h.counter("aged_dispatches"), 1);
    }

    // Proves the expiry rule: a read at sector 10, queued at t=0 while a reader above it keeps
    // the upward sweep busy, is passed over by the sweep until its deadline (500 ms) has
    // passed, and then goes out at the next batch start: batches of 16 at 1 ms per request
    // start at multiples of 16 ms, so at 512 ms, ahead of the sector-sorted next request.
    #[test]
    fn an_expired_read_goes_ahead_of_the_sector_sorted_next_request() {
        let mut h = harness("mq-deadline");
        h.busy_reader_above(2, 400, Instant::from_millis(700));
        h.submit(read(1, 10, 8));
        h.run();
        let position = h.issued().iter().position(|issued| issued.start == 10).unwrap();
        let served = h.issued()[position];
        assert_eq!(served.at, Instant::from_millis(512));
        assert!(h.issued()[..position].iter().all(|issued| issued.process.0 == 2));
        assert!(h.issued()[position + 1].start > h.issued()[position - 1].start);
        assert!(h.counter("expired_batch_starts") >= 1);
    }

    // Proves writes_starved: with fifo_batch=1 every dispatch after the first chooses a
    // direction, and with both directions queued two read choices pass before each write. The
    // first dispatch continues the write "batch" the scheduler starts in (last direction
    // write, batch count 0), as the kernel's does. writes_starved=0 lets writes always win; a
    // negative value compares as a huge unsigned count, so writes wait until no read is queued.
    #[test]
    fn writes_get_in_after_writes_starved_read_choices() {
        let mut bios = Vec::new();
        for i in 0..6 {
            bios.push(read(1, 100_000 + i * 5_000, 8));
            bios.push(write(2, 900_000 + i * 5_000, 8));
        }
        let pattern = |spec: &str| {
            let mut h = harness(spec);
            h.queue_all(&bios);
            let pattern: String = h
                .issued()
                .iter()
                .map(|issued| if issued.op == Op::Read { 'R' } else { 'W' })
                .collect();
            (pattern, h.counter("write_starvation_switches"))
        };
        assert_eq!(pattern("mq-deadline:fifo_batch=1"), ("WRRWRRWRRWWW".to_owned(), 2));
        assert_eq!(pattern("mq-deadline:fifo_batch=1,writes_starved=0").0, "WWWWWWRRRRRR");
        assert_eq!(pattern("mq-deadline:fifo_batch=1,writes_starved=-1").0, "WRRRRRRWWWWW");
    }

    // Proves fifo_batch bounds a batch even when the sweep could go on: 60 ascending reads are
    // queued and the first is at the device when 3 writes arrive; the running read batch ends
    // at fifo_batch, two more read batches pass (writes_starved=2), then the writes get theirs,
    // in one batch.
    #[test]
    fn fifo_batch_limits_a_batch() {
        for fifo_batch in [16usize, 4] {
            let mut h = harness(&format!("mq-deadline:fifo_batch={fifo_batch}"));
            // Maximum-size requests with gaps between them cannot merge.
            h.hold_device();
            for i in 0..60 {
                h.submit(read(1, i * 2048, 1024));
            }
            h.release_device();
            for i in 0..3 {
                h.submit(write(2, 10_000_000 + i * 2048, 1024));
            }
            h.run();
            let first_write = h.issued().iter().position(|i| i.op == Op::Write).unwrap();
            assert_eq!(first_write, 3 * fifo_batch, "fifo_batch={fifo_batch}");
            assert!(h.issued()[first_write..first_write + 3].iter().all(|i| i.op == Op::Write));
            let reads: Vec<u64> =
                h.issued().iter().filter(|i| i.op == Op::Read).map(|i| i.start).collect();
            assert!(reads.windows(2).all(|pair| pair[0] < pair[1]), "one upward sweep");
        }
    }

    // Proves the idle class waits for the others, including their requests at the device: on a
    // device that takes two requests at once, an idle-class read queued first is not issued
    // while a best-effort read is queued or in flight, though the device has room.
    #[test]
    fn the_idle_class_waits_for_real_time_and_best_effort() {
        let config = QueueConfig { depth: 2, ..QueueConfig::default() };
        let mut h = Harness::new(SchedulerSpec::parse("mq-deadline").unwrap().build(), config);
        let bios =
            [idle(read(3, 100, 8)), best_effort(read(1, 5_000, 8)), realtime(read(2, 9_000, 8))];
        h.queue_all(&bios);
        let order: Vec<u32> = h.issued().iter().map(|issued| issued.process.0).collect();
        assert_eq!(order, [2, 1, 3]);
        let [rt, be, idle] = [h.issued()[0], h.issued()[1], h.issued()[2]];
        assert!(be.at >= rt.done_at, "best-effort waits for the real-time read at the device");
        assert!(idle.at >= be.done_at, "idle waits for the best-effort read at the device");
        assert!(h.counter("priority_waits") >= 2);
    }

    // Proves front_merges: with the one-hit cache pointing elsewhere, a bio ending where a
    // queued request starts front-merges only when the lookup is on.
    #[test]
    fn front_merges_on_and_off() {
        for (spec, merges) in [("mq-deadline", true), ("mq-deadline:front_merges=0", false)] {
            let mut h = harness(spec);
            h.hold_device();
            h.submit(read(1, 100, 8));
            h.submit(read(2, 500, 8));
            // A back merge into the second request points the cache at it.
            assert!(matches!(h.submit(read(2, 508, 8)), Submitted::Merged { .. }));
            let outcome = h.submit(read(3, 92, 8));
            assert_eq!(matches!(outcome, Submitted::Merged { .. }), merges, "{spec}");
            h.release_device();
            h.run();
        }
    }

    // Proves async_depth: with async_depth=2 a third write finds the limit and its issuer
    // waits, while reads still get requests; once writes complete the waiter gets in and
    // everything completes.
    #[test]
    fn async_depth_limits_outstanding_writes() {
        let mut h = harness("mq-deadline:async_depth=2");
        h.hold_device();
        assert!(matches!(h.submit(write(1, 1_000, 8)), Submitted::Queued { .. }));
        assert!(matches!(h.submit(write(2, 5_000, 8)), Submitted::Queued { .. }));
        assert_eq!(h.submit(write(3, 9_000, 8)), Submitted::Blocked);
        assert!(matches!(h.submit(read(4, 20_000, 8)), Submitted::Queued { .. }));
        assert_eq!(h.counter("async_depth_refusals"), 1);
        h.release_device();
        h.run();
        assert_eq!(h.completed_bios(), 4);
        // The waiting write went to the device only after one of the first two completed.
        let late = h.issued().iter().find(|issued| issued.process.0 == 3).unwrap();
        let first_write_done = h
            .issued()
            .iter()
            .filter(|issued| issued.op == Op::Write && issued.process.0 != 3)
            .map(|issued| issued.done_at)
            .min()
            .unwrap();
        assert!(late.at >= first_write_done);

        let mut unlimited = harness("mq-deadline");
        unlimited.hold_device();
        for process in 1..=3 {
            let outcome = unlimited.submit(write(process, u64::from(process) * 4_000, 8));
            assert!(matches!(outcome, Submitted::Queued { .. }));
        }
    }

    // Proves a fused request keeps the earlier deadline and its FIFO place: the read at 1016
    // (queued at t=0) and the read at 1000 (t=100 ms) fuse below a busy sweep; the survivor is
    // served at the first batch start after 500 ms (the absorbed request's deadline), 512 ms,
    // not after 600 ms.
    #[test]
    fn a_fused_request_keeps_the_earlier_deadline() {
        let mut h = harness("mq-deadline");
        h.busy_reader_above(2, 5000, Instant::from_millis(800));
        h.submit(read(1, 1016, 8));
        h.advance_to(Instant::from_millis(100));
        h.submit(read(1, 1000, 8));
        assert!(matches!(h.submit(read(1, 1008, 8)), Submitted::Merged { .. }));
        assert_eq!(h.queue().stats(h.now()).requests_fused, 1);
        h.run();
        let fused = h.issued().iter().find(|issued| issued.process.0 == 1).unwrap();
        assert_eq!((fused.start, fused.sector_count), (1000, 24));
        assert_eq!(fused.at, Instant::from_millis(512));
    }

    // Proves requests of different I/O priorities never merge or fuse: a real-time bio
    // contiguous with a best-effort request gets its own request, and goes out first.
    #[test]
    fn requests_of_different_priorities_stay_apart() {
        let mut h = harness("mq-deadline");
        h.hold_device();
        h.submit(best_effort(read(1, 0, 8)));
        assert!(matches!(h.submit(realtime(read(2, 8, 8))), Submitted::Queued { .. }));
        assert!(matches!(h.submit(best_effort(read(1, 16, 8))), Submitted::Queued { .. }));
        h.release_device();
        h.run();
        assert_eq!(h.issued_extents(), [(8, 8), (0, 8), (16, 8)]);
        assert_eq!(h.queue().stats(h.now()).requests_fused, 0);
    }

    // Proves the sweep is per level and one-way with gaps: best-effort reads at scattered
    // sectors, all queued at once, go out in ascending sector order from the lowest.
    #[test]
    fn a_batch_sweeps_upward_across_gaps() {
        let mut h = harness("mq-deadline");
        let starts = [7_000u64, 100, 90_000, 3_000, 50_000];
        let bios: Vec<Bio> = starts.iter().map(|&start| read(1, start, 8)).collect();
        h.queue_all(&bios);
        assert_eq!(h.issued_starts(), [100, 3_000, 7_000, 50_000, 90_000]);
    }
}
