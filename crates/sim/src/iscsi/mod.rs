//! An iSCSI file server as two hosts: a ZFS initiator reading files from a pool of iSCSI LUNs,
//! and a Linux target whose disks — one per LUN — sit behind its worker threads and run the
//! scheduler under test (`workload-mechanisms.md` §3, §6 "iSCSI target with ZFS initiator").
//!
//! ```text
//!  initiator (ZFS)                        links               target (Linux, the runner's host)
//!  reader ─read()─> records: cached? ──> per-LUN vdev queue ──> session window ──> work list
//!                   prefetch (zfetch)     4 at once, +2 per      32 commands         │ idle worker
//!                                         completion, ≤ 35       per LUN            thread: bios
//!  reader <─ data <──────────────────── response data <────────────────── disk <─ scheduler
//! ```
//!
//! The runner's host is the **target**: its block queues, scheduler instances and disks are
//! the ones the study's administrators switched schedulers on. The initiator lives here, in the
//! [`Fabric`]: the workload's readers are initiator processes whose `read()`s go to ZFS
//! ([`zfs`]), which sends 128 KiB SCSI READs over the links to the target ([`iet`]), where a
//! worker thread carries each out — so one sequential reader reaches the target's scheduler as
//! requests from several threads, each a process of its own with one request at a time.
//!
//! The fabric is a state machine like the host: the runner hands it reads
//! ([`Fabric::read`]) and the target's completions ([`Fabric::target_done`]), runs it at
//! [`Fabric::next_event`], and carries out the [`FabricAction`]s it asks for: submit a worker
//! thread's I/O on a target disk, or finish a reader's call.
//!
//! Links: two gigabit links (§3.4) of the `iscsi` link type; each LUN's session uses one link
//! (`link_assign=lun`: LUN i on link i mod links, so a reader's mirror sides and pairs spread
//! over both), or each command the next link in turn (`rr`, Solaris MPxIO's round robin).
//! A command PDU costs the link's per-command latency; a read's data crosses the link after
//! the target's disk is done.
//!
//! # Deviations
//!
//! See [`zfs`] and [`iet`] for each side's. Besides: the initiator's CPU is not modelled (a
//! 2009 server does not limit two gigabit links), and a session's window frees when the
//! response reaches the initiator (IET advances `MaxCmdSN` when a command completes at the
//! target; the difference is one link transfer).

pub mod iet;
pub mod zfs;

use std::collections::{BTreeMap, BTreeSet};

use elevator_core::{Instant, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId};

use crate::device::Preset;
use crate::topology::{Flow, Link, LinkSpec};
use iet::{IoMode, Target};
use zfs::{Pool, VdevLimits, VdevQueue, Zfetch};

/// One line for `elevator list devices`.
pub const SUMMARY: &str = "an iSCSI file server as two hosts: a ZFS initiator (mirror pairs, \
                           prefetch, per-LUN queues) over gigabit links to a Linux target's \
                           disks, each behind IET's worker threads and the scheduler under test";

/// The keys of `iscsi`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "mirrors",
        kind: KeyKind::Integer { min: 1, max: 16 },
        default: "2",
        help: "top-level mirror vdevs of the initiator's pool",
    },
    KeySpec {
        key: "ways",
        kind: KeyKind::Integer { min: 1, max: 4 },
        default: "2",
        help: "LUNs per mirror; the target has mirrors x ways disks, one per LUN",
    },
    KeySpec {
        key: "member",
        kind: KeyKind::Text,
        default: "desktop-7200-2005",
        help: "each target disk's spec, written kind/key=value/key=value",
    },
    crate::device::driver::DRIVER_KEY,
    KeySpec {
        key: "recordsize",
        kind: KeyKind::Size { min_bytes: 4096, max_bytes: 128 << 10 },
        default: "128k",
        help: "ZFS record size (a power of two; 128 KiB is ZFS's default and largest)",
    },
    KeySpec {
        key: "prefetch",
        kind: KeyKind::Flag,
        default: "1",
        help: "ZFS file prefetch (zfs_prefetch_disable=0)",
    },
    KeySpec {
        key: "vdev_max_pending",
        kind: KeyKind::Integer { min: 1, max: 1024 },
        default: "35",
        help: "zfs_vdev_max_pending: 35 up to ONNV 2009-10-15, 10 after",
    },
    KeySpec {
        key: "vdev_min_pending",
        kind: KeyKind::Integer { min: 1, max: 1024 },
        default: "4",
        help: "zfs_vdev_min_pending: reads issued at once before the ramp",
    },
    KeySpec {
        key: "vdev_ramp_rate",
        kind: KeyKind::Integer { min: 1, max: 64 },
        default: "2",
        help: "zfs_vdev_ramp_rate: reads issued per completion",
    },
    KeySpec {
        key: "link",
        kind: KeyKind::Text,
        default: "2xiscsi",
        help: "[N x] link type between initiator and target (elevator list devices shows the \
               types)",
    },
    KeySpec {
        key: "link_assign",
        kind: KeyKind::Choice(&["lun", "rr"]),
        default: "lun",
        help: "lun: each LUN's session on one link (LUN i on link i mod N); rr: each command \
               on the next link (MPxIO round robin)",
    },
    KeySpec {
        key: "queued_commands",
        kind: KeyKind::Integer { min: 1, max: 256 },
        default: "32",
        help: "IET QueuedCommands: a session's command window",
    },
    KeySpec {
        key: "wthreads",
        kind: KeyKind::Integer { min: 1, max: 128 },
        default: "8",
        help: "IET Wthreads: worker threads per target",
    },
    KeySpec {
        key: "luns_per_target",
        kind: KeyKind::Integer { min: 1, max: 64 },
        default: "1",
        help: "LUNs per IET target (and per session): 1 is one session per LUN",
    },
    KeySpec {
        key: "iet_io",
        kind: KeyKind::Choice(&["blockio", "fileio"]),
        default: "blockio",
        help: "IET Type: blockio (bios from the worker thread) or fileio (page-cache reads)",
    },
];

/// `iscsi`'s presets; the first is what the bare name means.
pub const PRESETS: &[Preset] = &[Preset {
    name: "iscsi-zfs",
    help: "the classic study's iSCSI file server (write-up of 31 August 2009): a ZFS pool of \
           two mirror pairs, 128 KiB records, prefetch on, zfs_vdev_max_pending 35 (the value \
           before ONNV 2009-10-15), over two gigabit links, one session per LUN; the target \
           runs IET with 8 worker threads per target, a window of 32, blockio [inference: \
           the write-up names neither IET's Type nor its version; blockio, in IET since 0.4.15 \
           of 2007, is what lets the target's scheduler see the initiator's requests, which is \
           what the write-up compares], one LUN per target disk: 7200 rpm SATA disks on AHCI \
           [inference: the write-up gives no disk model]",
    values: &[("driver", "ahci")],
}];

/// How sessions use the links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkAssign {
    /// LUN i's session on link i mod links.
    PerLun,
    /// Each command on the next link in turn.
    RoundRobin,
}

/// The checked configuration of the initiator, links and target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IscsiSpec {
    /// Top-level mirror vdevs.
    pub mirrors: u32,
    /// LUNs per mirror.
    pub ways: u32,
    /// ZFS record size.
    pub record_bytes: u64,
    /// ZFS prefetch on.
    pub prefetch: bool,
    /// The per-LUN queue's limits.
    pub vdev: VdevLimits,
    /// The links.
    pub link: LinkSpec,
    /// How sessions use them.
    pub link_assign: LinkAssign,
    /// A session's command window.
    pub queued_commands: u32,
    /// Worker threads per target.
    pub wthreads: u32,
    /// LUNs per target.
    pub luns_per_target: u32,
    /// How the target reads its disks.
    pub io_mode: IoMode,
}

impl IscsiSpec {
    /// The checked values of an `iscsi` spec.
    pub fn from_params(params: &Params) -> Result<IscsiSpec, ParamError> {
        let record_bytes = params.size("recordsize");
        if !record_bytes.is_power_of_two() {
            return Err(params.impossible("recordsize", "ZFS record sizes are powers of two"));
        }
        let vdev = VdevLimits {
            min_pending: params.integer("vdev_min_pending") as u32,
            max_pending: params.integer("vdev_max_pending") as u32,
            ramp_rate: params.integer("vdev_ramp_rate") as u32,
        };
        Ok(IscsiSpec {
            mirrors: params.integer("mirrors") as u32,
            ways: params.integer("ways") as u32,
            record_bytes,
            prefetch: params.flag("prefetch"),
            vdev,
            link: LinkSpec::parse(params.text("link"), params.component(), "link")?,
            link_assign: match params.text("link_assign") {
                "rr" => LinkAssign::RoundRobin,
                _ => LinkAssign::PerLun,
            },
            queued_commands: params.integer("queued_commands") as u32,
            wthreads: params.integer("wthreads") as u32,
            luns_per_target: params.integer("luns_per_target") as u32,
            io_mode: match params.text("iet_io") {
                "fileio" => IoMode::FileIo,
                _ => IoMode::BlockIo,
            },
        })
    }

    /// LUNs, one per target disk.
    pub fn luns(&self) -> usize {
        (self.mirrors * self.ways) as usize
    }

    /// IET targets.
    pub fn targets(&self) -> usize {
        self.luns().div_ceil(self.luns_per_target as usize)
    }

    /// One line for reports.
    pub fn describe(&self) -> String {
        format!(
            "initiator: ZFS, {} mirrors of {}, {} KiB records, prefetch {}, vdev pending {}-{} \
             (+{}); {} x {} MB/s links ({}); target: IET {}, {} threads and {} commands per \
             session, {} LUN(s) per target",
            self.mirrors,
            self.ways,
            self.record_bytes >> 10,
            if self.prefetch { "on" } else { "off" },
            self.vdev.min_pending,
            self.vdev.max_pending,
            self.vdev.ramp_rate,
            self.link.paths,
            self.link.path_bytes_per_s / 1_000_000,
            match self.link_assign {
                LinkAssign::PerLun => "a link per LUN",
                LinkAssign::RoundRobin => "round robin",
            },
            self.io_mode.name(),
            self.wthreads,
            self.queued_commands,
            self.luns_per_target,
        )
    }
}

/// What the fabric asks the runner to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FabricAction {
    /// A reader's call `op` is done.
    ReadDone {
        /// The call, as [`Fabric::read`] was given it.
        op: u64,
    },
    /// A worker thread reads its disk: call [`Fabric::target_done`] with `token` when done.
    TargetRead {
        /// The command (and, under fileio, its page).
        token: u64,
        /// The worker thread.
        process: ProcessId,
        /// The target disk (the runner's device index).
        device: usize,
        /// Byte address on the disk.
        offset_bytes: u64,
        /// Bytes.
        bytes: u64,
        /// blockio's bios (true) or a page-cache read (false).
        direct: bool,
    },
}

/// A fabric error: the initiator was asked for what it does not model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FabricError(pub String);

/// Where a block of a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    Absent,
    Reading,
    Cached,
}

/// One ZFS read of a record, from the vdev queue to the target and back.
#[derive(Clone, Copy, Debug)]
struct Zio {
    file: usize,
    block: u64,
    lun: usize,
    offset_bytes: u64,
    bytes: u64,
    /// The worker thread carrying it out.
    thread: Option<usize>,
    /// fileio: bytes read so far.
    done_bytes: u64,
    /// The link it crosses.
    path: usize,
}

/// A reader's call waiting for blocks.
#[derive(Clone, Copy, Debug)]
struct Call {
    missing: u32,
}

/// Things that happen on the links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Arrival {
    /// A command PDU reaches the target.
    AtTarget { token: u64 },
    /// A read's data reaches the initiator.
    AtInitiator { token: u64 },
}

/// Counters for the "why" lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FabricStats {
    /// Reads the readers' calls asked ZFS for (records not cached).
    pub demand_reads: u64,
    /// Records prefetched.
    pub prefetch_reads: u64,
    /// Commands that waited for the session window at the initiator.
    pub window_waits: u64,
    /// Commands that waited for a worker thread at the target.
    pub thread_waits: u64,
    /// Commands carried out at the target.
    pub commands: u64,
}

/// The initiator, the links and the target's sessions and threads.
#[derive(Clone, Debug)]
pub struct Fabric {
    spec: IscsiSpec,
    pool: Pool,
    zfetch: Vec<Zfetch>,
    blocks: Vec<Vec<BlockState>>,
    /// Calls waiting, by op.
    calls: BTreeMap<u64, Call>,
    /// The calls waiting for each (file, block).
    waiters: BTreeMap<(usize, u64), Vec<u64>>,
    zios: BTreeMap<u64, Zio>,
    next_token: u64,
    vdevs: Vec<VdevQueue>,
    /// Per session: commands out at the target, and those waiting for the window.
    sessions: Vec<(u32, std::collections::VecDeque<u64>)>,
    link: Link,
    next_rr_path: usize,
    targets: Vec<Target>,
    arrivals: BTreeSet<(Instant, u64, Arrival)>,
    next_arrival: u64,
    actions: Vec<FabricAction>,
    prng: Prng,
    /// Which worker threads submitted to each LUN, one bit per thread of its target.
    threads_seen: Vec<u128>,
    stats: FabricStats,
    scratch_fetch: Vec<(u64, u64)>,
    scratch_issue: Vec<u64>,
}

impl Fabric {
    /// The fabric for `spec`, with the files of `file_bytes` laid out on its pool of LUNs of
    /// `lun_bytes` each; `prng` draws the worker thread each command goes to.
    pub fn new(
        spec: IscsiSpec,
        lun_bytes: u64,
        file_bytes: &[u64],
        prng: Prng,
    ) -> Result<Fabric, FabricError> {
        let pool = Pool::lay_out(spec.mirrors, spec.ways, spec.record_bytes, lun_bytes, file_bytes)
            .map_err(FabricError)?;
        let blocks =
            (0..pool.file_count()).map(|f| vec![BlockState::Absent; pool.records(f) as usize]);
        let luns = spec.luns();
        Ok(Fabric {
            blocks: blocks.collect(),
            zfetch: vec![Zfetch::default(); pool.file_count()],
            pool,
            calls: BTreeMap::new(),
            waiters: BTreeMap::new(),
            zios: BTreeMap::new(),
            next_token: 0,
            vdevs: vec![VdevQueue::default(); luns],
            sessions: vec![(0, Default::default()); spec.targets()],
            link: Link::new(spec.link),
            next_rr_path: 0,
            targets: (0..spec.targets()).map(|t| Target::new(t, spec.wthreads)).collect(),
            arrivals: BTreeSet::new(),
            next_arrival: 0,
            actions: Vec::new(),
            prng,
            threads_seen: vec![0; luns],
            stats: FabricStats::default(),
            scratch_fetch: Vec::new(),
            scratch_issue: Vec::new(),
            spec,
        })
    }

    /// The configuration.
    pub fn spec(&self) -> &IscsiSpec {
        &self.spec
    }

    /// Every worker thread of the target serving `lun`'s disk, for sharing one read-ahead
    /// state (fileio opens the backing device once per LUN).
    pub fn worker_pids(&self, lun: usize) -> Vec<ProcessId> {
        self.targets[self.target_of(lun)].pids().collect()
    }

    /// A reader's `read()` of `size_bytes` at `offset_bytes` of `file` (call `op`).
    pub fn read(
        &mut self,
        now: Instant,
        op: u64,
        file: usize,
        offset_bytes: u64,
        size_bytes: u64,
    ) -> Result<(), FabricError> {
        if file >= self.pool.file_count() {
            return Err(FabricError(format!("file {file} does not exist on the pool")));
        }
        let record = self.spec.record_bytes;
        let blocks = self.pool.records(file);
        let first = offset_bytes / record;
        let end = (offset_bytes + size_bytes).div_ceil(record).min(blocks);
        // `dmu_buf_hold_array_by_dnode`: arrays larger than zfetch_array_rd_sz skip prefetch.
        let prefetch = self.spec.prefetch && size_bytes <= zfs::ZFETCH_ARRAY_READ_BYTES;
        let mut missing = 0u32;
        let mut fetch = std::mem::take(&mut self.scratch_fetch);
        for block in first..end {
            let state = self.blocks[file][block as usize];
            // `dbuf_read`: the block's own read first, then the prefetcher hears of it.
            if state == BlockState::Absent {
                self.stats.demand_reads += 1;
                self.start_zio(now, file, block, zfs::PRIORITY_SYNC_READ);
            }
            if prefetch {
                fetch.clear();
                let cached = state != BlockState::Absent;
                self.zfetch[file].access(now, block, cached, blocks, &mut fetch);
                for &(from, count) in &fetch {
                    for ahead in from..from + count {
                        if self.blocks[file][ahead as usize] == BlockState::Absent {
                            self.stats.prefetch_reads += 1;
                            self.start_zio(now, file, ahead, zfs::PRIORITY_ASYNC_READ);
                        }
                    }
                }
            }
            if self.blocks[file][block as usize] != BlockState::Cached {
                missing += 1;
                self.waiters.entry((file, block)).or_default().push(op);
            }
        }
        self.scratch_fetch = fetch;
        if missing == 0 {
            self.actions.push(FabricAction::ReadDone { op });
        } else {
            self.calls.insert(op, Call { missing });
        }
        Ok(())
    }

    /// The target's I/O for `token` is done (at `now`).
    pub fn target_done(&mut self, now: Instant, token: u64) {
        let zio = self.zios.get_mut(&token).expect("a command in progress");
        let thread = zio.thread.expect("a thread carries it");
        if self.spec.io_mode == IoMode::FileIo {
            zio.done_bytes += crate::host::cache::PAGE_BYTES;
            if zio.done_bytes < zio.bytes {
                let zio = *zio;
                self.target_read(token, &zio);
                return;
            }
        }
        let zio = *zio;
        // The response's data goes back over the session's link.
        let at = self.link.transfer_on(zio.path, now, zio.bytes, Flow::ToHost);
        self.push_arrival(at, Arrival::AtInitiator { token });
        let target = self.target_of(zio.lun);
        if let Some(next) = self.targets[target].finish(thread) {
            self.begin(next, thread);
        }
    }

    /// When the fabric next has something to do.
    pub fn next_event(&self) -> Option<Instant> {
        self.arrivals.first().map(|&(at, _, _)| at)
    }

    /// Runs everything due at `now`.
    pub fn wake(&mut self, now: Instant) {
        while let Some(&(at, seq, arrival)) = self.arrivals.first() {
            if at > now {
                break;
            }
            self.arrivals.remove(&(at, seq, arrival));
            match arrival {
                Arrival::AtTarget { token } => {
                    let target = self.target_of(self.zios[&token].lun);
                    match self.targets[target].arrive(token, &mut self.prng) {
                        Some(thread) => self.begin(token, thread),
                        None => self.stats.thread_waits += 1,
                    }
                }
                Arrival::AtInitiator { token } => self.arrived(now, token),
            }
        }
    }

    /// Takes the actions asked for since the last call.
    pub fn take_actions(&mut self, into: &mut Vec<FabricAction>) {
        into.append(&mut self.actions);
    }

    /// Counters so far.
    pub fn stats(&self) -> &FabricStats {
        &self.stats
    }

    /// The fewest distinct worker threads any LUN's disk saw requests from (among LUNs that
    /// saw any), and the most.
    pub fn threads_per_lun(&self) -> (u32, u32) {
        let seen = self.threads_seen.iter().filter(|bits| **bits != 0).map(|b| b.count_ones());
        seen.fold((u32::MAX, 0), |(low, high), n| (low.min(n), high.max(n)))
    }

    /// Bytes each link has carried.
    pub fn link_path_bytes(&self) -> &[u64] {
        self.link.path_bytes()
    }

    /// The most reads any LUN had pending at the initiator at once.
    pub fn vdev_pending_peak(&self) -> u32 {
        self.vdevs.iter().map(|v| v.pending_peak).max().unwrap_or(0)
    }

    /// The most worker threads busy at once in any target.
    pub fn busy_threads_peak(&self) -> u32 {
        self.targets.iter().map(|t| t.busy_peak).max().unwrap_or(0)
    }

    fn target_of(&self, lun: usize) -> usize {
        lun / self.spec.luns_per_target as usize
    }

    fn push_arrival(&mut self, at: Instant, arrival: Arrival) {
        self.arrivals.insert((at, self.next_arrival, arrival));
        self.next_arrival += 1;
    }

    /// Reads `block` of `file` at `priority` through its LUN's vdev queue.
    fn start_zio(&mut self, now: Instant, file: usize, block: u64, priority: u64) {
        self.blocks[file][block as usize] = BlockState::Reading;
        let (lun, offset_bytes) = self.pool.read_target(self.pool.place(file, block));
        let token = self.next_token;
        self.next_token += 1;
        let path = match self.spec.link_assign {
            LinkAssign::PerLun => lun % self.spec.link.paths as usize,
            LinkAssign::RoundRobin => {
                let path = self.next_rr_path;
                self.next_rr_path = (path + 1) % self.spec.link.paths as usize;
                path
            }
        };
        let zio = Zio {
            file,
            block,
            lun,
            offset_bytes,
            bytes: self.spec.record_bytes,
            thread: None,
            done_bytes: 0,
            path,
        };
        self.zios.insert(token, zio);
        let mut issue = std::mem::take(&mut self.scratch_issue);
        issue.clear();
        self.vdevs[lun].add(now, offset_bytes, priority, token, self.spec.vdev, &mut issue);
        for &token in &issue {
            self.send(now, token);
        }
        self.scratch_issue = issue;
    }

    /// The initiator sends a command, or holds it while the session's window is full.
    fn send(&mut self, now: Instant, token: u64) {
        let session = self.target_of(self.zios[&token].lun);
        let (outstanding, waiting) = &mut self.sessions[session];
        if *outstanding >= self.spec.queued_commands {
            waiting.push_back(token);
            self.stats.window_waits += 1;
            return;
        }
        *outstanding += 1;
        let at = now + self.spec.link.command_latency;
        self.push_arrival(at, Arrival::AtTarget { token });
    }

    /// Worker `thread` starts command `token`.
    fn begin(&mut self, token: u64, thread: usize) {
        let zio = self.zios.get_mut(&token).expect("a command");
        zio.thread = Some(thread);
        let zio = *zio;
        self.stats.commands += 1;
        let thread_bit = 1u128 << (thread % 128);
        self.threads_seen[zio.lun] |= thread_bit;
        self.target_read(token, &zio);
    }

    /// Asks the runner for the thread's next I/O of `zio`: the whole command under blockio,
    /// its next page under fileio.
    fn target_read(&mut self, token: u64, zio: &Zio) {
        let target = self.target_of(zio.lun);
        let process = self.targets[target].pid(zio.thread.expect("a thread"));
        let (offset_bytes, bytes, direct) = match self.spec.io_mode {
            IoMode::BlockIo => (zio.offset_bytes, zio.bytes, true),
            IoMode::FileIo => {
                (zio.offset_bytes + zio.done_bytes, crate::host::cache::PAGE_BYTES, false)
            }
        };
        self.actions.push(FabricAction::TargetRead {
            token,
            process,
            device: zio.lun,
            offset_bytes,
            bytes,
            direct,
        });
    }

    /// A read's data reached the initiator.
    fn arrived(&mut self, now: Instant, token: u64) {
        let zio = self.zios.remove(&token).expect("a command in flight");
        let session = self.target_of(zio.lun);
        self.sessions[session].0 -= 1;
        if let Some(next) = self.sessions[session].1.pop_front() {
            self.send(now, next);
        }
        let mut issue = std::mem::take(&mut self.scratch_issue);
        issue.clear();
        self.vdevs[zio.lun].done(self.spec.vdev, &mut issue);
        for &next in &issue {
            self.send(now, next);
        }
        self.scratch_issue = issue;
        self.blocks[zio.file][zio.block as usize] = BlockState::Cached;
        for op in self.waiters.remove(&(zio.file, zio.block)).unwrap_or_default() {
            let call = self.calls.get_mut(&op).expect("a waiting call");
            call.missing -= 1;
            if call.missing == 0 {
                self.calls.remove(&op);
                self.actions.push(FabricAction::ReadDone { op });
            }
        }
    }
}
