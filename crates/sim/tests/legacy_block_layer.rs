//! The legacy block layer's driver fetch model through the whole simulator (issue 28, row 7 of
//! specs/legacy-vs-kernel.md): the device's driver decides whether the request function
//! fetches before testing the depth (SCSI, libata) or only with the device free (IDE).

use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, HostSpec, SimConfig, run};
use elevator_workload::WorkloadSpec;

fn hw_tag(device: &str, depth: Option<u32>) -> u64 {
    let mut config = SimConfig::new(1, DeviceSpec::parse(device).unwrap());
    config.host = HostSpec::parse("host:kernel=rhel5.0").unwrap();
    config.queue.depth = depth;
    config.check_invariants = true;
    let scheduler = SchedulerSpec::parse("cfq").unwrap();
    let workload =
        WorkloadSpec::parse("job:rw=randread,bs=4k,iodepth=8,numjobs=4,size=16m,runtime=1s")
            .unwrap();
    let result = run(&config, &scheduler, &workload).unwrap();
    result.scheduler_stats.counters.get("hw_tag").copied().unwrap_or(0)
}

// Proves the runner takes the fetch model from the driver: behind aic79xx, which RHEL 5
// builds with 4 commands per device, cfq sees a fifth request activated whenever four are at
// the disk (`scsi_request_fn` fetches before `scsi_dev_queue_ready`) and marks the device as
// queueing (`hw_tag`, more than 4 in the driver); with the depth lowered to 3 it never can
// (3 + 1 = 4 is not more than 4).
#[test]
fn scsi_depth_4_sets_cfqs_hw_tag() {
    assert_eq!(hw_tag("sas-15k-2008:driver=aic79xx", None), 1);
    assert_eq!(hw_tag("sas-15k-2008:driver=aic79xx", Some(3)), 0);
}
