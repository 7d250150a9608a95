//! Read-ahead: the kernel's sequential detection and growing window, per open file.
//!
//! Each (process, file) pair keeps a window — `start`, `size` pages, and `async_size`, the
//! tail of the window whose first page carries a **marker**. The rules, as the kernel's
//! on-demand read-ahead applies them:
//!
//! * A read that misses the cache **sequentially** (at the page after the previous read, or at
//!   the start of the file) opens a window at the missing page: `size` is the request rounded up
//!   to a power of two and multiplied by four when small (at most 1/32 of the maximum), by two
//!   when medium (at most 1/4), else the maximum; the pages beyond the request are the
//!   asynchronous part, marked at their first page.
//! * A read that reaches the **marked page** — the reader has caught up with the window's tail
//!   while it may still be in flight — submits the next window at once, right after the current
//!   one: four times larger while under 1/16 of the maximum, otherwise twice, capped at the
//!   maximum, all of it asynchronous (its first page marked). So in steady state the next
//!   window is always in flight before the reader needs it.
//! * A read that misses **non-sequentially** reads only what it asks for and resets the window.
//!
//! The maximum is the device's `read_ahead_kb` in pages (128 KiB by default; the classic file
//! server set 16386 sectors). The caller turns windows into reads of the pages not yet cached,
//! split at `max_sectors_kb` like any other request.

/// A read-ahead window in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) start: u64,
    pub(crate) size: u64,
    pub(crate) async_size: u64,
}

impl Window {
    /// The page that triggers the next window.
    pub(crate) fn marker(&self) -> u64 {
        self.start + self.size - self.async_size
    }

    fn end(&self) -> u64 {
        self.start + self.size
    }
}

/// One open file's read-ahead state.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReadAhead {
    window: Option<Window>,
    /// The page after the previous read's last page.
    next_expected: u64,
    /// Whether there was a previous read (page 0 counts as sequential for a fresh file).
    started: bool,
}

/// What a read should bring in beyond the pages it asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Only the requested pages.
    RequestOnly,
    /// This window (it covers the request's first missing page or follows the marker).
    Window(Window),
}

fn initial_size(request_pages: u64, max_pages: u64) -> u64 {
    let rounded = request_pages.max(1).next_power_of_two();
    if rounded <= max_pages / 32 {
        rounded * 4
    } else if rounded <= max_pages / 4 {
        rounded * 2
    } else {
        max_pages
    }
    .min(max_pages)
}

fn next_size(current: u64, max_pages: u64) -> u64 {
    if current < max_pages / 16 { current * 4 } else { current * 2 }.min(max_pages)
}

impl ReadAhead {
    /// A read of pages `first..end` (`end` exclusive) whose first missing page is `missing`
    /// (or `None` if every page is cached). `max_pages` of 0 turns read-ahead off. Returns what
    /// to read ahead, if anything.
    pub(crate) fn on_read(
        &mut self,
        first: u64,
        end: u64,
        missing: Option<u64>,
        max_pages: u64,
    ) -> Option<Decision> {
        let sequential = if self.started { first == self.next_expected } else { first == 0 };
        self.started = true;
        self.next_expected = end;
        if max_pages == 0 {
            return missing.map(|_| Decision::RequestOnly);
        }
        // The reader reached the marked page: the next window goes out now.
        if let Some(window) = self.window
            && (first..end).contains(&window.marker())
        {
            let size = next_size(window.size, max_pages);
            let next = Window { start: window.end(), size, async_size: size };
            self.window = Some(next);
            return Some(Decision::Window(next));
        }
        let missing = missing?;
        if !sequential {
            self.window = None;
            return Some(Decision::RequestOnly);
        }
        // A sequential miss: open (or reopen) a window at the missing page.
        let request_pages = end - missing;
        let size = initial_size(request_pages, max_pages).max(request_pages);
        let async_size = if size > request_pages { size - request_pages } else { size };
        let window = Window { start: missing, size, async_size };
        self.window = Some(window);
        Some(Decision::Window(window))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the window's growth for a 4 KiB sequential reader with a 128 KiB maximum (32
    // pages): 4 pages, then 8, 16, 32 — each submitted when the reader reaches the marker.
    #[test]
    fn a_sequential_reader_ramps_up_to_the_maximum() {
        let mut ra = ReadAhead::default();
        let first = ra.on_read(0, 1, Some(0), 32);
        assert_eq!(first, Some(Decision::Window(Window { start: 0, size: 4, async_size: 3 })));
        let window = |start, size| Some(Decision::Window(Window { start, size, async_size: size }));
        assert_eq!(ra.on_read(1, 2, None, 32), window(4, 8));
        // Pages 2..4 are cached: nothing to do until the marker at page 4.
        assert_eq!(ra.on_read(2, 3, None, 32), None);
        assert_eq!(ra.on_read(3, 4, None, 32), None);
        assert_eq!(ra.on_read(4, 5, None, 32), window(12, 16));
        assert_eq!(ra.on_read(12, 13, None, 32), window(28, 32));
        assert_eq!(ra.on_read(28, 29, None, 32), window(60, 32));
    }

    // Proves random reads get no read-ahead and reset the window.
    #[test]
    fn random_reads_get_none() {
        let mut ra = ReadAhead::default();
        assert_eq!(ra.on_read(1000, 1001, Some(1000), 32), Some(Decision::RequestOnly));
        assert_eq!(ra.on_read(77, 78, Some(77), 32), Some(Decision::RequestOnly));
        // Back to sequential after the last read: a window opens.
        assert!(matches!(ra.on_read(78, 79, Some(78), 32), Some(Decision::Window(_))));
        assert_eq!(ra.on_read(5, 6, None, 32), None, "a cached random read does nothing");
    }

    // Proves large requests get windows of at least their own size, capped at the maximum.
    #[test]
    fn large_requests() {
        let mut ra = ReadAhead::default();
        // 2 MiB reads (512 pages) with an 8 MiB maximum (2048 pages): 512 ≤ 2048/4 → doubled.
        let window = ra.on_read(0, 512, Some(0), 2048);
        assert_eq!(
            window,
            Some(Decision::Window(Window { start: 0, size: 1024, async_size: 512 }))
        );
        // Over a quarter of the maximum: the maximum.
        let mut big = ReadAhead::default();
        let window = big.on_read(0, 600, Some(0), 2048);
        assert_eq!(
            window,
            Some(Decision::Window(Window { start: 0, size: 2048, async_size: 1448 }))
        );
        assert_eq!(initial_size(8, 2048), 32);
        assert_eq!(initial_size(100, 2048), 256);
        assert_eq!(next_size(64, 2048), 256);
        assert_eq!(next_size(1024, 2048), 2048);
    }

    #[test]
    fn read_ahead_off() {
        let mut ra = ReadAhead::default();
        assert_eq!(ra.on_read(0, 1, Some(0), 0), Some(Decision::RequestOnly));
        assert_eq!(ra.on_read(1, 2, None, 0), None);
    }
}
