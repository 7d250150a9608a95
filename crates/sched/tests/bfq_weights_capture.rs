//! bfq with unequal weights against the kernel's (issue 25): a real capture excerpt
//! (`tests/data/bfq-weights-randread-be0-be4-be7.sched`, see its README) and hand-built
//! captures of the two things the replay must follow to compare bfq fairly — a request of
//! another queue injected beside the queue in service, and the kernel serving another queue.

mod common;

use common::replay_file;
use elevator_sched::conform::{ConformOptions, replay};
use elevator_trace::sched_log::{SchedCapture, parse};

// Proves ours agrees with Linux 6.18.44's bfq on three randread processes at be/0, be/4 and
// be/7 (weights 80/40/10, iodepth 16 each, `low_latency=0`) on 894 of 935 decisions
// (95.6 %). Before the replay followed the kernel's injections and queue switches (and before
// a flush's completion ended its issue), it restarted ours at each such decision, losing the
// slot, budgets and inject limits, and agreed on 486 (52 %).
#[test]
fn bfq_weights_randread_three_levels() {
    let report = replay_file("bfq-weights-randread-be0-be4-be7.sched");
    assert_eq!(report.decisions, 935, "{report}");
    assert!(report.identical >= 894, "identical fell to {} of 935\n{report}", report.identical);
    assert!(report.restarts <= 5, "{report}");
}

/// A capture header for bfq on a non-rotational loop device at HZ 250, `low_latency=0`.
fn header() -> String {
    "elevator-sched-capture 1\n\
     kernel_release = 6.18.44\n\
     hz = 250\n\
     scheduler = bfq\n\
     iosched.low_latency = 0\n\
     nr_requests = 256\n\
     queue_depth = 128\n\
     hw_queues = 1\n\
     max_sectors_kb = 1280\n\
     cpus = 1\n\
     lost_events = 0\n\
     device = 7,2\n\
     workload = hand-built\n\
     rotational = 0\n"
        .to_owned()
}

fn capture(events: &str) -> SchedCapture {
    let text = header() + events;
    parse("hand-built", &text).unwrap_or_else(|error| panic!("hand-built capture: {error}\n{text}"))
}

// Proves the replay follows an injection: process 1 (be/0) is in service and idled for with
// its read in flight; the kernel issues process 2's (be/7) queued read beside it. Ours, which
// has the same empty queue in service, takes it as an injection and keeps process 1's slot,
// so process 1's next read is served from that slot and agrees. Restarting ours there (as
// before) would have lost the slot and counted a restart.
#[test]
fn replay_follows_an_injection_beside_the_queue_in_service() {
    let report = replay(
        &capture(
            "+0 I 1 1 fio R - 1000 8 be/0 -\n\
             +1000 D 1 1 fio R - 1000 8 be/0 -\n\
             +1000 I 1 2 fio R - 900000 8 be/7 -\n\
             +1000 C 1 1 - R - 1000 8 - 0\n\
             +1000 D 1 2 fio R - 900000 8 be/7 -\n\
             +1000 I 1 1 fio R - 500000 8 be/0 -\n\
             +1000 D 1 1 fio R - 500000 8 be/0 -\n\
             +1000 C 1 2 - R - 900000 8 - 0\n\
             +1000 C 1 1 - R - 500000 8 - 0\n",
        ),
        ConformOptions::default(),
    )
    .expect("replayable");
    assert_eq!(report.restarts, 0, "{report}");
    assert_eq!(report.decisions, 3, "{report}");
}

// Proves the replay follows the kernel into another queue's slot without restarting ours:
// both processes have reads queued, ours serves process 1 (weight 80) while the kernel serves
// process 2 (weight 10) twice; ours expires process 1's slot and serves process 2's queue,
// so the second of process 2's reads agrees (a restart would have let B-WF2Q+ pick process 1
// again, and counted two restarts).
#[test]
fn replay_follows_the_kernel_into_another_queue() {
    let report = replay(
        &capture(
            "+0 I 1 1 fio R - 1000 8 be/0 -\n\
             +0 I 1 1 fio R - 2000 8 be/0 -\n\
             +0 I 1 2 fio R - 900000 8 be/7 -\n\
             +0 I 1 2 fio R - 901000 8 be/7 -\n\
             +1000 D 1 2 fio R - 900000 8 be/7 -\n\
             +1000 D 1 2 fio R - 901000 8 be/7 -\n\
             +1000 C 1 2 - R - 900000 8 - 0\n\
             +1000 C 1 2 - R - 901000 8 - 0\n",
        ),
        ConformOptions::default(),
    )
    .expect("replayable");
    assert_eq!(report.restarts, 0, "{report}");
    assert_eq!((report.decisions, report.identical), (2, 1), "{report}");
}

// Proves a flush's completion ends its issue in the replay: the kernel prints a flush at
// sector 0 when issued and at sector -1 when completed, and matched by sector it stayed in
// flight for ever, so bfq never saw an empty device. Here process 1 (be/0) is idled for
// beside process 2 (be/7); its read arriving with nothing in flight (after the flush) gives
// it an inject-limit baseline and the limit 1, so process 2's read is injected while process
// 1 idles, as the kernel did. With the flush still counted in flight there is no baseline,
// ours idles without injecting, and the kernel's injection is a disagreement.
#[test]
fn a_completed_flush_leaves_the_device_empty() {
    let events = "+0 D 1 44 kworker/1:1H F P 0 0 - -\n\
                  +10000 C 1 22 - F P 18446744073709551615 0 - 0\n\
                  +90000 I 1 2 fio R - 900000 8 be/7 -\n\
                  +0 I 1 1 fio R - 1000 8 be/0 -\n\
                  +10000 D 1 1 fio R - 1000 8 be/0 -\n\
                  +200000 C 1 1 - R - 1000 8 - 0\n\
                  +16200000 I 1 1 fio R - 500000 8 be/0 -\n\
                  +10000 D 1 1 fio R - 500000 8 be/0 -\n\
                  +500000 C 1 1 - R - 500000 8 - 0\n\
                  +100000 D 1 2 fio R - 900000 8 be/7 -\n\
                  +100000 C 1 2 - R - 900000 8 - 0\n";
    let text = header()
        .replace("iosched.low_latency = 0\n", "iosched.low_latency = 0\niosched.slice_idle = 20\n")
        + events;
    let capture = parse("hand-built", &text).expect("hand-built capture");
    let report = replay(&capture, ConformOptions::default()).expect("replayable");
    assert_eq!((report.decisions, report.identical), (3, 3), "{report}");
}
