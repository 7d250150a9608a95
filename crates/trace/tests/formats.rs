//! The trace formats through the crate's public API: the sample files in `tests/data/`,
//! detection, errors, round trips of every format, and a log written by the real fio.
//!
//! The blkparse sample `loop0.blkparse.txt` is hand-written from blkparse's man page and
//! `blkparse_fmt.c` (`process_default`'s header and tails, `fill_rwbs`) and `blkparse.c`'s
//! summary: no tracefs-era capture from a loop device was available where it was written.
//! The MSR sample follows the layout of IOTTA set 388's `hm_0.csv` with made-up values.

use std::path::{Path, PathBuf};
use std::process::Command;

use elevator_trace::{
    BlkparseEvents, Format, IoClass, IoFlags, IoPriority, Op, ReadOptions, Trace, TraceError,
    TraceIo, detect, detect_path, parse_with, read, read_with, to_text,
};
use proptest::prelude::*;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// `trace` written in `format` and read back; the text, when it has any, must be detected
/// as `format` (an empty file is in no format of its own).
fn reread(trace: &Trace, format: Format) -> Trace {
    let text = to_text(trace, format).unwrap_or_else(|error| panic!("{format}: {error}"));
    if !text.is_empty() {
        assert_eq!(detect(text.as_bytes()), Some(format), "{text}");
    }
    parse_with("again", &text, Some(format), &ReadOptions::default())
        .unwrap_or_else(|error| panic!("{format}: {error}\n{text}"))
}

fn io(time_ns: u64, op: Op, offset_bytes: u64, size_bytes: u64) -> TraceIo {
    TraceIo::new(time_ns, op, offset_bytes, size_bytes)
}

fn flags(letters: &str) -> Option<IoFlags> {
    Some(IoFlags {
        preflush: letters.contains('P'),
        sync: letters.contains('S'),
        fua: letters.contains('F'),
        meta: letters.contains('M'),
        readahead: letters.contains('A'),
    })
}

fn from(pid: u32, process: &str, mut io: TraceIo) -> TraceIo {
    io.pid = Some(pid);
    io.process = Some(process.into());
    io.device = Some("7,0".into());
    io
}

// Proves the blkparse reader takes the Q events by default: each with its PID, command,
// device, sector range in bytes, RWBS flags, and the latency to its C — the merged second
// read completes with the request it merged into, the empty preflush write is a flush, the
// readahead never completed has none — while G/I/M/P/U/A/message lines and the summary are
// skipped.
#[test]
fn blkparse_sample_reads_the_queue_events() {
    let trace = read(&data("loop0.blkparse.txt")).unwrap();
    assert_eq!(trace.format, Format::Blkparse);
    let with = |mut io: TraceIo, letters: &str, latency_ns: Option<u64>| {
        io.flags = flags(letters);
        io.latency_ns = latency_ns;
        io
    };
    assert_eq!(
        trace.records,
        vec![
            with(from(4242, "fio", io(0, Op::Write, 2048 * 512, 4096)), "S", Some(151_004)),
            with(from(4242, "fio", io(103_300, Op::Read, 4096 * 512, 4096)), "", Some(288_577)),
            with(from(4242, "fio", io(108_250, Op::Read, 4104 * 512, 4096)), "", Some(283_627)),
            with(from(4242, "fio", io(1_000_000, Op::Flush, 0, 0)), "PS", Some(200_000)),
            with(
                from(5001, "fstrim", io(2_000_000, Op::Discard, 8192 * 512, 256 * 512)),
                "",
                Some(500_000)
            ),
            with(from(6000, "cat", io(3_000_100, Op::Read, 100_000 * 512, 64 * 512)), "A", None),
        ]
    );
}

// Proves the caller can take the D events instead: the merged request is one read of 16
// sectors issued by the kworker, the flush is the kworker's `FN`, and D2C latencies.
#[test]
fn blkparse_sample_reads_the_issue_events_when_asked() {
    let options = ReadOptions { blkparse_events: BlkparseEvents::Issue };
    let trace = read_with(&data("loop0.blkparse.txt"), &options).unwrap();
    let summary: Vec<_> = trace
        .records
        .iter()
        .map(|io| (io.time_ns, io.op, io.offset_bytes, io.size_bytes, io.pid, io.latency_ns))
        .collect();
    assert_eq!(
        summary,
        vec![
            (6_678, Op::Write, 2048 * 512, 4096, Some(4242), Some(144_326)),
            (160_020, Op::Read, 4096 * 512, 8192, Some(87), Some(231_857)),
            (1_001_500, Op::Flush, 0, 0, Some(87), Some(198_500)),
            (2_001_000, Op::Discard, 8192 * 512, 131_072, Some(5001), Some(499_000)),
            (3_001_000, Op::Read, 100_000 * 512, 32_768, Some(6000), None),
        ]
    );
    assert_eq!(trace.records[1].process.as_deref(), Some("kworker/1:1H"));
}

// Proves the MSR reader converts FILETIME stamps to ns from the first I/O (keeping the
// first's wall-clock time), ResponseTime ticks to ns, and names the device host_disk.
#[test]
fn msr_sample_reads_times_latencies_and_devices() {
    let trace = read(&data("hm_0.csv")).unwrap();
    assert_eq!(trace.format, Format::Msr);
    // 128166372003061629 ticks since 1601 is 2007-02-22 17:00:00.3061629 UTC.
    assert_eq!(trace.start_unix_ns, Some(1_172_163_600_306_162_900));
    let summary: Vec<_> = trace
        .records
        .iter()
        .map(|io| (io.time_ns, io.op, io.offset_bytes, io.size_bytes, io.latency_ns))
        .collect();
    assert_eq!(
        summary,
        vec![
            (0, Op::Read, 3_872_104_448, 4096, Some(1_453_500)),
            (1_332_052_600, Op::Write, 3_940_478_976, 20480, Some(3_988_700)),
            (1_332_052_600, Op::Write, 3_940_499_456, 8192, Some(4_021_400)),
            (2_332_061_600, Op::Read, 1_306_710_016, 65536, Some(722_100)),
            (3_346_745_200, Op::Write, 16384, 512, Some(351_200)),
        ]
    );
    assert!(trace.records.iter().all(|io| io.device.as_deref() == Some("hm_0")));
    // Written back, the file is the same bytes.
    assert_eq!(
        to_text(&trace, Format::Msr).unwrap(),
        std::fs::read_to_string(data("hm_0.csv")).unwrap()
    );
}

// Proves the iolog conversions: v3's µs become ns and the file is the device; v2's times
// come from its `wait` (ms); trim is a discard, sync and datasync are flushes; add, open,
// close and wait are not I/O.
#[test]
fn iolog_samples_convert_to_the_common_record() {
    let v3 = read(&data("w.iolog3")).unwrap();
    assert_eq!(v3.format, Format::IologV3);
    let summary = |trace: &Trace| -> Vec<_> {
        trace
            .records
            .iter()
            .map(|io| (io.time_ns, io.op, io.offset_bytes, io.size_bytes, io.device.clone()))
            .collect()
    };
    let w = Some("w.0.0".to_owned());
    assert_eq!(
        summary(&v3),
        vec![
            (323_000, Op::Write, 0, 16384, w.clone()),
            (342_000, Op::Write, 32768, 16384, w.clone()),
            (346_000, Op::Flush, 32768, 0, w.clone()),
            (351_000, Op::Read, 16384, 4096, w.clone()),
            (360_000, Op::Discard, 65536, 4096, w),
        ]
    );
    let v2 = read(&data("sdb.iolog2")).unwrap();
    assert_eq!(v2.format, Format::IologV2);
    let sdb = Some("/dev/sdb".to_owned());
    assert_eq!(
        summary(&v2),
        vec![
            (0, Op::Read, 4096, 512, sdb.clone()),
            (250_000_000, Op::Write, 0, 8192, sdb.clone()),
            (250_000_000, Op::Discard, 65536, 4096, sdb.clone()),
            (250_000_000, Op::Flush, 0, 0, sdb),
        ]
    );
    // fio's own v3 lines come back as written (the writer adds and opens, then closes).
    assert_eq!(
        to_text(&v3, Format::IologV3).unwrap(),
        "fio version 3 iolog\n323 w.0.0 add\n323 w.0.0 open\n323 w.0.0 write 0 16384\n\
         342 w.0.0 write 32768 16384\n346 w.0.0 sync 32768 0\n351 w.0.0 read 16384 4096\n\
         360 w.0.0 trim 65536 4096\n360 w.0.0 close\n"
    );
}

// Proves the compact reader takes every field: signed time deltas, %-escapes, flags,
// priorities, latencies, the start time, comments, and a line with only the four columns.
#[test]
fn compact_sample_reads_every_field() {
    let trace = read(&data("mixed.etrace")).unwrap();
    assert_eq!(trace.format, Format::Compact);
    assert_eq!(trace.start_unix_ns, Some(1_700_000_000_000_000_000));
    let times: Vec<_> = trace.records.iter().map(|io| io.time_ns).collect();
    assert_eq!(times, vec![0, 1520, 1900, 21_900, 21_895]);
    let backup = &trace.records[1];
    assert_eq!(backup.process.as_deref(), Some("tar backup"));
    assert_eq!(backup.priority, Some(IoPriority::idle()));
    assert_eq!(backup.flags, Some(IoFlags::default()));
    assert_eq!(backup.latency_ns, Some(820_000));
    let writer = &trace.records[2];
    assert_eq!(writer.priority, Some(IoPriority::new(IoClass::BestEffort, 2).unwrap()));
    assert_eq!(writer.flags, flags("SF"));
    assert_eq!((writer.pid, writer.latency_ns), (Some(1234), None));
    assert_eq!(trace.records[3].flags, flags("PS"));
    assert_eq!(trace.records[4], io(21_895, Op::Discard, 8_388_608, 1_048_576));
}

// Proves every sample file reads, writes in its own format and reads back as the same
// trace (the issue's round trip on real-shaped files), and converts losslessly through the
// compact format.
#[test]
fn every_sample_round_trips() {
    for (name, format) in [
        ("loop0.blkparse.txt", Format::Blkparse),
        ("hm_0.csv", Format::Msr),
        ("w.iolog3", Format::IologV3),
        ("sdb.iolog2", Format::IologV2),
        ("mixed.etrace", Format::Compact),
    ] {
        let trace = read(&data(name)).unwrap();
        assert_eq!(reread(&trace, format), trace, "{name}");
        let mut compact = reread(&trace, Format::Compact);
        compact.format = format;
        assert_eq!(compact, trace, "{name} through compact");
    }
}

// Proves detection picks each format by content, whatever the file is called, and that a
// file in no format is refused naming the file and listing every format.
#[test]
fn detection_picks_each_format_and_lists_them_when_none_fits() {
    for (name, format) in [
        ("loop0.blkparse.txt", Format::Blkparse),
        ("hm_0.csv", Format::Msr),
        ("w.iolog3", Format::IologV3),
        ("sdb.iolog2", Format::IologV2),
        ("mixed.etrace", Format::Compact),
    ] {
        let bytes = std::fs::read(data(name)).unwrap();
        assert_eq!(detect(&bytes[..bytes.len().min(200)]), Some(format), "{name}");
        assert_eq!(detect_path(&data(name)).unwrap(), format, "{name}");
    }
    assert_eq!(detect(COLUMNS_LINE.as_bytes()), Some(Format::Msr));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "hello\n1 2 3\n").unwrap();
    let error = read(&path).unwrap_err();
    assert!(matches!(error, TraceError::UnknownFormat { .. }));
    assert!(matches!(detect_path(&path), Err(TraceError::UnknownFormat { .. })));
    let shown = error.to_string();
    assert!(shown.starts_with(&format!("{}: not a trace", path.display())), "{shown}");
    for format in Format::ALL {
        assert!(shown.contains(format.name()), "`{shown}` lacks {format}");
    }
    let gzip = dir.path().join("hm_0.csv.gz");
    std::fs::write(&gzip, [0x1f, 0x8b, 0x08, 0x00, 0xff, 0xfe]).unwrap();
    assert!(read(&gzip).unwrap_err().to_string().contains("gunzip"));
}

const COLUMNS_LINE: &str = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n";

// Proves bad lines in each format are refused naming the file, the line and the field,
// and saying what is accepted.
#[test]
fn errors_name_file_line_and_field() {
    let blk = "  8,0    1        1     0.000000000  1234  Q   R 2048 + 8 [fio]\n";
    let cases: &[(Format, String, usize, &str, &str)] = &[
        (
            Format::Blkparse,
            format!("{blk}  8;0 1 2 0.1 1 Q R 0 + 8 [x]\n"),
            2,
            "device",
            "MAJOR,MINOR",
        ),
        (Format::Blkparse, format!("{blk}8,0 x 2 0.1 1 Q R 0 + 8 [x]\n"), 2, "cpu", "`x`"),
        (
            Format::Blkparse,
            format!("{blk}8,0 1 2 0.1.2 1 Q R 0 + 8 [x]\n"),
            2,
            "time",
            "SECONDS.NANOSECONDS",
        ),
        (Format::Blkparse, format!("{blk}8,0 1 2 0.1 p Q R 0 + 8 [x]\n"), 2, "pid", "`p`"),
        (
            Format::Blkparse,
            format!("{blk}8,0 1 2 0.1 1 Z R 0 + 8 [x]\n"),
            2,
            "action",
            "accepted: Q, G",
        ),
        (Format::Blkparse, format!("{blk}8,0 1 2 0.1 1 Q RW 0 + 8 [x]\n"), 2, "rwbs", "`RW`"),
        (Format::Blkparse, format!("{blk}8,0 1 2 0.1 1 Q R 0 + x [x]\n"), 2, "blocks", "`x`"),
        (Format::Blkparse, format!("{blk}8,0 1 2 0.1 1 Q R 0 + 8\n"), 2, "tail", "[COMMAND]"),
        (Format::Blkparse, format!("{blk}8,0 1 2 0.1 0 C R 0 + 8 [oops]\n"), 2, "error", "ERRNO"),
        (Format::Blkparse, format!("{blk}\n8,0 1 2\n"), 3, "time", "ends before"),
        (Format::Msr, "1,h,0,Read,0,512,1\n1,h,0,Read,0,512\n".into(), 2, "fields", "6 fields"),
        (
            Format::Msr,
            "1,h,0,Read,0,512,1\n1,h,0,Append,0,512,1\n".into(),
            2,
            "Type",
            "Read, Write",
        ),
        (Format::Msr, "1,h,0,Read,0,512,1\nx,h,0,Read,0,512,1\n".into(), 2, "Timestamp", "`x`"),
        (Format::Msr, "1,h,0,Read,0,512,1\n1,h,d,Read,0,512,1\n".into(), 2, "DiskNumber", "`d`"),
        (Format::Msr, "1,h,0,Read,0,512,1\n1,h,0,Read,-4,512,1\n".into(), 2, "Offset", "`-4`"),
        (
            Format::Msr,
            "1,h,0,Read,0,512,1\n1,h,0,Read,0,512,1.5\n".into(),
            2,
            "ResponseTime",
            "`1.5`",
        ),
        (Format::Compact, "elevator-trace 2\n".into(), 1, "version", "`elevator-trace 1`"),
        (
            Format::Compact,
            "elevator-trace 1\n+0 R 0 512\n5 R 0 512\n".into(),
            3,
            "time",
            "`+N` or `-N`",
        ),
        (
            Format::Compact,
            "elevator-trace 1\n+0 R 0 512\n-1 R 0 512\n".into(),
            3,
            "time",
            "outside",
        ),
        (Format::Compact, "elevator-trace 1\n+0 X 0 512\n".into(), 2, "op", "R, W, D, F"),
        (Format::Compact, "elevator-trace 1\n+0 R 0\n".into(), 2, "fields", "3 fields"),
        (
            Format::Compact,
            "elevator-trace 1\n+0 R 0 512 lat=1 pid=2\n".into(),
            2,
            "fields",
            "out of order",
        ),
        (Format::Compact, "elevator-trace 1\n+0 R 0 512 prio=be/9\n".into(), 2, "prio", "0..=7"),
        (
            Format::Compact,
            "elevator-trace 1\n+0 R 0 512 flags=SP\n".into(),
            2,
            "flags",
            "in that order",
        ),
        (
            Format::Compact,
            "elevator-trace 1\n+0 R 0 512 comm=a%2\n".into(),
            2,
            "comm",
            "two hex digits",
        ),
        (
            Format::Compact,
            "elevator-trace 1\n+0 R 0 512 color=red\n".into(),
            2,
            "fields",
            "accepted: pid, comm",
        ),
        (
            Format::IologV3,
            "fio version 3 iolog\n1 f add\n2 f read x 4096\n".into(),
            3,
            "offset",
            "`x`",
        ),
    ];
    for (format, text, line, field, needle) in cases {
        assert_eq!(detect(text.as_bytes()), Some(*format), "{text:?}");
        let error = parse_with("bad.trace", text, None, &ReadOptions::default()).unwrap_err();
        let shown = error.to_string();
        assert!(shown.starts_with(&format!("bad.trace:{line}: {field}: ")), "{text:?}: {shown}");
        assert!(shown.contains(needle), "{text:?}: `{shown}` lacks `{needle}`");
    }
}

// Proves writers refuse what their reader would not read back as the same I/O, naming the
// record: a discard in MSR CSV, a read off a sector boundary or of no sectors in blkparse, a
// size past fio's 32-bit length in an iolog.
#[test]
fn writers_refuse_what_their_format_cannot_hold() {
    let cases = [
        (Format::Msr, io(0, Op::Discard, 0, 4096), "only Read and Write"),
        (Format::Blkparse, io(0, Op::Read, 100, 4096), "whole 512-byte sectors"),
        (Format::Blkparse, io(0, Op::Read, 0, 0), "no sectors"),
        (Format::IologV3, io(0, Op::Write, 0, 1 << 32), "at most 4294967295"),
    ];
    for (format, bad, needle) in cases {
        let trace = Trace::new(format, vec![io(0, Op::Read, 0, 512), bad]);
        let error = to_text(&trace, format).unwrap_err();
        let shown = error.to_string();
        assert!(matches!(error, TraceError::Write { index: 1, .. }), "{shown}");
        assert!(shown.contains(needle), "{format}: `{shown}` lacks `{needle}`");
    }
}

/// fio, installed with apt-get when missing; `None` (after saying why) when it cannot be
/// had, and under `CI=true` the test fails naming it.
fn fio() -> Option<PathBuf> {
    let found =
        || Command::new("fio").arg("--version").output().is_ok_and(|out| out.status.success());
    if !found() {
        let _ = Command::new("apt-get").args(["update", "-qq"]).output();
        let _ = Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends", "fio"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output();
    }
    if !found() {
        let message = "fio is not installed and apt-get could not install it";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
        #[allow(clippy::print_stderr)]
        {
            eprintln!("skipping: {message}");
        }
        return None;
    }
    Some(PathBuf::from("fio"))
}

// Proves a log written by the real fio (`write_iolog`, random writes to a regular file)
// reads as version 3: one write per 4 KiB block of the file, each block once, to the file
// fio named, at nondecreasing µs times; and that it round-trips through every format that
// can hold it.
#[test]
fn reads_a_log_written_by_the_real_fio() {
    let Some(fio) = fio() else { return };
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    let log = dir.path().join("w.log");
    let out = Command::new(fio)
        .arg("--name=w")
        .arg(format!("--filename={}", target.display()))
        .args(["--size=1M", "--bs=4k", "--rw=randwrite", "--ioengine=psync", "--randseed=7"])
        .arg(format!("--write_iolog={}", log.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
    let trace = read(&log).unwrap();
    assert_eq!(trace.format, Format::IologV3);
    assert_eq!(trace.records.len(), 256);
    let mut offsets: Vec<u64> = trace.records.iter().map(|io| io.offset_bytes).collect();
    offsets.sort_unstable();
    assert_eq!(offsets, (0..256).map(|block| block * 4096).collect::<Vec<_>>());
    let name = target.display().to_string();
    for pair in trace.records.windows(2) {
        assert!(pair[0].time_ns <= pair[1].time_ns, "{pair:?}");
    }
    for io in &trace.records {
        assert_eq!((io.op, io.size_bytes, io.device.as_deref()), (Op::Write, 4096, Some(&*name)));
        assert_eq!(io.time_ns % 1000, 0);
    }
    for format in [Format::IologV3, Format::Compact] {
        let mut again = reread(&trace, format);
        again.format = trace.format;
        assert_eq!(again, trace, "{format}");
    }
    // blkparse has devices as numbers: the file name is lost, everything else kept.
    let again = reread(&trace, Format::Blkparse);
    let strip = |trace: &Trace| -> Vec<_> {
        trace.records.iter().map(|io| (io.time_ns, io.op, io.offset_bytes, io.size_bytes)).collect()
    };
    assert_eq!(strip(&again), strip(&trace));
}

// Proves the blkparse writer's `D` events read back as the same I/Os both when the caller
// asks for `D` events and by default (a trace with no `Q` events), and that a `Q` reading of
// them finds no I/O.
#[test]
fn blkparse_issue_events_round_trip() {
    let trace = read_with(
        &data("loop0.blkparse.txt"),
        &ReadOptions { blkparse_events: BlkparseEvents::Issue },
    )
    .unwrap();
    let mut text = Vec::new();
    elevator_trace::blkparse::write(&trace, elevator_trace::blkparse::Event::Issue, &mut text)
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.lines().all(|line| line.contains(" D ") || line.contains(" C ")), "{text}");
    for events in [BlkparseEvents::Issue, BlkparseEvents::Auto] {
        let options = ReadOptions { blkparse_events: events };
        assert_eq!(parse_with("d", &text, None, &options).unwrap(), trace, "{events:?}");
    }
    let options = ReadOptions { blkparse_events: BlkparseEvents::Queue };
    assert!(parse_with("d", &text, None, &options).unwrap().records.is_empty());
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![Just(Op::Read), Just(Op::Write), Just(Op::Discard), Just(Op::Flush)]
}

fn any_flags() -> impl Strategy<Value = IoFlags> {
    any::<[bool; 5]>().prop_map(|[sync, fua, preflush, meta, readahead]| IoFlags {
        sync,
        fua,
        preflush,
        meta,
        readahead,
    })
}

fn priority() -> impl Strategy<Value = IoPriority> {
    (
        prop_oneof![
            Just(IoClass::None),
            Just(IoClass::RealTime),
            Just(IoClass::BestEffort),
            Just(IoClass::Idle)
        ],
        0u8..8,
    )
        .prop_map(|(class, level)| IoPriority::new(class, level).unwrap())
}

/// Any record at all: what the compact format must carry unchanged.
fn any_record() -> impl Strategy<Value = TraceIo> {
    (
        (any::<u64>(), any::<Option<u32>>(), any::<Option<String>>(), any::<Option<String>>()),
        (op(), any::<u64>(), any::<u64>()),
        (proptest::option::of(any_flags()), proptest::option::of(priority()), any::<Option<u64>>()),
    )
        .prop_map(
            |(
                (time_ns, pid, process, device),
                (op, offset, size),
                (flags, priority, latency_ns),
            )| {
                TraceIo {
                    time_ns,
                    pid,
                    process,
                    device,
                    op,
                    offset_bytes: offset,
                    size_bytes: size,
                    flags,
                    priority,
                    latency_ns,
                }
            },
        )
}

/// A record blkparse text holds: sector-aligned, a process name without line breaks, a
/// numeric device; a flush has no range and its preflush flag.
fn blkparse_record() -> impl Strategy<Value = TraceIo> {
    (
        (0u64..1 << 62, any::<u32>(), "[^\n\r]{0,20}", 0u32..4096, 0u32..1 << 20),
        (op(), 0u64..1 << 20, 1u64..=u64::from(u32::MAX)),
        (any_flags(), proptest::option::of(0u64..1 << 40)),
    )
        .prop_filter("`(null)` is an unknown process", |((_, _, name, _, _), _, _)| {
            name != "(null)"
        })
        .prop_map(
            |(
                (time_ns, pid, process, major, minor),
                (op, sector_low, sectors),
                (mut flags, latency_ns),
            )| {
                let mut io = TraceIo::new(time_ns, op, sector_low * 512, sectors * 512);
                if op == Op::Flush {
                    (io.offset_bytes, io.size_bytes, flags.preflush) = (0, 0, true);
                }
                io.pid = Some(pid);
                io.process = Some(process);
                io.device = Some(format!("{major},{minor}"));
                io.flags = Some(flags);
                io.latency_ns = latency_ns;
                io
            },
        )
}

fn blkparse_trace() -> impl Strategy<Value = Trace> {
    proptest::collection::vec(blkparse_record(), 0..30).prop_map(|mut records| {
        // The text has no request tag: completions are matched by device and range, so give
        // every I/O its own start sector (the high bits, from its index) and keep one flush.
        let mut flushes = 0;
        for (index, io) in records.iter_mut().enumerate() {
            if io.op == Op::Flush {
                flushes += 1;
                if flushes > 1 {
                    io.op = Op::Write;
                    io.size_bytes = 512;
                }
            }
            if io.op != Op::Flush {
                io.offset_bytes += (index as u64 + 1) << 40;
            }
        }
        Trace::new(Format::Blkparse, records)
    })
}

fn msr_trace() -> impl Strategy<Value = Trace> {
    (
        proptest::collection::vec(
            (
                0u64..1 << 53,
                "[a-z0-9]{1,8}",
                0u32..64,
                any::<bool>(),
                any::<u64>(),
                any::<u64>(),
                0u64..u64::MAX / 100,
            ),
            1..30,
        ),
        -(1i128 << 56)..(1i128 << 56),
    )
        .prop_map(|(lines, start_ticks)| {
            let origin = lines.iter().map(|line| line.0).min().unwrap();
            let records = lines
                .into_iter()
                .map(|(ticks, host, disk, write, offset, size, response)| {
                    let op = if write { Op::Write } else { Op::Read };
                    let mut io = TraceIo::new((ticks - origin) * 100, op, offset, size);
                    io.device = Some(format!("{host}_{disk}"));
                    io.latency_ns = Some(response * 100);
                    io
                })
                .collect();
            Trace { format: Format::Msr, start_unix_ns: Some(start_ticks * 100), records }
        })
}

fn iolog_trace(format: Format) -> impl Strategy<Value = Trace> {
    let unit_ns: u64 = if format == Format::IologV2 { 1_000_000 } else { 1_000 };
    proptest::collection::vec(
        (0u64..1 << 40, "[!-~]{1,256}", op(), any::<u64>(), any::<u32>()),
        0..30,
    )
    .prop_map(move |records| {
        let records = records
            .into_iter()
            .map(|(time, file, op, offset, size)| {
                let mut io = TraceIo::new(time * unit_ns, op, offset, u64::from(size));
                io.device = Some(file);
                io
            })
            .collect();
        Trace::new(format, records)
    })
}

/// Sample `name` with the bytes `at..at + length` (clamped, on character boundaries) replaced.
fn mutated(name: &str, at: usize, length: usize, with: &str) -> String {
    let text = std::fs::read_to_string(data(name)).unwrap();
    let boundary = |mut index: usize| {
        index = index.min(text.len());
        while !text.is_char_boundary(index) {
            index -= 1;
        }
        index
    };
    let (start, end) = (boundary(at), boundary(at + length));
    format!("{}{with}{}", &text[..start], &text[end..])
}

proptest! {
    // Proves no reader panics on bad input: each sample with a random stretch replaced by
    // random text is read (or refused) in its own format and by detection.
    #[test]
    fn bad_input_never_panics(
        index in 0usize..5,
        at in 0usize..4000,
        length in 0usize..40,
        with in "[ -~\\n\\t\\[\\]()+,%=é]{0,30}",
    ) {
        let (name, format) = [
            ("loop0.blkparse.txt", Format::Blkparse),
            ("hm_0.csv", Format::Msr),
            ("w.iolog3", Format::IologV3),
            ("sdb.iolog2", Format::IologV2),
            ("mixed.etrace", Format::Compact),
        ][index];
        let text = mutated(name, at, length, &with);
        let _ = parse_with("m", &text, Some(format), &ReadOptions::default());
        let _ = parse_with("m", &text, None, &ReadOptions::default());
    }

    // Proves the compact format carries every field of any record unchanged: any times in
    // any order, any names (white space, `%`, unicode), every flag and priority.
    #[test]
    fn compact_round_trips_any_trace(
        records in proptest::collection::vec(any_record(), 0..30),
        start in any::<Option<i128>>(),
    ) {
        let trace = Trace { format: Format::Compact, start_unix_ns: start, records };
        prop_assert_eq!(reread(&trace, Format::Compact), trace);
    }

    // Proves blkparse text written then read gives the same I/Os: times to the ns, PIDs,
    // names, devices, ranges, RWBS flags, and each latency through its C event placed among
    // later events.
    #[test]
    fn blkparse_round_trips(trace in blkparse_trace()) {
        prop_assert_eq!(reread(&trace, Format::Blkparse), trace);
    }

    // Proves MSR CSV written then read gives the same I/Os, times from the earliest, its
    // wall-clock start and the response times.
    #[test]
    fn msr_round_trips(trace in msr_trace()) {
        prop_assert_eq!(reread(&trace, Format::Msr), trace);
    }

    // Proves fio iologs written then read give the same I/Os (v3 at µs, v2 at the ms of its
    // waits), each file added and opened before its first I/O.
    #[test]
    fn iolog_round_trips(
        trace in prop_oneof![iolog_trace(Format::IologV2), iolog_trace(Format::IologV3)]
    ) {
        prop_assert_eq!(reread(&trace, trace.format), trace);
    }
}
