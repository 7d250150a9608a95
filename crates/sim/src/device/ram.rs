//! `ram`: a RAM disk — a fixed access latency plus a transfer at memory bandwidth.
//!
//! Every command pays `latency` (in parallel with others: nothing mechanical waits) and then
//! its transfer, which is serialised on one bus of `bandwidth` bytes per second; commands
//! finish in the order their transfers end. Flushes and discards take only the latency.
//!
//! A stream of large transfers kept a few deep runs at `bandwidth` within 1 %: the latency of
//! one overlaps the transfer of the one before, so only the first is lost, and each transfer's
//! rounding up to a whole nanosecond costs less than one part in a million of a 1 MiB
//! transfer (`tests/device_conformance.rs` checks it).
//!
//! # Keys
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `latency` | 1us | time before the transfer starts |
//! | `bandwidth` | 8g | bytes per second of the transfer (per second, binary suffixes) |
//! | `capacity` | 64g | size |
//! | `depth` | 128 | commands accepted at once |
//! | `queues` | 1 | hardware queues the blk-mq host maps cores onto (null_blk's `submit_queues`); the depth is shared by all |
//! | `driver` | generic | the driver in front of it (`device/driver.rs`); generic keeps `depth` and 512 KiB requests |

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use elevator_core::{Duration, Instant, KeyKind, KeySpec, Op, ParamError, Params};

use super::{Command, CommandId, DeviceModel, DeviceStats, Preset};

/// One line for `elevator list devices`.
pub const SUMMARY: &str = "RAM disk: fixed latency plus a transfer at memory bandwidth";

/// The keys of `ram`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "latency",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_secs(1), bare_unit: "us" },
        default: "1us",
        help: "time before a transfer starts",
    },
    KeySpec {
        key: "bandwidth",
        kind: KeyKind::Size { min_bytes: 1 << 20, max_bytes: 1 << 40 },
        default: "8g",
        help: "transfer rate in bytes per second",
    },
    KeySpec {
        key: "capacity",
        kind: KeyKind::Size { min_bytes: 1 << 20, max_bytes: 1 << 50 },
        default: "64g",
        help: "size of the device",
    },
    KeySpec {
        key: "depth",
        kind: KeyKind::Integer { min: 1, max: 65_536 },
        default: "128",
        help: "commands accepted at once",
    },
    KeySpec {
        key: "queues",
        kind: KeyKind::Integer { min: 1, max: 1024 },
        default: "1",
        help: "hardware queues the blk-mq host maps cores onto (null_blk's submit_queues; one interrupt vector each); the depth is shared by all",
    },
    super::driver::DRIVER_KEY,
];

/// `ram` has one preset: its defaults.
pub const PRESETS: &[Preset] = &[Preset {
    name: "ram",
    help: "a RAM disk with the defaults above; driver generic: its own depth of 128 and \
           512 KiB requests (SCSI mid-layer defaults; a RAM disk has no driver limit of its own)",
    values: &[],
}];

/// The RAM disk.
#[derive(Debug)]
pub struct Ram {
    latency: Duration,
    bandwidth_bytes_per_s: u64,
    capacity_sectors: u64,
    depth: u32,
    queues: u32,
    /// When the transfer bus is next free.
    bus_free_at: Instant,
    /// Commands inside, earliest (finish time, submission order) first.
    inside: BinaryHeap<Reverse<(Instant, u64, CommandId)>>,
    submitted: u64,
    busy_since: Option<Instant>,
    stats: DeviceStats,
}

impl Ram {
    /// A RAM disk from checked parameters.
    pub fn from_params(params: &Params) -> Result<Ram, ParamError> {
        Ok(Ram {
            latency: params.time("latency"),
            bandwidth_bytes_per_s: params.size("bandwidth"),
            capacity_sectors: params.size("capacity") / elevator_core::SECTOR_SIZE_BYTES,
            depth: params.integer("depth") as u32,
            queues: params.integer("queues") as u32,
            bus_free_at: Instant::ZERO,
            inside: BinaryHeap::new(),
            submitted: 0,
            busy_since: None,
            stats: DeviceStats::default(),
        })
    }

    fn transfer_time(&self, bytes: u64) -> Duration {
        // Rounded up so that a transfer never takes zero time.
        let nanos =
            (u128::from(bytes) * 1_000_000_000).div_ceil(u128::from(self.bandwidth_bytes_per_s));
        Duration::from_nanos(nanos as u64)
    }
}

impl DeviceModel for Ram {
    fn describe(&self) -> String {
        format!(
            "ram: {} latency, {}/s, {} commands",
            self.latency,
            elevator_core::format_size(self.bandwidth_bytes_per_s),
            self.depth
        )
    }

    fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }

    fn queue_depth(&self) -> u32 {
        self.depth
    }

    fn rotational(&self) -> bool {
        false
    }

    fn hw_queues(&self) -> u32 {
        self.queues
    }

    fn submit(&mut self, now: Instant, command: Command) {
        // The engine promises never to exceed the depth; check it, as hdd and ssd do.
        assert!(self.inside.len() < self.depth as usize, "ram: submit beyond depth {}", self.depth);
        let ready = now + self.latency;
        let finish = match command.op {
            Op::Read | Op::Write => {
                let start = ready.max(self.bus_free_at);
                let finish = start + self.transfer_time(command.size_bytes());
                self.bus_free_at = finish;
                finish
            }
            Op::Flush | Op::Discard => ready,
        };
        match command.op {
            Op::Read => self.stats.sectors_read += u64::from(command.sector_count),
            Op::Write => self.stats.sectors_written += u64::from(command.sector_count),
            Op::Flush | Op::Discard => {}
        }
        self.inside.push(Reverse((finish, self.submitted, command.id)));
        self.submitted += 1;
        self.busy_since.get_or_insert(now);
    }

    fn next_event(&self) -> Option<Instant> {
        self.inside.peek().map(|&Reverse((at, _, _))| at)
    }

    fn advance(&mut self, now: Instant, finished: &mut Vec<CommandId>) {
        while let Some(&Reverse((at, _, id))) = self.inside.peek() {
            if at > now {
                break;
            }
            self.inside.pop();
            finished.push(id);
            self.stats.commands += 1;
        }
        if self.inside.is_empty()
            && let Some(since) = self.busy_since.take()
        {
            self.stats.busy_ns += now.saturating_since(since).as_nanos();
        }
    }

    fn stats(&self) -> DeviceStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::Sector;

    use crate::device::{DeviceSpec, Probe, iops, throughput_bytes_per_s};

    use super::*;

    // Proves the model's two numbers: a lone 4 KiB read takes latency + 4 KiB at bandwidth,
    // and a deep stream of large reads runs at the bandwidth.
    #[test]
    fn latency_and_bandwidth() {
        let spec = DeviceSpec::parse("ram:latency=10us,bandwidth=1g").unwrap();
        let mut probe = Probe::new(spec.build().unwrap());
        let single = probe.closed_loop([(Op::Read, Sector(0), 8)], 1);
        let expected =
            Duration::from_micros(10) + Duration::from_nanos(4096 * 1_000_000_000 / (1 << 30) + 1);
        assert_eq!(single[0].finished - single[0].submitted, expected);

        let mut probe = Probe::new(spec.build().unwrap());
        let stream = probe.closed_loop((0..1000).map(|i| (Op::Read, Sector(i * 1024), 1024)), 32);
        let rate = throughput_bytes_per_s(&stream);
        assert!((rate / (1u64 << 30) as f64 - 1.0).abs() < 0.01, "{rate}");
        assert!(iops(&stream) > 1000.0);
    }

    #[test]
    fn impossible_keys_are_refused() {
        assert!(DeviceSpec::parse("ram:depth=0").is_err());
        assert!(DeviceSpec::parse("ram:bandwidth=1k").is_err());
        // Other kinds may be listed before `ram`; it only has to be among the accepted names.
        let message = DeviceSpec::parse("ramdisk").unwrap_err().to_string();
        let (_, accepted) = message.split_once("accepted: ").unwrap();
        assert!(accepted.trim_end_matches(')').split(", ").any(|name| name == "ram"), "{message}");
    }
}
