//! Write-back as 2.6.9 and 2.6.18 did it: dirty limits from the host's memory, the pdflush
//! pool, writers throttled over the dirty limit writing back themselves, fsync, and (for
//! ext3) kjournald's commits ([`super::journal`]).
//!
//! Followed: host-mechanisms.md §3 (`mm/page-writeback.c`, `mm/pdflush.c`,
//! `fs/fs-writeback.c`, `fs/mpage.c` of vanilla 2.6.9, RHEL 4 GA/U1, 2.6.18 and RHEL 5 — they
//! agree on everything modelled here), §1.3 (bios), §1.6 (sync/async), §2.4 (congestion).
//!
//! * **Dirty limits** (§3.2, `get_dirty_limits`): `total` = the page cache's pages; the dirty
//!   ratio is min(`dirty_ratio`, unmapped % / 2), at least 5 %, where the mapped share is the
//!   host's `reserve` (the memory of the kernel and programs: taken as all mapped or
//!   anonymous, the memory 2.6.9's `nr_mapped` and 2.6.18's `NR_FILE_MAPPED +
//!   NR_ANON_PAGES` count) over `total`; background = `dirty_background_ratio`, or half the
//!   dirty ratio if not lower. Writers compare dirty + under-write-back pages with the hard
//!   limit; pdflush compares dirty pages with the background one.
//! * **Throttled writers** (§3.3, `balance_dirty_pages`): a writer balances once per
//!   `ratelimit_pages` it writes (total / (CPUs · 32), within 16..=1024), every 8 pages once
//!   the limit was exceeded. Over the hard limit it writes back itself, **blocking**,
//!   `write_chunk` = 1.5 × `ratelimit_pages` pages of its own device's inodes, oldest unlocked
//!   first (often not its own file), looping with 100 ms congestion waits until under the limit
//!   or its chunk is written; then it starts pdflush if above background and no pdflush holds
//!   its device. Its bios park when the request pool is full, as in `get_request_wait`.
//! * **pdflush** (§3.4): a pool of 2–8 threads, each its own process (under 2.6.9 cfq each has
//!   its own queue); a thread is added after the pool has had no idle thread for 1 s, one exits
//!   after 1 s idle. Background write-back takes 1024-page chunks, **non-blocking**, until
//!   dirty pages are under the background threshold; a chunk cut short by congestion waits ≤
//!   100 ms (`blk_congestion_wait`), one cut short for want of dirty data ends it. kupdate
//!   runs every `dirty_writeback_interval` (5 s, ≥ 1 s after an overrunning run) on inodes
//!   dirtied more than `dirty_expire` (30 s) ago, ending early when a chunk falls short
//!   without congestion. **One pdflush per device** (`BDI_pdflush`): a thread that cannot take
//!   the device's bit leaves it.
//! * **Inodes and pages** (§3.5): each device's dirty inodes are in `s_dirty` order, oldest
//!   first. **I_LOCK**: an inode is written by one flusher at a time; a non-integrity pass
//!   meeting a locked inode puts it back at the newest end and takes the next; fsync waits.
//!   An inode left dirty by a non-periodic pass gets `dirtied_when` = now and goes behind the
//!   others (round robin); by a periodic pass it stays at the oldest end. Pages go in ascending
//!   index from the inode's `writeback_index`, wrapping once.
//! * **Non-blocking write-back checks congestion after each page** (`mpage_writepages`): it
//!   submits one bio at a time and stops at a write-congested queue, mid-file — so pdflush
//!   alone holds the write count between congestion off and on (103–113).
//! * **Bios** (§1.3): ext3 has no `writepages`: one 4 KiB bio per block, merged only by the
//!   block layer; the block-device page cache the same; XFS clusters the dirty pages of an
//!   extent into bios up to `max_sectors`.
//! * **fsync** (§4.1, §4.2): the file's dirty pages are written (waiting for its I_LOCK) and
//!   waited for; on ext3 a full journal commit follows and is waited for, on XFS one log write.
//!   Its writes are flagged sync only where `KernelVersion::fsync_writes_sync` (2.6.9's
//!   `PF_SYNCWRITE`) unless `fsync=sync|async` overrides; pdflush, throttled writers and
//!   kjournald write async (§1.6).
//!
//! # 2.4.21 and RHEL 3: bdflush and kupdated (linux-2.4-elevator.md §6.4)
//!
//! On a 2.4 host ([`Bdflush`], RHEL 3 `fs/buffer.c`) pdflush, the dirty limits and the
//! writers' write-back above do not exist; the same inodes, pages, bios, fsync and kjournald
//! serve both:
//!
//! * **One global dirty-buffer LRU** in the order buffers became dirty (a buffer dirtied
//!   again while dirty keeps its place); every writer takes from its old end,
//!   `write_some_buffers`: the first 32 dirty buffers not being written (`NRSYNC`), each its
//!   own 4 KiB bio, left to the plugged queue to merge and sort.
//! * **Thresholds** from `/proc/sys/vm/bdflush` = `50 500 0 0 500 3000 80 50 0`: above
//!   nfract (50 %) of the free and inactive pages dirty, dirtying a buffer wakes **bdflush**;
//!   above nfract_sync (80 %) the dirtying task also writes one 32-buffer batch itself
//!   (`balance_dirty`), waiting only for its submission, never for the writes.
//! * **bdflush** writes 32-buffer batches until ndirty (500) buffers are written (16
//!   batches) or none is left; then, if none was left or dirty data is below nfract_sync, it
//!   runs `tq_disk` and sleeps until woken; otherwise it starts another round at once.
//! * **kupdated**, every interval (5 s): while the buffer at the LRU's old end was dirtied
//!   more than age_buffer (30 s) ago, a 32-buffer batch; then `tq_disk`.
//! * `tq_disk` unplugs every queue ([`HostAction::Unplug`](super::HostAction) for each
//!   device). No congestion back-off anywhere: 2.4 has none.
//! * ext3's kjournald commits as on 2.6 ([`super::journal`]), its ordered data in batches of
//!   `KernelVersion::journal_batch_blocks` (64 on 2.4), waited for.
//!
//! # Deviations from Linux
//!
//! * 2.4: "free + inactive pages" (`nr_free_buffer_pages`) is the whole page cache: the model
//!   has no free, active and inactive lists, nor 32-bit low memory. nfract_stop (50 %) is not
//!   used: RHEL 3's bdflush loop tests nfract_sync, not `bdflush_stop` [V R3 32.EL
//!   `fs/buffer.c`]. kupdated's `sync_unlocked_inodes`/`sync_supers` write no metadata here;
//!   its 5 s timer starts when data is first dirtied, not at boot. The VM's laundering of
//!   dirty pages under memory pressure is not modelled. A write call dirties all its pages,
//!   then balances once per buffer it newly dirtied (the kernel balances after each).
//!   The `dirty_*` host keys do not apply; the bdflush values are constants (the defaults).
//! * A write call dirties all its pages, then balances as many times as the ratelimit says
//!   its pages would have (the kernel balances between pages); the ratelimit counter is per
//!   process, not per CPU.
//! * The mapped share of the clamp is the host's `reserve` ([U]: all of it mapped or
//!   anonymous); real-time tasks' +25 % and the 32-bit highmem correction are not modelled
//!   (x86_64); RHEL 4 from U4 (1 % floor, `max_queue_depth`) and from U6 (writers only wait)
//!   are not releases modelled here.
//! * `blk_congestion_wait` ends when any device leaves write congestion, when a host write
//!   bio completes on an uncongested device (the kernel: a write request freed below the off
//!   threshold), or after 100 ms; O_DIRECT completions do not end it.
//! * pdflush passes walk devices in index order (the kernel's superblock list order), with
//!   one `s_dirty` list per device (`s_io` is folded into it: a pass visits an inode once).
//! * The kupdate timer is armed when data is first dirtied, not at boot.
//! * A page redirtied while under write-back is written again by non-integrity passes (the
//!   kernel skips pages under write-back unless syncing).
//! * No inode or metadata write-back besides ext3's journal blocks and XFS's fsync log write.

use std::collections::{BTreeMap, BTreeSet};

use elevator_core::kernel::KernelBase;
use elevator_core::{Duration, Instant, IoPriority, ProcessId, RequestFlags};

use super::cache::{CHUNK_PAGES, PAGE_BYTES, SpaceId, page_mask};
use super::journal::Journal;
use super::spec::{Filesystem, HostSpec};
use super::{BatchOwner, Host, HostAction, HostBio, HostError, SpaceKind};

/// The fewest pdflush threads (`MIN_PDFLUSH_THREADS`).
pub(crate) const PDFLUSH_THREADS_MIN: usize = 2;
/// The most pdflush threads (`MAX_PDFLUSH_THREADS`).
pub(crate) const PDFLUSH_THREADS_MAX: usize = 8;

/// The process of pdflush thread `thread` (0..8): its write-back lands in cfq's async queues
/// (2.6.9 cfq: a queue per thread) but is charged to no workload process.
pub(crate) const fn pdflush_process(thread: usize) -> ProcessId {
    ProcessId(u32::MAX - 1 - thread as u32)
}

/// Pages pdflush writes per chunk (`MAX_WRITEBACK_PAGES`, 4 MiB).
const PDFLUSH_CHUNK_PAGES: u64 = 1024;
/// `blk_congestion_wait(WRITE, HZ/10)`.
const CONGESTION_WAIT: Duration = Duration::from_millis(100);
/// pdflush's thread-pool clock: a thread is added after none was idle this long, one exits
/// after idling this long (`mm/pdflush.c`, 1 · HZ).
const PDFLUSH_POOL_DELAY: Duration = Duration::from_secs(1);
/// kupdate runs at least this long after an overrunning run ended (`wb_kupdate`, HZ).
const KUPDATE_MIN_GAP: Duration = Duration::from_secs(1);
/// The ratelimit once the dirty limit was exceeded (`balance_dirty_pages_ratelimited`).
const RATELIMIT_EXCEEDED_PAGES: u64 = 8;
/// The floor of the dirty ratio (§3.2: 5 % in every release modelled).
const DIRTY_RATIO_MIN: u64 = 5;

/// 2.4 bdflush's nfract: dirty above this share (percent) of the page cache wakes bdflush
/// (`/proc/sys/vm/bdflush` field 1, linux-2.4-elevator.md §6.4).
const BDFLUSH_NFRACT_PERCENT: u64 = 50;
/// 2.4 bdflush's ndirty: buffers per wake-up round (field 2).
const BDFLUSH_NDIRTY_BUFFERS: i64 = 500;
/// 2.4 kupdated's interval (field 5, 500 jiffies at HZ = 100).
const BDFLUSH_INTERVAL: Duration = Duration::from_secs(5);
/// 2.4's age_buffer: kupdated writes buffers dirty this long (field 6, 3000 jiffies).
const BDFLUSH_AGE_BUFFER: Duration = Duration::from_secs(30);
/// 2.4 bdflush's nfract_sync: above this share dirtying tasks write too (field 7).
const BDFLUSH_NFRACT_SYNC_PERCENT: u64 = 80;
/// Buffers per `write_some_buffers` batch (`NRSYNC`, §6.4).
const WRITE_SOME_BUFFERS: usize = 32;

/// 2.4's bdflush daemon: a kernel thread, charged to no workload process.
pub(crate) const BDFLUSH_PROCESS: ProcessId = ProcessId(u32::MAX - 9);
/// 2.4's kupdated daemon.
pub(crate) const KUPDATED_PROCESS: ProcessId = ProcessId(u32::MAX - 10);

/// Who writes a batch of write-back, and waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WritebackOwner {
    /// A pdflush thread.
    Pdflush { thread: usize },
    /// A writer throttled over the dirty limit.
    Throttle { op: u64 },
    /// An fsync or a device sync.
    Sync { op: u64 },
    /// A device's kjournald (ext3).
    Journal { device: usize },
    /// 2.4's bdflush.
    Bdflush,
    /// 2.4's kupdated.
    Kupdated,
}

/// One `writeback_inodes` call in progress: which inodes it may write and how much.
#[derive(Clone, Debug)]
struct Pass {
    /// The device it is limited to (a throttled writer's `wbc.bdi`), or every device.
    device: Option<usize>,
    /// Pages it may still write (`nr_to_write`).
    left_pages: u64,
    /// kupdate: only inodes dirtied before this.
    older_than: Option<Instant>,
    /// pdflush: stop at congestion; throttled writers block instead.
    nonblocking: bool,
    encountered_congestion: bool,
    /// Inodes met in this pass (each is visited once, as `s_io` does).
    visited: BTreeSet<SpaceId>,
    /// Devices this pass has left.
    left_devices: BTreeSet<usize>,
    /// The inode being written, with its scan position.
    current: Option<Scan>,
    /// The batch it waits to see accepted.
    batch: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
struct Scan {
    space: SpaceId,
    /// Next page to look at.
    page: u64,
    /// Where the scan began (it wraps once, to there).
    start: u64,
    wrapped: bool,
}

impl Pass {
    fn new(
        device: Option<usize>,
        pages: u64,
        older_than: Option<Instant>,
        nonblocking: bool,
    ) -> Pass {
        Pass {
            device,
            left_pages: pages,
            older_than,
            nonblocking,
            encountered_congestion: false,
            visited: BTreeSet::new(),
            left_devices: BTreeSet::new(),
            current: None,
            batch: None,
        }
    }
}

/// What a pdflush thread does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PdflushJob {
    /// `background_writeout`.
    Background,
    /// `wb_kupdate`, started at `started`, with `left_pages` still to write.
    Kupdate { started: Instant, left_pages: u64 },
}

#[derive(Clone, Debug)]
struct PdflushThread {
    job: Option<PdflushJob>,
    pass: Option<Pass>,
    /// In `blk_congestion_wait` until then.
    until: Option<Instant>,
    /// When it last went idle.
    idle_since: Instant,
    /// Whether it has exited (a slot kept so that process ids stay stable).
    exited: bool,
}

/// A writer in `balance_dirty_pages`, or a sync.
#[derive(Clone, Debug)]
enum WriterState {
    Throttle(Throttle),
    Sync(SyncOp),
}

#[derive(Clone, Debug)]
struct Throttle {
    /// The bytes the write call returns.
    bytes: u64,
    device: usize,
    /// Balances still owed by this call (one per ratelimit crossed).
    balances_left: u64,
    /// Pages written in this balance (`pages_written`).
    written_pages: u64,
    pass: Option<Pass>,
    /// In `blk_congestion_wait` until then.
    until: Option<Instant>,
    /// Whether this call was counted as throttled.
    counted: bool,
    /// 2.4: its own batch's bios not yet taken by their queues (`submit_bh` blocks).
    submitting: BTreeSet<u64>,
}

#[derive(Clone, Debug)]
struct SyncOp {
    spaces: Vec<SpaceId>,
    /// The space being written next (index into `spaces`).
    next: usize,
    /// Its batch being accepted.
    batch: Option<u64>,
    /// Its batches not yet completed.
    batches: u32,
    drop_after: bool,
    /// ext3: the journal commit (device, transaction) it waits for; XFS: its log write.
    commit: Option<(usize, u64)>,
    /// Whether the file's pages are written and waited for (then the commit follows).
    data_done: bool,
    /// Whether this is a file's fsync (forces a commit) rather than a device's sync.
    fsync: bool,
}

#[derive(Clone, Debug)]
struct WriterOp {
    process: ProcessId,
    priority: IoPriority,
    state: WriterState,
}

/// Per inode: its place in `s_dirty` and its lock.
#[derive(Clone, Copy, Debug, Default)]
struct InodeState {
    /// Position in its device's `s_dirty`: smaller is older (taken first).
    order: i64,
    /// Who holds I_LOCK.
    locked_by: Option<WritebackOwner>,
}

/// The write-back side of the host.
#[derive(Debug)]
pub(crate) struct Writeback {
    /// Dirty chunks in (space, chunk) order: what write-back walks.
    dirty_chunks: BTreeSet<(SpaceId, u64)>,
    ops: BTreeMap<u64, WriterOp>,
    pdflush: Vec<PdflushThread>,
    /// When the pool last had no idle thread (`last_empty_jifs`).
    pdflush_last_empty: Instant,
    /// kupdate's next run.
    kupdate_at: Option<Instant>,
    /// Which pdflush holds each device (`BDI_pdflush`).
    device_pdflush: Vec<Option<usize>>,
    congested: Vec<bool>,
    inodes: Vec<InodeState>,
    order_newest: i64,
    order_oldest: i64,
    /// Pages written by each process since its last balance (the ratelimit counter).
    ratelimit_counts: BTreeMap<ProcessId, u64>,
    dirty_exceeded: bool,
    /// ext3's journal per device; none on XFS.
    pub(super) journals: Vec<Journal>,
    /// XFS: each device's log head, in sectors from the log's start.
    xfs_log_heads: Vec<u64>,
    pub(super) filesystem: Filesystem,
    pub(super) limits: DirtyLimits,
    dirty_expire: Duration,
    writeback_interval: Duration,
    fsync_flags: RequestFlags,
    /// 2.4's bdflush and kupdated, on a 2.4 host (none on 2.6).
    pub(super) bdflush: Option<Bdflush>,
}

/// 2.4's dirty-buffer LRU, bdflush and kupdated (the module's 2.4 section).
#[derive(Debug)]
pub(crate) struct Bdflush {
    /// Dirty buffers (4 KiB pages) by the order they became dirty: (space, page, when).
    lru: BTreeMap<u64, (SpaceId, u64, Instant)>,
    /// Each dirty buffer's place in `lru`.
    lru_place: BTreeMap<(SpaceId, u64), u64>,
    next_place: u64,
    /// The pages the thresholds are percentages of (`nr_free_buffer_pages`).
    base_pages: u64,
    /// bdflush is awake (not sleeping on `bdflush_wait`).
    bdflush_awake: bool,
    /// Buffers bdflush may still write this round (`ndirty`).
    ndirty: i64,
    /// This round found fewer than 32 buffers to write.
    ran_out: bool,
    /// bdflush's batches not yet taken by their queues.
    bdflush_submitting: BTreeSet<u64>,
    /// kupdated is running a pass.
    kupdated_awake: bool,
    /// kupdated's pass submitted its last, short batch.
    kupdated_finishing: bool,
    kupdated_submitting: BTreeSet<u64>,
}

impl Bdflush {
    fn new(cache_pages: u64) -> Bdflush {
        Bdflush {
            lru: BTreeMap::new(),
            lru_place: BTreeMap::new(),
            next_place: 0,
            base_pages: cache_pages,
            bdflush_awake: false,
            ndirty: BDFLUSH_NDIRTY_BUFFERS,
            ran_out: false,
            bdflush_submitting: BTreeSet::new(),
            kupdated_awake: false,
            kupdated_finishing: false,
            kupdated_submitting: BTreeSet::new(),
        }
    }

    /// A clean buffer became dirty: the LRU's new end.
    fn dirtied(&mut self, space: SpaceId, page: u64, now: Instant) {
        if self.lru_place.contains_key(&(space, page)) {
            return;
        }
        let place = self.next_place;
        self.next_place += 1;
        self.lru.insert(place, (space, page, now));
        self.lru_place.insert((space, page), place);
    }

    /// A buffer was cleaned (written, by whoever): it leaves the LRU.
    fn cleaned(&mut self, space: SpaceId, page: u64) {
        if let Some(place) = self.lru_place.remove(&(space, page)) {
            self.lru.remove(&place);
        }
    }
}

/// The thresholds `get_dirty_limits` computes, in pages (§3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DirtyLimits {
    /// Dirty plus under-write-back pages above which writers write back themselves.
    pub(crate) dirty_pages: u64,
    /// Dirty pages above which pdflush writes back.
    pub(crate) background_pages: u64,
    /// Pages a writer writes between balances (`ratelimit_pages`).
    pub(crate) ratelimit_pages: u64,
    /// Pages a throttled writer writes per balance (`write_chunk`).
    pub(crate) write_chunk_pages: u64,
}

impl DirtyLimits {
    /// The limits for `total_pages` of page cache, `mapped_pages` of mapped and anonymous
    /// memory, `cpus` processors and the two sysctls (percent).
    pub(crate) fn new(
        total_pages: u64,
        mapped_pages: u64,
        cpus: u64,
        dirty_ratio: u64,
        background_ratio: u64,
    ) -> DirtyLimits {
        let total = total_pages.max(1);
        let unmapped_percent = 100u64.saturating_sub(mapped_pages * 100 / total);
        let ratio = dirty_ratio.min(unmapped_percent / 2).max(DIRTY_RATIO_MIN);
        let background = if background_ratio >= ratio { ratio / 2 } else { background_ratio };
        let ratelimit_pages = (total / (cpus.max(1) * 32)).clamp(16, 1024);
        DirtyLimits {
            dirty_pages: ratio * total / 100,
            background_pages: background * total / 100,
            ratelimit_pages,
            write_chunk_pages: ratelimit_pages + ratelimit_pages / 2,
        }
    }
}

impl Writeback {
    /// Write-back for a host with `cache_pages` of page cache and `devices` (their
    /// capacities in sectors).
    pub(crate) fn new(spec: &HostSpec, cache_pages: u64, device_capacities: &[u64]) -> Writeback {
        let params = &spec.params;
        let mapped_pages = params.size("reserve") / PAGE_BYTES;
        let limits = DirtyLimits::new(
            cache_pages,
            mapped_pages,
            params.integer("cpus") as u64,
            params.integer("dirty_ratio") as u64,
            params.integer("dirty_background_ratio") as u64,
        );
        let kernel = spec.kernel();
        let fsync_sync = match params.text("fsync") {
            "sync" => true,
            "async" => false,
            _ => kernel.fsync_writes_sync(),
        };
        let filesystem = spec.filesystem();
        let journals = match filesystem {
            Filesystem::Ext3 => device_capacities
                .iter()
                .enumerate()
                .map(|(device, &capacity)| Journal::new(device, capacity, kernel))
                .collect(),
            Filesystem::Xfs => Vec::new(),
        };
        let device_count = device_capacities.len();
        Writeback {
            dirty_chunks: BTreeSet::new(),
            ops: BTreeMap::new(),
            pdflush: (0..PDFLUSH_THREADS_MIN)
                .map(|_| PdflushThread {
                    job: None,
                    pass: None,
                    until: None,
                    idle_since: Instant::ZERO,
                    exited: false,
                })
                .collect(),
            pdflush_last_empty: Instant::ZERO,
            kupdate_at: None,
            device_pdflush: vec![None; device_count],
            congested: vec![false; device_count],
            inodes: Vec::new(),
            order_newest: 0,
            order_oldest: 0,
            ratelimit_counts: BTreeMap::new(),
            dirty_exceeded: false,
            journals,
            xfs_log_heads: Vec::new(),
            filesystem,
            limits,
            dirty_expire: params.time("dirty_expire"),
            writeback_interval: params.time("dirty_writeback_interval"),
            fsync_flags: if fsync_sync { RequestFlags::SYNC } else { RequestFlags::NONE },
            bdflush: (kernel.base() == KernelBase::V2_4_21).then(|| Bdflush::new(cache_pages)),
        }
    }

    /// The earliest instant write-back wants [`Host::wake`] called.
    ///
    /// The runner asks after nearly every host event: plain loops, as a chain of four
    /// filtered iterators folded by `min` cost several times as much.
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        let mut next = self.kupdate_at;
        let mut consider = |at: Option<Instant>| {
            if let Some(at) = at
                && next.is_none_or(|earliest| at < earliest)
            {
                next = Some(at);
            }
        };
        for op in self.ops.values() {
            if let WriterState::Throttle(throttle) = &op.state {
                consider(throttle.until);
            }
        }
        for thread in &self.pdflush {
            consider(thread.until);
        }
        for journal in &self.journals {
            consider(journal.next_timer());
        }
        next
    }

    /// What write-back holds, for a stalled run's message.
    pub(crate) fn stall_detail(&self) -> String {
        let mut parts: Vec<String> = self
            .ops
            .iter()
            .map(|(op, pending)| {
                format!("host op {op} of {}: {:?}", pending.process, pending.state)
            })
            .collect();
        for (thread, state) in self.pdflush.iter().enumerate() {
            if state.job.is_some() {
                parts.push(format!("pdflush {thread}: {:?} until {:?}", state.job, state.until));
            }
        }
        for journal in &self.journals {
            parts.push(journal.stall_detail());
        }
        if let Some(bdflush) = &self.bdflush {
            parts.push(format!(
                "bdflush: awake {} ndirty {} submitting {:?}; kupdated: awake {} submitting {:?}; {} dirty buffers",
                bdflush.bdflush_awake,
                bdflush.ndirty,
                bdflush.bdflush_submitting,
                bdflush.kupdated_awake,
                bdflush.kupdated_submitting,
                bdflush.lru.len()
            ));
        }
        parts.join("; ")
    }

    /// The dirty limit in pages: above it writers write back themselves (2.6's dirty ratio;
    /// 2.4's nfract_sync, of dirty pages alone).
    pub(crate) fn dirty_limit_pages(&self) -> u64 {
        match &self.bdflush {
            Some(bdflush) => bdflush.base_pages * BDFLUSH_NFRACT_SYNC_PERCENT / 100,
            None => self.limits.dirty_pages,
        }
    }

    fn inode(&mut self, space: SpaceId) -> &mut InodeState {
        let index = space as usize;
        if self.inodes.len() <= index {
            self.inodes.resize(index + 1, InodeState::default());
        }
        &mut self.inodes[index]
    }

    fn inode_order(&self, space: SpaceId) -> i64 {
        self.inodes.get(space as usize).map_or(0, |inode| inode.order)
    }

    fn locked_by(&self, space: SpaceId) -> Option<WritebackOwner> {
        self.inodes.get(space as usize).and_then(|inode| inode.locked_by)
    }

    /// Puts `space` at the newest end of `s_dirty`.
    fn queue_newest(&mut self, space: SpaceId) {
        self.order_newest += 1;
        let order = self.order_newest;
        self.inode(space).order = order;
    }

    /// Puts `space` at the oldest end of `s_dirty`.
    fn queue_oldest(&mut self, space: SpaceId) {
        self.order_oldest -= 1;
        let order = self.order_oldest;
        self.inode(space).order = order;
    }
}

impl Host {
    // ---- events ----

    /// The runner tells of `device`'s write congestion.
    pub(super) fn writeback_congestion(&mut self, now: Instant, device: usize, congested: bool) {
        if self.writeback.congested[device] == congested {
            return;
        }
        self.timers_changed = true;
        self.writeback.congested[device] = congested;
        if !congested {
            // `clear_queue_congested` wakes everyone in `blk_congestion_wait`.
            self.congestion_wake_all(now);
        }
    }

    /// A write-back timer may be due.
    pub(super) fn writeback_wake(&mut self, now: Instant) {
        if self.writeback.kupdate_at.is_some_and(|at| at <= now) {
            self.writeback.kupdate_at = None;
            if self.writeback.bdflush.is_some() {
                self.kupdated_start(now);
            } else {
                self.kupdate_start(now);
            }
        }
        for thread in 0..self.writeback.pdflush.len() {
            if self.writeback.pdflush[thread].until.is_some_and(|until| until <= now) {
                self.writeback.pdflush[thread].until = None;
                self.pdflush_run(now, thread);
            }
        }
        let due: Vec<u64> = self
            .writeback
            .ops
            .iter()
            .filter(|(_, op)| {
                matches!(&op.state, WriterState::Throttle(t) if t.until.is_some_and(|u| u <= now))
            })
            .map(|(&id, _)| id)
            .collect();
        for op in due {
            if let Some(WriterState::Throttle(throttle)) =
                self.writeback.ops.get_mut(&op).map(|op| &mut op.state)
            {
                throttle.until = None;
            }
            self.balance(now, op);
        }
        for device in 0..self.writeback.journals.len() {
            if self.writeback.journals[device].next_timer().is_some_and(|at| at <= now) {
                self.journal_timer(now, device);
            }
        }
    }

    /// Every bio of write-back `batch` has been taken by its queue.
    pub(super) fn writeback_accepted(&mut self, now: Instant, batch: u64, owner: WritebackOwner) {
        match owner {
            WritebackOwner::Pdflush { thread } => {
                let state = &mut self.writeback.pdflush[thread];
                if let Some(pass) = &mut state.pass
                    && pass.batch == Some(batch)
                {
                    pass.batch = None;
                    self.pdflush_run(now, thread);
                }
            }
            WritebackOwner::Throttle { op } if self.writeback.bdflush.is_some() => {
                if let Some(WriterState::Throttle(throttle)) =
                    self.writeback.ops.get_mut(&op).map(|op| &mut op.state)
                    && throttle.submitting.remove(&batch)
                    && throttle.submitting.is_empty()
                {
                    self.balance(now, op);
                }
            }
            WritebackOwner::Bdflush => {
                let bdflush = self.writeback.bdflush.as_mut().expect("a 2.4 host");
                if bdflush.bdflush_submitting.remove(&batch)
                    && bdflush.bdflush_submitting.is_empty()
                {
                    self.bdflush_run();
                }
            }
            WritebackOwner::Kupdated => {
                let bdflush = self.writeback.bdflush.as_mut().expect("a 2.4 host");
                if bdflush.kupdated_submitting.remove(&batch)
                    && bdflush.kupdated_submitting.is_empty()
                {
                    self.kupdated_run(now);
                }
            }
            WritebackOwner::Throttle { op } => {
                if let Some(WriterState::Throttle(throttle)) =
                    self.writeback.ops.get_mut(&op).map(|op| &mut op.state)
                    && let Some(pass) = &mut throttle.pass
                    && pass.batch == Some(batch)
                {
                    pass.batch = None;
                    self.balance(now, op);
                }
            }
            WritebackOwner::Sync { op } => {
                if let Some(WriterState::Sync(sync)) =
                    self.writeback.ops.get_mut(&op).map(|op| &mut op.state)
                    && sync.batch == Some(batch)
                {
                    sync.batch = None;
                    let space = sync.spaces[sync.next];
                    sync.next += 1;
                    self.inode_unlock(now, space, owner);
                    self.sync_step(now, op);
                }
            }
            WritebackOwner::Journal { device } => self.journal_accepted(now, device, batch),
        }
    }

    /// A write-back bio of `batch` completed on `device` (`batch_done`: the batch's last).
    pub(super) fn writeback_bio_done(
        &mut self,
        now: Instant,
        batch: u64,
        device: usize,
        owner: WritebackOwner,
        batch_done: bool,
    ) {
        if batch_done {
            match owner {
                WritebackOwner::Sync { op } => {
                    if let Some(WriterState::Sync(sync)) =
                        self.writeback.ops.get_mut(&op).map(|op| &mut op.state)
                    {
                        sync.batches -= 1;
                    }
                }
                WritebackOwner::Journal { device } => self.journal_batch_done(now, device, batch),
                WritebackOwner::Pdflush { .. }
                | WritebackOwner::Throttle { .. }
                | WritebackOwner::Bdflush
                | WritebackOwner::Kupdated => {}
            }
        }
        // Syncs waiting for their pages may be done.
        let syncs: Vec<u64> = self
            .writeback
            .ops
            .iter()
            .filter(|(_, op)| matches!(op.state, WriterState::Sync(_)))
            .map(|(&id, _)| id)
            .collect();
        for op in syncs {
            self.sync_step(now, op);
        }
        // A request freed below the congestion-off threshold wakes `blk_congestion_wait`.
        if !self.writeback.congested[device] {
            self.congestion_wake_all(now);
        }
    }

    /// Ends every `blk_congestion_wait`.
    fn congestion_wake_all(&mut self, now: Instant) {
        for thread in 0..self.writeback.pdflush.len() {
            if self.writeback.pdflush[thread].until.take().is_some() {
                self.timers_changed = true;
                self.pdflush_run(now, thread);
            }
        }
        let waiting: Vec<u64> = self
            .writeback
            .ops
            .iter()
            .filter(|(_, op)| matches!(&op.state, WriterState::Throttle(t) if t.until.is_some()))
            .map(|(&id, _)| id)
            .collect();
        for op in waiting {
            if let Some(WriterState::Throttle(throttle)) =
                self.writeback.ops.get_mut(&op).map(|op| &mut op.state)
            {
                throttle.until = None;
            }
            self.timers_changed = true;
            self.balance(now, op);
        }
    }

    // ---- writes ----

    /// A buffered write: allocate (the layout), dirty its pages, then balance.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write(
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
        // 2.4: buffers this call dirtied (each calls `balance_dirty`).
        let mut newly_dirtied = 0;
        while page < end {
            let chunk = page / CHUNK_PAGES;
            let chunk_end = ((chunk + 1) * CHUNK_PAGES).min(end);
            let slot = self.cache.get_or_insert(space, chunk);
            let mask = page_mask(page % CHUNK_PAGES, chunk_end - chunk * CHUNK_PAGES);
            let before = self.cache.dirty_pages();
            let before_mask = self.cache.chunk(slot).dirty;
            self.cache.dirty(slot, mask, now);
            let newly = self.cache.dirty_pages() - before;
            if let Some(bdflush) = &mut self.writeback.bdflush {
                // Buffers newly dirty join the LRU's new end, in page order.
                let newly_mask = mask & !before_mask;
                for bit in 0..CHUNK_PAGES {
                    if newly_mask & (1 << bit) != 0 {
                        bdflush.dirtied(space, chunk * CHUNK_PAGES + bit, now);
                    }
                }
                newly_dirtied += newly;
            }
            let entry = &mut self.spaces[space as usize];
            entry.dirty_pages += newly;
            if entry.dirtied_at.is_none() && entry.dirty_pages > 0 {
                // Clean to dirty: `dirtied_when` = now, newest end of `s_dirty`.
                entry.dirtied_at = Some(now);
                self.writeback.queue_newest(space);
            }
            self.writeback.dirty_chunks.insert((space, chunk));
            page = chunk_end;
        }
        if let SpaceKind::File(_) = entry.kind
            && !self.writeback.journals.is_empty()
        {
            self.journal_dirtied(now, entry.device, space, first, end);
        }
        let held = self.cache.dirty_pages() + self.cache.writeback_pages();
        self.stats.dirty_pages_peak = self.stats.dirty_pages_peak.max(held);
        if self.writeback.kupdate_at.is_none() {
            let interval = if self.writeback.bdflush.is_some() {
                BDFLUSH_INTERVAL
            } else {
                self.writeback.writeback_interval
            };
            self.writeback.kupdate_at = Some(now + interval);
        }
        let balances = if self.writeback.bdflush.is_some() {
            // 2.4: one `balance_dirty` per buffer newly dirtied.
            newly_dirtied
        } else {
            // The ratelimit: one balance per `ratelimit_pages` written (8 once exceeded).
            let limit = if self.writeback.dirty_exceeded {
                RATELIMIT_EXCEEDED_PAGES
            } else {
                self.writeback.limits.ratelimit_pages
            };
            let count = self.writeback.ratelimit_counts.entry(process).or_default();
            *count += end - first;
            let balances = *count / limit;
            *count %= limit;
            balances
        };
        let throttle = Throttle {
            bytes: size,
            device: entry.device,
            balances_left: balances,
            written_pages: 0,
            pass: None,
            until: None,
            counted: false,
            submitting: BTreeSet::new(),
        };
        let state = WriterState::Throttle(throttle);
        self.writeback.ops.insert(op, WriterOp { process, priority, state });
        self.balance(now, op);
        Ok(())
    }

    fn over_dirty_limit(&self) -> bool {
        self.cache.dirty_pages() + self.cache.writeback_pages() > self.writeback.limits.dirty_pages
    }

    /// `balance_dirty_pages`, as many times as the call owes: a state machine resumed when its
    /// write-back is accepted or its congestion wait ends.
    fn balance(&mut self, now: Instant, op: u64) {
        if self.writeback.bdflush.is_some() {
            self.balance_dirty(now, op);
            return;
        }
        loop {
            let Some(pending) = self.writeback.ops.get(&op) else { return };
            let (process, priority) = (pending.process, pending.priority);
            let WriterState::Throttle(throttle) = &pending.state else { return };
            if throttle.until.is_some() {
                return;
            }
            let device = throttle.device;
            let chunk = self.writeback.limits.write_chunk_pages;
            if let Some(pass) = &throttle.pass {
                if pass.batch.is_some() || pass.current.is_some() {
                    // Resume the pass.
                    let owner = WritebackOwner::Throttle { op };
                    let mut pass = self.take_throttle_pass(op);
                    let done = self.pass_run(now, &mut pass, owner, process, priority);
                    self.put_throttle_pass(op, pass);
                    if !done {
                        return;
                    }
                    continue;
                }
                // The pass is over: `writeback_inodes` returned.
                let written = chunk - pass.left_pages.min(chunk);
                let throttle = self.throttle_mut(op);
                throttle.pass = None;
                throttle.written_pages += written;
                let written_pages = throttle.written_pages;
                if !self.over_dirty_limit() || written_pages >= chunk {
                    self.balance_end(now, op);
                    continue;
                }
                // Not yet under the limit nor done its duty: `blk_congestion_wait`.
                self.throttle_mut(op).until = Some(now + CONGESTION_WAIT);
                self.timers_changed = true;
                return;
            }
            if throttle.balances_left == 0 {
                let bytes = throttle.bytes;
                self.writeback.ops.remove(&op);
                self.finish(now, op, process, bytes);
                return;
            }
            if !self.over_dirty_limit() {
                self.balance_end(now, op);
                continue;
            }
            self.writeback.dirty_exceeded = true;
            if !throttle.counted {
                self.stats.throttled_writes += 1;
                self.throttle_mut(op).counted = true;
            }
            if self.cache.dirty_pages() == 0 {
                self.throttle_mut(op).until = Some(now + CONGESTION_WAIT);
                self.timers_changed = true;
                return;
            }
            // `writeback_inodes` of its own device, blocking, `write_chunk` pages.
            let mut pass = Pass::new(Some(device), chunk, None, false);
            let owner = WritebackOwner::Throttle { op };
            let done = self.pass_run(now, &mut pass, owner, process, priority);
            self.put_throttle_pass(op, pass);
            if !done {
                return;
            }
        }
    }

    fn throttle_mut(&mut self, op: u64) -> &mut Throttle {
        match &mut self.writeback.ops.get_mut(&op).expect("a live writer").state {
            WriterState::Throttle(throttle) => throttle,
            WriterState::Sync(_) => unreachable!("op {op} is a sync"),
        }
    }

    fn take_throttle_pass(&mut self, op: u64) -> Pass {
        self.throttle_mut(op).pass.take().expect("a pass in progress")
    }

    fn put_throttle_pass(&mut self, op: u64, pass: Pass) {
        self.throttle_mut(op).pass = Some(pass);
    }

    /// One `balance_dirty_pages` call ends: below the limit the exceeded flag clears; pdflush
    /// starts if above background and none holds the writer's device.
    fn balance_end(&mut self, now: Instant, op: u64) {
        let throttle = self.throttle_mut(op);
        throttle.balances_left = throttle.balances_left.saturating_sub(1);
        throttle.written_pages = 0;
        let device = throttle.device;
        if !self.over_dirty_limit() {
            self.writeback.dirty_exceeded = false;
            // Under the limit, every further balance of this call would return at once.
            self.throttle_mut(op).balances_left = 0;
        }
        if self.writeback.device_pdflush[device].is_none()
            && self.cache.dirty_pages() > self.writeback.limits.background_pages
        {
            self.pdflush_operation(now, PdflushJob::Background);
        }
    }

    // ---- passes over inodes (`writeback_inodes`) ----

    /// Runs `pass` until it must wait (a batch to be accepted) or ends; true when it ended.
    fn pass_run(
        &mut self,
        now: Instant,
        pass: &mut Pass,
        owner: WritebackOwner,
        process: ProcessId,
        priority: IoPriority,
    ) -> bool {
        loop {
            if pass.batch.is_some() {
                return false;
            }
            if let Some(scan) = pass.current {
                let device = self.spaces[scan.space as usize].device;
                if pass.nonblocking && self.writeback.congested[device] {
                    // `mpage_writepages` stops at a congested queue, mid-file, and the pass
                    // leaves the device.
                    pass.encountered_congestion = true;
                    pass.left_devices.insert(device);
                    self.pass_inode_end(now, pass, owner);
                    continue;
                }
                if pass.left_pages == 0 {
                    self.pass_inode_end(now, pass, owner);
                    continue;
                }
                let batch = self.new_batch(BatchOwner::Writeback(owner));
                let mut bios = Vec::new();
                let pages = self.pass_write_pages(pass, batch, &mut bios);
                if pages == 0 {
                    self.batches.remove(&batch);
                    self.pass_inode_end(now, pass, owner);
                    continue;
                }
                pass.left_pages = pass.left_pages.saturating_sub(pages);
                pass.batch = Some(batch);
                self.submit_batch(batch, device, process, priority, bios);
                return false;
            }
            if pass.left_pages == 0 {
                return true;
            }
            let Some(space) = self.pass_next_inode(pass, owner) else { return true };
            let device = self.spaces[space as usize].device;
            if let WritebackOwner::Pdflush { thread } = owner {
                self.writeback.device_pdflush[device] = Some(thread);
            }
            let inode = self.writeback.inode(space);
            assert!(inode.locked_by.is_none(), "I_LOCK: inode {space} has one flusher at a time");
            inode.locked_by = Some(owner);
            let start = self.spaces[space as usize].cursor;
            pass.current = Some(Scan { space, page: start, start, wrapped: false });
        }
    }

    /// The next inode a pass writes, oldest first on the devices it may still visit, skipping
    /// (and requeueing) locked ones; `None` when there is none.
    fn pass_next_inode(&mut self, pass: &mut Pass, owner: WritebackOwner) -> Option<SpaceId> {
        loop {
            let devices = self.devices.len();
            let mut best: Option<(usize, i64, SpaceId)> = None;
            for (index, space) in self.spaces.iter().enumerate() {
                let index = index as SpaceId;
                if space.dirty_pages == 0
                    || pass.visited.contains(&index)
                    || pass.left_devices.contains(&space.device)
                    || pass.device.is_some_and(|device| device != space.device)
                {
                    continue;
                }
                let key = (space.device, self.writeback.inode_order(index), index);
                if best.is_none_or(|best| key < best) {
                    best = Some(key);
                }
            }
            let (device, _, space) = best?;
            debug_assert!(device < devices);
            if pass.nonblocking && self.writeback.congested[device] {
                pass.encountered_congestion = true;
                pass.left_devices.insert(device);
                continue;
            }
            if let WritebackOwner::Pdflush { thread } = owner
                && self.writeback.device_pdflush[device].is_some_and(|holder| holder != thread)
            {
                // `writeback_acquire` failed: another pdflush works this device.
                pass.left_devices.insert(device);
                continue;
            }
            if let Some(older_than) = pass.older_than
                && self.spaces[space as usize].dirtied_at.is_some_and(|at| at > older_than)
            {
                // kupdate reached inodes not yet expired: it leaves the device.
                pass.left_devices.insert(device);
                continue;
            }
            pass.visited.insert(space);
            if self.writeback.locked_by(space).is_some() {
                // I_LOCK: someone writes it; a non-integrity pass requeues it and goes on.
                self.writeback.queue_newest(space);
                continue;
            }
            return Some(space);
        }
    }

    /// Marks the next pages of the pass's inode for write-back and makes their bios: one bio
    /// (non-blocking: congestion is checked after each) or every page up to `nr_to_write`
    /// (blocking). Returns the pages.
    fn pass_write_pages(&mut self, pass: &mut Pass, batch: u64, bios: &mut Vec<HostBio>) -> u64 {
        let mut scan = pass.current.expect("an inode being written");
        let one_bio = pass.nonblocking;
        let mut pages = 0;
        // Capping the search at one bio's pages finds the same bio as trimming the whole run
        // afterwards (the run's first page does not depend on the cap), without walking a run
        // of many chunks for every page of an ext3 pass.
        let bio_cap = self.bio_page_cap(scan.space, one_bio);
        while pages < pass.left_pages {
            let limit = (pass.left_pages - pages).min(bio_cap);
            let stop = if scan.wrapped { scan.start } else { u64::MAX };
            let Some((first, end)) =
                self.writeback_next_dirty_run(scan.space, scan.page, stop, limit)
            else {
                if scan.wrapped || scan.start == 0 {
                    break;
                }
                (scan.page, scan.wrapped) = (0, true);
                continue;
            };
            self.start_page_writeback(scan.space, first, end);
            let flags = RequestFlags::NONE;
            self.write_bios(scan.space, first, end, flags, batch, bios);
            pages += end - first;
            scan.page = end;
            if one_bio {
                break;
            }
        }
        self.spaces[scan.space as usize].cursor = scan.page;
        pass.current = Some(scan);
        self.stats.writeback_pages += pages;
        pages
    }

    /// An inode's write-out ends: unlock, remember where it stopped, requeue it if still dirty.
    fn pass_inode_end(&mut self, now: Instant, pass: &mut Pass, owner: WritebackOwner) {
        let scan = pass.current.take().expect("an inode being written");
        let device = self.spaces[scan.space as usize].device;
        if let WritebackOwner::Pdflush { thread } = owner
            && self.writeback.device_pdflush[device] == Some(thread)
        {
            self.writeback.device_pdflush[device] = None;
        }
        self.inode_unlock(now, scan.space, owner);
        if self.spaces[scan.space as usize].dirty_pages > 0 {
            if pass.older_than.is_some() {
                // kupdate leaves it at the oldest end (it stays expired).
                self.writeback.queue_oldest(scan.space);
            } else {
                // Round robin: fully redirtied, behind every other inode.
                self.spaces[scan.space as usize].dirtied_at = Some(now);
                self.writeback.queue_newest(scan.space);
            }
        }
    }

    fn inode_unlock(&mut self, now: Instant, space: SpaceId, owner: WritebackOwner) {
        let inode = self.writeback.inode(space);
        if inode.locked_by == Some(owner) {
            inode.locked_by = None;
            // An fsync waiting for the lock may go on.
            let waiting: Vec<u64> = self
                .writeback
                .ops
                .iter()
                .filter(|(_, op)| {
                    matches!(&op.state, WriterState::Sync(sync)
                        if sync.batch.is_none() && sync.spaces.get(sync.next) == Some(&space))
                })
                .map(|(&id, _)| id)
                .collect();
            for op in waiting {
                self.sync_step(now, op);
            }
        }
    }

    /// The first run of dirty pages of `space` in `from..stop`, at most `limit` pages.
    pub(super) fn writeback_next_dirty_run(
        &self,
        space: SpaceId,
        from: u64,
        stop: u64,
        limit: u64,
    ) -> Option<(u64, u64)> {
        let mut run: Option<(u64, u64)> = None;
        // One walk of the ordered set: a run spanning many chunks costs one tree descent, not
        // one per chunk.
        let chunks =
            self.writeback.dirty_chunks.range((space, from / CHUNK_PAGES)..(space, u64::MAX));
        for &(_, chunk) in chunks {
            if let Some((_, end)) = run
                && end != chunk * CHUNK_PAGES
            {
                // The next dirty chunk does not continue the run.
                return run;
            }
            let slot = self.cache.find(space, chunk).expect("dirty chunks are cached");
            let base = chunk * CHUNK_PAGES;
            let mut mask = self.cache.chunk(slot).dirty;
            if from > base {
                mask &= !page_mask(0, (from - base).min(CHUNK_PAGES));
            }
            if mask == 0 {
                if run.is_some() {
                    return run;
                }
                continue;
            }
            let first = base + u64::from(mask.trailing_zeros());
            let past = first + u64::from((mask >> (first - base)).trailing_ones());
            match run {
                None => {
                    if first >= stop {
                        return None;
                    }
                    run = Some((first, past.min(stop)));
                }
                Some((start, end)) if end == first => run = Some((start, past.min(stop))),
                Some(_) => return run,
            }
            let (start, end) = run.expect("set above");
            if end - start >= limit {
                return Some((start, start + limit));
            }
            if end < base + CHUNK_PAGES || end >= stop {
                return run;
            }
        }
        run
    }

    /// How many pages of a dirty run one bio may take: a page on ext3 and raw devices (no
    /// `writepages`: a bio per block, §1.3), the run up to `max_sectors` on XFS; unbounded
    /// unless `one_bio` asks for one bio's worth.
    fn bio_page_cap(&self, space: SpaceId, one_bio: bool) -> u64 {
        if !one_bio {
            return u64::MAX;
        }
        let entry = &self.spaces[space as usize];
        match (entry.kind, self.writeback.filesystem) {
            (SpaceKind::File(_), Filesystem::Xfs) => {
                (u64::from(self.devices[entry.device].max_sectors) * 512 / PAGE_BYTES).max(1)
            }
            _ => 1,
        }
    }

    /// Cleans pages `first..end` of `space` and counts them under write-back.
    pub(super) fn start_page_writeback(&mut self, space: SpaceId, first: u64, end: u64) {
        let mut page = first;
        while page < end {
            let chunk = page / CHUNK_PAGES;
            let chunk_end = ((chunk + 1) * CHUNK_PAGES).min(end);
            let mask = page_mask(page % CHUNK_PAGES, chunk_end - chunk * CHUNK_PAGES);
            if let Some(slot) = self.cache.find(space, chunk) {
                if let Some(bdflush) = &mut self.writeback.bdflush {
                    let dirty = self.cache.chunk(slot).dirty & mask;
                    for bit in 0..CHUNK_PAGES {
                        if dirty & (1 << bit) != 0 {
                            bdflush.cleaned(space, chunk * CHUNK_PAGES + bit);
                        }
                    }
                }
                let (cleaned, started) = self.cache.start_writeback(slot, mask);
                let entry = &mut self.spaces[space as usize];
                entry.dirty_pages -= cleaned;
                entry.writeback_pages += started;
                if self.cache.chunk(slot).dirty == 0 {
                    self.writeback.dirty_chunks.remove(&(space, chunk));
                }
            }
            page = chunk_end;
        }
        let entry = &mut self.spaces[space as usize];
        if entry.dirty_pages == 0 {
            entry.dirtied_at = None;
        }
    }

    /// The bios writing pages `first..end` of `space`, as its filesystem builds them.
    pub(super) fn write_bios(
        &mut self,
        space: SpaceId,
        first: u64,
        end: u64,
        flags: RequestFlags,
        batch: u64,
        bios: &mut Vec<HostBio>,
    ) {
        let entry = self.spaces[space as usize];
        let per_block = match entry.kind {
            SpaceKind::Raw => true,
            SpaceKind::File(_) => self.writeback.filesystem == Filesystem::Ext3,
        };
        if per_block {
            for page in first..end {
                self.issue_pages(space, page, page + 1, true, flags, batch, bios);
            }
        } else {
            self.issue_pages(space, first, end, true, flags, batch, bios);
        }
    }

    // ---- pdflush ----

    /// `pdflush_operation`: hands `job` to an idle thread (the one idle the shortest time);
    /// false if none is idle.
    fn pdflush_operation(&mut self, now: Instant, job: PdflushJob) -> bool {
        let idle = self
            .writeback
            .pdflush
            .iter()
            .enumerate()
            .filter(|(_, thread)| !thread.exited && thread.job.is_none())
            .max_by_key(|&(index, thread)| (thread.idle_since, std::cmp::Reverse(index)))
            .map(|(index, _)| index);
        let Some(thread) = idle else { return false };
        self.writeback.pdflush[thread].job = Some(job);
        let any_idle =
            self.writeback.pdflush.iter().any(|thread| !thread.exited && thread.job.is_none());
        if !any_idle {
            self.writeback.pdflush_last_empty = now;
        }
        self.stats.flusher_passes += 1;
        self.pdflush_run(now, thread);
        true
    }

    /// A pdflush thread's next move.
    fn pdflush_run(&mut self, now: Instant, thread: usize) {
        loop {
            let state = &self.writeback.pdflush[thread];
            let Some(job) = state.job else { return };
            if state.until.is_some() {
                return;
            }
            if let Some(mut pass) = self.writeback.pdflush[thread].pass.take() {
                let owner = WritebackOwner::Pdflush { thread };
                let process = pdflush_process(thread);
                if !self.pass_run(now, &mut pass, owner, process, IoPriority::DEFAULT) {
                    self.writeback.pdflush[thread].pass = Some(pass);
                    return;
                }
                let written = PDFLUSH_CHUNK_PAGES - pass.left_pages;
                let mut job = job;
                if let PdflushJob::Kupdate { left_pages, .. } = &mut job {
                    *left_pages = left_pages.saturating_sub(written);
                }
                self.writeback.pdflush[thread].job = Some(job);
                if pass.left_pages > 0 {
                    if pass.encountered_congestion {
                        // A short chunk for congestion: `blk_congestion_wait`, then go on.
                        self.writeback.pdflush[thread].until = Some(now + CONGESTION_WAIT);
                        self.timers_changed = true;
                        return;
                    }
                    // Nothing more to write.
                    self.pdflush_done(now, thread);
                    return;
                }
                continue;
            }
            let pass = match job {
                PdflushJob::Background => {
                    if self.cache.dirty_pages() <= self.writeback.limits.background_pages {
                        self.pdflush_done(now, thread);
                        return;
                    }
                    Pass::new(None, PDFLUSH_CHUNK_PAGES, None, true)
                }
                PdflushJob::Kupdate { started, left_pages } => {
                    if left_pages == 0 {
                        self.pdflush_done(now, thread);
                        return;
                    }
                    let older_than = Instant::from_nanos(
                        started.as_nanos().saturating_sub(self.writeback.dirty_expire.as_nanos()),
                    );
                    Pass::new(None, PDFLUSH_CHUNK_PAGES, Some(older_than), true)
                }
            };
            self.writeback.pdflush[thread].pass = Some(pass);
        }
    }

    /// A pdflush thread finished its job: kupdate re-arms; the pool grows or shrinks.
    fn pdflush_done(&mut self, now: Instant, thread: usize) {
        let job = self.writeback.pdflush[thread].job.take();
        if let Some(PdflushJob::Kupdate { started, .. }) = job {
            let next = (started + self.writeback.writeback_interval).max(now + KUPDATE_MIN_GAP);
            if self.cache.dirty_pages() > 0 || self.writeback.kupdate_at.is_some() {
                self.writeback.kupdate_at = Some(next);
            }
        }
        let pool = &mut self.writeback.pdflush;
        let live = pool.iter().filter(|thread| !thread.exited).count();
        // Before this one goes idle: no idle thread for a second adds one.
        let others_idle = pool
            .iter()
            .enumerate()
            .any(|(index, t)| index != thread && !t.exited && t.job.is_none());
        if !others_idle
            && now.saturating_since(self.writeback.pdflush_last_empty) > PDFLUSH_POOL_DELAY
            && live < PDFLUSH_THREADS_MAX
        {
            match pool.iter().position(|thread| thread.exited) {
                Some(slot) => {
                    pool[slot].exited = false;
                    pool[slot].idle_since = now;
                }
                None => pool.push(PdflushThread {
                    job: None,
                    pass: None,
                    until: None,
                    idle_since: now,
                    exited: false,
                }),
            }
        }
        pool[thread].idle_since = now;
        // One that slept over a second exits, if more than the minimum live.
        let live = pool.iter().filter(|thread| !thread.exited).count();
        if live > PDFLUSH_THREADS_MIN
            && let Some((sleepiest, _)) = pool
                .iter()
                .enumerate()
                .filter(|(index, t)| *index != thread && !t.exited && t.job.is_none())
                .min_by_key(|&(index, t)| (t.idle_since, index))
            && now.saturating_since(pool[sleepiest].idle_since) > PDFLUSH_POOL_DELAY
        {
            pool[thread].exited = true;
            pool[sleepiest].idle_since = now;
        }
    }

    /// kupdate's timer: `wb_kupdate` on a pdflush thread, or again in a second if none is idle.
    fn kupdate_start(&mut self, now: Instant) {
        if self.cache.dirty_pages() == 0 {
            // Nothing dirty: the timer sleeps until data is dirtied again.
            return;
        }
        let left_pages = self.cache.dirty_pages();
        let job = PdflushJob::Kupdate { started: now, left_pages };
        if !self.pdflush_operation(now, job) {
            self.writeback.kupdate_at = Some(now + KUPDATE_MIN_GAP);
        }
    }

    // ---- 2.4: balance_dirty, bdflush, kupdated ----

    /// `balance_dirty_state`: −1 at or below nfract, 0 above it, 1 above nfract_sync.
    fn balance_dirty_state(&self) -> i8 {
        let Some(bdflush) = &self.writeback.bdflush else { return -1 };
        let dirty = self.cache.dirty_pages() * 100;
        if dirty <= bdflush.base_pages * BDFLUSH_NFRACT_PERCENT {
            -1
        } else if dirty > bdflush.base_pages * BDFLUSH_NFRACT_SYNC_PERCENT {
            1
        } else {
            0
        }
    }

    /// A 2.4 writer's `balance_dirty` calls, one per buffer it dirtied: above nfract wake
    /// bdflush; above nfract_sync also write one batch, waiting for its submission only.
    fn balance_dirty(&mut self, now: Instant, op: u64) {
        loop {
            let Some(pending) = self.writeback.ops.get(&op) else { return };
            let (process, priority) = (pending.process, pending.priority);
            let WriterState::Throttle(throttle) = &pending.state else { return };
            if !throttle.submitting.is_empty() {
                return;
            }
            if throttle.balances_left == 0 {
                let bytes = throttle.bytes;
                self.writeback.ops.remove(&op);
                self.finish(now, op, process, bytes);
                return;
            }
            let counted = throttle.counted;
            let state = self.balance_dirty_state();
            if state >= 0 {
                self.wakeup_bdflush();
            }
            if state < 1 {
                // No time passes before the call's further balances: they would see the same.
                self.throttle_mut(op).balances_left = 0;
                continue;
            }
            if !counted {
                self.stats.throttled_writes += 1;
                self.throttle_mut(op).counted = true;
            }
            let owner = WritebackOwner::Throttle { op };
            let (batches, _) = self.write_some_buffers(owner, process, priority);
            let throttle = self.throttle_mut(op);
            throttle.balances_left -= 1;
            throttle.submitting.extend(batches);
        }
    }

    /// `write_some_buffers`: the first 32 dirty buffers of the LRU not being written, each its
    /// own bio, one batch per device in the order met. Returns the batches and whether 32 were
    /// found (the kernel's −EAGAIN: there may be more).
    fn write_some_buffers(
        &mut self,
        owner: WritebackOwner,
        process: ProcessId,
        priority: IoPriority,
    ) -> (Vec<u64>, bool) {
        let bdflush = self.writeback.bdflush.as_ref().expect("a 2.4 host");
        let mut taken = Vec::with_capacity(WRITE_SOME_BUFFERS);
        for &(space, page, _) in bdflush.lru.values() {
            let chunk = page / CHUNK_PAGES;
            let bit = 1u64 << (page % CHUNK_PAGES);
            let locked = self
                .cache
                .find(space, chunk)
                .is_some_and(|slot| self.cache.chunk(slot).writeback & bit != 0);
            if locked {
                // Being written (dirtied again meanwhile): its lock is taken; skip it.
                continue;
            }
            taken.push((space, page));
            if taken.len() == WRITE_SOME_BUFFERS {
                break;
            }
        }
        let full = taken.len() == WRITE_SOME_BUFFERS;
        // One batch per device, in the order the devices are met.
        let mut per_device: Vec<(usize, u64, Vec<HostBio>)> = Vec::new();
        for (space, page) in taken {
            let device = self.spaces[space as usize].device;
            let index = match per_device.iter().position(|(d, _, _)| *d == device) {
                Some(index) => index,
                None => {
                    let batch = self.new_batch(BatchOwner::Writeback(owner));
                    per_device.push((device, batch, Vec::new()));
                    per_device.len() - 1
                }
            };
            self.start_page_writeback(space, page, page + 1);
            let (_, batch, bios) = &mut per_device[index];
            let batch = *batch;
            self.write_bios(space, page, page + 1, RequestFlags::NONE, batch, bios);
            self.stats.writeback_pages += 1;
        }
        let mut batches = Vec::new();
        for (device, batch, bios) in per_device {
            if !bios.is_empty() {
                batches.push(batch);
            }
            self.submit_batch(batch, device, process, priority, bios);
        }
        (batches, full)
    }

    /// Runs `tq_disk`: every queue unplugged.
    fn run_tq_disk(&mut self) {
        for device in 0..self.devices.len() {
            self.actions.push(HostAction::Unplug { device });
        }
    }

    /// `wakeup_bdflush`: a sleeping bdflush starts a round.
    fn wakeup_bdflush(&mut self) {
        let bdflush = self.writeback.bdflush.as_mut().expect("a 2.4 host");
        if bdflush.bdflush_awake {
            return;
        }
        bdflush.bdflush_awake = true;
        bdflush.ndirty = BDFLUSH_NDIRTY_BUFFERS;
        bdflush.ran_out = false;
        self.stats.flusher_passes += 1;
        self.timers_changed = true;
        self.bdflush_run();
    }

    /// bdflush's loop: batches until ndirty is spent or the LRU runs dry, then `tq_disk` and
    /// sleep unless dirty data is still above nfract_sync.
    fn bdflush_run(&mut self) {
        loop {
            let bdflush = self.writeback.bdflush.as_ref().expect("a 2.4 host");
            if !bdflush.bdflush_awake || !bdflush.bdflush_submitting.is_empty() {
                return;
            }
            if bdflush.ndirty > 0 && !bdflush.ran_out {
                let (batches, full) = self.write_some_buffers(
                    WritebackOwner::Bdflush,
                    BDFLUSH_PROCESS,
                    IoPriority::DEFAULT,
                );
                let bdflush = self.writeback.bdflush.as_mut().expect("a 2.4 host");
                if full {
                    bdflush.ndirty -= WRITE_SOME_BUFFERS as i64;
                } else {
                    bdflush.ran_out = true;
                }
                bdflush.bdflush_submitting.extend(batches);
                continue;
            }
            let sleep = bdflush.ran_out || self.balance_dirty_state() < 1;
            let bdflush = self.writeback.bdflush.as_mut().expect("a 2.4 host");
            bdflush.ndirty = BDFLUSH_NDIRTY_BUFFERS;
            bdflush.ran_out = false;
            if sleep {
                bdflush.bdflush_awake = false;
                self.run_tq_disk();
                return;
            }
            // Still above nfract_sync: another round at once, without `tq_disk`.
            self.stats.flusher_passes += 1;
        }
    }

    /// kupdated's timer: a pass over the LRU's old end.
    fn kupdated_start(&mut self, now: Instant) {
        let bdflush = self.writeback.bdflush.as_mut().expect("a 2.4 host");
        if bdflush.kupdated_awake {
            return;
        }
        bdflush.kupdated_awake = true;
        self.stats.flusher_passes += 1;
        self.kupdated_run(now);
    }

    /// `sync_old_buffers`: batches while the LRU's oldest buffer is older than age_buffer (a
    /// short batch ends it), then `tq_disk`; the next pass an interval later.
    fn kupdated_run(&mut self, now: Instant) {
        loop {
            let bdflush = self.writeback.bdflush.as_ref().expect("a 2.4 host");
            if !bdflush.kupdated_awake || !bdflush.kupdated_submitting.is_empty() {
                return;
            }
            let expired = !bdflush.kupdated_finishing
                && bdflush
                    .lru
                    .values()
                    .next()
                    .is_some_and(|&(_, _, dirtied)| dirtied + BDFLUSH_AGE_BUFFER <= now);
            if expired {
                let (batches, full) = self.write_some_buffers(
                    WritebackOwner::Kupdated,
                    KUPDATED_PROCESS,
                    IoPriority::DEFAULT,
                );
                let bdflush = self.writeback.bdflush.as_mut().expect("a 2.4 host");
                bdflush.kupdated_submitting.extend(batches);
                bdflush.kupdated_finishing = !full;
                continue;
            }
            let bdflush = self.writeback.bdflush.as_mut().expect("a 2.4 host");
            bdflush.kupdated_awake = false;
            bdflush.kupdated_finishing = false;
            self.run_tq_disk();
            if self.cache.dirty_pages() > 0 {
                self.writeback.kupdate_at = Some(now + BDFLUSH_INTERVAL);
            }
            self.timers_changed = true;
            return;
        }
    }

    // ---- sync ----

    /// fsync of a file or sync of a device (`spaces`): WB_SYNC_ALL write-out of each, then a
    /// wait for their pages; a file's fsync then commits the journal (ext3) or writes the log
    /// (XFS). `drop_after`: forget their clean pages (a device's cache drop).
    pub(super) fn sync(
        &mut self,
        now: Instant,
        op: u64,
        process: ProcessId,
        priority: IoPriority,
        spaces: Vec<SpaceId>,
        drop_after: bool,
    ) {
        let fsync = !drop_after
            && spaces.len() == 1
            && matches!(self.spaces[spaces[0] as usize].kind, SpaceKind::File(_));
        let state = WriterState::Sync(SyncOp {
            spaces,
            next: 0,
            batch: None,
            batches: 0,
            drop_after,
            commit: None,
            data_done: false,
            fsync,
        });
        self.writeback.ops.insert(op, WriterOp { process, priority, state });
        self.sync_step(now, op);
    }

    fn sync_mut(&mut self, op: u64) -> Option<&mut SyncOp> {
        match &mut self.writeback.ops.get_mut(&op)?.state {
            WriterState::Sync(sync) => Some(sync),
            WriterState::Throttle(_) => None,
        }
    }

    /// A sync's next move.
    fn sync_step(&mut self, now: Instant, op: u64) {
        let Some(pending) = self.writeback.ops.get(&op) else { return };
        let (process, priority) = (pending.process, pending.priority);
        let WriterState::Sync(sync) = &pending.state else { return };
        if sync.batch.is_some() {
            return;
        }
        if let Some(&space) = sync.spaces.get(sync.next) {
            // WB_SYNC_ALL waits for I_LOCK.
            if self.writeback.locked_by(space).is_some() {
                return;
            }
            let owner = WritebackOwner::Sync { op };
            let batch = self.new_batch(BatchOwner::Writeback(owner));
            let mut bios = Vec::new();
            let flags = self.writeback.fsync_flags;
            let mut page = 0;
            let mut pages = 0;
            while let Some((first, end)) =
                self.writeback_next_dirty_run(space, page, u64::MAX, u64::MAX)
            {
                self.start_page_writeback(space, first, end);
                self.write_bios(space, first, end, flags, batch, &mut bios);
                pages += end - first;
                page = end;
            }
            self.stats.writeback_pages += pages;
            let sync = self.sync_mut(op).expect("checked above");
            if bios.is_empty() {
                sync.next += 1;
                self.batches.remove(&batch);
                return self.sync_step(now, op);
            }
            sync.batch = Some(batch);
            sync.batches += 1;
            let inode = self.writeback.inode(space);
            assert!(inode.locked_by.is_none(), "I_LOCK: inode {space} has one flusher at a time");
            inode.locked_by = Some(owner);
            let device = self.spaces[space as usize].device;
            self.submit_batch(batch, device, process, priority, bios);
            return;
        }
        // Written: wait for its own batches and every page of its spaces under write-back
        // (`filemap_fdatawait`).
        let idle =
            sync.spaces.iter().all(|&space| self.spaces[space as usize].writeback_pages == 0);
        if sync.batches > 0 || !idle {
            return;
        }
        if sync.fsync && !sync.data_done {
            let space = sync.spaces[0];
            let device = self.spaces[space as usize].device;
            self.sync_mut(op).expect("a sync").data_done = true;
            match self.writeback.filesystem {
                Filesystem::Ext3 => {
                    let commit = self.journal_force(now, device);
                    self.sync_mut(op).expect("a sync").commit = commit.map(|id| (device, id));
                }
                Filesystem::Xfs => {
                    self.xfs_log_force(device, op, process, priority);
                    return;
                }
            }
        }
        let sync = self.sync_mut(op).expect("a sync");
        if let Some((device, id)) = sync.commit
            && !self.writeback.journals[device].committed(id)
        {
            return;
        }
        let Some(WriterOp { state: WriterState::Sync(sync), .. }) = self.writeback.ops.remove(&op)
        else {
            unreachable!("checked above")
        };
        if sync.drop_after {
            for space in sync.spaces {
                self.cache.drop_clean(Some(space));
            }
        }
        self.finish(now, op, process, 0);
    }

    /// Syncs waiting for a journal commit of `device` may be done.
    pub(super) fn sync_commit_done(&mut self, now: Instant, device: usize) {
        let waiting: Vec<u64> = self
            .writeback
            .ops
            .iter()
            .filter(|(_, op)| {
                matches!(&op.state, WriterState::Sync(sync)
                    if sync.commit.is_some_and(|(on, _)| on == device))
            })
            .map(|(&id, _)| id)
            .collect();
        for op in waiting {
            self.sync_step(now, op);
        }
    }

    /// XFS's fsync: the log buffer holding the inode's transaction is written (one 4 KiB
    /// block at the log's head, [U]), counted among the sync's batches.
    fn xfs_log_force(&mut self, device: usize, op: u64, process: ProcessId, priority: IoPriority) {
        let capacity = self.devices[device].capacity_sectors;
        let (first, sectors) = super::journal::journal_region(Filesystem::Xfs, capacity);
        let span = sectors.max(8);
        if self.writeback.xfs_log_heads.len() <= device {
            self.writeback.xfs_log_heads.resize(device + 1, 0);
        }
        let head = &mut self.writeback.xfs_log_heads[device];
        let sector = first + *head;
        *head = (*head + 8) % span;
        let batch = self.new_batch(BatchOwner::Writeback(WritebackOwner::Sync { op }));
        if let Some(sync) = self.sync_mut(op) {
            sync.batches += 1;
        }
        let bio = self.journal_bio(device, sector, self.writeback.fsync_flags, batch);
        self.submit_batch(batch, device, process, priority, vec![bio]);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::host::{HostAction, HostDevice, HostOpKind, HostPlace};

    const GIB_PAGES: u64 = (1 << 30) / PAGE_BYTES;
    const MIB_PAGES: u64 = (1 << 20) / PAGE_BYTES;

    /// A host on one 80 GB disk with `files` empty files.
    pub(in crate::host) fn host(spec: &str, files: usize) -> Host {
        let device = HostDevice {
            capacity_sectors: 160_000_000,
            max_sectors: 1024,
            read_ahead_pages: 32,
            block_bytes: HostDevice::block_bytes_for(160_000_000),
        };
        let files: Vec<(usize, u64)> = (0..files).map(|_| (0, 0)).collect();
        Host::new(&HostSpec::parse(spec).unwrap(), vec![device], &files).unwrap()
    }

    /// A write-back batch the host asked for: who, which spaces, its bios.
    #[derive(Debug)]
    pub(in crate::host) struct Seen {
        pub(in crate::host) batch: u64,
        pub(in crate::host) process: ProcessId,
        pub(in crate::host) bios: Vec<HostBio>,
    }

    /// Takes the host's actions: submitted batches, and finished operations.
    pub(in crate::host) fn take(host: &mut Host) -> (Vec<Seen>, Vec<u64>) {
        let (mut seen, mut done) = (Vec::new(), Vec::new());
        for action in host.take_actions() {
            match action {
                HostAction::Submit { batch, process, bios, .. } => {
                    seen.push(Seen { batch, process, bios })
                }
                HostAction::Complete { op, .. } => done.push(op),
                // The test queue runs at once; nothing is ever plugged.
                HostAction::Unplug { .. } => {}
            }
        }
        (seen, done)
    }

    /// Accepts and completes every batch the host asks for at `now`, as an idle queue would,
    /// until it asks for nothing more; returns what it submitted and finished.
    pub(in crate::host) fn settle(host: &mut Host, now: Instant) -> (Vec<Seen>, Vec<u64>) {
        let (mut all, mut finished) = (Vec::new(), Vec::new());
        for _ in 0..100_000 {
            let (seen, done) = take(host);
            finished.extend(done);
            if seen.is_empty() {
                return (all, finished);
            }
            for batch in &seen {
                host.batch_accepted(now, batch.batch);
            }
            for batch in &seen {
                for bio in &batch.bios {
                    host.bio_done(now, bio.id);
                }
            }
            all.extend(seen);
        }
        panic!("the host kept submitting");
    }

    /// `process` writes `pages` pages at the start of `file` (host op `op`).
    fn write_pages(
        host: &mut Host,
        now: Instant,
        op: u64,
        process: ProcessId,
        file: usize,
        pages: u64,
    ) {
        let place = HostPlace::File(file);
        let bytes = pages * PAGE_BYTES;
        let kind = HostOpKind::Write;
        host.submit(now, op, process, IoPriority::DEFAULT, kind, place, 0, bytes).unwrap();
    }

    fn space_of(host: &Host, bio: &HostBio) -> SpaceId {
        host.bios[&bio.id].space
    }

    // Proves the spec's examples of get_dirty_limits (§3.2, x86_64, little mapped memory):
    // 12 GiB → ≈ 4.7 GiB hard / 1.2 GiB background, 2 GiB → ≈ 780 / 195 MiB; the clamp at
    // half the unmapped share (30 % mapped → 35 %), its 5 % floor, background halving, and
    // ratelimit/write_chunk (12 GiB, 4 CPUs → 1024 / 1536 pages; floor 16).
    #[test]
    fn dirty_limits_follow_get_dirty_limits() {
        // total = RAM less ≈ 2 % the kernel keeps (pages_high, reservations).
        let total_12g = 12 * GIB_PAGES * 98 / 100;
        let limits = DirtyLimits::new(total_12g, 0, 4, 40, 10);
        let gib = |pages: u64| pages as f64 / GIB_PAGES as f64;
        assert!((4.6..4.8).contains(&gib(limits.dirty_pages)), "{limits:?}");
        assert!((1.1..1.25).contains(&gib(limits.background_pages)), "{limits:?}");
        assert_eq!((limits.ratelimit_pages, limits.write_chunk_pages), (1024, 1536));
        let total_2g = 2 * 1024 * MIB_PAGES * 95 / 100;
        let limits = DirtyLimits::new(total_2g, 0, 2, 40, 10);
        let mib = |pages: u64| pages / MIB_PAGES;
        assert!((760..=800).contains(&mib(limits.dirty_pages)), "{limits:?}");
        assert!((185..=200).contains(&mib(limits.background_pages)), "{limits:?}");
        let mapped = DirtyLimits::new(1000 * MIB_PAGES, 300 * MIB_PAGES, 2, 40, 10);
        assert_eq!(mapped.dirty_pages, 1000 * MIB_PAGES * 35 / 100);
        let floor = DirtyLimits::new(1000 * MIB_PAGES, 950 * MIB_PAGES, 2, 40, 10);
        assert_eq!(floor.dirty_pages, 1000 * MIB_PAGES * 5 / 100);
        assert_eq!(floor.background_pages, 1000 * MIB_PAGES * 2 / 100, "10 % ≥ 5 %: halved");
        assert_eq!(DirtyLimits::new(512, 0, 8, 40, 10).ratelimit_pages, 16);
    }

    // Proves I_LOCK and the throttled writers' streams: eleven writers over the dirty limit,
    // whose write-back is never accepted (each blocks in the pool holding its inode's lock),
    // write eleven different inodes — each the oldest not locked, often not its own — and no
    // two writers' outstanding batches ever share an inode. Without I_LOCK they would all
    // take the oldest inode and the queue would see one stream.
    #[test]
    fn throttled_writers_take_the_oldest_unlocked_inode_each() {
        // 64 MiB cache, dirty_ratio 10: the limit is 1638 pages.
        let mut host = host("host:ram=64m,reserve=0,dirty_ratio=10,dirty_background_ratio=5", 11);
        let now = Instant::from_nanos(1_000_000);
        let write = |host: &mut Host, op: u64, file: usize, pages: u64| {
            write_pages(host, now, op, ProcessId(op as u32), file, pages);
        };
        // Writer 100 fills file 10 past the limit; then writers 1..=10 write 1 MiB each.
        write(&mut host, 100, 10, 2048);
        for file in 0..10 {
            write(&mut host, file as u64 + 1, file, MIB_PAGES);
        }
        let (seen, done) = take(&mut host);
        assert!(done.is_empty(), "every writer is throttled: {done:?}");
        let mut writer_of: BTreeMap<SpaceId, ProcessId> = BTreeMap::new();
        for batch in seen.iter().filter(|batch| batch.process.0 <= 100) {
            for bio in &batch.bios {
                let space = space_of(&host, bio);
                let holder = *writer_of.entry(space).or_insert(batch.process);
                assert_eq!(holder, batch.process, "two writers write inode {space} at once");
                assert!(host.writeback.locked_by(space).is_some());
            }
        }
        assert_eq!(writer_of.len(), 11, "one inode per throttled writer: {writer_of:?}");
        assert_eq!(writer_of[&10], ProcessId(100), "the oldest inode goes to the first writer");
        assert_eq!(writer_of[&0], ProcessId(1), "then the oldest unlocked: writer 1's own");
        assert!(host.stats.throttled_writes >= 11);
    }

    // Proves pdflush's non-blocking write-back stops at a congested queue mid-file and goes
    // on after congestion clears, one bio (one 4 KiB ext3 block) per step; and that the pool
    // keeps one pdflush per device while a second thread stays idle.
    #[test]
    fn pdflush_stops_at_congestion_and_resumes() {
        let mut host = host("host:ram=64m,reserve=0,dirty_ratio=40,dirty_background_ratio=5", 1);
        let now = Instant::from_nanos(1_000);
        // 2 MiB (512 pages) dirty: above background (819 pages)? No: write 4 MiB.
        write_pages(&mut host, now, 1, ProcessId(1), 0, (4 << 20) / PAGE_BYTES);
        // The writer's balances start background write-back; each bio is accepted until the
        // queue reports congestion after the tenth.
        let mut submitted = 0;
        for _ in 0..10_000 {
            let (seen, _) = take(&mut host);
            let Some(batch) = seen.into_iter().find(|b| b.process == pdflush_process(0)) else {
                break;
            };
            assert_eq!(batch.bios.len(), 1, "non-blocking: one bio per step");
            assert_eq!(batch.bios[0].sector_count, 8, "ext3: one 4 KiB block per bio");
            submitted += 1;
            if submitted == 10 {
                host.set_congested(now, 0, true);
            }
            host.batch_accepted(now, batch.batch);
        }
        assert_eq!(submitted, 10, "stops at the congested queue");
        assert!(host.writeback.pdflush[0].until.is_some(), "in blk_congestion_wait");
        assert!(host.writeback.pdflush[1].job.is_none(), "the other thread stays idle");
        host.set_congested(now, 0, false);
        let (seen, _) = take(&mut host);
        assert!(seen.iter().any(|b| b.process == pdflush_process(0)), "resumes when it clears");
    }

    // Proves issue 28 item 4: write-back reaches the queue under the process the kernel
    // submits it from (the `process` of `HostAction::Submit`). (1) A buffered writer under the
    // background threshold submits nothing itself; its pages go out when kupdate's pdflush
    // pass finds them older than `dirty_expire` (`wb_kupdate`), as pdflush's bios. (2) A
    // writer over the dirty limit writes back in its own name (`balance_dirty_pages` →
    // `writeback_inodes` in the caller's context). (3) An fsync by process 4 of a file process
    // 3 dirtied is submitted by process 4 (`do_fsync` → `filemap_fdatawrite` in the caller),
    // never by the dirtier.
    #[test]
    fn write_back_is_submitted_by_whom_the_kernel_submits_it() {
        let is_pdflush =
            |process: ProcessId| (0..PDFLUSH_THREADS_MAX).any(|t| pdflush_process(t) == process);
        let write = write_pages;
        let t0 = Instant::from_nanos(1_000);

        // (1) 1 MiB dirty, far under the background threshold (64 MiB × 10 %). On XFS the
        // pages wait for kupdate (30 s); on ext3 (data=ordered) kjournald's 5 s commit writes
        // them first (`journal_submit_data_buffers`).
        for (fs, writer, after) in [
            ("xfs", None, Duration::from_secs(30)),
            ("ext3", Some(super::super::journal::kjournald_process(0)), Duration::from_secs(5)),
        ] {
            let spec =
                format!("host:fs={fs},ram=64m,reserve=0,dirty_ratio=40,dirty_background_ratio=10");
            let mut lazy = host(&spec, 1);
            write(&mut lazy, t0, 1, ProcessId(1), 0, MIB_PAGES);
            let (seen, done) = settle(&mut lazy, t0);
            assert!(seen.is_empty(), "the dirtier submits nothing: {seen:?}");
            assert_eq!(done, [1]);
            let mut written = Vec::new();
            while let Some(at) = lazy.next_timer() {
                assert!(at < t0 + Duration::from_secs(120), "{fs}: the pages were never written");
                lazy.wake(at);
                let (seen, _) = settle(&mut lazy, at);
                written.extend(seen);
                if lazy.cache.dirty_pages() == 0 {
                    assert!(at >= t0 + after, "{fs}: written at {at:?}, before {after:?}");
                    break;
                }
            }
            assert!(!written.is_empty());
            for batch in &written {
                let expected = writer.map_or(is_pdflush(batch.process), |w| batch.process == w);
                assert!(expected, "{fs}: {:?} submitted write-back", batch.process);
            }
        }

        // (2) Writer 2 dirties 2048 pages against a 1638-page limit: it is throttled and its
        // own bios carry its id (pdflush, started by its balance, may write too).
        let mut throttled =
            host("host:ram=64m,reserve=0,dirty_ratio=10,dirty_background_ratio=5", 1);
        write(&mut throttled, t0, 2, ProcessId(2), 0, 2048);
        let (seen, done) = take(&mut throttled);
        assert!(done.is_empty(), "the writer is throttled");
        assert!(seen.iter().any(|batch| batch.process == ProcessId(2)));
        assert!(seen.iter().all(|b| b.process == ProcessId(2) || is_pdflush(b.process)));

        // (3) Process 3 dirties 1 MiB (no write-back: under every threshold); process 4 fsyncs.
        let mut fsynced =
            host("host:ram=64m,reserve=0,dirty_ratio=40,dirty_background_ratio=10", 1);
        write(&mut fsynced, t0, 3, ProcessId(3), 0, MIB_PAGES);
        let (seen, _) = settle(&mut fsynced, t0);
        assert!(seen.is_empty());
        fsynced
            .submit(
                t0,
                4,
                ProcessId(4),
                IoPriority::DEFAULT,
                HostOpKind::Sync,
                HostPlace::File(0),
                0,
                0,
            )
            .unwrap();
        let (data, _) = take(&mut fsynced);
        let data_pages: usize = data.iter().map(|batch| batch.bios.len()).sum();
        assert_eq!(data_pages as u64, MIB_PAGES, "ext3: one bio per 4 KiB block");
        assert!(data.iter().all(|batch| batch.process == ProcessId(4)), "{data:?}");
    }

    /// Writes `pages` pages at page `first_page` of `place` as `process` (host op `op`).
    fn write_at(
        host: &mut Host,
        now: Instant,
        op: u64,
        process: ProcessId,
        place: HostPlace,
        first_page: u64,
        pages: u64,
    ) {
        let (offset, bytes) = (first_page * PAGE_BYTES, pages * PAGE_BYTES);
        let kind = HostOpKind::Write;
        host.submit(now, op, process, IoPriority::DEFAULT, kind, place, offset, bytes).unwrap();
    }

    /// Whether the host's pending actions include `tq_disk` (an unplug of every device).
    fn unplugs(actions: &[HostAction]) -> bool {
        actions.iter().any(|action| matches!(action, HostAction::Unplug { .. }))
    }

    // Proves 2.4's bdflush (linux-2.4-elevator.md §6.4): dirtying past nfract (50 % of the
    // cache) wakes it; it writes 16 batches of 32 buffers (ndirty 500) from the old end of the
    // one global LRU — across files, in dirtying order, each buffer its own 4 KiB bio — then
    // runs `tq_disk` and sleeps (below nfract_sync), and the writer itself writes nothing.
    #[test]
    fn rhel3_bdflush_writes_500_buffers_from_the_global_lru_then_sleeps() {
        // 64 MiB of cache: 16384 pages, nfract at 8192 dirty.
        let mut host = host("host:kernel=rhel3,ram=64m,reserve=0", 2);
        let t0 = Instant::from_nanos(1_000);
        write_at(&mut host, t0, 1, ProcessId(1), HostPlace::File(1), 0, 10);
        write_at(&mut host, t0, 2, ProcessId(2), HostPlace::File(0), 0, 8000);
        let (seen, done) = settle(&mut host, t0);
        assert!(seen.is_empty(), "under nfract: nothing written");
        assert_eq!(done, vec![1, 2]);
        write_at(&mut host, t0, 3, ProcessId(1), HostPlace::File(1), 10, 200);
        let actions = host.take_actions();
        assert!(!unplugs(&actions), "bdflush is still writing");
        host.actions = actions;
        // Settle, noting each bio's file before it completes, and `tq_disk`.
        let (mut seen, mut done, mut spaces, mut unplugged) =
            (Vec::new(), Vec::new(), Vec::new(), false);
        loop {
            let actions = host.take_actions();
            unplugged |= unplugs(&actions);
            host.actions = actions;
            let (batches, finished) = take(&mut host);
            done.extend(finished);
            if batches.is_empty() {
                break;
            }
            for batch in &batches {
                spaces.extend(batch.bios.iter().map(|bio| space_of(&host, bio)));
                host.batch_accepted(t0, batch.batch);
                for bio in &batch.bios {
                    host.bio_done(t0, bio.id);
                }
            }
            seen.extend(batches);
        }
        assert_eq!(done, vec![3]);
        assert_eq!(seen.len(), 16, "500 buffers in batches of 32: 16 batches");
        assert!(seen.iter().all(|batch| batch.process == BDFLUSH_PROCESS));
        assert!(seen.iter().all(|batch| batch.bios.len() == WRITE_SOME_BUFFERS));
        let bios: Vec<&HostBio> = seen.iter().flat_map(|batch| &batch.bios).collect();
        assert!(bios.iter().all(|bio| bio.sector_count == 8), "one 4 KiB bio per buffer");
        // The LRU's old end: file 1's first 10 pages, then file 0's from its start.
        assert_eq!(&spaces[..10], &[1; 10]);
        assert!(spaces[10..].iter().all(|&space| space == 0));
        assert_eq!(host.cache.dirty_pages(), 8210 - 512);
        let bdflush = host.writeback.bdflush.as_ref().unwrap();
        assert!(!bdflush.bdflush_awake, "asleep: below nfract_sync");
        assert!(unplugged, "bdflush runs tq_disk before sleeping");
    }

    // Proves 2.4's writers above nfract_sync (80 %): each buffer dirtied makes the writer
    // submit a 32-buffer batch of its own, as its process, and its write returns once those
    // batches are taken by the queue — before any of the writes completes — while bdflush,
    // above nfract_sync, goes on without sleeping.
    #[test]
    fn rhel3_writers_above_nfract_sync_write_batches_without_waiting() {
        let mut host = host("host:kernel=rhel3,ram=64m,reserve=0", 1);
        let t0 = Instant::from_nanos(1_000);
        // 16000 of 16384 pages dirty: above 80 % (13107) by more than bdflush's 512.
        write_at(&mut host, t0, 1, ProcessId(7), HostPlace::File(0), 0, 16_000);
        let mut writer_batches = 0;
        let mut finished = false;
        for _ in 0..10_000 {
            let actions = host.take_actions();
            if actions.is_empty() {
                break;
            }
            for action in actions {
                match action {
                    HostAction::Submit { batch, process, bios, .. } => {
                        assert!(process == ProcessId(7) || process == BDFLUSH_PROCESS);
                        assert!(bios.iter().all(|bio| bio.sector_count == 8));
                        if process == ProcessId(7) {
                            writer_batches += 1;
                            assert_eq!(bios.len(), WRITE_SOME_BUFFERS);
                        }
                        // Taken by the queue, never completed.
                        host.batch_accepted(t0, batch);
                    }
                    HostAction::Complete { op, .. } => finished |= op == 1,
                    HostAction::Unplug { .. } => {}
                }
            }
        }
        assert!(finished, "the write returned with every bio still in flight");
        assert!(writer_batches > 0);
        assert!(host.cache.dirty_pages() * 100 <= 16_384 * BDFLUSH_NFRACT_SYNC_PERCENT);
        assert_eq!(host.cache.writeback_pages(), 16_000 - host.cache.dirty_pages());
        // bdflush stayed awake past its first 500 buffers.
        assert!(host.stats.flusher_passes > 1, "{}", host.stats.flusher_passes);
    }

    // Proves 2.4's kupdated (§6.4): every 5 s it looks at the LRU's old end and writes
    // 32-buffer batches while that buffer was dirtied more than 30 s ago — so the last full
    // batch takes young buffers behind the old ones, and a young buffer at the old end stops it
    // — then runs `tq_disk`. On a raw device (no journal commits its data).
    #[test]
    fn rhel3_kupdated_writes_buffers_older_than_30s() {
        let mut host = host("host:kernel=rhel3,ram=64m,reserve=0", 0);
        let device = HostPlace::Device(0);
        write_at(&mut host, Instant::ZERO, 1, ProcessId(1), device, 0, 100);
        let at_20s = Instant::ZERO + Duration::from_secs(20);
        write_at(&mut host, at_20s, 2, ProcessId(1), device, 1000, 40);
        assert_eq!(settle(&mut host, at_20s).1, vec![1, 2]);
        let mut written = Vec::new();
        let mut unplugged = false;
        while let Some(at) = host.next_timer() {
            if at > Instant::ZERO + Duration::from_secs(30) {
                break;
            }
            host.wake(at);
            let actions = host.take_actions();
            unplugged |= unplugs(&actions);
            host.actions = actions;
            let (seen, _) = settle(&mut host, at);
            for batch in seen {
                assert_eq!(batch.process, KUPDATED_PROCESS);
                written.push((at, batch.bios.len()));
            }
        }
        let at_30s = Instant::ZERO + Duration::from_secs(30);
        assert_eq!(written, vec![(at_30s, 32), (at_30s, 32), (at_30s, 32), (at_30s, 32)]);
        assert!(unplugged);
        // 100 old + 28 young written; 12 young (dirtied at 20 s) wait for 50 s.
        assert_eq!(host.cache.dirty_pages(), 12);
        assert_eq!(host.next_timer(), Some(at_30s + BDFLUSH_INTERVAL));
    }
}
