//! fio job files on one real target: `elevator run FILE.fio` and `elevator kernel compare DEV
//! FILE.fio` (issue 17; `/work/shared/specs/fio-compat.md` §2.1 `filename`, `directory`,
//! `direct`/`buffered`).
//!
//! The jobs are mapped exactly as the simulator maps them (`fio_run` in `elevator-workload`:
//! groups, stonewall, numjobs, each job its own pattern); what differs is where their I/O
//! goes. A live run has one target, opened under the usual write-safety rules (DESIGN.md §7):
//! the path every job's `filename` names, or the target named on the command line when the
//! file names none. A regular file named there that does not exist yet is created at the
//! largest `size` the jobs give (`--size` wins), as fio lays a job's file out at its size
//! before the job starts. Options the simulator honours but a live mode cannot are refused here,
//! naming file, line and option, before anything is opened.
//!
//! fio's outputs (`--output-format`) and log files come from measured figures: the live
//! engine and the kernel runs record each I/O's direction and offset
//! (`PhaseRecorder::record_submit`/`record_io`), and keep every I/O when a job writes a log;
//! `elevator fio` runs here with `ELEVATOR_FIO_MODE=live|kernel` (`run::run_fio_live`,
//! `kernel::run_fio_kernel`).
//!
//! # Deviations from fio
//!
//! * Outputs: `usr_cpu`/`sys_cpu` are the process's CPU over a group shared out among its
//!   jobs by I/Os completed (fio's jobs are processes, ours share threads); `iodepth_level`
//!   counts each submission alone (fio, with `iodepth_batch_submit` above 1, counts a batch at
//!   the depth after it); `disk_util` is read before and after the run, not every 250 ms
//!   (`elevator_live::diskutil`; see docs/fio-compat.md). Dates are the wall clock, as fio's.
//!
//! * A job without `filename` does its I/O on the command-line target (the whole of it, or
//!   its first `size` bytes), shared by its clones and by the other jobs; fio would create
//!   `NAME.CLONE.0` files in its working directory, one per clone.
//! * `directory`, several names in `filename` (`a:b`), and jobs naming different files are
//!   refused: a live run has one target, and lays out no files on a filesystem.
//! * A file the run creates is allocated (elevator's scratch-file rules, DESIGN.md §7); fio
//!   writes it through before the job starts.
//! * `elevator run` does direct I/O only (its engine has no page cache), so fio's default
//!   `direct=0` is refused there: a job file for `elevator run` says `direct=1` (or
//!   `buffered=0`). `elevator kernel compare` runs buffered jobs through the kernel's page cache.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use elevator_live::Target;
use elevator_live::run::workload_target;
use elevator_workload::WorkloadSpec;
use elevator_workload::fio::{self, FioEnv, FioJobFile, FioValue, Location};

/// Which live mode a job file runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LiveMode {
    /// `elevator run`: our schedulers in front of the target, direct I/O only.
    Run,
    /// `elevator kernel compare`: the kernel's schedulers, direct or buffered.
    Kernel,
}

impl LiveMode {
    fn command(self) -> &'static str {
        match self {
            LiveMode::Run => "elevator run",
            LiveMode::Kernel => "elevator kernel compare",
        }
    }
}

/// A job file checked for a live mode.
#[derive(Debug)]
pub(crate) struct LiveJobFile {
    /// The jobs, mapped as the simulator maps them (still on fio's own file names).
    pub(crate) spec: WorkloadSpec,
    /// The one path the file's jobs name with `filename`, and where; `None` when no job
    /// names one.
    pub(crate) filename: Option<(PathBuf, Location)>,
    /// The largest `size` a job gives in bytes: a target file that does not exist yet is
    /// created at this size, as fio lays a job's file out at its `size` (§2.1).
    pub(crate) size_bytes: Option<u64>,
}

/// The job file `-w fio:FILE` or a positional `JOBFILE` names, if the workload is one.
pub(crate) fn job_file_of<'a>(positional: Option<&'a str>, workload: &'a str) -> Option<&'a str> {
    positional.or_else(|| workload.strip_prefix("fio:"))
}

/// Reads and maps the job file at `path`, refusing what `mode` cannot honour.
pub(crate) fn load(path: &str, mode: LiveMode) -> Result<LiveJobFile> {
    // The simulator's mapping first: its refusals (unmapped options, engines) come first and
    // read the same in every mode.
    let spec = WorkloadSpec::parse_fio_file(path)?;
    // The same fixed environment `parse_fio_file` uses, so the jobs are the same jobs.
    let env = FioEnv { page_size_bytes: 4096, memory_mib: 1024, cpus: 1, ..Default::default() };
    let file = fio::parse_file(Path::new(path), &env).map_err(|error| {
        anyhow::anyhow!("fio {}: {}", error.at, error.message) // parse_fio_file read it already
    })?;
    from_parsed(spec, &file, mode)
}

/// [`load`] for jobs already parsed and mapped (`elevator fio`'s job files and command-line
/// jobs): `spec` is `file`'s jobs as the simulator maps them.
pub(crate) fn from_parsed(
    spec: WorkloadSpec,
    file: &FioJobFile,
    mode: LiveMode,
) -> Result<LiveJobFile> {
    let filename = check(file, mode)?;
    let size_bytes = file
        .jobs
        .iter()
        .filter_map(|job| match last(job, "size") {
            Some((FioValue::Int(bytes), _)) => Some(*bytes),
            _ => None,
        })
        .max();
    Ok(LiveJobFile { spec, filename, size_bytes })
}

/// The last occurrence of `name` in a job (fio's last-wins, §1.7), with where it was written.
fn last<'a>(job: &'a fio::FioJob, name: &str) -> Option<(&'a FioValue, &'a Location)> {
    job.options.iter().rev().find(|option| option.name == name).map(|o| (&o.value, &o.at))
}

fn flag(value: &FioValue) -> Option<bool> {
    match value {
        FioValue::Bool(on) => Some(*on),
        FioValue::Int(n) => Some(*n != 0),
        _ => None,
    }
}

/// Checks every job for `mode`; returns the one path the jobs' `filename`s name.
fn check(file: &FioJobFile, mode: LiveMode) -> Result<Option<(PathBuf, Location)>> {
    let mut named: Option<(PathBuf, Location)> = None;
    for job in &file.jobs {
        if let Some((value, at)) = last(job, "directory") {
            bail!(
                "fio {at}: option: `directory={value}` is not honoured by {}: a live run does I/O \
                 on one target and lays out no files; name it with `filename=` or on the command \
                 line",
                mode.command()
            );
        }
        if let Some((value, at)) = last(job, "filename") {
            let path = match value {
                FioValue::Str(name) => PathBuf::from(name),
                FioValue::List(names) if names.len() == 1 => PathBuf::from(&names[0]),
                _ => bail!(
                    "fio {at}: option: `filename={value}` names several files, which {} cannot \
                     honour: a live run has one target",
                    mode.command()
                ),
            };
            match &named {
                Some((first, first_at)) if !same_path(first, &path) => bail!(
                    "fio {at}: option: `filename={}` differs from `filename={}` at {first_at}: a \
                     live run has one target, so every job must name the same one",
                    path.display(),
                    first.display()
                ),
                Some(_) => {}
                None => named = Some((path, at.clone())),
            }
        }
        if mode == LiveMode::Run {
            // `direct` and its inverse `buffered`; the later written wins (§1.7, §2.1).
            let direct = job
                .options
                .iter()
                .rev()
                .find(|option| matches!(option.name, "direct" | "buffered"))
                .map(|option| {
                    let on = flag(&option.value).unwrap_or(false);
                    (if option.name == "direct" { on } else { !on }, option)
                });
            match direct {
                Some((true, _)) => {}
                Some((false, option)) => bail!(
                    "fio {}: option: `{}={}` asks for buffered I/O, which `elevator run` cannot \
                     honour (its engine does direct I/O only): set direct=1, or run the file \
                     with `elevator kernel compare` or `elevator sim`",
                    option.at,
                    option.name,
                    option.value
                ),
                None => bail!(
                    "fio {}: job `{}`: fio's default `direct=0` (buffered I/O) is not honoured by \
                     `elevator run` (its engine does direct I/O only): add direct=1, or run the \
                     file with `elevator kernel compare` or `elevator sim`",
                    job.at,
                    job.name()
                ),
            }
        }
    }
    Ok(named)
}

/// Whether two names are the same file: equal as written, or resolving to the same path.
fn same_path(a: &Path, b: &Path) -> bool {
    a == b
        || match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

impl LiveJobFile {
    /// The target to open: the file's `filename`, or `given` (the command line's) when the file
    /// names none; both must agree when both are there.
    pub(crate) fn target_path(&self, given: Option<&Path>) -> Result<Option<PathBuf>> {
        match (&self.filename, given) {
            (Some((named, at)), Some(given)) if !same_path(named, given) => bail!(
                "fio {at}: option: `filename={}` is not the target given on the command line ({}): \
                 a live run has one target; drop one of them",
                named.display(),
                given.display()
            ),
            (Some((named, _)), _) => Ok(Some(named.clone())),
            (None, given) => Ok(given.map(Path::to_path_buf)),
        }
    }
}

/// The jobs of `spec` doing their I/O on `target` as device 0 (what the live engine and
/// passthrough address); other workloads unchanged.
pub(crate) fn on_target(spec: &WorkloadSpec, target: &Target) -> WorkloadSpec {
    spec.fio_on_one_device(&workload_target(target).name).unwrap_or_else(|| spec.clone())
}
