//! A DiskSim disk's timing parameters, typed ([`Drive`]), read from its blocks and written
//! out as `hdd` key values ([`Drive::hdd_values`]).
//!
//! Only the parameters honoured through a key are fields here; the fixed, ignored and
//! no-effect ones are checked against [`super::RULES`] while reading.

use super::grammar::{self, Block, DiskSimError, Document, Value};
use super::{Scope, check_block, parse_seek_file};

/// A DiskSim disk: geometry, layout, mechanics, controller, cache and queue, as the files
/// give them (DiskSim's units: ms, blocks of 512 bytes, DiskSim's scheme numbers).
#[derive(Clone, Debug, PartialEq)]
pub struct Drive {
    /// `Number of cylinders`.
    pub cylinders: i64,
    /// `Number of data surfaces`.
    pub surfaces: i64,
    /// `Block count`.
    pub block_count: i64,
    /// `LBN-to-PBN mapping scheme`, 0..=2.
    pub mapping_scheme: i64,
    /// `Sparing scheme used`, 0..=10.
    pub sparing_scheme: i64,
    /// `Rangesize for sparing`.
    pub sparing_range: i64,
    /// `Zones`, outer first.
    pub zones: Vec<Zone>,
    /// `Rotation speed (in rpms)`.
    pub rpm: i64,
    /// `Head switch time`.
    pub head_switch_ms: f64,
    /// `Add. write settling delay`.
    pub write_settle_ms: f64,
    /// `Seek type` and what it reads.
    pub seek: Seek,
    /// The eight `... over. after ...` overheads in [`OVERHEADS`] order.
    pub overheads_ms: [f64; 8],
    /// `Read completion overhead`.
    pub read_complete_ms: f64,
    /// `Write completion overhead`.
    pub write_complete_ms: f64,
    /// `Bulk sector transfer time` (the disk's own).
    pub bulk_sector_ms: f64,
    /// The slowest per-block time towards the host on the path above the disk: the buses'
    /// `Read block transfer time` and the controllers' `Bulk sector transfer time` (0 for a
    /// `.diskspecs` read alone). DiskSim moves a block in the largest of these and the
    /// disk's own.
    pub path_read_sector_ms: f64,
    /// The same towards the disk (the buses' `Write block transfer time`).
    pub path_write_sector_ms: f64,
    /// `Number of buffer segments`.
    pub segments: i64,
    /// `Segment size (in blks)`.
    pub segment_blocks: i64,
    /// `Maximum number of write segments`.
    pub write_segments: i64,
    /// `Use separate write segment`.
    pub separate_write_segment: bool,
    /// `Fast write level`, 0..=2.
    pub fast_write_level: i64,
    /// `Buffer continuous read`, 0..=4.
    pub buffer_continuous_read: i64,
    /// `Minimum read-ahead (blks)`.
    pub read_ahead_min_blocks: i64,
    /// `Maximum read-ahead (blks)`.
    pub read_ahead_max_blocks: i64,
    /// The 0/1 cache parameters in [`FLAGS`] order.
    pub flags: [bool; 7],
    /// `Max queue length`.
    pub max_queue_length: i64,
    /// The disk ioqueue's `Scheduling policy`.
    pub scheduling_policy: i64,
}

/// One `dm_layout_g1_zone`.
#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    /// `First cylinder number`.
    pub first_cylinder: i64,
    /// `Last cylinder number` (inclusive).
    pub last_cylinder: i64,
    /// `Blocks per track`.
    pub blocks_per_track: i64,
    /// `Offset of first block` (sectors, may be fractional).
    pub first_block_offset: f64,
    /// `Empty space at zone front` (sectors).
    pub front_empty: i64,
    /// `Skew for track switch` (sectors; 0 when left out).
    pub track_skew: f64,
    /// `Skew for cylinder switch` (sectors; 0 when left out).
    pub cylinder_skew: f64,
    /// `Number of spares`.
    pub spares: i64,
    /// `slips`, as listed.
    pub slips: Vec<i64>,
    /// `defects` as (defective, replacement) pairs.
    pub defects: Vec<(i64, i64)>,
}

/// How seeks are timed.
#[derive(Clone, Debug, PartialEq)]
pub enum Seek {
    /// `extracted`: the seek file's `(distance, ms)` points.
    Extracted(Vec<(u64, f64)>),
    /// `hpl`, or `hplplus10` with the ten first distances' times.
    Hpl {
        /// `HPL seek equation values`.
        values: [f64; 6],
        /// `First ten seek times` (hplplus10 only).
        first_ten: Option<[f64; 10]>,
    },
    /// `curve`: DiskSim's three-point curve.
    Curve {
        /// `Single cylinder seek time`.
        single_ms: f64,
        /// `Average seek time`.
        average_ms: f64,
        /// `Full strobe seek time`.
        full_ms: f64,
    },
}

/// DiskSim's sparing schemes 0..10 by their `sparing` names.
pub use crate::device::hdd::SPARING_NAMES as SPARING;

/// The eight per-command overheads and their keys.
pub const OVERHEADS: [(&str, &str); 8] = [
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
pub const FLAGS: [(&str, &str); 7] = [
    ("Read-ahead over requested", "read_ahead_over_requested"),
    ("Read-ahead on idle hit", "read_ahead_on_idle_hit"),
    ("Read any free blocks", "read_any_free"),
    ("Combine seq writes", "combine_writes"),
    ("Allow read hits on write data", "read_hits_on_writes"),
    ("Write hit stop prefetch", "write_hit_stop_read_ahead"),
    ("Enable caching in buffer", "buffer_cache"),
];

/// The ioqueue's `Scheduling policy` numbers the drive's queue models, and their names.
pub const QUEUE_POLICIES: [(i64, &str); 5] =
    [(1, "fcfs"), (2, "elevator-lbn"), (3, "cycle-lbn"), (4, "sstf-lbn"), (8, "sptf")];

/// A number as our keys take it: the shortest text that reads back to the same value.
fn number(value: f64) -> String {
    format!("{value}")
}

/// The name of DiskSim scheme `number`, or the number itself when it has none.
fn name_of(names: &[&str], number: i64) -> String {
    usize::try_from(number)
        .ok()
        .and_then(|index| names.get(index))
        .map_or_else(|| number.to_string(), |name| (*name).to_owned())
}

fn time_ms(value: f64) -> String {
    format!("{value}ms")
}

fn integer(block: &Block, name: &str) -> Result<i64, DiskSimError> {
    block.require(name)?.integer(name)
}

fn real(block: &Block, name: &str) -> Result<f64, DiskSimError> {
    block.require(name)?.number(name)
}

/// An integer parameter that must lie in `range`.
fn ranged(
    block: &Block,
    name: &str,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64, DiskSimError> {
    let node = block.require(name)?;
    let value = node.integer(name)?;
    if !range.contains(&value) {
        return Err(node.at.error(format!(
            "`{name} = {value}` is not valid (expected {} to {})",
            range.start(),
            range.end()
        )));
    }
    Ok(value)
}

fn flag(block: &Block, name: &str) -> Result<bool, DiskSimError> {
    Ok(ranged(block, name, 0..=1)? == 1)
}

/// A list of exactly `N` numbers.
fn numbers<const N: usize>(block: &Block, name: &str) -> Result<[f64; N], DiskSimError> {
    let node = block.require(name)?;
    let list = node.list(name)?;
    let values = list.iter().map(|item| item.number(name)).collect::<Result<Vec<_>, _>>()?;
    values.try_into().map_err(|values: Vec<f64>| {
        node.at.error(format!("`{name}` must list {N} values, not {}", values.len()))
    })
}

/// A block-valued parameter of the expected type.
fn sub_block<'a>(block: &'a Block, name: &str, type_name: &str) -> Result<&'a Block, DiskSimError> {
    let inner = block.require(name)?.block(name)?;
    if inner.type_name != type_name {
        return Err(inner.at.error(format!(
            "`{name}` is a {}, expected {type_name} (the only one read)",
            inner.type_name
        )));
    }
    Ok(inner)
}

impl Drive {
    /// Reads the disk block `disk` (with its model, layout, mechanics and queue), checking
    /// every parameter against the rules; parameters not honoured are added to `warnings`.
    pub fn read(
        document: &Document,
        disk: &Block,
        warnings: &mut Vec<String>,
    ) -> Result<Drive, DiskSimError> {
        check_block(Scope::Disk, disk, true, warnings)?;
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
        check_block(Scope::Model, model, true, warnings)?;
        let mech = sub_block(model, "Mechanical Model", "dm_mech_g1")?;
        check_block(Scope::Mech, mech, true, warnings)?;
        let layout = sub_block(model, "Layout Model", "dm_layout_g1")?;
        check_block(Scope::Layout, layout, true, warnings)?;
        let queue = sub_block(disk, "Scheduler", "disksim_ioqueue")?;
        check_block(Scope::Queue, queue, true, warnings)?;

        let zones_node = layout.require("Zones")?;
        let zone_nodes = zones_node.list("Zones")?;
        if zone_nodes.is_empty() {
            return Err(zones_node.at.error("`Zones` lists no zone"));
        }
        let mut zones = Vec::new();
        for node in zone_nodes {
            let zone = node.block("Zones")?;
            if zone.type_name != "dm_layout_g1_zone" {
                return Err(zone
                    .at
                    .error(format!("a zone is a {}, expected dm_layout_g1_zone", zone.type_name)));
            }
            check_block(Scope::Zone, zone, true, warnings)?;
            zones.push(Zone::read(zone)?);
        }

        let mut overheads_ms = [0.0; 8];
        for (slot, (name, _)) in overheads_ms.iter_mut().zip(OVERHEADS) {
            *slot = real(disk, name)?;
        }
        let mut flags = [false; 7];
        for (slot, (name, _)) in flags.iter_mut().zip(FLAGS) {
            *slot = flag(disk, name)?;
        }
        let scheduling_policy = integer(queue, "Scheduling policy")?;
        if QUEUE_POLICIES.iter().all(|(policy, _)| *policy != scheduling_policy) {
            warnings.push(format!(
                "Scheduling policy = {scheduling_policy} (the drive's queue models policies 1, \
                 2, 3, 4 and 8 only; left at the default, sptf)"
            ));
        }
        Ok(Drive {
            cylinders: integer(model, "Number of cylinders")?,
            surfaces: integer(model, "Number of data surfaces")?,
            block_count: integer(model, "Block count")?,
            mapping_scheme: ranged(layout, "LBN-to-PBN mapping scheme", 0..=2)?,
            sparing_scheme: ranged(layout, "Sparing scheme used", 0..=10)?,
            sparing_range: integer(layout, "Rangesize for sparing")?,
            zones,
            rpm: integer(mech, "Rotation speed (in rpms)")?,
            head_switch_ms: real(mech, "Head switch time")?,
            write_settle_ms: real(mech, "Add. write settling delay")?,
            seek: Seek::read(mech)?,
            overheads_ms,
            read_complete_ms: real(disk, "Read completion overhead")?,
            write_complete_ms: real(disk, "Write completion overhead")?,
            bulk_sector_ms: real(disk, "Bulk sector transfer time")?,
            path_read_sector_ms: 0.0,
            path_write_sector_ms: 0.0,
            segments: integer(disk, "Number of buffer segments")?,
            segment_blocks: ranged(disk, "Segment size (in blks)", 1..=(1 << 21))?,
            write_segments: integer(disk, "Maximum number of write segments")?,
            separate_write_segment: flag(disk, "Use separate write segment")?,
            fast_write_level: ranged(disk, "Fast write level", 0..=2)?,
            buffer_continuous_read: ranged(disk, "Buffer continuous read", 0..=4)?,
            read_ahead_min_blocks: integer(disk, "Minimum read-ahead (blks)")?,
            read_ahead_max_blocks: integer(disk, "Maximum read-ahead (blks)")?,
            flags,
            max_queue_length: integer(disk, "Max queue length")?,
            scheduling_policy,
        })
    }

    /// Per-block interface time of a read: the largest along the path, as DiskSim takes it.
    pub fn read_sector_ms(&self) -> f64 {
        self.bulk_sector_ms.max(self.path_read_sector_ms)
    }

    /// Per-block interface time of a write.
    pub fn write_sector_ms(&self) -> f64 {
        self.bulk_sector_ms.max(self.path_write_sector_ms)
    }

    /// The `hdd` key values, in the contract's order. A scheme number outside DiskSim's
    /// range (a `Drive` built by hand) is written as the number, which the key refuses.
    pub fn hdd_values(&self) -> Vec<(&'static str, String)> {
        let mut values: Vec<(&'static str, String)> = Vec::new();
        let mut set = |key: &'static str, value: String| values.push((key, value));
        set("rpm", self.rpm.to_string());
        set("cylinders", self.cylinders.to_string());
        set("surfaces", self.surfaces.to_string());
        let zone_list = |entry: &dyn Fn(&Zone) -> String| {
            self.zones.iter().map(entry).collect::<Vec<_>>().join("/")
        };
        set(
            "zones",
            zone_list(&|zone| {
                format!("{}-{}@{}", zone.first_cylinder, zone.last_cylinder, zone.blocks_per_track)
            }),
        );
        let mapping = ["conventional", "serpentine", "serpentine-global"];
        set("mapping", name_of(&mapping, self.mapping_scheme));
        set("sparing", name_of(SPARING, self.sparing_scheme));
        set("sparing_range", self.sparing_range.to_string());
        set(
            "zone_skews",
            zone_list(&|zone| {
                format!("{}:{}", number(zone.track_skew), number(zone.cylinder_skew))
            }),
        );
        set(
            "zone_offsets",
            zone_list(&|zone| format!("{}:{}", number(zone.first_block_offset), zone.front_empty)),
        );
        set("zone_spares", zone_list(&|zone| zone.spares.to_string()));
        let per_zone = |entries: &dyn Fn(&Zone) -> Vec<String>| {
            self.zones
                .iter()
                .enumerate()
                .filter_map(|(index, zone)| {
                    let listed = entries(zone);
                    (!listed.is_empty()).then(|| format!("{index}:{}", listed.join("+")))
                })
                .collect::<Vec<_>>()
                .join("/")
        };
        set("slips", per_zone(&|zone| zone.slips.iter().map(i64::to_string).collect()));
        set(
            "defects",
            per_zone(&|zone| {
                zone.defects.iter().map(|(bad, spare)| format!("{bad}>{spare}")).collect()
            }),
        );
        set("block_count", self.block_count.to_string());
        let joined =
            |values: &[f64]| values.iter().map(|v| number(*v)).collect::<Vec<_>>().join("/");
        match &self.seek {
            Seek::Extracted(points) => {
                set("seek", "table".into());
                let points: Vec<String> = points
                    .iter()
                    .map(|(distance, time_ms)| format!("{distance}:{}", number(*time_ms)))
                    .collect();
                set("seek_table", points.join("/"));
            }
            Seek::Hpl { values: hpl, first_ten } => {
                set("seek", "hpl".into());
                set("hpl", joined(hpl));
                if let Some(first_ten) = first_ten {
                    set("seek_first_ten", joined(first_ten));
                }
            }
            Seek::Curve { single_ms, average_ms, full_ms } => {
                set("seek", "curve".into());
                set("seek_single", time_ms(*single_ms));
                set("seek_avg", time_ms(*average_ms));
                set("seek_full", time_ms(*full_ms));
            }
        }
        set("head_switch", time_ms(self.head_switch_ms));
        set("write_settle", time_ms(self.write_settle_ms));
        for ((_, key), value) in OVERHEADS.iter().zip(self.overheads_ms) {
            set(key, time_ms(value));
        }
        set("overhead_read_complete", time_ms(self.read_complete_ms));
        set("overhead_write_complete", time_ms(self.write_complete_ms));
        set("bulk_sector_time", time_ms(self.read_sector_ms()));
        set("segments", self.segments.to_string());
        set("segment_size", (self.segment_blocks * 512).to_string());
        set("write_segments", self.write_segments.to_string());
        let bit = |on: bool| if on { "1" } else { "0" }.to_owned();
        set("write_segment_separate", bit(self.separate_write_segment));
        set("write_cache", bit(self.fast_write_level > 0));
        match self.fast_write_level {
            1 => set("write_back", "limited".into()),
            2 => set("write_back", "immediate".into()),
            _ => {}
        }
        set("read_ahead", bit(self.buffer_continuous_read > 0));
        let read_ahead_to = ["", "track", "cylinder", "segment", "next-track"];
        if self.buffer_continuous_read > 0 {
            set("read_ahead_to", name_of(&read_ahead_to, self.buffer_continuous_read));
        }
        set("read_ahead_min", self.read_ahead_min_blocks.to_string());
        set("read_ahead_max", self.read_ahead_max_blocks.to_string());
        for ((_, key), on) in FLAGS.iter().zip(self.flags) {
            set(key, bit(on));
        }
        set("depth", self.max_queue_length.to_string());
        if let Some((_, name)) =
            QUEUE_POLICIES.iter().find(|(policy, _)| *policy == self.scheduling_policy)
        {
            set("queue_policy", (*name).into());
        }
        values
    }
}

impl Zone {
    fn read(zone: &Block) -> Result<Zone, DiskSimError> {
        // DiskSim makes both skews optional; left out, a skew is 0 sectors.
        let optional = |name: &str| zone.get(name).map_or(Ok(0.0), |node| node.number(name));
        let list = |name: &str| -> Result<Vec<i64>, DiskSimError> {
            zone.require(name)?.list(name)?.iter().map(|node| node.integer(name)).collect()
        };
        let defects = list("defects")?;
        if defects.len() % 2 != 0 {
            return Err(zone
                .require("defects")?
                .at
                .error("`defects` must list pairs: defective sector, replacement sector"));
        }
        Ok(Zone {
            first_cylinder: integer(zone, "First cylinder number")?,
            last_cylinder: integer(zone, "Last cylinder number")?,
            blocks_per_track: integer(zone, "Blocks per track")?,
            first_block_offset: real(zone, "Offset of first block")?,
            front_empty: integer(zone, "Empty space at zone front")?,
            track_skew: optional("Skew for track switch")?,
            cylinder_skew: optional("Skew for cylinder switch")?,
            spares: integer(zone, "Number of spares")?,
            slips: list("slips")?,
            defects: defects.chunks(2).map(|pair| (pair[0], pair[1])).collect(),
        })
    }
}

impl Seek {
    fn read(mech: &Block) -> Result<Seek, DiskSimError> {
        let kind_node = mech.require("Seek type")?;
        Ok(match kind_node.word("Seek type")? {
            "extracted" => {
                let curve_node = mech.require("Full seek curve")?;
                let name = curve_node.word("Full seek curve")?;
                // Relative to the file that names it (the model file).
                let path = grammar::relative_to(&curve_node.at.file, name);
                Seek::Extracted(parse_seek_file(&path, &curve_node.at)?.points)
            }
            "hpl" => {
                Seek::Hpl { values: numbers(mech, "HPL seek equation values")?, first_ten: None }
            }
            "hplplus10" => Seek::Hpl {
                values: numbers(mech, "HPL seek equation values")?,
                first_ten: Some(numbers(mech, "First ten seek times")?),
            },
            "curve" => Seek::Curve {
                single_ms: real(mech, "Single cylinder seek time")?,
                average_ms: real(mech, "Average seek time")?,
                full_ms: real(mech, "Full strobe seek time")?,
            },
            other => {
                return Err(kind_node.at.error(format!(
                    "`Seek type = {other}` is not supported (accepted: extracted, hpl, \
                     hplplus10, curve)"
                )));
            }
        })
    }
}
