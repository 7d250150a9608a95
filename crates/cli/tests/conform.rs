//! `elevator conform` as a user runs it: on a loop device the test creates (put back as found
//! and removed) and on the command's own scratch loop device; as root, and as an unprivileged
//! user to see it refuse. Under CI=true a missing privilege or tool fails the tests.

// A skipped test must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr)]

#[path = "../../kernel/tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Output};

use elevator_kernel::conform::sched_log;
use support::TestDisk;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// fio's io_uring engine, 4 KiB random reads and writes, 32 in flight, for one second: two
/// processes, the second at best-effort level 7 (`ionice -c2 -n7`), so the share replay has
/// two weights to share between.
const JOB_FILE: &str = "\
[global]
ioengine=io_uring
direct=1
bs=4k
rw=randrw
iodepth=32
runtime=1s
time_based=1

[randrw]

[randrw-be7]
prioclass=2
prio=7
";

// Proves a run on a named device writes one capture per scheduler, named after it, that the
// reader reads back with the asked tunables read back in its header and nothing lost; that
// stdout has each scheduler's counts; that each capture is replayed into ours (its report on
// stdout, its JSON beside the capture, every issue through the scheduler one decision); and
// that the device's queue is as it was found; and that each capture's share replay is
// complete (its JSON beside the capture, every process of the capture in it with its share,
// the kernel's shares summing to 1, its text on stdout). The agreement and the shares of a
// live run are printed, not asserted: they depend on how the kernel's CPUs raced
// (docs/validation.md).
#[test]
fn conform_on_a_named_device_captures_replays_and_restores_the_queue() {
    let Some(disk) = TestDisk::attach("conform_on_a_named_device", 64 << 20) else { return };
    let before = disk.now();
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("randrw.fio");
    std::fs::write(&job, JOB_FILE).unwrap();
    let out = dir.path().join("out");
    let output = elevator(&[
        "conform",
        disk.path().to_str().unwrap(),
        "-s",
        "mq-deadline:fifo_batch=8,kyber,bfq",
        "-w",
        job.to_str().unwrap(),
        "--runtime",
        "1s",
        "-o",
        out.to_str().unwrap(),
        &disk.state_arg(),
    ]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}\n{stdout}", text(&output.stderr));
    let counts: Vec<&str> = stdout.lines().filter(|line| line.contains(" lost -> ")).collect();
    assert_eq!(counts.len(), 3, "{stdout}");
    assert!(counts[0].starts_with("mq-deadline:fifo_batch=8: "), "{stdout}");
    assert!(counts[1].starts_with("kyber: "), "{stdout}");
    assert!(counts[2].starts_with("bfq: "), "{stdout}");
    for line in &counts {
        assert!(line.contains(" 0 lost -> "), "{line}");
    }
    let deadline = sched_log::read(&out.join("conform-mq-deadline.sched")).unwrap();
    assert_eq!(deadline.header.scheduler, "mq-deadline");
    assert!(deadline.header.tunables.contains(&("fifo_batch".into(), "8".into())));
    assert_eq!(deadline.header.lost_events, 0);
    assert_eq!(deadline.header.workload, job.to_str().unwrap());
    let issues = counts[0].split(", ").find(|part| part.ends_with(" issues")).unwrap();
    let counted: usize = issues.trim_end_matches(" issues").parse().unwrap();
    let in_file = deadline
        .events
        .iter()
        .filter(|event| {
            matches!(event, sched_log::SchedEvent::Block(record)
                if record.point == sched_log::BlockPoint::Issue)
        })
        .count();
    assert_eq!(counted, in_file, "stdout's count is the file's");
    for (name, capture_issues) in [("mq-deadline", Some(in_file)), ("kyber", None), ("bfq", None)] {
        let capture = sched_log::read(&out.join(format!("conform-{name}.sched"))).unwrap();
        assert_eq!(capture.header.scheduler, name);
        let json = std::fs::read_to_string(out.join(format!("conform-{name}.json"))).unwrap();
        let report: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(report["scheduler"], name);
        let decisions = report["decisions"].as_u64().unwrap();
        let identical = report["identical"].as_u64().unwrap();
        let excluded = report["excluded_issues"].as_u64().unwrap();
        assert!(decisions > 100, "{name}: a second of randrw makes hundreds of decisions");
        assert!(identical <= decisions);
        if let Some(issues) = capture_issues {
            // Every issue is one decision or one excluded issue (flushes, cache drops).
            assert_eq!(decisions + excluded, issues as u64, "{name}");
        }
        let summary = format!("decisions {decisions}: identical {identical} (");
        assert!(stdout.contains(&summary), "{name}: stdout has the report\n{stdout}");
        eprintln!("{name}: {identical} of {decisions} decisions identical to the kernel's");
        let json = std::fs::read_to_string(out.join(format!("conform-{name}.share.json")))
            .unwrap_or_else(|error| panic!("{name}: the share report beside the capture: {error}"));
        let share: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(share["scheduler"], name);
        let processes = share["processes"].as_array().unwrap();
        assert!(processes.len() >= 2, "{name}: both jobs' threads are processes\n{json}");
        let kernel_total: f64 = processes.iter().map(|p| p["kernel_share"].as_f64().unwrap()).sum();
        assert!((kernel_total - 1.0).abs() < 1e-9, "{name}: the kernel's shares sum to 1\n{json}");
        assert!(
            stdout.contains(&format!("share of service ({name} closed-loop")),
            "{name}: stdout has the shares\n{stdout}"
        );
        for process in processes {
            eprintln!(
                "{name}: share of pid {} ({}): kernel {:.2} %, ours {:.2} %",
                process["pid"],
                process["priority"].as_str().unwrap_or("?"),
                process["kernel_share"].as_f64().unwrap() * 100.0,
                process["ours_share"].as_f64().unwrap() * 100.0
            );
        }
    }
    assert_eq!(disk.now(), before, "left as found");
}

// Proves `--replay` replays a saved capture without a device: the text and the JSON report
// agree on the figures (the JSON carrying each process's share of service too, the kernel's
// shares summing to one), and a capture that is not one exits 2 naming the file.
#[test]
fn replay_of_a_saved_capture_needs_no_device() {
    let capture =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../sched/tests/data/mq-deadline-randrw-qd512.sched");
    let output = elevator(&["conform", "--replay", capture, "--json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["scheduler"], "mq-deadline");
    let decisions = report["decisions"].as_u64().unwrap();
    let identical = report["identical"].as_u64().unwrap();
    assert!(decisions > 0 && identical <= decisions);
    let processes = report["share_of_service"]["processes"].as_array().unwrap();
    assert!(!processes.is_empty(), "{report}");
    let kernel: f64 = processes.iter().map(|p| p["kernel_share"].as_f64().unwrap()).sum();
    assert!((kernel - 1.0).abs() < 1e-6, "kernel shares sum to {kernel}");
    let output = elevator(&["conform", "--replay", capture, "--first", "1"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(&format!("decisions {decisions}: identical {identical} (")),
        "{stdout}"
    );
    let listed = stdout.lines().filter(|line| line.starts_with('#')).count();
    assert!(listed <= 1, "--first 1 lists at most one disagreement\n{stdout}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.sched");
    std::fs::write(&bad, "elevator-sched-capture 1\nkernel = x\nnonsense\n").unwrap();
    let output = elevator(&["conform", "--replay", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("bad.sched:"), "{stderr}");
    let output = elevator(&["conform", "--replay", "/nonexistent/x.sched"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("/nonexistent/x.sched: cannot read"));
}

// Proves the default scratch loop device is made and removed: the capture is of a loop
// device, and afterwards neither its backing file nor its loop device is left.
#[test]
fn conform_without_a_device_uses_a_scratch_loop_device_and_removes_it() {
    // Root, losetup and the loop driver, as the scratch device needs them.
    if let Some(reason) = support::common::loop_devices_missing() {
        assert!(
            !std::env::var("CI").is_ok_and(|ci| ci == "true"),
            "cannot run under CI=true: {reason}"
        );
        eprintln!("skipping: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = elevator(&[
        "conform",
        "-s",
        "mq-deadline",
        "-w",
        "job:rw=randread,bs=4k,iodepth=16",
        "--runtime",
        "300ms",
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let capture = sched_log::read(&dir.path().join("conform-mq-deadline.sched")).unwrap();
    assert!(capture.header.device.starts_with("7,"), "a loop device: {}", capture.header.device);
    let leftovers: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("elevator-conform-"))
        .collect();
    assert!(leftovers.is_empty(), "scratch files left: {leftovers:?}");
    let loops = Command::new("losetup").arg("-a").output().unwrap();
    assert!(!text(&loops.stdout).contains("elevator-conform-"), "{}", text(&loops.stdout));
}

// Proves a bad scheduler is refused with exit 2 before the device is changed.
#[test]
fn an_unknown_scheduler_exits_2_and_changes_nothing() {
    let Some(disk) = TestDisk::attach("an_unknown_scheduler_exits_2", 16 << 20) else { return };
    let before = disk.now();
    let dir = tempfile::tempdir().unwrap();
    let output = elevator(&[
        "conform",
        disk.path().to_str().unwrap(),
        "-s",
        "mq-deadline,cfq-ish",
        "-w",
        "job:rw=randread",
        "-o",
        dir.path().to_str().unwrap(),
        &disk.state_arg(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("unknown scheduler `cfq-ish`"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
    assert_eq!(disk.now(), before);
}

// Proves an unprivileged user is refused with exit 2 and told it needs root, before any
// loop device or file is made.
#[test]
fn without_root_it_exits_2_naming_root() {
    let under_ci = std::env::var("CI").is_ok_and(|ci| ci == "true");
    let setpriv = Path::new("/usr/bin/setpriv");
    if !rustix::process::geteuid().is_root() || !setpriv.exists() {
        assert!(!under_ci, "needs root and setpriv (util-linux) to drop to an unprivileged user");
        eprintln!("skipping: needs root and setpriv to run as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_elevator"))
        .args(["conform", "-s", "mq-deadline", "-w", "job:rw=randread", "-o"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs root"), "{stderr}");
    assert!(!dir.path().join("out").exists(), "nothing made");
}

// Proves a capture that lost events is refused (exit 2, naming the lost count and the bigger
// buffer to give) and no capture file is written: a ring buffer of 4 KiB per CPU cannot hold
// half a second of random I/O.
#[test]
fn a_capture_that_lost_events_is_refused() {
    if let Some(reason) = support::common::loop_devices_missing() {
        assert!(
            !std::env::var("CI").is_ok_and(|ci| ci == "true"),
            "cannot run under CI=true: {reason}"
        );
        eprintln!("skipping: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = elevator(&[
        "conform",
        "-s",
        "mq-deadline",
        "-w",
        "job:rw=randrw,bs=4k,iodepth=32",
        "--runtime",
        "500ms",
        "--buffer-size-kb",
        "4",
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the capture lost "), "{stderr}");
    assert!(stderr.contains("give a bigger trace buffer (--buffer-size-kb"), "{stderr}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no capture written");
}
