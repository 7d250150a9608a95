//! The iSCSI target: iSCSI Enterprise Target (IET) 0.4.15-1.4.19, the usual Linux target of
//! 2005-2010 (`workload-mechanisms.md` §3.1).
//!
//! Each target has a pool of `Wthreads` kernel threads (`istiod<tid>`, 8 by default); the
//! network thread puts each SCSI command on the target's work list and wakes the pool, and the
//! first idle thread takes it and carries it out to completion — in effect an arbitrary
//! thread, drawn here from the run's seed. Each thread has at most one command in progress:
//!
//! * `blockio`: the thread builds bios for the command's pages, submits them, unplugs the
//!   queue and waits — one synchronous read per thread, submitted as that thread.
//! * `fileio` (IET's default `Type`): the thread reads the backing device through the page
//!   cache one 4 KiB page at a time (`do_sync_read` in 0.4.15-1.4.19); the disk then sees the
//!   page cache's read-ahead, issued by whichever thread triggers it, from the one read-ahead
//!   state of the LUN's one open file.
//!
//! A session's command window (`QueuedCommands`, 32) bounds the commands the initiator has
//! out at the target; a command beyond it waits at the initiator.
//!
//! # Deviations from IET
//!
//! * Reads only (the initiator reads); the write path (`fileio`'s write-through sync, blockio's
//!   plain writes) is not modelled.
//! * The network thread's own CPU time and the target's TCP stack are not modelled; a command
//!   reaches the work list when its PDU arrives.

use std::collections::VecDeque;

use elevator_core::{Prng, ProcessId};

/// The first process id of the target's worker threads; target `t`'s thread `n` is this
/// plus `t` × 256 + `n` (clear of workload processes, numbered from 1, and of the host's
/// kernel threads, numbered down from `u32::MAX`).
pub const WORKER_PID_BASE: u32 = 0x4000_0000;

/// How a LUN's commands reach its backing device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoMode {
    /// bios built and submitted by the worker thread, bypassing the page cache.
    BlockIo,
    /// Page-sized reads of the backing device through the page cache.
    FileIo,
}

impl IoMode {
    /// `Type` as ietd.conf writes it.
    pub fn name(self) -> &'static str {
        match self {
            IoMode::BlockIo => "blockio",
            IoMode::FileIo => "fileio",
        }
    }
}

/// One target: its worker threads and work list.
#[derive(Clone, Debug)]
pub struct Target {
    /// Each thread's command in progress (a token), or `None` when idle.
    threads: Vec<Option<u64>>,
    /// Commands waiting for a thread, in arrival order.
    work: VecDeque<u64>,
    /// Its first thread's process id.
    pid_base: u32,
    /// Most threads busy at once.
    pub busy_peak: u32,
    /// Commands that found every thread busy.
    pub waited_for_thread: u64,
}

impl Target {
    /// Target `index` with `threads` worker threads.
    pub fn new(index: usize, threads: u32) -> Target {
        Target {
            threads: vec![None; threads as usize],
            work: VecDeque::new(),
            pid_base: WORKER_PID_BASE + index as u32 * 256,
            busy_peak: 0,
            waited_for_thread: 0,
        }
    }

    /// Thread `thread`'s process id.
    pub fn pid(&self, thread: usize) -> ProcessId {
        ProcessId(self.pid_base + thread as u32)
    }

    /// Every thread's process id.
    pub fn pids(&self) -> impl Iterator<Item = ProcessId> + '_ {
        (0..self.threads.len()).map(|thread| self.pid(thread))
    }

    /// A command arrives: an idle thread, drawn by `prng`, takes it (its index is returned),
    /// or it waits on the work list.
    pub fn arrive(&mut self, token: u64, prng: &mut Prng) -> Option<usize> {
        let idle = self.threads.iter().filter(|slot| slot.is_none()).count();
        if idle == 0 {
            self.work.push_back(token);
            self.waited_for_thread += 1;
            return None;
        }
        let pick = prng.below(idle as u64) as usize;
        let thread = self
            .threads
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.is_none())
            .nth(pick)
            .map(|(thread, _)| thread)
            .expect("an idle thread");
        self.start(thread, token);
        Some(thread)
    }

    /// Thread `thread` finished its command: it takes the next one waiting, if any, and
    /// returns it.
    pub fn finish(&mut self, thread: usize) -> Option<u64> {
        self.threads[thread] = None;
        let next = self.work.pop_front()?;
        self.start(thread, next);
        Some(next)
    }

    fn start(&mut self, thread: usize, token: u64) {
        self.threads[thread] = Some(token);
        let busy = self.threads.iter().filter(|slot| slot.is_some()).count() as u32;
        self.busy_peak = self.busy_peak.max(busy);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves each thread carries one command at a time, the rest wait in arrival order, and a
    // thread that finishes takes the oldest waiting command.
    #[test]
    fn threads_take_one_command_each_and_the_rest_wait_in_order() {
        let mut target = Target::new(1, 2);
        let mut prng = Prng::new(7);
        let first = target.arrive(10, &mut prng).unwrap();
        let second = target.arrive(11, &mut prng).unwrap();
        assert_ne!(first, second);
        assert_eq!(target.arrive(12, &mut prng), None);
        assert_eq!(target.arrive(13, &mut prng), None);
        assert_eq!(target.finish(second), Some(12));
        assert_eq!(target.finish(first), Some(13));
        assert_eq!(target.finish(first), None);
        assert_eq!((target.busy_peak, target.waited_for_thread), (2, 2));
        assert_eq!(target.pid(1), ProcessId(WORKER_PID_BASE + 256 + 1));
    }
}
