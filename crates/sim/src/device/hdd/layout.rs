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
//! LBNs fill a track, then the next surface of the same cylinder, then the next cylinder
//! (DiskSim's traditional layout), zone by zone from the outer edge inwards. Logical sector 0
//! of each track is rotated from the previous track's by the track skew (a head switch) or the
//! cylinder skew (a cylinder switch), so that a sequential transfer finds its next sector
//! arriving just as the head is ready. Each zone restarts the skew pattern at angle 0. No
//! spare sectors or slipped defects are modelled.

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

/// A zone: cylinders that share a sectors-per-track count.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Zone {
    /// Its first LBN.
    pub(super) first_lbn: u64,
    /// Its first cylinder.
    pub(super) first_cylinder: u32,
    /// How many cylinders it has.
    pub(super) cylinder_count: u32,
    /// Sectors on each of its tracks.
    pub(super) sectors_per_track: u32,
    /// Rotation of a track's sector 0 from the previous surface's, in sectors.
    pub(super) track_skew_sectors: u32,
    /// Rotation of a cylinder's first track from the previous cylinder's last, in sectors.
    pub(super) cylinder_skew_sectors: u32,
    /// The skew of one whole cylinder (every head switch plus the cylinder switch) modulo a
    /// track, so that cylinder `k` of the zone starts `k` times this from angle 0.
    cylinder_advance_sectors: u64,
}

/// Where an LBN is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Location {
    /// Its track.
    pub(super) track: Track,
    /// Sectors on that track.
    pub(super) sectors_per_track: u32,
    /// Its logical index on the track (LBN order).
    pub(super) sector_in_track: u32,
    /// Its physical slot on the track, counted from angle 0 (logical index plus skew).
    pub(super) physical_sector: u32,
}

/// The platters: zones, surfaces and spindle speed.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Geometry {
    zones: Vec<Zone>,
    surfaces: u32,
    rpm: u64,
    capacity_sectors: u64,
    /// The period of `t ↦ (t·rpm) mod UNITS_PER_REVOLUTION` in ns, so that the angle is
    /// computed from `t mod period` without overflow.
    angle_period_ns: u64,
}

/// A zone as given: cylinders and sectors per track, plus the skews in sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ZoneSpec {
    /// Cylinders.
    pub(super) cylinder_count: u32,
    /// Sectors per track.
    pub(super) sectors_per_track: u32,
    /// Track skew in sectors.
    pub(super) track_skew_sectors: u32,
    /// Cylinder skew in sectors.
    pub(super) cylinder_skew_sectors: u32,
}

impl Geometry {
    /// Lays out `zones` (outer first) on `surfaces` surfaces spinning at `rpm`.
    pub(super) fn new(zones: &[ZoneSpec], surfaces: u32, rpm: u32) -> Geometry {
        assert!(!zones.is_empty() && surfaces > 0 && rpm > 0, "checked by the caller");
        let mut laid = Vec::with_capacity(zones.len());
        let (mut lbn, mut cylinder) = (0u64, 0u32);
        for spec in zones {
            assert!(spec.cylinder_count > 0 && spec.sectors_per_track > 0);
            let spt = spec.sectors_per_track;
            let track_skew_sectors = spec.track_skew_sectors % spt;
            let cylinder_skew_sectors = spec.cylinder_skew_sectors % spt;
            let cylinder_advance_sectors = (u64::from(surfaces - 1)
                * u64::from(track_skew_sectors)
                + u64::from(cylinder_skew_sectors))
                % u64::from(spt);
            let zone = Zone {
                first_lbn: lbn,
                first_cylinder: cylinder,
                cylinder_count: spec.cylinder_count,
                sectors_per_track: spt,
                track_skew_sectors,
                cylinder_skew_sectors,
                cylinder_advance_sectors,
            };
            lbn += u64::from(spt) * u64::from(surfaces) * u64::from(zone.cylinder_count);
            cylinder += zone.cylinder_count;
            laid.push(zone);
        }
        let rpm = u64::from(rpm);
        let angle_period_ns = UNITS_PER_REVOLUTION / gcd(UNITS_PER_REVOLUTION, rpm);
        Geometry { zones: laid, surfaces, rpm, capacity_sectors: lbn, angle_period_ns }
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
        self.zones.iter().map(|zone| zone.cylinder_count).sum()
    }

    /// Revolutions per minute.
    pub(super) fn rpm(&self) -> u64 {
        self.rpm
    }

    /// Where `lbn` is. `lbn` must be below the capacity.
    pub(super) fn locate(&self, lbn: u64) -> Location {
        debug_assert!(lbn < self.capacity_sectors);
        let index = self.zones.partition_point(|zone| zone.first_lbn <= lbn) - 1;
        let zone = &self.zones[index];
        let spt = u64::from(zone.sectors_per_track);
        let within = lbn - zone.first_lbn;
        let track_in_zone = within / spt;
        let sector_in_track = within - track_in_zone * spt;
        let surfaces = u64::from(self.surfaces);
        let cylinder_in_zone = track_in_zone / surfaces;
        let surface = track_in_zone - cylinder_in_zone * surfaces;
        // At most 10^7 cylinders times a skew below 10^5 sectors: no overflow.
        let offset = (cylinder_in_zone * zone.cylinder_advance_sectors
            + surface * u64::from(zone.track_skew_sectors))
            % spt;
        let mut physical_sector = sector_in_track + offset;
        if physical_sector >= spt {
            physical_sector -= spt;
        }
        Location {
            track: Track {
                cylinder: zone.first_cylinder + cylinder_in_zone as u32,
                surface: surface as u32,
            },
            sectors_per_track: zone.sectors_per_track,
            sector_in_track: sector_in_track as u32,
            physical_sector: physical_sector as u32,
        }
    }

    /// The platter's angle at `at`, in units within one revolution.
    pub(super) fn angle_units(&self, at: Instant) -> u64 {
        (at.as_nanos() % self.angle_period_ns) * self.rpm % UNITS_PER_REVOLUTION
    }
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

/// One track's worth of a media transfer: the head arrives on `track` at `on_track` and
/// transfers sectors from `lbn` towards the end of the track as they pass under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Piece {
    /// The first LBN.
    pub(super) lbn: u64,
    /// Sectors from `lbn` to the end of its track (or of the disk).
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
    pub(super) fn target(&self, lbn: u64) -> Target {
        let location = self.geometry.locate(lbn);
        let angle_units =
            boundary_units(u64::from(location.physical_sector), location.sectors_per_track);
        Target { lbn, location, angle_units }
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
        let to_track_end = u64::from(location.sectors_per_track - location.sector_in_track);
        let to_disk_end = self.geometry.capacity_sectors - target.lbn;
        Piece {
            lbn: target.lbn,
            sector_count: to_track_end.min(to_disk_end) as u32,
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
    /// position, then track by track with a head or cylinder switch and a rotational wait
    /// between tracks.
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
