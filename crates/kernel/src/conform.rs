//! `elevator conform` (issue 25): one kernel scheduler's every decision on one device,
//! captured through its tracepoints into a [`SchedCapture`] that the conformance replay
//! (`elevator_sched::conform`) feeds into our implementation of the same scheduler.
//!
//! For one block device and one kernel scheduler with its tunables ([`capture_scheduler`]):
//!
//! 1. the caller's [`RestoreGuard`] holds the queue's state as found (scheduler, tunables,
//!    queue attributes) and puts it back afterwards, whatever happens;
//! 2. the queue is switched to `none` first and then to the scheduler, so that the scheduler
//!    is attached afresh (`elevator_switch` frees the old `elevator_queue` and
//!    `init_sched` builds a new one: empty FIFOs and sort trees, batch and starvation
//!    counters at zero, kyber's domain depths at their defaults) even when it was current;
//! 3. its tunables are written (the `kernel compare` path: [`crate::compare::compare`]);
//! 4. the tracefs capture of the scheduler events starts ([`crate::trace`] with
//!    [`CaptureOptions::scheduler_events`], a 64 MiB ring buffer per CPU as `elevator trace`
//!    uses), and the workload starts only once tracing is on;
//! 5. the workload runs through `kernel compare`'s run path (a `-w` spec or an fio job file,
//!    the live engine with user-space scheduling off);
//! 6. tracing stops; the header is filled from the running kernel and the queue as it was
//!    during the run: kernel release (`/proc/sys/kernel/osrelease`, what `uname -r`
//!    prints), `CONFIG_HZ` ([`kernel_hz`]), the `iosched/` files read back after the
//!    tunables were written, `nr_requests`, the hardware queue depth, `max_sectors_kb`, the
//!    online CPUs.
//!
//! A capture that lost events (ring buffer overruns, `[LOST n EVENTS]`) or stopped at the
//! event limit is refused ([`ConformError::LostEvents`]): a replay of an incomplete capture
//! would judge our scheduler against decisions it never saw.
//!
//! With no device named, the run is on a scratch loop device ([`ScratchLoop`]) over a sparse
//! file in `/dev/shm` (RAM-backed: the device's own latency is small and steady, so the
//! scheduler's choices, not the medium, shape the trace), attached with `--direct-io=on`
//! and detached (its file removed) afterwards, as the kernel tests' loop devices are.
//!
//! # Deviations
//!
//! * Times are what `trace_pipe` prints, µs (kept as ns in the capture): two events of one
//!   µs keep the kernel buffer's order but not their distance. The kernel's schedulers count
//!   jiffies (4 ms at `HZ` 250), so their decisions do not depend on the lost digits.
//! * `CONFIG_HZ` comes from `/boot/config-RELEASE` when that exists, else from
//!   `/proc/config.gz` through the system's `gzip -dc` (elevator has no gzip decoder of its
//!   own, and none of its dependencies brings one).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use elevator_live::Target;
use elevator_live::run::Progress;
use elevator_trace::sched_log::{BlockPoint, SchedCapture, SchedCaptureHeader, SchedEvent};
use elevator_workload::WorkloadSpec;

use crate::compare::{self, CompareOptions, KernelRun, KernelScheduler};
use crate::error::KernelError;
use crate::guard::RestoreGuard;
use crate::queue::{Applied, queue_info, set_scheduler};
use crate::sysfs::{BlockDevice, Sysfs};
use crate::trace::{self, CaptureOptions, TraceError, TracedDevice};

/// The capture file format, re-exported for the command line (which reads and writes
/// captures through this crate).
pub use elevator_trace::sched_log;

/// Where a kernel's build configuration is, plain, by release (`/boot/config-RELEASE`).
pub const BOOT_CONFIG_DIR: &str = "/boot";
/// The running kernel's configuration, gzipped (`CONFIG_IKCONFIG_PROC`).
pub const PROC_CONFIG_GZ: &str = "/proc/config.gz";
/// The running kernel's release, as `uname -r` prints it.
pub const OSRELEASE: &str = "/proc/sys/kernel/osrelease";
/// The online CPUs (`0-1,4`).
pub const CPUS_ONLINE: &str = "/sys/devices/system/cpu/online";
/// The scratch loop device's size, bytes (sparse: only what the workload writes takes memory).
pub const SCRATCH_SIZE_BYTES: u64 = 1 << 30;
/// Where the scratch loop device's backing file goes: tmpfs, RAM-backed.
pub const SCRATCH_DIR: &str = "/dev/shm";
/// How long the capture may take to switch tracing on before the run is abandoned, seconds.
const READY_TIMEOUT_S: u64 = 30;

/// Why a conformance capture could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConformError {
    /// Switching, tuning, running or restoring on the device failed.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// The tracefs capture failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The kernel's ring buffer lost events: the capture is incomplete. A bigger buffer (or
    /// a shorter run) helps.
    #[error(
        "{scheduler}: the capture lost {lost} events ({captured} captured{limit}); refusing an \
         incomplete capture: give a bigger trace buffer (--buffer-size-kb, now {buffer_size_kb} \
         KiB per CPU) or a shorter run (--runtime)"
    )]
    LostEvents {
        /// The scheduler run.
        scheduler: String,
        /// Events lost (overruns, dropped, `[LOST n EVENTS]`).
        lost: u64,
        /// Events captured.
        captured: u64,
        /// `, stopped at the event limit` when it did.
        limit: String,
        /// The ring buffer per CPU, KiB.
        buffer_size_kb: u64,
    },
    /// The kernel's `HZ` could not be read.
    #[error(
        "the kernel's CONFIG_HZ: {why}; read from {boot} or {PROC_CONFIG_GZ} (neither gave it)"
    )]
    Hz {
        /// `/boot/config-RELEASE`.
        boot: String,
        /// What went wrong with each.
        why: String,
    },
    /// A file of the running system could not be read.
    #[error("reading {}: {source}", path.display())]
    System {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The scratch loop device could not be made or removed.
    #[error("scratch loop device: {0}")]
    Scratch(String),
    /// The capture thread ended without switching tracing on, or did not in time.
    #[error("the trace capture did not start: {0}")]
    NotStarted(String),
}

/// What to run.
#[derive(Clone, Debug)]
pub struct ConformOptions {
    /// How the workload runs (seed, backend, cache drop, stop flag): `kernel compare`'s.
    pub compare: CompareOptions,
    /// The workload as the user wrote it, for the header.
    pub workload_label: String,
    /// The ring buffer per CPU, KiB; `None`: `elevator trace`'s default (64 MiB).
    pub buffer_size_kb: Option<u64>,
}

/// The events of a capture, by kind, for the summary line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConformCounts {
    /// `block_rq_insert`.
    pub inserts: u64,
    /// `block_bio_backmerge`, `block_bio_frontmerge` and `block_rq_merge`.
    pub merges: u64,
    /// `block_rq_issue`.
    pub issues: u64,
    /// `block_rq_requeue`.
    pub requeues: u64,
    /// `block_rq_complete`.
    pub completions: u64,
    /// kyber's events.
    pub kyber: u64,
    /// `block_unplug` (plug flushes, each followed by a queue run) of the device's tasks.
    pub unplugs: u64,
    /// kblockd runs of the device's hardware queue (`workqueue_execute_start` of its
    /// `run_work`).
    pub kblockd_runs: u64,
    /// Events lost.
    pub lost: u64,
}

impl ConformCounts {
    /// Counts `capture`'s events.
    pub fn of(capture: &SchedCapture) -> ConformCounts {
        let mut counts = ConformCounts { lost: capture.header.lost_events, ..Default::default() };
        for event in &capture.events {
            match event {
                SchedEvent::Block(record) => match record.point {
                    BlockPoint::Insert => counts.inserts += 1,
                    BlockPoint::BioBackMerge | BlockPoint::BioFrontMerge | BlockPoint::Merge => {
                        counts.merges += 1;
                    }
                    BlockPoint::Issue => counts.issues += 1,
                    BlockPoint::Requeue => counts.requeues += 1,
                    BlockPoint::Complete => counts.completions += 1,
                    BlockPoint::BioQueue | BlockPoint::GetRq => {}
                },
                SchedEvent::Unplug { .. } => counts.unplugs += 1,
                SchedEvent::KblockdStart { .. } => counts.kblockd_runs += 1,
                SchedEvent::Plug { .. } | SchedEvent::KblockdEnd { .. } => {}
                _ => counts.kyber += 1,
            }
        }
        counts
    }
}

/// One scheduler's conformance capture.
#[derive(Debug)]
pub struct ConformRun {
    /// The capture.
    pub capture: SchedCapture,
    /// Its counts.
    pub counts: ConformCounts,
    /// The workload's run, as `kernel compare` reports it.
    pub run: KernelRun,
    /// What the settings became (the kernel may round).
    pub applied: Vec<Applied>,
    /// What the person should know (events left out, issues and completions that do not
    /// pair up, tracefs left mounted).
    pub notes: Vec<String>,
}

/// Captures `scheduler`'s decisions on `device` while `workload` runs on `target` (the
/// device node, opened by the caller with the live engine's safety checks). `guard` is the
/// caller's: it restores the queue afterwards (the caller restores once after all
/// schedulers, or drops it on error).
#[allow(clippy::too_many_arguments)]
pub fn capture_scheduler(
    sysfs: &Sysfs,
    device: &BlockDevice,
    target: &Target,
    workload: &WorkloadSpec,
    scheduler: &KernelScheduler,
    options: &ConformOptions,
    guard: &RestoreGuard,
    progress: &mut dyn FnMut(&Progress),
) -> Result<ConformRun, ConformError> {
    trace::check_privileges()?;
    compare::validate(sysfs, device, std::slice::from_ref(scheduler))?;
    let traced = TracedDevice::open(&device.dev_path().display().to_string())?;
    // Read before anything changes, so a system without them fails before the run.
    let kernel_release = kernel_release()?;
    let hz = kernel_hz(&kernel_release)?;
    let cpus = online_cpus()?;
    // Attached afresh: the kernel keeps a scheduler's state while it stays current.
    set_scheduler(sysfs, device, "none")?;
    let stop = AtomicBool::new(false);
    let ready = Arc::new(AtomicBool::new(false));
    let capture_options = CaptureOptions {
        scheduler_events: true,
        buffer_size_kb: options.buffer_size_kb,
        ready: Some(Arc::clone(&ready)),
        ..CaptureOptions::default()
    };
    let mut compare_options =
        CompareOptions { schedulers: vec![scheduler.clone()], ..options.compare.clone() };
    // A flag of its own when the caller gave none: a capture that fails to start stops the run.
    compare_options.passthrough.stop.get_or_insert_with(|| Arc::new(AtomicBool::new(false)));
    let mut queue = None;
    let (runs, captured) = std::thread::scope(|scope| {
        let mut handle = None;
        let mut started = Ok(());
        let mut starting = |_: &KernelScheduler, applied: &[Applied]| {
            // The queue as the run has it, read back after the tunables were written.
            queue = Some((queue_info(sysfs, device), applied.to_vec()));
            let thread = scope.spawn(|| trace::capture(&traced, &capture_options, &stop));
            let clock = elevator_live::Clock::start();
            let deadline = elevator_core::Instant::ZERO
                .saturating_add(elevator_core::Duration::from_secs(READY_TIMEOUT_S));
            while !ready.load(Ordering::SeqCst) {
                if thread.is_finished() {
                    started = Err(ConformError::NotStarted("the capture ended first".into()));
                    break;
                }
                if clock.now() >= deadline {
                    started = Err(ConformError::NotStarted(format!(
                        "tracing was not on after {READY_TIMEOUT_S} s"
                    )));
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            if started.is_err() {
                // Nothing of the run would be captured: stop it before it issues anything.
                stop.store(true, Ordering::SeqCst);
                if let Some(flag) = &compare_options.passthrough.stop {
                    flag.store(true, Ordering::SeqCst);
                }
            }
            handle = Some(thread);
        };
        let runs = compare::compare(
            sysfs,
            device,
            target,
            workload,
            &compare_options,
            guard,
            &mut starting,
            progress,
        );
        stop.store(true, Ordering::SeqCst);
        let captured = handle.map(|thread| {
            thread.join().unwrap_or_else(|_| {
                Err(TraceError::NoTracefs { why: "the capture thread panicked".into() })
            })
        });
        (runs.map_err(ConformError::from).and_then(|runs| started.map(|()| runs)), captured)
    });
    let mut runs = runs?;
    let captured =
        captured.ok_or_else(|| ConformError::NotStarted("the workload never started".into()))??;
    let run = runs.pop().ok_or_else(|| ConformError::NotStarted("no run".into()))?;
    let (info, applied) = queue.ok_or_else(|| ConformError::NotStarted("no run".into()))?;
    let info = info?;
    let buffer_size_kb = options.buffer_size_kb.unwrap_or(trace::BUFFER_SIZE_KB_DEFAULT);
    if captured.lost_events > 0 || captured.stopped_at_limit {
        return Err(ConformError::LostEvents {
            scheduler: scheduler.label(),
            lost: captured.lost_events,
            captured: (captured.events.len()
                + captured.kyber_events.len()
                + captured.plug_events.len()) as u64,
            limit: if captured.stopped_at_limit {
                format!(", stopped at the limit of {} events", trace::EVENTS_MAX)
            } else {
                String::new()
            },
            buffer_size_kb,
        });
    }
    let (events, left_out) = captured.sched_events();
    let number = |value: Option<u64>| value.and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
    let header = SchedCaptureHeader {
        kernel_release,
        hz,
        scheduler: info.scheduler.current.clone(),
        tunables: info.tunables.clone().into_iter().collect(),
        nr_requests: number(info.nr_requests),
        queue_depth: number(info.hw_queue_depth),
        hw_queues: number(info.hw_queues),
        max_sectors_kb: number(info.max_sectors_kb),
        cpus,
        lost_events: captured.lost_events,
        device: format!("{},{}", traced.major, traced.minor),
        workload: options.workload_label.clone(),
        rotational: info.rotational,
    };
    let capture = SchedCapture { header, events };
    let counts = ConformCounts::of(&capture);
    let mut notes = captured.notes;
    if left_out > 0 {
        notes.push(format!(
            "{left_out} events of requests that move no data and are no flush (RWBS `N`, zone \
             commands) are left out"
        ));
    }
    let (issued, completed, requeued) = data_requests(&capture);
    if issued != completed + requeued {
        notes.push(format!(
            "{issued} issues of requests with data against {completed} completions and \
             {requeued} requeues: another process's I/O was in flight as the capture started \
             or ended"
        ));
    }
    Ok(ConformRun { capture, counts, run, applied, notes })
}

/// Issues, completions and requeues of requests that move data (sectors > 0). Flushes do
/// not pair up: an empty preflush write completes without being issued, its flush request
/// is issued and completed (at sector `u64::MAX`) in its place (`block/blk-flush.c`).
pub fn data_requests(capture: &SchedCapture) -> (u64, u64, u64) {
    let mut counts = (0, 0, 0);
    for event in &capture.events {
        let SchedEvent::Block(record) = event else { continue };
        if record.sectors == 0 {
            continue;
        }
        match record.point {
            BlockPoint::Issue => counts.0 += 1,
            BlockPoint::Complete => counts.1 += 1,
            BlockPoint::Requeue => counts.2 += 1,
            _ => {}
        }
    }
    counts
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> Result<String, ConformError> {
    let path = Path::new(OSRELEASE);
    std::fs::read_to_string(path)
        .map(|text| text.trim().to_owned())
        .map_err(|source| ConformError::System { path: path.to_owned(), source })
}

/// The online CPUs, from [`CPUS_ONLINE`]'s list (`0-3,6`).
pub fn online_cpus() -> Result<u32, ConformError> {
    let path = Path::new(CPUS_ONLINE);
    let text = std::fs::read_to_string(path)
        .map_err(|source| ConformError::System { path: path.to_owned(), source })?;
    cpu_list_len(text.trim()).ok_or_else(|| ConformError::System {
        path: path.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("`{}` is not a CPU list such as `0-3,6`", text.trim()),
        ),
    })
}

/// How many CPUs a kernel CPU list (`0-3,6`) names.
fn cpu_list_len(list: &str) -> Option<u32> {
    list.split(',').filter(|part| !part.is_empty()).try_fold(0u32, |sum, part| {
        let (first, last) = part.split_once('-').unwrap_or((part, part));
        let (first, last): (u32, u32) = (first.parse().ok()?, last.parse().ok()?);
        Some(sum + last.checked_sub(first)? + 1)
    })
}

/// The running kernel's `CONFIG_HZ`: from `/boot/config-RELEASE`, else from
/// [`PROC_CONFIG_GZ`] (through `gzip -dc`). `USER_HZ` (`getconf CLK_TCK`, 100 everywhere)
/// is not it.
pub fn kernel_hz(release: &str) -> Result<u32, ConformError> {
    let boot = format!("{BOOT_CONFIG_DIR}/config-{release}");
    let from_boot = std::fs::read_to_string(&boot).map_err(|error| format!("{boot}: {error}"));
    let from_boot =
        from_boot.and_then(|text| config_hz(&text).ok_or(format!("{boot}: no CONFIG_HZ")));
    let boot_why = match from_boot {
        Ok(hz) => return Ok(hz),
        Err(why) => why,
    };
    let from_proc = std::process::Command::new("gzip")
        .args(["-dc", PROC_CONFIG_GZ])
        .output()
        .map_err(|error| format!("{PROC_CONFIG_GZ}: running `gzip -dc`: {error}"))
        .and_then(|output| {
            if output.status.success() {
                Ok(String::from_utf8_lossy(&output.stdout).into_owned())
            } else {
                Err(format!(
                    "{PROC_CONFIG_GZ}: `gzip -dc` failed: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                ))
            }
        })
        .and_then(|text| config_hz(&text).ok_or(format!("{PROC_CONFIG_GZ}: no CONFIG_HZ")));
    from_proc.map_err(|proc_why| ConformError::Hz { boot, why: format!("{boot_why}; {proc_why}") })
}

/// `CONFIG_HZ=N` of a kernel configuration's text.
fn config_hz(config: &str) -> Option<u32> {
    config.lines().find_map(|line| line.strip_prefix("CONFIG_HZ=")?.trim().parse().ok())
}

/// A loop device over a sparse file in [`SCRATCH_DIR`], made for one conformance run and
/// detached, its file removed, when dropped.
#[derive(Debug)]
pub struct ScratchLoop {
    path: PathBuf,
    backing: PathBuf,
    detached: bool,
}

impl ScratchLoop {
    /// Attaches a loop device (`losetup --find --show --direct-io=on`) over a fresh sparse
    /// file of `size_bytes`.
    pub fn attach(size_bytes: u64) -> Result<ScratchLoop, ConformError> {
        let dir = if Path::new(SCRATCH_DIR).is_dir() {
            PathBuf::from(SCRATCH_DIR)
        } else {
            std::env::temp_dir()
        };
        // One file per device: a process may make several (a library user's threads).
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let index = MADE.fetch_add(1, Ordering::SeqCst);
        let backing = dir.join(format!("elevator-conform-{}-{index}.img", std::process::id()));
        let file =
            std::fs::OpenOptions::new().write(true).create_new(true).open(&backing).map_err(
                |error| ConformError::Scratch(format!("{}: {error}", backing.display())),
            )?;
        file.set_len(size_bytes)
            .map_err(|error| ConformError::Scratch(format!("{}: {error}", backing.display())))?;
        drop(file);
        let output = std::process::Command::new("losetup")
            .args(["--find", "--show", "--direct-io=on"])
            .arg(&backing)
            .output();
        let fail = |why: String| {
            let _ = std::fs::remove_file(&backing);
            ConformError::Scratch(why)
        };
        let output = output.map_err(|error| {
            fail(format!("running losetup (util-linux; install it, or name a device): {error}"))
        })?;
        if !output.status.success() {
            return Err(fail(format!(
                "losetup --find --show {}: {}",
                backing.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        Ok(ScratchLoop { path, backing, detached: false })
    }

    /// The device node (`/dev/loop3`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Detaches it and removes its file.
    pub fn detach(mut self) -> Result<(), ConformError> {
        self.detach_now()
    }

    fn detach_now(&mut self) -> Result<(), ConformError> {
        if std::mem::replace(&mut self.detached, true) {
            return Ok(());
        }
        let output = std::process::Command::new("losetup").arg("-d").arg(&self.path).output();
        let _ = std::fs::remove_file(&self.backing);
        match output {
            Ok(output) if output.status.success() => Ok(()),
            Ok(output) => Err(ConformError::Scratch(format!(
                "losetup -d {}: {}",
                self.path.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ))),
            Err(error) => {
                Err(ConformError::Scratch(format!("losetup -d {}: {error}", self.path.display())))
            }
        }
    }
}

impl Drop for ScratchLoop {
    fn drop(&mut self) {
        // Best effort while unwinding; `detach` reports.
        let _ = self.detach_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves CONFIG_HZ is read from a kernel configuration's text (and a commented-out or
    // missing one is absent, not a default).
    #[test]
    fn reads_config_hz() {
        let config =
            "# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_HZ_PERIODIC=n\n";
        assert_eq!(config_hz(config), Some(250));
        assert_eq!(config_hz("# CONFIG_HZ is not set\nCONFIG_HZ_1000=y\n"), None);
    }

    // Proves the kernel's CPU list syntax is counted (ranges, single CPUs, gaps), and a bad
    // list is refused rather than miscounted.
    #[test]
    fn counts_cpu_lists() {
        assert_eq!(cpu_list_len("0-1"), Some(2));
        assert_eq!(cpu_list_len("0"), Some(1));
        assert_eq!(cpu_list_len("0-3,6,8-9"), Some(7));
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(cpu_list_len("a"), None);
    }
}
