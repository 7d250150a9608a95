//! elevator's deterministic discrete-event simulator: device models, the event engine and the
//! runner that drives a workload through a [`BlockQueue`](elevator_core::BlockQueue) and a
//! scheduler into a simulated device.
//!
//! Time is integer nanoseconds; events are ordered by (time, sequence) and ties run first in,
//! first out; one seed plus the resolved configuration is the whole input, so the same inputs
//! give byte-identical reports. Every run is bounded (events, simulated time, queue sizes), and
//! hitting a bound is an error, never a silent stop.

#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

pub mod advise;
pub mod device;
pub mod engine;
pub mod host;
pub mod iscsi;
pub mod parallel;
pub mod plan;
pub mod runner;
pub mod study;
pub mod sweep;
pub mod topology;

pub(crate) use elevator_core::LookupMap;

/// The device a simulation uses when none is named: a 2005 desktop disk.
pub const DEFAULT_DEVICE: &str = "hdd";
/// The host a simulation uses when none is named (the first of [`host::spec::PRESETS`]).
pub const DEFAULT_HOST: &str = "host";
/// The workload `elevator sim` runs when none is named: two processes each reading a file
/// sequentially, 200 GiB apart on the disk — the case where a scheduler that waits for a
/// reader's next request (anticipatory, cfq) beats one that does not (deadline, noop) by an
/// order of magnitude.
pub const DEFAULT_WORKLOAD: &str = "job:rw=read,bs=64k,numjobs=2,offset_increment=200g,size=64m";

pub use device::{DeviceKind, DeviceModel, DeviceSpec};
pub use host::spec::HostSpec;
pub use runner::{
    Bounds, CHECK_BY_DEFAULT, QueueSettings, RunAudit, SimConfig, SimError, SimProgress, run,
    run_audited, run_plan, run_watched, targets,
};
