//! From the arguments as typed to what the libraries take: the steps every command shares.

use std::io::Write;

use anyhow::Result;
use elevator_core::split_spec_list;
use elevator_report::{Format, Report};
use elevator_sched::{SchedulerKind, SchedulerSpec};

use crate::args::{ReportArgs, ReportFormat};

/// The schedulers of `-s` (comma separated or repeated), or `default` when none was given.
pub(crate) fn schedulers(
    values: &[String],
    default: &[SchedulerKind],
) -> Result<Vec<SchedulerSpec>> {
    if values.is_empty() {
        return Ok(default.iter().map(|&kind| SchedulerSpec::new(kind)).collect());
    }
    let texts = split_spec_list("scheduler", values)?;
    Ok(texts.iter().map(|text| SchedulerSpec::parse(text)).collect::<Result<_, _>>()?)
}

impl From<ReportFormat> for Format {
    fn from(format: ReportFormat) -> Format {
        match format {
            ReportFormat::Table => Format::Table,
            ReportFormat::Json => Format::Json,
            ReportFormat::Csv => Format::Csv,
        }
    }
}

/// Writes `report` where and how `args` ask (`-o`, `--format`), else as a table on `stdout`.
pub(crate) fn write_report(
    report: &Report,
    args: &ReportArgs,
    stdout: &mut dyn Write,
) -> Result<()> {
    let output = args.output.as_deref();
    let format = Format::resolve(args.format.map(Format::from), output);
    Ok(elevator_report::write_report(report, format, output, stdout)?)
}
