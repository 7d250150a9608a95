//! Weight raising (modern-schedulers.md §3.9): starting, renewing and ending the raised weight
//! of interactive and soft real-time queues, and the durations that govern it.

use elevator_core::{Duration, Instant};

use super::peak_rate::REFERENCE_RATE;
use super::queue::{Owner, QueueIndex};
use super::{
    Bfq, MAX_SERVICE_FROM_WR, REFERENCE_WR_DURATION_MS, SOFTRT_MIN_GAP, SOFTRT_WEIGHT_FACTOR,
    WR_COEFF, WR_DURATION_MAX, WR_DURATION_MIN, WR_MAX_SOFTRT_RATE, WR_RT_MAX_TIME,
};

/// What an arrival to an idle queue was judged to be (the flags
/// `bfq_update_bfqq_wr_on_rq_arrival` takes).
#[derive(Clone, Copy, Debug)]
pub(super) struct WrArrival {
    /// Raised already, or interactive or soft real-time (`wr_or_deserves_wr`).
    pub(super) deserves_wr: bool,
    pub(super) interactive: bool,
    /// Created in a large burst.
    pub(super) in_burst: bool,
    pub(super) soft_rt: bool,
}

impl Bfq {
    /// Starts, renews or ends weight raising on an arrival to an idle queue
    /// (`bfq_update_bfqq_wr_on_rq_arrival`).
    pub(super) fn add_weight_raising(
        &mut self,
        now: Instant,
        queue: QueueIndex,
        old_wr_coeff: u64,
        arrival: WrArrival,
    ) {
        let WrArrival { deserves_wr, interactive, in_burst, soft_rt } = arrival;
        let duration = self.wr_duration();
        let min_budget = self.min_budget();
        let entry = &mut self.queues[queue.slot()];
        if old_wr_coeff == 1 && deserves_wr {
            if interactive {
                entry.service_from_wr = 0;
                entry.wr_coeff = WR_COEFF;
                entry.wr_cur_max_time = duration;
                self.counters.wr_interactive_starts += 1;
            } else {
                entry.wr_start_at_switch_to_srt = None;
                entry.wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                entry.wr_cur_max_time = WR_RT_MAX_TIME;
                self.counters.wr_soft_rt_starts += 1;
            }
            // A small budget keeps the scheduling error of a raised queue small.
            let entity = self.wf2q.entity_mut(queue.0);
            entity.budget = entity.budget.min(2 * min_budget);
        } else if old_wr_coeff > 1 {
            if interactive {
                entry.wr_coeff = WR_COEFF;
                entry.wr_cur_max_time = duration;
            } else if in_burst {
                // Marked in a large burst while raised: the raising stops here, with no
                // other change (the kernel sets only `wr_coeff`; the queue is not busy, so
                // `wr_busy_queues` does not count it).
                entry.wr_coeff = 1;
            } else if soft_rt {
                if entry.wr_cur_max_time != WR_RT_MAX_TIME {
                    entry.wr_start_at_switch_to_srt = Some(entry.last_wr_start_finish);
                    entry.wr_cur_max_time = WR_RT_MAX_TIME;
                    entry.wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                    self.counters.wr_soft_rt_starts += 1;
                }
                entry.last_wr_start_finish = now;
            }
        }
    }

    /// Ends raising that has run its time or its service, or falls back from soft real-time
    /// to an interrupted interactive raising; applies a weight change at once
    /// (`bfq_update_wr_data`).
    pub(super) fn dispatch_update_weight_raising(&mut self, now: Instant, queue: QueueIndex) {
        let duration = self.wr_duration();
        let entry = &self.queues[queue.slot()];
        if entry.wr_coeff > 1 {
            // A queue found to be in a large burst loses its raising at its next dispatch.
            if entry.in_large_burst {
                self.end_weight_raising(queue, now);
            } else if entry.last_wr_start_finish + entry.wr_cur_max_time < now {
                let interactive_over =
                    entry.wr_start_at_switch_to_srt.is_none_or(|at| at + duration < now);
                if entry.wr_cur_max_time != WR_RT_MAX_TIME || interactive_over {
                    self.end_weight_raising(queue, now);
                } else {
                    self.switch_back_to_interactive(queue);
                }
            }
            let entry = &self.queues[queue.slot()];
            if entry.wr_coeff > 1
                && entry.wr_cur_max_time != WR_RT_MAX_TIME
                && entry.service_from_wr > MAX_SERVICE_FROM_WR
            {
                self.end_weight_raising(queue, now);
            }
        }
        let entry = &self.queues[queue.slot()];
        let raised_weight = self.wf2q.entity(queue.0).weight > entry.orig_weight;
        if raised_weight != (entry.wr_coeff > 1)
            && let Some((weight, class)) = self.apply_priority_change(queue, false)
        {
            self.wf2q.change_weight(queue.0, weight, class);
        }
    }

    /// When a queue's next batch may count as soft real-time (`bfq_bfqq_softrt_next_start`):
    /// not before its service since it became busy has averaged at most 7000 sectors/s, nor
    /// right after it emptied.
    pub(super) fn softrt_next_start(&self, queue: QueueIndex, now: Instant) -> Instant {
        let entry = &self.queues[queue.slot()];
        let paced_ns = entry.service_from_backlogged * 1_000_000_000 / WR_MAX_SOFTRT_RATE;
        let paced = entry.last_idle_backlogged + Duration::from_nanos(paced_ns);
        let gap = now + self.tunables.slice_idle + SOFTRT_MIN_GAP;
        entry.soft_rt_next_start.max(paced).max(gap)
    }

    /// Ends `queue`'s raising (`bfq_bfqq_end_wr`); the weight follows at the next update.
    pub(super) fn end_weight_raising(&mut self, queue: QueueIndex, now: Instant) {
        let entry = &mut self.queues[queue.slot()];
        if entry.wr_coeff == 1 {
            return;
        }
        if entry.wr_cur_max_time != WR_RT_MAX_TIME {
            entry.soft_rt_next_start = now;
        }
        if entry.busy {
            self.wr_busy_queues -= 1;
        }
        entry.wr_coeff = 1;
        entry.wr_cur_max_time = Duration::ZERO;
        entry.last_wr_start_finish = now;
        entry.prio_changed = true;
        self.counters.wr_ends += 1;
    }

    /// A soft real-time raising ends inside an interactive one it interrupted: back to that.
    pub(super) fn switch_back_to_interactive(&mut self, queue: QueueIndex) {
        let duration = self.wr_duration();
        let entry = &mut self.queues[queue.slot()];
        entry.wr_coeff = WR_COEFF;
        entry.wr_cur_max_time = duration;
        if let Some(at) = entry.wr_start_at_switch_to_srt {
            entry.last_wr_start_finish = at;
        }
        entry.prio_changed = true;
    }

    /// `low_latency` turned off: every raising ends (`bfq_end_wr`).
    pub(super) fn end_all_weight_raising(&mut self) {
        let now = self.last_completion.max(self.last_budget_start);
        for index in 0..self.queues.len() {
            if self.queues[index].owner != Owner::Free {
                self.end_weight_raising(QueueIndex(index as u32), now);
            }
        }
    }

    /// The duration of interactive raising: the reference duration scaled by how much slower
    /// than the reference the device is, 3 to 25 s (`bfq_wr_duration`).
    pub(super) fn wr_duration(&self) -> Duration {
        let index = self.reference_index();
        let product = REFERENCE_RATE[index] * REFERENCE_WR_DURATION_MS[index];
        let duration = Duration::from_millis(product / self.peak.rate.max(1));
        duration.clamp(WR_DURATION_MIN, WR_DURATION_MAX)
    }
}
