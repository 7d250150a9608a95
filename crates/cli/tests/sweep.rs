//! `elevator sweep` as a user runs it: a short sweep passes and prints its summary, one seed
//! replays with its configuration, and the printed `elevator sim` line runs that case.

use std::process::{Command, Output};

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

// Proves `sweep --seeds 20` runs twenty configurations, exits 0 and says so in one line, and
// that its JSON counts the same.
#[test]
fn a_short_sweep_passes_and_summarizes() {
    let output = elevator(&["sweep", "--seeds", "20", "--jobs", "2"]);
    let text = stdout(&output);
    assert!(output.status.success(), "{text}{}", String::from_utf8_lossy(&output.stderr));
    let summary = text.lines().last().unwrap();
    assert!(summary.starts_with("sweep: seeds 0..20: 20 configurations"), "{summary}");
    assert!(summary.contains("0 failed"), "{summary}");
    let output = elevator(&["sweep", "--seeds", "20", "--from", "20", "--format", "json"]);
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((json["cases"].as_u64(), json["from"].as_u64()), (Some(20), Some(20)));
    assert_eq!(json["failures"].as_array().map(Vec::len), Some(0));
}

// Proves `sweep --seed S` prints the case and an `elevator sim` command line, and that the
// command line runs the same configuration: it parses and succeeds.
#[test]
fn one_seed_replays_and_its_command_line_runs() {
    let output = elevator(&["sweep", "--seed", "5", "--format", "json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["seed"], 5);
    assert_eq!(json["determinism_checked"], true);
    assert_eq!(json["outcome"], "ok", "seed 5 runs to the end");
    let line = json["replay"].as_str().unwrap();
    let table = stdout(&elevator(&["sweep", "--seed", "5"]));
    assert!(table.contains(&format!("replay     {line}")), "{table}");
    // The specs are single-quoted without spaces inside, so splitting on spaces and dropping
    // the quotes gives the arguments a shell would.
    let args: Vec<String> = line.split(' ').skip(1).map(|arg| arg.replace('\'', "")).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(args[0], "sim");
    let output = elevator(&args);
    assert!(output.status.success(), "{line}: {}", String::from_utf8_lossy(&output.stderr));
}

/// A grid of three configurations, the second failing (an unknown device).
const GRID: &str = "seed = 4\n[[config]]\ndevice = \"ssd\"\nschedulers = [\"noop\", \"deadline\"]\n\
    workload = \"job:rw=randread,bs=4k,size=1m\"\n[[config]]\ndevice = \"nosuch\"\n[grid]\n\
    device = [\"hdd\"]\nworkload = [\"job:rw=write,bs=64k,size=2m\"]\nschedulers = [\"cfq\"]\n";

/// Runs `elevator sweep` with no Python interpreter to be found.
fn sweep_without_python(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .arg("-q")
        .arg("sweep")
        .args(args)
        .env("ELEVATOR_PYTHON", "/nonexistent/python3")
        .output()
        .expect("run elevator")
}

// Proves `elevator sweep GRID.toml` runs a grid itself (no Python anywhere): each
// configuration's rows carry what `elevator sim` reports for the same arguments, in grid order;
// the failed one is one row with sim's message, named on stderr with exit 1.
#[test]
fn a_grid_runs_without_python_and_its_rows_are_sims() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("grid.toml");
    std::fs::write(&grid, GRID).unwrap();
    let out = dir.path().join("rows.jsonl");
    let output =
        sweep_without_python(&[grid.to_str().unwrap(), "-j", "2", "-o", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("configuration 1: unknown device `nosuch`"), "{stderr}");
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let configs: Vec<u64> = rows.iter().map(|row| row["config"].as_u64().unwrap()).collect();
    assert_eq!(configs, [0, 0, 1, 2]);
    assert!(rows[2]["error"].as_str().unwrap().starts_with("unknown device `nosuch`"));
    for (row, (device, workload, scheduler)) in [&rows[0], &rows[1], &rows[3]].into_iter().zip([
        ("ssd", "job:rw=randread,bs=4k,size=1m", "noop"),
        ("ssd", "job:rw=randread,bs=4k,size=1m", "deadline"),
        ("hdd", "job:rw=write,bs=64k,size=2m", "cfq"),
    ]) {
        let sim = elevator(&[
            "sim", "-d", device, "-w", workload, "-s", scheduler, "--seed", "4", "--format", "json",
        ]);
        let report: serde_json::Value = serde_json::from_slice(&sim.stdout).unwrap();
        let phase = &report["runs"][0]["phases"][0];
        assert_eq!(row["scheduler"], scheduler);
        assert_eq!(row["error"], serde_json::Value::Null);
        assert_eq!(row["phase_bytes"], phase["bytes"]);
        assert_eq!(row["phase_latency_ns_p99"], phase["latency_ns"]["p99"]);
        assert_eq!(row["phase_iops"], phase["iops"]);
    }
}

// Proves --resume reads finished configurations back instead of running them: a value planted
// in the journal comes out in the table, the failed configuration runs again (its line is
// appended again), and a torn last line is ended so later entries stay readable.
#[test]
fn a_grid_resumes_from_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("grid.toml");
    std::fs::write(&grid, GRID).unwrap();
    let journal = dir.path().join("journal.jsonl");
    let journal_arg = journal.to_str().unwrap();
    sweep_without_python(&[grid.to_str().unwrap(), "--resume", journal_arg]);
    let text = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(text.lines().count(), 3);
    let planted = text.replacen("\"phase_bytes\": 1048576", "\"phase_bytes\": -7", 1);
    assert_ne!(planted, text, "the journal holds the first configuration's rows");
    std::fs::write(&journal, format!("{planted}{{\"key\": \"tor")).unwrap();
    let output = sweep_without_python(&[grid.to_str().unwrap(), "--resume", journal_arg]);
    assert_eq!(output.status.code(), Some(1));
    let csv = String::from_utf8(output.stdout).unwrap();
    assert_eq!(csv.matches(",-7,").count(), 1, "{csv}");
    let lines: Vec<String> =
        std::fs::read_to_string(&journal).unwrap().lines().map(str::to_owned).collect();
    // 3 entries, the torn line, and the failed configuration journaled again on a line of its
    // own.
    assert_eq!(lines.len(), 5);
    assert!(lines[4].contains("unknown device `nosuch`"), "{}", lines[4]);
}
