//! `elevator_kernel::trace` against the real kernel: tracefs block tracepoints on a loop
//! device the test creates (and detaches, also on failure), while dd writes a known number of
//! direct I/Os to it. Needs root; under CI=true a missing privilege or tool fails the test.

mod support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use elevator_kernel::trace::{
    self, CaptureOptions, Direction, EventKind, TracedDevice, tracefs_mounts,
};
use elevator_trace::iolog::{Action, IoAction, Iolog};

use support::TestDisk;
use support::common;

/// Serialises this binary's captures: each test checks what tracefs looks like before and
/// after, which another test's capture (or mount) at the same time would change.
static TRACING: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    TRACING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// This process's capture instances that exist now, in any tracefs mount.
fn our_instances() -> Vec<PathBuf> {
    let prefix = format!("elevator-{}", std::process::id());
    tracefs_mounts()
        .iter()
        .filter_map(|root| std::fs::read_dir(root.join("instances")).ok())
        .flat_map(|entries| entries.flatten().map(|entry| entry.path()))
        .filter(|path| path.file_name().unwrap().to_string_lossy().starts_with(&prefix))
        .collect()
}

/// Waits (bounded) until one of this process's instances has tracing on.
fn wait_for_tracing_on() {
    for _ in 0..200 {
        if our_instances().iter().any(|dir| {
            std::fs::read_to_string(dir.join("tracing_on")).is_ok_and(|on| on.trim() == "1")
        }) {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("no capture instance switched tracing on within 5 s");
}

// Proves a capture of a real loop device holds exactly the direct writes dd made to it — as
// many dispatches and completions, each 4 KiB at dd's offsets, without errors — and nothing
// of any other device, loses no event, writes them as an iolog that elevator-trace reads back,
// removes its tracefs instance and leaves tracefs mounted only if it was mounted before.
#[test]
fn captures_every_direct_write_to_a_loop_device_and_cleans_up() {
    let Some(disk) = TestDisk::attach("captures_every_direct_write_to_a_loop_device", 16 << 20)
    else {
        return;
    };
    let _alone = one_at_a_time();
    if !common::require("captures_every_direct_write", "dd", "coreutils") {
        return;
    }
    let mounted_before = tracefs_mounts();
    let device = TracedDevice::open(disk.path().to_str().unwrap()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let options = CaptureOptions { queue_events: true, ..CaptureOptions::default() };
    let capturing = {
        let (device, stop) = (device.clone(), stop.clone());
        std::thread::spawn(move || trace::capture(&device, &options, &stop))
    };
    // Stops the capture even when an assertion below fails, so the thread ends and cleans up.
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let stopper = StopOnDrop(stop.clone());
    wait_for_tracing_on();

    const WRITES: u64 = 48;
    const FIRST_BLOCK: u64 = 100;
    let of = format!("of={}", disk.path().display());
    let seek = format!("seek={FIRST_BLOCK}");
    let count = format!("count={WRITES}");
    common::run("dd", &["if=/dev/zero", &of, "bs=4096", &count, &seek, "oflag=direct"]);
    // dd returns once its last write completed; let the completion event reach the buffer.
    std::thread::sleep(Duration::from_millis(300));
    drop(stopper);
    let capture = capturing.join().unwrap().unwrap();

    assert!(our_instances().is_empty(), "instance left behind: {:?}", our_instances());
    if mounted_before.is_empty() && capture.notes.is_empty() {
        assert!(tracefs_mounts().is_empty(), "tracefs left mounted: {:?}", tracefs_mounts());
    }
    assert_eq!(capture.lost_events, 0);
    assert_eq!(capture.other_device_events, 0);
    assert!(!capture.events.is_empty());
    for event in &capture.events {
        assert_eq!((event.major, event.minor), (device.major, device.minor), "{event:?}");
    }
    // udev or blkid may read the fresh device; the writes are dd's alone.
    let writes = |kind: EventKind| {
        capture
            .events
            .iter()
            .filter(|event| event.kind == kind && event.direction() == Direction::Write)
            .collect::<Vec<_>>()
    };
    let issued = writes(EventKind::Issue);
    let completed = writes(EventKind::Complete);
    let queued = writes(EventKind::Queue);
    assert_eq!(issued.len() as u64, WRITES, "{issued:#?}");
    assert_eq!(completed.len() as u64, WRITES, "{completed:#?}");
    assert_eq!(queued.len() as u64, WRITES, "{queued:#?}");
    // dd writes one block at a time and waits for it: dispatched in order, 8 sectors each.
    let sectors: Vec<u64> = issued.iter().map(|event| event.sector).collect();
    let expected: Vec<u64> = (0..WRITES).map(|block| (FIRST_BLOCK + block) * 8).collect();
    assert_eq!(sectors, expected);
    for event in &issued {
        assert_eq!((event.sectors, event.size_bytes()), (8, 4096), "{event:?}");
        assert_eq!(event.command.as_deref(), Some("dd"), "{event:?}");
    }
    for event in &completed {
        assert_eq!(event.error, Some(0), "{event:?}");
    }
    // Each completion follows its dispatch in time.
    for (issue, complete) in issued.iter().zip(&completed) {
        assert_eq!(issue.sector, complete.sector);
        assert!(complete.time_ns >= issue.time_ns, "{issue:?} {complete:?}");
    }

    let name = disk.path().to_str().unwrap();
    let (log, _) = capture.iolog(name);
    let text = log.to_text().unwrap();
    let read_back = Iolog::parse("capture", &text).unwrap();
    let offsets: Vec<u64> = read_back
        .records
        .iter()
        .filter_map(|record| match record.action {
            Action::Io { action: IoAction::Write, offset_bytes, length_bytes } => {
                assert_eq!(length_bytes, 4096);
                Some(offset_bytes)
            }
            _ => None,
        })
        .collect();
    assert_eq!(offsets, expected.iter().map(|sector| sector * 512).collect::<Vec<_>>());

    let mut blkparse = Vec::new();
    capture.write_blkparse(&mut blkparse).unwrap();
    let blkparse = String::from_utf8(blkparse).unwrap();
    let dispatch_lines = blkparse
        .lines()
        .filter(|line| line.split_whitespace().nth(5) == Some("D") && line.contains(" W"))
        .count();
    assert_eq!(dispatch_lines as u64, WRITES, "{blkparse}");
}

// Proves a path that is no block device is refused with its name, and a partition-less
// missing device too (no capture is started, nothing is mounted).
#[test]
fn refuses_what_is_not_a_whole_block_device() {
    let error = TracedDevice::open("/dev/null").unwrap_err().to_string();
    assert!(error.contains("/dev/null") && error.contains("not a block device"), "{error}");
    let error = TracedDevice::open("no-such-disk-xyz").unwrap_err().to_string();
    assert!(error.contains("/dev/no-such-disk-xyz"), "{error}");
}

// Proves a capture removes an instance left by an `elevator trace` that was killed outright
// (its process gone), says so, and leaves instances of live processes and of other tools.
#[test]
fn a_capture_removes_instances_whose_process_is_gone() {
    let Some(disk) = TestDisk::attach("a_capture_removes_stale_instances", 8 << 20) else {
        return;
    };
    let _alone = one_at_a_time();
    // Mounted by the test when needed, so that the instances can be made before the capture.
    let mounted_here = tracefs_mounts().is_empty();
    if mounted_here {
        common::run("mount", &["-t", "tracefs", "nodev", "/sys/kernel/tracing"]);
    }
    struct Unmount(bool);
    impl Drop for Unmount {
        fn drop(&mut self) {
            if self.0 {
                common::cleanup("umount", &["/sys/kernel/tracing"]);
            }
        }
    }
    let _unmount = Unmount(mounted_here);
    let instances = tracefs_mounts()[0].join("instances");
    // A PID that is no process now: past the kernel's pid_max.
    let pid_max: u32 =
        std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    let stale = instances.join(format!("elevator-{}", pid_max + 1));
    let foreign = instances.join(format!("other-tool-{}", pid_max + 1));
    std::fs::create_dir(&stale).unwrap();
    std::fs::create_dir(&foreign).unwrap();
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let (_stale_guard, _foreign_guard) = (Remove(stale.clone()), Remove(foreign.clone()));

    let device = TracedDevice::open(disk.path().to_str().unwrap()).unwrap();
    let options = CaptureOptions {
        duration: Some(elevator_core::Duration::from_millis(100)),
        ..CaptureOptions::default()
    };
    let capture = trace::capture(&device, &options, &AtomicBool::new(false)).unwrap();
    assert!(!stale.exists(), "the stale instance is still there");
    assert!(foreign.exists(), "another tool's instance was removed");
    let said = capture.notes.iter().any(|note| note.contains(&stale.display().to_string()));
    assert!(said, "{:?}", capture.notes);
}
