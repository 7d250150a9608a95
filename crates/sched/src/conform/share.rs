//! Share of service (issue 25's bfq goal: "each process's share of service over a 10 s run
//! within 2 % of the kernel's"): a **closed-loop** replay of a kernel capture into ours.
//!
//! The decision replay ([`super::replay`]) resynchronises ours to every kernel choice, so it
//! says how often ours would have picked the same request, not how service would have been
//! shared had ours been in charge. Here ours is in charge ([`share_replay`]):
//!
//! * **The kernel side** is read from the capture by following each request from its insert
//!   (`block_rq_insert`, whose pid is the process the request is charged to) through bio
//!   merges (`block_bio_backmerge`/`frontmerge` grow it), request merges (`block_rq_merge`
//!   folds the absorbed request into the one ending where it starts), its issue and its
//!   completion. Each process's share is its sectors completed (the `block_rq_complete`
//!   extents) over all processes', over the whole capture and per window
//!   ([`ShareOptions::window`], by completion time). Flushes without data and requests never
//!   inserted (passthrough) belong to no process and are left out on both sides.
//! * **The processes**: each pid that inserted requests becomes a closed-loop issuer (an
//!   io_uring worker `iou-wrk-TID` counts as TID, whose I/O context it shares). Its
//!   requests are its recorded ones (after merges: the extents the kernel issued), in their
//!   insert order, each with its operation, flags and the I/O priority its insert printed. It
//!   keeps as many requests outstanding (inserted and not completed) as the kernel showed for
//!   it ([`ShareOptions::depth`]: the largest count the capture shows by default, which for
//!   an fio job is its `iodepth`), starting at its first insert in the capture. A completion
//!   frees a slot, and the process's next request arrives its **think time** later: the
//!   time the kernel's capture shows between that request's insert and its process's latest
//!   completion before it (fio's reap-and-submit, and the CPU it waited for). On a RAM-backed
//!   device this is most of a request's cycle (a request is at the device for tens of µs),
//!   so without it ours's processes would cycle several times faster than the kernel's, and
//!   the scheduler would see deeper queues than the kernel's did. A process that runs
//!   out of recorded requests (ours served it more than the kernel did) starts its list again
//!   ([`ProcessShare::wraps`] counts it), so ours's shares are never capped by the kernel's.
//! * **Ours** is built as the decision replay builds it (same tunables from the capture's
//!   `iosched/` files, `nr_requests`, the capture's `HZ`), fed the simulated time in ns plus
//!   [`ShareOptions::clock_offset`] (bfq keeps ns throughout; the offset puts the run well
//!   after boot, as on the capturing kernel). It decides what to dispatch whenever the queue
//!   runs (after every insert, completion and idle timer), with at most the capture's driver
//!   tags (`queue_depth`) at the device; [`Dispatch::Idle`] arms a timer at its `until`.
//! * **Plugs**: a process submits a batch of requests under one plug (io_uring's
//!   `io_submit_sqes` → `blk_start_plug`), and blk-mq inserts the whole batch into the
//!   scheduler before it runs the queue once (`blk_mq_flush_plug_list`): the trace shows the
//!   batch's inserts back to back, then its issues. A request the kernel inserted in one plug
//!   flush with its process's next one ([`ShareOptions::plug`]) does not run ours's queue if
//!   that next request arrives within [`PLUG_GAP_NS`] here too; the last of the batch does.
//!   Without this, ours dispatched each request of a batch as it came, and the queue in
//!   service (empty between two of its own arrivals) idled or let another queue in between:
//!   4–6 issues of one process in a row where the kernel's batches gave 17–40.
//! * **Service time**: each request takes at the device its own kernel issue→complete time
//!   from the capture. *Why its own and not a per-direction distribution*: the time belongs
//!   to the extent and direction the kernel served, the loop device's cost per request is
//!   what it is whatever order the scheduler picks, and a request's own time needs no random
//!   stream (deterministic without a seed). Requests the capture never saw complete (still
//!   at the device or queued at its end) take the median of the capture's service times of
//!   their direction; a wrapped list's requests keep their own times.
//! * **Stalls** ([`ShareOptions::stalls`]): the device's time is not all the request's. On
//!   a RAM-backed loop device the I/O is the loop worker's CPU time, and on a machine whose
//!   CPUs are shared the worker waits: the captures of issue 25 have 560–683 stretches of
//!   over 1 ms (2.2–2.8 s of 10 s) in which requests were at the device and none completed,
//!   ended by a burst of completions of everything issued before. A request issued just
//!   before such a stall carries the whole stall in its recorded time, which ours, serving
//!   it at another moment, would charge it wherever it falls. So the stalls are read from
//!   the capture ([`stalls_of`]) and stay where they were in time: a request takes its
//!   recorded time less the stalls within it, counted only outside the stalls
//!   ([`completion_after`]), and nothing completes inside one. Processes keep arriving
//!   during a stall (the captures show inserts and issues within them, 2–6 % of all).
//! * The run lasts the capture's length (its latest event's time); ours's shares are sectors
//!   completed by then, over the whole run and per window, compared with the kernel's in
//!   percentage points.
//!
//! Deterministic: no random stream, ties broken by event order.
//!
//! # Deviations
//!
//! * A think time is taken from the process's latest completion, which is the one that freed
//!   the slot only when the process reaps one completion at a time; a process that reaps
//!   several at once (io_uring batches) has its later requests' think times measured from
//!   the last of them, as here.
//! * The device is a set of `queue_depth` independent servers, each request taking its
//!   recorded time less the capture's stalls within it: a request ours serves at another
//!   moment (with other requests beside it) than the kernel did still takes the time the
//!   kernel's context gave it outside the stalls. What stalled the device (which CPU, which
//!   thread waited) is not in any block tracepoint; the stalls are where the capture shows
//!   them, whatever ours had dispatched.
//! * When ours answered [`Dispatch::Throttled`] the queue sleeps as
//!   [`elevator_core::BlkMqQueue`]'s does: until the next insert, a delayed run
//!   `RUN_DELAY_MS` later (at the capture's `HZ`), or a completion after which
//!   [`elevator_core::Scheduler::completion_reruns`] says the scheduler woke it; otherwise
//!   the queue runs after every completion (a driver tag freed restarts it). A
//!   hardware-queue run that the kernel makes for other reasons is not modelled.
//! * Requests are not merged in ours: the recorded requests are the merged ones.
//! * A requeued request stays its first inserter's (its re-insert, often from a kworker, is
//!   not a new request).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;

use elevator_core::{
    Bio, BioTag, Completion, Ctx, Dispatch, Duration, Instant, IoClass, IoPriority, Op, ProcessId,
    Request, RequestFlags, RequestId, RequestTable, Sector,
};
use elevator_trace::sched_log::{BlockPoint, BlockRecord, SchedCapture, SchedEvent};
use serde::Serialize;

use super::{ConformError, build, flags_of, our_priority};

/// How each process's outstanding-request depth is taken from the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DepthRule {
    /// The largest number of its requests inserted and not completed at once (an fio job's
    /// `iodepth`, when the kernel ever let it fill).
    Max,
    /// The median of that number at each of its inserts.
    Median,
}

/// How a share replay runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShareOptions {
    /// The window of the per-window shares.
    pub window: Duration,
    /// Each process's depth.
    pub depth: DepthRule,
    /// Added to every time ours is fed (the decision replay's default: well after boot).
    pub clock_offset: Duration,
    /// The device's stalls (stretches with requests at the device and none completing, over
    /// 1 ms) stay in the capture's time line: a request takes at ours's device
    /// its own time outside the stalls, and no request completes inside one; `false` gives
    /// each request its whole recorded issue→complete time, wherever ours issues it.
    pub stalls: bool,
    /// Requests the kernel inserted in one plug flush reach ours together, the queue run once
    /// after the last (module docs, "Plugs"); `false` runs it after every insert (the model
    /// before issue 25's plug finding, kept to measure what the plug changes).
    pub plug: bool,
}

impl Default for ShareOptions {
    fn default() -> ShareOptions {
        ShareOptions {
            window: Duration::from_secs(1),
            depth: DepthRule::Max,
            clock_offset: super::ConformOptions::default().clock_offset,
            plug: true,
            stalls: true,
        }
    }
}

/// One process's share, the kernel's and ours.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcessShare {
    /// Its pid (of its insert events).
    pub pid: u32,
    /// Its command name, when the capture printed one.
    pub command: Option<String>,
    /// The I/O priority most of its requests printed (`be/0`, `none` for none).
    pub priority: String,
    /// bfq's weight for that priority (`bfq_ioprio_to_weight`: (8 − level) × 10, the idle
    /// class at level 7); `None` for other schedulers.
    pub weight: Option<u64>,
    /// The depth it was replayed at.
    pub depth: u32,
    /// Its requests in the capture.
    pub requests: u64,
    /// Sectors the kernel completed for it.
    pub kernel_sectors: u64,
    /// Sectors ours completed for it.
    pub ours_sectors: u64,
    /// Its share of the kernel's completed sectors, 0..=1.
    pub kernel_share: f64,
    /// Its share of ours's, 0..=1.
    pub ours_share: f64,
    /// Ours − kernel, percentage points.
    pub difference_pp: f64,
    /// The largest |ours − kernel| over the full windows, percentage points (0 without any).
    pub max_window_difference_pp: f64,
    /// How many times ours went through its whole list and started it again.
    pub wraps: u64,
}

/// One window's shares, in [`ShareReport::processes`] order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowShare {
    /// The window's start, ns since the capture's first event.
    pub start_ns: u64,
    /// The kernel's shares.
    pub kernel: Vec<f64>,
    /// Ours's shares.
    pub ours: Vec<f64>,
}

/// What a share replay reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShareReport {
    /// The scheduler.
    pub scheduler: String,
    /// The capture's tunables, `name=value`.
    pub tunables: Vec<String>,
    /// The run's length (the capture's), ns.
    pub duration_ns: u64,
    /// The window, ns.
    pub window_ns: u64,
    /// The driver tags at the device (the capture's `queue_depth`).
    pub tags: u32,
    /// How the depths were taken.
    pub depth_rule: DepthRule,
    /// Per process, by pid.
    pub processes: Vec<ProcessShare>,
    /// The full windows.
    pub windows: Vec<WindowShare>,
    /// The largest |difference| over the processes, whole run, percentage points.
    pub max_difference_pp: f64,
    /// The largest |difference| over processes and full windows, percentage points.
    pub max_window_difference_pp: f64,
    /// Requests ours dispatched.
    pub ours_dispatched: u64,
    /// Sectors ours completed within the run / the kernel's (throughput ratio).
    pub throughput_ratio: f64,
    /// The kernel's issues of requests of these processes, over the runs of consecutive
    /// issues of one process: how many requests a process gets in a row (bfq: roughly a slot
    /// of the queue in service, shorter where it injects or does not idle).
    pub kernel_issues_per_run: f64,
    /// The same of ours's dispatches.
    pub ours_issues_per_run: f64,
    /// Ours's own counters at the end of the run (`Scheduler::counters`: for bfq its
    /// raisings, expirations, idle waits), the evidence for a difference.
    pub ours_counters: BTreeMap<String, u64>,
}

impl ShareReport {
    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serialises")
    }
}

impl fmt::Display for ShareReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "share of service ({} closed-loop over {:.2} s, {} windows of {:.2} s): max \
             difference {:.2} pp over the run, {:.2} pp in a window; ours completed {:.3} × \
             the kernel's sectors; issues per run of one process: kernel {:.1}, ours {:.1}",
            self.scheduler,
            self.duration_ns as f64 / 1e9,
            self.windows.len(),
            self.window_ns as f64 / 1e9,
            self.max_difference_pp,
            self.max_window_difference_pp,
            self.throughput_ratio,
            self.kernel_issues_per_run,
            self.ours_issues_per_run
        )?;
        for process in &self.processes {
            let weight = process.weight.map(|w| format!(" weight {w}")).unwrap_or_default();
            writeln!(
                f,
                "  pid {} {} {}{weight} depth {}: kernel {:.2} %, ours {:.2} % ({:+.2} pp; \
                 windows within {:.2} pp){}",
                process.pid,
                process.command.as_deref().unwrap_or("-"),
                process.priority,
                process.depth,
                process.kernel_share * 100.0,
                process.ours_share * 100.0,
                process.difference_pp,
                process.max_window_difference_pp,
                if process.wraps > 0 {
                    format!(", list wrapped {}×", process.wraps)
                } else {
                    String::new()
                }
            )?;
        }
        let percents = |shares: &[f64]| {
            shares.iter().map(|share| format!("{:.1}", share * 100.0)).collect::<Vec<_>>().join("/")
        };
        if !self.ours_counters.is_empty() {
            let counters: Vec<String> =
                self.ours_counters.iter().map(|(name, value)| format!("{name}={value}")).collect();
            writeln!(f, "  ours: {}", counters.join(" "))?;
        }
        for window in &self.windows {
            writeln!(
                f,
                "  window {:.1} s: kernel {} %, ours {} %",
                window.start_ns as f64 / 1e9,
                percents(&window.kernel),
                percents(&window.ours)
            )?;
        }
        Ok(())
    }
}

/// One recorded request of a process.
#[derive(Clone, Debug)]
struct Recorded {
    sector: u64,
    sectors: u32,
    op: Op,
    flags: RequestFlags,
    printed: Option<IoPriority>,
    /// Its kernel issue→complete time, when the capture has both.
    service_ns: Option<u64>,
    /// That time less the device's stalls within it (the whole time without stalls).
    own_ns: Option<u64>,
    /// Its insert's time after its process's latest completion before it (the process's
    /// reap-and-submit time); `None` before the process's first completion.
    think_ns: Option<u64>,
    /// The kernel inserted its process's next request in the same plug flush
    /// ([`plugged_with_next`]): blk-mq ran the queue once after both, not between them.
    plugged: bool,
}

/// Inserts of one task this close together can be one plug flush (`blk_mq_flush_plug_list`
/// inserts a plug's requests back to back, under a µs apart on the captures of issue 25; the
/// model's bound leaves room for a submitter preempted mid-flush).
const PLUG_GAP_NS: u64 = 50_000;

/// Whether an insert and the next insert of the same task were one plug flush: nothing else
/// of that task (a bio queued, a request allocated or issued) came between them, and they are
/// at most [`PLUG_GAP_NS`] apart. io_uring submits a batch of SQEs under a plug
/// (`io_submit_sqes` → `blk_start_plug` for more than `IO_PLUG_THRESHOLD` = 2 of them), and
/// `blk_mq_flush_plug_list` → `blk_mq_dispatch_plug_list` inserts the whole list into the
/// scheduler (`insert_requests`) before it runs the hardware queue once; the trace shows each
/// bio's `block_bio_queue`/`block_getrq` first, then the inserts back to back, then the issues.
/// Without a plug each request's insert is followed by its issue (the queue run in the
/// submitter's context) or by the next bio's `block_bio_queue`.
fn plugged_with_next(previous_ns: u64, next_ns: u64, between: bool) -> bool {
    !between && next_ns.saturating_sub(previous_ns) <= PLUG_GAP_NS
}

/// A request followed through the capture (kernel side).
#[derive(Clone, Debug)]
struct Followed {
    process: usize,
    record: Recorded,
    issued_ns: Option<u64>,
    /// Requeued and not yet re-inserted.
    requeued: bool,
}

/// One process of the capture.
#[derive(Clone, Debug, Default)]
struct Process {
    pid: u32,
    command: Option<String>,
    first_insert_ns: u64,
    /// Its requests in insert order (index into `requests` of the kernel side).
    requests: Vec<usize>,
    /// Its outstanding count at each of its inserts (after the insert).
    depth_samples: Vec<u32>,
    outstanding: u32,
    /// Its latest completion so far (kernel side).
    last_complete_ns: Option<u64>,
    kernel_sectors: u64,
    kernel_window_sectors: Vec<u64>,
}

/// The kernel side of a capture.
struct KernelSide {
    processes: Vec<Process>,
    /// Every recorded request, in insert order.
    requests: Vec<Recorded>,
    duration_ns: u64,
    /// Issues of followed requests, and runs of consecutive issues of one process.
    issues_and_runs: (u64, u64),
    /// The median service time per direction (read, write), ns (of the times less stalls).
    median_service_ns: [u64; 2],
    /// The device's stalls, `[start, end)` in ns, in order and apart.
    stalls: Vec<(u64, u64)>,
}

/// A stretch this long with requests at the device and none completing is a stall: a
/// value of the replay's model, not the kernel's, measured from the captures of issue 25,
/// where a request's issue→complete time has its median at 50–205 µs and its p90 at
/// 0.14–0.45 ms, so 1 ms without a completion is the loop worker off its CPU, not service.
const STALL_MIN_NS: u64 = 1_000_000;

/// The device's stalls in a capture, from `(completed, issued)` times of its followed
/// requests and the times of all its completions (`every_completion`, sorted; requests issued
/// before the capture began complete too): a followed completion more than [`STALL_MIN_NS`]
/// after both the device's previous completion and its own request's issue ends a stall that
/// began at the later of the two — the device held that request all along and finished
/// nothing. On a RAM-backed loop device the device's time is
/// the loop worker's CPU time: on the captures of issue 25 (two CPUs shared with other
/// builds) completions came in bursts, 560–683 stalls in 10 s (2.2–2.8 s in all), whatever
/// bfq had dispatched, and requests issued just before a stall took its whole length.
fn stalls_of(completions: &mut [(u64, u64)], every_completion: &[u64]) -> Vec<(u64, u64)> {
    completions.sort_unstable();
    let mut stalls: Vec<(u64, u64)> = Vec::new();
    for &(completed, issued) in completions.iter() {
        let before = every_completion.partition_point(|&t| t < completed);
        let previous = before.checked_sub(1).map(|i| every_completion[i]);
        let start = previous.map_or(issued, |p| p.max(issued));
        if completed.saturating_sub(start) > STALL_MIN_NS
            && stalls.last().is_none_or(|&(_, end)| end <= start)
        {
            stalls.push((start, completed));
        }
    }
    stalls
}

/// How much of `[from, to)` lies in `stalls`.
fn stalled_within(stalls: &[(u64, u64)], from: u64, to: u64) -> u64 {
    let first = stalls.partition_point(|&(_, end)| end <= from);
    stalls[first..]
        .iter()
        .take_while(|&&(start, _)| start < to)
        .map(|&(start, end)| end.min(to).saturating_sub(start.max(from)))
        .sum()
}

/// When a request issued at `issued` and needing `own` ns of the device completes, the
/// device frozen during `stalls`.
fn completion_after(stalls: &[(u64, u64)], issued: u64, own: u64) -> u64 {
    let mut now = issued;
    let mut left = own;
    let mut next = stalls.partition_point(|&(_, end)| end <= now);
    loop {
        match stalls.get(next) {
            Some(&(start, end)) if start <= now => {
                now = end;
                next += 1;
            }
            Some(&(start, end)) if start < now + left => {
                left -= start - now;
                now = end;
                next += 1;
            }
            _ => return now + left,
        }
    }
}

fn direction_index(op: Op) -> usize {
    usize::from(op != Op::Read)
}

/// The process a request is charged to: its insert's pid, except that an io_uring worker
/// (`iou-wrk-TID`, the name io-wq gives the threads that submit for task TID when its inline
/// submission would block) submits for TID, sharing its I/O context and so its bfq queue
/// (io_uring/io-wq.c `io_wq_worker`: `snprintf(buf, sizeof(buf), "iou-wrk-%d", wq->task->pid)`).
fn submitter(record: &BlockRecord) -> u32 {
    record
        .command
        .as_deref()
        .and_then(|command| command.strip_prefix("iou-wrk-"))
        .and_then(|tid| tid.parse().ok())
        .unwrap_or(record.pid)
}

/// Follows every request of the capture (module docs, "the kernel side").
fn kernel_side(capture: &SchedCapture, window_ns: u64, with_stalls: bool) -> KernelSide {
    // The latest event, not the last: a capture's times may step back (`-N` deltas).
    let duration_ns = capture.events.iter().map(SchedEvent::time_ns).max().unwrap_or(0);
    let windows = (duration_ns / window_ns.max(1)) as usize + 1;
    let mut processes: Vec<Process> = Vec::new();
    let mut by_pid: BTreeMap<u32, usize> = BTreeMap::new();
    let mut requests: Vec<Recorded> = Vec::new();
    // Live requests: index into `requests`, with their state.
    let mut live: Vec<(usize, Followed)> = Vec::new();
    // (completed, issued, index into `requests`) of every followed completion.
    let mut completions: Vec<(u64, u64, usize)> = Vec::new();
    // The time of every completion of a request with data, followed or not.
    let mut every_completion: Vec<u64> = Vec::new();
    let mut issues_and_runs = (0u64, 0u64);
    let mut last_issuer: Option<usize> = None;
    // Per task (the pid of the events, not the submitter it is charged to): its latest insert
    // (the index into `requests` and the record) and whether another event of the task came
    // after it.
    let mut last_insert: BTreeMap<u32, (usize, u64, bool)> = BTreeMap::new();
    // The live request at `key`, queued or issued as asked, preferring the printed priority
    // and then the size (requests of different priorities can cover the same sectors).
    let find = |live: &[(usize, Followed)], issued: bool, record: &BlockRecord| {
        let mut best: Option<(u8, usize)> = None;
        for (index, (_, followed)) in live.iter().enumerate() {
            let r = &followed.record;
            if followed.issued_ns.is_some() != issued
                || followed.requeued
                || r.sector != record.sector
                || r.op != record.op
            {
                continue;
            }
            let score =
                2 * u8::from(r.printed == record.priority) + u8::from(r.sectors == record.sectors);
            if best.is_none_or(|(top, _)| score > top) {
                best = Some((score, index));
            }
        }
        best.map(|(_, index)| index)
    };
    for event in &capture.events {
        let SchedEvent::Block(record) = event else { continue };
        if record.point != BlockPoint::Insert
            && let Some(latest) = last_insert.get_mut(&record.pid)
        {
            latest.2 = true;
        }
        match record.point {
            BlockPoint::Insert => {
                if record.op == Op::Flush || record.sectors == 0 {
                    last_insert.remove(&record.pid);
                    continue;
                }
                // A requeued request's re-insert is the same request.
                if let Some(entry) = live.iter_mut().find(|(_, f)| {
                    f.requeued && f.record.sector == record.sector && f.record.op == record.op
                }) {
                    entry.1.requeued = false;
                    continue;
                }
                let pid = submitter(record);
                let process = *by_pid.entry(pid).or_insert_with(|| {
                    processes.push(Process {
                        pid,
                        command: record.command.clone(),
                        first_insert_ns: record.time_ns,
                        kernel_window_sectors: vec![0; windows],
                        ..Process::default()
                    });
                    processes.len() - 1
                });
                let recorded = Recorded {
                    sector: record.sector,
                    sectors: record.sectors,
                    op: record.op,
                    flags: flags_of(record),
                    printed: record.priority,
                    service_ns: None,
                    own_ns: None,
                    think_ns: processes[process]
                        .last_complete_ns
                        .map(|done| record.time_ns.saturating_sub(done)),
                    plugged: false,
                };
                if let Some(&(previous, previous_ns, between)) = last_insert.get(&record.pid)
                    && plugged_with_next(previous_ns, record.time_ns, between)
                {
                    requests[previous].plugged = true;
                    // The live copy is the one kept when the request completes.
                    if let Some((_, followed)) = live.iter_mut().find(|(i, _)| *i == previous) {
                        followed.record.plugged = true;
                    }
                }
                last_insert.insert(record.pid, (requests.len(), record.time_ns, false));
                requests.push(recorded.clone());
                let p = &mut processes[process];
                p.requests.push(requests.len() - 1);
                p.outstanding += 1;
                p.depth_samples.push(p.outstanding);
                live.push((
                    requests.len() - 1,
                    Followed { process, record: recorded, issued_ns: None, requeued: false },
                ));
            }
            BlockPoint::BioBackMerge | BlockPoint::BioFrontMerge => {
                let back = record.point == BlockPoint::BioBackMerge;
                let end = record.sector + u64::from(record.sectors);
                let found = live.iter_mut().rev().find(|(_, f)| {
                    let r = &f.record;
                    f.issued_ns.is_none()
                        && r.op == record.op
                        && if back {
                            r.sector + u64::from(r.sectors) == record.sector
                        } else {
                            r.sector == end
                        }
                });
                if let Some((_, followed)) = found {
                    followed.record.sectors += record.sectors;
                    if !back {
                        followed.record.sector = record.sector;
                    }
                }
            }
            BlockPoint::Merge => {
                let Some(absorbed) = find(&live, false, record)
                    .filter(|&i| live[i].1.record.sectors == record.sectors)
                else {
                    continue;
                };
                let kept = live.iter().rposition(|(_, f)| {
                    let r = &f.record;
                    f.issued_ns.is_none()
                        && r.op == record.op
                        && r.sector != record.sector
                        && r.sector + u64::from(r.sectors) == record.sector
                });
                let Some(kept) = kept else { continue };
                let (_, gone) = live.remove(absorbed);
                let kept = if kept > absorbed { kept - 1 } else { kept };
                live[kept].1.record.sectors += gone.record.sectors;
                // The absorbed request is no longer one of its process's outstanding ones,
                // nor a request of its own.
                let p = &mut processes[gone.process];
                p.outstanding = p.outstanding.saturating_sub(1);
            }
            BlockPoint::Issue => {
                if let Some(index) = find(&live, false, record) {
                    let followed = &mut live[index].1;
                    issues_and_runs.0 += 1;
                    if last_issuer != Some(followed.process) {
                        issues_and_runs.1 += 1;
                        last_issuer = Some(followed.process);
                    }
                    followed.issued_ns = Some(record.time_ns);
                    followed.record.sectors = record.sectors;
                }
            }
            BlockPoint::Requeue => {
                if let Some(index) = find(&live, true, record) {
                    live[index].1.issued_ns = None;
                    live[index].1.requeued = true;
                }
            }
            BlockPoint::Complete => {
                if record.sectors > 0 {
                    every_completion.push(record.time_ns);
                }
                let Some(index) = find(&live, true, record) else { continue };
                let (slot, followed) = live.remove(index);
                let service_ns =
                    record.time_ns.saturating_sub(followed.issued_ns.unwrap_or(record.time_ns));
                completions.push((
                    record.time_ns,
                    followed.issued_ns.unwrap_or(record.time_ns),
                    slot,
                ));
                requests[slot] = Recorded { service_ns: Some(service_ns), ..followed.record };
                let p = &mut processes[followed.process];
                p.outstanding = p.outstanding.saturating_sub(1);
                p.last_complete_ns = Some(record.time_ns);
                p.kernel_sectors += u64::from(record.sectors);
                p.kernel_window_sectors[(record.time_ns / window_ns.max(1)) as usize] +=
                    u64::from(record.sectors);
            }
            BlockPoint::BioQueue | BlockPoint::GetRq => {}
        }
    }
    // Requests absorbed by a merge are gone from the lists: keep only those still standing.
    let mut absorbed = vec![true; requests.len()];
    for (slot, _) in &live {
        absorbed[*slot] = false;
    }
    for recorded in requests.iter().enumerate().filter(|(_, r)| r.service_ns.is_some()) {
        absorbed[recorded.0] = false;
    }
    for process in &mut processes {
        process.requests.retain(|&slot| !absorbed[slot]);
    }
    // Requests still live at the end keep their merged extents.
    for (slot, followed) in live {
        requests[slot] = followed.record;
    }
    let stalls = if with_stalls {
        every_completion.sort_unstable();
        let mut pairs: Vec<(u64, u64)> = completions.iter().map(|&(c, i, _)| (c, i)).collect();
        stalls_of(&mut pairs, &every_completion)
    } else {
        Vec::new()
    };
    let mut service: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    for &(completed, issued, slot) in &completions {
        let whole = completed.saturating_sub(issued);
        let own = whole - stalled_within(&stalls, issued, completed).min(whole);
        requests[slot].own_ns = Some(own);
        service[direction_index(requests[slot].op)].push(own);
    }
    let median = |times: &mut Vec<u64>| {
        times.sort_unstable();
        times.get(times.len() / 2).copied()
    };
    let [mut reads, mut writes] = service;
    let read = median(&mut reads);
    let write = median(&mut writes);
    // A direction the capture never completed takes the other's (or 100 µs with neither: a
    // capture with no completion has no share to compare anyway).
    let fallback = read.or(write).unwrap_or(100_000);
    KernelSide {
        processes,
        requests,
        duration_ns,
        issues_and_runs,
        median_service_ns: [read.unwrap_or(fallback), write.unwrap_or(fallback)],
        stalls,
    }
}

/// bfq's weight for a printed priority (`bfq_ioprio_to_weight`, block/bfq-wf2q.c: `(IOPRIO_NR_LEVELS
/// - ioprio) * BFQ_WEIGHT_CONVERSION_COEFF`; the idle class is served at level 7,
/// `bfq_set_next_ioprio_data`).
fn bfq_weight(priority: IoPriority) -> u64 {
    let level = match priority.class() {
        IoClass::Idle => 7,
        _ => priority.level(),
    };
    u64::from(8 - level.min(7)) * 10
}

/// An event of ours's run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A process starts issuing.
    Start(usize),
    /// A process's request (an index into the kernel side's requests) arrives.
    Arrive(usize, usize),
    /// A request completes at the device.
    Complete(RequestId),
    /// Ours's idle timer.
    Wake,
    /// blk-mq's delayed run of a queue whose scheduler answered `Throttled`.
    DelayedRun,
}

/// A request of ours's run at the device.
#[derive(Clone, Copy, Debug)]
struct AtDevice {
    process: usize,
    issued_ns: u64,
    created_ns: u64,
    sectors: u32,
}

/// Replays `capture` closed-loop into ours and compares each process's share of service with
/// the kernel's (module docs).
pub fn share_replay(
    capture: &SchedCapture,
    options: ShareOptions,
) -> Result<ShareReport, ConformError> {
    let header = &capture.header;
    if header.lost_events > 0 {
        return Err(ConformError::LostEvents { lost: header.lost_events });
    }
    let mut ours = build(header)?;
    let window_ns = options.window.as_nanos().max(1);
    let kernel = kernel_side(capture, window_ns, options.stalls);
    let duration_ns = kernel.duration_ns;
    let windows = (duration_ns / window_ns) as usize + 1;
    let tags = header.queue_depth.max(1);
    let depths: Vec<u32> = kernel
        .processes
        .iter()
        .map(|p| {
            let mut samples = p.depth_samples.clone();
            samples.sort_unstable();
            let depth = match options.depth {
                DepthRule::Max => samples.last().copied(),
                DepthRule::Median => samples.get(samples.len() / 2).copied(),
            };
            depth.unwrap_or(1).max(1)
        })
        .collect();

    let mut table = RequestTable::with_capacity(256);
    let mut at_device: BTreeMap<RequestId, AtDevice> = BTreeMap::new();
    let mut service_of: BTreeMap<RequestId, u64> = BTreeMap::new();
    let mut next = vec![0usize; kernel.processes.len()];
    let mut wraps = vec![0u64; kernel.processes.len()];
    let mut outstanding = vec![0u32; kernel.processes.len()];
    let mut ours_sectors = vec![0u64; kernel.processes.len()];
    let mut ours_window = vec![vec![0u64; windows]; kernel.processes.len()];
    let mut process_of: BTreeMap<RequestId, usize> = BTreeMap::new();
    // Per process, the times of its arrivals still to come (time → how many).
    let mut pending: Vec<BTreeMap<u64, u32>> = vec![BTreeMap::new(); kernel.processes.len()];
    let mut created_of: BTreeMap<RequestId, u64> = BTreeMap::new();
    let mut dispatched = 0u64;
    let mut runs = 0u64;
    let mut last_issuer: Option<usize> = None;
    // (time, sequence, event): the sequence keeps ties in the order they were made.
    let mut queue: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut sequence = 0u64;
    let mut push = |queue: &mut BinaryHeap<Reverse<(u64, u64, Event)>>, at: u64, event| {
        queue.push(Reverse((at, sequence, event)));
        sequence += 1;
    };
    for (index, process) in kernel.processes.iter().enumerate() {
        if !process.requests.is_empty() {
            push(&mut queue, process.first_insert_ns, Event::Start(index));
        }
    }
    let mut wake_at: Option<u64> = None;
    // Ours answered `Throttled`: the queue sleeps (module docs, deviations).
    let mut asleep = false;
    // One delayed run pending at most (`blk_mq_delay_run_hw_queue` re-arms the one work).
    let mut delayed_run_pending = false;
    let tick_rate =
        elevator_core::TickRate::new(header.hz).ok_or(ConformError::BadHz { hz: header.hz })?;
    let at = |t: u64| Instant::from_nanos(options.clock_offset.as_nanos() + t);
    while let Some(Reverse((now_ns, _, event))) = queue.pop() {
        if now_ns > duration_ns {
            break;
        }
        let now = at(now_ns);
        let mut refill = None;
        match event {
            Event::Start(process) => refill = Some(process),
            Event::Complete(id) => {
                let done = at_device.remove(&id).expect("a completion of a request at the device");
                let completion = Completion {
                    id,
                    issued_at: at(done.issued_ns),
                    device_time: Duration::from_nanos(now_ns - done.issued_ns),
                    total_time: Duration::from_nanos(now_ns.saturating_sub(done.created_ns)),
                };
                let cx =
                    Ctx { now, requests: &table, in_flight: at_device.len() as u32, depth: tags };
                ours.scheduler().complete(&cx, &completion);
                // Asked always, so that a scheduler's wake-up is consumed where it happens.
                if ours.scheduler().completion_reruns() {
                    asleep = false;
                }
                table.remove(id);
                service_of.remove(&id);
                ours_sectors[done.process] += u64::from(done.sectors);
                ours_window[done.process][(now_ns / window_ns) as usize] += u64::from(done.sectors);
                outstanding[done.process] -= 1;
                refill = Some(done.process);
            }
            Event::Arrive(..) => asleep = false,
            Event::Wake => {
                if wake_at == Some(now_ns) {
                    wake_at = None;
                }
            }
            Event::DelayedRun => {
                asleep = false;
                delayed_run_pending = false;
            }
        }
        if let Some(index) = refill {
            let process = &kernel.processes[index];
            while outstanding[index] < depths[index] {
                if next[index] == process.requests.len() {
                    next[index] = 0;
                    wraps[index] += 1;
                }
                let slot = process.requests[next[index]];
                next[index] += 1;
                outstanding[index] += 1;
                // The process's own pace: its next request comes its recorded think time
                // after the completion that freed the slot (at once on the first fill).
                let think_ns = if matches!(event, Event::Start(_)) {
                    0
                } else {
                    kernel.requests[slot].think_ns.unwrap_or(0)
                };
                push(&mut queue, now_ns + think_ns, Event::Arrive(index, slot));
                *pending[index].entry(now_ns + think_ns).or_insert(0) += 1;
            }
        }
        let mut plugged = false;
        if let Event::Arrive(index, slot) = event {
            if let Some(count) = pending[index].get_mut(&now_ns) {
                *count -= 1;
                if *count == 0 {
                    pending[index].remove(&now_ns);
                }
            }
            // In the kernel's plug with its process's next request: if that one arrives
            // within the plug's gap here too, the queue runs after it, not now.
            plugged = options.plug
                && kernel.requests[slot].plugged
                && pending[index].range(now_ns..=now_ns + PLUG_GAP_NS).next().is_some();
            let process = &kernel.processes[index];
            {
                let recorded = &kernel.requests[slot];
                let service_ns = recorded
                    .own_ns
                    .unwrap_or(kernel.median_service_ns[direction_index(recorded.op)]);
                let bio = Bio {
                    op: recorded.op,
                    start: Sector(recorded.sector),
                    sector_count: recorded.sectors,
                    flags: recorded.flags,
                    priority: our_priority(recorded.printed),
                    process: ProcessId(process.pid),
                    tag: BioTag(0),
                    cpu: 0,
                };
                let mut request = Request::from_bio(&bio, now);
                let id = loop {
                    match table.insert(request) {
                        Ok(id) => break id,
                        Err(back) => {
                            request = back;
                            let capacity = table.capacity() * 2;
                            table.grow(capacity);
                        }
                    }
                };
                service_of.insert(id, service_ns);
                process_of.insert(id, index);
                created_of.insert(id, now_ns);
                let cx =
                    Ctx { now, requests: &table, in_flight: at_device.len() as u32, depth: tags };
                ours.scheduler().insert(&cx, id);
            }
        }
        // The queue runs: ours fills the free tags.
        while !asleep && !plugged && (at_device.len() as u32) < tags {
            let cx = Ctx { now, requests: &table, in_flight: at_device.len() as u32, depth: tags };
            if ours.scheduler().queued() == 0 {
                break;
            }
            match ours.scheduler().dispatch(&cx) {
                Dispatch::Issue(id) => {
                    dispatched += 1;
                    let process = process_of.remove(&id).expect("ours issued a request it got");
                    if last_issuer != Some(process) {
                        runs += 1;
                        last_issuer = Some(process);
                    }
                    let created_ns = created_of.remove(&id).unwrap_or(now_ns);
                    let service_ns = service_of.get(&id).copied().unwrap_or(0);
                    at_device.insert(
                        id,
                        AtDevice {
                            process,
                            issued_ns: now_ns,
                            created_ns,
                            sectors: table[id].sector_count,
                        },
                    );
                    let done_ns = completion_after(&kernel.stalls, now_ns, service_ns);
                    push(&mut queue, done_ns, Event::Complete(id));
                }
                Dispatch::Idle { until } => {
                    let until_ns = until.as_nanos().saturating_sub(options.clock_offset.as_nanos());
                    // A timer already armed earlier stays; a later one is re-armed when the
                    // earlier fires and ours asks for it again.
                    if wake_at.is_none_or(|armed| until_ns < armed) {
                        wake_at = Some(until_ns.max(now_ns + 1));
                        push(&mut queue, until_ns.max(now_ns + 1), Event::Wake);
                    }
                    break;
                }
                Dispatch::Throttled => {
                    asleep = true;
                    let delay = tick_rate.msecs_to_jiffies(elevator_core::BlkMqQueue::RUN_DELAY_MS);
                    let run = tick_rate.timer_at(now, delay).as_nanos();
                    let run_ns = run.saturating_sub(options.clock_offset.as_nanos());
                    if !delayed_run_pending {
                        delayed_run_pending = true;
                        push(&mut queue, run_ns.max(now_ns + 1), Event::DelayedRun);
                    }
                    break;
                }
                Dispatch::Empty => break,
            }
        }
    }

    let kernel_total: u64 = kernel.processes.iter().map(|p| p.kernel_sectors).sum();
    let ours_total: u64 = ours_sectors.iter().sum();
    let share = |part: u64, total: u64| if total == 0 { 0.0 } else { part as f64 / total as f64 };
    let full_windows = (duration_ns / window_ns) as usize;
    let mut window_shares = Vec::with_capacity(full_windows);
    for w in 0..full_windows {
        let kernel_sum: u64 = kernel.processes.iter().map(|p| p.kernel_window_sectors[w]).sum();
        let ours_sum: u64 = ours_window.iter().map(|sectors| sectors[w]).sum();
        window_shares.push(WindowShare {
            start_ns: w as u64 * window_ns,
            kernel: kernel
                .processes
                .iter()
                .map(|p| share(p.kernel_window_sectors[w], kernel_sum))
                .collect(),
            ours: ours_window.iter().map(|sectors| share(sectors[w], ours_sum)).collect(),
        });
    }
    let is_bfq = header.scheduler == crate::bfq::NAME;
    let mut processes: Vec<ProcessShare> = kernel
        .processes
        .iter()
        .enumerate()
        .map(|(index, p)| {
            // The priority most of its requests printed (the first such on a tie).
            // Keyed by the ioprio value (IoPriority has no order), the priority kept beside.
            let mut counts: BTreeMap<Option<u16>, (usize, usize, Option<IoPriority>)> =
                BTreeMap::new();
            for (order, &slot) in p.requests.iter().enumerate() {
                let printed = kernel.requests[slot].printed;
                let key = printed.map(IoPriority::to_ioprio_value);
                counts.entry(key).or_insert((0, order, printed)).0 += 1;
            }
            let printed = counts
                .values()
                .max_by_key(|(count, first, _)| (*count, Reverse(*first)))
                .and_then(|(_, _, priority)| *priority);
            let kernel_share = share(p.kernel_sectors, kernel_total);
            let ours_share = share(ours_sectors[index], ours_total);
            let max_window = window_shares
                .iter()
                .map(|w| (w.ours[index] - w.kernel[index]).abs() * 100.0)
                .fold(0.0, f64::max);
            ProcessShare {
                pid: p.pid,
                command: p.command.clone(),
                priority: printed
                    .map_or_else(|| "none".to_owned(), elevator_trace::sched_log::priority_text),
                weight: is_bfq.then(|| bfq_weight(printed.unwrap_or(IoPriority::DEFAULT))),
                depth: depths[index],
                requests: p.requests.len() as u64,
                kernel_sectors: p.kernel_sectors,
                ours_sectors: ours_sectors[index],
                kernel_share,
                ours_share,
                difference_pp: (ours_share - kernel_share) * 100.0,
                max_window_difference_pp: max_window,
                wraps: wraps[index],
            }
        })
        .collect();
    processes.sort_by_key(|p| p.pid);
    // Windows keep the processes' order of the report.
    let order: Vec<usize> = {
        let mut order: Vec<usize> = (0..kernel.processes.len()).collect();
        order.sort_by_key(|&i| kernel.processes[i].pid);
        order
    };
    for window in &mut window_shares {
        window.kernel = order.iter().map(|&i| window.kernel[i]).collect();
        window.ours = order.iter().map(|&i| window.ours[i]).collect();
    }
    let max_difference_pp = processes.iter().map(|p| p.difference_pp.abs()).fold(0.0, f64::max);
    let max_window_difference_pp =
        processes.iter().map(|p| p.max_window_difference_pp).fold(0.0, f64::max);
    Ok(ShareReport {
        scheduler: header.scheduler.clone(),
        tunables: header.tunables.iter().map(|(name, value)| format!("{name}={value}")).collect(),
        duration_ns,
        window_ns,
        tags,
        depth_rule: options.depth,
        processes,
        windows: window_shares,
        max_difference_pp,
        max_window_difference_pp,
        ours_dispatched: dispatched,
        throughput_ratio: share(ours_total, kernel_total),
        kernel_issues_per_run: share(kernel.issues_and_runs.0, kernel.issues_and_runs.1),
        ours_issues_per_run: share(dispatched, runs),
        ours_counters: ours
            .scheduler()
            .counters()
            .into_iter()
            .map(|counter| (counter.name.to_owned(), counter.value))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bfq capture of one process (pid 7001) from the given event lines (`+delta code cpu
    /// pid rest`).
    fn capture(events: &str) -> SchedCapture {
        let text = format!(
            "elevator-sched-capture 1\nkernel_release = 6.18.44\nhz = 250\nscheduler = bfq\n\
             nr_requests = 256\nqueue_depth = 32\nhw_queues = 1\nmax_sectors_kb = 1280\n\
             cpus = 2\nlost_events = 0\ndevice = 7,9\nworkload = hand-built\n{events}"
        );
        elevator_trace::sched_log::parse("hand-built", &text).expect("a valid capture")
    }

    fn plugged_flags(events: &str) -> Vec<bool> {
        kernel_side(&capture(events), 1_000_000_000, true)
            .requests
            .iter()
            .map(|r| r.plugged)
            .collect()
    }

    // Proves the device's stalls are read as the capture shows them and keep their place in
    // time: a completion 5 ms after the previous one, of a request at the device all along,
    // ends a stall from that previous completion (another request's, followed or not); a
    // request issued into a gap is stalled only from its issue; a gap under 1 ms is no stall.
    // A request of ours then takes its own time outside the stalls: issued before a stall
    // it completes at the stall's end plus what it had left; issued inside one, after it. A
    // replay giving each request its whole recorded time would complete a request that the
    // kernel's device held through a stall that long after its issue wherever ours issues it.
    #[test]
    fn stalls_are_read_and_kept_in_time() {
        let every = [1_000_000, 1_500_000, 6_500_000, 6_600_000, 20_000_000];
        let mut followed = [
            (6_500_000, 1_200_000),  // held from 1.2 ms: the stall starts at 1.5 ms
            (6_600_000, 6_510_000),  // 90 µs, no stall
            (20_000_000, 9_000_000), // issued into the gap: stalled from its issue
        ];
        let stalls = stalls_of(&mut followed, &every);
        assert_eq!(stalls, [(1_500_000, 6_500_000), (9_000_000, 20_000_000)]);
        assert_eq!(stalled_within(&stalls, 1_200_000, 6_500_000), 5_000_000);
        assert_eq!(stalled_within(&stalls, 0, 30_000_000), 16_000_000);
        // 100 µs of its own from 1.45 ms: 50 µs before the stall, 50 µs after it.
        assert_eq!(completion_after(&stalls, 1_450_000, 100_000), 6_550_000);
        // Issued inside the stall: served after it.
        assert_eq!(completion_after(&stalls, 3_000_000, 10_000), 6_510_000);
        // Spanning two stalls: 0.5 ms before the first, 2.5 ms between them, 1 ms after.
        assert_eq!(completion_after(&stalls, 1_000_000, 4_000_000), 21_000_000);
        // Outside any stall: its own time.
        assert_eq!(completion_after(&stalls, 7_000_000, 10_000), 7_010_000);
    }

    // Proves a plug flush is recognised as the kernel prints it: inserts of one task back to
    // back (another task's events between them do not count) are one plug, each but the
    // last marked as plugged with its next; an insert followed by its own issue (the queue
    // run in the submitter's context) or by its task's next bio, or one more than 50 µs
    // before the next, is not. A replay that ran ours's queue after every insert, or took
    // every pair of consecutive inserts as a plug, would read these flags wrong.
    #[test]
    fn plug_flushes_are_read_from_the_capture() {
        let back_to_back = "+0 I 0 7001 fio R S 8000 8 be/4 -\n\
                            +500 I 1 7002 fio R S 99000 8 be/4 -\n\
                            +500 I 0 7001 fio R S 16000 8 be/4 -\n\
                            +600 I 0 7001 fio R S 24000 8 be/4 -\n";
        assert_eq!(plugged_flags(back_to_back), [true, false, true, false]);
        let issued_between = "+0 I 0 7001 fio R S 8000 8 be/4 -\n\
                              +1000 D 0 7001 fio R S 8000 8 be/4 -\n\
                              +1000 I 0 7001 fio R S 16000 8 be/4 -\n";
        assert_eq!(plugged_flags(issued_between), [false, false]);
        let next_bio_between = "+0 I 0 7001 fio R S 8000 8 be/4 -\n\
                                +1000 Q 0 7001 fio R - 16000 8 - -\n\
                                +1000 I 0 7001 fio R S 16000 8 be/4 -\n";
        assert_eq!(plugged_flags(next_bio_between), [false, false]);
        let far_apart = "+0 I 0 7001 fio R S 8000 8 be/4 -\n\
                         +60000 I 0 7001 fio R S 16000 8 be/4 -\n";
        assert_eq!(plugged_flags(far_apart), [false, false]);
    }
}
