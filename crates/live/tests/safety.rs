//! The safety rules against real targets: loop devices this test creates and removes (blank,
//! formatted, mounted, partitioned, swapped on), and regular files with and without the
//! tool's mark.
//!
//! Loop devices need root and `losetup`; without them the loop tests say why and skip.

// A skipped test must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr)]

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use elevator_live::{LiveError, Target, TargetKind, TargetOptions};

const MIB: u64 = 1 << 20;

/// Size of each loop device's backing file: large enough for mkfs.ext4 and mkswap.
const BACKING_BYTES: u64 = 32 * MIB;

/// Serialises `losetup --find --show`: tests run in parallel, and two of them picking the
/// same free device at once would make one fail.
static LOSETUP: Mutex<()> = Mutex::new(());

fn write_options(force: bool) -> TargetOptions {
    TargetOptions { write: true, force, ..Default::default() }
}

/// Runs `program` with `args`, panicking with its stderr if it fails; returns its stdout.
fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Whether `program` can be started at all (it is installed and on PATH).
fn have(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

/// Why loop devices cannot be used here, if they cannot.
fn loop_devices_missing() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not running as root (loop devices need it)".into());
    }
    if !have("losetup") {
        return Some("losetup is not installed".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("/dev/loop-control does not exist (no loop driver)".into());
    }
    None
}

/// A loop device over a temporary backing file, detached (and everything mounted or swapped
/// on it undone) when dropped, so a failed assertion leaves nothing behind.
struct LoopDevice {
    device: PathBuf,
    /// Filesystems mounted on it or its partitions, unmounted before it is detached; the
    /// directories are removed after that (fields drop after `Drop::drop`).
    mounts: Vec<tempfile::TempDir>,
    swapped: Option<PathBuf>,
    _backing_dir: tempfile::TempDir,
}

impl LoopDevice {
    /// Attaches a fresh loop device over a backing file of zeroes that `prepare` may write
    /// to first; `partscan` asks the kernel to read its partition table. `None` (after saying
    /// why) when this machine cannot have loop devices.
    fn attach(test: &str, partscan: bool, prepare: impl FnOnce(&mut File)) -> Option<LoopDevice> {
        if let Some(reason) = loop_devices_missing() {
            eprintln!("skipping {test}: {reason}");
            return None;
        }
        let backing_dir = tempfile::tempdir().expect("a temporary directory");
        let backing = backing_dir.path().join("backing");
        let mut file = File::create(&backing).expect("a backing file");
        file.set_len(BACKING_BYTES).expect("backing file size");
        prepare(&mut file);
        file.sync_all().expect("sync the backing file");
        drop(file);
        let backing = backing.to_str().expect("a UTF-8 temporary path");
        let mut args = vec!["--find", "--show", "--direct-io=on"];
        if partscan {
            args.push("--partscan");
        }
        args.push(backing);
        let device = {
            let _one_at_a_time = LOSETUP.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            run("losetup", &args)
        };
        Some(LoopDevice {
            device: PathBuf::from(device),
            mounts: Vec::new(),
            swapped: None,
            _backing_dir: backing_dir,
        })
    }

    fn path(&self) -> &Path {
        &self.device
    }

    fn name(&self) -> String {
        self.device.file_name().unwrap().to_string_lossy().into_owned()
    }

    /// Mounts the ext4 filesystem on `device` (this loop device or one of its partitions) on
    /// a fresh directory, and returns the directory.
    fn mount(&mut self, device: &Path) -> PathBuf {
        let dir = tempfile::tempdir().expect("a mount point");
        let point = dir.path().canonicalize().unwrap();
        run("mount", &["-t", "ext4", device.to_str().unwrap(), point.to_str().unwrap()]);
        self.mounts.push(dir);
        point
    }

    fn swap_on(&mut self) {
        let device = self.device.to_str().unwrap();
        run("mkswap", &["-q", device]);
        run("swapon", &[device]);
        self.swapped = Some(self.device.clone());
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        // Errors are reported, not raised: this runs while a failed test unwinds, and a
        // second panic would abort before the rest is cleaned up.
        let quiet = |program: &str, args: &[&str]| match Command::new(program).args(args).output() {
            Ok(output) if output.status.success() => {}
            Ok(output) => eprintln!(
                "cleanup: {program} {args:?}: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Err(error) => eprintln!("cleanup: cannot run {program}: {error}"),
        };
        if let Some(device) = &self.swapped {
            quiet("swapoff", &[device.to_str().unwrap()]);
        }
        for dir in self.mounts.iter().rev() {
            quiet("umount", &[dir.path().to_str().unwrap()]);
        }
        quiet("losetup", &["-d", self.device.to_str().unwrap()]);
    }
}

/// The refusal `result` must be; its message.
fn refusal(result: Result<Target, LiveError>) -> String {
    match result {
        Err(error @ LiveError::Unsafe { .. }) => error.to_string(),
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(target) => panic!("expected a refusal, but {} opened", target.describe()),
    }
}

/// Writes `bytes` at `offset` of `file`.
fn poke(file: &mut File, offset: u64, bytes: &[u8]) {
    file.seek(SeekFrom::Start(offset)).unwrap();
    file.write_all(bytes).unwrap();
}

/// Waits (up to about ten seconds) for a device node the kernel creates asynchronously (a
/// partition of a loop device). Counted sleeps rather than a clock: the project reads time
/// only through its own clock.
fn wait_for(path: &Path) {
    for _ in 0..500 {
        if path.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} did not appear", path.display());
}

// Proves a blank block device (all zeroes, unmounted, unclaimed) is writable without force:
// the checks refuse what holds data, not block devices as such.
#[test]
fn a_blank_loop_device_opens_for_writing_without_force() {
    let Some(device) = LoopDevice::attach("a_blank_loop_device", false, |_| {}) else { return };
    let target = Target::open(device.path(), &write_options(false)).expect("a blank device");
    assert_eq!(target.kind(), TargetKind::BlockDevice);
    assert!(target.writable());
    assert_eq!(target.size_bytes(), BACKING_BYTES);
}

// Proves a device holding an ext4 filesystem is refused for writing, naming ext4; that force
// overrides the refusal; and that reading never needs force.
#[test]
fn an_ext4_loop_device_is_refused_unless_forced() {
    let Some(device) = LoopDevice::attach("an_ext4_loop_device", false, |_| {}) else { return };
    if !have("mkfs.ext4") {
        eprintln!("skipping an_ext4_loop_device: mkfs.ext4 is not installed");
        return;
    }
    run("mkfs.ext4", &["-q", "-F", device.path().to_str().unwrap()]);
    let message = refusal(Target::open(device.path(), &write_options(false)));
    assert!(message.contains("ext4"), "{message}");
    assert!(message.contains("--force"), "{message}");
    let forced = Target::open(device.path(), &write_options(true)).expect("forced open");
    assert!(forced.writable());
    drop(forced);
    let reader = Target::open(device.path(), &TargetOptions::default()).expect("read-only open");
    assert!(!reader.writable());
}

// Proves a mounted device is refused, and the refusal says it is mounted and where.
#[test]
fn a_mounted_loop_device_is_refused_naming_the_mount_point() {
    let Some(mut device) = LoopDevice::attach("a_mounted_loop_device", false, |_| {}) else {
        return;
    };
    if !have("mkfs.ext4") {
        eprintln!("skipping a_mounted_loop_device: mkfs.ext4 is not installed");
        return;
    }
    run("mkfs.ext4", &["-q", "-F", device.path().to_str().unwrap()]);
    let path = device.path().to_path_buf();
    let point = device.mount(&path);
    let message = refusal(Target::open(&path, &write_options(false)));
    assert!(message.contains(&format!("mounted at {}", point.display())), "{message}");
    assert!(message.contains("in use (an exclusive open failed: busy)"), "{message}");
}

/// A DOS partition table with one Linux partition from 1 MiB to the end of the backing
/// file: entry 1 at 446 (status, CHS start, type 0x83, CHS end, LBA start, sector count),
/// then the boot signature.
fn write_dos_table(file: &mut File) {
    let start_lba = 2048u32;
    let sectors = (BACKING_BYTES / 512) as u32 - start_lba;
    let mut entry = [0u8; 16];
    entry[4] = 0x83;
    entry[8..12].copy_from_slice(&start_lba.to_le_bytes());
    entry[12..16].copy_from_slice(&sectors.to_le_bytes());
    poke(file, 446, &entry);
    poke(file, 510, &[0x55, 0xAA]);
}

// Proves a device carrying a partition table is refused, for a GPT header and for a DOS
// table alike, each named.
#[test]
fn partition_tables_are_refused() {
    let gpt = |file: &mut File| {
        // The protective MBR (one entry of type 0xEE) and the header's signature in LBA 1.
        poke(file, 446 + 4, &[0xEE]);
        poke(file, 510, &[0x55, 0xAA]);
        poke(file, 512, b"EFI PART");
    };
    let Some(device) = LoopDevice::attach("partition_tables_are_refused", false, gpt) else {
        return;
    };
    let message = refusal(Target::open(device.path(), &write_options(false)));
    assert!(message.contains("a GPT partition table"), "{message}");
    drop(device);

    let Some(device) = LoopDevice::attach("partition_tables_are_refused", false, write_dos_table)
    else {
        return;
    };
    let message = refusal(Target::open(device.path(), &write_options(false)));
    assert!(message.contains("a DOS (MBR) partition table"), "{message}");
}

// Proves a mounted partition makes its whole device unsafe, and the refusal names the
// partition and its mount point (found through sysfs, not the device's own mount entry).
#[test]
fn a_mounted_partition_refuses_its_whole_device() {
    let Some(mut device) = LoopDevice::attach("a_mounted_partition", true, write_dos_table) else {
        return;
    };
    if !have("mkfs.ext4") {
        eprintln!("skipping a_mounted_partition: mkfs.ext4 is not installed");
        return;
    }
    let partition = PathBuf::from(format!("{}p1", device.path().display()));
    // The kernel reads the table while attaching, if it was built with a DOS partition
    // parser; where it was not (minimal VM kernels), `addpart` declares the partition
    // through BLKPG, which needs no parser.
    if !partition.exists() {
        if !have("addpart") {
            eprintln!(
                "skipping a_mounted_partition: the kernel made no partition from the DOS table \
                 (no CONFIG_MSDOS_PARTITION?) and addpart is not installed"
            );
            return;
        }
        let sectors = (BACKING_BYTES / 512 - 2048).to_string();
        run("addpart", &[device.path().to_str().unwrap(), "1", "2048", &sectors]);
    }
    wait_for(&partition);
    run("mkfs.ext4", &["-q", "-F", partition.to_str().unwrap()]);
    let point = device.mount(&partition);
    let message = refusal(Target::open(device.path(), &write_options(false)));
    let expected = format!("partition {}p1 is mounted at {}", device.name(), point.display());
    assert!(message.contains(&expected), "{message}");
}

// Proves a device in use as swap is refused, and the refusal says it is active swap (from
// /proc/swaps), beyond its swap signature.
#[test]
fn an_active_swap_device_is_refused() {
    let Some(mut device) = LoopDevice::attach("an_active_swap_device", false, |_| {}) else {
        return;
    };
    if !have("mkswap") || !have("swapon") {
        eprintln!("skipping an_active_swap_device: mkswap or swapon is not installed");
        return;
    }
    device.swap_on();
    let message = refusal(Target::open(device.path(), &write_options(false)));
    assert!(message.contains("an active swap area"), "{message}");
    assert!(message.contains("a swap signature"), "{message}");
}

// Proves an existing file the tool did not create is refused for writing (saying so), is
// writable with force, and is readable without it.
#[test]
fn a_foreign_file_is_refused_unless_forced() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("precious");
    std::fs::write(&path, vec![7u8; MIB as usize]).unwrap();
    let message = refusal(Target::open(&path, &write_options(false)));
    assert!(message.contains("elevator did not create"), "{message}");
    let forced = Target::open(&path, &write_options(true)).expect("forced open");
    assert!(forced.writable() && !forced.is_scratch());
    drop(forced);
    Target::open(&path, &TargetOptions::default()).expect("read-only open");
}

// Proves a scratch file the tool created carries its mark, so a later run reopens it for
// writing without force.
#[test]
fn a_scratch_file_reopens_for_writing_without_force() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("scratch");
    let create = TargetOptions { write: true, create_bytes: Some(MIB), force: false };
    let created = Target::open(&path, &create).expect("a new scratch file");
    assert!(created.created() && created.is_scratch());
    drop(created);
    let reopened = Target::open(&path, &write_options(false)).expect("the scratch file again");
    assert!(!reopened.created() && reopened.is_scratch() && reopened.writable());
}
