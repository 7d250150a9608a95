//! none: no I/O scheduler; requests go to the device in arrival order.
//!
//! Follows Linux 6.17 blk-mq without an elevator (`block/blk-mq.c`, `block/blk-mq-sched.c`), as
//! modern-schedulers.md §1.6–§1.7 describe it: the kernel name a blk-mq queue shows when no
//! scheduler is attached, and the default for multi-queue devices (NVMe).
//!
//! With `none` the block layer keeps no sorting, no deadlines and no priorities. A request waits
//! only on the submitting CPU's staging list (or not at all: an idle hardware queue takes it
//! directly) and leaves in the order it came. Bios merge into queued requests through the plug
//! and through a small window, the last eight requests of the submitting CPU's staging list,
//! both at their back and at their front. Unlike an elevator, `none` never fuses two queued
//! requests after a bio merge closes the gap between them, and, as everywhere in the 6.x block
//! layer, a bio merges only into a request of the same I/O priority (`common::same_ioprio`,
//! shared with mq-deadline: the priorities are compared as the kernel encodes them).
//!
//! # Tunables
//!
//! None.
//!
//! # Deviations from Linux
//!
//! * One arrival-order FIFO stands for the per-CPU staging lists and the hardware queue's
//!   dispatch list; the simulator has no CPUs.
//! * The merge window is wider: every queued request is a back- and front-merge candidate
//!   through the queue's merge index ([`MergeLookups::ALL`]), where the kernel looks only at
//!   the last eight requests staged on the submitting CPU. With up to eight requests waiting the
//!   two agree; with a deeper backlog `none` here merges more. The one-hit cache alone (the
//!   other choice the core offers) would miss the second of two interleaved sequential streams,
//!   which the kernel's window catches, so the wider window is the closer of the two.
//! * The core's merge rules require equal sync-ness, as the 2.6 block layer did; 6.x merges a
//!   synchronous bio into an asynchronous request of the same operation.
//! * A flush drains the queue ahead of it (the core's 2.6 barrier ordering); blk-mq's flush
//!   machinery does not wait for earlier requests.

use elevator_core::{
    Bio, Ctx, Dispatch, DispatchInsert, MergeLookups, RequestId, Scheduler, TunableError,
    TunableSpec, tunable,
};

use crate::common::{self, ArrivalOrder};

/// The kernel's name.
pub const NAME: &str = "none";

/// One line for `elevator list`.
pub const SUMMARY: &str = "blk-mq without a scheduler: arrival order, bio merges only";

/// none has no tunables.
pub const TUNABLES: &[TunableSpec] = &[];

/// The `none` scheduler: the block layer's own staging, without an elevator. (Not `None`,
/// which would shadow `Option::None`.)
#[derive(Debug)]
pub struct NoneScheduler {
    /// Requests in arrival order (the staging lists and the hardware dispatch list).
    fifo: ArrivalOrder,
}

impl NoneScheduler {
    /// A new, empty `none`.
    pub fn new() -> NoneScheduler {
        NoneScheduler { fifo: ArrivalOrder::new() }
    }
}

impl Default for NoneScheduler {
    fn default() -> NoneScheduler {
        NoneScheduler::new()
    }
}

impl Scheduler for NoneScheduler {
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
        // blk-mq keeps no sorted dispatch list: what leaves the staging list goes out as is.
        DispatchInsert::Tail
    }

    fn merge_lookups(&self) -> MergeLookups {
        MergeLookups::ALL
    }

    fn allow_merge(&self, cx: &Ctx<'_>, target: RequestId, bio: &Bio) -> bool {
        common::same_ioprio(cx.requests[target].priority, bio.priority)
    }

    // No `merge_neighbour`: without an elevator the kernel never fuses queued requests.

    fn requests_merged(&mut self, _cx: &Ctx<'_>, _kept: RequestId, absorbed: RequestId) {
        // Never called while `merge_neighbour` answers none; kept so that the FIFO stays true to
        // what the queue holds if the core ever fuses on its own.
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
    use elevator_core::{IoPriority, QueueConfig, Submitted};

    use crate::SchedulerKind;
    use crate::testkit::{Harness, read, with_priority, write};

    /// A `none` harness whose device waits until `run`, so that bios meet in the queue.
    fn harness() -> Harness {
        let mut h = Harness::new(SchedulerKind::None.build(), QueueConfig::default());
        h.hold_device();
        h
    }

    fn run(h: &mut Harness) {
        h.release_device();
        h.run();
    }

    // Proves none keeps arrival order: non-adjacent reads and writes leave exactly as they came,
    // whatever their sectors and directions.
    #[test]
    fn none_keeps_arrival_order() {
        let mut h = harness();
        h.submit(read(1, 800, 8));
        h.submit(write(2, 100, 8));
        h.submit(read(3, 500, 8));
        h.submit(write(4, 300, 8));
        h.submit(read(5, 50, 8));
        run(&mut h);
        assert_eq!(h.issued_starts(), [800, 100, 500, 300, 50]);
    }

    // Proves the merge window reaches past the one-hit cache: two interleaved sequential
    // streams both merge, at the back and at the front.
    #[test]
    fn interleaved_streams_both_merge() {
        let mut h = harness();
        let merged = |outcome: Submitted| matches!(outcome, Submitted::Merged { .. });
        assert!(!merged(h.submit(read(1, 1000, 8))));
        assert!(!merged(h.submit(read(2, 5000, 8))));
        assert!(merged(h.submit(read(1, 1008, 8))), "back merge into the first stream");
        assert!(merged(h.submit(read(2, 5008, 8))), "back merge into the second stream");
        assert!(merged(h.submit(read(1, 992, 8))), "front merge");
        run(&mut h);
        assert_eq!(h.issued_extents(), [(992, 24), (5000, 16)]);
    }

    // Proves none never fuses queued requests: a bio that closes the gap between two queued
    // requests joins one of them, and the two still go out as separate requests.
    #[test]
    fn a_bio_closing_a_gap_does_not_fuse_requests() {
        let mut h = harness();
        h.submit(read(1, 0, 8));
        h.submit(read(1, 16, 8));
        assert!(matches!(h.submit(read(1, 8, 8)), Submitted::Merged { .. }));
        assert_eq!(h.queue().stats(h.now()).requests_fused, 0);
        run(&mut h);
        assert_eq!(h.issued_extents(), [(0, 16), (16, 8)]);
    }

    // Proves the 6.x priority rule: a contiguous bio of another I/O priority gets a request of
    // its own, while class none at two nice levels (one kernel priority) still merges.
    #[test]
    fn bios_merge_only_with_the_same_ioprio() {
        let mut h = harness();
        h.submit(read(1, 0, 8));
        let realtime = with_priority(read(1, 8, 8), IoPriority::realtime(0).unwrap());
        assert!(matches!(h.submit(realtime), Submitted::Queued { .. }));
        let niced = with_priority(read(1, 16, 8), IoPriority::from_nice(10).unwrap());
        assert!(matches!(h.submit(niced), Submitted::Queued { .. }), "RT request ends at 16");
        let niced_again = with_priority(read(1, 24, 8), IoPriority::from_nice(-10).unwrap());
        assert!(matches!(h.submit(niced_again), Submitted::Merged { .. }));
        run(&mut h);
        assert_eq!(h.issued_extents(), [(0, 8), (8, 8), (16, 16)]);
    }
}
