//! `elevator calibrate` on real loop devices (one over a RAM file, one over a file on disk
//! with direct I/O), created and removed by the tests (as root; skipped with the reason
//! otherwise, failed under CI=true), and the preset files it writes loaded by `elevator sim`.
//!
//! No test asserts a speed: a measured figure is only compared with another measured in the
//! same test, within the error the preset states.

// A skipped test must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr)]

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// One measuring test at a time: two on the machine's few cores at once would measure each
/// other (the tests' processes share them).
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn measuring() -> std::sync::MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn ok(output: Output, what: &str) -> Output {
    assert!(
        output.status.success(),
        "{what} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Calibrates `device` with `--quick` into `dir/name` and returns the parsed file.
fn calibrate(device: &Path, dir: &Path, name: &str) -> (std::path::PathBuf, toml::Table) {
    let file = dir.join(name);
    ok(
        elevator(&["calibrate", device.to_str().unwrap(), "--quick", "-o", file.to_str().unwrap()]),
        "calibrate",
    );
    let text = std::fs::read_to_string(&file).expect("the preset file");
    (file, text.parse().unwrap_or_else(|error| panic!("the preset is not TOML: {error}\n{text}")))
}

/// The first phase's IOPS in a JSON report.
fn iops(output: &Output) -> f64 {
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    report["runs"][0]["phases"][0]["iops"].as_f64().expect("the phase's IOPS")
}

fn job(depth: u32) -> String {
    format!("job:rw=randread,bs=4k,iodepth={depth},runtime=300ms,time_based=1")
}

/// The simulated IOPS of the random 4k reads at `depth` on the preset `file`.
fn simulated_iops(file: &Path, depth: u32) -> f64 {
    let output = ok(
        elevator(&[
            "sim",
            "-d",
            file.to_str().unwrap(),
            "-w",
            &job(depth),
            "-s",
            "none",
            "--format",
            "json",
        ]),
        "sim on the preset",
    );
    iops(&output)
}

/// The median IOPS of five direct live runs (`elevator run`) of the job, each as long as a
/// `--quick` calibration's trial: calibration keeps the median of five such trials, so both
/// sides are measured alike.
fn live_iops(device: &Path, depth: u32) -> f64 {
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            iops(&ok(
                elevator(&[
                    "run",
                    "--target",
                    device.to_str().unwrap(),
                    "-w",
                    &job(depth),
                    "-s",
                    "none",
                    "--format",
                    "json",
                ]),
                "run",
            ))
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[2]
}

/// Rounds of calibration and comparison the live claim gets: the load of a shared machine
/// can move between a calibration and the runs after it beyond what it did during the
/// calibration (the stated error covers the latter only).
const ROUNDS: usize = 3;

// Proves the calibration claim on a RAM-backed loop device: the preset calibrate
// writes loads in `elevator sim`, says rotational = false (sysfs and the measurements
// agree), its model reproduces the preset's own QD1 and QD16 IOPS (within 10 %: the
// simulated host's software path comes on top; every round), and its random-read IOPS at
// QD1 and QD16 are within the file's stated error of a direct live run of the same job on
// the same device, measured here (in one of `ROUNDS` rounds, each a fresh calibration: a
// model off by more than the noise fails them all).
#[test]
fn ram_loop_preset_matches_a_direct_live_run() {
    let Some(disk) =
        support::RamLoop::attach("ram_loop_preset_matches_a_direct_live_run", 256 << 20)
    else {
        return;
    };
    let _alone = measuring();
    let dir = tempfile::tempdir().unwrap();
    let mut misses = Vec::new();
    for round in 0..ROUNDS {
        let (file, preset) = calibrate(disk.path(), dir.path(), &format!("ram{round}.toml"));
        assert_eq!(preset["kind"].as_str(), Some("table"));
        assert_eq!(preset["rotational"].as_bool(), Some(false));
        let measured = preset["measured"].as_table().expect("a [measured] table");
        assert_eq!(measured["measured_rotational"].as_bool(), Some(false));
        assert_eq!(measured["target"].as_str(), disk.path().to_str());
        let error_percent = measured["error_percent"].as_float().expect("a stated error");
        let table = preset["read_iops"].as_str().expect("the IOPS table");
        let mut within = true;
        for depth in [1u32, 16] {
            let stated: f64 = table
                .split('/')
                .find_map(|pair| pair.strip_prefix(&format!("{depth}:")))
                .and_then(|iops| iops.parse().ok())
                .unwrap_or_else(|| panic!("no QD{depth} in `{table}`"));
            let simulated = simulated_iops(&file, depth);
            assert!(
                (simulated / stated - 1.0).abs() < 0.10,
                "QD{depth}: the model gives {simulated:.0} IOPS, its table says {stated:.0}"
            );
            let live = live_iops(disk.path(), depth);
            // As the preset states it: the ratio of the larger to the smaller, less one.
            let error = (simulated.max(live) / simulated.min(live) - 1.0) * 100.0;
            eprintln!(
                "round {round} QD{depth}: model {simulated:.0} IOPS, live {live:.0} IOPS: \
                 {error:.1} % (stated {error_percent:.1} %)"
            );
            if error > error_percent {
                within = false;
                misses.push(format!(
                    "round {round} QD{depth}: the model gives {simulated:.0} IOPS, a live run \
                     {live:.0}: {error:.1} % off, beyond the stated {error_percent:.1} %"
                ));
            }
        }
        if within {
            return;
        }
    }
    panic!("no round within the stated error:\n{}", misses.join("\n"));
}

// Proves a preset calibrated on a loop device over a file on disk (direct I/O) loads, keeps
// sysfs's rotational flag (whatever the loop driver reports: recent kernels copy the backing
// device's), records both what sysfs said and what the measurements looked like, and says
// which kind it is and why (`kind_reason`), the kind's own keys listed.
#[test]
fn disk_loop_preset_loads() {
    // A loop device over a file in a temporary directory on disk, with direct I/O; calibrate
    // only reads it and changes none of its queue's settings.
    if let Some(reason) = support::common::loop_devices_missing() {
        assert!(
            std::env::var("CI").map_or(true, |ci| ci != "true"),
            "disk_loop_preset_loads cannot run under CI=true: {reason}"
        );
    }
    let Some(disk) =
        support::common::LoopDevice::attach("disk_loop_preset_loads", 256 << 20, false, |_| {})
    else {
        return;
    };
    let _alone = measuring();
    let dir = tempfile::tempdir().unwrap();
    let (file, preset) = calibrate(disk.path(), dir.path(), "disk.toml");
    let sysfs = std::fs::read_to_string(format!("/sys/block/{}/queue/rotational", disk.name()))
        .expect("the loop device's rotational flag");
    let sysfs = sysfs.trim() == "1";
    assert_eq!(preset["rotational"].as_bool(), Some(sysfs));
    let measured = preset["measured"].as_table().expect("a [measured] table");
    assert_eq!(measured["sysfs_rotational"].as_bool(), Some(sysfs));
    if sysfs {
        // A rotational device gets its seek curve and rotational latency.
        let points = measured["point"].as_array().expect("the points");
        assert!(points.iter().any(|point| point["purpose"].as_str() == Some("seek")));
        assert!(measured["rotational_latency_ns"].as_integer().is_some_and(|ns| ns > 0));
    }
    assert!(measured["measured_rotational"].as_bool().is_some());
    assert!(!measured["point"].as_array().expect("the points").is_empty());
    assert!(simulated_iops(&file, 1) > 0.0);
    // Listed and described like a built-in device: a table's keys, or an hdd's when the
    // backing disk has mechanics the fit found.
    let key = match preset["kind"].as_str() {
        Some("hdd") => "seek_avg",
        _ => "read_rand_lat",
    };
    let listed = ok(elevator(&["list", "devices", file.to_str().unwrap()]), "list devices");
    assert!(String::from_utf8_lossy(&listed.stdout).contains(key));
    assert!(measured["kind_reason"].as_str().is_some_and(|reason| !reason.is_empty()));
}

/// Sets a device's `queue/rotational` and puts the value found back when dropped (also when
/// the test fails; before the loop device is detached, as it is declared after it).
struct RotationalFlag {
    path: String,
    found: String,
}

impl RotationalFlag {
    fn set(name: &str, value: &str) -> RotationalFlag {
        let path = format!("/sys/block/{name}/queue/rotational");
        let found =
            std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
        std::fs::write(&path, value).unwrap_or_else(|error| panic!("writing {path}: {error}"));
        RotationalFlag { path, found }
    }
}

impl Drop for RotationalFlag {
    fn drop(&mut self) {
        if let Err(error) = std::fs::write(&self.path, self.found.trim()) {
            eprintln!("cleanup: could not put {} back to {}: {error}", self.path, self.found);
        }
    }
}

// Proves a device the kernel calls rotational takes the hdd path end to end with --quick:
// a RAM-backed loop device with `queue/rotational` set to 1 (put back after) gets its seek
// curve measured (at least three regions, the last the whole device), the hdd fit is tried
// and, the device having no mechanics (its random reads at every distance are as fast as
// its sequential ones), declined with the reason in the preset, which keeps the table kind,
// says rotational = true and loads; the flag is back as found afterwards.
#[test]
fn rotational_loop_takes_the_hdd_path() {
    let Some(disk) = support::RamLoop::attach("rotational_loop_takes_the_hdd_path", 64 << 20)
    else {
        return;
    };
    let flag_path = format!("/sys/block/{}/queue/rotational", disk.name());
    let before = std::fs::read_to_string(&flag_path).expect("the rotational flag");
    let _alone = measuring();
    {
        let _rotational = RotationalFlag::set(&disk.name(), "1");
        let dir = tempfile::tempdir().unwrap();
        let (file, preset) = calibrate(disk.path(), dir.path(), "rotational.toml");
        assert_eq!(preset["rotational"].as_bool(), Some(true));
        let measured = preset["measured"].as_table().expect("a [measured] table");
        assert_eq!(measured["sysfs_rotational"].as_bool(), Some(true));
        let regions: Vec<i64> = measured["point"]
            .as_array()
            .expect("the points")
            .iter()
            .filter(|point| point["purpose"].as_str() == Some("seek"))
            .map(|point| point["region_bytes"].as_integer().expect("a seek region"))
            .collect();
        assert!(regions.len() >= 3, "seek regions {regions:?}");
        assert_eq!(regions.last(), Some(&(64 << 20)), "seek regions {regions:?}");
        let reason = measured["kind_reason"].as_str().expect("the kind's reason");
        assert_eq!(preset["kind"].as_str(), Some("table"), "{reason}");
        assert!(
            reason.contains("rotational") && reason.contains("could not be fitted"),
            "{reason}"
        );
        assert!(simulated_iops(&file, 1) > 0.0);
    }
    assert_eq!(std::fs::read_to_string(&flag_path).expect("the rotational flag"), before);
}

// Proves calibrate refuses to write to a block device without --force (exit 2, saying so)
// and leaves its content as it was.
#[test]
fn writes_are_refused_on_a_device_without_force() {
    let Some(disk) =
        support::RamLoop::attach("writes_are_refused_on_a_device_without_force", 16 << 20)
    else {
        return;
    };
    let before = support::common::checksum(disk.path());
    let output = elevator(&["calibrate", disk.path().to_str().unwrap(), "--quick", "--write"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(support::common::checksum(disk.path()), before);
}

// Proves a bad preset file is a usage error (exit 2) naming the file, the line and the key.
#[test]
fn bad_preset_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "kind = \"table\"\ndepth = 8\nread_iops = \"1:fast\"\n").unwrap();
    let output = elevator(&["sim", "-d", file.to_str().unwrap(), "-w", &job(1)]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for part in [file.to_str().unwrap(), "line 3", "read_iops"] {
        assert!(stderr.contains(part), "`{part}` missing from: {stderr}");
    }
}

// Proves --write measures writes on a scratch file calibrate creates (--size): the preset
// gains write tables that load; and that an existing file elevator did not create is refused
// for writing without --force (exit 2), its content untouched.
#[test]
fn write_on_a_scratch_file_only() {
    let _alone = measuring();
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch.img");
    let file = dir.path().join("scratch.toml");
    ok(
        elevator(&[
            "calibrate",
            scratch.to_str().unwrap(),
            "--size",
            "32m",
            "--quick",
            "--write",
            "-o",
            file.to_str().unwrap(),
        ]),
        "calibrate --write on a new scratch file",
    );
    let preset: toml::Table = std::fs::read_to_string(&file).unwrap().parse().unwrap();
    for key in ["write_seq_lat", "write_rand_lat", "write_iops"] {
        assert!(preset[key].as_str().is_some_and(|table| !table.is_empty()), "{key}: {preset}");
    }
    assert!(simulated_iops(&file, 1) > 0.0);

    let plain = dir.path().join("plain.img");
    std::fs::write(&plain, vec![7u8; 1 << 20]).unwrap();
    let output = elevator(&["calibrate", plain.to_str().unwrap(), "--quick", "--write"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("--force"), "{output:?}");
    assert_eq!(std::fs::read(&plain).unwrap(), vec![7u8; 1 << 20]);
}

/// The device commands of a JSON report's first run.
fn device_requests(output: &Output) -> u64 {
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    report["runs"][0]["device_stats"]["requests"].as_u64().expect("the device's requests")
}

// Proves the request size comes from the calibrated target: a preset recording the device's
// `max_sectors_kb` (64 KiB) makes `sim` and `compare` split 16 MiB of 1 MiB reads into 256
// device commands where the simulated driver's own limit (512 KiB) would give 32, and
// `sim --max-sectors-kb 256` still overrides it (64 commands).
#[test]
fn request_size_comes_from_the_preset() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("small-requests.toml");
    let path = file.to_str().unwrap();
    let workload = "job:rw=read,bs=1m,iodepth=1,size=16m";
    std::fs::write(&file, "kind = \"table\"\ndepth = 8\n\n[measured]\nsysfs_max_sectors_kb = 64\n")
        .unwrap();
    let sim = |extra: &[&str]| {
        let mut args = vec!["sim", "-d", path, "-w", workload, "-s", "none", "--format", "json"];
        args.extend_from_slice(extra);
        device_requests(&ok(elevator(&args), "sim"))
    };
    assert_eq!(sim(&[]), 256);
    assert_eq!(sim(&["--max-sectors-kb", "256"]), 64);
    let compare = ok(
        elevator(&["compare", "-d", path, "-w", workload, "-s", "none", "--format", "json", "-q"]),
        "compare",
    );
    assert_eq!(device_requests(&compare), 256);
    // Without the record, the driver's limit.
    std::fs::write(&file, "kind = \"table\"\ndepth = 8\n").unwrap();
    assert_eq!(sim(&[]), 32);
}
