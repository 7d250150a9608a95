//! kyber: per-domain token limits, resized to keep read and write latency near their targets.
//!
//! Follows Linux 6.17 (mainline development) `block/kyber-iosched.c`, with 6.18.26's
//! `kyber_limit_depth` (every non-read limited; see "Deviations"), and
//! `Documentation/block/kyber-iosched.rst`, as `specs/modern-schedulers.md` §4 restates them.
//!
//! Every request belongs to one of four **domains** by its operation: reads, writes (synchronous
//! and asynchronous alike, since 4.20), discards, and everything else. A request may only go to
//! the device while it holds a **token** of its domain, and it keeps the token until it
//! completes; how many tokens a domain has (its *depth*) is what kyber tunes. A domain starts at
//! its maximum and is resized within `1..=maximum`:
//!
//! | domain | operations | maximum depth | batch | latency target |
//! |---|---|---|---|---|
//! | read | reads | 256 | 16 | `read_lat_nsec` (2 ms) |
//! | write | writes | 128 | 8 | `write_lat_nsec` (10 ms) |
//! | discard | discards | 64 | 1 | 5 s (fixed) |
//! | other | flushes and anything else | 16 | 1 | none: never resized |
//!
//! **Queueing.** A new request is appended to its domain's staging list on the CPU it was
//! inserted from ([`Request::cpu`](elevator_core::Request::cpu): the kernel's per-CPU
//! `kyber_ctx_queue`, one per software queue, `kyber_insert_requests`), where bios can still
//! merge into it. Dispatch takes from the domain's dispatch list; when that is empty and a
//! staging list is not, kyber first takes a token and only then moves every CPU's staging list
//! over, CPU 0's first (`kyber_flush_busy_kcqs` walks the busy software queues by index with
//! `sbitmap_for_each_set`), so requests stay mergeable for as long as no token is free, and
//! the dispatch list holds each CPU's requests together, not in arrival order across CPUs
//! (modern-vs-kernel.md §2 row 5).
//!
//! **Dispatch** serves domains in turn: the current domain keeps going for up to its batch size
//! in requests; when the batch is used up, or the domain has nothing it may send, the batch count
//! restarts and the domains are tried round robin from the next one, wrapping back to the
//! current one last. A domain with queued requests but no free token is skipped, and waits on
//! the domain's token wait queue. When no domain can send anything although requests are
//! queued, every token they need is held by a request at the device, and dispatch answers
//! [`Dispatch::Throttled`]. A waiting domain wakes the queue once `wake_batch` =
//! clamp(depth / 8, 1, 8) of its tokens have been freed (`sbitmap_queue_wake_up` →
//! `kyber_domain_wake`, [`Scheduler::completion_reruns`]); on a blk-mq queue
//! ([`elevator_core::BlkMqQueue`]) that, an insertion or the one-jiffy delayed run are what ask
//! dispatch again (modern-vs-kernel.md row 2), where a legacy queue asks after every
//! completion.
//!
//! **Measurement.** Each completed read, write or discard adds two samples to its domain's
//! histograms: the **total latency** (request creation to completion) and the **device latency**
//! (issue to completion). A histogram has 8 buckets a quarter of the domain's target wide:
//! bucket `min((latency − 1) / (target / 4), 7)`, so buckets 0–3 are within the target and 4–7
//! beyond it (7: more than 1.75 × the target). Each completion also arms a timer to fire at most
//! 100 ms later (`HZ/10`), pulling an armed timer earlier but never pushing it later.
//!
//! **Adjustment**, when the timer fires. A histogram is evaluated only once it holds 500 samples
//! or a second has passed since its domain's window was first examined; evaluating it gives the
//! bucket where a percentile falls and empties the histogram. First, the device is judged
//! *congested* if any domain's p90 device latency falls in a bucket beyond the target. Then, for
//! each of read, write and discard, the p99 total-latency bucket `b` (or, under congestion, the
//! one remembered from an earlier window when this window had too few samples) rescales the
//! depth to `depth × (b + 1) / 4`, clamped to `1..=maximum` — but only under congestion or when
//! `b` is itself beyond the target. So congestion throttles domains that meet their target
//! (p99 at ¾ of target: ¾ of the depth), and a domain beyond its target always gets more tokens
//! (p99 over 1.75 × target: double), whether or not anything is congested. A remembered p99 is
//! used for one congested window and then forgotten; without congestion, each evaluated p99 is
//! remembered.
//!
//! The one-second window belongs to the domain and is shared by its two histograms, as in the
//! kernel: when the device-latency histogram is judged on a timeout, the window restarts before
//! the total-latency histogram is looked at. So at fewer than 500 completions per second a
//! domain's device latency is judged every second or so, while its total latency waits until
//! 500 samples have accumulated.
//!
//! # Tunables
//!
//! | name | unit | default | range | meaning |
//! |---|---|---|---|---|
//! | `read_lat_nsec` | ns | 2000000 | 0..=9223372036854775807 | latency target of reads |
//! | `write_lat_nsec` | ns | 10000000 | 0..=9223372036854775807 | latency target of writes |
//!
//! A new target applies to the samples recorded after it is set; the histograms are not reset.
//!
//! # Deviations from Linux
//!
//! * **The timer is lazy.** A scheduler here cannot arm a timer, so the adjustment runs at the
//!   start of the first `insert`, `dispatch`, `complete` or `deactivate` at or after the instant
//!   the timer was due, and runs as of that instant (the 1-second window test compares against
//!   the due time, not the time of the call). Samples of a completion that arrives after the due
//!   time go into the next window, as they would in the kernel. Nothing is lost by waiting for a
//!   call: the depths only matter to `dispatch`, which runs the timer first, and a timer is only
//!   ever armed by a completion, so the kernel's timer cannot fire in a stretch with no calls
//!   either unless kyber has nothing in flight, where a late adjustment changes nothing until the
//!   next request arrives (and runs it). Kyber therefore never answers `Idle`.
//! * On a blk-mq queue ([`elevator_core::BlkMqQueue`], the simulator's for kyber) the timer
//!   fires on the tick `HZ / 10` jiffies after the completion that armed it, where the kernel's
//!   timer wheel files a level-0 expiry in the bucket one jiffy later so that it never fires
//!   early (`calc_index`), i.e. `HZ / 10 + 1` jiffies on: measured on 6.18.44 (the
//!   `kyber_latency` events of `elevator conform` captures come 26 or 27 jiffies apart). The
//!   conformance replay's depth tracker fires at `HZ / 10 + 1`
//!   ([`Kyber::conform_timer_round_up`]); the simulator keeps `HZ / 10` so that its outputs do
//!   not change. The window is `HZ` whole jiffies, at the host's tick rate
//!   (modern-vs-kernel.md row 11); on a legacy queue the two are exactly 100 ms and 1 s. The
//!   jiffies' phase is the clock's origin.
//! * **One hardware queue.** The kernel keeps its staging lists per CPU and per hardware queue
//!   and dispatch state (current domain, batch count) per hardware queue; here the staging
//!   lists are per CPU (as the kernel's on a one-queue device) and there is one dispatch list
//!   per domain and one dispatch state. Tokens are per device in both. (Per-CPU staging is not
//!   a deviation: §2 row 5.) The simulator's blk-mq host submits an issuer's direct I/O from
//!   the core its thread is pinned to; its page-cache write-back and the legacy hosts submit as
//!   CPU 0. The conformance replay gives each request the CPU of its insert event.
//! * **Merging** is the kernel's small window: a bio may join one of the 8 newest requests on its
//!   domain's staging list of one CPU, never a request already moved to the dispatch list. The
//!   core offers its back and front lookups ([`MergeLookups::ALL`]) and its one-hit cache, and
//!   [`Scheduler::allow_merge`] vetoes any candidate outside that window. The list is the
//!   submitting CPU's ([`Bio::cpu`](elevator_core::Bio::cpu), `kyber_bio_merge` on
//!   `blk_mq_get_ctx`'s queue), so a bio never joins a request staged from another CPU. Where
//!   both a back and a front candidate lie in the window the core tries the back one first,
//!   where the kernel takes the newer of the two. After a bio merge the grown request never
//!   fuses with a neighbour, as in blk-mq's list merge.
//! * **Wake-ups.** The freed-token count towards a wake-up is kept per domain and only while
//!   a dispatch waits; the kernel's `sbitmap_queue` counts frees in one `completion_cnt` per
//!   token bitmap against `wakeup_cnt` whenever any waiter is active, so the two can differ in
//!   the remainder carried from one wait to the next. Frees of a domain nobody waits on wake
//!   nothing, as in the kernel.
//! * A token is a count, not a bit in a bitmap: after a depth cut a domain may take a token only
//!   once fewer requests than the new depth hold one, where the kernel's bitmap can briefly
//!   hand out free bits below the new depth while bits above it are still held.
//! * **`async_depth`** follows Linux 6.18.26 and later (the running kernel of
//!   modern-vs-kernel.md, 6.18.44): every request but a read may hold at most `nr_requests ×
//!   75 / 100` of the scheduler tags (192 of 256), where 6.17 to 6.18.25 limited only
//!   asynchronous requests (`!op_is_sync`; row 12). The queue gives kyber its `nr_requests`
//!   ([`Scheduler::depth_updated`]). The kernel's limit is a shallow depth of the tag bitmap
//!   (a bit-position limit per word, so reads holding low bits also block writes); here it
//!   counts kyber's non-read requests from insertion to completion, and a refused issuer waits
//!   for the next freed request.
//! * The core sends flushes around the scheduler (as blk-mq's flush machinery does). On a legacy
//!   queue it also drains the scheduler ahead of a flush (the 2.6 barrier); a blk-mq queue
//!   ([`elevator_core::BlkMqQueue`], the simulator's for kyber) drains nothing, as the kernel
//!   (modern-vs-kernel.md row 3). Drained requests (a flush on a legacy queue, a switch) go to
//!   the device without a token. A request the device gives back (requeue) returns its token at once, as the kernel
//!   does, but is re-issued from the core's dispatch list without taking a new one, where the
//!   kernel re-inserts it into the scheduler. Both still count in the latency histograms.
//! * (Not a deviation.) A latency of 0 ns (possible in a simulation) falls in bucket 0, as the
//!   kernel's `add_latency_sample` puts it there explicitly (modern-vs-kernel.md row 23).

use elevator_core::{
    Completion, Counter, Ctx, Dispatch, DispatchInsert, Duration, HZ, IdList, Instant, ListLinks,
    MergeLookups, Op, RequestId, Scheduler, SideTable, TunableError, TunableSpec, Unit,
};

/// The kernel's name.
pub const NAME: &str = "kyber";

/// One line for `elevator list`.
pub const SUMMARY: &str = "token-limited read/write/discard/other domains, depths self-tuned \
                           to read and write latency targets";

/// kyber's tunables, in sysfs order, with the kernel's defaults.
pub const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "read_lat_nsec",
        unit: Unit::Nanoseconds,
        default: 2_000_000,
        min: 0,
        max: i64::MAX,
        help: "latency target of reads",
    },
    TunableSpec {
        name: "write_lat_nsec",
        unit: Unit::Nanoseconds,
        default: 10_000_000,
        min: 0,
        max: i64::MAX,
        help: "latency target of writes",
    },
];

/// A scheduling domain: the class of operations that shares one pool of tokens.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Domain {
    /// Reads.
    Read = 0,
    /// Writes, synchronous and asynchronous.
    Write = 1,
    /// Discards.
    Discard = 2,
    /// Everything else (flushes, and operations the core does not have).
    Other = 3,
}

impl Domain {
    /// Every domain, in the order dispatch rotates through them.
    pub const ALL: [Domain; DOMAIN_COUNT] =
        [Domain::Read, Domain::Write, Domain::Discard, Domain::Other];

    /// The domains with a latency target, whose depths the timer adjusts.
    pub const MEASURED: [Domain; MEASURED_COUNT] = [Domain::Read, Domain::Write, Domain::Discard];

    /// The domain of an operation.
    pub const fn of(op: Op) -> Domain {
        match op {
            Op::Read => Domain::Read,
            Op::Write => Domain::Write,
            Op::Discard => Domain::Discard,
            Op::Flush => Domain::Other,
        }
    }

    /// The largest (and initial) number of tokens.
    pub const fn depth_max(self) -> u32 {
        match self {
            Domain::Read => 256,
            Domain::Write => 128,
            Domain::Discard => 64,
            Domain::Other => 16,
        }
    }

    /// How many requests in a row dispatch takes from this domain before moving on.
    pub const fn batch_size(self) -> u32 {
        match self {
            Domain::Read => 16,
            Domain::Write => 8,
            Domain::Discard | Domain::Other => 1,
        }
    }

    /// `read`, `write`, `discard` or `other`.
    pub const fn name(self) -> &'static str {
        match self {
            Domain::Read => "read",
            Domain::Write => "write",
            Domain::Discard => "discard",
            Domain::Other => "other",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }

    /// The domain after this one in dispatch's rotation.
    const fn next(self) -> Domain {
        Domain::ALL[(self.index() + 1) % DOMAIN_COUNT]
    }
}

/// How many domains there are.
pub const DOMAIN_COUNT: usize = 4;
/// How many domains have a latency target.
pub const MEASURED_COUNT: usize = 3;
/// Buckets per latency histogram.
pub const LATENCY_BUCKETS: usize = 8;
/// Buckets 0..GOOD_BUCKETS hold latencies within the target.
pub const GOOD_BUCKETS: usize = 4;
/// The fixed latency target of discards.
pub const DISCARD_LATENCY_TARGET: Duration = Duration::from_secs(5);
/// The longest the timer waits after a completion (`HZ/10`).
pub const TIMER_PERIOD: Duration = Duration::from_jiffies(HZ / 10);
/// A histogram is evaluated once it holds this many samples...
pub const WINDOW_SAMPLES: u32 = 500;
/// ...or once this long has passed since its domain's window was first examined (`HZ`).
pub const WINDOW_TIMEOUT: Duration = Duration::from_jiffies(HZ);
/// The share of `nr_requests` non-read requests may hold (`KYBER_ASYNC_PERCENT`).
pub const KYBER_ASYNC_PERCENT: u32 = 75;
/// How many of the newest staged requests of a domain a bio may merge into.
pub const MERGE_WINDOW: usize = 8;

/// Which latency a histogram records.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Latency {
    /// Request creation to completion.
    Total = 0,
    /// Issue to completion.
    Device = 1,
}

/// A domain's tokens: how many there are and how many requests hold one, and the state of
/// its wait queue (`sbitmap_queue` wake-ups, modern-vs-kernel.md row 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tokens {
    depth: u32,
    in_use: u32,
    /// A dispatch found no free token and waits on the domain's wait queue
    /// (`kyber_get_domain_token` → `add_wait_queue`); it leaves once it gets a token or is
    /// woken.
    waiting: bool,
    /// Tokens freed while someone waited and not yet counted towards a wake-up (the kernel's
    /// `completion_cnt − wakeup_cnt`).
    freed_unwoken: u32,
}

impl Tokens {
    /// `sbq_calc_wake_batch`: a waiter is woken once this many tokens have been freed,
    /// `clamp(depth / 8, 1, 8)` (`SBQ_WAIT_QUEUES`, `SBQ_WAKE_BATCH`); kyber's sbitmaps have no
    /// shallow depth, so the whole depth counts.
    const fn wake_batch(&self) -> u32 {
        let batch = self.depth / 8;
        if batch < 1 {
            1
        } else if batch > 8 {
            8
        } else {
            batch
        }
    }
}

/// The scheduler's own counters, for reports.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    /// The lowest depth each measured domain reached.
    depth_min: [u32; MEASURED_COUNT],
    timer_runs: u64,
    congested_windows: u64,
    depth_decreases: u64,
    depth_increases: u64,
    /// A domain with queued requests found no free token (the kernel's throttled trace event).
    token_waits: u64,
    /// Dispatch answered `Throttled`.
    throttled: u64,
}

/// The kyber scheduler.
#[derive(Debug)]
pub struct Kyber {
    /// Latency targets in ns of the measured domains (read and write tunable, discard fixed).
    target_ns: [u64; MEASURED_COUNT],
    /// New requests, still mergeable, per domain and per inserting CPU ([`Request::cpu`]): the
    /// kernel's per-CPU `kyber_ctx_queue` lists, indexed by CPU, grown as CPUs appear.
    ///
    /// [`Request::cpu`]: elevator_core::Request::cpu
    staged: [Vec<IdList>; DOMAIN_COUNT],
    /// Requests moved over once a token was taken, per domain (the kernel's per-hctx `rqs`).
    ready: [IdList; DOMAIN_COUNT],
    links: ListLinks,
    /// Whether a dispatched request holds a token of its domain.
    token_held: SideTable<bool>,
    tokens: [Tokens; DOMAIN_COUNT],
    /// The domain whose batch is running and how many requests it has sent.
    current: Domain,
    batching: u32,
    /// Per measured domain, per [`Latency`], samples per bucket since the last evaluation.
    histograms: [[[u32; LATENCY_BUCKETS]; 2]; MEASURED_COUNT],
    /// When each measured domain's window times out, once it has been examined (the kernel's
    /// `latency_timeout`, shared by both histograms of a domain).
    window_deadline: [Option<Instant>; MEASURED_COUNT],
    /// The last p99 bucket evaluated without congestion, for a congested window that lacks
    /// samples of its own (the kernel's `domain_p99`).
    remembered_p99: [Option<usize>; MEASURED_COUNT],
    /// When the adjustment timer is due, if armed.
    timer_due: Option<Instant>,
    /// A completion's token free woke a waiting domain: the queue runs again.
    woken: bool,
    /// The kernel's tick rate on a blk-mq queue: the timer and the window count in its
    /// jiffies. `None` (a legacy queue): [`TIMER_PERIOD`] and [`WINDOW_TIMEOUT`] exactly.
    tick_rate: Option<elevator_core::TickRate>,
    /// Most non-read requests allocated at once: `nr_requests × 75 / 100`
    /// (`kyber_depth_updated`, `KYBER_ASYNC_PERCENT`).
    async_depth: u32,
    /// Non-read requests inserted and not yet completed (or absorbed by a fusion).
    non_reads: u32,
    /// Allocations refused by `async_depth` (interior: `may_queue` reads `&self`).
    async_depth_refusals: std::cell::Cell<u64>,
    counters: Counters,
    /// The conformance replay's record of the timer's evaluations and depth changes, kept
    /// only once [`Kyber::conform_log_timer`] asked for it (never in the simulator).
    timer_log: Option<Box<KyberTimerLog>>,
    /// Jiffies the timer fires after its `jiffies + HZ / 10` expiry: 0, except in the
    /// conformance replay's depth tracker, which adds the timer wheel's round-up
    /// ([`Kyber::conform_timer_round_up`]).
    timer_late_jiffies: u64,
}

impl Kyber {
    /// A new, empty kyber with the kernel's defaults: every domain at its maximum depth.
    pub fn new() -> Kyber {
        let tokens = Domain::ALL.map(|domain| Tokens {
            depth: domain.depth_max(),
            in_use: 0,
            waiting: false,
            freed_unwoken: 0,
        });
        Kyber {
            target_ns: [
                TUNABLES[0].default as u64,
                TUNABLES[1].default as u64,
                DISCARD_LATENCY_TARGET.as_nanos(),
            ],
            staged: Default::default(),
            ready: Default::default(),
            links: ListLinks::new(0),
            token_held: SideTable::new(0),
            tokens,
            current: Domain::Read,
            batching: 0,
            histograms: [[[0; LATENCY_BUCKETS]; 2]; MEASURED_COUNT],
            window_deadline: [None; MEASURED_COUNT],
            remembered_p99: [None; MEASURED_COUNT],
            timer_due: None,
            woken: false,
            tick_rate: None,
            // The queue's default 128 until a queue says otherwise (`depth_updated`).
            async_depth: 128 * KYBER_ASYNC_PERCENT / 100,
            non_reads: 0,
            async_depth_refusals: std::cell::Cell::new(0),
            counters: Counters {
                depth_min: Domain::MEASURED.map(Domain::depth_max),
                ..Counters::default()
            },
            timer_log: None,
            timer_late_jiffies: 0,
        }
    }

    /// How many tokens `domain` has now.
    pub fn depth(&self, domain: Domain) -> u32 {
        self.tokens[domain.index()].depth
    }

    /// How many requests hold a token of `domain`.
    pub fn tokens_in_use(&self, domain: Domain) -> u32 {
        self.tokens[domain.index()].in_use
    }

    /// When the adjustment timer is due, if armed.
    pub fn timer_due(&self) -> Option<Instant> {
        self.timer_due
    }
}

impl Default for Kyber {
    fn default() -> Kyber {
        Kyber::new()
    }
}

impl Scheduler for Kyber {
    fn name(&self) -> &'static str {
        NAME
    }

    fn insert(&mut self, cx: &Ctx<'_>, id: RequestId) {
        self.timer_run_if_due(cx.now);
        let capacity = cx.requests.capacity();
        self.links.ensure_capacity(capacity);
        self.token_held.ensure_capacity(capacity);
        self.token_held[id] = false;
        let domain = Domain::of(cx.requests[id].op);
        self.non_reads += u32::from(Self::limited(cx.requests[id].op));
        // `kyber_insert_requests`: onto the list of the request's software queue (its CPU).
        let cpu = usize::from(cx.requests[id].cpu);
        let lists = &mut self.staged[domain.index()];
        if lists.len() <= cpu {
            lists.resize_with(cpu + 1, IdList::default);
        }
        lists[cpu].push_back(&mut self.links, id);
    }

    fn dispatch(&mut self, cx: &Ctx<'_>) -> Dispatch {
        self.timer_run_if_due(cx.now);
        if self.batching < self.current.batch_size()
            && let Some(id) = self.dispatch_from(self.current)
        {
            return Dispatch::Issue(id);
        }
        // Start a new batch with the next domain; the current one comes last.
        self.batching = 0;
        for _ in 0..DOMAIN_COUNT {
            self.current = self.current.next();
            if let Some(id) = self.dispatch_from(self.current) {
                return Dispatch::Issue(id);
            }
        }
        if self.queued() == 0 {
            return Dispatch::Empty;
        }
        // Every domain with work is out of tokens, and tokens are only held by requests at the
        // device, so a completion will free one.
        assert!(
            self.tokens.iter().any(|tokens| tokens.in_use > 0),
            "kyber: {} requests queued, none dispatchable, yet no token is held",
            self.queued()
        );
        self.counters.throttled += 1;
        Dispatch::Throttled
    }

    fn drain(&mut self, _cx: &Ctx<'_>, out: &mut Vec<RequestId>) {
        // A drain ignores tokens: the requests leave the scheduler without one.
        for index in 0..DOMAIN_COUNT {
            while let Some(id) = self.ready[index].pop_front(&mut self.links) {
                out.push(id);
            }
            for list in &mut self.staged[index] {
                while let Some(id) = list.pop_front(&mut self.links) {
                    out.push(id);
                }
            }
        }
        self.batching = 0;
    }

    fn queued(&self) -> usize {
        self.staged.iter().flatten().chain(&self.ready).map(IdList::count).sum()
    }

    fn dispatch_insert(&self) -> DispatchInsert {
        DispatchInsert::Tail
    }

    fn merge_lookups(&self) -> MergeLookups {
        MergeLookups::ALL
    }

    fn allow_merge(&self, cx: &Ctx<'_>, target: RequestId, bio: &elevator_core::Bio) -> bool {
        // Only the newest few staged requests of the domain on the submitting CPU's list are
        // looked at (blk-mq's list merge: `kyber_bio_merge` on the `kyber_ctx_queue` of
        // `blk_mq_get_ctx`): a request staged on another CPU is out of reach.
        let domain = Domain::of(cx.requests[target].op);
        let Some(staged) = self.staged[domain.index()].get(usize::from(bio.cpu)) else {
            return false;
        };
        std::iter::successors(staged.back(), |&id| staged.prev(&self.links, id))
            .take(MERGE_WINDOW)
            .any(|id| id == target)
    }

    fn requests_merged(&mut self, cx: &Ctx<'_>, _kept: RequestId, absorbed: RequestId) {
        // Not reached while `merge_neighbour` answers `None` (blk-mq list merges never fuse),
        // but kept correct for a core that fuses anyway.
        let index = Domain::of(cx.requests[absorbed].op).index();
        self.non_reads_release(cx.requests[absorbed].op);
        let cpu = usize::from(cx.requests[absorbed].cpu);
        if let Some(list) = self.staged[index].get_mut(cpu)
            && list.iter(&self.links).any(|id| id == absorbed)
        {
            list.remove(&mut self.links, absorbed);
        } else {
            self.ready[index].remove(&mut self.links, absorbed);
        }
    }

    fn deactivate(&mut self, cx: &Ctx<'_>, id: RequestId) {
        self.timer_run_if_due(cx.now);
        // A requeued request gives its token back at once (the kernel's requeue hook).
        self.token_release(cx, id);
    }

    fn complete(&mut self, cx: &Ctx<'_>, done: &Completion) {
        // The timer would have fired before this completion; its samples go to the next window.
        self.timer_run_if_due(cx.now);
        self.token_release(cx, done.id);
        self.non_reads_release(cx.requests[done.id].op);
        let domain = Domain::of(cx.requests[done.id].op);
        self.latency_complete(cx.now, domain, done.device_time, done.total_time);
    }

    fn completion_reruns(&mut self) -> bool {
        std::mem::take(&mut self.woken)
    }

    fn set_tick_rate(&mut self, tick_rate: elevator_core::TickRate) {
        self.tick_rate = Some(tick_rate);
    }

    fn depth_updated(&mut self, nr_requests: u32) {
        self.async_depth = (nr_requests * KYBER_ASYNC_PERCENT / 100).max(1);
    }

    fn may_queue(
        &self,
        _cx: &Ctx<'_>,
        _process: elevator_core::ProcessId,
        op: Op,
    ) -> elevator_core::MayQueue {
        // 6.18.26+ `kyber_limit_depth`: every request but a (sync) read; flushes are never
        // limited (blk-mq does not ask the scheduler about them).
        if !Self::limited(op) || self.non_reads < self.async_depth {
            return elevator_core::MayQueue::May;
        }
        self.async_depth_refusals.set(self.async_depth_refusals.get() + 1);
        elevator_core::MayQueue::No
    }

    fn tunables(&self) -> &'static [TunableSpec] {
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        let spec = elevator_core::tunable::find(TUNABLES, NAME, name)?;
        // Targets are set from non-negative i64 values, so they convert back losslessly.
        Ok(match spec.name {
            "read_lat_nsec" => self.target_ns[Domain::Read.index()] as i64,
            "write_lat_nsec" => self.target_ns[Domain::Write.index()] as i64,
            other => unreachable!("tunable {other} is in the table but not handled"),
        })
    }

    fn set_tunable(&mut self, name: &str, value: i64) -> Result<(), TunableError> {
        let spec = crate::checked(TUNABLES, NAME, name, value)?;
        // The range check above makes the conversion lossless.
        match spec.name {
            "read_lat_nsec" => self.target_ns[Domain::Read.index()] = value as u64,
            "write_lat_nsec" => self.target_ns[Domain::Write.index()] = value as u64,
            other => unreachable!("tunable {other} is in the table but not handled"),
        }
        Ok(())
    }

    fn counters(&self) -> Vec<Counter> {
        let counters = self.counters;
        let depth = |domain: Domain| u64::from(self.depth(domain));
        let depth_min = |domain: Domain| u64::from(counters.depth_min[domain.index()]);
        vec![
            Counter { name: "read_depth", value: depth(Domain::Read) },
            Counter { name: "write_depth", value: depth(Domain::Write) },
            Counter { name: "discard_depth", value: depth(Domain::Discard) },
            Counter { name: "other_depth", value: depth(Domain::Other) },
            Counter { name: "read_depth_min", value: depth_min(Domain::Read) },
            Counter { name: "write_depth_min", value: depth_min(Domain::Write) },
            Counter { name: "discard_depth_min", value: depth_min(Domain::Discard) },
            Counter { name: "timer_runs", value: counters.timer_runs },
            Counter { name: "congested_windows", value: counters.congested_windows },
            Counter { name: "depth_decreases", value: counters.depth_decreases },
            Counter { name: "depth_increases", value: counters.depth_increases },
            Counter { name: "token_waits", value: counters.token_waits },
            Counter { name: "throttled", value: counters.throttled },
            Counter { name: "async_depth_refusals", value: self.async_depth_refusals.get() },
        ]
    }

    // ---- Conformance replay hook (issue 25, `crate::conform`) -----------------------------
    // Resynchronisation after a disagreement with the kernel, and a state dump for reports.
    // Not used by the simulator or the live engine.
    fn dispatch_request(
        &mut self,
        cx: &Ctx<'_>,
        id: RequestId,
        instead_of: Option<RequestId>,
    ) -> bool {
        self.links.ensure_capacity(cx.requests.capacity());
        self.token_held.ensure_capacity(cx.requests.capacity());
        let Some(domain) = self.conform_domain_holding(cx, id) else { return false };
        if let Some(ours) = instead_of {
            if ours == id
                || !self.token_held[ours]
                || self.conform_domain_holding(cx, ours).is_some()
            {
                return false;
            }
            // Back to the head of its domain's dispatch list, without its token.
            self.token_release(cx, ours);
            let index = Domain::of(cx.requests[ours].op).index();
            let mut order = vec![ours];
            while let Some(other) = self.ready[index].pop_front(&mut self.links) {
                order.push(other);
            }
            for other in order {
                self.ready[index].push_back(&mut self.links, other);
            }
            self.batching = self.batching.saturating_sub(1);
        }
        // A pick of `id` as `kyber_dispatch_request` makes it: the current batch goes on if
        // `id` is of its domain and it has room, otherwise a batch of `id`'s domain starts.
        if domain != self.current || self.batching >= self.current.batch_size() {
            self.current = domain;
            self.batching = 0;
        }
        let index = domain.index();
        // The kernel had a token for it, whatever our depth says.
        self.tokens[index].in_use += 1;
        let cpu = usize::from(cx.requests[id].cpu);
        if self.staged[index].get(cpu).is_some_and(|list| list.iter(&self.links).any(|o| o == id)) {
            // Taking a token flushes the staging lists into the dispatch list.
            self.staged_splice(index);
        }
        self.ready[index].remove(&mut self.links, id);
        self.token_held[id] = true;
        self.batching += 1;
        true
    }
}

impl Kyber {
    /// The domain whose staging or dispatch list holds `id`, if one does.
    fn conform_domain_holding(&self, cx: &Ctx<'_>, id: RequestId) -> Option<Domain> {
        if !cx.requests.contains(id) || !self.links.is_linked(id) {
            return None;
        }
        let domain = Domain::of(cx.requests[id].op);
        let index = domain.index();
        let held = |list: &IdList| list.iter(&self.links).any(|other| other == id);
        let staged = self.staged[index].get(usize::from(cx.requests[id].cpu)).is_some_and(held);
        (staged || held(&self.ready[index])).then_some(domain)
    }

    /// Sets each domain's depth to the kernel's (from its `kyber_adjust` events) and disarms
    /// the adjustment timer, so the dispatch logic is scored with the kernel's depths
    /// (`modern-vs-kernel.md` §4); a replay calls it before every dispatch.
    pub fn conform_force_depths(&mut self, depths: &[u32; DOMAIN_COUNT]) {
        for (tokens, &depth) in self.tokens.iter_mut().zip(depths) {
            tokens.depth = depth;
        }
        self.timer_due = None;
    }

    /// Starts keeping a log of the timer's evaluations and depth changes
    /// ([`Kyber::conform_timer_log`]), for the conformance replay's depth score.
    pub fn conform_log_timer(&mut self) {
        self.timer_log.get_or_insert_with(Default::default);
    }

    /// Fires the timer one jiffy after its expiry, as the kernel's timer wheel does: a timer
    /// due at jiffy E is filed in the level-0 bucket of E + 1 (`calc_index`: "round up with
    /// level granularity" so that a timer never fires early), so kyber's `jiffies + HZ / 10`
    /// runs at the tick of `jiffies + HZ / 10 + 1`. Only the conformance replay's depth
    /// tracker sets it (see "Deviations").
    pub fn conform_timer_round_up(&mut self) {
        self.timer_late_jiffies = 1;
    }

    /// Moves the armed timer to `due` (the conformance replay's depth tracker, aligning ours's
    /// timer with a run of the kernel's it can see); nothing if the timer is not armed.
    pub fn conform_move_timer(&mut self, due: Instant) {
        if self.timer_due.is_some() {
            self.timer_due = Some(due);
        }
    }

    /// The timer's evaluations and depth changes since [`Kyber::conform_log_timer`].
    pub fn conform_timer_log(&self) -> Option<&KyberTimerLog> {
        self.timer_log.as_deref()
    }

    /// A completion the conformance replay saw (`kyber_completed_request`), of `op`, at
    /// `now`, with its I/O latency (issue to completion) and total latency (allocation to
    /// completion): the timer runs first if it was due, then the samples are added and the
    /// timer armed. Tokens and requests are not touched, so a kyber that only tracks the
    /// depths (the replay's depth score) can be fed every completion of a capture.
    pub fn conform_latency_sample(
        &mut self,
        now: Instant,
        op: Op,
        device_time: Duration,
        total_time: Duration,
    ) {
        self.timer_run_if_due(now);
        self.latency_complete(now, Domain::of(op), device_time, total_time);
    }

    /// Runs the timer if it was due at or before `now` (the replay's depth score, between
    /// completions).
    pub fn conform_run_timer(&mut self, now: Instant) {
        self.timer_run_if_due(now);
    }

    /// The samples in `domain`'s two histograms since their last evaluation, by bucket:
    /// total latency first, then I/O latency (all zero for the other domain).
    pub fn conform_histograms(&self, domain: Domain) -> [[u32; LATENCY_BUCKETS]; 2] {
        match self.histograms.get(domain.index()) {
            Some(pair) => [pair[Latency::Total as usize], pair[Latency::Device as usize]],
            None => [[0; LATENCY_BUCKETS]; 2],
        }
    }

    /// kyber's state for a conformance report: the current domain and batch, then per domain
    /// its depth, tokens in use and requests staged and ready, and when the timer is due
    /// (relative to `cx.now`).
    pub fn conform_state(&self, cx: &Ctx<'_>) -> String {
        use std::fmt::Write as _;
        let mut out = format!(
            "domain={} batching={}/{}",
            self.current.name(),
            self.batching,
            self.current.batch_size()
        );
        for domain in Domain::ALL {
            let index = domain.index();
            let tokens = self.tokens[index];
            let _ = write!(
                out,
                "; {}: depth={} in_use={} staged={} ready={}",
                domain.name(),
                tokens.depth,
                tokens.in_use,
                self.staged[index].iter().map(IdList::count).sum::<usize>(),
                self.ready[index].count()
            );
        }
        if let Some(due) = self.timer_due {
            let in_ms = (due.as_nanos() as i128 - cx.now.as_nanos() as i128) as f64 / 1e6;
            let _ = write!(out, "; timer_due_in={in_ms:.3}ms");
        }
        out
    }
}

/// One evaluation of a latency histogram by the timer (what the kernel's `kyber_latency`
/// tracepoint prints), kept for the conformance replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KyberEvaluation {
    /// When the timer that made it was due.
    pub fired: Instant,
    /// The domain.
    pub domain: Domain,
    /// The I/O latency histogram (`I/O`, p90); otherwise the total latency one (`total`, p99).
    pub io_latency: bool,
    /// The percentile.
    pub percentile: u32,
    /// The bucket the percentile fell in (the tracepoint prints `bucket + 1` over 4).
    pub bucket: usize,
    /// Samples in the window.
    pub samples: u32,
    /// The window's samples by bucket.
    pub histogram: [u32; LATENCY_BUCKETS],
}

/// A depth change by the timer (what `kyber_adjust` prints), kept for the conformance replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KyberAdjust {
    /// When the timer that made it was due.
    pub fired: Instant,
    /// The domain.
    pub domain: Domain,
    /// Its new depth.
    pub depth: u32,
}

/// The timer's evaluations and depth changes, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KyberTimerLog {
    /// Every histogram evaluated.
    pub evaluations: Vec<KyberEvaluation>,
    /// Every depth changed.
    pub adjusts: Vec<KyberAdjust>,
}
// ---- end of the conformance replay hook ---------------------------------------------------

impl Kyber {
    /// Whether `op` counts against `async_depth`: every operation but a read or a flush.
    const fn limited(op: Op) -> bool {
        !matches!(op, Op::Read | Op::Flush)
    }

    /// A request that counted against `async_depth` is gone.
    fn non_reads_release(&mut self, op: Op) {
        if Self::limited(op) {
            self.non_reads =
                self.non_reads.checked_sub(1).expect("kyber: non-read count underflow");
        }
    }

    /// Takes a token of `domain` and its oldest request, if it has a request and a token is
    /// free. The staging list moves to the dispatch list only once the token is in hand.
    fn dispatch_from(&mut self, domain: Domain) -> Option<RequestId> {
        let index = domain.index();
        if self.ready[index].is_empty() && self.staged[index].iter().all(IdList::is_empty) {
            return None;
        }
        let tokens = &mut self.tokens[index];
        if tokens.in_use >= tokens.depth {
            self.counters.token_waits += 1;
            tokens.waiting = true;
            return None;
        }
        tokens.in_use += 1;
        // A waiter that got its token leaves the wait queue.
        tokens.waiting = false;
        if self.ready[index].is_empty() {
            self.staged_splice(index);
        }
        let id = self.ready[index].pop_front(&mut self.links).expect("the domain has a request");
        self.token_held[id] = true;
        self.batching += 1;
        Some(id)
    }

    /// `kyber_flush_busy_kcqs`: moves every staged request of domain `index` to the tail of its
    /// dispatch list, CPU by CPU from CPU 0 (`sbitmap_for_each_set` over the busy software
    /// queues walks them by index), each CPU's list in insertion order.
    fn staged_splice(&mut self, index: usize) {
        for list in &mut self.staged[index] {
            if self.ready[index].is_empty() {
                // Both lists live in the same links, so a whole list moves in O(1).
                std::mem::swap(&mut self.ready[index], list);
            } else {
                while let Some(id) = list.pop_front(&mut self.links) {
                    self.ready[index].push_back(&mut self.links, id);
                }
            }
        }
    }

    /// Returns the token `id` holds, if any.
    fn token_release(&mut self, cx: &Ctx<'_>, id: RequestId) {
        if !std::mem::take(&mut self.token_held[id]) {
            return;
        }
        let tokens = &mut self.tokens[Domain::of(cx.requests[id].op).index()];
        assert!(tokens.in_use > 0, "kyber: token count out of step for {id:?}");
        tokens.in_use -= 1;
        // `sbitmap_queue_wake_up`: frees count only while someone waits; every `wake_batch`
        // of them wakes the waiter, whose `kyber_domain_wake` runs the queue.
        if tokens.waiting {
            tokens.freed_unwoken += 1;
            let batch = tokens.wake_batch();
            if tokens.freed_unwoken >= batch {
                tokens.freed_unwoken -= batch;
                tokens.waiting = false;
                self.woken = true;
            }
        }
    }

    /// `kyber_completed_request`: a completion of `domain` at `now` adds its two latencies to
    /// the domain's histograms and arms the timer (nothing for the other domain).
    fn latency_complete(
        &mut self,
        now: Instant,
        domain: Domain,
        device_time: Duration,
        total_time: Duration,
    ) {
        if domain == Domain::Other {
            return;
        }
        self.complete_record(domain, Latency::Total, total_time);
        self.complete_record(domain, Latency::Device, device_time);
        // `timer_reduce(jiffies + HZ / 10)`: at the tick that many jiffies on.
        let due = match self.tick_rate {
            Some(rate) => rate.timer_at(now, u64::from(rate.hz() / 10) + self.timer_late_jiffies),
            None => now.saturating_add(TIMER_PERIOD),
        };
        self.timer_due = Some(self.timer_due.map_or(due, |armed| armed.min(due)));
    }

    /// Adds one sample to a histogram of a measured domain.
    fn complete_record(&mut self, domain: Domain, latency: Latency, value: Duration) {
        let index = domain.index();
        let bucket = latency_bucket(value, self.target_ns[index]);
        self.histograms[index][latency as usize][bucket] += 1;
    }

    /// Runs the adjustment if the timer's due time has passed, as of that due time.
    fn timer_run_if_due(&mut self, now: Instant) {
        if let Some(due) = self.timer_due
            && now >= due
        {
            self.timer_due = None;
            self.timer_adjust(due);
        }
    }

    /// The timer's work: judge congestion from p90 device latency, then rescale each measured
    /// domain from its p99 total latency.
    fn timer_adjust(&mut self, fired: Instant) {
        self.counters.timer_runs += 1;
        // Every domain is evaluated (no short cut): evaluation empties a full window.
        let mut congested = false;
        for domain in Domain::MEASURED {
            let p90 = self.timer_percentile(domain, Latency::Device, 90, fired);
            congested |= p90.is_some_and(|bucket| bucket >= GOOD_BUCKETS);
        }
        if congested {
            self.counters.congested_windows += 1;
        }
        for domain in Domain::MEASURED {
            let index = domain.index();
            let mut p99 = self.timer_percentile(domain, Latency::Total, 99, fired);
            // Domains fill their windows at different rates: under congestion a domain without
            // a fresh p99 uses the one it last had, once.
            if congested {
                p99 = p99.or(self.remembered_p99[index]);
                self.remembered_p99[index] = None;
            } else if p99.is_some() {
                self.remembered_p99[index] = p99;
            }
            let Some(bucket) = p99 else {
                continue;
            };
            if congested || bucket >= GOOD_BUCKETS {
                let depth = self.tokens[index].depth;
                let scaled = depth * (bucket as u32 + 1) / GOOD_BUCKETS as u32;
                self.timer_resize(domain, scaled, fired);
            }
        }
    }

    /// The bucket where `percentile` of the window's samples fall, emptying the histogram; or
    /// `None` while the window has no samples, or fewer than [`WINDOW_SAMPLES`] and has not
    /// timed out.
    fn timer_percentile(
        &mut self,
        domain: Domain,
        latency: Latency,
        percentile: u32,
        fired: Instant,
    ) -> Option<usize> {
        let index = domain.index();
        let buckets = &mut self.histograms[index][latency as usize];
        let samples: u32 = buckets.iter().sum();
        if samples == 0 {
            return None;
        }
        let deadline = *self.window_deadline[index].get_or_insert(match self.tick_rate {
            // `jiffies + HZ`: one second of whole ticks from the timer's tick.
            Some(rate) => rate.jiffy_start(rate.jiffies(fired) + u64::from(rate.hz())),
            None => fired.saturating_add(WINDOW_TIMEOUT),
        });
        if samples < WINDOW_SAMPLES && fired < deadline {
            return None;
        }
        self.window_deadline[index] = None;
        let bucket = percentile_bucket(buckets, samples, percentile);
        if let Some(log) = &mut self.timer_log {
            log.evaluations.push(KyberEvaluation {
                fired,
                domain,
                io_latency: latency == Latency::Device,
                percentile,
                bucket,
                samples,
                histogram: *buckets,
            });
        }
        *buckets = [0; LATENCY_BUCKETS];
        Some(bucket)
    }

    /// Sets a domain's depth to `depth` clamped to `1..=maximum`.
    fn timer_resize(&mut self, domain: Domain, depth: u32, fired: Instant) {
        let depth = depth.clamp(1, domain.depth_max());
        let index = domain.index();
        let tokens = &mut self.tokens[index];
        // `kyber_resize_domain` traces `kyber_adjust` only for a change.
        if let Some(log) = &mut self.timer_log
            && depth != tokens.depth
        {
            log.adjusts.push(KyberAdjust { fired, domain, depth });
        }
        if depth < tokens.depth {
            self.counters.depth_decreases += 1;
        } else if depth > tokens.depth {
            self.counters.depth_increases += 1;
        }
        tokens.depth = depth;
        let lowest = &mut self.counters.depth_min[index];
        *lowest = (*lowest).min(depth);
    }
}

/// The histogram bucket of `latency` for a domain whose target is `target_ns`: a quarter of the
/// target wide, the last bucket open-ended.
pub fn latency_bucket(latency: Duration, target_ns: u64) -> usize {
    let width_ns = (target_ns / GOOD_BUCKETS as u64).max(1);
    let bucket = latency.as_nanos().saturating_sub(1) / width_ns;
    bucket.min(LATENCY_BUCKETS as u64 - 1) as usize
}

/// The first bucket at which the cumulative count reaches `percentile` % of `samples`
/// (rounded up); the last bucket if rounding never gets there.
fn percentile_bucket(buckets: &[u32; LATENCY_BUCKETS], samples: u32, percentile: u32) -> usize {
    let mut needed = (u64::from(samples) * u64::from(percentile)).div_ceil(100);
    for (bucket, &count) in buckets.iter().enumerate().take(LATENCY_BUCKETS - 1) {
        if u64::from(count) >= needed {
            return bucket;
        }
        needed -= u64::from(count);
    }
    LATENCY_BUCKETS - 1
}

#[cfg(test)]
mod tests {
    use elevator_core::{Bio, BioTag, ProcessId, QueueConfig, Request, RequestTable, Sector};

    use super::*;
    use crate::SchedulerKind;
    use crate::testkit::{Harness, fixed_service, read, write};

    const fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    /// Kyber driven directly, one call at a time, with latencies chosen by the test: a device
    /// with no queue limit of its own, so that only kyber's tokens hold requests back.
    struct Driver {
        table: RequestTable,
        kyber: Kyber,
        now: Instant,
        in_flight: u32,
        next_sector: u64,
    }

    impl Driver {
        fn new() -> Driver {
            Driver {
                table: RequestTable::with_capacity(4096),
                kyber: Kyber::new(),
                now: Instant::ZERO,
                in_flight: 0,
                next_sector: 0,
            }
        }

        /// Creates and inserts a request of `op`, away from every other request.
        fn add(&mut self, op: Op) -> RequestId {
            self.add_on(op, 0)
        }

        /// [`Driver::add`] from CPU `cpu`'s software queue.
        fn add_on(&mut self, op: Op, cpu: u16) -> RequestId {
            let bio =
                Bio { op, cpu, ..Bio::write(ProcessId(1), Sector(self.next_sector), 8, BioTag(0)) };
            self.next_sector += 64;
            let id = self.table.insert(Request::from_bio(&bio, self.now)).unwrap();
            let cx = Ctx {
                now: self.now,
                requests: &self.table,
                in_flight: self.in_flight,
                depth: 1 << 16,
            };
            self.kyber.insert(&cx, id);
            id
        }

        fn dispatch(&mut self) -> Dispatch {
            let cx = Ctx {
                now: self.now,
                requests: &self.table,
                in_flight: self.in_flight,
                depth: 1 << 16,
            };
            let decision = self.kyber.dispatch(&cx);
            if let Dispatch::Issue(_) = decision {
                self.in_flight += 1;
            }
            decision
        }

        /// The device finishes `id` now, having held it `device`, `total` after its creation.
        fn complete(&mut self, id: RequestId, device: Duration, total: Duration) {
            let done =
                Completion { id, issued_at: self.now, device_time: device, total_time: total };
            let cx = Ctx {
                now: self.now,
                requests: &self.table,
                in_flight: self.in_flight,
                depth: 1 << 16,
            };
            self.kyber.complete(&cx, &done);
            self.table.remove(id);
            self.in_flight -= 1;
        }

        /// `count` requests of `op`, each inserted, dispatched and completed now with the given
        /// latencies.
        fn serve(&mut self, op: Op, count: u32, device: Duration, total: Duration) {
            for _ in 0..count {
                let id = self.add(op);
                assert_eq!(self.dispatch(), Dispatch::Issue(id));
                self.complete(id, device, total);
            }
        }

        /// Moves the clock to `at` and makes a call (a dispatch with nothing queued), which runs
        /// the timer if it is due.
        fn call_at(&mut self, at: Instant) {
            self.now = at;
            assert_eq!(self.dispatch(), Dispatch::Empty);
        }

        /// Moves the clock past the armed timer and lets it run.
        fn fire(&mut self) {
            let due = self.kyber.timer_due().expect("a completion armed the timer");
            self.call_at(due);
        }

        fn counter(&self, name: &str) -> u64 {
            self.kyber.counters().iter().find(|counter| counter.name == name).unwrap().value
        }
    }

    /// One window in which the device is congested: 500 reads at 3 ms device latency (p90 in
    /// bucket 5 of a 2 ms target), whose own p99 (bucket 5) asks for more read tokens.
    fn congested_reads(d: &mut Driver) {
        d.serve(Op::Read, 500, ms(3), ms(3));
    }

    // Proves the histogram mapping: buckets are a quarter of the target wide, a latency exactly
    // at a bucket's upper edge still belongs to it, the last bucket takes everything beyond
    // 1.75 x target, and a zero latency counts as bucket 0.
    #[test]
    fn latency_buckets_are_quarters_of_the_target() {
        let target_ns = 2_000_000;
        for (latency_ns, bucket) in [
            (0, 0),
            (1, 0),
            (500_000, 0),
            (500_001, 1),
            (2_000_000, 3),
            (2_000_001, 4),
            (3_500_000, 6),
            (3_500_001, 7),
            (1_000_000_000, 7),
        ] {
            assert_eq!(
                latency_bucket(Duration::from_nanos(latency_ns), target_ns),
                bucket,
                "{latency_ns} ns"
            );
        }
        // A zero target does not divide by zero: every nanosecond is a bucket.
        assert_eq!(latency_bucket(Duration::from_nanos(3), 0), 2);
    }

    // Proves the percentile walk: the bucket where the cumulative count first reaches
    // ceil(n x p / 100); p99 of 100 samples needs 99 of them.
    #[test]
    fn percentiles_fall_where_the_cumulative_count_reaches_them() {
        let mut buckets = [0; LATENCY_BUCKETS];
        buckets[0] = 90;
        buckets[2] = 8;
        buckets[5] = 2;
        assert_eq!(percentile_bucket(&buckets, 100, 90), 0);
        assert_eq!(percentile_bucket(&buckets, 100, 91), 2);
        assert_eq!(percentile_bucket(&buckets, 100, 98), 2);
        assert_eq!(percentile_bucket(&buckets, 100, 99), 5);
        // 7 samples: p90 needs ceil(6.3) = 7, the last one.
        let mut few = [0; LATENCY_BUCKETS];
        few[1] = 6;
        few[6] = 1;
        assert_eq!(percentile_bucket(&few, 7, 90), 6);
    }

    // Proves tokens limit what a domain has at the device: 140 queued writes go out 128 at a
    // time (the write domain's depth), reads still get their own tokens, dispatch then answers
    // Throttled, and each completion lets exactly one more write go.
    #[test]
    fn tokens_limit_requests_in_flight_per_domain() {
        let mut d = Driver::new();
        let writes: Vec<_> = (0..140).map(|_| d.add(Op::Write)).collect();
        let reads: Vec<_> = (0..3).map(|_| d.add(Op::Read)).collect();
        let mut issued = Vec::new();
        while let Dispatch::Issue(id) = d.dispatch() {
            issued.push(id);
        }
        assert_eq!(d.dispatch(), Dispatch::Throttled);
        assert_eq!(issued.len(), 128 + 3);
        assert!(reads.iter().all(|id| issued.contains(id)));
        assert_eq!(d.kyber.tokens_in_use(Domain::Write), 128);
        assert_eq!(d.kyber.queued(), 12);
        assert_eq!(d.counter("throttled"), 2);

        d.complete(writes[0], ms(1), ms(1));
        assert_eq!(d.dispatch(), Dispatch::Issue(writes[128]));
        assert_eq!(d.dispatch(), Dispatch::Throttled);
        // A read completing frees a read token, which no queued request can use.
        d.complete(reads[0], ms(1), ms(1));
        assert_eq!(d.dispatch(), Dispatch::Throttled);
    }

    // Proves the same limit through the block queue, where Throttled becomes Busy: 200 writes
    // queued at once on a device that takes 256 commands start 128 at t=0 and the rest as the
    // first ones complete, 1 ms later; 20 reads queued with them all start at t=0.
    #[test]
    fn the_block_queue_holds_a_throttled_domain_until_a_completion() {
        let config = QueueConfig { depth: 256, nr_requests: 512, ..QueueConfig::default() };
        let mut h =
            Harness::new(SchedulerKind::Kyber.build(), config).with_service(fixed_service(ms(1)));
        h.hold_device();
        for i in 0..200 {
            h.submit(write(1, i * 1024, 8));
        }
        for i in 0..20 {
            h.submit(read(2, 10_000_000 + i * 1024, 8));
        }
        h.release_device();
        h.run();
        let started_at = |op: Op, at: Instant| {
            h.issued().iter().filter(|issued| issued.op == op && issued.at == at).count()
        };
        assert_eq!(started_at(Op::Write, Instant::ZERO), 128);
        assert_eq!(started_at(Op::Write, Instant::from_millis(1)), 72);
        assert_eq!(started_at(Op::Read, Instant::ZERO), 20);
    }

    // Proves the rotation: the current domain keeps going for its batch (read 16, write 8,
    // discard 1), then the next domain with work gets a batch, round robin.
    #[test]
    fn dispatch_rotates_domains_in_batches() {
        let mut d = Driver::new();
        for _ in 0..40 {
            d.add(Op::Read);
        }
        for _ in 0..20 {
            d.add(Op::Write);
        }
        for _ in 0..3 {
            d.add(Op::Discard);
        }
        let mut pattern = String::new();
        while let Dispatch::Issue(id) = d.dispatch() {
            pattern.push(match d.table[id].op {
                Op::Read => 'R',
                Op::Write => 'W',
                Op::Discard => 'D',
                Op::Flush => 'F',
            });
        }
        let expected = ["R".repeat(16), "W".repeat(8), "D".into(), "R".repeat(16), "W".repeat(8)];
        let expected = expected.concat() + "D" + &"R".repeat(8) + &"W".repeat(4) + "D";
        assert_eq!(pattern, expected);
    }

    // Proves the congestion rule: when reads' p90 device latency is beyond their target, the
    // write domain, whose p99 is within its target (bucket 0), is cut to a quarter each window
    // (128 -> 32 -> 8), while reads, beyond their own target, are not cut (they would double,
    // but are at their maximum).
    #[test]
    fn congestion_throttles_domains_that_meet_their_target() {
        let mut d = Driver::new();
        for expected in [32, 8, 2, 1, 1] {
            congested_reads(&mut d);
            d.serve(Op::Write, 500, ms(1), ms(2));
            d.fire();
            assert_eq!(d.kyber.depth(Domain::Write), expected);
            assert_eq!(d.kyber.depth(Domain::Read), 256);
        }
        assert_eq!(d.counter("congested_windows"), 5);
        assert_eq!(d.counter("write_depth_min"), 1);
        assert_eq!(d.counter("depth_decreases"), 4);
    }

    // Proves the growth rule: once the congestion is over, a domain whose p99 total latency is
    // beyond its target gets more tokens (x (bucket + 1) / 4), up to its maximum, while a
    // domain within its target keeps its depth.
    #[test]
    fn a_domain_beyond_its_target_grows_back_to_its_maximum() {
        let mut d = Driver::new();
        for _ in 0..2 {
            congested_reads(&mut d);
            d.serve(Op::Write, 500, ms(1), ms(2));
            d.fire();
        }
        assert_eq!(d.kyber.depth(Domain::Write), 8);
        // No congestion, writes within target: nothing changes.
        d.serve(Op::Read, 500, ms(1), ms(1));
        d.serve(Op::Write, 500, ms(1), ms(2));
        d.fire();
        assert_eq!(d.kyber.depth(Domain::Write), 8);
        // Writes now wait long for their few tokens: 11 ms is bucket 4 (x 5/4), 19 ms bucket 7
        // (x 2).
        let mut depths = Vec::new();
        for total in [ms(11), ms(19), ms(19), ms(19), ms(19), ms(19)] {
            d.serve(Op::Read, 500, ms(1), ms(1));
            d.serve(Op::Write, 500, ms(1), total);
            d.fire();
            depths.push(d.kyber.depth(Domain::Write));
        }
        assert_eq!(depths, [10, 20, 40, 80, 128, 128]);
        assert_eq!(d.counter("depth_increases"), 5);
    }

    // Proves the p99 rule scales linearly: under congestion a write domain at depth 128 whose p99
    // falls in bucket b goes to 128 x (b + 1) / 4, clamped to 128; from depth 32, bucket 5 gives
    // 48.
    #[test]
    fn the_p99_bucket_scales_the_depth_linearly() {
        for (bucket, expected) in [(0u64, 32), (1, 64), (2, 96), (3, 128), (4, 128), (7, 128)] {
            let mut d = Driver::new();
            congested_reads(&mut d);
            // The middle of bucket b of a 10 ms target.
            let total = Duration::from_micros(bucket * 2500 + 1250);
            d.serve(Op::Write, 500, ms(1), total);
            d.fire();
            assert_eq!(d.kyber.depth(Domain::Write), expected, "bucket {bucket}");
        }
        let mut d = Driver::new();
        congested_reads(&mut d);
        d.serve(Op::Write, 500, ms(1), ms(1));
        d.fire();
        assert_eq!(d.kyber.depth(Domain::Write), 32);
        congested_reads(&mut d);
        d.serve(Op::Write, 500, ms(1), Duration::from_micros(13_750));
        d.fire();
        assert_eq!(d.kyber.depth(Domain::Write), 48);
    }

    // Proves the remembered p99: a write p99 evaluated in a calm window (bucket 1) is used once
    // by a congested window in which writes had no samples (128 -> 64), and then forgotten (a
    // second such window leaves 64).
    #[test]
    fn a_congested_window_uses_the_last_p99_once() {
        let mut d = Driver::new();
        d.serve(Op::Write, 500, ms(1), Duration::from_millis(3));
        d.fire();
        assert_eq!(d.kyber.depth(Domain::Write), 128, "calm and within target: unchanged");
        congested_reads(&mut d);
        d.fire();
        assert_eq!(d.kyber.depth(Domain::Write), 64);
        congested_reads(&mut d);
        d.fire();
        assert_eq!(d.kyber.depth(Domain::Write), 64);
    }

    // Proves the window rule: with fewer than 500 samples a histogram waits until a second after
    // its domain's window was first examined. 100 slow reads are not judged at the timer 100 ms
    // later, nor with 200 at 700 ms; the timer at 1.3 s (past 1.1 s) judges them congested.
    // 500 samples are judged at the first timer.
    #[test]
    fn a_window_is_judged_at_500_samples_or_after_a_second() {
        let mut d = Driver::new();
        d.serve(Op::Read, 100, ms(3), ms(3));
        d.fire();
        assert_eq!(d.now, Instant::from_millis(100));
        assert_eq!(d.counter("congested_windows"), 0);
        d.call_at(Instant::from_millis(600));
        d.serve(Op::Read, 100, ms(3), ms(3));
        d.fire();
        assert_eq!(d.counter("congested_windows"), 0);
        d.call_at(Instant::from_millis(1200));
        d.serve(Op::Read, 1, ms(3), ms(3));
        d.fire();
        assert_eq!(d.now, Instant::from_millis(1300));
        assert_eq!(d.counter("congested_windows"), 1);
        assert_eq!(d.counter("timer_runs"), 3);

        let mut full = Driver::new();
        full.serve(Op::Read, 500, ms(3), ms(3));
        full.fire();
        assert_eq!(full.counter("congested_windows"), 1);
    }

    // Proves the timer is lazy but runs as of its due time: it is armed 100 ms after the first
    // completion and not pushed back by later ones; calls before it is due change nothing; a
    // completion after the due time runs it first, so its own sample counts in the next window
    // (499 good writes are too few: the write depth stays 128, where 500 would have cut it); and
    // when the late call comes does not matter.
    #[test]
    fn the_timer_is_lazy_and_runs_as_of_its_due_time() {
        let run = |late_by: Duration| {
            let mut d = Driver::new();
            congested_reads(&mut d);
            let due = d.kyber.timer_due().unwrap();
            assert_eq!(due, Instant::from_millis(100));
            d.now = Instant::from_millis(60);
            d.serve(Op::Write, 499, ms(1), ms(1));
            assert_eq!(d.kyber.timer_due(), Some(due), "later completions do not push it back");
            d.call_at(Instant::from_millis(99));
            assert_eq!(d.counter("timer_runs"), 0);
            d.now = due + late_by;
            d.serve(Op::Write, 1, ms(1), ms(1));
            assert_eq!(d.counter("timer_runs"), 1);
            assert_eq!(d.counter("congested_windows"), 1);
            assert_eq!(d.kyber.timer_due(), Some(d.now + TIMER_PERIOD), "re-armed");
            (d.kyber.depth(Domain::Write), d.kyber.depth(Domain::Read))
        };
        assert_eq!(run(Duration::ZERO), (128, 256));
        assert_eq!(run(Duration::from_millis(1)), run(Duration::from_millis(90)));
    }

    // Proves drain works while tokens are held: with 128 writes at the device and 12 throttled,
    // drain hands back the 12 at once; the held tokens come back as the 128 complete, and a
    // request inserted afterwards goes straight out.
    #[test]
    fn drain_gives_back_throttled_requests_while_tokens_are_held() {
        let mut d = Driver::new();
        for _ in 0..140 {
            d.add(Op::Write);
        }
        let mut in_flight = Vec::new();
        while let Dispatch::Issue(id) = d.dispatch() {
            in_flight.push(id);
        }
        let mut drained = Vec::new();
        let cx = Ctx { now: d.now, requests: &d.table, in_flight: d.in_flight, depth: 1 << 16 };
        d.kyber.drain(&cx, &mut drained);
        assert_eq!(drained.len(), 12);
        assert_eq!(d.kyber.queued(), 0);
        assert_eq!(d.dispatch(), Dispatch::Empty);
        for id in in_flight {
            d.complete(id, ms(1), ms(1));
        }
        assert_eq!(d.kyber.tokens_in_use(Domain::Write), 0);
        let id = d.add(Op::Write);
        assert_eq!(d.dispatch(), Dispatch::Issue(id));
    }

    // Proves the same through the block queue: a flush arriving while writes are throttled
    // drains them onto the dispatch list past their tokens, and a switch away from kyber while
    // it holds tokens loses nothing.
    #[test]
    fn a_flush_or_a_switch_while_throttled_loses_nothing() {
        let config = QueueConfig { depth: 256, nr_requests: 512, ..QueueConfig::default() };
        for switch in [false, true] {
            let mut h = Harness::new(SchedulerKind::Kyber.build(), config.clone())
                .with_service(fixed_service(ms(1)));
            h.hold_device();
            for i in 0..150 {
                h.submit(write(1, i * 1024, 8));
            }
            h.release_device();
            assert_eq!(h.queue().in_flight(), 128);
            assert_eq!(h.queue().queued(), 22);
            if switch {
                h.switch_scheduler(SchedulerKind::Noop.build());
            } else {
                h.submit(Bio { op: Op::Flush, sector_count: 0, ..write(1, 0, 0) });
                assert_eq!(h.queue().queued(), 0, "the flush drained kyber");
            }
            h.run();
            assert_eq!(h.completed_bios(), if switch { 150 } else { 151 });
        }
    }

    // Proves kyber's merge window: a bio merges into one of the 8 newest staged requests of its
    // domain, not into an older one, and not into a request already moved to the dispatch list
    // (taken with a token), where deadline's merge index would still find it.
    #[test]
    fn bios_merge_only_into_the_newest_staged_requests() {
        use elevator_core::Submitted;
        for (others, merges) in [(7, true), (8, false)] {
            let mut h = Harness::new(SchedulerKind::Kyber.build(), QueueConfig::default());
            h.hold_device();
            h.submit(read(1, 0, 8));
            for i in 0..others {
                h.submit(read(2, 100_000 + i * 1024, 8));
            }
            let outcome = h.submit(read(1, 8, 8));
            assert_eq!(matches!(outcome, Submitted::Merged { .. }), merges, "{others} newer");
            h.release_device();
            h.run();
        }

        for (kind, merges) in [(SchedulerKind::Kyber, false), (SchedulerKind::Deadline, true)] {
            let mut h = Harness::new(kind.build(), QueueConfig::default());
            h.hold_device();
            h.submit(read(1, 0, 8));
            h.submit(read(2, 5000, 8));
            // Depth 1: the first read goes out, and kyber moves the second to its dispatch list.
            h.release_device();
            assert_eq!(h.queue().in_flight(), 1);
            let outcome = h.submit(read(2, 5008, 8));
            assert_eq!(matches!(outcome, Submitted::Merged { .. }), merges, "{kind}");
            h.run();
        }
    }

    // Proves the per-CPU staging of `kyber_ctx_queue`s: when a domain's dispatch list is empty,
    // taking a token splices every CPU's staged requests CPU 0 first, each CPU's in insertion
    // order (not in arrival order across CPUs); a request staged while the dispatch list still
    // holds requests waits for the next splice, behind them, whatever its CPU.
    #[test]
    fn staged_requests_are_spliced_in_cpu_order() {
        let mut d = Driver::new();
        let a1 = d.add_on(Op::Read, 1);
        let a2 = d.add_on(Op::Read, 1);
        let b1 = d.add_on(Op::Read, 0);
        let c1 = d.add_on(Op::Read, 2);
        let b2 = d.add_on(Op::Read, 0);
        assert_eq!(d.dispatch(), Dispatch::Issue(b1));
        // b1 spliced everything: b2, a1, a2, c1 are on the dispatch list; b3 is staged.
        let b3 = d.add_on(Op::Read, 0);
        let a3 = d.add_on(Op::Read, 1);
        let mut order = vec![b1];
        while let Dispatch::Issue(id) = d.dispatch() {
            order.push(id);
        }
        assert_eq!(order, [b1, b2, a1, a2, c1, b3, a3]);
        // A write's splice takes only its own domain's lists.
        let w1 = d.add_on(Op::Write, 1);
        let r1 = d.add_on(Op::Read, 0);
        let w0 = d.add_on(Op::Write, 0);
        let mut order = Vec::new();
        while let Dispatch::Issue(id) = d.dispatch() {
            order.push(id);
        }
        assert_eq!(order.iter().filter(|&&id| id != r1).copied().collect::<Vec<_>>(), [w0, w1]);
    }

    // Proves the merge window is per submitting CPU: a bio from CPU 1 may join a request staged
    // on CPU 1 while 8 newer requests of its domain are staged from CPU 0, and no longer once 8
    // newer ones are staged on CPU 1's own list (one shared list would have closed it already);
    // a bio from CPU 0 never reaches a request on CPU 1's list.
    #[test]
    fn the_merge_window_is_the_newest_requests_of_the_submitting_cpu() {
        let mut d = Driver::new();
        let target = d.add_on(Op::Read, 1);
        for _ in 0..MERGE_WINDOW {
            d.add_on(Op::Read, 0);
        }
        let from = |cpu: u16, d: &Driver| Bio {
            cpu,
            ..Bio::read(ProcessId(1), d.table[target].end(), 8, BioTag(0))
        };
        let allowed = |cpu: u16, d: &Driver| {
            let cx = Ctx { now: d.now, requests: &d.table, in_flight: 0, depth: 1 << 16 };
            d.kyber.allow_merge(&cx, target, &from(cpu, d))
        };
        assert!(allowed(1, &d), "8 newer requests on another CPU");
        assert!(!allowed(0, &d), "a bio from the other CPU");
        for _ in 0..MERGE_WINDOW - 1 {
            d.add_on(Op::Read, 1);
        }
        assert!(allowed(1, &d), "7 newer on its own CPU");
        d.add_on(Op::Read, 1);
        assert!(!allowed(1, &d), "8 newer on its own CPU");
    }

    // Proves the submitting CPU travels from the bio through the block queue to kyber: reads
    // submitted from CPUs 1 and 0 in turn while the device is held reach it CPU 0's first,
    // each CPU's in submission order, and a bio from CPU 0 does not merge into the contiguous
    // request staged from CPU 1.
    #[test]
    fn the_block_queue_hands_kyber_the_submitting_cpu() {
        use elevator_core::Submitted;
        let mut h = Harness::new(SchedulerKind::Kyber.build(), QueueConfig::default());
        h.hold_device();
        for (i, cpu) in [1u16, 0, 1, 0].into_iter().enumerate() {
            h.submit(Bio { cpu, ..read(1, i as u64 * 1000, 8) });
        }
        let outcome = h.submit(Bio { cpu: 0, ..read(1, 8, 8) });
        assert!(!matches!(outcome, Submitted::Merged { .. }), "merged across CPUs");
        h.release_device();
        h.run();
        assert_eq!(h.issued_starts(), [1000, 3000, 8, 0, 2000]);
    }

    // Proves the tunables: targets are in ns, accept unit suffixes through the spec parser, and
    // change the histogram a later sample lands in.
    #[test]
    fn latency_targets_are_tunable_in_nanoseconds() {
        let spec = crate::SchedulerSpec::parse("kyber:read_lat_nsec=500us,write_lat_nsec=20ms");
        let kyber = spec.unwrap().build();
        assert_eq!(kyber.tunable("read_lat_nsec"), Ok(500_000));
        assert_eq!(kyber.tunable("write_lat_nsec"), Ok(20_000_000));
        assert!(crate::SchedulerSpec::parse("kyber:read_lat_nsec=-1").is_err());

        // With a 4 ms read target, 3 ms reads are within target: no congestion.
        let mut d = Driver::new();
        d.kyber.set_tunable("read_lat_nsec", 4_000_000).unwrap();
        congested_reads(&mut d);
        d.serve(Op::Write, 500, ms(1), ms(1));
        d.fire();
        assert_eq!(d.counter("congested_windows"), 0);
        assert_eq!(d.kyber.depth(Domain::Write), 128);
    }
}
