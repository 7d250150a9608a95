//! The initiator's ZFS: where a file's records lie on the pool's LUNs, the prefetcher that
//! reads ahead of a sequential reader, and the per-LUN queue that decides how many reads are
//! out at the target at once (`workload-mechanisms.md` §3.3, OpenSolaris/Solaris 10 ZFS of
//! 2006-2009; ZFS on Linux was not in production use before about 2011).
//!
//! * **Layout.** A pool of `mirrors` top-level mirror vdevs of `ways` LUNs each. A file written
//!   sequentially is a chain of `recordsize` records; the allocation rotor stays on one
//!   top-level vdev until it has allocated its aliquot there — `metaslab_aliquot` (512 KiB)
//!   times its number of children, 1 MiB for a two-way mirror — then moves to the next
//!   (`metaslab_alloc_dva`; the ±25 % bias is 0 on a balanced pool). Within a vdev an empty
//!   pool allocates in address order. A LUN's address is the vdev offset plus the 4 MiB of
//!   front labels and boot block every leaf vdev carries (ZFS On-Disk Specification, 2006,
//!   §1.2: two 256 KiB labels and a 3.5 MiB boot block).
//! * **Mirror reads** go to one child: (vdev offset >> 21) mod children, so the side alternates
//!   every 2 MiB of offset (`vdev_mirror.c`, `vdev_mirror_shift`).
//! * **Prefetch** (`dmu_zfetch.c` before its 2015 rewrite): each block a `read()` reaches is
//!   reported with whether it was already cached or being read; a read that continues a stream
//!   grows it by one block and fetches ahead of it, the cap doubling at each hit up to
//!   `zfetch_block_cap` = 256 blocks; a block that fits no stream starts one (at most
//!   `zfetch_max_streams` = 8 per file, and no more than one per 256 blocks of file), reusing
//!   one idle for more than `zfetch_min_sec_reap` = 2 whole seconds; reads larger than
//!   `zfetch_array_rd_sz` = 1 MiB do not prefetch. Prefetches are async-priority reads.
//! * **Per-LUN queue** (`vdev_queue.c`): a new I/O is issued at once only while fewer than
//!   `zfs_vdev_min_pending` = 4 are pending; each completion issues up to `zfs_vdev_ramp_rate`
//!   = 2 more while fewer than `zfs_vdev_max_pending` (35 up to ONNV 2009-10-15, 10 after) are
//!   pending. The queued I/O issued next is the first in (deadline, offset) order, deadline =
//!   (lbolt >> `zfs_vdev_time_shift` 6) + priority, lbolt counting Solaris's default 100 Hz
//!   ticks; priorities from `zio_priority_table` (ZFS `zio.c`, 2007-2008): sync read 0, async
//!   read 6. Aggregation stops at 128 KiB, so 128 KiB records are never joined.
//!
//! # Deviations from ZFS
//!
//! * Reads only: writes, the ZIL, transaction groups and metadata (indirect blocks, dnodes) are
//!   not modelled; the files are laid out before the run as one writer of an empty pool would
//!   have left them.
//! * The ARC is large enough for what is read ahead and nothing is evicted or re-read; its
//!   lookups cost no time, nor does the copy to the reader.
//! * Prefetch follows forward sequential streams only: strided and backward streams and the
//!   co-linear stream merge (`dmu_zfetch_colinear`) are not modelled (the study's readers are
//!   forward sequential).
//! * A block being read counts as cached for the prefetcher (`ARC_CACHED` is set for a header
//!   with an I/O in progress).

use std::collections::BTreeSet;

use elevator_core::{Duration, Instant};

/// The bytes in front of every leaf vdev's data: labels L0 and L1 and the boot block.
pub const LABEL_START_BYTES: u64 = 4 << 20;
/// The bytes at the end of every leaf vdev: labels L2 and L3.
pub const LABEL_END_BYTES: u64 = 512 << 10;
/// `metaslab_aliquot`: bytes a top-level vdev takes per child before the rotor moves on.
pub const METASLAB_ALIQUOT_BYTES: u64 = 512 << 10;
/// `vdev_mirror_shift`: mirror reads change side every 2^21 bytes of offset.
pub const MIRROR_SHIFT: u32 = 21;
/// `zfetch_max_streams`.
pub const ZFETCH_MAX_STREAMS: usize = 8;
/// `zfetch_block_cap`: the most blocks a stream fetches ahead.
pub const ZFETCH_BLOCK_CAP: u64 = 256;
/// `zfetch_min_sec_reap`: whole seconds a stream must be idle beyond before it is reused.
pub const ZFETCH_MIN_SEC_REAP: u64 = 2;
/// `zfetch_array_rd_sz`: reads larger than this do not prefetch.
pub const ZFETCH_ARRAY_READ_BYTES: u64 = 1 << 20;
/// `zfs_vdev_time_shift`.
pub const VDEV_TIME_SHIFT: u32 = 6;
/// Solaris's clock tick (`hz` = 100 by default): what `lbolt` counts.
pub const SOLARIS_TICK: Duration = Duration::from_millis(10);
/// `zio_priority_table[ZIO_PRIORITY_SYNC_READ]`.
pub const PRIORITY_SYNC_READ: u64 = 0;
/// `zio_priority_table[ZIO_PRIORITY_ASYNC_READ]`.
pub const PRIORITY_ASYNC_READ: u64 = 6;

/// Where one record lies: its top-level vdev and the offset within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordPlace {
    /// The top-level (mirror) vdev.
    pub vdev: u32,
    /// Bytes from the start of the vdev's allocatable space.
    pub offset_bytes: u64,
}

/// The pool: its shape and every file's records.
#[derive(Clone, Debug)]
pub struct Pool {
    /// Top-level mirror vdevs.
    pub mirrors: u32,
    /// LUNs per mirror.
    pub ways: u32,
    /// Bytes per record.
    pub record_bytes: u64,
    /// Each file's records, in file order.
    files: Vec<Vec<RecordPlace>>,
}

impl Pool {
    /// Lays out `file_bytes` files, in order, as one sequential writer of an empty pool would;
    /// `lun_bytes` is each LUN's capacity. `Err` says why they do not fit.
    pub fn lay_out(
        mirrors: u32,
        ways: u32,
        record_bytes: u64,
        lun_bytes: u64,
        file_bytes: &[u64],
    ) -> Result<Pool, String> {
        let usable_bytes = lun_bytes.saturating_sub(LABEL_START_BYTES + LABEL_END_BYTES);
        let aliquot_bytes = METASLAB_ALIQUOT_BYTES * u64::from(ways.max(1));
        let mut next_offset = vec![0u64; mirrors as usize];
        let (mut rotor, mut in_group_bytes) = (0usize, 0u64);
        let mut files = Vec::with_capacity(file_bytes.len());
        for (index, &bytes) in file_bytes.iter().enumerate() {
            let records = bytes.div_ceil(record_bytes);
            let mut places = Vec::with_capacity(records as usize);
            for _ in 0..records {
                if in_group_bytes >= aliquot_bytes {
                    rotor = (rotor + 1) % mirrors as usize;
                    in_group_bytes = 0;
                }
                if next_offset[rotor] + record_bytes > usable_bytes {
                    return Err(format!(
                        "file {index} does not fit: the pool's {mirrors} mirrors of {} bytes \
                         each are full",
                        usable_bytes
                    ));
                }
                places.push(RecordPlace { vdev: rotor as u32, offset_bytes: next_offset[rotor] });
                next_offset[rotor] += record_bytes;
                in_group_bytes += record_bytes;
            }
            files.push(places);
        }
        Ok(Pool { mirrors, ways, record_bytes, files })
    }

    /// Files laid out.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Records of `file`.
    pub fn records(&self, file: usize) -> u64 {
        self.files[file].len() as u64
    }

    /// Where record `record` of `file` lies.
    pub fn place(&self, file: usize, record: u64) -> RecordPlace {
        self.files[file][record as usize]
    }

    /// The LUN a read of `place` goes to (the mirror child by offset) and the byte address on
    /// it.
    pub fn read_target(&self, place: RecordPlace) -> (usize, u64) {
        let child = (place.offset_bytes >> MIRROR_SHIFT) % u64::from(self.ways);
        let lun = place.vdev as usize * self.ways as usize + child as usize;
        (lun, LABEL_START_BYTES + place.offset_bytes)
    }
}

/// One prefetch stream (`zstream_t`), forward only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stream {
    /// First block of the stream's window.
    offset: u64,
    /// Blocks in the window.
    len: u64,
    /// Blocks between prefetch chunks (equal to `len` for a sequential stream).
    stride: u64,
    /// The block after the last one prefetched.
    prefetched_to: u64,
    /// Blocks fetched ahead, doubling per hit up to the cap.
    cap: u64,
    /// When the stream last fetched.
    last: Instant,
}

/// A file's prefetcher (`zfetch_t`).
#[derive(Clone, Debug, Default)]
pub struct Zfetch {
    /// Streams, newest first (`list_insert_head`).
    streams: Vec<Stream>,
}

impl Zfetch {
    /// Block `block` of a file of `blocks` blocks is being read; `cached` says whether it was
    /// in the cache or being read already. Appends the block ranges to prefetch, `(first,
    /// count)`, to `fetch` (`dmu_zfetch`).
    pub fn access(
        &mut self,
        now: Instant,
        block: u64,
        cached: bool,
        blocks: u64,
        fetch: &mut Vec<(u64, u64)>,
    ) {
        let last_block = blocks.saturating_sub(1);
        let mut found = None;
        for (index, stream) in self.streams.iter_mut().enumerate() {
            if stream.len == 0 {
                continue;
            }
            // Inside the window and already fetched: nothing to do.
            if cached && block >= stream.offset && block < stream.offset + stream.len {
                return;
            }
            if block == stream.offset + stream.len {
                // The forward sequential case: a miss in a stream longer than one block
                // resets it (the prefetch fell behind).
                let reset = !cached && stream.len > 1;
                stream.len += 1;
                if stream.len > ZFETCH_BLOCK_CAP {
                    let over = stream.len - ZFETCH_BLOCK_CAP;
                    stream.offset += over;
                    stream.len -= over;
                }
                found = Some((index, reset));
                break;
            }
        }
        match found {
            Some((index, true)) => {
                self.streams.remove(index);
            }
            Some((index, false)) => {
                let stream = &mut self.streams[index];
                Self::fetch_ahead(stream, now, last_block, fetch);
            }
            None => self.start_stream(now, block, blocks),
        }
    }

    /// `dmu_zfetch_dofetch` for a forward stream.
    fn fetch_ahead(
        stream: &mut Stream,
        now: Instant,
        last_block: u64,
        fetch: &mut Vec<(u64, u64)>,
    ) {
        stream.stride = stream.stride.max(stream.len);
        stream.cap = (2 * stream.cap).min(ZFETCH_BLOCK_CAP);
        let mut tail = stream.prefetched_to.max(stream.offset + stream.stride);
        let limit = stream.offset + stream.len + stream.cap * stream.stride / stream.len;
        while tail < limit {
            // `dmu_zfetch_fetchsz`: nothing past the last block, and a chunk reaching it
            // is cut there.
            let count = if tail > last_block {
                0
            } else if tail + stream.len + 1 > last_block {
                last_block - tail + 1
            } else {
                stream.len
            };
            if count > 0 {
                fetch.push((tail, count));
            }
            tail += stream.stride;
            if count < stream.len {
                break;
            }
        }
        stream.prefetched_to = tail;
        stream.last = now;
    }

    /// A block that continues no stream starts one, if a slot is free or an old one can go.
    fn start_stream(&mut self, now: Instant, block: u64, blocks: u64) {
        let reap_after_s = ZFETCH_MIN_SEC_REAP;
        let idle_s = |stream: &Stream| (now.as_nanos() - stream.last.as_nanos()) / 1_000_000_000;
        if let Some(old) = self.streams.iter().position(|stream| idle_s(stream) > reap_after_s) {
            self.streams.remove(old);
        } else {
            let max_streams =
                (ZFETCH_MAX_STREAMS as u64).min(blocks.saturating_sub(1) / ZFETCH_BLOCK_CAP).max(1);
            if self.streams.len() as u64 >= max_streams {
                return;
            }
        }
        let stream = Stream {
            offset: block,
            len: 1,
            stride: 1,
            prefetched_to: block + 1,
            cap: 1,
            last: now,
        };
        self.streams.insert(0, stream);
    }
}

/// A read queued at a LUN: its order key and the caller's token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Queued {
    deadline: u64,
    offset_bytes: u64,
    token: u64,
}

/// One LUN's queue (`vdev_queue_t`).
#[derive(Clone, Debug, Default)]
pub struct VdevQueue {
    queued: BTreeSet<Queued>,
    /// Reads issued and not yet done.
    pub pending: u32,
    /// Most pending at once.
    pub pending_peak: u32,
}

/// `zfs_vdev_*` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VdevLimits {
    /// `zfs_vdev_min_pending`.
    pub min_pending: u32,
    /// `zfs_vdev_max_pending`.
    pub max_pending: u32,
    /// `zfs_vdev_ramp_rate`.
    pub ramp_rate: u32,
}

impl VdevQueue {
    /// Queues a read of `offset_bytes` at `priority` (`vdev_queue_io`); appends the tokens of
    /// the reads to issue now to `issue`.
    pub fn add(
        &mut self,
        now: Instant,
        offset_bytes: u64,
        priority: u64,
        token: u64,
        limits: VdevLimits,
        issue: &mut Vec<u64>,
    ) {
        let ticks = now.as_nanos() / SOLARIS_TICK.as_nanos();
        let deadline = (ticks >> VDEV_TIME_SHIFT) + priority;
        self.queued.insert(Queued { deadline, offset_bytes, token });
        self.issue_up_to(limits.min_pending, 1, issue);
    }

    /// A read is done (`vdev_queue_io_done`); appends the tokens to issue now to `issue`.
    pub fn done(&mut self, limits: VdevLimits, issue: &mut Vec<u64>) {
        self.pending -= 1;
        self.issue_up_to(limits.max_pending, limits.ramp_rate, issue);
    }

    /// Reads queued, not issued.
    pub fn queued(&self) -> usize {
        self.queued.len()
    }

    /// Issues up to `count` reads while fewer than `limit` are pending.
    fn issue_up_to(&mut self, limit: u32, count: u32, issue: &mut Vec<u64>) {
        for _ in 0..count {
            if self.pending >= limit {
                return;
            }
            let Some(first) = self.queued.pop_first() else { return };
            self.pending += 1;
            self.pending_peak = self.pending_peak.max(self.pending);
            issue.push(first.token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const RECORD: u64 = 128 << 10;

    // Proves the rotor: a two-way mirror takes 1 MiB (8 records) before the next vdev does,
    // each vdev fills in address order, and a second file continues where the first ended.
    #[test]
    fn records_alternate_between_mirrors_every_aliquot() {
        let pool = Pool::lay_out(2, 2, RECORD, 100 * MIB, &[4 * MIB, 2 * MIB]).unwrap();
        let vdevs: Vec<u32> = (0..32).map(|r| pool.place(0, r).vdev).collect();
        assert_eq!(vdevs[..8], [0; 8]);
        assert_eq!(vdevs[8..16], [1; 8]);
        assert_eq!(vdevs[16..24], [0; 8]);
        assert_eq!(pool.place(0, 16).offset_bytes, MIB);
        assert_eq!(pool.place(0, 9).offset_bytes, RECORD);
        // File 1 starts on vdev 0 (file 0's 32 records ended a group on vdev 1) after 2 MiB.
        assert_eq!(pool.place(1, 0), RecordPlace { vdev: 0, offset_bytes: 2 * MIB });
        assert!(Pool::lay_out(2, 2, RECORD, 8 * MIB, &[8 * MIB]).is_err());
    }

    // Proves mirror reads change side every 2 MiB of vdev offset and LUN addresses skip the
    // front labels.
    #[test]
    fn mirror_reads_alternate_sides_every_two_mib() {
        let pool = Pool::lay_out(2, 2, RECORD, 100 * MIB, &[16 * MIB]).unwrap();
        let at = |vdev, offset_bytes| pool.read_target(RecordPlace { vdev, offset_bytes });
        assert_eq!(at(0, 0), (0, LABEL_START_BYTES));
        assert_eq!(at(0, 2 * MIB - RECORD).0, 0);
        assert_eq!(at(0, 2 * MIB), (1, LABEL_START_BYTES + 2 * MIB));
        assert_eq!(at(1, 4 * MIB).0, 2);
        assert_eq!(at(1, 6 * MIB).0, 3);
    }

    // Proves the prefetcher's ramp as dmu_zfetch_dofetch computes it for a reader of
    // sequential blocks: nothing at the first block, then [2,4), [4,7), [7,11)+[11,15), and a
    // cap that never lets it run more than 256 blocks (plus one chunk) ahead.
    #[test]
    fn a_sequential_reader_ramps_the_prefetch_to_256_blocks() {
        let mut zfetch = Zfetch::default();
        let mut fetch = Vec::new();
        let now = Instant::ZERO;
        zfetch.access(now, 0, false, 100_000, &mut fetch);
        assert!(fetch.is_empty());
        zfetch.access(now, 1, false, 100_000, &mut fetch);
        assert_eq!(fetch, [(2, 2)]);
        fetch.clear();
        zfetch.access(now, 2, true, 100_000, &mut fetch);
        assert_eq!(fetch, [(4, 3)]);
        fetch.clear();
        zfetch.access(now, 3, true, 100_000, &mut fetch);
        assert_eq!(fetch, [(7, 4), (11, 4)]);
        let mut ahead = 15;
        for block in 4..5000 {
            fetch.clear();
            zfetch.access(now, block, true, 100_000, &mut fetch);
            for &(first, count) in &fetch {
                assert_eq!(first, ahead, "chunks follow each other");
                ahead = first + count;
            }
            assert!(ahead <= block + 1 + 2 * ZFETCH_BLOCK_CAP, "block {block}: ahead to {ahead}");
        }
        assert!(ahead >= 4999 + ZFETCH_BLOCK_CAP, "the stream reached the cap: {ahead}");
    }

    // Proves a miss in a long stream resets it, and streams are limited per file size.
    #[test]
    fn a_fallen_behind_stream_resets_and_small_files_get_one_stream() {
        let mut zfetch = Zfetch::default();
        let mut fetch = Vec::new();
        for block in 0..3 {
            zfetch.access(Instant::ZERO, block, block > 1, 100_000, &mut fetch);
        }
        assert_eq!(zfetch.streams.len(), 1);
        zfetch.access(Instant::ZERO, 3, false, 100_000, &mut fetch);
        assert!(zfetch.streams.is_empty());
        let mut small = Zfetch::default();
        small.access(Instant::ZERO, 0, false, 100, &mut fetch);
        small.access(Instant::ZERO, 50, false, 100, &mut fetch);
        assert_eq!(small.streams.len(), 1, "a 100-block file has one stream");
        // Idle for 3 whole seconds: the stream is reused for a new one.
        small.access(Instant::from_millis(3000), 70, false, 100, &mut fetch);
        assert_eq!(small.streams[0].offset, 70);
    }

    // Proves the vdev queue's ramp: 4 issued at once, then up to 2 per completion until the
    // maximum, and sync reads before async ones of the same time bucket.
    #[test]
    fn the_vdev_queue_ramps_from_min_to_max_pending() {
        let limits = VdevLimits { min_pending: 4, max_pending: 6, ramp_rate: 2 };
        let mut queue = VdevQueue::default();
        let mut issue = Vec::new();
        for token in 0..10 {
            queue.add(
                Instant::ZERO,
                token * RECORD,
                PRIORITY_ASYNC_READ,
                token,
                limits,
                &mut issue,
            );
        }
        assert_eq!(issue, [0, 1, 2, 3]);
        queue.add(Instant::ZERO, 1 << 40, PRIORITY_SYNC_READ, 99, limits, &mut issue);
        issue.clear();
        queue.done(limits, &mut issue);
        assert_eq!(issue, [99, 4], "the sync read first, then by offset");
        issue.clear();
        queue.done(limits, &mut issue);
        assert_eq!(issue, [5, 6]);
        assert_eq!(queue.pending, 6);
        issue.clear();
        queue.done(limits, &mut issue);
        assert_eq!(issue, [7], "at the maximum, one for one");
    }
}
