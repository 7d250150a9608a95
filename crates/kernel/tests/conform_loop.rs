//! `elevator conform`'s capture against the kernel's own schedulers on a loop device the test
//! creates and removes (as root; under CI=true a missing privilege or tool fails the test).

mod support;

use std::collections::BTreeMap;

use elevator_kernel::compare::{CompareOptions, KernelScheduler};
use elevator_kernel::conform::{self, ConformOptions, ConformRun};
use elevator_kernel::queue::{set_scheduler, tune};
use elevator_kernel::{RestoreGuard, Setting, Snapshot};
use elevator_live::passthrough::PassthroughOptions;
use elevator_live::{Target, TargetOptions};
use elevator_trace::sched_log::{self, BlockPoint, BlockRecord, SchedEvent};
use elevator_workload::WorkloadSpec;

use support::TestDisk;

/// The brief's workload: fio's io_uring engine, 4 KiB random reads and writes, 32 in
/// flight, for one second.
const JOB_FILE: &str = "\
[global]
ioengine=io_uring
direct=1
bs=4k
rw=randrw
iodepth=32
runtime=1s
time_based=1
size=32m

[randrw]
";

/// Runs `scheduler` on `disk` under the job file and returns the capture; the device is put
/// back by the guard before returning.
fn capture(disk: &TestDisk, scheduler: &str) -> ConformRun {
    capture_with(disk, scheduler, JOB_FILE)
}

/// [`capture`] under the job file `job_file`.
fn capture_with(disk: &TestDisk, scheduler: &str, job_file: &str) -> ConformRun {
    let sysfs = disk.sysfs().clone();
    let device = sysfs.device(&disk.name()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("randrw.fio");
    std::fs::write(&job, job_file).unwrap();
    let workload = WorkloadSpec::parse(&format!("fio:{}", job.display())).unwrap();
    let target =
        Target::open(disk.path(), &TargetOptions { write: true, ..Default::default() }).unwrap();
    let scheduler = KernelScheduler::parse(&device.name, scheduler).unwrap();
    let options = ConformOptions {
        compare: CompareOptions {
            schedulers: Vec::new(),
            seed: 1,
            passthrough: PassthroughOptions::default(),
        },
        workload_label: "randrw.fio".into(),
        buffer_size_kb: None,
    };
    let guard = RestoreGuard::new(&sysfs, &device).unwrap();
    let run = conform::capture_scheduler(
        &sysfs,
        &device,
        &target,
        &workload,
        &scheduler,
        &options,
        &guard,
        &mut |_| {},
    );
    guard.restore().unwrap();
    run.unwrap_or_else(|error| panic!("{error}"))
}

/// Every issue with data must be a request the scheduler held: inserted, grown by the bio
/// merges into it and by the requests merged into it. Returns the issues that are not.
fn issues_without_a_request(events: &[SchedEvent]) -> Vec<BlockRecord> {
    // Waiting requests by (first sector, sectors), counted.
    let mut waiting: BTreeMap<(u64, u32), u32> = BTreeMap::new();
    let take = |waiting: &mut BTreeMap<(u64, u32), u32>, key: (u64, u32)| {
        let Some(count) = waiting.get_mut(&key) else { return false };
        *count -= 1;
        if *count == 0 {
            waiting.remove(&key);
        }
        true
    };
    // The waiting request ending at `sector` or starting at `end`, grown by `sectors`.
    let grow = |waiting: &mut BTreeMap<(u64, u32), u32>, sector: u64, sectors: u32| {
        let end = sector + u64::from(sectors);
        let back = waiting.keys().find(|(start, n)| start + u64::from(*n) == sector).copied();
        if let Some(key) = back {
            take(waiting, key);
            *waiting.entry((key.0, key.1 + sectors)).or_default() += 1;
        } else if let Some(key) = waiting.keys().find(|(start, _)| *start == end).copied() {
            take(waiting, key);
            *waiting.entry((sector, key.1 + sectors)).or_default() += 1;
        }
        // Else the bio merged into a request still in the submitter's plug: its insert
        // carries the grown extent.
    };
    let mut unmatched = Vec::new();
    for event in events {
        let SchedEvent::Block(record) = event else { continue };
        let key = (record.sector, record.sectors);
        match record.point {
            BlockPoint::Insert | BlockPoint::Requeue => *waiting.entry(key).or_default() += 1,
            BlockPoint::BioBackMerge | BlockPoint::BioFrontMerge => {
                grow(&mut waiting, record.sector, record.sectors);
            }
            BlockPoint::Merge => {
                // The absorbed request leaves; the one it joined grows by it.
                take(&mut waiting, key);
                grow(&mut waiting, record.sector, record.sectors);
            }
            BlockPoint::Issue if record.sectors > 0 && !take(&mut waiting, key) => {
                unmatched.push(record.clone());
            }
            _ => {}
        }
    }
    unmatched
}

// Proves a capture of the kernel's mq-deadline under fio-style random reads and writes is
// complete and consistent: nothing lost, every issue completed, every issue a request the
// scheduler was given (inserted, or grown by merges), the header filled from the running kernel (HZ from its config, tunables read
// back), the file round-trips, and the loop device's scheduler and tunables are as before.
#[test]
fn mq_deadline_capture_is_complete_and_the_device_is_restored() {
    let Some(disk) = TestDisk::attach("mq_deadline_capture_is_complete", 64 << 20) else {
        return;
    };
    let sysfs = disk.sysfs().clone();
    let device = sysfs.device(&disk.name()).unwrap();
    // Start from something other than the defaults, so that restoring is visible.
    set_scheduler(&sysfs, &device, "mq-deadline").unwrap();
    tune(&sysfs, &device, &[Setting::parse("x", "fifo_batch=4").unwrap()]).unwrap();
    let before = Snapshot::take(&sysfs, &device).unwrap();

    let run = capture(&disk, "mq-deadline:read_expire=400");
    let capture = &run.capture;
    let header = &capture.header;
    assert_eq!(header.scheduler, "mq-deadline");
    // Re-attached: the tunable set before the run is back at its default, the asked one set.
    let tunables: BTreeMap<_, _> = header.tunables.iter().cloned().collect();
    assert_eq!(tunables.get("read_expire").map(String::as_str), Some("400"), "{tunables:?}");
    assert_eq!(tunables.get("fifo_batch").map(String::as_str), Some("16"), "{tunables:?}");
    assert!([100, 250, 300, 1000].contains(&header.hz), "HZ {}", header.hz);
    assert_eq!(
        header.kernel_release,
        std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap().trim()
    );
    assert!(header.nr_requests > 0 && header.queue_depth > 0 && header.cpus > 0, "{header:?}");
    assert_eq!(header.lost_events, 0);
    let counts = run.counts;
    assert!(counts.issues > 1000, "{counts:?}");
    // Requests with data pair up (flushes do not: an empty preflush write completes in place
    // of its flush request's issue).
    let (issued, completed, requeued) = conform::data_requests(&run.capture);
    assert_eq!(issued, completed + requeued, "{counts:?}");
    assert!(counts.inserts > 0, "{counts:?}");
    let unmatched = issues_without_a_request(&capture.events);
    assert!(
        unmatched.is_empty(),
        "{} issues match no request: {:?}",
        unmatched.len(),
        &unmatched[..unmatched.len().min(5)]
    );
    // Times run forward, from 0.
    let times: Vec<u64> = capture.events.iter().map(SchedEvent::time_ns).collect();
    assert_eq!(times.first(), Some(&0));
    assert!(times.windows(2).filter(|pair| pair[1] < pair[0]).count() < times.len() / 100);

    let text = sched_log::to_text(capture);
    assert_eq!(&sched_log::parse("capture", &text).unwrap(), capture);

    assert_eq!(Snapshot::take(&sysfs, &device).unwrap(), before, "left as found");
}

// Proves kyber's own events are captured for the device (its domain latency evaluations,
// filtered to the device like the block events) and the capture is complete.
#[test]
fn kyber_capture_has_its_own_events() {
    let Some(disk) = TestDisk::attach("kyber_capture_has_its_own_events", 64 << 20) else {
        return;
    };
    let sysfs = disk.sysfs().clone();
    let device = sysfs.device(&disk.name()).unwrap();
    let before = Snapshot::take(&sysfs, &device).unwrap();
    let run = capture(&disk, "kyber");
    assert_eq!(run.capture.header.scheduler, "kyber");
    let counts = run.counts;
    // Requests with data pair up (flushes do not: an empty preflush write completes in place
    // of its flush request's issue).
    let (issued, completed, requeued) = conform::data_requests(&run.capture);
    assert_eq!(issued, completed + requeued, "{counts:?}");
    let latency = run
        .capture
        .events
        .iter()
        .filter(|event| matches!(event, SchedEvent::KyberLatency { .. }))
        .count();
    assert!(latency > 0, "no kyber_latency events in {counts:?}");
    assert_eq!(Snapshot::take(&sysfs, &device).unwrap(), before, "left as found");
}

/// Two jobs at different I/O priorities, as `ionice -c1 -n2` and `ionice -c3` set them.
const CLASSES_JOB_FILE: &str = "\
[global]
ioengine=io_uring
direct=1
bs=4k
iodepth=8
runtime=300ms
time_based=1
size=16m

[realtime]
rw=randread
prioclass=1
prio=2

[idle]
rw=randwrite
prioclass=3
";

// Proves the I/O priority of each request is read from the kernel's events end to end: the
// issues of a real-time level 2 job and of an idle job carry exactly those priorities
// (the kernel prints `rt,0,2`: class, hint, level — the level is the last number).
#[test]
fn priorities_of_requests_come_from_the_events() {
    let Some(disk) = TestDisk::attach("priorities_of_requests_come_from_the_events", 64 << 20)
    else {
        return;
    };
    let run = capture_with(&disk, "mq-deadline", CLASSES_JOB_FILE);
    let mut by_priority: BTreeMap<String, u64> = BTreeMap::new();
    for event in &run.capture.events {
        if let SchedEvent::Block(record) = event
            && record.point == BlockPoint::Issue
            && record.sectors > 0
        {
            let priority = record.priority.map_or("none".into(), sched_log::priority_text);
            *by_priority.entry(priority).or_default() += 1;
        }
    }
    let classes: Vec<&str> = by_priority.keys().map(String::as_str).collect();
    assert_eq!(classes, ["idle/7", "rt/2"], "{by_priority:?}");
}
