//! Per-interval time series (issue 19): every run's JSON has `phases[].series`, per job and
//! direction, interval by interval (`--interval`), in the simulator and live.

#[path = "../../kernel/tests/support/mod.rs"]
mod support;

use std::process::{Command, Output};

use serde_json::Value;
use support::TestDisk;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn json(output: &Output) -> Value {
    assert!(output.status.success(), "{}", stderr(output));
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

fn u64_of(value: &Value) -> u64 {
    value.as_u64().unwrap_or_else(|| panic!("not an integer: {value}"))
}

fn f64_of(value: &Value) -> f64 {
    value.as_f64().unwrap_or_else(|| panic!("not a number: {value}"))
}

/// A randread at depth 4 on a RAM disk for exactly 3 s of simulated time (256 KiB reads keep
/// the operations, and the test's time, few).
const STEADY: &str = "job:rw=randread,bs=256k,iodepth=4,runtime=3s,time_based=1,size=64m";

/// Two jobs in one phase: `fast` unthrottled for 1 s, `slow` at 1000 IOPS for 3 s.
const TWO_RATES: &str = "[global]\nrw=randread\nbs=4k\nsize=64m\ntime_based=1\niodepth=1\n\n\
                         [fast]\nruntime=1s\n\n[slow]\nruntime=3s\nrate_iops=1000\n";

fn sim(workload: &[&str], extra: &[&str]) -> Output {
    let mut args = vec!["sim", "-d", "ram", "-s", "none", "--seed", "7"];
    args.extend_from_slice(workload);
    args.extend_from_slice(extra);
    elevator(&args)
}

/// Checks what every series must satisfy against its phase, and returns the phase's
/// intervals' boundaries: consecutive intervals from 0, each of the series' length but the
/// last (which ends at the phase's end), the same boundaries on every line, and the lines
/// adding up, interval by interval, to the phase's bytes and operations of each direction.
fn check_series_adds_up(phase: &Value) -> Vec<(u64, u64)> {
    let series = &phase["series"];
    let interval_ns = u64_of(&series["interval_ns"]);
    assert_eq!(series["significant_digits"], 2);
    let duration_ns = u64_of(&phase["duration_ns"]);
    let lines = series["lines"].as_array().expect("lines");
    assert!(!lines.is_empty(), "a phase with I/O has lines");
    let boundaries: Vec<(u64, u64)> = lines[0]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|interval| (u64_of(&interval["start_ns"]), u64_of(&interval["duration_ns"])))
        .collect();
    assert_eq!(boundaries.len() as u64, duration_ns.div_ceil(interval_ns));
    for (index, &(start_ns, length_ns)) in boundaries.iter().enumerate() {
        assert_eq!(start_ns, index as u64 * interval_ns, "aligned to the phase's start");
        assert_eq!(length_ns, interval_ns.min(duration_ns - start_ns), "true length");
    }
    let mut ops_total = 0;
    let mut bytes_total = 0;
    for line in lines {
        let intervals = line["intervals"].as_array().unwrap();
        let here: Vec<(u64, u64)> = intervals
            .iter()
            .map(|interval| (u64_of(&interval["start_ns"]), u64_of(&interval["duration_ns"])))
            .collect();
        assert_eq!(here, boundaries, "every line has the same intervals");
        let direction = line["direction"].as_str().unwrap();
        let (mut ops, mut bytes) = (0, 0);
        for interval in intervals {
            ops += u64_of(&interval["ops"]);
            bytes += u64_of(&interval["bytes"]);
            let length_s = u64_of(&interval["duration_ns"]) as f64 / 1e9;
            let iops = f64_of(&interval["iops"]);
            assert!((iops * length_s - u64_of(&interval["ops"]) as f64).abs() < 1e-6);
        }
        ops_total += ops;
        bytes_total += bytes;
        // One job here, so its line is the whole direction.
        if lines.iter().filter(|other| other["direction"] == direction).count() == 1 {
            assert_eq!(ops, u64_of(&phase["directions"][direction]["ops"]), "{direction}");
        }
    }
    assert_eq!(ops_total, u64_of(&phase["ops"]), "the intervals add up to the phase");
    assert_eq!(bytes_total, u64_of(&phase["bytes"]));
    boundaries
}

// Proves the series of a steady simulated run: 3 s at 1 s gives 3 full intervals (plus the
// few microseconds in which the last operations in flight completed, marked with their true
// length), the intervals' operations add up to the phase's, and each full interval's IOPS and
// throughput are within 3 % of the phase's, with latency percentiles that are ordered and
// within the phase's range.
#[test]
fn a_steady_run_has_three_even_intervals() {
    let report = json(&sim(&["-w", STEADY], &["--format", "json"]));
    let phase = &report["runs"][0]["phases"][0];
    assert_eq!(phase["series"]["interval_ns"], 1_000_000_000u64);
    let boundaries = check_series_adds_up(phase);
    let full = boundaries.iter().filter(|&&(_, length)| length == 1_000_000_000).count();
    assert_eq!(full, 3, "{boundaries:?}");
    assert!(boundaries.len() <= 4 && boundaries[3..].iter().all(|&(_, len)| len < 1_000_000));
    let lines = phase["series"]["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(
        (lines[0]["job"].as_str(), lines[0]["direction"].as_str()),
        (Some("job"), Some("read"))
    );
    let phase_iops = f64_of(&phase["iops"]);
    let phase_rate = f64_of(&phase["throughput_bytes_per_s"]);
    let phase_max = u64_of(&phase["latency_ns"]["max"]);
    for interval in &lines[0]["intervals"].as_array().unwrap()[..3] {
        let iops = f64_of(&interval["iops"]);
        assert!((iops / phase_iops - 1.0).abs() < 0.03, "{iops} against {phase_iops}");
        let rate = f64_of(&interval["throughput_bytes_per_s"]);
        assert!((rate / phase_rate - 1.0).abs() < 0.03, "{rate} against {phase_rate}");
        let latency = &interval["latency_ns"];
        let values: Vec<u64> = ["p50", "p90", "p99", "max"].map(|key| u64_of(&latency[key])).into();
        assert!(values[0] > 0 && values.windows(2).all(|pair| pair[0] <= pair[1]), "{values:?}");
        assert!(values[3] <= phase_max);
    }
}

// Proves a rate change in the middle of a phase shows in the series at the right interval:
// with `fast` running 1 s unthrottled next to `slow` at 1000 IOPS, at 500 ms intervals
// `slow`'s line has exactly 500 operations in every full interval, `fast`'s has operations in
// the first two intervals only (its last in-flight one may complete just after 1 s), and the
// phase's total per interval drops tenfold after the first second.
#[test]
fn a_rate_change_mid_run_shows_in_the_series() {
    let dir = tempfile::tempdir().unwrap();
    let job_file = dir.path().join("two.fio");
    std::fs::write(&job_file, TWO_RATES).unwrap();
    let job_file = job_file.to_str().unwrap();
    let report = json(&sim(&[job_file], &["--format", "json", "--interval", "500ms"]));
    let phase = &report["runs"][0]["phases"][0];
    assert_eq!(phase["series"]["interval_ns"], 500_000_000u64);
    let boundaries = check_series_adds_up(phase);
    assert!(boundaries.len() >= 6, "{boundaries:?}");
    let lines = phase["series"]["lines"].as_array().unwrap();
    let line = |job: &str| -> Vec<u64> {
        let line = lines.iter().find(|line| line["job"] == job).expect(job);
        line["intervals"].as_array().unwrap().iter().map(|i| u64_of(&i["ops"])).collect()
    };
    let (fast, slow) = (line("fast"), line("slow"));
    for (index, &(_, length)) in boundaries.iter().enumerate() {
        if length == 500_000_000 {
            assert_eq!(slow[index], 500, "slow at 1000 IOPS in interval {index}: {slow:?}");
        }
    }
    assert!(fast[0] > 10_000 && fast[1] > 10_000, "{fast:?}");
    assert!(fast[2] <= 1 && fast[3..].iter().all(|&ops| ops == 0), "{fast:?}");
    let total = |index: usize| fast[index] + slow[index];
    assert!(total(1) > 10 * total(3), "{fast:?} {slow:?}");
}

// Proves the series is deterministic and only observes: the same seed gives byte-identical
// JSON, and another --interval changes the series but not one other byte of the report,
// whose table output stays the same too.
#[test]
fn series_are_reproducible_and_change_nothing_else() {
    let first = sim(&["-w", STEADY], &["--format", "json"]);
    let second = sim(&["-w", STEADY], &["--format", "json"]);
    assert_eq!(first.stdout, second.stdout, "same seed, same bytes");
    let mut coarse = json(&first);
    let mut fine = json(&sim(&["-w", STEADY], &["--format", "json", "--interval", "250ms"]));
    let fine_series = fine["runs"][0]["phases"][0]["series"].take();
    let coarse_series = coarse["runs"][0]["phases"][0]["series"].take();
    assert_eq!(fine_series["interval_ns"], 250_000_000u64);
    assert_ne!(fine_series, coarse_series);
    assert_eq!(fine, coarse, "the interval changes nothing but the series");
    let table = sim(&["-w", STEADY], &[]);
    let table_fine = sim(&["-w", STEADY], &["--interval", "250ms"]);
    assert!(table.status.success(), "{}", stderr(&table));
    assert_eq!(table.stdout, table_fine.stdout);
}

// Proves a live run records its series too, in wall time: the intervals add up to the phase
// and cover its duration.
#[test]
fn a_live_run_records_a_series() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("scratch");
    let target = target.to_str().unwrap();
    let output = elevator(&[
        "run",
        "--target",
        target,
        "--size",
        "4m",
        "-w",
        "job:rw=randrw,bs=4k,iodepth=4,numjobs=2,size=4m,io_size=1m",
        "-s",
        "none",
        "--interval",
        "10ms",
        "--format",
        "json",
    ]);
    let report = json(&output);
    let phase = &report["runs"][0]["phases"][0];
    assert_eq!(phase["series"]["interval_ns"], 10_000_000u64);
    check_series_adds_up(phase);
    let lines = phase["series"]["lines"].as_array().unwrap();
    let directions: Vec<&str> =
        lines.iter().map(|line| line["direction"].as_str().unwrap()).collect();
    assert_eq!(directions, ["read", "write"], "one job (two clones), both directions");
}

// Proves a run on the kernel's own schedulers records its series too (a loop device, as root;
// skipped saying why otherwise, failed under CI=true), per scheduler, adding up to the phase,
// and that the device is put back as found.
#[test]
fn a_kernel_run_records_a_series() {
    let Some(disk) = TestDisk::attach("a_kernel_run_records_a_series", 32 << 20) else {
        return;
    };
    let before = disk.now();
    let output = elevator(&[
        "kernel",
        &disk.state_arg(),
        "compare",
        disk.path().to_str().unwrap(),
        "-w",
        "job:rw=randread,bs=4k,iodepth=4,size=16m,io_size=4m",
        "-s",
        "none,mq-deadline",
        "--interval",
        "5ms",
        "--format",
        "json",
    ]);
    let report = json(&output);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert_eq!(run["mode"], "kernel");
        let phase = &run["phases"][0];
        assert_eq!(phase["series"]["interval_ns"], 5_000_000u64);
        check_series_adds_up(phase);
        assert_eq!(u64_of(&phase["ops"]), 1024, "4 MiB in 4 KiB reads");
    }
    assert_eq!(disk.now(), before, "the device is put back");
}

// Proves a bad --interval is refused before anything runs, with exit code 2 and the accepted
// range, on every command that takes it.
#[test]
fn a_bad_interval_exits_2_naming_the_range() {
    let commands: [&[&str]; 4] = [
        &["sim"],
        &["compare", "--only", "dd-read"],
        &["run", "--target", "/nonexistent/elevator-series"],
        &["kernel", "compare", "nonexistent-device"],
    ];
    for command in commands {
        for bad in ["0s", "999us", "3601s", "soon"] {
            let mut args = command.to_vec();
            args.extend_from_slice(&["--interval", bad]);
            let output = elevator(&args);
            assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
            assert!(stderr(&output).contains("--interval"), "{args:?}: {}", stderr(&output));
            assert!(stderr(&output).contains("accepted 1ms to 3600s"), "{}", stderr(&output));
        }
    }
}
