//! The classic tools' system-call patterns as the simulated host carries them out
//! (workload-mechanisms.md §5): what reaches the disk while the tool runs, and what after.

use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, HostSpec, SimConfig, run};
use elevator_workload::WorkloadSpec;

fn simulate(workload: &str) -> Run {
    let mut config = SimConfig::new(7, DeviceSpec::parse("hdd").unwrap());
    config.host = HostSpec::parse("host").unwrap();
    let scheduler = SchedulerSpec::parse("noop").unwrap();
    let workload = WorkloadSpec::parse(workload).unwrap();
    run(&config, &scheduler, &workload).unwrap_or_else(|error| panic!("{workload}: {error}"))
}

/// Bios the block layer saw during the tool's phase.
fn phase_bios(run: &Run) -> u64 {
    run.phases[0].queue_stats.as_ref().expect("a simulated phase has queue stats").bios
}

// Proves dd's buffered write ends with its data still dirty (§5.2): without conv=fdatasync
// neither dd's writes nor its close put 8 MiB (2048 ext3 blocks, one bio each) on the way to
// the disk before dd exits — write-back does it afterwards — while with fdatasync every block
// is submitted inside dd's time.
#[test]
fn dd_write_exits_with_its_data_dirty_unless_fdatasync() {
    let plain = simulate("dd:mode=write,bs=2m,count=4");
    assert!(phase_bios(&plain) < 2048, "dd waited for write-back: {:?}", plain.phases[0]);
    assert!(plain.queue_stats.bios >= 2048, "the data never reached the disk: {plain:?}");
    let synced = simulate("dd:mode=write,bs=2m,count=4,fdatasync=1");
    assert!(phase_bios(&synced) >= 2048, "fdatasync left data dirty: {:?}", synced.phases[0]);
    assert!(
        synced.phases[0].duration_ns > plain.phases[0].duration_ns,
        "the fsync is inside dd's time"
    );
}
