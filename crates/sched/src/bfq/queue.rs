//! One bfq queue (`bfq_queue`): its requests, its budget state, its think-time, seek and
//! I/O-intensity statistics (modern-schedulers.md §3.4–§3.6), and its weight-raising state
//! (§3.9). The decisions that involve other queues live in `mod.rs`.

use elevator_core::{Duration, IdList, Instant, IoClass, ProcessId, RequestId, Sector};

use crate::sorted::SortedMap;

/// A queue's slot in the scheduler's queue slab (and its entity's in [`super::wf2q::Wf2q`]).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
pub(super) struct QueueIndex(pub(super) u32);

impl QueueIndex {
    pub(super) const fn slot(self) -> usize {
        self.0 as usize
    }
}

/// Levels of the real-time and best-effort classes (`IOPRIO_NR_LEVELS`).
pub(super) const LEVELS: u8 = 8;
/// Weight per level step (`BFQ_WEIGHT_CONVERSION_COEFF`).
const WEIGHT_COEFF: u64 = 10;
/// The weight of level 4, the default: only queues at it are weight-raised.
pub(super) const DEFAULT_WEIGHT: u64 = weight_of(4);
/// A request this far (sectors) from where the queue's previous one ended is seeky.
const SEEK_THRESHOLD_SECTORS: u64 = 800;
/// Requests this large (sectors) or larger are never seeky on a non-rotational device
/// (`BFQQ_SECT_THR_NONROT`).
const SECT_THRESHOLD_NONROT: u32 = 64;
/// More seeky requests than this among the last 32 make a queue seeky.
const SEEKY_COUNT: u32 = 19;
/// A think-time mean of this many samples (fixed point, ×256) or fewer is not trusted.
const VALID_SAMPLES: u64 = 80;
/// The window over which the I/O-bound flag is judged.
const IO_INTENSITY_WINDOW: Duration = Duration::from_millis(200);

/// The weight of a level: `(8 − level) × 10`, 80 down to 10.
pub(super) const fn weight_of(level: u8) -> u64 {
    (LEVELS - level) as u64 * WEIGHT_COEFF
}

/// The service tree of a class: real-time 0, best-effort 1, idle 2.
pub(super) const fn class_index(class: IoClass) -> usize {
    match class {
        IoClass::RealTime => 0,
        IoClass::Idle => 2,
        IoClass::None | IoClass::BestEffort => 1,
    }
}

/// Whether a request of `sectors` at `start` is seeky after one that ended at `last_end` (0:
/// no previous request, never seeky; `BFQ_RQ_SEEKY`). On a non-rotational device only a small
/// request (under 64 sectors) can be seeky: a large one is served at full speed wherever it is.
pub(super) fn is_seeky(
    last_end: Sector,
    start: Sector,
    sectors: u32,
    non_rotational: bool,
) -> bool {
    last_end.0 != 0
        && last_end.distance(start) > SEEK_THRESHOLD_SECTORS
        && (!non_rotational || sectors < SECT_THRESHOLD_NONROT)
}

/// Whose requests a queue holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Owner {
    /// One process's sync requests.
    Process(ProcessId),
    /// The sync requests of this many processes (at least one) whose queues were stably
    /// merged into it (`bfq_bfqq_coop`, `bic` NULL: it belongs to no single process).
    Merged(u32),
    /// The process exited; its requests are still served, then the slot is freed.
    Exited,
    /// Async requests of every process at one priority, by async slot.
    Shared(usize),
    /// A free slot.
    Free,
}

/// Why a queue left service (`enum bfqq_expiration`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Expiration {
    /// The idle timer fired with the queue still empty.
    TooIdle,
    /// Its slot lasted longer than its budget timeout.
    BudgetTimeout,
    /// Its next request did not fit in what was left of its budget.
    BudgetExhausted,
    /// It ran out of requests and waiting for more did not pay.
    NoMoreRequests,
    /// Another queue took over.
    Preempted,
}

/// One bfq queue.
#[derive(Debug)]
pub(super) struct BfqQueue {
    pub(super) owner: Owner,
    /// Holds sync requests (created for a process's sync I/O).
    pub(super) sync: bool,
    /// Class and level in force (never [`IoClass::None`]).
    pub(super) class: IoClass,
    pub(super) level: u8,
    /// Class and level its requests now carry, applied at the next (re)activation.
    pub(super) new_class: IoClass,
    pub(super) new_level: u8,
    /// A new priority or raising coefficient waits to be applied (`prio_changed`).
    pub(super) prio_changed: bool,
    /// The weight of its level (`orig_weight`).
    pub(super) orig_weight: u64,
    /// Queued requests by (start, arrival sequence): requests may share a start.
    pub(super) sort: SortedMap<(Sector, u64), RequestId>,
    pub(super) fifo: IdList,
    pub(super) next_request: Option<RequestId>,
    /// Queued requests, `[async, sync]`.
    pub(super) queued: [u32; 2],
    /// Requests handed out and not yet completed.
    pub(super) dispatched: u32,
    /// Backlogged from the scheduler's point of view: active in B-WF2Q+ or in service.
    pub(super) busy: bool,
    /// The budget it gets at its next activation (before the charge of its next request).
    pub(super) max_budget: u64,
    /// End of its current slot's budget timeout; also when it last went idle with nothing in
    /// flight. `None` is "long ago" (the kernel's smallest-from-now).
    pub(super) budget_timeout: Option<Instant>,
    /// Waiting for its next request with the idle timer armed.
    pub(super) wait_request: bool,
    /// Expired while empty and may recover its hole (§3.7).
    pub(super) non_blocking_wait_rq: bool,
    /// Its FIFO was looked at in this slot.
    pub(super) fifo_expire: bool,
    /// Busy at least 80 % of the last ~200 ms.
    pub(super) io_bound: bool,
    pub(super) has_short_ttime: bool,
    /// Compute `soft_rt_next_start` when its last request completes.
    pub(super) softrt_update: bool,
    /// Has not been activated yet.
    pub(super) just_created: bool,
    /// On the list of the burst in progress (`burst_list_node` hashed).
    pub(super) in_burst_list: bool,
    /// Created in a large burst: never raised (`in_large_burst`).
    pub(super) in_large_burst: bool,
    // Think time, seekiness, I/O intensity.
    pub(super) last_end_request: Instant,
    ttime_samples: u64,
    ttime_total_ns: u64,
    pub(super) ttime_mean_ns: u64,
    pub(super) seek_history: u32,
    pub(super) last_request_pos: Sector,
    io_start_time: Instant,
    tot_idle_time: Duration,
    /// The weight under which it is counted among queues with pending I/O (not raised).
    pub(super) weight_counter: Option<u64>,
    // Weight raising.
    pub(super) wr_coeff: u64,
    /// How long the current raising lasts (zero when not raised).
    pub(super) wr_cur_max_time: Duration,
    /// When the current raising started; for a queue that is not raised, when its last
    /// request arrived or its raising ended.
    pub(super) last_wr_start_finish: Instant,
    /// When an interactive raising that soft real-time raising interrupted had started.
    pub(super) wr_start_at_switch_to_srt: Option<Instant>,
    pub(super) soft_rt_next_start: Instant,
    /// When it last became busy.
    pub(super) last_idle_backlogged: Instant,
    pub(super) service_from_backlogged: u64,
    pub(super) service_from_wr: u64,
    // Injection while it is idled for (§3.8, `inject.rs`).
    /// Requests of other queues that may be at the device while it is idled for
    /// (`inject_limit`).
    pub(super) inject_limit: u32,
    /// Baseline total service time (arrival to completion) of a request that found nothing in
    /// flight, in nanoseconds; 0 until sampled (`last_serv_time_ns`).
    pub(super) last_serv_time_ns: u64,
    /// When the limit last went down or was reset (`decrease_time_jif`).
    pub(super) decrease_time: Instant,
    /// Order of its latest entry into an active tree: the kernel's `active_list` is walked
    /// from the most recent entry (`list_add` at the head).
    pub(super) active_sequence: u64,
    /// The queue whose completions seem to wake its process (`waker_bfqq`), after three
    /// detections.
    pub(super) waker: Option<QueueIndex>,
    /// Queues this one is the waker of, the latest first (`woken_list`).
    pub(super) woken: Vec<QueueIndex>,
    /// The candidate waker being confirmed (`tentative_waker_bfqq`), its detections so far and
    /// when the first of them was.
    pub(super) tentative_waker: Option<QueueIndex>,
    pub(super) waker_detections: u32,
    pub(super) waker_detection_started: Instant,
    /// When it was created (`creation_time`), for stable merging.
    pub(super) created: Instant,
    /// Other processes' queues were merged into it (`bfq_bfqq_coop`): it belongs to no
    /// single process (`bic` NULL), even once all but one of them exited.
    pub(super) shared: bool,
}

impl BfqQueue {
    /// A new queue (`bfq_init_bfqq`), with its initial per-queue budget.
    pub(super) fn new(
        owner: Owner,
        sync: bool,
        class: IoClass,
        level: u8,
        max_budget: u64,
        now: Instant,
    ) -> BfqQueue {
        BfqQueue {
            owner,
            sync,
            class,
            level,
            new_class: class,
            new_level: level,
            prio_changed: false,
            orig_weight: weight_of(level),
            sort: SortedMap::new(),
            fifo: IdList::new(),
            next_request: None,
            queued: [0, 0],
            dispatched: 0,
            busy: false,
            max_budget,
            budget_timeout: None,
            wait_request: false,
            non_blocking_wait_rq: false,
            fifo_expire: false,
            io_bound: true,
            has_short_ttime: sync && class != IoClass::Idle,
            softrt_update: false,
            just_created: sync,
            in_burst_list: false,
            in_large_burst: false,
            // "Minus infinity from now": the first think time counts from creation.
            last_end_request: now + Duration::from_nanos(1),
            ttime_samples: 0,
            ttime_total_ns: 0,
            ttime_mean_ns: 0,
            // The first request is almost certainly seeky.
            seek_history: 1,
            last_request_pos: Sector(0),
            io_start_time: now,
            tot_idle_time: Duration::ZERO,
            weight_counter: None,
            wr_coeff: 1,
            wr_cur_max_time: Duration::ZERO,
            last_wr_start_finish: now,
            wr_start_at_switch_to_srt: None,
            soft_rt_next_start: now,
            last_idle_backlogged: now,
            service_from_backlogged: 0,
            service_from_wr: 0,
            inject_limit: 0,
            last_serv_time_ns: 0,
            // Since 6.3 (`bfq_init_bfqq`), so that the first sampling waits from creation.
            decrease_time: now,
            active_sequence: 0,
            waker: None,
            woken: Vec::new(),
            created: now,
            shared: false,
            tentative_waker: None,
            waker_detections: 0,
            waker_detection_started: Instant::ZERO,
        }
    }

    /// No queued requests.
    pub(super) fn is_empty(&self) -> bool {
        self.sort.is_empty()
    }

    /// More than 19 of its last 32 requests were seeky (`BFQQ_SEEKY`).
    pub(super) fn is_seeky(&self) -> bool {
        self.seek_history.count_ones() > SEEKY_COUNT
    }

    /// All of its last 32 requests were seeky.
    pub(super) fn is_totally_seeky(&self) -> bool {
        self.seek_history == u32::MAX
    }

    /// Whether its budget timeout has come.
    pub(super) fn budget_timed_out(&self, now: Instant) -> bool {
        self.budget_timeout.is_none_or(|timeout| timeout <= now)
    }

    /// Takes a think-time sample on an arrival to a queue with nothing queued or in flight
    /// (`bfq_update_io_thinktime`): the time since its last completion, capped at twice
    /// `slice_idle`, into a 7/8 decaying mean.
    pub(super) fn insert_update_think_time(&mut self, now: Instant, slice_idle: Duration) {
        if self.dispatched > 0 || self.busy {
            return;
        }
        let elapsed = now
            .saturating_since(self.last_end_request)
            .min(Duration::from_nanos(2 * slice_idle.as_nanos()));
        self.ttime_samples = (7 * self.ttime_samples + 256) / 8;
        self.ttime_total_ns = (7 * self.ttime_total_ns + 256 * elapsed.as_nanos()) / 8;
        self.ttime_mean_ns = (self.ttime_total_ns + 128) / self.ttime_samples;
    }

    /// Re-decides `has_short_ttime` (`bfq_update_has_short_ttime`): short unless its process
    /// is gone or its trusted mean think time exceeds half of `slice_idle`. Returns whether it
    /// changed.
    pub(super) fn insert_update_short_ttime(&mut self, slice_idle: Duration) -> bool {
        if !self.sync || self.class == IoClass::Idle || slice_idle == Duration::ZERO {
            return false;
        }
        let long =
            self.ttime_samples > VALID_SAMPLES && self.ttime_mean_ns > slice_idle.as_nanos() / 2;
        let short = self.owner != Owner::Exited && !long;
        let changed = short != self.has_short_ttime;
        self.has_short_ttime = short;
        changed
    }

    /// Shifts the seekiness of a request at `start` into the history.
    pub(super) fn insert_update_seek(&mut self, start: Sector, sectors: u32, non_rotational: bool) {
        let seeky = is_seeky(self.last_request_pos, start, sectors, non_rotational);
        self.seek_history = (self.seek_history << 1) | u32::from(seeky);
    }

    /// Re-decides the I/O-bound flag on an arrival (`bfq_update_io_intensity`): I/O bound if
    /// idle (nothing queued or in flight) at most a fifth of a window of about 200 ms.
    pub(super) fn insert_update_io_intensity(&mut self, now: Instant) {
        let io_time = now.saturating_since(self.io_start_time);
        if self.is_empty() && self.dispatched == 0 {
            self.tot_idle_time += now.saturating_since(self.last_end_request);
        }
        if self.just_created {
            return;
        }
        self.io_bound = self.tot_idle_time.as_nanos() * 5 <= io_time.as_nanos();
        if io_time > IO_INTENSITY_WINDOW {
            // Halve the window, keeping the same ratio.
            self.io_start_time = Instant::from_nanos(now.as_nanos() - io_time.as_nanos() / 2);
            self.tot_idle_time = Duration::from_nanos(self.tot_idle_time.as_nanos() / 2);
        }
    }
}
