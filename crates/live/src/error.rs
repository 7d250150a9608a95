//! What can go wrong in front of a real device.

use std::path::PathBuf;

/// An error of the live engine. Each says what was wrong and where.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A system call on the target failed.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The target.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// Writing to the target could destroy data the tool did not create.
    #[error("{path}: refusing to write: {found}; pass --force to write anyway")]
    Unsafe {
        /// The target.
        path: PathBuf,
        /// What was found (a mount, a holder, a signature, a file the tool did not create).
        found: String,
    },
    /// Another process holds the target's lock: one run per target at a time. Retrying after
    /// the holder finishes succeeds.
    #[error("{path}: in use by {holder}; one run per target at a time, wait for it to finish")]
    Busy {
        /// The node locked (the target, or a partition's whole disk).
        path: PathBuf,
        /// Who holds it: `PID 1234 (elevator run ...)`.
        holder: String,
    },
    /// Creating the scratch file was stopped (Ctrl-C); what was written is removed.
    #[error("{path}: stopped while creating the scratch file; removed it")]
    Interrupted {
        /// The scratch file that was being created.
        path: PathBuf,
    },
    /// The target cannot serve this run (too small, wrong kind, no O_DIRECT).
    #[error("{path}: {problem}")]
    Target {
        /// The target.
        path: PathBuf,
        /// What is wrong, and what would do.
        problem: String,
    },
    /// An I/O the caller asked for cannot be done on this target as given.
    #[error("{0}")]
    BadIo(String),
    /// The block queue's settings are out of range.
    #[error("queue settings: {0}")]
    Queue(#[from] elevator_core::QueueConfigError),
    /// A scheduler, workload or key is invalid.
    #[error(transparent)]
    Param(#[from] elevator_core::ParamError),
    /// The engine's thread has stopped (shut down, or failed: see its report).
    #[error("the engine has stopped")]
    Stopped,
    /// The I/O backend failed outright (not one I/O: the ring or the thread pool).
    #[error("{backend}: {source}")]
    Backend {
        /// Which backend.
        backend: &'static str,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

impl LiveError {
    /// An I/O error on `path` while doing `what`.
    pub(crate) fn io(path: impl Into<PathBuf>, what: &'static str, source: std::io::Error) -> Self {
        LiveError::Io { path: path.into(), what, source }
    }
}
