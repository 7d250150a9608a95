//! Read-ahead: how a kernel decides, as a buffered reader walks a file, which pages to read
//! before they are asked for (specs/host-mechanisms.md §1.1, §7 "Read-ahead").
//!
//! Each open file (here: each process and file or raw device) carries a read-ahead state,
//! created at its first read with the device's `read_ahead_kb` in pages as its maximum — the
//! kernel copies the maximum into the file at `open()`, so it never changes afterwards. The
//! reader ([`Host`](super::Host)'s read path) walks the pages of each `read()` in order: it
//! calls [`ReadAhead::reader_at`] when it reaches the page the previous call named, then takes
//! the page from the cache, waits for it while it is being read, or — when it is not in the
//! cache at all — reports it with [`ReadAhead::missing`] and reads **that page alone**,
//! synchronously (one 4 KiB bio it waits for), as `do_generic_mapping_read` did in both
//! versions. Windows become bios elsewhere: the host reads the pages of a window that are not
//! cached as back-to-back bios of the queue's largest size (§1.2).
//!
//! # 2.6.9 and RHEL 4 GA–U2: per page ([`ReadAheadAlgorithm::PerPage`])
//!
//! Vanilla 2.6.9 `mm/readahead.c` (`page_cache_readahead`, `handle_ra_miss`,
//! `check_ra_success`) and `mm/filemap.c` (`do_generic_mapping_read`), identical in RHEL 4
//! 2.6.9-5.0.3.EL … 22.0.2.EL. Called for **every page** the reader reaches:
//!
//! * State: a current window, an ahead window, `next_size`, the hits in the current window
//!   and their running `average` (max/2 at open).
//! * The first page read: a current window of max/2 pages at once.
//! * A page inside the current window or just past it is a hit (`next_size` + 2, at most the
//!   maximum); any other page a miss (`next_size` − 2, read-ahead off at ≤ 0) that folds the
//!   hits into `average`.
//! * A page outside the current window: if it is the ahead window's first page, the ahead
//!   window becomes current; otherwise a new current window of about the expected run
//!   ((hits + `average` + 1)/2 when the hits exceed it, else `average`, at most the maximum)
//!   is read at once.
//! * A page inside the current window with no ahead window: the ahead window (`next_size`
//!   pages right after the current one) is read once the expected run exceeds the maximum.
//!   At a maximum of 32 pages the windows are 16, 17 and 25 pages, then the first ahead window
//!   of 32 at page 48, then current + ahead windows of 32; at 2048, 1024, 1025 and 1537 pages
//!   and the first ahead window at page 3072.
//! * A window read while the device's read pool is congested (§2.4) is skipped entirely; a
//!   window that started no I/O (skipped, or every page already cached) shrinks `next_size`
//!   by one (read-ahead off from 1).
//! * A page the reader does not find in the cache shrinks `next_size` by 3 (at least 4 pages);
//!   with read-ahead off, a run of `max` consecutive missing pages turns it back on. So a
//!   congested queue collapses every reader to single-page synchronous reads.
//!
//! # 2.6.18 and RHEL 5: per call ([`ReadAheadAlgorithm::PerCall`])
//!
//! Vanilla 2.6.18 `mm/readahead.c` (Pratt and Pai's rewrite: `page_cache_readahead`,
//! `get_init_ra_size`, `get_next_ra_size`, `make_ahead_window`, `check_ra_success`,
//! `handle_ra_miss`) and `mm/filemap.c`. Called once per `read()` with the pages it wants, and
//! again when the reader reaches the page the previous call returned:
//!
//! * Sequential means the call starts at the page after the last one seen (page 0 for a fresh
//!   file); the call considers min(wanted, max) pages.
//! * The first sequential call reads a window of the request rounded up to a power of two,
//!   × 4 when at most max/32, × 2 when at most max/4, else the maximum; a request of at least
//!   the maximum also reads the ahead window at once. Both block (ignore congestion).
//! * Later sequential calls read an ahead window right after the current one when there is
//!   none, and shift the windows when the reader steps into the ahead window: the new ahead
//!   window is 4 × the current one while under max/16, else 2 ×, at most the maximum (after a
//!   missing page: 2 pages smaller, at least 4). It is **non-blocking**: dropped when the read
//!   pool is congested, unless the reader is already inside it.
//! * A non-sequential call turns read-ahead off, but reads the pages it wants (at most the
//!   maximum) at once; the next sequential call starts a fresh window.
//! * 256 pages of windows in a row that found everything cached turn read-ahead off until a
//!   page is found missing.
//! * With 4 KiB reads at a maximum of 32 pages the windows are 4, 8, 16, 32, 32 …; with 2 MiB
//!   reads, 32 plus a forced ahead window of 32, then one window of 32 per crossing; at a
//!   maximum of 2048 with 512 KiB reads, 256, 512, 1024, 2048.
//!
//! # 2.4.21 and RHEL 3: `generic_file_readahead` ([`ReadAheadAlgorithm::Generic2_4`])
//!
//! RHEL 3 `mm/filemap.c` (`do_generic_file_read`, `generic_file_readahead`;
//! linux-2.4-elevator.md §6.3). Each open file keeps `raend` (the page after the last chunk),
//! `ralen` (the last chunk's pages), `rawin` (the window) and `ramax` (the current maximum),
//! between vm.min-readahead (3 pages) and vm.max-readahead (31 pages).
//!
//! * Each `read()` first ([`ReadAhead::read_call`]): a call starting past `raend`, or before
//!   the window, resets all four to 0 and is not sequential. A call that stays in the first
//!   half of page 0 sets `ramax` to 0; any other raises it to the pages the call reaches
//!   (plus one), to at least the minimum when sequential, at most the maximum.
//! * Then per page, **after** a page that is not in the cache at all was given to `readpage`
//!   (one 4 KiB read, waited for): a page not yet up to date (being read) outside the last
//!   chunk, or with no chunk yet, starts a new chunk — the `ramax` pages after it, read at
//!   once (the synchronous chunk). An up-to-date page of a sequential reader that reaches
//!   into the last chunk (`index + ralen ≥ raend`) reads `ramax + 1` pages from `raend` (the
//!   asynchronous chunk), the window becoming both chunks. Every chunk doubles `ramax` (at
//!   most the maximum). Cached pages inside a chunk are skipped but counted.
//! * Each page is its own 4 KiB read: the host makes one bio per page on a 2.4 kernel, and
//!   contiguous pages merge in the queue.
//! * The chunks of a 4 KiB sequential reader are 1 + 3, 7, 13, 25, then 32 pages one chunk
//!   ahead; an 8 KiB random read reads 4 pages (16 KiB); 128 KiB reads read 1 + 31 pages at
//!   once, then 32-page chunks one ahead.
//! * The maximum is vm.max-readahead whatever the device's `read_ahead_kb`: SCSI sets no
//!   per-device value, and `blockdev --setra` sets a per-major value that file reads never
//!   consult (§6.1).
//! * No congestion test: 2.4 has no congested queues (§6.1).
//!
//! # Deviations from Linux
//!
//! * 2.4: a page locked for another reason than a read (write-back in progress) takes the
//!   synchronous path in the kernel; here only pages being read do, as the host locks no
//!   page for write-back. `page_cache_read`'s allocation failure (which ends a chunk early)
//!   is not modelled. The sysctls vm.max-readahead and vm.min-readahead are constants (their
//!   defaults); IDE's per-device maximum is not modelled (the study's LUNs are SCSI).
//! * RHEL 4 from U3 (2.6.9-34.EL) calls read-ahead only at `next_index` (no ahead window for
//!   `read()`s that are multiples of the window) and U5's re-enabling bursts: not modelled; the
//!   RHEL 4 release here is GA/U1, which reads per page.
//! * A state belongs to a (process, file) pair, not to an open file description: a process
//!   that reads one file through two descriptors, or processes sharing one, are not modelled.
//! * A 2.6.9 maximum of one page (`read_ahead_kb` 4) is treated as read-ahead off (the kernel
//!   would keep restarting a zero-page first window).
//! * `max_sane_readahead`'s cap at half the free and inactive memory (fadvise and madvise
//!   only) and `force_page_cache_readahead` are not modelled: only `read()` reaches here.

use elevator_core::kernel::ReadAheadAlgorithm;

/// The smallest window after shrinking (`VM_MIN_READAHEAD`, 16 KiB), both versions (§1.1).
const MIN_PAGES: u64 = 4;

/// 2.6.18: pages of windows found entirely cached, in a row, that turn read-ahead off
/// (`VM_MAX_CACHE_HIT`, §1.1).
const MAX_CACHE_HIT_PAGES: u64 = 256;

/// 2.4's vm.max-readahead: 31 pages (linux-2.4-elevator.md §6.3, [V R3 `mm/filemap.c`]).
const VM_MAX_READAHEAD_PAGES: u64 = 31;

/// 2.4's vm.min-readahead: 3 pages (§6.3).
const VM_MIN_READAHEAD_PAGES: u64 = 3;

/// Bytes in a page, for 2.4's per-call arithmetic on offsets.
const PAGE_BYTES: u64 = super::cache::PAGE_BYTES;

/// What read-ahead asks of the page cache and the device's queue.
pub(crate) trait ReadAheadIo {
    /// Whether page `index` is up to date (2.4 asks: a page being read takes the synchronous
    /// path, an up-to-date one the asynchronous one).
    fn page_uptodate(&self, index: u64) -> bool;
    /// The file's size in whole pages (2.4's `end_index`: a last partial page is not read
    /// ahead).
    fn end_index(&self) -> u64;
    /// Whether the device's read pool class is congested (§2.4).
    fn read_congested(&self) -> bool;
    /// Starts reads of the pages of `start..start + count` that are neither cached nor being
    /// read (none past the end of the file) and returns how many it started. `speculative`
    /// is false only for 2.6.18's burst of the pages a non-sequential call asked for.
    fn read(&mut self, start: u64, count: u64, speculative: bool) -> u64;
    /// A window of `count` pages was not read because the queue was read-congested.
    fn skipped(&mut self, count: u64);
}

/// A window: `size` pages from `start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Window {
    start: u64,
    size: u64,
}

impl Window {
    fn end(self) -> u64 {
        self.start + self.size
    }
}

/// One open file's read-ahead state, by kernel version.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ReadAhead {
    /// 2.6.9 and RHEL 4 GA–U2.
    PerPage(PerPage),
    /// 2.6.18 and RHEL 5.
    PerCall(PerCall),
    /// 2.4.21 and RHEL 3.
    Generic2_4(Generic2_4),
}

impl ReadAhead {
    /// The state of a file opened on a device whose maximum window is `max_pages`.
    pub(crate) fn open(algorithm: ReadAheadAlgorithm, max_pages: u64) -> ReadAhead {
        match algorithm {
            ReadAheadAlgorithm::PerPage => ReadAhead::PerPage(PerPage::open(max_pages)),
            ReadAheadAlgorithm::PerCall => ReadAhead::PerCall(PerCall::open(max_pages)),
            // vm.max-readahead, not the device's value (§6.1): see the module's 2.4 section.
            ReadAheadAlgorithm::Generic2_4 => ReadAhead::Generic2_4(Generic2_4::default()),
        }
    }

    /// A `read()` of `count_bytes` starts at page `index`, `offset_bytes` into it: 2.4's
    /// per-call reset and `ramax` adjustment; nothing in 2.6.
    pub(crate) fn read_call(&mut self, index: u64, offset_bytes: u64, count_bytes: u64) {
        if let ReadAhead::Generic2_4(state) = self {
            state.read_call(index, offset_bytes, count_bytes);
        }
    }

    /// Whether the reader gives a page that is not in the cache to `readpage` before calling
    /// read-ahead at it (2.4), rather than after (2.6: read-ahead first, then the page alone).
    pub(crate) fn reads_missing_page_first(&self) -> bool {
        matches!(self, ReadAhead::Generic2_4(_))
    }

    /// The reader reached page `index` with `wanted_pages` (≥ 1, `index` included) of its
    /// `read()` still to copy. Returns the page at which the reader calls again (always after
    /// `index`).
    pub(crate) fn reader_at(
        &mut self,
        index: u64,
        wanted_pages: u64,
        io: &mut impl ReadAheadIo,
    ) -> u64 {
        debug_assert!(wanted_pages >= 1);
        let next = match self {
            ReadAhead::PerPage(state) => {
                state.page(index, io);
                index + 1
            }
            ReadAhead::PerCall(state) => state.call(index, wanted_pages, io),
            ReadAhead::Generic2_4(state) => {
                state.page(index, io);
                index + 1
            }
        };
        next.max(index + 1)
    }

    /// The reader did not find page `index` in the cache at all (never read, or evicted before
    /// it got there); it reads the page alone next.
    pub(crate) fn missing(&mut self, index: u64) {
        match self {
            ReadAhead::PerPage(state) => state.missing(index),
            ReadAhead::PerCall(state) => state.missing(),
            // 2.4 keeps no miss state: the page's `readpage` and the locked-page path say all.
            ReadAhead::Generic2_4(_) => {}
        }
    }
}

// ---- 2.4.21: generic_file_readahead ----

/// 2.4's state: the `f_raend`, `f_ralen`, `f_rawin` and `f_ramax` of `struct file`, and the
/// current call's `reada_ok`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Generic2_4 {
    /// The page after the last chunk read ahead.
    raend: u64,
    /// Pages of the last chunk (with the missed page of a synchronous one).
    ralen_pages: u64,
    /// Pages of the window: the last chunk, and the one before when the last was asynchronous.
    rawin_pages: u64,
    /// The next chunk's size.
    ramax_pages: u64,
    /// Whether the current `read()` continues the window (`reada_ok`).
    sequential: bool,
}

impl Generic2_4 {
    /// `do_generic_file_read`'s prologue (§6.3, first rule).
    fn read_call(&mut self, index: u64, offset_bytes: u64, count_bytes: u64) {
        if index > self.raend || index + self.rawin_pages < self.raend {
            *self = Generic2_4::default();
        } else {
            self.sequential = true;
        }
        let reach_bytes = offset_bytes + count_bytes;
        if index == 0 && reach_bytes <= PAGE_BYTES / 2 {
            // A read inside the first half of the first page: no read-ahead.
            self.ramax_pages = 0;
        } else {
            let needed_pages = reach_bytes / PAGE_BYTES + 1;
            let mut ramax = self.ramax_pages.max(needed_pages);
            if self.sequential {
                ramax = ramax.max(VM_MIN_READAHEAD_PAGES);
            }
            self.ramax_pages = ramax.min(VM_MAX_READAHEAD_PAGES);
        }
    }

    /// `generic_file_readahead` at page `index`, which is up to date or being read.
    fn page(&mut self, index: u64, io: &mut impl ReadAheadIo) {
        let end_index = io.end_index();
        // The page after which the chunk starts, and its size.
        let (after, chunk_pages) = if !io.page_uptodate(index) {
            // Being read (by the reader's own `readpage` or an earlier chunk): a new chunk
            // unless the page lies inside the last one.
            if self.ralen_pages != 0 && index < self.raend && index + self.rawin_pages >= self.raend
            {
                return;
            }
            let chunk_pages = if index < end_index { self.ramax_pages } else { 0 };
            self.rawin_pages = 0;
            self.ralen_pages = 1;
            if chunk_pages == 0 {
                // No read-ahead: the window is this page alone.
                self.raend = index + 1;
                self.rawin_pages = 1;
                return;
            }
            (index, chunk_pages)
        } else if self.sequential
            && self.ramax_pages > 0
            && self.raend >= 1
            && index <= self.raend
            && index + self.ralen_pages >= self.raend
        {
            // Up to date and reaching into the last chunk: the asynchronous chunk, one page
            // larger than `ramax` to match the synchronous chunk with its missed page.
            let after = self.raend - 1;
            if after >= end_index {
                return;
            }
            self.rawin_pages = self.ralen_pages;
            self.ralen_pages = 0;
            (after, self.ramax_pages + 1)
        } else {
            return;
        };
        // The kernel counts the page at `end_index` that stops the loop as read ahead.
        let ahead_pages = chunk_pages.min(end_index - after);
        let read_end = (after + ahead_pages + 1).min(end_index);
        if read_end > after + 1 {
            io.read(after + 1, read_end - after - 1, true);
        }
        self.ralen_pages += ahead_pages;
        self.rawin_pages += self.ralen_pages;
        self.raend = after + ahead_pages + 1;
        self.ramax_pages = (2 * self.ramax_pages).min(VM_MAX_READAHEAD_PAGES);
    }
}

// ---- 2.6.9: per page ----

/// 2.6.9's `next_size`: nothing read yet, a size, or read-ahead off ("maximally shrunk").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NextSize {
    Fresh,
    Pages(i64),
    Off,
}

/// 2.6.9's state (`file_ra_state`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PerPage {
    max_pages: u64,
    next_size: NextSize,
    current: Window,
    ahead: Option<Window>,
    /// The page last inspected: a page inspected again is ignored (sub-page reads). While
    /// read-ahead is off, the last missing page.
    prev_page: u64,
    /// Hits in the current run (`currnt_wnd_hit`), at most 2 × max + 1.
    hits: u64,
    /// The running average run length, max/2 at open.
    average: u64,
}

impl PerPage {
    fn open(max_pages: u64) -> PerPage {
        PerPage {
            max_pages,
            // One page or none: no window can be read (see the module's deviations).
            next_size: if max_pages < 2 { NextSize::Off } else { NextSize::Fresh },
            current: Window::default(),
            ahead: None,
            prev_page: 0,
            hits: 0,
            average: max_pages / 2,
        }
    }

    fn page(&mut self, index: u64, io: &mut impl ReadAheadIo) {
        let max = self.max_pages;
        let before = match self.next_size {
            NextSize::Off => return,
            NextSize::Pages(_) if index == self.prev_page => return,
            NextSize::Fresh => {
                // The first page: half the maximum at once, whatever follows.
                self.next_size = NextSize::Pages((max / 2) as i64);
                self.prev_page = index;
                self.hits += 1;
                self.open_current(index, None, io);
                return;
            }
            NextSize::Pages(size) => size,
        };
        self.prev_page = index;
        let mut size = before;
        if index >= self.current.start && index <= self.current.end() {
            // Inside the current window or the page right after it: a hit.
            size += 2;
            if self.hits <= 2 * max {
                self.hits += 1;
            }
        } else {
            // A seek: fold the run into the average and start counting again.
            size -= 2;
            let average = if self.average < self.hits { self.average + 1 } else { self.average };
            self.average = (average + self.hits) / 2;
            self.hits = 1;
        }
        let size = size.min(max as i64);
        if size <= 0 {
            self.turn_off();
            return;
        }
        self.next_size = NextSize::Pages(size);
        if index < self.current.start || index >= self.current.end() {
            // The kernel marks "no ahead window" with a start of page 0, so a seek back to
            // page 0 steps onto an empty ahead window (and reads nothing) as it did there.
            let onto_ahead = match self.ahead {
                Some(ahead) => ahead.start == index,
                None => index == 0,
            };
            if onto_ahead {
                // Stepped onto the ahead window: it becomes current; the next page reads the
                // next ahead window.
                self.current = self.ahead.take().unwrap_or_default();
                return;
            }
            self.open_current(index, Some(before), io);
        } else if self.ahead.is_none() && self.expected_run() > max {
            let ahead = Window { start: self.current.end(), size: size as u64 };
            self.ahead = Some(ahead);
            let started = Self::read(ahead, io);
            self.check_success(started, before);
        }
    }

    /// A new current window at `index` (no ahead window). `before` is `next_size` before this
    /// page; `None` on the first page, whose window is max/2 and never shrinks for success.
    fn open_current(&mut self, index: u64, before: Option<i64>, io: &mut impl ReadAheadIo) {
        if before.is_some() {
            let run = self.expected_run().min(self.max_pages);
            self.next_size = NextSize::Pages(run as i64);
        }
        let NextSize::Pages(size) = self.next_size else { unreachable!("a size was just set") };
        self.current = Window { start: index, size: size as u64 };
        self.ahead = None;
        let started = Self::read(self.current, io);
        if let Some(before) = before {
            self.check_success(started, before);
        }
    }

    /// The run length the next current window should cover.
    fn expected_run(&self) -> u64 {
        if self.hits > self.average { (self.hits + self.average).div_ceil(2) } else { self.average }
    }

    /// `do_page_cache_readahead`: nothing when the queue is read-congested.
    fn read(window: Window, io: &mut impl ReadAheadIo) -> u64 {
        if io.read_congested() {
            io.skipped(window.size);
            return 0;
        }
        io.read(window.start, window.size, true)
    }

    /// `check_ra_success`: a window that started nothing shrinks `next_size` below what it
    /// was before this page (`before`), or turns read-ahead off.
    fn check_success(&mut self, started: u64, before: i64) {
        if started > 0 {
            return;
        }
        if before > 1 {
            self.next_size = NextSize::Pages(before - 1);
            if let Some(ahead) = &mut self.ahead {
                ahead.size = (before - 1) as u64;
            }
        } else {
            self.turn_off();
        }
    }

    fn turn_off(&mut self) {
        self.next_size = NextSize::Off;
        self.current.size = 0;
    }

    /// `handle_ra_miss`.
    fn missing(&mut self, index: u64) {
        match self.next_size {
            NextSize::Off if self.max_pages >= 2 => {
                // Count consecutive missing pages in the window's size; `max` of them in a row
                // turn read-ahead back on.
                if self.prev_page.checked_add(1) == Some(index) {
                    self.current.size += 1;
                    if self.current.size >= self.max_pages {
                        let max = self.max_pages;
                        self.current = Window { start: index.saturating_sub(max), size: max };
                        self.next_size = NextSize::Pages(max as i64);
                        self.ahead = None;
                        self.average = max / 2;
                    }
                } else {
                    self.current.size = self.current.size.saturating_sub(1);
                }
                self.prev_page = index;
            }
            NextSize::Off | NextSize::Fresh => {}
            NextSize::Pages(size) => {
                // Thrashing: three pages smaller, as a hit grows it by two.
                self.next_size = NextSize::Pages((size - 3).max(MIN_PAGES as i64));
            }
        }
    }
}

// ---- 2.6.18: per call ----

/// 2.6.18's state (`file_ra_state`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PerCall {
    max_pages: u64,
    /// The last page the calls covered; `None` before the first (the kernel's −1).
    prev_page: Option<u64>,
    /// The current window; size 0 = read-ahead off.
    current: Window,
    ahead: Option<Window>,
    /// The end of the last ahead window, kept when it is dropped: a call never claims pages
    /// past it.
    ahead_end: u64,
    /// A page was found missing: the next window shrinks (`RA_FLAG_MISS`).
    miss: bool,
    /// Off because everything was cached (`RA_FLAG_INCACHE`), until a page is missing.
    in_cache: bool,
    /// Pages of windows in a row that found everything cached.
    cache_hit_pages: u64,
}

impl PerCall {
    fn open(max_pages: u64) -> PerCall {
        PerCall {
            max_pages,
            prev_page: None,
            current: Window::default(),
            ahead: None,
            ahead_end: 0,
            miss: false,
            in_cache: false,
            cache_hit_pages: 0,
        }
    }

    /// One call at `index` for a `read()` wanting `wanted` more pages; returns the page after
    /// the last one it covered.
    fn call(&mut self, index: u64, wanted: u64, io: &mut impl ReadAheadIo) -> u64 {
        let max = self.max_pages;
        let (mut offset, mut wanted) = (index, wanted);
        // A call at the page already seen (a sub-page read): look at the rest of the request.
        if self.prev_page == Some(offset) {
            wanted -= 1;
            if wanted > 0 {
                offset += 1;
            }
        }
        let sequential = match self.prev_page {
            None => offset == 0,
            Some(prev) => offset == prev + 1,
        };
        self.prev_page = Some(offset);
        let size = wanted.min(max);
        if size == 0 || self.in_cache {
            return offset + 1;
        }
        let last = offset + size - 1;
        self.prev_page = Some(last);
        if sequential && self.current.size == 0 {
            // A fresh sequential start: the initial window, blocking; a request of at least
            // the maximum needs the ahead window too.
            self.current = Window { start: offset, size: initial_size(size, max) };
            if self.read(self.current, true, true, io) && wanted >= max {
                self.make_ahead(true, io);
            }
            return last + 1;
        }
        if !sequential {
            // A seek: read-ahead off, but the pages asked for come at once.
            self.turn_off();
            self.read(Window { start: offset, size }, true, false, io);
            return last + 1;
        }
        let crossed = match self.ahead {
            None => self.make_ahead(false, io) && self.entered_ahead(),
            Some(_) => self.entered_ahead(),
        };
        let recheck = if self.ahead.is_none() {
            true
        } else if crossed {
            // The reader stepped into the ahead window: it becomes current, and the next ahead
            // window goes out.
            self.current = self.ahead.expect("checked above");
            self.make_ahead(false, io);
            true
        } else {
            false
        };
        let mut last = self.prev_page.expect("set above");
        if recheck && let Some(limit) = self.ahead_end.checked_sub(1) {
            last = last.min(limit);
            self.prev_page = Some(last);
        }
        last + 1
    }

    fn entered_ahead(&self) -> bool {
        match (self.ahead, self.prev_page) {
            (Some(ahead), Some(prev)) => prev >= ahead.start,
            _ => false,
        }
    }

    /// `make_ahead_window`: the window after the current one; non-blocking unless `force` or
    /// the reader is already in it. Returns whether it succeeded.
    fn make_ahead(&mut self, force: bool, io: &mut impl ReadAheadIo) -> bool {
        let ahead = Window { start: self.current.end(), size: self.next_size() };
        self.ahead = Some(ahead);
        self.ahead_end = ahead.end();
        let block = force || self.prev_page.is_some_and(|prev| prev >= ahead.start);
        let done = self.read(ahead, block, true, io);
        if !done && !force {
            // Dropped (congestion) or everything cached: no ahead window for now.
            self.ahead = None;
        }
        done
    }

    /// `get_next_ra_size`.
    fn next_size(&mut self) -> u64 {
        let (max, current) = (self.max_pages, self.current.size);
        let size = if std::mem::take(&mut self.miss) {
            current.saturating_sub(2).max(MIN_PAGES)
        } else if current < max / 16 {
            4 * current
        } else {
            2 * current
        };
        size.min(max)
    }

    /// `blockable_page_cache_readahead` and `check_ra_success`: false when a non-blocking
    /// window meets congestion, or when enough cached pages turned read-ahead off.
    fn read(
        &mut self,
        window: Window,
        block: bool,
        speculative: bool,
        io: &mut impl ReadAheadIo,
    ) -> bool {
        if !block && io.read_congested() {
            io.skipped(window.size);
            return false;
        }
        let started = io.read(window.start, window.size, speculative);
        if started > 0 {
            self.cache_hit_pages = 0;
            return true;
        }
        self.cache_hit_pages += window.size;
        if self.cache_hit_pages >= MAX_CACHE_HIT_PAGES {
            self.turn_off();
            self.in_cache = true;
            return false;
        }
        true
    }

    /// `ra_off`.
    fn turn_off(&mut self) {
        self.current = Window::default();
        self.miss = false;
        self.in_cache = false;
        self.ahead = None;
    }

    /// `handle_ra_miss`.
    fn missing(&mut self) {
        self.miss = true;
        self.in_cache = false;
        self.cache_hit_pages = 0;
    }
}

/// `get_init_ra_size`: the first window for a request of `request_pages` (≤ max).
fn initial_size(request_pages: u64, max_pages: u64) -> u64 {
    let rounded = request_pages.next_power_of_two();
    if rounded <= max_pages / 32 {
        rounded * 4
    } else if rounded <= max_pages / 4 {
        rounded * 2
    } else {
        max_pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page cache where reads complete at once, recording every window.
    #[derive(Debug, Default)]
    struct FakeIo {
        cached: Vec<bool>,
        congested: bool,
        /// (page the reader was at, start, count, speculative) of every window read.
        windows: Vec<(u64, u64, u64, bool)>,
        /// Pages read alone after a miss.
        single: Vec<u64>,
        skipped_pages: u64,
        at: u64,
        /// Whether reads stay in flight until the reader waits for one of their pages (2.4
        /// tells pages being read from up-to-date ones); otherwise they complete at once.
        hold_reads: bool,
        in_flight: std::collections::BTreeSet<u64>,
    }

    impl FakeIo {
        fn new(file_pages: u64) -> FakeIo {
            FakeIo { cached: vec![false; file_pages as usize], ..FakeIo::default() }
        }

        /// Window sizes read, in order.
        fn sizes(&self) -> Vec<u64> {
            self.windows.iter().map(|&(_, _, count, _)| count).collect()
        }
    }

    impl ReadAheadIo for FakeIo {
        fn page_uptodate(&self, index: u64) -> bool {
            self.cached[index as usize] && !self.in_flight.contains(&index)
        }

        fn end_index(&self) -> u64 {
            self.cached.len() as u64
        }

        fn read_congested(&self) -> bool {
            self.congested
        }

        fn read(&mut self, start: u64, count: u64, speculative: bool) -> u64 {
            let end = (start + count).min(self.cached.len() as u64);
            let mut started = 0;
            for page in start..end {
                if !self.cached[page as usize] {
                    self.cached[page as usize] = true;
                    if self.hold_reads {
                        self.in_flight.insert(page);
                    }
                    started += 1;
                }
            }
            self.windows.push((self.at, start, count, speculative));
            started
        }

        fn skipped(&mut self, count: u64) {
            self.skipped_pages += count;
        }
    }

    /// A reader doing `read()`s of `call_pages` from `first` for `calls` calls, walking pages
    /// as the host does: read-ahead where it asks, then a missing page read alone.
    fn read_calls(ra: &mut ReadAhead, io: &mut FakeIo, first: u64, call_pages: u64, calls: u64) {
        for call in 0..calls {
            let start = first + call * call_pages;
            let end = (start + call_pages).min(io.cached.len() as u64);
            let mut call_at = start;
            for page in start..end {
                if page == call_at {
                    io.at = page;
                    call_at = ra.reader_at(page, end - page, io);
                    assert!(call_at > page);
                }
                if !io.cached[page as usize] {
                    ra.missing(page);
                    io.cached[page as usize] = true;
                    io.single.push(page);
                }
            }
        }
    }

    /// A 2.4 reader doing `read()`s of `call_bytes` from byte `first_byte`, as the host walks
    /// them: the per-call prologue, then per page `readpage` of a missing page, read-ahead,
    /// and a wait when the page is being read — which completes everything in flight, as a
    /// plugged queue unplugged by the waiter would.
    fn read_calls_2_4(
        ra: &mut ReadAhead,
        io: &mut FakeIo,
        first_byte: u64,
        call_bytes: u64,
        calls: u64,
    ) {
        io.hold_reads = true;
        for call in 0..calls {
            let start = first_byte + call * call_bytes;
            ra.read_call(start / PAGE_BYTES, start % PAGE_BYTES, call_bytes);
            for page in start / PAGE_BYTES..(start + call_bytes).div_ceil(PAGE_BYTES) {
                io.at = page;
                if !io.cached[page as usize] {
                    io.cached[page as usize] = true;
                    io.in_flight.insert(page);
                    io.single.push(page);
                }
                assert_eq!(ra.reader_at(page, 1, io), page + 1);
                if io.in_flight.contains(&page) {
                    io.in_flight.clear();
                }
            }
        }
    }

    fn generic_2_4() -> ReadAhead {
        // The device's maximum is ignored on 2.4 (vm.max-readahead rules).
        ReadAhead::open(ReadAheadAlgorithm::Generic2_4, 2048)
    }

    /// (page the reader was at, first page, pages) of every chunk.
    fn chunks(io: &FakeIo) -> Vec<(u64, u64, u64)> {
        io.windows.iter().map(|&(at, start, count, _)| (at, start, count)).collect()
    }

    // Proves 2.4's ramp for a sequential 4 KiB reader (linux-2.4-elevator.md §7.13, §6.3):
    // page 0 read alone plus 3 pages, then asynchronous chunks of 7, 13, 25 and 32 pages
    // (ramax + 1 at the 31-page cap) each starting at the previous chunk's end, issued at the
    // first up-to-date page that reaches into the last chunk; only page 0 is read alone.
    #[test]
    fn generic_2_4_sequential_4k_ramp() {
        let mut ra = generic_2_4();
        let mut io = FakeIo::new(1000);
        read_calls_2_4(&mut ra, &mut io, 0, 4096, 200);
        assert_eq!(io.single, vec![0]);
        assert_eq!(
            &chunks(&io)[..6],
            &[(0, 1, 3), (1, 4, 7), (5, 11, 13), (12, 24, 25), (25, 49, 32), (50, 81, 32)]
        );
        assert!(chunks(&io)[4..].iter().all(|&(_, _, count)| count == 32));
    }

    // Proves 8 KiB random buffered reads on 2.4 read 4 pages each (16 KiB, §7.13): the two
    // pages asked for plus the 3-page chunk that `needed` (2 + 1) sets, and no asynchronous
    // chunk when the reader reaches the second page (a random call is not sequential).
    #[test]
    fn generic_2_4_random_8k_reads_read_16k() {
        let mut ra = generic_2_4();
        let mut io = FakeIo::new(100_000);
        let pages = [5000, 120, 70_000, 9000, 33_333, 42_000];
        for page in pages {
            read_calls_2_4(&mut ra, &mut io, page * PAGE_BYTES, 8192, 1);
        }
        assert_eq!(io.single, pages.to_vec());
        assert_eq!(chunks(&io), pages.iter().map(|&page| (page, page + 1, 3)).collect::<Vec<_>>());
    }

    // Proves 128 KiB sequential reads on 2.4 (§6.3): the first call reads page 0 and 31 pages
    // with it at once, then one 32-page chunk per 32 pages, each starting where the last ended
    // (one chunk ahead of the reader).
    #[test]
    fn generic_2_4_sequential_128k_reads() {
        let mut ra = generic_2_4();
        let mut io = FakeIo::new(1000);
        read_calls_2_4(&mut ra, &mut io, 0, 128 << 10, 6);
        assert_eq!(io.single, vec![0]);
        assert_eq!(
            &chunks(&io)[..5],
            &[(0, 1, 31), (1, 32, 32), (33, 64, 32), (65, 96, 32), (97, 128, 32)]
        );
        // Six calls reach page 191: the last chunk, issued at page 161, reads 192..224.
        assert_eq!(chunks(&io).len(), 7);
        assert!(chunks(&io)[1..].iter().all(|&(at, start, count)| count == 32 && start == at + 31));
    }

    // Proves the 2.4 resets: a read in the first half of page 0 reads no read-ahead (ramax 0),
    // a seek backwards outside the window starts over (a fresh synchronous chunk of the
    // call's `needed` pages, not an asynchronous one), and a chunk stops at the file's last
    // whole page.
    #[test]
    fn generic_2_4_small_first_read_seek_and_end_of_file() {
        let mut ra = generic_2_4();
        let mut io = FakeIo::new(1000);
        read_calls_2_4(&mut ra, &mut io, 0, 512, 1);
        assert!(io.windows.is_empty());
        assert_eq!(io.single, vec![0]);
        read_calls_2_4(&mut ra, &mut io, 500 * PAGE_BYTES, 4096, 3);
        read_calls_2_4(&mut ra, &mut io, 100 * PAGE_BYTES, 4096, 1);
        // A 4 KiB read away from the window: ramax = 4096 / 4096 + 1 = 2 pages after it; the
        // next call is sequential and reaches into that chunk: ramax (4) + 1 from its end.
        assert_eq!(chunks(&io), vec![(500, 501, 2), (501, 503, 5), (100, 101, 2)]);
        // Near the end: a 16 KiB random read at page 996 of a 1000-page file reads ahead up
        // to page 999 only.
        let mut ra = generic_2_4();
        let mut io = FakeIo::new(1000);
        read_calls_2_4(&mut ra, &mut io, 996 * PAGE_BYTES, 16 << 10, 1);
        assert_eq!(chunks(&io), vec![(996, 997, 3)]);
    }

    fn per_page(max: u64) -> ReadAhead {
        ReadAhead::open(ReadAheadAlgorithm::PerPage, max)
    }

    fn per_call(max: u64) -> ReadAhead {
        ReadAhead::open(ReadAheadAlgorithm::PerCall, max)
    }

    // Proves 2.6.9's ramp at the default maximum of 32 pages (§1.1): current windows of 16,
    // 17 and 25 pages, the first ahead window (32 pages, right after the third window) issued
    // when the reader is at page 48, then current + ahead windows of 32, each ahead window
    // issued on the page after the reader steps onto the previous one; nothing read alone.
    #[test]
    fn per_page_ramp_at_max_32() {
        let mut ra = per_page(32);
        let mut io = FakeIo::new(1000);
        read_calls(&mut ra, &mut io, 0, 1, 200);
        assert_eq!(&io.windows[..3], &[(0, 0, 16, true), (16, 16, 17, true), (33, 33, 25, true)]);
        assert_eq!(io.windows[3], (48, 58, 32, true));
        assert_eq!(io.windows[4], (59, 90, 32, true));
        assert_eq!(io.windows[5], (91, 122, 32, true));
        assert!(io.sizes()[3..].iter().all(|&size| size == 32), "{:?}", io.sizes());
        assert!(io.single.is_empty());
    }

    // Proves the same ramp at 2048 pages (`blockdev --setra 16386`): 1024, 1025 and 1537
    // pages, the first ahead window of 2048 at page 3072; and that 2 MiB `read()`s walk the
    // same pages, so they ramp alike.
    #[test]
    fn per_page_ramp_at_max_2048() {
        for call_pages in [1, 512] {
            let mut ra = per_page(2048);
            let mut io = FakeIo::new(20_000);
            read_calls(&mut ra, &mut io, 0, call_pages, 8192 / call_pages);
            assert_eq!(
                &io.windows[..4],
                &[
                    (0, 0, 1024, true),
                    (1024, 1024, 1025, true),
                    (2049, 2049, 1537, true),
                    (3072, 3586, 2048, true)
                ],
                "{call_pages}-page reads"
            );
        }
    }

    // Proves a 2.6.9 page missing from the cache (evicted read-ahead) is read alone while the
    // windows go on, and that each miss shrinks `next_size` by 3 pages down to the floor of 4
    // (2.6.9's `handle_ra_miss`; the hits that follow grow it back by 2 per page).
    #[test]
    fn per_page_missing_page_shrinks_the_window_and_is_read_alone() {
        let mut ra = per_page(32);
        let mut io = FakeIo::new(1000);
        read_calls(&mut ra, &mut io, 0, 1, 100);
        let windows_before = io.windows.len();
        // Steady state: current 90..122, ahead 122..154. Evict page 100 before the reader gets
        // there.
        assert_eq!(io.windows.last().map(|w| (w.1, w.2)), Some((122, 32)));
        io.cached[100] = false;
        read_calls(&mut ra, &mut io, 100, 1, 30);
        assert_eq!(io.single, vec![100]);
        assert_eq!(io.windows.len(), windows_before + 1, "one more ahead window, at page 123");
        let ReadAhead::PerPage(state) = &mut ra else { unreachable!() };
        assert_eq!(state.next_size, NextSize::Pages(32));
        state.missing(130);
        assert_eq!(state.next_size, NextSize::Pages(29));
        for page in 131..150 {
            state.missing(page);
        }
        assert_eq!(state.next_size, NextSize::Pages(MIN_PAGES as i64), "floor of 4 pages");
    }

    // Proves a read-congested queue collapses a 2.6.9 reader to single-page reads: every window
    // is skipped (counted), every page is then missing and read alone, and the window size
    // shrinks to the 4-page floor; once congestion clears, windows come back.
    #[test]
    fn per_page_congestion_collapses_to_single_pages() {
        let mut ra = per_page(32);
        let mut io = FakeIo::new(1000);
        io.congested = true;
        read_calls(&mut ra, &mut io, 0, 1, 200);
        assert!(io.windows.is_empty());
        assert_eq!(io.single, (0..200).collect::<Vec<_>>());
        assert!(io.skipped_pages > 0);
        let ReadAhead::PerPage(state) = &ra else { unreachable!() };
        assert!(
            matches!(state.next_size, NextSize::Pages(size) if size <= MIN_PAGES as i64 + 2)
                || state.next_size == NextSize::Off,
            "{:?}",
            state.next_size
        );
        io.congested = false;
        read_calls(&mut ra, &mut io, 200, 1, 200);
        assert!(!io.windows.is_empty(), "windows again without congestion");
    }

    // Proves 2.6.9 gives random reads shrinking windows (16, 8, 4, 2 pages) and then turns
    // read-ahead off, after which each page is read alone.
    #[test]
    fn per_page_random_reads_shrink_to_off() {
        let mut ra = per_page(32);
        let mut io = FakeIo::new(100_000);
        for page in [5000, 100, 70_000, 9000, 33_333, 42] {
            read_calls(&mut ra, &mut io, page, 1, 1);
        }
        assert_eq!(io.sizes(), vec![16, 8, 4, 2]);
        assert_eq!(io.single, vec![33_333, 42]);
    }

    // Proves 2.6.18's ramp for 4 KiB reads at max 32 (§1.1): windows of 4, 8, 16, 32, 32, each
    // ahead window issued when the reader steps into the previous one.
    #[test]
    fn per_call_ramp_with_4k_reads() {
        let mut ra = per_call(32);
        let mut io = FakeIo::new(1000);
        read_calls(&mut ra, &mut io, 0, 1, 100);
        assert_eq!(
            &io.windows[..6],
            &[
                (0, 0, 4, true),
                (1, 4, 8, true),
                (4, 12, 16, true),
                (12, 28, 32, true),
                (28, 60, 32, true),
                (60, 92, 32, true)
            ]
        );
        assert!(io.single.is_empty());
    }

    // Proves 2.6.18 with 2 MiB reads at max 32 (dd, hdparm): a window of 32 pages plus the
    // forced ahead window of 32 at once, then one 32-page window per crossing, each issued
    // when the reader reaches the page the previous call returned.
    #[test]
    fn per_call_big_reads_force_the_ahead_window() {
        let mut ra = per_call(32);
        let mut io = FakeIo::new(2048);
        read_calls(&mut ra, &mut io, 0, 512, 2);
        assert_eq!(
            &io.windows[..4],
            &[(0, 0, 32, true), (0, 32, 32, true), (32, 64, 32, true), (64, 96, 32, true)]
        );
        assert_eq!(
            io.windows.len(),
            32 + 1,
            "one window per 32 pages of 1024, plus the last ahead"
        );
        assert!(
            io.windows.iter().skip(1).all(|&(at, start, count, _)| count == 32 && start == at + 32)
        );
    }

    // Proves 2.6.18 at max 2048 with 512 KiB reads (iozone -r512, setra 16386): windows of
    // 256, 512, 1024 and 2048 pages, the last two issued on crossing into the window before.
    #[test]
    fn per_call_ramp_at_max_2048_with_512k_reads() {
        let mut ra = per_call(2048);
        let mut io = FakeIo::new(20_000);
        read_calls(&mut ra, &mut io, 0, 128, 60);
        assert_eq!(
            &io.windows[..5],
            &[
                (0, 0, 256, true),
                (128, 256, 512, true),
                (256, 768, 1024, true),
                (768, 1792, 2048, true),
                (1792, 3840, 2048, true)
            ]
        );
    }

    // Proves a read-congested queue drops 2.6.18's non-blocking ahead window, and that the
    // window is read anyway (blocking) once the reader is inside it; the initial window ignores
    // congestion.
    #[test]
    fn per_call_congestion_drops_the_ahead_window_until_the_reader_is_in_it() {
        let mut ra = per_call(32);
        let mut io = FakeIo::new(1000);
        io.congested = true;
        read_calls(&mut ra, &mut io, 0, 1, 5);
        // Page 0: the initial window (blocking). Pages 1–3: the ahead window 4..12 dropped each
        // time. Page 4: the reader is in it — read although congested; the windows shift and
        // the next ahead window (12..28) is dropped again.
        assert_eq!(io.windows, vec![(0, 0, 4, true), (4, 4, 8, true)]);
        assert_eq!(io.skipped_pages, 3 * 8 + 16);
        assert!(io.single.is_empty());
    }

    // Proves a seek turns 2.6.18 read-ahead off: the non-sequential call reads only the pages
    // it asked for (not speculative), and the next sequential call starts a fresh initial
    // window of 4 pages.
    #[test]
    fn per_call_seek_turns_read_ahead_off() {
        let mut ra = per_call(32);
        let mut io = FakeIo::new(100_000);
        read_calls(&mut ra, &mut io, 0, 1, 40);
        let before = io.windows.len();
        read_calls(&mut ra, &mut io, 50_000, 2, 1);
        assert_eq!(io.windows[before], (50_000, 50_000, 2, false));
        read_calls(&mut ra, &mut io, 50_002, 1, 1);
        assert_eq!(io.windows[before + 1], (50_002, 50_002, 4, true));
        // A first read away from page 0 is a seek too.
        let mut ra = per_call(32);
        let mut io = FakeIo::new(100_000);
        read_calls(&mut ra, &mut io, 7000, 64, 1);
        assert_eq!(io.windows[0], (7000, 7000, 32, false));
        // The call after the 32-page burst is sequential again: an initial window, and as the
        // call still wants 32 pages, the ahead window with it.
        assert_eq!(&io.windows[1..], &[(7032, 7032, 32, true), (7032, 7064, 32, true)]);
        assert!(io.single.is_empty());
    }

    // Proves 2.6.18 turns read-ahead off after 256 pages of windows found cached, and back on
    // after a page is found missing.
    #[test]
    fn per_call_cached_file_turns_read_ahead_off_until_a_miss() {
        let mut ra = per_call(32);
        let mut io = FakeIo::new(2000);
        io.cached.iter_mut().for_each(|page| *page = true);
        read_calls(&mut ra, &mut io, 0, 1, 1000);
        // 4 + 8 + 16 + 32 × 7 = 252 < 256, the next window makes 284: off after 11 windows.
        assert_eq!(io.windows.len(), 11);
        io.cached[1500] = false;
        read_calls(&mut ra, &mut io, 1000, 1, 600);
        assert_eq!(io.single, vec![1500]);
        assert_eq!(io.windows[11], (1501, 1501, 4, true), "on again after the miss");
    }

    // Proves a thrash miss makes 2.6.18's next window 2 pages smaller (at least 4).
    #[test]
    fn per_call_missing_page_shrinks_the_next_window() {
        let mut ra = per_call(32);
        let mut io = FakeIo::new(1000);
        read_calls(&mut ra, &mut io, 0, 1, 40);
        // Windows so far: 0+4, 4+8, 12+16, 28+32, 60+32 (issued at page 28).
        io.cached[50] = false;
        read_calls(&mut ra, &mut io, 40, 1, 60);
        assert_eq!(io.single, vec![50]);
        // At page 60 the next ahead window: 32 − 2 = 30 pages.
        assert_eq!(io.windows[5], (60, 92, 30, true));
        assert_eq!(io.windows[6], (92, 122, 32, true), "grows back after");
    }

    // Proves the same reads give the same windows (no hidden state between runs), and that a
    // zero maximum reads every page alone in both versions.
    #[test]
    fn deterministic_and_zero_maximum() {
        for open in [per_page, per_call] {
            let run = || {
                let mut ra = open(32);
                let mut io = FakeIo::new(5000);
                read_calls(&mut ra, &mut io, 0, 3, 500);
                read_calls(&mut ra, &mut io, 2000, 7, 100);
                (io.windows, io.single)
            };
            assert_eq!(run(), run());
            let mut off = open(0);
            let mut io = FakeIo::new(100);
            read_calls(&mut off, &mut io, 0, 8, 4);
            assert!(io.windows.is_empty());
            assert_eq!(io.single, (0..32).collect::<Vec<_>>());
        }
    }
}
