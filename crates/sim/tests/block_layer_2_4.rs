//! The 2.4.21 block layer end to end on a 2.4 host (linux-2.4-elevator.md §4.2, §5, §6.1,
//! §6.2, §6.6): the pool sized from memory, megaraid2's limits, 4 KiB buffer heads merged
//! into requests that stop at the driver's 64 KiB, and RHEL 3's direct-I/O super bhs. Run
//! under the one elevator each kernel has: `elevator_linus` on 2.4, noop on 2.6.

use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, HostSpec, QueueSettings, SimConfig, run};
use elevator_workload::WorkloadSpec;

fn config(device: &str, host: &str) -> SimConfig {
    let mut config = SimConfig::new(1, DeviceSpec::parse(device).unwrap());
    config.host = HostSpec::parse(host).unwrap();
    config.check_invariants = true;
    config
}

/// 2.4 has one elevator; a 2.6 host runs noop, which adds nothing of its own.
fn scheduler_for(config: &SimConfig) -> SchedulerSpec {
    let name = if config.host.kernel().base() == elevator_core::KernelBase::V2_4_21 {
        "elevator_linus"
    } else {
        "noop"
    };
    SchedulerSpec::parse(name).unwrap()
}

fn simulate(config: &SimConfig, workload: &str) -> Run {
    let scheduler = scheduler_for(config);
    let workload = WorkloadSpec::parse(workload).unwrap();
    run(config, &scheduler, &workload).unwrap_or_else(|error| panic!("{workload}: {error}"))
}

fn setting(run: &Run, key: &str) -> String {
    run.config.get(key).unwrap_or_else(|| panic!("no {key} in {:?}", run.config.keys())).clone()
}

const TINY_READ: &str = "job:rw=read,bs=4k,size=64k,direct=1";

// Proves §5 and §6.2 reach the queues: a RHEL 3 host of 4 GiB gets 512 requests a direction,
// one of 256 MiB 256, vanilla 2.4.21 64; megaraid2 takes 63 commands a LUN, and the
// elevator's own limit is sd's 512 KiB (the driver's 64 KiB is separate); a 2.6 host keeps
// its 128 and megaraid_mbox's 64 and 64 KiB.
#[test]
fn a_2_4_host_sizes_its_queues() {
    let cases = [
        ("host:kernel=rhel3,ram=4g", ("512", "63", "512")),
        ("host:kernel=rhel3,ram=256m,reserve=64m", ("256", "63", "512")),
        ("host:kernel=2.4.21,ram=4g", ("64", "63", "512")),
        ("host:kernel=rhel4,ram=4g", ("128", "64", "64")),
    ];
    for (host, (nr_requests, depth, max_kb)) in cases {
        let report = simulate(&config("megaraid-8", host), TINY_READ);
        let got = (
            setting(&report, "queue.sda.nr_requests"),
            setting(&report, "queue.sda.depth"),
            setting(&report, "queue.sda.max_sectors_kb"),
        );
        assert_eq!(got, (nr_requests.to_owned(), depth.to_owned(), max_kb.to_owned()), "{host}");
    }
}

// Proves a 2.4 host refuses an nr_requests it cannot have, naming the key (§5: not tunable).
#[test]
fn nr_requests_is_not_tunable_on_2_4() {
    let mut config = config("megaraid-8", "host:kernel=rhel3");
    config.queue = QueueSettings { nr_requests: 64, ..QueueSettings::default() };
    let scheduler = scheduler_for(&config);
    let workload = WorkloadSpec::parse(TINY_READ).unwrap();
    let error = run(&config, &scheduler, &workload).unwrap_err().to_string();
    assert!(error.contains("nr_requests"), "{error}");
}

// Proves §6.1 with §3.1 and §6.6 on a MegaRAID LUN: 64 KiB O_DIRECT writes reach the queue as
// 4 KiB bhs under vanilla 2.4.21, which merge into one 128-sector request each (the driver's
// limit); under RHEL 3 (27.EL) as two 32 KiB super bhs, neither merged into the other, so two
// requests each. A 2.6 host sends each write as one bio, one request.
#[test]
fn direct_writes_become_bhs_and_super_bhs() {
    let workload = "job:rw=write,bs=64k,size=4m,direct=1";
    let requests =
        |host: &str| simulate(&config("megaraid-8", host), workload).device_stats.requests;
    let writes = 4 * 1024 / 64;
    assert_eq!(requests("host:kernel=2.4.21"), writes, "16 bhs make one request");
    assert_eq!(requests("host:kernel=rhel3"), 2 * writes, "two 32 KiB super bhs");
    assert_eq!(requests("host:kernel=rhel4"), writes);
}

// Proves a report names the host's release canonically (`uname -r`), however the spec wrote
// it, so tables and JSON say `2.4.21-27.EL` for `kernel=rhel3`.
#[test]
fn reports_name_the_release_canonically() {
    let report = simulate(&config("megaraid-8", "host:kernel=rhel3"), TINY_READ);
    assert_eq!(setting(&report, "host.kernel"), "2.4.21-27.EL");
}
