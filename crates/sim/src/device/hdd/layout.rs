//! Where a sector is and when it passes under the head: zones, the LBN → (cylinder, surface,
//! angle) mapping with track and cylinder skew, the platter's angle as a function of time, and
//! the timing of a media transfer track by track.
//!
//! # Rotation in integer units
//!
//! One revolution is [`UNITS_PER_REVOLUTION`] (60·10⁹) units, and the platter turns `rpm` units
//! per nanosecond, so the angle at time `t` is `(t·rpm) mod 60·10⁹` — exact integer
//! arithmetic, never an accumulated float. The boundary before physical sector `j` of a track
//! with `n` sectors is at `⌊j·60·10⁹/n⌋` units. A transfer ends at the first whole nanosecond
//! at or after its last sector's trailing boundary, so the head is then less than one
//! nanosecond's worth of rotation past it; a transfer that continues from there counts that
//! sliver as "on time" rather than waiting a whole revolution. Because every end time is
//! computed from an exact angle, these slivers never add up.
//!
//! # Layout
//!
//! DiskSim's `layout_g1` (its `layout_g1.c` and the `layout_g1*.modspec` parameter docs):
//! zones are explicit cylinder ranges, outer first; cylinders in no zone hold no data. Within
//! a zone, LBNs fill a track, then the next surface of the same cylinder, then the next
//! cylinder. With the serpentine mappings, odd cylinders (counted from the zone's first, or
//! absolute) take their surfaces from the last down, so a cylinder switch keeps the head.
//!
//! A zone's sector space counts every sector of its tracks in that order. Its first
//! "empty space at zone front" sectors hold no LBN; the LBNs follow, skipping slipped
//! locations (a slipped sector, or with track sparing a slipped track, is passed over and
//! every later LBN of its sparing region moves on by one); spare space is what is left at
//! the end of each region — a track (`per-track`), a range of cylinders (`per-range`) or the
//! zone (`tracks`, `per-zone`, `per-zone-slip-to-end`; `at-end` keeps its spares at the end
//! of the disk, outside the model). A defective location's LBN is remapped to its
//! replacement in the spare space. The slip and region arithmetic is DiskSim's
//! `g1_ltop_*` family's, with slips found by binary search.
//!
//! The angle of a track's sector 0 is, in whole sectors, the zone's "offset of first block"
//! plus one track skew per track before it in LBN order and one cylinder skew per cylinder
//! before it, both counted from the zone's first cylinder (so each zone restarts its
//! pattern at its offset), plus one sector per slip before its cylinder (`at-end`) or
//! before the track itself (`per-track`), as DiskSim rotates them. Slipped, spare and empty sectors occupy slots like data: a transfer
//! passing over them waits their time.

use std::cell::Cell;

use elevator_core::Instant;

use super::seek::SeekCurve;

/// Rotation units in one revolution; the platter turns `rpm` units per nanosecond.
pub(super) const UNITS_PER_REVOLUTION: u64 = 60_000_000_000;

/// A track: which cylinder and which surface (head).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(super) struct Track {
    /// Cylinder, 0 at the outer edge.
    pub(super) cylinder: u32,
    /// Surface (head).
    pub(super) surface: u32,
}

/// How LBNs take the surfaces of a cylinder: DiskSim's "LBN-to-PBN mapping scheme"
/// (`layout_g1.modspec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(super) enum Mapping {
    /// Scheme 0: every cylinder from surface 0 to the last.
    #[default]
    Conventional,
    /// Scheme 1: cylinders at an odd distance from their zone's first cylinder run from the
    /// last surface to surface 0, so that a cylinder switch keeps the head.
    Serpentine,
    /// Scheme 2: the same by absolute cylinder number (odd cylinders run backwards).
    SerpentineGlobal,
}

/// Where the spare space is and what slips push: DiskSim's "Sparing scheme used", the
/// schemes the model implements (the others are refused where the key is parsed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(super) enum Sparing {
    /// Scheme 0: no spare space; every sector of a zone past its empty front holds data.
    #[default]
    None,
    /// Scheme 1: whole spare tracks at the end of each zone; slips and defects are track
    /// numbers within the zone.
    Tracks,
    /// Scheme 3: "Number of spares" sectors at the end of each track; slips use them, and
    /// every slip before a track rotates its layout by a sector.
    PerTrack,
    /// Scheme 7: spares at the end of the disk (not modelled: nothing is remapped there);
    /// each slip pushes every later LBN of its zone on by one sector, and rotates the layout
    /// of every later cylinder of the zone by one sector.
    AtEnd,
    /// Scheme 8: "Number of spares" sectors at the end of each range of `sparing_range`
    /// cylinders; slips use them.
    PerRange,
    /// Scheme 9: "Number of spares" sectors at the end of each zone; slips use them.
    PerZone,
    /// Scheme 10: as 9, but slips do not use the zone's spares (the zone loses a sector per
    /// slip).
    PerZoneSlipToEnd,
}

/// A refusal from [`Geometry::new`]: the key to change and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LayoutError {
    /// The key whose value is impossible.
    pub(super) key: &'static str,
    /// What is wrong and what is accepted.
    pub(super) problem: String,
}

fn refuse(key: &'static str, problem: String) -> LayoutError {
    LayoutError { key, problem }
}

/// A zone: cylinders that share a sectors-per-track count, laid out.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Zone {
    /// Its first LBN.
    pub(super) first_lbn: u64,
    /// LBNs it holds.
    pub(super) lbn_count: u64,
    /// Its first cylinder.
    pub(super) first_cylinder: u32,
    /// How many cylinders it has.
    pub(super) cylinder_count: u32,
    /// Sectors on each of its tracks (data, spare and slipped alike).
    pub(super) sectors_per_track: u32,
    /// Rotation of a track's sector 0 from the previous track's in LBN order, in sectors.
    pub(super) track_skew_sectors: u32,
    /// Extra rotation across a cylinder boundary, in sectors.
    pub(super) cylinder_skew_sectors: u32,
    /// The skew of one whole cylinder (every head switch plus the cylinder switch) modulo a
    /// track, so that cylinder `k` of the zone starts `k` times this from the zone's offset.
    cylinder_advance_sectors: u64,
    /// Angle of the zone's first track's sector 0, in sectors ("Offset of first block").
    offset_sectors: u64,
    /// Sectors at the zone's front that hold no LBN ("Empty space at zone front").
    front_empty_sectors: u64,
    /// Slipped locations, ascending: sector indices within the zone (counted from its first
    /// sector, empty front included), or track indices with [`Sparing::Tracks`].
    slips: Vec<u64>,
    /// `slips[i] − i`, non-decreasing: the LBN-space index past which slip `i` shifts
    /// LBNs, so that the shift of an index is one binary search.
    slip_keys: Vec<u64>,
    /// `(defective, replacement)` locations in the units of `slips`, ascending by defect.
    defects: Vec<(u64, u64)>,
    /// The sparing region (a track, a range of cylinders, or the whole zone): LBN indices
    /// it holds (`u64::MAX` for the whole zone) and sectors it spans.
    region_lbns: u64,
    region_sectors: u64,
    /// Spare sectors that a long transfer passes over: those at the end of every track or
    /// range (spares at the end of a zone are not passed).
    passed_spare_sectors: u64,
}

impl Zone {
    /// Where index `index_in_zone` of the zone's LBN space (LBNs after the empty front) lands
    /// with slipped sectors skipped: its sector in the zone, the index of the first slip after
    /// it, and how many LBNs from it lie on consecutive sectors of its region.
    fn slot(&self, index_in_zone: u64) -> (u64, usize, u64) {
        if self.region_lbns == u64::MAX {
            // The zone is the region (the common case): no division.
            let shift = self.slip_keys.partition_point(|&key| key <= index_in_zone);
            return (index_in_zone + shift as u64, shift, u64::MAX - index_in_zone);
        }
        let region = index_in_zone / self.region_lbns;
        let within = index_in_zone - region * self.region_lbns;
        let base = region * self.region_sectors;
        // The slips of this region move the LBN on, one for every slip at or before where it
        // lands: as slips ascend, `slip − its index` does not fall, so one binary search.
        let from = if base == 0 { 0 } else { self.slips.partition_point(|&slip| slip < base) };
        let reach = base + within;
        let shift =
            from + self.slip_keys[from..].partition_point(|&key| key + from as u64 <= reach);
        let slot = reach + (shift - from) as u64;
        (slot, shift, self.region_lbns - within)
    }
}

/// Where an LBN is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Location {
    /// Its track.
    pub(super) track: Track,
    /// Sectors on that track.
    pub(super) sectors_per_track: u32,
    /// Its slot on the track counted from the track's sector 0 (before the skew).
    pub(super) sector_in_track: u32,
    /// Its physical slot on the track, counted from angle 0 (slot plus skew).
    pub(super) physical_sector: u32,
    /// How many LBNs from this one lie on consecutive slots of this track (1 or more): the
    /// run ends at the end of the track, before a slipped or defective slot, at a remapped
    /// LBN and at the end of the zone.
    pub(super) run_sectors: u32,
}

/// The platters: zones, surfaces and spindle speed.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Geometry {
    zones: Vec<Zone>,
    /// Each zone's first LBN, in zone order: what [`Geometry::locate`] searches, kept apart
    /// from the zones themselves (large records) so that the search reads one or two cache
    /// lines instead of a line per probe.
    zone_first_lbns: Vec<u64>,
    surfaces: u32,
    cylinders: u32,
    mapping: Mapping,
    sparing: Sparing,
    rpm: u64,
    capacity_sectors: u64,
    /// The period of `t ↦ (t·rpm) mod UNITS_PER_REVOLUTION` in ns, so that the angle is
    /// computed from `t mod period` without overflow.
    angle_period_ns: u64,
}

/// A zone as given.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(super) struct ZoneSpec {
    /// First cylinder.
    pub(super) first_cylinder: u32,
    /// Cylinders.
    pub(super) cylinder_count: u32,
    /// Sectors per track.
    pub(super) sectors_per_track: u32,
    /// Track skew in whole sectors.
    pub(super) track_skew_sectors: u32,
    /// Cylinder skew in whole sectors.
    pub(super) cylinder_skew_sectors: u32,
    /// "Offset of first block" in whole sectors.
    pub(super) first_block_offset_sectors: u32,
    /// "Empty space at zone front" in sectors.
    pub(super) front_empty_sectors: u64,
    /// "Number of spares" (sectors, or tracks with [`Sparing::Tracks`]).
    pub(super) spares: u64,
    /// DiskSim's `slips`, as listed.
    pub(super) slips: Vec<u64>,
    /// DiskSim's `defects` pairs.
    pub(super) defects: Vec<(u64, u64)>,
}

/// The disk-wide layout choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(super) struct LayoutSpec {
    /// Cylinders on the disk (zones may leave some without data).
    pub(super) cylinders: u32,
    /// The LBN-to-PBN mapping.
    pub(super) mapping: Mapping,
    /// The sparing scheme.
    pub(super) sparing: Sparing,
    /// LBNs the disk exposes, when not all the layout holds.
    pub(super) block_count: Option<u64>,
    /// Cylinders per spare range (`sparing_range`), for [`Sparing::PerRange`].
    pub(super) range_cylinders: u32,
}

impl Geometry {
    /// Lays out `zones` (outer first) on `surfaces` surfaces spinning at `rpm`; refuses a
    /// layout that is impossible, naming the key to change.
    pub(super) fn new(
        zones: &[ZoneSpec],
        layout: &LayoutSpec,
        surfaces: u32,
        rpm: u32,
    ) -> Result<Geometry, LayoutError> {
        assert!(!zones.is_empty() && surfaces > 0 && rpm > 0, "checked by the caller");
        let mut laid = Vec::with_capacity(zones.len());
        let mut lbn = 0u64;
        let mut next_free_cylinder = 0u64;
        for (index, spec) in zones.iter().enumerate() {
            assert!(spec.cylinder_count > 0 && spec.sectors_per_track > 0);
            let end_cylinder = u64::from(spec.first_cylinder) + u64::from(spec.cylinder_count);
            if u64::from(spec.first_cylinder) < next_free_cylinder {
                return Err(refuse(
                    "zones",
                    format!(
                        "zone {index} starts at cylinder {} inside the zone before it (zones \
                         must be ascending and not overlap)",
                        spec.first_cylinder
                    ),
                ));
            }
            if end_cylinder > u64::from(layout.cylinders) {
                return Err(refuse(
                    "zones",
                    format!(
                        "zone {index} ends at cylinder {} but the disk has cylinders={} \
                         (0..={})",
                        end_cylinder - 1,
                        layout.cylinders,
                        layout.cylinders.saturating_sub(1)
                    ),
                ));
            }
            next_free_cylinder = end_cylinder;
            laid.push(lay_zone(
                index,
                spec,
                layout.sparing,
                layout.range_cylinders,
                surfaces,
                lbn,
            )?);
            lbn += laid[index].lbn_count;
        }
        let capacity_sectors = match layout.block_count {
            Some(count) if count > lbn => {
                return Err(refuse(
                    "block_count",
                    format!("{count} blocks, but the layout holds only {lbn} (1..={lbn} accepted)"),
                ));
            }
            Some(count) => count,
            None => lbn,
        };
        let rpm = u64::from(rpm);
        let angle_period_ns = UNITS_PER_REVOLUTION / gcd(UNITS_PER_REVOLUTION, rpm);
        Ok(Geometry {
            zone_first_lbns: laid.iter().map(|zone| zone.first_lbn).collect(),
            zones: laid,
            surfaces,
            cylinders: layout.cylinders,
            mapping: layout.mapping,
            sparing: layout.sparing,
            rpm,
            capacity_sectors,
            angle_period_ns,
        })
    }

    /// Sectors on the disk.
    pub(super) fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }

    /// The zones, outer first.
    pub(super) fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// Surfaces (heads).
    pub(super) fn surfaces(&self) -> u32 {
        self.surfaces
    }

    /// Cylinders.
    pub(super) fn cylinders(&self) -> u32 {
        self.cylinders
    }

    /// Revolutions per minute.
    pub(super) fn rpm(&self) -> u64 {
        self.rpm
    }

    /// The share of the sectors a sequential transfer passes over in `zone` that hold its
    /// LBNs: slipped sectors (or slipped tracks, with track sparing) pass under the head
    /// without data. Spare space and the empty front lie past or before the LBNs and are not
    /// passed over in a long transfer within the zone.
    pub(super) fn data_share(&self, zone: &Zone) -> f64 {
        let slip_sectors = zone.slips.len() as u64
            * if self.sparing == Sparing::Tracks { u64::from(zone.sectors_per_track) } else { 1 };
        let passed = zone.lbn_count + slip_sectors + zone.passed_spare_sectors;
        zone.lbn_count as f64 / passed as f64
    }

    /// Where `lbn` is. `lbn` must be below the capacity.
    pub(super) fn locate(&self, lbn: u64) -> Location {
        debug_assert!(lbn < self.capacity_sectors);
        let index = self.zone_first_lbns.partition_point(|&first_lbn| first_lbn <= lbn) - 1;
        let zone = &self.zones[index];
        let spt = u64::from(zone.sectors_per_track);
        // The LBN's index in the zone's sector space: past the empty front.
        let index_in_zone = lbn - zone.first_lbn + zone.front_empty_sectors;
        let (track_in_zone, sector_in_track, mut run) = if self.sparing == Sparing::Tracks {
            // Whole tracks are slipped: LBNs fill tracks in order, skipping slipped tracks.
            let listed_track = index_in_zone / spt;
            let shift = zone.slip_keys.partition_point(|&key| key <= listed_track) as u64;
            let mut track = listed_track + shift;
            if let Ok(found) = zone.defects.binary_search_by_key(&track, |&(defect, _)| defect) {
                track = zone.defects[found].1;
            }
            let sector = index_in_zone % spt;
            (track, sector, spt - sector)
        } else {
            // Slipped sectors are skipped: the LBN moves on by one sector for every slip of its
            // sparing region at or before where it lands.
            let (mut slot, next_slip_index, to_region_end) = zone.slot(index_in_zone);
            let mut run = (spt - slot % spt).min(to_region_end);
            if let Some(&next_slip) = zone.slips.get(next_slip_index) {
                run = run.min(next_slip - slot);
            }
            let next_defect = zone.defects.partition_point(|&(defect, _)| defect < slot);
            match zone.defects.get(next_defect) {
                Some(&(defect, replacement)) if defect == slot => {
                    slot = replacement;
                    run = 1;
                }
                Some(&(defect, _)) => run = run.min(defect - slot),
                None => {}
            }
            (slot / spt, slot % spt, run)
        };
        run = run.min(zone.first_lbn + zone.lbn_count - lbn);
        let surfaces = u64::from(self.surfaces);
        let cylinder_in_zone = track_in_zone / surfaces;
        let logical_surface = track_in_zone - cylinder_in_zone * surfaces;
        let cylinder = zone.first_cylinder + cylinder_in_zone as u32;
        let reversed = match self.mapping {
            Mapping::Conventional => false,
            Mapping::Serpentine => cylinder_in_zone % 2 == 1,
            Mapping::SerpentineGlobal => cylinder % 2 == 1,
        };
        let surface = if reversed { surfaces - 1 - logical_surface } else { logical_surface };
        // With spares at the end of the disk every slip before a cylinder, and with spares
        // per track every slip before a track (counted by physical surface, as DiskSim's
        // `g1_map_pbn_skew` does), rotates its layout on by a sector.
        let cutoff = match self.sparing {
            Sparing::AtEnd => Some(cylinder_in_zone * surfaces * spt),
            Sparing::PerTrack => Some((cylinder_in_zone * surfaces + surface) * spt),
            _ => None,
        };
        let slip_rotation =
            cutoff.map_or(0, |cutoff| zone.slips.partition_point(|&slip| slip < cutoff) as u64);
        // The skew counts head switches in LBN order (the logical surface), as DiskSim does
        // for every mapping. At most 10^7 cylinders times a skew below 10^5: no overflow.
        let offset = (zone.offset_sectors
            + cylinder_in_zone * zone.cylinder_advance_sectors
            + logical_surface * u64::from(zone.track_skew_sectors)
            + slip_rotation)
            % spt;
        let mut physical_sector = sector_in_track + offset;
        if physical_sector >= spt {
            physical_sector -= spt;
        }
        Location {
            track: Track { cylinder, surface: surface as u32 },
            sectors_per_track: zone.sectors_per_track,
            sector_in_track: sector_in_track as u32,
            physical_sector: physical_sector as u32,
            run_sectors: run as u32,
        }
    }

    /// The platter's angle at `at`, in units within one revolution.
    pub(super) fn angle_units(&self, at: Instant) -> u64 {
        (at.as_nanos() % self.angle_period_ns) * self.rpm % UNITS_PER_REVOLUTION
    }
}

/// Lays out zone `index` from `first_lbn`: its LBN count from the sparing scheme, and its
/// slips and defects checked against its size.
fn lay_zone(
    index: usize,
    spec: &ZoneSpec,
    sparing: Sparing,
    range_cylinders: u32,
    surfaces: u32,
    first_lbn: u64,
) -> Result<Zone, LayoutError> {
    let spt = spec.sectors_per_track;
    let tracks = u64::from(spec.cylinder_count) * u64::from(surfaces);
    let sectors = tracks * u64::from(spt);
    let slip_count = spec.slips.len() as u64;
    let defect_count = spec.defects.len() as u64;
    // Slips and defects count tracks with track sparing, sectors otherwise.
    let (unit, units) =
        if sparing == Sparing::Tracks { ("track", tracks) } else { ("sector", sectors) };
    if let Some(window) = spec.slips.windows(2).find(|pair| pair[0] >= pair[1]) {
        return Err(refuse(
            "slips",
            format!(
                "zone {index}: slip {} follows {}; slips must be strictly ascending",
                window[1], window[0]
            ),
        ));
    }
    if let Some(&slip) = spec.slips.iter().find(|&&slip| slip >= units) {
        return Err(refuse(
            "slips",
            format!("zone {index}: slip {slip} is beyond the zone's {units} {unit}s (0..{units})"),
        ));
    }
    let mut defects = spec.defects.clone();
    defects.sort_unstable();
    if let Some(&(defect, replacement)) =
        defects.iter().find(|&&(defect, replacement)| defect >= units || replacement >= units)
    {
        return Err(refuse(
            "defects",
            format!(
                "zone {index}: {defect}>{replacement} is beyond the zone's {units} {unit}s \
                 (0..{units})"
            ),
        ));
    }
    if defects.windows(2).any(|pair| pair[0].0 == pair[1].0) {
        return Err(refuse("defects", format!("zone {index}: a defect is listed twice")));
    }
    let too_many = |what: &str, most: u64| {
        refuse(
            "slips",
            format!(
                "zone {index}: {slip_count} slips and {defect_count} defects, but {what} \
                 (at most {most} together)"
            ),
        )
    };
    let front = spec.front_empty_sectors;
    let reserved = match sparing {
        Sparing::None | Sparing::AtEnd if spec.spares > 0 => {
            return Err(refuse(
                "zone_spares",
                format!(
                    "zone {index}: {} spares, but sparing={} keeps no spares in a zone (0 \
                     accepted; spares need sparing=tracks, per-track, per-range, per-zone \
                     or per-zone-slip-to-end)",
                    spec.spares,
                    if sparing == Sparing::None { "none" } else { "at-end" }
                ),
            ));
        }
        Sparing::None if slip_count + defect_count > 0 => {
            return Err(refuse(
                "slips",
                format!(
                    "zone {index}: slips or defects need spare space, but sparing=none (use \
                     tracks, per-track, at-end, per-range, per-zone or per-zone-slip-to-end)"
                ),
            ));
        }
        Sparing::AtEnd if defect_count > 0 => {
            return Err(refuse(
                "defects",
                format!(
                    "zone {index}: sparing=at-end remaps defects to the end of the disk, which \
                     the model does not hold (defects need sparing=tracks, per-track, \
                     per-range, per-zone or per-zone-slip-to-end)"
                ),
            ));
        }
        Sparing::None => 0,
        Sparing::AtEnd => slip_count,
        Sparing::Tracks => {
            if slip_count + defect_count > spec.spares {
                return Err(too_many("the zone has only that many spare tracks", spec.spares));
            }
            spec.spares.saturating_mul(u64::from(spt))
        }
        Sparing::PerTrack | Sparing::PerRange => {
            let (region, region_sectors, regions) = if sparing == Sparing::PerTrack {
                ("track", u64::from(spt), tracks)
            } else {
                let per_range = u64::from(range_cylinders) * u64::from(surfaces) * u64::from(spt);
                ("range", per_range, u64::from(spec.cylinder_count / range_cylinders))
            };
            if spec.spares >= region_sectors {
                return Err(refuse(
                    "zone_spares",
                    format!(
                        "zone {index}: {} spares per {region} leave no data in its \
                         {region_sectors} sectors (0..{region_sectors})",
                        spec.spares
                    ),
                ));
            }
            spec.spares * regions
        }
        Sparing::PerZone => spec.spares,
        Sparing::PerZoneSlipToEnd => spec.spares + slip_count,
    };
    let lbn_count = sectors
        .checked_sub(front.saturating_add(reserved))
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            refuse(
                "zone_spares",
                format!(
                    "zone {index}: its {sectors} sectors leave no data after {front} empty at the \
                 front and {reserved} spare or slipped"
                ),
            )
        })?;
    let spt64 = u64::from(spt);
    let (region_lbns, region_sectors, passed_spare_sectors) = match sparing {
        Sparing::PerTrack => (spt64 - spec.spares, spt64, spec.spares * tracks),
        Sparing::PerRange => {
            let per_range = u64::from(range_cylinders) * u64::from(surfaces) * spt64;
            (per_range - spec.spares, per_range, reserved)
        }
        _ => (u64::MAX, sectors, 0),
    };
    let mut zone = Zone {
        first_lbn,
        lbn_count,
        first_cylinder: spec.first_cylinder,
        cylinder_count: spec.cylinder_count,
        sectors_per_track: spt,
        track_skew_sectors: spec.track_skew_sectors % spt,
        cylinder_skew_sectors: spec.cylinder_skew_sectors % spt,
        cylinder_advance_sectors: 0,
        offset_sectors: u64::from(spec.first_block_offset_sectors % spt),
        front_empty_sectors: front,
        slips: spec.slips.clone(),
        slip_keys: spec.slips.iter().enumerate().map(|(i, &slip)| slip - i as u64).collect(),
        defects,
        region_lbns,
        region_sectors,
        passed_spare_sectors,
    };
    zone.cylinder_advance_sectors = (u64::from(surfaces - 1) * u64::from(zone.track_skew_sectors)
        + u64::from(zone.cylinder_skew_sectors))
        % spt64;
    check_slips_and_replacements(index, &zone, sparing, units, unit)?;
    Ok(zone)
}

/// Refuses slips that push a sparing region's LBNs past its end, and replacements that are
/// not spare locations (each must lie past its region's data and be no slip, and with
/// [`Sparing::PerRange`] in its defect's range, as DiskSim takes it modulo the range).
fn check_slips_and_replacements(
    index: usize,
    zone: &Zone,
    sparing: Sparing,
    units: u64,
    unit: &str,
) -> Result<(), LayoutError> {
    let indices = zone.front_empty_sectors + zone.lbn_count;
    // Where region `region`'s data ends (one past its last LBN's location).
    let data_end = |region: u64| -> u64 {
        if sparing == Sparing::Tracks {
            return indices.div_ceil(u64::from(zone.sectors_per_track)) + zone.slips.len() as u64;
        }
        let first = region.saturating_mul(zone.region_lbns);
        if first >= indices {
            return region * zone.region_sectors;
        }
        let last = (first.saturating_add(zone.region_lbns)).min(indices) - 1;
        zone.slot(last).0 + 1
    };
    let region_of = |location: u64| {
        if sparing == Sparing::Tracks { 0 } else { location / zone.region_sectors }
    };
    if sparing != Sparing::Tracks {
        let mut regions: Vec<u64> = zone.slips.iter().map(|&slip| region_of(slip)).collect();
        regions.dedup();
        for region in regions {
            let end = data_end(region);
            if end > (region + 1).saturating_mul(zone.region_sectors).min(units) {
                return Err(refuse(
                    "slips",
                    format!(
                        "zone {index}: the slips push LBNs past the end of their sparing \
                         region ({}); a region takes at most as many slips as it has spare \
                         sectors",
                        match sparing {
                            Sparing::PerTrack => format!("track {region} of the zone"),
                            Sparing::PerRange => format!("range {region} of the zone"),
                            _ => "the zone".to_owned(),
                        }
                    ),
                ));
            }
        }
    }
    let mut replacements: Vec<u64> = Vec::with_capacity(zone.defects.len());
    for &(defect, replacement) in &zone.defects {
        let region = region_of(replacement);
        let end = data_end(region);
        let is_slip = sparing != Sparing::Tracks && zone.slips.binary_search(&replacement).is_ok();
        let other_range = sparing == Sparing::PerRange && region_of(defect) != region;
        if replacement < end || is_slip || other_range {
            return Err(refuse(
                "defects",
                format!(
                    "zone {index}: replacement {replacement} for {defect} is not a spare \
                     {unit} (its region's data ends before {end}; a replacement must be a \
                     spare {unit} past it, no slip, and with per-range in the defect's range)"
                ),
            ));
        }
        replacements.push(replacement);
    }
    replacements.sort_unstable();
    if replacements.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(refuse("defects", format!("zone {index}: two defects share a replacement")));
    }
    Ok(())
}
/// The angle of the boundary before physical sector `index` (which may exceed the track, for
/// spans that wrap past angle 0), in units from angle 0 of the track.
pub(super) fn boundary_units(index: u64, sectors_per_track: u32) -> u64 {
    index * UNITS_PER_REVOLUTION / u64::from(sectors_per_track)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The start of an access as the head must meet it: where the first sector is and the angle
/// of its leading edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Target {
    /// The first LBN.
    pub(super) lbn: u64,
    /// Where it is.
    pub(super) location: Location,
    /// The angle of its leading edge, in units.
    pub(super) angle_units: u64,
}

/// One run's worth of a media transfer: the head arrives on `track` at `on_track` and
/// transfers sectors from `lbn` as they pass under it, up to the end of the run of LBNs on
/// consecutive slots ([`Location::run_sectors`]). A slipped or defective slot ends a run: the
/// next run starts on the same track one slot on, so a transfer waits the sector's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Piece {
    /// The first LBN.
    pub(super) lbn: u64,
    /// Sectors from `lbn` to the end of its run (or of the disk).
    pub(super) sector_count: u32,
    sectors_per_track: u32,
    physical_sector: u32,
    /// `boundary_units(physical_sector)`, kept to save a division per use.
    start_boundary_units: u64,
    /// Where the head was before the piece.
    pub(super) from: Track,
    /// The piece's track.
    pub(super) track: Track,
    /// When the head has settled on `track` (after any seek or head switch).
    pub(super) on_track: Instant,
    /// The first sector starts passing under the head `start_units` rotation units after
    /// `on_track`; negative (by less than one nanosecond's turn) when the head reached the
    /// track a sliver late but counts as on time (see the module doc).
    start_units: i64,
    rpm: u64,
}

impl Piece {
    fn span_units(&self, sector_count: u32) -> u64 {
        let end = u64::from(self.physical_sector) + u64::from(sector_count);
        boundary_units(end, self.sectors_per_track) - self.start_boundary_units
    }

    /// When the first `sector_count` sectors of the piece have passed under the head.
    pub(super) fn time_of(&self, sector_count: u32) -> Instant {
        let units = self.start_units + self.span_units(sector_count) as i64;
        let nanos = if units <= 0 { 0 } else { (units as u64).div_ceil(self.rpm) };
        Instant::from_nanos(self.on_track.as_nanos() + nanos)
    }

    /// When the transfer starts (the end of the rotational wait).
    pub(super) fn transfer_start(&self) -> Instant {
        let units = self.start_units;
        let nanos = if units <= 0 { 0 } else { (units as u64).div_ceil(self.rpm) };
        Instant::from_nanos(self.on_track.as_nanos() + nanos)
    }

    /// When the whole piece has been transferred.
    pub(super) fn end(&self) -> Instant {
        self.time_of(self.sector_count)
    }

    /// How many whole sectors of the piece have passed under the head by `at`.
    pub(super) fn sectors_done_at(&self, at: Instant) -> u32 {
        let Some(elapsed) = at.checked_since(self.on_track) else { return 0 };
        // A piece never lasts two revolutions (at most one of waiting, one of transfer).
        let elapsed_ns = elapsed.as_nanos();
        if elapsed_ns > 2 * UNITS_PER_REVOLUTION / self.rpm + 2 {
            return self.sector_count;
        }
        let turned = (elapsed_ns * self.rpm) as i64 - self.start_units;
        if turned < 0 {
            return 0;
        }
        let spt = u64::from(self.sectors_per_track);
        let start = u64::from(self.physical_sector);
        // The largest j with ⌊j·R/spt⌋ <= reached is ⌈(reached+1)·spt/R⌉ − 1.
        let reached = turned as u64 + self.start_boundary_units;
        let last = ((reached + 1) * spt).div_ceil(UNITS_PER_REVOLUTION) - 1;
        (last.saturating_sub(start)).min(u64::from(self.sector_count)) as u32
    }

    /// The rest of the track after the first `done` sectors, as a piece that starts when
    /// they end with the head already in place; `None` at the end of the track.
    pub(super) fn continuation(&self, done: u32) -> Option<Piece> {
        if done >= self.sector_count {
            return None;
        }
        let reached_units = self.start_units + self.span_units(done) as i64;
        let on_track = self.time_of(done);
        let waited_units = ((on_track.as_nanos() - self.on_track.as_nanos()) * self.rpm) as i64;
        let physical = self.physical_sector + done;
        let physical_sector = if physical >= self.sectors_per_track {
            physical - self.sectors_per_track
        } else {
            physical
        };
        Some(Piece {
            lbn: self.lbn + u64::from(done),
            sector_count: self.sector_count - done,
            sectors_per_track: self.sectors_per_track,
            physical_sector,
            start_boundary_units: boundary_units(
                u64::from(physical_sector),
                self.sectors_per_track,
            ),
            from: self.track,
            track: self.track,
            on_track,
            // In (−rpm, 0]: the head is a sliver past the sector's leading edge.
            start_units: reached_units - waited_units,
            rpm: self.rpm,
        })
    }
}

/// The arm and spindle: geometry, seek curve, head switch and write settle.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Mechanics {
    pub(super) geometry: Geometry,
    pub(super) seek: SeekCurve,
    pub(super) head_switch_ns: u64,
    pub(super) write_settle_ns: u64,
    /// Whether the seek time never falls as the distance grows, so that a scan outward
    /// from the head may stop once the seek alone exceeds the best cost found: see
    /// [`SeekCurve::is_monotone`].
    pub(super) seek_monotone: bool,
    /// The target [`Mechanics::target`] found last.
    pub(super) last_target: TargetMemo,
}

/// The last target found, so that the next one on the same run of slots is derived from it
/// instead of located again: a member of an array is mostly given consecutive stripe units,
/// and the access that continues onto the next track asks for the LBN after the last one.
/// A cache, not state: it is invisible to equality and starts empty.
#[derive(Clone, Debug, Default)]
pub(super) struct TargetMemo(Cell<Option<Target>>);

impl PartialEq for TargetMemo {
    fn eq(&self, _: &TargetMemo) -> bool {
        true
    }
}

/// A planned media access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Access {
    /// When the first sector starts passing under the head.
    pub(super) transfer_start: Instant,
    /// When the last sector has passed.
    pub(super) end: Instant,
    /// The last track's piece and how many of its sectors the access took.
    pub(super) last: Piece,
    /// Sectors of `last` the access transferred.
    pub(super) last_done: u32,
}

impl Access {
    /// Where the head is at the end.
    pub(super) fn track(&self) -> Track {
        self.last.track
    }
}

impl Mechanics {
    /// The time to move the head from `from` to `to`: a seek when the cylinder changes, a
    /// head switch when only the surface does, nothing otherwise; writes add the settle time
    /// whenever the head moved.
    pub(super) fn switch_ns(&self, from: Track, to: Track, write: bool) -> u64 {
        let seek_ns = self.seek.seek_ns(from.cylinder.abs_diff(to.cylinder));
        self.switch_with_seek_ns(from, to, write, seek_ns)
    }

    /// [`Mechanics::switch_ns`] with the seek time for the cylinder distance already known.
    pub(super) fn switch_with_seek_ns(
        &self,
        from: Track,
        to: Track,
        write: bool,
        seek_ns: u64,
    ) -> u64 {
        let moved = if from.cylinder != to.cylinder {
            seek_ns
        } else if from.surface != to.surface {
            self.head_switch_ns
        } else {
            return 0;
        };
        moved + if write { self.write_settle_ns } else { 0 }
    }

    /// Where the head must be, and at what angle, to start on `lbn`.
    ///
    /// An LBN `d` on from the last target, within its run ([`Location::run_sectors`]: LBNs
    /// on consecutive slots of one track), is `d` slots on along the same track: the same
    /// track and skew, its slot and physical sector `d` on (the physical one modulo the
    /// track), its run `d` shorter (every bound of the run, the track's end, the next slip
    /// or defect, the region's and the zone's end, is `d` nearer). That is exactly what
    /// [`Geometry::locate`] finds, without its zone search and divisions.
    pub(super) fn target(&self, lbn: u64) -> Target {
        let location = match self.last_target.0.get() {
            Some(last) if lbn.wrapping_sub(last.lbn) < u64::from(last.location.run_sectors) => {
                let on = (lbn - last.lbn) as u32;
                let from = last.location;
                let mut physical_sector = from.physical_sector + on;
                if physical_sector >= from.sectors_per_track {
                    physical_sector -= from.sectors_per_track;
                }
                Location {
                    track: from.track,
                    sectors_per_track: from.sectors_per_track,
                    sector_in_track: from.sector_in_track + on,
                    physical_sector,
                    run_sectors: from.run_sectors - on,
                }
            }
            _ => self.geometry.locate(lbn),
        };
        let angle_units =
            boundary_units(u64::from(location.physical_sector), location.sectors_per_track);
        let target = Target { lbn, location, angle_units };
        self.last_target.0.set(Some(target));
        target
    }

    /// The rotational offset from the head arriving at `on_track` to `angle_units` passing
    /// under it: see [`Piece::start_units`].
    fn wait_units(&self, on_track: Instant, angle_units: u64) -> i64 {
        self.wait_from_angle_units(self.geometry.angle_units(on_track), angle_units)
    }

    /// [`Mechanics::wait_units`] from the platter's angle when the head arrives.
    fn wait_from_angle_units(&self, angle: u64, angle_units: u64) -> i64 {
        let mut late = angle + UNITS_PER_REVOLUTION - angle_units;
        if late >= UNITS_PER_REVOLUTION {
            late -= UNITS_PER_REVOLUTION;
        }
        if late < self.geometry.rpm { -(late as i64) } else { (UNITS_PER_REVOLUTION - late) as i64 }
    }

    /// Positioning time (switch plus rotational wait) to start transferring at `target`: the
    /// reference that [`Mechanics::positioning_from_angle_ns`] is tested against.
    #[cfg(test)]
    pub(super) fn positioning_ns(
        &self,
        from: Track,
        at: Instant,
        target: Target,
        write: bool,
    ) -> u64 {
        self.positioning_from_angle_ns(from, self.geometry.angle_units(at), target, write)
    }

    /// [`Mechanics::positioning_ns`] with the platter's angle at the start already known:
    /// a scheduler comparing many targets from one moment computes the angle once and
    /// advances it by each switch time, which saves two 64-bit divisions per target.
    #[cfg(test)]
    pub(super) fn positioning_from_angle_ns(
        &self,
        from: Track,
        angle_at_units: u64,
        target: Target,
        write: bool,
    ) -> u64 {
        let switch_ns = self.switch_ns(from, target.location.track, write);
        self.positioning_within_ns(switch_ns, angle_at_units, target, u64::MAX)
            .expect("any positioning is within u64::MAX")
    }

    /// The positioning time given the switch time, if it is at most `limit_ns`; `None`
    /// (without the division that the exact figure costs) when it is more. A scan for the
    /// cheapest target passes the best cost so far, and most targets lose on this test.
    pub(super) fn positioning_within_ns(
        &self,
        switch_ns: u64,
        angle_at_units: u64,
        target: Target,
        limit_ns: u64,
    ) -> Option<u64> {
        let budget_ns = limit_ns.checked_sub(switch_ns)?;
        let rpm = self.geometry.rpm;
        // (t + s)·rpm ≡ t·rpm + s·rpm (mod one revolution). Switch times are a few
        // revolutions at most, so subtracting is cheaper than a division; the product
        // cannot overflow (a switch is far below the 10⁵ s that would take).
        let mut angle = angle_at_units + switch_ns * rpm;
        if angle >= 8 * UNITS_PER_REVOLUTION {
            angle %= UNITS_PER_REVOLUTION;
        }
        while angle >= UNITS_PER_REVOLUTION {
            angle -= UNITS_PER_REVOLUTION;
        }
        let wait_units = self.wait_from_angle_units(angle, target.angle_units);
        if wait_units <= 0 {
            return Some(switch_ns);
        }
        let wait_units = wait_units as u64;
        // ⌈w / rpm⌉ ≤ budget exactly when w ≤ budget·rpm.
        if budget_ns.checked_mul(rpm).is_some_and(|most| wait_units > most) {
            return None;
        }
        Some(switch_ns + wait_units.div_ceil(rpm))
    }

    /// The piece starting at `lbn` with the head at `from` and free at `at`.
    pub(super) fn piece(&self, from: Track, at: Instant, lbn: u64, write: bool) -> Piece {
        self.piece_to(from, at, self.target(lbn), write)
    }

    /// The piece starting at `target` with the head at `from` and free at `at`.
    pub(super) fn piece_to(&self, from: Track, at: Instant, target: Target, write: bool) -> Piece {
        let location = target.location;
        let on_track =
            Instant::from_nanos(at.as_nanos() + self.switch_ns(from, location.track, write));
        let to_disk_end = self.geometry.capacity_sectors - target.lbn;
        Piece {
            lbn: target.lbn,
            sector_count: u64::from(location.run_sectors).min(to_disk_end) as u32,
            sectors_per_track: location.sectors_per_track,
            physical_sector: location.physical_sector,
            start_boundary_units: target.angle_units,
            from,
            track: location.track,
            on_track,
            start_units: self.wait_units(on_track, target.angle_units),
            rpm: self.geometry.rpm,
        }
    }

    /// Plans a transfer of `sector_count` sectors from `lbn`, head at `from`, free at `at`:
    /// position, then run by run with a head or cylinder switch (none between runs of one
    /// track) and a rotational wait before each run: the time slipped, spare and skew
    /// sectors take to pass under the head.
    pub(super) fn access(
        &self,
        from: Track,
        at: Instant,
        target: Target,
        sector_count: u64,
        write: bool,
    ) -> Access {
        debug_assert!(
            sector_count > 0 && target.lbn + sector_count <= self.geometry.capacity_sectors
        );
        let mut piece = self.piece_to(from, at, target, write);
        let transfer_start = piece.transfer_start();
        let mut remaining = sector_count;
        loop {
            let now = remaining.min(u64::from(piece.sector_count)) as u32;
            let end = piece.time_of(now);
            remaining -= u64::from(now);
            if remaining == 0 {
                return Access { transfer_start, end, last: piece, last_done: now };
            }
            piece = self.piece(piece.track, end, piece.lbn + u64::from(now), write);
        }
    }
}
