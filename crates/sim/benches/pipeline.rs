//! Simulated requests per second, whole pipeline, one thread: workload issuers, block queue,
//! scheduler, device model and report, for 4 KiB random reads.
//!
//! * `deadline/hdd` — the 2005 desktop disk, depth 1 (the mechanical model is the cost);
//! * `noop/ram` — a RAM disk at depth 32 (the block layer and engine are the cost);
//! * `none/nvme-4-cores`, `mq-deadline/nvme-4-cores` — the blk-mq host with its CPUs
//!   modelled (issue 18): four jobs on four cores, every I/O's path steps, interrupts and (for
//!   mq-deadline) lock acquisitions as work items, in front of the flash model (channels,
//!   dies, host interface: about a third of the cost);
//! * `none/ram-4-cores`, `mq-deadline/ram-4-cores` — the same host in front of a RAM disk with
//!   four hardware queues, so the host model's own cost shows.
//!
//! Run with `cargo bench -p elevator-sim --bench pipeline`; criterion prints elements/s.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, HostSpec, SimConfig, run};
use elevator_workload::WorkloadSpec;

fn pipeline(c: &mut Criterion) {
    let mut group = c.benchmark_group("pipeline");
    group.sample_size(10);
    let nvme_jobs = "job:rw=randread,bs=4k,iodepth=32,direct=1,numjobs=4,size=64m";
    for (name, device, host, scheduler, workload, requests) in [
        (
            "deadline/hdd",
            "hdd",
            "host",
            "deadline",
            "job:rw=randread,bs=4k,iodepth=1,size=400m",
            102_400u64,
        ),
        ("noop/ram", "ram", "host", "noop", "job:rw=randread,bs=4k,iodepth=32,size=1g", 262_144),
        ("none/nvme-4-cores", "nvme-gen4-consumer", "host:cpus=4", "none", nvme_jobs, 65_536),
        ("none/ram-4-cores", "ram:queues=4", "host:cpus=4", "none", nvme_jobs, 65_536),
        (
            "mq-deadline/ram-4-cores",
            "ram:queues=4",
            "host:cpus=4",
            "mq-deadline",
            nvme_jobs,
            65_536,
        ),
        (
            "mq-deadline/nvme-4-cores",
            "nvme-gen4-consumer",
            "host:cpus=4",
            "mq-deadline",
            nvme_jobs,
            65_536,
        ),
    ] {
        let mut config = SimConfig::new(1, DeviceSpec::parse(device).unwrap());
        config.host = HostSpec::parse(host).unwrap();
        let scheduler = SchedulerSpec::parse(scheduler).unwrap();
        let workload = WorkloadSpec::parse(workload).unwrap();
        group.throughput(Throughput::Elements(requests));
        group.bench_function(name, |b| {
            b.iter(|| {
                let report = run(&config, &scheduler, &workload).unwrap();
                assert_eq!(report.phases[0].ops, requests);
                report
            })
        });
    }
    group.finish();
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
