//! fio's `write_iolog` and `read_iolog` through `elevator sim FILE.fio` and the drop-in
//! `elevator fio` (fio-compat.md §6): the log lands where the job file says (relative to the
//! working directory, as fio's), holds the run's I/O, is the same on every run of a seed, and
//! a replay of it does the same I/O.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn elevator(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(dir)
        .args(args)
        .env("ELEVATOR_FIO_DEVICE", "ssd")
        .env("ELEVATOR_FIO_SCHEDULER", "mq-deadline")
        .output()
        .expect("run elevator")
}

/// Runs `text` as `job.fio` in `dir` under the simulator; fio's JSON.
fn sim_json(dir: &Path, text: &str) -> Value {
    std::fs::write(dir.join("job.fio"), text).unwrap();
    let output = elevator(
        dir,
        &["sim", "job.fio", "-d", "ssd", "-s", "mq-deadline", "--output-format", "json"],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

const WRITER: &str = "[w]\nrw=randrw\nbs=4k\nsize=1m\nioengine=libaio\niodepth=4\ndirect=1\n\
                      write_iolog=w.log\n";
const READER: &str = "[r]\nread_iolog=w.log\nioengine=libaio\niodepth=4\ndirect=1\n";

/// The number of I/O lines of each direction in a v3 log.
fn count(log: &str, direction: &str) -> u64 {
    log.lines().filter(|line| line.split_whitespace().nth(2) == Some(direction)).count() as u64
}

// Proves `elevator sim` writes write_iolog's file in the working directory, fio's v3 header
// and one line per I/O the JSON counts, byte for byte the same on a second run of the seed;
// and that a job replaying it reads and writes as many I/Os and bytes per direction.
#[test]
fn sim_writes_the_log_and_a_replay_does_the_same_io() {
    let dir = tempfile::tempdir().unwrap();
    let written = sim_json(dir.path(), WRITER);
    let log = std::fs::read_to_string(dir.path().join("w.log")).unwrap();
    assert!(log.starts_with("fio version 3 iolog\n"), "{log}");
    let job = &written["jobs"][0];
    assert_eq!(count(&log, "read"), job["read"]["total_ios"].as_u64().unwrap());
    assert_eq!(count(&log, "write"), job["write"]["total_ios"].as_u64().unwrap());
    assert!(count(&log, "read") > 0 && count(&log, "write") > 0);

    let again = tempfile::tempdir().unwrap();
    sim_json(again.path(), WRITER);
    assert_eq!(std::fs::read_to_string(again.path().join("w.log")).unwrap(), log);

    let replayed = sim_json(dir.path(), READER);
    let replay = &replayed["jobs"][0];
    for direction in ["read", "write"] {
        for key in ["total_ios", "io_bytes"] {
            assert_eq!(replay[direction][key], job[direction][key], "{direction} {key}");
        }
    }
}

// Proves that with several schedulers each run writes its own log (`w.SCHED.log`), each a
// whole log of that run alone (one header), and that the one-scheduler run's log equals the
// tagged log of the same scheduler: runs going at once never append to one shared file.
#[test]
fn several_schedulers_write_one_log_each() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.fio"), WRITER).unwrap();
    let output = elevator(dir.path(), &["sim", "job.fio", "-d", "ssd", "-s", "none,bfq"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!dir.path().join("w.log").exists(), "the untagged log is not written");
    let single = tempfile::tempdir().unwrap();
    std::fs::write(single.path().join("job.fio"), WRITER).unwrap();
    let output = elevator(single.path(), &["sim", "job.fio", "-d", "ssd", "-s", "bfq"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    for scheduler in ["none", "bfq"] {
        let log = std::fs::read_to_string(dir.path().join(format!("w.{scheduler}.log"))).unwrap();
        assert_eq!(log.matches("fio version 3 iolog").count(), 1, "{scheduler}");
        assert!(count(&log, "read") + count(&log, "write") > 0);
        if scheduler == "bfq" {
            assert_eq!(log, std::fs::read_to_string(single.path().join("w.log")).unwrap());
        }
    }
}

// Proves the drop-in `elevator fio FILE` writes the log too, in its working directory.
#[test]
fn the_drop_in_writes_the_log() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.fio"), WRITER).unwrap();
    let output = elevator(dir.path(), &["fio", "--output-format=json", "job.fio"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let log = std::fs::read_to_string(dir.path().join("w.log")).unwrap();
    assert!(log.starts_with("fio version 3 iolog\n"));
    assert_eq!(count(&log, "read"), json["jobs"][0]["read"]["total_ios"].as_u64().unwrap());
}

// Proves a replay that cannot be honoured exits 2 naming the job file's line.
#[test]
fn a_refused_replay_exits_2_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.log"), "fio version 2 iolog\nsda read 0 4096\n").unwrap();
    std::fs::write(dir.path().join("job.fio"), "[r]\nread_iolog=t.log\nthinktime=1ms\n").unwrap();
    let output = elevator(dir.path(), &["sim", "job.fio", "-d", "ssd"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("job.fio:3") && stderr.contains("thinktime"), "{stderr}");
}

mod support;

/// Runs real `fio` in `dir` with `args`; its JSON.
fn real_fio(fio: &Path, dir: &Path, args: &[&str]) -> Value {
    let output = Command::new(fio)
        .current_dir(dir)
        .args(args)
        .arg("--output-format=json")
        .output()
        .expect("run fio");
    assert!(output.status.success(), "fio: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("fio's JSON")
}

/// Reads and writes of a fio (or elevator) JSON's first job: (ios, bytes) per direction.
fn done(json: &Value) -> [(u64, u64); 2] {
    let job = &json["jobs"][0];
    ["read", "write"]
        .map(|d| (job[d]["total_ios"].as_u64().unwrap(), job[d]["io_bytes"].as_u64().unwrap()))
}

// Proves real fio and elevator read each other's logs: a log real fio wrote (`write_iolog`
// on a regular file, fsyncs included) replays in `elevator sim` with fio's counts of reads
// and writes, and the log `elevator sim` wrote replays in real fio with elevator's counts.
// Needs fio (installed when missing; under CI=true its absence fails the test).
#[test]
fn real_fio_and_elevator_replay_each_others_logs() {
    let Some(fio) = support::fio("real_fio_and_elevator_replay_each_others_logs") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fios = real_fio(
        &fio,
        dir.path(),
        &[
            "--name=f",
            "--filename=data",
            "--size=256k",
            "--bs=4k",
            "--rw=randrw",
            "--ioengine=psync",
            "--fsync=4",
            "--write_iolog=fio.log",
        ],
    );
    let log = std::fs::read_to_string(dir.path().join("fio.log")).unwrap();
    assert!(log.starts_with("fio version 3 iolog\n"), "{log}");
    let ours = sim_json(dir.path(), "[r]\nread_iolog=fio.log\n");
    assert_eq!(done(&ours), done(&fios));

    // elevator's log of a job on the regular file `data`, replayed by real fio on it.
    let ours = sim_json(
        dir.path(),
        "[e]\nfilename=data\nsize=256k\nbs=8k\nrw=randrw\nwrite_iolog=ours.log\n",
    );
    let fios = real_fio(&fio, dir.path(), &["--name=r", "--read_iolog=ours.log"]);
    assert_eq!(done(&fios), done(&ours));
    assert!(done(&ours).iter().all(|&(ios, _)| ios > 0));
}
