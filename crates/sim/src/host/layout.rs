//! Where files live on their devices: ext3's block allocator and XFS's delayed allocation
//! (host-mechanisms.md §4.1–§4.3, §1.2, §7 "Filesystems").
//!
//! Each device holds one filesystem of the host's kind ([`Filesystem`]), with 4 KiB blocks, a
//! region reserved for its journal (ext3) or log (XFS) that file data never enters, and the
//! workload's files in one directory. What decides the layout of concurrent files is when
//! and how blocks are chosen:
//!
//! * **ext3** (`fs/ext3/{balloc,inode}.c` of 2.6.9, RHEL 4 and 2.6.18, §4.1) allocates at
//!   `write()` time, in the order and size of the writes. A file's first block goal is its
//!   directory's group start plus (pid mod 16) × group/16 — slots 8 MiB apart in 32768-block
//!   groups — and each later block's goal is the block after the file's previous one.
//!   * With **reservation windows** (RHEL 4 and 2.6.18;
//!     [`KernelVersion::ext3_reservation_max_blocks`]) a file allocates only inside its own
//!     window. A new window is searched from the goal when the goal leaves the window or the
//!     window has no free block left: the first place in the goal's group where a window of
//!     the file's size overlaps no other file's window and holds a free block, else the same
//!     in the following groups, else allocation without a window. The size starts at 8 blocks
//!     and doubles, up to the release's maximum, whenever more than half of the old window was
//!     used; so once ramped, files written together alternate in runs of ≈ 4 MiB.
//!   * **Without windows** (vanilla 2.6.9) a writer takes its goal if free, else the first free
//!     block before the next 64-block boundary (none when the goal sits on one), else the
//!     first free aligned byte of the bitmap (8 free blocks) backed over up to 7 free blocks
//!     before it, else any free block of the group, else the same from the start of each
//!     following group: writers whose files meet interleave at the grain of their `write()`
//!     calls.
//!   * **Indirect blocks** are allocated in line, before the data block that needs them: one
//!     for logical block 12, a double-indirect and an indirect for block 1036, then one every
//!     1024 data blocks (and a triple-indirect chain at 1049612). So the data of every 4 MiB of
//!     a file is a separate run on disk and a sequential read's bio ends at each (§1.2,
//!     "boundary"); [`FileLayout::map`] never maps across one.
//!   * Files that exist before the run are laid out one after the other, contiguously with
//!     their indirect blocks, as a fresh filesystem gives one writer (a setup process of pid
//!     0), each file's window dropped when it is done (closed).
//! * **XFS** (vanilla 2.6.18, §4.2; the RHEL 5.4+ backport the file server ran keeps the
//!   whole-extent allocation, so this approximates it \[U\]) allocates late: `write()` only
//!   reserves space (out of space is reported there, as XFS's reservation does); the first
//!   time write-back maps a
//!   page of the file's delayed range, the whole contiguous delayed range is allocated at once
//!   ([`Layouts::allocate_delayed`]), in extents of at most 2^21 blocks (8 GiB), each near
//!   the file's previous extent (the free extent holding that goal, else the closest free
//!   extent large enough, else the first free space forward). Write-back is the only writer of
//!   delayed pages — a read of a page never written back finds it in the cache — so
//!   [`Layouts::map`] allocates when asked for a delayed range and the host's bio builder needs
//!   no other hook. Reads map whole extents (no boundaries).
//! * **Journal and log regions** ([`Layouts::new`] takes one per device, the host gives it
//!   [`journal_region`](super::journal::journal_region)'s): ext3's journal at the start of
//!   the filesystem (mke2fs before e2fsprogs 1.41.1, which RHEL 4 and 5 ship; 32768 blocks =
//!   128 MiB from 4 GiB up, 1024–16384 blocks below) and XFS's internal log mid-device
//!   (mkfs.xfs \[U\]). File data and indirect blocks never go there; kjournald and XFS's log
//!   writes do ([`Layouts::reserved_sectors`] says where).
//! * O_DIRECT writes allocate at the call on both filesystems (XFS's direct path allocates
//!   real extents at once).
//!
//! Sizes are in 4 KiB blocks inside this module, sectors and bytes at its boundary.
//!
//! # Deviations from Linux
//!
//! * A fresh filesystem: no free-space fragmentation from earlier use, no other files.
//! * One directory for every workload file: ext3's inode (hence goal) group is the first
//!   group whose start is free of the journal (Orlov picks a random group with above-average
//!   free space for a new top-level directory); XFS's first extent of a file goes near the
//!   start of the filesystem (near its inode in the first allocation group).
//! * Metadata other than ext3's indirect blocks is not placed: no group descriptors,
//!   bitmaps or inode tables at the start of each group, no XFS free-space or extent-tree
//!   blocks; the journal and log are reserved regions.
//! * Files are allocated as a prefix: a write past the allocated end allocates (ext3) or
//!   reserves (XFS) everything up to it, holes included; goals follow the file's previously
//!   allocated block, never a nearer mapped block (`ext3_find_near`) for out-of-order writes.
//! * ext3 reservation windows live until the end of the run (the kernel drops a file's
//!   window when its last writer closes it, and we model no close); a window is never
//!   extended for a multi-block request (`try_to_extend_reservation`), the requests here
//!   being one data block plus its indirect blocks; the search for a window treats a block as
//!   free by the bitmap alone (no journal-committed copy: nothing is ever freed).
//! * Indirect blocks take their place on disk but are never written or read here (metadata
//!   I/O is the journal's business; a reader's indirect block is cached after its first use).
//! * A data block and the indirect blocks it needs are taken as one run (2.6.18's
//!   `ext3_alloc_blocks`; 2.6.9 takes them one by one with the same goal, which lands them
//!   alike).
//! * An O_DIRECT write on XFS allocates the file's whole delayed prefix with the written range
//!   (XFS allocates the written range only, after flushing cached pages of it); a direct read
//!   of a range still delayed reads nothing (XFS would flush it first).
//! * XFS's speculative preallocation past EOF (`allocsize`, 64 KiB) and its allocation-group
//!   boundaries (an extent may span them) are not modelled; the closest-extent search ignores
//!   alignment.
//! * Space is allocated in 4 KiB blocks whatever the device's sector count: the last partial
//!   block of a device is unused.

use std::collections::BTreeMap;
use std::ops::Range;

use elevator_core::{KernelVersion, ProcessId, SECTOR_SIZE_BYTES};

use super::spec::Filesystem;

/// The filesystem block: 4 KiB for ext3 and XFS here (§4.1, §4.2).
pub(crate) const BLOCK_BYTES: u64 = 4096;
const BLOCK_SECTORS: u64 = BLOCK_BYTES / SECTOR_SIZE_BYTES;
/// Blocks per ext3 block group with 4 KiB blocks (8 × the block size, one bitmap block).
const EXT3_GROUP_BLOCKS: u64 = 32768;
/// The goal colours of a group: a file's first block goes to slot pid mod 16 (§4.1).
const EXT3_COLOURS: u64 = 16;
/// Block pointers in an inode (12 direct) and per indirect block (4 KiB / 4 bytes).
const EXT3_DIRECT_BLOCKS: u64 = 12;
const EXT3_POINTERS_PER_BLOCK: u64 = 1024;
/// The first size of a reservation window (`EXT3_DEFAULT_RESERVE_BLOCKS`, §4.1).
const EXT3_WINDOW_FIRST_BLOCKS: u64 = 8;
/// Without windows, an occupied goal is followed by a search for a free block up to the next
/// multiple of this many blocks (§4.1), then for a free bitmap byte (8 blocks).
const EXT3_NEAR_SEARCH_BLOCKS: u64 = 64;
const EXT3_BITMAP_BYTE_BLOCKS: u64 = 8;
/// The most blocks one XFS extent holds (2^21, 8 GiB of 4 KiB blocks, §4.2).
const XFS_EXTENT_MAX_BLOCKS: u64 = 1 << 21;
/// The pid of the process that made the files existing before the run: one writer.
const SETUP_PROCESS: ProcessId = ProcessId(0);

/// A contiguous piece of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Extent {
    /// Offset in the file.
    pub(crate) file_bytes: u64,
    /// First sector on the device.
    pub(crate) sector: u64,
    /// Length.
    pub(crate) length_bytes: u64,
}

/// An ext3 reservation window: blocks `start..end` the file alone allocates from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    start: u64,
    end: u64,
    /// Blocks allocated in it (`rsv_alloc_hit`).
    used_blocks: u64,
}

/// A file's layout.
#[derive(Clone, Debug)]
pub(crate) struct FileLayout {
    pub(crate) device: usize,
    pub(crate) extents: Vec<Extent>,
    /// Bytes of the file that have blocks on the device (whole blocks, from offset 0).
    pub(crate) allocated_bytes: u64,
    /// The file's size: the end of the furthest byte written (or its preexisting size).
    pub(crate) size_bytes: u64,
    /// XFS: the end of the space `write()` reserved (delayed allocation); `allocated_bytes`
    /// up to it is the delayed range. Equal to `allocated_bytes` on ext3.
    delayed_end_bytes: u64,
    /// ext3 indirect blocks placed for the file.
    indirect_blocks: u64,
    /// The block after the file's previous one: the next allocation's goal.
    goal_block: Option<u64>,
    /// ext3: the reservation window, and the size the next one asks for.
    window: Option<Window>,
    window_goal_blocks: u64,
}

impl FileLayout {
    /// The device piece holding file bytes `offset..offset + length`, as far as one extent
    /// reaches: (first sector, bytes). `None` past the allocated space.
    pub(crate) fn map(&self, offset: u64, length: u64) -> Option<(u64, u64)> {
        let index = self.extents.partition_point(|extent| extent.file_bytes <= offset);
        let extent = self.extents.get(index.checked_sub(1)?)?;
        let within = offset - extent.file_bytes;
        if within >= extent.length_bytes {
            return None;
        }
        let bytes = (extent.length_bytes - within).min(length);
        Some((extent.sector + within / SECTOR_SIZE_BYTES, bytes))
    }

    fn allocated_blocks(&self) -> u64 {
        self.allocated_bytes / BLOCK_BYTES
    }

    /// Appends data blocks `start..start + count` to the file's mapping, growing the last
    /// extent when they follow it on disk.
    fn push_data(&mut self, start: u64, count: u64) {
        let file_bytes = self.allocated_bytes;
        let (sector, length_bytes) = (start * BLOCK_SECTORS, count * BLOCK_BYTES);
        match self.extents.last_mut() {
            Some(last)
                if last.sector + last.length_bytes / SECTOR_SIZE_BYTES == sector
                    && last.file_bytes + last.length_bytes == file_bytes =>
            {
                last.length_bytes += length_bytes;
            }
            _ => self.extents.push(Extent { file_bytes, sector, length_bytes }),
        }
        self.allocated_bytes += length_bytes;
        self.delayed_end_bytes = self.delayed_end_bytes.max(self.allocated_bytes);
    }
}

/// The filesystem ran out of space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutOfSpace {
    pub(crate) device: usize,
}

/// One device's filesystem: its free blocks and the windows reserved in them.
#[derive(Clone, Debug)]
struct Volume {
    capacity_blocks: u64,
    /// Free extents, start → end (blocks).
    free: BTreeMap<u64, u64>,
    free_blocks: u64,
    /// XFS: blocks reserved by `write()` and not yet allocated.
    delayed_blocks: u64,
    /// ext3 reservation windows, start → (end, file); they never overlap.
    windows: BTreeMap<u64, (u64, usize)>,
    /// The journal or log, in sectors.
    #[cfg_attr(not(test), allow(dead_code))]
    reserved_sectors: Range<u64>,
    /// Where the directory of the workload's files lives: ext3's group start, XFS's first
    /// extent goal.
    home_block: u64,
}

impl Volume {
    fn new(filesystem: Filesystem, capacity_sectors: u64, reserved_sectors: Range<u64>) -> Volume {
        let capacity_blocks = capacity_sectors / BLOCK_SECTORS;
        let mut volume = Volume {
            capacity_blocks,
            free: BTreeMap::new(),
            free_blocks: 0,
            delayed_blocks: 0,
            windows: BTreeMap::new(),
            reserved_sectors: reserved_sectors.clone(),
            home_block: 0,
        };
        if capacity_blocks > 0 {
            volume.free.insert(0, capacity_blocks);
            volume.free_blocks = capacity_blocks;
        }
        // Whole blocks touching the reserved sectors are never free.
        let reserved_blocks = (reserved_sectors.start / BLOCK_SECTORS).min(capacity_blocks)
            ..reserved_sectors.end.div_ceil(BLOCK_SECTORS).min(capacity_blocks);
        if !reserved_blocks.is_empty() {
            volume.take(reserved_blocks.start, reserved_blocks.end - reserved_blocks.start);
        }
        volume.home_block = match filesystem {
            // The first group whose start the journal leaves free.
            Filesystem::Ext3 => (0..capacity_blocks.div_ceil(EXT3_GROUP_BLOCKS))
                .map(|group| group * EXT3_GROUP_BLOCKS)
                .find(|&start| volume.is_free(start))
                .unwrap_or(0),
            Filesystem::Xfs => 0,
        };
        volume
    }

    fn is_free(&self, block: u64) -> bool {
        self.free.range(..=block).next_back().is_some_and(|(_, &end)| end > block)
    }

    /// The end of the free run holding `block` (`block` itself when it is not free).
    fn free_run_end(&self, block: u64) -> u64 {
        match self.free.range(..=block).next_back() {
            Some((_, &end)) if end > block => end,
            _ => block,
        }
    }

    /// The first free block in `from..end`.
    fn first_free(&self, from: u64, end: u64) -> Option<u64> {
        if self.is_free(from) {
            return (from < end).then_some(from);
        }
        let (&start, _) = self.free.range(from..).next()?;
        (start < end).then_some(start)
    }

    /// The first block of `from..end` that starts 8 free blocks aligned to 8 (a free byte of
    /// the bitmap).
    fn first_free_byte(&self, from: u64, end: u64) -> Option<u64> {
        let before = self.free.range(..from).next_back().filter(|&(_, &e)| e > from);
        for (&start, &stop) in before.into_iter().chain(self.free.range(from..)) {
            if start >= end {
                break;
            }
            let aligned = start.max(from).next_multiple_of(EXT3_BITMAP_BYTE_BLOCKS);
            if aligned + EXT3_BITMAP_BYTE_BLOCKS <= stop.min(end) {
                return Some(aligned);
            }
        }
        None
    }

    /// Marks free blocks `start..start + count` used.
    fn take(&mut self, start: u64, count: u64) {
        let (&from, &end) = self.free.range(..=start).next_back().expect("taking a free block");
        assert!(end >= start + count, "taking blocks {start}+{count} not all free");
        self.free.remove(&from);
        if from < start {
            self.free.insert(from, start);
        }
        if start + count < end {
            self.free.insert(start + count, end);
        }
        self.free_blocks -= count;
    }

    fn group_end(&self, block: u64) -> u64 {
        ((block / EXT3_GROUP_BLOCKS + 1) * EXT3_GROUP_BLOCKS).min(self.capacity_blocks)
    }

    fn group_count(&self) -> u64 {
        self.capacity_blocks.div_ceil(EXT3_GROUP_BLOCKS)
    }

    /// ext3 without a window: the block a search from `from` within its group picks.
    fn ext3_search(&self, from: u64, group_end: u64) -> Option<u64> {
        if from >= group_end {
            return None;
        }
        if self.is_free(from) {
            return Some(from);
        }
        let boundary = from.next_multiple_of(EXT3_NEAR_SEARCH_BLOCKS).min(group_end);
        if let Some(block) = self.first_free(from, boundary) {
            return Some(block);
        }
        if let Some(aligned) = self.first_free_byte(from, group_end) {
            // Back over the free blocks just before the free byte, at most 7.
            let mut block = aligned;
            while block > from
                && aligned - block < EXT3_BITMAP_BYTE_BLOCKS - 1
                && self.is_free(block - 1)
            {
                block -= 1;
            }
            return Some(block);
        }
        self.first_free(from, group_end)
    }

    /// The start of the first window of `size` blocks from `from` in the group ending at
    /// `group_end` that overlaps no window and holds a free block.
    fn ext3_find_window(&self, from: u64, group_end: u64, size: u64) -> Option<u64> {
        let mut start = from;
        loop {
            // Past every window overlapping start..start + size.
            while let Some((_, &(end, _))) = self.windows.range(..start + size).next_back() {
                if end <= start {
                    break;
                }
                start = end;
            }
            if start >= group_end {
                return None;
            }
            let free = self.first_free(start, group_end)?;
            if free < start + size {
                return Some(start);
            }
            start = free;
        }
    }

    /// XFS: a free run for up to `count` blocks near `goal`: the free extent holding the goal,
    /// else the closest free extent of `count` blocks (its end nearest the goal when it lies
    /// before), else the first free space forward (wrapping).
    fn xfs_near(&self, goal: u64, count: u64) -> Option<(u64, u64)> {
        if self.is_free(goal) {
            return Some((goal, count.min(self.free_run_end(goal) - goal)));
        }
        let after = self.free.range(goal..).find(|&(&s, &e)| e - s >= count).map(|(&s, _)| s);
        let before =
            self.free.range(..goal).rev().find(|&(&s, &e)| e - s >= count).map(|(_, &e)| e - count);
        let best = match (after, before) {
            (Some(a), Some(b)) => Some(if a - goal <= goal - b { a } else { b }),
            (a, b) => a.or(b),
        };
        if let Some(start) = best {
            return Some((start, count));
        }
        let (&start, &end) = self.free.range(goal..).next().or_else(|| self.free.iter().next())?;
        Some((start, count.min(end - start)))
    }
}

/// Every file's layout and every device's filesystem.
#[derive(Clone, Debug)]
pub(crate) struct Layouts {
    pub(crate) files: Vec<FileLayout>,
    volumes: Vec<Volume>,
    filesystem: Filesystem,
    /// ext3 reservation windows' largest size; `None`: no windows (vanilla 2.6.9).
    window_max_blocks: Option<u64>,
}

impl Layouts {
    /// Filesystems of kind `filesystem`, as release `kernel` runs them, on devices of
    /// `device_capacity_sectors`, each with `reserved_sectors` (its journal or log, from
    /// [`journal_region`](super::journal::journal_region)) kept free of file data.
    pub(crate) fn new(
        device_capacity_sectors: &[u64],
        reserved_sectors: &[Range<u64>],
        filesystem: Filesystem,
        kernel: KernelVersion,
    ) -> Layouts {
        assert_eq!(device_capacity_sectors.len(), reserved_sectors.len(), "one region a device");
        Layouts {
            files: Vec::new(),
            volumes: device_capacity_sectors
                .iter()
                .zip(reserved_sectors)
                .map(|(&capacity, reserved)| Volume::new(filesystem, capacity, reserved.clone()))
                .collect(),
            filesystem,
            window_max_blocks: kernel.ext3_reservation_max_blocks().map(u64::from),
        }
    }

    /// The region of `device` reserved for the journal or log, in sectors: where a journal
    /// or log model writes (none reads it yet, hence the allowance).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn reserved_sectors(&self, device: usize) -> Range<u64> {
        self.volumes[device].reserved_sectors.clone()
    }

    /// Adds a file on `device` holding `size_bytes` already, laid out now as one writer
    /// creating the files in order would have left it.
    pub(crate) fn add_file(&mut self, device: usize, size_bytes: u64) -> Result<usize, OutOfSpace> {
        self.files.push(FileLayout {
            device,
            extents: Vec::new(),
            allocated_bytes: 0,
            size_bytes: 0,
            delayed_end_bytes: 0,
            indirect_blocks: 0,
            goal_block: None,
            window: None,
            window_goal_blocks: EXT3_WINDOW_FIRST_BLOCKS,
        });
        let file = self.files.len() - 1;
        if size_bytes > 0 {
            self.grow(file, size_bytes, SETUP_PROCESS)?;
            self.allocate_delayed(file);
            self.files[file].size_bytes = size_bytes;
            // Closed after it was written: its window goes.
            self.drop_window(file);
        }
        Ok(file)
    }

    /// `write()` by `process` up to `end_bytes` of `file`: ext3 allocates the blocks now
    /// (with the indirect blocks they need); XFS reserves them for delayed allocation.
    pub(crate) fn grow(
        &mut self,
        file: usize,
        end_bytes: u64,
        process: ProcessId,
    ) -> Result<(), OutOfSpace> {
        let layout = &self.files[file];
        let device = layout.device;
        let end_blocks = end_bytes.div_ceil(BLOCK_BYTES);
        match self.filesystem {
            Filesystem::Ext3 => {
                while self.files[file].allocated_blocks() < end_blocks {
                    self.ext3_allocate(file, end_blocks, process)?;
                }
            }
            Filesystem::Xfs => {
                let reserved_blocks = layout.delayed_end_bytes / BLOCK_BYTES;
                if end_blocks > reserved_blocks {
                    let more = end_blocks - reserved_blocks;
                    let volume = &mut self.volumes[device];
                    if volume.free_blocks - volume.delayed_blocks < more {
                        return Err(OutOfSpace { device });
                    }
                    volume.delayed_blocks += more;
                    self.files[file].delayed_end_bytes = end_blocks * BLOCK_BYTES;
                }
            }
        }
        Ok(())
    }

    /// XFS write-back: allocates the file's whole delayed range, in extents near its previous
    /// one. Nothing to do when the file has no delayed range (always on ext3).
    pub(crate) fn allocate_delayed(&mut self, file: usize) {
        let layout = &self.files[file];
        let device = layout.device;
        let mut remaining = layout.delayed_end_bytes / BLOCK_BYTES - layout.allocated_blocks();
        let volume = &mut self.volumes[device];
        volume.delayed_blocks -= remaining;
        while remaining > 0 {
            let goal = self.files[file].goal_block.unwrap_or(volume.home_block);
            let (start, count) = volume
                .xfs_near(goal, remaining.min(XFS_EXTENT_MAX_BLOCKS))
                .expect("write() reserved the space delayed allocation takes");
            volume.take(start, count);
            let layout = &mut self.files[file];
            layout.push_data(start, count);
            layout.goal_block = Some(start + count);
            remaining -= count;
        }
    }

    /// The device piece holding bytes `offset..offset + length` of `file`, as [`FileLayout::map`];
    /// a page in the delayed range first gets the whole range allocated (only write-back asks
    /// for such pages).
    pub(crate) fn map(&mut self, file: usize, offset: u64, length: u64) -> Option<(u64, u64)> {
        let layout = &self.files[file];
        if offset >= layout.allocated_bytes && offset < layout.delayed_end_bytes {
            self.allocate_delayed(file);
        }
        self.files[file].map(offset, length)
    }

    /// ext3: allocates the next run of `file`'s data blocks toward `end_blocks` — the
    /// indirect blocks the first of them needs, then as many data blocks as follow
    /// contiguously before the next indirect block.
    fn ext3_allocate(
        &mut self,
        file: usize,
        end_blocks: u64,
        process: ProcessId,
    ) -> Result<(), OutOfSpace> {
        let layout = &self.files[file];
        let device = layout.device;
        let logical = layout.allocated_blocks();
        let mut indirect = ext3_indirect_blocks_before(logical);
        let data_wanted = end_blocks.min(ext3_next_indirect(logical)) - logical;
        let mut wanted = indirect + data_wanted;
        let volume = &self.volumes[device];
        // The first block's goal: the directory's group at the writer's colour.
        let colour_blocks =
            u64::from(process.0) % EXT3_COLOURS * (EXT3_GROUP_BLOCKS / EXT3_COLOURS);
        let first_goal =
            (volume.home_block + colour_blocks).min(volume.capacity_blocks.saturating_sub(1));
        while wanted > 0 {
            let goal = self.files[file].goal_block.unwrap_or(first_goal);
            let (start, count) = self.ext3_run(file, goal, wanted)?;
            let meta = count.min(indirect);
            let layout = &mut self.files[file];
            layout.indirect_blocks += meta;
            if count > meta {
                layout.push_data(start + meta, count - meta);
            }
            layout.goal_block = Some(start + count);
            indirect -= meta;
            wanted -= count;
        }
        Ok(())
    }

    /// ext3: up to `count` blocks for `file` from `goal`, through its reservation window when
    /// the release has them: (first block, blocks), at least one.
    fn ext3_run(&mut self, file: usize, goal: u64, count: u64) -> Result<(u64, u64), OutOfSpace> {
        let device = self.files[file].device;
        if let Some(max_blocks) = self.window_max_blocks
            && let Some(run) = self.ext3_run_in_window(file, goal, count, max_blocks)
        {
            return Ok(run);
        }
        let volume = &mut self.volumes[device];
        let groups = volume.group_count();
        let goal_group = goal / EXT3_GROUP_BLOCKS;
        // The goal's group from the goal, every other group from its start, then the goal's
        // group from its start.
        for step in 0..=groups {
            let group = (goal_group + step) % groups.max(1);
            let from = if step == 0 { goal } else { group * EXT3_GROUP_BLOCKS };
            let group_end = volume.group_end(group * EXT3_GROUP_BLOCKS);
            if let Some(start) = volume.ext3_search(from, group_end) {
                // Each further block's goal is the next one; it is taken while free.
                let count = count.min(volume.free_run_end(start) - start);
                volume.take(start, count);
                return Ok((start, count));
            }
        }
        Err(OutOfSpace { device })
    }

    /// ext3 with windows: the run from the file's window, taking a new window when the goal
    /// has left it or it has no free block left; `None` when no group has room for one.
    fn ext3_run_in_window(
        &mut self,
        file: usize,
        goal: u64,
        count: u64,
        max_blocks: u64,
    ) -> Option<(u64, u64)> {
        let device = self.files[file].device;
        let window = match self.files[file].window {
            Some(window)
                if (window.start..window.end).contains(&goal)
                    && self.volumes[device]
                        .first_free(goal, window.end.min(self.volumes[device].group_end(goal)))
                        .is_some() =>
            {
                window
            }
            old => {
                let layout = &mut self.files[file];
                if let Some(old) = old
                    && old.used_blocks > (old.end - old.start) / 2
                {
                    layout.window_goal_blocks = (layout.window_goal_blocks * 2).min(max_blocks);
                }
                let size = layout.window_goal_blocks;
                self.drop_window(file);
                let volume = &mut self.volumes[device];
                let groups = volume.group_count();
                let goal_group = goal / EXT3_GROUP_BLOCKS;
                let start = (0..=groups).find_map(|step| {
                    let group = (goal_group + step) % groups.max(1);
                    let from = if step == 0 { goal } else { group * EXT3_GROUP_BLOCKS };
                    volume.ext3_find_window(from, volume.group_end(group * EXT3_GROUP_BLOCKS), size)
                })?;
                let window = Window { start, end: start + size, used_blocks: 0 };
                volume.windows.insert(start, (window.end, file));
                window
            }
        };
        let volume = &mut self.volumes[device];
        // A window may reach into the next group; each group's part is used from that group.
        let free_from = |from: u64| volume.first_free(from, window.end.min(volume.group_end(from)));
        let start = (window.start..window.end)
            .contains(&goal)
            .then(|| free_from(goal))
            .flatten()
            .or_else(|| free_from(window.start))
            .expect("a window holds a free block");
        let usable_end = window.end.min(volume.group_end(start));
        let count = count.min(volume.free_run_end(start).min(usable_end) - start);
        volume.take(start, count);
        self.files[file].window =
            Some(Window { used_blocks: window.used_blocks + count, ..window });
        Some((start, count))
    }

    fn drop_window(&mut self, file: usize) {
        if let Some(window) = self.files[file].window.take() {
            self.volumes[self.files[file].device].windows.remove(&window.start);
        }
    }
}

/// How many indirect blocks ext3 allocates just before logical data block `logical`: the
/// indirect block at 12, double-indirect plus indirect at 1036, one indirect every 1024 blocks
/// after, triple-, double- and indirect at 1049612 and so on (4 KiB blocks, §4.1).
fn ext3_indirect_blocks_before(logical: u64) -> u64 {
    const PER: u64 = EXT3_POINTERS_PER_BLOCK;
    const DOUBLE_FIRST: u64 = EXT3_DIRECT_BLOCKS + PER;
    const TRIPLE_FIRST: u64 = DOUBLE_FIRST + PER * PER;
    match logical {
        EXT3_DIRECT_BLOCKS => 1,
        DOUBLE_FIRST => 2,
        TRIPLE_FIRST => 3,
        _ if logical > DOUBLE_FIRST && logical < TRIPLE_FIRST => {
            u64::from((logical - DOUBLE_FIRST) % PER == 0)
        }
        _ if logical > TRIPLE_FIRST => {
            let beyond = logical - TRIPLE_FIRST;
            u64::from(beyond % PER == 0) + u64::from(beyond % (PER * PER) == 0)
        }
        _ => 0,
    }
}

/// The next logical block after `logical` that needs an indirect block.
fn ext3_next_indirect(logical: u64) -> u64 {
    const PER: u64 = EXT3_POINTERS_PER_BLOCK;
    const DOUBLE_FIRST: u64 = EXT3_DIRECT_BLOCKS + PER;
    if logical < EXT3_DIRECT_BLOCKS {
        EXT3_DIRECT_BLOCKS
    } else if logical < DOUBLE_FIRST {
        DOUBLE_FIRST
    } else {
        DOUBLE_FIRST + ((logical - DOUBLE_FIRST) / PER + 1) * PER
    }
}

#[cfg(test)]
mod tests {
    use super::super::journal::journal_region;
    use super::*;

    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn layouts(capacity_bytes: u64, filesystem: Filesystem, kernel: KernelVersion) -> Layouts {
        let capacity_sectors = capacity_bytes / SECTOR_SIZE_BYTES;
        let (first, sectors) = journal_region(filesystem, capacity_sectors);
        let reserved = Range { start: first, end: first + sectors };
        Layouts::new(&[capacity_sectors], std::slice::from_ref(&reserved), filesystem, kernel)
    }

    /// `files` (with their writers' pids) written in turn, `write_bytes` per call, until each
    /// holds `size_bytes`.
    fn write_alternately(
        layouts: &mut Layouts,
        files: &[(usize, u32)],
        size_bytes: u64,
        write_bytes: u64,
    ) {
        let mut end = 0;
        while end < size_bytes {
            end += write_bytes;
            for &(file, pid) in files {
                layouts.grow(file, end, ProcessId(pid)).unwrap();
            }
        }
    }

    /// A file's runs on disk in file order, in blocks, joining pieces separated only by its
    /// indirect blocks (at most three blocks apart).
    fn runs_blocks(layout: &FileLayout) -> Vec<u64> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for extent in &layout.extents {
            let (start, blocks) =
                (extent.sector / BLOCK_SECTORS, extent.length_bytes / BLOCK_BYTES);
            match runs.last_mut() {
                Some((end, length)) if start >= *end && start - *end <= 3 => {
                    *length += blocks;
                    *end = start + blocks;
                }
                _ => runs.push((start + blocks, blocks)),
            }
        }
        runs.into_iter().map(|(_, length)| length).collect()
    }

    /// Checks no two pieces of file data share a sector and none lies in a device's reserved
    /// region, and that every block is counted once: free, reserved, data or indirect.
    fn assert_disjoint_and_outside_reserved(layouts: &Layouts) {
        for (device, volume) in layouts.volumes.iter().enumerate() {
            let reserved = layouts.reserved_sectors(device);
            let used: u64 = layouts
                .files
                .iter()
                .filter(|layout| layout.device == device)
                .map(|layout| layout.allocated_blocks() + layout.indirect_blocks)
                .sum();
            let reserved_blocks = (reserved.end - reserved.start) / BLOCK_SECTORS;
            assert_eq!(volume.free_blocks + reserved_blocks + used, volume.capacity_blocks);
            let free: u64 = volume.free.iter().map(|(start, end)| end - start).sum();
            assert_eq!(free, volume.free_blocks);
        }
        let mut pieces: Vec<(u64, u64)> = Vec::new();
        for layout in &layouts.files {
            let reserved = layouts.reserved_sectors(layout.device);
            for extent in &layout.extents {
                let end = extent.sector + extent.length_bytes / SECTOR_SIZE_BYTES;
                assert!(
                    end <= reserved.start || extent.sector >= reserved.end,
                    "{extent:?} in the reserved {reserved:?}"
                );
                pieces.push((extent.sector, end));
            }
        }
        pieces.sort();
        for pair in pieces.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "{:?} overlaps {:?}", pair[0], pair[1]);
        }
    }

    // Proves where the first file goes: ext3's directory is the first group the journal
    // leaves free (group 1 behind the 128 MiB journal of an 8 GiB device; group 0 when the
    // device is too small for a journal), XFS's first extent at the device's start.
    #[test]
    fn first_files_go_to_the_directory_beside_the_journal() {
        let sector_of = |capacity_bytes: u64, filesystem: Filesystem| {
            let mut layouts = layouts(capacity_bytes, filesystem, KernelVersion::Linux2_6_18);
            let file = layouts.add_file(0, MIB).unwrap();
            assert_disjoint_and_outside_reserved(&layouts);
            layouts.files[file].extents[0].sector
        };
        let sectors = |bytes: u64| bytes / SECTOR_SIZE_BYTES;
        assert_eq!(sector_of(8 * GIB, Filesystem::Ext3), sectors(128 * MIB), "group 1, slot 0");
        assert_eq!(sector_of(4 * MIB, Filesystem::Ext3), 0, "no journal");
        assert_eq!(sector_of(8 * GIB, Filesystem::Xfs), 0);
    }

    // Proves ext3's first-block goal: writers' files start at their pid's slot of the
    // directory's group, 8 MiB apart (group/16 of a 128 MiB group), and a pid 16 apart shares
    // a slot.
    #[test]
    fn ext3_first_blocks_are_pid_coloured_8_mib_apart() {
        for kernel in [KernelVersion::Linux2_6_9, KernelVersion::Linux2_6_18] {
            let mut layouts = layouts(8 * GIB, Filesystem::Ext3, kernel);
            let files: Vec<usize> = (0..3).map(|_| layouts.add_file(0, 0).unwrap()).collect();
            for (index, &file) in files.iter().enumerate() {
                layouts.grow(file, 64 * KIB, ProcessId(index as u32 + 1)).unwrap();
            }
            let starts: Vec<u64> =
                files.iter().map(|&f| layouts.files[f].extents[0].sector).collect();
            let home = 128 * MIB / SECTOR_SIZE_BYTES;
            let slot = 8 * MIB / SECTOR_SIZE_BYTES;
            assert_eq!(starts, [home + slot, home + 2 * slot, home + 3 * slot], "{kernel}");
        }
    }

    // Proves indirect blocks sit in line: a file written alone has its data broken after
    // logical block 11 (one indirect block), after 1035 (double plus indirect) and after every
    // further 1024 blocks, so 8 MiB of it maps as three pieces separated by 1 and 2 blocks.
    #[test]
    fn ext3_indirect_blocks_break_a_file_every_4_mib() {
        let mut layouts = layouts(8 * GIB, Filesystem::Ext3, KernelVersion::Linux2_6_18);
        let file = layouts.add_file(0, 8 * MIB).unwrap();
        let layout = &layouts.files[file];
        let mut pieces = Vec::new();
        let mut at = 0;
        while at < 8 * MIB {
            let (sector, bytes) = layout.map(at, 8 * MIB - at).unwrap();
            pieces.push((sector, bytes / BLOCK_BYTES));
            at += bytes;
        }
        assert_eq!(pieces.iter().map(|p| p.1).collect::<Vec<_>>(), [12, 1024, 1012]);
        let gap = |a: (u64, u64), b: (u64, u64)| (b.0 - a.0) / BLOCK_SECTORS - a.1;
        assert_eq!(gap(pieces[0], pieces[1]), 1, "the indirect block");
        assert_eq!(gap(pieces[1], pieces[2]), 2, "double-indirect and indirect");
        assert_eq!(layout.indirect_blocks, 3);
        assert_eq!(ext3_indirect_blocks_before(1036 + 1024), 1);
        assert_eq!(ext3_indirect_blocks_before(1036 + 1024 * 1024), 3);
        assert_eq!(ext3_indirect_blocks_before(1036 + 1024 * 1024 + 1024 * 1024), 2);
        assert_eq!(ext3_indirect_blocks_before(1037), 0);
    }

    // Proves reservation windows (2.6.18, max 1027 blocks): two files whose writers share a
    // goal slot, written alternately in 64 KiB calls, leapfrog in windows that double from 8
    // blocks — 8, 16, 32 … 1024, then 1027 — so past the ramp each file lies in ≈ 4 MiB runs
    // (a window less nothing but indirect blocks); RHEL 4's windows stop at 1024.
    #[test]
    fn ext3_windows_ramp_to_4_mib_runs() {
        for (kernel, max) in [(KernelVersion::Linux2_6_18, 1027), (KernelVersion::Rhel4, 1024)] {
            let mut layouts = layouts(8 * GIB, Filesystem::Ext3, kernel);
            let a = layouts.add_file(0, 0).unwrap();
            let b = layouts.add_file(0, 0).unwrap();
            write_alternately(&mut layouts, &[(a, 1), (b, 17)], 64 * MIB, 64 * KIB);
            let runs = runs_blocks(&layouts.files[a]);
            // Data blocks per run: the windows of 8 and 16 blocks are adjacent (a's first
            // call of 16 blocks and the indirect block for logical block 12 uses both before b
            // writes), less that indirect block; then 32 … 512; then 1024 less the
            // double-indirect pair of logical block 1036.
            assert_eq!(runs[..7], [24 - 1, 32, 64, 128, 256, 512, 1024 - 2], "{kernel}");
            // Then windows of the maximum, each less the one indirect block (rarely none or
            // two) every 1024 data blocks puts in it; never two windows of a in a row.
            let steady = &runs[7..runs.len() - 1];
            assert!(steady.len() >= 10, "{kernel}: {runs:?}");
            assert!(steady.iter().all(|&r| r + 3 >= max && r <= max), "{kernel}: {steady:?}");
            assert_disjoint_and_outside_reserved(&layouts);
        }
    }

    // Proves vanilla 2.6.9 (no windows) interleaves two writers sharing a goal at the grain
    // of their 64 KiB writes: no run of a file is longer than one call's blocks plus the
    // one after it.
    #[test]
    fn ext3_without_windows_interleaves_finely() {
        let mut layouts = layouts(8 * GIB, Filesystem::Ext3, KernelVersion::Linux2_6_9);
        let a = layouts.add_file(0, 0).unwrap();
        let b = layouts.add_file(0, 0).unwrap();
        write_alternately(&mut layouts, &[(a, 1), (b, 17)], 16 * MIB, 64 * KIB);
        let runs = runs_blocks(&layouts.files[a]);
        assert!(runs.len() >= 200, "{}", runs.len());
        assert!(runs.iter().all(|&r| r <= 32), "{runs:?}");
        assert_disjoint_and_outside_reserved(&layouts);
    }

    // Proves files preexisting the run lie one after the other, each contiguous but for its
    // indirect blocks, the second starting right after the first's last block.
    #[test]
    fn ext3_preexisting_files_are_contiguous_in_order() {
        let mut layouts = layouts(8 * GIB, Filesystem::Ext3, KernelVersion::Rhel4);
        let first = layouts.add_file(0, 20 * MIB).unwrap();
        let second = layouts.add_file(0, MIB).unwrap();
        assert_eq!(runs_blocks(&layouts.files[first]), [20 * MIB / BLOCK_BYTES]);
        let last = layouts.files[first].extents.last().copied().unwrap();
        let end = last.sector + last.length_bytes / SECTOR_SIZE_BYTES;
        assert_eq!(layouts.files[second].extents[0].sector, end);
        assert!(layouts.volumes[0].windows.is_empty(), "closed files hold no window");
    }

    // Proves XFS's delayed allocation: write() places nothing; write-back's first mapping of a
    // page allocates the file's whole delayed range as one extent, near its previous one, so
    // two files written alternately get one large extent each per write-back visit instead of
    // interleaving at the writes' grain; a later visit continues after the other file's.
    #[test]
    fn xfs_allocates_each_dirty_range_as_one_extent_at_write_back() {
        let mut layouts = layouts(8 * GIB, Filesystem::Xfs, KernelVersion::Linux2_6_18);
        let a = layouts.add_file(0, 0).unwrap();
        let b = layouts.add_file(0, 0).unwrap();
        write_alternately(&mut layouts, &[(a, 1), (b, 2)], 100 * MIB, 64 * KIB);
        assert!(layouts.files[a].extents.is_empty(), "write() reserves only");
        assert_eq!(layouts.files[a].map(0, 4096), None);
        // Write-back of a's page 5 allocates all of a's 100 MiB.
        let (sector, _) = layouts.map(a, 5 * 4096, 4096).unwrap();
        assert_eq!(layouts.files[a].extents.len(), 1);
        assert_eq!(layouts.files[a].allocated_bytes, 100 * MIB);
        assert_eq!(sector, layouts.files[a].extents[0].sector + 5 * BLOCK_SECTORS);
        layouts.map(b, 0, 4096).unwrap();
        assert_eq!(layouts.files[b].extents.len(), 1);
        let a_end = layouts.files[a].extents[0].sector + 100 * MIB / SECTOR_SIZE_BYTES;
        assert_eq!(layouts.files[b].extents[0].sector, a_end, "b follows a");
        // More writes, a second visit: a's next extent lands right after b's.
        write_alternately(&mut layouts, &[(a, 1), (b, 2)], 150 * MIB, 64 * KIB);
        layouts.map(a, 120 * MIB, 4096).unwrap();
        let extents = &layouts.files[a].extents;
        assert_eq!(extents.len(), 2);
        assert_eq!(extents[1].length_bytes, 50 * MIB);
        assert_eq!(extents[1].sector, a_end + 100 * MIB / SECTOR_SIZE_BYTES);
        assert_disjoint_and_outside_reserved(&layouts);
    }

    // Proves no file data enters the journal or the log, even when files fill the device
    // around them: an XFS file growing across the middle of the device skips the log, and
    // ext3 files never start in the journal whatever their pid's slot.
    #[test]
    fn file_data_stays_out_of_the_journal_and_log() {
        let mut xfs = layouts(GIB, Filesystem::Xfs, KernelVersion::Linux2_6_18);
        let big = xfs.add_file(0, 900 * MIB).unwrap();
        assert!(xfs.files[big].extents.len() >= 2, "split around the log");
        assert_disjoint_and_outside_reserved(&xfs);
        for kernel in [KernelVersion::Linux2_6_9, KernelVersion::Linux2_6_18] {
            // 1 GiB: a 16 MiB journal in group 0; the directory is group 1, so slot 0 of
            // group 1, but the files fill past groups into the rest.
            let mut ext3 = layouts(GIB, Filesystem::Ext3, kernel);
            let files: Vec<usize> = (0..4).map(|_| ext3.add_file(0, 0).unwrap()).collect();
            let pids: Vec<(usize, u32)> = files.iter().map(|&f| (f, f as u32 * 5)).collect();
            write_alternately(&mut ext3, &pids, 200 * MIB, 256 * KIB);
            assert_disjoint_and_outside_reserved(&ext3);
        }
    }

    // Proves running out of space is reported: by ext3 at write() once the blocks are gone, by
    // XFS at write() too (its reservation), never at write-back.
    #[test]
    fn out_of_space_is_reported_at_write() {
        let mut ext3 = layouts(64 * MIB, Filesystem::Ext3, KernelVersion::Linux2_6_18);
        let file = ext3.add_file(0, 0).unwrap();
        assert_eq!(ext3.grow(file, 100 * MIB, ProcessId(1)), Err(OutOfSpace { device: 0 }));
        assert_eq!(ext3.add_file(0, 100 * MIB), Err(OutOfSpace { device: 0 }));
        let mut xfs = layouts(64 * MIB, Filesystem::Xfs, KernelVersion::Linux2_6_18);
        let a = xfs.add_file(0, 0).unwrap();
        let b = xfs.add_file(0, 0).unwrap();
        xfs.grow(a, 40 * MIB, ProcessId(1)).unwrap();
        assert_eq!(xfs.grow(b, 40 * MIB, ProcessId(2)), Err(OutOfSpace { device: 0 }));
        xfs.grow(b, 20 * MIB, ProcessId(2)).unwrap();
        xfs.map(a, 0, 4096).unwrap();
        xfs.map(b, 0, 4096).unwrap();
        assert_disjoint_and_outside_reserved(&xfs);
    }
}
