//! The target of a live run: a regular file or a block device, opened for O_DIRECT, with the
//! safety rules for writing to it.
//!
//! * A file that does not exist is created at the size asked for and filled with real data
//!   (the verify pattern, generation 0), written and synced, so that no extent is sparse or
//!   unwritten: a read of such an extent would be answered without touching the disk. The
//!   file is marked (`user.elevator.scratch` extended attribute) as the tool's own.
//! * An existing file is written to only if it carries that mark, or with `force`.
//! * A block device is written to only if it is not mounted (itself or a partition), has no
//!   holders, can be opened exclusively, and carries no filesystem, partition-table, RAID,
//!   LVM, swap or crypto signature; or with `force`. The refusal says what was found.
//! * Reading never needs `force`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::buffer::AlignedBuf;
use crate::error::LiveError;
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
}

impl Target {
    /// Opens `path` as `options` say, creating a missing file when a size is given.
    pub fn open(path: &Path, options: &TargetOptions) -> Result<Target, LiveError> {
        let mut created = false;
        let metadata = match std::fs::metadata(path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let Some(size_bytes) = options.create_bytes else {
                    return Err(LiveError::Target {
                        path: path.into(),
                        problem: "does not exist (give a size to create a scratch file)".into(),
                    });
                };
                create_scratch_file(path, size_bytes)?;
                created = true;
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
        let file = OpenOptions::new()
            .read(true)
            .write(options.write)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .map_err(|error| match error.raw_os_error() {
                Some(libc::EINVAL) => LiveError::Target {
                    path: path.into(),
                    problem: "does not support O_DIRECT (tmpfs before Linux 6.6, or an overlay); \
                              put the target on ext4, XFS or a block device"
                        .into(),
                },
                _ => LiveError::io(path, "open with O_DIRECT", error),
            })?;
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

/// Creates `path` with `size_bytes` of real data (generation 0 of the verify pattern),
/// synced, and marks it as the tool's.
fn create_scratch_file(path: &Path, size_bytes: u64) -> Result<(), LiveError> {
    if size_bytes == 0 || size_bytes % FILE_ALIGN_BYTES != 0 {
        return Err(LiveError::Target {
            path: path.into(),
            problem: format!(
                "cannot create a scratch file of {size_bytes} bytes (accepted: a positive \
                 multiple of {FILE_ALIGN_BYTES})"
            ),
        });
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| LiveError::io(path, "create", e))?;
    const CHUNK_BYTES: u64 = 1 << 20;
    let mut buf = AlignedBuf::zeroed(CHUNK_BYTES as usize);
    let mut offset = 0;
    while offset < size_bytes {
        let len = CHUNK_BYTES.min(size_bytes - offset) as usize;
        buf.set_len(len);
        verify::stamp(buf.as_mut_slice(), offset, 0);
        file.write_all(buf.as_slice()).map_err(|e| LiveError::io(path, "fill", e))?;
        offset += len as u64;
    }
    file.sync_all().map_err(|e| LiveError::io(path, "sync", e))?;
    safety::mark_scratch(&file).map_err(|e| LiveError::io(path, "mark as scratch", e))?;
    Ok(())
}
