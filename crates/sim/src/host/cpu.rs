//! The host's processors: what a call, a bio or a request costs in CPU time, who is charged,
//! and when a processor is free to run the next call's work.
//!
//! Every call costs `syscall` of system time plus its copy at `copy_rate` and `user` of user
//! time, run on the first free of `cpus` processors (so cached reads complete at memory speed,
//! and many processes contend for few CPUs); every request submitted costs `request_cost` plus
//! the scheduler's own cost (its registry entry's
//! [`cpu_cost`](elevator_sched::SchedulerKind::cpu_cost)).

use std::collections::BTreeMap;

use elevator_core::{Duration, Instant, ProcessId};
use elevator_sched::SchedulerKind;

use super::spec::HostSpec;
use super::{Host, HostAction};

/// CPU time a process used, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuTime {
    pub(crate) user_ns: u64,
    pub(crate) sys_ns: u64,
}

/// The processors, the costs they charge and what each process has used.
#[derive(Debug)]
pub(crate) struct CpuModel {
    /// When each processor finishes the work it was given.
    cpu_free_at: Vec<Instant>,
    /// CPU time per process.
    accounts: BTreeMap<ProcessId, CpuTime>,
    copy_rate_bytes_per_s: u64,
    syscall: Duration,
    user: Duration,
    request_cost: Duration,
}

impl CpuModel {
    /// The processors and costs of `spec`.
    pub(crate) fn new(spec: &HostSpec) -> CpuModel {
        let params = &spec.params;
        CpuModel {
            cpu_free_at: vec![Instant::ZERO; params.integer("cpus") as usize],
            accounts: BTreeMap::new(),
            copy_rate_bytes_per_s: params.size("copy_rate"),
            syscall: params.time("syscall"),
            user: params.time("user"),
            request_cost: params.time("request_cost"),
        }
    }
}

impl Host {
    /// CPU time `process` has used so far.
    pub(crate) fn cpu_time(&self, process: ProcessId) -> CpuTime {
        self.cpu.accounts.get(&process).copied().unwrap_or_default()
    }

    /// Charges `process` the system time of one direct call that made `requests` requests.
    pub(crate) fn charge_direct(
        &mut self,
        process: ProcessId,
        requests: u64,
        scheduler: SchedulerKind,
    ) {
        let cpu = &mut self.cpu;
        let per_request = cpu.request_cost + scheduler.cpu_cost();
        let account = cpu.accounts.entry(process).or_default();
        account.sys_ns += cpu.syscall.as_nanos() + per_request.as_nanos() * requests;
        account.user_ns += cpu.user.as_nanos();
    }

    /// The call of `process` for `op` is done once its CPU work (system call, copy of `bytes`,
    /// user time) has run on the first free processor.
    pub(super) fn finish(&mut self, now: Instant, op: u64, process: ProcessId, bytes: u64) {
        let cpu = &mut self.cpu;
        let copy_ns =
            (u128::from(bytes) * 1_000_000_000 / u128::from(cpu.copy_rate_bytes_per_s)) as u64;
        let sys = cpu.syscall + Duration::from_nanos(copy_ns);
        let work = sys + cpu.user;
        let (index, &free_at) = cpu
            .cpu_free_at
            .iter()
            .enumerate()
            .min_by_key(|&(index, free)| (*free, index))
            .expect("at least one processor");
        let start = now.max(free_at);
        let at = start + work;
        cpu.cpu_free_at[index] = at;
        let time = cpu.accounts.entry(process).or_default();
        time.sys_ns += sys.as_nanos();
        time.user_ns += cpu.user.as_nanos();
        self.actions.push(HostAction::Complete { op, at });
    }

    /// Charges `process` for requests the host submitted on its behalf.
    pub(crate) fn charge_requests(
        &mut self,
        process: ProcessId,
        requests: u64,
        scheduler: SchedulerKind,
    ) {
        let per_request = self.cpu.request_cost + scheduler.cpu_cost();
        self.cpu.accounts.entry(process).or_default().sys_ns += per_request.as_nanos() * requests;
    }
}
