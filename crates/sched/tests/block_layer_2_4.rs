//! The 2.4.21 block layer under a scheduler (linux-2.4-elevator.md §3.1, §4.2, §5, §7.10–§7.12):
//! plugging until `tq_disk`, the per-direction request pool freed at dispatch with its
//! wake-all at `batch_requests` and RHEL 3's 1 s retry, the driver's merge limit apart from
//! the elevator's, and direct I/O's super bhs. Driven through noop: the 2.4 elevator lands
//! separately, and none of these rules is the elevator's.

use elevator_core::check::check_queue;
use elevator_core::{
    Bio, BioTag, BlockQueue, DriverFetch, Duration, Instant, KernelVersion, Linux2_4Queue,
    ProcessId, Pull, QueueConfig, RequestFlags, Submitted,
};
use elevator_sched::SchedulerKind;
use elevator_sched::testkit::{read, write};

const T0: Instant = Instant::ZERO;

/// A RHEL 3 queue of `per_direction` requests a direction in front of a device taking `depth`
/// commands behind a MegaRAID (128-sector driver limit, sd's 1024 for the elevator); SCSI
/// (`scsi`) returns requests to the pool at dispatch, IDE at completion.
fn queue_2_4(per_direction: u32, depth: u32, scsi: bool, timed_pool_wait: bool) -> BlockQueue {
    let config = QueueConfig {
        nr_requests: per_direction,
        depth,
        max_sectors_kb: 512,
        plugging: true,
        kernel: KernelVersion::Rhel3,
        reads_unplug: false,
        merges_ignore_sync: true,
        driver_fetch: DriverFetch::WhenDeviceFree,
        linux_2_4: Some(Linux2_4Queue {
            driver_max_sectors: 128,
            free_at_dispatch: scsi,
            timed_pool_wait,
        }),
        ..QueueConfig::default()
    };
    BlockQueue::new(config, SchedulerKind::Noop.build()).unwrap()
}

fn tagged(mut bio: Bio, tag: u64) -> Bio {
    bio.tag = BioTag(tag);
    bio
}

/// Pulls until the queue stops issuing; returns what it issued.
fn issue_all(queue: &mut BlockQueue, now: Instant) -> Vec<elevator_core::RequestId> {
    let mut issued = Vec::new();
    while let Pull::Issue(id) = queue.next_request(now) {
        issued.push(id);
    }
    check_queue(queue).unwrap();
    issued
}

fn woken(queue: &mut BlockQueue) -> Vec<ProcessId> {
    std::iter::from_fn(|| queue.pop_woken()).collect()
}

// Proves §7.10 on one queue: the first bh into an empty list plugs it, and it stays plugged
// with no timer and no request-count threshold — an hour later, with 20 requests queued, the
// driver still gets nothing — until it is unplugged (`tq_disk`); then everything goes. A bh
// arriving while requests are at the device but none in the list plugs again (2.4 plugs on
// an empty *list*).
#[test]
fn the_first_bh_plugs_until_tq_disk() {
    let mut q = queue_2_4(512, 63, true, true);
    assert!(matches!(q.submit(T0, tagged(write(1, 0, 8), 0)).unwrap(), Submitted::Queued { .. }));
    assert!(q.is_plugged(T0));
    let hour = T0 + Duration::from_secs(3600);
    for i in 1..20 {
        q.submit(T0, tagged(write(1, i * 1000, 8), i)).unwrap();
    }
    assert!(q.is_plugged(hour), "no unplug timer");
    assert!(issue_all(&mut q, hour).is_empty(), "a plugged queue dispatches nothing");
    assert_eq!(q.stats(hour).plugs, 1);
    q.unplug();
    assert_eq!(issue_all(&mut q, hour).len(), 20);
    // The list is empty again, with 20 requests at the device: the next bh plugs.
    q.submit(hour, tagged(read(2, 90_000, 8), 30)).unwrap();
    assert!(q.is_plugged(hour));
    assert!(issue_all(&mut q, hour).is_empty());
    assert_eq!(q.stats(hour).plugs, 2);
}

// Proves §7.12: behind a MegaRAID (driver limit 128 sectors, elevator 1024), 16 contiguous
// 4 KiB bhs make one 64 KiB request and the 17th starts a new one right behind it; with the
// driver's limit at the elevator's the 17 would have been one request.
#[test]
fn megaraid_stops_a_request_at_16_bhs() {
    let mut q = queue_2_4(512, 63, true, true);
    let mut requests = Vec::new();
    for i in 0..17 {
        if let Submitted::Queued { request } = q.submit(T0, tagged(write(1, i * 8, 8), i)).unwrap()
        {
            requests.push(request);
        }
    }
    assert_eq!(requests.len(), 2);
    let extent = |q: &BlockQueue, id| {
        let request = q.request(id).unwrap();
        (request.start.0, request.sector_count)
    };
    assert_eq!(extent(&q, requests[0]), (0, 128));
    assert_eq!(extent(&q, requests[1]), (128, 8));
    assert_eq!(q.config().merge_limit_sectors(), 128);
    q.unplug();
    assert_eq!(issue_all(&mut q, T0), requests, "the first, then the one right behind it");

    let mut config = q.config().clone();
    config.linux_2_4.as_mut().unwrap().driver_max_sectors = 1024;
    let mut wide = BlockQueue::new(config, SchedulerKind::Noop.build()).unwrap();
    for i in 0..17 {
        wide.submit(T0, tagged(write(1, i * 8, 8), i)).unwrap();
    }
    assert_eq!(wide.queued(), 1);
}

/// Fills the write pool of `q` with non-contiguous writes of process 1; returns how many.
fn fill_writes(q: &mut BlockQueue, now: Instant) -> u64 {
    let mut taken = 0;
    while let Submitted::Queued { .. } =
        q.submit(now, tagged(write(1, taken * 1000, 8), taken)).unwrap()
    {
        taken += 1;
        assert!(taken <= 2048, "the pool never filled");
    }
    taken
}

// Proves §7.11's wake-up on an IDE-like queue (requests freed at completion, one command at
// a time): with all 64 write requests queued, writers 1 and 2 sleep; reads have their own
// requests; a writer arriving while they sleep takes a freed request at once (no fairness, no
// batcher); the sleepers are woken together only by the free that leaves 32 free — not one
// completion earlier.
#[test]
fn sleepers_wake_together_when_32_are_free() {
    let mut q = queue_2_4(64, 1, false, true);
    assert_eq!(fill_writes(&mut q, T0), 64);
    // Process 1's 65th write was refused; process 2 is refused too.
    assert_eq!(q.submit(T0, tagged(write(2, 900_000, 8), 100)).unwrap(), Submitted::Blocked);
    assert!(matches!(
        q.submit(T0, tagged(read(3, 800_000, 8), 101)).unwrap(),
        Submitted::Queued { .. }
    ));
    assert!(!q.is_plugged(T0), "a task sleeping for a request unplugs its queue");
    // The request function runs (one command: nothing freed by it), then they sleep.
    let Pull::Issue(mut at_device) = q.next_request(T0) else { panic!("unplugged") };
    assert_eq!(q.next_request(T0), Pull::Busy);
    let mut completions = 0;
    let now = Instant::from_millis(1);
    let serve = |q: &mut BlockQueue, at_device: &mut elevator_core::RequestId| {
        q.complete(now, *at_device, &mut Vec::new());
        if let Pull::Issue(next) = q.next_request(now) {
            *at_device = next;
        }
    };
    while completions < 20 {
        serve(&mut q, &mut at_device);
        completions += 1;
        assert_eq!(woken(&mut q), [], "{completions} free");
    }
    // 20 free: a third writer takes one while the others sleep (19 free after).
    assert!(matches!(
        q.submit(now, tagged(write(4, 700_000, 8), 102)).unwrap(),
        Submitted::Queued { .. }
    ));
    let mut more = 0;
    let sleepers = loop {
        serve(&mut q, &mut at_device);
        more += 1;
        let sleepers = woken(&mut q);
        if !sleepers.is_empty() {
            break sleepers;
        }
        assert!(more < 64, "never woken");
    };
    // 19 + 13 = 32 free (noop serves in arrival order: only writes were served).
    assert_eq!(more, 13);
    assert_eq!(sleepers, [ProcessId(1), ProcessId(2)]);
    check_queue(&q).unwrap();
}

// Proves §5's SCSI rule and the unplugging sleeper: with the write pool full and the queue
// plugged, a writer refused a request unplugs its queue; the request function then starts up
// to the LUN's depth, each start returning a request to the pool, so the writer gets one
// without sleeping (woken by the first free, though far fewer than 32 are free).
#[test]
fn a_scsi_start_frees_the_request_for_the_unplugging_writer() {
    let mut q = queue_2_4(64, 4, true, true);
    assert_eq!(fill_writes(&mut q, T0), 64);
    assert!(!q.is_plugged(T0), "the refused writer unplugged its queue");
    let Pull::Issue(_) = q.next_request(T0) else { panic!("the refused writer unplugged") };
    assert_eq!(woken(&mut q), [ProcessId(1)], "freed at dispatch, taken before sleeping");
    assert_eq!(issue_all(&mut q, T0).len(), 3, "depth 4");
    assert!(matches!(
        q.submit(T0, tagged(write(1, 5_000_000, 8), 200)).unwrap(),
        Submitted::Queued { .. }
    ));
}

// Proves RHEL 3's 1 s retry (§5): a writer asleep for a request with nothing freed is woken
// 1 s after it fell asleep, not before; vanilla 2.4.21's sleeper is not.
#[test]
fn a_rhel3_sleeper_retries_after_one_second() {
    for timed in [true, false] {
        let mut q = queue_2_4(64, 1, false, timed);
        fill_writes(&mut q, T0);
        let Pull::Issue(_) = q.next_request(T0) else { panic!() };
        assert_eq!(q.next_request(T0), Pull::Busy);
        let almost = T0 + Duration::from_millis(999);
        assert_eq!(q.next_request(almost), Pull::Busy);
        assert_eq!(woken(&mut q), []);
        let second = T0 + Duration::from_secs(1);
        if timed {
            assert_eq!(q.next_pool_timeout(), Some(second));
        } else {
            assert_eq!(q.next_pool_timeout(), None);
        }
        assert_eq!(q.next_request(second), Pull::Busy);
        let expected: &[ProcessId] = if timed { &[ProcessId(1)] } else { &[] };
        assert_eq!(woken(&mut q), expected, "timed {timed}");
    }
}

// Proves §6.6's super bh: a bio flagged unsorted does not merge into the queued request it
// touches (it makes a request of its own), while a later plain bh merges into it. (noop@2.6.9,
// whose merge lookups search every queued request: 2.6.18's noop tries only the last-merge
// cache, which here holds the first request.)
#[test]
fn a_super_bh_never_merges_into_a_queued_request() {
    let mut q = queue_2_4(512, 63, true, true);
    q = {
        let config = q.config().clone();
        BlockQueue::new(config, SchedulerKind::NoopV1.build()).unwrap()
    };
    q.submit(T0, tagged(write(1, 0, 8), 0)).unwrap();
    let super_bh = Bio { flags: RequestFlags::UNSORTED, ..write(1, 8, 64) };
    let Submitted::Queued { request } = q.submit(T0, tagged(super_bh, 1)).unwrap() else {
        panic!("a super bh gets a request of its own")
    };
    assert!(q.request(request).unwrap().flags.contains(RequestFlags::UNSORTED));
    assert_eq!(
        q.submit(T0, tagged(write(1, 72, 8), 2)).unwrap(),
        Submitted::Merged { into: request }
    );
    assert_eq!(q.queued(), 2);
    check_queue(&q).unwrap();
}
