//! The conformance suite: properties every registered scheduler must have. A scheduler joins by
//! being added to `SchedulerKind::ALL`; nothing here names one.

use elevator_core::{Bio, Duration, Instant, Op, Prng, QueueConfig, RequestFlags, TunableSpec};
use elevator_sched::testkit::{Harness, Spy, read, seeking_service, write};
use elevator_sched::{SchedulerKind, SchedulerSpec};

/// The kernel's defaults, written out independently of the modules' tables: the 2.6 set from the
/// 2.6.18 sources at HZ=1000 as legacy-schedulers.md §2–§5 gives them; the blk-mq set from 6.17
/// as modern-schedulers.md §2.5, §3.14 and §4.5 give them (mq-deadline's `async_depth` is
/// `nr_requests`, 128 on the default queue; bfq follows 6.12).
const KERNEL_DEFAULTS: &[(&str, &str, i64)] = &[
    ("anticipatory", "read_expire", 125),
    ("anticipatory", "write_expire", 250),
    ("anticipatory", "read_batch_expire", 500),
    ("anticipatory", "write_batch_expire", 125),
    ("anticipatory", "antic_expire", 6),
    ("deadline", "read_expire", 500),
    ("deadline", "write_expire", 5000),
    ("deadline", "writes_starved", 2),
    ("deadline", "fifo_batch", 16),
    ("deadline", "front_merges", 1),
    ("cfq", "quantum", 4),
    ("cfq", "queued", 8),
    ("cfq", "fifo_expire_sync", 125),
    ("cfq", "fifo_expire_async", 250),
    ("cfq", "back_seek_max", 16384),
    ("cfq", "back_seek_penalty", 2),
    ("cfq", "slice_sync", 100),
    ("cfq", "slice_async", 40),
    ("cfq", "slice_async_rq", 2),
    ("cfq", "slice_idle", 8),
    ("mq-deadline", "read_expire", 500),
    ("mq-deadline", "write_expire", 5000),
    ("mq-deadline", "writes_starved", 2),
    ("mq-deadline", "front_merges", 1),
    ("mq-deadline", "async_depth", 128),
    ("mq-deadline", "fifo_batch", 16),
    ("mq-deadline", "prio_aging_expire", 10_000),
    // bfq, from the 6.12 sources as modern-schedulers.md §3.14 gives them.
    ("bfq", "fifo_expire_sync", 125),
    ("bfq", "fifo_expire_async", 250),
    ("bfq", "back_seek_max", 16384),
    ("bfq", "back_seek_penalty", 2),
    ("bfq", "slice_idle", 8),
    ("bfq", "slice_idle_us", 8000),
    ("bfq", "max_budget", 0),
    ("bfq", "timeout_sync", 125),
    ("bfq", "strict_guarantees", 0),
    ("bfq", "low_latency", 1),
    ("kyber", "read_lat_nsec", 2_000_000),
    ("kyber", "write_lat_nsec", 10_000_000),
    // 2.4.21's elevator as linux-2.4-elevator.md §2 gives it: RHEL 3 (a bare name), and
    // vanilla by its spec name, whose `max_bomb_segments` is not stored and reads back 0.
    ("elevator_linus", "read_latency", 2048),
    ("elevator_linus", "write_latency", 8192),
    ("elevator_linus", "max_bomb_segments", 6),
    ("elevator_linus@2.4.21", "read_latency", 2048),
    ("elevator_linus@2.4.21", "write_latency", 8192),
    ("elevator_linus@2.4.21", "max_bomb_segments", 0),
];

/// Tunables a profile accepts and ignores, as its kernel's interface does: they read back their
/// default whatever is written (vanilla 2.4.21's `BLKELVSET` does not store the bomb, §2).
const IGNORED_WRITES: &[(&str, &str)] = &[("elevator_linus@2.4.21", "max_bomb_segments")];

/// A random mixed workload: reads, async and sync writes from four processes over a small
/// region (so that merges, overlaps and aliases happen), and now and then a flush, arriving
/// over ~200 ms.
fn random_workload(seed: u64, count: usize) -> Vec<(Instant, Bio)> {
    let mut prng = Prng::new(seed).fork("conformance");
    let mut at = Instant::ZERO;
    (0..count)
        .map(|_| {
            at += Duration::from_micros(prng.below(400));
            let process = 1 + prng.below(4) as u32;
            let start = prng.below(512) * 8;
            let sector_count = 8 * (1 + prng.below(8) as u32);
            let bio = match prng.below(40) {
                0..=19 => read(process, start, sector_count),
                20..=29 => write(process, start, sector_count),
                30..=38 => write(process, start, sector_count).with_flags(RequestFlags::SYNC),
                _ => Bio { op: Op::Flush, sector_count: 0, ..write(process, 0, 8) },
            };
            (at, bio)
        })
        .collect()
}

/// A harness around `kind`, wrapped in a [`Spy`] that checks every hook names a request the
/// scheduler was given.
fn harness(kind: SchedulerKind, depth: u32) -> Harness {
    let config = QueueConfig { depth, nr_requests: 16, ..QueueConfig::default() };
    Harness::new(Box::new(Spy::new(kind.build())), config)
        .with_service(seeking_service(Duration::from_micros(500), Duration::from_micros(50)))
}

// Proves nothing is lost or duplicated: every bio of a random workload (with flushes) completes
// exactly once (the harness panics on a second completion and on leftovers), every issued
// request id is distinct, the queue's full audit holds after every step, and every hook the
// scheduler receives names a request it was given (the spy), at depths 1 and 8.
#[test]
fn nothing_is_lost_or_duplicated() {
    for &kind in SchedulerKind::ALL {
        for depth in [1, 8] {
            for seed in 0..4 {
                let mut h = harness(kind, depth);
                for (at, bio) in random_workload(seed, 400) {
                    h.submit_at(at, bio);
                }
                h.run();
                assert_eq!(h.completed_bios(), 400, "{kind} depth {depth} seed {seed}");
                let mut ids: Vec<_> = h.issued().iter().map(|issued| issued.id).collect();
                assert!(
                    h.issued().iter().any(|issued| issued.op == Op::Flush),
                    "the script has flushes"
                );
                ids.sort();
                ids.dedup();
                assert_eq!(ids.len(), h.issued().len(), "{kind}: an id was issued twice");
            }
        }
    }
}

// Proves the alias sequence of issue 27 (bug 3) is safe under every scheduler: two readers
// queue reads at one start sector (under deadline, anticipatory and cfq the second moves the
// first straight out, as an "alias"), then a bio ending at that sector and one starting where
// both reads end arrive through the one-hit cache and the indexes. Every bio completes once,
// the queue's audit holds after every step, and a scheduler that moved a read out as an alias
// lets no bio into it: the alias goes to the device as it was, 8 sectors at 5000. Before the
// fix deadline took the back merge (16 sectors) and, through the cache, a front merge that
// removed the other read from its sector tree: a panic.
#[test]
fn bios_next_to_an_alias_are_safe_under_every_scheduler() {
    for &kind in SchedulerKind::ALL {
        let mut h = harness(kind, 1);
        h.hold_device();
        h.submit(read(1, 5000, 8));
        h.submit(read(2, 5000, 8));
        h.submit(read(3, 4992, 8));
        h.submit(read(4, 5008, 8));
        h.release_device();
        h.run();
        assert_eq!(h.completed_bios(), 4, "{kind}");
        let counters = h.queue().scheduler().counters();
        let aliases = counters.iter().find(|counter| counter.name == "aliases");
        if aliases.is_some_and(|counter| counter.value > 0) {
            assert_eq!(h.issued_extents()[0], (5000, 8), "{kind}: the alias grew");
            let sectors: u32 = h.issued().iter().map(|issued| issued.sector_count).sum();
            assert_eq!(sectors, 32, "{kind}: every sector is issued once");
        }
    }
}

// Proves drain empties every scheduler onto the dispatch list at a switch (2.6.18's
// `elevator_switch`, issue 28 row 16) and every request completes, for every pair of
// registered schedulers.
#[test]
fn drain_empties_into_the_next_scheduler() {
    for &from in SchedulerKind::ALL {
        for &to in SchedulerKind::ALL {
            let mut h = harness(from, 1);
            h.hold_device();
            for (_, bio) in random_workload(7, 100) {
                h.submit(bio);
            }
            let queued = h.queue().queued();
            let dispatched = h.queue().dispatch_count();
            let held = h.queue().held_count();
            h.switch_scheduler(to.build());
            assert_eq!(h.queue().queued(), 0, "{from} -> {to}");
            assert_eq!(h.queue().dispatch_count(), dispatched + queued, "{from} -> {to}");
            assert_eq!(h.queue().held_count(), held);
            h.release_device();
            h.run();
        }
    }
}

// Proves every Idle answer lies in the future (the queue asserts it too; this catches a
// scheduler that idles without ever letting time pass).
#[test]
fn idle_until_is_after_now() {
    for &kind in SchedulerKind::ALL {
        let mut h = harness(kind, 1);
        for (at, bio) in random_workload(3, 300) {
            h.submit_at(at, bio);
        }
        h.run();
        for &(at, until) in h.idle_answers() {
            assert!(until > at, "{kind}: idle at {at:?} until {until:?}");
        }
    }
}

// Proves defaults equal the kernel's: the table, a fresh instance and the independent list
// above agree for every tunable of every scheduler.
#[test]
fn defaults_equal_the_kernels() {
    for &kind in SchedulerKind::ALL {
        let scheduler = kind.build();
        for tunable in kind.tunables() {
            // A row for the spec name (one profile) wins over one for the kernel name.
            let row = |name: &str| {
                KERNEL_DEFAULTS.iter().find(|(row, key, _)| *row == name && *key == tunable.name)
            };
            let kernel = row(kind.spec_name())
                .or_else(|| row(kind.name()))
                .unwrap_or_else(|| panic!("{kind}: no kernel default listed for {}", tunable.name));
            assert_eq!(tunable.default, kernel.2, "{kind}.{} table default", tunable.name);
            assert_eq!(scheduler.tunable(tunable.name), Ok(kernel.2), "{kind}.{}", tunable.name);
        }
    }
    for (name, key, _) in KERNEL_DEFAULTS {
        let kind = SchedulerSpec::parse(name).unwrap().kind();
        assert!(kind.tunables().iter().any(|t| t.name == *key), "{name} lacks {key}");
    }
}

fn out_of_range(tunable: &TunableSpec) -> Vec<i64> {
    [tunable.min.checked_sub(1), tunable.max.checked_add(1)].into_iter().flatten().collect()
}

// Proves out-of-range values are rejected by the scheduler, and by the spec parser except for
// the 2.6.18 schedulers, whose parser clamps them into range as sysfs does, with a notice
// (issue 28 row 21); the bounds themselves are accepted and read back.
#[test]
fn out_of_range_tunables_are_rejected() {
    for &kind in SchedulerKind::ALL {
        for tunable in kind.tunables() {
            let mut scheduler = kind.build();
            for value in out_of_range(tunable) {
                assert!(
                    scheduler.set_tunable(tunable.name, value).is_err(),
                    "{kind}.{}",
                    tunable.name
                );
                let text = format!("{}:{}={value}", kind.spec_name(), tunable.name);
                if kind.clamps_tunables() {
                    let spec = SchedulerSpec::parse(&text).unwrap();
                    let used = spec.settings()[0].1;
                    assert!((tunable.min..=tunable.max).contains(&used), "{text}: {used}");
                    assert_eq!(spec.notices().len(), 1, "{text}");
                } else {
                    assert!(SchedulerSpec::parse(&text).is_err(), "{text}");
                }
            }
            assert_eq!(scheduler.tunable(tunable.name), Ok(tunable.default), "unchanged");
            let ignored = IGNORED_WRITES.contains(&(kind.spec_name(), tunable.name));
            for value in [tunable.min, tunable.max] {
                scheduler.set_tunable(tunable.name, value).unwrap();
                let expected = if ignored { tunable.default } else { value };
                assert_eq!(
                    scheduler.tunable(tunable.name),
                    Ok(expected),
                    "{kind}.{}",
                    tunable.name
                );
            }
        }
        let mut scheduler = kind.build();
        assert!(scheduler.set_tunable("no_such_tunable", 1).is_err());
        assert!(scheduler.tunable("no_such_tunable").is_err());
    }
}

// Proves overlapping I/O keeps its submission order under every scheduler: the second write of
// a region is not issued before the first has completed, and a read of the region sees the
// last write (it is issued after that write completes), while unrelated traffic competes.
#[test]
fn overlapping_writes_keep_their_submission_order() {
    for &kind in SchedulerKind::ALL {
        for depth in [1, 4] {
            let mut h = harness(kind, depth);
            h.hold_device();
            for (_, bio) in random_workload(11, 60).into_iter().filter(|(_, b)| b.start.0 > 8192) {
                h.submit(bio);
            }
            // Later writes sit at lower sectors, where a sorting scheduler would take them first.
            let first = h.submit(write(1, 4200, 64));
            let second = h.submit(write(2, 4100, 128));
            let third = h.submit(write(3, 4000, 256).with_flags(RequestFlags::SYNC));
            let reader = h.submit(read(4, 4000, 256));
            assert!(
                [first, second, third, reader]
                    .iter()
                    .all(|outcome| matches!(outcome, elevator_core::Submitted::Queued { .. }))
            );
            h.release_device();
            h.run();
            let find = |process: u32, start: u64| {
                *h.issued()
                    .iter()
                    .find(|i| i.process.0 == process && i.start == start)
                    .unwrap_or_else(|| panic!("{kind}: request of {process} at {start}"))
            };
            let (first, second, third) = (find(1, 4200), find(2, 4100), find(3, 4000));
            let reader = find(4, 4000);
            assert!(second.at >= first.done_at, "{kind} depth {depth}: write order");
            assert!(third.at >= second.done_at, "{kind} depth {depth}: write order");
            assert!(reader.at >= third.done_at, "{kind} depth {depth}: read after write");
            assert_eq!(reader.op, Op::Read);
        }
    }
}

// Proves tunables round-trip through the spec's canonical form for every scheduler: all of them
// at once, and each alone at its maximum, read back from the built scheduler. (Read back one at
// a time because two sysfs names can set one variable: bfq's `slice_idle` and `slice_idle_us`.)
#[test]
fn specs_round_trip() {
    for &kind in SchedulerKind::ALL {
        let settings: Vec<String> =
            kind.tunables().iter().map(|t| format!("{}={}", t.name, t.max)).collect();
        let text = if settings.is_empty() {
            kind.name().to_owned()
        } else {
            format!("{}:{}", kind.name(), settings.join(","))
        };
        let spec = SchedulerSpec::parse(&text).unwrap();
        assert_eq!(SchedulerSpec::parse(&spec.to_string()).unwrap(), spec);
        for tunable in kind.tunables() {
            let text = format!("{}:{}={}", kind.name(), tunable.name, tunable.max);
            let spec = SchedulerSpec::parse(&text).unwrap();
            assert_eq!(SchedulerSpec::parse(&spec.to_string()).unwrap(), spec);
            assert_eq!(spec.build().tunable(tunable.name), Ok(tunable.max), "{text}");
        }
    }
}
