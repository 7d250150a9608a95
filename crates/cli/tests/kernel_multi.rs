//! `elevator kernel compare` and `elevator fio` (kernel mode) over job files naming several
//! block devices (issue 17): every device gets the scheduler under test, each job's I/O goes
//! to its own device, and every device is put back exactly as found.
//!
//! Runs as root on two RAM-backed loop devices the tests create and remove (skipped with the
//! reason otherwise, failed under CI=true). Nothing here asserts a speed: the probes are what
//! the run leaves (the report's per-device settings, the data on each device, the devices'
//! state afterwards).

mod support;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use support::RamLoop;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Writes `text` as `NAME.fio` in `dir`.
fn job_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.fio"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Whether every byte of `len` bytes at `offset` of the device at `path` is `byte`.
fn all_bytes(path: &Path, offset: u64, len: usize, byte: u8) -> bool {
    let device = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; len];
    device.read_exact_at(&mut buf, offset).unwrap();
    buf.iter().all(|b| *b == byte)
}

/// The snapshot files left in `dir` (a finished compare leaves none).
fn snapshots(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| entries.count())
}

/// elevator's writes fill their buffers with this byte (elevator_live::passthrough).
const WRITTEN: u8 = 0xa5;
const MIB: u64 = 1 << 20;

// Proves a job file naming two devices runs each scheduler of `-s` on BOTH devices (each
// run's report carries both devices' scheduler line and the tunable set on each), with each
// job's writes on its own device only (the data each device holds afterwards; on_b's go
// through the page cache and its end_fsync, so B's own counters see them within the run),
// and that both devices, which started under different schedulers, are put back exactly as
// found, with no snapshot left. DEV is left out: the file names its devices; given, it must
// be one of them, and the run is the same.
#[test]
fn every_device_runs_each_scheduler_and_is_put_back() {
    let test = "kernel_multi_every_device";
    let Some(a) = RamLoop::attach(test, 16 * MIB) else { return };
    let Some(b) = RamLoop::attach(test, 16 * MIB) else { return };
    // Different starting points, so that a restore of one device's state onto the other
    // would show.
    a.set_scheduler("bfq");
    b.set_scheduler("none");
    let found = (a.now(), b.now());
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let (pa, pb) = (a.path().display().to_string(), b.path().display().to_string());
    let job = job_file(
        dir.path(),
        "two",
        &format!(
            "[global]\ndirect=1\nbs=64k\nsize=1m\nrw=write\n\
             [on_a]\nfilename={pa}\noffset=0\n\
             [on_b]\nfilename={pb}\noffset=4m\ndirect=0\nend_fsync=1\n"
        ),
    );
    let output = elevator(&[
        "kernel",
        &format!("--state-dir={}", state.display()),
        "compare",
        job.to_str().unwrap(),
        "-s",
        "mq-deadline:fifo_batch=5,kyber",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, scheduler) in runs.iter().zip(["mq-deadline", "kyber"]) {
        assert_eq!(run["device"], format!("{pa}:{pb}"), "the report names both devices");
        for disk in [&a, &b] {
            let name = disk.name();
            let line = run["config"][format!("device.{name}.kernel.scheduler_line")]
                .as_str()
                .unwrap_or_else(|| panic!("{name}'s scheduler line in {}", run["config"]));
            assert!(line.contains(&format!("[{scheduler}]")), "{name}: {line}");
            if scheduler == "mq-deadline" {
                assert_eq!(run["config"][format!("device.{name}.scheduler.fifo_batch")], "5");
            }
            let written = &run["device_stats"]["extra"][format!("device.{name}.write_sectors")];
            assert!(written.as_u64().unwrap() >= MIB / 512, "{name}: {written}");
        }
    }
    // on_a wrote A's first MiB and nothing at 4 MiB; on_b the other way round on B.
    assert!(all_bytes(a.path(), 0, MIB as usize, WRITTEN), "on_a's writes on A");
    assert!(all_bytes(a.path(), 4 * MIB, MIB as usize, 0), "nothing of on_b's on A");
    assert!(all_bytes(b.path(), 4 * MIB, MIB as usize, WRITTEN), "on_b's writes on B");
    assert!(all_bytes(b.path(), 0, MIB as usize, 0), "nothing of on_a's on B");
    assert_eq!((a.now(), b.now()), found, "both devices put back as found");
    assert_eq!(snapshots(&state), 0, "no snapshot left");
    // DEV given as one of the file's devices: both are still compared.
    let state_arg = format!("--state-dir={}", state.display());
    let job = job.to_str().unwrap();
    let args = ["kernel", &state_arg, "compare", &pb, job, "-s", "none", "--format", "json"];
    let output = elevator(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["runs"][0]["config"]["kernel.devices"], format!("{},{}", a.name(), b.name()));
    assert_eq!((a.now(), b.now()), found, "both devices put back as found");
}

// Proves `elevator fio` in kernel mode takes one job over `filename=A:B`: the job's size is
// divided between the two devices (each holds its half of the writes), fio's JSON names both
// devices in `disk_util` with the sectors written to each, and both devices are put back.
#[test]
fn fio_kernel_mode_spreads_a_filename_list_over_both_devices() {
    let test = "kernel_multi_fio_list";
    let Some(a) = RamLoop::attach(test, 16 * MIB) else { return };
    let Some(b) = RamLoop::attach(test, 16 * MIB) else { return };
    let found = (a.now(), b.now());
    let dir = tempfile::tempdir().unwrap();
    let job = job_file(
        dir.path(),
        "list",
        &format!(
            "[both]\nfilename={}:{}\ndirect=1\nbs=64k\nsize=2m\nrw=write\n",
            a.path().display(),
            b.path().display()
        ),
    );
    let output = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["fio", "--output-format=json", job.to_str().unwrap()])
        .env("ELEVATOR_FIO_MODE", "kernel")
        .env("ELEVATOR_FIO_SCHEDULER", "mq-deadline")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["jobs"][0]["write"]["io_bytes"], 2 * MIB, "{}", json["jobs"][0]);
    let util = json["disk_util"].as_array().unwrap();
    for disk in [&a, &b] {
        let entry = util
            .iter()
            .find(|entry| entry["name"] == disk.name().as_str())
            .unwrap_or_else(|| panic!("{} in disk_util: {util:?}", disk.name()));
        assert!(entry["write_sectors"].as_u64().unwrap() >= MIB / 512, "{entry}");
        // fio's size divided between the files: a MiB each, from each file's start.
        assert!(all_bytes(disk.path(), 0, MIB as usize, WRITTEN), "{}", disk.name());
        assert!(all_bytes(disk.path(), MIB, MIB as usize, 0), "{}", disk.name());
    }
    assert_eq!((a.now(), b.now()), found, "both devices put back as found");
}

/// A sysfs tree in `dir` with the real loop devices `offers` names, each offering the
/// schedulers given (the first current), reached from their device numbers as in /sys, and a
/// device `vdz` with no node.
fn fake_tree(dir: &Path, offers: &[(&RamLoop, &str)]) {
    let add = |name: &str, line: &str| {
        let queue = dir.join("block").join(name).join("queue");
        std::fs::create_dir_all(queue.join("iosched")).unwrap();
        std::fs::write(queue.join("scheduler"), format!("{line}\n")).unwrap();
        std::fs::write(queue.join("nr_requests"), "256\n").unwrap();
        std::fs::write(dir.join("block").join(name).join("stat"), "0 0 0 0 0 0 0 0 0 0 0\n")
            .unwrap();
    };
    std::fs::create_dir_all(dir.join("dev/block")).unwrap();
    for (disk, line) in offers {
        let name = disk.name();
        add(&name, line);
        let numbers = std::fs::read_to_string(format!("/sys/block/{name}/dev")).unwrap();
        std::os::unix::fs::symlink(
            dir.join("block").join(&name),
            dir.join("dev/block").join(numbers.trim()),
        )
        .unwrap();
    }
    add("vdz", "[none] mq-deadline");
}

// Proves the refusals, each exit 2 with nothing changed or run: a scheduler the SECOND device
// lacks (a queue that takes none; a name only the first lists) stops the compare before the
// first device is switched (a fake sysfs tree over the real device nodes keeps the first
// device's line as it was, and no snapshot is taken); a DEV
// that is not among the file's devices is named with the job file's line; a regular file
// beside the devices is refused naming its line.
#[test]
fn a_device_lacking_the_scheduler_refuses_before_any_changes() {
    let test = "kernel_multi_refusals";
    let Some(a) = RamLoop::attach(test, 8 * MIB) else { return };
    let Some(b) = RamLoop::attach(test, 8 * MIB) else { return };
    let found = (a.now(), b.now());
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("sys");
    // B is a queue that takes no scheduler (bio-based: `none` without brackets).
    fake_tree(&tree, &[(&a, "[none] mq-deadline kyber bfq"), (&b, "none")]);
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let (pa, pb) = (a.path().display().to_string(), b.path().display().to_string());
    let job = job_file(
        dir.path(),
        "two",
        &format!(
            "[global]\ndirect=1\nbs=64k\nsize=1m\nrw=write\n[on_a]\nfilename={pa}\n\
             [on_b]\nfilename={pb}\n"
        ),
    );
    let kernel = |args: &[&str]| {
        let head = [
            "kernel".to_owned(),
            format!("--sysfs-root={}", tree.display()),
            format!("--state-dir={}", state.display()),
            "compare".to_owned(),
        ];
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        elevator(&[&head[..], args].concat())
    };
    let line = |name: String| {
        std::fs::read_to_string(tree.join("block").join(name).join("queue/scheduler")).unwrap()
    };
    let refused = |schedulers: &str, a_line: &str, b_line: &str| {
        let output = kernel(&[job.to_str().unwrap(), "-s", schedulers]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        let message = stderr(&output);
        assert!(message.contains(&format!("{}: unknown scheduler", b.name())), "{message}");
        assert!(!message.contains("running"), "nothing ran: {message}");
        assert!(output.stdout.is_empty(), "no report");
        assert_eq!(line(a.name()), a_line, "the first device unchanged");
        assert_eq!(line(b.name()), b_line);
        assert_eq!(snapshots(&state), 0, "no snapshot taken");
    };
    refused("mq-deadline", "[none] mq-deadline kyber bfq\n", "none\n");
    // A scheduler only the first device lists (an out-of-tree module there).
    let a_offers = "[none] mq-deadline kyber bfq adios\n";
    std::fs::write(tree.join("block").join(a.name()).join("queue/scheduler"), a_offers).unwrap();
    std::fs::write(tree.join("block").join(b.name()).join("queue/scheduler"), "[none] kyber\n")
        .unwrap();
    refused("kyber,adios", a_offers, "[none] kyber\n");

    let output = kernel(&["vdz", job.to_str().unwrap(), "-s", "mq-deadline"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains(&format!("{}:7", job.display())), "file:line: {message}");
    assert!(message.contains("vdz is none of them"), "{message}");

    let regular = dir.path().join("regular");
    std::fs::write(&regular, vec![0u8; MIB as usize]).unwrap();
    let mixed = job_file(
        dir.path(),
        "mixed",
        &format!(
            "[global]\ndirect=1\nbs=64k\nsize=1m\nrw=write\n[on_a]\nfilename={pa}\n\
             [on_file]\nfilename={}\n",
            regular.display()
        ),
    );
    let output = kernel(&[mixed.to_str().unwrap(), "-s", "mq-deadline"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains(&format!("{}:9", mixed.display())), "file:line: {message}");
    assert!(message.contains("block devices"), "{message}");
    assert_eq!(line(a.name()), a_offers);
    assert_eq!(snapshots(&state), 0);
    assert_eq!((a.now(), b.now()), found, "the real devices untouched");
}

// Proves a signal restores every device: a compare over two devices stopped with SIGTERM
// while both run the kernel's bfq (with a tunable changed on each) exits 143 with a partial
// report naming both, and both devices, which started under different schedulers and
// settings, are put back exactly as found, with no snapshot left.
#[test]
fn sigterm_restores_every_device() {
    let test = "kernel_multi_sigterm";
    let Some(a) = RamLoop::attach(test, 16 * MIB) else { return };
    let Some(b) = RamLoop::attach(test, 16 * MIB) else { return };
    a.set_scheduler("mq-deadline");
    b.set_scheduler("kyber");
    let found = (a.now(), b.now());
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    // A minute of reads on each device: stopped long before it ends.
    let job = job_file(
        dir.path(),
        "long",
        &format!(
            "[global]\ndirect=1\nbs=4k\nrw=randread\ntime_based=1\nruntime=60\n\
             [on_a]\nfilename={}\n[on_b]\nfilename={}\n",
            a.path().display(),
            b.path().display()
        ),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["kernel", &format!("--state-dir={}", state.display()), "compare"])
        .args([job.to_str().unwrap(), "-s", "bfq:slice_idle=0", "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Both devices switched and tuned: the run is under way on both.
    let tuned = |name: String| {
        let queue = format!("/sys/block/{name}/queue");
        std::fs::read_to_string(format!("{queue}/scheduler")).unwrap().contains("[bfq]")
            && std::fs::read_to_string(format!("{queue}/iosched/slice_idle"))
                .is_ok_and(|v| v.trim() == "0")
    };
    let mut waited = 0;
    while !(tuned(a.name()) && tuned(b.name())) {
        waited += 1;
        assert!(waited < 1000, "the compare never switched both devices to bfq");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let signal = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(signal.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));
    assert_eq!((a.now(), b.now()), found, "both restored: {}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).expect("a partial report");
    let run = &json["runs"][0];
    assert_eq!(run["partial"], true);
    assert_eq!(run["device"], format!("{}:{}", a.path().display(), b.path().display()));
    for disk in [&a, &b] {
        assert_eq!(run["config"][format!("device.{}.scheduler.slice_idle", disk.name())], "0");
    }
    assert_eq!(snapshots(&state), 0, "the snapshots go with the restore");
}
