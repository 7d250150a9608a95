//! ext3's journal in `data=ordered` mode, and kjournald's commits (host-mechanisms.md §4.1),
//! as 2.6.9 and 2.6.18 `fs/jbd/{commit,journal,transaction}.c` did them, and RHEL 3's 2.4
//! `fs/jbd` alike (linux-2.4-elevator.md §6.4: every 5 s, ordered data in batches of 64,
//! waited for, then the journal).
//!
//! * **The journal** is a region of the filesystem (inode 8) written sequentially and
//!   circularly: mke2fs's default size, 32768 blocks (128 MiB) for filesystems of ≥ 1 Mi
//!   blocks (4 GiB), 16384, 8192, 4096 or 1024 blocks below (e2fsprogs
//!   `ext2fs_default_journal_size`), at the **start** of the filesystem (e2fsprogs before
//!   1.41.1: RHEL 4 ships 1.35, RHEL 5 1.39). [`journal_region`] tells the layout where it is,
//!   so that file data stays out of it.
//! * **A transaction** collects, in first-dirtied order across files, the blocks that
//!   `write()` dirtied since the last commit (its ordered-data list), and the inodes touched.
//! * **kjournald** (one per filesystem, its own process, charged to no benchmark process)
//!   commits every 5 s after a transaction started (`JBD_DEFAULT_MAX_COMMIT_AGE`), or at once
//!   when fsync forces it. A commit writes, in order and each waited for: (1) the ordered data
//!   still dirty, as 4 KiB bios in batches of `KernelVersion::journal_batch_blocks` (64 in
//!   2.4.21 and 2.6.9, 512 in 2.6.18), batch after batch, all async and **blocking** (they
//!   park when the pool is full); (2) the metadata and descriptor blocks, sequential 4 KiB
//!   writes at the journal's head; (3) a commit block.
//!
//! # Deviations from Linux
//!
//! * Metadata per commit is modelled, not tracked: one descriptor block plus one block per
//!   inode touched [U] (the kernel journals the inode table, bitmap, group descriptor and
//!   indirect blocks that changed).
//! * The commit waits for the ordered data it submitted itself, not for data buffers another
//!   flusher had under write-back (the kernel waits for those too).
//! * Commits start only on the timer or fsync: not when a transaction fills a quarter of the
//!   journal or journal space runs low; checkpointing (metadata to its home) is not modelled.
//! * The journal starts at sector 0 (the kernel's begins after group 0's superblock,
//!   descriptors, bitmaps and inode table); XFS's log is put mid-device, its size taken by
//!   the same rule [U].

use std::collections::BTreeSet;

use elevator_core::{
    Duration, Instant, IoPriority, KernelVersion, ProcessId, RequestFlags, Sector,
};

use super::cache::{PAGE_BYTES, SpaceId};
use super::spec::Filesystem;
use super::writeback::WritebackOwner;
use super::{BatchOwner, BioState, Host, HostAction, HostBio};

/// kjournald's commit interval (`JBD_DEFAULT_MAX_COMMIT_AGE`, 5 s).
const COMMIT_INTERVAL: Duration = Duration::from_secs(5);
/// Sectors in a 4 KiB filesystem block.
const BLOCK_SECTORS: u64 = PAGE_BYTES / 512;

/// Devices with a kjournald of their own at most (a topology has at most 64 disks).
pub(crate) const MAX_DEVICES: usize = 256;

/// The process of `device`'s kjournald.
pub(crate) const fn kjournald_process(device: usize) -> ProcessId {
    ProcessId(u32::MAX - 16 - device as u32)
}

/// Where a filesystem of `capacity_sectors` keeps its journal (ext3) or log (XFS): (first
/// sector, sectors). The layout must keep file data out of it.
pub(crate) fn journal_region(filesystem: Filesystem, capacity_sectors: u64) -> (u64, u64) {
    let blocks = capacity_sectors / BLOCK_SECTORS;
    // e2fsprogs `ext2fs_default_journal_size` (§4.1).
    let journal_blocks = match blocks {
        0..2048 => 0,
        2048..32768 => 1024,
        32768..262_144 => 4096,
        262_144..524_288 => 8192,
        524_288..1_048_576 => 16384,
        _ => 32768,
    };
    let sectors = journal_blocks * BLOCK_SECTORS;
    match filesystem {
        Filesystem::Ext3 => (0, sectors),
        Filesystem::Xfs => {
            let middle = (capacity_sectors / 2) / BLOCK_SECTORS * BLOCK_SECTORS;
            (middle.min(capacity_sectors.saturating_sub(sectors)), sectors)
        }
    }
}

/// The running transaction.
#[derive(Clone, Debug)]
struct Transaction {
    id: u64,
    started: Instant,
    /// Ordered data: page ranges of files in first-dirtied order.
    ordered: Vec<(SpaceId, u64, u64)>,
    inodes: BTreeSet<SpaceId>,
    /// fsync asked for it to commit.
    forced: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Writing ordered data.
    Data,
    /// Metadata and descriptor blocks written; waiting for them.
    Metadata,
    /// The commit block written; waiting for it.
    CommitBlock,
}

/// The committing transaction.
#[derive(Clone, Debug)]
struct Commit {
    transaction: Transaction,
    stage: Stage,
    /// Next ordered range and page to look at.
    position: usize,
    page: u64,
    /// A batch waiting to be accepted.
    batch: Option<u64>,
    /// Batches not yet completed.
    outstanding: u32,
}

/// One filesystem's journal.
#[derive(Clone, Debug)]
pub(crate) struct Journal {
    first_sector: u64,
    sectors: u64,
    /// Next write, in sectors from the region's start.
    head_sectors: u64,
    batch_blocks: u64,
    running: Option<Transaction>,
    committing: Option<Commit>,
    next_id: u64,
    /// The last transaction committed (0: none).
    committed_id: u64,
    /// Commits done, for reports.
    pub(crate) commits: u64,
    /// Blocks written into the journal, for reports.
    pub(crate) journal_blocks: u64,
}

impl Journal {
    /// The journal of ext3 on `device` of `capacity_sectors`, under `kernel`.
    pub(crate) fn new(device: usize, capacity_sectors: u64, kernel: KernelVersion) -> Journal {
        let _ = device;
        let (first_sector, sectors) = journal_region(Filesystem::Ext3, capacity_sectors);
        Journal {
            first_sector,
            sectors,
            head_sectors: 0,
            batch_blocks: u64::from(kernel.journal_batch_blocks()),
            running: None,
            committing: None,
            next_id: 1,
            committed_id: 0,
            commits: 0,
            journal_blocks: 0,
        }
    }

    /// When kjournald wakes next: the running transaction's commit time, unless a commit is
    /// in progress (the next follows it).
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        if self.committing.is_some() {
            return None;
        }
        self.running.as_ref().map(|transaction| transaction.started + COMMIT_INTERVAL)
    }

    /// Whether transaction `id` is on disk.
    pub(crate) fn committed(&self, id: u64) -> bool {
        self.committed_id >= id
    }

    /// For a stalled run's message.
    pub(crate) fn stall_detail(&self) -> String {
        format!(
            "journal: running {:?}, committing {:?}",
            self.running.as_ref().map(|t| (t.id, t.ordered.len())),
            self.committing.as_ref().map(|c| (c.transaction.id, c.stage, c.outstanding))
        )
    }

    /// The sector of the next journal block, advancing the head (circularly).
    fn next_block_sector(&mut self) -> u64 {
        let span = self.sectors.max(BLOCK_SECTORS);
        let sector = self.first_sector + self.head_sectors;
        self.head_sectors = (self.head_sectors + BLOCK_SECTORS) % span;
        self.journal_blocks += 1;
        sector
    }
}

impl Host {
    /// `write()` dirtied pages `first..end` of file `space` on `device`: they join the running
    /// transaction's ordered data.
    pub(super) fn journal_dirtied(
        &mut self,
        now: Instant,
        device: usize,
        space: SpaceId,
        first: u64,
        end: u64,
    ) {
        let journal = &mut self.writeback.journals[device];
        let transaction = journal.running.get_or_insert_with(|| {
            let id = journal.next_id;
            journal.next_id += 1;
            Transaction {
                id,
                started: now,
                ordered: Vec::new(),
                inodes: BTreeSet::new(),
                forced: false,
            }
        });
        transaction.inodes.insert(space);
        match transaction.ordered.last_mut() {
            // Contiguous with the last range of the same file: one range.
            Some((last_space, _, last_end)) if *last_space == space && *last_end == first => {
                *last_end = end;
            }
            // Already on the list (rewritten in place): stays where it is.
            Some((last_space, last_first, last_end))
                if *last_space == space && *last_first <= first && end <= *last_end => {}
            _ => transaction.ordered.push((space, first, end)),
        }
        self.timers_changed = true;
    }

    /// kjournald's timer: the running transaction is 5 s old.
    pub(super) fn journal_timer(&mut self, now: Instant, device: usize) {
        let journal = &self.writeback.journals[device];
        if journal.committing.is_none()
            && journal.running.as_ref().is_some_and(|t| t.started + COMMIT_INTERVAL <= now)
        {
            self.journal_commit_start(now, device);
        }
    }

    /// fsync forces a commit of the running transaction; returns the transaction to wait for.
    pub(super) fn journal_force(&mut self, now: Instant, device: usize) -> Option<u64> {
        let journal = &mut self.writeback.journals[device];
        if let Some(transaction) = &mut journal.running {
            transaction.forced = true;
            let id = transaction.id;
            if journal.committing.is_none() {
                self.journal_commit_start(now, device);
            }
            return Some(id);
        }
        journal.committing.as_ref().map(|commit| commit.transaction.id)
    }

    fn journal_commit_start(&mut self, now: Instant, device: usize) {
        let journal = &mut self.writeback.journals[device];
        let Some(transaction) = journal.running.take() else { return };
        journal.committing = Some(Commit {
            transaction,
            stage: Stage::Data,
            position: 0,
            page: 0,
            batch: None,
            outstanding: 0,
        });
        self.timers_changed = true;
        self.journal_commit_step(now, device);
    }

    /// The commit's next move.
    fn journal_commit_step(&mut self, now: Instant, device: usize) {
        let Some(commit) = &self.writeback.journals[device].committing else { return };
        if commit.batch.is_some() {
            return;
        }
        let owner = WritebackOwner::Journal { device };
        let process = kjournald_process(device);
        match commit.stage {
            Stage::Data => {
                let batch = self.new_batch(BatchOwner::Writeback(owner));
                let mut bios = Vec::new();
                self.journal_data_batch(device, batch, &mut bios);
                let commit = self.writeback.journals[device].committing.as_mut().expect("live");
                if !bios.is_empty() {
                    commit.batch = Some(batch);
                    commit.outstanding += 1;
                    self.submit_batch(batch, device, process, IoPriority::DEFAULT, bios);
                    return;
                }
                self.batches.remove(&batch);
                if commit.outstanding > 0 {
                    // Everything submitted: kjournald sleeps on the buffers, which runs the
                    // queue (`wait_on_buffer` → `sync_buffer`).
                    self.actions.push(HostAction::Unplug { device });
                    return;
                }
                // (2) metadata and descriptor blocks.
                let blocks = 1 + commit.transaction.inodes.len() as u64;
                commit.stage = Stage::Metadata;
                self.journal_write_blocks(device, blocks);
            }
            Stage::Metadata => {
                if commit.outstanding == 0 {
                    // (3) the commit block.
                    self.writeback.journals[device].committing.as_mut().expect("live").stage =
                        Stage::CommitBlock;
                    self.journal_write_blocks(device, 1);
                }
            }
            Stage::CommitBlock => {
                if commit.outstanding > 0 {
                    return;
                }
                let journal = &mut self.writeback.journals[device];
                let commit = journal.committing.take().expect("live");
                journal.committed_id = commit.transaction.id;
                journal.commits += 1;
                self.timers_changed = true;
                // The next transaction commits now if fsync forced it or it is due.
                if journal
                    .running
                    .as_ref()
                    .is_some_and(|t| t.forced || t.started + COMMIT_INTERVAL <= now)
                {
                    self.journal_commit_start(now, device);
                }
                self.sync_commit_done(now, device);
            }
        }
    }

    /// The next batch of ordered data still dirty: up to `batch_blocks` 4 KiB bios.
    fn journal_data_batch(&mut self, device: usize, batch: u64, bios: &mut Vec<HostBio>) {
        let journal = &self.writeback.journals[device];
        let limit = journal.batch_blocks;
        let commit = journal.committing.as_ref().expect("live");
        let (mut position, mut page) = (commit.position, commit.page);
        let ordered_count = commit.transaction.ordered.len();
        let mut pages = 0;
        while pages < limit && position < ordered_count {
            let (space, first, end) = self.writeback.journals[device]
                .committing
                .as_ref()
                .expect("live")
                .transaction
                .ordered[position];
            let from = page.max(first);
            match self.journal_next_dirty(space, from, end, limit - pages) {
                Some((run_first, run_end)) => {
                    self.start_page_writeback(space, run_first, run_end);
                    self.write_bios(space, run_first, run_end, RequestFlags::NONE, batch, bios);
                    pages += run_end - run_first;
                    page = run_end;
                }
                None => {
                    position += 1;
                    page = 0;
                }
            }
        }
        self.stats.writeback_pages += pages;
        let commit = self.writeback.journals[device].committing.as_mut().expect("live");
        (commit.position, commit.page) = (position, page);
    }

    fn journal_next_dirty(
        &self,
        space: SpaceId,
        from: u64,
        end: u64,
        limit: u64,
    ) -> Option<(u64, u64)> {
        if from >= end {
            return None;
        }
        self.writeback_next_dirty_run(space, from, end, limit)
    }

    /// Writes `blocks` sequential 4 KiB blocks at the journal's head, one batch.
    fn journal_write_blocks(&mut self, device: usize, blocks: u64) {
        let owner = WritebackOwner::Journal { device };
        let batch = self.new_batch(BatchOwner::Writeback(owner));
        let mut bios = Vec::new();
        for _ in 0..blocks {
            let sector = self.writeback.journals[device].next_block_sector();
            bios.push(self.journal_bio(device, sector, RequestFlags::NONE, batch));
        }
        let commit = self.writeback.journals[device].committing.as_mut().expect("live");
        commit.batch = Some(batch);
        commit.outstanding += 1;
        self.submit_batch(batch, device, kjournald_process(device), IoPriority::DEFAULT, bios);
        // kjournald waits for these blocks at once, which runs the queue.
        self.actions.push(HostAction::Unplug { device });
    }

    /// A 4 KiB write at `sector` of `device` that holds no cached page (journal or log).
    pub(super) fn journal_bio(
        &mut self,
        device: usize,
        sector: u64,
        flags: RequestFlags,
        batch: u64,
    ) -> HostBio {
        let id = self.next_bio;
        self.next_bio += 1;
        let space = self.raw_space[device];
        self.bios.insert(id, BioState { space, first_page: 0, page_count: 0, write: true, batch });
        HostBio {
            id,
            op: elevator_core::Op::Write,
            start: Sector(sector),
            sector_count: BLOCK_SECTORS as u32,
            flags,
        }
    }

    /// A batch of kjournald's was accepted by the queue.
    pub(super) fn journal_accepted(&mut self, now: Instant, device: usize, batch: u64) {
        let Some(commit) = self.writeback.journals[device].committing.as_mut() else { return };
        if commit.batch == Some(batch) {
            commit.batch = None;
            self.journal_commit_step(now, device);
        }
    }

    /// A batch of kjournald's completed.
    pub(super) fn journal_batch_done(&mut self, now: Instant, device: usize, batch: u64) {
        let _ = batch;
        let Some(commit) = self.writeback.journals[device].committing.as_mut() else { return };
        commit.outstanding -= 1;
        self.journal_commit_step(now, device);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::writeback::tests::{host, settle, take};
    use crate::host::{HostOpKind, HostPlace};

    fn write(host: &mut Host, now: Instant, op: u64, file: usize, first_page: u64, pages: u64) {
        host.submit(
            now,
            op,
            ProcessId(op as u32),
            IoPriority::DEFAULT,
            HostOpKind::Write,
            HostPlace::File(file),
            first_page * PAGE_BYTES,
            pages * PAGE_BYTES,
        )
        .unwrap();
        settle(host, now);
    }

    // Proves kjournald's commit: 5 s after the first write (no pdflush: under background) it
    // writes the ordered data still dirty in dirtying order across files (A, B, A again), as
    // 4 KiB bios in batches of 64 under 2.6.9, then journal blocks and a commit block inside
    // the journal region at the device's start, as kjournald's own process. The same on RHEL 3
    // (2.4, linux-2.4-elevator.md §6.4: batches of 64, waited for), where kupdated, due at the
    // same moment, finds no buffer 30 s old and writes nothing.
    #[test]
    fn kjournald_writes_ordered_data_in_dirtying_order_then_the_journal() {
        for kernel in ["2.6.9", "rhel3"] {
            kjournald_commit_on(kernel);
        }
    }

    fn kjournald_commit_on(kernel: &str) {
        let mut host = host(&format!("host:kernel={kernel},ram=1g"), 2);
        let t0 = Instant::from_nanos(1_000);
        write(&mut host, t0, 1, 0, 0, 100);
        write(&mut host, t0, 2, 1, 0, 100);
        write(&mut host, t0, 3, 0, 100, 100);
        assert_eq!(host.next_timer(), Some(t0 + COMMIT_INTERVAL), "kjournald's 5 s");
        let at = t0 + COMMIT_INTERVAL;
        host.wake(at);
        // Accept and complete every batch, noting each bio's file (journal blocks: none).
        let mut seen = Vec::new();
        let mut spaces = Vec::new();
        loop {
            let (batches, _) = take(&mut host);
            if batches.is_empty() {
                break;
            }
            for batch in &batches {
                for bio in &batch.bios {
                    let state = host.bios[&bio.id];
                    if state.page_count > 0 {
                        spaces.push(state.space);
                    }
                }
                host.batch_accepted(at, batch.batch);
                for bio in &batch.bios {
                    host.bio_done(at, bio.id);
                }
            }
            seen.extend(batches);
        }
        assert!(seen.iter().all(|b| b.process == kjournald_process(0)));
        let runs: Vec<(SpaceId, usize)> =
            spaces.chunk_by(|a, b| a == b).map(|r| (r[0], r.len())).collect();
        assert_eq!(runs, [(0, 100), (1, 100), (0, 100)], "dirtying order across files");
        assert!(seen.iter().all(|b| b.bios.len() <= 64), "{kernel}: batches of 64 blocks");
        assert_eq!(seen[0].bios.len(), 64, "{kernel}");
        assert!(seen.iter().flat_map(|b| &b.bios).all(|bio| bio.sector_count == 8));
        let (first, sectors) = journal_region(Filesystem::Ext3, 160_000_000);
        let bios: Vec<&HostBio> = seen.iter().flat_map(|b| &b.bios).collect();
        let journal: Vec<u64> = bios[300..].iter().map(|bio| bio.start.0).collect();
        assert!(journal.iter().all(|&sector| sector >= first && sector < first + sectors));
        // One descriptor, one block per inode (2), a commit block: sequential.
        assert_eq!(journal, [0, 8, 16, 24]);
        assert_eq!(host.writeback.journals[0].commits, 1);
        assert_eq!(host.cache.dirty_pages(), 0);
    }

    // Proves fsync on ext3 forces a commit long before the 5 s timer: the file's pages are
    // written, then kjournald commits (journal blocks in the region), and only then the fsync
    // finishes.
    #[test]
    fn fsync_forces_a_commit() {
        let mut host = host("host:ram=1g", 1);
        let t0 = Instant::from_nanos(1_000);
        write(&mut host, t0, 1, 0, 0, 16);
        host.submit(
            t0,
            2,
            ProcessId(2),
            IoPriority::DEFAULT,
            HostOpKind::Sync,
            HostPlace::File(0),
            0,
            0,
        )
        .unwrap();
        let (first, sectors) = journal_region(Filesystem::Ext3, 160_000_000);
        let (seen, _) = take(&mut host);
        assert!(seen.iter().all(|b| b.process == ProcessId(2)), "the file's pages first");
        for batch in &seen {
            host.batch_accepted(t0, batch.batch);
            for bio in &batch.bios {
                host.bio_done(t0, bio.id);
            }
        }
        let (commit, done) = settle(&mut host, t0);
        assert!(commit.iter().all(|b| b.process == kjournald_process(0)));
        let journal_bios = commit.iter().flat_map(|b| &b.bios).count();
        assert_eq!(journal_bios, 3, "descriptor, inode block, commit block");
        assert!(commit.iter().flat_map(|b| &b.bios).all(|bio| bio.start.0 < first + sectors));
        assert_eq!(done, [2], "the fsync returns once the commit is on disk");
        assert_eq!(host.writeback.journals[0].commits, 1);
    }

    // Proves mke2fs's default journal sizes and placement.
    #[test]
    fn journal_region_follows_mke2fs() {
        assert_eq!(journal_region(Filesystem::Ext3, 160_000_000), (0, 32768 * 8));
        assert_eq!(journal_region(Filesystem::Ext3, 1 << 21), (0, 8192 * 8), "1 GiB");
        assert_eq!(journal_region(Filesystem::Ext3, 1000), (0, 0), "too small for one");
        let (start, sectors) = journal_region(Filesystem::Xfs, 160_000_000);
        assert_eq!((start, sectors), (80_000_000, 32768 * 8));
    }
}
