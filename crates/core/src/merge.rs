//! The merge index: which queued request a new bio can join.
//!
//! The queue keeps every request that sits in the scheduler and may still grow in two indexes:
//! by end sector (a bio that starts there is a **back merge**, the generic hash of 2.6.19+) and
//! by start sector (a bio that ends there is a **front merge**, what deadline, anticipatory and
//! cfq looked up in their sector trees). A one-entry cache, `last_merge`, is tried first, as in
//! every kernel since 2.6. Which lookups a scheduler gets is its own choice
//! ([`MergeLookups`](crate::MergeLookups)): 2.6.18 noop has neither index and merges only
//! through the cache; deadline's `front_merges=0` turns off the front index.
//!
//! Keys are (sector, direction). Requests sharing a key form a chain, newest first, and a
//! lookup offers only the newest, as the kernel's hash buckets did.

use crate::request::{Bio, Direction, Op, Request, RequestFlags, RequestState};
use crate::table::{RequestId, SideTable};

/// Whether a bio may join a request, or two requests may fuse.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum MergeCheck {
    /// Contiguity aside, the merge is allowed.
    Allowed,
    /// Different operation, sync-ness, a flush or FUA, or a request no longer in the scheduler.
    Incompatible,
    /// The result would exceed `max_sectors_kb`; the kernel then marks the request no-merge.
    TooBig,
}

/// The rules of the generic block layer for adding `sector_count` more sectors of a request or
/// bio shaped like (`op`, `flags`) to `target`. `sync_must_match`: whether a sync bio or request
/// and an async one may not merge ([`QueueConfig::merges_ignore_sync`](crate::QueueConfig)).
fn check(
    target: &Request,
    op: Op,
    flags: RequestFlags,
    sector_count: u32,
    max_sectors: u32,
    sync_must_match: bool,
) -> MergeCheck {
    let unmergeable =
        |op: Op, flags: RequestFlags| op == Op::Flush || flags.contains(RequestFlags::FUA);
    if target.state != RequestState::Queued
        || target.no_merge
        || target.op != op
        || (sync_must_match && target.flags.is_sync() != flags.is_sync())
        || unmergeable(op, flags)
        || unmergeable(target.op, target.flags)
    {
        return MergeCheck::Incompatible;
    }
    if u64::from(target.sector_count) + u64::from(sector_count) > u64::from(max_sectors) {
        return MergeCheck::TooBig;
    }
    MergeCheck::Allowed
}

/// May `bio` join `target` (contiguity is the caller's business)?
pub(crate) fn check_bio(
    target: &Request,
    bio: &Bio,
    max_sectors: u32,
    sync_must_match: bool,
) -> MergeCheck {
    check(target, bio.op, bio.flags, bio.sector_count, max_sectors, sync_must_match)
}

/// May `absorbed` fuse into `kept`?
pub(crate) fn check_requests(
    kept: &Request,
    absorbed: &Request,
    max_sectors: u32,
    sync_must_match: bool,
) -> MergeCheck {
    if absorbed.state != RequestState::Queued || absorbed.no_merge {
        return MergeCheck::Incompatible;
    }
    check(kept, absorbed.op, absorbed.flags, absorbed.sector_count, max_sectors, sync_must_match)
}

fn key(sector: u64, direction: Direction) -> u64 {
    (sector << 1) | direction.index() as u64
}

/// Slots of a key table at the least, as a shift: 1024, enough for the few hundred requests a
/// legacy queue holds.
const MIN_SLOTS_SHIFT: u32 = 10;

/// The slot-count shift for a request table of `capacity`: at least one slot per request, so
/// that a chain stays a few requests long however deep the queue (blk-mq scheduler tags of
/// 2 × 128 per hardware queue across many queues hold thousands; with a fixed 1024 slots every
/// lookup walked a chain of length queued / 1024, and a run's merge lookups grew with the
/// square of the queue).
fn slots_shift(capacity: usize) -> u32 {
    capacity.max(1).next_power_of_two().trailing_zeros().max(MIN_SLOTS_SHIFT)
}

/// The slot of `key` in a table of 2^`shift` slots: its top bits after a Fibonacci multiply
/// (cheap, and the low bits of a sector, often all zero for aligned I/O, do not decide it).
/// Every request of one key shares a slot whatever the shift, so a chain's newest-first order
/// among requests of one key, the only order a lookup sees, survives a change of table size.
fn slot(key: u64, shift: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - shift)) as usize
}

#[derive(Clone, Copy, Debug, Default)]
struct ChainLink {
    key: u64,
    newer: Option<RequestId>,
    older: Option<RequestId>,
    linked: bool,
}

/// Requests by key: a table of slots, at least one per request the table can hold, each slot's
/// requests (of one or more keys) chained newest first through a side table. A lookup walks
/// its slot's chain to the first request of its key — the newest of that key — so sharing a
/// slot costs time, never a wrong answer.
#[derive(Clone, Debug)]
struct KeyedChains {
    heads: Vec<Option<RequestId>>,
    /// log2 of `heads.len()`.
    shift: u32,
    links: SideTable<ChainLink>,
}

impl KeyedChains {
    fn new(capacity: usize) -> KeyedChains {
        let shift = slots_shift(capacity);
        KeyedChains { heads: vec![None; 1 << shift], shift, links: SideTable::new(capacity) }
    }

    /// Makes room for `capacity` requests; a larger slot table is refilled slot by slot, each
    /// old chain re-added oldest first so that it stays newest first.
    fn grow(&mut self, capacity: usize) {
        self.links.ensure_capacity(capacity);
        let shift = slots_shift(capacity);
        if shift <= self.shift {
            return;
        }
        let old_heads = std::mem::replace(&mut self.heads, vec![None; 1 << shift]);
        self.shift = shift;
        let mut chain = Vec::new();
        for head in old_heads {
            chain.clear();
            chain.extend(std::iter::successors(head, |&id| self.links[id].older));
            for &id in chain.iter().rev() {
                let key = self.links[id].key;
                self.links[id].linked = false;
                self.add(id, key);
            }
        }
    }

    fn add(&mut self, id: RequestId, key: u64) {
        debug_assert!(!self.links[id].linked, "{id:?} indexed twice");
        let older = self.heads[slot(key, self.shift)].replace(id);
        if let Some(older) = older {
            self.links[older].newer = Some(id);
        }
        self.links[id] = ChainLink { key, newer: None, older, linked: true };
    }

    fn remove(&mut self, id: RequestId) {
        let link = self.links[id];
        if !link.linked {
            return;
        }
        match link.newer {
            Some(newer) => self.links[newer].older = link.older,
            None => self.heads[slot(link.key, self.shift)] = link.older,
        }
        if let Some(older) = link.older {
            self.links[older].newer = link.newer;
        }
        self.links[id] = ChainLink::default();
    }

    fn find(&self, key: u64) -> Option<RequestId> {
        let mut at = self.heads[slot(key, self.shift)];
        while let Some(id) = at {
            let link = &self.links[id];
            if link.key == key {
                return Some(id);
            }
            at = link.older;
        }
        None
    }

    fn is_indexed(&self, id: RequestId) -> bool {
        self.links[id].linked
    }

    /// The longest chain: what the worst lookup walks.
    #[cfg(test)]
    fn longest_chain(&self) -> usize {
        self.heads
            .iter()
            .map(|&head| std::iter::successors(head, |&id| self.links[id].older).count())
            .max()
            .unwrap_or(0)
    }
}

/// Back and front merge indexes plus the one-hit `last_merge` cache.
#[derive(Clone, Debug)]
pub(crate) struct MergeIndex {
    by_end: KeyedChains,
    by_start: KeyedChains,
    pub(crate) last_merge: Option<RequestId>,
}

impl MergeIndex {
    pub(crate) fn new(capacity: usize) -> MergeIndex {
        MergeIndex {
            by_end: KeyedChains::new(capacity),
            by_start: KeyedChains::new(capacity),
            last_merge: None,
        }
    }

    /// Whether a request of this shape can ever take a merge: flushes and FUA writes cannot,
    /// so they are never indexed.
    pub(crate) fn indexable(request: &Request) -> bool {
        request.op != Op::Flush && !request.flags.contains(RequestFlags::FUA)
    }

    /// Makes room for a request table grown to `capacity`.
    pub(crate) fn grow(&mut self, capacity: usize) {
        self.by_end.grow(capacity);
        self.by_start.grow(capacity);
    }

    /// Indexes a request that has just entered the scheduler.
    pub(crate) fn add(&mut self, id: RequestId, request: &Request) {
        if !Self::indexable(request) {
            return;
        }
        let direction = request.direction();
        self.by_end.add(id, key(request.end().0, direction));
        self.by_start.add(id, key(request.start.0, direction));
        if self.last_merge.is_none() {
            self.last_merge = Some(id);
        }
    }

    /// Forgets a request that left the scheduler (dispatched, fused away or drained).
    pub(crate) fn remove(&mut self, id: RequestId) {
        self.by_end.remove(id);
        self.by_start.remove(id);
        if self.last_merge == Some(id) {
            self.last_merge = None;
        }
    }

    /// Re-indexes a request whose sectors changed through a merge.
    pub(crate) fn rekey(&mut self, id: RequestId, request: &Request) {
        if !self.by_end.is_indexed(id) {
            return;
        }
        let last_merge = self.last_merge;
        self.remove(id);
        self.add(id, request);
        self.last_merge = last_merge;
    }

    /// The newest queued request in `direction` ending where `bio` starts.
    pub(crate) fn find_back(&self, bio: &Bio) -> Option<RequestId> {
        self.by_end.find(key(bio.start.0, bio.op.direction()))
    }

    /// The newest queued request in `direction` starting where `bio` ends.
    pub(crate) fn find_front(&self, bio: &Bio) -> Option<RequestId> {
        self.by_start.find(key(bio.end().0, bio.op.direction()))
    }

    /// Whether `id` is indexed (for the invariant checker).
    pub(crate) fn is_indexed(&self, id: RequestId) -> bool {
        self.by_end.is_indexed(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{BioTag, ProcessId, Sector};
    use crate::table::RequestTable;
    use crate::time::Instant;

    fn queued(table: &mut RequestTable, bio: Bio) -> RequestId {
        table.insert(Request::from_bio(&bio, Instant::ZERO)).unwrap()
    }

    // Proves that two requests sharing an end sector are both findable in turn: the newest
    // first, the older once the newest is gone.
    #[test]
    fn chains_offer_the_newest_and_keep_the_rest() {
        let mut table = RequestTable::with_capacity(4);
        let mut index = MergeIndex::new(4);
        let older = queued(&mut table, Bio::read(ProcessId(1), Sector(0), 16, BioTag(0)));
        let newer = queued(&mut table, Bio::read(ProcessId(2), Sector(8), 8, BioTag(1)));
        index.add(older, &table[older]);
        index.add(newer, &table[newer]);
        let probe = Bio::read(ProcessId(3), Sector(16), 8, BioTag(2));
        assert_eq!(index.find_back(&probe), Some(newer));
        index.remove(newer);
        assert_eq!(index.find_back(&probe), Some(older));
        index.remove(older);
        assert_eq!(index.find_back(&probe), None);
    }

    // Proves the slot table scales with the queue: with 4096 requests of scattered keys indexed
    // in a table built for 4096, no chain is more than a few requests long (with the fixed
    // 1024 slots it had, chains averaged four and lookups grew with the queue).
    #[test]
    fn chains_stay_short_in_a_deep_queue() {
        const QUEUED: usize = 4096;
        let mut table = RequestTable::with_capacity(QUEUED);
        let mut index = MergeIndex::new(QUEUED);
        let mut prng = crate::Prng::new(7);
        for tag in 0..QUEUED as u64 {
            let start = Sector(prng.below(1 << 27) * 8);
            let id = queued(&mut table, Bio::read(ProcessId(1), start, 8, BioTag(tag)));
            index.add(id, &table[id]);
        }
        assert!(index.by_end.longest_chain() <= 8, "{}", index.by_end.longest_chain());
        assert!(index.by_start.longest_chain() <= 8, "{}", index.by_start.longest_chain());
    }

    // Proves growing the table (a larger `nr_requests` or depth) keeps every request findable
    // and keeps the newest-first order among requests of one key.
    #[test]
    fn growing_keeps_every_request_and_the_newest_first() {
        let mut table = RequestTable::with_capacity(2048);
        let mut index = MergeIndex::new(4);
        let mut ids = Vec::new();
        for tag in 0..2048_u64 {
            // Pairs of requests end at one sector: the newer of each pair must stay the answer.
            let start = Sector(64 + tag / 2 * 64 + (tag % 2) * 8);
            let sectors = if tag % 2 == 0 { 16 } else { 8 };
            let id = queued(&mut table, Bio::read(ProcessId(1), start, sectors, BioTag(tag)));
            index.grow(table.capacity().min(tag as usize + 1).max(4));
            index.add(id, &table[id]);
            ids.push(id);
        }
        index.grow(2048);
        assert!(index.by_end.shift > MIN_SLOTS_SHIFT);
        for pair in ids.chunks(2) {
            let end = table[pair[1]].end();
            let probe = Bio::read(ProcessId(2), end, 8, BioTag(0));
            assert_eq!(index.find_back(&probe), Some(pair[1]));
            index.remove(pair[1]);
            assert_eq!(index.find_back(&probe), Some(pair[0]));
            let front = Bio::read(ProcessId(2), Sector(table[pair[0]].start.0 - 8), 8, BioTag(0));
            assert_eq!(index.find_front(&front), Some(pair[0]));
        }
    }

    // Proves a lookup never crosses directions.
    #[test]
    fn reads_and_writes_do_not_meet() {
        let mut table = RequestTable::with_capacity(2);
        let mut index = MergeIndex::new(2);
        let read = queued(&mut table, Bio::read(ProcessId(1), Sector(0), 8, BioTag(0)));
        index.add(read, &table[read]);
        let write = Bio::write(ProcessId(1), Sector(8), 8, BioTag(1));
        assert_eq!(index.find_back(&write), None);
    }

    // Proves the merge rules: same op (and sync-ness where asked), never flush or FUA, bounded
    // size.
    #[test]
    fn merge_rules() {
        let request =
            Request::from_bio(&Bio::write(ProcessId(1), Sector(0), 8, BioTag(0)), Instant::ZERO);
        let bio = Bio::write(ProcessId(1), Sector(8), 8, BioTag(1));
        assert_eq!(check_bio(&request, &bio, 16, true), MergeCheck::Allowed);
        assert_eq!(check_bio(&request, &bio, 15, true), MergeCheck::TooBig);
        let sync = bio.with_flags(RequestFlags::SYNC);
        assert_eq!(check_bio(&request, &sync, 16, true), MergeCheck::Incompatible);
        // 2.6.18's `elv_rq_merge_ok` tests the data direction only (row 5).
        assert_eq!(check_bio(&request, &sync, 16, false), MergeCheck::Allowed);
        let fua = bio.with_flags(RequestFlags::FUA);
        assert_eq!(check_bio(&request, &fua, 16, false), MergeCheck::Incompatible);
        let discard = Bio { op: Op::Discard, ..bio };
        assert_eq!(check_bio(&request, &discard, 16, false), MergeCheck::Incompatible);
    }
}
