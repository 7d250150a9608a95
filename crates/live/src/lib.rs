//! elevator-live: the project's schedulers in front of a real file or block device.
//!
//! An application that does its own direct I/O gets the kernel's scheduling algorithms
//! (deadlines, anticipation, CFQ's fairness and I/O priority classes) in user space, where it
//! knows which I/O belongs to whom: a reactor thread owns an io_uring, a `BlockQueue` and its
//! scheduler; I/O is submitted from any thread with a process identity and an I/O priority,
//! merged and ordered by the scheduler, and sent to the device as O_DIRECT transfers (a merged
//! request is one vectored transfer), at most `depth` at once. Where io_uring is unavailable
//! (seccomp, `kernel.io_uring_disabled`, an old kernel) a pool of threads doing positional
//! reads and writes does the same, and says why.
//!
//! ```no_run
//! use elevator_core::{IoPriority, ProcessId};
//! use elevator_live::{AlignedBuf, Engine, EngineOptions, IoContext, Target, TargetOptions};
//! use elevator_sched::SchedulerSpec;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A 64 MiB scratch file, created with real data, opened for O_DIRECT.
//! let options = TargetOptions { write: true, create_bytes: Some(64 << 20), ..Default::default() };
//! let target = Target::open("/var/tmp/elevator.scratch".as_ref(), &options)?;
//! let engine = Engine::open(
//!     target,
//!     EngineOptions { scheduler: SchedulerSpec::parse("cfq")?, depth: 32, ..Default::default() },
//! )?;
//! let io = engine.handle();
//! // A best-effort reader and an idle-class one: cfq serves the idle one only when the disk
//! // is otherwise unused.
//! let reader = IoContext::new(ProcessId(1));
//! let background = IoContext::new(ProcessId(2)).with_priority(IoPriority::idle());
//! let ticket = io.read(reader, 0, AlignedBuf::zeroed(64 << 10))?;
//! io.read_then(background, 1 << 20, AlignedBuf::zeroed(64 << 10), |done| {
//!     assert!(done.result.is_ok());
//! })?;
//! let done = ticket.wait();
//! println!("read {} bytes in {:?}", done.result?, done.latency);
//! engine.shutdown()?;
//! # Ok(())
//! # }
//! ```
//!
//! `elevator run` drives the workloads of `elevator-workload` through the same reactor
//! ([`run::run_workload`]), on the calling thread, and reports like the simulator.

#![deny(missing_docs)]

pub mod backend;
pub mod buffer;
pub mod calibrate;
pub mod clock;
mod cpu;
pub mod diskutil;
pub mod engine;
pub mod error;
pub mod lock;
mod multi;
pub mod passthrough;
pub mod reactor;
pub mod run;
mod safety;
pub mod target;
pub mod verify;

pub use backend::BackendChoice;
pub use backend::inject::{Fault, FaultAction, InjectStats};
pub use buffer::{AlignedBuf, BufferPool};
pub use clock::Clock;
pub use engine::{Completion, Engine, EngineOptions, EngineStats, Handle, IoContext, Ticket};
pub use error::LiveError;
pub use lock::TargetLock;
pub use reactor::{IoOp, ReactorStats};
pub use target::{Target, TargetKind, TargetOptions};
