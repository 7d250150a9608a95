//! What elevator measures and how it reports it: latency recorders, the versioned report model
//! (`elevator.report/1`), and renderers for tables, JSON, CSV, SVG charts and one HTML page.
//!
//! The model is one data structure for every mode — simulated, live and the kernel's own
//! schedulers — so runs of all three can be put side by side. JSON field names carry their
//! units (`duration_ns`, `throughput_bytes_per_s`); a field's meaning never changes without a
//! schema bump. Percentiles say how they were computed ([`LatencyMethod`]): exact
//! (nearest-rank over every sample) wherever the samples fit in memory, an HDR histogram with
//! a stated precision otherwise. Every phase also records how it evolved, per job and
//! direction, interval by interval ([`series`], `phases[].series` in the JSON).
//!
//! Reports are deterministic: maps are ordered, floats print the same way every time, so the
//! same run gives byte-identical JSON.

#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

pub mod charts;
pub mod fio;
pub mod html;
pub mod metrics;
pub mod model;
pub mod output;
pub mod render;
pub mod series;
mod tools;

pub use metrics::{ErrorDirection, LatencyRecorder, PhaseRecorder};
pub use model::{
    Bottleneck, CoreCpu, DeviceStats, DirectionSummary, DispatchSamples, HostCpu, IoErrors,
    IssuerLatency, IssuerSummary, LatencyMethod, LatencySummary, LockCpu, Mode, PATH_STEPS, Phase,
    QueueStats, Report, Run, SCHEMA, SchedulerStats, Series, SeriesInterval, SeriesLatency,
    SeriesLine, ThreadCpu, Tool,
};
pub use output::{UnknownExtension, WriteError, write_report};
pub use render::{Format, render};
