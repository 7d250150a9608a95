//! `elevator run` as a user runs it: live runs on scratch files, the safety refusals, --verify
//! failing a run, workloads that need the simulator, Ctrl-C, and one run per target.

#[path = "../../live/tests/common/mod.rs"]
mod common;

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

// Proves a live run end to end: a scratch file is created, each scheduler asked for runs the
// workload with --verify clean, and the JSON report says live, with histogram latencies and
// the backend used.
#[test]
fn a_verified_live_run_reports_each_scheduler() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("scratch");
    let output = elevator(&[
        "run",
        "--target",
        path(&target),
        "--size",
        "8m",
        "-w",
        "job:rw=randrw,bs=4k,iodepth=8,numjobs=2,size=8m,io_size=2m",
        "-s",
        "deadline",
        "-s",
        "cfq:slice_idle=0",
        "--verify",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("created scratch file"), "{}", stderr(&output));
    assert!(stderr(&output).contains("no mismatch"), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["scheduler"], "cfq:slice_idle=0");
    for run in runs {
        assert_eq!(run["mode"], "live");
        assert_eq!(run["phases"][0]["bytes"], 2 * (2 << 20));
        assert_eq!(run["phases"][0]["latency_method"]["kind"], "histogram");
        assert_eq!(run["phases"][0]["latency_method"]["significant_digits"], 3);
        assert!(["io_uring", "threads"].contains(&run["config"]["live.backend"].as_str().unwrap()));
        assert!(run["phases"][0]["cpu_sys_ns"].as_u64().is_some());
    }
}

// Proves the thread-pool engine runs the same workload when asked for.
#[test]
fn the_thread_pool_engine_runs_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("scratch");
    let output = elevator(&[
        "run",
        "--target",
        path(&target),
        "--size",
        "4m",
        "-w",
        "job:rw=randread,bs=4k,iodepth=4,size=4m,io_size=1m",
        "-s",
        "noop",
        "--engine",
        "threads",
        "--verify",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["runs"][0]["config"]["live.backend"], "threads");
}

// Proves writing to a file elevator did not create is refused with exit 2 and a message that
// says what was found and how to override it, while reading it needs no force.
#[test]
fn a_foreign_file_is_refused_for_writing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("precious");
    std::fs::write(&target, vec![7u8; 1 << 20]).unwrap();
    let writes = elevator(&["run", "--target", path(&target), "-w", "job:rw=write,size=1m"]);
    assert_eq!(writes.status.code(), Some(2));
    let message = stderr(&writes);
    assert!(message.contains("did not create") && message.contains("--force"), "{message}");
    assert_eq!(std::fs::read(&target).unwrap(), vec![7u8; 1 << 20], "not a byte changed");
    let reads = elevator(&[
        "run",
        "--target",
        path(&target),
        "-w",
        "job:rw=read,bs=64k,size=1m",
        "-s",
        "noop",
    ]);
    assert!(reads.status.success(), "{}", stderr(&reads));
}

// Proves a workload that needs files and the page cache is refused with exit 2, pointing to
// the simulator, and so is a bad key.
#[test]
fn workloads_the_live_engine_cannot_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("scratch");
    let target = path(&target);
    let iozone = elevator(&["run", "--target", target, "--size", "4m", "-w", "iozone:size=1m"]);
    assert_eq!(iozone.status.code(), Some(2));
    assert!(stderr(&iozone).contains("elevator sim"), "{}", stderr(&iozone));
    let buffered = elevator(&["run", "--target", target, "-w", "job:rw=read,direct=0,size=1m"]);
    assert_eq!(buffered.status.code(), Some(2));
    assert!(stderr(&buffered).contains("direct=1"), "{}", stderr(&buffered));
    let key = elevator(&["run", "--target", target, "-w", "job:iodepth=0"]);
    assert_eq!(key.status.code(), Some(2));
    assert!(stderr(&key).contains("iodepth"), "{}", stderr(&key));
    let size = elevator(&["run", "--target", target, "--size", "lots"]);
    assert_eq!(size.status.code(), Some(2));
    assert!(stderr(&size).contains("--size"), "{}", stderr(&size));
}

// Proves --verify fails the run (exit 1) when a block reads back wrong, naming the block.
#[test]
fn a_block_that_reads_back_wrong_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("scratch");
    let run = |workload: &str| {
        elevator(&[
            "run",
            "--target",
            path(&target),
            "--size",
            "4m",
            "-w",
            workload,
            "-s",
            "noop",
            "--verify",
        ])
    };
    assert!(run("job:rw=write,bs=64k,size=4m").status.success());
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&target).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, 3 << 20).unwrap();
    file.write_all_at(&[!byte[0]], 3 << 20).unwrap();
    file.sync_all().unwrap();
    let output = run("job:rw=read,bs=64k,size=4m");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("read back wrong") && message.contains("3145728"), "{message}");
}

// Proves a signal stops a run cleanly (issue 14): issuing stops, I/O in flight finishes, the
// partial report is printed saying it is partial and why, and the exit code is 128 + the
// signal — 130 for Ctrl-C (SIGINT), 143 for SIGTERM — within a second of the signal even
// under a scheduler told to idle 10 s for a reader's next request.
#[test]
// The real clock measures how long the process takes to exit after the signal (a bound on
// hanging, not a speed figure).
#[allow(clippy::disallowed_methods)]
fn a_signal_prints_the_partial_report_and_exits_128_plus_it() {
    for (signal, scheduler, code) in
        [("INT", "deadline", 130), ("TERM", "cfq:slice_idle=10000", 143)]
    {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("scratch");
        let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
            .args([
                "run",
                "--target",
                path(&target),
                "--size",
                "16m",
                "-w",
                "job:rw=read,bs=4k,iodepth=1,numjobs=2,runtime=60s,time_based=1",
                "-s",
                scheduler,
                "--format",
                "json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Let it create the file and run for a moment.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let sent = std::time::Instant::now();
        let kill = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let output = child.wait_with_output().unwrap();
        let took = sent.elapsed();
        assert_eq!(output.status.code(), Some(code), "SIG{signal}: {}", stderr(&output));
        assert!(took < std::time::Duration::from_secs(3), "SIG{signal}: exit {took:?} after");
        assert!(stderr(&output).contains("interrupted"), "{}", stderr(&output));
        let json: Value = serde_json::from_slice(&output.stdout).unwrap();
        let run = &json["runs"][0];
        assert_eq!(run["partial"], true);
        let reason = run["partial_reason"].as_str().unwrap();
        assert!(reason.starts_with(&format!("interrupted by SIG{signal}")), "{reason}");
        assert!(run["phases"][0]["bytes"].as_u64().unwrap() > 0);
    }
}

// Proves failed I/O fails a run unless fio's continue_on_error covers it (issue 14): with every
// 5th read failing, the run stops at the first failure, exits 1 naming it, and its JSON counts
// the failure apart from the reads that moved data; with --continue-on-error it runs to the
// end, exits 0, and counts every failure.
#[test]
fn failed_io_fails_the_run_unless_continue_on_error() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("scratch");
    let base = [
        "run",
        "--target",
        path(&target),
        "--size",
        "16m",
        "-w",
        "job:rw=randread,bs=4k,iodepth=2,io_size=400k",
        "-s",
        "noop",
        "--format",
        "json",
        "--inject",
        "fail:op=read,every=5,errno=EIO",
    ];
    let output = elevator(&base);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("Input/output error"), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let run = &json["runs"][0];
    assert_eq!(run["partial"], true);
    let phase = &run["phases"][0];
    assert_eq!(phase["errors"]["read"], 1);
    assert!(phase["ops"].as_u64().unwrap() < 100);

    let output = elevator(&[&base[..], &["--continue-on-error"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let phase = &json["runs"][0]["phases"][0];
    assert_eq!(phase["errors"]["read"], 20);
    assert_eq!(phase["ops"], 80);
    assert_eq!(phase["bytes"], 80 * 4096);
    assert!(json["runs"][0].get("partial").is_none(), "a finished run is not partial");

    let bad = elevator(&[&base[..], &["--inject", "fail:errno=ENOPE"]].concat());
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("accepted") || stderr(&bad).contains("expected"),
        "{}",
        stderr(&bad)
    );
}

// Proves --verify never passes silently (issue 14): on a target elevator did not create, a
// workload that only reads has nothing it could check, and the run is refused (exit 2) before
// any I/O; a writing workload verifies.
#[test]
fn verify_refuses_a_read_only_workload_on_unknown_content() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("data.img");
    std::fs::write(&target, vec![7u8; 4 << 20]).unwrap();
    let read_only = elevator(&[
        "run",
        "--target",
        path(&target),
        "-w",
        "job:rw=randread,bs=4k,io_size=64k",
        "-s",
        "noop",
        "--verify",
    ]);
    assert_eq!(read_only.status.code(), Some(2), "{}", stderr(&read_only));
    assert!(stderr(&read_only).contains("needs a workload that writes"), "{}", stderr(&read_only));

    // The same on a block device (where --verify used to check nothing and exit 0); a
    // workload that writes is read back after the run and checked.
    let Some(device) = common::LoopDevice::attach("verify_on_a_device", 16 << 20, false, |_| {})
    else {
        return;
    };
    let device = path(device.path()).to_owned();
    let verify = |workload: &str| {
        elevator(&["run", "--target", &device, "-w", workload, "-s", "noop", "--verify"])
    };
    let read_only = verify("job:rw=randread,bs=4k,io_size=64k");
    assert_eq!(read_only.status.code(), Some(2), "{}", stderr(&read_only));
    let written = verify("job:rw=randwrite,bs=4k,io_size=256k");
    assert_eq!(written.status.code(), Some(0), "{}", stderr(&written));
    let message = stderr(&written);
    let checked: u64 = message
        .split(" read back and checked")
        .next()
        .and_then(|before| before.rsplit(' ').next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no count of blocks checked: {message}"));
    assert!(checked > 0, "{message}");
}

/// Starts `elevator` with `args` in the background.
fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (up to about twenty seconds, counted sleeps) until process `pid` holds a `flock`,
/// as the kernel's lock table shows: the run has opened and locked its target.
fn wait_for_lock(pid: u32) {
    for _ in 0..1000 {
        let table = std::fs::read_to_string("/proc/locks").unwrap();
        let holds = table.lines().any(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.get(1) == Some(&"FLOCK") && fields.get(4) == Some(&pid.to_string().as_str())
        });
        if holds {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("process {pid} never took its lock");
}

/// Stops a background run with SIGINT and waits for it.
fn interrupt(child: std::process::Child) -> Output {
    let signal = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(signal.success());
    child.wait_with_output().unwrap()
}

const LONG_READS: &str = "job:rw=randread,bs=4k,iodepth=4,runtime=60s,time_based=1";

// Proves one run per target: while a run holds a scratch file, a second run on it exits 2 at
// once, naming the first's PID, and the first run is not disturbed (it ends normally on its
// Ctrl-C with a report).
#[test]
fn a_second_run_on_a_busy_target_is_refused_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("scratch");
    let command = format!("run --target {} --size 8m -w {LONG_READS} -s noop", path(&target));
    let first = spawn(&command.split(' ').collect::<Vec<_>>());
    wait_for_lock(first.id());
    let second = elevator(&["run", "--target", path(&target), "-w", "job:rw=write,size=1m"]);
    let message = stderr(&second);
    assert_eq!(second.status.code(), Some(2), "{message}");
    assert!(message.contains(&format!("in use by PID {} (", first.id())), "{message}");
    assert!(message.contains("one run per target at a time"), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "one line: {message}");
    let first = interrupt(first);
    assert_eq!(first.status.code(), Some(130), "{}", stderr(&first));
}

// Proves `kernel set`, `kernel tune` and `kernel compare` are refused on a device a run is
// using (exit 2, naming the run's PID) and leave its scheduler as it was.
#[test]
fn kernel_commands_are_refused_on_a_device_a_run_uses() {
    let Some(device) =
        common::LoopDevice::attach("kernel_commands_refused", 32 << 20, false, |_| {})
    else {
        return;
    };
    let node = path(device.path());
    let name = device.name();
    let scheduler =
        || std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler")).unwrap();
    let before = scheduler();
    let run = spawn(&["run", "--target", node, "-w", LONG_READS, "-s", "noop", "--format", "json"]);
    wait_for_lock(run.id());
    let holder = format!("in use by PID {}", run.id());
    for args in [
        vec!["kernel", "set", name.as_str(), "none"],
        vec!["kernel", "tune", name.as_str(), "read_ahead_kb=64"],
        vec!["kernel", "compare", node, "-w", "job:rw=read,size=1m", "-s", "none"],
    ] {
        let output = elevator(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(&holder), "{args:?}: {}", stderr(&output));
    }
    assert_eq!(scheduler(), before);
    let run = interrupt(run);
    assert_eq!(run.status.code(), Some(130), "{}", stderr(&run));
}

// Proves a write run on a device carrying a signature the old hand-written table missed
// (minix) is refused with exit 2 in one line naming it, and not one byte changes; with
// --force the same run writes.
#[test]
fn a_write_run_on_a_minix_device_is_refused_and_the_device_left_intact() {
    let Some(device) = common::LoopDevice::attach("minix_run", 32 << 20, false, |_| {}) else {
        return;
    };
    if !common::require("minix_run", "mkfs.minix", "util-linux") {
        return;
    }
    common::run(common::which("mkfs.minix").unwrap().to_str().unwrap(), &[path(device.path())]);
    let before = common::checksum(device.path());
    let write = ["run", "--target", path(device.path()), "-w", "job:rw=write,bs=64k,size=1m"];
    let refused = elevator(&write);
    let message = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{message}");
    assert!(message.contains("a signature of type minix (filesystem"), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "one line: {message}");
    assert_eq!(common::checksum(device.path()), before, "a refused run changed the device");
    let forced = elevator(&[&write[..], &["--force", "-s", "noop"]].concat());
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_ne!(common::checksum(device.path()), before, "the forced run wrote");
}

// Proves a --size larger than the free space is refused before anything is created, with
// exit 2 and one line saying what was needed, what is free, and where.
#[test]
fn a_size_beyond_the_free_space_is_refused_before_creation() {
    let Some(tmpfs) = common::Tmpfs::mount("size_beyond_free_space", 4 << 20) else { return };
    let target = tmpfs.path().join("scratch");
    let output = elevator(&["run", "--target", path(&target), "--size", "16m", "-w", LONG_READS]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("a scratch file of 16m does not fit: only 4m is free"), "{message}");
    assert!(!target.exists());
}

// Proves Ctrl-C while the scratch file is being created stops the creation, removes the
// partial file and exits 130 (before, the signal was ignored until a multi-gigabyte file was
// written). The signal is sent as soon as the file exists, long before 4 GiB are written.
#[test]
fn ctrl_c_while_creating_the_scratch_file_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("scratch");
    let child = spawn(&["run", "--target", path(&target), "--size", "4g", "-w", LONG_READS]);
    for _ in 0..1000 {
        if target.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(target.exists(), "the run never started creating its file");
    let output = interrupt(child);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{message}");
    assert!(message.contains("stopped while creating the scratch file; removed it"), "{message}");
    assert!(!target.exists(), "the partial scratch file must be removed");
}
