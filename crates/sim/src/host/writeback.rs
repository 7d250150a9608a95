//! Write-back: dirty limits, the flusher, writers throttled over the dirty limit, fsync.

use std::collections::{BTreeMap, BTreeSet};

use elevator_core::{Duration, Instant, IoPriority, ProcessId, RequestFlags};

use super::cache::{CHUNK_PAGES, PAGE_BYTES, SpaceId, page_mask};
use super::spec::HostSpec;
use super::{BatchOwner, Host, HostError, SpaceKind};

/// The flusher thread's process (pdflush): its write-back lands in cfq's async queues like
/// anyone's, but is charged to no workload process.
pub(crate) const FLUSHER: ProcessId = ProcessId(u32::MAX - 1);

/// Pages the flusher writes from one file before moving on (`MAX_WRITEBACK_PAGES`, 4 MiB).
const FLUSHER_PAGES_PER_PASS: u64 = 1024;
/// How long a writer or the flusher waits for congestion to clear (`HZ/10`).
const CONGESTION_WAIT: Duration = Duration::from_millis(100);

/// Who waits for a batch of write-back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WritebackOwner {
    /// A throttled writer's write-back: the writer waits for it to be accepted.
    Throttle { op: u64 },
    /// An fsync or a device sync: the caller waits for completion.
    Sync { op: u64 },
    /// The flusher: it writes its next pass once this one is accepted.
    Flusher,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum WriterState {
    /// A writer over the dirty limit: it has submitted `written` pages of write-back; it waits
    /// for `batch` to be accepted, or until `until`.
    Throttle { written: u64, batch: Option<u64>, until: Option<Instant>, bytes: u64 },
    /// Waiting for `spaces` to be clean and its own batches done; then, for a device drop,
    /// forgetting their pages.
    Sync { spaces: Vec<SpaceId>, batches: u32, drop_after: bool },
}

#[derive(Clone, Debug)]
struct WriterOp {
    process: ProcessId,
    priority: IoPriority,
    state: WriterState,
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

/// The write-back side of the host.
#[derive(Debug)]
pub(crate) struct Writeback {
    /// Dirty chunks in (space, chunk) order: what write-back walks.
    dirty_chunks: BTreeSet<(SpaceId, u64)>,
    ops: BTreeMap<u64, WriterOp>,
    flusher: Flusher,
    congested: Vec<bool>,
    dirty_limit_pages: u64,
    background_limit_pages: u64,
    write_chunk_pages: u64,
    dirty_expire: Duration,
    writeback_interval: Duration,
    fsync_flags: RequestFlags,
}

impl Writeback {
    /// Write-back for a host with `cache_pages` of page cache and `device_count` devices.
    pub(crate) fn new(spec: &HostSpec, cache_pages: u64, device_count: usize) -> Writeback {
        let params = &spec.params;
        let cpus = params.integer("cpus") as u64;
        // 2.6.18's ratelimit_pages: memory over 32 per CPU, between 16 pages and 4 MiB.
        let ratelimit_pages = (cache_pages / (cpus * 32)).clamp(16, 1024);
        let percent = |ratio: i64| cache_pages * ratio as u64 / 100;
        Writeback {
            dirty_chunks: BTreeSet::new(),
            ops: BTreeMap::new(),
            flusher: Flusher::default(),
            congested: vec![false; device_count],
            dirty_limit_pages: percent(params.integer("dirty_ratio")),
            background_limit_pages: percent(params.integer("dirty_background_ratio")),
            write_chunk_pages: ratelimit_pages + ratelimit_pages / 2,
            dirty_expire: params.time("dirty_expire"),
            writeback_interval: params.time("dirty_writeback_interval"),
            fsync_flags: if params.text("fsync") == "sync" {
                RequestFlags::SYNC
            } else {
                RequestFlags::NONE
            },
        }
    }

    /// The earliest instant write-back wants [`Host::wake`] called.
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        let throttled = self.ops.values().filter_map(|op| match op.state {
            WriterState::Throttle { until, .. } => until,
            _ => None,
        });
        let flusher = [self.flusher.until, self.flusher.periodic_at].into_iter().flatten();
        throttled.chain(flusher).min()
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
        parts.push(format!("flusher {:?}", self.flusher));
        parts.join("; ")
    }

    /// The dirty limit in pages.
    pub(crate) fn dirty_limit_pages(&self) -> u64 {
        self.dirty_limit_pages
    }
}

impl Host {
    /// The runner tells of `device`'s write congestion.
    pub(super) fn writeback_congestion(&mut self, now: Instant, device: usize, congested: bool) {
        if self.writeback.congested[device] == congested {
            return;
        }
        self.timers_changed = true;
        self.writeback.congested[device] = congested;
        if !congested && self.writeback.flusher.until.is_some() {
            self.writeback.flusher.until = None;
            self.flusher_run(now);
        }
    }

    /// A write-back timer may be due.
    pub(super) fn writeback_wake(&mut self, now: Instant) {
        if self.writeback.flusher.periodic_at.is_some_and(|at| at <= now) {
            self.periodic(now);
        }
        if self.writeback.flusher.until.is_some_and(|until| until <= now) {
            self.writeback.flusher.until = None;
            self.flusher_run(now);
        }
        let due: Vec<u64> = self
            .writeback
            .ops
            .iter()
            .filter(
                |(_, op)| matches!(op.state, WriterState::Throttle { until: Some(t), .. } if t <= now),
            )
            .map(|(&id, _)| id)
            .collect();
        for op in due {
            if let Some(pending) = self.writeback.ops.get_mut(&op)
                && let WriterState::Throttle { until, .. } = &mut pending.state
            {
                *until = None;
            }
            self.balance(now, op);
        }
    }

    /// Every bio of write-back `batch` has been taken by its queue.
    pub(super) fn writeback_accepted(&mut self, now: Instant, batch: u64, owner: WritebackOwner) {
        match owner {
            WritebackOwner::Throttle { op } => {
                if let Some(pending) = self.writeback.ops.get_mut(&op)
                    && let WriterState::Throttle { batch: waiting, .. } = &mut pending.state
                    && *waiting == Some(batch)
                {
                    *waiting = None;
                    self.balance(now, op);
                }
            }
            WritebackOwner::Flusher => {
                if self.writeback.flusher.batch == Some(batch) {
                    self.writeback.flusher.batch = None;
                    self.flusher_run(now);
                }
            }
            WritebackOwner::Sync { .. } => {}
        }
    }

    /// A write-back bio of `batch` completed (`batch_done`: the batch's last).
    pub(super) fn writeback_bio_done(
        &mut self,
        now: Instant,
        batch: u64,
        owner: WritebackOwner,
        batch_done: bool,
    ) {
        let _ = batch;
        if batch_done
            && let WritebackOwner::Sync { op } = owner
            && let Some(pending) = self.writeback.ops.get_mut(&op)
            && let WriterState::Sync { batches, .. } = &mut pending.state
        {
            *batches -= 1;
        }
        // Write-back progress: syncs may be done, throttled writers may go on.
        let syncs: Vec<u64> = self
            .writeback
            .ops
            .iter()
            .filter(|(_, op)| matches!(op.state, WriterState::Sync { .. }))
            .map(|(&id, _)| id)
            .collect();
        for op in syncs {
            self.sync_check(now, op);
        }
        let throttled: Vec<u64> = self
            .writeback
            .ops
            .iter()
            .filter(|(_, op)| {
                matches!(op.state, WriterState::Throttle { batch: None, until: Some(_), .. })
            })
            .map(|(&id, _)| id)
            .collect();
        for op in throttled {
            if let Some(pending) = self.writeback.ops.get_mut(&op)
                && let WriterState::Throttle { until, .. } = &mut pending.state
            {
                *until = None;
            }
            self.balance(now, op);
        }
    }

    // ---- writes ----

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
                self.layouts.grow(file, end_bytes)?;
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
            self.writeback.dirty_chunks.insert((space, chunk));
            page = chunk_end;
        }
        let held = self.cache.dirty_pages() + self.cache.writeback_pages();
        self.stats.dirty_pages_peak = self.stats.dirty_pages_peak.max(held);
        self.ensure_periodic(now);
        if self.cache.dirty_pages() > self.writeback.background_limit_pages {
            self.flusher_run(now);
        }
        let state = WriterState::Throttle { written: 0, batch: None, until: None, bytes: size };
        self.writeback.ops.insert(op, WriterOp { process, priority, state });
        self.balance(now, op);
        Ok(())
    }

    /// The writer's duty above the dirty limit (2.6.18's `balance_dirty_pages`): write back
    /// `write_chunk` pages, or wait for write-back to make progress, until under the limit.
    fn balance(&mut self, now: Instant, op: u64) {
        let Some(pending) = self.writeback.ops.get(&op) else { return };
        let WriterState::Throttle { written, batch, until, bytes } = pending.state else { return };
        if batch.is_some() || until.is_some_and(|until| until > now) {
            return;
        }
        let (process, priority) = (pending.process, pending.priority);
        let over = self.cache.dirty_pages() + self.cache.writeback_pages()
            > self.writeback.dirty_limit_pages;
        if !over || written >= self.writeback.write_chunk_pages {
            self.writeback.ops.remove(&op);
            self.finish(now, op, process, bytes);
            return;
        }
        if written == 0 && until.is_none() && batch.is_none() {
            self.stats.throttled_writes += 1;
        }
        let wanted = self.writeback.write_chunk_pages - written;
        let submitted =
            self.writeback_oldest(now, wanted, process, priority, WritebackOwner::Throttle { op });
        let state = match submitted {
            Some(batch) => {
                WriterState::Throttle { written, batch: Some(batch), until: None, bytes }
            }
            // Everything is already being written back: wait for it (congestion wait).
            None => WriterState::Throttle {
                written,
                batch: None,
                until: Some(now + CONGESTION_WAIT),
                bytes,
            },
        };
        self.writeback.ops.get_mut(&op).expect("checked above").state = state;
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
        owner: WritebackOwner,
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
            if let WritebackOwner::Throttle { op } = owner
                && let Some(pending) = self.writeback.ops.get_mut(&op)
                && let WriterState::Throttle { written, .. } = &mut pending.state
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
        owner: WritebackOwner,
    ) -> (u64, u64) {
        let batch = self.new_batch(BatchOwner::Writeback(owner));
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
            let next = self.writeback.dirty_chunks.range((space, from)..(space, u64::MAX)).next();
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
            self.writeback.dirty_chunks.remove(&(space, chunk));
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

    pub(super) fn sync(
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
                let flags = self.writeback.fsync_flags;
                let (_, pages) = self.writeback_space(
                    space,
                    u64::MAX,
                    process,
                    priority,
                    flags,
                    WritebackOwner::Sync { op },
                );
                if pages > 0 {
                    batches += 1;
                }
            }
        }
        let state = WriterState::Sync { spaces, batches, drop_after };
        self.writeback.ops.insert(op, WriterOp { process, priority, state });
        self.sync_check(now, op);
    }

    /// Finishes a sync whose spaces are clean and whose own write-back is done.
    fn sync_check(&mut self, now: Instant, op: u64) {
        let Some(pending) = self.writeback.ops.get(&op) else { return };
        let WriterState::Sync { spaces, batches, drop_after } = &pending.state else { return };
        // Done once its own write-back has completed and nothing of its spaces is still being
        // written (pages dirtied since by others are not waited for).
        let idle = spaces.iter().all(|&space| self.spaces[space as usize].writeback_pages == 0);
        if *batches > 0 || !idle {
            return;
        }
        let (process, drop_after, spaces) = (pending.process, *drop_after, spaces.clone());
        self.writeback.ops.remove(&op);
        if drop_after {
            for space in spaces {
                self.cache.drop_clean(Some(space));
            }
        }
        self.finish(now, op, process, 0);
    }

    // ---- the flusher ----

    fn ensure_periodic(&mut self, now: Instant) {
        if self.writeback.flusher.periodic_at.is_none() {
            self.writeback.flusher.periodic_at = Some(now + self.writeback.writeback_interval);
        }
    }

    /// The flusher's next move: background write-back above the threshold, unless it waits
    /// for a pass to be accepted or for congestion to clear.
    fn flusher_run(&mut self, now: Instant) {
        if self.writeback.flusher.batch.is_some()
            || self.writeback.flusher.until.is_some_and(|until| until > now)
        {
            return;
        }
        self.writeback.flusher.until = None;
        if self.cache.dirty_pages() <= self.writeback.background_limit_pages {
            return;
        }
        let Some(space) = self.oldest_dirty_space() else { return };
        self.flusher_pass(now, space);
    }

    fn flusher_pass(&mut self, now: Instant, space: SpaceId) {
        let device = self.spaces[space as usize].device;
        if self.writeback.congested[device] {
            // Non-blocking write-back backs off a congested queue (`congestion_wait`).
            self.writeback.flusher.until = Some(now + CONGESTION_WAIT);
            return;
        }
        let (batch, pages) = self.writeback_space(
            space,
            FLUSHER_PAGES_PER_PASS,
            FLUSHER,
            IoPriority::DEFAULT,
            RequestFlags::NONE,
            WritebackOwner::Flusher,
        );
        if pages > 0 {
            self.writeback.flusher.batch = Some(batch);
            self.stats.flusher_passes += 1;
        }
    }

    /// The periodic write-back: files dirty for longer than `dirty_expire`.
    fn periodic(&mut self, now: Instant) {
        self.writeback.flusher.periodic_at = None;
        if self.cache.dirty_pages() == 0 {
            return;
        }
        self.writeback.flusher.periodic_at = Some(now + self.writeback.writeback_interval);
        if self.writeback.flusher.batch.is_some() {
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
                        .is_some_and(|at| now.saturating_since(at) >= self.writeback.dirty_expire)
            })
            .min_by_key(|(index, space)| (space.dirtied_at, *index))
            .map(|(index, _)| index as SpaceId);
        if let Some(space) = expired {
            self.flusher_pass(now, space);
        } else {
            self.flusher_run(now);
        }
    }
}
