//! elevator_linus against linux-2.4-elevator.md §7, traced by hand: through the block queue
//! (dispatch order is list order, so the order requests leave in shows where each was put),
//! and on the scheduler alone where the budgets themselves are the point.

use elevator_core::{
    Bio, Ctx, Instant, KernelVersion, MergeChoice, MergeKind, ProcessId, QueueConfig, Request,
    RequestId, RequestTable, Scheduler, Sector, Submitted,
};
use elevator_sched::linus::{Linus, Profile, elvtune_listing};
use elevator_sched::testkit::{Harness, read, write};
use elevator_sched::{SchedulerKind, SchedulerSpec};

/// A held device in front of the scheduler `spec`, with room for `nr_requests` per direction.
fn held(spec: &str, config: QueueConfig) -> Harness {
    let scheduler = SchedulerSpec::parse(spec).unwrap().build();
    let mut h = Harness::new(scheduler, config);
    h.hold_device();
    h
}

fn big_pool() -> QueueConfig {
    QueueConfig { nr_requests: 1024, ..QueueConfig::default() }
}

/// Lets the device go and returns the start sectors in the order they were served.
fn served(h: &mut Harness) -> Vec<u64> {
    h.release_device();
    h.run();
    h.issued_starts()
}

/// How many of the requests submitted after `victim` were served before it, when a head
/// request at sector 0 is queued, then `victim` far up the disk, then up to `offered`
/// unmergeable requests in ascending order between the two (each sorts ahead of the victim
/// while the victim's budget lasts).
fn passed(spec: &str, victim: Bio, passer: fn(u32, u64, u32) -> Bio, offered: u64) -> usize {
    let mut h = held(spec, big_pool());
    h.submit(write(1, 0, 8));
    h.submit(victim);
    for index in 0..offered {
        h.submit(passer(3, 1_000 + 100 * index, 8));
    }
    let order = served(&mut h);
    let at = order.iter().position(|&start| start == victim.start.0).unwrap();
    // The head request is served first and is not a passer.
    at - 1
}

fn far_read() -> Bio {
    read(2, 1_000_000_000, 8)
}

fn far_write() -> Bio {
    write(2, 1_000_000_000, 8)
}

// Proves §7.2 with the RHEL 3 defaults: a queued read is passed by at most ⌈2048/17⌉ = 121
// later unmergeable writes, and a queued write by at most ⌈8192/17⌉ = 482 later reads (a stream
// of one direction cannot starve the other beyond its budget); every later request then queues
// behind it.
#[test]
fn default_budgets_bound_how_many_pass() {
    assert_eq!(passed("elevator_linus", far_read(), write, 200), 121);
    assert_eq!(passed("elevator_linus", far_write(), read, 600), 482);
}

// Proves the elvtune budgets change the bound (§7.2): read_latency=1024 → ⌈1024/17⌉ = 61,
// write_latency=2048 → ⌈2048/17⌉ = 121, 0 → nobody passes; vanilla 2.4.21 has no scan charge,
// so ⌈2048/16⌉ = 128 and ⌈8192/16⌉ = 512.
#[test]
fn tuned_and_vanilla_budgets_change_the_bound() {
    let tuned = "elevator_linus:read_latency=1024,write_latency=2048";
    assert_eq!(passed(tuned, far_read(), read, 100), 61);
    assert_eq!(passed(tuned, far_write(), write, 200), 121);
    assert_eq!(passed("elevator_linus:write_latency=0", far_write(), write, 10), 0);
    assert_eq!(passed("elevator_linus@2.4.21", far_read(), write, 200), 128);
    assert_eq!(passed("elevator_linus@2.4.21", far_write(), read, 600), 512);
}

// Proves §7.3's one-way sweep: 10, 20, 30 + 25 → 10, 20, 25, 30; + 5 goes to the tail (the next
// sweep); + 40 goes after 30, ahead of 5; + 7 after 5. Dispatch is list order (§7.9).
#[test]
fn unmergeable_requests_sort_into_a_one_way_sweep() {
    let mut h = held("elevator_linus", QueueConfig::default());
    for start in [10_000, 20_000, 30_000, 25_000, 5_000, 40_000, 7_000] {
        h.submit(write(1, start, 8));
    }
    assert_eq!(served(&mut h), [10_000, 20_000, 25_000, 30_000, 40_000, 5_000, 7_000]);
}

// Proves a direct-I/O super bh (`RequestFlags::UNSORTED`, §3.1, §6.6) goes to the tail
// unsorted where a plain bh would sort ahead, and later bhs still sort around the others.
#[test]
fn a_super_bh_goes_to_the_tail_unsorted() {
    let mut h = held("elevator_linus", QueueConfig::default());
    for start in [10_000, 30_000] {
        h.submit(write(1, start, 8));
    }
    let mut super_bh = write(2, 20_000, 64);
    super_bh.flags = super_bh.flags | elevator_core::RequestFlags::UNSORTED;
    h.submit(super_bh);
    h.submit(write(3, 25_000, 8));
    assert_eq!(served(&mut h), [10_000, 25_000, 30_000, 20_000]);
}

// Proves a barrier (§7.3): with write_latency=0 every queued write is a barrier as soon as a
// scan meets it, so later writes go to the tail in arrival order even where they would sort
// ahead.
#[test]
fn behind_a_barrier_requests_keep_arrival_order() {
    let mut h = held("elevator_linus:write_latency=0", QueueConfig::default());
    for start in [10_000, 30_000, 20_000, 15_000] {
        h.submit(write(1, start, 8));
    }
    assert_eq!(served(&mut h), [10_000, 30_000, 20_000, 15_000]);
}

// Proves §7.12 and the size limits of §3.1: with a 64 KiB driver (MegaRAID), 16 contiguous
// 4 KiB writes make one 128-sector request and the 17th a new request right behind it; with a
// 1 MiB driver the elevator's own 1024-sector limit still stops a request at 512 KiB.
#[test]
fn merges_respect_the_driver_and_the_elevator_limits() {
    let mut h =
        held("elevator_linus", QueueConfig { max_sectors_kb: 64, ..QueueConfig::default() });
    for index in 0..17 {
        h.submit(write(1, 8 * index, 8));
    }
    h.release_device();
    h.run();
    assert_eq!(h.issued_extents(), [(0, 128), (128, 8)]);

    let mut h =
        held("elevator_linus", QueueConfig { max_sectors_kb: 1024, ..QueueConfig::default() });
    for index in 0..17 {
        h.submit(write(1, 64 * index, 64));
    }
    h.release_device();
    h.run();
    assert_eq!(h.issued_extents(), [(0, 1024), (1024, 64)]);
}

// Proves §7.6: merges are found across barriers (write_latency=0), and a merge the driver
// refuses puts the new request beside its target — right behind it for a back merge, right
// ahead of it for a front merge — even ahead of a barrier, where a sorted insertion would have
// gone to the tail.
#[test]
fn a_refused_merge_lands_beside_its_target() {
    let config = QueueConfig { max_sectors_kb: 64, ..QueueConfig::default() };
    let mut h = held("elevator_linus:write_latency=0", config.clone());
    for index in 0..16 {
        h.submit(write(1, 1_000 + 8 * index, 8));
    }
    h.submit(write(2, 5_000, 8));
    // Back: the scan finds the full request (the cache holds 5000); the driver refuses.
    h.submit(write(3, 1_128, 8));
    assert_eq!(served(&mut h), [1_000, 1_128, 5_000]);

    let mut h = held("elevator_linus:write_latency=0", config);
    for index in 0..16 {
        h.submit(write(1, 1_000 + 8 * index, 8));
    }
    h.submit(write(2, 5_000, 8));
    // Front: ends where the full request starts.
    h.submit(write(3, 992, 8));
    assert_eq!(served(&mut h), [992, 1_000, 5_000]);

    // A merge the driver accepts across the barriers.
    let mut h = held("elevator_linus:write_latency=0", QueueConfig::default());
    h.submit(write(1, 1_000, 8));
    h.submit(write(2, 5_000, 8));
    assert!(matches!(h.submit(write(3, 992, 8)), Submitted::Merged { .. }));
    assert!(matches!(h.submit(write(3, 1_008, 8)), Submitted::Merged { .. }));
    h.release_device();
    h.run();
    assert_eq!(h.issued_extents(), [(992, 24), (5_000, 8)]);
}

/// Serve order after writes of `write_sectors` each at 0, 10000, 20000, ... and then an
/// unmergeable read far up the disk.
fn bomb(spec: &str, writes: u64, write_sectors: u32, queued_read: bool) -> Vec<u64> {
    let mut h = held(spec, big_pool());
    for index in 0..writes {
        h.submit(write(1, 10_000 * index, write_sectors));
    }
    if queued_read {
        h.submit(read(9, 5_000_000, 8));
    }
    h.submit(read(2, 9_000_000, 8));
    served(&mut h)
}

// Proves the read bomb with max_bomb_segments = 6 (§7.7): with only writes queued, an
// unmergeable read goes after the 2nd 64 KiB write (weight 3 each), the 6th 4 KiB write
// (weight 1), the 1st 512 KiB write (weight 17) — passing barrier writes too; with a read
// queued, with B = 0 and in vanilla 2.4.21 it takes its sorted slot (here the tail).
#[test]
fn the_read_bomb_jumps_writes_by_weight() {
    let position = |order: &[u64]| order.iter().position(|&start| start == 9_000_000).unwrap();
    assert_eq!(position(&bomb("elevator_linus", 4, 128, false)), 2);
    assert_eq!(position(&bomb("elevator_linus", 8, 8, false)), 6);
    assert_eq!(position(&bomb("elevator_linus", 3, 1024, false)), 1);
    assert_eq!(position(&bomb("elevator_linus:write_latency=0", 4, 128, false)), 2);
    assert_eq!(position(&bomb("elevator_linus:max_bomb_segments=0", 4, 128, false)), 4);
    assert_eq!(position(&bomb("elevator_linus@2.4.21", 4, 128, false)), 4);
    // A read queued first (bombed in after the 2nd write): the new read takes its sorted
    // slot right behind that read, not the bomb's (after the 2nd write, position 2).
    assert_eq!(position(&bomb("elevator_linus", 4, 128, true)), 3);
}

// Proves fusion keeps the smaller budget (§7.8): a write made with budget 8192, then a
// zero-budget write two blocks on; the block between front-merges into the second (tail-first),
// which then fuses with the first. The survivor carries budget ≤ 0, so it is a barrier: a
// write that would sort ahead of it goes to the tail. One request went back to the pool.
#[test]
fn fusion_keeps_the_smaller_budget() {
    let mut h = held("elevator_linus", QueueConfig::default());
    h.submit(write(1, 0, 8));
    h.submit(write(1, 1_000, 8));
    h.queue_mut().scheduler_mut().set_tunable("write_latency", 0).unwrap();
    h.submit(write(2, 1_016, 8));
    assert!(matches!(h.submit(write(3, 1_008, 8)), Submitted::Merged { .. }));
    assert_eq!(h.queue().stats(h.now()).requests_fused, 1);
    h.queue_mut().scheduler_mut().set_tunable("write_latency", 8192).unwrap();
    h.submit(write(4, 500, 8));
    h.release_device();
    h.run();
    assert_eq!(h.issued_extents(), [(0, 8), (1_000, 24), (500, 8)]);
}

// Proves §7.4: a bh continuing the last request made merges through the one-hit cache with no
// charge anywhere — its budget of 2 survives five merges, so a later write still sorts ahead
// of it — where vanilla's scan merges are free for the target too, and RHEL 3's scan merges
// charge it (here five merges into a request that is not the cache's).
#[test]
fn the_one_hit_cache_charges_nothing() {
    let run = |spec: &str, break_cache: bool| {
        let mut h = held(spec, QueueConfig::default());
        h.submit(write(1, 0, 8));
        h.submit(write(1, 1_000, 8));
        if break_cache {
            h.submit(write(5, 90_000, 8));
        }
        for index in 1..=5 {
            assert!(matches!(h.submit(write(1, 1_000 + 8 * index, 8)), Submitted::Merged { .. }));
        }
        h.submit(write(2, 500, 8));
        let cached = h.counter("cache_merges");
        (served(&mut h), cached)
    };
    let spec = "elevator_linus:write_latency=3";
    assert_eq!(run(spec, false), (vec![0, 500, 1_000], 5));
    assert_eq!(run("elevator_linus@2.4.21:write_latency=3", false).0, [0, 500, 1_000]);
    // Through the scan: 1000 pays 1 per merge and 1 for the new write's scan: a barrier.
    assert_eq!(run(spec, true), (vec![0, 1_000, 90_000, 500], 0));
}

/// The scheduler alone over a table of requests, for the budgets themselves.
struct Bench {
    table: RequestTable,
    linus: Linus,
}

impl Bench {
    fn new(profile: Profile) -> Bench {
        Bench { table: RequestTable::with_capacity(64), linus: Linus::with_profile(profile) }
    }

    /// Offers `bio` as the block layer would: a merge the scheduler picks is applied, else a
    /// request is made and inserted.
    fn submit(&mut self, bio: Bio) -> MergeChoice {
        let choice = if self.linus.queued() > 0 {
            let cx = Ctx { now: Instant::ZERO, requests: &self.table, in_flight: 0, depth: 1 };
            self.linus.choose_merge(&cx, &bio)
        } else {
            MergeChoice::NoMerge
        };
        match choice {
            MergeChoice::Into { target, kind } => {
                let request = self.table.get_mut(target).unwrap();
                request.sector_count += bio.sector_count;
                if let MergeKind::Front { .. } = kind {
                    request.start = bio.start;
                }
                let cx = Ctx { now: Instant::ZERO, requests: &self.table, in_flight: 0, depth: 1 };
                self.linus.merged(&cx, target, kind);
            }
            _ => {
                let id = self.table.insert(Request::from_bio(&bio, Instant::ZERO)).unwrap();
                let cx = Ctx { now: Instant::ZERO, requests: &self.table, in_flight: 0, depth: 1 };
                self.linus.insert(&cx, id);
            }
        }
        choice
    }

    fn budgets(&self) -> Vec<i64> {
        self.linus.budgets().into_iter().map(|(_, seq)| seq).collect()
    }

    fn ids(&self) -> Vec<RequestId> {
        self.linus.budgets().into_iter().map(|(id, _)| id).collect()
    }
}

fn w(start: u64) -> Bio {
    Bio::write(ProcessId(1), Sector(start), 8, elevator_core::BioTag(start))
}

// Proves §7.1 and §7.5's charges exactly: a new request's budget is write_latency (8192); a
// sorted insertion after H costs everyone 1 and those behind H 16 more; a tail append costs
// everyone 1; a scan-found back merge costs its target 1 and those behind it 2; a front merge
// costs its target 2 and those behind it 2; a back merge through the one-hit cache costs
// nothing. Vanilla: 0/0/16 for an insertion, 0/0/1 for a back merge, 0/1/1 for a front merge.
#[test]
fn charges_follow_the_cost_table() {
    let mut b = Bench::new(Profile::RHEL3);
    b.submit(w(1_000));
    b.submit(w(3_000));
    assert_eq!(b.budgets(), [8192 - 1, 8192]);
    // Tail append: both pay the scan.
    b.submit(w(5_000));
    assert_eq!(b.budgets(), [8190, 8191, 8192]);
    // Insertion after 1000 (between 1000 and 3000): all −1, behind 1000 −16 more.
    b.submit(w(2_000));
    assert_eq!(b.budgets(), [8189, 8192, 8190 - 16, 8191 - 16]);
    // Back merge into 2000 found by the scan (the cache holds 2000 itself: a cache hit).
    let cached = b.submit(w(2_008));
    assert!(matches!(cached, MergeChoice::Into { kind: MergeKind::Back, .. }));
    assert_eq!(b.budgets(), [8189, 8192, 8174, 8175], "the cache charges nothing");
    // Back merge into 1000 found by the scan: target −1, behind −2, ahead (none) 0.
    b.submit(w(1_008));
    assert_eq!(b.budgets(), [8188, 8190, 8172, 8173]);
    // Front merge into 3000 (ends at 3000): target −2, behind −2; the scan stops at 3000, so
    // 1000 and 2000 ahead of it pay nothing.
    b.submit(w(2_992));
    assert_eq!(b.budgets(), [8188, 8190, 8170, 8171]);

    let mut v = Bench::new(Profile::VANILLA);
    v.submit(w(1_000));
    v.submit(w(3_000));
    v.submit(w(2_000));
    assert_eq!(v.budgets(), [8192, 8192, 8192 - 16]);
    v.submit(w(1_008));
    assert_eq!(v.budgets(), [8192, 8191, 8175]);
    v.submit(w(2_992));
    assert_eq!(v.budgets(), [8192, 8191, 8174]);
    assert_eq!(v.ids().len(), 3);
}

// Proves §7.1: budgets set later apply to new requests only.
#[test]
fn a_new_budget_applies_to_new_requests_only() {
    let mut b = Bench::new(Profile::VANILLA);
    b.submit(w(1_000));
    b.linus.set_tunable("write_latency", 100).unwrap();
    b.submit(w(9_000));
    b.submit(Bio::read(ProcessId(2), Sector(20_000), 8, elevator_core::BioTag(7)));
    assert_eq!(b.budgets(), [8192, 100, 2048]);
}

// Proves §2 and §7.14: the tunables read 2048 / 8192 / 6 on RHEL 3; a negative value is
// refused and changes nothing; vanilla's max_bomb_segments reads 0 and ignores writes; the spec
// takes elvtune's field names; the listing prints as elvtune does.
#[test]
fn tunables_and_the_elvtune_listing() {
    let mut rhel3 = SchedulerKind::ElevatorLinus.build();
    let values = |s: &dyn Scheduler| {
        ["read_latency", "write_latency", "max_bomb_segments"].map(|n| s.tunable(n).unwrap())
    };
    assert_eq!(values(rhel3.as_ref()), [2048, 8192, 6]);
    assert!(rhel3.set_tunable("read_latency", -5).is_err());
    assert_eq!(values(rhel3.as_ref()), [2048, 8192, 6]);
    let mut vanilla = SchedulerKind::ElevatorLinusVanilla.build();
    vanilla.set_tunable("max_bomb_segments", 4).unwrap();
    assert_eq!(values(vanilla.as_ref()), [2048, 8192, 0]);
    let spec = SchedulerSpec::parse("elevator_linus:read_latency=1024,write_latency=2048").unwrap();
    assert_eq!(values(spec.build().as_ref()), [1024, 2048, 6]);
    let refused = SchedulerSpec::parse("elevator_linus:read_latency=-5").unwrap_err();
    assert!(refused.to_string().contains("read_latency"), "{refused}");
    assert_eq!(
        elvtune_listing("/dev/sda", 0, 2048, 8192, 6),
        "\n/dev/sda elevator ID\t\t0\n\tread_latency:\t\t2048\n\twrite_latency:\t\t8192\n\
         \tmax_bomb_segments:\t6\n\n"
    );
}

// Proves the registry: versions and host-release aliases name the profiles; a 2.4 host's bare
// `elevator_linus` is its own profile; a 2.4 host refuses every 2.6 and blk-mq scheduler with
// a message naming the one elevator it has.
#[test]
fn registered_with_its_versions_and_refused_where_absent() {
    let kind = |text: &str| SchedulerSpec::parse(text).unwrap().kind();
    assert_eq!(kind("elevator_linus"), SchedulerKind::ElevatorLinus);
    assert_eq!(kind("elevator_linus@2.4.21-27.EL"), SchedulerKind::ElevatorLinus);
    assert_eq!(kind("elevator_linus@rhel3"), SchedulerKind::ElevatorLinus);
    assert_eq!(kind("elevator_linus@2.4.21"), SchedulerKind::ElevatorLinusVanilla);
    let bare = SchedulerSpec::parse("elevator_linus:read_latency=1024").unwrap();
    let on = |kernel| bare.for_kernel(kernel).unwrap();
    assert_eq!(on(KernelVersion::Linux2_4_21).kind(), SchedulerKind::ElevatorLinusVanilla);
    assert_eq!(on(KernelVersion::Linux2_4_21).settings(), [("read_latency", 1024)]);
    assert_eq!(on(KernelVersion::Rhel3).kind(), SchedulerKind::ElevatorLinus);
    for name in ["cfq", "deadline", "noop@2.6.9", "mq-deadline"] {
        let spec = SchedulerSpec::parse(name).unwrap();
        let error = spec.for_kernel(KernelVersion::Rhel3).unwrap_err().to_string();
        assert!(error.contains("2.4 has one elevator, `elevator_linus`"), "{error}");
    }
    assert_eq!(SchedulerSpec::parse("elevator_linus").unwrap().to_string(), "elevator_linus");
    assert_eq!(
        SchedulerSpec::parse("elevator_linus@rhel3").unwrap().to_string(),
        "elevator_linus@2.4.21-27.EL"
    );
    assert!(!elevator_sched::sysfs_line(SchedulerKind::Cfq).contains("elevator_linus"));
}
