//! The reactor: one thread's `BlockQueue` and scheduler in front of a backend. Through the
//! queue's [`Submitter`] — the same submit path the simulator and the test harness drive — it
//! splits each I/O into bios at `max_sectors_kb` and offers them to the queue (parking those the
//! request pool refuses until the queue wakes their process); it issues what the queue releases as one
//! vectored transfer per request (its bios' buffers in sector order, so merged requests really
//! are one device I/O), turns `Idle`/`Plugged` into the wait's deadline, and hands completed
//! I/Os back. Everything here is single-threaded; `Engine` and `run` put it on a thread.

use std::io;

use elevator_core::check::check_queue;
use slab::Slab;

use elevator_core::{
    Bio, BioTag, BlockQueue, Instant, IoPriority, Op, ProcessId, Pull, RequestFlags, RequestId,
    SECTOR_SIZE_BYTES, Scheduler, Sector, Submitter,
};

use crate::backend::{Backend, Done, Transfer, TransferOp, Waker};
use crate::clock::Clock;
use crate::error::LiveError;

/// What an I/O does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoOp {
    /// Read into the buffer.
    Read,
    /// Write the buffer.
    Write,
    /// Write the device's cache to stable storage (no buffer).
    Flush,
}

/// One I/O as the reactor takes it. The buffer at `ptr` (`len` bytes) is the caller's; it
/// must stay valid and untouched until the I/O comes back finished.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoRequest {
    /// Handed back in [`IoFinished::key`].
    pub(crate) key: u64,
    pub(crate) op: IoOp,
    pub(crate) offset: u64,
    pub(crate) len: usize,
    pub(crate) ptr: *mut u8,
    pub(crate) process: ProcessId,
    pub(crate) priority: IoPriority,
    pub(crate) flags: RequestFlags,
    /// The registered buffer (`Reactor::register_buffer`) holding the buffer, if any.
    pub(crate) buffer: Option<u16>,
}

/// A finished I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IoFinished {
    pub(crate) key: u64,
    /// Bytes moved, or the errno of the first failed transfer.
    pub(crate) result: Result<usize, i32>,
    pub(crate) submitted: Instant,
    pub(crate) completed: Instant,
}

#[derive(Clone, Copy, Debug)]
struct IoSlot {
    key: u64,
    bios_left: u32,
    bytes: usize,
    error: Option<i32>,
    submitted: Instant,
}

#[derive(Clone, Copy, Debug)]
struct BioSlot {
    /// The I/O it belongs to (its key in `ios`).
    io: usize,
    ptr: *mut u8,
    len: usize,
    /// Its I/O's registered buffer.
    buffer: Option<u16>,
}

/// A request on the device: its segments and how far the transfer got.
#[derive(Debug)]
struct InFlight {
    request: RequestId,
    op: TransferOp,
    offset: u64,
    iov: Vec<libc::iovec>,
    /// After a short transfer: the segments still to do.
    rest: Vec<libc::iovec>,
    /// The registered buffer the one segment lies in (only for one-segment transfers).
    buffer: Option<u16>,
    total: usize,
    done: usize,
}

/// Counters of the reactor itself (the queue and scheduler keep their own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReactorStats {
    /// Transfers started (one per request, plus restarts of short ones).
    pub transfers: u64,
    /// Transfers that moved fewer bytes than asked and were continued.
    pub short_transfers: u64,
    /// Transfers that failed.
    pub failed_transfers: u64,
    /// Bios the request pool refused at first (parked until their process was woken).
    pub parked_bios: u64,
    /// Waits that ended on a deadline (the scheduler's idle or plug timer, or the caller's).
    pub timer_wakeups: u64,
    /// Time with at least one transfer on the device.
    pub busy_ns: u64,
    /// Transfers failed by fault injection (`--inject fail:...`).
    pub injected_failures: u64,
    /// Transfers delayed by fault injection (`--inject delay:...`).
    pub injected_delays: u64,
}

/// A `BlockQueue` in front of a backend. I/Os and bios live in slabs (`slab`): stable keys,
/// reused, so a bio's tag is its key and needs no map.
pub(crate) struct Reactor {
    /// The queue with its submit side: splitting, parking and resubmitting bios.
    submitter: Submitter,
    backend: Box<dyn Backend>,
    clock: Clock,
    ios: Slab<IoSlot>,
    bios: Slab<BioSlot>,
    /// By request slot index.
    in_flight: Vec<Option<InFlight>>,
    /// When the queue wants to be asked again (the scheduler idles or the queue is plugged).
    timer: Option<Instant>,
    /// Since when the device has had a transfer (none: idle).
    busy_since: Option<Instant>,
    tags: Vec<BioTag>,
    /// Scratch for the bios of one I/O.
    split: Vec<Bio>,
    done: Vec<Done>,
    stats: ReactorStats,
}

// SAFETY: the raw pointers a reactor holds (bio buffers, iovec segments) point into buffers
// its owner keeps alive alongside it until the I/O finishes; a reactor is used by one thread
// at a time, and it moves to its thread (`Engine::open`) before it holds any I/O.
#[allow(unsafe_code)]
unsafe impl Send for Reactor {}

impl std::fmt::Debug for Reactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reactor")
            .field("backend", &self.backend.name())
            .field("ios", &self.ios.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Reactor {
    pub(crate) fn new(queue: BlockQueue, backend: Box<dyn Backend>, clock: Clock) -> Reactor {
        Reactor {
            submitter: Submitter::new(queue),
            backend,
            clock,
            ios: Slab::new(),
            bios: Slab::new(),
            in_flight: Vec::new(),
            timer: None,
            busy_since: None,
            tags: Vec::new(),
            split: Vec::new(),
            done: Vec::new(),
            stats: ReactorStats::default(),
        }
    }

    pub(crate) fn queue(&self) -> &BlockQueue {
        self.submitter.queue()
    }

    /// The queue's counters up to now, with the time processes waited for a request.
    pub(crate) fn queue_stats(&self) -> elevator_core::QueueStats {
        self.submitter.stats(self.clock.now())
    }

    pub(crate) fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    pub(crate) fn waker(&self) -> Waker {
        self.backend.waker()
    }

    /// Registers a buffer with the backend ([`Backend::register_buffer`]): its index, for
    /// [`IoRequest::buffer`], or `None`.
    pub(crate) fn register_buffer(&mut self, ptr: *mut u8, len: usize) -> Option<u16> {
        self.backend.register_buffer(ptr, len)
    }

    pub(crate) fn stats(&self) -> ReactorStats {
        let injected = self.backend.inject_stats();
        ReactorStats {
            parked_bios: self.submitter.refused_count(),
            injected_failures: injected.failed,
            injected_delays: injected.delayed,
            ..self.stats
        }
    }

    /// When the queue wants to be asked again (its scheduler idles or it is plugged).
    pub(crate) fn timer(&self) -> Option<Instant> {
        self.timer
    }

    /// I/Os taken and not yet finished.
    pub(crate) fn outstanding(&self) -> usize {
        self.ios.len()
    }

    /// Replaces the scheduler; every queued request moves to the new one (the queue's rule).
    pub(crate) fn switch_scheduler(&mut self, scheduler: Box<dyn Scheduler>) -> Box<dyn Scheduler> {
        let now = self.clock.now();
        let old = self.submitter.queue_mut().switch_scheduler(now, scheduler);
        self.timer = None;
        old
    }

    /// Takes `io`: splits it into bios and offers them to the queue. The caller checked
    /// alignment and bounds.
    pub(crate) fn submit(&mut self, io: IoRequest) -> Result<(), LiveError> {
        let now = self.clock.now();
        let op = match io.op {
            IoOp::Read => Op::Read,
            IoOp::Write => Op::Write,
            IoOp::Flush => Op::Flush,
        };
        let start = Sector(io.offset / SECTOR_SIZE_BYTES);
        let template = Bio {
            op,
            start,
            sector_count: 0,
            flags: io.flags,
            priority: io.priority,
            process: io.process,
            tag: BioTag(0),
            cpu: 0,
        };
        let mut bios = std::mem::take(&mut self.split);
        bios.clear();
        self.submitter.split(template, start, io.len as u64 / SECTOR_SIZE_BYTES, &mut bios);
        if bios.is_empty() {
            self.split = bios;
            return Err(LiveError::BadIo(format!("an I/O of {} bytes moves nothing", io.len)));
        }
        let slot = self.ios.insert(IoSlot {
            key: io.key,
            bios_left: bios.len() as u32,
            bytes: 0,
            error: None,
            submitted: now,
        });
        let mut result = Ok(());
        for bio in &mut bios {
            let offset = ((bio.start.0 - start.0) * SECTOR_SIZE_BYTES) as usize;
            let len = bio.sector_count as usize * SECTOR_SIZE_BYTES as usize;
            // Within the caller's buffer: the bios cover `io.len` bytes from its start.
            let ptr = io.ptr.wrapping_add(offset);
            let buffer = io.buffer;
            bio.tag = BioTag(self.bios.insert(BioSlot { io: slot, ptr, len, buffer }) as u64);
            if let Err(error) = self.submitter.submit(now, *bio) {
                result = Err(LiveError::BadIo(error.to_string()));
                break;
            }
        }
        self.split = bios;
        result
    }

    /// `process` is gone (its issuer is done for the run): the scheduler stops idling for it,
    /// as the kernel's do when a task exits.
    pub(crate) fn process_exited(&mut self, process: ProcessId) -> Result<(), LiveError> {
        let now = self.clock.now();
        self.submitter.queue_mut().process_exited(now, process);
        self.pump().map_err(|source| LiveError::Backend { backend: self.backend.name(), source })
    }

    /// Forced dispatch for a driver that is stopping: whatever the scheduler holds goes to the
    /// device as it has room, without waiting for an idle window no arrival will end.
    pub(crate) fn force_dispatch(&mut self) -> Result<(), LiveError> {
        let now = self.clock.now();
        if self.submitter.queue_mut().drain_scheduler(now) > 0 {
            self.pump()
                .map_err(|source| LiveError::Backend { backend: self.backend.name(), source })?;
        }
        Ok(())
    }

    /// Issues what the queue releases; remembers its timer.
    pub(crate) fn pump(&mut self) -> io::Result<()> {
        let now = self.clock.now();
        self.timer = None;
        loop {
            match self.submitter.queue_mut().next_request(now) {
                Pull::Issue(id) => self.issue(id)?,
                Pull::Idle { until } | Pull::Plugged { until } => {
                    self.timer = Some(until);
                    return Ok(());
                }
                Pull::Busy | Pull::Empty => return Ok(()),
            }
        }
    }

    fn issue(&mut self, id: RequestId) -> io::Result<()> {
        if self.busy_since.is_none() {
            self.busy_since = Some(self.clock.now());
        }
        let queue = self.submitter.queue();
        let request = queue.request(id).expect("an issued request is live");
        let op = match request.op {
            Op::Read => TransferOp::Read,
            Op::Write => TransferOp::Write,
            Op::Flush => TransferOp::Flush,
            Op::Discard => unreachable!("the live engine submits no discards"),
        };
        let offset = request.start.0 * SECTOR_SIZE_BYTES;
        self.tags.clear();
        queue.bio_tags(id, &mut self.tags);
        let mut iov = Vec::with_capacity(self.tags.len());
        let mut total = 0;
        let mut buffer = None;
        for tag in &self.tags {
            let bio = &self.bios[tag.0 as usize];
            if bio.len > 0 {
                iov.push(libc::iovec { iov_base: bio.ptr.cast(), iov_len: bio.len });
                total += bio.len;
                buffer = bio.buffer;
            }
        }
        // A fixed-buffer transfer has one segment (io_uring has no vectored fixed read
        // before Linux 6.15).
        if iov.len() != 1 {
            buffer = None;
        }
        let index = id.index();
        if self.in_flight.len() <= index {
            self.in_flight.resize_with(index + 1, || None);
        }
        let flight =
            InFlight { request: id, op, offset, iov, rest: Vec::new(), buffer, total, done: 0 };
        self.start(index, flight)
    }

    /// Starts (or continues, after a short transfer) the transfer of `flight`.
    fn start(&mut self, index: usize, mut flight: InFlight) -> io::Result<()> {
        let (iov, iov_count) = if flight.done == 0 {
            (flight.iov.as_ptr(), flight.iov.len() as u32)
        } else {
            // The segments from where the short transfer stopped.
            let mut skip = flight.done;
            flight.rest.clear();
            for segment in &flight.iov {
                if skip >= segment.iov_len {
                    skip -= segment.iov_len;
                    continue;
                }
                flight.rest.push(libc::iovec {
                    iov_base: segment.iov_base.cast::<u8>().wrapping_add(skip).cast(),
                    iov_len: segment.iov_len - skip,
                });
                skip = 0;
            }
            (flight.rest.as_ptr(), flight.rest.len() as u32)
        };
        let transfer = Transfer {
            token: index as u64,
            op: flight.op,
            offset: flight.offset + flight.done as u64,
            iov,
            iov_count,
            length_bytes: (flight.total - flight.done) as u64,
            file: 0,
            // The rest of a short transfer still lies in the same buffer.
            buffer: flight.buffer,
        };
        // The vectors' heap storage does not move with `flight`.
        self.in_flight[index] = Some(flight);
        self.stats.transfers += 1;
        self.backend.start(transfer)
    }

    /// Waits for completions (at most until the queue's timer or `deadline`, not at all when
    /// `block` is false), finishes them, issues what follows, and appends finished I/Os.
    pub(crate) fn wait(
        &mut self,
        deadline: Option<Instant>,
        block: bool,
        finished: &mut Vec<IoFinished>,
    ) -> Result<(), LiveError> {
        self.pump()
            .map_err(|source| LiveError::Backend { backend: self.backend.name(), source })?;
        let wake_at = match (self.timer, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let timeout = if !block {
            Some(elevator_core::Duration::ZERO)
        } else {
            wake_at.map(|at| self.clock.until(at))
        };
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        self.backend
            .wait(timeout, &mut done)
            .map_err(|source| LiveError::Backend { backend: self.backend.name(), source })?;
        let now = self.clock.now();
        if done.is_empty() && wake_at.is_some_and(|at| at <= now) {
            self.stats.timer_wakeups += 1;
        }
        for &finished_transfer in &done {
            self.complete(now, finished_transfer, finished)
                .map_err(|source| LiveError::Backend { backend: self.backend.name(), source })?;
        }
        self.done = done;
        let mut accepted = std::mem::take(&mut self.tags);
        accepted.clear();
        let resubmitted = self.submitter.resubmit_woken(now, &mut accepted);
        self.tags = accepted;
        resubmitted.map_err(|error| LiveError::BadIo(error.to_string()))?;
        self.pump()
            .map_err(|source| LiveError::Backend { backend: self.backend.name(), source })?;
        // The full audit, on in debug builds (so in every test), as the simulator's is.
        if cfg!(debug_assertions)
            && let Err(violation) = check_queue(self.submitter.queue())
        {
            panic!("live queue under {}: {violation}", self.queue().scheduler().name());
        }
        Ok(())
    }

    fn complete(
        &mut self,
        now: Instant,
        transfer: Done,
        finished: &mut Vec<IoFinished>,
    ) -> io::Result<()> {
        let index = transfer.token as usize;
        let mut flight = self.in_flight[index].take().expect("a transfer in flight");
        let mut error = None;
        if transfer.result < 0 {
            self.stats.failed_transfers += 1;
            error = Some(-transfer.result);
        } else {
            let moved = transfer.result as usize;
            if flight.op != TransferOp::Flush && flight.done + moved < flight.total {
                if moved == 0 {
                    // The end of the target: the rest cannot be done.
                    self.stats.failed_transfers += 1;
                    error = Some(libc::ENXIO);
                } else {
                    self.stats.short_transfers += 1;
                    flight.done += moved;
                    return self.start(index, flight);
                }
            }
        }
        self.tags.clear();
        let id = flight.request;
        let _ = self.submitter.queue_mut().complete(now, id, &mut self.tags);
        if self.submitter.queue().in_flight() == 0
            && let Some(since) = self.busy_since.take()
        {
            self.stats.busy_ns += now.saturating_since(since).as_nanos();
        }
        for tag in std::mem::take(&mut self.tags) {
            let bio = self.bios.remove(tag.0 as usize);
            let io = &mut self.ios[bio.io];
            io.bios_left -= 1;
            match error {
                Some(code) => {
                    io.error.get_or_insert(code);
                }
                None => io.bytes += bio.len,
            }
            if io.bios_left == 0 {
                let io = self.ios.remove(bio.io);
                finished.push(IoFinished {
                    key: io.key,
                    result: io.error.map_or(Ok(io.bytes), Err),
                    submitted: io.submitted,
                    completed: now,
                });
            }
        }
        Ok(())
    }

    /// The error a failed transfer's errno stands for.
    pub(crate) fn error_of(code: i32) -> io::Error {
        io::Error::from_raw_os_error(code)
    }
}
