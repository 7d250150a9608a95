//! The library API: an engine thread owning a reactor for one target, and handles that any
//! thread uses to submit I/O, wait for it or be called back, switch the scheduler and read
//! the counters.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use elevator_core::{BlockQueue, Duration, IoPriority, ProcessId, QueueConfig, RequestFlags};
use elevator_sched::SchedulerSpec;

use crate::backend::inject::Fault;
use crate::backend::{self, BackendChoice, Waker};
use crate::buffer::AlignedBuf;
use crate::clock::Clock;
use crate::error::LiveError;
use crate::reactor::{IoFinished, IoOp, IoRequest, Reactor, ReactorStats};
use crate::target::Target;

/// How an engine runs.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// The scheduler in front of the target.
    pub scheduler: SchedulerSpec,
    /// Transfers in flight at once: the device queue depth the scheduler sees.
    pub depth: u32,
    /// The request pool's size per direction (`nr_requests`).
    pub nr_requests: u32,
    /// The largest request (`max_sectors_kb`); larger I/Os are split.
    pub max_sectors_kb: u32,
    /// io_uring, the thread pool, or io_uring with the pool as fallback.
    pub backend: BackendChoice,
    /// Submission-queue entries of the ring (default: depth + 1).
    pub ring_entries: Option<u32>,
    /// Faults to inject between the queue and the device (`--inject`; none by default).
    pub faults: Vec<Fault>,
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        EngineOptions {
            scheduler: SchedulerSpec::new(elevator_sched::SchedulerKind::DEFAULT),
            depth: 32,
            nr_requests: QueueConfig::default().nr_requests,
            max_sectors_kb: QueueConfig::default().max_sectors_kb,
            backend: BackendChoice::Auto,
            ring_entries: None,
            faults: Vec::new(),
        }
    }
}

/// The deepest queue [`EngineOptions::sized_for`] picks: io_uring's largest ring
/// (`IORING_MAX_ENTRIES` is 32768, but 4096 entries is where `Uring::new` clamps).
pub const SIZED_DEPTH_LIMIT: u32 = 4096;

impl EngineOptions {
    /// The defaults for a workload that keeps up to `in_flight` I/Os outstanding (all its
    /// jobs' `iodepth × numjobs`, [`crate::run::workload_iodepth`]): a device queue that
    /// takes them all at once, as a blk-mq device with that many tags does, and a request pool
    /// of twice that (blk-mq's `nr_requests = 2 × min(queue_depth, 128)` for a queue with a
    /// scheduler, block/blk-mq-sched.c `blk_mq_init_sched`, without the 128 cap so a deeper
    /// workload is not throttled by the pool), never below the default 128. With
    /// `in_flight` unknown, the fixed defaults.
    pub fn sized_for(in_flight: Option<u32>) -> EngineOptions {
        let default = EngineOptions::default();
        let Some(in_flight) = in_flight else { return default };
        let depth = in_flight.clamp(1, SIZED_DEPTH_LIMIT);
        EngineOptions {
            depth,
            nr_requests: default.nr_requests.max(depth.saturating_mul(2)),
            ..default
        }
    }

    /// The queue depth and request pool a run uses: each one given, else sized from the
    /// workload's I/Os in flight ([`EngineOptions::sized_for`]); a depth given alone sizes
    /// the pool from that depth, so the pool never throttles the depth asked for.
    pub fn depth_and_pool(
        in_flight: Option<u32>,
        depth: Option<u32>,
        nr_requests: Option<u32>,
    ) -> (u32, u32) {
        let sized = EngineOptions::sized_for(in_flight);
        let chosen_depth = depth.unwrap_or(sized.depth);
        let pool = nr_requests.unwrap_or_else(|| match depth {
            Some(depth) => EngineOptions::sized_for(Some(depth)).nr_requests,
            None => sized.nr_requests,
        });
        (chosen_depth, pool)
    }

    /// The block queue these options describe, in front of a device that is `rotational` or
    /// not ([`rotational`]; the scheduler is told at attach, as the kernel's is).
    pub(crate) fn queue(&self, rotational: bool) -> Result<BlockQueue, LiveError> {
        let config = QueueConfig {
            depth: self.depth,
            nr_requests: self.nr_requests,
            max_sectors_kb: self.max_sectors_kb,
            rotational,
            ..QueueConfig::default()
        };
        Ok(BlockQueue::new(config, self.scheduler.build())?)
    }
}

/// Whether `target` is rotational, as a scheduler attached to it learns: its sysfs
/// `queue/rotational` (the disk's for a partition, or for a file's filesystem); rotational
/// where sysfs does not say (a file on tmpfs or an overlay), as a kernel queue is unless its
/// driver clears the flag.
pub(crate) fn rotational(target: &Target) -> bool {
    crate::calibrate::sysfs_queue(target.path(), target.kind()).rotational.unwrap_or(true)
}

/// Who an I/O is for: the process (I/O context) the scheduler groups it by, its I/O
/// priority, and its flags (O_DIRECT writes are synchronous, as the kernel marks them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoContext {
    /// The issuing process as the scheduler sees it.
    pub process: ProcessId,
    /// Its I/O priority class and level.
    pub priority: IoPriority,
}

impl IoContext {
    /// `process` at the default priority.
    pub fn new(process: ProcessId) -> IoContext {
        IoContext { process, priority: IoPriority::DEFAULT }
    }

    /// The same context at `priority`.
    pub fn with_priority(self, priority: IoPriority) -> IoContext {
        IoContext { priority, ..self }
    }
}

/// A finished I/O.
#[derive(Debug)]
pub struct Completion {
    /// What it did.
    pub op: IoOp,
    /// Where.
    pub offset: u64,
    /// The buffer, back from the device (filled for a read); `None` for a flush.
    pub buf: Option<AlignedBuf>,
    /// Bytes moved, or why not.
    pub result: io::Result<usize>,
    /// From submission to completion.
    pub latency: Duration,
}

type Callback = Box<dyn FnOnce(Completion) + Send + 'static>;

/// Where a completion goes.
enum Completer {
    Callback(Callback),
    Ticket(Arc<TicketSlot>),
}

#[derive(Default)]
struct TicketSlot {
    completion: Mutex<Option<Completion>>,
    ready: Condvar,
}

/// A submitted I/O to wait for.
pub struct Ticket {
    slot: Arc<TicketSlot>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket").finish_non_exhaustive()
    }
}

impl Ticket {
    /// Blocks until the I/O is finished.
    pub fn wait(self) -> Completion {
        let mut completion = self.slot.completion.lock().expect("no panic holds it");
        loop {
            if let Some(done) = completion.take() {
                return done;
            }
            completion = self.slot.ready.wait(completion).expect("no panic holds it");
        }
    }

    /// The completion, if the I/O is finished.
    pub fn try_take(&self) -> Option<Completion> {
        self.slot.completion.lock().expect("no panic holds it").take()
    }
}

impl Completer {
    fn deliver(self, completion: Completion) {
        match self {
            Completer::Callback(callback) => callback(completion),
            Completer::Ticket(slot) => {
                *slot.completion.lock().expect("no panic holds it") = Some(completion);
                slot.ready.notify_all();
            }
        }
    }
}

enum Command {
    Io { op: IoOp, offset: u64, buf: Option<AlignedBuf>, context: IoContext, completer: Completer },
    Switch { scheduler: SchedulerSpec, reply: mpsc::Sender<String> },
    Stats { reply: mpsc::Sender<EngineStats> },
    Shutdown,
}

/// What an engine has done so far.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineStats {
    /// The scheduler now in front of the target.
    pub scheduler: String,
    /// `io_uring` or `threads`.
    pub backend: &'static str,
    /// The block queue's counters.
    pub queue: elevator_core::QueueStats,
    /// The scheduler's own counters.
    pub scheduler_counters: Vec<elevator_core::Counter>,
    /// The reactor's counters.
    pub reactor: ReactorStats,
}

struct Shared {
    commands: Mutex<VecDeque<Command>>,
    waker: Waker,
    /// The engine thread is about to wait or waiting: a submitter must wake it.
    sleeping: AtomicBool,
    /// Shutting down or stopped: no new I/O is taken.
    stopped: AtomicBool,
    size_bytes: u64,
    align_bytes: u64,
    writable: bool,
}

/// An engine: one target, one reactor thread.
pub struct Engine {
    handle: Handle,
    thread: Option<JoinHandle<Result<(), LiveError>>>,
    backend: &'static str,
    fallback: Option<String>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("backend", &self.backend).finish_non_exhaustive()
    }
}

/// Submits to an engine from any thread; cheap to clone.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle").finish_non_exhaustive()
    }
}

impl Engine {
    /// Starts an engine on `target`.
    pub fn open(target: Target, options: EngineOptions) -> Result<Engine, LiveError> {
        let queue = options.queue(rotational(&target))?;
        let (backend, fallback) =
            backend::build(options.backend, target.fd(), options.depth, options.ring_entries)
                .map_err(|source| LiveError::Backend { backend: "setup", source })?;
        let backend_name = backend.name();
        let clock = Clock::start();
        let backend = backend::with_faults(backend, clock, &options.faults);
        let reactor = Reactor::new(queue, backend, clock);
        let shared = Arc::new(Shared {
            commands: Mutex::new(VecDeque::new()),
            waker: reactor.waker(),
            sleeping: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            size_bytes: target.size_bytes(),
            align_bytes: target.align_bytes(),
            writable: target.writable(),
        });
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("elevator-reactor".into())
            .spawn(move || {
                // The target (and its descriptor) lives as long as the reactor.
                let _target = target;
                let result = engine_loop(reactor, &thread_shared);
                thread_shared.stopped.store(true, Ordering::SeqCst);
                result
            })
            .map_err(|source| LiveError::Backend { backend: "thread", source })?;
        Ok(Engine {
            handle: Handle { shared },
            thread: Some(thread),
            backend: backend_name,
            fallback,
        })
    }

    /// A handle for submitting.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// `io_uring` or `threads`.
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// Why io_uring was not used, when the engine fell back to the thread pool.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Stops taking I/O (later submissions fail with [`LiveError::Stopped`]), waits for
    /// everything submitted before to finish, and stops the thread.
    pub fn shutdown(mut self) -> Result<(), LiveError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), LiveError> {
        let Some(thread) = self.thread.take() else { return Ok(()) };
        // From now on submissions are refused (a callback that resubmits gets an error and
        // stops); what was submitted before finishes.
        self.handle.shared.stopped.store(true, Ordering::SeqCst);
        self.handle.send(Command::Shutdown);
        thread.join().unwrap_or(Err(LiveError::Stopped))
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

impl Handle {
    fn send(&self, command: Command) {
        self.shared.commands.lock().expect("no panic holds it").push_back(command);
        if self.shared.sleeping.swap(false, Ordering::SeqCst) {
            self.shared.waker.wake();
        }
    }

    fn check(&self, op: IoOp, offset: u64, len: usize) -> Result<(), LiveError> {
        if self.shared.stopped.load(Ordering::SeqCst) {
            return Err(LiveError::Stopped);
        }
        let align = self.shared.align_bytes;
        if op == IoOp::Write && !self.shared.writable {
            return Err(LiveError::BadIo("the target was opened read-only".into()));
        }
        if len == 0 || offset % align != 0 || len as u64 % align != 0 {
            return Err(LiveError::BadIo(format!(
                "I/O of {len} bytes at {offset}: offset and length must be non-zero multiples \
                 of the target's {align}-byte alignment (O_DIRECT)"
            )));
        }
        if offset.checked_add(len as u64).is_none_or(|end| end > self.shared.size_bytes) {
            return Err(LiveError::BadIo(format!(
                "I/O of {len} bytes at {offset} runs past the end of the target ({} bytes)",
                self.shared.size_bytes
            )));
        }
        Ok(())
    }

    fn submit(
        &self,
        op: IoOp,
        context: IoContext,
        offset: u64,
        buf: Option<AlignedBuf>,
        completer: Completer,
    ) -> Result<(), LiveError> {
        if op != IoOp::Flush {
            self.check(op, offset, buf.as_ref().map_or(0, AlignedBuf::len))?;
        } else if self.shared.stopped.load(Ordering::SeqCst) {
            return Err(LiveError::Stopped);
        }
        self.send(Command::Io { op, offset, buf, context, completer });
        Ok(())
    }

    /// Reads `buf.len()` bytes at `offset` into `buf`; wait on the ticket.
    pub fn read(
        &self,
        context: IoContext,
        offset: u64,
        buf: AlignedBuf,
    ) -> Result<Ticket, LiveError> {
        self.ticket(IoOp::Read, context, offset, Some(buf))
    }

    /// Submits with a ticket to wait on.
    fn ticket(
        &self,
        op: IoOp,
        context: IoContext,
        offset: u64,
        buf: Option<AlignedBuf>,
    ) -> Result<Ticket, LiveError> {
        let slot = Arc::new(TicketSlot::default());
        self.submit(op, context, offset, buf, Completer::Ticket(Arc::clone(&slot)))?;
        Ok(Ticket { slot })
    }

    /// Writes `buf` at `offset`; wait on the ticket.
    pub fn write(
        &self,
        context: IoContext,
        offset: u64,
        buf: AlignedBuf,
    ) -> Result<Ticket, LiveError> {
        self.ticket(IoOp::Write, context, offset, Some(buf))
    }

    /// Reads into `buf` and calls `then` with the completion, on the engine's thread (keep it
    /// short: the engine does no I/O while it runs).
    pub fn read_then(
        &self,
        context: IoContext,
        offset: u64,
        buf: AlignedBuf,
        then: impl FnOnce(Completion) + Send + 'static,
    ) -> Result<(), LiveError> {
        self.submit(IoOp::Read, context, offset, Some(buf), Completer::Callback(Box::new(then)))
    }

    /// Writes `buf` and calls `then` with the completion, on the engine's thread.
    pub fn write_then(
        &self,
        context: IoContext,
        offset: u64,
        buf: AlignedBuf,
        then: impl FnOnce(Completion) + Send + 'static,
    ) -> Result<(), LiveError> {
        self.submit(IoOp::Write, context, offset, Some(buf), Completer::Callback(Box::new(then)))
    }

    /// Writes the device's cache out once every write before it is done (a flush request:
    /// the queue drains ahead of it); wait on the ticket.
    pub fn flush(&self, context: IoContext) -> Result<Ticket, LiveError> {
        self.ticket(IoOp::Flush, context, 0, None)
    }

    /// Puts `scheduler` in front of the target; every queued request moves to it. Returns the
    /// old scheduler's name.
    pub fn switch_scheduler(&self, scheduler: &SchedulerSpec) -> Result<String, LiveError> {
        let (reply, answer) = mpsc::channel();
        self.send(Command::Switch { scheduler: scheduler.clone(), reply });
        answer.recv().map_err(|_| LiveError::Stopped)
    }

    /// The engine's counters now.
    pub fn stats(&self) -> Result<EngineStats, LiveError> {
        let (reply, answer) = mpsc::channel();
        self.send(Command::Stats { reply });
        answer.recv().map_err(|_| LiveError::Stopped)
    }
}

/// An I/O inside the engine: its buffer and where its completion goes.
struct Pending {
    op: IoOp,
    offset: u64,
    buf: Option<AlignedBuf>,
    completer: Completer,
}

fn engine_loop(mut reactor: Reactor, shared: &Shared) -> Result<(), LiveError> {
    let mut pending: Vec<Option<Pending>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut finished: Vec<IoFinished> = Vec::new();
    let mut commands = VecDeque::new();
    let mut shutting_down = false;
    loop {
        std::mem::swap(&mut commands, &mut *shared.commands.lock().expect("no panic holds it"));
        for command in commands.drain(..) {
            match command {
                Command::Io { op, offset, mut buf, context, completer } => {
                    let (ptr, len) = buf
                        .as_mut()
                        .map_or((std::ptr::null_mut(), 0), |b| (b.as_mut_ptr(), b.len()));
                    let key = match free.pop() {
                        Some(key) => key,
                        None => {
                            pending.push(None);
                            pending.len() - 1
                        }
                    };
                    let flags =
                        if op == IoOp::Write { RequestFlags::SYNC } else { RequestFlags::NONE };
                    let request = IoRequest {
                        buffer: None,
                        key: key as u64,
                        op,
                        offset,
                        len,
                        ptr,
                        process: context.process,
                        priority: context.priority,
                        flags,
                    };
                    pending[key] = Some(Pending { op, offset, buf, completer });
                    if let Err(error) = reactor.submit(request) {
                        let entry = pending[key].take().expect("just stored");
                        free.push(key);
                        entry.completer.deliver(Completion {
                            op,
                            offset,
                            buf: entry.buf,
                            result: Err(io::Error::new(
                                io::ErrorKind::InvalidInput,
                                error.to_string(),
                            )),
                            latency: Duration::ZERO,
                        });
                    }
                }
                Command::Switch { scheduler, reply } => {
                    let old = reactor.switch_scheduler(scheduler.build());
                    let _ = reply.send(old.name().to_owned());
                }
                Command::Stats { reply } => {
                    let queue = reactor.queue();
                    let _ = reply.send(EngineStats {
                        scheduler: queue.scheduler().name().to_owned(),
                        backend: reactor.backend_name(),
                        queue: reactor.queue_stats(),
                        scheduler_counters: queue.scheduler().counters(),
                        reactor: reactor.stats(),
                    });
                }
                Command::Shutdown => shutting_down = true,
            }
        }
        if shutting_down && reactor.outstanding() == 0 {
            return Ok(());
        }
        // Announce the wait, then look once more: a submitter either sees the flag and wakes
        // us, or pushed before we look.
        shared.sleeping.store(true, Ordering::SeqCst);
        let block = shared.commands.lock().expect("no panic holds it").is_empty();
        let waited = reactor.wait(None, block, &mut finished);
        shared.sleeping.store(false, Ordering::SeqCst);
        waited?;
        for done in finished.drain(..) {
            let key = done.key as usize;
            let entry = pending[key].take().expect("a pending I/O");
            free.push(key);
            entry.completer.deliver(Completion {
                op: entry.op,
                offset: entry.offset,
                buf: entry.buf,
                result: done.result.map_err(Reactor::error_of),
                latency: done.completed.saturating_since(done.submitted),
            });
        }
    }
}
