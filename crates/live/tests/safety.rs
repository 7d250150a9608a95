//! The safety rules against real targets: loop devices this test creates and removes (blank,
//! formatted by the real tools, mounted, partitioned, swapped on, RAID and LVM members,
//! reached through a symbolic link), regular files with and without the tool's mark, two
//! opens of one target, and scratch files that do not fit.
//!
//! Loop devices need root and `losetup`; without them the loop tests say why and skip. A
//! missing formatting tool is installed with apt-get (see `common::require`); under `CI=true`
//! a tool that cannot be had fails the test.

// A skipped test must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr)]

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use elevator_live::{LiveError, Target, TargetKind, TargetOptions};

mod common;
use common::{LoopDevice, MdArray, PhysicalVolume, Tmpfs, have, require, run};

const MIB: u64 = 1 << 20;

/// Size of each loop device's backing file: large enough for mkfs.ext4 and mkswap.
const BACKING_BYTES: u64 = 32 * MIB;

fn write_options(force: bool) -> TargetOptions {
    TargetOptions { write: true, force, ..Default::default() }
}

/// Checks that `device`, carrying what `kind` names, is refused for writing with a message
/// containing `expected`, is left intact by the refusal, opens with force, and opens for
/// reading without it.
fn assert_refused_unless_forced(device: &Path, expected: &str) {
    let before = common::checksum(device);
    let message = refusal(Target::open(device, &write_options(false)));
    assert!(message.contains(expected), "{message}");
    assert!(message.contains("--force"), "{message}");
    assert_eq!(common::checksum(device), before, "a refused open changed {}", device.display());
    let forced = Target::open(device, &write_options(true)).expect("forced open");
    assert!(forced.writable());
    drop(forced);
    Target::open(device, &TargetOptions::default()).expect("read-only open");
    assert_eq!(common::checksum(device), before, "opening changed {}", device.display());
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
    let Some(device) = LoopDevice::attach("a_blank_loop_device", BACKING_BYTES, false, |_| {})
    else {
        return;
    };
    let target = Target::open(device.path(), &write_options(false)).expect("a blank device");
    assert_eq!(target.kind(), TargetKind::BlockDevice);
    assert!(target.writable());
    assert_eq!(target.size_bytes(), BACKING_BYTES);
}

// Proves a device holding an ext4 filesystem is refused for writing, naming ext4; that force
// overrides the refusal; and that reading never needs force.
#[test]
fn an_ext4_loop_device_is_refused_unless_forced() {
    let Some(device) = LoopDevice::attach("an_ext4_loop_device", BACKING_BYTES, false, |_| {})
    else {
        return;
    };
    if !require("an_ext4_loop_device", "mkfs.ext4", "e2fsprogs") {
        return;
    }
    run("mkfs.ext4", &["-q", "-F", device.path().to_str().unwrap()]);
    assert_refused_unless_forced(device.path(), "a signature of type ext4 (filesystem");
}

// Proves a mounted device is refused, and the refusal says it is mounted and where.
#[test]
fn a_mounted_loop_device_is_refused_naming_the_mount_point() {
    let Some(mut device) =
        LoopDevice::attach("a_mounted_loop_device", BACKING_BYTES, false, |_| {})
    else {
        return;
    };
    if !require("a_mounted_loop_device", "mkfs.ext4", "e2fsprogs") {
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

// Proves a device carrying a partition table (written by sfdisk, with partscan off so the
// kernel makes no partitions: the table alone must refuse) is refused, for GPT and DOS alike,
// each named, and left intact.
#[test]
fn partition_tables_are_refused() {
    if !require("partition_tables_are_refused", "sfdisk", "fdisk") {
        return;
    }
    for (label, expected) in [("gpt", "a partition table of type gpt"), ("dos", "type dos")] {
        let Some(device) =
            LoopDevice::attach("partition_tables_are_refused", BACKING_BYTES, false, |_| {})
        else {
            return;
        };
        let script = format!("label: {label}\n,,L\n");
        let mut sfdisk = std::process::Command::new(common::which("sfdisk").unwrap())
            .args(["--quiet", "--no-reread", "--no-tell-kernel", device.path().to_str().unwrap()])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("run sfdisk");
        sfdisk.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
        assert!(sfdisk.wait().unwrap().success(), "sfdisk {label}");
        assert_refused_unless_forced(device.path(), expected);
    }
}

// Proves a mounted partition makes its whole device unsafe, and the refusal names the
// partition and its mount point (found through sysfs, not the device's own mount entry).
#[test]
fn a_mounted_partition_refuses_its_whole_device() {
    let Some(mut device) =
        LoopDevice::attach("a_mounted_partition", BACKING_BYTES, true, write_dos_table)
    else {
        return;
    };
    if !require("a_mounted_partition", "mkfs.ext4", "e2fsprogs") {
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
    let Some(mut device) =
        LoopDevice::attach("an_active_swap_device", BACKING_BYTES, false, |_| {})
    else {
        return;
    };
    if !have("mkswap") || !have("swapon") {
        eprintln!("skipping an_active_swap_device: mkswap or swapon is not installed");
        return;
    }
    device.swap_on();
    let message = refusal(Target::open(device.path(), &write_options(false)));
    assert!(message.contains("an active swap area"), "{message}");
    assert!(message.contains("a signature of type swap"), "{message}");
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
    let create = TargetOptions { write: true, create_bytes: Some(MIB), ..Default::default() };
    let created = Target::open(&path, &create).expect("a new scratch file");
    assert!(created.created() && created.is_scratch());
    drop(created);
    let reopened = Target::open(&path, &write_options(false)).expect("the scratch file again");
    assert!(!reopened.created() && reopened.is_scratch() && reopened.writable());
}

/// Attaches a blank loop device and runs `program` with `args` on it (the device path
/// replaces `{}`); `None` when the device or the tool cannot be had (after saying why).
fn formatted(test: &str, program: &str, package: &str, args: &[&str]) -> Option<LoopDevice> {
    let device = LoopDevice::attach(test, BACKING_BYTES, false, |_| {})?;
    if !require(test, program, package) {
        return None;
    }
    let path = device.path().to_str().unwrap().to_string();
    let args: Vec<&str> =
        args.iter().map(|arg| if *arg == "{}" { path.as_str() } else { arg }).collect();
    let program = common::which(program).unwrap();
    run(program.to_str().unwrap(), &args);
    Some(device)
}

// Proves the formats the hand-written table let through (issue 14) are refused, each
// written by its real tool and named by libblkid's type, and each left intact.
#[test]
fn minix_bfs_and_cramfs_are_refused() {
    if let Some(device) = formatted("minix", "mkfs.minix", "util-linux", &["{}"]) {
        assert_refused_unless_forced(device.path(), "a signature of type minix (filesystem");
    }
    if let Some(device) = formatted("bfs", "mkfs.bfs", "util-linux", &["{}"]) {
        assert_refused_unless_forced(device.path(), "a signature of type bfs (filesystem");
    }
    let content = tempfile::tempdir().unwrap();
    std::fs::write(content.path().join("file"), b"cramfs content").unwrap();
    let dir = content.path().to_str().unwrap();
    if let Some(device) = formatted("cramfs", "mkfs.cramfs", "util-linux", &[dir, "{}"]) {
        assert_refused_unless_forced(device.path(), "a signature of type cramfs (filesystem");
    }
}

// Proves an inactive swap signature (mkswap, no swapon) is refused on its own.
#[test]
fn a_swap_signature_is_refused() {
    if let Some(device) = formatted("swap", "mkswap", "util-linux", &["-q", "{}"]) {
        assert_refused_unless_forced(device.path(), "a signature of type swap");
    }
}

// Proves an LVM physical volume (pvcreate) is refused, named LVM2_member.
#[test]
fn an_lvm_physical_volume_is_refused() {
    let Some(device) = LoopDevice::attach("lvm", BACKING_BYTES, false, |_| {}) else { return };
    if !require("lvm", "pvcreate", "lvm2") {
        return;
    }
    let volume = PhysicalVolume::create(device.path());
    assert_refused_unless_forced(device.path(), "a signature of type LVM2_member (raid");
    drop(volume);
}

/// The MD 0.90 superblock's place: the last 64 KiB-aligned 64 KiB of the device.
fn md_090_offset(size_bytes: u64) -> u64 {
    (size_bytes / 0x10000 - 1) * 0x10000
}

// Proves MD RAID members are refused: while the array runs (held by it), and after it is
// stopped, by the superblock alone, for metadata 0.90 (at the end of the device, which the
// hand-written table never read) and 1.2. Made by mdadm where the kernel has MD; where it
// has not (no /proc/mdstat, as on minimal VM kernels), the 0.90 superblock's magic and
// version are written at its documented place so that the probe is still tested.
#[test]
fn md_raid_members_are_refused() {
    let Some(first) = LoopDevice::attach("md", BACKING_BYTES, false, |_| {}) else { return };
    let Some(second) = LoopDevice::attach("md", BACKING_BYTES, false, |_| {}) else { return };
    if !require("md", "mdadm", "mdadm") {
        return;
    }
    let members = [first.path(), second.path()];
    match MdArray::create("elevator-test-090", "0.90", &members) {
        Some(array) => {
            let message = refusal(Target::open(first.path(), &write_options(false)));
            assert!(message.contains("held by md"), "{message}");
            assert!(array.path().exists());
            array.stop();
            assert_refused_unless_forced(first.path(), "linux_raid_member (raid, version 0.90");
            run("mdadm", &["--zero-superblock", first.path().to_str().unwrap()]);
            run("mdadm", &["--zero-superblock", second.path().to_str().unwrap()]);
            let array = MdArray::create("elevator-test-12", "1.2", &members).unwrap();
            array.stop();
            assert_refused_unless_forced(second.path(), "linux_raid_member (raid, version 1.2");
        }
        None => {
            eprintln!("md_raid_members: the kernel has no MD driver; writing a 0.90 superblock");
            let mut file = std::fs::OpenOptions::new().write(true).open(first.path()).unwrap();
            let mut superblock = Vec::new();
            for word in [0xa92b_4efcu32, 0, 90, 0] {
                superblock.extend_from_slice(&word.to_le_bytes());
            }
            poke(&mut file, md_090_offset(BACKING_BYTES), &superblock);
            file.sync_all().unwrap();
            drop(file);
            assert_refused_unless_forced(first.path(), "linux_raid_member (raid, version 0.90");
        }
    }
}

// Proves the ceph bluestore and VDO labels, which no Debian package here writes without a
// cluster or a kernel module, are refused: their magic strings (each at offset 0, per their
// on-disk formats) are written and libblkid names them.
#[test]
fn ceph_bluestore_and_vdo_are_refused() {
    for (magic, expected) in [
        (&b"bluestore block device\n"[..], "a signature of type ceph_bluestore"),
        (&b"dmvdo001"[..], "a signature of type vdo"),
    ] {
        let write = |file: &mut File| poke(file, 0, magic);
        let Some(device) =
            LoopDevice::attach("ceph_bluestore_and_vdo", BACKING_BYTES, false, write)
        else {
            return;
        };
        assert_refused_unless_forced(device.path(), expected);
    }
}

// Proves a symbolic link to a device is resolved first: the checks apply to the device it
// names (refused, naming the real device and its signature), force still needed.
#[test]
fn a_symlink_to_a_device_is_checked_as_the_device() {
    let Some(device) = formatted("symlink", "mkfs.minix", "util-linux", &["{}"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("by-id-lookalike");
    std::os::unix::fs::symlink(device.path(), &link).unwrap();
    let message = refusal(Target::open(&link, &write_options(false)));
    assert!(message.starts_with(&format!("{}:", device.path().display())), "{message}");
    assert!(message.contains("a signature of type minix"), "{message}");
    let forced = Target::open(&link, &write_options(true)).expect("forced");
    assert_eq!(forced.path(), device.path());
    assert_eq!(forced.kind(), TargetKind::BlockDevice);
}

// Proves a device with partitions is refused even when its table was wiped afterwards (the
// kernel still has the partitions), naming them.
#[test]
fn a_device_with_partitions_is_refused() {
    let Some(device) =
        LoopDevice::attach("a_device_with_partitions", BACKING_BYTES, true, write_dos_table)
    else {
        return;
    };
    let partition = PathBuf::from(format!("{}p1", device.path().display()));
    if !partition.exists() {
        if !require("a_device_with_partitions", "addpart", "util-linux") {
            return;
        }
        let sectors = (BACKING_BYTES / 512 - 2048).to_string();
        run("addpart", &[device.path().to_str().unwrap(), "1", "2048", &sectors]);
    }
    wait_for(&partition);
    let mut file = std::fs::OpenOptions::new().write(true).open(device.path()).unwrap();
    poke(&mut file, 446, &[0; 66]);
    file.sync_all().unwrap();
    drop(file);
    let message = refusal(Target::open(device.path(), &write_options(false)));
    assert!(message.contains(&format!("has partitions {}p1", device.name())), "{message}");
}

// Proves one run per target: while one open holds a scratch file (or a device), a second is
// refused naming the holder's PID (this process: a flock conflicts between two opens even in
// one process), reading too; when the first closes, the target is free again.
#[test]
fn a_second_open_of_a_target_is_refused_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scratch");
    let create = TargetOptions { write: true, create_bytes: Some(MIB), ..Default::default() };
    let first = Target::open(&path, &create).expect("the first open");
    let pid = format!("PID {}", std::process::id());
    for options in [write_options(false), TargetOptions::default()] {
        match Target::open(&path, &options) {
            Err(error @ LiveError::Busy { .. }) => {
                assert!(error.to_string().contains(&pid), "{error}");
            }
            other => panic!("expected Busy, got {other:?}"),
        }
    }
    drop(first);
    // Free again once closed. Another test thread forking a tool at that moment holds a copy
    // of the lock's descriptor until its exec closes it (close-on-exec): wait that out.
    let mut again = Target::open(&path, &write_options(false));
    for _ in 0..100 {
        if !matches!(again, Err(LiveError::Busy { .. })) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        again = Target::open(&path, &write_options(false));
    }
    again.expect("free again");

    let Some(device) = LoopDevice::attach("second_open", BACKING_BYTES, false, |_| {}) else {
        return;
    };
    let first = Target::open(device.path(), &write_options(false)).expect("a blank device");
    match Target::open(device.path(), &write_options(false)) {
        Err(error @ LiveError::Busy { .. }) => assert!(error.to_string().contains(&pid), "{error}"),
        other => panic!("expected Busy, got {other:?}"),
    }
    drop(first);
}

// Proves a scratch file larger than its filesystem's free space is refused before anything is
// created, saying what it needs, what is free, and where.
#[test]
fn a_scratch_file_larger_than_the_free_space_is_refused_before_creation() {
    let Some(tmpfs) = Tmpfs::mount("free_space", 4 * MIB) else { return };
    let path = tmpfs.path().join("scratch");
    let options = TargetOptions { write: true, create_bytes: Some(8 * MIB), ..Default::default() };
    let message = match Target::open(&path, &options) {
        Err(error @ LiveError::Target { .. }) => error.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert!(message.contains("a scratch file of 8m does not fit: only 4m is free"), "{message}");
    assert!(message.contains(&tmpfs.path().display().to_string()), "{message}");
    assert!(!path.exists(), "nothing may be created");
}

// Proves an ENOSPC while the scratch file is filled leaves nothing behind. The file asked for
// is exactly the free space of an ext2 filesystem without reserved blocks: the free-space
// check passes, and the indirect blocks ext2 needs to map the data make the filesystem run
// out before the data is all written.
#[test]
fn an_enospc_while_creating_leaves_nothing_behind() {
    let Some(mut device) = formatted(
        "enospc",
        "mkfs.ext2",
        "e2fsprogs",
        &["-q", "-F", "-m", "0", "-b", "1024", "{}", "8192"],
    ) else {
        return;
    };
    let path = device.path().to_path_buf();
    let point = device.mount(&path);
    let stat = rustix::fs::statvfs(&point).unwrap();
    let free = stat.f_bavail * stat.f_frsize / 4096 * 4096;
    let target = point.join("scratch");
    let options = TargetOptions { write: true, create_bytes: Some(free), ..Default::default() };
    match Target::open(&target, &options) {
        Err(LiveError::Io { source, .. }) => {
            assert_eq!(source.raw_os_error(), Some(libc_enospc()), "{source}");
        }
        other => panic!("expected ENOSPC, got {other:?}"),
    }
    assert!(!target.exists(), "the partial scratch file must be removed");
    let after = rustix::fs::statvfs(&point).unwrap();
    assert_eq!(after.f_bfree, stat.f_bfree, "its space must be given back");
}

/// ENOSPC's number (28 on every Linux architecture); the test crate does not link libc.
fn libc_enospc() -> i32 {
    28
}

// Proves a stop (Ctrl-C) during creation ends it and removes the file: the flag is already
// set, so creation stops before its first chunk.
#[test]
fn a_stop_during_creation_removes_the_scratch_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scratch");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let options = TargetOptions {
        write: true,
        create_bytes: Some(64 * MIB),
        stop: Some(stop),
        ..Default::default()
    };
    match Target::open(&path, &options) {
        Err(LiveError::Interrupted { .. }) => {}
        other => panic!("expected Interrupted, got {other:?}"),
    }
    assert!(!path.exists());
}
