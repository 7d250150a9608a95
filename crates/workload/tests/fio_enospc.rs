//! A full filesystem as fio sees it: a write that finds no free block fails with ENOSPC, and
//! fio's `fill_device`, `continue_on_error` and `ignore_error` decide what the job does then
//! (fio's backend.c `io_u_sync_complete` and td_error.c `td_non_fatal_error`), in the real
//! simulator on a small device.

use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, SimConfig};
use elevator_workload::WorkloadSpec;

/// The device: 64 MiB, small enough to fill quickly.
const DEVICE: &str = "ssd:capacity=64m";
const DEVICE_BYTES: u64 = 64 << 20;
const BLOCK_BYTES: u64 = 4096;

/// What the last phase of a run did: its bytes and operations, its failed writes and the
/// first failure's cause.
#[derive(Debug)]
struct Seen {
    bytes: u64,
    ops: u64,
    write_errors: u64,
    other_errors: u64,
    first_error: Option<String>,
}

/// Runs job file `text` (named `test`) on [`DEVICE`] under mq-deadline.
fn run(test: &str, text: &str) -> Result<Seen, String> {
    let dir = std::env::temp_dir().join(format!("elevator-fio-enospc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let path = dir.join(format!("{test}.fio"));
    std::fs::write(&path, text).expect("writable job file");
    let spec = WorkloadSpec::parse_fio_file(&path.display().to_string()).expect("maps");
    let config = SimConfig::new(1, DeviceSpec::parse(DEVICE).expect("device preset"));
    let scheduler = SchedulerSpec::parse("mq-deadline").expect("scheduler");
    let run = elevator_sim::run(&config, &scheduler, &spec).map_err(|error| error.to_string())?;
    let phase = run.phases.last().expect("a phase");
    Ok(Seen {
        bytes: phase.bytes,
        ops: phase.ops,
        write_errors: phase.errors.write,
        other_errors: phase.errors.read + phase.errors.other,
        first_error: phase.errors.first.clone(),
    })
}

/// A sequential direct writer of 4 KiB blocks into one file, with `extra` options.
fn writer(extra: &str) -> String {
    // fallocate=none: the writes allocate the file (fio preallocates it by default).
    // fill_device ignores it.
    format!(
        "[w]\nfilename=data\nrw=write\nbs=4k\ndirect=1\nioengine=psync\nfallocate=none\n{extra}"
    )
}

// Proves fill_device writes a file until the filesystem is full and ends there without error:
// no size given, it writes most of the 64 MiB device (all but the filesystem's own metadata)
// and no more than the device, and the run reports no failed I/O.
#[test]
fn fill_device_writes_until_full_and_ends_cleanly() {
    let phase = run("fill", &writer("fill_device=1\n")).expect("fill_device ends cleanly");
    assert_eq!((phase.write_errors, phase.other_errors), (0, 0), "no error: {phase:?}");
    assert_eq!(phase.first_error, None);
    assert!(phase.bytes > DEVICE_BYTES * 8 / 10, "filled: {} bytes", phase.bytes);
    assert!(phase.bytes < DEVICE_BYTES, "within the device: {} bytes", phase.bytes);
    assert_eq!(phase.bytes, phase.ops * BLOCK_BYTES);
}

// Proves a job without continue_on_error ends at its first ENOSPC with the error recorded
// (fio's `error=ENOSPC`) instead of the whole run failing: it asked for twice the device,
// wrote what fit, and its one failed write is counted with its cause; it writes what
// fill_device writes, the same blocks until the first failure.
#[test]
fn enospc_ends_the_job_with_the_error_recorded() {
    let size = format!("size={}\n", 2 * DEVICE_BYTES);
    let phase = run("none", &writer(&size)).expect("the job's error does not fail the run");
    assert_eq!(phase.write_errors, 1, "one failed write, then the job ended");
    let first = phase.first_error.as_deref().unwrap_or_default();
    assert!(first.contains("ENOSPC"), "the cause: {first}");
    let filled = run("fill2", &writer("fill_device=1\n")).expect("runs").bytes;
    assert_eq!(phase.bytes, filled, "stops where the filesystem is full");
    // continue_on_error=write alone does not cover ENOSPC: fio's non-fatal errors are EIO
    // and EILSEQ unless ignore_error names others.
    let text = writer(&format!("{size}continue_on_error=write\n"));
    let seen = run("write-only", &text).expect("runs");
    assert_eq!(seen.write_errors, 1, "ENOSPC is not in the default list");
}

// Proves continue_on_error=write with ignore_error=,ENOSPC carries on after ENOSPC as fio
// does: every one of the job's writes either landed or failed (bytes written plus failed
// writes make its whole size), so it went on issuing to its end after the filesystem filled;
// a read-side list alone (ignore_error=ENOSPC) does not cover writes.
#[test]
fn continue_on_error_write_carries_on() {
    let size_bytes = 2 * DEVICE_BYTES;
    let text =
        writer(&format!("size={size_bytes}\ncontinue_on_error=write\nignore_error=,ENOSPC\n"));
    let phase = run("write", &text).expect("runs");
    assert!(phase.write_errors > 1, "carried on: {phase:?}");
    assert_eq!(phase.bytes + phase.write_errors * BLOCK_BYTES, size_bytes);
    let text = writer(&format!("size={size_bytes}\ncontinue_on_error=all\nignore_error=ENOSPC\n"));
    let seen = run("read-list", &text).expect("runs");
    assert_eq!(seen.write_errors, 1, "the read list does not cover writes");
}

// Proves an unknown error name in ignore_error is refused naming the option and what is
// accepted, not ignored.
#[test]
fn unknown_ignore_error_names_are_refused() {
    let dir = std::env::temp_dir().join(format!("elevator-fio-enospc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let path = dir.join("bad.fio");
    std::fs::write(&path, writer("size=1m\nignore_error=,ENOTANERROR\n")).expect("writable");
    let error = WorkloadSpec::parse_fio_file(&path.display().to_string()).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("ignore_error") && text.contains("ENOSPC"), "{text}");
}

// Proves fio's default fallocate (native) allocates a writing job's file before it runs: the
// same job as above without fallocate=none does not fit the filesystem and the run fails at
// setup naming the device, where fallocate=none lets its writes meet ENOSPC one by one.
#[test]
fn default_fallocate_allocates_before_the_run() {
    let text =
        format!("[w]\nfilename=data\nrw=write\nbs=4k\ndirect=1\nsize={}\n", 2 * DEVICE_BYTES);
    let error = run("prealloc", &text).unwrap_err();
    assert!(error.contains("do not fit on sda"), "{error}");
}

// Proves a time-based job that goes on after ENOSPC reaches its runtime when every write
// fails (the simulation does not spin in no simulated time): a first phase fills the
// filesystem, then a writer of a new file fails each write for its 10 ms, 1 µs apart.
#[test]
fn a_time_based_job_failing_every_write_ends_at_its_runtime() {
    let text = format!(
        "{}\n[late]\nstonewall\nfilename=other\nrw=write\nbs=4k\ndirect=1\nfallocate=none\n\
         size=1m\ntime_based\nruntime=10ms\ncontinue_on_error=write\nignore_error=,ENOSPC\n",
        writer("fill_device=1\n")
    );
    let phase = run("time-based", &text).expect("ends");
    assert_eq!(phase.bytes, 0, "nothing fits: {phase:?}");
    // 10 ms of failures 1 µs apart (the last may straddle the end).
    assert!((9_000..=10_001).contains(&phase.write_errors), "{phase:?}");
}
