//! fio job files run in the real simulator, checked against fio's documented semantics for
//! the engines and options that need the simulator's help (`/work/shared/specs/fio-compat.md`
//! §2.1, §2.2): the passthrough engines and the null engine.

use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, SimConfig};
use elevator_workload::WorkloadSpec;

/// What a run shows of one job file's first phase and the whole queue.
#[derive(Debug)]
struct Seen {
    ops: u64,
    bytes: u64,
    latency_max_ns: u64,
    duration_ns: u64,
    merges: u64,
    scheduler_dispatched: u64,
    device_requests: u64,
}

/// Runs `text` as a job file on one simulated `device` under `scheduler`.
fn run(test: &str, text: &str, device: &str, scheduler: &str) -> Seen {
    let dir = std::env::temp_dir().join(format!("elevator-fio-semantics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let path = dir.join(format!("{test}.fio"));
    std::fs::write(&path, text).expect("writable job file");
    let spec = WorkloadSpec::parse_fio_file(&path.display().to_string()).expect("maps");
    let config = SimConfig::new(1, DeviceSpec::parse(device).expect("device preset"));
    let scheduler = SchedulerSpec::parse(scheduler).expect("scheduler");
    let run = elevator_sim::run(&config, &scheduler, &spec).expect("runs");
    let phase = &run.phases[0];
    Seen {
        ops: phase.ops,
        bytes: phase.bytes,
        latency_max_ns: phase.latency_ns.max,
        duration_ns: phase.duration_ns,
        merges: run.queue_stats.back_merges + run.queue_stats.front_merges,
        scheduler_dispatched: run.scheduler_stats.dispatched,
        device_requests: run.device_stats.requests,
    }
}

// Proves the passthrough engines bypass the elevator in the whole simulator: 256 adjacent
// 4 KiB writes 16 deep through io_uring merge in mq-deadline and are dispatched by it, the same
// writes through io_uring_cmd (fio's NVMe passthrough) reach the device as 256 unmerged
// commands the scheduler never dispatched.
#[test]
fn passthrough_commands_bypass_the_scheduler() {
    let job = |engine: &str| {
        format!("[w]\nfilename=/dev/sda\nrw=write\nbs=4k\nsize=1m\niodepth=16\nioengine={engine}\n")
    };
    let block = run("block", &job("io_uring\ndirect=1"), "hdd", "mq-deadline");
    let passthrough = run("passthrough", &job("io_uring_cmd"), "hdd", "mq-deadline");
    assert!(block.merges > 0 && block.scheduler_dispatched > 0, "{block:?}");
    assert_eq!(passthrough.ops, 256);
    assert_eq!(passthrough.merges, 0, "{passthrough:?}");
    assert_eq!(passthrough.scheduler_dispatched, 0, "the scheduler saw none");
    assert_eq!(passthrough.device_requests, 256, "every command reached the device");
}

// Proves fio's null engine: every operation completes where it is submitted, moving its bytes
// (the job's size) in no simulated time, and no request reaches the device or the scheduler;
// a time_based null job, which would never reach its runtime, is refused naming the option.
#[test]
fn the_null_engine_completes_at_once() {
    let text = "[null]\nioengine=null\nsize=1m\nbs=4k\nrw=randread\nnorandommap\niodepth=4\n";
    let run = run("null", text, "hdd", "bfq");
    assert_eq!((run.ops, run.bytes), (256, 1 << 20));
    assert_eq!((run.latency_max_ns, run.duration_ns), (0, 0), "no time: {run:?}");
    assert_eq!((run.device_requests, run.scheduler_dispatched), (0, 0));

    let dir = std::env::temp_dir().join(format!("elevator-fio-semantics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let path = dir.join("null_timed.fio");
    std::fs::write(&path, "[n]\nioengine=null\nsize=1m\ntime_based\nruntime=1s\n").unwrap();
    let error = WorkloadSpec::parse_fio_file(&path.display().to_string()).unwrap_err();
    assert!(error.to_string().contains("time_based"), "{error}");
}

/// The first phase's counters, p99 and mean latencies of `text` run on an ssd under none.
fn first_phase(test: &str, text: &str) -> (std::collections::BTreeMap<String, u64>, u64, u64) {
    let dir = std::env::temp_dir().join(format!("elevator-fio-semantics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let path = dir.join(format!("{test}.fio"));
    std::fs::write(&path, text).expect("writable job file");
    let spec = WorkloadSpec::parse_fio_file(&path.display().to_string()).expect("maps");
    let config = SimConfig::new(1, DeviceSpec::parse("ssd").expect("device preset"));
    let scheduler = SchedulerSpec::parse("none").expect("scheduler");
    let run = elevator_sim::run(&config, &scheduler, &spec).expect("runs");
    let phase = &run.phases[0];
    (phase.counters.clone(), phase.latency_ns.p99, phase.latency_ns.mean)
}

// Proves latency_target's depth search as fio's: with a target of 4 times the depth-1 mean
// latency and latency_percentile=99, the search settles on a depth D between 1 and iodepth
// whose p99 is within the target when run at that fixed depth, while twice that depth misses
// it (the search does not stop short, nor overshoot).
#[test]
fn latency_target_finds_the_deepest_depth_within_the_target() {
    let job = |extra: &str| {
        format!(
            "[j]\nfilename=/dev/sda\nrw=randread\nbs=4k\ndirect=1\nioengine=libaio\nsize=1g\n\
             time_based\nruntime=2s\n{extra}\n"
        )
    };
    let (_, _, mean_qd1) = first_phase("qd1", &job("iodepth=1"));
    let target_us = 4 * mean_qd1 / 1000;
    let text = job(&format!(
        "iodepth=128\nlatency_target={target_us}\nlatency_window=20ms\n\
         latency_percentile=99\nrandom_generator=lfsr"
    ));
    let (counters, _, _) = first_phase("target", &text);
    let depth = counters["latency_target_depth"];
    assert!(depth > 1 && depth < 128, "depth {depth} (target {target_us} us)");
    assert_eq!(counters["latency_target_failures"], 0);
    let (_, p99_at_depth, _) = first_phase("at", &job(&format!("iodepth={depth}")));
    let (_, p99_above, _) = first_phase("above", &job(&format!("iodepth={}", 2 * depth)));
    assert!(p99_at_depth <= target_us * 1000, "{p99_at_depth} ns at depth {depth}");
    assert!(p99_above > target_us * 1000, "{p99_above} ns at depth {}", 2 * depth);
}
