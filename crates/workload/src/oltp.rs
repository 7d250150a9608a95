//! `oltp`: the foreground I/O of an OLTP database (the study's Oracle 10g on ext3 with
//! `filesystemio_options=setall`, so O_DIRECT), as transactions of small random I/Os.
//!
//! `users` sessions run at once, each a process. A transaction is `ios_per_txn` random
//! `block`-sized operations, each on a uniformly drawn LUN's datafile at a uniformly drawn
//! block-aligned offset, a read with probability `reads`% and a write otherwise; then the
//! commit: a synchronous write of `log_block` bytes to the redo log (on device 0); then
//! `think` of idle time. A transaction counts when its commit returns; [`Issuer::counters`]
//! reports `transactions`, which the report turns into transactions per minute. Users stop
//! starting operations once `runtime` has passed since they started.
//!
//! # Plan
//!
//! * Files `oltp.data.L` of `size` bytes on device L for each of the first `luns` devices, and
//!   with `log=1` the redo log `oltp.redo` of `log_size` bytes on device 0; all exist before
//!   the run.
//! * One phase `oltp`, one issuer per user (`oltp/U`, process id U + 1), random streams forked
//!   as `oltp-user` U.
//! * The redo log is written sequentially by all users together, each commit at the log's next
//!   `log_block`, wrapping at its end. With `direct=0` a commit is a buffered write plus an
//!   fsync of the log.
//!
//! # Keys
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `users` | 10 | concurrent sessions, 1..=4096 |
//! | `reads` | 50 | percent of datafile I/Os that are reads |
//! | `ios_per_txn` | 10 | datafile I/Os per transaction |
//! | `block` | 4k | bytes per datafile I/O (the database block), a multiple of 512 |
//! | `think` | 0 | idle time after each commit, ms if bare |
//! | `luns` | all devices | datafiles on the first N devices, one each |
//! | `size` | 1g | bytes per datafile, a whole number of blocks |
//! | `log` | 1 | a synchronous redo-log write at each commit |
//! | `log_block` | 8k | bytes per commit write, a multiple of 512 |
//! | `log_size` | 64m | bytes of the redo log, a whole number of log blocks |
//! | `runtime` | 60s | how long users start operations, s if bare |
//! | `direct` | 1 | O_DIRECT for the datafiles and the log |
//!
//! # Deviations from an Oracle OLTP load
//!
//! * Each user writes its own commit record and waits for it: there is no log writer process,
//!   no group commit, and no database writer writing dirty blocks in the background, so the
//!   writes are the users' own (a "direct path" model of the foreground I/O).
//! * No buffer cache: every block access is an I/O, uniformly spread over the datafiles; real
//!   loads hit a cached, skewed working set.
//! * Tables are not laid out in extents: a LUN's datafile is one contiguous region.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use elevator_core::{Duration, Instant, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId};

use crate::process::{Syscalls, check_files_fit, check_sectors, check_whole_chunks, device_count};
use crate::{FileSpec, IoId, IoKind, Issuer, PhasePlan, Place, Poll, Target, WorkloadPlan};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str =
    "OLTP database: users doing transactions of random block I/O with a synchronous commit";

const MAX_TIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// The keys of `oltp`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "users",
        kind: KeyKind::Integer { min: 1, max: 4096 },
        default: "10",
        help: "concurrent sessions, each a process",
    },
    KeySpec {
        key: "reads",
        kind: KeyKind::Integer { min: 0, max: 100 },
        default: "50",
        help: "percent of datafile I/Os that are reads",
    },
    KeySpec {
        key: "ios_per_txn",
        kind: KeyKind::Integer { min: 1, max: 100_000 },
        default: "10",
        help: "datafile I/Os per transaction",
    },
    KeySpec {
        key: "block",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 16 << 20 },
        default: "4k",
        help: "bytes per datafile I/O (the database block)",
    },
    KeySpec {
        key: "think",
        kind: KeyKind::Time { min: Duration::ZERO, max: MAX_TIME, bare_unit: "ms" },
        default: "0",
        help: "idle time after each commit",
    },
    KeySpec {
        key: "luns",
        kind: KeyKind::Integer { min: 1, max: 256 },
        default: "",
        help: "datafiles on the first N devices (default: every device)",
    },
    KeySpec {
        key: "size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 50 },
        default: "1g",
        help: "bytes per datafile, a whole number of blocks",
    },
    KeySpec {
        key: "log",
        kind: KeyKind::Flag,
        default: "1",
        help: "a synchronous redo-log write on device 0 at each commit",
    },
    KeySpec {
        key: "log_block",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 16 << 20 },
        default: "8k",
        help: "bytes per commit write",
    },
    KeySpec {
        key: "log_size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 40 },
        default: "64m",
        help: "bytes of the redo log, written round and round",
    },
    KeySpec {
        key: "runtime",
        kind: KeyKind::Time { min: Duration::from_millis(1), max: MAX_TIME, bare_unit: "s" },
        default: "60s",
        help: "how long users start operations",
    },
    KeySpec {
        key: "direct",
        kind: KeyKind::Flag,
        default: "1",
        help: "O_DIRECT for datafiles and log (Oracle's filesystemio_options=setall)",
    },
];

/// The checked configuration of an `oltp` load.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OltpConfig {
    users: u32,
    read_fraction: f64,
    ios_per_txn: u32,
    pub(crate) block_bytes: u64,
    think: Duration,
    size_bytes: u64,
    log: bool,
    log_block_bytes: u64,
    log_size_bytes: u64,
    runtime: Duration,
    direct: bool,
}

impl OltpConfig {
    pub(crate) fn from_params(params: &Params) -> Result<OltpConfig, ParamError> {
        let block_bytes = params.size("block");
        check_sectors(params, "block", block_bytes)?;
        let size_bytes = params.size("size");
        check_whole_chunks(params, "size", size_bytes, "block", block_bytes)?;
        let log_block_bytes = params.size("log_block");
        check_sectors(params, "log_block", log_block_bytes)?;
        let log_size_bytes = params.size("log_size");
        check_whole_chunks(params, "log_size", log_size_bytes, "log_block", log_block_bytes)?;
        Ok(OltpConfig {
            users: params.integer("users") as u32,
            read_fraction: params.integer("reads") as f64 / 100.0,
            ios_per_txn: params.integer("ios_per_txn") as u32,
            block_bytes,
            think: params.time("think"),
            size_bytes,
            log: params.flag("log"),
            log_block_bytes,
            log_size_bytes,
            runtime: params.time("runtime"),
            direct: params.flag("direct"),
        })
    }

    pub(crate) fn plan(
        &self,
        params: &Params,
        targets: &[Target],
        prng: &Prng,
    ) -> Result<WorkloadPlan, ParamError> {
        let luns = device_count(params, "luns", targets)?;
        let mut files: Vec<FileSpec> = (0..luns)
            .map(|lun| FileSpec {
                name: format!("oltp.data.{lun}"),
                device: lun,
                size_bytes: self.size_bytes,
            })
            .collect();
        if self.log {
            files.push(FileSpec {
                name: "oltp.redo".to_owned(),
                device: 0,
                size_bytes: self.log_size_bytes,
            });
        }
        let sizes: Vec<(usize, u64)> = files.iter().map(|f| (f.device, f.size_bytes)).collect();
        check_files_fit(params, "size", &sizes, targets)?;
        let log_cursor = Arc::new(AtomicU64::new(0));
        let issuers = (0..self.users)
            .map(|user| {
                Box::new(OltpUser {
                    name: format!("oltp/{user}"),
                    process: ProcessId(user + 1),
                    config: self.clone(),
                    luns: luns as u64,
                    log_file: self.log.then_some(luns),
                    log_cursor: Arc::clone(&log_cursor),
                    prng: prng.fork_indexed("oltp-user", u64::from(user)),
                    deadline: None,
                    step: Step::Data { issued: 0 },
                    transactions: 0,
                    calls: Syscalls::default(),
                }) as Box<dyn Issuer>
            })
            .collect();
        Ok(WorkloadPlan {
            files,
            phases: vec![PhasePlan { name: "oltp".to_owned(), issuers, stonewall: false }],
        })
    }
}

/// Where a user is in its transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Datafile I/Os, `issued` of them so far (always fewer than `ios_per_txn`).
    Data { issued: u32 },
    /// The commit's log write is next.
    LogWrite,
    /// The buffered log write returned; its fsync is next.
    LogSync,
    /// The transaction's last operation returned: count it.
    Commit,
    /// Idle after the commit until the instant, once it is set.
    Think(Option<Instant>),
}

/// One database session.
#[derive(Debug)]
struct OltpUser {
    name: String,
    process: ProcessId,
    config: OltpConfig,
    luns: u64,
    /// The redo log's index in the plan's files, when there is one.
    log_file: Option<usize>,
    /// The next log block, shared by every user: the redo log is one sequential stream.
    /// Relaxed is enough, since it is only a counter and the simulator polls one issuer at a
    /// time.
    log_cursor: Arc<AtomicU64>,
    prng: Prng,
    deadline: Option<Instant>,
    step: Step,
    transactions: u64,
    calls: Syscalls,
}

impl OltpUser {
    fn poll_data_io(&mut self) -> Poll {
        let config = &self.config;
        let lun = self.prng.below(self.luns) as usize;
        let block = self.prng.below(config.size_bytes / config.block_bytes);
        let kind =
            if self.prng.chance(config.read_fraction) { IoKind::Read } else { IoKind::Write };
        let offset = block * config.block_bytes;
        self.calls.call(kind, Place::File(lun), offset, config.block_bytes, config.direct)
    }

    fn poll_log_write(&mut self, log_file: usize) -> Poll {
        let config = &self.config;
        let blocks_in_log = config.log_size_bytes / config.log_block_bytes;
        let block = self.log_cursor.fetch_add(1, Ordering::Relaxed) % blocks_in_log;
        let offset = block * config.log_block_bytes;
        let place = Place::File(log_file);
        self.calls.call(IoKind::Write, place, offset, config.log_block_bytes, config.direct)
    }
}

impl Issuer for OltpUser {
    fn name(&self) -> &str {
        &self.name
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn poll(&mut self, now: Instant) -> Poll {
        if self.calls.busy() {
            return Poll::Wait;
        }
        let runtime = self.config.runtime;
        let deadline = *self.deadline.get_or_insert_with(|| now.saturating_add(runtime));
        loop {
            // A commit that returned counts even when the time is up.
            if self.step == Step::Commit {
                self.transactions += 1;
                self.step = Step::Think(None);
            }
            if now >= deadline {
                return Poll::Done;
            }
            match self.step {
                Step::Data { issued } => {
                    // The step after the last I/O is set now, so that a commit without a log
                    // write counts as soon as that I/O returns, even at the deadline.
                    self.step = if issued + 1 < self.config.ios_per_txn {
                        Step::Data { issued: issued + 1 }
                    } else if self.log_file.is_some() {
                        Step::LogWrite
                    } else {
                        Step::Commit
                    };
                    return self.poll_data_io();
                }
                Step::LogWrite => {
                    let log_file = self.log_file.expect("a log write without a log");
                    self.step = if self.config.direct { Step::Commit } else { Step::LogSync };
                    return self.poll_log_write(log_file);
                }
                Step::LogSync => {
                    let log_file = self.log_file.expect("a log sync without a log");
                    self.step = Step::Commit;
                    return self.calls.call(IoKind::Sync, Place::File(log_file), 0, 0, false);
                }
                Step::Commit => unreachable!("commits are counted above"),
                Step::Think(None) if self.config.think > Duration::ZERO => {
                    self.step = Step::Think(Some(now.saturating_add(self.config.think)));
                }
                Step::Think(Some(until)) if now < until => {
                    return Poll::Sleep { until: until.min(deadline) };
                }
                Step::Think(_) => self.step = Step::Data { issued: 0 },
            }
        }
    }

    fn complete(&mut self, _now: Instant, io: IoId) {
        self.calls.returned(io);
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("transactions", self.transactions)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Record, Run, parse_error, plan, plan_error, run};

    fn targets() -> Vec<Target> {
        (0..4).map(|i| Target { name: format!("lun{i}"), capacity_bytes: 4 << 30 }).collect()
    }

    fn oltp(text: &str) -> Run {
        run(plan(text, &targets()), |_| Duration::from_micros(500))
    }

    // Proves the datafiles go one per LUN over the first `luns` devices (all by default),
    // exist before the run, and the redo log sits on device 0 after them.
    #[test]
    fn datafiles_spread_over_the_luns() {
        let plan = plan("oltp:size=64m", &targets());
        let files: Vec<(&str, usize, u64)> =
            plan.files.iter().map(|f| (f.name.as_str(), f.device, f.size_bytes)).collect();
        assert_eq!(
            files,
            [
                ("oltp.data.0", 0, 64 << 20),
                ("oltp.data.1", 1, 64 << 20),
                ("oltp.data.2", 2, 64 << 20),
                ("oltp.data.3", 3, 64 << 20),
                ("oltp.redo", 0, 64 << 20),
            ]
        );
        assert_eq!(plan.phases[0].issuers.len(), 10);
        let two = crate::testing::plan("oltp:luns=2,log=0", &targets());
        assert_eq!(two.files.len(), 2);
    }

    // Proves each transaction is ios_per_txn random block-aligned datafile I/Os on every LUN,
    // then one log write at the log's next block, that the transaction counter equals the
    // commits, and that reads make up `reads` percent within a few percent.
    #[test]
    fn transactions_are_random_ios_then_a_commit() {
        let run = oltp("oltp:users=4,reads=70,ios_per_txn=5,runtime=2s,size=64m");
        let records = run.phase(0);
        let (log, data): (Vec<&Record>, Vec<&Record>) =
            records.iter().partition(|r| r.io.place == Place::File(4));
        let commits = log.len() as u64;
        assert_eq!(run.counter(0, "transactions"), commits);
        // Users stop at runtime, possibly inside a transaction.
        assert!((5 * commits..5 * (commits + 4)).contains(&(data.len() as u64)));
        let log_offsets: Vec<u64> = log.iter().map(|r| r.io.offset_bytes).collect();
        let expected: Vec<u64> = (0..commits).map(|i| (i * (8 << 10)) % (64 << 20)).collect();
        assert_eq!(log_offsets, expected, "one sequential redo stream");
        assert!(log.iter().all(|r| r.io.kind == IoKind::Write && r.io.size_bytes == 8 << 10));
        for lun in 0..4 {
            assert!(data.iter().any(|r| r.io.place == Place::File(lun)), "LUN {lun} unused");
        }
        for record in &data {
            assert_eq!(record.io.offset_bytes % 4096, 0);
            assert!(record.io.offset_bytes + 4096 <= 64 << 20);
            assert!(record.io.direct && record.in_flight == 1);
        }
        let reads = data.iter().filter(|r| r.io.kind == IoKind::Read).count() as f64;
        let share = reads / data.len() as f64;
        assert!((share - 0.7).abs() < 0.03, "{share}");
        // Per user: 5 data I/Os and a log write, 0.5 ms each, make 3 ms per transaction.
        assert_eq!(commits, 4 * (2000 / 3));
    }

    // Proves users start nothing once runtime has passed since they began, and think time
    // spaces the transactions.
    #[test]
    fn runtime_stops_and_think_spaces_transactions() {
        let run = oltp("oltp:users=1,ios_per_txn=1,think=9ms,runtime=100ms,size=64m");
        let records = run.phase(0);
        assert!(records.iter().all(|r| r.submitted < Instant::from_millis(100)));
        // 1 ms of I/O and 9 ms of thought per transaction.
        assert_eq!(run.counter(0, "transactions"), 10);
        let starts: Vec<u64> =
            records.iter().step_by(2).map(|r| r.submitted.as_nanos() / 1_000_000).collect();
        assert_eq!(starts, [0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    }

    // Proves buffered commits (direct=0) are a write and an fsync of the log, and log=0 makes
    // transactions of datafile I/O alone.
    #[test]
    fn buffered_commits_fsync_and_log_can_be_off() {
        let run = oltp("oltp:users=1,ios_per_txn=2,direct=0,runtime=10ms,size=64m");
        let kinds: Vec<(IoKind, Place)> =
            run.phase(0).iter().take(4).map(|r| (r.io.kind, r.io.place)).collect();
        assert_eq!(kinds[2], (IoKind::Write, Place::File(4)));
        assert_eq!(kinds[3], (IoKind::Sync, Place::File(4)));
        assert!(run.phase(0).iter().all(|r| !r.io.direct));
        let unlogged = oltp("oltp:users=2,ios_per_txn=4,log=0,runtime=20ms,size=64m");
        let data = unlogged.phase(0).len() as u64;
        assert_eq!(unlogged.counter(0, "transactions") * 4, data);
    }

    // Proves the same seed draws the same operations and users draw different ones.
    #[test]
    fn users_draw_from_their_own_streams() {
        let text = "oltp:users=2,runtime=20ms,size=64m";
        let first = oltp(text).records;
        assert_eq!(first, oltp(text).records);
        let of_user = |user| {
            first.iter().filter(|r| r.issuer == user).map(|r| r.io.offset_bytes).collect::<Vec<_>>()
        };
        assert_ne!(of_user(0), of_user(1));
    }

    // Proves bad input names the key: zero users, a read share over 100, a size that is not
    // whole blocks, more LUNs than devices, datafiles larger than the devices.
    #[test]
    fn bad_input_names_the_key() {
        assert!(parse_error("oltp:users=0").contains("users=0 is not valid"));
        assert!(parse_error("oltp:reads=101").contains("reads=101 is not valid"));
        assert!(parse_error("oltp:ios_per_txn=0").contains("ios_per_txn=0 is not valid"));
        assert!(parse_error("oltp:block=3k,size=10k").contains("size: 10240 bytes"));
        assert!(parse_error("oltp:block=1000").contains("block: 1000 bytes"));
        assert!(parse_error("oltp:log_size=4k").contains("log_block: log_block (8192 bytes)"));
        assert!(parse_error("oltp:runtime=0").contains("runtime=0 is not valid"));
        let plan_error = |text: &str| plan_error(text, &targets());
        assert!(plan_error("oltp:luns=5").contains("luns: 5 devices asked for"));
        assert!(plan_error("oltp:size=4g").contains("size: the files on lun0 need"));
    }
}
