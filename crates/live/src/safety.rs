//! Whether writing to a target could destroy someone's data.
//!
//! A block device is unsafe to write when it is divided into partitions, when it (or one of
//! its partitions) is mounted, is an active swap area, has holders (device-mapper, MD RAID,
//! bcache stacked on it), cannot be opened exclusively (something has claimed it), or
//! carries any signature libblkid knows: filesystems, RAID (MD 0.90 and 1.x, at either end
//! of the device), LVM, swap, crypto headers, ceph bluestore, VDO, partition tables.
//!
//! Every check fails safe: when a file that must be there cannot be read, a path cannot be
//! stat'ed or the probe cannot run, that itself is a hazard, because "we could not tell" must
//! refuse rather than permit. The only absences tolerated are of files that legitimately may
//! be missing (a device without a `holders/` directory, a kernel without swap support and so
//! without `/proc/swaps`).
//!
//! Signatures are util-linux's business: libblkid knows well over a hundred formats, with
//! their checksums and their metadata at the end of a device, and is kept current with new
//! ones. A hand-written table here knew a dozen and let minix, bfs, cramfs, ceph bluestore,
//! VDO and MD 0.90 members through (issue 14). The probe runs as `blkid -p` (libblkid's
//! low-level probe of the device itself, not its cache) rather than through bindings
//! (`libblkid-rs`): bindings need libblkid's headers and bindgen with libclang at every build,
//! while the `blkid` program is installed wherever util-linux is, which is every Linux
//! distribution, and only the write path needs it. Without it a write is refused, never
//! allowed unchecked. The mounted, swap, holder, partition and exclusive-open checks stay
//! here: they read the kernel's live state, which no signature shows.
//!
//! Files are simpler: the tool marks the files it creates with an extended attribute, and
//! only a file carrying the mark is written without `--force`.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The extended attribute that marks a file the tool created.
pub(crate) const SCRATCH_XATTR: &str = "user.elevator.scratch";

/// Where sysfs lists block devices by device number.
const SYS_DEV_BLOCK: &str = "/sys/dev/block";

/// A device number, as `MAJ:MIN` in sysfs and mountinfo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DevNum {
    major: u32,
    minor: u32,
}

impl DevNum {
    fn from_raw(rdev: u64) -> DevNum {
        DevNum { major: rustix::fs::major(rdev), minor: rustix::fs::minor(rdev) }
    }

    /// Parses `MAJ:MIN`.
    fn parse(text: &str) -> Option<DevNum> {
        let (major, minor) = text.trim().split_once(':')?;
        Some(DevNum { major: major.parse().ok()?, minor: minor.parse().ok()? })
    }
}

impl std::fmt::Display for DevNum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

/// The device asked about, or one of its partitions.
#[derive(Debug, PartialEq, Eq)]
struct Device {
    /// The kernel's name (`loop0`, `sda1`).
    name: String,
    number: DevNum,
    /// Its sysfs directory, where `holders/` is.
    sys_dir: PathBuf,
    partition: bool,
}

impl Device {
    /// `what` said of this device: as is for the device itself, naming the partition for one
    /// of its partitions (the user asked about the whole device and must learn which part is
    /// busy).
    fn phrase(&self, what: &str) -> String {
        if self.partition { format!("partition {} is {what}", self.name) } else { what.into() }
    }
}

/// What makes writing to the block device at `path` unsafe, one phrase each (empty: safe).
pub(crate) fn block_device_hazards(path: &Path) -> Vec<String> {
    let number = match std::fs::metadata(path) {
        Ok(metadata) => DevNum::from_raw(metadata.rdev()),
        Err(error) => return vec![format!("cannot stat it to check it ({error})")],
    };
    let mut hazards = Vec::new();
    let devices = devices(Path::new(SYS_DEV_BLOCK), path, number, &mut hazards);
    match std::fs::read_to_string("/proc/self/mountinfo") {
        Ok(mountinfo) => hazards.extend(mount_hazards(&mountinfo, &devices)),
        Err(error) => hazards.push(format!(
            "cannot read /proc/self/mountinfo to see whether it is mounted ({error})"
        )),
    }
    match std::fs::read_to_string("/proc/swaps") {
        Ok(swaps) => hazards.extend(swap_hazards(&swaps, &devices)),
        // A kernel built without swap support has no /proc/swaps, and no swap either.
        Err(error) if error.kind() == ErrorKind::NotFound => {}
        Err(error) => hazards
            .push(format!("cannot read /proc/swaps to see whether it is swap space ({error})")),
    }
    hazards.extend(holder_hazards(&devices));
    hazards.extend(exclusive_open_hazard(path));
    hazards.extend(partition_hazard(&devices));
    hazards.extend(signature_hazards(find_blkid().as_deref(), path));
    hazards
}

/// Whether the kernel holds the block device at `path` read-only (`/sys/dev/block/MAJ:MIN/ro`).
pub(crate) fn is_read_only(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else { return false };
    let number = DevNum::from_raw(metadata.rdev());
    let ro = Path::new(SYS_DEV_BLOCK).join(number.to_string()).join("ro");
    std::fs::read_to_string(ro).is_ok_and(|text| text.trim() == "1")
}

/// The device numbered `number` (at `path`) and its partitions, from sysfs under
/// `sys_dev_block`. A sysfs entry that cannot be read adds a hazard, since a partition missed
/// is a mount or holder missed.
fn devices(
    sys_dev_block: &Path,
    path: &Path,
    number: DevNum,
    hazards: &mut Vec<String>,
) -> Vec<Device> {
    let sys_dir = sys_dev_block.join(number.to_string());
    // `/sys/dev/block/MAJ:MIN` links to the device's directory, which is named after it;
    // the path given may be any alias (`/dev/disk/by-id/...`).
    let name = std::fs::canonicalize(&sys_dir)
        .ok()
        .and_then(|dir| dir.file_name().map(|name| name.to_string_lossy().into_owned()))
        .or_else(|| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_else(|| path.display().to_string());
    let mut devices = vec![Device { name, number, sys_dir: sys_dir.clone(), partition: false }];
    let entries = match std::fs::read_dir(&sys_dir) {
        Ok(entries) => entries,
        Err(error) => {
            hazards.push(format!(
                "cannot list {} to find its partitions and holders ({error})",
                sys_dir.display()
            ));
            return devices;
        }
    };
    let mut partitions = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                hazards.push(format!("cannot list {} ({error})", sys_dir.display()));
                continue;
            }
        };
        // Partitions are real subdirectories; the links beside them (`bdi`, `subsystem`)
        // lead elsewhere in sysfs and must not be followed.
        match entry.file_type() {
            Ok(file_type) if file_type.is_dir() => {}
            Ok(_) => continue,
            Err(error) => {
                hazards.push(format!("cannot stat {} ({error})", entry.path().display()));
                continue;
            }
        }
        let dir = entry.path();
        match std::fs::metadata(dir.join("partition")) {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::NotFound => continue,
            Err(error) => {
                hazards.push(format!("cannot stat {} ({error})", dir.join("partition").display()));
                continue;
            }
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let dev_file = dir.join("dev");
        match std::fs::read_to_string(&dev_file).map(|text| DevNum::parse(&text)) {
            Ok(Some(number)) => {
                partitions.push(Device { name, number, sys_dir: dir, partition: true });
            }
            Ok(None) => hazards.push(format!(
                "cannot tell partition {name}'s device number ({} is not MAJ:MIN)",
                dev_file.display()
            )),
            Err(error) => hazards.push(format!(
                "cannot tell partition {name}'s device number ({}: {error})",
                dev_file.display()
            )),
        }
    }
    // read_dir's order is the filesystem's; sorted, the phrases read the same every time.
    partitions.sort_by(|a, b| a.name.cmp(&b.name));
    devices.extend(partitions);
    devices
}

/// One line of `/proc/self/mountinfo`: what is mounted where.
#[derive(Debug, PartialEq, Eq)]
struct Mount {
    /// The device number of the mounted filesystem (field 3).
    number: DevNum,
    mount_point: String,
    /// The mount source after the ` - ` separator (`/dev/sda1`, `tmpfs`, `server:/export`).
    source: String,
}

/// Parses `/proc/self/mountinfo`, or names the first line that does not parse.
fn parse_mountinfo(text: &str) -> Result<Vec<Mount>, String> {
    let mut mounts = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let fields: Vec<&str> = line.split(' ').collect();
        // Fields: id, parent id, MAJ:MIN, root, mount point, options, optional fields ended
        // by "-", then filesystem type, source, super options.
        let separator = fields.iter().skip(6).position(|field| *field == "-").map(|i| i + 6);
        let parsed = match (fields.get(2).and_then(|f| DevNum::parse(f)), fields.get(4), separator)
        {
            (Some(number), Some(mount_point), Some(separator)) => Some(Mount {
                number,
                mount_point: unescape_octal(mount_point),
                source: fields.get(separator + 2).map(|s| unescape_octal(s)).unwrap_or_default(),
            }),
            _ => None,
        };
        match parsed {
            Some(mount) => mounts.push(mount),
            None => return Err(line.to_string()),
        }
    }
    Ok(mounts)
}

/// Undoes the kernel's escaping of space, tab, newline and backslash as `\ooo` in the paths
/// of `/proc/self/mountinfo` and `/proc/swaps`.
fn unescape_octal(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|digits| {
            bytes[i] == b'\\' && digits.iter().all(|digit| (b'0'..=b'7').contains(digit))
        });
        match octal {
            Some(digits) => {
                let value =
                    digits.iter().fold(0u32, |value, digit| value * 8 + u32::from(digit - b'0'));
                // Three octal digits reach 511; only a byte is meaningful, and the kernel
                // never writes more than \377.
                out.push(value as u8);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where `devices` are mounted, per `mountinfo`.
fn mount_hazards(mountinfo: &str, devices: &[Device]) -> Vec<String> {
    let mounts = match parse_mountinfo(mountinfo) {
        Ok(mounts) => mounts,
        Err(line) => {
            return vec![format!(
                "cannot tell whether it is mounted (a line of /proc/self/mountinfo does not \
                 parse: {line:?})"
            )];
        }
    };
    let mut points: Vec<Vec<&str>> = devices.iter().map(|_| Vec::new()).collect();
    for mount in &mounts {
        // btrfs (and others spanning several devices) report an anonymous device number in
        // field 3, so a source naming a device node is checked too. A source that cannot be
        // stat'ed (`/dev/root`, which need not exist) proves nothing either way; field 3 is
        // the check that must not fail.
        let index = devices.iter().position(|device| device.number == mount.number).or_else(|| {
            let source = block_device_number(Path::new(&mount.source))?;
            devices.iter().position(|device| device.number == source)
        });
        if let Some(index) = index
            && !points[index].contains(&mount.mount_point.as_str())
        {
            points[index].push(&mount.mount_point);
        }
    }
    devices
        .iter()
        .zip(points)
        .filter(|(_, points)| !points.is_empty())
        .map(|(device, points)| device.phrase(&format!("mounted at {}", points.join(", "))))
        .collect()
}

/// The device number of the block device node at `path`, if it is one.
fn block_device_number(path: &Path) -> Option<DevNum> {
    if !path.starts_with("/dev/") {
        return None;
    }
    let metadata = std::fs::metadata(path).ok()?;
    metadata.file_type().is_block_device().then(|| DevNum::from_raw(metadata.rdev()))
}

/// The swap areas `/proc/swaps` lists (its first column, unescaped; the first line is a
/// header).
fn parse_swaps(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().next())
        .map(unescape_octal)
        .collect()
}

/// Which of `devices` are active swap areas, per `swaps`. Compared by device number, since
/// the listed name may be another alias of the same node.
fn swap_hazards(swaps: &str, devices: &[Device]) -> Vec<String> {
    let mut hazards = Vec::new();
    for area in parse_swaps(swaps) {
        let metadata = match std::fs::metadata(&area) {
            Ok(metadata) => metadata,
            Err(error) => {
                hazards.push(format!(
                    "cannot tell whether it is swap space (cannot stat {area}, listed in \
                     /proc/swaps: {error})"
                ));
                continue;
            }
        };
        // A swap file lives on a mounted filesystem, which the mount check covers.
        if !metadata.file_type().is_block_device() {
            continue;
        }
        let number = DevNum::from_raw(metadata.rdev());
        if let Some(device) = devices.iter().find(|device| device.number == number) {
            hazards.push(device.phrase("an active swap area"));
        }
    }
    hazards
}

/// The partitions among `devices`: a device divided into partitions is in use as a whole,
/// whether or not a table is still found on it (a table can be wiped while the kernel keeps
/// the partitions it read).
fn partition_hazard(devices: &[Device]) -> Option<String> {
    let names: Vec<&str> = devices
        .iter()
        .filter(|device| device.partition)
        .map(|device| device.name.as_str())
        .collect();
    (!names.is_empty()).then(|| format!("has partitions {}", names.join(", ")))
}

/// What is stacked on `devices` (device-mapper, MD RAID, bcache), per their sysfs
/// `holders/` directories.
fn holder_hazards(devices: &[Device]) -> Vec<String> {
    let mut hazards = Vec::new();
    for device in devices {
        let dir = device.sys_dir.join("holders");
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            // Not every kind of block device has the directory.
            Err(error) if error.kind() == ErrorKind::NotFound => continue,
            Err(error) => {
                hazards.push(format!("cannot list {} to find holders ({error})", dir.display()));
                continue;
            }
        };
        let mut holders = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) => holders.push(entry.file_name().to_string_lossy().into_owned()),
                Err(error) => {
                    hazards.push(format!("cannot list {} ({error})", dir.display()));
                }
            }
        }
        if !holders.is_empty() {
            holders.sort();
            hazards.push(device.phrase(&format!("held by {}", holders.join(", "))));
        }
    }
    hazards
}

/// Whether something has claimed the device: on Linux an `O_EXCL` open of a block device
/// fails with EBUSY while it is mounted, an active swap area, part of an array or mapping, or
/// opened exclusively by a program. This catches claims the other checks cannot see.
fn exclusive_open_hazard(path: &Path) -> Option<String> {
    match OpenOptions::new().read(true).custom_flags(libc::O_EXCL).open(path) {
        // Closed at once: the claim is only a probe; held, it would make the device look
        // busy to everyone else (a mount, another run) for as long as we keep it.
        Ok(file) => {
            drop(file);
            None
        }
        Err(error) if error.raw_os_error() == Some(libc::EBUSY) => {
            Some("in use (an exclusive open failed: busy)".into())
        }
        Err(error) => {
            Some(format!("cannot tell whether it is in use (an exclusive open failed: {error})"))
        }
    }
}

/// Where `blkid` is looked for besides `PATH`: a user's `PATH` often lacks the sbin
/// directories, where Debian and Fedora install it.
const BLKID_DIRS: &[&str] = &["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// The `blkid` program: the first on `PATH`, else in the sbin directories.
fn find_blkid() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(BLKID_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join("blkid"))
        .find(|candidate| candidate.is_file())
}

/// The signatures libblkid finds on `path`, one phrase each, probed by running `blkid`
/// (`None`: it is not installed, which refuses).
fn signature_hazards(blkid: Option<&Path>, path: &Path) -> Vec<String> {
    let Some(blkid) = blkid else {
        return vec![
            "cannot look for signatures: blkid (util-linux) is not installed or not in \
             /usr/sbin, /sbin"
                .into(),
        ];
    };
    // -p: low-level probing of the device itself (superblocks of every usage and partition
    // tables), bypassing blkid's cache, which may be stale or missing; -o export: one
    // KEY=value per line.
    let output = std::process::Command::new(blkid)
        .args(["-p", "-o", "export", "--"])
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output();
    match output {
        Ok(output) => blkid_hazards(
            output.status.code(),
            &String::from_utf8_lossy(&output.stdout),
            &String::from_utf8_lossy(&output.stderr),
        ),
        Err(error) => {
            vec![format!("cannot look for signatures: cannot run {} ({error})", blkid.display())]
        }
    }
}

/// What `blkid -p -o export` said, as hazards. Its exit codes: 0 found something, 2 found
/// nothing, 8 found several signatures that contradict each other ("ambivalent"); anything
/// else is a failure, which refuses.
fn blkid_hazards(code: Option<i32>, stdout: &str, stderr: &str) -> Vec<String> {
    match code {
        Some(0) => {}
        Some(2) => return Vec::new(),
        Some(8) => {
            return vec![
                "several conflicting signatures (blkid -p: ambivalent result; `wipefs --no-act` \
                 lists them)"
                    .into(),
            ];
        }
        _ => {
            let status = code.map_or_else(|| "killed by a signal".into(), |c| format!("exit {c}"));
            return vec![format!(
                "cannot look for signatures (blkid -p failed, {status}: {})",
                stderr.trim()
            )];
        }
    }
    let value = |key: &str| {
        stdout.lines().find_map(|line| line.strip_prefix(key)?.strip_prefix('=')).map(str::trim)
    };
    let mut hazards = Vec::new();
    if let Some(kind) = value("TYPE") {
        let mut details = vec![value("USAGE").unwrap_or("unknown usage").to_string()];
        details.extend(value("VERSION").map(|version| format!("version {version}")));
        details.extend(value("LABEL").map(|label| format!("label {label:?}")));
        hazards.push(format!("a signature of type {kind} ({})", details.join(", ")));
    }
    if let Some(table) = value("PTTYPE") {
        hazards.push(format!("a partition table of type {table}"));
    }
    // Exit 0 with neither key (a partition's PART_ENTRY_* keys describe the table entry
    // pointing at it, not its content): nothing on the device itself.
    hazards
}

/// Marks `file` as created by the tool.
pub(crate) fn mark_scratch(file: &File) -> std::io::Result<()> {
    rustix::fs::fsetxattr(file, SCRATCH_XATTR, b"1", rustix::fs::XattrFlags::empty())
        .map_err(Into::into)
}

/// Whether the file at `path` carries the tool's mark.
pub(crate) fn is_scratch(path: &Path) -> bool {
    let mut value = [0u8; 8];
    rustix::fs::getxattr(path, SCRATCH_XATTR, &mut value).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves blkid's answers map to refusals: what it found is named (type, usage,
    // version, label; a partition table), "nothing found" (exit 2) passes, and an ambivalent
    // result, a failure or a missing blkid refuse rather than pass.
    #[test]
    fn blkid_results_become_hazards() {
        let minix =
            "DEVNAME=/dev/loop0\nVERSION=1\nBLOCK_SIZE=1024\nTYPE=minix\nUSAGE=filesystem\n";
        assert_eq!(
            blkid_hazards(Some(0), minix, ""),
            vec!["a signature of type minix (filesystem, version 1)"]
        );
        let ext4 = "DEVNAME=/dev/sdz\nLABEL=home\nTYPE=ext4\nUSAGE=filesystem\nPTTYPE=dos\n";
        assert_eq!(
            blkid_hazards(Some(0), ext4, ""),
            vec![
                "a signature of type ext4 (filesystem, label \"home\")",
                "a partition table of type dos"
            ]
        );
        assert!(blkid_hazards(Some(2), "", "").is_empty());
        let entry = "DEVNAME=/dev/sdz1\nPART_ENTRY_SCHEME=dos\nPART_ENTRY_TYPE=0x83\n";
        assert!(blkid_hazards(Some(0), entry, "").is_empty(), "a blank partition");
        assert!(blkid_hazards(Some(8), "", "")[0].contains("several conflicting signatures"));
        let failed = blkid_hazards(Some(4), "", "blkid: bad usage\n");
        assert!(failed[0].contains("exit 4: blkid: bad usage"), "{failed:?}");
        assert!(blkid_hazards(None, "", "")[0].contains("killed by a signal"));
        let missing = signature_hazards(None, Path::new("/dev/null"));
        assert!(missing[0].contains("blkid (util-linux) is not installed"), "{missing:?}");
    }

    // Proves mountinfo is read field by field: optional fields are skipped, escaped mount
    // points are decoded, the source after the separator is kept.
    #[test]
    fn mountinfo_parses_with_optional_fields_and_escapes() {
        let text = "22 1 7:0 / /mnt/my\\040disk rw,relatime shared:1 master:2 - ext4 /dev/loop0 rw\n\
                    23 1 0:45 / /data rw - btrfs /dev/sdb rw,space_cache\n\
                    24 1 0:5 / /dev rw - devtmpfs devtmpfs rw\n";
        let mounts = parse_mountinfo(text).unwrap();
        assert_eq!(
            mounts,
            vec![
                Mount {
                    number: DevNum { major: 7, minor: 0 },
                    mount_point: "/mnt/my disk".into(),
                    source: "/dev/loop0".into(),
                },
                Mount {
                    number: DevNum { major: 0, minor: 45 },
                    mount_point: "/data".into(),
                    source: "/dev/sdb".into(),
                },
                Mount {
                    number: DevNum { major: 0, minor: 5 },
                    mount_point: "/dev".into(),
                    source: "devtmpfs".into(),
                },
            ]
        );
        assert!(parse_mountinfo("22 1 7:0 / /mnt rw\n").is_err(), "no separator");
        assert!(parse_mountinfo("22 1 seven / /mnt rw - ext4 /dev/x rw\n").is_err());
    }

    fn device(name: &str, major: u32, minor: u32, partition: bool) -> Device {
        Device {
            name: name.into(),
            number: DevNum { major, minor },
            sys_dir: PathBuf::from("/nonexistent"),
            partition,
        }
    }

    // Proves mounts are matched by device number, name the mount points, and say which
    // partition is mounted when it is not the device itself.
    #[test]
    fn mounts_are_matched_by_device_number() {
        let devices = [device("loop9", 7, 9, false), device("loop9p1", 259, 3, true)];
        let text = "1 0 7:9 / /mnt/a rw - ext4 /dev/loop9 rw\n\
                    2 0 7:9 / /mnt/b rw - ext4 /dev/loop9 rw\n\
                    3 0 7:9 /sub /mnt/a rw - ext4 /dev/loop9 rw\n\
                    4 0 259:3 / /boot rw - vfat /dev/loop9p1 rw\n\
                    5 0 7:10 / /other rw - ext4 /dev/loop10 rw\n";
        assert_eq!(
            mount_hazards(text, &devices),
            vec!["mounted at /mnt/a, /mnt/b", "partition loop9p1 is mounted at /boot"]
        );
        assert!(mount_hazards("5 0 7:10 / /other rw - ext4 x rw\n", &devices).is_empty());
        assert_eq!(mount_hazards("garbage\n", &devices).len(), 1, "unparsable means refuse");
    }

    // Proves /proc/swaps is read past its header, and a listed area that cannot be stat'ed
    // refuses rather than passes.
    #[test]
    fn swaps_parse_and_fail_safe() {
        let text = "Filename\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/zram0    partition\t4194300\t0\t100\n\
                    /swap\\040file file 1024 0 -2\n";
        assert_eq!(parse_swaps(text), vec!["/dev/zram0", "/swap file"]);
        let devices = [device("loop9", 7, 9, false)];
        let hazards = swap_hazards("Filename\n/nonexistent/swap partition 1 0 -2\n", &devices);
        assert_eq!(hazards.len(), 1);
        assert!(hazards[0].contains("cannot stat /nonexistent/swap"), "{hazards:?}");
        assert!(swap_hazards("Filename Type Size Used Priority\n", &devices).is_empty());
    }

    // Proves `\ooo` escapes decode and anything else passes through.
    #[test]
    fn octal_escapes_decode() {
        assert_eq!(unescape_octal(r"a\040b\011c\134d"), "a b\tc\\d");
        assert_eq!(unescape_octal(r"\09x\"), r"\09x\");
    }

    // Proves partitions and holders are found in a sysfs-shaped tree: partition
    // subdirectories (those with a `partition` file) with their device numbers, other
    // subdirectories and links ignored, holders of the device and of a partition named.
    #[test]
    fn partitions_and_holders_come_from_sysfs() {
        let root = tempfile::tempdir().unwrap();
        let disk = root.path().join("devices/loop9");
        let part = disk.join("loop9p1");
        for dir in [disk.join("holders"), disk.join("queue"), part.join("holders")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(disk.join("dev"), "7:9\n").unwrap();
        std::fs::write(disk.join("size"), "2048\n").unwrap();
        std::fs::write(part.join("partition"), "1\n").unwrap();
        std::fs::write(part.join("dev"), "259:3\n").unwrap();
        std::fs::write(part.join("holders/dm-1"), "").unwrap();
        std::os::unix::fs::symlink(root.path(), disk.join("subsystem")).unwrap();
        let block = root.path().join("block");
        std::fs::create_dir(&block).unwrap();
        std::os::unix::fs::symlink(&disk, block.join("7:9")).unwrap();

        let mut hazards = Vec::new();
        let number = DevNum { major: 7, minor: 9 };
        let devices = devices(&block, Path::new("/dev/whatever"), number, &mut hazards);
        assert!(hazards.is_empty(), "{hazards:?}");
        let found: Vec<_> =
            devices.iter().map(|d| (d.name.as_str(), d.number, d.partition)).collect();
        assert_eq!(
            found,
            vec![("loop9", number, false), ("loop9p1", DevNum { major: 259, minor: 3 }, true)]
        );
        assert_eq!(holder_hazards(&devices), vec!["partition loop9p1 is held by dm-1"]);

        std::fs::write(disk.join("holders/md0"), "").unwrap();
        std::fs::write(disk.join("holders/dm-0"), "").unwrap();
        assert_eq!(
            holder_hazards(&devices),
            vec!["held by dm-0, md0", "partition loop9p1 is held by dm-1"]
        );
    }

    // Proves a device sysfs does not list refuses (we cannot see its partitions or holders),
    // still naming it after the path given.
    #[test]
    fn a_device_missing_from_sysfs_fails_safe() {
        let root = tempfile::tempdir().unwrap();
        let mut hazards = Vec::new();
        let number = DevNum { major: 7, minor: 9 };
        let devices = devices(root.path(), Path::new("/dev/sdz"), number, &mut hazards);
        assert_eq!(devices.len(), 1);
        assert_eq!(devices[0].name, "sdz");
        assert_eq!(hazards.len(), 1);
        assert!(hazards[0].contains("cannot list"), "{hazards:?}");
    }
}
