//! DiskSim 4.0's parameter files read into `hdd` keys: the four validated drives of
//! `/work/shared/disksim` (read at test time, never copied), malformed files, the preset
//! generator.

use std::path::{Path, PathBuf};

use elevator_sim::device::disksim::{self, Mapped, grammar};

/// `shared/disksim` above the repository, or `None` (a printed skip) outside CI.
fn shared() -> Option<PathBuf> {
    let found = disksim::find_shared_dir(Path::new(env!("CARGO_MANIFEST_DIR")));
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "shared/disksim not found above {} (CI=true requires it)",
            env!("CARGO_MANIFEST_DIR")
        );
        println!("skipped: no shared/disksim above {}", env!("CARGO_MANIFEST_DIR"));
    }
    found
}

fn load(file: &str) -> Option<Mapped> {
    let dir = shared()?;
    Some(disksim::load(&dir.join(file)).unwrap_or_else(|error| panic!("{file}: {error}")))
}

/// Generator for the presets the next step adds: prints each drive's `Preset` source.
/// Run with `cargo test -p elevator-sim --test disksim print_presets -- --ignored --nocapture`.
#[test]
#[ignore = "a generator: prints Rust source"]
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
    ("cheetah9lp", "cheetah9LP.parv", "Seagate Cheetah 9LP ST39102LW, DiskSim 4.0's validated parameters"),
    ("ultrastar18es", "ibm18es.parv", "IBM Ultrastar 18ES DNES-309170W, DiskSim 4.0's validated parameters"),
    ("atlas10k", "atlas10k.parv", "Quantum Atlas 10K, DiskSim 4.0's validated parameters"),
    ("hp-c2247a", "hp_c2247a.parv", "HP C2247A, DiskSim 4.0's validated parameters"),
];
