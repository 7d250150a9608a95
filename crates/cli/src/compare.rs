//! `elevator compare`: the classic study, or any workloads on any device, under several
//! schedulers, side by side.

use std::io::Write;

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
            let rows = experiment
                .rows(schedulers, !args.schedulers.is_empty())
                .map_err(anyhow::Error::msg)?;
            for scheduler in &rows {
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
    let device_text = args.device.as_deref().unwrap_or(DEFAULT_DEVICE);
    let device = DeviceSpec::parse(device_text)?;
    crate::list::warn_about_files(std::slice::from_ref(&device));
    let mut config = SimConfig::new(args.seed, device);
    config.host = HostSpec::parse(args.host.as_deref().unwrap_or(DEFAULT_HOST))?;
    // A calibrated preset's own request size (issue 21).
    let queue = QueueSettings {
        max_sectors_kb: elevator_sim::device::table::measured_max_sectors_kb(device_text),
        ..QueueSettings::default()
    };
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
    let progress = term::simulation_counter(jobs.len());
    let results = elevator_sim::parallel::map_in_order(
        jobs.len(),
        elevator_sim::parallel::processors(),
        |index| run(&jobs[index].config, &jobs[index].scheduler, &jobs[index].workload),
        |index| {
            let job = &jobs[index];
            let label = job.experiment.map_or("compare", |e| e.id);
            progress.set_message(format!("{label} under {}", job.scheduler));
            progress.inc(1);
        },
    );
    progress.finish_and_clear();
    results
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
