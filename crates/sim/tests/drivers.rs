//! Drivers end to end: each preset's queue gets its driver's depth and request limit under the
//! host's kernel (host-mechanisms.md §2.3), explicit queue settings override them, a device
//! that takes one command leaves the rest in the scheduler (§2.5), and adapters whose limit
//! binds share it across their devices (IDE channels, megaraid_mbox).

use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::device::hdd::Hdd;
use elevator_sim::{DeviceSpec, HostSpec, QueueSettings, SimConfig, run};
use elevator_workload::WorkloadSpec;

fn config(device: &str, host: &str) -> SimConfig {
    let mut config = SimConfig::new(1, DeviceSpec::parse(device).unwrap());
    config.host = HostSpec::parse(host).unwrap();
    config.check_invariants = true;
    config
}

fn simulate(config: &SimConfig, scheduler: &str, workload: &str) -> Run {
    let scheduler = SchedulerSpec::parse(scheduler).unwrap();
    let workload = WorkloadSpec::parse(workload).unwrap();
    run(config, &scheduler, &workload).unwrap_or_else(|error| panic!("{workload}: {error}"))
}

/// The queue settings in force for queue `name`, as the report gives them: (depth,
/// max_sectors_kb).
fn queue_settings(run: &Run, name: &str) -> (String, String) {
    let key = |what: &str| {
        run.config
            .get(&format!("queue.{name}.{what}"))
            .unwrap_or_else(|| panic!("no queue.{name}.{what} in {:?}", run.config.keys()))
            .clone()
    };
    (key("depth"), key("max_sectors_kb"))
}

const TINY_READ: &str = "job:rw=read,bs=4k,size=64k";

// Proves each study preset's queue takes its driver's per-device depth and request limit under
// both kernels: IDE LBA48 1 MiB under 2.6.9 and 512 KiB under 2.6.18, depth 1; megaraid_mbox
// 64 KiB and 64 per logical drive; mptspi 160 KiB (40 segments) with 31 commands under 2.6.9
// (and 64 under 2.6.18, capped by the disk's 32 tags); qla2xxx 32 per path and 512 KiB; a
// generic device keeps its own depth and 512 KiB.
#[test]
fn each_preset_queue_takes_its_drivers_limits() {
    let old = "host:kernel=2.6.9";
    let new = "host:kernel=2.6.18-8.el5";
    let cases: &[(&str, &str, &str, (&str, &str))] = &[
        ("jbod", old, "sda", ("1", "1024")),
        ("jbod", new, "sdd", ("1", "512")),
        ("megaraid-8", old, "sdh", ("64", "64")),
        ("megaraid-8", new, "sda", ("64", "64")),
        ("scsi-15k-2005", old, "sda", ("31", "160")),
        // mptspi allows 64 under 2.6.18; the disk takes 32.
        ("scsi-15k-2005", new, "sda", ("32", "160")),
        ("san", new, "sda.path0", ("32", "512")),
        ("iscsi-pool", new, "sda", ("32", "512")),
        ("ram", new, "sda", ("128", "512")),
        ("hdd:depth=8", old, "sda", ("8", "512")),
    ];
    for &(device, host, queue, (depth, max_kb)) in cases {
        let report = simulate(&config(device, host), "noop", TINY_READ);
        assert_eq!(
            queue_settings(&report, queue),
            (depth.to_owned(), max_kb.to_owned()),
            "{device} on {host}"
        );
    }
}

// Proves an explicit max_sectors_kb and depth override the driver's, and that the request
// limit in force shapes the requests: 4 MiB of 1 MiB O_DIRECT reads take at least 4 MiB /
// limit requests, and no more than one per started limit-sized piece of each read.
#[test]
fn explicit_queue_settings_override_the_driver() {
    let workload = "job:rw=read,bs=1m,size=4m";
    let driver = config("scsi-15k-2005", "server-2006");
    let report = simulate(&driver, "noop", workload);
    assert_eq!(queue_settings(&report, "sda"), ("32".to_owned(), "160".to_owned()));
    // 1024 / 160: six full requests and one of 64 KiB per read.
    assert_eq!(report.device_stats.requests, 4 * 7, "160 KiB requests");
    let mut explicit = config("scsi-15k-2005", "server-2006");
    explicit.queue =
        QueueSettings { max_sectors_kb: Some(64), depth: Some(8), ..QueueSettings::default() };
    let report = simulate(&explicit, "noop", workload);
    assert_eq!(queue_settings(&report, "sda"), ("8".to_owned(), "64".to_owned()));
    assert_eq!(report.device_stats.requests, 4 * 16, "64 KiB requests");
}

// Proves a device that takes one command (IDE) holds at most one while ten writers keep many
// requests waiting: the scheduler has them to choose from, as it did on the real machines.
// The writers are O_DIRECT with eight random writes in flight each, so that what waits
// depends neither on how write-back forms its bios nor on merging.
#[test]
fn ide_holds_one_command_and_the_scheduler_the_rest() {
    let config = config("hitachi-hds722516vlat80:driver=ide-lba48", "host");
    let workload = "job:rw=randwrite,bs=4k,iodepth=8,numjobs=10,size=1g,io_size=2m";
    let report = simulate(&config, "deadline", workload);
    assert_eq!(queue_settings(&report, "sda").0, "1");
    let stats = &report.queue_stats;
    assert!(stats.device_queue_mean <= 1.0 + 1e-9, "device held {}", stats.device_queue_mean);
    assert!(stats.sched_queue_mean > 50.0, "scheduler held {}", stats.sched_queue_mean);
}

/// Mean commands at the devices of `device` under `workload` (summed over its queues).
fn device_queue_mean(device: &str, workload: &str) -> f64 {
    let report = simulate(&config(device, "host"), "noop", workload);
    report.queue_stats.device_queue_mean
}

// Proves an IDE channel takes one command for its master and slave together (one per
// hwgroup): two disks on one channel, each with reads waiting, never have more than one
// command out between them; the same disks on ata_piix, a port each, have two.
#[test]
fn an_ide_channel_takes_one_command_for_both_its_disks() {
    let workload = "job:rw=randread,bs=4k,iodepth=8,size=1g,io_size=4m,filename=sda:sdb";
    let channel = device_queue_mean("jbod:disks=2,driver=ide-lba48", workload);
    assert!(channel <= 1.0 + 1e-9, "one channel held {channel}");
    let ports = device_queue_mean("jbod:disks=2,driver=ata_piix", workload);
    assert!(ports > 1.5, "two ports held {ports}");
}

// Proves megaraid_mbox's 128 commands per adapter hold across its eight logical drives: with
// far more reads waiting than 8 x 64, the drives together never have more than 128 out; a
// generic driver (64 a drive, no adapter limit) lets them have more.
#[test]
fn megaraid_adapter_limit_holds_across_luns() {
    let workload = "job:rw=randread,bs=4k,iodepth=1024,size=16m,\
                    filename=sda:sdb:sdc:sdd:sde:sdf:sdg:sdh";
    let adapter = device_queue_mean("megaraid-8", workload);
    assert!(adapter <= 128.0 + 1e-9, "the adapter held {adapter}");
    let unshared = device_queue_mean("megaraid-8:driver=generic", workload);
    assert!(unshared > 160.0, "without the adapter limit the drives held {unshared}");
}

fn rates_description(name: &str) -> String {
    DeviceSpec::parse(name).unwrap().build().unwrap().describe()
}

const HDPARM_DISKS: [&str; 4] =
    ["maxtor-6y160p0", "seagate-st3160021a", "wd-wd1600jb", "hitachi-hds722516vlat80"];

// Proves the hdparm desktop's four drives are distinct 160 GB models that each parse, and
// that the jbod preset puts them in order on hda..hdd (sda..sdd in the topology) behind
// ide-disk.
#[test]
fn the_hdparm_disks_are_four_distinct_drives() {
    let mut rates = Vec::new();
    for name in HDPARM_DISKS {
        let spec = DeviceSpec::parse(name).unwrap();
        let device = spec.build().unwrap();
        let gigabytes = device.capacity_sectors() as f64 * 512.0 / 1e9;
        assert!((gigabytes / 160.0 - 1.0).abs() < 0.01, "{name}: {gigabytes} GB");
        assert_eq!(device.queue_depth(), 1, "{name}: PATA has no command queuing");
        let rate = Hdd::from_params(spec.params()).unwrap().sustained_read_bytes_per_s();
        assert!((50e6..65e6).contains(&rate), "{name}: {rate}");
        rates.push((name, rate, spec.resolved()));
    }
    for (index, (name, rate, keys)) in rates.iter().enumerate() {
        for (other, other_rate, other_keys) in &rates[index + 1..] {
            assert_ne!(keys, other_keys, "{name} and {other}");
            assert_ne!(rate, other_rate, "{name} and {other}");
        }
    }
    let jbod = DeviceSpec::parse("jbod").unwrap();
    assert_eq!(jbod.driver().name(), "ide-lba48");
    let topology = jbod.topology().unwrap();
    let names: Vec<&str> = topology.devices.iter().map(|device| device.name.as_str()).collect();
    assert_eq!(names, ["sda", "sdb", "sdc", "sdd"]);
    for (device, name) in topology.devices.iter().zip(HDPARM_DISKS) {
        let alone = DeviceSpec::parse(name).unwrap().build().unwrap();
        assert_eq!(device.model.describe(), alone.describe(), "{name}");
    }
    // A list must name every disk or one for all; a longer one gives the first disks.
    let two = DeviceSpec::parse("jbod:disks=2").unwrap().topology().unwrap();
    assert_eq!(two.devices[1].model.describe(), rates_description(HDPARM_DISKS[1]));
    let error = DeviceSpec::parse("jbod:disks=3,disk=ide-7200-2004+wd-wd1600jb").unwrap_err();
    assert!(error.to_string().contains("disk"), "{error}");
}
