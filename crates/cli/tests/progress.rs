//! Progress on stderr (issue 19): a simulation longer than about two seconds shows where each
//! scheduler's run is, on a terminal only, and never under `--quiet` or into a pipe.

use std::process::Command;

/// A simulation that takes a few seconds in a debug build.
const LONG_SIM: &str = "elevator sim -d nvme-gen4-consumer --host host:cpus=2 -s none,mq-deadline \
     -w job:rw=randread,bs=4k,iodepth=32,direct=1,numjobs=2,size=128m";

/// Runs `command` (a shell line, `elevator` replaced by the binary) under a pseudo-terminal
/// with util-linux's `script`, returning what the terminal received.
fn on_a_terminal(command: &str) -> String {
    let binary = env!("CARGO_BIN_EXE_elevator");
    let line = command.replacen("elevator", binary, 1) + " > /dev/null";
    let typescript = tempfile::NamedTempFile::new().unwrap();
    let status =
        Command::new("script").args(["-q", "-e", "-c", &line]).arg(typescript.path()).output();
    let status = match status {
        Ok(output) => output.status,
        Err(error) => panic!("util-linux `script` is needed to give the run a terminal: {error}"),
    };
    assert!(status.success(), "{line}: {status}");
    String::from_utf8_lossy(&std::fs::read(typescript.path()).unwrap()).into_owned()
}

// Proves a long simulation shows its progress on a terminal — each scheduler's phase and
// simulated time — and that `--quiet` silences it, as a pipe does.
#[test]
fn a_long_simulation_shows_progress_unless_quiet() {
    let shown = on_a_terminal(LONG_SIM);
    assert!(
        shown.contains("simulating: none: phase 1/1") && shown.contains("mq-deadline: phase 1/1"),
        "no progress line on the terminal: {shown:?}"
    );
    assert!(shown.contains("s simulated"), "{shown:?}");
    let quiet = on_a_terminal(&LONG_SIM.replacen("elevator sim", "elevator --quiet sim", 1));
    assert!(!quiet.contains("simulating"), "--quiet still drew: {quiet:?}");
    let piped = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(LONG_SIM.split_whitespace().skip(1))
        .output()
        .unwrap();
    assert!(piped.status.success());
    assert!(!String::from_utf8_lossy(&piped.stderr).contains("simulating"));
}
