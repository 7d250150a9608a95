//! The `hdd` fit's round trip on the simulator: `calibrate` measures a simulated disk whose
//! true mechanics are a built-in preset's (through the [`CalibrationTarget`] seam, the
//! simulator standing where the live engine stands), fits the `hdd` kind's keys, and the
//! fitted rotation and seek curve are compared with the preset's true values; the written
//! preset loads as a device and reproduces the measured random-read latency.
//!
//! The figures are printed (`--nocapture`) for docs/validation.md "Calibrated devices".

// The fitted figures go to stderr for the validation notes.
#![allow(clippy::print_stderr)]

use std::path::PathBuf;

use elevator_core::{Op, Sector};
use elevator_live::LiveError;
use elevator_live::calibrate::{
    CalibrateOptions, Calibration, CalibrationTarget, HddFit, Point, Step, SysfsQueue, calibrate,
};
use elevator_sim::device::{DeviceSpec, Probe};

/// A simulated device answering calibration's trials: closed loops of the step's I/Os on a
/// [`Probe`], timed by the simulator's clock (each trial runs at least `MIN_OPS` commands
/// and at least the step's simulated seconds).
struct SimulatedDisk {
    name: String,
    probe: Probe,
    /// A deterministic stream for the random offsets (splitmix64).
    state: u64,
}

const MIN_OPS: usize = 400;

impl SimulatedDisk {
    fn new(spec: &str) -> SimulatedDisk {
        let device = DeviceSpec::parse(spec).expect("a device spec").build().expect("a model");
        SimulatedDisk { name: format!("sim:{spec}"), probe: Probe::new(device), state: 7 }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl CalibrationTarget for SimulatedDisk {
    fn path(&self) -> PathBuf {
        PathBuf::from(&self.name)
    }

    fn size_bytes(&self) -> u64 {
        self.probe.device().capacity_sectors() * 512
    }

    fn queue(&self) -> SysfsQueue {
        SysfsQueue {
            rotational: Some(self.probe.device().rotational()),
            nr_requests: Some(self.probe.device().queue_depth()),
            max_sectors_kb: Some(512),
        }
    }

    fn trial(
        &mut self,
        step: &Step,
        seconds: f64,
        _options: &CalibrateOptions,
    ) -> Result<Point, LiveError> {
        let depth = step.iodepth.min(self.probe.device().queue_depth()).max(1);
        let size = self.size_bytes();
        let region = if step.region_bytes == 0 { size } else { step.region_bytes.min(size) };
        let blocks = (region / step.bs_bytes).max(1);
        let sectors = (step.bs_bytes / 512) as u32;
        let random = step.rw.starts_with("rand");
        let op = if step.rw.contains("write") { Op::Write } else { Op::Read };
        let start = self.probe.now();
        let mut latencies: Vec<u64> = Vec::new();
        let mut cursor = 0u64;
        loop {
            let batch: Vec<(Op, Sector, u32)> = (0..256)
                .map(|_| {
                    let block = if random {
                        self.next() % blocks
                    } else {
                        let block = cursor % blocks;
                        cursor += 1;
                        block
                    };
                    (op, Sector(block * step.bs_bytes / 512), sectors)
                })
                .collect();
            for timed in self.probe.closed_loop(batch, depth) {
                latencies.push(timed.finished.saturating_since(timed.submitted).as_nanos());
            }
            let elapsed = self.probe.now().saturating_since(start).as_secs_f64();
            if elapsed >= seconds && latencies.len() >= MIN_OPS {
                let ops = latencies.len() as u64;
                let mean = latencies.iter().sum::<u64>() / ops;
                latencies.sort_unstable();
                // Nearest rank.
                let at = |q: f64| {
                    latencies[((q * ops as f64).ceil() as usize).clamp(1, ops as usize) - 1]
                };
                return Ok(Point {
                    rw: step.rw,
                    bs_bytes: step.bs_bytes,
                    iodepth: step.iodepth,
                    region_bytes: step.region_bytes,
                    purpose: step.purpose,
                    ops,
                    iops: ops as f64 / elapsed,
                    bandwidth_bytes_per_s: (ops * step.bs_bytes) as f64 / elapsed,
                    lat_mean_ns: mean,
                    lat_p50_ns: at(0.5),
                    lat_p90_ns: at(0.9),
                    lat_p99_ns: at(0.99),
                    lat_p99_9_ns: at(0.999),
                    trials_iops: Vec::new(),
                });
            }
        }
    }
}

fn calibrated(spec: &str) -> Calibration {
    let mut disk = SimulatedDisk::new(spec);
    let options = CalibrateOptions { quick: true, ..CalibrateOptions::default() };
    calibrate(&mut disk, &options, &mut |_, _, _| {}).expect("calibration of a simulated disk")
}

/// Relative difference.
fn off(fitted: f64, truth: f64) -> f64 {
    (fitted / truth - 1.0).abs()
}

/// The tolerances the round trip holds the fit to (docs/validation.md "Calibrated devices"):
/// rpm within 10 %, the average seek within 15 %, the full stroke within 25 % (the fit
/// extrapolates it from the regions' means, and the preset's zoning puts more bytes on its
/// outer cylinders than the fit's single zone does).
const RPM_TOLERANCE: f64 = 0.10;
const AVG_TOLERANCE: f64 = 0.15;
const FULL_TOLERANCE: f64 = 0.25;

/// Calibrates the simulated `spec`, checks the fit against `(rpm, seek_avg ms, seek_full
/// ms)` and that the written preset loads as an `hdd` and reproduces the whole-disk random
/// reads' mean latency within the fit's own tolerance.
fn round_trip(spec: &str, rpm: f64, seek_avg_ms: f64, seek_full_ms: f64) -> HddFit {
    let calibration = calibrated(spec);
    assert!(calibration.rotational());
    let fit = calibration.fit_hdd().unwrap_or_else(|why| panic!("{spec}: no fit: {why}"));
    eprintln!(
        "{spec}: rpm {} (true {rpm}), seek avg {:.2} ms (true {seek_avg_ms}), full {:.2} ms \
         (true {seek_full_ms}), single {:.3} ms, residual {:.1} %, {} regions, depth {}",
        fit.rpm,
        fit.seek_avg_ms,
        fit.seek_full_ms,
        fit.seek_single_ms,
        fit.residual_percent,
        fit.regions_used,
        fit.depth
    );
    assert!(off(f64::from(fit.rpm), rpm) < RPM_TOLERANCE, "{spec}: rpm {} vs {rpm}", fit.rpm);
    assert!(
        off(fit.seek_avg_ms, seek_avg_ms) < AVG_TOLERANCE,
        "{spec}: average seek {:.2} ms vs {seek_avg_ms}",
        fit.seek_avg_ms
    );
    assert!(
        off(fit.seek_full_ms, seek_full_ms) < FULL_TOLERANCE,
        "{spec}: full stroke {:.2} ms vs {seek_full_ms}",
        fit.seek_full_ms
    );
    // The preset file: an `hdd` that loads, and whose own whole-disk random reads take what
    // the calibrated disk's did.
    let text = calibration.preset_toml("test", "today");
    assert!(text.contains("kind = \"hdd\""), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fitted.toml");
    std::fs::write(&file, &text).unwrap();
    let loaded = DeviceSpec::parse(file.to_str().unwrap())
        .unwrap_or_else(|error| panic!("{spec}: the fitted preset does not load: {error}\n{text}"));
    assert_eq!(loaded.kind().name(), "hdd");
    let mut model = SimulatedDisk::new(file.to_str().unwrap());
    let whole = Step { rw: "randread", bs_bytes: 4096, iodepth: 1, region_bytes: 0, purpose: "t" };
    let options = CalibrateOptions::default();
    let fitted = model.trial(&whole, 5.0, &options).unwrap().lat_mean_ns as f64;
    let truth = SimulatedDisk::new(spec).trial(&whole, 5.0, &options).unwrap().lat_mean_ns as f64;
    eprintln!(
        "{spec}: whole-disk random 4k reads: fitted model {fitted:.0} ns, true {truth:.0} ns"
    );
    assert!(off(fitted, truth) < AVG_TOLERANCE, "{spec}: model {fitted:.0} ns vs {truth:.0} ns");
    fit
}

// Proves the fit recovers a 7200-rpm desktop disk's rotation and seek curve (the preset
// `desktop-7200-2005`: 7200 rpm, seek 0.8/8.5/16 ms, 30 zones, 10 heads, depth 1) from what
// calibration measures of it, and that the preset it writes loads as an `hdd` whose random
// reads take what the true disk's do.
#[test]
fn desktop_disk_round_trip() {
    let fit = round_trip("desktop-7200-2005", 7200.0, 8.5, 16.0);
    // A drive whose queue takes one command (no deeper point measured) is fitted with one.
    assert_eq!(fit.depth, 1);
}

// Proves the same for a 15k-rpm SAS disk with command queuing (`sas-15k-2008`: 15000 rpm,
// seek 0.2/3.4/6.6 ms, depth 32), a different truth on every count, and that its queuing
// is recognised (random reads gain from depth: the fitted drive takes 31 commands).
#[test]
fn sas_disk_round_trip() {
    let fit = round_trip("sas-15k-2008", 15000.0, 3.4, 6.6);
    assert_eq!(fit.depth, 31);
}
