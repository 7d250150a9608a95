//! The block-layer divergences of issue 28 (specs/legacy-vs-kernel.md rows 5, 7, 9, 16, 21),
//! each driven through the queue with a request sequence whose kernel outcome was traced by
//! hand from the function named in the test's comment.

use elevator_core::check::check_queue;
use elevator_core::{
    Bio, BioTag, BlockQueue, DriverFetch, Instant, KernelVersion, Pull, QueueConfig, RequestFlags,
    RequestState, Submitted,
};
use elevator_sched::SchedulerKind;
use elevator_sched::testkit::{read, write};

const T0: Instant = Instant::ZERO;

fn queue(kind: SchedulerKind, config: QueueConfig) -> BlockQueue {
    BlockQueue::new(config, kind.build()).unwrap()
}

fn tagged(mut bio: Bio, tag: u64) -> Bio {
    bio.tag = BioTag(tag);
    bio
}

/// The queue settings the simulator gives a legacy scheduler on a 2.6.18 host.
fn legacy_config() -> QueueConfig {
    QueueConfig {
        merges_ignore_sync: KernelVersion::Linux2_6_18.merges_ignore_sync(),
        ..QueueConfig::default()
    }
}

// Proves row 5: under 2.6.18's `elv_rq_merge_ok` (direction test only) an O_DIRECT write
// (WRITE_SYNC) at 8..16 back-merges into process 1's queued buffered write at 0..8, and a
// buffered write at 16..24 back-merges into the result; the request keeps the async flag of the
// bio that created it (`init_request_from_bio` sets REQ_RW_SYNC only at creation). With the
// blk-mq rule (sync-ness must match) the O_DIRECT write gets a request of its own.
#[test]
fn legacy_merges_ignore_sync_ness() {
    for kind in [SchedulerKind::Deadline, SchedulerKind::Anticipatory, SchedulerKind::Noop] {
        let mut q = queue(kind, legacy_config());
        let Submitted::Queued { request } = q.submit(T0, tagged(write(1, 0, 8), 0)).unwrap() else {
            panic!("first write queued")
        };
        let direct = write(2, 8, 8).with_flags(RequestFlags::SYNC);
        assert_eq!(
            q.submit(T0, tagged(direct, 1)).unwrap(),
            Submitted::Merged { into: request },
            "{kind:?}"
        );
        assert_eq!(
            q.submit(T0, tagged(write(1, 16, 8), 2)).unwrap(),
            Submitted::Merged { into: request },
            "{kind:?}"
        );
        let merged = q.request(request).unwrap();
        assert_eq!(merged.sector_count, 24);
        assert!(!merged.flags.is_sync(), "{kind:?}: the creator's flags stay");
        check_queue(&q).unwrap();
    }
    let mut strict = queue(SchedulerKind::MqDeadline, QueueConfig::default());
    strict.submit(T0, tagged(write(1, 0, 8), 0)).unwrap();
    let direct = write(2, 8, 8).with_flags(RequestFlags::SYNC);
    assert!(matches!(strict.submit(T0, tagged(direct, 1)).unwrap(), Submitted::Queued { .. }));
}

fn counter(q: &BlockQueue, name: &str) -> u64 {
    q.scheduler().counters().iter().find(|c| c.name == name).map_or(0, |c| c.value)
}

/// Submits six scattered reads of one process and pulls until the device is full; returns how
/// many were issued and the last answer.
fn fill_device(q: &mut BlockQueue) -> (usize, Pull) {
    for i in 0..6 {
        q.submit(T0, tagged(read(1, i * 10_000, 8), i)).unwrap();
    }
    let mut issued = 0;
    loop {
        match q.next_request(T0) {
            Pull::Issue(_) => issued += 1,
            other => return (issued, other),
        }
    }
}

// Proves row 7: on a SCSI/libata queue of depth 4, `scsi_request_fn` calls `elv_next_request`
// before `scsi_dev_queue_ready`, so with four requests at the device a fifth is fetched and
// activated: `cfq_activate_request` counts `rq_in_driver` = 5 > 4 and sets `hw_tag`. The IDE
// model (`ide_do_request` fetches only when the channel is free) stops at 4 and never sets it.
// The activated request is the next one sent, without a second activation, once a slot frees;
// the fetch-ahead happens when a completion runs the request function, not at a bio's arrival.
#[test]
fn scsi_fetch_activates_one_more_and_cfq_sees_hw_tag_at_depth_4() {
    let scsi =
        QueueConfig { depth: 4, driver_fetch: DriverFetch::BeforeDepthCheck, ..legacy_config() };
    let mut q = queue(SchedulerKind::Cfq, scsi.clone());
    let (issued, last) = fill_device(&mut q);
    assert_eq!((issued, last), (4, Pull::Busy));
    assert_eq!(q.dispatch_count(), 1, "one request fetched and waiting");
    assert_eq!(counter(&q, "hw_tag"), 1);
    check_queue(&q).unwrap();
    // Asking again while full neither fetches nor activates another.
    assert_eq!(q.next_request(T0), Pull::Busy);
    assert_eq!(q.dispatch_count(), 1);
    check_queue(&q).unwrap();
    // A completion frees a slot: the waiting request goes first.
    let find = |q: &BlockQueue, state| {
        q.requests().iter().find(|(_, r)| r.state() == state).map(|(id, _)| id).unwrap()
    };
    let waiting = find(&q, RequestState::Dispatched);
    let in_flight = find(&q, RequestState::InFlight);
    q.complete(T0, in_flight, &mut Vec::new());
    assert_eq!(q.next_request(T0), Pull::Issue(waiting));
    check_queue(&q).unwrap();

    // The request function runs when a slot frees, not when a bio arrives: reads arriving at
    // the full device stay in the scheduler; the next completion issues one and fetches the
    // other ahead.
    let mut q = queue(SchedulerKind::Deadline, scsi.clone());
    for i in 0..4 {
        q.submit(T0, tagged(read(1, i * 10_000, 8), i)).unwrap();
    }
    while let Pull::Issue(_) = q.next_request(T0) {}
    q.submit(T0, tagged(read(2, 500_000, 8), 10)).unwrap();
    q.submit(T0, tagged(read(3, 600_000, 8), 11)).unwrap();
    assert_eq!(q.next_request(T0), Pull::Busy);
    assert_eq!((q.queued(), q.dispatch_count()), (2, 0), "an arrival fetches nothing");
    let in_flight = find(&q, RequestState::InFlight);
    q.complete(T0, in_flight, &mut Vec::new());
    assert!(matches!(q.next_request(T0), Pull::Issue(_)));
    assert_eq!(q.next_request(T0), Pull::Busy);
    assert_eq!((q.queued(), q.dispatch_count()), (0, 1), "fetched ahead after the issue");
    check_queue(&q).unwrap();

    let ide = QueueConfig { depth: 4, ..legacy_config() };
    let mut q = queue(SchedulerKind::Cfq, ide);
    assert_eq!(fill_device(&mut q), (4, Pull::Busy));
    assert_eq!(q.dispatch_count(), 0);
    assert_eq!(counter(&q, "hw_tag"), 0);
}

// Proves row 16 (`elevator_switch`, `elv_drain_elevator`, `elv_insert`): switching from
// deadline to noop with one read in flight (sector 0) and reads queued at 300, 100, 200
// (deadline's sorted order 100, 200, 300 from the head) drains them onto the dispatch list in
// deadline's order, and a read at 50 arriving during the switch bypasses both schedulers to
// the list's tail, so the issue order is 100, 200, 300, 50. noop never sees those requests;
// once everything allocated before the switch has completed, a new read reaches noop.
#[test]
fn a_switch_drains_in_the_old_order_and_new_requests_bypass_until_done() {
    let sector = |q: &BlockQueue, pull: Pull| {
        let Pull::Issue(id) = pull else { panic!("expected an issue, got {pull:?}") };
        (id, q.request(id).unwrap().start.0)
    };
    let mut q = queue(SchedulerKind::Deadline, legacy_config());
    q.submit(T0, tagged(read(1, 0, 8), 0)).unwrap();
    let pull = q.next_request(T0);
    let (first, at) = sector(&q, pull);
    assert_eq!(at, 0);
    for (tag, start) in [(1, 300), (2, 100), (3, 200)] {
        q.submit(T0, tagged(read(2 + tag as u32, start, 8), tag)).unwrap();
    }
    q.switch_scheduler(T0, SchedulerKind::Noop.build());
    assert!(q.is_switching());
    assert_eq!((q.queued(), q.dispatch_count()), (0, 3));
    q.submit(T0, tagged(read(9, 50, 8), 4)).unwrap();
    assert_eq!((q.queued(), q.dispatch_count()), (0, 4), "the new read bypasses noop");
    check_queue(&q).unwrap();
    q.complete(T0, first, &mut Vec::new());
    let mut order = Vec::new();
    while let pull @ Pull::Issue(_) = q.next_request(T0) {
        let (id, start) = sector(&q, pull);
        order.push(start);
        assert!(q.is_switching() || order.len() == 4);
        q.complete(T0, id, &mut Vec::new());
        check_queue(&q).unwrap();
    }
    assert_eq!(order, [100, 200, 300, 50]);
    assert!(!q.is_switching(), "every pre-switch request completed");
    q.submit(T0, tagged(read(10, 400, 8), 5)).unwrap();
    assert_eq!(q.queued(), 1, "after the switch, noop takes new requests");
}

// Proves row 9 (`as_merge` → `as_find_arq_rb(ad, key, bio_data_dir(bio))`, whose tree array
// is indexed by class, REQ_ASYNC = 0 = READ, REQ_SYNC = 1 = WRITE): with `last_merge` held by
// a read at 1000, a read bio ending at a queued read's start (108) and a buffered write bio
// ending at a buffered write's start (2000) find nothing in the tree they search and get
// requests of their own; a buffered write bio ending at an O_DIRECT (sync) write's start
// (3000) finds it in the sync tree and front-merges (`elv_rq_merge_ok` tests only the
// direction). Deadline, whose front lookup is per direction, front-merges all three.
#[test]
fn anticipatory_front_merges_only_writes_into_sync_requests() {
    let outcomes = |kind: SchedulerKind| {
        let mut q = queue(kind, legacy_config());
        q.submit(T0, tagged(read(1, 1000, 8), 0)).unwrap();
        q.submit(T0, tagged(read(2, 108, 8), 1)).unwrap();
        q.submit(T0, tagged(write(3, 2000, 8), 2)).unwrap();
        q.submit(T0, tagged(write(4, 3000, 8).with_flags(RequestFlags::SYNC), 3)).unwrap();
        let merged = [read(5, 100, 8), write(6, 1992, 8), write(7, 2992, 8)]
            .into_iter()
            .enumerate()
            .map(|(i, bio)| {
                let outcome = q.submit(T0, tagged(bio, 4 + i as u64)).unwrap();
                matches!(outcome, Submitted::Merged { .. })
            })
            .collect::<Vec<_>>();
        check_queue(&q).unwrap();
        merged
    };
    assert_eq!(outcomes(SchedulerKind::Anticipatory), [false, false, true]);
    assert_eq!(outcomes(SchedulerKind::Deadline), [true, true, true]);
}
