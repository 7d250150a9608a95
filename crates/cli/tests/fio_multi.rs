//! Several targets in one live run (issue 17): `elevator run FILE.fio` (and `elevator fio`
//! live) with jobs on different devices or files and `filename=a:b` lists, each target behind
//! its own scheduler instance; what stays unsupported is refused naming file and line.
//!
//! The device tests run as root on RAM-backed loop devices they create and remove (skipped
//! with the reason otherwise, failed under CI=true); the file and refusal tests need neither.

mod support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use support::RamLoop;

/// The byte every target holds before a run: elevator's write buffers hold zeroes, so what a
/// run wrote reads back as 0 and what it did not as this (in runs that only write: a read
/// would leave its data in a buffer reused for writes).
const BEFORE: u8 = 0xab;

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// fio's JSON document on a successful run's stdout.
fn fio_json(output: &Output) -> Value {
    assert!(output.status.success(), "elevator failed: {}", stderr(output));
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(&output.stdout)))
}

/// Writes `text` as `NAME.fio` in `dir`.
fn job_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.fio"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Each job's name and the bytes it wrote, in the document's order.
fn written_by_job(document: &Value) -> Vec<(String, u64)> {
    let jobs = document["jobs"].as_array().expect("jobs");
    jobs.iter()
        .map(|job| {
            let name = job["jobname"].as_str().unwrap().to_owned();
            (name, job["write"]["io_bytes"].as_u64().unwrap())
        })
        .collect()
}

/// Fills `path` (a file or a device) with `BEFORE` over `bytes`, through to the medium.
fn fill(path: &Path, bytes: u64) {
    let mut file =
        std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path).unwrap();
    file.write_all(&vec![BEFORE; bytes as usize]).unwrap();
    file.sync_all().unwrap();
}

/// How many bytes from the start of `path` read back as written by the run (zero), and
/// whether everything after them still holds `BEFORE`.
fn written_prefix(path: &Path, bytes: u64) -> (u64, bool) {
    let mut content = vec![0u8; bytes as usize];
    std::fs::File::open(path).unwrap().read_exact(&mut content).unwrap();
    let prefix = content.iter().position(|&byte| byte != 0).unwrap_or(content.len());
    (prefix as u64, content[prefix..].iter().all(|&byte| byte == BEFORE))
}

// Proves two jobs naming two different devices each do their I/O on their own device, in one
// run: `wa` writes 1 MiB of loop A and `wb` 3 MiB of loop B (fio's per-job io_bytes say so),
// and afterwards A reads back zero over exactly its first 1 MiB and B over exactly its first
// 3 MiB, the rest of each as it was. A run that sent both jobs to one device, or one job to
// the other's device, leaves other extents. Both devices' queues are put back as found.
#[test]
fn jobs_on_two_devices_each_write_their_own() {
    let test = "jobs_on_two_devices_each_write_their_own";
    let Some(a) = RamLoop::attach(test, 8 << 20) else { return };
    let Some(b) = RamLoop::attach(test, 8 << 20) else { return };
    fill(a.path(), 8 << 20);
    fill(b.path(), 8 << 20);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[global]\ndirect=1\nbs=4k\nioengine=psync\nrw=write\n\n\
         [wa]\nfilename={}\nsize=1m\n\n[wb]\nfilename={}\nsize=3m\n",
        a.path().display(),
        b.path().display()
    );
    let file = job_file(dir.path(), "two", &text);
    let output =
        elevator(&["run", file.to_str().unwrap(), "-s", "mq-deadline", "--output-format=json"]);
    let document = fio_json(&output);
    assert_eq!(written_by_job(&document), [("wa".into(), 1 << 20), ("wb".into(), 3 << 20)]);
    assert_eq!(written_prefix(a.path(), 8 << 20), (1 << 20, true), "device A");
    assert_eq!(written_prefix(b.path(), 8 << 20), (3 << 20, true), "device B");
    assert_eq!(a.now(), *a.found(), "A's queue as found");
    assert_eq!(b.now(), *b.found(), "B's queue as found");
    // fio's disk_util lists each device the run's targets are on, with its own writes: at
    // least the job's sectors (merging changes requests, not sectors), under twice that.
    for (device, bytes) in [(a.path(), 1u64 << 20), (b.path(), 3 << 20)] {
        let name = device.file_name().unwrap().to_str().unwrap();
        let util = document["disk_util"].as_array().unwrap();
        let entry = util.iter().find(|entry| entry["name"] == name).unwrap_or_else(|| {
            panic!("no disk_util for {name}: {util:?}");
        });
        let sectors = entry["write_sectors"].as_u64().unwrap();
        assert!(sectors >= bytes / 512 && sectors < 2 * bytes / 512, "{name}: {sectors}");
    }
}

// Proves `filename=A:B` spreads one job's I/O over both devices round-robin (fio's default
// file_service_type) with `size` divided between them (fio's rule): a 2 MiB sequential write
// puts exactly 1 MiB at the start of each device — 256 writes each; a job that favoured one
// device, or wrote all its size to each, leaves a different extent on one of them.
#[test]
fn a_filename_list_spreads_io_over_both_devices() {
    let test = "a_filename_list_spreads_io_over_both_devices";
    let Some(a) = RamLoop::attach(test, 8 << 20) else { return };
    let Some(b) = RamLoop::attach(test, 8 << 20) else { return };
    fill(a.path(), 8 << 20);
    fill(b.path(), 8 << 20);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[both]\nfilename={}:{}\ndirect=1\nbs=4k\nrw=write\nsize=2m\niodepth=4\n\
         ioengine=io_uring\n",
        a.path().display(),
        b.path().display()
    );
    let file = job_file(dir.path(), "list", &text);
    let output = elevator(&["run", file.to_str().unwrap(), "-s", "bfq", "--output-format=json"]);
    let document = fio_json(&output);
    assert_eq!(written_by_job(&document), [("both".into(), 2 << 20)]);
    assert_eq!(document["jobs"][0]["write"]["total_ios"].as_u64(), Some(512));
    assert_eq!(written_prefix(a.path(), 8 << 20), (1 << 20, true), "device A");
    assert_eq!(written_prefix(b.path(), 8 << 20), (1 << 20, true), "device B");
}

// Proves regular files work as several targets, with `elevator run` and `elevator fio` live
// alike: missing files named in a list are created at the job's `size` divided among them
// (fio lays each file out at its share) and the writes land in each job's own files — `pair`
// writes c and d whole (256 KiB each), `solo` the first 128 KiB of e. With `elevator run
// --force` e exists beforehand (1 MiB) and keeps its size, untouched past 128 KiB; `elevator
// fio` (never forced) creates it at its 128 KiB and writes it whole.
#[test]
fn regular_files_are_created_at_their_share_and_written_by_their_jobs() {
    // Not /tmp: often tmpfs, where O_DIRECT may be refused (the scratch file's own rule).
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let (c, d, e) = (dir.path().join("c"), dir.path().join("d"), dir.path().join("e"));
    let text = format!(
        "[global]\ndirect=1\nbs=4k\nrw=write\n\n[pair]\nfilename={}:{}\nsize=512k\n\n\
         [solo]\nfilename={}\nsize=128k\n",
        c.display(),
        d.display(),
        e.display()
    );
    let file = job_file(dir.path(), "files", &text);
    for front in ["run", "fio"] {
        for path in [&c, &d, &e] {
            let _ = std::fs::remove_file(path);
        }
        let e_bytes = if front == "run" { 1 << 20 } else { 128 << 10 };
        if front == "run" {
            fill(&e, e_bytes);
        }
        let output = match front {
            "run" => elevator(&[
                "run",
                file.to_str().unwrap(),
                "-s",
                "none",
                "--force",
                "--output-format=json",
            ]),
            _ => Command::new(env!("CARGO_BIN_EXE_elevator"))
                .args(["fio", "--output-format=json", file.to_str().unwrap()])
                .env("ELEVATOR_FIO_MODE", "live")
                .output()
                .unwrap(),
        };
        let document = fio_json(&output);
        let jobs = written_by_job(&document);
        assert_eq!(jobs, [("pair".into(), 512 << 10), ("solo".into(), 128 << 10)], "{front}");
        for path in [&c, &d] {
            assert_eq!(std::fs::metadata(path).unwrap().len(), 256 << 10, "{front}: {path:?}");
            // Created by the run and written whole: nothing of BEFORE, all of it zero.
            let content = std::fs::read(path).unwrap();
            assert!(content.iter().all(|&byte| byte == 0), "{front}: {path:?} written whole");
        }
        assert_eq!(std::fs::metadata(&e).unwrap().len(), e_bytes, "{front}: e's size");
        assert_eq!(written_prefix(&e, e_bytes), (128 << 10, true), "{front}: e");
    }
}

// Proves what stays unsupported with several targets is refused before anything is opened,
// naming the job file and line and saying why, with exit code 2: `openfiles` below a job's
// `nrfiles` (the mapping's refusal), a missing file no job gives a size for (fio's rule), a
// command-line target beside the file's, and `elevator kernel compare` with a list of regular
// files, a `directory` or `nrfiles` above 1 (it switches block devices' schedulers). Nothing
// is created.
#[test]
fn what_stays_unsupported_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let (x, y) = (dir.path().join("x"), dir.path().join("y"));
    let two = format!("[a]\nfilename={}\n[b]\nfilename={}\n", x.display(), y.display());
    let cases = [
        (
            "openfiles",
            format!("[global]\ndirect=1\nsize=1m\n{two}[c]\nnrfiles=2\nopenfiles=1\n"),
            10,
            "openfiles=1",
        ),
        ("unsized", format!("[global]\ndirect=1\n{two}"), 4, "no job naming it gives `size`"),
    ];
    for (name, text, line, says) in &cases {
        let file = job_file(dir.path(), name, text);
        let output = elevator(&["run", file.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{name}: {}", stderr(&output));
        let at = format!("{}:{line}", file.display());
        assert!(stderr(&output).contains(&at), "{name}: names {at}: {}", stderr(&output));
        assert!(stderr(&output).contains(says), "{name}: {}", stderr(&output));
    }
    let file = job_file(dir.path(), "given", &format!("[global]\ndirect=1\nsize=1m\n{two}"));
    let output = elevator(&["run", file.to_str().unwrap(), "--target", "/dev/null"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("names its own targets"), "{}", stderr(&output));
    let list = job_file(
        dir.path(),
        "list",
        &format!("[a]\nsize=1m\nfilename={}:{}\n", x.display(), y.display()),
    );
    let in_directory = job_file(dir.path(), "in_directory", "[a]\nsize=1m\ndirectory=/tmp\n");
    let several = job_file(dir.path(), "several", "[a]\nsize=1m\nnrfiles=2\n");
    // Any block device will do: the job file is refused before the device is touched.
    let mut devices: Vec<String> = std::fs::read_dir("/sys/block")
        .expect("/sys/block")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    devices.sort();
    let device = devices.first().expect("a block device in /sys/block");
    for (file, line, says) in [
        (&list, 3, "switches the scheduler of block devices"),
        (&in_directory, 3, "`directory=/tmp`"),
        (&several, 3, "several files"),
    ] {
        let output = elevator(&["kernel", "compare", device, file.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        let at = format!("{}:{line}", file.display());
        assert!(stderr(&output).contains(&at), "names {at}: {}", stderr(&output));
        assert!(stderr(&output).contains(says), "{}", stderr(&output));
    }
    assert!(!x.exists() && !y.exists(), "nothing was created");
}

// Proves jobs without `filename` get fio's own files when the job file names others: `b`
// with numjobs=2 writes `b.0.0` and `b.1.0` in the working directory (one per clone, fio's
// default `$jobname.$jobnum.$filenum`), `c` with `directory=sub` writes `sub/c.0.0`, `a`
// its named `x`; each file is created at the job's 64 KiB and read back written whole (a
// created file holds elevator's non-zero fill, the writes zeroes), so two clones sharing
// one file, or a job writing another's, would leave one not.
#[test]
fn jobs_without_filename_get_fios_own_files() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let text = "[global]\ndirect=1\nbs=4k\nrw=write\nsize=64k\n\n[a]\nfilename=x\n\n\
                [b]\nnumjobs=2\n\n[c]\ndirectory=sub\n";
    let file = job_file(dir.path(), "names", text);
    let output = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["run", file.to_str().unwrap(), "-s", "none", "--output-format=json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let document = fio_json(&output);
    let written: u64 = written_by_job(&document).iter().map(|(_, bytes)| bytes).sum();
    assert_eq!(written, 4 * (64 << 10), "four files of 64 KiB");
    for name in ["x", "b.0.0", "b.1.0", "sub/c.0.0"] {
        let content = std::fs::read(dir.path().join(name)).unwrap();
        assert_eq!(content.len(), 64 << 10, "{name}");
        assert!(content.iter().all(|&byte| byte == 0), "{name} written whole");
    }
}

// Proves `nrfiles` files become targets of their own in a live run: a job with nrfiles=3 and
// numjobs=2 under `directory` creates fio's six files `n.CLONE.FILE` at `size` divided among
// a clone's three (256 KiB each) and writes each whole (`sequential` service: one after
// another), and a `filename_format` job its own names; the files created are exactly these
// (elevator's fill is non-zero, the writes zeroes, so a file left out or shared would show).
#[test]
fn nrfiles_files_are_created_and_each_written() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let text = "[global]\ndirect=1\nbs=4k\nrw=write\n\n[n]\ndirectory=d\nnrfiles=3\n\
                numjobs=2\nsize=768k\nfile_service_type=sequential\n\n[f]\nnrfiles=2\n\
                filename_format=f-$filenum.dat\nsize=128k\n";
    let file = job_file(dir.path(), "nrfiles", text);
    let output = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["run", file.to_str().unwrap(), "-s", "none", "--output-format=json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let document = fio_json(&output);
    let written: u64 = written_by_job(&document).iter().map(|(_, bytes)| bytes).sum();
    assert_eq!(written, 6 * (256 << 10) + 2 * (64 << 10));
    let mut expected = Vec::new();
    for clone in 0..2 {
        for file in 0..3 {
            expected.push((format!("d/n.{clone}.{file}"), 256 << 10));
        }
    }
    expected.extend([("f-0.dat".to_owned(), 64 << 10), ("f-1.dat".to_owned(), 64 << 10)]);
    for (name, bytes) in &expected {
        let content = std::fs::read(dir.path().join(name)).unwrap();
        assert_eq!(content.len(), *bytes, "{name}");
        assert!(content.iter().all(|&byte| byte == 0), "{name} written whole");
    }
    let mut created: Vec<String> = std::fs::read_dir(dir.path().join("d"))
        .unwrap()
        .map(|entry| format!("d/{}", entry.unwrap().file_name().to_string_lossy()))
        .collect();
    created.extend(
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "d" && name != "nrfiles.fio"),
    );
    created.sort();
    let mut names: Vec<String> = expected.into_iter().map(|(name, _)| name).collect();
    names.sort();
    assert_eq!(created, names);
}

// Proves each target is opened for writing only when a job naming it may write (the
// write-safety rules apply per path): without --force, a file elevator did not create is
// read by `r` (all 256 KiB, content untouched) while `w` writes 256 KiB to a file the run
// creates at that size. Were
// every target opened for writing, the run would be refused for the reader's file.
#[test]
fn a_target_only_read_is_opened_read_only() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let (theirs, ours) = (dir.path().join("theirs"), dir.path().join("ours"));
    fill(&theirs, 256 << 10);
    let text = format!(
        "[global]\ndirect=1\nbs=4k\nsize=256k\n\n[r]\nfilename={}\nrw=read\n\n\
         [w]\nfilename={}\nrw=write\n",
        theirs.display(),
        ours.display()
    );
    let file = job_file(dir.path(), "mixed", &text);
    let output = elevator(&["run", file.to_str().unwrap(), "-s", "none", "--output-format=json"]);
    let document = fio_json(&output);
    assert_eq!(document["jobs"][0]["read"]["io_bytes"].as_u64(), Some(256 << 10));
    assert_eq!(written_by_job(&document)[1], ("w".into(), 256 << 10));
    assert_eq!(written_prefix(&theirs, 256 << 10), (0, true), "the read file is untouched");
    // Its content is not checked: the reader's buffers, reused for writes, hold BEFORE too.
    assert_eq!(std::fs::metadata(&ours).unwrap().len(), 256 << 10, "created at its size");
}
