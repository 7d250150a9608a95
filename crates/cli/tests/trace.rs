//! `elevator trace DEV` as a user runs it: on a loop device the test creates (and detaches,
//! also on failure) while real fio (installed when missing) writes to it. Needs root; under
//! CI=true a missing privilege or tool fails the test.

#[path = "../../kernel/tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use elevator_kernel::trace::tracefs_mounts;
use support::{TestDisk, common};

/// Serialises this binary's captures: a test checks what tracefs looks like before and after
/// its capture, which another capture (mounting tracefs) at the same time would change.
static TRACING: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    TRACING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The instances of the `elevator` process `pid` that exist now.
fn instances_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("elevator-{pid}");
    tracefs_mounts()
        .iter()
        .filter_map(|root| std::fs::read_dir(root.join("instances")).ok())
        .flat_map(|entries| entries.flatten().map(|entry| entry.path()))
        .filter(|path| path.file_name().unwrap().to_string_lossy().starts_with(&prefix))
        .collect()
}

/// Stops the capture (if still running) when the test ends, also on failure: with SIGINT, so
/// that it removes its instance as a user's Ctrl-C would.
struct Reap(Option<Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0
            && child.try_wait().ok().flatten().is_none()
        {
            interrupt(child.id());
            let _ = child.wait();
        }
    }
}

/// Sends SIGINT to `pid`.
fn interrupt(pid: u32) {
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("a child's PID is positive");
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
}

/// Waits (bounded) until `pid`'s capture has tracing on.
fn wait_for_tracing_on(pid: u32) {
    for _ in 0..400 {
        if instances_of(pid).iter().any(|dir| {
            std::fs::read_to_string(dir.join("tracing_on")).is_ok_and(|on| on.trim() == "1")
        }) {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("elevator trace did not switch tracing on within 10 s");
}

// Proves `elevator trace DEV` (until Ctrl-C) captures as many dispatches and completions as
// fio made writes to the device, at fio's offsets and size, nothing of another device; that
// SIGINT ends it normally (exit 0, the trace written to -o) and that its tracefs instance is
// gone afterwards, and tracefs unmounted when it was not mounted before.
#[test]
fn trace_captures_what_fio_writes_and_removes_its_instance_on_ctrl_c() {
    let Some(disk) = TestDisk::attach("trace_captures_what_fio_writes", 16 << 20) else {
        return;
    };
    let _alone = one_at_a_time();
    if !common::require("trace_captures_what_fio_writes", "fio", "fio") {
        return;
    }
    let mounted_before = tracefs_mounts();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capture.txt");
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["trace", disk.path().to_str().unwrap(), "--format", "blkparse", "-o"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reap(Some(child));
    let pid = child.0.as_ref().unwrap().id();
    wait_for_tracing_on(pid);

    // 64 sequential 4 KiB direct writes from 1 MiB on; psync waits for each.
    const WRITES: u64 = 64;
    const OFFSET_BYTES: u64 = 1 << 20;
    let filename = format!("--filename={}", disk.path().display());
    let size = format!("--size={}", WRITES * 4096);
    let offset = format!("--offset={OFFSET_BYTES}");
    common::run(
        "fio",
        &[
            "--name=w",
            &filename,
            "--rw=write",
            "--bs=4k",
            &size,
            &offset,
            "--direct=1",
            "--ioengine=psync",
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    interrupt(pid);
    let output = child.0.take().unwrap().wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}: {stderr}", output.status);
    assert!(instances_of(pid).is_empty(), "instance left behind: {:?}", instances_of(pid));
    if mounted_before.is_empty() && !stderr.contains("stays mounted") {
        assert!(tracefs_mounts().is_empty(), "tracefs left mounted: {:?}", tracefs_mounts());
    }

    let text = std::fs::read_to_string(&out).unwrap();
    let (major, minor) = {
        let dev = std::fs::read_to_string(format!("/sys/block/{}/dev", disk.name())).unwrap();
        let (major, minor) = dev.trim().split_once(':').unwrap();
        (major.to_owned(), minor.to_owned())
    };
    let mut dispatched = Vec::new();
    let mut completed = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[0], format!("{major},{minor}"), "another device: {line}");
        let (action, rwbs) = (fields[5], fields[6]);
        if !rwbs.starts_with('W') {
            continue; // udev's or blkid's reads of the fresh device
        }
        match action {
            "D" => {
                assert_eq!(fields[8..10], ["+", "8"], "{line}");
                assert_eq!(fields[10], "[fio]", "{line}");
                dispatched.push(fields[7].parse::<u64>().unwrap());
            }
            "C" => {
                assert_eq!(fields.last(), Some(&"[0]"), "{line}");
                completed += 1;
            }
            other => panic!("unexpected action {other}: {line}"),
        }
    }
    let expected: Vec<u64> = (0..WRITES).map(|index| (OFFSET_BYTES + index * 4096) / 512).collect();
    assert_eq!(dispatched, expected, "{text}");
    assert_eq!(completed, WRITES, "{text}");
    assert!(stderr.contains("elevator: captured "), "{stderr}");
}

// Proves a device that is not a block device is refused with exit 2 and its name, before any
// tracing (nothing written to -o).
#[test]
fn trace_refuses_a_non_block_device_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capture.txt");
    let output = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["trace", "/dev/null", "--duration", "1s", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/dev/null: not a block device"), "{stderr}");
    assert!(!out.exists());
}

// Proves a user who is not root gets exit 2 and a message naming root as what is missing,
// and that nothing is left in tracefs or the -o path.
#[test]
fn trace_without_root_exits_2_naming_root() {
    let Some(disk) = TestDisk::attach("trace_without_root_exits_2", 8 << 20) else {
        return;
    };
    if !common::require("trace_without_root_exits_2", "setpriv", "util-linux") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capture.txt");
    // `nobody` may write to a directory that is everyone's.
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777))
        .unwrap();
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_elevator"))
        .args(["trace", disk.path().to_str().unwrap(), "--duration", "1s", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs root"), "{stderr}");
    assert!(!out.exists(), "an empty trace file was left");
}

/// Runs `elevator trace DEV --duration 6s -o OUT` (iolog) while `load` runs once tracing is
/// on; returns the written writes' (offset, length) in order.
fn capture_writes_while(
    disk: &TestDisk,
    out: &std::path::Path,
    load: impl FnOnce(),
) -> Vec<(u64, u64)> {
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["trace", disk.path().to_str().unwrap(), "--duration", "6s", "-o"])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reap(Some(child));
    wait_for_tracing_on(child.0.as_ref().unwrap().id());
    load();
    let output = child.0.take().unwrap().wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}: {stderr}", output.status);
    let text = std::fs::read_to_string(out).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("fio version 3 iolog"));
    lines
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields[1], disk.path().to_str().unwrap(), "{line}");
            (fields[2] == "write").then(|| (fields[3].parse().unwrap(), fields[4].parse().unwrap()))
        })
        .collect()
}

// Proves the iolog `elevator trace --duration` writes is one real fio replays
// (`read_iolog`), and that the replay issues the captured writes again: a capture of the
// replay holds the same offsets and lengths in the same order as the capture of fio's random
// writes.
#[test]
fn fio_replays_the_captured_iolog_write_for_write() {
    let Some(disk) = TestDisk::attach("fio_replays_the_captured_iolog", 16 << 20) else {
        return;
    };
    let _alone = one_at_a_time();
    if !common::require("fio_replays_the_captured_iolog", "fio", "fio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("first.iolog"), dir.path().join("second.iolog"));
    let filename = format!("--filename={}", disk.path().display());
    let original = capture_writes_while(&disk, &first, || {
        common::run(
            "fio",
            &[
                "--name=w",
                &filename,
                "--rw=randwrite",
                "--bs=4k",
                "--size=256k",
                "--direct=1",
                "--ioengine=psync",
                "--randseed=7",
            ],
        );
    });
    assert_eq!(original.len(), 64, "{original:?}");
    assert!(original.iter().all(|&(offset, length)| length == 4096 && offset % 4096 == 0));
    let read_iolog = format!("--read_iolog={}", first.display());
    let replayed = capture_writes_while(&disk, &second, || {
        common::run("fio", &["--name=replay", &read_iolog, "--direct=1", "--ioengine=psync"]);
    });
    assert_eq!(replayed, original);
}
