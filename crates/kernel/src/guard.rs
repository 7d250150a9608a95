//! Leaving a device as it was found: a snapshot of its scheduler, the scheduler's tunables
//! and the queue attributes a benchmark may change, and a guard that puts them back when the
//! benchmark ends, fails, panics, or is interrupted.
//!
//! The order matters: switching scheduler resets `nr_requests` to the kernel's default and
//! brings the new scheduler's tunables up at their defaults, so the scheduler goes back
//! first, then its tunables, then the queue attributes — `read_ahead_kb` last, because
//! writing a queue limit or feature flag recomputes it.
//!
//! A guard also keeps its snapshot on disk ([`crate::store`]) for as long as it is armed, so
//! that a process killed where no destructor runs (SIGKILL, the OOM killer) still leaves a
//! way back: `elevator kernel restore`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::error::KernelError;
use crate::queue::{QUEUE_ATTRIBUTES, set_scheduler};
use crate::store::SnapshotStore;
use crate::sysfs::{BlockDevice, Sysfs};

/// How often a restore retries a busy queue, and how long it waits between tries.
const BUSY_RETRIES: u32 = 20;
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// A device's scheduling state at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The device.
    pub device: BlockDevice,
    /// The current scheduler.
    pub scheduler: String,
    /// Its tunables and their values.
    pub tunables: Vec<(String, String)>,
    /// Queue attributes and their values.
    pub attributes: Vec<(String, String)>,
}

impl Snapshot {
    /// Reads the state of `device`.
    pub fn take(sysfs: &Sysfs, device: &BlockDevice) -> Result<Snapshot, KernelError> {
        let scheduler = sysfs.scheduler(device)?.current;
        // Every attribute `tune` and `-s` may write, so that whatever they change goes back.
        let attributes = QUEUE_ATTRIBUTES
            .iter()
            .filter_map(|attr| {
                Some(((*attr).to_owned(), sysfs.read_optional(&device.queue_attr(attr))?))
            })
            .collect();
        Ok(Snapshot {
            device: device.clone(),
            scheduler,
            tunables: sysfs.iosched(device),
            attributes,
        })
    }

    /// Puts `device` back in this state, writing only what differs. Returns what it changed
    /// (`key: now -> restored`).
    pub fn restore(&self, sysfs: &Sysfs) -> Result<Vec<String>, KernelError> {
        let device = &self.device;
        let mut changed = Vec::new();
        let current = sysfs.scheduler(device)?.current;
        if current != self.scheduler {
            retry_busy(|| set_scheduler(sysfs, device, &self.scheduler).map(drop))?;
            changed.push(format!("scheduler: {current} -> {}", self.scheduler));
        }
        for (name, value) in &self.tunables {
            let path = device.queue_attr(&format!("iosched/{name}"));
            restore_one(sysfs, &path, name, value, &mut changed)?;
        }
        // Writing a queue limit or feature (max_sectors_kb, rotational, add_random, iostats)
        // makes the kernel recompute read-ahead from the limits, so read_ahead_kb goes last.
        let (read_ahead, others): (Vec<_>, Vec<_>) =
            self.attributes.iter().partition(|(name, _)| name == "read_ahead_kb");
        for (name, value) in others.into_iter().chain(read_ahead) {
            let path = device.queue_attr(name);
            restore_one(sysfs, &path, name, value, &mut changed)?;
        }
        Ok(changed)
    }
}

/// Writes `value` to `path` when it reads otherwise now.
fn restore_one(
    sysfs: &Sysfs,
    path: &std::path::Path,
    name: &str,
    value: &str,
    changed: &mut Vec<String>,
) -> Result<(), KernelError> {
    let Some(now) = sysfs.read_optional(path) else { return Ok(()) };
    use std::os::unix::fs::PermissionsExt;
    let read_only = std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o222 == 0);
    if now == value || read_only {
        return Ok(());
    }
    retry_busy(|| sysfs.write(path, value))?;
    changed.push(format!("{name}: {now} -> {value}"));
    Ok(())
}

/// Runs `write` until it is not refused as busy, a bounded number of times.
fn retry_busy(mut write: impl FnMut() -> Result<(), KernelError>) -> Result<(), KernelError> {
    let mut tries = 0;
    loop {
        match write() {
            Err(error) if error.is_retryable() && tries < BUSY_RETRIES => {
                tries += 1;
                std::thread::sleep(BUSY_WAIT);
            }
            other => return other,
        }
    }
}

/// A snapshot not yet restored, and its file.
#[derive(Debug)]
struct Pending {
    snapshot: Snapshot,
    file: PathBuf,
}

/// Restores a snapshot once: when [`RestoreGuard::restore`] is called, when the guard is
/// dropped (an error returned early, a panic unwinding), or from another thread through a
/// [`RestoreHandle`] (a second Ctrl-C). Its file goes when the device is back, or when
/// [`RestoreGuard::keep_changes`] says the change was meant to last.
#[derive(Debug)]
pub struct RestoreGuard {
    handle: RestoreHandle,
}

/// Restores a guard's snapshot from another thread (a signal handler's).
#[derive(Clone, Debug)]
pub struct RestoreHandle {
    sysfs: Sysfs,
    pending: Arc<Mutex<Option<Pending>>>,
}

impl RestoreGuard {
    /// Takes a snapshot of `device`, keeps it on disk and guards it. Refuses when the device
    /// already has a snapshot: another command is changing it now
    /// ([`KernelError::InUse`]), or one ended without putting it back
    /// ([`KernelError::StaleSnapshot`]).
    pub fn new(sysfs: &Sysfs, device: &BlockDevice) -> Result<RestoreGuard, KernelError> {
        let store = SnapshotStore::new(sysfs);
        store.check_clear(device)?;
        let snapshot = Snapshot::take(sysfs, device)?;
        let file = store.claim(&snapshot)?;
        let pending = Arc::new(Mutex::new(Some(Pending { snapshot, file })));
        Ok(RestoreGuard { handle: RestoreHandle { sysfs: sysfs.clone(), pending } })
    }

    /// The snapshot it will restore.
    pub fn snapshot(&self) -> Option<Snapshot> {
        lock(&self.handle.pending).as_ref().map(|pending| pending.snapshot.clone())
    }

    /// The snapshot's file, while armed.
    pub fn file(&self) -> Option<PathBuf> {
        lock(&self.handle.pending).as_ref().map(|pending| pending.file.clone())
    }

    /// A handle that restores from elsewhere.
    pub fn handle(&self) -> RestoreHandle {
        self.handle.clone()
    }

    /// Restores now and disarms. Returns what changed.
    pub fn restore(self) -> Result<Vec<String>, KernelError> {
        self.handle.restore_now()
    }

    /// Disarms without restoring and forgets the snapshot: the change was meant to last
    /// (`kernel set`, `kernel tune`).
    pub fn keep_changes(self) -> Result<(), KernelError> {
        let Some(pending) = lock(&self.handle.pending).take() else { return Ok(()) };
        SnapshotStore::new(&self.handle.sysfs).remove(&pending.file)
    }
}

impl RestoreHandle {
    /// Restores the snapshot if nobody has yet, then forgets it. Returns what changed
    /// (nothing when it was already restored). When restoring fails the snapshot stays, on
    /// disk too, for `elevator kernel restore`.
    pub fn restore_now(&self) -> Result<Vec<String>, KernelError> {
        let mut pending = lock(&self.pending);
        let Some(armed) = pending.as_ref() else { return Ok(Vec::new()) };
        let changed = armed.snapshot.restore(&self.sysfs)?;
        SnapshotStore::new(&self.sysfs).remove(&armed.file)?;
        *pending = None;
        Ok(changed)
    }
}

impl Drop for RestoreGuard {
    fn drop(&mut self) {
        if let Err(error) = self.handle.restore_now() {
            // Drop cannot return the error; saying it is the least a guard owes the user.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("elevator: could not restore the device's scheduler settings: {error}");
            }
        }
    }
}

/// The lock, even if a panicking thread held it (the snapshot is plain data).
fn lock(pending: &Mutex<Option<Pending>>) -> std::sync::MutexGuard<'_, Option<Pending>> {
    pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
