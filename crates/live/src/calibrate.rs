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
//!   random 4k reads at depth 1 confined to regions of growing size (from 1 MiB, ×4, ×8
//!   with `quick`, to the whole target), the mean distance between two uniform points of a
//!   region being a third of it; `rotational_latency_ns` records the floor of that curve
//!   (the shortest seeks' mean latency: half a revolution plus the command overhead, an
//!   upper bound), and [`Calibration::fit_hdd`] fits the `hdd` kind's mechanics to it
//!   ([`HddFit`] documents the fit);
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
//! [`Calibration::preset_toml`] writes an `hdd` device preset for a rotational device whose
//! mechanics fit, a `table` device preset (crates/sim device/table.rs) otherwise — flash,
//! memory, or a device flagged rotational whose seek regions reach no media — with the kind's
//! reason and every measurement in `[measured]`.
//!
//! Calibration measures through [`CalibrationTarget`]: the live engine on a file or device
//! ([`Target`]), or anything else that can time I/Os (the tests' simulated disks).
//!
//! # Deviations
//!
//! * iotune measures with several concurrent streams and finds the knee of the latency
//!   curve; here each figure is one job's closed loop, so a device whose peak needs more
//!   than 64 outstanding commands is measured below its peak.
//! * Flash gets the `table` kind: fitting the `ssd` kind's channels and dies to the figures
//!   is not done.
//! * The `hdd` fit fits reads only, on one zone of [`FIT_SURFACES`] surfaces with the `hdd`
//!   kind's default head switch and cache (segments, read-ahead, write-back): the drive's
//!   zoning (its inner tracks' slower rate), head count, cache size and write settling are
//!   not measured. The seek curve is a function of byte distance expressed in the assumed
//!   cylinders, so a different head count would give the same seek for the same distance.
//!   Drive-level command queuing is recognised (random reads gaining 20 % from depth 16:
//!   `depth = 31`, SPTF), not measured. With `--write` the write tables are measured and
//!   recorded in `[measured]` but the `hdd` preset takes the kind's write defaults.
//! * The rotation comes from the spread of a region's latencies (p90 − p50 = 0.4 revolution
//!   for a uniform rotational wait): with `--quick`'s short trials on a real disk (tens of
//!   reads per trial) the percentiles, and so `rpm`, are coarse; a full calibration runs
//!   five times as long.
//! * The tables hold requests as the kernel sent them, up to the device's `max_sectors_kb`
//!   (recorded as `sysfs_max_sectors_kb`), and `sim`, `compare` and `advise` on the preset
//!   split I/O at that value (`sim --max-sectors-kb` overrides it). A preset without it
//!   (calibrated on a file whose device sysfs did not show) is split at the simulated
//!   driver's limit (512 KiB for `generic`): a split 1 MiB read is then two 512 KiB commands
//!   in parallel, faster than the measured 1 MiB.
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

/// The seek-curve steps for a target of `size_bytes`: regions from 1 MiB growing ×4 (×8 with
/// `quick`) to the whole target — enough regions for the `hdd` fit's three coefficients and
/// a residual (a 4 TB disk: 9 regions quick, 22 in full).
pub fn seek_plan(options: &CalibrateOptions, size_bytes: u64) -> Vec<Step> {
    let factor = if options.quick { 8 } else { 4 };
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

/// What calibration measures through: something that answers "time these I/Os". The live
/// engine on a real file or device ([`Target`]) is one; a simulated device is another (the
/// round-trip test of the `hdd` fit runs calibration against a simulated disk whose true
/// mechanics it knows).
pub trait CalibrationTarget {
    /// Its path (or name), for the preset's record.
    fn path(&self) -> PathBuf;

    /// Its size.
    fn size_bytes(&self) -> u64;

    /// What the kernel says of its queue (a simulated device: what its model says).
    fn queue(&self) -> SysfsQueue;

    /// Runs `step` once for `seconds` and returns its figures (`ops`, `iops`, bandwidth and
    /// latencies; the step's own fields are filled by the caller).
    fn trial(
        &mut self,
        step: &Step,
        seconds: f64,
        options: &CalibrateOptions,
    ) -> Result<Point, LiveError>;
}

impl CalibrationTarget for Target {
    fn path(&self) -> PathBuf {
        Target::path(self).to_owned()
    }

    fn size_bytes(&self) -> u64 {
        Target::size_bytes(self)
    }

    fn queue(&self) -> SysfsQueue {
        sysfs_queue(Target::path(self), self.kind())
    }

    fn trial(
        &mut self,
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
        run_trial(self, &text, &workload, &run_options)
    }
}

/// Runs one step on `target`: [`TRIALS`] trials, the median one's figures kept.
pub fn measure_step(
    target: &mut dyn CalibrationTarget,
    step: &Step,
    seconds: f64,
    options: &CalibrateOptions,
) -> Result<Point, LiveError> {
    let mut trials = Vec::with_capacity(TRIALS);
    for _ in 0..TRIALS {
        trials.push(target.trial(step, seconds, options)?);
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
    target: &mut dyn CalibrationTarget,
    options: &CalibrateOptions,
    on_step: &mut dyn FnMut(usize, usize, &str),
) -> Result<Calibration, LiveError> {
    let sysfs = target.queue();
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
        target: target.path(),
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

/// Recording surfaces the fitted `hdd` assumes: the measurements (random reads by byte
/// distance, sequential bandwidth) do not reveal the head count, and the fit is expressed in
/// cylinders of `FIT_SURFACES` tracks each, so a seek of a given byte distance costs the same
/// whatever the assumption (two-platter drives have four surfaces).
pub const FIT_SURFACES: u32 = 4;

/// The fitted drive's head switch and track skew: the `hdd` kind's default head switch
/// (0.9 ms); a sequential transfer loses it at every track (Hitachi's sustained-rate formula,
/// devices.md §1.1), so the sectors per track are sized with it.
pub const FIT_HEAD_SWITCH_NS: u64 = 900_000;

/// A seek region whose mean latency exceeds its median by more than this is a mixture of
/// cache hits and media accesses, and the `hdd` fit leaves it out.
pub const MIXTURE_RATIO: f64 = 1.25;

/// The host interface rate the fitted drive gets unless the measured sequential rate comes
/// near it: the `hdd` kind's default (SATA 300 MB/s).
pub const FIT_BUS_BYTES_PER_S: f64 = 300e6;

/// The `hdd` kind's keys fitted to a rotational device's measurements
/// ([`Calibration::fit_hdd`]).
///
/// * **rotation**: random reads at queue depth 1 wait for their sector a uniform fraction of
///   a revolution, so without seek spread their 90th and 50th latency percentiles lie 0.4
///   revolution apart; seek spread and cache hits only widen that gap, so the narrowest gap
///   over the mechanical seek regions gives the revolution, hence `rpm`. A region is
///   mechanical when its median is at least [`ROTATIONAL_RATIO`] times the sequential 4k
///   latency and its mean within [`MIXTURE_RATIO`] times its median (not a mixture of the
///   drive's cache hits and media accesses).
/// * **transfer**: the best sequential bandwidth is the sustained media rate; the sectors per
///   track follow from Hitachi's formula `sustained = 512·SPT·S / ((S−1)·head_switch +
///   cylinder_switch + S·revolution)` (devices.md §1.1) with one zone ([`FIT_SURFACES`]
///   surfaces, skews of the head switch and the one-cylinder seek).
/// * **command overhead**: the smallest sequential QD1 latency less its transfer at the
///   sustained rate (what a command costs beyond moving its data).
/// * **seek curve**: the `hdd` kind's `curve` (Lee & Katz, `t(d) = a·√(d−1) + b·(d−1) + c`
///   for a move of `d ≥ 1` cylinders, 0 for none; devices.md §1.1). A random read within a
///   region of `C` cylinders moves `d` cylinders with probability `1/C` for `d = 0` and
///   `2(C−d)/C²` otherwise, so its mean latency is `overhead + transfer + revolution/2 +
///   c·P(d≥1) + a·E[√(d−1)] + b·E[d−1]`: linear in `(a, b, c)`. The fit is the least-squares
///   solution with `a, b, c ≥ 0` (every subset of the three tried, the best feasible kept),
///   which makes the curve monotone; the regions' means are its data. The `hdd` kind takes the
///   curve as `seek_single` (`c`), `seek_full` (its value at the last cylinder) and `seek_avg`
///   (its mean over random pairs of distinct cylinders), from which it solves the same `a`,
///   `b` back.
/// * **error**: the fit's residual, the root mean square of (fitted − measured) / measured
///   mean latency over the regions used, in percent.
#[derive(Clone, Debug, PartialEq)]
pub struct HddFit {
    /// Spindle speed (the revolution rounded to a whole rpm, within the key's 1000..30000).
    pub rpm: u32,
    /// The revolution the percentiles gave, before rounding to `rpm`.
    pub revolution_ns: f64,
    /// Command overhead.
    pub overhead_ns: u64,
    /// Sustained sequential rate.
    pub sustained_bytes_per_s: f64,
    /// Sectors per track (one zone).
    pub sectors_per_track: u32,
    /// Surfaces ([`FIT_SURFACES`]).
    pub surfaces: u32,
    /// Cylinders holding the target.
    pub cylinders: u32,
    /// 512-byte blocks the target holds.
    pub block_count: u64,
    /// Host interface rate.
    pub bus_bytes_per_s: f64,
    /// Skew at a cylinder switch (the one-cylinder seek, at least the head switch).
    pub cylinder_skew_ns: u64,
    /// Seek curve: one-cylinder time `c`, ms.
    pub seek_single_ms: f64,
    /// Coefficient of `√(d−1)`, ms.
    pub seek_sqrt_ms: f64,
    /// Coefficient of `d−1`, ms per cylinder.
    pub seek_linear_ms: f64,
    /// The curve's mean over random pairs of distinct cylinders, ms.
    pub seek_avg_ms: f64,
    /// The curve at the longest move, ms.
    pub seek_full_ms: f64,
    /// Commands the drive takes at once: 31 (NCQ) when random reads gain from depth, else 1.
    pub depth: u32,
    /// Seek regions the fit used.
    pub regions_used: usize,
    /// The fit's residual: RMS of (fitted − measured) / measured mean latency, percent.
    pub residual_percent: f64,
}

/// Moments of the cylinder distance between two uniform points of `cylinders` cylinders:
/// `(P(d ≥ 1), E[√(d−1); d ≥ 1], E[d−1; d ≥ 1])`.
fn distance_moments(cylinders: u64) -> (f64, f64, f64) {
    let c = cylinders.max(1) as f64;
    let (mut moved, mut sqrt_mean, mut linear_mean) = (0.0, 0.0, 0.0);
    for d in 1..cylinders {
        let weight = 2.0 * (c - d as f64) / (c * c);
        let x = (d - 1) as f64;
        moved += weight;
        sqrt_mean += weight * x.sqrt();
        linear_mean += weight * x;
    }
    (moved, sqrt_mean, linear_mean)
}

/// The curve's mean over random pairs of distinct cylinders (distance `d` weighted by
/// `cylinders − d`, as the `hdd` kind and the datasheets define the average seek).
fn curve_average_ms(single: f64, sqrt: f64, linear: f64, cylinders: u64) -> f64 {
    let (mut weighted, mut weights) = (0.0, 0.0);
    for d in 1..cylinders {
        let weight = (cylinders - d) as f64;
        let x = (d - 1) as f64;
        weighted += weight * (single + sqrt * x.sqrt() + linear * x);
        weights += weight;
    }
    if weights == 0.0 { single } else { weighted / weights }
}

/// Least squares of `y ≈ X·β` with `β ≥ 0` for up to three columns: every subset of the
/// columns solved unconstrained (normal equations), the feasible one of least residual kept.
/// Returns `β` (zeros for the columns left out).
fn nonnegative_least_squares(rows: &[[f64; 3]], y: &[f64]) -> [f64; 3] {
    let mut best = ([0.0; 3], y.iter().map(|v| v * v).sum::<f64>());
    for mask in 1u8..8 {
        let columns: Vec<usize> = (0..3).filter(|i| mask & (1 << i) != 0).collect();
        let n = columns.len();
        // Normal equations: (XᵀX) β = Xᵀy over the chosen columns.
        let mut matrix = vec![vec![0.0; n + 1]; n];
        for (row, &target) in rows.iter().zip(y) {
            for (i, &ci) in columns.iter().enumerate() {
                for (j, &cj) in columns.iter().enumerate() {
                    matrix[i][j] += row[ci] * row[cj];
                }
                matrix[i][n] += row[ci] * target;
            }
        }
        let Some(solution) = solve(matrix) else { continue };
        if solution.iter().any(|&value| value < 0.0 || !value.is_finite()) {
            continue;
        }
        let mut beta = [0.0; 3];
        for (&column, &value) in columns.iter().zip(&solution) {
            beta[column] = value;
        }
        let residual: f64 = rows
            .iter()
            .zip(y)
            .map(|(row, &target)| {
                let fitted: f64 = row.iter().zip(&beta).map(|(x, b)| x * b).sum();
                (fitted - target).powi(2)
            })
            .sum();
        // Fewer columns win ties (a simpler curve explains the same data).
        if residual < best.1 * (1.0 - 1e-9) {
            best = (beta, residual);
        }
    }
    best.0
}

/// Gaussian elimination with partial pivoting on an augmented `n × (n+1)` matrix; `None`
/// when singular.
fn solve(mut matrix: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let n = matrix.len();
    for column in 0..n {
        let pivot = (column..n)
            .max_by(|&a, &b| matrix[a][column].abs().total_cmp(&matrix[b][column].abs()))?;
        if matrix[pivot][column].abs() < 1e-300 {
            return None;
        }
        matrix.swap(column, pivot);
        let (upper, lower) = matrix.split_at_mut(column + 1);
        let pivot_row = &upper[column];
        for row in lower.iter_mut() {
            let factor = row[column] / pivot_row[column];
            for (cell, pivot_cell) in row[column..].iter_mut().zip(&pivot_row[column..]) {
                *cell -= factor * pivot_cell;
            }
        }
    }
    let mut solution = vec![0.0; n];
    for row in (0..n).rev() {
        let tail: f64 = (row + 1..n).map(|k| matrix[row][k] * solution[k]).sum();
        solution[row] = (matrix[row][n] - tail) / matrix[row][row];
    }
    Some(solution)
}

impl Calibration {
    /// Fits the `hdd` kind's keys to the measurements ([`HddFit`] says how). Fails, saying
    /// why, when there is no seek curve or too little of it reached the media.
    pub fn fit_hdd(&self) -> Result<HddFit, String> {
        let sequential = self
            .points
            .iter()
            .filter(|p| p.rw == "read" && p.iodepth == 1 && p.purpose == "table")
            .min_by_key(|p| p.bs_bytes)
            .ok_or("no sequential reads at QD1 were measured")?;
        let sustained = self.ceiling("read").ok_or("no sequential bandwidth was measured")? as f64;
        if sustained <= 0.0 {
            return Err("the sequential bandwidth measured is zero".into());
        }
        let mut seeks: Vec<&Point> = self.points.iter().filter(|p| p.purpose == "seek").collect();
        seeks.sort_by_key(|p| p.region_bytes);
        if seeks.is_empty() {
            return Err("no seek curve was measured".into());
        }
        // A region the drive's cache serves is not mechanical: its median is near the
        // sequential latency, or its hits pull the median far below the mean (a uniform
        // rotational wait has mean = median).
        let floor = ROTATIONAL_RATIO * sequential.lat_mean_ns as f64;
        let mechanical: Vec<&Point> = seeks
            .iter()
            .copied()
            .filter(|p| {
                let median = p.lat_p50_ns as f64;
                median >= floor && p.lat_mean_ns as f64 <= MIXTURE_RATIO * median
            })
            .collect();
        if mechanical.len() < 2 {
            return Err(format!(
                "{} of {} seek regions reached the media (median at least {ROTATIONAL_RATIO} × \
                 the sequential 4k latency and the mean within {MIXTURE_RATIO} × the median): \
                 too few to fit a seek curve",
                mechanical.len(),
                seeks.len()
            ));
        }
        // Uniform rotational wait: p90 − p50 = 0.4 revolution. Seek spread and cache hits
        // only widen the gap, so the narrowest region's is the estimate.
        let revolution_ns = mechanical
            .iter()
            .map(|p| (p.lat_p90_ns as f64 - p.lat_p50_ns as f64) / 0.4)
            .fold(f64::INFINITY, f64::min);
        if revolution_ns <= 0.0 || !revolution_ns.is_finite() {
            return Err("the random reads within the seek regions have no latency spread to \
                        take a revolution from"
                .into());
        }
        let rpm = (60e9 / revolution_ns).round().clamp(1_000.0, 30_000.0) as u32;
        let revolution = 60e9 / f64::from(rpm);
        let overhead_ns =
            (sequential.lat_mean_ns as f64 - sequential.bs_bytes as f64 / sustained * 1e9).max(0.0);
        let bus_bytes_per_s = if sustained > 0.8 * FIT_BUS_BYTES_PER_S {
            (sustained * 1.25 / 1e6).ceil() * 1e6
        } else {
            FIT_BUS_BYTES_PER_S
        };
        let transfer_ns = 4096.0 / sustained * 1e9;
        let surfaces = FIT_SURFACES;
        let head_switch = FIT_HEAD_SWITCH_NS as f64;
        // The skews depend on the one-cylinder seek and the geometry on the skews: two passes.
        let mut cylinder_skew = head_switch;
        let mut fitted = None;
        for _ in 0..2 {
            let s = f64::from(surfaces);
            let spt = (sustained * ((s - 1.0) * head_switch + cylinder_skew + s * revolution)
                / 1e9
                / (512.0 * s))
                .round()
                .clamp(1.0, 100_000.0) as u32;
            let bytes_per_cylinder = u64::from(spt) * u64::from(surfaces) * 512;
            let cylinders =
                self.size_bytes.div_ceil(bytes_per_cylinder).clamp(1, 10_000_000) as u32;
            let mut rows = Vec::new();
            let mut y = Vec::new();
            let mut measured = Vec::new();
            for point in &mechanical {
                let region_cylinders =
                    point.region_bytes.div_ceil(bytes_per_cylinder).clamp(1, u64::from(cylinders));
                let (moved, sqrt_mean, linear_mean) = distance_moments(region_cylinders);
                let mean = point.lat_mean_ns as f64;
                let positioning = mean - overhead_ns - transfer_ns - revolution / 2.0;
                // Relative least squares: each region weighs by its own latency, as the
                // stated error does.
                rows.push([moved / mean, sqrt_mean / mean, linear_mean / mean]);
                y.push(positioning / mean);
                measured.push(mean);
            }
            let [single_ns, sqrt_ns, linear_ns] = nonnegative_least_squares(&rows, &y);
            let residual = (rows
                .iter()
                .zip(&y)
                .map(|(row, target)| {
                    (row[0] * single_ns + row[1] * sqrt_ns + row[2] * linear_ns - target).powi(2)
                })
                .sum::<f64>()
                / rows.len() as f64)
                .sqrt();
            cylinder_skew = single_ns.max(head_switch);
            fitted = Some((spt, cylinders, single_ns, sqrt_ns, linear_ns, residual));
        }
        let (spt, cylinders, single_ns, sqrt_ns, linear_ns, residual) =
            fitted.expect("two passes ran");
        // Floors that keep the `hdd` kind's own solve for (a, b) from the written average and
        // full stroke non-negative after rounding to whole nanoseconds (each adds under a
        // microsecond to any seek).
        let seek_sqrt_ms = (sqrt_ns / 1e6).max(1e-4);
        let seek_linear_ms = (linear_ns / 1e6).max(1e-3 / f64::from(cylinders.max(2)));
        let seek_single_ms = single_ns / 1e6;
        let longest = f64::from(cylinders.saturating_sub(2));
        let seek_full_ms =
            seek_single_ms + seek_sqrt_ms * longest.sqrt() + seek_linear_ms * longest;
        let seek_avg_ms =
            curve_average_ms(seek_single_ms, seek_sqrt_ms, seek_linear_ms, u64::from(cylinders));
        let depth = match (self.rate_at(1), self.rate_at(16)) {
            (Some(one), Some(sixteen)) if sixteen > 1.2 * one => 31,
            _ => 1,
        };
        Ok(HddFit {
            rpm,
            revolution_ns,
            overhead_ns: overhead_ns.round() as u64,
            sustained_bytes_per_s: sustained,
            sectors_per_track: spt,
            surfaces,
            cylinders,
            block_count: (self.size_bytes / 512).max(1),
            bus_bytes_per_s,
            cylinder_skew_ns: cylinder_skew.round() as u64,
            seek_single_ms,
            seek_sqrt_ms,
            seek_linear_ms,
            seek_avg_ms,
            seek_full_ms,
            depth,
            regions_used: mechanical.len(),
            residual_percent: residual * 100.0,
        })
    }

    /// The IOPS of the random 4k reads at `depth` (table points).
    fn rate_at(&self, depth: u32) -> Option<f64> {
        self.points
            .iter()
            .find(|p| {
                p.rw == "randread"
                    && p.bs_bytes == 4 << 10
                    && p.iodepth == depth
                    && p.purpose == "table"
            })
            .map(|p| self.rate(p))
    }

    /// The kind the preset takes and why: `hdd` with its fit for a rotational device whose
    /// seek curve fits, `table` otherwise.
    pub fn kind(&self) -> (Result<HddFit, String>, String) {
        if !self.rotational() {
            return (
                Err("not rotational".into()),
                "table: the device is not rotational (flash or memory: no mechanics to fit, \
                 its measured tables are the model)"
                    .into(),
            );
        }
        match self.fit_hdd() {
            Ok(fit) => {
                let reason = format!(
                    "hdd: the device is rotational, so its seek curve and rotation order the \
                     schedulers; fitted from {} seek regions with a residual of {:.1} %",
                    fit.regions_used, fit.residual_percent
                );
                (Ok(fit), reason)
            }
            Err(why) => {
                let reason = format!(
                    "table: the device is rotational but its mechanics could not be fitted ({why})"
                );
                (Err(why), reason)
            }
        }
    }
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

    /// The `table` kind's keys: the measured tables.
    fn table_keys(&self, out: &mut String) {
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
    }

    /// The `hdd` kind's keys from `fit`.
    fn hdd_keys(&self, fit: &HddFit, out: &mut String) {
        let ns = |ms: f64| format!("\"{}ns\"", (ms * 1e6).round() as u64);
        out.push_str("kind = \"hdd\"\n");
        out.push_str("rotational = true\n");
        out.push_str(&format!("rpm = {}\n", fit.rpm));
        out.push_str(&format!("surfaces = {}\n", fit.surfaces));
        out.push_str(&format!("cylinders = {}\n", fit.cylinders));
        out.push_str("zone_count = 1\n");
        out.push_str(&format!("spt_outer = {}\n", fit.sectors_per_track));
        out.push_str(&format!("spt_inner = {}\n", fit.sectors_per_track));
        out.push_str(&format!("block_count = {}\n", fit.block_count));
        out.push_str(&format!("head_switch = \"{FIT_HEAD_SWITCH_NS}ns\"\n"));
        out.push_str(&format!("track_skew = \"{FIT_HEAD_SWITCH_NS}ns\"\n"));
        out.push_str(&format!("cylinder_skew = \"{}ns\"\n", fit.cylinder_skew_ns));
        out.push_str("seek = \"curve\"\n");
        out.push_str(&format!("seek_single = {}\n", ns(fit.seek_single_ms)));
        out.push_str(&format!("seek_avg = {}\n", ns(fit.seek_avg_ms)));
        out.push_str(&format!("seek_full = {}\n", ns(fit.seek_full_ms)));
        out.push_str(&format!("overhead_read = \"{}ns\"\n", fit.overhead_ns));
        out.push_str(&format!("overhead_write = \"{}ns\"\n", fit.overhead_ns));
        out.push_str(&format!("bus_rate = {}\n", fit.bus_bytes_per_s / 1e6));
        out.push_str(&format!("depth = {}\n", fit.depth));
    }

    /// The preset file: an `hdd` device with the fitted mechanics for a rotational device
    /// whose seek curve fits ([`Calibration::kind`]), else a `table` device with the measured
    /// tables; `rotational`; and a `[measured]` table recording `command`, `date`, the target,
    /// the kind's reason, the fit and every point.
    pub fn preset_toml(&self, command: &str, date: &str) -> String {
        let mut out = String::new();
        let quote = |text: &str| format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
        out.push_str("# A device preset measured by `elevator calibrate`: use it as\n");
        let (fit, reason) = self.kind();
        out.push_str(&format!(
            "# `elevator sim -d ./THIS.toml` (keys: `elevator list devices`, kind {}).\n",
            if fit.is_ok() { "hdd" } else { "table" }
        ));
        out.push_str(&format!("# {reason}\n"));
        match &fit {
            Ok(fit) => self.hdd_keys(fit, &mut out),
            Err(_) => self.table_keys(&mut out),
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
                "# The kernel sent requests up to {kb} KiB: sim, compare and advise split at it.\n"
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
        out.push_str(&format!("kind_reason = {}\n", quote(&reason)));
        if let Ok(fit) = &fit {
            out.push_str(&format!("revolution_ns = {:.0}\n", fit.revolution_ns));
            out.push_str(&format!("sustained_bytes_per_s = {:.0}\n", fit.sustained_bytes_per_s));
            out.push_str(&format!(
                "seek_curve_ms = \"{:.6} + {:.6}*sqrt(d-1) + {:.9}*(d-1)\"\n",
                fit.seek_single_ms, fit.seek_sqrt_ms, fit.seek_linear_ms
            ));
            out.push_str(&format!("seek_regions_fitted = {}\n", fit.regions_used));
            out.push_str(
                "# RMS of (fitted - measured) / measured mean latency over the seek regions fitted.\n",
            );
            out.push_str(&format!("seek_fit_error_percent = {:.1}\n", fit.residual_percent));
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

    // Proves the non-negative least squares recovers exact coefficients from consistent
    // data, and pins a coefficient the data would make negative at zero (refitting the
    // others) instead of returning a curve that bends the wrong way.
    #[test]
    fn nonnegative_least_squares_recovers_and_clamps() {
        let rows: Vec<[f64; 3]> =
            (1..=6).map(|i| [1.0, f64::from(i).sqrt(), f64::from(i * i)]).collect();
        let exact: Vec<f64> =
            rows.iter().map(|row| 0.5 * row[0] + 2.0 * row[1] + 0.01 * row[2]).collect();
        let beta = nonnegative_least_squares(&rows, &exact);
        for (got, want) in beta.iter().zip([0.5, 2.0, 0.01]) {
            assert!((got - want).abs() < 1e-9, "{beta:?}");
        }
        // A falling linear term: unconstrained it would come out negative.
        let falling: Vec<f64> = rows.iter().map(|row| 3.0 * row[0] - 0.05 * row[2]).collect();
        let beta = nonnegative_least_squares(&rows, &falling);
        assert!(beta.iter().all(|&b| b >= 0.0), "{beta:?}");
        assert_eq!(beta[2], 0.0, "{beta:?}");
    }

    // Proves the distance moments follow the two-uniform-points law: one cylinder never
    // moves; two move half the time by exactly one cylinder (so no √ or linear excess).
    #[test]
    fn distance_moments_of_small_regions() {
        assert_eq!(distance_moments(1), (0.0, 0.0, 0.0));
        assert_eq!(distance_moments(2), (0.5, 0.0, 0.0));
        let (moved, _, linear) = distance_moments(1000);
        // P(d ≥ 1) = 1 − 1/C; E[d] ≈ C/3.
        assert!((moved - 0.999).abs() < 1e-9);
        assert!((linear + moved - 1000.0 / 3.0).abs() < 1.0, "{linear}");
    }

    // Proves a rotational device whose seek regions are all served as fast as its
    // sequential reads (no mechanics: a cache, or flash flagged rotational) gets no hdd fit
    // and a table preset that says why; and a non-rotational one a table preset without a
    // fit attempted.
    #[test]
    fn rotational_without_mechanics_keeps_the_table() {
        let mut seek = point("randread", 4096, 1, 10_000.0, &[10_000.0]);
        seek.purpose = "seek";
        seek.region_bytes = 1 << 20;
        let mut whole = seek.clone();
        whole.region_bytes = 1 << 30;
        let mut calibration = Calibration {
            target: "/dev/loop9".into(),
            size_bytes: 1 << 30,
            sysfs_rotational: Some(true),
            measured_rotational: false,
            sysfs_nr_requests: Some(128),
            sysfs_max_sectors_kb: None,
            seconds_per_step: 1.0,
            points: vec![point("read", 4096, 1, 50_000.0, &[50_000.0]), seek, whole],
            rotational_latency_ns: None,
        };
        let (fit, reason) = calibration.kind();
        assert!(fit.is_err());
        assert!(reason.contains("0 of 2 seek regions"), "{reason}");
        let text = calibration.preset_toml("c", "d");
        assert!(text.contains("kind = \"table\""), "{text}");
        assert!(text.contains("kind_reason = \"table: the device is rotational"), "{text}");
        calibration.sysfs_rotational = Some(false);
        assert!(calibration.kind().1.starts_with("table: the device is not rotational"));
    }
}
