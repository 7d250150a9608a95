//! Calibration through the whole pipeline (issuer → block queue → scheduler → device): the
//! numbers a topology's own parameters imply.

use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, SimConfig, run};
use elevator_workload::WorkloadSpec;

fn simulate(device: &str, scheduler: &str, workload: &str) -> elevator_report::Run {
    let config = SimConfig::new(1, DeviceSpec::parse(device).unwrap());
    let scheduler = SchedulerSpec::parse(scheduler).unwrap();
    let workload = WorkloadSpec::parse(workload).unwrap();
    run(&config, &scheduler, &workload).unwrap()
}

// Proves striping scales and the link caps it: RAID 0 over N members of 100 MB/s each reads
// sequentially at about N x 100 MB/s, until the 4 Gb/s FC path is the limit: 4.25 Gbaud / 10
// (8b/10b) x 2048 / 2108 (framing) ≈ 412.9 MB/s (`host-mechanisms.md` §5).
#[test]
fn raid0_scales_sequential_reads_until_the_link_caps_them() {
    let member = "member=ram/bandwidth=100000000/latency=100us";
    for (members, expected_mb_per_s) in
        [(1u32, 100.0), (2, 200.0), (3, 300.0), (6, 412.9), (8, 412.9)]
    {
        let device =
            format!("san:luns=1,link=1x4gfc,raid=0,members={members},{member},cache=0,stripe=64k");
        let run = simulate(&device, "noop", "job:rw=read,bs=512k,iodepth=32,size=256m");
        let measured = run.phases[0].throughput_bytes_per_s / 1e6;
        let error = measured / expected_mb_per_s - 1.0;
        assert!(
            error.abs() < 0.05,
            "{members} members: {measured:.1} MB/s, expected {expected_mb_per_s}"
        );
    }
}

// Proves LUNs share their link: two LUNs read at once get the link's bandwidth between them.
#[test]
fn luns_share_their_link() {
    let device = "san:luns=2,link=1xgige,raid=0,members=4,member=ram/bandwidth=100000000,cache=0";
    let run = simulate(device, "noop", "job:rw=read,bs=512k,iodepth=16,size=64m,filename=sda:sdb");
    let measured = run.phases[0].throughput_bytes_per_s / 1e6;
    assert!((measured / 118.0 - 1.0).abs() < 0.05, "{measured:.1} MB/s over one gigabit link");
}

// Proves what a scheduler can do for a disk that takes one command at a time: with 4 KiB random
// reads over the whole 2005 desktop disk from four processes keeping 32 requests queued,
// deadline's one-way sector sweep moves the head far less than noop's arrival order and the
// disk completes more reads. Measured (seed 1): noop 79.5 IOPS and 3.3e11 sectors of head
// movement, deadline 146.9 IOPS and 3.3e10.
#[test]
fn deadline_sorts_a_random_stream_into_shorter_seeks_than_noop() {
    let workload = "job:rw=randread,bs=4k,iodepth=8,numjobs=4,io_size=1m";
    let noop = simulate("desktop-7200-2005", "noop", workload);
    let deadline = simulate("desktop-7200-2005", "deadline", workload);
    let distance = |run: &elevator_report::Run| run.device_stats.seek_distance_sectors as f64;
    assert!(
        distance(&deadline) < 0.5 * distance(&noop),
        "deadline {} vs noop {} sectors",
        distance(&deadline),
        distance(&noop)
    );
    assert!(deadline.phases[0].iops > 1.5 * noop.phases[0].iops);
    assert_eq!(deadline.phases[0].ops, noop.phases[0].ops);
}
