//! The fallback backend: a pool of threads doing positional vectored reads and writes
//! (`preadv`/`pwritev`, finishing short transfers) and `fdatasync`, one transfer per thread
//! at a time, so up to `depth` are in flight as with io_uring.

#![allow(unsafe_code)] // The workers write through the reactor's raw buffer pointers.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use elevator_core::Duration;

use super::{Backend, Done, Transfer, TransferOp, Waker};

/// The most worker threads a pool starts, whatever the depth.
const MAX_WORKERS: u32 = 256;

/// What the workers tell the reactor.
#[derive(Debug)]
pub(crate) enum Event {
    Done(Done),
    Wake,
}

/// Worker threads and their channels.
#[derive(Debug)]
pub(crate) struct ThreadPool {
    jobs: Option<Sender<Transfer>>,
    events: Receiver<Event>,
    events_sender: Sender<Event>,
    workers: Vec<JoinHandle<()>>,
}

impl ThreadPool {
    /// A pool of `depth` workers (at most 256) for `fds` (by [`Transfer::file`]).
    pub(crate) fn new(fds: &[BorrowedFd<'_>], depth: u32) -> io::Result<ThreadPool> {
        let fd: Arc<Vec<OwnedFd>> =
            Arc::new(fds.iter().map(|fd| fd.try_clone_to_owned()).collect::<io::Result<_>>()?);
        let (jobs, job_receiver) = mpsc::channel::<Transfer>();
        let job_receiver = Arc::new(Mutex::new(job_receiver));
        let (events_sender, events) = mpsc::channel();
        let workers = (0..depth.clamp(1, MAX_WORKERS))
            .map(|index| {
                let (fd, jobs, events) =
                    (Arc::clone(&fd), Arc::clone(&job_receiver), events_sender.clone());
                std::thread::Builder::new()
                    .name(format!("elevator-io-{index}"))
                    .spawn(move || worker(&fd, &jobs, &events))
            })
            .collect::<io::Result<_>>()?;
        Ok(ThreadPool { jobs: Some(jobs), events, events_sender, workers })
    }
}

fn worker(fds: &[OwnedFd], jobs: &Mutex<Receiver<Transfer>>, events: &Sender<Event>) {
    loop {
        // The lock is held only to take one job.
        let job = jobs.lock().map(|receiver| receiver.recv());
        let Ok(Ok(transfer)) = job else { return };
        let result = match perform(fds[transfer.file as usize].as_fd(), &transfer) {
            Ok(bytes) => i32::try_from(bytes).unwrap_or(i32::MAX),
            Err(error) => -error.raw_os_error().unwrap_or(libc::EIO),
        };
        if events.send(Event::Done(Done { token: transfer.token, result })).is_err() {
            return;
        }
    }
}

/// Does `transfer` to the end: a short read or write continues from where it stopped; a
/// read that meets the end of the target returns what it got.
fn perform(fd: BorrowedFd<'_>, transfer: &Transfer) -> io::Result<usize> {
    if transfer.op == TransferOp::Flush {
        rustix::fs::fdatasync(fd)?;
        return Ok(0);
    }
    // SAFETY: the reactor hands `iov_count` valid iovecs whose buffers nobody else touches
    // until this transfer's completion is delivered.
    let iovecs = unsafe { std::slice::from_raw_parts(transfer.iov, transfer.iov_count as usize) };
    let total: usize = iovecs.iter().map(|iov| iov.iov_len).sum();
    let mut done = 0usize;
    while done < total {
        // The segments from `done` on.
        let (mut skip, mut rest) = (done, Vec::with_capacity(iovecs.len()));
        for iov in iovecs {
            if skip >= iov.iov_len {
                skip -= iov.iov_len;
                continue;
            }
            // SAFETY: a sub-range of a valid iovec (see above).
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    iov.iov_base.cast::<u8>().add(skip),
                    iov.iov_len - skip,
                )
            };
            rest.push(bytes);
            skip = 0;
        }
        let offset = transfer.offset + done as u64;
        let moved = match transfer.op {
            TransferOp::Read => {
                let mut slices: Vec<IoSliceMut<'_>> =
                    rest.into_iter().map(IoSliceMut::new).collect();
                rustix::io::preadv(fd, &mut slices, offset)
            }
            _ => {
                let slices: Vec<IoSlice<'_>> =
                    rest.iter().map(|bytes| IoSlice::new(bytes)).collect();
                rustix::io::pwritev(fd, &slices, offset)
            }
        };
        match moved {
            Ok(0) => break,
            Ok(count) => done += count,
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(done)
}

impl Backend for ThreadPool {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn start(&mut self, transfer: Transfer) -> io::Result<()> {
        let jobs = self.jobs.as_ref().expect("the pool is running");
        jobs.send(transfer).map_err(|_| io::Error::other("the I/O threads have stopped"))
    }

    fn wait(&mut self, timeout: Option<Duration>, done: &mut Vec<Done>) -> io::Result<()> {
        let first = match timeout {
            Some(limit) if limit == Duration::ZERO => self.events.try_recv().ok(),
            Some(limit) => {
                match self.events.recv_timeout(std::time::Duration::from_nanos(limit.as_nanos())) {
                    Ok(event) => Some(event),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => unreachable!("the pool holds a sender"),
                }
            }
            None => self.events.recv().ok(),
        };
        for event in first.into_iter().chain(std::iter::from_fn(|| self.events.try_recv().ok())) {
            if let Event::Done(finished) = event {
                done.push(finished);
            }
        }
        Ok(())
    }

    fn waker(&self) -> Waker {
        Waker::Channel(self.events_sender.clone())
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        // Closing the job channel ends every worker once its transfer is done.
        self.jobs.take();
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}
