//! The Oracle OLTP load (issue 16) on the study's database server (2.6.9, eight MegaRAID
//! LUNs), through the simulator: its processes' I/O as the schedulers see it.

use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::study;
use elevator_workload::WorkloadSpec;

/// A short OLTP run with a checkpoint every second on the study's machine, seed 3.
const LOAD: &str = "oltp:users=10,reads=50,block=4k,size=256m,runtime=3s,checkpoint=1s";

fn run(scheduler: &str, workload: &str) -> Run {
    let experiment = study::experiment("oltp").unwrap();
    let (config, _) = experiment.prepare(3, 1.0).unwrap();
    let workload = WorkloadSpec::parse(workload).unwrap();
    elevator_sim::run(&config, &SchedulerSpec::parse(scheduler).unwrap(), &workload).unwrap()
}

fn counter(run: &Run, name: &str) -> u64 {
    run.phases[0].counters.get(name).copied().unwrap_or(0)
}

/// The sessions' worst read latency, ns.
fn worst_session_read_ns(run: &Run) -> u64 {
    let background = |name: &str| name == "oltp/lgwr" || name.starts_with("oltp/dbw");
    let sessions = run.phases[0].issuers.iter().filter(|i| !background(&i.name));
    sessions.map(|issuer| issuer.latency_ns.max).max().unwrap()
}

/// The mean `log file sync` wait, ns.
fn mean_log_file_sync_ns(run: &Run) -> u64 {
    counter(run, "log_file_sync_ns") / counter(run, "log_file_sync_waits").max(1)
}

// Proves, through the whole simulator, that the instance's processes do what Oracle's do:
// commits complete and are grouped (never more commits than writes carry), the database
// writer has many writes in flight at its checkpoints, and the same seed gives the same run.
#[test]
fn checkpoints_put_many_writes_in_flight_and_runs_repeat() {
    let first = run("deadline", LOAD);
    assert!(counter(&first, "transactions") > 100);
    assert_eq!(counter(&first, "checkpoints"), 2, "at 1 s and 2 s of 3 s");
    assert!(counter(&first, "log_write_commits") >= counter(&first, "log_writes"));
    // Many, not all 128 of a batch: each of the writer's calls runs its system call, bio and
    // request work on a 2005 processor (≈ 15 µs) before its write reaches the queue, while the
    // controller's cache acknowledges earlier writes within ≈ 50 µs.
    let in_flight = counter(&first, "dbwr_in_flight_max");
    assert!((16..=128).contains(&in_flight), "{in_flight} writes in flight at most");
    assert_eq!(first, run("deadline", LOAD));
}

// Proves the scheduler decides how commits and reads queue behind the database writer's
// burst. Anticipatory waits after each session's read for that session's next one, so the
// log writer's synchronous redo write waits out anticipation windows: commits wait far longer
// on `log file sync` than under deadline, which dispatches the write as it comes, and groups
// grow. The same holds, less strongly, for 2.6.18's cfq, which idles for each process's sync
// queue, against 2.6.9's cfq (v1), which never idles and serves the log writer's queue in its
// turn — the two CFQs of the study's two kernels part on this load.
#[test]
fn commits_and_reads_queue_differently_under_deadline_and_cfq() {
    let deadline = run("deadline", LOAD);
    let anticipatory = run("anticipatory", LOAD);
    let figures = |a: &Run, b: &Run| {
        format!(
            "log file sync: {} {} ns, {} {} ns",
            a.scheduler,
            mean_log_file_sync_ns(a),
            b.scheduler,
            mean_log_file_sync_ns(b)
        )
    };
    assert!(
        mean_log_file_sync_ns(&anticipatory) > 10 * mean_log_file_sync_ns(&deadline),
        "{}",
        figures(&anticipatory, &deadline)
    );
    assert!(
        counter(&anticipatory, "log_write_commits_max")
            > counter(&deadline, "log_write_commits_max")
    );
    assert!(worst_session_read_ns(&anticipatory) > worst_session_read_ns(&deadline));

    let v3 = run("cfq@2.6.18", LOAD);
    let v1 = run("cfq@2.6.9", LOAD);
    assert!(mean_log_file_sync_ns(&v3) > 2 * mean_log_file_sync_ns(&v1), "{}", figures(&v3, &v1));
    assert!(counter(&v3, "log_write_commits_max") > counter(&v1, "log_write_commits_max"));
}
