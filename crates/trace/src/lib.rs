//! Trace formats: readers and writers of the I/O traces elevator replays and captures
//! (issue 19). Each format is a module with a reader whose errors name the file, the line and
//! the field, and a writer whose output the reader reads back as the same I/O list.
//!
//! * [`iolog`]: fio's iolog, versions 2 and 3 (fio's `read_iolog`/`write_iolog`).
//! * [`blkparse`]: blktrace's `blkparse` default text output.
//! * [`msr`]: the MSR Cambridge / SNIA IOTTA CSV layout.
//! * [`compact`]: elevator's own compact text format, which carries every field of
//!   [`TraceIo`].
//!
//! Every format converts to and from one typed record, [`TraceIo`], held in a [`Trace`].
//! [`detect`] names a format from a file's first bytes, [`read`] reads a file in whichever
//! format it is, [`write()`] writes a trace in a chosen format.
//!
//! # What each format carries
//!
//! | field of [`TraceIo`] | iolog v2 | iolog v3 | blkparse | MSR CSV | compact |
//! |---|---|---|---|---|---|
//! | `time_ns` | ms (`wait`) | µs | ns | 100 ns | ns |
//! | `pid` | – | – | yes | – | yes |
//! | `process` | – | – | yes (`[comm]`) | – | yes |
//! | `device` | file name | file name | `major,minor` | `Hostname_DiskNumber` | yes |
//! | `op` | all four | all four | all four | read, write | all four |
//! | `offset_bytes`, `size_bytes` | bytes (size < 4 GiB) | same | 512-byte sectors | bytes | bytes |
//! | `flags` | – | – | RWBS letters | – | yes |
//! | `priority` | – | – | – | – | yes |
//! | `latency_ns` | – | – | from `C` events | `ResponseTime` | yes |
//!
//! A field a format cannot carry is dropped when written in it (each module's doc says how
//! a missing field is written); a value a format cannot hold at all (a discard in MSR CSV, an
//! offset off a sector in blkparse) is refused by its writer, naming the record.
//!
//! The crate depends on nothing of elevator's but `elevator-core`'s types ([`Op`],
//! [`IoPriority`]): the simulator, the live engine and the report all read traces through it.

#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

pub mod blkparse;
pub mod compact;
pub mod iolog;
pub mod msr;
pub mod sched_log;

use std::fmt;
use std::io::{self, Write};
use std::path::Path;
use std::str::FromStr;

pub use elevator_core::{IoClass, IoPriority, Op};

/// The request flags a block trace records (blkparse's RWBS letters besides the direction).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IoFlags {
    /// `REQ_SYNC` (`S`).
    pub sync: bool,
    /// `REQ_FUA`: forced unit access (`F` after the direction).
    pub fua: bool,
    /// `REQ_PREFLUSH`: flush the cache before the data (`F` before the direction).
    pub preflush: bool,
    /// `REQ_META`: file-system metadata (`M`).
    pub meta: bool,
    /// `REQ_RAHEAD`: readahead (`A`).
    pub readahead: bool,
}

/// One I/O of a trace, in the form every format converts to and from.
///
/// `None` means the trace does not say (the format cannot carry the field, or the line left
/// it out); it is never a stand-in for zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceIo {
    /// When it was queued or issued, ns since the trace's start.
    pub time_ns: u64,
    /// The issuing process's id.
    pub pid: Option<u32>,
    /// The issuing process's name (`comm`).
    pub process: Option<String>,
    /// The device or file it went to, as the format names it (`8,0`, `/dev/sdb`, `hm_0`).
    pub device: Option<String>,
    /// What it does.
    pub op: Op,
    /// Where, in bytes from the device's or file's start.
    pub offset_bytes: u64,
    /// How much, in bytes (0 for a flush).
    pub size_bytes: u64,
    /// Its request flags.
    pub flags: Option<IoFlags>,
    /// Its I/O priority.
    pub priority: Option<IoPriority>,
    /// From `time_ns` to its completion, when the trace records completions.
    pub latency_ns: Option<u64>,
}

impl TraceIo {
    /// An I/O with nothing but its time, operation, offset and size known.
    pub fn new(time_ns: u64, op: Op, offset_bytes: u64, size_bytes: u64) -> TraceIo {
        TraceIo {
            time_ns,
            pid: None,
            process: None,
            device: None,
            op,
            offset_bytes,
            size_bytes,
            flags: None,
            priority: None,
            latency_ns: None,
        }
    }
}

/// A whole trace: its I/Os in the order the file lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The format it was read from (or is meant for).
    pub format: Format,
    /// The wall-clock time of `time_ns == 0`, ns since the Unix epoch, when the format
    /// records one (MSR CSV's absolute FILETIME stamps).
    pub start_unix_ns: Option<i128>,
    /// The I/Os.
    pub records: Vec<TraceIo>,
}

impl Trace {
    /// A trace of `records` in `format`, with no wall-clock start.
    pub fn new(format: Format, records: Vec<TraceIo>) -> Trace {
        Trace { format, start_unix_ns: None, records }
    }
}

/// A trace format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// fio iolog version 2.
    IologV2,
    /// fio iolog version 3 (what fio's `write_iolog` writes).
    IologV3,
    /// blkparse's default text output.
    Blkparse,
    /// MSR Cambridge / SNIA CSV.
    Msr,
    /// elevator's compact format.
    Compact,
}

impl Format {
    /// Every format, in the order [`detect`] tries them.
    pub const ALL: [Format; 5] =
        [Format::IologV2, Format::IologV3, Format::Compact, Format::Blkparse, Format::Msr];

    /// The name a command line takes and errors print.
    pub const fn name(self) -> &'static str {
        match self {
            Format::IologV2 => "iolog2",
            Format::IologV3 => "iolog3",
            Format::Blkparse => "blkparse",
            Format::Msr => "msr",
            Format::Compact => "compact",
        }
    }

    /// What a file in the format starts with, for error messages.
    pub const fn signature(self) -> &'static str {
        match self {
            Format::IologV2 => "the line `fio version 2 iolog`",
            Format::IologV3 => "the line `fio version 3 iolog`",
            Format::Blkparse => {
                "a blkparse event line such as `8,0 1 1 0.000000000 1234 Q R 2048 + 8 [fio]`"
            }
            Format::Msr => {
                "a CSV line `Timestamp,Hostname,DiskNumber,Read|Write,Offset,Size,ResponseTime`"
            }
            Format::Compact => "the line `elevator-trace 1`",
        }
    }

    fn accepted() -> String {
        Format::ALL
            .iter()
            .map(|format| format!("{} ({})", format.name(), format.signature()))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Format, String> {
        Format::ALL.into_iter().find(|format| format.name() == text).ok_or_else(|| {
            let names: Vec<_> = Format::ALL.iter().map(|format| format.name()).collect();
            format!("unknown trace format `{text}`; accepted: {}", names.join(", "))
        })
    }
}

/// A line of a trace that cannot be read: where, which field, and what is accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {field}: {problem}")]
pub struct ParseError {
    /// The file read (as named by the caller).
    pub file: String,
    /// Its line, from 1.
    pub line: usize,
    /// The field at fault, as the format's documentation names it.
    pub field: &'static str,
    /// What is wrong, and what is accepted.
    pub problem: String,
}

/// Why a trace could not be read or written. None of these goes away on a retry but
/// [`TraceError::Read`] and [`TraceError::Output`], which are the operating system's.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("{file}: cannot read: {reason}")]
    Read {
        /// The file.
        file: String,
        /// Why (in the message, not a `source`: an error chain printed whole would say it
        /// twice).
        reason: io::Error,
    },
    /// A line of a blkparse, MSR or compact trace is bad.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A line of an iolog is bad.
    #[error(transparent)]
    Iolog(#[from] iolog::IologError),
    /// The file is in none of the formats.
    #[error("{file}: not a trace in any known format; accepted: {accepted}", accepted = Format::accepted())]
    UnknownFormat {
        /// The file.
        file: String,
    },
    /// A record cannot be written in the format (its reader would not read it back).
    #[error("{format}: record {index}: {problem}")]
    Write {
        /// The format written.
        format: Format,
        /// The record's index in [`Trace::records`].
        index: usize,
        /// Why.
        problem: String,
    },
    /// Writing the output failed.
    #[error("writing the trace: {0}")]
    Output(#[from] io::Error),
}

/// How blkparse events become I/Os (see [`blkparse`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlkparseEvents {
    /// `Q` events when the trace has any, else `D` events.
    #[default]
    Auto,
    /// `Q` (bio queued): the I/O as the application submitted it, before merging and
    /// scheduling — what a replay through a scheduler wants.
    Queue,
    /// `D` (issued to the driver): the requests the device saw.
    Issue,
}

/// Choices a reader takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Which blkparse events are the I/Os.
    pub blkparse_events: BlkparseEvents,
}

/// The format of a file that starts with `first_bytes` (its first line is enough), or `None`.
/// A gzip file is no format: decompress it first (the MSR traces come gzipped).
pub fn detect(first_bytes: &[u8]) -> Option<Format> {
    let text = String::from_utf8_lossy(first_bytes);
    let first = text.lines().find(|line| !line.trim().is_empty())?;
    if first.starts_with(iolog::HEADER_V3) {
        Some(Format::IologV3)
    } else if first.starts_with(iolog::HEADER_V2) {
        Some(Format::IologV2)
    } else if compact::is_header(first) {
        Some(Format::Compact)
    } else if blkparse::is_event_line(first) {
        Some(Format::Blkparse)
    } else if msr::is_line(first) {
        Some(Format::Msr)
    } else {
        None
    }
}

/// The format of the file at `path`, from its first 4 KiB ([`detect`]); an error names the
/// file and lists the formats when none fits.
pub fn detect_path(path: &Path) -> Result<Format, TraceError> {
    use std::io::Read;
    let file = path.display().to_string();
    let mut first_bytes = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .and_then(|opened| opened.take(4096).read_to_end(&mut first_bytes))
        .map_err(|reason| TraceError::Read { file: file.clone(), reason })?;
    // A line cut at 4 KiB would not parse: judge by the whole lines only, when there are any.
    let end =
        first_bytes.iter().rposition(|&byte| byte == b'\n').map_or(first_bytes.len(), |at| at + 1);
    detect(&first_bytes[..end]).ok_or(TraceError::UnknownFormat { file })
}

/// Reads the trace in `path`, in whichever format its content is.
pub fn read(path: &Path) -> Result<Trace, TraceError> {
    read_with(path, &ReadOptions::default())
}

/// [`read`] with `options`.
pub fn read_with(path: &Path, options: &ReadOptions) -> Result<Trace, TraceError> {
    let (file, text) = read_text(path, "text traces")?;
    parse_with(&file, &text, None, options)
}

/// The text of `path` and its name for errors; bytes that are not UTF-8 are refused naming
/// their line, and a gzip file is told to be decompressed first. `accepted` says what a file
/// of the caller's may hold.
pub(crate) fn read_text(path: &Path, accepted: &str) -> Result<(String, String), TraceError> {
    let file = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|reason| TraceError::Read { file: file.clone(), reason })?;
    let text = String::from_utf8(bytes).map_err(|error| {
        let line = 1 + error.as_bytes()[..error.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&byte| byte == b'\n')
            .count();
        let gzip = error.as_bytes().starts_with(&[0x1f, 0x8b]);
        TraceError::Parse(ParseError {
            file: file.clone(),
            line,
            field: "text",
            problem: if gzip {
                format!("a gzip file; accepted: {accepted} (decompress it first: `gunzip`)")
            } else {
                format!("bytes that are not UTF-8; accepted: {accepted}")
            },
        })
    })?;
    Ok((file, text))
}

/// Checks the first line of a versioned text format, `MAGIC VERSION`, naming what is
/// accepted when it is missing, another format's, or a version not known here.
pub(crate) fn check_magic_line(
    first: Option<&str>,
    file: &str,
    magic: &str,
    version: u32,
) -> Result<(), ParseError> {
    let error = |field: &'static str, problem: String| ParseError {
        file: file.to_owned(),
        line: 1,
        field,
        problem,
    };
    let header_help = format!("accepted: `{magic} {version}`");
    let first = first.ok_or_else(|| error("header", format!("an empty file; {header_help}")))?;
    match first.split_whitespace().collect::<Vec<_>>().as_slice() {
        [given, given_version] if *given == magic => {
            if given_version.parse::<u32>() != Ok(version) {
                return Err(error(
                    "version",
                    format!("version `{given_version}` is not known here; {header_help}"),
                ));
            }
            Ok(())
        }
        _ => Err(error("header", format!("`{first}`; {header_help}"))),
    }
}

/// Reads `text`, the contents of `file` (named in errors), in `format`, or in the format
/// [`detect`] finds when `None`.
pub fn parse_with(
    file: &str,
    text: &str,
    format: Option<Format>,
    options: &ReadOptions,
) -> Result<Trace, TraceError> {
    let format = match format {
        Some(format) => format,
        None => detect(text.as_bytes())
            .ok_or_else(|| TraceError::UnknownFormat { file: file.to_owned() })?,
    };
    Ok(match format {
        Format::IologV2 | Format::IologV3 => {
            let log = iolog::Iolog::parse(file, text)?;
            let trace = iolog::to_trace(&log);
            if trace.format != format {
                return Err(TraceError::Parse(ParseError {
                    file: file.to_owned(),
                    line: 1,
                    field: "header",
                    problem: format!("a {} log where {format} was asked for", trace.format),
                }));
            }
            trace
        }
        Format::Blkparse => blkparse::parse(file, text, options.blkparse_events)?,
        Format::Msr => msr::parse(file, text)?,
        Format::Compact => compact::parse(file, text)?,
    })
}

/// Writes `trace` in `format` (blkparse as `Q` and `C` events: see [`blkparse::write()`]).
pub fn write(trace: &Trace, format: Format, out: &mut dyn Write) -> Result<(), TraceError> {
    match format {
        Format::IologV2 => iolog::write_trace(trace, iolog::Version::V2, out),
        Format::IologV3 => iolog::write_trace(trace, iolog::Version::V3, out),
        Format::Blkparse => blkparse::write(trace, blkparse::Event::Queue, out),
        Format::Msr => msr::write(trace, out),
        Format::Compact => compact::write(trace, out),
    }
}

/// [`write()`] into a string.
pub fn to_text(trace: &Trace, format: Format) -> Result<String, TraceError> {
    let mut out = Vec::new();
    write(trace, format, &mut out)?;
    Ok(String::from_utf8(out).expect("the writers write UTF-8"))
}

/// A [`TraceError::Write`] for record `index`.
fn refuse(format: Format, index: usize, problem: impl Into<String>) -> TraceError {
    TraceError::Write { format, index, problem: problem.into() }
}
