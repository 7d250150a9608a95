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

use std::collections::BTreeMap;

use crate::request::{Op, Request};
use crate::table::RequestId;

#[derive(Clone, Copy, Debug)]
struct Extent {
    end: u64,
    writes: bool,
    id: RequestId,
}

/// Outstanding requests by (start sector, allocation sequence).
#[derive(Clone, Debug, Default)]
pub(crate) struct Hazards {
    by_start: BTreeMap<(u64, u64), Extent>,
    /// The longest extent ever indexed: how far back a lookup must reach.
    longest_sectors: u64,
}

fn writes(op: Op) -> bool {
    op != Op::Read
}

impl Hazards {
    pub(crate) fn add(&mut self, id: RequestId, request: &Request) {
        if request.sector_count == 0 {
            return;
        }
        self.longest_sectors = self.longest_sectors.max(u64::from(request.sector_count));
        let extent = Extent { end: request.end().0, writes: writes(request.op), id };
        let previous = self.by_start.insert((request.start.0, request.sequence), extent);
        debug_assert!(previous.is_none(), "{id:?} indexed twice");
    }

    /// Forgets `request` as it was indexed (`start` and `sequence` are its key).
    pub(crate) fn remove(&mut self, start: u64, sequence: u64, sector_count: u32) {
        if sector_count == 0 {
            return;
        }
        self.by_start.remove(&(start, sequence));
    }

    /// Whether a request of shape (`op`, `start..end`) allocated at `sequence` overlaps an
    /// earlier outstanding request where either writes.
    pub(crate) fn conflicts(&self, op: Op, start: u64, end: u64, sequence: u64) -> bool {
        if start >= end || self.by_start.is_empty() {
            return false;
        }
        let incoming_writes = writes(op);
        let from = start.saturating_sub(self.longest_sectors);
        self.by_start.range((from, 0)..(end, 0)).any(|(&(_, earlier), extent)| {
            earlier < sequence && extent.end > start && (incoming_writes || extent.writes)
        })
    }

    pub(crate) fn count(&self) -> usize {
        self.by_start.len()
    }

    pub(crate) fn contains(&self, id: RequestId, request: &Request) -> bool {
        self.by_start.get(&(request.start.0, request.sequence)).is_some_and(|e| e.id == id)
    }
}
