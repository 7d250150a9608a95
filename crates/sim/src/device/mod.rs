//! Device models: what happens to a command once the block queue has issued it.
//!
//! A model is an event-driven state machine ([`DeviceModel`]): the engine hands it commands
//! ([`DeviceModel::submit`]), asks when it next needs attention ([`DeviceModel::next_event`]),
//! and lets it run up to that instant ([`DeviceModel::advance`]), collecting the commands that
//! finished. Everything a model does is a function of the commands it was given and the times
//! it was given them — no clock, no randomness it was not handed — so a simulation is
//! reproducible from its seed.
//!
//! Models are built from specs (`hdd:rpm=15000`, `ssd`, `sas-15k-2008`) through the registry
//! in this module: each kind has a table of keys ([`KeySpec`]) and named presets that set some
//! of them; [`DeviceSpec::parse`] checks a spec against both. `disksim:PATH.parv` starts an
//! `hdd` from a DiskSim 4.0 parameter file instead of a preset ([`disksim`]).

pub mod array;
pub mod disksim;
pub mod driver;
pub mod hdd;
pub mod ram;
pub mod ssd;
pub mod table;
pub mod validate;
pub mod zoned;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use elevator_core::{ComponentSpec, Instant, KeySpec, Op, ParamError, Params, Sector};

use crate::topology::{
    HostAdapter, Link, LinkSpec, Multipath, MultipathPolicy, PathSelector, Topology,
    TopologyDevice, device_name,
};
use driver::Driver;

/// The engine's handle for a command at a device.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct CommandId(pub u64);

/// One command as a device sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Command {
    /// Handed back when it finishes.
    pub id: CommandId,
    /// Read, write, flush (of the volatile cache) or discard.
    pub op: Op,
    /// First sector.
    pub start: Sector,
    /// Sectors (0 for a flush).
    pub sector_count: u32,
    /// Force unit access: a write that must reach the media before it finishes.
    pub fua: bool,
}

impl Command {
    /// The sector past the last one.
    pub fn end(&self) -> Sector {
        self.start.offset(self.sector_count)
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> u64 {
        u64::from(self.sector_count) * elevator_core::SECTOR_SIZE_BYTES
    }
}

/// What a device did, for reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Commands finished.
    pub commands: u64,
    /// Time with at least one command inside the device.
    pub busy_ns: u64,
    /// Head movement in sectors (mechanical devices; 0 otherwise).
    pub seek_distance_sectors: u64,
    /// Sectors read.
    pub sectors_read: u64,
    /// Sectors written.
    pub sectors_written: u64,
    /// Model-specific counters (cache hits, destages, GC copies...), in a fixed order.
    pub extra: Vec<(&'static str, u64)>,
}

/// A simulated block device.
pub trait DeviceModel: fmt::Debug + Send {
    /// One line describing the configuration, for reports.
    fn describe(&self) -> String;

    /// Size in sectors.
    fn capacity_sectors(&self) -> u64;

    /// How many commands it accepts at once (NCQ/TCQ tags; 1 without command queuing). The
    /// block queue's hardware depth.
    fn queue_depth(&self) -> u32;

    /// Whether it has moving parts (the kernel's `rotational` flag).
    fn rotational(&self) -> bool;

    /// Its hardware (submission) queues, which the blk-mq host maps cores onto
    /// (blk-mq-host.md §2.7): 1 unless the device has several (NVMe).
    fn hw_queues(&self) -> u32 {
        1
    }

    /// Accepts `command` at `now`. The engine never has more than `queue_depth` commands
    /// inside, and never calls this with a `now` earlier than a previous call or `advance`.
    fn submit(&mut self, now: Instant, command: Command);

    /// When the device next needs [`advance`](DeviceModel::advance): its next completion or
    /// internal step. `None` when it has nothing to do.
    fn next_event(&self) -> Option<Instant>;

    /// Runs the device up to `now` (no later than `next_event`), appending the commands that
    /// finished at or before `now` to `finished`, in the order they finished.
    fn advance(&mut self, now: Instant, finished: &mut Vec<CommandId>);

    /// Counters since the device was built.
    fn stats(&self) -> DeviceStats;

    /// A zoned device's zones (their layout and states); `None` for a conventional device.
    fn zones(&self) -> Option<&zoned::Zones> {
        None
    }
}

/// A named set of values for some of a kind's keys (a real drive, a class of drive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// The name users write (`sas-15k-2008`).
    pub name: &'static str,
    /// Why the values are what they are: the drive or datasheet they come from.
    pub help: &'static str,
    /// `(key, value)` pairs, as a user would write them.
    pub values: &'static [(&'static str, &'static str)],
}

/// A kind of device model.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DeviceKind {
    /// A hard disk: Ruemmler & Wilkes mechanics with a segmented cache and an SPTF queue.
    Hdd,
    /// A flash SSD: channels of dies of planes behind a host link.
    Ssd,
    /// A RAID controller over member devices.
    Array,
    /// RAID LUNs behind a shared link.
    San,
    /// Independent disks.
    Jbod,
    /// A RAM disk: fixed latency plus bandwidth.
    Ram,
    /// An iSCSI target's disks, read by a ZFS initiator (two hosts, `crate::iscsi`).
    Iscsi,
    /// A zoned device (host-managed SMR, ZNS) over an `hdd` or `ssd` preset.
    Zoned,
    /// A measured device (`elevator calibrate`): latency and IOPS tables.
    Table,
}

impl DeviceKind {
    /// Every kind, in listing order.
    pub const ALL: &'static [DeviceKind] = &[
        DeviceKind::Hdd,
        DeviceKind::Ssd,
        DeviceKind::Array,
        DeviceKind::San,
        DeviceKind::Jbod,
        DeviceKind::Ram,
        DeviceKind::Iscsi,
        DeviceKind::Zoned,
        DeviceKind::Table,
    ];

    /// The kinds `elevator sweep` draws devices and member presets from: every kind but
    /// `table`, which came after the sweep's seeds were fixed (drawing from it too would
    /// change every seed's case) and whose keys are measured tables the sweep cannot draw.
    pub const SWEPT: &'static [DeviceKind] = &[
        DeviceKind::Hdd,
        DeviceKind::Ssd,
        DeviceKind::Array,
        DeviceKind::San,
        DeviceKind::Jbod,
        DeviceKind::Ram,
        DeviceKind::Iscsi,
        DeviceKind::Zoned,
    ];

    /// The name users write.
    pub const fn name(self) -> &'static str {
        match self {
            DeviceKind::Hdd => "hdd",
            DeviceKind::Ssd => "ssd",
            DeviceKind::Array => "array",
            DeviceKind::San => "san",
            DeviceKind::Jbod => "jbod",
            DeviceKind::Ram => "ram",
            DeviceKind::Iscsi => "iscsi",
            DeviceKind::Zoned => "zoned",
            DeviceKind::Table => "table",
        }
    }

    /// One line on what it models.
    pub const fn summary(self) -> &'static str {
        match self {
            DeviceKind::Hdd => hdd::SUMMARY,
            DeviceKind::Ssd => ssd::SUMMARY,
            DeviceKind::Array => array::SUMMARY,
            DeviceKind::San => array::SAN_SUMMARY,
            DeviceKind::Jbod => array::JBOD_SUMMARY,
            DeviceKind::Ram => ram::SUMMARY,
            DeviceKind::Iscsi => crate::iscsi::SUMMARY,
            DeviceKind::Zoned => zoned::SUMMARY,
            DeviceKind::Table => table::SUMMARY,
        }
    }

    /// Its keys.
    pub const fn keys(self) -> &'static [KeySpec] {
        match self {
            DeviceKind::Hdd => hdd::KEYS,
            DeviceKind::Ssd => ssd::KEYS,
            DeviceKind::Array => array::KEYS,
            DeviceKind::San => array::SAN_KEYS,
            DeviceKind::Jbod => array::JBOD_KEYS,
            DeviceKind::Ram => ram::KEYS,
            DeviceKind::Iscsi => crate::iscsi::KEYS,
            DeviceKind::Zoned => zoned::KEYS,
            DeviceKind::Table => table::KEYS,
        }
    }

    /// Its presets; the first is what the bare kind name means.
    pub const fn presets(self) -> &'static [Preset] {
        match self {
            DeviceKind::Hdd => hdd::PRESETS,
            DeviceKind::Ssd => ssd::PRESETS,
            DeviceKind::Array => array::PRESETS,
            DeviceKind::San => array::SAN_PRESETS,
            DeviceKind::Jbod => array::JBOD_PRESETS,
            DeviceKind::Ram => ram::PRESETS,
            DeviceKind::Iscsi => crate::iscsi::PRESETS,
            DeviceKind::Zoned => zoned::PRESETS,
            DeviceKind::Table => table::PRESETS,
        }
    }

    fn build(self, params: &Params) -> Result<Box<dyn DeviceModel>, ParamError> {
        Ok(match self {
            DeviceKind::Hdd => Box::new(hdd::Hdd::from_params(params)?),
            DeviceKind::Ssd => Box::new(ssd::Ssd::from_params(params)?),
            // A `san` built as one device is one of its LUNs.
            DeviceKind::Array | DeviceKind::San => Box::new(array::Array::from_params(params)?),
            // A `jbod` built as one device is one of its disks.
            DeviceKind::Jbod => array::jbod_disk(params)?.build()?,
            DeviceKind::Ram => Box::new(ram::Ram::from_params(params)?),
            // An `iscsi` built as one device is one of the target's disks.
            DeviceKind::Iscsi => array::member_spec(params)?.build()?,
            DeviceKind::Zoned => Box::new(zoned::Zoned::from_params(params)?),
            DeviceKind::Table => Box::new(table::Table::from_params(params)?),
        })
    }
}

/// A device as written on the command line, checked: a kind, what it starts from (a preset
/// or a DiskSim parameter file), and the resolved values of every key.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSpec {
    kind: DeviceKind,
    origin: Origin,
    params: Params,
}

/// What a device spec's values start from.
#[derive(Clone, Debug, PartialEq)]
enum Origin {
    /// A named preset (the first of its kind for a bare kind name).
    Preset(&'static Preset),
    /// A DiskSim file (`disksim:PATH`), as written, and what it maps to.
    DiskSim { path: String, mapped: Arc<disksim::Mapped> },
    /// A device preset file (`./mydisk.toml`, [`table::load_file`]), as written.
    File { path: String },
}

/// The prefix naming a DiskSim parameter file as a device.
pub const DISKSIM_PREFIX: &str = "disksim:";

impl DeviceSpec {
    /// Parses `kind[:key=value,...]`, `preset[:key=value,...]` or
    /// `disksim:PATH[:key=value,...]` (an `hdd` with a DiskSim 4.0 file's values, see
    /// [`disksim`]; the keys after the path override the file's; the path holds no `:`), or
    /// a device preset file: a path ending in `.toml` or holding a `/` ([`table::load_file`]).
    pub fn parse(text: &str) -> Result<DeviceSpec, ParamError> {
        if let Some(rest) = text.trim().strip_prefix(DISKSIM_PREFIX) {
            return DeviceSpec::parse_disksim(rest);
        }
        if table::is_file_spec(text) {
            return DeviceSpec::parse_file(text.trim());
        }
        let spec = ComponentSpec::parse("device", text)?;
        let found = DeviceKind::ALL.iter().find_map(|&kind| {
            if kind.name() == spec.name {
                return Some((kind, &kind.presets()[0]));
            }
            kind.presets().iter().find(|preset| preset.name == spec.name).map(|p| (kind, p))
        });
        let Some((kind, preset)) = found else {
            return Err(ParamError::UnknownName {
                kind: "device",
                name: spec.name,
                accepted: accepted_names(),
            });
        };
        let params = Params::resolve(&spec, kind.keys(), preset.values)?;
        let device = DeviceSpec { kind, origin: Origin::Preset(preset), params };
        // Building checks the values that are impossible together.
        device.topology()?;
        Ok(device)
    }

    /// A device preset file; errors name the file and the line of the key at fault.
    fn parse_file(path: &str) -> Result<DeviceSpec, ParamError> {
        let loaded = table::load_file(Path::new(path))?;
        let at_line = |error: ParamError| {
            let key = match &error {
                ParamError::UnknownKey { key, .. } => key.clone(),
                ParamError::BadValue { key, .. } | ParamError::Impossible { key, .. } => {
                    (*key).to_owned()
                }
                _ => return error,
            };
            let Some(line) = loaded.lines.get(&key) else { return error };
            let component = format!("{path} line {line}");
            match error {
                ParamError::UnknownKey { key, accepted, .. } => {
                    ParamError::UnknownKey { component, key, accepted }
                }
                ParamError::BadValue { key, value, expected, .. } => {
                    ParamError::BadValue { component, key, value, expected }
                }
                ParamError::Impossible { key, problem, .. } => {
                    ParamError::Impossible { component, key, problem }
                }
                other => other,
            }
        };
        let kind = loaded.kind;
        let params = Params::resolve(&loaded.spec, kind.keys(), kind.presets()[0].values)
            .map_err(at_line)?;
        let device = DeviceSpec { kind, origin: Origin::File { path: path.to_owned() }, params };
        device.topology().map_err(at_line)?;
        Ok(device)
    }

    /// `PATH[:key=value,...]` after `disksim:`.
    fn parse_disksim(rest: &str) -> Result<DeviceSpec, ParamError> {
        let (path, overrides) = match rest.split_once(':') {
            Some((path, overrides)) => (path.trim(), Some(overrides)),
            None => (rest.trim(), None),
        };
        let component = format!("{DISKSIM_PREFIX}{path}");
        if path.is_empty() {
            return Err(ParamError::Impossible {
                component,
                key: "file",
                problem: "name a DiskSim .parv or .diskspecs file after `disksim:`".into(),
            });
        }
        let mapped = disksim::load(Path::new(path)).map_err(|error| ParamError::Impossible {
            component: component.clone(),
            key: "file",
            problem: error.to_string(),
        })?;
        let kind = DeviceKind::Hdd;
        // A key the `hdd` model does not have would be dropped silently by `Params::resolve`
        // (it reads presets by key): refuse it here instead.
        if let Some((key, _)) =
            mapped.values.iter().find(|(key, _)| kind.keys().iter().all(|spec| spec.key != *key))
        {
            return Err(ParamError::UnknownKey {
                component,
                key: (*key).to_owned(),
                accepted: kind.keys().iter().map(|spec| spec.key).collect(),
            });
        }
        let mut spec = ComponentSpec::parse(
            "device",
            &match overrides {
                Some(overrides) => format!("{}:{overrides}", kind.name()),
                None => kind.name().to_owned(),
            },
        )?;
        spec.name = component;
        let values: Vec<(&str, &str)> =
            mapped.values.iter().map(|(key, value)| (*key, value.as_str())).collect();
        let params = Params::resolve(&spec, kind.keys(), &values)?;
        let device = DeviceSpec {
            kind,
            origin: Origin::DiskSim { path: path.to_owned(), mapped: Arc::new(mapped) },
            params,
        };
        device.topology()?;
        Ok(device)
    }

    /// The kind.
    pub fn kind(&self) -> DeviceKind {
        self.kind
    }

    /// The preset it started from (`None` for a DiskSim or preset file).
    pub fn preset(&self) -> Option<&'static Preset> {
        match &self.origin {
            Origin::Preset(preset) => Some(preset),
            Origin::DiskSim { .. } | Origin::File { .. } => None,
        }
    }

    /// What a DiskSim file mapped to (`None` for a preset).
    pub fn disksim(&self) -> Option<&disksim::Mapped> {
        match &self.origin {
            Origin::Preset(_) | Origin::File { .. } => None,
            Origin::DiskSim { mapped, .. } => Some(mapped),
        }
    }

    /// The one line to print on stderr about what the spec's file could not honour.
    pub fn warning_line(&self) -> Option<String> {
        self.disksim().and_then(disksim::Mapped::warning_line)
    }

    /// Every key with its value in force.
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        self.params.resolved()
    }

    /// The checked values, typed (for tools and tests that derive figures from them).
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// A new model instance.
    pub fn build(&self) -> Result<Box<dyn DeviceModel>, ParamError> {
        self.kind.build(&self.params)
    }

    /// The driver its devices sit behind (the `driver` key).
    pub fn driver(&self) -> Driver {
        Driver::parse(self.params.text("driver")).expect("the key's choices are the drivers")
    }

    /// The devices (and links) this spec stands for: one device for most kinds; `san`'s LUNs
    /// behind their shared link, each reached through dm-multipath over the link's paths
    /// unless `multipath=none`.
    pub fn topology(&self) -> Result<Topology, ParamError> {
        let (count, link) = match self.kind {
            DeviceKind::San => {
                let text = self.params.text("link");
                let link = if text == "none" {
                    None
                } else {
                    Some(LinkSpec::parse(text, self.params.component(), "link")?)
                };
                (self.params.integer("luns") as usize, link)
            }
            DeviceKind::Jbod => (self.params.integer("disks") as usize, None),
            DeviceKind::Iscsi => (crate::iscsi::IscsiSpec::from_params(&self.params)?.luns(), None),
            _ => (1, None),
        };
        let policy = match (self.kind, link) {
            (DeviceKind::San, Some(_)) => MultipathPolicy::parse(self.params.text("multipath")),
            _ => None,
        };
        let driver = self.driver();
        let (adapters, adapter_of) = HostAdapter::for_driver(driver, count);
        // A jbod's disks may each be a different model.
        let jbod_disks = match self.kind {
            DeviceKind::Jbod => Some(array::jbod_disks(&self.params, count)?),
            _ => None,
        };
        let devices = (0..count)
            .map(|index| {
                let model = match &jbod_disks {
                    Some(disks) => disks[index].build()?,
                    None => self.build()?,
                };
                let multipath = match (policy, link) {
                    (Some(policy), Some(link)) => {
                        let paths = link.paths as usize;
                        let path_depth = self
                            .params
                            .has("path_depth")
                            .then(|| self.params.integer("path_depth") as u32);
                        // Every path's queue may fill at once; the controller must take them.
                        if let Some(path_depth) = path_depth
                            && paths as u64 * u64::from(path_depth) > u64::from(model.queue_depth())
                        {
                            return Err(ParamError::Impossible {
                                component: self.params.component().to_owned(),
                                key: "path_depth",
                                problem: format!(
                                    "{paths} paths of {path_depth} commands exceed the \
                                     controller's depth of {}",
                                    model.queue_depth()
                                ),
                            });
                        }
                        let rr_min_io = self.params.integer("rr_min_io") as u32;
                        let selector =
                            PathSelector::new(policy.active_group(index, paths), rr_min_io);
                        Some(Multipath { policy, paths, path_depth, selector })
                    }
                    _ => None,
                };
                Ok(TopologyDevice {
                    name: device_name(index),
                    model,
                    link: link.map(|_| 0),
                    multipath,
                    driver,
                    adapter: adapter_of[index],
                })
            })
            .collect::<Result<_, ParamError>>()?;
        let initiator = match self.kind {
            DeviceKind::Iscsi => Some(crate::iscsi::IscsiSpec::from_params(&self.params)?),
            _ => None,
        };
        Ok(Topology {
            devices,
            links: link.map(Link::new).into_iter().collect(),
            adapters,
            initiator,
        })
    }
}

impl fmt::Display for DeviceSpec {
    /// `preset` (or `disksim:PATH`) plus the keys the user changed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Origin::Preset(preset) => f.write_str(preset.name)?,
            Origin::DiskSim { path, .. } => write!(f, "{DISKSIM_PREFIX}{path}")?,
            // The file holds its keys: they are not repeated.
            Origin::File { path } => return f.write_str(path),
        }
        let mut separator = ':';
        for (key, value) in self.params.resolved() {
            if self.params.is_set(key) {
                write!(f, "{separator}{key}={value}")?;
                separator = ',';
            }
        }
        Ok(())
    }
}

/// Every kind and preset name.
pub fn accepted_names() -> Vec<&'static str> {
    DeviceKind::ALL
        .iter()
        .flat_map(|kind| {
            std::iter::once(kind.name()).chain(kind.presets().iter().map(|preset| preset.name))
        })
        .filter({
            let mut seen = Vec::new();
            move |name| {
                let fresh = !seen.contains(name);
                seen.push(*name);
                fresh
            }
        })
        .collect()
}

/// Drives one device model alone, without a block queue: for calibration tests and tools.
#[derive(Debug)]
pub struct Probe {
    device: Box<dyn DeviceModel>,
    now: Instant,
    next_id: u64,
    finished: Vec<CommandId>,
}

/// A command the probe ran: when it went in and when it came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timed {
    /// The command.
    pub command: Command,
    /// When it was submitted.
    pub submitted: Instant,
    /// When it finished.
    pub finished: Instant,
}

/// The most events a probe run may take.
const PROBE_EVENT_LIMIT: u64 = 100_000_000;

impl Probe {
    /// A probe around `device`, at time zero.
    pub fn new(device: Box<dyn DeviceModel>) -> Probe {
        Probe { device, now: Instant::ZERO, next_id: 0, finished: Vec::new() }
    }

    /// The device.
    pub fn device(&self) -> &dyn DeviceModel {
        self.device.as_ref()
    }

    /// The probe's clock.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Runs `commands` (ids are assigned here) keeping up to `depth` inside the device: a
    /// closed loop, each finished command replaced by the next at once. Returns every command
    /// with its times, in submission order.
    pub fn closed_loop(
        &mut self,
        commands: impl IntoIterator<Item = (Op, Sector, u32)>,
        depth: u32,
    ) -> Vec<Timed> {
        assert!(depth >= 1 && depth <= self.device.queue_depth(), "depth {depth} out of range");
        let mut pending = commands.into_iter();
        let mut inside: Vec<Timed> = Vec::new();
        let mut done: Vec<Timed> = Vec::new();
        let mut events = 0u64;
        loop {
            while inside.len() < depth as usize {
                let Some((op, start, sector_count)) = pending.next() else { break };
                let command =
                    Command { id: CommandId(self.next_id), op, start, sector_count, fua: false };
                self.next_id += 1;
                self.device.submit(self.now, command);
                inside.push(Timed { command, submitted: self.now, finished: Instant::MAX });
            }
            if inside.is_empty() {
                break;
            }
            let Some(at) = self.device.next_event() else {
                panic!(
                    "{} holds {} commands but has no next event",
                    self.device.describe(),
                    inside.len()
                )
            };
            assert!(at >= self.now, "device event in the past");
            self.now = at;
            self.finished.clear();
            self.device.advance(at, &mut self.finished);
            for id in self.finished.drain(..) {
                let index = inside
                    .iter()
                    .position(|timed| timed.command.id == id)
                    .unwrap_or_else(|| panic!("device finished unknown or repeated {id:?}"));
                let mut timed = inside.swap_remove(index);
                timed.finished = at;
                done.push(timed);
            }
            events += 1;
            assert!(events < PROBE_EVENT_LIMIT, "probe ran {PROBE_EVENT_LIMIT} events");
        }
        done.sort_by_key(|timed| timed.command.id);
        done
    }

    /// Lets the device finish any internal work (write-back, destaging) and returns when it
    /// became idle.
    pub fn settle(&mut self) -> Instant {
        let mut events = 0u64;
        while let Some(at) = self.device.next_event() {
            self.now = self.now.max(at);
            self.device.advance(self.now, &mut self.finished);
            events += 1;
            assert!(events < PROBE_EVENT_LIMIT, "device never settles");
        }
        self.now
    }
}

/// Throughput of a probe run in bytes per second: all bytes over the span from the first
/// submission to the last completion.
pub fn throughput_bytes_per_s(run: &[Timed]) -> f64 {
    let bytes: u64 = run.iter().map(|timed| timed.command.size_bytes()).sum();
    let start = run.iter().map(|timed| timed.submitted).min().unwrap_or(Instant::ZERO);
    let end = run.iter().map(|timed| timed.finished).max().unwrap_or(Instant::ZERO);
    bytes as f64 / (end - start).as_secs_f64()
}

/// Operations per second of a probe run.
pub fn iops(run: &[Timed]) -> f64 {
    let start = run.iter().map(|timed| timed.submitted).min().unwrap_or(Instant::ZERO);
    let end = run.iter().map(|timed| timed.finished).max().unwrap_or(Instant::ZERO);
    run.len() as f64 / (end - start).as_secs_f64()
}
