//! Support shared by the live tests: running tools (installing the missing ones), and loop
//! devices, mounts and arrays the tests create and remove themselves.

// A skipped test or a failed cleanup must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr, dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, Once};

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

/// Where programs are looked for besides `PATH`: a test's `PATH` may lack the sbin
/// directories, where most of the tools used here live.
const SBIN_DIRS: &[&str] = &["/usr/local/sbin", "/usr/sbin", "/sbin"];

/// The path of `program`, if it is installed.
pub(crate) fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Whether `program` is installed.
pub(crate) fn have(program: &str) -> bool {
    which(program).is_some()
}

/// Serialises installs (dpkg takes one at a time) and runs `apt-get update` once per test
/// binary.
static APT: Mutex<()> = Mutex::new(());
static APT_UPDATE: Once = Once::new();

/// Whether `program` is there, installing Debian's `package` for it when it is not. When it
/// still is not: under `CI=true` the test fails naming what is missing (a CI machine that
/// cannot run a safety test must not pass it); elsewhere the test says why and skips.
pub(crate) fn require(test: &str, program: &str, package: &str) -> bool {
    if have(program) {
        return true;
    }
    let why = if !have("apt-get") {
        "apt-get is not available to install it".to_string()
    } else if !rustix::process::geteuid().is_root() {
        "installing it needs root".to_string()
    } else {
        let _one_at_a_time = APT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        APT_UPDATE.call_once(|| {
            let _ = Command::new("apt-get").args(["update", "-qq"]).output();
        });
        let installed = Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output();
        match installed {
            _ if have(program) => return true,
            Ok(output) => format!(
                "apt-get install {package} did not provide it: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Err(error) => format!("cannot run apt-get: {error}"),
        }
    };
    let message = format!("{test}: {program} (Debian package {package}) is missing: {why}");
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
    eprintln!("skipping {message}");
    false
}

/// A 64-bit digest of everything on `path` (a device), read through the page cache, to show
/// that a refused run left it untouched.
pub(crate) fn checksum(path: &Path) -> u64 {
    use std::hash::Hasher;
    use std::io::Read;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut file = File::open(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buf).unwrap();
        if read == 0 {
            return hasher.finish();
        }
        hasher.write(&buf[..read]);
    }
}

/// A tmpfs of `size_bytes` mounted on a fresh directory, unmounted when dropped.
pub(crate) struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (after saying why) when this machine cannot mount here.
    pub(crate) fn mount(test: &str, size_bytes: u64) -> Option<Tmpfs> {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipping {test}: not running as root (mounting needs it)");
            return None;
        }
        let dir = tempfile::tempdir().expect("a mount point");
        let options = format!("size={size_bytes}");
        run("mount", &["-t", "tmpfs", "-o", &options, "tmpfs", dir.path().to_str().unwrap()]);
        Some(Tmpfs { dir })
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        cleanup("umount", &[self.dir.path().to_str().unwrap()]);
    }
}

/// Runs a cleanup command, reporting rather than raising errors: this runs while a failed
/// test unwinds, and a second panic would abort before the rest is cleaned up.
pub(crate) fn cleanup(program: &str, args: &[&str]) {
    match Command::new(program).args(args).output() {
        Ok(output) if output.status.success() => {}
        Ok(output) => eprintln!(
            "cleanup: {program} {args:?}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        Err(error) => eprintln!("cleanup: cannot run {program}: {error}"),
    }
}

/// An MD array over loop devices, stopped when dropped (before the loop devices, which are
/// declared first and so dropped after it).
pub(crate) struct MdArray {
    path: PathBuf,
}

impl MdArray {
    /// Creates a RAID1 array with `metadata` (`0.90`, `1.2`) over `members`. `None` when the
    /// kernel has no MD driver (no `/proc/mdstat`).
    pub(crate) fn create(name: &str, metadata: &str, members: &[&Path]) -> Option<MdArray> {
        if !Path::new("/proc/mdstat").exists() {
            return None;
        }
        let path = PathBuf::from(format!("/dev/md/{name}"));
        let count = members.len().to_string();
        let mut args = vec![
            "--create",
            path.to_str().unwrap(),
            "--run",
            "--force",
            "--quiet",
            "--metadata",
            metadata,
            "--level=1",
            "--raid-devices",
            &count,
        ];
        args.extend(members.iter().map(|member| member.to_str().unwrap()));
        run("mdadm", &args);
        Some(MdArray { path })
    }

    /// The array's device.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Stops the array now (by dropping it), leaving its members' superblocks behind.
    pub(crate) fn stop(self) {}
}

impl Drop for MdArray {
    fn drop(&mut self) {
        cleanup("mdadm", &["--stop", self.path.to_str().unwrap()]);
    }
}

/// An LVM physical volume, removed (`pvremove`) when dropped.
pub(crate) struct PhysicalVolume {
    device: PathBuf,
}

impl PhysicalVolume {
    pub(crate) fn create(device: &Path) -> PhysicalVolume {
        run("pvcreate", &["-q", "-y", device.to_str().unwrap()]);
        PhysicalVolume { device: device.into() }
    }
}

impl Drop for PhysicalVolume {
    fn drop(&mut self) {
        cleanup("pvremove", &["-q", "-y", "-ff", self.device.to_str().unwrap()]);
    }
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

    /// A read-only loop device (`losetup -r`) over `size_bytes` of zeroes.
    pub(crate) fn attach_read_only(test: &str, size_bytes: u64) -> Option<LoopDevice> {
        if let Some(reason) = loop_devices_missing() {
            eprintln!("skipping {test}: {reason}");
            return None;
        }
        let backing_dir = tempfile::tempdir().expect("a temporary directory");
        let backing = backing_dir.path().join("backing");
        File::create(&backing).expect("a backing file").set_len(size_bytes).expect("its size");
        let device = {
            let _one_at_a_time = LOSETUP.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            run("losetup", &["--find", "--show", "--read-only", backing.to_str().unwrap()])
        };
        Some(LoopDevice {
            device: PathBuf::from(device),
            mounts: Vec::new(),
            swapped: None,
            _backing_dir: backing_dir,
        })
    }

    /// The device was detached already (by the test): nothing to undo but the backing file.
    pub(crate) fn forget(mut self) {
        self.device = PathBuf::new();
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
        if let Some(device) = &self.swapped {
            cleanup("swapoff", &[device.to_str().unwrap()]);
        }
        for dir in self.mounts.iter().rev() {
            cleanup("umount", &[dir.path().to_str().unwrap()]);
        }
        if !self.device.as_os_str().is_empty() {
            cleanup("losetup", &["-d", self.device.to_str().unwrap()]);
        }
    }
}
