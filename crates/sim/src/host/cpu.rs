//! The host's processors: what a call, a page, a bio, a request and an interrupt cost in CPU
//! time, who is charged, and when a processor is free to run a call's work
//! (host-mechanisms.md §6 and §7 "CPU").
//!
//! # Costs (host keys, defaults from §6, all [U] there)
//!
//! | key | charged | what the kernel did |
//! |---|---|---|
//! | `syscall` | once per call, system time | entering and leaving `read`/`write` |
//! | `copy_rate` | per byte a call copies, system time | `copy_to_user`/`copy_from_user` (0.2–0.7 ns/B) |
//! | `user` | once per call, user time | the tool's own loop |
//! | `page_cost` | per page a read allocates (a miss, read-ahead included) and per page a write dirties | page allocation, radix tree, LRU, lock, dirty and write-back accounting, reclaim (1–3 µs) |
//! | `bio_cost` | per bio submitted, merged or not | bio allocation, `generic_make_request`, merge lookup, its completion (1–2 µs) |
//! | `request_cost` | per request allocated, plus the scheduler's [`cpu_cost`](elevator_sched::SchedulerKind::cpu_cost) | request allocation, elevator insert and dispatch, SCSI command, `queuecommand`, completion softirq |
//! | `interrupt_cost` | per request completed | the command's completion interrupt (2–10 µs, one per command) |
//!
//! §6 gives a request 5–20 µs *with its interrupt*, so a request's whole cost is
//! `request_cost + interrupt_cost`; the presets keep that sum inside the range.
//!
//! # Who is charged (§6 "What `iozone -+u` and dd user/sys count")
//!
//! The process that made the call pays its system call, copies and page work; the process a
//! bio is submitted as pays the bio and, when the bio needed a new request, the request — so a
//! reader pays its read-ahead, a throttled writer its own write-back and a direct caller its
//! submission, while the flusher's write-back is charged to the flusher
//! (pdflush's threads and kjournald, [`is_host_process`]), never to a workload process. A request's completion
//! interrupt is charged to the process whose bio created the request.
//!
//! # Processors
//!
//! Work runs on the first free of `cpus` processors. A call's own work (system call, copy,
//! user time) runs when it finishes, together with the system time charged to its process
//! since its previous call (pages, bios, requests, interrupts): a copy-bound reader is slowed by
//! its per-page and per-request work. A direct call's work (with the system time charged to its
//! process since its previous call) runs first, and its bios reach the queue when it ends: a
//! process is busy during its calls' work, so it never uses more than one processor. The work
//! of the host's own processes (the flusher) occupies a processor from the instant it is
//! charged.
//!
//! # Deviations from Linux
//!
//! * No tick sampling: time is charged exactly, where §6 says the kernel charged each 1 ms tick
//!   to whichever task was running, user or system by the interrupted mode.
//! * A completion interrupt is charged to the process whose bio created the request (if that is
//!   the flusher, to the flusher), not to whichever task the interrupt happened to hit; no
//!   interrupt lands on an idle processor.
//! * One cost per page, per bio, per request: no per-CPU caches, no cache-warmth or lock
//!   contention; a cache hit costs only its copy (no per-page lookup cost), reclaim is charged
//!   with the page's allocation rather than when and by whom it is done (kswapd or direct
//!   reclaim).
//! * A request that a grown request fuses with later (`merge_neighbour`) was charged as
//!   allocated; the kernel frees it without completing it, which costs less.
//! * When several processes are let back into a full request pool at one completion, the
//!   requests their parked bios allocate are charged to the first of them.
//! * System time charged between a process's calls runs on a processor at the end of its next
//!   call, with that call's copy, not at the instant it was spent (before a read-ahead's I/O
//!   started, say): the device is never kept waiting for a busy processor.
//! * No interrupt coalescing: one interrupt per command.

use crate::LookupMap;

use elevator_core::{Duration, Instant, Op, ProcessId, SECTOR_SIZE_BYTES};
use elevator_sched::SchedulerKind;

use super::cache::PAGE_BYTES;
use super::spec::HostSpec;
use super::{Host, HostAction, HostBio};

/// A process's CPU time and the system time it owes a processor.
#[derive(Clone, Copy, Debug, Default)]
struct Account {
    time: CpuTime,
    backlog_ns: u64,
}

/// CPU time a process used, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuTime {
    pub(crate) user_ns: u64,
    pub(crate) sys_ns: u64,
}

/// The costs of a host, resolved from its keys.
#[derive(Clone, Copy, Debug)]
struct Costs {
    copy_rate_bytes_per_s: u64,
    syscall: Duration,
    user: Duration,
    page: Duration,
    bio: Duration,
    request: Duration,
    interrupt: Duration,
}

/// The processors, the costs they charge and what each process has used.
#[derive(Debug)]
pub(crate) struct CpuModel {
    /// When each processor finishes the work it was given.
    cpu_free_at: Vec<Instant>,
    /// CPU time per process, with the system time charged to it outside a call's own work,
    /// already in its account but not yet run on a processor (its next call runs it): indexed
    /// by process id for the workload's (small, dense ids; several charges per I/O), in a map
    /// for the host's own (ids at the top of the space).
    accounts: Vec<Account>,
    host_accounts: LookupMap<ProcessId, Account>,
    costs: Costs,
}

impl CpuModel {
    /// The processors and costs of `spec`.
    pub(crate) fn new(spec: &HostSpec) -> CpuModel {
        let params = &spec.params;
        CpuModel {
            cpu_free_at: vec![Instant::ZERO; params.integer("cpus") as usize],
            accounts: Vec::new(),
            host_accounts: LookupMap::default(),
            costs: Costs {
                copy_rate_bytes_per_s: params.size("copy_rate"),
                syscall: params.time("syscall"),
                user: params.time("user"),
                page: params.time("page_cost"),
                bio: params.time("bio_cost"),
                request: params.time("request_cost"),
                interrupt: params.time("interrupt_cost"),
            },
        }
    }

    /// Runs `work` on the first free processor, from `now` at the earliest; returns when it
    /// ends. Ties go to the lowest-numbered processor, so runs are reproducible.
    fn occupy(&mut self, now: Instant, work: Duration) -> Instant {
        let (index, &free_at) = self
            .cpu_free_at
            .iter()
            .enumerate()
            .min_by_key(|&(index, free)| (*free, index))
            .expect("at least one processor");
        let end = now.max(free_at) + work;
        self.cpu_free_at[index] = end;
        end
    }

    /// Charges `process` `sys_ns` of system time spent outside a call's own work: a workload
    /// process runs it with its next call, the host's own processes at once.
    fn charge_system(&mut self, now: Instant, process: ProcessId, sys_ns: u64) {
        if sys_ns == 0 {
            return;
        }
        let account = self.account(process);
        account.time.sys_ns += sys_ns;
        if is_host_process(process) {
            self.occupy(now, Duration::from_nanos(sys_ns));
        } else {
            account.backlog_ns += sys_ns;
        }
    }

    /// The account of `process`, made on first use.
    fn account(&mut self, process: ProcessId) -> &mut Account {
        /// Ids below this are kept in the vector (workload processes count from 0 or 1).
        const DENSE_IDS: usize = 1 << 16;
        let index = process.0 as usize;
        if index < self.accounts.len() {
            // The usual case: a workload process seen before.
            return &mut self.accounts[index];
        }
        if index < DENSE_IDS && !is_host_process(process) {
            if index >= self.accounts.len() {
                self.accounts.resize(index + 1, Account::default());
            }
            &mut self.accounts[index]
        } else {
            self.host_accounts.entry(process).or_default()
        }
    }

    fn copy_time(&self, bytes: u64) -> Duration {
        let copy_ns =
            u128::from(bytes) * 1_000_000_000 / u128::from(self.costs.copy_rate_bytes_per_s);
        Duration::from_nanos(copy_ns as u64)
    }
}

/// Whether `process` is one of the host's own (a pdflush thread, a device's kjournald): its
/// work occupies a processor but is never part of a workload's figures. They take the top of
/// the process-id space, far above any workload's.
pub(crate) fn is_host_process(process: ProcessId) -> bool {
    process.0 >= super::journal::kjournald_process(super::journal::MAX_DEVICES - 1).0
}

impl Host {
    /// CPU time `process` has used so far.
    pub(crate) fn cpu_time(&self, process: ProcessId) -> CpuTime {
        let cpu = &self.cpu;
        let account = match cpu.accounts.get(process.0 as usize) {
            Some(account) => Some(account),
            None => cpu.host_accounts.get(&process),
        };
        account.map(|account| account.time).unwrap_or_default()
    }

    /// Charges `process` one direct (O_DIRECT) call: its system call and user time, run with
    /// its pending system time on the first free processor from `now`. Returns when that work
    /// ends: the call reaches the block layer then, and the process is busy until then, so it
    /// never uses more than one processor. Its bios and requests are charged as they are
    /// submitted ([`Host::charge_bios`]).
    pub(crate) fn charge_direct(&mut self, now: Instant, process: ProcessId) -> Instant {
        let cpu = &mut self.cpu;
        let (syscall, user) = (cpu.costs.syscall, cpu.costs.user);
        let account = cpu.account(process);
        account.time.sys_ns += syscall.as_nanos();
        account.time.user_ns += user.as_nanos();
        let backlog = Duration::from_nanos(std::mem::take(&mut account.backlog_ns));
        cpu.occupy(now, syscall + user + backlog)
    }

    /// Charges `process` for `bios` bios it submitted at `now`, of which `requests` needed a
    /// new request (the others merged): `bio_cost` each, and `request_cost` plus the
    /// scheduler's own cost per request.
    pub(crate) fn charge_bios(
        &mut self,
        now: Instant,
        process: ProcessId,
        bios: u64,
        requests: u64,
        scheduler: SchedulerKind,
    ) {
        let costs = self.cpu.costs;
        let per_request = costs.request + scheduler.cpu_cost();
        let sys_ns = costs.bio.as_nanos() * bios + per_request.as_nanos() * requests;
        self.cpu.charge_system(now, process, sys_ns);
    }

    /// Charges the completion interrupt of a request `process` created.
    pub(crate) fn charge_completion(&mut self, now: Instant, process: ProcessId) {
        let interrupt = self.cpu.costs.interrupt.as_nanos();
        self.cpu.charge_system(now, process, interrupt);
    }

    /// Charges `process` the page-cache work of a write of `size` bytes at `offset`: every
    /// page it touches is looked up or allocated, locked and dirtied.
    pub(super) fn charge_written_pages(
        &mut self,
        now: Instant,
        process: ProcessId,
        offset: u64,
        size: u64,
    ) {
        let pages = (offset + size).div_ceil(PAGE_BYTES) - offset / PAGE_BYTES;
        let sys_ns = self.cpu.costs.page.as_nanos() * pages;
        self.cpu.charge_system(now, process, sys_ns);
    }

    /// Charges `process` the page allocation of the pages its read bios fill (misses and
    /// read-ahead).
    pub(super) fn charge_read_pages(&mut self, process: ProcessId, bios: &[HostBio]) {
        let read_sectors: u64 = bios
            .iter()
            .filter(|bio| bio.op == Op::Read)
            .map(|bio| u64::from(bio.sector_count))
            .sum();
        let pages = (read_sectors * SECTOR_SIZE_BYTES).div_ceil(PAGE_BYTES);
        let sys_ns = self.cpu.costs.page.as_nanos() * pages;
        // Readers are workload processes: this only joins their backlog, whatever the instant.
        self.cpu.charge_system(Instant::ZERO, process, sys_ns);
    }

    /// The call of `process` for `op` is done once its CPU work — system call, copy of `bytes`,
    /// user time, and the system time charged to it since its last call — has run on the first
    /// free processor.
    pub(super) fn finish(&mut self, now: Instant, op: u64, process: ProcessId, bytes: u64) {
        let cpu = &mut self.cpu;
        let sys = cpu.costs.syscall + cpu.copy_time(bytes);
        let user = cpu.costs.user;
        let account = cpu.account(process);
        account.time.sys_ns += sys.as_nanos();
        account.time.user_ns += user.as_nanos();
        let backlog = Duration::from_nanos(std::mem::take(&mut account.backlog_ns));
        let at = cpu.occupy(now, sys + user + backlog);
        self.actions.push(HostAction::Complete { op, at });
    }
}
