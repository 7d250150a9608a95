//! `elevator list`: schedulers, devices, hosts and workloads with their keys, from the same
//! tables the parsers, the reports and the kernel driver read.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Result;
use comfy_table::{Table, presets};
use elevator_core::units::parse_size_bytes;
use elevator_core::{KeySpec, TunableSpec};
use elevator_sched::{SchedulerKind, SchedulerSpec, sysfs_line};
use elevator_sim::device::Preset;
use elevator_sim::host::spec as host;
use elevator_sim::{DeviceKind, DeviceSpec, HostSpec};
use elevator_workload::fio::{self, FioEnv};
use elevator_workload::{WorkloadKind, WorkloadSpec};
use serde::Serialize;

use crate::args::{ListArgs, ListFormat, ListWhat};

#[derive(Serialize, Default)]
struct Listing {
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduler_line: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    schedulers: Vec<SchedulerEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    devices: Vec<ComponentEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hosts: Vec<ComponentEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    workloads: Vec<ComponentEntry>,
    /// The jobs of the fio job files named (`elevator list workloads FILE.fio`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fio_jobs: Vec<FioJobEntry>,
}

#[derive(Serialize)]
struct FioJobEntry {
    name: String,
    section: String,
    /// `FILE:LINE` of the section header.
    at: String,
    engine: String,
    /// Why elevator cannot run the job (an engine that does no block I/O), if it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_runnable: Option<String>,
    /// Every option in the order fio applies it: globals, then the job's own.
    options: Vec<FioOptionEntry>,
}

#[derive(Serialize)]
struct FioOptionEntry {
    name: &'static str,
    /// The resolved value (sizes in bytes, times in ns, per direction `read,write,trim`).
    value: String,
    /// The text as written; absent for a value-less flag.
    written: Option<String>,
    global: bool,
    at: String,
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
    /// For the 2.4 elevator, what `elvtune` prints for a queue with these values.
    #[serde(skip_serializing_if = "Option::is_none")]
    elvtune: Option<String>,
}

#[derive(Serialize)]
struct TunableEntry {
    #[serde(flatten)]
    spec: TunableSpec,
    /// The value the listed spec resolves to (the default unless the spec sets it).
    value: i64,
}

#[derive(Serialize)]
struct ComponentEntry {
    name: String,
    summary: &'static str,
    keys: Vec<KeyEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    presets: Vec<PresetEntry>,
}

#[derive(Serialize)]
struct KeyEntry {
    key: &'static str,
    accepts: String,
    default: &'static str,
    /// The value in force for the listed spec.
    value: String,
    help: &'static str,
}

#[derive(Serialize)]
struct PresetEntry {
    name: &'static str,
    help: &'static str,
    values: Vec<(String, String)>,
}

pub(crate) fn run(args: &ListArgs, out: &mut dyn Write) -> Result<()> {
    let mut listing = Listing::default();
    let all = args.what.is_none();
    if !args.specs.is_empty() && all {
        anyhow::bail!(
            "name what the specs are: `elevator list schedulers|devices|hosts|workloads SPEC...`"
        );
    }
    if all || args.what == Some(ListWhat::Schedulers) {
        listing.scheduler_line = Some(sysfs_line(SchedulerKind::DEFAULT));
        listing.schedulers = schedulers(&args.specs)?;
    }
    if all || args.what == Some(ListWhat::Devices) {
        listing.devices = devices(&args.specs)?;
    }
    if all || args.what == Some(ListWhat::Hosts) {
        listing.hosts = hosts(&args.specs)?;
    }
    if all || args.what == Some(ListWhat::Workloads) {
        let (files, specs): (Vec<String>, Vec<String>) =
            args.specs.iter().cloned().partition(|spec| is_fio_file(spec));
        if files.is_empty() || !specs.is_empty() {
            listing.workloads = workloads(&specs)?;
        }
        for file in &files {
            listing.fio_jobs.extend(fio_jobs(Path::new(file))?);
        }
    }
    match args.format {
        ListFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &listing)?;
            writeln!(out)?;
        }
        ListFormat::Table => render_table(&listing, out)?,
    }
    Ok(())
}

fn schedulers(specs: &[String]) -> Result<Vec<SchedulerEntry>> {
    let specs: Vec<SchedulerSpec> = if specs.is_empty() {
        SchedulerKind::ALL.iter().map(|&kind| SchedulerSpec::new(kind)).collect()
    } else {
        specs.iter().map(|text| SchedulerSpec::parse(text)).collect::<Result<_, _>>()?
    };
    // A value the kernel's sysfs would clamp is clamped; say which value is used.
    for notice in specs.iter().flat_map(SchedulerSpec::notices) {
        crate::term::note(&format!("warning: {notice}"));
    }
    Ok(specs
        .iter()
        .map(|spec| {
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
                elvtune: elvtune(spec),
            }
        })
        .collect())
}

impl ComponentEntry {
    /// A component with `keys` and the values `resolved` puts in force, without presets.
    fn new(
        name: String,
        summary: &'static str,
        keys: &'static [KeySpec],
        resolved: &[(&'static str, String)],
    ) -> ComponentEntry {
        ComponentEntry { name, summary, keys: key_entries(keys, resolved), presets: Vec::new() }
    }

    fn with_presets(mut self, presets: &[Preset]) -> ComponentEntry {
        self.presets = presets
            .iter()
            .map(|preset| PresetEntry {
                name: preset.name,
                help: preset.help,
                values: preset
                    .values
                    .iter()
                    .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                    .collect(),
            })
            .collect();
        self
    }
}

/// `elvtune /dev/sda` on a queue running `spec`, if it is the 2.4 elevator
/// (linux-2.4-elevator.md §2). The values are read back from a built instance, so vanilla's
/// unstored `max_bomb_segments` shows 0 as it does there; `/dev/sda` is the first SCSI disk and
/// 0 the ID of the first queue a 2.4 kernel creates (IDs count queues in creation order).
fn elvtune(spec: &SchedulerSpec) -> Option<String> {
    use elevator_sched::linus;
    if spec.kind().name() != linus::NAME {
        return None;
    }
    let scheduler = spec.build();
    let value = |name| scheduler.tunable(name).ok();
    Some(linus::elvtune_listing(
        "/dev/sda",
        0,
        value("read_latency")?,
        value("write_latency")?,
        value("max_bomb_segments")?,
    ))
}

fn key_entries(keys: &'static [KeySpec], resolved: &[(&'static str, String)]) -> Vec<KeyEntry> {
    keys.iter()
        .map(|key| KeyEntry {
            key: key.key,
            accepts: key.kind.describe(),
            default: key.default,
            value: resolved
                .iter()
                .find(|(name, _)| *name == key.key)
                .map(|(_, value)| value.clone())
                .unwrap_or_default(),
            help: key.help,
        })
        .collect()
}

fn devices(specs: &[String]) -> Result<Vec<ComponentEntry>> {
    let specs: Vec<DeviceSpec> = if specs.is_empty() {
        DeviceKind::ALL
            .iter()
            .map(|kind| DeviceSpec::parse(kind.name()))
            .collect::<Result<_, _>>()?
    } else {
        specs.iter().map(|text| DeviceSpec::parse(text)).collect::<Result<_, _>>()?
    };
    warn_about_files(&specs);
    Ok(specs
        .iter()
        .map(|spec| {
            let kind = spec.kind();
            let listed_alone = specs.len() == DeviceKind::ALL.len();
            let bare = spec.to_string() == kind.presets()[0].name;
            let presets = if listed_alone || bare { kind.presets() } else { &[] };
            ComponentEntry::new(spec.to_string(), kind.summary(), kind.keys(), &spec.resolved())
                .with_presets(presets)
        })
        .collect())
}

/// Values longer than this are shortened in tables (`--format json` lists them whole).
const TABLE_VALUE_CHARS: usize = 60;

/// `value` as a table shows it: whole, or its start and how long it is (a DiskSim drive's
/// slip list runs to thousands of characters).
fn abbreviate(value: &str) -> String {
    if value.chars().count() <= TABLE_VALUE_CHARS {
        return value.to_owned();
    }
    let start: String = value.chars().take(TABLE_VALUE_CHARS - 20).collect();
    format!("{start}... ({} chars: --format json)", value.chars().count())
}

/// The one warning line of each device read from a DiskSim file (what it does not model).
pub(crate) fn warn_about_files(specs: &[DeviceSpec]) {
    for line in specs.iter().filter_map(DeviceSpec::warning_line) {
        // stderr: the listing itself stays machine-readable on stdout.
        #[allow(clippy::print_stderr)]
        {
            eprintln!("{line}");
        }
    }
}

/// Hosts: the host's keys from the same table `--host` is parsed with, and its presets when
/// the bare host (or nothing) is listed.
fn hosts(specs: &[String]) -> Result<Vec<ComponentEntry>> {
    let specs: Vec<HostSpec> = if specs.is_empty() {
        vec![HostSpec::default_host()]
    } else {
        specs.iter().map(|text| HostSpec::parse(text)).collect::<Result<_, _>>()?
    };
    Ok(specs
        .iter()
        .map(|spec| {
            let bare = spec.to_string() == host::PRESETS[0].name;
            ComponentEntry::new(spec.to_string(), host::SUMMARY, host::KEYS, &spec.resolved())
                .with_presets(if bare { host::PRESETS } else { &[] })
        })
        .collect())
}

/// A spec naming an fio job file rather than a workload spec (`kind:key=value`).
fn is_fio_file(spec: &str) -> bool {
    spec.ends_with(".fio")
}

/// The environment fio job files see: the process environment for `${VAR}`, and the default
/// host's memory and processors for `$mb_memory` and `$ncpus` (fio-compat.md R7: from the host
/// model); `$pagesize` is the 4 KiB page of the x86 hosts modelled.
fn fio_env() -> Result<FioEnv> {
    let host = HostSpec::default_host().resolved();
    let value = |key: &str| {
        host.iter()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| value.clone())
            .unwrap_or_default()
    };
    Ok(FioEnv {
        vars: std::env::vars().collect::<BTreeMap<_, _>>(),
        page_size_bytes: 4096,
        memory_mib: parse_size_bytes(&value("ram"))? >> 20,
        cpus: value("cpus").parse()?,
    })
}

fn fio_jobs(path: &Path) -> Result<Vec<FioJobEntry>> {
    let parsed = fio::parse_file(path, &fio_env()?)?;
    Ok(parsed
        .jobs
        .iter()
        .map(|job| FioJobEntry {
            name: job.name().to_string(),
            section: job.section.clone(),
            at: job.at.to_string(),
            engine: job.engine().to_string(),
            not_runnable: job.runnable().err(),
            options: job
                .options
                .iter()
                .map(|option| FioOptionEntry {
                    name: option.name,
                    value: option.value.to_string(),
                    written: option.written.clone(),
                    global: option.global,
                    at: option.at.to_string(),
                })
                .collect(),
        })
        .collect())
}

fn workloads(specs: &[String]) -> Result<Vec<ComponentEntry>> {
    let specs: Vec<WorkloadSpec> = if specs.is_empty() {
        WorkloadKind::ALL
            .iter()
            .map(|kind| WorkloadSpec::parse(kind.name()))
            .collect::<Result<_, _>>()?
    } else {
        specs.iter().map(|text| WorkloadSpec::parse(text)).collect::<Result<_, _>>()?
    };
    Ok(specs
        .iter()
        .map(|spec| {
            let kind = spec.kind();
            ComponentEntry::new(spec.to_string(), kind.summary(), kind.keys(), &spec.resolved())
        })
        .collect())
}

pub(crate) fn plain_table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table.load_style(presets::NOTHING);
    table.set_header(header.to_vec());
    table
}

pub(crate) fn write_table(out: &mut dyn Write, table: &Table) -> Result<()> {
    // Padding fills every cell to its column's width; trailing blanks only get in the way of
    // `grep` and diffs.
    for line in table.to_string().lines() {
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn render_table(listing: &Listing, out: &mut dyn Write) -> Result<()> {
    let mut first = true;
    let mut section = |out: &mut dyn Write, title: &str| -> Result<()> {
        if !first {
            writeln!(out)?;
        }
        first = false;
        writeln!(out, "{title}")?;
        Ok(())
    };
    if let Some(line) = &listing.scheduler_line {
        section(out, &format!("schedulers: {line}"))?;
        for scheduler in &listing.schedulers {
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
            let mut table = plain_table(&[" tunable", "value", "unit", "default", "range", "help"]);
            for tunable in &scheduler.tunables {
                let spec = &tunable.spec;
                table.add_row(vec![
                    format!(" {}", spec.name),
                    tunable.value.to_string(),
                    spec.unit.symbol().to_owned(),
                    spec.default.to_string(),
                    format!("{}..={}", spec.min, spec.max),
                    spec.help.to_owned(),
                ]);
            }
            write_table(out, &table)?;
            if let Some(elvtune) = &scheduler.elvtune {
                write!(out, "  elvtune /dev/sda:{elvtune}")?;
            }
        }
    }
    for (title, entries) in [
        ("devices", &listing.devices),
        ("hosts", &listing.hosts),
        ("workloads", &listing.workloads),
    ] {
        if entries.is_empty() {
            continue;
        }
        section(out, &format!("{title}:"))?;
        for entry in entries {
            writeln!(out)?;
            writeln!(out, "{} — {}", entry.name, entry.summary)?;
            let mut table = plain_table(&[" key", "value", "default", "accepts", "help"]);
            for key in &entry.keys {
                table.add_row(vec![
                    format!(" {}", key.key),
                    abbreviate(&key.value),
                    key.default.to_owned(),
                    key.accepts.clone(),
                    key.help.to_owned(),
                ]);
            }
            write_table(out, &table)?;
            for preset in &entry.presets {
                let values: Vec<String> = preset
                    .values
                    .iter()
                    .map(|(key, value)| format!("{key}={}", abbreviate(value)))
                    .collect();
                writeln!(out, "  preset {}: {}", preset.name, preset.help)?;
                if !values.is_empty() {
                    writeln!(out, "    {}", values.join(","))?;
                }
            }
        }
    }
    if !listing.fio_jobs.is_empty() {
        section(out, "fio jobs:")?;
    }
    for job in &listing.fio_jobs {
        writeln!(out)?;
        writeln!(out, "{} — [{}] at {}, ioengine={}", job.name, job.section, job.at, job.engine)?;
        if let Some(why) = &job.not_runnable {
            writeln!(out, "  not runnable: {why}")?;
        }
        let mut table = plain_table(&[" option", "value", "written", "from"]);
        for option in &job.options {
            let from =
                if option.global { format!("{} (global)", option.at) } else { option.at.clone() };
            table.add_row(vec![
                format!(" {}", option.name),
                option.value.clone(),
                option.written.clone().unwrap_or_default(),
                from,
            ]);
        }
        write_table(out, &table)?;
    }
    Ok(())
}
