//! A device's request queue as `elevator kernel show` prints it, and the changes `set` and
//! `tune` make to it.

use std::collections::BTreeMap;

use elevator_sched::{BlockLayer, SchedulerKind};

use crate::error::KernelError;
use crate::sysfs::{BlockDevice, SchedulerLine, Sysfs};

/// Everything `show` says about one device.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueueInfo {
    /// Kernel name (`sda`).
    pub device: String,
    /// `/dev/NAME`.
    pub dev_path: String,
    /// The scheduler line exactly as sysfs prints it.
    pub scheduler_line: String,
    /// What the device offers and which is current.
    pub scheduler: SchedulerLine,
    /// `queue/rotational`: a spinning disk.
    pub rotational: Option<bool>,
    /// `queue/nr_requests`: scheduler tags (requests the scheduler may hold) per hardware queue.
    pub nr_requests: Option<u64>,
    /// `queue/read_ahead_kb`.
    pub read_ahead_kb: Option<u64>,
    /// `queue/max_sectors_kb`: the largest request the block layer builds.
    pub max_sectors_kb: Option<u64>,
    /// `queue/max_hw_sectors_kb`: the largest the device takes.
    pub max_hw_sectors_kb: Option<u64>,
    /// `queue/logical_block_size`.
    pub logical_block_size_bytes: Option<u64>,
    /// Commands the device queues at once, where known (`device/queue_depth` for SCSI, else
    /// the tags of the first hardware queue).
    pub hw_queue_depth: Option<u64>,
    /// Hardware queues (`mq/*`).
    pub hw_queues: Option<u64>,
    /// `queue/zoned` (`none`, `host-managed`, ...): zoned drives should stay on mq-deadline.
    pub zoned: Option<String>,
    /// Capacity.
    pub size_bytes: Option<u64>,
    /// `device/model`, where the driver gives one.
    pub model: Option<String>,
    /// The current scheduler's tunables (`queue/iosched/*`), by name.
    pub tunables: BTreeMap<String, String>,
}

/// Reads what `show` prints for `device`.
pub fn queue_info(sysfs: &Sysfs, device: &BlockDevice) -> Result<QueueInfo, KernelError> {
    let scheduler = sysfs.scheduler(device)?;
    let number = |attr: &str| {
        sysfs.read_optional(&device.queue_attr(attr)).and_then(|text| text.parse::<u64>().ok())
    };
    let hw_queues = std::fs::read_dir(device.dir.join("mq"))
        .ok()
        .map(|entries| entries.filter_map(Result::ok).count() as u64);
    let hw_queue_depth = sysfs
        .read_optional(&device.dir.join("device/queue_depth"))
        .or_else(|| sysfs.read_optional(&device.dir.join("mq/0/nr_tags")))
        .and_then(|text| text.parse().ok());
    Ok(QueueInfo {
        device: device.name.clone(),
        dev_path: device.dev_path().display().to_string(),
        scheduler_line: scheduler.render(),
        rotational: number("rotational").map(|value| value != 0),
        nr_requests: number("nr_requests"),
        read_ahead_kb: number("read_ahead_kb"),
        max_sectors_kb: number("max_sectors_kb"),
        max_hw_sectors_kb: number("max_hw_sectors_kb"),
        logical_block_size_bytes: number("logical_block_size"),
        hw_queue_depth,
        hw_queues,
        zoned: sysfs.read_optional(&device.queue_attr("zoned")),
        size_bytes: sysfs
            .read_optional(&device.dir.join("size"))
            .and_then(|text| text.parse::<u64>().ok())
            .map(|sectors| sectors * 512),
        model: sysfs.read_optional(&device.dir.join("device/model")).filter(|m| !m.is_empty()),
        tunables: sysfs.iosched(device).into_iter().collect(),
        scheduler,
    })
}

/// The blk-mq scheduler a current kernel knows as `name` (its name or one of the kernel's
/// aliases), built in or as a `NAME-iosched` module that a write to `queue/scheduler` loads.
fn kernel_scheduler(name: &str) -> Option<SchedulerKind> {
    SchedulerKind::ALL.iter().copied().filter(|kind| kind.block_layer() == BlockLayer::BlkMq).find(
        |kind| {
            kind.name() == name
                || kind.aliases().contains(&name)
                || kind.kernel_aliases().contains(&name)
        },
    )
}

/// The kernel's name for `name` on a device whose scheduler line is `line`, or the error that
/// says what the device offers. The kernel takes `deadline` for mq-deadline; a blk-mq name the
/// device does not list yet is accepted (writing it loads the module `NAME-iosched`).
pub fn check_scheduler_name<'a>(
    device: &BlockDevice,
    line: &SchedulerLine,
    name: &'a str,
) -> Result<&'a str, KernelError> {
    let known = kernel_scheduler(name);
    let canonical = known.map_or(name, |kind| kind.name());
    if known.is_some() || line.available.iter().any(|offered| offered == canonical) {
        return Ok(canonical);
    }
    Err(KernelError::UnknownScheduler {
        device: device.name.clone(),
        name: name.to_owned(),
        available: line.available.clone(),
        hint: legacy_hint(name),
    })
}

/// Switches `device` to `name` and checks that it took. Returns the new scheduler line.
///
/// A name the device does not list yet is still tried when it is one of the kernel's blk-mq
/// schedulers (the write loads its module); anything else is refused with the list.
pub fn set_scheduler(
    sysfs: &Sysfs,
    device: &BlockDevice,
    name: &str,
) -> Result<SchedulerLine, KernelError> {
    let line = sysfs.scheduler(device)?;
    let canonical = check_scheduler_name(device, &line, name)?;
    if line.current == canonical {
        return Ok(line);
    }
    let path = device.queue_attr("scheduler");
    match sysfs.write(&path, canonical) {
        Ok(()) => {}
        Err(KernelError::Rejected { .. }) => {
            let hint = format!(
                " (the kernel refused `{canonical}`: not built in and no `{canonical}-iosched` module)"
            );
            return Err(KernelError::UnknownScheduler {
                device: device.name.clone(),
                name: name.to_owned(),
                available: sysfs.scheduler(device).unwrap_or(line).available,
                hint,
            });
        }
        Err(other) => return Err(other),
    }
    let now = sysfs.scheduler(device)?;
    if now.current != canonical {
        return Err(KernelError::NotApplied {
            path,
            wanted: canonical.to_owned(),
            found: now.render(),
        });
    }
    Ok(now)
}

/// Why a 2.6 name is not on a modern kernel, and where elevator still has it.
fn legacy_hint(name: &str) -> String {
    let successor = SchedulerKind::from_name(name)
        .filter(|kind| kind.block_layer() == BlockLayer::Legacy)
        .and_then(SchedulerKind::successor);
    match successor {
        Some(successor) => format!(
            " (`{name}` is a 2.6 scheduler; the legacy block layer left in Linux 5.0 — the \
             nearest here is `{successor}`, and elevator's own `{name}` runs with \
             `elevator run -s {name}` or `elevator sim`)"
        ),
        None => String::new(),
    }
}

/// Queue attributes `tune` may write besides the scheduler's own tunables.
pub const QUEUE_ATTRIBUTES: &[&str] = &[
    "nr_requests",
    "read_ahead_kb",
    "max_sectors_kb",
    "nomerges",
    "rq_affinity",
    "add_random",
    "iostats",
    "rotational",
    "wbt_lat_usec",
];

/// One `KEY=VALUE` of `tune` or `persist`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// A queue attribute or a tunable of the scheduler.
    pub key: String,
    /// The value as given.
    pub value: String,
}

impl Setting {
    /// Parses `KEY=VALUE`.
    pub fn parse(device: &str, text: &str) -> Result<Setting, KernelError> {
        let bad = |why: &str| KernelError::BadSetting {
            device: device.to_owned(),
            setting: text.to_owned(),
            why: why.to_owned(),
        };
        let (key, value) =
            text.split_once('=').ok_or_else(|| bad("expected KEY=VALUE, e.g. fifo_batch=8"))?;
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || value.is_empty() {
            return Err(bad("expected KEY=VALUE with both sides non-empty"));
        }
        if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad("a key is letters, digits and `_` (a sysfs attribute name)"));
        }
        Ok(Setting { key: key.to_owned(), value: value.to_owned() })
    }

    /// Whether it is a queue attribute rather than a scheduler tunable.
    pub fn is_queue_attribute(&self) -> bool {
        QUEUE_ATTRIBUTES.contains(&self.key.as_str())
    }

    /// Where it lives under `queue/`.
    pub fn attr(&self) -> String {
        if self.is_queue_attribute() { self.key.clone() } else { format!("iosched/{}", self.key) }
    }
}

/// What a setting was and became.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The key.
    pub key: String,
    /// Its value before.
    pub before: String,
    /// What was written.
    pub written: String,
    /// What it reads back (the kernel may round, e.g. read_ahead_kb to whole pages).
    pub after: String,
}

/// The value to write for `setting` on a device whose scheduler is `scheduler`: an integer
/// as given, or — for a tunable elevator also implements — a value with a unit (`250ms`)
/// converted to the tunable's sysfs unit.
pub fn sysfs_value(
    device: &str,
    scheduler: &str,
    setting: &Setting,
) -> Result<String, KernelError> {
    if setting.value.parse::<i64>().is_ok() {
        return Ok(setting.value.clone());
    }
    let ours = SchedulerKind::from_name(scheduler)
        .filter(|kind| kind.name() == scheduler)
        .and_then(|kind| kind.tunables().iter().find(|t| t.name == setting.key));
    match ours {
        Some(tunable) => {
            tunable.parse(&setting.value).map(|value| value.to_string()).map_err(|error| {
                KernelError::BadSetting {
                    device: device.to_owned(),
                    setting: format!("{}={}", setting.key, setting.value),
                    why: error.to_string(),
                }
            })
        }
        None => Err(KernelError::BadSetting {
            device: device.to_owned(),
            setting: format!("{}={}", setting.key, setting.value),
            why: "expected an integer in the attribute's own unit (as `cat` shows it)".into(),
        }),
    }
}

/// The tunables `scheduler` takes on `device`: what `iosched/` lists when it is current, else
/// elevator's table of that kernel scheduler (whose names are the kernel's), so that settings
/// can be checked before switching. `None` for a scheduler that is not current and that
/// elevator has no table for.
pub fn scheduler_tunables(
    sysfs: &Sysfs,
    device: &BlockDevice,
    line: &SchedulerLine,
    scheduler: &str,
) -> Option<Vec<String>> {
    if line.current == scheduler {
        return Some(sysfs.iosched(device).into_iter().map(|(name, _)| name).collect());
    }
    kernel_scheduler(scheduler)
        .filter(|kind| kind.name() == scheduler)
        .map(|kind| kind.tunables().iter().map(|t| t.name.to_owned()).collect())
}

/// Checks every setting for `scheduler` on `device` before anything is written: each key is a
/// queue attribute the device has or a tunable of `scheduler` ([`scheduler_tunables`]), each
/// value one the attribute takes ([`sysfs_value`]). Returns the values to write, in order.
/// The tunables of a scheduler elevator cannot list pass; the kernel checks them on writing.
pub fn check_settings(
    sysfs: &Sysfs,
    device: &BlockDevice,
    line: &SchedulerLine,
    scheduler: &str,
    settings: &[Setting],
) -> Result<Vec<String>, KernelError> {
    let tunables = scheduler_tunables(sysfs, device, line, scheduler);
    let mut values = Vec::new();
    for setting in settings {
        let known = if setting.is_queue_attribute() {
            device.queue_attr(&setting.key).exists()
        } else {
            tunables.as_ref().is_none_or(|names| names.contains(&setting.key))
        };
        if !known {
            let mut accepted: Vec<String> = QUEUE_ATTRIBUTES
                .iter()
                .filter(|attr| device.queue_attr(attr).exists())
                .map(|attr| (*attr).to_owned())
                .collect();
            accepted.extend(tunables.iter().flatten().cloned());
            let elsewhere: Vec<&str> = SchedulerKind::ALL
                .iter()
                .filter(|kind| kind.block_layer() == BlockLayer::BlkMq)
                .filter(|kind| kind.tunables().iter().any(|t| t.name == setting.key))
                .map(|kind| kind.name())
                .collect();
            let hint = match elsewhere.first() {
                None => String::new(),
                Some(first) if line.current == scheduler => format!(
                    " (`{}` is a tunable of {}; switch with `elevator kernel set {} {first}` \
                     first)",
                    setting.key,
                    elsewhere.join(", "),
                    device.name,
                ),
                Some(_) => format!(" (`{}` is a tunable of {})", setting.key, elsewhere.join(", ")),
            };
            return Err(KernelError::UnknownKey {
                device: device.name.clone(),
                key: setting.key.clone(),
                scheduler: scheduler.to_owned(),
                accepted,
                hint,
            });
        }
        values.push(sysfs_value(&device.name, scheduler, setting)?);
    }
    Ok(values)
}

impl Applied {
    /// `key: asked W, the kernel keeps A` when the kernel clamped or rounded what was written
    /// (read_ahead_kb to whole pages, nr_requests to at least 4), else `None`.
    pub fn adjustment(&self) -> Option<String> {
        (self.after != self.written).then(|| {
            format!("{}: asked {}, the kernel keeps {}", self.key, self.written, self.after)
        })
    }
}

/// Checks every setting against what `device` offers now (its queue attributes and its
/// current scheduler's tunables; [`check_settings`]), then writes them in order and reads each
/// back. Nothing is written when any setting is unknown or malformed.
pub fn tune(
    sysfs: &Sysfs,
    device: &BlockDevice,
    settings: &[Setting],
) -> Result<Vec<Applied>, KernelError> {
    let line = sysfs.scheduler(device)?;
    let values = check_settings(sysfs, device, &line, &line.current, settings)?;
    let mut applied = Vec::new();
    for (setting, value) in settings.iter().zip(values) {
        let path = device.queue_attr(&setting.attr());
        let before = sysfs.read(&path)?;
        sysfs.write(&path, &value)?;
        let after = sysfs.read(&path)?;
        applied.push(Applied { key: setting.key.clone(), before, written: value, after });
    }
    Ok(applied)
}

/// `/sys/block/DEV/stat`: what the device completed, for a run's device statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Reads completed.
    pub reads: u64,
    /// Reads merged into others.
    pub read_merges: u64,
    /// Sectors read.
    pub read_sectors: u64,
    /// Milliseconds reads spent (summed over reads).
    pub read_ms: u64,
    /// Writes completed.
    pub writes: u64,
    /// Writes merged.
    pub write_merges: u64,
    /// Sectors written.
    pub write_sectors: u64,
    /// Milliseconds writes spent.
    pub write_ms: u64,
    /// Milliseconds the device had I/O in flight.
    pub io_ms: u64,
    /// Weighted milliseconds in queue.
    pub queue_ms: u64,
    /// Flushes completed (0 on kernels before 5.5).
    pub flushes: u64,
}

impl DiskStats {
    /// Reads `device`'s counters.
    pub fn read(sysfs: &Sysfs, device: &BlockDevice) -> Result<DiskStats, KernelError> {
        let path = device.dir.join("stat");
        let text = sysfs.read(&path)?;
        let fields = elevator_live::diskutil::stat_fields(&text).unwrap_or_default();
        if fields.len() < 11 {
            return Err(KernelError::Attribute {
                path,
                what: format!("expected at least 11 counters, found {}", fields.len()),
            });
        }
        Ok(DiskStats {
            reads: fields[0],
            read_merges: fields[1],
            read_sectors: fields[2],
            read_ms: fields[3],
            writes: fields[4],
            write_merges: fields[5],
            write_sectors: fields[6],
            write_ms: fields[7],
            io_ms: fields[9],
            queue_ms: fields[10],
            flushes: fields.get(15).copied().unwrap_or(0),
        })
    }

    /// The two counts added, field by field (several devices' counts as one).
    pub fn plus(&self, other: &DiskStats) -> DiskStats {
        DiskStats {
            reads: self.reads + other.reads,
            read_merges: self.read_merges + other.read_merges,
            read_sectors: self.read_sectors + other.read_sectors,
            read_ms: self.read_ms + other.read_ms,
            writes: self.writes + other.writes,
            write_merges: self.write_merges + other.write_merges,
            write_sectors: self.write_sectors + other.write_sectors,
            write_ms: self.write_ms + other.write_ms,
            io_ms: self.io_ms + other.io_ms,
            queue_ms: self.queue_ms + other.queue_ms,
            flushes: self.flushes + other.flushes,
        }
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &DiskStats) -> DiskStats {
        DiskStats {
            reads: self.reads.saturating_sub(earlier.reads),
            read_merges: self.read_merges.saturating_sub(earlier.read_merges),
            read_sectors: self.read_sectors.saturating_sub(earlier.read_sectors),
            read_ms: self.read_ms.saturating_sub(earlier.read_ms),
            writes: self.writes.saturating_sub(earlier.writes),
            write_merges: self.write_merges.saturating_sub(earlier.write_merges),
            write_sectors: self.write_sectors.saturating_sub(earlier.write_sectors),
            write_ms: self.write_ms.saturating_sub(earlier.write_ms),
            io_ms: self.io_ms.saturating_sub(earlier.io_ms),
            queue_ms: self.queue_ms.saturating_sub(earlier.queue_ms),
            flushes: self.flushes.saturating_sub(earlier.flushes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_classify() {
        let s = Setting::parse("sda", "fifo_batch=8").unwrap();
        assert_eq!((s.key.as_str(), s.value.as_str()), ("fifo_batch", "8"));
        assert_eq!(s.attr(), "iosched/fifo_batch");
        assert_eq!(Setting::parse("sda", "nr_requests=64").unwrap().attr(), "nr_requests");
        for bad in ["fifo_batch", "=3", "a=", "../x=1", "a/b=1"] {
            assert!(Setting::parse("sda", bad).is_err(), "{bad}");
        }
    }

    // Proves the driver's blk-mq names are the registry's: each blk-mq entry by its name,
    // mq-deadline also by the kernel's `deadline` alias, and no 2.6 name.
    #[test]
    fn kernel_names_come_from_the_registry() {
        let lookup = |name| kernel_scheduler(name).map(SchedulerKind::name);
        for name in ["none", "mq-deadline", "kyber", "bfq"] {
            assert_eq!(lookup(name), Some(name));
        }
        assert_eq!(lookup("deadline"), Some("mq-deadline"));
        for name in ["noop", "anticipatory", "as", "cfq", "bfq-iosched"] {
            assert_eq!(lookup(name), None, "{name}");
        }
    }

    #[test]
    fn legacy_names_point_to_their_successors() {
        assert!(legacy_hint("cfq").contains("bfq"));
        assert!(legacy_hint("noop").contains("none"));
        assert!(legacy_hint("as").contains("`bfq`"));
        assert_eq!(legacy_hint("mystery"), "");
    }
}
