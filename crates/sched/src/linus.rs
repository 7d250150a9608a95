//! elevator_linus: the one I/O elevator of Linux 2.4, a sorted list with per-request budgets.
//!
//! Follows Linux 2.4.21-27.EL (RHEL 3, `drivers/block/elevator.c` and `ll_rw_blk.c` of
//! 2.4.21-15.EL to 63.EL) from specs/linux-2.4-elevator.md §1-§5; as the profile
//! `elevator_linus@2.4.21` it follows vanilla Linux 2.4.21 (§3.7).
//!
//! The queue is **one list** of requests, reads and writes together; its head is what the driver
//! takes next, and nothing ever reorders it: dispatch is strictly from the head (§4.1). The
//! elevator's work happens when a buffer head arrives (§3.1, §3.2):
//!
//! * each new request gets a signed budget, *seq*, of `read_latency` (reads) or `write_latency`
//!   (writes) cost units;
//! * a new bh is looked up from the **tail** toward the head. Every request passed costs 1
//!   (RHEL 3's per-scan aging). The first request the bh can join at its back or front end (same
//!   direction, together at most 1024 sectors, §3.1) is taken; a front merge costs its target 1
//!   more. A request whose *seq* was ≤ 0 when passed is a **barrier**: past it the scan still
//!   finds merges but no insertion slot;
//! * the **insertion slot** is the tail-most request after which the bh's start falls in sector
//!   order (`in_between`, §3.3: a one-way sweep, wrapping once);
//! * everything **behind** the chosen target pays: 1 for a merge, 16 for an insertion
//!   (`ELV_LINUS_SEEK_COST`, §3.4). So a queued request is passed by at most ⌈latency/17⌉ later
//!   unmergeable requests, then it is a barrier and later requests queue behind it;
//! * RHEL 3 tries a **one-hit cache** first: a bh continuing the last request created (or
//!   fused) back-merges into it with no scan and no charge at all;
//! * the **read bomb** (§3.5, RHEL 3): an unmergeable read with no read queued is inserted after
//!   the first writes that weigh `max_bomb_segments` (each write weighs 1 + its sectors / 64),
//!   when that is ahead of its sorted slot;
//! * when the driver refuses a merge the elevator offered (the request would exceed the
//!   driver's own limit, `max_sectors_kb` of the queue), the bh becomes a new request right
//!   behind (back merge) or ahead of (front merge) the target (§3.1);
//! * a grown request that now touches its list neighbour fuses with it, keeping the smaller
//!   *seq* (§3.1 `try_fuse`).
//!
//! # Profiles
//!
//! | profile | registered as | kernels |
//! |---|---|---|
//! | [`Profile::RHEL3`] | `elevator_linus` = `elevator_linus@2.4.21-27.EL` (also `@rhel3`) | 2.4.21-15.EL ... 63.EL |
//! | [`Profile::VANILLA`] | `elevator_linus@2.4.21` | kernel.org 2.4.21 |
//!
//! Vanilla 2.4.21 has no one-hit cache, no per-scan aging and no read bomb (§3.7); its
//! `max_bomb_segments` is not stored (it reads back 0 and writes are ignored, as its
//! `BLKELVSET` ioctl does).
//!
//! # Tunables
//!
//! The `elvtune` fields (§2), in cost units: a request inserted ahead of a queued one costs it
//! 16, a merge ahead of it 1, and (RHEL 3) every scan that passes it 1. Only requests created
//! after a change get the new budget.
//!
//! | name | unit | default | range | meaning |
//! |---|---|---|---|---|
//! | `read_latency` | count (cost units) | 2048 | 0..=2147483647 | initial budget of a new read: about ⌈2048/17⌉ = 121 later insertions may pass it |
//! | `write_latency` | count (cost units) | 8192 | 0..=2147483647 | initial budget of a new write (⌈8192/17⌉ = 482 insertions) |
//! | `max_bomb_segments` | count (write weights) | 6 (vanilla: 0, not stored) | 0..=2147483647 | read-bomb threshold; 0 = off |
//!
//! A negative value is refused (`BLKELVSET` answers EINVAL). [`elvtune_listing`] prints the
//! values as `elvtune` does.
//!
//! # Deviations from Linux
//!
//! * The block layer asks this module for the merge target ([`Scheduler::choose_merge`]); the
//!   core still refuses merges its own rules forbid (the driver's size limit; a bio
//!   overlapping outstanding I/O is held and never merged, `docs/DESIGN.md` §3). A held
//!   request, when released, is placed by an insertion-only scan (with its charges).
//! * 2.4 has no sync flag. Where the queue requires equal sync-ness for a merge (the core's
//!   default, used by the live engine; the simulator's legacy queues ignore it, as 2.4 does),
//!   a bio the scan matched with a request of the other sync-ness is refused by the core and
//!   placed beside the target, as a driver refusal is.
//! * One partition per queue (§8): device numbers are not compared; requests carry
//!   disk-relative sectors.
//! * No special (`waiting`) requests, no SCSI retry re-inserted at the head as a barrier, no
//!   IDE `head_active` (§8 "may simplify"): the scan always reaches the list head, as on a SCSI
//!   queue.
//! * The elevator's size limit is sd's 1024 sectors for every device (§3.1), whatever the
//!   device; the driver's limit is the queue's `max_sectors_kb`.
//! * `last_request` is forgotten when its request is dispatched (the driver removes it from the
//!   list); the kernel drops it at unplug when it is the head request.
//! * Vanilla 2.4.21's handling of a zero-*seq* request is not verified (§3.7); it is taken to be
//!   RHEL 3's (the scan goes on for merges only).
//! * A vanilla `max_bomb_segments` below 0 is refused like the other two fields (the vanilla
//!   ioctl's check of that field is not in the spec's sources).
//! * The O(n) scan's CPU cost is the registry's flat per-request estimate (§8).
//! * The module is the elevator only: what the queue around it does (plugging, the request
//!   pool, when the driver takes the head) is the block layer's, which follows the host's
//!   kernel. A 2.6 host may run `elevator_linus` too (so that every registered scheduler runs
//!   everywhere a 2.6 one does); it then sits on the 2.6 queue (3 ms plug timer, 2.6 pool),
//!   which no 2.4 kernel had. A 2.4 host runs nothing else (`SchedulerKind::runs_on`).

use std::collections::VecDeque;

use elevator_core::tunable::INT_MAX;
use elevator_core::{
    Bio, Counter, Ctx, Direction, Dispatch, DispatchInsert, Instant, MergeChoice, MergeKind,
    RequestFlags, RequestId, Scheduler, TunableError, TunableSpec, Unit,
};

/// The kernel's name.
pub const NAME: &str = "elevator_linus";

/// One line for `elevator list`.
pub const SUMMARY: &str = "2.4's one elevator: one sorted list, per-request latency budgets \
                           charged by later insertions and merges, dispatch from the head";

/// The elevator's own size limit for a merge: sd sets `max_sectors` to 1024 for every disk
/// (§3.1); the driver's smaller limit is the queue's business.
pub const ELEVATOR_MAX_SECTORS: u32 = 1024;

/// What an insertion ahead of a queued request costs it (`ELV_LINUS_SEEK_COST`, §3.4, JA02).
pub const SEEK_COST: i64 = 16;

/// What a merge ahead of a queued request costs it (§3.4, JA02).
pub const MERGE_COST: i64 = 1;

/// Sectors per unit of a write's read-bomb weight: a write weighs 1 + its sectors / 64 (§3.5).
const BOMB_WEIGHT_SECTORS: u32 = 64;

const fn tunables(max_bomb_segments: i64) -> [TunableSpec; 3] {
    [
        TunableSpec {
            name: "read_latency",
            unit: Unit::Count,
            default: 2048,
            min: 0,
            max: INT_MAX,
            help: "initial budget of a new read, in cost units (insertion ahead 16, merge 1)",
        },
        TunableSpec {
            name: "write_latency",
            unit: Unit::Count,
            default: 8192,
            min: 0,
            max: INT_MAX,
            help: "initial budget of a new write, in cost units (insertion ahead 16, merge 1)",
        },
        TunableSpec {
            name: "max_bomb_segments",
            unit: Unit::Count,
            default: max_bomb_segments,
            min: 0,
            max: INT_MAX,
            help: "read bomb: a lone read goes after writes of this weight (1 + sectors/64 each); 0 off",
        },
    ]
}

/// RHEL 3's tunables, in `elvtune`'s order, with its defaults (§2).
pub const TUNABLES: &[TunableSpec] = &tunables(6);

/// Vanilla 2.4.21's: `max_bomb_segments` is not stored and reads back 0 (§2).
pub const TUNABLES_VANILLA: &[TunableSpec] = &tunables(0);

/// The switches between the releases (§0.2, §3.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The one-hit `last_request` back-merge cache, tried before the scan, uncharged.
    pub last_request_cache: bool,
    /// Every request the scan passes ages by 1 (read-latency2).
    pub scan_charge: bool,
    /// The read bomb, and a stored `max_bomb_segments`.
    pub read_bomb: bool,
}

impl Profile {
    /// RHEL 3, 2.4.21-15.EL to 63.EL: vanilla plus read-latency2 and the one-hit cache.
    pub const RHEL3: Profile =
        Profile { last_request_cache: true, scan_charge: true, read_bomb: true };
    /// kernel.org 2.4.21.
    pub const VANILLA: Profile =
        Profile { last_request_cache: false, scan_charge: false, read_bomb: false };
}

/// A queued request and its budget.
#[derive(Clone, Copy, Debug)]
struct Entry {
    id: RequestId,
    seq: i64,
}

/// Where a new request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Position {
    /// Right behind this request.
    After(RequestId),
    /// Right ahead of this request.
    Before(RequestId),
    /// At the tail.
    Tail,
}

/// The placement worked out for a bio by [`Scheduler::choose_merge`], used by the `insert` of
/// its request if the bio did not merge.
#[derive(Clone, Copy, Debug)]
struct Pending {
    now: Instant,
    start: u64,
    sector_count: u32,
    direction: Direction,
    position: Position,
}

/// What the scan decided (§3.2).
#[derive(Clone, Copy, Debug)]
enum Verdict {
    Merge { index: usize, kind: MergeKind },
    Insert { position: Position },
}

/// The 2.4 elevator.
#[derive(Debug)]
pub struct Linus {
    profile: Profile,
    read_latency: i64,
    write_latency: i64,
    max_bomb_segments: i64,
    /// Head (next to the driver) first.
    list: VecDeque<Entry>,
    /// The one-hit cache (RHEL 3).
    last_request: Option<RequestId>,
    pending: Option<Pending>,
    counters: Counters,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    cache_merges: u64,
    scan_merges: u64,
    sorted_inserts: u64,
    tail_inserts: u64,
    read_bombs: u64,
    barriers_met: u64,
}

impl Linus {
    /// An elevator of `profile` with its defaults.
    pub fn with_profile(profile: Profile) -> Linus {
        let table = if profile.read_bomb { TUNABLES } else { TUNABLES_VANILLA };
        Linus {
            profile,
            read_latency: table[0].default,
            write_latency: table[1].default,
            max_bomb_segments: table[2].default,
            list: VecDeque::new(),
            last_request: None,
            pending: None,
            counters: Counters::default(),
        }
    }

    /// RHEL 3's elevator.
    pub fn new() -> Linus {
        Linus::with_profile(Profile::RHEL3)
    }

    fn table(&self) -> &'static [TunableSpec] {
        if self.profile.read_bomb { TUNABLES } else { TUNABLES_VANILLA }
    }

    /// The budgets of the queued requests, head first (for tests and reports).
    pub fn budgets(&self) -> Vec<(RequestId, i64)> {
        self.list.iter().map(|entry| (entry.id, entry.seq)).collect()
    }

    fn latency(&self, direction: Direction) -> i64 {
        match direction {
            Direction::Read => self.read_latency,
            Direction::Write => self.write_latency,
        }
    }

    fn index_of(&self, id: RequestId) -> Option<usize> {
        self.list.iter().position(|entry| entry.id == id)
    }

    /// `in_between` (§3.3): whether a bh starting at `start` belongs right behind the request
    /// at `index`, in the one-way sweep the list forms.
    fn in_between(&self, cx: &Ctx<'_>, index: usize, start: u64) -> bool {
        let Some(next) = self.list.get(index + 1) else {
            return false;
        };
        let here = cx.requests[self.list[index].id].start.0;
        let next = cx.requests[next.id].start.0;
        if here < start && start < next {
            return true;
        }
        if next > here {
            return false;
        }
        // The sweep wraps between the two.
        start > here || start < next
    }

    /// The tail-first scan of §3.2 with its charges (c) and the read bomb (d). `merges`: look
    /// for merges too (a bio); without, only the insertion slot (a request already made).
    fn scan(
        &mut self,
        cx: &Ctx<'_>,
        start: u64,
        sector_count: u32,
        op: elevator_core::Op,
        merges: bool,
    ) -> Verdict {
        let end = start + u64::from(sector_count);
        let mut merge_only = false;
        let mut hint = None;
        let mut passed_read = false;
        let mut found = None;
        for index in (0..self.list.len()).rev() {
            let old = self.list[index].seq;
            if self.profile.scan_charge {
                self.list[index].seq = old - 1;
            }
            if old <= 0 && !merge_only {
                merge_only = true;
                self.counters.barriers_met += 1;
            }
            if hint.is_none() && !merge_only && self.in_between(cx, index, start) {
                hint = Some(index);
            }
            let request = &cx.requests[self.list[index].id];
            if request.direction() != Direction::Write {
                passed_read = true;
            }
            if !merges
                || request.op != op
                || request.sector_count + sector_count > ELEVATOR_MAX_SECTORS
            {
                continue;
            }
            if request.end().0 == start {
                found = Some((index, MergeKind::Back));
                break;
            }
            if request.start.0 == end {
                self.list[index].seq -= MERGE_COST;
                found = Some((index, MergeKind::Front { old_start: request.start }));
                break;
            }
        }
        // (c): everything behind the target pays for the merge or the insertion.
        let target = found.map(|(index, _)| index).or(hint);
        if let Some(target) = target {
            let cost = if found.is_some() { MERGE_COST } else { SEEK_COST };
            for entry in self.list.iter_mut().skip(target + 1) {
                entry.seq -= cost;
            }
        }
        if let Some((index, kind)) = found {
            self.counters.scan_merges += 1;
            return Verdict::Merge { index, kind };
        }
        // (d): the read bomb may move a lone read's slot toward the head.
        let mut slot = hint;
        if self.profile.read_bomb
            && self.max_bomb_segments > 0
            && op.direction() == Direction::Read
            && !passed_read
        {
            let mut weight = 0i64;
            for (index, entry) in self.list.iter().enumerate() {
                if Some(index) == hint {
                    break;
                }
                let request = &cx.requests[entry.id];
                if request.direction() == Direction::Write {
                    weight += 1 + i64::from(request.sector_count / BOMB_WEIGHT_SECTORS);
                    if weight >= self.max_bomb_segments {
                        slot = Some(index);
                        self.counters.read_bombs += 1;
                        break;
                    }
                }
            }
        }
        let position = match slot {
            Some(index) => {
                self.counters.sorted_inserts += 1;
                Position::After(self.list[index].id)
            }
            None => {
                self.counters.tail_inserts += 1;
                Position::Tail
            }
        };
        Verdict::Insert { position }
    }

    /// The one-hit cache (§3.2 (a)): a back merge into `last_request`, uncharged.
    fn cached_merge(&self, cx: &Ctx<'_>, bio: &Bio) -> Option<RequestId> {
        let id = self.last_request?;
        let request = cx.requests.get(id)?;
        (request.op == bio.op
            && request.sector_count + bio.sector_count <= ELEVATOR_MAX_SECTORS
            && request.end() == bio.start)
            .then_some(id)
    }
}

impl Default for Linus {
    fn default() -> Linus {
        Linus::new()
    }
}

impl Scheduler for Linus {
    fn name(&self) -> &'static str {
        NAME
    }

    fn insert(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let request = &cx.requests[id];
        let (start, sector_count, direction) =
            (request.start.0, request.sector_count, request.direction());
        let planned = self.pending.take().filter(|pending| {
            (pending.now, pending.start, pending.sector_count, pending.direction)
                == (cx.now, start, sector_count, direction)
        });
        let unsorted = request.flags.contains(RequestFlags::UNSORTED);
        let position = match planned {
            Some(pending) => pending.position,
            // A direct-I/O super bh goes to the tail unsorted, charging nothing (§3.1, §6.6).
            None if unsorted => Position::Tail,
            // A request that skipped the merge scan (released after an overlap, or into an
            // empty list): the insertion half of the scan places it.
            None => match self.scan(cx, start, sector_count, request.op, false) {
                Verdict::Insert { position } => position,
                Verdict::Merge { .. } => unreachable!("an insertion-only scan finds no merge"),
            },
        };
        let entry = Entry { id, seq: self.latency(direction) };
        let index = match position {
            Position::After(target) => self.index_of(target).map_or(self.list.len(), |i| i + 1),
            Position::Before(target) => self.index_of(target).unwrap_or(self.list.len()),
            Position::Tail => self.list.len(),
        };
        self.list.insert(index, entry);
        if self.profile.last_request_cache {
            self.last_request = Some(id);
        }
    }

    fn choose_merge(&mut self, cx: &Ctx<'_>, bio: &Bio) -> MergeChoice {
        let plan = |position| Pending {
            now: cx.now,
            start: bio.start.0,
            sector_count: bio.sector_count,
            direction: bio.op.direction(),
            position,
        };
        if self.profile.last_request_cache
            && let Some(target) = self.cached_merge(cx, bio)
        {
            self.counters.cache_merges += 1;
            // A refused merge puts the new request right behind the target (§3.1).
            self.pending = Some(plan(Position::After(target)));
            return MergeChoice::Into { target, kind: MergeKind::Back };
        }
        match self.scan(cx, bio.start.0, bio.sector_count, bio.op, true) {
            Verdict::Merge { index, kind } => {
                let target = self.list[index].id;
                let refused = match kind {
                    MergeKind::Back => Position::After(target),
                    MergeKind::Front { .. } => Position::Before(target),
                };
                self.pending = Some(plan(refused));
                MergeChoice::Into { target, kind }
            }
            Verdict::Insert { position } => {
                self.pending = Some(plan(position));
                MergeChoice::NoMerge
            }
        }
    }

    fn dispatch(&mut self, _cx: &Ctx<'_>) -> Dispatch {
        let Some(entry) = self.list.pop_front() else {
            return Dispatch::Empty;
        };
        if self.last_request == Some(entry.id) {
            self.last_request = None;
        }
        Dispatch::Issue(entry.id)
    }

    fn drain(&mut self, cx: &Ctx<'_>, out: &mut Vec<RequestId>) {
        while let Dispatch::Issue(id) = self.dispatch(cx) {
            out.push(id);
        }
    }

    fn queued(&self) -> usize {
        self.list.len()
    }

    fn dispatch_insert(&self) -> DispatchInsert {
        // List order is dispatch order (§4.1): nothing re-sorts it.
        DispatchInsert::Tail
    }

    fn merged(&mut self, _cx: &Ctx<'_>, _target: RequestId, _kind: MergeKind) {
        // The bio joined its target: no request of its own to place.
        self.pending = None;
    }

    fn merge_neighbour(&self, cx: &Ctx<'_>, id: RequestId, kind: MergeKind) -> Option<RequestId> {
        let index = self.index_of(id)?;
        let neighbour = match kind {
            MergeKind::Back => self.list.get(index + 1)?,
            MergeKind::Front { .. } => self.list.get(index.checked_sub(1)?)?,
        };
        // The elevator's own limit on the fused request (§3.1); the core adds the driver's.
        let total = cx.requests[id].sector_count + cx.requests[neighbour.id].sector_count;
        (total <= ELEVATOR_MAX_SECTORS).then_some(neighbour.id)
    }

    fn requests_merged(&mut self, _cx: &Ctx<'_>, kept: RequestId, absorbed: RequestId) {
        let Some(gone) = self.index_of(absorbed) else {
            return;
        };
        let gone = self.list.remove(gone).expect("found above");
        if let Some(kept) = self.index_of(kept) {
            let entry = &mut self.list[kept];
            entry.seq = entry.seq.min(gone.seq);
        }
        if self.profile.last_request_cache {
            self.last_request = Some(kept);
        } else if self.last_request == Some(absorbed) {
            self.last_request = None;
        }
    }

    fn tunables(&self) -> &'static [TunableSpec] {
        self.table()
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        let spec = elevator_core::tunable::find(self.table(), NAME, name)?;
        Ok(match spec.name {
            "read_latency" => self.read_latency,
            "write_latency" => self.write_latency,
            "max_bomb_segments" => self.max_bomb_segments,
            other => unreachable!("tunable {other} is in the table but not handled"),
        })
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let spec = crate::checked(self.table(), NAME, name, value)?;
        match spec.name {
            "read_latency" => self.read_latency = value,
            "write_latency" => self.write_latency = value,
            // Vanilla's ioctl does not store it (§2).
            "max_bomb_segments" if self.profile.read_bomb => self.max_bomb_segments = value,
            "max_bomb_segments" => {}
            other => unreachable!("tunable {other} is in the table but not handled"),
        }
        Ok(())
    }

    fn counters(&self) -> Vec<Counter> {
        let counters = self.counters;
        vec![
            Counter { name: "cache_merges", value: counters.cache_merges },
            Counter { name: "scan_merges", value: counters.scan_merges },
            Counter { name: "sorted_inserts", value: counters.sorted_inserts },
            Counter { name: "tail_inserts", value: counters.tail_inserts },
            Counter { name: "read_bombs", value: counters.read_bombs },
            Counter { name: "barriers_met", value: counters.barriers_met },
        ]
    }
}

/// What `elvtune DEV` prints for a queue (§2): an empty line, `DEV elevator ID⇥⇥ID`, the three
/// values, an empty line.
pub fn elvtune_listing(
    device: &str,
    queue_id: u32,
    read_latency: i64,
    write_latency: i64,
    max_bomb_segments: i64,
) -> String {
    format!(
        "\n{device} elevator ID\t\t{queue_id}\n\tread_latency:\t\t{read_latency}\n\
         \twrite_latency:\t\t{write_latency}\n\tmax_bomb_segments:\t{max_bomb_segments}\n\n"
    )
}
