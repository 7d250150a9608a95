//! The driver against the real sysfs of loop devices the tests create and remove (as root;
//! skipped with the reason otherwise, failed under CI=true). Each device is put back as found
//! before it is detached ([`support::TestDisk`]).

mod support;

use elevator_kernel::compare::{self, CompareOptions, KernelScheduler};
use elevator_kernel::persist::{self, Rule};
use elevator_kernel::queue::{queue_info, set_scheduler, tune};
use elevator_kernel::{KernelError, RestoreGuard, Setting, Snapshot, SnapshotStore, Sysfs};
use elevator_live::passthrough::PassthroughOptions;
use elevator_live::{Target, TargetOptions};
use elevator_report::Mode;
use elevator_workload::WorkloadSpec;

use support::TestDisk;
use support::common;

/// A writable tunable of the current scheduler and a different value for it.
fn some_tunable(sysfs: &Sysfs, device: &elevator_kernel::BlockDevice) -> Option<(String, String)> {
    use std::os::unix::fs::PermissionsExt;
    sysfs.iosched(device).into_iter().find_map(|(name, value)| {
        let path = device.queue_attr(&format!("iosched/{name}"));
        let writable = std::fs::metadata(&path).is_ok_and(|m| m.permissions().mode() & 0o200 != 0);
        let number: u64 = value.parse().ok()?;
        // Booleans flip; anything else doubles (or becomes 1), which every range here takes.
        let other = match (name.as_str(), number) {
            (_, 0) => 1,
            (_, 1) => 0,
            (_, n) => n * 2,
        };
        (writable && name != "async_depth").then(|| (name, other.to_string()))
    })
}

#[test]
fn show_parses_a_loop_devices_sysfs() {
    let Some(disk) = TestDisk::attach("show_parses_a_loop_devices_sysfs", 16 << 20) else {
        return;
    };
    let sysfs = disk.sysfs().clone();
    let device = sysfs.device(disk.path().to_str().unwrap()).unwrap();
    assert_eq!(device.name, disk.name());
    let info = queue_info(&sysfs, &device).unwrap();
    assert!(info.scheduler.available.contains(&info.scheduler.current), "{info:?}");
    assert!(info.scheduler.available.iter().any(|s| s == "none"), "{info:?}");
    assert!(info.nr_requests.is_some_and(|n| n > 0), "{info:?}");
    assert!(info.read_ahead_kb.is_some(), "{info:?}");
    assert!(info.max_sectors_kb.is_some_and(|kb| kb > 0), "{info:?}");
    assert!(info.hw_queue_depth.is_some_and(|d| d > 0), "{info:?}");
    assert_eq!(info.size_bytes, Some(16 << 20));
    // The tunables shown are the current scheduler's directory, entry for entry.
    let listed = std::fs::read_dir(device.queue_attr("iosched")).map_or(0, |d| d.count());
    assert_eq!(info.tunables.len(), listed);
    assert!(sysfs.devices().unwrap().iter().any(|d| d.name == disk.name()));
}

#[test]
fn set_and_tune_round_trip_on_a_loop_device() {
    let Some(disk) = TestDisk::attach("set_and_tune_round_trip_on_a_loop_device", 16 << 20) else {
        return;
    };
    let sysfs = disk.sysfs().clone();
    let device = sysfs.device(&disk.name()).unwrap();
    let before = Snapshot::take(&sysfs, &device).unwrap();
    let guard = RestoreGuard::new(&sysfs, &device).unwrap();
    let offered = sysfs.scheduler(&device).unwrap().available;
    for name in &offered {
        let line = set_scheduler(&sysfs, &device, name).unwrap();
        assert_eq!(&line.current, name);
        if let Some((key, value)) = some_tunable(&sysfs, &device) {
            let setting = Setting { key: key.clone(), value: value.clone() };
            let applied = tune(&sysfs, &device, &[setting]).unwrap();
            assert_eq!(applied[0].after, value, "{name}.{key}");
            assert_eq!(sysfs.read(&device.queue_attr(&format!("iosched/{key}"))).unwrap(), value);
        }
        let applied =
            tune(&sysfs, &device, &[Setting::parse("x", "read_ahead_kb=64").unwrap()]).unwrap();
        assert_eq!(applied[0].after, "64");
    }
    let unknown = tune(&sysfs, &device, &[Setting::parse("x", "no_such_tunable=1").unwrap()]);
    assert!(unknown.is_err());
    guard.restore().unwrap();
    assert_eq!(Snapshot::take(&sysfs, &device).unwrap(), before);
}

#[test]
fn compare_runs_every_offered_scheduler_and_leaves_the_device_as_found() {
    let Some(disk) = TestDisk::attach("compare_runs_every_offered_scheduler", 64 << 20) else {
        return;
    };
    let sysfs = disk.sysfs().clone();
    let device = sysfs.device(&disk.name()).unwrap();
    // Start from something other than the defaults, so that restoring is visible.
    set_scheduler(&sysfs, &device, "mq-deadline").unwrap();
    tune(
        &sysfs,
        &device,
        &[
            Setting::parse("x", "fifo_batch=4").unwrap(),
            Setting::parse("x", "nr_requests=32").unwrap(),
        ],
    )
    .unwrap();
    let before = Snapshot::take(&sysfs, &device).unwrap();
    let offered = sysfs.scheduler(&device).unwrap().available;

    let target =
        Target::open(disk.path(), &TargetOptions { write: true, ..Default::default() }).unwrap();
    let workload = WorkloadSpec::parse("job:rw=randrw,bs=4k,iodepth=4,numjobs=2,size=2m").unwrap();
    let options = CompareOptions {
        schedulers: Vec::new(),
        seed: 1,
        passthrough: PassthroughOptions::default(),
    };
    let guard = RestoreGuard::new(&sysfs, &device).unwrap();
    let mut started = Vec::new();
    let runs = compare::compare(
        &sysfs,
        &device,
        &target,
        &workload,
        &options,
        &guard,
        &mut |scheduler: &KernelScheduler, _: &[_]| started.push(scheduler.name.clone()),
        &mut |_| {},
    )
    .unwrap();
    guard.restore().unwrap();
    assert_eq!(started, offered);
    let names: Vec<&str> = runs.iter().map(|r| r.run.scheduler.as_str()).collect();
    assert_eq!(names, offered.iter().map(String::as_str).collect::<Vec<_>>());
    for run in &runs {
        assert_eq!(run.run.mode, Mode::Kernel);
        assert_eq!(run.io_errors.0, 0, "{:?}", run.io_errors);
        let phase = &run.run.phases[0];
        // Two jobs of 2 MiB each, every byte accounted.
        assert_eq!(phase.bytes, 4 << 20, "{}", run.run.scheduler);
        assert!(run.run.device_stats.requests > 0, "the kernel counted requests");
        let line = &run.run.config["kernel.scheduler_line"];
        assert!(line.contains(&format!("[{}]", run.run.scheduler)), "{line}");
    }
    assert_eq!(Snapshot::take(&sysfs, &device).unwrap(), before, "left as found");
}

#[test]
fn a_persisted_rule_matches_the_loop_device_by_its_backing_file_only() {
    let Some(first) = TestDisk::attach("persist_first", 8 << 20) else { return };
    let Some(second) = TestDisk::attach("persist_second", 8 << 20) else { return };
    let sysfs = first.sysfs().clone();
    let device = sysfs.device(&first.name()).unwrap();
    let settings = [Setting::parse("x", "read_ahead_kb=256").unwrap()];
    let plan = persist::plan(&sysfs, &device, "mq-deadline", &settings, "test").unwrap();
    let line = plan.text.lines().find(|l| !l.starts_with('#') && !l.is_empty()).unwrap();
    assert!(line.contains("ATTR{loop/backing_file}"), "{line}");
    let rule = Rule::parse(line).unwrap();
    let assignments = rule.matches(&sysfs, &device).expect("matches its own device");
    assert_eq!(assignments[0], ("queue/scheduler".to_owned(), "mq-deadline".to_owned()));
    let other = sysfs.device(&second.name()).unwrap();
    assert_eq!(rule.matches(&sysfs, &other), None);
    // What udev would do, done: the assignments applied in order take on the device.
    let guard = RestoreGuard::new(&sysfs, &device).unwrap();
    for (attr, value) in &assignments {
        sysfs.write(&device.queue_attr(attr.strip_prefix("queue/").unwrap()), value).unwrap();
    }
    assert_eq!(sysfs.scheduler(&device).unwrap().current, "mq-deadline");
    assert_eq!(sysfs.read(&device.queue_attr("read_ahead_kb")).unwrap(), "256");
    guard.restore().unwrap();
    if common::have("udevadm") {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(&plan.file_name);
        std::fs::write(&file, &plan.text).unwrap();
        // `verify` exists from systemd 253; older udevadm has no offline checker.
        let output =
            std::process::Command::new("udevadm").arg("verify").arg(&file).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !stderr.contains("Unknown command") && !stderr.contains("unknown command") {
            assert!(output.status.success(), "udevadm verify: {stderr}");
        }
    }
}

// Proves the guard keeps its snapshot on disk while armed (so a killed process leaves a way
// back), that the file holds the scheduler, its tunables and the queue attributes `-s` may
// set, and that restoring removes it.
#[test]
fn the_guard_keeps_its_snapshot_on_disk_until_the_device_is_back() {
    let Some(disk) = TestDisk::attach("the_guard_keeps_its_snapshot_on_disk", 16 << 20) else {
        return;
    };
    let (sysfs, device) = (disk.sysfs(), disk.device());
    set_scheduler(sysfs, device, "mq-deadline").unwrap();
    // Not the default read-ahead: writing rotational recomputes it, so a restore that wrote
    // read_ahead_kb before rotational would end at the default instead.
    tune(sysfs, device, &[Setting::parse("x", "read_ahead_kb=64").unwrap()]).unwrap();
    let before = Snapshot::take(sysfs, device).unwrap();
    let guard = RestoreGuard::new(sysfs, device).unwrap();
    let file = guard.file().unwrap();
    assert!(file.starts_with(disk.state_dir()), "{}", file.display());
    let dev = sysfs.read(&device.dir.join("dev")).unwrap();
    assert!(file.ends_with(format!("{}@{dev}/snapshot", device.name)), "{}", file.display());
    let text = std::fs::read_to_string(&file).unwrap();
    for line in ["scheduler mq-deadline", "tunable fifo_batch ", "attribute nr_requests "] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert!(text.contains("attribute rotational "), "queue attributes -s may set: {text}");
    // A second guard on the same device is refused while the first is armed.
    let second = RestoreGuard::new(sysfs, device).unwrap_err();
    assert!(matches!(second, KernelError::InUse { .. }), "{second}");
    set_scheduler(sysfs, device, "bfq").unwrap();
    tune(sysfs, device, &[Setting::parse("x", "rotational=0").unwrap()]).unwrap();
    let changed = guard.restore().unwrap();
    assert!(changed.iter().any(|c| c.starts_with("scheduler: bfq -> mq-deadline")), "{changed:?}");
    assert!(changed.iter().any(|c| c.starts_with("rotational:")), "{changed:?}");
    assert_eq!(Snapshot::take(sysfs, device).unwrap(), before);
    assert!(!file.exists(), "the snapshot is removed once restored");
    assert!(SnapshotStore::new(sysfs).all().unwrap().is_empty());
}

// Proves the test disks put their device back before detaching it: a device changed in every
// way the tests change one (scheduler, tunable, queue attributes) reads as found afterwards.
#[test]
fn a_test_disk_is_put_back_as_found() {
    let Some(disk) = TestDisk::attach("a_test_disk_is_put_back_as_found", 8 << 20) else {
        return;
    };
    let (sysfs, device) = (disk.sysfs(), disk.device());
    let other = if disk.found().scheduler == "bfq" { "kyber" } else { "bfq" };
    set_scheduler(sysfs, device, other).unwrap();
    let settings = ["nr_requests=16", "read_ahead_kb=8", "rotational=0", "nomerges=1"];
    let settings: Vec<Setting> = settings.iter().map(|s| Setting::parse("x", s).unwrap()).collect();
    tune(sysfs, device, &settings).unwrap();
    assert_ne!(&disk.now(), disk.found());
    assert!(!disk.put_back().is_empty());
    assert_eq!(&disk.now(), disk.found());
}
