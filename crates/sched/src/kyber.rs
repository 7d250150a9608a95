//! kyber: per-domain token limits, resized to keep read and write latency near their targets.
//!
//! Follows Linux 6.17 (mainline development) `block/kyber-iosched.c` and
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
//! **Queueing.** A new request is appended to its domain's staging list (the kernel's per-CPU
//! "kcq" list), where bios can still merge into it. Dispatch takes from the domain's dispatch
//! list; when that is empty and the staging list is not, kyber first takes a token and only then
//! moves the whole staging list over, so requests stay mergeable for as long as no token is
//! free.
//!
//! **Dispatch** serves domains in turn: the current domain keeps going for up to its batch size
//! in requests; when the batch is used up, or the domain has nothing it may send, the batch count
//! restarts and the domains are tried round robin from the next one, wrapping back to the
//! current one last. A domain with queued requests but no free token is skipped. When no domain
//! can send anything although requests are queued, every token they need is held by a request
//! at the device, and dispatch answers [`Dispatch::Throttled`]: the next completion frees one.
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
//! * Times are compared in nanoseconds, where the kernel's one-second window and timer period
//!   are counted in jiffies.
//! * **One CPU, one hardware queue.** The kernel keeps a staging list per CPU and per hardware
//!   queue and dispatch state (current domain, batch count) per hardware queue; here there is
//!   one staging list and one dispatch list per domain and one dispatch state. Tokens are
//!   per device in both.
//! * **Merging** is the kernel's small window: a bio may join one of the 8 newest requests on its
//!   domain's staging list, never a request already moved to the dispatch list. The core offers
//!   its back and front lookups ([`MergeLookups::ALL`]) and its one-hit cache, and
//!   [`Scheduler::allow_merge`] vetoes any candidate outside that window. Where both a back and a
//!   front candidate lie in the window the core tries the back one first, where the kernel takes
//!   the newer of the two. After a bio merge the grown request never fuses with a neighbour,
//!   as in blk-mq's list merge.
//! * A token is a count, not a bit in a bitmap: after a depth cut a domain may take a token only
//!   once fewer requests than the new depth hold one, where the kernel's bitmap can briefly
//!   hand out free bits below the new depth while bits above it are still held.
//! * **`async_depth`** (asynchronous requests may allocate at most 75 % of the scheduler tags) is
//!   not modelled: the core's request pool is the 2.6 pool, which has no shallow-depth
//!   allocation; its `PoolSplit::BySync` mode keeps asynchronous writes from exhausting the
//!   allocation of synchronous requests, a comparable effect.
//! * The core sends flushes around the scheduler (as blk-mq's flush machinery does), and drains
//!   the scheduler ahead of a flush (the 2.6 barrier). Drained requests go to the device without
//!   a token. A request the device gives back (requeue) returns its token at once, as the kernel
//!   does, but is re-issued from the core's dispatch list without taking a new one, where the
//!   kernel re-inserts it into the scheduler. Both still count in the latency histograms.
//! * A latency of 0 ns (possible in a simulation) falls in bucket 0; the kernel's unsigned
//!   `latency − 1` would put it in the last bucket, but its latencies are never 0.

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

/// A domain's tokens: how many there are and how many requests hold one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tokens {
    depth: u32,
    in_use: u32,
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
    /// New requests, still mergeable, per domain (the kernel's per-CPU kcq lists).
    staged: [IdList; DOMAIN_COUNT],
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
    counters: Counters,
}

impl Kyber {
    /// A new, empty kyber with the kernel's defaults: every domain at its maximum depth.
    pub fn new() -> Kyber {
        let tokens = Domain::ALL.map(|domain| Tokens { depth: domain.depth_max(), in_use: 0 });
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
            counters: Counters {
                depth_min: Domain::MEASURED.map(Domain::depth_max),
                ..Counters::default()
            },
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
        self.staged[domain.index()].push_back(&mut self.links, id);
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
            while let Some(id) = self.staged[index].pop_front(&mut self.links) {
                out.push(id);
            }
        }
        self.batching = 0;
    }

    fn queued(&self) -> usize {
        self.staged.iter().chain(&self.ready).map(IdList::count).sum()
    }

    fn dispatch_insert(&self) -> DispatchInsert {
        DispatchInsert::Tail
    }

    fn merge_lookups(&self) -> MergeLookups {
        MergeLookups::ALL
    }

    fn allow_merge(&self, cx: &Ctx<'_>, target: RequestId, _bio: &elevator_core::Bio) -> bool {
        // Only the newest few staged requests of the domain are looked at (blk-mq's list merge).
        let staged = &self.staged[Domain::of(cx.requests[target].op).index()];
        std::iter::successors(staged.back(), |&id| staged.prev(&self.links, id))
            .take(MERGE_WINDOW)
            .any(|id| id == target)
    }

    fn requests_merged(&mut self, cx: &Ctx<'_>, _kept: RequestId, absorbed: RequestId) {
        // Not reached while `merge_neighbour` answers `None` (blk-mq list merges never fuse),
        // but kept correct for a core that fuses anyway.
        let index = Domain::of(cx.requests[absorbed].op).index();
        if self.staged[index].iter(&self.links).any(|id| id == absorbed) {
            self.staged[index].remove(&mut self.links, absorbed);
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
        let domain = Domain::of(cx.requests[done.id].op);
        if domain == Domain::Other {
            return;
        }
        self.complete_record(domain, Latency::Total, done.total_time);
        self.complete_record(domain, Latency::Device, done.device_time);
        let due = cx.now.saturating_add(TIMER_PERIOD);
        self.timer_due = Some(self.timer_due.map_or(due, |armed| armed.min(due)));
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
        ]
    }
}

impl Kyber {
    /// Takes a token of `domain` and its oldest request, if it has a request and a token is
    /// free. The staging list moves to the dispatch list only once the token is in hand.
    fn dispatch_from(&mut self, domain: Domain) -> Option<RequestId> {
        let index = domain.index();
        if self.ready[index].is_empty() && self.staged[index].is_empty() {
            return None;
        }
        let tokens = &mut self.tokens[index];
        if tokens.in_use >= tokens.depth {
            self.counters.token_waits += 1;
            return None;
        }
        tokens.in_use += 1;
        if self.ready[index].is_empty() {
            // Both lists live in the same links, so the whole staging list moves in O(1).
            std::mem::swap(&mut self.ready[index], &mut self.staged[index]);
        }
        let id = self.ready[index].pop_front(&mut self.links).expect("the domain has a request");
        self.token_held[id] = true;
        self.batching += 1;
        Some(id)
    }

    /// Returns the token `id` holds, if any.
    fn token_release(&mut self, cx: &Ctx<'_>, id: RequestId) {
        if !std::mem::take(&mut self.token_held[id]) {
            return;
        }
        let tokens = &mut self.tokens[Domain::of(cx.requests[id].op).index()];
        assert!(tokens.in_use > 0, "kyber: token count out of step for {id:?}");
        tokens.in_use -= 1;
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
                self.timer_resize(domain, scaled);
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
        let deadline =
            *self.window_deadline[index].get_or_insert(fired.saturating_add(WINDOW_TIMEOUT));
        if samples < WINDOW_SAMPLES && fired < deadline {
            return None;
        }
        self.window_deadline[index] = None;
        let bucket = percentile_bucket(buckets, samples, percentile);
        *buckets = [0; LATENCY_BUCKETS];
        Some(bucket)
    }

    /// Sets a domain's depth to `depth` clamped to `1..=maximum`.
    fn timer_resize(&mut self, domain: Domain, depth: u32) {
        let depth = depth.clamp(1, domain.depth_max());
        let index = domain.index();
        let tokens = &mut self.tokens[index];
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
    use super::*;
}
