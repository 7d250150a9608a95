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
