//! The conformance replay (`elevator_sched::conform`) on hand-built captures: situations of
//! `modern-vs-kernel.md` §6 and §2 where the replay must agree with the kernel's recorded
//! decisions, and where it must report a disagreement with its cause.

use elevator_core::{IoPriority, Op};
use elevator_sched::conform::{Cause, ConformError, ConformOptions, ConformReport, replay};
use elevator_trace::IoFlags;
use elevator_trace::sched_log::{
    BlockPoint, BlockRecord, SchedCapture, SchedCaptureHeader, SchedEvent,
};

/// A capture being written: events appended in time order.
struct Capture {
    header: SchedCaptureHeader,
    events: Vec<SchedEvent>,
}

/// One request as the events print it: op, sector, sectors, CPU, pid, priority.
#[derive(Clone, Copy)]
struct Rq {
    op: Op,
    sector: u64,
    sectors: u32,
    cpu: u32,
    pid: u32,
    priority: Option<IoPriority>,
}

fn read(sector: u64) -> Rq {
    Rq { op: Op::Read, sector, sectors: 8, cpu: 0, pid: 100, priority: None }
}

fn write(sector: u64) -> Rq {
    Rq { op: Op::Write, sector, sectors: 8, cpu: 0, pid: 100, priority: None }
}

impl Capture {
    fn new(scheduler: &str, tunables: &[(&str, &str)]) -> Capture {
        Capture {
            header: SchedCaptureHeader {
                kernel_release: "6.18.44".to_owned(),
                hz: 250,
                scheduler: scheduler.to_owned(),
                tunables: tunables
                    .iter()
                    .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                    .collect(),
                nr_requests: 256,
                queue_depth: 128,
                hw_queues: 1,
                max_sectors_kb: 1280,
                cpus: 2,
                lost_events: 0,
                device: "7,0".to_owned(),
                workload: "hand-built".to_owned(),
                rotational: None,
            },
            events: Vec::new(),
        }
    }

    fn event(&mut self, point: BlockPoint, at_us: u64, rq: Rq) -> &mut Capture {
        self.events.push(SchedEvent::Block(BlockRecord {
            point,
            time_ns: at_us * 1000,
            cpu: rq.cpu,
            pid: rq.pid,
            command: Some("fio".to_owned()),
            op: rq.op,
            flags: IoFlags { sync: rq.op == Op::Read, ..IoFlags::default() },
            sector: rq.sector,
            sectors: rq.sectors,
            priority: rq.priority,
            error: (point == BlockPoint::Complete).then_some(0),
        }));
        self
    }

    fn insert(&mut self, at_us: u64, rq: Rq) -> &mut Capture {
        self.event(BlockPoint::Insert, at_us, rq)
    }

    fn issue(&mut self, at_us: u64, rq: Rq) -> &mut Capture {
        self.event(BlockPoint::Issue, at_us, rq)
    }

    fn complete(&mut self, at_us: u64, rq: Rq) -> &mut Capture {
        self.event(BlockPoint::Complete, at_us, rq)
    }

    /// Issues `order` one after another from `from_us`, each completing 10 µs later.
    fn serve(&mut self, from_us: u64, order: &[Rq]) -> &mut Capture {
        for (index, &rq) in order.iter().enumerate() {
            let at = from_us + index as u64 * 20;
            self.issue(at, rq).complete(at + 10, rq);
        }
        self
    }

    fn replay(&self) -> ConformReport {
        let capture = SchedCapture { header: self.header.clone(), events: self.events.clone() };
        replay(&capture, ConformOptions::default()).expect("the capture replays")
    }
}

/// R0, then writes at 9000, 3000, 7000, 1000 (§6 P4 without its flush).
fn p4_inserts(capture: &mut Capture) {
    capture.insert(0, read(0));
    for (index, sector) in [9000, 3000, 7000, 1000].into_iter().enumerate() {
        capture.insert(1 + index as u64, write(sector));
    }
}

// Proves the replay reproduces mq-deadline's starting state and sorted write sweep (§6 P4:
// last direction WRITE, batch 0, so the writes go out in sector order before the read): every
// decision identical.
#[test]
fn mq_deadline_agrees_on_the_p4_sweep() {
    let mut capture = Capture::new("mq-deadline", &[("fifo_batch", "16")]);
    p4_inserts(&mut capture);
    capture.serve(100, &[write(1000), write(3000), write(7000), write(9000), read(0)]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (5, 5), "{report}");
    assert_eq!(report.first_disagreements, 0);
    assert!(report.disagreements.is_empty());
}

// Proves a mismatch is reported with both picks and our state before the decision, and that
// resynchronisation (our pick back, the kernel's taken out) keeps one divergence from
// counting as many: the kernel serving the read first costs exactly one decision.
#[test]
fn mq_deadline_resynchronises_after_one_disagreement() {
    let mut capture = Capture::new("mq-deadline", &[]);
    p4_inserts(&mut capture);
    capture.serve(100, &[read(0), write(1000), write(3000), write(7000), write(9000)]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (5, 4), "{report}");
    assert_eq!((report.first_disagreements, report.cascaded), (1, 0));
    let first = &report.disagreements[0];
    assert_eq!(first.decision, 0);
    assert_eq!(first.kernel.sector, 0);
    assert_eq!(first.ours.as_ref().map(|pick| pick.sector), Some(1000));
    assert!(first.our_state.starts_with("last_dir=write batching=0/16"), "{}", first.our_state);
    assert!(first.our_state.contains("next=[1000,3000,7000,9000]"), "{}", first.our_state);
    assert_eq!(report.causes.get(&Cause::Unknown), Some(&1));
    // JSON and text carry the same facts.
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["identical"], 4);
    assert_eq!(json["causes"]["unknown"], 1);
    assert!(report.to_string().contains("first disagreements by cause:\n  unknown: 1"));
}

/// fifo_batch 1 (every pick starts a batch), reads: R1 far away inserted at 3.9 ms (jiffy 0
/// at HZ 250), R2 near at 3.95 ms, served at 4.0 ms; R3 near at 10 ms; then a decision at
/// 502 ms, in jiffy 125 = R1's `fifo_time` (0 + 125).
fn expiry_at_a_jiffy_boundary(kernel_pick_at_502: Rq) -> ConformReport {
    let (r1, r2, r3) = (read(500_000), read(1000), read(2000));
    let mut capture = Capture::new("mq-deadline", &[("fifo_batch", "1"), ("read_expire", "500")]);
    capture.insert(3900, r1).insert(3950, r2).serve(4000, &[r2]).insert(10_000, r3);
    let other = if kernel_pick_at_502.sector == r1.sector { r3 } else { r1 };
    capture.serve(502_000, &[kernel_pick_at_502, other]);
    capture.replay()
}

// Proves time is fed in the capture's jiffies (§2 #11): the kernel sees R1 expired at jiffy
// 125 although only 498.1 ms have passed since its insert, and so does the replay (exact ns
// would still be 1.9 ms short and pick R3 by the sweep).
#[test]
fn mq_deadline_expiry_follows_the_jiffy() {
    let report = expiry_at_a_jiffy_boundary(read(500_000));
    assert_eq!((report.decisions, report.identical), (3, 3), "{report}");
}

// Proves a disagreement on an expiry within one jiffy of the decision is classified as
// `jiffy boundary` (a kernel whose jiffy phase put R1's deadline one tick later).
#[test]
fn an_expiry_one_jiffy_off_is_a_jiffy_boundary() {
    let report = expiry_at_a_jiffy_boundary(read(2000));
    assert_eq!(report.first_disagreements, 1, "{report}");
    assert_eq!(report.causes.get(&Cause::JiffyBoundary), Some(&1), "{report}");
    assert_eq!(report.disagreements[0].ours.as_ref().unwrap().sector, 500_000);
}

// Proves a best-effort request the kernel serves while a real-time one is at the device
// (ours holds the level back: throttled) is classified `priority-throttle re-run` (§2 #1),
// and that the replay resynchronises without the scheduler's pick.
#[test]
fn a_lower_level_served_early_is_a_priority_throttle_rerun() {
    let rt = Rq { priority: Some(IoPriority::realtime(0).unwrap()), ..read(100) };
    let be = Rq { priority: Some(IoPriority::best_effort(4).unwrap()), ..read(5000) };
    let be2 = Rq { priority: Some(IoPriority::best_effort(4).unwrap()), ..read(6000) };
    let mut capture = Capture::new("mq-deadline", &[]);
    capture.insert(0, rt).insert(1, be).insert(2, be2).issue(10, rt);
    capture.issue(20, be).complete(30, rt).complete(40, be).serve(50, &[be2]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (3, 2), "{report}");
    let first = &report.disagreements[0];
    assert_eq!(
        (first.cause, first.our_answer.as_str()),
        (Cause::PriorityThrottleRerun, "throttled")
    );
    assert!(first.ours.is_none());
    assert!(first.our_state.contains("RealTime: outstanding=1"), "{}", first.our_state);
}

// Proves kyber's domain batching is reproduced: 16 reads, then 8 writes, then the rest of the
// reads and writes, every decision identical.
#[test]
fn kyber_agrees_on_domain_batches() {
    let mut capture =
        Capture::new("kyber", &[("read_lat_nsec", "2000000"), ("write_lat_nsec", "10000000")]);
    let reads: Vec<Rq> = (0..20).map(|i| read(i * 64)).collect();
    let writes: Vec<Rq> = (0..10).map(|i| write(100_000 + i * 64)).collect();
    for (index, &rq) in reads.iter().chain(&writes).enumerate() {
        capture.insert(index as u64, rq);
    }
    let mut order: Vec<Rq> = reads[..16].to_vec();
    order.extend_from_slice(&writes[..8]);
    order.extend_from_slice(&reads[16..]);
    order.extend_from_slice(&writes[8..]);
    capture.serve(100, &order);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (30, 30), "{report}");
}

// Proves kyber's per-CPU staging is reproduced (§2 #5): two reads inserted on CPUs 1 and 0,
// the kernel serving CPU 0's first (its staging lists are spliced in CPU order), agree; when
// the kernel serves them in the other order (its splice ran between the two inserts, a moment
// the trace does not show), the disagreement between picks of different CPUs is classified
// `per-cpu staging` with both reads still staged on ours, and resynchronisation puts ours
// back in step.
#[test]
fn kyber_cpu_order_is_per_cpu_staging() {
    let first = Rq { cpu: 1, ..read(100) };
    let second = Rq { cpu: 0, ..read(200) };
    let mut capture = Capture::new("kyber", &[]);
    capture.insert(0, first).insert(1, second).serve(10, &[second, first]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (2, 2), "{report}");

    // A write inserted on CPU 1 after both reads: the issuing CPU saw CPU 0's insert before it
    // picked, so this is not a pick-time race.
    let later = Rq { cpu: 1, ..write(300) };
    let mut capture = Capture::new("kyber", &[]);
    capture.insert(0, first).insert(1, second).insert(2, later).serve(10, &[first, second, later]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (3, 2), "{report}");
    assert_eq!(report.causes.get(&Cause::PerCpuStaging), Some(&1), "{report}");
    let state = &report.disagreements[0].our_state;
    assert!(state.contains("read: depth=256 in_use=0 staged=2 ready=0"), "{state}");
}

// Proves bio merges and request fusions from the trace reach ours: a back merge grows the
// request (its issue is found by the merged extent), and a `block_rq_merge` fuses two queued
// requests so the absorbed one is never a decision.
#[test]
fn merges_from_the_trace_change_the_requests() {
    let mut capture = Capture::new("mq-deadline", &[]);
    capture.insert(0, write(1000)).insert(1, write(1016));
    // A bio [1008, 1016) joins the back of 1000+8 ...
    capture.event(BlockPoint::BioBackMerge, 2, write(1008));
    // ... which then fuses with 1016+8.
    capture.event(BlockPoint::Merge, 2, write(1016));
    capture.insert(3, write(50));
    let merged = Rq { sectors: 24, ..write(1000) };
    capture.serve(10, &[write(50), merged]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (2, 2), "{report}");
    assert_eq!(report.unmatched_merges, 0);
}

// Proves requests that bypass the scheduler (a flush without data: no insert) are excluded,
// not scored.
#[test]
fn flushes_are_excluded() {
    let flush = Rq { op: Op::Flush, sectors: 0, ..write(0) };
    let mut capture = Capture::new("mq-deadline", &[]);
    capture.insert(0, read(8)).issue(5, flush).serve(10, &[read(8)]).complete(50, flush);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical, report.excluded_issues), (1, 1, 1));
}

// Proves bfq serves one process's queued reads in the order the kernel does (its next request
// is the one nearest ahead of the head).
#[test]
fn bfq_agrees_on_one_process() {
    let mut capture = Capture::new("bfq", &[("back_seek_max", "16384"), ("low_latency", "1")]);
    capture.insert(0, read(300)).insert(1, read(100)).insert(2, read(200));
    capture.serve(10, &[read(100), read(200), read(300)]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (3, 3), "{report}");
}

// Proves bad captures are refused with errors that name the problem and what is accepted: a
// tunable ours lacks, a value out of our range, a value that is not
// a number, lost events, another scheduler.
#[test]
fn bad_captures_are_refused_by_name() {
    let error = |scheduler: &str, tunables: &[(&str, &str)], lost: u64| {
        let mut capture = Capture::new(scheduler, tunables);
        capture.header.lost_events = lost;
        let capture = SchedCapture { header: capture.header, events: Vec::new() };
        replay(&capture, ConformOptions::default()).unwrap_err()
    };
    let unknown = error("mq-deadline", &[("read_expiry", "5")], 0);
    assert!(matches!(unknown, ConformError::UnknownTunable { .. }));
    assert!(unknown.to_string().contains("`read_expiry`"));
    assert!(unknown.to_string().contains("accepted: read_expire, write_expire"));
    let range = error("bfq", &[("slice_idle", "-1")], 0).to_string();
    assert!(range.starts_with("bfq: sysfs tunable `slice_idle` = `-1`: "), "{range}");
    let text = error("kyber", &[("read_lat_nsec", "fast")], 0).to_string();
    assert!(text.contains("`read_lat_nsec` = `fast`: not a decimal integer"), "{text}");
    assert_eq!(error("mq-deadline", &[], 3), ConformError::LostEvents { lost: 3 });
    assert!(error("cfq", &[], 0).to_string().contains("accepted: mq-deadline, kyber, bfq"));
}

// Proves bfq resynchronises inside the queue in service (our pick goes back, the kernel's is
// charged instead) without a restart: after the kernel takes 200 first, ours continues
// forward from it as the kernel does.
#[test]
fn bfq_resynchronises_inside_the_queue_in_service() {
    let mut capture = Capture::new("bfq", &[]);
    capture.insert(0, read(300)).insert(1, read(100)).insert(2, read(200));
    capture.serve(10, &[read(200), read(300), read(100)]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical, report.restarts), (3, 2, 0), "{report}");
    let state = &report.disagreements[0].our_state;
    assert!(state.starts_with("queued=3 "), "{state}");
}

// Proves a bfq disagreement on which process is served is classified `bfq queue choice`, and
// that the replay follows the kernel into the other process's queue without restarting bfq
// (issue 25: restarts lost the slot, budgets and inject limits): ours takes back its own pick
// (read 100, again its queue's next request), ends that queue's slot and serves the kernel's,
// so the later decisions are scored again and agree. The second process starts 200 ms after
// the first, past the 180 ms within which bfq would merge their queues.
#[test]
fn bfq_follows_the_kernel_after_a_queue_choice_disagreement() {
    let other = Rq { pid: 200, ..read(50_000) };
    let mut capture = Capture::new("bfq", &[]);
    capture.insert(0, read(100)).insert(1, read(108)).insert(200_000, other);
    capture.serve(200_010, &[other, read(100), read(108)]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical, report.restarts), (3, 2, 0), "{report}");
    assert_eq!(report.causes.get(&Cause::BfqQueueChoice), Some(&1));
}

// Proves the replay gives bfq the loop device's non-rotational flag: two processes starting
// together on a loop device (major 7) share one stably merged queue, served in sector order
// across both (100, then the other process's 50000, then 60000), as the kernel does; on a
// SCSI disk (major 8, taken as rotational) ours keeps two queues and serves the first
// process's 60000 before the other's 50000.
#[test]
fn bfq_merges_the_queues_of_processes_started_together_on_a_loop_device() {
    let other = Rq { pid: 200, ..read(50_000) };
    let order = [read(100), other, read(60_000)];
    let replay_on = |device: &str| {
        let mut capture = Capture::new("bfq", &[]);
        capture.header.device = device.to_owned();
        capture.insert(0, read(100)).insert(1, read(60_000)).insert(2, other);
        capture.serve(10, &order);
        capture.replay()
    };
    let loop_device = replay_on("7,1");
    assert_eq!((loop_device.decisions, loop_device.identical), (3, 3), "{loop_device}");
    let disk = replay_on("8,0");
    assert!(disk.identical < 3, "{disk}");
}

// Proves requests of different priorities over the same sectors are told apart by the
// priority their events print (a real capture had a BE and an RT read of 265120+8 queued
// together): the kernel's RT issue is the RT request, and ours agrees on both decisions.
#[test]
fn same_extent_requests_are_told_apart_by_priority() {
    let be = Rq { priority: Some(IoPriority::best_effort(4).unwrap()), pid: 1, ..read(265_120) };
    let rt = Rq { priority: Some(IoPriority::realtime(0).unwrap()), pid: 2, ..read(265_120) };
    let mut capture = Capture::new("mq-deadline", &[]);
    capture.insert(0, be).insert(1, rt).serve(10, &[rt, be]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (2, 2), "{report}");
}

fn replay_with(capture: &Capture, options: ConformOptions) -> ConformReport {
    let capture = SchedCapture { header: capture.header.clone(), events: capture.events.clone() };
    replay(&capture, options).expect("the capture replays")
}

// Proves the driver-tag model: with the device full (depth 2), the request inserted next is
// picked at once and waits for a tag (the kernel's parked pick), so when a tag frees it goes
// out before a nearer request inserted later; without the model ours would pick the nearer
// one at the issue.
#[test]
fn a_pick_made_while_the_device_is_full_waits_for_a_tag() {
    let mut capture = Capture::new("mq-deadline", &[]);
    capture.header.queue_depth = 2;
    let (r1, r2, far, near) = (read(0), read(10), read(5000), read(1000));
    capture.insert(0, r1).issue(1, r1).insert(2, r2).issue(3, r2);
    capture.insert(4, far).insert(5, near).complete(10, r1).issue(11, far);
    capture.complete(12, r2).serve(20, &[near]).complete(30, far);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (4, 4), "{report}");
    let unparked =
        replay_with(&capture, ConformOptions { park_when_full: false, ..Default::default() });
    assert_eq!(unparked.identical, 3, "{unparked}");
}

// Proves concurrent issues on two CPUs (2 µs apart at most) may be taken in the order of
// ours's picks, counted as reordered; 5 µs apart they are not, and the disagreement stands.
#[test]
fn concurrent_issues_on_two_cpus_may_be_reordered() {
    let report = |gap_us: u64| {
        let (a, b) = (Rq { cpu: 0, ..read(100) }, Rq { cpu: 1, ..read(200) });
        let mut capture = Capture::new("mq-deadline", &[]);
        capture.insert(0, a).insert(1, b).issue(10, b).issue(10 + gap_us, a);
        capture.complete(50, a).complete(51, b);
        capture.replay()
    };
    let close = report(1);
    assert_eq!((close.identical, close.reordered_issues), (2, 1), "{close}");
    let apart = report(5);
    assert_eq!((apart.identical, apart.reordered_issues), (1, 0), "{apart}");
}

// Proves a capture that contradicts the kernel's rules does not panic the replay: a fusion
// of requests of two priority levels (which mq-deadline cannot hold in one level) is counted
// as unmatched and not passed on, and an event whose time goes backwards does not move ours's
// clock back.
#[test]
fn contradictory_captures_do_not_panic() {
    let rt = Rq { priority: Some(IoPriority::realtime(0).unwrap()), ..write(1000) };
    let be = Rq { priority: Some(IoPriority::best_effort(4).unwrap()), ..write(1008) };
    let mut capture = Capture::new("mq-deadline", &[]);
    capture.insert(100, rt).insert(101, be).event(BlockPoint::Merge, 102, be);
    capture.insert(50, read(9)).serve(200, &[rt, be, read(9)]);
    let report = capture.replay();
    assert_eq!((report.decisions, report.unmatched_merges), (3, 1), "{report}");
}

// Proves priority aging is replayed at the kernel's jiffy: a best-effort read waiting since
// jiffy 0 goes out ahead of a queued real-time read once `prio_aging_expire` (100 ms, 25
// jiffies) has passed, with a real-time read still at the device, as the kernel issued it.
#[test]
fn priority_aging_serves_an_old_best_effort_read_first() {
    let be = Rq { priority: Some(IoPriority::best_effort(4).unwrap()), ..read(5000) };
    let rt1 = Rq { priority: Some(IoPriority::realtime(0).unwrap()), ..read(100) };
    let rt2 = Rq { priority: Some(IoPriority::realtime(0).unwrap()), ..read(200) };
    let mut capture = Capture::new("mq-deadline", &[("prio_aging_expire", "100")]);
    capture.insert(0, be).insert(10, rt1).issue(20, rt1).insert(50_000, rt2);
    capture.issue(100_500, be).issue(100_600, rt2);
    capture.complete(100_700, rt1).complete(100_800, be).complete(100_900, rt2);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (3, 3), "{report}");
}

/// A kyber capture for the depth score (`conform::kyber_depth`): 500 reads of 2.2 ms (I/O and
/// total latency: bucket 4 of 2 ms, beyond the target, so the device is congested) and
/// `writes` writes of exactly 5 ms (bucket 1 of 10 ms: (5 ms − 1 ns) / 2.5 ms), completing
/// from 3.2 ms on; the kernel's timer runs at 104 ms (jiffy 0's completion + 25 jiffies + the
/// wheel's one) and prints `kernel` — its evaluations and, if any, the write domain's new depth;
/// then ten more reads are decided after it.
fn kyber_depth_capture(
    writes: u64,
    kernel: &[(&str, &str, u32, u32)],
    adjust: Option<u32>,
) -> Capture {
    let mut capture = Capture::new("kyber", &[]);
    for i in 0..500 {
        let at = 1000 + 100 * i;
        let rq = read(8 * i);
        capture.insert(at, rq).issue(at, rq).complete(at + 2200, rq);
    }
    for i in 0..writes {
        let at = 1050 + 100 * i;
        let rq = write(1_000_000 + 8 * i);
        capture.insert(at, rq).issue(at, rq).complete(at + 5000, rq);
    }
    for &(domain, kind, numerator, samples) in kernel {
        capture.events.push(SchedEvent::KyberLatency {
            time_ns: 104_000_000,
            domain: domain.to_owned(),
            kind: kind.to_owned(),
            percentile: if kind == "I/O" { 90 } else { 99 },
            numerator,
            denominator: 4,
            samples,
        });
    }
    if let Some(depth) = adjust {
        capture.events.push(SchedEvent::KyberAdjust {
            time_ns: 104_000_000,
            domain: "WRITE".to_owned(),
            depth,
        });
    }
    for i in 0..10 {
        let at = 110_000 + 100 * i;
        let rq = read(2_000_000 + 8 * i);
        capture.insert(at, rq).issue(at, rq).complete(at + 50, rq);
    }
    capture.events.sort_by_key(SchedEvent::time_ns);
    capture
}

/// The kernel's evaluations at 104 ms with 500 writes: reads p90 I/O and p99 total in bucket 4,
/// writes in bucket 1.
const FULL_WINDOWS: [(&str, &str, u32, u32); 4] = [
    ("READ", "I/O", 5, 500),
    ("WRITE", "I/O", 2, 500),
    ("READ", "total", 5, 500),
    ("WRITE", "total", 2, 500),
];

// Proves ours's timer, fed the capture's completions, makes the kernel's decision: congested
// by the reads' p90 I/O latency (bucket 4), it scales the write depth by (1 + 1) / 4 to 64 —
// the bucket of a 5 ms write is 1 only with the kernel's `latency − 1` — at the kernel's
// jiffy, with its evaluations' buckets and sample counts, so every comparison is equal.
#[test]
fn kyber_depths_follow_the_kernel_adjustment() {
    let report = kyber_depth_capture(500, &FULL_WINDOWS, Some(64)).replay();
    let depths = report.kyber_depths.as_ref().expect("kyber's depths are scored");
    let write = &depths.domains[1];
    assert_eq!(write.domain, "write");
    assert_eq!(
        (write.kernel_adjusts, write.ours_adjusts, write.adjusts_matched),
        (1, 1, 1),
        "{report}"
    );
    assert!(write.samples > 1000 && write.equal == write.samples, "{report}");
    assert_eq!(
        (depths.kernel_evaluations, depths.evaluations_matched, depths.evaluations_same_bucket),
        (4, 4, 4),
        "{report}"
    );
    assert_eq!(depths.evaluations_same_samples, 4, "{report}");
    assert!(depths.differences.is_empty(), "{report}");
}

// Proves the score fails when the depths part: a kernel that set the write depth to 96
// (bucket 2, what a bucket computed without `− 1` gives) is more than one step from ours's
// 64 after its adjustment, the stretch is listed with both sides' evaluations, and no
// adjustment matches.
#[test]
fn kyber_depths_a_step_apart_are_reported() {
    let mut kernel = FULL_WINDOWS;
    kernel[3].2 = 3;
    let report = kyber_depth_capture(500, &kernel, Some(96)).replay();
    let depths = report.kyber_depths.as_ref().expect("kyber's depths are scored");
    let write = &depths.domains[1];
    assert_eq!(write.adjusts_matched, 0, "{report}");
    assert!(write.within_one_step < write.samples, "{report}");
    assert_eq!(depths.evaluations_same_bucket, 3, "{report}");
    let difference = &depths.differences[0];
    assert_eq!((difference.kernel_depth, difference.ours_depth), (96, 64), "{report}");
    assert!(!difference.within_one_step, "{report}");
    assert!(difference.kernel_evaluations.iter().any(|e| e.contains("bucket 2")), "{report}");
    assert!(difference.ours_evaluations.iter().any(|e| e.contains("bucket 1")), "{report}");
}

// Proves the window rule: with 499 writes the write histograms are not evaluated at the first
// timer run (fewer than 500 samples and the 1 s window not over), so the kernel prints only
// the reads' evaluations and keeps the write depth; ours evaluates the same two and keeps it.
#[test]
fn kyber_depths_wait_for_a_full_window() {
    let reads_only = [FULL_WINDOWS[0], FULL_WINDOWS[2]];
    let report = kyber_depth_capture(499, &reads_only, None).replay();
    let depths = report.kyber_depths.as_ref().expect("kyber's depths are scored");
    assert_eq!((depths.ours_evaluations, depths.evaluations_matched), (2, 2), "{report}");
    for domain in &depths.domains {
        assert_eq!(domain.ours_adjusts, 0, "{report}");
        assert_eq!(domain.equal, domain.samples, "{report}");
    }
}

// Proves the queue-run model (captures with `block_unplug`): a plug flush on CPU 1 runs the
// queue after its last insert, and kyber splices CPU 1's staged reads then, before CPU 0's
// later read is staged; the kernel issuing CPU 1's reads first is then identical throughout.
// Without the model (ours asked only at the issue) ours splices both CPUs' lists together,
// CPU 0 first, and disagrees at the first issue (ours picks CPU 0's later read).
#[test]
fn a_plug_flush_runs_the_queue_and_kyber_splices_then() {
    let mut capture = Capture::new("kyber", &[]);
    let (a, b) = (Rq { cpu: 1, pid: 101, ..read(100) }, Rq { cpu: 1, pid: 101, ..read(110) });
    let late = Rq { cpu: 0, ..read(200) };
    capture.events.push(SchedEvent::Plug { time_ns: 0, cpu: 1, pid: 101, command: None });
    capture.events.push(SchedEvent::Unplug {
        time_ns: 500,
        cpu: 1,
        pid: 101,
        command: None,
        requests: 2,
    });
    capture.insert(1, a).insert(2, b).insert(3, late);
    // Issues 20 µs apart: beyond the 2 µs concurrency window, so no reordering helps ours.
    capture.issue(5, a).issue(25, b).issue(45, late);
    let report = capture.replay();
    assert_eq!((report.decisions, report.identical), (3, 3), "{report}");
    let sched = SchedCapture { header: capture.header.clone(), events: capture.events.clone() };
    let without = replay(&sched, ConformOptions { queue_runs: false, ..ConformOptions::default() })
        .expect("the capture replays");
    assert_eq!(without.first_disagreements, 1, "{without}");
    let first = &without.disagreements[0];
    assert_eq!(first.kernel.sector, 100, "{without}");
    assert_eq!(first.ours.as_ref().map(|pick| pick.sector), Some(200), "{without}");
}

// Proves the kblockd-run model (captures of version 3, `WS`/`WE`): a kblockd run starting on
// CPU 1 makes its first pick at its start, so kyber splices the staged reads of CPU 1 then,
// before CPU 0's later read is staged, and the kworker's issues of CPU 1's reads are
// identical; the run, its issuing and its decisions are counted. Without the model (the
// default, docs/validation.md) ours is
// asked at the kworker's issue, splices both CPUs' lists, CPU 0 first, and picks CPU 0's
// later read: a first disagreement made inside the run, filed under `kblockd run`.
#[test]
fn a_kblockd_run_picks_at_its_start() {
    let mut capture = Capture::new("kyber", &[]);
    let (a, b) = (Rq { cpu: 1, pid: 101, ..read(100) }, Rq { cpu: 1, pid: 101, ..read(110) });
    let late = Rq { cpu: 0, ..read(200) };
    let kworker = |rq: Rq| Rq { cpu: 1, pid: 11, ..rq };
    capture.insert(1, a).insert(2, b);
    capture.events.push(SchedEvent::KblockdStart { time_ns: 2_500, cpu: 1, pid: 11 });
    capture.insert(3, late);
    // Issues 20 µs apart: beyond the 2 µs concurrency window, so no reordering helps ours.
    capture.issue(5, kworker(a)).issue(25, kworker(b));
    capture.events.push(SchedEvent::KblockdEnd { time_ns: 30_000, cpu: 1, pid: 11 });
    capture.issue(45, late);
    let sched = SchedCapture { header: capture.header.clone(), events: capture.events.clone() };
    let report = replay(&sched, ConformOptions { kblockd_runs: true, ..ConformOptions::default() })
        .expect("the capture replays");
    assert_eq!((report.decisions, report.identical), (3, 3), "{report}");
    let runs = report.kblockd.as_ref().expect("a capture with kblockd runs scores them");
    assert_eq!((runs.runs, runs.runs_issuing, runs.decisions, runs.identical), (1, 1, 2, 2));
    assert_eq!(runs.run_start_picks, 1, "{report}");
    let without =
        replay(&sched, ConformOptions { kblockd_runs: false, ..ConformOptions::default() })
            .expect("the capture replays");
    assert_eq!(without.first_disagreements, 1, "{without}");
    let first = &without.disagreements[0];
    assert_eq!((first.kernel.sector, first.cause), (100, Cause::KblockdRun), "{without}");
    assert_eq!(first.ours.as_ref().map(|pick| pick.sector), Some(200), "{without}");
    let runs = without.kblockd.as_ref().expect("scored with the model off too");
    assert_eq!((runs.first_disagreements_in_runs, runs.first_disagreements_near_runs), (1, 1));
}

// Proves a capture without kblockd runs reports none (its JSON unchanged: no `kblockd`).
#[test]
fn a_capture_without_kblockd_runs_has_no_kblockd_score() {
    let mut capture = Capture::new("mq-deadline", &[]);
    capture.insert(1, read(100)).serve(5, &[read(100)]);
    let report = capture.replay();
    assert!(report.kblockd.is_none(), "{report}");
    assert!(!report.to_json().contains("kblockd"), "{}", report.to_json());
}
