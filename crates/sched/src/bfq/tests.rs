use elevator_core::{
    Bio, Completion, Ctx, Dispatch, Duration, Instant, IoPriority, ProcessId, QueueConfig, Request,
    RequestId, RequestTable, Scheduler,
};

use super::Bfq;
use super::queue::{Owner, QueueIndex};
use crate::SchedulerSpec;
use crate::testkit::{Harness, Issued, fixed_service, read, with_priority, write};

fn harness(spec: &str) -> Harness {
    Harness::new(SchedulerSpec::parse(spec).unwrap().build(), QueueConfig::default())
        .with_service(fixed_service(Duration::from_millis(1)))
}

fn issued_by(h: &Harness, process: u32) -> Vec<Issued> {
    h.issued().iter().copied().filter(|issued| issued.process.0 == process).collect()
}

/// A reader with one read of `sectors` outstanding at a time, sequential (gaps of as much
/// again, so that reads never merge), sending the next one `think` after each completion, until
/// a completion comes at or after `stop`.
fn reader(
    h: &mut Harness,
    process: u32,
    priority: IoPriority,
    start: u64,
    sectors: u32,
    think: Duration,
    stop: Instant,
) {
    h.submit(with_priority(read(process, start, sectors), priority));
    let mut next_sector = start + 2 * u64::from(sectors);
    h.on_complete(move |done| {
        if done.process.0 != process || done.completed >= stop {
            return Vec::new();
        }
        let bio = with_priority(read(process, next_sector, sectors), priority);
        next_sector += 2 * u64::from(sectors);
        vec![(done.completed + think, bio)]
    });
}

fn best_effort(level: u8) -> IoPriority {
    IoPriority::best_effort(level).unwrap()
}

/// bfq driven by hand over a bare request table, so that a test can look at its state.
struct Rig {
    table: RequestTable,
    bfq: Bfq,
    now: Instant,
    in_flight: u32,
}

impl Rig {
    fn new(settings: &[(&str, i64)]) -> Rig {
        let mut bfq = Bfq::new();
        for &(name, value) in settings {
            bfq.set_tunable(name, value).unwrap();
        }
        Rig { table: RequestTable::with_capacity(1024), bfq, now: Instant::ZERO, in_flight: 0 }
    }

    fn insert(&mut self, bio: Bio) -> RequestId {
        let id = self.table.insert(Request::from_bio(&bio, self.now)).unwrap();
        let cx = Ctx { now: self.now, requests: &self.table, in_flight: self.in_flight, depth: 1 };
        self.bfq.insert(&cx, id);
        id
    }

    fn dispatch(&mut self) -> Dispatch {
        let cx = Ctx { now: self.now, requests: &self.table, in_flight: self.in_flight, depth: 1 };
        let decision = self.bfq.dispatch(&cx);
        if let Dispatch::Issue(_) = decision {
            self.in_flight += 1;
        }
        decision
    }

    fn complete(&mut self, id: RequestId) {
        self.in_flight -= 1;
        let done = Completion {
            id,
            issued_at: self.now,
            device_time: Duration::ZERO,
            total_time: Duration::ZERO,
        };
        let cx = Ctx { now: self.now, requests: &self.table, in_flight: self.in_flight, depth: 1 };
        self.bfq.complete(&cx, &done);
        self.table.remove(id);
    }

    /// Dispatches one request, lets 1 ms pass, completes it.
    fn serve_one(&mut self) -> RequestId {
        let Dispatch::Issue(id) = self.dispatch() else { panic!("nothing to dispatch") };
        self.now += Duration::from_millis(1);
        self.complete(id);
        id
    }
}

// Proves budget exhaustion and feedback (§3.5): a new sync queue's budget is two thirds of the
// default maximum, 10922 sectors, so with 256-sector reads its 43rd request does not fit and
// the queue expires for exhaustion after 42 dispatches; the feedback quadruples its budget,
// capped at the device's maximum of 16384. Once the queue runs dry and the idle timer fires
// (too idle, nothing in flight), the feedback cuts it by four minimum budgets (4 × 512).
#[test]
fn budget_exhaustion_expires_the_queue_and_feedback_grows_and_shrinks_the_budget() {
    let mut rig = Rig::new(&[("low_latency", 0)]);
    for i in 0..80 {
        rig.insert(read(1, 1_000_000 + i * 512, 256));
    }
    let queue = QueueIndex(0);
    assert_eq!(rig.bfq.queues[queue.slot()].max_budget, 10_922);
    for _ in 0..42 {
        rig.serve_one();
    }
    assert_eq!(rig.bfq.counters.budget_exhaustions, 0);
    rig.serve_one();
    assert_eq!(rig.bfq.counters.budget_exhaustions, 1, "the 43rd read did not fit");
    assert_eq!(rig.bfq.queues[queue.slot()].max_budget, 16_384, "min(4 × 10922, 16384)");
    assert_eq!(rig.bfq.wf2q.entity(queue.0).budget, 16_384);
    for _ in 43..80 {
        rig.serve_one();
    }
    // Empty with nothing in flight: bfq idles for the queue's next request.
    let Dispatch::Empty = rig.dispatch() else { panic!("nothing is queued") };
    let until = rig.bfq.idle_timer.expect("idling for the reader");
    assert_eq!(until, rig.now + Duration::from_millis(8));
    rig.now = until;
    let Dispatch::Empty = rig.dispatch() else { panic!("nothing is queued") };
    assert_eq!(rig.bfq.counters.idle_expirations, 1);
    assert_eq!(rig.bfq.queues[queue.slot()].max_budget, 16_384 - 4 * 512);
    assert_eq!(rig.bfq.in_service, None);
}

// Proves idling (§3.7): a sequential, I/O-bound reader (100 µs of think time against 1 ms
// reads) keeps the disk — bfq answers Idle after each of its completions and serves its next
// read when it comes, while another reader's four reads, queued at t=0, wait. When the first
// reader stops, the idle timer expires its queue exactly slice_idle (8 ms) after its last
// completion, and the other reader is served. With slice_idle=0 the second reader is served as
// soon as the first one's queue empties. (A reader idle more than a fifth of the time is not
// I/O bound, and bfq would not idle for it to boost throughput.)
#[test]
fn idling_waits_for_a_sync_readers_next_request_and_expires_after_slice_idle() {
    let mut h = harness("bfq:low_latency=0");
    let think = Duration::from_micros(100);
    reader(&mut h, 1, best_effort(4), 0, 64, think, Instant::from_millis(50));
    for i in 0..4 {
        h.submit(read(2, 5_000_000 + i * 128, 64));
    }
    h.run();
    let (first, second) = (issued_by(&h, 1), issued_by(&h, 2));
    assert!(first.len() >= 12, "{} reads", first.len());
    let last = first.last().unwrap().done_at;
    assert!(second.iter().all(|issued| issued.at > last));
    assert_eq!(second[0].at, last + Duration::from_millis(8));
    assert!(h.idle_answers().len() >= first.len());
    assert!(h.counter("idle_waits") >= first.len() as u64 - 1);
    assert_eq!(h.counter("idle_expirations"), 1);

    let mut h = harness("bfq:low_latency=0,slice_idle=0");
    reader(&mut h, 1, best_effort(4), 0, 64, think, Instant::from_millis(50));
    for i in 0..4 {
        h.submit(read(2, 5_000_000 + i * 128, 64));
    }
    h.run();
    assert_eq!(issued_by(&h, 2)[0].at, Instant::from_millis(1), "no idling: served at once");
    assert_eq!(h.counter("idle_waits"), 0);
}

// Proves class priority with preemption: a real-time read arriving at 20.5 ms, while a
// saturating best-effort reader is in service, expires that queue at once (preempted) and is
// issued the moment the best-effort read at the device completes, at 21 ms, ahead of the
// best-effort reader's next read that arrives at the same instant.
#[test]
fn a_real_time_request_preempts_a_best_effort_queue() {
    let mut h = harness("bfq:low_latency=0");
    reader(&mut h, 1, best_effort(0), 0, 64, Duration::ZERO, Instant::from_millis(100));
    let real_time = with_priority(read(2, 9_000_000, 64), IoPriority::realtime(4).unwrap());
    h.submit_at(Instant::from_nanos(20_500_000), real_time);
    h.run();
    let issued = issued_by(&h, 2);
    assert_eq!(issued.len(), 1);
    assert_eq!(issued[0].at, Instant::from_millis(21));
    assert_eq!(h.counter("preemptions"), 1);
    let best_effort_at_21 = issued_by(&h, 1).iter().any(|i| i.at == Instant::from_millis(21));
    assert!(!best_effort_at_21, "the real-time read went first");
}

// Proves FIFO expiry (§3.4): a read 1,000,000 sectors behind a stream of forward reads from the
// same process "wraps" (farther back than back_seek_max) and would be served last; but once it
// has waited fifo_expire_sync (125 ms) the FIFO, looked at once per slot, hands it out first
// thing in the queue's next slot. The slot ends by budget timeout at 125 ms, the slot's first
// read goes at 125 ms and the expired one right after, at 126 ms. With a long expiry it is
// served last.
#[test]
fn a_read_past_fifo_expire_sync_is_served_at_the_next_slot() {
    for (spec, expected) in
        [("bfq:low_latency=0", Some(126)), ("bfq:low_latency=0,fifo_expire_sync=5s", None)]
    {
        let mut h = harness(spec);
        h.submit(read(1, 1_000_000, 64));
        h.submit(read(1, 10, 64));
        for i in 0..300 {
            h.submit(read(1, 1_000_128 + i * 128, 64));
        }
        h.run();
        let old = h.issued().iter().position(|issued| issued.start == 10).unwrap();
        match expected {
            Some(millis) => {
                assert_eq!(h.issued()[old].at, Instant::from_millis(millis), "{spec}");
                assert_eq!(h.counter("fifo_expiries"), 1);
                assert!(h.counter("budget_timeouts") >= 1);
            }
            None => assert_eq!(old, h.issued().len() - 1, "{spec}: sector order serves it last"),
        }
    }
}

// Proves the back-seek rule (§3.4): with the head at sector 1,000,000, a request 200 sectors
// behind costs 400 (back_seek_penalty 2) and goes before one 500 ahead but after one 300
// ahead; one 100,000 behind (past back_seek_max, 16 MiB = 32768 sectors) "wraps" and goes after
// one 250,000 ahead; with back_seek_max=64 MiB it is near again, costs 200,000, and goes first.
#[test]
fn backward_seeks_within_back_seek_max_cost_twice_and_farther_ones_wrap() {
    let order = |spec: &str, behind: u64, ahead: u64| {
        let mut h = harness(spec);
        // The first read goes to the device at once; its end is the head position.
        h.submit(read(1, 999_936, 64));
        h.submit(read(1, 1_000_000 - behind, 64));
        h.submit(read(1, 1_000_000 + ahead, 64));
        h.run();
        h.issued_starts()[1..].to_vec()
    };
    let spec = "bfq:low_latency=0";
    assert_eq!(order(spec, 200, 500), [999_800, 1_000_500]);
    assert_eq!(order(spec, 200, 300), [1_000_300, 999_800]);
    assert_eq!(order(spec, 100_000, 250_000), [1_250_000, 900_000]);
    let far = "bfq:low_latency=0,back_seek_max=64m";
    assert_eq!(order(far, 100_000, 250_000), [900_000, 1_250_000]);
}

// Proves weighted sharing through B-WF2Q+ on the scripted device: three saturating readers at
// best-effort levels 0, 4 and 6 (weights 80, 40, 20) complete bytes in the ratio 4:2:1 within
// 10 % over 3 s. (max_budget=2048 keeps slots short, so that 3 s hold many rounds.)
#[test]
fn saturating_readers_share_by_weight() {
    let mut h = harness("bfq:low_latency=0,max_budget=2048");
    let stop = Instant::from_millis(3000);
    for (process, level) in [(1, 0), (2, 4), (3, 6)] {
        let start = u64::from(process) * 10_000_000;
        reader(&mut h, process, best_effort(level), start, 256, Duration::ZERO, stop);
    }
    h.run();
    let bytes: Vec<f64> = (1..=3).map(|process| h.completed_bytes(process) as f64).collect();
    let (first, second) = (bytes[0] / bytes[2], bytes[1] / bytes[2]);
    assert!((first - 4.0).abs() < 0.4, "80:20 came out {first:.2}");
    assert!((second - 2.0).abs() < 0.2, "40:20 came out {second:.2}");
}

// Proves interactive weight raising (§3.9): a default-weight reader that starts while another
// default-weight reader streams is raised (coefficient 30, weight 1200), preempts the streaming
// queue and, raised, gets its reads served ahead; without low_latency it waits for the other
// queue's slot.
#[test]
fn a_new_default_weight_reader_is_raised_and_preempts() {
    let first_read_at = |spec: &str| {
        let mut h = harness(spec);
        reader(&mut h, 1, IoPriority::DEFAULT, 0, 256, Duration::ZERO, Instant::from_millis(4000));
        // Let the streaming reader's own start-up raising run out (120000 sectors).
        h.submit_at(Instant::from_nanos(3_000_500_000), read(2, 50_000_000, 64));
        h.run();
        (issued_by(&h, 2)[0].at, h.counter("wr_interactive_starts"))
    };
    let (raised_at, starts) = first_read_at("bfq");
    assert_eq!(raised_at, Instant::from_millis(3001), "right after the read at the device");
    assert_eq!(starts, 2, "each new queue was idle long enough to count as interactive");
    let (plain_at, starts) = first_read_at("bfq:low_latency=0");
    assert_eq!(starts, 0);
    assert!(plain_at > raised_at, "without raising it waits: {plain_at}");
}

#[test]
fn tunables_read_back_in_their_units() {
    let mut bfq = Bfq::new();
    bfq.set_tunable("slice_idle_us", 2500).unwrap();
    assert_eq!(bfq.tunable("slice_idle"), Ok(2));
    assert_eq!(bfq.tunable("slice_idle_us"), Ok(2500));
    bfq.set_tunable("strict_guarantees", 1).unwrap();
    assert_eq!(bfq.tunable("slice_idle"), Ok(8), "strict guarantees raise slice_idle to 8 ms");
    assert!(bfq.set_tunable("low_latency", 2).is_err());
    bfq.set_tunable("max_budget", 4096).unwrap();
    assert_eq!(bfq.max_budget, 4096);
    bfq.set_tunable("max_budget", 0).unwrap();
    // Auto: the initial peak rate (2/3 of 14000 sectors/µs << 16) over 125 ms.
    assert_eq!(bfq.max_budget, (9333 * 125_000) >> 16);
}

// Proves soft real-time detection (§3.9): a default-weight process that reads 64 sectors every
// 50 ms (640 sectors/s, far under 7000) next to a streaming reader is raised as interactive at
// its first read and switched to soft real-time raising (coefficient 3000) once its next batch
// comes after `soft_rt_next_start`; each of its reads is then served right after the read at
// the device, never waiting for the streaming queue's slot.
#[test]
fn a_periodic_low_rate_reader_is_raised_as_soft_real_time() {
    let mut h = harness("bfq");
    let stop = Instant::from_millis(4000);
    reader(&mut h, 1, IoPriority::DEFAULT, 0, 256, Duration::ZERO, stop);
    for i in 0..20 {
        let at = Instant::from_nanos(2_000_500_000 + i * 50_000_000);
        h.submit_at(at, read(2, 50_000_000 + i * 1024, 64));
    }
    h.run();
    assert!(h.counter("wr_soft_rt_starts") >= 1);
    for issued in issued_by(&h, 2) {
        let submitted_ns = (issued.at.as_nanos() - 2_000_500_000) % 50_000_000;
        assert!(submitted_ns <= 500_000, "a periodic read waited until {}", issued.at);
    }
}

/// Checks the weight counters (`queue_weights_tree`): every counted queue is counted under its
/// entity's current weight, is not raised, and the per-weight counts add up.
fn check_weight_counters(bfq: &Bfq) -> Result<(), String> {
    let mut expected = std::collections::BTreeMap::new();
    for (index, entry) in bfq.queues.iter().enumerate() {
        let Some(counted) = entry.weight_counter else { continue };
        let weight = bfq.wf2q.entity(index as u32).weight;
        if counted != weight {
            return Err(format!("queue {index} counted under {counted}, its weight is {weight}"));
        }
        if entry.wr_coeff != 1 {
            return Err(format!("queue {index} is counted while raised ×{}", entry.wr_coeff));
        }
        *expected.entry(counted).or_insert(0u32) += 1;
    }
    if expected != bfq.weights {
        return Err(format!("weights {:?}, queues say {expected:?}", bfq.weights));
    }
    Ok(())
}

// Proves issue 27's fix at the state level: a queue whose interactive raising ends by service
// (120000 sectors) while it is in service and backlogged is counted under its new weight, 40,
// not under the raised 1200 it had until then. Counted under 1200, the one queue looked
// "asymmetric" to itself for as long as it stayed backlogged: bfq idled for it alone and never
// let another queue preempt it.
#[test]
fn a_queue_whose_raising_ends_in_service_is_counted_under_its_new_weight() {
    let mut rig = Rig::new(&[]);
    let queue = QueueIndex(0);
    let mut next_sector = 0;
    let mut read_at = |rig: &mut Rig| {
        rig.insert(read(1, next_sector, 256));
        next_sector += 512;
    };
    read_at(&mut rig);
    read_at(&mut rig);
    assert_eq!(rig.bfq.queues[queue.slot()].wr_coeff, 30, "a new queue is raised");
    // 470 reads of 256 sectors pass the 120000 sectors of service that end interactive raising;
    // the reader keeps two reads queued all along, so its queue never stops being busy.
    for _ in 0..470 {
        rig.serve_one();
        read_at(&mut rig);
        check_weight_counters(&rig.bfq).unwrap();
    }
    let entry = &rig.bfq.queues[queue.slot()];
    assert_eq!(entry.wr_coeff, 1, "raising ended by service");
    assert!(entry.busy, "the queue stayed backlogged");
    assert_eq!(entry.weight_counter, Some(40));
    assert_eq!(rig.bfq.weights, std::collections::BTreeMap::from([(40, 1)]));
}

// Proves the weight counters stay true on every path that changes a queue's weight — raising
// that starts and ends (by time, by service, soft real-time ending on a seeky arrival),
// `low_latency` switched off and on, ioprio level and class changes, queues going idle with
// requests in flight — by driving bfq through a long pseudo-random script of those events and
// checking the counters after every call.
#[test]
fn weight_counters_follow_every_weight_change() {
    let mut rig = Rig::new(&[]);
    let mut in_flight: Vec<RequestId> = Vec::new();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut draw = move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    for step in 0..40_000 {
        match draw(100) {
            0..=39 if rig.table.live_count() < 1000 => {
                let process = draw(4) as u32 + 1;
                let priority = match draw(10) {
                    0 => IoPriority::realtime(draw(8) as u8).unwrap(),
                    1 => IoPriority::idle(),
                    2..=5 => best_effort(draw(8) as u8),
                    _ => IoPriority::DEFAULT,
                };
                // Mostly sequential runs per process, sometimes a far jump (seeky).
                let start = u64::from(process) * 100_000_000 + draw(2) * draw(50_000_000);
                rig.insert(with_priority(
                    read(process, start, 8 * (1 + draw(32) as u32)),
                    priority,
                ));
            }
            40..=69 => {
                if let Dispatch::Issue(id) = rig.dispatch() {
                    in_flight.push(id);
                }
            }
            70..=89 if !in_flight.is_empty() => {
                let id = in_flight.remove(draw(in_flight.len() as u64) as usize);
                rig.complete(id);
            }
            90..=91 => {
                let value = draw(2) as i64;
                rig.bfq.set_tunable("low_latency", value).unwrap();
            }
            _ => rig.now += Duration::from_micros(draw(30_000)),
        }
        rig.now += Duration::from_micros(draw(300));
        if let Err(problem) = check_weight_counters(&rig.bfq) {
            panic!("after step {step} at {}: {problem}", rig.now);
        }
    }
    assert!(rig.bfq.counters.wr_ends > 0, "the script ended some raising");
}

// Proves issue 27's live starvation is gone, under the conditions that showed it: two
// identical, equal-weight readers, each keeping 16 random reads outstanding and sending the
// next one a little after each completion (the think time of a real issuer: reaping, the run
// loop, the next submission), on a device that queues 32 commands. With the defaults (weight
// raising and idling on) they get equal shares within 10 % once the raising of both has ended.
// Before the fix the first queue whose raising ended by service kept a stale count, bfq idled
// for it alone, and the other reader got one burst per budget: about 1/25 of the bandwidth.
#[test]
fn two_equal_readers_that_think_between_requests_share_evenly() {
    let config = QueueConfig { depth: 32, ..QueueConfig::default() };
    let mut h = Harness::new(SchedulerSpec::parse("bfq").unwrap().build(), config)
        .with_service(fixed_service(Duration::from_micros(400)));
    h.set_checking(false);
    let stop = Instant::from_millis(12_000);
    let think = Duration::from_micros(150);
    for process in [1, 2] {
        let base = u64::from(process) * 1_000_000_000;
        let mut state = u64::from(process) * 0x2545_f491_4f6c_dd1d;
        let mut random_start = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            base + (state % 4_000_000) * 8
        };
        for _ in 0..16 {
            h.submit(read(process, random_start(), 8));
        }
        h.on_complete(move |done| {
            if done.process.0 != process || done.completed >= stop {
                return Vec::new();
            }
            vec![(done.completed + think, read(process, random_start(), 8))]
        });
    }
    // Both start raised; measure from when raising has surely ended (service or 3-25 s).
    h.run_until(Instant::from_millis(6_000));
    let before: Vec<u64> = [1, 2].map(|process| h.completed_bytes(process)).to_vec();
    h.run();
    let shares: Vec<f64> =
        [1, 2].iter().zip(&before).map(|(&p, &b)| (h.completed_bytes(p) - b) as f64).collect();
    assert!(h.counter("wr_ends") >= 2, "both readers' raising ended");
    let ratio = shares[0] / shares[1];
    assert!((0.9..=1.1).contains(&ratio), "shares {shares:?}: ratio {ratio:.3}");
}

// Issue 18 finding: eight 4 KiB random-read jobs at iodepth 32, one per core on an 8-core
// host on the fast NVMe preset, made our bfq idle ~0.6 s of a short run (48 K IOPS against
// 0.69 M with slice_idle=0); on one core it never idled. What the kernel (6.12) does there:
//
// * The eight sync queues are created within a few µs of each other with nothing else busy,
//   so `bfq_init_rq` hands each to `bfq_handle_burst`; the eighth makes `burst_size` reach
//   `bfq_large_burst_thresh` (8) in `bfq_add_to_burst`, which marks all eight
//   `in_large_burst`. From then on `bfq_bfqq_handle_idle_busy_switch` raises none of them
//   (`interactive` and `soft_rt` both need `!in_burst`), and `bfq_update_wr_data` ends the
//   interactive raising the first seven got before the eighth arrived, at their next dispatch.
// * So when the in-service queue empties, `bfq_better_to_idle` finds:
//   `idling_boosts_thr_without_issues` false (the queues are seeky, `BFQQ_SEEKY`, >19 of the
//   last 32 requests more than 800 sectors away — 4 KiB random reads over 16 MiB; and on a
//   non-rotational device with `hw_tag` = 1, set by `bfq_update_hw_tag` after 32 samples with
//   more than 3 requests in the driver, even a sequential queue would not qualify), and
//   `idling_needed_for_service_guarantees` false (not raised; `bfq_asymmetric_scenario` sees
//   one weight, 40, and one class; `tot_busy_queues` is 8, not 1). The queue expires
//   (`BFQQE_NO_MORE_REQUESTS`) and the next one is served: the kernel does not idle, and
//   injection never comes into it.
// * Ours had no burst detection (a listed simplification), so every queue got interactive
//   raising (coefficient 30, and soft real-time 3000 for some, whose `dispatched == 0` on an
//   idle→busy switch the multi-core timing allows). `idling_needed_for_service_guarantees` then
//   held through its `wr_coeff > 1 && tot_rq_in_driver >= dispatched + 4` arm (other queues'
//   requests still at the device) and bfq idled at least 20 ms (`bfq_arm_slice_timer` for a
//   raised queue). The timer is armed only at a completion that leaves the queue in service
//   empty with nothing in flight. On one core that never happened (measured before the fix:
//   each time the queue emptied it still had a request at the device, and by that request's
//   completion the job had queued its next one — the one core runs completions and
//   resubmissions in turn — so no idle timer was armed in the run). On eight cores the job
//   resubmits a few µs after each completion, so the last completion finds the queue empty
//   and arms the timer; and 30 of the 40 waits ran out (`TooIdle`): the job, waiting for a
//   free request in the 128-request pool the other seven jobs' queued requests had filled
//   (2.8 s "blocked" over the run), could not send the request that would end the wait.
//
// The fix is the kernel's burst detection (`burst.rs`). The tests below pin it.

/// Eight processes each queue `per_queue` sync reads spaced 100000 sectors apart (seeky
/// from the second on, and never mergeable), all at the same instant.
fn queue_seeky_readers(rig: &mut Rig, processes: u32, per_queue: u64) {
    for process in 1..=processes {
        let base = u64::from(process) * 100_000_000;
        for i in 0..per_queue {
            rig.insert(read(process, base + i * 100_000, 8));
        }
    }
}

/// Serves requests one at a time (1 ms each), sitting out any idle wait, until `count` were
/// served.
fn serve_through_idling(rig: &mut Rig, count: usize) {
    let mut served = 0;
    while served < count {
        match rig.dispatch() {
            Dispatch::Issue(id) => {
                rig.now += Duration::from_millis(1);
                rig.complete(id);
                served += 1;
            }
            Dispatch::Idle { until } => rig.now = until,
            other => panic!("after {served} served: {other:?}"),
        }
    }
}

// Proves the large-burst rule (`bfq_add_to_burst`, threshold 8): the eighth queue created
// within 180 ms of the previous one, with nothing else busy, marks all eight as in a large
// burst; the eighth is never raised, and the seven raised on arrival lose their raising at
// their next dispatch (`bfq_update_wr_data`). Without burst detection all eight stay raised.
#[test]
fn eight_queues_created_together_form_a_large_burst_and_are_not_raised() {
    let mut rig = Rig::new(&[]);
    queue_seeky_readers(&mut rig, 8, 4);
    for slot in 0..8 {
        assert!(rig.bfq.queues[slot].in_large_burst, "queue {slot} marked in the large burst");
    }
    assert!(rig.bfq.burst.large && rig.bfq.burst.list.is_empty());
    assert_eq!(rig.bfq.queues[7].wr_coeff, 1, "the eighth queue is never raised");
    assert_eq!(rig.bfq.counters.wr_interactive_starts, 7, "the first seven were, on arrival");
    // Serve every request: each queue's raising ends at its first dispatch.
    serve_through_idling(&mut rig, 32);
    assert!(rig.bfq.queues[..8].iter().all(|queue| queue.wr_coeff == 1), "no queue raised");
    assert_eq!(rig.bfq.wr_busy_queues, 0);
}

// Proves the burst must reach 8 to count: seven queues created together are a small burst
// (an application starting up) and keep their interactive raising through their service.
#[test]
fn seven_queues_created_together_keep_their_raising() {
    let mut rig = Rig::new(&[]);
    queue_seeky_readers(&mut rig, 7, 4);
    assert!(rig.bfq.queues[..7].iter().all(|queue| !queue.in_large_burst));
    assert_eq!(rig.bfq.burst.size, 7);
    serve_through_idling(&mut rig, 28);
    assert!(rig.bfq.queues[..7].iter().all(|queue| queue.wr_coeff == 30), "all still raised");
}

// Proves the issue-18 behaviour: eight seeky sync queues created together on a queueing
// device are not idled for while they wait for their requests in flight — each queue expires
// as it empties and the next is served, so all 192 requests go out without a completion, as
// the kernel's `bfq_better_to_idle` decides (seeky, unraised, symmetric, 8 busy). Before the
// fix the queues were raised, and from the second queue on (its 24 requests plus the first's
// at the device, `in_driver >= dispatched + 4`) bfq waited for that queue's completions
// (`Throttled`), then idled 20 ms for it.
#[test]
fn eight_seeky_queues_created_together_are_not_idled_for() {
    let mut rig = Rig::new(&[]);
    queue_seeky_readers(&mut rig, 8, 24);
    assert!(rig.bfq.queues[..8].iter().all(|queue| queue.is_seeky()));
    let mut issued = 0;
    loop {
        match rig.dispatch() {
            Dispatch::Issue(_) => issued += 1,
            other => {
                assert!(matches!(other, Dispatch::Empty), "stopped with {other:?}");
                break;
            }
        }
    }
    assert_eq!(issued, 8 * 24, "every request dispatched without waiting for a completion");
    assert_eq!(rig.bfq.counters.idle_waits, 0);
}

// Proves a queue created while unrelated queues are busy is not counted in a burst
// (`bfq_init_rq` calls `bfq_handle_burst` only while a burst is tracked or nothing is busy):
// with one reader running for 300 ms, eight new readers created together are not a burst
// and are raised as interactive.
#[test]
fn queues_created_beside_a_busy_queue_are_not_a_burst() {
    let mut rig = Rig::new(&[]);
    for i in 0..400 {
        rig.insert(read(100, i * 100_000, 8));
    }
    rig.now += Duration::from_millis(300);
    rig.serve_one();
    queue_seeky_readers(&mut rig, 8, 2);
    assert!(rig.bfq.queues[1..9].iter().all(|queue| !queue.in_large_burst && !queue.in_burst_list));
    assert!(rig.bfq.queues[1..9].iter().all(|queue| queue.wr_coeff == 30));
}

// Proves a freed queue leaves the burst's count (`bfq_put_queue`): of eight processes started
// together, the first reads once and exits before the others start; its queue is freed, so
// the seven others make a burst of seven — not large, all raised — and only a ninth process
// makes it large.
#[test]
fn a_queue_freed_before_the_burst_grows_does_not_count_in_it() {
    let mut rig = Rig::new(&[]);
    rig.insert(read(1, 1_000_000, 8));
    serve_through_idling(&mut rig, 1);
    let cx = Ctx { now: rig.now, requests: &rig.table, in_flight: rig.in_flight, depth: 1 };
    rig.bfq.process_exited(&cx, elevator_core::ProcessId(1));
    assert_eq!(rig.dispatch(), Dispatch::Empty);
    assert_eq!(rig.bfq.queues[0].owner, super::queue::Owner::Free, "the exited queue is freed");
    assert_eq!(rig.bfq.burst.size, 0, "freed: out of the burst");
    // Seven more: a burst of seven, raised; they reuse slot 0 first, then 1..=6.
    for process in 2..=8 {
        rig.insert(read(process, u64::from(process) * 100_000_000, 8));
    }
    assert_eq!(rig.bfq.burst.size, 7);
    assert!(!rig.bfq.burst.large);
    assert!(rig.bfq.queues[..7].iter().all(|queue| queue.wr_coeff == 30 && !queue.in_large_burst));
    rig.insert(read(9, 900_000_000, 8));
    assert!(rig.bfq.burst.large);
    assert!(rig.bfq.queues[..8].iter().all(|queue| queue.in_large_burst));
}

// ---- Injection while idling (§3.8, `inject.rs`) -------------------------------------------

/// Dispatches and returns the request handed out and its process, or panics naming what came
/// instead.
fn issue(rig: &mut Rig) -> (RequestId, u32) {
    let decision = rig.dispatch();
    let Dispatch::Issue(id) = decision else { panic!("expected a dispatch, got {decision:?}") };
    (id, rig.table[id].process.0)
}

// Proves injection and the adaptation of the inject limit (`bfq_choose_bfqq_for_injection`,
// `bfq_update_inject_limit`): reader A (process 1, best-effort level 0, weight 80) is idled
// for because its weight is above reader B's (level 4, weight 40), whose reads wait. With no
// baseline, A's limit is 0 and nothing of B's is injected while A waits. A's read arriving
// with nothing in flight (10 ms after A's creation, A's only outstanding request) gives the
// 1 ms baseline and the limit 1: while A idles, one read of B is injected and a second one is
// not. A's next read, served while B's injected read is in flight, takes 1 ms (< 1.5 × the
// baseline): the limit goes up to 2, and two reads of B are injected. A's read taking 2 ms
// with them in flight (≥ 1.5 × baseline) takes it back to 1. One second after that decrease,
// A's next arrival resets it (0: A's think time is short) and forgets the baseline.
#[test]
fn injection_while_idling_follows_the_adaptive_inject_limit() {
    let mut rig = Rig::new(&[("low_latency", 0), ("slice_idle", 20)]);
    let ms = Duration::from_millis;
    let heavy = best_effort(0);
    let light = best_effort(4);
    let a_first = rig.insert(with_priority(read(1, 0, 8), heavy));
    for i in 0..6 {
        rig.insert(with_priority(read(2, 50_000_000 + i * 100_000, 8), light));
    }
    let (first, process) = issue(&mut rig);
    assert_eq!((first, process), (a_first, 1), "the heavier queue is served first");
    let a = rig.bfq.in_service.expect("A in service");
    // No baseline, limit 0: bfq waits for A's read in flight rather than inject.
    assert_eq!(rig.dispatch(), Dispatch::Throttled);
    rig.now += ms(1);
    rig.complete(first);
    let Dispatch::Idle { until } = rig.dispatch() else { panic!("A is idled for") };
    assert_eq!(until, rig.now + ms(20));
    assert_eq!(rig.bfq.counters.injections, 0);

    // The baseline: A's read with nothing in flight, 1 ms from arrival to completion.
    rig.now = Instant::ZERO + ms(12);
    rig.insert(with_priority(read(1, 8, 8), heavy));
    let (baseline, process) = issue(&mut rig);
    assert_eq!(process, 1);
    rig.now += ms(1);
    rig.complete(baseline);
    let entry = &rig.bfq.queues[a.slot()];
    assert_eq!((entry.inject_limit, entry.last_serv_time_ns), (1, 1_000_000));

    // Limit 1: one read of B injected while A idles, A staying in service, then a wait.
    let (injected, process) = issue(&mut rig);
    assert_eq!(process, 2, "B's read is injected");
    assert_eq!(rig.bfq.in_service, Some(a));
    assert!(rig.bfq.queues[a.slot()].wait_request, "A is still idled for");
    assert!(matches!(rig.dispatch(), Dispatch::Idle { .. }), "one injected request at most");
    assert_eq!(rig.bfq.counters.injections, 1);

    // A's read with the injected one in flight, 1 ms in total: the limit goes up.
    rig.now += Duration::from_micros(500);
    rig.insert(with_priority(read(1, 16, 8), heavy));
    let (sampled, process) = issue(&mut rig);
    assert_eq!(process, 1);
    rig.now += Duration::from_micros(500);
    rig.complete(injected);
    rig.now += Duration::from_micros(500);
    rig.complete(sampled);
    assert_eq!(rig.bfq.queues[a.slot()].inject_limit, 2);

    // Limit 2: two reads of B injected, then a wait.
    let (b1, p1) = issue(&mut rig);
    let (b2, p2) = issue(&mut rig);
    assert_eq!((p1, p2), (2, 2));
    assert!(matches!(rig.dispatch(), Dispatch::Idle { .. }), "two injected requests at most");
    assert_eq!(rig.bfq.counters.injections, 3);

    // A's read takes 2 ms beside them (≥ 1.5 ms): the limit comes down, noting when.
    rig.now += Duration::from_micros(500);
    rig.insert(with_priority(read(1, 24, 8), heavy));
    let (slow, process) = issue(&mut rig);
    assert_eq!(process, 1);
    rig.now += ms(2);
    rig.complete(b1);
    rig.complete(b2);
    rig.complete(slow);
    let decreased_at = rig.now;
    let entry = &rig.bfq.queues[a.slot()];
    assert_eq!((entry.inject_limit, entry.decrease_time), (1, decreased_at));

    // A second later, A's next arrival resets the limit and forgets the baseline.
    rig.now = decreased_at + Duration::from_secs(1);
    rig.insert(with_priority(read(1, 32, 8), heavy));
    let entry = &rig.bfq.queues[a.slot()];
    assert_eq!((entry.inject_limit, entry.last_serv_time_ns), (0, 0));
}

// Proves that a slot's end drops a sample of the inject limit under way (`bfq_bfqq_expire`
// clears `rqs_injected`, `wait_dispatch` and `waited_rq`): reader A's read arrives while A is
// in service and idled for (a lighter reader waits), with nothing in flight, 12 ms after A's
// creation, which starts a sample; before it is dispatched a real-time reader's read arrives
// and preempts A. The real-time queue's first dispatch is not the sampled request, so its
// completion gives that queue no baseline and leaves its limit at 0; without the reset it
// took a baseline measured from A's arrival and a limit of 1.
#[test]
fn a_slot_end_drops_the_inject_limit_sample_under_way() {
    let mut rig = Rig::new(&[("low_latency", 0), ("slice_idle", 20)]);
    let ms = Duration::from_millis;
    let heavy = best_effort(0);
    let first = rig.insert(with_priority(read(1, 0, 8), heavy));
    // A lighter reader's waiting read makes bfq idle for A.
    rig.insert(with_priority(read(3, 50_000_000, 8), best_effort(4)));
    let (id, _) = issue(&mut rig);
    assert_eq!(id, first);
    let a = rig.bfq.in_service.expect("A in service");
    rig.now += ms(1);
    rig.complete(first);
    assert!(matches!(rig.dispatch(), Dispatch::Idle { .. }), "A is idled for");

    rig.now = Instant::ZERO + ms(12);
    rig.insert(with_priority(read(1, 8, 8), heavy));
    assert!(rig.bfq.inject.wait_dispatch, "A's arrival with nothing in flight starts a sample");
    rig.insert(with_priority(read(2, 90_000_000, 8), IoPriority::realtime(0).unwrap()));
    assert_ne!(rig.bfq.in_service, Some(a), "the real-time queue preempted A");
    let (rt_read, process) = issue(&mut rig);
    assert_eq!(process, 2, "the real-time read goes first");
    let rt = rig.bfq.in_service.expect("the real-time queue in service");
    assert_eq!(rig.bfq.inject.waited_rq, None, "not the sampled request");
    rig.now += ms(1);
    rig.complete(rt_read);
    let entry = &rig.bfq.queues[rt.slot()];
    assert_eq!((entry.inject_limit, entry.last_serv_time_ns), (0, 0));
}

// Proves `bfq_rq_enqueued`'s small-request rule: a small read arriving while a sequential
// reader is idled for (idling pays for throughput on a rotational device) leaves the idle
// wait and its timer in place only if it is the queue's one queued read; a second one, as in
// a plugged batch, ends the wait and disarms the timer.
#[test]
fn a_second_small_request_ends_the_idle_wait() {
    let mut rig = Rig::new(&[("low_latency", 0)]);
    let first = rig.insert(read(1, 0, 8));
    let (id, _) = issue(&mut rig);
    assert_eq!(id, first);
    let a = rig.bfq.in_service.expect("A in service");
    rig.now += Duration::from_millis(1);
    rig.complete(first);
    assert!(rig.bfq.queues[a.slot()].wait_request && rig.bfq.idle_timer.is_some(), "idling");
    rig.now += Duration::from_micros(100);
    rig.insert(read(1, 8, 8));
    assert!(rig.bfq.queues[a.slot()].wait_request, "one small read: still waiting");
    assert!(rig.bfq.idle_timer.is_some());
    rig.insert(read(1, 16, 8));
    assert!(!rig.bfq.queues[a.slot()].wait_request, "two queued: the wait ends");
    assert_eq!(rig.bfq.idle_timer, None);
}

// Proves the first choice of injection (`bfq_select_queue`): while a sync reader is idled
// for, its own process's async write (in the shared async queue of its priority) is injected
// even with an inject limit of 0; while that shared queue's next request is another process's
// write, nothing is injected.
#[test]
fn an_idled_readers_own_async_write_is_injected() {
    let mut rig = Rig::new(&[("low_latency", 0), ("slice_idle", 20)]);
    let heavy = best_effort(0);
    let first = rig.insert(with_priority(read(1, 0, 8), heavy));
    rig.insert(with_priority(read(2, 90_000_000, 8), best_effort(4)));
    let (id, process) = issue(&mut rig);
    assert_eq!((id, process), (first, 1));
    let a = rig.bfq.in_service.expect("A in service");
    rig.now += Duration::from_millis(1);
    rig.complete(first);
    // Another process's async write, next in the shared best-effort/0 queue: not injected.
    rig.insert(with_priority(write(3, 100, 8), heavy));
    assert!(matches!(rig.dispatch(), Dispatch::Idle { .. }), "A is idled for");
    // A's own async write, nearer the head, becomes that queue's next request: injected.
    let own = rig.insert(with_priority(write(1, 50, 8), heavy));
    assert_eq!(rig.dispatch(), Dispatch::Issue(own));
    assert_eq!(rig.bfq.in_service, Some(a), "A stays in service");
    assert!(rig.bfq.queues[a.slot()].wait_request, "A is still idled for");
    assert_eq!(rig.bfq.queues[a.slot()].inject_limit, 0);
}

/// Reads served to a heavy reader (best-effort 0, 500 µs of think time) and, if `with_light`,
/// a light one (best-effort 7, no think time), each with one read outstanding, over 300 ms of
/// a queueing device serving each read in 100 µs.
fn heavy_and_light_readers(with_light: bool) -> (usize, usize) {
    let config = QueueConfig { depth: 32, ..QueueConfig::default() };
    let mut h = Harness::new(SchedulerSpec::parse("bfq:low_latency=0").unwrap().build(), config)
        .with_service(fixed_service(Duration::from_micros(100)));
    let stop = Instant::from_millis(300);
    reader(&mut h, 1, best_effort(0), 0, 8, Duration::from_micros(500), stop);
    if with_light {
        reader(&mut h, 2, best_effort(7), 1_000_000_000, 8, Duration::ZERO, stop);
    }
    h.run();
    (issued_by(&h, 1).len(), issued_by(&h, 2).len())
}

// Proves what injection is for (§3.8): bfq idles for a heavier reader that thinks 500 µs
// between reads (asymmetric weights need it). Without injection, the lighter reader beside it
// only got the slots that the heavy queue's idle expiries left, the device sat idle through
// the heavy reader's think times (about half the 3000 reads 300 ms allow) and the heavy reader
// lost 40 % of its reads to the light queue's slots. With injection the light reader's reads
// fill those think times, keeping the device at least 90 % busy, while the heavy reader keeps
// at least 90 % of what it gets alone: the inject limit stops injected reads from delaying its
// own beyond 1.5 × their baseline service time.
#[test]
fn injection_serves_a_light_reader_in_a_heavy_readers_think_time() {
    let (heavy_alone, _) = heavy_and_light_readers(false);
    let (heavy, light) = heavy_and_light_readers(true);
    let capacity = 300_000 / 100;
    assert!((heavy + light) * 10 >= capacity * 9, "heavy {heavy} + light {light} reads");
    assert!(heavy * 10 >= heavy_alone * 9, "heavy reader {heavy} reads, alone {heavy_alone}");
}

/// Rounds 100 ms apart in which process 2 (best-effort 4) reads once and process 1
/// (best-effort 0) reads `gap` after that read completes; each read is served in 1 ms (idle
/// waits sat out). Returns the queues of processes 1 and 2.
fn wake_after(rig: &mut Rig, gap: Duration, rounds: u64) -> (QueueIndex, QueueIndex) {
    let serve_until = |rig: &mut Rig, wanted: RequestId| loop {
        match rig.dispatch() {
            Dispatch::Issue(id) => {
                rig.now += Duration::from_millis(1);
                rig.complete(id);
                if id == wanted {
                    return;
                }
            }
            Dispatch::Idle { until } => rig.now = until,
            other => panic!("waiting for {wanted:?}: {other:?}"),
        }
    };
    for round in 0..rounds {
        rig.now = Instant::ZERO + Duration::from_millis(100 * round);
        let waking = rig.insert(with_priority(read(2, 1_000_000 + round * 64, 8), best_effort(4)));
        serve_until(rig, waking);
        rig.now += gap;
        let woken = rig.insert(with_priority(read(1, round * 64, 8), best_effort(0)));
        serve_until(rig, woken);
    }
    let queue = |process: u32| {
        rig.bfq.processes.get(&elevator_core::ProcessId(process)).unwrap().sync_queue.unwrap()
    };
    (queue(1), queue(2))
}

// Proves waker detection and injection (`bfq_check_waker`, `bfq_select_queue`): a reader with
// a long think time whose read arrives 1 ms after each completion of another queue's read gets
// that queue as its waker at the third such arrival once its think time is long (and joins
// the waker's woken list); while it is idled for, its waker's reads are injected even beyond
// its inject limit (two in a row with the limit at most 1, its own read in flight). Arriving
// 5 ms after the
// completions (past the 4 ms window), it gets no waker.
#[test]
fn a_queue_woken_by_another_gets_it_as_waker_and_its_reads_injected() {
    let mut rig = Rig::new(&[("low_latency", 0)]);
    let (woken, waker) = wake_after(&mut rig, Duration::from_millis(1), 8);
    assert!(!rig.bfq.queues[woken.slot()].has_short_ttime, "a long think time");
    assert_eq!(rig.bfq.queues[woken.slot()].waker, Some(waker));
    assert_eq!(rig.bfq.queues[waker.slot()].woken, vec![woken]);
    // One more round, the woken reader's read held at the device for 30 ms: its waker's two
    // reads arrive past their hole-recovery window (no preemption) and are both injected, the
    // second beyond the woken queue's inject limit.
    rig.now = Instant::ZERO + Duration::from_millis(800);
    let waking = rig.insert(with_priority(read(2, 2_000_000, 8), best_effort(4)));
    let (id, _) = issue(&mut rig);
    assert_eq!(id, waking);
    rig.now += Duration::from_millis(1);
    rig.complete(id);
    rig.now += Duration::from_millis(1);
    rig.insert(with_priority(read(1, 1_000, 8), best_effort(0)));
    let (_, process) = issue(&mut rig);
    assert_eq!(process, 1);
    assert_eq!(rig.bfq.in_service, Some(woken));
    rig.now += Duration::from_millis(30);
    for i in 0..2 {
        rig.insert(with_priority(read(2, 5_000_000 + i * 64, 8), best_effort(4)));
    }
    let (_, first) = issue(&mut rig);
    assert!(rig.bfq.queues[woken.slot()].inject_limit <= rig.in_flight, "limit reached");
    let (_, second) = issue(&mut rig);
    assert_eq!((first, second), (2, 2), "both of the waker's reads are injected");
    assert_eq!(rig.bfq.in_service, Some(woken), "the woken reader stays in service");
    assert_eq!(rig.bfq.counters.injections, 2);

    let mut rig = Rig::new(&[("low_latency", 0)]);
    let (late, _) = wake_after(&mut rig, Duration::from_millis(5), 8);
    assert!(!rig.bfq.queues[late.slot()].has_short_ttime);
    assert_eq!(rig.bfq.queues[late.slot()].waker, None);
}

// ---- Stable merging of queues created together (issue 25) ----------------------------------

/// Process 1 queues seeky reads at sectors 1M and 3M; `gap` later process 2 queues reads at 2M
/// and 4M. Returns the processes of the four reads in the order bfq serves them, 1 ms each.
fn two_jobs_created(non_rotational: bool, gap: Duration) -> (Vec<u32>, Rig) {
    let mut rig = Rig::new(&[]);
    rig.bfq.set_non_rotational(non_rotational);
    rig.insert(read(1, 1_000_000, 8));
    rig.insert(read(1, 3_000_000, 8));
    rig.now += gap;
    rig.insert(read(2, 2_000_000, 8));
    rig.insert(read(2, 4_000_000, 8));
    let mut order = Vec::new();
    while order.len() < 4 {
        match rig.dispatch() {
            Dispatch::Issue(id) => {
                order.push(rig.table[id].process.0);
                rig.now += Duration::from_millis(1);
                rig.complete(id);
            }
            Dispatch::Idle { until } => rig.now = until,
            other => panic!("after {order:?}: {other:?}"),
        }
    }
    (order, rig)
}

// Proves early stable merging (`bfq_do_or_sched_stable_merge`, 6.18): on a non-rotational
// device (queueing not yet ruled out), a sync queue created within `bfq_burst_interval`
// (180 ms) of the last one, at its priority, is merged into it at once, so the two processes'
// reads are one queue served in sector order (1, 2, 1, 2) — what the kernel did with two fio
// jobs on a loop device, where ours kept two raised queues and idled for the first. Without
// the merge, process 1's raised queue is served to the end and idled for first (1, 1, 2, 2).
#[test]
fn queues_created_together_on_a_non_rotational_device_are_merged() {
    let (order, rig) = two_jobs_created(true, Duration::from_millis(1));
    assert_eq!(order, [1, 2, 1, 2]);
    let queue_of = |process: u32| rig.bfq.processes.get(&ProcessId(process)).unwrap().sync_queue;
    assert_eq!(queue_of(1), queue_of(2));
    assert_eq!(rig.bfq.queues[queue_of(1).unwrap().slot()].owner, Owner::Merged(2));
}

// Proves the merge's limits: a rotational device (the kernel would schedule a delayed merge,
// not modelled) and a queue created more than 180 ms after the last one each keep their own
// queue, served queue by queue.
#[test]
fn queues_are_not_merged_on_a_rotational_device_or_after_the_burst_interval() {
    assert_eq!(two_jobs_created(false, Duration::from_millis(1)).0, [1, 1, 2, 2]);
    assert_eq!(two_jobs_created(true, Duration::from_millis(181)).0, [1, 1, 2, 2]);
}

// Proves a shared queue outlives one of its processes: when process 1 exits, process 2 still
// sends its requests there; when both have exited the queue is freed, and, belonging to no
// single process, it leaves the burst's size as it is (`bfq_put_queue`'s `bfqq->bic` test).
#[test]
fn a_merged_queue_is_kept_until_its_last_process_exits() {
    let (_, mut rig) = two_jobs_created(true, Duration::from_millis(1));
    let queue = rig.bfq.processes.get(&ProcessId(2)).unwrap().sync_queue.unwrap();
    let cx = Ctx { now: rig.now, requests: &rig.table, in_flight: 0, depth: 1 };
    rig.bfq.process_exited(&cx, ProcessId(1));
    assert_eq!(rig.bfq.queues[queue.slot()].owner, Owner::Merged(1));
    let id = rig.insert(read(2, 5_000_000, 8));
    assert_eq!(rig.bfq.slots[id].queue, queue);
    serve_through_idling(&mut rig, 1);
    let burst_size = rig.bfq.burst.size;
    assert!(burst_size > 0 && rig.bfq.queues[queue.slot()].in_burst_list);
    let cx = Ctx { now: rig.now, requests: &rig.table, in_flight: 0, depth: 1 };
    rig.bfq.process_exited(&cx, ProcessId(2));
    assert_eq!(rig.bfq.queues[queue.slot()].owner, Owner::Free);
    assert_eq!(rig.bfq.burst.size, burst_size);
}

// ---- A non-rotational device (issue 25) ----------------------------------------------------

// Proves `BFQ_RQ_SEEKY`'s size rule: 128-sector reads 1M sectors apart make a seeky queue on a
// rotational device but not on a non-rotational one, where only requests under 64 sectors can
// be seeky; 8-sector reads as far apart are seeky on both.
#[test]
fn large_far_apart_requests_are_seeky_only_on_a_rotational_device() {
    let seeky = |non_rotational: bool, sectors: u32| {
        let mut rig = Rig::new(&[]);
        rig.bfq.set_non_rotational(non_rotational);
        for i in 0..32 {
            rig.insert(read(1, 1_000_000 * (i + 1), sectors));
        }
        rig.bfq.queues[0].is_seeky()
    };
    assert!(seeky(false, 128));
    assert!(!seeky(true, 128));
    assert!(seeky(false, 8) && seeky(true, 8));
}

/// A sequential reader (64 sectors, 100 µs think time) runs from 0 to 400 ms; another process
/// queues four reads at 200 ms (past the 180 ms within which their queues would be merged).
/// Returns when the second process's first read was issued.
fn second_reader_start(non_rotational: bool) -> Instant {
    let mut bfq = Bfq::new();
    bfq.set_tunable("low_latency", 0).unwrap();
    // The queue tells bfq its device's flag at attach.
    let config = QueueConfig { rotational: !non_rotational, ..QueueConfig::default() };
    let mut h =
        Harness::new(Box::new(bfq), config).with_service(fixed_service(Duration::from_millis(1)));
    let think = Duration::from_micros(100);
    reader(&mut h, 1, best_effort(4), 0, 64, think, Instant::from_millis(400));
    for i in 0..4 {
        h.submit_at(Instant::from_millis(200), read(2, 5_000_000 + i * 128, 64));
    }
    h.run();
    issued_by(&h, 2)[0].at
}

// Proves `idling_boosts_thr_without_issues` on a non-rotational device that queues (`hw_tag`
// undecided counts as queueing): bfq does not idle for a sequential reader there, so the
// other process's reads are served as soon as the reader's queue empties (within its 1 ms
// read and 100 µs think time), while on a rotational device bfq idles for the reader and the
// other process waits for the end of its slot (budget or timeout).
#[test]
fn a_sequential_reader_is_idled_for_only_on_a_rotational_device() {
    let start = Instant::from_millis(200);
    let non_rotational = second_reader_start(true);
    assert!(non_rotational <= start + Duration::from_millis(2), "{non_rotational:?}");
    let rotational = second_reader_start(false);
    assert!(rotational > start + Duration::from_millis(10), "{rotational:?}");
}

// Proves the non-rotational reference values (`bfq_init_queue`: `ref_rate[nonrot]`,
// `ref_wr_duration[nonrot]`): before any rate is measured, a rotational device starts at two
// thirds of 14000 (fixed point) and raises interactive queues for 14000 × 7000 / 9333 ms
// (10.5 s); a non-rotational one at two thirds of 33000, raising for 33000 × 2500 / 22000 ms
// (3.75 s). A measured rate is kept when the flag is set later.
#[test]
fn a_non_rotational_device_starts_from_its_own_reference_rate_and_raising_duration() {
    let mut bfq = Bfq::new();
    assert_eq!(bfq.peak.rate, 9333);
    assert_eq!(bfq.wr_duration(), Duration::from_millis(10_500));
    bfq.set_non_rotational(true);
    assert_eq!(bfq.peak.rate, 22_000);
    assert_eq!(bfq.wr_duration(), Duration::from_millis(3_750));
    bfq.set_non_rotational(false);
    assert_eq!(bfq.peak.rate, 9333);
    bfq.peak.updates = 1;
    bfq.peak.rate = 12_345;
    bfq.set_non_rotational(true);
    assert_eq!(bfq.peak.rate, 12_345);
}

// Proves the time charged for a slot too short to measure (under 1 ms) follows the device
// (`bfq_bfqq_is_slow`): `BFQ_MIN_TT` (2 ms) on a non-rotational one, a seek at the default
// `slice_idle` (8 ms) on a rotational one, whatever `slice_idle` is set to. Issue 25: ours
// charged 8 ms on the RAM-backed loop device, four times the kernel's price for each of the
// short slots of seeky readers, which charging by time turns into their share.
#[test]
fn a_short_slot_is_charged_two_ms_on_a_non_rotational_device() {
    for (non_rotational, expected_ms) in [(true, 2), (false, 8)] {
        let mut rig = Rig::new(&[("low_latency", 0), ("slice_idle", 3)]);
        rig.bfq.set_non_rotational(non_rotational);
        rig.insert(read(1, 0, 8));
        let Dispatch::Issue(_) = rig.dispatch() else { panic!("the read is served") };
        let queue = rig.bfq.in_service.expect("a queue in service");
        rig.now += Duration::from_micros(300);
        let (_, charged_ms) = rig.bfq.expire_is_slow(queue, false, rig.now);
        assert_eq!(charged_ms, expected_ms, "non_rotational={non_rotational}");
    }
}
