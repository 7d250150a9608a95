//! bfq's burst detection on the blk-mq host (issue 18): fio jobs started together are a large
//! burst, not interactive applications — whole runs through `elevator_sim::run`.

use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, HostSpec, SimConfig, run};
use elevator_workload::WorkloadSpec;

fn simulate(host: &str, scheduler: &str, jobs: u32) -> Run {
    let mut config = SimConfig::new(1, DeviceSpec::parse("nvme-gen4-consumer").unwrap());
    config.host = HostSpec::parse(host).unwrap();
    let scheduler = SchedulerSpec::parse(scheduler).unwrap();
    let workload = format!("job:rw=randread,bs=4k,iodepth=32,direct=1,size=16m,numjobs={jobs}");
    let workload = WorkloadSpec::parse(&workload).unwrap();
    run(&config, &scheduler, &workload).unwrap_or_else(|error| panic!("{workload}: {error}"))
}

// Proves the issue-18 finding is fixed as the kernel would have it: eight 4 KiB random-read
// jobs at iodepth 32, one per core of eight, on the fast NVMe preset. Their eight sync queues
// are created together, so bfq marks them as a large burst (`bfq_add_to_burst`, threshold 8)
// and raises none of them past their first dispatch; seeky, unraised, equal-weight queues on a
// queueing device are never idled for (`bfq_better_to_idle`), so the default `slice_idle`
// gives what `slice_idle=0` gives. Before the fix every queue was raised, bfq idled about
// 0.6 s of the run for the one in service, and the default setting reached 48 K IOPS against
// 0.69 M. Since issue 25 the device's rotational flag reaches bfq: on this non-rotational,
// queueing device each queue created within 180 ms of the last, at its priority, is merged
// into it at once (early stable merging, `bfq_do_or_sched_stable_merge`), so the eight jobs
// share the first job's queue, which alone is raised.
#[test]
fn eight_jobs_started_together_are_not_idled_for_on_nvme() {
    let default = simulate("host:cpus=8", "bfq", 8);
    let no_idle = simulate("host:cpus=8", "bfq:slice_idle=0", 8);
    let counters = &default.scheduler_stats.counters;
    assert_eq!(counters["sync_queues_created"], 8);
    // Not a nanosecond of the device left idle with requests queued.
    assert_eq!(default.scheduler_stats.idle_ns, 0, "{counters:?}");
    assert_eq!(counters["wr_soft_rt_starts"], 0, "a burst's queue is never soft real-time");
    // Only the first queue was raised; the seven created after it were merged into it.
    assert_eq!(counters["wr_interactive_starts"], 1);
    let ratio = default.phases[0].iops / no_idle.phases[0].iops;
    assert!(ratio > 0.97, "default vs slice_idle=0 IOPS: {ratio}");
}
