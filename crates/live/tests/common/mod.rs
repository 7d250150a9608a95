//! Support shared by the live tests: running tools, and loop devices the tests create and
//! remove themselves.

// A skipped test or a failed cleanup must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr, dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Serialises `losetup --find --show`: tests run in parallel, and two of them picking the
/// same free device at once would make one fail.
static LOSETUP: Mutex<()> = Mutex::new(());

/// Runs `program` with `args`, panicking with its stderr if it fails; returns its stdout.
pub(crate) fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Whether `program` can be started at all (it is installed and on PATH).
pub(crate) fn have(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

/// Why loop devices cannot be used here, if they cannot.
pub(crate) fn loop_devices_missing() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not running as root (loop devices need it)".into());
    }
    if !have("losetup") {
        return Some("losetup is not installed".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("/dev/loop-control does not exist (no loop driver)".into());
    }
    None
}

/// A loop device over a temporary backing file, detached (and everything mounted or swapped
/// on it undone) when dropped, so a failed assertion leaves nothing behind.
pub(crate) struct LoopDevice {
    device: PathBuf,
    /// Filesystems mounted on it or its partitions, unmounted before it is detached; the
    /// directories are removed after that (fields drop after `Drop::drop`).
    mounts: Vec<tempfile::TempDir>,
    swapped: Option<PathBuf>,
    _backing_dir: tempfile::TempDir,
}

impl LoopDevice {
    /// Attaches a fresh loop device over `size_bytes` of zeroes that `prepare` may write
    /// to first; `partscan` asks the kernel to read its partition table. `None` (after saying
    /// why) when this machine cannot have loop devices.
    pub(crate) fn attach(
        test: &str,
        size_bytes: u64,
        partscan: bool,
        prepare: impl FnOnce(&mut File),
    ) -> Option<LoopDevice> {
        if let Some(reason) = loop_devices_missing() {
            eprintln!("skipping {test}: {reason}");
            return None;
        }
        let backing_dir = tempfile::tempdir().expect("a temporary directory");
        let backing = backing_dir.path().join("backing");
        let mut file = File::create(&backing).expect("a backing file");
        file.set_len(size_bytes).expect("backing file size");
        prepare(&mut file);
        file.sync_all().expect("sync the backing file");
        drop(file);
        let backing = backing.to_str().expect("a UTF-8 temporary path");
        let mut args = vec!["--find", "--show", "--direct-io=on"];
        if partscan {
            args.push("--partscan");
        }
        args.push(backing);
        let device = {
            let _one_at_a_time = LOSETUP.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            run("losetup", &args)
        };
        Some(LoopDevice {
            device: PathBuf::from(device),
            mounts: Vec::new(),
            swapped: None,
            _backing_dir: backing_dir,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.device
    }

    pub(crate) fn name(&self) -> String {
        self.device.file_name().unwrap().to_string_lossy().into_owned()
    }

    /// Mounts the ext4 filesystem on `device` (this loop device or one of its partitions) on
    /// a fresh directory, and returns the directory.
    pub(crate) fn mount(&mut self, device: &Path) -> PathBuf {
        let dir = tempfile::tempdir().expect("a mount point");
        let point = dir.path().canonicalize().unwrap();
        run("mount", &["-t", "ext4", device.to_str().unwrap(), point.to_str().unwrap()]);
        self.mounts.push(dir);
        point
    }

    pub(crate) fn swap_on(&mut self) {
        let device = self.device.to_str().unwrap();
        run("mkswap", &["-q", device]);
        run("swapon", &[device]);
        self.swapped = Some(self.device.clone());
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        // Errors are reported, not raised: this runs while a failed test unwinds, and a
        // second panic would abort before the rest is cleaned up.
        let quiet = |program: &str, args: &[&str]| match Command::new(program).args(args).output() {
            Ok(output) if output.status.success() => {}
            Ok(output) => eprintln!(
                "cleanup: {program} {args:?}: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Err(error) => eprintln!("cleanup: cannot run {program}: {error}"),
        };
        if let Some(device) = &self.swapped {
            quiet("swapoff", &[device.to_str().unwrap()]);
        }
        for dir in self.mounts.iter().rev() {
            quiet("umount", &[dir.path().to_str().unwrap()]);
        }
        quiet("losetup", &["-d", self.device.to_str().unwrap()]);
    }
}
