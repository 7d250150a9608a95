//! elevator-kernel: the Linux kernel's own I/O schedulers, driven through sysfs.
//!
//! What administrators did by hand with `cat` and `echo` on
//! `/sys/block/DEV/queue/scheduler`, done safely and measured:
//!
//! * [`queue::queue_info`] — what `elevator kernel show` prints: the scheduler line, the queue
//!   attributes that matter to scheduling, the hardware queue depth, the current scheduler's
//!   tunables;
//! * [`queue::set_scheduler`] and [`queue::tune`] — switch and tune at run time, checked
//!   against what the kernel offers, with errors that say what happened (unknown scheduler,
//!   busy, needs root, not a block device);
//! * [`persist`] — a udev rule that sets the choice at every boot (the `elevator=` boot
//!   parameter no longer does anything on 5.0+); [`bootline`] — per kernel generation, the
//!   boot-line form (`elevator=` through grubby or GRUB) on single-queue kernels and
//!   `elvtune` on 2.4, and which form wins;
//! * [`compare`] — one workload under each kernel scheduler, reported like a simulated or
//!   live run, with a [`guard::RestoreGuard`] that leaves the device as it was found;
//! * [`store`] — the guard's snapshot kept on disk while a device is changed, so that a
//!   process killed outright still leaves a way back (`elevator kernel restore`);
//! * [`trace`] — a device's block I/O captured through tracefs tracepoints (`elevator
//!   trace`), written as fio's iolog or blkparse's text.
//! * [`conform`] — one kernel scheduler's decisions on a device captured through its
//!   tracepoints into a `sched_log` capture (`elevator conform`, issue 25).
//!
//! Every function takes a [`sysfs::Sysfs`], the real `/sys` or a fake tree in a temp
//! directory, so the driver's logic and its error paths are testable without a kernel.

#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

pub mod bootline;
pub mod compare;
pub mod conform;
pub mod error;
pub mod guard;
pub mod persist;
pub mod queue;
pub mod store;
pub mod sysfs;
pub mod trace;

pub use compare::{CompareOptions, KernelRun, KernelScheduler};
pub use error::KernelError;
pub use guard::{RestoreGuard, RestoreHandle, Snapshot};
pub use queue::{Applied, DiskStats, QueueInfo, Setting};
pub use store::{Owner, SnapshotStore, Stored};
pub use sysfs::{AttrIo, BlockDevice, FileIo, SchedulerLine, Sysfs};
