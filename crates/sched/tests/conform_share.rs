//! The closed-loop share replay (`elevator_sched::conform::share_replay`): each process's
//! share of service under ours against the kernel's, on a committed bfq capture and on
//! hand-built captures whose answer is known.

use std::fmt::Write as _;

use elevator_sched::conform::{ShareOptions, ShareReport, share_replay};
use elevator_trace::sched_log::{self, SchedCapture};

mod common;

use common::capture_file as read;

fn report_of(name: &str, capture: &SchedCapture) -> ShareReport {
    let report = share_replay(capture, ShareOptions::default())
        .unwrap_or_else(|error| panic!("{name}: {error}"));
    // The figures go in the test's output (`--nocapture`).
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{name}:\n{report}");
    }
    report
}

/// bfq's sysfs files as a 6.18 kernel lists them, `low_latency` as given.
fn bfq_header(low_latency: u8, queue_depth: u32) -> String {
    format!(
        "elevator-sched-capture 1\n\
         kernel_release = 6.18.44\n\
         hz = 250\n\
         scheduler = bfq\n\
         iosched.back_seek_max = 16384\n\
         iosched.back_seek_penalty = 2\n\
         iosched.fifo_expire_async = 250\n\
         iosched.fifo_expire_sync = 125\n\
         iosched.low_latency = {low_latency}\n\
         iosched.max_budget = 0\n\
         iosched.slice_idle = 8\n\
         iosched.slice_idle_us = 8000\n\
         iosched.strict_guarantees = 0\n\
         iosched.timeout_sync = 124\n\
         nr_requests = 256\n\
         queue_depth = {queue_depth}\n\
         hw_queues = 1\n\
         max_sectors_kb = 1280\n\
         cpus = 2\n\
         lost_events = 0\n\
         device = 7,9\n\
         workload = hand-built\n"
    )
}

/// A hand-built kernel capture: two processes of the given priorities each keep `depth` 4 KiB
/// random reads outstanding for `duration_ms`; the "kernel" serves them one at a time in
/// arrival order, 100 µs each, so its shares are equal whatever the priorities.
fn fifo_capture(priorities: [&str; 2], depth: usize, duration_ms: u64) -> SchedCapture {
    let mut text = bfq_header(0, 32);
    let pids = [4101u32, 4102];
    let mut last_ns = 0u64;
    let mut line = |text: &mut String, at: u64, code: &str, cpu: u32, pid: u32, rest: String| {
        let delta = at - last_ns;
        last_ns = at;
        writeln!(text, "+{delta} {code} {cpu} {pid} {rest}").unwrap();
    };
    // A deterministic spread of sectors (an LCG), 4 KiB aligned within 1 GiB.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut sector = || {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) % (1 << 18)) * 8
    };
    let mut queue = std::collections::VecDeque::new();
    for (p, pid) in pids.iter().enumerate() {
        for _ in 0..depth {
            let s = sector();
            line(&mut text, 0, "I", 0, *pid, format!("fio R S {s} 8 {} -", priorities[p]));
            queue.push_back((p, s));
        }
    }
    let mut now = 0u64;
    while now < duration_ms * 1_000_000 {
        let (p, s) = queue.pop_front().expect("each completion inserts another");
        line(&mut text, now, "D", 0, pids[p], format!("fio R S {s} 8 {} -", priorities[p]));
        now += 100_000;
        line(&mut text, now, "C", 1, 0, format!("- R S {s} 8 {} 0", priorities[p]));
        let next = sector();
        line(&mut text, now, "I", 0, pids[p], format!("fio R S {next} 8 {} -", priorities[p]));
        queue.push_back((p, next));
    }
    sched_log::parse("hand-built", &text).expect("a valid capture")
}

// Proves the share replay gives bfq's process shares by weight, not by the kernel's order:
// the hand-built kernel served two processes 50/50, yet under ours (bfq, low_latency off, both
// always backlogged) the be/0 process (weight 80) gets at least its weight's 80/(80+10) of
// the sectors against be/7 (weight 10), whichever pid holds it. It may get more: bfq does not
// idle for the queue of the smallest weight (`bfq_asymmetric_scenario`), so that queue's slot
// ends with its 4 requests and is charged as a short slot. A replay that ignored priorities,
// or replayed the kernel's issue order, would give 50 %.
#[test]
fn shares_follow_bfq_weights() {
    for (priorities, heavy_index) in [(["be/0", "be/7"], 0), (["be/7", "be/0"], 1)] {
        let capture = fifo_capture(priorities, 4, 2000);
        let report = report_of(&format!("hand-built {priorities:?}"), &capture);
        assert_eq!(report.processes.len(), 2, "{report}");
        let heavy = &report.processes[heavy_index];
        let light = &report.processes[1 - heavy_index];
        assert_eq!((heavy.weight, light.weight), (Some(80), Some(10)), "{report}");
        assert!((heavy.kernel_share - 0.5).abs() < 0.01, "the kernel side is 50/50\n{report}");
        assert!(heavy.ours_share > 80.0 / 90.0 - 0.02, "ours follows the weights\n{report}");
        assert!(light.ours_sectors > 0, "the light process is served too\n{report}");
        assert!(report.throughput_ratio > 0.9, "ours keeps the device busy\n{report}");
    }
}

// Proves equal priorities give equal shares under ours (the 80:10 split above comes from the
// weights, not from which process starts first), and that the replay matches the kernel
// there: within 1 percentage point over the run.
#[test]
fn equal_weights_share_equally() {
    let capture = fifo_capture(["be/4", "be/4"], 4, 2000);
    let report = report_of("hand-built be/4 + be/4", &capture);
    assert_eq!(report.processes.len(), 2, "{report}");
    assert!(report.max_difference_pp < 1.0, "{report}");
    assert_eq!(report.windows.len(), 2, "two full 1 s windows in a 2 s run\n{report}");
}

// Proves the replay is deterministic: the same capture gives the same report, byte for byte.
#[test]
fn share_replay_is_deterministic() {
    let capture = fifo_capture(["be/2", "be/6"], 8, 500);
    let first = share_replay(&capture, ShareOptions::default()).unwrap().to_json();
    let second = share_replay(&capture, ShareOptions::default()).unwrap().to_json();
    assert_eq!(first, second);
}

// Proves a capture that lost events is refused, as the decision replay refuses it.
#[test]
fn a_capture_that_lost_events_is_refused() {
    let mut capture = fifo_capture(["be/4", "be/4"], 1, 10);
    capture.header.lost_events = 3;
    let error = share_replay(&capture, ShareOptions::default()).unwrap_err();
    assert!(error.to_string().contains("lost 3 events"), "{error}");
}

// Proves the share replay of a committed real capture (Linux 6.18.44, bfq with
// `low_latency=0`, two fio threads at be/0 and be/7, 6000 events ≈ 30 ms from 2 s into a 10 s
// run) stays near the kernel's shares. Committed at 1.78 pp (kernel 88.83 % / 11.17 %, ours
// 90.61 % / 9.39 %); with plugged batches inserted whole, 1.22 pp without the device's stalls
// and 2.24 pp with them (the default since issue 25's stall finding: the excerpt holds two or
// three of the capture's stalls, and ours completes 1.4 × the kernel's sectors through them).
// The replay is deterministic, so the figures move only when our bfq or the replay changes;
// the bounds are the goal (2 pp) for the model without stalls and 2.5 pp with them, which a
// change that lost the weights (50/50) or let one queue keep the device (100/0) would break
// by far.
#[test]
fn committed_bfq_share_excerpt_is_within_two_points() {
    let capture = read("bfq-share-randrw-be0-be7.sched");
    let without_stalls = ShareOptions { stalls: false, ..ShareOptions::default() };
    let report = share_replay(&capture, without_stalls).expect("the excerpt replays");
    assert_eq!(report.processes.len(), 2, "{report}");
    let weights: Vec<Option<u64>> = report.processes.iter().map(|p| p.weight).collect();
    assert_eq!(weights, [Some(80), Some(10)], "{report}");
    assert!(report.processes[0].kernel_share > 0.8, "the kernel's be/0 share\n{report}");
    assert!(report.max_difference_pp <= 2.0, "{report}");
    let report = report_of("bfq-share-randrw-be0-be7.sched", &capture);
    assert!(report.max_difference_pp <= 2.5, "{report}");
}

// Proves the shares are read from a real capture's processes: the committed decision-replay
// excerpt (two fio threads at the default priority) gives two processes whose kernel shares
// sum to 1 and whose weights are bfq's default 40.
#[test]
fn committed_decision_excerpt_has_two_default_weight_processes() {
    let capture = read("bfq-randrw-qd64.sched");
    let report = report_of("bfq-randrw-qd64.sched", &capture);
    assert_eq!(report.processes.len(), 2, "{report}");
    let total: f64 = report.processes.iter().map(|p| p.kernel_share).sum();
    assert!((total - 1.0).abs() < 1e-9, "{report}");
    assert!(report.processes.iter().all(|p| p.weight == Some(40)), "{report}");
}

// Proves an io_uring worker's inserts (`iou-wrk-TID`, which submits for TID with its I/O
// context) are charged to TID: half of one process's inserts made by its worker still give two
// processes, with the worker's sectors in its submitter's share. A replay that took the
// insert's pid would see three processes.
#[test]
fn io_uring_workers_count_as_their_submitter() {
    let mut capture = fifo_capture(["be/4", "be/4"], 4, 200);
    let mut flip = false;
    for event in &mut capture.events {
        if let sched_log::SchedEvent::Block(record) = event
            && record.point == sched_log::BlockPoint::Insert
            && record.pid == 4101
        {
            flip = !flip;
            if flip {
                record.pid = 9999;
                record.command = Some("iou-wrk-4101".to_owned());
            }
        }
    }
    let report = report_of("hand-built, io_uring worker", &capture);
    let pids: Vec<u32> = report.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, [4101, 4102], "{report}");
    assert!((report.processes[0].kernel_share - 0.5).abs() < 0.01, "{report}");
}

// Proves a capture whose event times step back (a `-N` delta) is replayed without a panic
// over its whole length (the run lasts until its latest event, not its last: taking the last
// one's, 0 here, would leave no window for the completions after 1 s).
#[test]
fn a_capture_whose_times_step_back_is_replayed() {
    let mut capture = fifo_capture(["be/0", "be/7"], 2, 1500);
    let last = capture.events.len() - 1;
    if let sched_log::SchedEvent::Block(record) = &mut capture.events[last] {
        record.time_ns = 0;
    }
    let report = share_replay(&capture, ShareOptions::default()).unwrap();
    assert_eq!(report.duration_ns, 1_500_000_000, "{report}");
    assert_eq!(report.windows.len(), 1, "one full 1 s window\n{report}");
}

/// A hand-built kernel capture of two be/4 processes that submit batches of `batch` 4 KiB
/// reads under a plug, their inserts interleaved 1 µs apart on two CPUs (A1 B1 A2 B2 …): the
/// "kernel" issues each process's batch after its last insert, completes it 100 µs later, and
/// the next batches come 100 µs after that, for `cycles` cycles. The second process starts
/// 200 ms after the first (its cycles before are the first's alone), so that bfq does not
/// merge their queues at once (early stable merging within 180 ms, as the kernel would).
fn plugged_batches_capture(batch: usize, cycles: usize) -> SchedCapture {
    const LATE_NS: u64 = 200_000_000;
    let mut text = bfq_header(0, 32);
    let pids = [4201u32, 4202];
    let mut last_ns = 0u64;
    let mut line = |text: &mut String, at: u64, code: &str, cpu: u32, pid: u32, rest: String| {
        let delta = at - last_ns;
        last_ns = at;
        writeln!(text, "+{delta} {code} {cpu} {pid} {rest}").unwrap();
    };
    let mut next_sector = 0u64;
    for cycle in 0..cycles {
        let start = cycle as u64 * 200_000;
        let mut sectors = [Vec::new(), Vec::new()];
        for k in 0..batch {
            for (p, pid) in pids.iter().enumerate().filter(|&(p, _)| p == 0 || start >= LATE_NS) {
                // Far apart: every request is seeky.
                next_sector += 20_000;
                let at = start + (2 * k + p) as u64 * 1_000;
                line(&mut text, at, "I", p as u32, *pid, format!("fio R S {next_sector} 8 be/4 -"));
                sectors[p].push(next_sector);
            }
        }
        let issued = start + 2 * batch as u64 * 1_000;
        for (p, pid) in pids.iter().enumerate() {
            for s in &sectors[p] {
                line(&mut text, issued, "D", p as u32, *pid, format!("fio R S {s} 8 be/4 -"));
            }
        }
        for (p, _) in pids.iter().enumerate() {
            for s in &sectors[p] {
                line(&mut text, issued + 100_000, "C", 1, 0, format!("- R S {s} 8 be/4 0"));
            }
        }
    }
    sched_log::parse("hand-built", &text).expect("a valid capture")
}

// Proves the plug model keeps the replay whole: with two processes' plugged batches of 4
// interleaved insert by insert, ours (whose queue runs only after a batch's last insert)
// still serves every request — no batch is left waiting for a run that never comes — shares
// equally as the kernel did, and serves runs of about a batch as the kernel did. (Which
// requests the capture marks as plugged is proved by `conform::share`'s unit tests.)
#[test]
fn plugged_batches_replay_whole() {
    let capture = plugged_batches_capture(4, 1500);
    let report = report_of("hand-built plugged batches", &capture);
    // 4000 issues alone, then 500 cycles of two runs of 4.
    assert!((report.kernel_issues_per_run - 8000.0 / 1001.0).abs() < 0.01, "{report}");
    assert!(report.ours_issues_per_run >= 0.75 * report.kernel_issues_per_run, "{report}");
    assert!(report.throughput_ratio > 0.95, "{report}");
    assert!(report.max_difference_pp < 1.0, "{report}");
}
