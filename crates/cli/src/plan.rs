//! From the arguments as typed to what the libraries take: the steps every command shares.

use std::io::Write;

use anyhow::Result;
use elevator_core::split_spec_list;
use elevator_live::run::ContinueOnError;
use elevator_report::{Format, IoErrors, Report, Run};
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_workload::IoKind;

use crate::args::{RealIoArgs, ReportArgs, ReportFormat};
use crate::term::note;

/// The schedulers of `-s` (comma separated or repeated), or `default` when none was given.
pub(crate) fn schedulers(
    values: &[String],
    default: &[SchedulerKind],
) -> Result<Vec<SchedulerSpec>> {
    if values.is_empty() {
        return Ok(default.iter().map(|&kind| SchedulerSpec::new(kind)).collect());
    }
    let texts = split_spec_list("scheduler", values)?;
    let specs: Vec<SchedulerSpec> =
        texts.iter().map(|text| SchedulerSpec::parse(text)).collect::<Result<_, _>>()?;
    // A value the kernel's sysfs would clamp is clamped; say which value is used.
    for notice in specs.iter().flat_map(SchedulerSpec::notices) {
        note(&format!("warning: {notice}"));
    }
    Ok(specs)
}

impl From<ReportFormat> for Format {
    fn from(format: ReportFormat) -> Format {
        match format {
            ReportFormat::Table => Format::Table,
            ReportFormat::Json => Format::Json,
            ReportFormat::Csv => Format::Csv,
            ReportFormat::Svg => Format::Svg,
            ReportFormat::Html => Format::Html,
        }
    }
}

/// Writes `report` where and how `args` ask (`-o`, `--format`), else as a table on `stdout`.
/// An `-o` extension that names no format (and no `--format`) is an input error (exit 2).
pub(crate) fn write_report(
    report: &Report,
    args: &ReportArgs,
    stdout: &mut dyn Write,
) -> Result<()> {
    let output = args.output.as_deref();
    let format = Format::try_resolve(args.format.map(Format::from), output)?;
    Ok(elevator_report::write_report(report, format, output, stdout)?)
}

/// `--continue-on-error`, checked.
pub(crate) fn continue_on_error(io: &RealIoArgs) -> anyhow::Result<ContinueOnError> {
    ContinueOnError::parse(&io.continue_on_error).ok_or_else(|| {
        anyhow::anyhow!(
            "--continue-on-error {}: not a kind (accepted: none, read, write, io, verify, all)",
            io.continue_on_error
        )
    })
}

/// What a real run's failed I/O means: `Some(failure)` when `continue_on_error` does not cover
/// every failure (the run fails, exit 1), `None` otherwise (a tolerated failure is said on
/// stderr). `io_errors` is the run's count and first failure; `run` its report, whose phases
/// count the failures per direction.
pub(crate) fn io_error_failure(
    run: &Run,
    io_errors: &(u64, Option<String>),
    continue_on_error: ContinueOnError,
) -> Option<String> {
    let (count @ 1.., Some(first)) = io_errors else { return None };
    let errors = run.phases.iter().fold(IoErrors::default(), |mut all, phase| {
        all.add(&phase.errors);
        all
    });
    let tolerated = |count: u64, kind| count == 0 || continue_on_error.tolerates(kind);
    let scheduler = &run.scheduler;
    if tolerated(errors.read, IoKind::Read)
        && tolerated(errors.write, IoKind::Write)
        && tolerated(errors.other, IoKind::Sync)
    {
        note(&format!(
            "{count} I/Os failed under {scheduler} (--continue-on-error); the first: {first}"
        ));
        return None;
    }
    Some(format!("{count} I/Os failed under {scheduler}; the first: {first}"))
}
