//! fio's iolog, versions 2 and 3 (`/work/shared/specs/fio-compat.md` §6, `ecosystem.md` §1.4;
//! fio's HOWTO "Trace file format", `iolog.c` `read_iolog`, `log_io_u`, `log_file`).
//!
//! A log is a header line, `fio version 2 iolog` or `fio version 3 iolog`, then one record a
//! line, its fields separated by white space:
//!
//! * version 2: `FILE add|open|close`; `FILE read|write|trim|sync|datasync OFFSET LENGTH`
//!   (bytes; a sync's numbers are carried but unused by fio); `FILE wait N 0`.
//! * version 3: every line starts with a timestamp, `T FILE add`, `T FILE write OFFSET LENGTH`.
//!   The unit is the **microsecond** since the log was started: fio's `log_io_u` and
//!   `log_file` print `utime_since_now(&td->io_log_start_time)`, and `init_iolog_write` sets
//!   that start when it opens the log. fio ignores `wait` in version 3 (with a message).
//!
//! `wait`'s number: fio's HOWTO calls it microseconds after the previous wait, but fio's code
//! (`read_iolog_get`, since 2009; fio #247) sleeps until that many **milliseconds** after fio
//! started, when that is still ahead. The record keeps the number as written
//! ([`Action::Wait`]); what it means is the replayer's business.
//!
//! [`Iolog::parse`] reads a whole log, [`Iolog::write`] writes one; write then read gives the
//! same records.
//!
//! # Conversion to the common record ([`crate::TraceIo`], [`to_trace`], [`from_trace`])
//!
//! * `read`/`write`/`trim` become [`Op::Read`]/[`Op::Write`]/[`Op::Discard`]; `sync` and
//!   `datasync` both become [`Op::Flush`] (a block trace sees one cache flush for either), with
//!   their numbers kept as offset and size; a flush is written back as `sync`.
//! * The file name is the record's `device`; `add`, `open` and `close` are not I/O and are
//!   dropped on reading. The writer adds each file (`add`, `open`) before its first I/O and
//!   closes every file after the last, as fio's `write_iolog` does; a record with no device
//!   goes to the file `trace.0`.
//! * Version 3's µs become ns; on writing, ns are cut to whole µs (lost: the rest).
//! * Version 2 has no timestamps: an I/O's time is the last `wait`'s value read as ms (fio's
//!   code sleeps until that many ms after it started), 0 before any `wait`. The writer puts a
//!   `wait` before each I/O whose whole ms differ from the last wait's (lost: the rest below a
//!   ms; fio would also skip waits it is already past).
//! * Lost on writing: pid, process, flags, priority, latency. A size of 4 GiB or more is
//!   refused (fio reads a 32-bit length).
//!
//! # Deviations from fio
//!
//! * fio reports a bad line (an unknown action, a wrong number of fields, a `wait` in
//!   version 3) and skips it; the reader refuses the log at the first bad line, naming the
//!   file, the line, the field and what is accepted — a replay that silently drops I/O would
//!   not be the trace's.
//! * fio's `sscanf` ignores what follows the last field it reads; extra fields are refused
//!   here. fio reads a length as a C `unsigned int`: one above 4 GiB − 1 is refused here too,
//!   where fio would wrap it.
//! * File names are at most 256 bytes (fio's `%256s`) and hold no white space, in the reader
//!   and in the writer (a name fio would split or cut is refused rather than written so).
//! * Blank lines are bad lines (fio skips them with its "bad iolog" message).

use std::fmt;
use std::io::{self, Write};

/// The header of a version 2 log (fio ≥ 1.17).
pub const HEADER_V2: &str = "fio version 2 iolog";
/// The header of a version 3 log (fio ≥ 3.31; what `write_iolog` writes).
pub const HEADER_V3: &str = "fio version 3 iolog";
/// The longest file name fio reads (`%256s` in `read_iolog`).
pub const MAX_FILE_NAME_BYTES: usize = 256;

/// The log's version: its header line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// `fio version 2 iolog`: no timestamps; timing only by `wait`.
    V2,
    /// `fio version 3 iolog`: every line timestamped, µs since the log started.
    V3,
}

/// What a record does to its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileAction {
    /// `add`: the job gains the file.
    Add,
    /// `open`.
    Open,
    /// `close`.
    Close,
}

/// An I/O direction of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoAction {
    /// `read`.
    Read,
    /// `write`.
    Write,
    /// `trim` (a discard).
    Trim,
    /// `sync` (`fsync`).
    Sync,
    /// `datasync` (`fdatasync`).
    Datasync,
}

impl IoAction {
    /// The word in the log.
    pub const fn word(self) -> &'static str {
        match self {
            IoAction::Read => "read",
            IoAction::Write => "write",
            IoAction::Trim => "trim",
            IoAction::Sync => "sync",
            IoAction::Datasync => "datasync",
        }
    }
}

/// What a record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// `add`, `open` or `close`.
    File(FileAction),
    /// An I/O of `length_bytes` at `offset_bytes` (a sync's numbers are carried as written).
    Io {
        /// Its direction.
        action: IoAction,
        /// Byte offset in the file.
        offset_bytes: u64,
        /// Length in bytes (fio reads it as a 32-bit unsigned number).
        length_bytes: u32,
    },
    /// `wait N 0` (version 2 only): fio's code waits until N ms after fio started.
    Wait {
        /// N, as written.
        value: u64,
    },
}

/// One line of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Version 3's timestamp, µs since the log started; `None` in version 2.
    pub time_us: Option<u64>,
    /// The file's name as logged (fio logs the name it opened: `/dev/sdb`, `job.0.0`).
    pub file: String,
    /// What it does.
    pub action: Action,
}

/// A whole log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iolog {
    /// Its header.
    pub version: Version,
    /// Its records, in order.
    pub records: Vec<Record>,
}

/// A log that cannot be read: where, which field, and what is accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {field}: {problem}")]
pub struct IologError {
    /// The file read (as named by the caller).
    pub file: String,
    /// Its line, from 1.
    pub line: usize,
    /// The field at fault: `header`, `time`, `file`, `action`, `offset`, `length`, `value`,
    /// `fields`.
    pub field: &'static str,
    /// What is wrong, and what is accepted.
    pub problem: String,
}

/// A record the writer cannot put in a log (that the reader would not read back as it).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The record does not fit the log's version or format.
    #[error("record {index}: {problem}")]
    Record {
        /// Its index in [`Iolog::records`].
        index: usize,
        /// Why.
        problem: String,
    },
    /// Writing failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

fn file_action(word: &str) -> Option<FileAction> {
    match word {
        "add" => Some(FileAction::Add),
        "open" => Some(FileAction::Open),
        "close" => Some(FileAction::Close),
        _ => None,
    }
}

fn io_action(word: &str) -> Option<IoAction> {
    match word {
        "read" => Some(IoAction::Read),
        "write" => Some(IoAction::Write),
        "trim" => Some(IoAction::Trim),
        "sync" => Some(IoAction::Sync),
        "datasync" => Some(IoAction::Datasync),
        _ => None,
    }
}

/// Why a file name cannot be in a log, if it cannot.
fn bad_file_name(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("an empty file name".into());
    }
    if name.len() > MAX_FILE_NAME_BYTES {
        return Some(format!(
            "a file name of {} bytes; fio reads at most {MAX_FILE_NAME_BYTES}",
            name.len()
        ));
    }
    if name.chars().any(char::is_whitespace) {
        return Some(format!("`{name}` holds white space, which separates the fields"));
    }
    None
}

impl Iolog {
    /// Reads `text`, the contents of the log `file` (named in errors).
    pub fn parse(file: &str, text: &str) -> Result<Iolog, IologError> {
        let error = |line: usize, field: &'static str, problem: String| IologError {
            file: file.to_owned(),
            line,
            field,
            problem,
        };
        let mut lines = text.lines().enumerate().map(|(index, line)| (index + 1, line));
        let (_, header) = lines.next().ok_or_else(|| {
            error(1, "header", format!("an empty file; accepted: `{HEADER_V2}` or `{HEADER_V3}`"))
        })?;
        // fio compares the header's start only (`strncmp`).
        let version = if header.starts_with(HEADER_V3) {
            Version::V3
        } else if header.starts_with(HEADER_V2) {
            Version::V2
        } else {
            return Err(error(
                1,
                "header",
                format!(
                    "`{header}` is not an iolog header; accepted: `{HEADER_V2}` or `{HEADER_V3}` \
                     (version 1 and blktrace's binary logs are not read)"
                ),
            ));
        };
        let mut records = Vec::new();
        for (number, line) in lines {
            records.push(
                parse_line(version, line)
                    .map_err(|(field, problem)| error(number, field, problem))?,
            );
        }
        Ok(Iolog { version, records })
    }

    /// Writes the log: its header, then a line per record.
    pub fn write(&self, out: &mut dyn Write) -> Result<(), WriteError> {
        let header = match self.version {
            Version::V2 => HEADER_V2,
            Version::V3 => HEADER_V3,
        };
        writeln!(out, "{header}")?;
        for (index, record) in self.records.iter().enumerate() {
            let line = record
                .line(self.version)
                .map_err(|problem| WriteError::Record { index, problem })?;
            writeln!(out, "{line}")?;
        }
        Ok(())
    }

    /// The log as text ([`Iolog::write`] into a string).
    pub fn to_text(&self) -> Result<String, WriteError> {
        let mut out = Vec::new();
        self.write(&mut out)?;
        Ok(String::from_utf8(out).expect("the writer writes UTF-8"))
    }
}

impl Record {
    /// The record's line in a log of `version` (no line end), as fio's `log_io_u`/`log_file`
    /// print it; why not when it cannot be in such a log.
    pub fn line(&self, version: Version) -> Result<String, String> {
        if let Some(problem) = bad_file_name(&self.file) {
            return Err(problem);
        }
        let mut line = match (version, self.time_us) {
            (Version::V3, Some(time_us)) => format!("{time_us} "),
            (Version::V3, None) => return Err("a version 3 record needs a timestamp".into()),
            (Version::V2, None) => String::new(),
            (Version::V2, Some(_)) => return Err("a version 2 record has no timestamp".into()),
        };
        line.push_str(&self.file);
        match self.action {
            Action::File(action) => line.push_str(match action {
                FileAction::Add => " add",
                FileAction::Open => " open",
                FileAction::Close => " close",
            }),
            Action::Io { action, offset_bytes, length_bytes } => {
                line.push_str(&format!(" {} {offset_bytes} {length_bytes}", action.word()));
            }
            Action::Wait { value } => {
                if version == Version::V3 {
                    return Err("`wait` is not part of version 3 (fio ignores it)".into());
                }
                line.push_str(&format!(" wait {value} 0"));
            }
        }
        Ok(line)
    }
}

/// One record line; errors are the field and the problem.
fn parse_line(version: Version, line: &str) -> Result<Record, (&'static str, String)> {
    let mut fields: Vec<&str> = line.split_whitespace().collect();
    let time_us = match version {
        Version::V2 => None,
        Version::V3 => {
            if fields.is_empty() {
                return Err((
                    "fields",
                    "an empty line; accepted: `TIME FILE ACTION [OFFSET LENGTH]`".into(),
                ));
            }
            let time = fields.remove(0);
            Some(time.parse::<u64>().map_err(|_| {
                (
                    "time",
                    format!(
                        "`{time}` is not a timestamp; accepted: whole µs since the log started"
                    ),
                )
            })?)
        }
    };
    let shape = match version {
        Version::V2 => {
            "`FILE add|open|close` or `FILE read|write|trim|sync|datasync OFFSET LENGTH` or `FILE wait N 0`"
        }
        Version::V3 => {
            "`TIME FILE add|open|close` or `TIME FILE read|write|trim|sync|datasync OFFSET LENGTH`"
        }
    };
    let (file, word) = match fields.as_slice() {
        [file, word] | [file, word, _, _] => (*file, *word),
        _ => {
            return Err((
                "fields",
                format!("{} fields after the timestamp where accepted is {shape}", fields.len()),
            ));
        }
    };
    if let Some(problem) = bad_file_name(file) {
        return Err(("file", problem));
    }
    let action = if fields.len() == 2 {
        match file_action(word) {
            Some(action) => Action::File(action),
            None => {
                return Err((
                    "action",
                    format!("`{word}` with no offset and length; accepted: add, open, close"),
                ));
            }
        }
    } else {
        let number = |field: &'static str, text: &str| {
            text.parse::<u64>()
                .map_err(|_| (field, format!("`{text}` is not a whole number of bytes")))
        };
        if word == "wait" {
            if version == Version::V3 {
                return Err((
                    "action",
                    "`wait` in a version 3 log (fio ignores it: version 3 times every line)".into(),
                ));
            }
            Action::Wait { value: number("value", fields[2])? }
        } else {
            let Some(action) = io_action(word) else {
                return Err((
                    "action",
                    format!(
                        "`{word}`; accepted: read, write, trim, sync, datasync, wait (version 2)"
                    ),
                ));
            };
            let offset_bytes = number("offset", fields[2])?;
            let length = number("length", fields[3])?;
            let length_bytes = u32::try_from(length).map_err(|_| {
                ("length", format!("{length} bytes; fio reads a length of at most {}", u32::MAX))
            })?;
            Action::Io { action, offset_bytes, length_bytes }
        }
    };
    Ok(Record { time_us, file: file.to_owned(), action })
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Version::V2 => HEADER_V2,
            Version::V3 => HEADER_V3,
        })
    }
}

// Conversion to and from the common record: see the module doc.

use crate::{Format, Op, Trace, TraceError, TraceIo};

/// The file a record with no device is written to.
pub const DEFAULT_FILE: &str = "trace.0";

/// The log's I/Os as a [`Trace`] (the mapping is in the module doc).
pub fn to_trace(log: &Iolog) -> Trace {
    let format = match log.version {
        Version::V2 => Format::IologV2,
        Version::V3 => Format::IologV3,
    };
    let mut wait_ms = 0u64;
    let mut records = Vec::new();
    for record in &log.records {
        match record.action {
            Action::File(_) => {}
            Action::Wait { value } => wait_ms = value,
            Action::Io { action, offset_bytes, length_bytes } => {
                let time_ns = match record.time_us {
                    Some(time_us) => time_us.saturating_mul(1_000),
                    None => wait_ms.saturating_mul(1_000_000),
                };
                let op = match action {
                    IoAction::Read => Op::Read,
                    IoAction::Write => Op::Write,
                    IoAction::Trim => Op::Discard,
                    IoAction::Sync | IoAction::Datasync => Op::Flush,
                };
                let mut io = TraceIo::new(time_ns, op, offset_bytes, u64::from(length_bytes));
                io.device = Some(record.file.clone());
                records.push(io);
            }
        }
    }
    Trace::new(format, records)
}

/// The trace as a log of `version` (what is lost is in the module doc).
pub fn from_trace(trace: &Trace, version: Version) -> Result<Iolog, TraceError> {
    let format = match version {
        Version::V2 => Format::IologV2,
        Version::V3 => Format::IologV3,
    };
    let mut records = Vec::new();
    let mut files: Vec<&str> = Vec::new();
    let mut last_wait_ms = 0u64;
    let mut last_time_us = 0u64;
    for (index, io) in trace.records.iter().enumerate() {
        let file = io.device.as_deref().unwrap_or(DEFAULT_FILE);
        if let Some(problem) = bad_file_name(file) {
            return Err(crate::refuse(format, index, format!("device: {problem}")));
        }
        let length_bytes = u32::try_from(io.size_bytes).map_err(|_| {
            crate::refuse(
                format,
                index,
                format!("a size of {} bytes; fio reads at most {}", io.size_bytes, u32::MAX),
            )
        })?;
        let time_us = match version {
            Version::V3 => Some(io.time_ns / 1_000),
            Version::V2 => None,
        };
        last_time_us = time_us.unwrap_or(0);
        let line = |action| Record { time_us, file: file.to_owned(), action };
        if !files.contains(&file) {
            files.push(file);
            records.push(line(Action::File(FileAction::Add)));
            records.push(line(Action::File(FileAction::Open)));
        }
        let time_ms = io.time_ns / 1_000_000;
        if version == Version::V2 && time_ms != last_wait_ms {
            records.push(line(Action::Wait { value: time_ms }));
            last_wait_ms = time_ms;
        }
        let action = match io.op {
            Op::Read => IoAction::Read,
            Op::Write => IoAction::Write,
            Op::Discard => IoAction::Trim,
            Op::Flush => IoAction::Sync,
        };
        records.push(line(Action::Io { action, offset_bytes: io.offset_bytes, length_bytes }));
    }
    for file in files {
        let time_us = (version == Version::V3).then_some(last_time_us);
        records.push(Record {
            time_us,
            file: file.to_owned(),
            action: Action::File(FileAction::Close),
        });
    }
    Ok(Iolog { version, records })
}

/// Writes the trace as a log of `version`.
pub fn write_trace(trace: &Trace, version: Version, out: &mut dyn Write) -> Result<(), TraceError> {
    let log = from_trace(trace, version)?;
    let format = match version {
        Version::V2 => Format::IologV2,
        Version::V3 => Format::IologV3,
    };
    log.write(out).map_err(|error| match error {
        WriteError::Io(error) => TraceError::Output(error),
        WriteError::Record { index, problem } => crate::refuse(format, index, problem),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn io(time_us: Option<u64>, file: &str, action: IoAction, offset: u64, len: u32) -> Record {
        Record {
            time_us,
            file: file.into(),
            action: Action::Io { action, offset_bytes: offset, length_bytes: len },
        }
    }

    // Proves a version 2 log with every action reads into the records it says, wait's number
    // kept as written and a sync's numbers carried.
    #[test]
    fn version_2_reads_every_action() {
        let text = "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb read 4096 512\n\
                    /dev/sdb write 0 8192\n/dev/sdb trim 65536 4096\n/dev/sdb wait 250 0\n\
                    /dev/sdb sync 0 0\n/dev/sdb datasync 0 0\n/dev/sdb close\n";
        let log = Iolog::parse("t.log", text).unwrap();
        assert_eq!(log.version, Version::V2);
        let file = |action| Record { time_us: None, file: "/dev/sdb".into(), action };
        assert_eq!(
            log.records,
            vec![
                file(Action::File(FileAction::Add)),
                file(Action::File(FileAction::Open)),
                io(None, "/dev/sdb", IoAction::Read, 4096, 512),
                io(None, "/dev/sdb", IoAction::Write, 0, 8192),
                io(None, "/dev/sdb", IoAction::Trim, 65536, 4096),
                file(Action::Wait { value: 250 }),
                io(None, "/dev/sdb", IoAction::Sync, 0, 0),
                io(None, "/dev/sdb", IoAction::Datasync, 0, 0),
                file(Action::File(FileAction::Close)),
            ]
        );
    }

    // Proves the version 3 writer's own output (the spec's observed fio 3.31 log) reads with
    // its timestamps, and writes back byte for byte.
    #[test]
    fn version_3_reads_fios_output_and_writes_it_back() {
        let text = "fio version 3 iolog\n26 w.0.0 add\n318 w.0.0 open\n323 w.0.0 write 0 16384\n\
                    342 w.0.0 write 32768 16384\n346 w.0.0 sync 32768 0\n365 w.0.0 close\n";
        let log = Iolog::parse("w.log", text).unwrap();
        assert_eq!(log.version, Version::V3);
        assert_eq!(log.records.len(), 6);
        assert_eq!(log.records[2], io(Some(323), "w.0.0", IoAction::Write, 0, 16384));
        assert_eq!(log.records[4], io(Some(346), "w.0.0", IoAction::Sync, 32768, 0));
        assert_eq!(log.to_text().unwrap(), text);
    }

    // Proves each kind of bad input is refused naming the file, the line, the field and what
    // is accepted.
    #[test]
    fn errors_name_file_line_and_field() {
        let cases: &[(&str, usize, &str, &str)] = &[
            ("", 1, "header", "empty file"),
            ("fio version 1 iolog\n", 1, "header", "accepted: `fio version 2 iolog`"),
            ("fio version 2 iolog\nf add\nf read 0\n", 3, "fields", "3 fields"),
            ("fio version 2 iolog\nf read x 4096\n", 2, "offset", "`x`"),
            ("fio version 2 iolog\nf read 0 4294967296\n", 2, "length", "4294967296"),
            ("fio version 2 iolog\nf copy 0 4096\n", 2, "action", "accepted: read, write"),
            ("fio version 2 iolog\nf remove\n", 2, "action", "accepted: add, open, close"),
            ("fio version 2 iolog\nf wait x 0\n", 2, "value", "`x`"),
            ("fio version 3 iolog\n1 f add\n12 f wait 5 0\n", 3, "action", "version 3"),
            ("fio version 3 iolog\nabc f add\n", 2, "time", "whole µs"),
            ("fio version 3 iolog\n1 f add\n\n", 3, "fields", "empty line"),
            ("fio version 2 iolog\nf read 0 4096 9\n", 2, "fields", "5 fields"),
        ];
        for &(text, line, field, needle) in cases {
            let error = Iolog::parse("bad.log", text).unwrap_err();
            assert_eq!((error.line, error.field), (line, field), "{text:?}: {error}");
            let shown = error.to_string();
            assert!(shown.starts_with(&format!("bad.log:{line}: {field}: ")), "{shown}");
            assert!(shown.contains(needle), "{text:?}: `{shown}` lacks `{needle}`");
        }
        let long = format!("fio version 2 iolog\n{} add\n", "n".repeat(257));
        let error = Iolog::parse("long.log", &long).unwrap_err();
        assert_eq!((error.line, error.field), (2, "file"));
    }

    // Proves the writer refuses what it could not read back: a wait in version 3, a record
    // whose timestamp does not match the version, a name with white space.
    #[test]
    fn writer_refuses_records_the_reader_would_not_read_back() {
        let wait = Record { time_us: Some(1), file: "f".into(), action: Action::Wait { value: 3 } };
        let spaced = io(None, "a b", IoAction::Read, 0, 512);
        let untimed = io(None, "f", IoAction::Read, 0, 512);
        for (version, record) in
            [(Version::V3, wait), (Version::V2, spaced), (Version::V3, untimed)]
        {
            let log = Iolog { version, records: vec![record] };
            assert!(matches!(log.to_text(), Err(WriteError::Record { index: 0, .. })));
        }
    }

    fn record(version: Version) -> impl Strategy<Value = Record> {
        let time = match version {
            Version::V2 => Just(None).boxed(),
            Version::V3 => any::<u64>().prop_map(Some).boxed(),
        };
        let action = prop_oneof![
            prop_oneof![Just(FileAction::Add), Just(FileAction::Open), Just(FileAction::Close)]
                .prop_map(Action::File),
            (
                prop_oneof![
                    Just(IoAction::Read),
                    Just(IoAction::Write),
                    Just(IoAction::Trim),
                    Just(IoAction::Sync),
                    Just(IoAction::Datasync)
                ],
                any::<u64>(),
                any::<u32>()
            )
                .prop_map(|(action, offset_bytes, length_bytes)| Action::Io {
                    action,
                    offset_bytes,
                    length_bytes
                }),
        ];
        let action = match version {
            Version::V2 => {
                prop_oneof![action, any::<u64>().prop_map(|value| Action::Wait { value })].boxed()
            }
            Version::V3 => action.boxed(),
        };
        (time, "[!-~]{1,256}", action).prop_map(|(time_us, file, action)| Record {
            time_us,
            file,
            action,
        })
    }

    fn log() -> impl Strategy<Value = Iolog> {
        prop_oneof![Just(Version::V2), Just(Version::V3)].prop_flat_map(|version| {
            proptest::collection::vec(record(version), 0..40)
                .prop_map(move |records| Iolog { version, records })
        })
    }

    proptest! {
        // Proves write then read gives the same records, for any log the types can hold:
        // every action, any offset, any 32-bit length, any printable name up to fio's limit.
        #[test]
        fn write_then_read_gives_the_same_records(log in log()) {
            let text = log.to_text().unwrap();
            prop_assert_eq!(Iolog::parse("p.log", &text).unwrap(), log);
        }
    }
}
