//! The blk-mq block-layer divergences of issue 25 (specs/modern-vs-kernel.md §2 rows 1–4,
//! 7–12, §6 probes P1–P4), each driven through a queue configured as the simulator configures
//! one for a blk-mq scheduler ([`BlkMqQueue`]), with a request sequence whose kernel outcome
//! was traced by hand from the function named in the test's comment.

use elevator_core::{
    Bio, BlkMqQueue, Duration, Instant, IoPriority, Op, PoolSplit, ProcessId, QueueConfig,
    Submitted, TickRate,
};
use elevator_sched::SchedulerSpec;
use elevator_sched::testkit::{Harness, fixed_service, read, with_priority, write};

/// The queue of a loop device under a blk-mq scheduler (§0: 2 × min(128, 128) = 256
/// scheduler tags, `max_sectors_kb` 1280), at `depth` driver tags.
fn loop_config(depth: u32) -> QueueConfig {
    QueueConfig {
        depth,
        nr_requests: 256,
        max_sectors_kb: 1280,
        pool_split: PoolSplit::Shared,
        blk_mq: Some(BlkMqQueue::new()),
        ..QueueConfig::default()
    }
}

fn harness(spec: &str, config: QueueConfig) -> Harness {
    Harness::new(SchedulerSpec::parse(spec).unwrap().build(), config)
}

const RT_READER: u32 = 1;
const BE_BACKLOG: u32 = 2;
const P1_SPAN: Instant = Instant::from_millis(100);

/// Probe P1: a real-time reader at iodepth 1 (200 µs service, 20 µs think time) beside 200
/// queued best-effort reads, device depth 2, for 100 ms. Returns (RT reads, BE reads) issued.
fn probe_p1(config: QueueConfig) -> (usize, usize) {
    let rt = IoPriority::realtime(4).unwrap();
    let mut h =
        harness("mq-deadline", config).with_service(fixed_service(Duration::from_micros(200)));
    let mut next_rt_sector = 1_000_000u64;
    h.on_complete(move |done| {
        if done.process != ProcessId(RT_READER) || done.completed >= P1_SPAN {
            return Vec::new();
        }
        next_rt_sector += 8;
        let at = done.completed + Duration::from_micros(20);
        vec![(at, with_priority(read(RT_READER, next_rt_sector, 8), rt))]
    });
    h.submit(with_priority(read(RT_READER, 1_000_000, 8), rt));
    for index in 0..200 {
        h.submit(read(BE_BACKLOG, index * 64, 8));
    }
    h.run_until(P1_SPAN);
    let issued_by =
        |process| h.issued().iter().filter(|issued| issued.process == ProcessId(process)).count();
    (issued_by(RT_READER), issued_by(BE_BACKLOG))
}

// Proves rows 1 and 11 (P1): on blk-mq a completion does not re-run the queue, so a best-effort
// read waiting behind real-time I/O goes out only when the 3 ms delayed run (one jiffy at
// 250 Hz: the next 4 ms tick) lands in the 20 µs gap between one RT completion and the next RT
// submission. At 250 Hz the tick's phase against the 220 µs RT cycle advances 40 µs a tick and
// hits the gap about once every 11 ticks: 25 ticks in 100 ms give two or three hits, each
// dispatching BE reads until the depth-2 device is full — the kernel's handful (6 here), not
// the whole backlog. The legacy request queue (a completion re-runs it) still drains the
// backlog, and the RT reader keeps its pace on blk-mq.
#[test]
fn p1_priority_wait_ends_at_a_tick_not_a_completion() {
    let (rt_blk_mq, be_blk_mq) = probe_p1(loop_config(2));
    assert!((2..=8).contains(&be_blk_mq), "blk-mq: {be_blk_mq} BE reads in 100 ms");
    let legacy = QueueConfig { blk_mq: None, ..loop_config(2) };
    let (rt_legacy, be_legacy) = probe_p1(legacy);
    assert_eq!(be_legacy, 200, "legacy queue: a completion re-asks the scheduler");
    // The RT reader runs at one read per 220 µs in both: ~455 in 100 ms.
    assert!(rt_blk_mq >= 440 && rt_legacy >= 370, "RT reads {rt_blk_mq} / {rt_legacy}");
}

// Proves the delayed run follows the host's tick rate: at 1000 Hz the 3 ms delay is 3 jiffies
// (`msecs_to_jiffies(3)`), and a pending delayed run is not pushed later by the RT reader's
// passes every 220 µs (`blk_mq_delay_run_hw_queues` leaves a pending delay untouched), so it
// fires every 3 ms: 33 runs in 100 ms whose phase against the 220 µs cycle advances 140 µs a
// time (period 11, one gap hit each), a handful of BE reads again.
#[test]
fn p1_delayed_run_follows_the_tick_rate() {
    let at_1000 = QueueConfig {
        blk_mq: Some(BlkMqQueue { tick_rate: TickRate::new(1000).unwrap() }),
        ..loop_config(2)
    };
    let blk_mq = BlkMqQueue { tick_rate: TickRate::new(1000).unwrap() };
    assert_eq!(blk_mq.delayed_run(Instant::from_nanos(1_500_000)), Instant::from_millis(4));
    assert_eq!(
        BlkMqQueue::new().delayed_run(Instant::from_nanos(1_500_000)),
        Instant::from_millis(4)
    );
    assert_eq!(BlkMqQueue::new().delayed_run(Instant::from_millis(4)), Instant::from_millis(8));
    let (_, be) = probe_p1(at_1000);
    assert!((1..=20).contains(&be), "1000 Hz: {be} BE reads in 100 ms");
}

/// Issue times of 136 writes queued at once under kyber on a 256-deep device whose requests
/// take 100 µs longer each than the one issued before (so they complete one at a time, in
/// issue order, every 100 µs).
fn kyber_write_flood(config: QueueConfig) -> Vec<Instant> {
    let mut service_us = 0u64;
    let mut h = harness("kyber", config).with_service(Box::new(move |_, _| {
        service_us += 100;
        Duration::from_micros(service_us)
    }));
    h.hold_device();
    for index in 0..136 {
        h.submit(write(1, index * 64, 8));
    }
    h.release_device();
    h.run();
    h.issued().iter().map(|issued| issued.at).collect()
}

// Proves row 2: kyber without a free token of a domain is re-run when `wake_batch` =
// clamp(depth/8, 1, 8) tokens of that domain have been freed (8 at the write domain's 128),
// not at every completion. Of 136 writes, 128 take every write token and 8 wait; the 8th
// completion (800 µs) wakes the queue and the 8 go out together, long before the 4 ms tick.
// On a legacy queue each completion lets one more go.
#[test]
fn kyber_token_wait_ends_after_a_wake_batch_of_frees() {
    let blk_mq = kyber_write_flood(loop_config(256));
    assert!(blk_mq[..128].iter().all(|&at| at == Instant::ZERO));
    assert_eq!(blk_mq[128..], [Instant::from_nanos(800_000); 8]);
    let legacy = kyber_write_flood(QueueConfig { blk_mq: None, ..loop_config(256) });
    let expected: Vec<Instant> = (1..=8).map(|k| Instant::from_nanos(k * 100_000)).collect();
    assert_eq!(legacy[128..], expected[..]);
}

/// An empty flush (fsync on a raw device) by `process`.
fn flush(process: u32) -> Bio {
    Bio { op: Op::Flush, sector_count: 0, ..write(process, 0, 8) }
}

/// Probe P4 under mq-deadline: a read at 0, writes at 9000, 3000, 7000 and 1000, then a flush,
/// all queued before the device (depth `depth`) takes anything. Returns (op, start, issue
/// time) in issue order.
fn probe_p4(config: QueueConfig) -> Vec<(Op, u64, Instant)> {
    let mut h = harness("mq-deadline", config);
    h.queue_all(&[
        read(1, 0, 8),
        write(2, 9000, 8),
        write(2, 3000, 8),
        write(2, 7000, 8),
        write(2, 1000, 8),
        flush(2),
    ]);
    h.issued().iter().map(|issued| (issued.op, issued.start, issued.at)).collect()
}

// Proves row 3 (P4): on blk-mq a flush bypasses the scheduler (`blk_insert_flush` →
// `blk_kick_flush` → `hctx->dispatch` at head): it goes out first, drains nothing, and does
// not stall dispatch — mq-deadline then serves its five requests in its own order from its
// starting state (last direction WRITE, batch 0: the write sweep from sector 0, then the read),
// the writes leaving at once beside the flush on a 4-deep device. The legacy queue keeps
// 2.6.18's drain: the scheduler's FIFO order, then the flush alone once all are done.
#[test]
fn p4_flush_bypasses_the_scheduler_on_blk_mq() {
    let blk_mq = probe_p4(loop_config(4));
    let order: Vec<_> = blk_mq.iter().map(|&(op, start, _)| (op, start)).collect();
    assert_eq!(
        order,
        [
            (Op::Flush, 0),
            (Op::Write, 1000),
            (Op::Write, 3000),
            (Op::Write, 7000),
            (Op::Write, 9000),
            (Op::Read, 0),
        ]
    );
    // The flush stalls nothing: three writes go out with it.
    assert!(blk_mq[..4].iter().all(|&(_, _, at)| at == Instant::ZERO), "{blk_mq:?}");
    let legacy = probe_p4(QueueConfig { blk_mq: None, ..loop_config(4) });
    let order: Vec<_> = legacy.iter().map(|&(op, start, _)| (op, start)).collect();
    assert_eq!(
        order,
        [
            (Op::Read, 0),
            (Op::Write, 9000),
            (Op::Write, 3000),
            (Op::Write, 7000),
            (Op::Write, 1000),
            (Op::Flush, 0),
        ]
    );
    // The legacy flush waits for every earlier request (1 ms each, four at a time).
    assert_eq!(legacy[5].2, Instant::from_millis(2));
}

/// Probe P3 under mq-deadline on a 1-deep device: a read at 0 goes out (a read batch starts),
/// then a write at 1000 and a read at 1000 are queued. Returns the starts and ops in issue
/// order.
fn probe_p3(config: QueueConfig) -> Vec<(Op, u64)> {
    let mut h = harness("mq-deadline", config);
    h.submit(read(1, 0, 8));
    h.submit(write(2, 1000, 8));
    h.submit(read(1, 1000, 8));
    h.run();
    h.issued().iter().map(|issued| (issued.op, issued.start)).collect()
}

// Proves row 4 (P3): blk-mq orders no overlapping requests (`blk_mq_submit_bio` inserts each at
// once), so the read at 1000 is in mq-deadline when the read at 0 completes and the running
// read batch takes it before the write it overlaps. The legacy queue holds the read out of the
// scheduler until the write completes.
#[test]
fn p3_overlapping_requests_are_not_held_on_blk_mq() {
    assert_eq!(probe_p3(loop_config(1)), [(Op::Read, 0), (Op::Read, 1000), (Op::Write, 1000)]);
    assert_eq!(
        probe_p3(QueueConfig { blk_mq: None, ..loop_config(1) }),
        [(Op::Read, 0), (Op::Write, 1000), (Op::Read, 1000)]
    );
}

// Proves row 9 (P2): on blk-mq a bio of class none takes its task's class at submission
// (`bio_set_ioprio`: best-effort at (nice + 20) / 5 = 4 at nice 0, 0x4004), so a default read
// and a contiguous read that asked for BE/4 explicitly carry equal priority values and merge
// (`blk_rq_merge_ok`); on a legacy queue the values differ (0 and 0x4004) and they stay
// apart. Two default bios at different nice values resolve to different levels and do not merge.
#[test]
fn p2_class_none_takes_the_tasks_best_effort_level_and_merges() {
    let be4 = IoPriority::best_effort(4).unwrap();
    let outcomes = |config: QueueConfig, second: Bio| {
        let mut h = harness("mq-deadline", config);
        h.hold_device();
        let first = h.submit(read(1, 1000, 8));
        (first, h.submit(second))
    };
    let (first, second) = outcomes(loop_config(1), with_priority(read(1, 1008, 8), be4));
    let Submitted::Queued { request } = first else { panic!("{first:?}") };
    assert_eq!(second, Submitted::Merged { into: request });
    let (_, second) = outcomes(
        QueueConfig { blk_mq: None, ..loop_config(1) },
        with_priority(read(1, 1008, 8), be4),
    );
    assert!(matches!(second, Submitted::Queued { .. }), "legacy: {second:?}");
    let nice_10 = IoPriority::from_nice(10).unwrap();
    let (_, second) = outcomes(loop_config(1), with_priority(read(1, 1008, 8), nice_10));
    assert!(matches!(second, Submitted::Queued { .. }), "nice 10 beside nice 0: {second:?}");
}

/// How many of `writes` async writes and then 8 reads a mq-deadline queue takes before the
/// first is issued, with `nr_requests` scheduler tags: (writes taken, reads taken).
fn tags_taken(spec: &str, nr_requests: u32, writes: u64) -> (usize, usize) {
    let config = QueueConfig { nr_requests, ..loop_config(128) };
    let mut h = harness(spec, config);
    h.hold_device();
    let taken = |outcome: Submitted| usize::from(!matches!(outcome, Submitted::Blocked));
    let writes_taken: usize =
        (0..writes).map(|index| taken(h.submit(write(1, index * 64, 8)))).sum();
    let reads_taken: usize =
        (0..8).map(|index| taken(h.submit(read(2, 10_000_000 + index * 64, 8)))).sum();
    (writes_taken, reads_taken)
}

// Proves row 8: a blk-mq queue has one pool of nr_requests scheduler tags for reads and writes,
// and mq-deadline's async_depth follows nr_requests (`dd_depth_updated`): of 300 writes on a
// 256-tag queue, 256 are taken (not 128, the old fixed async_depth) and then no read finds a
// tag either; with 264 tags the 8 reads fit beside the 256 writes the tags allow.
#[test]
fn mq_deadline_async_depth_is_nr_requests_in_one_shared_pool() {
    assert_eq!(tags_taken("mq-deadline", 256, 300), (256, 0));
    assert_eq!(tags_taken("mq-deadline", 264, 300), (264, 0));
    assert_eq!(tags_taken("mq-deadline", 264, 256), (256, 8));
    // An async_depth set as a tunable is kept when the queue attaches the scheduler.
    assert_eq!(tags_taken("mq-deadline:async_depth=64", 256, 300), (64, 8));
}

// Proves row 12 as of 6.18.26+ (the version kyber.rs states it follows): every non-read
// request is limited to nr_requests × 75 / 100 scheduler tags (192 of 256), and reads still
// find the tags left.
#[test]
fn kyber_limits_non_reads_to_three_quarters_of_nr_requests() {
    assert_eq!(tags_taken("kyber", 256, 300), (192, 8));
    assert_eq!(tags_taken("kyber", 128, 300), (96, 8));
}

// Proves row 7: mq-deadline's aged pass runs before `prio_aging_expire` has passed since time
// zero (the kernel's jiffies never make its cut-off fail). With a real-time read at 100 and
// write at 200 and a best-effort read at 5000 queued, the first dispatch's aged pass finds no
// best-effort write to continue the starting WRITE batch with, so it starts a READ batch for
// that level (`last_dir` = READ) before refusing the too-young read; the real-time level then
// continues that READ batch: R100, W200, then the best-effort read. Skipping the pass would
// have kept the starting WRITE direction and issued W200 first.
#[test]
fn aged_pass_runs_from_time_zero_and_moves_the_batch_direction() {
    let rt = IoPriority::realtime(0).unwrap();
    let mut h = harness("mq-deadline", loop_config(1));
    h.queue_all(&[
        with_priority(read(1, 100, 8), rt),
        with_priority(write(1, 200, 8), rt),
        read(2, 5000, 8),
    ]);
    let order: Vec<_> = h.issued().iter().map(|issued| (issued.op, issued.start)).collect();
    assert_eq!(order, [(Op::Read, 100), (Op::Write, 200), (Op::Read, 5000)]);
}

// Proves row 19: on a blk-mq host mq-deadline stores its times in jiffies (`STORE_JIFFIES`,
// `msecs_to_jiffies` rounding up): at 250 Hz `read_expire=10` reads back 12 and 500 stays 500;
// at 1000 Hz 10 stays 10; on a legacy queue values are exact.
#[test]
fn mq_deadline_times_read_back_in_whole_jiffies() {
    let read_back = |config: QueueConfig, spec: &str, name: &str| {
        harness(spec, config).queue().scheduler().tunable(name).unwrap()
    };
    let spec = "mq-deadline:read_expire=10,write_expire=5001,prio_aging_expire=10";
    assert_eq!(read_back(loop_config(1), spec, "read_expire"), 12);
    assert_eq!(read_back(loop_config(1), spec, "write_expire"), 5004);
    assert_eq!(read_back(loop_config(1), spec, "prio_aging_expire"), 12);
    assert_eq!(read_back(loop_config(1), "mq-deadline", "read_expire"), 500);
    let at_1000 = QueueConfig {
        blk_mq: Some(BlkMqQueue { tick_rate: TickRate::new(1000).unwrap() }),
        ..loop_config(1)
    };
    assert_eq!(read_back(at_1000, spec, "read_expire"), 10);
    assert_eq!(read_back(QueueConfig { blk_mq: None, ..loop_config(1) }, spec, "read_expire"), 10);
    // A value set after the attach is stored in jiffies too.
    let mut h = harness("mq-deadline", loop_config(1));
    h.queue_mut().scheduler_mut().set_tunable("read_expire", 6).unwrap();
    assert_eq!(h.queue().scheduler().tunable("read_expire").unwrap(), 8);
}

// Proves row 11: at 250 Hz a read's deadline passes at its insertion tick plus 125 jiffies,
// so a read inserted 1.5 ms into a tick is expired 498.5 ms later (at the 500 ms tick), where
// exact time would need 500 ms. Setup: with `fifo_batch=1`, a read at 2000 occupies the device
// until 500 ms, then a read at 0 and one at 3000 are queued; at 500 ms the next batch starts at
// the FIFO head (0) only if its deadline has passed, else the sweep continues above 2000.
#[test]
fn mq_deadline_deadlines_pass_on_ticks() {
    let issued_at_500ms = |config: QueueConfig| {
        let mut h = harness("mq-deadline:fifo_batch=1", config)
            .with_service(fixed_service(Duration::from_millis(499)));
        // A read at 2000 occupies the device from 1 ms to 500 ms and moves the sweep past 0.
        h.submit_at(Instant::from_millis(1), read(1, 2000, 8));
        // The read at 0 arrives after the one at 2000 went out, in the same 4 ms tick.
        h.submit_at(Instant::from_nanos(1_500_000), read(2, 0, 8));
        h.submit_at(Instant::from_millis(2), read(3, 3000, 8));
        h.run();
        h.issued().iter().map(|issued| issued.start).collect::<Vec<_>>()
    };
    // Ticks: the read at 0 (inserted in the tick starting at 0 ms) expires at 500 ms and goes
    // first when the device frees at 500 ms.
    assert_eq!(issued_at_500ms(loop_config(1)), [2000, 0, 3000]);
    // Exact time (legacy queue): it expires at 501 ms, so the sweep's 3000 goes first.
    assert_eq!(issued_at_500ms(QueueConfig { blk_mq: None, ..loop_config(1) }), [2000, 3000, 0]);
}

/// Two processes' seeky reads under bfq on a blk-mq queue whose device is `rotational` or
/// not: process 1 queues reads at 1M and 3M sectors, process 2 at 2M and 4M one millisecond
/// later, with the device held until all four are queued. Returns the processes in the order
/// bfq issued them.
fn bfq_two_jobs(rotational: bool) -> Vec<u32> {
    let config = QueueConfig { rotational, ..loop_config(1) };
    let mut h = harness("bfq", config).with_service(fixed_service(Duration::from_millis(1)));
    h.hold_device();
    h.submit(read(1, 1_000_000, 8));
    h.submit(read(1, 3_000_000, 8));
    h.advance_to(Instant::from_millis(1));
    h.submit(read(2, 2_000_000, 8));
    h.submit(read(2, 4_000_000, 8));
    h.release_device();
    h.run();
    h.issued().iter().map(|issued| issued.process.0).collect()
}

// Proves the queue tells the scheduler its device's rotational flag at attach
// (`QueueConfig::rotational` → `Scheduler::set_rotational`, as bfq reads `blk_queue_nonrot`
// in `bfq_init_queue`): on a non-rotational device bfq merges the queues of two processes
// created within its burst interval and serves their reads in sector order (1, 2, 1, 2); on a
// rotational one each keeps its own raised queue, served to the end first (1, 1, 2, 2). A queue
// that dropped the flag would give the rotational order for both.
#[test]
fn bfq_learns_the_devices_rotational_flag_from_the_queue() {
    assert_eq!(bfq_two_jobs(false), [1, 2, 1, 2]);
    assert_eq!(bfq_two_jobs(true), [1, 1, 2, 2]);
}
