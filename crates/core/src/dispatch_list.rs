//! The dispatch list: requests a scheduler has released, in the order the device takes them.
//!
//! In the 2.6 block layer the driver consumes `q->queue_head`, and the elevator is asked for
//! more only when that list is empty. A request is put on it in one of two ways
//! ([`DispatchInsert`]): appended at the tail (deadline), which also makes its end sector the
//! sort *boundary*; or sorted in (noop, anticipatory, cfq) so that the list reads as one
//! ascending sweep from the boundary upward followed by the requests below it, the one-way
//! elevator of `elv_dispatch_sort`. Sorting never moves a request past a flush (a barrier) or a
//! request the device has already started and handed back.
//!
//! The list usually holds at most one request, because the queue pulls from the scheduler one
//! request at a time; it grows when the scheduler is drained for a flush and when the device
//! requeues, and that is when the sorted insertion shows.

use std::collections::VecDeque;

use crate::request::{Op, Sector};
use crate::scheduler::DispatchInsert;
use crate::table::{RequestId, RequestTable};

/// The queue's dispatch list with its sort boundary.
#[derive(Clone, Debug, Default)]
pub struct DispatchList {
    items: VecDeque<RequestId>,
    /// The kernel's `end_sector`: the end of the last request the device took (or of the last
    /// request appended at the tail).
    boundary: Sector,
    /// The kernel's `boundary_rq`: a tail-appended request whose end is the boundary until the
    /// device takes it.
    boundary_request: Option<RequestId>,
}

impl DispatchList {
    /// An empty list with the boundary at sector 0.
    pub fn new() -> DispatchList {
        DispatchList::default()
    }

    /// How many requests wait on it.
    pub fn count(&self) -> usize {
        self.items.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The request the device would take next.
    pub fn front(&self) -> Option<RequestId> {
        self.items.front().copied()
    }

    /// Front to back.
    pub fn iter(&self) -> impl Iterator<Item = RequestId> + '_ {
        self.items.iter().copied()
    }

    /// The current sort boundary.
    pub fn boundary(&self) -> Sector {
        self.boundary
    }

    /// Puts `id` on the list the way its scheduler asks for.
    pub fn add(&mut self, table: &RequestTable, id: RequestId, mode: DispatchInsert) {
        match mode {
            DispatchInsert::Tail => {
                self.items.push_back(id);
                self.boundary = table[id].end();
                self.boundary_request = Some(id);
            }
            DispatchInsert::Sort => {
                let position = self.sorted_position(table, id);
                self.items.insert(position, id);
            }
        }
    }

    /// Puts `id` back at the very front: a request the device could not take (requeue).
    pub fn push_front(&mut self, id: RequestId) {
        self.items.push_front(id);
    }

    /// Puts `id` at `position` (0 is the front): a request that must go ahead of a flush.
    pub fn insert_at(&mut self, position: usize, id: RequestId) {
        self.items.insert(position, id);
    }

    /// Takes the front request for the device, moving the boundary to its end when no
    /// tail-appended request holds it.
    pub fn pop_front(&mut self, table: &RequestTable) -> Option<RequestId> {
        let id = self.items.pop_front()?;
        if self.boundary_request.is_none_or(|boundary| boundary == id) {
            self.boundary = table[id].end();
            self.boundary_request = None;
        }
        Some(id)
    }

    /// Where `id` goes so that the list stays "at or above the boundary, ascending" followed by
    /// "below the boundary, ascending". The scan starts at the tail and walks toward the head.
    fn sorted_position(&self, table: &RequestTable, id: RequestId) -> usize {
        let start = table[id].start;
        let above = start >= self.boundary;
        let mut position = self.items.len();
        while position > 0 {
            let existing = &table[self.items[position - 1]];
            if existing.op == Op::Flush || existing.started {
                break;
            }
            let existing_above = existing.start >= self.boundary;
            if above && !existing_above {
                // `id` belongs in the first run; skip over the wrapped-around run.
                position -= 1;
                continue;
            }
            if !above && existing_above {
                break;
            }
            if start >= existing.start {
                break;
            }
            position -= 1;
        }
        position
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Bio, BioTag, ProcessId, Request};
    use crate::time::Instant;

    fn table_with(starts: &[u64]) -> (RequestTable, Vec<RequestId>) {
        // Room for a flush besides the reads.
        let mut table = RequestTable::with_capacity(starts.len() + 1);
        let ids = starts
            .iter()
            .map(|&start| {
                let bio = Bio::read(ProcessId(1), Sector(start), 8, BioTag(start));
                table.insert(Request::from_bio(&bio, Instant::ZERO)).unwrap()
            })
            .collect();
        (table, ids)
    }

    fn starts(list: &DispatchList, table: &RequestTable) -> Vec<u64> {
        list.iter().map(|id| table[id].start.0).collect()
    }

    // Proves sorted insertion builds one upward sweep from the boundary followed by the
    // wrapped-around requests below it.
    #[test]
    fn sorted_insertion_is_a_one_way_sweep_from_the_boundary() {
        let (table, ids) = table_with(&[500, 100, 900, 300, 700, 50]);
        let mut list = DispatchList::new();
        // The device last took a request ending at 400.
        list.boundary = Sector(400);
        for &id in &ids {
            list.add(&table, id, DispatchInsert::Sort);
        }
        assert_eq!(starts(&list, &table), [500, 700, 900, 50, 100, 300]);
    }

    // Proves tail insertion keeps arrival order and moves the boundary to the tail's end.
    #[test]
    fn tail_insertion_keeps_arrival_order() {
        let (table, ids) = table_with(&[500, 100, 900]);
        let mut list = DispatchList::new();
        for &id in &ids {
            list.add(&table, id, DispatchInsert::Tail);
        }
        assert_eq!(starts(&list, &table), [500, 100, 900]);
        assert_eq!(list.boundary(), Sector(908));
        // Taking the head does not move a boundary held by the tail request.
        list.pop_front(&table);
        assert_eq!(list.boundary(), Sector(908));
    }

    // Proves sorting never passes a flush.
    #[test]
    fn sorting_stops_at_a_flush() {
        let (mut table, ids) = table_with(&[500, 100]);
        let mut flush_bio = Bio::write(ProcessId(1), Sector(0), 0, BioTag(9));
        flush_bio.op = Op::Flush;
        let flush = table.insert(Request::from_bio(&flush_bio, Instant::ZERO)).unwrap();
        let mut list = DispatchList::new();
        list.add(&table, ids[0], DispatchInsert::Sort);
        list.add(&table, flush, DispatchInsert::Tail);
        list.add(&table, ids[1], DispatchInsert::Sort);
        assert_eq!(list.iter().collect::<Vec<_>>(), [ids[0], flush, ids[1]]);
    }
}
