//! Injection while idling (modern-schedulers.md §3.8; 6.12's `bfq_select_queue`,
//! `bfq_choose_bfqq_for_injection`, `bfq_update_inject_limit`, `bfq_reset_inject_limit` and
//! the sampling block of `bfq_add_request`).
//!
//! While the queue in service is empty and idled for (its idle timer armed, or its requests in
//! flight with idling to follow), bfq may hand out requests of other queues, so the device
//! is not left underfed while the queue's process thinks. How many may be at the device at
//! once is the queue's **inject limit**, adapted from the total service time (arrival to
//! completion) of the queue's own requests: a request that arrives with nothing in flight
//! gives the baseline; one that arrives while injected requests are in flight is compared
//! with 1.5 × the baseline, and the limit goes down if it took longer, up (to one above the
//! most requests seen at the device) if not. The limit is reset every second (to 0 for a
//! queue with a short think time, 1 otherwise), and when the think time changes before a
//! baseline exists. Sampling and resets only happen for a request whose process has no other
//! request outstanding (`bic->requests <= 1`): a process with many requests in flight is not
//! made to wait by one injected request.
//!
//! Checked line by line against the kernel's current `block/bfq-iosched.c` (torvalds/linux
//! 0f9362b2, issue 25): as there, the end of a slot (`bfq_bfqq_expire`) drops a sample under
//! way, and `max_rq_in_driver`, which caps the limit's growth, is never zeroed again once the
//! device is found to queue.
//!
//! **Waker detection** (`bfq_check_waker`): a queue with a long think time whose process's
//! request arrives less than 4 ms after a completion of another queue detects that queue as a
//! candidate waker; three detections in a row (within 128 `slice_idle`s of the first) make it
//! the queue's waker. While the queue is idled for, its waker's and its woken queues' requests
//! are injected first, without the limit: they unblock the process being waited for.

use elevator_core::{Ctx, Duration, Instant, RequestId};

use super::queue::{Owner, QueueIndex};
use super::{Bfq, InjectState};

/// The limit is reset this often (`bfq_add_request`: 1000 ms).
const INJECT_RESET_INTERVAL: Duration = Duration::from_millis(1000);
/// A new sample is taken at least this long after the limit last went down (10 ms).
const INJECT_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);
/// A think-time change resets a limit without baseline only this long after the last
/// decrease, unless the think time became long (`bfq_update_has_short_ttime`: 100 ms).
const INJECT_TTIME_RESET_INTERVAL: Duration = Duration::from_millis(100);

impl Bfq {
    /// `bfq_reset_inject_limit`: the baseline forgotten; the limit 0 for a short think time
    /// (an injected request might outlast it), 1 for a long one.
    pub(super) fn reset_inject_limit(&mut self, queue: QueueIndex, now: Instant) {
        self.inject.waited_rq = None;
        let entry = &mut self.queues[queue.slot()];
        entry.last_serv_time_ns = 0;
        entry.inject_limit = u32::from(!entry.has_short_ttime);
        entry.decrease_time = now;
    }

    /// After `bfq_update_has_short_ttime` changed the think-time state of `queue`: a limit
    /// without baseline follows the new state.
    pub(super) fn inject_after_ttime_change(&mut self, queue: QueueIndex, now: Instant) {
        let entry = &self.queues[queue.slot()];
        if entry.last_serv_time_ns == 0
            && (entry.decrease_time + INJECT_TTIME_RESET_INTERVAL <= now || !entry.has_short_ttime)
        {
            self.reset_inject_limit(queue, now);
        }
    }

    /// The injection part of `bfq_add_request`, for a request of a sync queue whose process
    /// has no other request outstanding: the periodic reset, then the start of a service-time
    /// sample if `queue` is in service and either nothing is in flight (a baseline) or
    /// injected requests are (a comparison).
    pub(super) fn add_request_inject(&mut self, cx: &Ctx<'_>, queue: QueueIndex) {
        let now = cx.now;
        if self.queues[queue.slot()].decrease_time + INJECT_RESET_INTERVAL <= now {
            self.reset_inject_limit(queue, now);
        }
        let entry = &self.queues[queue.slot()];
        let in_driver = cx.in_flight;
        if self.in_service == Some(queue)
            && (in_driver == 0
                || (entry.last_serv_time_ns > 0 && self.inject.rqs_injected && in_driver > 0))
            && entry.decrease_time + INJECT_SAMPLE_INTERVAL <= now
        {
            self.inject.last_empty_occupied = now;
            self.inject.wait_dispatch = true;
            // Injection before this arrival cannot have delayed it if nothing is in flight.
            if in_driver == 0 {
                self.inject.rqs_injected = false;
            }
        }
    }

    /// `bfq_update_inject_limit`, at the completion of the sampled request of `queue`, with
    /// `in_driver` counting that request: compares its total service time with the baseline
    /// if injection happened meanwhile, then takes it as the baseline if none exists and
    /// nothing else was in flight, or if it is lower, or if nothing was injected.
    pub(super) fn update_inject_limit(&mut self, queue: QueueIndex, now: Instant, in_driver: u32) {
        let total_ns = now.saturating_since(self.inject.last_empty_occupied).as_nanos();
        let max_in_driver = self.max_in_driver;
        let injected = self.inject.rqs_injected;
        let entry = &mut self.queues[queue.slot()];
        let old_limit = entry.inject_limit;
        if entry.last_serv_time_ns > 0 && injected {
            let threshold = entry.last_serv_time_ns * 3 / 2;
            if total_ns >= threshold && old_limit > 0 {
                entry.inject_limit -= 1;
                entry.decrease_time = now;
            } else if total_ns < threshold && old_limit <= max_in_driver {
                entry.inject_limit += 1;
            }
        }
        if (entry.last_serv_time_ns == 0 && in_driver == 1) || total_ns < entry.last_serv_time_ns {
            if entry.last_serv_time_ns == 0 {
                // A baseline at last: injection may start.
                entry.inject_limit = old_limit.max(1);
            }
            entry.last_serv_time_ns = total_ns;
        } else if !injected && in_driver == 1 {
            // The baseline varies with the size and locality of requests: follow it.
            entry.last_serv_time_ns = total_ns;
        }
        self.inject.waited_rq = None;
        self.inject.rqs_injected = false;
    }

    /// The queue to inject from while `queue`, in service and empty, is idled for (the
    /// injection branch of `bfq_select_queue`): its process's async queue if that queue's next
    /// request is the process's own and fits its budget; else its waker, else the latest queue
    /// it wakes, if busy with a next request that fits its budget (whatever the inject limit);
    /// else, unless idling is for throughput or `queue` is raised with a short think time while
    /// no other raised queue is busy, a queue `bfq_choose_bfqq_for_injection` finds.
    pub(super) fn injection_queue(
        &mut self,
        cx: &Ctx<'_>,
        queue: QueueIndex,
    ) -> Option<QueueIndex> {
        let entry = &self.queues[queue.slot()];
        if let Owner::Process(process) = entry.owner
            && let Some(async_queue) = self.processes.get(&process).and_then(|p| p.async_queue)
        {
            let async_entry = &self.queues[async_queue.slot()];
            if async_entry.busy
                && let Some(next) = async_entry.next_request
                && cx.requests[next].process == process
                && self.charge(cx, next, async_queue) <= self.budget_left(async_queue)
            {
                return Some(async_queue);
            }
        }
        let entry = &self.queues[queue.slot()];
        let fits = |candidate: QueueIndex| {
            let other = &self.queues[candidate.slot()];
            other.busy
                && other.next_request.is_some_and(|next| {
                    self.charge(cx, next, candidate) <= self.budget_left(candidate)
                })
        };
        if let Some(waker) = entry.waker
            && fits(waker)
        {
            return Some(waker);
        }
        if let Some(&woken) = entry.woken.first()
            && fits(woken)
        {
            return Some(woken);
        }
        if !self.idling_boosts_throughput(queue)
            && (entry.wr_coeff == 1 || self.wr_busy_queues > 1 || !entry.has_short_ttime)
        {
            return self.choose_queue_for_injection(cx);
        }
        None
    }

    /// `bfq_choose_bfqq_for_injection`: while fewer requests than the inject limit of the
    /// queue in service are at the device (a limit of 0 counts as 1 once idling has lasted
    /// `slice_idle` without a baseline), the most recently activated queue with a request
    /// that fits its budget — only raised queues if the queue in service is raised and has a
    /// short think time.
    fn choose_queue_for_injection(&mut self, cx: &Ctx<'_>) -> Option<QueueIndex> {
        let in_service = self.in_service?;
        let entry = &self.queues[in_service.slot()];
        let always_inject = entry.wr_coeff == 1 || !entry.has_short_ttime;
        let mut limit = entry.inject_limit;
        if limit == 0
            && entry.last_serv_time_ns == 0
            && entry.wait_request
            && self.last_idling_start + self.tunables.slice_idle <= cx.now
        {
            limit = 1;
        }
        if cx.in_flight >= limit {
            return None;
        }
        let mut candidates: Vec<(u64, QueueIndex)> = self
            .queues
            .iter()
            .enumerate()
            .map(|(index, candidate)| (candidate, QueueIndex(index as u32)))
            .filter(|&(candidate, index)| {
                index != in_service && candidate.busy && !candidate.is_empty()
            })
            .map(|(candidate, index)| (candidate.active_sequence, index))
            .collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        let chosen = candidates.into_iter().map(|(_, index)| index).find(|&index| {
            let candidate = &self.queues[index.slot()];
            let next = candidate.next_request.expect("a queue with requests has a next one");
            (always_inject || candidate.wr_coeff > 1)
                && self.charge(cx, next, index) <= self.budget_left(index)
        });
        if chosen.is_some() {
            self.inject.rqs_injected = true;
        }
        chosen
    }

    /// The queue in service expires (`bfq_bfqq_expire`): a sample under way is dropped, so
    /// that neither a request the next slot's queue dispatches nor one still in flight of this
    /// slot is measured against this slot's arrival, and injection during this slot does not
    /// count as injection during the next one's sample.
    pub(super) fn expire_inject(&mut self) {
        self.inject.rqs_injected = false;
        self.inject.wait_dispatch = false;
        self.inject.waited_rq = None;
    }

    /// At a dispatch from the queue in service: the request a sample waits for.
    pub(super) fn dispatch_inject(&mut self, id: RequestId) {
        if self.inject.wait_dispatch {
            self.inject.wait_dispatch = false;
            self.inject.waited_rq = Some(id);
        }
    }
}

/// How long after a completion of another queue a queue's new request counts as woken by it
/// (`bfq_check_waker`: 4 ms).
const WAKER_WINDOW: Duration = Duration::from_millis(4);
/// Detections of the same candidate that make it the waker.
const WAKER_DETECTIONS: u32 = 3;
/// Detection restarts if the first one is older than this many `slice_idle`s.
const WAKER_DETECTION_SLICES: u64 = 128;

/// Waker detection (`bfq_check_waker`).
impl Bfq {
    /// `queue`, with a long think time, gets a request (its process's only one outstanding)
    /// less than 4 ms after a request of another queue completed: one detection of that queue
    /// as its waker; the third in a row (within 128 `slice_idle`s of the first) makes it the
    /// waker, and `queue` joins its woken list.
    pub(super) fn check_waker(&mut self, queue: QueueIndex, now: Instant) {
        let Some(candidate) = self.last_completed_queue else { return };
        let entry = &self.queues[queue.slot()];
        if candidate == queue
            || entry.has_short_ttime
            || now.saturating_since(self.last_completion) >= WAKER_WINDOW
        {
            return;
        }
        let window = Duration::from_nanos(
            WAKER_DETECTION_SLICES.saturating_mul(self.tunables.slice_idle.as_nanos()),
        );
        let entry = &mut self.queues[queue.slot()];
        if entry.tentative_waker != Some(candidate) || now > entry.waker_detection_started + window
        {
            entry.tentative_waker = Some(candidate);
            entry.waker_detections = 1;
            entry.waker_detection_started = now;
        } else {
            entry.waker_detections += 1;
        }
        if entry.waker_detections == WAKER_DETECTIONS {
            entry.tentative_waker = None;
            if let Some(old) = entry.waker.replace(candidate) {
                self.queues[old.slot()].woken.retain(|&woken| woken != queue);
            }
            self.queues[candidate.slot()].woken.insert(0, queue);
        }
    }

    /// `queue` is freed (`bfq_put_queue`): the queues it woke lose their waker, its own waker
    /// forgets it, and no one keeps it as a candidate or as the latest completion.
    pub(super) fn free_forgets_wakers(&mut self, queue: QueueIndex) {
        for woken in std::mem::take(&mut self.queues[queue.slot()].woken) {
            self.queues[woken.slot()].waker = None;
        }
        if let Some(waker) = self.queues[queue.slot()].waker.take() {
            self.queues[waker.slot()].woken.retain(|&woken| woken != queue);
        }
        for entry in &mut self.queues {
            if entry.tentative_waker == Some(queue) {
                entry.tentative_waker = None;
            }
        }
        if self.last_completed_queue == Some(queue) {
            self.last_completed_queue = None;
        }
    }
}

impl InjectState {
    /// Nothing sampled, nothing injected.
    pub(super) fn new() -> InjectState {
        InjectState {
            rqs_injected: false,
            wait_dispatch: false,
            waited_rq: None,
            last_empty_occupied: Instant::ZERO,
        }
    }
}
