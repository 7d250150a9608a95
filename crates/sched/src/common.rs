//! Helpers that several schedulers share, each written once because the kernel versions those
//! schedulers follow do the same thing. Every user says in its own header that it uses the
//! helper and what its kernel version does around it; where versions differ, the difference
//! stays in the scheduler (a parameter here, or a check before the call).
//!
//! * [`same_ioprio`]: the 6.x block layer merges only requests of one I/O priority (none and
//!   mq-deadline; 2.6.18's block layer had no such rule).
//! * [`choose_request`] and [`seek_prefers_first`]: the `*_choose_req` family — of two
//!   candidate requests, the one the head should serve next. 2.6.18 anticipatory
//!   (`as_choose_req`), 2.6.18 cfq (`cfq_choose_req`) and 6.12 bfq (`bfq_choose_req`) share
//!   the seek rule; they differ in the back-seek limit and penalty (AS fixes them, cfq and bfq
//!   take tunables) and in what is compared first (cfq: sync before async; bfq: sync, then
//!   metadata; AS compares candidates of one direction only), so those stay in each scheduler.
//! * [`queue_priority`] and [`async_queue_slot`]: the class and level of a per-process queue
//!   from a request's I/O priority, and the shared async queue of a class and level — the same
//!   in 2.6.18 cfq (`cfq_init_prio_data`, its async queue per priority) and 6.12 bfq
//!   (`bfq_set_next_ioprio_data`, `async_bfqq[class][level]` plus the idle one).
//!   mq-deadline's three priority levels are a different table and stay in `mq_deadline`.
//! * [`BACK_SEEK_MAX`] and [`BACK_SEEK_PENALTY`]: the two back-seek tunables, the same sysfs
//!   attributes with the same defaults and ranges in 2.6.18 cfq and 6.12 bfq (which took them
//!   from cfq).
//! * [`ArrivalOrder`]: requests in the order they arrived, which is all 2.6.18 noop and
//!   blk-mq's none keep (noop's `queue` list, none's staging list).

use elevator_core::tunable::INT_MAX;
use elevator_core::{
    Ctx, IOPRIO_LEVELS, IdList, IoClass, IoPriority, ListLinks, RequestId, Sector, TunableSpec,
    Unit,
};

/// Shared async queues: one per real-time level, one per best-effort level, one idle.
pub(crate) const ASYNC_QUEUE_SLOTS: usize = 2 * IOPRIO_LEVELS as usize + 1;

/// The 6.x block layer's merge rule: a bio or a request joins only a request of the same I/O
/// priority, compared as the kernel encodes it (so class none at any nice level is one
/// priority).
pub(crate) fn same_ioprio(target: IoPriority, other: IoPriority) -> bool {
    target.to_ioprio_value() == other.to_ioprio_value()
}

/// The frame of every `*_choose_req`: no first candidate, or the same one twice, gives the
/// second; no second gives the first; only two different requests are compared, by
/// `first_wins(first, second)`.
pub(crate) fn choose_request<Id: Copy + PartialEq>(
    first: Option<Id>,
    second: Option<Id>,
    first_wins: impl FnOnce(Id, Id) -> bool,
) -> Option<Id> {
    match (first, second) {
        (Some(first), Some(second)) if first != second => {
            Some(if first_wins(first, second) { first } else { second })
        }
        (None, other) | (other, None) => other,
        (Some(_), same) => same,
    }
}

/// The seek rule of the `*_choose_req` family, for two candidates starting at `first` and
/// `second` with the head at `last`: a request ahead costs its distance; one behind by at most
/// `back_max_sectors` costs `back_penalty` times its distance; one further behind "wraps" to
/// the next sweep and loses to any that does not. Of two that wrap, the lower sector wins; on
/// equal cost, the higher sector.
pub(crate) fn seek_prefers_first(
    last: Sector,
    back_max_sectors: u64,
    back_penalty: u64,
    first: Sector,
    second: Sector,
) -> bool {
    let cost = |start: Sector| {
        if start >= last {
            Some(start.0 - last.0)
        } else if start.0.saturating_add(back_max_sectors) >= last.0 {
            Some((last.0 - start.0).saturating_mul(back_penalty))
        } else {
            None
        }
    };
    match (cost(first), cost(second)) {
        (Some(first_cost), Some(second_cost)) => {
            first_cost < second_cost || (first_cost == second_cost && first >= second)
        }
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (None, None) => first <= second,
    }
}

/// The class and level of the queue for `priority`: class none is best-effort at its level
/// (the level a nice value maps to); the idle class has one level, the lowest.
pub(crate) fn queue_priority(priority: IoPriority) -> (IoClass, u8) {
    match priority.effective_class() {
        IoClass::Idle => (IoClass::Idle, IOPRIO_LEVELS - 1),
        class => (class, priority.level()),
    }
}

/// The shared async queue of a queue's `class` and `level` (as [`queue_priority`] gives them),
/// out of [`ASYNC_QUEUE_SLOTS`]: real-time levels first, then best-effort levels, then idle.
pub(crate) fn async_queue_slot(class: IoClass, level: u8) -> usize {
    match class {
        IoClass::RealTime => usize::from(level),
        IoClass::Idle => 2 * IOPRIO_LEVELS as usize,
        _ => IOPRIO_LEVELS as usize + usize::from(level),
    }
}

/// `back_seek_max`: the longest backward seek to a queue's next request, 16 MiB.
pub(crate) const BACK_SEEK_MAX: TunableSpec = TunableSpec {
    name: "back_seek_max",
    unit: Unit::Kibibytes,
    default: 16 * 1024,
    min: 0,
    max: INT_MAX,
    help: "longest backward seek to a queue's next request",
};

/// `back_seek_penalty`: what a backward seek costs against a forward one of the same length.
pub(crate) const BACK_SEEK_PENALTY: TunableSpec = TunableSpec {
    name: "back_seek_penalty",
    unit: Unit::Factor,
    default: 2,
    min: 1,
    max: INT_MAX,
    help: "cost of a backward seek relative to a forward one of the same length",
};

/// Queued requests in arrival order.
#[derive(Debug)]
pub(crate) struct ArrivalOrder {
    fifo: IdList,
    links: ListLinks,
}

impl ArrivalOrder {
    pub(crate) fn new() -> ArrivalOrder {
        ArrivalOrder { fifo: IdList::new(), links: ListLinks::new(0) }
    }

    /// Appends a new request.
    pub(crate) fn push(&mut self, cx: &Ctx<'_>, id: RequestId) {
        self.links.ensure_capacity(cx.requests.capacity());
        self.fifo.push_back(&mut self.links, id);
    }

    /// The oldest request, taken out.
    pub(crate) fn pop(&mut self) -> Option<RequestId> {
        self.fifo.pop_front(&mut self.links)
    }

    /// Every request, oldest first, taken out.
    pub(crate) fn drain(&mut self, out: &mut Vec<RequestId>) {
        while let Some(id) = self.pop() {
            out.push(id);
        }
    }

    /// Takes `id` out wherever it is.
    pub(crate) fn remove(&mut self, id: RequestId) {
        self.fifo.remove(&mut self.links, id);
    }

    /// The request that arrived right after `id`.
    pub(crate) fn next(&self, id: RequestId) -> Option<RequestId> {
        self.fifo.next(&self.links, id)
    }

    /// The request that arrived right before `id`.
    pub(crate) fn prev(&self, id: RequestId) -> Option<RequestId> {
        self.fifo.prev(&self.links, id)
    }

    /// How many requests it holds.
    pub(crate) fn count(&self) -> usize {
        self.fifo.count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the seek rule: ahead costs the distance, behind within the limit costs penalty ×
    // distance, further behind wraps and loses; two wrapping pick the lower sector; a tie
    // picks the higher sector.
    #[test]
    fn the_seek_rule_penalises_short_back_seeks_and_wraps_long_ones() {
        let head = Sector(1_000);
        assert!(seek_prefers_first(head, 100, 2, Sector(1_100), Sector(940)), "100 < 2 × 60");
        assert!(seek_prefers_first(head, 100, 2, Sector(960), Sector(1_100)), "2 × 40 < 100");
        assert!(seek_prefers_first(head, 100, 2, Sector(1_100), Sector(950)), "tie: higher");
        assert!(!seek_prefers_first(head, 100, 2, Sector(950), Sector(1_100)), "tie: higher");
        assert!(seek_prefers_first(head, 100, 2, Sector(5_000_000), Sector(800)), "800 wraps");
        assert!(seek_prefers_first(head, 100, 2, Sector(5), Sector(100)), "both wrap: lower");
        assert!(!seek_prefers_first(head, 100, 2, Sector(100), Sector(5)), "both wrap: lower");
        assert!(seek_prefers_first(head, 1_000, 0, Sector(1), Sector(1_001)), "free back seeks");
    }

    // Proves the frame: a missing or repeated candidate short-cuts without a comparison.
    #[test]
    fn choose_request_compares_only_two_different_requests() {
        let (a, b) = (1_u32, 2_u32);
        let never = |_, _| -> bool { panic!("compared") };
        assert_eq!(choose_request(None, Some(b), never), Some(b));
        assert_eq!(choose_request(Some(a), None, never), Some(a));
        assert_eq!(choose_request(Some(a), Some(a), never), Some(a));
        assert_eq!(choose_request::<u32>(None, None, never), None);
        assert_eq!(choose_request(Some(a), Some(b), |_, _| false), Some(b));
        assert_eq!(choose_request(Some(a), Some(b), |_, _| true), Some(a));
    }

    // Proves the queue priority and async slot tables: none is best-effort at its level, idle
    // is one queue at the lowest level, and every class and level has its own async slot.
    #[test]
    fn priorities_map_to_queues_and_async_slots() {
        let idle = IoPriority::new(IoClass::Idle, 0).unwrap();
        assert_eq!(queue_priority(idle), (IoClass::Idle, 7));
        let none = IoPriority::new(IoClass::None, 2).unwrap();
        assert_eq!(queue_priority(none), (IoClass::BestEffort, 2));
        let mut slots = Vec::new();
        for class in [IoClass::RealTime, IoClass::BestEffort] {
            for level in 0..IOPRIO_LEVELS {
                slots.push(async_queue_slot(class, level));
            }
        }
        slots.push(async_queue_slot(IoClass::Idle, IOPRIO_LEVELS - 1));
        assert_eq!(slots, (0..ASYNC_QUEUE_SLOTS).collect::<Vec<_>>());
    }
}
