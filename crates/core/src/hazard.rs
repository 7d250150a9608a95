//! Overlap ordering: a request that overlaps an earlier outstanding request, where either one
//! writes, waits until the earlier one completes.
//!
//! The kernel's elevators never had to care, because the page cache never has two writes of one
//! page in flight and O_DIRECT users are told not to overlap. A user-space scheduler in front of
//! io_uring has no page cache behind it, and a reordered pair of overlapping writes (or a read
//! passing the write it should see) silently corrupts data. So the queue keeps every
//! outstanding request in an index by start sector and holds a conflicting request back
//! ([`RequestState::Held`](crate::RequestState::Held)) instead of giving it to the scheduler.
//! Reads never conflict with reads.
//!
//! The index is a fixed table of slots, one per bucket of start sectors modulo the table's
//! size, each slot's requests chained through a side table (the merge index's shape): adding,
//! removing and the usual "no conflict" answer cost an array access and a short chain walk
//! whatever the number outstanding, where an ordered map paid a tree walk for each. Buckets
//! that share a slot share its chain; a lookup checks every request it walks against the
//! sectors asked about, so sharing costs time, never a wrong answer. The requests' sectors, operation and sequence are read from the
//! request table when asked, so a request whose start moves (a front merge, a fusion) is
//! re-filed with [`Hazards::update`].

use crate::request::{Op, Request};
use crate::table::{RequestId, RequestTable, SideTable};

/// Sectors per bucket, as a shift: 4096 sectors (2 MiB), larger than most requests, so a
/// lookup visits one or two buckets.
const BUCKET_SHIFT: u32 = 12;

/// Slots in the table: buckets 2^10 apart share one (2 GiB apart at 2 MiB buckets).
const SLOTS: usize = 1 << 10;

#[derive(Clone, Copy, Debug, Default)]
struct Link {
    slot: usize,
    next: Option<RequestId>,
    prev: Option<RequestId>,
    linked: bool,
}

/// Outstanding requests by bucket of their start sector.
#[derive(Clone, Debug)]
pub(crate) struct Hazards {
    /// The newest request of each slot's chain.
    heads: Vec<Option<RequestId>>,
    links: SideTable<Link>,
    /// The longest extent ever indexed: how far back a lookup must reach.
    longest_sectors: u64,
    count: usize,
}

fn writes(op: Op) -> bool {
    op != Op::Read
}

fn bucket(sector: u64) -> u64 {
    sector >> BUCKET_SHIFT
}

fn slot(bucket: u64) -> usize {
    (bucket as usize) & (SLOTS - 1)
}

impl Hazards {
    pub(crate) fn new(capacity: usize) -> Hazards {
        Hazards {
            heads: vec![None; SLOTS],
            links: SideTable::new(capacity),
            longest_sectors: 0,
            count: 0,
        }
    }

    /// Makes room for a request table grown to `capacity`.
    pub(crate) fn grow(&mut self, capacity: usize) {
        self.links.ensure_capacity(capacity);
    }

    pub(crate) fn add(&mut self, id: RequestId, request: &Request) {
        if request.sector_count == 0 {
            return;
        }
        debug_assert!(!self.links[id].linked, "{id:?} indexed twice");
        self.longest_sectors = self.longest_sectors.max(u64::from(request.sector_count));
        let slot = slot(bucket(request.start.0));
        let next = self.heads[slot].replace(id);
        if let Some(next) = next {
            self.links[next].prev = Some(id);
        }
        self.links[id] = Link { slot, next, prev: None, linked: true };
        self.count += 1;
    }

    /// Forgets `id` (nothing if it was never indexed: a request without sectors).
    pub(crate) fn remove(&mut self, id: RequestId) {
        let link = self.links[id];
        if !link.linked {
            return;
        }
        match link.prev {
            Some(prev) => self.links[prev].next = link.next,
            None => self.heads[link.slot] = link.next,
        }
        if let Some(next) = link.next {
            self.links[next].prev = link.prev;
        }
        self.links[id] = Link::default();
        self.count -= 1;
    }

    /// Re-files `id` after its start or length changed.
    pub(crate) fn update(&mut self, id: RequestId, request: &Request) {
        self.remove(id);
        self.add(id, request);
    }

    /// Whether a request of shape (`op`, `start..end`) allocated at `sequence` overlaps an
    /// earlier outstanding request of `table` where either writes.
    pub(crate) fn conflicts(
        &self,
        table: &RequestTable,
        op: Op,
        start: u64,
        end: u64,
        sequence: u64,
    ) -> bool {
        let incoming_writes = writes(op);
        self.earlier_overlap(table, start, end, sequence, |earlier| {
            incoming_writes || writes(earlier)
        })
    }

    /// Whether an outstanding `Op::Write` allocated before `sequence` overlaps `start..end`:
    /// a zone's write plug is taken (see [`ZoneWriteOrder`](crate::ZoneWriteOrder)).
    pub(crate) fn earlier_write_in(
        &self,
        table: &RequestTable,
        start: u64,
        end: u64,
        sequence: u64,
    ) -> bool {
        self.earlier_overlap(table, start, end, sequence, |earlier| earlier == Op::Write)
    }

    fn earlier_overlap(
        &self,
        table: &RequestTable,
        start: u64,
        end: u64,
        sequence: u64,
        counts: impl Fn(Op) -> bool,
    ) -> bool {
        if start >= end || self.count == 0 {
            return false;
        }
        let chain_conflicts = |head: Option<RequestId>| {
            let mut at = head;
            while let Some(id) = at {
                let earlier = &table[id];
                if earlier.sequence < sequence
                    && earlier.start.0 < end
                    && earlier.end().0 > start
                    && counts(earlier.op)
                {
                    return true;
                }
                at = self.links[id].next;
            }
            false
        };
        let (first, last) = (bucket(start.saturating_sub(self.longest_sectors)), bucket(end - 1));
        if last - first >= SLOTS as u64 {
            // A span wider than the table (a huge discard): every slot once.
            return self.heads.iter().any(|&head| chain_conflicts(head));
        }
        (first..=last).any(|bucket| chain_conflicts(self.heads[slot(bucket)]))
    }

    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Whether `id` is filed under the slot of `request`'s start.
    pub(crate) fn contains(&self, id: RequestId, request: &Request) -> bool {
        let link = self.links[id];
        link.linked && link.slot == slot(bucket(request.start.0))
    }
}
