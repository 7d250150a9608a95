//! The blk-mq host (issue 18): cores that limit IOPS, the 6.x path's costs per scheduler,
//! scheduler locks that stop scaling, and what the report says about them — whole runs
//! through `elevator_sim::run`.

use elevator_report::{Bottleneck, HostCpu, Run};
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, HostSpec, SimConfig, run};
use elevator_workload::WorkloadSpec;

fn simulate(device: &str, host: &str, scheduler: &str, workload: &str) -> Run {
    let mut config = SimConfig::new(5, DeviceSpec::parse(device).unwrap());
    config.host = HostSpec::parse(host).unwrap();
    let scheduler = SchedulerSpec::parse(scheduler).unwrap();
    let workload = WorkloadSpec::parse(workload).unwrap();
    run(&config, &scheduler, &workload).unwrap_or_else(|error| panic!("{workload}: {error}"))
}

fn iops(run: &Run) -> f64 {
    run.phases[0].iops
}

fn host_cpu(run: &Run) -> &HostCpu {
    run.host_cpu.as_ref().expect("a blk-mq scheduler's run reports the host's CPU")
}

/// All CPU the cores spent per I/O, in nanoseconds.
fn cpu_per_io_ns(run: &Run) -> f64 {
    let cpu = host_cpu(run);
    let busy: u64 = cpu
        .cores
        .iter()
        .map(|core| core.user_ns + core.sys_ns + core.irq_ns + core.softirq_ns + core.spin_ns)
        .sum();
    busy as f64 / run.phases[0].ops as f64
}

fn randread(depth: u32, jobs: u32, size: &str) -> String {
    format!("job:rw=randread,bs=4k,direct=1,iodepth={depth},numjobs={jobs},size={size}")
}

// Proves one process on one core at a high queue depth is bound by its core: the device
// (a 1 M IOPS NVMe drive) could take more, yet raising the depth from 64 to 256 adds no IOPS
// (up to 64 a deeper queue still helps: more completions share an interrupt),
// the core is saturated and the report names it; and a scheduler that costs more per
// request gives fewer IOPS (none > kyber ≥ mq-deadline > bfq: the framework and kblockd punt
// every scheduler pays, then each algorithm's own cost).
#[test]
fn one_core_at_high_depth_is_cpu_bound() {
    let host = "host:cpus=1";
    let device = "nvme-gen4-consumer";
    let at_64 = simulate(device, host, "none", &randread(64, 1, "16m"));
    let at_256 = simulate(device, host, "none", &randread(256, 1, "16m"));
    assert!(
        iops(&at_256) <= iops(&at_64) * 1.03,
        "deeper queue raised a CPU-bound run: {} -> {}",
        iops(&at_64),
        iops(&at_256)
    );
    assert!(iops(&at_64) < 600_000.0, "the drive's 1 M IOPS were reached: {}", iops(&at_64));
    let cpu = host_cpu(&at_64);
    assert!(cpu.cores[0].busy_percent > 95.0, "core 0 busy {}", cpu.cores[0].busy_percent);
    let device_busy = 100.0 * at_64.device_stats.busy_ns as f64 / cpu.window_ns as f64;
    assert_eq!(cpu.bottleneck(device_busy), Bottleneck::Core { core: 0 });

    let per_scheduler: Vec<f64> = ["none", "kyber", "mq-deadline", "bfq"]
        .iter()
        .map(|scheduler| iops(&simulate(device, host, scheduler, &randread(32, 1, "16m"))))
        .collect();
    assert!(per_scheduler[0] > per_scheduler[1] * 1.5, "none vs kyber: {per_scheduler:?}");
    assert!(per_scheduler[1] >= per_scheduler[2], "kyber vs mq-deadline: {per_scheduler:?}");
    assert!(per_scheduler[2] > per_scheduler[3], "mq-deadline vs bfq: {per_scheduler:?}");
}

// Proves that at queue depth 1 the device bounds the run: the schedulers' IOPS stay within
// 10 % of none's (their CPU adds to each I/O's latency, a few microseconds against the
// drive's ~60 µs), while the CPU each I/O costs differs by scheduler — the punt to kblockd and
// the framework with any scheduler, bfq's bookkeeping on top.
#[test]
fn at_depth_1_schedulers_differ_in_cpu_not_iops() {
    let host = "host:cpus=2";
    let device = "nvme-gen4-consumer";
    let runs: Vec<Run> = ["none", "kyber", "mq-deadline", "bfq"]
        .iter()
        .map(|scheduler| simulate(device, host, scheduler, &randread(1, 1, "4m")))
        .collect();
    for run in &runs[1..] {
        let ratio = iops(run) / iops(&runs[0]);
        assert!((0.9..=1.0).contains(&ratio), "{}: {ratio} of none's IOPS", run.scheduler);
        let device_busy = 100.0 * run.device_stats.busy_ns as f64 / host_cpu(run).window_ns as f64;
        assert!(device_busy > 80.0, "{}: device busy {device_busy} %", run.scheduler);
    }
    let cpu: Vec<f64> = runs.iter().map(cpu_per_io_ns).collect();
    assert!(cpu[1] > cpu[0] * 1.5, "kyber vs none CPU per I/O: {cpu:?}");
    assert!(cpu[2] > cpu[1], "mq-deadline vs kyber CPU per I/O: {cpu:?}");
    assert!(cpu[3] > cpu[2], "bfq vs mq-deadline CPU per I/O: {cpu:?}");
}

// Proves a scheduler lock stops scaling while none scales: on a device far faster than the
// cores (16 hardware queues, 15 M IOPS of bus), one job per core, none gains ≥ 6× from 2 to
// 16 cores, while mq-deadline's one `dd->lock` per device gains nothing from 8 to 16 cores
// (its hand-offs grow with the spinners, spec §3.6): the lock is the bottleneck the report
// names, and the cores spin for a large share of their time.
#[test]
fn a_locked_scheduler_stops_scaling_where_none_goes_on() {
    let device = "ram:queues=16,bandwidth=64g,depth=4096";
    let run_on = |cpus: u32, scheduler: &str| {
        simulate(device, &format!("host:cpus={cpus}"), scheduler, &randread(32, cpus, "4m"))
    };
    let none_2 = iops(&run_on(2, "none"));
    let none_16 = iops(&run_on(16, "none"));
    assert!(none_16 > none_2 * 6.0, "none: {none_2} on 2 cores, {none_16} on 16");
    let deadline_8 = iops(&run_on(8, "mq-deadline"));
    let deadline_16 = run_on(16, "mq-deadline");
    assert!(
        iops(&deadline_16) <= deadline_8 * 1.1,
        "mq-deadline: {deadline_8} on 8 cores, {} on 16",
        iops(&deadline_16)
    );
    assert!(iops(&deadline_16) < none_16 / 3.0);
    let cpu = host_cpu(&deadline_16);
    let device_busy = 100.0 * deadline_16.device_stats.busy_ns as f64 / cpu.window_ns as f64;
    assert!(
        matches!(cpu.bottleneck(device_busy), Bottleneck::Lock { ref name } if name.contains("dd->lock")),
        "{:?}",
        cpu.bottleneck(device_busy)
    );
    let spin: u64 = cpu.cores.iter().map(|core| core.spin_ns).sum();
    let busy: u64 =
        cpu.cores.iter().map(|core| core.user_ns + core.sys_ns + core.irq_ns + core.spin_ns).sum();
    assert!(spin * 3 > busy, "spin {spin} of {busy} ns");
}

// Proves CPU is a resource, not a counter: no thread uses more than one core and no core more
// than itself, with many threads sharing few cores (8 jobs on 2 cores, every scheduler);
// and the per-request path's parts add up to the requests' time.
#[test]
fn no_thread_exceeds_a_core_and_no_host_exceeds_its_cores() {
    for scheduler in ["none", "mq-deadline", "kyber", "bfq"] {
        let run = simulate("nvme-gen4-consumer", "host:cpus=2", scheduler, &randread(16, 8, "2m"));
        let cpu = host_cpu(&run);
        assert_eq!(cpu.cores.len(), 2);
        for core in &cpu.cores {
            assert!(core.busy_percent <= 100.0 + 1e-9, "{scheduler}: {core:?}");
        }
        for thread in &cpu.threads {
            assert!(thread.cpu_percent <= 100.0 + 1e-9, "{scheduler}: {thread:?}");
            assert!(thread.core < 2);
        }
        for issuer in &run.phases[0].issuers {
            let used = issuer.cpu_user_ns.unwrap() + issuer.cpu_sys_ns.unwrap();
            assert!(used <= cpu.window_ns, "{scheduler}: {} used {used} ns", issuer.name);
        }
        assert_eq!(cpu.requests, run.phases[0].ops, "{scheduler}");
        assert!(cpu.path_ns["submit"] > 0 && cpu.path_ns["completion"] > 0, "{scheduler}");
    }
}

// Proves bfq and kyber cut the tail latency of a QD-1 reader beside two QD-128 writers on a
// flash drive, against none, whose reader waits behind every write at the device: bfq by
// serving the reader's own queue (its budget and weight-raising), kyber by throttling the
// write domain's tokens once reads miss their latency target (`read_lat_nsec`, set below
// what the reader sees under none so that kyber acts). For bfq the reader starts 200 ms after
// the writers (and under none too, to compare like with like): on this non-rotational,
// queueing device bfq merges the sync queues of processes started within 180 ms of each other
// at one priority (early stable merging, `bfq_do_or_sched_stable_merge`), and a reader sharing
// the writers' queue is not protected.
#[test]
fn bfq_and_kyber_protect_a_reader_from_writers() {
    let dir = std::env::temp_dir().join(format!("elevator-blkmq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let reader_p99 = |scheduler: &str, reader_delay: &str| {
        let file = dir.join(format!("reader-writers-{reader_delay}.fio"));
        std::fs::write(
            &file,
            format!(
                "[global]\nioengine=io_uring\ndirect=1\nbs=4k\nruntime=600ms\ntime_based=1\n\
                 filename=sda\n\n[reader]\nrw=randread\niodepth=1\nstartdelay={reader_delay}\n\n\
                 [writers]\nrw=randwrite\niodepth=128\nnumjobs=2\n"
            ),
        )
        .unwrap();
        let workload = format!("fio:{}", file.display());
        let run = simulate("nvme-gen4-consumer", "host:cpus=4", scheduler, &workload);
        let reader = run.phases[0].issuers.iter().find(|issuer| issuer.name == "reader/0");
        reader.expect("the reader's figures").latency_ns.p99
    };
    let (none, none_delayed) = (reader_p99("none", "0"), reader_p99("none", "200ms"));
    let bfq = reader_p99("bfq", "200ms");
    let kyber = reader_p99("kyber:read_lat_nsec=250000", "0");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(bfq * 10 < none_delayed * 7, "bfq's reader p99 {bfq} ns vs none's {none_delayed}");
    assert!(kyber * 10 < none * 7, "kyber's reader p99 {kyber} ns vs none's {none}");
}

// Proves the blk-mq host is deterministic: the same seed gives the same report, CPU figures
// included, byte for byte.
#[test]
fn the_same_seed_gives_the_same_cpu_figures() {
    let json = || {
        let run = simulate("nvme-gen4-consumer", "host:cpus=3", "bfq", &randread(8, 5, "1m"));
        serde_json::to_string(&run).unwrap()
    };
    assert_eq!(json(), json());
}

// Proves `cpus_allowed` places threads: two jobs pinned to CPU 0 of two share that core and
// get what two jobs get on a one-core host, well below what they get spread over both cores;
// and a CPU the host lacks is refused naming it.
#[test]
fn cpus_allowed_pins_jobs_and_a_missing_cpu_is_refused() {
    let device = "nvme-gen4-consumer";
    let host = "host:cpus=2";
    let spread = simulate(device, host, "none", &randread(32, 2, "8m"));
    let pinned =
        simulate(device, host, "none", &format!("{},cpus_allowed=0", randread(32, 2, "8m")));
    let one_core = simulate(device, "host:cpus=1", "none", &randread(32, 2, "8m"));
    let ratio = iops(&pinned) / iops(&one_core);
    assert!((0.97..1.03).contains(&ratio), "pinned vs one core: {ratio}");
    assert!(iops(&spread) > iops(&pinned) * 1.25, "{} vs {}", iops(&spread), iops(&pinned));
    let cpu = host_cpu(&pinned);
    assert!(cpu.threads.iter().filter(|t| t.kind == "application").all(|t| t.core == 0));
    assert!(cpu.cores[0].busy_percent > 95.0 && cpu.cores[1].busy_percent < 5.0, "{cpu:?}");

    let mut config = SimConfig::new(5, DeviceSpec::parse(device).unwrap());
    config.host = HostSpec::parse(host).unwrap();
    let workload =
        WorkloadSpec::parse(&format!("{},cpus_allowed=3", randread(1, 1, "1m"))).unwrap();
    let error = run(&config, &SchedulerSpec::parse("none").unwrap(), &workload).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("cpus_allowed") && text.contains("CPU 3"), "{text}");
}

// Proves the submission batch decides where a scheduler's dispatch runs (spec §2.2, §5): a
// batch of 1 punts every hardware-queue run to kblockd, whose kworker then spends CPU; a batch
// of 8 plugs and dispatches in the submitting thread, so kblockd stays idle and the same I/O
// costs less CPU. Registered buffers save the page pinning on top.
#[test]
fn the_batch_decides_the_kblockd_punt_and_fixed_buffers_save_pinning() {
    let device = "nvme-gen4-consumer";
    let host = "host:cpus=1";
    let job = |extra: &str| format!("{},ioengine=io_uring{extra}", randread(32, 1, "8m"));
    let kworker_ns = |run: &Run| -> u64 {
        host_cpu(run).threads.iter().filter(|t| t.kind == "kworker").map(|t| t.sys_ns).sum()
    };
    let batch_1 = simulate(device, host, "mq-deadline", &job(""));
    let batch_8 = simulate(device, host, "mq-deadline", &job(",iodepth_batch_submit=8"));
    assert!(kworker_ns(&batch_1) > 0);
    assert_eq!(kworker_ns(&batch_8), 0);
    assert!(cpu_per_io_ns(&batch_8) < cpu_per_io_ns(&batch_1));
    let fixed = simulate(device, host, "none", &job(",fixedbufs=1"));
    let plain = simulate(device, host, "none", &job(""));
    assert!(cpu_per_io_ns(&fixed) < cpu_per_io_ns(&plain) - 100.0);
}

// Proves "where the time went" accounts for every request's whole latency (spec §6.4: the
// steps are disjoint and sum to it): for each scheduler and for interrupt and polled
// completions, the path steps add up to the recorded latencies (mean × requests, to within
// the mean's rounding). Interrupt completions hand the CQE to task_work, whose wait is its
// own step; a polled one (`hipri`) reaps on the thread, so its task_work step is empty.
#[test]
fn the_path_steps_sum_to_the_latency() {
    let device = "nvme-gen4-consumer";
    let host = "host:cpus=2";
    for scheduler in ["none", "mq-deadline", "kyber", "bfq"] {
        for polled in [false, true] {
            let extra = if polled { ",ioengine=io_uring,hipri=1" } else { ",ioengine=io_uring" };
            let job = format!("{}{extra}", randread(16, 2, "4m"));
            let run = simulate(device, host, scheduler, &job);
            let cpu = host_cpu(&run);
            let what = format!("{scheduler}, polled {polled}");
            assert_eq!(cpu.requests, run.phases[0].ops, "{what}");
            let steps: u64 = cpu.path_ns.values().sum();
            let latency = run.phases[0].latency_ns.mean as f64 * cpu.requests as f64;
            let error = (steps as f64 - latency).abs();
            assert!(
                error <= cpu.requests as f64,
                "{what}: steps sum to {steps} ns, latencies to {latency} ns: {:?}",
                cpu.path_ns
            );
            if polled {
                assert_eq!(cpu.path_ns["task_work"], 0, "{what}");
            } else {
                assert!(cpu.path_ns["task_work"] > 0, "{what}");
            }
            assert!(cpu.path_ns["completion"] > 0, "{what}");
        }
    }
}

// Proves several SSDs in one host each have their own scheduler instance and lock (spec §7.5):
// two jobs on two cores, each on its own drive, take only their own drive's `dd->lock`, so
// no acquisition is ever handed over from the other core, and together they get twice what
// one of them gets alone.
#[test]
fn each_drive_has_its_own_lock() {
    let dir = std::env::temp_dir().join(format!("elevator-blkmq-jbod-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = |drives: &[&str]| {
        let mut text = String::from(
            "[global]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\niodepth=32\nsize=4m\n",
        );
        for drive in drives {
            text.push_str(&format!("\n[{drive}]\nfilename={drive}\n"));
        }
        let file = dir.join(format!("{}.fio", drives.join("-")));
        std::fs::write(&file, text).unwrap();
        format!("fio:{}", file.display())
    };
    let device = "jbod:disks=2,disk=nvme-gen4-consumer,driver=generic";
    let both = simulate(device, "host:cpus=2", "mq-deadline", &job(&["sda", "sdb"]));
    let one = simulate(device, "host:cpus=2", "mq-deadline", &job(&["sda"]));
    std::fs::remove_dir_all(&dir).unwrap();
    let cpu = host_cpu(&both);
    assert_eq!(cpu.locks.len(), 2, "{:?}", cpu.locks);
    for lock in &cpu.locks {
        assert!(lock.acquisitions > 0, "{lock:?}");
        assert_eq!(lock.cross_core_handoffs, 0, "{lock:?}");
    }
    let ratio = iops(&both) / iops(&one);
    assert!((1.9..=2.05).contains(&ratio), "two drives / one: {ratio}");
}

// Proves a process on the 2.6 host uses at most one processor too (issue 18 item 1): a
// direct-I/O reader at queue depth 32 on a RAM disk, with eight processors free, is held to
// its calls' CPU work (each call runs its system call and the bio, request and interrupt work
// charged since its last call before its bios reach the queue), so its user + system time
// never exceeds the phase's time by more than the completion interrupts still unrun at its
// end; before, it reported 3,600 % of a processor.
#[test]
fn a_2_6_process_uses_at_most_one_processor() {
    let run = simulate("ram", "host:cpus=8", "deadline", &randread(32, 1, "16m"));
    let phase = &run.phases[0];
    let issuer = &phase.issuers[0];
    let used_ns = issuer.cpu_user_ns.unwrap() + issuer.cpu_sys_ns.unwrap();
    let last_interrupts_ns = 32 * 4_000;
    assert!(
        used_ns <= phase.duration_ns + last_interrupts_ns,
        "{used_ns} ns of CPU in {} ns",
        phase.duration_ns
    );
    assert!(run.host_cpu.is_none(), "a legacy scheduler's run has no blk-mq host");
}
