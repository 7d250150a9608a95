//! The shared block layer: request pool and wake-ups, scheduler switching, merge size limits,
//! plugging, flush ordering, overlap ordering and requeue, driven through real schedulers.

use elevator_core::check::check_queue;
use elevator_core::{
    Bio, BioTag, BlockQueue, Duration, Instant, KernelVersion, Op, ProcessId, Pull, QueueConfig,
    RequestFlags, Sector, SubmitError, Submitted,
};
use elevator_sched::SchedulerKind;
use elevator_sched::testkit::{Harness, read, write};

const T0: Instant = Instant::ZERO;

fn queue(kind: SchedulerKind, config: QueueConfig) -> BlockQueue {
    BlockQueue::new(config, kind.build()).unwrap()
}

fn tagged(mut bio: Bio, tag: u64) -> Bio {
    bio.tag = BioTag(tag);
    bio
}

/// Issues the next request and completes it at `now`; returns the woken processes.
fn serve_one(queue: &mut BlockQueue, now: Instant) -> Vec<ProcessId> {
    let Pull::Issue(id) = queue.next_request(now) else { panic!("nothing to serve") };
    queue.complete(now, id, &mut Vec::new());
    check_queue(queue).unwrap();
    std::iter::from_fn(|| queue.pop_woken()).collect()
}

// Proves the pool limit and the wake-up: with nr_requests=4 the first process to fill the write
// pool becomes a batcher and may allocate up to the hard cap (6), then blocks; a second process
// blocks at once; reads have their own pool. Freed requests wake the waiters one at a time, in
// the order they blocked, once the count is back under nr_requests.
#[test]
fn blocking_at_nr_requests_and_the_wake_up() {
    let mut q =
        queue(SchedulerKind::Noop, QueueConfig { nr_requests: 4, ..QueueConfig::default() });
    for i in 0..6 {
        let outcome = q.submit(T0, tagged(write(1, i * 100, 8), i)).unwrap();
        assert!(matches!(outcome, Submitted::Queued { .. }), "write {i}: {outcome:?}");
    }
    assert!(q.is_direction_congested(elevator_core::Direction::Write));
    assert_eq!(q.submit(T0, tagged(write(1, 600, 8), 6)).unwrap(), Submitted::Blocked);
    assert_eq!(q.submit(T0, tagged(write(2, 700, 8), 7)).unwrap(), Submitted::Blocked);
    assert!(matches!(q.submit(T0, tagged(read(3, 900, 8), 8)).unwrap(), Submitted::Queued { .. }));
    assert_eq!(q.pop_woken(), None);
    check_queue(&q).unwrap();

    let now = Instant::from_millis(1);
    // 6 -> 5 -> 4: still at least nr_requests, nobody wakes.
    assert_eq!(serve_one(&mut q, now), []);
    assert_eq!(serve_one(&mut q, now), []);
    // 4 -> 3: room under nr_requests: the first waiter goes on.
    assert_eq!(serve_one(&mut q, now), [ProcessId(1)]);
    assert_eq!(serve_one(&mut q, now), [ProcessId(2)]);
    assert!(!q.is_direction_congested(elevator_core::Direction::Write));
}

// Proves that a blocked process, once woken, gets its bio in, and every bio completes.
#[test]
fn blocked_issuers_resume_and_nothing_is_lost() {
    let config = QueueConfig { nr_requests: 4, ..QueueConfig::default() };
    let mut h = Harness::new(SchedulerKind::Deadline.build(), config);
    h.hold_device();
    for process in 1..=3 {
        for i in 0..10 {
            h.submit(write(process, u64::from(process) * 1_000_000 + i * 64, 8));
        }
    }
    assert!(h.queue().stats(h.now()).blocked > 0);
    h.release_device();
    h.run();
    assert_eq!(h.completed_bios(), 30);
}

// Proves switching with 100 queued requests loses none, in every direction between the
// registered schedulers, including switching back mid-run with requests in flight.
#[test]
fn switching_scheduler_with_100_queued_loses_none() {
    for &from in SchedulerKind::ALL {
        for &to in SchedulerKind::ALL {
            let config = QueueConfig { depth: 4, ..QueueConfig::default() };
            let mut h = Harness::new(from.build(), config);
            h.hold_device();
            for i in 0..100u64 {
                let bio = if i % 3 == 0 { write(1, i * 4096, 8) } else { read(2, i * 4096, 8) };
                h.submit(bio);
            }
            assert_eq!(h.queue().queued(), 100);
            h.switch_scheduler(to.build());
            // 2.6.18's `elevator_switch` drains the old scheduler onto the dispatch list
            // (issue 28 row 16): the new one holds nothing until those requests are done.
            assert_eq!(h.queue().queued(), 0, "{from} -> {to}");
            assert_eq!(h.queue().dispatch_count(), 100, "{from} -> {to}");
            assert!(h.queue().is_switching());
            assert_eq!(h.queue().scheduler().name(), to.name());
            h.release_device();
            h.run_until(Instant::from_millis(10));
            assert!(h.queue().in_flight() > 0);
            h.switch_scheduler(from.build());
            h.run();
            assert_eq!(h.completed_bios(), 100, "{from} -> {to}");
            let stats = h.queue().stats(h.now());
            assert_eq!(stats.switches, 2);
            assert_eq!(stats.completed, 100);
        }
    }
}

// Proves max_sectors_kb bounds merging: sequential 4 KiB bios build requests of exactly
// max_sectors, and a bio larger than the limit is refused with the limit in the message.
#[test]
fn merges_stop_at_max_sectors_kb() {
    let config = QueueConfig { max_sectors_kb: 64, ..QueueConfig::default() };
    let mut h = Harness::new(SchedulerKind::Deadline.build(), config.clone());
    h.hold_device();
    for i in 0..40 {
        h.submit(read(1, i * 8, 8));
    }
    h.release_device();
    h.run();
    assert_eq!(h.issued_extents(), [(0, 128), (128, 128), (256, 64)]);

    let mut q = queue(SchedulerKind::Deadline, config);
    let error = q.submit(T0, read(1, 0, 129)).unwrap_err();
    assert_eq!(error, SubmitError::TooLarge { sector_count: 129, max_sectors: 128 });
    assert!(error.to_string().contains("max_sectors_kb"));
}

// Proves a request that once refused a merge for size takes no more merges (the kernel's
// no-merge mark), even a bio that would fit.
#[test]
fn a_request_that_refused_a_merge_for_size_takes_no_more() {
    let config = QueueConfig { max_sectors_kb: 8, ..QueueConfig::default() };
    let mut q = queue(SchedulerKind::Deadline, config);
    q.submit(T0, read(1, 100, 12)).unwrap();
    // 12 + 8 sectors exceed the 16-sector limit: refused, and 100..112 is marked.
    assert!(matches!(q.submit(T0, read(1, 112, 8)).unwrap(), Submitted::Queued { .. }));
    // 4 sectors in front would fit (16), but the marked request takes no more merges.
    assert!(matches!(q.submit(T0, read(2, 96, 4)).unwrap(), Submitted::Queued { .. }));
    // An unmarked request still merges.
    assert!(matches!(q.submit(T0, read(1, 120, 4)).unwrap(), Submitted::Merged { .. }));
    check_queue(&q).unwrap();
}

// Proves plugging: off by default; when on, a request into an empty queue plugs it for 3 ms so
// async bios can merge; the plug lifts at 4 pending requests, at once for a sync bio, and when
// 3 ms have passed.
#[test]
fn plugging() {
    let mut unplugged = queue(SchedulerKind::Noop, QueueConfig::default());
    unplugged.submit(T0, write(1, 0, 8)).unwrap();
    assert!(matches!(unplugged.next_request(T0), Pull::Issue(_)));

    let config = QueueConfig { plugging: true, ..QueueConfig::default() };
    let mut q = queue(SchedulerKind::Noop, config.clone());
    q.submit(T0, write(1, 0, 8)).unwrap();
    assert_eq!(q.next_request(T0), Pull::Plugged { until: Instant::from_millis(3) });
    assert!(matches!(q.submit(T0, write(1, 8, 8)).unwrap(), Submitted::Merged { .. }));
    assert!(matches!(q.next_request(Instant::from_millis(2)), Pull::Plugged { .. }));
    assert!(matches!(q.next_request(Instant::from_millis(3)), Pull::Issue(_)));

    let mut threshold = queue(SchedulerKind::Noop, config.clone());
    for i in 0..3 {
        threshold.submit(T0, write(1, i * 100, 8)).unwrap();
        assert!(threshold.is_plugged(T0));
    }
    threshold.submit(T0, write(1, 300, 8)).unwrap();
    assert!(!threshold.is_plugged(T0), "4 pending requests unplug");

    let mut sync = queue(SchedulerKind::Noop, config);
    sync.submit(T0, write(1, 0, 8)).unwrap();
    assert!(sync.is_plugged(T0));
    sync.submit(T0, read(2, 500, 8)).unwrap();
    assert!(!sync.is_plugged(T0), "a sync bio unplugs");
    assert_eq!(sync.stats(T0).plugs, 1);
}

// Proves the unplug test follows the kernel release (host-mechanisms.md §2.1): an insertion
// that finds at least 4 requests allocated and not at the device unplugs in 2.6.18; in 2.6.9
// only one that makes exactly 4 does, so a plug set with more already pending (here: writes
// held behind an overlapping write at the device) stays until its timer.
#[test]
fn the_unplug_threshold_test_follows_the_kernel() {
    for (kernel, unplugs) in
        [(KernelVersion::Linux2_6_18, true), (KernelVersion::Linux2_6_9, false)]
    {
        let config = QueueConfig { plugging: true, depth: 8, kernel, ..QueueConfig::default() };
        let mut q = queue(SchedulerKind::Noop, config);
        q.submit(T0, write(1, 0, 8)).unwrap();
        q.unplug();
        assert!(matches!(q.next_request(T0), Pull::Issue(_)));
        // Four writes of the same sectors wait outside the scheduler for the one at the
        // device: allocated, pending, but no insertion into the scheduler.
        for process in 2..6 {
            q.submit(T0, write(process, 0, 8)).unwrap();
        }
        assert!(!q.is_plugged(T0));
        // A write elsewhere finds the scheduler empty and plugs; it makes 5 pending.
        q.submit(T0, write(9, 10_000, 8)).unwrap();
        assert_eq!(q.stats(T0).plugs, 2, "{kernel}: the first write's plug, then this one");
        assert_eq!(!q.is_plugged(T0), unplugs, "{kernel}: 5 pending at the insertion");
        check_queue(&q).unwrap();
    }
}

// Proves which bios lift a plug at once: a sync write (2.6.18's `WRITE_SYNC`) always; a read
// only when the queue is told reads unplug (the live engine), not in the simulator, whose
// runner unplugs when the reading process waits, as the kernel's reader does.
#[test]
fn sync_writes_unplug_and_reads_unplug_only_when_configured() {
    let base = QueueConfig { plugging: true, ..QueueConfig::default() };
    let sync_write = Bio { flags: RequestFlags::SYNC, ..write(2, 500, 8) };
    let mut q = queue(SchedulerKind::Noop, base.clone());
    q.submit(T0, write(1, 0, 8)).unwrap();
    q.submit(T0, sync_write).unwrap();
    assert!(!q.is_plugged(T0), "a sync write unplugs");

    let waits = QueueConfig { reads_unplug: false, ..base };
    let mut q = queue(SchedulerKind::Noop, waits);
    q.submit(T0, write(1, 0, 8)).unwrap();
    q.submit(T0, read(2, 500, 8)).unwrap();
    assert!(q.is_plugged(T0), "a read leaves the plug to its waiting process");
    q.submit(T0, sync_write).unwrap();
    assert!(!q.is_plugged(T0));
}

// Proves a flush is an ordering point: everything submitted before it completes before it is
// issued, and nothing submitted after it is issued before it completes.
#[test]
fn a_flush_orders_everything_around_it() {
    for &kind in SchedulerKind::ALL {
        let config = QueueConfig { depth: 4, ..QueueConfig::default() };
        let mut h = Harness::new(kind.build(), config);
        h.hold_device();
        for i in 0..6 {
            h.submit(write(1, 10_000 + i * 100, 8));
        }
        let flush = Bio {
            op: Op::Flush,
            start: Sector(0),
            sector_count: 0,
            flags: RequestFlags::SYNC,
            ..write(1, 0, 8)
        };
        h.submit(flush);
        for i in 0..6 {
            h.submit(write(2, i * 100, 8));
            h.submit(read(3, 50_000 + i * 100, 8));
        }
        h.release_device();
        h.run();
        let issued = h.issued();
        let flush_at = issued.iter().position(|i| i.op == Op::Flush).unwrap();
        let flush = issued[flush_at];
        assert_eq!(flush_at, 6, "{kind}: the six earlier writes go first");
        for before in &issued[..flush_at] {
            assert!(before.done_at <= flush.at, "{kind}: {before:?} not done before the flush");
        }
        for after in &issued[flush_at + 1..] {
            assert!(after.at >= flush.done_at, "{kind}: {after:?} issued before the flush ended");
        }
    }
}

// Proves overlap ordering: a read of sectors an in-flight write covers waits for the write,
// while a read elsewhere goes ahead at once.
#[test]
fn a_read_overlapping_an_outstanding_write_waits_for_it() {
    let config = QueueConfig { depth: 4, ..QueueConfig::default() };
    let mut h = Harness::new(SchedulerKind::Noop.build(), config)
        .with_service(elevator_sched::testkit::fixed_service(Duration::from_millis(5)));
    h.submit(write(1, 100, 16));
    h.submit(read(2, 108, 8));
    h.submit(read(3, 5000, 8));
    assert_eq!(h.queue().held_count(), 1);
    h.run();
    let read_at = |start| h.issued().iter().find(|i| i.start == start).unwrap().at;
    assert_eq!(read_at(5000), Instant::ZERO);
    assert_eq!(read_at(108), Instant::from_millis(5));
}

// Proves requeue: a request the device hands back is the next one issued, ahead of anything
// the scheduler would choose.
#[test]
fn a_requeued_request_goes_first() {
    let mut q = queue(SchedulerKind::Deadline, QueueConfig::default());
    q.submit(T0, read(1, 100, 8)).unwrap();
    let Pull::Issue(first) = q.next_request(T0) else { panic!() };
    q.submit(T0, read(2, 0, 8)).unwrap();
    q.requeue(T0, first);
    check_queue(&q).unwrap();
    assert_eq!(q.next_request(T0), Pull::Issue(first));
    assert_eq!(q.stats(T0).requeued, 1);
}

// Proves bad bios are refused with a reason, never queued.
#[test]
fn bad_bios_are_refused() {
    let mut q = queue(SchedulerKind::Noop, QueueConfig::default());
    assert!(matches!(q.submit(T0, read(1, 0, 0)), Err(SubmitError::Empty { .. })));
    let flush_with_data = Bio { op: Op::Flush, ..write(1, 0, 8) };
    assert!(matches!(q.submit(T0, flush_with_data), Err(SubmitError::FlushWithData { .. })));
    assert!(matches!(q.submit(T0, read(1, u64::MAX - 4, 8)), Err(SubmitError::Overflow { .. })));
    assert_eq!(q.outstanding(), 0);
}

// Proves the bio bound is an error, not a stall.
#[test]
fn the_bio_bound_is_reported() {
    let config = QueueConfig { max_bios: 2, ..QueueConfig::default() };
    let mut q = queue(SchedulerKind::Noop, config);
    q.submit(T0, read(1, 0, 8)).unwrap();
    q.submit(T0, read(1, 8, 8)).unwrap();
    assert_eq!(q.submit(T0, read(1, 16, 8)), Err(SubmitError::TooManyBios { limit: 2 }));
}

// Proves nr_requests can change at run time, growing the table without losing requests.
#[test]
fn nr_requests_can_grow_at_run_time() {
    let mut q =
        queue(SchedulerKind::Deadline, QueueConfig { nr_requests: 4, ..Default::default() });
    for i in 0..6 {
        q.submit(T0, write(1, i * 100, 8)).unwrap();
    }
    q.set_nr_requests(512).unwrap();
    for i in 6..300 {
        assert!(matches!(q.submit(T0, write(1, i * 100, 8)).unwrap(), Submitted::Queued { .. }));
    }
    check_queue(&q).unwrap();
    assert!(q.set_nr_requests(3).is_err());
}

// Proves forced dispatch (`drain_scheduler`, the kernel's `elv_drain_elevator`): under every
// scheduler, with reads of two processes queued and the scheduler idling (or ready to), one
// call moves everything the scheduler holds onto the dispatch list, and the queue then issues
// each of them without another Idle answer — what a stopping run needs, whatever slice_idle
// or antic_expire says (issue 14: a live run with cfq:slice_idle=10s ran 9 s past its end).
#[test]
fn forced_dispatch_issues_everything_without_idling() {
    for &kind in SchedulerKind::ALL {
        let mut q = queue(kind, QueueConfig::default());
        // Process 1 reads sequentially (idling is worth it); process 2 waits behind it.
        q.submit(T0, tagged(read(1, 0, 8), 1)).unwrap();
        let Pull::Issue(first) = q.next_request(T0) else { panic!("{kind}: nothing issued") };
        for i in 0..4 {
            q.submit(T0, tagged(read(2, 1_000_000 + i * 100_000, 8), 10 + i)).unwrap();
        }
        let now = Instant::from_nanos(100_000);
        q.complete(now, first, &mut Vec::new());
        let moved = q.drain_scheduler(now);
        assert_eq!(moved, 4, "{kind}");
        assert_eq!(q.queued(), 0, "{kind}");
        check_queue(&q).unwrap();
        for i in 0..4 {
            let Pull::Issue(id) = q.next_request(now) else {
                panic!("{kind}: request {i} was not issued after forced dispatch");
            };
            q.complete(now, id, &mut Vec::new());
        }
        assert_eq!(q.next_request(now), Pull::Empty, "{kind}");
        check_queue(&q).unwrap();
    }
}

// Proves passthrough commands (fio's sg, io_uring_cmd, xnvme engines) bypass the elevator:
// deadline sorts four queued reads submitted at sectors 1000, 4000, 2000, 3000 into sector
// order, but the same reads flagged `RequestFlags::PASSTHROUGH` are issued as submitted, and
// two adjacent passthrough bios are not merged into one request.
#[test]
fn passthrough_bypasses_the_scheduler() {
    let order = |flags: RequestFlags| {
        let mut q = queue(SchedulerKind::Deadline, QueueConfig::default());
        for (tag, start) in [1000, 4000, 2000, 3000].into_iter().enumerate() {
            let bio = tagged(read(1, start, 8), tag as u64).with_flags(flags);
            assert!(matches!(q.submit(T0, bio).unwrap(), Submitted::Queued { .. }));
        }
        check_queue(&q).unwrap();
        let mut starts = Vec::new();
        let now = Instant::from_millis(10);
        while let Pull::Issue(id) = q.next_request(now) {
            starts.push(q.request(id).unwrap().start.0);
            q.complete(now, id, &mut Vec::new());
            check_queue(&q).unwrap();
        }
        starts
    };
    assert_eq!(order(RequestFlags::SYNC), [1000, 2000, 3000, 4000], "deadline sorts");
    let passthrough = RequestFlags::SYNC.union(RequestFlags::PASSTHROUGH);
    assert_eq!(order(passthrough), [1000, 4000, 2000, 3000], "passthrough keeps its order");

    let mut q = queue(SchedulerKind::Deadline, QueueConfig::default());
    for (tag, start) in [0, 8].into_iter().enumerate() {
        let bio = tagged(write(1, start, 8), tag as u64).with_flags(passthrough);
        assert!(matches!(q.submit(T0, bio).unwrap(), Submitted::Queued { .. }), "no merge");
    }
}

// Proves the zone write ordering of a zoned queue (`QueueConfig::zones`): under every blk-mq
// scheduler, writes to one sequential zone go to the device one at a time, in the order they
// were submitted (the write pointer's order, even from two processes that bfq or kyber would
// otherwise reorder), while a write to another zone, a conventional-zone write and a read go
// out at once.
#[test]
fn a_zoned_queue_keeps_one_write_per_zone_in_flight() {
    let zones =
        elevator_core::ZoneWriteOrder { zone_size_sectors: 1024, conventional_sectors: 1024 };
    for kind in
        [SchedulerKind::MqDeadline, SchedulerKind::Bfq, SchedulerKind::Kyber, SchedulerKind::None]
    {
        let config = QueueConfig { depth: 8, zones: Some(zones), ..QueueConfig::default() };
        let mut h = Harness::new(kind.build(), config)
            .with_service(elevator_sched::testkit::fixed_service(Duration::from_millis(5)));
        // Zone 1 (sectors 1024..2048), written at its pointer by two processes in turn.
        for (index, process) in [1, 2, 1, 2].into_iter().enumerate() {
            h.submit(write(process, 1024 + index as u64 * 64, 64));
        }
        h.submit(write(3, 2048, 64));
        h.submit(write(4, 100, 8));
        h.submit(write(4, 300, 8));
        h.submit(read(5, 1900, 8));
        h.run();
        let issued = h.issued();
        let zone_one: Vec<_> = issued
            .iter()
            .filter(|i| i.op == Op::Write && (1024..2048).contains(&i.start))
            .collect();
        assert_eq!(
            zone_one.iter().map(|i| i.start).collect::<Vec<_>>(),
            vec![1024, 1088, 1152, 1216],
            "{kind}: write-pointer order"
        );
        for pair in zone_one.windows(2) {
            assert!(pair[1].at >= pair[0].done_at, "{kind}: two writes of zone 1 in flight");
        }
        for start in [2048, 100, 300, 1900] {
            let at = issued.iter().find(|i| i.start == start).unwrap().at;
            assert_eq!(at, Instant::ZERO, "{kind}: sector {start} was held");
        }
    }
}

// Proves passthrough writes are not held by the zone write ordering (Linux builds passthrough
// commands as requests: no zone write plug, and their op is no sequential-zone write to the
// zone write lock): four passthrough writes to one sequential zone all go to the device at
// once, in submission order, where the same writes as block I/O go one at a time.
#[test]
fn passthrough_writes_bypass_the_zone_write_ordering() {
    let zones = elevator_core::ZoneWriteOrder { zone_size_sectors: 1024, conventional_sectors: 0 };
    let in_flight_at_zero = |flags: RequestFlags| {
        let config = QueueConfig { depth: 8, zones: Some(zones), ..QueueConfig::default() };
        let mut h = Harness::new(SchedulerKind::MqDeadline.build(), config)
            .with_service(elevator_sched::testkit::fixed_service(Duration::from_millis(5)));
        for index in 0..4u64 {
            h.submit(write(1, index * 64, 64).with_flags(flags));
        }
        h.run();
        let issued = h.issued();
        assert_eq!(issued.iter().map(|i| i.start).collect::<Vec<_>>(), [0, 64, 128, 192]);
        issued.iter().filter(|i| i.at == Instant::ZERO).count()
    };
    assert_eq!(in_flight_at_zero(RequestFlags::SYNC), 1, "block writes: one per zone");
    let passthrough = RequestFlags::SYNC.union(RequestFlags::PASSTHROUGH);
    assert_eq!(in_flight_at_zero(passthrough), 4, "passthrough writes: not held");
}
