//! Conformance replay (issue 25): a kernel scheduler capture
//! ([`SchedCapture`]) fed into our implementation of
//! the same scheduler, decision by decision, following `modern-vs-kernel.md` §4 "a fair
//! replay".
//!
//! [`replay`] builds our scheduler of the capture's name with the tunables the capture read
//! back from sysfs, then walks the events with a request table of its own, driving the
//! [`Scheduler`] trait directly (no `BlockQueue`: its flush drain, overlap holding, plugging
//! and request pool are not in the measurement, §4):
//!
//! * `block_rq_insert` → [`Scheduler::insert`]. A request's identity is (sector, sectors,
//!   operation), the only key block events carry (§4 item 8), and between requests of the same
//!   extent the I/O priority the rq events print. Flushes without data and passthrough
//!   requests are never inserted into a scheduler, so their issues are excluded.
//! * `block_bio_backmerge` / `block_bio_frontmerge` (the bio's extent) grow the queued request
//!   they join → [`Scheduler::merged`]. `block_rq_merge` (the absorbed request's extent) fuses
//!   it into the queued request ending where it starts → [`Scheduler::requests_merged`]; an
//!   absorbed extent never inserted is an insert merge into that request →
//!   [`Scheduler::merged`]. Merge events matching no queued request are plug merges (the
//!   request is inserted later with its merged extent) and are counted, not applied.
//! * `block_rq_issue` of a request ours holds → one **decision**: [`Scheduler::dispatch`] at
//!   that instant, its pick compared with the kernel's.
//! * `block_rq_complete` → [`Scheduler::complete`], with device time = complete − issue and
//!   total time = complete − the request's `block_getrq` (its insert when none was seen).
//! * `block_rq_requeue` → the request completes in ours (a requeue frees its tag and, in
//!   kyber, its token); its re-insert is a new insert, remembered as at-head for the cause
//!   classifier.
//!
//! **Time.** Ours is fed `now` = the event's jiffy (at the capture header's `HZ`) × ns per
//! jiffy + [`ConformOptions::clock_offset`] (≥ 10 s, so mq-deadline's priority-aging pass runs
//! from the start as on a long-running kernel, §2 #7). So FIFO expiry, aging and kyber's timer
//! see the jiffy comparisons the kernel makes (§2 #11), mq-deadline working in jiffy-quantised
//! ns.
//!
//! **When the kernel picks** (§4 item 2) is modelled twice. *Driver tags:* while the device
//! is full (requests at it ≥ the header's `queue_depth`) and no pick is waiting, a queue run
//! (the rest of the run whose issue filled the device, or the run an insert starts) picks a
//! request and, finding no driver tag, parks it on the hardware queue's dispatch list until a
//! tag frees (`__blk_mq_do_dispatch_sched`: "if we cannot get tag for the request, stop
//! dequeueing"), and later runs ask the scheduler nothing; so ours picks at that moment too,
//! and its pick meets the kernel's next issue ([`ConformOptions::park_when_full`]).
//! *Concurrency:* two CPUs dispatch at once and tracefs prints µs, so when ours picks the
//! request of an issue on another CPU at most [`ConformOptions::concurrent_issue`] later,
//! that issue is taken first, as identical ("reordered issues").
//! *Queue runs* (mq-deadline and kyber, [`ConformOptions::queue_runs`]; captures of version 2,
//! which hold `block_unplug`): a plug flush inserts its requests and then runs the hardware
//! queue on its CPU (`blk_mq_dispatch_list`), so at the last insert of a flush ours is asked
//! for the run's first pick — the moment kyber splices its per-CPU staging lists
//! (`kyber_dispatch_cur_domain` → `kyber_flush_busy_kcqs`) — and that pick waits for the next
//! issue on that CPU ("run picks"; parked instead when the device is full). A run takes up to
//! `max_dispatch` requests before issuing any (`__blk_mq_do_dispatch_sched`: `nr_requests`,
//! or 1 while the hardware queue is `dispatch_busy`, which the trace does not show);
//! [`ConformOptions::run_picks_max`] says how many ours takes, 1 by default (more measured
//! worse on 512 I/Os for 128 tags, `docs/validation.md`). A kernel issue of a request at the
//! head of a run's picks of another CPU is identical too. On a mismatch, ours's pick takes the
//! place of the kernel's among the waiting picks (run picks or the parked one) when ours had
//! picked that one too, and is put back otherwise. Runs the trace does not show are asked at
//! the issue as before.
//! *kblockd runs* (mq-deadline and kyber, [`ConformOptions::kblockd_runs`]; captures of
//! version 3, which hold `WS`/`WE`): kblockd's runs of the hardware queue (async runs,
//! delayed runs, restarts: `blk_mq_run_work_fn`) are seen from their start and end; at a run's
//! start ours makes the run's first pick, which waits for an issue on that CPU as a plug
//! flush's does (parked when the device is full). Their decisions and the first
//! disagreements at or near them are counted apart ([`ConformReport::kblockd`]), and a first
//! disagreement near a run is filed under [`Cause::KblockdRun`]. With
//! [`ConformOptions::kblockd_batch`] a run instead takes at its start the parked pick (the
//! hardware queue's dispatch list, issued first) and as many picks as it goes on to issue.
//! Both are off by default: on real captures neither agrees better than asking ours at each
//! issue (`docs/validation.md`), which is what the kernel does when the hardware queue is
//! `dispatch_busy` (`max_dispatch` 1).
//!
//! **Kyber's depths** are forced from the capture's `kyber_adjust` events (each domain at its
//! maximum until its first), and ours's own timer disarmed, before every dispatch
//! ([`ConformOptions::force_kyber_depths`]), so the dispatch logic is scored apart from the
//! depth tuning (§4). **Kyber's depths over time** are scored in the same pass
//! ([`ConformOptions::score_kyber_depths`], on by default; [`ConformReport::kyber_depths`]): a
//! second kyber of ours, scheduling nothing, is fed every completion's I/O and total latency at
//! the kernel's jiffies and runs its own timer, and its depths are compared with the kernel's
//! at every decision and every `kyber_adjust` — equal, or **within one step** (the kernel's
//! depth before its last adjustment, now, or after its next: the two sequences of depths the
//! same up to one timer run earlier or later) — and its evaluations with `kyber_latency`'s
//! (`kyber_depth` module).
//!
//! **Priorities.** A request printed `BE/4`, or with no class, is given ours as
//! [`IoPriority::DEFAULT`] (class none at nice 0's level), which every scheduler here serves
//! as best-effort level 4, as §2 #9 says the kernel does for a task without `ionice`.
//!
//! **Resynchronisation.** After a mismatch ours is brought back in step with
//! [`Scheduler::dispatch_request`]: our pick goes back to the queue and the kernel's leaves it
//! as if ours had picked it. A mismatch is **cascaded** when the decision before it (among
//! those put to ours) was a mismatch too and the first mismatch of that chain is at most
//! [`ConformOptions::cascade_window`] decisions back; otherwise it is a **first
//! disagreement**, and only first disagreements are classified into causes' counts. Where a
//! scheduler cannot resynchronise (bfq when it has no queue in service, or injected from
//! another queue than the kernel's request's), the replay **restarts** ours: a fresh
//! instance, given the requests the kernel still holds queued again (in insertion order, at
//! the decision's time); it never learns of those already at the device.
//!
//! # Deviations
//!
//! * The jiffy phase is not in the capture (§4 item 4): the capture's first event is taken as
//!   the start of a jiffy. Decisions within one jiffy of a FIFO deadline or the aging cut-off
//!   can therefore go either way; the classifier names them `jiffy boundary`.
//! * The resynchronisation restores our pick's place in its tree and FIFO (mq-deadline) or
//!   dispatch list (kyber) and the batch count, but not the sweep position or starvation count
//!   the wrong pick changed (their earlier values are not kept): what follows from that shows
//!   up as cascaded disagreements.
//! * The decision replay does not run kyber's timer (its depths are taken from the kernel; the
//!   depth score runs it apart); a capture that starts after kyber's first adjustments starts
//!   ours at the maximum depths.
//! * Kyber's depth score finds the kernel's tick phase from its timer events and moves ours's
//!   timer to a run of the kernel's that the trace shows one jiffy away
//!   ([`ConformOptions::kyber_timer_sync`]): the kernel's timer sometimes runs a jiffy late,
//!   which nothing in the trace predicts.
//! * The driver-tag and concurrency models are heuristics on what the trace shows; each can be
//!   turned off, and `docs/validation.md` gives their effect on real captures.
//! * Which process a request belongs to is the insert event's pid (a request inserted by a
//!   plug flush from another context would be charged to that context).
//! * A partial completion (fewer sectors than the request) completes the whole request.

mod kyber_depth;
mod report;
mod share;

use std::collections::{BTreeMap, BTreeSet};

use elevator_core::{
    Bio, BioTag, Completion, Ctx, Dispatch, Duration, Instant, IoClass, IoPriority, MergeKind, Op,
    ProcessId, Request, RequestFlags, RequestId, RequestTable, Scheduler, Sector, TickRate,
};
use elevator_trace::sched_log::{
    BlockPoint, BlockRecord, SchedCapture, SchedCaptureHeader, SchedEvent,
};

pub use report::{
    Cause, ConformReport, DepthDifference, Disagreement, DomainDepthScore, KblockdScore,
    KyberDepthScore, Pick,
};
pub use share::{DepthRule, ProcessShare, ShareOptions, ShareReport, WindowShare, share_replay};

use crate::bfq::Bfq;
use crate::kyber::{Domain, Kyber};
use crate::mq_deadline::MqDeadline;

/// How a replay runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConformOptions {
    /// How many disagreements the report lists with both sides' state.
    pub first_disagreements: usize,
    /// A mismatch at most this many decisions after the first of an unbroken chain of
    /// mismatches is cascaded.
    pub cascade_window: u64,
    /// Added to every time ours is fed, so mq-deadline's aging pass runs from the first
    /// decision, as on a kernel up for longer than `prio_aging_expire`; raised to that expiry
    /// plus 1 s when the capture's is longer.
    pub clock_offset: Duration,
    /// Model the kernel's pick of a request that then waits for a driver tag: while the
    /// device is full, ours picks the next request at once (module docs).
    pub park_when_full: bool,
    /// Kyber: give ours the kernel's domain depths (from `kyber_adjust`, starting at each
    /// domain's maximum) before every dispatch, its own timer disarmed, so the dispatch logic
    /// is scored apart from the depth tuning (§4).
    pub force_kyber_depths: bool,
    /// Issues on different CPUs at most this far apart are concurrent: their picks may have
    /// been made in the other order (module docs).
    pub concurrent_issue: Duration,
    /// mq-deadline and kyber: at each queue run the capture shows (the last insert of a
    /// `block_unplug`'s flush), ours picks as the run does, each pick waiting for an issue on
    /// the run's CPU (module docs).
    pub queue_runs: bool,
    /// The most ours picks at one visible queue run before its issues (the kernel's
    /// `max_dispatch`: `nr_requests`, or 1 while the hardware queue is `dispatch_busy`, which
    /// the trace does not show).
    pub run_picks_max: u32,
    /// mq-deadline and kyber, captures of version 3: at the start of each kblockd run of the
    /// hardware queue the capture shows (`WS`), ours picks as the run does, the pick waiting
    /// for an issue on the run's CPU as a plug flush's does (module docs, "kblockd runs").
    pub kblockd_runs: bool,
    /// With [`ConformOptions::kblockd_runs`]: a kblockd run takes the parked pick and picks at
    /// its start as many more requests as it issues before its end (the capture shows
    /// them), as a run does when the
    /// hardware queue is not `dispatch_busy` (`max_dispatch` = `nr_requests`: every pick made,
    /// while driver tags last, before the first issue), instead of one.
    pub kblockd_batch: bool,
    /// Kyber: score its depths over time in the same pass — a second kyber of ours, fed the
    /// capture's completions at the kernel's jiffies, runs its own timer, and its depths are
    /// compared with the kernel's `kyber_adjust`s ([`ConformReport::kyber_depths`]).
    pub score_kyber_depths: bool,
    /// Kyber's depth score: its timer fires one jiffy after `jiffies + HZ / 10`, as the
    /// kernel's timer wheel rounds a level-0 expiry up (`Kyber::conform_timer_round_up`).
    pub kyber_timer_round_up: bool,
    /// Kyber's depth score: an armed timer of ours one jiffy away from a run of the kernel's
    /// timer that the trace shows (`kyber_latency`, `kyber_adjust`) is moved to it
    /// (`conform::kyber_depth`).
    pub kyber_timer_sync: bool,
}

impl Default for ConformOptions {
    fn default() -> ConformOptions {
        ConformOptions {
            first_disagreements: 10,
            cascade_window: 8,
            clock_offset: Duration::from_secs(20),
            park_when_full: true,
            force_kyber_depths: true,
            concurrent_issue: Duration::from_micros(2),
            queue_runs: true,
            run_picks_max: 1,
            kblockd_runs: KBLOCKD_RUNS_DEFAULT,
            kblockd_batch: false,
            score_kyber_depths: true,
            kyber_timer_round_up: true,
            kyber_timer_sync: true,
        }
    }
}

/// [`ConformOptions::kblockd_runs`]'s default (`docs/validation.md` gives the measurements
/// it rests on).
const KBLOCKD_RUNS_DEFAULT: bool = false;

/// Why a capture cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConformError {
    /// The capture lost events: its decisions cannot be judged.
    #[error("the capture lost {lost} events; a capture is judged only when it lost none")]
    LostEvents {
        /// Events lost.
        lost: u64,
    },
    /// A scheduler we have no conformance replay for.
    #[error("scheduler `{name}` cannot be replayed (accepted: mq-deadline, kyber, bfq)")]
    UnknownScheduler {
        /// The capture's scheduler name.
        name: String,
    },
    /// A sysfs tunable ours does not have.
    #[error("{scheduler}: sysfs tunable `{name}` has no counterpart here (accepted: {accepted})")]
    UnknownTunable {
        /// The scheduler.
        scheduler: String,
        /// The sysfs file.
        name: String,
        /// The names accepted.
        accepted: String,
    },
    /// A tunable value ours cannot take.
    #[error("{scheduler}: sysfs tunable `{name}` = `{value}`: {problem}")]
    BadTunable {
        /// The scheduler.
        scheduler: String,
        /// The sysfs file.
        name: String,
        /// Its value as captured.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
    /// `HZ` out of range.
    #[error(
        "capture header: HZ {hz} is not valid (accepted: 100, 250, 300, 1000, the kernel's CONFIG_HZ choices)"
    )]
    BadHz {
        /// The header's HZ.
        hz: u32,
    },
}

/// Our scheduler under test, by type so its `conform_state` is reachable.
#[derive(Debug)]
enum Ours {
    MqDeadline(Box<MqDeadline>),
    Kyber(Box<Kyber>),
    Bfq(Box<Bfq>),
}

impl Ours {
    fn scheduler(&mut self) -> &mut dyn Scheduler {
        match self {
            Ours::MqDeadline(s) => s.as_mut(),
            Ours::Kyber(s) => s.as_mut(),
            Ours::Bfq(s) => s.as_mut(),
        }
    }

    fn state(&self, cx: &Ctx<'_>) -> String {
        match self {
            Ours::MqDeadline(s) => s.conform_state(cx),
            Ours::Kyber(s) => s.conform_state(cx),
            Ours::Bfq(s) => s.conform_state(cx),
        }
    }
}

/// The request flags a captured event's RWBS gives (sync, meta, FUA).
fn flags_of(record: &BlockRecord) -> RequestFlags {
    let mut flags = RequestFlags::NONE;
    if record.flags.sync {
        flags = flags | RequestFlags::SYNC;
    }
    if record.flags.meta {
        flags = flags | RequestFlags::META;
    }
    if record.flags.fua {
        flags = flags | RequestFlags::FUA;
    }
    flags
}

/// Builds ours of the capture's scheduler as the kernel attached it — told the queue's
/// `nr_requests` and the kernel's tick rate, as `blk_mq_init_sched` tells its scheduler — then
/// given the captured sysfs tunables, as they were written after the attach.
fn build(header: &SchedCaptureHeader) -> Result<Ours, ConformError> {
    let name = header.scheduler.as_str();
    let tick_rate = TickRate::new(header.hz).ok_or(ConformError::BadHz { hz: header.hz })?;
    let mut ours = match name {
        crate::mq_deadline::NAME => Ours::MqDeadline(Box::default()),
        crate::kyber::NAME => Ours::Kyber(Box::default()),
        crate::bfq::NAME => {
            // bfq block (issue 25): bfq reads the queue's rotational flag at attach. Captures
            // carry it (`rotational`); one written before the key existed is taken as
            // non-rotational for a loop device (major 7: the captures of this project are
            // loop devices over files in /dev/shm, which the kernel marks non-rotational,
            // `loop_update_rotational`) and rotational otherwise.
            let mut bfq = Box::<Bfq>::default();
            let loop_device = header.device.split(',').next() == Some("7");
            bfq.set_non_rotational(header.rotational.map_or(loop_device, |rotational| !rotational));
            Ours::Bfq(bfq)
        }
        other => return Err(ConformError::UnknownScheduler { name: other.to_owned() }),
    };
    let scheduler = ours.scheduler();
    scheduler.set_tick_rate(tick_rate);
    scheduler.depth_updated(header.nr_requests);
    let specs = scheduler.tunables();
    for (file, text) in &header.tunables {
        let bad = |problem: String| ConformError::BadTunable {
            scheduler: name.to_owned(),
            name: file.clone(),
            value: text.clone(),
            problem,
        };
        // sysfs prints every one of these as a decimal integer in the unit of our table
        // (ms for the expiry times, ns for kyber's targets, µs for slice_idle_us).
        let value: i64 =
            text.trim().parse().map_err(|_| bad("not a decimal integer".to_owned()))?;
        if specs.iter().any(|spec| spec.name == file) {
            scheduler.set_tunable(file, value).map_err(|error| bad(error.to_string()))?;
            continue;
        }
        let accepted: Vec<&str> = specs.iter().map(|spec| spec.name).collect();
        return Err(ConformError::UnknownTunable {
            scheduler: name.to_owned(),
            name: file.clone(),
            accepted: accepted.join(", "),
        });
    }
    Ok(ours)
}

/// A request's identity in block events.
type Identity = (u64, u32, Op);

/// What the replay knows of a request it gave ours.
#[derive(Clone, Debug)]
struct Tracked {
    id: RequestId,
    inserted_ns: u64,
    insert_cpu: u32,
    pid: u32,
    /// Its `block_getrq`, ns since the capture's start.
    created_ns: u64,
    /// Issued: when (ns since the capture's start).
    issued_ns: Option<u64>,
    /// Re-inserted after a requeue.
    requeued: bool,
    /// The priority its insert event printed (to tell apart requests of the same extent).
    printed: Option<IoPriority>,
    /// Given to the current instance of ours (false while ours waits for a restart).
    in_ours: bool,
}

/// The replay's request table and the state around ours.
struct Replay<'a> {
    capture: &'a SchedCapture,
    options: ConformOptions,
    ours: Ours,
    table: RequestTable,
    /// Requests inserted and not completed, in insertion order.
    live: Vec<Tracked>,
    /// Issued requests that never went through the scheduler, by identity.
    bypass_in_flight: Vec<Identity>,
    /// Their issue times (ns since the capture's start), for kyber's depth score.
    bypass_issued: Vec<(Identity, u64)>,
    /// `block_getrq` times by (start sector, op), for total latency.
    getrq: BTreeMap<(u64, u8), u64>,
    /// Identities requeued and not yet re-inserted.
    requeued: Vec<Identity>,
    report: ConformReport,
    /// The decision index that started the current chain of mismatches, while the last scored
    /// decision was a mismatch.
    chain_start: Option<u64>,
    /// Our pick made when an issue left the device full, with our state before it and the
    /// time (ns since the capture's start): compared with the kernel's next issue.
    parked: Option<(RequestId, String, u64)>,
    /// Ours's picks at a queue run, by the run's CPU, in pick order, each with our state
    /// before it and the run's time ([`ConformOptions::queue_runs`]).
    run_picks: BTreeMap<u32, std::collections::VecDeque<(RequestId, String, u64)>>,
    /// A plug flush under way on a CPU: its task and the requests still to be inserted.
    flushing: BTreeMap<u32, (u32, u32)>,
    /// The time of the last block event on each CPU (ns since the capture's start).
    last_on_cpu: BTreeMap<u32, u64>,
    /// The index of the event being replayed.
    position: usize,
    /// Issue events already taken as decisions out of their order (concurrent issues).
    consumed: BTreeSet<usize>,
    /// Kyber: the kernel's domain depths, by `kyber_adjust`.
    kyber_depths: [u32; 4],
    /// Kyber: the last `kyber_throttled` of each domain (ns since the capture's start).
    kyber_throttled: [Option<u64>; 4],
    /// The previous issue event's time (ns since the capture's start).
    last_issue_ns: u64,
    /// The latest event time so far (ns since the capture's start): ours is called at it, so
    /// its clock never runs backwards whatever order a capture's events are in.
    latest_ns: u64,
    /// Kyber: the depth score's tracker ([`ConformOptions::score_kyber_depths`]).
    depths: Option<kyber_depth::DepthTracker>,
    /// kblockd runs under way, by CPU: the kworker's pid, the start (ns since the capture's
    /// start) and whether it has issued.
    kblockd_open: BTreeMap<u32, (u32, u64, bool)>,
    /// The end of the last kblockd run on each CPU (ns since the capture's start).
    kblockd_ended: BTreeMap<u32, u64>,
    /// The kblockd score (captures with kblockd runs).
    kblockd: Option<KblockdScore>,
}

/// Replays `capture` into ours and compares every decision (module docs).
pub fn replay(
    capture: &SchedCapture,
    options: ConformOptions,
) -> Result<ConformReport, ConformError> {
    let header = &capture.header;
    if header.lost_events > 0 {
        return Err(ConformError::LostEvents { lost: header.lost_events });
    }
    let mut ours = build(header)?;
    // The offset must exceed the aging expiry in force, whatever the capture set it to.
    let aging_ms = ours.scheduler().tunable("prio_aging_expire").unwrap_or(0);
    let mut options = options;
    options.clock_offset = options
        .clock_offset
        .max(Duration::from_millis(aging_ms.max(0) as u64) + Duration::from_secs(1));
    let report = ConformReport {
        scheduler: header.scheduler.clone(),
        kernel_release: header.kernel_release.clone(),
        hz: header.hz,
        workload: header.workload.clone(),
        tunables: header.tunables.iter().map(|(name, value)| format!("{name}={value}")).collect(),
        events: capture.events.len() as u64,
        decisions: 0,
        identical: 0,
        agreement: 1.0,
        first_disagreements: 0,
        cascaded: 0,
        restarts: 0,
        excluded_issues: 0,
        reordered_issues: 0,
        requeues: 0,
        unmatched_merges: 0,
        causes: Default::default(),
        disagreements: Vec::new(),
        kyber_depths: None,
        kblockd: None,
    };
    let depths = match build(header)? {
        Ours::Kyber(kyber) if options.score_kyber_depths => Some(kyber_depth::DepthTracker::new(
            capture,
            kyber,
            options.clock_offset,
            options.first_disagreements,
            options.kyber_timer_round_up,
            options.kyber_timer_sync,
        )),
        _ => None,
    };
    let mut run = Replay {
        capture,
        options,
        ours,
        table: RequestTable::with_capacity(256),
        live: Vec::new(),
        bypass_in_flight: Vec::new(),
        bypass_issued: Vec::new(),
        getrq: BTreeMap::new(),
        requeued: Vec::new(),
        report,
        chain_start: None,
        parked: None,
        run_picks: BTreeMap::new(),
        flushing: BTreeMap::new(),
        last_on_cpu: BTreeMap::new(),
        position: 0,
        consumed: BTreeSet::new(),
        kyber_depths: Domain::ALL.map(Domain::depth_max),
        kyber_throttled: [None; 4],
        last_issue_ns: 0,
        latest_ns: 0,
        depths,
        kblockd_open: BTreeMap::new(),
        kblockd_ended: BTreeMap::new(),
        kblockd: capture.events.iter().any(SchedEvent::is_kblockd).then(KblockdScore::default),
    };
    for (position, event) in capture.events.iter().enumerate() {
        match event {
            SchedEvent::Block(record) => {
                if !run.consumed.remove(&position) {
                    run.position = position;
                    run.block(record);
                }
            }
            SchedEvent::KyberAdjust { domain, depth, time_ns } => {
                if let Some(index) = kyber_domain(domain) {
                    run.kyber_depths[index] = *depth;
                }
                if let Some(depths) = &mut run.depths {
                    depths.sample(*time_ns);
                }
            }
            SchedEvent::KyberThrottled { time_ns, domain } => {
                if let Some(index) = kyber_domain(domain) {
                    run.kyber_throttled[index] = Some(*time_ns);
                }
            }
            SchedEvent::KyberLatency { .. } | SchedEvent::Plug { .. } => {}
            SchedEvent::Unplug { cpu, pid, requests, time_ns, .. } => {
                run.unplug(*cpu, *pid, *requests, *time_ns);
            }
            SchedEvent::KblockdStart { cpu, pid, time_ns } => {
                run.position = position;
                run.kblockd_start(*cpu, *pid, *time_ns);
            }
            SchedEvent::KblockdEnd { cpu, time_ns, .. } => {
                if let Some((_, _, issued)) = run.kblockd_open.remove(cpu)
                    && let Some(score) = &mut run.kblockd
                {
                    score.runs_issuing += u64::from(issued);
                }
                run.kblockd_ended.insert(*cpu, *time_ns);
            }
        }
    }
    let mut report = run.report;
    report.kblockd = run.kblockd;
    report.kyber_depths = run.depths.map(kyber_depth::DepthTracker::finish);
    if report.decisions > 0 {
        report.agreement = report.identical as f64 / report.decisions as f64;
    }
    Ok(report)
}

/// The index of a domain as kyber's tracepoints name it (`READ`, `WRITE`, `DISCARD`,
/// `OTHER`).
fn kyber_domain(name: &str) -> Option<usize> {
    Domain::ALL.iter().position(|domain| domain.name().eq_ignore_ascii_case(name))
}

fn domain_index(domain: Domain) -> usize {
    Domain::ALL.iter().position(|&other| other == domain).expect("a domain of ALL")
}

fn identity(record: &BlockRecord) -> Identity {
    (record.sector, record.sectors, record.op)
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Flush => "flush",
        Op::Discard => "discard",
    }
}

/// The priority ours is given: no class, or BE/4 (what a default task's requests print, §2
/// #9), is our default; anything else as printed.
fn our_priority(printed: Option<IoPriority>) -> IoPriority {
    match printed {
        Some(priority) if priority.class() == IoClass::BestEffort && priority.level() == 4 => {
            IoPriority::DEFAULT
        }
        Some(priority) => priority,
        None => IoPriority::DEFAULT,
    }
}

impl Replay<'_> {
    /// The jiffy of `time_ns` since the capture's start.
    fn jiffy(&self, time_ns: u64) -> u64 {
        (u128::from(time_ns) * u128::from(self.capture.header.hz) / 1_000_000_000) as u64
    }

    /// What ours is fed for `time_ns`: the start of its jiffy, plus the offset.
    fn now(&self, time_ns: u64) -> Instant {
        let hz = u128::from(self.capture.header.hz);
        let jiffy_ns = u128::from(self.jiffy(time_ns)) * 1_000_000_000 / hz;
        Instant::from_nanos(self.options.clock_offset.as_nanos() + jiffy_ns as u64)
    }

    fn in_flight(&self) -> u32 {
        let owned = self.live.iter().filter(|t| t.issued_ns.is_some()).count();
        (owned + self.bypass_in_flight.len()) as u32
    }

    /// Asks ours for its pick at `now`, with our state before it if `want_state`.
    fn dispatch_ours(&mut self, now: Instant, want_state: bool) -> (String, Dispatch) {
        if self.options.force_kyber_depths
            && let Ours::Kyber(kyber) = &mut self.ours
        {
            kyber.conform_force_depths(&self.kyber_depths);
        }
        self.call(now, |ours, cx| {
            if ours.scheduler().queued() == 0 {
                return (String::new(), Dispatch::Empty);
            }
            let state = if want_state { ours.state(cx) } else { String::new() };
            (state, ours.scheduler().dispatch(cx))
        })
    }

    /// Calls ours with a context at `now` (the table borrowed beside ours).
    fn call<R>(&mut self, now: Instant, f: impl FnOnce(&mut Ours, &Ctx<'_>) -> R) -> R {
        let cx = Ctx {
            now,
            requests: &self.table,
            in_flight: self.in_flight(),
            depth: self.capture.header.queue_depth.max(1),
        };
        f(&mut self.ours, &cx)
    }

    /// The live request (issued or not, as `issued` says) starting at `key`'s sector with its
    /// op, preferring one with the printed priority too (requests of different priorities
    /// can cover the same sectors), then one of the same size, then the oldest.
    fn best_match(
        &self,
        issued: bool,
        key: Identity,
        printed: Option<IoPriority>,
    ) -> Option<usize> {
        let mut best: Option<(u8, usize)> = None;
        for (index, tracked) in self.live.iter().enumerate() {
            let request = &self.table[tracked.id];
            if tracked.issued_ns.is_some() != issued
                || request.start.0 != key.0
                || request.op != key.2
            {
                continue;
            }
            let score =
                2 * u8::from(tracked.printed == printed) + u8::from(request.sector_count == key.1);
            if best.is_none_or(|(top, _)| score > top) {
                best = Some((score, index));
            }
        }
        best.map(|(_, index)| index)
    }

    /// Whether `id` is a pick of ours waiting for its issue (parked, or a run pick): out of
    /// ours, as the kernel's picks are out of its scheduler.
    fn out_of_ours(&self, id: RequestId) -> bool {
        self.parked.as_ref().is_some_and(|(parked, _, _)| *parked == id)
            || self.run_picks.values().any(|picks| picks.iter().any(|(pick, _, _)| *pick == id))
    }

    /// Ours's run picks waiting for their issue, on every CPU (each holds a driver tag).
    fn run_picks_total(&self) -> u32 {
        self.run_picks.values().map(|picks| picks.len() as u32).sum()
    }

    /// Whether the queue-run model applies ([`ConformOptions::queue_runs`]; mq-deadline and
    /// kyber).
    fn queue_runs(&self) -> bool {
        self.options.queue_runs && matches!(self.ours, Ours::MqDeadline(_) | Ours::Kyber(_))
    }

    /// A `block_unplug` on `cpu`: a flush of `requests` requests of `pid` starts; its last
    /// insert runs the queue. A flush on that CPU still under way (an insert the trace did not
    /// show) ran its queue by now.
    fn unplug(&mut self, cpu: u32, pid: u32, requests: u32, time_ns: u64) {
        if !self.queue_runs() {
            return;
        }
        self.latest_ns = self.latest_ns.max(time_ns);
        if self.flushing.remove(&cpu).is_some() {
            self.queue_run(cpu, time_ns);
        }
        if requests > 0 {
            self.flushing.insert(cpu, (pid, requests));
        }
    }

    /// A kblockd run of the hardware queue starts on `cpu` (module docs, "kblockd runs"): with
    /// [`ConformOptions::kblockd_runs`], its first pick is made now, as at a plug flush's run.
    fn kblockd_start(&mut self, cpu: u32, pid: u32, time_ns: u64) {
        self.kblockd_open.insert(cpu, (pid, time_ns, false));
        if let Some(score) = &mut self.kblockd {
            score.runs += 1;
        }
        if !(self.options.kblockd_runs && self.queue_runs()) {
            return;
        }
        self.latest_ns = self.latest_ns.max(time_ns);
        let before = self.run_picks_total() + u32::from(self.parked.is_some());
        let picks = if self.options.kblockd_batch {
            // The run issues the hardware queue's dispatch list (the parked pick) first, then
            // takes the rest from the scheduler (`__blk_mq_sched_dispatch_requests`).
            let mut issues = self.kblockd_run_issues(cpu, pid).max(1);
            if let Some(parked) = self.parked.take() {
                self.run_picks.entry(cpu).or_default().push_front(parked);
                issues -= 1;
            }
            issues
        } else {
            self.options.run_picks_max
        };
        self.queue_run_picks(cpu, time_ns, picks);
        let after = self.run_picks_total() + u32::from(self.parked.is_some());
        if let Some(score) = &mut self.kblockd {
            score.run_start_picks += u64::from(after.saturating_sub(before));
        }
    }

    /// How many requests the kblockd run starting at the current event on `cpu` (kworker
    /// `pid`) issues before its end.
    fn kblockd_run_issues(&self, cpu: u32, pid: u32) -> u32 {
        let mut issues = 0;
        for event in &self.capture.events[self.position + 1..] {
            match event {
                SchedEvent::KblockdEnd { cpu: end_cpu, .. } if *end_cpu == cpu => break,
                SchedEvent::Block(record)
                    if record.point == BlockPoint::Issue
                        && record.cpu == cpu
                        && record.pid == pid =>
                {
                    issues += 1;
                }
                _ => {}
            }
        }
        issues
    }

    /// Whether `record`'s issue was made by a kblockd run: its kworker, during the run.
    fn in_kblockd_run(&self, record: &BlockRecord) -> bool {
        self.kblockd_open.get(&record.cpu).is_some_and(|(pid, _, _)| *pid == record.pid)
    }

    /// Whether a kblockd run was under way on any CPU at `record`'s issue, or ended or starts
    /// within [`ConformOptions::concurrent_issue`] of it.
    fn near_kblockd_run(&self, record: &BlockRecord) -> bool {
        if self.kblockd.is_none() {
            return false;
        }
        let window = self.options.concurrent_issue.as_nanos();
        if !self.kblockd_open.is_empty()
            || self.kblockd_ended.values().any(|&end| record.time_ns.saturating_sub(end) <= window)
        {
            return true;
        }
        let events = &self.capture.events;
        (self.position + 1..events.len())
            .take_while(|&j| events[j].time_ns().saturating_sub(record.time_ns) <= window)
            .any(|j| matches!(events[j], SchedEvent::KblockdStart { .. }))
    }

    /// An insert (or insert merge) of `record`'s task on its CPU while a flush of that task is
    /// under way there: one request of it, and the last runs the queue. Says whether it was.
    fn flushed_one(&mut self, record: &BlockRecord) -> bool {
        let Some((pid, remaining)) = self.flushing.get_mut(&record.cpu) else {
            return false;
        };
        if *pid != record.pid {
            return false;
        }
        *remaining = remaining.saturating_sub(1);
        if *remaining == 0 {
            self.flushing.remove(&record.cpu);
            self.queue_run(record.cpu, record.time_ns);
        }
        true
    }

    /// A queue run on `cpu` (module docs, "queue runs"): with nothing parked, ours is asked up
    /// to [`ConformOptions::run_picks_max`] times while driver tags are free, each pick waiting
    /// for an issue on `cpu`; once the device is full, one more pick is parked
    /// (`__blk_mq_do_dispatch_sched`). With a pick parked the run serves the hardware queue's
    /// dispatch list and asks the scheduler nothing.
    fn queue_run(&mut self, cpu: u32, time_ns: u64) {
        self.queue_run_picks(cpu, time_ns, self.options.run_picks_max);
    }

    /// [`Replay::queue_run`] with at most `picks_max` picks.
    fn queue_run_picks(&mut self, cpu: u32, time_ns: u64, picks_max: u32) {
        if self.parked.is_some() {
            return;
        }
        let depth = self.capture.header.queue_depth.max(1);
        let now = self.now(self.latest_ns);
        for _ in 0..picks_max {
            let full = self.in_flight() + self.run_picks_total() >= depth;
            if full && !self.options.park_when_full {
                return;
            }
            let want_state = self.report.disagreements.len() < self.options.first_disagreements;
            let (state, answer) = self.dispatch_ours(now, want_state);
            let Dispatch::Issue(id) = answer else { return };
            if full {
                self.parked = Some((id, state, time_ns));
                return;
            }
            self.run_picks.entry(cpu).or_default().push_back((id, state, time_ns));
        }
    }

    /// The run pick ours compares with the kernel's issue of `kernel` on `cpu`: the head of a
    /// run's picks that is `kernel` (this CPU's first), else the head of this CPU's, else the
    /// head of the run's that holds `kernel`; `None` when no run pick is waiting there.
    fn take_run_pick(&mut self, cpu: u32, kernel: RequestId) -> Option<(RequestId, String, u64)> {
        let head_is = |picks: &std::collections::VecDeque<(RequestId, String, u64)>| {
            picks.front().is_some_and(|(id, _, _)| *id == kernel)
        };
        let holds = |picks: &std::collections::VecDeque<(RequestId, String, u64)>| {
            picks.iter().any(|(id, _, _)| *id == kernel)
        };
        let from = if self.run_picks.get(&cpu).is_some_and(head_is) {
            cpu
        } else if let Some((&other, _)) = self.run_picks.iter().find(|(_, picks)| head_is(picks)) {
            other
        } else if self.run_picks.get(&cpu).is_some_and(|picks| !picks.is_empty()) {
            cpu
        } else {
            *self.run_picks.iter().find(|(_, picks)| holds(picks))?.0
        };
        let picks = self.run_picks.get_mut(&from)?;
        let pick = picks.pop_front();
        if picks.is_empty() {
            self.run_picks.remove(&from);
        }
        pick
    }

    /// After a mismatch: when the kernel's request is one of ours's waiting picks (a run pick
    /// or the parked one), ours's pick takes its place there (or it is dropped when ours had
    /// none). Says whether it was.
    fn replace_pick(&mut self, kernel: RequestId, ours: Option<RequestId>) -> bool {
        if let Some((id, _, _)) = &mut self.parked
            && *id == kernel
        {
            match ours {
                Some(ours) => *id = ours,
                None => self.parked = None,
            }
            return true;
        }
        for (&cpu, picks) in self.run_picks.iter_mut() {
            let Some(position) = picks.iter().position(|(id, _, _)| *id == kernel) else {
                continue;
            };
            match ours {
                Some(ours) => picks[position].0 = ours,
                None => {
                    picks.remove(position);
                    if picks.is_empty() {
                        self.run_picks.remove(&cpu);
                    }
                }
            }
            return true;
        }
        false
    }

    /// The queued request a kernel issue names (its extent corrected to the event's).
    fn find_queued(&mut self, key: Identity, printed: Option<IoPriority>) -> Option<usize> {
        let index = self.best_match(false, key, printed)?;
        let id = self.live[index].id;
        if self.table[id].sector_count != key.1 && !self.out_of_ours(id) {
            self.table[id].sector_count = key.1;
        }
        Some(index)
    }

    /// The issued request a completion or requeue names.
    fn find_issued(&self, key: Identity, printed: Option<IoPriority>) -> Option<usize> {
        self.best_match(true, key, printed)
    }

    /// The newest queued request of `op` matching `test`.
    fn find_newest_queued(&self, op: Op, test: impl Fn(&Request) -> bool) -> Option<usize> {
        let waiting: BTreeSet<RequestId> = self
            .parked
            .iter()
            .map(|(id, _, _)| *id)
            .chain(self.run_picks.values().flat_map(|picks| picks.iter().map(|(id, _, _)| *id)))
            .collect();
        self.live.iter().rposition(|t| {
            let request = &self.table[t.id];
            t.issued_ns.is_none() && !waiting.contains(&t.id) && request.op == op && test(request)
        })
    }

    fn block(&mut self, record: &BlockRecord) {
        self.latest_ns = self.latest_ns.max(record.time_ns);
        match record.point {
            BlockPoint::GetRq => {
                self.getrq.insert((record.sector, record.op as u8), record.time_ns);
            }
            BlockPoint::Insert => self.insert(record),
            BlockPoint::BioBackMerge | BlockPoint::BioFrontMerge => self.bio_merge(record),
            BlockPoint::Merge => self.request_merge(record),
            BlockPoint::Issue => self.issue(record),
            BlockPoint::Requeue => self.requeue(record),
            BlockPoint::Complete => self.complete(record),
            BlockPoint::BioQueue => {}
        }
        self.last_on_cpu.insert(record.cpu, record.time_ns);
    }

    fn insert(&mut self, record: &BlockRecord) {
        if record.op == Op::Flush || record.sectors == 0 {
            return;
        }
        let now = self.now(self.latest_ns);
        let flags = flags_of(record);
        let bio = Bio {
            op: record.op,
            start: Sector(record.sector),
            sector_count: record.sectors,
            flags,
            priority: our_priority(record.priority),
            process: ProcessId(record.pid),
            tag: BioTag(0),
            // The inserting CPU is the request's software queue (kyber stages per CPU); a CPU
            // number beyond u16 (none exists) would share the last list.
            cpu: u16::try_from(record.cpu).unwrap_or(u16::MAX),
        };
        let created_ns = self
            .getrq
            .remove(&(record.sector, record.op as u8))
            .filter(|&at| at <= record.time_ns)
            .unwrap_or(record.time_ns);
        let mut request = Request::from_bio(&bio, self.now(created_ns));
        let id = loop {
            match self.table.insert(request) {
                Ok(id) => break id,
                Err(back) => {
                    request = back;
                    let capacity = self.table.capacity() * 2;
                    self.table.grow(capacity);
                }
            }
        };
        let key = identity(record);
        let requeued = match self.requeued.iter().position(|&k| k == key) {
            Some(index) => {
                self.requeued.swap_remove(index);
                true
            }
            None => false,
        };
        self.call(now, |ours, cx| ours.scheduler().insert(cx, id));
        self.live.push(Tracked {
            id,
            inserted_ns: record.time_ns,
            insert_cpu: record.cpu,
            pid: record.pid,
            created_ns,
            issued_ns: None,
            requeued,
            printed: record.priority,
            in_ours: true,
        });
        // The last insert of a plug flush runs the queue (queue-run model); any other insert
        // runs it too: with the device full, its pick waits for a tag.
        if !(self.queue_runs() && self.flushed_one(record)) {
            self.park_if_full(now, record.time_ns);
        }
    }

    fn bio_merge(&mut self, record: &BlockRecord) {
        let now = self.now(self.latest_ns);
        let (start, end) = (record.sector, record.sector + u64::from(record.sectors));
        let back = record.point == BlockPoint::BioBackMerge;
        let found = if back {
            self.find_newest_queued(record.op, |request| request.end().0 == start)
        } else {
            self.find_newest_queued(record.op, |request| request.start.0 == end)
        };
        let Some(index) = found else {
            // A plug merge (the request is inserted later with the merged extent), or a merge
            // into a request ours does not hold.
            self.report.unmatched_merges += 1;
            return;
        };
        let tracked = self.live[index].clone();
        let request = &mut self.table[tracked.id];
        request.sector_count += record.sectors;
        let kind = if back {
            MergeKind::Back
        } else {
            let old_start = request.start;
            request.start = Sector(start);
            MergeKind::Front { old_start }
        };
        if tracked.in_ours {
            self.call(now, |ours, cx| ours.scheduler().merged(cx, tracked.id, kind));
        }
    }

    fn request_merge(&mut self, record: &BlockRecord) {
        self.apply_request_merge(record);
        // An insert merge is one request of a plug flush too (it has no insert event).
        if self.queue_runs() {
            self.flushed_one(record);
        }
    }

    fn apply_request_merge(&mut self, record: &BlockRecord) {
        let now = self.now(self.latest_ns);
        let key = identity(record);
        // Ours's waiting picks are out of ours, as the kernel's are out of the scheduler.
        let absorbed = self
            .best_match(false, key, record.priority)
            .filter(|&index| self.table[self.live[index].id].sector_count == key.1)
            .filter(|&index| !self.out_of_ours(self.live[index].id));
        let kept = self.find_newest_queued(record.op, |request| {
            request.end().0 == record.sector && request.start.0 != record.sector
        });
        let Some(kept) = kept else {
            self.report.unmatched_merges += 1;
            return;
        };
        let kept = self.live[kept].clone();
        match absorbed {
            Some(absorbed_index) => {
                // A fusion (`attempt_merge`): the kept request grows first, as in the kernel.
                let gone_id = self.live[absorbed_index].id;
                if !self.may_fuse(kept.id, gone_id) {
                    self.report.unmatched_merges += 1;
                    return;
                }
                let gone = self.live.remove(absorbed_index);
                let gone_request = self.table[gone.id].clone();
                let request = &mut self.table[kept.id];
                request.sector_count += gone_request.sector_count;
                request.created = request.created.min(gone_request.created);
                request.priority = request.priority.better(gone_request.priority);
                if kept.in_ours && gone.in_ours {
                    self.call(now, |ours, cx| {
                        ours.scheduler().requests_merged(cx, kept.id, gone.id)
                    });
                }
                self.table.remove(gone.id);
            }
            None => {
                // An insert merge (`elv_attempt_insert_merge`): the new request never had an
                // insert event and joins the back of `kept`.
                self.table[kept.id].sector_count += record.sectors;
                if kept.in_ours {
                    self.call(now, |ours, cx| {
                        ours.scheduler().merged(cx, kept.id, MergeKind::Back)
                    });
                }
            }
        }
    }

    /// Whether ours can take a fusion of these two requests: the kernel fuses only requests
    /// of one priority (mq-deadline files them in one level) and one bfq queue (one process,
    /// one sync-ness); a capture that says otherwise is not passed on to ours.
    fn may_fuse(&self, kept: RequestId, absorbed: RequestId) -> bool {
        let (a, b) = (&self.table[kept], &self.table[absorbed]);
        match &self.ours {
            Ours::MqDeadline(_) => a.priority.effective_class() == b.priority.effective_class(),
            Ours::Bfq(_) => a.process == b.process && a.is_sync() == b.is_sync(),
            Ours::Kyber(_) => true,
        }
    }

    fn pick(&self, tracked: &Tracked) -> Pick {
        let request = &self.table[tracked.id];
        Pick {
            sector: request.start.0,
            sectors: request.sector_count,
            op: op_name(request.op).to_owned(),
            priority: request.priority.to_string(),
            pid: tracked.pid,
            insert_cpu: tracked.insert_cpu,
            inserted_ns: tracked.inserted_ns,
        }
    }

    fn issue(&mut self, record: &BlockRecord) {
        // A flush under way on this CPU has ended (an insert of it was not shown): its run
        // comes first.
        if self.flushing.remove(&record.cpu).is_some() {
            self.queue_run(record.cpu, record.time_ns);
        }
        let key = identity(record);
        let Some(index) =
            (record.op != Op::Flush).then(|| self.find_queued(key, record.priority)).flatten()
        else {
            self.report.excluded_issues += 1;
            self.bypass_in_flight.push(key);
            self.bypass_issued.push((key, record.time_ns));
            return;
        };
        let kernel = self.live[index].clone();
        if !kernel.in_ours {
            // Cannot happen: every queued request is in ours (a restart re-inserts them).
            self.report.excluded_issues += 1;
            self.live[index].issued_ns = Some(record.time_ns);
            return;
        }
        let now = self.now(self.latest_ns);
        if let Some(depths) = &mut self.depths {
            depths.sample(record.time_ns);
        }
        let in_run = self.in_kblockd_run(record);
        let (first, cascaded) = (self.report.first_disagreements, self.report.cascaded);
        self.decide(record, index, kernel, now);
        if in_run {
            if let Some((_, _, issued)) = self.kblockd_open.get_mut(&record.cpu) {
                *issued = true;
            }
            let new_first = self.report.first_disagreements - first;
            let agreed = new_first == 0 && self.report.cascaded == cascaded;
            if let Some(score) = &mut self.kblockd {
                score.decisions += 1;
                score.identical += u64::from(agreed);
                score.first_disagreements_in_runs += new_first;
            }
        }
        self.park_if_full(now, record.time_ns);
        self.last_issue_ns = record.time_ns;
    }

    /// The position of an issue of `ours` on another CPU than `record`'s, within
    /// [`ConformOptions::concurrent_issue`] after it and not yet replayed.
    fn concurrent_issue_of(&self, ours: RequestId, record: &BlockRecord) -> Option<usize> {
        let request = &self.table[ours];
        let key = (request.start.0, request.sector_count, request.op);
        let window = self.options.concurrent_issue.as_nanos();
        let events = &self.capture.events;
        (self.position + 1..events.len())
            .take_while(|&j| events[j].time_ns().saturating_sub(record.time_ns) <= window)
            .find(|&j| match &events[j] {
                SchedEvent::Block(other) => {
                    other.point == BlockPoint::Issue
                        && other.cpu != record.cpu
                        && identity(other) == key
                        && !self.consumed.contains(&j)
                }
                _ => false,
            })
    }

    /// While the device is full and nothing is parked, a queue run (the rest of the run that
    /// issued the request that filled it, or the run an insert starts) picks a request and,
    /// finding no driver tag, parks it on the hardware queue's dispatch list until a tag frees
    /// (`__blk_mq_do_dispatch_sched`: "if we cannot get tag for the request, stop
    /// dequeueing"); later runs find the dispatch list busy and ask the scheduler nothing. Ours
    /// picks now too.
    fn park_if_full(&mut self, now: Instant, time_ns: u64) {
        let depth = self.capture.header.queue_depth.max(1);
        let held = self.in_flight() + self.run_picks_total();
        if !self.options.park_when_full || self.parked.is_some() || held < depth {
            return;
        }
        let want_state = self.report.disagreements.len() < self.options.first_disagreements;
        let (state, answer) = self.dispatch_ours(now, want_state);
        if let Dispatch::Issue(id) = answer {
            self.parked = Some((id, state, time_ns));
        }
    }

    /// Puts the kernel's issue of `self.live[index]` to ours (or compares it with ours's
    /// parked pick) and resynchronises on a mismatch.
    fn decide(&mut self, record: &BlockRecord, index: usize, kernel: Tracked, now: Instant) {
        let decision = self.report.decisions;
        self.report.decisions += 1;
        let want_state = self.report.disagreements.len() < self.options.first_disagreements;
        // A run pick of ours first (queue-run model), then the parked pick, then ours asked now.
        let run_pick = self.take_run_pick(record.cpu, kernel.id);
        let from_run = run_pick.is_some();
        let parked = match run_pick {
            Some(pick) => Some(pick),
            None => self.parked.take(),
        };
        let parked_at = parked.as_ref().map(|(_, _, at)| *at);
        let (state, answer) = match parked {
            Some((id, state, _)) => (state, Dispatch::Issue(id)),
            None => self.dispatch_ours(now, want_state),
        };
        let ours_id = match answer {
            Dispatch::Issue(id) if id == kernel.id => {
                self.report.identical += 1;
                self.chain_start = None;
                self.live[index].issued_ns = Some(record.time_ns);
                return;
            }
            Dispatch::Issue(id) => Some(id),
            _ => None,
        };
        if let Some(ours) = ours_id
            && !from_run
            && let Some(position) = self.concurrent_issue_of(ours, record)
        {
            // Ours is the kernel's other pick of a concurrent pair: count it as that issue's
            // decision, made first, then put the kernel's request to ours again.
            self.consumed.insert(position);
            self.report.identical += 1;
            self.report.reordered_issues += 1;
            self.chain_start = None;
            let at = self.capture.events[position].time_ns();
            if let Some(tracked) = self.live.iter_mut().find(|t| t.id == ours) {
                tracked.issued_ns = Some(at);
            }
            return self.decide(record, index, kernel, now);
        }
        // A mismatch: classify it, then resynchronise.
        let ours_index = ours_id.and_then(|id| self.live.iter().position(|t| t.id == id));
        let ours_tracked = ours_index.map(|i| self.live[i].clone());
        let cascaded = match self.chain_start {
            Some(start) if decision - start <= self.options.cascade_window => true,
            _ => {
                self.chain_start = Some(decision);
                false
            }
        };
        let cause = self.classify(now, record, parked_at, &kernel, ours_tracked.as_ref(), answer);
        if cascaded {
            self.report.cascaded += 1;
        } else {
            self.report.first_disagreements += 1;
            *self.report.causes.entry(cause).or_default() += 1;
            if self.near_kblockd_run(record)
                && let Some(score) = &mut self.kblockd
            {
                score.first_disagreements_near_runs += 1;
            }
        }
        if want_state {
            let disagreement = Disagreement {
                decision,
                time_ns: record.time_ns,
                jiffy: self.jiffy(record.time_ns),
                kernel: self.pick(&kernel),
                ours: ours_tracked.as_ref().map(|t| self.pick(t)),
                our_answer: match answer {
                    Dispatch::Issue(_) => "issue".to_owned(),
                    Dispatch::Idle { until } => format!(
                        "idle for {:.3} ms",
                        until.as_nanos().saturating_sub(now.as_nanos()) as f64 / 1e6
                    ),
                    Dispatch::Throttled => "throttled".to_owned(),
                    Dispatch::Empty => "empty".to_owned(),
                },
                cause,
                cascaded,
                our_state: state,
            };
            self.report.disagreements.push(disagreement);
        }
        let resynced = self.replace_pick(kernel.id, ours_id)
            || self.call(now, |ours, cx| ours.scheduler().dispatch_request(cx, kernel.id, ours_id));
        self.live[index].issued_ns = Some(record.time_ns);
        if !resynced {
            self.restart(now);
        }
    }

    /// Replaces ours by a fresh instance when it could not resynchronise: the requests the
    /// kernel still holds queued are inserted into it again, in their insertion order, at
    /// `now`; those at the device stay unknown to it (their completions are not passed on).
    fn restart(&mut self, now: Instant) {
        let header = &self.capture.header;
        // The tunables were accepted when the replay started; they are again.
        let Ok(fresh) = build(header) else { return };
        self.ours = fresh;
        self.report.restarts += 1;
        self.run_picks.clear();
        self.chain_start = None;
        let queued: Vec<RequestId> = self
            .live
            .iter_mut()
            .filter_map(|tracked| {
                tracked.in_ours = tracked.issued_ns.is_none();
                tracked.in_ours.then_some(tracked.id)
            })
            .collect();
        for id in queued {
            self.call(now, |ours, cx| ours.scheduler().insert(cx, id));
        }
    }

    /// The cause of a mismatch (see [`Cause`]), from the two picks and our state after our
    /// answer.
    fn classify(
        &self,
        now: Instant,
        record: &BlockRecord,
        parked_at: Option<u64>,
        kernel: &Tracked,
        ours: Option<&Tracked>,
        answer: Dispatch,
    ) -> Cause {
        if kernel.requeued {
            return Cause::AtHeadRequeue;
        }
        // Issued by a kblockd run (its start, hence the earliest its pick can have been made,
        // is in the capture): its picks are the run's, timed by nothing the trace shows.
        if self.in_kblockd_run(record) {
            return Cause::KblockdRun;
        }
        // The kernel picked before the issue event: before ours's pick arrived from another
        // CPU (it arrived after the issuing CPU's previous event), or after our parked pick
        // (the kernel's arrived later than the run we parked at).
        let previous_on_cpu = self.last_on_cpu.get(&record.cpu).copied().unwrap_or(0);
        let raced = match parked_at {
            Some(at) => kernel.inserted_ns > at,
            None => {
                ours.is_some_and(|o| o.insert_cpu != record.cpu && o.inserted_ns > previous_on_cpu)
            }
        };
        if raced {
            return Cause::PickTime;
        }
        if self.near_kblockd_run(record) {
            return Cause::KblockdRun;
        }
        let request = &self.table[kernel.id];
        match &self.ours {
            Ours::MqDeadline(scheduler) => {
                let level = |r: &Request| r.priority.effective_class();
                let other_level = ours.is_none_or(|o| level(&self.table[o.id]) != level(request));
                if other_level {
                    return Cause::PriorityThrottleRerun;
                }
                // A FIFO deadline or aging cut-off within one jiffy of now.
                let jiffy_ns = 1_000_000_000 / u64::from(self.capture.header.hz);
                let near = |tracked: &Tracked| {
                    let r = &self.table[tracked.id];
                    let expire = match r.op {
                        Op::Read => scheduler.tunable("read_expire"),
                        _ => scheduler.tunable("write_expire"),
                    };
                    let aging = scheduler.tunable("prio_aging_expire");
                    let inserted = self.now(tracked.inserted_ns).as_nanos();
                    [expire, aging].into_iter().flatten().any(|millis| {
                        let due = inserted + millis as u64 * 1_000_000;
                        due.abs_diff(now.as_nanos()) <= jiffy_ns
                    })
                };
                if near(kernel) || ours.is_some_and(near) {
                    return Cause::JiffyBoundary;
                }
                Cause::Unknown
            }
            Ours::Kyber(scheduler) => {
                let domain = Domain::of(request.op);
                let ours_domain = ours.map(|o| Domain::of(self.table[o.id].op));
                if ours_domain != Some(domain) {
                    // The kernel could not serve ours's domain: out of tokens there (its
                    // `kyber_throttled` since the previous issue), or ours out of tokens.
                    let previous_issue = self.last_issue_ns;
                    let throttled = |d: Domain| {
                        self.kyber_throttled[domain_index(d)].is_some_and(|at| at >= previous_issue)
                    };
                    let ours_throttled = matches!(answer, Dispatch::Throttled)
                        || scheduler.tokens_in_use(domain) >= scheduler.depth(domain);
                    if ours_throttled || ours_domain.is_some_and(throttled) {
                        return Cause::KyberTokenWake;
                    }
                    return Cause::Unknown;
                }
                if ours.is_some_and(|o| o.insert_cpu != kernel.insert_cpu) {
                    return Cause::PerCpuStaging;
                }
                Cause::Unknown
            }
            Ours::Bfq(scheduler) => {
                if ours.is_none() && matches!(answer, Dispatch::Throttled | Dispatch::Idle { .. }) {
                    return Cause::BfqIdling;
                }
                // bfq block (wt-bfqll25): by queue, not process (stably merged queues hold
                // the requests of several processes).
                if ours.is_some_and(|o| !scheduler.same_queue(o.id, kernel.id)) {
                    return Cause::BfqQueueChoice;
                }
                Cause::Unknown
            }
        }
    }

    fn requeue(&mut self, record: &BlockRecord) {
        self.report.requeues += 1;
        let key = identity(record);
        if let Some(index) = self.bypass_in_flight.iter().position(|&k| k == key) {
            self.bypass_in_flight.swap_remove(index);
            if let Some(issued) = self.bypass_issued.iter().position(|&(k, _)| k == key) {
                self.bypass_issued.swap_remove(issued);
            }
            return;
        }
        // The request leaves ours as if completed (its tag and token are freed); its
        // re-insert is a new request, flagged as requeued.
        if self.finish(record) {
            self.requeued.push(key);
        }
    }

    fn complete(&mut self, record: &BlockRecord) {
        let key = identity(record);
        if self.finish(record) {
            return;
        }
        // wt-bfqw25 (issue 25): a flush is issued at sector 0 but completes at sector -1
        // (`blk_rq_trace_sector` of a request without data), so its identity differs between
        // the two events; matched by its identity only, it stayed in flight for the rest of
        // the replay, and bfq never saw an empty device (no inject-limit baseline, no hw_tag
        // sample rules as the kernel's). A flush's completion ends the oldest flush issued.
        let key = match self.bypass_in_flight.iter().find(|k| **k == key) {
            None if record.op == Op::Flush => self
                .bypass_in_flight
                .iter()
                .find(|k| k.2 == Op::Flush && k.1 == record.sectors)
                .copied()
                .unwrap_or(key),
            _ => key,
        };
        if let Some(index) = self.bypass_in_flight.iter().position(|&k| k == key) {
            self.bypass_in_flight.swap_remove(index);
        }
        let issued = self.bypass_issued.iter().position(|&(k, _)| k == key);
        let issued_ns = issued.map(|index| self.bypass_issued.swap_remove(index).1);
        if let Some(depths) = &mut self.depths
            && record.op != Op::Flush
        {
            // A request that bypassed the scheduler still went through kyber's
            // `completed_request` when it is a read, write or discard (`RQF_USE_SCHED` is set
            // at allocation for every op but REQ_OP_FLUSH and passthrough): the original
            // request of a data-less preflush completes as a write of 0 sectors. Its total
            // latency counts from its `block_getrq`; its I/O latency from its own issue, and
            // without one (the flush machinery issued a separate flush request) from
            // `io_start_time_ns` = 0 (`blk_mq_rq_ctx_init`), far beyond any target.
            // Its `block_getrq` printed the preflush (`F`), its completion the write.
            let created_ns = self.getrq.remove(&(record.sector, record.op as u8)).or_else(|| {
                (record.sectors == 0)
                    .then(|| self.getrq.remove(&(record.sector, Op::Flush as u8)))
                    .flatten()
            });
            match created_ns.filter(|&at| at <= record.time_ns) {
                Some(created_ns) => depths.completion(
                    record.time_ns,
                    record.op,
                    issued_ns.map_or(u64::MAX / 2, |at| record.time_ns.saturating_sub(at)),
                    record.time_ns - created_ns,
                ),
                None => depths.unfed(),
            }
        }
    }

    /// Completes the issued request of `record` in ours; says whether there was one.
    fn finish(&mut self, record: &BlockRecord) -> bool {
        let Some(index) = self.find_issued(identity(record), record.priority) else {
            return false;
        };
        let tracked = self.live.remove(index);
        let now = self.now(self.latest_ns);
        if let Some(depths) = &mut self.depths
            && record.point == BlockPoint::Complete
        {
            // `kyber_completed_request` runs for completions, not for requeues.
            let issued_ns = tracked.issued_ns.unwrap_or(record.time_ns);
            depths.completion(
                record.time_ns,
                record.op,
                record.time_ns.saturating_sub(issued_ns),
                record.time_ns.saturating_sub(tracked.created_ns),
            );
        }
        if tracked.in_ours {
            let issued_ns = tracked.issued_ns.unwrap_or(record.time_ns);
            let done = Completion {
                id: tracked.id,
                issued_at: self.now(issued_ns),
                device_time: Duration::from_nanos(record.time_ns.saturating_sub(issued_ns)),
                total_time: Duration::from_nanos(record.time_ns.saturating_sub(tracked.created_ns)),
            };
            self.call(now, |ours, cx| ours.scheduler().complete(cx, &done));
        }
        self.table.remove(tracked.id);
        true
    }
}
