//! The host: page cache, read-ahead, write-back, file layout and CPU costs — what shapes the
//! requests a scheduler sees when programs use ordinary buffered I/O.
//!
//! The runner hands the host every operation that is not O_DIRECT (and the file mapping of
//! those that are). The host answers with [`HostAction`]s: block I/O to submit on behalf of a
//! process (reads, read-ahead, write-back), and operations finished at an instant. It never
//! touches a queue itself, so the runner stays the one place where requests meet schedulers.
//!
//! * **Reads** walk their pages in order, as `do_generic_mapping_read` did in 2.6.9 and
//!   2.6.18 (specs/host-mechanisms.md §1.1): read-ahead ([`readahead`]) is called per page
//!   (2.6.9, RHEL 4 GA–U2) or once per `read()` and again at the page it names (2.6.18,
//!   RHEL 5), as the host's kernel did, and its windows go out as back-to-back bios of the
//!   queue's largest size (§1.2); a page being read is waited for; a page not in the cache at
//!   all is read alone, one synchronous 4 KiB bio. Cached pages are copied at memory speed.
//!   On 2.4 (RHEL 3) read-ahead is called once per `read()` and at every page, a missing page
//!   is read before read-ahead sees it, and every file page is its own 4 KiB bio
//!   (linux-2.4-elevator.md §6.3).
//!   The runner reports the device's read congestion (§2.4), which makes 2.6.9 skip windows
//!   and 2.6.18 drop its non-blocking ahead windows.
//! * **Writes** copy into the cache and mark pages dirty. When dirty plus write-back pages
//!   exceed `dirty_ratio` of the cache, the writer writes back dirty data itself — `write_chunk`
//!   pages (1.5 × the 2.6.18 `ratelimit_pages`, at most 1536) — before its write returns; it is
//!   slowed to the disk's pace because submitting blocks while the request pool is full. With
//!   nothing left to write back, it waits for write-back to complete (at most 100 ms, the
//!   kernel's congestion wait) and checks again.
//! * **The flusher** (pdflush) starts when dirty data passes `dirty_background_ratio` and writes
//!   the file dirtied longest ago, 1024 pages (4 MiB) at a time in file order, until below the
//!   threshold; it backs off while the device's write pool is congested. Every
//!   `dirty_writeback_interval` it also writes data dirty for longer than `dirty_expire`.
//!   Write-back is asynchronous I/O, submitted as the writing process (or as the flusher).
//! * **On a 2.4 host** (RHEL 3) bdflush and kupdated take the flusher's and the throttled
//!   writers' place: one global dirty-buffer LRU, 32-buffer batches, `tq_disk` unplugs
//!   ([`writeback`]'s 2.4 section, linux-2.4-elevator.md §6.4).
//! * **fsync** writes the file's dirty pages (flagged sync, or async as 2.6.18 did, per the
//!   `fsync` key) and returns when none of its pages is dirty or under write-back.
//! * **Dropping caches** writes back and forgets a device's pages (hdparm's `BLKFLSBUF`), or
//!   forgets a file's clean pages.
//! * **Files** are laid out by [`layout`]; a raw block device is a space of its own (dd of a
//!   partition reads through the block device's page cache).
//! * **CPU** ([`cpu`]): what calls, pages, bios, requests and interrupts cost, who is
//!   charged, and the processors that run the work.
//! * **Cores and locks** ([`cores`]): cores that run one work item at a time and FIFO
//!   spinlocks with a hand-off penalty, for the blk-mq host; not yet used by the runner (the
//!   blk-mq wiring slice of issue 18 connects them).
//!
//! # Deviations from Linux
//!
//! * A write of part of a page that is not cached does not read the page first.
//! * Direct I/O to a file does not write back or invalidate cached pages of the same range.
//! * Mapped files, metadata and journal I/O are not modelled; `fsync` sends no cache flush.
//! * A `read()` copies its pages as the cache hands them over but is charged the copy at its
//!   end, so read-ahead calls within one call happen as soon as the pages are in, not after
//!   each page's copy.
//! * Read-ahead state lives per process and file for the whole run (there is no `open()`):
//!   see [`readahead`]'s own deviations.
//! * Write-back chooses files by when they were first dirtied and writes each from where its
//!   last write-back stopped, as 2.6.18 does; it does not model per-superblock lists.

pub(crate) mod blkmq;
pub(crate) mod cache;
pub(crate) mod cores;
pub(crate) mod cpu;
pub(crate) mod journal;
pub(crate) mod layout;
pub(crate) mod readahead;
pub mod spec;
pub(crate) mod writeback;

use crate::LookupMap;
use std::collections::BTreeMap;

use elevator_core::kernel::ReadAheadAlgorithm;
use elevator_core::{Instant, IoPriority, Op, ProcessId, RequestFlags, SECTOR_SIZE_BYTES, Sector};

use self::cache::{CHUNK_PAGES, PAGE_BYTES, PageCache, SpaceId, page_mask};
use self::cpu::CpuModel;
pub(crate) use self::cpu::CpuTime;
use self::layout::{Layouts, OutOfSpace};
use self::readahead::{ReadAhead, ReadAheadIo};
use self::spec::{Filesystem, HostSpec};
use self::writeback::{Writeback, WritebackOwner};

/// Sectors in a page.
const PAGE_SECTORS: u64 = PAGE_BYTES / SECTOR_SIZE_BYTES;

/// One block I/O the host asks the runner to submit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HostBio {
    /// The host's handle, given back in [`Host::bio_done`].
    pub(crate) id: u64,
    pub(crate) op: Op,
    pub(crate) start: Sector,
    pub(crate) sector_count: u32,
    pub(crate) flags: RequestFlags,
}

/// What the host asks of the runner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HostAction {
    /// Submit these bios to `device` as `process`, in order; report [`Host::batch_accepted`]
    /// once every one has been taken by the queue.
    Submit {
        batch: u64,
        device: usize,
        process: ProcessId,
        priority: IoPriority,
        bios: Vec<HostBio>,
    },
    /// Operation `op` is finished at `at`.
    Complete { op: u64, at: Instant },
    /// A process is about to sleep on a page being read from `device`: run its queue now
    /// (the kernel's `sync_page` → `blk_run_backing_dev`), rather than leave the read behind
    /// a plug for the timer. On a 2.4 host this is `tq_disk` (which unplugs every queue);
    /// bdflush and kupdated ask for it for every device.
    Unplug { device: usize },
}

/// A buffered operation the runner hands over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HostOpKind {
    Read,
    Write,
    Sync,
    DropCaches,
}

/// Where a host operation goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HostPlace {
    Device(usize),
    File(usize),
}

/// A device as the host sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostDevice {
    pub(crate) capacity_sectors: u64,
    pub(crate) max_sectors: u32,
    pub(crate) read_ahead_pages: u64,
    /// The block size of its block-device page cache: set at first open to the largest of
    /// 512, 1024, 2048 and 4096 bytes that divides the device's size (`bd_set_size`,
    /// host-mechanisms.md §1.5). A raw read or write makes one bio per block.
    pub(crate) block_bytes: u32,
}

impl HostDevice {
    /// The block size the kernel gives a block device of `capacity_sectors` at first open.
    pub(crate) fn block_bytes_for(capacity_sectors: u64) -> u32 {
        let bytes = capacity_sectors * SECTOR_SIZE_BYTES;
        let mut block = SECTOR_SIZE_BYTES as u32;
        while block < PAGE_BYTES as u32 && bytes % (2 * u64::from(block)) == 0 {
            block *= 2;
        }
        block
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SpaceKind {
    File(usize),
    Raw,
}

/// A file or raw device's page-cache bookkeeping.
#[derive(Clone, Copy, Debug)]
struct Space {
    device: usize,
    kind: SpaceKind,
    dirty_pages: u64,
    writeback_pages: u64,
    /// When the space first became dirty (the kernel's `dirtied_when`).
    dirtied_at: Option<Instant>,
    /// Page where the next write-back of this space starts (`writeback_index`).
    cursor: u64,
}

#[derive(Clone, Copy, Debug)]
struct BioState {
    space: SpaceId,
    first_page: u64,
    page_count: u64,
    write: bool,
    batch: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BatchOwner {
    /// A reader's reads and read-ahead: nobody waits for the batch as such.
    Reader,
    /// Write-back ([`writeback`]): whoever wrote it waits for it.
    Writeback(WritebackOwner),
}

#[derive(Clone, Copy, Debug)]
struct Batch {
    owner: BatchOwner,
    /// Bios not yet completed.
    outstanding: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum OpState {
    /// A `read()` of pages `..end` of `space` waiting at page `cursor` (not yet up to date);
    /// read-ahead is called again when it reaches `call_at`.
    Read { space: SpaceId, cursor: u64, end: u64, call_at: u64, bytes: u64 },
}

#[derive(Clone, Debug)]
struct PendingOp {
    process: ProcessId,
    priority: IoPriority,
    state: OpState,
}

/// The host.
#[derive(Debug)]
pub(crate) struct Host {
    cache: PageCache,
    layouts: Layouts,
    spaces: Vec<Space>,
    devices: Vec<HostDevice>,
    /// The raw space of each device.
    raw_space: Vec<SpaceId>,
    /// Each reader's read-ahead, by process and file (made at its first read).
    readers: BTreeMap<(ProcessId, SpaceId), Reader>,
    /// Processes that read through another's open files (an iSCSI target's worker threads
    /// share the one `struct file` of each LUN), mapped to the process whose read-ahead state
    /// they use.
    read_ahead_owner: BTreeMap<ProcessId, ProcessId>,
    /// Which read-ahead the kernel runs.
    read_ahead_algorithm: ReadAheadAlgorithm,
    ops: BTreeMap<u64, PendingOp>,
    bios: LookupMap<u64, BioState>,
    batches: LookupMap<u64, Batch>,
    next_bio: u64,
    next_batch: u64,
    /// Dirty limits, flushers, throttled writers, syncs and the journal.
    writeback: Writeback,
    /// Whether each device's read pool is congested (read-ahead skips or drops windows).
    read_congested: Vec<bool>,
    /// Processors and what each process has used of them ([`cpu`]).
    cpu: CpuModel,
    actions: Vec<HostAction>,
    /// Set by every entry point that may have moved a timer; cleared when the runner asks.
    timers_changed: bool,
    /// Scratch for [`Host::bio_done`]: the reads to look at again, kept to spare an
    /// allocation per completed bio.
    readers_scratch: Vec<u64>,
    /// Counters for reports.
    pub(crate) stats: HostStats,
}

/// What the host did, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HostStats {
    pub(crate) cache_hit_pages: u64,
    pub(crate) cache_miss_pages: u64,
    pub(crate) read_ahead_pages: u64,
    pub(crate) writeback_pages: u64,
    pub(crate) throttled_writes: u64,
    pub(crate) flusher_passes: u64,
    /// Pages read again because they were evicted between being read ahead and the reader
    /// reaching them: read-ahead thrashing when memory is short.
    pub(crate) reread_evicted_pages: u64,
    /// Pages a reader did not find in the cache and read alone, synchronously.
    pub(crate) single_page_reads: u64,
    /// Pages of read-ahead windows skipped or dropped because the read pool was congested,
    /// counted at every attempt (a reader retries its dropped window at each call).
    pub(crate) read_ahead_dropped_pages: u64,
    /// The most pages ever dirty or under write-back at once.
    pub(crate) dirty_pages_peak: u64,
}

/// An operation the host cannot do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HostError {
    OutOfSpace { device: usize },
    NoSuchPlace,
}

impl From<OutOfSpace> for HostError {
    fn from(error: OutOfSpace) -> HostError {
        HostError::OutOfSpace { device: error.device }
    }
}

impl Host {
    /// A host with `devices` and the workload's files (device, preexisting size).
    pub(crate) fn new(
        spec: &HostSpec,
        devices: Vec<HostDevice>,
        files: &[(usize, u64)],
    ) -> Result<Host, HostError> {
        let params = &spec.params;
        let cache_bytes = params.size("ram") - params.size("reserve");
        let cache = PageCache::new(cache_bytes);
        let cache_pages = cache.capacity_pages();
        let capacities: Vec<u64> = devices.iter().map(|device| device.capacity_sectors).collect();
        // Where each device's journal (ext3) or log (XFS) lives: file data stays out of it.
        let reserved: Vec<_> = capacities
            .iter()
            .map(|&capacity| {
                let (first, sectors) = journal::journal_region(spec.filesystem(), capacity);
                first..first + sectors
            })
            .collect();
        let mut layouts = Layouts::new(&capacities, &reserved, spec.filesystem(), spec.kernel());
        let mut spaces = Vec::new();
        for &(device, size_bytes) in files {
            if device >= devices.len() {
                return Err(HostError::NoSuchPlace);
            }
            let file = layouts.add_file(device, size_bytes)?;
            spaces.push(Space::new(device, SpaceKind::File(file)));
        }
        let raw_space = (0..devices.len())
            .map(|device| {
                spaces.push(Space::new(device, SpaceKind::Raw));
                (spaces.len() - 1) as SpaceId
            })
            .collect();
        let writeback = Writeback::new(spec, cache_pages, &capacities);
        Ok(Host {
            cache,
            layouts,
            read_congested: vec![false; devices.len()],
            devices,
            raw_space,
            spaces,
            readers: BTreeMap::new(),
            read_ahead_owner: BTreeMap::new(),
            read_ahead_algorithm: spec.kernel().read_ahead(),
            ops: BTreeMap::new(),
            bios: LookupMap::default(),
            batches: LookupMap::default(),
            next_bio: 0,
            next_batch: 0,
            writeback,
            cpu: CpuModel::new(spec),
            actions: Vec::new(),
            timers_changed: false,
            readers_scratch: Vec::new(),
            stats: HostStats::default(),
        })
    }

    /// Actions since the last call, in order.
    ///
    /// Swaps them with `into` (empty), so the runner's buffer and the host's keep their
    /// memory: no allocation per batch of actions.
    pub(crate) fn swap_actions(&mut self, into: &mut Vec<HostAction>) {
        debug_assert!(into.is_empty(), "the caller's buffer is drained");
        if !self.actions.is_empty() {
            // Whatever produced actions may have armed or cleared a timer too.
            self.timers_changed = true;
        }
        std::mem::swap(&mut self.actions, into);
    }

    /// The actions queued, taken out (the tests' view of [`Host::swap_actions`]).
    #[cfg(test)]
    pub(crate) fn take_actions(&mut self) -> Vec<HostAction> {
        let mut actions = Vec::new();
        self.swap_actions(&mut actions);
        actions
    }

    /// Whether the runner has anything to carry out: an action queued or a timer that may
    /// have changed. Checked after every event, so inline and branch-cheap.
    #[inline]
    pub(crate) fn has_work(&self) -> bool {
        !self.actions.is_empty() || self.timers_changed
    }

    /// Whether [`Host::next_timer`] may have changed since the last call.
    pub(crate) fn take_timers_changed(&mut self) -> bool {
        std::mem::take(&mut self.timers_changed)
    }

    /// The earliest instant the host wants [`Host::wake`] called.
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        self.writeback.next_timer()
    }

    /// What the host holds for a stalled run's message: each pending operation's state,
    /// the flusher's and the cache's.
    pub(crate) fn stall_detail(&self) -> String {
        let mut parts: Vec<String> = self
            .ops
            .iter()
            .map(|(op, pending)| {
                format!("host op {op} of {}: {:?}", pending.process, pending.state)
            })
            .collect();
        parts.push(self.writeback.stall_detail());
        parts.push(format!(
            "cache: {} dirty, {} under write-back of {} pages; {} bios, {} batches in flight",
            self.cache.dirty_pages(),
            self.cache.writeback_pages(),
            self.cache.capacity_pages(),
            self.bios.len(),
            self.batches.len()
        ));
        parts.join("; ")
    }

    /// From now on `process` reads with `owner`'s read-ahead state for every file, as threads
    /// reading through one shared open file do.
    pub(crate) fn share_read_ahead(&mut self, process: ProcessId, owner: ProcessId) {
        if process != owner {
            self.read_ahead_owner.insert(process, owner);
        }
    }

    /// The device a file lives on.
    pub(crate) fn file_device(&self, file: usize) -> Option<usize> {
        self.layouts.files.get(file).map(|layout| layout.device)
    }

    /// Whether the runner should tell the host about `device`'s write congestion.
    pub(crate) fn set_congested(&mut self, now: Instant, device: usize, congested: bool) {
        self.writeback_congestion(now, device, congested);
    }

    /// Whether `device`'s read pool is congested (§2.4): read-ahead skips (2.6.9) or drops
    /// (2.6.18's non-blocking ahead window) its windows meanwhile.
    pub(crate) fn set_read_congested(&mut self, device: usize, congested: bool) {
        self.read_congested[device] = congested;
    }

    /// Device pieces of a direct (O_DIRECT) file operation, allocating space for writes
    /// (as `process`, whose pid picks ext3's goal): (first sector, sectors).
    pub(crate) fn map_direct(
        &mut self,
        file: usize,
        process: ProcessId,
        offset: u64,
        size: u64,
        write: bool,
    ) -> Result<Vec<(u64, u64)>, HostError> {
        let layout = self.layouts.files.get(file).ok_or(HostError::NoSuchPlace)?;
        let end = if write { offset + size } else { (offset + size).min(layout.allocated_bytes) };
        if write {
            self.layouts.grow(file, end, process)?;
            let layout = &mut self.layouts.files[file];
            layout.size_bytes = layout.size_bytes.max(end);
        }
        let mut pieces = Vec::new();
        let mut at = offset;
        while at < end {
            // XFS's direct writes allocate at once: `map` allocates a reserved range.
            let Some((sector, bytes)) = self.layouts.map(file, at, end - at) else { break };
            pieces.push((sector, bytes.div_ceil(SECTOR_SIZE_BYTES)));
            at += bytes;
        }
        Ok(pieces)
    }

    /// Takes a buffered operation `op` of `process`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn submit(
        &mut self,
        now: Instant,
        op: u64,
        process: ProcessId,
        priority: IoPriority,
        kind: HostOpKind,
        place: HostPlace,
        offset: u64,
        size: u64,
    ) -> Result<(), HostError> {
        self.timers_changed = true;
        let space = self.space_of(place)?;
        match kind {
            HostOpKind::Read => self.read(now, op, process, priority, space, offset, size),
            HostOpKind::Write => {
                // Before the write, which may finish at once and run the process's charges.
                self.charge_written_pages(now, process, offset, size);
                self.write(now, op, process, priority, space, offset, size)?;
            }
            HostOpKind::Sync => self.sync(now, op, process, priority, vec![space], false),
            HostOpKind::DropCaches => match place {
                HostPlace::File(_) => {
                    self.cache.drop_clean(Some(space));
                    self.finish(now, op, process, 0);
                }
                HostPlace::Device(device) => {
                    let spaces = (0..self.spaces.len() as SpaceId)
                        .filter(|&s| self.spaces[s as usize].device == device)
                        .collect();
                    self.sync(now, op, process, priority, spaces, true);
                }
            },
        }
        Ok(())
    }

    fn space_of(&self, place: HostPlace) -> Result<SpaceId, HostError> {
        match place {
            HostPlace::Device(device) => {
                self.raw_space.get(device).copied().ok_or(HostError::NoSuchPlace)
            }
            HostPlace::File(file) => {
                if file < self.layouts.files.len() {
                    Ok(file as SpaceId)
                } else {
                    Err(HostError::NoSuchPlace)
                }
            }
        }
    }

    /// The size of a space's data: a file's size, a device's capacity.
    fn space_bytes(&self, space: SpaceId) -> u64 {
        let entry = &self.spaces[space as usize];
        match entry.kind {
            SpaceKind::File(file) => self.layouts.files[file].size_bytes,
            SpaceKind::Raw => self.devices[entry.device].capacity_sectors * SECTOR_SIZE_BYTES,
        }
    }

    // ---- reads ----

    /// A buffered `read()`: the reader walks its pages in order (§1.1, both versions'
    /// `do_generic_mapping_read`), calling read-ahead where it asks to be called, copying the
    /// pages that are up to date, waiting for those being read, and reading a page that is not
    /// in the cache at all alone.
    #[allow(clippy::too_many_arguments)]
    fn read(
        &mut self,
        now: Instant,
        op: u64,
        process: ProcessId,
        priority: IoPriority,
        space: SpaceId,
        offset: u64,
        size: u64,
    ) {
        let first = offset / PAGE_BYTES;
        if self.read_ahead_algorithm == ReadAheadAlgorithm::Generic2_4 {
            // 2.4 adjusts the file's read-ahead once per call, before its first page (even one
            // past the end of the file).
            let key = self.reader_key(process, space);
            let mut reader = self.reader(key);
            reader.read_ahead.read_call(first, offset % PAGE_BYTES, size);
            self.readers.insert(key, reader);
        }
        let end_bytes = (offset + size).min(self.space_bytes(space));
        if end_bytes <= offset {
            // At or past the end of the file: a short read of nothing.
            self.finish(now, op, process, 0);
            return;
        }
        let bytes = end_bytes - offset;
        let end = end_bytes.div_ceil(PAGE_BYTES);
        let missing = self.count_not_uptodate(space, first, end);
        self.stats.cache_miss_pages += missing;
        self.stats.cache_hit_pages += (end - first) - missing;
        let state = OpState::Read { space, cursor: first, end, call_at: first, bytes };
        self.ops.insert(op, PendingOp { process, priority, state });
        self.read_advance(now, op);
    }

    /// Moves reader `op` on as far as the cache lets it; finishes the call at its end.
    fn read_advance(&mut self, now: Instant, op: u64) {
        let Some(pending) = self.ops.get(&op) else { return };
        let OpState::Read { space, mut cursor, end, mut call_at, bytes } = pending.state;
        let (process, priority) = (pending.process, pending.priority);
        let device = self.spaces[space as usize].device;
        let key = self.reader_key(process, space);
        let mut reader = self.reader(key);
        let batch = self.new_batch(BatchOwner::Reader);
        let mut bios = Vec::new();
        let waiting = loop {
            if cursor >= end {
                break false;
            }
            if cursor == call_at {
                if reader.read_ahead.reads_missing_page_first() && self.page_absent(space, cursor) {
                    // 2.4: the page goes to `readpage` first, then read-ahead sees it locked.
                    if (reader.issued.0..reader.issued.1).contains(&cursor) {
                        self.stats.reread_evicted_pages += 1;
                    }
                    self.stats.single_page_reads += 1;
                    self.read_absent(space, cursor, cursor + 1, batch, &mut bios);
                }
                let mut io = ReaderIo {
                    host: self,
                    space,
                    batch,
                    bios: &mut bios,
                    issued: &mut reader.issued,
                };
                call_at = reader.read_ahead.reader_at(cursor, end - cursor, &mut io);
            }
            let stop = end.min(call_at);
            let Some(page) = self.first_not_uptodate(space, cursor, stop) else {
                cursor = stop;
                continue;
            };
            cursor = page;
            if !self.page_absent(space, page) {
                // Being read: wait for it.
                break true;
            }
            // Not in the cache at all: read-ahead hears of the miss, and the page is read
            // alone, synchronously (`readpage`).
            reader.read_ahead.missing(page);
            if (reader.issued.0..reader.issued.1).contains(&page) {
                // Read ahead for this reader, then evicted before it got there.
                self.stats.reread_evicted_pages += 1;
            }
            self.stats.single_page_reads += 1;
            self.read_absent(space, page, page + 1, batch, &mut bios);
            if self.first_not_uptodate(space, page, page + 1).is_some() {
                break true;
            }
            // A hole: read as zeros at once, so the reader goes on.
        };
        self.readers.insert(key, reader);
        self.submit_batch(batch, device, process, priority, bios);
        if waiting {
            self.actions.push(HostAction::Unplug { device });
            let pending = self.ops.get_mut(&op).expect("checked above");
            pending.state = OpState::Read { space, cursor, end, call_at, bytes };
        } else {
            self.ops.remove(&op);
            self.finish(now, op, process, bytes);
        }
    }

    /// Whose read-ahead state `process` uses for `space`.
    fn reader_key(&self, process: ProcessId, space: SpaceId) -> (ProcessId, SpaceId) {
        (self.read_ahead_owner.get(&process).copied().unwrap_or(process), space)
    }

    /// A reader's state, or a fresh one: the state is made at the first read, with the maximum
    /// window of that moment (the kernel copies it into the file at open).
    fn reader(&self, key: (ProcessId, SpaceId)) -> Reader {
        self.readers.get(&key).copied().unwrap_or_else(|| {
            let device = self.spaces[key.1 as usize].device;
            Reader {
                read_ahead: ReadAhead::open(
                    self.read_ahead_algorithm,
                    self.devices[device].read_ahead_pages,
                ),
                issued: (0, 0),
            }
        })
    }

    /// The first page of `first..end` that is not up to date; the chunks passed count as used.
    fn first_not_uptodate(&mut self, space: SpaceId, first: u64, end: u64) -> Option<u64> {
        let mut chunk = first / CHUNK_PAGES;
        while chunk * CHUNK_PAGES < end {
            let base = chunk * CHUNK_PAGES;
            let range = page_mask(first.max(base) - base, end.min(base + CHUNK_PAGES) - base);
            let slot = self.cache.find(space, chunk);
            let uptodate = slot.map_or(0, |slot| self.cache.chunk(slot).uptodate);
            if let Some(slot) = slot
                && range & uptodate != 0
            {
                self.cache.touch(slot);
            }
            let stale = range & !uptodate;
            if stale != 0 {
                return Some(base + u64::from(stale.trailing_zeros()));
            }
            chunk += 1;
        }
        None
    }

    /// Whether `page` is neither cached nor being read.
    fn page_absent(&self, space: SpaceId, page: u64) -> bool {
        let bit = 1u64 << (page % CHUNK_PAGES);
        self.cache.find(space, page / CHUNK_PAGES).is_none_or(|slot| {
            let chunk = self.cache.chunk(slot);
            (chunk.uptodate | chunk.reading) & bit == 0
        })
    }

    /// Starts reads of the pages of `first..end` that are neither cached nor being read,
    /// appending bios to `bios`; returns how many pages it started. Pages with no space on the
    /// device (holes) read as zeros.
    fn read_absent(
        &mut self,
        space: SpaceId,
        first: u64,
        end: u64,
        batch: u64,
        bios: &mut Vec<HostBio>,
    ) -> u64 {
        let mut started = 0;
        // Runs of absent pages, merged across chunk boundaries.
        let mut run: Option<(u64, u64)> = None;
        let mut chunk = first / CHUNK_PAGES;
        while chunk * CHUNK_PAGES < end {
            let base = chunk * CHUNK_PAGES;
            let range = page_mask(first.max(base) - base, end.min(base + CHUNK_PAGES) - base);
            let present = self.cache.find(space, chunk).map_or(0, |slot| {
                let chunk = self.cache.chunk(slot);
                chunk.uptodate | chunk.reading
            });
            let absent = range & !present;
            if absent != 0 {
                let slot = self.cache.get_or_insert(space, chunk);
                self.cache.start_read(slot, absent);
                started += u64::from(absent.count_ones());
            }
            // Each run of absent pages in the chunk at once (the bits, lowest first), not each
            // of its 64 pages: the same runs, merged and issued in the same order.
            let mut bits = absent;
            while bits != 0 {
                let low = u64::from(bits.trailing_zeros());
                let length = u64::from((!(bits >> low)).trailing_zeros());
                let (page, after) = (base + low, base + low + length);
                run = match run {
                    Some((start, stop)) if stop == page => Some((start, after)),
                    Some((start, stop)) => {
                        self.issue_pages(
                            space,
                            start,
                            stop,
                            false,
                            RequestFlags::SYNC,
                            batch,
                            bios,
                        );
                        Some((page, after))
                    }
                    None => Some((page, after)),
                };
                bits &= page_mask(low + length, CHUNK_PAGES);
            }
            chunk += 1;
        }
        if let Some((start, stop)) = run {
            self.issue_pages(space, start, stop, false, RequestFlags::SYNC, batch, bios);
        }
        started
    }

    /// How many pages of `first..end` are not up to date.
    fn count_not_uptodate(&self, space: SpaceId, first: u64, end: u64) -> u64 {
        let mut count = 0;
        let mut chunk = first / CHUNK_PAGES;
        while chunk * CHUNK_PAGES < end {
            let base = chunk * CHUNK_PAGES;
            let range = page_mask(first.max(base) - base, end.min(base + CHUNK_PAGES) - base);
            let uptodate =
                self.cache.find(space, chunk).map_or(0, |slot| self.cache.chunk(slot).uptodate);
            count += u64::from((range & !uptodate).count_ones());
            chunk += 1;
        }
        count
    }

    /// Makes bios for pages `first..end` of `space` (reads, or write-back of pages already
    /// marked), split at extent boundaries and `max_sectors`.
    #[allow(clippy::too_many_arguments)]
    fn issue_pages(
        &mut self,
        space: SpaceId,
        first: u64,
        end: u64,
        write: bool,
        flags: RequestFlags,
        batch: u64,
        bios: &mut Vec<HostBio>,
    ) {
        let entry = self.spaces[space as usize];
        let max_sectors = u64::from(self.devices[entry.device].max_sectors);
        // How large one bio may be — the kernel's bios, not the requests merging makes of
        // them (host-mechanisms.md §1.2–§1.5): the block device's page cache (`def_blk_aops`)
        // and ext3's write-back (`block_write_full_page`, no `writepages`) submit one bio per
        // block; file reads (`mpage_readpages`) and XFS's clustered write-back grow one bio
        // to the queue's limit.
        let bio_limit_sectors = match entry.kind {
            SpaceKind::Raw => u64::from(self.devices[entry.device].block_bytes) / SECTOR_SIZE_BYTES,
            SpaceKind::File(_) if write && self.writeback.filesystem == Filesystem::Ext3 => {
                PAGE_BYTES / SECTOR_SIZE_BYTES
            }
            // 2.4 reads a file page by page, each one 4 KiB buffer head (`readpage`,
            // linux-2.4-elevator.md §6.3); requests grow only by merging in the queue.
            SpaceKind::File(_) if self.read_ahead_algorithm == ReadAheadAlgorithm::Generic2_4 => {
                PAGE_BYTES / SECTOR_SIZE_BYTES
            }
            SpaceKind::File(_) => max_sectors - max_sectors % 8,
        };
        let mut page = first;
        while page < end {
            let offset = page * PAGE_BYTES;
            let length = (end - page) * PAGE_BYTES;
            let piece = match entry.kind {
                SpaceKind::Raw => Some((offset / SECTOR_SIZE_BYTES, length)),
                // XFS: write-back's first page of a delayed range allocates all of it.
                SpaceKind::File(file) => self.layouts.map(file, offset, length),
            };
            let Some((sector, bytes)) = piece else {
                // A hole (never written): reads as zeros without I/O; nothing to write back.
                self.complete_pages(space, page, end - page, write);
                return;
            };
            let pages = bytes.div_ceil(PAGE_BYTES);
            let sectors = pages * PAGE_BYTES / SECTOR_SIZE_BYTES;
            let mut done_sectors = 0;
            while done_sectors < sectors {
                let count = (sectors - done_sectors).min(bio_limit_sectors);
                let id = self.next_bio;
                self.next_bio += 1;
                // A bio smaller than a page (a block-device block of 512 B–2 KiB) belongs to
                // the page it starts in, which completes with the page's last block.
                let first_page = page + done_sectors * SECTOR_SIZE_BYTES / PAGE_BYTES;
                let end_page = page
                    + (done_sectors + count).div_ceil(PAGE_SECTORS)
                        * PAGE_SECTORS
                        * SECTOR_SIZE_BYTES
                        / PAGE_BYTES;
                let page_count = if (done_sectors + count) % PAGE_SECTORS == 0 {
                    end_page - first_page
                } else {
                    0
                };
                self.bios.insert(id, BioState { space, first_page, page_count, write, batch });
                bios.push(HostBio {
                    id,
                    op: if write { Op::Write } else { Op::Read },
                    start: Sector(sector + done_sectors),
                    sector_count: count as u32,
                    flags,
                });
                done_sectors += count;
            }
            page += pages;
        }
    }

    /// A read or write-back of `count` pages finished (or needed no I/O).
    fn complete_pages(&mut self, space: SpaceId, first: u64, count: u64, write: bool) {
        let mut page = first;
        let end = first + count;
        while page < end {
            let chunk = page / CHUNK_PAGES;
            let chunk_end = ((chunk + 1) * CHUNK_PAGES).min(end);
            let mask = page_mask(page % CHUNK_PAGES, chunk_end - chunk * CHUNK_PAGES);
            if let Some(slot) = self.cache.find(space, chunk) {
                if write {
                    let before = self.cache.writeback_pages();
                    self.cache.finish_writeback(slot, mask);
                    self.spaces[space as usize].writeback_pages -=
                        before - self.cache.writeback_pages();
                } else {
                    self.cache.finish_read(slot, mask);
                }
            }
            page = chunk_end;
        }
    }

    // ---- events from the runner ----

    /// A timer the host asked for came due.
    pub(crate) fn wake(&mut self, now: Instant) {
        self.timers_changed = true;
        self.writeback_wake(now);
    }

    /// Every bio of `batch` has been taken by its queue.
    pub(crate) fn batch_accepted(&mut self, now: Instant, batch: u64) {
        self.timers_changed = true;
        let Some(state) = self.batches.get(&batch).copied() else { return };
        if state.outstanding == 0 {
            self.batches.remove(&batch);
        }
        if let BatchOwner::Writeback(owner) = state.owner {
            self.writeback_accepted(now, batch, owner);
        }
    }

    /// A host bio completed.
    pub(crate) fn bio_done(&mut self, now: Instant, bio: u64) {
        self.timers_changed = true;
        let state = self.bios.remove(&bio).expect("a host bio completes once");
        self.complete_pages(state.space, state.first_page, state.page_count, state.write);
        let batch = self.batches.get_mut(&state.batch).expect("a live batch");
        batch.outstanding -= 1;
        let batch_done = batch.outstanding == 0;
        let owner = batch.owner;
        if batch_done {
            self.batches.remove(&state.batch);
        }
        if let BatchOwner::Writeback(owner) = owner {
            let device = self.spaces[state.space as usize].device;
            self.writeback_bio_done(now, state.batch, device, owner, batch_done);
        } else {
            // Readers of this space waiting for a page may go on.
            let mut readers = std::mem::take(&mut self.readers_scratch);
            readers.clear();
            readers.extend(
                self.ops
                    .iter()
                    .filter(|(_, op)| matches!(op.state, OpState::Read { space, .. } if space == state.space))
                    .map(|(&id, _)| id),
            );
            for &op in &readers {
                self.read_advance(now, op);
            }
            self.readers_scratch = readers;
        }
    }

    // ---- shared ----

    fn new_batch(&mut self, owner: BatchOwner) -> u64 {
        let batch = self.next_batch;
        self.next_batch += 1;
        self.batches.insert(batch, Batch { owner, outstanding: 0 });
        batch
    }

    fn submit_batch(
        &mut self,
        batch: u64,
        device: usize,
        process: ProcessId,
        priority: IoPriority,
        bios: Vec<HostBio>,
    ) {
        if bios.is_empty() {
            self.batches.remove(&batch);
            return;
        }
        self.batches.get_mut(&batch).expect("a live batch").outstanding = bios.len() as u32;
        self.charge_read_pages(process, &bios);
        self.actions.push(HostAction::Submit { batch, device, process, priority, bios });
    }

    /// Cache and dirty figures for reports: (cached chunks, dirty pages, write-back pages).
    pub(crate) fn occupancy(&self) -> (u64, u64, u64) {
        (self.cache.chunk_count(), self.cache.dirty_pages(), self.cache.writeback_pages())
    }

    /// The page cache's capacity in pages.
    pub(crate) fn cache_capacity_pages(&self) -> u64 {
        self.cache.capacity_pages()
    }

    /// The dirty limit in pages: dirty plus write-back pages above it throttle writers.
    pub(crate) fn dirty_limit_pages(&self) -> u64 {
        self.writeback.dirty_limit_pages()
    }
}

impl Space {
    fn new(device: usize, kind: SpaceKind) -> Space {
        Space { device, kind, dirty_pages: 0, writeback_pages: 0, dirtied_at: None, cursor: 0 }
    }
}

/// A reader of one file: its read-ahead state, and the pages read ahead for it last.
#[derive(Clone, Copy, Debug)]
struct Reader {
    read_ahead: ReadAhead,
    /// The run of pages its latest windows covered (`start..end`): a page of it found missing
    /// was evicted before the reader got there.
    issued: (u64, u64),
}

/// Read-ahead's view of the host for one reader: its windows become bios of one batch.
struct ReaderIo<'a> {
    host: &'a mut Host,
    space: SpaceId,
    batch: u64,
    bios: &'a mut Vec<HostBio>,
    issued: &'a mut (u64, u64),
}

impl ReadAheadIo for ReaderIo<'_> {
    fn page_uptodate(&self, index: u64) -> bool {
        self.host.count_not_uptodate(self.space, index, index + 1) == 0
    }

    fn end_index(&self) -> u64 {
        self.host.space_bytes(self.space) / PAGE_BYTES
    }

    fn read_congested(&self) -> bool {
        self.host.read_congested[self.host.spaces[self.space as usize].device]
    }

    fn read(&mut self, start: u64, count: u64, speculative: bool) -> u64 {
        // Nothing past the end of the file (`__do_page_cache_readahead`).
        let end = (start + count).min(self.host.space_bytes(self.space).div_ceil(PAGE_BYTES));
        if start >= end {
            return 0;
        }
        let started = self.host.read_absent(self.space, start, end, self.batch, self.bios);
        if speculative {
            self.host.stats.read_ahead_pages += started;
        }
        *self.issued = if self.issued.1 == start { (self.issued.0, end) } else { (start, end) };
        started
    }

    fn skipped(&mut self, count: u64) {
        self.host.stats.read_ahead_dropped_pages += count;
    }
}
