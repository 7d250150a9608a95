//! Capturing a block device's I/O through tracefs block tracepoints (issue 19, `elevator trace
//! DEV`): what `blktrace` records, taken from the tracepoints every kernel with tracefs has,
//! so that it works where blktrace does not (no `CONFIG_BLK_DEV_IO_TRACE`, no blktrace binary).
//!
//! How (kernel `Documentation/trace/ftrace.rst` "Instances", `events.rst` "Event filtering";
//! `include/trace/events/block.h` for the events and their print formats):
//!
//! * tracefs is used where it is mounted; when it is not, it is mounted at
//!   `/sys/kernel/tracing` (as bpftrace and perf do) and unmounted afterwards — only what was
//!   mounted here ([`Tracefs`]).
//! * The capture gets its own instance, `instances/elevator-<pid>` ([`Instance`]): its own
//!   ring buffer, events, filters and clock, so the global buffer and anybody else's tracing
//!   stay as they were; the instance is removed when the capture ends, fails or is dropped.
//! * Events: `block/block_rq_issue` (blkparse's D), `block/block_rq_complete` (C) and, when
//!   asked ([`CaptureOptions::queue_events`]), `block/block_bio_queue` (Q) and
//!   `block/block_rq_insert` (I). For a scheduler capture (issue 25,
//!   [`CaptureOptions::scheduler_events`]) also `block_bio_backmerge` (M),
//!   `block_bio_frontmerge` (F), `block_getrq` (G), `block_rq_merge`, `block_rq_requeue` (R)
//!   and kyber's `kyber_adjust`, `kyber_latency`, `kyber_throttled` where they exist; the
//!   rq events' `CLASS,HINT,LEVEL` priority is read into [`BlockEvent::priority`], and
//!   [`Capture::sched_events`] turns the capture into `elevator_trace::sched_log` events.
//!   A scheduler capture also takes `block_plug` and `block_unplug` ([`PlugEvent`]): an
//!   unplug is a plug flush, its requests inserted and then the hardware queue run
//!   (`blk_mq_dispatch_list` in 6.18's `block/blk-mq.c`), the queue runs the replay models.
//!   They print no device, so they are not filtered in the kernel; the capture keeps those of
//!   the tasks that inserted a request into the device. It also takes kblockd's runs of
//!   hardware queues ([`WorkEvent`]): `workqueue_execute_start` and `workqueue_execute_end`
//!   filtered in the kernel to `function.function == blk_mq_run_work_fn` (the work function
//!   of a hardware queue's `run_work`, `block/blk-mq.c`; the filter on the function field's
//!   symbol, `events.rst` "function.function"). They print the work item's address, not the
//!   device: a hardware queue's `run_work` is one address for the queue's life, so
//!   [`Capture::sched_events`] keeps the executions of the addresses whose runs issued a
//!   request of the device (a `block_rq_issue` of the kworker between its start and end), the
//!   runs that issue nothing included. The other block events are each
//!   filtered to the device in the kernel with
//!   `dev == N`, where N is the kernel's internal `dev_t`, `major << 20 | minor` (`MINORBITS`
//!   in `include/linux/kdev_t.h`; the print format of every block event decodes it so).
//! * The instance's clock is `mono` (`CLOCK_MONOTONIC`): the default `local` clock is per
//!   CPU and need not agree across CPUs, and a request is often issued on one CPU and
//!   completed on another.
//! * The ring buffer is [`CaptureOptions::buffer_size_kb`] per CPU: by default 64 MiB, or
//!   less on a machine of many CPUs, so that all of them take at most
//!   [`BUFFER_TOTAL_KB_DEFAULT_MAX`] (1 GiB) of kernel memory.
//!   Events the kernel could not keep are counted, from the `[LOST n EVENTS]` lines of
//!   `trace_pipe` and the `overrun` and `dropped events` counters of `per_cpu/cpuN/stats`,
//!   and reported in [`Capture::lost_events`].
//! * Instances `elevator-<pid>` whose process is gone (killed outright, before it could
//!   remove its instance) are removed when a capture starts, and said so.
//! * `trace_pipe` is read (text; non-blocking, polled every [`POLL_INTERVAL_MS`] ms) until the
//!   duration has passed or the caller's stop flag is set; then tracing is switched off and
//!   what is left in the buffer is read.
//!
//! [`parse_line`] reads one line of `trace_pipe`; [`Capture::iolog`] turns a capture into fio's
//! iolog v3 (the dispatches, [`elevator_trace::iolog`]); [`Capture::write_blkparse`] writes
//! blkparse's default text. The blkparse writer is local to this module for now; a shared
//! reader/writer is being written in `elevator-trace`, and this one will give way to it.
//!
//! # Deviations
//!
//! * Timestamps are what `trace_pipe` prints: microseconds. blkparse prints nanoseconds (its
//!   last three digits are zero here); iolog v3 is in microseconds anyway.
//! * blkparse's sequence number is blktrace's per-CPU record counter; here it counts the
//!   events of each CPU in the capture, from 1.
//! * A completion (C) carries its latency since the dispatch of the same request, as
//!   blkparse's `-t` prints it (`sector + n (ns) [error]`), whenever that dispatch was
//!   captured; blkparse without `-t` prints no latency.
//! * Partitions are refused: the request events (D, C, I) name the whole disk, so a filter on
//!   a partition would keep only its Q events. Trace the disk instead.
//! * Only D, C and (when asked) Q and I are captured by `elevator trace`; blktrace's S, P,
//!   U, X, A events have no tracepoint of the same meaning here and are not written. A
//!   scheduler capture's M, F, G and R are written with blktrace's letters; a request merge
//!   (`block_rq_merge`), which blktrace does not record, is left out of the blkparse text.
//! * The priority's hint (the middle number of `be,0,4`) is not kept: no scheduler here
//!   reads it.
//! * kblockd's runs of the device are recognised by their issues: the runs of a hardware
//!   queue of the device that never issued during a kblockd run of the capture are left out
//!   (its work address is never seen with the device's issues), and an address of another
//!   device that a kworker executed while it issued (nested work, which workqueues do not do)
//!   would be taken as the device's.
//! * The iolog holds one record per dispatched request (the device's view: merged, split),
//!   not per application call as fio's `write_iolog` does; flushes without data become
//!   `sync`, requests that move no data and are not flushes are left out (and counted).
//! * The command in brackets is the task running when the event fired, as in blktrace: the
//!   submitter for Q, but for D it may be a kworker (a dispatch from kblockd), and C has the
//!   error there instead. The iolog names no process at all (fio's format has no field).
//! * When another process holds tracefs open as the capture ends, a tracefs mounted for the
//!   capture stays mounted (unmounting it would fail with EBUSY; lazily detaching it would
//!   pull it from under that process); the capture says so in [`Capture::notes`].

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use elevator_core::{Duration, IoClass, IoPriority, Op};
use elevator_trace::IoFlags;
use elevator_trace::iolog::{self, Action, FileAction, IoAction, Iolog, Record};
use elevator_trace::sched_log::{BlockPoint, BlockRecord, SchedEvent};

/// Where tracefs is mounted when nothing has mounted it yet (the kernel creates the directory;
/// `Documentation/trace/ftrace.rst`).
pub const TRACEFS_MOUNT_POINT: &str = "/sys/kernel/tracing";
/// The ring buffer per CPU by default, in KiB (64 MiB): at well under 128 bytes a block event
/// in the ring (the record of `block_rq_issue` is 64 bytes plus its header and command),
/// room for half a million events per CPU between two reads.
pub const BUFFER_SIZE_KB_DEFAULT: u64 = 64 << 10;
/// The most the default ring buffers take on all CPUs together, KiB (1 GiB): the kernel
/// allocates the buffer of every CPU, and 64 MiB each on a machine of 128 CPUs would be 8 GiB.
pub const BUFFER_TOTAL_KB_DEFAULT_MAX: u64 = 1 << 20;
/// How often `trace_pipe` is polled when it has nothing to read, in milliseconds.
pub const POLL_INTERVAL_MS: u64 = 50;
/// At most this many events are kept (about 1.5 GB of memory); a capture that reaches it
/// stops ([`Capture::stopped_at_limit`]), so that a forgotten capture cannot fill the memory.
pub const EVENTS_MAX: usize = 10_000_000;
/// kyber's tracepoints (`include/trace/events/kyber.h`), under `events/kyber/`.
pub const KYBER_TRACEPOINTS: [&str; 3] = ["kyber_adjust", "kyber_latency", "kyber_throttled"];
/// The plug tracepoints of a scheduler capture, under `events/block/` (no `dev` field).
pub const PLUG_TRACEPOINTS: [&str; 2] = ["block_plug", "block_unplug"];
/// The workqueue tracepoints of a scheduler capture, under `events/workqueue/` (no `dev`
/// field), filtered to [`WORK_FILTER`].
pub const WORK_TRACEPOINTS: [&str; 2] = ["workqueue_execute_start", "workqueue_execute_end"];
/// The filter of [`WORK_TRACEPOINTS`]: hardware-queue runs only (`blk_mq_run_work_fn`, the
/// function of `blk_mq_hw_ctx::run_work`); `.function` compares the pointer field's symbol.
pub const WORK_FILTER: &str = "function.function == blk_mq_run_work_fn";
/// The bits of the minor number in the kernel's internal `dev_t` (`MINORBITS`).
const MINOR_BITS: u32 = 20;

/// Why a capture could not be made or read. Every variant names the path or line at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// Tracing needs root (or `CAP_SYS_ADMIN` to mount, write access to tracefs to trace).
    /// Retrying as root helps.
    #[error("{what} needs root: {why} (run with sudo)")]
    NeedsRoot {
        /// What needed it.
        what: String,
        /// What was refused.
        why: String,
    },
    /// This kernel has no tracefs, or it could not be mounted. Retrying won't help.
    #[error("no tracefs: {why}")]
    NoTracefs {
        /// What is missing.
        why: String,
    },
    /// The path is not a whole block device. Retrying won't help.
    #[error("{given}: {why}")]
    NotABlockDevice {
        /// What was given.
        given: String,
        /// What it is instead, and what would do.
        why: String,
    },
    /// A tracefs or device file could not be read or written.
    #[error("{operation} {}: {source}", path.display())]
    Io {
        /// What was being done: `reading`, `writing 1 to`, `creating`, `removing`.
        operation: String,
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        source: io::Error,
    },
    /// A line of `trace_pipe` is not in the format this reader knows (a kernel whose block
    /// events print differently). Retrying won't help.
    #[error("{file}:{line}: {field}: {problem}")]
    Line {
        /// The file read.
        file: String,
        /// The line, from 1.
        line: usize,
        /// The field at fault.
        field: &'static str,
        /// What is wrong and what is accepted.
        problem: String,
    },
}

fn io_error(operation: &str, path: &Path, source: io::Error) -> TraceError {
    if source.kind() == io::ErrorKind::PermissionDenied {
        return TraceError::NeedsRoot {
            what: "tracing block I/O".into(),
            why: format!("{operation} {}: {source}", path.display()),
        };
    }
    TraceError::Io { operation: operation.into(), path: path.to_owned(), source }
}

/// tracefs, found where it is mounted or mounted here; unmounted on drop only if mounted here.
#[derive(Debug)]
pub struct Tracefs {
    root: PathBuf,
    mounted_here: bool,
    /// The mount's root held open while in use: another process's unmount of the same mount
    /// then fails (EBUSY) instead of pulling tracefs from under this capture.
    pin: Option<std::fs::File>,
}

impl Tracefs {
    /// The mounted tracefs, mounting it at [`TRACEFS_MOUNT_POINT`] when no tracefs is mounted.
    pub fn attach() -> Result<Tracefs, TraceError> {
        let mounts = std::fs::read_to_string("/proc/self/mounts")
            .map_err(|e| io_error("reading", Path::new("/proc/self/mounts"), e))?;
        if let Some(root) = tracefs_mount(&mounts) {
            let pin = std::fs::File::open(&root).map_err(|e| io_error("opening", &root, e))?;
            return Ok(Tracefs { root, mounted_here: false, pin: Some(pin) });
        }
        let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
        if !filesystems.lines().any(|line| line.split_whitespace().last() == Some("tracefs")) {
            return Err(TraceError::NoTracefs {
                why: "this kernel has no tracefs (/proc/filesystems does not list it; \
                      CONFIG_TRACING is off)"
                    .into(),
            });
        }
        let root = PathBuf::from(TRACEFS_MOUNT_POINT);
        rustix::mount::mount("nodev", &root, "tracefs", rustix::mount::MountFlags::empty(), None)
            .map_err(|errno| {
            let source = io::Error::from(errno);
            if errno == rustix::io::Errno::PERM || errno == rustix::io::Errno::ACCESS {
                TraceError::NeedsRoot {
                    what: "mounting tracefs".into(),
                    why: format!("mount -t tracefs nodev {TRACEFS_MOUNT_POINT}: {source}"),
                }
            } else {
                TraceError::NoTracefs {
                    why: format!("mount -t tracefs nodev {TRACEFS_MOUNT_POINT}: {source}"),
                }
            }
        })?;
        let pin = std::fs::File::open(&root).map_err(|e| io_error("opening", &root, e))?;
        Ok(Tracefs { root, mounted_here: true, pin: Some(pin) })
    }

    /// Where it is mounted.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether it was mounted here (and is unmounted on drop).
    pub fn mounted_here(&self) -> bool {
        self.mounted_here
    }

    /// Unmounts it if it was mounted here. `Ok(Some(why))` when it stays mounted because
    /// another process uses it now (EBUSY; a mounted tracefs harms nothing).
    pub fn close(mut self) -> Result<Option<String>, TraceError> {
        self.unmount()
    }

    fn unmount(&mut self) -> Result<Option<String>, TraceError> {
        self.pin = None;
        if !std::mem::take(&mut self.mounted_here) {
            return Ok(None);
        }
        match rustix::mount::unmount(&self.root, rustix::mount::UnmountFlags::empty()) {
            Ok(()) => Ok(None),
            Err(rustix::io::Errno::BUSY) => Ok(Some(format!(
                "tracefs was mounted at {} for this capture and stays mounted: another \
                 process uses it now (unmount it with `umount {}` when it is done)",
                self.root.display(),
                self.root.display()
            ))),
            Err(errno) => Err(io_error("unmounting", &self.root, errno.into())),
        }
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        // Best effort while unwinding; `close` reports.
        let _ = self.unmount();
    }
}

/// The mount point of the first tracefs in `/proc/self/mounts`' text.
fn tracefs_mount(mounts: &str) -> Option<PathBuf> {
    tracefs_mount_points(mounts).next()
}

/// Every tracefs mount point in `/proc/self/mounts`' text, in its order.
fn tracefs_mount_points(mounts: &str) -> impl Iterator<Item = PathBuf> + '_ {
    mounts.lines().filter_map(|line| {
        let mut fields = line.split_whitespace();
        let (_source, point, kind) = (fields.next()?, fields.next()?, fields.next()?);
        // /proc/mounts escapes white space in paths as octal (`\040`).
        (kind == "tracefs").then(|| PathBuf::from(point.replace("\\040", " ")))
    })
}

/// Where tracefs is mounted now (empty when it is not): for checking that a capture left the
/// mounts as it found them.
pub fn tracefs_mounts() -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/self/mounts")
        .map(|mounts| tracefs_mount_points(&mounts).collect())
        .unwrap_or_default()
}

/// A tracefs instance of this capture: created, configured and removed on drop.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    removed: bool,
}

impl Instance {
    /// Creates `instances/NAME` under `tracefs`.
    pub fn create(tracefs: &Tracefs, name: &str) -> Result<Instance, TraceError> {
        let dir = tracefs.root().join("instances").join(name);
        std::fs::create_dir(&dir).map_err(|e| io_error("creating", &dir, e))?;
        Ok(Instance { dir, removed: false })
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` to the instance's file `relative`.
    pub fn write(&self, relative: &str, value: &str) -> Result<(), TraceError> {
        let path = self.dir.join(relative);
        std::fs::write(&path, value)
            .map_err(|e| io_error(&format!("writing `{}` to", value.trim()), &path, e))
    }

    /// Reads the instance's file `relative`.
    pub fn read(&self, relative: &str) -> Result<String, TraceError> {
        let path = self.dir.join(relative);
        std::fs::read_to_string(&path).map_err(|e| io_error("reading", &path, e))
    }

    /// Events lost so far: the `overrun` and `dropped events` counters of every CPU.
    pub fn lost_events(&self) -> Result<u64, TraceError> {
        let per_cpu = self.dir.join("per_cpu");
        let entries = std::fs::read_dir(&per_cpu).map_err(|e| io_error("reading", &per_cpu, e))?;
        let mut lost = 0;
        for entry in entries.flatten() {
            let stats = entry.path().join("stats");
            let Ok(text) = std::fs::read_to_string(&stats) else { continue };
            lost += lost_in_stats(&text);
        }
        Ok(lost)
    }

    /// Switches tracing off and removes the instance.
    pub fn remove(mut self) -> Result<(), TraceError> {
        self.remove_now()
    }

    fn remove_now(&mut self) -> Result<(), TraceError> {
        if std::mem::replace(&mut self.removed, true) {
            return Ok(());
        }
        let _ = self.write("tracing_on", "0");
        std::fs::remove_dir(&self.dir).map_err(|e| io_error("removing", &self.dir, e))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // Best effort while unwinding; `remove` reports.
        let _ = self.remove_now();
    }
}

/// `overrun` plus `dropped events` of one `per_cpu/cpuN/stats` file.
fn lost_in_stats(text: &str) -> u64 {
    text.lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(key, _)| matches!(key.trim(), "overrun" | "dropped events"))
        .filter_map(|(_, value)| value.trim().parse::<u64>().ok())
        .sum()
}

/// The block device traced: its path and numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracedDevice {
    /// The path given (`/dev/loop0`; a bare name is looked for in `/dev`).
    pub path: PathBuf,
    /// Its major number.
    pub major: u32,
    /// Its minor number.
    pub minor: u32,
}

impl TracedDevice {
    /// The whole block device at `given` (a path, or a name in `/dev`).
    pub fn open(given: &str) -> Result<TracedDevice, TraceError> {
        let path =
            if given.contains('/') { PathBuf::from(given) } else { Path::new("/dev").join(given) };
        let not_block = |why: String| TraceError::NotABlockDevice { given: given.into(), why };
        let stat = rustix::fs::stat(&path).map_err(|errno| {
            not_block(format!("{}: {}", path.display(), io::Error::from(errno)))
        })?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::BlockDevice {
            return Err(not_block(
                "not a block device; give a whole disk such as /dev/sdb or loop0".into(),
            ));
        }
        let (major, minor) = (rustix::fs::major(stat.st_rdev), rustix::fs::minor(stat.st_rdev));
        if Path::new(&format!("/sys/dev/block/{major}:{minor}/partition")).exists() {
            return Err(not_block(
                "a partition; the request events name the whole disk, so trace the disk".into(),
            ));
        }
        Ok(TracedDevice { path, major, minor })
    }

    /// The kernel's internal `dev_t` of it, as the block events' `dev` field holds it.
    pub fn kernel_dev(&self) -> u64 {
        (u64::from(self.major) << MINOR_BITS) | u64::from(self.minor)
    }
}

/// What to capture and for how long (by default: the dispatches and completions, until the
/// stop flag is set, in the default ring buffer).
#[derive(Clone, Debug, Default)]
pub struct CaptureOptions {
    /// Stop after this long; `None`: until the stop flag is set.
    pub duration: Option<Duration>,
    /// Also capture the bio queue (Q) and scheduler insert (I) events.
    pub queue_events: bool,
    /// Also capture every event a scheduler's decisions show in (issue 25): bio merges (M,
    /// F), request allocation (G), insert (I), request merges, requeues, and kyber's own
    /// events when kyber's tracepoints exist (the kyber module is loaded).
    pub scheduler_events: bool,
    /// The ring buffer per CPU, KiB; `None`: [`BUFFER_SIZE_KB_DEFAULT`], less when there are
    /// so many CPUs that their buffers would take over [`BUFFER_TOTAL_KB_DEFAULT_MAX`].
    pub buffer_size_kb: Option<u64>,
    /// Set once tracing is on, so that a caller running the workload on another thread
    /// starts it only when every event of it will be recorded.
    pub ready: Option<std::sync::Arc<AtomicBool>>,
}

/// The block events a capture reads, by their tracepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// `block_bio_queue`: a bio enters the block layer (blkparse's Q).
    Queue,
    /// `block_rq_insert`: a request goes into the scheduler (I).
    Insert,
    /// `block_rq_issue`: a request goes to the driver (D).
    Issue,
    /// `block_rq_complete`: the device completed it (C).
    Complete,
    /// `block_bio_backmerge`: a bio merged at the back of a request (M; scheduler events).
    BioBackMerge,
    /// `block_bio_frontmerge`: a bio merged at the front of a request (F).
    BioFrontMerge,
    /// `block_getrq`: a request allocated for a bio (G).
    GetRq,
    /// `block_rq_merge`: a request absorbed into another (blktrace has no letter; `J` here).
    Merge,
    /// `block_rq_requeue`: the driver gave a request back (R).
    Requeue,
}

impl EventKind {
    /// Every kind, those `elevator trace` captures first.
    pub const ALL: [EventKind; 9] = [
        EventKind::Queue,
        EventKind::Insert,
        EventKind::Issue,
        EventKind::Complete,
        EventKind::BioBackMerge,
        EventKind::BioFrontMerge,
        EventKind::GetRq,
        EventKind::Merge,
        EventKind::Requeue,
    ];

    /// The tracepoint, `block/NAME`.
    pub const fn tracepoint(self) -> &'static str {
        self.point().tracepoint()
    }

    /// The same event in a scheduler capture.
    pub const fn point(self) -> BlockPoint {
        match self {
            EventKind::Queue => BlockPoint::BioQueue,
            EventKind::Insert => BlockPoint::Insert,
            EventKind::Issue => BlockPoint::Issue,
            EventKind::Complete => BlockPoint::Complete,
            EventKind::BioBackMerge => BlockPoint::BioBackMerge,
            EventKind::BioFrontMerge => BlockPoint::BioFrontMerge,
            EventKind::GetRq => BlockPoint::GetRq,
            EventKind::Merge => BlockPoint::Merge,
            EventKind::Requeue => BlockPoint::Requeue,
        }
    }

    /// blkparse's action letter (`J` for a request merge, which blkparse has not).
    pub const fn action(self) -> char {
        match self {
            EventKind::Queue => 'Q',
            EventKind::Insert => 'I',
            EventKind::Issue => 'D',
            EventKind::Complete => 'C',
            EventKind::BioBackMerge => 'M',
            EventKind::BioFrontMerge => 'F',
            EventKind::GetRq => 'G',
            EventKind::Merge => 'J',
            EventKind::Requeue => 'R',
        }
    }

    /// Whether its line prints the request's bytes (`rq` events but complete and requeue).
    const fn prints_bytes(self) -> bool {
        matches!(self, EventKind::Issue | EventKind::Insert | EventKind::Merge)
    }

    /// Whether it is a bio event (no `(CMD)`, no priority: `block_bio` event class).
    const fn is_bio(self) -> bool {
        matches!(
            self,
            EventKind::Queue
                | EventKind::BioBackMerge
                | EventKind::BioFrontMerge
                | EventKind::GetRq
        )
    }

    fn from_tracepoint(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|kind| kind.tracepoint() == name)
    }
}

/// Which of kyber's own tracepoints (`include/trace/events/kyber.h`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KyberPoint {
    /// `kyber_adjust: MAJ,MIN DOMAIN DEPTH`.
    Adjust {
        /// `READ`, `WRITE`, `DISCARD`, `OTHER`.
        domain: String,
        /// The new depth.
        depth: u32,
    },
    /// `kyber_latency: MAJ,MIN DOMAIN TYPE pPERCENTILE NUMERATOR/DENOMINATOR samples=N`.
    Latency {
        /// The domain.
        domain: String,
        /// `total` or `I/O`.
        kind: String,
        /// 90 or 99.
        percentile: u32,
        /// The bucket numerator.
        numerator: u32,
        /// Its denominator.
        denominator: u32,
        /// Samples in the window.
        samples: u32,
    },
    /// `kyber_throttled: MAJ,MIN DOMAIN`.
    Throttled {
        /// The domain.
        domain: String,
    },
}

/// One kyber event of `trace_pipe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KyberEvent {
    /// The CPU.
    pub cpu: u32,
    /// The trace clock's time, ns (printed in µs).
    pub time_ns: u64,
    /// The device's major number.
    pub major: u32,
    /// Its minor number.
    pub minor: u32,
    /// What happened.
    pub point: KyberPoint,
}

/// One `block_plug` or `block_unplug` of `trace_pipe` (`[COMM]` and `[COMM] NR_RQ`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlugEvent {
    /// The CPU.
    pub cpu: u32,
    /// The task's pid (the line's `TASK-PID`).
    pub pid: u32,
    /// The task name the event prints in brackets.
    pub command: String,
    /// The trace clock's time, ns (printed in µs).
    pub time_ns: u64,
    /// `None` for `block_plug`; the requests flushed for `block_unplug`.
    pub unplugged: Option<u32>,
    /// How many block events of the device preceded it in `trace_pipe` (its place among
    /// them, which keeps an unplug before the inserts it flushes at equal µs).
    pub after_block_events: usize,
}

/// One `workqueue_execute_start` or `workqueue_execute_end` of `trace_pipe` (`work struct
/// %p: function %ps`, this kernel's `events/workqueue/workqueue_execute_start/format`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkEvent {
    /// The CPU.
    pub cpu: u32,
    /// The kworker's pid.
    pub pid: u32,
    /// The trace clock's time, ns (printed in µs).
    pub time_ns: u64,
    /// The work item's address as printed (`%p`: hashed unless `hash-ptr` is off, one value
    /// per address for the boot).
    pub work: String,
    /// The work function's symbol.
    pub function: String,
    /// `true` for `workqueue_execute_start`, `false` for `workqueue_execute_end`.
    pub start: bool,
    /// How many block events of the device preceded it in `trace_pipe`.
    pub after_block_events: usize,
}

/// One block event of `trace_pipe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockEvent {
    /// The task that was running (the line's `TASK-PID`; for a completion, usually not the
    /// submitter: an interrupt, softirq or idle task).
    pub task: String,
    /// Its PID.
    pub pid: u32,
    /// The CPU.
    pub cpu: u32,
    /// The trace clock's time, ns (printed in µs).
    pub time_ns: u64,
    /// Which event.
    pub kind: EventKind,
    /// The device's major number.
    pub major: u32,
    /// The device's minor number.
    pub minor: u32,
    /// blkparse's RWBS letters (`WS`, `R`, `FF`, `FWFS`, `D`).
    pub rwbs: String,
    /// The first sector (512 bytes).
    pub sector: u64,
    /// The number of sectors.
    pub sectors: u32,
    /// The request's bytes (issue and insert events print them).
    pub bytes: Option<u32>,
    /// The command name in brackets (queue, insert and issue events).
    pub command: Option<String>,
    /// The error (completion events; 0 on success).
    pub error: Option<i32>,
    /// The request's I/O priority (the `CLASS,HINT,LEVEL` the rq events print from 6.10 on);
    /// `None` for class `none`, for bio events and for kernels that print none.
    pub priority: Option<IoPriority>,
}

/// What a data-moving event does, from its RWBS letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    /// `R`.
    Read,
    /// `W`.
    Write,
    /// `D` (discard).
    Discard,
    /// A flush without data (`F`, `FF`, or `FW…` of no data).
    Flush,
    /// Anything else (`N`, zone operations, letters this reader does not know).
    Other,
}

impl BlockEvent {
    /// What it does: the first RWBS letter after an optional preflush `F` (`blk_fill_rwbs`:
    /// `R`, `W`, `D`, and `F` for the flush operation); a preflush write of no data is a
    /// flush too.
    pub fn direction(&self) -> Direction {
        let mut letters = self.rwbs.chars().peekable();
        let preflush = letters.next_if_eq(&'F').is_some();
        match letters.next() {
            Some('R') => Direction::Read,
            Some('W') if preflush && self.size_bytes() == 0 => Direction::Flush,
            Some('W') => Direction::Write,
            Some('D') => Direction::Discard,
            Some('F') => Direction::Flush,
            None if preflush => Direction::Flush,
            _ => Direction::Other,
        }
    }

    /// It as a scheduler capture's record, its time taken from `start_ns`; `None` when its
    /// RWBS letters name no operation of [`Op`].
    pub fn record(&self, start_ns: u64) -> Option<BlockRecord> {
        let op = match self.direction() {
            Direction::Read => Op::Read,
            Direction::Write => Op::Write,
            Direction::Discard => Op::Discard,
            Direction::Flush => Op::Flush,
            Direction::Other => return None,
        };
        let flags = rwbs_flags(&self.rwbs);
        Some(BlockRecord {
            point: self.kind.point(),
            time_ns: self.time_ns.saturating_sub(start_ns),
            cpu: self.cpu,
            pid: self.pid,
            command: self.command.clone(),
            op,
            flags,
            sector: self.sector,
            sectors: self.sectors,
            priority: self.priority,
            error: self.error,
        })
    }

    /// Its size in bytes: the printed bytes, or the sectors.
    pub fn size_bytes(&self) -> u64 {
        self.bytes.map_or(u64::from(self.sectors) * 512, u64::from)
    }
}

/// The request flags of RWBS letters as `blk_fill_rwbs` (`block/blktrace.c`) writes them: an
/// `F` before the operation letter is `REQ_PREFLUSH` (so `FF` is a flush request with its
/// preflush bit, not FUA), then after it `F` FUA, `A` readahead, `S` sync, `M` metadata.
fn rwbs_flags(rwbs: &str) -> IoFlags {
    let letters = rwbs.as_bytes();
    let mut flags = IoFlags::default();
    let operation = if letters.len() > 1 && letters[0] == b'F' {
        flags.preflush = true;
        1
    } else {
        0
    };
    for letter in letters.iter().skip(operation + 1) {
        match letter {
            b'F' => flags.fua = true,
            b'A' => flags.readahead = true,
            b'S' => flags.sync = true,
            b'M' => flags.meta = true,
            // `E` of a secure erase (`DE`) and anything newer: not a flag kept here.
            _ => {}
        }
    }
    flags
}

/// A line of `trace_pipe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceLine {
    /// A block event this reader knows.
    Event(BlockEvent),
    /// A kyber event.
    Kyber(KyberEvent),
    /// `block_plug` or `block_unplug` (its `after_block_events` 0 here).
    Plug(PlugEvent),
    /// `workqueue_execute_start` or `workqueue_execute_end` (its `after_block_events` 0 here).
    Work(WorkEvent),
    /// `CPU:N [LOST n EVENTS]`: the ring buffer overwrote `count` events of that CPU.
    Lost {
        /// The events lost.
        count: u64,
    },
    /// Another event (not a block event captured here).
    Other,
}

/// Reads one line of `trace_pipe` (without its line end). Errors are the field at fault and
/// what is accepted.
///
/// The line is `TASK-PID [CPU] FLAGS SECONDS.MICROS: EVENT: BODY` (`print_trace_fmt` in
/// `kernel/trace/trace.c`, the latency flags present by default, absent with
/// `noirq-info`); TASK may hold spaces and dashes, so the prefix is read from the right.
pub fn parse_line(line: &str) -> Result<TraceLine, (&'static str, String)> {
    let trimmed = line.trim();
    if let Some(rest) = trimmed.strip_prefix("CPU:")
        && let Some((_, lost)) = rest.split_once("[LOST ")
    {
        let count = lost.split_whitespace().next().unwrap_or_default();
        let count = count
            .parse()
            .map_err(|_| ("lost", format!("`{count}` is not a count of lost events")))?;
        return Ok(TraceLine::Lost { count });
    }
    // `: NAME: ` separates the prefix and the event's body.
    let Some((head, after)) = trimmed.split_once(": ") else {
        return Err(("line", format!("`{trimmed}` has no `TIME: EVENT:`")));
    };
    let (name, body) = after.split_once(": ").unwrap_or((after.trim_end_matches(':'), ""));
    if name.starts_with("kyber_") {
        let Some(point) = parse_kyber_body(name, body)? else {
            return Ok(TraceLine::Other);
        };
        let (_, _, cpu, time_ns) = parse_prefix(head)?;
        let (major, minor) = parse_dev(body.split_whitespace().next())?;
        return Ok(TraceLine::Kyber(KyberEvent { cpu, time_ns, major, minor, point }));
    }
    if PLUG_TRACEPOINTS.contains(&name) {
        // `[%s]` and `[%s] %d` (this kernel's `events/block/block_{plug,unplug}/format`); the
        // command may hold spaces and brackets, so the count is read from the right.
        let (_, pid, cpu, time_ns) = parse_prefix(head)?;
        let body = body.trim();
        let (command, unplugged) = if name == "block_unplug" {
            let (command, count) = body
                .rsplit_once(' ')
                .ok_or(("nr_rq", format!("`{body}`; accepted: `[COMMAND] NR_RQ`")))?;
            let count = count
                .parse::<u32>()
                .map_err(|_| ("nr_rq", format!("`{count}` is not a count of requests")))?;
            (command, Some(count))
        } else {
            (body, None)
        };
        let command = command
            .strip_prefix('[')
            .and_then(|command| command.strip_suffix(']'))
            .ok_or(("comm", format!("`{command}`; accepted: `[COMMAND]`")))?;
        return Ok(TraceLine::Plug(PlugEvent {
            cpu,
            pid,
            command: command.to_owned(),
            time_ns,
            unplugged,
            after_block_events: 0,
        }));
    }
    if WORK_TRACEPOINTS.contains(&name) {
        // `work struct %p: function %ps`.
        let (_, pid, cpu, time_ns) = parse_prefix(head)?;
        let accepted = "accepted: `work struct ADDRESS: function SYMBOL`";
        let (work, function) = body
            .trim()
            .strip_prefix("work struct ")
            .and_then(|rest| rest.split_once(": function "))
            .ok_or(("work", format!("`{body}`; {accepted}")))?;
        return Ok(TraceLine::Work(WorkEvent {
            cpu,
            pid,
            time_ns,
            work: work.to_owned(),
            function: function.trim().to_owned(),
            start: name == "workqueue_execute_start",
            after_block_events: 0,
        }));
    }
    let Some(kind) = EventKind::from_tracepoint(name) else {
        return Ok(TraceLine::Other);
    };
    let (task, pid, cpu, time_ns) = parse_prefix(head)?;
    let event = parse_body(kind, body)?;
    Ok(TraceLine::Event(BlockEvent { task, pid, cpu, time_ns, ..event }))
}

/// `TASK-PID [CPU] FLAGS SECONDS.MICROS`.
fn parse_prefix(head: &str) -> Result<(String, u32, u32, u64), (&'static str, String)> {
    let (rest, time) = head.rsplit_once(' ').unwrap_or(("", head));
    let time_ns = parse_seconds_ns(time)?;
    let rest = rest.trim_end();
    // The flags field (`d.h1.`) is there unless `noirq-info`; the CPU is `[NNN]`.
    let rest = match rest.rsplit_once(' ') {
        Some((before, last)) if !last.starts_with('[') => before.trim_end(),
        _ => rest,
    };
    let Some((task_pid, cpu)) = rest.rsplit_once('[') else {
        return Err(("cpu", format!("`{head}` has no `[CPU]`")));
    };
    let cpu = cpu.trim_end_matches(']');
    let cpu = cpu.parse().map_err(|_| ("cpu", format!("`{cpu}` is not a CPU number")))?;
    let task_pid = task_pid.trim();
    let Some((task, pid)) = task_pid.rsplit_once('-') else {
        return Err(("pid", format!("`{task_pid}` is not TASK-PID")));
    };
    let pid = pid.parse().map_err(|_| ("pid", format!("`{pid}` is not a PID")))?;
    Ok((task.to_owned(), pid, cpu, time_ns))
}

/// `SECONDS.FRACTION` (up to nine digits) in ns.
fn parse_seconds_ns(text: &str) -> Result<u64, (&'static str, String)> {
    let bad = || ("time", format!("`{text}` is not SECONDS.MICROSECONDS"));
    let (seconds, fraction) = text.split_once('.').ok_or_else(bad)?;
    if fraction.is_empty() || fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let seconds: u64 = seconds.parse().map_err(|_| bad())?;
    let fraction_ns: u64 = format!("{fraction:0<9}").parse().map_err(|_| bad())?;
    seconds.checked_mul(1_000_000_000).and_then(|ns| ns.checked_add(fraction_ns)).ok_or_else(bad)
}

/// `MAJ,MIN`.
fn parse_dev(dev: Option<&str>) -> Result<(u32, u32), (&'static str, String)> {
    let dev = dev.ok_or(("dev", "missing; accepted: MAJOR,MINOR".to_owned()))?;
    dev.split_once(',')
        .and_then(|(major, minor)| Some((major.parse().ok()?, minor.parse().ok()?)))
        .ok_or(("dev", format!("`{dev}` is not MAJOR,MINOR")))
}

/// The body of a kyber event (`TP_printk` of `include/trace/events/kyber.h`, formats read
/// from this machine's `events/kyber/*/format`); `None` for a kyber event not known here.
fn parse_kyber_body(name: &str, body: &str) -> Result<Option<KyberPoint>, (&'static str, String)> {
    let words: Vec<&str> = body.split_whitespace().collect();
    let number = |field: &'static str, text: &str| {
        text.parse::<u32>().map_err(|_| (field, format!("`{text}` is not a whole number")))
    };
    let domain = || {
        words
            .get(1)
            .map(|domain| (*domain).to_owned())
            .ok_or(("domain", format!("missing in `{body}`")))
    };
    Ok(Some(match name {
        "kyber_adjust" => {
            let domain = domain()?;
            let depth = words.get(2).ok_or(("depth", format!("missing in `{body}`")))?;
            KyberPoint::Adjust { domain, depth: number("depth", depth)? }
        }
        "kyber_latency" => {
            let accepted = "accepted: `MAJ,MIN DOMAIN TYPE pN NUM/DEN samples=N`";
            let [_, _, kind, percentile, fraction, samples] = words.as_slice() else {
                return Err(("fields", format!("`{body}`; {accepted}")));
            };
            let percentile = percentile
                .strip_prefix('p')
                .ok_or(("percentile", format!("`{percentile}`; {accepted}")))?;
            let (numerator, denominator) = fraction
                .split_once('/')
                .ok_or(("fraction", format!("`{fraction}`; {accepted}")))?;
            let samples = samples
                .strip_prefix("samples=")
                .ok_or(("samples", format!("`{samples}`; {accepted}")))?;
            KyberPoint::Latency {
                domain: domain()?,
                kind: (*kind).to_owned(),
                percentile: number("percentile", percentile)?,
                numerator: number("numerator", numerator)?,
                denominator: number("denominator", denominator)?,
                samples: number("samples", samples)?,
            }
        }
        "kyber_throttled" => KyberPoint::Throttled { domain: domain()? },
        _ => return Ok(None),
    }))
}

/// The `CLASS,HINT,LEVEL` of an rq event (`__print_symbolic` of `IOPRIO_PRIO_CLASS`, then
/// `IOPRIO_PRIO_HINT` (bits 3..13) and `IOPRIO_PRIO_LEVEL` (bits 0..3) of
/// `include/uapi/linux/ioprio.h`, as this kernel's `block_rq_*` formats print them); `None`
/// for class `none`.
fn parse_ioprio(text: &str) -> Result<Option<IoPriority>, (&'static str, String)> {
    let accepted = "accepted: `CLASS,HINT,LEVEL`, class none, rt, be or idle, level 0..=7";
    let [class, _hint, level] = text.split(',').collect::<Vec<_>>()[..] else {
        return Err(("ioprio", format!("`{text}`; {accepted}")));
    };
    let class = match class {
        "none" => return Ok(None),
        "rt" => IoClass::RealTime,
        "be" => IoClass::BestEffort,
        "idle" => IoClass::Idle,
        _ => return Err(("ioprio", format!("class `{class}`; {accepted}"))),
    };
    let level =
        level.parse::<u8>().map_err(|_| ("ioprio", format!("level `{level}`; {accepted}")))?;
    IoPriority::new(class, level).map(Some).map_err(|error| ("ioprio", error.to_string()))
}

/// The body of a block event (`TP_printk` of `include/trace/events/block.h`):
///
/// * `block_rq_issue`, `block_rq_insert`, `block_rq_merge`:
///   `MAJ,MIN RWBS BYTES (CMD) SECTOR + N [PRIO] [COMM]`
/// * `block_rq_complete`: `MAJ,MIN RWBS (CMD) SECTOR + N [PRIO] [ERROR]`
/// * `block_rq_requeue`: `MAJ,MIN RWBS (CMD) SECTOR + N [PRIO] [0]`
/// * `block_bio_queue`, `block_bio_backmerge`, `block_bio_frontmerge`, `block_getrq`:
///   `MAJ,MIN RWBS SECTOR + N [COMM]`
///
/// PRIO (`be,0,4`: class, hint, level) is printed by the rq events from 6.10 on.
fn parse_body(kind: EventKind, body: &str) -> Result<BlockEvent, (&'static str, String)> {
    let mut words = body.split_whitespace();
    let (major, minor) = parse_dev(words.next())?;
    let rwbs = words.next().ok_or(("rwbs", "missing".to_owned()))?.to_owned();
    let mut rest = words.collect::<Vec<_>>().join(" ");
    let bytes = if kind.prints_bytes() {
        let (word, after) = rest.split_once(' ').unwrap_or((&rest, ""));
        let bytes = word.parse().map_err(|_| ("bytes", format!("`{word}` is not a byte count")))?;
        rest = after.to_owned();
        Some(bytes)
    } else {
        None
    };
    if !kind.is_bio() {
        // The command of a passthrough request, hex bytes that may hold spaces: `(12 00 …)`.
        let after = rest
            .strip_prefix('(')
            .and_then(|inner| inner.split_once(')'))
            .map(|(_, after)| after.trim_start().to_owned())
            .ok_or(("cmd", format!("`{rest}` does not start with `(CMD)`")))?;
        rest = after;
    }
    let mut words = rest.split_whitespace();
    let sector = words.next().unwrap_or_default();
    let sector = sector.parse().map_err(|_| ("sector", format!("`{sector}` is not a sector")))?;
    if words.next() != Some("+") {
        return Err(("sector", format!("`{rest}` is not `SECTOR + COUNT`")));
    }
    let sectors = words.next().unwrap_or_default();
    let sectors =
        sectors.parse().map_err(|_| ("sectors", format!("`{sectors}` is not a sector count")))?;
    // The bracketed last field, and the priority before it when the line has one.
    let (before_tail, tail) = rest
        .rsplit_once('[')
        .map(|(before, tail)| (before, tail.trim_end().trim_end_matches(']')))
        .ok_or(("tail", format!("`{rest}` ends without `[COMM]` or `[ERROR]`")))?;
    let priority = match before_tail.split_whitespace().nth(3) {
        Some(ioprio) if !kind.is_bio() => parse_ioprio(ioprio)?,
        _ => None,
    };
    let (command, error) = match kind {
        EventKind::Complete => {
            let error = tail.parse().map_err(|_| ("error", format!("`{tail}` is not an errno")))?;
            (None, Some(error))
        }
        // Requeue prints a constant 0 where the others print the command.
        EventKind::Requeue => (None, None),
        _ => (Some(tail.to_owned()), None),
    };
    Ok(BlockEvent {
        task: String::new(),
        pid: 0,
        cpu: 0,
        time_ns: 0,
        kind,
        major,
        minor,
        rwbs,
        sector,
        sectors,
        bytes,
        command,
        error,
        priority,
    })
}

/// A finished capture.
#[derive(Clone, Debug)]
pub struct Capture {
    /// The device traced.
    pub device: TracedDevice,
    /// Its events, in the order `trace_pipe` gave them (time order per CPU; merged across
    /// CPUs by the kernel's reader, which picks the oldest first).
    pub events: Vec<BlockEvent>,
    /// kyber's events, when [`CaptureOptions::scheduler_events`] asked for them.
    pub kyber_events: Vec<KyberEvent>,
    /// Plug events (of every task: they print no device), when
    /// [`CaptureOptions::scheduler_events`] asked for them.
    pub plug_events: Vec<PlugEvent>,
    /// kblockd's hardware-queue runs (of every queue: they print no device), when
    /// [`CaptureOptions::scheduler_events`] asked for them.
    pub work_events: Vec<WorkEvent>,
    /// Events the kernel dropped (ring buffer full): the capture is incomplete when not 0.
    pub lost_events: u64,
    /// Events of other devices that got past the kernel's filter (none expected).
    pub other_device_events: u64,
    /// Whether the capture stopped because it held [`EVENTS_MAX`] events.
    pub stopped_at_limit: bool,
    /// What the person should know about how it ended (tracefs left mounted because another
    /// process uses it).
    pub notes: Vec<String>,
}

/// Counts of a capture's events, for a summary line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaptureCounts {
    /// Q events.
    pub queued: u64,
    /// I events.
    pub inserted: u64,
    /// D events.
    pub issued: u64,
    /// C events.
    pub completed: u64,
    /// Bio merges into a waiting request (M and F events).
    pub bio_merged: u64,
    /// Requests allocated for a bio (G events).
    pub allocated: u64,
    /// Requests merged into another (`block_rq_merge`).
    pub rq_merged: u64,
    /// Requests the driver gave back (R events).
    pub requeued: u64,
}

impl fmt::Display for CaptureCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} issued, {} completed, {} queued, {} inserted",
            self.issued, self.completed, self.queued, self.inserted
        )
    }
}

/// Captures `device`'s block I/O until `options.duration` has passed or `stop` is set.
/// Everything set up (the instance; tracefs when mounted here) is undone before returning,
/// also on error.
pub fn capture(
    device: &TracedDevice,
    options: &CaptureOptions,
    stop: &AtomicBool,
) -> Result<Capture, TraceError> {
    check_privileges()?;
    let tracefs = Tracefs::attach()?;
    let stale = remove_stale_instances(&tracefs);
    let instance = Instance::create(&tracefs, &instance_name())?;
    let result = capture_in(&instance, device, options, stop);
    // In this order: an instance's directory lives in tracefs.
    let removed = instance.remove();
    let closed = tracefs.close();
    let mut capture = result?;
    removed?;
    capture.notes.extend(stale);
    capture.notes.extend(closed?);
    Ok(capture)
}

/// Whether this process may trace: root (tracefs' files are root's, and mounting it needs
/// `CAP_SYS_ADMIN`).
pub fn check_privileges() -> Result<(), TraceError> {
    let uid = rustix::process::geteuid();
    if uid.is_root() {
        return Ok(());
    }
    Err(TraceError::NeedsRoot {
        what: "tracing block I/O".into(),
        why: format!(
            "tracefs events and {TRACEFS_MOUNT_POINT} are root's (effective uid {})",
            uid.as_raw()
        ),
    })
}

/// Removes the instances of captures whose process is gone; a note for each.
fn remove_stale_instances(tracefs: &Tracefs) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(tracefs.root().join("instances")) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = stale_instance_pid(&name) else { continue };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let path = entry.path();
        let _ = std::fs::write(path.join("tracing_on"), "0");
        notes.push(match std::fs::remove_dir(&path) {
            Ok(()) => format!("removed {}, left by process {pid} that is gone", path.display()),
            Err(error) => format!("{}, left by process {pid}: {error}", path.display()),
        });
    }
    notes
}

/// The PID in an instance name of ours: `elevator-<pid>` or `elevator-<pid>-<n>`.
fn stale_instance_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("elevator-")?;
    let pid = rest.split_once('-').map_or(rest, |(pid, index)| {
        if index.bytes().all(|b| b.is_ascii_digit()) { pid } else { "" }
    });
    pid.parse().ok().filter(|&pid| pid > 0)
}

/// The default ring buffer per CPU for `cpus` CPUs, KiB.
fn default_buffer_size_kb(cpus: u64) -> u64 {
    BUFFER_SIZE_KB_DEFAULT.min(BUFFER_TOTAL_KB_DEFAULT_MAX / cpus.max(1))
}

/// `elevator-<pid>` for a process's first capture, `elevator-<pid>-N` for the Nth after it
/// (captures of one process may overlap: tests, a library user's threads).
fn instance_name() -> String {
    static CAPTURES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    match CAPTURES.fetch_add(1, Ordering::SeqCst) {
        0 => format!("elevator-{}", std::process::id()),
        index => format!("elevator-{}-{index}", std::process::id()),
    }
}

fn capture_in(
    instance: &Instance,
    device: &TracedDevice,
    options: &CaptureOptions,
    stop: &AtomicBool,
) -> Result<Capture, TraceError> {
    instance.write("tracing_on", "0")?;
    let buffer_size_kb = match options.buffer_size_kb {
        Some(size_kb) => size_kb,
        None => {
            // The CPUs that have a buffer: the instance's per_cpu directories.
            let per_cpu = instance.dir().join("per_cpu");
            let cpus = std::fs::read_dir(&per_cpu).map_or(1, |entries| entries.count() as u64);
            default_buffer_size_kb(cpus)
        }
    };
    instance.write("buffer_size_kb", &buffer_size_kb.to_string())?;
    instance.write("trace_clock", "mono")?;
    let mut kinds = vec![EventKind::Issue, EventKind::Complete];
    if options.queue_events {
        kinds.extend([EventKind::Queue, EventKind::Insert]);
    }
    let mut events: Vec<String> = Vec::new();
    if options.scheduler_events {
        kinds = EventKind::ALL.to_vec();
        // kyber's events exist while the kyber module is loaded (always, once a queue used it).
        events.extend(
            KYBER_TRACEPOINTS
                .iter()
                .map(|name| format!("events/kyber/{name}"))
                .filter(|event| instance.dir().join(event).exists()),
        );
    }
    events.splice(0..0, kinds.iter().map(|kind| format!("events/block/{}", kind.tracepoint())));
    if options.scheduler_events {
        // No `dev` field to filter on: every task's plugs, kept or dropped in user space.
        for name in PLUG_TRACEPOINTS {
            let event = format!("events/block/{name}");
            if instance.dir().join(&event).exists() {
                instance.write(&format!("{event}/enable"), "1")?;
            }
        }
        // No `dev` field either: every hardware queue's kblockd runs, matched to the device
        // from its issues in user space.
        for name in WORK_TRACEPOINTS {
            let event = format!("events/workqueue/{name}");
            if instance.dir().join(&event).exists() {
                instance.write(&format!("{event}/filter"), WORK_FILTER)?;
                instance.write(&format!("{event}/enable"), "1")?;
            }
        }
    }
    for event in &events {
        // Every event here has the `dev` field (`dev_t`), so the kernel filters by device.
        instance.write(&format!("{event}/filter"), &format!("dev == {}", device.kernel_dev()))?;
        instance.write(&format!("{event}/enable"), "1")?;
    }
    let pipe_path = instance.dir().join("trace_pipe");
    let mut pipe = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags_nonblocking()
        .open(&pipe_path)
        .map_err(|e| io_error("opening", &pipe_path, e))?;
    let clock = elevator_live::Clock::start();
    instance.write("tracing_on", "1")?;
    if let Some(ready) = &options.ready {
        ready.store(true, Ordering::SeqCst);
    }
    let mut reader = PipeReader::new(device, pipe_path.display().to_string());
    let deadline =
        options.duration.map(|duration| elevator_core::Instant::ZERO.saturating_add(duration));
    loop {
        let read = reader.read_available(&mut pipe)?;
        if reader.events.len() >= EVENTS_MAX {
            reader.stopped_at_limit = true;
            break;
        }
        let done = stop.load(Ordering::SeqCst) || deadline.is_some_and(|at| clock.now() >= at);
        if done {
            break;
        }
        if read == 0 {
            std::thread::sleep(std::time::Duration::from_millis(POLL_INTERVAL_MS));
        }
    }
    // Switched off first, so that what is left is finite; then read to the end.
    instance.write("tracing_on", "0")?;
    while reader.events.len() < EVENTS_MAX && reader.read_available(&mut pipe)? > 0 {}
    reader.finish()?;
    let lost_events = reader.lost_in_pipe.max(instance.lost_events()?);
    Ok(Capture {
        device: device.clone(),
        events: reader.events,
        kyber_events: reader.kyber_events,
        plug_events: reader.plug_events,
        work_events: reader.work_events,
        lost_events,
        other_device_events: reader.other_device_events,
        stopped_at_limit: reader.stopped_at_limit,
        notes: Vec::new(),
    })
}

/// Opening `trace_pipe` without blocking reads, so the capture can stop on time.
trait NonBlocking {
    fn custom_flags_nonblocking(&mut self) -> &mut Self;
}

impl NonBlocking for std::fs::OpenOptions {
    fn custom_flags_nonblocking(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
    }
}

/// Splits what `trace_pipe` gives into lines and parses them.
struct PipeReader {
    file: String,
    major: u32,
    minor: u32,
    partial: Vec<u8>,
    line: usize,
    events: Vec<BlockEvent>,
    kyber_events: Vec<KyberEvent>,
    plug_events: Vec<PlugEvent>,
    work_events: Vec<WorkEvent>,
    lost_in_pipe: u64,
    other_device_events: u64,
    stopped_at_limit: bool,
}

impl PipeReader {
    fn new(device: &TracedDevice, file: String) -> PipeReader {
        PipeReader {
            file,
            major: device.major,
            minor: device.minor,
            partial: Vec::new(),
            line: 0,
            events: Vec::new(),
            kyber_events: Vec::new(),
            plug_events: Vec::new(),
            work_events: Vec::new(),
            lost_in_pipe: 0,
            other_device_events: 0,
            stopped_at_limit: false,
        }
    }

    /// Reads what is there now; the number of bytes read (0: nothing now).
    fn read_available(&mut self, pipe: &mut impl Read) -> Result<usize, TraceError> {
        let mut buffer = [0u8; 64 << 10];
        let read = match pipe.read(&mut buffer) {
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => return Ok(0),
            Err(error) => return Err(io_error("reading", Path::new(&self.file), error)),
        };
        self.partial.extend_from_slice(&buffer[..read]);
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            self.take_line(&String::from_utf8_lossy(&line[..end]))?;
        }
        Ok(read)
    }

    fn take_line(&mut self, text: &str) -> Result<(), TraceError> {
        self.line += 1;
        if text.trim().is_empty() {
            return Ok(());
        }
        match parse_line(text) {
            Ok(TraceLine::Event(event)) => {
                if (event.major, event.minor) == (self.major, self.minor) {
                    self.events.push(event);
                } else {
                    self.other_device_events += 1;
                }
            }
            Ok(TraceLine::Kyber(event)) => {
                if (event.major, event.minor) == (self.major, self.minor) {
                    self.kyber_events.push(event);
                } else {
                    self.other_device_events += 1;
                }
            }
            Ok(TraceLine::Plug(event)) => {
                self.plug_events.push(PlugEvent { after_block_events: self.events.len(), ..event });
            }
            Ok(TraceLine::Work(event)) => {
                self.work_events.push(WorkEvent { after_block_events: self.events.len(), ..event });
            }
            Ok(TraceLine::Lost { count }) => self.lost_in_pipe += count,
            Ok(TraceLine::Other) => {}
            Err((field, problem)) => {
                return Err(TraceError::Line {
                    file: self.file.clone(),
                    line: self.line,
                    field,
                    problem,
                });
            }
        }
        Ok(())
    }

    /// A last line without its line end.
    fn finish(&mut self) -> Result<(), TraceError> {
        let rest = std::mem::take(&mut self.partial);
        self.take_line(&String::from_utf8_lossy(&rest))
    }
}

impl PlugEvent {
    /// As a scheduler capture's event, its time since `start_ns`.
    fn sched_event(&self, start_ns: u64) -> SchedEvent {
        let time_ns = self.time_ns.saturating_sub(start_ns);
        let command = Some(self.command.clone());
        let (cpu, pid) = (self.cpu, self.pid);
        match self.unplugged {
            None => SchedEvent::Plug { time_ns, cpu, pid, command },
            Some(requests) => SchedEvent::Unplug { time_ns, cpu, pid, command, requests },
        }
    }
}

impl WorkEvent {
    /// As a scheduler capture's event, its time since `start_ns`.
    fn sched_event(&self, start_ns: u64) -> SchedEvent {
        let (time_ns, cpu, pid) = (self.time_ns.saturating_sub(start_ns), self.cpu, self.pid);
        if self.start {
            SchedEvent::KblockdStart { time_ns, cpu, pid }
        } else {
            SchedEvent::KblockdEnd { time_ns, cpu, pid }
        }
    }
}

impl Capture {
    /// The work items (addresses as printed) that are the device's hardware-queue runs: those
    /// of `blk_mq_run_work_fn` with an execution during which its kworker (same pid and CPU)
    /// issued a request of the device. A hardware queue's `run_work` is one address, so every
    /// execution of these is a kblockd run of the device's queue.
    pub fn device_runs(&self) -> std::collections::BTreeSet<String> {
        let mut open: BTreeMap<(u32, u32), &str> = BTreeMap::new();
        let mut found = std::collections::BTreeSet::new();
        let mut works = self.work_events.iter().peekable();
        for (index, event) in self.events.iter().enumerate() {
            while let Some(work) = works.next_if(|work| work.after_block_events <= index) {
                if work.function != "blk_mq_run_work_fn" {
                    continue;
                }
                if work.start {
                    open.insert((work.cpu, work.pid), work.work.as_str());
                } else {
                    open.remove(&(work.cpu, work.pid));
                }
            }
            if event.kind == EventKind::Issue
                && let Some(work) = open.get(&(event.cpu, event.pid))
            {
                found.insert((*work).to_owned());
            }
        }
        found
    }

    /// How many events of each kind it holds.
    pub fn counts(&self) -> CaptureCounts {
        let mut counts = CaptureCounts::default();
        for event in &self.events {
            match event.kind {
                EventKind::Queue => counts.queued += 1,
                EventKind::Insert => counts.inserted += 1,
                EventKind::Issue => counts.issued += 1,
                EventKind::Complete => counts.completed += 1,
                EventKind::BioBackMerge | EventKind::BioFrontMerge => counts.bio_merged += 1,
                EventKind::GetRq => counts.allocated += 1,
                EventKind::Merge => counts.rq_merged += 1,
                EventKind::Requeue => counts.requeued += 1,
            }
        }
        counts
    }

    /// The time of its first event, ns: the zero of the written timestamps.
    fn start_ns(&self) -> u64 {
        self.events.iter().map(|event| event.time_ns).min().unwrap_or(0)
    }

    /// fio's iolog v3 of the dispatches: `FILE add`, `FILE open`, a record per dispatched
    /// request (µs since the first event; offset and length in bytes), `FILE close`. The
    /// second value is how many dispatches moved no data and were left out.
    pub fn iolog(&self, file: &str) -> (Iolog, u64) {
        let start_ns = self.start_ns();
        let record = |time_ns: u64, action: Action| Record {
            time_us: Some(time_ns.saturating_sub(start_ns) / 1000),
            file: file.to_owned(),
            action,
        };
        let mut records = vec![
            record(start_ns, Action::File(FileAction::Add)),
            record(start_ns, Action::File(FileAction::Open)),
        ];
        let mut left_out = 0;
        let mut last_ns = start_ns;
        for event in self.events.iter().filter(|event| event.kind == EventKind::Issue) {
            last_ns = last_ns.max(event.time_ns);
            let action = match event.direction() {
                Direction::Read => IoAction::Read,
                Direction::Write => IoAction::Write,
                Direction::Discard => IoAction::Trim,
                Direction::Flush => IoAction::Sync,
                Direction::Other => {
                    left_out += 1;
                    continue;
                }
            };
            let (offset_bytes, length_bytes) = match action {
                IoAction::Sync => (0, 0),
                _ => (event.sector * 512, u32::try_from(event.size_bytes()).unwrap_or(u32::MAX)),
            };
            records.push(record(event.time_ns, Action::Io { action, offset_bytes, length_bytes }));
        }
        records.push(record(last_ns, Action::File(FileAction::Close)));
        (Iolog { version: iolog::Version::V3, records }, left_out)
    }

    /// The capture as a scheduler capture's events ([`elevator_trace::sched_log`]): block and
    /// kyber events merged in time order (block first at equal times, each list in its own
    /// order), times in ns since the first event. The second value counts the block events
    /// left out because their RWBS letters name no operation of [`Op`] (`N`, zone commands).
    pub fn sched_events(&self) -> (Vec<SchedEvent>, u64) {
        let start_ns = self
            .events
            .iter()
            .map(|event| event.time_ns)
            .chain(self.kyber_events.iter().map(|event| event.time_ns))
            .min()
            .unwrap_or(0);
        let mut left_out = 0;
        // The plug events of the tasks that inserted into the device, each before the block
        // event it preceded in `trace_pipe` (an unplug before the inserts it flushes).
        let inserters: std::collections::BTreeSet<u32> = self
            .events
            .iter()
            .filter(|event| event.kind == EventKind::Insert)
            .map(|event| event.pid)
            .collect();
        let plugs = self
            .plug_events
            .iter()
            .filter(|plug| inserters.contains(&plug.pid) && plug.time_ns >= start_ns)
            .map(|plug| (plug.after_block_events, plug.time_ns, plug.sched_event(start_ns)));
        // And the kblockd runs of the device's hardware queue(s), likewise placed.
        let works = self.device_runs();
        let runs = self
            .work_events
            .iter()
            .filter(|work| works.contains(&work.work) && work.time_ns >= start_ns)
            .map(|work| (work.after_block_events, work.time_ns, work.sched_event(start_ns)));
        let mut extras: Vec<(usize, u64, SchedEvent)> = plugs.chain(runs).collect();
        // Stable: each list keeps trace_pipe's order; between them, place then time.
        extras.sort_by_key(|(after, time_ns, _)| (*after, *time_ns));
        let mut plugs = extras.into_iter().peekable();
        let mut block = Vec::with_capacity(self.events.len());
        for (index, event) in self.events.iter().enumerate() {
            while let Some((_, _, plug)) = plugs.next_if(|(after, _, _)| *after <= index) {
                block.push(plug);
            }
            let Some(record) = event.record(start_ns) else {
                left_out += 1;
                continue;
            };
            block.push(SchedEvent::Block(record));
        }
        block.extend(plugs.map(|(_, _, plug)| plug));
        let kyber = self.kyber_events.iter().map(|event| {
            let time_ns = event.time_ns - start_ns;
            match &event.point {
                KyberPoint::Adjust { domain, depth } => {
                    SchedEvent::KyberAdjust { time_ns, domain: domain.clone(), depth: *depth }
                }
                KyberPoint::Latency {
                    domain,
                    kind,
                    percentile,
                    numerator,
                    denominator,
                    samples,
                } => SchedEvent::KyberLatency {
                    time_ns,
                    domain: domain.clone(),
                    kind: kind.clone(),
                    percentile: *percentile,
                    numerator: *numerator,
                    denominator: *denominator,
                    samples: *samples,
                },
                KyberPoint::Throttled { domain } => {
                    SchedEvent::KyberThrottled { time_ns, domain: domain.clone() }
                }
            }
        });
        // A stable merge of two lists each in time order (trace_pipe's order is kept).
        let mut merged = Vec::with_capacity(block.len() + self.kyber_events.len());
        let mut kyber = kyber.peekable();
        for event in block {
            while let Some(next) = kyber.next_if(|next| next.time_ns() < event.time_ns()) {
                merged.push(next);
            }
            merged.push(event);
        }
        merged.extend(kyber);
        (merged, left_out)
    }

    /// blkparse's default text (`%D %2c %8s %5T.%9t %5p %2a %3d` and the per-action tail of
    /// `blkparse_fmt.c` `process_default`), a line per event; a completion whose dispatch was
    /// captured carries the ns between them as `-t` prints it.
    pub fn write_blkparse(&self, out: &mut dyn Write) -> io::Result<()> {
        let start_ns = self.start_ns();
        let mut sequence_by_cpu: BTreeMap<u32, u64> = BTreeMap::new();
        // Dispatch times of requests in flight, by (sector, direction), oldest first.
        let mut issued: BTreeMap<(u64, Direction), VecDeque<u64>> = BTreeMap::new();
        // blkparse has no action for a request merge (blktrace records none).
        for event in self.events.iter().filter(|event| event.kind != EventKind::Merge) {
            let sequence = sequence_by_cpu.entry(event.cpu).or_insert(0);
            *sequence += 1;
            let since_ns = event.time_ns.saturating_sub(start_ns);
            write!(
                out,
                "{:3},{:<3} {:2} {:8} {:5}.{:09} {:5} {:>2} {:>3} ",
                event.major,
                event.minor,
                event.cpu,
                sequence,
                since_ns / 1_000_000_000,
                since_ns % 1_000_000_000,
                event.pid,
                event.kind.action(),
                event.rwbs,
            )?;
            let key = (event.sector, event.direction());
            let range = if event.sectors > 0 {
                format!("{} + {}", event.sector, event.sectors)
            } else {
                event.sector.to_string()
            };
            match event.kind {
                EventKind::Complete => {
                    let error = event.error.unwrap_or(0);
                    let dispatched = issued.get_mut(&key).and_then(VecDeque::pop_front);
                    match dispatched {
                        Some(at_ns) => {
                            let latency_ns = event.time_ns.saturating_sub(at_ns);
                            writeln!(out, "{range} ({latency_ns:8}) [{error}]")?;
                        }
                        None => writeln!(out, "{range} [{error}]")?,
                    }
                }
                kind => {
                    if kind == EventKind::Issue {
                        issued.entry(key).or_default().push_back(event.time_ns);
                    }
                    let command = event.command.as_deref().unwrap_or(&event.task);
                    writeln!(out, "{range} [{command}]")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as this machine's 6.18 kernel printed them (a loop device, dd with
    /// oflag=direct and iflag=direct), plus the lost-events marker and a line of another
    /// event.
    const SAMPLE: &str = "\
              dd-17959   [000] ..... 46853.226919: block_bio_queue: 7,0 WS 40 + 8 [dd]
              dd-17959   [000] .N... 46853.227872: block_rq_issue: 7,0 WS 4096 () 40 + 8 be,0,4 [dd]
     ksoftirqd/1-22      [001] ..s.. 46853.228150: block_rq_complete: 7,0 WS () 40 + 8 be,0,4 [0]
          <idle>-0       [001] ..s1. 46853.230880: block_rq_complete: 7,0 RS () 32 + 16 be,0,4 [-5]
 kworker/u8:2-my job-77  [003] d..1. 100.000001: block_rq_insert: 259,1 FF 0 () 0 + 0 [kworker/u8:2]
CPU:1 [LOST 42 EVENTS]
            bash-1       [000] ..... 1.5: sched_switch: prev_comm=bash
";

    // Proves the line parser reads every field of the kernel's real block event lines
    // (task with a slash, PID, CPU, µs timestamp, device, RWBS, bytes, sector range,
    // command or error), a task name holding a dash and a space, the lost-events marker,
    // and passes other events by.
    #[test]
    fn parses_the_kernels_block_event_lines() {
        let lines: Vec<TraceLine> = SAMPLE.lines().map(|line| parse_line(line).unwrap()).collect();
        let TraceLine::Event(queue) = &lines[0] else { panic!("{:?}", lines[0]) };
        assert_eq!((queue.kind, queue.pid, queue.cpu), (EventKind::Queue, 17959, 0));
        assert_eq!((queue.sector, queue.sectors, queue.bytes), (40, 8, None));
        assert_eq!(queue.command.as_deref(), Some("dd"));
        let TraceLine::Event(issue) = &lines[1] else { panic!("{:?}", lines[1]) };
        assert_eq!(issue.kind, EventKind::Issue);
        assert_eq!(issue.time_ns, 46_853_227_872_000);
        assert_eq!((issue.major, issue.minor, issue.rwbs.as_str()), (7, 0, "WS"));
        assert_eq!((issue.bytes, issue.sector, issue.sectors), (Some(4096), 40, 8));
        assert_eq!(issue.direction(), Direction::Write);
        let TraceLine::Event(complete) = &lines[2] else { panic!("{:?}", lines[2]) };
        assert_eq!((complete.task.as_str(), complete.pid, complete.cpu), ("ksoftirqd/1", 22, 1));
        assert_eq!(
            (complete.kind, complete.error, complete.command.clone()),
            (EventKind::Complete, Some(0), None)
        );
        let TraceLine::Event(failed) = &lines[3] else { panic!("{:?}", lines[3]) };
        assert_eq!((failed.task.as_str(), failed.pid, failed.error), ("<idle>", 0, Some(-5)));
        assert_eq!(failed.direction(), Direction::Read);
        let TraceLine::Event(flush) = &lines[4] else { panic!("{:?}", lines[4]) };
        assert_eq!((flush.task.as_str(), flush.pid, flush.cpu), ("kworker/u8:2-my job", 77, 3));
        assert_eq!((flush.major, flush.minor, flush.time_ns), (259, 1, 100_000_001_000));
        assert_eq!(flush.direction(), Direction::Flush);
        assert_eq!(lines[5], TraceLine::Lost { count: 42 });
        assert_eq!(lines[6], TraceLine::Other);
    }

    // Proves older kernels' lines (no I/O priority before the bracket, no latency flags)
    // read the same, and a passthrough command with spaces inside its parentheses is skipped.
    #[test]
    fn parses_lines_without_priority_or_flags() {
        let line = "fio-9 [002] 5.000010: block_rq_issue: 8,16 R 8192 (28 00 00) 2048 + 16 [fio]";
        let TraceLine::Event(event) = parse_line(line).unwrap() else { panic!() };
        assert_eq!((event.task.as_str(), event.pid, event.cpu), ("fio", 9, 2));
        assert_eq!((event.major, event.minor, event.sector, event.sectors), (8, 16, 2048, 16));
        assert_eq!(event.command.as_deref(), Some("fio"));
    }

    // Proves a malformed block event is an error naming the field, never a panic or a
    // silently wrong event.
    #[test]
    fn malformed_block_lines_name_the_field() {
        let cases = [
            ("dd-1 [000] ..... 1.0: block_rq_issue: 7,x WS 4096 () 40 + 8 [dd]", "dev"),
            ("dd-1 [000] ..... 1.0: block_rq_issue: 7,0 WS many () 40 + 8 [dd]", "bytes"),
            ("dd-1 [000] ..... 1.0: block_rq_issue: 7,0 WS 4096 40 + 8 [dd]", "cmd"),
            ("dd-1 [000] ..... 1.0: block_rq_issue: 7,0 WS 4096 () 40 - 8 [dd]", "sector"),
            ("dd-1 [000] ..... 1.0: block_rq_complete: 7,0 WS () 40 + 8 [ok]", "error"),
            ("dd-1 [000] ..... x.0: block_bio_queue: 7,0 WS 40 + 8 [dd]", "time"),
            ("dd-1 000 ..... 1.0: block_bio_queue: 7,0 WS 40 + 8 [dd]", "cpu"),
            ("dd [000] ..... 1.0: block_bio_queue: 7,0 WS 40 + 8 [dd]", "pid"),
            ("garbage", "line"),
        ];
        for (line, field) in cases {
            assert_eq!(parse_line(line).map_err(|(f, _)| f), Err(field), "{line}");
        }
    }

    /// Lines of the scheduler events as this machine's 6.18.44 kernel printed them (a loop
    /// device under kyber and mq-deadline, fio with ionice classes; the rq_merge and
    /// rq_requeue lines are of a virtio disk of the same machine).
    const SCHED_SAMPLE: &str = "\
    kworker/u8:1-11558   [000] ...1. 62321.463977: block_rq_merge: 254,0 WS 45056 () 178146112 + 88 be,0,4 [kworker/u8:1]
    kworker/u8:1-11558   [000] .N... 62321.464034: block_rq_requeue: 254,0 WS () 373493760 + 2216 be,0,4 [0]
             fio-4345    [000] ..... 62320.770633: block_bio_backmerge: 7,1 WS 8 + 8 [fio]
             fio-4371    [000] ...1. 62321.962789: block_bio_frontmerge: 7,1 WS 1016 + 8 [fio]
   iou-wrk-31002-31014   [000] ..... 62204.983305: block_getrq: 7,1 WS 1912 + 8 [iou-wrk-31002]
   iou-wrk-31002-31014   [000] ...1. 62204.983306: block_rq_insert: 7,1 WS 4096 () 1912 + 8 rt,0,2 [iou-wrk-31002]
              dd-31500   [001] ...1. 62211.700001: block_rq_insert: 7,1 RS 4096 () 64 + 8 idle,0,7 [dd]
    kworker/u8:3-27206   [000] ..s1. 62205.012021: kyber_latency: 7,1 READ I/O p90 1/4 samples=8971
    kworker/u8:3-27206   [000] ..s1. 62205.012023: kyber_latency: 7,1 READ total p99 1/4 samples=8971
    kworker/u8:3-27206   [000] ..s1. 62205.012030: kyber_adjust: 7,1 READ 16
             fio-31002   [001] ..... 62205.012031: kyber_throttled: 7,1 WRITE
";

    // Proves the scheduler events parse with their kernel fields: the request merge's bytes
    // and priority, the requeue's constant `[0]` not taken for a command, bio merges and
    // getrq without priority, `CLASS,HINT,LEVEL` read as class and level (rt,0,2 is RT
    // level 2, not hint 2), idle, and kyber's three events with their numbers.
    #[test]
    fn parses_the_scheduler_event_lines() {
        let lines: Vec<TraceLine> =
            SCHED_SAMPLE.lines().map(|line| parse_line(line).unwrap()).collect();
        let event = |index: usize| match &lines[index] {
            TraceLine::Event(event) => event.clone(),
            other => panic!("{other:?}"),
        };
        let merge = event(0);
        assert_eq!(
            (merge.kind, merge.bytes, merge.sector, merge.sectors),
            (EventKind::Merge, Some(45056), 178146112, 88)
        );
        assert_eq!(merge.priority, Some(IoPriority::best_effort(4).unwrap()));
        assert_eq!(merge.command.as_deref(), Some("kworker/u8:1"));
        let requeue = event(1);
        assert_eq!(
            (requeue.kind, requeue.command.clone(), requeue.error),
            (EventKind::Requeue, None, None)
        );
        assert_eq!((requeue.sector, requeue.sectors), (373493760, 2216));
        let back = event(2);
        assert_eq!(
            (back.kind, back.priority, back.command.as_deref()),
            (EventKind::BioBackMerge, None, Some("fio"))
        );
        assert_eq!(event(3).kind, EventKind::BioFrontMerge);
        assert_eq!((event(4).kind, event(4).sector), (EventKind::GetRq, 1912));
        let insert = event(5);
        assert_eq!(insert.priority, Some(IoPriority::realtime(2).unwrap()));
        assert_eq!(event(6).priority, Some(IoPriority::idle()));
        let kyber = |index: usize| match &lines[index] {
            TraceLine::Kyber(event) => event.clone(),
            other => panic!("{other:?}"),
        };
        let latency = kyber(7);
        assert_eq!(
            (latency.major, latency.minor, latency.cpu, latency.time_ns),
            (7, 1, 0, 62_205_012_021_000)
        );
        assert_eq!(
            latency.point,
            KyberPoint::Latency {
                domain: "READ".into(),
                kind: "I/O".into(),
                percentile: 90,
                numerator: 1,
                denominator: 4,
                samples: 8971
            }
        );
        assert!(
            matches!(kyber(8).point, KyberPoint::Latency { percentile: 99, ref kind, .. } if kind == "total")
        );
        assert_eq!(kyber(9).point, KyberPoint::Adjust { domain: "READ".into(), depth: 16 });
        assert_eq!(kyber(10).point, KyberPoint::Throttled { domain: "WRITE".into() });
    }

    // Proves RWBS letters give blk_fill_rwbs's flags: a leading F is a preflush (also on a
    // flush request, `FF`), an F after the operation is FUA, then readahead, sync, metadata.
    #[test]
    fn rwbs_letters_give_the_flags() {
        let flags = |p, f, a, s, m| IoFlags { preflush: p, fua: f, readahead: a, sync: s, meta: m };
        assert_eq!(rwbs_flags("FF"), flags(true, false, false, false, false));
        assert_eq!(rwbs_flags("F"), IoFlags::default());
        assert_eq!(rwbs_flags("FWFSM"), flags(true, true, false, true, true));
        assert_eq!(rwbs_flags("RA"), flags(false, false, true, false, false));
        assert_eq!(rwbs_flags("WS"), flags(false, false, false, true, false));
        assert_eq!(rwbs_flags("DE"), IoFlags::default());
    }

    // Proves bad priorities and kyber bodies are errors naming the field, not panics.
    #[test]
    fn malformed_scheduler_lines_name_the_field() {
        let cases = [
            ("f-1 [000] ..... 1.0: block_rq_insert: 7,0 W 4096 () 8 + 8 invalid,0,0 [f]", "ioprio"),
            ("f-1 [000] ..... 1.0: block_rq_insert: 7,0 W 4096 () 8 + 8 be,0,9 [f]", "ioprio"),
            ("f-1 [000] ..... 1.0: block_rq_insert: 7,0 W 4096 () 8 + 8 be,x [f]", "ioprio"),
            ("f-1 [000] ..... 1.0: kyber_adjust: 7,0 READ many", "depth"),
            ("f-1 [000] ..... 1.0: kyber_adjust: 7,0", "domain"),
            ("f-1 [000] ..... 1.0: kyber_latency: 7,0 READ I/O 90 1/4 samples=3", "percentile"),
            ("f-1 [000] ..... 1.0: kyber_latency: 7,0 READ I/O p90 1/4", "fields"),
            ("f-1 [000] ..... 1.0: kyber_throttled: 7-0 READ", "dev"),
        ];
        for (line, field) in cases {
            assert_eq!(parse_line(line).map_err(|(f, _)| f), Err(field), "{line}");
        }
    }

    // Proves the conversion to a scheduler capture keeps each event's fields, takes times
    // from the first event, merges kyber events in by time, and leaves out `N` requests.
    #[test]
    fn sched_events_merge_block_and_kyber_in_time_order() {
        let mut capture = sample_capture();
        let mut other = event_with("N", 0);
        other.time_ns = capture.events[1].time_ns;
        capture.events.push(other);
        let TraceLine::Kyber(adjust) =
            parse_line("k-1 [000] ..... 46853.227000: kyber_adjust: 7,0 WRITE 64").unwrap()
        else {
            panic!()
        };
        capture.kyber_events.push(adjust);
        let (events, left_out) = capture.sched_events();
        assert_eq!(left_out, 1);
        let times: Vec<u64> = events.iter().map(SchedEvent::time_ns).collect();
        assert_eq!(times, [0, 81_000, 953_000, 1_231_000]);
        assert!(matches!(&events[1], SchedEvent::KyberAdjust { depth: 64, .. }));
        let SchedEvent::Block(issue) = &events[2] else { panic!("{:?}", events[2]) };
        assert_eq!(
            (issue.point, issue.op, issue.sector, issue.sectors),
            (BlockPoint::Issue, Op::Write, 40, 8)
        );
        assert!(issue.flags.sync && !issue.flags.fua);
        assert_eq!(issue.priority, Some(IoPriority::best_effort(4).unwrap()));
        let SchedEvent::Block(complete) = &events[3] else { panic!() };
        assert_eq!((complete.error, complete.pid, complete.cpu), (Some(0), 22, 1));
    }

    // Proves the plug events are read from this kernel's print formats (`[COMM]`, `[COMM]
    // NR_RQ`, a command with spaces), bad counts name the field, and the conversion keeps an
    // unplug before the inserts that followed it in `trace_pipe` even at equal µs, and drops
    // the plugs of tasks that inserted nothing into the device.
    #[test]
    fn plug_events_are_read_and_placed_before_their_inserts() {
        let unplug = "fio-22 [001] ..... 46853.226081: block_unplug: [fio job 1] 3";
        let TraceLine::Plug(plug) = parse_line(unplug).unwrap() else { panic!() };
        assert_eq!(
            (plug.cpu, plug.pid, plug.command.as_str(), plug.unplugged, plug.time_ns),
            (1, 22, "fio job 1", Some(3), 46_853_226_081_000)
        );
        let TraceLine::Plug(start) =
            parse_line("fio-22 [001] ..... 46853.226000: block_plug: [fio]").unwrap()
        else {
            panic!()
        };
        assert_eq!(start.unplugged, None);
        assert_eq!(
            parse_line("f-1 [000] ..... 1.0: block_unplug: [f] x").map_err(|(f, _)| f),
            Err("nr_rq")
        );
        assert_eq!(
            parse_line("f-1 [000] ..... 1.0: block_plug: f").map_err(|(f, _)| f),
            Err("comm")
        );
        let mut capture = sample_capture();
        let mut insert = capture.events[0].clone();
        insert.kind = EventKind::Insert;
        insert.pid = 22;
        capture.events.insert(1, insert);
        // The unplug came after the queue event and before the insert at the same µs; another
        // task's unplug (pid 99) is not the device's.
        let time_ns = capture.events[1].time_ns;
        capture.plug_events.push(PlugEvent { time_ns, after_block_events: 1, ..plug.clone() });
        capture.plug_events.push(PlugEvent { pid: 99, after_block_events: 1, time_ns, ..plug });
        let (events, _) = capture.sched_events();
        let kinds: Vec<String> = events
            .iter()
            .map(|event| match event {
                SchedEvent::Block(record) => record.point.code().to_owned(),
                SchedEvent::Unplug { requests, pid, .. } => format!("U{requests}/{pid}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(kinds[..3], ["Q", "U3/22", "I"], "{kinds:?}");
        assert!(!kinds.iter().any(|kind| kind.ends_with("/99")), "{kinds:?}");
    }

    // Proves kblockd's runs are read from the workqueue lines as 6.18 prints them, a bad body
    // names its field, and the conversion keeps exactly the executions of the work address
    // whose run issued a request of the device (the run that issued nothing included), each
    // in its place among the block events; another queue's runs and a run of the same
    // kworker that issued nothing of the device's under another address are dropped.
    #[test]
    fn kblockd_runs_of_the_device_are_kept_in_place() {
        let line = |time: &str, what: &str, work: &str| {
            format!(
                "kworker/0:1H-44 [000] ..... {time}: workqueue_execute_{what}: work struct \
                 {work}: function blk_mq_run_work_fn"
            )
        };
        let TraceLine::Work(start) =
            parse_line(&line("46853.226900", "start", "00000000a198796a")).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (start.cpu, start.pid, start.work.as_str(), start.function.as_str(), start.start),
            (0, 44, "00000000a198796a", "blk_mq_run_work_fn", true)
        );
        assert_eq!(
            parse_line("k-1 [000] ..... 1.0: workqueue_execute_end: work 12").map_err(|(f, _)| f),
            Err("work")
        );
        let work = |time: &str, what: &str, address: &str, after: usize| {
            let TraceLine::Work(event) = parse_line(&line(time, what, address)).unwrap() else {
                panic!()
            };
            WorkEvent { after_block_events: after, ..event }
        };
        let mut capture = sample_capture();
        // The kworker (pid 44, CPU 0) issues the sample's request in a run of `a1`.
        capture.events[1].pid = 44;
        capture.work_events = vec![
            work("46853.226950", "start", "a1", 1),
            work("46853.227900", "end", "a1", 2),
            work("46853.228000", "start", "b2", 2),
            work("46853.228001", "end", "b2", 2),
            work("46853.228100", "start", "a1", 3),
            work("46853.228101", "end", "a1", 3),
        ];
        let runs: Vec<String> = capture.device_runs().into_iter().collect();
        assert_eq!(runs, ["a1"]);
        let (events, _) = capture.sched_events();
        let kinds: Vec<String> = events
            .iter()
            .map(|event| match event {
                SchedEvent::Block(record) => record.point.code().to_owned(),
                SchedEvent::KblockdStart { cpu, pid, .. } => format!("WS{cpu}/{pid}"),
                SchedEvent::KblockdEnd { .. } => "WE".to_owned(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(kinds, ["Q", "WS0/44", "D", "WE", "C", "WS0/44", "WE"], "{kinds:?}");
    }

    fn sample_capture() -> Capture {
        let events = SAMPLE
            .lines()
            .take(3)
            .filter_map(|line| match parse_line(line).unwrap() {
                TraceLine::Event(event) => Some(event),
                _ => None,
            })
            .collect();
        Capture {
            device: TracedDevice { path: "/dev/loop0".into(), major: 7, minor: 0 },
            events,
            kyber_events: Vec::new(),
            plug_events: Vec::new(),
            work_events: Vec::new(),
            lost_events: 0,
            other_device_events: 0,
            stopped_at_limit: false,
            notes: Vec::new(),
        }
    }

    // Proves the iolog holds the dispatch (not the queue or completion), at its µs since the
    // first event, in bytes, between add/open and close, and that elevator-trace reads it
    // back as written.
    #[test]
    fn the_iolog_holds_each_dispatch_in_bytes() {
        let (log, left_out) = sample_capture().iolog("/dev/loop0");
        assert_eq!(left_out, 0);
        let text = log.to_text().unwrap();
        assert_eq!(
            text,
            "fio version 3 iolog\n0 /dev/loop0 add\n0 /dev/loop0 open\n\
             953 /dev/loop0 write 20480 4096\n953 /dev/loop0 close\n"
        );
        assert_eq!(Iolog::parse("x", &text).unwrap(), log);
    }

    // Proves the blkparse text has blkparse's columns, per-CPU sequence numbers, times since
    // the first event in ns, and the completion's latency since its dispatch.
    #[test]
    fn the_blkparse_text_has_blkparses_columns_and_the_latency() {
        let mut out = Vec::new();
        sample_capture().write_blkparse(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "  7,0    0        1     0.000000000 17959  Q  WS 40 + 8 [dd]\n\
             \x20 7,0    0        2     0.000953000 17959  D  WS 40 + 8 [dd]\n\
             \x20 7,0    1        1     0.001231000    22  C  WS 40 + 8 (  278000) [0]\n"
        );
    }

    fn event_with(rwbs: &str, sectors: u32) -> BlockEvent {
        let line = format!(
            "dd-1 [000] ..... 1.0: block_rq_issue: 7,0 {rwbs} {} () 8 + {sectors} [dd]",
            sectors * 512
        );
        match parse_line(&line).unwrap() {
            TraceLine::Event(event) => event,
            other => panic!("{other:?}"),
        }
    }

    // Proves the RWBS letters map to what the iolog writes: reads, writes (with FUA or a
    // preflush and data), discards, flush requests (`F`, `FF`) and a preflush write of no
    // data as flushes, and anything else (`N`) left out.
    #[test]
    fn rwbs_letters_give_the_direction() {
        let cases = [
            ("R", 8, Direction::Read),
            ("RA", 8, Direction::Read),
            ("WS", 8, Direction::Write),
            ("FWFS", 8, Direction::Write),
            ("FWS", 0, Direction::Flush),
            ("FF", 0, Direction::Flush),
            ("F", 0, Direction::Flush),
            ("DS", 8, Direction::Discard),
            ("N", 0, Direction::Other),
        ];
        for (rwbs, sectors, direction) in cases {
            assert_eq!(event_with(rwbs, sectors).direction(), direction, "{rwbs} {sectors}");
        }
    }

    /// Gives its chunks one read at a time, then "would block" (an empty `trace_pipe`).
    struct Chunks(Vec<&'static [u8]>);

    impl Read for Chunks {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let chunk = self.0.remove(0);
            buffer[..chunk.len()].copy_from_slice(chunk);
            Ok(chunk.len())
        }
    }

    fn reader() -> PipeReader {
        let device = TracedDevice { path: "/dev/loop0".into(), major: 7, minor: 0 };
        PipeReader::new(&device, "trace_pipe".into())
    }

    // Proves lines split across reads are joined, another device's events are counted and
    // not kept, lost-event markers are summed, and an empty pipe reads as nothing (not an
    // error).
    #[test]
    fn the_pipe_reader_joins_lines_across_reads() {
        let mut pipe = Chunks(vec![
            b"dd-1 [000] ..... 1.000001: block_rq_issue: 7,0 WS 4096 () 8",
            b" + 8 be,0,4 [dd]\nCPU:0 [LOST 3 EVENTS]\n",
            b"dd-1 [000] ..... 1.000002: block_rq_issue: 8,0 WS 4096 () 8 + 8 [dd]\n",
        ]);
        let mut reader = reader();
        while reader.read_available(&mut pipe).unwrap() > 0 {}
        reader.finish().unwrap();
        assert_eq!(reader.events.len(), 1);
        assert_eq!((reader.events[0].sector, reader.events[0].sectors), (8, 8));
        assert_eq!((reader.other_device_events, reader.lost_in_pipe), (1, 3));
    }

    // Proves a bad line in the pipe fails the capture naming the file, the line number and
    // the field.
    #[test]
    fn a_bad_pipe_line_names_file_line_and_field() {
        let mut pipe = Chunks(vec![
            b"dd-1 [000] ..... 1.0: block_rq_issue: 7,0 WS 4096 () 8 + 8 [dd]\n",
            b"dd-1 [000] ..... 1.0: block_rq_complete: 7,0 WS () 8 + 8 [zero]\n",
        ]);
        let mut reader = reader();
        let error = loop {
            match reader.read_available(&mut pipe) {
                Ok(0) => panic!("the bad line was accepted"),
                Ok(_) => {}
                Err(error) => break error.to_string(),
            }
        };
        assert!(error.starts_with("trace_pipe:2: error: `zero` is not an errno"), "{error}");
    }

    // Proves the default ring buffer is 64 MiB per CPU up to 16 CPUs, and shrinks beyond so
    // that all of them stay within 1 GiB.
    #[test]
    fn the_default_buffer_stays_within_a_gibibyte() {
        assert_eq!(default_buffer_size_kb(2), 64 << 10);
        assert_eq!(default_buffer_size_kb(16), 64 << 10);
        assert_eq!(default_buffer_size_kb(128), 8 << 10);
        assert!(default_buffer_size_kb(1000) * 1000 <= BUFFER_TOTAL_KB_DEFAULT_MAX);
    }

    // Proves only this module's instance names yield a PID (others' instances are never
    // touched).
    #[test]
    fn stale_instances_are_ours_only() {
        assert_eq!(stale_instance_pid("elevator-123"), Some(123));
        assert_eq!(stale_instance_pid("elevator-123-4"), Some(123));
        assert_eq!(stale_instance_pid("elevator-abc"), None);
        assert_eq!(stale_instance_pid("elevator-123-x"), None);
        assert_eq!(stale_instance_pid("elevator-0"), None);
        assert_eq!(stale_instance_pid("perf-123"), None);
    }

    // Proves the lost-event counters of per_cpu/cpuN/stats are summed (overrun and dropped).
    #[test]
    fn lost_events_add_overruns_and_drops() {
        let stats = "entries: 5\noverrun: 7\ncommit overrun: 1\nbytes: 0\n\
                     dropped events: 3\nread events: 9\n";
        assert_eq!(lost_in_stats(stats), 10);
    }

    // Proves the mount table is read for a tracefs mount (and an absent one is absent).
    #[test]
    fn finds_the_tracefs_mount() {
        let mounts = "proc /proc proc rw 0 0\nnodev /sys/kernel/debug/tracing tracefs rw 0 0\n";
        assert_eq!(tracefs_mount(mounts), Some(PathBuf::from("/sys/kernel/debug/tracing")));
        assert_eq!(tracefs_mount("proc /proc proc rw 0 0\n"), None);
    }
}
