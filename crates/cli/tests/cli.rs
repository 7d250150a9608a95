//! The `elevator` binary as a user runs it: output on stdout, errors on stderr, exit codes.

use std::process::{Command, Output};

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

// Proves `list schedulers` prints the sysfs-style line with the default in brackets and every
// tunable with value, unit, default, range and help.
#[test]
fn list_schedulers_prints_the_sysfs_line_and_tunables() {
    let output = elevator(&["list", "schedulers"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(
        text.lines().next(),
        Some("schedulers: noop anticipatory deadline [cfq] none mq-deadline bfq")
    );
    let (_, deadline) = text.split_once("\ndeadline — ").unwrap();
    let read_expire = deadline.lines().find(|line| line.contains("read_expire")).unwrap();
    for field in ["500", "ms", "0..=2147483647", "deadline of a read"] {
        assert!(read_expire.contains(field), "{read_expire:?} lacks {field}");
    }
    assert!(text.contains("noop — Linux 2.6.18"));
    assert!(text.contains("anticipatory (alias as) — Linux 2.6.18"));
    assert!(text.contains("bfq — Linux 6.12"));
    let antic_expire = text.lines().find(|line| line.contains("antic_expire")).unwrap();
    assert_eq!(antic_expire.split_whitespace().nth(1), Some("6"), "{antic_expire:?}");
    assert!(text.contains("no tunables"));
    assert!(stderr(&output).is_empty());
}

// Proves the JSON form carries the same tables.
#[test]
fn list_schedulers_as_json() {
    let output = elevator(&["list", "schedulers", "--format", "json"]);
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["scheduler_line"], "noop anticipatory deadline [cfq] none mq-deadline bfq");
    let deadline = json["schedulers"].as_array().unwrap().iter().find(|s| s["name"] == "deadline");
    let deadline = deadline.unwrap();
    assert_eq!(deadline["default"], false);
    let cfq = json["schedulers"].as_array().unwrap().iter().find(|s| s["name"] == "cfq");
    assert_eq!(cfq.unwrap()["default"], true, "2.6.18's CONFIG_DEFAULT_IOSCHED");
    let fifo_batch =
        deadline["tunables"].as_array().unwrap().iter().find(|t| t["name"] == "fifo_batch");
    let fifo_batch = fifo_batch.unwrap();
    assert_eq!(fifo_batch["default"], 16);
    assert_eq!(fifo_batch["unit"], "requests");
    assert_eq!(fifo_batch["max"], 2_147_483_647);
}

// Proves a spec resolves: the set tunable shows its value, the others their defaults.
#[test]
fn a_spec_lists_resolved() {
    let output = elevator(&["list", "schedulers", "deadline:fifo_batch=8,read_expire=1s"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("deadline:fifo_batch=8,read_expire=1000"));
    let fifo_batch = text.lines().find(|line| line.trim_start().starts_with("fifo_batch")).unwrap();
    assert!(fifo_batch.split_whitespace().nth(1) == Some("8"), "{fifo_batch}");
}

// Proves bad input exits 2 with one line naming the bad token and what is accepted.
#[test]
fn bad_specs_exit_2_naming_the_token() {
    for (spec, expected) in [
        (
            "cfqq",
            "unknown scheduler `cfqq` (accepted: noop, anticipatory, as, deadline, cfq, none, \
             mq-deadline, bfq)",
        ),
        ("deadline:read_expiry=1", "deadline has no tunable `read_expiry` (accepted: read_expire"),
        ("deadline:fifo_batch=-1", "fifo_batch: -1 is out of range (accepted: 0..=2147483647"),
        ("deadline:read_expire=5fortnights", "`5fortnights` is not a time"),
        ("deadline:fifo_batch", "`fifo_batch` has no `=value`"),
    ] {
        let output = elevator(&["list", "schedulers", spec]);
        assert_eq!(output.status.code(), Some(2), "{spec}");
        let message = stderr(&output);
        assert_eq!(message.lines().count(), 1, "{message}");
        assert!(message.contains(expected), "{spec}: {message}");
        assert!(output.stdout.is_empty());
    }
}

// Proves usage errors (unknown subcommand or list target) exit 2, and --version / --help work.
#[test]
fn usage_errors_and_meta_flags() {
    let output = elevator(&["list", "frobs"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("possible values: schedulers"));
    assert_eq!(elevator(&["frob"]).status.code(), Some(2));
    let version = elevator(&["--version"]);
    assert!(version.status.success());
    assert_eq!(stdout(&version).trim(), format!("elevator {}", env!("CARGO_PKG_VERSION")));
    let help = elevator(&["--help"]);
    assert!(help.status.success());
    assert!(stdout(&help).contains("list"));
}

// Proves `sim` puts every scheduler side by side, and the same seed gives byte-identical JSON.
#[test]
fn sim_is_deterministic_and_side_by_side() {
    let args = ["sim", "-d", "ram", "-w", "job:rw=randrw,iodepth=4,size=1m", "--format", "json"];
    let first = elevator(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    let second = elevator(&args);
    assert_eq!(first.stdout, second.stdout);
    let json: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(json["schema"], "elevator.report/1");
    let schedulers: Vec<&str> =
        json["runs"].as_array().unwrap().iter().map(|r| r["scheduler"].as_str().unwrap()).collect();
    // Every registered scheduler, in registry order.
    let listing = elevator(&["list", "schedulers", "--format", "json"]);
    let listing: serde_json::Value = serde_json::from_slice(&listing.stdout).unwrap();
    let registered: Vec<&str> = listing["schedulers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(schedulers, registered);
    assert!(registered.len() >= 2);
    assert_eq!(json["runs"][0]["mode"], "sim");
    assert_eq!(json["runs"][0]["phases"][0]["latency_method"]["kind"], "exact-nearest-rank");
}

// Proves -o writes the report to a file in the format its extension names, leaving stdout
// empty.
#[test]
fn sim_writes_to_a_file() {
    let dir = std::env::temp_dir().join(format!("elevator-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("report.csv");
    let output = elevator(&[
        "sim",
        "-d",
        "ram",
        "-w",
        "job:size=64k",
        "-s",
        "deadline:fifo_batch=4",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    let csv = std::fs::read_to_string(&path).unwrap();
    assert!(csv.starts_with("experiment,mode,device,workload,scheduler,phase"));
    assert!(csv.contains("deadline:fifo_batch=4"));
    std::fs::remove_dir_all(&dir).unwrap();
}

// Proves bad devices, workloads and keys exit 2 naming the key and the accepted values.
#[test]
fn sim_bad_input_exits_2() {
    for (args, expected) in [
        (vec!["sim", "-d", "floppy"], "unknown device `floppy`"),
        (vec!["sim", "-d", "ram:depth=0"], "depth=0 is not valid (expected an integer 1..=65536)"),
        (vec!["sim", "-w", "job:iodepth=0"], "iodepth=0 is not valid"),
        (vec!["sim", "-w", "job:rwmixread=101"], "rwmixread=101 is not valid"),
        (vec!["sim", "-d", "ram:capacity=1m", "-w", "job:bs=2m"], "bs"),
        (vec!["sim", "-s", "cfqq"], "unknown scheduler `cfqq`"),
    ] {
        let output = elevator(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{args:?}: {}", stderr(&output));
        assert!(output.stdout.is_empty());
    }
}

// Proves `list devices` and `list workloads` print every key with its default and what it
// accepts, and presets with their values.
#[test]
fn list_devices_and_workloads() {
    let output = elevator(&["list", "devices"]);
    assert!(output.status.success());
    let text = stdout(&output);
    assert!(text.contains("ram — RAM disk"));
    let latency = text.lines().find(|line| line.trim_start().starts_with("latency")).unwrap();
    assert!(latency.contains("1us") && latency.contains("a time"), "{latency}");
    let output = elevator(&["list", "workloads", "job:rw=randread"]);
    let text = stdout(&output);
    let rw = text.lines().find(|line| line.trim_start().starts_with("rw ")).unwrap();
    assert!(rw.contains("randread") && rw.contains("one of read, write"), "{rw}");
    let everything = elevator(&["list", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&everything.stdout).unwrap();
    assert!(
        json["devices"].is_array() && json["workloads"].is_array() && json["schedulers"].is_array()
    );
}
