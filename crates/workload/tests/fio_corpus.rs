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

/// The caps the corpus runs under (`elevator sim FILE.fio --max-size 8m --max-runtime 1s`):
/// fio's examples are written for whole disks and minutes.
const MAX_SIZE_BYTES: u64 = 8 << 20;
const MAX_RUNTIME_MS: u64 = 1000;

/// The block-engine examples that do not run, each with why (also in `docs/fio-compat.md`).
/// The test fails when one of them starts running (take it off the list) or when a file not
/// listed is refused.
const REFUSED: &[(&str, &str)] = &[
    ("enospc-pressure.fio", "continue_on_error/ignore_error on ENOSPC: no full filesystem"),
    ("libzbc-rand-write.fio", "zonemode=zbd (and the libzbc engine): no zoned device model"),
    ("libzbc-seq-read.fio", "zonemode=zbd (and the libzbc engine): no zoned device model"),
    ("numa.fio", "job2 binds to nodes 0-1: the simulated host has one NUMA node, 0"),
    ("surface-scan.fio", "fill_device: writing until the device is full"),
    ("uring-cmd-zoned.fio", "zonemode=zbd: no zoned device model"),
    ("xnvme-zoned.fio", "zonemode=zbd: no zoned device model"),
    ("zbd-rand-write.fio", "zonemode=zbd: no zoned device model"),
    ("zbd-seq-read.fio", "zonemode=zbd: no zoned device model"),
];

/// Files whose header says how to run them: with fio options on the command line and
/// `--section`. `xnvme-compare.fio`'s and `xnvme-zoned.fio`'s third command, `fio xnvme-compare.fio --section=default
/// --ioengine=xnvme --xnvme_async=libaio --filename=/dev/nvme0n1`, without `xnvme_async`
/// (the backend's asynchronous interface, CPU-side: not in the catalog), on the simulated
/// device.
const HEADER_COMMAND_LINES: &[(&str, &[&str], &[&str])] = &[
    ("xnvme-compare.fio", &["--ioengine=xnvme", "--filename=/dev/sda"], &["default"]),
    ("xnvme-zoned.fio", &["--ioengine=xnvme", "--filename=/dev/sda"], &["default"]),
];

/// How many of the 46 run today: a floor, so a mapping that stops honouring an option shows.
/// The target is 95 % (44 files); the gap is `REFUSED`: zoned devices (six files, a
/// colleague's device model), ENOSPC handling, fill_device and a second NUMA node.
const MEASURED_RUNNING: usize = 37;

/// A copy of `path` whose device names (`/dev/sdb`, `/dev/nvme0n1`, `/dev/XXX`: the examples'
/// authors' devices, meant to be edited) name the simulated device `/dev/sda`.
fn on_simulated_device(path: &Path) -> PathBuf {
    let text = std::fs::read_to_string(path).expect("readable example");
    let rewritten: Vec<String> = text
        .lines()
        .map(|line| match line.trim_start().strip_prefix("filename=/dev/") {
            Some(_) => "filename=/dev/sda".to_string(),
            None => line.to_string(),
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("elevator-fio-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let copy = dir.join(path.file_name().expect("a file name"));
    std::fs::write(&copy, rewritten.join("\n") + "\n").expect("writable copy");
    copy
}

// Proves the examples with block engines run end to end in the real simulator (parse, map each job onto `job`, cap with `fio_capped` as `--max-size 8m
// --max-runtime 1s` does, simulate on a 4 TiB `ssd` under mq-deadline), every phase of a file that
// runs moves I/O, every file that does not run is on the documented `REFUSED` list with its
// reason and is refused naming its file, and no fewer run than when measured (37 of 46; the
// issue's target of 95 % is not reached yet).
#[test]
fn the_share_of_examples_that_run() {
    use elevator_core::Duration;
    use elevator_sched::SchedulerSpec;
    use elevator_sim::{DeviceSpec, SimConfig};
    use elevator_workload::WorkloadSpec;
    if !require_examples() {
        return;
    }
    // 4 TiB: cross-stripe-verify's 30 clones start 124 GiB apart (the caps cap amounts, not
    // where jobs start).
    let device = DeviceSpec::parse("ssd:capacity=4t").expect("the ssd preset");
    let config = SimConfig::new(1, device);
    let scheduler = SchedulerSpec::parse("mq-deadline").expect("mq-deadline");
    let (mut block_files, mut running) = (0, 0);
    let mut refusals = Vec::new();
    for path in job_files() {
        let parsed = fio::parse_file(&path, &env()).expect("parses (every_debian_example_parses)");
        if parsed.jobs.iter().any(|job| job.runnable().is_err()) {
            continue;
        }
        block_files += 1;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let copy = on_simulated_device(&path);
        let spec = match HEADER_COMMAND_LINES.iter().find(|(file, ..)| *file == name) {
            // Run as the header says a user runs it: its command line, sections, environment.
            Some((_, command_line, sections)) => {
                let sections: Vec<String> = sections.iter().map(|s| s.to_string()).collect();
                let file =
                    fio::parse_invocation(command_line, &[copy.as_path()], &sections, &env())
                        .map_err(|error| error.to_string());
                match file {
                    Ok(file) => WorkloadSpec::from_fio_jobs(&copy.display().to_string(), &file),
                    Err(error) => panic!("{name}: its header's command line: {error}"),
                }
            }
            None => WorkloadSpec::parse_fio_file(&copy.display().to_string()),
        };
        let spec = spec.and_then(|spec| {
            spec.fio_capped(Some(MAX_SIZE_BYTES), Some(Duration::from_millis(MAX_RUNTIME_MS)))
        });
        let result = match spec {
            Ok(spec) => elevator_sim::run(&config, &scheduler, &spec).map_err(|e| e.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match result {
            Ok(run) => {
                for phase in &run.phases {
                    assert!(phase.ops > 0, "{name}: phase {} moved no I/O", phase.name);
                }
                assert!(
                    !REFUSED.iter().any(|(refused, _)| *refused == name),
                    "{name} runs: take it off REFUSED"
                );
                running += 1;
                eprintln!("runs: {name} ({} phases)", run.phases.len());
            }
            Err(error) => {
                assert!(error.contains(&name), "{name}: the refusal names the file: {error}");
                refusals.push(format!("{name}: {error}"));
            }
        }
    }
    eprintln!("{running} of {block_files} block-engine example files run; refused:");
    for refusal in &refusals {
        eprintln!("  {refusal}");
    }
    for refusal in &refusals {
        let listed = REFUSED.iter().any(|(name, _)| refusal.starts_with(&format!("{name}:")));
        assert!(listed, "not on the documented REFUSED list: {refusal}");
    }
    assert_eq!(block_files, 46, "block-engine example files");
    assert_eq!(running + REFUSED.len(), block_files, "every file runs or is listed as refused");
    assert!(running >= MEASURED_RUNNING, "{running} run, {MEASURED_RUNNING} did when measured");
}
