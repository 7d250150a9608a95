//! `zoned`: a zoned block device — host-managed SMR (SCSI ZBC / ATA ZAC) or an NVMe ZNS SSD.
//!
//! The device's LBA space is cut into zones of `zone_size` bytes. The first
//! `conventional_zones` are conventional (written anywhere, like any disk); the rest are
//! *sequential write required*: each has a write pointer, and a write must start exactly at it
//! (ZBC-2 §4.4.3.3 "sequential write required zones"; NVMe ZNS 1.0 §2.1.1). A zone takes
//! writes up to its `zone_capacity` (ZNS zones may be shorter than their size; ZBC zones are
//! not). A zone is in one of the states (ZBC "conditions") EMPTY, IMPLICITLY OPENED,
//! EXPLICITLY OPENED, CLOSED and FULL:
//!
//! * a write to an EMPTY or CLOSED zone opens it implicitly; when `max_open_zones` zones are
//!   already open, the device first closes an implicitly opened one (ZBC-2 §4.4.3.4.2; ZNS
//!   §2.1.1.4.1), or fails the write when all open ones were opened explicitly;
//! * opening an EMPTY zone makes it *active* (open or closed: ZNS's active resources); when
//!   `max_active_zones` are active the write fails (ZNS §2.1.1.4.2; ZBC has no such limit: 0);
//! * the write pointer reaching the zone's capacity makes the zone FULL (no longer open or
//!   active); a FULL zone refuses writes;
//! * a zone *reset* empties it (write pointer back at its start); a *finish* fills it.
//!
//! A write that breaks these rules fails: it completes at once without touching the media and
//! is counted in `zone_write_errors` (the drive's "unaligned write command" / ZNS "zone
//! invalid write" errors). Reads are served anywhere (ZBC's URSWRZ: a read beyond the write
//! pointer returns the initialisation pattern).
//!
//! The timing of what is accepted is the `media` device's, an `hdd` or `ssd` preset that runs
//! underneath.
//!
//! # Keys
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `media` | desktop-7200-2005 | `hdd` or `ssd` preset giving the timing and the raw capacity |
//! | `zone_size` | 256m | bytes per zone |
//! | `zone_capacity` | = `zone_size` | writable bytes of each sequential zone (ZNS) |
//! | `conventional_zones` | 0 | zones at the start written anywhere |
//! | `max_open_zones` | 0 | open zones at once (0: no limit) |
//! | `max_active_zones` | 0 | open or closed zones at once (0: no limit) |
//! | `driver` | generic | the driver in front of it |
//!
//! # Deviations from the standards
//!
//! * The simulator's command set has no zone-management commands: a **discard starting at a
//!   sequential zone's first sector is its zone reset** (`BLKRESETZONE`, REQ_OP_ZONE_RESET,
//!   which carries only that sector); one spanning several whole zones resets them all. Any
//!   other discard of a sequential zone fails like a bad write. Open, close and finish exist as
//!   methods of [`Zones`] only, for the host side and tests.
//! * The capacity is the `media` preset's, rounded down to whole zones; the media's mechanics
//!   (an `hdd`'s seek, an `ssd`'s FTL and garbage collection) are those of a conventional drive.
//!   A real SMR disk's shingled bands and a ZNS drive's zone-to-erase-block mapping are not
//!   modelled: only the zone rules are.
//! * The device starts with every sequential zone EMPTY.

use elevator_core::{Instant, KeyKind, KeySpec, Op, ParamError, Params, SECTOR_SIZE_BYTES};

use super::{Command, CommandId, DeviceModel, DeviceSpec, DeviceStats, Preset};

/// One line for `elevator list devices`.
pub const SUMMARY: &str = "zoned device (host-managed SMR, ZNS): write pointers, zone states and \
                           open/active limits over an hdd or ssd preset";

/// The keys of `zoned`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "media",
        kind: KeyKind::Text,
        default: "desktop-7200-2005",
        help: "an hdd or ssd preset (no keys) giving the timing and raw capacity",
    },
    KeySpec {
        key: "zone_size",
        kind: KeyKind::Size { min_bytes: 1 << 20, max_bytes: 1 << 40 },
        default: "256m",
        help: "bytes per zone",
    },
    KeySpec {
        key: "zone_capacity",
        kind: KeyKind::Size { min_bytes: 1 << 20, max_bytes: 1 << 40 },
        default: "",
        help: "writable bytes of each sequential zone (unset: the zone size)",
    },
    KeySpec {
        key: "conventional_zones",
        kind: KeyKind::Integer { min: 0, max: 1 << 30 },
        default: "0",
        help: "zones at the start of the device that take writes anywhere",
    },
    KeySpec {
        key: "max_open_zones",
        kind: KeyKind::Integer { min: 0, max: 1 << 30 },
        default: "0",
        help: "zones open at once (0: no limit)",
    },
    KeySpec {
        key: "max_active_zones",
        kind: KeyKind::Integer { min: 0, max: 1 << 30 },
        default: "0",
        help: "zones open or closed at once (0: no limit)",
    },
    super::driver::DRIVER_KEY,
];

/// The presets; the first is what bare `zoned` means.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "smr-hm-2016",
        help: "a host-managed SMR SATA disk of 2016, after the HGST Ultrastar Archive Ha10 \
               (HSH721010AL, 10 TB, ZAC): 256 MiB zones (the Ha10 datasheet; fio's \
               zbd-*.fio examples use its 256M zones), 524 conventional zones at the start \
               (the zone fio's zbd-seq-read.fio starts at is the first sequential one) [U], \
               128 open zones (its reported 'maximum number of open sequential write \
               required zones') [U], no active limit (ZBC has none). Timing and capacity \
               from desktop-7200-2005 (500 GB, so 1862 zones): no 10 TB hdd preset exists; \
               AHCI with NCQ 31",
        values: &[
            ("media", "desktop-7200-2005"),
            ("zone_size", "256m"),
            ("conventional_zones", "524"),
            ("max_open_zones", "128"),
            ("driver", "ahci"),
        ],
    },
    Preset {
        name: "zns-2020",
        help: "an NVMe ZNS SSD after the Western Digital Ultrastar DC ZN540 (2020): zones of \
               2048 MiB with a capacity of 1077 MiB, 14 open and 14 active zones (its \
               datasheet and zonedstorage.io's device table) [U]; no conventional zones (ZNS \
               has none). Timing and capacity from the `nvme` preset (476 GiB: 238 zones)",
        values: &[
            ("media", "nvme"),
            ("zone_size", "2g"),
            ("zone_capacity", "1077m"),
            ("conventional_zones", "0"),
            ("max_open_zones", "14"),
            ("max_active_zones", "14"),
        ],
    },
];

/// A zone's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneType {
    /// Written anywhere; no write pointer.
    Conventional,
    /// Written only at its write pointer.
    SequentialRequired,
}

/// A sequential zone's state (ZBC "zone condition", ZNS "zone state").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// Conventional zones are always here (ZBC "not write pointer").
    NotWritePointer,
    /// Write pointer at the start.
    Empty,
    /// Opened by a write.
    ImplicitlyOpen,
    /// Opened by an open command.
    ExplicitlyOpen,
    /// Written, then closed; still active.
    Closed,
    /// No more writes until reset.
    Full,
}

impl ZoneState {
    fn open(self) -> bool {
        matches!(self, ZoneState::ImplicitlyOpen | ZoneState::ExplicitlyOpen)
    }

    fn active(self) -> bool {
        self.open() || self == ZoneState::Closed
    }
}

/// One zone, in sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// First sector.
    pub start_sector: u64,
    /// Conventional or sequential.
    pub kind: ZoneType,
    /// Its state.
    pub state: ZoneState,
    /// Next sector a write must start at (sequential zones).
    pub write_pointer_sector: u64,
}

/// Why a zone command failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneError {
    /// The write does not start at the zone's write pointer.
    NotAtWritePointer,
    /// The write runs past the zone's capacity (or into the next zone).
    BeyondCapacity,
    /// The zone is full.
    Full,
    /// Opening it would exceed `max_open_zones` (all open zones were opened explicitly).
    TooManyOpen,
    /// Opening it would exceed `max_active_zones`.
    TooManyActive,
    /// The command touches part of a sequential zone where it must cover it whole, or a
    /// conventional zone where a sequential one is needed.
    BadRange,
}

/// The zone layout and states of a device: the zone state machine.
#[derive(Clone, Debug)]
pub struct Zones {
    zone_size_sectors: u64,
    zone_capacity_sectors: u64,
    max_open: u32,
    max_active: u32,
    zones: Vec<Zone>,
    /// Implicitly opened zones in the order they were opened, the oldest first: the one the
    /// device closes to open another (ZBC leaves the choice to the device; the oldest is what
    /// libzbc's emulation and null_blk close).
    implicit_open: Vec<usize>,
}

impl Zones {
    /// `count` zones of `zone_size_sectors`, the first `conventional` of them conventional.
    pub fn new(
        count: u64,
        zone_size_sectors: u64,
        zone_capacity_sectors: u64,
        conventional: u64,
        max_open: u32,
        max_active: u32,
    ) -> Zones {
        let zones = (0..count)
            .map(|index| {
                let start_sector = index * zone_size_sectors;
                let conventional = index < conventional;
                Zone {
                    start_sector,
                    kind: if conventional {
                        ZoneType::Conventional
                    } else {
                        ZoneType::SequentialRequired
                    },
                    state: if conventional { ZoneState::NotWritePointer } else { ZoneState::Empty },
                    write_pointer_sector: start_sector,
                }
            })
            .collect();
        Zones {
            zone_size_sectors,
            zone_capacity_sectors,
            max_open,
            max_active,
            zones,
            implicit_open: Vec::new(),
        }
    }

    /// Sectors per zone.
    pub fn zone_size_sectors(&self) -> u64 {
        self.zone_size_sectors
    }

    /// Writable sectors of a sequential zone.
    pub fn zone_capacity_sectors(&self) -> u64 {
        self.zone_capacity_sectors
    }

    /// Sectors of the conventional zones at the start.
    pub fn conventional_sectors(&self) -> u64 {
        let count =
            self.zones.iter().take_while(|zone| zone.kind == ZoneType::Conventional).count();
        count as u64 * self.zone_size_sectors
    }

    /// The most zones open at once (0: no limit).
    pub fn max_open_zones(&self) -> u32 {
        self.max_open
    }

    /// The kernel's write ordering for this layout.
    pub fn write_order(&self) -> elevator_core::ZoneWriteOrder {
        elevator_core::ZoneWriteOrder {
            zone_size_sectors: self.zone_size_sectors,
            conventional_sectors: self.conventional_sectors(),
        }
    }

    /// Every zone, in LBA order (a zone report).
    pub fn report(&self) -> &[Zone] {
        &self.zones
    }

    /// The zone holding `sector`.
    pub fn zone_of(&self, sector: u64) -> Option<usize> {
        let index = (sector / self.zone_size_sectors) as usize;
        (index < self.zones.len()).then_some(index)
    }

    /// Zones open now.
    pub fn open_count(&self) -> usize {
        self.zones.iter().filter(|zone| zone.state.open()).count()
    }

    /// Zones open or closed now.
    pub fn active_count(&self) -> usize {
        self.zones.iter().filter(|zone| zone.state.active()).count()
    }

    /// Makes room and opens zone `index`, implicitly or explicitly.
    fn open(&mut self, index: usize, explicit: bool) -> Result<(), ZoneError> {
        let state = self.zones[index].state;
        match state {
            ZoneState::Full => return Err(ZoneError::Full),
            ZoneState::NotWritePointer => return Err(ZoneError::BadRange),
            ZoneState::ExplicitlyOpen => return Ok(()),
            ZoneState::ImplicitlyOpen if !explicit => return Ok(()),
            ZoneState::ImplicitlyOpen => {
                self.implicit_open.retain(|&open| open != index);
                self.zones[index].state = ZoneState::ExplicitlyOpen;
                return Ok(());
            }
            ZoneState::Empty | ZoneState::Closed => {}
        }
        if state == ZoneState::Empty
            && self.max_active > 0
            && self.active_count() >= self.max_active as usize
        {
            return Err(ZoneError::TooManyActive);
        }
        if self.max_open > 0 && self.open_count() >= self.max_open as usize {
            // Close the oldest implicitly opened zone; explicit ones stay open.
            if self.implicit_open.is_empty() {
                return Err(ZoneError::TooManyOpen);
            }
            let oldest = self.implicit_open.remove(0);
            self.zones[oldest].state = ZoneState::Closed;
        }
        if explicit {
            self.zones[index].state = ZoneState::ExplicitlyOpen;
        } else {
            self.zones[index].state = ZoneState::ImplicitlyOpen;
            self.implicit_open.push(index);
        }
        Ok(())
    }

    /// Explicitly opens sequential zone `index` (ZBC OPEN ZONE).
    pub fn open_zone(&mut self, index: usize) -> Result<(), ZoneError> {
        self.open(index, true)
    }

    /// Closes an open zone (ZBC CLOSE ZONE); an empty one it was never written goes back to
    /// EMPTY.
    pub fn close_zone(&mut self, index: usize) {
        let zone = &mut self.zones[index];
        if zone.state.open() {
            zone.state = if zone.write_pointer_sector == zone.start_sector {
                ZoneState::Empty
            } else {
                ZoneState::Closed
            };
            self.implicit_open.retain(|&open| open != index);
        }
    }

    /// Fills a sequential zone (ZBC FINISH ZONE): write pointer at its end, FULL.
    pub fn finish_zone(&mut self, index: usize) {
        let capacity = self.zone_capacity_sectors;
        let zone = &mut self.zones[index];
        if zone.kind == ZoneType::SequentialRequired {
            zone.state = ZoneState::Full;
            zone.write_pointer_sector = zone.start_sector + capacity;
            self.implicit_open.retain(|&open| open != index);
        }
    }

    /// Empties a sequential zone (ZBC RESET WRITE POINTER).
    pub fn reset_zone(&mut self, index: usize) {
        let zone = &mut self.zones[index];
        if zone.kind == ZoneType::SequentialRequired {
            zone.state = ZoneState::Empty;
            zone.write_pointer_sector = zone.start_sector;
            self.implicit_open.retain(|&open| open != index);
        }
    }

    /// Checks and applies a write of `sector_count` sectors at `start`: the write pointer moves
    /// past it (the zone opens, and fills at its capacity). Conventional zones take anything.
    pub fn write(&mut self, start: u64, sector_count: u64) -> Result<(), ZoneError> {
        let index = self.zone_of(start).ok_or(ZoneError::BadRange)?;
        let zone = self.zones[index];
        let end = start + sector_count;
        if zone.kind == ZoneType::Conventional {
            // A write may not cross from a conventional into a sequential zone.
            let last = self.zone_of(end.saturating_sub(1).max(start)).ok_or(ZoneError::BadRange)?;
            return match self.zones[last].kind {
                ZoneType::Conventional => Ok(()),
                ZoneType::SequentialRequired => Err(ZoneError::BadRange),
            };
        }
        if zone.state == ZoneState::Full {
            return Err(ZoneError::Full);
        }
        if start != zone.write_pointer_sector {
            return Err(ZoneError::NotAtWritePointer);
        }
        if end > zone.start_sector + self.zone_capacity_sectors {
            return Err(ZoneError::BeyondCapacity);
        }
        self.open(index, false)?;
        let zone = &mut self.zones[index];
        zone.write_pointer_sector = end;
        if end == zone.start_sector + self.zone_capacity_sectors {
            zone.state = ZoneState::Full;
            self.implicit_open.retain(|&open| open != index);
        }
        Ok(())
    }

    /// A zone reset as it arrives: a discard starting at a sequential zone's first sector
    /// resets that zone (REQ_OP_ZONE_RESET carries only the zone's start sector), or every
    /// zone it covers when it spans several whole zones; any other discard of a sequential
    /// zone is refused.
    pub fn reset_range(&mut self, start: u64, sector_count: u64) -> Result<(), ZoneError> {
        let size = self.zone_size_sectors;
        if sector_count == 0 || start % size != 0 {
            return Err(ZoneError::BadRange);
        }
        let first = self.zone_of(start).ok_or(ZoneError::BadRange)?;
        let zones = sector_count.div_ceil(size);
        if zones > 1 && sector_count % size != 0 {
            return Err(ZoneError::BadRange);
        }
        let last = first + zones as usize - 1;
        if last >= self.zones.len()
            || self.zones[first..=last].iter().any(|zone| zone.kind == ZoneType::Conventional)
        {
            return Err(ZoneError::BadRange);
        }
        for index in first..=last {
            self.reset_zone(index);
        }
        Ok(())
    }
}

/// A zoned device: the zone rules in front of a media model.
#[derive(Debug)]
pub struct Zoned {
    media: Box<dyn DeviceModel>,
    media_name: String,
    zones: Zones,
    /// Commands finished at once: those that failed a zone rule, and zone resets.
    at_once: Vec<CommandId>,
    at_once_since: Option<Instant>,
    write_errors: u64,
    resets: u64,
    /// Commands finished at once so far.
    finished_at_once: u64,
}

impl Zoned {
    /// A zoned device from checked parameters.
    pub fn from_params(params: &Params) -> Result<Zoned, ParamError> {
        let media_name = params.text("media");
        let media_spec = DeviceSpec::parse(media_name).map_err(|error| {
            params.impossible("media", format!("`{media_name}` is not a device preset: {error}"))
        })?;
        if !matches!(media_spec.kind(), super::DeviceKind::Hdd | super::DeviceKind::Ssd) {
            return Err(params.impossible("media", "name an hdd or ssd preset"));
        }
        let media = media_spec.build()?;
        let zone_size_sectors = params.size("zone_size") / SECTOR_SIZE_BYTES;
        let zone_capacity_sectors = if params.has("zone_capacity") {
            params.size("zone_capacity") / SECTOR_SIZE_BYTES
        } else {
            zone_size_sectors
        };
        if zone_capacity_sectors > zone_size_sectors {
            // A preset's capacity (zns-2020's 1077m) stays when only `zone_size` is given.
            return Err(params.impossible(
                "zone_capacity",
                format!(
                    "{} bytes is larger than zone_size ({} bytes); give zone_capacity too \
                     (at most zone_size; e.g. zone_size=128m,zone_capacity=128m)",
                    params.size("zone_capacity"),
                    params.size("zone_size")
                ),
            ));
        }
        let count = media.capacity_sectors() / zone_size_sectors;
        let conventional = params.integer("conventional_zones") as u64;
        if count == 0 || conventional > count {
            return Err(params.impossible(
                "conventional_zones",
                format!("the media holds {count} zones of zone_size"),
            ));
        }
        let zones = Zones::new(
            count,
            zone_size_sectors,
            zone_capacity_sectors,
            conventional,
            params.integer("max_open_zones") as u32,
            params.integer("max_active_zones") as u32,
        );
        Ok(Zoned {
            media,
            media_name: media_name.to_owned(),
            zones,
            at_once: Vec::new(),
            at_once_since: None,
            write_errors: 0,
            resets: 0,
            finished_at_once: 0,
        })
    }

    /// The zones and their states.
    pub fn zones(&self) -> &Zones {
        &self.zones
    }

    fn fail(&mut self, now: Instant, id: CommandId) {
        self.write_errors += 1;
        self.at_once.push(id);
        self.at_once_since.get_or_insert(now);
    }
}

impl DeviceModel for Zoned {
    fn describe(&self) -> String {
        format!(
            "zoned: {} zones of {} ({} conventional), open {}, active {}, over {}",
            self.zones.zones.len(),
            elevator_core::format_size(self.zones.zone_size_sectors * SECTOR_SIZE_BYTES),
            self.zones.zones.iter().filter(|zone| zone.kind == ZoneType::Conventional).count(),
            self.zones.max_open,
            self.zones.max_active,
            self.media_name
        )
    }

    fn capacity_sectors(&self) -> u64 {
        self.zones.zones.len() as u64 * self.zones.zone_size_sectors
    }

    fn queue_depth(&self) -> u32 {
        self.media.queue_depth()
    }

    fn rotational(&self) -> bool {
        self.media.rotational()
    }

    fn submit(&mut self, now: Instant, command: Command) {
        let checked = match command.op {
            Op::Write => self.zones.write(command.start.0, u64::from(command.sector_count)),
            Op::Discard => {
                let result =
                    self.zones.reset_range(command.start.0, u64::from(command.sector_count));
                if result.is_ok() {
                    self.resets += 1;
                    // A reset moves no data: it finishes at once.
                    self.at_once.push(command.id);
                    self.at_once_since.get_or_insert(now);
                    return;
                }
                result
            }
            Op::Read | Op::Flush => Ok(()),
        };
        match checked {
            Ok(()) => self.media.submit(now, command),
            Err(_) => self.fail(now, command.id),
        }
    }

    fn next_event(&self) -> Option<Instant> {
        match (self.at_once_since, self.media.next_event()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: Instant, finished: &mut Vec<CommandId>) {
        if self.at_once_since.is_some_and(|at| at <= now) {
            self.finished_at_once += self.at_once.len() as u64;
            finished.append(&mut self.at_once);
            self.at_once_since = None;
        }
        if self.media.next_event().is_some_and(|at| at <= now) {
            self.media.advance(now, finished);
        }
    }

    fn zones(&self) -> Option<&Zones> {
        Some(&self.zones)
    }

    fn stats(&self) -> DeviceStats {
        let mut stats = self.media.stats();
        // Refused writes and resets finished too, without reaching the media.
        stats.commands += self.finished_at_once;
        stats.extra.push(("zone_write_errors", self.write_errors));
        stats.extra.push(("zone_resets", self.resets));
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Probe;
    use elevator_core::Sector;

    /// Four zones of 8 sectors (capacity 6), the first conventional; 2 open, 2 active.
    fn zones() -> Zones {
        Zones::new(4, 8, 6, 1, 2, 2)
    }

    // Proves the write pointer advances by each write, a write elsewhere in the zone fails,
    // the zone fills at its capacity (not its size) and then refuses writes, and a reset
    // empties it so that writing starts over at the zone's start.
    #[test]
    fn write_pointer_advances_fills_and_resets() {
        let mut zones = zones();
        assert_eq!(zones.write(8, 2), Ok(()));
        assert_eq!(zones.report()[1].write_pointer_sector, 10);
        assert_eq!(zones.report()[1].state, ZoneState::ImplicitlyOpen);
        assert_eq!(zones.write(8, 2), Err(ZoneError::NotAtWritePointer));
        assert_eq!(zones.write(11, 1), Err(ZoneError::NotAtWritePointer));
        assert_eq!(zones.write(10, 5), Err(ZoneError::BeyondCapacity));
        assert_eq!(zones.write(10, 4), Ok(()));
        assert_eq!(zones.report()[1].state, ZoneState::Full);
        assert_eq!(zones.open_count(), 0, "a full zone is no longer open");
        assert_eq!(zones.write(14, 1), Err(ZoneError::Full));
        assert_eq!(zones.reset_range(8, 8), Ok(()));
        assert_eq!(zones.report()[1].state, ZoneState::Empty);
        assert_eq!(zones.write(8, 6), Ok(()));
        // Conventional zones take writes anywhere, but not across into a sequential zone.
        assert_eq!(zones.write(5, 2), Ok(()));
        assert_eq!(zones.write(3, 2), Ok(()));
        assert_eq!(zones.write(6, 4), Err(ZoneError::BadRange));
        assert_eq!(zones.reset_range(0, 8), Err(ZoneError::BadRange));
        assert_eq!(zones.reset_range(17, 4), Err(ZoneError::BadRange));
        assert_eq!(zones.reset_range(16, 12), Err(ZoneError::BadRange), "1.5 zones");
        zones.write(16, 3).unwrap();
        assert_eq!(zones.reset_range(16, 1), Ok(()), "the zone's first sector resets it");
        assert_eq!(zones.report()[2].state, ZoneState::Empty);
    }

    // Proves the open and active limits: a third zone written with two open closes the oldest
    // implicitly opened one; with two active (open or closed) an empty zone refuses to open;
    // explicitly opened zones are never closed to make room; finishing a zone frees its slot.
    #[test]
    fn open_and_active_limits() {
        let mut zones = Zones::new(5, 8, 8, 0, 2, 3);
        zones.write(0, 1).unwrap();
        zones.write(8, 1).unwrap();
        zones.write(16, 1).unwrap();
        assert_eq!(zones.report()[0].state, ZoneState::Closed);
        assert_eq!(zones.open_count(), 2);
        assert_eq!(zones.active_count(), 3);
        assert_eq!(zones.write(24, 1), Err(ZoneError::TooManyActive));
        // A closed zone is active already: writing it reopens it (closing zone 1).
        zones.write(1, 1).unwrap();
        assert_eq!(zones.report()[1].state, ZoneState::Closed);
        zones.finish_zone(2);
        assert_eq!(zones.active_count(), 2);
        zones.open_zone(3).unwrap();
        assert_eq!(zones.open_zone(4), Err(ZoneError::TooManyActive));
        // Reopening closed zone 1 closes implicitly opened zone 0, not explicit zone 3.
        zones.open_zone(1).unwrap();
        assert_eq!(zones.report()[0].state, ZoneState::Closed);
        assert_eq!(zones.report()[3].state, ZoneState::ExplicitlyOpen);
        let mut explicit = Zones::new(3, 8, 8, 0, 1, 0);
        explicit.open_zone(0).unwrap();
        assert_eq!(explicit.write(8, 1), Err(ZoneError::TooManyOpen));
        explicit.close_zone(0);
        assert_eq!(explicit.report()[0].state, ZoneState::Empty, "never written");
        assert_eq!(explicit.write(8, 1), Ok(()));
    }

    // Proves the device enforces the rules on commands: writes at the write pointer reach the
    // media (and take its time), a write off the pointer fails at once and is counted, a
    // discard of a whole zone resets it, and reads go anywhere.
    #[test]
    fn the_device_fails_writes_off_the_write_pointer() {
        let spec = DeviceSpec::parse("zns-2020").unwrap();
        let mut probe = Probe::new(spec.build().unwrap());
        let zone = 2 << 30 >> 9;
        let run = probe.closed_loop(
            [
                (Op::Write, Sector(zone), 256),
                (Op::Write, Sector(zone + 256), 256),
                (Op::Write, Sector(zone + 1024), 256),
                (Op::Read, Sector(zone + 4096), 8),
                (Op::Discard, Sector(zone), zone as u32),
                (Op::Write, Sector(zone), 256),
            ],
            1,
        );
        let took = |index: usize| run[index].finished - run[index].submitted;
        assert!(took(0) > elevator_core::Duration::ZERO && took(1) > elevator_core::Duration::ZERO);
        assert_eq!(took(2), elevator_core::Duration::ZERO, "off the write pointer");
        assert!(took(3) > elevator_core::Duration::ZERO);
        assert!(took(5) > elevator_core::Duration::ZERO, "written again after the reset");
        let stats = probe.device().stats();
        let extra = |name| stats.extra.iter().find(|(key, _)| *key == name).unwrap().1;
        assert_eq!(extra("zone_write_errors"), 1);
        assert_eq!(extra("zone_resets"), 1);
        assert_eq!(stats.sectors_written, 3 * 256);
    }

    // Proves the presets build with their zone layout: the SMR disk's 256 MiB zones with 524
    // conventional ones first, the ZNS drive's 2 GiB zones of 1077 MiB capacity; and that the
    // ZNS preset takes QEMU's zone geometry through its keys, refusing a zone size under the
    // preset's capacity with a message naming the fix.
    #[test]
    fn presets_build_their_zones() {
        let smr = Zoned::from_params(DeviceSpec::parse("smr-hm-2016").unwrap().params()).unwrap();
        assert_eq!(smr.zones().zone_size_sectors(), 256 << 20 >> 9);
        assert_eq!(smr.zones().report()[523].kind, ZoneType::Conventional);
        assert_eq!(smr.zones().report()[524].kind, ZoneType::SequentialRequired);
        let zns = Zoned::from_params(DeviceSpec::parse("zns-2020").unwrap().params()).unwrap();
        assert_eq!(zns.zones().zone_capacity_sectors(), 1077 << 20 >> 9);
        assert_eq!(zns.capacity_sectors() % zns.zones().zone_size_sectors(), 0);
        assert!(DeviceSpec::parse("zoned:media=ram").is_err(), "media must be hdd or ssd");
        // QEMU's emulated ZNS geometry on the preset: 128 MiB zones, capacity = size.
        let spec = DeviceSpec::parse("zns-2020:zone_size=128m,zone_capacity=128m").unwrap();
        let qemu = Zoned::from_params(spec.params()).unwrap();
        assert_eq!(qemu.zones().zone_size_sectors(), 128 << 20 >> 9);
        assert_eq!(qemu.zones().zone_capacity_sectors(), 128 << 20 >> 9);
        // A smaller zone_size alone keeps the preset's 1077 MiB capacity: refused, saying so.
        let error = DeviceSpec::parse("zns-2020:zone_size=128m")
            .and_then(|spec| Zoned::from_params(spec.params()).map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("zone_capacity") && error.contains("give zone_capacity too"),
            "{error}"
        );
        assert!(DeviceSpec::parse("zns-2020:zone_size=100k").is_err(), "under the 1 MiB minimum");
    }
}
