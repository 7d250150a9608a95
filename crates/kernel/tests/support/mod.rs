//! Loop devices for the kernel driver's tests (shared with the CLI's `kernel` tests), put
//! back as found before they are detached.
//!
//! A loop device's request queue outlives `losetup -d`: the next `losetup --find` hands out
//! the same `loopN` with whatever scheduler and tunables the last user left. So a test disk
//! takes a snapshot right after attaching and restores it before detaching, also when the
//! test fails, and each test keeps its own snapshot directory so that it never meets another
//! test's (or the system's, `/run/elevator`).

// A skipped test or a failed cleanup must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr, dead_code)]

#[path = "../../../live/tests/common/mod.rs"]
pub(crate) mod common;

use std::path::Path;

use elevator_kernel::{BlockDevice, Snapshot, Sysfs};

use common::LoopDevice;

/// A loop device of one test over a fresh backing file.
pub(crate) struct TestDisk {
    sysfs: Sysfs,
    device: BlockDevice,
    found: Snapshot,
    state: tempfile::TempDir,
    /// Detached after `Drop::drop` has put the queue back (fields drop after it).
    disk: LoopDevice,
}

impl TestDisk {
    /// Attaches a loop device of `size_bytes`. `None` (after saying why) when this machine
    /// cannot have loop devices; under `CI=true` that is a failure naming what is missing,
    /// never a skip.
    pub(crate) fn attach(test: &str, size_bytes: u64) -> Option<TestDisk> {
        if let Some(reason) = common::loop_devices_missing()
            && std::env::var("CI").is_ok_and(|ci| ci == "true")
        {
            panic!("{test} cannot run under CI=true: {reason}");
        }
        let disk = LoopDevice::attach(test, size_bytes, false, |_| {})?;
        let state = tempfile::tempdir().expect("a snapshot directory");
        let sysfs = Sysfs::system().with_state_dir(state.path());
        let device = sysfs.device(&disk.name()).expect("the loop device in /sys/block");
        let found = Snapshot::take(&sysfs, &device).expect("the loop device's queue state");
        Some(TestDisk { sysfs, device, found, state, disk })
    }

    /// The real sysfs, keeping snapshots in this test's directory.
    pub(crate) fn sysfs(&self) -> &Sysfs {
        &self.sysfs
    }

    /// This test's snapshot directory.
    pub(crate) fn state_dir(&self) -> &Path {
        self.state.path()
    }

    /// `--state-dir=...` for the command line.
    pub(crate) fn state_arg(&self) -> String {
        format!("--state-dir={}", self.state.path().display())
    }

    pub(crate) fn device(&self) -> &BlockDevice {
        &self.device
    }

    pub(crate) fn name(&self) -> String {
        self.disk.name()
    }

    pub(crate) fn path(&self) -> &Path {
        self.disk.path()
    }

    /// The queue's state when it was attached.
    pub(crate) fn found(&self) -> &Snapshot {
        &self.found
    }

    /// Its state now.
    pub(crate) fn now(&self) -> Snapshot {
        Snapshot::take(&self.sysfs, &self.device).expect("the loop device's queue state")
    }

    /// Puts the queue back as it was found. Returns what changed.
    pub(crate) fn put_back(&self) -> Vec<String> {
        self.found.restore(&self.sysfs).expect("restoring the loop device's queue")
    }
}

impl Drop for TestDisk {
    fn drop(&mut self) {
        // Reported, not raised: this runs while a failed test unwinds.
        if let Err(error) = self.found.restore(&self.sysfs) {
            eprintln!("cleanup: could not put {} back as found: {error}", self.device);
        }
    }
}
