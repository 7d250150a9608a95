//! `trace:PATH[:key=value,...]`: replay a block trace — fio iolog v2/v3, blkparse text, MSR
//! Cambridge CSV or elevator's compact format, whichever [`elevator_trace::read`] finds — as
//! the processes that issued it (issue 19, `/work/shared/specs/ecosystem.md` §1.4, §3).
//!
//! # Processes
//!
//! The trace's processes become separate issuers, so cfq and bfq see the processes the trace
//! saw: one per pid, in order of first appearance (records without a pid form one more
//! process; a trace with no pids at all is one process). Each issuer's [`ProcessId`] is the
//! trace's pid (pids above Linux's `PID_MAX_LIMIT`, 2²², and pid 0, which blkparse shows
//! for I/O the kernel queued outside any process, get an id above `PID_MAX_LIMIT`
//! instead), its name `COMM/PID` (`trace` without either). Each I/O carries the priority
//! (class/level) its record has, or, when the record has none, the priority of a process
//! that never set one (no class: best-effort at level 4 to the schedulers); its request
//! flags are the record's sync, FUA and metadata flags when the trace records flags (else
//! reads, syncs and direct writes are sync, as for `job`).
//! Each process issues its records in the trace's order.
//!
//! # Timing
//!
//! * Timed (default): an I/O is issued at its recorded time, counted from the trace's
//!   earliest record, divided by `speed`, counted from the moment the replay starts (the
//!   first poll of any of its issuers). The replay is **open loop**: an I/O does not wait
//!   for the process's earlier I/Os to complete, which is what btreplay does (blktrace's
//!   `btreplay/btreplay.c` submits each bunch with `io_submit` at its recorded time and
//!   reaps completions on a separate thread; `speed` is its `-x`/`--acc-factor`). fio's
//!   `read_iolog` replay, for contrast, is closed loop: it counts each record's delay from
//!   the job's previous issue and takes a free io_u first, so completions that come late
//!   push every later I/O back (fio's HOWTO "I/O replay", `iolog.c` `iolog_delay`;
//!   `crate::iolog` reproduces that for fio jobs). The only bound here is `depth`: a
//!   process with `depth` I/Os in flight waits for one to complete, as btreplay's bounded
//!   iocb pool does.
//! * `afap=1`: as fast as possible: the times are ignored, each process issues its records
//!   in order with up to `depth` in flight (btreplay's `-N`/`--no-stalls`).
//!
//! # Drift
//!
//! Each issuer measures, for every I/O of a timed replay, the time it was issued (when the
//! driver polled it and it answered `Submit`) minus the time it was scheduled for. The
//! drivers sum [`crate::Issuer::counters`] over a phase's issuers, some when the phase ends
//! (the simulator, `elevator run`), some as each issuer finishes (the kernel driver), so
//! each counter is made so that the plain sum is the replay's figure:
//!
//! * `replay_ios`: I/Os issued (each issuer its own);
//! * `replay_drift_total_ns`: the sum of their drifts (each issuer its own); the mean is
//!   this over `replay_ios` — the figure to divide when adding up several phases or runs;
//! * `replay_drift_mean_ns`: that mean, rounded down, reported by the issuer that finished
//!   last (the others report 0): 0 when a stopped run left an issuer unfinished;
//! * `replay_drift_max_ns`: the largest drift of any process: the issuers share the running
//!   maximum and each reports the amounts by which it raised it, which sum to the maximum;
//! * `replay_ios_late`: I/Os whose drift exceeded `late` (default 1 ms; each issuer its own).
//!
//! In the simulator drift comes only from a process's own blocking (its `depth` I/Os in
//! flight), as the simulated host issues at the instant asked; live it is real (timer slack,
//! submission cost, a busy core). An `afap` replay has no schedule: it reports `replay_ios`
//! and zeros.
//!
//! # Keys
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `speed` | 1 | time scale: 2 replays twice as fast (gaps halved) |
//! | `afap` | 0 | ignore the trace's times: each process issues as fast as `depth` allows |
//! | `depth` | 32 | I/Os in flight per process at most |
//! | `device` | the first | the target the trace's (first) device maps to, by name or index |
//! | `direct` | 1 | O_DIRECT (0: through the page cache) |
//! | `late` | 1ms | the drift above which an I/O counts in `replay_ios_late` |
//!
//! A trace naming several devices maps them, in order of first appearance, to the targets
//! from `device` on; it is refused when there are more than targets.
//!
//! # Deviations
//!
//! * btreplay replays each recorded CPU's stream on a thread bound to that CPU ("attempts
//!   are made to maintain ordering, CPU mappings and time-separation of IOs", btreplay(8));
//!   here each recorded *process* is an issuer, since the processes are what cfq and bfq
//!   keep queues for. CPU mappings are not kept.
//! * A record's priority applies to that I/O (the drivers ask [`crate::Issuer::priority`]
//!   at each submission); the kernel driver sets a thread's priority as it applies that
//!   answer, so a process changing class in the middle of a trace is followed only as far
//!   as that driver follows it.
//! * Within a process, a record stamped earlier than the one before it (blkparse merges
//!   per-CPU streams; the compact format allows negative deltas) is scheduled at the time
//!   of the record before it: per-process order wins over timestamps, and the drift is
//!   measured against that monotone schedule.
//! * A preflush flag (blkparse's `F` before the direction) is not replayed as a flush of
//!   its own; the trace's flush records are.
//! * Offsets and sizes must be whole 512-byte sectors for direct I/O and discards, and no
//!   I/O may reach past its target's end: such a trace is refused, naming the record (its
//!   number among the trace's I/Os, from 1), not clipped or wrapped as btreplay would pass
//!   it to the kernel to fail. A read or write of 0 bytes is refused too.
//! * A flush record is replayed as `fsync` of the target (a cache flush with `direct=1`).
//! * Completion times and latencies recorded in the trace are not replayed or compared;
//!   only issue times are.
//! * Submission is modelled as `libaio` (btreplay's engine) on the simulator's blk-mq host.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use elevator_core::{
    ComponentSpec, Duration, Instant, IoPriority, KeyKind, KeySpec, ParamError, Params, ProcessId,
    RequestFlags,
};
use elevator_trace::{Op, Trace, TraceIo};

use crate::{Io, IoId, IoKind, Issuer, IssuerCpu, PhasePlan, Place, Poll, SubmitEngine, Target};

/// One line for listings.
pub const SUMMARY: &str =
    "replay a block trace (fio iolog, blkparse, MSR CSV, compact) as the processes that issued it";

/// The prefix of a trace workload spec.
pub const PREFIX: &str = "trace:";

/// Linux's `PID_MAX_LIMIT` on 64-bit (include/linux/threads.h): no real pid is above it.
const PID_MAX_LIMIT: u32 = 1 << 22;

/// The keys of `trace:PATH`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "speed",
        kind: KeyKind::Float { min: 1e-6, max: 1e6, unit: "times recorded speed" },
        default: "1",
        help: "time scale: 2 replays twice as fast (gaps halved)",
    },
    KeySpec {
        key: "afap",
        kind: KeyKind::Flag,
        default: "0",
        help: "as fast as possible: ignore the recorded times, keep each process's order",
    },
    KeySpec {
        key: "depth",
        kind: KeyKind::Integer { min: 1, max: 65536 },
        default: "32",
        help: "I/Os in flight per process at most",
    },
    KeySpec {
        key: "device",
        kind: KeyKind::Text,
        default: "",
        help: "the target (name or index) the trace's first device maps to (default: the first)",
    },
    KeySpec { key: "direct", kind: KeyKind::Flag, default: "1", help: "O_DIRECT" },
    KeySpec {
        key: "late",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_secs(3600),
            bare_unit: "us",
        },
        default: "1ms",
        help: "drift above which an I/O counts as late (replay_ios_late)",
    },
];

/// A parsed `trace:PATH[:key=value,...]`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TraceReplay {
    /// The trace file, as written.
    pub(crate) path: String,
    params: Params,
    /// Its records, read when the spec is parsed (so a bad trace is refused before anything
    /// runs or a live target is opened), shared by the spec's clones.
    trace: Arc<Trace>,
}

fn refuse(path: &str, key: &'static str, problem: String) -> ParamError {
    ParamError::Impossible { component: format!("trace {path}"), key, problem }
}

impl TraceReplay {
    /// Parses what follows `trace:`: a path, then optionally `:key=value,...` (the last `:`
    /// followed by a `key=` starts the keys, so a path may hold colons).
    pub(crate) fn parse(rest: &str) -> Result<TraceReplay, ParamError> {
        let (path, keys) = match rest.rsplit_once(':') {
            Some((path, keys)) if keys.contains('=') => (path, keys),
            _ => (rest, ""),
        };
        if path.is_empty() {
            return Err(ParamError::Impossible {
                component: "trace".into(),
                key: "path",
                problem: "no trace file given (trace:PATH[:key=value,...])".into(),
            });
        }
        let text = if keys.is_empty() { "trace".to_owned() } else { format!("trace:{keys}") };
        let spec = ComponentSpec::parse("workload", &text)?;
        let params = Params::resolve(&spec, KEYS, &[])?;
        let trace = elevator_trace::read(std::path::Path::new(path))
            .map_err(|error| refuse(path, "file", error.to_string()))?;
        Ok(TraceReplay { path: path.to_owned(), params, trace: Arc::new(trace) })
    }

    /// Every key with its value in force, the path first.
    pub(crate) fn resolved(&self) -> Vec<(&'static str, String)> {
        let mut resolved = vec![("trace", self.path.clone())];
        resolved.extend(self.params.resolved());
        resolved
    }

    /// Whether the trace writes (a write or a discard).
    pub(crate) fn may_write(&self) -> bool {
        self.trace.records.iter().any(|io| matches!(io.op, Op::Write | Op::Discard))
    }

    /// The byte the trace's I/O reaches furthest to: what a live scratch target must hold.
    pub(crate) fn extent_bytes(&self) -> u64 {
        self.trace
            .records
            .iter()
            .map(|io| io.offset_bytes.saturating_add(io.size_bytes))
            .max()
            .unwrap_or(0)
    }

    /// The replay's one phase: an issuer per process of the trace.
    pub(crate) fn plan(&self, targets: &[Target]) -> Result<crate::WorkloadPlan, ParamError> {
        let trace = &*self.trace;
        let path = self.path.as_str();
        let params = &self.params;
        let direct = params.flag("direct");
        let afap = params.flag("afap");
        let speed = params.float("speed");
        let depth = params.integer("depth") as u32;
        let base = self.base_target(targets)?;
        if trace.records.is_empty() {
            return Err(refuse(path, "file", "the trace has no I/O".into()));
        }
        // Trace devices in order of first appearance, each to a target from `base` on.
        let mut devices: Vec<Option<&str>> = Vec::new();
        for io in &trace.records {
            if !devices.contains(&io.device.as_deref()) {
                devices.push(io.device.as_deref());
            }
        }
        if base + devices.len() > targets.len() {
            let names: Vec<String> =
                devices.iter().map(|d| format!("`{}`", d.unwrap_or("(unnamed)"))).collect();
            return Err(refuse(
                path,
                "device",
                format!(
                    "the trace has {} devices ({}) but only {} target(s) from `{}` on; give \
                     more targets or a trace of fewer devices",
                    devices.len(),
                    names.join(", "),
                    targets.len() - base,
                    targets[base].name
                ),
            ));
        }
        let start_ns = trace.records.iter().map(|io| io.time_ns).min().unwrap_or(0);
        let any_pid = trace.records.iter().any(|io| io.pid.is_some());
        // Processes in order of first appearance.
        let mut processes: Vec<TraceProcess> = Vec::new();
        for (index, io) in trace.records.iter().enumerate() {
            let target =
                base + devices.iter().position(|d| *d == io.device.as_deref()).unwrap_or(0);
            let step = self.step(index, io, target, &targets[target], direct)?;
            let key = if any_pid { io.pid } else { None };
            let position = match processes.iter().position(|process| process.pid == key) {
                Some(position) => position,
                None => {
                    processes.push(TraceProcess {
                        pid: key,
                        comm: io.process.clone(),
                        steps: Vec::new(),
                        last_ns: 0,
                    });
                    processes.len() - 1
                }
            };
            let process = &mut processes[position];
            // Recorded time from the trace's start, scaled; never before the process's
            // previous I/O (its order wins).
            let scheduled_ns = ((io.time_ns - start_ns) as f64 / speed) as u64;
            let scheduled_ns = scheduled_ns.max(process.last_ns);
            process.last_ns = scheduled_ns;
            process.steps.push(Step { at: Duration::from_nanos(scheduled_ns), ..step });
        }
        let shared = Arc::new(Shared { issuers: processes.len(), ..Shared::default() });
        let late = params.time("late");
        let issuers = processes
            .into_iter()
            .enumerate()
            .map(|(index, TraceProcess { pid, comm, steps, .. })| {
                let process = match pid {
                    Some(pid) if (1..=PID_MAX_LIMIT).contains(&pid) => ProcessId(pid),
                    _ => ProcessId(PID_MAX_LIMIT + 1 + index as u32),
                };
                let name = match (&comm, pid) {
                    (Some(comm), Some(pid)) => format!("{comm}/{pid}"),
                    (None, Some(pid)) => format!("trace/{pid}"),
                    (Some(comm), None) => comm.clone(),
                    (None, None) => "trace".to_owned(),
                };
                Box::new(TraceIssuer {
                    name,
                    process,
                    priority: IoPriority::DEFAULT,
                    steps,
                    next: 0,
                    outstanding: 0,
                    depth,
                    afap,
                    late,
                    drift: Drift::default(),
                    finished_last: None,
                    shared: Arc::clone(&shared),
                }) as Box<dyn Issuer>
            })
            .collect();
        Ok(crate::WorkloadPlan {
            files: Vec::new(),
            phases: vec![PhasePlan { name: "replay".into(), issuers, stonewall: false }],
        })
    }

    /// The target index the trace's first device maps to (`device=`).
    fn base_target(&self, targets: &[Target]) -> Result<usize, ParamError> {
        let wanted = self.params.text("device");
        if targets.is_empty() {
            return Err(refuse(&self.path, "device", "no target to replay on".into()));
        }
        if wanted.is_empty() {
            return Ok(0);
        }
        let bare = wanted.strip_prefix("/dev/").unwrap_or(wanted);
        let by_name = targets.iter().position(|target| target.name == bare);
        let by_index = bare.parse::<usize>().ok().filter(|&index| index < targets.len());
        by_name.or(by_index).ok_or_else(|| {
            let names: Vec<&str> = targets.iter().map(|target| target.name.as_str()).collect();
            refuse(
                &self.path,
                "device",
                format!(
                    "`{wanted}` is no target (accepted: {}, or an index 0..{})",
                    names.join(", "),
                    targets.len()
                ),
            )
        })
    }

    /// Record `index` as a step on target `target_index`, checked against the target.
    fn step(
        &self,
        index: usize,
        io: &TraceIo,
        target_index: usize,
        target: &Target,
        direct: bool,
    ) -> Result<Step, ParamError> {
        let bad = |problem: String| {
            refuse(
                &self.path,
                "record",
                format!(
                    "record {} ({} of {} bytes at byte {}): {problem}",
                    index + 1,
                    io.op.name(),
                    io.size_bytes,
                    io.offset_bytes
                ),
            )
        };
        let kind = match io.op {
            Op::Read => IoKind::Read,
            Op::Write => IoKind::Write,
            Op::Discard => IoKind::Discard,
            Op::Flush => IoKind::Sync,
        };
        let (offset_bytes, size_bytes) =
            if kind == IoKind::Sync { (0, 0) } else { (io.offset_bytes, io.size_bytes) };
        let direct = direct || kind == IoKind::Discard;
        if kind != IoKind::Sync {
            if size_bytes == 0 {
                return Err(bad("0 bytes; accepted: at least one sector".into()));
            }
            if direct && (offset_bytes % 512 != 0 || size_bytes % 512 != 0) {
                return Err(bad(
                    "not in whole 512-byte sectors, which direct I/O needs (the kernel refuses \
                     it, EINVAL); accepted: multiples of 512, or direct=0"
                        .into(),
                ));
            }
            let end = offset_bytes.saturating_add(size_bytes);
            if end > target.capacity_bytes {
                return Err(bad(format!(
                    "reaches byte {end}, past the end of `{}` ({} bytes)",
                    target.name, target.capacity_bytes
                )));
            }
        }
        let mut flags = match io.flags {
            Some(recorded) => {
                let mut flags = RequestFlags::NONE;
                if recorded.sync {
                    flags = flags.union(RequestFlags::SYNC);
                }
                if recorded.fua {
                    flags = flags.union(RequestFlags::FUA);
                }
                if recorded.meta {
                    flags = flags.union(RequestFlags::META);
                }
                flags
            }
            // As `job`'s I/O: reads, direct writes and syncs are sync requests.
            None if kind == IoKind::Read || kind == IoKind::Sync || direct => RequestFlags::SYNC,
            None => RequestFlags::NONE,
        };
        if kind == IoKind::Discard {
            flags = RequestFlags::NONE;
        }
        Ok(Step {
            kind,
            place: Place::Device(target_index),
            offset_bytes,
            size_bytes,
            direct,
            flags,
            priority: io.priority.unwrap_or(IoPriority::DEFAULT),
            at: Duration::ZERO,
        })
    }
}

impl std::fmt::Display for TraceReplay {
    /// `trace:PATH` plus the keys the user set.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{PREFIX}{}", self.path)?;
        let mut separator = ':';
        for (key, value) in self.params.resolved() {
            if self.params.is_set(key) {
                write!(f, "{separator}{key}={value}")?;
                separator = ',';
            }
        }
        Ok(())
    }
}

/// A process of the trace while planning: its pid (`None`: none recorded), its name, its
/// steps and the latest time scheduled for it so far, ns.
struct TraceProcess {
    pid: Option<u32>,
    comm: Option<String>,
    steps: Vec<Step>,
    last_ns: u64,
}

/// One I/O to replay, and when (from the replay's start).
#[derive(Clone, Copy, Debug)]
struct Step {
    kind: IoKind,
    place: Place,
    offset_bytes: u64,
    size_bytes: u64,
    direct: bool,
    flags: RequestFlags,
    priority: IoPriority,
    at: Duration,
}

/// What the replay's issuers share: the start instant and the drift tally.
#[derive(Debug, Default)]
struct Shared {
    /// The replay's time 0: the first poll of any of its issuers.
    start: OnceLock<Instant>,
    /// How many issuers the replay has, and how many have finished.
    issuers: usize,
    finished: AtomicUsize,
    /// Over every issuer: I/Os issued, their drifts' sum and the largest drift.
    ios: AtomicU64,
    drift_total_ns: AtomicU64,
    drift_max_ns: AtomicU64,
}

/// One issuer's own drift figures.
#[derive(Clone, Copy, Debug, Default)]
struct Drift {
    ios: u64,
    total_ns: u64,
    late: u64,
    /// The sum of the amounts by which it raised the shared maximum.
    max_raised_ns: u64,
}

/// One process of the trace.
#[derive(Debug)]
struct TraceIssuer {
    name: String,
    process: ProcessId,
    /// The priority of the I/O submitted last (asked by the drivers right after a submit).
    priority: IoPriority,
    steps: Vec<Step>,
    next: usize,
    outstanding: u32,
    depth: u32,
    afap: bool,
    late: Duration,
    drift: Drift,
    /// Once it is done: whether it was the replay's last issuer to finish.
    finished_last: Option<bool>,
    shared: Arc<Shared>,
}

impl Issuer for TraceIssuer {
    fn name(&self) -> &str {
        &self.name
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn priority(&self) -> IoPriority {
        self.priority
    }

    fn cpu(&self) -> IssuerCpu {
        // btreplay submits with libaio, one iocb per call for a bunch of one.
        IssuerCpu { engine: SubmitEngine::Libaio, ..IssuerCpu::default() }
    }

    fn poll(&mut self, now: Instant) -> Poll {
        let start = *self.shared.start.get_or_init(|| now);
        let Some(step) = self.steps.get(self.next).copied() else {
            if self.outstanding > 0 {
                return Poll::Wait;
            }
            if self.finished_last.is_none() {
                let finished = self.shared.finished.fetch_add(1, Ordering::AcqRel) + 1;
                self.finished_last = Some(finished == self.shared.issuers);
            }
            return Poll::Done;
        };
        if self.outstanding >= self.depth {
            return Poll::Wait;
        }
        let mut drift_ns = 0;
        if !self.afap {
            let due = start.saturating_add(step.at);
            if now < due {
                return Poll::Sleep { until: due };
            }
            drift_ns = now.saturating_since(due).as_nanos();
        }
        self.shared.ios.fetch_add(1, Ordering::AcqRel);
        self.shared.drift_total_ns.fetch_add(drift_ns, Ordering::AcqRel);
        let before_ns = self.shared.drift_max_ns.fetch_max(drift_ns, Ordering::AcqRel);
        self.drift.max_raised_ns += drift_ns.saturating_sub(before_ns);
        self.drift.ios += 1;
        self.drift.total_ns += drift_ns;
        if drift_ns > self.late.as_nanos() {
            self.drift.late += 1;
        }
        self.next += 1;
        self.outstanding += 1;
        self.priority = step.priority;
        Poll::Submit(Io {
            id: IoId(self.next as u64),
            kind: step.kind,
            place: step.place,
            offset_bytes: step.offset_bytes,
            size_bytes: step.size_bytes,
            direct: step.direct,
            flags: step.flags,
        })
    }

    fn complete(&mut self, _now: Instant, _io: IoId) {
        self.outstanding = self.outstanding.saturating_sub(1);
    }

    fn finishing(&self, _now: Instant) -> bool {
        self.next >= self.steps.len()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let names = [
            "replay_ios",
            "replay_drift_total_ns",
            "replay_drift_mean_ns",
            "replay_drift_max_ns",
            "replay_ios_late",
        ];
        let mean_ns = if self.finished_last == Some(true) {
            let total_ns = self.shared.drift_total_ns.load(Ordering::Acquire);
            total_ns.checked_div(self.shared.ios.load(Ordering::Acquire)).unwrap_or(0)
        } else {
            0
        };
        let drift = self.drift;
        let values = [drift.ios, drift.total_ns, mean_ns, drift.max_raised_ns, drift.late];
        names.into_iter().zip(values).collect()
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::Prng;

    use super::*;
    use crate::WorkloadSpec;
    use crate::testing::{Run, devices, run};

    const MS: u64 = 1_000_000;

    /// Two processes: `a` (pid 100, be/2) at 0, 2 and 4.5 ms, `b` (pid 200, rt/0) at 1 and
    /// 4 ms; the last record of `a` has no priority.
    const TWO_PROCESSES: &str = "elevator-trace 1
+0 R 0 4096 pid=100 comm=a prio=be/2
+1000000 W 1048576 8192 pid=200 comm=b prio=rt/0
+1000000 R 4096 4096 pid=100 comm=a prio=be/2
+2000000 W 2097152 4096 pid=200 comm=b prio=rt/0
+500000 R 8192 4096 pid=100 comm=a
";

    /// A trace file of this test's own holding `text`.
    fn trace_file(test: &str, text: &str) -> String {
        let dir = std::env::temp_dir()
            .join(format!("elevator-trace-replay-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.trace");
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    /// Plans `spec` on one 1 GiB device `sda` (or `targets`) and runs it with every I/O
    /// taking `latency_ns`; also returns each issuer's process id.
    fn replay(spec: &str, targets: &[Target], latency_ns: u64) -> (Run, Vec<ProcessId>) {
        let plan = WorkloadSpec::parse(spec).unwrap().plan(targets, &Prng::new(1)).unwrap();
        let processes = plan.phases[0].issuers.iter().map(|issuer| issuer.process()).collect();
        (run(plan, |_| Duration::from_nanos(latency_ns)), processes)
    }

    fn sda() -> Vec<Target> {
        devices(&[("sda", 1 << 30)])
    }

    /// (issuer, submitted ns, kind, offset, size) of every submission.
    fn submissions(run: &Run) -> Vec<(usize, u64, IoKind, u64, u64)> {
        run.records
            .iter()
            .map(|r| {
                (r.issuer, r.submitted.as_nanos(), r.io.kind, r.io.offset_bytes, r.io.size_bytes)
            })
            .collect()
    }

    // Proves a timed replay issues each process's I/Os as its own issuer (the trace's pid as
    // ProcessId, per-I/O priority from the record), in the recorded per-process order with
    // the recorded offsets, sizes and directions, at exactly the recorded times when the
    // device keeps up (simulated time: tolerance 0), and reports zero drift.
    #[test]
    fn timed_replay_keeps_processes_order_and_gaps() {
        let path = trace_file("timed", TWO_PROCESSES);
        let (run, processes) = replay(&format!("trace:{path}"), &sda(), 100_000);
        assert_eq!(processes, [ProcessId(100), ProcessId(200)]);
        assert_eq!(
            submissions(&run),
            [
                (0, 0, IoKind::Read, 0, 4096),
                (1, MS, IoKind::Write, 1 << 20, 8192),
                (0, 2 * MS, IoKind::Read, 4096, 4096),
                (1, 4 * MS, IoKind::Write, 2 << 20, 4096),
                (0, 4 * MS + MS / 2, IoKind::Read, 8192, 4096),
            ]
        );
        let priorities: Vec<String> = run.records.iter().map(|r| r.priority.to_string()).collect();
        let default = IoPriority::DEFAULT.to_string();
        assert_eq!(
            priorities,
            ["best-effort/2", "realtime/0", "best-effort/2", "realtime/0", default.as_str()]
        );
        assert!(run.records.iter().all(|r| r.io.direct && r.io.place == Place::Device(0)));
        assert_eq!(run.counter(0, "replay_ios"), 5);
        assert_eq!(run.counter(0, "replay_drift_max_ns"), 0);
        assert_eq!(run.counter(0, "replay_ios_late"), 0);
    }

    // Proves the replay is open loop: with I/Os slower than the gaps, each is still issued at
    // its recorded time while the earlier ones are in flight (no drift).
    #[test]
    fn timed_replay_does_not_wait_for_completions() {
        let path = trace_file("open-loop", TWO_PROCESSES);
        let (run, _) = replay(&format!("trace:{path}"), &sda(), 10 * MS);
        let times: Vec<u64> = run.records.iter().map(|r| r.submitted.as_nanos()).collect();
        assert_eq!(times, [0, MS, 2 * MS, 4 * MS, 4 * MS + MS / 2]);
        assert_eq!(run.records[4].in_flight, 3, "a's third I/O goes with two still in flight");
        assert_eq!(run.counter(0, "replay_drift_total_ns"), 0);
    }

    // Proves speed=2 halves every gap (and so the span), speed=0.5 doubles them, and afap
    // ignores them: every process issues its whole stream at once, in its order.
    #[test]
    fn speed_scales_and_afap_ignores_the_gaps() {
        let path = trace_file("speed", TWO_PROCESSES);
        let times = |spec: String| -> Vec<u64> {
            replay(&spec, &sda(), 100_000)
                .0
                .records
                .iter()
                .map(|r| r.submitted.as_nanos())
                .collect()
        };
        assert_eq!(
            times(format!("trace:{path}:speed=2")),
            [0, MS / 2, MS, 2 * MS, 2 * MS + MS / 4]
        );
        assert_eq!(times(format!("trace:{path}:speed=0.5")), [0, 2 * MS, 4 * MS, 8 * MS, 9 * MS]);
        let (afap, _) = replay(&format!("trace:{path}:afap=1"), &sda(), 100_000);
        assert!(afap.records.iter().all(|r| r.submitted == Instant::ZERO));
        let a: Vec<u64> =
            afap.records.iter().filter(|r| r.issuer == 0).map(|r| r.io.offset_bytes).collect();
        assert_eq!(a, [0, 4096, 8192], "a's order kept");
        // afap with depth=1: each I/O right after the process's previous one completes.
        let (serial, _) = replay(&format!("trace:{path}:afap=1,depth=1"), &sda(), 100_000);
        let a_times: Vec<u64> = serial
            .records
            .iter()
            .filter(|r| r.issuer == 0)
            .map(|r| r.submitted.as_nanos())
            .collect();
        assert_eq!(a_times, [0, 100_000, 200_000]);
    }

    // Proves the drift counters: with depth=1 and 3 ms I/Os, a's I/Os at 2 and 4.5 ms go out
    // at 3 and 6 ms (drift 1 and 1.5 ms), b's at 4 ms on time; so 5 I/Os, total 2.5 ms, mean
    // 0.5 ms, max 1.5 ms (across processes: reported once), one late over 1 ms, and two over
    // a `late=500us` threshold.
    #[test]
    fn drift_counters_measure_blocking_exactly() {
        let path = trace_file("drift", TWO_PROCESSES);
        let (run, _) = replay(&format!("trace:{path}:depth=1"), &sda(), 3 * MS);
        let times: Vec<u64> = run.records.iter().map(|r| r.submitted.as_nanos()).collect();
        assert_eq!(times, [0, MS, 3 * MS, 4 * MS, 6 * MS]);
        assert_eq!(run.counter(0, "replay_ios"), 5);
        assert_eq!(run.counter(0, "replay_drift_total_ns"), 2 * MS + MS / 2);
        assert_eq!(run.counter(0, "replay_drift_mean_ns"), MS / 2);
        assert_eq!(run.counter(0, "replay_drift_max_ns"), MS + MS / 2);
        assert_eq!(run.counter(0, "replay_ios_late"), 1);
        let (strict, _) = replay(&format!("trace:{path}:depth=1,late=500us"), &sda(), 3 * MS);
        assert_eq!(strict.counter(0, "replay_ios_late"), 2);
    }

    // Proves the phase's summed counters give the true maximum and mean across processes,
    // not the sum of each process's maximum: a drifts 1 ms (its 2 ms I/O waits for its first,
    // done at 3 ms), then b drifts 2 ms (its 2 ms I/O waits until 4 ms); the maximum is 2 ms
    // (a sum of per-process maxima would say 3), the mean 3 ms / 4 I/Os.
    #[test]
    fn drift_maximum_and_mean_are_exact_across_processes() {
        let path = trace_file(
            "max",
            "elevator-trace 1\n+0 R 0 512 pid=1\n+1000000 R 512 512 pid=2\n\
             +1000000 R 1024 512 pid=1\n+0 R 1536 512 pid=2\n",
        );
        let (run, _) = replay(&format!("trace:{path}:depth=1"), &sda(), 3 * MS);
        let times: Vec<u64> = run.records.iter().map(|r| r.submitted.as_nanos()).collect();
        assert_eq!(times, [0, MS, 3 * MS, 4 * MS]);
        assert_eq!(run.counter(0, "replay_drift_max_ns"), 2 * MS);
        assert_eq!(run.counter(0, "replay_drift_total_ns"), 3 * MS);
        assert_eq!(run.counter(0, "replay_drift_mean_ns"), 3 * MS / 4);
    }

    // Proves per-process order wins over out-of-order timestamps: a's third record, stamped
    // 0.5 ms (before its second at 2 ms), goes out right after the second, at 2 ms, and counts
    // no drift; b, stamped 1 ms, is unaffected.
    #[test]
    fn out_of_order_records_keep_the_process_order() {
        let path = trace_file(
            "order",
            "elevator-trace 1\n+0 R 0 512 pid=1\n+2000000 R 512 512 pid=1\n\
             -1000000 R 8192 512 pid=2\n-500000 R 1024 512 pid=1\n",
        );
        let (run, _) = replay(&format!("trace:{path}"), &sda(), 10 * MS);
        assert_eq!(
            submissions(&run),
            [
                (0, 0, IoKind::Read, 0, 512),
                (1, MS, IoKind::Read, 8192, 512),
                (0, 2 * MS, IoKind::Read, 512, 512),
                (0, 2 * MS, IoKind::Read, 1024, 512),
            ]
        );
        assert_eq!(run.counter(0, "replay_drift_max_ns"), 0);
    }

    // Proves a trace without pids is one process, that several trace devices map in order of
    // first appearance to the targets from `device=` on, and that more devices than targets
    // are refused naming the devices.
    #[test]
    fn devices_map_to_targets_in_order() {
        let path = trace_file(
            "devices",
            "elevator-trace 1\n+0 R 0 512 dev=8,16\n+10 R 512 512 dev=8,0\n+10 W 0 512 dev=8,16\n",
        );
        let three = devices(&[("sda", 1 << 20), ("sdb", 1 << 20), ("sdc", 1 << 20)]);
        let (run, processes) = replay(&format!("trace:{path}"), &three, 1000);
        assert_eq!(processes.len(), 1);
        let places: Vec<Place> = run.records.iter().map(|r| r.io.place).collect();
        assert_eq!(places, [Place::Device(0), Place::Device(1), Place::Device(0)]);
        let (run, _) = replay(&format!("trace:{path}:device=sdb"), &three, 1000);
        let places: Vec<Place> = run.records.iter().map(|r| r.io.place).collect();
        assert_eq!(places, [Place::Device(1), Place::Device(2), Place::Device(1)]);
        let error = WorkloadSpec::parse(&format!("trace:{path}:device=2"))
            .unwrap()
            .plan(&three, &Prng::new(1))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("2 devices (`8,16`, `8,0`)") && error.contains("1 target(s)"),
            "{error}"
        );
        let error = WorkloadSpec::parse(&format!("trace:{path}:device=sdx"))
            .unwrap()
            .plan(&three, &Prng::new(1))
            .unwrap_err()
            .to_string();
        assert!(error.contains("`sdx` is no target (accepted: sda, sdb, sdc"), "{error}");
    }

    // Proves bad traces are refused naming the file and the record: past the target's end,
    // not in sectors under direct I/O (accepted with direct=0), 0 bytes; a bad line names the
    // file and line (the reader's error), and so does an empty path and an unknown key.
    #[test]
    fn bad_traces_are_refused_naming_the_record() {
        let plan_error = |text: &str, keys: &str, targets: &[Target]| {
            let path = trace_file("bad", text);
            WorkloadSpec::parse(&format!("trace:{path}{keys}"))
                .and_then(|spec| spec.plan(targets, &Prng::new(1)).map(|_| ()))
                .unwrap_err()
                .to_string()
        };
        let small = devices(&[("sda", 1 << 20)]);
        let error = plan_error("elevator-trace 1\n+0 R 0 512\n+0 R 1048064 1024\n", "", &small);
        assert!(error.contains("t.trace"), "{error}");
        assert!(error.contains("record 2 (read of 1024 bytes at byte 1048064)"), "{error}");
        assert!(error.contains("past the end of `sda` (1048576 bytes)"), "{error}");
        let odd = "elevator-trace 1\n+0 W 0 512\n+5 W 100 512\n";
        let error = plan_error(odd, "", &small);
        assert!(error.contains("record 2 (write of 512 bytes at byte 100)"), "{error}");
        assert!(error.contains("512-byte sectors"), "{error}");
        let path = trace_file("buffered", odd);
        let buffered = WorkloadSpec::parse(&format!("trace:{path}:direct=0")).unwrap();
        assert!(buffered.plan(&small, &Prng::new(1)).is_ok(), "buffered I/O needs no sectors");
        let error = plan_error("elevator-trace 1\n+0 R 0 0\n", "", &small);
        assert!(error.contains("record 1 (read of 0 bytes at byte 0)"), "{error}");
        let error = plan_error("elevator-trace 1\n+0 R 0 512\n+5 X 0 512\n", "", &small);
        assert!(error.contains("t.trace:3"), "{error}");
        assert!(WorkloadSpec::parse("trace:").is_err());
        let error = plan_error("elevator-trace 1\n+0 R 0 512\n", ":pace=2", &small);
        assert!(error.contains("pace"), "{error}");
    }

    // Proves the spec prints back as written (path with a colon, set keys only), parses
    // back to an equal spec, and `may_write` follows the trace's operations.
    #[test]
    fn spec_round_trips_and_may_write_follows_the_trace() {
        let reads = trace_file("reads:colon", "elevator-trace 1\n+0 R 0 512\n+0 F 0 0\n");
        let spec = WorkloadSpec::parse(&format!("trace:{reads}:speed=2,afap=0")).unwrap();
        assert_eq!(spec.to_string(), format!("trace:{reads}:speed=2,afap=0"));
        assert_eq!(WorkloadSpec::parse(&spec.to_string()).unwrap(), spec);
        assert!(!spec.may_write());
        assert_eq!(spec.trace_extent_bytes(), Some(512));
        let writes = trace_file("writes", "elevator-trace 1\n+0 R 0 512\n+0 D 0 4096\n");
        assert!(WorkloadSpec::parse(&format!("trace:{writes}")).unwrap().may_write());
        let error = WorkloadSpec::parse("trace:/nonexistent/t.trace").unwrap_err().to_string();
        assert!(error.contains("/nonexistent/t.trace: cannot read"), "{error}");
    }

    // Proves the replay reads every format through `elevator_trace`: an fio v3 iolog (no
    // pids: one process; µs times; its device file mapped to the first target) keeps its
    // 2 ms and 3 ms gaps, and a blkparse trace's two pids become two issuers with their
    // `[comm]` names, their sector offsets in bytes and their sync flag.
    #[test]
    fn iolog_and_blkparse_traces_replay() {
        let iolog = trace_file(
            "iolog",
            "fio version 3 iolog\n0 /dev/sdq add\n0 /dev/sdq open\n1000 /dev/sdq read 0 4096\n\
             3000 /dev/sdq write 8192 4096\n6000 /dev/sdq read 4096 512\n7000 /dev/sdq close\n",
        );
        let (run, processes) = replay(&format!("trace:{iolog}"), &sda(), 100_000);
        assert_eq!(processes.len(), 1);
        assert_eq!(
            submissions(&run),
            [
                (0, 0, IoKind::Read, 0, 4096),
                (0, 2 * MS, IoKind::Write, 8192, 4096),
                (0, 5 * MS, IoKind::Read, 4096, 512),
            ]
        );
        let blkparse = trace_file(
            "blkparse",
            "  8,0    0        1     0.000000000  4242  Q  RS 2048 + 8 [reader]\n\
               8,0    1        1     0.000500000  5151  Q   W 4096 + 16 [writer]\n\
               8,0    0        2     0.001000000  4242  Q  RS 2056 + 8 [reader]\n",
        );
        let plan =
            WorkloadSpec::parse(&format!("trace:{blkparse}")).unwrap().plan(&sda(), &Prng::new(1));
        let plan = plan.unwrap();
        let names: Vec<&str> = plan.phases[0].issuers.iter().map(|issuer| issuer.name()).collect();
        assert_eq!(names, ["reader/4242", "writer/5151"]);
        let run = crate::testing::run(plan, |_| Duration::from_micros(50));
        assert_eq!(
            submissions(&run),
            [
                (0, 0, IoKind::Read, 2048 * 512, 4096),
                (1, MS / 2, IoKind::Write, 4096 * 512, 8192),
                (0, MS, IoKind::Read, 2056 * 512, 4096),
            ]
        );
        assert!(run.records[0].io.flags.contains(RequestFlags::SYNC));
        assert!(!run.records[1].io.flags.contains(RequestFlags::SYNC), "W without S is async");
    }

    // Proves the same trace replays identically twice (submissions and counters).
    #[test]
    fn replay_is_deterministic() {
        let path = trace_file("determinism", TWO_PROCESSES);
        let (first, _) = replay(&format!("trace:{path}:depth=1"), &sda(), 3 * MS);
        let (second, _) = replay(&format!("trace:{path}:depth=1"), &sda(), 3 * MS);
        assert_eq!(first.records, second.records);
        assert_eq!(first.phases, second.phases);
    }
}
