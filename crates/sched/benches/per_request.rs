//! Cost per request of each scheduler: insert + dispatch + activate + complete of one request in
//! steady state with 128 others queued (random sectors, so nothing merges). A scheduler that
//! answers `Idle` is asked again at the instant it names, as a driver would, and that cost counts.
//!
//! Two measurements per scheduler:
//! * `scheduler/NAME` — the scheduler alone, driven through a bare `RequestTable` (what the
//!   issues' targets refer to: noop <= 50 ns, deadline <= 150 ns, anticipatory <= 400 ns);
//! * `queue/NAME` — the whole block layer: `BlockQueue::submit`, `next_request`, `complete`
//!   (merge lookups, pool, overlap index, dispatch list), the cost the simulator and the live
//!   engine pay.
//!
//! A scheduler that idles (cfq) answers `Idle` now and then; the loop then moves the clock to
//! the wake-up and asks again, as the simulator would, and that cost counts too.
//!
//! The same two at 4096 queued (`scheduler-4096/NAME`, `queue-4096/NAME`) for the schedulers a
//! blk-mq host or a long run fills that deep (scheduler tags of 2 × 128 per hardware queue times
//! many queues; a bfq run with many writers): the cost per request should not grow with the
//! queue, and a path that does shows up here as the ratio of the two figures.
//!
//! Run with `cargo bench -p elevator-sched --bench per_request`.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use elevator_core::{
    Bio, BioTag, BlockQueue, Completion, Ctx, Dispatch, Duration, Instant, Prng, ProcessId, Pull,
    QueueConfig, Request, RequestTable, Sector,
};
use elevator_sched::SchedulerKind;

/// Requests queued in the figures the issues' targets refer to.
const QUEUED: usize = 128;
/// Requests queued in the deep-queue figures.
const DEEP_QUEUED: usize = 4096;
/// Schedulers measured deep as well: those a blk-mq host (tags per hardware queue × queues) or a
/// long-running study fills with thousands of requests.
const DEEP: &[SchedulerKind] = &[
    SchedulerKind::Deadline,
    SchedulerKind::Cfq,
    SchedulerKind::MqDeadline,
    SchedulerKind::Bfq,
    SchedulerKind::Kyber,
];
const SPAN_SECTORS: u64 = 1 << 30;

fn random_bio(prng: &mut Prng, tag: u64) -> Bio {
    let start = prng.below(SPAN_SECTORS / 8) * 8;
    let process = ProcessId(1 + prng.below(4) as u32);
    if prng.below(4) == 0 {
        Bio::write(process, Sector(start), 8, BioTag(tag))
    } else {
        Bio::read(process, Sector(start), 8, BioTag(tag))
    }
}

fn scheduler_only(c: &mut Criterion, kind: SchedulerKind, queued: usize, group: &str) {
    c.bench_function(&format!("{group}/{kind}"), |b| {
        let mut table = RequestTable::with_capacity(queued + 1);
        let mut scheduler = kind.build();
        let mut prng = Prng::new(1);
        let mut now = Instant::ZERO;
        for tag in 0..queued as u64 {
            let id = table.insert(Request::from_bio(&random_bio(&mut prng, tag), now)).unwrap();
            scheduler.insert(&Ctx { now, requests: &table, in_flight: 0, depth: 1 }, id);
        }
        let mut tag = queued as u64;
        b.iter(|| {
            now += Duration::from_micros(10);
            let bio = random_bio(&mut prng, tag);
            tag += 1;
            let id = table.insert(Request::from_bio(&bio, now)).unwrap();
            scheduler.insert(&Ctx { now, requests: &table, in_flight: 0, depth: 1 }, id);
            let done = loop {
                let cx = Ctx { now, requests: &table, in_flight: 0, depth: 1 };
                match scheduler.dispatch(&cx) {
                    Dispatch::Issue(id) => break id,
                    Dispatch::Idle { until } => now = until,
                    Dispatch::Empty | Dispatch::Throttled => {
                        unreachable!("{kind}: {queued} + 1 requests queued, none in flight")
                    }
                }
            };
            scheduler.activate(&Ctx { now, requests: &table, in_flight: 1, depth: 1 }, done);
            let completion = Completion {
                id: done,
                issued_at: now,
                device_time: Duration::ZERO,
                total_time: Duration::ZERO,
            };
            scheduler.complete(&Ctx { now, requests: &table, in_flight: 1, depth: 1 }, &completion);
            black_box(table.remove(done));
        });
    });
}

fn whole_queue(c: &mut Criterion, kind: SchedulerKind, queued: usize, group: &str) {
    c.bench_function(&format!("{group}/{kind}"), |b| {
        b.iter_batched_ref(
            || {
                // Room for all of them in one pool class (the default 128 is the kernel's).
                let config = QueueConfig {
                    nr_requests: (queued as u32 + 2).max(QueueConfig::default().nr_requests),
                    ..QueueConfig::default()
                };
                let mut queue = BlockQueue::new(config, kind.build()).unwrap();
                let mut prng = Prng::new(1);
                let now = Instant::ZERO;
                for tag in 0..queued as u64 {
                    queue.submit(now, random_bio(&mut prng, tag)).unwrap();
                }
                // One is in flight now; complete it so each iteration starts with `queued`.
                let Pull::Issue(id) = queue.next_request(now) else { unreachable!() };
                queue.complete(now, id, &mut Vec::new());
                queue.submit(now, random_bio(&mut prng, queued as u64)).unwrap();
                (queue, prng, now, Vec::with_capacity(4), queued as u64 + 1)
            },
            |(queue, prng, now, bios, tag)| {
                for _ in 0..1_000 {
                    *now += Duration::from_micros(10);
                    queue.submit(*now, random_bio(prng, *tag)).unwrap();
                    *tag += 1;
                    let id = loop {
                        match queue.next_request(*now) {
                            Pull::Issue(id) => break id,
                            Pull::Idle { until } => *now = until,
                            other => unreachable!("{kind}: {other:?} with {queued} + 1 queued"),
                        }
                    };
                    bios.clear();
                    black_box(queue.complete(*now, id, bios));
                }
            },
            BatchSize::LargeInput,
        );
    });
}

fn per_request(c: &mut Criterion) {
    for &kind in SchedulerKind::ALL {
        scheduler_only(c, kind, QUEUED, "scheduler");
    }
    for &kind in SchedulerKind::ALL {
        whole_queue(c, kind, QUEUED, "queue");
    }
    for &kind in DEEP {
        scheduler_only(c, kind, DEEP_QUEUED, "scheduler-4096");
    }
    for &kind in DEEP {
        whole_queue(c, kind, DEEP_QUEUED, "queue-4096");
    }
}

criterion_group!(benches, per_request);
criterion_main!(benches);
