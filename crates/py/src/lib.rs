//! `elevator._native`: the Rust side of the Python package `elevator` (python/, built by
//! maturin). It exposes the libraries, not the command line: simulations
//! ([`elevator_sim::run`]), the classic study ([`elevator_sim::study`]), the listings of
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
use elevator_sim::study::{EXPERIMENTS, stamp_scale};
use elevator_sim::{DeviceKind, DeviceSpec, HostSpec, QueueSettings, SimConfig, run};
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

/// Block-queue settings of `sim`, as the CLI's `--nr-requests` etc.; `None`: the default.
#[derive(Debug, Default)]
struct Queue {
    nr_requests: Option<u32>,
    read_ahead_kb: Option<u32>,
    max_sectors_kb: Option<u32>,
    plugging: Option<bool>,
    depth: Option<u32>,
}

/// `--interval` as the CLI parses it (a time; a bare number is seconds), with clap's message
/// for a bad one (without its `error: `).
fn series_interval(text: Option<&str>) -> Result<Duration> {
    use elevator_report::series::{DEFAULT_INTERVAL, INTERVAL_MAX, INTERVAL_MIN, check_interval};
    let Some(text) = text else { return Ok(DEFAULT_INTERVAL) };
    elevator_core::units::parse_duration(text, 1_000_000_000)
        .map_err(|error| format!("{error}; accepted {INTERVAL_MIN} to {INTERVAL_MAX}"))
        .and_then(check_interval)
        .map_err(|error| anyhow::anyhow!("invalid value '{text}' for '--interval <TIME>': {error}"))
}

/// `sim`'s other options: the job file's caps (`--max-size`, `--max-runtime`) and what a
/// simulation records beside its figures (`--dispatch-samples`, `--interval`).
#[derive(Debug, Default)]
struct SimOptions<'a> {
    max_size_bytes: Option<u64>,
    max_runtime_ns: Option<u64>,
    dispatch_samples: Option<usize>,
    interval: Option<&'a str>,
}

/// What `sim` runs: the CLI's `sim::plan`, from keyword arguments.
struct SimPlan {
    config: SimConfig,
    schedulers: Vec<SchedulerSpec>,
    workload: WorkloadSpec,
}

/// A workload argument: a spec in the CLI's syntax, or the path of an fio job file (as the
/// CLI's positional JOBFILE, with `--max-size` and `--max-runtime`): a path ending in `.fio`,
/// or any existing file named with a `/` (`./job.ini`).
fn workload_spec(
    text: &str,
    max_size_bytes: Option<u64>,
    max_runtime_ns: Option<u64>,
) -> Result<WorkloadSpec> {
    // A spec never contains `/` outside its values, and a job file named with `/` or `.fio`
    // cannot be taken for a bare spec such as `job`.
    let is_job_file = !text.starts_with("fio:")
        && (text.ends_with(".fio") || (text.contains('/') && std::path::Path::new(text).is_file()));
    if is_job_file {
        let spec = WorkloadSpec::parse_fio_file(text)?;
        return Ok(spec.fio_capped(max_size_bytes, max_runtime_ns.map(Duration::from_nanos))?);
    }
    if max_size_bytes.is_some() || max_runtime_ns.is_some() {
        bail!("max_size and max_runtime go with an fio job file (a path ending in .fio)");
    }
    Ok(WorkloadSpec::parse(text)?)
}

fn sim_plan(
    device: &str,
    workload: &str,
    schedulers: &[String],
    seed: u64,
    host_text: &str,
    queue: &Queue,
    options: &SimOptions<'_>,
) -> Result<SimPlan> {
    // The CLI's order (clap's checks, then sim.rs `plan`), so that the first bad argument is
    // the one reported.
    let interval = series_interval(options.interval)?;
    let device = DeviceSpec::parse(device)?;
    let workload = workload_spec(workload, options.max_size_bytes, options.max_runtime_ns)?;
    let host = HostSpec::parse(host_text)?;
    let runnable: Vec<SchedulerKind> =
        SchedulerKind::ALL.iter().copied().filter(|kind| kind.runs_on(host.kernel())).collect();
    let schedulers = if schedulers.is_empty() {
        runnable.iter().map(|&kind| SchedulerSpec::new(kind)).collect()
    } else {
        let texts = elevator_core::split_spec_list("scheduler", schedulers)?;
        texts.iter().map(|text| SchedulerSpec::parse(text)).collect::<Result<_, _>>()?
    };
    let defaults = QueueSettings::default();
    let config = SimConfig {
        queue: QueueSettings {
            nr_requests: queue.nr_requests.unwrap_or(defaults.nr_requests),
            max_sectors_kb: queue.max_sectors_kb.or(defaults.max_sectors_kb),
            read_ahead_kb: queue.read_ahead_kb.unwrap_or(defaults.read_ahead_kb),
            plugging: queue.plugging.unwrap_or(defaults.plugging),
            depth: queue.depth.or(defaults.depth),
        },
        host,
        // The CLI's `--interval` (default 1 s), so that the JSON is the CLI's byte for byte.
        series_interval: Some(interval),
        dispatch_samples: options.dispatch_samples.unwrap_or(0),
        ..SimConfig::new(seed, device)
    };
    Ok(SimPlan { config, schedulers, workload })
}

/// Runs every scheduler of `plan` on its own thread (as `elevator sim`), in order.
fn run_plan(plan: &SimPlan) -> Result<Report> {
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
    let queue = Queue { nr_requests, read_ahead_kb, max_sectors_kb, plugging, depth };
    let options =
        SimOptions { max_size_bytes: max_size, max_runtime_ns, dispatch_samples, interval };
    let plan =
        sim_plan(device, workload, &schedulers, seed, host, &queue, &options).map_err(to_py)?;
    // The simulation touches no Python object: other Python threads run meanwhile.
    py.detach(|| run_plan(&plan).and_then(|report| report_json(&report))).map_err(to_py)
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
