//! `elevator sim`: one workload on one device under each scheduler, side by side.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use elevator_report::{Format, Report, render};
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_sim::{Bounds, DeviceSpec, HostSpec, QueueSettings, SimConfig, run};
use elevator_workload::WorkloadSpec;

use crate::args::{ReportFormat, SimArgs};

/// The device `elevator sim` uses when none is given: a 2005 desktop disk.
pub(crate) const DEFAULT_DEVICE: &str = "hdd";
/// The workload `elevator sim` uses when none is given: two processes each reading a file
/// sequentially, 200 GiB apart on the disk — the case where a scheduler that waits for a
/// reader's next request (anticipatory, cfq) beats one that does not (deadline, noop) by an
/// order of magnitude.
pub(crate) const DEFAULT_WORKLOAD: &str =
    "job:rw=read,bs=64k,numjobs=2,offset_increment=200g,size=64m";

/// A validated `sim` invocation.
struct Plan {
    config: SimConfig,
    schedulers: Vec<SchedulerSpec>,
    workload: WorkloadSpec,
    format: Format,
}

fn plan(args: &SimArgs) -> Result<Plan> {
    let device = DeviceSpec::parse(&args.device)?;
    let workload = WorkloadSpec::parse(&args.workload)?;
    let schedulers = if args.schedulers.is_empty() {
        SchedulerKind::ALL.iter().map(|&kind| SchedulerSpec::new(kind)).collect()
    } else {
        args.schedulers.iter().map(|text| SchedulerSpec::parse(text)).collect::<Result<_, _>>()?
    };
    let format = output_format(args.report.format, args.report.output.as_deref());
    let config = SimConfig {
        seed: args.seed,
        device,
        host: HostSpec::parse(&args.host)?,
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
    Ok(Plan { config, schedulers, workload, format })
}

/// The report format: as asked, else from the output file's extension, else a table.
pub(crate) fn output_format(format: Option<ReportFormat>, output: Option<&Path>) -> Format {
    match (format, output) {
        (Some(ReportFormat::Json), _) => Format::Json,
        (Some(ReportFormat::Csv), _) => Format::Csv,
        (Some(ReportFormat::Table), _) => Format::Table,
        (None, Some(path)) => match path.extension().and_then(|e| e.to_str()) {
            Some("json") => Format::Json,
            Some("csv") => Format::Csv,
            _ => Format::Table,
        },
        (None, None) => Format::Table,
    }
}

/// Writes `report` to `output` or `stdout`.
pub(crate) fn write_report(
    report: &Report,
    format: Format,
    output: Option<&Path>,
    stdout: &mut dyn Write,
) -> Result<()> {
    match output {
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("creating {}", path.display()))?;
            let mut out = BufWriter::new(file);
            render(report, format, &mut out)?;
            out.flush().with_context(|| format!("writing {}", path.display()))?;
        }
        None => render(report, format, stdout)?,
    }
    Ok(())
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
    write_report(&report, plan.format, args.report.output.as_deref(), stdout)
}
