//! `BlockQueue`: the one block layer between issuers, a scheduler and a device.
//!
//! The simulator and the live engine both drive a `BlockQueue`; they differ only in what the
//! device and the clock are. A driver loop looks like this:
//!
//! ```text
//! on a bio from an issuer:   queue.submit(now, bio)      -> Merged | Queued | Blocked
//! whenever anything changed: loop { match queue.next_request(now) {
//!                                Pull::Issue(id)          => start id on the device,
//!                                Pull::Idle { until }     => wake me at until (or earlier),
//!                                Pull::Plugged { until }  => wake me at until (or earlier),
//!                                Pull::Busy | Pull::Empty => wait for a completion or a bio } }
//! on a device completion:    queue.complete(now, id, &mut bios) -> hand the bios back,
//!                            then let every queue.pop_woken() issuer retry its blocked bio
//! ```
//!
//! What happens inside, in the order of the 2.6 block layer (`__make_request` and
//! `elv_next_request`):
//!
//! 1. **Merge** before allocating: a bio joins a queued request through the `last_merge` cache,
//!    the back index and the front index ([`crate::MergeLookups`]), bounded by
//!    `max_sectors_kb`; the grown request may then fuse with its neighbour.
//! 2. **Allocate** from the request pool (`nr_requests`, congestion, batching; see
//!    [`PoolSplit`]). A process that finds the pool full is told [`Submitted::Blocked`] and is
//!    named by [`BlockQueue::pop_woken`] when it may try again.
//! 3. **Order overlaps**: a request overlapping an earlier outstanding one, where either writes,
//!    is held back until that one completes, so no scheduler can reorder conflicting I/O (not on
//!    a blk-mq queue, which orders nothing: [`BlkMqQueue`]).
//! 4. **Insert** into the scheduler; optionally **plug** ([`QueueConfig::plugging`]).
//! 5. **Dispatch**: the dispatch list's head goes to the device while it has room; only when
//!    the list is empty is the scheduler asked for one more request. How a full device is
//!    treated is the driver's ([`DriverFetch`]): IDE asks nothing; SCSI and libata fetch and
//!    activate one more request, which waits at the head of the list.
//! 6. **Flush** is an ordering point: the scheduler is drained onto the dispatch list ahead of
//!    it, it is issued once nothing earlier is outstanding, and nothing later is issued until it
//!    completes (2.6.18's `DRAIN_FLUSH` barrier sequence). On a blk-mq queue ([`BlkMqQueue`])
//!    a flush bypasses the scheduler to the head of the dispatch list and stalls nothing.
//! 7. **Switch** schedulers at run time (`elevator_switch`): the old one is drained onto the
//!    dispatch list in its own order; until every request allocated before the switch has
//!    completed, new requests bypass both schedulers to the list's tail; only then does the new
//!    scheduler get requests.
//!
//! A queue with [`QueueConfig::blk_mq`] follows the Linux 6.x blk-mq block layer in when it asks
//! the scheduler, in flushes and in overlaps ([`BlkMqQueue`]; modern-vs-kernel.md rows 1–4).
//!
//! A queue with [`QueueConfig::linux_2_4`] follows 2.4.21 instead (linux-2.4-elevator.md):
//! the pool has `nr_requests` requests per direction with no congestion or batching (§5,
//! [`PoolRules::Linux2_4`]); a SCSI request returns to it when the driver starts it (§4.1);
//! the first bio into an empty list plugs the queue until [`BlockQueue::unplug`] (`tq_disk`,
//! which the driver runs on every queue of the host; §4.2), with no timer, no threshold and
//! no bio that unplugs by itself; merges stop at the driver's limit as well as the elevator's
//! ([`QueueConfig::merge_limit_sectors`], §3.1); a bio flagged
//! [`RequestFlags::UNSORTED`] (a direct-I/O super bh, §6.6) never merges into a queued
//! request; and [`Submitter`](crate::Submitter) splits I/O into 4 KiB buffer heads (§1).
//!
//! A bio flagged [`RequestFlags::PASSTHROUGH`] (SG_IO, NVMe passthrough) never merges and
//! goes to the dispatch list's tail without the scheduler seeing it, as the kernel inserts
//! passthrough requests.
//!
//! # Deviations from Linux
//!
//! * 2.4 queues (linux-2.4-elevator.md): `rhel3-early`'s plugging (§4.3: the submission that
//!   plugged unplugs at once) is not modelled — the releases here are vanilla 2.4.21 and RHEL 3
//!   27.EL, both `rhel3` plugging. The pool is sized by the caller; `set_nr_requests` still
//!   changes it where 2.4 has no such tunable (the simulator refuses `nr_requests` on a 2.4
//!   host). A task's 1 s pool timeout is noticed at the queue's next call at or after it (the
//!   simulator schedules one, [`BlockQueue::next_pool_timeout`]). A task refused a request
//!   unplugs its queue; the request function that runs in the kernel right then runs here at
//!   the driver's next [`BlockQueue::next_request`], and the task counts as asleep once that
//!   call stops issuing. Barriers/special requests, IDE's `head_active` and SCSI retries at
//!   the head are not modelled (§8 allows it); a requeued request goes back to the front of
//!   the dispatch list as on 2.6. The no-merge mark of a merge refused for size is kept
//!   (2.4 has none; with 4 KiB bhs and the driver's 128 sectors it only matters for super
//!   bhs).
//! * [`QueueConfig::default`] does not plug (`plugging: false`), where every 2.6 kernel plugs
//!   an empty queue (legacy-vs-kernel.md row 3). The simulator plugs for every legacy
//!   scheduler (`--plugging`, on by default since issue 15), so a simulated 2.6 host follows
//!   the kernel; the default serves the live engine, whose I/O already passes through the
//!   running kernel's own (per-task) plugging below it, and unit tests of the scheduler logic.
//! * A request overlapping an earlier outstanding one (either writing) is held outside the
//!   scheduler until that one completes (`docs/DESIGN.md` §3, on purpose; row 6), on legacy
//!   queues (the default, and so the live engine's) only.
//! * blk-mq ([`BlkMqQueue`]): several flushes may be at the device at once, each a request of
//!   its own; the kernel keeps one `flush_rq` in flight per flush queue and serves every flush
//!   pending when it ends with one more (`blk_kick_flush`). A PREFLUSH write with data is not
//!   split into its flush and its data re-inserted at the head (the core has no such flag).
//!   The delayed run's tick phase is the clock's origin. A throttled blk-mq queue answers
//!   [`Pull::Idle`] until the delayed run, with requests at the device; the kernel's
//!   driver-tag restart (a completion re-runs the queue when a request waited for a tag) is
//!   the device-full [`Pull::Busy`] as before.
//! * [`QueueConfig::merges_ignore_sync`] is off by default (the rule the blk-mq schedulers
//!   were written to); the simulator turns it on for the legacy schedulers, as 2.6.18 merges
//!   (row 5).
//! * [`DriverFetch::WhenDeviceFree`] (IDE) is the default, and what the live engine uses: it
//!   drives a device through a modern kernel, where blk-mq takes a dispatch budget before it
//!   asks the scheduler, so nothing is fetched ahead of a free slot there either. The
//!   simulator takes the model from the device's driver (row 7). A request fetched while the
//!   device is full is activated once and counts in the schedulers' in-driver count
//!   ([`Ctx::in_flight`]) until it is sent; a flush at the head is never fetched early. The
//!   fetch-ahead happens in the call right after an issue (the request function running
//!   because a completion freed a slot); the kernel also runs it with the device full when a
//!   plugged queue unplugs (timer, 4 requests) or a scheduler kicks the queue (cfq's arrival
//!   for the queue it idles on, anticipatory's end of anticipation, their timers): there the
//!   fetch waits for the next completion here.
//! * During a switch the old scheduler's completion hooks are not called for its requests
//!   still outstanding (it has been handed back to the caller); 2.6.18 keeps it attached, and
//!   its hooks running, until they complete. The bypass ends at the completion of the last
//!   request allocated before the switch, where the kernel's `elevator_switch` polls every
//!   10 ms (`msleep(10)`) and attaches the new scheduler at the next poll; and processes'
//!   `may_queue` votes during the bypass go to the new scheduler (the kernel asks the old).

use std::collections::VecDeque;

use crate::bios::BioTable;
use crate::dispatch_list::DispatchList;
use crate::hazard::Hazards;
use crate::kernel::{KernelVersion, UnplugTest};
use crate::merge::{self, MergeCheck, MergeIndex};
use crate::pool::{MIN_NR_REQUESTS, PoolRules, PoolSplit, RequestPool};
use crate::request::{
    Bio, BioTag, Direction, IoClass, IoPriority, Op, Request, RequestFlags, RequestState, Sector,
};
use crate::scheduler::{Completion, Ctx, Dispatch, MergeChoice, MergeKind, Scheduler};
use crate::table::{RequestId, RequestTable};
use crate::time::{Duration, Instant, TickRate};

/// How long a plugged queue waits before it unplugs by itself (`unplug_delay`, 3 ms).
pub const UNPLUG_DELAY: Duration = Duration::from_millis(3);
/// How many pending requests unplug a plugged queue (`unplug_thresh`).
pub const UNPLUG_THRESHOLD: u32 = 4;

/// The knobs of a queue, with the 2.6 kernel's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// Requests per pool class before the class counts as full (`nr_requests`, default 128,
    /// at least 4).
    pub nr_requests: u32,
    /// How many requests the device takes at once (the hardware queue depth; default 1, an
    /// IDE or SATA disk without command queuing).
    pub depth: u32,
    /// Largest request in KiB (`max_sectors_kb`, default 512).
    pub max_sectors_kb: u32,
    /// Plug an empty queue for up to 3 ms so that bios can merge first, as every 2.6 kernel
    /// does (`blk_plug_device`, `unplug_delay`). Default off (see "Deviations from Linux":
    /// the simulator turns it on for the legacy block layer).
    pub plugging: bool,
    /// What the pool counts separately (default: data direction, as 2.6.18).
    pub pool_split: PoolSplit,
    /// Bound on bios outstanding at once; hitting it is an error, not a silent stall.
    pub max_bios: usize,
    /// The kernel release whose block-layer rules apply (unplug test, congestion
    /// thresholds; default vanilla 2.6.18).
    pub kernel: KernelVersion,
    /// Whether a read bio unplugs the queue as soon as it is queued. The kernel's reader
    /// unplugs when it goes to wait for its page (`sync_page`), which the simulator's runner
    /// does itself ([`BlockQueue::unplug`] when a process waits), so it turns this off; the
    /// live engine has no such moment and leaves it on (default), so a read never waits for
    /// the plug timer.
    pub reads_unplug: bool,
    /// Whether a sync bio (or request) may merge with an async request of the same data
    /// direction. The legacy block layer of every release here allows it: 2.6.18's
    /// `elv_rq_merge_ok` and `attempt_merge` test only the direction, and no RHEL 5 build up
    /// to 2.6.18-274.el5 adds an `allow_merge` hook (legacy-vs-kernel.md row 5; the runner
    /// sets this from [`KernelVersion::merges_ignore_sync`] for a legacy scheduler). Off by
    /// default: the blk-mq schedulers keep the rule they were written to (their modules'
    /// deviations say how it differs from their kernels). The merged request keeps the sync
    /// flag of the bio that created it, as the kernel's does.
    pub merges_ignore_sync: bool,
    /// When the driver asks the block layer for its next request: only while the device has
    /// room (IDE, the default) or first, before checking the device's depth (SCSI and
    /// libata). Chosen by the device's driver (legacy-vs-kernel.md row 7).
    pub driver_fetch: DriverFetch,
    /// The 2.4.21 block layer's rules ([`Linux2_4Queue`]), or `None` for 2.6's (the default).
    pub linux_2_4: Option<Linux2_4Queue>,
    /// A zoned device's write ordering ([`ZoneWriteOrder`]); `None` (the default) for a
    /// conventional device.
    pub zones: Option<ZoneWriteOrder>,
    /// The blk-mq block layer's rules ([`BlkMqQueue`]) for a host whose kernel has blk-mq and a
    /// blk-mq scheduler attached; `None` (the default) for the legacy request queue's.
    pub blk_mq: Option<BlkMqQueue>,
    /// The device has moving parts (the kernel's `queue/rotational`), told to the scheduler
    /// at attach ([`Scheduler::set_rotational`]); `true` by default, the 2.6 era's disks.
    pub rotational: bool,
}

/// What differs in a blk-mq queue (Linux 6.x, modern-vs-kernel.md §2), chosen by the host for a
/// blk-mq scheduler. The legacy request queue (2.6 `request_fn`, and 2.4) keeps its own rules.
///
/// * **When the scheduler is asked** (rows 1–2). The hardware queue runs on a submission that
///   inserts a request (`blk_mq_submit_bio` → `blk_mq_run_hw_queue`; a bio merged into a queued
///   request runs nothing) and, when a device slot frees, only if a request waits for one. A
///   completion does **not** re-run it otherwise (`blk_mq_sched_restart` acts only for
///   `SCHED_RESTART`, set for leftovers on `hctx->dispatch` and driver-tag waits). So when the
///   scheduler has work but hands nothing out ([`Dispatch::Throttled`]: mq-deadline's
///   priority wait, kyber without tokens), it is asked again only at the next insertion, at a
///   delayed run one [`BlkMqQueue::RUN_DELAY_MS`] later (`blk_mq_delay_run_hw_queues(q,
///   BLK_MQ_BUDGET_DELAY)`, 3 ms → `msecs_to_jiffies` → the next tick at 250 Hz), or when the
///   scheduler itself wakes the queue at a completion ([`Scheduler::completion_reruns`]:
///   kyber's token wake-up). Meanwhile [`BlockQueue::next_request`] answers
///   [`Pull::Idle`] until the delayed run.
/// * **Flushes** (row 3) bypass the scheduler and drain nothing: an empty flush goes to the
///   head of the dispatch list, behind flushes already there (`blk_insert_flush` →
///   `blk_kick_flush` → the requeue list → `hctx->dispatch` at head), and other requests keep
///   being issued while it runs.
/// * **Scheduler tags** (row 8) are [`PoolSplit::Shared`], a choice of its own: one pool of
///   [`QueueConfig::nr_requests`] for every request, allocated while one is free, with the
///   scheduler's [`Scheduler::may_queue`] as its `limit_depth`; the scheduler learns
///   `nr_requests` through [`Scheduler::depth_updated`] (as every queue's does). The simulator
///   gives it to mq-deadline and kyber, sized 2 × min(depth, 128)
///   (`blk_mq_default_nr_requests`); bfq, whose `limit_depth` (`word_depths`: async and sync
///   writes kept to a share of the tags) is not modelled, keeps the per-direction pool, which
///   leaves reads their own tags as that limit does.
/// * **I/O priority** (row 9): a bio of class none takes its task's class at submission
///   (`bio_set_ioprio` → `__get_task_ioprio`): best-effort at its nice level ((nice + 20) / 5,
///   the level [`IoPriority::from_nice`] keeps), so merges compare the resolved values.
/// * **Time** (rows 11, 19): the scheduler learns the kernel's tick rate
///   ([`Scheduler::set_tick_rate`]), as the delayed run uses it.
/// * **No overlap ordering** (row 4): blk-mq inserts every request at once, so a request
///   overlapping an outstanding one is not held back and its bio may merge. A zoned device's
///   write ordering ([`ZoneWriteOrder`], zone write plugging) still applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlkMqQueue {
    /// The running kernel's tick rate: the delayed run fires on its next tick(s).
    pub tick_rate: TickRate,
}

impl BlkMqQueue {
    /// `BLK_MQ_BUDGET_DELAY`: how long a pass that dispatched nothing waits before the queue
    /// runs again, in milliseconds (rounded up to whole jiffies by `msecs_to_jiffies`).
    pub const RUN_DELAY_MS: u64 = 3;

    /// A blk-mq queue at the host's default tick rate ([`TickRate::BLK_MQ_DEFAULT`]).
    pub const fn new() -> BlkMqQueue {
        BlkMqQueue { tick_rate: TickRate::BLK_MQ_DEFAULT }
    }

    /// When the delayed run armed at `now` fires.
    pub const fn delayed_run(&self, now: Instant) -> Instant {
        self.tick_rate.timer_at(now, self.tick_rate.msecs_to_jiffies(Self::RUN_DELAY_MS))
    }
}

impl Default for BlkMqQueue {
    fn default() -> BlkMqQueue {
        BlkMqQueue::new()
    }
}

/// The kernel's zone write ordering for a zoned device whose sequential zones must be written
/// at their write pointer: **one write per sequential zone outstanding at a time**, the later
/// ones held back in submission order until it completes. Linux 6.10+ does this in the block
/// layer for every scheduler (zone write plugging, `block/blk-zoned.c`: a zone's plug is
/// `BLK_ZONE_WPLUG_PLUGGED` while a write BIO of it executes, later BIOs wait on its list);
/// 4.16–6.9 did it in mq-deadline only (zone write locking: `dd_dispatch_request` skipped a
/// write whose zone `blk_req_zone_write_trylock` found locked, unlocked at completion).
/// Conventional zones (the first `conventional_sectors`) are never held (the kernel's
/// `BLK_ZONE_WPLUG_CONV` / `blk_req_needs_zone_write_lock`). A passthrough command
/// ([`RequestFlags::PASSTHROUGH`]) is never held: it is built as a request, not submitted as a
/// BIO (no zone write plug), and its driver-private op is no sequential-zone write to
/// `blk_rq_is_seq_zoned_write` (no zone write lock); the issuer keeps such writes in order.
///
/// Deviations: the rule applies under every scheduler and kernel the simulator runs, though
/// Linux drives zoned devices only from 4.10 and before 6.10 only mq-deadline ordered their
/// writes. A held write is kept out of the scheduler (6.10's plug) rather than queued and
/// skipped at dispatch (mq-deadline's lock), so it cannot merge while held. A zone reset is
/// not itself ordered: it is a discard (`Op::Discard`) at the zone's first sector, ordered
/// only by the overlap rule; fio's zone locks keep writes away from a zone being reset. A block
/// write still waits for an earlier passthrough write in flight to its zone, which Linux's
/// plug does not track (a zone written both ways at once is out of order in Linux anyway).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneWriteOrder {
    /// Sectors per zone.
    pub zone_size_sectors: u64,
    /// Sectors of conventional zones at the start of the device.
    pub conventional_sectors: u64,
}

/// What differs in a 2.4.21 queue (linux-2.4-elevator.md §1, §3.1, §4.2, §5), chosen by the
/// host's kernel. With it, [`QueueConfig::nr_requests`] is the number of requests *per
/// direction* (512 on the study's 4 GB RHEL 3 host, [`KernelVersion::requests_2_4`]) and
/// [`QueueConfig::max_sectors_kb`] the elevator's own limit (sd's `max_sectors`, 1024
/// sectors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Linux2_4Queue {
    /// The largest request the low-level driver accepts, in sectors (the host adapter's
    /// `max_sectors`: MegaRAID 128, §3.1, §6.2). A merge the elevator would allow but the
    /// driver refuses does not happen; the queue's merge check applies the smaller of the two
    /// ([`QueueConfig::merge_limit_sectors`]).
    pub driver_max_sectors: u32,
    /// Whether a request returns to the pool when the driver starts it (SCSI, §4.1, §5), not
    /// when it completes (IDE).
    pub free_at_dispatch: bool,
    /// Whether a task sleeping for a request retries after 1 s (RHEL 3) or sleeps until woken
    /// (vanilla 2.4.21, §5).
    pub timed_pool_wait: bool,
}

impl Linux2_4Queue {
    /// The pool rules of such a queue.
    const fn pool_rules(&self) -> PoolRules {
        PoolRules::Linux2_4 { timed_wait: self.timed_pool_wait }
    }
}

/// When a legacy driver's request function fetches the next request (legacy-vs-kernel.md
/// row 7). Fetching (`elv_next_request`) runs the scheduler's dispatch when the dispatch list is
/// empty and *activates* the head (the kernel's `REQ_STARTED` and the elevator's activate hook,
/// so cfq counts it in `rq_in_driver`) even if the driver then cannot send it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DriverFetch {
    /// `ide_do_request`: the channel is tested first; nothing is fetched while the device is
    /// busy.
    #[default]
    WhenDeviceFree,
    /// `scsi_request_fn` (SCSI and libata): the head is fetched, and so activated, before
    /// `scsi_dev_queue_ready` tests the depth: with the device full, one more request is
    /// activated and waits at the head of the dispatch list.
    BeforeDepthCheck,
}

impl Default for QueueConfig {
    fn default() -> QueueConfig {
        QueueConfig {
            nr_requests: 128,
            depth: 1,
            max_sectors_kb: 512,
            plugging: false,
            pool_split: PoolSplit::ByDirection,
            max_bios: 1 << 20,
            kernel: KernelVersion::Linux2_6_18,
            reads_unplug: true,
            merges_ignore_sync: false,
            driver_fetch: DriverFetch::WhenDeviceFree,
            linux_2_4: None,
            zones: None,
            blk_mq: None,
            rotational: true,
        }
    }
}

/// The largest `max_sectors_kb` accepted: 32 MiB, far beyond any 2.6-era controller.
pub const MAX_SECTORS_KB_LIMIT: u32 = 32 * 1024;
/// The largest device depth accepted.
pub const DEPTH_LIMIT: u32 = 65_536;
/// The largest `nr_requests` accepted.
pub const NR_REQUESTS_LIMIT: u32 = 1 << 20;

/// A queue configuration that cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueueConfigError {
    /// `nr_requests` out of range.
    #[error("nr_requests {0} is out of range (accepted: {MIN_NR_REQUESTS}..={NR_REQUESTS_LIMIT})")]
    NrRequests(u32),
    /// Device depth out of range.
    #[error("queue depth {0} is out of range (accepted: 1..={DEPTH_LIMIT})")]
    Depth(u32),
    /// `max_sectors_kb` out of range.
    #[error("max_sectors_kb {0} is out of range (accepted: 4..={MAX_SECTORS_KB_LIMIT})")]
    MaxSectorsKb(u32),
    /// No room for bios.
    #[error("max_bios must be at least 1")]
    MaxBios,
    /// A 2.4 driver limit out of range.
    #[error(
        "driver max_sectors {driver} is out of range (accepted: 8..={elevator}, the elevator's limit)"
    )]
    DriverMaxSectors {
        /// The driver's limit asked for.
        driver: u32,
        /// The elevator's limit (`max_sectors_kb` × 2).
        elevator: u32,
    },
}

impl QueueConfig {
    /// Checks every knob against its accepted range.
    pub fn validate(&self) -> Result<(), QueueConfigError> {
        if !(MIN_NR_REQUESTS..=NR_REQUESTS_LIMIT).contains(&self.nr_requests) {
            return Err(QueueConfigError::NrRequests(self.nr_requests));
        }
        if !(1..=DEPTH_LIMIT).contains(&self.depth) {
            return Err(QueueConfigError::Depth(self.depth));
        }
        if !(4..=MAX_SECTORS_KB_LIMIT).contains(&self.max_sectors_kb) {
            return Err(QueueConfigError::MaxSectorsKb(self.max_sectors_kb));
        }
        if self.max_bios == 0 {
            return Err(QueueConfigError::MaxBios);
        }
        if let Some(linux_2_4) = &self.linux_2_4
            && !(8..=self.max_sectors()).contains(&linux_2_4.driver_max_sectors)
        {
            return Err(QueueConfigError::DriverMaxSectors {
                driver: linux_2_4.driver_max_sectors,
                elevator: self.max_sectors(),
            });
        }
        Ok(())
    }

    /// `max_sectors_kb` in sectors.
    pub const fn max_sectors(&self) -> u32 {
        self.max_sectors_kb * 2
    }

    /// The largest request a merge may make: `max_sectors_kb`, and on a 2.4 queue also no
    /// more than the driver accepts (linux-2.4-elevator.md §3.1: the elevator allows up to
    /// sd's 1024 sectors, then the SCSI merge hook applies the adapter's limit). A scheduler
    /// asking "would the driver accept this merge" compares against this.
    pub const fn merge_limit_sectors(&self) -> u32 {
        match &self.linux_2_4 {
            Some(linux_2_4) if linux_2_4.driver_max_sectors < self.max_sectors() => {
                linux_2_4.driver_max_sectors
            }
            _ => self.max_sectors(),
        }
    }
}

/// A bio the queue cannot take. None of these can succeed on retry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// A read, write or discard of zero sectors.
    #[error("{op} bio at sector {start} has no sectors")]
    Empty {
        /// The operation.
        op: &'static str,
        /// Its start.
        start: Sector,
    },
    /// A flush that carries sectors.
    #[error("flush bio carries {sector_count} sectors (a flush carries none)")]
    FlushWithData {
        /// The sectors it carried.
        sector_count: u32,
    },
    /// Larger than one request may be.
    #[error(
        "bio of {sector_count} sectors exceeds max_sectors_kb ({max_sectors} sectors); split it"
    )]
    TooLarge {
        /// Its size.
        sector_count: u32,
        /// The limit.
        max_sectors: u32,
    },
    /// Past the end of the sector space.
    #[error("bio at sector {start} + {sector_count} overflows the sector space")]
    Overflow {
        /// Its start.
        start: Sector,
        /// Its size.
        sector_count: u32,
    },
    /// Too many bios outstanding.
    #[error("more than {limit} bios outstanding (the queue's max_bios bound)")]
    TooManyBios {
        /// The bound.
        limit: usize,
    },
}

/// What became of a submitted bio.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Submitted {
    /// It joined a queued request; it completes with that request.
    Merged {
        /// The request it joined.
        into: RequestId,
    },
    /// A new request carries it (queued in the scheduler, on the dispatch list for a flush or
    /// while a scheduler switch drains, or held behind an overlapping earlier request).
    Queued {
        /// The new request.
        request: RequestId,
    },
    /// The request pool is full for this process: the bio was not taken. Submit it again once
    /// [`BlockQueue::pop_woken`] names the process.
    Blocked,
}

/// What the device should do next.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pull {
    /// Start this request on the device now; it is in flight.
    Issue(RequestId),
    /// The scheduler idles on purpose: ask again at `until`, or when a bio arrives or a request
    /// completes.
    Idle {
        /// When to ask again at the latest.
        until: Instant,
    },
    /// The queue is plugged: ask again at `until`, or when a bio arrives.
    Plugged {
        /// When the plug times out.
        until: Instant,
    },
    /// Nothing can go to the device until a request completes (the device is full, a flush
    /// is draining or in flight, or the scheduler is throttled).
    Busy,
    /// Nothing is waiting.
    Empty,
}

/// A request the device finished, as the queue reports it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CompletedRequest {
    /// What it did.
    pub op: Op,
    /// Where.
    pub start: Sector,
    /// How many sectors.
    pub sector_count: u32,
    /// How many bios it carried.
    pub bio_count: u32,
    /// The process whose bio created it.
    pub process: ProcessId,
    /// Time at the device.
    pub device_time: Duration,
    /// Time since the request was created.
    pub total_time: Duration,
}

/// The maxima of [`QueueStats`] over a window of time (a phase of a run), which unlike the
/// counters cannot be had by subtracting two snapshots.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct WindowMaxima {
    /// The longest distance the head moved to a request issued in the window.
    pub seek_distance_max_sectors: u64,
    /// The longest a request issued in the window waited, from creation to issue.
    pub max_wait_ns: u64,
}

/// Counters of one queue since it was created.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct QueueStats {
    /// Bios accepted (merged or queued; blocked attempts do not count).
    pub bios: u64,
    /// Bios appended to a queued request.
    pub back_merges: u64,
    /// Bios prepended to a queued request.
    pub front_merges: u64,
    /// Requests fused into a neighbour after a bio merge.
    pub requests_fused: u64,
    /// Requests allocated.
    pub requests_allocated: u64,
    /// Insertions into a scheduler (new requests, released held requests and requests moved
    /// over by a switch).
    pub inserted: u64,
    /// Requests a scheduler handed out (dispatched, or drained ahead of a flush).
    pub dispatched: u64,
    /// Requests drained out of a scheduler onto the dispatch list by a switch.
    pub switched: u64,
    /// Requests started on the device (requeued ones count again).
    pub issued: u64,
    /// Requests the device finished.
    pub completed: u64,
    /// Requests the device gave back.
    pub requeued: u64,
    /// Submissions refused because the pool was full.
    pub blocked: u64,
    /// Requests held back behind an overlapping earlier request.
    pub held: u64,
    /// Times the queue was plugged.
    pub plugs: u64,
    /// Scheduler switches.
    pub switches: u64,
    /// Time the device sat idle with requests queued because the scheduler chose to wait.
    pub idle_ns: u64,
    /// Sum over issued requests of the distance from the previous request's end to its start,
    /// in sectors: the head movement the queue asked of the device.
    pub seek_distance_sectors: u64,
    /// The longest of those distances.
    pub seek_distance_max_sectors: u64,
    /// Requests held by the scheduler, integrated over time (request·ns): over the time since
    /// the queue was created, the mean number the scheduler held.
    pub sched_queue_area: u128,
    /// Requests at the device, integrated over time (request·ns).
    pub device_queue_area: u128,
    /// Time covered by the two areas: from the queue's first call to the last.
    pub observed_ns: u64,
    /// The longest a request waited in the block layer, from its creation to its issue.
    pub max_wait_ns: u64,
    /// Time processes spent waiting for a request (their bios parked on a full pool), summed
    /// over processes; kept by the [`Submitter`](crate::Submitter) in front of the queue.
    pub blocked_ns: u64,
}

impl QueueStats {
    /// What happened between `earlier` (a snapshot of the same queue) and `self`: every
    /// counter and time area the difference of the two. The maxima cannot be differenced;
    /// they are `window_maxima` (see [`BlockQueue::take_window_maxima`]).
    pub fn since(&self, earlier: &QueueStats, window_maxima: WindowMaxima) -> QueueStats {
        QueueStats {
            bios: self.bios - earlier.bios,
            back_merges: self.back_merges - earlier.back_merges,
            front_merges: self.front_merges - earlier.front_merges,
            requests_fused: self.requests_fused - earlier.requests_fused,
            requests_allocated: self.requests_allocated - earlier.requests_allocated,
            inserted: self.inserted - earlier.inserted,
            dispatched: self.dispatched - earlier.dispatched,
            switched: self.switched - earlier.switched,
            issued: self.issued - earlier.issued,
            completed: self.completed - earlier.completed,
            requeued: self.requeued - earlier.requeued,
            blocked: self.blocked - earlier.blocked,
            held: self.held - earlier.held,
            plugs: self.plugs - earlier.plugs,
            switches: self.switches - earlier.switches,
            idle_ns: self.idle_ns - earlier.idle_ns,
            seek_distance_sectors: self.seek_distance_sectors - earlier.seek_distance_sectors,
            seek_distance_max_sectors: window_maxima.seek_distance_max_sectors,
            sched_queue_area: self.sched_queue_area - earlier.sched_queue_area,
            device_queue_area: self.device_queue_area - earlier.device_queue_area,
            observed_ns: self.observed_ns - earlier.observed_ns,
            max_wait_ns: window_maxima.max_wait_ns,
            blocked_ns: self.blocked_ns - earlier.blocked_ns,
        }
    }

    /// The mean number of requests the scheduler held.
    pub fn sched_queue_mean(&self) -> f64 {
        mean_of(self.sched_queue_area, self.observed_ns)
    }

    /// The mean number of requests at the device.
    pub fn device_queue_mean(&self) -> f64 {
        mean_of(self.device_queue_area, self.observed_ns)
    }
}

fn mean_of(area: u128, span_ns: u64) -> f64 {
    if span_ns == 0 { 0.0 } else { area as f64 / span_ns as f64 }
}

/// Builds the context of a scheduler call from the queue's fields, without borrowing the
/// scheduler.
macro_rules! cx {
    ($queue:expr, $now:expr) => {
        Ctx {
            now: $now,
            requests: &$queue.table,
            // The kernel's `rq_in_driver`: at the device, plus activated and waiting at the
            // head of the dispatch list (`DriverFetch::BeforeDepthCheck`).
            in_flight: $queue.in_flight + $queue.activated_waiting,
            depth: $queue.config.depth,
        }
    };
}

/// The block layer of one device: request pool, merging, overlap ordering, the scheduler, the
/// dispatch list and the device's queue depth.
#[derive(Debug)]
pub struct BlockQueue {
    config: QueueConfig,
    pub(crate) table: RequestTable,
    pub(crate) bios: BioTable,
    pub(crate) merge: MergeIndex,
    pub(crate) hazards: Hazards,
    pub(crate) pool: RequestPool,
    pub(crate) scheduler: Box<dyn Scheduler>,
    /// Bumped on every switch; requests carry the epoch of the scheduler that holds them.
    epoch: u32,
    /// While a switch drains: requests allocated before this sequence number are still live,
    /// and new requests bypass the scheduler.
    bypass_before: Option<u64>,
    pub(crate) dispatch: DispatchList,
    /// Requests waiting for an overlapping earlier request, in allocation order.
    pub(crate) held: VecDeque<RequestId>,
    pub(crate) in_flight: u32,
    /// Requests on the dispatch list that a fetch already activated (`DriverFetch`).
    pub(crate) activated_waiting: u32,
    /// Whether the last `next_request` call issued a request: the request function is
    /// running, and a SCSI one fetches ahead once the device is full.
    fetch_armed: bool,
    /// Requests in flight beyond the depth after `set_depth` lowered it; they finish normally.
    pub(crate) depth_slack: u32,
    /// The flush at the device, if any: nothing else is issued until it completes.
    flush_in_flight: Option<RequestId>,
    /// blk-mq: the scheduler last handed nothing out although it had work; it is not asked
    /// again before the delayed run unless a request is inserted or the scheduler wakes the
    /// queue ([`BlkMqQueue`]).
    sched_asleep: bool,
    /// blk-mq: when the pending delayed run fires. A pass that dispatches nothing arms it only
    /// if none is pending (`blk_mq_delay_run_hw_queues` leaves a pending delay untouched).
    delayed_run: Option<Instant>,
    /// Plugged until this instant.
    plugged_until: Option<Instant>,
    /// 2.4: plugged until someone runs `tq_disk` (no timer; linux-2.4-elevator.md §4.2).
    tq_plugged: bool,
    /// Maxima since [`BlockQueue::take_window_maxima`] last ran.
    window: WindowMaxima,
    woken: VecDeque<ProcessId>,
    idle_since: Option<Instant>,
    /// End of the last request issued, for seek accounting.
    head_position: Sector,
    next_sequence: u64,
    pub(crate) stats: QueueStats,
    /// Up to when the occupancy areas are counted (`None` before the first call).
    accounted_to: Option<Instant>,
    scratch: Vec<RequestId>,
}

use crate::request::ProcessId;

impl BlockQueue {
    /// A queue in front of a device, with `scheduler` attached.
    pub fn new(
        config: QueueConfig,
        scheduler: Box<dyn Scheduler>,
    ) -> Result<BlockQueue, QueueConfigError> {
        config.validate()?;
        let capacity = Self::table_capacity(&config);
        let mut rules =
            config.linux_2_4.map_or(PoolRules::Linux2_6, |linux_2_4| linux_2_4.pool_rules());
        if config.pool_split == PoolSplit::Shared {
            // blk-mq's scheduler tags: one pool of `nr_requests` (`BlkMqQueue`).
            rules = PoolRules::BlkMq;
        }
        let mut scheduler = scheduler;
        scheduler.depth_updated(config.nr_requests);
        scheduler.set_rotational(config.rotational);
        if let Some(blk_mq) = config.blk_mq {
            scheduler.set_tick_rate(blk_mq.tick_rate);
        }
        Ok(BlockQueue {
            table: RequestTable::with_capacity(capacity),
            bios: BioTable::new(config.max_bios),
            merge: MergeIndex::new(capacity),
            hazards: Hazards::new(capacity),
            pool: RequestPool::new(config.nr_requests, config.pool_split)
                .for_kernel(config.kernel)
                .with_rules(rules),
            scheduler,
            epoch: 0,
            bypass_before: None,
            dispatch: DispatchList::new(),
            held: VecDeque::new(),
            in_flight: 0,
            activated_waiting: 0,
            fetch_armed: false,
            depth_slack: 0,
            flush_in_flight: None,
            sched_asleep: false,
            delayed_run: None,
            plugged_until: None,
            tq_plugged: false,
            window: WindowMaxima::default(),
            woken: VecDeque::new(),
            idle_since: None,
            head_position: Sector(0),
            next_sequence: 0,
            stats: QueueStats::default(),
            accounted_to: None,
            scratch: Vec::new(),
            config,
        })
    }

    /// Room for both pool classes at their hard caps: nothing the pool grants can fail to fit.
    /// A 2.4 queue has no hard cap, but a SCSI one returns requests to the pool at dispatch:
    /// both directions' requests plus those at the device.
    fn table_capacity(config: &QueueConfig) -> usize {
        match &config.linux_2_4 {
            None => 2 * RequestPool::hard_cap(config.nr_requests) as usize,
            Some(linux_2_4) => {
                let at_device = if linux_2_4.free_at_dispatch { config.depth } else { 0 };
                2 * config.nr_requests as usize + at_device as usize
            }
        }
    }

    /// Offers a bio to the queue.
    pub fn submit(&mut self, now: Instant, bio: Bio) -> Result<Submitted, SubmitError> {
        self.account(now);
        let mut bio = self.validate(bio)?;
        if self.config.blk_mq.is_some() && bio.priority.class() == IoClass::None {
            // `bio_set_ioprio`: class none becomes the task's, best-effort at its nice level
            // (`BlkMqQueue`; real-time and SCHED_IDLE policies are not modelled).
            bio.priority = IoPriority::best_effort(bio.priority.level())
                .expect("a priority's level is always in range");
        }
        if bio.op == Op::Flush {
            return Ok(self.submit_flush(now, bio));
        }
        let sequence = self.next_sequence;
        // blk-mq orders no overlapping I/O ([`BlkMqQueue`]); zone write plugging it keeps.
        let overlaps = (self.config.blk_mq.is_none()
            && self.hazards.conflicts(&self.table, bio.op, bio.start.0, bio.end().0, sequence))
            || (!bio.flags.contains(RequestFlags::PASSTHROUGH)
                && self.zone_write_plugged(bio.op, bio.start.0, sequence));
        // A bio that overlaps earlier I/O must not merge: that would carry it ahead of the
        // request it has to wait for.
        // A 2.4 super bh never merges into a queued request (linux-2.4-elevator.md §3.1).
        if !overlaps
            && self.scheduler.queued() > 0
            && !bio.flags.contains(RequestFlags::UNSORTED)
            && !bio.flags.contains(RequestFlags::PASSTHROUGH)
            && let Some(into) = self.try_merge(now, &bio)
        {
            self.stats.bios += 1;
            if self.runs_queue(&bio) {
                self.unplug();
            }
            return Ok(Submitted::Merged { into });
        }
        let Some(id) = self.allocate(now, &bio) else {
            return Ok(Submitted::Blocked);
        };
        self.stats.bios += 1;
        let was_empty = self.scheduler.queued() == 0 && self.dispatch.is_empty();
        if overlaps {
            self.table[id].state = RequestState::Held;
            self.held.push_back(id);
            self.stats.held += 1;
        } else if self.bypass_before.is_some() || bio.flags.contains(RequestFlags::PASSTHROUGH) {
            // A passthrough command never sees the scheduler (`RequestFlags::PASSTHROUGH`).
            self.bypass(id);
        } else {
            self.insert_into_scheduler(now, id);
        }
        self.plug_after_insert(now, was_empty && !overlaps, self.runs_queue(&bio));
        Ok(Submitted::Queued { request: id })
    }

    /// Whether the queue could ever take `bio`: a read, write or discard carries sectors, a
    /// flush none, it fits in one request, and it stays inside the sector space. (Whether there
    /// is room for it now is for [`BlockQueue::submit`] to say.)
    pub fn check(&self, bio: &Bio) -> Result<(), SubmitError> {
        if bio.op == Op::Flush {
            if bio.sector_count != 0 {
                return Err(SubmitError::FlushWithData { sector_count: bio.sector_count });
            }
            return Ok(());
        }
        if bio.sector_count == 0 {
            return Err(SubmitError::Empty { op: bio.op.name(), start: bio.start });
        }
        if bio.sector_count > self.config.max_sectors() {
            return Err(SubmitError::TooLarge {
                sector_count: bio.sector_count,
                max_sectors: self.config.max_sectors(),
            });
        }
        if bio.start.0.checked_add(u64::from(bio.sector_count)).is_none_or(|end| end >= 1 << 62) {
            return Err(SubmitError::Overflow { start: bio.start, sector_count: bio.sector_count });
        }
        Ok(())
    }

    /// Picks what the device should do next. Call it until it returns something other than
    /// [`Pull::Issue`].
    pub fn next_request(&mut self, now: Instant) -> Pull {
        self.account(now);
        // The SCSI request function runs when a slot frees (a completion), so it fetches ahead
        // only in the call that follows an issue; a bio arriving at a full device does not run
        // it (`__make_request` runs the queue only when it unplugs a plugged one).
        let fetch_ahead = std::mem::take(&mut self.fetch_armed)
            && self.config.driver_fetch == DriverFetch::BeforeDepthCheck;
        let pull = self.pull(now, fetch_ahead);
        if !matches!(pull, Pull::Issue(_)) && self.pool.is_2_4() {
            // The request function has run as far as it can: a 2.4 task that unplugged this
            // queue for a free request and still has none goes to sleep now (§5).
            self.pool.sleep_waiters_2_4(now);
        }
        pull
    }

    /// The body of [`BlockQueue::next_request`].
    fn pull(&mut self, now: Instant, fetch_ahead: bool) -> Pull {
        if self.tq_plugged {
            if self.scheduler.queued() > 0 || !self.dispatch.is_empty() {
                // 2.4: the driver never enters a plugged queue; only `tq_disk` (or a task
                // waiting for a request) unplugs it ([`BlockQueue::unplug`]).
                return Pull::Busy;
            }
            self.tq_plugged = false;
        }
        loop {
            let device_full = self.in_flight >= self.config.depth;
            if device_full && !fetch_ahead {
                return Pull::Busy;
            }
            if let Some(head) = self.dispatch.front() {
                if self.flush_in_flight.is_some() {
                    return Pull::Busy;
                }
                if self.table[head].op == Op::Flush
                    && self.config.blk_mq.is_none()
                    && (self.in_flight > 0 || self.held_before(self.table[head].sequence))
                {
                    return Pull::Busy;
                }
                if device_full {
                    // `scsi_request_fn`: `elv_next_request` has activated the head before
                    // `scsi_dev_queue_ready` refuses it; it waits, started, for a free slot.
                    self.activate_waiting(now, head);
                    return Pull::Busy;
                }
                self.dispatch.pop_front(&self.table);
                self.issue(now, head);
                self.fetch_armed = true;
                return Pull::Issue(head);
            }
            if self.flush_in_flight.is_some() {
                return Pull::Busy;
            }
            if let Some(until) = self.plugged_until {
                if now < until && self.scheduler.queued() > 0 {
                    return Pull::Plugged { until };
                }
                self.plugged_until = None;
            }
            if let Some(until) = self.delayed_run {
                if now < until {
                    if self.sched_asleep {
                        // blk-mq: nothing re-runs the queue before its delayed run
                        // (`BlkMqQueue`).
                        return Pull::Idle { until };
                    }
                } else {
                    // The delayed run fires: this pass is it.
                    self.delayed_run = None;
                    self.sched_asleep = false;
                }
            }
            let decision = self.scheduler.dispatch(&cx!(self, now));
            match decision {
                Dispatch::Issue(id) => {
                    self.take_from_scheduler(id, "dispatch");
                    let mode = self.scheduler.dispatch_insert();
                    self.dispatch.add(&self.table, id, mode);
                }
                Dispatch::Idle { until } => {
                    assert!(
                        until > now,
                        "{}: Idle until {until:?} is not after now {now:?}",
                        self.scheduler.name()
                    );
                    if self.in_flight == 0 && self.idle_since.is_none() {
                        self.idle_since = Some(now);
                    }
                    return Pull::Idle { until };
                }
                Dispatch::Throttled => {
                    if let Some(blk_mq) = self.config.blk_mq {
                        // A pass that dispatched nothing arms the delayed run (`BlkMqQueue`).
                        let until = *self.delayed_run.get_or_insert(blk_mq.delayed_run(now));
                        self.sched_asleep = true;
                        return Pull::Idle { until };
                    }
                    assert!(
                        self.in_flight > 0,
                        "{}: dispatch said Throttled with nothing in flight to end the wait",
                        self.scheduler.name()
                    );
                    return Pull::Busy;
                }
                Dispatch::Empty => {
                    assert!(
                        self.scheduler.queued() == 0,
                        "{}: dispatch said Empty with {} requests queued",
                        self.scheduler.name(),
                        self.scheduler.queued()
                    );
                    self.end_idle(now);
                    return Pull::Empty;
                }
            }
        }
    }

    /// The device finished `id`. Hands the tags of the bios it carried to `bios`.
    pub fn complete(
        &mut self,
        now: Instant,
        id: RequestId,
        bios: &mut Vec<BioTag>,
    ) -> CompletedRequest {
        self.account(now);
        let request = self.table.get(id).unwrap_or_else(|| panic!("completing stale {id:?}"));
        assert!(
            request.state == RequestState::InFlight,
            "completing {id:?} which is {:?}, not in flight",
            request.state
        );
        let done = Completion {
            id,
            issued_at: request.issued_at,
            device_time: now.saturating_since(request.issued_at),
            total_time: now.saturating_since(request.created),
        };
        let owned_by_current = request.owner == Some(self.epoch);
        self.in_flight -= 1;
        self.depth_slack = self.depth_slack.min(self.in_flight.saturating_sub(self.config.depth));
        if owned_by_current {
            self.scheduler.complete(&cx!(self, now), &done);
            // Asked always, so that a scheduler's wake-up is consumed where it happens.
            if self.scheduler.completion_reruns() {
                self.sched_asleep = false;
            }
        }
        if self.flush_in_flight == Some(id) {
            self.flush_in_flight = None;
        }
        self.hazards.remove(id);
        let request = self.table.remove(id);
        self.bios.release(request.bios, bios);
        if !self.frees_at_dispatch() {
            self.free_pool_slot(now, &request);
        }
        self.stats.completed += 1;
        self.end_bypass_if_drained();
        self.release_held(now);
        CompletedRequest {
            op: request.op,
            start: request.start,
            sector_count: request.sector_count,
            bio_count: request.bios.count,
            process: request.process,
            device_time: done.device_time,
            total_time: done.total_time,
        }
    }

    /// Appends the tags of the bios `id` carries to `out`, in sector order: what a device
    /// driver needs to build the transfer (one buffer per bio, as a vector) when it issues it.
    pub fn bio_tags(&self, id: RequestId, out: &mut Vec<BioTag>) {
        let request = self.table.get(id).unwrap_or_else(|| panic!("bio tags of stale {id:?}"));
        self.bios.tags(request.bios, out);
    }

    /// The device gave `id` back unfinished (its queue was full after all): it goes back to the
    /// front of the dispatch list and will be the next request issued.
    pub fn requeue(&mut self, now: Instant, id: RequestId) {
        self.account(now);
        let request = &mut self.table[id];
        assert!(request.state == RequestState::InFlight, "requeue of {id:?} not in flight");
        request.state = RequestState::Dispatched;
        let owned_by_current = request.owner == Some(self.epoch);
        self.in_flight -= 1;
        if self.flush_in_flight == Some(id) {
            self.flush_in_flight = None;
        }
        self.dispatch.push_front(id);
        self.stats.requeued += 1;
        if owned_by_current {
            self.scheduler.deactivate(&cx!(self, now), id);
        }
    }

    /// Forced dispatch (the kernel's `elv_drain_elevator`): everything the scheduler holds
    /// goes onto the dispatch list at once, idling and batching ignored, and is issued as the
    /// device has room. For a driver that is stopping (a run's end, Ctrl-C) and must not wait
    /// for an idle window that no arrival will end. Returns how many requests moved.
    pub fn drain_scheduler(&mut self, now: Instant) -> usize {
        self.account(now);
        let count = self.drain_to_dispatch(now, "forced dispatch", false);
        self.sched_asleep = false;
        self.unplug();
        self.end_idle(now);
        count
    }

    /// Replaces the scheduler at run time and returns the old one, as 2.6.18's
    /// `elevator_switch` does: everything the old scheduler holds is drained onto the dispatch
    /// list in the old scheduler's order (`elv_drain_elevator`) and the queue is unplugged;
    /// until every request allocated before the switch has completed, new requests bypass
    /// both schedulers and join the dispatch list's tail in arrival order (the kernel
    /// allocates them without elevator data while `QUEUE_FLAG_ELVSWITCH` is set). Only
    /// requests allocated after that reach the new scheduler.
    pub fn switch_scheduler(
        &mut self,
        now: Instant,
        scheduler: Box<dyn Scheduler>,
    ) -> Box<dyn Scheduler> {
        self.account(now);
        self.drain_to_dispatch(now, "switch", true);
        self.epoch = self.epoch.wrapping_add(1);
        let old = std::mem::replace(&mut self.scheduler, scheduler);
        self.scheduler.depth_updated(self.config.nr_requests);
        self.scheduler.set_rotational(self.config.rotational);
        if let Some(blk_mq) = self.config.blk_mq {
            self.scheduler.set_tick_rate(blk_mq.tick_rate);
        }
        self.sched_asleep = false;
        self.stats.switches += 1;
        self.bypass_before = (self.table.live_count() > 0).then_some(self.next_sequence);
        self.unplug();
        self.end_idle(now);
        old
    }

    /// Whether a switch is still waiting for requests allocated before it (new requests
    /// bypass the scheduler meanwhile).
    pub fn is_switching(&self) -> bool {
        self.bypass_before.is_some()
    }

    /// Ends a switch's bypass once no request allocated before the switch is left (the
    /// kernel's `rq.elvpriv` reaching 0).
    fn end_bypass_if_drained(&mut self) {
        if let Some(boundary) = self.bypass_before
            && !self.table.iter().any(|(_, request)| request.sequence < boundary)
        {
            self.bypass_before = None;
        }
    }

    /// Puts `id` at the dispatch list's tail, past every scheduler: a request allocated while a
    /// switch drains (`elv_insert` turns a sort insertion of a request without elevator data
    /// into a back insertion).
    fn bypass(&mut self, id: RequestId) {
        self.table[id].state = RequestState::Dispatched;
        self.dispatch.add(&self.table, id, crate::scheduler::DispatchInsert::Tail);
    }

    /// `process` exited; the scheduler may stop waiting for it.
    pub fn process_exited(&mut self, now: Instant, process: ProcessId) {
        self.account(now);
        self.scheduler.process_exited(&cx!(self, now), process);
    }

    /// Requests allocated so far (`stats().requests_allocated`, without computing the rest).
    pub fn requests_allocated(&self) -> u64 {
        self.stats.requests_allocated
    }

    /// The maxima since the last call (or since the queue was created), starting a new
    /// window: a run's phases each get their own longest wait and seek.
    pub fn take_window_maxima(&mut self) -> WindowMaxima {
        std::mem::take(&mut self.window)
    }

    /// Unplugs now: an issuer is about to wait for its I/O. On a 2.4 queue this is what
    /// `tq_disk` does to each plugged queue (the runner runs it on every queue of the host,
    /// linux-2.4-elevator.md §4.2).
    pub fn unplug(&mut self) {
        self.plugged_until = None;
        self.tq_plugged = false;
    }

    /// When the first task sleeping for a request of a RHEL 3 queue gives up waiting and
    /// tries again (1 s after it fell asleep, §5), if anyone sleeps: the driver should call
    /// [`BlockQueue::next_request`] then and let [`BlockQueue::pop_woken`]'s processes retry.
    // Hot from the simulator's crate (several calls per I/O): inline there.
    #[inline]
    pub fn next_pool_timeout(&self) -> Option<Instant> {
        self.pool.next_timeout_2_4()
    }

    /// Whether the queue has woken processes waiting to retry.
    pub fn has_woken(&self) -> bool {
        !self.woken.is_empty()
    }

    /// The next process allowed to retry a blocked submission, if any.
    pub fn pop_woken(&mut self) -> Option<ProcessId> {
        self.woken.pop_front()
    }

    /// Changes `nr_requests` (at least 4); the pool's marks are re-evaluated at once.
    pub fn set_nr_requests(&mut self, nr_requests: u32) -> Result<(), QueueConfigError> {
        let config = QueueConfig { nr_requests, ..self.config.clone() };
        config.validate()?;
        let capacity = Self::table_capacity(&config);
        if capacity > self.table.capacity() {
            self.table.grow(capacity);
            self.merge.grow(capacity);
            self.hazards.grow(capacity);
        }
        self.config = config;
        self.pool.set_nr_requests(nr_requests);
        self.scheduler.depth_updated(nr_requests);
        Ok(())
    }

    /// Changes the device queue depth. Requests already in flight beyond it finish normally.
    pub fn set_depth(&mut self, depth: u32) -> Result<(), QueueConfigError> {
        let config = QueueConfig { depth, ..self.config.clone() };
        config.validate()?;
        let capacity = Self::table_capacity(&config);
        if capacity > self.table.capacity() {
            self.table.grow(capacity);
            self.merge.grow(capacity);
            self.hazards.grow(capacity);
        }
        self.depth_slack = self.in_flight.saturating_sub(depth);
        self.config = config;
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// The request, while it lives.
    // Hot from the simulator's crate (several calls per I/O): inline there.
    #[inline]
    pub fn request(&self, id: RequestId) -> Option<&Request> {
        self.table.get(id)
    }

    /// Every live request.
    pub fn requests(&self) -> &RequestTable {
        &self.table
    }

    /// The attached scheduler.
    pub fn scheduler(&self) -> &dyn Scheduler {
        self.scheduler.as_ref()
    }

    /// The attached scheduler, to change its tunables.
    pub fn scheduler_mut(&mut self) -> &mut dyn Scheduler {
        self.scheduler.as_mut()
    }

    /// Requests at the device.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Requests in the scheduler.
    pub fn queued(&self) -> usize {
        self.scheduler.queued()
    }

    /// Requests held behind an overlapping earlier request.
    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    /// Requests on the dispatch list.
    pub fn dispatch_count(&self) -> usize {
        self.dispatch.count()
    }

    /// Requests allocated and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.table.live_count()
    }

    /// Whether nothing is outstanding and nobody waits for a request.
    pub fn is_quiet(&self) -> bool {
        self.table.live_count() == 0 && self.pool.waiter_count() == 0
    }

    /// Whether the pool class of (`op`, `flags`) is congested (from 113 of 128 until below 103).
    pub fn is_congested(&self, op: Op, flags: RequestFlags) -> bool {
        self.pool.is_congested(self.pool.split.class(op, flags))
    }

    /// Whether reads (or writes) are congested under the 2.6.18 direction split.
    pub fn is_direction_congested(&self, direction: Direction) -> bool {
        let op = if direction == Direction::Read { Op::Read } else { Op::Write };
        self.is_congested(op, RequestFlags::NONE)
    }

    /// Whether reads and writes (as plain bios of each direction) are congested: the two flags
    /// read-ahead and write-back look at, in one call.
    // Hot from the simulator's crate (several calls per I/O): inline there.
    #[inline]
    pub fn congested_directions(&self) -> (bool, bool) {
        let class = |op| self.pool.split.class(op, RequestFlags::NONE);
        (self.pool.is_congested(class(Op::Read)), self.pool.is_congested(class(Op::Write)))
    }

    /// How many times the queue's congestion marks have flipped since it was made: while this
    /// stays the same, [`BlockQueue::congested_directions`] answers as it last did (the
    /// simulator asks only when it moved).
    #[inline]
    pub fn congestion_flips(&self) -> u64 {
        self.pool.congestion_flips
    }

    /// Whether the queue is plugged at `now`.
    pub fn is_plugged(&self, now: Instant) -> bool {
        self.tq_plugged || self.plugged_until.is_some_and(|until| now < until)
    }

    /// Counters since creation, with idle time and occupancy counted up to `now`.
    pub fn stats(&self, now: Instant) -> QueueStats {
        let mut stats = self.stats;
        if let Some(since) = self.idle_since {
            stats.idle_ns += now.saturating_since(since).as_nanos();
        }
        self.add_occupancy(&mut stats, now);
        stats
    }

    /// Counts the occupancy since the last call, at the counts it had all that time (they
    /// change only inside the queue's calls, each of which accounts first).
    fn account(&mut self, now: Instant) {
        // In place: the counters are a few hundred bytes, and this runs on every call into
        // the queue (several per I/O), so no copy of them in and out.
        if let Some(last) = self.accounted_to {
            let span = now.saturating_since(last).as_nanos();
            if span > 0 {
                let stats = &mut self.stats;
                stats.sched_queue_area += u128::from(span) * self.scheduler.queued() as u128;
                stats.device_queue_area += u128::from(span) * u128::from(self.in_flight);
                stats.observed_ns += span;
            }
        }
        self.accounted_to = Some(self.accounted_to.map_or(now, |last| last.max(now)));
        if self.pool.is_2_4() {
            // RHEL 3's sleepers for a request retry after 1 s (§5).
            self.pool.expire_waiters_2_4(now, &mut self.woken);
        }
    }

    /// Adds to `stats` the occupancy from the last accounting to `now`.
    fn add_occupancy(&self, stats: &mut QueueStats, now: Instant) {
        if let Some(last) = self.accounted_to {
            let span = now.saturating_since(last).as_nanos();
            stats.sched_queue_area += u128::from(span) * self.scheduler.queued() as u128;
            stats.device_queue_area += u128::from(span) * u128::from(self.in_flight);
            stats.observed_ns += span;
        }
    }

    // ---- helpers of submit ----

    fn validate(&self, mut bio: Bio) -> Result<Bio, SubmitError> {
        self.check(&bio)?;
        if !self.bios.has_room() {
            return Err(SubmitError::TooManyBios { limit: self.config.max_bios });
        }
        if bio.op == Op::Read {
            bio.flags = bio.flags | RequestFlags::SYNC;
        }
        Ok(bio)
    }

    /// Allocates a request for `bio` from the pool, or records the process as waiting.
    fn allocate(&mut self, now: Instant, bio: &Bio) -> Option<RequestId> {
        let class = self.pool.split.class(bio.op, bio.flags);
        let vote = self.scheduler.may_queue(&cx!(self, now), bio.process, bio.op);
        if !self.pool.try_alloc(class, bio.process, vote, now) {
            if self.pool.is_2_4() {
                self.pool.wait_2_4(class, bio.process, now);
            } else {
                self.pool.wait(class, bio.process);
            }
            self.stats.blocked += 1;
            // A process about to sleep for a request unplugs the queue first.
            self.unplug();
            return None;
        }
        let mut request = Request::from_bio(bio, now);
        request.sequence = self.next_sequence;
        self.next_sequence += 1;
        request.bios = self.bios.single(bio.tag);
        let id = self.table.insert(request).unwrap_or_else(|_| {
            unreachable!("the table holds both pool classes at their hard caps")
        });
        self.hazards.add(id, &self.table[id]);
        self.stats.requests_allocated += 1;
        Some(id)
    }

    fn insert_into_scheduler(&mut self, now: Instant, id: RequestId) {
        let request = &mut self.table[id];
        request.state = RequestState::Queued;
        request.owner = Some(self.epoch);
        self.merge.add(id, &self.table[id]);
        self.scheduler.insert(&cx!(self, now), id);
        self.stats.inserted += 1;
        // blk-mq: an insertion runs the hardware queue, which asks the scheduler again.
        self.sched_asleep = false;
    }

    /// Whether `bio` unplugs the queue once queued: a sync write (`BIO_RW_SYNC`: 2.6.18's
    /// O_DIRECT writes, integrity write-back) always; a read when [`QueueConfig::reads_unplug`]
    /// says so. Never on a 2.4 queue.
    fn runs_queue(&self, bio: &Bio) -> bool {
        // 2.4 has no sync bio: only `tq_disk` unplugs (linux-2.4-elevator.md §4.2).
        self.config.linux_2_4.is_none()
            && bio.flags.is_sync()
            && (bio.op != Op::Read || self.config.reads_unplug)
    }

    fn plug_after_insert(&mut self, now: Instant, queue_was_empty: bool, run_now: bool) {
        if !self.config.plugging {
            return;
        }
        if self.config.linux_2_4.is_some() {
            // 2.4 (linux-2.4-elevator.md §4.2): a bh arriving at an empty list plugs the
            // queue until someone runs `tq_disk`; no timer, no request-count threshold, and
            // no bio unplugs it by itself.
            if queue_was_empty && !self.tq_plugged {
                self.tq_plugged = true;
                self.stats.plugs += 1;
            }
            return;
        }
        if queue_was_empty && self.plugged_until.is_none() {
            self.plugged_until = Some(now + UNPLUG_DELAY);
            self.stats.plugs += 1;
        }
        if self.plugged_until.is_none() {
            return;
        }
        // Requests allocated but not at the device: the kernel's `rq.count − in_flight`.
        let pending = self.table.live_count() as u32 - self.in_flight;
        // 2.6.9 (and RHEL 4 to U4) unplugs only when an insertion makes the count exactly the
        // threshold: one that finds more leaves the queue plugged for the timer or a waiting
        // task (host-mechanisms.md §2.1).
        let threshold_reached = match self.config.kernel.unplug_test() {
            UnplugTest::Exactly => pending == UNPLUG_THRESHOLD,
            UnplugTest::AtLeast => pending >= UNPLUG_THRESHOLD,
        };
        if run_now || threshold_reached {
            self.unplug();
        }
    }

    /// Finds the request `bio` may join and merges it, in the kernel's lookup order: the
    /// `last_merge` cache (back, then front), the back index, the front index. The first
    /// compatible, contiguous candidate is the only one tried; if the merge would be too large
    /// the request is marked no-merge and the bio gets a request of its own.
    fn try_merge(&mut self, now: Instant, bio: &Bio) -> Option<RequestId> {
        let max_sectors = self.config.merge_limit_sectors();
        let sync_must_match = !self.config.merges_ignore_sync;
        let (target, kind) = match self.scheduler.choose_merge(&cx!(self, now), bio) {
            MergeChoice::Core => self.find_merge_candidate(now, bio)?,
            MergeChoice::NoMerge => return None,
            MergeChoice::Into { target, kind } => {
                let request = self.table.get(target).unwrap_or_else(|| {
                    panic!("{}: chose {target:?}, which is not a request", self.scheduler.name())
                });
                let contiguous = match kind {
                    MergeKind::Back => request.end() == bio.start,
                    MergeKind::Front { old_start } => {
                        request.start == bio.end() && old_start == request.start
                    }
                };
                assert!(contiguous, "{}: chose {target:?}, not contiguous", self.scheduler.name());
                // A refusal by the block layer's rules (the driver's limit) leaves the target
                // as it is: the scheduler places the bio's own request (2.4, §3.1).
                if merge::check_bio(request, bio, max_sectors, sync_must_match)
                    != MergeCheck::Allowed
                {
                    return None;
                }
                self.merge_bio(now, target, kind, bio);
                return Some(target);
            }
        };
        if merge::check_bio(&self.table[target], bio, max_sectors, sync_must_match)
            == MergeCheck::TooBig
        {
            self.table[target].no_merge = true;
            if self.merge.last_merge == Some(target) {
                self.merge.last_merge = None;
            }
            return None;
        }
        self.merge_bio(now, target, kind, bio);
        Some(target)
    }

    fn find_merge_candidate(&self, now: Instant, bio: &Bio) -> Option<(RequestId, MergeKind)> {
        let cx = cx!(self, now);
        let compatible = |target: RequestId| {
            merge::check_bio(&self.table[target], bio, u32::MAX, !self.config.merges_ignore_sync)
                == MergeCheck::Allowed
                && self.scheduler.allow_merge(&cx, target, bio)
        };
        let front = |target: RequestId| MergeKind::Front { old_start: self.table[target].start };
        if let Some(cached) = self.merge.last_merge
            && compatible(cached)
        {
            let request = &self.table[cached];
            if request.end() == bio.start {
                return Some((cached, MergeKind::Back));
            }
            if request.start == bio.end() {
                return Some((cached, front(cached)));
            }
        }
        let lookups = self.scheduler.merge_lookups();
        if lookups.back
            && let Some(target) = self.merge.find_back(bio)
            && compatible(target)
        {
            return Some((target, MergeKind::Back));
        }
        if lookups.front
            && let Some(target) = self.merge.find_front(bio)
            && compatible(target)
            && self.scheduler.allow_front_lookup(&cx, target, bio)
        {
            return Some((target, front(target)));
        }
        None
    }

    fn merge_bio(&mut self, now: Instant, target: RequestId, kind: MergeKind, bio: &Bio) {
        let request = &mut self.table[target];
        match kind {
            MergeKind::Back => {
                self.bios.push_back(&mut request.bios, bio.tag);
                self.stats.back_merges += 1;
            }
            MergeKind::Front { .. } => {
                request.start = bio.start;
                self.bios.push_front(&mut request.bios, bio.tag);
                self.stats.front_merges += 1;
            }
        }
        request.sector_count += bio.sector_count;
        request.priority = request.priority.better(bio.priority);
        request.flags = request.flags | (bio.flags.intersection(RequestFlags::META));
        self.hazards.update(target, &self.table[target]);
        self.merge.rekey(target, &self.table[target]);
        self.merge.last_merge = Some(target);
        self.scheduler.merged(&cx!(self, now), target, kind);
        self.try_fuse(now, target, kind);
    }

    /// After a bio merge, the grown request may now touch its neighbour: fuse the two.
    fn try_fuse(&mut self, now: Instant, grown: RequestId, kind: MergeKind) {
        let Some(neighbour) = self.scheduler.merge_neighbour(&cx!(self, now), grown, kind) else {
            return;
        };
        let (kept, absorbed) = match kind {
            MergeKind::Back => (grown, neighbour),
            MergeKind::Front { .. } => (neighbour, grown),
        };
        if kept == absorbed || self.table[kept].end() != self.table[absorbed].start {
            return;
        }
        if merge::check_requests(
            &self.table[kept],
            &self.table[absorbed],
            self.config.merge_limit_sectors(),
            !self.config.merges_ignore_sync,
        ) != MergeCheck::Allowed
        {
            return;
        }
        // The kept request grows first, as in the kernel's attempt_merge, so the scheduler sees
        // its final size and can still look the absorbed one up.
        let gone = self.table[absorbed].clone();
        let request = &mut self.table[kept];
        request.sector_count += gone.sector_count;
        request.created = request.created.min(gone.created);
        request.priority = request.priority.better(gone.priority);
        request.flags = request.flags | gone.flags.intersection(RequestFlags::META);
        request.sequence = request.sequence.min(gone.sequence);
        self.bios.append(&mut request.bios, gone.bios);
        self.scheduler.requests_merged(&cx!(self, now), kept, absorbed);
        self.merge.remove(absorbed);
        self.hazards.remove(absorbed);
        self.table.remove(absorbed);
        self.hazards.update(kept, &self.table[kept]);
        self.merge.rekey(kept, &self.table[kept]);
        self.merge.last_merge = Some(kept);
        self.stats.requests_fused += 1;
        self.free_pool_slot(now, &gone);
    }

    /// A flush drains the scheduler onto the dispatch list and queues behind it.
    fn submit_flush(&mut self, now: Instant, bio: Bio) -> Submitted {
        let Some(id) = self.allocate(now, &bio) else {
            return Submitted::Blocked;
        };
        self.stats.bios += 1;
        self.table[id].state = RequestState::Dispatched;
        if self.config.blk_mq.is_some() {
            // blk-mq: the flush bypasses the scheduler to the head of the dispatch list, behind
            // flushes already there, and drains nothing (`BlkMqQueue`).
            let position = self
                .dispatch
                .iter()
                .position(|queued| self.table[queued].op != Op::Flush)
                .unwrap_or(self.dispatch.count());
            self.dispatch.insert_at(position, id);
            return Submitted::Queued { request: id };
        }
        self.drain_to_dispatch(now, "flush", false);
        self.dispatch.add(&self.table, id, crate::scheduler::DispatchInsert::Tail);
        self.unplug();
        Submitted::Queued { request: id }
    }

    /// Moves everything the scheduler holds onto the dispatch list, in its drain order.
    fn drain_to_dispatch(&mut self, now: Instant, call: &str, by_switch: bool) -> usize {
        let mut drained = std::mem::take(&mut self.scratch);
        drained.clear();
        let queued = self.scheduler.queued();
        self.scheduler.drain(&cx!(self, now), &mut drained);
        self.check_drained(&drained, queued, call);
        let mode = self.scheduler.dispatch_insert();
        for &id in &drained {
            self.merge.remove(id);
            self.table[id].state = RequestState::Dispatched;
            self.dispatch.add(&self.table, id, mode);
            if by_switch {
                self.stats.switched += 1;
            } else {
                self.stats.dispatched += 1;
            }
        }
        let count = drained.len();
        self.scratch = drained;
        count
    }

    // ---- helpers of next_request ----

    /// Checks and records that the scheduler gave up `id`.
    fn take_from_scheduler(&mut self, id: RequestId, call: &str) {
        let name = self.scheduler.name();
        let Some(request) = self.table.get_mut(id) else {
            panic!("{name}: {call} returned stale {id:?}");
        };
        assert!(
            request.state == RequestState::Queued && request.owner == Some(self.epoch),
            "{name}: {call} returned {id:?} which it does not hold (state {:?})",
            request.state
        );
        request.state = RequestState::Dispatched;
        self.merge.remove(id);
        self.stats.dispatched += 1;
    }

    fn issue(&mut self, now: Instant, id: RequestId) {
        if self.frees_at_dispatch() && !self.table[id].started {
            // 2.4 SCSI: the request function dequeues the request and returns it to the pool
            // as it builds the command (linux-2.4-elevator.md §4.1, §5); a requeued one is not
            // freed twice.
            let request = self.table[id].clone();
            self.free_pool_slot(now, &request);
        }
        let request = &mut self.table[id];
        request.state = RequestState::InFlight;
        request.started = true;
        request.issued_at = now;
        let distance = self.head_position.distance(request.start);
        self.stats.seek_distance_sectors += distance;
        self.stats.seek_distance_max_sectors = self.stats.seek_distance_max_sectors.max(distance);
        let waited = now.saturating_since(request.created).as_nanos();
        self.stats.max_wait_ns = self.stats.max_wait_ns.max(waited);
        self.window.seek_distance_max_sectors = self.window.seek_distance_max_sectors.max(distance);
        self.window.max_wait_ns = self.window.max_wait_ns.max(waited);
        self.head_position = request.end();
        let owned_by_current = request.owner == Some(self.epoch);
        // A blk-mq flush stalls nothing (`BlkMqQueue`).
        if request.op == Op::Flush && self.config.blk_mq.is_none() {
            self.flush_in_flight = Some(id);
        }
        let activated = std::mem::replace(&mut request.activated, false);
        self.in_flight += 1;
        self.stats.issued += 1;
        self.end_idle(now);
        if activated {
            // Fetched (and activated) earlier while the device was full: now it is sent.
            self.activated_waiting -= 1;
        } else if owned_by_current {
            self.scheduler.activate(&cx!(self, now), id);
        }
    }

    /// Activates the dispatch list's head without sending it: the SCSI request function's
    /// fetch with the device full ([`DriverFetch::BeforeDepthCheck`]). Once per request.
    fn activate_waiting(&mut self, now: Instant, head: RequestId) {
        let request = &mut self.table[head];
        if request.activated || request.op == Op::Flush {
            return;
        }
        request.activated = true;
        request.started = true;
        let owned_by_current = request.owner == Some(self.epoch);
        self.activated_waiting += 1;
        if owned_by_current {
            self.scheduler.activate(&cx!(self, now), head);
        }
    }

    /// Whether a held request older than `sequence` exists (a flush must wait for it).
    fn held_before(&self, sequence: u64) -> bool {
        self.held.iter().any(|&id| self.table[id].sequence < sequence)
    }

    fn end_idle(&mut self, now: Instant) {
        if let Some(since) = self.idle_since.take() {
            self.stats.idle_ns += now.saturating_since(since).as_nanos();
        }
    }

    // ---- helpers of complete ----

    fn free_pool_slot(&mut self, now: Instant, request: &Request) {
        let class = self.pool.split.class(request.op, request.flags);
        self.pool.release(class, now, &mut self.woken);
    }

    /// Whether requests return to the pool when issued (2.4 SCSI) rather than at completion.
    pub(crate) fn frees_at_dispatch(&self) -> bool {
        self.config.linux_2_4.is_some_and(|linux_2_4| linux_2_4.free_at_dispatch)
    }

    /// Whether a write starting at `start`, allocated at `sequence`, must wait for an earlier
    /// write to its sequential zone ([`ZoneWriteOrder`]).
    fn zone_write_plugged(&self, op: Op, start: u64, sequence: u64) -> bool {
        let Some(zones) = self.config.zones else { return false };
        if op != Op::Write || start < zones.conventional_sectors {
            return false;
        }
        let zone_start = start - start % zones.zone_size_sectors;
        let zone_end = zone_start + zones.zone_size_sectors;
        self.hazards.earlier_write_in(&self.table, zone_start, zone_end, sequence)
    }

    /// Releases held requests whose earlier overlapping requests have all completed, in
    /// allocation order. One released ahead of a pending flush goes straight onto the dispatch
    /// list in front of it: it was submitted before the flush.
    fn release_held(&mut self, now: Instant) {
        if self.held.is_empty() {
            return;
        }
        let mut index = 0;
        while index < self.held.len() {
            let id = self.held[index];
            let request = &self.table[id];
            if (self.config.blk_mq.is_none()
                && self.hazards.conflicts(
                    &self.table,
                    request.op,
                    request.start.0,
                    request.end().0,
                    request.sequence,
                ))
                || (!request.flags.contains(RequestFlags::PASSTHROUGH)
                    && self.zone_write_plugged(request.op, request.start.0, request.sequence))
            {
                index += 1;
                continue;
            }
            self.held.remove(index);
            let sequence = request.sequence;
            let flush_ahead = self.dispatch.iter().position(|queued| {
                let queued = &self.table[queued];
                queued.op == Op::Flush && queued.sequence > sequence
            });
            match flush_ahead {
                Some(position) => {
                    self.table[id].state = RequestState::Dispatched;
                    self.dispatch.insert_at(position, id);
                }
                None if self.bypass_before.is_some()
                    || self.table[id].flags.contains(RequestFlags::PASSTHROUGH) =>
                {
                    self.bypass(id)
                }
                None => self.insert_into_scheduler(now, id),
            }
        }
    }

    // ---- shared ----

    /// Checks a drain: the scheduler is empty and gave back each of the `queued` requests it
    /// held exactly once.
    fn check_drained(&self, drained: &[RequestId], queued: usize, call: &str) {
        let name = self.scheduler.name();
        assert!(
            self.scheduler.queued() == 0,
            "{name}: drain for a {call} left {} requests queued",
            self.scheduler.queued()
        );
        assert!(
            drained.len() == queued,
            "{name}: drain for a {call} gave back {} requests, it held {queued}",
            drained.len()
        );
        for &id in drained {
            let request =
                self.table.get(id).unwrap_or_else(|| panic!("{name}: drained stale {id:?}"));
            assert!(
                request.state == RequestState::Queued && request.owner == Some(self.epoch),
                "{name}: drain for a {call} returned {id:?} which it does not hold"
            );
        }
        let mut sorted = drained.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert!(sorted.len() == drained.len(), "{name}: drain for a {call} repeated a request");
    }
}
