//! `elevator report RUN.json`: render a saved report again, in any format (`-o report.html`).
//!
//! The input is the JSON `-o FILE.json` (or `--format json`) wrote, schema
//! `elevator.report/1`. A file that cannot be read, is not JSON, is another schema or lacks a
//! field is refused naming the file, and where serde knows them, the line, column and field
//! (exit 2).
//!
//! # Deviations
//!
//! * A report read back from JSON has no fio histograms (they are not part of the JSON), so its
//!   latency CDFs are drawn from the percentile points, and fio's own output formats cannot be
//!   written from it.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use elevator_report::{Report, SCHEMA};

use crate::args::{Command, KernelCommand, ReportArgs};

/// `elevator report`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ReportCmdArgs {
    /// The report to render: the JSON elevator wrote (`-o run.json`).
    #[arg(value_name = "RUN.json")]
    pub(crate) input: PathBuf,

    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

/// Refuses, before anything runs, an elevator report `-o` whose extension names no format
/// (`-o out.png`): a run of minutes must not end in "unknown extension". `-o` with fio's
/// `--output-format`/`--minimal` is fio's output file, whose name fio does not restrict.
pub(crate) fn check_output(command: &Command) -> Result<()> {
    let (report, fio_output) = match command {
        Command::Sim(args) => (&args.report, args.output_format.is_some() || args.minimal),
        Command::Compare(args) => (&args.report, false),
        Command::Run(args) => (&args.io.report, args.output_format.is_some() || args.minimal),
        Command::Kernel(kernel) => match &kernel.command {
            KernelCommand::Compare(args) => {
                (&args.io.report, args.output_format.is_some() || args.minimal)
            }
            _ => return Ok(()),
        },
        Command::Report(args) => (&args.report, false),
        _ => return Ok(()),
    };
    if !fio_output {
        let asked = report.format.map(elevator_report::Format::from);
        elevator_report::Format::try_resolve(asked, report.output.as_deref())?;
    }
    Ok(())
}

/// Reads `args.input` and writes it as `-o`/`--format` ask.
pub(crate) fn run(args: &ReportCmdArgs, stdout: &mut dyn Write) -> Result<()> {
    let report = read(&args.input)?;
    crate::plan::write_report(&report, &args.report, stdout)
}

/// A saved report, or an error naming the file and what is wrong with it.
fn read(path: &std::path::Path) -> Result<Report> {
    let name = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
    // The schema first, so that another tool's JSON is named as such rather than as a
    // missing field.
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|error| {
        anyhow::anyhow!("{name}: not JSON: {error}; expected a report elevator wrote ({SCHEMA})")
    })?;
    match value.get("schema").and_then(serde_json::Value::as_str) {
        Some(SCHEMA) => {}
        Some(other) => bail!("{name}: schema `{other}` is not one this elevator reads ({SCHEMA})"),
        None => bail!("{name}: no `schema` field; expected a report elevator wrote ({SCHEMA})"),
    }
    // Parsed from the text again (not the value) so that errors carry a line and column.
    // serde's message names the field and says "at line L column C".
    serde_json::from_str(&text).map_err(|error| {
        anyhow::anyhow!("{name}: {error} (expected a report elevator wrote, schema {SCHEMA})")
    })
}
