//! `elevator list`: every scheduler with its tunables, from the same tables the spec parser,
//! the reports and the kernel driver read.

use std::io::Write;

use anyhow::Result;
use comfy_table::{Table, presets};
use elevator_core::TunableSpec;
use elevator_sched::{SchedulerKind, SchedulerSpec, sysfs_line};
use serde::Serialize;

use crate::args::{Format, ListArgs, ListWhat};

#[derive(Serialize)]
struct SchedulerList {
    /// The sysfs-style line, the default scheduler in brackets.
    scheduler_line: String,
    schedulers: Vec<SchedulerEntry>,
}

#[derive(Serialize)]
struct SchedulerEntry {
    name: &'static str,
    /// The spec as resolved (the name alone when nothing was set).
    spec: String,
    default: bool,
    aliases: &'static [&'static str],
    kernel_version: &'static str,
    summary: &'static str,
    tunables: Vec<TunableEntry>,
}

#[derive(Serialize)]
struct TunableEntry {
    #[serde(flatten)]
    spec: TunableSpec,
    /// The value the listed spec resolves to (the default unless the spec sets it).
    value: i64,
}

pub(crate) fn run(args: &ListArgs, out: &mut dyn Write) -> Result<()> {
    match args.what {
        ListWhat::Schedulers => list_schedulers(args, out),
    }
}

fn list_schedulers(args: &ListArgs, out: &mut dyn Write) -> Result<()> {
    let specs: Vec<SchedulerSpec> = if args.specs.is_empty() {
        SchedulerKind::ALL.iter().map(|&kind| SchedulerSpec::new(kind)).collect()
    } else {
        args.specs.iter().map(|text| SchedulerSpec::parse(text)).collect::<Result<_, _>>()?
    };
    let list = SchedulerList {
        scheduler_line: sysfs_line(SchedulerKind::DEFAULT),
        schedulers: specs.iter().map(entry).collect(),
    };
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &list)?;
            writeln!(out)?;
        }
        Format::Table => render_table(&list, out)?,
    }
    Ok(())
}

fn entry(spec: &SchedulerSpec) -> SchedulerEntry {
    let kind = spec.kind();
    let tunables = kind
        .tunables()
        .iter()
        .zip(spec.resolved())
        .map(|(&tunable, (_, value))| TunableEntry { spec: tunable, value })
        .collect();
    SchedulerEntry {
        name: kind.name(),
        spec: spec.to_string(),
        default: kind == SchedulerKind::DEFAULT,
        aliases: kind.aliases(),
        kernel_version: kind.kernel_version(),
        summary: kind.summary(),
        tunables,
    }
}

fn render_table(list: &SchedulerList, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "{}", list.scheduler_line)?;
    for scheduler in &list.schedulers {
        writeln!(out)?;
        let aliases = if scheduler.aliases.is_empty() {
            String::new()
        } else {
            format!(" (alias {})", scheduler.aliases.join(", "))
        };
        writeln!(
            out,
            "{}{aliases} — Linux {}: {}",
            scheduler.spec, scheduler.kernel_version, scheduler.summary
        )?;
        if scheduler.tunables.is_empty() {
            writeln!(out, "  no tunables")?;
            continue;
        }
        let mut table = Table::new();
        table.load_style(presets::NOTHING);
        table.set_header([" tunable", "value", "unit", "default", "range", "help"]);
        for tunable in &scheduler.tunables {
            let spec = &tunable.spec;
            table.add_row([
                format!(" {}", spec.name),
                tunable.value.to_string(),
                spec.unit.symbol().to_owned(),
                spec.default.to_string(),
                format!("{}..={}", spec.min, spec.max),
                spec.help.to_owned(),
            ]);
        }
        // Padding fills every cell to its column's width; trailing blanks only get in the way of
        // `grep` and diffs.
        for line in table.to_string().lines() {
            writeln!(out, "{}", line.trim_end())?;
        }
    }
    Ok(())
}
