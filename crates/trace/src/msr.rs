//! The MSR Cambridge block traces as SNIA IOTTA serves them (`/work/shared/specs/ecosystem.md`
//! §3.4; IOTTA block-io set 388; Narayanan, Donnelly, Rowstron, "Write Off-Loading", FAST'08).
//!
//! CSV with no header, a line per I/O:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, e.g.
//! `128166372003061629,hm,0,Read,3872104448,4096,14535`.
//!
//! * `Timestamp`: when the I/O was issued, a Windows FILETIME: 100 ns ticks since
//!   1601-01-01 UTC.
//! * `Hostname`, `DiskNumber`: the server and its volume (the files are named
//!   `<host>_<disk>.csv.gz`, e.g. `hm_0`).
//! * `Type`: `Read` or `Write`. `Offset`, `Size`: bytes.
//! * `ResponseTime`: how long the I/O took, in 100 ns ticks — the README of IOTTA set 387:
//!   "the time taken by the I/O to complete, in Windows filetime units" (a duration: the
//!   traces' values are a few ms, not a second FILETIME stamp).
//!
//! # Mapping
//!
//! `time_ns` counts from the earliest timestamp of the file (the traces are a week of a
//! server's life; a replay starts at its first I/O), and [`crate::Trace::start_unix_ns`]
//! keeps that timestamp's wall-clock time. `device` is `HOSTNAME_DISKNUMBER`, as the file
//! names say; `latency_ns` is `ResponseTime` × 100.
//!
//! On writing, a device of the form `HOST_N` is `HOST,N`; any other (or none) is written as
//! the host with disk 0 (`unknown` for none). Times are cut to whole 100 ns ticks from the
//! trace's start (or from the Unix epoch when it has none), a missing latency is written
//! as 0. Lost: pid, process, flags, priority. Refused: a flush or a discard (the layout has
//! only `Read` and `Write`), a device name holding a comma, a quote or white space.
//!
//! # Deviations
//!
//! * The files come gzipped; this reads them decompressed (`gunzip` first).
//! * A first line that is the column names (`Timestamp,Hostname,...`, as some copies of the
//!   traces carry) is skipped; the writer writes none.
//! * `Type` is matched as written (`Read`, `Write`); other spellings are refused.

use std::io::Write;

use crate::{Format, Op, ParseError, Trace, TraceError, TraceIo, refuse};

/// The column names, in order.
pub const COLUMNS: &str = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime";

/// FILETIME ticks from 1601-01-01 to 1970-01-01.
pub const FILETIME_UNIX_EPOCH_TICKS: u64 = 116_444_736_000_000_000;

/// Nanoseconds in a FILETIME tick.
pub const TICK_NS: u64 = 100;

/// One line's fields.
struct Line<'a> {
    timestamp_ticks: u64,
    hostname: &'a str,
    disk: u32,
    op: Op,
    offset_bytes: u64,
    size_bytes: u64,
    response_ticks: u64,
}

fn parse_line(line: &str) -> Result<Line<'_>, (&'static str, String)> {
    let fields: Vec<&str> = line.trim_end_matches('\r').split(',').collect();
    let [timestamp, hostname, disk, kind, offset, size, response] = fields.as_slice() else {
        return Err(("fields", format!("{} fields; accepted: 7, `{COLUMNS}`", fields.len())));
    };
    let number = |field: &'static str, text: &str, what: &str| {
        text.parse::<u64>().map_err(|_| (field, format!("`{text}` is not a whole number ({what})")))
    };
    let timestamp_ticks = number("Timestamp", timestamp, "100 ns ticks since 1601")?;
    if hostname.is_empty() || hostname.contains(|c: char| c.is_whitespace() || c == '"') {
        return Err(("Hostname", format!("`{hostname}`; accepted: a name without white space")));
    }
    let disk = disk
        .parse::<u32>()
        .map_err(|_| ("DiskNumber", format!("`{disk}` is not a disk number")))?;
    let op = match *kind {
        "Read" => Op::Read,
        "Write" => Op::Write,
        _ => return Err(("Type", format!("`{kind}`; accepted: Read, Write"))),
    };
    Ok(Line {
        timestamp_ticks,
        hostname,
        disk,
        op,
        offset_bytes: number("Offset", offset, "bytes")?,
        size_bytes: number("Size", size, "bytes")?,
        response_ticks: number("ResponseTime", response, "100 ns ticks")?,
    })
}

/// Whether `line` is an MSR line or the column names (for [`crate::detect`]).
pub(crate) fn is_line(line: &str) -> bool {
    line.trim_end_matches('\r').eq_ignore_ascii_case(COLUMNS) || parse_line(line).is_ok()
}

/// Reads `text`, an MSR CSV trace in `file` (named in errors).
pub fn parse(file: &str, text: &str) -> Result<Trace, ParseError> {
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if index == 0 && line.trim_end_matches('\r').eq_ignore_ascii_case(COLUMNS) {
            continue;
        }
        lines.push(parse_line(line).map_err(|(field, problem)| ParseError {
            file: file.to_owned(),
            line: index + 1,
            field,
            problem,
        })?);
    }
    let Some(origin_ticks) = lines.iter().map(|line| line.timestamp_ticks).min() else {
        return Ok(Trace::new(Format::Msr, Vec::new()));
    };
    let records = lines
        .iter()
        .map(|line| {
            // Below u64::MAX / 100 ticks (year 7447) nothing overflows; saturate past that.
            let time_ns = (line.timestamp_ticks - origin_ticks).saturating_mul(TICK_NS);
            let mut io = TraceIo::new(time_ns, line.op, line.offset_bytes, line.size_bytes);
            io.device = Some(format!("{}_{}", line.hostname, line.disk));
            io.latency_ns = Some(line.response_ticks.saturating_mul(TICK_NS));
            io
        })
        .collect();
    let start_unix_ns =
        (i128::from(origin_ticks) - i128::from(FILETIME_UNIX_EPOCH_TICKS)) * i128::from(TICK_NS);
    Ok(Trace { format: Format::Msr, start_unix_ns: Some(start_unix_ns), records })
}

/// Writes `trace` as MSR CSV.
pub fn write(trace: &Trace, out: &mut dyn Write) -> Result<(), TraceError> {
    let start_unix_ns = trace.start_unix_ns.unwrap_or(0);
    let origin_ticks =
        start_unix_ns.div_euclid(i128::from(TICK_NS)) + i128::from(FILETIME_UNIX_EPOCH_TICKS);
    for (index, io) in trace.records.iter().enumerate() {
        let kind = match io.op {
            Op::Read => "Read",
            Op::Write => "Write",
            Op::Flush | Op::Discard => {
                return Err(refuse(
                    Format::Msr,
                    index,
                    format!("a {}; the MSR layout has only Read and Write", io.op.name()),
                ));
            }
        };
        let timestamp_ticks = u64::try_from(origin_ticks + i128::from(io.time_ns / TICK_NS))
            .map_err(|_| refuse(Format::Msr, index, "a time outside FILETIME's range"))?;
        let device = io.device.as_deref().unwrap_or("unknown");
        let (hostname, disk) = match device.rsplit_once('_') {
            Some((host, disk)) if !host.is_empty() && disk.parse::<u32>().is_ok() => (host, disk),
            _ => (device, "0"),
        };
        if hostname.is_empty()
            || hostname.contains(|c: char| c.is_whitespace() || c == '"' || c == ',')
        {
            return Err(refuse(
                Format::Msr,
                index,
                format!("device `{device}`: a host name holding a comma, a quote or white space"),
            ));
        }
        let response_ticks = io.latency_ns.unwrap_or(0) / TICK_NS;
        writeln!(
            out,
            "{timestamp_ticks},{hostname},{disk},{kind},{},{},{response_ticks}",
            io.offset_bytes, io.size_bytes
        )?;
    }
    Ok(())
}
