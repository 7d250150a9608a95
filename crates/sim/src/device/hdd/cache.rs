//! The drive's buffer: segments of cached sectors (clean read-ahead data or dirty write data)
//! and the read-ahead stream that fills one of them.
//!
//! A segment holds one contiguous run of sectors, at most a segment's worth. Read data enters
//! a clean segment chosen least-recently-used; write data (with the write cache on) enters a
//! segment that already holds adjacent dirty data, or a fresh one. A segment's dirty sectors
//! are kept as one range (the hull of the writes it absorbed), which is what a destage writes.
//! Only which sectors are held is tracked, not their contents: a write does not invalidate an
//! older copy in another segment, which costs the same time as the drive updating it.

use elevator_core::Instant;

use super::layout::{Mechanics, Piece};

/// One buffer segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Segment {
    /// First sector held.
    pub(super) start: u64,
    /// Sector past the last one held (`start == end`: empty).
    pub(super) end: u64,
    /// First dirty sector (the dirty range is empty when `dirty_start == dirty_end`).
    pub(super) dirty_start: u64,
    /// Sector past the last dirty one.
    pub(super) dirty_end: u64,
    /// A destage of its former dirty range is on the media now.
    pub(super) destaging: bool,
    /// A read miss is filling it: it may not be reused until the miss ends (it holds only the
    /// prefix it already had meanwhile).
    pub(super) filling: bool,
    /// Least-recently-used stamp.
    pub(super) last_used: u64,
}

impl Segment {
    /// Whether it holds data not yet on the media (or being written there now).
    pub(super) fn has_write_data(&self) -> bool {
        self.dirty_start < self.dirty_end || self.destaging
    }

    /// Whether its dirty range is waiting for a destage.
    pub(super) fn needs_destage(&self) -> bool {
        self.dirty_start < self.dirty_end && !self.destaging
    }

    /// Whether it may be reused: nothing dirty, nothing in flight.
    pub(super) fn reusable(&self) -> bool {
        !self.has_write_data() && !self.filling
    }
}

/// The segments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Cache {
    pub(super) segments: Vec<Segment>,
    /// Sectors per segment.
    pub(super) segment_sectors: u64,
    /// Most segments that may hold write data at once (one is kept for reads).
    pub(super) write_segments_max: usize,
    /// Whether a write may join a segment holding adjacent or overlapping write data
    /// (DiskSim's "Combine seq writes"); without it every write takes fresh segments.
    pub(super) combine_writes: bool,
    /// Segment 0 holds all write data and nothing else (DiskSim's "Use separate write
    /// segment": its first segment); reads neither use nor hit it.
    pub(super) separate_write_segment: bool,
    /// Reads may hit data that writes put in the buffer (DiskSim's "Allow read hits on write
    /// data"); without it such data serves no read and leaves once it is on the media.
    pub(super) read_hits_on_writes: bool,
    /// The buffer caches at all (DiskSim's "Enable caching in buffer"); without it no read
    /// is served from it.
    pub(super) caching: bool,
    clock: u64,
    /// Segments holding write data, kept by `recount`.
    write_segments: usize,
    /// Segments whose dirty range waits for a destage, kept by `recount`.
    destages_pending: usize,
}

/// Where a read's sectors are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    /// All in this segment.
    Hit(usize),
    /// A prefix in this clean segment, which the rest can extend.
    Prefix(usize),
    /// Not usefully cached.
    Miss,
}

impl Cache {
    pub(super) fn new(segment_count: usize, segment_sectors: u64) -> Cache {
        Cache {
            segments: vec![Segment::default(); segment_count],
            segment_sectors,
            // One segment is always kept for reads, so a one-segment buffer caches no writes
            // (they take the mechanical path); giving it to writes could leave a write waiting
            // for room that a read stream holds (sweep seed 11394 stalled so).
            write_segments_max: segment_count.saturating_sub(1),
            combine_writes: true,
            separate_write_segment: false,
            read_hits_on_writes: true,
            caching: true,
            clock: 0,
            write_segments: 0,
            destages_pending: 0,
        }
    }

    /// Recounts the segments holding write data; called after every change to write data
    /// (placing a write, starting or ending a destage), so reads never pay for a scan.
    pub(super) fn recount(&mut self) {
        self.write_segments = self.segments.iter().filter(|s| s.has_write_data()).count();
        self.destages_pending = self.segments.iter().filter(|s| s.needs_destage()).count();
    }

    /// Whether some dirty range waits for a destage.
    pub(super) fn destage_pending(&self) -> bool {
        self.destages_pending > 0
    }

    /// Where `start..end` is: a segment holding all of it, else a clean one holding a prefix.
    pub(super) fn lookup(&self, start: u64, end: u64) -> Lookup {
        let mut prefix = Lookup::Miss;
        if !self.caching {
            return prefix;
        }
        let first = usize::from(self.separate_write_segment);
        for (index, segment) in self.segments.iter().enumerate().skip(first) {
            if !self.read_hits_on_writes && segment.has_write_data() {
                continue;
            }
            // `start` lies in `segment.start..segment.end`, as one unsigned comparison: a
            // single, well-predicted branch per segment. A segment a miss is filling holds its
            // cached prefix, if any, and is otherwise empty.
            if start.wrapping_sub(segment.start) < segment.end.wrapping_sub(segment.start) {
                if end <= segment.end {
                    return Lookup::Hit(index);
                }
                if !segment.has_write_data() && prefix == Lookup::Miss {
                    prefix = Lookup::Prefix(index);
                }
            }
        }
        prefix
    }

    /// Marks segment `index` as just used.
    pub(super) fn touch(&mut self, index: usize) {
        self.clock += 1;
        self.segments[index].last_used = self.clock;
    }

    /// The least recently used reusable segment other than `except` for read data (never the
    /// separate write segment).
    pub(super) fn least_recent(&self, except: Option<usize>) -> Option<usize> {
        (usize::from(self.separate_write_segment)..self.segments.len())
            .filter(|&index| Some(index) != except && self.segments[index].reusable())
            .min_by_key(|&index| self.segments[index].last_used)
    }

    /// Segments holding write data.
    pub(super) fn write_segment_count(&self) -> usize {
        self.write_segments
    }

    /// Places a write of `start..end` in the buffer: merged into a segment that already holds
    /// adjacent or overlapping write data when the union fits, else in fresh segments (least
    /// recently used first, never `except`, which is the segment read-ahead is filling).
    /// Returns false, changing nothing, when there is no room.
    pub(super) fn place_write(&mut self, start: u64, end: u64, except: Option<usize>) -> bool {
        let size = self.segment_sectors;
        let merge = self.segments.iter().position(|segment| {
            self.combine_writes
                && segment.has_write_data()
                && start <= segment.end
                && segment.start <= end
                && end.max(segment.end) - start.min(segment.start) <= size
        });
        if let Some(index) = merge {
            let segment = &mut self.segments[index];
            segment.start = segment.start.min(start);
            segment.end = segment.end.max(end);
            if segment.dirty_start < segment.dirty_end {
                segment.dirty_start = segment.dirty_start.min(start);
                segment.dirty_end = segment.dirty_end.max(end);
            } else {
                (segment.dirty_start, segment.dirty_end) = (start, end);
            }
            self.touch(index);
            self.recount();
            return true;
        }
        let needed = (end - start).div_ceil(size) as usize;
        if self.separate_write_segment {
            // Only the write segment, once its former write data is on the media.
            if needed > 1 || !self.segments[0].reusable() {
                return false;
            }
            self.segments[0] = Segment {
                start,
                end,
                dirty_start: start,
                dirty_end: end,
                destaging: false,
                filling: false,
                last_used: 0,
            };
            self.touch(0);
            self.recount();
            return true;
        }
        let free =
            self.segments.iter().enumerate().filter(|&(i, s)| Some(i) != except && s.reusable());
        if self.write_segment_count() + needed > self.write_segments_max || free.count() < needed {
            return false;
        }
        let mut chunk = start;
        while chunk < end {
            let chunk_end = (chunk + size).min(end);
            let index = self.least_recent(except).expect("counted above");
            self.segments[index] = Segment {
                start: chunk,
                end: chunk_end,
                dirty_start: chunk,
                dirty_end: chunk_end,
                destaging: false,
                filling: false,
                last_used: 0,
            };
            self.touch(index);
            chunk = chunk_end;
        }
        self.recount();
        true
    }

    /// Records that `index` now holds data up to `end` (read-ahead or a read miss), dropping
    /// its oldest sectors beyond a segment's worth.
    pub(super) fn extend(&mut self, index: usize, end: u64) {
        let size = self.segment_sectors;
        let segment = &mut self.segments[index];
        segment.end = segment.end.max(end);
        // Read data slides the window; write data must stay until destaged, and a merged
        // write segment never exceeds a segment's worth (see `place_write`).
        if !segment.has_write_data() {
            segment.start = segment.start.max(segment.end.saturating_sub(size));
        }
    }
}

/// Read-ahead in progress: the head reads on from where a read left off into `segment`, up
/// to `limit`, while nothing else needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stream {
    /// The segment it fills.
    pub(super) segment: usize,
    /// The sector past the last one to read ahead.
    pub(super) limit: u64,
    /// Reads are waiting for sectors up to this instant's position: the stream may not be
    /// stopped before it.
    pub(super) hold_until: Instant,
    /// The track being read now.
    pub(super) piece: Piece,
}

/// Where a stream is at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Progress {
    /// Still reading; sectors before `read_to` are in the buffer.
    Running {
        /// The sector past the last one read.
        read_to: u64,
    },
    /// Reached its limit at `at`.
    Finished {
        /// The limit.
        read_to: u64,
        /// When it got there.
        at: Instant,
    },
}

impl Stream {
    /// Moves the stream on to `at` (track by track) and says how far it has read.
    pub(super) fn sync(&mut self, mechanics: &Mechanics, at: Instant) -> Progress {
        loop {
            let piece = self.piece;
            let target = (piece.lbn + u64::from(piece.sector_count)).min(self.limit);
            let reached = piece.time_of((target - piece.lbn) as u32);
            if reached > at {
                return Progress::Running {
                    read_to: piece.lbn + u64::from(piece.sectors_done_at(at)),
                };
            }
            if target >= self.limit {
                return Progress::Finished { read_to: target, at: reached };
            }
            // The next track: a head switch or a one-cylinder seek, then its skewed sector 0.
            self.piece = mechanics.piece(piece.track, reached, target, false);
        }
    }

    /// When the stream will have read every sector before `lbn` (which must not be past its
    /// limit), if nothing stops it.
    pub(super) fn time_of(&self, mechanics: &Mechanics, lbn: u64) -> Instant {
        debug_assert!(lbn <= self.limit);
        let mut piece = self.piece;
        loop {
            let piece_end = piece.lbn + u64::from(piece.sector_count);
            if lbn <= piece_end {
                return piece.time_of(lbn.saturating_sub(piece.lbn) as u32);
            }
            piece = mechanics.piece(piece.track, piece.end(), piece_end, false);
        }
    }
}
