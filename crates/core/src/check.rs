//! The invariant checker: a full consistency audit of a [`BlockQueue`].
//!
//! The queue asserts the cheap invariants on every call (an id a scheduler dispatches must be
//! one it holds, `Idle.until` lies ahead, a drain empties the scheduler, in-flight never exceeds
//! the depth). This module checks the rest, which costs a walk over every request: tests call
//! it after every step, and the simulator after every event when checking is on.
//!
//! Conservation, in the queue's counters: every insertion into a scheduler ends as a dispatch,
//! a fusion into a neighbour, a move to the next scheduler on a switch, or is still queued:
//!
//! ```text
//! inserted = dispatched + fused + switched + queued
//! ```

use crate::merge::MergeIndex;
use crate::queue::BlockQueue;
use crate::request::RequestState;

/// A broken invariant, with what was expected and found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("queue invariant broken: {0}")]
pub struct InvariantViolation(pub String);

macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(InvariantViolation(format!($($message)+)));
        }
    };
}

/// Audits every invariant of `queue`.
pub fn check_queue(queue: &BlockQueue) -> Result<(), InvariantViolation> {
    let name = queue.scheduler.name();
    let mut by_state = [0usize; 4];
    let mut by_class = [0u32; 2];
    let mut bios = 0usize;
    for (id, request) in queue.table.iter() {
        let state_index = match request.state {
            RequestState::Held => 0,
            RequestState::Queued => 1,
            RequestState::Dispatched => 2,
            RequestState::InFlight => 3,
        };
        by_state[state_index] += 1;
        // A 2.4 SCSI queue's request left the pool when the driver started it.
        if !(queue.frees_at_dispatch() && request.started) {
            by_class[queue.pool.split.class(request.op, request.flags)] += 1;
        }
        bios += request.bios.count as usize;
        ensure!(request.bios.count >= 1, "{id:?} carries no bio");
        let indexable = MergeIndex::indexable(request);
        let indexed = queue.merge.is_indexed(id);
        ensure!(
            indexed == (request.state == RequestState::Queued && indexable),
            "{id:?} in state {:?} is {}in the merge index",
            request.state,
            if indexed { "" } else { "not " }
        );
        ensure!(
            request.sector_count == 0 || queue.hazards.contains(id, request),
            "{id:?} is missing from the overlap index"
        );
        ensure!(
            // One bio may be as large as max_sectors; merges stop at the merge limit.
            request.sector_count <= queue.config().merge_limit_sectors()
                || (request.bios.count == 1
                    && request.sector_count <= queue.config().max_sectors()),
            "{id:?} grew to {} sectors, past its merge limit {}",
            request.sector_count,
            queue.config().merge_limit_sectors()
        );
    }
    let [held, queued, dispatched, in_flight] = by_state;
    ensure!(
        queued == queue.scheduler.queued(),
        "{name} reports {} queued, the table holds {queued} queued requests",
        queue.scheduler.queued()
    );
    ensure!(
        in_flight == queue.in_flight as usize,
        "in_flight counter {} but {in_flight} requests are in flight",
        queue.in_flight
    );
    ensure!(
        queue.in_flight <= queue.config().depth + queue.depth_slack,
        "{} requests in flight exceed depth {}",
        queue.in_flight,
        queue.config().depth
    );
    ensure!(
        dispatched == queue.dispatch.count(),
        "dispatch list holds {} but {dispatched} requests are dispatched",
        queue.dispatch.count()
    );
    for id in queue.dispatch.iter() {
        ensure!(
            queue.table.get(id).is_some_and(|r| r.state == RequestState::Dispatched),
            "dispatch list holds {id:?} which is not dispatched"
        );
    }
    let activated = queue.dispatch.iter().filter(|&id| queue.table[id].activated).count();
    ensure!(
        activated == queue.activated_waiting as usize,
        "activated-waiting counter {} but {activated} dispatched requests are activated",
        queue.activated_waiting
    );
    ensure!(held == queue.held.len(), "held list holds {} but {held} are held", queue.held.len());
    for &id in &queue.held {
        ensure!(
            queue.table.get(id).is_some_and(|r| r.state == RequestState::Held),
            "held list holds {id:?} which is not held"
        );
    }
    ensure!(
        by_class == queue.pool.count,
        "pool counts {:?} but the table holds {by_class:?} per class",
        queue.pool.count
    );
    ensure!(
        bios == queue.bios.outstanding(),
        "requests carry {bios} bios but {} are outstanding",
        queue.bios.outstanding()
    );
    let stats = &queue.stats;
    ensure!(
        stats.inserted == stats.dispatched + stats.requests_fused + stats.switched + queued as u64,
        "conservation: inserted {} != dispatched {} + fused {} + switched {} + queued {queued}",
        stats.inserted,
        stats.dispatched,
        stats.requests_fused,
        stats.switched
    );
    ensure!(
        queue.hazards.count() <= queue.table.live_count(),
        "overlap index holds {} entries for {} requests",
        queue.hazards.count(),
        queue.table.live_count()
    );
    Ok(())
}
