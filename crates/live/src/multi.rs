//! Several targets in one live run (fio job files whose jobs name different files or devices,
//! `filename=a:b`): one [`Reactor`] — one `BlockQueue` and scheduler instance — per target,
//! as the kernel has one scheduler per request queue, all in front of ONE backend (one
//! io_uring, or one thread pool) whose transfers name their file ([`Transfer::file`]).
//!
//! Why one backend: the run's single thread must sleep until any target's transfer completes.
//! Each reactor sees the shared backend through a [`Part`]: its transfers go to its file and
//! its tokens carry its index, and a wait made through one part files the other parts'
//! completions in their mailboxes for their own next wait. [`Reactors::wait`] lets every
//! queue issue, blocks once through the first (until the earliest of every queue's timers and
//! the caller's deadline), then collects every part's completions.
//!
//! With one target there is no sharing: the reactor owns its backend as before.

use std::sync::{Arc, Mutex};

use elevator_core::{Duration, Instant, ProcessId};

use crate::backend::{Backend, Done, Transfer, Waker};
use crate::error::LiveError;
use crate::reactor::{IoFinished, IoRequest, Reactor};

/// The bit where a part's index starts in a shared backend's tokens (a reactor's tokens are
/// request-slot indices, far below 2^48).
const PART_SHIFT: u32 = 48;

/// The backend the parts share, and each part's completions not yet taken.
struct Shared {
    backend: Box<dyn Backend>,
    mailboxes: Vec<Vec<Done>>,
}

/// One reactor's view of the shared backend.
pub(crate) struct Part {
    shared: Arc<Mutex<Shared>>,
    index: usize,
    name: &'static str,
}

impl Part {
    /// One part per file of `backend` (its `build_many` files, in order).
    pub(crate) fn split(backend: Box<dyn Backend>, files: usize) -> Vec<Part> {
        let name = backend.name();
        let shared = Arc::new(Mutex::new(Shared { backend, mailboxes: vec![Vec::new(); files] }));
        (0..files).map(|index| Part { shared: Arc::clone(&shared), index, name }).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        // One thread uses the parts; a poisoned lock only means a panic already unwinds.
        self.shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Backend for Part {
    fn name(&self) -> &'static str {
        self.name
    }

    fn start(&mut self, mut transfer: Transfer) -> std::io::Result<()> {
        transfer.file = self.index as u32;
        transfer.token |= (self.index as u64) << PART_SHIFT;
        self.lock().backend.start(transfer)
    }

    fn wait(&mut self, timeout: Option<Duration>, done: &mut Vec<Done>) -> std::io::Result<()> {
        let mut shared = self.lock();
        if shared.mailboxes[self.index].is_empty() {
            let mut all = Vec::new();
            shared.backend.wait(timeout, &mut all)?;
            for finished in all {
                let part = (finished.token >> PART_SHIFT) as usize;
                let token = finished.token & ((1 << PART_SHIFT) - 1);
                shared.mailboxes[part].push(Done { token, result: finished.result });
            }
        }
        done.append(&mut shared.mailboxes[self.index]);
        Ok(())
    }

    fn waker(&self) -> Waker {
        self.lock().backend.waker()
    }

    fn register_buffer(&mut self, ptr: *mut u8, len: usize) -> Option<u16> {
        // One registration serves every part: they share the ring.
        self.lock().backend.register_buffer(ptr, len)
    }

    fn inject_stats(&self) -> crate::backend::inject::InjectStats {
        // The faults are the shared backend's: counted once, by the first part.
        if self.index == 0 { self.lock().backend.inject_stats() } else { Default::default() }
    }
}

/// The run's reactors, one per target, by target index (`Place::Device(i)`).
pub(crate) struct Reactors {
    parts: Vec<Reactor>,
}

impl Reactors {
    pub(crate) fn new(parts: Vec<Reactor>) -> Reactors {
        assert!(!parts.is_empty(), "a run has a target");
        Reactors { parts }
    }

    /// Every target's reactor, by target index.
    pub(crate) fn all(&self) -> &[Reactor] {
        &self.parts
    }

    pub(crate) fn backend_name(&self) -> &'static str {
        self.parts[0].backend_name()
    }

    /// I/Os taken and not yet finished, on every target.
    pub(crate) fn outstanding(&self) -> usize {
        self.parts.iter().map(Reactor::outstanding).sum()
    }

    /// Registers a buffer with the backend the reactors share ([`Reactor::register_buffer`]).
    pub(crate) fn register_buffer(&mut self, ptr: *mut u8, len: usize) -> Option<u16> {
        self.parts[0].register_buffer(ptr, len)
    }

    /// Hands `io` to target `target`'s queue.
    pub(crate) fn submit(&mut self, target: usize, io: IoRequest) -> Result<(), LiveError> {
        self.parts[target].submit(io)
    }

    /// `process` is gone: every queue stops idling for it.
    pub(crate) fn process_exited(&mut self, process: ProcessId) -> Result<(), LiveError> {
        self.parts.iter_mut().try_for_each(|part| part.process_exited(process))
    }

    /// Every queue dispatches what its scheduler holds ([`Reactor::force_dispatch`]).
    pub(crate) fn force_dispatch(&mut self) -> Result<(), LiveError> {
        self.parts.iter_mut().try_for_each(Reactor::force_dispatch)
    }

    /// [`Reactor::wait`] over every target: each queue issues, one wait blocks (at most until
    /// `deadline` or the earliest queue timer), and every target's finished I/Os are appended.
    pub(crate) fn wait(
        &mut self,
        deadline: Option<Instant>,
        block: bool,
        finished: &mut Vec<IoFinished>,
    ) -> Result<(), LiveError> {
        let Some((first, rest)) = self.parts.split_first_mut() else { return Ok(()) };
        if rest.is_empty() {
            return first.wait(deadline, block, finished);
        }
        for part in rest.iter_mut() {
            part.wait(None, false, finished)?;
        }
        // The first queue's wait blocks for all: the earliest of the others' timers ends it.
        let deadline = rest.iter().filter_map(Reactor::timer).chain(deadline).min();
        first.wait(deadline, block, finished)?;
        for part in rest.iter_mut() {
            part.wait(None, false, finished)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::fd::AsFd;

    use super::*;
    use crate::backend::TransferOp;
    use crate::backend::threads::ThreadPool;

    // Proves the shared backend routes by part: a write started through part 1 lands in part
    // 1's file (not part 0's, though both share one pool), a wait through part 0 does not hand
    // it to part 0 but files it for part 1, and part 1's next wait returns it under the token
    // it was started with.
    #[test]
    fn parts_route_transfers_and_completions_to_their_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let paths = [dir.path().join("zero"), dir.path().join("one")];
        let files: Vec<std::fs::File> = paths
            .iter()
            .map(|path| {
                std::fs::write(path, [0u8; 512]).unwrap();
                std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap()
            })
            .collect();
        let fds: Vec<_> = files.iter().map(AsFd::as_fd).collect();
        let pool = ThreadPool::new(&fds, 2).unwrap();
        let mut parts = Part::split(Box::new(pool), 2);
        let mut data = [7u8; 512];
        let iov = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: data.len() };
        let transfer = Transfer {
            token: 5,
            op: TransferOp::Write,
            offset: 0,
            iov: &iov,
            iov_count: 1,
            length_bytes: 512,
            file: 0,
            buffer: None,
        };
        parts[1].start(transfer).unwrap();
        let mut done = Vec::new();
        parts[0].wait(Some(Duration::from_secs(10)), &mut done).unwrap();
        assert!(done.is_empty(), "part 0 gets none of part 1's completions: {done:?}");
        parts[1].wait(Some(Duration::ZERO), &mut done).unwrap();
        assert_eq!(done, [Done { token: 5, result: 512 }]);
        let content = |path: &std::path::Path| {
            let mut bytes = Vec::new();
            std::fs::File::open(path).unwrap().read_to_end(&mut bytes).unwrap();
            bytes
        };
        assert!(content(&paths[1]).iter().all(|&byte| byte == 7), "part 1's file written");
        assert!(content(&paths[0]).iter().all(|&byte| byte == 0), "part 0's file untouched");
    }
}
