//! Property tests: arbitrary request streams, queue configurations, tunables, completion orders
//! and mid-run switches, against the queue's full audit after every step; arbitrary text
//! against the spec parser. Shrunk failures are kept in `proptest-regressions/` and replayed.

use elevator_core::{
    Bio, BioTag, Duration, Instant, IoPriority, Op, Prng, ProcessId, QueueConfig, RequestFlags,
    Sector,
};
use elevator_sched::testkit::Harness;
use elevator_sched::{SchedulerKind, SchedulerSpec};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Arrival {
    delay_us: u64,
    op: u8,
    block: u64,
    sectors: u32,
    process: u32,
    priority: u8,
}

fn arrival() -> impl Strategy<Value = Arrival> {
    (0..3_000u64, 0..20u8, 0..2_048u64, 1..=256u32, 1..=6u32, 0..16u8).prop_map(
        |(delay_us, op, block, sectors, process, priority)| Arrival {
            delay_us,
            op,
            block,
            sectors,
            process,
            priority,
        },
    )
}

fn bio(arrival: &Arrival, max_sectors: u32) -> Bio {
    let priority = match arrival.priority {
        0..=7 => IoPriority::best_effort(arrival.priority).unwrap(),
        8..=11 => IoPriority::realtime(arrival.priority - 8).unwrap(),
        12 => IoPriority::idle(),
        _ => IoPriority::DEFAULT,
    };
    // Half the starts are 8-aligned so that contiguous runs and merges are common.
    let start = if arrival.block % 2 == 0 { arrival.block * 8 } else { arrival.block * 5 };
    let sector_count = arrival.sectors.min(max_sectors);
    let (op, flags, sector_count) = match arrival.op {
        0..=8 => (Op::Read, RequestFlags::SYNC, sector_count),
        9..=14 => (Op::Write, RequestFlags::NONE, sector_count),
        15..=17 => (Op::Write, RequestFlags::SYNC, sector_count),
        18 => (Op::Discard, RequestFlags::NONE, sector_count),
        _ => (Op::Flush, RequestFlags::SYNC, 0),
    };
    let flags = if arrival.op == 17 { flags | RequestFlags::FUA } else { flags };
    Bio {
        op,
        start: Sector(start),
        sector_count,
        flags,
        priority,
        process: ProcessId(arrival.process),
        tag: BioTag(0),
        cpu: 0,
    }
}

/// A scheduler spec with every tunable set to an arbitrary in-range value.
fn scheduler_spec(kind: SchedulerKind, seed: u64) -> SchedulerSpec {
    let mut prng = Prng::new(seed).fork("tunables");
    let settings: Vec<String> = kind
        .tunables()
        .iter()
        .map(|tunable| {
            // Small values exercise the interesting edges; huge ones only stretch deadlines.
            let high = tunable.max.min(tunable.min.saturating_add(10_000));
            let span = u64::try_from(high - tunable.min).unwrap_or(0);
            let value = tunable.min + prng.range_inclusive(0, span) as i64;
            format!("{}={value}", tunable.name)
        })
        .collect();
    let text = if settings.is_empty() {
        kind.name().to_owned()
    } else {
        format!("{}:{}", kind.name(), settings.join(","))
    };
    SchedulerSpec::parse(&text).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    // Proves that under any registered scheduler, with any in-range tunables, any queue
    // configuration, any completion order and a scheduler switch in the middle, every bio
    // completes exactly once and the queue's invariants hold after every step.
    #[test]
    fn any_stream_completes_with_invariants_intact(
        kind_index in 0..SchedulerKind::ALL.len(),
        next_index in 0..SchedulerKind::ALL.len(),
        tunable_seed in any::<u64>(),
        service_seed in any::<u64>(),
        nr_requests in 4..64u32,
        depth in 1..8u32,
        max_sectors_kb in 4..512u32,
        plugging in any::<bool>(),
        switch_after in 0..200usize,
        arrivals in proptest::collection::vec(arrival(), 1..200),
    ) {
        let kind = SchedulerKind::ALL[kind_index];
        let config = QueueConfig {
            nr_requests,
            depth,
            max_sectors_kb,
            plugging,
            ..QueueConfig::default()
        };
        let mut service = Prng::new(service_seed).fork("service");
        let mut h = Harness::new(scheduler_spec(kind, tunable_seed).build(), config.clone())
            .with_service(Box::new(move |_, _| Duration::from_micros(50 + service.below(4_000))));
        let mut at = Instant::ZERO;
        let mut switch_at = None;
        for (index, arrival) in arrivals.iter().enumerate() {
            at += Duration::from_micros(arrival.delay_us);
            h.submit_at(at, bio(arrival, config.max_sectors()));
            if index == switch_after {
                switch_at = Some(at);
            }
        }
        if let Some(switch_at) = switch_at {
            h.run_until(switch_at);
            h.switch_scheduler(scheduler_spec(SchedulerKind::ALL[next_index], !tunable_seed).build());
        }
        h.run();
        prop_assert_eq!(h.completed_bios(), arrivals.len());
        prop_assert!(h.queue().is_quiet());
    }

    // Proves the spec parser never panics on arbitrary text.
    #[test]
    fn the_spec_parser_never_panics(text in "\\PC{0,64}") {
        let _ = SchedulerSpec::parse(&text);
    }

    // Proves spec-shaped text with arbitrary keys and values parses or fails cleanly, and what
    // parses prints back to itself.
    #[test]
    fn spec_shaped_text_round_trips(
        name in prop::sample::select(vec!["noop", "deadline", "cfq", "as", "none", ""]),
        params in proptest::collection::vec(("[a-z_]{0,14}", "[-0-9a-z.]{0,8}"), 0..5),
    ) {
        let params: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let text = if params.is_empty() { name.to_owned() } else { format!("{name}:{}", params.join(",")) };
        if let Ok(spec) = SchedulerSpec::parse(&text) {
            prop_assert_eq!(SchedulerSpec::parse(&spec.to_string()).unwrap(), spec);
        }
    }
}
