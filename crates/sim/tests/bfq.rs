//! bfq in the simulator: on the hard disk, weighted sharing, the idle class's timeout, and
//! weight raising for a process that starts reading while a writer saturates the disk; on the
//! SSD, an even split between two equal readers whose raising ends (issue 27).
//!
//! Each test builds its processes from `job` specs, gives each its own process id, and records
//! every completion, so that it can state what it proves in terms of bytes and times.

use std::path::Path;

use std::sync::{Arc, Mutex};

use elevator_core::{Duration, Instant, IoPriority, ProcessId};
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, SimConfig, run_plan, targets};
use elevator_workload::{Io, IoId, Issuer, PhasePlan, Poll, WorkloadPlan, WorkloadSpec};

/// One completed operation: when it was submitted and when it completed.
#[derive(Clone, Copy, Debug)]
struct Op {
    submitted: Instant,
    completed: Instant,
    bytes: u64,
}

type Log = Arc<Mutex<Vec<Op>>>;

/// A job's issuer run as process `process`, starting at `start`, with every completion logged.
#[derive(Debug)]
struct Traced {
    inner: Box<dyn Issuer>,
    process: ProcessId,
    start: Instant,
    /// Operations in flight: id, submission time, size.
    in_flight: Vec<(IoId, Instant, u64)>,
    log: Log,
}

impl Issuer for Traced {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn priority(&self) -> IoPriority {
        self.inner.priority()
    }

    fn poll(&mut self, now: Instant) -> Poll {
        if now < self.start {
            return Poll::Sleep { until: self.start };
        }
        let poll = self.inner.poll(now);
        if let Poll::Submit(Io { id, size_bytes, .. }) = poll {
            self.in_flight.push((id, now, size_bytes));
        }
        poll
    }

    fn complete(&mut self, now: Instant, io: IoId) {
        let index = self.in_flight.iter().position(|&(id, _, _)| id == io).expect("known io");
        let (_, submitted, bytes) = self.in_flight.swap_remove(index);
        self.log.lock().unwrap().push(Op { submitted, completed: now, bytes });
        self.inner.complete(now, io);
    }
}

/// A process: a one-clone `job` spec, its process id, when it starts.
struct Process {
    job: &'static str,
    process: u32,
    start_ms: u64,
}

fn config() -> SimConfig {
    SimConfig::new(1, DeviceSpec::parse("hdd").unwrap())
}

/// Runs `processes` together under `scheduler` on the hdd preset; returns each one's log and
/// the scheduler's counters.
fn simulate(
    scheduler: &str,
    processes: &[Process],
) -> (Vec<Vec<Op>>, std::collections::BTreeMap<String, u64>) {
    let config = config();
    let targets = targets(&config).unwrap();
    let prng = elevator_core::Prng::new(7);
    let mut issuers: Vec<Box<dyn Issuer>> = Vec::new();
    let mut logs = Vec::new();
    for (index, process) in processes.iter().enumerate() {
        let spec = WorkloadSpec::parse(process.job).unwrap();
        let plan = spec.plan(&targets, &prng.fork_indexed("process", index as u64)).unwrap();
        let inner = plan.phases.into_iter().next().unwrap().issuers.into_iter().next().unwrap();
        let log = Log::default();
        logs.push(log.clone());
        issuers.push(Box::new(Traced {
            inner,
            process: ProcessId(process.process),
            start: Instant::from_millis(process.start_ms),
            in_flight: Vec::new(),
            log,
        }));
    }
    let phase = PhasePlan { name: "mix".into(), issuers, stonewall: false };
    let plan = WorkloadPlan { files: Vec::new(), phases: vec![phase] };
    let scheduler = SchedulerSpec::parse(scheduler).unwrap();
    let run = run_plan(&config, &scheduler, plan, "bfq test", &[]).unwrap();
    let logs = logs.iter().map(|log| log.lock().unwrap().clone()).collect();
    (logs, run.scheduler_stats.counters)
}

fn bytes_between(log: &[Op], from: Instant, to: Instant) -> u64 {
    log.iter().filter(|op| op.completed >= from && op.completed < to).map(|op| op.bytes).sum()
}

// Proves weights share the disk: two saturating sequential readers (128 KiB reads, one at a
// time, far apart on the disk) at best-effort levels 0 and 6 — weights 80 and 20 — move bytes in
// a 4:1 ratio within 15 % over the last 9 of the 10 s they both read. Measured: 419.6 MB
// against 102.4 MB, 4.10:1 (the peak rate settles at about 114000 sectors/s with the seeks
// between the two regions).
#[test]
fn weights_80_and_20_share_the_disk_4_to_1() {
    let (logs, counters) = simulate(
        "bfq",
        &[
            Process {
                job: "job:rw=read,bs=128k,prioclass=2,prio=0,time_based=1,runtime=10s",
                process: 1,
                start_ms: 0,
            },
            Process {
                job: "job:rw=read,bs=128k,prioclass=2,prio=6,offset=50%,time_based=1,runtime=10s",
                process: 2,
                start_ms: 0,
            },
        ],
    );
    let (from, to) = (Instant::from_millis(1000), Instant::from_millis(10_000));
    let heavy = bytes_between(&logs[0], from, to) as f64;
    let light = bytes_between(&logs[1], from, to) as f64;
    let ratio = heavy / light;
    assert!((ratio - 4.0).abs() <= 0.6, "throughput ratio {ratio:.3} (counters {counters:?})");
}

// Proves the idle class's timeout: an idle-class reader queued 1 ms after a saturating
// best-effort reader started (so the best-effort queue is in service; at the very same
// instant the first request of each races, see the note in issue 15's record) (1 s of back-to-back reads) completes nothing in the first 200 ms
// (`BFQ_CL_IDLE_TIMEOUT`), is then served now and then while the best-effort reader goes on —
// at most one request per 200 ms, each one a lookup that found the timeout passed — and gets
// the disk to itself once the best-effort reader stops. Measured: first idle-class completion
// at 221 ms, 4 idle-class reads while the best-effort reader ran (to 1002 ms), 385 in the next
// second.
#[test]
fn an_idle_class_reader_waits_for_the_200_ms_timeout() {
    let (logs, counters) = simulate(
        "bfq",
        &[
            Process { job: "job:rw=read,bs=128k,time_based=1,runtime=1s", process: 1, start_ms: 0 },
            Process {
                job: "job:rw=read,bs=128k,prioclass=3,offset=50%,time_based=1,runtime=2s",
                process: 2,
                start_ms: 1,
            },
        ],
    );
    let (busy, idle) = (&logs[0], &logs[1]);
    let busy_end = busy.last().unwrap().completed;
    let first_idle = idle[0].completed;
    let idle_while_busy = idle.iter().filter(|op| op.completed < busy_end).count();
    let idle_after = idle.iter().filter(|op| op.completed > busy_end).count();
    assert!(first_idle > Instant::from_millis(200), "first idle-class completion at {first_idle}");
    assert!(first_idle < busy_end, "served by the timeout while the other reader is busy");
    assert!(idle_while_busy <= 5, "{idle_while_busy} idle-class requests in the first second");
    assert!(counters["idle_class_timeouts"] >= 1);
    assert!(idle_after > 20 * idle_while_busy, "{idle_after} after the best-effort reader");
}

/// A writer saturating the disk from t=0 (256 KiB O_DIRECT writes, eight at a time) and, from
/// t=3 s, a process reading 48 small files: 16 KiB at random places, with 10 ms of think time
/// between reads. Returns the reader's log.
fn reader_under_writer(scheduler: &str) -> (Vec<Op>, std::collections::BTreeMap<String, u64>) {
    let (mut logs, counters) = simulate(
        scheduler,
        &[
            Process {
                job: "job:rw=write,bs=256k,iodepth=8,time_based=1,runtime=8s",
                process: 1,
                start_ms: 0,
            },
            Process {
                job: "job:rw=randread,bs=16k,thinktime=10ms,io_size=768k,offset=25%,size=1g",
                process: 2,
                start_ms: 3000,
            },
        ],
    );
    (logs.swap_remove(1), counters)
}

fn mean_latency(log: &[Op]) -> Duration {
    let total: u64 = log.iter().map(|op| (op.completed - op.submitted).as_nanos()).sum();
    Duration::from_nanos(total / log.len() as u64)
}

// Proves weight raising: the reader that starts while the writer saturates the disk is raised
// as interactive (its process was idle for more than 2 s: it never read before), preempts the
// writer at each read and gets its reads back far sooner than under mq-deadline, which lets a
// write batch run out first. Measured on the hdd preset: mean read latency 20.3 ms under bfq
// against 106.9 ms under mq-deadline, 5.3 times sooner.
#[test]
fn a_reader_starting_under_a_writer_is_raised_and_served_far_sooner() {
    let (bfq, counters) = reader_under_writer("bfq");
    let (deadline, _) = reader_under_writer("mq-deadline");
    assert_eq!(bfq.len(), 48);
    assert_eq!(deadline.len(), 48);
    let (bfq_mean, deadline_mean) = (mean_latency(&bfq), mean_latency(&deadline));
    let ratio = deadline_mean.as_nanos() as f64 / bfq_mean.as_nanos() as f64;
    assert!(counters["wr_interactive_starts"] >= 2, "writer at its start, then the reader");
    assert!(
        ratio > 3.0,
        "mean read latency {bfq_mean} under bfq, {deadline_mean} under mq-deadline"
    );
}

// Proves issue 27 in simulation: two identical, equal-weight random readers on the ssd preset,
// each with one read at a time, sending the next one at once or after 100 µs of think time, get
// the same bandwidth within 10 % over 8 s with bfq's defaults (weight raising and idling on).
// Their queues empty after every read, so each one whose raising ends is counted again under its
// weight; before the fix the stale raised weight made one reader look asymmetric, and it got
// 21.85 MB/s against 7.70 (14.30 against 7.70 with think time). The second reader starts
// 200 ms after the first: on a non-rotational device bfq merges the queues of processes
// started within its 180 ms burst interval (early stable merging), and one shared queue
// could not show the per-queue weights this test is about.
#[test]
fn two_equal_readers_that_think_share_an_ssd_evenly() {
    let config = SimConfig::new(1, DeviceSpec::parse("ssd").unwrap());
    for thinktime in ["0", "100us"] {
        let jobs = format!(
            "[global]\nsize=4g\nrw=randread\nbs=4k\niodepth=1\nthinktime={thinktime}\nruntime=8s\n\
             time_based=1\n[first]\n[second]\nstartdelay=200ms\n"
        );
        let env = elevator_workload::fio::FioEnv::default();
        let file =
            elevator_workload::fio::parse_str(&jobs, "two-readers.fio", Path::new("."), &env)
                .unwrap();
        let workload = WorkloadSpec::from_fio_jobs("two-readers.fio", &file).unwrap();
        let run =
            elevator_sim::run(&config, &SchedulerSpec::parse("bfq").unwrap(), &workload).unwrap();
        let bytes: Vec<f64> = run.phases[0].issuers.iter().map(|i| i.bytes as f64).collect();
        assert_eq!(bytes.len(), 2);
        let ratio = bytes[0] / bytes[1];
        assert!(
            (0.9..=1.1).contains(&ratio),
            "thinktime {thinktime}: bytes {bytes:?}, ratio {ratio:.3}, counters {:?}",
            run.scheduler_stats.counters
        );
        assert!(run.scheduler_stats.counters["wr_ends"] >= 2, "both readers' raising ended");
    }
}
