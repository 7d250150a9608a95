//! One run per target at a time.
//!
//! Two runs on one target at once make each other's verify stamps look corrupt and each
//! other's latencies meaningless, and a kernel compare whose scheduler is switched under it
//! by `elevator kernel set` measures nothing. So `elevator run`, `elevator kernel compare`
//! (both through [`Target::open`](crate::Target::open)) and `elevator kernel set`/`tune`
//! take an exclusive BSD `flock` on the target's node (the scratch file, the device node;
//! for a partition, its whole disk's node as well, since the queue and its scheduler are the
//! disk's) and hold it for as long as they use it. The second comer is refused at once.
//!
//! Why `flock` on the node and not a lock file: it is what systemd documents for programs
//! that write to block devices ("Locking Block Device Access"), so udev also leaves the
//! device alone while a run holds it; the kernel releases it when the holder exits however
//! it exits, so there is no stale state to clean up.
//!
//! Naming the holder: `flock` itself does not say who holds a lock, and `F_OFD_GETLK`
//! reports `l_pid = -1` for open-file-description locks. The kernel's own lock table,
//! `/proc/locks`, lists each `FLOCK` lock with the PID that took it and the device and inode
//! it is on; that table is read to name the holder. A lock-owner record written beside the
//! lock was the alternative, but it can be stale (a killed holder leaves it behind) or not
//! yet written (the holder took the lock a moment ago), and it needs a writable `/run`;
//! `/proc/locks` is neither stale nor late, since the kernel updates it with the lock.
//!
//! udevd takes short *shared* locks on whole disks while it processes an event; a conflict
//! with shared locks only is waited out (briefly, a bounded number of times), since elevator
//! always locks exclusively and so a shared holder is not another run.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::FlockOperation;

use crate::error::LiveError;

/// How many times a conflict with shared locks only (udev probing) is retried, and how long
/// each wait is: about half a second in all.
const SHARED_RETRIES: u32 = 50;
const SHARED_RETRY_WAIT: Duration = Duration::from_millis(10);

/// Exclusive locks on a target's nodes, released when dropped.
#[derive(Debug)]
pub struct TargetLock {
    /// The open files that carry the locks (a `flock` belongs to its open file description).
    held: Vec<(PathBuf, File)>,
}

impl TargetLock {
    /// Locks the regular file or block device at `path` for this process, and for a
    /// partition its whole disk too; refused ([`LiveError::Busy`]) when another process holds
    /// either.
    pub fn acquire(path: &Path) -> Result<TargetLock, LiveError> {
        let file = open_for_lock(path).map_err(|e| LiveError::io(path, "open to lock", e))?;
        TargetLock::acquire_file(path, file)
    }

    /// Locks `file`, already open at `path` (the scratch file being created), and for a
    /// partition its whole disk.
    pub(crate) fn acquire_file(path: &Path, file: File) -> Result<TargetLock, LiveError> {
        let mut lock = TargetLock { held: Vec::new() };
        let disk = whole_disk_of(&file);
        lock.take(path, file)?;
        if let Some(disk) = disk {
            let file = open_for_lock(&disk).map_err(|e| LiveError::io(&disk, "open to lock", e))?;
            lock.take(&disk, file)?;
        }
        Ok(lock)
    }

    /// Locks the device node of a queue about to be changed (`elevator kernel set`/`tune`).
    /// `None` when this user cannot open the node: such a user cannot change the queue
    /// either, and the change itself then says it needs root.
    pub fn acquire_queue(node: &Path) -> Result<Option<TargetLock>, LiveError> {
        match open_for_lock(node) {
            Ok(file) => TargetLock::acquire_file(node, file).map(Some),
            Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => Ok(None),
            Err(error) => Err(LiveError::io(node, "open to lock", error)),
        }
    }

    /// The nodes locked.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.held.iter().map(|(path, _)| path.as_path())
    }

    fn take(&mut self, path: &Path, file: File) -> Result<(), LiveError> {
        for _ in 0..SHARED_RETRIES {
            match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {
                    self.held.push((path.into(), file));
                    return Ok(());
                }
                Err(rustix::io::Errno::WOULDBLOCK) => {}
                Err(error) => return Err(LiveError::io(path, "flock", error.into())),
            }
            let holders = holders(&file);
            if holders.iter().any(|holder| holder.exclusive) {
                return Err(LiveError::Busy { path: path.into(), holder: describe(&holders) });
            }
            // Shared holders only (udev probing), or the holder let go between our attempt
            // and our look at the table: try again shortly.
            std::thread::sleep(SHARED_RETRY_WAIT);
        }
        Err(LiveError::Busy { path: path.into(), holder: describe(&holders(&file)) })
    }
}

/// Opens `path` just to hang a lock on it: read-only, and non-blocking so that a removable
/// drive without media still opens.
fn open_for_lock(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC).open(path)
}

/// The node of the whole disk when `file` is a partition's block device node.
fn whole_disk_of(file: &File) -> Option<PathBuf> {
    let metadata = file.metadata().ok()?;
    if !std::os::unix::fs::FileTypeExt::is_block_device(&metadata.file_type()) {
        return None;
    }
    let rdev = metadata.rdev();
    let sys = PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        rustix::fs::major(rdev),
        rustix::fs::minor(rdev)
    ));
    // A partition's sysfs directory sits inside its disk's and has a `partition` file.
    let dir = std::fs::canonicalize(sys).ok()?;
    if !dir.join("partition").exists() {
        return None;
    }
    let disk = dir.parent()?.file_name()?;
    Some(Path::new("/dev").join(disk))
}

/// A process holding a `flock` on the inode, per `/proc/locks`.
#[derive(Debug, PartialEq, Eq)]
struct Holder {
    /// The PID that took the lock; 0 or less when it is not visible from this PID namespace.
    pid: i64,
    exclusive: bool,
}

/// Who holds `flock`s on the inode `file` is open on.
fn holders(file: &File) -> Vec<Holder> {
    let Ok(metadata) = file.metadata() else { return Vec::new() };
    let dev = metadata.dev();
    let inode = (rustix::fs::major(dev), rustix::fs::minor(dev), metadata.ino());
    std::fs::read_to_string("/proc/locks")
        .map(|table| parse_locks(&table, inode))
        .unwrap_or_default()
}

/// The `FLOCK` lines of `/proc/locks` text on the inode `(major, minor, inode)`. A line reads
/// `1: FLOCK  ADVISORY  WRITE 4153 fe:00:5407091 0 EOF` (device numbers in hex); a waiter's
/// line has `->` after the number and is no holder.
fn parse_locks(table: &str, (major, minor, inode): (u32, u32, u64)) -> Vec<Holder> {
    let mut found = Vec::new();
    for line in table.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, class, _, access, pid, location, ..] = fields.as_slice() else { continue };
        if *class != "FLOCK" {
            continue;
        }
        let mut parts = location.split(':');
        let parsed = (
            parts.next().and_then(|text| u32::from_str_radix(text, 16).ok()),
            parts.next().and_then(|text| u32::from_str_radix(text, 16).ok()),
            parts.next().and_then(|text| text.parse::<u64>().ok()),
        );
        if parsed == (Some(major), Some(minor), Some(inode)) {
            found.push(Holder { pid: pid.parse().unwrap_or(-1), exclusive: *access == "WRITE" });
        }
    }
    found
}

/// The holders, for a refusal: `PID 1234 (elevator run ...)`.
fn describe(holders: &[Holder]) -> String {
    let named: Vec<String> = holders
        .iter()
        .filter(|holder| holder.pid > 0)
        .map(|holder| {
            let command = std::fs::read(format!("/proc/{}/cmdline", holder.pid))
                .map(|bytes| {
                    let text = String::from_utf8_lossy(&bytes).replace('\0', " ");
                    let text = text.trim();
                    match text.char_indices().nth(80) {
                        Some((cut, _)) => format!("{}...", &text[..cut]),
                        None => text.to_string(),
                    }
                })
                .unwrap_or_default();
            if command.is_empty() {
                format!("PID {}", holder.pid)
            } else {
                format!("PID {} ({command})", holder.pid)
            }
        })
        .collect();
    if named.is_empty() {
        "another process (its PID is not visible from here)".into()
    } else {
        named.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the kernel's lock table is read field by field: only FLOCK holders on the
    // inode asked about count (hex device numbers, decimal inode), waiters (`->`) and POSIX
    // locks do not, and WRITE means exclusive.
    #[test]
    fn proc_locks_name_the_holders_of_one_inode() {
        let table = "1: FLOCK  ADVISORY  WRITE 4153 fe:00:5407091 0 EOF\n\
                     1: -> FLOCK  ADVISORY  WRITE 4200 fe:00:5407091 0 EOF\n\
                     2: FLOCK  ADVISORY  READ 77 00:05:12 0 EOF\n\
                     3: POSIX  ADVISORY  WRITE 88 fe:00:5407091 0 EOF\n\
                     4: OFDLCK ADVISORY  WRITE -1 fe:00:5407091 0 EOF\n";
        assert_eq!(
            parse_locks(table, (0xfe, 0, 5_407_091)),
            vec![Holder { pid: 4153, exclusive: true }]
        );
        assert_eq!(parse_locks(table, (0, 5, 12)), vec![Holder { pid: 77, exclusive: false }]);
        assert!(parse_locks(table, (0, 5, 13)).is_empty());
    }

    // Proves a refusal names a visible holder by PID and says so when none is visible.
    #[test]
    fn holders_are_described_by_pid() {
        let own = std::process::id();
        let text = describe(&[Holder { pid: i64::from(own), exclusive: true }]);
        assert!(text.starts_with(&format!("PID {own} (")), "{text}");
        assert!(describe(&[Holder { pid: 0, exclusive: true }]).contains("not visible"));
    }

    // Proves a second lock on a locked file is refused naming the holder's PID (here this
    // process: flock conflicts between open file descriptions, even within one process), and
    // that dropping the lock frees the file.
    #[test]
    fn a_second_lock_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("target");
        std::fs::write(&path, b"x").unwrap();
        let first = TargetLock::acquire(&path).expect("the first lock");
        match TargetLock::acquire(&path) {
            Err(error @ LiveError::Busy { .. }) => {
                let message = error.to_string();
                assert!(message.contains(&format!("PID {}", std::process::id())), "{message}");
            }
            other => panic!("expected Busy, got {other:?}"),
        }
        drop(first);
        TargetLock::acquire(&path).expect("free again");
    }
}
