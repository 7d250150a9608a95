//! `elevator list`: schedulers, devices, hosts and workloads with their keys, from the same
//! tables the parsers, the reports and the kernel driver read.

use std::io::Write;

use anyhow::Result;
use comfy_table::{Table, presets};
use elevator_core::{KeySpec, TunableSpec};
use elevator_sched::{SchedulerKind, SchedulerSpec, sysfs_line};
use elevator_sim::device::Preset;
use elevator_sim::host::spec as host;
use elevator_sim::{DeviceKind, DeviceSpec, HostSpec};
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
        listing.workloads = workloads(&args.specs)?;
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
                    key.value.clone(),
                    key.default.to_owned(),
                    key.accepts.clone(),
                    key.help.to_owned(),
                ]);
            }
            write_table(out, &table)?;
            for preset in &entry.presets {
                let values: Vec<String> =
                    preset.values.iter().map(|(key, value)| format!("{key}={value}")).collect();
                writeln!(out, "  preset {}: {}", preset.name, preset.help)?;
                if !values.is_empty() {
                    writeln!(out, "    {}", values.join(","))?;
                }
            }
        }
    }
    Ok(())
}
