//! Live runs of workloads against real targets: every scheduler with --verify on a file and on
//! a loop device (io_uring and the thread pool), I/O priority under cfq, anticipation's idle
//! timer, and corruption that --verify must catch.

// A skipped test must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr)]

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use elevator_core::{Duration, Instant, IoPriority, Prng, ProcessId};
use elevator_live::run::{
    ContinueOnError, LiveRun, RunOptions, run_plan, run_workload, workload_target,
};
use elevator_live::{BackendChoice, EngineOptions, Fault, Target, TargetOptions};
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_workload::{IoId, Issuer, PhasePlan, Poll, WorkloadPlan, WorkloadSpec};

mod common;
use common::LoopDevice;

const MIB: u64 = 1 << 20;

/// Held by every test here: they measure real devices and timers, and running them at once
/// would make each the others' noise (a starved timer, a reader slowed by another test).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn scratch(dir: &tempfile::TempDir, size_bytes: u64) -> Target {
    let options =
        TargetOptions { write: true, create_bytes: Some(size_bytes), ..Default::default() };
    Target::open(&dir.path().join("scratch"), &options).expect("a scratch file")
}

fn options(scheduler: &str, backend: BackendChoice, verify: bool) -> RunOptions {
    RunOptions {
        engine: EngineOptions {
            scheduler: SchedulerSpec::parse(scheduler).unwrap(),
            depth: 8,
            backend,
            ..EngineOptions::default()
        },
        verify,
        seed: 3,
        stop: None,
        continue_on_error: Default::default(),
    }
}

fn run(target: &Target, workload: &str, options: &RunOptions) -> LiveRun {
    let workload = WorkloadSpec::parse(workload).unwrap();
    run_workload(target, &workload, options, &mut |_| {}).expect("a live run")
}

/// Mixed reads and writes of 4–64 KiB over 4 MiB, two processes: reads often land on blocks
/// written moments before, and neighbours merge.
const MIXED: &str = "job:rw=randrw,bsrange=4k-64k,iodepth=8,numjobs=2,size=4m,io_size=6m";

/// Asserts `live` moved everything its workload asked for with --verify clean.
fn assert_clean(live: &LiveRun, what: &str) {
    let verify = live.verify.as_ref().expect("verify ran");
    assert_eq!(verify.mismatches, 0, "{what}: {:?}", verify.examples);
    assert!(verify.blocks_written > 0 && verify.blocks_checked > 0, "{what}: {verify:?}");
    assert_eq!(live.io_errors.0, 0, "{what}: {:?}", live.io_errors.1);
    assert!(!live.interrupted);
    let phase = &live.run.phases[0];
    assert_eq!(phase.bytes, 2 * 6 * MIB, "{what}: both jobs moved their io_size");
    assert_eq!(live.run.mode, elevator_report::Mode::Live);
}

// Proves every registered scheduler completes a mixed read/write workload on a file with
// --verify clean, through io_uring and through the thread pool: nothing lost, nothing
// reordered across an overlapping write, every block where it belongs.
#[test]
fn every_scheduler_verifies_clean_on_a_file() {
    let _alone = alone();
    for backend in [BackendChoice::IoUring, BackendChoice::Threads] {
        let dir = tempfile::tempdir().unwrap();
        let target = scratch(&dir, 8 * MIB);
        for kind in SchedulerKind::ALL {
            let live = run(&target, MIXED, &options(kind.name(), backend, true));
            assert_clean(&live, &format!("{} on a file via {backend:?}", kind.name()));
            assert_eq!(live.run.config["live.backend"], live.backend);
        }
    }
}

// Proves the same on a block device: a loop device over a file with direct I/O on, as the
// issue asks; blocks no write of the run touched are unknown there and go unchecked.
#[test]
fn every_scheduler_verifies_clean_on_a_loop_device() {
    let _alone = alone();
    let Some(device) = LoopDevice::attach("a loop device run", 16 * MIB, false, |_| {}) else {
        return;
    };
    let options_write = TargetOptions { write: true, ..TargetOptions::default() };
    let target = Target::open(device.path(), &options_write).expect("a blank loop device");
    assert_eq!(target.kind(), elevator_live::TargetKind::BlockDevice);
    for backend in [BackendChoice::IoUring, BackendChoice::Threads] {
        for kind in SchedulerKind::ALL {
            let live = run(&target, MIXED, &options(kind.name(), backend, true));
            assert_clean(&live, &format!("{} on {} via {backend:?}", kind.name(), device.name()));
        }
    }
}

// Proves --verify catches what a real fault looks like: a block changed behind the run's
// back (here, by an ordinary write to the scratch file between two runs) is reported with
// its offset, and blocks left alone pass.
#[test]
fn verify_reports_a_block_changed_behind_its_back() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let target = scratch(&dir, 4 * MIB);
    let writes = run(
        &target,
        "job:rw=write,bs=64k,size=4m",
        &options("deadline", BackendChoice::Auto, true),
    );
    assert_eq!(writes.verify.as_ref().unwrap().mismatches, 0);
    // Every bit of one byte in the block at 1 MiB + 512.
    let file = OpenOptions::new().read(true).write(true).open(dir.path().join("scratch")).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, MIB + 512 + 100).unwrap();
    file.write_all_at(&[!byte[0]], MIB + 512 + 100).unwrap();
    file.sync_all().unwrap();
    let reads =
        run(&target, "job:rw=read,bs=64k,size=4m", &options("deadline", BackendChoice::Auto, true));
    let verify = reads.verify.unwrap();
    assert_eq!(verify.mismatches, 1, "{:?}", verify.examples);
    assert_eq!(verify.examples[0].offset, MIB + 512);
    assert_eq!(verify.blocks_checked, 4 * MIB / 512);
}

/// An issuer under another process identity and priority: two workloads' issuers in one
/// phase must be different processes to the scheduler.
#[derive(Debug)]
struct As {
    inner: Box<dyn Issuer>,
    process: ProcessId,
    priority: IoPriority,
}

impl Issuer for As {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn priority(&self) -> IoPriority {
        self.priority
    }

    fn poll(&mut self, now: Instant) -> Poll {
        self.inner.poll(now)
    }

    fn complete(&mut self, now: Instant, io: IoId) {
        self.inner.complete(now, io);
    }
}

/// One phase of the first issuer of each `(workload, priority)`, as processes 1, 2, ...
fn processes(target: &Target, workloads: &[(&str, IoPriority)]) -> WorkloadPlan {
    let issuers = workloads
        .iter()
        .enumerate()
        .map(|(index, &(text, priority))| {
            let workload = WorkloadSpec::parse(text).unwrap();
            let prng = Prng::new(index as u64 + 1);
            let mut plan = workload.plan(&[workload_target(target)], &prng).unwrap();
            let inner = plan.phases.remove(0).issuers.remove(0);
            let process = ProcessId(index as u32 + 1);
            Box::new(As { inner, process, priority }) as Box<dyn Issuer>
        })
        .collect();
    WorkloadPlan {
        files: Vec::new(),
        phases: vec![PhasePlan { name: "together".into(), issuers, stonewall: false }],
    }
}

// Proves I/O priority works in user space: under cfq, with two readers that each keep the
// device saturated, the idle-class reader gets under 5 % of what the best-effort reader gets
// (cfq serves the idle class only when nothing else wants the disk).
#[test]
fn an_idle_class_reader_starves_under_cfq() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let target = scratch(&dir, 64 * MIB);
    let reader = "job:rw=randread,bs=4k,iodepth=16,runtime=2s,time_based=1";
    let plan = processes(&target, &[(reader, IoPriority::DEFAULT), (reader, IoPriority::idle())]);
    let options = options("cfq", BackendChoice::Auto, false);
    let live = run_plan(&target, plan, "best-effort vs idle", &[], &options, &mut |_| {}).unwrap();
    let phase = &live.run.phases[0];
    let (best_effort, idle) = (phase.issuers[0].bytes, phase.issuers[1].bytes);
    assert!(best_effort > 0);
    assert!(
        (idle as f64) < 0.05 * best_effort as f64,
        "idle {idle} bytes vs best-effort {best_effort} bytes"
    );
}

// Proves the anticipatory scheduler's idle timer really fires on the live engine: sequential
// readers that think 20 ms between reads, against a random reader that always has
// requests queued, is anticipated (antic_expire, 6 ms) while the scheduler holds the other's
// requests back, and the waits that the reader does not end are ended by the timer, no
// earlier than antic_expire.
#[test]
fn anticipation_waits_end_by_the_timer() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let target = scratch(&dir, 64 * MIB);
    let thinker = "job:rw=read,bs=4k,iodepth=1,thinktime=20ms,io_size=100k";
    let other = "job:rw=randread,bs=4k,iodepth=4,runtime=500ms,time_based=1";
    let each = IoPriority::DEFAULT;
    // Two thinkers: each new process is anticipated before the scheduler has learnt its
    // think time, so each gives at least one wait that only the timer ends.
    let plan = processes(&target, &[(thinker, each), (thinker, each), (other, each)]);
    let options = options("anticipatory", BackendChoice::Auto, false);
    let live = run_plan(&target, plan, "thinker vs random", &[], &options, &mut |_| {}).unwrap();
    let stats = &live.run.scheduler_stats;
    let timeouts = stats.counters["anticipation_timeouts"];
    assert!(timeouts > 0, "{:?}", stats.counters);
    assert!(live.run.device_stats.extra["timer_wakeups"] > 0);
    // antic_expire is 6 jiffies from a start rounded down to the jiffy: at least 5 ms.
    assert!(
        stats.idle_ns >= timeouts * 5_000_000,
        "{timeouts} timed-out waits in {} ns of idling: the timer fired early",
        stats.idle_ns
    );
}

// Proves a run ends at its runtime whatever its scheduler idles (issue 14): two sequential
// readers under schedulers told to idle 10 s for a process's next request (cfq and bfq
// slice_idle, anticipatory antic_expire; cfq's 2.6.18 cross-process back merges made it idle
// for a reader whose read sat in the other's queue) stop within a second of their 300 ms
// runtime: once every issuer has stopped submitting, nothing will end an idle window, and the
// run dispatches what is queued. Before, the cfq run took 10 s.
#[test]
fn a_run_ends_at_its_runtime_whatever_the_scheduler_idles() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let target = scratch(&dir, 64 * MIB);
    let workload = "job:rw=read,bs=4k,iodepth=1,numjobs=2,runtime=300ms,time_based=1";
    for scheduler in
        ["cfq:slice_idle=10000", "bfq:slice_idle=10000", "anticipatory:antic_expire=10000"]
    {
        let live = run(&target, workload, &options(scheduler, BackendChoice::Auto, false));
        let duration = Duration::from_nanos(live.run.phases[0].duration_ns);
        assert!(duration < Duration::from_secs(1), "{scheduler}: the run took {duration}");
        assert!(live.run.phases[0].ops > 0, "{scheduler}");
    }
}

/// `scheduler` on the thread pool or io_uring with `faults` injected and `continue_on_error`.
fn faulty(scheduler: &str, faults: &[&str], continue_on_error: &str) -> RunOptions {
    let mut options = options(scheduler, BackendChoice::Auto, false);
    options.engine.faults = faults.iter().map(|text| Fault::parse(text).unwrap()).collect();
    options.continue_on_error = ContinueOnError::parse(continue_on_error).unwrap();
    options
}

// Proves failed I/O is an error, never throughput (issue 14): with every 10th read failing
// with EIO and fio's continue_on_error=io, the run goes on to its end; the failures are
// counted per direction in the phase and the issuer (with the first one described), and the
// operations, bytes and latencies count only the reads that moved data: completed + failed =
// issued, bytes = completed × 4 KiB.
#[test]
fn failed_reads_are_errors_not_throughput() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let target = scratch(&dir, 16 * MIB);
    let workload = "job:rw=randread,bs=4k,iodepth=4,io_size=400k";
    let options = faulty("deadline", &["fail:op=read,every=10,errno=EIO"], "io");
    let live = run(&target, workload, &options);
    let phase = &live.run.phases[0];
    assert!(!live.run.partial);
    assert_eq!(phase.errors.read, 10, "{:?}", phase.errors);
    assert_eq!((phase.errors.write, phase.errors.other), (0, 0));
    assert!(phase.errors.first.as_deref().unwrap().contains("Input/output error"));
    assert_eq!(phase.ops + phase.errors.total(), 100, "every issued read is one or the other");
    assert_eq!(phase.bytes, phase.ops * 4096);
    assert_eq!(phase.issuers[0].errors.read, 10);
    assert_eq!(live.run.device_stats.extra["injected_failures"], 10);
    assert_eq!(live.io_errors.0, 10);
}

// Proves fio's default: without continue_on_error, the first failed I/O stops the run — it
// issues nothing more, lets what is in flight finish, and says it is partial and why.
#[test]
fn the_first_failed_io_stops_the_run_by_default() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let target = scratch(&dir, 16 * MIB);
    let workload = "job:rw=randread,bs=4k,iodepth=4,io_size=4m";
    let options = faulty("cfq", &["fail:op=read,after=20,count=1,errno=EIO"], "none");
    let live = run(&target, workload, &options);
    assert!(live.interrupted && live.run.partial);
    let reason = live.run.partial_reason.as_deref().unwrap();
    assert!(reason.starts_with("stopped at the first failed I/O: read of 4096 bytes"), "{reason}");
    let phase = &live.run.phases[0];
    assert_eq!(phase.errors.read, 1);
    // 20 reads went through before the fault, at most depth more were in flight.
    assert!((20..=24).contains(&phase.ops), "{} reads completed", phase.ops);
}

// Proves delay injection holds transfers back by the stated time: with every write delayed
// 20 ms, no write completes sooner than 20 ms after its submission, and reads are untouched.
#[test]
fn delayed_writes_take_at_least_the_delay() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let target = scratch(&dir, 16 * MIB);
    let plan = processes(
        &target,
        &[
            ("job:rw=write,bs=4k,iodepth=2,io_size=64k", IoPriority::DEFAULT),
            ("job:rw=read,bs=4k,iodepth=1,io_size=64k,offset=8m", IoPriority::DEFAULT),
        ],
    );
    let options = faulty("noop", &["delay:op=write,by=20ms"], "none");
    let live = run_plan(&target, plan, "delayed writes", &[], &options, &mut |_| {}).unwrap();
    let phase = &live.run.phases[0];
    assert!(phase.errors.is_empty());
    let writer = &phase.issuers[0];
    assert_eq!(writer.ops, 16);
    assert!(writer.latency_ns.p50 >= 20_000_000, "write p50 {} ns", writer.latency_ns.p50);
    // One delay per write transfer: adjacent writes may have merged into one.
    let delayed = live.run.device_stats.extra["injected_delays"];
    assert!((1..=16).contains(&delayed), "{delayed} transfers delayed");
    assert!(phase.issuers[1].latency_ns.max < 20_000_000, "reads were not delayed");
}

// Proves --verify never passes by checking nothing (issue 14): a workload that only writes is
// read back after the run, as fio's verify phase does, so every block it wrote is checked
// against its last write's stamp.
#[test]
fn a_write_only_verified_run_reads_back_what_it_wrote() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let target = scratch(&dir, 16 * MIB);
    let live = run(
        &target,
        "job:rw=randwrite,bs=4k,iodepth=8,io_size=1m",
        &options("deadline", BackendChoice::Auto, true),
    );
    let verify = live.verify.expect("verify ran");
    assert_eq!(verify.mismatches, 0, "{:?}", verify.examples);
    assert!(verify.blocks_written >= 2048, "{verify:?}");
    // Random 4 KiB writes may land on one block twice: the distinct blocks are all checked.
    assert!(verify.blocks_checked > 0 && verify.blocks_checked <= verify.blocks_written);
    assert!(verify.blocks_checked >= 1500, "{verify:?}");
}
