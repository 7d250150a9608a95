//! A topology: the host's block devices and the links between host and devices.
//!
//! Most specs make one device with nothing in between. A SAN LUN or an iSCSI target sits behind
//! a **link**: one or more paths (HBA ports and their links) of a given bandwidth per direction
//! — full duplex, so reads and writes do not share it — shared by every device behind it, plus
//! a per-command latency. A write's data crosses the link before the device sees the command; a
//! read's data crosses it after the device is done. Transfers are reserved in the order they are
//! asked for, so a link's timing never depends on anything but the order of requests.
//!
//! Which path a transfer takes: with **dm-multipath** ([`Multipath`], `host-mechanisms.md` §5)
//! each path is a SCSI device with its own queue, and a bio's path is chosen before any queue
//! by the policy — failover keeps to one path, multibus and group_by_prio go round robin over
//! their group, `rr_min_io` bios at a time; the path's queue's requests then cross that path
//! only. Without it (`multipath=none`, or no link) the device has one queue and each transfer
//! takes the path that frees first.
//!
//! Each device names its **driver** ([`Driver`], `device/driver.rs`), whose per-device depth
//! and request limit its queue takes; devices behind one **adapter** whose command limit binds
//! (`host-mechanisms.md` §2.5: megaraid_mbox's 128 commands for all its logical drives, IDE's
//! one command per channel) share a [`HostAdapter`]: the runner issues no command to any of
//! them while the adapter has `can_queue` out.
//!
//! Left out: path failure and failover itself, queue_if_no_path, `group_by_serial`, the dm
//! device's own CPU cost, array-port and HBA limits below the link's (the spec notes they were
//! often lower; nothing here models them), and the FC HBA's own `can_queue` (thousands: it
//! never binds for the study's LUNs).

use elevator_core::{Duration, Instant, ParamError};

use crate::device::DeviceModel;
use crate::device::driver::Driver;

/// A link between the host and devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSpec {
    /// Parallel paths (HBA ports with their links).
    pub paths: u32,
    /// Bytes per second of each path in each direction (the links are full duplex).
    pub path_bytes_per_s: u64,
    /// Added to every command (protocol and switch latency; iSCSI's is the largest).
    pub command_latency: Duration,
}

/// Fibre Channel's data ceiling per direction for large transfers, from its line rate in baud
/// (`host-mechanisms.md` §5, "FC bandwidth"): 8b/10b coding leaves baud / 10 bytes per second,
/// and an FCP data frame carries 2048 bytes of data in 2108 bytes on the wire (36 bytes of
/// start and end of frame, header and CRC, and at least 24 bytes of idles and R_RDY between
/// frames).
const fn fc_bytes_per_s(baud: u64) -> u64 {
    baud / 10 * 2048 / 2108
}

/// Link types, as written in `link=2x4gfc`.
pub const LINK_TYPES: &[(&str, u64, Duration, &str)] = &[
    (
        "1gfc",
        fc_bytes_per_s(1_062_500_000),
        Duration::from_micros(20),
        "1 Gb/s Fibre Channel (1.0625 Gbaud), ~103 MB/s a path each way",
    ),
    (
        "2gfc",
        fc_bytes_per_s(2_125_000_000),
        Duration::from_micros(20),
        "2 Gb/s Fibre Channel (2.125 Gbaud), ~206 MB/s a path each way",
    ),
    (
        "4gfc",
        fc_bytes_per_s(4_250_000_000),
        Duration::from_micros(20),
        "4 Gb/s Fibre Channel (4.25 Gbaud), ~412 MB/s a path each way",
    ),
    // Not in the spec: 8GFC still codes 8b/10b at 8.5 Gbaud, so the same derivation applies.
    (
        "8gfc",
        fc_bytes_per_s(8_500_000_000),
        Duration::from_micros(20),
        "8 Gb/s Fibre Channel (8.5 Gbaud), ~825 MB/s a path each way",
    ),
    ("gige", 118_000_000, Duration::from_micros(50), "gigabit Ethernet, ~118 MB/s usable"),
    ("iscsi", 118_000_000, Duration::from_micros(150), "iSCSI over gigabit Ethernet"),
    ("10gige", 1_180_000_000, Duration::from_micros(30), "10 gigabit Ethernet"),
];

impl LinkSpec {
    /// Parses `[N x] TYPE` (`4gfc`, `2x4gfc`, `2xiscsi`); errors name `key`.
    pub fn parse(text: &str, component: &str, key: &'static str) -> Result<LinkSpec, ParamError> {
        let text = text.trim();
        let bad = || ParamError::BadValue {
            component: component.to_owned(),
            key,
            value: text.to_owned(),
            expected: format!(
                "[N x] TYPE with N 1..=8 and TYPE one of {}",
                LINK_TYPES.iter().map(|t| t.0).collect::<Vec<_>>().join(", ")
            ),
        };
        let (paths, kind) = match text.split_once('x') {
            Some((count, kind))
                if count.chars().all(|c| c.is_ascii_digit()) && !count.is_empty() =>
            {
                (count.parse::<u32>().map_err(|_| bad())?, kind)
            }
            _ => (1, text),
        };
        if !(1..=8).contains(&paths) {
            return Err(bad());
        }
        let &(_, path_bytes_per_s, command_latency, _) =
            LINK_TYPES.iter().find(|t| t.0 == kind).ok_or_else(bad)?;
        Ok(LinkSpec { paths, path_bytes_per_s, command_latency })
    }
}

/// Which way data crosses a link. Each path carries both at once (full duplex).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// A write's data, host to device.
    ToDevice,
    /// A read's data, device to host.
    ToHost,
}

/// A link's state: when each path is next free in each direction.
#[derive(Clone, Debug)]
pub struct Link {
    spec: LinkSpec,
    /// Per path: when it is free toward the device, and toward the host.
    path_free_at: Vec<[Instant; 2]>,
    /// Bytes carried by each path.
    path_bytes: Vec<u64>,
    /// Bytes carried.
    pub bytes: u64,
}

impl Link {
    /// An idle link.
    pub fn new(spec: LinkSpec) -> Link {
        Link {
            spec,
            path_free_at: vec![[Instant::ZERO; 2]; spec.paths as usize],
            path_bytes: vec![0; spec.paths as usize],
            bytes: 0,
        }
    }

    /// The link's spec.
    pub fn spec(&self) -> LinkSpec {
        self.spec
    }

    /// Bytes each path has carried.
    pub fn path_bytes(&self) -> &[u64] {
        &self.path_bytes
    }

    /// Reserves a transfer of `bytes` that may start at `ready` on whichever path frees first
    /// in that direction (a host that spreads commands over the paths itself); returns when it
    /// ends.
    pub fn transfer(&mut self, ready: Instant, bytes: u64, flow: Flow) -> Instant {
        let way = flow as usize;
        let path = (0..self.path_free_at.len())
            .min_by_key(|&path| (self.path_free_at[path][way], path))
            .expect("a link has at least one path");
        self.transfer_on(path, ready, bytes, flow)
    }

    /// Reserves a transfer of `bytes` on `path` (the one multipath chose) that may start at
    /// `ready`; returns when it ends.
    pub fn transfer_on(&mut self, path: usize, ready: Instant, bytes: u64, flow: Flow) -> Instant {
        let free_at = &mut self.path_free_at[path][flow as usize];
        let start = ready.max(*free_at);
        let nanos =
            (u128::from(bytes) * 1_000_000_000).div_ceil(u128::from(self.spec.path_bytes_per_s));
        let end = start + Duration::from_nanos(nanos as u64);
        *free_at = end;
        self.path_bytes[path] += bytes;
        self.bytes += bytes;
        end
    }
}

/// dm-multipath's path grouping policy (`host-mechanisms.md` §5; multipath-tools 0.4.7 as in
/// RHEL5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultipathPolicy {
    /// One path per group: every bio goes down the first path until it fails (the default
    /// for arrays the tools do not list).
    Failover,
    /// All paths in one group, used round robin.
    Multibus,
    /// Active/passive arrays: the group is the paths to the controller that owns the LUN,
    /// used round robin.
    GroupByPrio,
}

/// The `multipath` key's accepted values; `none` is no dm-multipath at all.
pub const MULTIPATH_POLICIES: &[&str] = &["failover", "multibus", "group_by_prio", "none"];

impl MultipathPolicy {
    /// Parses a `multipath` value; `None` for `none`.
    pub fn parse(text: &str) -> Option<MultipathPolicy> {
        match text {
            "failover" => Some(MultipathPolicy::Failover),
            "multibus" => Some(MultipathPolicy::Multibus),
            "group_by_prio" => Some(MultipathPolicy::GroupByPrio),
            _ => None,
        }
    }

    /// The name as `multipath.conf` writes it.
    pub fn name(self) -> &'static str {
        match self {
            MultipathPolicy::Failover => "failover",
            MultipathPolicy::Multibus => "multibus",
            MultipathPolicy::GroupByPrio => "group_by_prio",
        }
    }

    /// The paths (of `paths`, path `p` being the link's path `p`) in LUN `lun`'s active
    /// group, in the order round robin takes them.
    ///
    /// Which path failover starts on and which controller owns a LUN are not in the spec:
    /// failover takes the first path (the first HBA found); for `group_by_prio` path `p`
    /// reaches controller `p % 2` and LUN `l` is owned by controller `l % 2` (arrays assign
    /// LUNs to controllers alternately). A LUN whose owner has no path (one path in all) uses
    /// every path, as the array would then serve it through the other controller.
    pub fn active_group(self, lun: usize, paths: usize) -> Vec<usize> {
        match self {
            MultipathPolicy::Failover => vec![0],
            MultipathPolicy::Multibus => (0..paths).collect(),
            MultipathPolicy::GroupByPrio => {
                let owned: Vec<usize> = (0..paths).filter(|path| path % 2 == lun % 2).collect();
                if owned.is_empty() { (0..paths).collect() } else { owned }
            }
        }
    }
}

/// dm-multipath in front of one LUN (2.6.18's bio-based `dm-mpath`): the `dm-N` device has
/// no elevator; each bio is sent to one path, and each path is a SCSI device with its own
/// queue, scheduler and depth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Multipath {
    /// The grouping policy.
    pub policy: MultipathPolicy,
    /// Paths, each the link's path of the same index (one queue each).
    pub paths: usize,
    /// Commands each path's queue may have at the LUN, when the spec sets it (`path_depth`);
    /// otherwise the driver's per-LUN depth.
    pub path_depth: Option<u32>,
    /// Chooses each bio's path.
    pub selector: PathSelector,
}

/// `dm-round-robin` over the active group: the current path takes `rr_min_io` bios, then the
/// next path in the group does (`dm-mpath.c` `map_io` counts `repeat_count` down per bio).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSelector {
    group: Vec<usize>,
    rr_min_io: u32,
    current: usize,
    /// Bios the current path has taken in its turn.
    taken: u32,
}

impl PathSelector {
    /// A selector starting on the group's first path.
    pub fn new(group: Vec<usize>, rr_min_io: u32) -> PathSelector {
        assert!(!group.is_empty() && rr_min_io > 0, "a path group has a path and a turn");
        PathSelector { group, rr_min_io, current: 0, taken: 0 }
    }

    /// The path for the next bio.
    pub fn select(&mut self) -> usize {
        if self.taken == self.rr_min_io {
            self.current = (self.current + 1) % self.group.len();
            self.taken = 0;
        }
        self.taken += 1;
        self.group[self.current]
    }

    /// The active group's paths.
    pub fn group(&self) -> &[usize] {
        &self.group
    }

    /// Bios a path takes in its turn.
    pub fn rr_min_io(&self) -> u32 {
        self.rr_min_io
    }
}

/// The host's devices, named `sda`, `sdb`, ..., and the links in front of them.
#[derive(Debug)]
pub struct Topology {
    /// Each device with its name and the link it sits behind (an index into `links`).
    pub devices: Vec<TopologyDevice>,
    /// The links.
    pub links: Vec<Link>,
    /// Adapters whose command limit is shared by several devices.
    pub adapters: Vec<HostAdapter>,
    /// The other host: an iSCSI initiator whose LUNs these devices back (`iscsi`), with the
    /// links between the two. The workload's files and readers are then the initiator's.
    pub initiator: Option<crate::iscsi::IscsiSpec>,
}

/// A host adapter (HBA, RAID controller, IDE channel) whose command limit binds across the
/// devices behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostAdapter {
    /// Commands it has out at once for all its devices (`can_queue`; 1 for an IDE hwgroup).
    pub can_queue: u32,
    /// Its devices (indices into `Topology::devices`).
    pub devices: Vec<usize>,
}

impl HostAdapter {
    /// The adapters `driver` puts in front of `count` devices, and each device's adapter.
    pub fn for_driver(driver: Driver, count: usize) -> (Vec<HostAdapter>, Vec<Option<usize>>) {
        let Some((can_queue, per_host)) = driver.host_limit() else {
            return (Vec::new(), vec![None; count]);
        };
        let per_host = per_host.unwrap_or(count).max(1);
        let adapters: Vec<HostAdapter> = (0..count)
            .step_by(per_host)
            .map(|first| HostAdapter {
                can_queue,
                devices: (first..(first + per_host).min(count)).collect(),
            })
            .collect();
        let of_device = (0..count).map(|index| Some(index / per_host)).collect();
        (adapters, of_device)
    }
}

/// One device of a topology.
#[derive(Debug)]
pub struct TopologyDevice {
    /// Its name, as workloads' `filename=` refers to it.
    pub name: String,
    /// The model.
    pub model: Box<dyn DeviceModel>,
    /// The link in front of it, if any.
    pub link: Option<usize>,
    /// dm-multipath over the link's paths; without it the device has one queue and its
    /// transfers take whichever path frees first.
    pub multipath: Option<Multipath>,
    /// The driver whose depth and request limit its queue takes.
    pub driver: Driver,
    /// The adapter whose command limit it shares, if one binds (an index into
    /// `Topology::adapters`).
    pub adapter: Option<usize>,
}

/// The kernel's name for the `index`th SCSI disk: sda ... sdz, sdaa ...
pub fn device_name(index: usize) -> String {
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    let mut name = Vec::new();
    let mut value = index + 1;
    while value > 0 {
        value -= 1;
        name.push(letters[value % 26]);
        value /= 26;
    }
    name.reverse();
    format!("sd{}", String::from_utf8(name).expect("ascii"))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves adapters group devices as the driver shares its limit: IDE two to a channel
    // (hda/hdb, hdc/hdd), megaraid every logical drive on one adapter, others none.
    #[test]
    fn adapters_group_devices_per_driver() {
        let (ide, of) = HostAdapter::for_driver(Driver::IdeLba48, 4);
        assert_eq!(ide.len(), 2);
        assert_eq!(
            (ide[0].can_queue, &ide[0].devices, &ide[1].devices),
            (1, &vec![0, 1], &vec![2, 3])
        );
        assert_eq!(of, [Some(0), Some(0), Some(1), Some(1)]);
        let (megaraid, of) = HostAdapter::for_driver(Driver::MegaraidMbox, 8);
        assert_eq!((megaraid.len(), megaraid[0].can_queue, megaraid[0].devices.len()), (1, 128, 8));
        assert!(of.iter().all(|adapter| *adapter == Some(0)));
        let (none, of) = HostAdapter::for_driver(Driver::Qla2xxx, 2);
        assert!(none.is_empty() && of == [None, None]);
    }

    #[test]
    fn devices_are_named_like_the_kernel_does() {
        assert_eq!(device_name(0), "sda");
        assert_eq!(device_name(25), "sdz");
        assert_eq!(device_name(26), "sdaa");
    }

    // Proves link parsing and that N paths carry N transfers at once, each at the path rate.
    #[test]
    fn paths_share_the_load() {
        let spec = LinkSpec::parse("2xgige", "san", "link").unwrap();
        assert_eq!((spec.paths, spec.path_bytes_per_s), (2, 118_000_000));
        let mut link = Link::new(spec);
        let one_ms = 118_000;
        let to_device = Flow::ToDevice;
        assert_eq!(link.transfer(Instant::ZERO, one_ms, to_device), Instant::from_millis(1));
        assert_eq!(link.transfer(Instant::ZERO, one_ms, to_device), Instant::from_millis(1));
        assert_eq!(link.transfer(Instant::ZERO, one_ms, to_device), Instant::from_millis(2));
        // Full duplex: the other direction is still free.
        assert_eq!(link.transfer(Instant::ZERO, one_ms, Flow::ToHost), Instant::from_millis(1));
        assert_eq!(link.path_bytes(), &[3 * one_ms, one_ms]);
        assert!(LinkSpec::parse("9x4gfc", "san", "link").is_err());
        assert!(LinkSpec::parse("4gbit", "san", "link").unwrap_err().to_string().contains("4gfc"));
    }

    // The spec's derivation gives ≈ 103, 206 and 412 MB/s for 1, 2 and 4GFC.
    #[test]
    fn fibre_channel_ceilings_follow_the_spec() {
        let rate = |kind: &str| LinkSpec::parse(kind, "san", "link").unwrap().path_bytes_per_s;
        assert_eq!(rate("1gfc") / 1_000_000, 103);
        assert_eq!(rate("2gfc") / 1_000_000, 206);
        assert_eq!(rate("4gfc") / 1_000_000, 412);
    }

    // Proves dm-round-robin's turn: rr_min_io bios to a path, then the next; failover stays.
    #[test]
    fn round_robin_switches_after_rr_min_io_bios() {
        let mut multibus = PathSelector::new(MultipathPolicy::Multibus.active_group(0, 2), 3);
        let picks: Vec<usize> = (0..8).map(|_| multibus.select()).collect();
        assert_eq!(picks, [0, 0, 0, 1, 1, 1, 0, 0]);
        let mut failover = PathSelector::new(MultipathPolicy::Failover.active_group(1, 2), 3);
        assert!((0..8).all(|_| failover.select() == 0));
        assert_eq!(MultipathPolicy::GroupByPrio.active_group(0, 4), [0, 2]);
        assert_eq!(MultipathPolicy::GroupByPrio.active_group(1, 2), [1]);
        assert_eq!(MultipathPolicy::GroupByPrio.active_group(1, 1), [0]);
    }
}
