//! `elevator compare`: the classic study, or any workloads on any device, under several
//! schedulers, side by side.

use std::io::Write;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};
use elevator_report::{Report, Run};
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_sim::study::{EXPERIMENTS, Experiment, stamp_scale};
use elevator_sim::{
    DEFAULT_DEVICE, DEFAULT_HOST, DeviceSpec, HostSpec, QueueSettings, SimConfig, run,
};
use elevator_workload::WorkloadSpec;

use crate::args::CompareArgs;
use crate::{plan, term};

/// One simulation to run: what it belongs to, its configuration, its workload.
struct Job {
    experiment: Option<&'static Experiment>,
    config: SimConfig,
    workload: WorkloadSpec,
    scheduler: SchedulerSpec,
}

fn schedulers(args: &CompareArgs) -> Result<Vec<SchedulerSpec>> {
    let default = if args.all { SchedulerKind::ALL } else { SchedulerKind::LEGACY };
    plan::schedulers(&args.schedulers, default)
}

/// The rows of `experiment`: the schedulers asked for, or by default the baseline first (the
/// database experiments' RHEL 3 row) and then the schedulers. A baseline scheduler asked for
/// by name runs on its experiment's older kernel; where an experiment has no such baseline it
/// has no kernel to run on: named with `-s` that is an error, and `--all` leaves it out there.
fn experiment_schedulers(
    args: &CompareArgs,
    experiment: &Experiment,
    schedulers: &[SchedulerSpec],
) -> Result<Vec<SchedulerSpec>> {
    let baselines: Vec<&str> =
        EXPERIMENTS.iter().filter_map(|e| e.baseline.map(|b| b.scheduler)).collect();
    let mut rows = Vec::with_capacity(schedulers.len() + 1);
    if let Some(baseline) = experiment.baseline
        && args.schedulers.is_empty()
        && !schedulers.iter().any(|scheduler| scheduler.kind().name() == baseline.scheduler)
    {
        let scheduler = SchedulerSpec::parse(baseline.scheduler)
            .with_context(|| format!("the baseline scheduler of experiment {}", experiment.id))?;
        rows.push(scheduler);
    }
    for scheduler in schedulers {
        let name = scheduler.kind().name();
        let elsewhere = baselines.contains(&name) && experiment.baseline_of(scheduler).is_none();
        if elsewhere && args.schedulers.is_empty() {
            continue;
        }
        if elsewhere {
            let with: Vec<&str> = EXPERIMENTS
                .iter()
                .filter(|e| e.baseline.is_some_and(|b| b.scheduler == name))
                .map(|e| e.id)
                .collect();
            bail!(
                "{name} runs only as the baseline of {} (its kernel is not {}'s); pick those \
                 with --only",
                with.join(", "),
                experiment.id
            );
        }
        rows.push(scheduler.clone());
    }
    Ok(rows)
}

fn jobs(args: &CompareArgs, schedulers: &[SchedulerSpec]) -> Result<Vec<Job>> {
    if !(args.scale > 0.0 && args.scale <= 1.0) {
        bail!("--scale {} is out of range (accepted: 0 < F <= 1)", args.scale);
    }
    let mut jobs = Vec::new();
    if args.workloads.is_empty() {
        if args.device.is_some() || args.host.is_some() || args.read_ahead_kb.is_some() {
            bail!(
                "-d, --host and --read-ahead-kb go with -w; the classic study sets its own machines"
            );
        }
        let accepted: Vec<&str> = EXPERIMENTS.iter().map(|e| e.id).collect();
        for id in &args.only {
            if !accepted.contains(&id.as_str()) {
                bail!("unknown experiment `{id}` (accepted: {})", accepted.join(", "));
            }
        }
        for experiment in EXPERIMENTS {
            if !args.only.is_empty() && !args.only.iter().any(|id| id == experiment.id) {
                continue;
            }
            for scheduler in &experiment_schedulers(args, experiment, schedulers)? {
                let (config, workload) =
                    experiment
                        .prepare_for(scheduler, args.seed, args.scale)
                        .with_context(|| format!("preparing experiment {}", experiment.id))?;
                jobs.push(Job {
                    experiment: Some(experiment),
                    config,
                    workload,
                    scheduler: scheduler.clone(),
                });
            }
        }
        return Ok(jobs);
    }
    if !args.only.is_empty() {
        bail!("--only picks experiments of the classic study; it does not go with -w");
    }
    let device = DeviceSpec::parse(args.device.as_deref().unwrap_or(DEFAULT_DEVICE))?;
    crate::list::warn_about_files(std::slice::from_ref(&device));
    let mut config = SimConfig::new(args.seed, device);
    config.host = HostSpec::parse(args.host.as_deref().unwrap_or(DEFAULT_HOST))?;
    let queue = QueueSettings::default();
    config.queue =
        QueueSettings { read_ahead_kb: args.read_ahead_kb.unwrap_or(queue.read_ahead_kb), ..queue };
    for text in &args.workloads {
        let workload = WorkloadSpec::parse(text)?;
        let workload = if args.scale == 1.0 { workload } else { workload.scaled(args.scale)? };
        for scheduler in schedulers {
            jobs.push(Job {
                experiment: None,
                config: config.clone(),
                workload: workload.clone(),
                scheduler: scheduler.clone(),
            });
        }
    }
    Ok(jobs)
}

/// Runs every job on the machine's processors; results come back in job order. A progress
/// bar goes to stderr when a person is watching (indicatif hides it otherwise).
fn run_all(jobs: &[Job]) -> Vec<Result<Run, elevator_sim::SimError>> {
    let threads =
        std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len().max(1));
    let next = Mutex::new(0usize);
    let results: Vec<Mutex<Option<Result<Run, elevator_sim::SimError>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let progress = term::simulation_counter(jobs.len());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let index = {
                        let mut next = next.lock().expect("no thread panics holding it");
                        let index = *next;
                        *next += 1;
                        index
                    };
                    let Some(job) = jobs.get(index) else { break };
                    let result = run(&job.config, &job.scheduler, &job.workload);
                    *results[index].lock().expect("no thread panics holding it") = Some(result);
                    let label = job.experiment.map_or("compare", |e| e.id);
                    progress.set_message(format!("{label} under {}", job.scheduler));
                    progress.inc(1);
                }
            });
        }
    });
    progress.finish_and_clear();
    results
        .into_iter()
        .map(|slot| slot.into_inner().expect("no thread panics holding it").expect("every job ran"))
        .collect()
}

pub(crate) fn run_command(args: &CompareArgs, stdout: &mut dyn Write) -> Result<()> {
    let schedulers = schedulers(args)?;
    let mut jobs = jobs(args, &schedulers)?;
    // An HTML report draws what each elevator did: keep a sample of the dispatches.
    let samples =
        crate::sim::dispatch_samples(args.dispatch_samples, args.report.output.as_deref());
    for job in &mut jobs {
        job.config.dispatch_samples = samples;
        job.config.series_interval = Some(args.report.interval);
    }
    let results = run_all(&jobs);
    let mut report = Report::new(args.seed, env!("CARGO_PKG_VERSION"));
    for (job, result) in jobs.iter().zip(results) {
        let what = job.experiment.map_or_else(|| job.workload.to_string(), |e| e.id.to_owned());
        let mut run =
            result.with_context(|| format!("simulating {what} under {}", job.scheduler))?;
        if let Some(experiment) = job.experiment {
            experiment.stamp(&mut run);
        }
        stamp_scale(&mut run, args.scale);
        report.runs.push(run);
    }
    plan::write_report(&report, &args.report, stdout)
}
