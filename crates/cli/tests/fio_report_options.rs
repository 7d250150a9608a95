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
// `unified_rw_reporting=both` is refused naming its line (exit 2).
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
    let both = sim(dir.path(), &format!("{MIXED}unified_rw_reporting=both\n"), "json");
    assert_eq!(both.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&both.stderr);
    assert!(stderr.contains("job.fio:8") && stderr.contains("unified_rw_reporting"), "{stderr}");
}
