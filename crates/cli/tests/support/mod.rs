//! Real fio as the peer (issue 17): fio installed when missing, a RAM-backed loop device, and
//! fio's `json+` output parsed, for tests that hold elevator's live runs and outputs against
//! what real fio does with the same job file on the same device.
//!
//! Everything here needs root (loop devices, mounts, apt-get); a test that cannot have them
//! skips saying why, and under `CI=true` fails naming what is missing instead.

// A skipped test or a failed cleanup must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr, dead_code)]

#[path = "../../../live/tests/common/mod.rs"]
pub(crate) mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use elevator_kernel::{BlockDevice, Snapshot, Sysfs};
use serde_json::Value;

/// Whether `CI=true`: there a missing tool or device fails the test rather than skipping it.
fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| ci == "true")
}

/// The path of real fio, installing Debian's `fio` with apt-get when it is missing. `None`
/// (after saying why) when it cannot be had; under `CI=true` the test fails instead.
pub(crate) fn fio(test: &str) -> Option<PathBuf> {
    if common::require(test, "fio", "fio") { common::which("fio") } else { None }
}

/// Serialises `losetup --find --show` within this test binary: two tests picking the same
/// free device at once would make one fail.
static LOSETUP: Mutex<()> = Mutex::new(());

/// A loop device over a file on its own tmpfs (memory, so neither fio nor elevator measures a
/// disk), with its queue put back as found and everything removed when dropped — also when a
/// test fails.
pub(crate) struct RamLoop {
    device: PathBuf,
    sysfs: Sysfs,
    block: BlockDevice,
    found: Snapshot,
    _state: tempfile::TempDir,
    /// Unmounted after `Drop::drop` detached the device (fields drop after it).
    _tmpfs: common::Tmpfs,
}

impl RamLoop {
    /// Attaches a loop device of `size_bytes` of zeroes held in memory. `None` (after saying
    /// why) when this machine cannot have one; under `CI=true` that fails the test.
    pub(crate) fn attach(test: &str, size_bytes: u64) -> Option<RamLoop> {
        if let Some(reason) = common::loop_devices_missing() {
            assert!(!under_ci(), "{test} cannot run under CI=true: {reason}");
            eprintln!("skipping {test}: {reason}");
            return None;
        }
        // A little room over the file for the filesystem's own blocks.
        let tmpfs = common::Tmpfs::mount(test, size_bytes + (4 << 20))?;
        let backing = tmpfs.path().join("backing");
        // Real pages, not holes: reads of a sparse file would skip the copy.
        let mut file = std::fs::File::create(&backing).expect("the backing file");
        let chunk = vec![0u8; 1 << 20];
        let mut left = size_bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            file.write_all(&chunk[..n]).expect("filling the backing file");
            left -= n as u64;
        }
        drop(file);
        let device = {
            let _one_at_a_time = LOSETUP.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            common::run(
                "losetup",
                &["--find", "--show", "--direct-io=on", backing.to_str().expect("a UTF-8 path")],
            )
        };
        let state = tempfile::tempdir().expect("a snapshot directory");
        let sysfs = Sysfs::system().with_state_dir(state.path());
        let name = device.trim_start_matches("/dev/").to_owned();
        let block = match sysfs.device(&name) {
            Ok(block) => block,
            Err(error) => {
                common::cleanup("losetup", &["-d", &device]);
                panic!("{test}: {device} is not in /sys/block: {error}");
            }
        };
        let found = Snapshot::take(&sysfs, &block).expect("the loop device's queue state");
        Some(RamLoop {
            device: PathBuf::from(device),
            sysfs,
            block,
            found,
            _state: state,
            _tmpfs: tmpfs,
        })
    }

    /// `/dev/loopN`.
    pub(crate) fn path(&self) -> &Path {
        &self.device
    }

    /// `loopN`.
    pub(crate) fn name(&self) -> String {
        self.block.name.clone()
    }

    /// Its queue's state now (scheduler, tunables, nr_requests, read_ahead_kb).
    pub(crate) fn now(&self) -> Snapshot {
        Snapshot::take(&self.sysfs, &self.block).expect("the loop device's queue state")
    }

    /// Its queue's state when it was attached.
    pub(crate) fn found(&self) -> &Snapshot {
        &self.found
    }

    /// Sets the kernel's scheduler on it (put back when dropped).
    pub(crate) fn set_scheduler(&self, scheduler: &str) {
        let path = format!("/sys/block/{}/queue/scheduler", self.block.name);
        std::fs::write(&path, scheduler).unwrap_or_else(|error| panic!("{path}: {error}"));
    }
}

impl Drop for RamLoop {
    fn drop(&mut self) {
        // Reported, not raised: this runs while a failed test unwinds. The queue outlives
        // `losetup -d` (the next user of loopN gets it), so it goes back first.
        if let Err(error) = self.found.restore(&self.sysfs) {
            eprintln!("cleanup: could not put {} back as found: {error}", self.block);
        }
        common::cleanup("losetup", &["-d", self.device.to_str().unwrap()]);
    }
}

/// Runs real `fio` on `job_file` with `--output-format=json+` (into a file of its own, so
/// that fio's notes on stdout cannot corrupt it) and returns the parsed document. Panics
/// with fio's stderr when fio fails.
pub(crate) fn run_fio_json_plus(fio: &Path, job_file: &Path) -> Value {
    let dir = tempfile::tempdir().expect("a directory for fio's output");
    let output = dir.path().join("fio.json");
    let run = Command::new(fio)
        .arg("--output-format=json+")
        .arg(format!("--output={}", output.display()))
        .arg(job_file)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", fio.display()));
    assert!(
        run.status.success(),
        "fio {} failed ({}): {}",
        job_file.display(),
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&output).expect("fio's json+ output");
    // Some fio versions put notes before the document; it starts at the first `{`.
    let start = text.find('{').unwrap_or_else(|| panic!("no JSON in fio's output: {text}"));
    serde_json::from_str(&text[start..])
        .unwrap_or_else(|error| panic!("fio's json+ does not parse: {error}\n{text}"))
}
