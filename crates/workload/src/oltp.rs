//! `oltp`: an Oracle 10g OLTP load (TPC-C-like, the study's 10 users and 50 % reads) as the
//! processes of the instance issued it on Linux 2.6 and ext3.
//!
//! Oracle modelled: 10g Release 1 on Linux, one OS process per role
//! (`workload-mechanisms.md` §1.1, the spec below), with the defaults of the classic database
//! server (2 CPUs with Hyper-Threading: `db_writer_processes` = 1, `log_buffer` 512 KiB).
//! Sources, by the spec's IDs: ORA-CON (processes, group commit, DBWR triggers), ORA-REF
//! (defaults, wait events), ORA-OPEN and RH-ORA (how files are opened), LSE-AIO (async I/O on
//! ext3), TPCC and HDB (the load's mix and its absent think time).
//!
//! # Processes
//!
//! * `users` foreground sessions (`oltp/U`, process U + 1; spec §1.1, §1.7): a transaction is
//!   `ios_per_txn` block accesses, each with probability `reads`% a `db file sequential read`
//!   — one synchronous single-`block` read at a uniformly drawn block of a uniformly drawn
//!   LUN's datafile — and otherwise a change to a block in the buffer cache, which dirties the
//!   buffer and costs no I/O. Then the commit: the transaction's `log_block` bytes of redo go
//!   into the log buffer, the session posts the log writer and sleeps on `log file sync`
//!   until the write carrying its commit is on disk (§1.4). Then `think`. A session that
//!   would dirty a buffer while `cache` bytes of buffers are dirty posts the database
//!   writers and waits (`free buffer waits`, §1.5).
//! * One log writer (`oltp/lgwr`, process `users` + 1; Oracle has exactly one): when posted
//!   it writes, sequentially in the redo log, all redo generated since its previous write
//!   started, rounded up to 512-byte redo blocks, and waits for it — one write at a time. A
//!   write carries every commit that arrived while the previous one was in flight (group
//!   commit, §1.4); when it completes, LGWR posts those sessions. A write that would pass
//!   the end of the log starts the log again at its beginning: a log switch, which asks for
//!   a checkpoint.
//! * `dbwr` database writers (`oltp/dbwN`, processes `users` + 2 + N; default 1 =
//!   max(1, CPU_COUNT / 8), ORA-REF): every `checkpoint` (its 3 s timeout, ORA-CON) and at
//!   each log switch a checkpoint asks them to write every buffer dirty at that moment, in
//!   checkpoint order (the order the buffers were first dirtied, so scattered, not in LBA
//!   order, §1.5); sessions short of free buffers ask for `dbwr_batch` more. With `direct=1`
//!   (async I/O) a writer keeps up to `dbwr_batch` writes in flight and refills as some
//!   complete (`io_submit`, then reap some, §1.5); with `direct=0` it writes one block at a
//!   time and waits for it.
//!
//! # Files and the I/O path
//!
//! * Files `oltp.data.L` of `size` bytes on device L for each of the first `luns` devices, and
//!   the redo log `oltp.redo` of `log_size` bytes on device 0; all exist before the run.
//! * `direct=1` is `filesystemio_options=setall` (§1.2): data and redo files O_DIRECT, reads
//!   and writes straight to the block layer, DBWR's writes truly asynchronous (LSE-AIO).
//!   `direct=0` is `none`, Oracle's effective default on Linux (RH-ORA): reads through the
//!   page cache (with its read-ahead), and every O_SYNC write a buffered write that the
//!   writing process then syncs and waits for; async I/O degrades to synchronous calls on
//!   buffered files (LSE-AIO), so each database writer has one write outstanding.
//! * The redo log is written sequentially by the log writer alone.
//! * On RHEL 3 (a 2.4 host such as `dbserver-2004`), use `direct=0`: Oracle's default
//!   `filesystemio_options=none` there is buffered synchronous datafile I/O, so 2.4's
//!   read-ahead and bdflush/kupdated apply (linux-2.4-elevator.md §6.6), and this load needs
//!   no change for it (`block` stays the study's 4 KiB, not §6.6's 8 KiB). `direct=1` would
//!   not be RHEL 3's `setall`: there kernel AIO on ext3 goes through the page cache, ignoring
//!   O_DIRECT, while this load's DBWR keeps O_DIRECT writes in flight; the load does not know
//!   the host's kernel and does not refuse it.
//!
//! # Figures
//!
//! Counters, summed over the phase's processes: `transactions` (commits that returned; the
//! report's transactions per minute), `log_file_sync_waits` and `log_file_sync_ns` (the
//! sessions' commit waits and their total time), `free_buffer_waits`, `log_writes`,
//! `log_write_commits` (commits carried; / `log_writes` = the mean group commit),
//! `log_write_commits_max`, `log_switches`, `checkpoints`, `dbwr_writes` and
//! `dbwr_in_flight_max` (most database-writer writes in flight at once, all writers together).
//!
//! # Keys
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `users` | 10 | foreground sessions, 1..=4096 (§1.7: 10) |
//! | `reads` | 50 | percent of block accesses that are disk reads; the rest change a cached block (§1.7: 50 % reads is a share of disk I/Os, and DBWR's writes are about one per change) |
//! | `ios_per_txn` | 10 | block accesses per transaction **[unverified]** |
//! | `block` | 4k | `db_block_size`, a multiple of 512 (§1.7: 4 KiB **[inference]**) |
//! | `think` | 0 | idle time after each commit, ms if bare (HDB: keying and thinking off) |
//! | `luns` | all devices | datafiles on the first N devices, one each |
//! | `size` | 1g | bytes per datafile, a whole number of blocks |
//! | `log` | 1 | commits wait for the log writer's redo write; 0 = no redo at all |
//! | `log_block` | 8k | bytes of redo per transaction, a multiple of 512 **[unverified]** (§1.4: a group-commit write of tens of KiB with 10 busy users) |
//! | `log_size` | 64m | bytes of the online redo log; passing its end is a log switch |
//! | `dbwr` | 1 | database writers, `db_writer_processes` (ORA-REF default for 4 logical CPUs) |
//! | `dbwr_batch` | 128 | a database writer's writes in flight with async I/O, and a free-buffer request's size (§1.1: tens to hundreds **[unverified]**) |
//! | `checkpoint` | 3s | DBWR's timeout: a checkpoint of every dirty buffer (ORA-CON) |
//! | `cache` | 1g | bytes of buffer cache that may be dirty before sessions wait for free buffers **[unverified: the SGA size is not given]** |
//! | `runtime` | 60s | how long sessions start transactions, s if bare |
//! | `direct` | 1 | 1 = `setall` (O_DIRECT, async DBWR), 0 = `none` (buffered O_SYNC) |
//!
//! # Deviations from Oracle/Linux
//!
//! * `direct` defaults to 1 (`setall`, Red Hat's recommendation for 10g on RHEL 4 ext3,
//!   RH-ORA, RHM-ORA), not the spec's `none` (§6): the host has no O_SYNC write, so `none`'s
//!   O_SYNC write is a buffered write plus an fsync, and on ext3 that fsync forces a journal
//!   commit per write, which a real O_SYNC overwrite of a preallocated file does not (§1.2).
//! * A transaction's redo enters the log buffer at its commit, so the log writer's 3 s timer,
//!   its one-third-of-`log_buffer` and 1 MiB triggers, and `log buffer space` waits never
//!   come into play (§1.4): every write is started by a commit. One log member, no CKPT
//!   control-file writes, no ARCn (NOARCHIVELOG), no temp-file writes (§1.1, §1.6).
//! * Block changes are to buffers already in the cache (no read before a change), and every
//!   drawn read misses the cache (the cached index root and branch blocks are not drawn at
//!   all, §1.7). Accesses are uniform over the datafiles, not skewed.
//! * Incremental checkpointing is a full checkpoint at each 3 s timeout; adjacent dirty
//!   blocks are not coalesced into multiblock writes (rare with uniform random blocks).
//! * A session's CPU time between calls is the host's per-call cost only (§1.7 gives
//!   0.1–1 ms **[unverified]**); posts wake a sleeping process at once, with no semaphore
//!   wake-up latency.
//! * Tables are not laid out in extents: a LUN's datafile is one contiguous region.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use elevator_core::{
    Duration, Instant, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId, RequestFlags,
};

use crate::process::{Syscalls, check_files_fit, check_sectors, check_whole_chunks, device_count};
use crate::{FileSpec, Io, IoId, IoKind, Issuer, PhasePlan, Place, Poll, Target, WorkloadPlan};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str = "Oracle 10g OLTP: sessions reading blocks and committing, a log \
                           writer with group commit, database writers at checkpoints";

const MAX_TIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// Redo is written in 512-byte redo blocks on Linux (spec §1.1).
const REDO_BLOCK_BYTES: u64 = 512;

/// The keys of `oltp`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "users",
        kind: KeyKind::Integer { min: 1, max: 4096 },
        default: "10",
        help: "foreground sessions, each a process",
    },
    KeySpec {
        key: "reads",
        kind: KeyKind::Integer { min: 0, max: 100 },
        default: "50",
        help: "percent of block accesses that are disk reads (the rest change a cached block)",
    },
    KeySpec {
        key: "ios_per_txn",
        kind: KeyKind::Integer { min: 1, max: 100_000 },
        default: "10",
        help: "block accesses per transaction",
    },
    KeySpec {
        key: "block",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 16 << 20 },
        default: "4k",
        help: "bytes per database block (db_block_size)",
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
        help: "commits wait for the log writer's redo write on device 0",
    },
    KeySpec {
        key: "log_block",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 16 << 20 },
        default: "8k",
        help: "bytes of redo per transaction",
    },
    KeySpec {
        key: "log_size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 40 },
        default: "64m",
        help: "bytes of the online redo log; passing its end is a log switch",
    },
    KeySpec {
        key: "dbwr",
        kind: KeyKind::Integer { min: 1, max: 20 },
        default: "1",
        help: "database writer processes (db_writer_processes)",
    },
    KeySpec {
        key: "dbwr_batch",
        kind: KeyKind::Integer { min: 1, max: 65_536 },
        default: "128",
        help: "a database writer's writes in flight with async I/O, and a free-buffer request",
    },
    KeySpec {
        key: "checkpoint",
        kind: KeyKind::Time { min: Duration::from_millis(1), max: MAX_TIME, bare_unit: "s" },
        default: "3s",
        help: "database writers' timeout: a checkpoint of every dirty buffer",
    },
    KeySpec {
        key: "cache",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 50 },
        default: "1g",
        help: "bytes of buffer cache that may be dirty before sessions wait for free buffers",
    },
    KeySpec {
        key: "runtime",
        kind: KeyKind::Time { min: Duration::from_millis(1), max: MAX_TIME, bare_unit: "s" },
        default: "60s",
        help: "how long sessions start transactions",
    },
    KeySpec {
        key: "direct",
        kind: KeyKind::Flag,
        default: "1",
        help: "1: filesystemio_options=setall (O_DIRECT, async DBWR); 0: none (buffered O_SYNC)",
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
    redo_per_txn_bytes: u64,
    log_size_bytes: u64,
    dbwr: u32,
    dbwr_batch: u64,
    checkpoint: Duration,
    dirty_limit_buffers: u64,
    runtime: Duration,
    direct: bool,
}

impl OltpConfig {
    pub(crate) fn from_params(params: &Params) -> Result<OltpConfig, ParamError> {
        let block_bytes = params.size("block");
        check_sectors(params, "block", block_bytes)?;
        let size_bytes = params.size("size");
        check_whole_chunks(params, "size", size_bytes, "block", block_bytes)?;
        let redo_per_txn_bytes = params.size("log_block");
        check_sectors(params, "log_block", redo_per_txn_bytes)?;
        let log_size_bytes = params.size("log_size");
        check_sectors(params, "log_size", log_size_bytes)?;
        if redo_per_txn_bytes > log_size_bytes {
            return Err(params.impossible(
                "log_block",
                format!(
                    "log_block ({redo_per_txn_bytes} bytes) is larger than log_size \
                     ({log_size_bytes})"
                ),
            ));
        }
        // Sessions spend no CPU here (module header), so a transaction that neither reads, nor
        // waits for the log writer, nor thinks takes no time at all: the session would run
        // transactions without end at one instant.
        if params.integer("reads") == 0
            && !params.flag("log")
            && params.time("think") == Duration::ZERO
        {
            return Err(params.impossible(
                "reads",
                "with reads=0, log=0 and think=0 a transaction touches no disk and takes no \
                 time (accepted: reads above 0, log=1 or a think time)",
            ));
        }
        let cache_bytes = params.size("cache");
        if cache_bytes < block_bytes {
            return Err(params.impossible(
                "cache",
                format!("{cache_bytes} bytes holds no block of {block_bytes} bytes"),
            ));
        }
        Ok(OltpConfig {
            users: params.integer("users") as u32,
            read_fraction: params.integer("reads") as f64 / 100.0,
            ios_per_txn: params.integer("ios_per_txn") as u32,
            block_bytes,
            think: params.time("think"),
            size_bytes,
            log: params.flag("log"),
            redo_per_txn_bytes,
            log_size_bytes,
            dbwr: params.integer("dbwr") as u32,
            dbwr_batch: params.integer("dbwr_batch") as u64,
            checkpoint: params.time("checkpoint"),
            dirty_limit_buffers: cache_bytes / block_bytes,
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
        let users = self.users as usize;
        // Issuer indices in the phase: sessions, then the log writer, then the database
        // writers; posts name them so.
        let lgwr_index = users;
        let dbwr_indices: Vec<usize> = (0..self.dbwr as usize).map(|k| users + 1 + k).collect();
        let sga = Arc::new(Mutex::new(Sga::new(users, lgwr_index, dbwr_indices)));
        let mut issuers: Vec<Box<dyn Issuer>> = (0..self.users)
            .map(|user| {
                Box::new(Session {
                    name: format!("oltp/{user}"),
                    process: ProcessId(user + 1),
                    index: user as usize,
                    config: self.clone(),
                    luns: luns as u64,
                    sga: Arc::clone(&sga),
                    prng: prng.fork_indexed("oltp-user", u64::from(user)),
                    deadline: None,
                    step: Step::Access { done: 0 },
                    counters: SessionCounters::default(),
                    calls: Syscalls::default(),
                }) as Box<dyn Issuer>
            })
            .collect();
        issuers.push(Box::new(LogWriter {
            process: ProcessId(self.users + 1),
            config: self.clone(),
            log_file: self.log.then_some(luns),
            sga: Arc::clone(&sga),
            deadline: None,
            write: None,
            next_offset_bytes: 0,
            counters: LogCounters::default(),
            calls: Syscalls::default(),
        }));
        for k in 0..self.dbwr {
            issuers.push(Box::new(DbWriter {
                name: format!("oltp/dbw{k}"),
                process: ProcessId(self.users + 2 + k),
                k: k as usize,
                config: self.clone(),
                sga: Arc::clone(&sga),
                deadline: None,
                next_timeout: None,
                in_flight: Vec::new(),
                next_id: 0,
                unsynced: None,
                calls: Syscalls::default(),
                writes: 0,
            }));
        }
        Ok(WorkloadPlan {
            files,
            phases: vec![PhasePlan { name: "oltp".to_owned(), issuers, stonewall: false }],
        })
    }
}

/// A database block: (LUN, block number in its datafile).
type Block = (usize, u64);

/// What the instance's processes share (the SGA as far as I/O goes): the log buffer, the
/// dirty buffers, and who waits for whom. The simulator polls one issuer at a time, so the
/// lock is never contended and the order of events stays the simulator's.
#[derive(Debug)]
struct Sga {
    /// Redo in the log buffer not yet in a write, bytes.
    redo_bytes: u64,
    /// Sessions whose commit redo is in the log buffer, not yet in a write, in arrival order.
    commits_waiting: Vec<usize>,
    /// Per session: the write carrying its commit completed.
    commit_done: Vec<bool>,
    lgwr_index: usize,
    /// The log writer sleeps until posted.
    lgwr_idle: bool,
    /// Dirty buffers not yet being written, in checkpoint order, and the same as a set.
    checkpoint_queue: VecDeque<Block>,
    dirty: BTreeSet<Block>,
    /// Dirty buffers the database writers have been asked to write, from the queue's front.
    to_write: u64,
    /// Database writer writes submitted and not completed (their buffers are still dirty).
    writing: u64,
    writing_max: u64,
    checkpoints: u64,
    dbwr_indices: Vec<usize>,
    /// Per database writer: it sleeps until posted or its timeout.
    dbwr_idle: Vec<bool>,
    /// Sessions waiting for free buffers.
    free_waiters: Vec<usize>,
    /// Issuers posted and not yet handed to the driver.
    posts: Vec<usize>,
}

impl Sga {
    fn new(users: usize, lgwr_index: usize, dbwr_indices: Vec<usize>) -> Sga {
        Sga {
            redo_bytes: 0,
            commits_waiting: Vec::new(),
            commit_done: vec![false; users],
            lgwr_index,
            lgwr_idle: false,
            checkpoint_queue: VecDeque::new(),
            dirty: BTreeSet::new(),
            to_write: 0,
            writing: 0,
            writing_max: 0,
            checkpoints: 0,
            dbwr_idle: vec![false; dbwr_indices.len()],
            dbwr_indices,
            free_waiters: Vec::new(),
            posts: Vec::new(),
        }
    }

    fn dirty_buffers(&self) -> u64 {
        self.dirty.len() as u64 + self.writing
    }

    /// Wakes every idle database writer.
    fn post_dbwr(&mut self) {
        for (k, idle) in self.dbwr_idle.iter_mut().enumerate() {
            if std::mem::take(idle) {
                self.posts.push(self.dbwr_indices[k]);
            }
        }
    }

    /// A checkpoint: every buffer dirty now is to be written.
    fn checkpoint(&mut self) {
        self.checkpoints += 1;
        self.to_write = self.checkpoint_queue.len() as u64;
        self.post_dbwr();
    }

    /// The next buffer a database writer is to write, if any.
    fn take_write(&mut self) -> Option<Block> {
        if self.to_write == 0 {
            return None;
        }
        let block = self.checkpoint_queue.pop_front()?;
        self.dirty.remove(&block);
        self.to_write -= 1;
        self.writing += 1;
        self.writing_max = self.writing_max.max(self.writing);
        Some(block)
    }

    /// A database writer's write completed: its buffer is clean; sessions waiting for a
    /// free buffer go on once there is one.
    fn write_done(&mut self, dirty_limit_buffers: u64) {
        self.writing -= 1;
        if self.dirty_buffers() < dirty_limit_buffers {
            let waiters = std::mem::take(&mut self.free_waiters);
            self.posts.extend(waiters);
        }
    }
}

fn lock(sga: &Mutex<Sga>) -> MutexGuard<'_, Sga> {
    // Only a panic in another issuer poisons it, and the simulation has failed then anyway.
    sga.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Where a session is in its transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Block accesses, `done` of them so far.
    Access { done: u32 },
    /// Waiting for a free buffer before access `done`.
    FreeBuffer { done: u32 },
    /// Waiting on `log file sync` since the instant.
    LogFileSync { since: Instant },
    /// Idle after the commit until the instant, once it is set.
    Think(Option<Instant>),
}

#[derive(Debug, Default)]
struct SessionCounters {
    transactions: u64,
    log_file_sync_ns: u64,
    free_buffer_waits: u64,
}

/// One database session (a dedicated server process).
#[derive(Debug)]
struct Session {
    name: String,
    process: ProcessId,
    index: usize,
    config: OltpConfig,
    luns: u64,
    sga: Arc<Mutex<Sga>>,
    prng: Prng,
    deadline: Option<Instant>,
    step: Step,
    counters: SessionCounters,
    calls: Syscalls,
}

impl Session {
    /// The commit: redo into the log buffer, LGWR posted; the session sleeps on `log file
    /// sync` unless there is no log.
    fn commit(&mut self, now: Instant) {
        if !self.config.log {
            self.counters.transactions += 1;
            self.step = Step::Think(None);
            return;
        }
        let mut sga = lock(&self.sga);
        sga.redo_bytes += self.config.redo_per_txn_bytes;
        sga.commits_waiting.push(self.index);
        if std::mem::take(&mut sga.lgwr_idle) {
            let lgwr = sga.lgwr_index;
            sga.posts.push(lgwr);
        }
        self.step = Step::LogFileSync { since: now };
    }
}

impl Issuer for Session {
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
            // Without a log a transaction is done when its last access returns, even when
            // that is at the deadline.
            if self.step == (Step::Access { done: self.config.ios_per_txn }) && !self.config.log {
                self.commit(now);
            }
            if now >= deadline {
                return Poll::Done;
            }
            match self.step {
                Step::Access { done } if done >= self.config.ios_per_txn => self.commit(now),
                Step::Access { done } | Step::FreeBuffer { done } => {
                    let config = &self.config;
                    let read = self.prng.chance(config.read_fraction);
                    let lun = self.prng.below(self.luns) as usize;
                    let block = self.prng.below(config.size_bytes / config.block_bytes);
                    if read {
                        self.step = Step::Access { done: done + 1 };
                        let offset = block * config.block_bytes;
                        let (size, direct) = (config.block_bytes, config.direct);
                        return self.calls.call(
                            IoKind::Read,
                            Place::File(lun),
                            offset,
                            size,
                            direct,
                        );
                    }
                    let mut sga = lock(&self.sga);
                    if sga.dirty.contains(&(lun, block)) {
                        self.step = Step::Access { done: done + 1 };
                    } else if sga.dirty_buffers() >= config.dirty_limit_buffers {
                        // `free buffer waits`: DBWR is asked for a batch of the oldest.
                        if self.step != (Step::FreeBuffer { done }) {
                            self.counters.free_buffer_waits += 1;
                        }
                        sga.free_waiters.push(self.index);
                        sga.to_write = sga.to_write.max(config.dbwr_batch);
                        sga.post_dbwr();
                        self.step = Step::FreeBuffer { done };
                        return Poll::Sleep { until: deadline };
                    } else {
                        sga.dirty.insert((lun, block));
                        sga.checkpoint_queue.push_back((lun, block));
                        self.step = Step::Access { done: done + 1 };
                    }
                }
                Step::LogFileSync { since } => {
                    let mut sga = lock(&self.sga);
                    if !std::mem::take(&mut sga.commit_done[self.index]) {
                        return Poll::Sleep { until: deadline };
                    }
                    self.counters.transactions += 1;
                    self.counters.log_file_sync_ns += now.saturating_since(since).as_nanos();
                    self.step = Step::Think(None);
                }
                Step::Think(None) if self.config.think > Duration::ZERO => {
                    self.step = Step::Think(Some(now.saturating_add(self.config.think)));
                }
                Step::Think(Some(until)) if now < until => {
                    return Poll::Sleep { until: until.min(deadline) };
                }
                Step::Think(_) => self.step = Step::Access { done: 0 },
            }
        }
    }

    fn complete(&mut self, _now: Instant, io: IoId) {
        self.calls.returned(io);
    }

    fn take_posts(&mut self, posted: &mut Vec<usize>) {
        posted.append(&mut lock(&self.sga).posts);
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.counters;
        vec![
            ("transactions", c.transactions),
            ("log_file_sync_waits", c.transactions),
            ("log_file_sync_ns", c.log_file_sync_ns),
            ("free_buffer_waits", c.free_buffer_waits),
        ]
    }

    fn finishing(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|deadline| now >= deadline)
    }
}

/// The log writer's write in progress.
#[derive(Debug)]
struct LogWrite {
    /// The sessions whose commits it carries.
    commits: Vec<usize>,
    /// With buffered O_SYNC (`direct=0`), whether the write's sync was made.
    synced: bool,
}

#[derive(Debug, Default)]
struct LogCounters {
    writes: u64,
    commits: u64,
    commits_max: u64,
    switches: u64,
}

/// LGWR.
#[derive(Debug)]
struct LogWriter {
    process: ProcessId,
    config: OltpConfig,
    /// The redo log's index in the plan's files, when there is one.
    log_file: Option<usize>,
    sga: Arc<Mutex<Sga>>,
    deadline: Option<Instant>,
    write: Option<LogWrite>,
    next_offset_bytes: u64,
    counters: LogCounters,
    calls: Syscalls,
}

impl Issuer for LogWriter {
    fn name(&self) -> &str {
        "oltp/lgwr"
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
        let Some(log_file) = self.log_file else { return Poll::Done };
        if let Some(write) = &mut self.write {
            if !self.config.direct && !write.synced {
                write.synced = true;
                return self.calls.call(IoKind::Sync, Place::File(log_file), 0, 0, false);
            }
            // On disk: post every session it carried.
            let mut sga = lock(&self.sga);
            for &user in &write.commits {
                sga.commit_done[user] = true;
                sga.posts.push(user);
            }
            self.write = None;
        }
        if now >= deadline {
            return Poll::Done;
        }
        let mut sga = lock(&self.sga);
        if sga.commits_waiting.is_empty() {
            sga.lgwr_idle = true;
            return Poll::Sleep { until: deadline };
        }
        sga.lgwr_idle = false;
        let commits = std::mem::take(&mut sga.commits_waiting);
        let redo = std::mem::take(&mut sga.redo_bytes);
        let log_size = self.config.log_size_bytes;
        let size = redo.div_ceil(REDO_BLOCK_BYTES).saturating_mul(REDO_BLOCK_BYTES).min(log_size);
        if self.next_offset_bytes + size > log_size {
            // Log switch: the next log (here the same file again) from its start, and a
            // checkpoint so the old log's changes reach the datafiles.
            self.next_offset_bytes = 0;
            self.counters.switches += 1;
            sga.checkpoint();
        }
        drop(sga);
        let offset = self.next_offset_bytes;
        self.next_offset_bytes += size;
        let carried = commits.len() as u64;
        self.counters.writes += 1;
        self.counters.commits += carried;
        self.counters.commits_max = self.counters.commits_max.max(carried);
        self.write = Some(LogWrite { commits, synced: false });
        self.calls.call(IoKind::Write, Place::File(log_file), offset, size, self.config.direct)
    }

    fn complete(&mut self, _now: Instant, io: IoId) {
        self.calls.returned(io);
    }

    fn take_posts(&mut self, posted: &mut Vec<usize>) {
        posted.append(&mut lock(&self.sga).posts);
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.counters;
        vec![
            ("log_writes", c.writes),
            ("log_write_commits", c.commits),
            ("log_write_commits_max", c.commits_max),
            ("log_switches", c.switches),
        ]
    }

    fn finishing(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|deadline| now >= deadline)
    }
}

/// A DBWn process.
#[derive(Debug)]
struct DbWriter {
    name: String,
    process: ProcessId,
    /// Its number: DBW0 runs the timeout checkpoints and reports the instance-wide counters.
    k: usize,
    config: OltpConfig,
    sga: Arc<Mutex<Sga>>,
    deadline: Option<Instant>,
    next_timeout: Option<Instant>,
    /// Async writes in flight.
    in_flight: Vec<IoId>,
    next_id: u64,
    /// With buffered O_SYNC (`direct=0`): the block just written, whose sync is next.
    unsynced: Option<Block>,
    calls: Syscalls,
    writes: u64,
}

impl DbWriter {
    fn write_io(&self, (lun, block): Block) -> (Place, u64, u64) {
        let size = self.config.block_bytes;
        (Place::File(lun), block * size, size)
    }
}

impl Issuer for DbWriter {
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
        let config = &self.config;
        let deadline = *self.deadline.get_or_insert_with(|| now.saturating_add(config.runtime));
        let timeout =
            self.next_timeout.get_or_insert_with(|| now.saturating_add(config.checkpoint));
        if let Some(block) = self.unsynced.take() {
            let (place, _, _) = self.write_io(block);
            return self.calls.call(IoKind::Sync, place, 0, 0, false);
        }
        if now >= deadline {
            return if self.in_flight.is_empty() { Poll::Done } else { Poll::Wait };
        }
        let mut sga = lock(&self.sga);
        let k = self.k;
        if k == 0 && now >= *timeout {
            *timeout = now.saturating_add(config.checkpoint);
            sga.checkpoint();
        }
        // The others are woken by DBW0's checkpoints and by sessions short of buffers.
        let until = if k == 0 { (*timeout).min(deadline) } else { deadline };
        sga.dbwr_idle[k] = false;
        if config.direct {
            // io_submit of a batch; more as some complete.
            if (self.in_flight.len() as u64) < config.dbwr_batch
                && let Some(block) = sga.take_write()
            {
                drop(sga);
                let (place, offset_bytes, size_bytes) = self.write_io(block);
                let id = IoId(self.next_id);
                self.next_id += 1;
                self.in_flight.push(id);
                self.writes += 1;
                return Poll::Submit(Io {
                    id,
                    kind: IoKind::Write,
                    place,
                    offset_bytes,
                    size_bytes,
                    direct: true,
                    flags: RequestFlags::SYNC,
                });
            }
            if !self.in_flight.is_empty() {
                return Poll::Wait;
            }
        } else if let Some(block) = sga.take_write() {
            drop(sga);
            let (place, offset, size) = self.write_io(block);
            self.unsynced = Some(block);
            self.writes += 1;
            return self.calls.call(IoKind::Write, place, offset, size, false);
        }
        sga.dbwr_idle[k] = true;
        Poll::Sleep { until }
    }

    fn complete(&mut self, _now: Instant, io: IoId) {
        if let Some(at) = self.in_flight.iter().position(|&id| id == io) {
            self.in_flight.swap_remove(at);
            lock(&self.sga).write_done(self.config.dirty_limit_buffers);
            return;
        }
        self.calls.returned(io);
        if self.unsynced.is_none() {
            // The sync of a buffered write returned: the block is on disk.
            lock(&self.sga).write_done(self.config.dirty_limit_buffers);
        }
    }

    fn take_posts(&mut self, posted: &mut Vec<usize>) {
        posted.append(&mut lock(&self.sga).posts);
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut counters = vec![("dbwr_writes", self.writes)];
        if self.k == 0 {
            let sga = lock(&self.sga);
            counters.push(("dbwr_in_flight_max", sga.writing_max));
            counters.push(("checkpoints", sga.checkpoints));
        }
        counters
    }

    fn finishing(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|deadline| now >= deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Record, Run, parse_error, plan, plan_error, run};

    fn targets() -> Vec<Target> {
        (0..4)
            .map(|i| Target { name: format!("lun{i}"), capacity_bytes: 4 << 30, zones: None })
            .collect()
    }

    fn oltp(text: &str) -> Run {
        run(plan(text, &targets()), |_| Duration::from_micros(500))
    }

    /// The issuer index of the log writer for `users` sessions (the first DBWR follows it).
    fn lgwr(users: usize) -> usize {
        users
    }

    // Proves the datafiles go one per LUN over the first `luns` devices (all by default),
    // exist before the run, the redo log sits on device 0 after them, and the phase has the
    // sessions, one log writer and `dbwr` database writers, each its own process.
    #[test]
    fn files_and_processes() {
        let plan = plan("oltp:size=64m,dbwr=2", &targets());
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
        let issuers = &plan.phases[0].issuers;
        let names: Vec<&str> = issuers.iter().map(|i| i.name()).collect();
        assert_eq!(names[9..], ["oltp/9", "oltp/lgwr", "oltp/dbw0", "oltp/dbw1"]);
        let processes: BTreeSet<u32> = issuers.iter().map(|i| i.process().0).collect();
        assert_eq!(processes.len(), 13, "one process each");
        let two = crate::testing::plan("oltp:luns=2,log=0", &targets());
        assert_eq!(two.files.len(), 2);
    }

    // Proves group commit: with 10 sessions committing at once, one log write carries several
    // commits, the log writer has one write in flight and writes the log sequentially, each
    // write the redo of the commits it carries rounded to 512 bytes, and sessions' reads are
    // single synchronous blocks; the sessions count a transaction per carried commit.
    #[test]
    fn one_log_write_carries_many_commits() {
        let run = oltp("oltp:users=10,reads=50,log_block=1536,runtime=500ms,size=64m");
        let records = run.phase(0);
        let log: Vec<&Record> = records.iter().filter(|r| r.io.place == Place::File(4)).collect();
        assert!(log.iter().all(|r| r.issuer == lgwr(10) && r.in_flight == 1));
        assert!(log.iter().all(|r| r.io.kind == IoKind::Write && r.io.size_bytes % 512 == 0));
        let mut offset = 0;
        for record in &log {
            assert_eq!(record.io.offset_bytes, offset, "one sequential redo stream");
            offset += record.io.size_bytes;
        }
        let writes = run.counter(0, "log_writes");
        let carried = run.counter(0, "log_write_commits");
        assert_eq!(writes, log.len() as u64);
        assert_eq!(offset, carried * 1536, "each write is the redo of its commits");
        assert!(carried > writes + writes / 2, "mean group commit {carried}/{writes}");
        assert!(run.counter(0, "log_write_commits_max") >= 5);
        // Sessions that only change cached blocks all commit at once: every write carries
        // all ten, written back to back.
        let lockstep = oltp("oltp:users=10,reads=0,runtime=100ms,size=64m");
        let writes = lockstep.counter(0, "log_writes");
        assert_eq!(writes, 200);
        assert_eq!(lockstep.counter(0, "log_write_commits"), 10 * writes);
        assert_eq!(lockstep.counter(0, "log_write_commits_max"), 10);
        let transactions = run.counter(0, "transactions");
        // Commits carried by a write still in flight at the deadline are not counted.
        assert!(transactions <= carried && transactions + 10 >= carried);
        assert_eq!(run.counter(0, "log_file_sync_waits"), transactions);
        let reads: Vec<&Record> = records.iter().filter(|r| r.issuer < 10).collect();
        assert!(reads.iter().all(|r| r.io.kind == IoKind::Read && r.io.size_bytes == 4096));
        assert!(reads.iter().all(|r| r.in_flight == 1 && r.io.direct));
    }

    // Proves the database writer writes the dirtied blocks only at checkpoints (its timeout),
    // in bursts with many writes in flight (up to dbwr_batch), and that `dbwr_in_flight_max`
    // says so; with direct=0 it writes one block at a time, each followed by its sync.
    #[test]
    fn database_writer_bursts_at_checkpoints() {
        let text = "oltp:users=10,checkpoint=100ms,dbwr_batch=32,runtime=350ms,size=64m";
        let run = oltp(text);
        let dbwr: Vec<Record> = run.phase(0).into_iter().filter(|r| r.issuer == 11).collect();
        assert!(!dbwr.is_empty());
        assert!(dbwr.iter().all(|r| r.io.kind == IoKind::Write && r.io.size_bytes == 4096));
        assert!(dbwr.iter().all(|r| r.submitted >= Instant::from_millis(100)), "not before");
        let most = dbwr.iter().map(|r| r.in_flight).max().unwrap() as u64;
        assert_eq!(most, 32);
        assert_eq!(run.counter(0, "dbwr_in_flight_max"), 32);
        assert_eq!(run.counter(0, "checkpoints"), 3);
        assert_eq!(run.counter(0, "dbwr_writes"), dbwr.len() as u64);
        let buffered = oltp(&format!("{text},direct=0"));
        let dbwr: Vec<Record> = buffered.phase(0).into_iter().filter(|r| r.issuer == 11).collect();
        assert!(dbwr.iter().all(|r| r.in_flight == 1));
        let kinds: Vec<IoKind> = dbwr.iter().take(4).map(|r| r.io.kind).collect();
        assert_eq!(kinds, [IoKind::Write, IoKind::Sync, IoKind::Write, IoKind::Sync]);
        assert_eq!(buffered.counter(0, "dbwr_in_flight_max"), 1);
        // Two writers share the checkpoint's buffers, each with its own batch in flight.
        let two = oltp(&format!("{text},dbwr=2"));
        let writes_of = |issuer| two.phase(0).iter().filter(|r| r.issuer == issuer).count();
        assert!(writes_of(11) > 0 && writes_of(12) > 0);
        assert_eq!(two.counter(0, "dbwr_in_flight_max"), 64);
    }

    // Proves a buffer cache with few buffers makes sessions wait for free buffers and the
    // database writer write long before its first timeout; and that passing the end of the
    // redo log is a log switch that asks for a checkpoint.
    #[test]
    fn free_buffer_waits_and_log_switches_start_writes() {
        let run = oltp("oltp:users=4,reads=0,cache=64k,checkpoint=10s,runtime=50ms,size=64m");
        assert!(run.counter(0, "free_buffer_waits") > 0);
        assert!(run.counter(0, "dbwr_writes") > 0);
        assert_eq!(run.counter(0, "checkpoints"), 0);
        let switching = oltp("oltp:users=4,log_size=64k,checkpoint=10s,runtime=50ms,size=64m");
        let switches = switching.counter(0, "log_switches");
        assert!(switches > 0);
        assert_eq!(switching.counter(0, "checkpoints"), switches);
    }

    // Proves sessions start nothing once runtime has passed, and think time spaces the
    // transactions.
    #[test]
    fn runtime_stops_and_think_spaces_transactions() {
        let run = oltp("oltp:users=1,reads=100,ios_per_txn=1,think=9ms,runtime=100ms,size=64m");
        let records = run.phase(0);
        assert!(records.iter().all(|r| r.submitted < Instant::from_millis(100)));
        // A read and a log write, 0.5 ms each, and 9 ms of thought per transaction.
        assert_eq!(run.counter(0, "transactions"), 10);
        let starts: Vec<u64> = records
            .iter()
            .filter(|r| r.issuer == 0)
            .map(|r| r.submitted.as_nanos() / 1_000_000)
            .collect();
        assert_eq!(starts, [0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
        let unlogged = oltp("oltp:users=2,reads=100,ios_per_txn=4,log=0,runtime=20ms,size=64m");
        assert_eq!(unlogged.counter(0, "transactions") * 4, unlogged.phase(0).len() as u64);
    }

    // Proves the same seed draws the same operations and sessions draw different ones.
    #[test]
    fn sessions_draw_from_their_own_streams() {
        let text = "oltp:users=2,checkpoint=5ms,runtime=20ms,size=64m";
        let first = oltp(text).records;
        assert_eq!(first, oltp(text).records);
        let of_user = |user| {
            first.iter().filter(|r| r.issuer == user).map(|r| r.io.offset_bytes).collect::<Vec<_>>()
        };
        assert_ne!(of_user(0), of_user(1));
    }

    // Proves bad input names the key.
    #[test]
    fn bad_input_names_the_key() {
        assert!(parse_error("oltp:users=0").contains("users=0 is not valid"));
        assert!(parse_error("oltp:reads=101").contains("reads=101 is not valid"));
        assert!(parse_error("oltp:ios_per_txn=0").contains("ios_per_txn=0 is not valid"));
        assert!(parse_error("oltp:block=3k,size=10k").contains("size: 10240 bytes"));
        assert!(parse_error("oltp:block=1000").contains("block: 1000 bytes"));
        assert!(parse_error("oltp:log_size=4k").contains("log_block: log_block (8192 bytes)"));
        assert!(parse_error("oltp:runtime=0").contains("runtime=0 is not valid"));
        assert!(parse_error("oltp:dbwr=0").contains("dbwr=0 is not valid"));
        assert!(parse_error("oltp:cache=2k").contains("cache: 2048 bytes holds no block"));
        // Sweep seed 5322 ran such a load without end at one instant.
        assert!(parse_error("oltp:reads=0,log=0").contains("reads: with reads=0, log=0"));
        assert!(crate::WorkloadSpec::parse("oltp:reads=0,log=0,think=1ms").is_ok());
        let plan_error = |text: &str| plan_error(text, &targets());
        assert!(plan_error("oltp:luns=5").contains("luns: 5 devices asked for"));
        assert!(plan_error("oltp:size=4g").contains("size: the files on lun0 need"));
    }
}
