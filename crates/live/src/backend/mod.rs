//! How transfers reach the device: io_uring, or a thread pool of positional reads and writes
//! where io_uring is unavailable. Both do the same thing with the same results; the reactor
//! does not know which it has.

use std::fmt;
use std::io;

use elevator_core::Duration;

pub mod inject;
pub(crate) mod threads;
pub(crate) mod uring;

/// What a transfer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TransferOp {
    /// Read into the segments.
    Read,
    /// Write the segments.
    Write,
    /// Write the device's cache out (fdatasync).
    Flush,
}

/// One device transfer: a request's bios as one vectored read or write at `offset`, or a
/// flush. The segments are `iov_count` iovecs at `iov`, owned by the reactor and left alone
/// (array and buffers) until the transfer is done.
#[derive(Clone, Copy)]
pub(crate) struct Transfer {
    /// Handed back in [`Done::token`].
    pub(crate) token: u64,
    pub(crate) op: TransferOp,
    pub(crate) offset: u64,
    pub(crate) iov: *const libc::iovec,
    pub(crate) iov_count: u32,
    /// The bytes the segments add up to (0 for a flush).
    pub(crate) length_bytes: u64,
    /// Which of the backend's files it goes to (the index in [`build_many`]'s `fds`; 0 with
    /// one target).
    pub(crate) file: u32,
    /// The registered buffer ([`Backend::register_buffer`]) the one segment lies in, if any:
    /// io_uring then reads or writes it as a fixed buffer (`READ_FIXED`/`WRITE_FIXED`), without
    /// pinning its pages per transfer.
    pub(crate) buffer: Option<u16>,
}

impl fmt::Debug for Transfer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transfer")
            .field("token", &self.token)
            .field("op", &self.op)
            .field("offset", &self.offset)
            .field("iov_count", &self.iov_count)
            .field("file", &self.file)
            .field("buffer", &self.buffer)
            .finish()
    }
}

// SAFETY: a transfer is a description handed to the one thread that performs it; the memory
// it points to is owned by the reactor and untouched until the transfer completes.
#[allow(unsafe_code)]
unsafe impl Send for Transfer {}

/// A finished transfer: bytes moved, or a negative errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Done {
    pub(crate) token: u64,
    pub(crate) result: i32,
}

/// Wakes a reactor waiting in [`Backend::wait`] from another thread.
#[derive(Clone, Debug)]
pub(crate) enum Waker {
    /// io_uring: an eventfd the ring has a read pending on.
    EventFd(std::sync::Arc<std::os::fd::OwnedFd>),
    /// The thread pool: a message on its event channel.
    Channel(std::sync::mpsc::Sender<threads::Event>),
}

impl Waker {
    /// Ends the reactor's current (or next) wait.
    pub(crate) fn wake(&self) {
        match self {
            // A full counter (EAGAIN) still leaves the eventfd readable: the wake is not lost.
            Waker::EventFd(fd) => drop(rustix::io::write(fd, &1u64.to_ne_bytes())),
            Waker::Channel(sender) => drop(sender.send(threads::Event::Wake)),
        }
    }
}

/// A way to perform transfers.
pub(crate) trait Backend: Send {
    /// `io_uring` or `threads`.
    fn name(&self) -> &'static str;

    /// Starts `transfer`. It is never lost: a full submission queue is submitted to make
    /// room, and what still does not fit waits in a backlog for the next [`Backend::wait`].
    fn start(&mut self, transfer: Transfer) -> io::Result<()>;

    /// Submits what was started and collects finished transfers into `done`. Returns at once
    /// when some are already finished or `timeout` is zero; otherwise waits up to `timeout`
    /// (`None`: without limit) for a completion or a [`Waker::wake`].
    fn wait(&mut self, timeout: Option<Duration>, done: &mut Vec<Done>) -> io::Result<()>;

    /// A waker for other threads.
    fn waker(&self) -> Waker;

    /// Registers the `len` bytes at `ptr` as a fixed buffer and returns its index, or `None`
    /// where the backend has no such thing or refuses (no room, a memory-lock limit). The
    /// caller keeps the memory allocated, and never reuses its address for another buffer,
    /// as long as the backend lives: the kernel holds the pages it had at registration.
    fn register_buffer(&mut self, _ptr: *mut u8, _len: usize) -> Option<u16> {
        None
    }

    /// Faults injected so far (only [`inject::Inject`] injects any).
    fn inject_stats(&self) -> inject::InjectStats {
        inject::InjectStats::default()
    }
}

/// Which backend to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// io_uring, or the thread pool (saying why) when io_uring is unavailable.
    #[default]
    Auto,
    /// io_uring or fail.
    IoUring,
    /// The thread pool.
    Threads,
}

impl BackendChoice {
    /// Parses `auto`, `io-uring` or `threads`.
    pub fn parse(text: &str) -> Option<BackendChoice> {
        match text {
            "auto" => Some(BackendChoice::Auto),
            "io-uring" | "io_uring" | "uring" => Some(BackendChoice::IoUring),
            "threads" => Some(BackendChoice::Threads),
            _ => None,
        }
    }
}

/// `backend` with `faults` in front of it (none: as it is).
pub(crate) fn with_faults(
    backend: Box<dyn Backend>,
    clock: crate::clock::Clock,
    faults: &[inject::Fault],
) -> Box<dyn Backend> {
    if faults.is_empty() { backend } else { Box::new(inject::Inject::new(backend, clock, faults)) }
}

/// Builds the backend `choice` names for `fd` with room for `depth` transfers at once.
/// With `Auto`, a failure to set up io_uring gives the thread pool and the one-line reason.
pub(crate) fn build(
    choice: BackendChoice,
    fd: std::os::fd::BorrowedFd<'_>,
    depth: u32,
    ring_entries: Option<u32>,
) -> io::Result<(Box<dyn Backend>, Option<String>)> {
    build_many(choice, &[fd], depth, ring_entries)
}

/// [`build`] for several files at once: one ring (or pool) whose transfers each name their
/// file ([`Transfer::file`], an index in `fds`), so one wait sees every file's completions.
pub(crate) fn build_many(
    choice: BackendChoice,
    fd: &[std::os::fd::BorrowedFd<'_>],
    depth: u32,
    ring_entries: Option<u32>,
) -> io::Result<(Box<dyn Backend>, Option<String>)> {
    match choice {
        BackendChoice::Threads => Ok((Box::new(threads::ThreadPool::new(fd, depth)?), None)),
        BackendChoice::IoUring => Ok((Box::new(uring::Uring::new(fd, depth, ring_entries)?), None)),
        BackendChoice::Auto => match uring::Uring::new(fd, depth, ring_entries) {
            Ok(ring) => Ok((Box::new(ring), None)),
            Err(error) => {
                let why = uring::unavailable_reason(&error);
                Ok((Box::new(threads::ThreadPool::new(fd, depth)?), Some(why)))
            }
        },
    }
}
