//! `/sys/block`: finding a device's request queue, reading its attributes and writing them
//! with errors that say what the kernel meant.
//!
//! The root is a value ([`Sysfs::at`]) so that tests can point it at a fake tree in a temp
//! directory, and the reads and writes go through [`AttrIo`] so that a test can make a write
//! fail the way the kernel does (`EBUSY`, `EACCES`, `EINVAL`) where a plain file cannot.

use std::fmt;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::KernelError;

/// How attribute files are read and written.
pub trait AttrIo: fmt::Debug + Send + Sync {
    /// The attribute's content.
    fn read(&self, path: &Path) -> io::Result<String>;
    /// Writes `value` in one `write(2)`, as sysfs wants.
    fn write(&self, path: &Path, value: &str) -> io::Result<()>;
}

/// Plain files: the real sysfs, or a fake tree.
#[derive(Debug, Default)]
pub struct FileIo;

impl AttrIo for FileIo {
    fn read(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new().write(true).truncate(false).open(path)?;
        // sysfs takes a store as one write; a short write would be a partial value.
        let written = file.write(value.as_bytes())?;
        if written != value.len() {
            return Err(io::Error::other(format!(
                "short write: {written} of {} bytes",
                value.len()
            )));
        }
        // A fake tree is a plain file: drop what an earlier, longer value left behind.
        if file.metadata().is_ok_and(|m| m.is_file() && m.len() > value.len() as u64) {
            file.set_len(value.len() as u64)?;
        }
        Ok(())
    }
}

/// Where the system's snapshots of changed devices live: a tmpfs that a reboot clears, as it
/// clears every setting a snapshot could restore.
pub const SYSTEM_STATE_DIR: &str = "/run/elevator";

/// A sysfs tree, and the directory where snapshots of the devices it changes are kept (see
/// [`crate::store`]).
#[derive(Clone, Debug)]
pub struct Sysfs {
    root: PathBuf,
    io: Arc<dyn AttrIo>,
    state_dir: PathBuf,
}

/// A whole disk with a request queue, as `/sys/block` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDevice {
    /// Its kernel name (`sda`, `loop0`, `nvme0n1`).
    pub name: String,
    /// `/sys/block/NAME` under the tree's root.
    pub dir: PathBuf,
    /// The partition the user named, when they named one (its disk's queue is what counts).
    pub partition: Option<String>,
}

impl BlockDevice {
    /// `/dev/NAME`.
    pub fn dev_path(&self) -> PathBuf {
        Path::new("/dev").join(&self.name)
    }

    /// The path of a queue attribute (`scheduler`, `iosched/fifo_batch`).
    pub fn queue_attr(&self, attr: &str) -> PathBuf {
        self.dir.join("queue").join(attr)
    }
}

impl fmt::Display for BlockDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// The scheduler line: what the device offers, and which is current.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SchedulerLine {
    /// Every scheduler offered, in the kernel's order.
    pub available: Vec<String>,
    /// The one in brackets (or the only one, on a queue without scheduler support).
    pub current: String,
}

impl SchedulerLine {
    /// Parses `mq-deadline kyber [bfq] none`.
    pub fn parse(line: &str) -> Option<SchedulerLine> {
        let mut available = Vec::new();
        let mut current = None;
        for word in line.split_whitespace() {
            match word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                Some(name) => {
                    current = Some(name.to_owned());
                    available.push(name.to_owned());
                }
                None => available.push(word.to_owned()),
            }
        }
        let current = match (current, available.as_slice()) {
            (Some(current), _) => current,
            (None, [only]) => only.clone(),
            _ => return None,
        };
        Some(SchedulerLine { available, current })
    }

    /// The line as sysfs prints it.
    pub fn render(&self) -> String {
        let words: Vec<String> = self
            .available
            .iter()
            .map(|name| if *name == self.current { format!("[{name}]") } else { name.clone() })
            .collect();
        words.join(" ")
    }
}

impl Sysfs {
    /// The system's `/sys`.
    pub fn system() -> Sysfs {
        Sysfs::at("/sys")
    }

    /// A tree rooted at `root` (a directory laid out like `/sys`: `block/NAME/queue/...`).
    ///
    /// The real `/sys` keeps its snapshots in [`SYSTEM_STATE_DIR`]; any other tree keeps them
    /// in its own `elevator-state/`, so that a fake tree can never leave a snapshot that names
    /// a real device.
    pub fn at(root: impl Into<PathBuf>) -> Sysfs {
        let root = root.into();
        let state_dir = if root == Path::new("/sys") {
            PathBuf::from(SYSTEM_STATE_DIR)
        } else {
            root.join("elevator-state")
        };
        Sysfs { root, io: Arc::new(FileIo), state_dir }
    }

    /// The same tree, its snapshots kept in `dir` instead.
    pub fn with_state_dir(mut self, dir: impl Into<PathBuf>) -> Sysfs {
        self.state_dir = dir.into();
        self
    }

    /// Where snapshots of the devices it changes are kept.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The same tree, read and written through `io`.
    pub fn with_io(mut self, io: Arc<dyn AttrIo>) -> Sysfs {
        self.io = io;
        self
    }

    /// Its root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every whole disk with a request queue, sorted by name.
    pub fn devices(&self) -> Result<Vec<BlockDevice>, KernelError> {
        let dir = self.root.join("block");
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| KernelError::io(&dir, "listing block devices", e))?;
        let mut devices: Vec<BlockDevice> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .map(|name| BlockDevice { dir: dir.join(&name), name, partition: None })
            .filter(|device| device.queue_attr("scheduler").exists())
            .collect();
        devices.sort_by_key(|device| natural_key(&device.name));
        Ok(devices)
    }

    /// The disk `given` names: a kernel name (`sda`, `loop0`), or a path to a block device
    /// node (`/dev/sda`, `/dev/disk/by-id/...`). A partition resolves to its disk, whose
    /// queue is the one that schedules it.
    pub fn device(&self, given: &str) -> Result<BlockDevice, KernelError> {
        let not = |why: String| KernelError::NotABlockDevice { given: given.to_owned(), why };
        let (name, partition) =
            if given.contains('/') { self.name_of_node(given)? } else { (given.to_owned(), None) };
        let disk = self.root.join("block").join(&name);
        if disk.join("queue").is_dir() {
            return Ok(BlockDevice { name, dir: disk, partition });
        }
        let class = self.root.join("class/block").join(&name);
        if class.join("partition").exists() {
            let resolved = std::fs::canonicalize(&class)
                .map_err(|e| KernelError::io(&class, "resolving a partition", e))?;
            let parent = resolved.parent().and_then(Path::file_name).ok_or_else(|| {
                not(format!("partition {name} has no parent disk in {}", class.display()))
            })?;
            let parent = parent.to_string_lossy().into_owned();
            return Ok(BlockDevice {
                dir: self.root.join("block").join(&parent),
                name: parent,
                partition: Some(name),
            });
        }
        let known: Vec<String> =
            self.devices().map(|d| d.into_iter().map(|d| d.name).collect()).unwrap_or_default();
        Err(not(format!(
            "no {} with a request queue; block devices here: {}",
            disk.display(),
            if known.is_empty() { "none".to_owned() } else { known.join(", ") }
        )))
    }

    /// The kernel name of the block device node at `path`, and whether it was a partition.
    fn name_of_node(&self, path: &str) -> Result<(String, Option<String>), KernelError> {
        let not = |why: String| KernelError::NotABlockDevice { given: path.to_owned(), why };
        let meta = std::fs::metadata(path).map_err(|e| not(e.to_string()))?;
        let kind = meta.file_type();
        if !kind.is_block_device() {
            let what = if kind.is_dir() {
                "a directory"
            } else if kind.is_char_device() {
                "a character device"
            } else if kind.is_file() {
                "a regular file (use `elevator run --target` for files)"
            } else {
                "not a device node"
            };
            return Err(not(format!("it is {what}")));
        }
        use std::os::unix::fs::MetadataExt;
        let rdev = meta.rdev();
        let (major, minor) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
        let link = self.root.join(format!("dev/block/{major}:{minor}"));
        let resolved = std::fs::canonicalize(&link)
            .map_err(|e| not(format!("{} ({major}:{minor}): {e}", link.display())))?;
        let name = resolved
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| not(format!("{} has no name", resolved.display())))?;
        if resolved.join("partition").exists() {
            let parent = resolved
                .parent()
                .and_then(Path::file_name)
                .ok_or_else(|| not(format!("partition {name} has no parent disk")))?;
            return Ok((parent.to_string_lossy().into_owned(), Some(name)));
        }
        Ok((name, None))
    }

    /// An attribute's content, trimmed.
    pub fn read(&self, path: &Path) -> Result<String, KernelError> {
        self.io
            .read(path)
            .map(|text| text.trim().to_owned())
            .map_err(|e| KernelError::Attribute { path: path.to_owned(), what: e.to_string() })
    }

    /// An attribute that may be missing (not every device has every attribute).
    pub fn read_optional(&self, path: &Path) -> Option<String> {
        self.io.read(path).ok().map(|text| text.trim().to_owned())
    }

    /// A numeric attribute.
    pub fn read_u64(&self, path: &Path) -> Result<u64, KernelError> {
        let text = self.read(path)?;
        text.parse().map_err(|_| KernelError::Attribute {
            path: path.to_owned(),
            what: format!("`{text}` is not a number"),
        })
    }

    /// Writes an attribute, turning the kernel's refusals into errors that say what happened.
    pub fn write(&self, path: &Path, value: &str) -> Result<(), KernelError> {
        self.io.write(path, value).map_err(|error| {
            let path = path.to_owned();
            let value = value.to_owned();
            use rustix::io::Errno;
            match error.raw_os_error().map(Errno::from_raw_os_error) {
                Some(Errno::BUSY) => KernelError::Busy { path, value },
                Some(Errno::ACCESS | Errno::PERM) => KernelError::PermissionDenied { path, value },
                Some(Errno::INVAL) => KernelError::Rejected { path, value },
                _ if error.kind() == io::ErrorKind::PermissionDenied => {
                    KernelError::PermissionDenied { path, value }
                }
                _ => KernelError::Io { path, what: "writing", source: error },
            }
        })
    }

    /// The device's `MAJ:MIN` (`7:0`), where the tree says (a fake tree may not).
    pub fn dev_id(&self, device: &BlockDevice) -> Option<String> {
        self.read_optional(&device.dir.join("dev")).filter(|id| !id.is_empty())
    }

    /// The device's scheduler line.
    pub fn scheduler(&self, device: &BlockDevice) -> Result<SchedulerLine, KernelError> {
        let path = device.queue_attr("scheduler");
        let line = self.read(&path)?;
        SchedulerLine::parse(&line).ok_or_else(|| KernelError::Attribute {
            path,
            what: format!("`{line}` is not a scheduler line"),
        })
    }

    /// The current scheduler's tunables (`queue/iosched/*`), sorted by name; empty for `none`.
    pub fn iosched(&self, device: &BlockDevice) -> Vec<(String, String)> {
        let dir = device.queue_attr("iosched");
        let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
        let mut tunables: Vec<(String, String)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let value = self.read_optional(&entry.path())?;
                Some((name, value))
            })
            .collect();
        tunables.sort();
        tunables
    }
}

/// Sorts `sda`, `sdb`, `loop2`, `loop10` as a person would.
fn natural_key(name: &str) -> (String, u64) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, number) = name.split_at(name.len() - digits);
    (stem.to_owned(), number.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the bracketed name is current and the rest are offered, in order.
    #[test]
    fn scheduler_lines_parse() {
        let line = SchedulerLine::parse("mq-deadline kyber [bfq] none\n").unwrap();
        assert_eq!(line.available, ["mq-deadline", "kyber", "bfq", "none"]);
        assert_eq!(line.current, "bfq");
        assert_eq!(line.render(), "mq-deadline kyber [bfq] none");
        assert_eq!(SchedulerLine::parse("none").unwrap().current, "none");
        assert!(SchedulerLine::parse("a b").is_none());
        assert!(SchedulerLine::parse("").is_none());
    }

    #[test]
    fn devices_sort_naturally() {
        let mut names = vec!["loop10", "loop2", "sda", "loop0"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(names, ["loop0", "loop2", "loop10", "sda"]);
    }
}
