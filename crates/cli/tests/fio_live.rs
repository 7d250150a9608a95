//! fio job files live (issue 17): `elevator run FILE.fio` and `elevator kernel compare DEV
//! FILE.fio` run a job file's jobs as the simulator does (groups, stonewall, numjobs), on one
//! real target; what a live mode cannot honour is refused naming file, line and option; and
//! real fio, run on the same RAM-backed loop device with the same file, is the peer.
//!
//! The tests that need a device run as root on loop devices they create and remove (skipped
//! with the reason otherwise, failed under CI=true); the refusals need neither.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use support::RamLoop;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn report(output: &Output) -> Value {
    assert!(output.status.success(), "elevator failed: {}", stderr(output));
    serde_json::from_slice(&output.stdout).expect("a JSON report")
}

/// Writes `text` as `NAME.fio` in `dir`.
fn job_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.fio"));
    std::fs::write(&path, text).unwrap();
    path
}

/// A phase of a report: its name, bytes and issuers' names.
type Phase = (String, u64, Vec<String>);

/// Per run of a report: its scheduler and its phases.
fn phases(report: &Value) -> Vec<(String, Vec<Phase>)> {
    let runs = report["runs"].as_array().expect("runs");
    runs.iter()
        .map(|run| {
            let phases = run["phases"].as_array().expect("phases");
            let phases = phases
                .iter()
                .map(|phase| {
                    let issuers = phase["issuers"].as_array().expect("issuers");
                    let names =
                        issuers.iter().map(|i| i["name"].as_str().unwrap().to_owned()).collect();
                    (
                        phase["name"].as_str().unwrap().to_owned(),
                        phase["bytes"].as_u64().unwrap(),
                        names,
                    )
                })
                .collect();
            (run["scheduler"].as_str().unwrap().to_owned(), phases)
        })
        .collect()
}

// Proves real fio is the peer of `elevator run` on the same job file: fio (installed when
// missing) and elevator both run the same 4 KiB random-read QD1 1-second job on the same
// RAM-backed loop device, found through the file's own `filename`; fio's json+ names the job
// and reads bytes, and ours reads a number of bytes of the same order of magnitude (within a
// factor of 10 either way: a run reading nothing, a fraction of its time, or far past its
// runtime would fail; no speed ordering is asserted, the machine is shared). The device's
// queue is put back as found.
#[test]
fn real_fio_and_elevator_run_read_the_same_job_file() {
    let test = "real_fio_and_elevator_run_read_the_same_job_file";
    let Some(fio) = support::fio(test) else { return };
    let Some(disk) = RamLoop::attach(test, 64 << 20) else { return };
    disk.set_scheduler("none");
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[global]\nfilename={}\ndirect=1\nioengine=psync\nruntime=1\ntime_based\n\n\
         [randread-qd1]\nrw=randread\nbs=4k\niodepth=1\n",
        disk.path().display()
    );
    let file = job_file(dir.path(), "qd1", &text);
    let theirs = support::run_fio_json_plus(&fio, &file);
    let job = &theirs["jobs"][0];
    assert_eq!(job["jobname"], "randread-qd1", "{theirs}");
    let their_bytes = job["read"]["io_bytes"].as_u64().expect("fio's read io_bytes");
    assert!(their_bytes > 0, "fio read nothing: {job}");
    assert_eq!(job["write"]["io_bytes"].as_u64(), Some(0));
    // json+ carries the latency histogram (clat_ns.bins) a json+ comparison will need.
    assert!(job["read"]["clat_ns"]["bins"].is_object(), "not json+: {job}");

    let ours =
        report(&elevator(&["run", file.to_str().unwrap(), "-s", "none", "--format", "json"]));
    let runs = phases(&ours);
    assert_eq!(runs.len(), 1);
    let (scheduler, phases) = &runs[0];
    assert_eq!(scheduler, "none");
    assert_eq!(phases.len(), 1);
    let (name, our_bytes, issuers) = &phases[0];
    assert_eq!(
        (name.as_str(), issuers.as_slice()),
        ("randread-qd1", ["randread-qd1/0".to_owned()].as_slice())
    );
    assert!(*our_bytes > 0 && our_bytes % 4096 == 0, "{our_bytes}");
    let ratio = *our_bytes as f64 / their_bytes as f64;
    assert!((0.1..=10.0).contains(&ratio), "ours {our_bytes} bytes, fio's {their_bytes}");
    assert_eq!(ours["runs"][0]["mode"], "live");
    drop(disk);
}

const TWO_GROUPS: &str = "[global]\ndirect=1\nioengine=libaio\nruntime=300ms\ntime_based\n\n\
                          [rand]\nrw=randread\nbs=4k\niodepth=4\nnumjobs=2\n\n\
                          [seq]\nstonewall\nrw=read\nbs=64k\n";

// Proves `elevator run` runs a job file as fio does, on the target given with --target when
// the file names none: two groups (stonewall) in order, `numjobs=2` giving two clones of the
// first job, each job its own pattern (4 KiB vs 64 KiB operations), under each scheduler;
// `-w fio:FILE` runs the same jobs.
#[test]
fn elevator_run_runs_a_job_files_groups_on_the_given_target() {
    let test = "elevator_run_runs_a_job_files_groups_on_the_given_target";
    let Some(disk) = RamLoop::attach(test, 32 << 20) else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = job_file(dir.path(), "groups", TWO_GROUPS);
    let target = disk.path().to_str().unwrap();
    let file_arg = file.to_str().unwrap();
    let positional = report(&elevator(&[
        "run",
        file_arg,
        "-t",
        target,
        "-s",
        "none,mq-deadline",
        "--format",
        "json",
    ]));
    let runs = phases(&positional);
    let schedulers: Vec<&str> = runs.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(schedulers, ["none", "mq-deadline"]);
    for (scheduler, phases) in &runs {
        let shape: Vec<(&str, Vec<&str>)> = phases
            .iter()
            .map(|(name, _, issuers)| (name.as_str(), issuers.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            shape,
            [("rand", vec!["rand/0", "rand/1"]), ("seq", vec!["seq/0"])],
            "{scheduler}"
        );
        assert!(phases.iter().all(|(_, bytes, _)| *bytes > 0), "{scheduler}: {phases:?}");
    }
    let ops = |run: usize, phase: usize| {
        let phase = &positional["runs"][run]["phases"][phase];
        phase["bytes"].as_u64().unwrap() as f64 / phase["ops"].as_u64().unwrap() as f64
    };
    assert_eq!((ops(0, 0), ops(0, 1)), (4096.0, 65536.0), "each job its own block size");
    let via_w = report(&elevator(&[
        "run",
        "-w",
        &format!("fio:{file_arg}"),
        "-t",
        target,
        "-s",
        "none",
        "--format",
        "json",
    ]));
    let names: Vec<String> = phases(&via_w)[0].1.iter().map(|(n, _, _)| n.clone()).collect();
    assert_eq!(names, ["rand", "seq"]);
}

// Proves `elevator kernel compare DEV FILE.fio` runs the file's groups under each of the
// kernel's schedulers — a buffered job too (fio's default direct=0, honoured here through the
// page cache) — with the file's `filename` naming the device, and puts the device's queue
// back as it found it.
#[test]
fn kernel_compare_runs_a_job_file_and_puts_the_device_back() {
    let test = "kernel_compare_runs_a_job_file_and_puts_the_device_back";
    let Some(disk) = RamLoop::attach(test, 32 << 20) else { return };
    let before = disk.now();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[global]\nfilename={}\nruntime=300ms\ntime_based\n\n[direct]\ndirect=1\n\
         ioengine=libaio\nrw=randread\nbs=4k\niodepth=8\n\n[buffered]\nstonewall\nrw=read\n\
         bs=64k\n",
        disk.path().display()
    );
    let file = job_file(dir.path(), "kernel", &text);
    let state = tempfile::tempdir().unwrap();
    let state_arg = format!("--state-dir={}", state.path().display());
    let output = elevator(&[
        "kernel",
        &state_arg,
        "compare",
        &disk.name(),
        file.to_str().unwrap(),
        "-s",
        "none,mq-deadline",
        "--format",
        "json",
    ]);
    let runs = phases(&report(&output));
    assert_eq!(runs.len(), 2, "{}", stderr(&output));
    for (scheduler, phases) in &runs {
        let names: Vec<&str> = phases.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names, ["direct", "buffered"], "{scheduler}");
        assert!(phases.iter().all(|(_, bytes, _)| *bytes > 0), "{scheduler}: {phases:?}");
    }
    assert_eq!(disk.now(), before, "the queue put back as found");
}

// Proves what a live mode cannot honour is refused before anything is opened, exit 2, naming
// the file, the line and the option: fio's default buffered I/O and `buffered=1` in
// `elevator run`, a command-line target beside `directory`, several names in `filename` or
// jobs naming different files (such targets themselves are tests/fio_multi.rs's), a
// `filename` that is not the command line's target, and the CPU options only the simulator
// honours (`cpus_allowed`, `hipri`).
#[test]
fn what_a_live_mode_cannot_honour_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("default_buffered", "[a]\nrw=randread\n", "default_buffered.fio:1", "direct=0"),
        ("buffered", "[a]\nbuffered=1\nrw=read\n", "buffered.fio:2", "`buffered=1`"),
        ("directory", "[a]\ndirect=1\ndirectory=/tmp\n", "directory.fio:3", "its own targets"),
        (
            "two_names",
            "[a]\ndirect=1\nfilename=/dev/x:/dev/y\n",
            "two_names.fio:3",
            "its own targets",
        ),
        (
            "two_files",
            "[global]\ndirect=1\n[a]\nfilename=/dev/x\n[b]\nfilename=/dev/y\n",
            "two_files.fio:6",
            "names its own targets",
        ),
        (
            "not_target",
            "[a]\ndirect=1\nfilename=/dev/elevator-no-such-device\n",
            "not_target.fio:3",
            "is not the target given on the command line (/dev/elevator-other)",
        ),
        ("pinned", "[a]\ndirect=1\ncpus_allowed=0-1\n", "pinned.fio:3", "`cpus_allowed=0-1`"),
        ("polled", "[a]\ndirect=1\nioengine=io_uring\nhipri=1\n", "polled.fio:4", "`hipri"),
    ];
    for (name, text, at, says) in cases {
        let file = job_file(dir.path(), name, text);
        let output =
            elevator(&["run", file.to_str().unwrap(), "-t", "/dev/elevator-other", "-s", "none"]);
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {error}");
        assert!(error.contains(at) && error.contains(says), "{name}: {error}");
        assert!(!Path::new("/dev/elevator-other").exists(), "nothing was created");
    }
}

// Proves a job file's `filename` naming a file that does not exist yet is the target: created
// (under the scratch rules) at the job's `size`, as fio lays a job's file out at its size, and
// read by the job; nothing else is needed on the command line.
#[test]
fn a_new_file_named_by_filename_is_created_at_the_jobs_size() {
    // Not /tmp: often tmpfs, where O_DIRECT may be refused (the scratch file's own rule).
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let data = dir.path().join("data.bin");
    let text = format!(
        "[a]\ndirect=1\nrw=randread\nbs=4k\nsize=3m\nruntime=100ms\ntime_based\nfilename={}\n",
        data.display()
    );
    let file = job_file(dir.path(), "new_file", &text);
    let runs = phases(&report(&elevator(&[
        "run",
        file.to_str().unwrap(),
        "-s",
        "none",
        "--format",
        "json",
    ])));
    assert_eq!(std::fs::metadata(&data).unwrap().len(), 3 << 20);
    let (name, bytes, _) = &runs[0].1[0];
    assert_eq!(name, "a");
    assert!(*bytes > 0);
}

// Proves `elevator kernel compare` refuses, exit 2 with file and line, a job file whose
// `filename` names another device than the one compared, and a `directory`, before changing
// anything: the device's queue is as it was.
#[test]
fn kernel_compare_refuses_a_job_file_naming_another_target() {
    let test = "kernel_compare_refuses_a_job_file_naming_another_target";
    let Some(disk) = RamLoop::attach(test, 8 << 20) else { return };
    let before = disk.now();
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let state_arg = format!("--state-dir={}", state.path().display());
    let not_the_device =
        format!("is not the target given on the command line ({})", disk.path().display());
    for (name, text, at, says) in [
        (
            "other",
            "[a]\nrw=read\nfilename=/dev/elevator-no-such-device\n",
            "other.fio:3",
            not_the_device.as_str(),
        ),
        (
            "dir",
            "[a]\nrw=read\ndirectory=/var/tmp\n",
            "dir.fio:3",
            "is not honoured by elevator kernel compare",
        ),
    ] {
        let file = job_file(dir.path(), name, text);
        let output = elevator(&[
            "kernel",
            &state_arg,
            "compare",
            &disk.name(),
            "-w",
            &format!("fio:{}", file.display()),
            "-s",
            "none,mq-deadline",
        ]);
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {error}");
        assert!(error.contains(at) && error.contains(says), "{name}: {error}");
        assert_eq!(disk.now(), before, "{name}: the queue untouched");
    }
}
