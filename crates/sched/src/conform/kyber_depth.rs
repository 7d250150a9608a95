//! Kyber's depths over time against the kernel's (issue 25: "its domain depths over time
//! within one step of the kernel's"), scored beside the decision replay.
//!
//! The decision replay forces ours's depths from the capture's `kyber_adjust` events, so that
//! the dispatch logic is judged apart from the timer (`modern-vs-kernel.md` §4). The depth score
//! runs in the same pass a second kyber of ours, the **tracker**, that schedules nothing: it is
//! fed every completion of a read, write or discard the replay sees
//! ([`Kyber::conform_latency_sample`], the kernel's `kyber_completed_request`) with the
//! capture's latencies — I/O latency = `block_rq_complete` − `block_rq_issue`, total latency =
//! `block_rq_complete` − `block_getrq` (the request's `start_time_ns`, §3 item 6) — and runs its
//! own timer and histograms at the kernel's jiffies. Since kyber's timer reads nothing but those
//! samples, the tracker's depths are what ours would choose on the kernel's completions.
//!
//! **Jiffies.** The tracker's clock is the capture's, in whole jiffies of the header's `HZ`,
//! aligned to the kernel's ticks: the kernel's timer runs in the softirq of a tick, so the
//! first `kyber_latency` or `kyber_adjust` event gives the ticks' phase (its time modulo a
//! jiffy). A capture without one is taken to start on a tick, as the decision replay does.
//!
//! **The score.** At every decision and at every kernel `kyber_adjust`, for each of the read,
//! write and discard domains, the tracker's depth (its timer run up to that jiffy) is compared
//! with the kernel's: the depth of its last `kyber_adjust` (its maximum before the first). The
//! two are **equal**, or **within one step** when the tracker's depth is the kernel's, the
//! kernel's depth before its last adjustment, or its depth after its next one: a step is one
//! adjustment of the timer (one evaluation of the domain's window rescales the depth by
//! (bucket + 1) / 4, clamped), so "within one step" says the two sequences of depths are the
//! same up to one adjustment made a timer run earlier or later. The kernel's adjustments and
//! evaluations are matched with the tracker's at the same jiffy ±1 (the softirq may run a tick
//! late); a stretch where the depths differ is listed with the kernel's last evaluations of the
//! domain and the tracker's, and the tracker's histograms.
//!
//! # Deviations
//!
//! * Completions of requests that bypassed the scheduler (never inserted: flushes with data,
//!   passthrough) are not fed: the kernel counts them too, but their issue is not tracked. Their
//!   number is reported (`unfed_completions`).
//! * A capture that starts after kyber's first adjustments starts the tracker at the maximum
//!   depths with empty histograms; `elevator conform` attaches a fresh kyber, so its captures
//!   start as the kernel's did.

use elevator_core::{Duration, Instant, Op};
use elevator_trace::sched_log::{SchedCapture, SchedEvent};

use super::report::{DepthDifference, DomainDepthScore, KyberDepthScore};
use crate::kyber::{Domain, Kyber, KyberEvaluation};

/// The measured domains' indexes in kyber's domain order (read, write, discard).
const MEASURED: [Domain; 3] = Domain::MEASURED;

/// A kernel evaluation (`kyber_latency`): time, whether I/O latency, percentile, bucket,
/// samples.
#[derive(Clone, Copy, Debug)]
struct KernelEvaluation {
    time_ns: u64,
    io_latency: bool,
    percentile: u32,
    bucket: usize,
    samples: u32,
}

/// The tracker and the score so far.
pub(super) struct DepthTracker {
    kyber: Box<Kyber>,
    hz: u64,
    phase_ns: u64,
    offset: Duration,
    /// The kernel's adjustments of each measured domain, (time, depth), in order.
    kernel_adjusts: [Vec<(u64, u32)>; 3],
    /// The kernel's evaluations of each measured domain, in order.
    kernel_evaluations: [Vec<KernelEvaluation>; 3],
    domains: [DomainDepthScore; 3],
    /// Whether the last sample of a domain differed.
    differing: [bool; 3],
    differences: Vec<DepthDifference>,
    max_differences: usize,
    completions_fed: u64,
    unfed_completions: u64,
    /// The jiffies at which the kernel's timer visibly ran (a `kyber_latency` or
    /// `kyber_adjust`), in order; empty unless ours's timer is aligned with them.
    kernel_runs: Vec<u64>,
    /// Times ours's timer was moved to a run of the kernel's one jiffy away.
    timer_moves: u64,
    /// The last move: the expiry's jiffy and the kernel run's.
    moved: Option<(u64, u64)>,
}

/// The index among the measured domains of a domain as kyber's tracepoints name it.
fn measured_index(name: &str) -> Option<usize> {
    MEASURED.iter().position(|domain| domain.name().eq_ignore_ascii_case(name))
}

/// The kernel's ticks' phase (ns modulo a jiffy) from the times its timer visibly ran: the
/// softirq runs at a tick or some µs after it, never before, so the phase is the earliest of
/// the times' residues, read on the circle around the first one (a residue just below a
/// jiffy is just before 0). 0 without timer events.
fn tick_phase(times: &[u64], jiffy_ns: u64) -> u64 {
    let Some(&first) = times.first() else { return 0 };
    let reference = (first % jiffy_ns) as i64;
    let half = (jiffy_ns / 2) as i64;
    let earliest = times
        .iter()
        .map(|&at| {
            let residue = (at % jiffy_ns) as i64 - reference;
            // Into (−J/2, J/2].
            if residue > half {
                residue - jiffy_ns as i64
            } else if residue <= -half {
                residue + jiffy_ns as i64
            } else {
                residue
            }
        })
        .min()
        .unwrap_or(0);
    (reference + earliest).rem_euclid(jiffy_ns as i64) as u64
}

impl DepthTracker {
    /// A tracker for a kyber capture: `kyber` is a fresh instance of ours built as the replay
    /// builds it (tick rate, `nr_requests`, tunables).
    pub(super) fn new(
        capture: &SchedCapture,
        mut kyber: Box<Kyber>,
        offset: Duration,
        max_differences: usize,
        round_up: bool,
        sync_timer: bool,
    ) -> DepthTracker {
        kyber.conform_log_timer();
        if round_up {
            kyber.conform_timer_round_up();
        }
        let hz = u64::from(capture.header.hz.max(1));
        let jiffy_ns = 1_000_000_000 / hz;
        let mut kernel_adjusts: [Vec<(u64, u32)>; 3] = Default::default();
        let mut kernel_evaluations: [Vec<KernelEvaluation>; 3] = Default::default();
        for event in &capture.events {
            match event {
                SchedEvent::KyberAdjust { time_ns, domain, depth } => {
                    if let Some(index) = measured_index(domain) {
                        kernel_adjusts[index].push((*time_ns, *depth));
                    }
                }
                SchedEvent::KyberLatency {
                    time_ns,
                    domain,
                    kind,
                    percentile,
                    numerator,
                    samples,
                    ..
                } => {
                    if let Some(index) = measured_index(domain) {
                        kernel_evaluations[index].push(KernelEvaluation {
                            time_ns: *time_ns,
                            // The kernel prints `total` and `I/O` (kyber_latency_type_names).
                            io_latency: !kind.eq_ignore_ascii_case("total"),
                            percentile: *percentile,
                            // It prints bucket + 1 over 1 << KYBER_LATENCY_SHIFT.
                            bucket: numerator.saturating_sub(1) as usize,
                            samples: *samples,
                        });
                    }
                }
                _ => {}
            }
        }
        let timer_times: Vec<u64> = capture
            .events
            .iter()
            .filter_map(|event| match event {
                SchedEvent::KyberAdjust { time_ns, .. }
                | SchedEvent::KyberLatency { time_ns, .. } => Some(*time_ns),
                _ => None,
            })
            .collect();
        let domains = MEASURED.map(|domain| DomainDepthScore {
            domain: domain.name().to_owned(),
            samples: 0,
            equal: 0,
            within_one_step: 0,
            within_one_step_fraction: 1.0,
            kernel_adjusts: 0,
            ours_adjusts: 0,
            adjusts_matched: 0,
            difference_stretches: 0,
        });
        let mut tracker = DepthTracker {
            kyber,
            hz,
            phase_ns: tick_phase(&timer_times, jiffy_ns),
            offset,
            kernel_adjusts,
            kernel_evaluations,
            domains,
            differing: [false; 3],
            differences: Vec::new(),
            max_differences,
            completions_fed: 0,
            unfed_completions: 0,
            kernel_runs: Vec::new(),
            timer_moves: 0,
            moved: None,
        };
        if sync_timer {
            let mut runs: Vec<u64> = timer_times.iter().map(|&at| tracker.jiffy(at)).collect();
            runs.dedup();
            tracker.kernel_runs = runs;
        }
        tracker
    }

    /// Aligns ours's armed timer with the kernel's run one jiffy away, if there is one: the
    /// kernel's timer runs one jiffy late at times (a timer queued on one CPU's wheel whose
    /// tick ran before the jiffy it waited for was counted), which the trace shows but nothing
    /// in it predicts; left alone, ours would run a jiffy early and then evaluate other
    /// samples at every later run. Runs that the trace does not show (no histogram evaluated)
    /// leave ours on its own schedule.
    fn align_timer(&mut self) {
        let Some(due) = self.kyber.timer_due() else { return };
        let jiffy = self.jiffy_of(due);
        // A completion re-arming the timer pulls it back to its expiry (`timer_reduce`): the
        // expiry already moved goes to the same run again.
        let run = match self.moved {
            Some((from, to)) if from == jiffy => to,
            _ => {
                let index = self.kernel_runs.partition_point(|&run| run + 1 < jiffy);
                let Some(&run) = self.kernel_runs.get(index) else { return };
                if run == jiffy || run > jiffy + 1 {
                    return;
                }
                self.moved = Some((jiffy, run));
                self.timer_moves += 1;
                run
            }
        };
        let start = u128::from(run) * 1_000_000_000 / u128::from(self.hz);
        self.kyber.conform_move_timer(Instant::from_nanos(self.offset.as_nanos() + start as u64));
    }

    /// The tracker's jiffy of `time_ns` (ns since the capture's first event): ticks fall at
    /// the phase plus whole jiffies, and jiffy 0 is the one before the capture's first tick.
    fn jiffy(&self, time_ns: u64) -> u64 {
        let shifted =
            u128::from(time_ns) + 1_000_000_000 / u128::from(self.hz) - u128::from(self.phase_ns);
        (shifted * u128::from(self.hz) / 1_000_000_000) as u64
    }

    /// What the tracker is fed for `time_ns`: the start of its jiffy plus the offset.
    fn now(&self, time_ns: u64) -> Instant {
        let start = u128::from(self.jiffy(time_ns)) * 1_000_000_000 / u128::from(self.hz);
        Instant::from_nanos(self.offset.as_nanos() + start as u64)
    }

    /// The jiffy of an instant of the tracker's clock.
    fn jiffy_of(&self, at: Instant) -> u64 {
        let since = u128::from(at.as_nanos().saturating_sub(self.offset.as_nanos()));
        (since * u128::from(self.hz) / 1_000_000_000) as u64
    }

    /// A completion of `op` at `time_ns` with its two latencies.
    pub(super) fn completion(&mut self, time_ns: u64, op: Op, device_ns: u64, total_ns: u64) {
        let now = self.now(time_ns);
        self.completions_fed += 1;
        self.align_timer();
        self.kyber.conform_latency_sample(
            now,
            op,
            Duration::from_nanos(device_ns),
            Duration::from_nanos(total_ns),
        );
    }

    /// A completion the tracker cannot be fed (its request bypassed the scheduler).
    pub(super) fn unfed(&mut self) {
        self.unfed_completions += 1;
    }

    /// The kernel's depths of domain `index` at `time_ns`: before its last adjustment, now,
    /// after its next.
    fn kernel_depths(&self, index: usize, time_ns: u64) -> (u32, u32, u32) {
        let adjusts = &self.kernel_adjusts[index];
        let done = adjusts.partition_point(|&(at, _)| at <= time_ns);
        let max = MEASURED[index].depth_max();
        let depth_at = |n: usize| if n == 0 { max } else { adjusts[n - 1].1 };
        let next = adjusts.get(done).map_or(depth_at(done), |&(_, depth)| depth);
        (depth_at(done.saturating_sub(1)), depth_at(done), next)
    }

    /// Compares the depths at `time_ns` (a decision or a kernel adjustment).
    pub(super) fn sample(&mut self, time_ns: u64) {
        let now = self.now(time_ns);
        self.align_timer();
        self.kyber.conform_run_timer(now);
        for (index, domain) in MEASURED.into_iter().enumerate() {
            let (previous, kernel, next) = self.kernel_depths(index, time_ns);
            let ours = self.kyber.depth(domain);
            let score = &mut self.domains[index];
            score.samples += 1;
            let within = ours == kernel || ours == previous || ours == next;
            score.equal += u64::from(ours == kernel);
            score.within_one_step += u64::from(within);
            let differs = ours != kernel;
            if differs && !self.differing[index] {
                score.difference_stretches += 1;
                if self.differences.len() < self.max_differences {
                    let difference = self.difference(index, time_ns, (previous, kernel, next));
                    self.differences.push(difference);
                }
            }
            self.differing[index] = differs;
        }
    }

    fn difference(&self, index: usize, time_ns: u64, kernel: (u32, u32, u32)) -> DepthDifference {
        let domain = MEASURED[index];
        let ours = self.kyber.depth(domain);
        let kernel_evaluations = [false, true]
            .into_iter()
            .filter_map(|io| {
                self.kernel_evaluations[index]
                    .iter()
                    .rev()
                    .find(|e| e.io_latency == io && e.time_ns <= time_ns)
                    .map(|e| {
                        format!(
                            "{} p{}: bucket {} of {} samples at {:.3} ms",
                            if io { "I/O" } else { "total" },
                            e.percentile,
                            e.bucket,
                            e.samples,
                            e.time_ns as f64 / 1e6
                        )
                    })
            })
            .collect();
        let log = self.kyber.conform_timer_log();
        let ours_evaluations = [false, true]
            .into_iter()
            .filter_map(|io| {
                log?.evaluations
                    .iter()
                    .rev()
                    .find(|e| e.domain == domain && e.io_latency == io)
                    .map(|e| self.evaluation_text(e))
            })
            .collect();
        let [total, io] = self.kyber.conform_histograms(domain);
        DepthDifference {
            time_ns,
            jiffy: self.jiffy(time_ns),
            domain: domain.name().to_owned(),
            kernel_previous: kernel.0,
            kernel_depth: kernel.1,
            kernel_next: kernel.2,
            ours_depth: ours,
            within_one_step: ours == kernel.0 || ours == kernel.1 || ours == kernel.2,
            kernel_evaluations,
            ours_evaluations,
            ours_histograms: format!("total {total:?}, I/O {io:?}"),
        }
    }

    fn evaluation_text(&self, e: &KyberEvaluation) -> String {
        format!(
            "{} p{}: bucket {} of {} samples {:?} at jiffy {}",
            if e.io_latency { "I/O" } else { "total" },
            e.percentile,
            e.bucket,
            e.samples,
            e.histogram,
            self.jiffy_of(e.fired)
        )
    }

    /// The score: the samples' counts, and the kernel's adjustments and evaluations matched
    /// with the tracker's (same domain, same value, same jiffy ±1, each used once).
    pub(super) fn finish(mut self) -> KyberDepthScore {
        let log = self.kyber.conform_timer_log().cloned().unwrap_or_default();
        let near = |a: u64, b: u64| a.abs_diff(b) <= 1;
        let mut evaluations_matched = 0;
        let mut evaluations_same_bucket = 0;
        let mut evaluations_same_samples = 0;
        let mut kernel_evaluations = 0;
        for (index, domain) in MEASURED.into_iter().enumerate() {
            // Adjustments: the same new depth at the same jiffy ±1.
            let ours: Vec<(u64, u32)> = log
                .adjusts
                .iter()
                .filter(|a| a.domain == domain)
                .map(|a| (self.jiffy_of(a.fired), a.depth))
                .collect();
            let mut used = vec![false; ours.len()];
            let mut matched = 0;
            for &(at, depth) in &self.kernel_adjusts[index] {
                let jiffy = self.jiffy(at);
                let found = ours
                    .iter()
                    .enumerate()
                    .position(|(i, &(j, d))| !used[i] && d == depth && near(j, jiffy));
                if let Some(i) = found {
                    used[i] = true;
                    matched += 1;
                }
            }
            let score = &mut self.domains[index];
            score.ours_adjusts = ours.len() as u64;
            score.kernel_adjusts = self.kernel_adjusts[index].len() as u64;
            score.adjusts_matched = matched;
            if score.samples > 0 {
                score.within_one_step_fraction =
                    score.within_one_step as f64 / score.samples as f64;
            }
            // Evaluations: the same histogram kind at the same jiffy ±1.
            let ours: Vec<&KyberEvaluation> =
                log.evaluations.iter().filter(|e| e.domain == domain).collect();
            let mut used = vec![false; ours.len()];
            for kernel in &self.kernel_evaluations[index] {
                kernel_evaluations += 1;
                let jiffy = self.jiffy(kernel.time_ns);
                let found = ours.iter().enumerate().position(|(i, e)| {
                    !used[i]
                        && e.io_latency == kernel.io_latency
                        && near(self.jiffy_of(e.fired), jiffy)
                });
                if let Some(i) = found {
                    used[i] = true;
                    evaluations_matched += 1;
                    evaluations_same_bucket += u64::from(ours[i].bucket == kernel.bucket);
                    evaluations_same_samples += u64::from(ours[i].samples == kernel.samples);
                }
            }
        }
        KyberDepthScore {
            jiffy_phase_ns: self.phase_ns,
            timer_moves: self.timer_moves,
            completions_fed: self.completions_fed,
            unfed_completions: self.unfed_completions,
            kernel_evaluations,
            ours_evaluations: log.evaluations.len() as u64,
            evaluations_matched,
            evaluations_same_bucket,
            evaluations_same_samples,
            domains: self.domains.to_vec(),
            differences: self.differences,
        }
    }
}
