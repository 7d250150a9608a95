//! What a replay reports: agreement, the first disagreements with both sides' state, and the
//! first disagreements grouped by cause. Serialisable for JSON; [`fmt::Display`] renders text.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// Why a first disagreement happened, as far as the replay can tell. The classes are the
/// predicted divergences of `modern-vs-kernel.md` §2 that a decision replay can still show
/// (§4 takes the rest out of the measurement), each checked by a rule on the two picks and our
/// state; [`Cause::Unknown`] is what none of them explains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Cause {
    /// §2 #10: the kernel's pick had been requeued and re-inserted, and 6.18.2+ serves
    /// at-head requests from one global list before everything else (ours has no such list).
    #[serde(rename = "at-head requeue")]
    AtHeadRequeue,
    /// §4 item 2 (and §2 #13): the kernel picked earlier than its issue event shows: ours's
    /// pick was inserted from another CPU after the issuing CPU's last event (so probably
    /// after the kernel's pick), or, for a pick ours parked when the device was full, the
    /// kernel's request was inserted after that.
    #[serde(rename = "pick time")]
    PickTime,
    /// §4 item 2: a kblockd run of the device's hardware queue (`blk_mq_run_work_fn`, its
    /// async, delayed and restart runs; captures of version 3) made the kernel's issue, or
    /// (after `pick time`) was under way on another CPU at the issue, or started or ended
    /// within `concurrent_issue` of it: a run whose picks the trace does not time (it shows
    /// the run, not when it took each request from the scheduler).
    #[serde(rename = "kblockd run")]
    KblockdRun,
    /// §2 #1: mq-deadline, ours held the level back (no pick, or a pick of another priority
    /// level) while the kernel served a level: when a priority-throttled queue is re-run
    /// differs (ours re-asks at completions, the kernel at submissions and 1-jiffy polls).
    #[serde(rename = "priority-throttle re-run")]
    PriorityThrottleRerun,
    /// §2 #2: kyber, ours found no token (or served another domain) where the kernel served
    /// this one: token wake batches and depths differ.
    #[serde(rename = "kyber token wake")]
    KyberTokenWake,
    /// §2 #5: kyber, same domain, but the two picks were inserted on different CPUs: the
    /// kernel splices its per-CPU staging lists in CPU order, ours keeps one arrival list.
    #[serde(rename = "per-cpu staging")]
    PerCpuStaging,
    /// §2 #11: mq-deadline, a FIFO deadline or the aging cut-off of one of the picks lies
    /// within one jiffy of the decision, where the jiffy phase (not visible in the capture)
    /// decides.
    #[serde(rename = "jiffy boundary")]
    JiffyBoundary,
    /// bfq: ours idled for the queue in service (no pick) where the kernel served another
    /// queue — by injection (`bfq_choose_bfqq_for_injection`) or because it did not idle at
    /// all (docs/validation.md: on the committed capture the kernel did not idle for its
    /// weight-raised queues where ours does).
    #[serde(rename = "bfq idling")]
    BfqIdling,
    /// bfq: the two picks belong to different queues of ours (a different queue in service;
    /// a queue is a process's, or several processes' once stably merged).
    #[serde(rename = "bfq queue choice")]
    BfqQueueChoice,
    /// None of the rules above explains it.
    #[serde(rename = "unknown")]
    Unknown,
}

impl Cause {
    /// The name reports print.
    pub const fn name(self) -> &'static str {
        match self {
            Cause::AtHeadRequeue => "at-head requeue",
            Cause::PickTime => "pick time",
            Cause::KblockdRun => "kblockd run",
            Cause::PriorityThrottleRerun => "priority-throttle re-run",
            Cause::KyberTokenWake => "kyber token wake",
            Cause::PerCpuStaging => "per-cpu staging",
            Cause::JiffyBoundary => "jiffy boundary",
            Cause::BfqIdling => "bfq idling",
            Cause::BfqQueueChoice => "bfq queue choice",
            Cause::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One side's pick at a decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pick {
    /// First sector.
    pub sector: u64,
    /// Sectors.
    pub sectors: u32,
    /// `read`, `write`, `discard`.
    pub op: String,
    /// The I/O priority as the replay gave it to ours.
    pub priority: String,
    /// The process of its insert event.
    pub pid: u32,
    /// The CPU its insert event fired on.
    pub insert_cpu: u32,
    /// When it was inserted, ns since the capture's first event.
    pub inserted_ns: u64,
}

/// One disagreement between the kernel's pick and ours.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Disagreement {
    /// Which decision (0-based, over every decision of the replay).
    pub decision: u64,
    /// The kernel's issue time, ns since the capture's first event.
    pub time_ns: u64,
    /// The jiffy the replay fed ours (jiffies since the capture's first event).
    pub jiffy: u64,
    /// What the kernel issued.
    pub kernel: Pick,
    /// What ours handed out, if anything.
    pub ours: Option<Pick>,
    /// Our answer: `issue`, or why not (`throttled`, `idle`, `empty`).
    pub our_answer: String,
    /// The classified cause.
    pub cause: Cause,
    /// Whether it is cascaded from an earlier disagreement (see [`ConformReport::cascaded`]).
    pub cascaded: bool,
    /// Our scheduler's state just before the decision (its `conform_state`).
    pub our_state: String,
}

/// The outcome of replaying one capture into ours.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConformReport {
    /// The scheduler (sysfs name).
    pub scheduler: String,
    /// The kernel release the capture ran on.
    pub kernel_release: String,
    /// Its `HZ`.
    pub hz: u32,
    /// The workload, as the capture names it.
    pub workload: String,
    /// The tunables the capture read back, as given to ours (`name=value`).
    pub tunables: Vec<String>,
    /// Events in the capture.
    pub events: u64,
    /// Every kernel issue of a request that went through the scheduler (had an insert): one
    /// decision each.
    pub decisions: u64,
    /// Decisions where ours picked the kernel's request.
    pub identical: u64,
    /// `identical / decisions` (1 for a capture without decisions).
    pub agreement: f64,
    /// Disagreements that start a chain: not within `cascade_window` decisions of the first
    /// disagreement of a chain of disagreements with no agreement between them.
    pub first_disagreements: u64,
    /// Disagreements that follow an earlier one (within `cascade_window` decisions of the
    /// chain's first, with no agreement since): most are the resynchronisation's leftovers.
    pub cascaded: u64,
    /// Times ours could not resynchronise and was replaced by a fresh instance holding the
    /// kernel's queued requests (its history, and those requests' ages, lost).
    pub restarts: u64,
    /// Issues of requests that never went through the scheduler (flushes, passthrough, an
    /// extent never inserted): excluded.
    pub excluded_issues: u64,
    /// Decisions taken out of their issue events' order: ours picked the request of a
    /// concurrent issue on another CPU (within `concurrent_issue` after), which is then counted
    /// first, as identical.
    pub reordered_issues: u64,
    /// Requeues seen.
    pub requeues: u64,
    /// Merge events that matched no request the replay holds (plug merges, or bio merges into
    /// requests not in the scheduler).
    pub unmatched_merges: u64,
    /// First disagreements by cause.
    pub causes: BTreeMap<Cause, u64>,
    /// The first disagreements in decision order (cascaded ones included, marked), at most
    /// the replay's `first_disagreements` option.
    pub disagreements: Vec<Disagreement>,
    /// Kyber: its depths over time against the kernel's (`ConformOptions::score_kyber_depths`;
    /// absent for the other schedulers, and from the JSON then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kyber_depths: Option<KyberDepthScore>,
    /// kblockd's runs of the hardware queue and the decisions made in them (captures of
    /// version 3; absent otherwise, and from the JSON then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kblockd: Option<KblockdScore>,
}

/// What the kblockd runs of a capture (version 3) did, and how ours fared on them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KblockdScore {
    /// Runs (`workqueue_execute_start` of the device's `run_work`).
    pub runs: u64,
    /// Runs that issued at least one request.
    pub runs_issuing: u64,
    /// Decisions whose kernel issue was made by a kblockd run (its kworker, during the run).
    pub decisions: u64,
    /// Of those, identical.
    pub identical: u64,
    /// First disagreements whose kernel issue was made by a kblockd run.
    pub first_disagreements_in_runs: u64,
    /// First disagreements at or near a run (under way on any CPU at the issue, or starting or
    /// ending within `concurrent_issue` of it), whatever their filed cause.
    pub first_disagreements_near_runs: u64,
    /// Picks ours made at a run's start (`ConformOptions::kblockd_runs`).
    pub run_start_picks: u64,
}

/// Kyber's depths over time, ours (fed the capture's completions, running its own timer)
/// against the kernel's `kyber_adjust` events (`conform::kyber_depth` says how).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KyberDepthScore {
    /// The kernel's ticks' phase: ns after the capture's first event modulo a jiffy, from its
    /// first timer event (0 without one).
    pub jiffy_phase_ns: u64,
    /// Times ours's timer was moved one jiffy to a run of the kernel's the trace shows
    /// (`ConformOptions::kyber_timer_sync`).
    pub timer_moves: u64,
    /// Completions fed to ours's histograms.
    pub completions_fed: u64,
    /// Completions of requests that bypassed the scheduler, not fed.
    pub unfed_completions: u64,
    /// The kernel's histogram evaluations (`kyber_latency`) of the measured domains.
    pub kernel_evaluations: u64,
    /// Ours's evaluations.
    pub ours_evaluations: u64,
    /// Kernel evaluations with one of ours of the same domain and histogram at the same jiffy
    /// ±1.
    pub evaluations_matched: u64,
    /// Of those, the percentile in the same bucket.
    pub evaluations_same_bucket: u64,
    /// Of those, with as many samples.
    pub evaluations_same_samples: u64,
    /// Read, write and discard.
    pub domains: Vec<DomainDepthScore>,
    /// The first stretches where ours's depth differed from the kernel's, at most the
    /// replay's `first_disagreements`.
    pub differences: Vec<DepthDifference>,
}

/// One domain's depth score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DomainDepthScore {
    /// `read`, `write`, `discard`.
    pub domain: String,
    /// Comparisons (each decision and each kernel adjustment).
    pub samples: u64,
    /// Comparisons where ours's depth was the kernel's.
    pub equal: u64,
    /// Comparisons where ours's depth was the kernel's, its previous or its next.
    pub within_one_step: u64,
    /// `within_one_step / samples` (1 without samples).
    pub within_one_step_fraction: f64,
    /// The kernel's `kyber_adjust` events.
    pub kernel_adjusts: u64,
    /// Ours's depth changes.
    pub ours_adjusts: u64,
    /// Kernel adjustments ours made too: the same depth at the same jiffy ±1.
    pub adjusts_matched: u64,
    /// Stretches of comparisons where the depths differed.
    pub difference_stretches: u64,
}

/// The start of a stretch where ours's depth differed from the kernel's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DepthDifference {
    /// ns since the capture's first event.
    pub time_ns: u64,
    /// The jiffy (counted from the capture's first tick, aligned to the kernel's ticks).
    pub jiffy: u64,
    /// The domain.
    pub domain: String,
    /// The kernel's depth before its last adjustment.
    pub kernel_previous: u32,
    /// The kernel's depth.
    pub kernel_depth: u32,
    /// The kernel's depth after its next adjustment.
    pub kernel_next: u32,
    /// Ours's depth.
    pub ours_depth: u32,
    /// Whether ours is within one step (the kernel's previous, current or next depth).
    pub within_one_step: bool,
    /// The kernel's last `kyber_latency` of the domain, per histogram.
    pub kernel_evaluations: Vec<String>,
    /// Ours's last evaluation of the domain, per histogram, with its samples by bucket.
    pub ours_evaluations: Vec<String>,
    /// Ours's histograms now (samples by bucket since their last evaluation).
    pub ours_histograms: String,
}

impl ConformReport {
    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serialises")
    }
}

fn pick_text(pick: &Pick) -> String {
    format!(
        "{} {}+{} {} pid {} cpu {} inserted {:.3} ms",
        pick.op,
        pick.sector,
        pick.sectors,
        pick.priority,
        pick.pid,
        pick.insert_cpu,
        pick.inserted_ns as f64 / 1e6
    )
}

impl fmt::Display for ConformReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} on Linux {} (HZ={}), workload {}",
            self.scheduler, self.kernel_release, self.hz, self.workload
        )?;
        if !self.tunables.is_empty() {
            writeln!(f, "tunables: {}", self.tunables.join(" "))?;
        }
        writeln!(
            f,
            "decisions {}: identical {} ({:.4} %), first disagreements {}, cascaded {}",
            self.decisions,
            self.identical,
            self.agreement * 100.0,
            self.first_disagreements,
            self.cascaded
        )?;
        writeln!(
            f,
            "events {}, excluded issues {}, reordered issues {}, requeues {}, unmatched merges {}, \
             restarts {}",
            self.events,
            self.excluded_issues,
            self.reordered_issues,
            self.requeues,
            self.unmatched_merges,
            self.restarts
        )?;
        if !self.causes.is_empty() {
            writeln!(f, "first disagreements by cause:")?;
            for (cause, count) in &self.causes {
                writeln!(f, "  {cause}: {count}")?;
            }
        }
        if let Some(runs) = &self.kblockd {
            writeln!(
                f,
                "kblockd runs {} ({} issuing), decisions in them {} (identical {}), first \
                 disagreements in them {}, near them {}, picks at a run's start {}",
                runs.runs,
                runs.runs_issuing,
                runs.decisions,
                runs.identical,
                runs.first_disagreements_in_runs,
                runs.first_disagreements_near_runs,
                runs.run_start_picks
            )?;
        }
        if let Some(depths) = &self.kyber_depths {
            writeln!(
                f,
                "kyber depths (ours on the kernel's completions, its own timer; jiffy phase {:.3} ms, \
                 timer moved {} times):",
                depths.jiffy_phase_ns as f64 / 1e6,
                depths.timer_moves
            )?;
            for domain in &depths.domains {
                writeln!(
                    f,
                    "  {}: within one step {:.4} % ({} of {}), equal {}, adjustments kernel {} ours \
                     {} matched {}",
                    domain.domain,
                    domain.within_one_step_fraction * 100.0,
                    domain.within_one_step,
                    domain.samples,
                    domain.equal,
                    domain.kernel_adjusts,
                    domain.ours_adjusts,
                    domain.adjusts_matched
                )?;
            }
            writeln!(
                f,
                "  evaluations: kernel {}, ours {}, matched {} (same bucket {}, same samples {}); \
                 completions fed {}, unfed {}",
                depths.kernel_evaluations,
                depths.ours_evaluations,
                depths.evaluations_matched,
                depths.evaluations_same_bucket,
                depths.evaluations_same_samples,
                depths.completions_fed,
                depths.unfed_completions
            )?;
            for item in &depths.differences {
                writeln!(
                    f,
                    "  {} at {:.3} ms (jiffy {}): kernel {} (previous {}, next {}), ours {}{}",
                    item.domain,
                    item.time_ns as f64 / 1e6,
                    item.jiffy,
                    item.kernel_depth,
                    item.kernel_previous,
                    item.kernel_next,
                    item.ours_depth,
                    if item.within_one_step { " (within one step)" } else { "" }
                )?;
                for text in &item.kernel_evaluations {
                    writeln!(f, "    kernel {text}")?;
                }
                for text in &item.ours_evaluations {
                    writeln!(f, "    ours   {text}")?;
                }
                writeln!(f, "    ours's histograms: {}", item.ours_histograms)?;
            }
        }
        for item in &self.disagreements {
            writeln!(
                f,
                "#{} at {:.3} ms (jiffy {}){}: {}",
                item.decision,
                item.time_ns as f64 / 1e6,
                item.jiffy,
                if item.cascaded { " cascaded" } else { "" },
                item.cause
            )?;
            writeln!(f, "  kernel: {}", pick_text(&item.kernel))?;
            match &item.ours {
                Some(pick) => writeln!(f, "  ours:   {}", pick_text(pick))?,
                None => writeln!(f, "  ours:   {}", item.our_answer)?,
            }
            writeln!(f, "  state:  {}", item.our_state)?;
        }
        Ok(())
    }
}
