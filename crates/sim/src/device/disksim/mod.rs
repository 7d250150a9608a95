//! DiskSim 4.0's parameter files as `hdd` keys: `-d disksim:PATH.parv[:key=value,...]`.
//!
//! [`load`] reads a `.parv` (the whole simulated system) or a `.diskspecs` (one disk), finds
//! the disk, its `dm_disk` model and its seek curve, and maps every DiskSim parameter of the
//! disk to our `hdd` keys by [`RULES`]: a parameter is honoured through a key (`Key`),
//! honoured by construction when its value is the one our model always has (`Fixed`; any
//! other value is reported as not modelled), ignored with a reason given in the warning line
//! (`Ignored`), or without effect on these drives' timing (`Unused`: statistics output, or
//! gated off by another parameter). A parameter of a disk, model, layout, zone, mechanics or
//! disk-queue block that DiskSim 4.0 does not define is refused, as DiskSim refuses it.
//! `docs/disksim-parameters.md` is the table in prose.
//!
//! Which disk: a `.parv` may instantiate several; the first `disksim_disk` met walking the
//! `topology` depth-first is taken and the others are named in the warning line. A
//! `.diskspecs` with no topology: its first `disksim_disk` block.
//!
//! Deviations from DiskSim:
//! * `Seek type` `constant` and `linear` and the `Access time type`s other than
//!   `trackSwitchPlusRotation` are refused: the `hdd` model has no equivalent.
//! * Only `dm_layout_g1` layouts and `dm_mech_g1` mechanics are read (all four validated
//!   drives use them); `dm_layout_g2`/`g4` are refused by name.

pub mod drive;
pub mod grammar;

use std::path::{Path, PathBuf};

use grammar::{Block, DiskSimError, Document, Location, TopologyNode};

pub use drive::{Drive, FLAGS, OVERHEADS, QUEUE_POLICIES, SPARING, Seek, Zone};

pub use grammar::{SeekCurve, parse_file, parse_seek_file};

/// Where a DiskSim parameter lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `disksim_disk`: controller, cache, overheads.
    Disk,
    /// The disk's `Scheduler = disksim_ioqueue { ... }`.
    Queue,
    /// `dm_disk`: geometry.
    Model,
    /// `dm_layout_g1`.
    Layout,
    /// `dm_layout_g1_zone`.
    Zone,
    /// `dm_mech_g1`.
    Mech,
    /// A `disksim_bus` between the host and the disk.
    Bus,
    /// A `disksim_ctlr` between the host and the disk.
    Ctlr,
    /// The `disksim_iodriver` at the root of the disk's topology.
    Driver,
}

impl Scope {
    /// The block type it names.
    pub const fn block_type(self) -> &'static str {
        match self {
            Scope::Disk => "disksim_disk",
            Scope::Queue => "disksim_ioqueue",
            Scope::Model => "dm_disk",
            Scope::Layout => "dm_layout_g1",
            Scope::Zone => "dm_layout_g1_zone",
            Scope::Mech => "dm_mech_g1",
            Scope::Bus => "disksim_bus",
            Scope::Ctlr => "disksim_ctlr",
            Scope::Driver => "disksim_iodriver",
        }
    }
}

/// What becomes of a DiskSim parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Treatment {
    /// Honoured through these `hdd` keys (the conversion is said in the doc).
    Key(&'static str),
    /// Honoured by construction when the file's value is this number: it is what our model
    /// always does (the reason). Any other value is reported as not modelled.
    Fixed(f64, &'static str),
    /// As `Fixed`, for a name-valued parameter.
    FixedWord(&'static str, &'static str),
    /// Not modelled, whatever its value: reported in the warning line with the reason.
    Ignored(&'static str),
    /// No effect on the simulated timing (statistics, or gated off by another parameter
    /// that is `Fixed`): never reported.
    Unused(&'static str),
}

/// One DiskSim parameter and what becomes of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    /// Its block.
    pub scope: Scope,
    /// Its name, as DiskSim spells it.
    pub name: &'static str,
    /// What we do with it.
    pub treatment: Treatment,
}

const fn rule(scope: Scope, name: &'static str, treatment: Treatment) -> Rule {
    Rule { scope, name, treatment }
}

const NO_DISCONNECT: &str = "no SCSI disconnect/reselect phases are modelled";
const NO_SNEAKY: &str = "our cache serves a hit only from data fully in a segment";
const STATS: &str = "statistics output only";
const SMART_CTLR: &str = "only the intelligent controller (type 3) uses it; `type` reports another";

/// Every DiskSim 4.0 parameter of a disk (`src/modules/disk.modspec`,
/// `diskmodel/modules/{disk,layout_g1,layout_g1_zone,mech_g1}.modspec`, the disk's ioqueue
/// from `src/modules/ioqueue.modspec`) and those of the buses, controller and driver above it
/// that bear on the disk's timing, with their treatment.
pub const RULES: &[Rule] = &[
    // disksim_disk
    rule(Scope::Disk, "Model", Treatment::Key("(the dm_disk block below)")),
    rule(Scope::Disk, "Scheduler", Treatment::Key("(the ioqueue block below)")),
    rule(Scope::Disk, "Max queue length", Treatment::Key("depth")),
    rule(
        Scope::Disk,
        "Bulk sector transfer time",
        Treatment::Key("bulk_sector_time (the largest per-block time along the path)"),
    ),
    rule(Scope::Disk, "Segment size (in blks)", Treatment::Key("segment_size")),
    rule(Scope::Disk, "Number of buffer segments", Treatment::Key("segments")),
    rule(Scope::Disk, "Print stats", Treatment::Unused(STATS)),
    rule(
        Scope::Disk,
        "Per-request overhead time",
        Treatment::Fixed(0.0, "the eight per-command overheads carry all controller time"),
    ),
    rule(
        Scope::Disk,
        "Time scale for overheads",
        Treatment::Fixed(1.0, "overheads are taken as written"),
    ),
    rule(
        Scope::Disk,
        "Hold bus entire read xfer",
        Treatment::Fixed(0.0, "the interface is held only while data moves"),
    ),
    rule(
        Scope::Disk,
        "Hold bus entire write xfer",
        Treatment::Fixed(0.0, "the interface is held only while data moves"),
    ),
    rule(Scope::Disk, "Allow almost read hits", Treatment::Fixed(0.0, NO_SNEAKY)),
    rule(Scope::Disk, "Allow sneaky full read hits", Treatment::Fixed(0.0, NO_SNEAKY)),
    rule(Scope::Disk, "Allow sneaky partial read hits", Treatment::Fixed(0.0, NO_SNEAKY)),
    rule(Scope::Disk, "Allow sneaky intermediate read hits", Treatment::Fixed(0.0, NO_SNEAKY)),
    rule(Scope::Disk, "Allow read hits on write data", Treatment::Key("read_hits_on_writes")),
    rule(
        Scope::Disk,
        "Allow write prebuffering",
        Treatment::Fixed(0.0, "a write's data comes in before its media access starts"),
    ),
    rule(Scope::Disk, "Preseeking level", Treatment::Fixed(0.0, "no seek before the data arrives")),
    rule(
        Scope::Disk,
        "Never disconnect",
        Treatment::Unused(
            "disconnecting frees the bus for other devices; the disk has its bus alone and \
             the reselect overheads are fixed at 0",
        ),
    ),
    rule(
        Scope::Disk,
        "Avg sectors per cylinder",
        Treatment::Unused("a hint for DiskSim's cylinder-mapping queues; our layout is exact"),
    ),
    rule(Scope::Disk, "Maximum number of write segments", Treatment::Key("write_segments")),
    rule(Scope::Disk, "Use separate write segment", Treatment::Key("write_segment_separate")),
    rule(
        Scope::Disk,
        "Low (write) water mark",
        Treatment::Fixed(0.0, "no bus reconnection water marks: data moves as soon as it can"),
    ),
    rule(
        Scope::Disk,
        "High (read) water mark",
        Treatment::Fixed(0.0, "no bus reconnection water marks: data moves as soon as it can"),
    ),
    rule(
        Scope::Disk,
        "Set watermark by reqsize",
        Treatment::Unused("only scales the water marks (reported when they are not 0)"),
    ),
    rule(
        Scope::Disk,
        "Calc sector by sector",
        Treatment::Fixed(1.0, "media transfer is computed sector by sector"),
    ),
    rule(Scope::Disk, "Enable caching in buffer", Treatment::Key("buffer_cache")),
    rule(Scope::Disk, "Buffer continuous read", Treatment::Key("read_ahead, read_ahead_to")),
    rule(Scope::Disk, "Minimum read-ahead (blks)", Treatment::Key("read_ahead_min")),
    rule(Scope::Disk, "Maximum read-ahead (blks)", Treatment::Key("read_ahead_max")),
    rule(Scope::Disk, "Read-ahead over requested", Treatment::Key("read_ahead_over_requested")),
    rule(Scope::Disk, "Read-ahead on idle hit", Treatment::Key("read_ahead_on_idle_hit")),
    rule(Scope::Disk, "Read any free blocks", Treatment::Key("read_any_free")),
    rule(Scope::Disk, "Fast write level", Treatment::Key("write_cache, write_back")),
    rule(Scope::Disk, "Combine seq writes", Treatment::Key("combine_writes")),
    rule(
        Scope::Disk,
        "Stop prefetch in sector",
        Treatment::Fixed(0.0, "read-ahead stops at a sector boundary"),
    ),
    rule(Scope::Disk, "Disconnect write if seek", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Write hit stop prefetch", Treatment::Key("write_hit_stop_read_ahead")),
    rule(
        Scope::Disk,
        "Read directly to buffer",
        Treatment::Fixed(1.0, "media reads always land in a buffer segment"),
    ),
    rule(
        Scope::Disk,
        "Immed transfer partial hit",
        Treatment::Unused(
            "with a high water mark of 0 any cached prefix already goes out at once, as with 1 \
             (a water mark above 0 is reported)",
        ),
    ),
    rule(Scope::Disk, "Read hit over. after read", Treatment::Key("overhead_read_hit_after_read")),
    rule(
        Scope::Disk,
        "Read hit over. after write",
        Treatment::Key("overhead_read_hit_after_write"),
    ),
    rule(
        Scope::Disk,
        "Read miss over. after read",
        Treatment::Key("overhead_read_miss_after_read"),
    ),
    rule(
        Scope::Disk,
        "Read miss over. after write",
        Treatment::Key("overhead_read_miss_after_write"),
    ),
    rule(
        Scope::Disk,
        "Write hit over. after read",
        Treatment::Key("overhead_write_hit_after_read"),
    ),
    rule(
        Scope::Disk,
        "Write hit over. after write",
        Treatment::Key("overhead_write_hit_after_write"),
    ),
    rule(
        Scope::Disk,
        "Write miss over. after read",
        Treatment::Key("overhead_write_miss_after_read"),
    ),
    rule(
        Scope::Disk,
        "Write miss over. after write",
        Treatment::Key("overhead_write_miss_after_write"),
    ),
    rule(Scope::Disk, "Read completion overhead", Treatment::Key("overhead_read_complete")),
    rule(Scope::Disk, "Write completion overhead", Treatment::Key("overhead_write_complete")),
    rule(Scope::Disk, "Data preparation overhead", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "First reselect overhead", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Other reselect overhead", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Read disconnect afterread", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Read disconnect afterwrite", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Write disconnect overhead", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Extra write disconnect", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Extradisc command overhead", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Extradisc disconnect overhead", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Extradisc inter-disconnect delay", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Extradisc 2nd disconnect overhead", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(Scope::Disk, "Extradisc seek delta", Treatment::Fixed(0.0, NO_DISCONNECT)),
    rule(
        Scope::Disk,
        "Minimum seek delay",
        Treatment::Fixed(0.0, "a seek starts as soon as the command is decoded"),
    ),
    rule(
        Scope::Disk,
        "Immediate buffer read",
        Treatment::Fixed(
            0.0,
            "zero-latency (read-on-arrival) media access is not modelled: a transfer starts at \
             its first sector",
        ),
    ),
    rule(
        Scope::Disk,
        "Immediate buffer write",
        Treatment::Fixed(
            0.0,
            "zero-latency (write-on-arrival) media access is not modelled: a transfer starts at \
             its first sector",
        ),
    ),
    // The disk's disksim_ioqueue
    rule(Scope::Queue, "Scheduling policy", Treatment::Key("queue_policy")),
    rule(
        Scope::Queue,
        "Cylinder mapping strategy",
        Treatment::Unused(
            "only DiskSim's cylinder-based policies use it; ours are LBN- or position-based",
        ),
    ),
    rule(Scope::Queue, "Write initiation delay", Treatment::Fixed(0.0, "no delay before issue")),
    rule(Scope::Queue, "Read initiation delay", Treatment::Fixed(0.0, "no delay before issue")),
    rule(
        Scope::Queue,
        "Sequential stream scheme",
        Treatment::Fixed(0.0, "the drive's queue does not merge or stream-order commands"),
    ),
    rule(
        Scope::Queue,
        "Maximum concat size",
        Treatment::Unused("only used by a sequential stream scheme (reported when it is not 0)"),
    ),
    rule(
        Scope::Queue,
        "Overlapping request scheme",
        Treatment::Fixed(0.0, "overlapping commands are served as separate commands"),
    ),
    rule(
        Scope::Queue,
        "Sequential stream diff maximum",
        Treatment::Unused("only used by a sequential stream scheme (reported when it is not 0)"),
    ),
    rule(
        Scope::Queue,
        "Scheduling timeout scheme",
        Treatment::Fixed(0.0, "no aging of queued commands"),
    ),
    rule(
        Scope::Queue,
        "Timeout time/weight",
        Treatment::Unused("only used by a timeout scheme (reported when it is not 0)"),
    ),
    rule(
        Scope::Queue,
        "Timeout scheduling",
        Treatment::Unused("only used by a timeout scheme (reported when it is not 0)"),
    ),
    rule(
        Scope::Queue,
        "Scheduling priority scheme",
        Treatment::Fixed(0.0, "no priority classes in the drive's queue"),
    ),
    rule(
        Scope::Queue,
        "Priority scheduling",
        Treatment::Unused("only used by a priority scheme (reported when it is not 0)"),
    ),
    // dm_disk
    rule(Scope::Model, "Block count", Treatment::Key("block_count")),
    rule(Scope::Model, "Number of data surfaces", Treatment::Key("surfaces")),
    rule(Scope::Model, "Number of cylinders", Treatment::Key("cylinders")),
    rule(Scope::Model, "Mechanical Model", Treatment::Key("(the dm_mech_g1 block below)")),
    rule(Scope::Model, "Layout Model", Treatment::Key("(the dm_layout_g1 block below)")),
    // dm_layout_g1
    rule(Scope::Layout, "LBN-to-PBN mapping scheme", Treatment::Key("mapping")),
    rule(Scope::Layout, "Sparing scheme used", Treatment::Key("sparing")),
    rule(Scope::Layout, "Rangesize for sparing", Treatment::Key("sparing_range")),
    rule(
        Scope::Layout,
        "Skew units",
        Treatment::Ignored("skews are read as sectors, DiskSim's default unit"),
    ),
    rule(Scope::Layout, "Zones", Treatment::Key("zones")),
    // dm_layout_g1_zone
    rule(Scope::Zone, "First cylinder number", Treatment::Key("zones")),
    rule(Scope::Zone, "Last cylinder number", Treatment::Key("zones")),
    rule(Scope::Zone, "Blocks per track", Treatment::Key("zones")),
    rule(Scope::Zone, "Offset of first block", Treatment::Key("zone_offsets")),
    rule(
        Scope::Zone,
        "Skew units",
        Treatment::Ignored("skews are read as sectors, DiskSim's default unit"),
    ),
    rule(Scope::Zone, "Empty space at zone front", Treatment::Key("zone_offsets")),
    rule(Scope::Zone, "Skew for track switch", Treatment::Key("zone_skews")),
    rule(Scope::Zone, "Skew for cylinder switch", Treatment::Key("zone_skews")),
    rule(Scope::Zone, "Number of spares", Treatment::Key("zone_spares")),
    rule(Scope::Zone, "slips", Treatment::Key("slips")),
    rule(Scope::Zone, "defects", Treatment::Key("defects")),
    // dm_mech_g1
    rule(
        Scope::Mech,
        "Access time type",
        Treatment::FixedWord(
            "trackSwitchPlusRotation",
            "an access is the seek or head switch, then the rotation to the sector",
        ),
    ),
    rule(
        Scope::Mech,
        "Constant access time",
        Treatment::Unused("only used by the `constant` access time type, which is refused"),
    ),
    rule(Scope::Mech, "Seek type", Treatment::Key("seek")),
    rule(Scope::Mech, "Average seek time", Treatment::Key("seek_avg (seek type curve only)")),
    rule(
        Scope::Mech,
        "Constant seek time",
        Treatment::Unused("only used by the `constant` seek type, which is refused"),
    ),
    rule(Scope::Mech, "Single cylinder seek time", Treatment::Key("seek_single (curve only)")),
    rule(Scope::Mech, "Full strobe seek time", Treatment::Key("seek_full (curve only)")),
    rule(Scope::Mech, "Full seek curve", Treatment::Key("seek_table")),
    rule(Scope::Mech, "Add. write settling delay", Treatment::Key("write_settle")),
    rule(Scope::Mech, "Head switch time", Treatment::Key("head_switch")),
    rule(Scope::Mech, "Rotation speed (in rpms)", Treatment::Key("rpm")),
    rule(
        Scope::Mech,
        "Percent error in rpms",
        Treatment::Fixed(0.0, "the spindle turns at exactly `rpm`"),
    ),
    rule(Scope::Mech, "First ten seek times", Treatment::Key("seek_first_ten")),
    rule(Scope::Mech, "HPL seek equation values", Treatment::Key("hpl")),
    // Above the disk: what delays its commands on the way.
    rule(
        Scope::Bus,
        "type",
        Treatment::Fixed(1.0, "an exclusively-owned bus: the disk's transfers are not shared"),
    ),
    rule(
        Scope::Bus,
        "Arbitration type",
        Treatment::Unused("the disk is alone on its bus: no one to arbitrate against"),
    ),
    rule(Scope::Bus, "Print stats", Treatment::Unused(STATS)),
    rule(
        Scope::Bus,
        "Arbitration time",
        Treatment::Fixed(0.0, "no bus arbitration delay is modelled"),
    ),
    rule(
        Scope::Bus,
        "Read block transfer time",
        Treatment::Key("bulk_sector_time (the largest per-block time along the path)"),
    ),
    rule(
        Scope::Bus,
        "Write block transfer time",
        Treatment::Key("bulk_sector_time (warned when it differs from the read direction's)"),
    ),
    rule(
        Scope::Ctlr,
        "type",
        Treatment::Fixed(1.0, "a pass-through controller: commands reach the disk unchanged"),
    ),
    rule(Scope::Ctlr, "Scale for delays", Treatment::Fixed(0.0, "no controller delay")),
    rule(
        Scope::Ctlr,
        "Bulk sector transfer time",
        Treatment::Key("bulk_sector_time (the largest per-block time along the path)"),
    ),
    rule(
        Scope::Ctlr,
        "Maximum queue length",
        Treatment::Unused("a pass-through controller (type 1) holds no queue of its own"),
    ),
    rule(Scope::Ctlr, "Print stats", Treatment::Unused(STATS)),
    rule(Scope::Ctlr, "Scheduler", Treatment::Unused(SMART_CTLR)),
    rule(Scope::Ctlr, "Cache", Treatment::Unused(SMART_CTLR)),
    rule(Scope::Ctlr, "Max per-disk pending count", Treatment::Unused(SMART_CTLR)),
    rule(
        Scope::Driver,
        "type",
        Treatment::Unused("kept by DiskSim for extensibility; it has one driver type"),
    ),
    rule(
        Scope::Driver,
        "Use queueing in subsystem",
        Treatment::Fixed(1.0, "the block layer keeps up to the device's depth outstanding"),
    ),
    rule(
        Scope::Driver,
        "Scheduler",
        Treatment::Unused("the host's I/O scheduler is the one under study, chosen with -s"),
    ),
    rule(Scope::Driver, "Print stats", Treatment::Unused(STATS)),
    rule(
        Scope::Driver,
        "Constant access time",
        Treatment::Fixed(0.0, "0: the driver uses the device's model, as we do"),
    ),
];

/// A DiskSim disk as `hdd` key values, with what was not honoured.
#[derive(Clone, Debug, PartialEq)]
pub struct Mapped {
    /// The file read.
    pub file: PathBuf,
    /// The disk taken: the instance name (or the block's name for a `.diskspecs`).
    pub disk: String,
    /// Its parameters, typed.
    pub drive: Drive,
    /// `(key, value)` in the order of the contract's keys.
    pub values: Vec<(&'static str, String)>,
    /// `NAME (why)` for every parameter not honoured, in file order.
    pub warnings: Vec<String>,
}

impl Mapped {
    /// The one stderr line (`warning: FILE: not modelled: NAME (why); ...`), if any.
    pub fn warning_line(&self) -> Option<String> {
        (!self.warnings.is_empty()).then(|| {
            format!("warning: {}: not modelled: {}", self.file.display(), self.warnings.join("; "))
        })
    }

    /// The value of `key`, if mapped.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.values.iter().find(|(name, _)| *name == key).map(|(_, value)| value.as_str())
    }
}

/// Reads `path` (a `.parv` or `.diskspecs`) and maps its disk to `hdd` keys.
pub fn load(path: &Path) -> Result<Mapped, DiskSimError> {
    let document = parse_file(path)?;
    map_document(path, &document)
}

/// Finds the disk of a parsed file and maps it.
pub fn map_document(path: &Path, document: &Document) -> Result<Mapped, DiskSimError> {
    let mut warnings = Vec::new();
    let file_error = |problem: String| DiskSimError { file: path.to_owned(), line: 0, problem };
    let (disk, block, above) = if document.topologies.is_empty() {
        let disks: Vec<&Block> =
            document.blocks.iter().filter(|block| block.type_name == "disksim_disk").collect();
        let Some(&block) = disks.first() else {
            return Err(file_error("no disksim_disk block and no topology".into()));
        };
        if disks.len() > 1 {
            warnings.push(format!(
                "disks other than the first ({}) (one device is built from one disk)",
                disks[1..]
                    .iter()
                    .filter_map(|block| block.name.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        (block.name.clone().unwrap_or_default(), block, Vec::new())
    } else {
        let mut found: Vec<Vec<&TopologyNode>> = Vec::new();
        for root in &document.topologies {
            collect_disks(root, &mut Vec::new(), &mut found);
        }
        let Some(chain) = found.first() else {
            return Err(file_error("the topology holds no disksim_disk".into()));
        };
        if found.len() > 1 {
            warnings.push(format!(
                "disks other than the first ({}) (one device is built from one disk)",
                found[1..]
                    .iter()
                    .filter_map(|chain| chain.last().map(|node| node.name.clone()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let node = chain[chain.len() - 1];
        let block = instance(document, &node.name, &node.at)?;
        if block.type_name != "disksim_disk" {
            return Err(node.at.error(format!(
                "instance {} is a {}, not a disksim_disk",
                node.name, block.type_name
            )));
        }
        let mut above = Vec::new();
        for ancestor in &chain[..chain.len() - 1] {
            above.push(instance(document, &ancestor.name, &ancestor.at)?);
        }
        (node.name.clone(), block, above)
    };
    let mut drive = Drive::read(document, block, &mut warnings)?;
    for block in above {
        let scope = match block.type_name.as_str() {
            "disksim_bus" => Scope::Bus,
            "disksim_ctlr" => Scope::Ctlr,
            "disksim_iodriver" => Scope::Driver,
            _ => continue,
        };
        // Their other parameters do not bear on the disk: not checked.
        check_block(scope, block, false, &mut warnings)?;
        let time = |name: &str| block.get(name).map_or(Ok(0.0), |node| node.number(name));
        let (read_ms, write_ms) = match scope {
            Scope::Bus => (time("Read block transfer time")?, time("Write block transfer time")?),
            Scope::Ctlr => {
                let bulk_ms = time("Bulk sector transfer time")?;
                (bulk_ms, bulk_ms)
            }
            _ => (0.0, 0.0),
        };
        drive.path_read_sector_ms = drive.path_read_sector_ms.max(read_ms);
        drive.path_write_sector_ms = drive.path_write_sector_ms.max(write_ms);
    }
    if drive.write_sector_ms() != drive.read_sector_ms() {
        warnings.push(format!(
            "Write block transfer time = {} (one per-sector interface time is modelled, \
             bulk_sector_time: the read direction's {} ms times writes too)",
            drive.write_sector_ms(),
            drive.read_sector_ms()
        ));
    }
    let values = drive.hdd_values();
    Ok(Mapped { file: path.to_owned(), disk, drive, values, warnings })
}

fn collect_disks<'a>(
    node: &'a TopologyNode,
    chain: &mut Vec<&'a TopologyNode>,
    found: &mut Vec<Vec<&'a TopologyNode>>,
) {
    chain.push(node);
    if node.type_name == "disksim_disk" {
        found.push(chain.clone());
    }
    for child in &node.children {
        collect_disks(child, chain, found);
    }
    chain.pop();
}

/// The block an instance copies.
fn instance<'a>(
    document: &'a Document,
    name: &str,
    at: &Location,
) -> Result<&'a Block, DiskSimError> {
    let template = document
        .instantiations
        .iter()
        .find(|instantiate| instantiate.names.iter().any(|instance| instance == name))
        .map(|instantiate| &instantiate.template)
        .ok_or_else(|| at.error(format!("instance {name} is never instantiated")))?;
    document
        .block(template)
        .ok_or_else(|| at.error(format!("instance {name}'s template {template} is not defined")))
}

/// Refuses parameters DiskSim does not define for `scope` (when `refuse_unknown`), checks
/// `Fixed` values and notes `Ignored` parameters in `warnings`.
fn check_block(
    scope: Scope,
    block: &Block,
    refuse_unknown: bool,
    warnings: &mut Vec<String>,
) -> Result<(), DiskSimError> {
    for param in &block.params {
        let rule = RULES.iter().find(|rule| rule.scope == scope && rule.name == param.name);
        let Some(rule) = rule else {
            if refuse_unknown {
                return Err(param.value.at.error(format!(
                    "unknown parameter `{}` in a {} block",
                    param.name,
                    scope.block_type()
                )));
            }
            continue;
        };
        match rule.treatment {
            Treatment::Fixed(expected, why) => {
                let value = param.value.number(&param.name)?;
                if value != expected {
                    warnings.push(format!(
                        "{} = {value} (only {expected} is modelled: {why})",
                        param.name
                    ));
                }
            }
            Treatment::FixedWord(expected, why) => {
                let value = param.value.word(&param.name)?;
                if value != expected {
                    return Err(param.value.at.error(format!(
                        "`{} = {value}` is not supported (only {expected}: {why})",
                        param.name
                    )));
                }
            }
            Treatment::Ignored(why) => warnings.push(format!("{} ({why})", param.name)),
            Treatment::Key(_) | Treatment::Unused(_) => {}
        }
    }
    Ok(())
}

/// Rust source of a `Preset` carrying `mapped`'s values (for the presets the next step
/// adds): the values are the file's facts, written out.
pub fn preset_source(name: &str, help: &str, mapped: &Mapped) -> String {
    let mut out = format!("Preset {{\n    name: {name:?},\n    help: {help:?},\n    values: &[\n");
    for (key, value) in &mapped.values {
        out.push_str(&format!("        ({key:?}, {value:?}),\n"));
    }
    out.push_str("    ],\n}");
    out
}

/// Whether a preset's values equal a file's, value for value: `Ok` or every difference
/// (a key missing on either side, or a different value).
pub fn preset_equals_file(
    preset_values: &[(&str, &str)],
    file_values: &[(&'static str, String)],
) -> Result<(), Vec<String>> {
    let mut differences = Vec::new();
    for (key, value) in file_values {
        match preset_values.iter().find(|(name, _)| name == key) {
            None => differences.push(format!("{key}: the preset lacks it (file: {value})")),
            Some((_, preset)) if preset != value => {
                differences.push(format!("{key}: preset {preset}, file {value}"));
            }
            Some(_) => {}
        }
    }
    for (key, value) in preset_values {
        if !file_values.iter().any(|(name, _)| name == key) {
            differences.push(format!("{key}: the file does not set it (preset: {value})"));
        }
    }
    if differences.is_empty() { Ok(()) } else { Err(differences) }
}

/// Where DiskSim's drive files are for tests and tools: the directory named by the
/// environment variable `ELEVATOR_DISKSIM_DIR` when it is set, else `shared/disksim` in a
/// directory above `from` (the repository sits next to `shared/`).
pub fn find_shared_dir(from: &Path) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("ELEVATOR_DISKSIM_DIR") {
        return Some(PathBuf::from(dir)).filter(|dir| dir.is_dir());
    }
    from.ancestors().map(|dir| dir.join("shared/disksim")).find(|dir| dir.is_dir())
}

/// [`find_shared_dir`] for tests: under `CI=true` a missing directory fails (a test there
/// may not skip), elsewhere it prints a skip line and gives `None`.
pub fn shared_dir_for_tests(from: &Path) -> Option<PathBuf> {
    let found = find_shared_dir(from);
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "shared/disksim not found above {} and ELEVATOR_DISKSIM_DIR unset (CI=true requires \
             DiskSim's drive files)",
            from.display()
        );
        // Outside CI a test without its data skips, saying so.
        #[allow(clippy::print_stderr)]
        {
            eprintln!("skipped: no shared/disksim above {}", from.display());
        }
    }
    found
}
