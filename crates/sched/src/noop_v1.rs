//! noop as 2.6.9 shipped it: one FIFO, and a bio joins any queued request it touches.
//!
//! Follows Linux 2.6.9 `drivers/block/noop-iosched.c` (RHEL 4), as workload-mechanisms.md §4.3
//! describes it.
//!
//! Dispatch is 2.6.18's ([`crate::noop`]): requests leave in arrival order. Merging differs.
//! 2.6.9's noop has a merge function that scans its whole list from the tail for a request a
//! bio can join at either end, stopping at a request the driver has started; 2.6.18's has none,
//! so only the block layer's one-hit `last_merge` cache merges there
//! (host-mechanisms.md §2.2). With interleaved sequential streams (N writers' write-back,
//! kjournald's ordered data) 2.6.9's noop merges every stream and 2.6.18's only the one that
//! holds `last_merge`. 2.6.9's noop also has no former/latter-request functions, so a request
//! grown by a bio never fuses with its neighbour.
//!
//! # Tunables
//!
//! None.
//!
//! # Deviations from Linux
//!
//! * The tail-first scan is the core's back and front merge indexes, which find the newest
//!   queued request ending (starting) where the bio starts (ends): the request the scan from
//!   the tail meets first. Requests the driver has taken are never indexed, as the scan stops
//!   at them.
//! * Sync-ness is the queue's business: the simulator's legacy queues merge regardless of it,
//!   as 2.6.9 is taken to (`KernelVersion::merges_ignore_sync`).

use elevator_core::{MergeLookups, Scheduler};

use crate::noop::Noop;

/// One line for `elevator list`.
pub const SUMMARY: &str =
    "FIFO in arrival order; a bio joins any queued request it touches (2.6.9's list scan)";

/// The 2.6.9 noop: 2.6.18's FIFO with the list scan's merging and no neighbour fusing.
pub fn build() -> Box<dyn Scheduler> {
    Box::new(Noop::with_merging(MergeLookups::ALL, false))
}

#[cfg(test)]
mod tests {
    use elevator_core::{QueueConfig, Submitted};

    use crate::SchedulerKind;
    use crate::testkit::{Harness, read};

    fn held(kind: SchedulerKind) -> Harness {
        let mut h = Harness::new(kind.build(), QueueConfig::default());
        h.hold_device();
        h
    }

    // Proves the 2.6.9 list scan: with two interleaved sequential streams, every stream's bios
    // merge (2.6.18's noop merges only the stream its one-hit cache points at), and dispatch is
    // still arrival order.
    #[test]
    fn interleaved_streams_all_merge() {
        let bios = [read(1, 0, 8), read(2, 1000, 8), read(1, 8, 8), read(2, 1008, 8)];
        let merged = |kind| {
            let mut h = held(kind);
            let merged: Vec<bool> =
                bios.iter().map(|&bio| matches!(h.submit(bio), Submitted::Merged { .. })).collect();
            h.release_device();
            h.run();
            (merged, h.issued_extents())
        };
        let (old, old_issued) = merged(SchedulerKind::NoopV1);
        assert_eq!(old, [false, false, true, true]);
        assert_eq!(old_issued, [(0, 16), (1000, 16)]);
        let (new, _) = merged(SchedulerKind::Noop);
        assert_eq!(new, [false, false, true, false]);
    }

    // Proves 2.6.9's noop never fuses a grown request with its neighbour (it has no
    // former/latter-request functions), where 2.6.18's fuses list neighbours.
    #[test]
    fn a_grown_request_does_not_fuse() {
        for (kind, fused) in [(SchedulerKind::NoopV1, 0), (SchedulerKind::Noop, 1)] {
            let mut h = held(kind);
            h.submit(read(1, 0, 8));
            h.submit(read(1, 16, 8));
            assert!(matches!(h.submit(read(1, 8, 8)), Submitted::Merged { .. }));
            assert_eq!(h.queue().stats(h.now()).requests_fused, fused, "{kind:?}");
        }
    }

    // Proves the version is registered and a 2.6.9 host's bare `noop` is this one.
    #[test]
    fn registered_as_noop_at_2_6_9() {
        use elevator_core::KernelVersion;
        let spec = crate::SchedulerSpec::parse("noop@2.6.9").unwrap();
        assert_eq!(spec.kind(), SchedulerKind::NoopV1);
        let bare = crate::SchedulerSpec::parse("noop").unwrap();
        assert_eq!(bare.kind(), SchedulerKind::Noop);
        assert_eq!(bare.for_kernel(KernelVersion::Rhel4).unwrap().kind(), SchedulerKind::NoopV1);
        assert_eq!(bare.for_kernel(KernelVersion::Rhel5_5).unwrap().kind(), SchedulerKind::Noop);
    }
}
