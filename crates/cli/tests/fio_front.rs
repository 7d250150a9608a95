//! `elevator fio` and the binary invoked as `fio`: fio's command line in, fio's outputs out,
//! nothing on stderr on success (fio-compat.md §1.8, §1.9, R5, R6).

use std::path::Path;
use std::process::{Command, Output};

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Runs `program` with `args` in `dir`, with the ELEVATOR_FIO_* variables given (and no
/// others from the caller's environment).
fn run_in(program: &Path, dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = Command::new(program);
    command.args(args).current_dir(dir);
    for name in
        ["ELEVATOR_FIO_MODE", "ELEVATOR_FIO_DEVICE", "ELEVATOR_FIO_SCHEDULER", "ELEVATOR_FIO_SEED"]
    {
        command.env_remove(name);
    }
    for (name, value) in vars {
        command.env(name, value);
    }
    command.output().expect("run elevator")
}

fn elevator_fio(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut all = vec!["fio"];
    all.extend_from_slice(args);
    run_in(Path::new(env!("CARGO_BIN_EXE_elevator")), dir, &all, vars)
}

const JOBS: &str = "[global]\nbs=4k\nsize=8m\ndirect=1\nruntime=1\ntime_based\n\n\
                    [reader]\nrw=randread\n\n[writer]\nrw=write\nbs=64k\n";

fn job_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jobs.fio"), JOBS).unwrap();
    dir
}

// Proves the drop-in runs a job file as fio's JSON on stdout with an empty stderr (bench-fio
// fails a run on any stderr text), reads the device, scheduler and seed from the
// environment, and that the binary invoked through a link named `fio` writes the same bytes.
#[test]
fn json_on_stdout_nothing_on_stderr_and_a_link_named_fio() {
    let dir = job_dir();
    let vars = [("ELEVATOR_FIO_DEVICE", "ssd"), ("ELEVATOR_FIO_SCHEDULER", "noop")];
    let output = elevator_fio(dir.path(), &["--output-format=json", "jobs.fio"], &vars);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stderr), "");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let jobs = json["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs.iter().map(|job| job["jobname"].as_str().unwrap()).collect();
    assert_eq!(names, ["reader", "writer"]);
    assert!(jobs[0]["read"]["io_bytes"].as_u64().unwrap() > 0);
    assert_eq!(jobs[0]["write"]["io_bytes"].as_u64().unwrap(), 0);
    assert!(jobs[1]["write"]["io_bytes"].as_u64().unwrap() > 0);
    assert_eq!(jobs[0]["elevator"]["scheduler"], "noop");

    let link = dir.path().join("fio");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_elevator"), &link).unwrap();
    let linked = run_in(&link, dir.path(), &["--output-format=json", "jobs.fio"], &vars);
    assert!(linked.status.success(), "{}", text(&linked.stderr));
    assert_eq!(linked.stdout, output.stdout, "the same run, byte for byte");
    let version = run_in(&link, dir.path(), &["--version"], &[]);
    assert!(text(&version.stdout).starts_with("fio-3"), "bench-fio checks for fio-3");
}

// Proves fio's flags: --section runs only that job, --output writes the file and leaves
// stdout empty, --minimal is terse v3, --parse-only runs nothing, command-line jobs
// (`--name=a --rw=read`) run without a job file, and a job's log file is written.
#[test]
fn fio_flags_select_jobs_outputs_and_checks() {
    let dir = job_dir();
    let output = elevator_fio(
        dir.path(),
        &["--section=writer", "--output=out.json", "--output-format=json", "jobs.fio"],
        &[],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(output.stdout.is_empty());
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out.json")).unwrap()).unwrap();
    assert_eq!(json["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(json["jobs"][0]["jobname"], "writer");

    let terse = elevator_fio(dir.path(), &["--minimal", "--section=reader", "jobs.fio"], &[]);
    let line = text(&terse.stdout);
    assert!(line.starts_with("3;fio-3"), "{line}");
    assert_eq!(line.lines().count(), 1, "{line}");

    let parsed = elevator_fio(dir.path(), &["--parse-only", "jobs.fio"], &[]);
    assert!(parsed.status.success() && parsed.stdout.is_empty() && parsed.stderr.is_empty());

    let command_line = elevator_fio(
        dir.path(),
        &["--name=cli", "--rw=read", "--size=1m", "--output-format=json"],
        &[],
    );
    assert!(command_line.status.success(), "{}", text(&command_line.stderr));
    let json: serde_json::Value = serde_json::from_slice(&command_line.stdout).unwrap();
    assert_eq!(json["jobs"][0]["jobname"], "cli");
    assert_eq!(json["jobs"][0]["read"]["io_bytes"].as_u64(), Some(1 << 20));

    // A log the job asks for lands in the working directory under fio's name.
    let logged = elevator_fio(
        dir.path(),
        &["--name=logged", "--rw=read", "--size=1m", "--write_bw_log=bw", "--minimal"],
        &[],
    );
    assert!(logged.status.success(), "{}", text(&logged.stderr));
    let log = std::fs::read_to_string(dir.path().join("bw_bw.1.log")).unwrap();
    assert_eq!(log.lines().count(), 256, "one line per 4 KiB read of 1 MiB: {log}");
}

/// Arguments, environment, and what stderr must say.
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

// Proves bad input exits 1 as fio does (§1.8), naming what is wrong on stderr and writing
// nothing on stdout: an unknown flag, an unknown job option with its line, a bad format, a
// live run with no target to run on.
#[test]
fn bad_input_exits_1_naming_it() {
    let dir = job_dir();
    std::fs::write(dir.path().join("bad.fio"), "[job]\nrw=read\nbogus=1\n").unwrap();
    let cases: [Case<'_>; 4] = [
        (&["--bogus", "jobs.fio"], &[], "unrecognized option '--bogus'"),
        (&["bad.fio"], &[], "bad.fio:3"),
        (&["--output-format=xml", "jobs.fio"], &[], "accepted: normal"),
        (&["jobs.fio"], &[("ELEVATOR_FIO_MODE", "live")], "needs a target"),
    ];
    for (args, vars, expected) in cases {
        let output = elevator_fio(dir.path(), args, vars);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", text(&output.stderr));
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(text(&output.stderr).contains(expected), "{args:?}: {}", text(&output.stderr));
    }
}
