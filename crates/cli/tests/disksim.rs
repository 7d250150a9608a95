//! `-d disksim:PATH` and `elevator list devices disksim:PATH` as a user runs them, on
//! DiskSim 4.0's drive files in `shared/disksim` (read at test time, never copied).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use elevator_sim::device::disksim;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// `shared/disksim` above the repository, or `None` (a printed skip) outside CI.
fn shared() -> Option<PathBuf> {
    disksim::shared_dir_for_tests(Path::new(env!("CARGO_MANIFEST_DIR")))
}

// Proves `list devices disksim:cheetah9LP.parv` prints the file's values as keys (rpm =
// 10045) and exits 0, and that `sim` runs a workload on each of the four drives, printing
// the one warning line of what a file sets that the model does not (the Atlas 10K's
// zero-latency access) on stderr and none for the Cheetah 9LP.
#[test]
fn list_and_simulate_the_drives() {
    let Some(dir) = shared() else { return };
    let path = dir.join("cheetah9LP.parv");
    let spec = format!("disksim:{}", path.display());
    let output = elevator(&["list", "devices", &spec]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains(&spec), "{stdout}");
    assert!(stdout.lines().any(|line| line.contains("rpm") && line.contains("10045")), "{stdout}");
    for file in ["cheetah9LP.parv", "ibm18es.parv", "atlas10k.parv", "hp_c2247a.parv"] {
        let spec = format!("disksim:{}", dir.join(file).display());
        let output = elevator(&[
            "sim",
            "-d",
            &spec,
            "-s",
            "noop",
            "-w",
            "job:rw=randread,bs=4k,size=4m,runtime=1s",
            "--format",
            "json",
        ]);
        assert!(output.status.success(), "{file}: {}", text(&output.stderr));
        let stderr = text(&output.stderr);
        let warned = stderr.lines().any(|line| line.contains("not modelled"));
        match file {
            "cheetah9LP.parv" => assert!(!warned, "{stderr}"),
            "atlas10k.parv" => assert!(stderr.contains("Immediate buffer read"), "{stderr}"),
            _ => {}
        }
        // Random 4 KiB reads for a second: a few hundred reach the drive, each a few ms.
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let requests = report["runs"][0]["device_stats"]["requests"].as_u64().unwrap();
        assert!((40..2000).contains(&requests), "{file}: {requests} requests");
    }
}

// Proves a broken parameter file makes `sim` and `list devices` exit 2 naming the file and
// the line.
#[test]
fn broken_file_exits_2_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.diskspecs");
    std::fs::write(
        &path,
        "disksim_disk D {\n   Max queue length = 1,\n   Print stats = one two\n}\n",
    )
    .unwrap();
    let spec = format!("disksim:{}", path.display());
    for args in [vec!["list", "devices", &spec], vec!["sim", "-d", &spec, "-w", "job:size=64k"]] {
        let output = elevator(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(&format!("{}:3:", path.display())), "{stderr}");
    }
}
