//! fio's output formats from `elevator sim FILE.fio --output-format …` (fio-compat.md §4, §5):
//! the shapes the tools of §5 read, checked key by key, and the real fio-plot drawing a graph.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

/// A directory of this test's own.
fn scratch(test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("elevator-fio-output-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Two groups: a reader with two clones reported as one (`group_reporting`), then, after a
/// stonewall, a writer.
const TWO_GROUPS: &str = "[global]\nioengine=libaio\ndirect=1\nsize=1m\n\n\
                          [reader]\nrw=randread\nbs=4k\niodepth=8\nnumjobs=2\ngroup_reporting\n\n\
                          [writer]\nstonewall\nrw=write\nbs=64k\n";

fn run_json(test: &str, text: &str, format: &str) -> (String, Value) {
    let dir = scratch(test);
    let file = dir.join("job.fio");
    std::fs::write(&file, text).unwrap();
    let output = elevator(&[
        "sim",
        file.to_str().unwrap(),
        "-d",
        "ssd",
        "-s",
        "deadline",
        "--output-format",
        format,
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stderr.is_empty(), "tools treat any stderr as failure (§5.1)");
    let text = String::from_utf8(output.stdout).unwrap();
    let value = serde_json::from_str(&text).expect("one pure JSON document on stdout (§5.2)");
    (text, value)
}

/// An object's keys, sorted (serde_json's map orders them).
fn keys(value: &Value) -> Vec<&str> {
    value.as_object().expect("an object").keys().map(String::as_str).collect()
}

/// `expected`, sorted, for comparing with [`keys`].
fn sorted<'a>(expected: &[&'a str]) -> Vec<&'a str> {
    let mut keys = expected.to_vec();
    keys.sort_unstable();
    keys
}

/// Asserts `expected` keys appear in this order in `text` at `indent` spaces, from `from`;
/// returns where the last one was found (fio's key order, which a parsed map loses).
fn assert_order(text: &str, from: usize, indent: usize, expected: &[&str]) -> usize {
    let mut at = from;
    for key in expected {
        let needle = format!("\n{}\"{key}\" : ", " ".repeat(indent));
        let found = text[at..].find(&needle).unwrap_or_else(|| panic!("`{key}` after byte {at}"));
        at += found + 1;
    }
    at
}

const JOB_KEYS: &[&str] = &[
    "jobname",
    "groupid",
    "job_start",
    "error",
    "eta",
    "elapsed",
    "job options",
    "read",
    "write",
    "trim",
    "sync",
    "job_runtime",
    "usr_cpu",
    "sys_cpu",
    "ctx",
    "majf",
    "minf",
    "iodepth_level",
    "iodepth_submit",
    "iodepth_complete",
    "latency_ns",
    "latency_us",
    "latency_ms",
    "latency_depth",
    "latency_target",
    "latency_percentile",
    "latency_window",
    "elevator",
];
const DIRECTION_KEYS: &[&str] = &[
    "io_bytes",
    "io_kbytes",
    "bw_bytes",
    "bw",
    "iops",
    "runtime",
    "total_ios",
    "short_ios",
    "drop_ios",
    "slat_ns",
    "clat_ns",
    "lat_ns",
    "bw_min",
    "bw_max",
    "bw_agg",
    "bw_mean",
    "bw_dev",
    "bw_samples",
    "iops_min",
    "iops_max",
    "iops_mean",
    "iops_stddev",
    "iops_samples",
];
const FLOAT_KEYS: &[&str] =
    &["iops", "bw_agg", "bw_mean", "bw_dev", "iops_mean", "iops_stddev", "usr_cpu", "sys_cpu"];

// Proves the JSON document has fio's shape (§4.2, §5.6): top-level keys in order, each job's
// and each direction's key set in fio's order, integers where fio prints integers and floats
// (with a decimal point) where it prints floats, latency objects with the default percentile
// keys formatted `%f`, and `group_reporting` merging the reader's two clones into one job
// (jobs = reader, writer; the reader's I/Os are both clones' 2 × 256).
#[test]
fn json_has_fios_shape_and_types() {
    let (text, json) = run_json("shape", TWO_GROUPS, "json");
    let top =
        ["fio version", "timestamp", "timestamp_ms", "time", "global options", "jobs", "disk_util"];
    assert_eq!(keys(&json), sorted(&top));
    assert_order(&text, 0, 2, &top);
    let jobs_at = assert_order(&text, 0, 2, &top[..6]);
    let read_at = assert_order(&text, jobs_at, 6, JOB_KEYS);
    assert_order(&text, text[..read_at].rfind("\"read\" : {").unwrap(), 8, DIRECTION_KEYS);
    assert!(json["fio version"].as_str().unwrap().starts_with("fio-3"));
    assert_eq!(json["global options"]["ioengine"], "libaio", "values echoed as written strings");
    let jobs = json["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs.iter().map(|job| job["jobname"].as_str().unwrap()).collect();
    assert_eq!(names, ["reader", "writer"]);
    assert_eq!((jobs[0]["groupid"].as_u64(), jobs[1]["groupid"].as_u64()), (Some(0), Some(1)));
    assert_eq!(jobs[0]["job options"]["iodepth"], "8");
    assert!(jobs[0]["job options"].get("group_reporting").is_none(), "flags are left out");
    for job in jobs {
        assert_eq!(keys(job), sorted(JOB_KEYS));
        for direction in ["read", "write", "trim"] {
            assert_eq!(keys(&job[direction]), sorted(DIRECTION_KEYS), "{direction}");
            for key in DIRECTION_KEYS {
                let value = &job[direction][key];
                if FLOAT_KEYS.contains(key) {
                    assert!(value.is_f64(), "{direction}.{key} is a float: {value}");
                } else if !value.is_object() {
                    assert!(value.is_u64(), "{direction}.{key} is an integer: {value}");
                }
            }
        }
        assert_eq!(keys(&job["sync"]), ["lat_ns", "total_ios"]);
        assert_eq!(keys(&job["latency_ms"]).len(), 12);
        assert_eq!(
            keys(&job["iodepth_submit"]),
            sorted(&["0", "4", "8", "16", "32", "64", ">=64"])
        );
    }
    let read = &jobs[0]["read"];
    assert_eq!(read["total_ios"], 512);
    assert_eq!(read["io_bytes"], 2 << 20);
    let clat = &read["clat_ns"];
    assert_eq!(keys(clat), sorted(&["min", "max", "mean", "stddev", "N", "percentile"]));
    let percentiles = keys(&clat["percentile"]);
    assert!(percentiles.contains(&"1.000000"));
    assert_eq!(percentiles.len(), 17);
    assert!(percentiles.contains(&"99.990000"));
    assert_eq!(keys(&read["slat_ns"]), sorted(&["min", "max", "mean", "stddev", "N"]), "no slat");
    // fio's arithmetic on its own figures.
    let (bytes, runtime) = (read["io_bytes"].as_u64().unwrap(), read["runtime"].as_u64().unwrap());
    assert_eq!(read["bw_bytes"].as_u64().unwrap(), bytes * 1000 / runtime);
    assert_eq!(read["bw"].as_u64().unwrap(), bytes * 1000 / runtime / 1024);
    assert_eq!(jobs[1]["write"]["total_ios"], 16);
    assert_eq!(jobs[1]["read"]["io_bytes"], 0);
    assert!(text.contains("\"iops\" : "), "fio's `\"key\" : value` layout");
    assert!(!text.contains("\"bins\""), "bins only with json+");
}

// Proves json+ adds each latency's `bins` (fio's 1856-bucket midpoints): they count every
// completion (Σ = N), every percentile value is one of the bins' midpoints, and the bins lie
// within fio's 1/128 bucket error of the exact min and max.
#[test]
fn json_plus_bins_count_every_completion() {
    let (_, json) = run_json("plus", TWO_GROUPS, "json+");
    let clat = &json["jobs"][0]["read"]["clat_ns"];
    let bins = clat["bins"].as_object().expect("json+ bins");
    let total: u64 = bins.values().map(|count| count.as_u64().unwrap()).sum();
    assert_eq!(total, clat["N"].as_u64().unwrap());
    for value in clat["percentile"].as_object().unwrap().values() {
        assert!(bins.contains_key(&value.to_string()), "percentile {value} is a bin midpoint");
    }
    let midpoints: Vec<f64> = bins.keys().map(|key| key.parse().unwrap()).collect();
    let (min, max) = (clat["min"].as_f64().unwrap(), clat["max"].as_f64().unwrap());
    let first = midpoints.iter().copied().fold(f64::MAX, f64::min);
    let last = midpoints.iter().copied().fold(0.0, f64::max);
    assert!((first / min - 1.0).abs() <= 1.0 / 128.0, "{first} vs {min}");
    assert!((last / max - 1.0).abs() <= 1.0 / 128.0, "{last} vs {max}");
}

// Proves terse v3 (§4.5): one line per reported job, 121 `;` fields in fio's order (then
// disk_util's nine) — version
// 3, fio version, name, group, error, then read's io KiB equal to the JSON's io_kbytes, 20
// percentile fields `P%=V` (3 past the 17 defaults are `0%=0`), and the 29 percentages at the
// end — and `--minimal` is the same.
#[test]
fn terse_v3_fields_in_order() {
    let dir = scratch("terse");
    let file = dir.join("job.fio");
    std::fs::write(&file, TWO_GROUPS).unwrap();
    let path = file.to_str().unwrap();
    let terse = elevator(&["sim", path, "-d", "ssd", "-s", "deadline", "--output-format", "terse"]);
    assert!(terse.status.success(), "{}", String::from_utf8_lossy(&terse.stderr));
    let minimal = elevator(&["sim", path, "-d", "ssd", "-s", "deadline", "--minimal"]);
    assert_eq!(terse.stdout, minimal.stdout);
    let text = String::from_utf8(terse.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    let (_, json) = run_json("terse-json", TWO_GROUPS, "json");
    for (line, job) in lines.iter().zip(json["jobs"].as_array().unwrap()) {
        let fields: Vec<&str> = line.split(';').collect();
        // fio's 121, then the one simulated device's nine disk_util fields.
        assert_eq!(fields.len(), 130, "{line}");
        assert_eq!(fields[..2], ["3", "fio-3.36"]);
        assert_eq!(fields[2], job["jobname"].as_str().unwrap());
        assert_eq!(fields[3], job["groupid"].to_string());
        assert_eq!(fields[5], job["read"]["io_kbytes"].to_string());
        assert_eq!(fields[5 + 41], job["write"]["io_kbytes"].to_string());
        let percentiles = &fields[17..37];
        assert!(percentiles.iter().all(|field| field.contains("%=")));
        assert_eq!(percentiles[0].split('=').next(), Some("1.000000%"));
        assert_eq!(percentiles[17..], ["0%=0", "0%=0", "0%=0"]);
        assert!(
            fields[92..121].iter().all(|field| field.ends_with('%')),
            "depths and latency buckets"
        );
        assert_eq!(fields[121], "sda", "disk_util follows");
    }
}

// Proves the output is deterministic (the simulated clock, not the wall clock): the same seed
// gives byte-identical JSON, and the timestamp is the simulated run's end.
#[test]
fn json_is_deterministic() {
    let (first, json) = run_json("det1", TWO_GROUPS, "json+");
    let (second, _) = run_json("det2", TWO_GROUPS, "json+");
    assert_eq!(first, second);
    assert!(json["timestamp"].as_u64().unwrap() < 3600, "simulated seconds since the run's start");
}

// Proves several schedulers give one document each, in files named after the scheduler,
// each a whole fio document for its run; without -o that is refused (exit 2) saying so; an
// unknown format is refused naming the accepted ones.
#[test]
fn one_output_per_scheduler() {
    let dir = scratch("schedulers");
    let file = dir.join("job.fio");
    std::fs::write(&file, TWO_GROUPS).unwrap();
    let path = file.to_str().unwrap();
    let out = dir.join("out.json");
    let output = elevator(&[
        "sim",
        path,
        "-d",
        "ssd",
        "-s",
        "deadline,noop",
        "--output-format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    for scheduler in ["deadline", "noop"] {
        let text = std::fs::read_to_string(dir.join(format!("out.{scheduler}.json"))).unwrap();
        let json: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["jobs"][0]["elevator"]["scheduler"], scheduler);
    }
    let refused =
        elevator(&["sim", path, "-d", "ssd", "-s", "deadline,noop", "--output-format", "json"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("needs -o FILE"));
    let bad = elevator(&["sim", path, "-d", "ssd", "-s", "noop", "--output-format", "xml"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("accepted: normal, json, json+, terse"));
}

// Proves elevator's own report gains the per-direction split: a randrw job's phase lists read
// and write, whose operations add up to the phase's.
#[test]
fn report_phases_split_by_direction() {
    let dir = scratch("report");
    let file = dir.join("job.fio");
    std::fs::write(&file, "[mixed]\nrw=randrw\nbs=4k\nsize=1m\n").unwrap();
    let output =
        elevator(&["sim", file.to_str().unwrap(), "-d", "ssd", "-s", "noop", "--format", "json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let phase = &report["runs"][0]["phases"][0];
    let directions = &phase["directions"];
    let (reads, writes) =
        (directions["read"]["ops"].as_u64().unwrap(), directions["write"]["ops"].as_u64().unwrap());
    assert!(reads > 0 && writes > 0);
    assert_eq!(reads + writes, phase["ops"].as_u64().unwrap());
}

/// fio-plot's command, installing the pip package when it is missing; under `CI=true` a
/// failure to install fails the test, elsewhere it is said and the test skips.
fn fio_plot() -> Option<PathBuf> {
    let find = || {
        Command::new("fio-plot")
            .arg("--help")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| PathBuf::from("fio-plot"))
    };
    if let Some(found) = find() {
        return Some(found);
    }
    let installed =
        Command::new("python3").args(["-m", "pip", "install", "-q", "fio-plot"]).output();
    if let Some(found) = find() {
        return Some(found);
    }
    let message = format!("fio_output needs fio-plot (pip package fio-plot): {installed:?}");
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
    #[allow(clippy::print_stderr)] // the only place to say why the test skipped
    {
        eprintln!("skipped: {message}");
    }
    None
}

// Proves the real fio-plot reads our JSON as fio's: bench-fio's job layout (one `[FIOJOB]`
// section giving rw, iodepth and numjobs, §5.1) run by elevator, then `fio-plot -l` draws its
// IOPS/latency bar chart from the directory and writes the PNG.
#[test]
fn fio_plot_draws_our_json() {
    let Some(fio_plot) = fio_plot() else { return };
    let dir = scratch("fio-plot");
    let file = dir.join("job.fio");
    std::fs::write(
        &file,
        "[FIOJOB]\nrw=randread\nioengine=libaio\ndirect=1\niodepth=4\nnumjobs=1\nsize=4m\nbs=4k\n",
    )
    .unwrap();
    let results = dir.join("results");
    std::fs::create_dir_all(&results).unwrap();
    let json = results.join("randread-iodepth-4-numjobs-1.json");
    let output = elevator(&[
        "sim",
        file.to_str().unwrap(),
        "-d",
        "ssd",
        "-s",
        "deadline",
        "--output-format",
        "json",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let graph = dir.join("graph.png");
    let _ = std::fs::remove_file(&graph);
    let plotted = Command::new(fio_plot)
        .current_dir(&dir)
        .args([
            "-i",
            results.to_str().unwrap(),
            "-T",
            "elevator",
            "-l",
            "-r",
            "randread",
            "-d",
            "4",
        ])
        .args(["-n", "1", "-o", graph.to_str().unwrap()])
        .output()
        .expect("run fio-plot");
    assert!(
        plotted.status.success(),
        "fio-plot failed: {}{}",
        String::from_utf8_lossy(&plotted.stdout),
        String::from_utf8_lossy(&plotted.stderr)
    );
    let image = std::fs::read(Path::new(&graph)).expect("fio-plot wrote the graph");
    assert!(image.starts_with(b"\x89PNG"), "a PNG image");
}

// Proves `--output-format json,normal` has the layout cbt cuts its JSON from (§5.3): banners,
// `Starting …`, then the JSON up to the first empty line (it parses and is the same document
// as `json` alone), then the text report, whose job line carries `IOPS=` in fio's num2str
// form and whose `Run status group` lines carry `bw=` as PTS parses them (§5.4): read's
// IOPS and bandwidth agree with the JSON's.
#[test]
fn json_normal_layout_for_cbt_and_pts() {
    let dir = scratch("json-normal");
    let file = dir.join("job.fio");
    std::fs::write(&file, TWO_GROUPS).unwrap();
    let path = file.to_str().unwrap();
    let both =
        elevator(&["sim", path, "-d", "ssd", "-s", "deadline", "--output-format", "json,normal"]);
    assert!(both.status.success(), "{}", String::from_utf8_lossy(&both.stderr));
    let text = String::from_utf8(both.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("reader: (g=0): rw=randread, bs=(R) 4096B-4096B"), "{}", lines[0]);
    assert_eq!(lines[1], "...", "the reader's second clone");
    assert!(lines[2].starts_with("writer: (g=1): rw=write"));
    // cbt: skip to the line containing `Starting`, copy until the first empty line.
    let start = lines.iter().position(|line| line.contains("Starting")).unwrap();
    assert_eq!(lines[start], "Starting 3 processes");
    let json_lines: Vec<&str> =
        lines[start + 1..].iter().take_while(|line| !line.is_empty()).copied().collect();
    let json: Value = serde_json::from_str(&json_lines.join("\n")).expect("cbt's cut is JSON");
    let (_, alone) = run_json("json-alone", TWO_GROUPS, "json");
    assert_eq!(json, alone);
    let report = &lines[start + 1 + json_lines.len()..];
    assert!(report.iter().any(|line| line.starts_with("reader: (groupid=0, jobs=2): err= 0:")));
    // PTS: the value after `IOPS=` (a trailing `k` means ×1000).
    let iops_line = report.iter().find(|line| line.starts_with("  read: IOPS=")).unwrap();
    let iops_text = iops_line["  read: IOPS=".len()..].split(',').next().unwrap();
    let iops: f64 = match iops_text.strip_suffix('k') {
        Some(thousands) => thousands.parse::<f64>().unwrap() * 1000.0,
        None => iops_text.parse().unwrap(),
    };
    let json_iops = json["jobs"][0]["read"]["iops"].as_f64().unwrap();
    assert!((iops - json_iops).abs() <= json_iops * 0.001 + 50.0, "{iops} vs {json_iops}");
    // PTS: the value after `bw=` on the READ group line, in KiB/s or MiB/s.
    let group = report.iter().find(|line| line.starts_with("   READ: bw=")).unwrap();
    let bw_text = group["   READ: bw=".len()..].split(' ').next().unwrap();
    let kib_s: f64 = match (bw_text.strip_suffix("KiB/s"), bw_text.strip_suffix("MiB/s")) {
        (Some(kib), _) => kib.parse().unwrap(),
        (_, Some(mib)) => mib.parse::<f64>().unwrap() * 1024.0,
        _ => panic!("bw {bw_text}"),
    };
    let json_kib_s = json["jobs"][0]["read"]["bw"].as_f64().unwrap();
    assert!((kib_s - json_kib_s).abs() <= json_kib_s * 0.005 + 1.0, "{kib_s} vs {json_kib_s}");
    assert!(report.contains(&"Run status group 1 (all jobs):"));
}
