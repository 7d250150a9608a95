//! Real faults under a live run (issue 14): what this machine can do to a device without
//! device-mapper or the kernel's fault injection — a read-only loop device written to, a loop
//! device detached mid-run, a file on a small filesystem that fills up, a file truncated under
//! a run. In each: the errors are reported (never counted as throughput), nothing hangs, the
//! outcome says it failed, and nothing is left behind. (Injected faults, `--inject`, are
//! tested in `run.rs`; SIGKILL during a kernel compare in the kernel driver's tests.)

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use elevator_live::run::{LiveRun, RunOptions, run_workload};
use elevator_live::{BackendChoice, EngineOptions, LiveError, Target, TargetOptions};
use elevator_sched::SchedulerSpec;
use elevator_workload::WorkloadSpec;

use common::{LoopDevice, Tmpfs};

const MIB: u64 = 1 << 20;

/// The faults here change devices and files under running I/O: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn options() -> RunOptions {
    RunOptions {
        engine: EngineOptions {
            scheduler: SchedulerSpec::parse("deadline").unwrap(),
            depth: 4,
            backend: BackendChoice::Auto,
            ..EngineOptions::default()
        },
        verify: false,
        seed: 9,
        stop: None,
        continue_on_error: Default::default(),
    }
}

fn open(path: &Path, write: bool) -> Result<Target, LiveError> {
    Target::open(path, &TargetOptions { write, force: true, create_bytes: None, stop: None })
}

fn run(target: &Target, workload: &str) -> Result<LiveRun, LiveError> {
    run_workload(target, &WorkloadSpec::parse(workload).unwrap(), &options(), &mut |_| {})
}

/// Asserts `live` stopped at a failed I/O, counted as an error and not as throughput.
fn assert_failed(live: &LiveRun, what: &str) {
    let phase = &live.run.phases[0];
    assert!(phase.errors.total() > 0, "{what}: no error counted: {:?}", phase.errors);
    assert!(live.io_errors.0 > 0, "{what}");
    assert!(live.run.partial, "{what}: a run stopped by a failure is partial");
    let reason = live.run.partial_reason.as_deref().unwrap_or_default();
    assert!(reason.starts_with("stopped at the first failed I/O"), "{what}: {reason}");
    assert_eq!(phase.bytes, phase.ops * 4096, "{what}: failed I/O moved no bytes");
}

// Proves a read-only device is refused for writing at open, naming why, before any I/O
// (`losetup -r`).
#[test]
fn a_read_only_loop_device_is_refused_for_writing() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let Some(device) = LoopDevice::attach_read_only("a_read_only_loop_device", 16 * MIB) else {
        return;
    };
    let error = open(device.path(), true).expect_err("a read-only device opened for writing");
    let message = error.to_string();
    assert!(message.contains("ead-only") || message.contains("EROFS"), "{message}");
    // Reading it is fine.
    let target = open(device.path(), false).unwrap();
    let live = run(&target, "job:rw=randread,bs=4k,io_size=256k").unwrap();
    assert!(live.run.phases[0].errors.is_empty());
}

// Proves a loop device detached under a run neither hangs it nor corrupts its figures: the
// kernel detaches a busy loop device lazily (autoclear), so the run finishes its I/O, and the
// device is gone once the run has closed it.
#[test]
fn a_loop_device_detached_mid_run_finishes_and_is_gone_after() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let Some(device) = LoopDevice::attach("a_loop_device_detached", 64 * MIB, false, |_| {}) else {
        return;
    };
    let path = device.path().to_path_buf();
    let target = open(&path, true).unwrap();
    let live = std::thread::scope(|scope| {
        let running = scope
            .spawn(|| run(&target, "job:rw=randrw,bs=4k,iodepth=4,runtime=1500ms,time_based=1"));
        std::thread::sleep(std::time::Duration::from_millis(500));
        common::run("losetup", &["-d", path.to_str().unwrap()]);
        running.join().unwrap()
    })
    .unwrap();
    let phase = &live.run.phases[0];
    assert!(phase.ops > 0);
    assert_eq!(phase.bytes, phase.ops * 4096, "every counted I/O moved its bytes");
    assert!(!live.interrupted || live.io_errors.0 > 0, "stopped only by an error");
    drop(target);
    let listed = common::run("losetup", &["-a"]);
    assert!(!listed.contains(path.to_str().unwrap()), "still attached: {listed}");
    device.forget();
}

// Proves a filesystem filling up under a run (ENOSPC on a sparse file bigger than its tmpfs)
// stops the run at the first failure, counted as a write error, without hanging.
#[test]
fn a_filesystem_that_fills_up_stops_the_run_with_enospc() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let Some(tmpfs) = Tmpfs::mount("a_filesystem_that_fills_up", 4 * MIB) else { return };
    let path = tmpfs.path().join("sparse.img");
    std::fs::File::create(&path).unwrap().set_len(64 * MIB).unwrap();
    let target = open(&path, true).unwrap();
    let live = run(&target, "job:rw=write,bs=4k,iodepth=4,size=32m").unwrap();
    assert_failed(&live, "ENOSPC");
    assert_eq!(live.run.phases[0].errors.write, live.io_errors.0);
    let first = live.io_errors.1.as_deref().unwrap();
    assert!(first.contains("No space left"), "{first}");
    assert!(live.run.phases[0].bytes <= 4 * MIB);
}

// Proves a file truncated under a run stops it with errors (reads past the new end move
// nothing), without hanging.
#[test]
fn a_file_truncated_under_a_run_stops_it() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.img");
    std::fs::write(&path, vec![1u8; (16 * MIB) as usize]).unwrap();
    let target = open(&path, false).unwrap();
    let live = std::thread::scope(|scope| {
        let running =
            scope.spawn(|| run(&target, "job:rw=randread,bs=4k,iodepth=4,runtime=5s,time_based=1"));
        std::thread::sleep(std::time::Duration::from_millis(300));
        let truncated = Command::new("truncate").args(["-s", "0", path.to_str().unwrap()]).status();
        assert!(truncated.unwrap().success());
        running.join().unwrap()
    })
    .unwrap();
    assert_failed(&live, "truncated");
    assert!(live.run.phases[0].duration_ns < 4_000_000_000, "stopped long before its runtime");
}
