//! What can go wrong driving the kernel's schedulers. Every error names the device or file
//! and says what would do instead.

use std::path::PathBuf;

/// An error of the kernel driver.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The name or path does not lead to a block device with a request queue.
    #[error("{given}: not a block device: {why}")]
    NotABlockDevice {
        /// What the user gave.
        given: String,
        /// What it is instead, and what would do.
        why: String,
    },
    /// The kernel does not offer that scheduler for this device.
    #[error(
        "{device}: unknown scheduler `{name}`; this device offers: {}{hint}",
        available.join(", ")
    )]
    UnknownScheduler {
        /// The device.
        device: String,
        /// The name asked for.
        name: String,
        /// What `queue/scheduler` lists.
        available: Vec<String>,
        /// More on why (not built into this kernel, a 2.6 name).
        hint: String,
    },
    /// The kernel refused for now: the queue is busy (being frozen or switched by someone
    /// else). Trying again later may work.
    #[error(
        "{path}: device busy (EBUSY) writing `{value}`; the queue is being changed or is in use — try again"
    )]
    Busy {
        /// The attribute.
        path: PathBuf,
        /// What was written.
        value: String,
    },
    /// Writing needs root.
    #[error(
        "{path}: permission denied writing `{value}`; changing the kernel's scheduler needs root (run with sudo)"
    )]
    PermissionDenied {
        /// The attribute.
        path: PathBuf,
        /// What was written.
        value: String,
    },
    /// The key is neither a queue attribute nor a tunable of the current scheduler.
    #[error("{device}: unknown key `{key}` for scheduler {scheduler}; accepted: {}{hint}", accepted.join(", "))]
    UnknownKey {
        /// The device.
        device: String,
        /// The key.
        key: String,
        /// The device's current scheduler.
        scheduler: String,
        /// What may be set now.
        accepted: Vec<String>,
        /// More on why (the key belongs to another scheduler).
        hint: String,
    },
    /// A setting is not of the form the kernel takes.
    #[error("{device}: `{setting}`: {why}")]
    BadSetting {
        /// The device.
        device: String,
        /// The setting as given.
        setting: String,
        /// What is wrong and what is accepted.
        why: String,
    },
    /// The kernel rejected a value (EINVAL): out of its range, or not a number it takes.
    #[error(
        "{path}: the kernel rejected `{value}` (EINVAL): out of range or not a value this attribute takes"
    )]
    Rejected {
        /// The attribute.
        path: PathBuf,
        /// What was written.
        value: String,
    },
    /// The kernel accepted a write but the attribute reads back otherwise.
    #[error("{path}: wrote `{wanted}` but it reads back `{found}`")]
    NotApplied {
        /// The attribute.
        path: PathBuf,
        /// What was written.
        wanted: String,
        /// What it says now.
        found: String,
    },
    /// An attribute could not be read or parsed.
    #[error("{path}: {what}")]
    Attribute {
        /// The attribute.
        path: PathBuf,
        /// What went wrong.
        what: String,
    },
    /// Another system call failed.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// An earlier elevator command changed the device, kept a snapshot of what it changed,
    /// and ended without putting it back (killed, or the machine's power failed mid-run).
    /// Nothing new is changed over it: the snapshot is the only record of the settings from
    /// before.
    #[error(
        "{device}: `{command}` (pid {pid}, no longer running) changed this device and left a \
         snapshot of its settings from before it ({path}); put them back with `elevator kernel \
         restore {device}`, or keep the device as it is now with `elevator kernel restore \
         --discard {device}`"
    )]
    StaleSnapshot {
        /// The device.
        device: String,
        /// The command that left it.
        command: String,
        /// Its process id.
        pid: u32,
        /// The snapshot file.
        path: PathBuf,
    },
    /// Another elevator command is changing the device now. Trying again when it has ended
    /// may work.
    #[error(
        "{device}: `{command}` (pid {pid}) is changing this device now and will put it back \
         when it ends; wait for it and try again"
    )]
    InUse {
        /// The device.
        device: String,
        /// The command that holds it.
        command: String,
        /// Its process id.
        pid: u32,
    },
    /// A snapshot file is not one this version wrote.
    #[error("{path}: line {line}: {why}")]
    BadSnapshot {
        /// The file.
        path: PathBuf,
        /// The line (1-based; 0 for the file as a whole).
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// udev could not be told about a rule.
    #[error("{0}")]
    Udev(String),
    /// The boot line could not be changed (no boot loader found, a tool missing or failing).
    #[error("{0}")]
    BootLoader(String),
    /// A kernel release string elevator cannot place in a block-layer generation.
    #[error("kernel release `{release}`: {why}")]
    BadRelease {
        /// The release as given (`uname -r`).
        release: String,
        /// What is wrong, and what is accepted.
        why: String,
    },
    /// The scheduler does not exist in the running kernel's generation.
    #[error(
        "scheduler `{scheduler}` does not exist on Linux {release}: {why}; accepted: {}",
        accepted.join(", ")
    )]
    NotInGeneration {
        /// The kernel release.
        release: String,
        /// The name asked for.
        scheduler: String,
        /// Why not.
        why: String,
        /// What that kernel offers here.
        accepted: Vec<String>,
    },
    /// The benchmark itself failed.
    #[error(transparent)]
    Live(#[from] elevator_live::LiveError),
    /// A workload or key is invalid.
    #[error(transparent)]
    Param(#[from] elevator_core::ParamError),
}

impl KernelError {
    /// Whether trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, KernelError::Busy { .. } | KernelError::InUse { .. })
    }

    /// A failed system call on `path` while doing `what`.
    pub(crate) fn io(path: impl Into<PathBuf>, what: &'static str, source: std::io::Error) -> Self {
        KernelError::Io { path: path.into(), what, source }
    }
}
