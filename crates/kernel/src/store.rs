//! Snapshots on disk: what a device was like before elevator changed it, kept where a killed
//! process cannot take it along.
//!
//! A [`RestoreGuard`](crate::guard::RestoreGuard) restores on return, on panic and on a signal
//! it catches, but not after SIGKILL, an OOM kill or a power cut. So before it changes a
//! device it writes the snapshot to `STATE_DIR/NAME@MAJ:MIN/snapshot` ([`Sysfs::state_dir`],
//! `/run/elevator` for the real `/sys`, a tmpfs that a reboot clears just as it clears the
//! settings), and removes it once the device is put back. A snapshot whose owner is gone is
//! *stale*: `elevator kernel restore` puts it back, and nothing changes the device over it
//! before that, because the file is the only record of the settings from before.
//!
//! The file is plain text, one `key value` per line, so that a person can read it and restore
//! by hand with `echo`:
//!
//! ```text
//! elevator-kernel-snapshot 1
//! device loop0
//! dev 7:0
//! owner_pid 4242
//! owner_start_ticks 1234567
//! boot_id 0f3c4e...
//! command elevator kernel compare loop0 -w job:rw=randread -s bfq
//! scheduler mq-deadline
//! tunable fifo_batch 16
//! attribute nr_requests 256
//! ```
//!
//! The owner is a process id *and* its start time (field 22 of `/proc/PID/stat`) *and* the
//! boot id, so a process id the kernel has since given to another process does not count as
//! the owner still running. A snapshot appears whole or not at all: it is written to a
//! temporary file and hard-linked into place, which (unlike a rename) fails when another
//! process has just claimed the device.

use std::path::{Path, PathBuf};

use crate::error::KernelError;
use crate::guard::Snapshot;
use crate::sysfs::{BlockDevice, Sysfs};

/// The first line of every snapshot file; the number changes when the format does.
const HEADER: &str = "elevator-kernel-snapshot 1";

/// The file inside a device's directory.
const FILE_NAME: &str = "snapshot";

/// The process that took a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// Its process id.
    pub pid: u32,
    /// When it started, in clock ticks since boot (`/proc/PID/stat` field 22).
    pub start_ticks: u64,
    /// `/proc/sys/kernel/random/boot_id` when it ran.
    pub boot_id: String,
    /// Its command line, for messages.
    pub command: String,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        let pid = std::process::id();
        let command: Vec<String> = std::env::args().collect();
        Owner {
            pid,
            start_ticks: start_ticks(pid).unwrap_or(0),
            boot_id: boot_id(),
            command: command.join(" ").replace('\n', " "),
        }
    }

    /// Whether the process is still running: the same process id, started at the same
    /// moment, in this boot.
    pub fn is_running(&self) -> bool {
        self.boot_id == boot_id() && start_ticks(self.pid) == Some(self.start_ticks)
    }

    /// Whether it is this process.
    pub fn is_current(&self) -> bool {
        self.pid == std::process::id() && self.is_running()
    }
}

/// `/proc/PID/stat` field 22, or `None` when there is no such process.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may itself hold spaces and ')'.
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Fields from 3 (state) on: start time is field 22.
    after_name.split_whitespace().nth(22 - 3)?.parse().ok()
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|id| id.trim().to_owned())
        .unwrap_or_default()
}

/// A snapshot as kept on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// The device's state before it was changed.
    pub snapshot: Snapshot,
    /// The device's `MAJ:MIN` when it was taken, where known.
    pub dev: Option<String>,
    /// Who took it.
    pub owner: Owner,
    /// The file.
    pub path: PathBuf,
}

impl Stored {
    /// The error that refuses a change over this snapshot: its owner is still at work, or
    /// gone without restoring.
    pub fn refusal(&self) -> KernelError {
        let device = self.snapshot.device.name.clone();
        let (command, pid) = (self.owner.command.clone(), self.owner.pid);
        if self.owner.is_running() {
            KernelError::InUse { device, command, pid }
        } else {
            KernelError::StaleSnapshot { device, command, pid, path: self.path.clone() }
        }
    }

    /// Renders the file.
    fn render(&self) -> String {
        let mut text = format!("{HEADER}\ndevice {}\n", self.snapshot.device.name);
        if let Some(dev) = &self.dev {
            text.push_str(&format!("dev {dev}\n"));
        }
        let owner = &self.owner;
        text.push_str(&format!(
            "owner_pid {}\nowner_start_ticks {}\nboot_id {}\ncommand {}\nscheduler {}\n",
            owner.pid, owner.start_ticks, owner.boot_id, owner.command, self.snapshot.scheduler
        ));
        for (name, value) in &self.snapshot.tunables {
            text.push_str(&format!("tunable {name} {value}\n"));
        }
        for (name, value) in &self.snapshot.attributes {
            text.push_str(&format!("attribute {name} {value}\n"));
        }
        text
    }

    /// Parses a file written by [`Stored::render`]; the device is resolved in `sysfs`.
    fn parse(sysfs: &Sysfs, path: &Path, text: &str) -> Result<Stored, KernelError> {
        let bad = |line: usize, why: String| KernelError::BadSnapshot {
            path: path.to_owned(),
            line,
            why,
        };
        let mut lines = text.lines().enumerate().map(|(index, line)| (index + 1, line));
        match lines.next() {
            Some((_, HEADER)) => {}
            _ => return Err(bad(1, format!("expected `{HEADER}`"))),
        }
        let (mut name, mut dev, mut scheduler) = (None, None, None);
        let mut owner =
            Owner { pid: 0, start_ticks: 0, boot_id: String::new(), command: "?".into() };
        let (mut tunables, mut attributes) = (Vec::new(), Vec::new());
        for (number, line) in lines {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            let number_of = |value: &str| {
                value.parse::<u64>().map_err(|_| bad(number, format!("`{value}` is not a number")))
            };
            let pair = |value: &str| {
                value
                    .split_once(' ')
                    .map(|(name, value)| (name.to_owned(), value.to_owned()))
                    .ok_or_else(|| bad(number, format!("expected `{key} NAME VALUE`")))
            };
            match key {
                "device" => name = Some(value.to_owned()),
                "dev" => dev = Some(value.to_owned()),
                "owner_pid" => {
                    owner.pid = u32::try_from(number_of(value)?)
                        .map_err(|_| bad(number, format!("`{value}` is not a process id")))?;
                }
                "owner_start_ticks" => owner.start_ticks = number_of(value)?,
                "boot_id" => owner.boot_id = value.to_owned(),
                "command" => owner.command = value.to_owned(),
                "scheduler" => scheduler = Some(value.to_owned()),
                "tunable" => tunables.push(pair(value)?),
                "attribute" => attributes.push(pair(value)?),
                "" => {}
                other => return Err(bad(number, format!("unknown key `{other}`"))),
            }
        }
        let name = name.ok_or_else(|| bad(0, "no `device` line".into()))?;
        let scheduler = scheduler.ok_or_else(|| bad(0, "no `scheduler` line".into()))?;
        let device = sysfs.device(&name)?;
        let snapshot = Snapshot { device, scheduler, tunables, attributes };
        Ok(Stored { snapshot, dev, owner, path: path.to_owned() })
    }
}

/// The snapshots of one sysfs tree's devices.
#[derive(Clone, Debug)]
pub struct SnapshotStore {
    sysfs: Sysfs,
}

impl SnapshotStore {
    /// The store of `sysfs`, in its [`Sysfs::state_dir`].
    pub fn new(sysfs: &Sysfs) -> SnapshotStore {
        SnapshotStore { sysfs: sysfs.clone() }
    }

    /// The directory of `device`: its kernel name and, where the tree has it, its `MAJ:MIN`
    /// (the name alone could be a different disk after a hot-plug).
    fn device_dir(&self, device: &BlockDevice) -> PathBuf {
        let key = match self.sysfs.dev_id(device) {
            Some(dev) => format!("{}@{dev}", device.name),
            None => device.name.clone(),
        };
        self.sysfs.state_dir().join(key)
    }

    /// The snapshot kept for `device`, if any.
    pub fn load(&self, device: &BlockDevice) -> Result<Option<Stored>, KernelError> {
        let path = self.device_dir(device).join(FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => Stored::parse(&self.sysfs, &path, &text).map(Some),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(KernelError::io(&path, "reading a snapshot", error)),
        }
    }

    /// Every snapshot kept, in directory-name order; each one that cannot be read (a device
    /// that is gone, a damaged file) is its own error, so that it does not hide the others.
    pub fn all(&self) -> Result<Vec<Result<Stored, KernelError>>, KernelError> {
        let dir = self.sysfs.state_dir();
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(KernelError::io(dir, "listing snapshots", error)),
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path().join(FILE_NAME))
            .filter(|path| path.is_file())
            .collect();
        paths.sort();
        Ok(paths
            .iter()
            .map(|path| {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| KernelError::io(path, "reading a snapshot", e))?;
                Stored::parse(&self.sysfs, path, &text)
            })
            .collect())
    }

    /// Refuses when `device` already has a snapshot ([`Stored::refusal`]).
    pub fn check_clear(&self, device: &BlockDevice) -> Result<(), KernelError> {
        match self.load(device)? {
            Some(stored) => Err(stored.refusal()),
            None => Ok(()),
        }
    }

    /// Keeps `snapshot` as this process's, unless the device already has one. Returns the
    /// file.
    pub fn claim(&self, snapshot: &Snapshot) -> Result<PathBuf, KernelError> {
        let dir = self.device_dir(&snapshot.device);
        std::fs::create_dir_all(&dir).map_err(|e| store_error(&dir, "creating", e))?;
        let stored = Stored {
            snapshot: snapshot.clone(),
            dev: self.sysfs.dev_id(&snapshot.device),
            owner: Owner::current(),
            path: dir.join(FILE_NAME),
        };
        let temporary = dir.join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
        write_synced(&temporary, &stored.render())
            .map_err(|e| store_error(&temporary, "writing", e))?;
        // A hard link appears atomically and, unlike rename, never replaces a snapshot that
        // another process has just written.
        let linked = std::fs::hard_link(&temporary, &stored.path);
        let _ = std::fs::remove_file(&temporary);
        match linked {
            Ok(()) => Ok(stored.path),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(self.load(&snapshot.device)?.map_or_else(
                    || KernelError::io(&stored.path, "claiming the device", error),
                    |other| other.refusal(),
                ))
            }
            Err(error) => Err(store_error(&stored.path, "writing", error)),
        }
    }

    /// Forgets a snapshot (once the device is back as it says, or its change is kept on
    /// purpose).
    pub fn remove(&self, path: &Path) -> Result<(), KernelError> {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(KernelError::io(path, "removing a snapshot", error)),
        }
        // The directory only held the snapshot; leave it if something else is there too.
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
        Ok(())
    }

    /// Puts `device` back as its snapshot says and forgets the snapshot. Returns the
    /// snapshot and what changed, or `None` when there was none. Refuses while the owner is
    /// still running (it restores on its own) and when the name now belongs to another disk.
    pub fn restore(
        &self,
        device: &BlockDevice,
    ) -> Result<Option<(Stored, Vec<String>)>, KernelError> {
        let Some(stored) = self.load(device)? else { return Ok(None) };
        self.check_restorable(&stored)?;
        let changed = stored.snapshot.restore(&self.sysfs)?;
        self.remove(&stored.path)?;
        Ok(Some((stored, changed)))
    }

    /// Forgets `device`'s snapshot without restoring (the device keeps what it has now).
    /// Returns it, or `None` when there was none.
    pub fn discard(&self, device: &BlockDevice) -> Result<Option<Stored>, KernelError> {
        let Some(stored) = self.load(device)? else { return Ok(None) };
        self.check_restorable(&stored)?;
        self.remove(&stored.path)?;
        Ok(Some(stored))
    }

    fn check_restorable(&self, stored: &Stored) -> Result<(), KernelError> {
        if stored.owner.is_running() && !stored.owner.is_current() {
            return Err(stored.refusal());
        }
        let device = &stored.snapshot.device;
        let now = self.sysfs.dev_id(device);
        if stored.dev.is_some() && now != stored.dev {
            return Err(KernelError::BadSnapshot {
                path: stored.path.clone(),
                line: 0,
                why: format!(
                    "it is of {device} ({}), but {device} is now {}: another disk; forget it \
                     with `elevator kernel restore --discard {device}`",
                    stored.dev.as_deref().unwrap_or("?"),
                    now.as_deref().unwrap_or("without a MAJ:MIN")
                ),
            });
        }
        Ok(())
    }
}

/// Writes `text` to a new file at `path` and flushes it to the device.
fn write_synced(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// A failure to keep a snapshot. Without root, `/run/elevator` is not writable: that is the
/// same "needs root" the sysfs write would have said a moment later.
fn store_error(path: &Path, what: &'static str, error: std::io::Error) -> KernelError {
    if error.kind() == std::io::ErrorKind::PermissionDenied {
        return KernelError::PermissionDenied {
            path: path.to_owned(),
            value: "a snapshot of the device's settings".into(),
        };
    }
    KernelError::io(path, what, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the owner of this process is running and a made-up one is not: a reused pid
    // with another start time does not count.
    #[test]
    fn an_owner_runs_only_with_its_own_start_time() {
        let me = Owner::current();
        assert!(me.start_ticks > 0);
        assert!(me.is_running() && me.is_current());
        let reused = Owner { start_ticks: me.start_ticks + 1, ..me.clone() };
        assert!(!reused.is_running());
        let other_boot = Owner { boot_id: "another boot".into(), ..me };
        assert!(!other_boot.is_running());
    }
}
