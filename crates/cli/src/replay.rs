//! `elevator replay TRACE`: thin sugar over `elevator sim -w trace:TRACE` (the default) and
//! `elevator run -t TARGET -w trace:TRACE` (`--live TARGET`). The replay itself is the
//! `trace:` workload (`elevator_workload::trace_replay`); this module only writes the
//! equivalent command line and runs it through the same parser and code path, so every
//! default, check and write-safety rule is the other command's.

use std::ffi::OsString;
use std::io::Write;

use anyhow::Result;
use clap::{Parser, ValueEnum};
use elevator_workload::{WorkloadSpec, trace_replay};

use crate::args::{Args, Command, ReplayArgs};

/// The `trace:` workload spec `args` asks for.
pub(crate) fn workload_spec(args: &ReplayArgs) -> String {
    let mut spec = format!("{}{}", trace_replay::PREFIX, args.trace);
    if let Some(speed) = args.speed {
        spec.push_str(&format!(":speed={speed}"));
    } else if args.afap {
        spec.push_str(":afap=1");
    }
    spec
}

/// The `sim` or `run` command line `args` stands for (without the program name).
pub(crate) fn equivalent(args: &ReplayArgs) -> Result<Vec<OsString>> {
    let workload = workload_spec(args);
    let mut argv: Vec<OsString> = Vec::new();
    match &args.live {
        None => {
            argv.push("sim".into());
            if let Some(device) = &args.device {
                argv.extend(["--device".into(), device.into()]);
            }
        }
        Some(target) => {
            argv.extend(["run".into(), "--target".into(), target.into()]);
            // A missing target is created as large as the trace reaches (whole MiB, at
            // least one), not `run`'s 1 GiB default; an existing one must be that large.
            let extent_bytes = WorkloadSpec::parse(&workload)?.trace_extent_bytes().unwrap_or(0);
            let mib = extent_bytes.div_ceil(1 << 20).max(1);
            argv.extend(["--size".into(), format!("{mib}m").into()]);
            if args.force {
                argv.push("--force".into());
            }
        }
    }
    argv.extend(["--workload".into(), workload.into()]);
    for scheduler in &args.schedulers {
        argv.extend(["--scheduler".into(), scheduler.into()]);
    }
    argv.extend(["--seed".into(), args.seed.to_string().into()]);
    if let Some(format) = args.report.format {
        let value = format.to_possible_value().expect("every report format has a name");
        argv.extend(["--format".into(), value.get_name().into()]);
    }
    if let Some(output) = &args.report.output {
        argv.extend(["--output".into(), output.into()]);
    }
    Ok(argv)
}

pub(crate) fn run_command(args: &ReplayArgs, stdout: &mut dyn Write) -> Result<()> {
    let argv = equivalent(args)?;
    let parsed = Args::try_parse_from(std::iter::once(OsString::from("elevator")).chain(argv))
        .map_err(|error| anyhow::anyhow!("{}", error.render()))?;
    // As `main` does for `sim` and `run`: a report file name no format has is refused
    // before the run.
    crate::report_cmd::check_output(&parsed.command)?;
    match &parsed.command {
        Command::Sim(sim_args) => crate::sim::run_command(sim_args, stdout),
        Command::Run(run_args) => crate::run::run_command(run_args, stdout),
        other => unreachable!("replay stands for sim or run, not {other:?}"),
    }
}
