//! `array`: a RAID controller over member devices of any model — a hardware RAID LUN.
//!
//! The controller accepts up to `depth` host commands. Each pays `overhead` (command
//! processing) and is then split by the RAID layout into member commands:
//!
//! * **RAID 0** stripes `stripe`-sized units round robin over the members;
//! * **RAID 1** mirrors every member; a read goes to the mirror with the shorter queue;
//! * **RAID 10** stripes over mirrored pairs;
//! * **RAID 5** stripes with rotating parity (left-symmetric); a write that covers whole stripes
//!   writes data and parity, a smaller one reads the old data and parity first
//!   (read-modify-write).
//!
//! With a write-back **cache** (`cache` > 0) a write finishes once its data is in controller
//! memory. Dirty data is kept as coalesced ranges and destaged to the members in the
//! background, below host reads in priority: whole stripe rows at once, as soon as they are
//! complete (for RAID 5 a full-row write needs no reads), and partial rows only when they have
//! not changed for 200 ms, when the cache is three quarters full, when a write waits for room
//! or a flush waits — so a sequential writer's data reaches the disks as full-stripe writes. A
//! write that finds the cache full waits for destaging to make room; a flush waits until
//! nothing is dirty; reads of cached data are served from the cache. With `cache=0` writes go
//! through.
//!
//! The cache policies are those of an LSI MegaRAID logical drive (workload-mechanisms.md
//! §2.2). **Write policy**: write-back as above only with a battery (`bbu=present`) or with
//! `write_policy=wb-bad-bbu`; `bbu=absent` falls back to write-through as the firmware does.
//! **Read policy**: `normal` (LSI's default) never reads ahead; `ahead` does after every read;
//! `adaptive` only when the read begins where the previous host read ended (the two most
//! recent reads sequential), and stops at the first read that does not. Read-ahead fetches the
//! rest of the read's stripe unit and the next one into the cache, queued behind the demand
//! read on the same mirror copy; a read covered by read-ahead in flight waits for it, one
//! covered by the cache finishes after the command overhead. **Cache I/O policy**: `direct`
//! keeps only read-ahead data; `cached` keeps every read's. Clean data shares the cache with
//! dirty data and is evicted oldest first whenever a write or new clean data needs the room;
//! a write replaces any clean copy of its sectors.
//!
//! Members keep their own queues (a member with command queuing reorders its own); the
//! controller feeds each member from two FIFOs, host-driven work first, destaging second.
//!
//! A large sequential read stream runs at the member's sequential bandwidth times the members
//! that hold distinct data — RAID 0 all of them, RAID 1 one, RAID 10 half, RAID 5 all but one
//! — within 5 %. Mirrors do not add to one sequential stream: a mirror that took every other
//! unit would skip the units its twin reads and lose a revolution, so the shorter-queue rule
//! keeps each stream on one side. A `san`'s link is outside the model and may cap it further
//! (`tests/device_conformance.rs` checks every preset).
//!
//! # Keys
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `members` | 4 | member devices |
//! | `member` | sas-15k-2008 | member spec; write `kind/key=value/...` for keys |
//! | `raid` | 10 | 0, 1, 10 or 5 |
//! | `stripe` | 64k | stripe unit |
//! | `cache` | 256m | controller cache (0: write-through, no read cache) |
//! | `write_policy` | wb | wb, wt, or wb-bad-bbu (write-back even without a battery) |
//! | `bbu` | present | battery; absent turns `wb` into write-through |
//! | `read_policy` | normal | normal (no read-ahead), ahead, adaptive |
//! | `io_policy` | direct | direct (keep read-ahead data only) or cached (keep all read data) |
//! | `depth` | 128 | host commands the controller accepts |
//! | `overhead` | 50us | controller processing per host command |
//! | `link` | — | used by `san`: the link in front of the LUNs |
//! | `multipath` | — | used by `san`: dm-multipath policy over the link's paths (`topology.rs`) |
//! | `rr_min_io` | — | used by `san`: bios per path before round robin moves on (1000) |
//! | `path_depth` | — | used by `san`: commands per LUN per path (default: the driver's per-LUN depth; 32 for `generic`) |
//! | `driver` | generic | the driver in front of the LUNs or disks (`device/driver.rs`) |
//!
//! # Deviations from the controller
//!
//! The firmware's algorithms are not documented (workload-mechanisms.md §2.2); where the model
//! needs one it states its own:
//!
//! * how far read-ahead reads (one stripe unit past the read's own, after the stripe-unit
//!   increments IBM's ServeRAID documented [U]); the adaptive test looks at host reads only,
//!   not writes, and at one stream per logical drive (interleaved streams defeat it);
//! * the destage order (full rows first from a sweeping position, partial rows by age) and
//!   the 200 ms partial-row age are the model's own;
//! * clean data is evicted oldest first (no LRU on hits); a write-through write drops the
//!   clean copy instead of updating it;
//! * battery learn cycles (write-through while the battery recalibrates) are not modelled;
//! * in `san`, each LUN owns a fixed share of the controller's cache (`cache` per LUN); the
//!   real board shares one cache among its logical drives.
//!
//! `jbod`'s `disk` is one spec for every disk or `SPEC+SPEC+...`, one per disk in order (the
//! first `disks` of a longer list): the classic study's desktop had four different drives.

use crate::LookupMap;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use elevator_core::{Duration, Instant, KeyKind, KeySpec, Op, ParamError, Params, Sector};

use super::driver::DRIVER_KEY;
use super::{Command, CommandId, DeviceModel, DeviceSpec, DeviceStats, Preset};

/// One line for `elevator list devices`.
pub const SUMMARY: &str =
    "RAID 0/1/10/5 controller over member devices, with a write-back cache and a command queue";

const MEMBERS: KeySpec = KeySpec {
    key: "members",
    kind: KeyKind::Integer { min: 1, max: 64 },
    default: "4",
    help: "member devices",
};
const MEMBER: KeySpec = KeySpec {
    key: "member",
    kind: KeyKind::Text,
    default: "sas-15k-2008",
    help: "member device spec, keys written kind/key=value/key=value",
};
const RAID: KeySpec = KeySpec {
    key: "raid",
    kind: KeyKind::Choice(&["0", "1", "10", "5"]),
    default: "10",
    help: "RAID level",
};
const STRIPE: KeySpec = KeySpec {
    key: "stripe",
    kind: KeyKind::Size { min_bytes: 4 << 10, max_bytes: 16 << 20 },
    default: "64k",
    help: "stripe unit",
};
const CACHE: KeySpec = KeySpec {
    key: "cache",
    kind: KeyKind::Size { min_bytes: 0, max_bytes: 64 << 30 },
    default: "256m",
    help: "controller write-back cache (0: write-through)",
};
const DEPTH: KeySpec = KeySpec {
    key: "depth",
    kind: KeyKind::Integer { min: 1, max: 4096 },
    default: "128",
    help: "host commands the controller accepts at once",
};
const OVERHEAD: KeySpec = KeySpec {
    key: "overhead",
    kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(100), bare_unit: "us" },
    default: "50us",
    help: "controller processing per host command",
};

// The logical drive's cache policies, as LSI's configuration tools offer them
// (workload-mechanisms.md §2.2). Each default keeps what `array` did before the policies
// existed where the spec names no default of its own.
const WRITE_POLICY: KeySpec = KeySpec {
    key: "write_policy",
    kind: KeyKind::Choice(&["wb", "wt", "wb-bad-bbu"]),
    default: "wb",
    help: "write-back (a write is done once in controller cache), write-through (done once on \
           the disks), or write-back even without a working battery (LSI's \"write back with \
           bad BBU\"); workload-mechanisms.md 2.2",
};
const BBU: KeySpec = KeySpec {
    key: "bbu",
    kind: KeyKind::Choice(&["present", "absent"]),
    default: "present",
    help: "battery backup unit of the cache; absent (or failed), write-back falls back to \
           write-through unless write_policy=wb-bad-bbu (workload-mechanisms.md 2.2)",
};
const READ_POLICY: KeySpec = KeySpec {
    key: "read_policy",
    kind: KeyKind::Choice(&["normal", "ahead", "adaptive"]),
    default: "normal",
    help: "controller read-ahead: normal (none, LSI's default), ahead (after every read), \
           adaptive (only while the two most recent reads were sequential); \
           workload-mechanisms.md 2.2",
};
const IO_POLICY: KeySpec = KeySpec {
    key: "io_policy",
    kind: KeyKind::Choice(&["direct", "cached"]),
    default: "direct",
    help: "cache I/O policy: direct (read data is not kept unless read ahead) or cached (every \
           read's data is kept for later reads); workload-mechanisms.md 2.2",
};

/// The keys of `array`.
pub const KEYS: &[KeySpec] = &[
    MEMBERS,
    MEMBER,
    RAID,
    STRIPE,
    CACHE,
    WRITE_POLICY,
    BBU,
    READ_POLICY,
    IO_POLICY,
    DEPTH,
    OVERHEAD,
    DRIVER_KEY,
];

/// The keys of `san`: LUNs (each an array) behind a shared link.
pub const SAN_KEYS: &[KeySpec] = &[
    KeySpec {
        key: "luns",
        kind: KeyKind::Integer { min: 1, max: 16 },
        default: "2",
        help: "LUNs, each a RAID array of its own, named sda, sdb, ...",
    },
    KeySpec {
        key: "link",
        kind: KeyKind::Text,
        default: "2x4gfc",
        help: "[N x] 1gfc|2gfc|4gfc|8gfc|gige|iscsi|10gige shared by the LUNs, or none (a local \
               RAID controller)",
    },
    KeySpec {
        key: "multipath",
        kind: KeyKind::Choice(crate::topology::MULTIPATH_POLICIES),
        default: "failover",
        help: "dm-multipath over the link's paths, each path its own queue: failover (one \
               path), multibus (round robin), group_by_prio (round robin over the paths to \
               the owning controller), or none (one queue, transfers on whichever path frees \
               first); without a link there is one queue whatever this says",
    },
    KeySpec {
        key: "rr_min_io",
        kind: KeyKind::Integer { min: 1, max: 100_000 },
        default: "1000",
        help: "bios sent down a path before round robin moves to the next (multipath-tools \
               default)",
    },
    KeySpec {
        key: "path_depth",
        kind: KeyKind::Integer { min: 1, max: 4096 },
        default: "",
        help: "commands each path may have at a LUN; default the driver's per-LUN depth \
               (qla2xxx 32, lpfc 30; 32 for generic)",
    },
    MEMBERS,
    MEMBER,
    RAID,
    STRIPE,
    CACHE,
    WRITE_POLICY,
    BBU,
    READ_POLICY,
    IO_POLICY,
    DEPTH,
    OVERHEAD,
    DRIVER_KEY,
];

/// The keys of `jbod`: independent disks, each its own device.
pub const JBOD_KEYS: &[KeySpec] = &[
    KeySpec {
        key: "disks",
        kind: KeyKind::Integer { min: 1, max: 64 },
        default: "4",
        help: "disks, named sda, sdb, ...",
    },
    KeySpec {
        key: "disk",
        kind: KeyKind::Text,
        default: "ide-7200-2004",
        help: "disk spec, keys written kind/key=value/key=value; one for every disk, or \
               SPEC+SPEC+... one per disk in order",
    },
    DRIVER_KEY,
];

/// One line for `elevator list devices` (`jbod`).
pub const JBOD_SUMMARY: &str =
    "independent disks, each a device of its own: one model for all, or one per disk";

/// `jbod`'s presets.
pub const JBOD_PRESETS: &[Preset] = &[Preset {
    name: "jbod",
    help: "the classic study's hdparm desktop: four different 2004 PATA drives, hda..hdd \
           (reports name them sda..sdd): a Maxtor DiamondMax Plus 9, a Seagate Barracuda \
           7200.7, a WD Caviar SE and a Hitachi Deskstar 7K250, all 160 GB. Driver ide-disk \
           with LBA48 (every 160 GB drive has it): one command at a time, one command per \
           channel (hda/hdb on the primary, hdc/hdd on the secondary), requests up to 1 MiB \
           under 2.6.9 and 512 KiB under 2.6.18 (host-mechanisms.md 2.3)",
    values: &[
        ("disks", "4"),
        ("disk", "maxtor-6y160p0+seagate-st3160021a+wd-wd1600jb+hitachi-hds722516vlat80"),
        ("driver", "ide-lba48"),
    ],
}];

/// One line for `elevator list devices` (`san`).
pub const SAN_SUMMARY: &str =
    "SAN: RAID LUNs behind a shared Fibre Channel or iSCSI link, reached through dm-multipath";

/// `san`'s presets.
pub const SAN_PRESETS: &[Preset] = &[
    Preset {
        name: "san",
        help: "the classic study's file server storage: two LUNs, each 8 x 15k disks in RAID 5 \
               with a 128 KiB segment and 1 GiB of controller cache, behind dual 4 Gb/s FC paths \
               (qla2xxx: 32 commands per LUN per path under 2.6.18 and RHEL 5 on ISP24xx, \
               requests up to 512 KiB; the HBA's maker is not given, QLogic assumed [U]); the \
               study does not name the array, so dm-multipath's default policy applies: \
               failover, one active path",
        values: &[
            ("driver", "qla2xxx"),
            ("luns", "2"),
            ("link", "2x4gfc"),
            ("multipath", "failover"),
            ("raid", "5"),
            ("members", "8"),
            ("stripe", "128k"),
            ("cache", "1g"),
            ("depth", "256"),
        ],
    },
    Preset {
        name: "megaraid-8",
        help: "the classic study's database storage: eight LUNs on one LSI MegaRAID controller \
               (no network link), each a RAID 1 pair of 15k SCSI disks with 64 KiB stripes and \
               its share of the controller's cache (8 MiB of the SCSI 320 boards' common 64 \
               MiB), write-back with a battery, no controller read-ahead (LSI's default \
               policy), direct I/O (workload-mechanisms.md 2.2). Driver megaraid_mbox (the SCSI \
               MegaRAID of 2005): 64 commands per logical drive and 128 for the adapter, \
               shared by all eight; requests up to 64 KiB (128 sectors; 26 segments allow 104 \
               KiB) under 2.6.9 and 2.6.18 alike (host-mechanisms.md 2.3, 2.5)",
        values: &[
            ("driver", "megaraid_mbox"),
            ("luns", "8"),
            ("link", "none"),
            // A local controller: no paths to choose between.
            ("multipath", "none"),
            ("raid", "1"),
            ("members", "2"),
            ("member", "scsi-15k-2005"),
            ("stripe", "64k"),
            // workload-mechanisms.md §2.2: SCSI 320-0/320-2 boards (megaraid_mbox's family)
            // carry 32-128 MiB, 64 MiB common; a static eighth per logical drive.
            ("cache", "8m"),
            // §6: "controller write-back cache when a BBU is present"; the write-up does not
            // say whether it was, a battery is assumed [inference].
            ("write_policy", "wb"),
            ("bbu", "present"),
            // §2.2: Normal (no read-ahead) is LSI's default read policy; the write-up names no
            // other. Direct I/O is the default cache I/O policy of LSI's tools [U].
            ("read_policy", "normal"),
            ("io_policy", "direct"),
            ("depth", "64"),
        ],
    },
    Preset {
        name: "iscsi-pool",
        help: "the classic study's iSCSI storage seen from a Linux initiator, as one host: one \
               LUN striped over two mirrored pairs of 7200 rpm disks, reached over two gigabit \
               Ethernet links (~118 MB/s each), the scheduler on the initiator; the study's \
               machine, with the scheduler on the target's disks behind IET's threads and a ZFS \
               initiator, is the iscsi kind's iscsi-zfs. \
               Driver iscsi_tcp (open-iscsi, not in the spec: 32 commands a LUN, requests up \
               to 512 KiB by the segment limit [U]); the target's kernel is not given",
        values: &[
            ("driver", "iscsi_tcp"),
            ("luns", "1"),
            ("link", "2xiscsi"),
            // The study's iSCSI server is a ZFS host, not dm-multipath: one queue whose
            // transfers use whichever link frees first.
            ("multipath", "none"),
            ("raid", "10"),
            ("members", "4"),
            ("member", "desktop-7200-2005"),
            ("cache", "512m"),
        ],
    },
];

/// `array`'s presets.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "array",
        help: "four 15k SAS disks in RAID 10 behind a 256 MiB write-back cache",
        values: &[],
    },
    Preset {
        name: "megaraid-lun",
        help: "an LSI MegaRAID-class LUN: 4 x 10k SAS in RAID 10, 64 KiB stripe, 256 MiB \
               cache (the SAS 8408E/8708 class's 128-256 MiB), write-back with a battery, no \
               read-ahead (LSI's default), direct I/O, 128 commands (megaraid_sas's per-LUN \
               depth); workload-mechanisms.md 2.1, 2.2",
        values: &[
            ("member", "sas-10k-2008"),
            ("members", "4"),
            ("raid", "10"),
            ("stripe", "64k"),
            ("cache", "256m"),
            ("write_policy", "wb"),
            ("bbu", "present"),
            ("read_policy", "normal"),
            ("io_policy", "direct"),
        ],
    },
];

/// The RAID layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Raid {
    Zero,
    One,
    Ten,
    Five,
}

/// Where a piece of a host command lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    member: usize,
    start: u64,
    sector_count: u32,
}

/// Bits of a member command's id that name its slot in [`Array::in_flight`]; the bits above
/// count commands, so ids still grow in the order the members are given them.
const SLOT_BITS: u32 = 24;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;

/// Work waiting for a member.
#[derive(Clone, Copy, Debug)]
struct MemberWork {
    member: usize,
    op: Op,
    start: u64,
    sector_count: u32,
    /// The parent (host command or destage) slot.
    parent: usize,
}

/// The controller's read-ahead policy (workload-mechanisms.md §2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadPolicy {
    /// No read-ahead ("Normal", LSI's default).
    Normal,
    /// Read ahead after every read ("Ahead").
    Ahead,
    /// Read ahead only while the two most recent reads were sequential ("Adaptive").
    Adaptive,
}

#[derive(Clone, Debug)]
enum ParentKind {
    /// A host command; finishes when its pieces do.
    Host { id: CommandId },
    /// Read-ahead of sectors `start..end` into the cache.
    Fetch { start: u64, end: u64 },
    /// Cached sectors `start..end` being destaged; they leave the cache when done.
    Destage { start: u64, end: u64 },
}

#[derive(Clone, Debug)]
struct Parent {
    kind: ParentKind,
    /// Member commands not yet finished.
    remaining: u32,
    /// RAID 5 read-modify-write: the writes to issue once the reads are done.
    then: Vec<MemberWork>,
}

// Ordered only so that it can sit in the timer heap: its key `(at, order)` is unique, so
// the heap never compares two timers themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// A host command's processing overhead ends.
    Ready(CommandId),
    /// A host command finished in the controller alone (cache hit, cached write).
    Finish(CommandId),
    /// The oldest partial row may have aged enough to be destaged.
    DestageAge,
}

/// How long a partial stripe row may wait for the rest of its data before it is destaged.
const PARTIAL_ROW_AGE: Duration = Duration::from_millis(200);
/// Most stripe rows destaged as one piece.
const ROWS_PER_DESTAGE: u64 = 4;

/// A dirty range of array sectors and when its oldest data was written.
#[derive(Clone, Copy, Debug)]
struct DirtyRange {
    end: u64,
    since: Instant,
}

/// The RAID controller.
#[derive(Debug)]
pub struct Array {
    raid: Raid,
    stripe_sectors: u64,
    /// A stripe row's data: the stripe unit times the members holding distinct data.
    row_sectors: u64,
    members: Vec<Box<dyn DeviceModel>>,
    /// Each member's `next_event`, refreshed whenever the array submits to or advances it
    /// (nothing else changes a member), so that the array's own `next_event` and `advance`
    /// need not ask every member every time.
    member_next: Vec<Option<Instant>>,
    /// The array's `next_event`, recomputed at the end of `submit` and `advance` (the only
    /// calls that change timers or members): the runner asks for it after every event, and
    /// the earliest timer is a walk down the timer tree.
    next_at: Option<Instant>,
    member_capacity_sectors: u64,
    capacity_sectors: u64,
    depth: u32,
    overhead: Duration,
    cache_bytes: u64,
    /// Whether writes finish once in the cache: write-back with a battery, or "write back with
    /// bad BBU"; write-through otherwise (workload-mechanisms.md §2.2).
    write_back: bool,
    read_policy: ReadPolicy,
    /// Cached I/O: demand reads' data stays in the cache too, not only read-ahead's.
    cached_io: bool,
    /// Where the previous host read ended: the adaptive read-ahead's sequential test.
    last_read_end: Option<u64>,
    /// Which copy of a mirror served the last demand read; read-ahead follows it so that a
    /// stream's prefetch continues on the disk whose head is already there.
    last_copy: usize,
    /// Clean cached ranges (read-ahead, or reads under cached I/O): start → (end, age order).
    clean: BTreeMap<u64, (u64, u64)>,
    /// The same ranges by (age order, start): the oldest is evicted first.
    clean_by_age: std::collections::BTreeSet<(u64, u64)>,
    clean_order: u64,
    clean_bytes: u64,
    /// Read-ahead in flight (start → end).
    fetching: BTreeMap<u64, u64>,
    /// Host reads waiting for read-ahead in flight that covers them.
    waiting_reads: Vec<CommandId>,
    /// Commands waiting for their overhead to end, and commands done in the controller, by
    /// `(at, order)`: a heap, as only the earliest is ever looked at or removed.
    timers: BinaryHeap<Reverse<(Instant, u64, Timer)>>,
    timer_order: u64,
    /// Host commands accepted, by id: the command as given.
    host: LookupMap<CommandId, Command>,
    /// Writes waiting for cache space, in arrival order.
    waiting_for_cache: VecDeque<Command>,
    /// Flushes waiting for the cache to drain.
    waiting_flushes: Vec<CommandId>,
    /// Bytes the cache holds: dirty and being destaged.
    dirty_bytes: u64,
    /// Dirty ranges not being destaged, coalesced, by start sector.
    dirty: BTreeMap<u64, DirtyRange>,
    /// The same ranges by (age, start): the oldest first.
    dirty_by_age: std::collections::BTreeSet<(Instant, u64)>,
    /// Starts of dirty ranges that hold at least one whole stripe row: the full rows to
    /// destage (kept as ranges change, so the destager does not test every long range).
    dirty_long: std::collections::BTreeSet<u64>,
    /// Ranges being destaged (start → end), for read hits.
    destaging: BTreeMap<u64, u64>,
    /// Destage pieces in flight.
    destages_in_flight: u32,
    /// Where the search for full rows resumes (the destage sweep's position).
    destage_cursor: u64,
    /// When a `DestageAge` timer is pending.
    destage_timer: Option<Instant>,
    parents: Vec<Option<Parent>>,
    free_parents: Vec<usize>,
    /// Per member: host-driven work first, destaging second.
    foreground: Vec<VecDeque<MemberWork>>,
    background: Vec<VecDeque<MemberWork>>,
    /// Member commands inside the members, by slot (the low [`SLOT_BITS`] of the id each
    /// member was given): a slab, so that a completion finds its work without hashing.
    in_flight: Vec<Option<MemberWork>>,
    free_in_flight: Vec<u32>,
    /// Per member: how many member commands are inside it.
    inside: Vec<u32>,
    /// Members whose FIFOs gained work or which finished a command since they were last fed:
    /// bit `m` for member `m` (at most 64 members), so that feeding looks at those alone.
    feed_pending: u64,
    /// Scratch for [`Array::plan_io`]: the member work of one host command or destage, and
    /// the pieces of one stripe row, kept to spare an allocation per command.
    work_scratch: Vec<MemberWork>,
    piece_scratch: Vec<Piece>,
    next_member_command: u64,
    finished_scratch: Vec<CommandId>,
    done: Vec<CommandId>,
    busy_since: Option<Instant>,
    stats: DeviceStats,
    cache_hits: u64,
    destaged_bytes: u64,
    read_modify_writes: u64,
    read_ahead_bytes: u64,
}

/// The disk spec of a `jbod` built as one device: its first disk.
pub(crate) fn jbod_disk(params: &Params) -> Result<DeviceSpec, ParamError> {
    Ok(jbod_disks(params, 1)?.swap_remove(0))
}

/// The spec of each of a `jbod`'s `count` disks: `disk` is one spec for all, or `A+B+...`,
/// one per disk.
pub(crate) fn jbod_disks(params: &Params, count: usize) -> Result<Vec<DeviceSpec>, ParamError> {
    // A list longer than `disks` is a preset's machine with fewer of its disks in use
    // (`jbod:disks=2` takes the first two); a shorter one leaves disks without a model.
    let texts: Vec<&str> = params.text("disk").split('+').map(str::trim).collect();
    if texts.len() != 1 && texts.len() < params.integer("disks") as usize {
        return Err(params.impossible(
            "disk",
            format!(
                "lists {} disks for {} (give one spec for all, or at least one per disk \
                 joined by +)",
                texts.len(),
                params.integer("disks")
            ),
        ));
    }
    (0..count)
        .map(|index| parse_nested(params, "disk", texts[index.min(texts.len() - 1)]))
        .collect()
}

/// Parses `kind/key=value/key=value` (the member syntax) into a device spec.
pub(crate) fn member_spec(params: &Params) -> Result<DeviceSpec, ParamError> {
    nested_spec(params, "member")
}

/// Parses the nested device spec in `key`, written `kind/key=value/key=value` because a spec
/// cannot hold `:` and `,` inside a value.
fn nested_spec(params: &Params, key: &'static str) -> Result<DeviceSpec, ParamError> {
    parse_nested(params, key, params.text(key))
}

/// Parses one nested device spec `text` of `key`.
fn parse_nested(params: &Params, key: &'static str, text: &str) -> Result<DeviceSpec, ParamError> {
    let spec_text = match text.split_once('/') {
        Some((kind, rest)) => format!("{kind}:{}", rest.replace('/', ",")),
        None => text.to_owned(),
    };
    let spec =
        DeviceSpec::parse(&spec_text).map_err(|error| params.impossible(key, error.to_string()))?;
    if matches!(
        spec.kind(),
        super::DeviceKind::Array | super::DeviceKind::San | super::DeviceKind::Jbod
    ) {
        return Err(params.impossible(key, "must be a single device, not an array or a topology"));
    }
    Ok(spec)
}

impl Array {
    /// A controller from checked parameters.
    pub fn from_params(params: &Params) -> Result<Array, ParamError> {
        let member = member_spec(params)?;
        let count = params.integer("members") as usize;
        let raid = match params.text("raid") {
            "0" => Raid::Zero,
            "1" => Raid::One,
            "10" => Raid::Ten,
            _ => Raid::Five,
        };
        match raid {
            Raid::Ten if count % 2 != 0 || count < 2 => {
                return Err(params.impossible("members", "RAID 10 needs an even number, 2 or more"));
            }
            Raid::Five if count < 3 => {
                return Err(params.impossible("members", "RAID 5 needs 3 or more"));
            }
            Raid::One if count < 2 => {
                return Err(params.impossible("members", "RAID 1 needs 2 or more"));
            }
            _ => {}
        }
        let stripe_bytes = params.size("stripe");
        if stripe_bytes % 4096 != 0 {
            return Err(params.impossible("stripe", "must be a multiple of 4k"));
        }
        let stripe_sectors = stripe_bytes / elevator_core::SECTOR_SIZE_BYTES;
        let members: Vec<Box<dyn DeviceModel>> =
            (0..count).map(|_| member.build()).collect::<Result<_, _>>()?;
        let member_capacity = members[0].capacity_sectors() / stripe_sectors * stripe_sectors;
        if member_capacity == 0 {
            return Err(params.impossible("stripe", "is larger than a member"));
        }
        let data_members = match raid {
            Raid::Zero => count as u64,
            Raid::One => 1,
            Raid::Ten => count as u64 / 2,
            Raid::Five => count as u64 - 1,
        };
        let cache_bytes = params.size("cache");
        let write_back = cache_bytes > 0
            && match params.text("write_policy") {
                "wb" => params.text("bbu") == "present",
                "wb-bad-bbu" => true,
                _ => false,
            };
        let read_policy = match params.text("read_policy") {
            "ahead" => ReadPolicy::Ahead,
            "adaptive" => ReadPolicy::Adaptive,
            _ => ReadPolicy::Normal,
        };
        Ok(Array {
            raid,
            write_back,
            read_policy,
            cached_io: params.text("io_policy") == "cached",
            last_read_end: None,
            last_copy: 0,
            clean: BTreeMap::new(),
            clean_by_age: Default::default(),
            clean_order: 0,
            clean_bytes: 0,
            fetching: BTreeMap::new(),
            waiting_reads: Vec::new(),
            read_ahead_bytes: 0,
            stripe_sectors,
            row_sectors: stripe_sectors * data_members,
            member_capacity_sectors: member_capacity,
            capacity_sectors: member_capacity * data_members,
            depth: params.integer("depth") as u32,
            overhead: params.time("overhead"),
            cache_bytes,
            timers: BinaryHeap::new(),
            timer_order: 0,
            host: LookupMap::default(),
            waiting_for_cache: VecDeque::new(),
            waiting_flushes: Vec::new(),
            dirty_bytes: 0,
            dirty: BTreeMap::new(),
            dirty_by_age: Default::default(),
            dirty_long: Default::default(),
            destaging: BTreeMap::new(),
            destages_in_flight: 0,
            destage_cursor: 0,
            destage_timer: None,
            parents: Vec::new(),
            free_parents: Vec::new(),
            foreground: (0..count).map(|_| VecDeque::new()).collect(),
            background: (0..count).map(|_| VecDeque::new()).collect(),
            in_flight: Vec::new(),
            free_in_flight: Vec::new(),
            inside: vec![0; count],
            feed_pending: 0,
            work_scratch: Vec::new(),
            piece_scratch: Vec::new(),
            next_member_command: 0,
            finished_scratch: Vec::new(),
            done: Vec::new(),
            member_next: vec![None; members.len()],
            next_at: None,
            members,
            busy_since: None,
            stats: DeviceStats::default(),
            cache_hits: 0,
            destaged_bytes: 0,
            read_modify_writes: 0,
        })
    }

    /// The earliest timer or member event, computed afresh.
    fn compute_next_event(&self) -> Option<Instant> {
        let mut next = self.timers.peek().map(|&Reverse((at, _, _))| at);
        for &at in self.member_next.iter().flatten() {
            if next.is_none_or(|earliest| at < earliest) {
                next = Some(at);
            }
        }
        next
    }

    fn timer(&mut self, at: Instant, timer: Timer) {
        self.timers.push(Reverse((at, self.timer_order, timer)));
        self.timer_order += 1;
    }

    fn new_parent(&mut self, parent: Parent) -> usize {
        match self.free_parents.pop() {
            Some(slot) => {
                self.parents[slot] = Some(parent);
                slot
            }
            None => {
                self.parents.push(Some(parent));
                self.parents.len() - 1
            }
        }
    }

    /// The pieces of `start..start+count` (array sectors) on the data members, appended to
    /// `pieces` (a buffer the caller keeps: this runs for every command).
    fn split_into(&self, start: u64, sector_count: u32, pieces: &mut Vec<Piece>) {
        let mut lba = start;
        let end = start + u64::from(sector_count);
        let count = self.members.len() as u64;
        while lba < end {
            let unit = lba / self.stripe_sectors;
            let offset = lba % self.stripe_sectors;
            let length = (self.stripe_sectors - offset).min(end - lba);
            let (member, row) = match self.raid {
                Raid::Zero => (unit % count, unit / count),
                Raid::One => (0, unit),
                Raid::Ten => ((unit % (count / 2)) * 2, unit / (count / 2)),
                Raid::Five => {
                    let data = count - 1;
                    let row = unit / data;
                    let parity = (count - 1) - row % count;
                    ((parity + 1 + unit % data) % count, row)
                }
            };
            pieces.push(Piece {
                member: member as usize,
                start: row * self.stripe_sectors + offset,
                sector_count: length as u32,
            });
            lba += length;
        }
    }

    /// The member holding RAID 5 parity for stripe row `row`.
    fn parity_member(&self, row: u64) -> usize {
        let count = self.members.len() as u64;
        ((count - 1) - row % count) as usize
    }

    /// Which copy of a mirrored piece a read goes to: the one with less queued.
    fn mirror_for_read(&mut self, first: usize, copies: usize) -> usize {
        let load = |member: usize| self.foreground[member].len() + self.inside[member] as usize;
        let best = (first..first + copies).min_by_key(|&member| (load(member), member));
        best.expect("at least one copy")
    }

    /// Turns a read or write of array sectors into member work for `parent`.
    fn plan_io(&mut self, op: Op, start: u64, sector_count: u32, parent: usize, background: bool) {
        let mut work = std::mem::take(&mut self.work_scratch);
        let mut pieces = std::mem::take(&mut self.piece_scratch);
        work.clear();
        let mut then = Vec::new();
        let copies = match self.raid {
            Raid::Zero | Raid::Five => 1,
            Raid::One => self.members.len(),
            Raid::Ten => 2,
        };
        // Read-ahead stays on the copy its stream's demand reads use.
        let follow = matches!(
            self.parents[parent].as_ref().expect("live parent").kind,
            ParentKind::Fetch { .. }
        );
        if self.raid == Raid::Five && op == Op::Write {
            self.plan_raid5_write(start, sector_count, parent, &mut work, &mut then, &mut pieces);
        } else {
            pieces.clear();
            self.split_into(start, sector_count, &mut pieces);
            // Every piece's copy is chosen before any is queued, so that each read sees the
            // queues as they were (the mirror choice looks at their lengths).
            for &piece in &pieces {
                let item = |member| MemberWork {
                    member,
                    op,
                    start: piece.start,
                    sector_count: piece.sector_count,
                    parent,
                };
                if op == Op::Read && follow {
                    work.push(item(piece.member + self.last_copy.min(copies - 1)));
                } else if op == Op::Read {
                    let member = self.mirror_for_read(piece.member, copies);
                    self.last_copy = member - piece.member;
                    work.push(item(member));
                } else {
                    work.extend((piece.member..piece.member + copies).map(item));
                }
            }
        }
        let parent_slot = self.parents[parent].as_mut().expect("live parent");
        parent_slot.remaining += work.len() as u32;
        parent_slot.then = then;
        self.enqueue(&work, background);
        self.work_scratch = work;
        self.piece_scratch = pieces;
    }

    fn enqueue(&mut self, work: &[MemberWork], background: bool) {
        for &item in work {
            let queue = if background { &mut self.background } else { &mut self.foreground };
            queue[item.member].push_back(item);
            self.feed_pending |= 1 << item.member;
        }
    }

    /// RAID 5 writes: whole stripe rows get fresh parity at once; a partial row reads the old
    /// data and parity first, then writes both (read-modify-write).
    fn plan_raid5_write(
        &mut self,
        start: u64,
        sector_count: u32,
        parent: usize,
        work: &mut Vec<MemberWork>,
        then: &mut Vec<MemberWork>,
        pieces: &mut Vec<Piece>,
    ) {
        let data = self.members.len() as u64 - 1;
        let row_sectors = self.stripe_sectors * data;
        let end = start + u64::from(sector_count);
        let mut row = start / row_sectors;
        while row * row_sectors < end {
            let row_start = row * row_sectors;
            let from = start.max(row_start);
            let to = end.min(row_start + row_sectors);
            let full = from == row_start && to == row_start + row_sectors;
            pieces.clear();
            self.split_into(from, (to - from) as u32, pieces);
            // Parity covers the same member offsets as the widest piece of the row.
            let first = pieces.iter().map(|p| p.start).min().expect("a row has pieces");
            let last = pieces
                .iter()
                .map(|p| p.start + u64::from(p.sector_count))
                .max()
                .expect("a row has pieces");
            let parity = Piece {
                member: self.parity_member(row),
                start: first,
                sector_count: (last - first) as u32,
            };
            let all = pieces.iter().copied().chain(std::iter::once(parity));
            let writes = all.clone().map(|piece| MemberWork {
                member: piece.member,
                op: Op::Write,
                start: piece.start,
                sector_count: piece.sector_count,
                parent,
            });
            if full {
                work.extend(writes);
            } else {
                self.read_modify_writes += 1;
                then.extend(writes);
                work.extend(all.map(|piece| MemberWork {
                    member: piece.member,
                    op: Op::Read,
                    start: piece.start,
                    sector_count: piece.sector_count,
                    parent,
                }));
            }
            row += 1;
        }
    }

    /// Starts a host command whose processing overhead has ended.
    fn start_host(&mut self, now: Instant, id: CommandId) {
        let command = self.host[&id];
        match command.op {
            Op::Read => {
                let (start, end) = (command.start.0, command.end().0);
                // The adaptive policy's test: this read begins where the previous one ended.
                let sequential = self.last_read_end == Some(start);
                self.last_read_end = Some(end);
                self.serve_read(now, id);
                let ahead = match self.read_policy {
                    ReadPolicy::Normal => false,
                    ReadPolicy::Ahead => true,
                    ReadPolicy::Adaptive => sequential,
                };
                // Read-ahead goes after the demand read, and needs a cache to land in.
                if ahead && self.cache_bytes > 0 {
                    self.read_ahead(end);
                }
            }
            Op::Write if self.write_back && !command.fua => {
                self.waiting_for_cache.push_back(command);
                self.admit_cached_writes(now);
            }
            Op::Write => {
                // The write supersedes any clean copy the cache holds.
                self.drop_clean(command.start.0, command.end().0);
                let parent = self.new_parent(Parent {
                    kind: ParentKind::Host { id },
                    remaining: 0,
                    then: Vec::new(),
                });
                self.plan_io(Op::Write, command.start.0, command.sector_count, parent, false);
            }
            Op::Flush => {
                self.waiting_flushes.push(id);
                self.finish_flushes(now);
                // A waiting flush lets partial rows go.
                self.destage_pump(now);
            }
            Op::Discard => self.timer(now, Timer::Finish(id)),
        }
    }

    /// A host read: from the cache when every sector is there, after the read-ahead in
    /// flight when that covers the rest, otherwise from the members.
    fn serve_read(&mut self, now: Instant, id: CommandId) {
        let command = self.host[&id];
        let (start, end) = (command.start.0, command.end().0);
        // Read-ahead in flight can cover it only if there is some: without, the second test
        // would find the gap the first one did.
        if self.next_gap(start, end, false).is_none() {
            self.cache_hits += 1;
            self.timer(now, Timer::Finish(id));
        } else if !self.fetching.is_empty() && self.next_gap(start, end, true).is_none() {
            self.waiting_reads.push(id);
        } else {
            let parent = self.new_parent(Parent {
                kind: ParentKind::Host { id },
                remaining: 0,
                then: Vec::new(),
            });
            self.plan_io(Op::Read, start, command.sector_count, parent, false);
        }
    }

    /// Reads ahead of a read ending at `end`: the rest of its stripe unit and the next one,
    /// whatever of them is neither cached nor being read already. The amount is not in the
    /// spec (workload-mechanisms.md §2.2 says only "reads sequentially ahead"); one stripe
    /// unit follows the stripe-unit increments other controllers of the time documented [U].
    fn read_ahead(&mut self, end: u64) {
        let ahead_end = (end.div_ceil(self.stripe_sectors) + 1) * self.stripe_sectors;
        let ahead_end = ahead_end.min(self.capacity_sectors);
        if end >= ahead_end {
            return;
        }
        for (start, stop) in self.gaps(end, ahead_end, true) {
            // A fetch is planned like a host read: one piece per stripe unit it touches.
            let parent = self.new_parent(Parent {
                kind: ParentKind::Fetch { start, end: stop },
                remaining: 0,
                then: Vec::new(),
            });
            self.fetching.insert(start, stop);
            self.plan_io(Op::Read, start, (stop - start) as u32, parent, false);
        }
    }

    /// The parts of `start..end` the cache does not hold (dirty, being destaged or clean) —
    /// nor, with `fetching`, read-ahead in flight.
    fn gaps(&self, start: u64, end: u64, fetching: bool) -> Vec<(u64, u64)> {
        let mut gaps = Vec::new();
        let mut at = start;
        while let Some((from, to)) = self.next_gap(at, end, fetching) {
            gaps.push((from, to));
            at = to;
        }
        gaps
    }

    /// The first of [`Array::gaps`] from `at` on, if any (none: the cache holds the rest).
    fn next_gap(&self, mut at: u64, end: u64, fetching: bool) -> Option<(u64, u64)> {
        fn covering(mut map: impl DoubleEndedIterator<Item = (u64, u64)>, at: u64) -> Option<u64> {
            map.next_back().map(|(_, range_end)| range_end).filter(|&range_end| range_end > at)
        }
        fn next_start(mut map: impl Iterator<Item = (u64, u64)>) -> Option<u64> {
            map.next().map(|(range_start, _)| range_start)
        }
        while at < end {
            let covered = [
                covering(self.dirty.range(..=at).map(|(&s, r)| (s, r.end)), at),
                covering(self.destaging.range(..=at).map(|(&s, &e)| (s, e)), at),
                covering(self.clean.range(..=at).map(|(&s, &(e, _))| (s, e)), at),
                covering(self.fetching.range(..=at).map(|(&s, &e)| (s, e)), at)
                    .filter(|_| fetching),
            ]
            .into_iter()
            .flatten()
            .max();
            if let Some(covered_end) = covered {
                at = covered_end;
                continue;
            }
            let after = at + 1;
            let next = [
                next_start(self.dirty.range(after..).map(|(&s, r)| (s, r.end))),
                next_start(self.destaging.range(after..).map(|(&s, &e)| (s, e))),
                next_start(self.clean.range(after..).map(|(&s, &(e, _))| (s, e))),
                next_start(self.fetching.range(after..).map(|(&s, &e)| (s, e)))
                    .filter(|_| fetching),
            ]
            .into_iter()
            .flatten()
            .min()
            .map_or(end, |next| next.min(end));
            return Some((at, next));
        }
        None
    }

    /// Keeps `start..end` as clean cached data, except what the cache holds already (a write
    /// that arrived meanwhile is newer), evicting the oldest clean data to make room.
    fn keep_clean(&mut self, start: u64, end: u64) {
        for (from, to) in self.gaps(start, end, false) {
            self.clean.insert(from, (to, self.clean_order));
            self.clean_by_age.insert((self.clean_order, from));
            self.clean_bytes += (to - from) * elevator_core::SECTOR_SIZE_BYTES;
        }
        self.clean_order += 1;
        self.evict_clean(0);
    }

    /// Evicts the oldest clean data until `extra_bytes` more fit beside what the cache holds.
    fn evict_clean(&mut self, extra_bytes: u64) {
        while self.dirty_bytes + self.clean_bytes + extra_bytes > self.cache_bytes {
            let Some((_, start)) = self.clean_by_age.pop_first() else { break };
            let (end, _) = self.clean.remove(&start).expect("aged clean range");
            self.clean_bytes -= (end - start) * elevator_core::SECTOR_SIZE_BYTES;
        }
    }

    /// Forgets clean data inside `start..end` (written anew).
    fn drop_clean(&mut self, start: u64, end: u64) {
        let overlapping: Vec<u64> = self
            .clean
            .range(..end)
            .rev()
            .take_while(|&(_, &(range_end, _))| range_end > start)
            .map(|(&s, _)| s)
            .collect();
        for range_start in overlapping {
            let (range_end, order) = self.clean.remove(&range_start).expect("overlapping range");
            self.clean_by_age.remove(&(order, range_start));
            self.clean_bytes -= (range_end - range_start) * elevator_core::SECTOR_SIZE_BYTES;
            for (from, to) in [(range_start, start), (end, range_end)] {
                if from < to {
                    self.clean.insert(from, (to, order));
                    self.clean_by_age.insert((order, from));
                    self.clean_bytes += (to - from) * elevator_core::SECTOR_SIZE_BYTES;
                }
            }
        }
    }

    /// Read-ahead landed: keep it, and serve the reads that waited for it.
    fn fetch_finished(&mut self, now: Instant, start: u64, end: u64) {
        self.fetching.remove(&start);
        self.read_ahead_bytes += (end - start) * elevator_core::SECTOR_SIZE_BYTES;
        self.keep_clean(start, end);
        for id in std::mem::take(&mut self.waiting_reads) {
            // Each is served from the cache, waits on, or (its data evicted) reads the disks.
            self.serve_read(now, id);
        }
    }

    /// Cached writes finish as soon as their data fits; the destager decides when the data
    /// goes to the members.
    fn admit_cached_writes(&mut self, now: Instant) {
        while let Some(command) = self.waiting_for_cache.front().copied() {
            let bytes = command.size_bytes();
            // Clean data gives way to writes; the write supersedes its own range's copy.
            self.drop_clean(command.start.0, command.end().0);
            self.evict_clean(bytes);
            let fits = self.dirty_bytes + bytes <= self.cache_bytes || self.dirty_bytes == 0;
            if !fits {
                break;
            }
            self.waiting_for_cache.pop_front();
            self.mark_dirty(command.start.0, command.end().0, now);
            self.timer(now, Timer::Finish(command.id));
        }
        self.destage_pump(now);
    }

    fn finish_flushes(&mut self, now: Instant) {
        if self.dirty.is_empty() && self.destaging.is_empty() && self.waiting_for_cache.is_empty() {
            for id in std::mem::take(&mut self.waiting_flushes) {
                self.timer(now, Timer::Finish(id));
            }
        }
    }

    /// Whether `start..end` holds at least one whole stripe row.
    fn holds_whole_row(&self, start: u64, end: u64) -> bool {
        let row = self.row_sectors;
        start.next_multiple_of(row) + row <= end / row * row
    }

    fn insert_range(&mut self, start: u64, range: DirtyRange) {
        self.dirty.insert(start, range);
        self.dirty_by_age.insert((range.since, start));
        if self.holds_whole_row(start, range.end) {
            self.dirty_long.insert(start);
        }
    }

    fn remove_range(&mut self, start: u64) -> DirtyRange {
        let range = self.dirty.remove(&start).expect("a dirty range");
        self.dirty_by_age.remove(&(range.since, start));
        self.dirty_long.remove(&start);
        range
    }

    /// Adds `start..end` to the dirty ranges, merging with those it touches; the cache's
    /// occupancy grows by the sectors that were not dirty yet.
    fn mark_dirty(&mut self, start: u64, end: u64, now: Instant) {
        // A sequential writer's data extends the range its previous write left: when that is
        // the only range touched and starts no later, it grows in place (its start and age
        // stay, so the indexes by age keep their entry) instead of leaving and coming back.
        if let Some((&range_start, range)) = self.dirty.range(..=end).next_back()
            && range_start <= start
            && range.end >= start
            && range.since <= now
            && self
                .dirty
                .range(..range_start)
                .next_back()
                .is_none_or(|(_, lower)| lower.end < start)
        {
            let already = range.end.min(end) - start;
            let new_end = range.end.max(end);
            self.dirty.get_mut(&range_start).expect("found above").end = new_end;
            if self.holds_whole_row(range_start, new_end) {
                self.dirty_long.insert(range_start);
            }
            self.dirty_bytes += ((end - start) - already) * elevator_core::SECTOR_SIZE_BYTES;
            return;
        }
        let mut new_start = start;
        let mut new_end = end;
        let mut since = now;
        let mut already = 0;
        // The ranges touching it, from the highest start down.
        while let Some((&range_start, range)) = self.dirty.range(..=end).next_back() {
            if range.end < start {
                break;
            }
            let range = self.remove_range(range_start);
            already += range.end.min(end).saturating_sub(range_start.max(start));
            new_start = new_start.min(range_start);
            new_end = new_end.max(range.end);
            since = since.min(range.since);
        }
        self.dirty_bytes += ((end - start) - already) * elevator_core::SECTOR_SIZE_BYTES;
        self.insert_range(new_start, DirtyRange { end: new_end, since });
    }

    /// Starts destaging while there is room for more and something is worth writing.
    fn destage_pump(&mut self, now: Instant) {
        let limit = 2 * self.members.len() as u32;
        while self.destages_in_flight < limit {
            let Some((start, end)) = self.next_destage_piece(now) else { break };
            self.take_for_destage(start, end);
            let parent = self.new_parent(Parent {
                kind: ParentKind::Destage { start, end },
                remaining: 0,
                then: Vec::new(),
            });
            self.plan_io(Op::Write, start, (end - start) as u32, parent, true);
            self.destages_in_flight += 1;
        }
        // Partial rows left behind are looked at again once the oldest has aged. One already
        // aged waits for a destage to complete instead (completions pump again): a timer at
        // `now` would fire for ever while the destages in flight are at their limit.
        if let Some(&(since, _)) = self.dirty_by_age.iter().next() {
            let at = since + PARTIAL_ROW_AGE;
            if at > now && self.destage_timer.is_none_or(|pending| pending > at) {
                self.destage_timer = Some(at);
                self.timer(at, Timer::DestageAge);
            }
        }
    }

    /// The next piece to destage: whole stripe rows from the sweep's position, or — under
    /// pressure, for a flush, or once aged — the oldest partial row.
    fn next_destage_piece(&mut self, now: Instant) -> Option<(u64, u64)> {
        let row = self.row_sectors;
        // The first range with a whole row from the sweep's position on, wrapping around.
        let full = self.dirty_long.range(self.destage_cursor..).next();
        if let Some(&start) = full.or_else(|| self.dirty_long.range(..self.destage_cursor).next()) {
            let end = self.dirty[&start].end;
            let first_row = start.next_multiple_of(row);
            let last_row = end / row * row;
            debug_assert!(first_row + row <= last_row, "dirty_long holds whole rows only");
            let piece_end = last_row.min(first_row + ROWS_PER_DESTAGE * row);
            self.destage_cursor = piece_end;
            return Some((first_row, piece_end));
        }
        let pressure = self.dirty_bytes * 4 >= self.cache_bytes * 3
            || !self.waiting_for_cache.is_empty()
            || !self.waiting_flushes.is_empty();
        let &(since, start) = self.dirty_by_age.iter().next()?;
        if !pressure && now < since + PARTIAL_ROW_AGE {
            return None;
        }
        let end = self.dirty[&start].end;
        let row_end = (start / row + 1) * row;
        Some((start, end.min(row_end.max(start + 1))))
    }

    /// Moves `start..end` (inside one dirty range) from the dirty ranges to the destaging ones.
    fn take_for_destage(&mut self, start: u64, end: u64) {
        let (&range_start, _) = self.dirty.range(..=start).next_back().expect("piece is dirty");
        let range = self.remove_range(range_start);
        debug_assert!(range_start <= start && end <= range.end);
        if range_start < start {
            self.insert_range(range_start, DirtyRange { end: start, since: range.since });
        }
        if end < range.end {
            self.insert_range(end, DirtyRange { end: range.end, since: range.since });
        }
        self.destaging.insert(start, end);
    }

    /// Feeds members from their FIFOs while they have room.
    fn feed_members(&mut self, now: Instant) {
        // Only members that gained work or room since they were last fed can take more: every
        // other one has empty FIFOs or is full.
        let mut pending = std::mem::take(&mut self.feed_pending);
        while pending != 0 {
            let member = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            // A member's next event changes only when it is given work or advanced (advance
            // refreshes it itself): asking an untouched member again would cost a call on
            // every member for every event of the array.
            let mut submitted = false;
            // Most members have nothing queued: look at the queues before asking the member
            // for its depth (a dynamic call).
            while !(self.foreground[member].is_empty() && self.background[member].is_empty())
                && self.inside[member] < self.members[member].queue_depth()
            {
                let Some(item) = self.foreground[member]
                    .pop_front()
                    .or_else(|| self.background[member].pop_front())
                else {
                    break;
                };
                let slot = match self.free_in_flight.pop() {
                    Some(slot) => slot as usize,
                    None => {
                        self.in_flight.push(None);
                        self.in_flight.len() - 1
                    }
                };
                assert!((slot as u64) <= SLOT_MASK, "array: member commands beyond the slab");
                let id = (self.next_member_command << SLOT_BITS) | slot as u64;
                self.next_member_command += 1;
                let start = item.start;
                debug_assert!(start + u64::from(item.sector_count) <= self.member_capacity_sectors);
                self.members[member].submit(
                    now,
                    Command {
                        id: CommandId(id),
                        op: item.op,
                        start: Sector(start),
                        sector_count: item.sector_count,
                        fua: false,
                    },
                );
                self.in_flight[slot] = Some(item);
                self.inside[member] += 1;
                submitted = true;
            }
            if submitted {
                self.member_next[member] = self.members[member].next_event();
            }
        }
    }

    /// A member command finished: account it to its parent.
    fn member_finished(&mut self, now: Instant, item: MemberWork) {
        let parent = self.parents[item.parent].as_mut().expect("live parent");
        parent.remaining -= 1;
        if parent.remaining > 0 {
            return;
        }
        if !parent.then.is_empty() {
            let then = std::mem::take(&mut parent.then);
            parent.remaining = then.len() as u32;
            let background = matches!(parent.kind, ParentKind::Destage { .. });
            self.enqueue(&then, background);
            return;
        }
        let parent = self.parents[item.parent].take().expect("live parent");
        self.free_parents.push(item.parent);
        match parent.kind {
            ParentKind::Host { id } => {
                let command = self.host[&id];
                if self.cached_io && command.op == Op::Read && self.cache_bytes > 0 {
                    self.keep_clean(command.start.0, command.end().0);
                }
                self.timer(now, Timer::Finish(id));
            }
            ParentKind::Fetch { start, end } => self.fetch_finished(now, start, end),
            ParentKind::Destage { start, end } => {
                let bytes = (end - start) * elevator_core::SECTOR_SIZE_BYTES;
                self.destaging.remove(&start);
                self.destages_in_flight -= 1;
                self.dirty_bytes -= bytes;
                self.destaged_bytes += bytes;
                self.admit_cached_writes(now);
                self.finish_flushes(now);
            }
        }
    }
}

impl DeviceModel for Array {
    fn describe(&self) -> String {
        format!(
            "array: RAID {} of {} x ({}), stripe {}, cache {} {}, read {}{}, {} commands",
            match self.raid {
                Raid::Zero => "0",
                Raid::One => "1",
                Raid::Ten => "10",
                Raid::Five => "5",
            },
            self.members.len(),
            self.members[0].describe(),
            elevator_core::format_size(self.stripe_sectors * elevator_core::SECTOR_SIZE_BYTES),
            elevator_core::format_size(self.cache_bytes),
            if self.write_back { "write-back" } else { "write-through" },
            match self.read_policy {
                ReadPolicy::Normal => "normal",
                ReadPolicy::Ahead => "ahead",
                ReadPolicy::Adaptive => "adaptive",
            },
            if self.cached_io { " cached" } else { "" },
            self.depth
        )
    }

    fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }

    fn queue_depth(&self) -> u32 {
        self.depth
    }

    fn rotational(&self) -> bool {
        self.members[0].rotational()
    }

    fn submit(&mut self, now: Instant, command: Command) {
        // The engine promises never to exceed the depth; check it, as hdd and ssd do.
        assert!(self.host.len() < self.depth as usize, "array: submit beyond depth {}", self.depth);
        self.host.insert(command.id, command);
        self.busy_since.get_or_insert(now);
        self.timer(now + self.overhead, Timer::Ready(command.id));
        self.next_at = self.compute_next_event();
    }

    fn next_event(&self) -> Option<Instant> {
        debug_assert_eq!(self.next_at, self.compute_next_event(), "next_at is kept current");
        self.next_at
    }

    fn advance(&mut self, now: Instant, finished: &mut Vec<CommandId>) {
        // Members first: their completions may start follow-up work and finish host commands.
        let mut scratch = std::mem::take(&mut self.finished_scratch);
        for member in 0..self.members.len() {
            while let Some(at) = self.member_next[member].filter(|&at| at <= now) {
                scratch.clear();
                self.members[member].advance(at, &mut scratch);
                self.member_next[member] = self.members[member].next_event();
                for &CommandId(id) in &scratch {
                    let slot = (id & SLOT_MASK) as usize;
                    let item =
                        self.in_flight[slot].take().expect("a member finished its own command");
                    self.free_in_flight.push(slot as u32);
                    self.inside[member] -= 1;
                    // It has room again.
                    self.feed_pending |= 1 << member;
                    self.member_finished(at, item);
                }
            }
        }
        self.finished_scratch = scratch;
        while let Some(&Reverse((at, _, timer))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            match timer {
                Timer::Ready(id) => self.start_host(at, id),
                Timer::DestageAge => {
                    if self.destage_timer == Some(at) {
                        self.destage_timer = None;
                    }
                    self.destage_pump(at);
                }
                Timer::Finish(id) => {
                    let command = self.host.remove(&id).expect("a host command finishes once");
                    match command.op {
                        Op::Read => self.stats.sectors_read += u64::from(command.sector_count),
                        Op::Write => self.stats.sectors_written += u64::from(command.sector_count),
                        Op::Flush | Op::Discard => {}
                    }
                    self.stats.commands += 1;
                    self.done.push(id);
                }
            }
        }
        self.feed_members(now);
        finished.append(&mut self.done);
        if self.host.is_empty()
            && let Some(since) = self.busy_since.take()
        {
            self.stats.busy_ns += now.saturating_since(since).as_nanos();
        }
        self.next_at = self.compute_next_event();
    }

    fn stats(&self) -> DeviceStats {
        let mut stats = self.stats.clone();
        let mut member_commands = 0;
        for member in &self.members {
            let member_stats = member.stats();
            stats.seek_distance_sectors += member_stats.seek_distance_sectors;
            member_commands += member_stats.commands;
        }
        stats.extra = vec![
            ("member_commands", member_commands),
            ("cache_read_hits", self.cache_hits),
            ("destaged_bytes", self.destaged_bytes),
            ("read_modify_writes", self.read_modify_writes),
            ("read_ahead_bytes", self.read_ahead_bytes),
        ];
        stats
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::Op;

    use super::*;
    use crate::device::{DeviceSpec, Probe, throughput_bytes_per_s};

    fn array(text: &str) -> Box<dyn DeviceModel> {
        DeviceSpec::parse(text).unwrap().build().unwrap()
    }

    // Proves the RAID 0 layout: consecutive stripe units land on consecutive members, and a
    // stream of large reads runs at the sum of the members' rates.
    #[test]
    fn raid0_stripes_and_scales() {
        let single = DeviceSpec::parse("ram:bandwidth=100m,latency=10us").unwrap();
        let mut probe = Probe::new(single.build().unwrap());
        let one = throughput_bytes_per_s(
            &probe.closed_loop((0..400).map(|i| (Op::Read, Sector(i * 2048), 2048)), 8),
        );
        for members in [2u64, 4] {
            let spec = format!(
                "array:raid=0,members={members},member=ram/bandwidth=100m/latency=10us,cache=0,overhead=0"
            );
            let mut probe = Probe::new(array(&spec));
            let run = probe.closed_loop((0..400).map(|i| (Op::Read, Sector(i * 2048), 2048)), 16);
            let rate = throughput_bytes_per_s(&run);
            let scale = rate / one;
            assert!((scale / members as f64 - 1.0).abs() < 0.1, "{members} members: x{scale:.2}");
        }
    }

    // Proves the layout arithmetic of each level on a small geometry.
    #[test]
    fn layouts_place_units_where_they_belong() {
        let a = Array::from_params(&params("array:raid=0,members=3,member=ram,stripe=4k")).unwrap();
        let split = |array: &Array, start: u64, sector_count: u32| {
            let mut pieces = Vec::new();
            array.split_into(start, sector_count, &mut pieces);
            pieces
        };
        let units: Vec<usize> = split(&a, 0, 8 * 6).iter().map(|p| p.member).collect();
        assert_eq!(units, [0, 1, 2, 0, 1, 2]);
        let five =
            Array::from_params(&params("array:raid=5,members=4,member=ram,stripe=4k")).unwrap();
        // Row 0: parity on member 3, data on 0, 1, 2; row 1: parity on 2, data on 3, 0, 1.
        let members: Vec<usize> = split(&five, 0, 8 * 6).iter().map(|p| p.member).collect();
        assert_eq!(members, [0, 1, 2, 3, 0, 1]);
        assert_eq!((five.parity_member(0), five.parity_member(1)), (3, 2));
        assert_eq!(five.capacity_sectors, 3 * five.member_capacity_sectors);
    }

    fn params(text: &str) -> Params {
        let spec = elevator_core::ComponentSpec::parse("device", text).unwrap();
        Params::resolve(&spec, KEYS, &[]).unwrap()
    }

    // Proves the write-back cache: writes finish at controller speed while the cache has room,
    // then at destage speed; a flush waits for the cache to drain; write-through writes pay the
    // members' time.
    #[test]
    fn the_cache_absorbs_writes_until_full() {
        let member = "member=ram/bandwidth=10m/latency=100us";
        let cached = format!("array:raid=0,members=1,{member},cache=1m,overhead=10us");
        let mut probe = Probe::new(array(&cached));
        let burst = probe.closed_loop((0..16).map(|i| (Op::Write, Sector(i * 128), 128)), 1);
        // 16 x 64 KiB = 1 MiB fits: each finishes after the overhead alone.
        assert!(burst.iter().all(|t| t.finished - t.submitted == Duration::from_micros(10)));
        let more = probe.closed_loop([(Op::Write, Sector(1 << 20), 128)], 1);
        assert!(more[0].finished - more[0].submitted > Duration::from_millis(5), "waits for room");
        let flush = probe.closed_loop([(Op::Flush, Sector(0), 0)], 1);
        assert!(flush[0].finished - flush[0].submitted > Duration::from_millis(5));
        let through = format!("array:raid=0,members=1,{member},cache=0,overhead=10us");
        let mut probe = Probe::new(array(&through));
        let write = probe.closed_loop([(Op::Write, Sector(0), 128)], 1);
        assert!(write[0].finished - write[0].submitted > Duration::from_millis(6));
    }

    // Proves RAID 5's small writes read before they write, and full-stripe writes do not.
    #[test]
    fn raid5_small_writes_read_modify_write() {
        let spec = "array:raid=5,members=4,member=ram,stripe=4k,cache=0";
        let mut probe = Probe::new(array(spec));
        probe.closed_loop([(Op::Write, Sector(0), 8)], 1);
        let stats = probe.device().stats();
        assert_eq!(stats.extra[3], ("read_modify_writes", 1));
        assert_eq!(stats.extra[0], ("member_commands", 4), "2 reads + 2 writes");
        let mut probe = Probe::new(array(spec));
        probe.closed_loop([(Op::Write, Sector(0), 24)], 1);
        let stats = probe.device().stats();
        assert_eq!(stats.extra[3], ("read_modify_writes", 0));
        assert_eq!(stats.extra[0], ("member_commands", 4), "3 data + 1 parity");
    }

    // Proves the cache coalesces: three cached writes that together fill a RAID 5 stripe row go
    // to the disks as one full-row write (3 data + 1 parity, no reads), while a lone partial
    // row waits 200 ms for the rest of its data and is then written with a read-modify-write.
    #[test]
    fn cached_writes_coalesce_into_full_stripe_rows() {
        let spec = "array:raid=5,members=4,member=ram,stripe=4k,cache=1m,overhead=0";
        let mut probe = Probe::new(array(spec));
        probe.closed_loop((0..3).map(|i| (Op::Write, Sector(i * 8), 8)), 1);
        probe.settle();
        let stats = probe.device().stats();
        assert_eq!(stats.extra[3], ("read_modify_writes", 0));
        assert_eq!(stats.extra[0], ("member_commands", 4));

        let mut probe = Probe::new(array(spec));
        let lone = probe.closed_loop([(Op::Write, Sector(0), 8)], 1);
        assert_eq!(lone[0].finished, Instant::ZERO, "a cached write is done at once");
        let idle_at = probe.settle();
        assert!(idle_at >= Instant::from_millis(200), "the partial row waited: {idle_at:?}");
        assert_eq!(probe.device().stats().extra[3], ("read_modify_writes", 1));
    }

    // Proves the index of dirty ranges that hold a whole stripe row stays what a scan of
    // every range finds, and the cache's byte count what its ranges hold, while writes grow a
    // range in place (sequential), bridge two ranges, overlap a range's start and fill whole
    // rows at once, with full rows leaving for the members in between (which splits ranges):
    // the destager picks its rows from that index alone.
    #[test]
    fn the_whole_row_index_follows_every_range_change() {
        let spec = "array:raid=5,members=4,member=ram,stripe=4k,cache=1m,overhead=0";
        let mut array = Array::from_params(&params(spec)).unwrap();
        // A row is 3 data units of 8 sectors.
        assert_eq!(array.row_sectors, 24);
        fn check(array: &Array) {
            let scanned: std::collections::BTreeSet<u64> = array
                .dirty
                .iter()
                .filter(|&(&start, range)| array.holds_whole_row(start, range.end))
                .map(|(&start, _)| start)
                .collect();
            assert_eq!(array.dirty_long, scanned);
            let dirty: u64 = array.dirty.iter().map(|(&start, range)| range.end - start).sum();
            let destaging: u64 = array.destaging.iter().map(|(&start, &end)| end - start).sum();
            assert_eq!(array.dirty_bytes, (dirty + destaging) * elevator_core::SECTOR_SIZE_BYTES);
        }
        fn run_until(array: &mut Array, until: Instant, finished: &mut Vec<CommandId>) {
            while let Some(at) = array.next_event().filter(|&at| at <= until) {
                array.advance(at, finished);
                check(array);
            }
        }
        let writes = [
            (0, 5),
            (5, 5),
            (10, 5),
            (15, 5),
            (20, 5),
            (25, 10),
            (100, 8),
            (90, 8),
            (98, 2),
            (200, 30),
            (190, 15),
            (300, 48),
            (40, 60),
        ];
        let mut finished = Vec::new();
        let mut now = Instant::ZERO;
        for (id, (start, sector_count)) in writes.into_iter().enumerate() {
            let command = Command {
                id: CommandId(id as u64),
                op: Op::Write,
                start: Sector(start),
                sector_count,
                fua: false,
            };
            array.submit(now, command);
            now += Duration::from_micros(20);
            run_until(&mut array, now, &mut finished);
        }
        run_until(&mut array, Instant::from_millis(1000), &mut finished);
        assert_eq!(finished.len(), writes.len());
        assert!(array.dirty.is_empty() && array.dirty_bytes == 0, "everything was destaged");
    }

    // Proves mirrors serve reads from either copy and take writes on both.
    #[test]
    fn mirrors_spread_reads_and_duplicate_writes() {
        let spec = "array:raid=1,members=2,member=ram,cache=0";
        let mut probe = Probe::new(array(spec));
        probe.closed_loop((0..10).map(|i| (Op::Read, Sector(i * 8), 8)), 10);
        assert_eq!(probe.device().stats().extra[0], ("member_commands", 10));
        probe.closed_loop([(Op::Write, Sector(0), 8)], 1);
        assert_eq!(probe.device().stats().extra[0], ("member_commands", 12));
    }

    #[test]
    fn impossible_layouts_are_refused() {
        for (spec, key) in [
            ("array:raid=10,members=3,member=ram", "members"),
            ("array:raid=5,members=2,member=ram", "members"),
            ("array:member=floppy", "member"),
            ("array:member=array", "member"),
            ("array:stripe=6k,member=ram", "stripe"),
        ] {
            let error = DeviceSpec::parse(spec).unwrap_err().to_string();
            assert!(error.contains(key), "{spec}: {error}");
        }
    }
}
