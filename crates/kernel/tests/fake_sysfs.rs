//! The driver against a fake `/sys` tree in a temp directory: what it reads, what it writes,
//! and every error path — including the refusals (busy, permission, invalid) that a plain
//! file cannot produce, injected through `AttrIo` exactly as the kernel returns them.

use std::io;
use std::path::Path;
use std::sync::Arc;

use elevator_kernel::compare::{KernelScheduler, validate};
use elevator_kernel::persist::{self, Rule};
use elevator_kernel::queue::{queue_info, set_scheduler, tune};
use elevator_kernel::{
    AttrIo, FileIo, KernelError, RestoreGuard, Setting, Snapshot, SnapshotStore, Sysfs,
};

/// Writes `path` under `root`, creating directories.
fn put(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// A tree with two disks: `sdz` on bfq (with a partition `sdz1`) and `sdy` on mq-deadline.
fn fake_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (disk, line, wwid) in [
        ("sdz", "mq-deadline kyber [bfq] none\n", "naa.5000c500a1b2c3d4"),
        ("sdy", "[mq-deadline] kyber bfq none\n", "naa.5000c500ffffffff"),
    ] {
        put(root, &format!("block/{disk}/queue/scheduler"), line);
        put(root, &format!("block/{disk}/queue/nr_requests"), "64\n");
        put(root, &format!("block/{disk}/queue/read_ahead_kb"), "128\n");
        put(root, &format!("block/{disk}/queue/max_sectors_kb"), "1280\n");
        put(root, &format!("block/{disk}/queue/max_hw_sectors_kb"), "32767\n");
        put(root, &format!("block/{disk}/queue/rotational"), "1\n");
        put(root, &format!("block/{disk}/queue/zoned"), "none\n");
        put(root, &format!("block/{disk}/device/queue_depth"), "32\n");
        put(root, &format!("block/{disk}/device/wwid"), &format!("{wwid}\n"));
        put(root, &format!("block/{disk}/device/model"), "ST4000NM0035\n");
        put(root, &format!("block/{disk}/size"), "7814037168\n");
        put(root, &format!("block/{disk}/stat"), "1 0 8 0 2 0 16 0 0 3 3 0 0 0 0 0 0\n");
        std::fs::create_dir_all(root.join(format!("block/{disk}/mq/0"))).unwrap();
    }
    put(root, "block/sdz/queue/iosched/slice_idle", "8\n");
    put(root, "block/sdz/queue/iosched/low_latency", "1\n");
    put(root, "block/sdy/queue/iosched/fifo_batch", "16\n");
    put(root, "block/sdz/sdz1/partition", "1\n");
    put(root, "block/sdz/dev", "8:0\n");
    std::fs::create_dir_all(root.join("class/block")).unwrap();
    std::os::unix::fs::symlink(root.join("block/sdz/sdz1"), root.join("class/block/sdz1")).unwrap();
    dir
}

/// Plain files, except that writes to attributes ending in `suffix` fail with `errno`.
#[derive(Debug)]
struct Refusing {
    suffix: &'static str,
    errno: i32,
}

impl AttrIo for Refusing {
    fn read(&self, path: &Path) -> io::Result<String> {
        FileIo.read(path)
    }

    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        if path.ends_with(self.suffix) {
            return Err(io::Error::from_raw_os_error(self.errno));
        }
        FileIo.write(path, value)
    }
}

fn refusing(root: &Path, suffix: &'static str, errno: i32) -> Sysfs {
    Sysfs::at(root).with_io(Arc::new(Refusing { suffix, errno }))
}

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).unwrap().trim().to_owned()
}

#[test]
fn show_reads_every_attribute_of_a_device() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let info = queue_info(&sysfs, &device).unwrap();
    assert_eq!(info.scheduler.current, "bfq");
    assert_eq!(info.scheduler.available, ["mq-deadline", "kyber", "bfq", "none"]);
    assert_eq!(info.scheduler_line, "mq-deadline kyber [bfq] none");
    assert_eq!(info.rotational, Some(true));
    assert_eq!(info.nr_requests, Some(64));
    assert_eq!(info.read_ahead_kb, Some(128));
    assert_eq!(info.max_sectors_kb, Some(1280));
    assert_eq!(info.hw_queue_depth, Some(32));
    assert_eq!(info.hw_queues, Some(1));
    assert_eq!(info.size_bytes, Some(7_814_037_168 * 512));
    assert_eq!(info.model.as_deref(), Some("ST4000NM0035"));
    assert_eq!(info.tunables.get("slice_idle").map(String::as_str), Some("8"));
    assert_eq!(info.tunables.len(), 2);
    let all: Vec<String> = sysfs.devices().unwrap().into_iter().map(|d| d.name).collect();
    assert_eq!(all, ["sdy", "sdz"]);
}

#[test]
fn a_partition_resolves_to_its_disk() {
    let tree = fake_tree();
    let device = Sysfs::at(tree.path()).device("sdz1").unwrap();
    assert_eq!(device.name, "sdz");
    assert_eq!(device.partition.as_deref(), Some("sdz1"));
}

#[test]
fn what_is_not_a_block_device_is_refused_with_what_it_is() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let missing = sysfs.device("sdq").unwrap_err();
    assert!(matches!(missing, KernelError::NotABlockDevice { .. }), "{missing}");
    assert!(missing.to_string().contains("sdy, sdz"), "lists the devices: {missing}");
    let file = tree.path().join("block/sdz/size");
    let regular = sysfs.device(file.to_str().unwrap()).unwrap_err();
    assert!(regular.to_string().contains("regular file"), "{regular}");
    let null = sysfs.device("/dev/null").unwrap_err();
    assert!(null.to_string().contains("character device"), "{null}");
}

#[test]
fn set_switches_and_reads_back() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let line = set_scheduler(&sysfs, &device, "kyber").unwrap();
    assert_eq!(line.current, "kyber");
    assert_eq!(read(tree.path(), "block/sdz/queue/scheduler"), "kyber");
    // `deadline` is the kernel's alias of mq-deadline.
    assert_eq!(set_scheduler(&sysfs, &device, "deadline").unwrap().current, "mq-deadline");
}

#[test]
fn an_unknown_scheduler_is_refused_with_the_list_and_nothing_is_written() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let error = set_scheduler(&sysfs, &device, "cfq").unwrap_err();
    match &error {
        KernelError::UnknownScheduler { available, hint, .. } => {
            assert_eq!(available, &["mq-deadline", "kyber", "bfq", "none"]);
            assert!(hint.contains("Linux 5.0"), "{hint}");
        }
        other => panic!("expected UnknownScheduler, got {other}"),
    }
    assert!(error.to_string().contains("mq-deadline, kyber, bfq, none"), "{error}");
    assert_eq!(read(tree.path(), "block/sdz/queue/scheduler"), "mq-deadline kyber [bfq] none");
}

#[test]
fn a_scheduler_the_kernel_rejects_is_unknown_with_the_list() {
    let tree = fake_tree();
    let sysfs = refusing(tree.path(), "scheduler", 22);
    let device = sysfs.device("sdz").unwrap();
    let error = set_scheduler(&sysfs, &device, "kyber").unwrap_err();
    assert!(matches!(error, KernelError::UnknownScheduler { .. }), "{error}");
    assert!(error.to_string().contains("kyber-iosched"), "{error}");
}

#[test]
fn a_busy_queue_is_a_retryable_error() {
    let tree = fake_tree();
    let sysfs = refusing(tree.path(), "scheduler", 16);
    let device = sysfs.device("sdz").unwrap();
    let error = set_scheduler(&sysfs, &device, "none").unwrap_err();
    assert!(matches!(error, KernelError::Busy { .. }), "{error}");
    assert!(error.is_retryable());
    assert!(error.to_string().contains("try again"), "{error}");
}

#[test]
fn permission_denied_says_root_is_needed() {
    let tree = fake_tree();
    for errno in [1, 13] {
        let sysfs = refusing(tree.path(), "scheduler", errno);
        let device = sysfs.device("sdz").unwrap();
        let error = set_scheduler(&sysfs, &device, "none").unwrap_err();
        assert!(matches!(error, KernelError::PermissionDenied { .. }), "{error}");
        assert!(!error.is_retryable());
        assert!(error.to_string().contains("needs root"), "{error}");
    }
}

#[test]
fn tune_writes_tunables_and_queue_attributes_and_reports_before_and_after() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let settings = [
        Setting::parse("sdz", "slice_idle=0").unwrap(),
        Setting::parse("sdz", "nr_requests=32").unwrap(),
    ];
    let applied = tune(&sysfs, &device, &settings).unwrap();
    assert_eq!(applied[0].key, "slice_idle");
    assert_eq!((applied[0].before.as_str(), applied[0].after.as_str()), ("8", "0"));
    assert_eq!((applied[1].before.as_str(), applied[1].after.as_str()), ("64", "32"));
    assert_eq!(read(tree.path(), "block/sdz/queue/iosched/slice_idle"), "0");
    assert_eq!(read(tree.path(), "block/sdz/queue/nr_requests"), "32");
}

#[test]
fn tune_refuses_a_key_the_current_scheduler_lacks_and_writes_nothing() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let settings = [
        Setting::parse("sdz", "nr_requests=32").unwrap(),
        Setting::parse("sdz", "fifo_batch=8").unwrap(),
    ];
    let error = tune(&sysfs, &device, &settings).unwrap_err();
    match &error {
        KernelError::UnknownKey { key, scheduler, accepted, .. } => {
            assert_eq!((key.as_str(), scheduler.as_str()), ("fifo_batch", "bfq"));
            assert!(accepted.iter().any(|k| k == "slice_idle"), "{accepted:?}");
            assert!(accepted.iter().any(|k| k == "nr_requests"), "{accepted:?}");
        }
        other => panic!("expected UnknownKey, got {other}"),
    }
    assert_eq!(read(tree.path(), "block/sdz/queue/nr_requests"), "64", "nothing written");
    let bad = tune(&sysfs, &device, &[Setting::parse("sdz", "slice_idle=soon").unwrap()]);
    assert!(matches!(bad, Err(KernelError::BadSetting { .. })), "{bad:?}");
    let rejected = refusing(tree.path(), "slice_idle", 22);
    let error = tune(&rejected, &device, &[Setting::parse("sdz", "slice_idle=99999999").unwrap()]);
    assert!(matches!(error, Err(KernelError::Rejected { .. })), "{error:?}");
}

#[test]
fn the_guard_restores_scheduler_tunables_and_attributes_when_dropped() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let before = Snapshot::take(&sysfs, &device).unwrap();
    {
        let _guard = RestoreGuard::new(&sysfs, &device).unwrap();
        tune(&sysfs, &device, &[Setting::parse("sdz", "slice_idle=0").unwrap()]).unwrap();
        tune(&sysfs, &device, &[Setting::parse("sdz", "read_ahead_kb=4").unwrap()]).unwrap();
        set_scheduler(&sysfs, &device, "none").unwrap();
    }
    assert_eq!(Snapshot::take(&sysfs, &device).unwrap(), before);
    // Restored exactly once: a second restore through a handle changes nothing.
    let guard = RestoreGuard::new(&sysfs, &device).unwrap();
    let handle = guard.handle();
    assert_eq!(guard.restore().unwrap(), Vec::<String>::new());
    assert_eq!(handle.restore_now().unwrap(), Vec::<String>::new());
}

#[test]
fn the_guard_restores_after_a_panic() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let before = Snapshot::take(&sysfs, &device).unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _guard = RestoreGuard::new(&sysfs, &device).unwrap();
        set_scheduler(&sysfs, &device, "kyber").unwrap();
        panic!("a benchmark failed half-way");
    }));
    assert!(outcome.is_err());
    assert_eq!(Snapshot::take(&sysfs, &device).unwrap(), before);
}

#[test]
fn a_persisted_rule_parses_and_matches_only_its_device() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let settings = [
        Setting::parse("sdz", "slice_idle=0").unwrap(),
        Setting::parse("sdz", "nr_requests=32").unwrap(),
    ];
    let plan = persist::plan(&sysfs, &device, "bfq", &settings, "test").unwrap();
    assert!(plan.warnings.iter().all(|w| !w.contains("kernel name")), "{:?}", plan.warnings);
    let line = plan.text.lines().find(|l| !l.starts_with('#') && !l.is_empty()).unwrap();
    let rule = Rule::parse(line).unwrap();
    assert_eq!(rule, plan.rule);
    assert!(line.contains("ATTRS{wwid}==\"naa.5000c500a1b2c3d4\""), "{line}");
    let assignments = rule.matches(&sysfs, &device).expect("the rule matches sdz");
    let order: Vec<&str> = assignments.iter().map(|(attr, _)| attr.as_str()).collect();
    assert_eq!(order, ["queue/scheduler", "queue/iosched/slice_idle", "queue/nr_requests"]);
    let other = sysfs.device("sdy").unwrap();
    assert_eq!(rule.matches(&sysfs, &other), None, "sdy has another WWID");
    assert!(plan.text.contains("elevator="), "says elevator= has no effect");

    let rules = tempfile::tempdir().unwrap();
    let (path, _) = persist::apply(&plan, &device, rules.path(), false).unwrap();
    assert_eq!(path, rules.path().join("99-elevator-sdz.rules"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), plan.text);
}

#[test]
fn persist_refuses_unknown_schedulers_and_tunables() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let error = persist::plan(&sysfs, &device, "cfq", &[], "test").unwrap_err();
    assert!(matches!(error, KernelError::UnknownScheduler { .. }), "{error}");
    let bad = [Setting::parse("sdz", "fifo_batch=8").unwrap()];
    let error = persist::plan(&sysfs, &device, "bfq", &bad, "test").unwrap_err();
    assert!(matches!(error, KernelError::UnknownKey { .. }), "{error}");
}

#[test]
fn a_device_without_a_stable_id_is_matched_by_name_with_a_warning() {
    let tree = fake_tree();
    std::fs::remove_file(tree.path().join("block/sdz/device/wwid")).unwrap();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let plan = persist::plan(&sysfs, &device, "none", &[], "test").unwrap();
    assert!(plan.rule.render().contains("KERNEL==\"sdz\""), "{}", plan.rule.render());
    assert!(
        plan.warnings.iter().any(|w| w.contains("can change between boots")),
        "{:?}",
        plan.warnings
    );
}

/// Makes the owner recorded in `file` a process that is gone: the same pid with another
/// start time, as after the kernel reused the pid.
fn orphan(file: &Path) {
    let text = std::fs::read_to_string(file).unwrap();
    let text: Vec<String> = text
        .lines()
        .map(|line| {
            if line.starts_with("owner_start_ticks ") {
                "owner_start_ticks 1".to_owned()
            } else {
                line.to_owned()
            }
        })
        .collect();
    std::fs::write(file, text.join("\n") + "\n").unwrap();
}

// Proves the life of a snapshot on disk: the guard writes it under the tree's state directory
// keyed by name and MAJ:MIN; a guard whose process died (its destructor never ran) leaves it
// stale; nothing takes a new snapshot over a stale one; the store's restore puts the device
// back as the snapshot says and removes it, after which the device can be changed again.
#[test]
fn a_snapshot_left_by_a_dead_process_blocks_changes_until_restored() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let before = Snapshot::take(&sysfs, &device).unwrap();
    let guard = RestoreGuard::new(&sysfs, &device).unwrap();
    let file = guard.file().unwrap();
    assert_eq!(file, tree.path().join("elevator-state/sdz@8:0/snapshot"));
    set_scheduler(&sysfs, &device, "kyber").unwrap();
    tune(&sysfs, &device, &[Setting::parse("sdz", "read_ahead_kb=16").unwrap()]).unwrap();
    // Killed: no destructor runs, and the pid now belongs to no process of that start time.
    std::mem::forget(guard);
    orphan(&file);

    let store = SnapshotStore::new(&sysfs);
    let refused = RestoreGuard::new(&sysfs, &device).unwrap_err();
    assert!(matches!(refused, KernelError::StaleSnapshot { .. }), "{refused}");
    assert!(!refused.is_retryable());
    assert!(refused.to_string().contains("elevator kernel restore sdz"), "{refused}");
    assert!(refused.to_string().contains("--discard"), "{refused}");
    assert_eq!(read(tree.path(), "block/sdz/queue/scheduler"), "kyber", "nothing changed");

    let all = store.all().unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].as_ref().unwrap().snapshot, before);
    let (stored, changed) = store.restore(&device).unwrap().expect("a snapshot");
    assert_eq!(stored.dev.as_deref(), Some("8:0"));
    assert!(changed.contains(&"scheduler: kyber -> bfq".to_owned()), "{changed:?}");
    assert!(changed.contains(&"read_ahead_kb: 16 -> 128".to_owned()), "{changed:?}");
    assert_eq!(Snapshot::take(&sysfs, &device).unwrap(), before);
    assert!(!file.exists() && !file.parent().unwrap().exists(), "the snapshot is gone");
    assert!(store.restore(&device).unwrap().is_none());
    drop(RestoreGuard::new(&sysfs, &device).unwrap());
}

// Proves `--discard`: the snapshot goes and the device keeps what it has; and a snapshot
// whose owner still runs is neither restored nor discarded by another process (retryable).
#[test]
fn a_snapshot_can_be_discarded_but_not_taken_from_its_running_owner() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdy").unwrap();
    let guard = RestoreGuard::new(&sysfs, &device).unwrap();
    let file = guard.file().unwrap();
    assert_eq!(file, tree.path().join("elevator-state/sdy/snapshot"), "no MAJ:MIN: the name");
    set_scheduler(&sysfs, &device, "none").unwrap();
    let store = SnapshotStore::new(&sysfs);
    std::mem::forget(guard);
    orphan(&file);
    let discarded = store.discard(&device).unwrap().expect("a snapshot");
    assert_eq!(discarded.snapshot.scheduler, "mq-deadline");
    assert!(!file.exists());
    assert_eq!(read(tree.path(), "block/sdy/queue/scheduler"), "none", "kept as it is");

    // A snapshot whose owner runs (here: init, with its real start time) is its owner's.
    let guard = RestoreGuard::new(&sysfs, &device).unwrap();
    let file = guard.file().unwrap();
    std::mem::forget(guard);
    let stat = std::fs::read_to_string("/proc/1/stat").unwrap();
    let start = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().nth(19).unwrap().to_owned();
    let text = std::fs::read_to_string(&file).unwrap();
    let text: Vec<String> = text
        .lines()
        .map(|line| match line.split_once(' ') {
            Some(("owner_pid", _)) => "owner_pid 1".to_owned(),
            Some(("owner_start_ticks", _)) => format!("owner_start_ticks {start}"),
            _ => line.to_owned(),
        })
        .collect();
    std::fs::write(&file, text.join("\n") + "\n").unwrap();
    for error in [store.restore(&device).unwrap_err(), store.discard(&device).unwrap_err()] {
        assert!(matches!(error, KernelError::InUse { pid: 1, .. }), "{error}");
        assert!(error.is_retryable());
    }
    assert!(file.exists());
}

// Proves a guard's `keep_changes` (what `kernel set` and `tune` do on success) forgets the
// snapshot without restoring, and that a tune refused half-way is undone by the guard.
#[test]
fn kept_changes_forget_the_snapshot_and_a_failed_tune_is_undone() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdz").unwrap();
    let guard = RestoreGuard::new(&sysfs, &device).unwrap();
    let file = guard.file().unwrap();
    tune(&sysfs, &device, &[Setting::parse("sdz", "slice_idle=2").unwrap()]).unwrap();
    guard.keep_changes().unwrap();
    assert!(!file.exists());
    assert_eq!(read(tree.path(), "block/sdz/queue/iosched/slice_idle"), "2");

    let refusing = refusing(tree.path(), "nr_requests", 22);
    let settings = [
        Setting::parse("sdz", "slice_idle=0").unwrap(),
        Setting::parse("sdz", "nr_requests=100000").unwrap(),
    ];
    {
        let _guard = RestoreGuard::new(&refusing, &device).unwrap();
        let error = tune(&refusing, &device, &settings).unwrap_err();
        assert!(matches!(error, KernelError::Rejected { .. }), "{error}");
        assert_eq!(read(tree.path(), "block/sdz/queue/iosched/slice_idle"), "0", "half-way");
    }
    assert_eq!(read(tree.path(), "block/sdz/queue/iosched/slice_idle"), "2", "undone");
    assert!(SnapshotStore::new(&sysfs).all().unwrap().is_empty());
}

// Proves every `-s` entry is checked before anything is switched: a tunable of a scheduler
// that is not current is checked against that scheduler's kernel tunables, and the error
// names the key, the scheduler and what it accepts.
#[test]
fn compare_settings_are_checked_before_the_first_switch() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path());
    let device = sysfs.device("sdy").unwrap();
    let parse = |text: &str| KernelScheduler::parse("sdy", text).unwrap();
    let good = [parse("none"), parse("bfq:slice_idle=0,nr_requests=32"), parse("kyber")];
    validate(&sysfs, &device, &good).unwrap();
    let error = validate(&sysfs, &device, &[parse("none"), parse("bfq:nosuch=1")]).unwrap_err();
    match &error {
        KernelError::UnknownKey { key, scheduler, accepted, .. } => {
            assert_eq!((key.as_str(), scheduler.as_str()), ("nosuch", "bfq"));
            for name in ["slice_idle", "low_latency", "nr_requests", "read_ahead_kb"] {
                assert!(accepted.iter().any(|a| a == name), "{name}: {accepted:?}");
            }
            assert!(!accepted.iter().any(|a| a == "fifo_batch"), "{accepted:?}");
        }
        other => panic!("expected UnknownKey, got {other}"),
    }
    let error = validate(&sysfs, &device, &[parse("bfq:fifo_batch=8")]).unwrap_err();
    assert!(error.to_string().contains("is a tunable of mq-deadline"), "{error}");
    let error = validate(&sysfs, &device, &[parse("kyber:read_lat_nsec=soon")]).unwrap_err();
    assert!(matches!(error, KernelError::BadSetting { .. }), "{error}");
    let error = validate(&sysfs, &device, &[parse("none"), parse("cfq")]).unwrap_err();
    assert!(matches!(error, KernelError::UnknownScheduler { .. }), "{error}");
    assert_eq!(read(tree.path(), "block/sdy/queue/scheduler"), "[mq-deadline] kyber bfq none");
}

/// Plain files, except that `read_ahead_kb` keeps whole 4 KiB pages, as the kernel does.
#[derive(Debug)]
struct Rounding;

impl AttrIo for Rounding {
    fn read(&self, path: &Path) -> io::Result<String> {
        FileIo.read(path)
    }

    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        if path.ends_with("read_ahead_kb") {
            let kb: u64 = value.parse().map_err(|_| io::Error::from_raw_os_error(22))?;
            return FileIo.write(path, &(kb / 4 * 4).to_string());
        }
        FileIo.write(path, value)
    }
}

// Proves a value the kernel rounds is reported as asked and kept.
#[test]
fn a_rounded_value_is_reported_as_asked_and_kept() {
    let tree = fake_tree();
    let sysfs = Sysfs::at(tree.path()).with_io(Arc::new(Rounding));
    let device = sysfs.device("sdz").unwrap();
    let settings = [
        Setting::parse("sdz", "read_ahead_kb=5").unwrap(),
        Setting::parse("sdz", "slice_idle=3").unwrap(),
    ];
    let applied = tune(&sysfs, &device, &settings).unwrap();
    assert_eq!(
        applied[0].adjustment().as_deref(),
        Some("read_ahead_kb: asked 5, the kernel keeps 4")
    );
    assert_eq!(applied[1].adjustment(), None);
}
