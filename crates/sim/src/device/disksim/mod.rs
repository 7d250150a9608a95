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

pub mod grammar;

use std::path::{Path, PathBuf};

use grammar::{Block, DiskSimError, Document, Location, TopologyNode, Value};

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

const NO_DISCONNECT: &str = "no SCSI disconnect/reselect phases are modelled; 0 is what we do";
const NO_SNEAKY: &str = "our cache serves a hit only from data fully in a segment";
const STATS: &str = "statistics output only";

/// Every DiskSim 4.0 parameter of a disk (`src/modules/disk.modspec`,
/// `diskmodel/modules/{disk,layout_g1,layout_g1_zone,mech_g1}.modspec`, the disk's ioqueue
/// from `src/modules/ioqueue.modspec`) and those of the buses, controller and driver above it
/// that bear on the disk's timing, with their treatment.
pub const RULES: &[Rule] = &[
    // disksim_disk
    rule(Scope::Disk, "Model", Treatment::Key("(the dm_disk block below)")),
    rule(Scope::Disk, "Scheduler", Treatment::Key("(the ioqueue block below)")),
    rule(Scope::Disk, "Max queue length", Treatment::Key("depth")),
    rule(Scope::Disk, "Bulk sector transfer time", Treatment::Key("bulk_sector_time")),
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
        Treatment::Unused("only scales the water marks, which are 0"),
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
    rule(Scope::Disk, "Write hit stop prefetch", Treatment::Key("write_hit_stops_read_ahead")),
    rule(
        Scope::Disk,
        "Read directly to buffer",
        Treatment::Fixed(1.0, "media reads always land in a buffer segment"),
    ),
    rule(Scope::Disk, "Immed transfer partial hit", Treatment::Key("partial_hit_transfer")),
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
        Treatment::Fixed(0.0, "no early bus reconnection for buffered reads"),
    ),
    rule(
        Scope::Disk,
        "Immediate buffer write",
        Treatment::Fixed(0.0, "no early bus reconnection for buffered writes"),
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
        Treatment::Unused("only used by a sequential stream scheme, which is 0"),
    ),
    rule(
        Scope::Queue,
        "Overlapping request scheme",
        Treatment::Fixed(0.0, "overlapping commands are served as separate commands"),
    ),
    rule(
        Scope::Queue,
        "Sequential stream diff maximum",
        Treatment::Unused("only used by a sequential stream scheme, which is 0"),
    ),
    rule(
        Scope::Queue,
        "Scheduling timeout scheme",
        Treatment::Fixed(0.0, "no aging of queued commands"),
    ),
    rule(
        Scope::Queue,
        "Timeout time/weight",
        Treatment::Unused("only used by a timeout scheme, which is 0"),
    ),
    rule(
        Scope::Queue,
        "Timeout scheduling",
        Treatment::Unused("only used by a timeout scheme, which is 0"),
    ),
    rule(
        Scope::Queue,
        "Scheduling priority scheme",
        Treatment::Fixed(0.0, "no priority classes in the drive's queue"),
    ),
    rule(
        Scope::Queue,
        "Priority scheduling",
        Treatment::Unused("only used by a priority scheme, which is 0"),
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
        "Arbitration time",
        Treatment::Fixed(0.0, "no bus arbitration delay is modelled"),
    ),
    rule(
        Scope::Bus,
        "Read block transfer time",
        Treatment::Fixed(0.0, "the disk's own bulk_sector_time/bus_rate carry the transfer"),
    ),
    rule(
        Scope::Bus,
        "Write block transfer time",
        Treatment::Fixed(0.0, "the disk's own bulk_sector_time/bus_rate carry the transfer"),
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
        Treatment::Fixed(0.0, "no controller transfer time on top of the disk's"),
    ),
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
    let mut mapper = Mapper { values: Vec::new(), warnings };
    mapper.map_disk(document, block)?;
    for block in above {
        let scope = match block.type_name.as_str() {
            "disksim_bus" => Scope::Bus,
            "disksim_ctlr" => Scope::Ctlr,
            "disksim_iodriver" => Scope::Driver,
            _ => continue,
        };
        mapper.check_above(scope, block)?;
    }
    Ok(Mapped { file: path.to_owned(), disk, values: mapper.values, warnings: mapper.warnings })
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

/// A number as our keys take it: the shortest text that reads back to the same value.
fn number(value: f64) -> String {
    format!("{value}")
}

fn time_ms(value: f64) -> String {
    format!("{value}ms")
}

struct Mapper {
    values: Vec<(&'static str, String)>,
    warnings: Vec<String>,
}

impl Mapper {
    fn set(&mut self, key: &'static str, value: String) {
        self.values.push((key, value));
    }

    /// Refuses parameters DiskSim does not define for `scope`; checks `Fixed` values; notes
    /// `Ignored` ones.
    fn check(
        &mut self,
        scope: Scope,
        block: &Block,
        refuse_unknown: bool,
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
                        self.warnings.push(format!(
                            "{} = {} (only {} is modelled: {why})",
                            param.name,
                            number(value),
                            number(expected)
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
                Treatment::Ignored(why) => self.warnings.push(format!("{} ({why})", param.name)),
                Treatment::Key(_) | Treatment::Unused(_) => {}
            }
        }
        Ok(())
    }

    fn check_above(&mut self, scope: Scope, block: &Block) -> Result<(), DiskSimError> {
        self.check(scope, block, false)
    }

    fn map_disk(&mut self, document: &Document, disk: &Block) -> Result<(), DiskSimError> {
        self.check(Scope::Disk, disk, true)?;
        let model_node = disk.require("Model")?;
        let model = match &model_node.value {
            Value::Block(block) => block,
            Value::Word(name) => document
                .block(name)
                .ok_or_else(|| model_node.at.error(format!("model {name} is not defined")))?,
            _ => return Err(model_node.at.error("`Model` must be a dm_disk block")),
        };
        if model.type_name != "dm_disk" {
            return Err(model
                .at
                .error(format!("`Model` is a {}, expected dm_disk", model.type_name)));
        }
        self.check(Scope::Model, model, true)?;
        let mech = model.require("Mechanical Model")?.block("Mechanical Model")?;
        if mech.type_name != "dm_mech_g1" {
            return Err(mech
                .at
                .error(format!("only dm_mech_g1 mechanics are read, not {}", mech.type_name)));
        }
        self.check(Scope::Mech, mech, true)?;
        let layout = model.require("Layout Model")?.block("Layout Model")?;
        if layout.type_name != "dm_layout_g1" {
            return Err(layout
                .at
                .error(format!("only dm_layout_g1 layouts are read, not {}", layout.type_name)));
        }
        self.check(Scope::Layout, layout, true)?;
        let queue = disk.require("Scheduler")?.block("Scheduler")?;
        if queue.type_name != "disksim_ioqueue" {
            return Err(queue
                .at
                .error(format!("`Scheduler` is a {}, expected disksim_ioqueue", queue.type_name)));
        }
        self.check(Scope::Queue, queue, true)?;

        // Geometry and mechanics.
        let rpm = mech.require("Rotation speed (in rpms)")?.integer("Rotation speed (in rpms)")?;
        self.set("rpm", rpm.to_string());
        let integer = |block: &Block, name: &str| -> Result<i64, DiskSimError> {
            block.require(name)?.integer(name)
        };
        self.set("cylinders", integer(model, "Number of cylinders")?.to_string());
        self.set("surfaces", integer(model, "Number of data surfaces")?.to_string());
        self.map_zones(layout)?;
        let mapping = match integer(layout, "LBN-to-PBN mapping scheme")? {
            0 => "conventional",
            1 => "serpentine",
            2 => "serpentine-global",
            other => return Err(self.bad(layout, "LBN-to-PBN mapping scheme", other, "0, 1 or 2")),
        };
        self.set("mapping", mapping.into());
        let sparing = integer(layout, "Sparing scheme used")?;
        let sparing_name = SPARING.get(sparing as usize).filter(|_| sparing >= 0);
        let Some(sparing_name) = sparing_name else {
            return Err(self.bad(layout, "Sparing scheme used", sparing, "0 to 10"));
        };
        self.set("sparing", (*sparing_name).into());
        self.set("sparing_range", integer(layout, "Rangesize for sparing")?.to_string());
        self.map_zone_lists(layout)?;
        self.set("block_count", integer(model, "Block count")?.to_string());
        self.map_seek(mech)?;
        let time = |block: &Block, name: &str| -> Result<String, DiskSimError> {
            Ok(time_ms(block.require(name)?.number(name)?))
        };
        self.set("head_switch", time(mech, "Head switch time")?);
        self.set("write_settle", time(mech, "Add. write settling delay")?);

        // Controller, cache and queue.
        for (name, key) in OVERHEADS {
            self.set(key, time(disk, name)?);
        }
        self.set("overhead_read_complete", time(disk, "Read completion overhead")?);
        self.set("overhead_write_complete", time(disk, "Write completion overhead")?);
        self.set("bulk_sector_time", time(disk, "Bulk sector transfer time")?);
        self.set("segments", integer(disk, "Number of buffer segments")?.to_string());
        let segment_blocks = integer(disk, "Segment size (in blks)")?;
        if !(1..=(1 << 21)).contains(&segment_blocks) {
            return Err(self.bad(
                disk,
                "Segment size (in blks)",
                segment_blocks,
                "1 to 2097152 blocks",
            ));
        }
        self.set("segment_size", (segment_blocks * 512).to_string());
        self.set("write_segments", integer(disk, "Maximum number of write segments")?.to_string());
        let flag = |block: &Block, name: &str| -> Result<String, DiskSimError> {
            match integer(block, name)? {
                value @ (0 | 1) => Ok(value.to_string()),
                _ => Err(block.require(name)?.at.error(format!("`{name}` must be 0 or 1"))),
            }
        };
        self.set("write_segment_separate", flag(disk, "Use separate write segment")?);
        let (write_cache, write_back) = match integer(disk, "Fast write level")? {
            0 => ("0", None),
            1 => ("1", Some("limited")),
            2 => ("1", Some("full")),
            other => return Err(self.bad(disk, "Fast write level", other, "0, 1 or 2")),
        };
        self.set("write_cache", write_cache.into());
        if let Some(write_back) = write_back {
            self.set("write_back", write_back.into());
        }
        let read_ahead_to = match integer(disk, "Buffer continuous read")? {
            0 => None,
            1 => Some("track"),
            2 => Some("cylinder"),
            3 => Some("segment"),
            4 => Some("next-track"),
            other => return Err(self.bad(disk, "Buffer continuous read", other, "0 to 4")),
        };
        self.set("read_ahead", if read_ahead_to.is_some() { "1" } else { "0" }.into());
        if let Some(to) = read_ahead_to {
            self.set("read_ahead_to", to.into());
        }
        self.set("read_ahead_min", integer(disk, "Minimum read-ahead (blks)")?.to_string());
        self.set("read_ahead_max", integer(disk, "Maximum read-ahead (blks)")?.to_string());
        for (name, key) in FLAGS {
            self.set(key, flag(disk, name)?);
        }
        self.set("depth", integer(disk, "Max queue length")?.to_string());
        let policy = integer(queue, "Scheduling policy")?;
        match QUEUE_POLICIES.iter().find(|(number, _)| *number == policy) {
            Some((_, name)) => self.set("queue_policy", (*name).into()),
            None => self.warnings.push(format!(
                "Scheduling policy = {policy} (the drive's queue models policies 1, 2, 3, 4 \
                 and 8 only; left at the default, sptf)"
            )),
        }
        Ok(())
    }

    fn bad(&self, block: &Block, name: &str, value: i64, accepted: &str) -> DiskSimError {
        let at = block.get(name).map_or(&block.at, |node| &node.at);
        at.error(format!("`{name} = {value}` is not valid (expected {accepted})"))
    }

    fn zones<'a>(&self, layout: &'a Block) -> Result<Vec<&'a Block>, DiskSimError> {
        let list = layout.require("Zones")?.list("Zones")?;
        if list.is_empty() {
            return Err(layout.require("Zones")?.at.error("`Zones` lists no zone"));
        }
        list.iter()
            .map(|node| {
                let zone = node.block("Zones")?;
                if zone.type_name != "dm_layout_g1_zone" {
                    return Err(zone.at.error(format!(
                        "a zone is a {}, expected dm_layout_g1_zone",
                        zone.type_name
                    )));
                }
                Ok(zone)
            })
            .collect()
    }

    fn map_zones(&mut self, layout: &Block) -> Result<(), DiskSimError> {
        let zones = self.zones(layout)?;
        let mut entries = Vec::new();
        for zone in &zones {
            self.check(Scope::Zone, zone, true)?;
            let first = zone.require("First cylinder number")?.integer("First cylinder number")?;
            let last = zone.require("Last cylinder number")?.integer("Last cylinder number")?;
            let spt = zone.require("Blocks per track")?.integer("Blocks per track")?;
            entries.push(format!("{first}-{last}@{spt}"));
        }
        self.set("zones", entries.join("/"));
        Ok(())
    }

    fn map_zone_lists(&mut self, layout: &Block) -> Result<(), DiskSimError> {
        let zones = self.zones(layout)?;
        let mut skews = Vec::new();
        let mut offsets = Vec::new();
        let mut spares = Vec::new();
        let mut slips = Vec::new();
        let mut defects = Vec::new();
        for (index, zone) in zones.iter().enumerate() {
            // DiskSim makes both skews optional; absent, a skew is 0 sectors.
            let optional = |name: &str| -> Result<f64, DiskSimError> {
                zone.get(name).map_or(Ok(0.0), |node| node.number(name))
            };
            skews.push(format!(
                "{}:{}",
                number(optional("Skew for track switch")?),
                number(optional("Skew for cylinder switch")?)
            ));
            offsets.push(format!(
                "{}:{}",
                number(zone.require("Offset of first block")?.number("Offset of first block")?),
                zone.require("Empty space at zone front")?.integer("Empty space at zone front")?
            ));
            spares.push(zone.require("Number of spares")?.integer("Number of spares")?.to_string());
            let numbers = |name: &str| -> Result<Vec<i64>, DiskSimError> {
                zone.require(name)?.list(name)?.iter().map(|node| node.integer(name)).collect()
            };
            let zone_slips = numbers("slips")?;
            if !zone_slips.is_empty() {
                let listed: Vec<String> = zone_slips.iter().map(i64::to_string).collect();
                slips.push(format!("{index}:{}", listed.join("+")));
            }
            let zone_defects = numbers("defects")?;
            if zone_defects.len() % 2 != 0 {
                return Err(zone
                    .require("defects")?
                    .at
                    .error("`defects` must list pairs: defective sector, replacement sector"));
            }
            if !zone_defects.is_empty() {
                let pairs: Vec<String> =
                    zone_defects.chunks(2).map(|pair| format!("{}>{}", pair[0], pair[1])).collect();
                defects.push(format!("{index}:{}", pairs.join("+")));
            }
        }
        self.set("zone_skews", skews.join("/"));
        self.set("zone_offsets", offsets.join("/"));
        self.set("zone_spares", spares.join("/"));
        self.set("slips", slips.join("/"));
        self.set("defects", defects.join("/"));
        Ok(())
    }

    fn map_seek(&mut self, mech: &Block) -> Result<(), DiskSimError> {
        let kind_node = mech.require("Seek type")?;
        let kind = kind_node.word("Seek type")?;
        let hpl = |mech: &Block| -> Result<String, DiskSimError> {
            let node = mech.require("HPL seek equation values")?;
            let values = node.list("HPL seek equation values")?;
            if values.len() != 6 {
                return Err(node.at.error(format!(
                    "`HPL seek equation values` must list 6 values, not {}",
                    values.len()
                )));
            }
            let values = values
                .iter()
                .map(|value| value.number("HPL seek equation values").map(number))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(values.join("/"))
        };
        let time = |name: &str| -> Result<String, DiskSimError> {
            Ok(time_ms(mech.require(name)?.number(name)?))
        };
        match kind {
            "extracted" => {
                let curve_node = mech.require("Full seek curve")?;
                let curve_name = curve_node.word("Full seek curve")?;
                let path = grammar::relative_to(&curve_node.at.file, curve_name);
                let curve = parse_seek_file(&path, &curve_node.at)?;
                let points: Vec<String> = curve
                    .points
                    .iter()
                    .map(|(distance, time_ms)| format!("{distance}:{}", number(*time_ms)))
                    .collect();
                self.set("seek", "table".into());
                self.set("seek_table", points.join("/"));
            }
            "hpl" => {
                self.set("seek", "hpl".into());
                self.set("hpl", hpl(mech)?);
            }
            "hplplus10" => {
                self.set("seek", "hpl".into());
                self.set("hpl", hpl(mech)?);
                let node = mech.require("First ten seek times")?;
                let values = node.list("First ten seek times")?;
                if values.len() != 10 {
                    return Err(node.at.error(format!(
                        "`First ten seek times` must list 10 values, not {}",
                        values.len()
                    )));
                }
                let values = values
                    .iter()
                    .map(|value| value.number("First ten seek times").map(number))
                    .collect::<Result<Vec<_>, _>>()?;
                self.set("seek_first_ten", values.join("/"));
            }
            "curve" => {
                self.set("seek", "curve".into());
                self.set("seek_single", time("Single cylinder seek time")?);
                self.set("seek_avg", time("Average seek time")?);
                self.set("seek_full", time("Full strobe seek time")?);
            }
            other => {
                return Err(kind_node.at.error(format!(
                    "`Seek type = {other}` is not supported (accepted: extracted, hpl, \
                     hplplus10, curve)"
                )));
            }
        }
        Ok(())
    }
}

/// DiskSim's sparing schemes 0..10 by their `sparing` names.
const SPARING: &[&str] = &[
    "none",
    "tracks",
    "per-cylinder",
    "per-track",
    "per-cylinder-slip-to-end",
    "per-cylinder-front",
    "per-cylinder-front-slip-to-end",
    "at-end",
    "per-range",
    "per-zone",
    "per-zone-slip-to-end",
];

/// The eight per-command overheads.
const OVERHEADS: [(&str, &str); 8] = [
    ("Read hit over. after read", "overhead_read_hit_after_read"),
    ("Read hit over. after write", "overhead_read_hit_after_write"),
    ("Read miss over. after read", "overhead_read_miss_after_read"),
    ("Read miss over. after write", "overhead_read_miss_after_write"),
    ("Write hit over. after read", "overhead_write_hit_after_read"),
    ("Write hit over. after write", "overhead_write_hit_after_write"),
    ("Write miss over. after read", "overhead_write_miss_after_read"),
    ("Write miss over. after write", "overhead_write_miss_after_write"),
];

/// The cache's 0/1 parameters and their flags.
const FLAGS: [(&str, &str); 8] = [
    ("Read-ahead over requested", "read_ahead_over_requested"),
    ("Read-ahead on idle hit", "read_ahead_on_idle_hit"),
    ("Read any free blocks", "read_any_free"),
    ("Combine seq writes", "combine_writes"),
    ("Allow read hits on write data", "read_hits_on_writes"),
    ("Write hit stop prefetch", "write_hit_stops_read_ahead"),
    ("Immed transfer partial hit", "partial_hit_transfer"),
    ("Enable caching in buffer", "buffer_cache"),
];

/// The ioqueue's `Scheduling policy` numbers the drive's queue models.
const QUEUE_POLICIES: [(i64, &str); 5] =
    [(1, "fcfs"), (2, "elevator-lbn"), (3, "cycle-lbn"), (4, "sstf-lbn"), (8, "sptf")];

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

/// Where the checked-in drive files are for tests and tools: `shared/disksim` in a directory
/// above `from` (the repository sits next to `shared/`).
pub fn find_shared_dir(from: &Path) -> Option<PathBuf> {
    from.ancestors().map(|dir| dir.join("shared/disksim")).find(|dir| dir.is_dir())
}
