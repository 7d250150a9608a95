//! `elevator sim`: one workload on one device under each scheduler, side by side.

use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, Result};
use elevator_report::Report;
use elevator_report::fio::{self, FioJobSetup, FioSetup};
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_sim::{
    Bounds, DeviceSpec, HostSpec, QueueSettings, SimConfig, SimProgress, run_watched,
};
use elevator_workload::WorkloadSpec;

use crate::args::SimArgs;
use crate::plan;
use crate::term;

/// A validated `sim` invocation.
struct Plan {
    config: SimConfig,
    schedulers: Vec<SchedulerSpec>,
    workload: WorkloadSpec,
}

fn plan(args: &SimArgs) -> Result<Plan> {
    let device = DeviceSpec::parse(&args.device)?;
    crate::list::warn_about_files(std::slice::from_ref(&device));
    let workload = match &args.job_file {
        Some(path) => {
            WorkloadSpec::parse_fio_file(path)?.fio_capped(args.max_size, args.max_runtime)?
        }
        None => WorkloadSpec::parse(&args.workload)?,
    };
    let host = HostSpec::parse(&args.host)?;
    // Every scheduler the host's kernel can run (a 2.4 host has only its one elevator).
    let runnable: Vec<SchedulerKind> =
        SchedulerKind::ALL.iter().copied().filter(|kind| kind.runs_on(host.kernel())).collect();
    let schedulers = plan::schedulers(&args.schedulers, &runnable)?;
    let config = SimConfig {
        seed: args.seed,
        device,
        host,
        queue: QueueSettings {
            nr_requests: args.nr_requests,
            // A calibrated preset's own request size unless overridden (issue 21).
            max_sectors_kb: args
                .max_sectors_kb
                .or_else(|| elevator_sim::device::table::measured_max_sectors_kb(&args.device)),
            read_ahead_kb: args.read_ahead_kb,
            plugging: args.plugging,
            depth: args.depth,
        },
        bounds: Bounds::default(),
        check_invariants: args.check || elevator_sim::CHECK_BY_DEFAULT,
        // An HTML report draws what the elevator did: keep a sample of the dispatches.
        dispatch_samples: dispatch_samples(args.dispatch_samples, args.report.output.as_deref()),
        series_interval: Some(args.report.interval),
    };
    Ok(Plan { config, schedulers, workload })
}

pub(crate) fn run_command(args: &SimArgs, stdout: &mut dyn Write) -> Result<()> {
    // A bad --output-format is refused before anything runs.
    let formats = fio_formats(
        args.output_format.as_deref(),
        args.minimal,
        fio_job_file(args),
        &args.workload,
    )?;
    let plan = plan(args)?;
    // Independent runs go in parallel; results are reported in the order asked for.
    let watched: Vec<(String, Arc<SimProgress>)> = plan
        .schedulers
        .iter()
        .map(|scheduler| (scheduler.to_string(), Arc::new(SimProgress::default())))
        .collect();
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .schedulers
            .iter()
            .zip(&watched)
            .map(|(scheduler, (_, progress))| {
                let config = &plan.config;
                // With several schedulers each run writes its own `write_iolog` file.
                let workload = if plan.schedulers.len() > 1 {
                    plan.workload.fio_tagged(&safe_name(&scheduler.to_string()))
                } else {
                    plan.workload.clone()
                };
                scope.spawn(move || run_watched(config, scheduler, &workload, progress))
            })
            .collect();
        term::watch_simulations(&watched, || handles.iter().all(|handle| handle.is_finished()));
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a simulation thread panicked"))
            .collect()
    });
    let mut report = Report::new(plan.config.seed, env!("CARGO_PKG_VERSION"));
    for (scheduler, result) in plan.schedulers.iter().zip(results) {
        report.runs.push(result.with_context(|| format!("simulating under {scheduler}"))?);
    }
    if let Some(path) = fio_job_file(args) {
        let output = args.report.output.as_deref();
        if write_fio_report(&report, path, formats.as_deref(), output, stdout)? {
            return Ok(());
        }
    }
    plan::write_report(&report, &args.report, stdout)
}

/// The fio side of a job file's runs (`elevator sim`, `elevator run`, `elevator kernel
/// compare`): the log files its jobs ask for, and fio's output in `formats` when given, to
/// `output` or `stdout` (see [`write_fio_outputs`]). Returns whether fio's output was
/// written; if not, the caller writes elevator's report.
pub(crate) fn write_fio_report(
    report: &Report,
    path: &str,
    formats: Option<&[FioFormat]>,
    output: Option<&std::path::Path>,
    stdout: &mut dyn Write,
) -> Result<bool> {
    let setup = fio_setup(path)?;
    write_fio_logs(report, &setup, output)?;
    match formats {
        Some(formats) => write_fio_outputs(report, formats, &setup, output, stdout).map(|()| true),
        None => Ok(false),
    }
}

/// One of fio's output formats (fio-compat.md §4), in the order fio writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum FioFormat {
    Terse,
    Json,
    JsonPlus,
    Normal,
}

/// The job file run, if any: the positional one or `-w fio:FILE`'s.
fn fio_job_file(args: &SimArgs) -> Option<&str> {
    args.job_file.as_deref().or_else(|| args.workload.strip_prefix("fio:"))
}

/// The log files the job file asks for (fio-compat.md §4.6), next to `-o FILE` or in the
/// working directory; with several schedulers each name carries the scheduler.
fn write_fio_logs(
    report: &Report,
    setup: &FioSetup,
    output: Option<&std::path::Path>,
) -> Result<()> {
    if !setup.jobs.iter().any(|job| job.logs.any()) {
        return Ok(());
    }
    let dir = match output.and_then(std::path::Path::parent) {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let several = report.runs.len() > 1;
    for run in &report.runs {
        let tag = several.then(|| safe_name(&run.scheduler));
        fio::write_logs(run, setup, &dir, tag.as_deref())
            .with_context(|| format!("fio log files of the run under {}", run.scheduler))?;
    }
    Ok(())
}

/// `--output-format` (comma separated, as fio's) or `--minimal`; `None` for elevator's report.
/// `job_file` is the job file run, if any; `workload` the `-w` given otherwise.
pub(crate) fn fio_formats(
    output_format: Option<&str>,
    minimal: bool,
    job_file: Option<&str>,
    workload: &str,
) -> Result<Option<Vec<FioFormat>>> {
    let text = match (output_format, minimal) {
        (Some(text), _) => text,
        (None, true) => "terse",
        (None, false) => return Ok(None),
    };
    if job_file.is_none() {
        anyhow::bail!(
            "--output-format and --minimal need a job file (FILE.fio or -w fio:FILE), not -w \
             {workload}"
        );
    }
    let formats = text
        .split(',')
        .map(|name| match name {
            "json" => Ok(FioFormat::Json),
            "json+" => Ok(FioFormat::JsonPlus),
            "terse" => Ok(FioFormat::Terse),
            "normal" => Ok(FioFormat::Normal),
            other => anyhow::bail!(
                "--output-format {other}: not one of fio's formats (accepted: normal, json, \
                 json+, terse)"
            ),
        })
        .collect::<Result<Vec<_>>>()?;
    // fio writes its buffers in one order whatever the list's: terse, json (json+), normal.
    let mut formats = formats;
    formats.sort();
    formats.dedup();
    Ok(Some(formats))
}

/// What the job file at `path` says that fio's outputs echo: its options as written, per
/// job and global, and the keys that shape the report (fio-compat.md §4.2, §4.4).
fn fio_setup(path: &str) -> Result<FioSetup> {
    use elevator_workload::fio;
    // The environment `WorkloadSpec::parse_fio_file` ran the file with.
    let env =
        fio::FioEnv { page_size_bytes: 4096, memory_mib: 1024, cpus: 1, ..Default::default() };
    let file = fio::parse_file(std::path::Path::new(path), &env)
        .map_err(|error| anyhow::anyhow!("{}: {}", error.at, error.message))?;
    fio_setup_of(&file)
}

/// What parsed jobs say that fio's outputs echo (see [`fio_setup`]).
/// Errors name the file, line and option the outputs cannot honour.
pub(crate) fn fio_setup_of(file: &elevator_workload::fio::FioJobFile) -> Result<FioSetup> {
    use elevator_workload::fio::FioValue;
    let mut setup = FioSetup::default();
    let mut seen_globals = Vec::new();
    for job in &file.jobs {
        for option in job.options.iter().filter(|option| option.global) {
            let Some(written) = &option.written else { continue };
            // Every job carries the globals before it; each occurrence is echoed once.
            if !seen_globals.contains(&(option.name, option.at.clone())) {
                seen_globals.push((option.name, option.at.clone()));
                setup.global_options.push((option.name.to_owned(), written.clone()));
            }
        }
        let options = job
            .options
            .iter()
            .filter(|option| !option.global)
            .filter_map(|option| Some((option.name.to_owned(), option.written.clone()?)))
            .collect();
        let int = |name: &str, default: u64| match job.get(name) {
            Some(FioValue::Int(value)) => *value,
            _ => default,
        };
        let written = |name: &str| {
            job.options.iter().rev().find(|option| option.name == name)?.written.clone()
        };
        // fio's default block size is 4 KiB each way; `bs` may give one per direction.
        let mut block_sizes = [(4096, 4096); 3];
        match job.get("bsrange").or_else(|| job.get("bs")) {
            Some(FioValue::Int(size)) => block_sizes = [(*size, *size); 3],
            Some(FioValue::Range { lo, hi }) => block_sizes = [(*lo, *hi); 3],
            Some(FioValue::PerDirection(values)) => {
                for (slot, value) in block_sizes.iter_mut().zip(values) {
                    match value {
                        Some(FioValue::Int(size)) => *slot = (*size, *size),
                        Some(FioValue::Range { lo, hi }) => *slot = (*lo, *hi),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        let new_group = job.options.iter().any(|option| {
            matches!(option.name, "stonewall" | "wait_for_previous" | "new_group")
                && !matches!(option.value, FioValue::Bool(false))
        });
        let logs = fio_logs(job)?;
        setup.jobs.push(FioJobSetup {
            name: job.name().to_owned(),
            clones: int("numjobs", 1) as u32,
            options,
            group_reporting: matches!(job.get("group_reporting"), Some(FioValue::Bool(true))),
            percentile_list: match job.get("percentile_list") {
                Some(FioValue::Floats(list)) => Some(list.clone()),
                _ => None,
            },
            iodepth: int("iodepth", 1),
            description: match job.get("description") {
                Some(FioValue::Str(text)) if !text.is_empty() => Some(text.clone()),
                _ => None,
            },
            new_group,
            rw: written("rw").unwrap_or_else(|| "read".to_owned()),
            block_sizes,
            ioengine: job.engine().to_owned(),
            logs,
            percentile_switches: elevator_report::fio::PercentileSwitches {
                clat: !matches!(job.get("clat_percentiles"), Some(FioValue::Bool(false))),
                lat: matches!(job.get("lat_percentiles"), Some(FioValue::Bool(true))),
                slat: matches!(job.get("slat_percentiles"), Some(FioValue::Bool(true))),
            },
            unified_mixed: matches!(
                job.get("unified_rw_reporting"),
                Some(FioValue::Choice { value, .. }) if value == "mixed" || value == "1"
            ),
            unified_both: matches!(
                job.get("unified_rw_reporting"),
                Some(FioValue::Choice { value, .. }) if value == "both"
            ),
            no_disk_util: matches!(job.get("disk_util"), Some(FioValue::Bool(false))),
        });
    }
    Ok(setup)
}

/// A job's log options (fio-compat.md §2.1 "Logging and reporting", §4.6). Reporting and log
/// options (or values) the writers do not honour are refused naming file, line and option.
fn fio_logs(job: &elevator_workload::fio::FioJob) -> Result<fio::FioLogs> {
    use elevator_workload::fio::FioValue;
    for option in &job.options {
        let refused = match (option.name, &option.value) {
            // fio's init.c refuses the issue time without a latency log and offsets.
            ("log_issue_time", FioValue::Bool(true))
                if job.get("write_lat_log").is_none()
                    || !matches!(job.get("log_offset"), Some(FioValue::Bool(true))) =>
            {
                Some("log_issue_time option requires write_lat_log and log_offset options")
            }
            ("log_hist_coarseness", FioValue::Int(coarseness)) if *coarseness > 6 => {
                Some("accepted: 0 to 6 (each step halves the histogram log's bins)")
            }
            // Options that would change the outputs in ways not yet written; at their
            // defaults they change nothing and pass.
            (
                "disable_lat"
                | "disable_clat"
                | "disable_slat"
                | "disable_bw_measurement"
                | "gtod_reduce",
                FioValue::Bool(true),
            ) => Some("the outputs always carry every latency and bandwidth figure"),
            ("stats", FioValue::Bool(false)) => Some("jobs without stats are not left out yet"),
            ("bwavgtime" | "iopsavgtime", FioValue::Int(ms)) if *ms != 500 => {
                Some("bandwidth and IOPS samples are taken every 500 ms (fio's default)")
            }
            ("significant_figures", FioValue::Int(figures)) if *figures != 4 => {
                Some("normal output uses fio's default of 4 significant figures")
            }
            _ => None,
        };
        if let Some(why) = refused {
            anyhow::bail!("fio {}: option: {}: {why}", option.at, option.name);
        }
    }
    let prefix = |name: &str| match job.get(name) {
        Some(FioValue::Str(text)) => Some(text.clone()),
        Some(FioValue::Bool(false)) | None => None,
        Some(other) => Some(other.to_string()),
    };
    let flag = |name: &str, default: bool| match job.get(name) {
        Some(FioValue::Bool(value)) => *value,
        _ => default,
    };
    let int = |name: &str| match job.get(name) {
        Some(FioValue::Int(value)) => Some(*value),
        _ => None,
    };
    // fio's `ioprio_value(ioprio_class, ioprio)`: class << 13 | level, each 0 when unset
    // (backend.c sets it when either option is given).
    let ioprio = (int("prioclass").unwrap_or(0) << 13 | int("prio").unwrap_or(0)) as u32;
    Ok(fio::FioLogs {
        bw: prefix("write_bw_log"),
        lat: prefix("write_lat_log"),
        iops: prefix("write_iops_log"),
        avg_msec: int("log_avg_msec").unwrap_or(0),
        max_value: matches!(
            job.get("log_window_value"),
            Some(FioValue::Choice { value, .. }) if value == "max" || value == "1"
        ),
        offset: flag("log_offset", false),
        prio: flag("log_prio", false),
        shared: !flag("per_job_logs", true),
        ioprio,
        window_both: matches!(
            job.get("log_window_value"),
            Some(FioValue::Choice { value, .. }) if value == "both"
        ),
        issue_time: flag("log_issue_time", false),
        hist: prefix("write_hist_log"),
        hist_msec: int("log_hist_msec").unwrap_or(0),
        hist_coarseness: int("log_hist_coarseness").unwrap_or(0) as u32,
    })
}

/// Each run's fio output, in `formats` one after the other (fio's order, terse, json, normal,
/// with fio's start-up lines first when normal is among them, §4.1, §5.3):
/// to `-o FILE`, or stdout for a single run. With several runs (schedulers) each goes to its
/// own file, FILE with `.SCHEDULER` before the extension — one document per file, as the
/// tools reading fio's JSON expect.
fn write_fio_outputs(
    report: &Report,
    formats: &[FioFormat],
    setup: &FioSetup,
    output: Option<&std::path::Path>,
    stdout: &mut dyn Write,
) -> Result<()> {
    let several = report.runs.len() > 1;
    if several && output.is_none() {
        anyhow::bail!(
            "--output-format with {} schedulers needs -o FILE: each scheduler's output goes to \
             FILE.SCHEDULER (one document per file, as tools read fio's)",
            report.runs.len()
        );
    }
    for run in &report.runs {
        let text = fio_text(report, run, formats, setup)?;
        match output {
            None => stdout.write_all(&text)?,
            Some(path) => {
                let path =
                    if several { scheduler_path(path, &run.scheduler) } else { path.to_owned() };
                std::fs::write(&path, &text)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// One run's fio output: `formats` in fio's order (terse, json, normal), with fio's start-up
/// lines first when normal is among them (§4.1, §5.3).
pub(crate) fn fio_text(
    report: &Report,
    run: &elevator_report::Run,
    formats: &[FioFormat],
    setup: &FioSetup,
) -> Result<Vec<u8>> {
    let mut formats = formats.to_vec();
    formats.sort();
    formats.dedup();
    let mut text = Vec::new();
    if formats.contains(&FioFormat::Normal) {
        fio::render_banners(setup, &mut text)?;
    }
    for format in &formats {
        match format {
            FioFormat::Json | FioFormat::JsonPlus => {
                fio::render_json(run, report.seed, setup, *format == FioFormat::JsonPlus, &mut text)
            }
            FioFormat::Terse => fio::render_terse(run, setup, &mut text),
            FioFormat::Normal => fio::render_normal(run, setup, &mut text),
        }
        .with_context(|| format!("fio output of the run under {}", run.scheduler))?;
    }
    Ok(text)
}

/// `out.json` → `out.SCHEDULER.json` (`out` → `out.SCHEDULER`); characters a file name
/// should not hold (`/`, `:`, `,`, `=`) become `_`.
fn scheduler_path(path: &std::path::Path, scheduler: &str) -> std::path::PathBuf {
    let safe = safe_name(scheduler);
    let stem = path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match path.extension() {
        Some(extension) => format!("{stem}.{safe}.{}", extension.to_string_lossy()),
        None => format!("{stem}.{safe}"),
    };
    path.with_file_name(name)
}

/// `scheduler` with the characters a file name should not hold (`/`, `:`, `,`, `=`) as `_`.
pub(crate) fn safe_name(scheduler: &str) -> String {
    scheduler
        .chars()
        .map(
            |c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' },
        )
        .collect()
}

/// Dispatches sampled per run for an HTML report's sector-over-time picture: enough points to
/// show the pattern, few enough for a browser to draw one panel per scheduler.
const HTML_DISPATCH_SAMPLES: usize = 20_000;

/// Whether the report goes to an HTML file.
pub(crate) fn wants_html(output: Option<&std::path::Path>) -> bool {
    output
        .and_then(|path| path.extension())
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| extension.eq_ignore_ascii_case("html"))
}

/// How many dispatches a simulation keeps: as asked, else enough for an HTML report's picture
/// when the report goes to `.html`, else none.
pub(crate) fn dispatch_samples(asked: Option<usize>, output: Option<&std::path::Path>) -> usize {
    asked.unwrap_or(if wants_html(output) { HTML_DISPATCH_SAMPLES } else { 0 })
}
