//! Burst detection (modern-schedulers.md §3.9, "Burst handling"): many sync queues created
//! shortly after each other belong to one job (a service starting many workers, `git grep`,
//! fio's `numjobs`), which wants throughput, not the latency of each member. Once such a burst
//! reaches 8 queues its members are marked "in a large burst": they are not weight-raised, and
//! so are idled for only where idling boosts throughput.
//!
//! Follows `bfq_handle_burst`, `bfq_add_to_burst` and `bfq_reset_burst_list` of Linux 6.12
//! (`block/bfq-iosched.c`), called where `bfq_init_rq` calls it. There are no cgroups here, so
//! every queue has the root as parent and `burst_parent_entity` never ends a burst, and there
//! is no queue splitting, so the "just split" exemption never applies.

use elevator_core::{Duration, Instant};

use super::Bfq;
use super::queue::QueueIndex;

/// Queues in one burst that make it large (`bfq_large_burst_thresh`).
pub(super) const LARGE_BURST_THRESHOLD: u32 = 8;
/// A queue created within this time of the previous insertion joins the burst
/// (`bfq_burst_interval`).
pub(super) const BURST_INTERVAL: Duration = Duration::from_millis(180);
/// A queue of a burst idle this long past its last budget timeout leaves it (the 10000 ms of
/// `bfq_bfqq_handle_idle_busy_switch`).
pub(super) const BURST_LEAVE_IDLE: Duration = Duration::from_secs(10);

/// The burst being tracked (the burst fields of `bfq_data`).
#[derive(Debug, Default)]
pub(super) struct Burst {
    /// Queues of the burst in progress while it is not (yet) large, in order of joining
    /// (`burst_list`).
    pub(super) list: Vec<QueueIndex>,
    /// Queues created in the burst in progress (`burst_size`); 0 when no burst is tracked.
    pub(super) size: u32,
    /// The burst in progress is large: later members are marked at once (`large_burst`).
    pub(super) large: bool,
    /// When a queue last joined or started a burst (`last_ins_in_burst`); `None` is "long ago".
    pub(super) last_insertion: Option<Instant>,
}

impl Bfq {
    /// A sync queue was just created for the request being inserted: it may belong to a burst
    /// of creations. Looked at only while a burst is in progress or no queue is busy, so that a
    /// queue created beside unrelated busy queues keeps its raising (the condition around the
    /// call in `bfq_init_rq`).
    pub(super) fn insert_handle_burst(&mut self, now: Instant, queue: QueueIndex) {
        let busy: u32 = self.busy_queues.iter().sum();
        if !self.queues[queue.slot()].just_created || (self.burst.size == 0 && busy > 0) {
            return;
        }
        self.handle_burst(now, queue);
    }

    /// `bfq_handle_burst`: `queue` ends a burst that is over and starts a new one, joins a
    /// large burst, or joins the burst in progress.
    fn handle_burst(&mut self, now: Instant, queue: QueueIndex) {
        let entry = &self.queues[queue.slot()];
        if entry.in_burst_list || entry.in_large_burst {
            return;
        }
        let late = self.burst.last_insertion.is_none_or(|at| at + BURST_INTERVAL < now);
        if late {
            self.burst.large = false;
            self.reset_burst_list(queue);
        } else if self.burst.large {
            self.queues[queue.slot()].in_large_burst = true;
        } else {
            self.add_to_burst(queue);
        }
        self.burst.last_insertion = Some(now);
    }

    /// `bfq_reset_burst_list`: empties the list; `queue` starts a new one only if no queue is
    /// busy (a burst counts only queues created with nothing else going on).
    fn reset_burst_list(&mut self, queue: QueueIndex) {
        for member in std::mem::take(&mut self.burst.list) {
            self.queues[member.slot()].in_burst_list = false;
        }
        let busy: u32 = self.busy_queues.iter().sum();
        if busy == 0 {
            self.burst.list.push(queue);
            self.queues[queue.slot()].in_burst_list = true;
            self.burst.size = 1;
        } else {
            self.burst.size = 0;
        }
    }

    /// `bfq_add_to_burst`: the burst grows by `queue`; at the threshold every member, `queue`
    /// included, is marked as in a large burst and the list, no longer needed, is emptied.
    fn add_to_burst(&mut self, queue: QueueIndex) {
        self.burst.size += 1;
        if self.burst.size == LARGE_BURST_THRESHOLD {
            self.burst.large = true;
            for member in std::mem::take(&mut self.burst.list) {
                let entry = &mut self.queues[member.slot()];
                entry.in_burst_list = false;
                entry.in_large_burst = true;
            }
            self.queues[queue.slot()].in_large_burst = true;
        } else {
            self.burst.list.push(queue);
            self.queues[queue.slot()].in_burst_list = true;
        }
    }

    /// `queue` leaves the burst list, if on it, when idle long enough to be done with the
    /// burst's work: it was still created in the burst, so the burst keeps its size.
    pub(super) fn leave_burst_list(&mut self, queue: QueueIndex) -> bool {
        let was_member = std::mem::take(&mut self.queues[queue.slot()].in_burst_list);
        if was_member {
            self.burst.list.retain(|&member| member != queue);
        }
        was_member
    }

    /// `queue` is freed (its process exited): off the burst list, and out of the burst's size,
    /// so that a short-lived process starting and exiting beside an application's start-up does
    /// not make that start-up a large burst (`bfq_put_queue`). A stably merged queue, which
    /// belongs to no single process (`bic` NULL), leaves the size as it is.
    pub(super) fn free_leaves_burst(&mut self, queue: QueueIndex) {
        let shared = self.queues[queue.slot()].shared;
        if self.leave_burst_list(queue) && !shared && self.burst.size > 0 {
            self.burst.size -= 1;
        }
    }
}
