//! A topology: the host's block devices and the links between host and devices.
//!
//! Most specs make one device with nothing in between. A SAN LUN or an iSCSI target sits behind
//! a **link**: one or more paths of a given bandwidth, shared by every device behind it, plus a
//! per-command latency. A write's data crosses the link before the device sees the command; a
//! read's data crosses it after the device is done. Transfers are reserved in the order they are
//! asked for, each on the path that frees first, so a link's timing never depends on anything
//! but the order of requests.

use elevator_core::{Duration, Instant, ParamError};

use crate::device::DeviceModel;

/// A link between the host and devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSpec {
    /// Parallel paths (multipath).
    pub paths: u32,
    /// Bytes per second of each path.
    pub path_bytes_per_s: u64,
    /// Added to every command (protocol and switch latency; iSCSI's is the largest).
    pub command_latency: Duration,
}

/// Link types, as written in `link=2x4gfc`.
pub const LINK_TYPES: &[(&str, u64, Duration, &str)] = &[
    ("1gfc", 100_000_000, Duration::from_micros(20), "1 Gb/s Fibre Channel, ~100 MB/s a path"),
    ("2gfc", 200_000_000, Duration::from_micros(20), "2 Gb/s Fibre Channel, ~200 MB/s a path"),
    ("4gfc", 400_000_000, Duration::from_micros(20), "4 Gb/s Fibre Channel, ~400 MB/s a path"),
    ("8gfc", 800_000_000, Duration::from_micros(20), "8 Gb/s Fibre Channel, ~800 MB/s a path"),
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

/// A link's state: when each path is next free.
#[derive(Clone, Debug)]
pub struct Link {
    spec: LinkSpec,
    path_free_at: Vec<Instant>,
    /// Bytes carried.
    pub bytes: u64,
}

impl Link {
    /// An idle link.
    pub fn new(spec: LinkSpec) -> Link {
        Link { spec, path_free_at: vec![Instant::ZERO; spec.paths as usize], bytes: 0 }
    }

    /// The link's spec.
    pub fn spec(&self) -> LinkSpec {
        self.spec
    }

    /// Reserves a transfer of `bytes` that may start at `ready`; returns when it ends.
    pub fn transfer(&mut self, ready: Instant, bytes: u64) -> Instant {
        let (index, &free_at) = self
            .path_free_at
            .iter()
            .enumerate()
            .min_by_key(|&(index, free)| (*free, index))
            .expect("a link has at least one path");
        let start = ready.max(free_at);
        let nanos =
            (u128::from(bytes) * 1_000_000_000).div_ceil(u128::from(self.spec.path_bytes_per_s));
        let end = start + Duration::from_nanos(nanos as u64);
        self.path_free_at[index] = end;
        self.bytes += bytes;
        end
    }
}

/// The host's devices, named `sda`, `sdb`, ..., and the links in front of them.
#[derive(Debug)]
pub struct Topology {
    /// Each device with its name and the link it sits behind (an index into `links`).
    pub devices: Vec<TopologyDevice>,
    /// The links.
    pub links: Vec<Link>,
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

    #[test]
    fn devices_are_named_like_the_kernel_does() {
        assert_eq!(device_name(0), "sda");
        assert_eq!(device_name(25), "sdz");
        assert_eq!(device_name(26), "sdaa");
    }

    // Proves link parsing and that N paths carry N transfers at once, each at the path rate.
    #[test]
    fn paths_share_the_load() {
        let spec = LinkSpec::parse("2x4gfc", "san", "link").unwrap();
        assert_eq!((spec.paths, spec.path_bytes_per_s), (2, 400_000_000));
        let mut link = Link::new(spec);
        let one_ms = 400_000;
        assert_eq!(link.transfer(Instant::ZERO, one_ms), Instant::from_millis(1));
        assert_eq!(link.transfer(Instant::ZERO, one_ms), Instant::from_millis(1));
        assert_eq!(link.transfer(Instant::ZERO, one_ms), Instant::from_millis(2));
        assert!(LinkSpec::parse("9x4gfc", "san", "link").is_err());
        assert!(LinkSpec::parse("4gbit", "san", "link").unwrap_err().to_string().contains("4gfc"));
    }
}
