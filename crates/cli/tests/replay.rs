//! `elevator replay` and `elevator kernel compare --trace` as a user runs them: a trace
//! written by the test replayed on a simulated device (timing as recorded, scaled, as fast as
//! possible), bad traces refused, determinism, live on a scratch file, and under the kernel's
//! schedulers on a loop device (as root; skipped with the reason otherwise, failed under
//! CI=true).

#[path = "../../kernel/tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use support::TestDisk;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

const MS: u64 = 1_000_000;

/// Two processes (pids 1 and 2) alternating, an I/O every 20 ms: a recorded span of 80 ms.
const GAPS: &str = "elevator-trace 1
+0 R 0 4096 pid=1 comm=p
+20000000 R 1048576 4096 pid=2 comm=q
+20000000 W 8192 4096 pid=1 comm=p
+20000000 R 4194304 4096 pid=2 comm=q
+20000000 R 12288 4096 pid=1 comm=p
";

fn trace(dir: &Path, text: &str) -> String {
    let file = dir.join("t.trace");
    std::fs::write(&file, text).unwrap();
    path(&file).to_owned()
}

/// Replays `trace` on a simulated ssd under noop with `extra` arguments; the JSON report.
fn replay_json(trace: &str, extra: &[&str]) -> Value {
    let mut args = vec!["replay", trace, "-d", "ssd", "-s", "noop", "--format", "json"];
    args.extend_from_slice(extra);
    let output = elevator(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

// Proves `elevator replay` runs the simulator with the trace's processes as issuers (named
// COMM/PID, each with its own I/O count), and that timed replay holds the recorded gaps in
// simulated time: the phase lasts the recorded 80 ms plus at most one I/O's service on the
// ssd (tolerance 5 ms, far above a 4 KiB ssd access and far below a 20 ms gap), and the drift
// counters say 0 (in the simulator only a process's own blocking delays it, and depth 32
// never blocks here). --speed 2 halves the span; --afap ignores the gaps.
#[test]
fn replay_holds_scales_and_ignores_the_recorded_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path(), GAPS);
    let tolerance_ns = 5 * MS;
    let timed = replay_json(&trace, &[]);
    let run = &timed["runs"][0];
    assert_eq!(run["mode"], "sim");
    assert_eq!(run["workload"], format!("trace:{trace}"));
    let phase = &run["phases"][0];
    let issuers: Vec<(&str, u64)> = phase["issuers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|issuer| (issuer["name"].as_str().unwrap(), issuer["ops"].as_u64().unwrap()))
        .collect();
    assert_eq!(issuers, [("p/1", 3), ("q/2", 2)]);
    let span = |json: &Value| json["runs"][0]["phases"][0]["duration_ns"].as_u64().unwrap();
    let counter =
        |json: &Value, name: &str| json["runs"][0]["phases"][0]["counters"][name].as_u64().unwrap();
    assert!((80 * MS..80 * MS + tolerance_ns).contains(&span(&timed)), "{}", span(&timed));
    assert_eq!(counter(&timed, "replay_ios"), 5);
    assert!(counter(&timed, "replay_drift_max_ns") <= tolerance_ns);
    assert_eq!(counter(&timed, "replay_ios_late"), 0);
    let fast = replay_json(&trace, &["--speed", "2"]);
    assert!((40 * MS..40 * MS + tolerance_ns).contains(&span(&fast)), "{}", span(&fast));
    assert!(counter(&fast, "replay_drift_max_ns") <= tolerance_ns);
    let afap = replay_json(&trace, &["--afap"]);
    assert!(span(&afap) < 20 * MS, "afap waited for a gap: {}", span(&afap));
    assert_eq!(counter(&afap, "replay_ios"), 5);
}

// Proves the same replay twice gives byte-identical JSON, and that `replay` is exactly
// `sim -w trace:TRACE` (byte-identical too).
#[test]
fn replay_is_deterministic_and_is_sim_with_a_trace_workload() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path(), GAPS);
    let args = ["replay", trace.as_str(), "-s", "cfq,deadline", "--format", "json"];
    let first = elevator(&args);
    let second = elevator(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(first.stdout, second.stdout);
    let workload = format!("trace:{trace}");
    let sim =
        elevator(&["sim", "-w", &workload, "-s", "cfq", "-s", "deadline", "--format", "json"]);
    assert!(sim.status.success(), "{}", stderr(&sim));
    assert_eq!(first.stdout, sim.stdout);
}

// Proves bad traces exit 2 naming the file and the record (past the device's end; not in
// sectors), or the file and line (a line the reader refuses), and that a file in no trace
// format lists the formats accepted.
#[test]
fn bad_traces_exit_2_naming_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("elevator-trace 1\n+0 R 0 4096\n+10 R 1099511627776000 4096\n", "record 2 (read of 4096"),
        ("elevator-trace 1\n+0 W 0 4096\n+10 W 4096 1000\n", "record 2 (write of 1000 bytes"),
        ("elevator-trace 1\n+0 R 0 4096\n+10 R zero 4096\n", "t.trace:3"),
        ("hello\n", "accepted: iolog2"),
    ];
    for (text, expected) in cases {
        let trace = trace(dir.path(), text);
        let output = elevator(&["replay", &trace, "-s", "noop"]);
        assert_eq!(output.status.code(), Some(2), "{text}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{text}: {}", stderr(&output));
        assert!(stderr(&output).contains("t.trace"), "{text}: {}", stderr(&output));
    }
}

// Proves a live replay on a scratch regular file: the file is created as large as the trace
// reaches, every I/O of each process is done (bytes and counts per process), and the drift
// counters are reported consistently (the mean is the total over the count, at most the max).
#[test]
fn a_live_replay_on_a_scratch_file() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(
        dir.path(),
        "elevator-trace 1
+0 W 0 4096 pid=10 comm=w
+2000000 R 65536 8192 pid=11 comm=r
+2000000 W 4096 4096 pid=10 comm=w
+2000000 R 131072 8192 pid=11 comm=r
",
    );
    let target = dir.path().join("scratch");
    let output = elevator(&[
        "replay",
        &trace,
        "--live",
        path(&target),
        "-s",
        "deadline",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 1 << 20, "one MiB covers the trace");
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let phase = &json["runs"][0]["phases"][0];
    assert_eq!(json["runs"][0]["mode"], "live");
    assert_eq!(phase["bytes"], 2 * 4096 + 2 * 8192);
    let issuers: Vec<(&str, u64)> = phase["issuers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|issuer| (issuer["name"].as_str().unwrap(), issuer["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(issuers, [("w/10", 8192), ("r/11", 16384)]);
    let counter = |name: &str| phase["counters"][name].as_u64().unwrap();
    assert_eq!(counter("replay_ios"), 4);
    assert_eq!(counter("replay_drift_mean_ns"), counter("replay_drift_total_ns") / 4);
    assert!(counter("replay_drift_mean_ns") <= counter("replay_drift_max_ns"));
}

// Proves `elevator kernel compare DEV --trace T` replays the trace under the kernel's own
// schedulers on a loop device: each run does the trace's bytes with its processes as
// issuers and consistent drift counters, and `--trace` beside `-w` is refused (exit 2).
#[test]
fn kernel_compare_replays_a_trace() {
    let Some(disk) = TestDisk::attach("kernel_compare_replays_a_trace", 16 << 20) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path(), GAPS);
    let output = elevator(&[
        "kernel",
        &disk.state_arg(),
        "compare",
        disk.path().to_str().unwrap(),
        "--trace",
        &trace,
        "-s",
        "none,mq-deadline",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert_eq!(run["mode"], "kernel");
        let phase = &run["phases"][0];
        assert_eq!(phase["bytes"], 5 * 4096);
        assert_eq!(phase["issuers"].as_array().unwrap().len(), 2);
        assert_eq!(phase["counters"]["replay_ios"], 5);
        // The kernel driver reads each issuer's counters as it finishes: the sums still give
        // the mean (reported by the last to finish) and a maximum at least the mean.
        let counter = |name: &str| phase["counters"][name].as_u64().unwrap();
        assert_eq!(counter("replay_drift_mean_ns"), counter("replay_drift_total_ns") / 5);
        assert!(counter("replay_drift_mean_ns") <= counter("replay_drift_max_ns"));
    }
    let both = elevator(&[
        "kernel",
        &disk.state_arg(),
        "compare",
        disk.path().to_str().unwrap(),
        "--trace",
        &trace,
        "-w",
        "job",
    ]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
}
