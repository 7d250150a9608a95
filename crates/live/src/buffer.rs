//! Buffers aligned for O_DIRECT: the address, and the length in whole alignment units.

#![allow(unsafe_code)] // Allocation with an alignment, and raw views for the device.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::fmt;
use std::ptr::NonNull;

/// The alignment of every buffer: 4 KiB, enough for any logical block size a device or a
/// filesystem asks O_DIRECT to respect.
pub const BUFFER_ALIGN: usize = 4096;

/// A zeroed, 4 KiB-aligned heap buffer. It moves into the engine with an I/O and comes back
/// with the completion, so the device never writes to memory the caller still uses.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    capacity: usize,
}

// SAFETY: the buffer owns its allocation outright (like a `Vec<u8>`); nothing else aliases it.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only reads through `&self`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (its capacity is `len` rounded up to 4 KiB).
    pub fn zeroed(len: usize) -> AlignedBuf {
        let capacity = len.max(1).div_ceil(BUFFER_ALIGN) * BUFFER_ALIGN;
        let layout = Layout::from_size_align(capacity, BUFFER_ALIGN).expect("a valid layout");
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len, capacity }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Changes the length within the capacity (new bytes are whatever was there: zeroes or
    /// earlier contents).
    pub fn set_len(&mut self, len: usize) {
        assert!(len <= self.capacity, "length {len} over capacity {}", self.capacity);
        self.len = len;
    }

    /// Bytes it can hold without reallocating.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Its bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `capacity >= len` initialised (zeroed) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Its bytes, to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The start, for a device transfer. The caller keeps the buffer alive and untouched
    /// until the transfer is done.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.capacity, BUFFER_ALIGN).expect("a valid layout");
        // SAFETY: allocated in `zeroed` with this layout, freed once.
        unsafe { dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf").field("len", &self.len).finish_non_exhaustive()
    }
}

impl Clone for AlignedBuf {
    fn clone(&self) -> AlignedBuf {
        let mut copy = AlignedBuf::zeroed(self.len);
        copy.as_mut_slice().copy_from_slice(self.as_slice());
        copy
    }
}

/// Buffers kept for reuse, by capacity: a run allocates once per size and in-flight slot,
/// not once per I/O.
#[derive(Debug, Default)]
pub struct BufferPool {
    free: Vec<AlignedBuf>,
}

impl BufferPool {
    /// A buffer of `len` bytes, reused when one of enough capacity is free. Its contents are
    /// whatever the last user left.
    pub fn take(&mut self, len: usize) -> AlignedBuf {
        match self.free.iter().rposition(|buf| buf.capacity() >= len) {
            Some(index) => {
                let mut buf = self.free.swap_remove(index);
                buf.set_len(len);
                buf
            }
            None => AlignedBuf::zeroed(len),
        }
    }

    /// Gives `buf` back for reuse.
    pub fn give(&mut self, buf: AlignedBuf) {
        self.free.push(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves buffers are aligned, zeroed, sized in whole 4 KiB units, and that the pool hands
    // back a buffer of enough capacity instead of allocating.
    #[test]
    fn buffers_are_aligned_and_reused() {
        let mut buf = AlignedBuf::zeroed(5000);
        assert_eq!(buf.as_mut_ptr() as usize % BUFFER_ALIGN, 0);
        assert_eq!((buf.len(), buf.capacity()), (5000, 8192));
        assert!(buf.as_slice().iter().all(|&b| b == 0));
        buf.as_mut_slice()[4999] = 7;
        let address = buf.as_mut_ptr() as usize;
        let mut pool = BufferPool::default();
        pool.give(buf);
        let mut again = pool.take(8192);
        assert_eq!((again.as_mut_ptr() as usize, again.len()), (address, 8192));
        assert_eq!(pool.take(4096).capacity(), 4096, "a fresh one when none is free");
    }
}
