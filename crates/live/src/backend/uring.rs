//! The io_uring backend: one ring per reactor. Transfers become `READ`/`WRITE` (one segment),
//! `READV`/`WRITEV` (several) or `FSYNC` (datasync) entries; the reactor's timers become the
//! wait's timeout (`IORING_ENTER_EXT_ARG`), and other threads wake it through an eventfd the
//! ring always has a read pending on.

#![allow(unsafe_code)] // io_uring entries carry raw pointers the kernel writes through.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use elevator_core::Duration;
use io_uring::{IoUring, opcode, squeue, types};

use super::{Backend, Done, Transfer, TransferOp, Waker};

/// The token of the eventfd read that wakes the reactor.
const WAKE_TOKEN: u64 = u64::MAX;

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
        let ring = IoUring::builder().setup_clamp().build(entries)?;
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
        Ok(Uring {
            ring,
            fds: fds.iter().map(|fd| fd.try_clone_to_owned()).collect::<io::Result<_>>()?,
            eventfd: Arc::new(eventfd),
            wake_buf: Box::new([0; 8]),
            wake_armed: false,
            backlog: VecDeque::new(),
        })
    }

    fn entry(&self, transfer: &Transfer) -> squeue::Entry {
        let fd = types::Fd(self.fds[transfer.file as usize].as_raw_fd());
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
    }

    /// Pushes `entry`, submitting once to make room; false if it still does not fit.
    fn push(&mut self, entry: &squeue::Entry) -> io::Result<bool> {
        for attempt in 0..2 {
            // SAFETY: every pointer in the entry (buffers, iovec arrays, the wake buffer)
            // stays valid and untouched until its completion is reaped.
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                return Ok(true);
            }
            if attempt == 0 {
                match self.ring.submit() {
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
        self.arm_wake()?;
        let ready = !self.ring.completion().is_empty();
        let result = match timeout {
            _ if ready => self.ring.submit(),
            Some(limit) if limit == Duration::ZERO => self.ring.submit(),
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
            if cqe.user_data() == WAKE_TOKEN {
                self.wake_armed = false;
            } else {
                done.push(Done { token: cqe.user_data(), result: cqe.result() });
            }
        }
        Ok(())
    }

    fn waker(&self) -> Waker {
        Waker::EventFd(Arc::clone(&self.eventfd))
    }
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
