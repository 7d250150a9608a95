//! The low-level driver (or host adapter) a device sits behind, and the limits it gives the
//! block queue: the largest request, how many commands the device may have at once, and how
//! many the adapter takes for all its devices together (`host-mechanisms.md` §2.3, §2.5, §7
//! "Queue occupancy" and "Request sizes").
//!
//! Each device kind has a `driver` key; every preset that models a real machine names the
//! driver that machine used, so its queue gets that driver's values under the host's kernel:
//!
//! * **request limit** = min(`max_sectors` as the kernel takes it — 2.6.9 the driver's value,
//!   2.6.18 at most 1024 sectors ([`KernelVersion::max_sectors`]) —, hardware segments
//!   (`sg_tablesize`) × 4 KiB, physical segments × 4 KiB): page-cache pages are scattered in
//!   memory, so each is a segment of its own (§2.2);
//! * **device depth** = the driver's per-LUN (per-device) depth, never more than the device
//!   model accepts;
//! * **adapter limit** (`can_queue`) where it binds: the commands one adapter has out for all
//!   its devices (megaraid_mbox's 128 for every logical drive; IDE's one command per hwgroup,
//!   the two devices of a channel).
//!
//! `generic` (the default of every kind) keeps the device's own depth and the SCSI mid-layer's
//! defaults: 1024 sectors, 128 segments, so 512 KiB — what the simulator used for every device
//! before drivers were modelled.
//!
//! The driver also decides when the legacy queue's request function fetches
//! ([`DriverLimits::fetch`], legacy-vs-kernel.md row 7): IDE's `ide_do_request` only while the
//! channel is free; every SCSI-mid-layer driver (libata's `ata_piix` and `ahci` included, and
//! `generic`, which stands for the SCSI defaults) through `scsi_request_fn`, which fetches and
//! activates the next request before it tests the device's depth.
//!
//! Under 2.4.21 (linux-2.4-elevator.md §6.2) `megaraid_mbox` stands for RHEL 3's
//! `megaraid2` (and the older `megaraid` 1.18k, whose limits the spec gives as the same):
//! 128-sector requests, 63 commands a LUN, 125 for the adapter; and every 2.4 driver tests its
//! limits before it takes a request off the list (no fetch-ahead, §4.1). The elevator's own
//! limit there is sd's 1024 sectors; the runner gives the queue both (`Linux2_4Queue`).
//!
//! # Deviations from Linux
//!
//! * megaraid2's `can_queue` is the firmware's count less one, at most 125: the firmware's
//!   count is not known, so 125; its scatter-gather count is the firmware's (≤ 64, 26 if not
//!   reported): 26 is kept, which at 4 KiB a segment (104 KiB) never binds below 64 KiB.
//!
//! * Adapter limits are modelled only where the spec says they bind (megaraid_mbox, IDE
//!   hwgroups); aic79xx's 512, mpt's 127, qla2xxx's 2176+ and lpfc's are far above what one
//!   of the study's topologies can have outstanding and are left out.
//! * A freed adapter slot goes to the lowest-numbered device with work (the runner pumps
//!   devices in order), where the SCSI layer first runs the devices it refused, in the order
//!   it refused them (`scsi_run_queue`'s starved list).
//! * IDE and libata have no IOMMU here: `sg_tablesize` is the full table (256 for IDE, not
//!   the 128 an IOMMU would leave).
//! * `mptspi`'s `CONFIG_FUSION_MAX_SGE` is 40 under every release: the spec gives it for RHEL
//!   4 and RHEL 5.0 (RHEL 5.7: 128); the vanilla and RHEL 5.5 values are not in it [U]. Its
//!   depth is 31 under 2.6.9 (RHEL 4 GA/U1 are modelled; later RHEL 4 updates raised it to 48).
//! * `lpfc`'s `sg_tablesize` under every 2.6.18 release is RHEL 5.0's 64.
//! * `iscsi_tcp` is not in the spec: its values are open-iscsi's of the 2.6.18 era as far as
//!   known [U] (`max_sectors` 0xFFFF, SG_ALL segments, 32 commands a LUN).
//! * Array-side limits (a port's queue, QUEUE FULL lowering a LUN's depth) are not modelled.

use elevator_core::{DriverFetch, KernelVersion, KeyKind, KeySpec};

/// A driver whose limits the block queue takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// No particular driver: the device's own depth, SCSI mid-layer defaults.
    Generic,
    /// `ide-disk`, a drive without the LBA48 feature set: 256 sectors.
    Ide,
    /// `ide-disk`, an LBA48 drive: 2048 sectors.
    IdeLba48,
    /// libata `ata_piix` (SATA without NCQ), LBA48 drives.
    AtaPiix,
    /// libata `ahci` with NCQ.
    Ahci,
    /// Adaptec Ultra320 `aic79xx`.
    Aic79xx,
    /// LSI Fusion-MPT `mptscsih`/`mptspi` (LSI 53C1030 Ultra320).
    Mptspi,
    /// LSI MegaRAID `megaraid_mbox`.
    MegaraidMbox,
    /// QLogic `qla2xxx` 2/4 Gb FC (ISP23xx/24xx).
    Qla2xxx,
    /// Emulex `lpfc` FC.
    Lpfc,
    /// open-iscsi's `iscsi_tcp` initiator [U].
    IscsiTcp,
}

/// Every driver, in listing order, with the name the `driver` key takes.
pub const DRIVERS: &[(&str, Driver)] = &[
    ("generic", Driver::Generic),
    ("ide", Driver::Ide),
    ("ide-lba48", Driver::IdeLba48),
    ("ata_piix", Driver::AtaPiix),
    ("ahci", Driver::Ahci),
    ("aic79xx", Driver::Aic79xx),
    ("mptspi", Driver::Mptspi),
    ("megaraid_mbox", Driver::MegaraidMbox),
    ("qla2xxx", Driver::Qla2xxx),
    ("lpfc", Driver::Lpfc),
    ("iscsi_tcp", Driver::IscsiTcp),
];

/// The names the `driver` key accepts.
pub const DRIVER_NAMES: &[&str] = &[
    "generic",
    "ide",
    "ide-lba48",
    "ata_piix",
    "ahci",
    "aic79xx",
    "mptspi",
    "megaraid_mbox",
    "qla2xxx",
    "lpfc",
    "iscsi_tcp",
];

/// The `driver` key every device kind has.
pub const DRIVER_KEY: KeySpec = KeySpec {
    key: "driver",
    kind: KeyKind::Choice(DRIVER_NAMES),
    default: "generic",
    help: "the driver (or HBA) in front of the device, deciding its queue depth, largest \
           request and shared adapter limit (host-mechanisms.md 2.3): generic (the device's \
           depth, 512 KiB), ide, ide-lba48, ata_piix, ahci, aic79xx, mptspi, megaraid_mbox, \
           qla2xxx, lpfc, iscsi_tcp",
};

/// Physical segments a SCSI request may have (`SCSI_MAX_PHYS_SEGMENTS`, §2.2).
const SCSI_PHYS_SEGMENTS: u32 = 128;
/// IDE's physical segments: one PRD table of a page, 256 entries (`PRD_ENTRIES`) [D].
const IDE_PHYS_SEGMENTS: u32 = 256;
/// A segment of a page-cache request: one scattered page.
const SEGMENT_KB: u32 = 4;

/// The limits a driver gives a device's queue under one kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverLimits {
    /// The driver.
    pub driver: Driver,
    /// `max_sectors` after the kernel's cap (§2.3).
    pub max_sectors: u32,
    /// Segments a request may have: min(physical, `sg_tablesize`).
    pub segments: u32,
    /// Commands the device may have at once; `None`: the device model's own depth.
    pub lun_depth: Option<u32>,
    /// Commands one adapter has out for all its devices, where that binds (§2.5).
    pub host_can_queue: Option<u32>,
    /// Devices of a topology behind one adapter: `None` every device, `Some(2)` an IDE
    /// channel's master and slave.
    pub devices_per_host: Option<usize>,
    /// When the request function fetches the next request: IDE only with the channel free,
    /// the SCSI mid-layer (libata included) before testing the depth (row 7).
    pub fetch: DriverFetch,
}

impl DriverLimits {
    /// The largest request in KiB: min(`max_sectors`, segments × 4 KiB).
    pub fn max_sectors_kb(&self) -> u32 {
        (self.max_sectors / 2).min(self.segments * SEGMENT_KB)
    }
}

impl Driver {
    /// The driver a `driver` value names.
    pub fn parse(name: &str) -> Option<Driver> {
        DRIVERS.iter().find(|(text, _)| *text == name).map(|&(_, driver)| driver)
    }

    /// The name the `driver` key takes.
    pub fn name(self) -> &'static str {
        DRIVERS.iter().find(|(_, driver)| *driver == self).map(|(name, _)| *name).expect("listed")
    }

    /// The driver's own `max_sectors` under `kernel`, before the kernel's cap.
    const fn driver_max_sectors(self, kernel: KernelVersion) -> u32 {
        use elevator_core::KernelBase;
        match self {
            // SCSI_DEFAULT_MAX_SECTORS.
            Driver::Generic | Driver::Aic79xx => 1024,
            Driver::Ide => 256,
            Driver::IdeLba48 => 2048,
            // ATA_MAX_SECTORS_LBA48: 2048 in 2.6.9, 65535 in 2.6.18.
            Driver::AtaPiix | Driver::Ahci => match kernel.base() {
                // 2.4's libata back-port is taken as 2.6.9's [U].
                KernelBase::V2_4_21 | KernelBase::V2_6_9 => 2048,
                KernelBase::V2_6_18 => 65535,
            },
            Driver::Mptspi => 8192,
            Driver::MegaraidMbox => 128,
            Driver::Qla2xxx | Driver::Lpfc | Driver::IscsiTcp => 65535,
        }
    }

    /// `sg_tablesize` under `kernel`.
    const fn sg_tablesize(self, kernel: KernelVersion) -> u32 {
        use elevator_core::KernelBase;
        match self {
            Driver::Generic | Driver::AtaPiix | Driver::Aic79xx => 128,
            Driver::Ide | Driver::IdeLba48 => 256,
            Driver::Ahci => 168,
            // CONFIG_FUSION_MAX_SGE in RHEL 4 and RHEL 5.0.
            Driver::Mptspi => 40,
            // The firmware's default (at most 32).
            Driver::MegaraidMbox => 26,
            Driver::Qla2xxx | Driver::IscsiTcp => 255,
            Driver::Lpfc => match kernel.base() {
                KernelBase::V2_4_21 | KernelBase::V2_6_9 => 255,
                KernelBase::V2_6_18 => 64,
            },
        }
    }

    const fn phys_segments(self) -> u32 {
        match self {
            Driver::Ide | Driver::IdeLba48 => IDE_PHYS_SEGMENTS,
            _ => SCSI_PHYS_SEGMENTS,
        }
    }

    /// Commands per device (LUN) under `kernel`; `None`: the device's own.
    const fn lun_depth(self, kernel: KernelVersion) -> Option<u32> {
        use elevator_core::KernelBase;
        Some(match self {
            Driver::Generic => return None,
            // No TCQ (IDE), ATA_DEF_QUEUE (libata without NCQ).
            Driver::Ide | Driver::IdeLba48 | Driver::AtaPiix => 1,
            Driver::Ahci => 31,
            // CONFIG_AIC79XX_CMDS_PER_DEVICE: 4 in Red Hat's builds, 32 in mainline's.
            Driver::Aic79xx => {
                if kernel.is_rhel() {
                    4
                } else {
                    32
                }
            }
            Driver::Mptspi => match kernel.base() {
                KernelBase::V2_4_21 | KernelBase::V2_6_9 => 31,
                KernelBase::V2_6_18 => 64,
            },
            // megaraid2 under 2.4 (linux-2.4-elevator.md §6.2): 63 commands per LUN (a
            // module parameter, ≤ 126); megaraid_mbox under 2.6: 64.
            Driver::MegaraidMbox => match kernel.base() {
                KernelBase::V2_4_21 => 63,
                KernelBase::V2_6_9 | KernelBase::V2_6_18 => 64,
            },
            Driver::Qla2xxx | Driver::IscsiTcp => 32,
            Driver::Lpfc => 30,
        })
    }

    /// The adapter limit where it binds: commands one adapter has out for all its devices,
    /// and how many of a topology's devices share an adapter (`None`: all of them). The same
    /// under every kernel.
    pub const fn host_limit(self) -> Option<(u32, Option<usize>)> {
        match self {
            // One command per hwgroup: a channel's master and slave take turns.
            Driver::Ide | Driver::IdeLba48 => Some((1, Some(2))),
            // 128 commands per adapter, shared by every logical drive on it.
            Driver::MegaraidMbox => Some((128, None)),
            _ => None,
        }
    }

    /// The adapter's `can_queue` under `kernel`, where it binds: [`Driver::host_limit`]'s,
    /// but megaraid2 under 2.4 takes the firmware's count less one, at most 125, for all its
    /// LUNs (linux-2.4-elevator.md §6.2; the firmware's own count is not known, so 125).
    pub const fn host_can_queue(self, kernel: KernelVersion) -> Option<u32> {
        use elevator_core::KernelBase;
        match (self, kernel.base()) {
            (Driver::MegaraidMbox, KernelBase::V2_4_21) => Some(125),
            _ => match self.host_limit() {
                Some((can_queue, _)) => Some(can_queue),
                None => None,
            },
        }
    }

    /// When the driver's request function fetches under `kernel`: the same under every 2.6
    /// kernel (row 7); 2.4's `scsi_request_fn` tests the LUN's and the host's limits before
    /// it takes the list's head (linux-2.4-elevator.md §4.1), as IDE does.
    pub const fn fetch_under(self, kernel: KernelVersion) -> DriverFetch {
        match kernel.base() {
            elevator_core::KernelBase::V2_4_21 => DriverFetch::WhenDeviceFree,
            _ => self.fetch(),
        }
    }

    /// When the driver's request function fetches (the same under every 2.6 kernel).
    pub const fn fetch(self) -> DriverFetch {
        match self {
            Driver::Ide | Driver::IdeLba48 => DriverFetch::WhenDeviceFree,
            _ => DriverFetch::BeforeDepthCheck,
        }
    }

    /// The limits under `kernel`.
    pub fn limits(self, kernel: KernelVersion) -> DriverLimits {
        let devices_per_host = self.host_limit().and_then(|(_, per_host)| per_host);
        let host_can_queue = self.host_can_queue(kernel);
        DriverLimits {
            driver: self,
            max_sectors: kernel.max_sectors(self.driver_max_sectors(kernel)),
            segments: self.sg_tablesize(kernel).min(self.phys_segments()),
            lun_depth: self.lun_depth(kernel),
            host_can_queue,
            devices_per_host,
            fetch: self.fetch_under(kernel),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves every listed name parses back to its driver and the key accepts exactly them.
    #[test]
    fn names_round_trip() {
        assert_eq!(DRIVERS.len(), DRIVER_NAMES.len());
        for (name, driver) in DRIVERS {
            assert_eq!(Driver::parse(name), Some(*driver));
            assert_eq!(driver.name(), *name);
            assert!(DRIVER_NAMES.contains(name));
        }
        assert_eq!(Driver::parse("sym53c8xx"), None);
    }

    // Proves the spec's request limits (§2.3 table, last two columns) per kernel.
    #[test]
    fn request_limits_follow_the_driver_table() {
        let kb = |driver: Driver, kernel| driver.limits(kernel).max_sectors_kb();
        let old = KernelVersion::Rhel4;
        let new = KernelVersion::Rhel5_0;
        assert_eq!((kb(Driver::Ide, old), kb(Driver::Ide, new)), (128, 128));
        assert_eq!((kb(Driver::IdeLba48, old), kb(Driver::IdeLba48, new)), (1024, 512));
        assert_eq!((kb(Driver::AtaPiix, old), kb(Driver::AtaPiix, new)), (512, 512));
        assert_eq!((kb(Driver::Aic79xx, old), kb(Driver::Aic79xx, new)), (512, 512));
        assert_eq!((kb(Driver::Mptspi, old), kb(Driver::Mptspi, new)), (160, 160));
        assert_eq!((kb(Driver::MegaraidMbox, old), kb(Driver::MegaraidMbox, new)), (64, 64));
        assert_eq!((kb(Driver::Qla2xxx, old), kb(Driver::Qla2xxx, new)), (512, 512));
        assert_eq!((kb(Driver::Lpfc, old), kb(Driver::Lpfc, new)), (512, 256));
        assert_eq!(kb(Driver::Generic, new), 512);
    }

    // Proves the depths of §7 "Queue occupancy": IDE 1 with one command per channel,
    // aic79xx 4 in RHEL builds, mpt 31/64, megaraid 64 per drive and 128 per adapter.
    #[test]
    fn depths_follow_the_driver_table() {
        let ide = Driver::IdeLba48.limits(KernelVersion::Linux2_6_9);
        assert_eq!(
            (ide.lun_depth, ide.host_can_queue, ide.devices_per_host),
            (Some(1), Some(1), Some(2))
        );
        assert_eq!(Driver::Aic79xx.limits(KernelVersion::Rhel5_0).lun_depth, Some(4));
        assert_eq!(Driver::Aic79xx.limits(KernelVersion::Linux2_6_18).lun_depth, Some(32));
        assert_eq!(Driver::Mptspi.limits(KernelVersion::Rhel4).lun_depth, Some(31));
        assert_eq!(Driver::Mptspi.limits(KernelVersion::Rhel5_0).lun_depth, Some(64));
        let megaraid = Driver::MegaraidMbox.limits(KernelVersion::Rhel4);
        assert_eq!((megaraid.lun_depth, megaraid.host_can_queue), (Some(64), Some(128)));
        assert_eq!(megaraid.devices_per_host, None);
        assert_eq!(Driver::Generic.limits(KernelVersion::Rhel4).lun_depth, None);
    }

    // Proves §6.2's megaraid2 under 2.4: 128-sector requests (64 KiB), 63 commands a LUN,
    // 125 for the adapter, and 2.4's request function testing the depth before it fetches;
    // megaraid_mbox under 2.6 keeps 64 and 128 and fetches first.
    #[test]
    fn megaraid_under_2_4() {
        for kernel in [KernelVersion::Rhel3, KernelVersion::Linux2_4_21] {
            let limits = Driver::MegaraidMbox.limits(kernel);
            assert_eq!(limits.max_sectors, 128);
            assert_eq!(limits.max_sectors_kb(), 64);
            assert_eq!((limits.lun_depth, limits.host_can_queue), (Some(63), Some(125)));
            assert_eq!(limits.fetch, DriverFetch::WhenDeviceFree);
        }
        let limits = Driver::MegaraidMbox.limits(KernelVersion::Rhel4);
        assert_eq!((limits.lun_depth, limits.host_can_queue), (Some(64), Some(128)));
        assert_eq!(limits.fetch, DriverFetch::BeforeDepthCheck);
    }

    // Proves row 7's choice per interface: IDE fetches only with the channel free; libata and
    // SCSI drivers (and generic, the SCSI defaults) fetch before testing the depth.
    #[test]
    fn the_fetch_model_follows_the_interface() {
        let fetch = |driver: Driver| driver.limits(KernelVersion::Rhel5_0).fetch;
        assert_eq!(fetch(Driver::Ide), DriverFetch::WhenDeviceFree);
        assert_eq!(fetch(Driver::IdeLba48), DriverFetch::WhenDeviceFree);
        for driver in [Driver::AtaPiix, Driver::Ahci, Driver::Aic79xx, Driver::Generic] {
            assert_eq!(fetch(driver), DriverFetch::BeforeDepthCheck, "{driver:?}");
        }
    }
}
