//! Job options that shape fio's reports (fio-compat.md §2.1 "Logging and reporting", §4):
//! `clat_percentiles`, `lat_percentiles`, `slat_percentiles` and `unified_rw_reporting`, in
//! `elevator sim FILE.fio --output-format …`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn sim(dir: &Path, text: &str, format: &str) -> Output {
    let file = dir.join("job.fio");
    std::fs::write(&file, text).unwrap();
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["sim", file.to_str().unwrap(), "-d", "ssd", "-s", "none", "--output-format", format])
        .output()
        .expect("run elevator")
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).unwrap()
}

const READER: &str = "[j]\nioengine=libaio\ndirect=1\nsize=2m\nrw=randread\nbs=4k\niodepth=2\n";

// Proves the percentile switches are honoured in every format: by default clat has
// percentiles and bins and lat none; with `clat_percentiles=0` and `lat_percentiles=1` lat
// carries exactly what clat did (the same samples here) and clat nothing, normal prints
// `lat percentiles` instead of `clat percentiles`, and terse still has the list; with both
// off terse's 20 percentile fields are all `0%=0` and normal prints no percentiles.
#[test]
fn percentile_switches_are_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let default: Value = serde_json::from_str(&stdout(&sim(dir.path(), READER, "json+"))).unwrap();
    let read = &default["jobs"][0]["read"];
    assert!(read["clat_ns"]["percentile"].is_object() && read["clat_ns"]["bins"].is_object());
    assert!(read["lat_ns"].get("percentile").is_none());
    let switched_text = format!("{READER}clat_percentiles=0\nlat_percentiles=1\n");
    let switched: Value =
        serde_json::from_str(&stdout(&sim(dir.path(), &switched_text, "json+"))).unwrap();
    let switched_read = &switched["jobs"][0]["read"];
    assert!(switched_read["clat_ns"].get("percentile").is_none());
    assert!(switched_read["clat_ns"].get("bins").is_none());
    assert_eq!(switched_read["lat_ns"]["percentile"], read["clat_ns"]["percentile"]);
    assert_eq!(switched_read["lat_ns"]["bins"], read["clat_ns"]["bins"]);
    let normal = stdout(&sim(dir.path(), &switched_text, "normal"));
    assert!(normal.contains("    lat percentiles (") && !normal.contains("clat percentiles"));
    let terse_fields = |text: &str| -> Vec<String> {
        stdout(&sim(dir.path(), text, "terse")).trim_end().split(';').map(str::to_owned).collect()
    };
    // Fields 17..37 are the read percentiles (fio's terse v3 layout).
    let on = terse_fields(&switched_text);
    assert!(on[17].starts_with("1.000000%="), "{}", on[17]);
    let off = terse_fields(&format!("{READER}clat_percentiles=0\n"));
    assert_eq!(on.len(), off.len());
    assert!(off[17..37].iter().all(|field| field == "0%=0"), "{:?}", &off[17..37]);
    let normal = stdout(&sim(dir.path(), &format!("{READER}clat_percentiles=0\n"), "normal"));
    assert!(!normal.contains("percentiles"), "{normal}");
}

const MIXED: &str = "[j]\nioengine=libaio\ndirect=1\nsize=2m\nrw=randrw\nbs=4k\niodepth=2\n";

// Proves `unified_rw_reporting=mixed` folds read and write into one `mixed` direction, as
// fio: the same run (same seed, same I/O) reported split and mixed; json's `mixed` has the
// read + write bytes and I/Os and no read, write, trim or sync objects; terse loses one
// direction's fields (the write block); normal prints `mixed:` and the group's `MIXED:`.
#[test]
fn unified_rw_reporting_mixed_folds_directions() {
    let dir = tempfile::tempdir().unwrap();
    let split: Value = serde_json::from_str(&stdout(&sim(dir.path(), MIXED, "json"))).unwrap();
    let mixed_text = format!("{MIXED}unified_rw_reporting=mixed\n");
    let mixed: Value =
        serde_json::from_str(&stdout(&sim(dir.path(), &mixed_text, "json"))).unwrap();
    let (split, mixed) = (&split["jobs"][0], &mixed["jobs"][0]);
    let sum =
        |key: &str| split["read"][key].as_u64().unwrap() + split["write"][key].as_u64().unwrap();
    assert!(split["read"]["io_bytes"].as_u64().unwrap() > 0);
    assert!(split["write"]["io_bytes"].as_u64().unwrap() > 0);
    assert_eq!(mixed["mixed"]["io_bytes"].as_u64(), Some(sum("io_bytes")));
    assert_eq!(mixed["mixed"]["total_ios"].as_u64(), Some(sum("total_ios")));
    for absent in ["read", "write", "trim", "sync"] {
        assert!(mixed.get(absent).is_none(), "{absent} in {mixed}");
    }
    let fields = |text: &str| stdout(&sim(dir.path(), text, "terse")).trim_end().split(';').count();
    // One direction's block: 4 + slat 4 + clat 4 + 20 percentiles + lat 4 + bw 5 = 41.
    assert_eq!(fields(MIXED) - fields(&mixed_text), 41);
    let normal = stdout(&sim(dir.path(), &mixed_text, "normal"));
    assert!(normal.contains("\n  mixed: IOPS=") && normal.contains("\n  MIXED: bw="), "{normal}");
}

// Proves `unified_rw_reporting=both` as fio's stat.c: the same run reported split, mixed and
// both. json: read, write, trim and sync as split, then `mixed` (after sync, before
// job_runtime) equal to the mixed report's `mixed` except `bw_agg`, which fio takes against
// the group's read aggregate (rs->agg[DDIR_READ], not folded), not the mixed one. terse: split's fields plus one direction block (41) equal to the mixed report's,
// its bandwidth share aside. normal: `read:`, `write:` then `mixed:` with the mixed
// report's IOPS line, and the group's READ, WRITE and then a MIXED line whose io= is the
// mixed report's.
#[test]
fn unified_rw_reporting_both_adds_mixed_after_directions() {
    let dir = tempfile::tempdir().unwrap();
    // Over a second, so there are bandwidth samples (every 500 ms).
    let run = |extra: &str, format: &str| {
        stdout(&sim(dir.path(), &format!("{MIXED}runtime=1200ms\ntime_based\n{extra}"), format))
    };
    let both_text = "unified_rw_reporting=both\n";
    let mixed_text = "unified_rw_reporting=mixed\n";
    let json = |extra: &str| -> Value { serde_json::from_str(&run(extra, "json")).unwrap() };
    let (split, mixed, both) = (json(""), json(mixed_text), json(both_text));
    let (split, mixed, both) = (&split["jobs"][0], &mixed["jobs"][0], &both["jobs"][0]);
    for name in ["read", "write", "trim", "sync"] {
        assert_eq!(both[name], split[name], "{name}");
    }
    let mut ours = both["mixed"].clone();
    let mut theirs = mixed["mixed"].clone();
    assert!(ours["io_bytes"].as_u64().unwrap() > split["read"]["io_bytes"].as_u64().unwrap());
    // fio's convert_agg_kbytes_percent(rs, DDIR_READ, mixed mean), at most 100: the read
    // aggregate is read's bytes over its runtime (one job), in KiB/s.
    let read = &split["read"];
    let read_agg_kib =
        read["io_bytes"].as_f64().unwrap() * 1000.0 / read["runtime"].as_f64().unwrap() / 1024.0;
    let expected = (ours["bw_mean"].as_f64().unwrap() * 100.0 / read_agg_kib).min(100.0);
    assert!(ours["bw_samples"].as_u64().unwrap() > 0);
    let agg = ours["bw_agg"].as_f64().unwrap();
    assert!((agg - expected).abs() < 0.01, "{agg} vs {expected}");
    assert!((agg - theirs["bw_agg"].as_f64().unwrap()).abs() > 0.01, "{agg}");
    ours["bw_agg"] = Value::Null;
    theirs["bw_agg"] = Value::Null;
    assert_eq!(ours, theirs);
    let text = run(both_text, "json");
    let at = |key: &str| text.find(&format!("\"{key}\" :")).unwrap_or_else(|| panic!("{key}"));
    assert!(at("sync") < at("mixed") && at("mixed") < at("job_runtime"));

    let fields = |extra: &str| -> Vec<String> {
        run(extra, "terse").trim_end().split(';').map(str::to_owned).collect()
    };
    let (split, mixed, both) = (fields(""), fields(mixed_text), fields(both_text));
    assert_eq!(both.len(), split.len() + 41);
    // 5 header fields, then read (41) and write (41); mixed's own line has its block first.
    assert_eq!(both[..5 + 82], split[..5 + 82]);
    let block = |line: &[String], from: usize| -> Vec<String> {
        let mut block = line[from..from + 41].to_vec();
        block[38] = String::new(); // the bandwidth share (of read's aggregate here)
        block
    };
    assert_eq!(block(&both, 5 + 82), block(&mixed, 5));

    let normal = run(both_text, "normal");
    let mixed_normal = run(mixed_text, "normal");
    let line_of = |text: &str, start: &str| -> String {
        let at = text.find(start).unwrap_or_else(|| panic!("{start} in {text}"));
        text[at + 1..].lines().next().unwrap().to_owned()
    };
    let (read, write, mixed_at) = (
        normal.find("\n  read: IOPS="),
        normal.find("\n  write: IOPS="),
        normal.find("\n  mixed: IOPS="),
    );
    assert!(read < write && write < mixed_at && read.is_some(), "{normal}");
    assert_eq!(line_of(&normal, "\n  mixed: IOPS="), line_of(&mixed_normal, "\n  mixed: IOPS="));
    let (group_read, group_write, group_mixed) = (
        normal.find("\n   READ: bw="),
        normal.find("\n  WRITE: bw="),
        normal.find("\n  MIXED: bw="),
    );
    assert!(group_read < group_write && group_write < group_mixed && group_read.is_some());
    let io =
        |line: String| line[line.find("io=").unwrap()..line.find(", run=").unwrap()].to_owned();
    assert_eq!(
        io(line_of(&normal, "\n  MIXED: bw=")),
        io(line_of(&mixed_normal, "\n  MIXED: bw="))
    );
}

// Proves `disk_util` in every format is the simulated device's own count, not a copy of the
// jobs': direct 4 KiB random reads by two clones give read_ios + read_merges = the jobs' read
// I/Os summed (each a bio), read_sectors = their bytes / 512, no
// writes, ticks ≥ 1 ms and util in (0, 100]; terse carries the same nine
// fields after fio's 121 (130 in all), and normal the `Disk stats (read/write)` line; with
// `disk_util=0` none of them.
#[test]
fn disk_util_counts_the_devices_requests() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{READER}numjobs=2\n");
    let json: Value = serde_json::from_str(&stdout(&sim(dir.path(), &text, "json"))).unwrap();
    let disks = json["disk_util"].as_array().expect("disk_util");
    assert_eq!(disks.len(), 1);
    let disk = &disks[0];
    let jobs = json["jobs"].as_array().unwrap();
    let sum = |key: &str| jobs.iter().map(|job| job["read"][key].as_u64().unwrap()).sum::<u64>();
    assert_eq!(disk["name"], "sda");
    // Each bio is a request of its own or merged into one.
    let merged = disk["read_merges"].as_u64().unwrap();
    assert_eq!(disk["read_ios"].as_u64().unwrap() + merged, sum("total_ios"));
    assert_eq!(disk["read_sectors"].as_u64(), Some(sum("io_bytes") / 512));
    assert_eq!((disk["write_ios"].as_u64(), disk["write_ticks"].as_u64()), (Some(0), Some(0)));
    let ticks = disk["read_ticks"].as_u64().unwrap();
    assert!(ticks >= 1 && disk["in_queue"].as_u64() == Some(ticks), "{disk}");
    let util = disk["util"].as_f64().unwrap();
    assert!(util > 0.0 && util <= 100.0, "{util}");
    let terse = stdout(&sim(dir.path(), &text, "terse"));
    for line in terse.lines() {
        let fields: Vec<&str> = line.split(';').collect();
        assert_eq!(fields.len(), 130, "{line}");
        assert_eq!(fields[121], "sda");
        assert_eq!(fields[122].parse::<u64>().ok(), disk["read_ios"].as_u64());
        assert_eq!(fields[126].parse::<u64>().ok(), Some(ticks));
        assert_eq!(fields[129], format!("{util:.2}%"));
    }
    let normal = stdout(&sim(dir.path(), &text, "normal"));
    let expected = format!(
        "\nDisk stats (read/write):\n  sda: ios={}/0, sectors={}/0, merge={}/0, ticks={ticks}/0, \
         in_queue={ticks}, util={util:.2}%\n",
        disk["read_ios"], disk["read_sectors"], disk["read_merges"]
    );
    assert!(normal.ends_with(&expected), "{normal}");
    // disk_util=0 for every job: fio gathers no device figures, and prints none.
    let off = format!("{text}disk_util=0\n");
    let json: Value = serde_json::from_str(&stdout(&sim(dir.path(), &off, "json"))).unwrap();
    assert!(json.get("disk_util").is_none());
    let terse = stdout(&sim(dir.path(), &off, "terse"));
    assert!(terse.lines().all(|line| line.split(';').count() == 121), "{terse}");
    assert!(!stdout(&sim(dir.path(), &off, "normal")).contains("Disk stats"));
}
