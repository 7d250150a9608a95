//! `elevator advise` as a user runs it: on simulated devices (consistency with `elevator
//! compare`, every goal, bad input) and, as root, `--apply` on a loop device the test creates
//! and removes, undone by `elevator kernel restore`.

#[path = "../../kernel/tests/support/mod.rs"]
mod support;

use std::process::{Command, Output};

use serde_json::Value;
use support::TestDisk;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn json(output: &Output) -> Value {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

/// A mixed read/write load on a disk: two processes each reading and writing its own
/// region sequentially, 100 GiB apart (seeks between them are what schedulers differ on).
const MIXED: &str = "job:rw=rw,bs=64k,numjobs=2,size=32m,offset_increment=100g";

/// A run's bytes over its time, every phase: advise's throughput figure, recomputed here
/// from a plain report.
fn throughput(run: &Value) -> f64 {
    let phases = run["phases"].as_array().unwrap();
    let bytes: f64 = phases.iter().map(|p| p["bytes"].as_f64().unwrap()).sum();
    let ns: f64 = phases.iter().map(|p| p["duration_ns"].as_f64().unwrap()).sum();
    bytes * 1e9 / ns
}

// Proves consistency with `compare`: the winner and runner-up advise reports for a mixed
// read/write load on the simulated HDD, run through `elevator compare` with the same device,
// workload and seed, give the same throughput figures, so the winner's reported advantage
// (and its margin) is reproduced; the winner is not a fixed answer.
#[test]
fn advise_on_hdd_is_reproduced_by_compare() {
    let advice = json(&elevator(&["advise", "hdd", "-w", MIXED, "--format", "json"]));
    assert_eq!(advice["schema"], "elevator.advice/1");
    let ranking = advice["ranking"].as_array().unwrap();
    let (winner, runner_up) = (&ranking[0], &ranking[1]);
    let names = [winner["scheduler"].as_str().unwrap(), runner_up["scheduler"].as_str().unwrap()];
    let report = json(&elevator(&[
        "compare", "-d", "hdd", "-w", MIXED, "-s", names[0], "-s", names[1], "--format", "json",
    ]));
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let measured = [throughput(&runs[0]), throughput(&runs[1])];
    for (index, ranked) in [winner, runner_up].iter().enumerate() {
        let reported = ranked["score"].as_f64().unwrap();
        assert!(
            (reported - measured[index]).abs() <= reported * 1e-12,
            "{}: advise says {reported}, compare gives {}",
            names[index],
            measured[index]
        );
    }
    assert!(measured[0] >= measured[1], "compare does not confirm {} over {}", names[0], names[1]);
    let margin = advice["confidence"]["margin_percent"].as_f64().unwrap();
    let recomputed = (measured[0] - measured[1]) / measured[1] * 100.0;
    assert!((margin - recomputed).abs() < 1e-6, "margin {margin} vs {recomputed}");
    let level = advice["confidence"]["level"].as_str().unwrap();
    let error = advice["confidence"]["sim_error_percent"].as_f64().unwrap();
    assert_eq!(level, if margin > error { "high" } else { "low" });
}

// Proves every goal runs and ranks: each ranks all 9 candidates of the 2.6 set (the HDD's
// era) with ranks 1..=9, scores ordered in the goal's direction, each explanation counter
// differing between winner and runner-up, and the responsiveness goal measures a start-up
// time for every candidate.
#[test]
fn every_goal_runs_and_ranks() {
    for goal in ["throughput", "latency", "fairness", "responsiveness"] {
        let advice = json(&elevator(&[
            "advise", "-d", "hdd", "-w", MIXED, "--goal", goal, "--format", "json",
        ]));
        assert_eq!(advice["goal"], goal);
        let ranking = advice["ranking"].as_array().unwrap();
        assert_eq!(ranking.len(), 9, "{goal}");
        let scores: Vec<f64> = ranking.iter().map(|r| r["score"].as_f64().unwrap()).collect();
        let higher = matches!(goal, "throughput" | "fairness");
        for (index, pair) in scores.windows(2).enumerate() {
            assert!(
                if higher { pair[0] >= pair[1] } else { pair[0] <= pair[1] },
                "{goal}: {scores:?}"
            );
            assert_eq!(ranking[index]["rank"], index + 1);
        }
        for mechanism in advice["explanation"].as_array().unwrap() {
            assert_ne!(mechanism["winner"], mechanism["runner_up"], "{goal}: {mechanism}");
        }
        if goal == "responsiveness" {
            for ranked in ranking {
                let startup = ranked["figures"]["startup_ns"].as_u64().unwrap();
                assert!(startup > 0, "{goal}: {ranked}");
            }
        }
    }
}

// Proves bad input exits 2 with a message naming the problem and what is accepted: an
// unknown goal, an unknown workload, a start-up test on a workload that cannot take one, and
// a TARGET that is neither a device nor a preset.
#[test]
fn bad_goal_or_workload_exits_2_with_a_clear_message() {
    let cases: [(&[&str], &str); 4] = [
        (&["advise", "hdd", "-w", MIXED, "--goal", "speed"], "accepted: throughput, latency"),
        (&["advise", "hdd", "-w", "nosuch:x=1"], "nosuch"),
        (
            &["advise", "hdd", "-w", "dd:mode=read,bs=1m,count=4", "--goal", "responsiveness"],
            "responsiveness",
        ),
        (
            &["advise", "no-such-disk", "-w", MIXED],
            "neither a block device here nor a device preset",
        ),
    ];
    for (args, expected) in cases {
        let output = elevator(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

// Proves `advise --apply` on a real (loop) device switches it to the winner, writes the udev
// rule for it into the given rules directory, and that `elevator kernel restore` puts the
// scheduler back as found and removes the rule.
#[test]
fn apply_on_a_loop_device_is_undone_by_kernel_restore() {
    let Some(disk) =
        TestDisk::attach("apply_on_a_loop_device_is_undone_by_kernel_restore", 64 << 20)
    else {
        return;
    };
    let name = disk.name();
    let rules = tempfile::tempdir().unwrap();
    let rules_arg = format!("--rules-dir={}", rules.path().display());
    let state = disk.state_arg();
    let found = std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler")).unwrap();
    let advice = json(&elevator(&[
        "advise",
        &name,
        "-w",
        "job:rw=randread,bs=4k,numjobs=2,size=4m",
        "--apply",
        &rules_arg,
        "--no-reload",
        &state,
        "--format",
        "json",
    ]));
    let winner = advice["ranking"][0]["scheduler"].as_str().unwrap().to_owned();
    let scheduler = winner.split(':').next().unwrap();
    let now = std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler")).unwrap();
    assert!(now.contains(&format!("[{scheduler}]")), "{winner}: {now}");
    let rule = rules.path().join(format!("99-elevator-{name}.rules"));
    let text = std::fs::read_to_string(&rule).expect("the udev rule");
    assert!(text.contains(&format!("ATTR{{queue/scheduler}}=\"{scheduler}\"")), "{text}");
    let restore = elevator(&["kernel", &state, "restore", &name]);
    assert!(restore.status.success(), "{}", String::from_utf8_lossy(&restore.stderr));
    let after = std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler")).unwrap();
    assert_eq!(after, found);
    assert!(!rule.exists(), "the rule is still there after restore");
}

// Proves a captured trace works as the workload, given as `trace:PATH` or as a bare path:
// both rank every candidate, identically (the same trace replayed under the same seed).
#[test]
fn a_trace_is_a_workload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.trace");
    let mut text = String::from("elevator-trace 1\n");
    for index in 0..40_u64 {
        let pid = 1 + index % 2;
        let offset = if pid == 1 { index * 65_536 } else { (1 << 34) + index * 65_536 };
        let op = if index % 3 == 0 { "W" } else { "R" };
        text.push_str(&format!("+1000000 {op} {offset} 65536 pid={pid} comm=p{pid}\n"));
    }
    std::fs::write(&path, text).unwrap();
    let bare = path.to_str().unwrap().to_owned();
    let prefixed = format!("trace:{bare}");
    let ranking = |workload: &str| {
        let advice = json(&elevator(&[
            "advise", "hdd", "-w", workload, "--goal", "fairness", "--format", "json",
        ]));
        let rows = advice["ranking"].as_array().unwrap().clone();
        assert_eq!(rows.len(), 9, "{workload}");
        rows.iter().map(|r| (r["scheduler"].clone(), r["score"].clone())).collect::<Vec<_>>()
    };
    assert_eq!(ranking(&bare), ranking(&prefixed));
}

// Proves `--live` on a loop device: the candidates are what the device's kernel offers, the
// top 3 run under the kernel's schedulers (each with a live figure beside its simulated one),
// and the device is left as it was found (scheduler, tunables, queue attributes).
#[test]
fn live_confirms_the_top_three_and_restores_the_device() {
    let Some(disk) =
        TestDisk::attach("live_confirms_the_top_three_and_restores_the_device", 64 << 20)
    else {
        return;
    };
    let name = disk.name();
    let state = disk.state_arg();
    let line = std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler")).unwrap();
    let offered: Vec<&str> =
        line.split_whitespace().map(|w| w.trim_matches(|c| c == '[' || c == ']')).collect();
    let advice = json(&elevator(&[
        "advise",
        &name,
        "-w",
        "job:rw=randread,bs=4k,numjobs=2,size=2m",
        "--live",
        &state,
        "--format",
        "json",
    ]));
    assert_eq!(advice["target"], "kernel");
    for ranked in advice["ranking"].as_array().unwrap() {
        let scheduler = ranked["scheduler"].as_str().unwrap().split(':').next().unwrap();
        assert!(offered.contains(&scheduler), "{scheduler} is not offered by {name}: {line}");
    }
    let live = advice["live"].as_array().unwrap();
    assert_eq!(live.len(), 3);
    for (row, ranked) in live.iter().zip(advice["ranking"].as_array().unwrap()) {
        assert_eq!(row["scheduler"], ranked["scheduler"]);
        assert!(row["live"].as_f64().unwrap() > 0.0, "{row}");
    }
    assert_eq!(&disk.now(), disk.found(), "the device is not as found");
}

// Proves `kernel restore --discard` after `advise --apply` keeps the choice: the scheduler
// stays the winner and the udev rule stays installed, and a later `advise --apply` is no
// longer refused for the old snapshot.
#[test]
fn restore_discard_keeps_the_applied_choice_and_its_rule() {
    let Some(disk) =
        TestDisk::attach("restore_discard_keeps_the_applied_choice_and_its_rule", 64 << 20)
    else {
        return;
    };
    let name = disk.name();
    let rules = tempfile::tempdir().unwrap();
    let rules_arg = format!("--rules-dir={}", rules.path().display());
    let state = disk.state_arg();
    let args = [
        "advise",
        &name,
        "-w",
        "job:rw=randread,bs=4k,size=2m",
        "--apply",
        &rules_arg,
        "--no-reload",
        &state,
        "--format",
        "json",
    ];
    let advice = json(&elevator(&args));
    let scheduler = advice["ranking"][0]["scheduler"].as_str().unwrap().split(':').next().unwrap();
    let again = elevator(&args);
    assert_eq!(again.status.code(), Some(2), "a second --apply over the kept snapshot");
    assert!(String::from_utf8_lossy(&again.stderr).contains("restore"));
    let discard = elevator(&["kernel", &state, "restore", &name, "--discard"]);
    assert!(discard.status.success(), "{}", String::from_utf8_lossy(&discard.stderr));
    let now = std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler")).unwrap();
    assert!(now.contains(&format!("[{scheduler}]")), "{now}");
    assert!(rules.path().join(format!("99-elevator-{name}.rules")).exists());
    json(&elevator(&args));
    let restore = elevator(&["kernel", &state, "restore", &name]);
    assert!(restore.status.success(), "{}", String::from_utf8_lossy(&restore.stderr));
}

// Proves advice on a calibrated model is judged against the model's own stated error: the
// same table preset, once with `[measured] error_percent = 1000` (as `elevator calibrate`
// writes it) and once without, gives the same ranking and margin, but the first reports the
// model's error and calls the confidence low (no margin beats 1000 %), while the second has no
// model error and is judged against the simulator's validated error alone.
#[test]
fn a_calibrated_models_stated_error_bounds_the_confidence() {
    let dir = std::env::temp_dir().join(format!("elevator-advise-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keys = "kind = \"table\"\nrotational = false\ncapacity = \"268435456\"\ndepth = 32\n\
                read_seq_lat = \"4k:31us/1m:229us\"\nread_rand_lat = \"4k:33us/1m:228us\"\n\
                read_iops = \"1:30000/4:86000/16:240000/32:294000\"\n";
    let measured = dir.join("measured.toml");
    std::fs::write(&measured, format!("{keys}\n[measured]\nerror_percent = 1000.0\n")).unwrap();
    let bare = dir.join("bare.toml");
    std::fs::write(&bare, keys).unwrap();
    let workload = "job:rw=randread,bs=4k,iodepth=8,numjobs=2,size=8m";
    let advise = |file: &std::path::Path| {
        json(&elevator(&["advise", file.to_str().unwrap(), "-w", workload, "--format", "json"]))
    };
    let (with, without) = (advise(&measured), advise(&bare));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(with["ranking"], without["ranking"]);
    assert_eq!(with["confidence"]["model_error_percent"], 1000.0);
    assert_eq!(with["confidence"]["level"], "low");
    assert!(without["confidence"].get("model_error_percent").is_none());
    assert_eq!(with["confidence"]["margin_percent"], without["confidence"]["margin_percent"]);
}

// Proves `--live --goal responsiveness` runs the start-up burst live: on a loop device, under
// sequential readers, each of the top 3 candidates gets the burst's completion time measured
// under the kernel's scheduler (a finite time beside its simulated one: the burst's job ran
// and completed), the job file it ran from is gone afterwards, and the device is as found.
#[test]
fn live_responsiveness_times_the_burst_under_the_kernels_schedulers() {
    let Some(disk) = TestDisk::attach(
        "live_responsiveness_times_the_burst_under_the_kernels_schedulers",
        64 << 20,
    ) else {
        return;
    };
    let name = disk.name();
    let state = disk.state_arg();
    let advice = json(&elevator(&[
        "advise",
        &name,
        "-w",
        "job:rw=read,bs=64k,numjobs=2,time_based=1,runtime=1s",
        "--goal",
        "responsiveness",
        "--live",
        &state,
        "--format",
        "json",
    ]));
    assert_eq!(advice["goal"], "responsiveness");
    let live = advice["live"].as_array().expect("live rows");
    assert_eq!(live.len(), 3);
    for (row, ranked) in live.iter().zip(advice["ranking"].as_array().unwrap()) {
        assert_eq!(row["scheduler"], ranked["scheduler"]);
        let seconds = row["live"].as_f64().unwrap_or_else(|| panic!("no live start-up: {row}"));
        assert!(seconds > 0.0, "{row}");
        assert!(row["simulated"].as_f64().is_some_and(|s| s > 0.0), "{row}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| {
            entry.file_name().to_string_lossy().starts_with(&format!("elevator-advise-{name}-"))
        })
        .collect();
    assert!(leftovers.is_empty(), "job files left: {leftovers:?}");
    assert_eq!(&disk.now(), disk.found(), "the device is not as found");
}
