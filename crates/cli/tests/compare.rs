//! `elevator compare` as a user runs it: the classic study, subsets, scaling, any comparison,
//! and bad input.

use std::process::{Command, Output};

use serde_json::Value;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

const EXPERIMENTS: [&str; 10] = [
    "iozone-1",
    "iozone-10",
    "hdparm",
    "dd-read",
    "dd-write",
    "dd-copy",
    "oltp",
    "dss",
    "seqread-1",
    "seqread-2",
];

const LEGACY: [&str; 4] = ["noop", "anticipatory", "deadline", "cfq"];

/// The experiments measured against RHEL 3's 2.4 elevator (RH05's Figure 1).
const BASELINED: [&str; 2] = ["oltp", "dss"];

/// Every registered scheduler, as `list schedulers` names them in specs (versions apart).
fn registered_schedulers() -> Vec<String> {
    let output = elevator(&["list", "schedulers", "--format", "json"]);
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    json["schedulers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["spec"].as_str().unwrap().to_owned())
        .collect()
}

// Proves the whole study is reproducible from its seed, byte for byte, and that its report
// names every experiment with the four 2.6 schedulers in order — the database experiments
// with RHEL 3's elevator first, on the 2.4 kernel, stamped as the baseline — and records the
// scale.
#[test]
fn the_whole_study_is_byte_identical_for_a_seed() {
    let args = ["compare", "--scale", "0.02", "--seed", "7", "--format", "json"];
    let first = elevator(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    let second = elevator(&args);
    assert_eq!(first.stdout, second.stdout, "same seed, same bytes");
    let json: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(json["schema"], "elevator.report/1");
    assert_eq!(json["seed"], 7);
    let mut runs = json["runs"].as_array().unwrap().iter();
    for experiment in EXPERIMENTS {
        if BASELINED.contains(&experiment) {
            let baseline = runs.next().unwrap();
            assert_eq!(baseline["experiment"], experiment);
            assert_eq!(baseline["scheduler"], "elevator_linus");
            assert_eq!(baseline["config"]["host.kernel"], "2.4.21-27.EL");
            assert!(baseline["config"]["experiment.baseline"].is_string());
        }
        for legacy in LEGACY {
            let run = runs.next().unwrap();
            assert_eq!(run["experiment"], experiment);
            assert!(run["config"].get("experiment.baseline").is_none());
            // A bare name runs the host kernel's version: cfq v1 and 2.6.9's noop on a 2.6.9
            // (RHEL 4) machine, RHEL 5.5's deadline and cfq on the 2.6.18-194.11.4.el5 one.
            let kernel = run["config"]["host.kernel"].as_str().unwrap();
            let expected = match (legacy, kernel) {
                ("cfq" | "noop", kernel) if kernel.starts_with("2.6.9") => {
                    format!("{legacy}@2.6.9")
                }
                ("deadline", "2.6.18-194.11.4.el5") => "deadline@2.6.18-194.el5".to_owned(),
                ("cfq", "2.6.18-194.11.4.el5") => "cfq@2.6.18-194.8.1.el5".to_owned(),
                _ => legacy.to_owned(),
            };
            assert_eq!(run["scheduler"], expected.as_str(), "{kernel}");
            assert_eq!(run["config"]["study.scale"], "0.02");
            let machine = run["config"]["experiment.machine"].as_str();
            assert!(machine.is_some_and(|m| !m.is_empty()));
            let phases = run["phases"].as_array().unwrap();
            assert!(!phases.is_empty(), "{}", run["experiment"]);
            assert!(phases.iter().all(|phase| phase["bytes"].as_u64().unwrap() > 0));
        }
    }
    assert!(runs.next().is_none());
}

// Proves the seed reaches the randomised workloads: OLTP's random offsets differ under
// another seed, so its transaction counts or latencies do.
#[test]
fn another_seed_changes_a_random_workload() {
    let run = |seed: &str| {
        let output = elevator(&[
            "compare", "--only", "oltp", "--scale", "0.02", "-s", "deadline", "--seed", seed,
            "--format", "json",
        ]);
        assert!(output.status.success(), "{}", stderr(&output));
        let json: Value = serde_json::from_slice(&output.stdout).unwrap();
        json["runs"][0]["phases"].clone()
    };
    assert_ne!(run("1"), run("2"));
}

// Proves `--only` runs just the named experiments and that the table output has each one's
// heading with the scale, a row per scheduler and a best line per column.
#[test]
fn only_runs_a_subset_and_prints_tool_tables() {
    let output = elevator(&["compare", "--only", "dd-read,seqread-2", "--scale", "0.02"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let headings: Vec<&str> =
        text.lines().filter(|line| !line.starts_with(' ') && line.contains(" — ")).collect();
    assert_eq!(headings.len(), 2, "{text}");
    assert!(headings[0].starts_with("dd-read — ") && headings[1].starts_with("seqread-2 — "));
    assert!(headings.iter().all(|h| h.ends_with("[sizes and host RAM x0.02]")), "{headings:?}");
    for scheduler in LEGACY {
        let rows = text.lines().filter(|line| line.trim_start().starts_with(scheduler)).count();
        assert!(rows >= 2, "{scheduler} has a row in each table:\n{text}");
    }
    let dd = text.split("seqread-2 — ").next().unwrap();
    let header = dd.lines().find(|line| line.trim_start().starts_with("scheduler")).unwrap();
    for column in ["MB/s", "seconds", "user s", "sys s"] {
        assert!(header.contains(column), "{header}");
        assert!(
            dd.lines().any(|line| line.trim_start().starts_with(&format!("{column} ("))),
            "a best line for {column}:\n{dd}"
        );
    }
}

// Proves the tables state their units and name the direction of every best line: the hdparm
// table names the disks hda..hdd as the study's machine did (and says which simulated device
// each is), in hdparm's MB of 2^20 bytes; dd's CPU columns are judged per MB moved.
#[test]
fn tables_state_units_directions_and_the_study_disk_names() {
    let output = elevator(&["compare", "--only", "hdparm,dd-read", "--scale", "0.02"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let (hdparm, dd) = text.split_once("dd-read — ").unwrap();
    let header = hdparm.lines().find(|line| line.trim_start().starts_with("scheduler")).unwrap();
    for disk in ["hda -T MB/s", "hdb -t MB/s", "hdd -t MB/s"] {
        assert!(header.contains(disk), "{header}");
    }
    assert!(!header.contains("sda"), "{header}");
    assert!(hdparm.contains("units: kb_base=1024: MB = 2^20 bytes"), "{hdparm}");
    assert!(hdparm.contains("hda = sda"), "{hdparm}");
    assert!(hdparm.contains("  hda -t MB/s (higher is better): "), "{hdparm}");
    assert!(dd.contains("units: MB = 10^6 bytes"), "{dd}");
    assert!(dd.contains("  seconds (lower is better): "), "{dd}");
    assert!(dd.contains("  sys s (per MB moved, lower is better): "), "{dd}");
    assert!(dd.contains(" µs/MB"), "{dd}");
}

// Proves `--all` compares every registered scheduler.
#[test]
fn all_adds_every_registered_scheduler() {
    let output =
        elevator(&["compare", "--all", "--only", "dd-read", "--scale", "0.02", "--format", "json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let compared: Vec<String> = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["scheduler"].as_str().unwrap().to_owned())
        .collect();
    // Every registered scheduler but RHEL 3's elevator, whose 2.4 kernel runs only as the
    // database experiments' baseline.
    let expected: Vec<String> = registered_schedulers()
        .into_iter()
        .filter(|name| !name.starts_with("elevator_linus"))
        .collect();
    assert_eq!(compared, expected);
}

// Proves any comparison works the same way: a workload on a device under chosen schedulers,
// one run each, with no experiment id.
#[test]
fn any_workload_on_any_device() {
    let output = elevator(&[
        "compare",
        "-d",
        "ssd",
        "-w",
        "dd:mode=read,bs=1m,count=8",
        "-s",
        "noop,deadline:fifo_batch=4",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["scheduler"], "deadline:fifo_batch=4");
    // The bare kind is reported as the preset it stands for.
    assert!(runs.iter().all(|run| run["experiment"].is_null() && run["device"] == "sata-ssd"));
    assert!(runs.iter().all(|run| run["phases"][0]["bytes"] == 8 << 20));
}

// Proves bad input exits 2 with one message naming what is wrong and what is accepted, and
// that the help lists every experiment id `--only` accepts.
#[test]
fn bad_input_exits_2_naming_the_problem() {
    for (args, expected) in [
        (
            vec!["--only", "iozone-2"],
            "unknown experiment `iozone-2` (accepted: iozone-1, iozone-10",
        ),
        (vec!["--scale", "0"], "--scale 0 is out of range (accepted: 0 < F <= 1)"),
        (vec!["--scale", "1.5"], "--scale 1.5 is out of range"),
        (vec!["-w", "iozone:threads=0"], "threads"),
        (vec!["-w", "iozone:record=12q"], "record"),
        (vec!["-w", "dd", "--host", "host:ram=1k"], "ram"),
        (vec!["-w", "dd", "--host", "host:dirty_ratio=101"], "dirty_ratio"),
        (vec!["-w", "dd", "--only", "oltp"], "--only picks experiments of the classic study"),
        (vec!["-s", "deadline:fifo_batch=x"], "fifo_batch"),
    ] {
        let mut all = vec!["compare"];
        all.extend(&args);
        let output = elevator(&all);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        let message = stderr(&output);
        assert!(message.contains(expected), "{args:?}: {message}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    let help = stdout(&elevator(&["compare", "--help"]));
    for id in EXPERIMENTS {
        assert!(help.contains(id), "help lists {id}");
    }
}

// Proves the OLTP table says why commits took what they took: a "log sync ms" column from
// Oracle's log-file-sync counters, where anticipatory, which holds the log writer's
// synchronous write behind anticipation windows, waits longer than deadline.
#[test]
fn the_oltp_table_shows_the_log_file_sync_wait() {
    let output =
        elevator(&["compare", "--only", "oltp", "--scale", "0.02", "-s", "deadline,anticipatory"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let header = text.lines().find(|line| line.contains("tpm")).expect("the OLTP table");
    assert!(header.contains("log sync ms"), "{text}");
    let best = text.lines().find(|line| line.contains("log sync ms (lower is better)"));
    assert!(best.is_some_and(|line| line.contains("deadline")), "{text}");
}

// Proves the database tables are relative to RHEL 3 (RH05's Figure 1): `-s` picks rows, the
// baseline scheduler named there runs on the 2.4 kernel and its row is 100 %, and naming it
// for an experiment without that baseline exits 2 saying where it runs.
#[test]
fn the_database_tables_are_relative_to_rhel3() {
    let output =
        elevator(&["compare", "--only", "dss", "--scale", "0.02", "-s", "elevator_linus,deadline"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let table = stdout(&output);
    assert!(table.contains("relative % = of the RHEL 3"), "{table}");
    let linus = table.lines().find(|line| line.trim_start().starts_with("elevator_linus"));
    assert!(linus.is_some_and(|line| line.contains("100.0")), "{table}");
    assert!(table.contains("kernel 2.6.9-5.EL"), "the experiment's own kernel: {table}");
    let output =
        elevator(&["compare", "--only", "dd-read", "--scale", "0.02", "-s", "elevator_linus"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("baseline of oltp, dss"), "{}", stderr(&output));
}
