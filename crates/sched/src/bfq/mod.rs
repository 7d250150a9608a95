//! bfq: Budget Fair Queueing — per-process queues granted budgets in sectors, scheduled by
//! B-WF2Q+ in proportion to their weights, with idling for sync queues and weight raising for
//! interactive and soft real-time processes.
//!
//! Follows the blk-mq bfq of Linux 6.12 (`block/bfq-iosched.c`, `block/bfq-wf2q.c`,
//! `block/bfq-iosched.h`, `Documentation/block/bfq-iosched.rst`) as modern-schedulers.md §3
//! describes it; §1 gives the blk-mq frame.
//!
//! Every process gets a **sync queue** for its sync requests (reads, O_DIRECT and O_SYNC
//! writes); async requests go to a queue shared by all processes of the same class and level.
//! A queue's **weight** is `(8 − level) × 10` of its I/O priority (class none counts as
//! best-effort at the level its nice value gives; the idle class is level 7, weight 10), times
//! its weight-raising coefficient. Exactly one queue is **in service** at a time; it holds a
//! **budget** in sectors, and each dispatch charges its request's size (three times that for an
//! async request of an unraised queue when all queues would get equal shares). The queue leaves
//! service when its next request does not fit in what is left of its budget, when its **budget
//! timeout** (`timeout_sync`) passes, when it empties and waiting for it does not pay, when the
//! idle timer fires, or when another queue preempts it. Its next budget grows or shrinks with
//! how it used the last one; a slow (seeky) queue is charged for the time it held the device
//! instead of its sectors, which turns sector fairness into time fairness for it. The next
//! queue is the one **B-WF2Q+** (`wf2q.rs`) picks: classes in strict priority real-time >
//! best-effort > idle, and within a class the eligible queue with the smallest virtual finish
//! time, so that service in sectors follows the weights whatever the device's speed. An
//! idle-class queue is served ahead of the other classes once every 200 ms if it has waited
//! that long, and leaves service after every request while other queues are busy.
//!
//! A sync queue that empties is **idled for** (`slice_idle`, at least 20 ms for a raised
//! queue, 2 ms for a seeky one when nothing asks for more) when idling boosts throughput (a
//! sequential, I/O-bound process with a short think time; any sync queue on a disk that does
//! not queue) or when the service guarantees need it (raised queues, unequal weights, several
//! classes busy, a single busy queue). A queue whose new request arrives within three
//! `slice_idle` of its last completion, after it expired empty with budget left, **recovers
//! its hole**: it continues with the rest of its budget and back-shifted timestamps, and
//! preempts the queue in service if raised at least as much.
//!
//! While the queue in service is empty and idled for, bfq **injects** requests of other queues
//! (`inject.rs`, §3.8): first its process's own async write, then its **waker** (a queue
//! whose completions were three times in a row followed within 4 ms by this queue's requests,
//! this queue having a long think time) or a queue it wakes; else (unless idling is for
//! throughput, or the queue is raised with a short think time and no other raised queue is
//! busy) the most recently activated queue whose next request fits its budget, while fewer
//! requests than the queue's **inject limit** are at the device. The limit adapts to how much
//! the injected requests delay the queue's own: 1.5 × the service time of a request that met
//! an empty device is the bound.
//!
//! With `low_latency`, a default-weight sync queue whose process was idle for 2 s starts an
//! **interactive** weight raising (coefficient 30, for `14000 × 7 s / peak rate`, clamped to
//! 3–25 s, or until it has received 120000 sectors); one that arrives after its previous batch
//! has been served at under 7000 sectors/s is **soft real-time** (coefficient 3000, 300 ms,
//! renewed at each qualifying arrival). Neither raising goes to a queue created in a **large
//! burst** (`burst.rs`): eight or more sync queues each created within 180 ms of the previous
//! one while nothing else was busy (a job of many workers, which wants throughput); a raised
//! queue found in one loses its raising. The **peak rate** of the device is estimated from the
//! dispatches (`peak_rate.rs`); with `max_budget` 0 the device's maximum budget follows it
//! (the sectors the device moves at that rate during one budget timeout).
//!
//! On a non-rotational device that queues ([`Bfq::set_non_rotational`]), a new sync queue
//! created within 180 ms (`bfq_burst_interval`) of the last sync queue created, at the same
//! class and level, is **stably merged** into that queue at once
//! (`bfq_do_or_sched_stable_merge`, since 5.13): the new process's sync requests go to the shared
//! queue, which keeps its raising (stably merged queues may be raised) and is never split
//! again. Two fio jobs started together are one queue in the kernel on such a device: issue
//! 25 found ours idling for one job's raised queue where the kernel served the other job's
//! requests from their shared queue.
//!
//! # How the kernel's calls map onto ours
//!
//! * blk-mq runs the hardware queue after every insertion and completion, and when bfq's idle
//!   timer fires; so does our queue (after every arrival and completion, and at the `until` of
//!   an [`Dispatch::Idle`] answer). The idle timer is that `until`; a timer whose time has come
//!   is run first thing in the next call of any hook, at its own time, which is exact because
//!   nothing else happened in between.
//! * When the queue in service waits for its requests in flight with no timer (it will idle
//!   once they complete), bfq answers [`Dispatch::Throttled`]: a completion ends the wait. With
//!   `strict_guarantees`, nothing is dispatched while anything is at the device, likewise.
//! * `cx.in_flight` is the kernel's `tot_rq_in_driver`. Requests go to the device in the order
//!   bfq hands them out ([`DispatchInsert::Tail`]).
//! * `drain` (a scheduler switch, or a flush that must see everything before it) hands out
//!   every queued request queue by queue, in sector order, as dispatched but uncharged, and
//!   ends the slot in service.
//! * **Shared helpers** (`crate::common`, one copy for the schedulers whose kernels agree): a
//!   queue's class and level come from `common::queue_priority` (6.12's
//!   `bfq_set_next_ioprio_data`, as 2.6.18 cfq: class none is best-effort at the level its
//!   nice value maps to, the idle class is level 7), and the shared async queue of a class and
//!   level is `common::async_queue_slot` (6.12's `async_bfqq[class][level]` plus the idle
//!   one). The request choice inside a queue (`bfq_choose_req`) puts sync before async, then
//!   metadata before data — a step 2.6.18 cfq lacks — then applies the shared seek rule
//!   `common::seek_prefers_first` with the `back_seek_max` and `back_seek_penalty` tunables.
//!
//! # Tunables
//!
//! | name | unit | default | range | meaning |
//! |---|---|---|---|---|
//! | `fifo_expire_sync` | ms | 125 | 1..=2147483647 | FIFO expiry of sync requests, from their insertion |
//! | `fifo_expire_async` | ms | 250 | 1..=2147483647 | FIFO expiry of async requests, from their insertion |
//! | `back_seek_max` | KiB | 16384 | 0..=2147483647 | longest backward seek to a queue's next request |
//! | `back_seek_penalty` | factor | 2 | 1..=2147483647 | cost of a backward seek against a forward one |
//! | `slice_idle` | ms | 8 | 0..=2147483647 | idle wait for a sync queue's next request; 0 never idles |
//! | `slice_idle_us` | µs | 8000 | 0..=2147483647 | the same wait, in microseconds |
//! | `max_budget` | sectors | 0 | 0..=2147483647 | largest budget; 0 tunes it from the peak rate |
//! | `timeout_sync` | ms | 125 | 1..=2147483647 | budget timeout of a queue's slot |
//! | `strict_guarantees` | bool | 0 | 0..=1 | always idle, one request at the device at a time; raises `slice_idle` to 8 ms |
//! | `low_latency` | bool | 1 | 0..=1 | weight raising on; setting 0 ends every raising |
//!
//! # Deviations from Linux
//!
//! Left out, as modern-schedulers.md §3.12 allows:
//!
//! * **Queue merging** except early stable merging: the delayed stable merge the kernel
//!   schedules on a rotational or non-queueing device (done 600 ms after creation if idling
//!   would not boost the queue's throughput), merging of queues doing close I/O
//!   (`bfq_setup_cooperator`; the kernel skips it on a non-rotational device that queues), and
//!   splitting (which never applies to stably merged queues). The process's own async queue
//!   is not injected for a shared queue, as the kernel finds it through `bfqq->bic`, NULL
//!   there. Stable merging uses nanosecond times, not jiffies.
//! * **cgroups** (group entities, `io.bfq.weight`): every queue is a child of the root.
//! * **Multiple actuators**.
//!
//! Also simplified:
//!
//! * **Injection** (`inject.rs`) follows 6.12's `bfq_select_queue` and
//!   `bfq_choose_bfqq_for_injection`, with the device taken as rotational (below), so the rule
//!   that keeps a request of 64 sectors or more from being injected beside anything in flight
//!   on a non-rotational device does not apply. The kernel's `active_list` order (most recent
//!   entry first) is kept as each queue's latest activation or requeue. A process's outstanding
//!   requests (`bic->requests`, which gates the limit's sampling) are those bfq was given and
//!   that have not completed or been merged away. The limit's 10 ms, 100 ms and 1 s intervals
//!   and the "plugged for `slice_idle`" test use nanosecond times, not jiffies. A queue's woken
//!   list is kept latest first, as `hlist_add_head` keeps it; freeing a queue also clears it
//!   as anyone's candidate waker (queue slots are reused here, pointers are not in the kernel).
//!   A limit of 0 without a baseline counts as 1 once idling has lasted `slice_idle`, as
//!   `bfq_choose_bfqq_for_injection` means to; 6.18 adds `bfq_slice_idle` (ns) to
//!   `last_idling_start_jiffies`, so there the test holds only after 8 000 000 jiffies of idling
//!   (found in issue 25; it matters only when the idle wait is longer than `slice_idle`, for
//!   a raised queue).
//! * **Burst detection** (§3.9) has no group check (every queue's parent is the root, so
//!   `burst_parent_entity` never ends a burst) and no "just split" exemption (queues are never
//!   split); a freed queue leaves the burst's size unless it was shared (the kernel's
//!   `bfqq->bic` test). Issue 18: before burst detection existed
//!   here, eight fio jobs started together were all raised and idled for on a fast NVMe device,
//!   where the kernel raises none of them and does not idle.
//! * **Tag-depth limits** (`limit_depth`, §3.11) are not applied: the request pool is shared as
//!   the queue configures it.
//! * The device's **rotational** flag comes from the queue at attach
//!   ([`Scheduler::set_rotational`]: the simulated device's, the live target's sysfs flag, the
//!   conformance capture's), as `blk_queue_nonrot` at `bfq_init_queue`; a `Bfq` built alone
//!   takes the device to be rotational until told ([`Bfq::set_non_rotational`]).
//!   Non-rotational, bfq merges queues created together (above), counts only requests under
//!   64 sectors as seeky (`BFQ_RQ_SEEKY`), does not idle to boost a sequential queue's
//!   throughput on a device that queues (`idling_boosts_thr_without_issues`), and starts from
//!   the non-rotational reference rate and raising duration (`ref_rate[1]`,
//!   `ref_wr_duration[1]`); a flag that changes after attach is not followed (the kernel reads
//!   it once too). Short slots (under 1 ms) are charged `slice_idle`'s default of 8 ms on a
//!   rotational device, `BFQ_MIN_TT` (2 ms) on a non-rotational one. Whether the device
//!   queues (`hw_tag`) is detected as the kernel does, and is "unknown", counting as queueing,
//!   until then.
//! * Times are kept in nanoseconds throughout, with no jiffy rounding (one jiffy = 1 ms where
//!   the kernel adds jiffies: soft real-time's `+ 4` jiffies is 4 ms). The idle class's last
//!   service time starts at the first call bfq sees, not at its creation.
//! * The next queue is looked up when a slot starts, not cached at each activation and
//!   expiration (`next_in_service`); the idle-class timeout is checked at that lookup.
//!   Preemption therefore needs no "next candidate differs from the queue in service" test: a
//!   queue that just became busy is always a candidate other than the one in service.
//! * Charging a slow queue for time uses the `timeout_sync` in force.
//! * `strict_guarantees` and `low_latency` reject values above 1 (the kernel stores 1). Turning
//!   `low_latency` off ends every raising as of bfq's latest event (a tunable store carries no
//!   time).
//! * A sync queue takes the priority of its process's next request (the kernel notices
//!   `ioprio_set` at the next request too); class none is best-effort at the request's level
//!   (a real-time or `SCHED_IDLE` task without an I/O priority is not told apart).
//! * Bio merges need the target to be in the queue the bio's process would use, as in the
//!   kernel; the core's merge rules also require equal sync-ness.
//! * Virtual times are 64-bit without wrap-around; they saturate after about 2^42 sectors of
//!   service at weight 1.

mod burst;
mod inject;
mod peak_rate;
mod queue;
#[cfg(test)]
mod tests;
mod weight_raising;
mod wf2q;

use std::collections::BTreeMap;

use elevator_core::tunable::INT_MAX;
use elevator_core::{
    Bio, Completion, Counter, Ctx, Dispatch, DispatchInsert, Duration, Instant, IoClass, ListLinks,
    MergeKind, MergeLookups, ProcessId, Request, RequestFlags, RequestId, Scheduler, Sector,
    SideTable, TunableError, TunableSpec, Unit,
};

use self::burst::{BURST_INTERVAL, BURST_LEAVE_IDLE, Burst};
use self::peak_rate::{MIN_TT, PeakRate, RATE_SHIFT, REFERENCE_RATE, Sample};
use self::queue::{
    BfqQueue, DEFAULT_WEIGHT, Expiration, Owner, QueueIndex, class_index, is_seeky, weight_of,
};
use self::weight_raising::WrArrival;
use self::wf2q::{CLASSES, Wf2q};
use crate::common::{self, ASYNC_QUEUE_SLOTS, queue_priority};
use crate::sorted::SortedMap;

/// The kernel's name.
pub const NAME: &str = "bfq";

/// One line for `elevator list`.
pub const SUMMARY: &str =
    "per-process budgets in sectors shared by weight (B-WF2Q+), idling and low-latency raising";

/// bfq's tunables, in sysfs order, with the kernel's defaults.
pub const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "fifo_expire_sync",
        unit: Unit::Milliseconds,
        default: 125,
        min: 1,
        max: INT_MAX,
        help: "FIFO expiry of sync requests, from their insertion",
    },
    TunableSpec {
        name: "fifo_expire_async",
        unit: Unit::Milliseconds,
        default: 250,
        min: 1,
        max: INT_MAX,
        help: "FIFO expiry of async requests, from their insertion",
    },
    common::BACK_SEEK_MAX,
    common::BACK_SEEK_PENALTY,
    TunableSpec {
        name: "slice_idle",
        unit: Unit::Milliseconds,
        default: 8,
        min: 0,
        max: INT_MAX,
        help: "idle wait for a sync queue's next request; 0 never idles",
    },
    TunableSpec {
        name: "slice_idle_us",
        unit: Unit::Microseconds,
        default: 8000,
        min: 0,
        max: INT_MAX,
        help: "the idle wait of slice_idle, in microseconds",
    },
    TunableSpec {
        name: "max_budget",
        unit: Unit::Sectors,
        default: 0,
        min: 0,
        max: INT_MAX,
        help: "largest budget of a queue's slot; 0 tunes it from the estimated peak rate",
    },
    TunableSpec {
        name: "timeout_sync",
        unit: Unit::Milliseconds,
        default: 125,
        min: 1,
        max: INT_MAX,
        help: "budget timeout: longest slot of a queue (scaled up while weight-raised)",
    },
    TunableSpec {
        name: "strict_guarantees",
        unit: Unit::Bool,
        default: 0,
        min: 0,
        max: 1,
        help: "always idle and keep at most one request at the device; raises slice_idle to 8 ms",
    },
    TunableSpec {
        name: "low_latency",
        unit: Unit::Bool,
        default: 1,
        min: 0,
        max: 1,
        help: "raise the weight of interactive and soft real-time processes",
    },
];

/// `bfq_default_max_budget`: 8 MiB.
const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
/// Slots assigned (as the decaying count `budgets_assigned`) before auto-tuned budgets count.
const STATS_MIN_BUDGETS: u64 = 194;
/// An async request of an unraised queue costs this many times its size when shares are equal.
const ASYNC_CHARGE_FACTOR: u64 = 3;
/// The idle class is served once it has waited this long (`BFQ_CL_IDLE_TIMEOUT`).
const CLASS_IDLE_TIMEOUT: Duration = Duration::from_millis(200);
/// Short slots are charged at least this much time on a rotational device (the default
/// `slice_idle`, whatever the tunable says); a non-rotational one is charged `MIN_TT`.
const SHORT_SLOT_CHARGE_MS: u64 = 8;
/// Slots longer than this judge slowness by service received rather than seekiness.
const SLOW_JUDGE_SLOT: Duration = Duration::from_millis(20);
/// A raised queue is idled for at least this long.
const WR_MIN_IDLE_WAIT: Duration = Duration::from_millis(20);
/// A request smaller than this (sectors) may be left waiting for merges while idling.
const SMALL_REQUEST_SECTORS: u32 = 32;
/// The coefficient of interactive raising (`bfq_wr_coeff`).
const WR_COEFF: u64 = 30;
/// Soft real-time raising multiplies that by this.
const SOFTRT_WEIGHT_FACTOR: u64 = 100;
/// How long a soft real-time raising lasts (`bfq_wr_rt_max_time`).
const WR_RT_MAX_TIME: Duration = Duration::from_millis(300);
/// Idle this long, a process counts as interactive when it reads again.
const WR_MIN_IDLE_TIME: Duration = Duration::from_millis(2000);
/// An async request this long after the queue's previous arrival raises it.
const WR_MIN_INTER_ARR_ASYNC: Duration = Duration::from_millis(500);
/// Highest rate (sectors/s) of a soft real-time process.
const WR_MAX_SOFTRT_RATE: u64 = 7000;
/// Reference durations of interactive raising at the reference rate (rotational, not).
const REFERENCE_WR_DURATION_MS: [u64; 2] = [7000, 2500];
/// Bounds of the interactive raising duration.
const WR_DURATION_MIN: Duration = Duration::from_secs(3);
const WR_DURATION_MAX: Duration = Duration::from_secs(25);
/// An interactive raising ends once the queue has received this much service.
const MAX_SERVICE_FROM_WR: u64 = 120_000;
/// Soft real-time's next start is at least this long after the queue empties (4 jiffies).
const SOFTRT_MIN_GAP: Duration = Duration::from_millis(4);
/// `hw_tag` is judged from samples with more than this many requests around.
const HW_QUEUE_THRESHOLD: u32 = 3;
/// ... and decided after this many samples.
const HW_QUEUE_SAMPLES: u32 = 32;
/// A hole is recovered if the next request arrives within this many `slice_idle`s.
const HOLE_SLICES: u64 = 3;
/// A sync queue created this long after the last created one is not merged into it
/// (`bfq_activation_stable_merging`).
const STABLE_MERGE_WINDOW: Duration = Duration::from_millis(600);

/// bfq's tunables in their working form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tunables {
    /// FIFO expiry, `[async, sync]`.
    fifo_expire: [Duration; 2],
    back_seek_max_kib: u64,
    back_seek_penalty: u64,
    slice_idle: Duration,
    /// What the user set `max_budget` to (0: auto).
    user_max_budget: u64,
    timeout: Duration,
    strict_guarantees: bool,
    low_latency: bool,
}

impl Default for Tunables {
    fn default() -> Tunables {
        let default = |index: usize| TUNABLES[index].default as u64;
        Tunables {
            fifo_expire: [Duration::from_millis(default(1)), Duration::from_millis(default(0))],
            back_seek_max_kib: default(2),
            back_seek_penalty: default(3),
            slice_idle: Duration::from_millis(default(4)),
            user_max_budget: default(6),
            timeout: Duration::from_millis(default(7)),
            strict_guarantees: default(8) != 0,
            low_latency: default(9) != 0,
        }
    }
}

/// Whether the device queues commands internally, as bfq has decided so far.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum HwTag {
    /// Not decided: counts as queueing.
    Unknown,
    Queueing,
    NotQueueing,
}

/// What becomes of a new sync queue (`bfq_do_or_sched_stable_merge`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum StableMerge {
    /// It is merged into this queue, the last created, at once.
    Into(QueueIndex),
    /// It is created and becomes the last created queue.
    NewIsLast,
    /// It is created; the last created queue stays.
    None,
}

/// A process's queues (its `bfq_io_cq`).
#[derive(Clone, Copy, Debug, Default)]
struct ProcessQueues {
    sync_queue: Option<QueueIndex>,
    /// The async queue its last async request went to.
    async_queue: Option<QueueIndex>,
    /// Its requests inserted and not yet completed or merged away (`bic->requests`).
    requests: u32,
}

/// The state of injection's service-time sampling (`inject.rs`), per device.
#[derive(Clone, Copy, Debug)]
struct InjectState {
    /// Requests were injected since the sample started (`rqs_injected`).
    rqs_injected: bool,
    /// The next dispatch of the queue in service is the sampled request (`wait_dispatch`).
    wait_dispatch: bool,
    /// The sampled request, once dispatched (`waited_rq`).
    waited_rq: Option<RequestId>,
    /// When the sampled request arrived (`last_empty_occupied_ns`).
    last_empty_occupied: Instant,
}

/// What bfq keeps per request.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    queue: QueueIndex,
    /// When it counts as expired in its queue's FIFO.
    fifo_time: Instant,
    /// Arrival order, the tie-break of its sort key.
    sequence: u64,
    /// Handed out and not yet completed.
    out: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    slots: u64,
    budget_exhaustions: u64,
    budget_timeouts: u64,
    idle_expirations: u64,
    no_more_requests: u64,
    preemptions: u64,
    idle_waits: u64,
    hole_recoveries: u64,
    time_charges: u64,
    fifo_expiries: u64,
    wr_interactive_starts: u64,
    wr_soft_rt_starts: u64,
    wr_async_starts: u64,
    wr_ends: u64,
    idle_class_timeouts: u64,
    injections: u64,
    sync_queues_created: u64,
    async_queues_created: u64,
}

/// The bfq scheduler.
#[derive(Debug)]
pub struct Bfq {
    tunables: Tunables,
    queues: Vec<BfqQueue>,
    free_queues: Vec<QueueIndex>,
    wf2q: Wf2q,
    processes: SortedMap<ProcessId, ProcessQueues>,
    async_queues: [Option<QueueIndex>; ASYNC_QUEUE_SLOTS],
    in_service: Option<QueueIndex>,
    /// When the idle timer fires (armed for the queue in service).
    idle_timer: Option<Instant>,
    /// Busy queues per class.
    busy_queues: [u32; CLASSES],
    /// Busy weight-raised queues.
    wr_busy_queues: u32,
    /// Weights of unraised queues with pending I/O, and how many have each
    /// (`queue_weights_tree`).
    weights: BTreeMap<u64, u32>,
    /// Requests in the queues' sort trees.
    queued_count: usize,
    /// Requests at the device at the current call.
    in_driver: u32,
    /// The device's maximum budget (`bfq_max_budget`): the default until the first peak-rate
    /// update (or the user's value).
    max_budget: u64,
    /// Decaying count of slots assigned.
    budgets_assigned: u64,
    last_budget_start: Instant,
    last_idling_start: Instant,
    /// When the idle class was last given its turn; set at the first call.
    class_idle_last_service: Option<Instant>,
    hw_tag: HwTag,
    max_in_driver: u32,
    hw_tag_samples: u32,
    peak: PeakRate,
    /// End of the last dispatched request: where the head is heading.
    last_position: Sector,
    last_completion: Instant,
    slots: SideTable<Slot>,
    fifo_links: ListLinks,
    next_sequence: u64,
    /// Burst detection of new sync queues (`burst.rs`).
    burst: Burst,
    /// Injection's sampling (`inject.rs`).
    inject: InjectState,
    /// The queue of the latest completion (`last_completed_rq_bfqq`), for waker detection.
    last_completed_queue: Option<QueueIndex>,
    /// Entries into the active trees so far (each queue's `active_sequence`).
    activations: u64,
    /// The device is not rotational ([`Bfq::set_non_rotational`]; `blk_queue_nonrot`).
    non_rotational: bool,
    /// The sync queue new queues may be stably merged into (`last_bfqq_created`).
    last_queue_created: Option<QueueIndex>,
    counters: Counters,
}

impl Bfq {
    /// A new, empty bfq with the kernel's defaults.
    pub fn new() -> Bfq {
        Bfq {
            tunables: Tunables::default(),
            queues: Vec::new(),
            free_queues: Vec::new(),
            wf2q: Wf2q::new(),
            processes: SortedMap::new(),
            async_queues: [None; ASYNC_QUEUE_SLOTS],
            in_service: None,
            idle_timer: None,
            busy_queues: [0; CLASSES],
            wr_busy_queues: 0,
            weights: BTreeMap::new(),
            queued_count: 0,
            in_driver: 0,
            max_budget: DEFAULT_MAX_BUDGET,
            budgets_assigned: 0,
            last_budget_start: Instant::ZERO,
            last_idling_start: Instant::ZERO,
            class_idle_last_service: None,
            hw_tag: HwTag::Unknown,
            max_in_driver: 0,
            hw_tag_samples: 0,
            peak: PeakRate::new(),
            last_position: Sector(0),
            last_completion: Instant::ZERO,
            slots: SideTable::new(0),
            fifo_links: ListLinks::new(0),
            next_sequence: 0,
            burst: Burst::default(),
            inject: InjectState::new(),
            last_completed_queue: None,
            activations: 0,
            non_rotational: false,
            last_queue_created: None,
            counters: Counters::default(),
        }
    }

    /// Tells bfq whether the device is non-rotational (the kernel reads the queue's
    /// rotational flag, `blk_queue_nonrot`, when bfq is attached). Without this call the
    /// device is taken to be rotational (see "Deviations"). On a non-rotational device that
    /// queues, a new sync queue created within `bfq_burst_interval` of the last one, at its
    /// priority, is merged into it at once (early stable merging), a request of 64 sectors or
    /// more is never seeky, and a sequential queue is not idled for to boost throughput. The
    /// reference rate and interactive raising duration are the non-rotational ones
    /// (`bfq_init_queue` picks `ref_rate` and `ref_wr_duration` by the flag): the first
    /// peak-rate estimate, if none was measured yet, and the rate-duration product.
    pub fn set_non_rotational(&mut self, non_rotational: bool) {
        self.non_rotational = non_rotational;
        if self.peak.updates == 0 {
            self.peak.rate = REFERENCE_RATE[self.reference_index()] * 2 / 3;
        }
    }

    /// Which of the reference values (`ref_rate`, `ref_wr_duration`) apply: 0 for a
    /// rotational device, 1 for a non-rotational one.
    pub(super) fn reference_index(&self) -> usize {
        usize::from(self.non_rotational)
    }
}

impl Default for Bfq {
    fn default() -> Bfq {
        Bfq::new()
    }
}

impl Scheduler for Bfq {
    fn name(&self) -> &'static str {
        NAME
    }

    fn set_rotational(&mut self, rotational: bool) {
        self.set_non_rotational(!rotational);
    }

    fn insert(&mut self, cx: &Ctx<'_>, id: RequestId) {
        self.begin(cx);
        let now = cx.now;
        let request = &cx.requests[id];
        let sync = request.is_sync();
        let queue = self.insert_find_queue(now, request);
        let process = self.processes.get_mut(&request.process).expect("made by insert_find_queue");
        process.requests += 1;
        let process_requests = process.requests;
        self.insert_handle_burst(now, queue);
        let fifo_time = now + self.tunables.fifo_expire[usize::from(sync)];
        self.slots[id] = Slot { queue, fifo_time, sequence: self.next_sequence, out: false };
        self.next_sequence += 1;
        let slice_idle = self.tunables.slice_idle;
        let entry = &mut self.queues[queue.slot()];
        entry.insert_update_think_time(now, slice_idle);
        if entry.insert_update_short_ttime(slice_idle) {
            self.inject_after_ttime_change(queue, now);
        }
        self.insert_update_seek(now, queue, request);
        if self.queues[queue.slot()].sync && process_requests <= 1 {
            // `bfq_add_request`.
            self.check_waker(queue, now);
            self.add_request_inject(cx, queue);
        }
        self.add_request(cx, queue, id);
        self.queues[queue.slot()].fifo.push_back(&mut self.fifo_links, id);
        self.insert_enqueued(cx, queue, id);
        self.release_forgotten();
    }

    fn dispatch(&mut self, cx: &Ctx<'_>) -> Dispatch {
        self.begin(cx);
        // Each pass either answers or runs a timer due now, which disarms it.
        for _ in 0..3 {
            if self.queued_count == 0 {
                return Dispatch::Empty;
            }
            if self.tunables.strict_guarantees && cx.in_flight > 0 {
                return Dispatch::Throttled;
            }
            if let Some(queue) = self.select_queue(cx) {
                let id = self.dispatch_from_queue(cx, queue);
                self.release_forgotten();
                return Dispatch::Issue(id);
            }
            self.release_forgotten();
            match self.idle_timer {
                Some(at) if at > cx.now => return Dispatch::Idle { until: at },
                Some(at) => self.fire_idle_timer(cx, at),
                None if cx.in_flight > 0 => return Dispatch::Throttled,
                None => break,
            }
        }
        unreachable!("bfq: {} requests queued, nothing in flight, no timer", self.queued_count)
    }

    fn drain(&mut self, cx: &Ctx<'_>, out: &mut Vec<RequestId>) {
        self.begin(cx);
        for index in 0..self.queues.len() {
            let queue = QueueIndex(index as u32);
            while let Some((_, id)) = self.queues[index].sort.first() {
                self.queues[index].dispatched += 1;
                self.remove_request(cx, queue, id);
                self.slots[id].out = true;
                out.push(id);
            }
        }
        if let Some(queue) = self.in_service {
            self.expire(cx, queue, false, Expiration::NoMoreRequests);
        }
        self.idle_timer = None;
        self.release_forgotten();
        assert_eq!(self.queued_count, 0, "bfq: drain left requests queued");
    }

    fn queued(&self) -> usize {
        self.queued_count
    }

    fn dispatch_insert(&self) -> DispatchInsert {
        // blk-mq hands a dispatched request straight to the driver.
        DispatchInsert::Tail
    }

    fn merge_lookups(&self) -> MergeLookups {
        MergeLookups::ALL
    }

    fn allow_merge(&self, _cx: &Ctx<'_>, target: RequestId, bio: &Bio) -> bool {
        // Only into a request of the queue the bio itself would go to.
        let Some(process) = self.processes.get(&bio.process) else { return false };
        let queue = if bio.flags.is_sync() { process.sync_queue } else { process.async_queue };
        queue == Some(self.slots[target].queue)
    }

    fn merged(&mut self, cx: &Ctx<'_>, target: RequestId, kind: MergeKind) {
        let MergeKind::Front { old_start } = kind else { return };
        let slot = self.slots[target];
        let queue = slot.queue;
        let entry = &mut self.queues[queue.slot()];
        let removed = entry.sort.remove(&(old_start, slot.sequence));
        debug_assert_eq!(removed, Some(target), "bfq: sort tree out of step at {old_start:?}");
        entry.sort.insert((cx.requests[target].start, slot.sequence), target);
        let previous = entry.next_request;
        let next = self.choose_request(cx, previous, Some(target), self.last_position);
        self.queues[queue.slot()].next_request = next;
        if next != previous {
            self.updated_next_request(cx, queue);
        }
    }

    fn merge_neighbour(&self, cx: &Ctx<'_>, id: RequestId, kind: MergeKind) -> Option<RequestId> {
        let slot = self.slots[id];
        let key = (cx.requests[id].start, slot.sequence);
        let sort = &self.queues[slot.queue.slot()].sort;
        match kind {
            MergeKind::Back => sort.after(&key),
            MergeKind::Front { .. } => sort.before(&key),
        }
        .map(|(_, neighbour)| neighbour)
    }

    fn requests_merged(&mut self, cx: &Ctx<'_>, kept: RequestId, absorbed: RequestId) {
        let queue = self.slots[kept].queue;
        debug_assert_eq!(queue, self.slots[absorbed].queue, "bfq: fused across queues");
        // The survivor takes the absorbed request's FIFO place if that one is older.
        if self.slots[absorbed].fifo_time < self.slots[kept].fifo_time {
            let fifo = &mut self.queues[queue.slot()].fifo;
            fifo.remove(&mut self.fifo_links, kept);
            fifo.insert_after(&mut self.fifo_links, absorbed, kept);
            self.slots[kept].fifo_time = self.slots[absorbed].fifo_time;
        }
        if self.queues[queue.slot()].next_request == Some(absorbed) {
            self.queues[queue.slot()].next_request = Some(kept);
        }
        self.remove_request(cx, queue, absorbed);
        self.forget_process_request(cx, absorbed);
        self.updated_next_request(cx, queue);
        self.release_forgotten();
    }

    fn complete(&mut self, cx: &Ctx<'_>, done: &Completion) {
        self.begin(cx);
        let now = cx.now;
        let slot = self.slots[done.id];
        debug_assert!(slot.out, "bfq: complete for {:?}, which it never handed out", done.id);
        if !slot.out {
            return;
        }
        self.slots[done.id].out = false;
        let queue = slot.queue;
        self.forget_process_request(cx, done.id);
        // The kernel counts the completing request as still in the driver here.
        if self.inject.waited_rq == Some(done.id) {
            self.update_inject_limit(queue, now, cx.in_flight + 1);
        }
        self.complete_update_hw_tag(cx.in_flight + 1);
        let entry = &mut self.queues[queue.slot()];
        assert!(entry.dispatched > 0, "bfq: {:?} completed twice", done.id);
        entry.dispatched -= 1;
        if entry.dispatched == 0 && !entry.busy {
            // Overloaded: when the queue went idle with nothing in flight (for raising).
            entry.budget_timeout = Some(now);
            self.weights_remove(queue);
        }
        self.queues[queue.slot()].last_end_request = now;
        if self.peak.on_completion(now, self.last_completion) {
            self.peak_rate_updated();
        }
        self.last_completion = now;
        // A shared queue is never anyone's waker (`bfq_bfqq_coop`).
        let shared = self.queues[queue.slot()].shared;
        self.last_completed_queue = if shared { None } else { Some(queue) };
        let entry = &self.queues[queue.slot()];
        if entry.softrt_update
            && entry.dispatched == 0
            && entry.is_empty()
            && entry.wr_coeff != WR_COEFF
        {
            let next_start = self.softrt_next_start(queue, now);
            self.queues[queue.slot()].soft_rt_next_start = next_start;
        }
        if self.in_service == Some(queue) {
            if self.must_idle(queue) {
                // Not expired even if timed out: it idles once its last request is back.
                if self.queues[queue.slot()].dispatched == 0 {
                    self.arm_idle_timer(queue, now);
                }
            } else if self.may_expire_for_budget_timeout(queue, now) {
                self.expire(cx, queue, false, Expiration::BudgetTimeout);
            } else if self.queues[queue.slot()].is_empty()
                && (self.queues[queue.slot()].dispatched == 0 || !self.better_to_idle(queue))
            {
                self.expire(cx, queue, false, Expiration::NoMoreRequests);
            }
        }
        self.release_if_unused(queue);
        self.release_forgotten();
    }

    fn process_exited(&mut self, cx: &Ctx<'_>, process: ProcessId) {
        self.begin(cx);
        let Some(queues) = self.processes.remove(&process) else { return };
        let Some(queue) = queues.sync_queue else { return };
        if let Owner::Merged(processes) = self.queues[queue.slot()].owner
            && processes > 1
        {
            // Other processes still send their requests to the shared queue.
            self.queues[queue.slot()].owner = Owner::Merged(processes - 1);
            return;
        }
        self.queues[queue.slot()].owner = Owner::Exited;
        self.queues[queue.slot()].has_short_ttime = false;
        if self.in_service == Some(queue) {
            // The exit ends the slot without budget feedback (`bfq_exit_bfqq`).
            self.expire_slot(cx, queue, Expiration::BudgetExhausted);
        }
        self.release_if_unused(queue);
        self.release_forgotten();
    }

    fn tunables(&self) -> &'static [TunableSpec] {
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        let spec = elevator_core::tunable::find(TUNABLES, NAME, name)?;
        let tunables = &self.tunables;
        let value = match spec.name {
            "fifo_expire_sync" => tunables.fifo_expire[1].as_millis(),
            "fifo_expire_async" => tunables.fifo_expire[0].as_millis(),
            "back_seek_max" => tunables.back_seek_max_kib,
            "back_seek_penalty" => tunables.back_seek_penalty,
            "slice_idle" => tunables.slice_idle.as_millis(),
            "slice_idle_us" => tunables.slice_idle.as_micros(),
            "max_budget" => tunables.user_max_budget,
            "timeout_sync" => tunables.timeout.as_millis(),
            "strict_guarantees" => u64::from(tunables.strict_guarantees),
            "low_latency" => u64::from(tunables.low_latency),
            other => unreachable!("tunable {other} is in the table but not handled"),
        };
        // Every value came through the range check, so it fits.
        Ok(value as i64)
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let spec = crate::checked(TUNABLES, NAME, name, value)?;
        // The range check makes the value non-negative.
        let value = value as u64;
        match spec.name {
            "fifo_expire_sync" => self.tunables.fifo_expire[1] = Duration::from_millis(value),
            "fifo_expire_async" => self.tunables.fifo_expire[0] = Duration::from_millis(value),
            "back_seek_max" => self.tunables.back_seek_max_kib = value,
            "back_seek_penalty" => self.tunables.back_seek_penalty = value,
            "slice_idle" => self.tunables.slice_idle = Duration::from_millis(value),
            "slice_idle_us" => self.tunables.slice_idle = Duration::from_micros(value),
            "max_budget" => {
                self.tunables.user_max_budget = value;
                self.max_budget = if value == 0 { self.auto_max_budget() } else { value };
            }
            "timeout_sync" => {
                self.tunables.timeout = Duration::from_millis(value);
                if self.tunables.user_max_budget == 0 {
                    self.max_budget = self.auto_max_budget();
                }
            }
            "strict_guarantees" => {
                self.tunables.strict_guarantees = value != 0;
                let floor = Duration::from_millis(TUNABLES[4].default as u64);
                if value != 0 && self.tunables.slice_idle < floor {
                    self.tunables.slice_idle = floor;
                }
            }
            "low_latency" => {
                if value == 0 && self.tunables.low_latency {
                    self.end_all_weight_raising();
                }
                self.tunables.low_latency = value != 0;
            }
            other => unreachable!("tunable {other} is in the table but not handled"),
        }
        Ok(())
    }

    fn counters(&self) -> Vec<Counter> {
        let counters = self.counters;
        vec![
            Counter { name: "slots", value: counters.slots },
            Counter { name: "budget_exhaustions", value: counters.budget_exhaustions },
            Counter { name: "budget_timeouts", value: counters.budget_timeouts },
            Counter { name: "idle_expirations", value: counters.idle_expirations },
            Counter { name: "no_more_requests", value: counters.no_more_requests },
            Counter { name: "preemptions", value: counters.preemptions },
            Counter { name: "idle_waits", value: counters.idle_waits },
            Counter { name: "hole_recoveries", value: counters.hole_recoveries },
            Counter { name: "time_charges", value: counters.time_charges },
            Counter { name: "fifo_expiries", value: counters.fifo_expiries },
            Counter { name: "wr_interactive_starts", value: counters.wr_interactive_starts },
            Counter { name: "wr_soft_rt_starts", value: counters.wr_soft_rt_starts },
            Counter { name: "wr_async_starts", value: counters.wr_async_starts },
            Counter { name: "wr_ends", value: counters.wr_ends },
            Counter { name: "idle_class_timeouts", value: counters.idle_class_timeouts },
            Counter { name: "injections", value: counters.injections },
            Counter { name: "sync_queues_created", value: counters.sync_queues_created },
            Counter { name: "async_queues_created", value: counters.async_queues_created },
            Counter { name: "peak_rate_sectors_per_s", value: self.peak.sectors_per_second() },
            Counter { name: "peak_rate_updates", value: self.peak.updates },
            Counter { name: "max_budget_sectors", value: self.device_max_budget() },
            Counter { name: "hw_tag", value: u64::from(self.hw_tag == HwTag::Queueing) },
        ]
    }

    // ---- Conformance replay hook (issue 25, `crate::conform`) -----------------------------
    // Resynchronisation after a disagreement with the kernel, and a state dump for reports.
    // Not used by the simulator or the live engine. Only a disagreement inside the queue in
    // service is handled: the kernel's request belongs to it, and so does ours if we handed
    // one out; ours goes back into the queue (its charge taken off the queue's service, though
    // not off the class's virtual time, which moved with it), then the queue serves the
    // kernel's request as `__bfq_dispatch_request` would. A request of another queue while the
    // queue in service is empty and kept is injected (ours's own pick, if of that same queue,
    // goes back first). Any other disagreement on which queue is in service is refused, and
    // the replay restarts bfq instead.
    fn dispatch_request(
        &mut self,
        cx: &Ctx<'_>,
        id: RequestId,
        instead_of: Option<RequestId>,
    ) -> bool {
        self.begin(cx);
        if !cx.requests.contains(id) {
            return false;
        }
        let Some(in_service) = self.in_service else { return false };
        let slot = self.slots[id];
        let queue = slot.queue;
        let key = (cx.requests[id].start, slot.sequence);
        if slot.out || self.queues[queue.slot()].sort.get(&key) != Some(id) {
            return false;
        }
        // The kernel's request is of another queue while ours keeps an empty queue in service
        // (idling, or waiting for its requests in flight): the kernel injected it, which ours
        // may do in that state too, so ours injects it (issue 25: with unequal weights the
        // kernel injects one request at a time beside a queue in service for whole budgets,
        // and restarting ours at each of them lost the slot, its budget and its inject limit).
        let injected = queue != in_service;
        if injected && instead_of.is_none_or(|ours| self.slots[ours].queue != queue) {
            let kept = &self.queues[in_service.slot()];
            let may_inject = kept.is_empty() && cx.in_flight < kept.inject_limit.max(1);
            if !may_inject {
                // More at the device than ours would inject beside the queue in service, or
                // that queue has requests: the kernel serves another queue. Ours ends its slot
                // and serves the kernel's queue, keeping every queue's budget, timestamps and
                // statistics (a restart would forget them all).
                if let Some(ours) = instead_of
                    && !self.undo_dispatch(cx, ours)
                {
                    return false;
                }
                self.conform_switch_to(cx, in_service, queue);
                self.queues[queue.slot()].next_request = Some(id);
                let dispatched = self.dispatch_from_queue(cx, queue);
                debug_assert_eq!(dispatched, id);
                self.release_forgotten();
                return true;
            }
        }
        if let Some(ours) = instead_of {
            let ours_slot = self.slots[ours];
            if ours == id
                || !cx.requests.contains(ours)
                || !ours_slot.out
                || ours_slot.queue != queue
            {
                return false;
            }
            self.put_back(cx, ours, queue);
        }
        self.queues[queue.slot()].next_request = Some(id);
        if injected {
            self.inject.rqs_injected = true;
            self.counters.injections += 1;
        }
        let dispatched = self.dispatch_from_queue(cx, queue);
        debug_assert_eq!(dispatched, id);
        self.release_forgotten();
        true
    }
}

impl Bfq {
    /// Conformance replay: takes back ours's own pick `ours` (handed out by the last
    /// `dispatch` call) into its queue, when that queue is the one in service; false (nothing
    /// done) otherwise.
    fn undo_dispatch(&mut self, cx: &Ctx<'_>, ours: RequestId) -> bool {
        let Some(in_service) = self.in_service else { return false };
        if !cx.requests.contains(ours)
            || !self.slots[ours].out
            || self.slots[ours].queue != in_service
        {
            return false;
        }
        self.put_back(cx, ours, in_service);
        // It was the queue's next request when ours handed it out.
        self.queues[in_service.slot()].next_request = Some(ours);
        true
    }

    /// Conformance replay: ours's pick `ours`, handed out from `queue`, goes back into it as
    /// if never dispatched: its charge off the queue's service (not off the class's virtual
    /// time, which moved with it), back into the sector tree and, in arrival order, the FIFO.
    fn put_back(&mut self, cx: &Ctx<'_>, ours: RequestId, queue: QueueIndex) {
        let ours_slot = self.slots[ours];
        let charge = self.charge(cx, ours, queue);
        let entity = self.wf2q.entity_mut(queue.0);
        entity.service = entity.service.saturating_sub(charge);
        let request = &cx.requests[ours];
        let entry = &mut self.queues[queue.slot()];
        if entry.wr_coeff > 1 {
            entry.service_from_wr = entry.service_from_wr.saturating_sub(charge);
        }
        entry.service_from_backlogged = entry.service_from_backlogged.saturating_sub(charge);
        entry.dispatched = entry.dispatched.saturating_sub(1);
        entry.queued[usize::from(request.is_sync())] += 1;
        entry.sort.insert((request.start, ours_slot.sequence), ours);
        let slots = &self.slots;
        let mut order: Vec<RequestId> = entry.fifo.iter(&self.fifo_links).collect();
        let at = order.partition_point(|&other| slots[other].sequence < ours_slot.sequence);
        order.insert(at, ours);
        while entry.fifo.pop_front(&mut self.fifo_links).is_some() {}
        for other in order {
            entry.fifo.push_back(&mut self.fifo_links, other);
        }
        self.slots[ours].out = false;
        self.queued_count += 1;
    }

    /// Conformance replay: the kernel serves `queue` where ours has `active` in service. Ours
    /// expires `active` for the reason its state gives (its next request does not fit its
    /// budget, its budget timed out, it is empty, else preempted) and starts a slot for
    /// `queue` as `bfq_set_in_service_queue` would had B-WF2Q+ picked it.
    fn conform_switch_to(&mut self, cx: &Ctx<'_>, active: QueueIndex, queue: QueueIndex) {
        let entry = &self.queues[active.slot()];
        let reason = match entry.next_request {
            Some(next) if self.charge(cx, next, active) > self.budget_left(active) => {
                Expiration::BudgetExhausted
            }
            _ if entry.budget_timed_out(cx.now) => Expiration::BudgetTimeout,
            None => Expiration::NoMoreRequests,
            Some(_) => Expiration::Preempted,
        };
        self.expire(cx, active, false, reason);
        if self.wf2q.entity(queue.0).membership != wf2q::Membership::Active {
            return;
        }
        self.start_slot(cx.now, queue);
    }

    /// Whether two requests bfq was given went to the same queue (for a conformance report:
    /// with stably merged queues, requests of two processes share one).
    pub fn same_queue(&self, a: RequestId, b: RequestId) -> bool {
        self.slots[a].queue == self.slots[b].queue
    }

    /// bfq's state for a conformance report: the queue in service (owner, class and level,
    /// budget, service received, next request), busy queues, queued requests, the idle timer
    /// (relative to `cx.now`) and the device's maximum budget.
    pub fn conform_state(&self, cx: &Ctx<'_>) -> String {
        use std::fmt::Write as _;
        let mut out = format!(
            "queued={} busy_queues={:?} max_budget={}",
            self.queued_count,
            self.busy_queues,
            self.device_max_budget()
        );
        match self.in_service {
            Some(queue) => {
                let entry = &self.queues[queue.slot()];
                let entity = self.wf2q.entity(queue.0);
                let next = entry.next_request.map(|next| cx.requests[next].start.0);
                let _ = write!(
                    out,
                    "; in_service={:?} {:?}/{} sync={} budget={} service={} queued={} next={next:?} \
                     wr_coeff={} dispatched={} in_driver={} short_ttime={} inject_limit={}",
                    entry.owner,
                    entry.class,
                    entry.level,
                    entry.sync,
                    entity.budget,
                    entity.service,
                    entry.queued[0] + entry.queued[1],
                    entry.wr_coeff,
                    entry.dispatched,
                    cx.in_flight,
                    entry.has_short_ttime,
                    entry.inject_limit,
                );
            }
            None => out.push_str("; in_service=none"),
        }
        if let Some(at) = self.idle_timer {
            let in_ms = (at.as_nanos() as i128 - cx.now.as_nanos() as i128) as f64 / 1e6;
            let _ = write!(out, "; idle_timer_in={in_ms:.3}ms");
        }
        out
    }
}
// ---- end of the conformance replay hook ---------------------------------------------------

/// Insertion (`bfq_insert_request`, `bfq_add_request`, `bfq_rq_enqueued`).
impl Bfq {
    /// Done first in every hook: sizes the side tables, notes the device's load, starts the
    /// idle class's clock, and runs the idle timer if its time has come.
    fn begin(&mut self, cx: &Ctx<'_>) {
        let capacity = cx.requests.capacity();
        self.slots.ensure_capacity(capacity);
        self.fifo_links.ensure_capacity(capacity);
        self.in_driver = cx.in_flight;
        self.class_idle_last_service.get_or_insert(cx.now);
        if let Some(at) = self.idle_timer
            && at <= cx.now
        {
            self.fire_idle_timer(cx, at);
        }
    }

    /// The queue `request` goes to, created on first use; a sync queue takes its process's
    /// new priority (applied at its next activation).
    fn insert_find_queue(&mut self, now: Instant, request: &Request) -> QueueIndex {
        let (class, level) = queue_priority(request.priority);
        let process = *self.processes.get_or_insert_default(request.process);
        if request.is_sync() {
            if let Some(queue) = process.sync_queue {
                let entry = &mut self.queues[queue.slot()];
                if (entry.new_class, entry.new_level) != (class, level) {
                    entry.new_class = class;
                    entry.new_level = level;
                    entry.prio_changed = true;
                }
                return queue;
            }
            self.counters.sync_queues_created += 1;
            let queue = match self.stable_merge_target(now, class, level) {
                StableMerge::Into(target) => {
                    self.stable_merge(target);
                    target
                }
                StableMerge::NewIsLast => {
                    let owner = Owner::Process(request.process);
                    let queue = self.new_queue(owner, true, class, level, now);
                    self.last_queue_created = Some(queue);
                    queue
                }
                StableMerge::None => {
                    self.new_queue(Owner::Process(request.process), true, class, level, now)
                }
            };
            self.processes.get_mut(&request.process).expect("entry made above").sync_queue =
                Some(queue);
            return queue;
        }
        let slot = common::async_queue_slot(class, level);
        let queue = match self.async_queues[slot] {
            Some(queue) => queue,
            None => {
                let queue = self.new_queue(Owner::Shared(slot), false, class, level, now);
                self.async_queues[slot] = Some(queue);
                self.counters.async_queues_created += 1;
                queue
            }
        };
        self.processes.get_mut(&request.process).expect("entry made above").async_queue =
            Some(queue);
        queue
    }

    /// What becomes of a sync queue created now at `class` and `level`
    /// (`bfq_do_or_sched_stable_merge`). The kernel creates the new queue and, merging, frees
    /// it again at once; ours then does not create it.
    fn stable_merge_target(&self, now: Instant, class: IoClass, level: u8) -> StableMerge {
        let Some(last) = self.last_queue_created else { return StableMerge::NewIsLast };
        let entry = &self.queues[last.slot()];
        if entry.created + STABLE_MERGE_WINDOW < now || (entry.class, entry.level) != (class, level)
        {
            return StableMerge::NewIsLast;
        }
        // Within the burst interval the merge is done now on a non-rotational device that
        // queues; otherwise the kernel schedules a delayed merge (not modelled) or, after
        // the burst interval, nothing. `bfq_setup_merge` refuses a queue no process holds.
        let nonrot_with_queueing = self.non_rotational && self.hw_tag != HwTag::NotQueueing;
        let merge = now <= entry.created + BURST_INTERVAL
            && nonrot_with_queueing
            && !matches!(entry.owner, Owner::Exited | Owner::Free);
        if merge { StableMerge::Into(last) } else { StableMerge::None }
    }

    /// A new process's sync queue merged into `target` (`bfq_merge_bfqqs` with a queue just
    /// created): `target` is now shared (its `bic` NULL) and I/O-bound as the new queue was.
    fn stable_merge(&mut self, target: QueueIndex) {
        let entry = &mut self.queues[target.slot()];
        entry.owner = match entry.owner {
            Owner::Merged(processes) => Owner::Merged(processes + 1),
            _ => Owner::Merged(2),
        };
        entry.io_bound = true;
        entry.shared = true;
    }

    fn new_queue(
        &mut self,
        owner: Owner,
        sync: bool,
        class: IoClass,
        level: u8,
        now: Instant,
    ) -> QueueIndex {
        // A new queue starts at two thirds of the device's maximum budget.
        let max_budget = 2 * self.device_max_budget() / 3;
        let entry = BfqQueue::new(owner, sync, class, level, max_budget, now);
        let weight = entry.orig_weight;
        let queue = match self.free_queues.pop() {
            Some(queue) => {
                self.queues[queue.slot()] = entry;
                queue
            }
            None => {
                let queue = QueueIndex(u32::try_from(self.queues.len()).expect("< 2^32 queues"));
                self.queues.push(entry);
                queue
            }
        };
        self.wf2q.install(queue.0, weight, class_index(class));
        queue
    }

    /// Shifts the request's seekiness into the history; a soft real-time queue that turns
    /// totally seeky loses that raising (back to interactive raising if one was interrupted).
    fn insert_update_seek(&mut self, now: Instant, queue: QueueIndex, request: &Request) {
        let entry = &mut self.queues[queue.slot()];
        entry.insert_update_seek(request.start, request.sector_count, self.non_rotational);
        if entry.wr_coeff > 1 && entry.wr_cur_max_time == WR_RT_MAX_TIME && entry.is_totally_seeky()
        {
            let interactive_over =
                entry.wr_start_at_switch_to_srt.is_none_or(|at| at + self.wr_duration() < now);
            if interactive_over {
                self.end_weight_raising(queue, now);
            } else {
                self.switch_back_to_interactive(queue);
            }
        }
    }

    /// Puts `id` in `queue` (`bfq_add_request`): sort tree, next request, and either the
    /// idle-to-busy switch or, for a busy queue, async raising and a budget update.
    fn add_request(&mut self, cx: &Ctx<'_>, queue: QueueIndex, id: RequestId) {
        let now = cx.now;
        let request = &cx.requests[id];
        let sync = request.is_sync();
        let entry = &mut self.queues[queue.slot()];
        let old_wr_coeff = entry.wr_coeff;
        if entry.sync {
            entry.insert_update_io_intensity(now);
        }
        entry.queued[usize::from(sync)] += 1;
        entry.sort.insert((request.start, self.slots[id].sequence), id);
        self.queued_count += 1;
        let previous = entry.next_request;
        let next = self.choose_request(cx, previous, Some(id), self.last_position);
        self.queues[queue.slot()].next_request = next;
        let mut interactive = false;
        if !self.queues[queue.slot()].busy {
            interactive = self.add_idle_busy_switch(cx, queue, old_wr_coeff);
        } else {
            let duration = self.wr_duration();
            let entry = &mut self.queues[queue.slot()];
            if self.tunables.low_latency
                && old_wr_coeff == 1
                && !sync
                && entry.last_wr_start_finish + WR_MIN_INTER_ARR_ASYNC < now
            {
                entry.wr_coeff = WR_COEFF;
                entry.wr_cur_max_time = duration;
                entry.prio_changed = true;
                self.wr_busy_queues += 1;
                self.counters.wr_async_starts += 1;
            }
            if previous != next {
                self.updated_next_request(cx, queue);
            }
        }
        let entry = &mut self.queues[queue.slot()];
        if self.tunables.low_latency && (old_wr_coeff == 1 || entry.wr_coeff == 1 || interactive) {
            entry.last_wr_start_finish = now;
        }
    }

    /// A queue with nothing queued gets a request (`bfq_bfqq_handle_idle_busy_switch`):
    /// decides raising, sets the budget (recovering a hole if it can), activates the queue,
    /// and expires the queue in service if the newcomer should preempt it. Returns whether the
    /// queue counts as interactive.
    fn add_idle_busy_switch(&mut self, cx: &Ctx<'_>, queue: QueueIndex, old_wr_coeff: u64) -> bool {
        let now = cx.now;
        let entry = &self.queues[queue.slot()];
        let idle_for_long = entry.dispatched == 0
            && entry.budget_timeout.is_none_or(|at| at + WR_MIN_IDLE_TIME < now);
        let hole_window = Duration::from_nanos(HOLE_SLICES * self.tunables.slice_idle.as_nanos());
        let arrived_in_time = now <= entry.last_end_request + hole_window;
        let default_weight = weight_of(entry.new_level) == DEFAULT_WEIGHT;
        // A queue created in a large burst is raised neither as interactive nor as soft
        // real-time (`in_burst` of `bfq_bfqq_handle_idle_busy_switch`).
        let in_burst = entry.in_large_burst;
        let soft_rt = WR_MAX_SOFTRT_RATE > 0
            && !entry.is_totally_seeky()
            && !in_burst
            && entry.soft_rt_next_start < now
            && entry.dispatched == 0
            && default_weight;
        let interactive = !in_burst && idle_for_long && default_weight;
        let deserves_wr = self.tunables.low_latency
            && (entry.wr_coeff > 1 || (entry.sync && (interactive || soft_rt)));
        let wants_to_preempt = self.add_budget_for_activation(cx, queue, arrived_in_time);
        // Idle far longer than an interactive queue would be: its part of the burst's work
        // is done, and it is no longer treated as a member (the burst keeps its size).
        let entry = &self.queues[queue.slot()];
        if !entry.just_created
            && idle_for_long
            && entry.budget_timeout.is_none_or(|at| at + BURST_LEAVE_IDLE < now)
        {
            self.leave_burst_list(queue);
            self.queues[queue.slot()].in_large_burst = false;
        }
        self.queues[queue.slot()].just_created = false;
        if self.tunables.low_latency {
            let wr = WrArrival { deserves_wr, interactive, in_burst, soft_rt };
            self.add_weight_raising(now, queue, old_wr_coeff, wr);
            if self.queues[queue.slot()].wr_coeff != old_wr_coeff {
                self.queues[queue.slot()].prio_changed = true;
            }
        }
        let entry = &mut self.queues[queue.slot()];
        entry.last_idle_backlogged = now;
        entry.service_from_backlogged = 0;
        entry.softrt_update = false;
        self.add_busy(queue);
        if let Some(active) = self.in_service {
            let preempt = (wants_to_preempt
                && self.queues[queue.slot()].wr_coeff >= self.queues[active.slot()].wr_coeff)
                || self.higher_class_or_weight(queue, active)
                || !self.better_to_idle(active);
            if preempt {
                self.counters.preemptions += 1;
                self.expire(cx, active, false, Expiration::Preempted);
            }
        }
        interactive
    }

    /// The budget of a queue that becomes busy (`bfq_bfqq_update_budg_for_activation`): the
    /// rest of its last budget if it recovers a hole (true: it may preempt), else a fresh one
    /// that fits its next request.
    fn add_budget_for_activation(
        &mut self,
        cx: &Ctx<'_>,
        queue: QueueIndex,
        arrived_in_time: bool,
    ) -> bool {
        let entry = &self.queues[queue.slot()];
        let left = self.budget_left(queue);
        if entry.non_blocking_wait_rq && arrived_in_time && left > 0 {
            let budget = left.min(entry.max_budget);
            let entity = self.wf2q.entity_mut(queue.0);
            entity.budget = budget;
            entity.service = 0;
            self.counters.hole_recoveries += 1;
            // `non_blocking_wait_rq` stays set: activation back-shifts by it.
            return true;
        }
        let next = entry.next_request.expect("a queue being activated has a request");
        let budget = entry.max_budget.max(self.charge(cx, next, queue));
        let entity = self.wf2q.entity_mut(queue.0);
        entity.service = 0;
        entity.budget = budget;
        self.queues[queue.slot()].non_blocking_wait_rq = false;
        false
    }

    /// After the request is queued (`bfq_rq_enqueued`): if bfq idles for this queue, stop —
    /// unless the request is small, the only one of its direction queued, and idling pays for
    /// throughput, in which case it may grow by merges first — and expire the queue if its
    /// budget timed out.
    fn insert_enqueued(&mut self, cx: &Ctx<'_>, queue: QueueIndex, id: RequestId) {
        let request = &cx.requests[id];
        self.queues[queue.slot()].last_request_pos = request.end();
        if self.in_service != Some(queue) || !self.queues[queue.slot()].wait_request {
            return;
        }
        // `small_req`: a second request of the direction (a plugged batch) ends the wait.
        let alone = self.queues[queue.slot()].queued[usize::from(request.is_sync())] == 1;
        let small = alone && request.sector_count < SMALL_REQUEST_SECTORS;
        let timed_out = self.queues[queue.slot()].budget_timed_out(cx.now);
        if small && self.idling_boosts_throughput(queue) && !timed_out {
            return;
        }
        self.queues[queue.slot()].wait_request = false;
        self.idle_timer = None;
        if timed_out {
            self.expire(cx, queue, false, Expiration::BudgetTimeout);
        }
    }
}

/// Dispatch (`bfq_select_queue`, `bfq_dispatch_rq_from_bfqq`).
impl Bfq {
    /// The queue to dispatch from now, or none while bfq waits (idles, or waits for the
    /// requests in flight of the queue in service).
    fn select_queue(&mut self, cx: &Ctx<'_>) -> Option<QueueIndex> {
        let now = cx.now;
        let mut queue = match self.in_service {
            Some(queue)
                if self.may_expire_for_budget_timeout(queue, now) && !self.must_idle(queue) =>
            {
                self.expire(cx, queue, false, Expiration::BudgetTimeout);
                self.set_in_service(now)?
            }
            Some(queue) => queue,
            None => self.set_in_service(now)?,
        };
        // An exhausted queue gets a budget that fits its next request, so each queue can
        // exhaust at most once before one is served.
        for _ in 0..self.queues.len() + 2 {
            let entry = &self.queues[queue.slot()];
            if let Some(next) = entry.next_request {
                if self.charge(cx, next, queue) > self.budget_left(queue) {
                    self.expire(cx, queue, false, Expiration::BudgetExhausted);
                } else {
                    if entry.wait_request {
                        // A request arrived while idling: stop waiting.
                        self.queues[queue.slot()].wait_request = false;
                        self.idle_timer = None;
                    }
                    return Some(queue);
                }
            } else if entry.wait_request || (entry.dispatched > 0 && self.better_to_idle(queue)) {
                // Kept in service, empty; another queue's request may be injected (§3.8).
                let injected = self.injection_queue(cx, queue);
                if injected.is_some() {
                    self.counters.injections += 1;
                }
                return injected;
            } else {
                self.expire(cx, queue, false, Expiration::NoMoreRequests);
            }
            queue = self.set_in_service(now)?;
        }
        panic!("bfq: queue selection did not settle");
    }

    /// Starts the next slot (`bfq_set_in_service_queue`): the queue B-WF2Q+ picks, its FIFO
    /// unchecked, its budget timeout set.
    fn set_in_service(&mut self, now: Instant) -> Option<QueueIndex> {
        debug_assert!(self.in_service.is_none(), "bfq: a queue is still in service");
        if self.busy_queues.iter().sum::<u32>() == 0 {
            return None;
        }
        let queue = self.lookup_next_queue(now)?;
        self.start_slot(now, queue);
        Some(queue)
    }

    /// Puts `queue`, active in B-WF2Q+, in service from `now`.
    fn start_slot(&mut self, now: Instant, queue: QueueIndex) {
        self.wf2q.set_in_service(queue.0);
        self.in_service = Some(queue);
        self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
        self.counters.slots += 1;
        let entry = &mut self.queues[queue.slot()];
        entry.fifo_expire = false;
        // A soft real-time raising does not run down while its queue waits for service.
        let waited = entry.budget_timeout.is_none_or(|at| at < now);
        if entry.wr_coeff > 1
            && entry.wr_cur_max_time == WR_RT_MAX_TIME
            && entry.last_wr_start_finish < now
            && waited
        {
            match entry.budget_timeout {
                Some(at) if at > entry.last_wr_start_finish => {
                    entry.last_wr_start_finish += now - at;
                }
                _ => entry.last_wr_start_finish = now,
            }
        }
        self.set_budget_timeout(queue, now);
    }

    /// The next queue by class priority, the idle class first if it has waited 200 ms.
    fn lookup_next_queue(&mut self, now: Instant) -> Option<QueueIndex> {
        let mut first_class = 0;
        let last = self.class_idle_last_service.get_or_insert(now);
        if *last + CLASS_IDLE_TIMEOUT < now {
            if self.wf2q.has_active(2) {
                first_class = 2;
                if self.wf2q.has_active(0) || self.wf2q.has_active(1) {
                    self.counters.idle_class_timeouts += 1;
                }
            }
            *last = now;
        }
        (first_class..CLASSES).find_map(|class| self.wf2q.lookup(class, true)).map(QueueIndex)
    }

    /// The slot's budget timeout (`bfq_set_budget_timeout`): `timeout_sync`, times the raising
    /// coefficient for an interactive raised queue.
    fn set_budget_timeout(&mut self, queue: QueueIndex, now: Instant) {
        let entry = &self.queues[queue.slot()];
        let coeff = if entry.wr_cur_max_time == WR_RT_MAX_TIME {
            1
        } else {
            self.wf2q.entity(queue.0).weight / entry.orig_weight
        };
        self.last_budget_start = now;
        let timeout = Duration::from_nanos(self.tunables.timeout.as_nanos() * coeff.max(1));
        self.queues[queue.slot()].budget_timeout = Some(now + timeout);
    }

    /// Hands out the next request of `queue`, charging it; updates the peak rate and the
    /// raising; an idle-class queue leaves service at once if others wait.
    fn dispatch_from_queue(&mut self, cx: &Ctx<'_>, queue: QueueIndex) -> RequestId {
        let id = self.queues[queue.slot()].next_request.expect("a selected queue has a request");
        let charge = self.charge(cx, id, queue);
        self.served(queue, charge);
        self.queues[queue.slot()].dispatched += 1;
        self.dispatch_update_peak_rate(cx, id);
        self.remove_request(cx, queue, id);
        self.slots[id].out = true;
        if self.in_service != Some(queue) {
            return id;
        }
        self.dispatch_inject(id);
        self.dispatch_update_weight_raising(cx.now, queue);
        let busy: u32 = self.busy_queues.iter().sum();
        if busy > 1 && self.queues[queue.slot()].class == IoClass::Idle {
            self.expire(cx, queue, false, Expiration::BudgetExhausted);
        }
        id
    }

    /// Feeds the dispatch to the peak-rate estimator and moves the head position.
    fn dispatch_update_peak_rate(&mut self, cx: &Ctx<'_>, id: RequestId) {
        let request = &cx.requests[id];
        let sample = Sample {
            now: cx.now,
            in_driver: cx.in_flight,
            sectors: u64::from(request.sector_count),
            near: !is_seeky(
                self.last_position,
                request.start,
                request.sector_count,
                self.non_rotational,
            ),
            last_completion: self.last_completion,
        };
        if self.peak.on_dispatch(sample) {
            self.peak_rate_updated();
        }
        self.last_position = request.end();
    }
}

/// Expiration (`bfq_bfqq_expire`) and the idle timer.
impl Bfq {
    /// Ends the slot of `queue` (in service) for `reason`: charges time to a slow queue,
    /// prepares soft real-time detection, feeds the budget back, and requeues or deactivates.
    /// `compensate`: the idle timer fired, so the slot ended when idling started.
    fn expire(&mut self, cx: &Ctx<'_>, queue: QueueIndex, compensate: bool, reason: Expiration) {
        let now = cx.now;
        debug_assert_eq!(self.in_service, Some(queue), "bfq: expiring a queue not in service");
        let (slow, elapsed_ms) = self.expire_is_slow(queue, compensate, now);
        let entity = *self.wf2q.entity(queue.0);
        let left = self.budget_left(queue);
        let entry = &self.queues[queue.slot()];
        if entry.wr_coeff == 1
            && (slow || (reason == Expiration::BudgetTimeout && left >= entity.budget / 3))
        {
            self.expire_charge_time(queue, elapsed_ms);
        }
        let low_latency = self.tunables.low_latency;
        if low_latency && self.queues[queue.slot()].wr_coeff == 1 {
            self.queues[queue.slot()].last_wr_start_finish = now;
        }
        if low_latency && WR_MAX_SOFTRT_RATE > 0 && self.queues[queue.slot()].is_empty() {
            if self.queues[queue.slot()].dispatched == 0 {
                let next_start = self.softrt_next_start(queue, now);
                self.queues[queue.slot()].soft_rt_next_start = next_start;
            } else {
                self.queues[queue.slot()].softrt_update = true;
            }
        }
        match reason {
            Expiration::TooIdle => self.counters.idle_expirations += 1,
            Expiration::BudgetTimeout => self.counters.budget_timeouts += 1,
            Expiration::BudgetExhausted => self.counters.budget_exhaustions += 1,
            Expiration::NoMoreRequests => self.counters.no_more_requests += 1,
            Expiration::Preempted => {}
        }
        // No total service time is to be measured once the slot ends.
        self.expire_inject();
        self.expire_recalc_budget(cx, queue, reason);
        self.expire_slot(cx, queue, reason);
        let keeps_service = !self.queues[queue.slot()].busy
            && !matches!(reason, Expiration::BudgetTimeout | Expiration::BudgetExhausted);
        if keeps_service {
            // If its next request comes in time it continues with this budget (a hole).
            self.queues[queue.slot()].non_blocking_wait_rq = true;
        } else {
            self.wf2q.entity_mut(queue.0).service = 0;
        }
        self.release_if_unused(queue);
    }

    /// Takes `queue` out of service (`__bfq_bfqq_expire`): deactivated if empty (unless a
    /// preempted queue that must be idled for), requeued otherwise.
    fn expire_slot(&mut self, cx: &Ctx<'_>, queue: QueueIndex, reason: Expiration) {
        let entry = &self.queues[queue.slot()];
        let keep = reason == Expiration::Preempted && self.idling_needed_for_guarantees(queue);
        if entry.is_empty() && !keep {
            if entry.dispatched == 0 {
                self.queues[queue.slot()].budget_timeout = Some(cx.now);
            }
            self.del_busy(queue);
        } else {
            self.requeue_queue(queue);
        }
        self.queues[queue.slot()].wait_request = false;
        self.idle_timer = None;
        self.in_service = None;
        self.wf2q.reset_in_service();
    }

    /// Whether the slot was slow (`bfq_bfqq_is_slow`), and how long it lasted in ms for time
    /// charging. Only sync queues can be slow: in a short slot if seeky, in one over 20 ms if
    /// it moved less than half the device's maximum budget.
    fn expire_is_slow(&self, queue: QueueIndex, compensate: bool, now: Instant) -> (bool, u64) {
        let entry = &self.queues[queue.slot()];
        if !entry.sync {
            return (false, 0);
        }
        let mut slow = entry.is_seeky();
        let end = if compensate { self.last_idling_start } else { now };
        let elapsed = end.saturating_since(self.last_budget_start);
        if elapsed < Duration::from_millis(1) {
            // Too short to measure: a non-rotational device is charged what idling for a
            // seeky queue would have cost (`BFQ_MIN_TT`, 2 ms), a rotational one a seek
            // (`bfq_slice_idle`'s default) — `bfq_bfqq_is_slow`. Issue 25: charged 8 ms on a
            // RAM-backed loop device, slow queues paid four times the kernel's price.
            let charge_ms =
                if self.non_rotational { MIN_TT.as_millis() } else { SHORT_SLOT_CHARGE_MS };
            return (slow, charge_ms);
        }
        if elapsed > SLOW_JUDGE_SLOT {
            slow = self.wf2q.entity(queue.0).service < self.max_budget / 2;
        }
        (slow, elapsed.as_millis())
    }

    /// Charges `queue` as if it had been served at the peak rate for the time it held the
    /// device (`bfq_bfqq_charge_time`).
    fn expire_charge_time(&mut self, queue: QueueIndex, elapsed_ms: u64) {
        let timeout_ms = self.tunables.timeout.as_millis().max(1);
        let for_time = self.max_budget * elapsed_ms.min(timeout_ms) / timeout_ms;
        let entity = *self.wf2q.entity(queue.0);
        let total = for_time.max(entity.service);
        if total > entity.budget {
            self.wf2q.entity_mut(queue.0).budget = total;
        }
        self.counters.time_charges += 1;
        self.served(queue, total - entity.service);
    }

    /// Budget feedback (`__bfq_bfqq_recalc_budget`).
    fn expire_recalc_budget(&mut self, cx: &Ctx<'_>, queue: QueueIndex, reason: Expiration) {
        let min_budget = self.min_budget();
        let device_max = self.max_budget;
        let entry = &self.queues[queue.slot()];
        let mut budget = if entry.wr_coeff == 1 { entry.max_budget } else { 2 * min_budget };
        if entry.sync && entry.wr_coeff == 1 {
            budget = match reason {
                Expiration::TooIdle if entry.dispatched > 0 => (2 * budget).min(device_max),
                Expiration::TooIdle if budget > 5 * min_budget => budget - 4 * min_budget,
                Expiration::TooIdle => min_budget,
                Expiration::BudgetTimeout => (2 * budget).min(device_max),
                Expiration::BudgetExhausted => (4 * budget).min(device_max),
                Expiration::NoMoreRequests => self.wf2q.entity(queue.0).service.max(min_budget),
                Expiration::Preempted => return,
            };
        } else if !entry.sync {
            budget = device_max;
        }
        let auto_tuned =
            self.budgets_assigned >= STATS_MIN_BUDGETS && self.tunables.user_max_budget == 0;
        let budget = if auto_tuned { budget.min(device_max) } else { budget };
        self.queues[queue.slot()].max_budget = budget;
        if let Some(next) = self.queues[queue.slot()].next_request {
            let charge = self.charge(cx, next, queue);
            self.wf2q.entity_mut(queue.0).budget = budget.max(charge);
        }
    }

    /// Arms the idle timer for the queue in service (`bfq_arm_slice_timer`).
    fn arm_idle_timer(&mut self, queue: QueueIndex, now: Instant) {
        let entry = &self.queues[queue.slot()];
        let mut wait = self.tunables.slice_idle;
        if entry.is_seeky() && entry.wr_coeff == 1 && !self.asymmetric(Some(queue)) {
            wait = wait.min(MIN_TT);
        } else if entry.wr_coeff > 1 {
            wait = wait.max(WR_MIN_IDLE_WAIT);
        }
        self.queues[queue.slot()].wait_request = true;
        self.last_idling_start = now;
        self.idle_timer = Some(now + wait);
        self.counters.idle_waits += 1;
    }

    /// The idle timer, run at its own time `at` (`bfq_idle_slice_timer_body`): the queue in
    /// service leaves for budget timeout, or as too idle if still empty.
    fn fire_idle_timer(&mut self, cx: &Ctx<'_>, at: Instant) {
        self.idle_timer = None;
        let Some(queue) = self.in_service else { return };
        self.queues[queue.slot()].wait_request = false;
        let at_cx = Ctx { now: at, ..*cx };
        if self.queues[queue.slot()].budget_timed_out(at) {
            self.expire(&at_cx, queue, true, Expiration::BudgetTimeout);
        } else if self.queues[queue.slot()].queued == [0, 0] {
            self.expire(&at_cx, queue, true, Expiration::TooIdle);
        }
    }
}

/// Queue bookkeeping shared by the paths above.
impl Bfq {
    /// Takes `id` out of `queue` (`bfq_remove_request`): a new next request (possibly the
    /// expired FIFO head) and budget; an emptied queue not in service stops being busy.
    fn remove_request(&mut self, cx: &Ctx<'_>, queue: QueueIndex, id: RequestId) {
        let request = &cx.requests[id];
        let key = (request.start, self.slots[id].sequence);
        if self.queues[queue.slot()].next_request == Some(id) {
            let next = self.find_next(cx, queue, id);
            self.queues[queue.slot()].next_request = next;
            self.updated_next_request(cx, queue);
        }
        let entry = &mut self.queues[queue.slot()];
        if self.fifo_links.is_linked(id) {
            entry.fifo.remove(&mut self.fifo_links, id);
        }
        entry.queued[usize::from(request.is_sync())] -= 1;
        let removed = entry.sort.remove(&key);
        debug_assert_eq!(removed, Some(id), "bfq: sort tree out of step at {key:?}");
        self.queued_count -= 1;
        if entry.is_empty() {
            entry.next_request = None;
            if entry.busy && self.in_service != Some(queue) {
                self.del_busy(queue);
                let entity = self.wf2q.entity_mut(queue.0);
                entity.budget = 0;
                entity.service = 0;
            }
        }
    }

    /// The request to serve after `last` (`bfq_find_next_rq`): the expired FIFO head if this
    /// is the slot's first look at the FIFO, else the better of `last`'s sector successor
    /// (wrapping to the lowest) and predecessor, seen from `last`'s start.
    fn find_next(&mut self, cx: &Ctx<'_>, queue: QueueIndex, last: RequestId) -> Option<RequestId> {
        if let Some(expired) = self.find_next_expired_fifo(cx.now, queue, last) {
            return Some(expired);
        }
        let start = cx.requests[last].start;
        let key = (start, self.slots[last].sequence);
        let sort = &self.queues[queue.slot()].sort;
        let (predecessor, successor) = sort.neighbours(&key);
        let successor =
            successor.or_else(|| sort.first().filter(|&(first, _)| first != key)).map(|(_, id)| id);
        let predecessor = predecessor.map(|(_, id)| id);
        self.choose_request(cx, successor, predecessor, start)
    }

    /// The FIFO head if it has expired, looked at once per slot (`bfq_check_fifo`).
    fn find_next_expired_fifo(
        &mut self,
        now: Instant,
        queue: QueueIndex,
        last: RequestId,
    ) -> Option<RequestId> {
        let entry = &mut self.queues[queue.slot()];
        if entry.fifo_expire {
            return None;
        }
        entry.fifo_expire = true;
        let head = entry.fifo.front()?;
        if head == last || now < self.slots[head].fifo_time {
            return None;
        }
        self.counters.fifo_expiries += 1;
        Some(head)
    }

    /// Which of two candidates to serve from position `last` (`bfq_choose_req`): sync before
    /// async, metadata before data, then by seek cost with backward seeks up to
    /// `back_seek_max` costing `back_seek_penalty` times their length.
    fn choose_request(
        &self,
        cx: &Ctx<'_>,
        first: Option<RequestId>,
        second: Option<RequestId>,
        last: Sector,
    ) -> Option<RequestId> {
        common::choose_request(first, second, |first, second| {
            let (a, b) = (&cx.requests[first], &cx.requests[second]);
            if a.is_sync() != b.is_sync() {
                return a.is_sync();
            }
            let meta = |request: &Request| request.flags.contains(RequestFlags::META);
            if meta(a) != meta(b) {
                return meta(a);
            }
            common::seek_prefers_first(
                last,
                self.tunables.back_seek_max_kib * 2,
                self.tunables.back_seek_penalty,
                a.start,
                b.start,
            )
        })
    }

    /// The next request of a queue not in service changed: its budget must fit it
    /// (`bfq_updated_next_req`), which repositions it in B-WF2Q+.
    fn updated_next_request(&mut self, cx: &Ctx<'_>, queue: QueueIndex) {
        let Some(next) = self.queues[queue.slot()].next_request else { return };
        if self.in_service == Some(queue)
            || self.wf2q.entity(queue.0).membership != wf2q::Membership::Active
        {
            return;
        }
        let entity = *self.wf2q.entity(queue.0);
        let budget = self.queues[queue.slot()]
            .max_budget
            .max(self.charge(cx, next, queue))
            .max(entity.service);
        if budget != entity.budget {
            self.wf2q.entity_mut(queue.0).budget = budget;
            self.requeue_queue(queue);
        }
    }

    /// Makes `queue` busy (`bfq_add_bfqq_busy`): activated in B-WF2Q+ (back-shifted if it
    /// recovers a hole), counted per class, among raised queues or by weight.
    fn add_busy(&mut self, queue: QueueIndex) {
        let update = self.apply_priority_change(queue, true);
        let entry = &self.queues[queue.slot()];
        self.wf2q.activate(queue.0, entry.non_blocking_wait_rq, update, entry.wr_coeff);
        self.activations += 1;
        let entry = &mut self.queues[queue.slot()];
        entry.active_sequence = self.activations;
        entry.non_blocking_wait_rq = false;
        entry.busy = true;
        self.busy_queues[class_index(entry.class)] += 1;
        if entry.dispatched == 0 && entry.wr_coeff == 1 {
            let weight = self.wf2q.entity(queue.0).weight;
            self.weights_add(queue, weight);
        }
        if self.queues[queue.slot()].wr_coeff > 1 {
            self.wr_busy_queues += 1;
        }
    }

    /// `queue` stops being busy (`bfq_del_bfqq_busy`): deactivated into the idle tree.
    fn del_busy(&mut self, queue: QueueIndex) {
        let entry = &mut self.queues[queue.slot()];
        entry.busy = false;
        self.busy_queues[class_index(entry.class)] -= 1;
        if entry.wr_coeff > 1 {
            self.wr_busy_queues -= 1;
        }
        self.wf2q.deactivate(queue.0, true);
        if self.queues[queue.slot()].dispatched == 0 {
            self.weights_remove(queue);
        }
    }

    /// Requeues `queue` in B-WF2Q+ (at expiration, or after its budget changed), applying a
    /// pending priority change.
    fn requeue_queue(&mut self, queue: QueueIndex) {
        let update = self.apply_priority_change(queue, true);
        let wr_coeff = self.queues[queue.slot()].wr_coeff;
        self.wf2q.requeue(queue.0, update, wr_coeff);
        self.activations += 1;
        self.queues[queue.slot()].active_sequence = self.activations;
    }

    /// One request of its process fewer outstanding (`bfq_finish_request`).
    fn forget_process_request(&mut self, cx: &Ctx<'_>, id: RequestId) {
        if let Some(process) = self.processes.get_mut(&cx.requests[id].process) {
            process.requests = process.requests.saturating_sub(1);
        }
    }

    /// Applies a pending priority or raising change (`__bfq_entity_update_weight_prio`): the
    /// new level's weight times the raising coefficient, and (with `update_class`) the new
    /// class. Returns the entity's new weight and class for B-WF2Q+.
    fn apply_priority_change(
        &mut self,
        queue: QueueIndex,
        update_class: bool,
    ) -> Option<(u64, usize)> {
        let entry = &mut self.queues[queue.slot()];
        if !entry.prio_changed {
            return None;
        }
        entry.level = entry.new_level;
        entry.orig_weight = weight_of(entry.level);
        if update_class && entry.class != entry.new_class {
            // A busy queue moves between the per-class counts with its class.
            if entry.busy {
                self.busy_queues[class_index(entry.class)] -= 1;
                self.busy_queues[class_index(entry.new_class)] += 1;
            }
            entry.class = entry.new_class;
        }
        if entry.class == entry.new_class {
            entry.prio_changed = false;
        }
        let weight = entry.orig_weight * entry.wr_coeff;
        let class = class_index(entry.class);
        if weight != self.wf2q.entity(queue.0).weight {
            // The entity takes `weight` only when the caller hands it to B-WF2Q+; count the
            // queue under it now, as the kernel stores the weight before counting
            // (issue 27: counted under the old, raised weight, the queue looked asymmetric
            // for as long as it stayed backlogged and starved an equal reader).
            self.weights_remove(queue);
            if self.queues[queue.slot()].wr_coeff == 1 {
                self.weights_add(queue, weight);
            }
        }
        Some((weight, class))
    }

    /// Charges `sectors` of service to `queue`.
    fn served(&mut self, queue: QueueIndex, sectors: u64) {
        let entry = &mut self.queues[queue.slot()];
        if entry.wr_coeff > 1 {
            entry.service_from_wr += sectors;
        }
        entry.service_from_backlogged += sectors;
        self.wf2q.served(queue.0, sectors);
    }

    /// What dispatching `id` costs `queue` (`bfq_serv_to_charge`).
    fn charge(&self, cx: &Ctx<'_>, id: RequestId, queue: QueueIndex) -> u64 {
        let sectors = u64::from(cx.requests[id].sector_count);
        let entry = &self.queues[queue.slot()];
        if entry.sync || entry.wr_coeff > 1 || self.asymmetric(Some(queue)) {
            sectors
        } else {
            sectors * ASYNC_CHARGE_FACTOR
        }
    }

    fn budget_left(&self, queue: QueueIndex) -> u64 {
        let entity = self.wf2q.entity(queue.0);
        entity.budget.saturating_sub(entity.service)
    }

    /// Counts `queue` under `weight` (`bfq_weights_tree_add`), unless it is counted already.
    fn weights_add(&mut self, queue: QueueIndex, weight: u64) {
        if self.queues[queue.slot()].weight_counter.is_some() {
            return;
        }
        *self.weights.entry(weight).or_default() += 1;
        self.queues[queue.slot()].weight_counter = Some(weight);
    }

    fn weights_remove(&mut self, queue: QueueIndex) {
        let Some(weight) = self.queues[queue.slot()].weight_counter.take() else { return };
        let count = self.weights.get_mut(&weight).expect("bfq: weight counted");
        *count -= 1;
        if *count == 0 {
            self.weights.remove(&weight);
        }
    }

    /// Frees the sync queue of an exited process once nothing refers to it.
    fn release_if_unused(&mut self, queue: QueueIndex) {
        let entry = &self.queues[queue.slot()];
        if entry.owner != Owner::Exited
            || entry.busy
            || !entry.is_empty()
            || entry.dispatched > 0
            || self.in_service == Some(queue)
            || self.wf2q.entity(queue.0).counted
        {
            return;
        }
        debug_assert!(entry.weight_counter.is_none(), "bfq: freeing a counted queue");
        self.free_leaves_burst(queue);
        self.free_forgets_wakers(queue);
        if self.last_queue_created == Some(queue) {
            self.last_queue_created = None;
        }
        self.queues[queue.slot()].owner = Owner::Free;
        self.free_queues.push(queue);
    }

    /// Frees the queues whose entities B-WF2Q+ forgot, if they are unused.
    fn release_forgotten(&mut self) {
        while let Some(index) = self.wf2q.forgotten.pop() {
            self.release_if_unused(QueueIndex(index));
        }
    }
}

/// Idling, symmetry, preemption and weight-raising decisions.
impl Bfq {
    /// Whether to keep `queue` in service waiting for its next request (`bfq_better_to_idle`).
    fn better_to_idle(&self, queue: QueueIndex) -> bool {
        let entry = &self.queues[queue.slot()];
        if entry.owner == Owner::Exited {
            return false;
        }
        if self.tunables.strict_guarantees {
            return true;
        }
        if self.tunables.slice_idle == Duration::ZERO || !entry.sync || entry.class == IoClass::Idle
        {
            return false;
        }
        self.idling_boosts_throughput(queue) || self.idling_needed_for_guarantees(queue)
    }

    /// Idling pays for throughput: on a disk that does not queue, or for a sequential,
    /// I/O-bound queue with a short think time — unless raised queues are busy
    /// (`idling_boosts_thr_without_issues`).
    fn idling_boosts_throughput(&self, queue: QueueIndex) -> bool {
        let entry = &self.queues[queue.slot()];
        if entry.owner == Owner::Exited {
            return false;
        }
        // A device that queues (or may: `hw_tag` undecided) serves a sequential reader's next
        // request as well with others' requests beside it only if it is non-rotational.
        let not_queueing = self.hw_tag == HwTag::NotQueueing;
        let rotational_without_queueing = !self.non_rotational && not_queueing;
        let sequential_and_io_bound = !entry.is_seeky() && entry.io_bound && entry.has_short_ttime;
        let boosts = rotational_without_queueing
            || ((!self.non_rotational || not_queueing) && sequential_and_io_bound);
        boosts && self.wr_busy_queues == 0
    }

    /// Idling is needed for `queue` to get its share (`idling_needed_for_service_guarantees`).
    fn idling_needed_for_guarantees(&self, queue: QueueIndex) -> bool {
        let entry = &self.queues[queue.slot()];
        if entry.owner == Owner::Exited {
            return false;
        }
        let busy: u32 = self.busy_queues.iter().sum();
        (entry.wr_coeff > 1
            && (self.wr_busy_queues < busy || self.in_driver >= entry.dispatched + 4))
            || self.asymmetric(Some(queue))
            || busy == 1
    }

    /// The slot's budget timeout has passed and the queue may leave for it: it is not idled
    /// for, or has at least a third of its budget left (`bfq_may_expire_for_budg_timeout`).
    fn may_expire_for_budget_timeout(&self, queue: QueueIndex, now: Instant) -> bool {
        let entry = &self.queues[queue.slot()];
        let budget = self.wf2q.entity(queue.0).budget;
        (!entry.wait_request || self.budget_left(queue) >= budget / 3)
            && entry.budget_timed_out(now)
    }

    /// The queue is empty and must be idled for.
    fn must_idle(&self, queue: QueueIndex) -> bool {
        self.queues[queue.slot()].is_empty() && self.better_to_idle(queue)
    }

    /// Shares would not be equal (`bfq_asymmetric_scenario`): unraised queues with pending I/O
    /// have different weights and `queue` is not among the lightest, or several classes are
    /// busy.
    fn asymmetric(&self, queue: Option<QueueIndex>) -> bool {
        let smallest = queue.is_some_and(|queue| {
            let counter = self.queues[queue.slot()].weight_counter;
            counter.is_some() && counter == self.weights.keys().next().copied()
        });
        let varied_weights = !smallest && self.weights.len() >= 2;
        let classes_busy = self.busy_queues.iter().filter(|&&count| count > 0).count() >= 2;
        varied_weights || classes_busy
    }

    /// `queue` is in a better class than `active`, or weighs more.
    fn higher_class_or_weight(&self, queue: QueueIndex, active: QueueIndex) -> bool {
        let (new, old) = (&self.queues[queue.slot()], &self.queues[active.slot()]);
        if class_index(new.class) < class_index(old.class) {
            return true;
        }
        self.wf2q.entity(queue.0).weight > self.wf2q.entity(active.0).weight
    }

    /// The device's maximum budget as budgets see it: the default until enough slots were
    /// assigned for the auto-tuned value to count (`bfq_max_budget`).
    fn device_max_budget(&self) -> u64 {
        if self.budgets_assigned < STATS_MIN_BUDGETS { DEFAULT_MAX_BUDGET } else { self.max_budget }
    }

    /// The smallest budget: a 32nd of the maximum (`bfq_min_budget`).
    fn min_budget(&self) -> u64 {
        self.device_max_budget() / 32
    }

    /// The sectors the device moves at its estimated peak rate in one budget timeout
    /// (`bfq_calc_max_budget`).
    fn auto_max_budget(&self) -> u64 {
        let micros = u128::from(self.tunables.timeout.as_micros());
        ((u128::from(self.peak.rate) * micros) >> RATE_SHIFT) as u64
    }

    /// The estimate changed: an auto-tuned maximum budget follows.
    fn peak_rate_updated(&mut self) {
        if self.tunables.user_max_budget == 0 {
            self.max_budget = self.auto_max_budget();
        }
    }

    /// Decides whether the device queues commands, from samples taken at completions while
    /// enough requests are around (`bfq_update_hw_tag`).
    fn complete_update_hw_tag(&mut self, in_driver: u32) {
        self.max_in_driver = self.max_in_driver.max(in_driver);
        if self.hw_tag == HwTag::Queueing {
            return;
        }
        let queued = u32::try_from(self.queued_count).unwrap_or(u32::MAX);
        if in_driver.saturating_add(queued) <= HW_QUEUE_THRESHOLD {
            return;
        }
        // A queue in service that idles may keep the device underfed: not a valid sample.
        if let Some(queue) = self.in_service {
            let entry = &self.queues[queue.slot()];
            let own = entry.dispatched + entry.queued[0] + entry.queued[1];
            if entry.has_short_ttime && own < HW_QUEUE_THRESHOLD && in_driver < HW_QUEUE_THRESHOLD {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = if self.max_in_driver > HW_QUEUE_THRESHOLD {
            HwTag::Queueing
        } else {
            HwTag::NotQueueing
        };
        self.max_in_driver = 0;
        self.hw_tag_samples = 0;
    }
}
