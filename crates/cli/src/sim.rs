//! `elevator sim`: one workload on one device under each scheduler, side by side.

use std::io::Write;

use anyhow::{Context, Result};
use elevator_report::Report;
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_sim::{Bounds, DeviceSpec, HostSpec, QueueSettings, SimConfig, run};
use elevator_workload::WorkloadSpec;

use crate::args::SimArgs;
use crate::plan;

/// A validated `sim` invocation.
struct Plan {
    config: SimConfig,
    schedulers: Vec<SchedulerSpec>,
    workload: WorkloadSpec,
}

fn plan(args: &SimArgs) -> Result<Plan> {
    let device = DeviceSpec::parse(&args.device)?;
    crate::list::warn_about_files(std::slice::from_ref(&device));
    let workload = match &args.job_file {
        Some(path) => {
            WorkloadSpec::parse_fio_file(path)?.fio_capped(args.max_size, args.max_runtime)?
        }
        None => WorkloadSpec::parse(&args.workload)?,
    };
    let host = HostSpec::parse(&args.host)?;
    // Every scheduler the host's kernel can run (a 2.4 host has only its one elevator).
    let runnable: Vec<SchedulerKind> =
        SchedulerKind::ALL.iter().copied().filter(|kind| kind.runs_on(host.kernel())).collect();
    let schedulers = plan::schedulers(&args.schedulers, &runnable)?;
    let config = SimConfig {
        seed: args.seed,
        device,
        host,
        queue: QueueSettings {
            nr_requests: args.nr_requests,
            max_sectors_kb: args.max_sectors_kb,
            read_ahead_kb: args.read_ahead_kb,
            plugging: args.plugging,
            depth: args.depth,
        },
        bounds: Bounds::default(),
        check_invariants: args.check || elevator_sim::CHECK_BY_DEFAULT,
    };
    Ok(Plan { config, schedulers, workload })
}

pub(crate) fn run_command(args: &SimArgs, stdout: &mut dyn Write) -> Result<()> {
    let plan = plan(args)?;
    // Independent runs go in parallel; results are reported in the order asked for.
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .schedulers
            .iter()
            .map(|scheduler| {
                let (config, workload) = (&plan.config, &plan.workload);
                scope.spawn(move || run(config, scheduler, workload))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a simulation thread panicked"))
            .collect()
    });
    let mut report = Report::new(plan.config.seed, env!("CARGO_PKG_VERSION"));
    for (scheduler, result) in plan.schedulers.iter().zip(results) {
        report.runs.push(result.with_context(|| format!("simulating under {scheduler}"))?);
    }
    plan::write_report(&report, &args.report, stdout)
}
