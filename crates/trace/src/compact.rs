//! elevator's compact trace format: text, a line per I/O, every field of [`TraceIo`].
//!
//! Text rather than binary: a trace is read by people as often as by programs (to see what
//! a process did, to cut a trace with `head` or `grep`), it diffs, and with delta-encoded
//! times a line is about as long as the numbers in it; compress it when size matters.
//!
//! ```text
//! elevator-trace 1
//! start_unix_ns=1700000000000000000
//! +0 W 1048576 4096 pid=1234 comm=fio dev=8,0 flags=S prio=be/4 lat=51000
//! +1520 R 0 4096 pid=1234 comm=fio dev=8,0
//! -20 F 0 0
//! ```
//!
//! * The first line is the header, `elevator-trace VERSION`; this is version 1, and a
//!   reader refuses a version it does not know.
//! * Then, optionally, `start_unix_ns=N`: the wall-clock time of time 0, ns since the Unix
//!   epoch (may be negative).
//! * Then a line per I/O, space-separated: the time as a signed difference in ns from the
//!   previous I/O's (the first from 0), always with its sign; the op, `R` read, `W` write,
//!   `D` discard, `F` flush; offset and size in bytes; then the fields the I/O has, each
//!   `key=value`, in this order, each at most once:
//!   * `pid=N`; `comm=NAME`, the process name; `dev=NAME`, the device or file;
//!   * `flags=LETTERS`, any of `P` preflush, `S` sync, `F` FUA, `M` metadata, `A`
//!     readahead, in that order, or `-` for none set;
//!   * `prio=CLASS/LEVEL`, class `none`, `rt`, `be` or `idle`, level 0..=7 (`idle` is
//!     always 7, as `elevator-core`'s [`crate::IoPriority`] has it);
//!   * `lat=N`, ns from the I/O's time to its completion.
//! * In `comm` and `dev`, `%` followed by two hex digits stands for a byte: the writer so
//!   writes `%`, white space and control characters (`fio job` as `fio%20job`); an empty
//!   name is `comm=` with nothing after.
//! * A line starting with `#` is a comment; blank lines are skipped.
//!
//! Nothing is lost in writing; a field not given is `None` on reading.

use std::io::Write;

use crate::{Format, IoClass, IoFlags, IoPriority, Op, ParseError, Trace, TraceError, TraceIo};

/// The header's first word.
pub const MAGIC: &str = "elevator-trace";
/// The version this crate writes and reads.
pub const VERSION: u32 = 1;

const KEYS: [&str; 6] = ["pid", "comm", "dev", "flags", "prio", "lat"];
const FLAG_LETTERS: &str = "PSFMA";

/// Whether `line` is a compact header (for [`crate::detect`]).
pub(crate) fn is_header(line: &str) -> bool {
    line.split_whitespace().next() == Some(MAGIC)
}

pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '%' || c.is_whitespace() || c.is_control() {
            let mut bytes = [0u8; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn unescape(text: &str) -> Result<String, String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        if byte == b'%' {
            let hex = after
                .get(..2)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| format!("`{text}`: `%` must be followed by two hex digits"))?;
            bytes.push(hex);
            rest = &after[2..];
        } else {
            bytes.push(byte);
            rest = after;
        }
    }
    String::from_utf8(bytes).map_err(|_| format!("`{text}`: the %-escapes are not UTF-8"))
}

pub(crate) fn class_name(class: IoClass) -> &'static str {
    match class {
        IoClass::None => "none",
        IoClass::RealTime => "rt",
        IoClass::BestEffort => "be",
        IoClass::Idle => "idle",
    }
}

pub(crate) fn parse_priority(text: &str) -> Result<IoPriority, String> {
    let accepted = "accepted: `CLASS/LEVEL`, class none, rt, be or idle, level 0..=7";
    let (class, level) = text.split_once('/').ok_or_else(|| format!("`{text}`; {accepted}"))?;
    let class = match class {
        "none" => IoClass::None,
        "rt" => IoClass::RealTime,
        "be" => IoClass::BestEffort,
        "idle" => IoClass::Idle,
        _ => return Err(format!("class `{class}`; {accepted}")),
    };
    let level = level.parse::<u8>().map_err(|_| format!("level `{level}`; {accepted}"))?;
    IoPriority::new(class, level).map_err(|error| error.to_string())
}

pub(crate) fn parse_flags(text: &str) -> Result<IoFlags, String> {
    let mut flags = IoFlags::default();
    if text == "-" {
        return Ok(flags);
    }
    let accepted = "accepted: `-` or any of P, S, F, M, A in that order";
    let mut order = 0;
    for letter in text.chars() {
        let position = FLAG_LETTERS
            .find(letter)
            .filter(|&position| position >= order)
            .ok_or_else(|| format!("`{text}`; {accepted}"))?;
        order = position + 1;
        *match letter {
            'P' => &mut flags.preflush,
            'S' => &mut flags.sync,
            'F' => &mut flags.fua,
            'M' => &mut flags.meta,
            _ => &mut flags.readahead,
        } = true;
    }
    if text.is_empty() {
        return Err(format!("an empty value; {accepted}"));
    }
    Ok(flags)
}

pub(crate) fn flag_letters(flags: IoFlags) -> String {
    let letters: String = [
        (flags.preflush, 'P'),
        (flags.sync, 'S'),
        (flags.fua, 'F'),
        (flags.meta, 'M'),
        (flags.readahead, 'A'),
    ]
    .into_iter()
    .filter_map(|(set, letter)| set.then_some(letter))
    .collect();
    if letters.is_empty() { "-".into() } else { letters }
}

/// Reads `text`, a compact trace in `file` (named in errors).
pub fn parse(file: &str, text: &str) -> Result<Trace, ParseError> {
    let error = |line: usize, field: &'static str, problem: String| ParseError {
        file: file.to_owned(),
        line,
        field,
        problem,
    };
    let mut lines = text.lines().enumerate().map(|(index, line)| (index + 1, line));
    crate::check_magic_line(lines.next().map(|(_, line)| line), file, MAGIC, VERSION)?;
    let mut trace = Trace::new(Format::Compact, Vec::new());
    let mut time_ns: u64 = 0;
    for (number, line) in lines {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(value) = line.strip_prefix("start_unix_ns=") {
            if !trace.records.is_empty() || trace.start_unix_ns.is_some() {
                return Err(error(
                    number,
                    "start_unix_ns",
                    "accepted once, before the first I/O".into(),
                ));
            }
            trace.start_unix_ns = Some(value.parse::<i128>().map_err(|_| {
                error(number, "start_unix_ns", format!("`{value}` is not a whole number of ns"))
            })?);
            continue;
        }
        let io = parse_line(line, &mut time_ns)
            .map_err(|(field, problem)| error(number, field, problem))?;
        trace.records.push(io);
    }
    Ok(trace)
}

fn parse_line(line: &str, time_ns: &mut u64) -> Result<TraceIo, (&'static str, String)> {
    let words: Vec<&str> = line.split(' ').collect();
    let [delta, op, offset, size, fields @ ..] = words.as_slice() else {
        return Err((
            "fields",
            format!(
                "{} fields; accepted: `±DELTA_NS R|W|D|F OFFSET SIZE [KEY=VALUE]...`",
                words.len()
            ),
        ));
    };
    let delta_help = "accepted: `+N` or `-N`, ns from the previous I/O";
    let magnitude = delta
        .get(1..)
        .and_then(|digits| digits.parse::<u64>().ok())
        .filter(|_| delta.len() > 1 && delta.as_bytes()[1].is_ascii_digit())
        .ok_or_else(|| ("time", format!("`{delta}`; {delta_help}")))?;
    let time = match delta.as_bytes()[0] {
        b'+' => time_ns.checked_add(magnitude),
        b'-' => time_ns.checked_sub(magnitude),
        _ => return Err(("time", format!("`{delta}`; {delta_help}"))),
    }
    .ok_or_else(|| ("time", format!("`{delta}` takes the time outside 0..2^64 ns")))?;
    *time_ns = time;
    let op = match *op {
        "R" => Op::Read,
        "W" => Op::Write,
        "D" => Op::Discard,
        "F" => Op::Flush,
        _ => return Err(("op", format!("`{op}`; accepted: R, W, D, F"))),
    };
    let number = |field: &'static str, text: &str| {
        text.parse::<u64>().map_err(|_| (field, format!("`{text}` is not a whole number")))
    };
    let mut io = TraceIo::new(time, op, number("offset", offset)?, number("size", size)?);
    let mut next_key = 0;
    for field in fields {
        let Some((key, value)) = field.split_once('=') else {
            return Err(("fields", format!("`{field}`; accepted: KEY=VALUE")));
        };
        let position = KEYS
            .iter()
            .position(|known| *known == key)
            .ok_or_else(|| ("fields", format!("key `{key}`; accepted: {}", KEYS.join(", "))))?;
        if position < next_key {
            return Err((
                "fields",
                format!("`{key}` out of order or twice; accepted order: {}", KEYS.join(", ")),
            ));
        }
        next_key = position + 1;
        match key {
            "pid" => {
                io.pid =
                    Some(value.parse().map_err(|_| ("pid", format!("`{value}` is not a PID")))?);
            }
            "comm" => io.process = Some(unescape(value).map_err(|problem| ("comm", problem))?),
            "dev" => io.device = Some(unescape(value).map_err(|problem| ("dev", problem))?),
            "flags" => io.flags = Some(parse_flags(value).map_err(|problem| ("flags", problem))?),
            "prio" => {
                io.priority = Some(parse_priority(value).map_err(|problem| ("prio", problem))?);
            }
            _ => io.latency_ns = Some(number("lat", value)?),
        }
    }
    Ok(io)
}

/// Writes `trace` as a compact trace.
pub fn write(trace: &Trace, out: &mut dyn Write) -> Result<(), TraceError> {
    writeln!(out, "{MAGIC} {VERSION}")?;
    if let Some(start) = trace.start_unix_ns {
        writeln!(out, "start_unix_ns={start}")?;
    }
    let mut previous_ns = 0u64;
    for io in &trace.records {
        let delta = if io.time_ns >= previous_ns {
            format!("+{}", io.time_ns - previous_ns)
        } else {
            format!("-{}", previous_ns - io.time_ns)
        };
        previous_ns = io.time_ns;
        let op = match io.op {
            Op::Read => 'R',
            Op::Write => 'W',
            Op::Discard => 'D',
            Op::Flush => 'F',
        };
        let mut line = format!("{delta} {op} {} {}", io.offset_bytes, io.size_bytes);
        if let Some(pid) = io.pid {
            line.push_str(&format!(" pid={pid}"));
        }
        if let Some(process) = &io.process {
            line.push_str(&format!(" comm={}", escape(process)));
        }
        if let Some(device) = &io.device {
            line.push_str(&format!(" dev={}", escape(device)));
        }
        if let Some(flags) = io.flags {
            line.push_str(&format!(" flags={}", flag_letters(flags)));
        }
        if let Some(priority) = io.priority {
            line.push_str(&format!(" prio={}/{}", class_name(priority.class()), priority.level()));
        }
        if let Some(latency_ns) = io.latency_ns {
            line.push_str(&format!(" lat={latency_ns}"));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}
