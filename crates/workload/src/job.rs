//! `job`: a block-level workload with fio's option names and meanings.
//!
//! Each clone (`numjobs`) is one process that keeps up to `iodepth` operations in flight over
//! its region (`offset + i × offset_increment`, `size` long, or to the end of the device), in
//! the pattern `rw` names, with `bs`-sized (or `bsrange`) operations, mixing reads and writes
//! `rwmixread` percent to the rest, pausing `thinktime` after each completion, until it has
//! moved `size` bytes or `runtime` has passed (`time_based` keeps going until `runtime`).
//!
//! # Keys
//!
//! | key | default | fio's meaning |
//! |---|---|---|
//! | `rw` | read | read, write, randread, randwrite, rw (= readwrite), randrw |
//! | `bs` | 4k | block size |
//! | `bsrange` | — | `MIN-MAX`: sizes uniformly drawn among multiples of MIN |
//! | `bssplit` | — | `SIZE/PERCENT:...`: each size drawn with its share (blank shares split the rest) |
//! | `size` | rest of the device | bytes per clone (region and amount) |
//! | `io_size` | `size` | amount of I/O per clone, independent of the region |
//! | `runtime` | — | cap on run time, seconds if bare |
//! | `time_based` | 0 | loop over the region until `runtime` |
//! | `iodepth` | 1 | operations in flight per clone |
//! | `numjobs` | 1 | clones |
//! | `rwmixread` / `rwmixwrite` | 50 / — | read percentage of mixed patterns |
//! | `thinktime` | 0 | pause after each completion, µs if bare |
//! | `offset` | 0 | start of the region (bytes or `N%` of the device) |
//! | `offset_increment` | 0 | clone i starts at `offset + i × offset_increment` |
//! | `prioclass` / `prio` | — | I/O priority class 0–3 and level 0–7 |
//! | `direct` | 1 | O_DIRECT (writes are then synchronous, as the kernel marks them) |
//! | `filename` | first device | device name(s), `:`-separated, served round robin |
//! | `ioengine` | io_uring | psync/sync/pvsync/pvsync2 cap the depth at 1 as in fio |
//!
//! # Deviations from fio
//!
//! * `direct` defaults to 1 and `ioengine` to io_uring: `job` is the block-level workload, so
//!   `iodepth` works without extra keys. Buffered I/O (`direct=0`) belongs to the host model.
//! * Random offsets are drawn uniformly with replacement (fio's `norandommap=1`); fio's default
//!   random map touches every block once per pass.
//! * `thinktime` behaves as fio's default `thinktime_blocks=1`: after every completion, which
//!   makes the effective depth 1.

use elevator_core::{
    Duration, Instant, IoPriority, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId,
    RequestFlags, SECTOR_SIZE_BYTES, units,
};

use crate::process::{check_sectors, parse_block_range};
use crate::{Io, IoId, IoKind, Issuer, PhasePlan, Place, Poll, Target, WorkloadPlan};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str = "fio-style block-level job: rw, bs, size, iodepth, numjobs, thinktime";

const MAX_TIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// The keys of `job`, fio's names.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "rw",
        kind: KeyKind::Choice(&[
            "read",
            "write",
            "randread",
            "randwrite",
            "rw",
            "readwrite",
            "randrw",
        ]),
        default: "read",
        help: "I/O pattern",
    },
    KeySpec {
        key: "bs",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 64 << 20 },
        default: "4k",
        help: "block size (a multiple of 512)",
    },
    KeySpec {
        key: "bsrange",
        kind: KeyKind::Text,
        default: "",
        help: "MIN-MAX: sizes drawn uniformly among multiples of MIN",
    },
    KeySpec {
        key: "bssplit",
        kind: KeyKind::Text,
        default: "",
        help: "SIZE/PERCENT:...: each size drawn with its share, e.g. 4k/60:64k/40",
    },
    KeySpec {
        key: "size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 60 },
        default: "",
        help: "bytes per clone, region and amount (default: to the end of the device)",
    },
    KeySpec {
        key: "io_size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 60 },
        default: "",
        help: "bytes of I/O per clone, independent of the region (default: size)",
    },
    KeySpec {
        key: "runtime",
        kind: KeyKind::Time { min: Duration::ZERO, max: MAX_TIME, bare_unit: "s" },
        default: "0",
        help: "cap on run time (0: none)",
    },
    KeySpec {
        key: "time_based",
        kind: KeyKind::Flag,
        default: "0",
        help: "loop over the region until runtime",
    },
    KeySpec {
        key: "iodepth",
        kind: KeyKind::Integer { min: 1, max: 65_536 },
        default: "1",
        help: "operations in flight per clone",
    },
    KeySpec {
        key: "numjobs",
        kind: KeyKind::Integer { min: 1, max: 4096 },
        default: "1",
        help: "clones, each its own process",
    },
    KeySpec {
        key: "rwmixread",
        kind: KeyKind::Integer { min: 0, max: 100 },
        default: "50",
        help: "percent reads in rw/randrw",
    },
    KeySpec {
        key: "rwmixwrite",
        kind: KeyKind::Integer { min: 0, max: 100 },
        default: "",
        help: "percent writes in rw/randrw (sets rwmixread to the rest)",
    },
    KeySpec {
        key: "thinktime",
        kind: KeyKind::Time { min: Duration::ZERO, max: MAX_TIME, bare_unit: "us" },
        default: "0",
        help: "pause after each completion",
    },
    KeySpec {
        key: "offset",
        kind: KeyKind::Text,
        default: "0",
        help: "start of the region: bytes (512k, 1g) or N% of the device",
    },
    KeySpec {
        key: "offset_increment",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 60 },
        default: "0",
        help: "clone i starts at offset + i * offset_increment",
    },
    KeySpec {
        key: "prioclass",
        kind: KeyKind::Text,
        default: "",
        help: "I/O priority class 0-3 (1 realtime, 2 best-effort, 3 idle); :-separated, one per clone",
    },
    KeySpec {
        key: "prio",
        kind: KeyKind::Text,
        default: "",
        help: "I/O priority level 0-7, 0 highest; :-separated, one per clone (prio=0:7)",
    },
    KeySpec {
        key: "direct",
        kind: KeyKind::Flag,
        default: "1",
        help: "O_DIRECT; writes are synchronous",
    },
    KeySpec {
        key: "filename",
        kind: KeyKind::Text,
        default: "",
        help: "device name(s), :-separated (default: the first device)",
    },
    KeySpec {
        key: "ioengine",
        kind: KeyKind::Choice(&[
            "io_uring", "libaio", "posixaio", "psync", "sync", "pvsync", "pvsync2",
        ]),
        default: "io_uring",
        help: "synchronous engines cap the depth at 1",
    },
];

/// Which direction each operation goes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mix {
    Read,
    Write,
    /// Reads with this probability, writes otherwise.
    Mixed {
        read_fraction: f64,
    },
}

/// Shares of `bssplit` are kept in parts per million (fio takes percentages with decimals).
const SPLIT_WHOLE_PPM: u64 = 1_000_000;

/// Operation sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum BlockSize {
    Fixed(u64),
    /// Multiples of `min_bytes` up to `max_bytes`.
    Range {
        min_bytes: u64,
        max_bytes: u64,
    },
    /// `bssplit`: (size in bytes, cumulative share in ppm), the last share
    /// [`SPLIT_WHOLE_PPM`].
    Split(Vec<(u64, u64)>),
}

impl BlockSize {
    fn min_bytes(&self) -> u64 {
        match self {
            BlockSize::Fixed(bytes) => *bytes,
            BlockSize::Range { min_bytes, .. } => *min_bytes,
            BlockSize::Split(entries) => entries.iter().map(|(bytes, _)| *bytes).min().unwrap_or(0),
        }
    }

    fn max_bytes(&self) -> u64 {
        match self {
            BlockSize::Fixed(bytes) => *bytes,
            BlockSize::Range { max_bytes, .. } => *max_bytes,
            BlockSize::Split(entries) => entries.iter().map(|(bytes, _)| *bytes).max().unwrap_or(0),
        }
    }

    fn draw(&self, prng: &mut Prng) -> u64 {
        match self {
            BlockSize::Fixed(bytes) => *bytes,
            BlockSize::Range { min_bytes, max_bytes } => {
                min_bytes * prng.range_inclusive(1, max_bytes / min_bytes)
            }
            // fio draws a number below 100 and takes the first entry whose running share
            // reaches it (`io_u.c` get_next_buflen, fio-compat.md §2.1 bssplit).
            BlockSize::Split(entries) => {
                let point = prng.below(SPLIT_WHOLE_PPM);
                entries
                    .iter()
                    .find(|(_, cumulative)| point < *cumulative)
                    .or(entries.last())
                    .map_or(0, |(bytes, _)| *bytes)
            }
        }
    }

    /// Parses `bssplit`: `SIZE/PERCENT` entries `:`-separated; entries without a percentage
    /// share what the others leave, equally (fio's rule); the shares must make 100.
    fn parse_split(params: &Params) -> Result<BlockSize, ParamError> {
        let text = params.text("bssplit");
        let bad = |problem: String| params.impossible("bssplit", problem);
        let mut entries: Vec<(u64, Option<f64>)> = Vec::new();
        for entry in text.split(':') {
            let (size, percent) = match entry.split_once('/') {
                Some((size, percent)) => (size, percent.trim()),
                None => (entry, ""),
            };
            let bytes = units::parse_size_bytes(size.trim())
                .map_err(|error| bad(format!("`{entry}`: {error} (SIZE/PERCENT, e.g. 4k/60)")))?;
            if bytes == 0 || bytes > 64 << 20 {
                return Err(bad(format!("`{entry}`: a size must be in 1..=64m")));
            }
            check_sectors(params, "bssplit", bytes)?;
            let percent = if percent.is_empty() {
                None
            } else {
                match percent.parse::<f64>() {
                    Ok(value) if (0.0..=100.0).contains(&value) => Some(value),
                    _ => return Err(bad(format!("`{entry}`: the share must be 0..=100"))),
                }
            };
            entries.push((bytes, percent));
        }
        let given: f64 = entries.iter().filter_map(|(_, percent)| *percent).sum();
        let blanks = entries.iter().filter(|(_, percent)| percent.is_none()).count();
        let rest = if blanks > 0 { (100.0 - given) / blanks as f64 } else { 0.0 };
        let mut cumulative_ppm = 0;
        let mut split = Vec::with_capacity(entries.len());
        for (bytes, percent) in entries {
            cumulative_ppm += (percent.unwrap_or(rest) * 1e4).round() as u64;
            split.push((bytes, cumulative_ppm));
        }
        if rest < 0.0 || cumulative_ppm.abs_diff(SPLIT_WHOLE_PPM) > entries_tolerance(&split) {
            return Err(bad(format!("the shares of `{text}` make {given}%, not 100%")));
        }
        if let Some(last) = split.last_mut() {
            last.1 = SPLIT_WHOLE_PPM;
        }
        Ok(BlockSize::Split(split))
    }
}

/// Rounding each share to a ppm may be off by one per entry.
fn entries_tolerance(split: &[(u64, u64)]) -> u64 {
    split.len() as u64
}

/// Where the region starts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Offset {
    Bytes(u64),
    Percent(f64),
}

/// The checked configuration of a `job`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct JobConfig {
    random: bool,
    mix: Mix,
    block_size: BlockSize,
    size_bytes: Option<u64>,
    io_size_bytes: Option<u64>,
    runtime: Duration,
    time_based: bool,
    depth: u32,
    clones: u32,
    thinktime: Duration,
    offset: Offset,
    offset_increment_bytes: u64,
    /// One priority, or one per clone.
    priorities: Vec<IoPriority>,
    direct: bool,
    filenames: Vec<String>,
}

impl JobConfig {
    pub(crate) fn from_params(params: &Params) -> Result<JobConfig, ParamError> {
        let rw = params.text("rw");
        let random = rw.starts_with("rand");
        let read_percent = match (params.is_set("rwmixread"), params.has("rwmixwrite")) {
            (true, true) if params.integer("rwmixread") + params.integer("rwmixwrite") != 100 => {
                return Err(params.impossible("rwmixwrite", "rwmixread + rwmixwrite must be 100"));
            }
            (false, true) => 100 - params.integer("rwmixwrite"),
            _ => params.integer("rwmixread"),
        };
        let mix = match rw {
            "read" | "randread" => Mix::Read,
            "write" | "randwrite" => Mix::Write,
            _ => Mix::Mixed { read_fraction: read_percent as f64 / 100.0 },
        };
        if params.has("bssplit") && (params.has("bsrange") || params.is_set("bs")) {
            return Err(params.impossible("bssplit", "give one of bs, bsrange and bssplit"));
        }
        let block_size = if params.has("bssplit") {
            BlockSize::parse_split(params)?
        } else if params.has("bsrange") {
            let (min_bytes, max_bytes) = parse_block_range(params, "bsrange", 64 << 20)?;
            BlockSize::Range { min_bytes, max_bytes }
        } else {
            let bytes = params.size("bs");
            check_sectors(params, "bs", bytes)?;
            BlockSize::Fixed(bytes)
        };
        let size_bytes = params.has("size").then(|| params.size("size"));
        if let Some(size) = size_bytes {
            check_sectors(params, "size", size)?;
            if size < block_size.min_bytes() {
                return Err(params.impossible("size", "is smaller than one block"));
            }
        }
        let io_size_bytes = params.has("io_size").then(|| params.size("io_size"));
        if let Some(io_size) = io_size_bytes {
            check_sectors(params, "io_size", io_size)?;
        }
        let offset_text = params.text("offset");
        let offset = match offset_text.strip_suffix('%') {
            Some(percent) => {
                let percent: f64 = percent.trim().parse().map_err(|_| {
                    params.impossible("offset", format!("`{offset_text}` is not a percentage"))
                })?;
                if !(0.0..100.0).contains(&percent) {
                    return Err(params.impossible("offset", "a percentage must be in 0..100"));
                }
                Offset::Percent(percent)
            }
            None => {
                let bytes = units::parse_size_bytes(offset_text).map_err(|error| {
                    params.impossible("offset", format!("{error} (bytes such as 1g, or N%)"))
                })?;
                check_sectors(params, "offset", bytes)?;
                Offset::Bytes(bytes)
            }
        };
        let offset_increment_bytes = params.size("offset_increment");
        check_sectors(params, "offset_increment", offset_increment_bytes)?;
        let priorities = Self::priorities(params)?;
        let synchronous_engine =
            matches!(params.text("ioengine"), "psync" | "sync" | "pvsync" | "pvsync2");
        let thinktime = params.time("thinktime");
        let depth = if synchronous_engine || thinktime > Duration::ZERO {
            1
        } else {
            params.integer("iodepth") as u32
        };
        let runtime = params.time("runtime");
        if params.flag("time_based") && runtime == Duration::ZERO {
            // fio runs such a job forever; a run here always has an end.
            return Err(params.impossible("runtime", "time_based=1 needs a runtime (e.g. 10s)"));
        }
        let filenames = if params.has("filename") {
            params.text("filename").split(':').map(|name| name.trim().to_owned()).collect()
        } else {
            Vec::new()
        };
        Ok(JobConfig {
            random,
            mix,
            block_size,
            size_bytes,
            io_size_bytes,
            runtime,
            time_based: params.flag("time_based"),
            depth,
            clones: params.integer("numjobs") as u32,
            thinktime,
            offset,
            offset_increment_bytes,
            priorities,
            direct: params.flag("direct"),
            filenames,
        })
    }

    /// The smallest and largest operation sizes, in bytes.
    pub(crate) fn block_bounds_bytes(&self) -> (u64, u64) {
        (self.block_size.min_bytes(), self.block_size.max_bytes())
    }

    /// `prioclass` and `prio`, each one value or a `:`-separated list with one per clone
    /// (the priorities of clone i are the lists' i-th entries).
    fn priorities(params: &Params) -> Result<Vec<IoPriority>, ParamError> {
        let clones = params.integer("numjobs") as usize;
        let list = |key: &'static str, max: i64| -> Result<Vec<Option<i64>>, ParamError> {
            if !params.has(key) {
                return Ok(vec![None]);
            }
            let values = params
                .text(key)
                .split(':')
                .map(|text| match text.trim().parse::<i64>() {
                    Ok(value) if (0..=max).contains(&value) => Ok(Some(value)),
                    _ => Err(params.impossible(
                        key,
                        format!("`{text}` is not an integer 0..={max} (a list is :-separated)"),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            if values.len() != 1 && values.len() != clones {
                return Err(params.impossible(
                    key,
                    format!(
                        "{} values for {clones} clones: give one, or one per clone",
                        values.len()
                    ),
                ));
            }
            Ok(values)
        };
        let classes = list("prioclass", 3)?;
        let levels = list("prio", 7)?;
        let count = classes.len().max(levels.len());
        (0..count)
            .map(|clone| {
                let class = classes[clone % classes.len()];
                let level = levels[clone % levels.len()].map(|level| level as u8);
                let priority = match (class, level) {
                    (None, None) => Ok(IoPriority::DEFAULT),
                    (None, Some(level)) | (Some(2), Some(level)) => IoPriority::best_effort(level),
                    (Some(0), Some(_)) => {
                        return Err(params.impossible("prio", "class 0 (none) takes no level"));
                    }
                    (Some(0), None) => Ok(IoPriority::DEFAULT),
                    (Some(1), level) => IoPriority::realtime(level.unwrap_or(0)),
                    (Some(2), None) => IoPriority::best_effort(0),
                    (Some(_), _) => Ok(IoPriority::idle()),
                };
                priority.map_err(|error| params.impossible("prio", error.to_string()))
            })
            .collect()
    }

    pub(crate) fn plan(
        &self,
        params: &Params,
        targets: &[Target],
        prng: &Prng,
    ) -> Result<WorkloadPlan, ParamError> {
        self.plan_as(params, targets, prng, 0, "job", &[])
    }

    /// [`JobConfig::plan`] with clone i named `name/i` and run as process
    /// `first_process + i + 1`, so several jobs can share a phase (fio job files). Given
    /// `places` (per clone, `i % len`: the places and their extents, e.g. fio's regular files
    /// as [`Place::File`]), the clones address those instead of `filename`'s devices.
    pub(crate) fn plan_as(
        &self,
        params: &Params,
        targets: &[Target],
        prng: &Prng,
        first_process: u32,
        name: &str,
        places: &[Vec<(Place, Target)>],
    ) -> Result<WorkloadPlan, ParamError> {
        if targets.is_empty() {
            return Err(params.impossible("filename", "there is no device to address"));
        }
        let devices: Vec<(Place, &Target)> = if self.filenames.is_empty() {
            vec![(Place::Device(0), &targets[0])]
        } else {
            self.filenames
                .iter()
                .map(|name| {
                    let index = targets.iter().position(|target| &target.name == name).ok_or_else(
                        || {
                            let names: Vec<&str> =
                                targets.iter().map(|t| t.name.as_str()).collect();
                            params.impossible(
                                "filename",
                                format!("no device `{name}` (accepted: {})", names.join(", ")),
                            )
                        },
                    )?;
                    Ok((Place::Device(index), &targets[index]))
                })
                .collect::<Result<_, ParamError>>()?
        };
        let mut issuers: Vec<Box<dyn Issuer>> = Vec::with_capacity(self.clones as usize);
        for clone in 0..self.clones {
            let places: Vec<(Place, &Target)> = if places.is_empty() {
                devices.clone()
            } else {
                places[clone as usize % places.len()].iter().map(|(p, t)| (*p, t)).collect()
            };
            let regions = places
                .iter()
                .map(|&(place, target)| self.region(params, target, place, clone, places.len()))
                .collect::<Result<Vec<_>, _>>()?;
            let budget_bytes = match (self.io_size_bytes, self.size_bytes) {
                (Some(io_size), _) => io_size,
                (None, Some(size)) => size,
                (None, None) => regions.iter().map(|region| region.length_bytes).sum(),
            };
            issuers.push(Box::new(JobIssuer {
                name: format!("{name}/{clone}"),
                process: ProcessId(first_process + clone + 1),
                config: self.clone(),
                regions,
                next_region: 0,
                budget_bytes,
                issued_bytes: 0,
                outstanding: 0,
                deadline: None,
                think_until: None,
                finishing: false,
                prng: prng.fork_indexed("job", u64::from(clone)),
                next_id: 0,
                clone_index: clone,
            }));
        }
        let name = match (self.random, self.mix) {
            (false, Mix::Read) => "read",
            (false, Mix::Write) => "write",
            (false, Mix::Mixed { .. }) => "rw",
            (true, Mix::Read) => "randread",
            (true, Mix::Write) => "randwrite",
            (true, Mix::Mixed { .. }) => "randrw",
        };
        Ok(WorkloadPlan {
            files: Vec::new(),
            phases: vec![PhasePlan { name: name.to_owned(), issuers, stonewall: false }],
        })
    }

    /// Clone `clone`'s region on `target`.
    fn region(
        &self,
        params: &Params,
        target: &Target,
        place: Place,
        clone: u32,
        file_count: usize,
    ) -> Result<Region, ParamError> {
        let capacity = target.capacity_bytes;
        let base = match self.offset {
            Offset::Bytes(bytes) => bytes,
            Offset::Percent(percent) => {
                let bytes = (capacity as f64 * percent / 100.0) as u64;
                bytes - bytes % self.block_size.min_bytes().max(SECTOR_SIZE_BYTES)
            }
        };
        let start = self
            .offset_increment_bytes
            .checked_mul(u64::from(clone))
            .and_then(|shift| shift.checked_add(base))
            .filter(|&start| start < capacity)
            .ok_or_else(|| {
                params.impossible(
                    "offset",
                    format!(
                        "clone {clone} would start past the end of {} ({capacity} bytes)",
                        target.name
                    ),
                )
            })?;
        let length_bytes = match self.size_bytes {
            Some(size) => (size / file_count as u64).max(self.block_size.min_bytes()),
            None => capacity - start,
        };
        if start + length_bytes > capacity {
            return Err(params.impossible(
                "size",
                format!(
                    "clone {clone}'s region {start}..{} runs past the end of {} ({capacity} bytes)",
                    start + length_bytes,
                    target.name
                ),
            ));
        }
        if self.block_size.max_bytes() > length_bytes {
            let key =
                ["bssplit", "bsrange"].into_iter().find(|key| params.has(key)).unwrap_or("bs");
            return Err(params.impossible(
                key,
                format!("a block is larger than the {length_bytes}-byte region on {}", target.name),
            ));
        }
        Ok(Region { place, start_bytes: start, length_bytes, next_read: 0, next_write: 0 })
    }
}

/// A clone's part of one device.
#[derive(Clone, Debug)]
struct Region {
    place: Place,
    start_bytes: u64,
    length_bytes: u64,
    /// Sequential position of the next read and write, relative to the start (fio keeps one
    /// per direction).
    next_read: u64,
    next_write: u64,
}

/// One clone of a job.
#[derive(Debug)]
struct JobIssuer {
    name: String,
    process: ProcessId,
    config: JobConfig,
    regions: Vec<Region>,
    next_region: usize,
    budget_bytes: u64,
    issued_bytes: u64,
    outstanding: u32,
    deadline: Option<Instant>,
    think_until: Option<Instant>,
    /// Past its runtime or its amount: it submits nothing more.
    finishing: bool,
    prng: Prng,
    next_id: u64,
    /// Which clone it is (its entry in per-clone lists such as `prio=0:7`).
    clone_index: u32,
}

impl Issuer for JobIssuer {
    fn name(&self) -> &str {
        &self.name
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn priority(&self) -> IoPriority {
        let priorities = &self.config.priorities;
        priorities[self.clone_index as usize % priorities.len()]
    }

    fn poll(&mut self, now: Instant) -> Poll {
        let runtime = self.config.runtime;
        let deadline = *self.deadline.get_or_insert_with(|| {
            if runtime > Duration::ZERO { now.saturating_add(runtime) } else { Instant::MAX }
        });
        let out_of_time = now >= deadline;
        let out_of_bytes = !self.config.time_based && self.issued_bytes >= self.budget_bytes;
        if out_of_time || out_of_bytes {
            self.finishing = true;
            return if self.outstanding == 0 { Poll::Done } else { Poll::Wait };
        }
        if self.outstanding >= self.config.depth {
            return Poll::Wait;
        }
        if let Some(until) = self.think_until
            && until > now
        {
            return Poll::Sleep { until: until.min(deadline) };
        }
        match self.poll_next_io() {
            Some(io) => {
                self.outstanding += 1;
                self.issued_bytes += io.size_bytes;
                Poll::Submit(io)
            }
            None if self.outstanding == 0 => Poll::Done,
            None => Poll::Wait,
        }
    }

    fn finishing(&self, now: Instant) -> bool {
        self.finishing || self.deadline.is_some_and(|deadline| now >= deadline)
    }

    fn complete(&mut self, now: Instant, _io: IoId) {
        self.outstanding = self.outstanding.checked_sub(1).expect("completion without an I/O");
        if self.config.thinktime > Duration::ZERO {
            self.think_until = Some(now.saturating_add(self.config.thinktime));
        }
    }
}

impl JobIssuer {
    /// The next operation, or `None` when a sequential pass ended and the job is not
    /// time-based.
    fn poll_next_io(&mut self) -> Option<Io> {
        let kind = match self.config.mix {
            Mix::Read => IoKind::Read,
            Mix::Write => IoKind::Write,
            Mix::Mixed { read_fraction } => {
                if self.prng.chance(read_fraction) {
                    IoKind::Read
                } else {
                    IoKind::Write
                }
            }
        };
        let mut size = self.config.block_size.draw(&mut self.prng);
        if !self.config.time_based {
            // The last operation may be shorter, as fio's is when size is not a multiple.
            let remaining = self.budget_bytes - self.issued_bytes;
            size = size.min(remaining - remaining % SECTOR_SIZE_BYTES).max(SECTOR_SIZE_BYTES);
        }
        let index = self.next_region;
        self.next_region = (self.next_region + 1) % self.regions.len();
        let region = &mut self.regions[index];
        let relative = if self.config.random {
            let align = self.config.block_size.min_bytes();
            let slots = (region.length_bytes - size) / align + 1;
            self.prng.below(slots) * align
        } else {
            let position =
                if kind == IoKind::Read { &mut region.next_read } else { &mut region.next_write };
            if *position + size > region.length_bytes {
                if !self.config.time_based {
                    return None;
                }
                *position = 0;
            }
            let relative = *position;
            *position += size;
            relative
        };
        // Reads are always synchronous; so are O_DIRECT writes (the kernel marks them so).
        // Buffered writes are the host's to classify (write-back is asynchronous).
        let flags = if self.config.direct || kind == IoKind::Read {
            RequestFlags::SYNC
        } else {
            RequestFlags::NONE
        };
        let id = IoId(self.next_id);
        self.next_id += 1;
        Some(Io {
            id,
            kind,
            place: region.place,
            offset_bytes: region.start_bytes + relative,
            size_bytes: size,
            direct: self.config.direct,
            flags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkloadSpec;
    use crate::testing::{devices, drive, parse_error, plan_error};

    fn targets() -> Vec<Target> {
        devices(&[("sda", 1 << 30), ("sdb", 1 << 20)])
    }

    fn plan(text: &str) -> WorkloadPlan {
        WorkloadSpec::parse(text).unwrap().plan(&targets(), &Prng::new(7)).unwrap()
    }

    // Proves a sequential read walks its region in bs steps and stops after size bytes.
    #[test]
    fn sequential_reads_walk_the_region() {
        let log = drive(plan("job:rw=read,bs=64k,size=1m,offset=1m"), Duration::from_micros(100));
        let offsets: Vec<u64> = log.iter().map(|(_, _, io)| io.offset_bytes).collect();
        let expected: Vec<u64> = (0..16).map(|i| (1 << 20) + i * (64 << 10)).collect();
        assert_eq!(offsets, expected);
        assert!(log.iter().all(|(_, _, io)| io.kind == IoKind::Read && io.size_bytes == 64 << 10));
    }

    // Proves random offsets stay inside the region, aligned to bs, and the same seed gives the
    // same offsets while another seed does not.
    #[test]
    fn random_offsets_are_aligned_and_seeded() {
        let text = "job:rw=randread,bs=4k,size=1m,offset=4m,iodepth=8";
        let log = drive(plan(text), Duration::from_micros(100));
        assert_eq!(log.len(), 256);
        for (_, _, io) in &log {
            assert_eq!(io.offset_bytes % 4096, 0);
            assert!(io.offset_bytes >= 4 << 20 && io.offset_bytes + 4096 <= 5 << 20);
        }
        let again = drive(plan(text), Duration::from_micros(100));
        assert_eq!(log, again);
        let other = WorkloadSpec::parse(text).unwrap().plan(&targets(), &Prng::new(8)).unwrap();
        assert_ne!(drive(other, Duration::from_micros(100)), log);
    }

    // Proves iodepth bounds the operations in flight and the issuer keeps the device full.
    #[test]
    fn iodepth_is_kept() {
        let log = drive(plan("job:rw=randread,iodepth=4,size=64k"), Duration::from_millis(1));
        let at_zero = log.iter().filter(|(_, at, _)| *at == Instant::ZERO).count();
        assert_eq!(at_zero, 4);
        let sync_engine = drive(
            plan("job:rw=randread,iodepth=4,size=64k,ioengine=psync"),
            Duration::from_millis(1),
        );
        assert_eq!(sync_engine.iter().filter(|(_, at, _)| *at == Instant::ZERO).count(), 1);
    }

    // Proves numjobs makes separate processes and offset_increment spreads their regions.
    #[test]
    fn clones_get_their_own_process_and_region() {
        let plan = plan("job:rw=read,numjobs=3,size=128k,offset_increment=256m");
        assert_eq!(plan.phases[0].issuers.len(), 3);
        let processes: Vec<u32> = plan.phases[0].issuers.iter().map(|i| i.process().0).collect();
        assert_eq!(processes, [1, 2, 3]);
        let log = drive(plan, Duration::from_micros(10));
        for clone in 0..3u64 {
            let first = log.iter().find(|(index, _, _)| *index as u64 == clone).unwrap();
            assert_eq!(first.2.offset_bytes, clone * (256 << 20));
        }
    }

    // Proves thinktime pauses after every completion (and makes the depth 1).
    #[test]
    fn thinktime_pauses_after_each_completion() {
        let log =
            drive(plan("job:rw=read,size=16k,thinktime=2ms,iodepth=8"), Duration::from_millis(1));
        let times: Vec<u64> = log.iter().map(|(_, at, _)| at.as_nanos() / 1_000_000).collect();
        assert_eq!(times, [0, 3, 6, 9]);
    }

    // Proves io_size sets the amount of I/O apart from the region: 64 KiB of random reads spread
    // over the whole device.
    #[test]
    fn io_size_sets_the_amount_apart_from_the_region() {
        let log = drive(plan("job:rw=randread,io_size=64k,offset=0"), Duration::from_micros(1));
        assert_eq!(log.len(), 16);
        let spread = log.iter().map(|(_, _, io)| io.offset_bytes).max().unwrap();
        assert!(spread > 1 << 28, "random offsets cover the whole 1 GiB device: {spread}");
    }

    // Proves a time-based job without a runtime is refused (issue 14: it never ended), naming
    // the key to set.
    #[test]
    fn a_time_based_job_needs_a_runtime() {
        for text in ["job:time_based=1", "job:time_based=1,runtime=0"] {
            let message = WorkloadSpec::parse(text).unwrap_err().to_string();
            assert_eq!(message, "job: runtime: time_based=1 needs a runtime (e.g. 10s)");
        }
        assert!(WorkloadSpec::parse("job:time_based=1,runtime=1ms").is_ok());
    }

    // Proves runtime caps a time-based job, and the job finishes its in-flight I/O.
    #[test]
    fn runtime_caps_a_time_based_job() {
        let log =
            drive(plan("job:rw=read,size=8k,time_based=1,runtime=10ms"), Duration::from_millis(1));
        assert_eq!(log.len(), 10);
        assert_eq!(log.last().unwrap().2.offset_bytes, 4096, "it looped over the 8k region");
    }

    // Proves rwmixread sets the read share of a mixed job.
    #[test]
    fn rwmixread_sets_the_read_share() {
        let log =
            drive(plan("job:rw=randrw,rwmixread=70,size=40m,bs=4k"), Duration::from_micros(1));
        let reads = log.iter().filter(|(_, _, io)| io.kind == IoKind::Read).count() as f64;
        let share = reads / log.len() as f64;
        assert!((share - 0.7).abs() < 0.02, "{share}");
        let writes = drive(plan("job:rw=randrw,rwmixwrite=100,size=64k"), Duration::from_micros(1));
        assert!(writes.iter().all(|(_, _, io)| io.kind == IoKind::Write));
    }

    // Proves bsrange draws multiples of its minimum within its bounds.
    #[test]
    fn bsrange_draws_multiples_of_its_minimum() {
        let log = drive(plan("job:rw=randread,bsrange=4k-16k,size=4m"), Duration::from_micros(1));
        let sizes: std::collections::BTreeSet<u64> =
            log.iter().map(|(_, _, io)| io.size_bytes).collect();
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [4096, 8192, 12288, 16384]);
    }

    // Proves priorities follow prioclass and prio as fio applies them.
    #[test]
    fn priorities_follow_prioclass_and_prio() {
        let priority = |text: &str| plan(text).phases[0].issuers[0].priority();
        assert_eq!(priority("job"), IoPriority::DEFAULT);
        assert_eq!(priority("job:prio=6"), IoPriority::best_effort(6).unwrap());
        assert_eq!(priority("job:prioclass=1,prio=2"), IoPriority::realtime(2).unwrap());
        assert_eq!(priority("job:prioclass=3"), IoPriority::idle());
        let per_clone = plan("job:numjobs=2,prio=0:7");
        let levels: Vec<IoPriority> =
            per_clone.phases[0].issuers.iter().map(|issuer| issuer.priority()).collect();
        assert_eq!(
            levels,
            [IoPriority::best_effort(0).unwrap(), IoPriority::best_effort(7).unwrap()]
        );
        let mixed = plan("job:numjobs=2,prioclass=1:3,prio=2");
        assert_eq!(mixed.phases[0].issuers[0].priority(), IoPriority::realtime(2).unwrap());
        assert_eq!(mixed.phases[0].issuers[1].priority(), IoPriority::idle());
        assert!(parse_error("job:numjobs=3,prio=0:7").contains("one per clone"));
        assert!(parse_error("job:prio=8").contains("0..=7"));
    }

    // Proves filename picks devices and round-robins between several.
    #[test]
    fn filename_picks_devices() {
        let log = drive(plan("job:rw=read,filename=sdb,size=8k"), Duration::from_micros(1));
        assert!(log.iter().all(|(_, _, io)| io.place == Place::Device(1)));
        let both = drive(plan("job:rw=read,filename=sda:sdb,size=16k"), Duration::from_micros(1));
        let places: Vec<Place> = both.iter().map(|(_, _, io)| io.place).collect();
        assert_eq!(places, [0, 1, 0, 1].map(Place::Device));
    }

    // Proves bad input names the key and what is accepted, at parse or at plan time.
    #[test]
    fn bad_input_names_the_key() {
        assert!(
            parse_error("job:iodepth=0")
                .contains("iodepth=0 is not valid (expected an integer 1..=65536)")
        );
        assert!(parse_error("job:rwmixread=101").contains("rwmixread=101"));
        assert!(parse_error("job:rw=randomread").contains("expected one of read, write"));
        assert!(parse_error("job:bs=1000").contains("bs: 1000 bytes is not a multiple of 512"));
        assert!(parse_error("job:bsrange=16k-4k").contains("bsrange"));
        assert!(parse_error("job:bssplit=4k/30:8k/30").contains("make 60%, not 100%"));
        assert!(parse_error("job:bssplit=4k/70:8k/50:16k/").contains("not 100%"));
        assert!(parse_error("job:bssplit=4k/60:1000/40").contains("not a multiple of 512"));
        assert!(parse_error("job:rwmixread=60,rwmixwrite=30").contains("must be 100"));
        assert!(parse_error("job:prioclass=0,prio=3").contains("prio"));
        // `fio:` takes a job file (fio_run), so a `job` key list there is a missing file.
        assert!(parse_error("fio:rw=read").contains("cannot open rw=read"));
        let plan_error = |text: &str| plan_error(text, &targets());
        assert!(plan_error("job:filename=sdc").contains("no device `sdc` (accepted: sda, sdb)"));
        assert!(plan_error("job:filename=sdb,bs=2m").contains("bs: a block is larger"));
        assert!(plan_error("job:size=2g").contains("size:"));
        assert!(plan_error("job:offset=2g").contains("offset:"));
    }
}
