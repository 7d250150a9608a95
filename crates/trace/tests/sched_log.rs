//! The scheduler-capture file format (`elevator_trace::sched_log`): round trips and bad input.

use elevator_trace::sched_log::{
    self, BlockPoint, BlockRecord, SchedCapture, SchedCaptureHeader, SchedEvent,
};
use elevator_trace::{IoClass, IoFlags, IoPriority, Op, TraceError};
use proptest::prelude::*;

fn header() -> SchedCaptureHeader {
    SchedCaptureHeader {
        kernel_release: "6.18.44-fc-v657".into(),
        hz: 250,
        scheduler: "mq-deadline".into(),
        tunables: vec![("fifo_batch".into(), "16".into()), ("read_expire".into(), "500".into())],
        nr_requests: 256,
        queue_depth: 128,
        hw_queues: 2,
        max_sectors_kb: 512,
        cpus: 2,
        lost_events: 0,
        device: "7,0".into(),
        workload: "randrw iodepth=32".into(),
        rotational: Some(false),
    }
}

fn record(point: BlockPoint, time_ns: u64, sector: u64) -> SchedEvent {
    SchedEvent::Block(BlockRecord {
        point,
        time_ns,
        cpu: 1,
        pid: 4242,
        command: Some("fio".into()),
        op: Op::Write,
        flags: IoFlags { sync: true, ..IoFlags::default() },
        sector,
        sectors: 8,
        priority: Some(IoPriority::best_effort(4).unwrap()),
        error: (point == BlockPoint::Complete).then_some(0),
    })
}

fn sample() -> SchedCapture {
    SchedCapture {
        header: header(),
        events: vec![
            record(BlockPoint::Insert, 0, 2048),
            record(BlockPoint::Issue, 1200, 2048),
            SchedEvent::KyberAdjust { time_ns: 1300, domain: "WRITE".into(), depth: 64 },
            SchedEvent::KyberLatency {
                time_ns: 1400,
                domain: "READ".into(),
                kind: "I/O".into(),
                percentile: 90,
                numerator: 3,
                denominator: 4,
                samples: 1021,
            },
            SchedEvent::KyberThrottled { time_ns: 1500, domain: "WRITE".into() },
            record(BlockPoint::Complete, 53200, 2048),
        ],
    }
}

fn parse_error(text: &str) -> elevator_trace::ParseError {
    sched_log::parse("bad.sched", text).expect_err(text)
}

// Proves the writer writes the documented layout: magic line, `key = value` header with the
// tunables as `iosched.NAME`, delta times, the block fields in table order, kyber codes.
#[test]
fn writes_the_documented_layout() {
    let text = sched_log::to_text(&sample());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "elevator-sched-capture 1");
    assert!(lines.contains(&"iosched.fifo_batch = 16"), "{text}");
    assert!(lines.contains(&"workload = randrw%20iodepth=32"), "{text}");
    assert!(lines.contains(&"rotational = 0"), "{text}");
    assert!(lines.contains(&"+0 I 1 4242 fio W S 2048 8 be/4 -"), "{text}");
    assert!(lines.contains(&"+1200 D 1 4242 fio W S 2048 8 be/4 -"), "{text}");
    assert!(lines.contains(&"+100 KA WRITE 64"), "{text}");
    assert!(lines.contains(&"+100 KL READ I/O 90 3 4 1021"), "{text}");
    assert!(lines.contains(&"+100 KT WRITE"), "{text}");
    assert!(lines.contains(&"+51700 C 1 4242 fio W S 2048 8 be/4 0"), "{text}");
}

// Proves the optional `rotational` key: a capture without it (written before it existed)
// reads as `None`, and a value other than 0 or 1, or the key twice, is refused naming it.
#[test]
fn the_rotational_key_is_optional_and_checked() {
    let good = sched_log::to_text(&sample());
    let without: String = good
        .lines()
        .filter(|line| !line.starts_with("rotational"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(sched_log::parse("old.sched", &without).unwrap().header.rotational, None);
    let bad = good.replace("rotational = 0", "rotational = yes");
    let error = parse_error(&bad).to_string();
    assert!(error.contains("rotational") && error.contains("accepted: 0 or 1"), "{error}");
    let twice = good.replace("rotational = 0", "rotational = 0\nrotational = 1");
    assert!(parse_error(&twice).to_string().contains("given twice"));
}

// Proves `read` reads a file back to the same capture, and names the file when it cannot.
#[test]
fn reads_a_file_and_names_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sched");
    let mut file = std::fs::File::create(&path).unwrap();
    sched_log::write(&sample(), &mut file).unwrap();
    drop(file);
    assert_eq!(sched_log::read(&path).unwrap(), sample());
    let missing = dir.path().join("none.sched");
    match sched_log::read(&missing) {
        Err(TraceError::Read { file, .. }) => assert!(file.ends_with("none.sched")),
        other => panic!("{other:?}"),
    }
}

// Proves bad input is refused with the line, the field and what is accepted, never a panic.
#[test]
fn bad_input_names_line_field_and_what_is_accepted() {
    let good = sched_log::to_text(&sample());
    let header_end = good.lines().position(|line| line.starts_with('+')).unwrap();
    let with_event = |event: &str| {
        let mut lines: Vec<&str> = good.lines().take(header_end).collect();
        lines.push(event);
        lines.join("\n")
    };
    let event_line = header_end + 1;
    let cases: Vec<(String, usize, &str, &str)> = vec![
        (String::new(), 1, "header", "elevator-sched-capture 1"),
        ("elevator-trace 1\n".into(), 1, "header", "elevator-sched-capture 1"),
        ("elevator-sched-capture 4\n".into(), 1, "version", "not known"),
        (good.replace("hz = 250\n", ""), good.lines().count() - 1, "hz", "required"),
        (good.replace("hz = 250", "hz = fast"), 3, "hz", "whole number"),
        (good.replace("cpus = 2", "cpus = 2\ncpus = 3"), 12, "cpus", "once"),
        (good.replace("cpus = 2", "colour = 2"), 11, "header", "accepted: kernel_release"),
        (good.replace("cpus = 2", "cpus 2"), 11, "header", "KEY = VALUE"),
        (with_event("+5 Z 1 2 fio R - 0 8 - -"), event_line, "code", "KA, KL, KT (kyber), P, U"),
        (with_event("5 I 1 2 fio R - 0 8 - -"), event_line, "header", "KEY = VALUE"),
        (with_event("+x I 1 2 fio R - 0 8 - -"), event_line, "time", "`+N` or `-N`"),
        (with_event("-5 I 1 2 fio R - 0 8 - -"), event_line, "time", "outside"),
        (with_event("+5 I 1 2 fio R - 0 8 -"), event_line, "fields", "CPU PID COMMAND"),
        (with_event("+5 I 1 2 fio X - 0 8 - -"), event_line, "op", "R, W, D, F"),
        (with_event("+5 I 1 2 fio R Q 0 8 - -"), event_line, "flags", "P, S, F, M, A"),
        (with_event("+5 I 1 2 fio R - -1 8 - -"), event_line, "sector", "whole number"),
        (with_event("+5 I 1 2 fio R - 0 8 be/9 -"), event_line, "priority", "0..=7"),
        (with_event("+5 I 1 2 fio R - 0 8 xx/1 -"), event_line, "priority", "rt, be"),
        (with_event("+5 C 1 2 fio R - 0 8 - e"), event_line, "error", "errno"),
        (with_event("+5 I 1 2 f%zz R - 0 8 - -"), event_line, "command", "two hex digits"),
        (with_event("+5 KA READ"), event_line, "fields", "DOMAIN DEPTH"),
        (with_event("+5 KL READ total p90 1 2 3"), event_line, "percentile", "whole number"),
        (format!("{}\ncpus = 2", with_event("+5 KT READ")), event_line + 1, "event", "events"),
    ];
    for (text, line, field, accepted) in cases {
        let error = parse_error(&text);
        assert_eq!(error.file, "bad.sched");
        assert_eq!((error.line, error.field), (line, field), "{error}\n{text}");
        assert!(error.problem.contains(accepted), "{error} lacks `{accepted}`");
    }
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), Just("-".to_owned()), Just("%".to_owned()), any::<String>()]
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

fn block_event() -> impl Strategy<Value = SchedEvent> {
    (
        (0usize..BlockPoint::ALL.len(), any::<u64>(), any::<u32>(), any::<u32>()),
        (proptest::option::of(name()), 0usize..4, any::<[bool; 5]>()),
        (any::<u64>(), any::<u32>(), proptest::option::of(priority()), any::<Option<i32>>()),
    )
        .prop_map(
            |(
                (point, time_ns, cpu, pid),
                (command, op, flags),
                (sector, sectors, priority, error),
            )| {
                let [sync, fua, preflush, meta, readahead] = flags;
                SchedEvent::Block(BlockRecord {
                    point: BlockPoint::ALL[point],
                    time_ns,
                    cpu,
                    pid,
                    command,
                    op: [Op::Read, Op::Write, Op::Discard, Op::Flush][op],
                    flags: IoFlags { sync, fua, preflush, meta, readahead },
                    sector,
                    sectors,
                    priority,
                    error,
                })
            },
        )
}

fn event() -> impl Strategy<Value = SchedEvent> {
    prop_oneof![
        4 => block_event(),
        1 => (any::<u64>(), name(), any::<u32>())
            .prop_map(|(time_ns, domain, depth)| SchedEvent::KyberAdjust { time_ns, domain, depth }),
        1 => (any::<u64>(), name(), name(), any::<[u32; 4]>()).prop_map(
            |(time_ns, domain, kind, [percentile, numerator, denominator, samples])| {
                SchedEvent::KyberLatency { time_ns, domain, kind, percentile, numerator, denominator, samples }
            }
        ),
        1 => (any::<u64>(), name()).prop_map(|(time_ns, domain)| SchedEvent::KyberThrottled { time_ns, domain }),
        1 => (any::<u64>(), any::<u32>(), any::<u32>(), proptest::option::of(name()))
            .prop_map(|(time_ns, cpu, pid, command)| SchedEvent::Plug { time_ns, cpu, pid, command }),
        1 => (any::<u64>(), any::<[u32; 3]>(), proptest::option::of(name())).prop_map(
            |(time_ns, [cpu, pid, requests], command)| SchedEvent::Unplug { time_ns, cpu, pid, command, requests }
        ),
        1 => (any::<u64>(), any::<[u32; 2]>())
            .prop_map(|(time_ns, [cpu, pid])| SchedEvent::KblockdStart { time_ns, cpu, pid }),
        1 => (any::<u64>(), any::<[u32; 2]>())
            .prop_map(|(time_ns, [cpu, pid])| SchedEvent::KblockdEnd { time_ns, cpu, pid }),
    ]
}

fn any_header() -> impl Strategy<Value = SchedCaptureHeader> {
    (
        (name(), any::<u32>(), name(), proptest::collection::btree_map(name(), name(), 0..6)),
        any::<[u32; 5]>(),
        (any::<u64>(), name(), name(), proptest::option::of(any::<bool>())),
    )
        .prop_map(
            |(
                (kernel_release, hz, scheduler, tunables),
                numbers,
                (lost_events, device, workload, rotational),
            )| {
                let [nr_requests, queue_depth, hw_queues, max_sectors_kb, cpus] = numbers;
                SchedCaptureHeader {
                    kernel_release,
                    hz,
                    scheduler,
                    tunables: tunables.into_iter().collect(),
                    nr_requests,
                    queue_depth,
                    hw_queues,
                    max_sectors_kb,
                    cpus,
                    lost_events,
                    device,
                    workload,
                    rotational,
                }
            },
        )
}

proptest! {
    // Proves nothing is lost in writing: any capture (any names, including empty, `-`, `%`,
    // white space and line breaks; times in any order; every field at its extremes) reads
    // back equal.
    #[test]
    fn any_capture_round_trips(
        header in any_header(),
        events in proptest::collection::vec(event(), 0..40),
    ) {
        let capture = SchedCapture { header, events };
        let text = sched_log::to_text(&capture);
        let back = sched_log::parse("again", &text)
            .unwrap_or_else(|error| panic!("{error}\n{text}"));
        prop_assert_eq!(back, capture);
    }

    // Proves arbitrary text after a good header never panics the reader.
    #[test]
    fn garbage_events_never_panic(line in "[-+0-9A-Z ./%a-z]{0,60}") {
        let text = format!("{}{line}\n", sched_log::to_text(&SchedCapture { header: header(), events: vec![] }));
        let _ = sched_log::parse("fuzz", &text);
    }
}

// Proves the plug events of version 2: a capture with them is written as version 2 with the
// documented `P`/`U` lines and read back the same; one without them is still written as
// version 1 (the older files and the writer's older output unchanged), a version-1 file
// still reads, and a bad `U` line names its field.
#[test]
fn plug_events_are_version_2_and_version_1_still_reads() {
    let old = sched_log::to_text(&sample());
    assert!(old.starts_with("elevator-sched-capture 1\n"), "{old}");
    assert_eq!(sched_log::parse("old.sched", &old).unwrap(), sample());
    let mut capture = sample();
    capture
        .events
        .insert(0, SchedEvent::Plug { time_ns: 0, cpu: 1, pid: 4242, command: Some("fio".into()) });
    capture.events.insert(
        1,
        SchedEvent::Unplug {
            time_ns: 0,
            cpu: 1,
            pid: 4242,
            command: Some("fio".into()),
            requests: 3,
        },
    );
    let text = sched_log::to_text(&capture);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "elevator-sched-capture 2");
    assert!(lines.contains(&"+0 P 1 4242 fio"), "{text}");
    assert!(lines.contains(&"+0 U 1 4242 fio 3"), "{text}");
    assert_eq!(sched_log::parse("new.sched", &text).unwrap(), capture);
    let bad = text.replace("+0 U 1 4242 fio 3", "+0 U 1 4242 fio x");
    let error = parse_error(&bad);
    assert_eq!(error.field, "requests", "{error}");
    let four = text.replace("elevator-sched-capture 2", "elevator-sched-capture 4");
    assert_eq!(parse_error(&four).field, "version");
}

// Proves the kblockd runs of version 3: a capture with a `WS`/`WE` is written as version 3
// with the documented lines and read back the same; without them the same capture is still
// version 2 (plug events) or 1 (neither), byte for byte as before; bad fields are named.
#[test]
fn kblockd_runs_are_version_3_and_older_versions_stay() {
    let mut plugged = sample();
    plugged
        .events
        .insert(0, SchedEvent::Plug { time_ns: 0, cpu: 1, pid: 4242, command: Some("fio".into()) });
    let version_2 = sched_log::to_text(&plugged);
    assert!(version_2.starts_with("elevator-sched-capture 2\n"), "{version_2}");
    let mut capture = plugged.clone();
    capture.events.insert(1, SchedEvent::KblockdStart { time_ns: 0, cpu: 0, pid: 44 });
    capture.events.insert(2, SchedEvent::KblockdEnd { time_ns: 0, cpu: 0, pid: 44 });
    let text = sched_log::to_text(&capture);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "elevator-sched-capture 3");
    assert!(lines.contains(&"+0 WS 0 44") && lines.contains(&"+0 WE 0 44"), "{text}");
    assert_eq!(sched_log::parse("runs.sched", &text).unwrap(), capture);
    // The same capture without its runs: version 2's text exactly.
    let mut without = capture.clone();
    without.events.retain(|event| !event.is_kblockd());
    assert_eq!(sched_log::to_text(&without), version_2);
    assert!(sched_log::to_text(&sample()).starts_with("elevator-sched-capture 1\n"));
    let error = parse_error(&text.replace("+0 WS 0 44", "+0 WS 0 x"));
    assert_eq!(error.field, "pid", "{error}");
    let error = parse_error(&text.replace("+0 WE 0 44", "+0 WE 0"));
    assert_eq!(error.field, "fields", "{error}");
}
