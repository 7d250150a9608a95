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
    // log_issue_time without write_lat_log and log_offset, and a coarseness over 6, fio
    // refuses itself.
    for option in [
        "log_issue_time=1",
        "log_hist_coarseness=7",
        "gtod_reduce=1",
        "bwavgtime=250",
        "stats=0",
        "disable_lat=1",
    ] {
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

/// Runs `text` as `job.fio` in `dir` with json+ to `out.json`; the parsed document.
fn run_json_plus(dir: &Path, text: &str) -> Value {
    let file = job_file(dir, text);
    let out = dir.join("out.json");
    let output = elevator(
        dir,
        &[
            "sim",
            file.to_str().unwrap(),
            "-d",
            "ssd",
            "-s",
            "none",
            "--output-format",
            "json+",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

/// Random reads and writes for a second, their completion latencies logged per operation
/// (with issue times) and as histograms every 100 ms, two buckets a column.
const HIST_JOB: &str = "[j]\nioengine=libaio\ndirect=1\nsize=64m\nruntime=1s\ntime_based\n\
                        rw=randrw\nbs=4k\niodepth=4\nwrite_hist_log=h\nlog_hist_msec=100\n\
                        log_hist_coarseness=1\nwrite_lat_log=l\nlog_offset=1\n\
                        log_issue_time=1\n";

// Proves the clat_hist log against the same run's json+ bins: `h_clat_hist.1.log`, each line
// `time, direction, 4096` and 1856/2 bucket columns; per direction, each column summed over
// the lines is at most json+'s count of its two buckets (json+ `bins` keyed by bucket
// midpoint), and what json+ counts beyond the log is exactly the completions after the last
// line (fio logs no partial window): between the clat log's operations later than the last
// line's ms and those at or after it less the line's own. Line k of a direction is at the
// first of its operations (clat log) at or after its first one after 0 ms + 100·(k+1) ms. A wrong
// bucket, coarsening, window or direction fails it.
#[test]
fn hist_log_agrees_with_json_plus_bins() {
    use elevator_report::fio::hist::val_to_idx;
    let dir = tempfile::tempdir().unwrap();
    let json = run_json_plus(dir.path(), HIST_JOB);
    let hist = lines(&dir.path().join("h_clat_hist.1.log"));
    let clat = lines(&dir.path().join("l_clat.1.log"));
    assert!(hist.len() >= 10, "{} lines", hist.len());
    for (direction, name) in [(0u64, "read"), (1, "write")] {
        let rows: Vec<&Vec<u64>> = hist.iter().filter(|row| row[1] == direction).collect();
        assert!(rows.len() >= 5, "{name}: {} lines", rows.len());
        let mut logged = vec![0u64; 928];
        for row in &rows {
            assert_eq!(row.len(), 3 + 928);
            assert_eq!(row[2], 4096);
            for (sum, count) in logged.iter_mut().zip(&row[3..]) {
                *sum += count;
            }
        }
        // The first operation begins the window; a window ends at the first operation at
        // least 100 ms after its start and the next starts 100 ms after it (fio keeps the
        // drift), so line k is at the first operation at or after first + 100·(k+1) ms.
        let times: Vec<u64> =
            clat.iter().filter(|line| line[2] == direction).map(|line| line[0]).collect();
        // fio's window start of 0 reads as "not begun": operations at 0 ms do not begin it.
        let first = *times.iter().find(|&&time| time > 0).unwrap();
        for (k, row) in rows.iter().enumerate() {
            let due = first + 100 * (k as u64 + 1);
            let expected = times.iter().find(|&&time| time >= due).copied();
            assert_eq!(Some(row[0]), expected, "{name} line {k}");
        }
        let mut binned = vec![0u64; 928];
        let bins = json["jobs"][0][name]["clat_ns"]["bins"].as_object().unwrap();
        for (midpoint, count) in bins {
            binned[val_to_idx(midpoint.parse().unwrap()) / 2] += count.as_u64().unwrap();
        }
        for (column, (log, json)) in logged.iter().zip(&binned).enumerate() {
            assert!(log <= json, "{name} column {column}: log {log} > json+ {json}");
        }
        let total_ios = json["jobs"][0][name]["total_ios"].as_u64().unwrap();
        assert_eq!(binned.iter().sum::<u64>(), total_ios);
        let unlogged = total_ios - logged.iter().sum::<u64>();
        let last_ms = rows.last().unwrap()[0];
        let ops = clat.iter().filter(|line| line[2] == direction);
        let after = ops.clone().filter(|line| line[0] > last_ms).count() as u64;
        let from = ops.filter(|line| line[0] >= last_ms).count() as u64;
        assert!((after..from).contains(&unlogged), "{name}: {unlogged} not in {after}..{from}");
    }
}

// Proves `log_issue_time` and `log_window_value=both` columns on a real run: every clat line
// has seven columns whose issue time plus latency falls in the line's ms (completion =
// issue + clat, all since the job's start), the lat log's issue column is 0 (fio fills it
// for clat and slat only); with `log_avg_msec=100` and `both` each latency line carries the
// window's mean then its max (max ≥ mean, and the max is some operation's latency) and
// each bw line its rate twice.
#[test]
fn issue_time_and_both_values_columns() {
    let dir = tempfile::tempdir().unwrap();
    run_json_plus(dir.path(), HIST_JOB);
    let clat = lines(&dir.path().join("l_clat.1.log"));
    assert!(clat.len() > 100);
    for line in &clat {
        let [time_ms, value, _, _, _, _, issue_ns] = line[..] else { panic!("{line:?}") };
        assert_eq!((issue_ns + value) / 1_000_000, time_ms, "{line:?}");
    }
    let lat = lines(&dir.path().join("l_lat.1.log"));
    assert!(lat.iter().all(|line| line.len() == 7 && line[6] == 0));

    let dir = tempfile::tempdir().unwrap();
    let text = "[j]\nioengine=libaio\ndirect=1\nsize=64m\nruntime=1s\ntime_based\n\
                rw=randread\nbs=4k\niodepth=4\nwrite_lat_log=w\nwrite_bw_log=w\n\
                log_avg_msec=100\nlog_window_value=both\n";
    run_json_plus(dir.path(), text);
    let lat = lines(&dir.path().join("w_clat.1.log"));
    assert!(lat.len() >= 9, "{lat:?}");
    let json = run_json_plus(dir.path(), text);
    let clat_max = json["jobs"][0]["read"]["clat_ns"]["max"].as_u64().unwrap();
    for line in &lat {
        let [_, mean, max, 0, 0, 0] = line[..] else { panic!("{line:?}") };
        assert!(mean <= max && max <= clat_max, "{line:?}");
    }
    assert_eq!(lat.iter().map(|line| line[2]).max(), Some(clat_max));
    let bw = lines(&dir.path().join("w_bw.1.log"));
    assert!(!bw.is_empty() && bw.iter().all(|line| line.len() == 6 && line[1] == line[2]));
}

/// `/usr/bin/python3` with pandas and Debian fio's `fiologparser_hist.py` (shipped gzipped
/// in fio's docs), both installed with apt-get when missing; `None` (after saying why) when
/// they cannot be had, and under `CI=true` the test fails naming what is missing.
fn fiologparser_hist(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let python = PathBuf::from("/usr/bin/python3");
    let script_gz = Path::new("/usr/share/doc/fio/fiologparser_hist.py.gz");
    let ready = || {
        script_gz.exists()
            && Command::new(&python)
                .args(["-c", "import pandas, numpy"])
                .output()
                .is_ok_and(|out| out.status.success())
    };
    if !ready() {
        let _ = Command::new("apt-get").args(["update", "-qq"]).output();
        let _ = Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(["fio", "python3", "python3-pandas", "python3-numpy"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output();
    }
    if !ready() {
        let message = "fiologparser_hist.py needs Debian's fio (its \
                       /usr/share/doc/fio/fiologparser_hist.py.gz) and python3-pandas, which \
                       apt-get could not install";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
        #[allow(clippy::print_stderr)]
        {
            eprintln!("skipping: {message}");
        }
        return None;
    }
    let script = dir.join("fiologparser_hist.py");
    let gunzip = Command::new("gzip").args(["-dc"]).arg(script_gz).output().expect("gzip");
    assert!(gunzip.status.success());
    std::fs::write(&script, gunzip.stdout).unwrap();
    Some((python, script))
}

// Proves fio's own reader takes our histogram log (peer: Debian fio's fiologparser_hist.py):
// it parses `h_clat_hist.1.log` without error; over one interval spanning the run (no
// weighting) its sample count is the log's bucket total, and its median, 90th and 99th
// percentiles are within 3 % of our json+'s clat percentiles for the same reads (its
// interpolation inside the doubled buckets against fio's bucket midpoints) and its max
// within 3 % of json's max.
#[test]
fn fiologparser_hist_reads_our_log() {
    let dir = tempfile::tempdir().unwrap();
    let Some((python, script)) = fiologparser_hist(dir.path()) else { return };
    let text = HIST_JOB.replace("rw=randrw", "rw=randread");
    let json = run_json_plus(dir.path(), &text);
    let log = dir.path().join("h_clat_hist.1.log");
    let logged: u64 = lines(&log).iter().map(|row| row[3..].iter().sum::<u64>()).sum();
    let output = Command::new(&python)
        .arg(&script)
        .args(["--noweight", "-i", "1000000", "--percentiles", "50:90:99"])
        .arg(&log)
        .output()
        .expect("run fiologparser_hist.py");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && stderr.trim().is_empty(), "{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let rows: Vec<&str> = stdout.lines().collect();
    // end-time, samples, min, avg, median, 50%, 90%, 99%, max
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(rows[0].starts_with("end-time, samples,"), "{stdout}");
    let fields: Vec<f64> = rows[1].split(", ").map(|field| field.parse().unwrap()).collect();
    assert_eq!(fields[1] as u64, logged);
    let read = &json["jobs"][0]["read"]["clat_ns"];
    let close = |ours: f64, theirs: f64, what: &str| {
        assert!((theirs / ours - 1.0).abs() < 0.03, "{what}: ours {ours}, parser {theirs}");
    };
    for (column, key) in [(4, "50.000000"), (6, "90.000000"), (7, "99.000000")] {
        close(read["percentile"][key].as_f64().unwrap(), fields[column], key);
    }
    close(read["max"].as_f64().unwrap(), fields[8], "max");
}
