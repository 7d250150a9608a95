//! fio's `read_iolog` (replay a trace) and `write_iolog` (log the I/O a job issues) for a job
//! file's jobs (`/work/shared/specs/fio-compat.md` §6; fio's HOWTO "I/O replay", `iolog.c`
//! `read_iolog`, `read_iolog_get`, `delay_since_ttime`, `iolog_delay`, `log_io_u`). The
//! format itself is [`elevator_trace::iolog`].
//!
//! **Replay.** A job with `read_iolog=FILE` does the log's I/O instead of its own pattern:
//! directions, offsets, lengths and order as logged ([`ReplayIssuer`]). `read_iolog=A:B` gives
//! the job's clones the logs in turn (clone `i` replays the `i mod n`th, fio's
//! `get_name_by_idx`). Each record goes to the file it names, as fio opens the logged names:
//! a simulated device (`sdb`, `/dev/sdb`), or else a regular file of that name on the first
//! device's filesystem; `replay_redirect=DEV` sends every record to one device. Timing:
//!
//! * version 3: before each I/O, the gap between its timestamp and the previous line's,
//!   `gap·100/replay_time_scale` µs, counted from the job's previous issue (fio's
//!   `delay_since_ttime` and `iolog_delay`; none for the first record, after a line stamped
//!   0, or when time goes backwards — fio's rules). `add`, `open` and `close` lines are timed
//!   the same way (fio ≥ 3.31's `ipo_special`), though they do no I/O. The simulator has no
//!   submission cost, so the gaps are kept exactly (fio drifts later, fio #1537).
//! * version 2: `wait N` holds the job until N ms after it started (fio's code, not its
//!   HOWTO's "µs after the previous wait"; fio #247), when that is still ahead.
//! * `replay_no_stall=1`: no gaps and no waits, same order.
//!
//! `replay_skip=read,write,trim,sync` drops those records (a skipped line's timestamp still
//! becomes the previous one, as in fio), `replay_scale=N` divides offsets, `replay_align=A`
//! rounds them down to a multiple of A (a power of two). `iodepth` bounds the I/Os in flight
//! as for any job (a synchronous engine: one).
//!
//! **Write.** A job with `write_iolog=FILE` logs, per clone, fio's version 3 log of the I/O it
//! issued ([`IologWriter`]): the header, `add` and `open` of each of its files, each I/O as it
//! is handed to the device, `close` of each file at the end; timestamps in µs since the clone
//! started. The file is opened for appending when the job is planned (a path relative to the
//! working directory, as fio's `fopen`), and each clone appends its log when it finishes.
//!
//! # Deviations from fio
//!
//! * A log with a bad line is refused (fio reports the line and skips it), and so are a `wait`
//!   in version 3, zero-length reads, writes and trims, an unaligned direct I/O (the kernel's
//!   EINVAL under fio) and I/O past the end of a device, each naming the log's file and line.
//! * Options a replay does not combine with the log (`rw`, `bs` and `size` are fio's own
//!   no-ops here; everything that shapes I/O or timing otherwise: `runtime`, `rate`,
//!   `thinktime`, `loops`, `ramp_time`, priorities, ...) are refused naming their
//!   line, as are `read_iolog_chunked` (the whole log is read at once, which only changes
//!   memory), `merge_blktrace_*` and blktrace's binary logs (not read), `write_iolog` together
//!   with `read_iolog` (fio warns "read iolog overrides write_iolog" and drops the write), a
//!   `filename` that is not a simulated device, `directory`, `-` (stdin) and a unix socket.
//! * `datasync` replays as `sync` (the simulator's one sync).
//! * `elevator sim --max-size/--max-runtime` do not cap a replay: the log decides its I/O.
//! * Live and kernel runs plan replays and logs the same way, but only the simulator is
//!   tested with them here.
//! * `wait` counts from the job's start, not fio's (fio's genesis is the process start, a few
//!   ms earlier).
//! * A regular file the log names is laid out before the run as far as the log's I/O reaches
//!   in it (fio opens the file, which must exist for its reads to find data).
//! * `write_iolog`: each clone appends its whole log when it finishes, so clones sharing one
//!   file write one block each, where fio's clones interleave 8 KiB buffers of their lines.
//!   `open` is logged when the clone starts, at the `add`'s time (fio opens the files a few
//!   hundred µs after its log starts). A job's `ramp_time` phase is not logged (fio's log
//!   has the ramp's I/O too). A clone stopped before it finished (the run failed)
//!   appends nothing; a write error once the file is open is not reported. With several
//!   schedulers (`elevator sim -s a,b`, `elevator run -s a,b`) each run writes its own file,
//!   the scheduler before the extension (`w.log` → `w.bfq.log`,
//!   `WorkloadSpec::fio_tagged`), as fio's other logs are named then; `elevator kernel
//!   compare -s a,b` runs the schedulers one after the other and appends each run's log to
//!   the one file in the order given (fio run twice appends too).

use std::io::Write;
use std::sync::{Arc, Mutex};

use elevator_core::{Duration, Instant, IoPriority, ParamError, ProcessId, RequestFlags};
use elevator_trace::iolog::{Action, FileAction, IoAction, Iolog, Record, Version};

use crate::fio::{FioJob, FioOption, FioValue, Location};
use crate::{FailedIo, FileSpec, Io, IoFailure, IoId, IoKind, Issuer, Place, Poll, Target};

fn refuse(at: &Location, problem: String) -> ParamError {
    ParamError::Impossible { component: format!("fio {at}"), key: "option", problem }
}

/// Which directions `replay_skip` drops (fio's `str_replay_skip_cb`: read, write, trim, sync).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Skip {
    read: bool,
    write: bool,
    trim: bool,
    sync: bool,
}

/// A job's `read_iolog` and its `replay_*` options.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Replay {
    /// The logs, one per clone in turn (`read_iolog=A:B`).
    logs: Vec<String>,
    /// Where `read_iolog` was written.
    at: Location,
    no_stall: bool,
    /// `replay_time_scale`, percent (fio's default 100, at least 1).
    time_scale_percent: u64,
    skip: Skip,
    /// `replay_align` (0: none).
    align_bytes: u64,
    /// `replay_scale` (fio's default 1).
    scale: u64,
    redirect: Option<(String, Location)>,
}

/// A job's iolog options as its section gives them ([`take_option`]), checked by [`finish`].
#[derive(Clone, Debug, Default)]
pub(crate) struct IologOptions {
    read: Option<FioOption>,
    write: Option<FioOption>,
    replay: Vec<FioOption>,
}

/// Options a replaying job may carry besides the iolog ones: its identity, engine and depth,
/// grouping, and what fio itself ignores once the log decides the I/O (`rw`, `bs`, `size`).
const REPLAY_COMPATIBLE: &[&str] = &[
    "name",
    "description",
    "ioengine",
    "iodepth",
    "direct",
    "buffered",
    "numjobs",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "wait_for",
    "exitall",
    "exit_what",
    "rw",
    "bs",
    "size",
    "filename",
    // Where the replaying thread runs and how it submits (`Issuer::cpu`).
    "cpus_allowed",
    "cpus_allowed_policy",
    "cpumask",
    "iodepth_batch",
    "fixedbufs",
    "registerfiles",
    "hipri",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "nonvectored",
];

/// Takes `option` into `options` if it is one of the iolog options; `true` when it was.
pub(crate) fn take_option(options: &mut IologOptions, option: &FioOption) -> bool {
    match option.name {
        "read_iolog" => options.read = Some(option.clone()),
        "write_iolog" => options.write = Some(option.clone()),
        name if name.starts_with("replay_")
            || name.starts_with("merge_blktrace")
            || name == "read_iolog_chunked" =>
        {
            options.replay.push(option.clone());
        }
        _ => return false,
    }
    true
}

fn text(value: &FioValue) -> String {
    match value {
        FioValue::Str(text) => text.clone(),
        FioValue::List(items) => items.join(":"),
        other => other.to_string(),
    }
}

/// `write_iolog`'s path, and where it was written.
pub(crate) type WriteIolog = (String, Location);

/// Checks a job's iolog options against each other and its other options; returns its replay
/// and its `write_iolog` path (with where it was written).
pub(crate) fn finish(
    job: &FioJob,
    options: IologOptions,
    reporting: &[&str],
) -> Result<(Option<Replay>, Option<WriteIolog>), ParamError> {
    let write = options.write.map(|option| (text(&option.value), option.at));
    let Some(read) = options.read else {
        if let Some(option) = options.replay.first() {
            return Err(refuse(
                &option.at,
                format!("`{}` belongs to read_iolog, which the job does not set", option.name),
            ));
        }
        return Ok((None, write));
    };
    if write.is_some() {
        return Err(refuse(
            &read.at,
            "read_iolog with write_iolog: fio drops write_iolog (\"read iolog overrides \
             write_iolog\"); remove one"
                .into(),
        ));
    }
    let logs: Vec<String> = text(&read.value).split(':').map(str::to_owned).collect();
    if let Some(log) = logs.iter().find(|log| log.is_empty() || log.as_str() == "-") {
        return Err(refuse(
            &read.at,
            format!("read_iolog=`{log}`: name a log file (stdin and empty names are not read)"),
        ));
    }
    let mut replay = Replay {
        logs,
        at: read.at.clone(),
        no_stall: false,
        time_scale_percent: 100,
        skip: Skip::default(),
        align_bytes: 0,
        scale: 1,
        redirect: None,
    };
    for option in &options.replay {
        let bad = |problem: String| Err(refuse(&option.at, problem));
        match (option.name, &option.value) {
            ("replay_no_stall", FioValue::Bool(on)) => replay.no_stall = *on,
            ("replay_time_scale", FioValue::Int(0)) => {
                return bad("replay_time_scale=0: fio's least is 1 (percent)".into());
            }
            ("replay_time_scale", FioValue::Int(percent)) => replay.time_scale_percent = *percent,
            ("replay_align", FioValue::Int(bytes)) if *bytes == 0 || bytes.is_power_of_two() => {
                replay.align_bytes = *bytes;
            }
            ("replay_align", value) => {
                return bad(format!("replay_align={value}: fio takes a power of two"));
            }
            ("replay_scale", FioValue::Int(scale)) => replay.scale = *scale,
            ("replay_redirect", value) => {
                replay.redirect = Some((text(value), option.at.clone()));
            }
            ("replay_skip", value) => {
                for word in text(value).split(',').map(str::trim) {
                    match word {
                        "read" => replay.skip.read = true,
                        "write" => replay.skip.write = true,
                        "trim" => replay.skip.trim = true,
                        "sync" => replay.skip.sync = true,
                        other => {
                            return bad(format!(
                                "replay_skip: unknown `{other}`; accepted: read, write, trim, sync"
                            ));
                        }
                    }
                }
            }
            ("read_iolog_chunked", FioValue::Bool(false)) => {}
            ("read_iolog_chunked", _) => {
                return bad("read_iolog_chunked: the simulator reads the whole log at once \
                            (streaming it would change only memory use)"
                    .into());
            }
            (name, _) => {
                return bad(format!(
                    "`{name}`: blktrace logs are not read, so merging them is not supported"
                ));
            }
        }
    }
    for option in &job.options {
        let known = REPLAY_COMPATIBLE.contains(&option.name)
            || reporting.contains(&option.name)
            || option.name == "read_iolog"
            || options.replay.iter().any(|replay| replay.name == option.name);
        if !known {
            return Err(refuse(
                &option.at,
                format!(
                    "`{}` with read_iolog: the log decides the job's I/O and its timing; the \
                     simulator does not combine it with `{}`",
                    option.name, option.name
                ),
            ));
        }
    }
    Ok((Some(replay), None))
}

/// One step of a replay.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// An I/O, after `delay` since the job's previous issue (version 3).
    Io { kind: IoKind, place: Place, offset_bytes: u64, size_bytes: u64, delay: Duration },
    /// Version 2's `wait`: nothing before `since_start` after the job started.
    Wait { since_start: Duration },
    /// `add`, `open` or `close`: no I/O, but in version 3 timed as one (fio's `ipo_special`
    /// waits out its delay and makes it the last issue).
    File { delay: Duration },
}

/// fio's `delay_since_ttime`: the gap before a record stamped `time_us`, after one stamped
/// `last_us`, in µs at `scale_percent`.
fn gap_us(replay: &Replay, last_us: u64, time_us: u64) -> u64 {
    if last_us == 0 || replay.no_stall || time_us < last_us {
        0
    } else if replay.time_scale_percent == 100 {
        time_us - last_us
    } else {
        ((time_us - last_us) as f64 * (100.0 / replay.time_scale_percent as f64)) as u64
    }
}

impl Replay {
    /// Whether replaying can write to the target: some clone's log has a write or a trim
    /// that `replay_skip` keeps. A log that cannot be read or parsed counts as writing (a
    /// live run opens its target before planning, which then names the error).
    pub(crate) fn may_write(&self) -> bool {
        self.logs.iter().any(|path| {
            let Ok(text) = std::fs::read_to_string(path) else { return true };
            let Ok(log) = Iolog::parse(path, &text) else { return true };
            log.records.iter().any(|record| match record.action {
                Action::Io { action: IoAction::Write, .. } => !self.skip.write,
                Action::Io { action: IoAction::Trim, .. } => !self.skip.trim,
                _ => false,
            })
        })
    }

    /// Reads clone `clone`'s log and turns it into steps on `targets`, adding the regular
    /// files it names to `files`. Errors name the log's file and line.
    fn steps(
        &self,
        clone: u32,
        targets: &[Target],
        files: &mut Vec<FileSpec>,
        direct: bool,
    ) -> Result<Vec<Step>, ParamError> {
        let path = &self.logs[clone as usize % self.logs.len()];
        let at = &self.at;
        let bytes = std::fs::read(path)
            .map_err(|error| refuse(at, format!("read_iolog={path}: cannot read it ({error})")))?;
        // blktrace's binary logs start with its magic in the top 24 bits (either order).
        if bytes.len() >= 4 {
            let word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            if word >> 8 == 0x65_6174 || word.swap_bytes() >> 8 == 0x65_6174 {
                return Err(refuse(
                    at,
                    format!("read_iolog={path} is a blktrace binary log, which is not read"),
                ));
            }
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| refuse(at, format!("read_iolog={path}: not a text iolog")))?;
        let log = Iolog::parse(path, &text).map_err(|error| refuse(at, error.to_string()))?;
        let device = |name: &str| {
            let bare = name.strip_prefix("/dev/").unwrap_or(name);
            targets.iter().position(|target| target.name == bare)
        };
        let redirect = match &self.redirect {
            None => None,
            Some((name, redirect_at)) => Some(device(name).ok_or_else(|| {
                let accepted: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
                refuse(
                    redirect_at,
                    format!(
                        "replay_redirect={name}: no such simulated device (accepted: {})",
                        accepted.join(", ")
                    ),
                )
            })?),
        };
        let mut steps = Vec::new();
        let mut last_us = 0;
        for (index, record) in log.records.iter().enumerate() {
            // Line numbers: the header is line 1 and the reader takes no blank line.
            let line = index + 2;
            let bad = |problem: String| refuse(at, format!("{path}:{line}: {problem}"));
            let delay_us = match record.time_us {
                Some(time_us) => {
                    let gap = gap_us(self, last_us, time_us);
                    last_us = time_us;
                    gap
                }
                None => 0,
            };
            let (action, offset_bytes, length_bytes) = match record.action {
                Action::File(_) => {
                    steps.push(Step::File { delay: Duration::from_micros(delay_us) });
                    continue;
                }
                Action::Wait { value } => {
                    if !self.no_stall {
                        steps.push(Step::Wait { since_start: Duration::from_millis(value) });
                    }
                    continue;
                }
                Action::Io { action, offset_bytes, length_bytes } => {
                    (action, offset_bytes, u64::from(length_bytes))
                }
            };
            let (kind, skipped) = match action {
                IoAction::Read => (IoKind::Read, self.skip.read),
                IoAction::Write => (IoKind::Write, self.skip.write),
                IoAction::Trim => (IoKind::Discard, self.skip.trim),
                // fio's replay_skip=sync does not skip datasync (`read_iolog`).
                IoAction::Sync => (IoKind::Sync, self.skip.sync),
                IoAction::Datasync => (IoKind::Sync, false),
            };
            if skipped {
                continue;
            }
            let mut offset_bytes = offset_bytes.checked_div(self.scale).unwrap_or(offset_bytes);
            if self.align_bytes > 0 {
                offset_bytes &= !(self.align_bytes - 1);
            }
            let size_bytes = if kind == IoKind::Sync { 0 } else { length_bytes };
            let place = match redirect.or_else(|| device(&record.file)) {
                Some(index) => Place::Device(index),
                None if record.file.starts_with("/dev/") => {
                    let accepted: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
                    return Err(bad(format!(
                        "`{}` is not a simulated device (accepted: {}; or replay_redirect=DEV)",
                        record.file,
                        accepted.join(", ")
                    )));
                }
                None => file_place(files, &record.file),
            };
            if kind != IoKind::Sync {
                if size_bytes == 0 {
                    return Err(bad(format!("a {} of 0 bytes", action.word())));
                }
                if (direct || kind == IoKind::Discard)
                    && (offset_bytes % 512 != 0 || size_bytes % 512 != 0)
                {
                    return Err(bad(format!(
                        "a direct {} of {size_bytes} bytes at {offset_bytes}: not in 512-byte \
                         sectors (the kernel refuses it, EINVAL)",
                        action.word()
                    )));
                }
                let end = offset_bytes.saturating_add(size_bytes);
                match place {
                    Place::Device(index) if end > targets[index].capacity_bytes => {
                        return Err(bad(format!(
                            "{} to byte {end}, past the end of `{}` ({} bytes)",
                            action.word(),
                            targets[index].name,
                            targets[index].capacity_bytes
                        )));
                    }
                    Place::File(index) => {
                        files[index].size_bytes = files[index].size_bytes.max(end);
                    }
                    Place::Device(_) => {}
                }
            }
            steps.push(Step::Io {
                kind,
                place,
                offset_bytes,
                size_bytes,
                delay: Duration::from_micros(delay_us),
            });
        }
        Ok(steps)
    }

    /// The job's clones as replaying issuers, processes numbered from `first_process + 1`,
    /// clone i fio's thread `first_thread + i` (its CPUs under `cpus_allowed_policy=split`).
    pub(crate) fn issuers(
        &self,
        job: &crate::fio_run::FioRunJob,
        targets: &[Target],
        files: &mut Vec<FileSpec>,
        (first_process, first_thread): (u32, u32),
        exit: &crate::job::GroupExit,
    ) -> Result<Vec<Box<dyn Issuer>>, ParamError> {
        let params = &job.spec.params;
        let engine = params.text("ioengine");
        let depth = match engine {
            "psync" | "sync" | "pvsync" | "pvsync2" => 1,
            "libaio" | "io_uring" | "posixaio" => params.integer("iodepth").max(1) as u32,
            other => {
                return Err(refuse(
                    &self.at,
                    format!(
                        "read_iolog with ioengine={other}: a replay runs on psync, sync, pvsync, \
                         pvsync2, libaio, io_uring or posixaio"
                    ),
                ));
            }
        };
        let direct = params.flag("direct");
        let cpu = crate::job::CpuProfile::from_params(params, depth)
            .map_err(|error| refuse(&self.at, format!("job `{}`: {error}", job.name)))?;
        (0..job.clones)
            .map(|clone| {
                let steps = self.steps(clone, targets, files, direct)?;
                Ok(Box::new(ReplayIssuer {
                    name: format!("{}/{clone}", job.name),
                    process: ProcessId(first_process + clone + 1),
                    steps,
                    next: 0,
                    depth,
                    direct,
                    outstanding: 0,
                    start: None,
                    last_issue: None,
                    exit: exit.clone(),
                    cpu: cpu.for_thread(first_thread + clone),
                }) as Box<dyn Issuer>)
            })
            .collect()
    }
}

/// The regular file `name`, added to `files` when new (on the first device's filesystem).
fn file_place(files: &mut Vec<FileSpec>, name: &str) -> Place {
    match files.iter().position(|file| file.name == name) {
        Some(index) => Place::File(index),
        None => {
            files.push(FileSpec { name: name.to_owned(), device: 0, size_bytes: 0 });
            Place::File(files.len() - 1)
        }
    }
}

/// One clone of a `read_iolog` job: the log's I/O in order, paced as fio paces it.
#[derive(Debug)]
pub(crate) struct ReplayIssuer {
    name: String,
    process: ProcessId,
    steps: Vec<Step>,
    next: usize,
    depth: u32,
    direct: bool,
    outstanding: u32,
    start: Option<Instant>,
    last_issue: Option<Instant>,
    /// Its phase's `exitall` flag: raised, the replay stops issuing; raised by it when it
    /// finishes if its job has `exitall`.
    exit: crate::job::GroupExit,
    /// The job's CPU profile, this clone's share ([`Issuer::cpu`]).
    cpu: crate::IssuerCpu,
}

impl Issuer for ReplayIssuer {
    fn name(&self) -> &str {
        &self.name
    }

    fn cpu(&self) -> crate::IssuerCpu {
        self.cpu.clone()
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn poll(&mut self, now: Instant) -> Poll {
        let start = *self.start.get_or_insert(now);
        loop {
            let stopped = self.exit.flag.load(std::sync::atomic::Ordering::Relaxed);
            let step = if stopped { None } else { self.steps.get(self.next).copied() };
            let Some(step) = step else {
                if self.outstanding > 0 {
                    return Poll::Wait;
                }
                if self.exit.sets {
                    self.exit.flag.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                return Poll::Done;
            };
            match step {
                Step::Wait { since_start } => {
                    let due = start.saturating_add(since_start);
                    if now < due {
                        return Poll::Sleep { until: due };
                    }
                    self.next += 1;
                }
                Step::File { delay } => {
                    // fio handles it in `read_iolog_get`, holding a free io_u.
                    if self.outstanding >= self.depth {
                        return Poll::Wait;
                    }
                    if let Some(last) = self.last_issue {
                        let due = last.saturating_add(delay);
                        if now < due {
                            return Poll::Sleep { until: due };
                        }
                    }
                    self.next += 1;
                    self.last_issue = Some(now);
                }
                Step::Io { kind, place, offset_bytes, size_bytes, delay } => {
                    // fio takes a free io_u first, then waits out the record's delay
                    // (`iolog_delay`, counted from its previous issue).
                    if self.outstanding >= self.depth {
                        return Poll::Wait;
                    }
                    if let Some(last) = self.last_issue {
                        let due = last.saturating_add(delay);
                        if now < due {
                            return Poll::Sleep { until: due };
                        }
                    }
                    self.next += 1;
                    self.outstanding += 1;
                    self.last_issue = Some(now);
                    // As `job`'s I/O: reads and direct writes are sync requests; a discard
                    // goes straight to the block layer.
                    let flags = if kind == IoKind::Discard {
                        RequestFlags::NONE
                    } else if self.direct || kind == IoKind::Read || kind == IoKind::Sync {
                        RequestFlags::SYNC
                    } else {
                        RequestFlags::NONE
                    };
                    return Poll::Submit(Io {
                        id: IoId(self.next as u64),
                        kind,
                        place,
                        offset_bytes,
                        size_bytes,
                        direct: self.direct || kind == IoKind::Discard,
                        flags,
                    });
                }
            }
        }
    }

    fn complete(&mut self, _now: Instant, _io: IoId) {
        self.outstanding = self.outstanding.saturating_sub(1);
    }

    fn finishing(&self, _now: Instant) -> bool {
        self.next >= self.steps.len()
    }
}

/// A `write_iolog` file, shared by the clones of the jobs naming it: opened for appending
/// when planned, each clone's log appended whole when it finishes.
#[derive(Debug)]
pub(crate) struct IologFile {
    file: Mutex<std::fs::File>,
}

impl IologFile {
    /// Opens `path` for appending (created if absent), as fio's `fopen(..., "a")`.
    pub(crate) fn open(path: &str, at: &Location) -> Result<Arc<IologFile>, ParamError> {
        let file =
            std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|error| {
                refuse(at, format!("write_iolog={path}: cannot open it for writing ({error})"))
            })?;
        Ok(Arc::new(IologFile { file: Mutex::new(file) }))
    }

    fn append(&self, log: &Iolog) {
        let Ok(text) = log.to_text() else { return };
        if let Ok(mut file) = self.file.lock() {
            // fio does not stop a job whose log cannot be written either (it checks only the
            // header's fprintf).
            let _ = file.write_all(text.as_bytes());
        }
    }
}

/// A clone whose I/O is logged in fio's version 3 format (`write_iolog`).
#[derive(Debug)]
pub(crate) struct IologWriter {
    inner: Box<dyn Issuer>,
    sink: Arc<IologFile>,
    /// The clone's files as fio names them, each place with its logged name.
    names: Vec<(Place, String)>,
    /// Every place of the plan with its logged name, for an I/O outside `names`.
    known: Vec<(Place, String)>,
    start: Option<Instant>,
    records: Vec<Record>,
    done: bool,
}

impl IologWriter {
    /// Logs `inner`'s I/O into `sink`; `names` are its files' logged names (`/dev/sdb`,
    /// `job.0.0`), in fio's order of adding them; `known`, every place of the plan named.
    pub(crate) fn new(
        inner: Box<dyn Issuer>,
        sink: Arc<IologFile>,
        names: Vec<(Place, String)>,
        known: Vec<(Place, String)>,
    ) -> IologWriter {
        IologWriter { inner, sink, names, known, start: None, records: Vec::new(), done: false }
    }

    fn file_records(&mut self, time_us: u64, actions: &[FileAction]) {
        for action in actions {
            for (_, name) in &self.names {
                self.records.push(Record {
                    time_us: Some(time_us),
                    file: name.clone(),
                    action: Action::File(*action),
                });
            }
        }
    }
}

impl Issuer for IologWriter {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn process(&self) -> ProcessId {
        self.inner.process()
    }

    fn priority(&self) -> IoPriority {
        self.inner.priority()
    }

    fn poll(&mut self, now: Instant) -> Poll {
        let start = match self.start {
            Some(start) => start,
            None => {
                self.start = Some(now);
                self.file_records(0, &[FileAction::Add, FileAction::Open]);
                now
            }
        };
        let time_us = now.saturating_since(start).as_micros();
        let poll = self.inner.poll(now);
        match poll {
            Poll::Submit(io) => {
                let action = match io.kind {
                    IoKind::Read => Some(IoAction::Read),
                    IoKind::Write => Some(IoAction::Write),
                    IoKind::Discard => Some(IoAction::Trim),
                    IoKind::Sync => Some(IoAction::Sync),
                    IoKind::DropCaches => None,
                };
                let name =
                    self.names.iter().chain(&self.known).find(|(place, _)| *place == io.place);
                if let (Some(action), Some((_, name))) = (action, name) {
                    self.records.push(Record {
                        time_us: Some(time_us),
                        file: name.clone(),
                        action: Action::Io {
                            action,
                            offset_bytes: io.offset_bytes,
                            length_bytes: u32::try_from(io.size_bytes).unwrap_or(u32::MAX),
                        },
                    });
                }
            }
            Poll::Done if !self.done => {
                self.done = true;
                self.file_records(time_us, &[FileAction::Close]);
                let records = std::mem::take(&mut self.records);
                self.sink.append(&Iolog { version: Version::V3, records });
            }
            _ => {}
        }
        poll
    }

    fn complete(&mut self, now: Instant, io: IoId) {
        self.inner.complete(now, io);
    }

    fn failed(&mut self, now: Instant, io: IoId, kind: IoKind, failure: IoFailure) -> FailedIo {
        self.inner.failed(now, io, kind, failure)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.counters()
    }

    fn take_posts(&mut self, posted: &mut Vec<usize>) {
        self.inner.take_posts(posted);
    }

    fn finishing(&self, now: Instant) -> bool {
        self.inner.finishing(now)
    }

    fn null_engine(&self) -> bool {
        self.inner.null_engine()
    }

    fn cpu(&self) -> crate::IssuerCpu {
        self.inner.cpu()
    }
}

/// The name fio logs for `place`: a device's node (`/dev/sdb`) or the regular file's path.
pub(crate) fn logged_name(place: Place, targets: &[Target], files: &[FileSpec]) -> String {
    match place {
        Place::Device(index) => {
            format!("/dev/{}", targets.get(index).map_or("null", |target| target.name.as_str()))
        }
        Place::File(index) => files.get(index).map_or_else(String::new, |file| file.name.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkloadSpec;
    use crate::testing::{Record as Submitted, devices, run};
    use elevator_core::Prng;

    /// A directory of this test's own.
    fn dir(test: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("elevator-iolog-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn targets() -> Vec<Target> {
        devices(&[("sda", 1 << 30), ("sdb", 1 << 30)])
    }

    /// Plans job file `text` (written into `dir`) for two 1 GiB devices.
    fn plan(dir: &std::path::Path, text: &str) -> Result<crate::WorkloadPlan, ParamError> {
        let path = dir.join("job.fio");
        std::fs::write(&path, text).unwrap();
        WorkloadSpec::parse(&format!("fio:{}", path.display()))?.plan(&targets(), &Prng::new(3))
    }

    /// What each submitted operation did, in order: kind, place, offset, size.
    fn shape(records: &[Submitted]) -> Vec<(IoKind, Place, u64, u64)> {
        records
            .iter()
            .map(|r| (r.io.kind, r.io.place, r.io.offset_bytes, r.io.size_bytes))
            .collect()
    }

    /// Submission instants in µs.
    fn times_us(records: &[Submitted]) -> Vec<u64> {
        records.iter().map(|r| r.submitted.as_nanos() / 1000).collect()
    }

    // Proves write_iolog logs exactly the I/O the job submitted (order, direction, offset,
    // size, device node name, µs timestamps) in fio's v3 layout, and that read_iolog of that
    // log replays the same I/O in the same order on the same device.
    #[test]
    fn a_written_log_replays_the_same_io() {
        let dir = dir("round-trip");
        let log = dir.join("w.log");
        let writer = format!(
            "[w]\nfilename=sdb\nrw=randrw\nbsrange=4k-64k\nsize=2m\nioengine=libaio\niodepth=4\n\
             direct=1\nfsync=8\nwrite_iolog={}\n",
            log.display()
        );
        let latency = |io: &Io| Duration::from_micros(50 + io.size_bytes / 1024);
        let written = run(plan(&dir, &writer).unwrap(), latency);
        let text = std::fs::read_to_string(&log).unwrap();
        let parsed = Iolog::parse("w.log", &text).unwrap();
        assert_eq!(parsed.version, Version::V3);
        let ios: Vec<(IoKind, Place, u64, u64)> = parsed
            .records
            .iter()
            .filter_map(|record| match record.action {
                Action::Io { action, offset_bytes, length_bytes } => {
                    assert_eq!(record.file, "/dev/sdb");
                    let kind = match action {
                        IoAction::Read => IoKind::Read,
                        IoAction::Write => IoKind::Write,
                        IoAction::Trim => IoKind::Discard,
                        _ => IoKind::Sync,
                    };
                    Some((kind, Place::Device(1), offset_bytes, u64::from(length_bytes)))
                }
                _ => None,
            })
            .collect();
        assert_eq!(ios, shape(&written.records));
        assert!(ios.iter().any(|io| io.0 == IoKind::Sync), "fsync=8 logs syncs");
        let stamps: Vec<u64> = parsed
            .records
            .iter()
            .filter(|r| matches!(r.action, Action::Io { .. }))
            .map(|r| r.time_us.unwrap())
            .collect();
        assert_eq!(stamps, times_us(&written.records));
        let first = &parsed.records[0];
        assert_eq!(
            (first.file.as_str(), first.action),
            ("/dev/sdb", Action::File(FileAction::Add))
        );
        assert_eq!(parsed.records.last().unwrap().action, Action::File(FileAction::Close));

        let reader =
            format!("[r]\nread_iolog={}\nioengine=libaio\niodepth=4\ndirect=1\n", log.display());
        let replayed = run(plan(&dir, &reader).unwrap(), latency);
        let expected: Vec<_> = shape(&written.records)
            .into_iter()
            .map(|(kind, place, offset, size)| {
                (kind, place, if kind == IoKind::Sync { 0 } else { offset }, size)
            })
            .collect();
        let got: Vec<_> = shape(&replayed.records)
            .into_iter()
            .map(|(kind, place, offset, size)| {
                (kind, place, if kind == IoKind::Sync { 0 } else { offset }, size)
            })
            .collect();
        assert_eq!(got, expected);
    }

    /// A v3 log on sda: reads at 100, 1100 and 3100 µs (the gaps 1000 and 2000 µs), a write at
    /// 3600 and a trim at 4100.
    const TIMED: &str = "fio version 3 iolog\n5 /dev/sda add\n5 /dev/sda open\n\
                         100 /dev/sda read 0 4096\n1100 /dev/sda read 4096 4096\n\
                         3100 /dev/sda read 8192 4096\n3600 /dev/sda write 0 4096\n\
                         4100 /dev/sda trim 65536 4096\n4200 /dev/sda close\n";

    fn replay_timed(test: &str, options: &str) -> Vec<Submitted> {
        let dir = dir(test);
        std::fs::write(dir.join("t.log"), TIMED).unwrap();
        let job = format!("[r]\nread_iolog={}\ndirect=1\n{options}", dir.join("t.log").display());
        run(plan(&dir, &job).unwrap(), |_| Duration::from_micros(10)).records
    }

    fn gaps_us(records: &[Submitted]) -> Vec<u64> {
        times_us(records).windows(2).map(|pair| pair[1] - pair[0]).collect()
    }

    // Proves a v3 replay keeps the logged gaps between issues (fio's delay_since_ttime), and
    // replay_time_scale is fio's percentage of the logged rate: 50 doubles every gap (runs at
    // half the rate, fio's HOWTO), 200 halves it.
    #[test]
    fn timed_replay_keeps_and_scales_the_gaps() {
        assert_eq!(gaps_us(&replay_timed("gaps", "")), vec![1000, 2000, 500, 500]);
        assert_eq!(
            gaps_us(&replay_timed("slow", "replay_time_scale=50\n")),
            vec![2000, 4000, 1000, 1000]
        );
        assert_eq!(
            gaps_us(&replay_timed("fast", "replay_time_scale=200\n")),
            vec![500, 1000, 250, 250]
        );
    }

    // Proves a v3 replay times the file lines too, as fio's ipo_special does: a close and an
    // open between two reads add their gaps (300 µs from read to read, not 100).
    #[test]
    fn file_lines_are_timed_events() {
        let dir = dir("file-lines");
        std::fs::write(
            dir.join("f.log"),
            "fio version 3 iolog\n50 sda add\n60 sda open\n100 sda read 0 4096\n\
             200 sda close\n300 sda open\n400 sda read 4096 4096\n",
        )
        .unwrap();
        let job = format!("[r]\nread_iolog={}\n", dir.join("f.log").display());
        let records = run(plan(&dir, &job).unwrap(), |_| Duration::from_micros(10)).records;
        // add at the start, open 10 µs later, the read 40 µs after the open.
        assert_eq!(times_us(&records), vec![50, 350]);
    }

    // Proves replay_no_stall issues the same I/O in the same order without the gaps: each
    // waits only for the previous one's completion (psync, depth 1, 10 µs).
    #[test]
    fn no_stall_ignores_the_gaps() {
        let timed = replay_timed("stall", "");
        let fast = replay_timed("no-stall", "replay_no_stall=1\n");
        assert_eq!(shape(&fast), shape(&timed));
        assert_eq!(gaps_us(&fast), vec![10, 10, 10, 10]);
    }

    // Proves replay_skip drops exactly the named directions, and replay_scale/replay_align
    // move offsets as fio does (divide, then round down to the alignment).
    #[test]
    fn skip_scale_and_align() {
        let kinds = |records: &[Submitted]| records.iter().map(|r| r.io.kind).collect::<Vec<_>>();
        let no_writes = replay_timed("skip-w", "replay_skip=write\n");
        assert_eq!(kinds(&no_writes), [IoKind::Read, IoKind::Read, IoKind::Read, IoKind::Discard]);
        let no_reads_trims = replay_timed("skip-rt", "replay_skip=read,trim\n");
        assert_eq!(kinds(&no_reads_trims), [IoKind::Write]);
        let scaled = replay_timed("scale", "replay_scale=2\nreplay_align=4096\n");
        let offsets: Vec<u64> = scaled.iter().map(|r| r.io.offset_bytes).collect();
        // 4096/2 = 2048 rounds down to 0; 8192/2 = 4096; 65536/2 = 32768.
        assert_eq!(offsets, [0, 0, 4096, 0, 32768]);
    }

    // Proves a replaying job says it writes exactly when its log has a write or trim that
    // replay_skip keeps, whatever its `rw` (a live run opens its target read-only otherwise,
    // and the log's writes then fail), and that an unreadable log counts as writing.
    #[test]
    fn a_replay_may_write_as_its_log_says() {
        let dir = dir("may-write");
        let reads = dir.join("r.log");
        std::fs::write(&reads, "fio version 2 iolog\n/dev/sda add\n/dev/sda read 0 4096\n")
            .unwrap();
        let writes = dir.join("w.log");
        std::fs::write(&writes, "fio version 2 iolog\n/dev/sda add\n/dev/sda write 0 4096\n")
            .unwrap();
        let spec = |log: &std::path::Path, extra: &str| {
            let path = dir.join("job.fio");
            let text = format!("[r]\nfilename=sda\nread_iolog={}\n{extra}", log.display());
            std::fs::write(&path, text).unwrap();
            WorkloadSpec::parse(&format!("fio:{}", path.display())).unwrap()
        };
        assert!(!spec(&reads, "").may_write());
        assert!(spec(&writes, "").may_write());
        assert!(!spec(&writes, "replay_skip=write\n").may_write());
        let written = spec(&writes, "");
        std::fs::remove_file(&writes).unwrap();
        assert!(written.may_write(), "a log that cannot be read counts as writing");
    }

    // Proves a v2 `wait N` holds the job until N ms after its start (fio's code), and that
    // read_iolog=A:B gives the clones the logs in turn, each record on the device it names
    // and replay_redirect sending all to one device.
    #[test]
    fn version_2_waits_clone_lists_and_redirect() {
        let dir = dir("v2");
        std::fs::write(
            dir.join("a.log"),
            "fio version 2 iolog\nsda add\nsda read 0 4096\nsda wait 3 0\nsda read 4096 4096\n",
        )
        .unwrap();
        std::fs::write(dir.join("b.log"), "fio version 2 iolog\n/dev/sdb write 0 8192\n").unwrap();
        let job = format!(
            "[r]\nread_iolog={}:{}\nnumjobs=3\n",
            dir.join("a.log").display(),
            dir.join("b.log").display()
        );
        let records = run(plan(&dir, &job).unwrap(), |_| Duration::from_micros(10)).records;
        let of = |issuer: usize| -> Vec<(u64, IoKind, Place)> {
            records
                .iter()
                .filter(|r| r.issuer == issuer)
                .map(|r| (r.submitted.as_nanos() / 1000, r.io.kind, r.io.place))
                .collect()
        };
        let a = vec![(0, IoKind::Read, Place::Device(0)), (3000, IoKind::Read, Place::Device(0))];
        assert_eq!(of(0), a);
        assert_eq!(of(1), vec![(0, IoKind::Write, Place::Device(1))]);
        assert_eq!(of(2), a, "clone 2 replays the first log again");
        let redirected = format!("{job}replay_redirect=/dev/sdb\nreplay_no_stall=1\n");
        let records = run(plan(&dir, &redirected).unwrap(), |_| Duration::from_micros(10)).records;
        assert!(records.iter().all(|r| r.io.place == Place::Device(1)));
        assert!(records.iter().all(|r| r.submitted.as_nanos() < 1_000_000), "no wait stalls");
    }

    // Proves exitall works both ways with a replay: a replaying job with exitall stops the
    // long job beside it when its log ends, and an exitall job stops a replay still waiting.
    #[test]
    fn exitall_stops_and_is_raised_by_a_replay() {
        let dir = dir("exitall");
        std::fs::write(
            dir.join("a.log"),
            "fio version 2 iolog\nsda read 0 4096\nsda wait 50 0\nsda read 4096 4096\n",
        )
        .unwrap();
        let log = dir.join("a.log").display().to_string();
        let long = "[long]\nfilename=sdb\nrw=read\nbs=4k\nsize=64m\n";
        let replaying = format!("[r]\nread_iolog={log}\nexitall\n{long}");
        let records = run(plan(&dir, &replaying).unwrap(), |_| Duration::from_micros(100)).records;
        let long_ios = records.iter().filter(|r| r.issuer == 1).count();
        // 50 ms of 100 µs reads, where the whole job would be 16384.
        assert!((490..=510).contains(&long_ios), "{long_ios}");
        let stopping = format!(
            "[r]\nread_iolog={log}\n[short]\nfilename=sdb\nrw=read\nbs=4k\nsize=40k\nexitall\n"
        );
        let records = run(plan(&dir, &stopping).unwrap(), |_| Duration::from_micros(100)).records;
        assert_eq!(
            records.iter().filter(|r| r.issuer == 0).count(),
            1,
            "the read after the wait is not issued"
        );
    }

    // Proves what a replay cannot honour is refused naming the job file's line and, for the
    // log's own faults, the log's file, line and field.
    #[test]
    fn refusals_name_where() {
        let dir = dir("refuse");
        let log = dir.join("t.log");
        std::fs::write(&log, TIMED).unwrap();
        let path = log.display().to_string();
        let error = |text: &str| plan(&dir, text).unwrap_err().to_string();
        let cases = [
            (
                format!("[r]\nread_iolog={path}\nruntime=5\n"),
                "job.fio:3",
                "`runtime` with read_iolog",
            ),
            (format!("[r]\nread_iolog={path}\nread_iolog_chunked=1\n"), "job.fio:3", "whole log"),
            (format!("[r]\nread_iolog={path}\nmerge_blktrace_file=m\n"), "job.fio:3", "blktrace"),
            (format!("[r]\nread_iolog={path}\nreplay_skip=flush\n"), "job.fio:3", "accepted: read"),
            (format!("[r]\nread_iolog={path}\nwrite_iolog=x\n"), "job.fio:2", "overrides"),
            (format!("[r]\nread_iolog={path}\nreplay_redirect=sdz\n"), "job.fio:3", "sdz"),
            (
                "[r]\nreplay_no_stall=1\nrw=read\nsize=1m\n".to_owned(),
                "job.fio:2",
                "belongs to read_iolog",
            ),
            (format!("[r]\nread_iolog={path}\nioengine=sg\n"), "job.fio:2", "ioengine=sg"),
            (
                format!("[r]\nread_iolog={}\n", dir.join("none.log").display()),
                "job.fio:2",
                "cannot read",
            ),
        ];
        for (text, at, needle) in cases {
            let message = error(&text);
            assert!(message.contains(at) && message.contains(needle), "{text}: {message}");
        }
        std::fs::write(&log, "fio version 3 iolog\n1 /dev/sda add\n2 /dev/sda read 0 0\n").unwrap();
        let message = error(&format!("[r]\nread_iolog={path}\n"));
        assert!(message.contains(&format!("{path}:3: a read of 0 bytes")), "{message}");
        std::fs::write(&log, "fio version 3 iolog\n1 /dev/sda reed 0 4096\n").unwrap();
        let message = error(&format!("[r]\nread_iolog={path}\n"));
        assert!(message.contains(&format!("{path}:2: action:")), "{message}");
        std::fs::write(&log, "fio version 3 iolog\n1 /dev/nvme0n1 read 0 4096\n").unwrap();
        let message = error(&format!("[r]\nread_iolog={path}\n"));
        assert!(message.contains("not a simulated device"), "{message}");
        std::fs::write(&log, [0x07u8, 0x74, 0x61, 0x65, 0, 0, 0, 0]).unwrap();
        let message = error(&format!("[r]\nread_iolog={path}\n"));
        assert!(message.contains("blktrace"), "{message}");
    }

    // Proves a replaying job's clones and a logging job's wrapped clones report the job's CPU
    // profile: the replay's two clones split its CPUs after the first job's thread (fio
    // numbers threads over the file), on the job's engine; the logged clone keeps its
    // io_uring flags.
    #[test]
    fn replays_and_loggers_report_the_cpu_profile() {
        let dir = dir("cpu");
        std::fs::write(dir.join("a.log"), "fio version 2 iolog\nsda read 0 4096\n").unwrap();
        let text = format!(
            "[w]\nfilename=sdb\nrw=read\nsize=16k\nioengine=io_uring\nhipri=1\n\
             cpus_allowed=1-3\ncpus_allowed_policy=split\nwrite_iolog={}\n\
             [r]\nstonewall\nread_iolog={}\nioengine=libaio\niodepth=4\nnumjobs=2\n\
             cpus_allowed=1-3\ncpus_allowed_policy=split\n",
            dir.join("w.log").display(),
            dir.join("a.log").display()
        );
        let plan = plan(&dir, &text).unwrap();
        let cpus: Vec<crate::IssuerCpu> =
            plan.phases.iter().flat_map(|phase| phase.issuers.iter().map(|i| i.cpu())).collect();
        let lists: Vec<Vec<u32>> = cpus.iter().map(|cpu| cpu.cpus_allowed.clone()).collect();
        assert_eq!(lists, [vec![1], vec![2], vec![3]]);
        assert_eq!((cpus[0].engine, cpus[0].polled), (crate::SubmitEngine::IoUring, true));
        assert!(cpus[1..].iter().all(|cpu| cpu.engine == crate::SubmitEngine::Libaio));
    }
}
