//! deadline: sector-sorted batches per direction, with FIFO deadlines so nothing starves.
//!
//! Follows Linux 2.6.18 `block/deadline-iosched.c` and `Documentation/block/deadline-iosched.txt`
//! at HZ=1000; as the profile `deadline@2.6.18-194.el5` it follows Red Hat's
//! Linux 2.6.18-194.el5 (RHEL 5.5) version of that file (see "Profiles" below).
//!
//! Requests are kept per data direction (read, write) twice: in a tree sorted by start sector
//! and in a FIFO whose entries carry a deadline (`insert time + read_expire` or
//! `+ write_expire`). Dispatch serves **batches**: it keeps taking the next request above the
//! last one in the same direction while that request is sector-contiguous with the last and the
//! batch has had fewer than `fifo_batch` requests. When a batch ends it chooses a direction —
//! reads, unless writes are waiting and reads have already been chosen `writes_starved` times
//! while they waited — and starts the new batch at the FIFO head if that request's deadline has passed,
//! otherwise where the sweep left off, otherwise at the lowest sector (one-way, C-SCAN).
//! Deadline never idles, never looks at processes or priorities, and has no timers.
//!
//! Three 2.6.18 behaviours are reproduced on purpose because measurements of that kernel show
//! them:
//!
//! * a batch is a run of **sector-contiguous** requests: a gap ends it, so under random load
//!   every dispatch re-runs the direction choice (the pattern is read, read, write, ... with
//!   `writes_starved=2`); non-contiguous batching came in 2.6.28;
//! * a batch that continues the sweep (`next` request) after a direction choice does **not**
//!   reset the batch counter, so it lasts one request; only a batch that starts at an expired
//!   FIFO head or wraps to the lowest sector starts counting from zero (changed in 2.6.24, and
//!   in RHEL 5 from 194.el5: the `deadline@2.6.18-194.el5` profile below);
//! * deadlines are checked only when a batch starts; a running batch is never interrupted.
//!
//! # Profiles
//!
//! Red Hat changed `deadline-iosched.c` once in RHEL 5 (legacy-vs-kernel.md: "changes once, at
//! 194.el5"), so there are two [`Profile`]s, one module:
//!
//! | profile | registered as | builds |
//! |---|---|---|
//! | [`Profile::VANILLA`] | `deadline` (`deadline@2.6.18`) | 2.6.18, 2.6.18-8.el5 ... 164.el5 |
//! | [`Profile::RHEL5_194`] | `deadline@2.6.18-194.el5` (also `@rhel5.5`, `@2.6.18-194.11.4.el5`: any release name a host accepts picks its build's profile) | 2.6.18-194.el5 and later (every 5.5+ build) |
//!
//! The one switch, `batch_start_2_6_24` (C194, R1 in legacy-vs-kernel.md; the 2.6.24 change
//! back-ported): a batch chosen after a direction choice starts at the FIFO head if that has
//! expired **or** the direction has no next request (no wrap to the lowest sector), otherwise
//! at the next request, and the batch count restarts from zero in both cases. The "a gap
//! ends the batch" rule of 2.6.18 is kept in 194.el5. With sequential readers against writers
//! this makes each read choice a full batch: about 32 reads to 16 writes per cycle, where
//! vanilla's second read choice continues the sweep with the count already spent (17 : 16).
//!
//! When a new request has the same start sector as a queued one (possible with O_DIRECT), the
//! queued one is moved straight out, as the kernel's alias rule does: it is the next request
//! dispatched, and no bio merges into it any more (in the kernel it is on the dispatch list).
//!
//! # Tunables
//!
//! | name | unit | default | range | meaning |
//! |---|---|---|---|---|
//! | `read_expire` | ms | 500 | 0..=2147483647 | deadline of a read after insertion |
//! | `write_expire` | ms | 5000 | 0..=2147483647 | deadline of a write after insertion |
//! | `writes_starved` | count | 2 | −2147483648..=2147483647 | direction choices that may go to reads while writes wait (negative: never prefer writes while a read waits) |
//! | `fifo_batch` | requests | 16 | 0..=2147483647 | most requests in one batch |
//! | `front_merges` | bool | 1 | 0..=1 | look up front merges in the sector tree |
//!
//! # Deviations from Linux
//!
//! * HZ is fixed at 1000, so one jiffy is one millisecond; deadlines are compared in jiffies,
//!   strictly after, as the kernel does.
//! * Back merges use the block layer's index instead of deadline's private 32-bucket hash; the
//!   lookup finds the same request except when several queued requests end at one sector
//!   (then the newest is the one candidate, and if it is an alias, no merge happens).
//! * A queue built with the core's default configuration requires equal sync-ness for a merge
//!   (2.6.20+); the simulator's legacy queues merge an O_DIRECT write into a write-back
//!   request as 2.6.18 does (`QueueConfig::merges_ignore_sync`).
//! * `batching` saturates instead of overflowing after 2^32 non-contiguous dispatches.

use elevator_core::tunable::INT_MAX;
use elevator_core::{
    Bio, Counter, Ctx, Direction, Dispatch, DispatchInsert, HZ, IdList, ListLinks, MergeKind,
    MergeLookups, RequestId, Scheduler, Sector, SideTable, TunableError, TunableSpec, Unit,
};

use crate::sorted::SortedMap;

/// The kernel's name.
pub const NAME: &str = "deadline";

/// One line for `elevator list`.
pub const SUMMARY: &str =
    "sector-sorted batches per direction with read/write FIFO deadlines; prefers reads";

/// deadline's tunables, in sysfs order, with the 2.6.18 defaults at HZ=1000.
pub const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "read_expire",
        unit: Unit::Milliseconds,
        default: (HZ / 2) as i64,
        min: 0,
        max: INT_MAX,
        help: "deadline of a read, counted from its insertion",
    },
    TunableSpec {
        name: "write_expire",
        unit: Unit::Milliseconds,
        default: (5 * HZ) as i64,
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
        name: "fifo_batch",
        unit: Unit::Requests,
        default: 16,
        min: 0,
        max: INT_MAX,
        help: "most requests dispatched in one batch",
    },
    TunableSpec {
        name: "front_merges",
        unit: Unit::Bool,
        default: 1,
        min: 0,
        max: 1,
        help: "look up front merges in the sector tree (the one-hit cache still front-merges)",
    },
];

/// Where a Red Hat build's deadline differs from vanilla 2.6.18 (see "Profiles" in the module
/// header; each switch names the source commit tag of legacy-vs-kernel.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// C194 (R1): a new batch starts at the FIFO head when it expired or no next request
    /// exists, else at the next request, with the batch count reset either way (2.6.24).
    pub batch_start_2_6_24: bool,
}

impl Profile {
    /// Vanilla 2.6.18, and every RHEL 5 build before 194.el5.
    pub const VANILLA: Profile = Profile { batch_start_2_6_24: false };
    /// 2.6.18-194.el5 (RHEL 5.5) and later.
    pub const RHEL5_194: Profile = Profile { batch_start_2_6_24: true };
}

/// deadline's tunables in their working form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tunables {
    /// FIFO expiry per direction in jiffies (= ms at HZ=1000), indexed by `Direction::index`.
    fifo_expire_jiffies: [u64; 2],
    writes_starved: i64,
    fifo_batch: u64,
    front_merges: bool,
}

impl Default for Tunables {
    fn default() -> Tunables {
        Tunables {
            fifo_expire_jiffies: [TUNABLES[0].default as u64, TUNABLES[1].default as u64],
            writes_starved: TUNABLES[2].default,
            fifo_batch: TUNABLES[3].default as u64,
            front_merges: TUNABLES[4].default == 1,
        }
    }
}

/// The deadline scheduler.
#[derive(Debug)]
pub struct Deadline {
    profile: Profile,
    tunables: Tunables,
    /// Queued requests by start sector, per direction (the kernel's `sort_list`).
    sort: [SortedMap<Sector, RequestId>; 2],
    /// Queued requests in insertion order, per direction (the kernel's `fifo_list`).
    fifo: [IdList; 2],
    fifo_links: ListLinks,
    /// The jiffy after which each queued request's deadline has passed.
    expires_jiffies: SideTable<u64>,
    /// Where the current sweep continues: the sector successor of the last dispatched request,
    /// in its direction. At most one direction has one (the kernel's `next_drq`).
    next: [Option<RequestId>; 2],
    /// Requests dispatched in the current batch (the kernel's `batching`).
    batching: u64,
    /// End of the last dispatched request: the contiguity test of a batch.
    last_sector: Sector,
    /// Direction choices that went to reads while writes waited (unsigned, as in 2.6.18).
    starved: u32,
    /// Requests moved out by the alias rule, handed out before anything else.
    aliases: IdList,
    counters: Counters,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    batches: u64,
    expired_starts: u64,
    write_starvation_switches: u64,
    aliases: u64,
}

impl Deadline {
    /// A new, empty vanilla 2.6.18 deadline with the kernel's defaults.
    pub fn new() -> Deadline {
        Deadline::with_profile(Profile::VANILLA)
    }

    /// A new, empty deadline as the builds of `profile` shipped it, with the kernel's defaults.
    pub fn with_profile(profile: Profile) -> Deadline {
        Deadline {
            profile,
            tunables: Tunables::default(),
            sort: [SortedMap::new(), SortedMap::new()],
            fifo: [IdList::new(), IdList::new()],
            fifo_links: ListLinks::new(0),
            expires_jiffies: SideTable::new(0),
            next: [None, None],
            batching: 0,
            last_sector: Sector(0),
            starved: 0,
            aliases: IdList::new(),
            counters: Counters::default(),
        }
    }
}

impl Default for Deadline {
    fn default() -> Deadline {
        Deadline::new()
    }
}

impl Scheduler for Deadline {
    fn name(&self) -> &'static str {
        NAME
    }

    fn insert(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let capacity = cx.requests.capacity();
        self.fifo_links.ensure_capacity(capacity);
        self.expires_jiffies.ensure_capacity(capacity);
        let direction = cx.requests[id].direction();
        self.insert_sorted(cx, id);
        self.expires_jiffies[id] =
            cx.now.jiffies() + self.tunables.fifo_expire_jiffies[direction.index()];
        self.fifo[direction.index()].push_back(&mut self.fifo_links, id);
    }

    fn dispatch(&mut self, cx: &Ctx<'_>) -> Dispatch {
        if let Some(alias) = self.aliases.pop_front(&mut self.fifo_links) {
            return Dispatch::Issue(alias);
        }
        let fifo_batch = self.tunables.fifo_batch;

        // Continue the current batch while it is sector-contiguous and under fifo_batch.
        if let Some(candidate) =
            self.next[Direction::Write.index()].or(self.next[Direction::Read.index()])
        {
            if cx.requests[candidate].start != self.last_sector {
                self.batching = self.batching.saturating_add(fifo_batch);
            }
            if self.batching < fifo_batch {
                return self.dispatch_move(cx, candidate);
            }
        }

        let Some(direction) = self.dispatch_choose_direction() else {
            return Dispatch::Empty;
        };
        let request = self.dispatch_batch_start(cx, direction);
        self.counters.batches += 1;
        self.dispatch_move(cx, request)
    }

    fn drain(&mut self, cx: &Ctx<'_>, out: &mut Vec<RequestId>) {
        // The kernel drains deadline by calling its dispatch until it returns nothing.
        while let Dispatch::Issue(id) = self.dispatch(cx) {
            out.push(id);
        }
    }

    fn queued(&self) -> usize {
        self.fifo[0].count() + self.fifo[1].count() + self.aliases.count()
    }

    fn dispatch_insert(&self) -> DispatchInsert {
        DispatchInsert::Tail
    }

    fn merge_lookups(&self) -> MergeLookups {
        MergeLookups { back: true, front: self.tunables.front_merges }
    }

    fn allow_merge(&self, cx: &Ctx<'_>, target: RequestId, _bio: &Bio) -> bool {
        // A request the alias rule moved out is on the kernel's dispatch list, out of every
        // merge lookup (issue 27: a front merge into it took its sector-mate out of the tree).
        self.is_sorted(cx, target)
    }

    fn merged(&mut self, cx: &Ctx<'_>, target: RequestId, kind: MergeKind) {
        if let MergeKind::Front { old_start } = kind {
            let direction = cx.requests[target].direction().index();
            self.remove_sorted_at(direction, old_start, target);
            self.insert_sorted(cx, target);
        }
    }

    fn merge_neighbour(&self, cx: &Ctx<'_>, id: RequestId, kind: MergeKind) -> Option<RequestId> {
        let request = &cx.requests[id];
        let sort = &self.sort[request.direction().index()];
        match kind {
            MergeKind::Back => sort.at_or_after(&request.start.offset(1)),
            MergeKind::Front { .. } => sort.before(&request.start),
        }
        .map(|(_, neighbour)| neighbour)
    }

    fn requests_merged(&mut self, cx: &Ctx<'_>, kept: RequestId, absorbed: RequestId) {
        // The survivor inherits the earlier deadline and with it the absorbed one's FIFO place.
        if self.fifo_links.is_linked(kept)
            && self.fifo_links.is_linked(absorbed)
            && self.expires_jiffies[absorbed] < self.expires_jiffies[kept]
        {
            let fifo = &mut self.fifo[cx.requests[kept].direction().index()];
            fifo.remove(&mut self.fifo_links, kept);
            fifo.insert_after(&mut self.fifo_links, absorbed, kept);
            self.expires_jiffies[kept] = self.expires_jiffies[absorbed];
        }
        self.remove_request(cx, absorbed);
    }

    fn tunables(&self) -> &'static [TunableSpec] {
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        let spec = elevator_core::tunable::find(TUNABLES, NAME, name)?;
        let tunables = &self.tunables;
        Ok(match spec.name {
            "read_expire" => tunables.fifo_expire_jiffies[Direction::Read.index()] as i64,
            "write_expire" => tunables.fifo_expire_jiffies[Direction::Write.index()] as i64,
            "writes_starved" => tunables.writes_starved,
            "fifo_batch" => tunables.fifo_batch as i64,
            "front_merges" => i64::from(tunables.front_merges),
            other => unreachable!("tunable {other} is in the table but not handled"),
        })
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let spec = crate::checked(TUNABLES, NAME, name, value)?;
        let tunables = &mut self.tunables;
        // The range check above makes every conversion below lossless.
        match spec.name {
            "read_expire" => tunables.fifo_expire_jiffies[Direction::Read.index()] = value as u64,
            "write_expire" => tunables.fifo_expire_jiffies[Direction::Write.index()] = value as u64,
            "writes_starved" => tunables.writes_starved = value,
            "fifo_batch" => tunables.fifo_batch = value as u64,
            "front_merges" => tunables.front_merges = value == 1,
            other => unreachable!("tunable {other} is in the table but not handled"),
        }
        Ok(())
    }

    fn counters(&self) -> Vec<Counter> {
        let counters = self.counters;
        vec![
            Counter { name: "batches", value: counters.batches },
            Counter { name: "expired_batch_starts", value: counters.expired_starts },
            Counter {
                name: "write_starvation_switches",
                value: counters.write_starvation_switches,
            },
            Counter { name: "aliases", value: counters.aliases },
        ]
    }
}

impl Deadline {
    /// Reads, unless writes wait and reads were chosen `writes_starved` times already while
    /// they waited. The count runs only while writes wait (a read choice with no write queued
    /// leaves it alone) and is compared before the increment, so 2 lets two read choices pass.
    /// As in 2.6.18, where `starved` is unsigned and `writes_starved` an int, the comparison is
    /// unsigned: a negative `writes_starved` is a count of over two billion, in practice never
    /// reached.
    fn dispatch_choose_direction(&mut self) -> Option<Direction> {
        let reads = !self.fifo[Direction::Read.index()].is_empty();
        let writes = !self.fifo[Direction::Write.index()].is_empty();
        if reads {
            if !writes {
                return Some(Direction::Read);
            }
            let starved = self.starved;
            self.starved = self.starved.wrapping_add(1);
            // The int-to-unsigned conversion of the C comparison: -1 becomes u32::MAX.
            let limit = self.tunables.writes_starved as i32 as u32;
            if starved < limit {
                return Some(Direction::Read);
            }
            self.counters.write_starvation_switches += 1;
        } else if !writes {
            return None;
        }
        self.starved = 0;
        Some(Direction::Write)
    }

    /// The first request of a new batch in `direction`: an expired FIFO head, else where the
    /// sweep left off (keeping the batch count: the 2.6.18 quirk), else the lowest sector. With
    /// the 194.el5 profile: the FIFO head if expired or there is no next request, else the
    /// next request, the count restarting either way.
    fn dispatch_batch_start(&mut self, cx: &Ctx<'_>, direction: Direction) -> RequestId {
        let index = direction.index();
        let head = self.fifo[index].front().expect("the chosen direction has requests");
        let expired = cx.now.jiffies() > self.expires_jiffies[head];
        if expired {
            self.counters.expired_starts += 1;
        }
        if self.profile.batch_start_2_6_24 {
            self.batching = 0;
            return match self.next[index] {
                Some(next) if !expired => next,
                _ => head,
            };
        }
        if expired {
            self.batching = 0;
            return head;
        }
        if let Some(next) = self.next[index] {
            return next;
        }
        self.batching = 0;
        self.sort[index].first().expect("sort and fifo hold the same requests").1
    }

    /// Takes `id` out and remembers where the sweep continues.
    fn dispatch_move(&mut self, cx: &Ctx<'_>, id: RequestId) -> Dispatch {
        self.batching = self.batching.saturating_add(1);
        self.move_request(cx, id);
        Dispatch::Issue(id)
    }

    /// The kernel's `deadline_move_request`: the sweep continues at the sector successor, the
    /// contiguity mark moves to the request's end, and the request leaves the scheduler.
    fn move_request(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let request = &cx.requests[id];
        let index = request.direction().index();
        // Out of the tree and its successor found with one search (the kernel's rb_next
        // before rb_erase); `next` cannot be `id` afterwards, so no re-pick is due.
        let (removed, successor) = self.sort[index].remove_then_after(&request.start);
        debug_assert_eq!(removed, Some(id), "sort tree out of step at {:?}", request.start);
        self.next = [None, None];
        self.next[index] = successor.map(|(_, id)| id);
        self.last_sector = request.end();
        self.fifo[index].remove(&mut self.fifo_links, id);
    }

    /// Removes a queued request from the tree and the FIFO, keeping `next` valid.
    fn remove_request(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let request = &cx.requests[id];
        let index = request.direction().index();
        self.remove_sorted_at(index, request.start, id);
        self.fifo[index].remove(&mut self.fifo_links, id);
    }

    /// Removes `id` keyed at `start` from the tree; if the sweep was to continue at it, it
    /// continues at its successor instead.
    fn remove_sorted_at(&mut self, index: usize, start: Sector, id: RequestId) {
        let removed = self.sort[index].remove(&start);
        debug_assert_eq!(removed, Some(id), "sort tree out of step at {start:?}");
        if self.next[index] == Some(id) {
            self.next[index] = self.sort[index].at_or_after(&start).map(|(_, id)| id);
        }
    }

    /// Whether `id` is in its direction's sector tree (queued, and not moved out as an alias).
    fn is_sorted(&self, cx: &Ctx<'_>, id: RequestId) -> bool {
        let request = &cx.requests[id];
        self.sort[request.direction().index()].get(&request.start) == Some(id)
    }

    /// Puts `id` in its direction's tree. A queued request with the same start sector (an
    /// alias) is moved out first and will be the next one dispatched.
    fn insert_sorted(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let request = &cx.requests[id];
        let index = request.direction().index();
        // One tree walk in the common case (no alias): the entry either takes `id` or names
        // the alias to move out first.
        loop {
            let Err(alias) = self.sort[index].insert_vacant(request.start, id) else {
                return;
            };
            self.move_request(cx, alias);
            self.aliases.push_back(&mut self.fifo_links, alias);
            self.counters.aliases += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::{Instant, QueueConfig, Submitted};

    use crate::SchedulerSpec;
    use crate::testkit::{Harness, read, sync_write, write};

    fn harness(spec: &str) -> Harness {
        Harness::new(SchedulerSpec::parse(spec).unwrap().build(), QueueConfig::default())
    }

    // Proves the expiry rule: a read at sector 10, queued at t=0 while a reader above it keeps
    // two reads ahead of the head, is skipped by the upward sweep until its deadline passes
    // (jiffy 500, so from t=501 ms), and is then dispatched at the next batch start, ahead of
    // the sector-sorted next request.
    #[test]
    fn an_expired_read_goes_ahead_of_the_sector_sorted_next_request() {
        let mut h = harness("deadline");
        h.busy_reader_above(2, 400, Instant::from_millis(700));
        h.submit(read(1, 10, 8));
        h.run();
        let position = h.issued().iter().position(|issued| issued.start == 10).unwrap();
        let served = h.issued()[position];
        assert_eq!(served.at, Instant::from_millis(501), "first dispatch after jiffy 500");
        assert!(h.issued()[..position].iter().all(|issued| issued.process.0 == 2));
        // The request that had been next in sector order went after the expired one.
        assert!(h.issued()[position + 1].start > h.issued()[position - 1].start);
    }

    // Proves writes_starved: with non-contiguous reads and writes both queued, every dispatch
    // ends a batch, and the direction choice lets two reads pass before each write.
    #[test]
    fn writes_get_in_after_writes_starved_read_choices() {
        let mut h = harness("deadline");
        let mut bios = Vec::new();
        for i in 0..6 {
            bios.push(read(1, 100_000 + i * 5_000, 8));
            bios.push(write(2, 900_000 + i * 5_000, 8));
        }
        h.queue_all(&bios);
        let pattern: String = h
            .issued()
            .iter()
            .take(9)
            .map(|issued| if issued.op == elevator_core::Op::Read { 'R' } else { 'W' })
            .collect();
        assert_eq!(pattern, "RRWRRWRRW");

        let mut eager = harness("deadline:writes_starved=0");
        eager.queue_all(&bios);
        assert_eq!(eager.issued()[0].op, elevator_core::Op::Write, "0 never lets reads pass");
    }

    // Proves a batch of sector-contiguous requests is cut at fifo_batch when the other
    // direction waits: 16 reads, then one more from the continuing sweep (the 2.6.18 quirk: a
    // batch that continues at `next` keeps its count), then the writes get their batch.
    #[test]
    fn a_contiguous_batch_is_cut_at_fifo_batch() {
        for (fifo_batch, reads_first) in [(16u32, 17usize), (4, 5)] {
            let mut h = harness(&format!("deadline:fifo_batch={fifo_batch}"));
            // Maximum-size requests cannot merge, so each stays one request.
            let mut bios: Vec<_> = (0..40).map(|i| read(1, i * 1024, 1024)).collect();
            bios.extend((0..3).map(|i| write(2, 10_000_000 + i * 1024, 1024)));
            h.queue_all(&bios);
            let first_write =
                h.issued().iter().position(|i| i.op == elevator_core::Op::Write).unwrap();
            assert_eq!(first_write, reads_first, "fifo_batch={fifo_batch}");
            // The writes form one contiguous batch of their own.
            assert!(h.issued()[first_write..first_write + 3].iter().all(|i| i.process.0 == 2));
        }
    }

    // Proves the batch count only runs for contiguous requests: a gap ends the batch even
    // with fifo_batch left, so a waiting write gets in after at most two read choices.
    #[test]
    fn a_gap_ends_the_batch() {
        let mut h = harness("deadline");
        let mut bios: Vec<_> = (0..4).map(|i| read(1, i * 2048, 1024)).collect();
        bios.push(write(2, 10_000_000, 8));
        h.queue_all(&bios);
        assert_eq!(h.issued()[2].op, elevator_core::Op::Write);
    }

    // Proves front_merges: with the one-hit cache pointing elsewhere, a bio ending where a
    // queued request starts front-merges only when the tree lookup is on.
    #[test]
    fn front_merges_on_and_off() {
        for (spec, merges) in [("deadline", true), ("deadline:front_merges=0", false)] {
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

    // Proves a merge that closes a gap fuses the two requests and the survivor keeps the
    // earlier deadline: the read at 1016 (queued at t=0) and the read at 1000 (t=100 ms) become
    // one request below a busy sweep, which is served at the first dispatch after jiffy 500 —
    // the absorbed request's deadline — not after jiffy 600.
    #[test]
    fn a_fused_request_keeps_the_earlier_deadline() {
        let mut h = harness("deadline");
        h.busy_reader_above(2, 5000, Instant::from_millis(800));
        h.submit(read(1, 1016, 8));
        h.advance_to(Instant::from_millis(100));
        h.submit(read(1, 1000, 8));
        assert!(matches!(h.submit(read(1, 1008, 8)), Submitted::Merged { .. }));
        assert_eq!(h.queue().stats(h.now()).requests_fused, 1);
        h.run();
        let fused = h.issued().iter().find(|issued| issued.process.0 == 1).unwrap();
        assert_eq!((fused.start, fused.sector_count), (1000, 24));
        assert_eq!(fused.at, Instant::from_millis(501));
    }

    // Proves the alias rule: a second request at an already queued start sector sends the
    // queued one out first.
    #[test]
    fn an_alias_is_moved_out_first() {
        let mut h = harness("deadline");
        h.hold_device();
        h.submit(read(1, 5000, 8));
        h.submit(read(2, 100, 8));
        h.submit(read(3, 5000, 16));
        assert_eq!(h.queue().scheduler().counters()[3].value, 1);
        h.release_device();
        h.run();
        assert_eq!(h.issued_extents()[0], (5000, 8));
    }

    /// The direction of each issued request, `R` or `W`.
    fn directions(h: &Harness) -> String {
        let op = |issued: &crate::testkit::Issued| match issued.op {
            elevator_core::Op::Read => 'R',
            _ => 'W',
        };
        h.issued().iter().map(op).collect()
    }

    // Proves the starvation count runs only while writes wait (issue 27, bug 2; 2.6.18 counts
    // inside its "writes queued" test): after a stretch of reads with no write queued, three
    // non-contiguous reads and a write queued together go out R, R, W, R — the write waits its
    // two read choices, as it would have without the read-only stretch, and then starvation
    // switches to it. Counting every read choice served the write first (W, R, R, R).
    #[test]
    fn read_choices_with_no_write_waiting_do_not_count_as_starvation() {
        let mut h = harness("deadline");
        for i in 0..5 {
            h.submit(read(1, 100_000 + i * 10_000, 8));
            h.run();
        }
        let bios = [read(1, 300_000, 8), read(1, 400_000, 8), read(1, 500_000, 8)];
        h.queue_all(&[&bios[..], &[write(2, 900_000, 8)]].concat());
        assert_eq!(&directions(&h)[5..], "RRWR");
        assert_eq!(h.queue().scheduler().counters()[2].value, 1, "one starvation switch");
    }

    // Proves the unsigned comparison of 2.6.18 (`starved` unsigned, `writes_starved` int): a
    // negative writes_starved is a count never reached, so reads always go first while any
    // waits (R, R, R, W), where a signed comparison would prefer writes every time (W, R, R, R).
    #[test]
    fn a_negative_writes_starved_never_prefers_writes_while_a_read_waits() {
        let mut h = harness("deadline:writes_starved=-1");
        let bios: Vec<_> = (0..3)
            .map(|i| read(1, 100_000 + i * 10_000, 8))
            .chain([write(2, 900_000, 8)])
            .collect();
        h.queue_all(&bios);
        assert_eq!(directions(&h), "RRRW");
    }

    // Proves no bio merges into an alias (issue 27, bug 3): once a second read at sector 5000
    // moves the first one out, a bio ending at 5000 front-merges into the second (found through
    // the index, not through the one-hit cache that still names the alias), a bio starting at
    // 5008 back-merges into the second too, and the alias goes out as it was. Before the fix the
    // cache front merge took the alias's sector-mate out of the tree and panicked.
    #[test]
    fn no_bio_merges_into_an_alias() {
        let mut h = harness("deadline");
        h.hold_device();
        let Submitted::Queued { request: alias } = h.submit(read(1, 5000, 8)) else { panic!() };
        let Submitted::Queued { request: second } = h.submit(read(2, 5000, 8)) else { panic!() };
        assert_eq!(h.submit(read(3, 4992, 8)), Submitted::Merged { into: second });
        assert_eq!(h.submit(read(4, 5008, 8)), Submitted::Merged { into: second });
        assert_ne!(alias, second);
        h.release_device();
        h.run();
        assert_eq!(h.issued_extents(), [(5000, 8), (4992, 24)]);
    }

    // Proves deadline files reads and writes by data direction only: a sync write is a write.
    #[test]
    fn sync_writes_are_writes() {
        let mut h = harness("deadline");
        let bios = [sync_write(1, 100_000, 8), read(2, 500_000, 8)];
        h.queue_all(&bios);
        assert_eq!(h.issued()[0].op, elevator_core::Op::Read);
    }
}
