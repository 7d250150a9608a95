//! `elevator advise`: which scheduler, with which tunables, for this device and this
//! workload, and why (issue 21).
//!
//! The advisor runs a small grid of candidates — every scheduler the target offers, each with
//! its most important tunables varied one at a time — through the simulator on the device
//! model, ranks them by a goal, explains the winner against the runner-up with the report's
//! mechanism counters and says how far the margin between the two can be trusted. The CLI
//! (`crates/cli/src/advise.rs`) adds the real device: what its kernel offers, the commands
//! and persistent forms that apply the choice, `--apply` and `--live`.
//!
//! # Candidates
//!
//! [`grid`] lists, per scheduler, its default and the variants below (at most 3 per
//! scheduler, so the blk-mq set is 10 runs and the 2.6 set 9, within the issue's "small
//! grid"). Each variant changes the one tunable that most changes what the scheduler does:
//!
//! | scheduler | variants beside the default | why that tunable |
//! |---|---|---|
//! | `none`, `noop` | — | no tunables |
//! | `mq-deadline`, `deadline` | `fifo_batch=1`, `read_expire=100` | batch length trades seeks for fairness; a shorter read deadline bounds read latency under writes |
//! | `bfq` | `slice_idle=0`, `low_latency=0` | idling buys fairness and sequential throughput at the price of device utilisation; weight raising favours start-up |
//! | `kyber` | `read_lat_nsec=500000`, `read_lat_nsec=10000000` | the read latency target sets the depth kyber allows |
//! | `cfq` | `slice_idle=0`, `quantum=8` | idling, and how many requests a queue dispatches per round |
//! | `anticipatory` | `antic_expire=0` | anticipation on or off |
//!
//! A model (no real device) gets the set of its era ([`Era::of`]): the 2.6 set
//! ([`SchedulerKind::LEGACY`]) for the classic study's devices, the blk-mq set
//! ([`SchedulerKind::MODERN`]) for flash, zoned devices, presets from 2014 on (blk-mq came
//! with 3.13) and device files (a calibrated device is measured on today's kernel).
//!
//! # Goals
//!
//! See [`Goal`]: throughput (bytes over the run's time, every phase), latency (the worst p99
//! of the latency-sensitive jobs), fairness (Jain's index over the jobs' throughputs, with
//! the max/min share beside it) and responsiveness (the completion time of an "application
//! start", a burst of small synchronous reads added to the workload, after the BFQ authors'
//! start-up test: Valente and Checconi, "High Throughput Disk Scheduling with Fair Bandwidth
//! Distribution", IEEE Trans. Computers 2010, and the `comm_startup_lat` script of their S
//! benchmark suite, which time an application's start while sequential readers and writers
//! run).
//!
//! # Deviations
//!
//! * Latency: a run reports each issuer's own p99, not the union's, so the figure is the
//!   largest p99 among the latency-sensitive issuers — an upper bound of the union's p99.
//! * Fairness: every issuer of every phase is one flow; issuers that moved no bytes count as
//!   zero (they were starved).
//! * Responsiveness: the start-up burst is 256 direct 4 KiB random reads (1 MiB) over a
//!   64 MiB file (from a `job:` workload's device's middle to its end when that is shorter),
//!   one at a time, starting 100 ms into the run; BFQ's script reads an
//!   application's files through the page cache after dropping it. It needs a `job:`
//!   workload or an fio job file (the burst joins them as one more fio job).

use std::collections::BTreeMap;

use elevator_report::Run;
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_workload::WorkloadSpec;
use serde::Serialize;

use crate::{DeviceKind, DeviceSpec, SimConfig, SimError};

/// The schema of the JSON advice (`--format json`).
pub const SCHEMA: &str = "elevator.advice/1";

/// The simulator's validated error, in percent of a figure: a margin between the top two
/// candidates inside it is "low" confidence. Source: docs/validation.md, "bfq: two equal
/// readers against the kernel's bfq" — ours runs about 1.1× the kernel's throughput on the
/// same device — and "DiskSim's four validated drives", where the disk model is within
/// 1.6–6.7 % of the measured mean service time: the larger, 10 %, is the stated bound. When
/// `elevator calibrate` documents the error of a calibrated model there (issue 21), this
/// figure follows it.
pub const SIM_ERROR_PERCENT: f64 = 10.0;

/// The name of the job the responsiveness goal adds.
pub const STARTUP_JOB: &str = "app-start";

/// When the start-up burst starts (its `startdelay`), ns.
const STARTUP_DELAY_NS: u64 = 100_000_000;

/// The region the start-up burst reads (`size` of [`STARTUP_SECTION`]).
const STARTUP_REGION_BYTES: u64 = 64 << 20;

/// The start-up burst, as an fio job section (see the module's Deviations).
const STARTUP_SECTION: &str = "rw=randread\nbs=4k\nsize=64m\nio_size=1m\niodepth=1\n\
     ioengine=psync\ndirect=1\nnumjobs=1\nstartdelay=100ms\ntime_based=0\nruntime=0\n";

/// What to rank by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Goal {
    /// Total bytes per second over the whole run.
    Throughput,
    /// The p99 latency of the latency-sensitive jobs (effective depth 1: `iodepth=1` or a
    /// synchronous engine), or of every job when none is.
    Latency,
    /// Jain's fairness index over the jobs' throughputs.
    Fairness,
    /// The completion time of a start-up burst under the workload.
    Responsiveness,
}

impl Goal {
    /// Every goal, in the order `--help` lists them.
    pub const ALL: &'static [Goal] =
        &[Goal::Throughput, Goal::Latency, Goal::Fairness, Goal::Responsiveness];

    /// The name users write.
    pub const fn name(self) -> &'static str {
        match self {
            Goal::Throughput => "throughput",
            Goal::Latency => "latency",
            Goal::Fairness => "fairness",
            Goal::Responsiveness => "responsiveness",
        }
    }

    /// Parses a goal's name.
    pub fn parse(text: &str) -> Result<Goal, AdviseError> {
        Goal::ALL.iter().copied().find(|goal| goal.name() == text).ok_or_else(|| {
            AdviseError::UnknownGoal {
                given: text.to_owned(),
                accepted: Goal::ALL.iter().map(|goal| goal.name()).collect::<Vec<_>>().join(", "),
            }
        })
    }

    /// Whether a larger score is better.
    pub const fn higher_is_better(self) -> bool {
        matches!(self, Goal::Throughput | Goal::Fairness)
    }

    /// The score's column heading, with its unit.
    pub const fn heading(self) -> &'static str {
        match self {
            Goal::Throughput => "MB/s",
            Goal::Latency => "p99 ms",
            Goal::Fairness => "Jain",
            Goal::Responsiveness => "start-up s",
        }
    }

    /// A score in the heading's unit.
    pub fn display(self, score: f64) -> String {
        match self {
            Goal::Throughput => format!("{:.2}", score / 1e6),
            Goal::Latency => format!("{:.3}", score / 1e6),
            Goal::Fairness => format!("{score:.4}"),
            Goal::Responsiveness => format!("{:.3}", score / 1e9),
        }
    }
}

/// What went wrong preparing or running the advice.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdviseError {
    /// `--goal` names no goal.
    #[error("unknown goal `{given}` (accepted: {accepted})")]
    UnknownGoal {
        /// What was given.
        given: String,
        /// The accepted names.
        accepted: String,
    },
    /// The workload cannot carry the goal (responsiveness on a trace).
    #[error("workload `{workload}`: {problem}")]
    Workload {
        /// The workload as given.
        workload: String,
        /// What is wrong and what is accepted.
        problem: String,
    },
    /// A workload or spec did not parse.
    #[error(transparent)]
    Param(#[from] elevator_core::ParamError),
    /// A candidate's scheduler spec did not parse.
    #[error("candidate `{spec}`: {message}")]
    Candidate {
        /// The spec.
        spec: String,
        /// Why.
        message: String,
    },
    /// A simulation failed.
    #[error("simulating under {scheduler}: {source}")]
    Sim {
        /// The candidate.
        scheduler: String,
        /// The failure.
        source: SimError,
    },
    /// Nothing to rank.
    #[error("no candidate scheduler to try")]
    NoCandidates,
}

/// Which set of schedulers a model's device belongs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Era {
    /// The 2.6 set: noop, anticipatory, deadline, cfq.
    Legacy,
    /// The blk-mq set: none, mq-deadline, bfq, kyber.
    BlkMq,
}

impl Era {
    /// The era of the device `text` (as given to `-d`) parses to: blk-mq for a device file
    /// (a path: calibrated today), flash and zoned kinds, and presets whose name ends in a
    /// year from 2014 on; the 2.6 set for the rest (the classic study's 2005-era disks,
    /// arrays and SANs).
    pub fn of(text: &str, device: &DeviceSpec) -> Era {
        let name = text.split(':').next().unwrap_or(text);
        if name.contains('/') || name.ends_with(".toml") {
            return Era::BlkMq;
        }
        let preset = device.preset().map_or(name, |preset| preset.name);
        let year = preset.rsplit('-').next().and_then(|tail| tail.parse::<u32>().ok());
        match (year, device.kind()) {
            (Some(year), _) if (1990..2100).contains(&year) => {
                if year >= 2014 {
                    Era::BlkMq
                } else {
                    Era::Legacy
                }
            }
            (_, DeviceKind::Ssd | DeviceKind::Zoned) => Era::BlkMq,
            _ => Era::Legacy,
        }
    }

    /// Its schedulers.
    pub const fn schedulers(self) -> &'static [SchedulerKind] {
        match self {
            Era::Legacy => SchedulerKind::LEGACY,
            Era::BlkMq => SchedulerKind::MODERN,
        }
    }

    /// The name users write (`--era`).
    pub const fn name(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::BlkMq => "blk-mq",
        }
    }
}

/// The variants of `kind` tried, as scheduler specs: the default first (see the module's
/// table).
pub fn grid(kind: SchedulerKind) -> Vec<String> {
    let name = kind.name();
    let variants: &[&str] = match name {
        "mq-deadline" | "deadline" => &["fifo_batch=1", "read_expire=100"],
        "bfq" => &["slice_idle=0", "low_latency=0"],
        "kyber" => &["read_lat_nsec=500000", "read_lat_nsec=10000000"],
        "cfq" => &["slice_idle=0", "quantum=8"],
        "anticipatory" => &["antic_expire=0"],
        _ => &[],
    };
    std::iter::once(name.to_owned())
        .chain(variants.iter().map(|variant| format!("{name}:{variant}")))
        .collect()
}

/// The candidates for `kinds`, in their order, each with its [`grid`].
pub fn candidates(kinds: &[SchedulerKind]) -> Result<Vec<SchedulerSpec>, AdviseError> {
    let mut specs = Vec::new();
    for kind in kinds {
        for text in grid(*kind) {
            let spec = SchedulerSpec::parse(&text).map_err(|error| AdviseError::Candidate {
                spec: text.clone(),
                message: error.to_string(),
            })?;
            specs.push(spec);
        }
    }
    Ok(specs)
}

/// The workload to run for a goal and what the scores read from it.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The workload as given.
    pub given: String,
    /// What runs: the given workload, with the start-up burst for responsiveness.
    pub workload: WorkloadSpec,
    /// The names of the latency-sensitive jobs (issuers `NAME/N`); empty: every job.
    pub sensitive: Vec<String>,
    /// The goal.
    pub goal: Goal,
}

/// Whether `spec` (a `job`) has an effective depth of one: `iodepth=1` or an engine that
/// waits for each operation (fio's sync engines).
fn is_latency_sensitive(spec: &WorkloadSpec) -> bool {
    let resolved = spec.resolved();
    let value = |key: &str| resolved.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str());
    let synchronous =
        matches!(value("ioengine"), Some("psync" | "sync" | "pvsync" | "pvsync2" | "sg"));
    synchronous || value("iodepth") == Some("1")
}

/// The jobs of `workload` by name, each with its spec: one `job` for a `job:` workload, each
/// job of an fio file; empty for other kinds.
fn jobs_of(workload: &WorkloadSpec) -> Vec<(String, WorkloadSpec)> {
    let resolved = workload.resolved();
    if resolved.first().is_some_and(|(key, _)| *key == "fio") {
        return resolved
            .iter()
            .filter(|(key, _)| *key == "job")
            .filter_map(|(_, text)| {
                let (name, spec) = text.split_once(": ")?;
                Some((name.to_owned(), WorkloadSpec::parse(spec).ok()?))
            })
            .collect();
    }
    if workload.kind() == elevator_workload::WorkloadKind::Job
        && workload.trace_extent_bytes().is_none()
    {
        return vec![("job".to_owned(), workload.clone())];
    }
    Vec::new()
}

/// Parses `text` as `-w` takes it: a spec (`job:…`, `fio:FILE`, `trace:PATH`, a preset), or
/// the path of an fio job file or a trace.
pub fn parse_workload(text: &str) -> Result<WorkloadSpec, AdviseError> {
    let path = std::path::Path::new(text);
    if !text.contains(':') && path.is_file() {
        let fio = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("fio" | "ini" | "job" | "jobs")
        );
        return Ok(if fio {
            WorkloadSpec::parse_fio_file(text)?
        } else {
            WorkloadSpec::parse(&format!("trace:{text}"))?
        });
    }
    Ok(WorkloadSpec::parse(text)?)
}

/// The workload for `goal`: `text` as given, with the start-up job added for responsiveness.
/// `target` is the device a `job:` workload addresses (the first of [`crate::targets`]): as
/// an fio job the background then still runs on the device, not on files, and the start-up
/// burst reads the device's middle.
pub fn prepare(
    text: &str,
    goal: Goal,
    target: &elevator_workload::Target,
) -> Result<Prepared, AdviseError> {
    let workload = parse_workload(text)?;
    let jobs = jobs_of(&workload);
    let sensitive: Vec<String> = jobs
        .iter()
        .filter(|(_, spec)| is_latency_sensitive(spec))
        .map(|(name, _)| name.clone())
        .collect();
    if goal != Goal::Responsiveness {
        return Ok(Prepared { given: text.to_owned(), workload, sensitive, goal });
    }
    let (combined, file, dir) = with_startup_job(text, target)?;
    let problem = |problem: String| AdviseError::Workload { workload: text.to_owned(), problem };
    let env = elevator_workload::fio::FioEnv {
        page_size_bytes: 4096,
        memory_mib: 1024,
        cpus: 1,
        ..Default::default()
    };
    let parsed = elevator_workload::fio::parse_str(&combined, &file, &dir, &env)
        .map_err(|error| problem(format!("with the start-up job: {error}")))?;
    let workload = WorkloadSpec::from_fio_jobs(&file, &parsed)?;
    Ok(Prepared { given: text.to_owned(), workload, sensitive, goal })
}

/// The workload `text` with the start-up burst as one more job, as fio job-file text: what
/// [`prepare`] runs for the responsiveness goal, and what `advise --live` hands the kernel's
/// schedulers (`kernel compare`) with `target` the real device. A `job:` workload becomes
/// one job reading or writing `target.name`, the burst reading its middle; an fio job file
/// keeps its jobs. Returns the text, the name it goes by (the file's, or the workload as
/// written) and the directory its relative paths resolve against.
pub fn with_startup_job(
    text: &str,
    target: &elevator_workload::Target,
) -> Result<(String, String, std::path::PathBuf), AdviseError> {
    let workload = parse_workload(text)?;
    let jobs = jobs_of(&workload);
    let problem = |problem: String| AdviseError::Workload { workload: text.to_owned(), problem };
    if jobs.iter().any(|(name, _)| name == STARTUP_JOB) {
        return Err(problem(format!("a job is named `{STARTUP_JOB}`, the start-up job's name")));
    }
    // The background as fio job-file text, the start-up burst as one more job of it.
    let mut startup = format!("[{STARTUP_JOB}]\n{STARTUP_SECTION}");
    let (background, file, dir) = match workload.resolved().first() {
        Some(("fio", path)) => {
            let body = std::fs::read_to_string(path)
                .map_err(|error| problem(format!("reading {path}: {error}")))?;
            let dir = std::path::Path::new(path)
                .parent()
                .map_or_else(|| std::path::PathBuf::from("."), std::path::Path::to_path_buf);
            (body, path.clone(), dir)
        }
        _ if jobs.len() == 1 => {
            // `job:` keys are fio's option names and meanings (DESIGN §4).
            let spec = workload.to_string();
            let keys = spec.strip_prefix("job").unwrap_or("").trim_start_matches(':');
            let mut body = String::from("[job]\n");
            for pair in keys.split(',').filter(|pair| !pair.is_empty()) {
                body.push_str(pair);
                body.push('\n');
            }
            body.push_str(&format!("filename={}\n", target.name));
            // The middle of the device, on a 1 MiB boundary.
            let middle_bytes = target.capacity_bytes / 2 / (1 << 20) * (1 << 20);
            startup.push_str(&format!("filename={}\noffset={middle_bytes}\n", target.name));
            // A device smaller than twice the burst's file: the burst's region ends at the
            // device's end (larger devices keep the section's 64 MiB).
            let room_bytes = (target.capacity_bytes - middle_bytes) / (1 << 20) * (1 << 20);
            if room_bytes < STARTUP_REGION_BYTES {
                startup.push_str(&format!("size={}\n", room_bytes.max(1 << 20)));
            }
            (body, text.to_owned(), std::path::PathBuf::from("."))
        }
        _ => {
            return Err(problem(
                "the responsiveness goal adds a start-up job to the workload, which needs a \
                 `job:` workload or an fio job file (a trace or a preset cannot take one); \
                 accepted goals for it: throughput, latency, fairness"
                    .to_owned(),
            ));
        }
    };
    Ok((format!("{background}\n{startup}"), file, dir))
}

/// One candidate's figures for every goal it could be ranked by.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Bytes over the run's time, every phase.
    pub throughput_bytes_per_s: f64,
    /// The largest p99 of the latency-sensitive issuers (every issuer when none is).
    pub latency_ns_p99: u64,
    /// Jain's index over the issuers' throughputs: 1 is even, 1/n one issuer got all.
    pub jain_index: f64,
    /// The largest issuer throughput over the smallest (infinite when one was starved).
    pub max_min_share: f64,
    /// How long the start-up burst took, first submission to last completion (responsiveness
    /// only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_ns: Option<u64>,
    /// The start-up burst was still running when the last background issuer finished: it
    /// ran partly unloaded, and a longer workload (`time_based`, `runtime`) measures better.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub startup_outlived_background: bool,
}

impl Figures {
    /// The figures of `run` for `prepared`.
    pub fn of(run: &Run, prepared: &Prepared) -> Figures {
        let bytes: u64 = run.phases.iter().map(|phase| phase.bytes).sum();
        let duration_ns: u64 = run.phases.iter().map(|phase| phase.duration_ns).sum();
        let throughput_bytes_per_s =
            if duration_ns == 0 { 0.0 } else { bytes as f64 * 1e9 / duration_ns as f64 };
        let issuers: Vec<&elevator_report::model::IssuerSummary> =
            run.phases.iter().flat_map(|phase| &phase.issuers).collect();
        let job_of = |name: &str| name.rsplit_once('/').map_or(name, |(job, _)| job).to_owned();
        let flows: Vec<&elevator_report::model::IssuerSummary> =
            issuers.iter().copied().filter(|issuer| job_of(&issuer.name) != STARTUP_JOB).collect();
        let sensitive: Vec<&&elevator_report::model::IssuerSummary> = flows
            .iter()
            .filter(|issuer| prepared.sensitive.contains(&job_of(&issuer.name)))
            .collect();
        let latency_ns_p99 = if sensitive.is_empty() {
            flows.iter().map(|issuer| issuer.latency_ns.p99).max().unwrap_or(0)
        } else {
            sensitive.iter().map(|issuer| issuer.latency_ns.p99).max().unwrap_or(0)
        };
        let shares: Vec<f64> = flows.iter().map(|issuer| issuer.throughput_bytes_per_s).collect();
        let sum: f64 = shares.iter().sum();
        let squares: f64 = shares.iter().map(|share| share * share).sum();
        let jain_index =
            if squares > 0.0 { sum * sum / (shares.len() as f64 * squares) } else { 1.0 };
        let largest = shares.iter().copied().fold(0.0_f64, f64::max);
        let smallest = shares.iter().copied().fold(f64::INFINITY, f64::min);
        let max_min_share = match (largest > 0.0, smallest > 0.0) {
            (true, true) => largest / smallest,
            (true, false) => f64::INFINITY,
            _ => 1.0,
        };
        let startup_ns = (prepared.goal == Goal::Responsiveness).then(|| {
            issuers
                .iter()
                .filter(|issuer| job_of(&issuer.name) == STARTUP_JOB)
                .map(|issuer| {
                    // Its throughput is its bytes over its own active time.
                    if issuer.throughput_bytes_per_s > 0.0 {
                        (issuer.bytes as f64 * 1e9 / issuer.throughput_bytes_per_s).round() as u64
                    } else {
                        u64::MAX
                    }
                })
                .max()
                .unwrap_or(u64::MAX)
        });
        // Each background issuer's active time (bytes over its throughput), from its start.
        let background_ns = flows
            .iter()
            .filter(|issuer| issuer.throughput_bytes_per_s > 0.0)
            .map(|issuer| (issuer.bytes as f64 * 1e9 / issuer.throughput_bytes_per_s) as u64)
            .max()
            .unwrap_or(0);
        let startup_outlived_background =
            startup_ns.is_some_and(|ns| STARTUP_DELAY_NS.saturating_add(ns) > background_ns);
        Figures {
            throughput_bytes_per_s,
            latency_ns_p99,
            jain_index,
            max_min_share,
            startup_ns,
            startup_outlived_background,
        }
    }

    /// The score for `goal`, in the goal's base unit (bytes/s, ns, index, ns).
    pub fn score(&self, goal: Goal) -> f64 {
        match goal {
            Goal::Throughput => self.throughput_bytes_per_s,
            Goal::Latency => self.latency_ns_p99 as f64,
            Goal::Fairness => self.jain_index,
            Goal::Responsiveness => self.startup_ns.map_or(f64::INFINITY, |ns| ns as f64),
        }
    }
}

/// The mechanism counters of a run that explain a difference, by name: merges, idling,
/// queue occupancy, seeks, waits and the scheduler's own counters (starvation, expiries).
pub fn mechanisms(run: &Run) -> BTreeMap<String, f64> {
    let queue = &run.queue_stats;
    let mut figures = BTreeMap::new();
    figures.insert("merges".to_owned(), (queue.back_merges + queue.front_merges) as f64);
    figures.insert("idling ms".to_owned(), run.scheduler_stats.idle_ns as f64 / 1e6);
    figures.insert("scheduler queue mean".to_owned(), queue.sched_queue_mean);
    figures.insert("device queue mean".to_owned(), queue.device_queue_mean);
    figures.insert("seek mean sectors".to_owned(), queue.seek_distance_mean_sectors);
    figures.insert("longest wait ms".to_owned(), queue.max_wait_ns as f64 / 1e6);
    figures.insert("dispatched".to_owned(), run.scheduler_stats.dispatched as f64);
    for (name, value) in &run.scheduler_stats.counters {
        figures.insert(format!("{} {name}", run.scheduler), *value as f64);
    }
    figures
}

/// One mechanism counter compared between the winner and the runner-up.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mechanism {
    /// Its name.
    pub name: String,
    /// The winner's value.
    pub winner: f64,
    /// The runner-up's value.
    pub runner_up: f64,
}

/// The counters of `winner` and `runner_up` that differ most (relative to the larger), at
/// most `count`, largest difference first, ties by name. Counters both runs have (merges,
/// idling, queue occupancy, seeks, waits, the counters of a shared scheduler) come first; a
/// scheduler's own counters, which the other run cannot have, fill the remaining places.
pub fn explain(winner: &Run, runner_up: &Run, count: usize) -> Vec<Mechanism> {
    let ours = mechanisms(winner);
    let theirs = mechanisms(runner_up);
    let mut names: Vec<&String> = ours.keys().chain(theirs.keys()).collect();
    names.sort();
    names.dedup();
    let mut rows: Vec<(bool, f64, Mechanism)> = names
        .into_iter()
        .map(|name| {
            let shared = ours.contains_key(name) && theirs.contains_key(name);
            let a = ours.get(name).copied().unwrap_or(0.0);
            let b = theirs.get(name).copied().unwrap_or(0.0);
            let larger = a.abs().max(b.abs());
            let difference = if larger > 0.0 { (a - b).abs() / larger } else { 0.0 };
            (shared, difference, Mechanism { name: name.clone(), winner: a, runner_up: b })
        })
        .filter(|(_, difference, _)| *difference > 0.0)
        .collect();
    rows.sort_by(|x, y| {
        y.0.cmp(&x.0).then_with(|| y.1.total_cmp(&x.1)).then_with(|| x.2.name.cmp(&y.2.name))
    });
    rows.into_iter().take(count).map(|(_, _, mechanism)| mechanism).collect()
}

/// One ranked candidate.
#[derive(Clone, Debug, Serialize)]
pub struct Ranked {
    /// Its place, from 1.
    pub rank: usize,
    /// The scheduler spec that ran (`bfq:slice_idle=0`).
    pub scheduler: String,
    /// Its score for the goal, in the goal's base unit.
    pub score: f64,
    /// Every figure.
    pub figures: Figures,
    /// Its mechanism counters.
    pub mechanisms: BTreeMap<String, f64>,
    /// The run (for the CLI's live comparison and for `--format json` consumers).
    #[serde(skip)]
    pub run: Run,
}

/// How far the ranking can be trusted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Confidence {
    /// `high` when the winner's margin over the runner-up exceeds the simulator's validated
    /// error, `low` when it is inside it.
    pub level: String,
    /// The winner's margin over the runner-up, percent of the runner-up's score.
    pub margin_percent: f64,
    /// [`SIM_ERROR_PERCENT`].
    pub sim_error_percent: f64,
    /// The error `elevator calibrate` stated for the device's preset file, when the device is
    /// one (`[measured] error_percent`); the level is judged against the larger of the two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_error_percent: Option<f64>,
}

/// The advice.
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The goal.
    pub goal: Goal,
    /// The device model as given.
    pub device: String,
    /// The workload as given.
    pub workload: String,
    /// The seed of every simulation.
    pub seed: u64,
    /// The candidates, best first.
    pub ranking: Vec<Ranked>,
    /// The counters that differ most between the winner and the runner-up.
    pub explanation: Vec<Mechanism>,
    /// The confidence in the winner.
    pub confidence: Option<Confidence>,
}

/// The winner's margin over the runner-up for `goal`, percent of the runner-up's score.
pub fn margin_percent(goal: Goal, winner: f64, runner_up: f64) -> f64 {
    if runner_up == 0.0 || !runner_up.is_finite() || !winner.is_finite() {
        return if winner == runner_up { 0.0 } else { 100.0 };
    }
    let gain = if goal.higher_is_better() { winner - runner_up } else { runner_up - winner };
    gain / runner_up.abs() * 100.0
}

/// Runs every candidate of `candidates` on `config` with `prepared`'s workload, on up to
/// `threads` threads (results in candidate order whatever the threads do); `progress` is
/// called after each run with its scheduler.
pub fn run_candidates(
    config: &SimConfig,
    candidates: &[SchedulerSpec],
    prepared: &Prepared,
    threads: usize,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Vec<Run>, AdviseError> {
    let results = crate::parallel::map_in_order(
        candidates.len(),
        threads,
        |index| crate::run(config, &candidates[index], &prepared.workload),
        |index| progress(&candidates[index].to_string()),
    );
    candidates
        .iter()
        .zip(results)
        .map(|(scheduler, result)| {
            result.map_err(|source| AdviseError::Sim { scheduler: scheduler.to_string(), source })
        })
        .collect()
}

/// Ranks `runs` (one per candidate, in candidate order) by `prepared`'s goal: best first,
/// ties kept in candidate order (the grid's order, so the default of a scheduler before its
/// variants), and explains the winner.
pub fn rank(
    runs: Vec<Run>,
    prepared: &Prepared,
    device: &str,
    seed: u64,
) -> Result<Advice, AdviseError> {
    if runs.is_empty() {
        return Err(AdviseError::NoCandidates);
    }
    let goal = prepared.goal;
    let mut ranking: Vec<Ranked> = runs
        .into_iter()
        .map(|run| {
            let figures = Figures::of(&run, prepared);
            let score = figures.score(goal);
            Ranked {
                rank: 0,
                scheduler: run.scheduler.clone(),
                score,
                mechanisms: mechanisms(&run),
                figures,
                run,
            }
        })
        .collect();
    // A stable sort keeps equal scores in candidate order: deterministic ties.
    ranking.sort_by(|a, b| {
        let (a, b) = (sortable(a.score, goal), sortable(b.score, goal));
        if goal.higher_is_better() { b.total_cmp(&a) } else { a.total_cmp(&b) }
    });
    for (index, ranked) in ranking.iter_mut().enumerate() {
        ranked.rank = index + 1;
    }
    let (explanation, confidence) = match ranking.as_slice() {
        [winner, runner_up, ..] => {
            let margin = margin_percent(goal, winner.score, runner_up.score);
            let model_error_percent = crate::device::table::is_file_spec(device)
                .then(|| crate::device::table::stated_error_percent(std::path::Path::new(device)))
                .flatten();
            let bound = model_error_percent.map_or(SIM_ERROR_PERCENT, |e| e.max(SIM_ERROR_PERCENT));
            let level = if margin > bound { "high" } else { "low" };
            (
                explain(&winner.run, &runner_up.run, 3),
                Some(Confidence {
                    level: level.to_owned(),
                    margin_percent: margin,
                    sim_error_percent: SIM_ERROR_PERCENT,
                    model_error_percent,
                }),
            )
        }
        _ => (Vec::new(), None),
    };
    Ok(Advice {
        schema: SCHEMA.to_owned(),
        goal,
        device: device.to_owned(),
        workload: prepared.given.clone(),
        seed,
        ranking,
        explanation,
        confidence,
    })
}

/// A score NaN never is: NaN (nothing measured) sorts as the worst.
fn sortable(score: f64, goal: Goal) -> f64 {
    match (score.is_nan(), goal.higher_is_better()) {
        (true, true) => f64::NEG_INFINITY,
        (true, false) => f64::INFINITY,
        (false, _) => score,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves every goal name parses back to itself and an unknown one lists what is accepted.
    #[test]
    fn goals_parse_and_unknown_goal_lists_the_accepted() {
        for goal in Goal::ALL {
            assert_eq!(Goal::parse(goal.name()).unwrap(), *goal);
        }
        let error = Goal::parse("speed").unwrap_err().to_string();
        assert!(error.contains("`speed`") && error.contains("responsiveness"), "{error}");
    }

    // Proves the grid stays small (the "≤ ~24 runs") and every candidate parses,
    // default first, with no duplicate.
    #[test]
    fn grids_are_small_parse_and_start_with_the_default() {
        for era in [Era::Legacy, Era::BlkMq] {
            let specs = candidates(era.schedulers()).unwrap();
            assert!(specs.len() <= 24, "{} candidates", specs.len());
            let texts: Vec<String> = specs.iter().map(ToString::to_string).collect();
            let mut unique = texts.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), texts.len(), "{texts:?}");
            for kind in era.schedulers() {
                assert_eq!(grid(*kind)[0], kind.name());
            }
        }
    }

    // Proves the era rule: the 2005 disk gets the 2.6 set, today's NVMe preset and a device
    // file the blk-mq set.
    #[test]
    fn era_follows_the_device() {
        let era = |text: &str| Era::of(text, &DeviceSpec::parse(text).unwrap());
        assert_eq!(era("hdd"), Era::Legacy);
        assert_eq!(era("nvme-gen4-consumer"), Era::BlkMq);
        assert_eq!(era("ssd"), Era::BlkMq);
        assert_eq!(era("san"), Era::Legacy);
    }

    // Proves Jain's index and the max/min share: two equal issuers give 1 and 1, a starved
    // one gives 1/2 and infinity; the sensitive jobs' p99 is the latency score.
    #[test]
    fn figures_compute_jain_and_latency_from_the_issuers() {
        let config = SimConfig::new(1, DeviceSpec::parse("hdd").unwrap());
        let target = &crate::targets(&config).unwrap()[0];
        let prepared =
            prepare("job:rw=randread,bs=4k,numjobs=2,size=1m", Goal::Fairness, target).unwrap();
        assert_eq!(prepared.sensitive, ["job"]);
        let mut run =
            crate::run(&config, &SchedulerSpec::parse("noop").unwrap(), &prepared.workload)
                .unwrap();
        let issuers = &mut run.phases[0].issuers;
        assert_eq!(issuers.len(), 2);
        issuers[0].throughput_bytes_per_s = 10.0;
        issuers[1].throughput_bytes_per_s = 10.0;
        issuers[0].latency_ns.p99 = 7;
        issuers[1].latency_ns.p99 = 9;
        let even = Figures::of(&run, &prepared);
        assert!((even.jain_index - 1.0).abs() < 1e-12 && (even.max_min_share - 1.0).abs() < 1e-12);
        assert_eq!(even.latency_ns_p99, 9);
        run.phases[0].issuers[1].throughput_bytes_per_s = 0.0;
        let starved = Figures::of(&run, &prepared);
        assert!((starved.jain_index - 0.5).abs() < 1e-12);
        assert!(starved.max_min_share.is_infinite());
    }

    // Proves responsiveness adds the start-up job to a `job:` workload (its issuer shows up
    // and gets a completion time) and is refused, naming the goal, for a preset workload.
    #[test]
    fn responsiveness_adds_the_startup_job_or_says_why_not() {
        let config = SimConfig::new(1, DeviceSpec::parse("hdd").unwrap());
        let target = &crate::targets(&config).unwrap()[0];
        let prepared = prepare(
            "job:rw=read,bs=64k,numjobs=2,size=16m,offset_increment=100g",
            Goal::Responsiveness,
            target,
        )
        .unwrap();
        let run =
            crate::run(&config, &SchedulerSpec::parse("cfq").unwrap(), &prepared.workload).unwrap();
        let names: Vec<&str> =
            run.phases.iter().flat_map(|p| &p.issuers).map(|i| i.name.as_str()).collect();
        assert!(names.contains(&"app-start/0") && names.contains(&"job/1"), "{names:?}");
        let startup = Figures::of(&run, &prepared).startup_ns.unwrap();
        assert!(startup > 0 && startup < u64::MAX);
        let error =
            prepare("dd:mode=read,bs=1m,count=4", Goal::Responsiveness, target).unwrap_err();
        assert!(error.to_string().contains("responsiveness"), "{error}");
    }

    // Proves ranking direction and deterministic ties: equal scores keep candidate order,
    // and a lower p99 ranks first for latency.
    #[test]
    fn ranking_orders_by_goal_and_keeps_ties_in_candidate_order() {
        let config = SimConfig::new(1, DeviceSpec::parse("hdd").unwrap());
        let target = &crate::targets(&config).unwrap()[0];
        let prepared = prepare("job:rw=randread,bs=4k,size=1m", Goal::Latency, target).unwrap();
        let run = |s: &str| {
            crate::run(&config, &SchedulerSpec::parse(s).unwrap(), &prepared.workload).unwrap()
        };
        let (mut a, mut b, mut c) = (run("noop"), run("deadline"), run("cfq"));
        a.phases[0].issuers[0].latency_ns.p99 = 5;
        b.phases[0].issuers[0].latency_ns.p99 = 3;
        c.phases[0].issuers[0].latency_ns.p99 = 5;
        let advice = rank(vec![a, b, c], &prepared, "hdd", 1).unwrap();
        let order: Vec<&str> = advice.ranking.iter().map(|r| r.scheduler.as_str()).collect();
        assert_eq!(order[0], "deadline");
        assert!(order[1].starts_with("noop") && order[2].starts_with("cfq"), "{order:?}");
        let confidence = advice.confidence.unwrap();
        assert!((confidence.margin_percent - 40.0).abs() < 1e-9);
        assert_eq!(confidence.level, "high");
    }

    // Proves the latency goal picks the latency-sensitive jobs of an fio job file: the
    // depth-1 reader is sensitive, the libaio writer at depth 32 is not, and the score is the
    // sensitive job's p99 even when the other job's is larger.
    #[test]
    fn latency_reads_only_the_depth_one_jobs_of_a_job_file() {
        let dir = std::env::temp_dir().join(format!("advise-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mixed.fio");
        std::fs::write(
            &path,
            "[reader]\nrw=randread\nbs=4k\nsize=1m\niodepth=1\n\n\
             [writer]\nrw=write\nbs=64k\nsize=4m\nioengine=libaio\niodepth=32\n",
        )
        .unwrap();
        let config = SimConfig::new(1, DeviceSpec::parse("hdd").unwrap());
        let target = &crate::targets(&config).unwrap()[0];
        let prepared = prepare(path.to_str().unwrap(), Goal::Latency, target).unwrap();
        assert_eq!(prepared.sensitive, ["reader"]);
        let mut run =
            crate::run(&config, &SchedulerSpec::parse("deadline").unwrap(), &prepared.workload)
                .unwrap();
        for issuer in run.phases.iter_mut().flat_map(|p| &mut p.issuers) {
            issuer.latency_ns.p99 = if issuer.name.starts_with("reader") { 5 } else { 50 };
        }
        assert_eq!(Figures::of(&run, &prepared).latency_ns_p99, 5);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
