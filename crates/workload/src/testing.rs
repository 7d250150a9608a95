//! A small driver for the workloads' tests: a device that completes each operation a fixed
//! latency after submission (the latency may depend on the operation), phases run one after
//! another, and a log of what every issuer submitted.

use std::collections::BTreeMap;

use elevator_core::{Duration, Instant, Prng};

use crate::{Io, IoId, Poll, Target, WorkloadPlan, WorkloadSpec};

/// One submitted operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Record {
    /// Index of its phase in the plan.
    pub(crate) phase: usize,
    /// Index of its issuer in the phase.
    pub(crate) issuer: usize,
    pub(crate) submitted: Instant,
    pub(crate) completed: Instant,
    /// Operations of this issuer in flight once this one was submitted (itself included).
    pub(crate) in_flight: usize,
    pub(crate) io: Io,
    /// The priority its issuer gave it (asked at submission, as the simulator asks).
    pub(crate) priority: elevator_core::IoPriority,
}

/// What a whole plan did.
#[derive(Debug)]
pub(crate) struct Run {
    /// Every operation, in submission order.
    pub(crate) records: Vec<Record>,
    /// Per phase: its name, and its issuers' counters summed by name in first-seen order.
    pub(crate) phases: Vec<(String, Vec<(&'static str, u64)>)>,
}

impl Run {
    /// The operations of phase `phase`.
    pub(crate) fn phase(&self, phase: usize) -> Vec<Record> {
        self.records.iter().filter(|record| record.phase == phase).copied().collect()
    }

    /// A counter of phase `phase` (0 if no issuer reported it).
    pub(crate) fn counter(&self, phase: usize, name: &str) -> u64 {
        self.phases[phase].1.iter().find(|(key, _)| *key == name).map_or(0, |(_, value)| *value)
    }
}

/// Parses `text` and plans it for `targets` with seed 7.
pub(crate) fn plan(text: &str, targets: &[Target]) -> WorkloadPlan {
    WorkloadSpec::parse(text).unwrap().plan(targets, &Prng::new(7)).unwrap()
}

/// Targets named and sized as given, for a test's plan.
pub(crate) fn devices(names_and_bytes: &[(&str, u64)]) -> Vec<Target> {
    names_and_bytes
        .iter()
        .map(|&(name, capacity_bytes)| Target {
            name: name.to_owned(),
            capacity_bytes,
            zones: None,
        })
        .collect()
}

/// The message of the error `text` fails to parse with.
pub(crate) fn parse_error(text: &str) -> String {
    WorkloadSpec::parse(text).unwrap_err().to_string()
}

/// The message of the error `text` parses but fails to plan on `targets` with.
pub(crate) fn plan_error(text: &str, targets: &[Target]) -> String {
    WorkloadSpec::parse(text).unwrap().plan(targets, &Prng::new(1)).unwrap_err().to_string()
}

/// Runs every phase of `plan` in order, each starting when the previous one ended, against a
/// device that completes each operation `latency(io)` after submission.
pub(crate) fn run(plan: WorkloadPlan, latency: impl Fn(&Io) -> Duration) -> Run {
    let mut records = Vec::new();
    let mut phases = Vec::new();
    let mut now = Instant::ZERO;
    for (phase_index, phase) in plan.phases.into_iter().enumerate() {
        let mut issuers = phase.issuers;
        let mut completions: BTreeMap<(Instant, u64), (usize, IoId)> = BTreeMap::new();
        let mut wakes: BTreeMap<(Instant, u64), usize> = BTreeMap::new();
        // The key of each issuer's pending wake-up, so a post can end its sleep early.
        let mut sleeping: Vec<Option<(Instant, u64)>> = vec![None; issuers.len()];
        let mut posted = Vec::new();
        let mut in_flight = vec![0usize; issuers.len()];
        let mut done = vec![false; issuers.len()];
        let mut order = 0u64;
        let mut ready: Vec<usize> = (0..issuers.len()).collect();
        let mut steps = 0u64;
        loop {
            steps += 1;
            assert!(steps < 5_000_000, "the phase never ended");
            // Posts made while polling make more issuers ready at the same instant.
            while !ready.is_empty() {
                for index in std::mem::take(&mut ready) {
                    while !done[index] {
                        let poll = issuers[index].poll(now);
                        issuers[index].take_posts(&mut posted);
                        deliver(&mut posted, &mut sleeping, &mut wakes, &mut ready);
                        match poll {
                            Poll::Submit(io) => {
                                let completed = now + latency(&io);
                                in_flight[index] += 1;
                                records.push(Record {
                                    phase: phase_index,
                                    issuer: index,
                                    submitted: now,
                                    completed,
                                    in_flight: in_flight[index],
                                    io,
                                    priority: issuers[index].priority(),
                                });
                                completions.insert((completed, order), (index, io.id));
                                order += 1;
                            }
                            Poll::Sleep { until } => {
                                assert!(until > now, "a sleep must end in the future");
                                // A new sleep replaces a pending one (an issuer with I/O in
                                // flight may sleep again when one completes).
                                if let Some(stale) = sleeping[index].take() {
                                    wakes.remove(&stale);
                                }
                                wakes.insert((until, order), index);
                                sleeping[index] = Some((until, order));
                                order += 1;
                                break;
                            }
                            Poll::Wait => break,
                            Poll::Done => done[index] = true,
                        }
                    }
                }
            }
            let next_completion = completions.keys().next().copied();
            let next_wake = wakes.keys().next().copied();
            let completion_first = match (next_completion, next_wake) {
                (None, None) => break,
                (Some(completion), Some(wake)) => completion.0 <= wake.0,
                (completion, _) => completion.is_some(),
            };
            if completion_first {
                let key = next_completion.unwrap();
                let (index, id) = completions.remove(&key).unwrap();
                now = key.0;
                in_flight[index] -= 1;
                issuers[index].complete(now, id);
                ready.push(index);
                issuers[index].take_posts(&mut posted);
                deliver(&mut posted, &mut sleeping, &mut wakes, &mut ready);
            } else {
                let key = next_wake.unwrap();
                let index = wakes.remove(&key).unwrap();
                sleeping[index] = None;
                now = key.0;
                ready.push(index);
            }
        }
        assert!(done.iter().all(|&d| d), "an issuer of phase {} never finished", phase.name);
        let mut counters: Vec<(&'static str, u64)> = Vec::new();
        for issuer in &issuers {
            for (name, value) in issuer.counters() {
                match counters.iter_mut().find(|(key, _)| *key == name) {
                    Some((_, sum)) => *sum += value,
                    None => counters.push((name, value)),
                }
            }
        }
        phases.push((phase.name, counters));
    }
    Run { records, phases }
}

/// Ends the sleep of every issuer in `posted` that sleeps, making it ready.
fn deliver(
    posted: &mut Vec<usize>,
    sleeping: &mut [Option<(Instant, u64)>],
    wakes: &mut BTreeMap<(Instant, u64), usize>,
    ready: &mut Vec<usize>,
) {
    for target in posted.drain(..) {
        if let Some(key) = sleeping[target].take() {
            wakes.remove(&key);
            ready.push(target);
        }
    }
}

/// Runs the first phase of `plan` with one latency for every operation; returns (issuer,
/// submit time, io) in submission order.
pub(crate) fn drive(mut plan: WorkloadPlan, latency: Duration) -> Vec<(usize, Instant, Io)> {
    plan.phases.truncate(1);
    let run = run(plan, |_| latency);
    run.records.into_iter().map(|record| (record.issuer, record.submitted, record.io)).collect()
}
