//! `elevator fio ARGS...` and the binary invoked as `fio`: fio's own command line
//! (fio-compat.md §1.9, R5, R6).
//!
//! fio reads one flat list of long options with getopt_long: its front-end flags
//! (`--output-format`, `--section`, ...) and every job option (`--name=a --rw=read`) share one
//! namespace, an option may be abbreviated to a unique prefix of all of them, and any other
//! argument is a job file. [`split`] takes the front end's flags out and leaves the job
//! options, in order, for the job parser (`elevator_workload::fio::parse_command_line`),
//! which reads them as fio does: options before the first `--name` are global.
//!
//! Tools that run `fio` (bench-fio, PerfKitBenchmarker, cbt) cannot pass elevator's own
//! options, so the mode, device and seed come from the environment (R5): see
//! [`FioEnvironment`].
//!
//! # Deviations from fio
//!
//! * `--eta*`, `--status-interval`, `--debug`, `--readonly` and `--aux-path` are accepted and
//!   change nothing (fio-compat.md §1.9 lists them as such); `--warnings-fatal` too, as the
//!   front end has no warnings that are not errors already.
//! * `--terse-version` takes 3 only: the one fio writes by default and the tools read.

use std::path::PathBuf;

use elevator_report::fio::FIO_VERSION;
use elevator_workload::fio::catalog;

/// An output format fio writes (`--output-format`, a comma list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum OutputFormat {
    /// The human-readable text.
    Normal,
    /// Terse v3 (`--minimal`).
    Terse,
    /// JSON.
    Json,
    /// JSON with the latency histogram's bins (`json+` implies `json`'s keys).
    JsonPlus,
}

impl OutputFormat {
    fn parse(word: &str) -> Option<OutputFormat> {
        match word {
            "normal" => Some(OutputFormat::Normal),
            "terse" => Some(OutputFormat::Terse),
            "json" => Some(OutputFormat::Json),
            "json+" => Some(OutputFormat::JsonPlus),
            _ => None,
        }
    }
}

/// fio's command line, split: the front end's flags, the job options and the job files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FioInvocation {
    /// `--output-format` (default `normal`), in the order given, without repeats; `json+`
    /// replaces `json`.
    pub(crate) formats: Vec<OutputFormat>,
    /// `--output FILE`: where the formats go instead of stdout.
    pub(crate) output: Option<PathBuf>,
    /// `--section NAME` (repeatable): only these job sections run.
    pub(crate) sections: Vec<String>,
    /// `--parse-only`: parse, check, run nothing.
    pub(crate) parse_only: bool,
    /// `--showcmd`: print each job file as command-line options.
    pub(crate) show_command: bool,
    /// `--version`.
    pub(crate) version: bool,
    /// `--help`.
    pub(crate) help: bool,
    /// `--cmdhelp[=OPTION]`: `Some(None)` for every option.
    pub(crate) command_help: Option<Option<String>>,
    /// Job options, in order (`--name=a`, `--rw=read`, `--time_based`), with any abbreviated
    /// name written out in full.
    pub(crate) job_options: Vec<String>,
    /// Job files, in order.
    pub(crate) job_files: Vec<PathBuf>,
}

/// A front-end flag: its name and whether it takes a value.
struct Flag {
    name: &'static str,
    value: Value,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Value {
    /// `--flag` only.
    None,
    /// `--flag=VALUE` or `--flag VALUE`.
    Required,
    /// `--flag` or `--flag=VALUE` (never the next argument, as getopt's optional arguments).
    Optional,
}

/// fio's front-end flags (fio-compat.md §1.9).
const FLAGS: &[Flag] = &[
    Flag { name: "output", value: Value::Required },
    Flag { name: "output-format", value: Value::Required },
    Flag { name: "minimal", value: Value::None },
    Flag { name: "terse-version", value: Value::Required },
    Flag { name: "section", value: Value::Required },
    Flag { name: "parse-only", value: Value::None },
    Flag { name: "showcmd", value: Value::None },
    Flag { name: "version", value: Value::None },
    Flag { name: "help", value: Value::None },
    Flag { name: "cmdhelp", value: Value::Optional },
    Flag { name: "enghelp", value: Value::Optional },
    Flag { name: "warnings-fatal", value: Value::None },
    Flag { name: "eta", value: Value::Required },
    Flag { name: "eta-newline", value: Value::Required },
    Flag { name: "eta-interval", value: Value::Required },
    Flag { name: "status-interval", value: Value::Required },
    Flag { name: "debug", value: Value::Required },
    Flag { name: "readonly", value: Value::None },
    Flag { name: "aux-path", value: Value::Required },
];

/// What `--name` resolves to when the argument names a front-end flag or a job option.
enum Resolved {
    Flag(&'static Flag),
    JobOption(String),
}

/// Resolves `name` as getopt_long does over fio's whole namespace: an exact name wins; else a
/// prefix of exactly one name (front-end flag or job option, aliases included).
fn resolve(name: &str) -> Result<Resolved, String> {
    if let Some(flag) = FLAGS.iter().find(|flag| flag.name == name) {
        return Ok(Resolved::Flag(flag));
    }
    if let Some(option) = catalog::lookup(name) {
        return Ok(Resolved::JobOption(option.name.to_owned()));
    }
    let mut flags = FLAGS.iter().filter(|flag| flag.name.starts_with(name));
    let mut options: Vec<&'static str> = catalog::OPTIONS
        .iter()
        .flat_map(|option| std::iter::once(option.name).chain(option.aliases.iter().copied()))
        .filter(|candidate| candidate.starts_with(name))
        .collect();
    options.sort_unstable();
    options.dedup();
    match (flags.next(), flags.next(), options.as_slice()) {
        (Some(flag), None, []) => Ok(Resolved::Flag(flag)),
        (None, None, [only]) => Ok(Resolved::JobOption(
            catalog::lookup(only).map_or(*only, |spec| spec.name).to_owned(),
        )),
        (None, None, []) => Err(format!("unrecognized option '--{name}'")),
        _ => Err(format!("option '--{name}' is ambiguous")),
    }
}

/// Splits fio's command line (without the program name).
pub(crate) fn split<S: AsRef<str>>(args: &[S]) -> Result<FioInvocation, String> {
    let mut invocation = FioInvocation::default();
    let mut formats: Vec<OutputFormat> = Vec::new();
    let mut index = 0;
    while index < args.len() {
        let arg = args[index].as_ref();
        index += 1;
        let Some(long) = arg.strip_prefix("--") else {
            if arg.starts_with('-') && arg.len() > 1 {
                return Err(format!("unrecognized option '{arg}' (fio takes long options only)"));
            }
            invocation.job_files.push(PathBuf::from(arg));
            continue;
        };
        let (name, inline) = match long.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (long, None),
        };
        let flag = match resolve(name)? {
            Resolved::JobOption(full) => {
                invocation.job_options.push(match inline {
                    Some(value) => format!("--{full}={value}"),
                    None => format!("--{full}"),
                });
                continue;
            }
            Resolved::Flag(flag) => flag,
        };
        let value = match (flag.value, inline) {
            (Value::None, Some(_)) => {
                return Err(format!("option '--{}' doesn't allow an argument", flag.name));
            }
            (Value::None, None) | (Value::Optional, None) => None,
            (_, Some(value)) => Some(value),
            (Value::Required, None) => {
                let Some(next) = args.get(index) else {
                    return Err(format!("option '--{}' requires an argument", flag.name));
                };
                index += 1;
                Some(next.as_ref().to_owned())
            }
        };
        match (flag.name, value) {
            ("output", Some(path)) => invocation.output = Some(PathBuf::from(path)),
            ("output-format", Some(list)) => {
                for word in list.split(',').map(str::trim) {
                    let format = OutputFormat::parse(word).ok_or_else(|| {
                        format!(
                            "unknown output format `{word}` (accepted: normal, terse, json, \
                             json+, as a comma list)"
                        )
                    })?;
                    formats.push(format);
                }
            }
            ("minimal", _) => formats.push(OutputFormat::Terse),
            ("terse-version", Some(version)) if version.trim() == "3" => {}
            ("terse-version", Some(version)) => {
                return Err(format!("terse version `{version}` (accepted: 3)"));
            }
            ("section", Some(name)) => invocation.sections.push(name),
            ("parse-only", _) => invocation.parse_only = true,
            ("showcmd", _) => invocation.show_command = true,
            ("version", _) => invocation.version = true,
            ("help", _) => invocation.help = true,
            ("cmdhelp", value) => invocation.command_help = Some(value),
            // Accepted and without effect (module doc).
            _ => {}
        }
    }
    // `json+` carries `json`'s keys: one document, not two.
    if formats.contains(&OutputFormat::JsonPlus) {
        formats.retain(|format| *format != OutputFormat::Json);
    }
    let mut seen = Vec::new();
    formats.retain(|format| {
        let fresh = !seen.contains(format);
        seen.push(*format);
        fresh
    });
    invocation.formats = if formats.is_empty() { vec![OutputFormat::Normal] } else { formats };
    Ok(invocation)
}

/// Where a `fio` run happens, from the environment (R5): tools that run `fio` cannot pass
/// elevator's options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FioEnvironment {
    /// `ELEVATOR_FIO_MODE`: `sim` (default), `live` or `kernel`.
    pub(crate) mode: FioMode,
    /// `ELEVATOR_FIO_DEVICE`: the simulated device spec (sim; default the bare `hdd`).
    pub(crate) device: Option<String>,
    /// `ELEVATOR_FIO_SCHEDULER`: the scheduler spec (default `deadline` for sim,
    /// `mq-deadline` for live, the device's current one for kernel).
    pub(crate) scheduler: Option<String>,
    /// `ELEVATOR_FIO_TARGET`: the file or block device of a live run, the block device of a
    /// kernel run (default: the jobs' `filename`).
    pub(crate) target: Option<PathBuf>,
    /// `ELEVATOR_FIO_SEED`: the simulation's seed (default 1).
    pub(crate) seed: u64,
}

/// The three ways a `fio` job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FioMode {
    /// In the simulator.
    Sim,
    /// Live, in front of the job's files or devices.
    Live,
    /// On the kernel's own schedulers.
    Kernel,
}

impl FioEnvironment {
    /// Reads the variables through `get` (the process environment in use, a map in tests).
    pub(crate) fn read(get: impl Fn(&str) -> Option<String>) -> Result<FioEnvironment, String> {
        let mode = match get("ELEVATOR_FIO_MODE").as_deref().map(str::trim) {
            None | Some("") | Some("sim") => FioMode::Sim,
            Some("live") => FioMode::Live,
            Some("kernel") => FioMode::Kernel,
            Some(other) => {
                return Err(format!("ELEVATOR_FIO_MODE=`{other}` (accepted: sim, live, kernel)"));
            }
        };
        let seed = match get("ELEVATOR_FIO_SEED") {
            None => 1,
            Some(text) => text.trim().parse().map_err(|_| {
                format!("ELEVATOR_FIO_SEED=`{text}` (accepted: an integer 0..=2^64-1)")
            })?,
        };
        let nonempty = |name: &str| get(name).filter(|value| !value.trim().is_empty());
        Ok(FioEnvironment {
            mode,
            device: nonempty("ELEVATOR_FIO_DEVICE"),
            scheduler: nonempty("ELEVATOR_FIO_SCHEDULER"),
            target: nonempty("ELEVATOR_FIO_TARGET").map(PathBuf::from),
            seed,
        })
    }
}

/// Whether the program was invoked through a link (or copy) named `fio`: then its whole
/// command line is fio's.
pub(crate) fn invoked_as_fio(program: &std::ffi::OsStr) -> bool {
    std::path::Path::new(program).file_name().is_some_and(|name| name == "fio")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    // Proves PerfKitBenchmarker's command line splits as fio reads it: front-end flags out,
    // job options kept in order for the job parser, the rest job files.
    #[test]
    fn splits_flags_job_options_and_files() {
        let invocation = split(&[
            "--output-format=json",
            "--random_generator=tausworthe64",
            "--filename=/dev/sdb",
            "job.fio",
            "--output",
            "out.json",
        ])
        .unwrap();
        assert_eq!(invocation.formats, vec![OutputFormat::Json]);
        assert_eq!(invocation.output, Some(PathBuf::from("out.json")));
        assert_eq!(
            invocation.job_options,
            vec!["--random_generator=tausworthe64", "--filename=/dev/sdb"]
        );
        assert_eq!(invocation.job_files, vec![PathBuf::from("job.fio")]);
    }

    // Proves getopt's rules over the shared namespace: an exact name wins, a unique prefix of
    // a job option is written out in full, an ambiguous or unknown one is refused, a flag
    // without a value and a value on a flag that takes none are refused.
    #[test]
    fn prefixes_resolve_over_flags_and_job_options() {
        let invocation = split(&["--name=a", "--time_bas", "--runt=2"]).unwrap();
        assert_eq!(invocation.job_options, vec!["--name=a", "--time_based", "--runtime=2"]);
        assert!(split(&["--parse-on"]).unwrap().parse_only);
        // `--output` is exact although `--output-format` starts with it.
        assert_eq!(split(&["--output=x"]).unwrap().output, Some(PathBuf::from("x")));
        assert!(split(&["--outp"]).unwrap_err().contains("ambiguous"));
        assert!(split(&["--no-such-option"]).unwrap_err().contains("unrecognized"));
        assert!(split(&["--output"]).unwrap_err().contains("requires an argument"));
        assert!(split(&["--minimal=1"]).unwrap_err().contains("doesn't allow"));
        assert!(split(&["-x"]).unwrap_err().contains("unrecognized"));
    }

    // Proves the format list: comma lists, `--minimal` as terse, `json+` standing for `json`,
    // repeats dropped, `normal` by default, unknown names refused with the accepted ones.
    #[test]
    fn output_formats_follow_fio() {
        assert_eq!(split::<&str>(&[]).unwrap().formats, vec![OutputFormat::Normal]);
        let invocation = split(&["--output-format=json,normal,json+", "--minimal"]).unwrap();
        assert_eq!(
            invocation.formats,
            vec![OutputFormat::Normal, OutputFormat::JsonPlus, OutputFormat::Terse]
        );
        assert!(split(&["--output-format=xml"]).unwrap_err().contains("accepted: normal"));
        assert!(split(&["--terse-version=2"]).unwrap_err().contains("accepted: 3"));
        assert_eq!(
            split(&["--section=a", "--section", "b"]).unwrap().sections,
            vec!["a".to_owned(), "b".to_owned()]
        );
    }

    // Proves the environment picks the mode, device, target and seed, with sim and seed 1 by
    // default, and names a bad value with what is accepted.
    #[test]
    fn the_environment_chooses_the_mode() {
        let none = FioEnvironment::read(|_| None).unwrap();
        assert_eq!((none.mode, none.seed, none.device), (FioMode::Sim, 1, None));
        let set = FioEnvironment::read(|name| match name {
            "ELEVATOR_FIO_MODE" => Some("live".into()),
            "ELEVATOR_FIO_SEED" => Some("7".into()),
            "ELEVATOR_FIO_DEVICE" => Some("hdd:rpm=15000".into()),
            "ELEVATOR_FIO_TARGET" => Some("/dev/loop7".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(set.mode, FioMode::Live);
        assert_eq!(set.target.as_deref(), Some(Path::new("/dev/loop7")));
        assert_eq!(none.target, None);
        assert_eq!(set.seed, 7);
        assert_eq!(set.device.as_deref(), Some("hdd:rpm=15000"));
        let bad = FioEnvironment::read(|name| (name == "ELEVATOR_FIO_MODE").then(|| "x".into()));
        assert!(bad.unwrap_err().contains("accepted: sim, live, kernel"));
    }

    // Proves a link named `fio` is recognised by its file name, wherever it lives.
    #[test]
    fn a_link_named_fio_is_fio() {
        assert!(invoked_as_fio(std::ffi::OsStr::new("/usr/local/bin/fio")));
        assert!(invoked_as_fio(std::ffi::OsStr::new("fio")));
        assert!(!invoked_as_fio(std::ffi::OsStr::new("/usr/bin/elevator")));
        assert!(!invoked_as_fio(std::ffi::OsStr::new("fio-3")));
    }
}

/// What went wrong in a `fio` run, with fio's exit code (§1.8: 1 for bad input).
#[derive(Debug)]
pub(crate) struct FioFailure {
    /// The message for stderr.
    pub(crate) message: String,
    /// The exit code.
    pub(crate) code: u8,
}

impl FioFailure {
    fn input(message: impl Into<String>) -> FioFailure {
        FioFailure { message: message.into(), code: 1 }
    }
}

/// The job-file environment: the same as `elevator sim FILE.fio` reads files with, so that a
/// file means the same run through either door.
fn job_env() -> elevator_workload::fio::FioEnv {
    elevator_workload::fio::FioEnv {
        page_size_bytes: 4096,
        memory_mib: 1024,
        cpus: 1,
        vars: std::env::vars().collect(),
    }
}

/// Runs fio's command line `args` (without the program name), writing fio's outputs to
/// `stdout` or `--output`. Nothing goes to stderr on success (R6): the caller prints the
/// failure's message.
pub(crate) fn run(args: &[String], stdout: &mut dyn std::io::Write) -> Result<(), FioFailure> {
    let invocation = split(args).map_err(|problem| FioFailure::input(format!("fio: {problem}")))?;
    let write = |stdout: &mut dyn std::io::Write, text: &str| {
        stdout.write_all(text.as_bytes()).map_err(|error| FioFailure {
            message: format!("fio: writing the output: {error}"),
            code: 1,
        })
    };
    if invocation.version {
        return write(
            stdout,
            &format!("{} (elevator {})\n", FIO_VERSION, env!("CARGO_PKG_VERSION")),
        );
    }
    if invocation.help {
        return write(stdout, HELP);
    }
    if let Some(option) = &invocation.command_help {
        return write(stdout, &command_help(option.as_deref())?);
    }
    let environment =
        FioEnvironment::read(|name| std::env::var(name).ok()).map_err(FioFailure::input)?;
    let files: Vec<&std::path::Path> =
        invocation.job_files.iter().map(std::path::PathBuf::as_path).collect();
    if files.is_empty()
        && !invocation.job_options.iter().any(|option| option.starts_with("--name="))
    {
        return Err(FioFailure::input("fio: no jobs: give a job file or --name=JOB options"));
    }
    let jobs = elevator_workload::fio::parse_invocation(
        &invocation.job_options,
        &files,
        &invocation.sections,
        &job_env(),
    )
    .map_err(|error| {
        FioFailure::input(match &error.option {
            Some(option) => format!("fio: {}: option `{option}`: {}", error.at, error.message),
            None => format!("fio: {}: {}", error.at, error.message),
        })
    })?;
    if jobs.jobs.is_empty() {
        return Err(FioFailure::input("fio: no jobs to run (--section left none)"));
    }
    if invocation.show_command {
        return write(stdout, &show_command(&jobs));
    }
    let name = invocation
        .job_files
        .first()
        .map_or_else(|| "command line".to_owned(), |path| path.display().to_string());
    let workload = elevator_workload::WorkloadSpec::from_fio_jobs(&name, &jobs)
        .map_err(|error| FioFailure::input(format!("fio: {error}")))?;
    if invocation.parse_only {
        return Ok(());
    }
    let (report, failure) = match environment.mode {
        FioMode::Sim if environment.target.is_some() => {
            // Never silently ignored: a simulated run has no real target.
            return Err(FioFailure::input(
                "fio: ELEVATOR_FIO_TARGET names a real target, which the simulator (the default \
                 ELEVATOR_FIO_MODE=sim) does not use: set ELEVATOR_FIO_MODE=live or kernel",
            ));
        }
        FioMode::Sim => (simulate(&environment, &workload)?, None),
        FioMode::Live | FioMode::Kernel => run_real(&environment, workload, &jobs)?,
    };
    let setup = crate::sim::fio_setup_of(&jobs)
        .map_err(|error| FioFailure::input(format!("fio: {error:#}")))?;
    let formats: Vec<crate::sim::FioFormat> = invocation
        .formats
        .iter()
        .map(|format| match format {
            OutputFormat::Normal => crate::sim::FioFormat::Normal,
            OutputFormat::Terse => crate::sim::FioFormat::Terse,
            OutputFormat::Json => crate::sim::FioFormat::Json,
            OutputFormat::JsonPlus => crate::sim::FioFormat::JsonPlus,
        })
        .collect();
    // Log files go where fio writes them: the working directory, under each log's prefix
    // (which may hold a path).
    if setup.jobs.iter().any(|job| job.logs.any()) {
        elevator_report::fio::write_logs(&report.runs[0], &setup, std::path::Path::new("."), None)
            .map_err(|error| FioFailure { message: format!("fio: log files: {error}"), code: 1 })?;
    }
    let text = crate::sim::fio_text(&report, &report.runs[0], &formats, &setup)
        .map_err(|error| FioFailure { message: format!("fio: {error:#}"), code: 1 })?;
    let written = match &invocation.output {
        None => stdout.write_all(&text).map_err(|error| FioFailure {
            message: format!("fio: writing the output: {error}"),
            code: 1,
        }),
        Some(path) => std::fs::write(path, &text).map_err(|error| FioFailure {
            message: format!("fio: writing {}: {error}", path.display()),
            code: 1,
        }),
    };
    written?;
    // fio writes its output for a job that met an I/O error, then exits non-zero.
    match failure {
        Some(failure) => Err(FioFailure { message: format!("fio: {failure}"), code: 1 }),
        None => Ok(()),
    }
}

/// One live or kernel run of `workload` (the parsed `jobs`) as the environment says:
/// `elevator run`'s and `elevator kernel compare`'s engines, quietly. Returns the report and
/// why the run failed, if an I/O failed.
fn run_real(
    environment: &FioEnvironment,
    workload: elevator_workload::WorkloadSpec,
    jobs: &elevator_workload::fio::FioJobFile,
) -> Result<(elevator_report::Report, Option<String>), FioFailure> {
    let live = environment.mode == FioMode::Live;
    let mode_name = if live { "live" } else { "kernel" };
    if environment.device.is_some() {
        // Never silently ignored: it names a simulated device, and nothing is simulated here.
        return Err(FioFailure::input(format!(
            "fio: ELEVATOR_FIO_DEVICE is the simulated device, which ELEVATOR_FIO_MODE={mode_name} \
             does not use: name the real target with ELEVATOR_FIO_TARGET or the jobs' filename"
        )));
    }
    let mode =
        if live { crate::fio_live::LiveMode::Run } else { crate::fio_live::LiveMode::Kernel };
    let job = crate::fio_live::from_parsed(workload, jobs, mode)
        .map_err(|error| FioFailure::input(format!("fio: {error:#}")))?;
    let given = environment.target.as_deref();
    let result = if live {
        let scheduler = elevator_sched::SchedulerSpec::parse(
            environment.scheduler.as_deref().unwrap_or(DEFAULT_LIVE_SCHEDULER),
        )
        .map_err(|error| FioFailure::input(format!("fio: ELEVATOR_FIO_SCHEDULER: {error}")))?;
        crate::run::run_fio_live(&job, given, &scheduler, environment.seed)
    } else {
        crate::kernel::run_fio_kernel(
            &job,
            given,
            environment.scheduler.as_deref(),
            environment.seed,
        )
    };
    result.map_err(|error| FioFailure { message: format!("fio: {error:#}"), code: 1 })
}

/// The scheduler a live `fio` run puts in front of its target without
/// `ELEVATOR_FIO_SCHEDULER`: mq-deadline, what current kernels choose for most devices.
const DEFAULT_LIVE_SCHEDULER: &str = "mq-deadline";

/// One simulated run of `workload` as the environment says.
fn simulate(
    environment: &FioEnvironment,
    workload: &elevator_workload::WorkloadSpec,
) -> Result<elevator_report::Report, FioFailure> {
    let input = |error: &dyn std::fmt::Display| FioFailure::input(format!("fio: {error}"));
    let device = elevator_sim::DeviceSpec::parse(environment.device.as_deref().unwrap_or("hdd"))
        .map_err(|error| input(&error))?;
    let scheduler = elevator_sched::SchedulerSpec::parse(
        environment.scheduler.as_deref().unwrap_or(DEFAULT_SCHEDULER),
    )
    .map_err(|error| input(&error))?;
    let config = elevator_sim::SimConfig::new(environment.seed, device);
    let run = elevator_sim::run(&config, &scheduler, workload)
        .map_err(|error| FioFailure { message: format!("fio: {error}"), code: 1 })?;
    let mut report = elevator_report::Report::new(environment.seed, env!("CARGO_PKG_VERSION"));
    report.runs.push(run);
    Ok(report)
}

/// The scheduler a `fio` run uses without `ELEVATOR_FIO_SCHEDULER`: the default host's
/// kernel default (2.6's elevator=... default for the simulated 2005 host is anticipatory;
/// deadline is what the study's servers ran and what most 2.6 distributions chose).
const DEFAULT_SCHEDULER: &str = "deadline";

/// Each job as command-line options (`--showcmd`, fio's `show_cmd`): one `fio` line per job
/// with every option it resolved to, globals included.
fn show_command(jobs: &elevator_workload::fio::FioJobFile) -> String {
    let mut text = String::new();
    for job in &jobs.jobs {
        text.push_str("fio");
        text.push_str(&format!(" --name={}", job.section));
        for option in job.options.iter().filter(|option| option.name != "name") {
            match &option.written {
                Some(value) => text.push_str(&format!(" --{}={value}", option.name)),
                None => text.push_str(&format!(" --{}", option.name)),
            }
        }
        text.push('\n');
    }
    text
}

/// `--cmdhelp`: every option with its type, or one option's.
fn command_help(option: Option<&str>) -> Result<String, FioFailure> {
    let describe = |spec: &catalog::OptionSpec| {
        let aliases = if spec.aliases.is_empty() {
            String::new()
        } else {
            format!(" (alias {})", spec.aliases.join(", "))
        };
        format!("{:<24} {:?}{aliases}\n", spec.name, spec.value_type)
    };
    match option {
        None | Some("all") => Ok(catalog::OPTIONS.iter().map(describe).collect()),
        Some(name) => catalog::lookup(name).map(describe).ok_or_else(|| {
            FioFailure::input(format!("fio: no option `{name}` (--cmdhelp lists them)"))
        }),
    }
}

/// `--help`.
const HELP: &str = "\
elevator fio: fio's command line, run by elevator (also when invoked as `fio`)

usage: elevator fio [options] [job options] [job files]

  --output=FILE          write the outputs to FILE instead of stdout
  --output-format=LIST   normal, terse, json, json+ (comma list; default normal)
  --minimal              terse output
  --terse-version=3      the only terse version written
  --section=NAME         run only the job section NAME (repeatable)
  --parse-only           parse the jobs and check them, run nothing
  --showcmd              print each job as command-line options
  --version              print the fio version whose output layout is followed
  --cmdhelp[=OPTION]     list job options, or one
  --name=JOB --OPT=VAL   command-line jobs, as fio's

Where it runs (tools cannot pass elevator's options; see docs/fio-compat.md):
  ELEVATOR_FIO_MODE       sim (default): in the simulator;
                          live: elevator's scheduler in front of a real file or block device
                          (as `elevator run`; jobs must say direct=1);
                          kernel: on a block device under the kernel's own scheduler (as
                          `elevator kernel compare`; its settings are restored afterwards)
  ELEVATOR_FIO_DEVICE     sim: the simulated device spec (default hdd)
  ELEVATOR_FIO_TARGET     live: the file or block device; kernel: the block device
                          (default: the jobs' filename)
  ELEVATOR_FIO_SCHEDULER  sim: default deadline; live: default mq-deadline; kernel: the
                          kernel's scheduler[:tunable=value,...] (default: the device's
                          current one, left as it is)
  ELEVATOR_FIO_SEED       the seed of the jobs' random streams (default 1)
";
