//! The driver against a fake `/sys` tree in a temp directory: what it reads, what it writes,
//! and every error path — including the refusals (busy, permission, invalid) that a plain
//! file cannot produce, injected through `AttrIo` exactly as the kernel returns them.

use std::io;
use std::path::Path;
use std::sync::Arc;

use elevator_kernel::persist::{self, Rule};
use elevator_kernel::queue::{queue_info, set_scheduler, tune};
use elevator_kernel::{AttrIo, FileIo, KernelError, RestoreGuard, Setting, Snapshot, Sysfs};

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
