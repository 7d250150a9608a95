//! The target of a live run: a regular file or a block device, opened for O_DIRECT, with the
//! safety rules for writing to it.
//!
//! * The path is resolved first (symbolic links, `/dev/disk/by-*` names); everything below
//!   applies to the real file or device.
//! * The target is locked for as long as it is open ([`TargetLock`]): a second run on it is
//!   refused, naming the first's PID.
//! * A file that does not exist is created at the size asked for and filled with real data
//!   (the verify pattern, generation 0), written and synced, so that no extent is sparse or
//!   unwritten: a read of such an extent would be answered without touching the disk. The
//!   file is marked (`user.elevator.scratch` extended attribute) as the tool's own. Its size
//!   is checked against the free space first; a failure while filling (ENOSPC) or a stop
//!   (Ctrl-C) removes it.
//! * An existing file is written to only if it carries that mark, or with `force`.
//! * A block device is written to only if it has no partitions, is not mounted (itself or a
//!   partition), has no holders, can be opened exclusively, and carries no signature libblkid
//!   knows (filesystem, partition table, RAID, LVM, swap, crypto, ...); or with `force`. The
//!   refusal says what was found. Opened for writing, it is held `O_EXCL`.
//! * Reading never needs `force`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::buffer::AlignedBuf;
use crate::error::LiveError;
use crate::lock::TargetLock;
use crate::safety;
use crate::verify;

/// The O_DIRECT alignment assumed for regular files: the page size, which every Linux
/// filesystem accepts for direct I/O whatever its block size.
pub const FILE_ALIGN_BYTES: u64 = 4096;

/// What a target is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    /// A regular file.
    File,
    /// A block device.
    BlockDevice,
}

/// How to open a target.
#[derive(Clone, Debug, Default)]
pub struct TargetOptions {
    /// The run will write.
    pub write: bool,
    /// Write even where the safety rules refuse.
    pub force: bool,
    /// Create a missing file of this size (bytes, a multiple of 4 KiB).
    pub create_bytes: Option<u64>,
    /// Set (by a Ctrl-C handler) to stop creating the scratch file: it is removed and the
    /// open fails with [`LiveError::Interrupted`].
    pub stop: Option<Arc<AtomicBool>>,
}

/// An open target.
#[derive(Debug)]
pub struct Target {
    path: PathBuf,
    file: File,
    kind: TargetKind,
    size_bytes: u64,
    align_bytes: u64,
    created: bool,
    /// The tool made this file (now or in an earlier run), so its unwritten blocks hold the
    /// verify fill.
    scratch: bool,
    writable: bool,
    /// Held for as long as the target is open: one run per target at a time.
    _lock: TargetLock,
}

impl Target {
    /// Opens `path` as `options` say, creating a missing file when a size is given. The path
    /// is resolved first (symbolic links, `/dev/disk/by-*` names), and every check and the
    /// lock apply to what it names.
    pub fn open(path: &Path, options: &TargetOptions) -> Result<Target, LiveError> {
        let path = resolve(path)?;
        let path = path.as_path();
        // The lock taken on the file this open creates, from its first byte.
        let mut creation_lock = None;
        let metadata = match std::fs::metadata(path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let Some(size_bytes) = options.create_bytes else {
                    return Err(LiveError::Target {
                        path: path.into(),
                        problem: "does not exist (give a size to create a scratch file)".into(),
                    });
                };
                // Another run may create it between our look and our create; then it exists
                // and is locked, which the lock below reports.
                creation_lock = create_scratch_file(path, size_bytes, options.stop.as_deref())?;
                std::fs::metadata(path).map_err(|e| LiveError::io(path, "stat", e))?
            }
            Err(error) => return Err(LiveError::io(path, "stat", error)),
        };
        let kind = if metadata.file_type().is_block_device() {
            TargetKind::BlockDevice
        } else if metadata.is_file() {
            TargetKind::File
        } else {
            return Err(LiveError::Target {
                path: path.into(),
                problem: "is neither a regular file nor a block device".into(),
            });
        };
        // Locked before the checks: what they find stays true while the lock is held, and a
        // second run learns it is second rather than what the first is doing to the target.
        let created = creation_lock.is_some();
        let lock = match creation_lock {
            Some(lock) => lock,
            None => TargetLock::acquire(path)?,
        };
        let scratch = kind == TargetKind::File && (created || safety::is_scratch(path));
        if options.write && !options.force {
            match kind {
                TargetKind::File if !scratch => {
                    return Err(LiveError::Unsafe {
                        path: path.into(),
                        found: "an existing file that elevator did not create (it lacks the \
                                user.elevator.scratch attribute)"
                            .into(),
                    });
                }
                TargetKind::BlockDevice => {
                    let hazards = safety::block_device_hazards(path);
                    if !hazards.is_empty() {
                        return Err(LiveError::Unsafe {
                            path: path.into(),
                            found: hazards.join("; "),
                        });
                    }
                }
                TargetKind::File => {}
            }
        }
        if options.write && kind == TargetKind::BlockDevice && safety::is_read_only(path) {
            // Not a hazard --force could override: the kernel refuses every write.
            return Err(LiveError::Target {
                path: path.into(),
                problem: "the device is read-only (its `ro` attribute is 1: `losetup -r`, a \
                          write-protected disk, `blockdev --setro`); the workload writes"
                    .into(),
            });
        }
        let file = open_direct(path, kind, options)?;
        let (size_bytes, align_bytes) = match kind {
            TargetKind::File => (metadata.len(), FILE_ALIGN_BYTES),
            TargetKind::BlockDevice => {
                let size = device_size_bytes(&file).map_err(|e| LiveError::io(path, "size", e))?;
                let logical = rustix::fs::ioctl_blksszget(&file)
                    .map_err(|e| LiveError::io(path, "BLKSSZGET", e.into()))?;
                (size, u64::from(logical))
            }
        };
        if let Some(wanted) = options.create_bytes
            && !created
            && size_bytes < wanted
        {
            return Err(LiveError::Target {
                path: path.into(),
                problem: format!("holds {size_bytes} bytes, fewer than the {wanted} asked for"),
            });
        }
        Ok(Target {
            path: path.into(),
            file,
            kind,
            size_bytes,
            align_bytes,
            created,
            scratch,
            writable: options.write,
            _lock: lock,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File or block device.
    pub fn kind(&self) -> TargetKind {
        self.kind
    }

    /// Its size.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// The alignment O_DIRECT needs of offsets and lengths (the device's logical block size,
    /// or 4 KiB for a file).
    pub fn align_bytes(&self) -> u64 {
        self.align_bytes
    }

    /// Whether this open created it.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whether the tool made it, so that blocks no run wrote hold the verify fill.
    pub fn is_scratch(&self) -> bool {
        self.scratch
    }

    /// Whether it was opened for writing.
    pub fn writable(&self) -> bool {
        self.writable
    }

    /// The O_DIRECT file descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// One line for reports.
    pub fn describe(&self) -> String {
        let kind = match self.kind {
            TargetKind::File if self.scratch => "scratch file",
            TargetKind::File => "file",
            TargetKind::BlockDevice => "block device",
        };
        format!(
            "{kind} {} ({}, O_DIRECT, {}-byte alignment)",
            self.path.display(),
            elevator_core::format_size(self.size_bytes),
            self.align_bytes
        )
    }
}

/// A block device's size: seeking to its end.
fn device_size_bytes(file: &File) -> std::io::Result<u64> {
    use std::io::Seek;
    let mut handle = file;
    handle.seek(std::io::SeekFrom::End(0))
}

/// `path` with symbolic links resolved (`/dev/disk/by-id/...` to `/dev/sda`), so that the
/// checks and the lock see the real file or device. A missing file resolves through its
/// directory; a link to nothing is refused, since creating through it would put a scratch
/// file wherever the link points.
fn resolve(path: &Path) -> Result<PathBuf, LiveError> {
    match std::fs::canonicalize(path) {
        Ok(real) => return Ok(real),
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            return Err(LiveError::io(path, "resolve", error));
        }
        Err(_) => {}
    }
    if let Ok(metadata) = std::fs::symlink_metadata(path)
        && metadata.file_type().is_symlink()
    {
        let points_to = std::fs::read_link(path).map_err(|e| LiveError::io(path, "readlink", e))?;
        return Err(LiveError::Target {
            path: path.into(),
            problem: format!(
                "is a symbolic link to {}, which does not exist (accepted: an existing file or \
                 device, or a new file's real path)",
                points_to.display()
            ),
        });
    }
    let (Some(name), Some(parent)) = (path.file_name(), path.parent()) else {
        return Err(LiveError::Target {
            path: path.into(),
            problem: "names no file (accepted: a file or device path)".into(),
        });
    };
    let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
    let parent = std::fs::canonicalize(parent).map_err(|error| LiveError::Target {
        path: path.into(),
        problem: format!("cannot create a scratch file there: its directory {error}"),
    })?;
    Ok(parent.join(name))
}

/// Opens the target for O_DIRECT. A block device opened for writing is opened `O_EXCL`, the
/// kernel's own exclusion: while the run holds it nobody can mount it, swap on it, assemble
/// an array on it or open it exclusively. Forced, a device already claimed is opened without
/// it (the user said to write anyway).
fn open_direct(path: &Path, kind: TargetKind, options: &TargetOptions) -> Result<File, LiveError> {
    let exclusive = options.write && kind == TargetKind::BlockDevice;
    let open = |extra: libc::c_int| {
        OpenOptions::new()
            .read(true)
            .write(options.write)
            .custom_flags(libc::O_DIRECT | extra)
            .open(path)
    };
    let opened = match open(if exclusive { libc::O_EXCL } else { 0 }) {
        Err(error) if exclusive && error.raw_os_error() == Some(libc::EBUSY) => {
            if !options.force {
                return Err(LiveError::Unsafe {
                    path: path.into(),
                    found: "in use (an exclusive open failed: busy)".into(),
                });
            }
            open(0)
        }
        other => other,
    };
    opened.map_err(|error| match error.raw_os_error() {
        Some(libc::EINVAL) => LiveError::Target {
            path: path.into(),
            problem: "does not support O_DIRECT (tmpfs before Linux 6.6, or an overlay); put the \
                      target on ext4, XFS or a block device"
                .into(),
        },
        _ => LiveError::io(path, "open with O_DIRECT", error),
    })
}

/// Creates `path` with `size_bytes` of real data (generation 0 of the verify pattern),
/// synced, marked as the tool's, and locked from the moment it exists. `None` when another
/// process created it first. The size is checked against the free space first; if anything
/// fails while filling (ENOSPC, an I/O error) or `stop` is set, the file is removed: a
/// half-written scratch file would fill a filesystem and pass for a finished one later.
fn create_scratch_file(
    path: &Path,
    size_bytes: u64,
    stop: Option<&AtomicBool>,
) -> Result<Option<TargetLock>, LiveError> {
    if size_bytes == 0 || size_bytes % FILE_ALIGN_BYTES != 0 {
        return Err(LiveError::Target {
            path: path.into(),
            problem: format!(
                "cannot create a scratch file of {size_bytes} bytes (accepted: a positive \
                 multiple of {FILE_ALIGN_BYTES})"
            ),
        });
    }
    check_free_space(path, size_bytes)?;
    let file = match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => return Ok(None),
        Err(error) => return Err(LiveError::io(path, "create", error)),
    };
    let removal = RemoveOnDrop(Some(path));
    let lock_file = file.try_clone().map_err(|e| LiveError::io(path, "dup", e))?;
    let lock = TargetLock::acquire_file(path, lock_file)?;
    if let Err(error) = fill_scratch_file(path, file, size_bytes, stop) {
        // Removed while still locked, so no other run opens the remains.
        drop(removal);
        return Err(error);
    }
    removal.keep();
    Ok(Some(lock))
}

/// Writes the scratch file's content, stopping early when `stop` is set.
fn fill_scratch_file(
    path: &Path,
    mut file: File,
    size_bytes: u64,
    stop: Option<&AtomicBool>,
) -> Result<(), LiveError> {
    const CHUNK_BYTES: u64 = 1 << 20;
    let mut buf = AlignedBuf::zeroed(CHUNK_BYTES as usize);
    let mut offset = 0;
    while offset < size_bytes {
        if stop.is_some_and(|stop| stop.load(Ordering::SeqCst)) {
            return Err(LiveError::Interrupted { path: path.into() });
        }
        let len = CHUNK_BYTES.min(size_bytes - offset) as usize;
        buf.set_len(len);
        verify::stamp(buf.as_mut_slice(), offset, 0);
        file.write_all(buf.as_slice()).map_err(|e| LiveError::io(path, "fill", e))?;
        offset += len as u64;
    }
    file.sync_all().map_err(|e| LiveError::io(path, "sync", e))?;
    safety::mark_scratch(&file).map_err(|e| LiveError::io(path, "mark as scratch", e))
}

/// Refuses a scratch file larger than the space its filesystem has free for this user
/// (`statvfs`'s `f_bavail`), before anything is written.
fn check_free_space(path: &Path, size_bytes: u64) -> Result<(), LiveError> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let stat = rustix::fs::statvfs(dir).map_err(|e| LiveError::io(dir, "statvfs", e.into()))?;
    let free_bytes = stat.f_bavail.saturating_mul(stat.f_frsize);
    if size_bytes > free_bytes {
        return Err(LiveError::Target {
            path: path.into(),
            problem: format!(
                "a scratch file of {} does not fit: only {} is free in {} (accepted: a --size \
                 up to {}, or a target on a filesystem with room)",
                elevator_core::format_size(size_bytes),
                elevator_core::format_size(free_bytes),
                dir.display(),
                elevator_core::format_size(free_bytes / FILE_ALIGN_BYTES * FILE_ALIGN_BYTES),
            ),
        });
    }
    Ok(())
}

/// Removes a file being created unless [`keep`](RemoveOnDrop::keep) is called: every early
/// return and every panic while filling it leaves nothing behind.
struct RemoveOnDrop<'a>(Option<&'a Path>);

impl RemoveOnDrop<'_> {
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(path) = self.0 {
            // Nothing more can be done if this fails: the error that brought us here is the
            // one reported.
            let _ = std::fs::remove_file(path);
        }
    }
}
