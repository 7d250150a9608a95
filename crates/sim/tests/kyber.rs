//! kyber in the simulator: a write flood on a slow device, with and without kyber.

use elevator_core::{Instant, IoPriority, ProcessId};
use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, SimConfig, run_plan, targets};
use elevator_workload::{IoId, Issuer, PhasePlan, Poll, WorkloadPlan, WorkloadSpec};

/// An issuer of a planned job under another name and process, so that two jobs can share one
/// phase (each job numbers its clones from process 1).
#[derive(Debug)]
struct Renamed {
    inner: Box<dyn Issuer>,
    name: String,
    process: ProcessId,
}

impl Issuer for Renamed {
    fn name(&self) -> &str {
        &self.name
    }
    fn process(&self) -> ProcessId {
        self.process
    }
    fn priority(&self) -> IoPriority {
        self.inner.priority()
    }
    fn poll(&mut self, now: Instant) -> Poll {
        self.inner.poll(now)
    }
    fn complete(&mut self, now: Instant, io: IoId) {
        self.inner.complete(now, io);
    }
}

/// Runs the jobs side by side in one phase; issuer `i` of job `j` is named `j{j}/{i}`.
fn simulate(device: &str, scheduler: &str, jobs: &[&str]) -> Run {
    let config = SimConfig::new(1, DeviceSpec::parse(device).unwrap());
    let devices = targets(&config).unwrap();
    let prng = elevator_core::Prng::new(1);
    let mut issuers: Vec<Box<dyn Issuer>> = Vec::new();
    for (job, text) in jobs.iter().enumerate() {
        let plan = WorkloadSpec::parse(text).unwrap().plan(&devices, &prng.fork(text)).unwrap();
        for phase in plan.phases {
            for inner in phase.issuers {
                let process = ProcessId(100 * (job as u32 + 1) + inner.process().0);
                let name = format!("j{job}/{}", inner.process().0 - 1);
                issuers.push(Box::new(Renamed { inner, name, process }));
            }
        }
    }
    let phase = PhasePlan { name: "mixed".into(), issuers, stonewall: false };
    let plan = WorkloadPlan { files: Vec::new(), phases: vec![phase] };
    run_plan(&config, &SchedulerSpec::parse(scheduler).unwrap(), plan, "mixed", &[]).unwrap()
}

fn issuer<'a>(run: &'a Run, name: &str) -> &'a elevator_report::IssuerSummary {
    run.phases[0].issuers.iter().find(|issuer| issuer.name == name).unwrap()
}

fn counter(run: &Run, name: &str) -> u64 {
    run.scheduler_stats.counters[name]
}

fn ms(nanos: u64) -> f64 {
    nanos as f64 / 1e6
}

// Proves kyber's point: on a flash device with a deep command queue (128) and 900 us page
// programs, a random-write flood (4 KiB, 128 in flight) pushes 4 KiB random reads (4 in flight)
// far past kyber's 2 ms read target, because each read queues at its die behind programs. Kyber
// sees the reads' p90 device latency beyond target (congestion) while the writes' p99 stays
// within theirs, so it cuts the write domain's tokens (128 -> 96 -> 72 -> 54 -> 40), fewer
// writes sit in the device ahead of each read, and the read p99 falls. Kyber with a 1 s read
// target (never congested, depths untouched) reads like the FIFO baseline, so the gain is the
// depth cut, not kyber's read/write batching.
//
// Measured (seed 1, 3 s, on the blk-mq host's default 2 cores): read p99 6.65 ms with none
// (blk-mq without a scheduler, the baseline), 8.32 ms with kyber never congested, 4.82 ms
// with kyber. (Before the blk-mq host charged CPU: 7.21, 6.62 and 5.28 ms.)
#[test]
fn kyber_cuts_the_write_depth_when_a_write_flood_pushes_reads_past_their_target() {
    let device = "ssd:depth=128";
    let reader = "job:rw=randread,bs=4k,iodepth=4,runtime=3s,time_based=1";
    let writer = "job:rw=randwrite,bs=4k,iodepth=128,runtime=3s,time_based=1";
    let baseline = simulate(device, "none", &[reader, writer]);
    let kyber = simulate(device, "kyber", &[reader, writer]);
    let calm = simulate(device, "kyber:read_lat_nsec=1s", &[reader, writer]);
    let read_p99 = |run: &Run| issuer(run, "j0/0").latency_ns.p99;
    let (baseline_p99, kyber_p99, calm_p99) =
        (read_p99(&baseline), read_p99(&kyber), read_p99(&calm));
    let figures = format!(
        "read p99: baseline {:.2} ms, kyber {:.2} ms, kyber never congested {:.2} ms",
        ms(baseline_p99),
        ms(kyber_p99),
        ms(calm_p99)
    );
    // The premise: reads are far past their 2 ms target without kyber's throttling.
    assert!(baseline_p99 > 5_000_000, "{figures}");
    // Kyber judged the device congested and cut the write domain's tokens.
    assert!(counter(&kyber, "congested_windows") >= 1);
    assert!(counter(&kyber, "depth_decreases") >= 1);
    assert!(
        counter(&kyber, "write_depth_min") <= 64,
        "write depth only fell to {}",
        counter(&kyber, "write_depth_min")
    );
    assert_eq!(counter(&kyber, "read_depth_min"), 256, "reads, beyond target, are never cut");
    // Read p99 is at least 25 % lower than none's (measured 28 %)...
    assert!(kyber_p99 * 4 < baseline_p99 * 3, "{figures}");
    // ...and the depth cut is what did it: kyber without congestion (depths untouched) gains
    // nothing over the baseline (before the blk-mq host its read-first dispatch gained 8 %;
    // with the CPU path's timing the calm run is 25 % worse on this seed), while the same
    // kyber with its cut reads at least 25 % faster than the calm one.
    assert_eq!(counter(&calm, "write_depth_min"), 128);
    assert!(kyber_p99 * 4 < calm_p99 * 3, "{figures}");
    assert!(
        baseline_p99.saturating_sub(kyber_p99) > 2 * baseline_p99.saturating_sub(calm_p99),
        "{figures}"
    );
    // Writes keep going: at most 10 % fewer complete.
    let write_ops = |run: &Run| issuer(run, "j1/0").ops;
    assert!(write_ops(&kyber) * 10 > write_ops(&baseline) * 9);
}

// Proves a kyber run is reproducible: the lazy timer depends only on simulated time.
#[test]
fn kyber_runs_are_deterministic() {
    let jobs = [
        "job:rw=randread,bs=4k,iodepth=4,runtime=500ms,time_based=1",
        "job:rw=randwrite,bs=4k,iodepth=128,runtime=500ms,time_based=1",
    ];
    let first = simulate("ssd:depth=128", "kyber", &jobs);
    let second = simulate("ssd:depth=128", "kyber", &jobs);
    assert_eq!(serde_json::to_string(&first).unwrap(), serde_json::to_string(&second).unwrap());
    assert!(counter(&first, "timer_runs") > 0);
}
