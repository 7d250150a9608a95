//! `job`: a block-level workload with fio's option names and meanings.
//!
//! Each clone (`numjobs`) is one process that keeps up to `iodepth` operations in flight over
//! its region (`offset + i × offset_increment`, `size` long, or to the end of the device), in
//! the pattern `rw` names, with `bs`-sized (or `bsrange`) operations, mixing reads and writes
//! `rwmixread` percent to the rest, pausing `thinktime` after each completion, until it has
//! moved `size` bytes or `runtime` has passed (`time_based` keeps going until `runtime`).
//!
//! # Keys
//!
//! | key | default | fio's meaning |
//! |---|---|---|
//! | `rw` | read | read, write, randread, randwrite, rw (= readwrite), randrw |
//! | `bs` | 4k | block size |
//! | `bsrange` | — | `MIN-MAX`: sizes uniformly drawn among multiples of MIN |
//! | `bssplit` | — | `SIZE/PERCENT:...`: each size drawn with its share (blank shares split the rest) |
//! | `size` | rest of the device | bytes per clone (region and amount) |
//! | `io_size` | `size` | amount of I/O per clone, independent of the region |
//! | `runtime` | — | cap on run time, seconds if bare |
//! | `time_based` | 0 | loop over the region until `runtime` |
//! | `iodepth` | 1 | operations in flight per clone |
//! | `numjobs` | 1 | clones |
//! | `rwmixread` / `rwmixwrite` | 50 / — | read percentage of mixed patterns |
//! | `thinktime` | 0 | pause after each completion, µs if bare |
//! | `offset` | 0 | start of the region (bytes or `N%` of the device) |
//! | `offset_increment` | 0 | clone i starts at `offset + i × offset_increment` |
//! | `prioclass` / `prio` | — | I/O priority class 0–3 and level 0–7 |
//! | `direct` | 1 | O_DIRECT (writes are then synchronous, as the kernel marks them) |
//! | `filename` | first device | device name(s), `:`-separated, served as `file_service_type` says (round robin) |
//! | `ioengine` | io_uring | psync/sync/pvsync/pvsync2 cap the depth at 1 as in fio |
//!
//! The keys above are `job`'s basics; `fio:FILE` also uses `rw_step` (fio's `rw=...:N`),
//! `random_distribution`, `percentage_random`, `norandommap`, `blockalign`, `rate`,
//! `rate_iops`, `rate_process`, `rate_min`, `rate_cycle`, `startdelay`, `loops`, `number_ios`,
//! `fsync`, `end_fsync`, `thinktime_blocks`, `thinktime_blocks_type`, `verify`,
//! `verify_backlog`, `fill_device`, `continue_on_error`, `ignore_error`, `cmdprio_percentage`, `cmdprio_class`, `cmdprio`, `zonesize`,
//! `zonerange`, `zoneskip` (fio's strided zones), `latency_target`, `latency_window`,
//! `latency_percentile`, `latency_run`, `flow`, `flow_id`, `flow_sleep`, `steadystate` with
//! `steadystate_duration`, `steadystate_ramp_time`, `steadystate_check_interval` and
//! `steadystate_group`, each with fio's meaning (`elevator list
//! workloads` prints them all).
//!
//! The CPU keys `cpus_allowed`, `cpus_allowed_policy`, `iodepth_batch_submit`, `fixedbufs`,
//! `registerfiles`, `hipri`, `sqthread_poll` and `sqthread_poll_cpu` change none of a clone's
//! I/O: they are its [`Issuer::cpu`] profile ([`crate::IssuerCpu`]), which the simulator's
//! blk-mq host charges and places by (blk-mq-host.md §1, §2.2). The io_uring flags are
//! refused on an engine whose fio option table lacks them, as fio refuses them ("Bad option").
//!
//! # Deviations from fio
//!
//! * `ignore_error` separates its READ, WRITE and VERIFY lists with `/` (fio's `,` separates
//!   `job`'s keys). A failed I/O (ENOSPC, the one error the simulator raises) follows fio's
//!   `check_error`: non-fatal when `continue_on_error` and the type's list cover it (counted,
//!   the job goes on), else the job's normal end with `fill_device`, else the job ends with
//!   the error counted; either end skips verify and the fsyncs owed, as fio's does. A failed
//!   I/O the job goes on after delays its next one by 1 µs (fio's failing call's time,
//!   not modelled otherwise).
//! * `direct` defaults to 1 and `ioengine` to io_uring: `job` is the block-level workload, so
//!   `iodepth` works without extra keys. Buffered I/O (`direct=0`) belongs to the host model.
//! * `norandommap` defaults to 1 (draws with replacement) for `job`; `fio:FILE` sets fio's
//!   default, the random map (each block once per pass; a used block is replaced by the next
//!   free one, as fio's `axmap_next_free`). Non-uniform distributions and `blockalign`
//!   disable the map, as in fio.
//! * `cpus_allowed` separates its pieces with `:` (`0-3:6`; fio's `,` separates `job`'s
//!   keys; `,` works where no spec string carries it), and refuses what fio's `atoi` parser
//!   reads loosely (`x` as CPU 0, `3-1` as no CPU, an empty piece as the list's end).
//!   `cpus_allowed_policy=split` counts clones from 0 for `-w job:`; in a fio file from the
//!   clone's fio thread number over the whole file, as fio does.
//! * `rate` and `rate_iops` take one value for all directions (fio keeps one per direction).
//! * `rate_min` ends the clone and counts `rate_min_failures` where fio fails the job.
//! * `ioengine=null` completes each I/O at its submission, in no simulated time (fio's takes
//!   the time of fio's own code); a `time_based` null job without thinktime or a rate would
//!   never end, and is refused. A null phase so takes no time, and its rates (MB/s, IOPS)
//!   print as 0: the operations and bytes are counted, a rate over no time is not.
//! * The passthrough engines (`sg`, `libzbc`, `io_uring_cmd`, `xnvme`) are direct I/O to a
//!   device whose requests bypass the scheduler; `sg` and `libzbc` are one command at a time
//!   (SG_IO on a block device).
//! * A sequential pass that reaches the end of the region before the job's amount (io_size
//!   beyond the region, loops, holes) wraps to the start, as fio's does.

use elevator_core::{
    Duration, Instant, IoPriority, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId,
    RequestFlags, SECTOR_SIZE_BYTES, Zipf, units,
};

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::process::{check_sectors, parse_block_range};
use crate::{
    FailedIo, Io, IoFailure, IoId, IoKind, Issuer, PhasePlan, Place, Poll, Target, WorkloadPlan,
};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str = "fio-style block-level job: rw, bs, size, iodepth, numjobs, thinktime";

const MAX_TIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// The keys of `job`, fio's names.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "rw",
        kind: KeyKind::Choice(&[
            "read",
            "write",
            "randread",
            "randwrite",
            "rw",
            "readwrite",
            "randrw",
            "trim",
            "randtrim",
            "trimwrite",
        ]),
        default: "read",
        help: "I/O pattern (trims are discards)",
    },
    KeySpec {
        key: "rw_step",
        kind: KeyKind::Text,
        default: "",
        help: "fio's rw=...:N: sequential: bytes skipped after each I/O (may be negative); random: I/Os per random offset",
    },
    KeySpec {
        key: "random_distribution",
        kind: KeyKind::Text,
        default: "random",
        help: "random, zipf:THETA, pareto:H, normal:DEV%, zoned:ACCESS/RANGE:...",
    },
    KeySpec {
        key: "file_service_type",
        kind: KeyKind::Text,
        default: "roundrobin",
        help: "how a clone with several files picks the next: roundrobin[:N], sequential, random[:N], zipf[:THETA], pareto[:H], normal[:DEV%] (fio's)",
    },
    KeySpec {
        key: "percentage_random",
        kind: KeyKind::Integer { min: 0, max: 100 },
        default: "100",
        help: "percent of a random pattern's I/Os at random offsets (the rest sequential)",
    },
    KeySpec {
        key: "norandommap",
        kind: KeyKind::Flag,
        default: "1",
        help: "0: fio's random map, each block once per pass; 1: draws with replacement",
    },
    KeySpec {
        key: "blockalign",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 64 << 20 },
        default: "",
        help: "alignment of random offsets (default: the smallest block size)",
    },
    KeySpec {
        key: "rate",
        kind: KeyKind::Size { min_bytes: 1, max_bytes: 1 << 50 },
        default: "",
        help: "bytes per second cap per clone",
    },
    KeySpec {
        key: "rate_iops",
        kind: KeyKind::Integer { min: 1, max: 1 << 40 },
        default: "",
        help: "I/Os per second cap per clone",
    },
    KeySpec {
        key: "rate_process",
        kind: KeyKind::Choice(&["linear", "poisson"]),
        default: "linear",
        help: "linear: evenly spaced; poisson: exponential gaps with the same mean",
    },
    KeySpec {
        key: "rate_min",
        kind: KeyKind::Size { min_bytes: 1, max_bytes: 1 << 50 },
        default: "",
        help: "end the clone (a failure, counted) when a rate_cycle moves fewer bytes a second",
    },
    KeySpec {
        key: "rate_cycle",
        kind: KeyKind::Time { min: Duration::from_millis(1), max: MAX_TIME, bare_unit: "ms" },
        default: "1000ms",
        help: "the window rate_min is averaged over",
    },
    KeySpec {
        key: "startdelay",
        kind: KeyKind::Text,
        default: "0",
        help: "wait this long before the first I/O (seconds if bare); LO-HI: drawn per clone",
    },
    KeySpec {
        key: "loops",
        kind: KeyKind::Integer { min: 1, max: 1 << 40 },
        default: "1",
        help: "repeat the job's I/O amount this many times",
    },
    KeySpec {
        key: "fsync",
        kind: KeyKind::Integer { min: 0, max: 1 << 40 },
        default: "0",
        help: "issue a sync after every N writes (0: never)",
    },
    KeySpec {
        key: "end_fsync",
        kind: KeyKind::Flag,
        default: "0",
        help: "one sync of each place after the last write",
    },
    KeySpec {
        key: "thinktime_blocks",
        kind: KeyKind::Integer { min: 1, max: 1 << 40 },
        default: "1",
        help: "think after this many blocks (completed or issued)",
    },
    KeySpec {
        key: "thinktime_blocks_type",
        kind: KeyKind::Choice(&["complete", "issue"]),
        default: "complete",
        help: "count thinktime_blocks as completed or as issued blocks",
    },
    KeySpec {
        key: "latency_target",
        kind: KeyKind::Time { min: Duration::ZERO, max: MAX_TIME, bare_unit: "us" },
        default: "0",
        help: "fio's latency target: search the deepest queue that keeps latency below it",
    },
    KeySpec {
        key: "latency_window",
        kind: KeyKind::Time { min: Duration::ZERO, max: MAX_TIME, bare_unit: "us" },
        default: "0",
        help: "how long each depth of the latency_target search runs",
    },
    KeySpec {
        key: "latency_percentile",
        kind: KeyKind::Float { min: 0.0, max: 100.0, unit: "%" },
        default: "100",
        help: "the share of I/Os within latency_target for a depth to pass",
    },
    KeySpec {
        key: "latency_run",
        kind: KeyKind::Flag,
        default: "0",
        help: "keep adjusting the depth to the target instead of ending once it is found",
    },
    KeySpec {
        key: "flow",
        kind: KeyKind::Integer { min: 0, max: 1 << 32 },
        default: "0",
        help: "fio's flow weight: jobs sharing a flow_id issue in proportion to their weights",
    },
    KeySpec {
        key: "flow_id",
        kind: KeyKind::Integer { min: 0, max: 1 << 32 },
        default: "0",
        help: "the flow a job's weight counts in",
    },
    KeySpec {
        key: "flow_sleep",
        kind: KeyKind::Time { min: Duration::ZERO, max: MAX_TIME, bare_unit: "us" },
        default: "0",
        help: "after its share is exceeded, quiesce and sleep this long (0: retry at once)",
    },
    KeySpec {
        key: "steadystate",
        kind: KeyKind::Text,
        default: "",
        help: "fio's steady state: iops|iops_slope|bw|bw_slope:LIMIT[%] ends the job early",
    },
    KeySpec {
        key: "steadystate_duration",
        kind: KeyKind::Time { min: Duration::ZERO, max: MAX_TIME, bare_unit: "s" },
        default: "0",
        help: "ss_dur: the rolling window the steady state criterion holds over",
    },
    KeySpec {
        key: "steadystate_ramp_time",
        kind: KeyKind::Time { min: Duration::ZERO, max: MAX_TIME, bare_unit: "s" },
        default: "0",
        help: "ss_ramp: run this long before collecting steady state data",
    },
    KeySpec {
        key: "steadystate_check_interval",
        kind: KeyKind::Time { min: Duration::from_millis(1), max: MAX_TIME, bare_unit: "s" },
        default: "1s",
        help: "ss_interval: one sample per interval",
    },
    KeySpec {
        key: "steadystate_group",
        kind: KeyKind::Flag,
        default: "0",
        help: "judge the steady state over all clones together (fio's group_reporting)",
    },
    KeySpec {
        key: "number_ios",
        kind: KeyKind::Integer { min: 0, max: 1 << 50 },
        default: "0",
        help: "stop after this many I/Os, times loops (0: no limit)",
    },
    KeySpec {
        key: "zonesize",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 60 },
        default: "0",
        help: "fio's zonemode=strided: bytes done in each zone (0: no zones)",
    },
    KeySpec {
        key: "zonerange",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 60 },
        default: "0",
        help: "the size of a zone (default: zonesize)",
    },
    KeySpec {
        key: "zoneskip",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 60 },
        default: "0",
        help: "bytes skipped after each zone",
    },
    // fio's zonemode=zbd (crate::zbd): zoned devices, I/O at write pointers.
    KeySpec {
        key: "zbd",
        kind: KeyKind::Flag,
        default: "0",
        help: "fio's zonemode=zbd: writes at zone write pointers, on a zoned device",
    },
    KeySpec {
        key: "zbd_zonesize",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 60 },
        default: "0",
        help: "zonemode=zbd's zonesize: must be the device's zone size (0: the device's)",
    },
    KeySpec {
        key: "max_open_zones",
        kind: KeyKind::Integer { min: 0, max: 4096 },
        default: "0",
        help: "zonemode=zbd: most zones written at once (0: the device's limit)",
    },
    KeySpec {
        key: "zone_reset_threshold",
        kind: KeyKind::Float { min: 0.0, max: 1.0, unit: "of the job's size" },
        default: "0",
        help: "zonemode=zbd: written fraction past which zone_reset_frequency applies",
    },
    KeySpec {
        key: "zone_reset_frequency",
        kind: KeyKind::Float { min: 0.0, max: 1.0, unit: "of writes" },
        default: "0",
        help: "zonemode=zbd: fraction of writes that reset their zone past the threshold",
    },
    KeySpec {
        key: "read_beyond_wp",
        kind: KeyKind::Flag,
        default: "0",
        help: "zonemode=zbd: read past zone write pointers",
    },
    KeySpec {
        key: "bssplit_write",
        kind: KeyKind::Text,
        default: "",
        help: "bssplit for writes when it differs from the reads' (fio's bssplit=READS,WRITES)",
    },
    KeySpec {
        key: "cmdprio_bssplit",
        kind: KeyKind::Text,
        default: "",
        help: "SIZE/PERCENT[/CLASS/LEVEL]:...: per size, the share of reads sent with a priority",
    },
    KeySpec {
        key: "cmdprio_bssplit_write",
        kind: KeyKind::Text,
        default: "",
        help: "cmdprio_bssplit for writes",
    },
    KeySpec {
        key: "cmdprio_percentage",
        kind: KeyKind::Integer { min: 0, max: 100 },
        default: "0",
        help: "percent of I/Os sent with cmdprio_class/cmdprio (io_uring, libaio)",
    },
    KeySpec {
        key: "cmdprio_class",
        kind: KeyKind::Integer { min: 1, max: 3 },
        default: "1",
        help: "the class of cmdprio_percentage's I/Os (1 realtime, 2 best-effort, 3 idle)",
    },
    KeySpec {
        key: "cmdprio",
        kind: KeyKind::Integer { min: 0, max: 7 },
        default: "0",
        help: "the level of cmdprio_percentage's I/Os",
    },
    KeySpec {
        key: "fill_device",
        kind: KeyKind::Flag,
        default: "0",
        help: "fio's fill_device: a write that finds the filesystem full (ENOSPC) ends the job without error",
    },
    KeySpec {
        key: "continue_on_error",
        kind: KeyKind::Choice(&["none", "read", "write", "io", "verify", "all"]),
        default: "none",
        help: "fio's continue_on_error: the failed I/O kinds the job goes on after, when ignore_error lists the error",
    },
    KeySpec {
        key: "ignore_error",
        kind: KeyKind::Text,
        default: "",
        help: "fio's ignore_error READ,WRITE,VERIFY written READ/WRITE/VERIFY: each a `:`-separated list of errors (ENOSPC, EIO, EILSEQ, EDQUOT or numbers); an empty list keeps EIO:EILSEQ",
    },
    KeySpec {
        key: "verify",
        kind: KeyKind::Flag,
        default: "0",
        help: "read back every written block after the writes (nothing to check in a simulator)",
    },
    KeySpec {
        key: "verify_backlog",
        kind: KeyKind::Integer { min: 0, max: 1 << 40 },
        default: "0",
        help: "read back after every N blocks written (0: after all writes)",
    },
    KeySpec {
        key: "bs",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 64 << 20 },
        default: "4k",
        help: "block size (a multiple of 512)",
    },
    KeySpec {
        key: "bsrange",
        kind: KeyKind::Text,
        default: "",
        help: "MIN-MAX: sizes drawn uniformly among multiples of MIN",
    },
    KeySpec {
        key: "bssplit",
        kind: KeyKind::Text,
        default: "",
        help: "SIZE/PERCENT:...: each size drawn with its share, e.g. 4k/60:64k/40",
    },
    KeySpec {
        key: "size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 60 },
        default: "",
        help: "bytes per clone, region and amount (default: to the end of the device)",
    },
    KeySpec {
        key: "io_size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 60 },
        default: "",
        help: "bytes of I/O per clone, independent of the region (default: size)",
    },
    KeySpec {
        key: "runtime",
        kind: KeyKind::Time { min: Duration::ZERO, max: MAX_TIME, bare_unit: "s" },
        default: "0",
        help: "cap on run time (0: none)",
    },
    KeySpec {
        key: "time_based",
        kind: KeyKind::Flag,
        default: "0",
        help: "loop over the region until runtime",
    },
    KeySpec {
        key: "iodepth",
        kind: KeyKind::Integer { min: 1, max: 65_536 },
        default: "1",
        help: "operations in flight per clone",
    },
    KeySpec {
        key: "numjobs",
        kind: KeyKind::Integer { min: 1, max: 4096 },
        default: "1",
        help: "clones, each its own process",
    },
    KeySpec {
        key: "rwmixread",
        kind: KeyKind::Integer { min: 0, max: 100 },
        default: "50",
        help: "percent reads in rw/randrw",
    },
    KeySpec {
        key: "rwmixwrite",
        kind: KeyKind::Integer { min: 0, max: 100 },
        default: "",
        help: "percent writes in rw/randrw (sets rwmixread to the rest)",
    },
    KeySpec {
        key: "thinktime",
        kind: KeyKind::Time { min: Duration::ZERO, max: MAX_TIME, bare_unit: "us" },
        default: "0",
        help: "pause after each completion",
    },
    KeySpec {
        key: "offset",
        kind: KeyKind::Text,
        default: "0",
        help: "start of the region: bytes (512k, 1g) or N% of the device",
    },
    KeySpec {
        key: "offset_increment",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 60 },
        default: "0",
        help: "clone i starts at offset + i * offset_increment",
    },
    KeySpec {
        key: "prioclass",
        kind: KeyKind::Text,
        default: "",
        help: "I/O priority class 0-3 (1 realtime, 2 best-effort, 3 idle); :-separated, one per clone",
    },
    KeySpec {
        key: "prio",
        kind: KeyKind::Text,
        default: "",
        help: "I/O priority level 0-7, 0 highest; :-separated, one per clone (prio=0:7)",
    },
    KeySpec {
        key: "direct",
        kind: KeyKind::Flag,
        default: "1",
        help: "O_DIRECT; writes are synchronous",
    },
    KeySpec {
        key: "filename",
        kind: KeyKind::Text,
        default: "",
        help: "device name(s), :-separated (default: the first device)",
    },
    KeySpec {
        key: "ioengine",
        kind: KeyKind::Choice(&[
            "io_uring",
            "libaio",
            "posixaio",
            "psync",
            "sync",
            "pvsync",
            "pvsync2",
            "sg",
            "libzbc",
            "io_uring_cmd",
            "xnvme",
            "null",
        ]),
        default: "io_uring",
        help: "synchronous engines (and sg, libzbc) cap the depth at 1; sg, libzbc, io_uring_cmd \
               and xnvme are passthrough: direct to a device, past the scheduler",
    },
    // The issuer's CPU profile (`crate::IssuerCpu`, blk-mq-host.md §1, §2.2): where each
    // clone's thread runs and how it enters the kernel, for the blk-mq host's CPU model. No
    // defaults written (fio's are in the help and `CpuProfile::from_params`), so a run's
    // resolved settings list them only when given.
    KeySpec {
        key: "cpus_allowed",
        kind: KeyKind::Text,
        default: "",
        help: "fio's cpus_allowed, pieces `:`-separated (0-3:6:8-9; a fio file's `,` become `:`): \
               the CPUs each clone may run on (default: any)",
    },
    KeySpec {
        key: "cpus_allowed_policy",
        kind: KeyKind::Choice(&["shared", "split"]),
        default: "",
        help: "shared (default): every clone may use all of cpus_allowed; split: clone k gets the \
               (k mod N)-th of its N CPUs, as fio's",
    },
    KeySpec {
        key: "iodepth_batch_submit",
        kind: KeyKind::Integer { min: 0, max: i32::MAX as i64 },
        default: "",
        help: "I/Os per submission call (default 1); 0 (or more than iodepth) means iodepth, as fio's",
    },
    KeySpec {
        key: "fixedbufs",
        kind: KeyKind::Flag,
        default: "",
        help: "io_uring registered buffers, default 0 (io_uring, io_uring_cmd only, as in fio)",
    },
    KeySpec {
        key: "registerfiles",
        kind: KeyKind::Flag,
        default: "",
        help: "io_uring registered files, default 0 (io_uring, io_uring_cmd only, as in fio)",
    },
    KeySpec {
        key: "hipri",
        kind: KeyKind::Flag,
        default: "",
        help: "polled completions, default 0 (io_uring, io_uring_cmd, pvsync2, sg, xnvme, as in fio)",
    },
    KeySpec {
        key: "sqthread_poll",
        kind: KeyKind::Flag,
        default: "",
        help: "io_uring SQ polling thread, default 0 (io_uring, io_uring_cmd, xnvme, as in fio); implies \
               registerfiles for io_uring",
    },
    KeySpec {
        key: "sqthread_poll_cpu",
        kind: KeyKind::Text,
        default: "",
        help: "the CPU of the SQ polling thread (io_uring, io_uring_cmd); default: unbound",
    },
];

/// fio's largest CPU number plus one (`FIO_MAX_CPUS`, `CPU_SETSIZE` on Linux): a list naming
/// a CPU at or above it is refused, as fio's `set_cpus_allowed` refuses it.
const MAX_CPUS: u32 = 1024;

/// fio's `cpus_allowed` list (`0-3,6,8-9`; `job` also takes `:` between pieces, since `,`
/// separates its keys) as ascending CPU numbers without duplicates. fio's own parser
/// (options.c `set_cpus_allowed`) reads pieces with `atoi`, so it takes `x` as CPU 0, a
/// reversed range `3-1` as no CPU and stops at an empty piece; all three are refused here
/// with the accepted syntax (see "Deviations from fio").
pub(crate) fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    const SYNTAX: &str = "accepted: CPU numbers and ascending ranges, e.g. 0-3:6:8-9 (or \
                          0-3,6,8-9 in a fio file)";
    let cpu = |piece: &str, number: &str| -> Result<u32, String> {
        let number = number.trim();
        match number.parse::<u32>() {
            Ok(cpu) if cpu < MAX_CPUS => Ok(cpu),
            Ok(cpu) => {
                Err(format!("CPU {cpu} in `{piece}` is beyond fio's {MAX_CPUS} CPUs ({SYNTAX})"))
            }
            Err(_) => Err(format!("`{piece}` is not a CPU number or range ({SYNTAX})")),
        }
    };
    let mut cpus = Vec::new();
    for piece in text.trim().split([',', ':']) {
        let piece = piece.trim();
        if piece.is_empty() {
            return Err(format!("`{text}` has an empty piece ({SYNTAX})"));
        }
        let (first, last) = match piece.split_once('-') {
            Some((low, high)) => (cpu(piece, low)?, cpu(piece, high)?),
            None => {
                let single = cpu(piece, piece)?;
                (single, single)
            }
        };
        if last < first {
            return Err(format!("`{piece}` is a reversed range ({SYNTAX})"));
        }
        cpus.extend(first..=last);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The engines whose fio option table has `option` (fio looks an engine option up in the
/// selected engine's table only, and fails the job with "Bad option" elsewhere: options.c
/// `fio_options_parse`; engines/io_uring.c, sync.c, sg.c, xnvme.c).
pub(crate) fn engines_with(option: &str) -> &'static [&'static str] {
    match option {
        "hipri" => &["io_uring", "io_uring_cmd", "pvsync2", "sg", "xnvme"],
        "sqthread_poll" => &["io_uring", "io_uring_cmd", "xnvme"],
        _ => &["io_uring", "io_uring_cmd"],
    }
}

/// A clone's CPU profile before `cpus_allowed_policy=split` picks its share.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CpuProfile {
    /// The profile every clone shares (`cpus_allowed` whole).
    shared: crate::IssuerCpu,
    /// `cpus_allowed_policy=split`.
    split: bool,
}

impl CpuProfile {
    /// Reads and checks the CPU keys; `depth` is the job's `iodepth` after the engine's cap.
    pub(crate) fn from_params(params: &Params, depth: u32) -> Result<CpuProfile, ParamError> {
        let engine_name = params.text("ioengine");
        let engine = crate::SubmitEngine::from_fio(engine_name)
            .ok_or_else(|| params.impossible("ioengine", "not an engine `job` runs"))?;
        for key in ["hipri", "fixedbufs", "registerfiles", "sqthread_poll", "sqthread_poll_cpu"] {
            let engines = engines_with(key);
            if params.is_set(key) && !engines.contains(&engine_name) {
                let key = KEYS.iter().find(|spec| spec.key == key).map_or("", |spec| spec.key);
                return Err(params.impossible(
                    key,
                    format!(
                        "is not an option of ioengine={engine_name}: fio refuses it (\"Bad \
                         option\"); engines that have it: {}",
                        engines.join(", ")
                    ),
                ));
            }
        }
        let cpus_allowed = parse_cpu_list(params.text("cpus_allowed"));
        let cpus_allowed = match params.text("cpus_allowed").trim() {
            "" => Vec::new(),
            _ => cpus_allowed.map_err(|problem| params.impossible("cpus_allowed", problem))?,
        };
        let sq_poll_cpu = match params.text("sqthread_poll_cpu").trim() {
            "" => None,
            text => {
                Some(text.parse::<u32>().ok().filter(|&cpu| cpu < MAX_CPUS).ok_or_else(|| {
                    params.impossible(
                        "sqthread_poll_cpu",
                        format!("`{text}`: accepted a CPU number 0 to {}", MAX_CPUS - 1),
                    )
                })?)
            }
        };
        let io_uring = matches!(engine_name, "io_uring" | "io_uring_cmd");
        // fio's SQ thread uses `sqthread_poll_cpu` only when it exists (engines/io_uring.c
        // `fio_ioring_queue_init`: `IORING_SETUP_SQ_AFF` under `sqpoll_thread`).
        // fio's flags default to off.
        let flag = |key: &str| params.has(key) && params.flag(key);
        let sq_poll = flag("sqthread_poll").then_some(crate::SqPoll { cpu: sq_poll_cpu });
        // Engines with a commit hook submit a batch per call; the others (the sync family,
        // posixaio, sg, libzbc, xnvme) hand each I/O to the kernel in its own call.
        let batches = matches!(engine_name, "io_uring" | "io_uring_cmd" | "libaio" | "null");
        // fio's default batch is 1 (options.c `iodepth_batch`).
        let batch = if params.has("iodepth_batch_submit") {
            params.integer("iodepth_batch_submit") as u32
        } else {
            1
        };
        let batch_submit = match batch {
            _ if !batches => 1,
            // init.c `fixup_options`: 0, or more than iodepth, is iodepth.
            0 => depth,
            batch => batch.min(depth),
        };
        let shared = crate::IssuerCpu {
            cpus_allowed,
            engine,
            batch_submit,
            fixed_buffers: flag("fixedbufs"),
            // engines/io_uring.c `fio_ioring_init`: "sqthread submission requires registered
            // files".
            registered_files: flag("registerfiles") || (io_uring && sq_poll.is_some()),
            polled: flag("hipri"),
            sq_poll,
        };
        Ok(CpuProfile { shared, split: params.text("cpus_allowed_policy") == "split" })
    }

    /// The profile of fio's thread number `thread` (0-based, counted over the whole job file:
    /// backend.c `thread_main` splits with `td->thread_number - 1`): with `split`, the
    /// `thread mod N`-th of the N CPUs allowed (options.c `fio_cpus_split`), so more threads
    /// than CPUs take them round robin.
    pub(crate) fn for_thread(&self, thread: u32) -> crate::IssuerCpu {
        let mut cpu = self.shared.clone();
        if self.split && !cpu.cpus_allowed.is_empty() {
            let count = cpu.cpus_allowed.len();
            cpu.cpus_allowed = vec![cpu.cpus_allowed[thread as usize % count]];
        }
        cpu
    }
}

/// Which direction each operation goes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mix {
    Read,
    Write,
    /// Reads with this probability, writes otherwise.
    Mixed {
        read_fraction: f64,
    },
    /// Discards (`rw=trim`, `randtrim`).
    Trim,
    /// Each block discarded, then written (`rw=trimwrite`).
    TrimWrite,
}

/// `random_distribution` (fio-compat.md §2.1; fio `options.c` `str_random_distribution_cb`).
#[derive(Clone, Debug, PartialEq)]
enum Distribution {
    Uniform,
    /// `zipf:θ`: block of rank k drawn with weight k^-θ.
    Zipf(f64),
    /// `pareto:h`: fio's `(n-1) · u^(ln h / ln(1-h))`.
    Pareto(f64),
    /// `normal:σ`: σ in percent of the range, centred on it.
    Normal(f64),
    /// `zoned`: (cumulative access share in ppm, range start and end as fractions).
    Zoned(Vec<(u64, f64, f64)>),
}

/// fio's `file_service_type` (fio-compat.md §2.1; fio's options.c `str_fst_cb`, io_u.c
/// `__get_next_file`): how a clone with several files picks the file of its next I/O.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum FileService {
    /// `roundrobin:N` (fio's default, N = 1): the next file after every N I/Os.
    RoundRobin(u64),
    /// `sequential`: one file until it is done, then the next.
    Sequential,
    /// `random:N`: a file drawn uniformly after every N I/Os.
    Random(u64),
    /// `zipf:θ` (default 1.1), `pareto:h` (default 0.2), `normal:%`/`gauss:%` (default 0): a
    /// file drawn for every I/O from fio's law over `files << 10` ranks, unhashed (fio's
    /// `init_rand_file_service` disables the hash), so rank r is file `r >> 10`.
    Zipf(f64),
    /// See [`FileService::Zipf`].
    Pareto(f64),
    /// See [`FileService::Zipf`]: fio's `lib/gauss.c` law, deviation in percent.
    Normal(f64),
}

/// fio's `FIO_FSERVICE_SHIFT`: the ranks per file of the skewed file service laws.
const FSERVICE_SHIFT: u32 = 10;

impl FileService {
    fn parse(params: &Params) -> Result<FileService, ParamError> {
        let text = params.text("file_service_type");
        let bad = |problem: String| params.impossible("file_service_type", problem);
        let (kind, rest) = match text.split_once(':') {
            Some((kind, rest)) => (kind, Some(rest.trim())),
            None => (text, None),
        };
        // `roundrobin`, `random` and `sequential` take `:N`, I/Os per switch (fio's `atoi`;
        // `sequential` ignores it in fio, which stays on a file until it is done).
        let count =
            || -> Result<u64, ParamError> {
                match rest {
                    None => Ok(1),
                    Some(n) => n.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                        bad(format!("`{text}`: `:{n}` is not a positive I/O count"))
                    }),
                }
            };
        let value = |default: f64, what: &str| -> Result<f64, ParamError> {
            match rest {
                None => Ok(default),
                Some(rest) if rest.contains(':') => {
                    Err(bad(format!("`{text}`: the centre value (`:c`) is not supported")))
                }
                Some(rest) => rest
                    .parse::<f64>()
                    .map_err(|_| bad(format!("`{text}`: {what} is not a number"))),
            }
        };
        Ok(match kind {
            "roundrobin" => FileService::RoundRobin(count()?),
            "random" => FileService::Random(count()?),
            "sequential" => {
                count()?;
                FileService::Sequential
            }
            "zipf" => match value(1.1, "θ")? {
                theta if theta > 0.0 && theta != 1.0 => FileService::Zipf(theta),
                _ => return Err(bad(format!("`{text}`: zipf's θ must be > 0 and ≠ 1"))),
            },
            "pareto" => match value(0.2, "h")? {
                h if h > 0.0 && h < 1.0 => FileService::Pareto(h),
                _ => return Err(bad(format!("`{text}`: pareto's h must be in (0, 1)"))),
            },
            "normal" | "gauss" => match value(0.0, "the deviation")? {
                dev if (0.0..100.0).contains(&dev) => FileService::Normal(dev),
                _ => return Err(bad(format!("`{text}`: the deviation must be in [0, 100)"))),
            },
            _ => {
                return Err(bad(format!(
                    "`{text}` (accepted: roundrobin[:N], sequential, random[:N], zipf[:θ], \
                     pareto[:h], normal[:%], gauss[:%])"
                )));
            }
        })
    }
}

/// A clone's file service: the file being served, the I/Os left before the next switch, and
/// the draws of the random and skewed services (their own stream, as fio's `next_file_state`).
#[derive(Debug)]
struct ServiceState {
    current: Option<usize>,
    left: u64,
    prng: Prng,
    /// zipf's ranks over `files << FSERVICE_SHIFT`.
    zipf: Option<Zipf>,
    /// fio's `rand_off`: zipf and pareto rotate their ranks by a random draw; gauss by none.
    rotation: u64,
}

impl ServiceState {
    fn new(service: &FileService, files: usize, mut prng: Prng) -> Result<ServiceState, String> {
        let ranks = (files as u64) << FSERVICE_SHIFT;
        let zipf = match service {
            FileService::Zipf(theta) if files > 1 => {
                Some(Zipf::new(ranks, *theta).map_err(|error| error.to_string())?)
            }
            _ => None,
        };
        let rotation = match service {
            FileService::Zipf(_) | FileService::Pareto(_) if files > 1 => prng.below(ranks),
            _ => 0,
        };
        Ok(ServiceState { current: None, left: 0, prng, zipf, rotation })
    }

    /// A file index in `0..files` from a skewed law (fio's `__get_next_fileno_rand`).
    fn draw_skewed(&mut self, service: &FileService, files: usize) -> usize {
        let ranks = (files as u64) << FSERVICE_SHIFT;
        let rank = match service {
            FileService::Zipf(_) => {
                self.zipf.as_ref().expect("zipf planned").sample(&mut self.prng) - 1
            }
            FileService::Pareto(h) => {
                let power = h.ln() / (1.0 - h).ln();
                ((ranks - 1) as f64 * self.prng.unit_f64().powf(power)) as u64
            }
            FileService::Normal(dev) => {
                // fio's lib/gauss.c: the mean of 12 uniform draws over 0..=ranks, moved by a
                // uniform deviation of `dev`% of the ranks (halved until it fits).
                const ITERATIONS: u64 = 12;
                let sum: u64 = (0..ITERATIONS).map(|_| self.prng.below(ranks + 1)).sum();
                let mut mean = sum.div_ceil(ITERATIONS);
                let stddev = ((ranks as f64 * dev / 100.0).ceil() as i64).min(ranks as i64 / 2);
                if stddev > 0 {
                    let mut deviation = self.prng.below(stddev as u64) as i64 - stddev / 2;
                    while mean as i64 + deviation >= ranks as i64 {
                        deviation /= 2;
                    }
                    mean = (mean as i64 + deviation).max(0) as u64;
                }
                mean
            }
            _ => self.prng.below(ranks),
        };
        (((rank + self.rotation) % ranks) >> FSERVICE_SHIFT) as usize
    }
}

impl Distribution {
    fn parse(params: &Params) -> Result<Distribution, ParamError> {
        let text = params.text("random_distribution");
        let bad = |problem: String| params.impossible("random_distribution", problem);
        let (kind, rest) = text.split_once(':').unwrap_or((text, ""));
        let number = |what: &str| -> Result<f64, ParamError> {
            // fio's optional `:c` (hot-spot centre) is not taken here.
            if rest.contains(':') {
                return Err(bad(format!("`{text}`: the centre value (`:c`) is not supported")));
            }
            rest.trim().parse::<f64>().map_err(|_| bad(format!("`{text}`: {what} is not a number")))
        };
        Ok(match kind {
            "random" if rest.is_empty() => Distribution::Uniform,
            "zipf" => match number("θ")? {
                theta if theta > 0.0 && theta != 1.0 => Distribution::Zipf(theta),
                _ => return Err(bad(format!("`{text}`: zipf's θ must be > 0 and ≠ 1"))),
            },
            "pareto" => match number("h")? {
                h if h > 0.0 && h < 1.0 => Distribution::Pareto(h),
                _ => return Err(bad(format!("`{text}`: pareto's h must be in (0, 1)"))),
            },
            "normal" | "gauss" => match number("the deviation")? {
                dev if dev > 0.0 && dev <= 100.0 => Distribution::Normal(dev),
                _ => return Err(bad(format!("`{text}`: the deviation must be in (0, 100]"))),
            },
            "zoned" => Self::parse_zoned(text, rest).map_err(bad)?,
            _ => {
                return Err(bad(format!(
                    "`{text}` (accepted: random, zipf:θ, pareto:h, normal:σ, zoned:A/R:...)"
                )));
            }
        })
    }

    /// `zoned:A/R:...`: A percent of accesses to the next R percent of the range; a blank
    /// range takes what the others leave (fio's rule); accesses make 100.
    fn parse_zoned(text: &str, rest: &str) -> Result<Distribution, String> {
        let mut zones: Vec<(f64, Option<f64>)> = Vec::new();
        for entry in rest.split(':').filter(|entry| !entry.trim().is_empty()) {
            let (access, range) = entry.split_once('/').unwrap_or((entry, ""));
            let access: f64 = access.trim().parse().map_err(|_| format!("`{text}`: `{entry}`"))?;
            let range = match range.trim() {
                "" => None,
                range => Some(range.parse::<f64>().map_err(|_| format!("`{text}`: `{entry}`"))?),
            };
            zones.push((access, range));
        }
        let accesses: f64 = zones.iter().map(|(access, _)| access).sum();
        let given: f64 = zones.iter().filter_map(|(_, range)| *range).sum();
        let blanks = zones.iter().filter(|(_, range)| range.is_none()).count();
        if zones.is_empty() || (accesses - 100.0).abs() > 1e-6 || given > 100.0 + 1e-6 {
            return Err(format!("`{text}`: accesses must make 100% over ranges of at most 100%"));
        }
        let blank = if blanks > 0 { (100.0 - given) / blanks as f64 } else { 0.0 };
        let (mut start, mut cumulative_ppm) = (0.0, 0);
        let mut out = Vec::with_capacity(zones.len());
        for (access, range) in zones {
            let end = start + range.unwrap_or(blank) / 100.0;
            cumulative_ppm += (access * 1e4).round() as u64;
            out.push((cumulative_ppm, start, end.min(1.0)));
            start = end;
        }
        if let Some(last) = out.last_mut() {
            last.0 = SPLIT_WHOLE_PPM;
        }
        Ok(Distribution::Zoned(out))
    }

    /// A block index in `0..blocks`. The skewed ones scatter ranks over the range with a hash,
    /// as fio does (`lib/zipf.c`, `lib/gauss.c`), so the hot blocks are not all at the start.
    fn draw(&self, prng: &mut Prng, zipf: Option<&Zipf>, blocks: u64) -> u64 {
        let scatter = |rank: u64| hash_u64(rank) % blocks;
        match self {
            Distribution::Uniform => prng.below(blocks),
            Distribution::Zipf(_) => scatter(zipf.expect("planned with the zipf").sample(prng) - 1),
            Distribution::Pareto(h) => {
                let power = h.ln() / (1.0 - h).ln();
                scatter(((blocks - 1) as f64 * prng.unit_f64().powf(power)) as u64)
            }
            Distribution::Normal(dev) => {
                // Box-Muller; fio sums uniforms (`lib/gauss.c`): the same law near the centre.
                let (u, v) = (prng.unit_f64().max(f64::MIN_POSITIVE), prng.unit_f64());
                let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
                let x = blocks as f64 / 2.0 + z * dev / 100.0 * blocks as f64;
                scatter((x.max(0.0) as u64).min(blocks - 1))
            }
            Distribution::Zoned(zones) => {
                let point = prng.below(SPLIT_WHOLE_PPM);
                let &(_, start, end) =
                    zones.iter().find(|(cumulative, ..)| point < *cumulative).unwrap_or(&zones[0]);
                let first = (start * blocks as f64) as u64;
                let last = ((end * blocks as f64) as u64).clamp(first + 1, blocks);
                first + prng.below(last - first)
            }
        }
    }
}

/// A 64-bit mix (splitmix64's finaliser) standing for fio's `__hash_u64`.
fn hash_u64(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How the issuer paces itself (`rate`, `rate_iops`, `rate_process`).
#[derive(Clone, Debug, PartialEq)]
struct Rate {
    /// Bytes per second, or I/Os per second when `per_io`.
    per_second: f64,
    per_io: bool,
    poisson: bool,
    /// `rate_min` in bytes per second, and its window.
    min_bytes_per_second: Option<u64>,
    cycle: Duration,
}

/// Shares of `bssplit` are kept in parts per million (fio takes percentages with decimals).
const SPLIT_WHOLE_PPM: u64 = 1_000_000;

/// Operation sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum BlockSize {
    Fixed(u64),
    /// Multiples of `min_bytes` up to `max_bytes`.
    Range {
        min_bytes: u64,
        max_bytes: u64,
    },
    /// `bssplit`: (size in bytes, cumulative share in ppm), the last share
    /// [`SPLIT_WHOLE_PPM`].
    Split(Vec<(u64, u64)>),
}

impl BlockSize {
    fn min_bytes(&self) -> u64 {
        match self {
            BlockSize::Fixed(bytes) => *bytes,
            BlockSize::Range { min_bytes, .. } => *min_bytes,
            BlockSize::Split(entries) => entries.iter().map(|(bytes, _)| *bytes).min().unwrap_or(0),
        }
    }

    fn max_bytes(&self) -> u64 {
        match self {
            BlockSize::Fixed(bytes) => *bytes,
            BlockSize::Range { max_bytes, .. } => *max_bytes,
            BlockSize::Split(entries) => entries.iter().map(|(bytes, _)| *bytes).max().unwrap_or(0),
        }
    }

    fn draw(&self, prng: &mut Prng) -> u64 {
        match self {
            BlockSize::Fixed(bytes) => *bytes,
            BlockSize::Range { min_bytes, max_bytes } => {
                min_bytes * prng.range_inclusive(1, max_bytes / min_bytes)
            }
            // fio draws a number below 100 and takes the first entry whose running share
            // reaches it (`io_u.c` get_next_buflen, fio-compat.md §2.1 bssplit).
            BlockSize::Split(entries) => {
                let point = prng.below(SPLIT_WHOLE_PPM);
                entries
                    .iter()
                    .find(|(_, cumulative)| point < *cumulative)
                    .or(entries.last())
                    .map_or(0, |(bytes, _)| *bytes)
            }
        }
    }

    /// Parses `bssplit`: `SIZE/PERCENT` entries `:`-separated; entries without a percentage
    /// share what the others leave, equally (fio's rule); the shares must make 100.
    fn parse_split(params: &Params, key: &'static str) -> Result<BlockSize, ParamError> {
        let text = params.text(key);
        let bad = |problem: String| params.impossible(key, problem);
        let mut entries: Vec<(u64, Option<f64>)> = Vec::new();
        for entry in text.split(':') {
            let (size, percent) = match entry.split_once('/') {
                Some((size, percent)) => (size, percent.trim()),
                None => (entry, ""),
            };
            let bytes = units::parse_size_bytes(size.trim())
                .map_err(|error| bad(format!("`{entry}`: {error} (SIZE/PERCENT, e.g. 4k/60)")))?;
            if bytes == 0 || bytes > 64 << 20 {
                return Err(bad(format!("`{entry}`: a size must be in 1..=64m")));
            }
            check_sectors(params, key, bytes)?;
            let percent = if percent.is_empty() {
                None
            } else {
                match percent.parse::<f64>() {
                    Ok(value) if (0.0..=100.0).contains(&value) => Some(value),
                    _ => return Err(bad(format!("`{entry}`: the share must be 0..=100"))),
                }
            };
            entries.push((bytes, percent));
        }
        let given: f64 = entries.iter().filter_map(|(_, percent)| *percent).sum();
        let blanks = entries.iter().filter(|(_, percent)| percent.is_none()).count();
        let rest = if blanks > 0 { (100.0 - given) / blanks as f64 } else { 0.0 };
        let mut cumulative_ppm = 0;
        let mut split = Vec::with_capacity(entries.len());
        for (bytes, percent) in entries {
            cumulative_ppm += (percent.unwrap_or(rest) * 1e4).round() as u64;
            split.push((bytes, cumulative_ppm));
        }
        if rest < 0.0 || cumulative_ppm.abs_diff(SPLIT_WHOLE_PPM) > entries_tolerance(&split) {
            return Err(bad(format!("the shares of `{text}` make {given}%, not 100%")));
        }
        if let Some(last) = split.last_mut() {
            last.1 = SPLIT_WHOLE_PPM;
        }
        Ok(BlockSize::Split(split))
    }
}

/// Rounding each share to a ppm may be off by one per entry.
fn entries_tolerance(split: &[(u64, u64)]) -> u64 {
    split.len() as u64
}

/// Where the region starts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Offset {
    Bytes(u64),
    Percent(f64),
}

/// The checked configuration of a `job`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct JobConfig {
    random: bool,
    mix: Mix,
    block_size: BlockSize,
    size_bytes: Option<u64>,
    io_size_bytes: Option<u64>,
    runtime: Duration,
    time_based: bool,
    depth: u32,
    clones: u32,
    thinktime: Duration,
    offset: Offset,
    offset_increment_bytes: u64,
    /// One priority, or one per clone.
    priorities: Vec<IoPriority>,
    direct: bool,
    /// A passthrough engine (sg, libzbc, io_uring_cmd, xnvme): every command goes to the device
    /// flagged [`RequestFlags::PASSTHROUGH`], past the scheduler.
    passthrough: bool,
    /// fio's null engine: every operation completes at once, without host or device
    /// ([`Issuer::null_engine`]).
    null_engine: bool,
    filenames: Vec<String>,
    /// `rw=...:N`: sequential skip in bytes (may be negative).
    seq_skip_bytes: i64,
    /// `rw=rand...:N`: I/Os per random offset.
    random_run: u64,
    distribution: Distribution,
    /// `file_service_type`: how a clone with several files picks the next.
    file_service: FileService,
    percentage_random: u64,
    random_map: bool,
    align_bytes: Option<u64>,
    rate: Option<Rate>,
    /// `startdelay`, low and high (drawn per clone between them).
    startdelay: (Duration, Duration),
    loops: u64,
    fsync_every: u64,
    end_fsync: bool,
    thinktime_blocks: u64,
    think_on_issue: bool,
    verify: bool,
    verify_backlog: u64,
    /// `fill_device`: ENOSPC on a write is the job's normal end.
    fill_device: bool,
    /// Whether ENOSPC is non-fatal for reads and for writes (fio's `td_non_fatal_error`).
    enospc_continues: ErrorTypes,
    /// `cmdprio_percentage` and the priority those I/Os carry.
    cmdprio: Option<(u64, IoPriority)>,
    /// `bssplit` of writes when it differs from the reads'.
    write_block_size: Option<BlockSize>,
    /// `cmdprio_bssplit` for reads and for writes: (size, cumulative percent, priority).
    cmdprio_split: Option<[CmdprioSplit; 2]>,
    /// Strided zones: bytes per zone, zone size, bytes skipped after a zone.
    zones: Option<(u64, u64, u64)>,
    /// `number_ios`: stop after this many I/Os (0: no such limit).
    number_ios: u64,
    /// fio's `zonemode=zbd` (crate::zbd), with the zone size the job names (0: the device's).
    pub(crate) zbd: Option<(crate::zbd::ZbdOptions, u64, crate::zbd::ZbdRegistry)>,
    /// fio's `exitall` among a job file's jobs: set by the planner.
    pub(crate) group_exit: Option<GroupExit>,
    /// fio's `steadystate`: the job ends once its criterion holds.
    steady: Option<SteadySpec>,
    /// fio's `latency_target` search.
    latency_target: Option<LatencyTargetSpec>,
    /// fio's `flow` weight (0: not in a flow), `flow_id` and `flow_sleep`.
    flow_weight: u64,
    pub(crate) flow_id: u64,
    flow_sleep: Duration,
    /// The flow's shared counters: set by the planner for the jobs that run together.
    pub(crate) flow: Option<SharedFlow>,
    /// The size of each regular file of the plan (by [`Place::File`] index) as a `stat` would
    /// see it: laid out before the run, grown by the writes that completed. Set by the fio
    /// planner, shared by the jobs of a file; the clones' completed writes grow it.
    pub(crate) file_sizes: Option<FileSizes>,
    /// fio's `create_serialize=0` on a file without `size`: each clone's regions on regular
    /// files end where the file ends when the clone starts (fio's `setup_files` in the job's
    /// own thread, `get_file_sizes`), from [`JobConfig::file_sizes`].
    pub(crate) size_at_start: bool,
    /// Each place's region is its whole extent (its target's capacity) rather than `size`
    /// divided among the places: set by the fio planner when it sized each file as fio does
    /// (`nrfiles`, `filesize`), `size` staying the job's amount of I/O.
    pub(crate) whole_files: bool,
    /// Where each clone's thread runs and how it submits ([`Issuer::cpu`]).
    cpu: CpuProfile,
    /// fio's thread number (0-based, over the whole job file) of the first clone, which
    /// `cpus_allowed_policy=split` counts from: set by the fio planner; 0 for `-w job:`.
    pub(crate) first_thread: u32,
}

/// Each regular file's size in bytes, by [`Place::File`] index, shared by a job file's jobs
/// (equal when it is the same table).
#[derive(Clone, Debug, Default)]
pub(crate) struct FileSizes(pub(crate) Arc<Mutex<Vec<u64>>>);

impl PartialEq for FileSizes {
    fn eq(&self, other: &FileSizes) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// fio's `latency_target`, `latency_window`, `latency_percentile` and `latency_run`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LatencyTargetSpec {
    target: Duration,
    window: Duration,
    percentile: f64,
    keep_running: bool,
}

/// fio's queue-depth search for `latency_target` (`io_u.c`: `lat_target_init`,
/// `lat_target_check`, `lat_target_success`, `__lat_target_failed`): starting at depth 1, a
/// window whose share of I/Os within the target reaches the percentile doubles the depth (or,
/// once a depth failed, bisects towards the failing one); a failing window bisects down
/// (waiting for the I/O in flight first). When the depth stops changing, one more window runs
/// at it and the job ends (unless `latency_run`).
#[derive(Debug)]
struct LatencySearch {
    spec: LatencyTargetSpec,
    depth: u32,
    depth_low: u32,
    depth_high: u32,
    stable_count: u32,
    window_start: Instant,
    window_ios: u64,
    window_failed: u64,
    end_run: bool,
    /// Waiting for every I/O in flight after a ramp down (fio's `io_u_quiesce`).
    quiesce: bool,
    /// Found (fio's `td->done`), or failed at depth 1 with percentile 100 (fio's ETIMEDOUT).
    done: bool,
    failed_at_depth_one: bool,
}

impl LatencySearch {
    fn new(spec: LatencyTargetSpec, max_depth: u32, now: Instant) -> LatencySearch {
        LatencySearch {
            spec,
            depth: 1,
            depth_low: 1,
            depth_high: max_depth,
            stable_count: 0,
            window_start: now,
            window_ios: 0,
            window_failed: 0,
            end_run: false,
            quiesce: false,
            done: false,
            failed_at_depth_one: false,
        }
    }

    fn new_window(&mut self, now: Instant) {
        (self.window_start, self.window_ios, self.window_failed) = (now, 0, 0);
    }

    /// `__lat_target_failed`: whether the depth was already 1.
    fn ramp_down(&mut self, now: Instant) -> bool {
        if self.depth == 1 {
            return true;
        }
        self.depth_high = self.depth;
        if self.depth == self.depth_low {
            self.depth_low -= 1;
        }
        self.depth = (self.depth + self.depth_low) / 2;
        self.stable_count = 0;
        self.quiesce = true;
        self.new_window(now);
        false
    }

    fn ramp_up(&mut self, now: Instant, max_depth: u32) {
        let was = self.depth;
        self.depth_low = self.depth;
        if self.depth + 1 == self.depth_high {
            // fio's heuristic: three successes in a row at the edge raise the ceiling by one.
            self.stable_count += 1;
            if self.stable_count >= 3 {
                self.depth_high += 1;
                self.stable_count = 0;
            }
        }
        self.depth = if self.depth_high != max_depth {
            (self.depth + self.depth_high) / 2
        } else {
            self.depth * 2
        }
        .min(max_depth);
        if !self.spec.keep_running && self.depth == was {
            if self.end_run {
                self.done = true;
            } else {
                self.quiesce = true;
                self.end_run = true;
            }
        }
        self.new_window(now);
    }

    /// A read or write completed after `latency`.
    fn complete(&mut self, now: Instant, latency: Duration) {
        self.window_ios += 1;
        if latency > self.spec.target {
            if self.spec.percentile == 100.0 {
                if self.ramp_down(now) {
                    self.failed_at_depth_one = true;
                    self.done = true;
                }
            } else {
                self.window_failed += 1;
            }
        }
    }

    /// `lat_target_check`: at the end of each window, up or down.
    fn check(&mut self, now: Instant, max_depth: u32) {
        if now.saturating_since(self.window_start) < self.spec.window {
            return;
        }
        // No I/O in the window gives 0/0, which fio too counts as a failure.
        let ios = self.window_ios as f64;
        let success_percent = 100.0 * (ios - self.window_failed as f64) / ios;
        if success_percent >= self.spec.percentile {
            self.ramp_up(now, max_depth);
        } else {
            self.ramp_down(now);
        }
    }
}

/// A flow shared by the jobs that run together (equal when it is the same flow).
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedFlow(pub(crate) Arc<Mutex<Flow>>);

impl PartialEq for SharedFlow {
    fn eq(&self, other: &SharedFlow) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// fio's token-based flow control (`flow.c`): the I/Os issued by all members of a flow, and
/// their total weight. A member whose share of the flow's I/Os is above its share of the
/// weight holds back until the others catch up.
#[derive(Debug, Default)]
pub(crate) struct Flow {
    /// I/Os issued by every member.
    issued: u64,
    /// The members' summed weights (each clone counts, as each of fio's threads does).
    total_weight: u64,
}

/// fio's `steadystate=METRIC:LIMIT[%]` with `ss_dur`, `ss_ramp` and `ss_interval` (fio's
/// HOWTO "Steady state", `steadystate.c`): one sample of IOPS or bandwidth per interval, after
/// the ramp; once the last `ss_dur / ss_interval` samples are in, the job ends if every sample
/// is within LIMIT of their mean (`iops`, `bw`) or their least-squares slope is below LIMIT
/// (`iops_slope`, `bw_slope`); with `%`, LIMIT is relative to the mean.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SteadySpec {
    /// Bandwidth (bytes per second) rather than IOPS.
    bandwidth: bool,
    /// The slope criterion rather than the deviation.
    slope: bool,
    /// The limit: per second (IOPS or bytes), or a percentage of the mean.
    limit: f64,
    percent: bool,
    /// Samples in the window (`ss_dur / ss_interval`).
    samples: usize,
    ramp: Duration,
    interval: Duration,
    /// One judgement over all clones (`group_reporting`), or one per clone.
    shared: bool,
}

impl SteadySpec {
    fn from_params(params: &Params) -> Result<Option<SteadySpec>, ParamError> {
        let text = params.text("steadystate");
        if text.is_empty() {
            return Ok(None);
        }
        let bad = |why: &str| params.impossible("steadystate", format!("`{text}`: {why}"));
        let (metric, limit) = text
            .split_once(':')
            .ok_or_else(|| bad("expected iops|iops_slope|bw|bw_slope:LIMIT[%]"))?;
        let (bandwidth, slope) = match metric {
            "iops" => (false, false),
            "iops_slope" => (false, true),
            "bw" => (true, false),
            "bw_slope" => (true, true),
            _ => return Err(bad("the metric is one of iops, iops_slope, bw, bw_slope")),
        };
        let (number, percent) = match limit.strip_suffix('%') {
            Some(number) => (number, true),
            None => (limit, false),
        };
        if bandwidth && !percent {
            // fio reads an absolute bandwidth limit with its own size units; only the
            // relative form is taken here.
            return Err(bad("a bandwidth limit must be a percentage of the mean"));
        }
        let limit: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|limit: &f64| limit.is_finite() && *limit >= 0.0)
            .ok_or_else(|| bad("the limit is a non-negative number"))?;
        let interval = params.time("steadystate_check_interval");
        let window = params.time("steadystate_duration");
        let samples = (window.as_nanos() / interval.as_nanos()) as usize;
        if window == Duration::ZERO {
            // fio's default ss_dur, 0, disables the detection (HOWTO `ss_dur`).
            return Ok(None);
        }
        if samples == 0 {
            return Err(params.impossible(
                "steadystate_duration",
                "ss_dur is shorter than one ss_interval (fio's default: 1s)",
            ));
        }
        Ok(Some(SteadySpec {
            bandwidth,
            slope,
            limit,
            percent,
            samples,
            ramp: params.time("steadystate_ramp_time"),
            interval,
            shared: params.flag("steadystate_group"),
        }))
    }
}

/// What the steady state check has seen (shared by the clones when judged together).
#[derive(Debug)]
pub(crate) struct SteadyState {
    spec: SteadySpec,
    /// When collection starts (the job's start plus `ss_ramp`), and the current sample's end.
    collect_from: Option<Instant>,
    sample_end: Instant,
    ios: u64,
    bytes: u64,
    window: std::collections::VecDeque<f64>,
    attained: bool,
}

impl SteadyState {
    fn new(spec: SteadySpec) -> SteadyState {
        SteadyState {
            spec,
            collect_from: None,
            sample_end: Instant::MAX,
            ios: 0,
            bytes: 0,
            window: std::collections::VecDeque::new(),
            attained: false,
        }
    }

    /// The job started at `now` (the first clone to start sets it).
    fn start(&mut self, now: Instant) {
        if self.collect_from.is_none() {
            let from = now.saturating_add(self.spec.ramp);
            self.collect_from = Some(from);
            self.sample_end = from.saturating_add(self.spec.interval);
        }
    }

    /// Closes every sample that ended by `now`, judging the window after each.
    fn advance(&mut self, now: Instant) {
        while !self.attained && now >= self.sample_end {
            let seconds = self.spec.interval.as_secs_f64();
            let value = if self.spec.bandwidth { self.bytes } else { self.ios } as f64 / seconds;
            (self.ios, self.bytes) = (0, 0);
            self.window.push_back(value);
            if self.window.len() > self.spec.samples {
                self.window.pop_front();
            }
            self.sample_end = self.sample_end.saturating_add(self.spec.interval);
            self.attained = self.window.len() == self.spec.samples && self.holds();
        }
    }

    /// fio's criterion over a full window (`steadystate.c`: `steadystate_slope`,
    /// `steadystate_deviation`).
    fn holds(&self) -> bool {
        let n = self.window.len() as f64;
        let mean = self.window.iter().sum::<f64>() / n;
        let criterion = if self.spec.slope {
            // Least squares over x = 0, 1, ..., n-1.
            let (mut sum_x, mut sum_xx, mut sum_xy) = (0.0, 0.0, 0.0);
            for (x, y) in self.window.iter().enumerate() {
                let x = x as f64;
                (sum_x, sum_xx, sum_xy) = (sum_x + x, sum_xx + x * x, sum_xy + x * y);
            }
            let sum_y = mean * n;
            let slope = (sum_xy - sum_x * sum_y / n) / (sum_xx - sum_x * sum_x / n);
            if n < 2.0 { 0.0 } else { slope }
        } else {
            self.window.iter().map(|value| (value - mean).abs()).fold(0.0, f64::max)
        };
        let criterion = if self.spec.percent { 100.0 * criterion / mean } else { criterion };
        // A zero mean makes the relative criterion undefined (NaN, infinite): not steady.
        criterion.is_finite() && criterion.abs() < self.spec.limit
    }

    /// One completion of `bytes` at `now`.
    fn complete(&mut self, now: Instant, bytes: u64) {
        self.advance(now);
        if self.collect_from.is_some_and(|from| now >= from) {
            self.ios += 1;
            self.bytes += bytes;
        }
    }
}

/// One direction's `cmdprio_bssplit`: (size in bytes, cumulative percent among that size's
/// I/Os, the priority they carry).
type CmdprioSplit = Vec<(u64, u64, IoPriority)>;

/// The stop flag shared by the jobs of a phase: an `exitall` job raises it when it
/// finishes, and every job of the phase then stops submitting (fio's `exitall`).
#[derive(Clone, Debug)]
pub(crate) struct GroupExit {
    /// Raised once a job that `sets` it finished.
    pub(crate) flag: Arc<AtomicBool>,
    /// Whether this job raises it (`exitall`).
    pub(crate) sets: bool,
}

impl PartialEq for GroupExit {
    fn eq(&self, other: &GroupExit) -> bool {
        Arc::ptr_eq(&self.flag, &other.flag) && self.sets == other.sets
    }
}

/// fio's error numbers (Linux `errno`) that `ignore_error` names (fio's `str2error`).
const ERROR_NAMES: &[(&str, u32)] = &[("EIO", 5), ("ENOSPC", 28), ("EILSEQ", 84), ("EDQUOT", 122)];
const ENOSPC: u32 = 28;
/// What a failed I/O that the job goes on after costs it: a failing `write()` returns in
/// about a microsecond, and without a cost a time-based job whose every write fails would
/// fail them forever in no simulated time.
const FAILED_IO_TIME: Duration = Duration::from_micros(1);
/// fio's default list of non-fatal errors for a type `ignore_error` leaves empty
/// (`td_error.c` `__NON_FATAL_ERR`).
const NON_FATAL_DEFAULT: &[u32] = &[5, 84];

/// Whether an error goes on, for reads and for writes (fio's error types; the simulator's
/// one error, ENOSPC, is never a verify error).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct ErrorTypes {
    read: bool,
    write: bool,
}

impl ErrorTypes {
    /// fio's `td_non_fatal_error` for ENOSPC: the type's bit is in `continue_on_error` (or set
    /// by a non-empty `ignore_error` list, as fio's `ignore_error_type` sets it) and ENOSPC is
    /// in the type's list (EIO and EILSEQ when `ignore_error` gives none).
    fn enospc_continues(params: &Params) -> Result<ErrorTypes, ParamError> {
        let (read_bit, write_bit) = match params.text("continue_on_error") {
            "read" => (true, false),
            "write" => (false, true),
            "io" | "all" => (true, true),
            _ => (false, false),
        };
        let text = params.text("ignore_error");
        let mut lists: Vec<Vec<u32>> = Vec::new();
        // `/` separates the types (fio's `,`, which separates `job`'s keys).
        for list in text.split('/').take(3) {
            let mut errors = Vec::new();
            for name in list.split(':').map(str::trim).filter(|name| !name.is_empty()) {
                let number = if name.starts_with('E') {
                    ERROR_NAMES.iter().find(|(known, _)| *known == name).map(|(_, n)| *n)
                } else if let Some(hex) = name.strip_prefix("0x").or(name.strip_prefix("0X")) {
                    u32::from_str_radix(hex, 16).ok()
                } else {
                    name.trim_start_matches('-').parse().ok()
                };
                let Some(number) = number.filter(|&n| n != 0) else {
                    let names: Vec<&str> = ERROR_NAMES.iter().map(|(name, _)| *name).collect();
                    return Err(params.impossible(
                        "ignore_error",
                        format!(
                            "unknown error `{name}` (accepted: {} or a number)",
                            names.join(", ")
                        ),
                    ));
                };
                errors.push(number);
            }
            lists.push(errors);
        }
        let continues = |bit: bool, list: Option<&Vec<u32>>| match list {
            Some(list) if !list.is_empty() => list.contains(&ENOSPC),
            _ => bit && NON_FATAL_DEFAULT.contains(&ENOSPC),
        };
        Ok(ErrorTypes {
            read: continues(read_bit, lists.first()),
            write: continues(write_bit, lists.get(1)),
        })
    }
}

impl JobConfig {
    /// The smallest block the job issues (fio's `td_min_bs`), for sizing files as fio does.
    pub(crate) fn min_block_bytes(&self) -> u64 {
        self.block_size.min_bytes()
    }

    pub(crate) fn from_params(params: &Params) -> Result<JobConfig, ParamError> {
        let rw = params.text("rw");
        let random = rw.starts_with("rand");
        let read_percent = match (params.is_set("rwmixread"), params.has("rwmixwrite")) {
            (true, true) if params.integer("rwmixread") + params.integer("rwmixwrite") != 100 => {
                return Err(params.impossible("rwmixwrite", "rwmixread + rwmixwrite must be 100"));
            }
            (false, true) => 100 - params.integer("rwmixwrite"),
            _ => params.integer("rwmixread"),
        };
        let mix = match rw {
            "read" | "randread" => Mix::Read,
            "write" | "randwrite" => Mix::Write,
            "trim" | "randtrim" => Mix::Trim,
            "trimwrite" => Mix::TrimWrite,
            _ => Mix::Mixed { read_fraction: read_percent as f64 / 100.0 },
        };
        if params.has("bssplit") && (params.has("bsrange") || params.is_set("bs")) {
            return Err(params.impossible("bssplit", "give one of bs, bsrange and bssplit"));
        }
        let block_size = if params.has("bssplit") {
            BlockSize::parse_split(params, "bssplit")?
        } else if params.has("bsrange") {
            let (min_bytes, max_bytes) = parse_block_range(params, "bsrange", 64 << 20)?;
            BlockSize::Range { min_bytes, max_bytes }
        } else {
            let bytes = params.size("bs");
            check_sectors(params, "bs", bytes)?;
            BlockSize::Fixed(bytes)
        };
        let size_bytes = params.has("size").then(|| params.size("size"));
        if let Some(size) = size_bytes {
            check_sectors(params, "size", size)?;
            if size < block_size.min_bytes() {
                return Err(params.impossible("size", "is smaller than one block"));
            }
        }
        let io_size_bytes = params.has("io_size").then(|| params.size("io_size"));
        if let Some(io_size) = io_size_bytes {
            check_sectors(params, "io_size", io_size)?;
        }
        let offset_text = params.text("offset");
        let offset = match offset_text.strip_suffix('%') {
            Some(percent) => {
                let percent: f64 = percent.trim().parse().map_err(|_| {
                    params.impossible("offset", format!("`{offset_text}` is not a percentage"))
                })?;
                if !(0.0..100.0).contains(&percent) {
                    return Err(params.impossible("offset", "a percentage must be in 0..100"));
                }
                Offset::Percent(percent)
            }
            None => {
                let bytes = units::parse_size_bytes(offset_text).map_err(|error| {
                    params.impossible("offset", format!("{error} (bytes such as 1g, or N%)"))
                })?;
                check_sectors(params, "offset", bytes)?;
                Offset::Bytes(bytes)
            }
        };
        let offset_increment_bytes = params.size("offset_increment");
        check_sectors(params, "offset_increment", offset_increment_bytes)?;
        let priorities = Self::priorities(params)?;
        // fio's sg engine on a block device issues `SG_IO` ioctls, one at a time (fio's
        // `fio_sgio_ioctl_doio`); only a `/dev/sgN` character device would take a depth.
        // fio's libzbc engine is synchronous (`FIO_SYNCIO`): libzbc sends each ZBC/ZAC command
        // through one `SG_IO` ioctl, as sg does.
        let synchronous_engine = matches!(
            params.text("ioengine"),
            "psync" | "sync" | "pvsync" | "pvsync2" | "sg" | "libzbc"
        );
        let passthrough =
            matches!(params.text("ioengine"), "sg" | "libzbc" | "io_uring_cmd" | "xnvme");
        let null_engine = params.text("ioengine") == "null";
        let thinktime = params.time("thinktime");
        let depth = if synchronous_engine { 1 } else { params.integer("iodepth") as u32 };
        let runtime = params.time("runtime");
        if params.flag("time_based") && runtime == Duration::ZERO {
            // fio runs such a job forever; a run here always has an end.
            return Err(params.impossible("runtime", "time_based=1 needs a runtime (e.g. 10s)"));
        }
        let paced = thinktime > Duration::ZERO || params.has("rate") || params.has("rate_iops");
        if null_engine && params.flag("time_based") && !paced {
            // fio's null engine runs at the speed of fio's own code; the simulator models no
            // CPU, so its operations take no time and the runtime would never come.
            return Err(params.impossible(
                "time_based",
                "ioengine=null completes in no simulated time: time_based needs thinktime or \
                 a rate to end",
            ));
        }
        let filenames = if params.has("filename") {
            params.text("filename").split(':').map(|name| name.trim().to_owned()).collect()
        } else {
            Vec::new()
        };
        let step_text = params.text("rw_step");
        let step: i64 = if step_text.is_empty() {
            0
        } else {
            let (negative, magnitude) = match step_text.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, step_text),
            };
            let bytes = units::parse_size_bytes(magnitude).map_err(|error| {
                params.impossible("rw_step", format!("{error} (bytes, or a count for random)"))
            })?;
            let bytes = i64::try_from(bytes)
                .map_err(|_| params.impossible("rw_step", "too large".to_string()))?;
            if negative { -bytes } else { bytes }
        };
        if random && step < 0 {
            return Err(params.impossible("rw_step", "a random pattern takes a count of I/Os"));
        }
        let distribution = Distribution::parse(params)?;
        let align_bytes =
            (!params.text("blockalign").is_empty()).then(|| params.size("blockalign"));
        if let Some(align) = align_bytes {
            check_sectors(params, "blockalign", align)?;
        }
        let rate = match (params.has("rate"), params.has("rate_iops")) {
            (true, true) => return Err(params.impossible("rate_iops", "give rate or rate_iops")),
            (false, false) if params.has("rate_min") => {
                return Err(params.impossible("rate_min", "needs rate or rate_iops"));
            }
            (false, false) => None,
            (bytes, _) => Some(Rate {
                per_second: if bytes {
                    params.size("rate") as f64
                } else {
                    params.integer("rate_iops") as f64
                },
                per_io: !bytes,
                poisson: params.text("rate_process") == "poisson",
                min_bytes_per_second: params.has("rate_min").then(|| params.size("rate_min")),
                cycle: params.time("rate_cycle"),
            }),
        };
        Ok(JobConfig {
            random,
            mix,
            block_size,
            size_bytes,
            io_size_bytes,
            runtime,
            time_based: params.flag("time_based"),
            depth,
            clones: params.integer("numjobs") as u32,
            thinktime,
            offset,
            offset_increment_bytes,
            priorities,
            direct: params.flag("direct") || passthrough,
            passthrough,
            null_engine,
            filenames,
            seq_skip_bytes: if random { 0 } else { step },
            random_run: if random { u64::try_from(step).unwrap_or(1).max(1) } else { 1 },
            random_map: !params.flag("norandommap")
                && distribution == Distribution::Uniform
                && params.text("blockalign").is_empty(),
            distribution,
            file_service: FileService::parse(params)?,
            percentage_random: params.integer("percentage_random") as u64,
            align_bytes,
            rate,
            startdelay: Self::startdelay(params)?,
            loops: params.integer("loops") as u64,
            fsync_every: params.integer("fsync") as u64,
            end_fsync: params.flag("end_fsync"),
            thinktime_blocks: params.integer("thinktime_blocks") as u64,
            think_on_issue: params.text("thinktime_blocks_type") == "issue",
            verify: params.flag("verify"),
            fill_device: params.flag("fill_device"),
            enospc_continues: ErrorTypes::enospc_continues(params)?,
            verify_backlog: params.integer("verify_backlog") as u64,
            cmdprio: Self::cmdprio(params)?,
            write_block_size: if params.has("bssplit_write") {
                Some(BlockSize::parse_split(params, "bssplit_write")?)
            } else {
                None
            },
            cmdprio_split: Self::cmdprio_split(params)?,
            steady: SteadySpec::from_params(params)?,
            latency_target: (params.time("latency_target") > Duration::ZERO).then(|| {
                LatencyTargetSpec {
                    target: params.time("latency_target"),
                    window: params.time("latency_window"),
                    percentile: params.float("latency_percentile"),
                    keep_running: params.flag("latency_run"),
                }
            }),
            flow_weight: params.integer("flow") as u64,
            flow_id: params.integer("flow_id") as u64,
            flow_sleep: params.time("flow_sleep"),
            flow: None,
            file_sizes: None,
            size_at_start: false,
            whole_files: false,
            cpu: CpuProfile::from_params(params, depth)?,
            first_thread: 0,
            number_ios: (params.integer("number_ios") as u64)
                .saturating_mul(params.integer("loops") as u64),
            group_exit: None,
            zbd: params.flag("zbd").then(|| {
                let options = crate::zbd::ZbdOptions {
                    max_open_zones: params.integer("max_open_zones") as u32,
                    reset_threshold: params.float("zone_reset_threshold"),
                    reset_frequency: params.float("zone_reset_frequency"),
                    read_beyond_wp: params.flag("read_beyond_wp"),
                };
                (options, params.size("zbd_zonesize"), crate::zbd::ZbdRegistry::default())
            }),
            zones: match params.size("zonesize") {
                0 => None,
                _ if random => {
                    return Err(params.impossible("zonesize", "strided zones take a sequential rw"));
                }
                size => {
                    let range = params.size("zonerange");
                    // Each zone starts `zonerange + zoneskip` after the last: sizes of whole
                    // sectors keep its I/O sector aligned (fio's O_DIRECT I/O off a sector
                    // fails with EINVAL).
                    for key in ["zonesize", "zonerange", "zoneskip"] {
                        check_sectors(params, key, params.size(key))?;
                    }
                    Some((size, if range == 0 { size } else { range }, params.size("zoneskip")))
                }
            },
        })
    }

    /// `cmdprio_percentage` with `cmdprio_class` and `cmdprio`: per-I/O priorities, which
    /// fio's io_uring and libaio engines alone send (fio-compat.md §2.1).
    fn cmdprio(params: &Params) -> Result<Option<(u64, IoPriority)>, ParamError> {
        let percent = params.integer("cmdprio_percentage") as u64;
        if percent == 0 {
            return Ok(None);
        }
        if !matches!(params.text("ioengine"), "io_uring" | "libaio") {
            return Err(params.impossible(
                "cmdprio_percentage",
                "only ioengine=io_uring and libaio send per-I/O priorities",
            ));
        }
        let level = params.integer("cmdprio") as u8;
        let priority = match params.integer("cmdprio_class") {
            1 => IoPriority::realtime(level),
            2 => IoPriority::best_effort(level),
            _ => Ok(IoPriority::idle()),
        }
        .map_err(|error| params.impossible("cmdprio", error.to_string()))?;
        Ok(Some((percent, priority)))
    }

    /// `cmdprio_bssplit` (and its write part): entries `SIZE/PERCENT[/CLASS/LEVEL]`; an I/O
    /// of SIZE is sent with the entry's priority (default `cmdprio_class`/`cmdprio`) with the
    /// entry's share, entries of one size adding up (fio's `cmdprio_bssplit`).
    fn cmdprio_split(params: &Params) -> Result<Option<[CmdprioSplit; 2]>, ParamError> {
        if !params.has("cmdprio_bssplit") && !params.has("cmdprio_bssplit_write") {
            return Ok(None);
        }
        if !matches!(params.text("ioengine"), "io_uring" | "libaio") {
            return Err(params.impossible(
                "cmdprio_bssplit",
                "only ioengine=io_uring and libaio send per-I/O priorities",
            ));
        }
        if params.integer("cmdprio_percentage") > 0 {
            return Err(params.impossible("cmdprio_bssplit", "give it or cmdprio_percentage"));
        }
        let parse = |key: &'static str| -> Result<CmdprioSplit, ParamError> {
            let text = params.text(key);
            let bad = |entry: &str, why: &str| {
                params.impossible(key, format!("`{entry}`: {why} (SIZE/PERCENT[/CLASS/LEVEL])"))
            };
            let mut entries: Vec<(u64, u64, IoPriority)> = Vec::new();
            for entry in text.split(':').filter(|entry| !entry.trim().is_empty()) {
                let fields: Vec<&str> = entry.split('/').map(str::trim).collect();
                let size = units::parse_size_bytes(fields[0]).map_err(|_| bad(entry, "size"))?;
                let number = |index: usize, default: i64| match fields.get(index) {
                    Some(text) => text.parse::<i64>().map_err(|_| bad(entry, "not a number")),
                    None => Ok(default),
                };
                let percent = number(1, 0)?;
                let class = number(2, params.integer("cmdprio_class"))?;
                let level = number(3, params.integer("cmdprio"))?;
                if !(0..=100).contains(&percent) || !(0..=7).contains(&level) {
                    return Err(bad(entry, "a share 0..=100 and a level 0..=7"));
                }
                let priority = match class {
                    1 => IoPriority::realtime(level as u8),
                    2 => IoPriority::best_effort(level as u8),
                    3 => Ok(IoPriority::idle()),
                    _ => return Err(bad(entry, "the class is 1, 2 or 3")),
                }
                .map_err(|error| bad(entry, &error.to_string()))?;
                let before: u64 = entries
                    .iter()
                    .filter(|(s, ..)| *s == size)
                    .map(|(_, p, _)| *p)
                    .max()
                    .unwrap_or(0);
                if before + percent as u64 > 100 {
                    return Err(bad(entry, "the shares of one size make over 100"));
                }
                entries.push((size, before + percent as u64, priority));
            }
            Ok(entries)
        };
        Ok(Some([parse("cmdprio_bssplit")?, parse("cmdprio_bssplit_write")?]))
    }

    /// `startdelay`: a time, or `LO-HI` drawn per clone (bare numbers are seconds).
    fn startdelay(params: &Params) -> Result<(Duration, Duration), ParamError> {
        let text = params.text("startdelay");
        let time = |text: &str| {
            units::parse_duration(text.trim(), 1_000_000_000).map_err(|error| {
                params.impossible("startdelay", format!("{error} (a time, or LO-HI)"))
            })
        };
        match text.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (time(lo)?, time(hi)?);
                Ok((lo.min(hi), lo.max(hi)))
            }
            None => time(text).map(|delay| (delay, delay)),
        }
    }

    /// The smallest and largest operation sizes, in bytes.
    pub(crate) fn block_bounds_bytes(&self) -> (u64, u64) {
        (self.block_size.min_bytes(), self.block_size.max_bytes())
    }

    /// `prioclass` and `prio`, each one value or a `:`-separated list with one per clone
    /// (the priorities of clone i are the lists' i-th entries).
    fn priorities(params: &Params) -> Result<Vec<IoPriority>, ParamError> {
        let clones = params.integer("numjobs") as usize;
        let list = |key: &'static str, max: i64| -> Result<Vec<Option<i64>>, ParamError> {
            if !params.has(key) {
                return Ok(vec![None]);
            }
            let values = params
                .text(key)
                .split(':')
                .map(|text| match text.trim().parse::<i64>() {
                    Ok(value) if (0..=max).contains(&value) => Ok(Some(value)),
                    _ => Err(params.impossible(
                        key,
                        format!("`{text}` is not an integer 0..={max} (a list is :-separated)"),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            if values.len() != 1 && values.len() != clones {
                return Err(params.impossible(
                    key,
                    format!(
                        "{} values for {clones} clones: give one, or one per clone",
                        values.len()
                    ),
                ));
            }
            Ok(values)
        };
        let classes = list("prioclass", 3)?;
        let levels = list("prio", 7)?;
        let count = classes.len().max(levels.len());
        (0..count)
            .map(|clone| {
                let class = classes[clone % classes.len()];
                let level = levels[clone % levels.len()].map(|level| level as u8);
                let priority = match (class, level) {
                    (None, None) => Ok(IoPriority::DEFAULT),
                    (None, Some(level)) | (Some(2), Some(level)) => IoPriority::best_effort(level),
                    (Some(0), Some(_)) => {
                        return Err(params.impossible("prio", "class 0 (none) takes no level"));
                    }
                    (Some(0), None) => Ok(IoPriority::DEFAULT),
                    (Some(1), level) => IoPriority::realtime(level.unwrap_or(0)),
                    (Some(2), None) => IoPriority::best_effort(0),
                    (Some(_), _) => Ok(IoPriority::idle()),
                };
                priority.map_err(|error| params.impossible("prio", error.to_string()))
            })
            .collect()
    }

    pub(crate) fn plan(
        &self,
        params: &Params,
        targets: &[Target],
        prng: &Prng,
    ) -> Result<WorkloadPlan, ParamError> {
        self.plan_as(params, targets, prng, 0, "job", &[])
    }

    /// [`JobConfig::plan`] with clone i named `name/i` and run as process
    /// `first_process + i + 1`, so several jobs can share a phase (fio job files). Given
    /// `places` (per clone, `i % len`: the places and their extents, e.g. fio's regular files
    /// as [`Place::File`]), the clones address those instead of `filename`'s devices.
    pub(crate) fn plan_as(
        &self,
        params: &Params,
        targets: &[Target],
        prng: &Prng,
        first_process: u32,
        name: &str,
        places: &[Vec<(Place, Target)>],
    ) -> Result<WorkloadPlan, ParamError> {
        if targets.is_empty() {
            return Err(params.impossible("filename", "there is no device to address"));
        }
        let devices: Vec<(Place, &Target)> = if self.filenames.is_empty() {
            vec![(Place::Device(0), &targets[0])]
        } else {
            self.filenames
                .iter()
                .map(|name| {
                    let index = targets.iter().position(|target| &target.name == name).ok_or_else(
                        || {
                            let names: Vec<&str> =
                                targets.iter().map(|t| t.name.as_str()).collect();
                            params.impossible(
                                "filename",
                                format!("no device `{name}` (accepted: {})", names.join(", ")),
                            )
                        },
                    )?;
                    Ok((Place::Device(index), &targets[index]))
                })
                .collect::<Result<_, ParamError>>()?
        };
        // A passthrough command addresses a device's blocks (SCSI CDBs, NVMe commands): fio
        // opens a block or character device for these engines.
        if self.passthrough
            && places.iter().flatten().any(|(place, _)| matches!(place, Place::File(_)))
        {
            return Err(params.impossible(
                "ioengine",
                format!(
                    "ioengine={} sends commands to a device: filename must name one, not a \
                     regular file",
                    params.text("ioengine")
                ),
            ));
        }
        let new_steady = |spec: &SteadySpec| Arc::new(Mutex::new(SteadyState::new(spec.clone())));
        let shared_steady = self.steady.as_ref().filter(|spec| spec.shared).map(new_steady);
        let flow = match (&self.flow, self.flow_weight) {
            (_, 0) => None,
            (Some(flow), _) => Some(flow.0.clone()),
            (None, _) => Some(Arc::new(Mutex::new(Flow::default()))),
        };
        let mut issuers: Vec<Box<dyn Issuer>> = Vec::with_capacity(self.clones as usize);
        for clone in 0..self.clones {
            if let Some(flow) = &flow {
                flow.lock().expect("flow lock").total_weight += self.flow_weight;
            }
            let places: Vec<(Place, &Target)> = if places.is_empty() {
                devices.clone()
            } else {
                places[clone as usize % places.len()].iter().map(|(p, t)| (*p, t)).collect()
            };
            let mut regions = places
                .iter()
                .map(|&(place, target)| self.region(params, target, place, clone, places.len()))
                .collect::<Result<Vec<_>, _>>()?;
            if self.zbd.is_some() {
                self.attach_zbd(params, &places, &mut regions)?;
            }
            let budget_bytes = match (self.io_size_bytes, self.size_bytes) {
                (Some(io_size), _) => io_size,
                // fio's `setup_files`: a `size` beyond the files' total is cut to it.
                (None, Some(size)) if self.whole_files => {
                    size.min(regions.iter().map(|region| region.length_bytes).sum())
                }
                (None, Some(size)) => size,
                (None, None) => regions.iter().map(|region| region.length_bytes).sum(),
            }
            .saturating_mul(self.loops)
            // trimwrite trims and then writes each byte: twice the bytes (fio's `do_io`).
            .saturating_mul(if self.mix == Mix::TrimWrite { 2 } else { 1 });
            let zipf = match self.distribution {
                Distribution::Zipf(theta) => {
                    let align = self.align_bytes.unwrap_or_else(|| self.block_size.min_bytes());
                    let blocks = regions
                        .iter()
                        .map(|region| {
                            (region.length_bytes - self.block_size.max_bytes()) / align + 1
                        })
                        .min()
                        .unwrap_or(1);
                    Some(Zipf::new(blocks, theta).map_err(|error| {
                        params.impossible("random_distribution", error.to_string())
                    })?)
                }
                _ => None,
            };
            let region_count = regions.len();
            let service = ServiceState::new(
                &self.file_service,
                region_count,
                prng.fork_indexed("file_service", u64::from(clone)),
            )
            .map_err(|error| params.impossible("file_service_type", error))?;
            issuers.push(Box::new(JobIssuer {
                name: format!("{name}/{clone}"),
                process: ProcessId(first_process + clone + 1),
                config: self.clone(),
                regions,
                next_region: 0,
                service,
                budget_bytes,
                issued_bytes: 0,
                issued_ios: 0,
                outstanding: 0,
                deadline: None,
                start: None,
                think_until: None,
                think_blocks: 0,
                finishing: false,
                prng: prng.fork_indexed("job", u64::from(clone)),
                next_id: 0,
                clone_index: clone,
                zipf,
                run_left: 0,
                last_end: vec![0; region_count],
                trimmed: None,
                writes_since_sync: 0,
                sync_due: false,
                written: Vec::new(),
                stage: Stage::Main,
                rate_due: None,
                rate_origin: None,
                rate_credit_secs: 0.0,
                cycle_start: None,
                cycle_bytes: 0,
                rate_min_failures: 0,
                sizes: elevator_core::IdMap::new(),
                io_priority: None,
                steady: shared_steady.clone().or_else(|| self.steady.as_ref().map(new_steady)),
                flow: flow.clone(),
                latency: None,
                submitted_at: elevator_core::IdMap::new(),
                latency_target_failures: 0,
                flow_issued: 0,
                flow_quiesce: false,
                errored: false,
                file_ends: elevator_core::IdMap::new(),
                zbd_pending: std::collections::VecDeque::new(),
                zbd_locks: std::collections::BTreeMap::new(),
                zbd_posts: Vec::new(),
                zbd_blocked: false,
            }));
        }
        let name = match (self.random, self.mix) {
            (false, Mix::Read) => "read",
            (false, Mix::Write) => "write",
            (false, Mix::Mixed { .. }) => "rw",
            (true, Mix::Read) => "randread",
            (true, Mix::Write) => "randwrite",
            (true, Mix::Mixed { .. }) => "randrw",
            (false, Mix::Trim) => "trim",
            (true, Mix::Trim) => "randtrim",
            (_, Mix::TrimWrite) => "trimwrite",
        };
        Ok(WorkloadPlan {
            files: Vec::new(),
            phases: vec![PhasePlan { name: name.to_owned(), issuers, stonewall: false }],
        })
    }

    /// `zonemode=zbd`: gives each region fio's shared view of its zoned device, and aligns
    /// the region to zones as fio's `zbd_zone_align_file_sizes` does when it holds sequential
    /// zones (writes: start rounded up and end down to zone boundaries; reads: end down).
    fn attach_zbd(
        &self,
        params: &Params,
        places: &[(Place, &Target)],
        regions: &mut [Region],
    ) -> Result<(), ParamError> {
        let Some((options, zone_size, registry)) = &self.zbd else { return Ok(()) };
        let writes = self.mix != Mix::Read;
        for (&(place, target), region) in places.iter().zip(regions.iter_mut()) {
            let Place::Device(index) = place else {
                return Err(params.impossible(
                    "zonemode",
                    "zonemode=zbd on a regular file (fio emulates zones there) is not modelled",
                ));
            };
            let device = registry
                .device(index, target, options, *zone_size)
                .map_err(|problem| params.impossible("zonemode", problem))?;
            let (start, length) = device
                .lock()
                .expect("zbd state")
                .align(region.start_bytes, region.length_bytes, writes)
                .map_err(|problem| {
                    params.impossible("size", format!("{}: {problem}", target.name))
                })?;
            region.start_bytes = start;
            region.length_bytes = length;
            region.zbd = Some(device);
        }
        // Checked once the device is known to be zoned (fio checks its drives first).
        if writes && !self.direct {
            // fio: "Using direct I/O is mandatory for writing to ZBD drives".
            return Err(
                params.impossible("direct", "zonemode=zbd writes need direct=1 (fio's rule)")
            );
        }
        Ok(())
    }

    /// Clone `clone`'s region on `target`.
    fn region(
        &self,
        params: &Params,
        target: &Target,
        place: Place,
        clone: u32,
        file_count: usize,
    ) -> Result<Region, ParamError> {
        let capacity = target.capacity_bytes;
        let base = match self.offset {
            Offset::Bytes(bytes) => bytes,
            Offset::Percent(percent) => {
                let bytes = (capacity as f64 * percent / 100.0) as u64;
                bytes - bytes % self.block_size.min_bytes().max(SECTOR_SIZE_BYTES)
            }
        };
        let start = self
            .offset_increment_bytes
            .checked_mul(u64::from(clone))
            .and_then(|shift| shift.checked_add(base))
            .filter(|&start| start < capacity)
            .ok_or_else(|| {
                params.impossible(
                    "offset",
                    format!(
                        "clone {clone} would start past the end of {} ({capacity} bytes)",
                        target.name
                    ),
                )
            })?;
        let length_bytes = match self.size_bytes {
            Some(_) if self.whole_files => capacity - start,
            Some(size) => (size / file_count as u64).max(self.block_size.min_bytes()),
            None => capacity - start,
        };
        if start + length_bytes > capacity {
            return Err(params.impossible(
                "size",
                format!(
                    "clone {clone}'s region {start}..{} runs past the end of {} ({capacity} bytes)",
                    start + length_bytes,
                    target.name
                ),
            ));
        }
        if self.block_size.max_bytes() > length_bytes {
            let key =
                ["bssplit", "bsrange"].into_iter().find(|key| params.has(key)).unwrap_or("bs");
            return Err(params.impossible(
                key,
                format!("a block is larger than the {length_bytes}-byte region on {}", target.name),
            ));
        }
        Ok(Region {
            place,
            start_bytes: start,
            length_bytes,
            next_read: 0,
            next_write: 0,
            map: Vec::new(),
            map_used: 0,
            zone_base: 0,
            zone_bytes: 0,
            zbd: None,
            served_bytes: 0,
        })
    }
}

/// A clone's part of one device.
#[derive(Clone, Debug)]
struct Region {
    place: Place,
    start_bytes: u64,
    length_bytes: u64,
    /// Sequential position of the next read and write, relative to the start (fio keeps one
    /// per direction).
    next_read: u64,
    next_write: u64,
    /// fio's random map: one bit per aligned block, set once the block was used this pass.
    map: Vec<u64>,
    map_used: u64,
    /// Strided zones: where the current zone starts, and the bytes done in it.
    zone_base: u64,
    zone_bytes: u64,
    /// `zonemode=zbd`: fio's view of the zoned device (shared by every clone and job on it).
    pub(crate) zbd: Option<crate::zbd::SharedZbd>,
    /// Bytes given to this file this pass: at its length the file is done (fio's
    /// `fio_file_done`, when `fill_io_u` finds nothing left in it).
    served_bytes: u64,
}

impl Region {
    /// Marks `[first, first + count)` used; a full map starts a new pass (fio resets it).
    fn mark(&mut self, first: u64, count: u64, blocks: u64) {
        for block in first..(first + count).min(blocks) {
            let (word, bit) = ((block / 64) as usize, block % 64);
            if self.map[word] & (1 << bit) == 0 {
                self.map[word] |= 1 << bit;
                self.map_used += 1;
            }
        }
        if self.map_used >= blocks {
            self.map.iter_mut().for_each(|word| *word = 0);
            self.map_used = 0;
        }
    }

    /// `block` if unused this pass, else the next unused one after it, wrapping (fio's
    /// `axmap_next_free`).
    fn next_free(&self, block: u64, blocks: u64) -> u64 {
        let used = |b: u64| self.map[(b / 64) as usize] & (1 << (b % 64)) != 0;
        (0..blocks).map(|step| (block + step) % blocks).find(|&b| !used(b)).unwrap_or(block)
    }
}

/// What an issuer is doing.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    /// Issuing the job's I/O.
    Main,
    /// Reading back what was written (`verify`), from this index of `written`.
    Verify(usize),
    /// Syncing each place once after the writes (`end_fsync`), from this place.
    EndSync(usize),
}

/// One clone of a job.
#[derive(Debug)]
struct JobIssuer {
    name: String,
    process: ProcessId,
    config: JobConfig,
    regions: Vec<Region>,
    next_region: usize,
    /// `file_service_type`'s state (which file is served, and for how many more I/Os).
    service: ServiceState,
    budget_bytes: u64,
    issued_bytes: u64,
    issued_ios: u64,
    outstanding: u32,
    deadline: Option<Instant>,
    /// When the clone starts (after `startdelay`).
    start: Option<Instant>,
    think_until: Option<Instant>,
    /// Blocks counted toward the next think (`thinktime_blocks`).
    think_blocks: u64,
    /// Past its runtime or its amount: it submits nothing more.
    finishing: bool,
    prng: Prng,
    next_id: u64,
    /// Which clone it is (its entry in per-clone lists such as `prio=0:7`).
    clone_index: u32,
    zipf: Option<Zipf>,
    /// Random pattern: I/Os left at sequential offsets after the last random one
    /// (`rw=rand...:N`), and where the last one ended, per region.
    run_left: u64,
    last_end: Vec<u64>,
    /// `rw=trimwrite`: the block just trimmed, to write next.
    trimmed: Option<(usize, u64, u64)>,
    /// `zonemode=zbd`: a zone reset and the write after it, each sent once nothing is
    /// outstanding (fio quiesces before its synchronous reset).
    zbd_pending: std::collections::VecDeque<Io>,
    /// `zonemode=zbd`: the zone lock each I/O holds, released at its completion; the issuers
    /// a release woke (posted); whether the last I/O found its zone locked by another issuer.
    zbd_locks: std::collections::BTreeMap<u64, (crate::zbd::SharedZbd, usize)>,
    zbd_posts: Vec<usize>,
    zbd_blocked: bool,
    writes_since_sync: u64,
    sync_due: bool,
    /// Writes kept for `verify`, in order: (region, offset, size).
    written: Vec<(usize, u64, u64)>,
    stage: Stage,
    /// `rate`: when the next I/O is due.
    rate_due: Option<Instant>,
    rate_origin: Option<Instant>,
    rate_credit_secs: f64,
    /// `rate_min`: the current window's start and bytes completed in it.
    cycle_start: Option<Instant>,
    cycle_bytes: u64,
    rate_min_failures: u64,
    /// Outstanding I/Os' sizes by id (looked up, never walked; ids in increasing order: an
    /// `IdMap`, cheaper per I/O than a hash map).
    sizes: elevator_core::IdMap<u64>,
    /// The priority of the I/O being submitted, when `cmdprio_percentage` gave it one.
    io_priority: Option<IoPriority>,
    /// `steadystate`: its check, shared with the other clones when judged together.
    steady: Option<Arc<Mutex<SteadyState>>>,
    /// `flow`: the flow it belongs to, the I/Os it issued in it, and whether it is quiescing
    /// before its `flow_sleep`.
    flow: Option<Arc<Mutex<Flow>>>,
    /// `latency_target`: the depth search, each I/O's submission time, and whether the job
    /// ended failing the target at depth 1 (fio's ETIMEDOUT).
    latency: Option<LatencySearch>,
    submitted_at: elevator_core::IdMap<Instant>,
    latency_target_failures: u64,
    flow_issued: u64,
    flow_quiesce: bool,
    /// A failed I/O ended the job (fio's `td->error`): no verify, no `end_fsync`.
    errored: bool,
    /// Outstanding writes to regular files: (file, where the write ends), to grow
    /// [`JobConfig::file_sizes`] when they complete.
    file_ends: elevator_core::IdMap<(usize, u64)>,
}

impl Issuer for JobIssuer {
    fn name(&self) -> &str {
        &self.name
    }

    fn null_engine(&self) -> bool {
        self.config.null_engine
    }

    fn cpu(&self) -> crate::IssuerCpu {
        self.config.cpu.for_thread(self.config.first_thread + self.clone_index)
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn priority(&self) -> IoPriority {
        // Asked as each I/O is submitted: a cmdprio I/O carries its own.
        if let Some(priority) = self.io_priority {
            return priority;
        }
        let priorities = &self.config.priorities;
        priorities[self.clone_index as usize % priorities.len()]
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut counters = Vec::new();
        if self.config.rate.as_ref().is_some_and(|rate| rate.min_bytes_per_second.is_some()) {
            counters.push(("rate_min_failures", self.rate_min_failures));
        }
        if let Some(search) = &self.latency {
            counters.push(("latency_target_depth", u64::from(search.depth)));
            counters.push(("latency_target_failures", self.latency_target_failures));
        }
        counters
    }

    fn poll(&mut self, now: Instant) -> Poll {
        // startdelay: the clone starts late; its runtime counts from then (fio's).
        let start = match self.start {
            Some(start) => start,
            None => {
                if self.config.size_at_start {
                    self.size_regions_from_files();
                }
                let (lo, hi) = self.config.startdelay;
                let span = hi.as_nanos() - lo.as_nanos();
                let delay = lo.as_nanos() + if span > 0 { self.prng.below(span + 1) } else { 0 };
                *self.start.insert(now.saturating_add(Duration::from_nanos(delay)))
            }
        };
        if now < start {
            return Poll::Sleep { until: start };
        }
        if let Some(steady) = &self.steady {
            let mut steady = steady.lock().expect("steady state lock");
            steady.start(start);
            steady.advance(now);
        }
        let runtime = self.config.runtime;
        let deadline = *self.deadline.get_or_insert_with(|| {
            if runtime > Duration::ZERO { now.saturating_add(runtime) } else { Instant::MAX }
        });
        if self.stage == Stage::Main {
            let out_of_time = now >= deadline;
            let out_of_bytes = !self.config.time_based && self.issued_bytes >= self.budget_bytes;
            let out_of_ios =
                self.config.number_ios > 0 && self.issued_ios >= self.config.number_ios;
            let stopped = self
                .config
                .group_exit
                .as_ref()
                .is_some_and(|exit| exit.flag.load(Ordering::Relaxed));
            let steady = self
                .steady
                .as_ref()
                .is_some_and(|steady| steady.lock().expect("steady state lock").attained);
            // A sync owed for the last writes (`fsync=N`) goes out before the job ends.
            let ended =
                out_of_time || out_of_bytes || out_of_ios || stopped || steady || self.finishing;
            if ended && self.sync_due && !stopped && self.outstanding < self.config.depth {
                self.sync_due = false;
                let io = self.sync_io(self.next_region);
                return Poll::Submit(self.submit(now, io));
            }
            if ended {
                // The tail (verify reads, end_fsync) starts once the writes completed.
                self.finishing = true;
                if self.outstanding > 0 {
                    return Poll::Wait;
                }
                self.stage = if self.config.verify && !self.written.is_empty() {
                    Stage::Verify(0)
                } else {
                    Stage::EndSync(0)
                };
            }
        }
        let mut depth = self.config.depth;
        if let Some(spec) = &self.config.latency_target
            && self.stage == Stage::Main
        {
            let search = self
                .latency
                .get_or_insert_with(|| LatencySearch::new(spec.clone(), self.config.depth, now));
            search.check(now, self.config.depth);
            if search.done {
                self.latency_target_failures += u64::from(search.failed_at_depth_one);
                self.finishing = true;
                search.done = false;
                return self.poll(now);
            }
            if search.quiesce {
                if self.outstanding > 0 {
                    return Poll::Wait;
                }
                search.quiesce = false;
            }
            depth = search.depth;
        }
        if self.outstanding >= depth {
            return Poll::Wait;
        }
        if self.stage != Stage::Main {
            return self.poll_tail(now);
        }
        if self.config.thinktime > Duration::ZERO
            && self.think_blocks >= self.config.thinktime_blocks
        {
            // fio quiesces before thinking, so the depth is at most thinktime_blocks.
            if self.outstanding > 0 {
                return Poll::Wait;
            }
            self.think_blocks = 0;
            self.think_until = Some(now.saturating_add(self.config.thinktime));
        }
        if let Some(until) = self.think_until
            && until > now
        {
            return Poll::Sleep { until: until.min(deadline) };
        }
        if let Some(due) = self.rate_due
            && due > now
        {
            return Poll::Sleep { until: due.min(deadline) };
        }
        if !self.sync_due
            && let Some(poll) = self.flow_holds_back(now, deadline)
        {
            return poll;
        }
        if !self.zbd_pending.is_empty() {
            if self.outstanding > 0 {
                return Poll::Wait;
            }
            let io = self.zbd_pending.pop_front().expect("checked");
            return Poll::Submit(self.submit(now, io));
        }
        let io = if self.sync_due {
            self.sync_due = false;
            Some(self.sync_io(self.next_region))
        } else {
            self.poll_next_io()
        };
        match io {
            Some(io) => Poll::Submit(self.submit(now, io)),
            // zonemode=zbd queued a zone reset: sent by the check above.
            None if !self.zbd_pending.is_empty() => self.poll(now),
            // zonemode=zbd: the zone is another issuer's. fio quiesces its own I/O, then
            // blocks on the zone's mutex: the release posts this issuer (a 1 s re-poll guards
            // against a missed post).
            None if self.zbd_blocked => {
                self.zbd_blocked = false;
                if self.outstanding > 0 {
                    Poll::Wait
                } else {
                    let retry = now.saturating_add(Duration::from_secs(1));
                    Poll::Sleep { until: retry.min(deadline) }
                }
            }
            None => {
                self.finishing = true;
                if self.outstanding == 0 { self.poll(now) } else { Poll::Wait }
            }
        }
    }

    fn finishing(&self, now: Instant) -> bool {
        let tail_left = self.config.verify || self.config.end_fsync;
        (self.finishing && !tail_left) || self.deadline.is_some_and(|deadline| now >= deadline)
    }

    fn take_posts(&mut self, posted: &mut Vec<usize>) {
        // Asked twice per I/O and almost always empty: no append (and its copy call) then.
        if !self.zbd_posts.is_empty() {
            posted.append(&mut self.zbd_posts);
        }
    }

    fn failed(&mut self, now: Instant, io: IoId, kind: IoKind, failure: IoFailure) -> FailedIo {
        let IoFailure::NoSpace = failure;
        self.forget(io);
        self.sizes.remove(io.0);
        // A write that failed wrote nothing: the file keeps its size.
        self.file_ends.remove(io.0);
        self.submitted_at.remove(io.0);
        // fio's `io_u_sync_complete`/`check_error` order (backend.c): an error
        // `continue_on_error` and `ignore_error` make non-fatal is counted and the job goes on;
        // else `fill_device` ends the job cleanly at ENOSPC; else the job ends with the error.
        let continues = match kind {
            IoKind::Read => self.config.enospc_continues.read,
            _ => self.config.enospc_continues.write,
        };
        if continues {
            // The failed call takes time in fio (a syscall); here the next I/O waits
            // FAILED_IO_TIME, so a time-based job failing every write still reaches its end.
            let until = now.saturating_add(FAILED_IO_TIME);
            self.think_until = Some(self.think_until.map_or(until, |think| think.max(until)));
            return FailedIo::Error;
        }
        // The I/O loop ends: fio neither verifies (`thread_main` stops at an error or
        // terminate) nor sends the fsyncs still owed; only a clean end syncs (`end_fsync`).
        self.finishing = true;
        self.sync_due = false;
        self.written.clear();
        if self.config.fill_device {
            FailedIo::Expected
        } else {
            self.errored = true;
            FailedIo::Error
        }
    }

    fn complete(&mut self, now: Instant, io: IoId) {
        self.forget(io);
        let size = self.sizes.remove(io.0).unwrap_or(0);
        if let (Some((file, end)), Some(sizes)) =
            (self.file_ends.remove(io.0), &self.config.file_sizes)
        {
            let mut sizes = sizes.0.lock().expect("file sizes lock");
            if let Some(bytes) = sizes.get_mut(file) {
                *bytes = (*bytes).max(end);
            }
        }
        self.completed(now, io, size);
    }
}

impl JobIssuer {
    /// fio's `create_serialize=0` without `size`: the job sets its files up as it starts and
    /// takes each one's size then (`setup_files` → `get_file_sizes`), so a file an earlier job
    /// wrote is read up to where those writes ended. Each region on a regular file ends at
    /// the file's end, in whole blocks; the amount is their sum unless `io_size` gave one. A
    /// file with no block's worth of data leaves the clone nothing to do (fio fails such a job:
    /// "you need to specify size=").
    fn size_regions_from_files(&mut self) {
        let Some(sizes) = &self.config.file_sizes else { return };
        let sizes = sizes.0.lock().expect("file sizes lock").clone();
        let block = self.config.block_size.max_bytes().max(1);
        for region in &mut self.regions {
            if let Place::File(file) = region.place {
                let bytes =
                    sizes.get(file).copied().unwrap_or(0).saturating_sub(region.start_bytes);
                region.length_bytes = bytes - bytes % block;
                region.map.clear();
                region.map_used = 0;
            }
        }
        if self.config.io_size_bytes.is_none() {
            self.budget_bytes = self
                .regions
                .iter()
                .map(|region| region.length_bytes)
                .sum::<u64>()
                .saturating_mul(self.config.loops)
                .saturating_mul(if self.config.mix == Mix::TrimWrite { 2 } else { 1 });
        }
        if self.regions.iter().any(|region| region.length_bytes == 0) {
            self.budget_bytes = 0;
            self.finishing = true;
            return;
        }
        // zipf's ranks span the blocks the regions now hold (as `plan_as` sizes them).
        if let Distribution::Zipf(theta) = self.config.distribution {
            let align =
                self.config.align_bytes.unwrap_or_else(|| self.config.block_size.min_bytes());
            let blocks = self
                .regions
                .iter()
                .map(|region| (region.length_bytes - block) / align + 1)
                .min()
                .unwrap_or(1);
            if let Ok(zipf) = Zipf::new(blocks, theta) {
                self.zipf = Some(zipf);
            }
        }
    }

    /// `io` is no longer outstanding (completed or failed): its zone lock goes.
    fn forget(&mut self, io: IoId) {
        self.outstanding = self.outstanding.checked_sub(1).expect("completion without an I/O");
        if let Some((zbd, zone)) = self.zbd_locks.remove(&io.0) {
            zbd.lock().expect("zbd state").unlock(zone, &mut self.zbd_posts);
            let me = self.process.0 as usize - 1;
            self.zbd_posts.retain(|&woken| woken != me);
        }
    }

    /// What a completed I/O of `size` bytes counts toward.
    fn completed(&mut self, now: Instant, io: IoId, size: u64) {
        // Syncs carry no bytes and are no I/O in fio's IOPS.
        if let Some(submitted) = self.submitted_at.remove(io.0)
            && let Some(search) = &mut self.latency
            && self.stage == Stage::Main
            && size > 0
        {
            search.complete(now, now.saturating_since(submitted));
        }
        if let Some(steady) = &self.steady
            && self.stage == Stage::Main
            && size > 0
        {
            steady.lock().expect("steady state lock").complete(now, size);
        }
        if !self.config.think_on_issue {
            self.think_blocks += 1;
        }
        if let Some(rate) = &self.config.rate
            && let Some(min) = rate.min_bytes_per_second
            && self.stage == Stage::Main
        {
            let cycle_start = *self.cycle_start.get_or_insert(now);
            self.cycle_bytes += size;
            let elapsed = now.saturating_since(cycle_start);
            if elapsed >= rate.cycle {
                // fio fails the job when a window falls below rate_min (`backend.c` check_min_rate).
                let achieved = self.cycle_bytes as f64 / elapsed.as_secs_f64();
                if achieved < min as f64 {
                    self.rate_min_failures += 1;
                    self.finishing = true;
                }
                self.cycle_start = Some(now);
                self.cycle_bytes = 0;
            }
        }
    }
}

impl JobIssuer {
    /// fio's `flow_threshold_exceeded`, asked before each I/O: when this clone's share of the
    /// flow's I/Os is above its share of the weight it holds back — with `flow_sleep`, it
    /// quiesces (waits for its I/O) and sleeps that long; without, fio retries at once, here
    /// at its next completion or after a microsecond (the simulator has no spinning CPU).
    /// Otherwise the I/O counts in the flow.
    fn flow_holds_back(&mut self, now: Instant, deadline: Instant) -> Option<Poll> {
        let flow = self.flow.as_ref()?;
        if self.flow_quiesce {
            if self.outstanding > 0 {
                return Some(Poll::Wait);
            }
            self.flow_quiesce = false;
            let until = now.saturating_add(self.config.flow_sleep);
            return Some(Poll::Sleep { until: until.min(deadline) });
        }
        let mut shared = flow.lock().expect("flow lock");
        // 0/0 is not above any share: the first I/O of a flow always goes.
        let issued_share = self.flow_issued as f64 / shared.issued as f64;
        let weight_share = self.config.flow_weight as f64 / shared.total_weight as f64;
        if issued_share > weight_share {
            drop(shared);
            if self.config.flow_sleep > Duration::ZERO {
                self.flow_quiesce = true;
                return self.flow_holds_back(now, deadline);
            }
            return Some(if self.outstanding > 0 {
                Poll::Wait
            } else {
                Poll::Sleep { until: now.saturating_add(Duration::from_micros(1)).min(deadline) }
            });
        }
        shared.issued += 1;
        self.flow_issued += 1;
        None
    }

    /// Counts `io` as issued and paces the next one.
    fn submit(&mut self, now: Instant, io: Io) -> Io {
        self.outstanding += 1;
        if let (IoKind::Write, Place::File(file), Some(_)) =
            (io.kind, io.place, &self.config.file_sizes)
        {
            self.file_ends.insert(io.id.0, (file, io.offset_bytes + io.size_bytes));
        }
        self.io_priority = match (&self.config.cmdprio, &self.config.cmdprio_split) {
            (Some((percent, priority)), _) if self.prng.below(100) < *percent => Some(*priority),
            (_, Some(splits)) if matches!(io.kind, IoKind::Read | IoKind::Write) => {
                let entries = &splits[usize::from(io.kind == IoKind::Write)];
                let point = self.prng.below(100);
                entries
                    .iter()
                    .find(|(size, cumulative, _)| *size == io.size_bytes && point < *cumulative)
                    .map(|(_, _, priority)| *priority)
            }
            _ => None,
        };
        self.sizes.insert(io.id.0, io.size_bytes);
        if self.config.latency_target.is_some() {
            self.submitted_at.insert(io.id.0, now);
        }
        if self.stage == Stage::Main && io.kind != IoKind::Sync {
            self.issued_bytes += io.size_bytes;
            self.issued_ios += 1;
            if self.config.think_on_issue {
                self.think_blocks += 1;
            }
            if io.kind == IoKind::Write {
                self.writes_since_sync += 1;
                if self.config.fsync_every > 0 && self.writes_since_sync >= self.config.fsync_every
                {
                    self.writes_since_sync = 0;
                    self.sync_due = true;
                }
                if self.config.verify {
                    let index = self.regions.iter().position(|r| r.place == io.place).unwrap_or(0);
                    let relative = io.offset_bytes - self.regions[index].start_bytes;
                    self.written.push((index, relative, io.size_bytes));
                    if self.config.verify_backlog > 0
                        && self.written.len() as u64 >= self.config.verify_backlog
                    {
                        self.stage = Stage::Verify(0);
                    }
                }
            }
            if let Some(rate) = &self.config.rate {
                // Each I/O's cost in seconds at the rate; poisson draws the gap with that mean.
                let units = if rate.per_io { 1.0 } else { io.size_bytes as f64 };
                let mean = units / rate.per_second;
                let gap = if rate.poisson { self.prng.exponential(mean) } else { mean };
                // Due times count from the first I/O (fio's: bytes done since the start at the
                // rate), so a slow device's lag is caught up rather than lost.
                let origin = *self.rate_origin.get_or_insert(now);
                self.rate_credit_secs += gap;
                let credit = Duration::from_nanos((self.rate_credit_secs * 1e9) as u64);
                self.rate_due = Some(origin.saturating_add(credit));
            }
        }
        io
    }

    /// A sync of region `index`'s place.
    fn sync_io(&mut self, index: usize) -> Io {
        let region = &self.regions[index % self.regions.len()];
        let id = IoId(self.next_id);
        self.next_id += 1;
        Io {
            id,
            kind: IoKind::Sync,
            place: region.place,
            offset_bytes: 0,
            size_bytes: 0,
            direct: self.config.direct,
            flags: RequestFlags::SYNC,
        }
    }

    /// The verify reads, then `end_fsync`'s syncs, then done.
    fn poll_tail(&mut self, now: Instant) -> Poll {
        self.io_priority = None;
        match self.stage {
            // fio reads a block back only once its write completed (`get_next_verify`).
            Stage::Verify(0) if self.outstanding > 0 => Poll::Wait,
            Stage::Verify(index) if index < self.written.len() => {
                let (region, relative, size) = self.written[index];
                self.stage = Stage::Verify(index + 1);
                let place = self.regions[region].place;
                let offset_bytes = self.regions[region].start_bytes + relative;
                let id = IoId(self.next_id);
                self.next_id += 1;
                let io = Io {
                    id,
                    kind: IoKind::Read,
                    place,
                    offset_bytes,
                    size_bytes: size,
                    direct: self.config.direct,
                    flags: RequestFlags::SYNC,
                };
                self.outstanding += 1;
                Poll::Submit(io)
            }
            Stage::Verify(_) => {
                self.written.clear();
                if !self.finishing {
                    // verify_backlog: back to writing.
                    self.stage = Stage::Main;
                    return self.poll(now);
                }
                self.stage = Stage::EndSync(0);
                self.poll_tail(now)
            }
            Stage::EndSync(index)
                if self.config.end_fsync && !self.errored && index < self.regions.len() =>
            {
                self.stage = Stage::EndSync(index + 1);
                let io = self.sync_io(index);
                self.outstanding += 1;
                Poll::Submit(io)
            }
            _ => {
                self.finishing = true;
                if self.outstanding > 0 {
                    return Poll::Wait;
                }
                if let Some(exit) = &self.config.group_exit
                    && exit.sets
                {
                    exit.flag.store(true, Ordering::Relaxed);
                }
                Poll::Done
            }
        }
    }

    /// The next operation, or `None` when a sequential pass ended and the job is not
    /// time-based.
    fn poll_next_io(&mut self) -> Option<Io> {
        if let Some((index, offset_bytes, size_bytes)) = self.trimmed.take() {
            // trimwrite: the block just discarded is written next (fio's `td_trimwrite`).
            return Some(self.io(IoKind::Write, index, offset_bytes, size_bytes));
        }
        let kind = match self.config.mix {
            Mix::Read => IoKind::Read,
            Mix::Write => IoKind::Write,
            Mix::Trim | Mix::TrimWrite => IoKind::Discard,
            Mix::Mixed { read_fraction } => {
                if self.prng.chance(read_fraction) {
                    IoKind::Read
                } else {
                    IoKind::Write
                }
            }
        };
        let mut size = match (&self.config.write_block_size, kind) {
            (Some(split), IoKind::Write) => split.draw(&mut self.prng),
            _ => self.config.block_size.draw(&mut self.prng),
        };
        if !self.config.time_based {
            // The last operation may be shorter, as fio's is when size is not a multiple.
            let remaining = self.budget_bytes - self.issued_bytes;
            size = size.min(remaining - remaining % SECTOR_SIZE_BYTES).max(SECTOR_SIZE_BYTES);
        }
        let index = self.pick_region(size);
        let random = self.config.random
            && self.run_left == 0
            && (self.config.percentage_random >= 100
                || self.prng.below(100) < self.config.percentage_random);
        let relative = if random {
            self.run_left = self.config.random_run - 1;
            self.random_offset(index, size)
        } else if self.config.random {
            // Between random offsets (`:N`, percentage_random): continue sequentially.
            self.run_left = self.run_left.saturating_sub(1);
            let region = &self.regions[index];
            let next = self.last_end[index];
            if next + size > region.length_bytes { 0 } else { next }
        } else {
            self.sequential_offset(index, kind, size)?
        };
        if let Some(zbd) = self.regions[index].zbd.clone() {
            return self.zbd_io(&zbd, kind, index, relative, size, random);
        }
        self.last_end[index] = relative + size;
        if self.config.mix == Mix::TrimWrite {
            self.trimmed = Some((index, relative, size));
        }
        Some(self.io(kind, index, relative, size))
    }

    /// `zonemode=zbd`: the I/O drawn at `relative` moved where fio's `zbd_adjust_block` puts
    /// it (crate::zbd); `None` ends the job, or, with `zbd_pending` filled, defers a write
    /// behind its zone's reset.
    fn zbd_io(
        &mut self,
        zbd: &crate::zbd::SharedZbd,
        kind: IoKind,
        index: usize,
        relative: u64,
        size: u64,
        random: bool,
    ) -> Option<Io> {
        use crate::zbd::ZbdWrite;
        let (options, _, _) = self.config.zbd.clone().expect("a zbd region has zbd options");
        let region = &self.regions[index];
        let start = region.start_bytes;
        let range = (start, start + region.length_bytes);
        let min_bs = self.config.block_size.min_bytes();
        // The issuer's index in its phase (process ids count from 1 there).
        let me = self.process.0 as usize - 1;
        let mut device = zbd.lock().expect("zbd state");
        let busy = |device: &mut crate::zbd::ZbdDevice| {
            device.wait(me);
            None
        };
        let (relative, size, reset) = match kind {
            IoKind::Read => {
                let Ok(read) =
                    device.read(&options, start + relative, size, min_bs, random, range, me)
                else {
                    self.zbd_blocked = true;
                    return busy(&mut device);
                };
                let (offset, size) = read?;
                (offset - start, size, None)
            }
            IoKind::Write => {
                let Ok(write) =
                    device.write(&options, start + relative, size, min_bs, random, range, me)
                else {
                    self.zbd_blocked = true;
                    return busy(&mut device);
                };
                match write? {
                    ZbdWrite::Write { offset, size } => (offset - start, size, None),
                    ZbdWrite::ResetThenWrite { zone_start, offset, size } => {
                        (offset - start, size, Some(zone_start - start))
                    }
                }
            }
            // Trims and syncs are not moved (fio's trims of zones are not modelled).
            _ => (relative, size, None),
        };
        let zone = device.zone_of(start + relative);
        // Conventional zones, trims and reads past the write pointer take no lock (fio's).
        let locked = zone >= device.conventional_zones()
            && match kind {
                IoKind::Write => true,
                IoKind::Read => !options.read_beyond_wp,
                _ => false,
            };
        drop(device);
        // A sequential job continues after where its I/O really went.
        let region = &mut self.regions[index];
        match kind {
            IoKind::Read => region.next_read = relative + size,
            _ => region.next_write = relative + size,
        }
        self.last_end[index] = relative + size;
        let io = self.io(kind, index, relative, size);
        if locked {
            self.zbd_locks.insert(io.id.0, (Arc::clone(zbd), zone));
        }
        match reset {
            None => Some(io),
            Some(zone_relative) => {
                // The reset travels as a discard of the zone's first sector (the simulated
                // device's zone reset, `device/zoned.rs`).
                let reset = self.io(IoKind::Discard, index, zone_relative, SECTOR_SIZE_BYTES);
                self.zbd_locks.insert(reset.id.0, (Arc::clone(zbd), zone));
                self.zbd_pending.push_back(reset);
                self.zbd_pending.push_back(io);
                None
            }
        }
    }

    fn io(&mut self, kind: IoKind, index: usize, relative: u64, size_bytes: u64) -> Io {
        let region = &self.regions[index];
        // Reads are always synchronous; so are O_DIRECT writes (the kernel marks them so).
        // Buffered writes are the host's to classify (write-back is asynchronous).
        let flags = if kind == IoKind::Discard {
            RequestFlags::NONE
        } else if self.config.direct || kind == IoKind::Read {
            RequestFlags::SYNC
        } else {
            RequestFlags::NONE
        };
        let flags =
            if self.config.passthrough { flags.union(RequestFlags::PASSTHROUGH) } else { flags };
        let id = IoId(self.next_id);
        self.next_id += 1;
        Io {
            id,
            kind,
            place: region.place,
            offset_bytes: region.start_bytes + relative,
            size_bytes,
            direct: self.config.direct || kind == IoKind::Discard,
            flags,
        }
    }

    /// A random offset in region `index`, aligned to `blockalign` (default: the smallest
    /// block), drawn from `random_distribution`, through the random map unless `norandommap`.
    /// The file of the next I/O of `size` bytes, as fio's `__get_next_file` picks it
    /// (`file_service_type`, see [`JobIssuer::pick_file`]); counts `size` as served there.
    fn pick_region(&mut self, size: u64) -> usize {
        let files = self.regions.len();
        let index = if files == 1 { 0 } else { self.pick_file() };
        self.regions[index].served_bytes += size;
        self.next_region = (index + 1) % files;
        index
    }

    /// Whether file `index` is done: its length was served this pass. A time-based job's
    /// files never are (fio wraps a file's offsets when time-based, `get_next_seq_offset`,
    /// and restarts its random map).
    fn file_done(&self, index: usize) -> bool {
        let region = &self.regions[index];
        !self.config.time_based && region.served_bytes >= region.length_bytes
    }

    /// fio's `__get_next_file`: the current file while it has I/Os left before a switch
    /// (`sequential`: until it is done); else the next file not done (`roundrobin`), one
    /// drawn uniformly among those not done (`random`), or one drawn from the skewed law,
    /// started again if it was done (fio's `fio_file_reset` for the non-uniform services).
    /// When every file is done a new pass starts (fio's next loop; `io_size` beyond the
    /// files' sizes).
    fn pick_file(&mut self) -> usize {
        let files = self.regions.len();
        let service = self.config.file_service.clone();
        if (0..files).all(|index| self.file_done(index)) {
            self.regions.iter_mut().for_each(|region| region.served_bytes = 0);
        }
        if let Some(current) = self.service.current
            && !self.file_done(current)
        {
            if service == FileService::Sequential {
                return current;
            }
            if self.service.left > 0 {
                self.service.left -= 1;
                return current;
            }
        }
        let not_done_from = |issuer: &Self, start: usize| {
            (0..files).map(|step| (start + step) % files).find(|&i| !issuer.file_done(i))
        };
        let (chosen, per_switch) = match service {
            FileService::RoundRobin(per_switch) => {
                (not_done_from(self, self.next_region).unwrap_or(0), per_switch)
            }
            FileService::Sequential => (not_done_from(self, self.next_region).unwrap_or(0), 1),
            FileService::Random(per_switch) => {
                // fio draws again until the file is not done.
                let mut chosen = None;
                for _ in 0..64 * files {
                    let index = self.service.prng.below(files as u64) as usize;
                    if !self.file_done(index) {
                        chosen = Some(index);
                        break;
                    }
                }
                let chosen = chosen.or_else(|| not_done_from(self, 0)).unwrap_or(0);
                (chosen, per_switch)
            }
            ref skewed => {
                let index = self.service.draw_skewed(skewed, files);
                if self.file_done(index) {
                    self.regions[index].served_bytes = 0;
                }
                (index, 1)
            }
        };
        self.service.current = Some(chosen);
        self.service.left = per_switch - 1;
        chosen
    }

    fn random_offset(&mut self, index: usize, size: u64) -> u64 {
        let align = self.config.align_bytes.unwrap_or_else(|| self.config.block_size.min_bytes());
        let region = &mut self.regions[index];
        let blocks = (region.length_bytes - size) / align + 1;
        let drawn = self.config.distribution.draw(&mut self.prng, self.zipf.as_ref(), blocks);
        if !self.config.random_map {
            return drawn * align;
        }
        let map_blocks = region.length_bytes / align;
        if region.map.is_empty() {
            region.map = vec![0; map_blocks.div_ceil(64) as usize];
        }
        let block = region.next_free(drawn, map_blocks).min(blocks - 1);
        region.mark(block, size.div_ceil(align), map_blocks);
        block * align
    }

    /// The next sequential offset for `kind`, or `None` at the end of a pass that ends the
    /// job. `rw=...:N` skips N bytes after each I/O (backwards when negative, wrapping at the
    /// ends as fio's `get_next_seq_offset`); loops and io_size beyond the region wrap too.
    fn sequential_offset(&mut self, index: usize, kind: IoKind, size: u64) -> Option<u64> {
        let skip = self.config.seq_skip_bytes;
        let region = &mut self.regions[index];
        let length = region.length_bytes;
        if let Some((zone_size, zone_range, zone_skip)) = self.config.zones {
            // fio's strided zones (`io_u.c`): after zonesize bytes, the next zone starts
            // zonerange + zoneskip later, wrapping to the start past the end.
            if region.zone_bytes >= zone_size {
                region.zone_bytes = 0;
                region.zone_base += zone_range + zone_skip;
                if region.zone_base >= length {
                    region.zone_base = 0;
                }
                region.next_read = region.zone_base;
                region.next_write = region.zone_base;
            }
            region.zone_bytes += size;
        }
        let position =
            if kind == IoKind::Read { &mut region.next_read } else { &mut region.next_write };
        if skip < 0 {
            // Backwards: the first I/O at `end - |skip|`, each next one `|skip| - size` before
            // the last; below the start it wraps to the first again. `position` holds the
            // last offset + 1 (0: not started).
            let back = i128::from(skip.unsigned_abs());
            let (length, size) = (i128::from(length), i128::from(size));
            let first = (length - back).max(0);
            let next = if *position == 0 { first } else { i128::from(*position - 1) + size - back };
            let relative = if next < 0 || next + size > length { first } else { next };
            *position = relative as u64 + 1;
            return Some(relative as u64);
        }
        // The job's amount is not done (checked before): a pass that reached the end wraps,
        // as fio's does for io_size beyond the region, loops and holes.
        if *position + size > length {
            *position = 0;
        }
        let relative = *position;
        *position += size + skip as u64;
        Some(relative)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkloadSpec;
    use crate::testing::{devices, drive, parse_error, plan_error};

    fn targets() -> Vec<Target> {
        devices(&[("sda", 1 << 30), ("sdb", 1 << 20)])
    }

    fn plan(text: &str) -> WorkloadPlan {
        WorkloadSpec::parse(text).unwrap().plan(&targets(), &Prng::new(7)).unwrap()
    }

    // Proves a sequential read walks its region in bs steps and stops after size bytes.
    #[test]
    fn sequential_reads_walk_the_region() {
        let log = drive(plan("job:rw=read,bs=64k,size=1m,offset=1m"), Duration::from_micros(100));
        let offsets: Vec<u64> = log.iter().map(|(_, _, io)| io.offset_bytes).collect();
        let expected: Vec<u64> = (0..16).map(|i| (1 << 20) + i * (64 << 10)).collect();
        assert_eq!(offsets, expected);
        assert!(log.iter().all(|(_, _, io)| io.kind == IoKind::Read && io.size_bytes == 64 << 10));
    }

    // Proves random offsets stay inside the region, aligned to bs, and the same seed gives the
    // same offsets while another seed does not.
    #[test]
    fn random_offsets_are_aligned_and_seeded() {
        let text = "job:rw=randread,bs=4k,size=1m,offset=4m,iodepth=8";
        let log = drive(plan(text), Duration::from_micros(100));
        assert_eq!(log.len(), 256);
        for (_, _, io) in &log {
            assert_eq!(io.offset_bytes % 4096, 0);
            assert!(io.offset_bytes >= 4 << 20 && io.offset_bytes + 4096 <= 5 << 20);
        }
        let again = drive(plan(text), Duration::from_micros(100));
        assert_eq!(log, again);
        let other = WorkloadSpec::parse(text).unwrap().plan(&targets(), &Prng::new(8)).unwrap();
        assert_ne!(drive(other, Duration::from_micros(100)), log);
    }

    // Proves strided zones whose size, range or skip is not whole sectors are refused naming
    // the key (each zone would start off a sector: the seeded sweep's seed 104 issued an
    // O_DIRECT write at 8246333568 with zonerange=128), while whole sectors run.
    #[test]
    fn strided_zones_take_whole_sectors() {
        for key in ["zonesize=1000", "zonesize=512k,zonerange=128", "zonesize=512k,zoneskip=100"] {
            let text = format!("job:rw=write,size=1m,{key}");
            let error = WorkloadSpec::parse(&text)
                .and_then(|spec| JobConfig::from_params(&spec.params))
                .unwrap_err()
                .to_string();
            let name = key.rsplit(',').next().unwrap().split('=').next().unwrap();
            assert!(error.contains(name) && error.contains("multiple of 512"), "{error}");
        }
        let log =
            drive(plan("job:rw=write,size=1m,bs=4k,zonesize=64k,zonerange=128k"), Duration::ZERO);
        assert!(log.iter().all(|(_, _, io)| io.offset_bytes % 512 == 0));
    }

    // Proves iodepth bounds the operations in flight and the issuer keeps the device full.
    #[test]
    fn iodepth_is_kept() {
        let log = drive(plan("job:rw=randread,iodepth=4,size=64k"), Duration::from_millis(1));
        let at_zero = log.iter().filter(|(_, at, _)| *at == Instant::ZERO).count();
        assert_eq!(at_zero, 4);
        let sync_engine = drive(
            plan("job:rw=randread,iodepth=4,size=64k,ioengine=psync"),
            Duration::from_millis(1),
        );
        assert_eq!(sync_engine.iter().filter(|(_, at, _)| *at == Instant::ZERO).count(), 1);
    }

    // Proves numjobs makes separate processes and offset_increment spreads their regions.
    #[test]
    fn clones_get_their_own_process_and_region() {
        let plan = plan("job:rw=read,numjobs=3,size=128k,offset_increment=256m");
        assert_eq!(plan.phases[0].issuers.len(), 3);
        let processes: Vec<u32> = plan.phases[0].issuers.iter().map(|i| i.process().0).collect();
        assert_eq!(processes, [1, 2, 3]);
        let log = drive(plan, Duration::from_micros(10));
        for clone in 0..3u64 {
            let first = log.iter().find(|(index, _, _)| *index as u64 == clone).unwrap();
            assert_eq!(first.2.offset_bytes, clone * (256 << 20));
        }
    }

    // Proves thinktime pauses after every completion with a synchronous engine, and with
    // `thinktime_blocks=2,thinktime_blocks_type=issue` after every two issued blocks, the
    // in-flight ones drained first (fio's `handle_thinktime` quiesces), so the depth is 2.
    #[test]
    fn thinktime_pauses_after_each_completion() {
        let text = "job:rw=read,size=16k,thinktime=2ms,iodepth=8,ioengine=psync";
        let log = drive(plan(text), Duration::from_millis(1));
        let times: Vec<u64> = log.iter().map(|(_, at, _)| at.as_nanos() / 1_000_000).collect();
        assert_eq!(times, [0, 3, 6, 9]);
        let text = "job:rw=read,size=24k,thinktime=2ms,iodepth=8,thinktime_blocks=2,\
                    thinktime_blocks_type=issue";
        let log = drive(plan(text), Duration::from_millis(1));
        let times: Vec<u64> = log.iter().map(|(_, at, _)| at.as_nanos() / 1_000_000).collect();
        assert_eq!(times, [0, 0, 3, 3, 6, 6]);
    }

    // Proves io_size sets the amount of I/O apart from the region: 64 KiB of random reads spread
    // over the whole device.
    #[test]
    fn io_size_sets_the_amount_apart_from_the_region() {
        let log = drive(plan("job:rw=randread,io_size=64k,offset=0"), Duration::from_micros(1));
        assert_eq!(log.len(), 16);
        let spread = log.iter().map(|(_, _, io)| io.offset_bytes).max().unwrap();
        assert!(spread > 1 << 28, "random offsets cover the whole 1 GiB device: {spread}");
    }

    // Proves a time-based job without a runtime is refused (issue 14: it never ended), naming
    // the key to set.
    #[test]
    fn a_time_based_job_needs_a_runtime() {
        for text in ["job:time_based=1", "job:time_based=1,runtime=0"] {
            let message = WorkloadSpec::parse(text).unwrap_err().to_string();
            assert_eq!(message, "job: runtime: time_based=1 needs a runtime (e.g. 10s)");
        }
        assert!(WorkloadSpec::parse("job:time_based=1,runtime=1ms").is_ok());
    }

    // Proves runtime caps a time-based job, and the job finishes its in-flight I/O.
    #[test]
    fn runtime_caps_a_time_based_job() {
        let log =
            drive(plan("job:rw=read,size=8k,time_based=1,runtime=10ms"), Duration::from_millis(1));
        assert_eq!(log.len(), 10);
        assert_eq!(log.last().unwrap().2.offset_bytes, 4096, "it looped over the 8k region");
    }

    // Proves rwmixread sets the read share of a mixed job.
    #[test]
    fn rwmixread_sets_the_read_share() {
        let log =
            drive(plan("job:rw=randrw,rwmixread=70,size=40m,bs=4k"), Duration::from_micros(1));
        let reads = log.iter().filter(|(_, _, io)| io.kind == IoKind::Read).count() as f64;
        let share = reads / log.len() as f64;
        assert!((share - 0.7).abs() < 0.02, "{share}");
        let writes = drive(plan("job:rw=randrw,rwmixwrite=100,size=64k"), Duration::from_micros(1));
        assert!(writes.iter().all(|(_, _, io)| io.kind == IoKind::Write));
    }

    // Proves bsrange draws multiples of its minimum within its bounds.
    #[test]
    fn bsrange_draws_multiples_of_its_minimum() {
        let log = drive(plan("job:rw=randread,bsrange=4k-16k,size=4m"), Duration::from_micros(1));
        let sizes: std::collections::BTreeSet<u64> =
            log.iter().map(|(_, _, io)| io.size_bytes).collect();
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [4096, 8192, 12288, 16384]);
    }

    // Proves priorities follow prioclass and prio as fio applies them.
    #[test]
    fn priorities_follow_prioclass_and_prio() {
        let priority = |text: &str| plan(text).phases[0].issuers[0].priority();
        assert_eq!(priority("job"), IoPriority::DEFAULT);
        assert_eq!(priority("job:prio=6"), IoPriority::best_effort(6).unwrap());
        assert_eq!(priority("job:prioclass=1,prio=2"), IoPriority::realtime(2).unwrap());
        assert_eq!(priority("job:prioclass=3"), IoPriority::idle());
        let per_clone = plan("job:numjobs=2,prio=0:7");
        let levels: Vec<IoPriority> =
            per_clone.phases[0].issuers.iter().map(|issuer| issuer.priority()).collect();
        assert_eq!(
            levels,
            [IoPriority::best_effort(0).unwrap(), IoPriority::best_effort(7).unwrap()]
        );
        let mixed = plan("job:numjobs=2,prioclass=1:3,prio=2");
        assert_eq!(mixed.phases[0].issuers[0].priority(), IoPriority::realtime(2).unwrap());
        assert_eq!(mixed.phases[0].issuers[1].priority(), IoPriority::idle());
        assert!(parse_error("job:numjobs=3,prio=0:7").contains("one per clone"));
        assert!(parse_error("job:prio=8").contains("0..=7"));
    }

    // Proves filename picks devices and round-robins between several.
    #[test]
    fn filename_picks_devices() {
        let log = drive(plan("job:rw=read,filename=sdb,size=8k"), Duration::from_micros(1));
        assert!(log.iter().all(|(_, _, io)| io.place == Place::Device(1)));
        let both = drive(plan("job:rw=read,filename=sda:sdb,size=16k"), Duration::from_micros(1));
        let places: Vec<Place> = both.iter().map(|(_, _, io)| io.place).collect();
        assert_eq!(places, [0, 1, 0, 1].map(Place::Device));
    }

    // Proves bad input names the key and what is accepted, at parse or at plan time.
    #[test]
    fn bad_input_names_the_key() {
        assert!(
            parse_error("job:iodepth=0")
                .contains("iodepth=0 is not valid (expected an integer 1..=65536)")
        );
        assert!(parse_error("job:rwmixread=101").contains("rwmixread=101"));
        assert!(parse_error("job:rw=randomread").contains("expected one of read, write"));
        assert!(parse_error("job:bs=1000").contains("bs: 1000 bytes is not a multiple of 512"));
        assert!(parse_error("job:bsrange=16k-4k").contains("bsrange"));
        assert!(parse_error("job:bssplit=4k/30:8k/30").contains("make 60%, not 100%"));
        assert!(parse_error("job:bssplit=4k/70:8k/50:16k/").contains("not 100%"));
        assert!(parse_error("job:bssplit=4k/60:1000/40").contains("not a multiple of 512"));
        assert!(parse_error("job:rwmixread=60,rwmixwrite=30").contains("must be 100"));
        assert!(parse_error("job:prioclass=0,prio=3").contains("prio"));
        // `fio:` takes a job file (fio_run), so a `job` key list there is a missing file.
        assert!(parse_error("fio:rw=read").contains("cannot open rw=read"));
        let plan_error = |text: &str| plan_error(text, &targets());
        assert!(plan_error("job:filename=sdc").contains("no device `sdc` (accepted: sda, sdb)"));
        assert!(plan_error("job:filename=sdb,bs=2m").contains("bs: a block is larger"));
        assert!(plan_error("job:size=2g").contains("size:"));
        assert!(plan_error("job:offset=2g").contains("offset:"));
    }

    // Proves fio's two steady state criteria on a window of samples 100, 110, 120, 130 IOPS
    // (mean 115): the largest deviation is 15 (13 % of the mean), so `iops:10%` does not hold
    // and `iops:14%` does; the least-squares slope is 10 per interval (8.7 % of the mean), so
    // `iops_slope:10%` holds and `iops_slope:8%` does not; absolute `iops:16` holds. fio's
    // default ss_dur (0) disables the check.
    #[test]
    fn steady_state_criteria_are_fios() {
        let holds = |criterion: &str| {
            let text = format!("job:steadystate={criterion},steadystate_duration=4s");
            let params = WorkloadSpec::parse(&text).unwrap().params;
            let spec = SteadySpec::from_params(&params).unwrap().unwrap();
            let mut state = SteadyState::new(spec);
            state.window.extend([100.0, 110.0, 120.0, 130.0]);
            state.holds()
        };
        assert!(!holds("iops:10%") && holds("iops:14%"));
        assert!(holds("iops_slope:10%") && !holds("iops_slope:8%"));
        assert!(holds("iops:16") && !holds("iops:14"));
        let error = |text: &str| parse_error(&format!("job:{text}"));
        assert!(error("steadystate=lat:1%,steadystate_duration=4s").contains("metric"));
        let short = "steadystate=iops:1%,steadystate_duration=100ms";
        assert!(error(short).contains("shorter than one ss_interval"));
        let params = WorkloadSpec::parse("job:steadystate=iops:1%").unwrap().params;
        assert_eq!(SteadySpec::from_params(&params).unwrap(), None, "ss_dur=0 disables it");
    }

    // Proves fio's CPU list syntax: singles and ranges in any order come out ascending without
    // duplicates, `,` and `:` both separate pieces, and each bad input is refused with what is
    // wrong and the accepted syntax (where fio's atoi would read `x` as CPU 0).
    #[test]
    fn cpu_lists_parse_as_fio_writes_them() {
        assert_eq!(parse_cpu_list("0-3,6,8-9").unwrap(), [0, 1, 2, 3, 6, 8, 9]);
        assert_eq!(parse_cpu_list(" 6:0-2:1 , 2 ").unwrap(), [0, 1, 2, 6]);
        assert_eq!(parse_cpu_list("5-5").unwrap(), [5]);
        for (text, why) in [
            ("3-1", "`3-1` is a reversed range"),
            ("x", "`x` is not a CPU number"),
            ("1-", "`1-` is not a CPU number"),
            ("1,,2", "empty piece"),
            ("2:", "empty piece"),
            ("1024", "beyond fio's 1024 CPUs"),
        ] {
            let error = parse_cpu_list(text).unwrap_err();
            assert!(
                error.contains(why) && error.contains("accepted: CPU numbers"),
                "{text}: {error}"
            );
        }
    }

    // Proves the `job` keys give the issuer's profile (each clone its CPU under split, the
    // engine from ioengine), that a bad list is an error naming the key, and that an io_uring
    // flag on another engine is refused as fio refuses it.
    #[test]
    fn job_keys_give_the_cpu_profile() {
        let split = plan(
            "job:numjobs=3,size=64k,cpus_allowed=2:4-5,cpus_allowed_policy=split,\
             ioengine=io_uring,iodepth=8,iodepth_batch_submit=4,fixedbufs=1",
        );
        let cpus: Vec<crate::IssuerCpu> = split.phases[0].issuers.iter().map(|i| i.cpu()).collect();
        let lists: Vec<Vec<u32>> = cpus.iter().map(|cpu| cpu.cpus_allowed.clone()).collect();
        assert_eq!(lists, [vec![2], vec![4], vec![5]]);
        assert!(cpus.iter().all(|cpu| cpu.engine == crate::SubmitEngine::IoUring
            && cpu.batch_submit == 4
            && cpu.fixed_buffers
            && !cpu.registered_files));
        let engines = [
            ("libaio", crate::SubmitEngine::Libaio),
            ("posixaio", crate::SubmitEngine::Posixaio),
            ("pvsync", crate::SubmitEngine::Sync),
            ("io_uring_cmd", crate::SubmitEngine::Passthrough),
            ("null", crate::SubmitEngine::Null),
        ];
        for (engine, expected) in engines {
            let filename = if engine == "io_uring_cmd" { ",filename=sda" } else { "" };
            let one = plan(&format!("job:size=64k,ioengine={engine}{filename}"));
            assert_eq!(one.phases[0].issuers[0].cpu().engine, expected, "{engine}");
        }
        let error = parse_error("job:cpus_allowed=3-1");
        assert!(error.contains("cpus_allowed") && error.contains("reversed range"), "{error}");
        let error = parse_error("job:ioengine=libaio,fixedbufs=1");
        assert!(error.contains("fixedbufs") && error.contains("Bad option"), "{error}");
        let error = parse_error("job:ioengine=io_uring,sqthread_poll_cpu=x");
        assert!(error.contains("sqthread_poll_cpu") && error.contains("accepted"), "{error}");
    }

    // Proves the CPU keys stay out of a run's resolved settings (the report's workload
    // settings) unless given, so existing outputs are unchanged, and show when given.
    #[test]
    fn cpu_keys_resolve_only_when_given() {
        let cpu_keys = [
            "cpus_allowed",
            "cpus_allowed_policy",
            "iodepth_batch_submit",
            "fixedbufs",
            "registerfiles",
            "hipri",
            "sqthread_poll",
            "sqthread_poll_cpu",
        ];
        let plain = WorkloadSpec::parse("job:rw=read").unwrap().resolved();
        assert!(plain.iter().all(|(key, _)| !cpu_keys.contains(key)), "{plain:?}");
        let given = WorkloadSpec::parse("job:hipri=1,iodepth_batch_submit=0").unwrap().resolved();
        assert!(given.contains(&("hipri", "1".to_owned())), "{given:?}");
        assert!(given.contains(&("iodepth_batch_submit", "0".to_owned())), "{given:?}");
    }
}
