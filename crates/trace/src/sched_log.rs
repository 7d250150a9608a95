//! A scheduler-decision capture (issue 25): every event a kernel block-layer scheduler's
//! tracepoints record for one device, with what is needed to replay them into our
//! implementation of the same scheduler and compare its choice at each issue.
//!
//! A capture is the kernel run's settings ([`SchedCaptureHeader`]: kernel release, `HZ`,
//! scheduler, tunables, queue sizes, lost-event count) and its events ([`SchedEvent`]) in
//! time order. The block events keep every field the tracepoints print (`block_rq_insert`,
//! `block_rq_merge`, `block_rq_issue`, `block_rq_requeue`, `block_rq_complete`,
//! `block_bio_backmerge`, `block_bio_frontmerge`, `block_bio_queue`, `block_getrq`); kyber's own
//! tracepoints (`kyber_adjust`, `kyber_latency`, `kyber_throttled`) carry its domain depths
//! and latency evaluations.
//!
//! The types here are the interface between the capture (`elevator-kernel`) and the replay
//! (`elevator-sched`'s conformance driver).
//!
//! # The file format (`.sched`, versions 1 to 3)
//!
//! Text, like [`crate::compact`] and for the same reasons (read with `less`, cut with `head`
//! and `grep`, diffed): with delta times a line is little longer than its numbers.
//!
//! ```text
//! elevator-sched-capture 1
//! kernel_release = 6.18.44
//! hz = 250
//! scheduler = mq-deadline
//! iosched.fifo_batch = 16
//! iosched.read_expire = 500
//! nr_requests = 256
//! queue_depth = 128
//! hw_queues = 2
//! max_sectors_kb = 512
//! cpus = 2
//! lost_events = 0
//! device = 7,0
//! workload = randrw
//! +0 Q 1 4242 fio W S 2048 8 - -
//! +310 I 1 4242 fio W S 2048 8 be/4 -
//! +1200 D 0 4242 fio W S 2048 8 be/4 -
//! +52000 C 0 0 - W S 2048 8 be/4 0
//! +8 KA WRITE 64
//! +4 KL READ total 90 3 4 1021
//! +2 KT WRITE
//! ```
//!
//! * Line 1 is `elevator-sched-capture VERSION`. Version 2 (issue 25) adds the plug events
//!   `P` and `U`, and is otherwise version 1: the writer writes `1` when a capture has no plug
//!   event (so what it wrote before is written byte for byte as before) and `2` when it has
//!   one; the reader reads both and refuses any other version. Version 3 (issue 25, kblockd
//!   runs) adds `WS` and `WE`, and is otherwise version 2: written only when a capture has one
//!   of them (so a capture without them is written as version 1 or 2, byte for byte as
//!   before); the reader reads versions 1, 2 and 3.
//! * `WS` and `WE` are the start and end of a **kblockd run** of the device's hardware queue:
//!   `workqueue_execute_start` and `workqueue_execute_end` of `blk_mq_run_work_fn`
//!   (`block/blk-mq.c`: the hardware queue's `run_work`, queued on kblockd by
//!   `blk_mq_run_hw_queue` when a run is async, by `blk_mq_delay_run_hw_queue` and by restarts)
//!   on the kworker `PID` of CPU `CPU`. The workqueue events print the work item's address, not
//!   the device; a hardware queue's `run_work` is one fixed address, so the capture keeps the
//!   executions of the address(es) whose runs issued requests of the device
//!   (`elevator-kernel`'s capture), including the runs that issue nothing.
//! * `block_plug` and `block_unplug` print no device (`include/trace/events/block.h`: only
//!   `nr_rq` and `comm`), so a capture keeps those of the tasks that queued I/O on its device.
//!   An unplug marks a **queue run**: `blk_mq_dispatch_list` (6.18, `block/blk-mq.c`) prints
//!   it, inserts the `REQUESTS` requests of the plug list for the queue (each an `I` event, or
//!   a `J` when it merges at insert) and then runs the hardware queue.
//! * Then the header, one `key = value` line per field of [`SchedCaptureHeader`] (every key
//!   exactly once, any order): `kernel_release`, `hz`, `scheduler`, `nr_requests`,
//!   `queue_depth`, `hw_queues`, `max_sectors_kb`, `cpus`, `lost_events`, `device`,
//!   `workload`; optionally `rotational` (`0` or `1`, the queue's flag; captures written before
//!   it existed lack it); and one `iosched.NAME = VALUE` line per tunable (the writer writes
//!   them in [`SchedCaptureHeader::tunables`] order, the reader keeps the file's order).
//! * Then one event per line, its fields separated by single spaces. The first field is the
//!   time as a signed difference in ns from the previous event's (the first event's from 0),
//!   always with its sign (`+N`, `-N`); the second names the event:
//!
//! | code | event | fields after the code |
//! |---|---|---|
//! | `Q` | `block_bio_queue` ([`BlockPoint::BioQueue`]) | block fields |
//! | `M` | `block_bio_backmerge` ([`BlockPoint::BioBackMerge`]) | block fields |
//! | `F` | `block_bio_frontmerge` ([`BlockPoint::BioFrontMerge`]) | block fields |
//! | `G` | `block_getrq` ([`BlockPoint::GetRq`]) | block fields |
//! | `I` | `block_rq_insert` ([`BlockPoint::Insert`]) | block fields |
//! | `J` | `block_rq_merge` ([`BlockPoint::Merge`]; "joined", blktrace has no letter) | block fields |
//! | `D` | `block_rq_issue` ([`BlockPoint::Issue`]) | block fields |
//! | `R` | `block_rq_requeue` ([`BlockPoint::Requeue`]) | block fields |
//! | `C` | `block_rq_complete` ([`BlockPoint::Complete`]) | block fields |
//! | `KA` | `kyber_adjust` | `DOMAIN DEPTH` |
//! | `KL` | `kyber_latency` | `DOMAIN KIND PERCENTILE NUMERATOR DENOMINATOR SAMPLES` |
//! | `KT` | `kyber_throttled` | `DOMAIN` |
//! | `P` | `block_plug` (version 2) | `CPU PID COMMAND` |
//! | `U` | `block_unplug` (version 2) | `CPU PID COMMAND REQUESTS` |
//! | `WS` | `workqueue_execute_start` of the device's `blk_mq_run_work_fn` (version 3) | `CPU PID` |
//! | `WE` | `workqueue_execute_end` of it (version 3) | `CPU PID` |
//!
//! The block fields, all present, in this order ([`BlockRecord`]'s fields):
//!
//! | field | written as |
//! |---|---|
//! | `cpu` | decimal |
//! | `pid` | decimal |
//! | `command` | a name (below), `-` for none |
//! | `op` | `R` read, `W` write, `D` discard, `F` flush |
//! | `flags` | any of `P` preflush, `S` sync, `F` FUA, `M` metadata, `A` readahead, in that order; `-` for none |
//! | `sector` | decimal, 512-byte sectors |
//! | `sectors` | decimal |
//! | `priority` | `CLASS/LEVEL` (class `none`, `rt`, `be`, `idle`; level 0..=7), `-` for none |
//! | `error` | decimal (signed), `-` for none |
//!
//! * Names (`command`, kyber's `DOMAIN` and `KIND`, header values that are text, tunable names
//!   and values) are written with `%` and two hex digits for each byte of `%`, white space and
//!   control characters (as [`crate::compact`] does); a name that is exactly `-` is written
//!   `%2D` (a lone `-` is "none"), and the empty name is a lone `%`.
//! * A line starting with `#` is a comment; blank lines are skipped.
//!
//! Nothing is lost in writing: [`write()`] then [`parse`] gives back the same [`SchedCapture`].
//!
//! # Deviations
//!
//! * The `ioprio` the rq tracepoints print has a third part, the priority hint (6.x's
//!   `IOPRIO_PRIO_HINT`, e.g. command-duration limits); no scheduler here reads it, so
//!   [`BlockRecord::priority`] keeps only class and level and the file has no hint field.
//! * `WS`/`WE` keep no work address: the runs of all of the device's hardware queues are one
//!   sequence (a loop device, the captures' device, has one hardware queue).

use std::io::Write;
use std::path::Path;

use crate::compact::{class_name, escape, flag_letters, parse_flags, parse_priority, unescape};
use crate::{IoFlags, ParseError, TraceError};
use elevator_core::{IoPriority, Op};

/// The header's first word.
pub const MAGIC: &str = "elevator-sched-capture";
/// The version this crate writes for a capture with plug events and no kblockd run (one
/// without plug events is written as [`VERSION_1`], one with kblockd runs as [`VERSION_3`]);
/// the reader reads all three.
pub const VERSION: u32 = 2;
/// The version with kblockd runs (`WS`, `WE`).
pub const VERSION_3: u32 = 3;
/// The version without plug events.
pub const VERSION_1: u32 = 1;

/// The kernel run a capture comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedCaptureHeader {
    /// The running kernel's release (`uname -r`), e.g. `6.18.44`.
    pub kernel_release: String,
    /// The kernel's `CONFIG_HZ` (jiffies per second), which its schedulers count time in.
    pub hz: u32,
    /// The scheduler as sysfs names it (`mq-deadline`, `kyber`, `bfq`, `none`).
    pub scheduler: String,
    /// Every file of the queue's `iosched/` directory, name and value as read back after the
    /// run's tunables were written, in name order.
    pub tunables: Vec<(String, String)>,
    /// The queue's `nr_requests` with the scheduler attached (scheduler tags).
    pub nr_requests: u32,
    /// The hardware queue depth (driver tags), e.g. 128 for loop.
    pub queue_depth: u32,
    /// The number of hardware queues.
    pub hw_queues: u32,
    /// `max_sectors_kb` of the queue.
    pub max_sectors_kb: u32,
    /// The CPUs online during the capture.
    pub cpus: u32,
    /// Events the kernel's ring buffer lost (overruns, `[LOST n EVENTS]`, dropped); a capture
    /// with any is refused for judging.
    pub lost_events: u64,
    /// The device, `major,minor`.
    pub device: String,
    /// The workload that ran, as the user gave it (a `-w` spec or a job file's name).
    pub workload: String,
    /// The queue's `rotational` flag (bfq reads it at attach); `None` in a capture written
    /// before the key existed (optional in the file: `rotational = 0` or `1`).
    pub rotational: Option<bool>,
}

/// Which tracepoint an event of [`SchedEvent::Block`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockPoint {
    /// `block_bio_queue`: a bio entered the block layer (blkparse Q).
    BioQueue,
    /// `block_bio_backmerge`: a bio was merged at the back of a request (M); the extent is the
    /// bio's.
    BioBackMerge,
    /// `block_bio_frontmerge`: a bio was merged at the front of a request (F); the bio's
    /// extent.
    BioFrontMerge,
    /// `block_getrq`: a request was allocated for a bio (G).
    GetRq,
    /// `block_rq_insert`: a request went into the scheduler (I).
    Insert,
    /// `block_rq_merge`: a request was absorbed into another (the absorbed one's extent).
    Merge,
    /// `block_rq_issue`: a request went to the driver (D).
    Issue,
    /// `block_rq_requeue`: the driver gave a request back (R).
    Requeue,
    /// `block_rq_complete`: the device completed a request (C).
    Complete,
}

/// One block tracepoint event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRecord {
    /// Which tracepoint.
    pub point: BlockPoint,
    /// The trace clock (`mono`) in ns, since the capture's first event.
    pub time_ns: u64,
    /// The CPU the event fired on.
    pub cpu: u32,
    /// The running task's pid (for completions usually not the submitter).
    pub pid: u32,
    /// The task name the event prints (`comm`), when it prints one.
    pub command: Option<String>,
    /// The operation (from the RWBS letters; a flush without data is [`Op::Flush`]).
    pub op: Op,
    /// The other RWBS letters.
    pub flags: IoFlags,
    /// The first sector (512 bytes).
    pub sector: u64,
    /// The sectors.
    pub sectors: u32,
    /// The request's I/O priority as the event prints it (class, level); `None` for class
    /// `none` and for bio events, which print none.
    pub priority: Option<IoPriority>,
    /// The completion's error (0 on success), completion events only.
    pub error: Option<i32>,
}

/// One event of a capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchedEvent {
    /// A block tracepoint.
    Block(BlockRecord),
    /// `kyber_adjust`: kyber set a domain's depth.
    KyberAdjust {
        /// The trace clock in ns since the capture's first event.
        time_ns: u64,
        /// The domain (`READ`, `WRITE`, `DISCARD`, `OTHER`).
        domain: String,
        /// Its new depth.
        depth: u32,
    },
    /// `kyber_latency`: kyber evaluated a domain's latency percentile.
    KyberLatency {
        /// The trace clock in ns since the capture's first event.
        time_ns: u64,
        /// The domain.
        domain: String,
        /// `total` or `I/O`.
        kind: String,
        /// The percentile evaluated (90 or 99).
        percentile: u32,
        /// The bucket numerator of the latency estimate.
        numerator: u32,
        /// Its denominator.
        denominator: u32,
        /// Samples in the window.
        samples: u32,
    },
    /// `kyber_throttled`: a request of a domain found no token.
    KyberThrottled {
        /// The trace clock in ns since the capture's first event.
        time_ns: u64,
        /// The domain.
        domain: String,
    },
    /// `block_plug` (`P`, version 2): a task started a plug.
    Plug {
        /// The trace clock in ns since the capture's first event.
        time_ns: u64,
        /// The CPU.
        cpu: u32,
        /// The task's pid.
        pid: u32,
        /// The task name it prints, when it prints one.
        command: Option<String>,
    },
    /// `block_unplug` (`U`, version 2): a plug flush of `requests` requests for one queue,
    /// inserted next, then a run of the hardware queue (module docs).
    Unplug {
        /// The trace clock in ns since the capture's first event.
        time_ns: u64,
        /// The CPU.
        cpu: u32,
        /// The task's pid.
        pid: u32,
        /// The task name it prints, when it prints one.
        command: Option<String>,
        /// The requests flushed (`nr_rq`).
        requests: u32,
    },
    /// `workqueue_execute_start` of the device's hardware-queue run (`WS`, version 3): a
    /// kblockd run of the queue starts (module docs).
    KblockdStart {
        /// The trace clock in ns since the capture's first event.
        time_ns: u64,
        /// The CPU.
        cpu: u32,
        /// The kworker's pid.
        pid: u32,
    },
    /// `workqueue_execute_end` of it (`WE`, version 3): the run has returned.
    KblockdEnd {
        /// The trace clock in ns since the capture's first event.
        time_ns: u64,
        /// The CPU.
        cpu: u32,
        /// The kworker's pid.
        pid: u32,
    },
}

impl SchedEvent {
    /// Its time, ns since the capture's first event.
    pub fn time_ns(&self) -> u64 {
        match self {
            SchedEvent::Block(record) => record.time_ns,
            SchedEvent::KyberAdjust { time_ns, .. }
            | SchedEvent::KyberLatency { time_ns, .. }
            | SchedEvent::KyberThrottled { time_ns, .. }
            | SchedEvent::Plug { time_ns, .. }
            | SchedEvent::Unplug { time_ns, .. }
            | SchedEvent::KblockdStart { time_ns, .. }
            | SchedEvent::KblockdEnd { time_ns, .. } => *time_ns,
        }
    }

    /// Whether it is an event of version 3 (a kblockd run's start or end).
    pub fn is_kblockd(&self) -> bool {
        matches!(self, SchedEvent::KblockdStart { .. } | SchedEvent::KblockdEnd { .. })
    }

    /// Whether it is an event of version 2 (a plug event).
    pub fn is_plug(&self) -> bool {
        matches!(self, SchedEvent::Plug { .. } | SchedEvent::Unplug { .. })
    }
}

/// A whole capture: its settings and its events in time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedCapture {
    /// The kernel run's settings.
    pub header: SchedCaptureHeader,
    /// The events, by time (ties in the order the kernel's buffer gave them).
    pub events: Vec<SchedEvent>,
}

/// The header keys, in the order [`write`] writes them (tunables come after `scheduler`).
const HEADER_KEYS: [&str; 11] = [
    "kernel_release",
    "hz",
    "scheduler",
    "nr_requests",
    "queue_depth",
    "hw_queues",
    "max_sectors_kb",
    "cpus",
    "lost_events",
    "device",
    "workload",
];

/// The prefix of a tunable's header key.
const TUNABLE_PREFIX: &str = "iosched.";

impl BlockPoint {
    /// Every point, in the order of the format's table.
    pub const ALL: [BlockPoint; 9] = [
        BlockPoint::BioQueue,
        BlockPoint::BioBackMerge,
        BlockPoint::BioFrontMerge,
        BlockPoint::GetRq,
        BlockPoint::Insert,
        BlockPoint::Merge,
        BlockPoint::Issue,
        BlockPoint::Requeue,
        BlockPoint::Complete,
    ];

    /// Its code in the file format.
    pub const fn code(self) -> &'static str {
        match self {
            BlockPoint::BioQueue => "Q",
            BlockPoint::BioBackMerge => "M",
            BlockPoint::BioFrontMerge => "F",
            BlockPoint::GetRq => "G",
            BlockPoint::Insert => "I",
            BlockPoint::Merge => "J",
            BlockPoint::Issue => "D",
            BlockPoint::Requeue => "R",
            BlockPoint::Complete => "C",
        }
    }

    /// The tracepoint it comes from (`block_rq_insert`, ...).
    pub const fn tracepoint(self) -> &'static str {
        match self {
            BlockPoint::BioQueue => "block_bio_queue",
            BlockPoint::BioBackMerge => "block_bio_backmerge",
            BlockPoint::BioFrontMerge => "block_bio_frontmerge",
            BlockPoint::GetRq => "block_getrq",
            BlockPoint::Insert => "block_rq_insert",
            BlockPoint::Merge => "block_rq_merge",
            BlockPoint::Issue => "block_rq_issue",
            BlockPoint::Requeue => "block_rq_requeue",
            BlockPoint::Complete => "block_rq_complete",
        }
    }
}

/// A name as the format writes it (see the module doc).
fn name_token(text: &str) -> String {
    match text {
        "" => "%".into(),
        "-" => "%2D".into(),
        _ => escape(text),
    }
}

/// A name token read back.
fn parse_name(token: &str) -> Result<String, String> {
    if token == "%" { Ok(String::new()) } else { unescape(token) }
}

/// An optional name token (`-` for none).
fn parse_optional_name(token: &str) -> Result<Option<String>, String> {
    if token == "-" { Ok(None) } else { parse_name(token).map(Some) }
}

fn op_letter(op: Op) -> char {
    match op {
        Op::Read => 'R',
        Op::Write => 'W',
        Op::Discard => 'D',
        Op::Flush => 'F',
    }
}

/// Writes `capture` in the format of the module doc.
pub fn write(capture: &SchedCapture, out: &mut dyn Write) -> Result<(), TraceError> {
    let header = &capture.header;
    let version = if capture.events.iter().any(SchedEvent::is_kblockd) {
        VERSION_3
    } else if capture.events.iter().any(SchedEvent::is_plug) {
        VERSION
    } else {
        VERSION_1
    };
    writeln!(out, "{MAGIC} {version}")?;
    writeln!(out, "kernel_release = {}", name_token(&header.kernel_release))?;
    writeln!(out, "hz = {}", header.hz)?;
    writeln!(out, "scheduler = {}", name_token(&header.scheduler))?;
    for (name, value) in &header.tunables {
        writeln!(out, "{TUNABLE_PREFIX}{} = {}", name_token(name), name_token(value))?;
    }
    writeln!(out, "nr_requests = {}", header.nr_requests)?;
    writeln!(out, "queue_depth = {}", header.queue_depth)?;
    writeln!(out, "hw_queues = {}", header.hw_queues)?;
    writeln!(out, "max_sectors_kb = {}", header.max_sectors_kb)?;
    writeln!(out, "cpus = {}", header.cpus)?;
    writeln!(out, "lost_events = {}", header.lost_events)?;
    writeln!(out, "device = {}", name_token(&header.device))?;
    writeln!(out, "workload = {}", name_token(&header.workload))?;
    if let Some(rotational) = header.rotational {
        writeln!(out, "rotational = {}", u8::from(rotational))?;
    }
    let mut previous_ns = 0u64;
    for event in &capture.events {
        let time_ns = event.time_ns();
        let delta = if time_ns >= previous_ns {
            format!("+{}", time_ns - previous_ns)
        } else {
            format!("-{}", previous_ns - time_ns)
        };
        previous_ns = time_ns;
        match event {
            SchedEvent::Block(record) => {
                let priority = record.priority.map_or_else(
                    || "-".to_owned(),
                    |priority| format!("{}/{}", class_name(priority.class()), priority.level()),
                );
                let error = record.error.map_or_else(|| "-".to_owned(), |error| error.to_string());
                writeln!(
                    out,
                    "{delta} {} {} {} {} {} {} {} {} {priority} {error}",
                    record.point.code(),
                    record.cpu,
                    record.pid,
                    record.command.as_deref().map_or_else(|| "-".to_owned(), name_token),
                    op_letter(record.op),
                    flag_letters(record.flags),
                    record.sector,
                    record.sectors,
                )?;
            }
            SchedEvent::KyberAdjust { domain, depth, .. } => {
                writeln!(out, "{delta} KA {} {depth}", name_token(domain))?;
            }
            SchedEvent::KyberLatency {
                domain,
                kind,
                percentile,
                numerator,
                denominator,
                samples,
                ..
            } => {
                writeln!(
                    out,
                    "{delta} KL {} {} {percentile} {numerator} {denominator} {samples}",
                    name_token(domain),
                    name_token(kind)
                )?;
            }
            SchedEvent::KyberThrottled { domain, .. } => {
                writeln!(out, "{delta} KT {}", name_token(domain))?;
            }
            SchedEvent::Plug { cpu, pid, command, .. } => {
                let command = command.as_deref().map_or_else(|| "-".to_owned(), name_token);
                writeln!(out, "{delta} P {cpu} {pid} {command}")?;
            }
            SchedEvent::Unplug { cpu, pid, command, requests, .. } => {
                let command = command.as_deref().map_or_else(|| "-".to_owned(), name_token);
                writeln!(out, "{delta} U {cpu} {pid} {command} {requests}")?;
            }
            SchedEvent::KblockdStart { cpu, pid, .. } => writeln!(out, "{delta} WS {cpu} {pid}")?,
            SchedEvent::KblockdEnd { cpu, pid, .. } => writeln!(out, "{delta} WE {cpu} {pid}")?,
        }
    }
    Ok(())
}

/// [`write()`] into a string.
pub fn to_text(capture: &SchedCapture) -> String {
    let mut out = Vec::new();
    write(capture, &mut out).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("the writer writes UTF-8")
}

/// Reads the capture in `path`.
pub fn read(path: &Path) -> Result<SchedCapture, TraceError> {
    let (file, text) = crate::read_text(path, "a text capture (`elevator-sched-capture 1`)")?;
    Ok(parse(&file, &text)?)
}

/// Reads `text`, a capture in `file` (named in errors).
pub fn parse(file: &str, text: &str) -> Result<SchedCapture, ParseError> {
    let error = |line: usize, field: &'static str, problem: String| ParseError {
        file: file.to_owned(),
        line,
        field,
        problem,
    };
    let mut lines = text.lines().enumerate().map(|(index, line)| (index + 1, line));
    // Version 2 is version 1 with the plug events, version 3 version 2 with kblockd runs:
    // read all three.
    let first = lines.next().map(|(_, line)| line);
    let header_help =
        format!("accepted: `{MAGIC} {VERSION_1}`, `{MAGIC} {VERSION}` or `{MAGIC} {VERSION_3}`");
    match first.map(|line| line.split_whitespace().collect::<Vec<_>>()).as_deref() {
        None => return Err(error(1, "header", format!("an empty file; {header_help}"))),
        Some([given, version]) if *given == MAGIC => {
            if ![VERSION_1, VERSION, VERSION_3]
                .iter()
                .any(|known| version.parse::<u32>() == Ok(*known))
            {
                return Err(error(
                    1,
                    "version",
                    format!("version `{version}` is not known here; {header_help}"),
                ));
            }
        }
        Some(_) => {
            let first = first.unwrap_or_default();
            return Err(error(1, "header", format!("`{first}`; {header_help}")));
        }
    }
    let mut values: [Option<(usize, String)>; HEADER_KEYS.len()] = Default::default();
    let mut tunables = Vec::new();
    let mut rotational = None;
    let mut events = Vec::new();
    let mut time_ns = 0u64;
    let mut last_line = 1;
    for (number, line) in lines {
        last_line = number;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('+') || line.starts_with('-') {
            let event = parse_event(line, &mut time_ns)
                .map_err(|(field, problem)| error(number, field, problem))?;
            events.push(event);
            continue;
        }
        if !events.is_empty() {
            return Err(error(
                number,
                "event",
                format!("`{line}`; accepted after the first event: events (`+N CODE ...`)"),
            ));
        }
        let Some((key, value)) = line.split_once(" = ") else {
            return Err(error(
                number,
                "header",
                format!("`{line}`; accepted: `KEY = VALUE` or an event line `+N CODE ...`"),
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        if let Some(name) = key.strip_prefix(TUNABLE_PREFIX) {
            let name = parse_name(name).map_err(|problem| error(number, "iosched", problem))?;
            if tunables.iter().any(|(known, _)| *known == name) {
                return Err(error(number, "iosched", format!("tunable `{name}` given twice")));
            }
            let value = parse_name(value).map_err(|problem| error(number, "iosched", problem))?;
            tunables.push((name, value));
            continue;
        }
        if key == "rotational" {
            if rotational.is_some() {
                return Err(error(number, "rotational", "given twice; accepted once".into()));
            }
            rotational = Some(match value {
                "0" => false,
                "1" => true,
                other => {
                    return Err(error(
                        number,
                        "rotational",
                        format!("`{other}`; accepted: 0 or 1"),
                    ));
                }
            });
            continue;
        }
        let Some(index) = HEADER_KEYS.iter().position(|known| *known == key) else {
            return Err(error(
                number,
                "header",
                format!(
                    "key `{key}`; accepted: {}, rotational, {TUNABLE_PREFIX}NAME",
                    HEADER_KEYS.join(", ")
                ),
            ));
        };
        if values[index].is_some() {
            return Err(error(number, HEADER_KEYS[index], "given twice; accepted once".into()));
        }
        values[index] = Some((number, value.to_owned()));
    }
    // Every key is required: a capture without its HZ or tunables cannot be replayed faithfully.
    let mut take = |index: usize| {
        values[index].take().ok_or_else(|| {
            error(
                last_line,
                HEADER_KEYS[index],
                format!("missing; every header key is required: {}", HEADER_KEYS.join(", ")),
            )
        })
    };
    let raw: Vec<(usize, String)> =
        (0..HEADER_KEYS.len()).map(&mut take).collect::<Result<_, _>>()?;
    let text_value = |index: usize| {
        let (line, value) = &raw[index];
        parse_name(value).map_err(|problem| error(*line, HEADER_KEYS[index], problem))
    };
    let number = |index: usize| {
        let (line, value) = &raw[index];
        value.parse::<u64>().map_err(|_| {
            error(*line, HEADER_KEYS[index], format!("`{value}` is not a whole number"))
        })
    };
    let number32 = |index: usize| {
        let (line, value) = &raw[index];
        number(index)?
            .try_into()
            .map_err(|_| error(*line, HEADER_KEYS[index], format!("`{value}` is above 4294967295")))
    };
    let header = SchedCaptureHeader {
        kernel_release: text_value(0)?,
        hz: number32(1)?,
        scheduler: text_value(2)?,
        tunables,
        nr_requests: number32(3)?,
        queue_depth: number32(4)?,
        hw_queues: number32(5)?,
        max_sectors_kb: number32(6)?,
        cpus: number32(7)?,
        lost_events: number(8)?,
        device: text_value(9)?,
        workload: text_value(10)?,
        rotational,
    };
    Ok(SchedCapture { header, events })
}

fn parse_event(line: &str, time_ns: &mut u64) -> Result<SchedEvent, (&'static str, String)> {
    let words: Vec<&str> = line.split(' ').collect();
    let delta = words[0];
    let delta_help = "accepted: `+N` or `-N`, ns from the previous event";
    let magnitude = delta
        .get(1..)
        .filter(|digits| digits.as_bytes().first().is_some_and(u8::is_ascii_digit))
        .and_then(|digits| digits.parse::<u64>().ok())
        .ok_or_else(|| ("time", format!("`{delta}`; {delta_help}")))?;
    let time = if delta.starts_with('+') {
        time_ns.checked_add(magnitude)
    } else {
        time_ns.checked_sub(magnitude)
    }
    .ok_or_else(|| ("time", format!("`{delta}` takes the time outside 0..2^64 ns")))?;
    *time_ns = time;
    let codes = "accepted: Q, M, F, G, I, J, D, R, C (block), KA, KL, KT (kyber), P, U (plug), \
                 WS, WE (kblockd run)";
    let code = *words.get(1).ok_or_else(|| ("code", format!("none; {codes}")))?;
    let fields = &words[2..];
    let count = |expected: usize, layout: &str| {
        if fields.len() == expected {
            Ok(())
        } else {
            Err(("fields", format!("{} fields after `{code}`; accepted: `{layout}`", fields.len())))
        }
    };
    let int = |field: &'static str, text: &str| {
        text.parse::<u32>()
            .map_err(|_| (field, format!("`{text}`; accepted: a whole number 0..=4294967295")))
    };
    let name =
        |field: &'static str, text: &str| parse_name(text).map_err(|problem| (field, problem));
    match code {
        "KA" => {
            count(2, "DOMAIN DEPTH")?;
            Ok(SchedEvent::KyberAdjust {
                time_ns: time,
                domain: name("domain", fields[0])?,
                depth: int("depth", fields[1])?,
            })
        }
        "KL" => {
            count(6, "DOMAIN KIND PERCENTILE NUMERATOR DENOMINATOR SAMPLES")?;
            Ok(SchedEvent::KyberLatency {
                time_ns: time,
                domain: name("domain", fields[0])?,
                kind: name("kind", fields[1])?,
                percentile: int("percentile", fields[2])?,
                numerator: int("numerator", fields[3])?,
                denominator: int("denominator", fields[4])?,
                samples: int("samples", fields[5])?,
            })
        }
        "KT" => {
            count(1, "DOMAIN")?;
            Ok(SchedEvent::KyberThrottled { time_ns: time, domain: name("domain", fields[0])? })
        }
        "P" => {
            count(3, "CPU PID COMMAND")?;
            Ok(SchedEvent::Plug {
                time_ns: time,
                cpu: int("cpu", fields[0])?,
                pid: int("pid", fields[1])?,
                command: parse_optional_name(fields[2]).map_err(|problem| ("command", problem))?,
            })
        }
        "U" => {
            count(4, "CPU PID COMMAND REQUESTS")?;
            Ok(SchedEvent::Unplug {
                time_ns: time,
                cpu: int("cpu", fields[0])?,
                pid: int("pid", fields[1])?,
                command: parse_optional_name(fields[2]).map_err(|problem| ("command", problem))?,
                requests: int("requests", fields[3])?,
            })
        }
        "WS" | "WE" => {
            count(2, "CPU PID")?;
            let (cpu, pid) = (int("cpu", fields[0])?, int("pid", fields[1])?);
            Ok(if code == "WS" {
                SchedEvent::KblockdStart { time_ns: time, cpu, pid }
            } else {
                SchedEvent::KblockdEnd { time_ns: time, cpu, pid }
            })
        }
        _ => {
            let point = BlockPoint::ALL
                .into_iter()
                .find(|point| point.code() == code)
                .ok_or_else(|| ("code", format!("`{code}`; {codes}")))?;
            count(9, "CPU PID COMMAND OP FLAGS SECTOR SECTORS PRIORITY ERROR")?;
            let op = match fields[3] {
                "R" => Op::Read,
                "W" => Op::Write,
                "D" => Op::Discard,
                "F" => Op::Flush,
                other => return Err(("op", format!("`{other}`; accepted: R, W, D, F"))),
            };
            let flags: IoFlags = parse_flags(fields[4]).map_err(|problem| ("flags", problem))?;
            let sector = fields[5].parse::<u64>().map_err(|_| {
                ("sector", format!("`{}`; accepted: a whole number of sectors", fields[5]))
            })?;
            let priority = match fields[7] {
                "-" => None,
                text => Some(parse_priority(text).map_err(|problem| ("priority", problem))?),
            };
            let error = match fields[8] {
                "-" => None,
                text => Some(text.parse::<i32>().map_err(|_| {
                    ("error", format!("`{text}`; accepted: `-` or a whole number (errno)"))
                })?),
            };
            Ok(SchedEvent::Block(BlockRecord {
                point,
                time_ns: time,
                cpu: int("cpu", fields[0])?,
                pid: int("pid", fields[1])?,
                command: parse_optional_name(fields[2]).map_err(|problem| ("command", problem))?,
                op,
                flags,
                sector,
                sectors: int("sectors", fields[6])?,
                priority,
                error,
            }))
        }
    }
}

/// A priority as written (`be/4`), for messages and other writers.
pub fn priority_text(priority: IoPriority) -> String {
    format!("{}/{}", class_name(priority.class()), priority.level())
}
