//! `elevator kernel` as an administrator runs it: on loop devices the tests create and remove
//! (as root; skipped with the reason otherwise), and against a fake sysfs tree.

#[path = "../../live/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::LoopDevice;
use serde_json::Value;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn attr(device: &str, name: &str) -> String {
    std::fs::read_to_string(format!("/sys/block/{device}/queue/{name}")).unwrap().trim().to_owned()
}

/// What a benchmark must leave as it found: the scheduler line, the tunables, nr_requests
/// and read_ahead_kb.
fn state(device: &str) -> Vec<(String, String)> {
    let mut state = vec![
        ("scheduler".to_owned(), attr(device, "scheduler")),
        ("nr_requests".to_owned(), attr(device, "nr_requests")),
        ("read_ahead_kb".to_owned(), attr(device, "read_ahead_kb")),
    ];
    let dir = format!("/sys/block/{device}/queue/iosched");
    let mut tunables: Vec<(String, String)> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let value =
                        std::fs::read_to_string(e.path()).unwrap_or_default().trim().to_owned();
                    (name, value)
                })
                .collect()
        })
        .unwrap_or_default();
    tunables.sort();
    state.extend(tunables);
    state
}

// Proves the guard: a compare killed with SIGTERM while the kernel's bfq (with a changed
// tunable) is running puts the original scheduler, its tunables and nr_requests back, and
// exits 130 after printing the partial report.
#[test]
fn sigterm_mid_compare_restores_the_device() {
    let Some(disk) =
        LoopDevice::attach("sigterm_mid_compare_restores_the_device", 64 << 20, false, |_| {})
    else {
        return;
    };
    let name = disk.name();
    // A non-default starting point: mq-deadline with its own tunable changed and a smaller
    // nr_requests, which a switch to bfq would reset.
    let setup = elevator(&["kernel", "set", &name, "mq-deadline"]);
    assert!(setup.status.success(), "{}", stderr(&setup));
    let setup =
        elevator(&["kernel", "tune", &name, "fifo_batch=5", "nr_requests=40", "read_ahead_kb=64"]);
    assert!(setup.status.success(), "{}", stderr(&setup));
    let before = state(&name);

    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "kernel",
            "compare",
            &name,
            "-w",
            "job:rw=randread,bs=4k,iodepth=8,numjobs=2,runtime=60s,time_based=1",
            "-s",
            "bfq:slice_idle=0,nr_requests=16",
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the child has switched to bfq and set its tunable: the middle of the run.
    let mut waited = 0;
    while !(attr(&name, "scheduler").contains("[bfq]")
        && std::fs::read_to_string(format!("/sys/block/{name}/queue/iosched/slice_idle"))
            .is_ok_and(|v| v.trim() == "0"))
    {
        waited += 1;
        assert!(waited < 1000, "the compare never switched to bfq");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_ne!(state(&name), before, "mid-run the device is changed");
    let signal = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(signal.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert_eq!(state(&name), before, "restored: {}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).expect("a partial report");
    assert_eq!(json["runs"][0]["mode"], "kernel");
    assert_eq!(json["runs"][0]["scheduler"], "bfq:slice_idle=0,nr_requests=16");
    assert_eq!(json["runs"][0]["config"]["scheduler.slice_idle"], "0");
}

// Proves a compare of two schedulers reports both in one schema, and leaves the device as it
// was; and that a buffered tool workload (dd reading the raw device through the page cache)
// runs as real threads.
#[test]
fn compare_reports_kernel_runs_and_runs_buffered_tools() {
    let Some(disk) = LoopDevice::attach("compare_reports_kernel_runs", 64 << 20, false, |_| {})
    else {
        return;
    };
    let name = disk.name();
    let before = state(&name);
    let output = elevator(&[
        "kernel",
        "compare",
        disk.path().to_str().unwrap(),
        "-w",
        "dd:mode=read,bs=1m,count=32",
        "-s",
        "none,mq-deadline",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, scheduler) in runs.iter().zip(["none", "mq-deadline"]) {
        assert_eq!(run["mode"], "kernel");
        assert_eq!(run["scheduler"], scheduler);
        assert_eq!(run["phases"][0]["bytes"], 32 << 20);
        // Caches were dropped before each run, so the kernel read the data from the device.
        let sectors = run["device_stats"]["extra"]["read_sectors"].as_u64().unwrap();
        assert!(sectors >= (32 << 20) / 512, "{scheduler}: {sectors} sectors read");
    }
    assert_eq!(state(&name), before);
}

// Proves the permission error is the one a non-root user gets from the real sysfs.
#[test]
#[allow(clippy::print_stderr)] // A skip must say why.
fn a_user_without_root_is_told_so() {
    let Some(disk) = LoopDevice::attach("a_user_without_root_is_told_so", 8 << 20, false, |_| {})
    else {
        return;
    };
    if !common::have("setpriv") {
        eprintln!("skipping a_user_without_root_is_told_so: setpriv is not installed");
        return;
    }
    let before = attr(&disk.name(), "scheduler");
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"])
        .arg(env!("CARGO_BIN_EXE_elevator"))
        .args(["kernel", "set", &disk.name(), "bfq"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("needs root"), "{}", stderr(&output));
    assert_eq!(attr(&disk.name(), "scheduler"), before);
}

fn fake_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let queue = dir.path().join("block/vdz/queue");
    std::fs::create_dir_all(queue.join("iosched")).unwrap();
    std::fs::write(queue.join("scheduler"), "[mq-deadline] kyber none\n").unwrap();
    std::fs::write(queue.join("nr_requests"), "256\n").unwrap();
    std::fs::write(queue.join("read_ahead_kb"), "128\n").unwrap();
    std::fs::write(queue.join("iosched/fifo_batch"), "16\n").unwrap();
    std::fs::write(dir.path().join("block/vdz/serial"), "BTWA1234\n").unwrap();
    dir
}

fn root(dir: &Path) -> String {
    format!("--sysfs-root={}", dir.display())
}

// Proves the command-line errors: an unknown scheduler lists what the device offers, a
// missing device lists the devices, a key of another scheduler says so; all exit 2 and
// change nothing.
#[test]
fn bad_input_exits_2_with_what_is_accepted() {
    let tree = fake_tree();
    let root = root(tree.path());
    let output = elevator(&["kernel", &root, "set", "vdz", "cfq"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("this device offers: mq-deadline, kyber, none"),
        "{}",
        stderr(&output)
    );
    let output = elevator(&["kernel", &root, "show", "sdq"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("block devices here: vdz"), "{}", stderr(&output));
    let output = elevator(&["kernel", &root, "tune", "vdz", "slice_idle=0"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("unknown key `slice_idle`"), "{}", stderr(&output));
    let output = elevator(&["kernel", &root, "tune", "vdz", "fifo_batch"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("KEY=VALUE"), "{}", stderr(&output));
    let scheduler = std::fs::read_to_string(tree.path().join("block/vdz/queue/scheduler")).unwrap();
    assert_eq!(scheduler, "[mq-deadline] kyber none\n");
}

// Proves show's JSON carries the scheduler line and tunables, and persist --apply writes a
// rule matching the device by its serial, with the elevator= note.
#[test]
fn show_json_and_persist_apply_on_a_fake_tree() {
    let tree = fake_tree();
    let root = root(tree.path());
    let output = elevator(&["kernel", &root, "show", "--format", "json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["devices"][0]["device"], "vdz");
    assert_eq!(json["devices"][0]["scheduler"]["current"], "mq-deadline");
    assert_eq!(json["devices"][0]["tunables"]["fifo_batch"], "16");
    let rules = tempfile::tempdir().unwrap();
    let rules_dir = format!("--rules-dir={}", rules.path().display());
    let output = elevator(&[
        "kernel",
        &root,
        "persist",
        "vdz",
        "kyber",
        "--apply",
        &rules_dir,
        "--no-reload",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = std::fs::read_to_string(rules.path().join("99-elevator-vdz.rules")).unwrap();
    assert!(text.contains("ATTR{serial}==\"BTWA1234\""), "{text}");
    assert!(text.contains("ATTR{queue/scheduler}=\"kyber\""), "{text}");
    assert!(text.contains("elevator="), "{text}");
}
