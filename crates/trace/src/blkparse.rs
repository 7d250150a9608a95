//! blktrace's `blkparse` default text output (`/work/shared/specs/ecosystem.md` §3.1; blktrace
//! `doc/blkparse.1`, `blkparse_fmt.c` `process_default` and `fill_rwbs`, `blkparse.c`
//! `show_device_and_cpu_stats`).
//!
//! Every event is a line: the header `"%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s "` — device
//! `major,minor`, CPU, sequence number, `seconds.nanoseconds` since the trace started, PID,
//! action, RWBS — then a tail that depends on the action:
//!
//! * `Q`, `I`, `D`, `B`: `SECTOR + BLOCKS [COMMAND]`, or `[COMMAND]` when the request has no
//!   sectors (a flush); with `blkparse -t`, `(ELAPSED)` before the command. A passthrough
//!   (`BLK_TC_PC`) request prints `BYTES (CDB) [COMMAND]`.
//! * `C`, `R`: `SECTOR + BLOCKS [ERROR]`, `SECTOR [ERROR]` without sectors.
//! * `M`, `F`, `G`, `S`: `SECTOR + BLOCKS [COMMAND]`; `P`: `[COMMAND]`; `U`, `UT`:
//!   `[COMMAND] REQUESTS`; `X`: `SECTOR / NEW_SECTOR [COMMAND]`; `A`: `SECTOR + BLOCKS <-
//!   (MAJOR,MINOR) SECTOR`; `m` (a message): free text.
//!
//! Blocks and sectors are 512 bytes. RWBS (`fill_rwbs`) is an optional `F` (preflush), one of
//! `D` (discard), `W`, `R`, `N` (no data), then optionally `F` (FUA), `A` (readahead), `S`
//! (sync), `M` (metadata), in that order. The kernel's own `blk_fill_rwbs` (tracefs) also
//! prints `F` alone for a flush operation and `DE` for a secure erase; both are read too.
//! After the events, blkparse prints a summary (`CPU0 (8,0):`, `Total (8,0):`, `Throughput
//! (R/W): ...`, `Events (8,0): N entries`); the reader stops at its first line.
//!
//! # The I/Os
//!
//! The reader reads every line and checks its header and RWBS; the I/Os are the `Q` events
//! or the `D` events, as the caller chooses ([`crate::BlkparseEvents`]): `Q` is the I/O as the
//! process submitted it, `D` the request as the driver got it. Each `C` event completes the
//! oldest waiting I/O of its device with the same sector and size; when none has (several
//! queued bios merged into one request), every waiting I/O of the device starting inside
//! the completed range. `latency_ns` is the time from the I/O's event to its `C` (Q2C or
//! D2C in btt's terms); an I/O never completed has none. All other actions are skipped.
//!
//! An I/O's op: `D` discard, `W` write, `R` read, `F` flush; `N` with a preflush `F`, or a
//! preflush write of no sectors, is a flush (the empty flush the kernel sends); any other
//! `N` event carries no data and is skipped. The flags are the RWBS letters after the
//! direction (and the leading `F` as `preflush`).
//!
//! # Writing
//!
//! [`write()`] prints each I/O as a `Q` (or `D`) event and, when it has a latency, a `C` event
//! that much later, placed in time order among the following events; CPU 0, sequence numbers
//! from 1. Written as missing: a device not of the form `major,minor` (or none) as `0,0`,
//! no pid as 0, no process as `(null)` (what blkparse prints for a PID it has no name for).
//! Lost: the priority, a flush's offset and size. Refused: an offset or a size that is not
//! a whole number of sectors, a read, write or discard of no sectors (blkparse would print
//! it as `N`), more than `u32::MAX` sectors, a process name that is `(null)` or has a line
//! break.
//!
//! # Deviations
//!
//! * Passthrough (`BLK_TC_PC`) `Q`/`D`/`C` events are skipped: they carry a SCSI command,
//!   not a block range (told apart by their shape: a byte count, or a parenthesised command
//!   that is not an elapsed time). Message (`m`) lines are skipped unread.
//! * A `C` event's error number is not kept (a replay issues the I/O either way).
//! * Two I/Os of one device with the same sector and size in flight at once: their
//!   completions are matched oldest first, as the text cannot say otherwise.
//! * The writer prints seconds as a 64-bit number; blkparse casts them to `int` (a trace
//!   past 68 years would wrap there). Its `C` events carry PID 0 (they run from the
//!   interrupt) and the I/O's RWBS.
//! * The real blkparse output in the tests is hand-written from the man page and the
//!   sources (no tracefs-era capture was available when this was written).

use std::collections::BTreeMap;
use std::io::Write;

use crate::{BlkparseEvents, Format, IoFlags, Op, ParseError, Trace, TraceError, TraceIo, refuse};

/// Bytes in a blktrace sector.
pub const SECTOR_BYTES: u64 = 512;

/// Which event [`write()`] prints for an I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `Q`: bio queued.
    Queue,
    /// `D`: issued to the driver.
    Issue,
}

/// The actions blkparse prints (`blkparse.c`), `m` a message.
const ACTIONS: [&str; 17] =
    ["Q", "G", "S", "I", "M", "F", "D", "C", "P", "U", "UT", "T", "X", "A", "B", "R", "m"];

/// A line's fixed header.
struct Header<'a> {
    device: (u32, u32),
    time_ns: u64,
    pid: u32,
    action: &'a str,
    rwbs: &'a str,
    /// The rest of the line after the RWBS.
    tail: &'a str,
}

/// The next white-space separated word of `text` and what follows it.
fn next_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    if text.is_empty() {
        return None;
    }
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    Some((&text[..end], &text[end..]))
}

const SHAPE: &str = "accepted: `MAJOR,MINOR CPU SEQUENCE SECONDS.NANOSECONDS PID ACTION RWBS ...`";

fn header(line: &str) -> Result<Header<'_>, (&'static str, String)> {
    let mut rest = line;
    let mut word = |field: &'static str| {
        let (word, after) = next_word(rest)
            .ok_or_else(|| (field, format!("the line ends before the {field}; {SHAPE}")))?;
        rest = after;
        Ok::<_, (&'static str, String)>(word)
    };
    let device = word("device")?;
    let cpu = word("cpu")?;
    let sequence = word("sequence")?;
    let time = word("time")?;
    let pid = word("pid")?;
    let action = word("action")?;
    let device = device
        .split_once(',')
        .and_then(|(major, minor)| Some((major.parse().ok()?, minor.parse().ok()?)))
        .ok_or_else(|| ("device", format!("`{device}`; accepted: `MAJOR,MINOR`, e.g. `8,0`")))?;
    cpu.parse::<u32>().map_err(|_| ("cpu", format!("`{cpu}` is not a CPU number")))?;
    sequence
        .parse::<u64>()
        .map_err(|_| ("sequence", format!("`{sequence}` is not a sequence number")))?;
    let time_ns = parse_time(time).ok_or_else(|| {
        ("time", format!("`{time}`; accepted: `SECONDS.NANOSECONDS`, e.g. `0.000123456`"))
    })?;
    let pid = pid.parse::<u32>().map_err(|_| ("pid", format!("`{pid}` is not a PID")))?;
    if !ACTIONS.contains(&action) {
        return Err(("action", format!("`{action}`; accepted: {}", ACTIONS.join(", "))));
    }
    let (rwbs, tail) = if action == "m" {
        ("", "")
    } else {
        let rwbs = word("rwbs")?;
        (rwbs, rest)
    };
    Ok(Header { device, time_ns, pid, action, rwbs, tail })
}

/// `S.NNNNNNNNN` as ns: whole seconds, then one to nine digits of fraction.
fn parse_time(text: &str) -> Option<u64> {
    let (seconds, fraction) = text.split_once('.')?;
    if seconds.is_empty()
        || !seconds.bytes().all(|byte| byte.is_ascii_digit())
        || fraction.is_empty()
        || fraction.len() > 9
        || !fraction.bytes().all(|byte| byte.is_ascii_digit())
    {
        return None;
    }
    let scale = 10u64.pow(9 - fraction.len() as u32);
    seconds
        .parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(fraction.parse::<u64>().ok()? * scale)
}

/// The direction letter of an RWBS string and its flags; `None` when it is not one.
fn parse_rwbs(rwbs: &str) -> Option<(char, IoFlags)> {
    let letters: Vec<char> = rwbs.chars().collect();
    let mut flags = IoFlags::default();
    let mut index = 0;
    if letters.len() > 1 && letters[0] == 'F' && "DWRN".contains(letters[1]) {
        flags.preflush = true;
        index = 1;
    }
    let direction = *letters.get(index)?;
    if !"DWRNF".contains(direction) {
        return None;
    }
    index += 1;
    if direction == 'D' && letters.get(index) == Some(&'E') {
        index += 1;
    }
    // The rest in fill_rwbs's order, each at most once.
    for (letter, flag) in [
        ('F', &mut flags.fua),
        ('A', &mut flags.readahead),
        ('S', &mut flags.sync),
        ('M', &mut flags.meta),
    ] {
        if letters.get(index) == Some(&letter) {
            *flag = true;
            index += 1;
        }
    }
    (index == letters.len()).then_some((direction, flags))
}

/// Whether `line` is a blkparse event line (for [`crate::detect`]).
pub(crate) fn is_event_line(line: &str) -> bool {
    header(line).is_ok_and(|header| header.action == "m" || parse_rwbs(header.rwbs).is_some())
}

/// Whether `line` starts blkparse's closing summary.
fn is_summary(line: &str) -> bool {
    let line = line.trim_start();
    let cpu =
        line.strip_prefix("CPU").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    cpu || ["Total (", "Throughput (", "Events (", "Skips:"].iter().any(|p| line.starts_with(p))
}

/// A tail's sector range (sector, sectors) if it has one, and its bracketed text.
type Tail<'a> = (Option<(u64, u64)>, &'a str);

/// The sector range and bracketed text of a tail `[SECTOR [+ BLOCKS]] [(ELAPSED)] [TEXT]`;
/// `Ok(None)` for a passthrough request's tail (`BYTES [(CDB)] [TEXT]`, a completion's
/// `(CDB) [ERROR]`). `completion`: a lone number is a `C` event's sector, where in a `Q` or
/// `D` event it is a passthrough request's byte count.
fn parse_tail(tail: &str, completion: bool) -> Result<Option<Tail<'_>>, (&'static str, String)> {
    let tail = tail.trim();
    let accepted = if completion {
        "accepted: `SECTOR + BLOCKS [ERROR]` or `SECTOR [ERROR]`"
    } else {
        "accepted: `SECTOR + BLOCKS [COMMAND]` or `[COMMAND]`"
    };
    let (Some(open), true) = (tail.find('['), tail.ends_with(']')) else {
        return Err(("tail", format!("`{tail}`; {accepted}")));
    };
    let bracketed = &tail[open + 1..tail.len() - 1];
    let mut before = tail[..open].trim_end();
    // `blkparse -t` prints the elapsed time as `(%8llu)`, spaces inside; a passthrough
    // request prints its command bytes in parentheses instead.
    if let Some(inside) = before.strip_suffix(')') {
        let Some(paren) = inside.rfind('(') else {
            return Err(("tail", format!("`{tail}`: a `)` with no `(`; {accepted}")));
        };
        let elapsed = inside[paren + 1..].trim();
        if elapsed.is_empty() || !elapsed.bytes().all(|byte| byte.is_ascii_digit()) {
            return Ok(None);
        }
        before = inside[..paren].trim_end();
    }
    let words: Vec<&str> = before.split_whitespace().collect();
    let number = |field: &'static str, word: &str| {
        word.parse::<u64>()
            .map_err(|_| (field, format!("`{word}` is not a whole number of sectors")))
    };
    let range = match words.as_slice() {
        [] => None,
        [sector, "+", blocks] => Some((number("sector", sector)?, number("blocks", blocks)?)),
        [sector] if completion => Some((number("sector", sector)?, 0)),
        [bytes] if bytes.parse::<u64>().is_ok() => return Ok(None),
        _ => return Err(("tail", format!("`{tail}`; {accepted}"))),
    };
    Ok(Some((range, bracketed)))
}

/// An I/O event or a completion, read from a line.
enum Parsed {
    Io { queue: bool, io: TraceIo, sectors: u64 },
    Completion { device: (u32, u32), time_ns: u64, sector: u64, sectors: u64 },
}

fn parse_line(line: &str) -> Result<Option<Parsed>, (&'static str, String)> {
    let header = header(line)?;
    if header.action == "m" {
        return Ok(None);
    }
    let Some((direction, flags)) = parse_rwbs(header.rwbs) else {
        return Err((
            "rwbs",
            format!(
                "`{}`; accepted: [F] then D, W, R or N, then F, A, S, M in that order",
                header.rwbs
            ),
        ));
    };
    let queue = header.action == "Q";
    if !(queue || header.action == "D" || header.action == "C") {
        return Ok(None);
    }
    let Some((range, bracketed)) = parse_tail(header.tail, header.action == "C")? else {
        return Ok(None);
    };
    let (sector, sectors) = range.unwrap_or((0, 0));
    if header.action == "C" {
        bracketed
            .trim()
            .parse::<i32>()
            .map_err(|_| ("error", format!("`[{bracketed}]`; accepted: `[ERRNO]`, e.g. `[0]`")))?;
        return Ok(Some(Parsed::Completion {
            device: header.device,
            time_ns: header.time_ns,
            sector,
            sectors,
        }));
    }
    let op = match direction {
        'D' => Op::Discard,
        'R' => Op::Read,
        'F' => Op::Flush,
        'W' if flags.preflush && sectors == 0 => Op::Flush,
        'W' => Op::Write,
        _ if flags.preflush => Op::Flush,
        _ => return Ok(None),
    };
    let overflow = || ("sector", format!("sector {sector} + {sectors} is past 2^64 bytes"));
    let offset_bytes = sector.checked_mul(SECTOR_BYTES).ok_or_else(overflow)?;
    let size_bytes = sectors.checked_mul(SECTOR_BYTES).ok_or_else(overflow)?;
    let mut io = TraceIo::new(header.time_ns, op, offset_bytes, size_bytes);
    io.pid = Some(header.pid);
    io.process = (bracketed != "(null)").then(|| bracketed.to_owned());
    io.device = Some(format!("{},{}", header.device.0, header.device.1));
    io.flags = Some(flags);
    Ok(Some(Parsed::Io { queue, io, sectors }))
}

/// A device's I/Os waiting for their completion, by start sector: (sectors, record index).
type Waiting = BTreeMap<u64, Vec<(u64, usize)>>;

/// Reads `text`, blkparse output in `file` (named in errors), taking `events` as the I/Os.
pub fn parse(file: &str, text: &str, events: BlkparseEvents) -> Result<Trace, ParseError> {
    let mut parsed = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if is_summary(line) {
            break;
        }
        let item = parse_line(line).map_err(|(field, problem)| ParseError {
            file: file.to_owned(),
            line: index + 1,
            field,
            problem,
        })?;
        parsed.extend(item);
    }
    let queue = match events {
        BlkparseEvents::Queue => true,
        BlkparseEvents::Issue => false,
        BlkparseEvents::Auto => {
            parsed.iter().any(|item| matches!(item, Parsed::Io { queue: true, .. }))
        }
    };
    let mut records = Vec::new();
    let mut waiting: BTreeMap<(u32, u32), Waiting> = BTreeMap::new();
    for item in parsed {
        match item {
            Parsed::Io { queue: is_queue, io, sectors } if is_queue == queue => {
                let device = device_numbers(io.device.as_deref()).expect("the reader's device");
                waiting
                    .entry(device)
                    .or_default()
                    .entry(io.offset_bytes / SECTOR_BYTES)
                    .or_default()
                    .push((sectors, records.len()));
                records.push(io);
            }
            Parsed::Io { .. } => {}
            Parsed::Completion { device, time_ns, sector, sectors } => {
                let Some(by_sector) = waiting.get_mut(&device) else { continue };
                let mut done = Vec::new();
                if let Some(list) = by_sector.get_mut(&sector) {
                    if let Some(position) = list.iter().position(|&(size, _)| size == sectors) {
                        done.push(list.remove(position).1);
                    }
                }
                if done.is_empty() {
                    let end = sector.saturating_add(sectors.max(1));
                    for (_, list) in by_sector.range_mut(sector..end) {
                        done.extend(list.drain(..).map(|(_, index)| index));
                    }
                }
                by_sector.retain(|_, list| !list.is_empty());
                for index in done {
                    let io: &mut TraceIo = &mut records[index];
                    io.latency_ns = Some(time_ns.saturating_sub(io.time_ns));
                }
            }
        }
    }
    Ok(Trace::new(Format::Blkparse, records))
}

/// `major,minor` as numbers.
fn device_numbers(device: Option<&str>) -> Option<(u32, u32)> {
    let (major, minor) = device?.split_once(',')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// One event line as `process_default` prints it (CPU 0).
struct Printer<'a> {
    out: &'a mut dyn Write,
    sequence: u64,
}

impl Printer<'_> {
    fn line(
        &mut self,
        device: (u32, u32),
        time_ns: u64,
        pid: u32,
        action: &str,
        rwbs: &str,
        tail: &str,
    ) -> std::io::Result<()> {
        self.sequence += 1;
        let (major, minor) = device;
        writeln!(
            self.out,
            "{major:3},{minor:<3} {cpu:2} {sequence:8} {seconds:5}.{nanoseconds:09} {pid:5} \
             {action:>2} {rwbs:>3} {tail}",
            cpu = 0,
            sequence = self.sequence,
            seconds = time_ns / 1_000_000_000,
            nanoseconds = time_ns % 1_000_000_000,
        )
    }
}

/// Completions not yet printed: (time, record index) → (device, RWBS, tail).
type Pending = BTreeMap<(u64, usize), ((u32, u32), String, String)>;

/// Prints the pending completions before `limit_ns` (all when `None`).
fn print_completions(
    printer: &mut Printer<'_>,
    pending: &mut Pending,
    limit_ns: Option<u64>,
) -> std::io::Result<()> {
    while let Some(entry) = pending.first_entry() {
        let (time_ns, _) = *entry.key();
        if limit_ns.is_some_and(|limit| time_ns >= limit) {
            break;
        }
        let (device, rwbs, tail) = entry.remove();
        // A completion is printed from the interrupt: no process, PID 0.
        printer.line(device, time_ns, 0, "C", &rwbs, &tail)?;
    }
    Ok(())
}

/// Writes `trace` as blkparse output: an `event` line per I/O and a `C` line per latency.
pub fn write(trace: &Trace, event: Event, out: &mut dyn Write) -> Result<(), TraceError> {
    let action = match event {
        Event::Queue => "Q",
        Event::Issue => "D",
    };
    let mut printer = Printer { out, sequence: 0 };
    let mut pending = Pending::new();
    for (index, io) in trace.records.iter().enumerate() {
        let (rwbs, range) =
            rwbs_and_range(io).map_err(|problem| refuse(Format::Blkparse, index, problem))?;
        let process = match io.process.as_deref() {
            None => "(null)",
            Some("(null)") => {
                return Err(refuse(
                    Format::Blkparse,
                    index,
                    "a process named `(null)`, which blkparse prints for an unknown one",
                ));
            }
            Some(name) if name.contains(['\n', '\r']) => {
                return Err(refuse(Format::Blkparse, index, "a process name with a line break"));
            }
            Some(name) => name,
        };
        let device = device_numbers(io.device.as_deref()).unwrap_or((0, 0));
        print_completions(&mut printer, &mut pending, Some(io.time_ns))?;
        let tail = match range {
            Some((sector, sectors)) => format!("{sector} + {sectors} [{process}]"),
            None => format!("[{process}]"),
        };
        printer.line(device, io.time_ns, io.pid.unwrap_or(0), action, &rwbs, &tail)?;
        if let Some(latency_ns) = io.latency_ns {
            let Some(done_ns) = io.time_ns.checked_add(latency_ns) else {
                return Err(refuse(Format::Blkparse, index, "time + latency is past 2^64 ns"));
            };
            let tail = match range {
                Some((sector, sectors)) => format!("{sector} + {sectors} [0]"),
                None => "0 [0]".to_owned(),
            };
            pending.insert((done_ns, index), (device, rwbs.clone(), tail));
        }
    }
    print_completions(&mut printer, &mut pending, None)?;
    Ok(())
}

/// An I/O's RWBS and its sector range (`None` for a flush), or why it cannot be printed.
fn rwbs_and_range(io: &TraceIo) -> Result<(String, Option<(u64, u64)>), String> {
    let flags = io.flags.unwrap_or_default();
    let mut rwbs = String::new();
    if flags.preflush || io.op == Op::Flush {
        rwbs.push('F');
    }
    rwbs.push(match io.op {
        Op::Read => 'R',
        Op::Write => 'W',
        Op::Discard => 'D',
        Op::Flush => 'N',
    });
    for (set, letter) in
        [(flags.fua, 'F'), (flags.readahead, 'A'), (flags.sync, 'S'), (flags.meta, 'M')]
    {
        if set {
            rwbs.push(letter);
        }
    }
    if io.op == Op::Flush {
        return Ok((rwbs, None));
    }
    if io.offset_bytes % SECTOR_BYTES != 0 || io.size_bytes % SECTOR_BYTES != 0 {
        return Err(format!(
            "offset {} and size {} bytes must be whole 512-byte sectors",
            io.offset_bytes, io.size_bytes
        ));
    }
    let sectors = io.size_bytes / SECTOR_BYTES;
    if sectors == 0 {
        return Err(format!("a {} of no sectors, which blkparse prints as `N`", io.op.name()));
    }
    if sectors > u64::from(u32::MAX) {
        return Err(format!("{sectors} sectors; blkparse prints at most {}", u32::MAX));
    }
    Ok((rwbs, Some((io.offset_bytes / SECTOR_BYTES, sectors))))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the RWBS grammar: blkparse's `fill_rwbs` order (preflush, direction, FUA,
    // readahead, sync, meta), the kernel's `F` flush and `DE` secure erase, and refusal of
    // letters out of order, repeated or unknown.
    #[test]
    fn rwbs_follows_fill_rwbs_and_the_kernels_letters() {
        let set =
            |preflush, fua, readahead, sync, meta| IoFlags { preflush, fua, readahead, sync, meta };
        let cases = [
            ("R", Some(('R', IoFlags::default()))),
            ("N", Some(('N', IoFlags::default()))),
            ("FWFSM", Some(('W', set(true, true, false, true, true)))),
            ("RA", Some(('R', set(false, false, true, false, false)))),
            ("FN", Some(('N', set(true, false, false, false, false)))),
            ("F", Some(('F', IoFlags::default()))),
            ("DE", Some(('D', IoFlags::default()))),
            ("WSF", None),
            ("RR", None),
            ("X", None),
            ("", None),
        ];
        for (rwbs, expected) in cases {
            assert_eq!(parse_rwbs(rwbs), expected, "{rwbs}");
        }
    }

    // Proves the summary's opening lines end the events and event lines do not.
    #[test]
    fn summary_starts_at_cpu_total_throughput_or_events() {
        for line in
            ["CPU0 (8,0):", "CPU12 (sdb):", "Total (8,0):", "Throughput (R/W): 1KiB/s / 2KiB/s"]
        {
            assert!(is_summary(line), "{line}");
        }
        for line in ["  8,0    0        1     0.000000000  1  Q   R 0 + 8 [CPU0]", "CPUx"] {
            assert!(!is_summary(line), "{line}");
        }
    }

    // Proves a `-t` trace's elapsed times are read past, and a passthrough request (bytes
    // and a CDB, no sector range) is skipped rather than misread as a sector.
    #[test]
    fn elapsed_times_and_passthrough_requests() {
        let text = "  8,0    1        1     0.000001000   10  D   W 64 + 8 (     120) [fio]\n\
                      8,0    1        2     0.000002000   10  D   R 36 (12 00 00 00 24 00) [sg_inq]\n\
                      8,0    0        3     0.000051000    0  C   W 64 + 8 (   50000) [0]\n";
        let trace = parse("t", text, BlkparseEvents::Issue).unwrap();
        assert_eq!(trace.records.len(), 1);
        assert_eq!(
            (trace.records[0].offset_bytes, trace.records[0].latency_ns),
            (32768, Some(50_000))
        );
    }
}
