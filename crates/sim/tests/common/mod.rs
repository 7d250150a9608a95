//! What the host-level tests share: a scripted process that makes a fixed list of calls.

use std::collections::VecDeque;

use elevator_core::{Instant, ProcessId, RequestFlags};
use elevator_workload::{Io, IoId, IoKind, Issuer, Place, Poll};

/// One call: what, where, at which byte, how many bytes.
pub(crate) type Call = (IoKind, Place, u64, u64);

/// A process that makes a fixed list of calls, up to `depth` at once (1, the default: one
/// after the other, as dd or iozone; more: as an asynchronous direct-I/O program).
#[derive(Debug)]
pub(crate) struct Script {
    name: String,
    process: ProcessId,
    calls: VecDeque<Call>,
    /// O_DIRECT calls.
    pub(crate) direct: bool,
    /// Calls in flight at once.
    pub(crate) depth: usize,
    outstanding: usize,
    next_id: u64,
}

impl Script {
    /// Process `process` making `calls` in order.
    pub(crate) fn new(process: u32, calls: impl IntoIterator<Item = Call>) -> Script {
        Script {
            name: format!("p{process}"),
            process: ProcessId(process),
            calls: calls.into_iter().collect(),
            direct: false,
            depth: 1,
            outstanding: 0,
            next_id: 0,
        }
    }

    /// `count` calls of `size` bytes from `start`, one after the other.
    pub(crate) fn sequential(
        process: u32,
        kind: IoKind,
        place: Place,
        start: u64,
        size: u64,
        count: u64,
    ) -> Script {
        Script::new(process, (0..count).map(|i| (kind, place, start + i * size, size)))
    }
}

impl Issuer for Script {
    fn name(&self) -> &str {
        &self.name
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn poll(&mut self, _now: Instant) -> Poll {
        if self.outstanding >= self.depth {
            return Poll::Wait;
        }
        let Some((kind, place, offset_bytes, size_bytes)) = self.calls.pop_front() else {
            return if self.outstanding > 0 { Poll::Wait } else { Poll::Done };
        };
        self.outstanding += 1;
        self.next_id += 1;
        Poll::Submit(Io {
            id: IoId(self.next_id),
            kind,
            place,
            offset_bytes,
            size_bytes,
            direct: self.direct,
            // Reads and O_DIRECT writes are sync as the workload sees them; the simulator
            // applies the host kernel's own rule to what reaches the queue.
            flags: if kind == IoKind::Read || self.direct {
                RequestFlags::SYNC
            } else {
                RequestFlags::NONE
            },
        })
    }

    fn complete(&mut self, _now: Instant, _io: IoId) {
        self.outstanding -= 1;
    }
}
