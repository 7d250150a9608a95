//! noop: one FIFO, requests leave in arrival order.
//!
//! Follows Linux 2.6.18 `block/noop-iosched.c` (the logic is unchanged through 2.6.32).
//!
//! noop keeps every request in one list in arrival order and hands out the oldest. It has no
//! read/write distinction, no deadlines, no priorities and no tunables. What little reordering
//! happens is the block layer's: bios merge into queued requests, and the dispatch list sorts
//! what waits on it into a one-way sweep from the head position
//! ([`DispatchInsert::Sort`]), which shows only when several requests wait there at once (a
//! flush drain, a requeue).
//!
//! In 2.6.18 noop has no merge hash and no sector tree: a bio can join a request only through
//! the block layer's one-hit `last_merge` cache, so interleaved sequential streams merge poorly.
//! And its merge neighbours are list neighbours, not sector neighbours: after a bio merge, the
//! grown request fuses only with the request that arrived just after (or before) it.
//!
//! # Tunables
//!
//! None.
//!
//! # Deviations from Linux
//!
//! * A queue built with the core's default configuration requires equal sync-ness for a
//!   merge; the simulator's legacy queues merge an O_DIRECT write into a write-back request as
//!   2.6.18 does (`QueueConfig::merges_ignore_sync`).

use elevator_core::{
    Ctx, Dispatch, DispatchInsert, MergeKind, MergeLookups, RequestId, Scheduler, TunableError,
    TunableSpec, tunable,
};

use crate::common::ArrivalOrder;

/// The kernel's name.
pub const NAME: &str = "noop";

/// One line for `elevator list`.
pub const SUMMARY: &str = "FIFO in arrival order; merges only through the one-hit cache";

/// noop has no tunables.
pub const TUNABLES: &[TunableSpec] = &[];

/// The noop scheduler (2.6.18's, or 2.6.9's through [`crate::noop_v1`]).
#[derive(Debug)]
pub struct Noop {
    /// Requests in arrival order (the kernel's `queue` list).
    fifo: ArrivalOrder,
    /// Where a bio looks for a request to join beyond the `last_merge` cache.
    lookups: MergeLookups,
    /// Whether a grown request fuses with its list neighbour (2.6.18's
    /// `noop_latter_request`/`noop_former_request`; 2.6.9's noop has neither).
    fuses: bool,
}

impl Noop {
    /// A new, empty noop (2.6.18's).
    pub fn new() -> Noop {
        Noop { fifo: ArrivalOrder::new(), lookups: MergeLookups::CACHE_ONLY, fuses: true }
    }

    /// A noop with its merge lookups and neighbour fusing as given (see [`crate::noop_v1`]).
    pub(crate) fn with_merging(lookups: MergeLookups, fuses: bool) -> Noop {
        Noop { fifo: ArrivalOrder::new(), lookups, fuses }
    }
}

impl Default for Noop {
    fn default() -> Noop {
        Noop::new()
    }
}

impl Scheduler for Noop {
    fn name(&self) -> &'static str {
        NAME
    }

    fn insert(&mut self, cx: &Ctx<'_>, id: RequestId) {
        self.fifo.push(cx, id);
    }

    fn dispatch(&mut self, _cx: &Ctx<'_>) -> Dispatch {
        self.fifo.pop().map_or(Dispatch::Empty, Dispatch::Issue)
    }

    fn drain(&mut self, _cx: &Ctx<'_>, out: &mut Vec<RequestId>) {
        self.fifo.drain(out);
    }

    fn queued(&self) -> usize {
        self.fifo.count()
    }

    fn dispatch_insert(&self) -> DispatchInsert {
        DispatchInsert::Sort
    }

    fn merge_lookups(&self) -> MergeLookups {
        self.lookups
    }

    fn merge_neighbour(&self, _cx: &Ctx<'_>, id: RequestId, kind: MergeKind) -> Option<RequestId> {
        if !self.fuses {
            return None;
        }
        match kind {
            MergeKind::Back => self.fifo.next(id),
            MergeKind::Front { .. } => self.fifo.prev(id),
        }
    }

    fn requests_merged(&mut self, _cx: &Ctx<'_>, _kept: RequestId, absorbed: RequestId) {
        self.fifo.remove(absorbed);
    }

    fn tunables(&self) -> &'static [TunableSpec] {
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        tunable::find(TUNABLES, NAME, name).map(|spec| spec.default)
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        crate::checked(TUNABLES, NAME, name, value).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::{Bio, Op, QueueConfig, Sector, Submitted};

    use crate::SchedulerKind;
    use crate::testkit::{Harness, read};

    /// A noop harness whose device waits until `run`, so that bios meet in the queue.
    fn harness() -> Harness {
        let mut h = Harness::new(SchedulerKind::Noop.build(), QueueConfig::default());
        h.hold_device();
        h
    }

    fn run(h: &mut Harness) {
        h.release_device();
        h.run();
    }

    // Proves noop serves non-adjacent requests in arrival order, whatever their sectors.
    #[test]
    fn non_adjacent_requests_leave_in_arrival_order() {
        let mut h = harness();
        for (process, start) in [(1, 800), (2, 100), (3, 500), (4, 300)] {
            h.submit(read(process, start, 8));
        }
        run(&mut h);
        assert_eq!(h.issued_starts(), [800, 100, 500, 300]);
    }

    // Proves a bio adjacent to the last queued request merges into it (back and front).
    #[test]
    fn adjacent_bios_merge_through_the_cache() {
        let mut h = harness();
        let first = h.submit(read(1, 100, 8));
        assert!(matches!(first, Submitted::Queued { .. }));
        assert!(matches!(h.submit(read(1, 108, 8)), Submitted::Merged { .. }));
        assert!(matches!(h.submit(read(1, 92, 8)), Submitted::Merged { .. }));
        run(&mut h);
        assert_eq!(h.issued_extents(), [(92, 24)]);
    }

    // Proves the 2.6.18 weakness: with two interleaved sequential streams, only the stream the
    // one-hit cache points at merges; deadline's hash merges both.
    #[test]
    fn interleaved_streams_merge_only_through_the_cache() {
        let bios = [read(1, 0, 8), read(2, 1000, 8), read(1, 8, 8), read(2, 1008, 8)];
        let mut noop = harness();
        let mut deadline = Harness::new(SchedulerKind::Deadline.build(), QueueConfig::default());
        deadline.hold_device();
        let noop_merged: Vec<bool> =
            bios.iter().map(|&bio| matches!(noop.submit(bio), Submitted::Merged { .. })).collect();
        let deadline_merged: Vec<bool> = bios
            .iter()
            .map(|&bio| matches!(deadline.submit(bio), Submitted::Merged { .. }))
            .collect();
        assert_eq!(noop_merged, [false, false, true, false]);
        assert_eq!(deadline_merged, [false, false, true, true]);
    }

    // Proves fusion goes by list neighbour: the request that arrived next fuses after a back
    // merge closes the gap, yielding one request.
    #[test]
    fn a_back_merge_fuses_with_the_next_request_in_arrival_order() {
        let mut h = harness();
        h.submit(read(1, 0, 8));
        h.submit(read(1, 16, 8));
        assert!(matches!(h.submit(read(1, 8, 8)), Submitted::Merged { .. }));
        assert_eq!(h.queue().stats(h.now()).requests_fused, 1);
        run(&mut h);
        assert_eq!(h.issued_extents(), [(0, 24)]);
        assert_eq!(h.completed_bios(), 3);
    }

    // Proves sector neighbours that are not list neighbours do not fuse: the bio 8..16
    // front-merges into 16..24 (the cached request), whose list predecessor is nothing, so
    // 0..8, which arrived later, stays a request of its own; deadline fuses by sector and
    // issues one request.
    #[test]
    fn sector_neighbours_that_are_not_list_neighbours_stay_apart() {
        let bios = [read(1, 16, 8), read(2, 0, 8), read(2, 8, 8)];
        let mut h = harness();
        let mut deadline = Harness::new(SchedulerKind::Deadline.build(), QueueConfig::default());
        deadline.hold_device();
        for bio in bios {
            h.submit(bio);
            deadline.submit(bio);
        }
        run(&mut h);
        run(&mut deadline);
        let mut extents = h.issued_extents();
        extents.sort();
        assert_eq!(extents, [(0, 8), (8, 16)]);
        assert_eq!(deadline.issued_extents(), [(0, 24)]);
    }

    // Proves what a flush drain shows: requests drained onto the dispatch list are sorted into
    // one sweep, not left in arrival order.
    #[test]
    fn a_flush_drain_sorts_the_dispatch_list() {
        let mut h = harness();
        h.hold_device();
        for (process, start) in [(1, 800), (2, 100), (3, 500)] {
            h.submit(read(process, start, 8));
        }
        let flush = Bio { op: Op::Flush, sector_count: 0, start: Sector(0), ..read(9, 0, 0) };
        h.submit(flush);
        h.release_device();
        run(&mut h);
        assert_eq!(h.issued_starts(), [100, 500, 800, 0]);
    }
}
