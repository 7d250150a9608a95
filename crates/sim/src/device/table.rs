//! `table`: a device described by what was measured on it (`elevator calibrate`), not by its
//! mechanics — service times interpolated from measured tables.
//!
//! A command's service time is its direction and pattern's latency at queue depth 1 for its
//! size, stretched by how much the device slows down when `n` commands are inside it:
//!
//! * **pattern**: sequential when it starts where the previous command of its direction ended
//!   (`read_seq_lat`/`write_seq_lat`), random otherwise (`read_rand_lat`/`write_rand_lat`);
//! * **size**: the QD1 latency table (`SIZE:LATENCY/...`, e.g. `4k:80us/64k:150us/1m:1.2ms`)
//!   interpolated linearly in the size between its points (a transfer's time is an overhead
//!   plus a size over a rate, linear in the size), extrapolated past the last point with the
//!   last segment's slope, and held at the first point below it;
//! * **parallelism**: the IOPS table (`QD:IOPS/...`, random reads or writes of the size in
//!   `iops_bs`) says how many commands a second the device completes with `QD` inside; in a
//!   closed loop of depth `n` each takes `n / IOPS(n)`, so a command submitted with `n`
//!   inside (itself included) is stretched by `n · IOPS(1) / IOPS(n)` (≥ 1), interpolated
//!   linearly in `n` and, past the table's deepest point, with the IOPS held flat (the
//!   device's measured internal parallelism is all it has);
//! * **bandwidth**: transfers also share one bus per device at `read_bandwidth` /
//!   `write_bandwidth` (empty: the sequential table's best rate): a command finishes no
//!   earlier than its transfer's turn on that bus, so deep streams of large transfers run at
//!   the measured ceiling and not at QD × the QD1 rate.
//!
//! * **spread**: with `read_spread`/`write_spread` (`PERCENTILE:MULTIPLE/...`, the measured
//!   percentiles of the QD1 random reads over their mean, e.g. `50:0.6/99:4`), each service
//!   time is multiplied by the spread's quantile function (linear between the percentiles,
//!   flat beyond, scaled to a mean of 1 so the rates stay the tables') at the next point of
//!   the base-2 van der Corput sequence: the latency distribution's shape without
//!   randomness, and without changing the mean.
//!
//! Writes with empty tables use the read tables. Flushes and discards take the smallest
//! random-read latency. Everything is a function of the commands and their times: no
//! randomness, so runs are reproducible.
//!
//! Device preset files (`-d ./mydisk.toml`, written by `elevator calibrate`) are read here
//! too ([`load_file`]): TOML with `kind`, the kind's keys and a `[measured]` table that the
//! model ignores (it documents where the values came from).
//!
//! # Keys
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `read_seq_lat` | `4k:60us/128k:300us/1m:2ms` | QD1 latency of sequential reads by size |
//! | `read_rand_lat` | `4k:90us/128k:350us/1m:2.1ms` | QD1 latency of random reads by size |
//! | `write_seq_lat` | (reads') | QD1 latency of sequential writes by size |
//! | `write_rand_lat` | (reads') | QD1 latency of random writes by size |
//! | `read_iops` | `1:11000/4:40000/32:95000` | random-read IOPS of `iops_bs` by queue depth |
//! | `write_iops` | (reads') | random-write IOPS by queue depth |
//! | `read_spread` / `write_spread` | (none) | latency percentiles over the mean, `50:0.6/99:4` |
//! | `iops_bs` | 4k | the size of the IOPS tables' operations |
//! | `read_bandwidth` / `write_bandwidth` | (best sequential rate) | bus ceiling, bytes/s |
//! | `rotational` | 0 | the kernel's rotational flag the device reports |
//! | `capacity` | 64g | size |
//! | `depth` | 64 | commands accepted at once |
//! | `driver` | generic | the driver in front of it |
//!
//! # Deviations (what a table cannot model)
//!
//! * No mechanics: a rotational device's seek time is not a function of the distance here
//!   (the random table is the average over the measured spread of distances); `calibrate`
//!   records the seek curve in `[measured]` but the model does not use it, so schedulers that
//!   win by shortening seeks (deadline's sorting, anticipation) gain nothing on a `table` of
//!   a disk. Use `hdd` keys for that.
//! * No state: no cache hits, read-ahead, write-back cache, garbage collection, wear or
//!   thermal throttling beyond what the averages measured include. Latency spreads only as
//!   `*_spread` says, the same shape at every size and depth, and its order is a fixed
//!   sequence: a real device's slow commands come in bursts (garbage collection, a busy
//!   host), the model's are spread evenly.
//! * Mixed reads and writes are served as if each direction had the device to itself except
//!   for the shared in-device count and bus: interference between them (an SSD's reads
//!   behind its writes) is not measured.
//! * The measured figures include the host's software path of the live run that measured
//!   them (io_uring, O_DIRECT, the kernel's scheduler as it was); the simulator's host adds
//!   its own on top.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use elevator_core::spec::Param;
use elevator_core::units::{parse_duration, parse_size_bytes};
use elevator_core::{ComponentSpec, Duration, Instant, KeyKind, KeySpec, Op, ParamError, Params};

use super::{Command, CommandId, DeviceKind, DeviceModel, DeviceStats, Preset};

/// One line for `elevator list devices`.
pub const SUMMARY: &str =
    "measured device (elevator calibrate): service times interpolated from latency and IOPS tables";

const TEXT: KeyKind = KeyKind::Text;

/// The keys of `table`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "read_seq_lat",
        kind: TEXT,
        default: "4k:60us/128k:300us/1m:2ms",
        help: "QD1 latency of sequential reads by size (SIZE:TIME/...)",
    },
    KeySpec {
        key: "read_rand_lat",
        kind: TEXT,
        default: "4k:90us/128k:350us/1m:2.1ms",
        help: "QD1 latency of random reads by size (SIZE:TIME/...)",
    },
    KeySpec {
        key: "write_seq_lat",
        kind: TEXT,
        default: "",
        help: "QD1 latency of sequential writes by size (empty: the reads')",
    },
    KeySpec {
        key: "write_rand_lat",
        kind: TEXT,
        default: "",
        help: "QD1 latency of random writes by size (empty: the reads')",
    },
    KeySpec {
        key: "read_iops",
        kind: TEXT,
        default: "1:11000/4:40000/32:95000",
        help: "random-read IOPS (of iops_bs) by queue depth (QD:IOPS/...)",
    },
    KeySpec {
        key: "write_iops",
        kind: TEXT,
        default: "",
        help: "random-write IOPS by queue depth (empty: the reads')",
    },
    KeySpec {
        key: "read_spread",
        kind: TEXT,
        default: "",
        help: "reads' latency spread: percentile:multiple of the mean (50:0.8/99:3); empty: none",
    },
    KeySpec {
        key: "write_spread",
        kind: TEXT,
        default: "",
        help: "writes' latency spread, as read_spread (empty: the reads')",
    },
    KeySpec {
        key: "iops_bs",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 30 },
        default: "4k",
        help: "size of the operations the IOPS tables count",
    },
    KeySpec {
        key: "read_bandwidth",
        kind: TEXT,
        default: "",
        help: "bus ceiling of reads in bytes/s (empty: the sequential table's best rate)",
    },
    KeySpec {
        key: "write_bandwidth",
        kind: TEXT,
        default: "",
        help: "bus ceiling of writes in bytes/s (empty: the sequential table's best rate)",
    },
    KeySpec {
        key: "rotational",
        kind: KeyKind::Flag,
        default: "0",
        help: "the rotational flag the device reports",
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
        default: "64",
        help: "commands accepted at once",
    },
    super::driver::DRIVER_KEY,
];

/// `table` has one preset: its defaults, a SATA-class flash drive.
pub const PRESETS: &[Preset] = &[Preset {
    name: "table",
    help: "a table with the defaults above (a SATA-class SSD: ~11k IOPS at QD1, ~95k at QD32, \
           ~540 MB/s); write your own with `elevator calibrate TARGET -o FILE.toml`",
    values: &[],
}];

/// Points of a table: `(x, y)` sorted by `x`, `x` distinct.
#[derive(Clone, Debug, PartialEq)]
struct Curve(Vec<(f64, f64)>);

impl Curve {
    /// `y` at `x`: linear between points, the last slope past the end (never below the last
    /// point), the first point before the start.
    fn at(&self, x: f64) -> f64 {
        let points = &self.0;
        let (first, last) = (points[0], points[points.len() - 1]);
        if x <= first.0 {
            return first.1;
        }
        if let Some(pair) = points.windows(2).find(|pair| x <= pair[1].0) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
        }
        if points.len() == 1 {
            return last.1;
        }
        let before = points[points.len() - 2];
        let slope = ((last.1 - before.1) / (last.0 - before.0)).max(0.0);
        last.1 + slope * (x - last.0)
    }
}

/// Parses `X:Y/X:Y/...` for `key`, `x` and `y` read by the two parsers.
fn parse_curve(
    params: &Params,
    key: &'static str,
    x_of: impl Fn(&str) -> Option<f64>,
    y_of: impl Fn(&str) -> Option<f64>,
    expected: &str,
) -> Result<Curve, ParamError> {
    let text = params.text(key);
    let bad = || ParamError::BadValue {
        component: params.component().to_owned(),
        key,
        value: text.to_owned(),
        expected: expected.to_owned(),
    };
    let mut points = Vec::new();
    for piece in text.split('/').map(str::trim).filter(|piece| !piece.is_empty()) {
        let (x, y) = piece.split_once(':').ok_or_else(bad)?;
        let (x, y) = (x_of(x.trim()).ok_or_else(bad)?, y_of(y.trim()).ok_or_else(bad)?);
        if !(x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite()) {
            return Err(bad());
        }
        points.push((x, y));
    }
    if points.is_empty() {
        return Err(bad());
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    if points.windows(2).any(|pair| pair[0].0 == pair[1].0) {
        return Err(ParamError::Impossible {
            component: params.component().to_owned(),
            key,
            problem: format!("`{text}` gives one point twice"),
        });
    }
    Ok(Curve(points))
}

fn size_of(text: &str) -> Option<f64> {
    parse_size_bytes(text).ok().map(|bytes| bytes as f64)
}

fn nanos_of(text: &str) -> Option<f64> {
    parse_duration(text, 1_000).ok().map(|time| time.as_nanos() as f64)
}

fn number_of(text: &str) -> Option<f64> {
    text.parse::<f64>().ok()
}

const LATENCY_EXPECTED: &str = "SIZE:TIME pairs separated by `/`, e.g. 4k:80us/1m:1.5ms";
const SPREAD_EXPECTED: &str = "PERCENTILE:MULTIPLE-OF-THE-MEAN pairs separated by `/`, percentiles below 100, e.g. 50:0.8/99:3";
const IOPS_EXPECTED: &str = "QD:IOPS pairs separated by `/`, e.g. 1:12000/16:90000";

/// One direction's tables.
#[derive(Clone, Debug, PartialEq)]
struct Direction {
    /// QD1 latency in ns by size in bytes.
    sequential: Curve,
    random: Curve,
    /// Stretch factor by commands inside.
    slowdown: Curve,
    /// Bus ceiling, bytes per second.
    bandwidth_bytes_per_s: f64,
    /// Where the last command of this direction ended.
    last_end: Option<u64>,
    /// Service-time multiplier by quantile (mean 1), `None` without `*_spread`.
    spread: Option<Curve>,
    /// Commands of this direction served, for the spread's quantile sequence.
    served: u64,
}

/// The `i`-th point of the base-2 van der Corput sequence in [0, 1): quantiles visited evenly
/// in any window of commands, with no randomness.
fn van_der_corput(i: u64) -> f64 {
    i.reverse_bits() as f64 / 2f64.powi(64)
}

/// The quantile function of `50:R/99:R` (percentile: multiple of the mean), held flat below
/// the first and above the last percentile and linear between, scaled so that its mean is 1
/// (the tables' latencies are means: the spread must not change the rates).
fn spread_curve(params: &Params, key: &'static str) -> Result<Option<Curve>, ParamError> {
    if params.text(key).trim().is_empty() {
        return Ok(None);
    }
    let points = parse_curve(params, key, number_of, number_of, SPREAD_EXPECTED)?;
    if points.0.iter().any(|&(percentile, _)| percentile >= 100.0) {
        return Err(ParamError::BadValue {
            component: params.component().to_owned(),
            key,
            value: params.text(key).to_owned(),
            expected: SPREAD_EXPECTED.to_owned(),
        });
    }
    let mut quantiles: Vec<(f64, f64)> =
        points.0.iter().map(|&(percentile, ratio)| (percentile / 100.0, ratio)).collect();
    quantiles.insert(0, (0.0, quantiles[0].1));
    quantiles.push((1.0, quantiles[quantiles.len() - 1].1));
    // The mean of a piecewise-linear quantile function: the trapezoids' areas.
    let mean: f64 = quantiles
        .windows(2)
        .map(|pair| (pair[1].0 - pair[0].0) * (pair[0].1 + pair[1].1) / 2.0)
        .sum();
    // Distinct x for `Curve::at`: the held ends are already flat.
    quantiles.dedup_by(|b, a| a.0 == b.0);
    Ok(Some(Curve(quantiles.into_iter().map(|(u, ratio)| (u, ratio / mean)).collect())))
}

impl Direction {
    fn from_params(params: &Params, prefix: &str) -> Result<Option<Direction>, ParamError> {
        let key = |name: &str| -> &'static str {
            KEYS.iter()
                .map(|spec| spec.key)
                .find(|key| *key == format!("{prefix}_{name}"))
                .expect("both directions have every key")
        };
        let (seq, rand, iops, bw) =
            (key("seq_lat"), key("rand_lat"), key("iops"), key("bandwidth"));
        if [seq, rand, iops].iter().all(|key| params.text(key).trim().is_empty()) {
            return Ok(None);
        }
        let spread = spread_curve(params, key("spread"))?;
        let sequential = parse_curve(params, seq, size_of, nanos_of, LATENCY_EXPECTED)?;
        let random = parse_curve(params, rand, size_of, nanos_of, LATENCY_EXPECTED)?;
        let iops = parse_curve(params, iops, number_of, number_of, IOPS_EXPECTED)?;
        if iops.0.iter().any(|(depth, _)| depth.fract() != 0.0) {
            return Err(ParamError::BadValue {
                component: params.component().to_owned(),
                key: key("iops"),
                value: params.text(key("iops")).to_owned(),
                expected: IOPS_EXPECTED.to_owned(),
            });
        }
        // At depth n each command takes n / IOPS(n); relative to depth 1's 1 / IOPS(1).
        let base = iops.at(1.0);
        let deepest = iops.0[iops.0.len() - 1];
        let mut slowdown: Vec<(f64, f64)> =
            iops.0.iter().map(|&(depth, rate)| (depth, (depth * base / rate).max(1.0))).collect();
        if slowdown[0].0 > 1.0 {
            slowdown.insert(0, (1.0, 1.0));
        }
        // Past the deepest point the IOPS stay flat: the stretch grows as n.
        slowdown.push((deepest.0 * 2.0, (2.0 * deepest.0 * base / deepest.1).max(1.0)));
        let best_rate =
            sequential.0.iter().map(|&(bytes, nanos)| bytes * 1e9 / nanos).fold(0.0f64, f64::max);
        let bandwidth_bytes_per_s = match params.text(bw).trim() {
            "" => best_rate,
            text => match parse_size_bytes(text) {
                Ok(bytes) if bytes > 0 => bytes as f64,
                _ => {
                    return Err(ParamError::BadValue {
                        component: params.component().to_owned(),
                        key: bw,
                        value: text.to_owned(),
                        expected: "a rate in bytes per second such as 540m or 3g".to_owned(),
                    });
                }
            },
        };
        Ok(Some(Direction {
            sequential,
            random,
            slowdown: Curve(slowdown),
            bandwidth_bytes_per_s,
            last_end: None,
            spread,
            served: 0,
        }))
    }
}

/// The table-driven device.
#[derive(Debug)]
pub struct Table {
    read: Direction,
    write: Direction,
    rotational: bool,
    capacity_sectors: u64,
    depth: u32,
    /// When each direction's bus is next free.
    bus_free_at: [Instant; 2],
    /// Commands inside, by (finish time, submission order).
    inside: BTreeMap<(Instant, u64), CommandId>,
    submitted: u64,
    busy_since: Option<Instant>,
    sequential_commands: u64,
    stats: DeviceStats,
}

impl Table {
    /// A table device from checked parameters.
    pub fn from_params(params: &Params) -> Result<Table, ParamError> {
        let read =
            Direction::from_params(params, "read")?.ok_or_else(|| ParamError::Impossible {
                component: params.component().to_owned(),
                key: "read_rand_lat",
                problem: "a table needs its read tables".into(),
            })?;
        let write = match Direction::from_params(params, "write")? {
            Some(write) if write.spread.is_none() => {
                Direction { spread: read.spread.clone(), ..write }
            }
            Some(write) => write,
            None => read.clone(),
        };
        Ok(Table {
            read,
            write,
            rotational: params.flag("rotational"),
            capacity_sectors: params.size("capacity") / elevator_core::SECTOR_SIZE_BYTES,
            depth: params.integer("depth") as u32,
            bus_free_at: [Instant::ZERO; 2],
            inside: BTreeMap::new(),
            submitted: 0,
            busy_since: None,
            sequential_commands: 0,
            stats: DeviceStats::default(),
        })
    }

    /// The least time a command of `op` and `bytes` can take (QD1, the faster pattern),
    /// for conformance checks.
    pub fn min_service(&self, op: Op, bytes: u64) -> Duration {
        let direction = if op == Op::Write { &self.write } else { &self.read };
        let nanos = match op {
            Op::Read | Op::Write => {
                let bytes = bytes as f64;
                direction.sequential.at(bytes).min(direction.random.at(bytes))
            }
            Op::Flush | Op::Discard => self.read.random.0[0].1,
        };
        Duration::from_nanos(nanos.ceil() as u64)
    }

    /// The read bus ceiling in bytes per second (the bandwidth a deep stream reaches).
    pub fn read_bandwidth_bytes_per_s(&self) -> f64 {
        self.read.bandwidth_bytes_per_s
    }

    /// The service time of `command` submitted with `inside` commands in the device (itself
    /// included), and whether it was sequential. Reads and writes only.
    fn service(&mut self, command: &Command, inside: usize) -> (Duration, Duration, bool) {
        let direction = if command.op == Op::Read { &mut self.read } else { &mut self.write };
        let sequential = direction.last_end == Some(command.start.0);
        direction.last_end = Some(command.end().0);
        let bytes = command.size_bytes() as f64;
        let curve = if sequential { &direction.sequential } else { &direction.random };
        let mut nanos = curve.at(bytes) * direction.slowdown.at(inside as f64);
        if let Some(spread) = &direction.spread {
            nanos *= spread.at(van_der_corput(direction.served));
        }
        direction.served += 1;
        let transfer = bytes * 1e9 / direction.bandwidth_bytes_per_s;
        // Rounded up so that no command takes zero time.
        (
            Duration::from_nanos(nanos.ceil().max(1.0) as u64),
            Duration::from_nanos(transfer.ceil().max(1.0) as u64),
            sequential,
        )
    }
}

impl DeviceModel for Table {
    fn describe(&self) -> String {
        format!(
            "table: {:.0} us random 4k read at QD1, {}/s read ceiling, {} commands",
            self.read.random.at(4096.0) / 1e3,
            elevator_core::format_size(self.read.bandwidth_bytes_per_s as u64),
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
        self.rotational
    }

    fn submit(&mut self, now: Instant, command: Command) {
        assert!(
            self.inside.len() < self.depth as usize,
            "table: submit beyond depth {}",
            self.depth
        );
        let finish = match command.op {
            Op::Read | Op::Write => {
                let (service, transfer, sequential) = self.service(&command, self.inside.len() + 1);
                self.sequential_commands += u64::from(sequential);
                let bus = usize::from(command.op == Op::Write);
                let bus_end = self.bus_free_at[bus].max(now) + transfer;
                self.bus_free_at[bus] = bus_end;
                (now + service).max(bus_end)
            }
            Op::Flush | Op::Discard => {
                now + Duration::from_nanos(self.read.random.0[0].1.ceil() as u64)
            }
        };
        match command.op {
            Op::Read => self.stats.sectors_read += u64::from(command.sector_count),
            Op::Write => self.stats.sectors_written += u64::from(command.sector_count),
            Op::Flush | Op::Discard => {}
        }
        self.inside.insert((finish, self.submitted), command.id);
        self.submitted += 1;
        self.busy_since.get_or_insert(now);
    }

    fn next_event(&self) -> Option<Instant> {
        self.inside.keys().next().map(|&(at, _)| at)
    }

    fn advance(&mut self, now: Instant, finished: &mut Vec<CommandId>) {
        while let Some((&(at, order), &id)) = self.inside.iter().next() {
            if at > now {
                break;
            }
            self.inside.remove(&(at, order));
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
        let mut stats = self.stats.clone();
        stats.extra = vec![("sequential_commands", self.sequential_commands)];
        stats
    }
}

/// Whether a `-d` spec names a preset file: ends in `.toml` or holds a `/`, and has no `:`
/// or `=` (a spec's `kind:key=value` and its tables' `4k:80us/1m:1ms` have both).
pub fn is_file_spec(text: &str) -> bool {
    let text = text.trim();
    !text.contains([':', '=']) && (text.ends_with(".toml") || text.contains('/'))
}

/// The error `elevator calibrate` stated for the preset file at `path` (`[measured]
/// error_percent`: how far its own repeated measurements spread), if it is a readable preset
/// file that states one. Advice on a calibrated model cannot be surer than its measurements.
pub fn stated_error_percent(path: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    let document: toml::Table = text.parse().ok()?;
    let measured = document.get("measured")?.as_table()?;
    match measured.get("error_percent")? {
        toml::Value::Float(value) => Some(*value),
        toml::Value::Integer(value) => Some(*value as f64),
        _ => None,
    }
    .filter(|value| value.is_finite() && *value >= 0.0)
}

/// The largest request the kernel sent the calibrated device (`[measured]
/// sysfs_max_sectors_kb`, its `queue/max_sectors_kb`), if `device` names a readable preset
/// file that records one: a simulation of the preset splits I/O where the device's kernel
/// did, unless told otherwise (`--max-sectors-kb`).
pub fn measured_max_sectors_kb(device: &str) -> Option<u32> {
    if !is_file_spec(device) {
        return None;
    }
    let text = std::fs::read_to_string(Path::new(device.trim())).ok()?;
    let document: toml::Table = text.parse().ok()?;
    let measured = document.get("measured")?.as_table()?;
    match measured.get("sysfs_max_sectors_kb")? {
        toml::Value::Integer(kb) => u32::try_from(*kb).ok().filter(|kb| *kb >= 4),
        _ => None,
    }
}

/// A preset file read: its kind, its keys as a spec named after the file, and the line of
/// each key (for messages).
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The kind it names.
    pub kind: DeviceKind,
    /// Its keys, as `key=value` parameters, named `PATH`.
    pub spec: ComponentSpec,
    /// The 1-based line of each key.
    pub lines: BTreeMap<String, usize>,
}

/// Reads a preset file: TOML with `kind = "..."`, the kind's keys (strings, numbers or
/// booleans, as on the command line), optionally `rotational` (checked against the kind's
/// for built-in kinds) and a `[measured]` table (ignored). Errors name the file, the line
/// and the key.
pub fn load_file(path: &Path) -> Result<Loaded, ParamError> {
    let name = path.display().to_string();
    let fail = |line: Option<usize>, key: &'static str, problem: String| ParamError::Impossible {
        component: match line {
            Some(line) => format!("{name} line {line}"),
            None => name.clone(),
        },
        key,
        problem,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|error| fail(None, "file", format!("cannot read it: {error}")))?;
    let table: toml::Table = text.parse().map_err(|error: toml::de::Error| {
        let line = error.span().map(|span| text[..span.start].lines().count().max(1));
        fail(line, "toml", error.message().trim().to_owned())
    })?;
    let line_of = |key: &str| -> Option<usize> {
        text.lines()
            .position(|line| {
                let line = line.trim_start();
                line.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('='))
            })
            .map(|index| index + 1)
    };
    let kind_names: Vec<&'static str> = DeviceKind::ALL.iter().map(|kind| kind.name()).collect();
    let kind = match table.get("kind") {
        Some(toml::Value::String(kind)) => {
            DeviceKind::ALL.iter().copied().find(|candidate| candidate.name() == kind).ok_or_else(
                || {
                    fail(
                        line_of("kind"),
                        "kind",
                        format!("unknown kind `{kind}` (accepted: {})", kind_names.join(", ")),
                    )
                },
            )?
        }
        Some(_) => {
            return Err(fail(line_of("kind"), "kind", "must be a string such as \"table\"".into()));
        }
        None => {
            return Err(fail(
                None,
                "kind",
                format!("missing (accepted: {})", kind_names.join(", ")),
            ));
        }
    };
    let mut params = Vec::new();
    let mut lines = BTreeMap::new();
    for (key, value) in &table {
        if key == "kind" || key == "measured" {
            continue;
        }
        let value = match value {
            toml::Value::String(text) => text.clone(),
            toml::Value::Integer(number) => number.to_string(),
            toml::Value::Float(number) => number.to_string(),
            toml::Value::Boolean(flag) => flag.to_string(),
            _ => {
                let mut problem = String::new();
                let _ = write!(problem, "`{key}` must be a string, number or boolean");
                return Err(fail(line_of(key), "value", problem));
            }
        };
        if key == "rotational" && kind != DeviceKind::Table {
            // Built-in kinds know whether they rotate; the file must agree.
            let rotates = kind == DeviceKind::Hdd;
            if value != rotates.to_string() {
                return Err(fail(
                    line_of(key),
                    "rotational",
                    format!("kind `{}` has rotational = {rotates}", kind.name()),
                ));
            }
            continue;
        }
        if let Some(line) = line_of(key) {
            lines.insert(key.clone(), line);
        }
        params.push(Param { key: key.clone(), value });
    }
    Ok(Loaded { kind, spec: ComponentSpec { name, params }, lines })
}

#[cfg(test)]
mod tests {
    use elevator_core::Sector;

    use crate::device::{DeviceKind, DeviceSpec, Probe, iops};

    use super::*;

    fn spec(bandwidth: &str) -> DeviceSpec {
        DeviceSpec::parse(&format!(
            "table:read_seq_lat=4k:20us/1m:1ms,read_rand_lat=4k:100us/1m:1.1ms,\
             read_iops=1:10000/4:20000,read_bandwidth={bandwidth}"
        ))
        .unwrap()
    }

    // Proves the QD1 latency comes from the right table by pattern and size: a random 4k
    // read takes the random table's 100us, the next one starting where it ended the
    // sequential table's 20us, and a 512k random read the interpolated midpoint.
    #[test]
    fn qd1_latency_by_pattern_and_size() {
        let mut probe = Probe::new(spec("2g").build().unwrap());
        let run = probe.closed_loop(
            [(Op::Read, Sector(1000), 8), (Op::Read, Sector(1008), 8), (Op::Read, Sector(0), 1024)],
            1,
        );
        let took: Vec<u64> =
            run.iter().map(|timed| (timed.finished - timed.submitted).as_nanos()).collect();
        assert_eq!(took[0], 100_000);
        assert_eq!(took[1], 20_000);
        // 512 KiB between 4 KiB (100us) and 1 MiB (1.1ms), linear in size.
        let expected = 100_000.0 + 1_000_000.0 * (524_288.0 - 4096.0) / (1_048_576.0 - 4096.0);
        assert!((took[2] as f64 - expected).abs() <= 1.0, "{took:?}");
    }

    // Proves the IOPS table is reproduced in a closed loop: at depth 1 the device gives the
    // table's 10000 IOPS, at depth 4 its 20000, and at depth 8 (past the table) no more than
    // the deepest point's 20000 (the parallelism measured is all there is).
    #[test]
    fn closed_loop_reproduces_the_iops_table() {
        for (depth, expected) in [(1u32, 10_000.0), (4, 20_000.0), (8, 20_000.0)] {
            let mut probe = Probe::new(spec("2g").build().unwrap());
            // Random: each start is far from the previous end.
            let run = probe.closed_loop(
                (0..4000u64).map(|i| (Op::Read, Sector((i * 7919 % 4000) * 64), 8)),
                depth,
            );
            let rate = iops(&run);
            assert!((rate / expected - 1.0).abs() < 0.02, "QD{depth}: {rate}");
        }
    }

    // Proves the bus ceiling holds deep sequential streams to the stated bandwidth rather
    // than depth × the QD1 rate.
    #[test]
    fn bandwidth_ceiling_caps_deep_streams() {
        let mut probe = Probe::new(spec("1500m").build().unwrap());
        let run = probe.closed_loop((0..500u64).map(|i| (Op::Read, Sector(i * 2048), 2048)), 16);
        let rate = crate::device::throughput_bytes_per_s(&run);
        assert!((rate / (1500.0 * 1048576.0) - 1.0).abs() < 0.02, "{rate}");
    }

    // Proves malformed tables are refused with the key named.
    #[test]
    fn bad_tables_are_refused() {
        for bad in ["read_iops=1:x", "read_iops=1.5:100", "read_rand_lat=4k:0us", "read_seq_lat="] {
            let error = DeviceSpec::parse(&format!("table:{bad}")).unwrap_err().to_string();
            let key = bad.split('=').next().unwrap();
            assert!(error.contains(key), "{bad}: {error}");
        }
    }

    /// Writes `text` to a fresh file under the temporary directory named `name`.
    fn preset_file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("elevator-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    // Proves a preset file loads through `DeviceSpec::parse` like a built-in preset: its keys
    // reach the model, the `[measured]` table is ignored, and it displays as its path.
    #[test]
    fn preset_file_loads() {
        let path = preset_file(
            "good.toml",
            "kind = \"table\"\nrotational = true\ndepth = 8\ncapacity = \"1g\"\n\
             read_rand_lat = \"4k:5ms\"\nread_seq_lat = \"4k:100us\"\nread_iops = \"1:200\"\n\
             [measured]\ntarget = \"/dev/sdz\"\n",
        );
        let spec = DeviceSpec::parse(path.to_str().unwrap()).unwrap();
        assert_eq!(spec.kind(), DeviceKind::Table);
        assert_eq!(spec.to_string(), path.to_str().unwrap());
        let device = spec.build().unwrap();
        assert!(device.rotational());
        assert_eq!(device.queue_depth(), 8);
        assert_eq!(device.capacity_sectors(), (1 << 30) / 512);
        // A built-in kind's keys work too.
        let ssd = preset_file("ssd.toml", "kind = \"ssd\"\nrotational = false\n");
        assert_eq!(DeviceSpec::parse(ssd.to_str().unwrap()).unwrap().kind(), DeviceKind::Ssd);
    }

    // Proves a bad preset file is refused naming the file, the line and the key at fault,
    // for a syntax error, an unknown key, a bad value and a rotational flag at odds with the
    // kind.
    #[test]
    fn bad_preset_file_names_line_and_key() {
        let cases = [
            ("syntax.toml", "kind = \"table\"\ndepth = = 3\n", "line 2", "toml"),
            ("unknown.toml", "kind = \"table\"\n\nrpm = 7200\n", "line 3", "rpm"),
            ("value.toml", "kind = \"table\"\nread_iops = \"1:x\"\n", "line 2", "read_iops"),
            ("rot.toml", "kind = \"ssd\"\nrotational = true\n", "line 2", "rotational"),
            ("kind.toml", "kind = \"floppy\"\n", "line 1", "kind"),
        ];
        for (name, text, line, key) in cases {
            let path = preset_file(name, text);
            let message = DeviceSpec::parse(path.to_str().unwrap()).unwrap_err().to_string();
            assert!(message.contains(path.to_str().unwrap()), "{name}: {message}");
            assert!(message.contains(line), "{name}: {message}");
            assert!(message.contains(key), "{name}: {message}");
        }
        let missing = DeviceSpec::parse("./no-such-preset.toml").unwrap_err().to_string();
        assert!(missing.contains("no-such-preset.toml"), "{missing}");
    }

    // Proves the spread shapes latency without changing the rate: at QD1 the median and the
    // 99th percentile stand at their stated multiples of the mean (after the scaling to a
    // mean of 1), and the IOPS stay the table's.
    #[test]
    fn spread_shapes_latency_keeps_the_rate() {
        let spec = DeviceSpec::parse(
            "table:read_seq_lat=4k:20us,read_rand_lat=4k:100us,read_iops=1:10000,\
             read_spread=50:0.5/99:5",
        )
        .unwrap();
        let mut probe = Probe::new(spec.build().unwrap());
        let run = probe.closed_loop(
            (0..10_000u64).map(|i| (Op::Read, Sector((i * 7919 % 10_000) * 64), 8)),
            1,
        );
        let mut took: Vec<f64> =
            run.iter().map(|timed| (timed.finished - timed.submitted).as_nanos() as f64).collect();
        took.sort_by(f64::total_cmp);
        let mean = took.iter().sum::<f64>() / took.len() as f64;
        assert!((mean / 100_000.0 - 1.0).abs() < 0.01, "mean {mean}");
        // The quantile function's mean before scaling: flat 0.5 to the median, linear to 5 at
        // the 99th percentile, flat 5 after.
        let unscaled = 0.5 * 0.5 + 0.49 * (0.5 + 5.0) / 2.0 + 0.01 * 5.0;
        let p50 = took[took.len() / 2];
        let p99 = took[took.len() * 99 / 100];
        assert!((p50 / (100_000.0 * 0.5 / unscaled) - 1.0).abs() < 0.02, "p50 {p50}");
        assert!((p99 / (100_000.0 * 5.0 / unscaled) - 1.0).abs() < 0.02, "p99 {p99}");
        assert!((iops(&run) / 10_000.0 - 1.0).abs() < 0.01);
    }
}
