//! fio's log files from `elevator sim FILE.fio` (fio-compat.md §4.6): names, columns and
//! values against the same run's json, determinism, several schedulers, refusals; and
//! `--output-format` with `-w fio:FILE`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn elevator(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run elevator")
}

fn job_file(dir: &Path, text: &str) -> PathBuf {
    let file = dir.join("job.fio");
    std::fs::write(&file, text).unwrap();
    file
}

/// A log's lines, split into their columns.
fn lines(path: &Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| {
        panic!("{}: {error}", path.display());
    });
    text.lines()
        .map(|line| {
            line.split(", ")
                .map(|field| field.parse().unwrap_or_else(|_| panic!("`{line}`")))
                .collect()
        })
        .collect()
}

/// Two clones reading 4 KiB at random with their bandwidth logged per operation, offsets on;
/// then a writer whose latency logs share one name (`per_job_logs=0`), prefix its job name.
const TWO_JOBS: &str = "[global]\nioengine=libaio\ndirect=1\nsize=4m\nruntime=300ms\n\
                        time_based\n\n\
                        [reader]\nrw=randread\nbs=4k\niodepth=2\nnumjobs=2\n\
                        write_bw_log=pre\nlog_offset=1\n\n\
                        [writer]\nstonewall\nrw=write\nbs=64k\nwrite_lat_log\nper_job_logs=0\n";

// Proves the log files carry fio's names and columns and agree with the same run's json:
// `pre_bw.1.log` and `pre_bw.2.log` (thread numbers over the clones), one line per read
// (as many as json's total_ios), six columns with the offset, each offset a 4 KiB block
// inside the 4 MiB file, times in ms within the run, bw = 4096 · 10^6 / clat; the writer's
// `writer_lat.log`, `writer_clat.log` (no `.N`: per_job_logs=0) whose values average to
// json's lat_ns mean, five columns, direction 1; `writer_slat.log` empty (no submission
// latency); json's bandwidth statistics are per operation, as fio's when it logs them so
// (samples = I/Os, max = the log's largest). A wrong name, column, count or unit fails it.
#[test]
fn logs_have_fios_names_columns_and_the_runs_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = job_file(dir.path(), TWO_JOBS);
    let out = dir.path().join("out").join("run.json");
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let output = elevator(
        dir.path(),
        &[
            "sim",
            file.to_str().unwrap(),
            "-d",
            "ssd",
            "-s",
            "none",
            "--output-format",
            "json",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let logs = dir.path().join("out");
    for (clone, job) in [(1, &json["jobs"][0]), (2, &json["jobs"][1])] {
        let bw = lines(&logs.join(format!("pre_bw.{clone}.log")));
        assert_eq!(bw.len() as u64, job["read"]["total_ios"].as_u64().unwrap());
        // fio samples bandwidth per operation when it logs it so (bw_avg_time = 0).
        assert_eq!(job["read"]["bw_samples"], job["read"]["total_ios"]);
        let max = bw.iter().map(|line| line[1]).max().unwrap();
        assert_eq!(job["read"]["bw_max"].as_u64(), Some(max));
        assert!(bw.len() > 10);
        for line in &bw {
            let [time_ms, value, direction, bs, offset, prio] = line[..] else {
                panic!("six columns: {line:?}")
            };
            assert!(time_ms <= 301, "{line:?}");
            assert_eq!((direction, bs, prio), (0, 4096, 0));
            assert!(offset % 4096 == 0 && offset < 4 << 20, "{line:?}");
            assert!(value > 0, "{line:?}");
        }
        // bw = bytes · 10^6 / clat_ns: the reciprocal mean is json's clat mean.
        let clat_mean = job["read"]["clat_ns"]["mean"].as_f64().unwrap();
        let from_bw: f64 =
            bw.iter().map(|line| 4096e6 / line[1] as f64).sum::<f64>() / bw.len() as f64;
        assert!((from_bw / clat_mean - 1.0).abs() < 0.01, "{from_bw} vs {clat_mean}");
    }
    assert!(!logs.join("pre_bw.3.log").exists());
    let writer = &json["jobs"][2];
    let lat = lines(&logs.join("writer_lat.log"));
    assert_eq!(lat.len() as u64, writer["write"]["total_ios"].as_u64().unwrap());
    assert!(lat.iter().all(|line| line.len() == 5 && line[2] == 1 && line[3] == 65536));
    let mean = lat.iter().map(|line| line[1] as f64).sum::<f64>() / lat.len() as f64;
    let json_mean = writer["write"]["lat_ns"]["mean"].as_f64().unwrap();
    assert!((mean - json_mean).abs() < 1.0, "{mean} vs {json_mean}");
    assert_eq!(lines(&logs.join("writer_clat.log")), lat);
    assert_eq!(std::fs::read_to_string(logs.join("writer_slat.log")).unwrap(), "");
}

// Proves the logs are deterministic and name the scheduler with several: the same run twice
// gives byte-identical files, and `-s none,deadline` writes `NAME.N.none.log` and
// `NAME.N.deadline.log`, in the working directory without `-o`.
#[test]
fn logs_are_deterministic_and_per_scheduler() {
    let text = "[j]\nioengine=libaio\ndirect=1\nsize=4m\nruntime=200ms\ntime_based\n\
                rw=randrw\nbs=4k\niodepth=4\nwrite_iops_log=io\nlog_avg_msec=50\n";
    let mut runs = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        let file = job_file(dir.path(), text);
        let output =
            elevator(dir.path(), &["sim", file.to_str().unwrap(), "-d", "ssd", "-s", "none"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        runs.push(std::fs::read(dir.path().join("io_iops.1.log")).unwrap());
    }
    assert_eq!(runs[0], runs[1]);
    // Windows of 50 ms over 200 ms, reads and writes: at most 4 lines each way.
    let text0 = String::from_utf8(runs[0].clone()).unwrap();
    assert!((2..=8).contains(&text0.lines().count()), "{text0}");
    let dir = tempfile::tempdir().unwrap();
    let file = job_file(dir.path(), text);
    let output = elevator(
        dir.path(),
        &["sim", file.to_str().unwrap(), "-d", "ssd", "-s", "none,deadline", "-o", "r.json"],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(std::fs::read(dir.path().join("io_iops.1.none.log")).unwrap(), runs[0]);
    assert!(dir.path().join("io_iops.1.deadline.log").exists());
}

// Proves a log or reporting option not yet honoured is refused naming file, line and option
// (exit 2), not silently dropped; the same options at fio's defaults change nothing and run.
#[test]
fn unwritten_logs_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    for option in ["write_hist_log=h", "gtod_reduce=1", "bwavgtime=250", "stats=0", "disable_lat=1"]
    {
        let file = job_file(dir.path(), &format!("[j]\nsize=1m\nrw=read\n{option}\n"));
        let output =
            elevator(dir.path(), &["sim", file.to_str().unwrap(), "-d", "ssd", "-s", "none"]);
        assert_eq!(output.status.code(), Some(2), "{option}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let name = option.split('=').next().unwrap();
        assert!(stderr.contains("job.fio:4") && stderr.contains(name), "{option}: {stderr}");
    }
    let file = job_file(dir.path(), "[j]\nsize=1m\nrw=read\nbwavgtime=500\ngtod_reduce=0\n");
    let output = elevator(dir.path(), &["sim", file.to_str().unwrap(), "-d", "ssd", "-s", "none"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

// Proves `--output-format` works with `-w fio:FILE` as with the positional file: the same
// document byte for byte; and is refused (exit 2) with a workload that is not a job file.
#[test]
fn output_format_with_w_fio() {
    let dir = tempfile::tempdir().unwrap();
    let file = job_file(dir.path(), "[j]\nsize=1m\nrw=randread\n");
    let path = file.to_str().unwrap();
    let positional =
        elevator(dir.path(), &["sim", path, "-d", "ssd", "-s", "none", "--output-format", "json"]);
    let workload = format!("fio:{path}");
    let with_w = elevator(
        dir.path(),
        &["sim", "-w", &workload, "-d", "ssd", "-s", "none", "--output-format", "json"],
    );
    assert!(with_w.status.success(), "{}", String::from_utf8_lossy(&with_w.stderr));
    assert_eq!(positional.stdout, with_w.stdout);
    let value: Value = serde_json::from_slice(&with_w.stdout).unwrap();
    assert_eq!(value["jobs"][0]["jobname"], "j");
    let refused = elevator(dir.path(), &["sim", "-w", "job", "-s", "none", "--minimal"]);
    assert_eq!(refused.status.code(), Some(2));
}
