//! The io_uring backend: one ring per reactor. Transfers become `READ`/`WRITE` (one segment),
//! `READV`/`WRITEV` (several) or `FSYNC` (datasync) entries; the reactor's timers become the
//! wait's timeout (`IORING_ENTER_EXT_ARG`), and other threads wake it through an eventfd the
//! ring always has a read pending on.
//!
//! Set up for one thread (issue 20, from the profile of `elevator run`): the ring is created
//! `IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN` (Linux 6.1), so completions are
//! posted when the reactor asks for them (an `io_uring_enter` with `IORING_ENTER_GETEVENTS`)
//! instead of interrupting it with task work after every transfer, and disabled
//! (`IORING_SETUP_R_DISABLED`) until the thread that uses it enables it — an `Engine` builds
//! its ring on the caller's thread and runs it on its own. Where a kernel refuses those flags it
//! falls back to `IORING_SETUP_COOP_TASKRUN` (5.19), then to a plain ring. The targets'
//! descriptors are registered (`IORING_REGISTER_FILES`, fixed files: no `fget`/`fput` per
//! transfer) when the kernel allows it. See io_uring_setup(2) and io_uring_register(2).
//!
//! **The wait's deadline is a kept timer** (issue 20, from QD1 against fio): a timed enter
//! (`IORING_ENTER_EXT_ARG`) arms and cancels a kernel hrtimer on every wait, and in a VM each
//! of those programs the virtual APIC timer (a VM exit): 2–3 % of a 4 KiB read at QD1 on a
//! RAM-backed loop device. Instead the ring keeps one absolute `IORING_OP_TIMEOUT` (monotonic
//! clock) armed for the nearest deadline asked, and waits without a timeout: a wait whose
//! deadline is the one already armed (a run's end, asked again at every I/O) programs no timer
//! at all; an earlier one moves it (`IORING_TIMEOUT_UPDATE`, in the same enter, its own
//! completion skipped on success so it does not end the wait); a later one
//! keeps the earlier timer, whose firing only wakes the reactor once too soon. Each armed
//! timer carries a generation in its token, so the firing of a replaced one is told apart.

#![allow(unsafe_code)] // io_uring entries carry raw pointers the kernel writes through.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use elevator_core::Duration;
use io_uring::{IoUring, opcode, squeue, types};

use super::{Backend, Done, Transfer, TransferOp, Waker};

/// `IORING_ENTER_GETEVENTS` (include/uapi/linux/io_uring.h), which the crate keeps private.
const IORING_ENTER_GETEVENTS: u32 = 1 << 0;

/// Slots in the registered-buffer table: one per buffer a run keeps (one per I/O in flight
/// and size), well under the kernel's `IORING_MAX_REG_BUFFERS` (16384).
const BUFFER_SLOTS: u16 = 4096;

/// The token of the eventfd read that wakes the reactor.
const WAKE_TOKEN: u64 = u64::MAX;

/// The tokens of the kept deadline timer: this tag in the high 32 bits, the timer's generation
/// in the low 32 (transfers' tokens are small slot indexes and never carry the tag).
const TIMER_TAG: u64 = 0xE1E7_0000_0000_0000;
/// The mask of [`TIMER_TAG`].
const TIMER_TAG_MASK: u64 = 0xFFFF_FFFF_0000_0000;
/// The token of a timer update's own completion (ignored).
const TIMER_UPDATE_TOKEN: u64 = u64::MAX - 1;
/// How much later than asked an armed timer may fire and still be kept: far below the
/// kernel's own timer slack for a sleeping task (50 µs by default).
const TIMER_LATE_NS: u64 = 1_000;

/// The kept deadline timer (see the module's notes).
#[derive(Debug, Default)]
struct DeadlineTimer {
    /// The generation and absolute monotonic deadline (ns) of the armed timer.
    armed: Option<(u32, u64)>,
    /// The next generation.
    generation: u32,
    /// Where the timespec of the last arm or update lives until its enter reads it (the
    /// kernel copies it when it takes the entry); boxed so its address is stable.
    timespec: Box<types::Timespec>,
}

/// The entry for `transfer` on `fd` (a `types::Fd` or a registered file's `types::Fixed`: two
/// types the opcodes take through a trait of the crate's that cannot be named, hence a macro).
macro_rules! entry_for {
    ($fd:expr, $transfer:expr) => {{
        let fd = $fd;
        let transfer: &Transfer = $transfer;
        // SAFETY: the reactor gives at least one valid iovec for reads and writes.
        let first = || unsafe { *transfer.iov };
        let entry = match (transfer.op, transfer.iov_count) {
            (TransferOp::Read, 1) => {
                let iov = first();
                opcode::Read::new(fd, iov.iov_base.cast(), iov.iov_len as u32)
                    .offset(transfer.offset)
                    .build()
            }
            (TransferOp::Write, 1) => {
                let iov = first();
                opcode::Write::new(fd, iov.iov_base.cast_const().cast(), iov.iov_len as u32)
                    .offset(transfer.offset)
                    .build()
            }
            (TransferOp::Read, count) => {
                opcode::Readv::new(fd, transfer.iov, count).offset(transfer.offset).build()
            }
            (TransferOp::Write, count) => {
                opcode::Writev::new(fd, transfer.iov, count).offset(transfer.offset).build()
            }
            (TransferOp::Flush, _) => {
                opcode::Fsync::new(fd).flags(types::FsyncFlags::DATASYNC).build()
            }
        };
        entry.user_data(transfer.token)
    }};
}

/// An io_uring and what it needs to stay valid.
pub(crate) struct Uring {
    ring: IoUring,
    /// The targets' descriptors (by [`Transfer::file`]), duplicated so the ring never outlives
    /// them.
    fds: Vec<OwnedFd>,
    eventfd: Arc<OwnedFd>,
    /// Where the eventfd read lands; boxed so its address is stable.
    wake_buf: Box<[u8; 8]>,
    wake_armed: bool,
    /// Entries that did not fit in the submission queue yet.
    backlog: VecDeque<squeue::Entry>,
    /// The ring was created disabled and single-issuer: the first thread to use it enables
    /// it (and becomes its only submitter).
    enable_pending: bool,
    /// Deferred task work: completions are posted only by an enter with `GETEVENTS`.
    deferred: bool,
    /// The targets' descriptors are registered: transfers name them by index.
    fixed_files: bool,
    /// Slots of the sparse buffer table taken so far (`register_buffer`); `None` before the
    /// table is made, and for good once the kernel refused it.
    buffers_used: Option<u16>,
    buffers_refused: bool,
    /// The wait's deadline, kept armed across waits.
    timer: DeadlineTimer,
}

impl std::fmt::Debug for Uring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uring").field("backlog", &self.backlog.len()).finish_non_exhaustive()
    }
}

impl Uring {
    /// A ring for `fds` with room for `depth` transfers (or `entries` submission entries,
    /// rounded up to a power of two by the kernel).
    pub(crate) fn new(
        fds: &[BorrowedFd<'_>],
        depth: u32,
        entries: Option<u32>,
    ) -> io::Result<Uring> {
        // The transfers in flight plus the wake-up read.
        let entries = entries.unwrap_or(depth + 1).clamp(1, 4096);
        let (ring, deferred) = build_ring(entries)?;
        if !ring.params().is_feature_ext_arg() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel's io_uring lacks timed waits (IORING_FEAT_EXT_ARG, Linux 5.11)",
            ));
        }
        let mut probe = io_uring::Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        for (code, name) in [
            (opcode::Read::CODE, "READ"),
            (opcode::Write::CODE, "WRITE"),
            (opcode::Readv::CODE, "READV"),
            (opcode::Writev::CODE, "WRITEV"),
            (opcode::Fsync::CODE, "FSYNC"),
        ] {
            if !probe.is_supported(code) {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("this kernel's io_uring lacks {name}"),
                ));
            }
        }
        let eventfd = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )?;
        let fds: Vec<OwnedFd> =
            fds.iter().map(|fd| fd.try_clone_to_owned()).collect::<io::Result<_>>()?;
        // Fixed files save a descriptor lookup per transfer; a kernel or limit that refuses
        // them leaves the plain descriptors, which work the same.
        let raw: Vec<_> = fds.iter().map(AsRawFd::as_raw_fd).collect();
        let fixed_files = ring.submitter().register_files(&raw).is_ok();
        Ok(Uring {
            ring,
            fds,
            eventfd: Arc::new(eventfd),
            wake_buf: Box::new([0; 8]),
            wake_armed: false,
            backlog: VecDeque::new(),
            enable_pending: deferred,
            deferred,
            fixed_files,
            buffers_used: None,
            buffers_refused: false,
            timer: DeadlineTimer::default(),
        })
    }

    /// Enables a ring created disabled, on the thread that uses it (its single issuer).
    fn enable(&mut self) -> io::Result<()> {
        if self.enable_pending {
            self.ring.submitter().register_enable_rings()?;
            self.enable_pending = false;
        }
        Ok(())
    }

    /// Submits what is queued; with deferred task work, also posts the completions that
    /// are ready (without waiting for any).
    fn submit_ready(&mut self) -> io::Result<usize> {
        if !self.deferred {
            return self.ring.submit();
        }
        let queued = self.ring.submission().len() as u32;
        // SAFETY: no argument is passed; the entries' pointers are valid (see `push`).
        unsafe {
            self.ring.submitter().enter::<libc::sigset_t>(queued, 0, IORING_ENTER_GETEVENTS, None)
        }
    }

    fn fd(&self, transfer: &Transfer) -> types::Fd {
        types::Fd(self.fds[transfer.file as usize].as_raw_fd())
    }

    fn entry(&self, transfer: &Transfer) -> squeue::Entry {
        if let (Some(index), 1, TransferOp::Read | TransferOp::Write) =
            (transfer.buffer, transfer.iov_count, transfer.op)
        {
            // SAFETY: the reactor gives one valid iovec, inside registered buffer `index`.
            let iov = unsafe { *transfer.iov };
            let (ptr, len) = (iov.iov_base.cast::<u8>(), iov.iov_len as u32);
            let entry = match (transfer.op, self.fixed_files) {
                (TransferOp::Read, true) => {
                    opcode::ReadFixed::new(types::Fixed(transfer.file), ptr, len, index)
                        .offset(transfer.offset)
                        .build()
                }
                (TransferOp::Read, false) => {
                    opcode::ReadFixed::new(self.fd(transfer), ptr, len, index)
                        .offset(transfer.offset)
                        .build()
                }
                (_, true) => opcode::WriteFixed::new(types::Fixed(transfer.file), ptr, len, index)
                    .offset(transfer.offset)
                    .build(),
                (_, false) => opcode::WriteFixed::new(self.fd(transfer), ptr, len, index)
                    .offset(transfer.offset)
                    .build(),
            };
            return entry.user_data(transfer.token);
        }
        if self.fixed_files {
            entry_for!(types::Fixed(transfer.file), transfer)
        } else {
            entry_for!(types::Fd(self.fds[transfer.file as usize].as_raw_fd()), transfer)
        }
    }

    /// Pushes `entry`, submitting once to make room; false if it still does not fit.
    fn push(&mut self, entry: &squeue::Entry) -> io::Result<bool> {
        self.enable()?;
        for attempt in 0..2 {
            // SAFETY: every pointer in the entry (buffers, iovec arrays, the wake buffer)
            // stays valid and untouched until its completion is reaped.
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                return Ok(true);
            }
            if attempt == 0 {
                match self.submit_ready() {
                    Ok(_) => {}
                    // The completion queue is full: reaping (in `wait`) makes room.
                    Err(error) if error.raw_os_error() == Some(libc::EBUSY) => return Ok(false),
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(false)
    }

    fn arm_wake(&mut self) -> io::Result<()> {
        if self.wake_armed {
            return Ok(());
        }
        let entry = opcode::Read::new(
            types::Fd(self.eventfd.as_raw_fd()),
            self.wake_buf.as_mut_ptr(),
            self.wake_buf.len() as u32,
        )
        .build()
        .user_data(WAKE_TOKEN);
        if self.push(&entry)? {
            self.wake_armed = true;
        }
        Ok(())
    }
}

impl DeadlineTimer {
    /// A completion of the timer's own (`token`): that timer fired, or was cancelled at
    /// teardown; if it is the armed one, none is armed now.
    fn completed(&mut self, token: u64) {
        let generation = (token & !TIMER_TAG_MASK) as u32;
        if self.armed.is_some_and(|(armed, _)| armed == generation) {
            self.armed = None;
        }
    }
}

impl Uring {
    /// Makes sure a timer fires no later than `timeout` from now (and at most
    /// [`TIMER_LATE_NS`] after it): keeps the armed one when it is due by then, moves it
    /// earlier otherwise, arms one when none is. False if the submission queue had no room
    /// (the caller then waits with a timed enter).
    fn arm_deadline(&mut self, timeout: Duration) -> io::Result<bool> {
        // A move must not wake the wait it belongs to: its own completion is skipped when it
        // succeeds (`IOSQE_CQE_SKIP_SUCCESS`, Linux 5.17); without that, timed enters.
        if !self.ring.params().is_feature_skip_cqe_on_success() {
            return Ok(false);
        }
        let now_ns = monotonic_ns();
        let deadline_ns = now_ns.saturating_add(timeout.as_nanos());
        if let Some((_, armed_ns)) = self.timer.armed
            && armed_ns > now_ns
            && armed_ns <= deadline_ns.saturating_add(TIMER_LATE_NS)
        {
            return Ok(true);
        }
        *self.timer.timespec = types::Timespec::new()
            .sec(deadline_ns / 1_000_000_000)
            .nsec((deadline_ns % 1_000_000_000) as u32);
        let timespec: *const types::Timespec = &*self.timer.timespec;
        let entry = match self.timer.armed {
            // Pending and due later than wanted: move it.
            Some((generation, armed_ns)) if armed_ns > now_ns => {
                self.timer.armed = Some((generation, deadline_ns));
                opcode::TimeoutUpdate::new(TIMER_TAG | u64::from(generation), timespec)
                    .flags(types::TimeoutFlags::ABS)
                    .build()
                    .flags(squeue::Flags::SKIP_SUCCESS)
                    .user_data(TIMER_UPDATE_TOKEN)
            }
            // None, or one that has fired (its completion may still be on its way): a new one.
            _ => {
                let generation = self.timer.generation;
                self.timer.generation = generation.wrapping_add(1);
                self.timer.armed = Some((generation, deadline_ns));
                opcode::Timeout::new(timespec)
                    .flags(types::TimeoutFlags::ABS)
                    .build()
                    .user_data(TIMER_TAG | u64::from(generation))
            }
        };
        if self.push(&entry)? {
            return Ok(true);
        }
        self.timer.armed = None;
        Ok(false)
    }
}

/// The monotonic clock in ns (the clock of `IORING_TIMEOUT_ABS`).
fn monotonic_ns() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (now.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(now.tv_nsec as u64)
}

impl Drop for Uring {
    fn drop(&mut self) {
        // A ring's teardown runs later, in a kernel worker: without this the registered
        // targets would stay open (a detached loop device attached) and the buffers pinned for
        // a while after the run. Unregistering releases them now; an error (a kernel that
        // cannot) leaves them to the teardown.
        if self.fixed_files {
            let _ = self.ring.submitter().unregister_files();
        }
        if self.buffers_used.is_some() {
            let _ = self.ring.submitter().unregister_buffers();
        }
    }
}

impl Backend for Uring {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn start(&mut self, transfer: Transfer) -> io::Result<()> {
        let entry = self.entry(&transfer);
        if !self.backlog.is_empty() || !self.push(&entry)? {
            self.backlog.push_back(entry);
        }
        Ok(())
    }

    fn wait(&mut self, timeout: Option<Duration>, done: &mut Vec<Done>) -> io::Result<()> {
        while let Some(entry) = self.backlog.front().cloned() {
            if !self.push(&entry)? {
                break;
            }
            self.backlog.pop_front();
        }
        self.enable()?;
        self.arm_wake()?;
        let ready = !self.ring.completion().is_empty();
        let result = match timeout {
            _ if ready => self.submit_ready(),
            Some(limit) if limit == Duration::ZERO => self.submit_ready(),
            Some(limit) if self.arm_deadline(limit)? => self.ring.submit_and_wait(1),
            Some(limit) => {
                let timespec =
                    types::Timespec::from(std::time::Duration::from_nanos(limit.as_nanos()));
                let args = types::SubmitArgs::new().timespec(&timespec);
                self.ring.submitter().submit_with_args(1, &args)
            }
            None => self.ring.submit_and_wait(1),
        };
        match result {
            Ok(_) => {}
            Err(error)
                if matches!(
                    error.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN)
                ) => {}
            Err(error) => return Err(error),
        }
        for cqe in self.ring.completion() {
            let token = cqe.user_data();
            if token == WAKE_TOKEN {
                self.wake_armed = false;
            } else if token == TIMER_UPDATE_TOKEN {
                // A move that found the timer gone: it fired, and its own completion says so.
            } else if token & TIMER_TAG_MASK == TIMER_TAG {
                self.timer.completed(token);
            } else {
                done.push(Done { token, result: cqe.result() });
            }
        }
        Ok(())
    }

    fn waker(&self) -> Waker {
        Waker::EventFd(Arc::clone(&self.eventfd))
    }

    fn register_buffer(&mut self, ptr: *mut u8, len: usize) -> Option<u16> {
        if self.buffers_refused {
            return None;
        }
        let used = match self.buffers_used {
            Some(used) => used,
            None => {
                // A sparse table (IORING_RSRC_REGISTER_SPARSE, Linux 5.19) filled one buffer
                // at a time as the run's pool allocates them.
                if self.ring.submitter().register_buffers_sparse(u32::from(BUFFER_SLOTS)).is_err() {
                    self.buffers_refused = true;
                    return None;
                }
                0
            }
        };
        if used >= BUFFER_SLOTS {
            self.buffers_used = Some(used);
            return None;
        }
        let iov = libc::iovec { iov_base: ptr.cast(), iov_len: len };
        // SAFETY: the caller keeps the memory allocated, at this address, while the ring
        // lives (`Backend::register_buffer`).
        let registered =
            unsafe { self.ring.submitter().register_buffers_update(u32::from(used), &[iov], None) };
        match registered {
            Ok(()) => {
                self.buffers_used = Some(used + 1);
                Some(used)
            }
            Err(_) => {
                // A memory-lock limit or a kernel that cannot: plain transfers from now on.
                self.buffers_used = Some(used);
                self.buffers_refused = true;
                None
            }
        }
    }
}

/// The ring for `entries` submission entries: single issuer with deferred task work where the
/// kernel has it (6.1; then true: created disabled), else cooperative task work (5.19), else
/// plain.
fn build_ring(entries: u32) -> io::Result<(IoUring, bool)> {
    let mut deferred = IoUring::builder();
    deferred.setup_clamp().setup_single_issuer().setup_defer_taskrun().setup_r_disabled();
    let mut cooperative = IoUring::builder();
    cooperative.setup_clamp().setup_coop_taskrun();
    let mut plain = IoUring::builder();
    plain.setup_clamp();
    let mut last = None;
    for (builder, is_deferred) in [(deferred, true), (cooperative, false), (plain, false)] {
        match builder.build(entries) {
            Ok(ring) => return Ok((ring, is_deferred)),
            // An older kernel refuses flags it does not know with EINVAL.
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => last = Some(error),
            Err(error) => return Err(error),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EINVAL)))
}

/// Why io_uring could not be set up, in one line for the user.
pub(crate) fn unavailable_reason(error: &io::Error) -> String {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
        .filter(|&value| value > 0);
    let cause = match (error.raw_os_error(), disabled) {
        (Some(libc::EPERM), Some(value)) => {
            format!("io_uring is disabled here (kernel.io_uring_disabled={value})")
        }
        (Some(libc::EPERM), None) => {
            "io_uring_setup is not permitted (a seccomp profile, such as Docker's default, \
             blocks it)"
                .to_owned()
        }
        (Some(libc::ENOSYS), _) => "this kernel has no io_uring".to_owned(),
        (Some(libc::ENOMEM), _) => {
            "io_uring could not lock memory for its rings (raise RLIMIT_MEMLOCK)".to_owned()
        }
        _ => format!("io_uring could not be set up: {error}"),
    };
    format!("{cause}; using the thread pool of positional reads and writes")
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;
    use crate::buffer::AlignedBuf;

    fn transfer(op: TransferOp, iov: &libc::iovec, offset: u64, buffer: Option<u16>) -> Transfer {
        Transfer {
            token: offset,
            op,
            offset,
            iov,
            iov_count: 1,
            length_bytes: iov.iov_len as u64,
            file: 0,
            buffer,
        }
    }

    // Proves registered buffers move the right bytes: a write from one registered buffer and
    // a read into another (at an offset inside it, as a split I/O's bio is) land where plain
    // transfers say they do, and each buffer gets its own index.
    #[test]
    fn fixed_buffer_transfers_move_the_same_bytes_as_plain_ones() {
        let file = tempfile::tempfile().unwrap();
        file.set_len(1 << 20).unwrap();
        let Ok(mut ring) = Uring::new(&[file.as_fd()], 8, None) else {
            // No io_uring here (seccomp, disabled): the thread pool's tests cover the rest.
            assert!(std::env::var("CI").is_err(), "io_uring is unavailable under CI");
            return;
        };
        let mut source = AlignedBuf::zeroed(8192);
        for (index, byte) in source.as_mut_slice().iter_mut().enumerate() {
            *byte = (index % 251) as u8;
        }
        let mut landing = AlignedBuf::zeroed(16384);
        let Some(source_index) = ring.register_buffer(source.as_mut_ptr(), source.capacity())
        else {
            return; // A kernel without sparse buffer tables: transfers stay plain.
        };
        let landing_index = ring.register_buffer(landing.as_mut_ptr(), landing.capacity());
        assert_ne!(Some(source_index), landing_index);
        let run = |ring: &mut Uring, transfer: Transfer| {
            ring.start(transfer).unwrap();
            let mut done = Vec::new();
            while done.is_empty() {
                ring.wait(Some(Duration::from_secs(5)), &mut done).unwrap();
            }
            assert_eq!(
                done,
                [Done { token: transfer.token, result: transfer.length_bytes as i32 }]
            );
        };
        let write = libc::iovec { iov_base: source.as_mut_ptr().cast(), iov_len: 8192 };
        run(&mut ring, transfer(TransferOp::Write, &write, 65536, Some(source_index)));
        // Into the landing buffer's second 4 KiB page, through the fixed path.
        let inside = landing.as_mut_ptr().wrapping_add(4096);
        let read = libc::iovec { iov_base: inside.cast(), iov_len: 8192 };
        run(&mut ring, transfer(TransferOp::Read, &read, 65536, landing_index));
        assert_eq!(&landing.as_slice()[4096..12288], source.as_slice());
        assert!(landing.as_slice()[..4096].iter().all(|&byte| byte == 0), "before it untouched");
        // A plain read of the same place agrees.
        let mut plain = AlignedBuf::zeroed(8192);
        let read = libc::iovec { iov_base: plain.as_mut_ptr().cast(), iov_len: 8192 };
        run(&mut ring, transfer(TransferOp::Read, &read, 65536, None));
        assert_eq!(plain.as_slice(), source.as_slice());
    }

    /// Waits on `ring` with `timeout` until it returns with nothing done (a deadline's wake);
    /// returns how long that took.
    fn wake_after(ring: &mut Uring, timeout: Duration) -> std::time::Duration {
        let clock = crate::clock::Clock::start();
        let mut done = Vec::new();
        ring.wait(Some(timeout), &mut done).unwrap();
        assert!(done.is_empty(), "the timer's own completion is not a transfer's: {done:?}");
        std::time::Duration::from_nanos(clock.now().as_nanos())
    }

    // Proves the kept deadline timer wakes every wait on time: a first deadline 20 ms away
    // arms it and fires; a later wait 5 s away arms a new one, which a wait asking for 10 ms
    // moves earlier (it wakes in about 10 ms, not 5 s); asking again for a deadline the armed
    // timer already meets keeps it (no second timer: the wake comes once, from the armed
    // one); and no timer's completion ever shows up as a transfer's.
    #[test]
    fn the_kept_deadline_timer_wakes_each_wait_on_time() {
        let file = tempfile::tempfile().unwrap();
        let Ok(mut ring) = Uring::new(&[file.as_fd()], 8, None) else {
            assert!(std::env::var("CI").is_err(), "io_uring is unavailable under CI");
            return;
        };
        let ms = std::time::Duration::from_millis;
        let first = wake_after(&mut ring, Duration::from_millis(20));
        assert!(first >= ms(19) && first < ms(1000), "{first:?}");
        assert_eq!(ring.timer.armed, None, "fired");
        // Arm 5 s away without waiting for it, then ask for 10 ms: the timer moves.
        assert!(ring.arm_deadline(Duration::from_secs(5)).unwrap());
        let (generation, far_ns) = ring.timer.armed.unwrap();
        let moved = wake_after(&mut ring, Duration::from_millis(10));
        assert!(moved >= ms(9) && moved < ms(1000), "{moved:?}");
        assert_eq!(ring.timer.armed, None, "the moved timer fired");
        assert!(far_ns > monotonic_ns(), "it had been armed for later");
        // A wait whose deadline the armed timer meets keeps it.
        assert!(ring.arm_deadline(Duration::from_millis(30)).unwrap());
        let (kept, _) = ring.timer.armed.unwrap();
        assert_ne!(kept, generation);
        let later = wake_after(&mut ring, Duration::from_millis(40));
        assert!(later >= ms(25) && later < ms(1000), "woken by the armed 30 ms timer: {later:?}");
    }
}
