//! Measuring a real device or file for a device preset (`elevator calibrate`).
//!
//! The way Seastar's iotune and fio sweeps measure a disk (ecosystem.md): closed-loop direct
//! I/O jobs, each for a fixed time, through the live engine ([`crate::run::run_workload`]:
//! io_uring, O_DIRECT, the `none` scheduler in user space and the kernel's scheduler as it is
//! below) —
//!
//! * sequential reads at queue depth 1 by block size (4k..1M), and 1M at depth 8 for the
//!   bandwidth ceiling;
//! * random reads at depth 1 by block size, and random 4k reads by queue depth (1..64, capped
//!   at the device's `queue/nr_requests`), with latency percentiles;
//! * the same for writes with `write` (the caller opens the target writable only under the
//!   write-safety rules);
//! * for a rotational device (sysfs `queue/rotational` or the measurements), a seek curve:
//!   random 4k reads at depth 1 confined to regions of growing size, the mean distance
//!   between two uniform points of a region being a third of it; the rotational latency is
//!   estimated as the floor of that curve (the shortest seeks' mean latency: half a
//!   revolution plus the command overhead, an upper bound);
//! * every step run as [`TRIALS`] back-to-back trials of a fifth of its time, keeping the
//!   trial of median IOPS (a busy machine's stalls hit some trials, not the figure);
//! * the random 4k reads at depth 1 and 16 run again at the end (`repeat`): their figure is
//!   the geometric mean of both medians, and the ratio between the fastest and the slowest
//!   of all their trials is the error the preset states (the machine's noise and its drift
//!   over the calibration).
//!
//! The QD1 random 4k reads' (and writes') percentiles (50, 90, 99, 99.9) over their mean become
//! the preset's latency spread (`read_spread`).
//!
//! [`Calibration::preset_toml`] writes a `table` device preset (crates/sim device/table.rs)
//! with every measurement in `[measured]`.
//!
//! # Deviations
//!
//! * iotune measures with several concurrent streams and finds the knee of the latency
//!   curve; here each figure is one job's closed loop, so a device whose peak needs more
//!   than 64 outstanding commands is measured below its peak.
//! * The preset is always the `table` kind: fitting `ssd` or `hdd` mechanics to the figures
//!   is not done (the seek curve is recorded, not fitted).
//! * The tables hold requests as the kernel sent them, up to the device's `max_sectors_kb`
//!   (recorded as `sysfs_max_sectors_kb`); the simulator splits at its driver's limit (512 KiB
//!   for `generic`) unless run with `--max-sectors-kb` that value, and a split 1 MiB read is
//!   then two 512 KiB commands in parallel, faster than the measured 1 MiB.
//! * Latencies are the live engine's submission-to-completion times, which include the
//!   user-space queue and io_uring's path, as fio's `clat` plus its `slat` do.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use elevator_core::format_size;
use elevator_sched::SchedulerSpec;
use elevator_workload::WorkloadSpec;

use crate::error::LiveError;
use crate::run::{ContinueOnError, RunOptions, run_workload};
use crate::target::Target;
use crate::{EngineOptions, TargetKind};

/// How to calibrate.
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    /// Fewer block sizes and depths, one second each: under a minute on a fast device.
    pub quick: bool,
    /// Also measure writes (the target must be open for writing).
    pub write: bool,
    /// The deepest queue measured (capped further by the device's `nr_requests`).
    pub max_depth: u32,
    /// The jobs' random streams.
    pub seed: u64,
    /// Set to stop: the step running ends and calibration stops with an error.
    pub stop: Option<Arc<AtomicBool>>,
}

impl Default for CalibrateOptions {
    fn default() -> CalibrateOptions {
        CalibrateOptions { quick: false, write: false, max_depth: 64, seed: 1, stop: None }
    }
}

/// One measured job.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// `read`, `randread`, `write`, `randwrite`.
    pub rw: &'static str,
    /// Block size.
    pub bs_bytes: u64,
    /// Operations kept in flight.
    pub iodepth: u32,
    /// Region the job was confined to (0: the whole target): the seek curve's.
    pub region_bytes: u64,
    /// What the step is for (`table`, `ceiling`, `seek`, `repeat`).
    pub purpose: &'static str,
    /// Operations completed.
    pub ops: u64,
    /// Operations per second.
    pub iops: f64,
    /// Bytes per second.
    pub bandwidth_bytes_per_s: f64,
    /// Mean latency.
    pub lat_mean_ns: u64,
    /// Median latency.
    pub lat_p50_ns: u64,
    /// 90th percentile latency.
    pub lat_p90_ns: u64,
    /// 99th percentile latency.
    pub lat_p99_ns: u64,
    /// 99.9th percentile latency.
    pub lat_p99_9_ns: u64,
    /// Every trial's IOPS, in the order run (the figures above are the median trial's).
    pub trials_iops: Vec<f64>,
}

/// Trials per step.
pub const TRIALS: usize = 5;

impl Point {
    /// The job as `elevator run -w` takes it.
    pub fn workload(&self, seconds: f64) -> String {
        workload_text(self.rw, self.bs_bytes, self.iodepth, self.region_bytes, seconds)
    }

    /// Little's law: the time each operation held its place in a closed loop, in ns.
    pub fn closed_loop_latency_ns(&self) -> f64 {
        f64::from(self.iodepth) * 1e9 / self.iops
    }
}

fn workload_text(rw: &str, bs_bytes: u64, iodepth: u32, region_bytes: u64, seconds: f64) -> String {
    let mut text = format!(
        "job:rw={rw},bs={},iodepth={iodepth},runtime={}ms,time_based=1",
        format_size_key(bs_bytes),
        (seconds * 1000.0).round() as u64
    );
    if region_bytes > 0 {
        text.push_str(&format!(",size={}", format_size_key(region_bytes)));
    }
    text
}

/// A size as a spec value (`4k`, `1m`, bytes otherwise).
fn format_size_key(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}g", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}m", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}k", b >> 10),
        b => b.to_string(),
    }
}

/// What was measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// The target's path.
    pub target: PathBuf,
    /// Its size.
    pub size_bytes: u64,
    /// The kernel's `queue/rotational` for it (the device under a file), if found.
    pub sysfs_rotational: Option<bool>,
    /// Whether the measurements look rotational: random 4k reads at depth 1 take at least
    /// [`ROTATIONAL_RATIO`] times the sequential ones and at least a millisecond.
    pub measured_rotational: bool,
    /// The kernel's `queue/nr_requests`, if found.
    pub sysfs_nr_requests: Option<u32>,
    /// The kernel's `queue/max_sectors_kb`, if found: the simulator splits requests at its
    /// own limit (512 KiB with the default driver) unless run with `--max-sectors-kb` this.
    pub sysfs_max_sectors_kb: Option<u32>,
    /// Seconds each trial of a step ran.
    pub seconds_per_step: f64,
    /// Every step.
    pub points: Vec<Point>,
    /// Half a revolution estimated from the seek curve's floor (rotational devices).
    pub rotational_latency_ns: Option<u64>,
}

/// Random over sequential QD1 latency from which a device is taken to be rotational.
pub const ROTATIONAL_RATIO: f64 = 4.0;

/// The least error a preset states, in percent: the live path's run-to-run noise on a busy
/// machine is not below it even when two repeats happen to agree.
pub const ERROR_FLOOR_PERCENT: f64 = 15.0;

/// One step to run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// Pattern.
    pub rw: &'static str,
    /// Block size.
    pub bs_bytes: u64,
    /// Depth.
    pub iodepth: u32,
    /// Region (0: whole target).
    pub region_bytes: u64,
    /// Why.
    pub purpose: &'static str,
}

impl Step {
    /// One line for the progress bar.
    pub fn label(&self) -> String {
        let mut label =
            format!("{} {} QD{}", self.rw, format_size_key(self.bs_bytes), self.iodepth);
        if self.region_bytes > 0 {
            label.push_str(&format!(" within {}", format_size(self.region_bytes)));
        }
        if self.purpose != "table" {
            label.push_str(&format!(" ({})", self.purpose));
        }
        label
    }
}

/// The block sizes of the by-size tables.
fn sizes(quick: bool) -> &'static [u64] {
    if quick {
        &[4 << 10, 64 << 10, 1 << 20]
    } else {
        &[4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
    }
}

/// The depths of the IOPS table, up to `max_depth`.
fn depths(quick: bool, max_depth: u32) -> Vec<u32> {
    let all: &[u32] = if quick { &[1, 4, 16, 32] } else { &[1, 2, 4, 8, 16, 32, 64] };
    let mut depths: Vec<u32> = all.iter().copied().filter(|&d| d <= max_depth).collect();
    if depths.last() != Some(&max_depth) && max_depth < *all.last().expect("depths") {
        depths.push(max_depth);
    }
    depths
}

/// The steps of a calibration (without the seek curve, which depends on what they find).
pub fn plan(options: &CalibrateOptions, max_depth: u32) -> Vec<Step> {
    let step =
        |rw, bs_bytes, iodepth, purpose| Step { rw, bs_bytes, iodepth, region_bytes: 0, purpose };
    let mut steps = Vec::new();
    let directions: &[(&'static str, &'static str)] = if options.write {
        &[("read", "randread"), ("write", "randwrite")]
    } else {
        &[("read", "randread")]
    };
    for &(seq, rand) in directions {
        for &bs in sizes(options.quick) {
            steps.push(step(seq, bs, 1, "table"));
        }
        steps.push(step(seq, 1 << 20, 8.min(max_depth), "ceiling"));
        for &bs in sizes(options.quick) {
            steps.push(step(rand, bs, 1, "table"));
        }
        for depth in depths(options.quick, max_depth).into_iter().filter(|&d| d > 1) {
            steps.push(step(rand, 4 << 10, depth, "table"));
        }
    }
    // The points the preset states its error for, again at the end: the load of a shared
    // machine drifts over the calibration, and the error must include that drift.
    steps.push(step("randread", 4 << 10, 1, "repeat"));
    if max_depth >= 16 {
        steps.push(step("randread", 4 << 10, 16, "repeat"));
    }
    steps
}

/// The seek-curve steps for a target of `size_bytes`: regions from 1 MiB growing ×16 to the
/// whole target.
pub fn seek_plan(options: &CalibrateOptions, size_bytes: u64) -> Vec<Step> {
    let factor = if options.quick { 64 } else { 16 };
    let mut regions = Vec::new();
    let mut region = 1u64 << 20;
    while region < size_bytes {
        regions.push(region);
        region = region.saturating_mul(factor);
    }
    regions.push(size_bytes - size_bytes % (1 << 20));
    regions
        .into_iter()
        .filter(|&region| region >= 1 << 20)
        .map(|region_bytes| Step {
            rw: "randread",
            bs_bytes: 4 << 10,
            iodepth: 1,
            region_bytes,
            purpose: "seek",
        })
        .collect()
}

/// Runs one step on `target`.
pub fn measure_step(
    target: &Target,
    step: &Step,
    seconds: f64,
    options: &CalibrateOptions,
) -> Result<Point, LiveError> {
    let text = workload_text(step.rw, step.bs_bytes, step.iodepth, step.region_bytes, seconds);
    let workload = WorkloadSpec::parse(&text)
        .map_err(|error| LiveError::BadIo(format!("calibration job `{text}`: {error}")))?;
    let scheduler = SchedulerSpec::parse("none")
        .map_err(|error| LiveError::BadIo(format!("the none scheduler: {error}")))?;
    let run_options = RunOptions {
        engine: EngineOptions { scheduler, ..EngineOptions::sized_for(Some(step.iodepth)) },
        verify: false,
        seed: options.seed,
        stop: options.stop.clone(),
        continue_on_error: ContinueOnError::None,
    };
    let mut trials = Vec::with_capacity(TRIALS);
    for _ in 0..TRIALS {
        trials.push(run_trial(target, &text, &workload, &run_options)?);
    }
    let mut by_iops: Vec<&Point> = trials.iter().collect();
    by_iops.sort_by(|a, b| a.iops.total_cmp(&b.iops));
    let median = by_iops[by_iops.len() / 2];
    Ok(Point {
        rw: step.rw,
        bs_bytes: step.bs_bytes,
        iodepth: step.iodepth,
        region_bytes: step.region_bytes,
        purpose: step.purpose,
        trials_iops: trials.iter().map(|trial| trial.iops).collect(),
        ..median.clone()
    })
}

/// One trial of a step (its figures; the step's fields are filled by the caller).
fn run_trial(
    target: &Target,
    text: &str,
    workload: &WorkloadSpec,
    run_options: &RunOptions,
) -> Result<Point, LiveError> {
    let live = run_workload(target, workload, run_options, &mut |_| {})?;
    if live.interrupted {
        return Err(LiveError::BadIo("calibration interrupted".into()));
    }
    if live.io_errors.0 > 0 {
        return Err(LiveError::BadIo(format!(
            "`{text}`: {} I/O errors ({})",
            live.io_errors.0,
            live.io_errors.1.unwrap_or_default()
        )));
    }
    let phase = live
        .run
        .phases
        .first()
        .ok_or_else(|| LiveError::BadIo(format!("`{text}` ran no phase")))?;
    if phase.ops == 0 {
        return Err(LiveError::BadIo(format!("`{text}` completed no I/O")));
    }
    Ok(Point {
        rw: "",
        bs_bytes: 0,
        iodepth: 0,
        region_bytes: 0,
        purpose: "",
        trials_iops: Vec::new(),
        ops: phase.ops,
        iops: phase.iops,
        bandwidth_bytes_per_s: phase.throughput_bytes_per_s,
        lat_mean_ns: phase.latency_ns.mean,
        lat_p50_ns: phase.latency_ns.p50,
        lat_p90_ns: phase.latency_ns.p90,
        lat_p99_ns: phase.latency_ns.p99,
        lat_p99_9_ns: phase.latency_ns.p99_9,
    })
}

/// What sysfs says of the device `path` is (a block device) or lives on (a file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SysfsQueue {
    /// `queue/rotational`.
    pub rotational: Option<bool>,
    /// `queue/nr_requests`.
    pub nr_requests: Option<u32>,
    /// `queue/max_sectors_kb`: the largest request the kernel sends it.
    pub max_sectors_kb: Option<u32>,
}

/// Reads [`SysfsQueue`] for `path`. A partition's queue is its disk's.
pub fn sysfs_queue(path: &Path, kind: TargetKind) -> SysfsQueue {
    let none = SysfsQueue::default();
    let Ok(metadata) = std::fs::metadata(path) else { return none };
    let number = if kind == TargetKind::BlockDevice || metadata.file_type().is_block_device() {
        metadata.rdev()
    } else {
        metadata.dev()
    };
    let (major, minor) = (rustix::fs::major(number), rustix::fs::minor(number));
    let Ok(dir) = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")) else {
        return none;
    };
    let queue = [dir.join("queue"), dir.join("../queue")].into_iter().find(|queue| queue.is_dir());
    let Some(queue) = queue else { return none };
    let read = |name: &str| std::fs::read_to_string(queue.join(name)).ok();
    SysfsQueue {
        rotational: read("rotational").map(|text| text.trim() == "1"),
        nr_requests: read("nr_requests").and_then(|text| text.trim().parse().ok()),
        max_sectors_kb: read("max_sectors_kb").and_then(|text| text.trim().parse().ok()),
    }
}

/// Calibrates `target`: every step of [`plan`] (and [`seek_plan`] when it looks
/// rotational), calling `on_step(done, total, label)` before each.
pub fn calibrate(
    target: &Target,
    options: &CalibrateOptions,
    on_step: &mut dyn FnMut(usize, usize, &str),
) -> Result<Calibration, LiveError> {
    let sysfs = sysfs_queue(target.path(), target.kind());
    let (sysfs_rotational, sysfs_nr_requests) = (sysfs.rotational, sysfs.nr_requests);
    let max_depth = options.max_depth.clamp(1, sysfs_nr_requests.unwrap_or(u32::MAX).max(1));
    let seconds = if options.quick { 1.5 } else { 5.0 };
    let steps = plan(options, max_depth);
    let mut points = Vec::with_capacity(steps.len());
    let mut total = steps.len();
    for (index, step) in steps.iter().enumerate() {
        on_step(index, total, &step.label());
        points.push(measure_step(target, step, seconds / TRIALS as f64, options)?);
    }
    let qd1 = |rw: &str| {
        points
            .iter()
            .find(|p| p.rw == rw && p.bs_bytes == 4 << 10 && p.iodepth == 1 && p.purpose == "table")
            .map(Point::closed_loop_latency_ns)
    };
    let measured_rotational = match (qd1("randread"), qd1("read")) {
        (Some(random), Some(sequential)) => {
            random >= ROTATIONAL_RATIO * sequential && random >= 1e6
        }
        _ => false,
    };
    let mut rotational_latency_ns = None;
    if sysfs_rotational == Some(true) || measured_rotational {
        let seeks = seek_plan(options, target.size_bytes());
        total += seeks.len();
        for (index, step) in seeks.iter().enumerate() {
            on_step(steps.len() + index, total, &step.label());
            points.push(measure_step(target, step, seconds / TRIALS as f64, options)?);
        }
        rotational_latency_ns = points
            .iter()
            .filter(|p| p.purpose == "seek")
            .map(|p| p.closed_loop_latency_ns())
            .reduce(f64::min)
            .map(|ns| ns.round() as u64);
    }
    on_step(total, total, "done");
    Ok(Calibration {
        target: target.path().to_owned(),
        size_bytes: target.size_bytes(),
        sysfs_rotational,
        measured_rotational,
        sysfs_nr_requests,
        sysfs_max_sectors_kb: sysfs.max_sectors_kb,
        seconds_per_step: seconds / TRIALS as f64,
        points,
        rotational_latency_ns,
    })
}

impl Calibration {
    /// The rotational flag the preset carries: sysfs's when known, else the measurements'.
    pub fn rotational(&self) -> bool {
        self.sysfs_rotational.unwrap_or(self.measured_rotational)
    }

    /// A sentence when sysfs and the measurements disagree (a loop device over a disk file
    /// reports 0, a RAID controller may report 1 for flash).
    pub fn disagreement(&self) -> Option<String> {
        let sysfs = self.sysfs_rotational?;
        (sysfs != self.measured_rotational).then(|| {
            format!(
                "sysfs says rotational={}, the measurements look {} (random 4k reads at QD1 \
                 against sequential ones); the preset keeps sysfs's flag",
                u8::from(sysfs),
                if self.measured_rotational { "rotational" } else { "non-rotational" }
            )
        })
    }

    /// The error the preset states for its IOPS, in percent: over the random 4k reads at
    /// depth 1 and 16, the largest ratio of one trial to another among the point's trials
    /// and its repeat's (`max / min - 1`), at least [`ERROR_FLOOR_PERCENT`]. Another median
    /// of as many trials of the same job stands within that ratio of the preset's figure
    /// unless the machine's load moves beyond what it did during the calibration.
    pub fn error_percent(&self) -> f64 {
        let ratio = [1, 16]
            .iter()
            .filter_map(|&depth| {
                let trials = self
                    .points
                    .iter()
                    .filter(|p| p.rw == "randread" && p.bs_bytes == 4 << 10 && p.iodepth == depth)
                    .flat_map(|p| p.trials_iops.iter().copied());
                let (low, high) = trials
                    .fold((f64::MAX, 0.0f64), |(low, high), iops| (low.min(iops), high.max(iops)));
                (high > 0.0 && low > 0.0).then(|| high / low - 1.0)
            })
            .fold(0.0f64, f64::max);
        (100.0 * ratio).max(ERROR_FLOOR_PERCENT)
    }

    /// The table points of `rw` at depth 1 by size, as `SIZE:TIME/...` (time from Little's
    /// law, so the model's QD1 rate is the measured one).
    fn latency_table(&self, rw: &str) -> String {
        self.points
            .iter()
            .filter(|p| p.rw == rw && p.iodepth == 1 && p.region_bytes == 0 && p.purpose == "table")
            .map(|p| {
                format!(
                    "{}:{}ns",
                    format_size_key(p.bs_bytes),
                    (f64::from(p.iodepth) * 1e9 / self.rate(p)).round() as u64
                )
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    /// A table point's IOPS: its median trial's, or with a repeat at the end the geometric
    /// mean of both medians (the middle of the drift, as a ratio).
    fn rate(&self, point: &Point) -> f64 {
        let repeat = self.points.iter().find(|p| {
            p.purpose == "repeat"
                && p.rw == point.rw
                && p.bs_bytes == point.bs_bytes
                && p.iodepth == point.iodepth
        });
        repeat.map_or(point.iops, |repeat| (point.iops * repeat.iops).sqrt())
    }

    fn iops_table(&self, rw: &str) -> String {
        self.points
            .iter()
            .filter(|p| {
                p.rw == rw && p.bs_bytes == 4 << 10 && p.region_bytes == 0 && p.purpose == "table"
            })
            .map(|p| format!("{}:{:.0}", p.iodepth, self.rate(p)))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The QD1 random 4k point's percentiles (50, 90, 99, 99.9) over its mean
    /// (`50:R/90:R/99:R/99.9:R`), for the model's latency spread.
    fn spread(&self, rw: &str) -> Option<String> {
        let point = self.points.iter().find(|p| {
            p.rw == rw
                && p.bs_bytes == 4 << 10
                && p.iodepth == 1
                && p.region_bytes == 0
                && p.purpose == "table"
        })?;
        (point.lat_mean_ns > 0).then(|| {
            let mean = point.lat_mean_ns as f64;
            [(50, point.lat_p50_ns), (90, point.lat_p90_ns), (99, point.lat_p99_ns)]
                .iter()
                .map(|(percentile, ns)| format!("{percentile}:{:.3}", *ns as f64 / mean))
                .chain(std::iter::once(format!("99.9:{:.3}", point.lat_p99_9_ns as f64 / mean)))
                .collect::<Vec<_>>()
                .join("/")
        })
    }

    fn ceiling(&self, rw: &str) -> Option<u64> {
        self.points
            .iter()
            .filter(|p| p.rw == rw && p.region_bytes == 0)
            .map(|p| p.bandwidth_bytes_per_s)
            .reduce(f64::max)
            .map(|rate| rate.round() as u64)
    }

    /// The preset file: a `table` device with the measured tables, `rotational`, and a
    /// `[measured]` table recording `command`, `date`, the target and every point.
    pub fn preset_toml(&self, command: &str, date: &str) -> String {
        let mut out = String::new();
        let quote = |text: &str| format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
        out.push_str("# A device preset measured by `elevator calibrate`: use it as\n");
        out.push_str(
            "# `elevator sim -d ./THIS.toml` (keys: `elevator list devices`, kind table).\n",
        );
        out.push_str("kind = \"table\"\n");
        out.push_str(&format!("rotational = {}\n", self.rotational()));
        out.push_str(&format!("capacity = \"{}\"\n", self.size_bytes.max(1 << 20)));
        let depth = self.points.iter().map(|p| p.iodepth).max().unwrap_or(1);
        out.push_str(&format!("depth = {depth}\n"));
        for (seq, rand, prefix) in [("read", "randread", "read"), ("write", "randwrite", "write")] {
            let seq_table = self.latency_table(seq);
            if seq_table.is_empty() {
                continue;
            }
            out.push_str(&format!("{prefix}_seq_lat = \"{seq_table}\"\n"));
            out.push_str(&format!("{prefix}_rand_lat = \"{}\"\n", self.latency_table(rand)));
            out.push_str(&format!("{prefix}_iops = \"{}\"\n", self.iops_table(rand)));
            if let Some(spread) = self.spread(rand) {
                out.push_str(&format!("{prefix}_spread = \"{spread}\"\n"));
            }
            if let Some(ceiling) = self.ceiling(seq) {
                out.push_str(&format!("{prefix}_bandwidth = \"{ceiling}\"\n"));
            }
        }
        out.push_str("\n[measured]\n");
        out.push_str(&format!("command = {}\n", quote(command)));
        out.push_str(&format!("date = {}\n", quote(date)));
        out.push_str(&format!("target = {}\n", quote(&self.target.display().to_string())));
        out.push_str(&format!("size_bytes = {}\n", self.size_bytes));
        if let Some(rotational) = self.sysfs_rotational {
            out.push_str(&format!("sysfs_rotational = {rotational}\n"));
        }
        if let Some(nr_requests) = self.sysfs_nr_requests {
            out.push_str(&format!("sysfs_nr_requests = {nr_requests}\n"));
        }
        if let Some(kb) = self.sysfs_max_sectors_kb {
            out.push_str(&format!(
                "# Simulate with `--max-sectors-kb {kb}`: the kernel sent requests up to this.\n"
            ));
            out.push_str(&format!("sysfs_max_sectors_kb = {kb}\n"));
        }
        out.push_str(&format!("measured_rotational = {}\n", self.measured_rotational));
        if let Some(note) = self.disagreement() {
            out.push_str(&format!("rotational_note = {}\n", quote(&note)));
        }
        if let Some(ns) = self.rotational_latency_ns {
            out.push_str(&format!("rotational_latency_ns = {ns}\n"));
        }
        out.push_str(&format!("seconds_per_step = {}\n", self.seconds_per_step));
        out.push_str(&format!(
            "# IOPS of the random 4k reads at QD1 and QD16 stand within this ratio of a repeat run\n\
             # (their trials' largest max/min - 1, over the calibration, at least {ERROR_FLOOR_PERCENT} %).\n"
        ));
        out.push_str(&format!("error_percent = {:.1}\n", self.error_percent()));
        for point in &self.points {
            out.push_str("\n[[measured.point]]\n");
            out.push_str(&format!("job = {}\n", quote(&point.workload(self.seconds_per_step))));
            out.push_str(&format!("purpose = \"{}\"\n", point.purpose));
            out.push_str(&format!("rw = \"{}\"\n", point.rw));
            out.push_str(&format!("bs_bytes = {}\n", point.bs_bytes));
            out.push_str(&format!("iodepth = {}\n", point.iodepth));
            if point.region_bytes > 0 {
                out.push_str(&format!("region_bytes = {}\n", point.region_bytes));
            }
            out.push_str(&format!("ops = {}\n", point.ops));
            out.push_str(&format!("iops = {:.1}\n", point.iops));
            out.push_str(&format!("bandwidth_bytes_per_s = {:.0}\n", point.bandwidth_bytes_per_s));
            out.push_str(&format!("lat_mean_ns = {}\n", point.lat_mean_ns));
            out.push_str(&format!("lat_p50_ns = {}\n", point.lat_p50_ns));
            out.push_str(&format!("lat_p90_ns = {}\n", point.lat_p90_ns));
            out.push_str(&format!("lat_p99_ns = {}\n", point.lat_p99_ns));
            out.push_str(&format!("lat_p99_9_ns = {}\n", point.lat_p99_9_ns));
            let trials: Vec<String> =
                point.trials_iops.iter().map(|iops| format!("{iops:.1}")).collect();
            out.push_str(&format!("trials_iops = [{}]\n", trials.join(", ")));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(rw: &'static str, bs: u64, depth: u32, iops: f64, trials: &[f64]) -> Point {
        Point {
            rw,
            bs_bytes: bs,
            iodepth: depth,
            region_bytes: 0,
            purpose: "table",
            ops: 100,
            iops,
            bandwidth_bytes_per_s: iops * bs as f64,
            lat_mean_ns: 1000,
            lat_p50_ns: 800,
            lat_p90_ns: 1500,
            lat_p99_ns: 4000,
            lat_p99_9_ns: 9000,
            trials_iops: trials.to_vec(),
        }
    }

    // Proves the plan measures what the tables need: every size at QD1 both ways and the
    // depths capped at the device's queue; writes only when asked.
    #[test]
    fn plan_covers_the_tables() {
        let steps = plan(&CalibrateOptions { quick: true, ..Default::default() }, 8);
        assert!(steps.iter().all(|s| s.iodepth <= 8));
        for bs in sizes(true) {
            assert!(steps.iter().any(|s| s.rw == "read" && s.bs_bytes == *bs && s.iodepth == 1));
            assert!(
                steps.iter().any(|s| s.rw == "randread" && s.bs_bytes == *bs && s.iodepth == 1)
            );
        }
        assert!(steps.iter().any(|s| s.rw == "randread" && s.iodepth == 8));
        assert!(steps.iter().all(|s| !s.rw.contains("write")));
        // The error's points again at the end (QD16 is past this device's depth of 8).
        assert_eq!(steps.last().map(|s| (s.purpose, s.iodepth)), Some(("repeat", 1)));
        let writes = plan(&CalibrateOptions { write: true, ..Default::default() }, 64);
        assert!(writes.iter().any(|s| s.rw == "randwrite" && s.iodepth == 64));
    }

    // Proves the seek curve's regions grow to the whole target and never pass it.
    #[test]
    fn seek_regions_grow_to_the_target() {
        let steps = seek_plan(&CalibrateOptions::default(), 10 << 30);
        let regions: Vec<u64> = steps.iter().map(|s| s.region_bytes).collect();
        assert_eq!(regions.first(), Some(&(1 << 20)));
        assert_eq!(regions.last(), Some(&(10 << 30)));
        assert!(regions.windows(2).all(|pair| pair[0] < pair[1]), "{regions:?}");
    }

    // Proves the preset states its error from all the trials of the QD1 and QD16 random
    // reads, their repeats included (max/min - 1, floored; other steps' noise does not count),
    // and that its tables carry the measured rates: the IOPS table the geometric mean of a
    // point's and its repeat's medians, the latency table depth/IOPS.
    #[test]
    fn preset_tables_and_error() {
        let mut repeat = point("randread", 4096, 1, 12_100.0, &[12_100.0, 12_000.0]);
        repeat.purpose = "repeat";
        let mut calibration = Calibration {
            target: "/dev/loop9".into(),
            size_bytes: 1 << 30,
            sysfs_rotational: Some(false),
            measured_rotational: false,
            sysfs_nr_requests: Some(128),
            sysfs_max_sectors_kb: Some(1280),
            seconds_per_step: 1.0,
            points: vec![
                point("read", 4096, 1, 50_000.0, &[50_000.0, 10_000.0, 50_000.0]),
                point("randread", 4096, 1, 10_000.0, &[10_000.0, 11_000.0, 10_500.0]),
                point("randread", 4096, 16, 80_000.0, &[80_000.0, 84_000.0, 80_000.0]),
                repeat,
            ],
            rotational_latency_ns: None,
        };
        // QD1: 12100 / 10000 over the point and its repeat; the sequential 5× is not counted.
        assert!((calibration.error_percent() - 21.0).abs() < 1e-9);
        let text = calibration.preset_toml("elevator calibrate /dev/loop9", "today");
        // sqrt(10000 × 12100) = 11000 IOPS at QD1: 90909 ns.
        assert!(text.contains("read_rand_lat = \"4k:90909ns\""), "{text}");
        assert!(text.contains("read_iops = \"1:11000/16:80000\""), "{text}");
        assert!(text.contains("read_seq_lat = \"4k:20000ns\""), "{text}");
        assert!(text.contains("rotational = false"), "{text}");
        assert!(text.contains("read_spread = \"50:0.800/90:1.500/99:4.000/99.9:9.000\""), "{text}");
        assert!(!text.contains("write_"), "{text}");
        for point in &mut calibration.points[1..] {
            let iops = point.iops;
            point.trials_iops = vec![iops; 3];
        }
        calibration.points[3].trials_iops = vec![10_000.0; 3];
        assert_eq!(calibration.error_percent(), ERROR_FLOOR_PERCENT);
    }
}
