//! Whether writing to a target could destroy someone's data.
//!
//! A block device is unsafe to write when it (or one of its partitions) is mounted, is an
//! active swap area, has holders (device-mapper, MD RAID, bcache stacked on it), cannot be
//! opened exclusively (something has claimed it), or begins with the signature of a
//! filesystem, a partition table, RAID, LVM, swap or an encryption header.
//!
//! Every check fails safe: when a file that must be there cannot be read or a path cannot be
//! stat'ed, that itself is a hazard, because "we could not tell" must refuse rather than
//! permit. The only absences tolerated are of files that legitimately may be missing (a
//! device without a `holders/` directory, a kernel without swap support and so without
//! `/proc/swaps`).
//!
//! Signatures are recognised from the on-disk magic numbers the formats document (offset and
//! bytes), by code written here; no detection code was taken from util-linux or elsewhere.
//! Only the first 68 KiB are read, which covers every signature kept at the start of a
//! device. Formats whose only metadata sits at the end (MD RAID superblocks v0.90 and v1.0,
//! the GPT backup header) are not looked for: an array member of those versions starts with
//! the filesystem the array holds, and that signature is found instead; an assembled array
//! shows as a holder.
//!
//! Files are simpler: the tool marks the files it creates with an extended attribute, and
//! only a file carrying the mark is written without `--force`.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The extended attribute that marks a file the tool created.
pub(crate) const SCRATCH_XATTR: &str = "user.elevator.scratch";

/// Where sysfs lists block devices by device number.
const SYS_DEV_BLOCK: &str = "/sys/dev/block";

/// How much of the start of a device is read for signatures: enough for btrfs, whose
/// superblock magic sits at 64 KiB + 64.
const HEAD_BYTES: u64 = 68 * 1024;

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
    match read_head(path) {
        Ok(head) => hazards.extend(signatures(&head).into_iter().map(String::from)),
        Err(error) => hazards.push(format!(
            "cannot read its first {} KiB to look for signatures ({error})",
            HEAD_BYTES / 1024
        )),
    }
    hazards
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

/// The first [`HEAD_BYTES`] of `path` (fewer if it is smaller), read through the page cache:
/// O_DIRECT would need aligned buffers and gains nothing for one small read.
fn read_head(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(HEAD_BYTES as usize);
    File::open(path)?.take(HEAD_BYTES).read_to_end(&mut head)?;
    Ok(head)
}

/// Whether `head` holds `magic` at `offset` (false when `head` ends before it).
fn has(head: &[u8], offset: usize, magic: &[u8]) -> bool {
    head.get(offset..offset + magic.len()) == Some(magic)
}

/// The signatures found in `head`, the first bytes of a device, as phrases ("an XFS
/// filesystem signature"). Each test is a documented magic number at its documented offset.
fn signatures(head: &[u8]) -> Vec<&'static str> {
    let mut found = Vec::new();
    // ext2/3/4: s_magic 0xEF53 (little-endian), 56 bytes into the superblock at 1024.
    if has(head, 1080, &0xEF53u16.to_le_bytes()) {
        found.push("an ext4 (or ext2/ext3) filesystem signature");
    }
    if has(head, 0, b"XFSB") {
        found.push("an XFS filesystem signature");
    }
    // btrfs: the superblock is at 64 KiB; its magic follows the checksum, fsid, bytenr and
    // flags, 64 bytes in.
    if has(head, 65536 + 64, b"_BHRfS_M") {
        found.push("a btrfs filesystem signature");
    }
    // Swap: the magic ends the first page. 4 KiB pages are the common case; larger pages
    // (arm64 16 KiB, ppc64 64 KiB) put it further on, and all fit the bytes read.
    let swap = [4096, 8192, 16384, 65536].iter().any(|&page: &usize| {
        has(head, page - 10, b"SWAPSPACE2") || has(head, page - 10, b"SWAP-SPACE")
    });
    if swap {
        found.push("a swap signature");
    }
    // LUKS1 and LUKS2 share the primary header's magic; LUKS2 keeps copies of its header
    // (magic "SKUL\xba\xbe") at fixed offsets, which survive a wiped primary.
    let luks_backup =
        [0x4000, 0x8000, 0x10000].iter().any(|&offset| has(head, offset, b"SKUL\xba\xbe"));
    if has(head, 0, b"LUKS\xba\xbe") || luks_backup {
        found.push("a LUKS encryption header");
    }
    // LVM2 writes its label into one of the first four 512-byte sectors.
    if (0..4).any(|sector| has(head, sector * 512, b"LABELONE")) {
        found.push("an LVM2 physical volume label");
    }
    let md_magic = 0xa92b_4efcu32.to_le_bytes();
    if has(head, 0, &md_magic) {
        found.push("a Linux MD RAID superblock (v1.1)");
    }
    if has(head, 4096, &md_magic) {
        found.push("a Linux MD RAID superblock (v1.2)");
    }
    if has(head, 1024, &0xF2F5_2010u32.to_le_bytes()) {
        found.push("an F2FS filesystem signature");
    }
    let boot_sector_signature = has(head, 510, &[0x55, 0xAA]);
    // NTFS and exFAT name themselves in the OEM ID of their boot sector.
    let ntfs = has(head, 3, b"NTFS    ");
    if ntfs {
        found.push("an NTFS filesystem signature");
    }
    let exfat = has(head, 3, b"EXFAT   ");
    if exfat {
        found.push("an exFAT filesystem signature");
    }
    // FAT: the filesystem type string of the FAT12/16 or the FAT32 extended boot record,
    // in a sector that ends with the boot signature.
    let fat = boot_sector_signature
        && (has(head, 54, b"FAT12   ") || has(head, 54, b"FAT16   ") || has(head, 82, b"FAT32   "));
    if fat {
        found.push("a FAT filesystem signature");
    }
    // ISO 9660: the primary volume descriptor at sector 16 (of 2048 bytes), after its type
    // byte.
    if has(head, 32769, b"CD001") {
        found.push("an ISO 9660 filesystem signature");
    }
    if has(head, 0, b"hsqs") {
        found.push("a squashfs filesystem signature");
    }
    // GPT: the header is in LBA 1, at 512 on 512-byte-sector devices and at 4096 on
    // 4Kn ones.
    let gpt = has(head, 512, b"EFI PART") || has(head, 4096, b"EFI PART");
    if gpt {
        found.push("a GPT partition table");
    }
    // A DOS table is four 16-byte entries before the boot signature; an entry is in use when
    // its type byte is not zero. A FAT, NTFS or exFAT boot sector carries the same signature
    // with boot code where the entries would be, and a GPT disk's protective MBR is part of
    // the GPT already named.
    let dos_entry_in_use = head
        .get(446..510)
        .is_some_and(|entries| entries.chunks_exact(16).any(|entry| entry[4] != 0));
    if boot_sector_signature && dos_entry_in_use && !fat && !ntfs && !exfat && !gpt {
        found.push("a DOS (MBR) partition table");
    }
    found
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

    const HEAD: usize = HEAD_BYTES as usize;

    fn zeroes() -> Vec<u8> {
        vec![0; HEAD]
    }

    fn with(mut head: Vec<u8>, offset: usize, bytes: &[u8]) -> Vec<u8> {
        head[offset..offset + bytes.len()].copy_from_slice(bytes);
        head
    }

    /// Bytes from a fixed xorshift64 stream: arbitrary content, the same on every run.
    fn noise(len: usize, mut state: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect()
    }

    fn only(head: &[u8], phrase: &str) {
        assert_eq!(signatures(head), vec![phrase]);
    }

    // Proves a device of zeroes, or of arbitrary data, shows no signature (so blank and
    // previously benchmarked devices are writable without force).
    #[test]
    fn zeroes_and_noise_have_no_signature() {
        assert!(signatures(&zeroes()).is_empty());
        assert!(signatures(&[]).is_empty());
        for seed in [1, 0x9e37_79b9_7f4a_7c15, 42] {
            assert!(signatures(&noise(HEAD, seed)).is_empty(), "seed {seed}");
        }
    }

    // Proves each filesystem's magic number is found at its offset, and names the format.
    #[test]
    fn filesystem_signatures_are_found() {
        only(&with(zeroes(), 1080, &[0x53, 0xEF]), "an ext4 (or ext2/ext3) filesystem signature");
        only(&with(zeroes(), 0, b"XFSB"), "an XFS filesystem signature");
        only(&with(zeroes(), 65600, b"_BHRfS_M"), "a btrfs filesystem signature");
        only(&with(zeroes(), 1024, &[0x10, 0x20, 0xF5, 0xF2]), "an F2FS filesystem signature");
        only(&with(zeroes(), 3, b"NTFS    "), "an NTFS filesystem signature");
        only(&with(zeroes(), 3, b"EXFAT   "), "an exFAT filesystem signature");
        only(&with(zeroes(), 32769, b"CD001"), "an ISO 9660 filesystem signature");
        only(&with(zeroes(), 0, b"hsqs"), "a squashfs filesystem signature");
    }

    // Proves FAT is recognised by its type string only in a sector with the boot signature,
    // and that its boot code is not mistaken for a DOS partition table.
    #[test]
    fn fat_needs_the_boot_signature_and_is_not_a_partition_table() {
        for (offset, name) in [(54, b"FAT12   "), (54, b"FAT16   "), (82, b"FAT32   ")] {
            let head = with(zeroes(), offset, name);
            assert!(signatures(&head).is_empty(), "{name:?} without 0x55AA");
            let head = with(with(head, 510, &[0x55, 0xAA]), 446, &noise(64, 7));
            only(&head, "a FAT filesystem signature");
        }
    }

    // Proves swap, LUKS, LVM2 and MD RAID metadata are found, at every offset they use.
    #[test]
    fn volume_signatures_are_found() {
        only(&with(zeroes(), 4086, b"SWAPSPACE2"), "a swap signature");
        only(&with(zeroes(), 4086, b"SWAP-SPACE"), "a swap signature");
        only(&with(zeroes(), 65526, b"SWAPSPACE2"), "a swap signature");
        only(&with(zeroes(), 0, b"LUKS\xba\xbe"), "a LUKS encryption header");
        only(&with(zeroes(), 0x4000, b"SKUL\xba\xbe"), "a LUKS encryption header");
        for sector in 0..4 {
            only(&with(zeroes(), sector * 512, b"LABELONE"), "an LVM2 physical volume label");
        }
        assert!(signatures(&with(zeroes(), 2048, b"LABELONE")).is_empty());
        only(&with(zeroes(), 0, &[0xfc, 0x4e, 0x2b, 0xa9]), "a Linux MD RAID superblock (v1.1)");
        only(&with(zeroes(), 4096, &[0xfc, 0x4e, 0x2b, 0xa9]), "a Linux MD RAID superblock (v1.2)");
    }

    // Proves partition tables are found: GPT at 512 or 4096 (its protective MBR not named a
    // second time), and a DOS table only when an entry is in use.
    #[test]
    fn partition_tables_are_found() {
        let protective = with(with(zeroes(), 446 + 4, &[0xEE]), 510, &[0x55, 0xAA]);
        only(&with(protective.clone(), 512, b"EFI PART"), "a GPT partition table");
        only(&with(protective, 4096, b"EFI PART"), "a GPT partition table");
        let signed = with(zeroes(), 510, &[0x55, 0xAA]);
        assert!(signatures(&signed).is_empty(), "a boot signature over four empty entries");
        only(&with(signed.clone(), 446 + 16 * 3 + 4, &[0x83]), "a DOS (MBR) partition table");
        only(&with(signed, 446 + 4, &[0x0c]), "a DOS (MBR) partition table");
    }

    // Proves a head shorter than a signature's offset is no error and no signature.
    #[test]
    fn a_short_head_is_read_as_far_as_it_goes() {
        let head = with(zeroes(), 1080, &[0x53, 0xEF]);
        only(&head[..1082], "an ext4 (or ext2/ext3) filesystem signature");
        assert!(signatures(&head[..1081]).is_empty());
    }

    // Proves several signatures on one device are all reported.
    #[test]
    fn every_signature_present_is_reported() {
        let head = with(with(zeroes(), 0, b"XFSB"), 65600, b"_BHRfS_M");
        assert_eq!(
            signatures(&head),
            vec!["an XFS filesystem signature", "a btrfs filesystem signature"]
        );
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
