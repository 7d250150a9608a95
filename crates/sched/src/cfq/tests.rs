use elevator_core::{
    Completion, Ctx, Dispatch, Duration, Instant, IoPriority, MayQueue, Op, ProcessId, QueueConfig,
    Request, RequestId, RequestTable, Scheduler, Sector,
};

use super::process::Process;
use super::rr::{ListId, QueueIndex, RoundRobin};
use super::{Cfq, choose_first, max_async_requests, slice_jiffies};
use crate::SchedulerSpec;
use crate::testkit::{Harness, Issued, fixed_service, read, sync_write, with_priority, write};

fn harness(spec: &str) -> Harness {
    Harness::new(SchedulerSpec::parse(spec).unwrap().build(), QueueConfig::default())
        .with_service(fixed_service(Duration::from_millis(1)))
}

fn best_effort(level: u8) -> IoPriority {
    IoPriority::best_effort(level).unwrap()
}

/// A reader that always has one read outstanding: it issues the next read (64 sectors, 128
/// sectors further on, so that reads never merge) the moment the previous one completes, and
/// stops issuing once a completion comes at or after `stop`.
fn dependent_reader(
    h: &mut Harness,
    process: u32,
    priority: IoPriority,
    start: u64,
    stop: Instant,
) {
    streaming_reader(h, process, priority, start, 1, stop);
}

/// [`dependent_reader`] with `outstanding` reads in flight or queued at all times.
fn streaming_reader(
    h: &mut Harness,
    process: u32,
    priority: IoPriority,
    start: u64,
    outstanding: u64,
    stop: Instant,
) {
    for i in 0..outstanding {
        h.submit(with_priority(read(process, start + i * 128, 64), priority));
    }
    let mut next_sector = start + outstanding * 128;
    h.on_complete(move |done| {
        if done.process.0 != process || done.completed >= stop {
            return Vec::new();
        }
        let bio = with_priority(read(process, next_sector, 64), priority);
        next_sector += 128;
        vec![(done.completed, bio)]
    });
}

fn issued_by(h: &Harness, process: u32) -> Vec<Issued> {
    h.issued().iter().copied().filter(|issued| issued.process.0 == process).collect()
}

/// Consecutive runs of one process on the device: (process, first issue, requests).
fn turns(h: &Harness) -> Vec<(u32, Instant, usize)> {
    let mut turns: Vec<(u32, Instant, usize)> = Vec::new();
    for issued in h.issued() {
        match turns.last_mut() {
            Some(turn) if turn.0 == issued.process.0 => turn.2 += 1,
            _ => turns.push((issued.process.0, issued.at, 1)),
        }
    }
    turns
}

// Proves real-time goes first, both ways the issue asks: (1) with best-effort reads from two
// processes queued before them, all four real-time reads queued at the same moment are issued
// before any best-effort read; (2) a saturating real-time reader keeps the disk for as long as
// it reads (600 ms, several 100 ms slices): a best-effort reader that started with it gets
// nothing until the real-time reader's last completion, and is served right after it. And the
// 2.6.18 limit: (3) a real-time reader arriving while a best-effort slice runs waits for that
// slice to end (180 ms at level 0); real-time preemption came in 2.6.29.
#[test]
fn a_real_time_reader_is_always_served_before_best_effort_ones() {
    let mut h = harness("cfq");
    h.hold_device();
    for i in 0..4 {
        h.submit(with_priority(read(1, 500_000 + i * 128, 64), best_effort(0)));
        h.submit(with_priority(read(2, 900_000 + i * 128, 64), best_effort(4)));
    }
    for i in 0..4 {
        h.submit(with_priority(read(3, 100_000 + i * 128, 64), IoPriority::realtime(4).unwrap()));
    }
    h.release_device();
    h.run();
    let processes: Vec<u32> = h.issued().iter().map(|issued| issued.process.0).collect();
    assert_eq!(processes[..4], [3, 3, 3, 3], "{processes:?}");

    let mut h = harness("cfq");
    let stop = Instant::from_millis(600);
    h.hold_device();
    dependent_reader(&mut h, 2, best_effort(0), 900_000, Instant::from_millis(800));
    dependent_reader(&mut h, 1, IoPriority::realtime(4).unwrap(), 0, stop);
    h.release_device();
    h.run();
    let real_time = issued_by(&h, 1);
    let last_real_time = real_time.last().unwrap().done_at;
    assert!(last_real_time >= stop);
    assert!(h.counter("slices") >= 6, "several real-time slices went by");
    let best_effort_issued = issued_by(&h, 2);
    // The best-effort reader's first read was queued at t=0, before the real-time reader's.
    assert!(best_effort_issued.iter().all(|issued| issued.at >= last_real_time));
    // Served at the latest once the real-time queue's idle wait (8 ms) has run out.
    assert!(best_effort_issued[0].at <= last_real_time + Duration::from_millis(8));

    let mut h = harness("cfq");
    dependent_reader(&mut h, 2, best_effort(0), 900_000, Instant::from_millis(400));
    dependent_reader(&mut h, 1, IoPriority::realtime(4).unwrap(), 0, Instant::from_millis(400));
    h.run();
    assert_eq!(issued_by(&h, 1)[0].at, Instant::from_millis(181));
    assert_eq!(h.counter("preemptions"), 0);
}

// Proves the idle class and its 2.6.18 grace period: an idle-class reader whose read is queued
// at t=0 gets nothing while a best-effort reader is busy (300 ms), and its first read is issued
// exactly 100 ms (HZ/10) after the best-effort reader's last completion — not when the
// best-effort queue's 8 ms idle wait runs out — after which it reads on without further waits.
#[test]
fn an_idle_class_reader_waits_for_the_grace_period() {
    let mut h = harness("cfq");
    dependent_reader(&mut h, 1, best_effort(4), 0, Instant::from_millis(300));
    dependent_reader(&mut h, 2, IoPriority::idle(), 5_000_000, Instant::from_millis(600));
    h.run();
    let last_busy = issued_by(&h, 1).last().unwrap().done_at;
    let idle = issued_by(&h, 2);
    assert_eq!(idle[0].at, last_busy + Duration::from_millis(100));
    assert!(h.counter("idle_class_waits") >= 1);
    // Its own completions do not restart the grace period: one read per millisecond.
    assert_eq!(idle[1].at, idle[0].done_at);
    assert_eq!(idle.last().unwrap().at, Instant::from_millis(599));
}

// Proves the level-0 : level-7 share, and says what 2.6.18 makes of it. Two saturating
// sequential readers, best-effort 0 and 7, on a 1 ms-per-request disk for 3 s. Each turn is one
// slice: 181 ms for level 0 (180 ms, expired strictly after) and 41 ms for level 7, the 180:40
// of the slice formula. But the 2.6.18 level window refills the round from level 0 eight times
// for every time it reaches level 7 (`rr::tests`), so the turns go 8:1 and device time goes
// 8·180 : 40 = 36:1. Measured: 2918 ms : 83 ms = 35.2, within 10 % of 36 (and far from 4.5).
#[test]
fn levels_0_and_7_share_the_disk_by_slice_length_times_turns() {
    let mut h = harness("cfq");
    let stop = Instant::from_millis(3000);
    dependent_reader(&mut h, 1, best_effort(0), 0, stop);
    dependent_reader(&mut h, 2, best_effort(7), 10_000_000, stop);
    h.run();
    let turns = turns(&h);
    let level_0: Vec<usize> = turns.iter().filter(|t| t.0 == 1).map(|t| t.2).collect();
    let level_7: Vec<usize> = turns.iter().filter(|t| t.0 == 2).map(|t| t.2).collect();
    // Whole cycles: eight level-0 slices back to back, then one level-7 slice.
    assert_eq!(level_0[..2], [8 * 181, 8 * 181], "{turns:?}");
    assert_eq!(level_7[..2], [41, 41], "{turns:?}");
    let ratio = h.device_time(1).as_nanos() as f64 / h.device_time(2).as_nanos() as f64;
    assert!((ratio / 36.0 - 1.0).abs() < 0.10, "level 0 : level 7 = {ratio:.2}");
}

// Proves async queues are shared per priority: buffered writes from eight processes at the
// default priority (best-effort 4 through class none) land in one async queue, served as one
// ascending sweep across processes; writes at best-effort 0 get a second queue; and, as in
// 2.6.18, O_DIRECT (sync) writes are not sync to cfq: they join the shared queue too, and no
// process gets a sync queue.
#[test]
fn buffered_writes_share_one_async_queue_per_priority() {
    let mut h = harness("cfq");
    h.hold_device();
    for i in 0..16u64 {
        let process = 10 + (i % 8) as u32;
        h.submit(write(process, (i * 7919) % 64 * 1024, 8));
    }
    h.submit(sync_write(30, 70_000, 8));
    assert_eq!(h.counter("async_queues_created"), 1);
    h.submit(with_priority(write(20, 80_000, 8), best_effort(0)));
    h.submit(with_priority(write(21, 90_000, 8), best_effort(0)));
    assert_eq!(h.counter("async_queues_created"), 2);
    assert_eq!(h.counter("sync_queues_created"), 0);
    h.release_device();
    h.run();
    // Level 0 comes first in the level window; then the default queue is served as one
    // ascending sweep, whatever process wrote each request.
    let starts: Vec<u64> = h.issued().iter().map(|issued| issued.start).collect();
    assert_eq!(starts[..2], [80_000, 90_000]);
    assert!(starts[2..].windows(2).all(|pair| pair[0] < pair[1]), "{starts:?}");
    assert_eq!(starts.len(), 19);
}

// Proves slice_idle=0 turns idling off: two dependent readers make default cfq idle (it answers
// Idle after nearly every completion and times out when a reader stops), and with slice_idle=0
// the same script gets no Idle answer at all.
#[test]
fn slice_idle_0_never_idles() {
    let run = |spec: &str| {
        let mut h = harness(spec);
        dependent_reader(&mut h, 1, best_effort(4), 0, Instant::from_millis(200));
        dependent_reader(&mut h, 2, best_effort(4), 8_000_000, Instant::from_millis(300));
        h.run();
        h
    };
    let default = run("cfq");
    assert!(!default.idle_answers().is_empty());
    assert!(default.counter("idle_waits") > 0);
    let no_idle = run("cfq:slice_idle=0");
    assert_eq!(no_idle.idle_answers(), []);
    assert_eq!(no_idle.counter("idle_waits"), 0);
}

// Proves the slice formula of §5.2 with its integer math: sync 180..40 ms and async 72..16 ms
// over levels 0..7 from the default bases; and the collapse the spec warns of at HZ=100, where
// the async base is 4 jiffies, 4/5 is 0, and every level gets the base.
#[test]
fn slice_lengths_per_level() {
    let sync: Vec<u64> = (0..8).map(|level| slice_jiffies(100, level)).collect();
    assert_eq!(sync, [180, 160, 140, 120, 100, 80, 60, 40]);
    let asynchronous: Vec<u64> = (0..8).map(|level| slice_jiffies(40, level)).collect();
    assert_eq!(asynchronous, [72, 64, 56, 48, 40, 32, 24, 16]);
    assert_eq!(slice_jiffies(4, 0), 4, "4/5 is 0: every level gets the base");
    assert_eq!(slice_jiffies(1, 7), 1);
}

// Proves the async request cap 2·slice_async_rq·(8−level): 32..4 with the default 2; and that
// the cap ends an async slice in a run: a writer flood at best-effort 4 is served 16 requests
// per slice, so a reader queued behind it gets in after 16 writes, not after the whole flood.
#[test]
fn async_request_cap_per_level() {
    let caps: Vec<u64> = (0..8).map(|level| max_async_requests(2, level)).collect();
    assert_eq!(caps, [32, 28, 24, 20, 16, 12, 8, 4]);
    assert_eq!(max_async_requests(1, 7), 2);

    let mut h = harness("cfq");
    h.hold_device();
    for i in 0..64 {
        h.submit(write(1, i * 16, 8));
    }
    h.submit(read(2, 5_000_000, 8));
    h.release_device();
    h.run();
    let first_read = h.issued().iter().position(|issued| issued.op == Op::Read).unwrap();
    assert_eq!(first_read, 16);
    assert!(h.counter("async_cap_expiries") >= 1);
}

// Proves the request choice inside a queue (choose_req with back_seek_max and
// back_seek_penalty), head at sector 10 000: a read 40 sectors behind costs 80 and beats one
// 100 ahead; with penalty 3 it costs 120 and loses; with back_seek_max 16 KiB (32 sectors) it
// is out of reach ("wraps") and loses to anything in reach; of two out of reach the lower
// wins; equal costs go to the higher sector; sync beats async whatever the distance.
#[test]
fn choose_req_with_back_seek_max_and_penalty() {
    let head = Sector(10_000);
    let ahead = (Sector(10_100), true);
    let behind = (Sector(9_960), true);
    let default_back = 16 * 1024 * 2;
    assert!(!choose_first(head, default_back, 2, ahead, behind));
    assert!(choose_first(head, default_back, 2, behind, ahead));
    assert!(choose_first(head, default_back, 3, ahead, behind));
    assert!(choose_first(head, 32, 2, ahead, behind), "40 behind is past 16 KiB");
    assert!(!choose_first(head, 32, 2, (Sector(5), true), (Sector(20_000_000), true)));
    assert!(choose_first(head, 32, 2, (Sector(5), true), (Sector(100), true)), "both wrap");
    assert!(choose_first(head, default_back, 2, (Sector(10_080), true), (Sector(9_960), true)));
    assert!(!choose_first(head, default_back, 2, (Sector(10_001), false), (Sector(1), true)));
}

// Proves the level window of §5.5: with every best-effort level busy the refills visit
// 0 | 0 1 | 0 1 2 | ... | 0 1 ... 7 (36 turns, level k getting 8 − k) and start over; with only
// levels 0 and 7 busy they visit level 0 eight times, then level 7.
#[test]
fn the_level_window_visits_low_levels_more_often() {
    let visits = |busy: &[u8], count: usize| {
        let mut lists = RoundRobin::new();
        for (index, &level) in busy.iter().enumerate() {
            let queue = QueueIndex(index as u32);
            lists.ensure(queue);
            lists.push_back(ListId::Level(level), queue);
        }
        (0..count)
            .map(|_| {
                let level = lists.refill_current().unwrap();
                // The served queue goes back to its level list, as a slice end does.
                let queue = lists.front(ListId::Current).unwrap();
                lists.remove(queue);
                lists.push_back(ListId::Level(level), queue);
                level
            })
            .collect::<Vec<u8>>()
    };
    let all = visits(&[0, 1, 2, 3, 4, 5, 6, 7], 72);
    let expected: Vec<u8> = (0..8u8).flat_map(|end| 0..=end).collect();
    assert_eq!(all[..36], expected[..]);
    assert_eq!(all[36..], expected[..]);
    assert_eq!(visits(&[0, 7], 18), [0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
    let mut empty = RoundRobin::new();
    assert_eq!(empty.refill_current(), None);
}

/// Drives a bare `Cfq` through a request table, for tests that look at its state.
struct Bare {
    table: RequestTable,
    cfq: Cfq,
    now: Instant,
}

impl Bare {
    fn new(cfq: Cfq) -> Bare {
        Bare { table: RequestTable::with_capacity(64), cfq, now: Instant::ZERO }
    }

    fn cx(&self) -> Ctx<'_> {
        Ctx { now: self.now, requests: &self.table, in_flight: 0, depth: 1 }
    }

    fn insert(&mut self, bio: elevator_core::Bio) -> RequestId {
        let id = self.table.insert(Request::from_bio(&bio, self.now)).unwrap();
        let cx = Ctx { now: self.now, requests: &self.table, in_flight: 0, depth: 1 };
        self.cfq.insert(&cx, id);
        id
    }

    fn dispatch(&mut self) -> Dispatch {
        let cx = Ctx { now: self.now, requests: &self.table, in_flight: 0, depth: 1 };
        self.cfq.dispatch(&cx)
    }

    fn complete(&mut self, id: RequestId) {
        let cx = Ctx { now: self.now, requests: &self.table, in_flight: 0, depth: 1 };
        let done = Completion {
            id,
            issued_at: self.now,
            device_time: Duration::ZERO,
            total_time: Duration::ZERO,
        };
        self.cfq.complete(&cx, &done);
        self.table.remove(id);
    }
}

// Proves `quantum`: one dispatch round moves at most `quantum` requests of the active queue
// out (the first is handed out, the rest wait staged in sweep order).
#[test]
fn a_round_moves_quantum_requests() {
    for quantum in [4u64, 2, 1] {
        let mut cfq = Cfq::new();
        cfq.set_tunable("quantum", quantum as i64).unwrap();
        let mut bare = Bare::new(cfq);
        for i in 0..10 {
            bare.insert(read(1, 1000 + i * 128, 64));
        }
        assert!(matches!(bare.dispatch(), Dispatch::Issue(_)));
        assert_eq!(bare.cfq.staged.count() as u64, quantum - 1, "quantum {quantum}");
        assert_eq!(bare.cfq.queued(), 9);
    }
}

// Proves the idle wait and `may_queue`: after the active reader's only read completes, cfq
// idles 8 ms (Idle until t+8), votes Must once (and only once) for that reader's next
// allocation, and May for others; a read from it ends the wait at once; and when the timer runs
// out with another queue busy the slice ends and the other queue is served.
#[test]
fn the_idle_wait_and_may_queue() {
    let mut bare = Bare::new(Cfq::new());
    let first = bare.insert(read(1, 0, 8));
    let Dispatch::Issue(id) = bare.dispatch() else { panic!() };
    assert_eq!(id, first);
    bare.now = Instant::from_millis(1);
    bare.complete(id);
    bare.insert(read(2, 9_000_000, 8));
    assert_eq!(bare.dispatch(), Dispatch::Idle { until: Instant::from_millis(9) });
    let cx = bare.cx();
    assert_eq!(bare.cfq.may_queue(&cx, ProcessId(1), Op::Read), MayQueue::Must);
    assert_eq!(bare.cfq.may_queue(&cx, ProcessId(1), Op::Read), MayQueue::May);
    assert_eq!(bare.cfq.may_queue(&cx, ProcessId(2), Op::Read), MayQueue::May);
    // A call before the timer, with nothing new, keeps waiting.
    bare.now = Instant::from_millis(5);
    assert_eq!(bare.dispatch(), Dispatch::Idle { until: Instant::from_millis(9) });
    let next = bare.insert(read(1, 8, 8));
    assert_eq!(bare.dispatch(), Dispatch::Issue(next));
    bare.now = Instant::from_millis(6);
    bare.complete(next);
    assert_eq!(bare.dispatch(), Dispatch::Idle { until: Instant::from_millis(14) });
    bare.now = Instant::from_millis(14);
    let Dispatch::Issue(other) = bare.dispatch() else { panic!() };
    assert_eq!(bare.table[other].process, ProcessId(2));
}

// Proves the think-time and seek statistics of §4.4/§5.4 on a process's context: the fixed
// point gives the sample weights 32, 60, 84 (valid from the third), the think time is capped
// at 2·slice_idle, and a reader that thinks longer than slice_idle loses its idle window once
// the mean is valid — while a seeky process keeps it on a device without queuing.
#[test]
fn think_time_and_seek_statistics() {
    let mut process = Process::new(0);
    // Every sample is 100 ms, capped at 16; the kernel's rounding term (+128 on a weight still
    // well under 256) puts the mean above it at first.
    for (sample, now, mean) in [(1, 100u64, 20), (2, 200, 18), (3, 300, 17)] {
        process.update_think_time(now, 8);
        process.last_end_request_jiffies = now;
        assert_eq!(process.think_mean_jiffies(), mean, "sample {sample}");
        assert_eq!(process.idle_window(true, 8, false), sample < 3, "sample {sample}");
    }
    let mut seeker = Process::new(0);
    for i in 1..=4u64 {
        seeker.update_seek(Sector(i * 1_000_000));
        seeker.last_request_pos = Sector(i * 1_000_000 + 8);
    }
    assert!(seeker.seek_mean_sectors() > super::process::SEEKY_MEAN_SECTORS);
    assert!(seeker.is_seeky());
    // The caller's test on a queuing device (`hw_tag && CIC_SEEKY`).
    let seeky = seeker.seek_mean_sectors() > super::process::SEEKY_MEAN_SECTORS;
    assert!(seeker.idle_window(true, 8, false), "seeky, but the device does not queue");
    assert!(!seeker.idle_window(true, 8, seeky), "seeky on a queuing device");
}

// Proves hw_tag detection: more than four requests at the device at once marks the device as
// queuing, permanently; four never do.
#[test]
fn hw_tag_is_set_by_more_than_four_in_flight() {
    for (depth, tagged) in [(4, 0), (8, 1)] {
        let config = QueueConfig { depth, ..QueueConfig::default() };
        let mut h = Harness::new(SchedulerSpec::parse("cfq").unwrap().build(), config)
            .with_service(fixed_service(Duration::from_millis(1)));
        h.hold_device();
        for i in 0..8 {
            h.submit(read(1, i * 128, 64));
        }
        h.release_device();
        h.run();
        assert_eq!(h.counter("hw_tag"), tagged, "depth {depth}");
    }
}

// Proves the FIFO expiry: a reader keeps eight reads queued ahead of its upward sweep; a read
// of its own that arrives at 5 ms far behind the head (out of back_seek_max's reach) waits
// while the sweep goes on, and is moved out in the first dispatch round after it is more than
// fifo_expire_sync (125 ms) old, ahead of the sweep's next request. (Rounds come every fourth
// millisecond here, with quantum 4 on a 1 ms disk; this one runs at 133 ms, and the dispatch
// list sorts the low request behind the round's three above the head, so it reaches the
// device at 136 ms.)
#[test]
fn an_expired_fifo_head_goes_ahead_of_the_sweep() {
    let mut h = harness("cfq");
    streaming_reader(&mut h, 1, best_effort(4), 20_000_000, 8, Instant::from_millis(300));
    h.submit_at(Instant::from_millis(5), read(1, 10, 8));
    h.run();
    let position = h.issued().iter().position(|issued| issued.start == 10).unwrap();
    let served = h.issued()[position].at;
    // Rounds come every fourth request (quantum 4, one request per millisecond).
    assert_eq!(served, Instant::from_millis(136));
    assert!(h.issued()[..position].iter().all(|issued| issued.start >= 20_000_000));
    assert_eq!(h.counter("fifo_expiries"), 1);
}
