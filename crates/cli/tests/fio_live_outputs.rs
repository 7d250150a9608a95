//! fio's outputs from live and kernel runs (issue 17): `elevator run FILE.fio` and
//! `elevator kernel compare DEV FILE.fio` with `--output-format`, the job file's log files,
//! and `elevator fio` with `ELEVATOR_FIO_MODE=live|kernel`. The figures are real
//! measurements, so the tests check what must hold of any run (bytes the job asked for,
//! histograms that add up, logs that add up to the JSON), never how fast.
//!
//! The tests that need a device run as root on RAM-backed loop devices they create and remove
//! (skipped with the reason otherwise, failed under CI=true); the refusals need neither.

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

/// Writes `text` as `NAME.fio` in `dir`.
fn job_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.fio"));
    std::fs::write(&path, text).unwrap();
    path
}

/// fio's JSON from `text` (a document, as fio writes it).
fn fio_json(text: &[u8]) -> Value {
    serde_json::from_slice(text)
        .unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(text)))
}

/// Milliseconds since the Unix epoch now (to bracket a live run's dates).
#[allow(clippy::disallowed_methods)] // A test reads the wall clock to check live dates.
fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Checks one direction of a json+ job that did `ios` operations of `bs` bytes: io_bytes and
/// total_ios as asked, clat percentiles present and in order, bins adding up to total_ios.
fn check_direction(job: &Value, direction: &str, ios: u64, bs: u64) {
    let stats = &job[direction];
    assert_eq!(stats["io_bytes"].as_u64(), Some(ios * bs), "{direction}: {job}");
    assert_eq!(stats["total_ios"].as_u64(), Some(ios), "{direction}: {job}");
    let percentiles = stats["clat_ns"]["percentile"].as_object().expect("clat percentiles");
    assert_eq!(percentiles.len(), 17, "fio's default percentile list: {percentiles:?}");
    let mut keyed: Vec<(f64, u64)> = percentiles
        .iter()
        .map(|(p, v)| (p.parse::<f64>().unwrap(), v.as_u64().expect("a ns value")))
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(keyed[0].1 > 0, "a real latency is never 0 ns: {keyed:?}");
    assert!(keyed.windows(2).all(|w| w[0].1 <= w[1].1), "percentiles out of order: {keyed:?}");
    let bins = stats["clat_ns"]["bins"].as_object().expect("json+ bins");
    let counted: u64 = bins.values().map(|count| count.as_u64().unwrap()).sum();
    assert_eq!(counted, ios, "{direction}: the bins hold every I/O");
    assert!(stats["iops_samples"].as_u64().is_some(), "{stats}");
}

// Proves `elevator run FILE.fio --output-format json+` reports real measurements as fio's
// jobs: a size-bound 4 KiB random-read job on a RAM-backed loop device reads exactly the
// bytes and I/Os it asked for (8 MiB, 2048 reads, no writes), its clat percentiles are all
// there and in order, the json+ bins add up to the I/Os, the iodepth map adds up to 100 %,
// the job and document are dated by the wall clock (between before and after the run, not
// the simulator's 1970 epoch), and the extra key says live. With two schedulers and -o, each
// scheduler's document goes to FILE.SCHED.json, as `elevator sim` does.
#[test]
fn elevator_run_json_plus_reports_what_the_job_did() {
    let test = "elevator_run_json_plus_reports_what_the_job_did";
    let Some(disk) = RamLoop::attach(test, 32 << 20) else { return };
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[global]\nfilename={}\ndirect=1\nioengine=libaio\n\n\
         [rr]\nrw=randread\nbs=4k\nsize=8m\niodepth=8\n",
        disk.path().display()
    );
    let file = job_file(dir.path(), "rr", &text);
    let before_ms = unix_ms();
    let output =
        elevator(&["run", file.to_str().unwrap(), "-s", "none", "--output-format", "json+"]);
    let after_ms = unix_ms();
    assert!(output.status.success(), "{}", stderr(&output));
    let document = fio_json(&output.stdout);
    let jobs = document["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 1, "{document}");
    let job = &jobs[0];
    assert_eq!(job["jobname"], "rr");
    check_direction(job, "read", 2048, 4096);
    assert_eq!(job["write"]["io_bytes"].as_u64(), Some(0));
    let depths: f64 =
        job["iodepth_level"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum();
    assert!((depths - 100.0).abs() < 0.5, "iodepth_level sums to {depths}");
    let job_start = job["job_start"].as_u64().expect("job_start");
    assert!((before_ms..=after_ms).contains(&job_start), "job_start {job_start}");
    let stamp = document["timestamp_ms"].as_u64().expect("timestamp_ms");
    assert!((job_start..=after_ms).contains(&stamp), "timestamp_ms {stamp}");
    // fio's `elapsed`: whole seconds since the run began (rounded up), not since the epoch.
    let elapsed = job["elapsed"].as_u64().expect("elapsed");
    assert!(elapsed <= (after_ms - before_ms).div_ceil(1000) + 1, "elapsed {elapsed}");
    assert_eq!(job["elevator"]["mode"], "live");
    assert_eq!(job["elevator"]["scheduler"], "none");

    let out = dir.path().join("out.json");
    let both = elevator(&[
        "run",
        file.to_str().unwrap(),
        "-s",
        "none,mq-deadline",
        "--output-format",
        "json+",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(both.status.success(), "{}", stderr(&both));
    assert!(both.stdout.is_empty(), "the documents go to files");
    for scheduler in ["none", "mq-deadline"] {
        let path = dir.path().join(format!("out.{scheduler}.json"));
        let document = fio_json(&std::fs::read(&path).expect("one document per scheduler"));
        assert_eq!(document["jobs"][0]["elevator"]["scheduler"], scheduler);
        check_direction(&document["jobs"][0], "read", 2048, 4096);
    }
    drop(disk);
}

// Proves a live run's bw log is fio's and adds up: a 50/50 random read/write job writing
// `write_bw_log` without `log_avg_msec` logs one line per I/O with fio's five columns (time
// in ms, KiB/s, direction, block size, offset); per direction the lines' count is the
// JSON's total_ios and their block sizes sum to its io_bytes; times never go back; both
// directions appear. The same holds through `elevator kernel compare DEV FILE.fio`, whose log
// names carry the scheduler when two run.
#[test]
fn live_bw_logs_add_up_to_the_json() {
    let test = "live_bw_logs_add_up_to_the_json";
    let Some(disk) = RamLoop::attach(test, 32 << 20) else { return };
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[global]\nfilename={}\ndirect=1\n\n\
         [mix]\nrw=randrw\nrwmixread=50\nbs=4k\nsize=4m\niodepth=4\nwrite_bw_log=mix\n",
        disk.path().display()
    );
    let file = job_file(dir.path(), "mix", &text);
    let out = dir.path().join("mix.json");
    let run = elevator(&[
        "run",
        file.to_str().unwrap(),
        "-s",
        "none",
        "--output-format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let document = fio_json(&std::fs::read(&out).unwrap());
    check_log(&dir.path().join("mix_bw.1.log"), &document["jobs"][0]);

    let kernel_dir = tempfile::tempdir().unwrap();
    let file = job_file(kernel_dir.path(), "mix", &text);
    let out = kernel_dir.path().join("mix.json");
    let kernel = elevator(&[
        "kernel",
        "compare",
        disk.path().to_str().unwrap(),
        file.to_str().unwrap(),
        "-s",
        "none,mq-deadline",
        "--output-format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(kernel.status.success(), "{}", stderr(&kernel));
    for scheduler in ["none", "mq-deadline"] {
        let json = kernel_dir.path().join(format!("mix.{scheduler}.json"));
        let document = fio_json(&std::fs::read(&json).unwrap());
        assert_eq!(document["jobs"][0]["elevator"]["mode"], "kernel");
        let log = kernel_dir.path().join(format!("mix_bw.1.{scheduler}.log"));
        check_log(&log, &document["jobs"][0]);
    }
    drop(disk);
}

/// Checks a per-I/O bw log against its job's JSON (see the test above).
fn check_log(path: &Path, job: &Value) {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut lines = [0u64; 2];
    let mut bytes = [0u64; 2];
    let mut last_ms = 0;
    for line in text.lines() {
        let columns: Vec<u64> = line
            .split(", ")
            .map(|c| c.trim().parse().unwrap_or_else(|_| panic!("{line}")))
            .collect();
        assert_eq!(columns.len(), 5, "fio's five columns: {line}");
        assert!(columns[0] >= last_ms, "time went back: {line}");
        last_ms = columns[0];
        assert!(columns[1] > 0, "a real I/O's bandwidth: {line}");
        let direction = columns[2] as usize;
        assert!(direction < 2, "read or write: {line}");
        assert_eq!(columns[3], 4096, "bs=4k: {line}");
        lines[direction] += 1;
        bytes[direction] += columns[3];
    }
    for (direction, name) in ["read", "write"].iter().enumerate() {
        assert!(lines[direction] > 0, "no {name} logged: {text}");
        assert_eq!(Some(lines[direction]), job[name]["total_ios"].as_u64(), "{name}");
        assert_eq!(Some(bytes[direction]), job[name]["io_bytes"].as_u64(), "{name}");
    }
    assert_eq!(bytes[0] + bytes[1], 4 << 20, "size=4m done once");
}

/// A directory holding a link named `fio` to elevator (how tools run it).
fn fio_link() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("fio");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_elevator"), &link).unwrap();
    (dir, link)
}

// Proves `fio` (a link to elevator) runs live with ELEVATOR_FIO_MODE=live: our scheduler
// from ELEVATOR_FIO_SCHEDULER in front of the loop device ELEVATOR_FIO_TARGET names (the job
// names none), fio's JSON on stdout with the job's real figures (the 4 MiB it asked for, in
// 1024 reads), and nothing at all on stderr, as tools that run fio require.
#[test]
fn fio_link_runs_live_quietly() {
    let test = "fio_link_runs_live_quietly";
    let Some(disk) = RamLoop::attach(test, 16 << 20) else { return };
    let (dir, fio) = fio_link();
    let file =
        job_file(dir.path(), "seq", "[seq]\nrw=read\nbs=4k\nsize=4m\ndirect=1\nioengine=psync\n");
    let output = Command::new(&fio)
        .args(["--output-format=json", file.to_str().unwrap()])
        .env("ELEVATOR_FIO_MODE", "live")
        .env("ELEVATOR_FIO_TARGET", disk.path())
        .env("ELEVATOR_FIO_SCHEDULER", "kyber")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "", "nothing on stderr on success");
    let document = fio_json(&output.stdout);
    let job = &document["jobs"][0];
    assert_eq!(job["jobname"], "seq");
    assert_eq!(job["read"]["io_bytes"].as_u64(), Some(4 << 20));
    assert_eq!(job["read"]["total_ios"].as_u64(), Some(1024));
    assert_eq!(job["elevator"]["mode"], "live");
    assert_eq!(job["elevator"]["scheduler"], "kyber");
    drop(disk);
}

// Proves `fio` with ELEVATOR_FIO_MODE=kernel runs on the kernel's scheduler that
// ELEVATOR_FIO_SCHEDULER names (the device's line says so during the run: the report's
// scheduler is mq-deadline while the device was found on none) and puts the device's queue
// back exactly as it was (scheduler and settings), quietly; without ELEVATOR_FIO_SCHEDULER
// it runs under the device's current one and leaves it so.
#[test]
fn fio_link_kernel_mode_restores_the_device() {
    let test = "fio_link_kernel_mode_restores_the_device";
    let Some(disk) = RamLoop::attach(test, 16 << 20) else { return };
    disk.set_scheduler("none");
    let before = disk.now();
    let (dir, fio) = fio_link();
    let text = format!(
        "[rr]\nfilename={}\nrw=randread\nbs=4k\nsize=2m\ndirect=1\n",
        disk.path().display()
    );
    let file = job_file(dir.path(), "rr", &text);
    let output = Command::new(&fio)
        .args(["--output-format=json", file.to_str().unwrap()])
        .env("ELEVATOR_FIO_MODE", "kernel")
        .env("ELEVATOR_FIO_SCHEDULER", "mq-deadline")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "", "nothing on stderr on success");
    let document = fio_json(&output.stdout);
    let job = &document["jobs"][0];
    assert_eq!(job["elevator"]["mode"], "kernel");
    assert_eq!(job["elevator"]["scheduler"], "mq-deadline");
    assert_eq!(job["read"]["io_bytes"].as_u64(), Some(2 << 20));
    assert_eq!(disk.now(), before, "the device's queue is put back");

    let current = Command::new(&fio)
        .args(["--output-format=json", file.to_str().unwrap()])
        .env("ELEVATOR_FIO_MODE", "kernel")
        .output()
        .unwrap();
    assert!(current.status.success(), "{}", stderr(&current));
    assert_eq!(fio_json(&current.stdout)["jobs"][0]["elevator"]["scheduler"], "none");
    assert_eq!(disk.now(), before);
    drop(disk);
}

// Proves what `elevator fio` cannot honour outside its mode is refused naming the variable,
// never ignored: a target in sim mode, a simulated device in live mode, and a live run with
// no target at all; and `elevator run --output-format` names a format it does not know
// before anything is opened.
#[test]
fn misplaced_targets_and_formats_are_refused() {
    let (dir, fio) = fio_link();
    let file = job_file(dir.path(), "j", "[j]\nrw=read\nsize=1m\ndirect=1\n");
    let run = |vars: &[(&str, &str)]| {
        let mut command = Command::new(&fio);
        command.args(["--output-format=json", file.to_str().unwrap()]);
        for (name, value) in vars {
            command.env(name, value);
        }
        command.output().unwrap()
    };
    let sim_target = run(&[("ELEVATOR_FIO_TARGET", "/dev/null")]);
    assert!(!sim_target.status.success());
    assert!(stderr(&sim_target).contains("ELEVATOR_FIO_TARGET"), "{}", stderr(&sim_target));
    let live_device = run(&[("ELEVATOR_FIO_MODE", "live"), ("ELEVATOR_FIO_DEVICE", "ssd")]);
    assert!(!live_device.status.success());
    assert!(stderr(&live_device).contains("ELEVATOR_FIO_DEVICE"), "{}", stderr(&live_device));
    let no_target = run(&[("ELEVATOR_FIO_MODE", "live")]);
    assert!(!no_target.status.success());
    assert!(stderr(&no_target).contains("needs a target"), "{}", stderr(&no_target));
    assert!(no_target.stdout.is_empty());

    let missing = dir.path().join("never-created");
    let bad = elevator(&[
        "run",
        file.to_str().unwrap(),
        "-t",
        missing.to_str().unwrap(),
        "--output-format",
        "xml",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("accepted: normal, json, json+, terse"), "{}", stderr(&bad));
    assert!(!missing.exists(), "refused before the target was created");
}
