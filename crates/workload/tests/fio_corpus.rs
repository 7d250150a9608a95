//! Every job file of Debian's `fio-examples` package parses, and the jobs that name an engine
//! doing no block I/O are reported as not runnable, naming the engine
//! (`/work/shared/specs/fio-compat.md` §1, §2.2, §8 "Tests" (2)).

// A skipped test must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Command;

use elevator_workload::fio::{self, FioEnv};

/// Where Debian's `fio-examples` puts the job files.
const EXAMPLES_DIR: &str = "/usr/share/doc/fio/examples";
/// The package, and how many job files its 3.33 release ships (spec §3).
const PACKAGE: &str = "fio-examples";
const EXPECTED_FILES: usize = 86;

/// Files fio itself refuses, with why. None of the 3.33 examples is refused by fio 3.33.
const REFUSED_BY_FIO: &[(&str, &str)] = &[];

/// Whether the examples are there, installing the package when they are not (as
/// `crates/live/tests/common/mod.rs` `require` does for tools). When they still are not: under
/// `CI=true` the test fails naming what is missing; elsewhere it says why and skips.
fn require_examples() -> bool {
    let present = || Path::new(EXAMPLES_DIR).is_dir();
    if present() {
        return true;
    }
    let why = if Command::new("apt-get").arg("--version").output().is_err() {
        "apt-get is not available to install it".to_string()
    } else {
        let installed = Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends", PACKAGE])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output();
        match installed {
            _ if present() => return true,
            Ok(output) => format!(
                "apt-get install {PACKAGE} did not provide it: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            Err(error) => format!("cannot run apt-get: {error}"),
        }
    };
    let message = format!("fio_corpus needs {EXAMPLES_DIR} (Debian package {PACKAGE}): {why}");
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
    eprintln!("skipped: {message}");
    false
}

fn job_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(EXAMPLES_DIR)
        .expect("examples directory")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "fio"))
        .collect();
    files.sort();
    files
}

/// A fixed environment. The credentials of the remote engines' examples expand to nothing.
/// `xnvme-compare.fio` and `xnvme-zoned.fio` end with an `[override]` section whose `rw`,
/// `bs` and `iodepth` are `${FIO_RW}`, `${FIO_BS}`, `${FIO_IODEPTH}`: their header runs it as
/// `FIO_BS="512" FIO_RW="verify" FIO_IODEPTH=16 fio … --section=override`; unset, the values
/// are empty and fio refuses the file, as we do (§1.10). `verify` is not one of fio 3.33's
/// `rw` choices, so `randread` stands in for it.
fn env() -> FioEnv {
    let vars = [("FIO_BS", "512"), ("FIO_RW", "randread"), ("FIO_IODEPTH", "16")];
    FioEnv {
        vars: vars.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect(),
        page_size_bytes: 4096,
        memory_mib: 1024,
        cpus: 2,
    }
}

// Proves the grammar and the option catalog cover every example fio ships: each of the 86
// files parses into at least one job (or is listed as refused by fio itself), and every job
// whose engine does no block I/O — and only those — is refused with the engine's name.
#[test]
fn every_debian_example_parses() {
    if !require_examples() {
        return;
    }
    let files = job_files();
    assert_eq!(files.len(), EXPECTED_FILES, "{PACKAGE} ships {EXPECTED_FILES} job files");
    let mut failures = Vec::new();
    let mut non_block_files = Vec::new();
    let mut jobs = 0;
    for path in &files {
        let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let refused = REFUSED_BY_FIO.iter().any(|(name, _)| *name == file_name);
        match fio::parse_file(path, &env()) {
            Ok(_) if refused => failures.push(format!("{file_name}: parsed, yet fio refuses it")),
            Ok(parsed) => {
                assert!(!parsed.jobs.is_empty(), "{file_name}: no jobs");
                jobs += parsed.jobs.len();
                let mut names_non_block = false;
                for job in &parsed.jobs {
                    let engine = job.engine().to_string();
                    let non_block = fio::catalog::NON_BLOCK_ENGINES.contains(&engine.as_str());
                    match job.runnable() {
                        Err(why) => {
                            assert!(non_block, "{file_name}: job {} refused: {why}", job.name());
                            assert!(
                                why.contains(&format!("ioengine={engine}")),
                                "{file_name}: the refusal names the engine: {why}"
                            );
                            names_non_block = true;
                        }
                        Ok(()) => assert!(!non_block, "{file_name}: {engine} accepted"),
                    }
                }
                if names_non_block {
                    non_block_files.push(file_name.to_string());
                }
            }
            Err(error) if refused => drop(error),
            Err(error) => failures.push(error.to_string()),
        }
    }
    assert!(failures.is_empty(), "{} files fail:\n{}", failures.len(), failures.join("\n"));
    eprintln!(
        "{} files, {jobs} jobs; {} files name a non-block engine: {}",
        files.len(),
        non_block_files.len(),
        non_block_files.join(" ")
    );
    // 40 files set `ioengine=` to one of §2.2's rejected engines (counted with grep over the
    // files' `ioengine=` lines, independently of the parser).
    assert_eq!(non_block_files.len(), 40, "files naming a non-block engine");
    // The examples of §2.2's rejected engines are there and refused (cpuio, exec, http, nfs, …).
    for expected in ["cpuio.fio", "exec.fio", "http-s3.fio", "nfs.fio", "rdmaio-client.fio"] {
        assert!(non_block_files.iter().any(|f| f == expected), "{expected} not refused");
    }
}

/// Runs `plan`'s phases in order, each operation taking 100 µs, stopping a phase after
/// `cap_ops` submissions (the cap that keeps the examples' gigabytes short). Gives, per phase,
/// how many operations each issuer submitted.
fn drive_capped(plan: elevator_workload::WorkloadPlan, cap_ops: usize) -> Vec<Vec<usize>> {
    use elevator_core::{Duration, Instant};
    use elevator_workload::{IoId, Poll};
    let latency = Duration::from_micros(100);
    let mut counts = Vec::new();
    for mut phase in plan.phases {
        let issuers = &mut phase.issuers;
        let mut submitted = vec![0usize; issuers.len()];
        let mut done = vec![false; issuers.len()];
        let mut wake: Vec<Option<Instant>> = vec![None; issuers.len()];
        // (completion instant, issuer, operation)
        let mut pending: Vec<(Instant, usize, IoId)> = Vec::new();
        let mut now = Instant::ZERO;
        while submitted.iter().sum::<usize>() < cap_ops {
            for index in 0..issuers.len() {
                if done[index] || wake[index].is_some_and(|until| until > now) {
                    continue;
                }
                wake[index] = None;
                loop {
                    match issuers[index].poll(now) {
                        Poll::Submit(io) => {
                            submitted[index] += 1;
                            pending.push((now.saturating_add(latency), index, io.id));
                        }
                        Poll::Sleep { until } => {
                            wake[index] = Some(until);
                            break;
                        }
                        Poll::Wait => break,
                        Poll::Done => {
                            done[index] = true;
                            break;
                        }
                    }
                }
            }
            let next_completion = pending.iter().map(|(at, _, _)| *at).min();
            let next_wake = wake.iter().flatten().copied().min();
            let Some(next) = next_completion.into_iter().chain(next_wake).min() else {
                break;
            };
            now = next;
            pending.sort_by_key(|(at, issuer, id)| (*at, *issuer, *id));
            while pending.first().is_some_and(|(at, _, _)| *at <= now) {
                let (_, issuer, id) = pending.remove(0);
                issuers[issuer].complete(now, id);
            }
        }
        counts.push(submitted);
    }
    counts
}

// Proves the share of the examples with block engines that run in the simulator end to end
// (`-w fio:FILE`'s path: parse, map each job onto `job`, plan on a 16 GiB `sda`, drive with a
// cap of 2000 operations a phase) does not fall below what it was when measured, and that
// every job of a file that runs submits I/O in its phase. The refusals are printed with their
// file, line and option.
#[test]
fn the_share_of_examples_that_run() {
    use elevator_core::Prng;
    use elevator_workload::{Target, WorkloadSpec};
    if !require_examples() {
        return;
    }
    let targets = [Target { name: "sda".into(), capacity_bytes: 16 << 30 }];
    let (mut block_files, mut running) = (0, 0);
    let mut refusals = Vec::new();
    for path in job_files() {
        let parsed = fio::parse_file(&path, &env()).expect("parses (every_debian_example_parses)");
        if parsed.jobs.iter().any(|job| job.runnable().is_err()) {
            continue;
        }
        block_files += 1;
        let planned = WorkloadSpec::parse_fio_file(&path.display().to_string())
            .and_then(|spec| spec.plan(&targets, &Prng::new(1)));
        match planned {
            Ok(plan) => {
                let counts = drive_capped(plan, 2000);
                for (phase, submitted) in counts.iter().enumerate() {
                    assert!(
                        submitted.iter().all(|&n| n > 0),
                        "{}: phase {phase}: an issuer submitted nothing: {submitted:?}",
                        path.display()
                    );
                }
                running += 1;
                eprintln!("runs: {}", path.display());
            }
            Err(error) => refusals.push(error.to_string()),
        }
    }
    eprintln!("{running} of {block_files} block-engine example files run:");
    for refusal in &refusals {
        eprintln!("  {refusal}");
    }
    assert_eq!(running + refusals.len(), block_files);
    assert!(running >= MEASURED_RUNNING, "{running} run, {MEASURED_RUNNING} did when measured");
}

/// How many example files ran when `the_share_of_examples_that_run` was written: a floor, so
/// a mapping that stops honouring an option shows.
const MEASURED_RUNNING: usize = 10;
