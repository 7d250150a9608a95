//! Runs with user-space scheduling off: every issuer on its own thread, its operations going
//! straight to the kernel, so that the kernel's own scheduler is the one that decides.
//!
//! `elevator kernel compare` uses this. Two things make it differ from [`crate::run`], which
//! pushes every issuer through one reactor:
//!
//! * **One thread per issuer.** The kernel's bfq (like 2.6's cfq) keeps a queue per I/O
//!   context, that is per submitting thread. Through one reactor every issuer would be one
//!   process to the kernel and the kernel's fairness and priorities could not be seen. Each
//!   issuer's thread sets its I/O priority with `ioprio_set` before its first I/O; its direct
//!   I/O goes through its own small io_uring ring (submitted inline from that thread, or from
//!   io_uring workers that share its I/O context), or the thread pool where io_uring is
//!   unavailable (then the pool's threads submit, and the kernel sees them instead).
//! * **Buffered I/O is real.** Operations without O_DIRECT are `pread`/`pwrite`/`fsync`
//!   through the page cache on a second, buffered descriptor: the kernel's read-ahead,
//!   write-back and throttling do what they do. A workload's files are regions of the target
//!   laid out one after another ([`layout_files`]); there is no filesystem.
//! * **Several targets** ([`run_plan_on`]): an operation on `Place::Device(i)` goes to the
//!   `i`-th target (an fio job file naming several devices); each issuer's one ring (or pool)
//!   covers every target, as one fio job's engine serves all its files.
//!
//! fio's figures: reads, writes and syncs are recorded by direction as in [`crate::run`]; a
//! sync is an `fdatasync` of the target whether the job asked for `fsync` or `fdatasync`
//! (on a block device both flush the same), timed around the call.
//!
//! Caches: at the workload's drop points (hdparm's `BLKFLSBUF` before `-t`, on the target the
//! drop names) and before every phase every target's cached pages are written and dropped; with [`CacheDrop::System`] the
//! whole page cache is dropped instead (`echo 3 > /proc/sys/vm/drop_caches`).

#![allow(unsafe_code)] // ioprio_set, BLKFLSBUF and the iovecs handed to the backends.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use elevator_core::{Duration, Instant, IoPriority};
use elevator_report::fio::FioDirection;
use elevator_report::{ErrorDirection, Phase, PhaseRecorder};
use elevator_workload::{FileSpec, Io, IoKind, Issuer, Place, Poll, WorkloadPlan};

use crate::backend::{self, Backend, BackendChoice, Done, Transfer, TransferOp};
use crate::buffer::AlignedBuf;
use crate::clock::Clock;
use crate::cpu::process_cpu_ns;
use crate::error::LiveError;
use crate::run::{ContinueOnError, Progress};
use crate::target::{Target, TargetKind};

/// Which cached pages a drop writes and drops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheDrop {
    /// The target's own pages (`BLKFLSBUF` on a device, `POSIX_FADV_DONTNEED` on a file).
    #[default]
    Target,
    /// The whole page cache (`sync; echo 3 > /proc/sys/vm/drop_caches`).
    System,
}

/// How to run.
#[derive(Clone, Debug)]
pub struct PassthroughOptions {
    /// io_uring or the thread pool for each issuer's direct I/O.
    pub backend: BackendChoice,
    /// Ring entries per issuer: the most direct I/Os one issuer has in flight at once before
    /// the backend keeps the rest in its backlog.
    pub ring_entries_per_issuer: u32,
    /// What a cache drop drops.
    pub cache_drop: CacheDrop,
    /// Set to stop issuing: in-flight I/O finishes and the run reports what it did.
    pub stop: Option<Arc<AtomicBool>>,
    /// Which failed I/Os the run goes on after; on any other it stops at the first failure,
    /// as `elevator run` and fio do.
    pub continue_on_error: ContinueOnError,
    /// Every read and write is kept for fio's log files
    /// ([`crate::run::fio_io_samples`]; memory grows with the I/Os).
    pub keep_io_samples: bool,
}

impl Default for PassthroughOptions {
    fn default() -> PassthroughOptions {
        PassthroughOptions {
            backend: BackendChoice::Auto,
            ring_entries_per_issuer: 64,
            cache_drop: CacheDrop::Target,
            stop: None,
            continue_on_error: ContinueOnError::None,
            keep_io_samples: false,
        }
    }
}

/// A file of the workload as a region of the target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRegion {
    /// The file's name in the workload.
    pub name: String,
    /// Where its byte 0 is on the target.
    pub start_bytes: u64,
    /// How far it may grow.
    pub len_bytes: u64,
}

/// A finished pass-through run.
#[derive(Clone, Debug)]
pub struct PassthroughRun {
    /// One per phase, as the recorder made them (latencies from a histogram).
    pub phases: Vec<Phase>,
    /// Stopped early by the stop flag, or by a failed I/O (`stopping_error`).
    pub interrupted: bool,
    /// I/Os that failed, and the first error.
    pub io_errors: (u64, Option<String>),
    /// The failed I/O that stopped the run, when one did.
    pub stopping_error: Option<String>,
    /// `io_uring` or `threads`, for direct I/O; `none` when the run had none.
    pub backend: &'static str,
    /// Why io_uring was not used, when the run fell back to the thread pool.
    pub fallback: Option<String>,
    /// Where the workload's files were.
    pub files: Vec<FileRegion>,
    /// Issuers whose I/O priority was set, and to what (`ionice` notation).
    pub priorities: Vec<(String, String)>,
}

/// Regions are aligned to this, so that a file's blocks never share a page with another's.
const REGION_ALIGN_BYTES: u64 = 1 << 20;

/// Lays the workload's files out on a target of `capacity_bytes`, one after another: a file
/// with data gets its size (rounded up to 1 MiB); files the workload creates by writing share
/// what is left equally. Fails when they do not fit or a file lives on another device.
pub fn layout_files(files: &[FileSpec], capacity_bytes: u64) -> Result<Vec<FileRegion>, LiveError> {
    if let Some(file) = files.iter().find(|file| file.device != 0) {
        return Err(LiveError::BadIo(format!(
            "file `{}` lives on device {}; a kernel run has one target",
            file.name, file.device
        )));
    }
    let fixed_bytes: u64 = files
        .iter()
        .map(|file| file.size_bytes.div_ceil(REGION_ALIGN_BYTES) * REGION_ALIGN_BYTES)
        .sum();
    let growing = files.iter().filter(|file| file.size_bytes == 0).count() as u64;
    if fixed_bytes > capacity_bytes {
        return Err(LiveError::BadIo(format!(
            "the workload's files hold {fixed_bytes} bytes, more than the target's {capacity_bytes}"
        )));
    }
    let share_bytes = match growing {
        0 => 0,
        n => (capacity_bytes - fixed_bytes) / n / REGION_ALIGN_BYTES * REGION_ALIGN_BYTES,
    };
    if growing > 0 && share_bytes == 0 {
        return Err(LiveError::BadIo(format!(
            "no room on the target ({capacity_bytes} bytes) for the {growing} files the \
             workload writes"
        )));
    }
    let mut start_bytes = 0;
    Ok(files
        .iter()
        .map(|file| {
            let len_bytes = match file.size_bytes {
                0 => share_bytes,
                size => size.div_ceil(REGION_ALIGN_BYTES) * REGION_ALIGN_BYTES,
            };
            let region = FileRegion { name: file.name.clone(), start_bytes, len_bytes };
            start_bytes += len_bytes;
            region
        })
        .collect())
}

/// Sets the calling thread's I/O priority (`ioprio_set(IOPRIO_WHO_PROCESS, 0, …)`), as
/// `ionice` does for a process.
pub fn set_thread_io_priority(priority: IoPriority) -> std::io::Result<()> {
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    let value = libc::c_long::from(priority.to_ioprio_value());
    // SAFETY: ioprio_set takes three integers and touches no memory of ours.
    let result = unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, value) };
    if result < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
}

/// Writes the target's dirty pages and drops its cached ones (or the whole page cache).
pub fn drop_cached_pages(
    target: &Target,
    buffered: &File,
    what: CacheDrop,
) -> Result<(), LiveError> {
    let path = target.path();
    rustix::fs::fsync(buffered)
        .map_err(|e| LiveError::io(path, "fsync before dropping caches", e.into()))?;
    match what {
        CacheDrop::System => {
            rustix::fs::sync();
            std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
                LiveError::io("/proc/sys/vm/drop_caches", "dropping the page cache (needs root)", e)
            })
        }
        CacheDrop::Target if target.kind() == TargetKind::BlockDevice => {
            // BLKFLSBUF: _IO(0x12, 97).
            const BLKFLSBUF: libc::c_ulong = 0x1261;
            // SAFETY: BLKFLSBUF takes no argument and touches no memory of ours.
            let result = unsafe { libc::ioctl(buffered.as_raw_fd(), BLKFLSBUF as _, 0) };
            if result < 0 {
                return Err(LiveError::io(
                    path,
                    "BLKFLSBUF (dropping the device's cached pages; needs root)",
                    std::io::Error::last_os_error(),
                ));
            }
            Ok(())
        }
        CacheDrop::Target => rustix::fs::fadvise(buffered, 0, None, rustix::fs::Advice::DontNeed)
            .map_err(|e| LiveError::io(path, "posix_fadvise(DONTNEED)", e.into())),
    }
}

/// Runs `plan` on `target` with each issuer on its own thread; `progress` is called about
/// once a second. Operations address the target as device 0, or the plan's files (laid out
/// by [`layout_files`]).
pub fn run_plan(
    target: &Target,
    plan: WorkloadPlan,
    options: &PassthroughOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<PassthroughRun, LiveError> {
    run_plan_on(&[target], plan, options, progress)
}

/// [`run_plan`] on several targets (a job file naming several devices): an operation on
/// `Place::Device(i)` goes to `targets[i]`, the plan's files are laid out on the first. Each
/// issuer's direct I/O goes through one ring (or pool) over every target, so a job whose
/// `filename` lists several devices reaches each; the cache drops before a phase drop every
/// target's pages.
pub fn run_plan_on(
    targets: &[&Target],
    plan: WorkloadPlan,
    options: &PassthroughOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<PassthroughRun, LiveError> {
    let Some(&target) = targets.first() else {
        return Err(LiveError::BadIo("a kernel run needs a target".into()));
    };
    let files = layout_files(&plan.files, target.size_bytes())?;
    let buffered =
        targets.iter().map(|target| open_buffered(target)).collect::<Result<Vec<_>, _>>()?;
    let clock = Clock::start();
    let unix_ns_at_zero = clock.unix_ns_at_zero();
    let shared = Shared {
        targets,
        buffered: &buffered,
        files: &files,
        clock,
        options,
        backend_used: std::sync::Mutex::new((None, None)),
        error_stop: AtomicBool::new(false),
    };
    let stop = options.stop.clone();
    let stopped = || {
        stop.as_ref().is_some_and(|flag| flag.load(Ordering::SeqCst))
            || shared.error_stop.load(Ordering::SeqCst)
    };
    let mut stopping_error: Option<String> = None;
    let mut phases = Vec::new();
    let mut interrupted = false;
    let mut io_errors: (u64, Option<String>) = (0, None);
    let mut priorities = Vec::new();
    let mut total_bytes = 0u64;
    let mut total_ios = 0u64;
    let mut last_progress = Instant::ZERO;
    for phase in plan.phases {
        if stopped() {
            interrupted = true;
            break;
        }
        for (target, buffered) in targets.iter().zip(&buffered) {
            drop_cached_pages(target, buffered, options.cache_drop)?;
        }
        let started = clock.now();
        let names: Vec<String> =
            phase.issuers.iter().map(|issuer| issuer.name().to_owned()).collect();
        for issuer in &phase.issuers {
            priorities.push((issuer.name().to_owned(), issuer.priority().to_string()));
        }
        let mut recorder = PhaseRecorder::new(phase.name.clone(), started, names);
        if options.keep_io_samples {
            recorder.keep_io_samples();
        }
        let cpu_at_start = process_cpu_ns();
        let (sender, events) = mpsc::channel::<Event>();
        let mut counters: BTreeMap<&'static str, u64> = BTreeMap::new();
        let outcome: Result<(), LiveError> = std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for (index, issuer) in phase.issuers.into_iter().enumerate() {
                let sender = sender.clone();
                let shared = &shared;
                let handle = std::thread::Builder::new()
                    .name(format!("elevator-issuer-{index}"))
                    .spawn_scoped(scope, move || {
                        IssuerThread::new(index, issuer, shared, sender).run()
                    })
                    .map_err(|e| LiveError::io(target.path(), "starting an issuer thread", e))?;
                handles.push(handle);
            }
            drop(sender);
            loop {
                match events.recv_timeout(std::time::Duration::from_millis(100)) {
                    Ok(Event::Submit { issuer, io_id, direction, offset_bytes, at }) => {
                        recorder.record_submit(issuer, io_id, direction, offset_bytes, at);
                    }
                    Ok(Event::Record { issuer, io_id, bytes, submitted, completed }) => {
                        total_bytes += bytes;
                        total_ios += 1;
                        recorder.record_io(issuer, io_id, bytes, submitted, completed);
                    }
                    Ok(Event::IoError { issuer, direction, kind, completed, what }) => {
                        io_errors.0 += 1;
                        io_errors.1.get_or_insert_with(|| what.clone());
                        if !options.continue_on_error.tolerates(kind) && stopping_error.is_none() {
                            stopping_error = Some(what.clone());
                            shared.error_stop.store(true, Ordering::SeqCst);
                        }
                        recorder.record_error(issuer, direction, completed, || what);
                    }
                    Ok(Event::Finished { at, counters: finished }) => {
                        if phase.stonewall {
                            recorder.stonewall(at);
                        }
                        recorder.extend_to(at);
                        for (name, value) in finished {
                            *counters.entry(name).or_default() += value;
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
                if stopped() {
                    interrupted = true;
                }
                let now = clock.now();
                if now.saturating_since(last_progress) >= Duration::from_secs(1) {
                    last_progress = now;
                    progress(&Progress {
                        phase: phase.name.clone(),
                        elapsed: now.saturating_since(Instant::ZERO),
                        bytes: total_bytes,
                        ios: total_ios,
                    });
                }
            }
            for handle in handles {
                match handle.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => return Err(error),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            Ok(())
        });
        outcome?;
        recorder.extend_to(clock.now());
        let cpu_at_end = process_cpu_ns();
        recorder.record_process_cpu(
            cpu_at_end.0.saturating_sub(cpu_at_start.0),
            cpu_at_end.1.saturating_sub(cpu_at_start.1),
        );
        for (&name, &value) in &counters {
            recorder.add_counter(name, value);
        }
        let mut measured = recorder.finish();
        crate::run::fio_figures_of_live_phase(&mut measured, unix_ns_at_zero);
        phases.push(measured);
        if interrupted {
            break;
        }
    }
    let (backend, fallback) = shared.backend_used.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(PassthroughRun {
        phases,
        interrupted,
        io_errors,
        stopping_error,
        backend: backend.unwrap_or("none"),
        fallback,
        files,
        priorities,
    })
}

/// The target again, without O_DIRECT, for operations through the page cache.
fn open_buffered(target: &Target) -> Result<File, LiveError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(target.writable())
        .open(target.path())
        .map_err(|e| LiveError::io(target.path(), "opening for buffered I/O", e))
}

/// What every issuer thread shares.
struct Shared<'a> {
    /// By device index (`Place::Device`).
    targets: &'a [&'a Target],
    /// Each target without O_DIRECT, by device index.
    buffered: &'a [File],
    files: &'a [FileRegion],
    clock: Clock,
    options: &'a PassthroughOptions,
    /// The backend the first direct I/O set up, and why it fell back.
    backend_used: std::sync::Mutex<(Option<&'static str>, Option<String>)>,
    /// Set by the run at a failed I/O that `continue_on_error` does not cover.
    error_stop: AtomicBool,
}

/// What an issuer thread tells the run.
enum Event {
    /// A read or write started (sent before its `Record`, from the same thread, so the
    /// run sees them in order: fio's depth at submission).
    Submit {
        issuer: usize,
        io_id: u64,
        direction: FioDirection,
        offset_bytes: u64,
        at: Instant,
    },
    Record {
        issuer: usize,
        io_id: u64,
        bytes: u64,
        submitted: Instant,
        completed: Instant,
    },
    IoError {
        issuer: usize,
        direction: ErrorDirection,
        kind: IoKind,
        completed: Instant,
        what: String,
    },
    Finished {
        at: Instant,
        counters: Vec<(&'static str, u64)>,
    },
}

/// A direct I/O at the backend.
struct InFlight {
    io: Io,
    /// The memory the device reads or writes: owned here until the transfer completes.
    _buf: AlignedBuf,
    /// The one segment the backend reads; boxed so its address stays put.
    _iov: Box<libc::iovec>,
    submitted: Instant,
}

/// One issuer and its thread's state.
struct IssuerThread<'a> {
    index: usize,
    issuer: Box<dyn Issuer>,
    shared: &'a Shared<'a>,
    events: mpsc::Sender<Event>,
    backend: Option<Box<dyn Backend>>,
    in_flight: Vec<Option<InFlight>>,
    free: Vec<usize>,
    outstanding: usize,
    buffer: Vec<u8>,
    done: Vec<Done>,
}

impl<'a> IssuerThread<'a> {
    fn new(
        index: usize,
        issuer: Box<dyn Issuer>,
        shared: &'a Shared<'a>,
        events: mpsc::Sender<Event>,
    ) -> IssuerThread<'a> {
        IssuerThread {
            index,
            issuer,
            shared,
            events,
            backend: None,
            in_flight: Vec::new(),
            free: Vec::new(),
            outstanding: 0,
            buffer: Vec::new(),
            done: Vec::new(),
        }
    }

    fn stopped(&self) -> bool {
        self.shared.options.stop.as_ref().is_some_and(|flag| flag.load(Ordering::SeqCst))
            || self.shared.error_stop.load(Ordering::SeqCst)
    }

    /// Polls the issuer and does what it asks until it is done (or the run stops), then waits
    /// for its direct I/O in flight.
    fn run(mut self) -> Result<(), LiveError> {
        let priority = self.issuer.priority();
        set_thread_io_priority(priority).map_err(|e| {
            LiveError::io(
                "ioprio_set",
                if priority.class() == elevator_core::IoClass::RealTime {
                    "setting a real-time I/O priority (needs CAP_SYS_ADMIN)"
                } else {
                    "setting the issuer thread's I/O priority"
                },
                e,
            )
        })?;
        let clock = self.shared.clock;
        let mut wants_poll = true;
        let mut sleeping_until: Option<Instant> = None;
        loop {
            if self.stopped() {
                break;
            }
            let now = clock.now();
            if sleeping_until.is_some_and(|at| at <= now) {
                sleeping_until = None;
                wants_poll = true;
            }
            if wants_poll {
                wants_poll = false;
                match self.issuer.poll(now) {
                    Poll::Submit(io) => {
                        wants_poll = true;
                        self.submit(io)?;
                    }
                    Poll::Sleep { until } => sleeping_until = Some(until),
                    Poll::Wait if self.outstanding == 0 => {
                        return Err(LiveError::BadIo(format!(
                            "{} waits with nothing in flight",
                            self.issuer.name()
                        )));
                    }
                    Poll::Wait => {}
                    Poll::Done => {
                        let at = clock.now();
                        let counters = self.issuer.counters();
                        drop(self.events.send(Event::Finished { at, counters }));
                        return Ok(());
                    }
                }
                continue;
            }
            // Nothing to poll: wait for a completion or the end of a sleep, at most 100 ms so
            // the stop flag is seen.
            let cap = clock.now() + Duration::from_millis(100);
            let until = sleeping_until.map_or(cap, |at| at.min(cap));
            if self.outstanding > 0 {
                if self.harvest(Some(clock.until(until)))? > 0 {
                    wants_poll = true;
                }
            } else {
                std::thread::sleep(std::time::Duration::from_nanos(clock.until(until).as_nanos()));
            }
        }
        while self.outstanding > 0 {
            self.harvest(None)?;
        }
        drop(
            self.events.send(Event::Finished { at: clock.now(), counters: self.issuer.counters() }),
        );
        Ok(())
    }

    /// Which target `io` goes to (its device index) and where on it, checked against its
    /// file's region and the target.
    fn place(&self, io: &Io) -> Result<(usize, u64), LiveError> {
        let len = io.size_bytes;
        let bad = |problem: String| LiveError::BadIo(format!("{}: {problem}", self.issuer.name()));
        let targets = self.shared.targets.len();
        let (device, start) = match io.place {
            Place::Device(device) if device < targets => (device, io.offset_bytes),
            Place::Device(other) => {
                return Err(bad(format!(
                    "device {other} does not exist: the run has {targets} target(s)"
                )));
            }
            Place::File(file) => {
                let region = &self.shared.files[file];
                if io.offset_bytes + len > region.len_bytes {
                    return Err(bad(format!(
                        "file `{}` grew past its region of {} bytes on the target; use a larger \
                         target or a smaller workload",
                        region.name, region.len_bytes
                    )));
                }
                // Files are laid out on the first target.
                (0, region.start_bytes + io.offset_bytes)
            }
        };
        let target = self.shared.targets[device];
        if start + len > target.size_bytes() {
            return Err(bad(format!(
                "an I/O at byte {start} of {len} bytes runs past the end of {} ({} bytes)",
                target.path().display(),
                target.size_bytes()
            )));
        }
        if io.direct && matches!(io.kind, IoKind::Read | IoKind::Write) {
            let align = target.align_bytes();
            if start % align != 0 || len % align != 0 || len == 0 {
                return Err(bad(format!(
                    "a direct I/O of {len} bytes at byte {start} is not a multiple of the \
                     target's {align}-byte O_DIRECT alignment"
                )));
            }
        }
        Ok((device, start))
    }

    /// Does `io`: direct reads and writes start at the backend; everything else is done now.
    fn submit(&mut self, io: Io) -> Result<(), LiveError> {
        let (device, offset) = self.place(&io)?;
        let clock = self.shared.clock;
        let submitted = clock.now();
        let target = self.shared.targets[device];
        let buffered = &self.shared.buffered[device];
        // Reads, writes and syncs count in fio's figures by direction, as in the live engine
        // (fio's `sync` object: a job's fsync/fdatasync calls and their latencies); cache
        // drops are not fio's and are not recorded.
        if let Some(direction @ (FioDirection::Read | FioDirection::Write | FioDirection::Sync)) =
            crate::run::fio_direction(io.kind)
        {
            drop(self.events.send(Event::Submit {
                issuer: self.index,
                io_id: io.id.0,
                direction,
                offset_bytes: io.offset_bytes,
                at: submitted,
            }));
        }
        match io.kind {
            IoKind::Read | IoKind::Write if io.direct => {
                return self.start_direct(io, device, offset);
            }
            IoKind::Read | IoKind::Write => {
                let len = io.size_bytes as usize;
                if self.buffer.len() < len {
                    self.buffer.resize(len, 0xa5);
                }
                let result = if io.kind == IoKind::Read {
                    read_fully(buffered, &mut self.buffer[..len], offset)
                } else {
                    write_fully(buffered, &self.buffer[..len], offset)
                };
                self.finish_sync(io, submitted, result.map(|n| n as u64));
            }
            IoKind::Sync => {
                let file: BorrowedFd<'_> = if io.direct { target.fd() } else { buffered.as_fd() };
                let result = rustix::fs::fdatasync(file).map(|()| 0).map_err(std::io::Error::from);
                self.finish_sync(io, submitted, result);
            }
            IoKind::DropCaches => {
                drop_cached_pages(target, buffered, self.shared.options.cache_drop)?;
                self.finish_sync(io, submitted, Ok(0));
            }
            IoKind::Discard => {
                return Err(LiveError::BadIo(format!(
                    "{}: discards are not supported by kernel runs",
                    self.issuer.name()
                )));
            }
        }
        Ok(())
    }

    /// Reports a synchronous operation and tells the issuer it returned.
    fn finish_sync(&mut self, io: Io, submitted: Instant, result: std::io::Result<u64>) {
        let completed = self.shared.clock.now();
        if let Some(bytes) = self.account(&io, completed, result)
            && matches!(io.kind, IoKind::Read | IoKind::Write | IoKind::Sync)
        {
            drop(self.events.send(Event::Record {
                issuer: self.index,
                io_id: io.id.0,
                bytes,
                submitted,
                completed,
            }));
        }
        self.issuer.complete(completed, io.id);
    }

    /// The bytes an operation moved; a failure is reported as an error (never as an
    /// operation) and gives `None`.
    fn account(&self, io: &Io, completed: Instant, result: std::io::Result<u64>) -> Option<u64> {
        let error = match result {
            Ok(bytes) => return Some(bytes),
            Err(error) => error,
        };
        let what = format!(
            "{}: {} of {} bytes at byte {}: {error}",
            self.issuer.name(),
            io.kind.name(),
            io.size_bytes,
            io.offset_bytes
        );
        let direction = match io.kind {
            IoKind::Read => ErrorDirection::Read,
            IoKind::Write => ErrorDirection::Write,
            _ => ErrorDirection::Other,
        };
        drop(self.events.send(Event::IoError {
            issuer: self.index,
            direction,
            kind: io.kind,
            completed,
            what,
        }));
        None
    }

    fn start_direct(&mut self, io: Io, device: usize, offset: u64) -> Result<(), LiveError> {
        if self.backend.is_none() {
            let options = self.shared.options;
            let entries = options.ring_entries_per_issuer.max(1);
            // One ring over every target: its transfers name their file (the device index).
            let fds: Vec<BorrowedFd<'_>> =
                self.shared.targets.iter().map(|target| target.fd()).collect();
            let (backend, fallback) = backend::build_many(
                options.backend,
                &fds,
                entries,
                Some(entries.next_power_of_two()),
            )
            .map_err(|source| LiveError::Backend { backend: "setup", source })?;
            let mut used = self.shared.backend_used.lock().unwrap_or_else(|p| p.into_inner());
            if used.0.is_none() {
                *used = (Some(backend.name()), fallback);
            }
            self.backend = Some(backend);
        }
        let mut buf = AlignedBuf::zeroed(io.size_bytes as usize);
        if io.kind == IoKind::Write {
            buf.as_mut_slice().fill(0xa5);
        }
        let iov = Box::new(libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() });
        let key = match self.free.pop() {
            Some(key) => key,
            None => {
                self.in_flight.push(None);
                self.in_flight.len() - 1
            }
        };
        let transfer = Transfer {
            token: key as u64,
            op: if io.kind == IoKind::Read { TransferOp::Read } else { TransferOp::Write },
            offset,
            iov: &*iov,
            iov_count: 1,
            length_bytes: iov.iov_len as u64,
            file: device as u32,
            buffer: None,
        };
        self.in_flight[key] =
            Some(InFlight { io, _buf: buf, _iov: iov, submitted: self.shared.clock.now() });
        self.outstanding += 1;
        let backend = self.backend.as_mut().expect("built above");
        backend
            .start(transfer)
            .map_err(|source| LiveError::Backend { backend: backend.name(), source })
    }

    /// Collects finished direct I/Os, waiting up to `timeout` for one; returns how many.
    fn harvest(&mut self, timeout: Option<Duration>) -> Result<usize, LiveError> {
        let backend = self.backend.as_mut().expect("direct I/O in flight has a backend");
        backend
            .wait(timeout, &mut self.done)
            .map_err(|source| LiveError::Backend { backend: backend.name(), source })?;
        let finished = self.done.len();
        let completed = self.shared.clock.now();
        // Taken out and put back so its allocation is reused across waits.
        let mut finished_now = std::mem::take(&mut self.done);
        for done in finished_now.drain(..) {
            let key = done.token as usize;
            let live = self.in_flight[key].take().expect("a direct I/O in flight");
            self.free.push(key);
            self.outstanding -= 1;
            let result = if done.result < 0 {
                Err(std::io::Error::from_raw_os_error(-done.result))
            } else {
                Ok(done.result as u64)
            };
            if let Some(bytes) = self.account(&live.io, completed, result) {
                drop(self.events.send(Event::Record {
                    issuer: self.index,
                    io_id: live.io.id.0,
                    bytes,
                    submitted: live.submitted,
                    completed,
                }));
            }
            self.issuer.complete(completed, live.io.id);
        }
        self.done = finished_now;
        Ok(finished)
    }
}

/// Reads `buf.len()` bytes at `offset` (fewer only at the end of the target).
fn read_fully(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::pread(file, &mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(done)
}

/// Writes all of `buf` at `offset`.
fn write_fully(file: &File, buf: &[u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::pwrite(file, &buf[done..], offset + done as u64) {
            Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::WriteZero)),
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, size_bytes: u64) -> FileSpec {
        FileSpec { name: name.into(), device: 0, size_bytes }
    }

    // Proves files with data keep their size and written files share the rest, in order.
    #[test]
    fn files_are_laid_out_one_after_another() {
        let regions =
            layout_files(&[file("a", 3 << 20), file("b", 0), file("c", 0)], 64 << 20).unwrap();
        assert_eq!(regions[0], FileRegion { name: "a".into(), start_bytes: 0, len_bytes: 3 << 20 });
        assert_eq!(regions[1].start_bytes, 3 << 20);
        assert_eq!(regions[1].len_bytes, 30 << 20);
        assert_eq!(regions[2].start_bytes, 33 << 20);
        assert!(regions[2].start_bytes + regions[2].len_bytes <= 64 << 20);
    }

    // Proves a workload too big for the target is refused before any I/O.
    #[test]
    fn files_that_do_not_fit_are_refused() {
        assert!(layout_files(&[file("a", 65 << 20)], 64 << 20).is_err());
        assert!(layout_files(&[file("a", 64 << 20), file("b", 0)], 64 << 20).is_err());
        let elsewhere = FileSpec { name: "x".into(), device: 1, size_bytes: 0 };
        assert!(layout_files(&[elsewhere], 64 << 20).is_err());
    }
}
