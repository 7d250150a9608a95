//! DiskSim 4.0's parameter files read into `hdd` keys: the four validated drives of
//! `/work/shared/disksim` (read at test time, never copied), malformed files, the preset
//! generator.

use std::path::{Path, PathBuf};

use elevator_sim::DeviceSpec;
use elevator_sim::device::disksim::{self, Mapped, grammar};
use elevator_sim::device::hdd;

/// `shared/disksim` above the repository, or `None` (a printed skip) outside CI.
fn shared() -> Option<PathBuf> {
    disksim::shared_dir_for_tests(Path::new(env!("CARGO_MANIFEST_DIR")))
}

fn load(file: &str) -> Option<Mapped> {
    let dir = shared()?;
    Some(disksim::load(&dir.join(file)).unwrap_or_else(|error| panic!("{file}: {error}")))
}

/// Generator for the presets the next step adds: prints each drive's `Preset` source.
/// Run with `cargo test -p elevator-sim --test disksim print_presets -- --ignored --nocapture`.
#[test]
#[ignore = "a generator: prints Rust source"]
#[allow(clippy::print_stdout)] // printing is its purpose
fn print_presets() {
    for (name, file, help) in DRIVES {
        let Some(mapped) = load(file) else { return };
        println!("{},", disksim::preset_source(name, help, &mapped));
        if let Some(line) = mapped.warning_line() {
            println!("// {line}");
        }
    }
}

/// The four drives: preset name, file, one line of help.
const DRIVES: [(&str, &str, &str); 4] = [
    (
        "cheetah9lp",
        "cheetah9LP.parv",
        "Seagate Cheetah 9LP ST39102LW, DiskSim 4.0's validated parameters",
    ),
    (
        "ultrastar18es",
        "ibm18es.parv",
        "IBM Ultrastar 18ES DNES-309170W, DiskSim 4.0's validated parameters",
    ),
    ("atlas10k", "atlas10k.parv", "Quantum Atlas 10K, DiskSim 4.0's validated parameters"),
    ("hp-c2247a", "hp_c2247a.parv", "HP C2247A, DiskSim 4.0's validated parameters"),
];

/// `key`'s value, which must be mapped.
fn value<'a>(mapped: &'a Mapped, key: &str) -> &'a str {
    mapped.value(key).unwrap_or_else(|| panic!("{key} not mapped"))
}

/// Entry `index` of a `/`-separated zone list.
fn entry(list: &str, index: usize) -> &str {
    list.split('/').nth(index).unwrap_or_else(|| panic!("no entry {index} in {list}"))
}

/// The slips of zone `zone` in a `slips` value.
fn zone_slips(slips: &str, zone: usize) -> Vec<u64> {
    slips
        .split('/')
        .find_map(|entry| entry.strip_prefix(&format!("{zone}:")))
        .map(|list| list.split('+').map(|n| n.parse().unwrap()).collect())
        .unwrap_or_default()
}

/// The `.seek` file's points read independently of the reader: `distance:ms` as numbers.
fn seek_points_of(file: &Path) -> Vec<(u64, f64)> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .skip(1)
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let (distance, time) = line.split_once(',').unwrap();
            (distance.trim().parse().unwrap(), time.trim().parse().unwrap())
        })
        .collect()
}

fn table_points(table: &str) -> Vec<(u64, f64)> {
    table
        .split('/')
        .map(|point| {
            let (distance, time) = point.split_once(':').unwrap();
            (distance.parse().unwrap(), time.parse().unwrap())
        })
        .collect()
}

// Proves the Cheetah 9LP's geometry, zones, skews, spares, slips, seek curve, mechanics and
// all eight overheads reach the key list with DiskSim's exact values.
#[test]
fn cheetah_values_round_trip() {
    let Some(mapped) = load("cheetah9LP.parv") else { return };
    assert_eq!(mapped.disk, "disk0");
    assert_eq!(value(&mapped, "rpm"), "10045");
    assert_eq!(value(&mapped, "cylinders"), "6962");
    assert_eq!(value(&mapped, "surfaces"), "12");
    assert_eq!(value(&mapped, "block_count"), "17783240");
    let zones = value(&mapped, "zones");
    assert_eq!(zones.split('/').count(), 11);
    assert_eq!(entry(zones, 0), "0-846@254");
    // Zone 3 (from 0): cylinders 2394..3096, 227 sectors per track, skews 97 and 116.
    assert_eq!(entry(zones, 3), "2394-3096@227");
    assert_eq!(entry(value(&mapped, "zone_skews"), 3), "97:116");
    assert_eq!(entry(value(&mapped, "zone_skews"), 10), "88:80");
    assert_eq!(entry(zones, 10), "6518-6961@167");
    assert_eq!(value(&mapped, "zone_spares"), "1270/980/952/908/651/627/402/2268/1991/1914/218");
    assert_eq!(entry(value(&mapped, "zone_offsets"), 0), "0:0");
    assert_eq!(value(&mapped, "sparing"), "per-zone");
    assert_eq!(value(&mapped, "mapping"), "conventional");
    let slips = value(&mapped, "slips");
    let zone0 = zone_slips(slips, 0);
    assert_eq!(zone0.len(), 34);
    assert_eq!(zone0[0], 168317);
    assert_eq!(*zone0.last().unwrap(), 2337052);
    assert_eq!(
        zone_slips(slips, 3),
        vec![
            180261, 536668, 825948, 831365, 943993, 1097376, 1265168, 1308030, 1363425, 1506120,
            1576805, 1649545, 1819760
        ]
    );
    assert_eq!(value(&mapped, "defects"), "");
    // The seek curve: all 106 points, as the file lists them.
    assert_eq!(value(&mapped, "seek"), "table");
    let points = table_points(value(&mapped, "seek_table"));
    assert_eq!(points.len(), 106);
    let dir = shared().unwrap();
    assert_eq!(points, seek_points_of(&dir.join("cheetah9LP.seek")));
    assert_eq!(points[0], (1, 0.831));
    assert_eq!(value(&mapped, "head_switch"), "0.03ms");
    assert_eq!(value(&mapped, "write_settle"), "0.461ms");
    for (key, expected) in [
        ("overhead_read_hit_after_read", "0.066ms"),
        ("overhead_read_hit_after_write", "0.273ms"),
        ("overhead_read_miss_after_read", "0.28362ms"),
        ("overhead_read_miss_after_write", "0.08673ms"),
        ("overhead_write_hit_after_read", "0.748ms"),
        ("overhead_write_hit_after_write", "0.5ms"),
        ("overhead_write_miss_after_read", "0.90692ms"),
        ("overhead_write_miss_after_write", "0.8964ms"),
        ("overhead_read_complete", "0ms"),
        ("bulk_sector_time", "0.105ms"),
    ] {
        assert_eq!(value(&mapped, key), expected, "{key}");
    }
    // Cache: 3 x 561 blocks, write-back level 2, read-ahead to the next track.
    assert_eq!(value(&mapped, "segments"), "3");
    assert_eq!(value(&mapped, "segment_size"), (561 * 512).to_string());
    assert_eq!(value(&mapped, "write_cache"), "1");
    assert_eq!(value(&mapped, "write_back"), "immediate");
    assert_eq!(value(&mapped, "read_ahead_to"), "next-track");
    assert_eq!(value(&mapped, "read_ahead_max"), "561");
    assert_eq!(value(&mapped, "read_hits_on_writes"), "1");
    assert_eq!(value(&mapped, "depth"), "1");
    assert_eq!(value(&mapped, "queue_policy"), "fcfs");
}

// Proves the IBM's at-end sparing, its zone-front empty space and separate write segment,
// and its full seek curve are read.
#[test]
fn ultrastar_values_round_trip() {
    let Some(mapped) = load("ibm18es.parv") else { return };
    assert_eq!(value(&mapped, "sparing"), "at-end");
    assert_eq!(value(&mapped, "rpm"), "7200");
    assert_eq!(entry(value(&mapped, "zones"), 0), "0-256@390");
    assert_eq!(entry(value(&mapped, "zone_offsets"), 0), "0:1950");
    assert_eq!(entry(value(&mapped, "zone_skews"), 0), "58:101");
    assert_eq!(value(&mapped, "segments"), "7");
    assert_eq!(value(&mapped, "write_segment_separate"), "1");
    assert_eq!(value(&mapped, "read_ahead_to"), "segment");
    assert_eq!(value(&mapped, "read_any_free"), "1");
    let dir = shared().unwrap();
    let points = table_points(value(&mapped, "seek_table"));
    assert_eq!(points.len(), 151);
    assert_eq!(points, seek_points_of(&dir.join("ibm18es.seek")));
}

// Proves the Atlas 10K's serpentine mapping, its `slips = [ ... ]` on the next line, and its
// 24 zones are read.
#[test]
fn atlas_values_round_trip() {
    let Some(mapped) = load("atlas10k.parv") else { return };
    assert_eq!(value(&mapped, "rpm"), "10025");
    assert_eq!(value(&mapped, "mapping"), "serpentine");
    assert_eq!(value(&mapped, "zones").split('/').count(), 24);
    assert_eq!(zone_slips(value(&mapped, "slips"), 0), vec![55017, 358148, 394564, 420533, 483742]);
    assert!(zone_slips(value(&mapped, "slips"), 1).is_empty(), "zone 1 has no slips");
    assert_eq!(entry(value(&mapped, "zone_spares"), 23), "229");
    assert_eq!(table_points(value(&mapped, "seek_table")).len(), 138);
}

// Proves the HP's hplplus10 seek becomes seek=hpl with its six HPL values and first ten
// seek times, and its zone offsets and track sparing are read.
#[test]
fn hp_values_round_trip() {
    let Some(mapped) = load("hp_c2247a.parv") else { return };
    assert_eq!(value(&mapped, "seek"), "hpl");
    assert_eq!(value(&mapped, "hpl"), "300/3.81/0.33/7.75/0.0059/-1");
    assert_eq!(
        value(&mapped, "seek_first_ten"),
        "2.89/3.68/3.81/3.98/4.27/4.65/4.52/4.65/4.82/4.99"
    );
    assert!(mapped.value("seek_table").is_none());
    assert_eq!(value(&mapped, "sparing"), "tracks");
    assert_eq!(value(&mapped, "zone_offsets"), "0:1632/14:0/73:0/80:0/52:0/0:0/32:0/30:0");
    assert_eq!(value(&mapped, "rpm"), "5400");
    assert_eq!(value(&mapped, "head_switch"), "0.89ms");
    assert_eq!(zone_slips(value(&mapped, "slips"), 7), vec![1512, 2506, 3320]);
}

// Proves a `.diskspecs` read directly maps exactly as the `.parv` that sources it.
#[test]
fn diskspecs_alone_maps_like_the_parv() {
    let Some(dir) = shared() else { return };
    let parv = disksim::load(&dir.join("cheetah9LP.parv")).unwrap();
    let specs = disksim::load(&dir.join("cheetah9LP.diskspecs")).unwrap();
    assert_eq!(parv.values, specs.values);
    assert_eq!(specs.disk, "SEAGATE_ST39102LW_validate");
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("elevator-disksim-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The Cheetah's `.diskspecs` text with `edit` applied, written next to a copy of its model
/// and seek files in a scratch directory (copies made at test time, never committed).
fn edited_cheetah(
    name: &str,
    edit: impl Fn(String, String) -> (String, String),
) -> Option<PathBuf> {
    let dir = shared()?;
    let out = scratch(name);
    let specs = std::fs::read_to_string(dir.join("cheetah9LP.diskspecs")).unwrap();
    let model = std::fs::read_to_string(dir.join("cheetah9LP.model")).unwrap();
    let (specs, model) = edit(specs, model);
    std::fs::write(out.join("d.diskspecs"), specs).unwrap();
    std::fs::write(out.join("cheetah9LP.model"), model).unwrap();
    std::fs::copy(dir.join("cheetah9LP.seek"), out.join("cheetah9LP.seek")).unwrap();
    Some(out.join("d.diskspecs"))
}

fn refused(path: &Path) -> grammar::DiskSimError {
    match disksim::load(path) {
        Ok(_) => panic!("{} was accepted", path.display()),
        Err(error) => error,
    }
}

/// The line (from 1) of the first occurrence of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|line| line.contains(needle)).expect("needle present") + 1
}

// Proves malformed files are refused naming the file, the line and what was expected: a
// missing `}`, a bad number, an unknown block type, a `source` of a missing file, a zone
// without `Blocks per track`, and a parameter DiskSim does not define.
#[test]
fn malformed_files_are_refused_with_file_and_line() {
    // Missing `}`: the disk block runs into the end of the file.
    let Some(path) = edited_cheetah("brace", |specs, model| {
        (specs.replace("} # end of SEAGATE_ST39102LW_validate spec", ""), model)
    }) else {
        return;
    };
    let error = refused(&path);
    assert_eq!(error.file, path);
    assert!(error.problem.contains("expected `}`"), "{error}");

    // A bad number.
    let path = edited_cheetah("number", |specs, model| {
        (specs, model.replace("Head switch time = 0.030000", "Head switch time = 0.03.0"))
    })
    .unwrap();
    let model = std::fs::read_to_string(path.with_file_name("cheetah9LP.model")).unwrap();
    let error = refused(&path);
    assert_eq!(error.file, path.with_file_name("cheetah9LP.model"));
    assert_eq!(error.line, line_of(&model, "Head switch time"));
    assert!(error.problem.contains("0.03.0"), "{error}");

    // An unknown block type.
    let path = edited_cheetah("type", |specs, model| {
        (specs.replace("disksim_ioqueue", "disksim_ioqueue2"), model)
    })
    .unwrap();
    let error = refused(&path);
    assert_eq!(error.line, line_of(&std::fs::read_to_string(&path).unwrap(), "Scheduler ="));
    assert!(error.problem.contains("unknown block type `disksim_ioqueue2`"), "{error}");

    // `source` of a missing file.
    let path = edited_cheetah("source", |specs, model| {
        (specs.replace("source cheetah9LP.model", "source missing.model"), model)
    })
    .unwrap();
    let error = refused(&path);
    assert_eq!((error.file.as_path(), error.line), (path.as_path(), 2));
    assert!(error.problem.contains("missing.model"), "{error}");

    // A zone without `Blocks per track`.
    let path = edited_cheetah("zone", |specs, model| {
        (specs, model.replacen("Blocks per track = 245,", "", 1))
    })
    .unwrap();
    let model = std::fs::read_to_string(path.with_file_name("cheetah9LP.model")).unwrap();
    let error = refused(&path);
    assert!(error.problem.contains("lacks `Blocks per track`"), "{error}");
    // The zone that lacks it starts just above its first cylinder's line.
    assert_eq!(error.line, line_of(&model, "First cylinder number = 848") - 1);

    // A parameter DiskSim does not define (DiskSim refuses it too).
    let path = edited_cheetah("unknown", |specs, model| {
        (
            specs.replace("Never disconnect = 0,", "Never disconnect = 0,\n   Spin-up time = 3,"),
            model,
        )
    })
    .unwrap();
    let error = refused(&path);
    assert_eq!(error.line, line_of(&std::fs::read_to_string(&path).unwrap(), "Spin-up time"));
    assert!(error.problem.contains("unknown parameter `Spin-up time`"), "{error}");
}

// Proves a value our model cannot honour is reported in the warning line, naming the
// parameter, while the same parameter at the value we model is silent.
#[test]
fn unmodelled_values_are_warned_about() {
    let Some(path) = edited_cheetah("warn", |specs, model| {
        (specs.replace("Preseeking level = 0", "Preseeking level = 2"), model)
    }) else {
        return;
    };
    let mapped = disksim::load(&path).unwrap();
    let line = mapped.warning_line().expect("a warning");
    assert!(line.starts_with(&format!("warning: {}: not modelled: ", path.display())), "{line}");
    assert!(line.contains("Preseeking level = 2"), "{line}");
    let plain = load("cheetah9LP.parv").unwrap();
    assert!(!plain.warning_line().unwrap_or_default().contains("Preseeking"));
}

// Proves that of two instantiated disks the first in the topology is taken and the other
// is named in the warnings.
#[test]
fn first_of_several_disks_is_taken() {
    let Some(dir) = shared() else { return };
    let out = scratch("two");
    let parv = format!(
        "source {}\ninstantiate [ diskA, diskB ] as SEAGATE_ST39102LW_validate\n\
         topology disksim_disk diskB [ ]\ntopology disksim_disk diskA [ ]\n",
        dir.join("cheetah9LP.diskspecs").display()
    );
    std::fs::write(out.join("two.parv"), parv).unwrap();
    let mapped = disksim::load(&out.join("two.parv")).unwrap();
    assert_eq!(mapped.disk, "diskB");
    assert!(mapped.warning_line().unwrap().contains("(diskA)"));
}

// Proves no truncation of the real files makes the reader panic: every prefix is either
// refused with a line inside the text or read.
#[test]
fn truncated_files_never_panic() {
    let Some(dir) = shared() else { return };
    for file in ["cheetah9LP.parv", "cheetah9LP.model", "hp_c2247a_validate.model"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let lines = text.lines().count() + 1;
        let step = (text.len() / 400).max(1);
        for end in (0..text.len()).step_by(step) {
            let Some(prefix) = text.get(..end) else { continue };
            // Sourced files resolve next to the real ones.
            if let Err(error) = grammar::parse_text(&dir.join(file), prefix) {
                assert!(error.line <= lines, "{file}[..{end}]: line {} past the end", error.line);
            }
        }
    }
    let seek = std::fs::read_to_string(dir.join("cheetah9LP.seek")).unwrap();
    for end in 0..seek.len() {
        if let Some(prefix) = seek.get(..end) {
            let _ = grammar::parse_seek_text(Path::new("x.seek"), prefix);
        }
    }
}

proptest::proptest! {
    // Proves arbitrary text in the grammar's alphabet never panics the reader.
    #[test]
    fn arbitrary_text_never_panics(text in "[ a-z_0-9={}\\[\\],.#\n\"-]{0,200}") {
        let _ = grammar::parse_text(Path::new("/nonexistent/x.parv"), &text);
    }
}

// Proves a seek file whose header count disagrees with its lines is refused naming the
// file, and that three- and four-column lines are read by their first two columns.
#[test]
fn seek_file_count_and_columns() {
    let error = grammar::parse_seek_text(
        Path::new("s.seek"),
        "Seek distances measured: 3\n1, 1.0\n2, 2.0\n",
    )
    .unwrap_err();
    assert_eq!(error.file, Path::new("s.seek"));
    assert!(error.problem.contains("says 3"), "{error}");
    let curve = grammar::parse_seek_text(
        Path::new("s.seek"),
        "Seek distances measured: 2\n1, 1.5, 0.1\n5, 2.5, 0.2, 7\n",
    )
    .unwrap();
    assert_eq!(curve.points, vec![(1, 1.5), (5, 2.5)]);
    let error =
        grammar::parse_seek_text(Path::new("s.seek"), "Seek distances measured: 2\n1, 1.5\n1, 2\n")
            .unwrap_err();
    assert_eq!(error.line, 3);
}

// Proves `preset_equals_file` passes equal lists and names each difference: a changed
// value, a key the preset lacks, a key the file does not set.
#[test]
fn preset_comparison_names_differences() {
    let file = vec![("rpm", "10045".to_owned()), ("surfaces", "12".to_owned())];
    assert_eq!(disksim::preset_equals_file(&[("surfaces", "12"), ("rpm", "10045")], &file), Ok(()));
    let differences =
        disksim::preset_equals_file(&[("rpm", "10000"), ("depth", "4")], &file).unwrap_err();
    assert_eq!(differences.len(), 3, "{differences:?}");
    assert!(differences.iter().any(|d| d.starts_with("rpm: preset 10000")));
    assert!(differences.iter().any(|d| d.starts_with("surfaces: the preset lacks")));
    assert!(differences.iter().any(|d| d.starts_with("depth: the file does not set")));
}

// Proves each drive's preset (`cheetah9lp`, `ultrastar18es`, `atlas10k`, `hp-c2247a`)
// carries its file's values exactly, key for key: none missing, none extra, none different.
#[test]
fn presets_equal_their_files() {
    for (name, file, _) in DRIVES {
        let Some(mapped) = load(file) else { return };
        let preset = hdd::PRESETS
            .iter()
            .find(|preset| preset.name == name)
            .unwrap_or_else(|| panic!("no preset {name}"));
        if let Err(differences) = disksim::preset_equals_file(preset.values, &mapped.values) {
            panic!("{name} differs from {file}: {}", differences.join("; "));
        }
    }
}

// Proves `disksim:PATH` builds an `hdd` through the normal key resolution for each of the
// four drives (every key the reader produces is one `hdd` has: a renamed key fails here),
// that keys after the path override the file's, and that the spec prints back as
// `disksim:PATH:changed=keys`; a key `hdd` lacks is refused by name, never dropped.
#[test]
fn device_spec_from_a_file() {
    let Some(dir) = shared() else { return };
    for (_, file, _) in DRIVES {
        let path = dir.join(file);
        let spec = DeviceSpec::parse(&format!("disksim:{}", path.display()))
            .unwrap_or_else(|error| panic!("{file}: {error}"));
        let device = spec.build().unwrap_or_else(|error| panic!("{file}: {error}"));
        let mapped = disksim::load(&path).unwrap();
        assert_eq!(device.capacity_sectors().to_string(), value(&mapped, "block_count"), "{file}");
    }
    let path = dir.join("cheetah9LP.parv");
    let text = format!("disksim:{}:depth=4", path.display());
    let spec = DeviceSpec::parse(&text).unwrap();
    assert_eq!(spec.to_string(), text);
    let resolved = spec.resolved();
    let get = |key: &str| resolved.iter().find(|(name, _)| *name == key).unwrap().1.clone();
    assert_eq!(get("depth"), "4");
    assert_eq!(get("rpm"), "10045");
    assert_eq!(DeviceSpec::parse(&spec.to_string()).unwrap(), spec);
    let error = DeviceSpec::parse(&format!("disksim:{}:no_such_key=1", path.display()))
        .unwrap_err()
        .to_string();
    assert!(error.contains("no_such_key"), "{error}");
    // A broken file is refused naming it.
    let error = DeviceSpec::parse(&format!("disksim:{}", dir.join("nope.parv").display()))
        .unwrap_err()
        .to_string();
    assert!(error.contains("nope.parv"), "{error}");
}

// Proves docs/disksim-parameters.md has a row for every parameter of the reader's table, so
// the doc cannot fall behind the code.
#[test]
fn doc_lists_every_rule() {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/disksim-parameters.md");
    let text = std::fs::read_to_string(&doc).unwrap();
    for rule in disksim::RULES {
        assert!(
            text.contains(&format!("| `{}` |", rule.name)),
            "{} lacks a row for `{}`",
            doc.display(),
            rule.name
        );
    }
}

// Proves the typed drive holds the file's facts (zone 3's skews, the seek points) and the
// conversions of values the four drives do not use: Fast write level 0 and 1, Buffer
// continuous read 0 and 1..3, the curve seek type, defects, and a queue policy of each kind.
#[test]
fn conversions_of_other_values() {
    let Some(mapped) = load("cheetah9LP.parv") else { return };
    let drive = &mapped.drive;
    assert_eq!((drive.zones[3].track_skew, drive.zones[3].cylinder_skew), (97.0, 116.0));
    assert!(matches!(&drive.seek, disksim::Seek::Extracted(points) if points.len() == 106));
    let values = |drive: &disksim::Drive| drive.hdd_values();
    let get = |values: &[(&'static str, String)], key: &str| {
        values.iter().find(|(name, _)| *name == key).map(|(_, value)| value.clone())
    };
    let mut changed = drive.clone();
    changed.fast_write_level = 0;
    changed.buffer_continuous_read = 0;
    let out = values(&changed);
    assert_eq!(get(&out, "write_cache").as_deref(), Some("0"));
    assert_eq!(get(&out, "write_back"), None);
    assert_eq!(get(&out, "read_ahead").as_deref(), Some("0"));
    assert_eq!(get(&out, "read_ahead_to"), None);
    changed.fast_write_level = 1;
    for (level, to) in [(1, "track"), (2, "cylinder"), (3, "segment")] {
        changed.buffer_continuous_read = level;
        let out = values(&changed);
        assert_eq!(get(&out, "read_ahead_to").as_deref(), Some(to));
        assert_eq!(get(&out, "write_back").as_deref(), Some("limited"));
    }
    for (policy, name) in [(2, "elevator-lbn"), (3, "cycle-lbn"), (4, "sstf-lbn"), (8, "sptf")] {
        changed.scheduling_policy = policy;
        assert_eq!(get(&values(&changed), "queue_policy").as_deref(), Some(name));
    }
    changed.scheduling_policy = 5;
    assert_eq!(get(&values(&changed), "queue_policy"), None);
    changed.seek = disksim::Seek::Curve { single_ms: 0.8, average_ms: 8.5, full_ms: 16.0 };
    changed.zones[2].defects = vec![(100, 200), (300, 400)];
    changed.mapping_scheme = 2;
    let out = values(&changed);
    assert_eq!(get(&out, "seek").as_deref(), Some("curve"));
    assert_eq!(get(&out, "seek_avg").as_deref(), Some("8.5ms"));
    assert_eq!(get(&out, "seek_table"), None);
    assert_eq!(get(&out, "defects").as_deref(), Some("2:100>200+300>400"));
    assert_eq!(get(&out, "mapping").as_deref(), Some("serpentine-global"));
}

// Proves the HP's interface time comes from its bus (its disk's own is 0), the write
// direction's different time is warned, and its disconnect overheads are reported as not
// modelled, all on one line naming the file.
#[test]
fn hp_bus_time_and_unmodelled_overheads() {
    let Some(mapped) = load("hp_c2247a.parv") else { return };
    assert_eq!(mapped.drive.bulk_sector_ms, 0.0);
    assert_eq!(value(&mapped, "bulk_sector_time"), "0.1701ms");
    let line = mapped.warning_line().expect("the HP has unmodelled parameters");
    assert_eq!(line.lines().count(), 1);
    assert!(line.contains("hp_c2247a.parv: not modelled: "), "{line}");
    for part in [
        "Write block transfer time = 0.18686",
        "First reselect overhead = 0.16249",
        "Minimum seek delay = 0.6",
        "Hold bus entire read xfer = 1",
    ] {
        assert!(line.contains(part), "{part} missing from {line}");
    }
    // The .diskspecs alone has no bus: its own 0 stands.
    let alone = disksim::load(&shared().unwrap().join("hp_c2247a.diskspecs")).unwrap();
    assert_eq!(value(&alone, "bulk_sector_time"), "0ms");
}
