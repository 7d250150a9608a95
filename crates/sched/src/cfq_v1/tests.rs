use elevator_core::{
    Ctx, Dispatch, Duration, Instant, KernelVersion, MayQueue, Op, ProcessId, QueueConfig, Request,
    RequestId, RequestTable, Scheduler,
};

use super::CfqV1;
use crate::testkit::{Harness, fixed_service, read, write};
use crate::{SchedSpecError, SchedulerKind, SchedulerSpec};

/// The scheduler alone, with a table of requests and no queue around it.
struct Bare {
    table: RequestTable,
    cfq: CfqV1,
}

impl Bare {
    fn new(cfq: CfqV1) -> Bare {
        Bare { table: RequestTable::with_capacity(256), cfq }
    }

    fn cx(table: &RequestTable) -> Ctx<'_> {
        Ctx { now: Instant::ZERO, requests: table, in_flight: 0, depth: 1 }
    }

    fn insert(&mut self, bio: elevator_core::Bio) -> RequestId {
        let id = self.table.insert(Request::from_bio(&bio, Instant::ZERO)).unwrap();
        self.cfq.insert(&Bare::cx(&self.table), id);
        id
    }

    /// Dispatches everything, returning start sectors in dispatch order.
    fn dispatch_all(&mut self) -> Vec<u64> {
        let mut starts = Vec::new();
        while let Dispatch::Issue(id) = self.cfq.dispatch(&Bare::cx(&self.table)) {
            starts.push(self.table[id].start.0);
        }
        assert_eq!(self.cfq.queued(), 0);
        starts
    }

    fn may_queue(&self, process: u32, op: Op) -> MayQueue {
        self.cfq.may_queue(&Bare::cx(&self.table), ProcessId(process), op)
    }
}

/// Processes 1, 2, 3 each queue four reads (1000.., 2000.., 3000.., 10 sectors apart), in
/// that order, so `rr_list` is 3, 2, 1 from the front.
fn three_queues(bare: &mut Bare) {
    for (process, base) in [(1, 1000), (2, 2000), (3, 3000)] {
        for step in 0..4 {
            bare.insert(read(process, base + step * 10, 8));
        }
    }
}

// Proves the dispatch-list insertion rule of §4.1 on a hand-made sequence, including its
// departures from a sort: a request below the head goes just before the tail, one at or below
// the tail's sector goes just before the tail.
#[test]
fn the_insertion_rule_is_not_a_sort() {
    let mut bare = Bare::new(CfqV1::new());
    let mut ids = Vec::new();
    for start in [100, 200, 300, 50, 250, 400, 150] {
        let id = bare.table.insert(Request::from_bio(&read(1, start, 8), Instant::ZERO)).unwrap();
        ids.push(id);
        bare.cfq.insert_dispatch(&Bare::cx(&bare.table), id);
    }
    let order: Vec<u64> = bare.cfq.dispatch_list.iter().map(|&id| bare.table[id].start.0).collect();
    // 50 < head 100: before the last (300). 250: before 300, the element nearest the tail at
    // or above it. 400: appended. 150: at or below the tail 400, so just before it.
    assert_eq!(order, vec![100, 200, 50, 250, 300, 150, 400]);
}

// Proves the round-robin bug of mainline 2.6.9 / RHEL 4 GA–U3: each pass has one step per
// busy queue but every step takes from the queue at the front of rr_list, so the most
// recently activated process (3) is drained first; the RHEL 4.4 fix takes one request from
// each queue per pass instead.
#[test]
fn the_buggy_round_robin_drains_the_front_queue_first() {
    let mut bare = Bare::new(CfqV1::new());
    three_queues(&mut bare);
    // Refill 1: pass 1 moves 3000, 3010, 3020 (three steps, all from process 3); pass 2 moves
    // 3030 (3 emptied), then 2000 and 2010 from the new front. Inserted by the rule:
    // 2000 and 2010 are below the head 3000, so each lands just before the tail 3030.
    // Refill 2: 2020, 2030, then 1000, 1010 (one queue left, one step a pass).
    // Refill 3: 1020, 1030.
    assert_eq!(
        bare.dispatch_all(),
        vec![3000, 3010, 3020, 2000, 2010, 3030, 2020, 1000, 1010, 2030, 1020, 1030]
    );
    assert_eq!(bare.cfq.refills, 3);

    let mut fixed = Bare::new(CfqV1::fixed_round_robin());
    three_queues(&mut fixed);
    // Refill 1: passes 3000, 2000, 1000 then 3010, 2010, 1010 — one per queue per pass.
    let order = fixed.dispatch_all();
    let mut first_refill = order[..6].to_vec();
    first_refill.sort_unstable();
    assert_eq!(first_refill, vec![1000, 1010, 2000, 2010, 3000, 3010]);
}

// Proves `quantum` bounds a refill: passes repeat until at least `quantum` requests moved,
// so 8 requests in two queues take one refill at quantum 8, two at 4, and six at 1: two
// refills of one two-step pass drain process 2 (the front), then process 1 alone moves one
// request a pass.
#[test]
fn quantum_sets_how_much_a_refill_moves() {
    for (quantum, refills) in [(8, 1), (4, 2), (1, 6)] {
        let mut bare = Bare::new(CfqV1::new());
        bare.cfq.set_tunable("quantum", quantum).unwrap();
        for step in 0..4 {
            bare.insert(read(1, 1000 + step * 10, 8));
            bare.insert(read(2, 5000 + step * 10, 8));
        }
        assert_eq!(bare.dispatch_all().len(), 8);
        assert_eq!(bare.cfq.refills, refills, "quantum {quantum}");
    }
}

// Proves an alias (same start sector, same process) forces the queued request onto the
// dispatch list, so it goes first, while the same sector from another process is no alias.
#[test]
fn an_alias_forces_the_old_request_out() {
    let mut bare = Bare::new(CfqV1::new());
    bare.insert(read(1, 500, 8));
    let old = bare.insert(read(1, 900, 8));
    bare.insert(read(2, 900, 8));
    assert_eq!(bare.cfq.aliases_forced, 0, "another process's queue holds no alias");
    bare.insert(write(1, 900, 16));
    assert_eq!(bare.cfq.aliases_forced, 1);
    assert_eq!(bare.cfq.dispatch_list.front(), Some(&old));
    assert_eq!(bare.cfq.queued(), 4);
    assert_eq!(bare.dispatch_all()[0], 900);
}

// Proves may_queue's limit: (nr_requests − queued) / busy queues, at least 3, at most 128,
// counted per direction, and "no" only for a process over it.
#[test]
fn may_queue_limits_each_queue_share() {
    let mut bare = Bare::new(CfqV1::new());
    for step in 0..129 {
        bare.insert(read(1, step * 16, 8));
    }
    // One busy queue: (8192 − 8) / 1 capped at 128; 129 reads are over it.
    assert_eq!(bare.may_queue(1, Op::Read), MayQueue::May);
    assert_eq!(bare.may_queue(1, Op::Write), MayQueue::Must, "writes are counted apart");
    assert_eq!(bare.may_queue(2, Op::Read), MayQueue::Must, "no queue: allowed");

    let mut small = Bare::new(CfqV1::new());
    small.cfq.set_nr_requests(20);
    for process in 1..=4 {
        for step in 0..3 {
            small.insert(read(process, u64::from(process) * 10_000 + step * 16, 8));
        }
    }
    // (20 − 8) / 4 = 3: three queued is not over it, a fourth is.
    assert_eq!(small.may_queue(1, Op::Read), MayQueue::Must);
    small.insert(read(1, 19_000, 8));
    assert_eq!(small.may_queue(1, Op::Read), MayQueue::May);
    // The floor of 3 holds when the share is smaller: (20 − 8) / 5 = 2.
    small.insert(read(5, 50_000, 8));
    assert_eq!(small.may_queue(2, Op::Read), MayQueue::Must);
}

/// Two readers far apart, each re-reading 2 ms after its previous read completed (within
/// 2.6.18's `slice_idle` of 8 ms); the first 20 requests issued, by process.
fn two_thinking_readers(spec: &str) -> (Vec<u32>, usize) {
    let mut h = Harness::new(SchedulerSpec::parse(spec).unwrap().build(), QueueConfig::default())
        .with_service(fixed_service(Duration::from_millis(1)));
    let stop = Instant::ZERO + Duration::from_millis(60);
    for (process, base) in [(1u32, 0u64), (2, 1 << 24)] {
        h.submit(read(process, base, 8));
        let mut next = base + 64;
        h.on_complete(move |done| {
            if done.process.0 != process || done.completed >= stop {
                return Vec::new();
            }
            let bio = read(process, next, 8);
            next += 64;
            vec![(done.completed + Duration::from_millis(2), bio)]
        });
    }
    h.run();
    let order = h.issued().iter().take(20).map(|issued| issued.process.0).collect();
    (order, h.idle_answers().len())
}

fn switches(order: &[u32]) -> usize {
    order.windows(2).filter(|pair| pair[0] != pair[1]).count()
}

// Proves the issue's claim: under 2.6.9 cfq there is no idling, so a reader with nothing
// queued loses its turn at once and two thinking readers alternate; under 2.6.18 cfq the
// reader keeps its slice across the 2 ms think time (slice_idle 8 ms), so the other waits.
#[test]
fn v1_never_idles_where_2_6_18_keeps_the_slice() {
    let (v1, v1_idles) = two_thinking_readers("cfq@2.6.9");
    let (v3, v3_idles) = two_thinking_readers("cfq@2.6.18");
    assert_eq!(v1_idles, 0, "cfq v1 never idles");
    assert_eq!(switches(&v1), v1.len() - 1, "v1 alternates: {v1:?}");
    assert!(v3_idles > 0, "2.6.18 cfq idles for the reader");
    assert!(switches(&v3) <= 2, "2.6.18 keeps the slice: {v3:?}");
}

// Proves the merge rules: a back merge joins another process's request (the global hash), a
// front merge only the submitter's own queue.
#[test]
fn front_merges_stay_within_the_process() {
    let extents = |bios: [elevator_core::Bio; 2]| {
        let mut h = Harness::new(SchedulerKind::CfqV1.build(), QueueConfig::default());
        h.queue_all(&bios);
        let mut extents = h.issued_extents();
        extents.sort_unstable();
        extents
    };
    assert_eq!(extents([read(1, 100, 8), read(2, 92, 8)]), vec![(92, 8), (100, 8)]);
    assert_eq!(extents([read(1, 100, 8), read(1, 92, 8)]), vec![(92, 16)]);
    assert_eq!(extents([read(1, 100, 8), read(2, 108, 8)]), vec![(100, 16)]);
}

// Proves the versioned names: `cfq@2.6.9` (and a release built on 2.6.9) is v1, `cfq@2.6.18`
// and a bare `cfq` today's cfq, v1's own tunables only, and a version no entry follows is an
// error naming the versions there are; specs print back in a form that parses to themselves.
#[test]
fn versioned_specs_parse_and_print() {
    let kind = |text| SchedulerSpec::parse(text).unwrap().kind();
    assert_eq!(kind("cfq@2.6.9"), SchedulerKind::CfqV1);
    assert_eq!(kind("cfq@rhel4"), SchedulerKind::CfqV1);
    assert_eq!(kind("cfq@2.6.18"), SchedulerKind::Cfq);
    assert_eq!(kind("cfq"), SchedulerKind::Cfq);
    let spec = SchedulerSpec::parse("cfq@2.6.9:quantum=8").unwrap();
    assert_eq!(spec.build().tunable("quantum"), Ok(8));
    for text in ["cfq@2.6.9:quantum=8", "cfq@2.6.18", "cfq", "cfq@2.6.9"] {
        let spec = SchedulerSpec::parse(text).unwrap();
        assert_eq!(spec.to_string(), text);
        assert_eq!(SchedulerSpec::parse(&spec.to_string()).unwrap(), spec);
    }
    assert!(matches!(
        SchedulerSpec::parse("cfq@2.6.9:slice_idle=0"),
        Err(SchedSpecError::Tunable { .. })
    ));
    assert!(SchedulerSpec::parse("cfq@2.6.9:quantum=0").is_err());
    assert_eq!(
        SchedulerSpec::parse("deadline@2.6.9").unwrap_err().to_string(),
        // Every registered version, RHEL 5 profiles included.
        "scheduler `deadline` has no version for kernel `2.6.9` (versions: 2.6.18, 2.6.18-194.el5)"
    );
}

// Proves the host's kernel picks the version of a bare name: cfq on a 2.6.9 release is v1
// (printed with its version), on a 2.6.18 release today's cfq; a named version is kept; a
// tunable the picked version lacks is an error naming the kernel.
#[test]
fn the_kernel_picks_the_version_of_a_bare_name() {
    let on = |text, kernel| SchedulerSpec::parse(text).unwrap().for_kernel(kernel);
    let v1 = on("cfq:quantum=2", KernelVersion::Rhel4).unwrap();
    assert_eq!(v1.kind(), SchedulerKind::CfqV1);
    assert_eq!(v1.to_string(), "cfq@2.6.9:quantum=2");
    assert_eq!(on("cfq", KernelVersion::Linux2_6_9).unwrap().kind(), SchedulerKind::CfqV1);
    assert_eq!(on("cfq", KernelVersion::Rhel5_0).unwrap().to_string(), "cfq");
    assert_eq!(on("cfq@2.6.18", KernelVersion::Rhel4).unwrap().kind(), SchedulerKind::Cfq);
    assert_eq!(on("deadline", KernelVersion::Rhel4).unwrap().kind(), SchedulerKind::Deadline);
    let error = on("cfq:slice_idle=0", KernelVersion::Rhel4).unwrap_err().to_string();
    assert!(error.contains("on kernel 2.6.9-5.EL") && error.contains("slice_idle"), "{error}");
}
