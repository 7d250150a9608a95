//! `elevator kernel` as an administrator runs it: on loop devices the tests create, put back
//! as found and remove (as root; skipped with the reason otherwise, failed under CI=true), and
//! against a fake sysfs tree. Every command keeps its snapshots in the test's own directory.

#[path = "../../kernel/tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{TestDisk, common};

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
// exits 143 (128 + SIGTERM) after printing the partial report, which says it is partial and
// why.
#[test]
fn sigterm_mid_compare_restores_the_device() {
    let Some(disk) = TestDisk::attach("sigterm_mid_compare_restores_the_device", 64 << 20) else {
        return;
    };
    let name = disk.name();
    non_default_start(&disk);
    let before = state(&name);

    let child = start_compare(&disk, "bfq:slice_idle=0,nr_requests=16");
    // Wait until the child has switched to bfq and set its tunable: the middle of the run.
    wait_until_switched(&name, || {
        std::fs::read_to_string(format!("/sys/block/{name}/queue/iosched/slice_idle"))
            .is_ok_and(|v| v.trim() == "0")
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_ne!(state(&name), before, "mid-run the device is changed");
    let signal = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(signal.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));
    assert_eq!(state(&name), before, "restored: {}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).expect("a partial report");
    assert_eq!(json["runs"][0]["mode"], "kernel");
    assert_eq!(json["runs"][0]["partial"], true);
    let reason = json["runs"][0]["partial_reason"].as_str().unwrap();
    assert!(reason.starts_with("interrupted by SIGTERM"), "{reason}");
    assert_eq!(json["runs"][0]["scheduler"], "bfq:slice_idle=0,nr_requests=16");
    assert_eq!(json["runs"][0]["config"]["scheduler.slice_idle"], "0");
    assert_eq!(snapshots(&disk), 0, "the snapshot goes with the restore");
}

/// Starts a minute-long compare of `disk` under the kernel's `scheduler` (a JSON report on
/// its piped stdout).
fn start_compare(disk: &TestDisk, scheduler: &str) -> std::process::Child {
    let workload = "job:rw=randread,bs=4k,iodepth=8,numjobs=2,runtime=60s,time_based=1";
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["kernel", &disk.state_arg(), "compare", &disk.name(), "-w", workload])
        .args(["-s", scheduler, "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `device` runs bfq and `tuned` holds: the compare is in its run.
fn wait_until_switched(device: &str, tuned: impl Fn() -> bool) {
    let mut waited = 0;
    while !(attr(device, "scheduler").contains("[bfq]") && tuned()) {
        waited += 1;
        assert!(waited < 1000, "the compare never switched to bfq and tuned it");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sets `disk` to a state unlike the defaults: mq-deadline with its own tunable changed, a
/// smaller nr_requests (which a switch resets) and other queue attributes.
fn non_default_start(disk: &TestDisk) {
    let name = disk.name();
    let state_dir = disk.state_arg();
    let setup = elevator(&["kernel", &state_dir, "set", &name, "mq-deadline"]);
    assert!(setup.status.success(), "{}", stderr(&setup));
    let setup = elevator(&[
        "kernel",
        &state_dir,
        "tune",
        &name,
        "fifo_batch=5",
        "nr_requests=40",
        "read_ahead_kb=64",
    ]);
    assert!(setup.status.success(), "{}", stderr(&setup));
    assert_eq!(snapshots(disk), 0, "set and tune keep their change and forget the snapshot");
}

/// How many snapshot files the test's state directory holds.
fn snapshots(disk: &TestDisk) -> usize {
    std::fs::read_dir(disk.state_dir())
        .map(|entries| {
            entries.filter_map(Result::ok).filter(|e| e.path().join("snapshot").exists()).count()
        })
        .unwrap_or(0)
}

// Proves a compare killed outright (SIGKILL: no handler, no destructor) leaves a stale
// snapshot that names the way back; that every other `kernel` command on the device warns or
// refuses with `elevator kernel restore DEV`; and that `restore` puts the scheduler, its
// tunables, nr_requests, read_ahead_kb and the queue attributes `-s` set back as they were,
// prints what it changed, and removes the snapshot.
#[test]
fn sigkill_mid_compare_leaves_a_snapshot_that_restore_puts_back() {
    let Some(disk) = TestDisk::attach("sigkill_mid_compare_leaves_a_snapshot", 64 << 20) else {
        return;
    };
    let name = disk.name();
    let state_dir = disk.state_arg();
    non_default_start(&disk);
    let before = state(&name);
    let rotational_before = attr(&name, "rotational");

    let mut child = start_compare(&disk, "bfq:slice_idle=0,nr_requests=16,rotational=0");
    // Killed once it has switched and set everything it was asked to (rotational is the last).
    wait_until_switched(&name, || attr(&name, "rotational") == "0");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(state(&name), before, "killed mid-run, the device is left changed");
    assert_eq!(snapshots(&disk), 1, "and a snapshot of it as it was");

    let restore_hint = format!("elevator kernel restore {name}");
    let show = elevator(&["kernel", &state_dir, "show", &name]);
    assert!(show.status.success(), "{}", stderr(&show));
    assert!(stderr(&show).contains(&restore_hint), "show warns: {}", stderr(&show));
    for refused in [
        elevator(&["kernel", &state_dir, "tune", &name, "slice_idle=1"]),
        elevator(&["kernel", &state_dir, "set", &name, "none"]),
    ] {
        assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
        assert!(stderr(&refused).contains(&restore_hint), "{}", stderr(&refused));
        assert!(stderr(&refused).contains("no longer running"), "{}", stderr(&refused));
    }
    assert!(attr(&name, "scheduler").contains("[bfq]"), "the refusals changed nothing");

    let restore = elevator(&["kernel", &state_dir, "restore", &name]);
    assert!(restore.status.success(), "{}", stderr(&restore));
    let printed = String::from_utf8_lossy(&restore.stdout);
    assert!(printed.contains(&format!("{name}: scheduler: bfq -> mq-deadline")), "{printed}");
    assert!(
        printed.contains(&format!("{name}: rotational: 0 -> {rotational_before}")),
        "{printed}"
    );
    assert_eq!(state(&name), before, "restored: {printed}");
    assert_eq!(attr(&name, "rotational"), rotational_before);
    assert_eq!(snapshots(&disk), 0, "the snapshot is gone");
    let again = elevator(&["kernel", &state_dir, "restore"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stderr(&again).contains("nothing to restore"), "{}", stderr(&again));
}

// Proves `-s` is checked whole before anything runs: an unknown tunable of the second
// scheduler exits 2 at once, naming it and what that scheduler accepts, with the device
// unchanged and no snapshot left; and that a value the kernel rounds is reported as asked and
// kept, on stderr and in the report.
#[test]
fn compare_checks_every_entry_first_and_reports_what_the_kernel_rounded() {
    let Some(disk) = TestDisk::attach("compare_checks_every_entry_first", 32 << 20) else {
        return;
    };
    let name = disk.name();
    let state_dir = disk.state_arg();
    let before = state(&name);
    // A short read of the device under `schedulers`, with a JSON report.
    let compare = |schedulers: &str| {
        let workload = "job:rw=read,bs=64k,size=4m";
        let args = ["compare", &name, "-w", workload, "-s", schedulers, "--format", "json"];
        elevator(&[&["kernel", state_dir.as_str()][..], &args].concat())
    };
    let output = compare("none,bfq:nosuch=1");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("unknown key `nosuch` for scheduler bfq"), "{message}");
    assert!(message.contains("slice_idle") && message.contains("low_latency"), "{message}");
    assert!(!message.contains("running"), "nothing ran: {message}");
    assert!(output.stdout.is_empty(), "no report");
    assert_eq!(state(&name), before);
    assert_eq!(snapshots(&disk), 0);

    let output = compare("mq-deadline:read_ahead_kb=5");
    assert!(output.status.success(), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("read_ahead_kb: asked 5, the kernel keeps 4"), "{message}");
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["runs"][0]["config"]["kernel.asked.read_ahead_kb"], "5");
    assert_eq!(json["runs"][0]["config"]["kernel.set.read_ahead_kb"], "4");
    assert_eq!(state(&name), before);
}

// Proves a compare of two schedulers reports both in one schema, and leaves the device as it
// was; and that a buffered tool workload (dd reading the raw device through the page cache)
// runs as real threads.
#[test]
fn compare_reports_kernel_runs_and_runs_buffered_tools() {
    let Some(disk) = TestDisk::attach("compare_reports_kernel_runs", 64 << 20) else {
        return;
    };
    let name = disk.name();
    let before = state(&name);
    let output = elevator(&[
        "kernel",
        &disk.state_arg(),
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
    let Some(disk) = TestDisk::attach("a_user_without_root_is_told_so", 8 << 20) else {
        return;
    };
    if !common::have("setpriv") {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "a_user_without_root_is_told_so cannot run under CI=true: setpriv is not installed"
        );
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

// Proves the snapshot file's format is the documented one (written here by hand, as a killed
// process leaves it), and the commands around it without root: show warns, tune refuses, both
// naming `elevator kernel restore vdz`; restore without a device puts back every stale
// snapshot, prints each change, and removes the file.
#[test]
fn a_stale_snapshot_on_a_fake_tree_is_named_and_restored() {
    let tree = fake_tree();
    let root = root(tree.path());
    let queue = tree.path().join("block/vdz/queue");
    std::fs::write(queue.join("scheduler"), "mq-deadline [kyber] none\n").unwrap();
    std::fs::write(queue.join("nr_requests"), "32\n").unwrap();
    let dir = tree.path().join("elevator-state/vdz");
    std::fs::create_dir_all(&dir).unwrap();
    // A process that has exited: its pid names no process with this start time.
    let gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    let _ = gone.wait_with_output();
    std::fs::write(
        dir.join("snapshot"),
        format!(
            "elevator-kernel-snapshot 1\ndevice vdz\nowner_pid {pid}\nowner_start_ticks 1\n\
             boot_id x\ncommand elevator kernel compare vdz -w job\nscheduler mq-deadline\n\
             tunable fifo_batch 16\nattribute nr_requests 256\nattribute read_ahead_kb 128\n"
        ),
    )
    .unwrap();
    let show = elevator(&["kernel", &root, "show", "vdz"]);
    assert!(show.status.success(), "{}", stderr(&show));
    assert!(stderr(&show).contains("elevator kernel restore vdz"), "{}", stderr(&show));
    let tune = elevator(&["kernel", &root, "tune", "vdz", "nr_requests=64"]);
    assert_eq!(tune.status.code(), Some(2), "{}", stderr(&tune));
    assert!(stderr(&tune).contains("`elevator kernel compare vdz -w job`"), "{}", stderr(&tune));
    assert!(stderr(&tune).contains("elevator kernel restore vdz"), "{}", stderr(&tune));
    assert_eq!(attr_in(tree.path(), "nr_requests"), "32", "refused: nothing written");
    let restore = elevator(&["kernel", &root, "restore"]);
    assert!(restore.status.success(), "{}", stderr(&restore));
    assert_eq!(
        String::from_utf8_lossy(&restore.stdout),
        "vdz: scheduler: kyber -> mq-deadline\nvdz: nr_requests: 32 -> 256\n"
    );
    assert_eq!(attr_in(tree.path(), "scheduler"), "mq-deadline");
    assert!(!dir.join("snapshot").exists());
    let tune = elevator(&["kernel", &root, "tune", "vdz", "nr_requests=64"]);
    assert!(tune.status.success(), "{}", stderr(&tune));
}

fn attr_in(tree: &Path, name: &str) -> String {
    std::fs::read_to_string(tree.join("block/vdz/queue").join(name)).unwrap().trim().to_owned()
}

/// A loop device over a sparse 64 MiB file on a 4 MiB tmpfs: writes past what fits fail
/// (the loop driver turns the backing file's ENOSPC into an I/O error). Detached and
/// unmounted when dropped.
struct FillingDisk {
    device: String,
    _tmpfs: common::Tmpfs,
}

impl FillingDisk {
    fn attach(test: &str) -> Option<FillingDisk> {
        let tmpfs = common::Tmpfs::mount(test, 4 << 20)?;
        let backing = tmpfs.path().join("backing");
        std::fs::File::create(&backing).unwrap().set_len(64 << 20).unwrap();
        let device = common::run("losetup", &["--find", "--show", backing.to_str().unwrap()]);
        Some(FillingDisk { device, _tmpfs: tmpfs })
    }

    fn name(&self) -> &str {
        self.device.trim_start_matches("/dev/")
    }
}

impl Drop for FillingDisk {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
    }
}

// Proves failed I/O in a kernel compare (issue 14): on a device whose backing store fills up,
// the kernel's scheduler run stops at the first failed write, the report says it is partial
// and why, counts the failures as write errors, the command exits 1, and the device is put
// back; with --continue-on-error the run goes on, counts every failure, and exits 0.
#[test]
fn failed_writes_stop_a_kernel_compare_unless_continue_on_error() {
    let Some(disk) = FillingDisk::attach("failed_writes_stop_a_kernel_compare") else { return };
    let state_dir = tempfile::tempdir().unwrap();
    let state_arg = format!("--state-dir={}", state_dir.path().display());
    let before = state(disk.name());
    let compare = |extra: &[&str]| {
        let mut args = vec!["kernel", &state_arg, "compare", disk.name()];
        args.extend(["-w", "job:rw=write,bs=64k,iodepth=4,size=32m", "-s", "none"]);
        args.extend(["--format", "json", "--force"]);
        args.extend(extra);
        elevator(&args)
    };
    let stopped = compare(&[]);
    assert_eq!(stopped.status.code(), Some(1), "{}", stderr(&stopped));
    let json: Value = serde_json::from_slice(&stopped.stdout).unwrap();
    let run = &json["runs"][0];
    assert_eq!(run["partial"], true);
    let reason = run["partial_reason"].as_str().unwrap();
    assert!(reason.starts_with("stopped at the first failed I/O: job/0: write of"), "{reason}");
    assert!(run["phases"][0]["errors"]["write"].as_u64().unwrap() >= 1);
    assert_eq!(state(disk.name()), before, "put back");

    let tolerated = compare(&["--continue-on-error"]);
    assert_eq!(tolerated.status.code(), Some(0), "{}", stderr(&tolerated));
    let json: Value = serde_json::from_slice(&tolerated.stdout).unwrap();
    let phase = &json["runs"][0]["phases"][0];
    assert!(json["runs"][0].get("partial").is_none());
    let failed = phase["errors"]["write"].as_u64().unwrap();
    let done = phase["ops"].as_u64().unwrap();
    assert_eq!(failed + done, 512, "every 64 KiB write of 32 MiB either moved or failed");
    assert!(failed > 0 && done > 0, "{done} done, {failed} failed");
}

/// A fake machine for `persist` across kernel generations: `ROOT/sys` with disk `sdb` (a WWID;
/// blk-mq when `blk_mq`, with `mq/0/`), and `ROOT/proc` saying the kernel is `release` with
/// `cmdline`.
fn fake_machine(release: &str, line: &str, blk_mq: bool, cmdline: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("sys/block/sdb");
    std::fs::create_dir_all(disk.join("queue/iosched")).unwrap();
    std::fs::create_dir_all(disk.join("device")).unwrap();
    std::fs::write(disk.join("queue/scheduler"), format!("{line}\n")).unwrap();
    std::fs::write(disk.join("queue/nr_requests"), "128\n").unwrap();
    std::fs::write(disk.join("device/wwid"), "naa.600508b1001c4d2e\n").unwrap();
    if blk_mq {
        std::fs::create_dir_all(disk.join("mq/0")).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
    std::fs::write(dir.path().join("proc/sys/kernel/osrelease"), format!("{release}\n")).unwrap();
    std::fs::write(dir.path().join("proc/cmdline"), format!("{cmdline}\n")).unwrap();
    dir
}

/// `elevator kernel persist ARGS` on the fake machine at `root`.
fn persist_on(root: &Path, args: &[&str]) -> Output {
    let sysfs = format!("--sysfs-root={}", root.join("sys").display());
    let system = format!("--system-root={}", root.display());
    let mut all = vec!["kernel", sysfs.as_str(), system.as_str(), "persist"];
    all.extend(args);
    // --apply writes the rule under the fake root's /etc/udev/rules.d (the default there).
    elevator(&all)
}

// Proves RHEL 6 (2.6.32) with a single-queue disk: persist offers the udev rule (the
// single-queue `deadline`, not mq-deadline, with its 2.6 tunable converted from ms) and beside
// it the boot line through grubby, says the rule wins for the disk and elevator= for the rest,
// and that the command line's elevator=cfq still sets the other disks — all printed, nothing
// written.
#[test]
fn persist_on_rhel6_offers_the_boot_line_beside_the_rule() {
    let machine = fake_machine(
        "2.6.32-754.el6.x86_64",
        "noop anticipatory deadline [cfq]",
        false,
        "ro root=/dev/sda2 elevator=cfq",
    );
    std::fs::create_dir_all(machine.path().join("sbin")).unwrap();
    std::fs::write(machine.path().join("sbin/grubby"), "").unwrap();
    let output = persist_on(machine.path(), &["sdb", "deadline", "read_expire=250ms"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("ATTR{queue/scheduler}=\"deadline\""), "{stdout}");
    assert!(stdout.contains("ATTR{queue/iosched/read_expire}=\"250\""), "{stdout}");
    assert!(stdout.contains("\n/sbin/grubby --update-kernel=ALL --args=\"elevator=deadline\"\n"));
    // The undo puts back the elevator= the machine booted with.
    assert!(
        stdout.contains("# Undo: /sbin/grubby --update-kernel=ALL --args=\"elevator=cfq\"\n"),
        "{stdout}"
    );
    let stderr = stderr(&output);
    assert!(stderr.contains("the rule wins for sdb"), "{stderr}");
    assert!(stderr.contains("elevator=cfq`: it still sets the other single-queue"), "{stderr}");
    assert!(!machine.path().join("etc/udev").exists(), "printed only");
}

// Proves RHEL 7 (3.10) with a blk-mq disk: only the udev rule, no boot line (elevator= never
// applies to a blk-mq device, and the output says so); and the same release with a
// single-queue disk refuses the anticipatory scheduler, which left in 2.6.33, with exit 2.
#[test]
fn persist_on_rhel7_for_a_blk_mq_disk_offers_the_rule_only() {
    let machine =
        fake_machine("3.10.0-1160.el7.x86_64", "[mq-deadline] kyber none", true, "ro quiet");
    std::fs::create_dir_all(machine.path().join("sbin")).unwrap();
    std::fs::write(machine.path().join("sbin/grubby"), "").unwrap();
    let output = persist_on(machine.path(), &["sdb", "none"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("ATTR{queue/scheduler}=\"none\""), "{stdout}");
    assert!(!stdout.contains("grubby"), "no boot line for a blk-mq disk: {stdout}");
    assert!(stdout.contains("sdb is a blk-mq device"), "{stdout}");
    assert!(stderr(&output).contains("never applies to it"), "{}", stderr(&output));

    let single = fake_machine("3.10.0-1160.el7.x86_64", "noop [deadline] cfq", false, "ro");
    let output = persist_on(single.path(), &["sdb", "anticipatory"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("left in 2.6.33"), "{}", stderr(&output));
    assert!(stderr(&output).contains("accepted: noop, deadline, cfq"), "{}", stderr(&output));
}

// Proves a 5.x kernel: the udev rule only, `deadline` taken as mq-deadline, the rule's comment
// and the output saying elevator= is ignored, and a legacy name the generation lacks (cfq)
// refused with exit 2.
#[test]
fn persist_on_a_5_x_kernel_offers_the_rule_only() {
    let machine = fake_machine("5.14.0-427.el9.x86_64", "[mq-deadline] kyber bfq none", true, "ro");
    std::fs::create_dir_all(machine.path().join("sbin")).unwrap();
    std::fs::write(machine.path().join("sbin/grubby"), "").unwrap();
    let output = persist_on(machine.path(), &["sdb", "deadline"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("ATTR{queue/scheduler}=\"mq-deadline\""), "{stdout}");
    assert!(!stdout.contains("grubby"), "{stdout}");
    assert!(stdout.contains("no effect since Linux 5.0"), "{stdout}");
    assert!(stderr(&output).contains("elevator= is ignored"), "{}", stderr(&output));
    let output = persist_on(machine.path(), &["sdb", "cfq"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

// Proves a 2.4 host (RHEL 3, no sysfs needed): no scheduler to choose, the elvtune line for
// /etc/rc.local from elvtune's tunables; a 2.6 scheduler name exits 2 naming the 2.4 elevator;
// --apply is refused (the form is printed only) and writes nothing.
#[test]
fn persist_on_a_2_4_host_prints_an_elvtune_line() {
    let machine = fake_machine("2.4.21-27.EL", "", false, "ro");
    std::fs::remove_dir_all(machine.path().join("sys")).unwrap();
    let args = ["/dev/sdb", "elevator_linus", "read_latency=1024", "write_latency=2048"];
    let output = persist_on(machine.path(), &args);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.lines().any(|l| l == "elvtune -r 1024 -w 2048 /dev/sdb"), "{stdout}");
    assert!(stdout.contains("/etc/rc.local"), "{stdout}");
    let output = persist_on(machine.path(), &["sdb", "deadline"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("accepted: elevator_linus"), "{}", stderr(&output));
    let output = persist_on(machine.path(), &["sdb", "linus", "read_latency=1024", "--apply"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(!machine.path().join("etc").exists(), "nothing written");
}

// Proves --apply on a GRUB 2 machine without grubby: with --no-reload it installs the rule and
// edits GRUB_CMDLINE_LINUX in the fake root's /etc/default/grub (replacing the elevator= there,
// recording it as the original, keeping the file as it was in .elevator-orig); without
// --no-reload and no grub2-mkconfig/update-grub installed it refuses before writing anything.
#[test]
fn persist_apply_edits_default_grub_and_keeps_the_original() {
    let machine = fake_machine("2.6.32-754.el6.x86_64", "noop deadline [cfq]", false, "ro");
    let grub = machine.path().join("etc/default/grub");
    std::fs::create_dir_all(grub.parent().unwrap()).unwrap();
    let original = "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"rhgb elevator=cfq quiet\"\n";
    std::fs::write(&grub, original).unwrap();
    let output = persist_on(machine.path(), &["sdb", "noop", "--apply"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--no-reload"), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&grub).unwrap(), original, "refused: unchanged");
    assert!(!machine.path().join("etc/udev").exists(), "refused: no rule written either");

    let output = persist_on(machine.path(), &["sdb", "noop", "--apply", "--no-reload"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let edited = std::fs::read_to_string(&grub).unwrap();
    assert!(edited.contains("\nGRUB_CMDLINE_LINUX=\"rhgb quiet elevator=noop\"\n"), "{edited}");
    assert!(edited.starts_with("# elevator: `elevator kernel persist sdb noop`"), "{edited}");
    assert!(edited.contains("before: `elevator=cfq`"), "{edited}");
    let backup = machine.path().join("etc/default/grub.elevator-orig");
    assert_eq!(std::fs::read_to_string(backup).unwrap(), original);
    let rule = machine.path().join("etc/udev/rules.d/99-elevator-sdb.rules");
    assert!(std::fs::read_to_string(rule).unwrap().contains("ATTR{queue/scheduler}=\"noop\""));
}

// Proves RHEL 4 (2.6.9, no run-time switch): the boot line is the only form — legacy GRUB's
// kernel lines, `as` spelled the 2.6.9 way — and no udev rule; tunables go to rc.local lines.
#[test]
fn persist_on_rhel4_offers_the_boot_line_only() {
    let machine = fake_machine("2.6.9-5.ELsmp", "", false, "ro");
    std::fs::remove_file(machine.path().join("sys/block/sdb/queue/scheduler")).unwrap();
    let conf = machine.path().join("boot/grub/grub.conf");
    std::fs::create_dir_all(conf.parent().unwrap()).unwrap();
    std::fs::write(&conf, "default=0\ntitle RHEL 4\n\tkernel /vmlinuz-2.6.9-5.ELsmp ro\n").unwrap();
    let output = persist_on(machine.path(), &["sdb", "anticipatory", "nr_requests=64"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("ATTR{"), "no rule before 2.6.10: {stdout}");
    assert!(stdout.contains("#   kernel /vmlinuz-2.6.9-5.ELsmp ro elevator=as\n"), "{stdout}");
    assert!(stdout.contains("echo 64 > /sys/block/sdb/queue/nr_requests"), "{stdout}");
    assert!(stderr(&output).contains("switches no scheduler at run time"), "{}", stderr(&output));
}
