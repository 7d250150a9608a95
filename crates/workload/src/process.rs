//! What the classic tools share: a process doing synchronous system calls, a sequential pass
//! over one file, and the checks that a tool's files and devices fit the plan's targets.
//!
//! The tools (iozone, dd, hdparm, the database loads, the sequential readers) are ordinary
//! processes that call `read(2)`, `write(2)` and `fsync(2)` and wait for each to return, so
//! each of their issuers has at most one operation in flight. [`Syscalls`] keeps that
//! invariant and hands out operation ids; the tools' state machines only decide what the next
//! call is.

use elevator_core::{
    Instant, ParamError, Params, ProcessId, RequestFlags, SECTOR_SIZE_BYTES, units,
};

use crate::{Io, IoId, IoKind, Issuer, Place, Poll, Target};

/// The one system call a synchronous process has in flight, and the ids of its operations.
#[derive(Debug, Default)]
pub(crate) struct Syscalls {
    next_id: u64,
    in_flight: Option<IoId>,
}

impl Syscalls {
    /// Whether a call has not returned yet (the process is blocked in it).
    pub(crate) fn busy(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Makes the call: the operation to submit. Panics if a call is already in flight, since a
    /// synchronous process cannot make two at once.
    pub(crate) fn call(
        &mut self,
        kind: IoKind,
        place: Place,
        offset_bytes: u64,
        size_bytes: u64,
        direct: bool,
    ) -> Poll {
        assert!(self.in_flight.is_none(), "a synchronous process made a second call");
        let id = IoId(self.next_id);
        self.next_id += 1;
        self.in_flight = Some(id);
        // Someone waits for every read, every O_DIRECT write and every fsync; buffered writes
        // return at once and the host's write-back classifies what reaches the device.
        let flags = match kind {
            IoKind::Read | IoKind::Sync => RequestFlags::SYNC,
            IoKind::Write if direct => RequestFlags::SYNC,
            IoKind::Write | IoKind::Discard | IoKind::DropCaches => RequestFlags::NONE,
        };
        Poll::Submit(Io { id, kind, place, offset_bytes, size_bytes, direct, flags })
    }

    /// The call `io` returned. Panics on a completion of anything else.
    pub(crate) fn returned(&mut self, io: IoId) {
        assert_eq!(self.in_flight.take(), Some(io), "a completion of an operation not in flight");
    }
}

/// A process that reads or writes one file from its start to `size_bytes` in `chunk_bytes`
/// calls, then optionally fsyncs it: an iozone child in one test, a sequential reader.
#[derive(Debug)]
pub(crate) struct SequentialPass {
    pub(crate) name: String,
    pub(crate) process: ProcessId,
    pub(crate) file: usize,
    pub(crate) kind: IoKind,
    pub(crate) size_bytes: u64,
    pub(crate) chunk_bytes: u64,
    pub(crate) direct: bool,
    /// fsync the file after the last write (iozone `-e`).
    pub(crate) sync_at_end: bool,
    pub(crate) next_offset_bytes: u64,
    pub(crate) synced: bool,
    pub(crate) calls: Syscalls,
}

impl SequentialPass {
    /// A pass over `file` that has not started.
    pub(crate) fn new(
        name: String,
        process: ProcessId,
        file: usize,
        kind: IoKind,
        size_bytes: u64,
        chunk_bytes: u64,
        direct: bool,
    ) -> SequentialPass {
        assert!(chunk_bytes > 0 && size_bytes % chunk_bytes == 0, "chunks must tile the file");
        SequentialPass {
            name,
            process,
            file,
            kind,
            size_bytes,
            chunk_bytes,
            direct,
            sync_at_end: false,
            next_offset_bytes: 0,
            synced: false,
            calls: Syscalls::default(),
        }
    }
}

impl Issuer for SequentialPass {
    fn name(&self) -> &str {
        &self.name
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn poll(&mut self, _now: Instant) -> Poll {
        if self.calls.busy() {
            return Poll::Wait;
        }
        let place = Place::File(self.file);
        if self.next_offset_bytes < self.size_bytes {
            let offset = self.next_offset_bytes;
            self.next_offset_bytes += self.chunk_bytes;
            return self.calls.call(self.kind, place, offset, self.chunk_bytes, self.direct);
        }
        if self.sync_at_end && !self.synced {
            self.synced = true;
            return self.calls.call(IoKind::Sync, place, 0, 0, self.direct);
        }
        Poll::Done
    }

    fn complete(&mut self, _now: Instant, io: IoId) {
        self.calls.returned(io);
    }
}

/// Fails unless `bytes` is a whole number of sectors (direct I/O, and the simulated devices,
/// move whole sectors).
pub(crate) fn check_sectors(
    params: &Params,
    key: &'static str,
    bytes: u64,
) -> Result<(), ParamError> {
    if bytes % SECTOR_SIZE_BYTES != 0 {
        return Err(params.impossible(key, format!("{bytes} bytes is not a multiple of 512")));
    }
    Ok(())
}

/// Fails unless `size_bytes` is a whole number of `chunk_bytes` blocks (and at least one), so
/// that the tool's operations cover it exactly.
pub(crate) fn check_whole_chunks(
    params: &Params,
    size_key: &'static str,
    size_bytes: u64,
    chunk_key: &'static str,
    chunk_bytes: u64,
) -> Result<(), ParamError> {
    if chunk_bytes > size_bytes {
        return Err(params.impossible(
            chunk_key,
            format!("{chunk_key} ({chunk_bytes} bytes) is larger than {size_key} ({size_bytes})"),
        ));
    }
    if size_bytes % chunk_bytes != 0 {
        return Err(params.impossible(
            size_key,
            format!(
                "{size_bytes} bytes is not a whole number of {chunk_key}s ({chunk_bytes} bytes)"
            ),
        ));
    }
    Ok(())
}

/// A `MIN-MAX` block size range (`32k-256k`): sizes are multiples of MIN up to MAX, which is
/// rounded down to a multiple of MIN. Returns `(min_bytes, max_bytes)`.
pub(crate) fn parse_block_range(
    params: &Params,
    key: &'static str,
    max_allowed_bytes: u64,
) -> Result<(u64, u64), ParamError> {
    let text = params.text(key);
    let bad = || params.impossible(key, format!("`{text}` is not MIN-MAX, e.g. 4k-64k"));
    let (min, max) = text.split_once(['-', ':']).ok_or_else(bad)?;
    let min_bytes = units::parse_size_bytes(min).map_err(|_| bad())?;
    let max_bytes = units::parse_size_bytes(max).map_err(|_| bad())?;
    if min_bytes == 0 || max_bytes < min_bytes || max_bytes > max_allowed_bytes {
        let limit = elevator_core::format_size(max_allowed_bytes);
        return Err(params.impossible(key, format!("needs 0 < MIN <= MAX <= {limit}")));
    }
    check_sectors(params, key, min_bytes)?;
    Ok((min_bytes, max_bytes - max_bytes % min_bytes))
}

/// How many of the plan's targets a tool spreads over: the value of `key` if it has one,
/// else all of them. Fails when there are no targets or fewer than asked for.
pub(crate) fn device_count(
    params: &Params,
    key: &'static str,
    targets: &[Target],
) -> Result<usize, ParamError> {
    if targets.is_empty() {
        return Err(params.impossible(key, "there is no device to address"));
    }
    if !params.has(key) {
        return Ok(targets.len());
    }
    let wanted = params.integer(key) as usize;
    if wanted > targets.len() {
        return Err(params.impossible(
            key,
            format!("{wanted} devices asked for, but the plan has {}", describe_targets(targets)),
        ));
    }
    Ok(wanted)
}

/// `2 (sda, sdb)`.
pub(crate) fn describe_targets(targets: &[Target]) -> String {
    let names: Vec<&str> = targets.iter().map(|target| target.name.as_str()).collect();
    format!("{} ({})", targets.len(), names.join(", "))
}

/// Fails when the files' eventual sizes, summed per device, exceed a device's capacity.
/// `files` holds `(device, bytes)`: the size a file has or will have once written.
pub(crate) fn check_files_fit(
    params: &Params,
    key: &'static str,
    files: &[(usize, u64)],
    targets: &[Target],
) -> Result<(), ParamError> {
    for (device, target) in targets.iter().enumerate() {
        let needed_bytes = files
            .iter()
            .filter(|(on, _)| *on == device)
            .try_fold(0u64, |sum, (_, bytes)| sum.checked_add(*bytes));
        match needed_bytes {
            Some(needed) if needed <= target.capacity_bytes => {}
            _ => {
                let needed = needed_bytes.map_or("more than 2^64".to_owned(), |n| n.to_string());
                return Err(params.impossible(
                    key,
                    format!(
                        "the files on {} need {needed} bytes but it holds {}",
                        target.name, target.capacity_bytes
                    ),
                ));
            }
        }
    }
    Ok(())
}
