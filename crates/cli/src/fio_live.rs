//! fio job files on real targets: `elevator run FILE.fio` and `elevator kernel compare DEV
//! FILE.fio` (issue 17; `/work/shared/specs/fio-compat.md` §2.1 `filename`, `directory`,
//! `direct`/`buffered`, `size`).
//!
//! The jobs are mapped exactly as the simulator maps them (`fio_run` in `elevator-workload`:
//! groups, stonewall, numjobs, each job its own pattern); what differs is where their I/O
//! goes. Every target is opened under the usual write-safety rules (DESIGN.md §7).
//!
//! * One target: the path every job's `filename` names, or the target named on the command
//!   line when the file names none; jobs without `filename` share it.
//! * Several targets: jobs naming different
//!   files or devices, `filename=a:b` lists, and `directory`, each file a target of its own,
//!   named as fio names it (filesetup.c, init.c): `filename`'s names, under `directory` when
//!   set; for a job without `filename`, fio's `nrfiles` names per clone (`NAME.CLONE.FILE`,
//!   its default `filename_format`, or the job's own), under `directory` or in the working
//!   directory. The live run gives the workload one device per distinct file, named by that
//!   path (less `/dev/`, the simulator's device rule), so the simulator's mapping puts each
//!   job's I/O on its own files — served as `file_service_type` says (round-robin by
//!   default), `size` divided among a job's files as fio divides it, or `filesize` each. The live engine runs one queue and scheduler
//!   instance per target (`elevator_live::run::run_workload_on`), as the kernel has one per
//!   request queue; one thread and one io_uring (or thread pool) serve them all. `elevator
//!   kernel compare` (and `elevator fio` kernel mode) takes several block devices
//!   (`crate::kernel`): each gets the scheduler under test; `directory` stays refused there.
//!
//! A regular file that does not exist yet is created at the size its jobs give (the largest
//! `size` divided among a job's files; `--size` wins), as fio lays a job's file out at its
//! size before the job starts; with several targets, a missing file no job gives a size for
//! is refused, as fio refuses it. Each target is opened for writing only when a job naming it
//! may write. Options the simulator honours but a live mode
//! cannot are refused here, naming file, line and option, before anything is opened.
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
//! * With one target (no `directory`, at most one file named), a job without `filename` does
//!   its I/O on that target or the command-line one (the whole of it, or its first `size`
//!   bytes), shared by its clones and by the other jobs; fio would create `NAME.CLONE.0`
//!   files in its working directory, one per clone. With several targets it gets fio's
//!   files.
//! * `openfiles` below a job's file count and several directories are refused by the
//!   simulator's mapping (file, line, option), before this module sees the file.
//! * A file of a `filesize` range is created at the range's high end (fio creates it at the
//!   size it draws); the job's I/O stays within the size the mapping draws for it, from the
//!   run's seed. A file of a `size` fio divides unevenly is created at the quotient plus the
//!   remainder (the largest share fio gives one file).
//! * `elevator kernel compare` drives block devices: `directory`, and the regular files a
//!   job names (its `filename`s, its `nrfiles`/`filename_format` files, or fio's `NAME.N.0`
//!   for a job naming none beside jobs naming devices), are refused there (`crate::kernel`).
//! * A command-line target beside several targets is refused (it would be one more).
//! * `--verify` checks one target: a run with several refuses it.
//! * Two spellings of one file (`./a` and `a`) must be written one way when the file names
//!   several targets (each target has one name in the mapping).
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
    /// names one, or when they name several (then see `targets`).
    pub(crate) filename: Option<(PathBuf, Location)>,
    /// With several targets: every distinct name the jobs' `filename`s
    /// give, in the order first written; empty otherwise.
    pub(crate) targets: Vec<NamedTarget>,
    /// The largest `size` a job gives in bytes: a target file that does not exist yet is
    /// created at this size, as fio lays a job's file out at its `size` (§2.1).
    pub(crate) size_bytes: Option<u64>,
}

/// One of several targets a job file names.
#[derive(Clone, Debug)]
pub(crate) struct NamedTarget {
    /// The name as the job file writes it (`filename`).
    pub(crate) written: String,
    /// Where it was first written.
    pub(crate) at: Location,
    /// The largest share of a `size` a job naming it gives in bytes (`size` divided among
    /// the job's files, fio's rule): its size when the run creates it.
    pub(crate) size_bytes: Option<u64>,
    /// Whether a job naming it may write: only then is it opened for writing, under the
    /// write-safety rules (DESIGN.md §7); a target only read needs none.
    pub(crate) writes: bool,
}

impl NamedTarget {
    /// The device name the workload is planned with: the simulator's rule for `filename`
    /// (`sdb` or `/dev/sdb` name device `sdb`).
    pub(crate) fn device_name(&self) -> &str {
        self.written.strip_prefix("/dev/").unwrap_or(&self.written)
    }
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
    let (filename, targets) = check(file, mode)?;
    let size_bytes = file
        .jobs
        .iter()
        .filter_map(|job| match last(job, "size") {
            Some((FioValue::Int(bytes), _)) => Some(*bytes),
            _ => None,
        })
        .max();
    Ok(LiveJobFile { spec, filename, targets, size_bytes })
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

/// Whether `job` may write: anything but a read pattern (`rw=read`/`randread`, fio's default
/// `read`), or a replayed iolog (which may hold writes).
fn may_write(job: &fio::FioJob) -> bool {
    let reads_only = match last(job, "rw").or_else(|| last(job, "readwrite")) {
        None => true,
        Some((FioValue::Choice { value, .. }, _)) => matches!(value.as_str(), "read" | "randread"),
        Some((FioValue::Str(value), _)) => matches!(value.as_str(), "read" | "randread"),
        Some(_) => false,
    };
    !reads_only || last(job, "read_iolog").is_some()
}

/// `nrfiles` of a job (fio's default 1).
fn nrfiles(job: &fio::FioJob) -> u64 {
    match last(job, "nrfiles") {
        Some((FioValue::Int(count), _)) => (*count).max(1),
        _ => 1,
    }
}

/// fio's names for the files of a job without `filename`: `nrfiles` per clone, named by
/// `filename_format` (fio's default `$jobname.$jobnum.$filenum`, init.c `make_filename`).
fn fio_names(job: &fio::FioJob) -> Vec<String> {
    let clones = match last(job, "numjobs") {
        Some((FioValue::Int(count), _)) => *count,
        _ => 1,
    };
    let format = match last(job, "filename_format") {
        Some((FioValue::Str(format), _)) => Some(format.as_str()),
        _ => None,
    };
    let files = nrfiles(job);
    (0..clones)
        .flat_map(|clone| {
            (0..files)
                .map(move |file| fio::file_name(format, job.name(), clone as u32, file as u32))
        })
        .collect()
}

/// Adds the files `names` of `job` (written at `at`) to `targets`: `size` divided among the
/// job's files (fio's rule; with `filesize`, its size, or a range's largest), opened for
/// writing when any job naming it may write.
fn add_targets(
    targets: &mut Vec<NamedTarget>,
    job: &fio::FioJob,
    names: Vec<String>,
    at: &Location,
) {
    // Clones each have their own files (`nrfiles` each): `size` is divided among those.
    let per_clone = last(job, "filename").is_none();
    let files = if per_clone { nrfiles(job) } else { names.len().max(1) as u64 };
    // The first files of an uneven division are a block larger (fio's `setup_files`): a
    // file of the quotient plus the remainder holds them.
    let share = match (last(job, "filesize"), last(job, "size")) {
        (Some((FioValue::Int(bytes), _)), _) => Some(*bytes),
        (Some((FioValue::Range { lo, hi }, _)), _) => Some(*lo.max(hi)),
        (_, Some((FioValue::Int(bytes), _))) => Some(*bytes / files + *bytes % files),
        _ => None,
    };
    let writes = may_write(job);
    for name in names {
        match targets.iter_mut().find(|t| t.written == name) {
            Some(target) => {
                target.size_bytes = target.size_bytes.max(share);
                target.writes |= writes;
            }
            None => targets.push(NamedTarget {
                written: name,
                at: at.clone(),
                size_bytes: share,
                writes,
            }),
        }
    }
}

/// A path a job file names, and where.
type Named = (PathBuf, Location);

/// The names a job's `filename` gives, as written (`a:b` is two).
fn names_of(value: &FioValue) -> Vec<String> {
    match value {
        FioValue::List(names) => names.clone(),
        other => vec![other.to_string()],
    }
}

/// Checks every job for `mode`; returns the one path the jobs' `filename`s name, or (with
/// `elevator run`'s several targets) every name they give.
fn check(file: &FioJobFile, mode: LiveMode) -> Result<(Option<Named>, Vec<NamedTarget>)> {
    let mut targets: Vec<NamedTarget> = Vec::new();
    // Jobs naming nothing, for fio's own names when the file names several targets.
    let mut unnamed = Vec::new();
    let mut directory_used = false;
    for job in &file.jobs {
        // The CPU options are the simulator's (the workload's `IssuerCpu`, issue 18): the live
        // engine submits every job's I/O from its own thread, unpinned, interrupt-driven, one
        // I/O per submission, so it refuses those that would change that.
        let cpu_option =
            ["cpus_allowed", "cpumask", "hipri", "iodepth_batch"].into_iter().find_map(|name| {
                let (value, at) = last(job, name)?;
                let matters = match value {
                    FioValue::Bool(on) => *on,
                    FioValue::Int(batch) => *batch != 1,
                    _ => true,
                };
                matters.then_some((name, value, at))
            });
        if let Some((name, value, at)) = cpu_option {
            bail!(
                "fio {at}: option: `{name}={value}` is not honoured by {}: its engine submits \
                 every job's I/O from one unpinned thread, one I/O per submission, with \
                 interrupt completions (the simulator honours it)",
                mode.command()
            );
        }
        let directory = last(job, "directory");
        if let (Some((value, at)), LiveMode::Kernel) = (directory, mode) {
            bail!(
                "fio {at}: option: `directory={value}` is not honoured by {}: it drives one \
                 device and lays out no files; name the device with `filename=` or on the \
                 command line",
                mode.command()
            );
        }
        let directory_at = directory.map(|(_, at)| at);
        let directory = directory.map(|(value, _)| value.to_string());
        directory_used |= directory.is_some();
        // fio puts a job's files under `directory` (filesetup.c, as the mapping does).
        let in_directory = |name: &str| match &directory {
            Some(dir) => format!("{}/{name}", dir.trim_end_matches('/')),
            None => name.to_owned(),
        };
        // `nrfiles` above 1 or `filename_format` name the job's files as `directory` does.
        let files_at = last(job, "nrfiles")
            .filter(|(value, _)| matches!(value, FioValue::Int(count) if *count > 1))
            .or_else(|| last(job, "filename_format"))
            .map(|(_, at)| at);
        if let (Some(at), None, LiveMode::Kernel) = (files_at, last(job, "filename"), mode) {
            bail!(
                "fio {at}: option: a job's several files (`nrfiles`, `filename_format`) are \
                 regular files, which {} cannot honour: it switches the scheduler of block \
                 devices; name the devices with `filename=`",
                mode.command()
            );
        }
        // Its files are targets of their own, as with `directory`.
        directory_used |= files_at.is_some() && last(job, "filename").is_none();
        let (names, at) = match (last(job, "filename"), directory_at.or(files_at)) {
            (Some((value, at)), _) => {
                (names_of(value).iter().map(|name| in_directory(name)).collect(), at)
            }
            (None, Some(at)) => {
                (fio_names(job).iter().map(|name| in_directory(name)).collect(), at)
            }
            (None, None) => {
                unnamed.push(job);
                continue;
            }
        };
        add_targets(&mut targets, job, names, at);
    }
    // `directory` was refused above in kernel mode, so there several means several devices.
    let several = targets.len() > 1 || directory_used;
    if several {
        // fio's own names in its working directory for the jobs that name nothing.
        for job in unnamed {
            add_targets(&mut targets, job, fio_names(job), &job.at);
        }
    }
    let mut named: Option<Named> = None;
    if several {
        // Each target is one device of the mapping, under one name.
        for (index, target) in targets.iter().enumerate() {
            let path = Path::new(&target.written);
            if let Some(other) = targets[..index].iter().find(|other| {
                other.device_name() == target.device_name()
                    || same_path(Path::new(&other.written), path)
            }) {
                bail!(
                    "fio {}: option: `filename={}` is the same target as `{}` at {}: write it \
                     the same way in every job",
                    target.at,
                    target.written,
                    other.written,
                    other.at
                );
            }
        }
    }
    for job in &file.jobs {
        if let (Some((value, at)), false) = (last(job, "filename"), several) {
            let path = match value {
                FioValue::Str(name) => PathBuf::from(name),
                FioValue::List(names) if names.len() == 1 => PathBuf::from(&names[0]),
                _ => bail!(
                    "fio {at}: option: `filename={value}` names several files, which {} cannot \
                     honour: it drives one device",
                    mode.command()
                ),
            };
            match &named {
                Some((first, first_at)) if !same_path(first, &path) => bail!(
                    "fio {at}: option: `filename={}` differs from `filename={}` at {first_at}: {} \
                     drives one device, so every job must name the same one",
                    path.display(),
                    first.display(),
                    mode.command()
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
    Ok((named, if several { targets } else { Vec::new() }))
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
