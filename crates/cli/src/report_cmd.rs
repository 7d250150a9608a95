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

use crate::args::ReportArgs;

/// `elevator report`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ReportCmdArgs {
    /// The report to render: the JSON elevator wrote (`-o run.json`).
    #[arg(value_name = "RUN.json")]
    pub(crate) input: PathBuf,

    #[command(flatten)]
    pub(crate) report: ReportArgs,
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
