//! fio's `disk_util` for live and kernel runs: the kernel's counters of the block devices a
//! run's target is on, read before and after the run (fio-compat.md §4.1 `Disk stats`, §4.2
//! `disk_util`; fio's `diskutil.c`).
//!
//! Which devices, as fio's `init_per_file_disk_util`: a block device is itself; any other file
//! is the device holding its filesystem (`st_dev`); a character device or FIFO has none. The
//! device's sysfs directory is found from its numbers; a partition counts as its whole disk
//! (fio steps up when `../queue` exists), and the disks a stacked device (md, dm) is built on
//! (`slaves/`) are added after it, each also listed on its own, as fio adds them to its list.
//! A filesystem without a block device (tmpfs) gives none, as fio prints none.
//!
//! Figures are the differences of `/sys/block/DEV/stat` between the run's start and end,
//! per direction (fio's `update_io_tick_disk`, ticks with its 32-bit wrap rule), `util` =
//! `io_ticks` over the time between the two reads. They ride in the run's
//! `device_stats.extra` under [`elevator_report::fio::DISK_UTIL_PREFIX`], where the fio
//! writers read them.
//!
//! What they mean for `elevator run`: the device *under* our user-space scheduler, as the
//! kernel counts it. `ios` are the transfers our queue dispatched as the kernel's block layer
//! completed them (after its own scheduler's merges, `merges`); the merges our scheduler made
//! before dispatching are in the run's scheduler statistics, never in `disk_util`. For
//! `elevator kernel compare` it is the kernel scheduler's own device.
//!
//! # Deviations from fio
//!
//! * fio samples the counters every 250 ms from its helper thread and from when each file
//!   is set up; here they are read once before the run's first I/O and once after its last,
//!   so `util` is over the whole run (all groups), setup time excluded, and every I/O of
//!   the run is in the figures. fio's last sample can miss the run's end (fio 3.33 on a
//!   RAM-backed loop device: 243 539 `read_ios` for 256 794 reads in 2 s; all zero for a run
//!   shorter than its first sample).
//! * A kernel run writes and drops the target's cached pages before each phase (an `fsync`):
//!   on a device with a write cache its flush shows as a write `ios` of 0 sectors, which fio
//!   (no cache drop) does not have.
//! * fio `lstat`s the name, so a symbolic link to a device (`/dev/disk/by-id/...`) gets the
//!   device of the link itself (devtmpfs: no `disk_util`); here links are followed.
//! * The sysfs directory is found through `/sys/dev/block/MAJ:MIN` rather than fio's walk of
//!   `/sys/block`; it is the same directory.
//! * A stacked device's slaves are listed on their own, but the master's `aggr_*` averages
//!   are not written; the devices are listed by name, not in fio's discovery order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::clock::Clock;

/// `/sys/block/DEV/stat`'s ten counters fio reads: read ios, merges, sectors, ticks (ms),
/// then write's, `io_ticks` (ms busy) and `time_in_queue` (ms, weighted); `in_flight` skipped.
type Counters = [u64; 10];

/// The devices a run's target is on, with their counters at the run's start.
#[derive(Debug)]
pub struct DiskUtilProbe {
    clock: Clock,
    disks: Vec<Disk>,
}

#[derive(Debug)]
struct Disk {
    /// Its name in sysfs (`loop0`, `sda`, `dm-0`): fio's `name`.
    name: String,
    stat: PathBuf,
    before: Counters,
}

impl DiskUtilProbe {
    /// Starts measuring the devices `path` is on (see the module doc); `None` when it is on
    /// none (tmpfs, a character device) or sysfs cannot be read.
    pub fn start(path: &Path) -> Option<DiskUtilProbe> {
        DiskUtilProbe::start_in(Path::new("/sys"), path)
    }

    /// [`DiskUtilProbe::start`] for every path a run's targets name (a run on several files
    /// or devices), each device measured once however many targets are on it.
    pub fn start_all<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Option<DiskUtilProbe> {
        let mut disks: Vec<Disk> = Vec::new();
        for probe in paths.into_iter().filter_map(DiskUtilProbe::start) {
            for disk in probe.disks {
                if !disks.iter().any(|known| known.name == disk.name) {
                    disks.push(disk);
                }
            }
        }
        (!disks.is_empty()).then(|| DiskUtilProbe { clock: Clock::start(), disks })
    }

    /// [`DiskUtilProbe::start`] with sysfs mounted at `sys`.
    pub fn start_in(sys: &Path, path: &Path) -> Option<DiskUtilProbe> {
        let (major, minor) = device_numbers(path)?;
        let dir =
            std::fs::canonicalize(sys.join("dev/block").join(format!("{major}:{minor}"))).ok()?;
        let mut disks = Vec::new();
        add_disk(&dir, &mut disks);
        (!disks.is_empty()).then(|| DiskUtilProbe { clock: Clock::start(), disks })
    }

    /// The devices measured, by sysfs name.
    pub fn names(&self) -> Vec<&str> {
        self.disks.iter().map(|disk| disk.name.as_str()).collect()
    }

    /// Reads the counters again and puts what changed into `extra` as fio's `disk_util` keys
    /// (`fio.disk_util.DEV.read_ios`, ...: [`elevator_report::fio::DISK_UTIL_PREFIX`]). A
    /// device that can no longer be read is left out.
    pub fn finish(self, extra: &mut BTreeMap<String, u64>) {
        let elapsed_ns = self.clock.now().as_nanos();
        for disk in self.disks {
            let Some(after) = read_counters(&disk.stat) else { continue };
            let d = |index: usize| after[index].saturating_sub(disk.before[index]);
            // Tick counters are printed as 32-bit on some kernels: fio's safe_32bit_diff.
            let ticks = |index: usize| wrapping_32(after[index], disk.before[index]);
            let ms = 1_000_000;
            let figures = [
                ("read_ios", d(0)),
                ("read_merges", d(1)),
                ("read_sectors", d(2)),
                ("read_ticks_ns", ticks(3) * ms),
                ("write_ios", d(4)),
                ("write_merges", d(5)),
                ("write_sectors", d(6)),
                ("write_ticks_ns", ticks(7) * ms),
                ("busy_ns", ticks(8) * ms),
                ("in_queue_ns", ticks(9) * ms),
                ("elapsed_ns", elapsed_ns),
            ];
            for (key, value) in figures {
                let key = format!("{}{}.{key}", elevator_report::fio::DISK_UTIL_PREFIX, disk.name);
                extra.insert(key, value);
            }
        }
    }
}

/// fio's `safe_32bit_diff`: a counter that went down from below 2^32 wrapped once at 2^32.
fn wrapping_32(new: u64, old: u64) -> u64 {
    if old <= new || old >= 1 << 32 { new.wrapping_sub(old) } else { (1 << 32) + new - old }
}

/// fio's `get_device_numbers`: a block device's own numbers, the filesystem's device for
/// anything else, none for a character device or FIFO; a name that does not exist yet is
/// looked up through its directory.
fn device_numbers(path: &Path) -> Option<(u32, u32)> {
    use rustix::fs::FileType;
    let dev = match rustix::fs::stat(path) {
        Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
            FileType::BlockDevice => stat.st_rdev,
            FileType::CharacterDevice | FileType::Fifo => return None,
            _ => stat.st_dev,
        },
        Err(_) => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            rustix::fs::stat(parent.unwrap_or(Path::new("."))).ok()?.st_dev
        }
    };
    Some((rustix::fs::major(dev), rustix::fs::minor(dev)))
}

/// Adds the device whose sysfs directory is `dir` (its whole disk if it is a partition) and,
/// after it, the devices under it (`slaves/`, in name order), each once.
fn add_disk(dir: &Path, disks: &mut Vec<Disk>) {
    // fio's __init_per_file_disk_util: a partition's parent has the queue.
    let dir = match dir.parent() {
        Some(parent) if parent.join("queue").exists() && !dir.join("queue").exists() => parent,
        _ => dir,
    };
    let Some(name) = dir.file_name().map(|name| name.to_string_lossy().into_owned()) else {
        return;
    };
    if disks.iter().any(|disk| disk.name == name) {
        return;
    }
    let stat = dir.join("stat");
    let Some(before) = read_counters(&stat) else { return };
    disks.push(Disk { name, stat, before });
    let Ok(entries) = std::fs::read_dir(dir.join("slaves")) else { return };
    let mut slaves: Vec<PathBuf> = entries.filter_map(|entry| Some(entry.ok()?.path())).collect();
    slaves.sort();
    for slave in slaves {
        if let Ok(slave_dir) = std::fs::canonicalize(&slave) {
            add_disk(&slave_dir, disks);
        }
    }
}

/// The counters of a `/sys/block/DEV/stat` line (the kernel's Documentation/block/stat.rst
/// order: read ios, merges, sectors, ticks, write's four, in flight, io_ticks, time_in_queue,
/// then discard and flush fields on newer kernels); `None` when a field is not a number.
pub fn stat_fields(text: &str) -> Option<Vec<u64>> {
    text.split_whitespace().map(|field| field.parse().ok()).collect()
}

/// The counters of a `stat` file, as fio's `get_io_ticks` reads them (eleven fields at least).
fn read_counters(stat: &Path) -> Option<Counters> {
    let fields = stat_fields(&std::fs::read_to_string(stat).ok()?)?;
    if fields.len() < 11 {
        return None;
    }
    let mut counters = [0; 10];
    counters[..8].copy_from_slice(&fields[..8]);
    // Field 8 is the I/Os in flight, which fio skips.
    counters[8] = fields[9];
    counters[9] = fields[10];
    Some(counters)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A sysfs tree with `sda` (partition `sda1`), `sdb` and `dm-0` built on `sda1` and `sdb`.
    fn fake_sys(root: &Path) {
        let block = root.join("devices/block");
        for (dir, counters) in [
            ("sda", "10 1 80 5 20 2 160 7 0 9 12"),
            ("sda/sda1", "1 0 8 1 1 0 8 1 0 1 1"),
            ("sdb", "3 0 24 2 4 0 32 3 0 4 5"),
            ("dm-0", "13 0 104 7 24 0 192 10 0 11 17"),
        ] {
            std::fs::create_dir_all(block.join(dir)).unwrap();
            std::fs::write(block.join(dir).join("stat"), format!("{counters}\n")).unwrap();
            if !dir.contains('/') {
                std::fs::create_dir_all(block.join(dir).join("queue")).unwrap();
            }
        }
        std::fs::create_dir_all(block.join("dm-0/slaves")).unwrap();
        symlink("../../sdb", block.join("dm-0/slaves/sdb")).unwrap();
        symlink("../../sda/sda1", block.join("dm-0/slaves/sda1")).unwrap();
        std::fs::create_dir_all(root.join("dev/block")).unwrap();
        symlink("../../devices/block/dm-0", root.join("dev/block/253:0")).unwrap();
    }

    // Proves fio's walk: a stacked device comes first, then what it is built on, a partition
    // slave counted as its whole disk (sda, not sda1), each device once; the deltas are per
    // direction from the stat file's columns (the 9th, in flight, skipped), ticks in ns.
    #[test]
    fn a_stacked_device_adds_its_slaves_as_whole_disks() {
        let root = tempfile::tempdir().unwrap();
        fake_sys(root.path());
        let mut disks = Vec::new();
        add_disk(&std::fs::canonicalize(root.path().join("dev/block/253:0")).unwrap(), &mut disks);
        let names: Vec<&str> = disks.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["dm-0", "sda", "sdb"]);
        let probe = DiskUtilProbe { clock: Clock::start(), disks };
        std::fs::write(
            root.path().join("devices/block/sda/stat"),
            "15 3 120 9 20 2 160 7 4 19 30\n",
        )
        .unwrap();
        let mut extra = BTreeMap::new();
        probe.finish(&mut extra);
        let key = |dev: &str, k: &str| extra[&format!("fio.disk_util.{dev}.{k}")];
        assert_eq!(key("sda", "read_ios"), 5);
        assert_eq!(key("sda", "read_merges"), 2);
        assert_eq!(key("sda", "read_sectors"), 40);
        assert_eq!(key("sda", "read_ticks_ns"), 4_000_000);
        assert_eq!(key("sda", "write_ios"), 0);
        assert_eq!(key("sda", "busy_ns"), 10_000_000);
        assert_eq!(key("sda", "in_queue_ns"), 18_000_000);
        assert_eq!(key("sdb", "read_ios"), 0);
    }

    // Proves fio's 32-bit wrap rule: a tick counter that went down from below 2^32 wrapped
    // once; one already above 2^32 is taken as it is.
    #[test]
    fn tick_counters_wrap_at_32_bits() {
        assert_eq!(wrapping_32(5, 3), 2);
        assert_eq!(wrapping_32(2, u64::from(u32::MAX)), 3);
    }

    // Proves files on a filesystem without a block device, and character devices, have no
    // disk_util, as fio finds none for them.
    #[test]
    fn no_block_device_means_no_disk_util() {
        assert!(DiskUtilProbe::start(Path::new("/dev/null")).is_none());
        // A regular file whose filesystem's numbers are not in the (empty, fake) tree.
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("dev/block")).unwrap();
        let file = root.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(DiskUtilProbe::start_in(root.path(), &file).is_none());
    }
}
