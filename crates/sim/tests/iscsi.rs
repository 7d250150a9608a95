//! The iSCSI file server as two hosts (`crates/sim/src/iscsi`, workload-mechanisms.md §3, §6):
//! a ZFS initiator's readers, the links, and the target's worker threads in front of the
//! schedulers under test — through the whole simulator.

use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::{SimConfig, SimError, device::DeviceSpec};
use elevator_workload::WorkloadSpec;

/// A reader of a 64 MiB file (512 records), 1 MiB per call, as the study's reader.
const ONE_READER: &str = "seqread:readers=1,size=64m,bs=1m";

fn run_on(device: &str, scheduler: &str, workload: &str, seed: u64) -> Result<Run, SimError> {
    let config = SimConfig::new(seed, DeviceSpec::parse(device).unwrap());
    let scheduler = SchedulerSpec::parse(scheduler).unwrap();
    elevator_sim::run(&config, &scheduler, &WorkloadSpec::parse(workload).unwrap())
}

fn run(device: &str, scheduler: &str, workload: &str) -> Run {
    run_on(device, scheduler, workload, 1).unwrap_or_else(|error| panic!("{device}: {error}"))
}

fn counter(run: &Run, name: &str) -> u64 {
    run.phases[0].counters.get(name).copied().unwrap_or_else(|| panic!("no counter {name}"))
}

fn scheduler_counter(run: &Run, name: &str) -> u64 {
    run.scheduler_stats.counters.get(name).copied().unwrap_or(0)
}

// Proves the test: one sequential reader on the initiator reaches the target's
// scheduler as requests from several worker threads. cfq, which keeps a queue per process,
// creates one sync queue per thread it sees: many on the target's four disks, where the same
// reader on a local disk gives it one. Every byte read still arrives.
#[test]
fn one_reader_reaches_the_target_scheduler_as_several_threads() {
    let remote = run("iscsi-zfs", "cfq", ONE_READER);
    assert_eq!(remote.phases[0].bytes, 64 << 20);
    let threads = scheduler_counter(&remote, "sync_queues_created");
    assert!(threads >= 8, "cfq saw {threads} processes on the target's disks");
    assert!(counter(&remote, "iscsi_threads_per_lun_min") >= 2);
    let local = run("desktop-7200-2005", "cfq", ONE_READER);
    assert_eq!(scheduler_counter(&local, "sync_queues_created"), 1);
}

// Proves the spec's scheduler mechanics on the target: 2.6.18's cfq idles for each worker
// thread whose queue runs empty while the stream's next request sits in another thread's
// queue, so it is slower than deadline, which sorts all threads' requests together and never
// idles.
#[test]
fn cfq_idles_per_worker_thread_and_deadline_does_not() {
    let cfq = run("iscsi-zfs", "cfq", ONE_READER);
    let deadline = run("iscsi-zfs", "deadline", ONE_READER);
    assert!(scheduler_counter(&cfq, "idle_waits") > 0);
    assert!(cfq.scheduler_stats.idle_ns > 0);
    assert_eq!(deadline.scheduler_stats.idle_ns, 0);
    let rate = |run: &Run| run.phases[0].throughput_bytes_per_s;
    assert!(
        rate(&deadline) > rate(&cfq) * 1.1,
        "deadline {:.1} MB/s, cfq {:.1} MB/s",
        rate(&deadline) / 1e6,
        rate(&cfq) / 1e6
    );
}

// Proves the limits of §3.3: with zfs_vdev_max_pending 35 the initiator wants more reads
// per LUN than IET's 32-command window lets out, so commands wait for the window; with 10
// (ONNV after 2009-10-15) none does, and the ZFS queue never holds more than 10.
#[test]
fn the_session_window_binds_at_35_pending_but_not_at_10() {
    let at_35 = run("iscsi-zfs", "deadline", ONE_READER);
    assert_eq!(counter(&at_35, "iscsi_vdev_pending_peak"), 35);
    assert!(counter(&at_35, "iscsi_window_waits") > 0);
    let at_10 = run("iscsi-zfs:vdev_max_pending=10", "deadline", ONE_READER);
    assert_eq!(counter(&at_10, "iscsi_window_waits"), 0);
    assert_eq!(counter(&at_10, "iscsi_vdev_pending_peak"), 10);
    // Either way at most 8 threads work per target.
    assert_eq!(counter(&at_35, "iscsi_busy_threads_peak"), 8);
    // Without prefetch a 1 MiB read asks for its 8 records itself: nothing is prefetched.
    let no_prefetch = run("iscsi-zfs:prefetch=0", "deadline", ONE_READER);
    assert_eq!(counter(&no_prefetch, "iscsi_prefetch_reads"), 0);
    assert_eq!(counter(&no_prefetch, "iscsi_demand_reads"), 512);
}

// Proves fileio: the threads read through the target's page cache (blockio bypasses it), one
// page per call, with the LUN's one shared read-ahead state, and the disks see the reads of
// several threads.
#[test]
fn fileio_reads_go_through_the_target_page_cache() {
    let fileio = run("iscsi-zfs:iet_io=fileio", "cfq", ONE_READER);
    assert_eq!(fileio.phases[0].bytes, 64 << 20);
    assert!(scheduler_counter(&fileio, "sync_queues_created") >= 2);
    let host = |run: &Run, name: &str| run.host_stats.get(name).copied().unwrap_or(0);
    assert!(host(&fileio, "cache_miss_pages") > 0);
    assert!(host(&fileio, "read_ahead_pages") > 0);
    let blockio = run("iscsi-zfs", "cfq", ONE_READER);
    assert_eq!(host(&blockio, "cache_miss_pages") + host(&blockio, "read_ahead_pages"), 0);
}

// Proves determinism (the idle worker thread a command goes to is drawn from the seed) and
// that the drawing matters where the scheduler tells processes apart: under cfq another seed
// gives another run.
#[test]
fn runs_repeat_from_the_seed() {
    let first = run_on("iscsi-zfs", "cfq", ONE_READER, 5).unwrap();
    assert_eq!(first, run_on("iscsi-zfs", "cfq", ONE_READER, 5).unwrap());
    let other = run_on("iscsi-zfs", "cfq", ONE_READER, 6).unwrap();
    assert_ne!(first.phases[0].duration_ns, other.phases[0].duration_ns);
}

// Proves bad requests fail with messages that say what is accepted: the initiator reads only,
// and files must fit on the pool's mirrors.
#[test]
fn writes_and_oversized_files_are_refused_with_reasons() {
    let error = run_on("iscsi-zfs", "noop", "dd:mode=write,count=4", 1).unwrap_err().to_string();
    assert!(error.contains("ZFS initiator") && error.contains("accepted"), "{error}");
    let error =
        run_on("iscsi-zfs:member=ram/capacity=64m", "noop", "seqread:readers=1,size=512m,bs=1m", 1)
            .unwrap_err()
            .to_string();
    assert!(error.contains("does not fit") || error.contains("size"), "{error}");
}
