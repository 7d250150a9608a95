//! `elevator._native`: the Rust side of the Python package `elevator` (python/, built by
//! maturin). It exposes the libraries, not the command line: simulations
//! ([`elevator_sim::plan`], [`elevator_sim::run`]), the classic study ([`elevator_sim::study`]), the listings of
//! schedulers, devices, hosts and workloads from the tables their parsers read, and the trace
//! readers ([`elevator_trace::read`]).
//!
//! Results cross into Python as the report's own JSON (`elevator.report/1`, exactly what
//! `elevator sim --format json` prints for the same arguments), which the Python side wraps
//! in objects; listings cross as JSON too. One schema, one serializer: a field added to the
//! report reaches Python without a change here.
//!
//! Errors are raised as `elevator.ElevatorError` (a `ValueError`) carrying the message the
//! CLI prints after `elevator: ` for the same input (anyhow's `{:#}`: the context chain
//! joined by `: `). Simulations release the GIL (`Python::detach`), so threads of a Python
//! program run them in parallel.
//!
//! # Deviations
//!
//! * The CLI's stderr notes (a clamped tunable, a DiskSim file's warning line) are not
//!   printed: a library does not write to its caller's stderr.
//! * `elevator.study(schedulers=)` and `elevator.sim(interval=)` print no stderr note for a
//!   clamped tunable either.

#![deny(missing_docs)]

mod real;

use anyhow::{Context, Result, bail};
use elevator_core::{Duration, KeySpec, TunableSpec};
use elevator_report::Report;
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_sim::device::Preset;
use elevator_sim::host::spec as host;
use elevator_sim::plan::{self, Plan, PlanArgs};
use elevator_sim::study::{EXPERIMENTS, stamp_scale};
use elevator_sim::{DeviceKind, DeviceSpec, HostSpec, run};
use elevator_workload::{WorkloadKind, WorkloadSpec};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::Serialize;

create_exception!(
    elevator,
    ElevatorError,
    PyValueError,
    "A bad specification, file or simulation: the message is the one the CLI prints."
);

/// The version of elevator this module was built from (the report's `tool.version`).
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `error` as the CLI prints it after `elevator: `.
fn to_py(error: anyhow::Error) -> PyErr {
    ElevatorError::new_err(format!("{error:#}"))
}

/// The report's JSON, as `elevator sim --format json` writes it (without the final newline).
fn report_json(report: &Report) -> Result<String> {
    Ok(serde_json::to_string_pretty(report)?)
}

/// `--interval` as the CLI parses it (see [`elevator_sim::plan::series_interval`]); the live
/// runs (real.rs) read it too.
fn series_interval(text: Option<&str>) -> Result<Duration> {
    Ok(plan::series_interval(text)?)
}

/// A workload argument, a spec or an fio job file (see [`elevator_sim::plan::workload_spec`]);
/// the live runs (real.rs) read it too.
fn workload_spec(
    text: &str,
    max_size_bytes: Option<u64>,
    max_runtime_ns: Option<u64>,
) -> Result<WorkloadSpec> {
    Ok(plan::workload_spec(text, max_size_bytes, max_runtime_ns)?)
}

/// Runs every scheduler of `plan` on its own thread (as `elevator sim`), in order.
fn run_plan(plan: &Plan) -> Result<Report> {
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .schedulers
            .iter()
            .map(|scheduler| {
                let config = &plan.config;
                let workload = &plan.workload;
                scope.spawn(move || run(config, scheduler, workload))
            })
            .collect();
        handles.into_iter().map(|handle| handle.join()).collect()
    });
    let mut report = Report::new(plan.config.seed, VERSION);
    for (scheduler, result) in plan.schedulers.iter().zip(results) {
        let Ok(result) = result else { bail!("the simulation under {scheduler} panicked") };
        report.runs.push(result.with_context(|| format!("simulating under {scheduler}"))?);
    }
    Ok(report)
}

/// Simulates `workload` on `device` under each scheduler; returns the report's JSON.
#[pyfunction]
#[pyo3(signature = (device, workload, schedulers, seed, host, nr_requests=None,
    read_ahead_kb=None, max_sectors_kb=None, plugging=None, depth=None, max_size=None,
    max_runtime_ns=None, dispatch_samples=None, interval=None))]
#[allow(clippy::too_many_arguments)]
fn sim(
    py: Python<'_>,
    device: &str,
    workload: &str,
    schedulers: Vec<String>,
    seed: u64,
    host: &str,
    nr_requests: Option<u32>,
    read_ahead_kb: Option<u32>,
    max_sectors_kb: Option<u32>,
    plugging: Option<bool>,
    depth: Option<u32>,
    max_size: Option<u64>,
    max_runtime_ns: Option<u64>,
    dispatch_samples: Option<usize>,
    interval: Option<&str>,
) -> PyResult<String> {
    let args = PlanArgs {
        device,
        workload,
        schedulers: &schedulers,
        seed,
        host,
        nr_requests,
        read_ahead_kb,
        max_sectors_kb,
        plugging,
        depth,
        max_size_bytes: max_size,
        max_runtime_ns,
        dispatch_samples,
        interval,
    };
    let sim_plan = plan::build(&args).map_err(|error| to_py(error.into()))?;
    // The simulation touches no Python object: other Python threads run meanwhile.
    py.detach(|| run_plan(&sim_plan).and_then(|report| report_json(&report))).map_err(to_py)
}

fn study_report(seed: u64, scale: f64, only: &[String], schedulers: &[String]) -> Result<Report> {
    if !(scale > 0.0 && scale <= 1.0) {
        bail!("--scale {scale} is out of range (accepted: 0 < F <= 1)");
    }
    let accepted: Vec<&str> = EXPERIMENTS.iter().map(|e| e.id).collect();
    for id in only {
        if !accepted.contains(&id.as_str()) {
            bail!("unknown experiment `{id}` (accepted: {})", accepted.join(", "));
        }
    }
    // `elevator compare -s`: the named schedulers, else the legacy ones.
    let named = !schedulers.is_empty();
    let schedulers: Vec<SchedulerSpec> = if named {
        let texts = elevator_core::split_spec_list("scheduler", schedulers)?;
        texts.iter().map(|text| SchedulerSpec::parse(text)).collect::<Result<_, _>>()?
    } else {
        SchedulerKind::LEGACY.iter().map(|&kind| SchedulerSpec::new(kind)).collect()
    };
    let mut jobs = Vec::new();
    for experiment in EXPERIMENTS {
        if !only.is_empty() && !only.iter().any(|id| id == experiment.id) {
            continue;
        }
        // The rows `elevator compare [-s ...]` runs.
        for scheduler in experiment.rows(&schedulers, named).map_err(anyhow::Error::msg)? {
            let (mut config, workload) = experiment
                .prepare_for(&scheduler, seed, scale)
                .with_context(|| format!("preparing experiment {}", experiment.id))?;
            config.series_interval = Some(elevator_report::series::DEFAULT_INTERVAL);
            jobs.push((experiment, config, workload, scheduler));
        }
    }
    let results = elevator_sim::parallel::map_in_order(
        jobs.len(),
        elevator_sim::parallel::processors(),
        |index| {
            let (_, config, workload, scheduler) = &jobs[index];
            run(config, scheduler, workload)
        },
        |_| {},
    );
    let mut report = Report::new(seed, VERSION);
    for ((experiment, _, _, scheduler), result) in jobs.iter().zip(results) {
        let mut run =
            result.with_context(|| format!("simulating {} under {scheduler}", experiment.id))?;
        experiment.stamp(&mut run);
        stamp_scale(&mut run, scale);
        report.runs.push(run);
    }
    Ok(report)
}

/// Runs the classic study (`elevator compare [-s SCHEDULERS]`); returns the report's JSON.
#[pyfunction]
#[pyo3(signature = (seed, scale, only, schedulers))]
fn study(
    py: Python<'_>,
    seed: u64,
    scale: f64,
    only: Vec<String>,
    schedulers: Vec<String>,
) -> PyResult<String> {
    py.detach(|| {
        study_report(seed, scale, &only, &schedulers).and_then(|report| report_json(&report))
    })
    .map_err(to_py)
}

#[derive(Serialize)]
struct SchedulerEntry {
    name: &'static str,
    default: bool,
    aliases: &'static [&'static str],
    kernel_version: &'static str,
    summary: &'static str,
    tunables: Vec<TunableSpec>,
}

#[derive(Serialize)]
struct ComponentEntry {
    /// The kind's name as written in a spec (`hdd`).
    name: String,
    /// What the bare name resolves to (`desktop-7200-2005`: its first preset), as `elevator
    /// list` names it.
    spec: String,
    summary: &'static str,
    keys: Vec<KeyEntry>,
    presets: Vec<PresetEntry>,
}

#[derive(Serialize)]
struct KeyEntry {
    key: &'static str,
    accepts: String,
    default: &'static str,
    help: &'static str,
}

#[derive(Serialize)]
struct PresetEntry {
    name: &'static str,
    help: &'static str,
    values: Vec<(&'static str, &'static str)>,
}

fn keys(keys: &'static [KeySpec]) -> Vec<KeyEntry> {
    keys.iter()
        .map(|key| KeyEntry {
            key: key.key,
            accepts: key.kind.describe(),
            default: key.default,
            help: key.help,
        })
        .collect()
}

fn presets(presets: &[Preset]) -> Vec<PresetEntry> {
    presets
        .iter()
        .map(|preset| PresetEntry {
            name: preset.name,
            help: preset.help,
            values: preset.values.to_vec(),
        })
        .collect()
}

fn to_json<T: Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|error| to_py(error.into()))
}

/// Every registered scheduler with its tunables (as `elevator list schedulers --format json`).
#[pyfunction]
fn schedulers() -> PyResult<String> {
    let entries: Vec<SchedulerEntry> = SchedulerKind::ALL
        .iter()
        .map(|&kind| SchedulerEntry {
            name: kind.name(),
            default: kind == SchedulerKind::DEFAULT,
            aliases: kind.aliases(),
            kernel_version: kind.kernel_version(),
            summary: kind.summary(),
            tunables: kind.tunables().to_vec(),
        })
        .collect();
    to_json(&entries)
}

/// Every device kind with its keys and presets.
#[pyfunction]
fn devices() -> PyResult<String> {
    let entries: Vec<ComponentEntry> = DeviceKind::ALL
        .iter()
        .map(|kind| {
            Ok(ComponentEntry {
                name: kind.name().to_owned(),
                spec: DeviceSpec::parse(kind.name()).map_err(|e| to_py(e.into()))?.to_string(),
                summary: kind.summary(),
                keys: keys(kind.keys()),
                presets: presets(kind.presets()),
            })
        })
        .collect::<PyResult<_>>()?;
    to_json(&entries)
}

/// The host with its keys and presets.
#[pyfunction]
fn hosts() -> PyResult<String> {
    let entry = ComponentEntry {
        name: host::PRESETS[0].name.to_owned(),
        spec: HostSpec::default_host().to_string(),
        summary: host::SUMMARY,
        keys: keys(host::KEYS),
        presets: presets(host::PRESETS),
    };
    to_json(&vec![entry])
}

/// Every workload kind with its keys.
#[pyfunction]
fn workloads() -> PyResult<String> {
    let entries: Vec<ComponentEntry> = WorkloadKind::ALL
        .iter()
        .map(|kind| {
            Ok(ComponentEntry {
                name: kind.name().to_owned(),
                spec: WorkloadSpec::parse(kind.name()).map_err(|e| to_py(e.into()))?.to_string(),
                summary: kind.summary(),
                keys: keys(kind.keys()),
                presets: Vec::new(),
            })
        })
        .collect::<PyResult<_>>()?;
    to_json(&entries)
}

#[derive(Serialize)]
struct TraceJson {
    format: &'static str,
    start_unix_ns: Option<i128>,
    records: Vec<RecordJson>,
}

#[derive(Serialize)]
struct RecordJson {
    time_ns: u64,
    pid: Option<u32>,
    process: Option<String>,
    device: Option<String>,
    op: elevator_core::Op,
    offset_bytes: u64,
    size_bytes: u64,
    priority: Option<String>,
    latency_ns: Option<u64>,
}

/// Reads a trace (fio iolog v2/v3, blkparse text, MSR CSV, compact; detected by content);
/// returns `{"format", "start_unix_ns", "records": [...]}` as JSON.
#[pyfunction]
fn read_trace(py: Python<'_>, path: &str) -> PyResult<String> {
    let trace = py
        .detach(|| elevator_trace::read(std::path::Path::new(path)))
        .map_err(|error| to_py(error.into()))?;
    let json = TraceJson {
        format: trace.format.name(),
        start_unix_ns: trace.start_unix_ns,
        records: trace
            .records
            .into_iter()
            .map(|io| RecordJson {
                time_ns: io.time_ns,
                pid: io.pid,
                process: io.process,
                device: io.device,
                op: io.op,
                offset_bytes: io.offset_bytes,
                size_bytes: io.size_bytes,
                priority: io.priority.map(|priority| priority.to_string()),
                latency_ns: io.latency_ns,
            })
            .collect(),
    };
    to_json(&json)
}

/// `error` as Python sees it: the command's message as `ElevatorError`, or the exception a
/// signal raised (KeyboardInterrupt) as it is.
fn failure_to_py(failure: real::Failure) -> PyErr {
    match failure {
        real::Failure::Message(error) => to_py(error),
        real::Failure::Python(error) => error,
    }
}

/// `elevator run` (the live engine) on `target` (a file or block device; default the scratch
/// file); returns the report's JSON.
#[pyfunction]
#[pyo3(signature = (target, workload, schedulers, runtime, seed, size, force, verify, depth,
    nr_requests, max_sectors_kb, engine, interval))]
#[allow(clippy::too_many_arguments)]
fn live(
    py: Python<'_>,
    target: Option<std::path::PathBuf>,
    workload: String,
    schedulers: Vec<String>,
    runtime: Option<String>,
    seed: u64,
    size: Option<String>,
    force: bool,
    verify: bool,
    depth: Option<u32>,
    nr_requests: Option<u32>,
    max_sectors_kb: Option<u32>,
    engine: String,
    interval: Option<String>,
) -> PyResult<String> {
    let args = real::LiveArgs {
        target,
        workload,
        schedulers,
        runtime,
        seed,
        size,
        force,
        verify,
        depth,
        nr_requests,
        max_sectors_kb,
        engine,
        interval,
    };
    // The I/O runs without the GIL; the progress callback takes it briefly to see Ctrl-C.
    let report = py.detach(|| real::live(&args)).map_err(failure_to_py)?;
    report_json(&report).map_err(to_py)
}

/// `elevator kernel compare DEV` (the kernel's schedulers, the device restored afterwards);
/// returns the report's JSON.
#[pyfunction]
#[pyo3(signature = (device, workload, schedulers, runtime, seed, force, engine, drop_caches,
    interval))]
#[allow(clippy::too_many_arguments)]
fn kernel_compare(
    py: Python<'_>,
    device: String,
    workload: String,
    schedulers: Vec<String>,
    runtime: Option<String>,
    seed: u64,
    force: bool,
    engine: String,
    drop_caches: bool,
    interval: Option<String>,
) -> PyResult<String> {
    let args = real::KernelArgs {
        device,
        workload,
        schedulers,
        runtime,
        seed,
        force,
        engine,
        drop_caches,
        interval,
    };
    let report = py.detach(|| real::kernel_compare(&args)).map_err(failure_to_py)?;
    report_json(&report).map_err(to_py)
}

/// The module `elevator._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("ElevatorError", module.py().get_type::<ElevatorError>())?;
    module.add("VERSION", VERSION)?;
    module.add("DEFAULT_DEVICE", elevator_sim::DEFAULT_DEVICE)?;
    module.add("DEFAULT_WORKLOAD", elevator_sim::DEFAULT_WORKLOAD)?;
    module.add("DEFAULT_HOST", elevator_sim::DEFAULT_HOST)?;
    module.add_function(wrap_pyfunction!(sim, module)?)?;
    module.add_function(wrap_pyfunction!(study, module)?)?;
    module.add_function(wrap_pyfunction!(schedulers, module)?)?;
    module.add_function(wrap_pyfunction!(devices, module)?)?;
    module.add_function(wrap_pyfunction!(hosts, module)?)?;
    module.add_function(wrap_pyfunction!(workloads, module)?)?;
    module.add_function(wrap_pyfunction!(read_trace, module)?)?;
    module.add_function(wrap_pyfunction!(live, module)?)?;
    module.add_function(wrap_pyfunction!(kernel_compare, module)?)?;
    module.add("DEFAULT_LIVE_WORKLOAD", elevator_live::run::DEFAULT_WORKLOAD)?;
    Ok(())
}
