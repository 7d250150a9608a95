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
use std::time::Duration;

use elevator_live::{LiveError, Target, TargetKind, TargetOptions};

mod common;
use common::{LoopDevice, have, run};

const MIB: u64 = 1 << 20;

/// Size of each loop device's backing file: large enough for mkfs.ext4 and mkswap.
const BACKING_BYTES: u64 = 32 * MIB;

fn write_options(force: bool) -> TargetOptions {
    TargetOptions { write: true, force, ..Default::default() }
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
    let Some(mut device) =
        LoopDevice::attach("a_mounted_loop_device", BACKING_BYTES, false, |_| {})
    else {
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
    let Some(device) =
        LoopDevice::attach("partition_tables_are_refused", BACKING_BYTES, false, gpt)
    else {
        return;
    };
    let message = refusal(Target::open(device.path(), &write_options(false)));
    assert!(message.contains("a GPT partition table"), "{message}");
    drop(device);

    let Some(device) =
        LoopDevice::attach("partition_tables_are_refused", BACKING_BYTES, false, write_dos_table)
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
    let Some(mut device) =
        LoopDevice::attach("a_mounted_partition", BACKING_BYTES, true, write_dos_table)
    else {
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
