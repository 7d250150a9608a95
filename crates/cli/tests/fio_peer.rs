//! Real fio as the peer of elevator's fio outputs (issue 17, fio-compat.md §4.2, §4.6, §5):
//! the same job file run by real fio on a RAM-backed loop device and by `elevator sim`, their
//! `json+` documents compared key by key; and fio's own log parser reading our logs.
//!
//! The tests that need fio, a loop device or fio's tools run as root, installing Debian's
//! `fio` when missing (skipped with the reason otherwise, failed under CI=true).

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use support::RamLoop;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

/// Keys of `jobs[0]` in our json+ that real fio does not print, each with the reason (also in
/// `crates/report/src/fio/mod.rs`'s module doc).
const OURS_ONLY: &[(&str, &str)] = &[
    ("elevator", "our extra object: mode, scheduler, device, seed"),
    ("elevator/mode", "our extra object"),
    ("elevator/scheduler", "our extra object"),
    ("elevator/device", "our extra object"),
    ("elevator/seed", "our extra object"),
    ("job_start", "added in fio 3.36 (the layout we follow); older peers lack it"),
];

/// Keys of real fio's `jobs[0]` that ours lacks, with the reason: none.
const FIO_ONLY: &[(&str, &str)] = &[];

/// Every key path under `value` (`read/clat_ns/N`), recursively, values left out. The keys of
/// `bins` are latencies (values, not layout): the `bins` object itself counts, its keys not.
fn key_paths(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    let Some(object) = value.as_object() else { return };
    for (key, child) in object {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}/{key}") };
        if key != "bins" {
            key_paths(child, &path, out);
        }
        out.insert(path);
    }
}

/// fio's version as (major, minor) from `fio --version` (`fio-3.33`).
fn fio_version(fio: &Path) -> (u32, u32) {
    let output = Command::new(fio).arg("--version").output().expect("fio --version");
    let text = String::from_utf8_lossy(&output.stdout);
    let numbers: Vec<u32> = text
        .trim()
        .trim_start_matches("fio-")
        .split(['.', '-'])
        .take(2)
        .map(|part| part.parse().unwrap_or(0))
        .collect();
    (numbers[0], numbers.get(1).copied().unwrap_or(0))
}

// Proves our json+ has real fio's layout: the same 4 KiB random-read, 1 s, time_based job
// file, run by real fio on a RAM-backed loop device (named by the file's `filename`) and by
// `elevator sim` (where that name is a regular file of `size`), gives `jobs[0]` objects with
// the same set of key paths, recursively — the percentile keys included, bins' latencies left
// out — except the keys listed above with their reasons; and the top level's keys and
// `disk_util`'s are fio's too. A key we drop, rename or misplace, or one fio adds, fails it.
#[test]
fn our_json_plus_has_real_fios_keys() {
    let test = "our_json_plus_has_real_fios_keys";
    let Some(fio) = support::fio(test) else { return };
    let Some(disk) = RamLoop::attach(test, 32 << 20) else { return };
    disk.set_scheduler("none");
    // The same text for both: `filename=sda` is the simulator's first device, and for real
    // fio (run in `dir`) a symlink there to the loop device.
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(disk.path(), dir.path().join("sda")).unwrap();
    let file = dir.path().join("randread.fio");
    std::fs::write(
        &file,
        "[global]\nfilename=sda\nsize=16m\ndirect=1\nioengine=psync\nruntime=1\n\
         time_based\n\n[randread]\nrw=randread\nbs=4k\n",
    )
    .unwrap();
    let run = Command::new(&fio)
        .current_dir(dir.path())
        .args(["--output-format=json+", "--output=fio.json", "randread.fio"])
        .output()
        .expect("run fio");
    assert!(run.status.success(), "fio: {}", String::from_utf8_lossy(&run.stderr));
    let theirs: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("fio.json")).unwrap())
            .expect("fio's json+ parses");
    drop(disk);
    let output = elevator(&[
        "sim",
        file.to_str().unwrap(),
        "-d",
        "ssd",
        "-s",
        "none",
        "--output-format",
        "json+",
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let ours: Value = serde_json::from_slice(&output.stdout).expect("our json+ parses");

    let mut their_keys = BTreeSet::new();
    key_paths(&theirs["jobs"][0], "", &mut their_keys);
    let mut our_keys = BTreeSet::new();
    key_paths(&ours["jobs"][0], "", &mut our_keys);
    // Both carry latency bins: the comparison covers json+'s own part.
    assert!(their_keys.contains("read/clat_ns/bins"), "not json+: {theirs}");
    assert!(our_keys.contains("read/clat_ns/bins"), "not json+: {ours}");

    let version = fio_version(&fio);
    let excused = |list: &[(&str, &str)], key: &str| {
        // A peer of 3.36 or later prints job_start too: then it must match.
        list.iter().any(|(name, _)| *name == key) && !(key == "job_start" && version >= (3, 36))
    };
    let ours_only: Vec<&String> =
        our_keys.difference(&their_keys).filter(|key| !excused(OURS_ONLY, key)).collect();
    let fio_only: Vec<&String> =
        their_keys.difference(&our_keys).filter(|key| !excused(FIO_ONLY, key)).collect();
    assert!(
        ours_only.is_empty() && fio_only.is_empty(),
        "fio {version:?}: keys only in ours {ours_only:?}, only in fio's {fio_only:?}"
    );

    // The top level and each device's disk_util: the same keys, but for the sectors fio 3.36
    // added (the layout we follow) when the peer is older.
    let top = |document: &Value| -> BTreeSet<String> {
        document.as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(top(&ours), top(&theirs));
    let mut their_disk = BTreeSet::new();
    key_paths(&theirs["disk_util"][0], "", &mut their_disk);
    let mut our_disk = BTreeSet::new();
    key_paths(&ours["disk_util"][0], "", &mut our_disk);
    assert!(their_disk.contains("util"), "no disk_util from fio: {theirs}");
    if version < (3, 36) {
        our_disk.remove("read_sectors");
        our_disk.remove("write_sectors");
    }
    assert_eq!(our_disk, their_disk);
}

/// The line of fio's `tools/fiologparser.py` before upstream's commit 5f2a90b8 ("fix
/// fiologparser.py to work with new logging format", fio 3.34): it unpacks exactly four
/// columns, so it cannot read the five-column logs fio itself writes since 3.x.
const OLD_PARSER_LINE: &str = "(time, value, foo, bar) = line.rstrip('\\r\\n').rsplit(', ')";
/// The same line after that commit.
const FIXED_PARSER_LINE: &str = "(time, value) = line.rstrip('\\r\\n').rsplit(', ')[:2]";

/// fio's `fiologparser.py` as Debian's `fio` package installs it (gzipped under
/// /usr/share/doc/fio), written into `dir`; with upstream's one-line fix applied when the
/// packaged copy predates it (says so on stderr).
fn fiologparser(dir: &Path) -> std::path::PathBuf {
    let packaged = "/usr/share/doc/fio/fiologparser.py.gz";
    let output = Command::new("gzip").args(["-dc", packaged]).output().expect("run gzip");
    assert!(output.status.success(), "{packaged}: {}", String::from_utf8_lossy(&output.stderr));
    let mut text = String::from_utf8(output.stdout).expect("a Python script");
    if text.contains(OLD_PARSER_LINE) {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("{packaged} predates fio 3.34's fix 5f2a90b8: applying it");
        }
        text = text.replace(OLD_PARSER_LINE, FIXED_PARSER_LINE);
    }
    assert!(text.contains(FIXED_PARSER_LINE), "fiologparser.py reads lines another way now");
    let path = dir.join("fiologparser.py");
    std::fs::write(&path, text).unwrap();
    path
}

// Proves fio's own log parser reads our bandwidth log as fio's: Debian's `fiologparser.py`
// (the `fio` package, installed when missing) with `-a` averages our `log_avg_msec=250`
// bw log of a 1 s 4 KiB random-read job, and its average (KiB/s, four whole 250 ms windows)
// is the mean of the same run's json bandwidth samples (`bw_mean`, which the log's windows
// set, as fio) to within 0.1 % — a log in another unit, with a column missing or misplaced,
// a window lost, or not parseable, fails it.
#[test]
fn fios_log_parser_reads_our_bw_log() {
    let test = "fios_log_parser_reads_our_bw_log";
    if support::fio(test).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let parser = fiologparser(dir.path());
    std::fs::write(
        dir.path().join("bw.fio"),
        "[randread]\nioengine=libaio\ndirect=1\nsize=16m\nruntime=1\ntime_based\n\
         rw=randread\nbs=4k\niodepth=4\nwrite_bw_log=ours\nlog_avg_msec=250\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(dir.path())
        .args(["sim", "bw.fio", "-d", "ssd", "-s", "none", "--output-format", "json"])
        .output()
        .expect("run elevator");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let bw_mean = json["jobs"][0]["read"]["bw_mean"].as_f64().unwrap();
    assert!(bw_mean > 0.0);
    let parsed = Command::new("python3")
        .current_dir(dir.path())
        .arg(&parser)
        .args(["-a", "ours_bw.1.log"])
        .output()
        .expect("run python3 fiologparser.py");
    let stdout = String::from_utf8_lossy(&parsed.stdout);
    assert!(parsed.status.success(), "{stdout}{}", String::from_utf8_lossy(&parsed.stderr));
    // `END_MS, AVERAGE` per interval; one interval of 1 s here.
    let average: f64 = stdout
        .lines()
        .last()
        .and_then(|line| line.rsplit(", ").next())
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no average in fiologparser's output: {stdout}"));
    assert!((average / bw_mean - 1.0).abs() < 0.001, "fiologparser {average}, json {bw_mean}");
}
