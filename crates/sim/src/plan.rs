//! What a simulation of `elevator.sim`'s keyword arguments runs: the one place that turns
//! those arguments, as text and options, into a [`SimConfig`], its schedulers and its
//! workload. The Python package's `sim` (crates/py) and the `elevator sweep` grid
//! (crates/cli/src/sweep/grid.rs, which must give the package's table byte for byte) both
//! call [`build`], so they cannot drift apart.
//!
//! The checks run in the CLI's order — the `--interval` text (clap parses it first), then the
//! device, the workload, the host and the schedulers (`elevator sim`'s own order) — so that
//! the first bad argument is the one reported, with the CLI's message.
//!
//! A calibrated device preset's own request size (its recorded `max_sectors_kb`) applies
//! unless one is given, as in `elevator sim` (issue 21).

use elevator_core::{Duration, ParamError, SpecListError, split_spec_list};
use elevator_sched::{SchedSpecError, SchedulerKind, SchedulerSpec};
use elevator_workload::WorkloadSpec;

use crate::{DeviceSpec, HostSpec, QueueSettings, SimConfig};

/// `elevator.sim`'s keyword arguments, as its callers have them: texts in the CLI's syntax,
/// and `None` for an argument not given (its default).
#[derive(Debug, Clone, Copy)]
pub struct PlanArgs<'a> {
    /// The device spec (`hdd`, `ssd:depth=1`).
    pub device: &'a str,
    /// A workload spec in the CLI's syntax, or the path of an fio job file: a path ending in
    /// `.fio`, or any existing file named with a `/` (`./job.ini`).
    pub workload: &'a str,
    /// The schedulers, each a spec or a comma-separated list; empty: every scheduler the
    /// host's kernel runs.
    pub schedulers: &'a [String],
    /// The seed.
    pub seed: u64,
    /// The host spec.
    pub host: &'a str,
    /// `nr_requests` (default: the queue's).
    pub nr_requests: Option<u32>,
    /// `read_ahead_kb` (default: the queue's).
    pub read_ahead_kb: Option<u32>,
    /// `max_sectors_kb` (default: the queue's).
    pub max_sectors_kb: Option<u32>,
    /// Plugging on or off (default: the queue's).
    pub plugging: Option<bool>,
    /// The device queue depth (default: the queue's).
    pub depth: Option<u32>,
    /// The job file's `--max-size` cap, in bytes; only with a job file.
    pub max_size_bytes: Option<u64>,
    /// The job file's `--max-runtime` cap, in nanoseconds; only with a job file.
    pub max_runtime_ns: Option<u64>,
    /// How many dispatches to sample for the report's chart (default 0).
    pub dispatch_samples: Option<usize>,
    /// The series interval as `--interval` takes it (default 1 s).
    pub interval: Option<&'a str>,
}

/// What [`build`] makes of [`PlanArgs`]: one configuration run under each scheduler.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The configuration every scheduler runs with.
    pub config: SimConfig,
    /// The schedulers, in the order given.
    pub schedulers: Vec<SchedulerSpec>,
    /// The workload.
    pub workload: WorkloadSpec,
}

/// Why [`build`] refused its arguments; each message is the CLI's for the same input (the
/// wrapped errors are transparent: their text and sources are the error's).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A device, host, workload or job file that does not parse.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// A scheduler list that does not split.
    #[error(transparent)]
    SpecList(#[from] SpecListError),
    /// A scheduler spec that does not parse.
    #[error(transparent)]
    Scheduler(#[from] SchedSpecError),
    /// Any other refusal (a bad interval, caps without a job file), its message whole.
    #[error("{0}")]
    Message(String),
}

/// The series interval of `interval=` as the CLI parses `--interval` (default 1 s), with
/// clap's message for a bad one (without its `error: `).
///
/// # Errors
///
/// A text [`parse_interval`](elevator_report::series::parse_interval) refuses.
pub fn series_interval(text: Option<&str>) -> Result<Duration, PlanError> {
    use elevator_report::series::{DEFAULT_INTERVAL, parse_interval};
    let Some(text) = text else { return Ok(DEFAULT_INTERVAL) };
    parse_interval(text).map_err(|error| {
        PlanError::Message(format!("invalid value '{text}' for '--interval <TIME>': {error}"))
    })
}

/// A workload argument: a spec, or an fio job file (as the CLI's positional JOBFILE) capped
/// by `max_size_bytes` and `max_runtime_ns` (see [`PlanArgs::workload`]).
///
/// # Errors
///
/// A spec or job file that does not parse, or caps given with a spec.
pub fn workload_spec(
    text: &str,
    max_size_bytes: Option<u64>,
    max_runtime_ns: Option<u64>,
) -> Result<WorkloadSpec, PlanError> {
    // A spec never contains `/` outside its values, and a job file named with `/` or `.fio`
    // cannot be taken for a bare spec such as `job`.
    let is_job_file = !text.starts_with("fio:")
        && (text.ends_with(".fio") || (text.contains('/') && std::path::Path::new(text).is_file()));
    if is_job_file {
        let spec = WorkloadSpec::parse_fio_file(text)?;
        return Ok(spec.fio_capped(max_size_bytes, max_runtime_ns.map(Duration::from_nanos))?);
    }
    if max_size_bytes.is_some() || max_runtime_ns.is_some() {
        return Err(PlanError::Message(
            "max_size and max_runtime go with an fio job file (a path ending in .fio)".into(),
        ));
    }
    Ok(WorkloadSpec::parse(text)?)
}

/// The plan of `args`.
///
/// # Errors
///
/// The first bad argument in the CLI's order (see the module).
pub fn build(args: &PlanArgs<'_>) -> Result<Plan, PlanError> {
    let interval = series_interval(args.interval)?;
    let device = DeviceSpec::parse(args.device)?;
    let workload = workload_spec(args.workload, args.max_size_bytes, args.max_runtime_ns)?;
    let host = HostSpec::parse(args.host)?;
    let schedulers = if args.schedulers.is_empty() {
        // Every scheduler the host's kernel can run (a 2.4 host has only its one elevator).
        SchedulerKind::ALL
            .iter()
            .copied()
            .filter(|kind| kind.runs_on(host.kernel()))
            .map(SchedulerSpec::new)
            .collect()
    } else {
        let texts = split_spec_list("scheduler", args.schedulers)?;
        texts.iter().map(|text| SchedulerSpec::parse(text)).collect::<Result<_, _>>()?
    };
    let defaults = QueueSettings::default();
    let config = SimConfig {
        queue: QueueSettings {
            nr_requests: args.nr_requests.unwrap_or(defaults.nr_requests),
            max_sectors_kb: args
                .max_sectors_kb
                .or_else(|| crate::device::table::measured_max_sectors_kb(args.device))
                .or(defaults.max_sectors_kb),
            read_ahead_kb: args.read_ahead_kb.unwrap_or(defaults.read_ahead_kb),
            plugging: args.plugging.unwrap_or(defaults.plugging),
            depth: args.depth.or(defaults.depth),
        },
        host,
        // The CLI's `--interval` (default 1 s), so that the JSON is the CLI's byte for byte.
        series_interval: Some(interval),
        dispatch_samples: args.dispatch_samples.unwrap_or(0),
        ..SimConfig::new(args.seed, device)
    };
    Ok(Plan { config, schedulers, workload })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args<'a>(schedulers: &'a [String]) -> PlanArgs<'a> {
        PlanArgs {
            device: crate::DEFAULT_DEVICE,
            workload: crate::DEFAULT_WORKLOAD,
            schedulers,
            seed: 3,
            host: crate::DEFAULT_HOST,
            nr_requests: None,
            read_ahead_kb: None,
            max_sectors_kb: None,
            plugging: None,
            depth: None,
            max_size_bytes: None,
            max_runtime_ns: None,
            dispatch_samples: None,
            interval: None,
        }
    }

    // Proves the first bad argument is the one reported, in the CLI's order (interval before
    // device before workload), with clap's message for the interval.
    #[test]
    fn the_first_bad_argument_in_the_clis_order_is_reported() {
        let none = [];
        let bad = PlanArgs { device: "nodevice", workload: "noworkload", ..args(&none) };
        let error = build(&PlanArgs { interval: Some("0s"), ..bad }).unwrap_err().to_string();
        assert!(error.starts_with("invalid value '0s' for '--interval <TIME>': "), "{error}");
        let device = build(&bad).unwrap_err().to_string();
        assert!(device.contains("nodevice"), "{device}");
        let workload = build(&PlanArgs { device: "ssd", ..bad }).unwrap_err().to_string();
        assert!(workload.contains("noworkload"), "{workload}");
        let caps = build(&PlanArgs { max_size_bytes: Some(1), ..args(&none) }).unwrap_err();
        assert_eq!(
            caps.to_string(),
            "max_size and max_runtime go with an fio job file (a path ending in .fio)"
        );
    }

    // Proves absent arguments take the queue's and the CLI's defaults, given ones are used,
    // and no scheduler named means every one the host's kernel runs.
    #[test]
    fn defaults_and_given_values_reach_the_configuration() {
        let none = [];
        let plan = build(&args(&none)).unwrap();
        let defaults = QueueSettings::default();
        assert_eq!(plan.config.queue.nr_requests, defaults.nr_requests);
        assert_eq!(plan.config.series_interval, Some(Duration::from_secs(1)));
        assert_eq!(plan.config.dispatch_samples, 0);
        assert_eq!(plan.config.seed, 3);
        let runnable = SchedulerKind::ALL
            .iter()
            .filter(|kind| kind.runs_on(plan.config.host.kernel()))
            .count();
        assert_eq!(plan.schedulers.len(), runnable);

        let named = ["noop,deadline".to_owned()];
        let plan = build(&PlanArgs {
            nr_requests: Some(defaults.nr_requests + 5),
            plugging: Some(!defaults.plugging),
            dispatch_samples: Some(7),
            interval: Some("250ms"),
            ..args(&named)
        })
        .unwrap();
        assert_eq!(plan.config.queue.nr_requests, defaults.nr_requests + 5);
        assert_eq!(plan.config.queue.plugging, !defaults.plugging);
        assert_eq!(plan.config.dispatch_samples, 7);
        assert_eq!(plan.config.series_interval, Some(Duration::from_millis(250)));
        let names: Vec<String> = plan.schedulers.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["noop", "deadline"]);
    }

    // Proves a calibrated preset's recorded request size reaches the queue, as `elevator sim`
    // applies it, and a given `max_sectors_kb` still overrides it.
    #[test]
    fn a_calibrated_presets_request_size_applies_unless_given() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("small-requests.toml");
        std::fs::write(
            &file,
            "kind = \"table\"\ndepth = 8\n\n[measured]\nsysfs_max_sectors_kb = 64\n",
        )
        .unwrap();
        let none = [];
        let device = file.to_str().unwrap();
        let plan = build(&PlanArgs { device, ..args(&none) }).unwrap();
        assert_eq!(plan.config.queue.max_sectors_kb, Some(64));
        let given = build(&PlanArgs { device, max_sectors_kb: Some(256), ..args(&none) }).unwrap();
        assert_eq!(given.config.queue.max_sectors_kb, Some(256));
        let built_in = build(&args(&none)).unwrap();
        assert_eq!(built_in.config.queue.max_sectors_kb, QueueSettings::default().max_sectors_kb);
    }
}
