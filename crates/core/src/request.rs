//! What flows through a queue: bios (an issuer's I/O) and requests (what a scheduler orders).
//!
//! A [`Bio`] is one I/O as an issuer submits it. The [`BlockQueue`](crate::BlockQueue) either
//! merges it into a queued [`Request`] whose sectors it extends, or allocates a new request for
//! it; a request therefore carries one or more bios, and completing it completes them all.
//! Schedulers only ever see requests, by [`RequestId`](crate::RequestId).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::time::Instant;

/// Bytes in one sector, the unit of every position and size inside the block layer.
pub const SECTOR_SIZE_BYTES: u64 = 512;

/// A position on a block device in 512-byte sectors.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sector(pub u64);

impl Sector {
    /// The sector that starts at `bytes`, which must be sector aligned.
    pub const fn from_bytes(bytes: u64) -> Option<Sector> {
        if bytes % SECTOR_SIZE_BYTES == 0 { Some(Sector(bytes / SECTOR_SIZE_BYTES)) } else { None }
    }

    /// The byte offset of this sector.
    pub const fn as_bytes(self) -> u64 {
        self.0 * SECTOR_SIZE_BYTES
    }

    /// The sector `count` sectors after this one.
    pub const fn offset(self, count: u32) -> Sector {
        Sector(self.0 + count as u64)
    }

    /// Absolute distance in sectors between two positions.
    pub const fn distance(self, other: Sector) -> u64 {
        self.0.abs_diff(other.0)
    }
}

impl fmt::Debug for Sector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

impl fmt::Display for Sector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The operation a bio or request performs.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Read data from the device.
    Read,
    /// Write data to the device.
    Write,
    /// Flush the device's volatile cache. Carries no sectors; the block layer treats it as an
    /// ordering point (everything submitted before completes before it is issued, everything
    /// after waits for it), as the 2.6 barrier machinery did.
    Flush,
    /// Tell the device that sectors no longer hold data. Moves in the write direction and
    /// merges only with other discards.
    Discard,
}

impl Op {
    /// The data direction the kernel files this operation under (`rq_data_dir`).
    pub const fn direction(self) -> Direction {
        match self {
            Op::Read => Direction::Read,
            Op::Write | Op::Flush | Op::Discard => Direction::Write,
        }
    }

    /// The lowercase name used in specs and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
            Op::Discard => "discard",
        }
    }
}

/// Data direction: what deadline and noop sort by, and what the 2.6.18 request pools count.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Device to memory.
    Read = 0,
    /// Memory to device (writes, discards and flushes).
    Write = 1,
}

impl Direction {
    /// Both directions, reads first.
    pub const ALL: [Direction; 2] = [Direction::Read, Direction::Write];

    /// 0 for reads and 1 for writes, for indexing per-direction arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `read` or `write`.
    pub const fn name(self) -> &'static str {
        match self {
            Direction::Read => "read",
            Direction::Write => "write",
        }
    }
}

/// Request flags that schedulers and the merge rules look at.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestFlags(u8);

impl RequestFlags {
    /// No flags.
    pub const NONE: RequestFlags = RequestFlags(0);
    /// Someone waits for this I/O: every read, and writes from O_DIRECT, fsync or O_SYNC.
    pub const SYNC: RequestFlags = RequestFlags(1);
    /// Filesystem metadata (preferred by cfq from 2.6.19 on).
    pub const META: RequestFlags = RequestFlags(1 << 1);
    /// Force unit access: the write must reach stable media before it completes. Never merged.
    pub const FUA: RequestFlags = RequestFlags(1 << 2);
    /// 2.4 direct I/O's super buffer head (linux-2.4-elevator.md §3.1, §6.6): the bio never
    /// merges into a queued request, and the request it makes goes to the tail of the
    /// elevator's list, unsorted (a scheduler honouring 2.4 semantics must append it there).
    /// Later bios may still merge into that request.
    pub const UNSORTED: RequestFlags = RequestFlags(1 << 3);
    /// A passthrough command (SG_IO, NVMe passthrough: fio's `sg`, `io_uring_cmd` and `xnvme`
    /// engines): it never merges and goes straight to the dispatch list's tail, past the
    /// scheduler, as the kernel inserts a request that `blk_rq_is_passthrough` (without
    /// `RQF_USE_SCHED`, `blk_mq_insert_request`; 5.x's `blk_mq_sched_bypass_insert`).
    pub const PASSTHROUGH: RequestFlags = RequestFlags(1 << 4);

    /// Whether every flag in `other` is set.
    pub const fn contains(self, other: RequestFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of both sets.
    pub const fn union(self, other: RequestFlags) -> RequestFlags {
        RequestFlags(self.0 | other.0)
    }

    /// The flags set in both.
    pub const fn intersection(self, other: RequestFlags) -> RequestFlags {
        RequestFlags(self.0 & other.0)
    }

    /// The flags of `self` without those in `other`.
    pub const fn without(self, other: RequestFlags) -> RequestFlags {
        RequestFlags(self.0 & !other.0)
    }

    /// Whether the sync flag is set.
    pub const fn is_sync(self) -> bool {
        self.contains(RequestFlags::SYNC)
    }
}

impl std::ops::BitOr for RequestFlags {
    type Output = RequestFlags;
    fn bitor(self, other: RequestFlags) -> RequestFlags {
        self.union(other)
    }
}

impl fmt::Debug for RequestFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names = Vec::new();
        for (flag, name) in [
            (RequestFlags::SYNC, "sync"),
            (RequestFlags::META, "meta"),
            (RequestFlags::FUA, "fua"),
            (RequestFlags::UNSORTED, "unsorted"),
            (RequestFlags::PASSTHROUGH, "passthrough"),
        ] {
            if self.contains(flag) {
                names.push(name);
            }
        }
        write!(f, "{{{}}}", names.join(","))
    }
}

/// The I/O scheduling class of `ionice` and `ioprio_set`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IoClass {
    /// No class set: schedulers use best-effort at a level derived from the CPU nice value.
    None = 0,
    /// Served before everything else; may starve other classes.
    RealTime = 1,
    /// The normal class, levels 0 (highest) to 7.
    BestEffort = 2,
    /// Served only when nothing else wants the disk.
    Idle = 3,
}

impl IoClass {
    /// The name `ionice` prints and the spec parser accepts.
    pub const fn name(self) -> &'static str {
        match self {
            IoClass::None => "none",
            IoClass::RealTime => "realtime",
            IoClass::BestEffort => "best-effort",
            IoClass::Idle => "idle",
        }
    }
}

/// Number of levels in the real-time and best-effort classes (`IOPRIO_BE_NR`).
pub const IOPRIO_LEVELS: u8 = 8;

/// An I/O priority: a class and a level (0 is the highest, 7 the lowest).
///
/// For [`IoClass::None`] the level is the one derived from the CPU nice value, `(nice + 20) / 5`,
/// so that a scheduler can compute the effective priority without knowing the process; for
/// [`IoClass::Idle`] the level is always 7, the level cfq gives idle queues.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IoPriority {
    class: IoClass,
    level: u8,
}

/// An I/O priority that cannot exist.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IoPriorityError {
    /// A level outside 0..=7.
    #[error("I/O priority level {level} is out of range (accepted: 0..=7, 0 is the highest)")]
    Level {
        /// The rejected level.
        level: u32,
    },
    /// An encoded `ioprio` value with an unknown class or stray bits.
    #[error(
        "ioprio value {value:#x} is not valid (class << 13 | level, class 0..=3, level 0..=7; class none takes level 0)"
    )]
    Encoding {
        /// The rejected encoded value.
        value: u32,
    },
    /// A nice value outside -20..=19.
    #[error("nice value {nice} is out of range (accepted: -20..=19)")]
    Nice {
        /// The rejected nice value.
        nice: i32,
    },
}

impl IoPriority {
    /// What a process gets that never called `ioprio_set` and runs at nice 0: best-effort
    /// level 4 through class none.
    pub const DEFAULT: IoPriority = IoPriority { class: IoClass::None, level: 4 };

    /// A priority in `class` at `level` (0..=7). The level of the idle class is always 7.
    pub fn new(class: IoClass, level: u8) -> Result<IoPriority, IoPriorityError> {
        if level >= IOPRIO_LEVELS {
            return Err(IoPriorityError::Level { level: u32::from(level) });
        }
        let level = if class == IoClass::Idle { IOPRIO_LEVELS - 1 } else { level };
        Ok(IoPriority { class, level })
    }

    /// Real-time at `level`.
    pub fn realtime(level: u8) -> Result<IoPriority, IoPriorityError> {
        IoPriority::new(IoClass::RealTime, level)
    }

    /// Best-effort at `level`.
    pub fn best_effort(level: u8) -> Result<IoPriority, IoPriorityError> {
        IoPriority::new(IoClass::BestEffort, level)
    }

    /// The idle class.
    pub const fn idle() -> IoPriority {
        IoPriority { class: IoClass::Idle, level: IOPRIO_LEVELS - 1 }
    }

    /// Class none for a process at CPU nice `nice` (-20..=19): level `(nice + 20) / 5`.
    pub fn from_nice(nice: i32) -> Result<IoPriority, IoPriorityError> {
        if !(-20..=19).contains(&nice) {
            return Err(IoPriorityError::Nice { nice });
        }
        // (nice + 20) is 0..=39, so the level is 0..=7.
        Ok(IoPriority { class: IoClass::None, level: ((nice + 20) / 5) as u8 })
    }

    /// The class as set (possibly [`IoClass::None`]).
    pub const fn class(self) -> IoClass {
        self.class
    }

    /// The level: 0 (highest) to 7.
    pub const fn level(self) -> u8 {
        self.level
    }

    /// The class a scheduler acts on: none counts as best-effort.
    pub const fn effective_class(self) -> IoClass {
        match self.class {
            IoClass::None => IoClass::BestEffort,
            class => class,
        }
    }

    /// The better of two priorities, as a merged request keeps: the lower class number wins
    /// (none counting as best-effort), then the lower level.
    pub fn better(self, other: IoPriority) -> IoPriority {
        let rank = |p: IoPriority| (p.effective_class() as u8, p.level);
        if rank(other) < rank(self) { other } else { self }
    }

    /// The kernel's 16-bit encoding, `class << 13 | level` (0 for class none).
    pub const fn to_ioprio_value(self) -> u16 {
        match self.class {
            IoClass::None => 0,
            IoClass::Idle => (IoClass::Idle as u16) << 13,
            class => ((class as u16) << 13) | self.level as u16,
        }
    }

    /// Decodes the kernel's 16-bit encoding. Class none decodes to nice 0's level.
    pub fn from_ioprio_value(value: u32) -> Result<IoPriority, IoPriorityError> {
        let class = value >> 13;
        let data = value & ((1 << 13) - 1);
        let bad = || IoPriorityError::Encoding { value };
        match class {
            0 if data == 0 => Ok(IoPriority::DEFAULT),
            1 | 2 if data < u32::from(IOPRIO_LEVELS) => {
                let class = if class == 1 { IoClass::RealTime } else { IoClass::BestEffort };
                Ok(IoPriority { class, level: data as u8 })
            }
            3 => Ok(IoPriority::idle()),
            _ => Err(bad()),
        }
    }
}

impl Default for IoPriority {
    fn default() -> IoPriority {
        IoPriority::DEFAULT
    }
}

impl fmt::Debug for IoPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for IoPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.class {
            IoClass::Idle => f.write_str("idle"),
            IoClass::None => write!(f, "none/{}", self.level),
            class => write!(f, "{}/{}", class.name(), self.level),
        }
    }
}

/// The issuing process as schedulers see it: the kernel's I/O context. Anticipation, cfq's
/// per-process queues and the request pool's batching all key on it.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct ProcessId(pub u32);

impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid{}", self.0)
    }
}

/// The submitter's handle for a bio, handed back when the request carrying it completes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BioTag(pub u64);

/// One I/O as an issuer submits it to a [`BlockQueue`](crate::BlockQueue).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Bio {
    /// What to do.
    pub op: Op,
    /// First sector.
    pub start: Sector,
    /// Length in sectors (0 only for [`Op::Flush`]).
    pub sector_count: u32,
    /// Sync, meta, FUA. Reads are always sync; the queue sets the flag if the caller did not.
    pub flags: RequestFlags,
    /// The issuer's I/O priority.
    pub priority: IoPriority,
    /// The issuing process (I/O context).
    pub process: ProcessId,
    /// Handed back on completion.
    pub tag: BioTag,
    /// The CPU it is submitted from, whose software queue its request joins (the kernel's
    /// `blk_mq_get_ctx` of the submitting task's CPU): 0 unless the submitter knows better.
    pub cpu: u16,
}

impl Bio {
    /// A read of `sector_count` sectors at `start` by `process`, default priority.
    pub fn read(process: ProcessId, start: Sector, sector_count: u32, tag: BioTag) -> Bio {
        Bio {
            op: Op::Read,
            start,
            sector_count,
            flags: RequestFlags::SYNC,
            priority: IoPriority::DEFAULT,
            process,
            tag,
            cpu: 0,
        }
    }

    /// An asynchronous (write-back) write of `sector_count` sectors at `start`.
    pub fn write(process: ProcessId, start: Sector, sector_count: u32, tag: BioTag) -> Bio {
        Bio {
            op: Op::Write,
            start,
            sector_count,
            flags: RequestFlags::NONE,
            priority: IoPriority::DEFAULT,
            process,
            tag,
            cpu: 0,
        }
    }

    /// The same bio with `flags` added.
    pub fn with_flags(mut self, flags: RequestFlags) -> Bio {
        self.flags = self.flags | flags;
        self
    }

    /// The same bio at `priority`.
    pub fn with_priority(mut self, priority: IoPriority) -> Bio {
        self.priority = priority;
        self
    }

    /// The sector just past the last one.
    pub const fn end(&self) -> Sector {
        self.start.offset(self.sector_count)
    }
}

/// Where a request is in its life. Only the [`BlockQueue`](crate::BlockQueue) moves it on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RequestState {
    /// Allocated but held back by the queue because it overlaps an earlier outstanding request
    /// and one of them writes; inserted into the scheduler once that one completes.
    Held,
    /// In the scheduler.
    Queued,
    /// Taken from the scheduler, on the queue's dispatch list, not yet at the device.
    Dispatched,
    /// At the device.
    InFlight,
}

/// A block request: one or more contiguous bios that a scheduler orders as one unit.
///
/// Schedulers read requests through [`Ctx::requests`](crate::Ctx); only the queue changes them.
#[derive(Clone, Debug)]
pub struct Request {
    /// What to do.
    pub op: Op,
    /// First sector.
    pub start: Sector,
    /// Length in sectors.
    pub sector_count: u32,
    /// Sync, meta, FUA.
    pub flags: RequestFlags,
    /// The best priority of the bios it carries.
    pub priority: IoPriority,
    /// The process whose bio created it (merged bios may come from others).
    pub process: ProcessId,
    /// When it was created; a merge keeps the earlier of the two (the kernel's `start_time`).
    pub created: Instant,
    /// The CPU whose software queue it was inserted from (the kernel's `rq->mq_ctx->cpu`): its
    /// first bio's [`Bio::cpu`]. Only kyber reads it (its per-CPU staging lists).
    pub cpu: u16,
    pub(crate) state: RequestState,
    /// Set once the device has taken it (the kernel's `REQ_STARTED`); a started request that
    /// comes back (requeue) is never merged or sorted past again.
    pub(crate) started: bool,
    /// Activated by a fetch while the device was full, and not yet sent
    /// ([`DriverFetch::BeforeDepthCheck`](crate::queue::DriverFetch)).
    pub(crate) activated: bool,
    /// Set once a merge was refused for size: the kernel's no-merge mark.
    pub(crate) no_merge: bool,
    /// The scheduler generation that was given it (bumped on every switch), or `None` for a
    /// request that never entered a scheduler (a flush; a held request released straight onto
    /// the dispatch list). A scheduler's hooks are called only for requests it was given.
    pub(crate) owner: Option<u32>,
    pub(crate) issued_at: Instant,
    /// Allocation order, the "earlier" of overlap ordering; a fused request keeps the smaller.
    pub(crate) sequence: u64,
    pub(crate) bios: crate::bios::BioChain,
}

impl Request {
    /// The sector just past the last one.
    pub const fn end(&self) -> Sector {
        self.start.offset(self.sector_count)
    }

    /// The data direction.
    pub const fn direction(&self) -> Direction {
        self.op.direction()
    }

    /// Whether someone waits for this request.
    pub const fn is_sync(&self) -> bool {
        self.flags.is_sync()
    }

    /// Where the request is in its life.
    pub const fn state(&self) -> RequestState {
        self.state
    }

    /// How many bios it carries.
    pub const fn bio_count(&self) -> u32 {
        self.bios.count
    }

    /// Its size in bytes.
    pub const fn size_bytes(&self) -> u64 {
        self.sector_count as u64 * SECTOR_SIZE_BYTES
    }

    /// When it went to the device (meaningful once in flight).
    pub const fn issued_at(&self) -> Instant {
        self.issued_at
    }

    /// A request made from `bio` at `now`, not yet in any queue. For tests and tools that drive
    /// a scheduler without a [`BlockQueue`](crate::BlockQueue).
    pub fn from_bio(bio: &Bio, now: Instant) -> Request {
        let flags = if bio.op == Op::Read { bio.flags | RequestFlags::SYNC } else { bio.flags };
        Request {
            op: bio.op,
            start: bio.start,
            sector_count: bio.sector_count,
            flags,
            priority: bio.priority,
            process: bio.process,
            created: now,
            cpu: bio.cpu,
            state: RequestState::Queued,
            started: false,
            activated: false,
            no_merge: false,
            owner: None,
            issued_at: Instant::ZERO,
            sequence: 0,
            bios: crate::bios::BioChain::EMPTY,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the nice-to-level rule of the ioprio documentation at its boundaries.
    #[test]
    fn class_none_takes_its_level_from_nice() {
        let level = |nice| IoPriority::from_nice(nice).unwrap().level();
        assert_eq!(level(-20), 0);
        assert_eq!(level(-5), 3);
        assert_eq!(level(-1), 3);
        assert_eq!(level(0), 4);
        assert_eq!(level(4), 4);
        assert_eq!(level(19), 7);
        assert!(IoPriority::from_nice(20).is_err());
        assert_eq!(IoPriority::from_nice(0).unwrap().effective_class(), IoClass::BestEffort);
    }

    // Proves the merge rule "lower class number wins, none counts as best-effort, then lower
    // level".
    #[test]
    fn the_better_priority_wins_a_merge() {
        let rt7 = IoPriority::realtime(7).unwrap();
        let be0 = IoPriority::best_effort(0).unwrap();
        let none3 = IoPriority::from_nice(-5).unwrap();
        assert_eq!(be0.better(rt7), rt7);
        assert_eq!(rt7.better(be0), rt7);
        assert_eq!(be0.better(none3), be0);
        assert_eq!(none3.better(IoPriority::best_effort(4).unwrap()), none3);
        assert_eq!(IoPriority::idle().better(none3), none3);
    }

    // Proves the 16-bit encoding round-trips and rejects what the kernel rejects.
    #[test]
    fn ioprio_values_round_trip() {
        for value in [0u32, 1 << 13, (1 << 13) | 7, (2 << 13) | 4, 3 << 13] {
            let prio = IoPriority::from_ioprio_value(value).unwrap();
            assert_eq!(u32::from(prio.to_ioprio_value()), value, "{prio}");
        }
        assert!(IoPriority::from_ioprio_value(1).is_err(), "class none with data");
        assert!(IoPriority::from_ioprio_value((2 << 13) | 8).is_err(), "level 8");
        assert!(IoPriority::from_ioprio_value(4 << 13).is_err(), "class 4");
        assert!(IoPriority::new(IoClass::BestEffort, 8).is_err());
    }

    #[test]
    fn reads_are_always_sync() {
        let mut bio = Bio::read(ProcessId(1), Sector(8), 8, BioTag(0));
        bio.flags = RequestFlags::NONE;
        assert!(Request::from_bio(&bio, Instant::ZERO).is_sync());
        let write = Bio::write(ProcessId(1), Sector(8), 8, BioTag(0));
        assert!(!Request::from_bio(&write, Instant::ZERO).is_sync());
    }
}
