//! The page cache, kept in chunks.
//!
//! Pages are 4 KiB, as on x86; the cache tracks them 64 at a time in 256 KiB **chunks**, each
//! with bitmaps of the pages that are up to date, dirty, being read and being written back. A
//! chunk costs a few dozen bytes, so the 12 GiB of a 2007 file server's page cache need a few
//! megabytes of simulator memory, whatever the amount of data that passes through it. Reads,
//! writes and write-back stay page-exact; only the LRU works on whole chunks (a deviation: the
//! kernel ages pages one by one), which costs nothing for the streaming tools of the study.
//!
//! Chunks are looked up by (space, chunk number), where a space is a file or a raw block device,
//! and kept on one LRU list. Only clean chunks with nothing in flight can be evicted; when a new
//! chunk is needed and every chunk is dirty or busy, the cache grows past its bound — the dirty
//! thresholds keep that from happening in practice.

use std::cell::Cell;

use rustc_hash::FxBuildHasher;

use elevator_core::Instant;

/// Bytes in a page.
pub(crate) const PAGE_BYTES: u64 = 4096;
/// Pages in a chunk.
pub(crate) const CHUNK_PAGES: u64 = 64;
// A chunk's page bitmaps are `u64`s: one bit per page.
const _: () = assert!(CHUNK_PAGES == u64::BITS as u64);
/// Bytes in a chunk.
pub(crate) const CHUNK_BYTES: u64 = PAGE_BYTES * CHUNK_PAGES;

/// A file or a raw block device: the owner of cached pages.
pub(crate) type SpaceId = u32;

const NIL: u32 = u32::MAX;

/// One chunk's state. Bit i of each mask is page i of the chunk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk {
    pub(crate) space: SpaceId,
    pub(crate) number: u64,
    /// Pages holding current data.
    pub(crate) uptodate: u64,
    /// Pages newer than the device's copy.
    pub(crate) dirty: u64,
    /// Pages being read from the device.
    pub(crate) reading: u64,
    /// Pages being written to the device.
    pub(crate) writeback: u64,
    /// When the oldest dirty page of the chunk was dirtied.
    pub(crate) dirtied_at: Instant,
    prev: u32,
    next: u32,
    live: bool,
}

impl Chunk {
    fn evictable(&self) -> bool {
        self.dirty == 0 && self.reading == 0 && self.writeback == 0
    }
}

/// The bit mask of pages `first..end` within a chunk (0 ≤ first ≤ end ≤ 64).
pub(crate) fn page_mask(first: u64, end: u64) -> u64 {
    debug_assert!(first <= end && end <= CHUNK_PAGES);
    if first == end {
        return 0;
    }
    let width = end - first;
    let ones = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
    ones << first
}

// Lookup only, never iterated: hash order cannot leak into a run.
#[allow(clippy::disallowed_types)]
type LeafMap = std::collections::HashMap<(SpaceId, u64), u32, FxBuildHasher>;

/// Chunk numbers per index leaf: 32 chunks, 8 MiB of a file.
const LEAF_CHUNKS: u64 = 32;

/// One leaf of the chunk index: the slots of `LEAF_CHUNKS` consecutive chunks of a space.
#[derive(Clone, Debug)]
struct Leaf {
    slots: [u32; LEAF_CHUNKS as usize],
    /// Slots that are not `NIL`; the leaf is freed when none is left.
    live: u32,
}

/// Chunk → slot, in two levels as the kernel's page-cache radix tree (`struct address_space`'s
/// `i_pages`) is: a small map from (space, chunk / 32) to a leaf, and the leaf's array. A
/// streaming workload inserts and evicts neighbouring chunks, which share a leaf that stays in
/// the processor's cache; one flat map of every chunk instead made each eviction a cache miss
/// (a sixth of the classic study's iozone run in its profile). Lookup only, never iterated.
#[derive(Debug, Default)]
struct ChunkIndex {
    leaf_of: LeafMap,
    leaves: Vec<Leaf>,
    free_leaves: Vec<u32>,
    /// The leaf found last, as `(space, chunk / LEAF_CHUNKS, leaf)`: a streaming reader or
    /// writer looks up one chunk after its neighbour, in the same leaf, many times over, and
    /// this spares the map for those (forgotten when its leaf is freed).
    last: Cell<Option<(SpaceId, u64, u32)>>,
}

impl ChunkIndex {
    fn leaf(&self, space: SpaceId, leaf_number: u64) -> Option<u32> {
        if let Some((last_space, last_number, leaf)) = self.last.get()
            && last_space == space
            && last_number == leaf_number
        {
            return Some(leaf);
        }
        let leaf = *self.leaf_of.get(&(space, leaf_number))?;
        self.last.set(Some((space, leaf_number, leaf)));
        Some(leaf)
    }

    fn get(&self, space: SpaceId, number: u64) -> Option<u32> {
        let leaf = self.leaf(space, number / LEAF_CHUNKS)?;
        let slot = self.leaves[leaf as usize].slots[(number % LEAF_CHUNKS) as usize];
        (slot != NIL).then_some(slot)
    }

    /// Maps a chunk that is not in the index yet.
    fn insert(&mut self, space: SpaceId, number: u64, slot: u32) {
        let leaves = &mut self.leaves;
        let free_leaves = &mut self.free_leaves;
        let leaf = *self.leaf_of.entry((space, number / LEAF_CHUNKS)).or_insert_with(|| {
            let empty = Leaf { slots: [NIL; LEAF_CHUNKS as usize], live: 0 };
            match free_leaves.pop() {
                Some(leaf) => {
                    leaves[leaf as usize] = empty;
                    leaf
                }
                None => {
                    leaves.push(empty);
                    (leaves.len() - 1) as u32
                }
            }
        });
        let leaf = &mut self.leaves[leaf as usize];
        let entry = &mut leaf.slots[(number % LEAF_CHUNKS) as usize];
        debug_assert_eq!(*entry, NIL, "chunk ({space}, {number}) is indexed once");
        *entry = slot;
        leaf.live += 1;
    }

    /// Unmaps a chunk that is in the index.
    fn remove(&mut self, space: SpaceId, number: u64) {
        let key = (space, number / LEAF_CHUNKS);
        let leaf_index = self.leaf(space, key.1).expect("an indexed chunk has a leaf");
        let leaf = &mut self.leaves[leaf_index as usize];
        let entry = &mut leaf.slots[(number % LEAF_CHUNKS) as usize];
        debug_assert_ne!(*entry, NIL, "chunk ({space}, {number}) is indexed");
        *entry = NIL;
        leaf.live -= 1;
        if leaf.live == 0 {
            self.leaf_of.remove(&key);
            self.free_leaves.push(leaf_index);
            if self.last.get().is_some_and(|(_, _, leaf)| leaf == leaf_index) {
                self.last.set(None);
            }
        }
    }
}

/// The page cache.
#[derive(Debug)]
pub(crate) struct PageCache {
    chunks: Vec<Chunk>,
    free: Vec<u32>,
    index: ChunkIndex,
    /// LRU list: head is the least recently used.
    head: u32,
    tail: u32,
    live_count: u64,
    capacity_chunks: u64,
    dirty_pages: u64,
    writeback_pages: u64,
    /// Chunks evicted.
    pub(crate) evictions: u64,
}

impl PageCache {
    /// A cache of at most `capacity_bytes` of pages.
    pub(crate) fn new(capacity_bytes: u64) -> PageCache {
        PageCache {
            chunks: Vec::new(),
            free: Vec::new(),
            index: ChunkIndex::default(),
            head: NIL,
            tail: NIL,
            live_count: 0,
            capacity_chunks: (capacity_bytes / CHUNK_BYTES).max(1),
            dirty_pages: 0,
            writeback_pages: 0,
            evictions: 0,
        }
    }

    /// Pages the cache can hold.
    pub(crate) fn capacity_pages(&self) -> u64 {
        self.capacity_chunks * CHUNK_PAGES
    }

    /// Dirty pages.
    pub(crate) fn dirty_pages(&self) -> u64 {
        self.dirty_pages
    }

    /// Pages being written back.
    pub(crate) fn writeback_pages(&self) -> u64 {
        self.writeback_pages
    }

    /// Chunks held.
    pub(crate) fn chunk_count(&self) -> u64 {
        self.live_count
    }

    /// The chunk's slot, if cached.
    pub(crate) fn find(&self, space: SpaceId, number: u64) -> Option<u32> {
        self.index.get(space, number)
    }

    /// The chunk in `slot`.
    pub(crate) fn chunk(&self, slot: u32) -> &Chunk {
        &self.chunks[slot as usize]
    }

    /// The chunk's slot, creating it (and evicting the least recently used clean chunk if the
    /// cache is full). Marks it most recently used.
    pub(crate) fn get_or_insert(&mut self, space: SpaceId, number: u64) -> u32 {
        if let Some(slot) = self.find(space, number) {
            self.touch(slot);
            return slot;
        }
        // Back down to the capacity, not just one chunk: chunks pinned by reads or
        // write-back may have pushed the cache over it, and it must not stay over once
        // they are released.
        while self.live_count >= self.capacity_chunks && self.evict_one() {}
        let chunk = Chunk {
            space,
            number,
            uptodate: 0,
            dirty: 0,
            reading: 0,
            writeback: 0,
            dirtied_at: Instant::ZERO,
            prev: NIL,
            next: NIL,
            live: true,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.chunks[slot as usize] = chunk;
                slot
            }
            None => {
                self.chunks.push(chunk);
                (self.chunks.len() - 1) as u32
            }
        };
        self.index.insert(space, number, slot);
        self.live_count += 1;
        self.link_tail(slot);
        slot
    }

    /// Marks `slot` most recently used.
    pub(crate) fn touch(&mut self, slot: u32) {
        self.unlink(slot);
        self.link_tail(slot);
    }

    /// Evicts the least recently used chunk that can go; false if none can. Dirty and busy
    /// chunks met on the way are rotated to the tail, as the kernel rotates pages under
    /// write-back, so the next eviction does not walk past them again.
    fn evict_one(&mut self) -> bool {
        for _ in 0..self.live_count {
            let slot = self.head;
            if slot == NIL {
                return false;
            }
            if self.chunks[slot as usize].evictable() {
                self.remove(slot);
                self.evictions += 1;
                return true;
            }
            self.touch(slot);
        }
        false
    }

    fn remove(&mut self, slot: u32) {
        let chunk = self.chunks[slot as usize];
        debug_assert!(chunk.live && chunk.evictable());
        self.unlink(slot);
        self.index.remove(chunk.space, chunk.number);
        self.chunks[slot as usize].live = false;
        self.free.push(slot);
        self.live_count -= 1;
    }

    fn unlink(&mut self, slot: u32) {
        let Chunk { prev, next, .. } = self.chunks[slot as usize];
        match prev {
            NIL => self.head = next,
            prev => self.chunks[prev as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            next => self.chunks[next as usize].prev = prev,
        }
        self.chunks[slot as usize].prev = NIL;
        self.chunks[slot as usize].next = NIL;
    }

    fn link_tail(&mut self, slot: u32) {
        self.chunks[slot as usize].prev = self.tail;
        self.chunks[slot as usize].next = NIL;
        match self.tail {
            NIL => self.head = slot,
            tail => self.chunks[tail as usize].next = slot,
        }
        self.tail = slot;
    }

    /// Pages of `mask` in `slot` now hold current data.
    #[cfg(test)]
    pub(crate) fn set_uptodate(&mut self, slot: u32, mask: u64) {
        self.chunks[slot as usize].uptodate |= mask;
    }

    /// Marks pages as being read (they are then not read again by someone else).
    pub(crate) fn start_read(&mut self, slot: u32, mask: u64) {
        self.chunks[slot as usize].reading |= mask;
    }

    /// A read of `mask` finished: the pages are up to date.
    pub(crate) fn finish_read(&mut self, slot: u32, mask: u64) {
        let chunk = &mut self.chunks[slot as usize];
        chunk.reading &= !mask;
        chunk.uptodate |= mask;
    }

    /// Pages of `mask` were written to at `now`: up to date and dirty.
    pub(crate) fn dirty(&mut self, slot: u32, mask: u64, now: Instant) {
        let chunk = &mut self.chunks[slot as usize];
        let newly = mask & !chunk.dirty;
        if chunk.dirty == 0 {
            chunk.dirtied_at = now;
        }
        chunk.dirty |= mask;
        chunk.uptodate |= mask;
        self.dirty_pages += u64::from(newly.count_ones());
    }

    /// Starts writing back the dirty pages of `mask`: they are clean from now on (a write after
    /// this dirties them again), and in flight until [`PageCache::finish_writeback`]. Returns
    /// how many pages were cleaned and how many of them were not already under write-back.
    ///
    /// A page written again while its write-back is in flight is written back a second time;
    /// it counts once under write-back (it is one page, and the first completion clears it),
    /// or the count would never come back to zero and an fsync waiting for it would stall
    /// (sweep seed 189).
    pub(crate) fn start_writeback(&mut self, slot: u32, mask: u64) -> (u64, u64) {
        let chunk = &mut self.chunks[slot as usize];
        let pages = mask & chunk.dirty;
        let newly = pages & !chunk.writeback;
        chunk.dirty &= !pages;
        chunk.writeback |= pages;
        let (cleaned, started) = (u64::from(pages.count_ones()), u64::from(newly.count_ones()));
        self.dirty_pages -= cleaned;
        self.writeback_pages += started;
        (cleaned, started)
    }

    /// A write-back of `mask` finished.
    pub(crate) fn finish_writeback(&mut self, slot: u32, mask: u64) {
        let chunk = &mut self.chunks[slot as usize];
        let pages = mask & chunk.writeback;
        chunk.writeback &= !pages;
        self.writeback_pages -= u64::from(pages.count_ones());
    }

    /// Drops the clean, idle pages of `space` (all spaces if `None`); returns chunks dropped.
    pub(crate) fn drop_clean(&mut self, space: Option<SpaceId>) -> u64 {
        let mut dropped = 0;
        let mut slot = self.head;
        while slot != NIL {
            let chunk = self.chunks[slot as usize];
            let next = chunk.next;
            if space.is_none_or(|space| chunk.space == space) {
                if chunk.evictable() {
                    self.remove(slot);
                    dropped += 1;
                } else {
                    // Keep the dirty and busy pages; forget the clean ones.
                    let keep = chunk.dirty | chunk.reading | chunk.writeback;
                    self.chunks[slot as usize].uptodate &= keep;
                }
            }
            slot = next;
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_cover_page_ranges() {
        assert_eq!(page_mask(0, 64), u64::MAX);
        assert_eq!(page_mask(0, 1), 1);
        assert_eq!(page_mask(63, 64), 1 << 63);
        assert_eq!(page_mask(4, 8), 0xf0);
        assert_eq!(page_mask(3, 3), 0);
    }

    // Proves the two-level chunk index answers as a flat map would: chunks in two spaces and
    // across leaf boundaries are found at their own slots, a removed chunk is gone while its
    // leaf neighbours stay, and a leaf emptied and recycled for other chunks keeps none of its
    // old mappings.
    #[test]
    fn chunk_index_maps_like_a_flat_map() {
        let mut index = ChunkIndex::default();
        let mut reference = std::collections::BTreeMap::new();
        let mut slot = 0;
        for space in [1, 2] {
            for number in (LEAF_CHUNKS - 3..LEAF_CHUNKS + 3).chain([5 * LEAF_CHUNKS, u64::MAX]) {
                index.insert(space, number, slot);
                reference.insert((space, number), slot);
                slot += 1;
            }
        }
        let check = |index: &ChunkIndex,
                     reference: &std::collections::BTreeMap<(u32, u64), u32>| {
            for space in [1, 2, 3] {
                for number in (0..8 * LEAF_CHUNKS).chain([u64::MAX - 1, u64::MAX]) {
                    assert_eq!(
                        index.get(space, number),
                        reference.get(&(space, number)).copied(),
                        "chunk ({space}, {number})"
                    );
                }
            }
        };
        check(&index, &reference);
        // Empty the first leaf of space 1 (its three chunks) and one chunk of the next leaf.
        for number in [LEAF_CHUNKS - 3, LEAF_CHUNKS - 2, LEAF_CHUNKS - 1, LEAF_CHUNKS + 1] {
            index.remove(1, number);
            reference.remove(&(1, number));
        }
        check(&index, &reference);
        // The freed leaf is reused for another space's chunks.
        for number in [7 * LEAF_CHUNKS, 7 * LEAF_CHUNKS + 4] {
            index.insert(3, number, slot);
            reference.insert((3, number), slot);
            slot += 1;
        }
        assert_eq!(index.free_leaves.len(), 0, "the emptied leaf was recycled");
        check(&index, &reference);
    }

    // Proves the remembered leaf goes with its leaf: once the last chunk of a leaf that was
    // just looked up leaves and the leaf is reused for another space's chunk at the same
    // place, the first space's chunk is not found through the remembered leaf.
    #[test]
    fn a_freed_leaf_is_not_found_through_the_remembered_one() {
        let mut index = ChunkIndex::default();
        index.insert(1, 5, 10);
        assert_eq!(index.get(1, 5), Some(10));
        index.remove(1, 5);
        assert_eq!(index.get(1, 5), None);
        index.insert(2, 5, 11);
        assert_eq!(index.free_leaves.len(), 0, "the emptied leaf was recycled");
        assert_eq!(index.get(1, 5), None);
        assert_eq!(index.get(2, 5), Some(11));
        assert_eq!(index.get(1, 5), None);
    }

    // Proves the bound: a full cache evicts its least recently used clean chunk, never a dirty
    // one, and a touched chunk survives.
    #[test]
    fn eviction_takes_the_least_recently_used_clean_chunk() {
        let mut cache = PageCache::new(3 * CHUNK_BYTES);
        let a = cache.get_or_insert(1, 0);
        cache.dirty(a, u64::MAX, Instant::ZERO);
        let b = cache.get_or_insert(1, 1);
        cache.set_uptodate(b, u64::MAX);
        let c = cache.get_or_insert(1, 2);
        cache.set_uptodate(c, u64::MAX);
        cache.touch(b);
        cache.get_or_insert(1, 3);
        assert!(cache.find(1, 0).is_some(), "dirty chunks stay");
        assert!(cache.find(1, 2).is_none(), "c was the least recently used clean chunk");
        assert!(cache.find(1, 1).is_some());
        assert_eq!(cache.chunk_count(), 3);
        assert_eq!(cache.dirty_pages(), 64);
    }

    // Proves the cache returns to its bound: chunks pinned by reads push it over, and once
    // they are released the next insertion evicts back down to the capacity, not one chunk.
    #[test]
    fn an_overcommitted_cache_shrinks_back_to_its_capacity() {
        let mut cache = PageCache::new(2 * CHUNK_BYTES);
        let pinned: Vec<u32> = (0..6)
            .map(|number| {
                let slot = cache.get_or_insert(1, number);
                cache.start_read(slot, u64::MAX);
                slot
            })
            .collect();
        assert_eq!(cache.chunk_count(), 6, "reading chunks cannot be evicted");
        for slot in pinned {
            cache.finish_read(slot, u64::MAX);
        }
        cache.get_or_insert(1, 100);
        assert_eq!(cache.chunk_count(), 2);
        assert!(cache.find(1, 100).is_some() && cache.find(1, 5).is_some(), "the newest stay");
    }

    // Proves dirty and write-back accounting: writing back cleans pages, a re-dirty during
    // write-back counts again, and dropping caches keeps dirty data.
    #[test]
    fn dirty_and_writeback_accounting() {
        let mut cache = PageCache::new(16 * CHUNK_BYTES);
        let slot = cache.get_or_insert(7, 0);
        cache.dirty(slot, 0x00ff, Instant::ZERO);
        cache.start_writeback(slot, 0x00ff);
        assert_eq!((cache.dirty_pages(), cache.writeback_pages()), (0, 8));
        cache.dirty(slot, 0x0001, Instant::ZERO);
        assert_eq!(cache.dirty_pages(), 1);
        cache.finish_writeback(slot, 0x00ff);
        assert_eq!(cache.writeback_pages(), 0);
        assert_eq!(cache.drop_clean(None), 0, "a chunk with a dirty page stays");
        assert_eq!(cache.chunk(slot).uptodate, 0x0001, "its clean pages are forgotten");
    }

    // Proves a page written again and written back again while its first write-back is in
    // flight counts once under write-back, so the count returns to zero when it completes
    // (sweep seed 189: the count stayed at 1 and an fsync waited for it forever).
    #[test]
    fn regression_seed_189_writeback_of_a_page_under_writeback_counts_once() {
        let mut cache = PageCache::new(16 * CHUNK_BYTES);
        let slot = cache.get_or_insert(7, 0);
        cache.dirty(slot, 0x0003, Instant::ZERO);
        assert_eq!(cache.start_writeback(slot, 0x0003), (2, 2));
        cache.dirty(slot, 0x0002, Instant::ZERO);
        assert_eq!(cache.start_writeback(slot, 0x0002), (1, 0), "cleaned, already in flight");
        assert_eq!((cache.dirty_pages(), cache.writeback_pages()), (0, 2));
        cache.finish_writeback(slot, 0x0003);
        cache.finish_writeback(slot, 0x0002);
        assert_eq!(cache.writeback_pages(), 0);
    }
}
