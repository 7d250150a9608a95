//! The seeded simulation sweep (issue 14), in the spirit of TigerBeetle's VOPR: one `u64`
//! seed derives a whole configuration — scheduler and tunables, device, host, block-queue
//! settings and workload — which runs with every invariant check on and tight bounds, and a
//! failure prints its seed and an `elevator sim` command line that replays it.
//!
//! Derivation draws only from [`Prng`] forks of the seed, one per component, so adding a draw
//! for one component does not change another's. Values come from the components' own tables
//! ([`SchedulerKind::tunables`], [`DeviceKind::keys`] and presets, the host's
//! [`KEYS`](crate::host::spec::KEYS) and [`PRESETS`](crate::host::spec::PRESETS),
//! [`WorkloadKind::keys`] and [`WorkloadKind::scalable_keys`]), biased towards defaults and
//! range edges. As in swarm testing, each seed switches whole features off — its tunables,
//! device keys, host keys, queue settings or workload keys stay at their defaults — so that
//! a feature's absence is tested too, and how often the rest are varied is drawn per seed.
//! Amounts (bytes, counts, run times) are kept small so that a run takes milliseconds, and
//! idling tunables short so that it ends.
//!
//! A run [`Outcome`] is one of: it finished and its end audit passed; it stopped with an
//! error that a valid configuration may give, and the outcome says which (the workload does
//! not fit the device); or it failed: a panic, a broken invariant (the queue's audit after
//! every event, or the end audit: every request issued completed exactly once, nothing left
//! queued, parked or pending), a stall, a bound hit (with these small workloads, a livelock),
//! a run whose memory grew past its bound, or, for sampled seeds, two runs of the same seed
//! that differ.
//!
//! **Memory bounded** is checked on the simulator's own structures ([`RunAudit`]): the
//! events pending at once that are live (not superseded by a rescheduled wake-up) must never
//! outnumber what can have one outstanding — an issuer's wake-up, a host operation's
//! completion, a request's transfer or completion, a device's step and wake-up, the host's
//! timer — and at the end every queue, device, pending-bio slot and host operation must be
//! empty (the runner's end audit). Superseded wake-ups are counted but not bounded: they
//! grow with how often a device is pumped during one idle or plug window, not with the
//! run's length. Peak RSS is not measured: runs share a process in parallel, and these
//! structures are what would grow.

use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use elevator_core::pool::MIN_NR_REQUESTS;
use elevator_core::queue::{MAX_SECTORS_KB_LIMIT, NR_REQUESTS_LIMIT};
use elevator_core::{Duration, KeyKind, KeySpec, Prng, TunableSpec, Unit, format_size};
use elevator_report::Run;
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_workload::{Target, WorkloadKind, WorkloadSpec};

use crate::device::{DeviceKind, DeviceSpec};
use crate::host::spec::{HostSpec, KEYS as HOST_KEYS, PRESETS as HOST_PRESETS};
use crate::runner::{
    Bounds, QueueSettings, RunAudit, SimConfig, SimError, run_audited, topology_targets,
};
use crate::topology::LINK_TYPES;

/// Limits of every sweep run. The workloads are derived small (a few MiB, tens of
/// milliseconds of run time), so a run that needs more events than this is going round in
/// circles, and one that needs more simulated time waits for something that never comes.
pub const BOUNDS: Bounds = Bounds {
    max_events: 4_000_000,
    max_time: Duration::from_secs(365 * 24 * 3600),
    max_events_at_one_instant: 1 << 22,
};

/// Every how many seeds the run is repeated to check that it gives identical JSON.
pub const DETERMINISM_EVERY: u64 = 8;

/// Bytes an amount key (a file, a region, bytes per clone) may be at most, unless the
/// workload's block is larger: a run moves a few MiB.
const AMOUNT_BYTES_MAX: u64 = 8 << 20;
/// Blocks an amount is at least, when the amount's maximum allows it: fewer would leave
/// most runs a handful of operations.
const AMOUNT_BLOCKS_MIN: u64 = 16;
/// Largest block, record or extent drawn for a workload.
const BLOCK_BYTES_MAX: u64 = 1 << 20;
/// Largest time amount (run time, timed loop) of a workload.
const AMOUNT_TIME_MAX: Duration = Duration::from_millis(100);
/// Largest think time and other non-amount times of a workload.
const WORKLOAD_TIME_MAX: Duration = Duration::from_millis(10);
/// Largest count of processes, clones, depth and the like.
const WORKLOAD_COUNT_MAX: i64 = 16;
/// Largest time tunable of a scheduler, unless the seed tests its maximum: idling tunables
/// (`antic_expire`, `slice_idle`) above a few hundred ms only make runs long.
const TUNABLE_TIME_MAX_NS: i64 = 300_000_000;
/// Largest `nr_requests` drawn (the accepted range goes to [`NR_REQUESTS_LIMIT`], whose
/// request table alone would take hundreds of MiB per run).
const NR_REQUESTS_MAX: u32 = 4096;
/// Largest `read_ahead_kb` drawn.
const READ_AHEAD_KB_MAX: u32 = 16 * 1024;
/// Most periodic flusher wake-ups a dirty page may wait for before it expires.
const FLUSHER_WAKES_MAX: u64 = 100_000;
/// Attempts at a component spec that parses before its keys are left at their defaults.
const ATTEMPTS: u64 = 8;

/// The components a seed may leave at their defaults (swarm testing: a feature off for a
/// whole run finds what its presence hides).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Features {
    /// The scheduler's tunables are drawn (else its defaults).
    pub tunables: bool,
    /// Some device keys are drawn (else the preset's values).
    pub device_keys: bool,
    /// A host preset and keys are drawn (else the default host).
    pub host_keys: bool,
    /// Queue settings are drawn (else `QueueSettings::default()`).
    pub queue: bool,
    /// Workload keys besides the amounts are drawn (else their defaults).
    pub workload_keys: bool,
    /// Chance that each key of a component whose feature is on is drawn.
    pub key_chance: f64,
    /// Whether time tunables may take their maximum (days), to test the bounds.
    pub extreme_times: bool,
}

/// One configuration of the sweep, derived from its seed.
#[derive(Clone, Debug)]
pub struct Case {
    /// The seed: the configuration and the simulation's own randomness come from it.
    pub seed: u64,
    /// What the seed switched off.
    pub features: Features,
    /// The scheduler spec as written on the command line.
    pub scheduler_text: String,
    /// The device spec as written.
    pub device_text: String,
    /// The host spec as written.
    pub host_text: String,
    /// The workload spec as written.
    pub workload_text: String,
    /// Block-queue settings.
    pub queue: QueueSettings,
    scheduler: SchedulerSpec,
    device: DeviceSpec,
    host: HostSpec,
    workload: WorkloadSpec,
}

impl Case {
    /// The configuration seed `seed` stands for. The same seed always gives the same case.
    pub fn derive(seed: u64) -> Case {
        let root = Prng::new(seed).fork("sweep");
        let features = derive_features(&mut root.fork("features"));
        let (device_text, device) = derive_device(&root.fork("device"), &features);
        let (host_text, host) = derive_host(&root.fork("host"), &features);
        // A 2.4 host has one elevator: the scheduler is drawn among those its kernel runs
        // (every one on a 2.6 host, so those seeds draw as before).
        let kernel = host.kernel();
        let (scheduler_text, scheduler) =
            derive_scheduler(&root.fork("scheduler"), &features, kernel);
        let queue = derive_queue(&mut root.fork("queue"), &features, &device);
        // The workload is drawn until it fits the device: the plan checks sizes and device
        // counts against the topology, and a case that cannot start tests nothing.
        let targets =
            device.topology().map(|topology| topology_targets(&topology)).unwrap_or_default();
        let plan_prng = Prng::new(seed).fork("workload");
        // An iscsi device's workload runs on its ZFS initiator, which reads files only: of
        // the workload kinds, seqread is the one it can run.
        let kinds = if device.kind() == DeviceKind::Iscsi {
            &[WorkloadKind::Seqread][..]
        } else {
            WorkloadKind::ALL
        };
        let (workload_text, workload) =
            derive_workload(&root.fork("workload"), &features, &targets, &plan_prng, kinds);
        Case {
            seed,
            features,
            scheduler_text,
            device_text,
            host_text,
            workload_text,
            queue,
            scheduler,
            device,
            host,
            workload,
        }
    }

    /// The scheduler's kind.
    pub fn scheduler_kind(&self) -> SchedulerKind {
        self.scheduler.kind()
    }

    /// The device's kind.
    pub fn device_kind(&self) -> DeviceKind {
        self.device.kind()
    }

    /// The workload's kind.
    pub fn workload_kind(&self) -> WorkloadKind {
        self.workload.kind()
    }

    /// The simulation configuration: the case's seed, device, host and queue, [`BOUNDS`],
    /// and every invariant check on.
    pub fn config(&self) -> SimConfig {
        SimConfig {
            seed: self.seed,
            device: self.device.clone(),
            host: self.host.clone(),
            queue: self.queue.clone(),
            bounds: BOUNDS,
            check_invariants: true,
            dispatch_samples: 0,
            series_interval: None,
        }
    }

    /// The `elevator sim` command line that runs this case (with `--check`; its bounds are
    /// `sim`'s own, far above [`BOUNDS`], so a bound hit replays with `elevator sweep --seed`).
    pub fn command_line(&self) -> String {
        let mut line = format!(
            "elevator sim -d '{}' -w '{}' -s '{}' --host '{}' --seed {}",
            self.device_text, self.workload_text, self.scheduler_text, self.host_text, self.seed
        );
        let queue = &self.queue;
        let defaults = QueueSettings::default();
        if queue.nr_requests != defaults.nr_requests {
            let _ = write!(line, " --nr-requests {}", queue.nr_requests);
        }
        if let Some(max_sectors_kb) = queue.max_sectors_kb {
            let _ = write!(line, " --max-sectors-kb {max_sectors_kb}");
        }
        if queue.read_ahead_kb != defaults.read_ahead_kb {
            let _ = write!(line, " --read-ahead-kb {}", queue.read_ahead_kb);
        }
        if let Some(depth) = queue.depth {
            let _ = write!(line, " --depth {depth}");
        }
        if !queue.plugging {
            line.push_str(" --plugging off");
        }
        line.push_str(" --check");
        line
    }

    /// Runs the case once: its report and audit, or the error it stopped with.
    pub fn simulate(&self) -> Result<(Run, RunAudit), SimError> {
        run_audited(&self.config(), &self.scheduler, &self.workload)
    }
}

/// How a case ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran to the end and every check passed.
    Ok,
    /// It stopped with an error a valid configuration may give; `reason` says why that is
    /// not a bug.
    Expected {
        /// Why the error is fine.
        reason: String,
    },
    /// A bug in the simulator, a scheduler, a device or the host.
    Failed {
        /// What kind of failure.
        kind: FailureKind,
        /// The message.
        detail: String,
    },
}

impl Outcome {
    /// Whether the case failed.
    pub fn is_failure(&self) -> bool {
        matches!(self, Outcome::Failed { .. })
    }
}

/// What went wrong in a failed case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FailureKind {
    /// Something panicked (an assertion in the queue, a scheduler, a model).
    Panic,
    /// An invariant audit failed (after an event or at the end of the run).
    Invariant,
    /// Issuers waited with nothing that could wake them.
    Stall,
    /// The run hit [`BOUNDS`]: with the small workloads of the sweep, a livelock.
    Bound,
    /// The simulator handed an issuer's I/O to a device that refused it.
    BadIo,
    /// Queue settings drawn inside their accepted ranges were refused.
    QueueSettings,
    /// A structure grew past its bound (see the [module documentation](self)).
    Memory,
    /// The same seed gave different output.
    Nondeterministic,
}

impl FailureKind {
    /// The name printed in summaries.
    pub const fn name(self) -> &'static str {
        match self {
            FailureKind::Panic => "panic",
            FailureKind::Invariant => "invariant",
            FailureKind::Stall => "stall",
            FailureKind::Bound => "bound",
            FailureKind::BadIo => "bad-io",
            FailureKind::QueueSettings => "queue-settings",
            FailureKind::Memory => "memory",
            FailureKind::Nondeterministic => "nondeterministic",
        }
    }
}

/// What one seed gave.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// The seed.
    pub seed: u64,
    /// The case it derived (absent if deriving it panicked).
    pub case: Option<Case>,
    /// How it ended.
    pub outcome: Outcome,
    /// Events the run processed (0 if it stopped with an error).
    pub events: u64,
    /// Whether the run was repeated to check determinism.
    pub determinism_checked: bool,
}

impl CaseResult {
    /// The command line that replays the case with `elevator sim`, if it was derived.
    pub fn command_line(&self) -> Option<String> {
        self.case.as_ref().map(Case::command_line)
    }
}

/// Derives and runs the case of `seed`, catching panics, and repeats it when
/// `check_determinism` to compare the two outputs.
pub fn run_seed(seed: u64, check_determinism: bool) -> CaseResult {
    let case = match catch_unwind(|| Case::derive(seed)) {
        Ok(case) => case,
        Err(payload) => {
            return CaseResult {
                seed,
                case: None,
                outcome: Outcome::Failed {
                    kind: FailureKind::Panic,
                    detail: format!("deriving the case: {}", panic_message(payload.as_ref())),
                },
                events: 0,
                determinism_checked: false,
            };
        }
    };
    let first = simulate_caught(&case);
    let events = first.as_ref().map_or(0, |(_, audit)| audit.events);
    let mut outcome = classify(&first);
    if check_determinism && !outcome.is_failure() {
        let second = simulate_caught(&case);
        if let Some(difference) = difference(&first, &second) {
            outcome = Outcome::Failed { kind: FailureKind::Nondeterministic, detail: difference };
        }
    }
    CaseResult { seed, case: Some(case), outcome, events, determinism_checked: check_determinism }
}

/// Runs the seeds `seeds` on `jobs` threads ([`run_seed`], repeating every
/// [`DETERMINISM_EVERY`]th to check determinism) and returns their results in seed order,
/// whatever order they finished in. `progress` is called on the thread that ran each case,
/// as it finishes.
pub fn run_seeds(
    seeds: std::ops::Range<u64>,
    jobs: usize,
    progress: &(dyn Fn(&CaseResult) + Sync),
) -> Vec<CaseResult> {
    let count =
        usize::try_from(seeds.end.saturating_sub(seeds.start)).expect("seeds fit in memory");
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<CaseResult>>> = (0..count).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, count.max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(slot) = slots.get(index) else { break };
                    let seed = seeds.start + index as u64;
                    let result = run_seed(seed, samples_determinism(seed));
                    progress(&result);
                    *slot.lock().expect("no thread panics holding a slot") = Some(result);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner().expect("no thread panics holding a slot").expect("every seed ran")
        })
        .collect()
}

/// Whether [`run_seeds`] repeats `seed` to check determinism.
pub fn samples_determinism(seed: u64) -> bool {
    seed % DETERMINISM_EVERY == 0
}

/// A run's result, with a panic turned into its message.
type Caught = Result<(Run, RunAudit), CaughtError>;

#[derive(Debug)]
enum CaughtError {
    Sim(SimError),
    Panic(String),
}

fn simulate_caught(case: &Case) -> Caught {
    // A panic leaves nothing shared behind: the run's state is dropped with the closure.
    match catch_unwind(AssertUnwindSafe(|| case.simulate())) {
        Ok(result) => result.map_err(CaughtError::Sim),
        Err(payload) => Err(CaughtError::Panic(panic_message(payload.as_ref()))),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

fn classify(result: &Caught) -> Outcome {
    let failed = |kind, detail: String| Outcome::Failed { kind, detail };
    match result {
        Ok((_, audit)) => match memory_problem(audit) {
            Some(detail) => failed(FailureKind::Memory, detail),
            None => Outcome::Ok,
        },
        Err(CaughtError::Panic(message)) => failed(FailureKind::Panic, message.clone()),
        Err(CaughtError::Sim(error)) => {
            let detail = error.to_string();
            match error {
                // The library's own word that the values are impossible together (files
                // larger than the device, a depth over the device's): the derivation draws
                // keys independently, so some combinations cannot run.
                SimError::Param(_) => Outcome::Expected {
                    reason: format!("the configuration is impossible: {detail}"),
                },
                // The plan checks files by size; on the device the filesystem's journal or
                // log and ext3's indirect blocks take space too, which a small device may not
                // have.
                SimError::NoSpace { .. } => Outcome::Expected {
                    reason: format!("files and filesystem metadata outgrew the device: {detail}"),
                },
                SimError::Queue(_) => failed(FailureKind::QueueSettings, detail),
                SimError::Bound { .. } => failed(FailureKind::Bound, detail),
                SimError::Stalled { .. } => failed(FailureKind::Stall, detail),
                SimError::BadIo { .. } => failed(FailureKind::BadIo, detail),
                SimError::Invariant(_) => failed(FailureKind::Invariant, detail),
            }
        }
    }
}

/// Why `audit` shows unbounded growth, if it does (see the [module documentation](self)).
pub fn memory_problem(audit: &RunAudit) -> Option<String> {
    // One wake-up per issuer, one completion per host operation, one transfer or completion
    // per request, a step and a wake-up per device, the host's timer.
    let slots =
        audit.issuers_peak + audit.host_ops_peak + audit.requests_capacity + 2 * audit.devices + 1;
    if audit.live_events_peak > slots {
        return Some(format!(
            "{} live events pending at once, over the {slots} that issuers ({}), host \
             operations ({}), requests ({}) and devices ({}) can have",
            audit.live_events_peak,
            audit.issuers_peak,
            audit.host_ops_peak,
            audit.requests_capacity,
            audit.devices
        ));
    }
    None
}

/// The first difference between two runs of one case, if any.
fn difference(first: &Caught, second: &Caught) -> Option<String> {
    let render = |result: &Caught| match result {
        Ok((run, audit)) => {
            let json = serde_json::to_string(run).expect("a report serializes");
            format!("{json}\n{audit:?}")
        }
        Err(CaughtError::Sim(error)) => format!("error: {error}"),
        Err(CaughtError::Panic(message)) => format!("panic: {message}"),
    };
    let (first, second) = (render(first), render(second));
    if first == second {
        return None;
    }
    let at = first.bytes().zip(second.bytes()).take_while(|(a, b)| a == b).count();
    let excerpt =
        |text: &str| text.get(at.saturating_sub(40)..(at + 40).min(text.len())).map(str::to_owned);
    Some(format!(
        "two runs differ at byte {at}: `{}` vs `{}`",
        excerpt(&first).unwrap_or_default(),
        excerpt(&second).unwrap_or_default()
    ))
}

/// Counts over a sweep, and its failures in seed order.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Cases run.
    pub cases: u64,
    /// Cases that ran to the end with every check passing.
    pub ok: u64,
    /// Cases that stopped with an expected error.
    pub expected: u64,
    /// Cases repeated to check determinism.
    pub determinism_checked: u64,
    /// Events processed over all runs.
    pub events: u64,
    /// The failed cases: seed, kind, detail and replay command.
    pub failures: Vec<Failure>,
}

/// One failed case.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Its seed.
    pub seed: u64,
    /// What went wrong.
    pub kind: FailureKind,
    /// The message.
    pub detail: String,
    /// The `elevator sim` command that replays it (absent if the case could not be derived).
    pub command_line: Option<String>,
}

impl Summary {
    /// Adds one result; call in seed order so that failures are listed in seed order.
    pub fn add(&mut self, result: &CaseResult) {
        self.cases += 1;
        self.events += result.events;
        self.determinism_checked += u64::from(result.determinism_checked);
        match &result.outcome {
            Outcome::Ok => self.ok += 1,
            Outcome::Expected { .. } => self.expected += 1,
            Outcome::Failed { kind, detail } => self.failures.push(Failure {
                seed: result.seed,
                kind: *kind,
                detail: detail.clone(),
                command_line: result.command_line(),
            }),
        }
    }
}

// ---- derivation ----

fn derive_features(prng: &mut Prng) -> Features {
    Features {
        tunables: prng.chance(0.5),
        device_keys: prng.chance(0.5),
        host_keys: prng.chance(0.5),
        queue: prng.chance(0.5),
        workload_keys: prng.chance(0.5),
        key_chance: [0.1, 0.3, 0.7][prng.below(3) as usize],
        extreme_times: prng.chance(0.05),
    }
}

/// Retries `draw` with fresh streams until `accept` takes its text; after [`ATTEMPTS`], the
/// text `fallback` draws (a spec without optional keys), parsed by `parse`, which must take it.
fn first_accepted<T, E>(
    prng: &Prng,
    mut draw: impl FnMut(&mut Prng) -> String,
    accept: impl Fn(&str) -> Result<T, E>,
    fallback: impl FnOnce(&mut Prng) -> String,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> (String, T) {
    for attempt in 0..ATTEMPTS {
        let text = draw(&mut prng.fork_indexed("attempt", attempt));
        if let Ok(spec) = accept(&text) {
            return (text, spec);
        }
    }
    let text = fallback(&mut prng.fork("fallback"));
    let spec = parse(&text).unwrap_or_else(|_| panic!("`{text}` is a valid spec"));
    (text, spec)
}

fn pick<'a, T>(prng: &mut Prng, items: &'a [T]) -> &'a T {
    &items[prng.below(items.len() as u64) as usize]
}

fn spec_text(name: &str, params: &[String]) -> String {
    if params.is_empty() { name.to_owned() } else { format!("{name}:{}", params.join(",")) }
}

fn derive_scheduler(
    prng: &Prng,
    features: &Features,
    kernel: elevator_core::KernelVersion,
) -> (String, SchedulerSpec) {
    let kinds: Vec<SchedulerKind> =
        SchedulerKind::ALL.iter().copied().filter(|kind| kind.runs_on(kernel)).collect();
    // The kind comes from its own stream so that every attempt at tunables keeps it.
    let kind = *pick(&mut prng.fork("kind"), &kinds);
    first_accepted(
        prng,
        |prng| {
            let mut params = Vec::new();
            if features.tunables {
                for tunable in kind.tunables() {
                    if prng.chance(features.key_chance) {
                        let value = draw_tunable(prng, tunable, features.extreme_times);
                        params.push(format!("{}={value}", tunable.name));
                    }
                }
            }
            spec_text(kind.spec_name(), &params)
        },
        SchedulerSpec::parse,
        |_| kind.spec_name().to_owned(),
        SchedulerSpec::parse,
    )
}

/// A tunable's value: its default, an edge or a value between, time tunables kept under
/// [`TUNABLE_TIME_MAX_NS`] unless `extreme`.
fn draw_tunable(prng: &mut Prng, tunable: &TunableSpec, extreme: bool) -> i64 {
    let unit_ns = match tunable.unit {
        Unit::Milliseconds => Some(1_000_000),
        Unit::Microseconds => Some(1_000),
        Unit::Nanoseconds => Some(1),
        _ => None,
    };
    let high = match unit_ns {
        Some(unit_ns) if !extreme => {
            tunable.max.min((TUNABLE_TIME_MAX_NS / unit_ns).max(tunable.default))
        }
        _ => tunable.max,
    };
    match prng.below(6) {
        0 => tunable.default,
        1 => tunable.min,
        2 => high,
        3 => (tunable.min + 1).min(high),
        _ => log_uniform_i64(prng, tunable.min, high),
    }
}

/// A value in `[low, high]`, uniform in its number of binary digits above `low`: small values
/// are as likely as large ones.
fn log_uniform_i64(prng: &mut Prng, low: i64, high: i64) -> i64 {
    if low >= high {
        return low;
    }
    let width = high.abs_diff(low);
    let bits = prng.range_inclusive(0, u64::from(64 - width.leading_zeros()));
    let span = if bits >= 64 { width } else { ((1u64 << bits) - 1).min(width) };
    low.saturating_add_unsigned(prng.range_inclusive(0, span))
}

fn log_uniform_u64(prng: &mut Prng, low: u64, high: u64) -> u64 {
    if low >= high {
        return low;
    }
    let width = high - low;
    let bits = prng.range_inclusive(0, u64::from(64 - width.leading_zeros()));
    let span = if bits >= 64 { width } else { ((1u64 << bits) - 1).min(width) };
    low + prng.range_inclusive(0, span)
}

/// How widely a key's value may be drawn.
#[derive(Clone, Copy)]
struct Reach {
    /// Largest size, unless the key's own minimum is larger.
    size_max: u64,
    /// Largest time.
    time_max: Duration,
    /// Largest integer, for keys whose range goes beyond 100 (percentages keep theirs).
    integer_max: i64,
}

/// Devices and hosts take their whole ranges: their keys shape the model, not the amount of
/// work, so a slow or tiny device makes a run longer in simulated time but not in events.
const FULL_REACH: Reach =
    Reach { size_max: u64::MAX, time_max: Duration::MAX, integer_max: i64::MAX };

/// Workload keys other than amounts stay small: they multiply the work.
const WORKLOAD_REACH: Reach = Reach {
    size_max: BLOCK_BYTES_MAX,
    time_max: WORKLOAD_TIME_MAX,
    integer_max: WORKLOAD_COUNT_MAX,
};

/// A value for `key` as a user would write it, or `None` for a free-text key nothing here
/// knows how to fill.
fn draw_key(prng: &mut Prng, key: &KeySpec, reach: Reach) -> Option<String> {
    Some(match key.kind {
        KeyKind::Size { min_bytes, max_bytes } => {
            let high = max_bytes.min(reach.size_max.max(min_bytes));
            let bytes = match prng.below(5) {
                0 => min_bytes,
                1 => high,
                // Sizes are mostly multiples of 512 or a block; a power of two is both.
                2 | 3 => power_of_two_in(prng, min_bytes, high),
                _ => log_uniform_u64(prng, min_bytes, high),
            };
            format_size(bytes)
        }
        KeyKind::Time { min, max, .. } => {
            let high = max.min(reach.time_max.max(min));
            let nanos = match prng.below(4) {
                0 => min.as_nanos(),
                1 => high.as_nanos(),
                _ => log_uniform_u64(prng, min.as_nanos(), high.as_nanos()),
            };
            format_time(nanos)
        }
        KeyKind::Integer { min, max } => {
            let high = if max <= 100 { max } else { max.min(reach.integer_max.max(min)) };
            match prng.below(4) {
                0 => min,
                1 => high,
                _ => log_uniform_i64(prng, min, high),
            }
            .to_string()
        }
        KeyKind::Float { min, max, .. } => {
            let value = match prng.below(4) {
                0 => min,
                1 => max,
                _ => min + (max - min) * prng.unit_f64() * prng.unit_f64(),
            };
            format!("{value:.4}")
        }
        KeyKind::Flag => prng.below(2).to_string(),
        KeyKind::Choice(choices) => (*pick(prng, choices)).to_owned(),
        KeyKind::Text => return draw_text(prng, key),
    })
}

/// A power of two in `[low, high]`, or `low` if there is none.
fn power_of_two_in(prng: &mut Prng, low: u64, high: u64) -> u64 {
    let first = low.max(1).next_power_of_two();
    if first > high || first == 0 {
        return low;
    }
    let last = 63 - high.leading_zeros();
    let first_bit = first.trailing_zeros();
    1u64 << prng.range_inclusive(u64::from(first_bit), u64::from(last))
}

/// `nanos` in the largest unit that keeps it exact.
fn format_time(nanos: u64) -> String {
    for (unit, per) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if nanos >= per && nanos % per == 0 {
            return format!("{}{unit}", nanos / per);
        }
    }
    format!("{nanos}ns")
}

/// Free-text keys with a syntax drawn from a table: a member or disk (a device preset), a
/// link (`LINK_TYPES`), and the per-clone priority lists.
fn draw_text(prng: &mut Prng, key: &KeySpec) -> Option<String> {
    let is_preset = |name: &str| {
        DeviceKind::SWEPT.iter().any(|kind| kind.presets().iter().any(|preset| preset.name == name))
    };
    if is_preset(key.default) {
        let presets: Vec<&str> = DeviceKind::SWEPT
            .iter()
            .flat_map(|kind| kind.presets().iter().map(|preset| preset.name))
            .collect();
        return Some((*pick(prng, &presets)).to_owned());
    }
    match key.key {
        "link" => {
            if prng.chance(0.2) {
                return Some("none".to_owned());
            }
            let kind = pick(prng, LINK_TYPES).0;
            Some(format!("{}x{kind}", prng.range_inclusive(1, 8)))
        }
        // One value per clone, `:`-separated; fewer values than clones is allowed.
        "prioclass" | "prio" => {
            let top = if key.key == "prioclass" { 3 } else { 7 };
            let count = prng.range_inclusive(1, 4);
            let values: Vec<String> =
                (0..count).map(|_| prng.range_inclusive(0, top).to_string()).collect();
            Some(values.join(":"))
        }
        "offset" => Some(format!("{}%", prng.range_inclusive(0, 100))),
        _ => None,
    }
}

fn draw_params(
    prng: &mut Prng,
    keys: &[KeySpec],
    chance: f64,
    reach: Reach,
    skip: &[&str],
) -> Vec<String> {
    let mut params = Vec::new();
    for key in keys {
        if skip.contains(&key.key) || !prng.chance(chance) {
            continue;
        }
        if let Some(value) = draw_key(prng, key, reach) {
            params.push(format!("{}={value}", key.key));
        }
    }
    params
}

fn derive_device(prng: &Prng, features: &Features) -> (String, DeviceSpec) {
    let mut choice = prng.fork("kind");
    let kind = *pick(&mut choice, DeviceKind::SWEPT);
    let preset = pick(&mut choice, kind.presets()).name;
    first_accepted(
        prng,
        |prng| {
            let params = if features.device_keys {
                draw_params(prng, kind.keys(), features.key_chance, FULL_REACH, &[])
            } else {
                Vec::new()
            };
            spec_text(preset, &params)
        },
        DeviceSpec::parse,
        |_| preset.to_owned(),
        DeviceSpec::parse,
    )
}

fn derive_host(prng: &Prng, features: &Features) -> (String, HostSpec) {
    if !features.host_keys {
        let name = HOST_PRESETS[0].name;
        return (name.to_owned(), HostSpec::parse(name).expect("the default host parses"));
    }
    let preset = pick(&mut prng.fork("preset"), HOST_PRESETS).name;
    first_accepted(
        prng,
        |prng| {
            let params = draw_params(prng, HOST_KEYS, features.key_chance, FULL_REACH, &[]);
            spec_text(preset, &params)
        },
        |text| {
            let host = HostSpec::parse(text)?;
            // Data dirtied at the end of a run is written back once it is `dirty_expire` old,
            // and the flusher wakes every `dirty_writeback_interval` until then: a day of
            // expiry checked every 10 ms is millions of events of correct but idle waiting.
            let expire = host.params.time("dirty_expire").as_nanos();
            let interval = host.params.time("dirty_writeback_interval").as_nanos().max(1);
            if expire / interval > FLUSHER_WAKES_MAX {
                return Err(host.params.impossible("dirty_expire", "too many flusher wake-ups"));
            }
            Ok(host)
        },
        |_| preset.to_owned(),
        HostSpec::parse,
    )
}

fn derive_queue(prng: &mut Prng, features: &Features, device: &DeviceSpec) -> QueueSettings {
    let defaults = QueueSettings::default();
    if !features.queue {
        return defaults;
    }
    let mut settings = defaults.clone();
    if prng.chance(0.5) {
        settings.nr_requests = match prng.below(3) {
            0 => MIN_NR_REQUESTS,
            _ => {
                log_uniform_u64(prng, u64::from(MIN_NR_REQUESTS), u64::from(NR_REQUESTS_MAX)) as u32
            }
        };
        debug_assert!(settings.nr_requests <= NR_REQUESTS_LIMIT);
    }
    if prng.chance(0.5) {
        settings.max_sectors_kb = Some(match prng.below(4) {
            0 => 4,
            1 => MAX_SECTORS_KB_LIMIT,
            _ => power_of_two_in(prng, 4, u64::from(MAX_SECTORS_KB_LIMIT)) as u32,
        });
    }
    if prng.chance(0.5) {
        settings.read_ahead_kb = match prng.below(3) {
            0 => 0,
            _ => power_of_two_in(prng, 4, u64::from(READ_AHEAD_KB_MAX)) as u32,
        };
    }
    settings.plugging = prng.chance(0.5);
    if prng.chance(0.5) {
        // Within what the device takes: a deeper queue is an impossible configuration,
        // which `elevator sim` already reports.
        let device_depth = device.build().map_or(1, |model| model.queue_depth());
        settings.depth = Some(log_uniform_u64(prng, 1, u64::from(device_depth)) as u32);
    }
    settings
}

fn derive_workload(
    prng: &Prng,
    features: &Features,
    targets: &[Target],
    plan_prng: &Prng,
    kinds: &[WorkloadKind],
) -> (String, WorkloadSpec) {
    let kind = *pick(&mut prng.fork("kind"), kinds);
    let amounts = kind.scalable_keys();
    first_accepted(
        prng,
        |prng| {
            let mut params = if features.workload_keys {
                draw_params(prng, kind.keys(), features.key_chance, WORKLOAD_REACH, amounts)
            } else {
                Vec::new()
            };
            let step = largest_block_bytes(kind, &params);
            for key in kind.keys().iter().filter(|key| amounts.contains(&key.key)) {
                params.push(format!("{}={}", key.key, draw_amount(prng, key, step)));
            }
            spec_text(kind.name(), &params)
        },
        |text| {
            let workload = WorkloadSpec::parse(text)?;
            workload.plan(targets, plan_prng).map(|_| workload)
        },
        |prng| {
            let step = largest_block_bytes(kind, &[]);
            let params: Vec<String> = kind
                .keys()
                .iter()
                .filter(|key| amounts.contains(&key.key))
                .map(|key| format!("{}={}", key.key, draw_amount(prng, key, step)))
                .collect();
            spec_text(kind.name(), &params)
        },
        // When no small workload fits (a tiny device), the run reports the misfit as an
        // expected error.
        WorkloadSpec::parse,
    )
}

/// The largest size among the workload's other keys (drawn, else their defaults): amounts are
/// whole multiples of it, since files hold whole records, blocks or extents.
fn largest_block_bytes(kind: WorkloadKind, params: &[String]) -> u64 {
    let mut largest = 512;
    for key in kind.keys() {
        if !matches!(key.kind, KeyKind::Size { .. }) || kind.scalable_keys().contains(&key.key) {
            continue;
        }
        let drawn = params
            .iter()
            .find_map(|param| param.strip_prefix(key.key).and_then(|rest| rest.strip_prefix('=')));
        let text = drawn.unwrap_or(key.default);
        if let Ok(bytes) = elevator_core::units::parse_size_bytes(text) {
            largest = largest.max(bytes.min(BLOCK_BYTES_MAX));
        }
    }
    largest
}

/// A small amount: sizes a few multiples of `step_bytes`, counts of `step_bytes` blocks up to
/// [`AMOUNT_BYTES_MAX`], times up to [`AMOUNT_TIME_MAX`].
fn draw_amount(prng: &mut Prng, key: &KeySpec, step_bytes: u64) -> String {
    let blocks_max = (AMOUNT_BYTES_MAX / step_bytes).max(1);
    match key.kind {
        KeyKind::Size { min_bytes, .. } => {
            let blocks = log_uniform_u64(prng, AMOUNT_BLOCKS_MIN.min(blocks_max), blocks_max);
            format_size((blocks * step_bytes).max(min_bytes))
        }
        KeyKind::Integer { min, .. } => {
            let low = min.max(AMOUNT_BLOCKS_MIN.min(blocks_max) as i64);
            log_uniform_i64(prng, low, blocks_max as i64).to_string()
        }
        // A time amount of 0 means "no limit" where it is accepted (a job's `runtime`); the
        // sizes bound the run then.
        KeyKind::Time { min, .. } if min == Duration::ZERO && prng.chance(0.5) => "0".to_owned(),
        KeyKind::Time { min, .. } => {
            let low = min.max(Duration::from_millis(1)).min(AMOUNT_TIME_MAX);
            format_time(log_uniform_u64(prng, low.as_nanos(), AMOUNT_TIME_MAX.as_nanos()))
        }
        _ => key.default.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the log-uniform draws stay inside their range, edges included, even for the
    // widest ranges the tables have (all of i64 for a count, u64 sizes).
    #[test]
    fn draws_stay_in_range() {
        let mut prng = Prng::new(7);
        for _ in 0..10_000 {
            let value = log_uniform_i64(&mut prng, i64::MIN, i64::MAX);
            assert!((i64::MIN..=i64::MAX).contains(&value));
            let value = log_uniform_i64(&mut prng, -5, 3);
            assert!((-5..=3).contains(&value), "{value}");
            let value = log_uniform_u64(&mut prng, 512, 1 << 40);
            assert!((512..=1 << 40).contains(&value), "{value}");
            let value = power_of_two_in(&mut prng, 3, 100);
            assert!(value.is_power_of_two() && (4..=64).contains(&value), "{value}");
        }
        assert_eq!(power_of_two_in(&mut prng, 5, 7), 5);
        assert_eq!(format_time(1_500_000), "1500us");
        assert_eq!(format_time(0), "0ns");
        assert_eq!(format_time(2_000_000_000), "2s");
    }
}
