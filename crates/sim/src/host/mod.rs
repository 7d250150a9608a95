//! The host: page cache, read-ahead, write-back, file layout and CPU costs — what shapes the
//! requests a scheduler sees when programs use ordinary buffered I/O.
//!
//! The runner hands the host every operation that is not O_DIRECT (and the file mapping of
//! those that are). The host answers with [`HostAction`]s: block I/O to submit on behalf of a
//! process (reads, read-ahead, write-back), and operations finished at an instant. It never
//! touches a queue itself, so the runner stays the one place where requests meet schedulers.
//!
//! * **Reads** are served from the cache at memory-copy speed; missing pages are read from the
//!   device, with read-ahead ([`readahead`]) for sequential readers. A process that needs a
//!   page already being read waits for that read.
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
//! * **fsync** writes the file's dirty pages (flagged sync, or async as 2.6.18 did, per the
//!   `fsync` key) and returns when none of its pages is dirty or under write-back.
//! * **Dropping caches** writes back and forgets a device's pages (hdparm's `BLKFLSBUF`), or
//!   forgets a file's clean pages.
//! * **Files** are laid out by [`layout`]; a raw block device is a space of its own (dd of a
//!   partition reads through the block device's page cache).
//! * **CPU**: every call costs `syscall` of system time plus its copy at `copy_rate` and `user`
//!   of user time, run on the first free of `cpus` processors (so cached reads complete at
//!   memory speed, and many processes contend for few CPUs); every request submitted costs
//!   `request_cost` plus the scheduler's own cost (its registry entry's
//!   [`cpu_cost`](elevator_sched::SchedulerKind::cpu_cost)).
//!
//! # Deviations from Linux
//!
//! * A write of part of a page that is not cached does not read the page first.
//! * Direct I/O to a file does not write back or invalidate cached pages of the same range.
//! * Mapped files, metadata and journal I/O are not modelled; `fsync` sends no cache flush.
//! * Write-back chooses files by when they were first dirtied and writes each from where its
//!   last write-back stopped, as 2.6.18 does; it does not model per-superblock lists.

pub(crate) mod cache;
pub(crate) mod layout;
pub(crate) mod readahead;
pub mod spec;

use crate::LookupMap;
use std::collections::{BTreeMap, BTreeSet};

use elevator_core::{
    Duration, Instant, IoPriority, Op, ProcessId, RequestFlags, SECTOR_SIZE_BYTES, Sector,
};

use elevator_sched::SchedulerKind;

use self::cache::{CHUNK_PAGES, PAGE_BYTES, PageCache, SpaceId, page_mask};
use self::layout::{Layouts, OutOfSpace};
use self::readahead::{Decision, ReadAhead};
use self::spec::HostSpec;

/// The flusher thread's process (pdflush): its write-back lands in cfq's async queues like
/// anyone's, but is charged to no workload process.
pub const FLUSHER: ProcessId = ProcessId(u32::MAX - 1);

/// Pages the flusher writes from one file before moving on (`MAX_WRITEBACK_PAGES`, 4 MiB).
const FLUSHER_PAGES_PER_PASS: u64 = 1024;
/// How long a writer or the flusher waits for congestion to clear (`HZ/10`).
const CONGESTION_WAIT: Duration = Duration::from_millis(100);

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
    /// Chunk where the next write-back of this space starts (`writeback_index`).
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
    /// A throttled writer's write-back: the writer waits for it to be accepted.
    Throttle { op: u64 },
    /// An fsync or a device sync: the caller waits for completion.
    Sync { op: u64 },
    /// The flusher: it writes its next pass once this one is accepted.
    Flusher,
}

#[derive(Clone, Copy, Debug)]
struct Batch {
    owner: BatchOwner,
    pages: u64,
    /// Bios not yet completed.
    outstanding: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum OpState {
    /// Waiting for pages `first..end` of `space` to be read.
    Read { space: SpaceId, first: u64, end: u64, bytes: u64 },
    /// A writer over the dirty limit: it has submitted `written` pages of write-back; it waits
    /// for `batch` to be accepted, or until `until`.
    Throttle { written: u64, batch: Option<u64>, until: Option<Instant>, bytes: u64 },
    /// Waiting for `spaces` to be clean and its own batches done; then, for a device drop,
    /// forgetting their pages.
    Sync { spaces: Vec<SpaceId>, batches: u32, drop_after: bool },
}

#[derive(Clone, Debug)]
struct PendingOp {
    process: ProcessId,
    priority: IoPriority,
    state: OpState,
}

#[derive(Clone, Copy, Debug, Default)]
struct Flusher {
    /// The batch it waits to see accepted.
    batch: Option<u64>,
    /// Backed off (congestion) until then.
    until: Option<Instant>,
    /// The periodic write-back's next wake-up.
    periodic_at: Option<Instant>,
}

/// CPU time a process used, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuTime {
    pub(crate) user_ns: u64,
    pub(crate) sys_ns: u64,
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
    /// Dirty chunks in (space, chunk) order: what write-back walks.
    dirty_chunks: BTreeSet<(SpaceId, u64)>,
    read_ahead: BTreeMap<(ProcessId, SpaceId), ReadAhead>,
    ops: BTreeMap<u64, PendingOp>,
    bios: LookupMap<u64, BioState>,
    batches: LookupMap<u64, Batch>,
    next_bio: u64,
    next_batch: u64,
    flusher: Flusher,
    congested: Vec<bool>,
    cpu_free_at: Vec<Instant>,
    cpu: BTreeMap<ProcessId, CpuTime>,
    actions: Vec<HostAction>,
    /// Set by every entry point that may have moved a timer; cleared when the runner asks.
    timers_changed: bool,
    // Configuration, resolved.
    dirty_limit_pages: u64,
    background_limit_pages: u64,
    write_chunk_pages: u64,
    dirty_expire: Duration,
    writeback_interval: Duration,
    copy_rate_bytes_per_s: u64,
    syscall: Duration,
    user: Duration,
    request_cost: Duration,
    fsync_flags: RequestFlags,
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
    /// Pages read again because they were evicted between arriving and being copied to the
    /// reader waiting for them: read-ahead thrashing when memory is short.
    pub(crate) reread_evicted_pages: u64,
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
            .map(|&capacity| layout::default_reserved_sectors(spec.filesystem(), capacity))
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
        let cpus = params.integer("cpus") as usize;
        // 2.6.18's ratelimit_pages: memory over 32 per CPU, between 16 pages and 4 MiB.
        let ratelimit_pages = (cache_pages / (cpus as u64 * 32)).clamp(16, 1024);
        let percent = |ratio: i64| cache_pages * ratio as u64 / 100;
        Ok(Host {
            cache,
            layouts,
            congested: vec![false; devices.len()],
            devices,
            raw_space,
            spaces,
            dirty_chunks: BTreeSet::new(),
            read_ahead: BTreeMap::new(),
            ops: BTreeMap::new(),
            bios: LookupMap::default(),
            batches: LookupMap::default(),
            next_bio: 0,
            next_batch: 0,
            flusher: Flusher::default(),
            cpu_free_at: vec![Instant::ZERO; cpus],
            cpu: BTreeMap::new(),
            actions: Vec::new(),
            timers_changed: false,
            dirty_limit_pages: percent(params.integer("dirty_ratio")),
            background_limit_pages: percent(params.integer("dirty_background_ratio")),
            write_chunk_pages: ratelimit_pages + ratelimit_pages / 2,
            dirty_expire: params.time("dirty_expire"),
            writeback_interval: params.time("dirty_writeback_interval"),
            copy_rate_bytes_per_s: params.size("copy_rate"),
            syscall: params.time("syscall"),
            user: params.time("user"),
            request_cost: params.time("request_cost"),
            fsync_flags: if params.text("fsync") == "sync" {
                RequestFlags::SYNC
            } else {
                RequestFlags::NONE
            },
            stats: HostStats::default(),
        })
    }

    /// Actions since the last call, in order.
    pub(crate) fn take_actions(&mut self) -> Vec<HostAction> {
        if !self.actions.is_empty() {
            // Whatever produced actions may have armed or cleared a timer too.
            self.timers_changed = true;
        }
        std::mem::take(&mut self.actions)
    }

    /// Whether [`Host::next_timer`] may have changed since the last call.
    pub(crate) fn take_timers_changed(&mut self) -> bool {
        std::mem::take(&mut self.timers_changed)
    }

    /// The earliest instant the host wants [`Host::wake`] called.
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        let throttled = self.ops.values().filter_map(|op| match op.state {
            OpState::Throttle { until, .. } => until,
            _ => None,
        });
        let flusher = [self.flusher.until, self.flusher.periodic_at].into_iter().flatten();
        throttled.chain(flusher).min()
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
        parts.push(format!("flusher {:?}", self.flusher));
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

    /// CPU time `process` has used so far.
    pub(crate) fn cpu_time(&self, process: ProcessId) -> CpuTime {
        self.cpu.get(&process).copied().unwrap_or_default()
    }

    /// The device a file lives on.
    pub(crate) fn file_device(&self, file: usize) -> Option<usize> {
        self.layouts.files.get(file).map(|layout| layout.device)
    }

    /// Whether the runner should tell the host about `device`'s write congestion.
    pub(crate) fn set_congested(&mut self, now: Instant, device: usize, congested: bool) {
        if self.congested[device] == congested {
            return;
        }
        self.timers_changed = true;
        self.congested[device] = congested;
        if !congested && self.flusher.until.is_some() {
            self.flusher.until = None;
            self.flusher_run(now);
        }
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

    /// Charges `process` the system time of one direct call that made `requests` requests.
    pub(crate) fn charge_direct(
        &mut self,
        process: ProcessId,
        requests: u64,
        scheduler: SchedulerKind,
    ) {
        let per_request = self.request_cost + scheduler.cpu_cost();
        let cpu = self.cpu.entry(process).or_default();
        cpu.sys_ns += self.syscall.as_nanos() + per_request.as_nanos() * requests;
        cpu.user_ns += self.user.as_nanos();
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
            HostOpKind::Write => self.write(now, op, process, priority, space, offset, size)?,
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
        let end_bytes = (offset + size).min(self.space_bytes(space));
        if end_bytes <= offset {
            // At or past the end of the file: a short read of nothing.
            self.finish(now, op, process, 0);
            return;
        }
        let bytes = end_bytes - offset;
        let first = offset / PAGE_BYTES;
        let end = end_bytes.div_ceil(PAGE_BYTES);
        let missing = self.first_absent(space, first, end);
        let device = self.spaces[space as usize].device;
        let max_pages = self.devices[device].read_ahead_pages;
        let decision = self
            .read_ahead
            .entry((process, space))
            .or_default()
            .on_read(first, end, missing, max_pages);
        let mut wanted = vec![(first, end)];
        if let Some(Decision::Window(window)) = decision {
            let window_end =
                (window.start + window.size).min(self.space_bytes(space).div_ceil(PAGE_BYTES));
            if window.start < window_end {
                wanted.push((window.start, window_end));
                let ahead_end = window_end.max(end);
                self.stats.read_ahead_pages += ahead_end.saturating_sub(end.max(window.start));
            }
        }
        let mut batch_bios = Vec::new();
        let batch = self.new_batch(BatchOwner::Reader);
        for (from, to) in wanted {
            self.read_absent(space, from, to, batch, &mut batch_bios);
        }
        self.submit_batch(batch, device, process, priority, batch_bios);
        let request_missing = self.count_not_uptodate(space, first, end);
        self.stats.cache_miss_pages += request_missing;
        self.stats.cache_hit_pages += (end - first) - request_missing;
        self.touch(space, first, end);
        if request_missing == 0 {
            self.finish(now, op, process, bytes);
        } else {
            let state = OpState::Read { space, first, end, bytes };
            self.ops.insert(op, PendingOp { process, priority, state });
        }
    }

    /// The first page of `first..end` neither cached nor being read.
    fn first_absent(&self, space: SpaceId, first: u64, end: u64) -> Option<u64> {
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
                return Some(base + u64::from(absent.trailing_zeros()));
            }
            chunk += 1;
        }
        None
    }

    fn touch(&mut self, space: SpaceId, first: u64, end: u64) {
        for chunk in first / CHUNK_PAGES..end.div_ceil(CHUNK_PAGES) {
            if let Some(slot) = self.cache.find(space, chunk) {
                self.cache.touch(slot);
            }
        }
    }

    /// Starts reads of the pages of `first..end` that are neither cached nor being read,
    /// appending bios to `bios`. Pages with no space on the device (holes) read as zeros.
    fn read_absent(
        &mut self,
        space: SpaceId,
        first: u64,
        end: u64,
        batch: u64,
        bios: &mut Vec<HostBio>,
    ) {
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
            }
            for bit in 0..CHUNK_PAGES {
                if absent & (1 << bit) == 0 {
                    continue;
                }
                let page = base + bit;
                run = match run {
                    Some((start, stop)) if stop == page => Some((start, page + 1)),
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
                        Some((page, page + 1))
                    }
                    None => Some((page, page + 1)),
                };
            }
            chunk += 1;
        }
        if let Some((start, stop)) = run {
            self.issue_pages(space, start, stop, false, RequestFlags::SYNC, batch, bios);
        }
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
                let count = (sectors - done_sectors).min(max_sectors - max_sectors % 8);
                let id = self.next_bio;
                self.next_bio += 1;
                let first_page = page + done_sectors * SECTOR_SIZE_BYTES / PAGE_BYTES;
                let page_count = count * SECTOR_SIZE_BYTES / PAGE_BYTES;
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

    // ---- writes ----

    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        now: Instant,
        op: u64,
        process: ProcessId,
        priority: IoPriority,
        space: SpaceId,
        offset: u64,
        size: u64,
    ) -> Result<(), HostError> {
        let end_bytes = offset + size;
        let entry = self.spaces[space as usize];
        match entry.kind {
            SpaceKind::File(file) => {
                self.layouts.grow(file, end_bytes, process)?;
                let layout = &mut self.layouts.files[file];
                layout.size_bytes = layout.size_bytes.max(end_bytes);
            }
            SpaceKind::Raw => {
                if end_bytes > self.space_bytes(space) {
                    return Err(HostError::NoSuchPlace);
                }
            }
        }
        let first = offset / PAGE_BYTES;
        let end = end_bytes.div_ceil(PAGE_BYTES);
        let mut page = first;
        while page < end {
            let chunk = page / CHUNK_PAGES;
            let chunk_end = ((chunk + 1) * CHUNK_PAGES).min(end);
            let slot = self.cache.get_or_insert(space, chunk);
            let mask = page_mask(page % CHUNK_PAGES, chunk_end - chunk * CHUNK_PAGES);
            let before = self.cache.dirty_pages();
            self.cache.dirty(slot, mask, now);
            let newly = self.cache.dirty_pages() - before;
            let entry = &mut self.spaces[space as usize];
            entry.dirty_pages += newly;
            if entry.dirtied_at.is_none() {
                entry.dirtied_at = Some(now);
            }
            self.dirty_chunks.insert((space, chunk));
            page = chunk_end;
        }
        let held = self.cache.dirty_pages() + self.cache.writeback_pages();
        self.stats.dirty_pages_peak = self.stats.dirty_pages_peak.max(held);
        self.ensure_periodic(now);
        if self.cache.dirty_pages() > self.background_limit_pages {
            self.flusher_run(now);
        }
        let state = OpState::Throttle { written: 0, batch: None, until: None, bytes: size };
        self.ops.insert(op, PendingOp { process, priority, state });
        self.balance(now, op);
        Ok(())
    }

    /// The writer's duty above the dirty limit (2.6.18's `balance_dirty_pages`): write back
    /// `write_chunk` pages, or wait for write-back to make progress, until under the limit.
    fn balance(&mut self, now: Instant, op: u64) {
        let Some(pending) = self.ops.get(&op) else { return };
        let OpState::Throttle { written, batch, until, bytes } = pending.state else { return };
        if batch.is_some() || until.is_some_and(|until| until > now) {
            return;
        }
        let (process, priority) = (pending.process, pending.priority);
        let over = self.cache.dirty_pages() + self.cache.writeback_pages() > self.dirty_limit_pages;
        if !over || written >= self.write_chunk_pages {
            self.ops.remove(&op);
            self.finish(now, op, process, bytes);
            return;
        }
        if written == 0 && until.is_none() && batch.is_none() {
            self.stats.throttled_writes += 1;
        }
        let wanted = self.write_chunk_pages - written;
        let submitted =
            self.writeback_oldest(now, wanted, process, priority, BatchOwner::Throttle { op });
        let state = match submitted {
            Some(batch) => OpState::Throttle { written, batch: Some(batch), until: None, bytes },
            // Everything is already being written back: wait for it (congestion wait).
            None => OpState::Throttle {
                written,
                batch: None,
                until: Some(now + CONGESTION_WAIT),
                bytes,
            },
        };
        self.ops.get_mut(&op).expect("checked above").state = state;
    }

    /// Writes back up to `pages_wanted` dirty pages from the spaces dirtied longest ago, as
    /// `process`. Returns the last batch (the process's bios are accepted in order, so the last
    /// one accepted means all were), or `None` when nothing was dirty.
    fn writeback_oldest(
        &mut self,
        now: Instant,
        pages_wanted: u64,
        process: ProcessId,
        priority: IoPriority,
        owner: BatchOwner,
    ) -> Option<u64> {
        let mut remaining = pages_wanted;
        let mut last_batch = None;
        while remaining > 0 {
            let Some(space) = self.oldest_dirty_space() else { break };
            let (batch, pages) = self.writeback_space(
                space,
                remaining,
                process,
                priority,
                RequestFlags::NONE,
                owner,
            );
            if pages == 0 {
                break;
            }
            last_batch = Some(batch);
            remaining = remaining.saturating_sub(pages);
            // A throttled writer's duty counts every page it submits.
            if let BatchOwner::Throttle { op } = owner
                && let Some(pending) = self.ops.get_mut(&op)
                && let OpState::Throttle { written, .. } = &mut pending.state
            {
                *written += pages;
            }
        }
        let _ = now;
        last_batch
    }

    fn oldest_dirty_space(&self) -> Option<SpaceId> {
        self.spaces
            .iter()
            .enumerate()
            .filter(|(_, space)| space.dirty_pages > 0)
            .min_by_key(|(index, space)| (space.dirtied_at, *index))
            .map(|(index, _)| index as SpaceId)
    }

    /// Writes back up to `limit` dirty pages of `space` in file order from its cursor. Returns
    /// the batch and how many pages it carries.
    fn writeback_space(
        &mut self,
        space: SpaceId,
        limit: u64,
        process: ProcessId,
        priority: IoPriority,
        flags: RequestFlags,
        owner: BatchOwner,
    ) -> (u64, u64) {
        let batch = self.new_batch(owner);
        let mut bios = Vec::new();
        let mut pages = 0;
        let cursor = self.spaces[space as usize].cursor;
        let mut last_chunk = cursor;
        // Runs of dirty pages, merged across chunk boundaries.
        let mut run: Option<(u64, u64)> = None;
        // Dirty chunks from the cursor to the end of the file, then from its start up to the
        // cursor; looked up one at a time, since each leaves the set as it is written.
        let (mut from, mut wrapped) = (cursor, false);
        while pages < limit {
            let next = self.dirty_chunks.range((space, from)..(space, u64::MAX)).next();
            let chunk = match next {
                Some(&(_, chunk)) if !wrapped || chunk < cursor => chunk,
                None if !wrapped => {
                    (from, wrapped) = (0, true);
                    continue;
                }
                _ => break,
            };
            from = chunk + 1;
            let slot = self.cache.find(space, chunk).expect("dirty chunks are cached");
            let dirty = self.cache.chunk(slot).dirty;
            let (cleaned, started) = self.cache.start_writeback(slot, dirty);
            let entry = &mut self.spaces[space as usize];
            entry.dirty_pages -= cleaned;
            entry.writeback_pages += started;
            self.dirty_chunks.remove(&(space, chunk));
            pages += cleaned;
            last_chunk = chunk;
            // The chunk's runs of dirty pages, a whole run at a time.
            let mut mask = dirty;
            while mask != 0 {
                let first = u64::from(mask.trailing_zeros());
                let past = first + u64::from((mask >> first).trailing_ones());
                let (page, page_end) = (chunk * CHUNK_PAGES + first, chunk * CHUNK_PAGES + past);
                run = match run {
                    Some((start, end)) if end == page => Some((start, page_end)),
                    Some((start, end)) => {
                        self.issue_pages(space, start, end, true, flags, batch, &mut bios);
                        Some((page, page_end))
                    }
                    None => Some((page, page_end)),
                };
                mask = if past >= CHUNK_PAGES { 0 } else { mask & (u64::MAX << past) };
            }
        }
        if let Some((start, end)) = run {
            self.issue_pages(space, start, end, true, flags, batch, &mut bios);
        }
        let entry = &mut self.spaces[space as usize];
        entry.cursor = last_chunk + 1;
        if entry.dirty_pages == 0 {
            entry.dirtied_at = None;
        }
        self.stats.writeback_pages += pages;
        self.batches.get_mut(&batch).expect("just made").pages = pages;
        let device = self.spaces[space as usize].device;
        self.submit_batch(batch, device, process, priority, bios);
        (batch, pages)
    }

    // ---- sync and drop caches ----

    fn sync(
        &mut self,
        now: Instant,
        op: u64,
        process: ProcessId,
        priority: IoPriority,
        spaces: Vec<SpaceId>,
        drop_after: bool,
    ) {
        let mut batches = 0;
        for &space in &spaces {
            if self.spaces[space as usize].dirty_pages > 0 {
                let flags = self.fsync_flags;
                let (_, pages) = self.writeback_space(
                    space,
                    u64::MAX,
                    process,
                    priority,
                    flags,
                    BatchOwner::Sync { op },
                );
                if pages > 0 {
                    batches += 1;
                }
            }
        }
        let state = OpState::Sync { spaces, batches, drop_after };
        self.ops.insert(op, PendingOp { process, priority, state });
        self.sync_check(now, op);
    }

    /// Finishes a sync whose spaces are clean and whose own write-back is done.
    fn sync_check(&mut self, now: Instant, op: u64) {
        let Some(pending) = self.ops.get(&op) else { return };
        let OpState::Sync { spaces, batches, drop_after } = &pending.state else { return };
        // Done once its own write-back has completed and nothing of its spaces is still being
        // written (pages dirtied since by others are not waited for).
        let idle = spaces.iter().all(|&space| self.spaces[space as usize].writeback_pages == 0);
        if *batches > 0 || !idle {
            return;
        }
        let (process, drop_after, spaces) = (pending.process, *drop_after, spaces.clone());
        self.ops.remove(&op);
        if drop_after {
            for space in spaces {
                self.cache.drop_clean(Some(space));
            }
        }
        self.finish(now, op, process, 0);
    }

    // ---- the flusher ----

    fn ensure_periodic(&mut self, now: Instant) {
        if self.flusher.periodic_at.is_none() {
            self.flusher.periodic_at = Some(now + self.writeback_interval);
        }
    }

    /// The flusher's next move: background write-back above the threshold, unless it waits
    /// for a pass to be accepted or for congestion to clear.
    fn flusher_run(&mut self, now: Instant) {
        if self.flusher.batch.is_some() || self.flusher.until.is_some_and(|until| until > now) {
            return;
        }
        self.flusher.until = None;
        if self.cache.dirty_pages() <= self.background_limit_pages {
            return;
        }
        let Some(space) = self.oldest_dirty_space() else { return };
        self.flusher_pass(now, space);
    }

    fn flusher_pass(&mut self, now: Instant, space: SpaceId) {
        let device = self.spaces[space as usize].device;
        if self.congested[device] {
            // Non-blocking write-back backs off a congested queue (`congestion_wait`).
            self.flusher.until = Some(now + CONGESTION_WAIT);
            return;
        }
        let (batch, pages) = self.writeback_space(
            space,
            FLUSHER_PAGES_PER_PASS,
            FLUSHER,
            IoPriority::DEFAULT,
            RequestFlags::NONE,
            BatchOwner::Flusher,
        );
        if pages > 0 {
            self.flusher.batch = Some(batch);
            self.stats.flusher_passes += 1;
        }
    }

    /// The periodic write-back: files dirty for longer than `dirty_expire`.
    fn periodic(&mut self, now: Instant) {
        self.flusher.periodic_at = None;
        if self.cache.dirty_pages() == 0 {
            return;
        }
        self.flusher.periodic_at = Some(now + self.writeback_interval);
        if self.flusher.batch.is_some() {
            return;
        }
        let expired = self
            .spaces
            .iter()
            .enumerate()
            .filter(|(_, space)| {
                space.dirty_pages > 0
                    && space
                        .dirtied_at
                        .is_some_and(|at| now.saturating_since(at) >= self.dirty_expire)
            })
            .min_by_key(|(index, space)| (space.dirtied_at, *index))
            .map(|(index, _)| index as SpaceId);
        if let Some(space) = expired {
            self.flusher_pass(now, space);
        } else {
            self.flusher_run(now);
        }
    }

    // ---- events from the runner ----

    /// A timer the host asked for came due.
    pub(crate) fn wake(&mut self, now: Instant) {
        self.timers_changed = true;
        if self.flusher.periodic_at.is_some_and(|at| at <= now) {
            self.periodic(now);
        }
        if self.flusher.until.is_some_and(|until| until <= now) {
            self.flusher.until = None;
            self.flusher_run(now);
        }
        let due: Vec<u64> = self
            .ops
            .iter()
            .filter(
                |(_, op)| matches!(op.state, OpState::Throttle { until: Some(t), .. } if t <= now),
            )
            .map(|(&id, _)| id)
            .collect();
        for op in due {
            if let Some(pending) = self.ops.get_mut(&op)
                && let OpState::Throttle { until, .. } = &mut pending.state
            {
                *until = None;
            }
            self.balance(now, op);
        }
    }

    /// Every bio of `batch` has been taken by its queue.
    pub(crate) fn batch_accepted(&mut self, now: Instant, batch: u64) {
        self.timers_changed = true;
        let Some(state) = self.batches.get(&batch).copied() else { return };
        match state.owner {
            BatchOwner::Throttle { op } => {
                if let Some(pending) = self.ops.get_mut(&op)
                    && let OpState::Throttle { batch: waiting, .. } = &mut pending.state
                    && *waiting == Some(batch)
                {
                    *waiting = None;
                    self.balance(now, op);
                }
            }
            BatchOwner::Flusher => {
                if self.flusher.batch == Some(batch) {
                    self.flusher.batch = None;
                    self.flusher_run(now);
                }
            }
            BatchOwner::Reader | BatchOwner::Sync { .. } => {}
        }
        if state.outstanding == 0 {
            self.batches.remove(&batch);
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
            if let BatchOwner::Sync { op } = owner
                && let Some(pending) = self.ops.get_mut(&op)
                && let OpState::Sync { batches, .. } = &mut pending.state
            {
                *batches -= 1;
            }
        }
        if state.write {
            // Write-back progress: syncs may be done, throttled writers may go on.
            let syncs: Vec<u64> = self
                .ops
                .iter()
                .filter(|(_, op)| matches!(op.state, OpState::Sync { .. }))
                .map(|(&id, _)| id)
                .collect();
            for op in syncs {
                self.sync_check(now, op);
            }
            let throttled: Vec<u64> = self
                .ops
                .iter()
                .filter(|(_, op)| {
                    matches!(op.state, OpState::Throttle { batch: None, until: Some(_), .. })
                })
                .map(|(&id, _)| id)
                .collect();
            for op in throttled {
                if let Some(pending) = self.ops.get_mut(&op)
                    && let OpState::Throttle { until, .. } = &mut pending.state
                {
                    *until = None;
                }
                self.balance(now, op);
            }
        } else {
            let readers: Vec<u64> = self
                .ops
                .iter()
                .filter(|(_, op)| matches!(op.state, OpState::Read { space, .. } if space == state.space))
                .map(|(&id, _)| id)
                .collect();
            for op in readers {
                let pending = &self.ops[&op];
                let OpState::Read { space, first, end, bytes } = pending.state else { continue };
                let (process, priority) = (pending.process, pending.priority);
                if self.count_not_uptodate(space, first, end) == 0 {
                    self.ops.remove(&op);
                    self.finish(now, op, process, bytes);
                } else if self.first_absent(space, first, end).is_some() {
                    // Some of its pages arrived and were evicted before it could copy them
                    // (the rest were still being read): like the kernel's reader finding a
                    // page gone, it reads them again.
                    let batch = self.new_batch(BatchOwner::Reader);
                    let mut bios = Vec::new();
                    self.read_absent(space, first, end, batch, &mut bios);
                    let sectors: u64 = bios.iter().map(|bio| u64::from(bio.sector_count)).sum();
                    self.stats.reread_evicted_pages += sectors * SECTOR_SIZE_BYTES / PAGE_BYTES;
                    let device = self.spaces[space as usize].device;
                    self.submit_batch(batch, device, process, priority, bios);
                }
            }
        }
    }

    // ---- shared ----

    fn new_batch(&mut self, owner: BatchOwner) -> u64 {
        let batch = self.next_batch;
        self.next_batch += 1;
        self.batches.insert(batch, Batch { owner, pages: 0, outstanding: 0 });
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
        self.actions.push(HostAction::Submit { batch, device, process, priority, bios });
    }

    /// The call of `process` for `op` is done once its CPU work (system call, copy of `bytes`,
    /// user time) has run on the first free processor.
    fn finish(&mut self, now: Instant, op: u64, process: ProcessId, bytes: u64) {
        let copy_ns =
            (u128::from(bytes) * 1_000_000_000 / u128::from(self.copy_rate_bytes_per_s)) as u64;
        let sys = self.syscall + Duration::from_nanos(copy_ns);
        let work = sys + self.user;
        let (cpu, &free_at) = self
            .cpu_free_at
            .iter()
            .enumerate()
            .min_by_key(|&(index, free)| (*free, index))
            .expect("at least one processor");
        let start = now.max(free_at);
        let at = start + work;
        self.cpu_free_at[cpu] = at;
        let time = self.cpu.entry(process).or_default();
        time.sys_ns += sys.as_nanos();
        time.user_ns += self.user.as_nanos();
        self.actions.push(HostAction::Complete { op, at });
    }

    /// Charges `process` for requests the host submitted on its behalf.
    pub(crate) fn charge_requests(
        &mut self,
        process: ProcessId,
        requests: u64,
        scheduler: SchedulerKind,
    ) {
        let per_request = self.request_cost + scheduler.cpu_cost();
        self.cpu.entry(process).or_default().sys_ns += per_request.as_nanos() * requests;
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
        self.dirty_limit_pages
    }
}

impl Space {
    fn new(device: usize, kind: SpaceKind) -> Space {
        Space { device, kind, dirty_pages: 0, writeback_pages: 0, dirtied_at: None, cursor: 0 }
    }
}
