//! `fio:FILE`: a fio job file run in the simulator (issue 17; `/work/shared/specs/fio-compat.md`
//! §2.1 option catalog and defaults, §1.7 last-wins, §8).
//!
//! Each runnable job becomes a [`job`](crate::job) workload: its options are mapped onto the
//! `job` keys that carry the same meaning, with fio's defaults (§2.1) for what the file leaves
//! unset — `ioengine=psync` (depth 1) and `direct=0` (buffered), where `job`'s own defaults
//! differ. Jobs run in groups as fio runs them: every job of a group at once (one phase, the
//! issuers of all its jobs together), and a job with `stonewall`/`wait_for_previous` or
//! `new_group` starts a new group, run after the previous one finished.
//!
//! An option the simulator cannot honour is refused with its file, line and name; it is
//! never silently ignored. Options that change only fio's reports or names (`name`,
//! `description`, `group_reporting`) and those whose behaviour `job` already has
//! (`norandommap`, `randrepeat`, `thread`) are accepted.
//!
//! # Deviations from fio
//!
//! * `size` as a percentage, `rw=...:N`, trims, per-direction block sizes that
//!   differ, and every option outside the table in [`map_option`] are refused rather than run.
//! * `filename` names a simulated device (`sdb` or `/dev/sdb`) when every name is one;
//!   otherwise, and with `directory`, the job's files are regular files of `size` bytes on the
//!   first device's filesystem, laid out before the run (fio lays them out by writing them
//!   before the job starts; its `nrfiles`, `filesize` and several directories are refused).
//!   A job with neither `filename` nor `directory` gets fio's `NAME.CLONE.0` files (fio's
//!   working directory is the first device's filesystem here).
//! * fio's random map is not kept (`job`'s documented deviation: `norandommap=1` always).
//! * A group's jobs all start at once; fio starts them within a few milliseconds of each other.

use elevator_core::{Duration, ParamError, Prng, units};

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::fio::{FioJob, FioJobFile, FioValue, Location};
use crate::job::{GroupExit, JobConfig};
use crate::{FileSpec, PhasePlan, Place, Target, WorkloadPlan, WorkloadSpec};

/// One job of the file, as a `job` workload.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FioRunJob {
    /// fio's job name.
    pub(crate) name: String,
    /// Whether it waits for every earlier job (`stonewall`, `wait_for_previous`): a new phase.
    pub(crate) new_group: bool,
    /// Its reporting group (fio's `groupid`): `stonewall` and `new_group` start a new one;
    /// `new_group` alone does not wait (fio-compat.md §2.1 "Jobs and groups"). For the report
    /// writers.
    pub(crate) group: u32,
    /// `exitall`: when it finishes, the rest of its phase stops (fio's `exit_what`: the group,
    /// the stonewall set and all running jobs are one phase here).
    pub(crate) exitall: bool,
    /// Its mapped workload.
    pub(crate) spec: WorkloadSpec,
    /// Where its section starts, for errors found when it is planned.
    pub(crate) at: Location,
    /// `filename`'s names as written (devices or regular files), and where.
    pub(crate) filenames: Option<(Vec<String>, Location)>,
    /// `directory`, where fio puts the job's regular files.
    pub(crate) directory: Option<String>,
    /// `size`: a regular file's size (fio lays files out at this size first).
    pub(crate) size_bytes: Option<u64>,
    /// `numjobs`.
    pub(crate) clones: u32,
    /// Options that change only fio's reports and logs (`write_bw_log`, `log_avg_msec`,
    /// `percentile_list`, `per_job_logs`, ...), as written, in file order: for the report
    /// writers (fio-compat.md §4). They do not change the simulated I/O.
    pub(crate) reporting: Vec<(&'static str, FioValue)>,
    /// `wait_for`: the earlier job this one starts after.
    pub(crate) wait_for: Option<(String, Location)>,
    /// `ramp_time`: I/O done before measuring, run as a phase of its own.
    pub(crate) ramp: Option<Duration>,
}

/// A job file ready to plan.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FioRun {
    /// The file as given.
    pub(crate) path: String,
    /// Its jobs, in order.
    pub(crate) jobs: Vec<FioRunJob>,
}

fn refuse(at: &Location, problem: String) -> ParamError {
    ParamError::Impossible { component: format!("fio {at}"), key: "option", problem }
}

/// Options that change only fio's own reports and logs, carried on the planned job
/// ([`FioRunJob::reporting`]) for the report writers (fio-compat.md §2.1 "Logging and
/// reporting", §4): they do not change the I/O.
const REPORTING: &[&str] = &[
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "log_hist_msec",
    "log_hist_coarseness",
    "log_max_value",
    "log_window_value",
    "per_job_logs",
    "log_offset",
    "log_prio",
    "log_issue_time",
    "percentile_list",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "significant_figures",
    "unified_rw_reporting",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "gtod_reduce",
    "bwavgtime",
    "iopsavgtime",
    "disk_util",
    "group_reporting",
    "description",
    "name",
    "stats",
];

/// Options that change how fio checks or fills data, not which I/O it does: the simulator
/// moves no data, so nothing is checked (fio-compat.md §2.1 "Trim, verify, buffers": N).
const DATA_ONLY: &[&str] = &[
    "verify_pattern",
    "verify_interval",
    "verify_offset",
    "verify_fatal",
    "verify_dump",
    "verify_async",
    "zero_buffers",
    "refill_buffers",
    "scramble_buffers",
    "buffer_pattern",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    "dedupe_global",
];

/// What `job` keys (and values) an fio option becomes; empty for an option with no effect
/// on the I/O. Errors name the option; the caller adds where it was written.
fn map_option(name: &str, value: &FioValue) -> Result<Vec<(&'static str, String)>, String> {
    let not_honoured = || {
        Err(format!(
            "`{name}={value}` is not honoured by the simulator, so the job cannot run as fio would run it"
        ))
    };
    let int = |value: &FioValue| match value {
        FioValue::Int(n) => Some(*n),
        FioValue::Float(x) if x.fract() == 0.0 && *x >= 0.0 => Some(*x as u64),
        _ => None,
    };
    // One value for both directions, or the same for reads and writes (and trims, if given).
    let single = |value: &FioValue| -> Option<FioValue> {
        match value {
            FioValue::PerDirection(parts) => {
                let given: Vec<&FioValue> = parts.iter().take(3).flatten().collect();
                match given.as_slice() {
                    [one] if parts.len() == 1 => Some((*one).clone()),
                    [first, rest @ ..]
                        if parts.iter().take(3).all(Option::is_some)
                            && rest.iter().all(|other| other == first) =>
                    {
                        Some((*first).clone())
                    }
                    [read, write] if read == write => Some((*read).clone()),
                    _ => None,
                }
            }
            other => Some(other.clone()),
        }
    };
    let time = |value: &FioValue| match value {
        FioValue::TimeNs(ns) => Some(Duration::from_nanos(*ns).to_string()),
        _ => None,
    };
    let flag = |value: &FioValue| match value {
        FioValue::Bool(on) => Some(u8::from(*on).to_string()),
        FioValue::Int(n) if *n <= 1 => Some(n.to_string()),
        _ => None,
    };
    let one = |key: &'static str, text: Option<String>| match text {
        Some(text) => Ok(vec![(key, text)]),
        None => not_honoured(),
    };
    if REPORTING.contains(&name) || DATA_ONLY.contains(&name) {
        return Ok(Vec::new());
    }
    match name {
        // Ordering (handled by the caller), and options whose effect the simulator has by
        // construction: fio's `thread` (threads or processes) and the tiobench profile's
        // `threads` change no I/O; `randrepeat` asks for a repeatable sequence, which a
        // simulation always is (seeded from the run's seed).
        "stonewall" | "wait_for_previous" | "new_group" | "wait_for" | "thread" | "threads"
        | "exitall" | "exit_what" | "randrepeat" => Ok(Vec::new()),
        "rw" => match value {
            FioValue::Choice { value: rw, suffix }
                if matches!(
                    rw.as_str(),
                    "read"
                        | "write"
                        | "randread"
                        | "randwrite"
                        | "rw"
                        | "readwrite"
                        | "randrw"
                        | "trim"
                        | "randtrim"
                        | "trimwrite"
                ) =>
            {
                let mut keys = vec![("rw", rw.clone())];
                if let Some(step) = suffix {
                    keys.push(("rw_step", step.trim().to_owned()));
                }
                Ok(keys)
            }
            _ => not_honoured(),
        },
        "bs" => one("bs", single(value).as_ref().and_then(int).map(|b| b.to_string())),
        "ba" => one("blockalign", single(value).as_ref().and_then(int).map(|b| b.to_string())),
        "bssplit" => match single(value) {
            Some(FioValue::Split(entries)) => {
                let entries: Vec<String> =
                    entries.iter().map(|(bytes, percent)| format!("{bytes}/{percent}")).collect();
                Ok(vec![("bssplit", entries.join(":"))])
            }
            _ => not_honoured(),
        },
        "bsrange" => match single(value) {
            Some(FioValue::Range { lo, hi }) => Ok(vec![("bsrange", format!("{lo}-{hi}"))]),
            _ => not_honoured(),
        },
        // zbd needs a zoned device model (write pointers, zone resets): refused below.
        "zonemode" => match value {
            FioValue::Choice { value: mode, .. } if mode == "strided" => Ok(Vec::new()),
            _ => not_honoured(),
        },
        "zonesize" | "zonerange" | "zoneskip" => {
            one(canonical(name), int(value).map(|n| n.to_string()))
        }
        "cmdprio_percentage" | "cmdprio_class" | "cmdprio" => {
            one(canonical(name), single(value).as_ref().and_then(int).map(|n| n.to_string()))
        }
        "size" | "io_size" | "offset_increment" | "iodepth" | "numjobs" | "rwmixread"
        | "rwmixwrite" | "prio" | "prioclass" | "loops" | "fsync" | "verify_backlog"
        | "number_ios" | "thinktime_blocks" => {
            one(canonical(name), int(value).map(|n| n.to_string()))
        }
        // fdatasync skips the metadata fsync also writes; the simulator's sync is one kind.
        "fdatasync" => one("fsync", int(value).map(|n| n.to_string())),
        "rate" | "rate_min" => {
            one(canonical(name), single(value).as_ref().and_then(int).map(|n| n.to_string()))
        }
        "rate_iops" => {
            one("rate_iops", single(value).as_ref().and_then(int).map(|n| n.to_string()))
        }
        // A bare rate_cycle is in milliseconds (fio's).
        "rate_cycle" => one("rate_cycle", int(value).map(|ms| format!("{ms}ms"))),
        "percentage_random" => {
            one("percentage_random", single(value).as_ref().and_then(int).map(|n| n.to_string()))
        }
        "offset" => match value {
            FioValue::Int(bytes) => Ok(vec![("offset", bytes.to_string())]),
            FioValue::Percent(percent) => Ok(vec![("offset", format!("{percent}%"))]),
            _ => not_honoured(),
        },
        "runtime" | "thinktime" => one(canonical(name), time(value)),
        // `lo-hi` is drawn per clone (fio's `startdelay` range).
        "startdelay" => match value {
            FioValue::TimeNs(ns) => Ok(vec![("startdelay", Duration::from_nanos(*ns).to_string())]),
            FioValue::TimeRangeNs { lo_ns, hi_ns } => Ok(vec![(
                "startdelay",
                format!("{}-{}", Duration::from_nanos(*lo_ns), Duration::from_nanos(*hi_ns)),
            )]),
            _ => not_honoured(),
        },
        // The busy part of the pause: the pause is as long, and the simulator models no CPU.
        "thinktime_spin" => match time(value) {
            Some(_) => Ok(Vec::new()),
            None => not_honoured(),
        },
        "time_based" | "norandommap" | "end_fsync" => one(canonical(name), flag(value)),
        // Files are closed once, at the end of the job, in the simulator.
        "fsync_on_close" => one("end_fsync", flag(value)),
        "direct" | "buffered" => match value {
            FioValue::Bool(on) => {
                let direct = if name == "buffered" { !on } else { *on };
                Ok(vec![("direct", u8::from(direct).to_string())])
            }
            _ => not_honoured(),
        },
        "random_distribution" => match value {
            FioValue::Choice { value: kind, suffix }
                if matches!(kind.as_str(), "random" | "zipf" | "pareto" | "normal" | "zoned") =>
            {
                let text = match suffix {
                    Some(suffix) => format!("{kind}:{suffix}"),
                    None => kind.clone(),
                };
                Ok(vec![("random_distribution", text)])
            }
            _ => not_honoured(),
        },
        "rate_process" | "thinktime_blocks_type" => match value {
            FioValue::Choice { value: choice, suffix: None } => {
                Ok(vec![(canonical(name), choice.clone())])
            }
            _ => not_honoured(),
        },
        // The submitting thread changes no I/O timing in a simulation, which models no CPU.
        "io_submit_mode" => match value {
            FioValue::Choice { value: mode, .. } if mode == "inline" || mode == "offload" => {
                Ok(Vec::new())
            }
            _ => not_honoured(),
        },
        "verify" | "do_verify" => match value {
            FioValue::Choice { value: kind, .. } => {
                Ok(vec![("verify", u8::from(kind != "0" && kind != "none").to_string())])
            }
            FioValue::Bool(on) => Ok(vec![("verify", u8::from(*on).to_string())]),
            _ => not_honoured(),
        },
        "ioengine" => match value {
            FioValue::Choice { value: engine, .. }
                if matches!(
                    engine.as_str(),
                    "io_uring" | "libaio" | "posixaio" | "psync" | "sync" | "pvsync" | "pvsync2"
                ) =>
            {
                Ok(vec![("ioengine", engine.clone())])
            }
            _ => not_honoured(),
        },
        _ => not_honoured(),
    }
}

/// `name` as a `'static` `job` key (the keys `map_option` passes through unchanged).
fn canonical(name: &str) -> &'static str {
    crate::job::KEYS.iter().find(|key| key.key == name).map_or("", |key| key.key)
}

/// Maps one job; errors name its file, line and option.
fn map_job(job: &FioJob) -> Result<FioRunJob, ParamError> {
    job.runnable().map_err(|problem| refuse(&job.at, problem))?;
    // fio's defaults where `job`'s differ (§2.1: ioengine psync, direct 0, the random map).
    let mut keys: Vec<(&'static str, String)> =
        vec![("ioengine", "psync".into()), ("direct", "0".into()), ("norandommap", "0".into())];
    let (mut new_group, mut starts_group, mut exitall) = (false, false, false);
    let (mut filenames, mut directory, mut size_bytes, mut clones) = (None, None, None, 1);
    let (mut reporting, mut wait_for, mut ramp, mut filesize) = (Vec::new(), None, None, None);
    let mut verify_off = false;
    for (index, option) in job.options.iter().enumerate() {
        // The last occurrence wins (§1.7): map only that one.
        if job.options[index + 1..].iter().any(|later| later.name == option.name) {
            continue;
        }
        let on = !matches!(option.value, FioValue::Bool(false));
        if matches!(option.name, "stonewall" | "wait_for_previous") && on {
            new_group = true;
        }
        if matches!(option.name, "stonewall" | "wait_for_previous" | "new_group") && on {
            starts_group = true;
        }
        if option.name == "exitall" {
            exitall = on;
            continue;
        }
        if option.name == "exit_what" {
            continue;
        }
        match (option.name, &option.value) {
            ("filename", FioValue::List(names)) => {
                filenames = Some((names.clone(), option.at.clone()));
                continue;
            }
            ("filename", FioValue::Str(name)) => {
                filenames = Some((vec![name.clone()], option.at.clone()));
                continue;
            }
            ("directory", FioValue::Str(dir)) => {
                directory = Some(dir.clone());
                continue;
            }
            // Several directories (fio spreads files over them) stay refused below.
            ("directory", FioValue::List(dirs)) if dirs.len() == 1 => {
                directory = Some(dirs[0].clone());
                continue;
            }
            ("size", FioValue::Int(bytes)) => size_bytes = Some(*bytes),
            // fio's per-file size; `size` then defaults to it (one file per job here).
            ("filesize", FioValue::Int(bytes))
            | ("filesize", FioValue::Range { lo: bytes, hi: _ }) => {
                if let FioValue::Range { lo, hi } = &option.value
                    && lo != hi
                {
                    return Err(refuse(
                        &option.at,
                        format!("`filesize={lo}-{hi}`: a random size per file is not supported"),
                    ));
                }
                filesize = Some(*bytes);
                continue;
            }
            ("wait_for", FioValue::Str(name)) => {
                wait_for = Some((name.clone(), option.at.clone()));
            }
            ("do_verify", FioValue::Bool(false)) => verify_off = true,
            ("ramp_time", FioValue::TimeNs(ns)) => {
                ramp = (*ns > 0).then(|| Duration::from_nanos(*ns));
                continue;
            }
            (name, value) if REPORTING.contains(&name) => reporting.push((name, value.clone())),
            ("numjobs", FioValue::Int(count)) => clones = u32::try_from(*count).unwrap_or(u32::MAX),
            _ => {}
        }
        let mapped = map_option(option.name, &option.value)
            .map_err(|problem| refuse(&option.at, problem))?;
        for (key, value) in mapped {
            keys.retain(|(given, _)| *given != key);
            keys.push((key, value));
        }
    }
    let strided = job.options.iter().rev().find(|option| option.name == "zonemode").is_some_and(
        |option| matches!(&option.value, FioValue::Choice { value, .. } if value == "strided"),
    );
    if !strided && let Some(option) = job.options.iter().find(|option| option.name == "zonesize") {
        return Err(refuse(
            &option.at,
            "zonesize needs zonemode=strided (fio refuses zonemode=none with a zonesize)".into(),
        ));
    }
    if verify_off {
        keys.retain(|(given, _)| *given != "verify");
    }
    if let Some(bytes) = filesize {
        if filenames.as_ref().is_some_and(|(names, _)| names.len() > 1) {
            return Err(refuse(
                &job.at,
                format!("job `{}`: filesize with several filenames is not supported", job.name()),
            ));
        }
        if size_bytes.is_none() {
            keys.push(("size", bytes.to_string()));
        }
        size_bytes = Some(bytes);
    }
    let text: Vec<String> = keys.iter().map(|(key, value)| format!("{key}={value}")).collect();
    let spec = WorkloadSpec::parse(&format!("job:{}", text.join(",")))
        .map_err(|error| refuse(&job.at, format!("job `{}`: {error}", job.name())))?;
    Ok(FioRunJob {
        name: job.name().to_owned(),
        new_group,
        group: u32::from(starts_group),
        exitall,
        spec,
        at: job.at.clone(),
        filenames,
        directory,
        size_bytes,
        clones,
        reporting,
        wait_for,
        ramp,
    })
}

impl FioRunJob {
    /// Per clone, the places its I/O goes to: `filename`'s devices when every name is one
    /// (`sdb` or `/dev/sdb`), else regular files — `filename`'s, shared by the clones, or
    /// fio's `NAME.CLONE.0` per clone under `directory` (the working directory without one,
    /// as fio names a job's files) — on the first device's filesystem, added to `files`.
    fn places(
        &self,
        targets: &[Target],
        files: &mut Vec<FileSpec>,
    ) -> Result<Vec<Vec<(Place, Target)>>, ParamError> {
        let device = |name: &str| {
            let name = name.strip_prefix("/dev/").unwrap_or(name);
            targets.iter().position(|target| target.name == name)
        };
        if let (Some((names, at)), None) = (&self.filenames, &self.directory) {
            let devices: Vec<Option<usize>> = names.iter().map(|name| device(name)).collect();
            if devices.iter().all(Option::is_some) {
                let places = devices
                    .into_iter()
                    .flatten()
                    .map(|index| (Place::Device(index), targets[index].clone()))
                    .collect();
                return Ok(vec![places]);
            }
            if let Some(name) =
                names.iter().find(|name| name.starts_with("/dev/") && device(name).is_none())
            {
                let accepted: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
                return Err(refuse(
                    at,
                    format!("filename: no device `{name}` (accepted: {})", accepted.join(", ")),
                ));
            }
        }
        let Some(size_bytes) = self.size_bytes else {
            return Err(refuse(
                &self.at,
                format!("job `{}`: a regular file needs `size` (fio's rule)", self.name),
            ));
        };
        let in_directory = |name: &str| match &self.directory {
            Some(dir) => format!("{}/{name}", dir.trim_end_matches('/')),
            None => name.to_owned(),
        };
        let mut file = |name: String| {
            let index = match files.iter().position(|file| file.name == name) {
                Some(index) => {
                    files[index].size_bytes = files[index].size_bytes.max(size_bytes);
                    index
                }
                None => {
                    files.push(FileSpec { name: name.clone(), device: 0, size_bytes });
                    files.len() - 1
                }
            };
            (Place::File(index), Target { name, capacity_bytes: size_bytes })
        };
        Ok(match &self.filenames {
            Some((names, _)) => vec![names.iter().map(|name| file(in_directory(name))).collect()],
            None => (0..self.clones)
                .map(|clone| vec![file(in_directory(&format!("{}.{clone}.0", self.name)))])
                .collect(),
        })
    }
}

impl FioRun {
    /// Maps every job of `file`, read from `path`.
    pub(crate) fn new(path: &str, file: &FioJobFile) -> Result<FioRun, ParamError> {
        if file.jobs.is_empty() {
            return Err(ParamError::Impossible {
                component: format!("fio {path}"),
                key: "jobs",
                problem: "the file defines no job".into(),
            });
        }
        let mut jobs: Vec<FioRunJob> = file.jobs.iter().map(map_job).collect::<Result<_, _>>()?;
        // Number the reporting groups: each job that starts one adds one.
        let mut group = 0;
        for (index, job) in jobs.iter_mut().enumerate() {
            if index > 0 && job.group == 1 {
                group += 1;
            }
            job.group = group;
        }
        Ok(FioRun { path: path.to_owned(), jobs })
    }

    /// Caps every job (fio-compat.md §0: a documented override so fio's examples run
    /// quickly): `size` and `io_size` at most `max_size_bytes`, and `runtime` at most
    /// `max_runtime` (a job without a runtime gets it, so no job runs longer). Regular files
    /// shrink with the jobs' sizes. `elevator sim FILE.fio --max-size SIZE --max-runtime TIME`.
    pub(crate) fn capped(
        &self,
        max_size_bytes: Option<u64>,
        max_runtime: Option<Duration>,
    ) -> Result<FioRun, ParamError> {
        let mut capped = self.clone();
        for job in &mut capped.jobs {
            let text = job.spec.to_string();
            let body = text.strip_prefix("job:").or_else(|| text.strip_prefix("job")).unwrap_or("");
            let mut keys: Vec<(String, String)> = body
                .split(',')
                .filter_map(|pair| pair.split_once('='))
                .map(|(key, value)| (key.to_owned(), value.to_owned()))
                .collect();
            let size_of = |value: &str| units::parse_size_bytes(value).ok();
            if let Some(max) = max_size_bytes {
                let mut has_size = false;
                for (key, value) in &mut keys {
                    if key == "size" || key == "io_size" {
                        has_size |= key == "size";
                        if size_of(value).is_none_or(|bytes| bytes > max) {
                            *value = max.to_string();
                        }
                    }
                }
                if !has_size {
                    keys.push(("size".into(), max.to_string()));
                }
                job.size_bytes = Some(job.size_bytes.map_or(max, |bytes| bytes.min(max)));
            }
            if let Some(max) = max_runtime {
                let given = keys.iter_mut().find(|(key, _)| key == "runtime");
                match given {
                    Some((_, value)) => {
                        let shorter = units::parse_duration(value, 1_000_000_000)
                            .map_or(true, |time| time > max);
                        if shorter {
                            *value = max.to_string();
                        }
                    }
                    None => keys.push(("runtime".into(), max.to_string())),
                }
                job.ramp = job.ramp.map(|ramp| ramp.min(max));
            }
            let text: Vec<String> =
                keys.iter().map(|(key, value)| format!("{key}={value}")).collect();
            job.spec = WorkloadSpec::parse(&format!("job:{}", text.join(",")))
                .map_err(|error| refuse(&job.at, format!("job `{}` capped: {error}", job.name)))?;
        }
        Ok(capped)
    }

    /// One phase per group; each job's clones are processes numbered after the previous
    /// jobs' in the same phase, and each job draws from its own random stream. A job with
    /// `wait_for=NAME` starts a new phase when NAME's group is the last one (so it starts
    /// after NAME finished), or joins the last group when NAME finished in an earlier one.
    /// A group whose jobs have a `ramp_time` gets a ramp phase first, the same jobs run
    /// time-based for the ramp, whose I/O is reported apart from the measured phase.
    pub(crate) fn plan(&self, targets: &[Target], prng: &Prng) -> Result<WorkloadPlan, ParamError> {
        let mut phases: Vec<PhasePlan> = Vec::new();
        let mut files = Vec::new();
        // Per phase, the jobs in it.
        let mut members: Vec<Vec<usize>> = Vec::new();
        // Per phase, the flag an `exitall` job raises when it finishes.
        let mut exits: Vec<Arc<AtomicBool>> = Vec::new();
        for (index, job) in self.jobs.iter().enumerate() {
            let job_prng = prng.fork_indexed("fio", index as u64);
            let mut new_phase = index == 0 || job.new_group;
            if let Some((name, at)) = &job.wait_for
                && !job.new_group
            {
                let earlier = self.jobs[..index].iter().position(|other| &other.name == name);
                let Some(awaited) = earlier else {
                    return Err(refuse(at, format!("wait_for={name}: no earlier job `{name}`")));
                };
                let last = members.last().expect("a job came before");
                if last.contains(&awaited) {
                    if last.iter().any(|&other| self.jobs[other].name != *name) {
                        return Err(refuse(
                            at,
                            format!(
                                "wait_for={name}: `{name}` runs in a group with other jobs; \
                                 the simulator starts a job after a whole group, not one job of it"
                            ),
                        ));
                    }
                    new_phase = true;
                }
            }
            if new_phase {
                phases.push(PhasePlan {
                    name: String::new(),
                    issuers: Vec::new(),
                    stonewall: false,
                });
                members.push(Vec::new());
                exits.push(Arc::new(AtomicBool::new(false)));
            }
            members.last_mut().expect("a phase was pushed").push(index);
            let phase = phases.last_mut().expect("a phase was pushed");
            let first_process = phase.issuers.len() as u32;
            let places = job.places(targets, &mut files)?;
            let mut config = JobConfig::from_params(&job.spec.params)
                .map_err(|error| refuse(&job.at, format!("job `{}`: {error}", job.name)))?;
            config.group_exit = Some(GroupExit {
                flag: exits.last().expect("a phase was pushed").clone(),
                sets: job.exitall,
            });
            let plan = config
                .plan_as(&job.spec.params, targets, &job_prng, first_process, &job.name, &places)
                .map_err(|error| refuse(&job.at, format!("job `{}`: {error}", job.name)))?;
            files.extend(plan.files);
            for planned in plan.phases {
                if !phase.name.is_empty() {
                    phase.name.push('+');
                }
                phase.name.push_str(&job.name);
                phase.issuers.extend(planned.issuers);
            }
        }
        let mut out = Vec::with_capacity(phases.len());
        for (phase, jobs) in phases.into_iter().zip(&members) {
            if let Some(ramp_phase) = self.ramp_phase(jobs, targets, prng, &mut files)? {
                out.push(ramp_phase);
            }
            out.push(phase);
        }
        Ok(WorkloadPlan { files, phases: out })
    }

    /// The ramp phase of a group whose jobs all have the same `ramp_time`: the same jobs,
    /// time-based for the ramp, from streams of their own. Mixed ramps in a group are refused.
    fn ramp_phase(
        &self,
        jobs: &[usize],
        targets: &[Target],
        prng: &Prng,
        files: &mut Vec<FileSpec>,
    ) -> Result<Option<PhasePlan>, ParamError> {
        let ramps: Vec<Option<Duration>> = jobs.iter().map(|&j| self.jobs[j].ramp).collect();
        let Some(ramp) = ramps[0] else {
            if let Some(&j) = jobs.iter().find(|&&j| self.jobs[j].ramp.is_some()) {
                return Err(refuse(
                    &self.jobs[j].at,
                    format!(
                        "job `{}`: ramp_time differs within its group (the simulator ramps a whole group)",
                        self.jobs[j].name
                    ),
                ));
            }
            return Ok(None);
        };
        if let Some(&j) = jobs.iter().find(|&&j| self.jobs[j].ramp != Some(ramp)) {
            return Err(refuse(
                &self.jobs[j].at,
                format!(
                    "job `{}`: ramp_time differs within its group (the simulator ramps a whole group)",
                    self.jobs[j].name
                ),
            ));
        }
        let mut phase = PhasePlan { name: String::new(), issuers: Vec::new(), stonewall: false };
        for &index in jobs {
            let job = &self.jobs[index];
            let text = job.spec.to_string();
            let body = text.strip_prefix("job:").or_else(|| text.strip_prefix("job")).unwrap_or("");
            let mut keys: Vec<&str> = body
                .split(',')
                .filter(|pair| {
                    !pair.is_empty()
                        && !["runtime=", "time_based=", "verify=", "end_fsync="]
                            .iter()
                            .any(|key| pair.starts_with(key))
                })
                .collect();
            let runtime = format!("runtime={ramp}");
            keys.extend(["time_based=1", runtime.as_str()]);
            let spec = WorkloadSpec::parse(&format!("job:{}", keys.join(",")))
                .map_err(|error| refuse(&job.at, format!("job `{}` ramp: {error}", job.name)))?;
            let places = job.places(targets, files)?;
            let first_process = phase.issuers.len() as u32;
            let plan = spec
                .plan_job(
                    targets,
                    &prng.fork_indexed("fio-ramp", index as u64),
                    first_process,
                    &job.name,
                    &places,
                )
                .map_err(|error| refuse(&job.at, format!("job `{}`: {error}", job.name)))?;
            if !phase.name.is_empty() {
                phase.name.push('+');
            }
            phase.name.push_str(&job.name);
            for planned in plan.phases {
                phase.issuers.extend(planned.issuers);
            }
        }
        phase.name.push_str(" (ramp)");
        Ok(Some(phase))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IoKind;
    use crate::testing::{devices, run};

    /// Writes `text` to a file of this test's own and parses it as `fio:FILE`.
    fn parse(test: &str, text: &str) -> Result<WorkloadSpec, ParamError> {
        let dir = std::env::temp_dir().join(format!("elevator-fio-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{test}.fio"));
        std::fs::write(&path, text).unwrap();
        WorkloadSpec::parse(&format!("fio:{}", path.display()))
    }

    fn targets() -> Vec<Target> {
        devices(&[("sda", 1 << 30), ("sdb", 1 << 30)])
    }

    const TWO_JOBS: &str = "[global]\nsize=1m\n\n[reader]\nrw=randread\nbs=4k\niodepth=4\n\
                            ioengine=libaio\ndirect=1\n\n[writer]\nrw=write\nbs=64k\n";

    // Proves the jobs of a group share one phase as distinct processes, each with its own
    // pattern and amount, and both make progress at once: their operations interleave in time
    // (neither runs only after the other finished).
    #[test]
    fn a_group_runs_its_jobs_concurrently() {
        let spec = parse("two", TWO_JOBS).unwrap();
        let plan = spec.plan(&targets(), &Prng::new(3)).unwrap();
        assert_eq!(plan.phases.len(), 1);
        let names: Vec<&str> = plan.phases[0].issuers.iter().map(|i| i.name()).collect();
        assert_eq!(names, ["reader/0", "writer/0"]);
        let processes: Vec<u32> = plan.phases[0].issuers.iter().map(|i| i.process().0).collect();
        assert_eq!(processes, [1, 2]);
        let result = run(plan, |_| Duration::from_micros(100));
        let reader: Vec<_> = result.records.iter().filter(|r| r.issuer == 0).collect();
        let writer: Vec<_> = result.records.iter().filter(|r| r.issuer == 1).collect();
        assert_eq!(reader.len(), 256, "1 MiB in 4 KiB reads");
        assert!(reader.iter().all(|r| r.io.kind == IoKind::Read && r.io.size_bytes == 4096));
        assert_eq!(writer.len(), 16, "1 MiB in 64 KiB writes");
        assert!(
            writer.iter().all(|r| r.io.kind == IoKind::Write && !r.io.direct),
            "fio's direct=0"
        );
        let reader_end = reader.iter().map(|r| r.submitted).max().unwrap();
        let writer_end = writer.iter().map(|r| r.submitted).max().unwrap();
        let reader_start = reader.iter().map(|r| r.submitted).min().unwrap();
        let writer_start = writer.iter().map(|r| r.submitted).min().unwrap();
        assert!(writer_start < reader_end && reader_start < writer_end, "interleaved in time");
    }

    // Proves `stonewall` puts a job in a new phase, run after the first group finished, and
    // `new_group` does the same; without either the jobs share a phase.
    #[test]
    fn stonewall_starts_a_new_phase() {
        for (test, marker) in [("stonewall", "stonewall\n"), ("new_group", "new_group\n")] {
            let text = format!("{TWO_JOBS}{marker}");
            let plan = parse(test, &text).unwrap().plan(&targets(), &Prng::new(3)).unwrap();
            let names: Vec<&str> = plan.phases.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(names, ["reader", "writer"], "{test}");
            let result = run(plan, |_| Duration::from_micros(100));
            let first_end = result.phase(0).iter().map(|r| r.completed).max().unwrap();
            let second_start = result.phase(1).iter().map(|r| r.submitted).min().unwrap();
            assert!(second_start >= first_end, "{test}");
            assert!(result.phase(1).iter().all(|r| r.io.kind == IoKind::Write));
        }
    }

    // Proves an option the simulator does not honour, and an engine doing no block I/O, are
    // refused naming the file, the line and the option or engine.
    #[test]
    fn unsupported_options_are_refused_with_their_line() {
        let error = parse("verify", "[a]\nrw=write\nverify=md5\n").unwrap_err().to_string();
        assert!(error.contains("verify.fio:3: option: `verify=md5` is not honoured"), "{error}");
        let error = parse("net", "[a]\nioengine=net\n").unwrap_err().to_string();
        assert!(error.contains("net.fio:1") && error.contains("ioengine=net"), "{error}");
        let error = parse("trim", "[a]\nrw=randtrim\n").unwrap_err().to_string();
        assert!(error.contains("trim.fio:2") && error.contains("rw=randtrim"), "{error}");
        let error = parse("suffix", "[a]\nrw=read:8\n").unwrap_err().to_string();
        assert!(error.contains("suffix.fio:2"), "{error}");
        // Plan-time refusals name the job's section or the option's line: a regular file
        // without a size, a /dev/ name that is no device.
        let spec = parse("file", "[global]\n[a]\nfilename=scratch.dat\n").unwrap();
        let error = spec.plan(&targets(), &Prng::new(1)).unwrap_err().to_string();
        assert!(error.contains("file.fio:2") && error.contains("needs `size`"), "{error}");
        let spec = parse("nodev", "[a]\nsize=1m\nfilename=/dev/sdq\n").unwrap();
        let error = spec.plan(&targets(), &Prng::new(1)).unwrap_err().to_string();
        assert!(error.contains("nodev.fio:3: option: filename: no device `/dev/sdq`"), "{error}");
    }

    // Proves a regular `filename` becomes one file of `size` on the first device, shared by
    // the clones and by another job naming it, and `directory` without `filename` gives each
    // clone its own file `NAME.CLONE.0` there, as fio names them.
    #[test]
    fn regular_files_become_plan_files() {
        let text = "[global]\nsize=1m\n[a]\nfilename=data\nnumjobs=2\n[b]\nfilename=data\n\
                    rw=write\n[c]\ndirectory=/scratch/\nnumjobs=2\n";
        let plan = parse("files", text).unwrap().plan(&targets(), &Prng::new(2)).unwrap();
        let names: Vec<(&str, usize, u64)> =
            plan.files.iter().map(|f| (f.name.as_str(), f.device, f.size_bytes)).collect();
        let expected =
            [("data", 0, 1 << 20), ("/scratch/c.0.0", 0, 1 << 20), ("/scratch/c.1.0", 0, 1 << 20)];
        assert_eq!(names, expected);
        let result = run(plan, |_| Duration::from_micros(100));
        let places = |issuer: usize| {
            let places: std::collections::BTreeSet<String> = result
                .records
                .iter()
                .filter(|r| r.issuer == issuer)
                .map(|r| format!("{:?}", r.io.place))
                .collect();
            places.into_iter().collect::<Vec<_>>()
        };
        for (issuer, file) in
            [(0, "File(0)"), (1, "File(0)"), (2, "File(0)"), (3, "File(1)"), (4, "File(2)")]
        {
            assert_eq!(places(issuer), [file], "issuer {issuer}");
        }
        assert!(result.records.iter().all(|r| r.io.offset_bytes + r.io.size_bytes <= 1 << 20));
        // Scaling (compare's --scale) shrinks the files with the jobs' sizes.
        let scaled = parse("files_scaled", text).unwrap().scaled(0.25).unwrap();
        let plan = scaled.plan(&targets(), &Prng::new(2)).unwrap();
        assert!(plan.files.iter().all(|file| file.size_bytes == 256 << 10));
    }

    // Proves bssplit's shares are honoured: over 20,000 operations each size's share is its
    // percentage within 1.5 points, the blank share taking the rest (fio's rule).
    #[test]
    fn bssplit_shares_are_honoured() {
        let text = "[a]\nrw=randread\nbssplit=4k/10:64k/50:32k/\nio_size=1000m\nbs=4k\n";
        let error = parse("bs_and_split", text).unwrap_err().to_string();
        assert!(error.contains("give one of bs, bsrange and bssplit"), "{error}");
        // fio's job files need a `size` (its `a.0.0` file); `io_size` then loops over it.
        let text = "[a]\nrw=randread\nbssplit=4k/10:64k/50:32k/\nsize=64m\nio_size=1000m\n";
        let plan = parse("bssplit", text).unwrap().plan(&targets(), &Prng::new(9)).unwrap();
        let result = run(plan, |_| Duration::from_micros(1));
        let ops: Vec<u64> = result.records.iter().take(20_000).map(|r| r.io.size_bytes).collect();
        assert_eq!(ops.len(), 20_000);
        for (size, percent) in [(4096, 10.0), (65536, 50.0), (32768, 40.0)] {
            let share = ops.iter().filter(|&&s| s == size).count() as f64 / 200.0;
            assert!((share - percent).abs() < 1.5, "{size}: {share}%");
        }
        let error = parse("bad_split", "[a]\nbssplit=4k/70:8k/50\n").unwrap_err().to_string();
        assert!(error.contains("bad_split.fio:2") && error.contains("over 100"), "{error}");
    }

    // Proves fio's defaults apply where the file is silent (psync: one operation in flight even
    // with iodepth; buffered), the last occurrence wins, `/dev/` names pick devices, and
    // bsrange's sizes come out in even shares (4 sizes, each 25% within 3 points).
    #[test]
    fn options_map_with_fio_defaults() {
        let text = "[a]\nrw=randread\niodepth=8\nbsrange=4k-16k\nsize=64m\n\
                    filename=/dev/sda\nfilename=/dev/sdb\n";
        let plan = parse("defaults", text).unwrap().plan(&targets(), &Prng::new(5)).unwrap();
        let result = run(plan, |_| Duration::from_micros(100));
        assert!(result.records.iter().all(|r| r.in_flight <= 1), "psync keeps depth 1");
        assert!(
            result.records.iter().all(|r| !r.io.direct && r.io.place == crate::Place::Device(1))
        );
        let total = result.records.len() as f64;
        for size in [4096, 8192, 12288, 16384] {
            let count = result.records.iter().filter(|r| r.io.size_bytes == size).count();
            let share = count as f64 / total;
            assert!((share - 0.25).abs() < 0.03, "{size}: {share}");
        }
    }
}
