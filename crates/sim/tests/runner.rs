//! The runner end to end: determinism, accounting, bounds and bad input.

use elevator_core::Duration;
use elevator_sched::SchedulerSpec;
use elevator_sim::{Bounds, DeviceSpec, QueueSettings, SimConfig, SimError, run};
use elevator_workload::WorkloadSpec;

fn config(device: &str, seed: u64) -> SimConfig {
    SimConfig { check_invariants: true, ..SimConfig::new(seed, DeviceSpec::parse(device).unwrap()) }
}

fn json(run: &elevator_report::Run) -> String {
    serde_json::to_string(run).unwrap()
}

// Proves a run is reproducible from its seed byte for byte, and that another seed changes the
// latencies but not the totals of a fixed-size workload.
#[test]
fn the_same_seed_gives_the_same_report() {
    let scheduler = SchedulerSpec::parse("deadline").unwrap();
    let workload = WorkloadSpec::parse("job:rw=randrw,bs=4k,iodepth=8,numjobs=2,size=2m").unwrap();
    let first = run(&config("ram", 1), &scheduler, &workload).unwrap();
    let second = run(&config("ram", 1), &scheduler, &workload).unwrap();
    assert_eq!(json(&first), json(&second));
    let other = run(&config("ram", 2), &scheduler, &workload).unwrap();
    assert_ne!(json(&first), json(&other));
    let (a, b) = (&first.phases[0], &other.phases[0]);
    assert_eq!((a.bytes, a.ops), (b.bytes, b.ops));
    assert_eq!(a.bytes, 2 * 2 * 1024 * 1024);
    assert_eq!(a.ops, 1024);
}

// Proves the report accounts for every operation per issuer and echoes the configuration.
#[test]
fn every_operation_is_accounted() {
    let scheduler = SchedulerSpec::parse("noop").unwrap();
    let workload = WorkloadSpec::parse("job:rw=read,bs=1m,numjobs=3,size=4m").unwrap();
    let report = run(&config("ram:latency=5us", 3), &scheduler, &workload).unwrap();
    let phase = &report.phases[0];
    assert_eq!(phase.name, "read");
    assert_eq!(phase.issuers.len(), 3);
    for issuer in &phase.issuers {
        assert_eq!(issuer.bytes, 4 << 20);
        assert_eq!(issuer.ops, 4);
    }
    // 1 MiB operations are split into 512 KiB requests by max_sectors_kb.
    assert_eq!(report.device_stats.requests, 24);
    assert_eq!(report.config["device.latency"], "5us");
    assert_eq!(report.config["workload.bs"], "1m");
    assert_eq!(report.config["queue.sda.max_sectors_kb"], "512");
    assert_eq!(report.scheduler, "noop");
}

// Proves bounds are errors that say which bound and when, not silent stops.
#[test]
fn bounds_are_errors() {
    let scheduler = SchedulerSpec::parse("noop").unwrap();
    let workload = WorkloadSpec::parse("job:rw=randread,size=64m").unwrap();
    let mut tight = config("ram", 1);
    tight.bounds =
        Bounds { max_events: 100, max_time: Duration::from_secs(60), ..Bounds::default() };
    let error = run(&tight, &scheduler, &workload).unwrap_err();
    assert!(matches!(error, SimError::Bound { what: "events", .. }), "{error}");
    let mut short = config("ram", 1);
    short.bounds =
        Bounds { max_events: u64::MAX, max_time: Duration::from_millis(1), ..Bounds::default() };
    let error = run(&short, &scheduler, &workload).unwrap_err();
    assert!(error.to_string().contains("simulated time"), "{error}");
}

// Proves a workload that does not fit the device is refused with the key to change.
#[test]
fn a_workload_too_big_for_the_device_is_refused() {
    let scheduler = SchedulerSpec::parse("noop").unwrap();
    let workload = WorkloadSpec::parse("job:size=1t").unwrap();
    let error = run(&config("ram:capacity=1g", 1), &scheduler, &workload).unwrap_err();
    assert!(error.to_string().contains("size:"), "{error}");
    let depth = SimConfig {
        queue: QueueSettings { depth: Some(1000), ..QueueSettings::default() },
        ..config("ram:depth=4", 1)
    };
    let workload = WorkloadSpec::parse("job").unwrap();
    assert!(run(&depth, &scheduler, &workload).unwrap_err().to_string().contains("depth"));
}

// Proves the time series' interval belongs to each run's configuration, not to the process:
// two runs in one process with 100 ms and 250 ms intervals each get intervals of their own
// length, covering the same simulated time; and an interval outside the accepted range is
// refused naming it rather than panicking.
#[test]
fn each_run_has_its_own_series_interval() {
    let scheduler = SchedulerSpec::parse("noop").unwrap();
    let workload = WorkloadSpec::parse(
        "job:rw=randread,bs=4k,iodepth=4,direct=1,runtime=1s,time_based=1,size=16m",
    )
    .unwrap();
    let interval_of = |ms: u64| {
        let config = SimConfig {
            series_interval: Some(elevator_core::Duration::from_millis(ms)),
            ..config("ram", 1)
        };
        let run = run(&config, &scheduler, &workload).unwrap();
        let series = run.phases[0].series.clone().expect("a series");
        assert_eq!(series.interval_ns, ms * 1_000_000);
        let line = &series.lines[0];
        line.intervals.iter().filter(|i| i.duration_ns == ms * 1_000_000).count()
    };
    assert_eq!(interval_of(100), 10);
    assert_eq!(interval_of(250), 4);
    let bad =
        SimConfig { series_interval: Some(elevator_core::Duration::ZERO), ..config("ram", 1) };
    let error = run(&bad, &scheduler, &workload).unwrap_err().to_string();
    assert!(error.contains("series_interval"), "{error}");
}
