//! The simulator gives blk-mq schedulers blk-mq's block layer (issue 25,
//! specs/modern-vs-kernel.md rows 1, 11): checked end to end through the runner.

use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, HostSpec, SimConfig, run};
use elevator_workload::WorkloadSpec;

fn simulate(host: &str, scheduler: &str, workload: &str) -> Run {
    let mut config = SimConfig::new(5, DeviceSpec::parse("nvme-gen4-consumer").unwrap());
    config.host = HostSpec::parse(host).unwrap();
    let scheduler = SchedulerSpec::parse(scheduler).unwrap();
    let workload = WorkloadSpec::parse(workload).unwrap();
    run(&config, &scheduler, &workload).unwrap_or_else(|error| panic!("{workload}: {error}"))
}

/// Operations each of a real-time reader at iodepth 1 and a best-effort reader at iodepth 16
/// completed in 200 ms under `scheduler` on `host`: (real-time, best-effort).
fn rt_and_be_ops(host: &str, scheduler: &str) -> (u64, u64) {
    let dir = std::env::temp_dir()
        .join(format!("elevator-blkmq-queue-{}-{scheduler}-{host}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rt-be.fio");
    std::fs::write(
        &file,
        "[global]\nioengine=io_uring\ndirect=1\nbs=4k\nruntime=200ms\ntime_based=1\n\
         filename=sda\nrw=randread\n\n[rt]\nprioclass=1\nprio=0\niodepth=1\n\n\
         [be]\niodepth=16\n",
    )
    .unwrap();
    let run = simulate(host, scheduler, &format!("fio:{}", file.display()));
    std::fs::remove_dir_all(&dir).unwrap();
    let ops = |name: &str| {
        let issuers = &run.phases[0].issuers;
        let issuer = issuers.iter().find(|issuer| issuer.name == name);
        issuer.unwrap_or_else(|| panic!("no issuer {name}")).ops
    };
    (ops("rt/0"), ops("be/0"))
}

// Proves the runner puts mq-deadline on a blk-mq queue: beside a real-time reader that always
// has a read at the device or about to be submitted, a best-effort reader is served only when
// the one-jiffy delayed run finds the real-time level idle (row 1), far less than the
// real-time reader (about 1 in 15 here), where a queue that re-asked at every completion hands
// it the device between every two real-time reads (about 9 for every real-time read). `none` (no priorities) serves the deeper best-effort
// reader more. The tick rate comes from the host (`mq_hz`): at 1000 Hz the delayed run is
// 3 jiffies, a different rate of chances, so the figures differ.
#[test]
fn mq_deadline_serves_best_effort_beside_real_time_only_on_delayed_runs() {
    let (rt, be) = rt_and_be_ops("host:cpus=2", "mq-deadline");
    assert!(rt > 1000 && be * 4 < rt, "mq-deadline: RT {rt} BE {be}");
    let (rt_none, be_none) = rt_and_be_ops("host:cpus=2", "none");
    assert!(be_none > rt_none, "none: RT {rt_none} BE {be_none}");
    let (_, be_1000) = rt_and_be_ops("host:cpus=2,mq_hz=1000", "mq-deadline");
    assert_ne!(be_1000, be, "mq_hz=1000 gave the same BE figure as 250");
}
