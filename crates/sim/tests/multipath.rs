//! dm-multipath in front of a SAN LUN: which paths carry the data, and that each path is a
//! queue of its own (`host-mechanisms.md` §5).

use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, SimConfig, run};
use elevator_workload::WorkloadSpec;

/// One LUN of RAM members: far faster than a 4GFC path, so the links are what limit it.
const FAST_LUN: &str = "san:luns=1,link=2x4gfc,raid=0,members=4,member=ram,cache=0";

fn simulate(device: &str, scheduler: &str, workload: &str) -> Run {
    let config = SimConfig {
        check_invariants: true,
        ..SimConfig::new(1, DeviceSpec::parse(device).unwrap())
    };
    let scheduler = SchedulerSpec::parse(scheduler).unwrap();
    run(&config, &scheduler, &WorkloadSpec::parse(workload).unwrap()).unwrap()
}

fn path_bytes(run: &Run) -> (u64, u64) {
    let extra = &run.device_stats.extra;
    (extra["link_path0_bytes"], extra["link_path1_bytes"])
}

fn megabytes_per_s(run: &Run) -> f64 {
    run.phases[0].throughput_bytes_per_s / 1e6
}

// Proves failover sends everything down one path, whose queue has the HBA's depth, and that
// the topology description says so.
#[test]
fn failover_carries_everything_on_one_path() {
    let run = simulate(
        &format!("{FAST_LUN},multipath=failover"),
        "deadline",
        "job:rw=write,bs=64k,direct=1,iodepth=8,size=16m",
    );
    assert_eq!(path_bytes(&run), (16 << 20, 0));
    assert_eq!(run.config["queue.sda.path0.depth"], "32");
    assert_eq!(run.config["queue.sda.path1.depth"], "32");
    assert!(run.config["device.model.0"].contains("dm-multipath failover over 2 paths"));
}

// Proves multibus takes rr_min_io bios down a path, then the next: small turns split the data
// evenly, and fewer bios than one turn stay on the first path.
#[test]
fn multibus_switches_path_every_rr_min_io_bios() {
    let device = format!("{FAST_LUN},multipath=multibus,rr_min_io=8");
    let run = simulate(&device, "noop", "job:rw=read,bs=4k,direct=1,iodepth=4,size=4m");
    assert_eq!(path_bytes(&run), (2 << 20, 2 << 20));
    let device = format!("{FAST_LUN},multipath=multibus");
    let run = simulate(&device, "noop", "job:rw=read,bs=512k,direct=1,iodepth=4,size=64m");
    assert_eq!(path_bytes(&run), (64 << 20, 0), "128 bios are one turn of rr_min_io=1000");
}

// Proves the links cap the LUN: failover gets one 4GFC path's worth, multibus with short
// turns both at once.
#[test]
fn one_path_is_one_link_and_short_turns_use_both() {
    let workload = "job:rw=read,bs=512k,direct=1,iodepth=32,size=256m";
    let one =
        megabytes_per_s(&simulate(&format!("{FAST_LUN},multipath=failover"), "noop", workload));
    let both = megabytes_per_s(&simulate(
        &format!("{FAST_LUN},multipath=multibus,rr_min_io=1"),
        "noop",
        workload,
    ));
    // 4.25 Gbaud / 10 × 2048 / 2108 ≈ 412.9 MB/s a direction.
    assert!(one <= 413.0 && one > 380.0, "failover: {one} MB/s");
    assert!(both > 1.5 * one, "multibus {both} MB/s against failover {one} MB/s");
}

// Proves each path has its own scheduler instance: one process's reads over two paths make a
// cfq queue in each path's cfq.
#[test]
fn each_path_has_its_own_scheduler() {
    let workload = "job:rw=read,bs=4k,direct=1,size=1m";
    let created = |policy: &str| {
        let run = simulate(&format!("{FAST_LUN},multipath={policy},rr_min_io=1"), "cfq", workload);
        run.scheduler_stats.counters["sync_queues_created"]
    };
    assert_eq!(created("failover"), 1);
    assert_eq!(created("multibus"), 2);
}

// Proves group_by_prio keeps each LUN on the paths to its owning controller, so two busy LUNs
// use both links; and that paths the controller cannot take at once are refused.
#[test]
fn group_by_prio_puts_luns_on_their_controllers_paths() {
    let device = "san:luns=2,link=2x4gfc,raid=0,members=4,member=ram,cache=0,\
                  multipath=group_by_prio";
    let run = simulate(device, "noop", "job:rw=read,bs=64k,direct=1,filename=sdb,size=8m");
    assert_eq!(path_bytes(&run), (0, 8 << 20));
    let error = DeviceSpec::parse("san:link=4x4gfc,depth=64,path_depth=32").unwrap_err();
    assert!(error.to_string().contains("path_depth"), "{error}");
}

// Proves a multipath run is reproducible from its seed.
#[test]
fn multipath_runs_are_deterministic() {
    let device = format!("{FAST_LUN},multipath=multibus,rr_min_io=3");
    let workload = "job:rw=randrw,bs=4k,direct=1,iodepth=8,numjobs=2,size=2m";
    let first = serde_json::to_string(&simulate(&device, "anticipatory", workload)).unwrap();
    let second = serde_json::to_string(&simulate(&device, "anticipatory", workload)).unwrap();
    assert_eq!(first, second);
}
