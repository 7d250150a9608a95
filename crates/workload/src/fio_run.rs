//! `fio:FILE`: a fio job file run in the simulator (issue 17; `/work/shared/specs/fio-compat.md`
//! §2.1 option catalog and defaults, §1.7 last-wins, §8).
//!
//! Each runnable job becomes a [`job`](crate::job) workload: its options are mapped onto the
//! `job` keys that carry the same meaning, with fio's defaults (§2.1) for what the file leaves
//! unset — `ioengine=psync` (depth 1), `direct=0` (buffered) and the random map
//! (`norandommap=0`), where `job`'s own defaults differ. Jobs run in groups as fio runs them:
//! every job of a group at once (one phase, the issuers of all its jobs together); a job with
//! `stonewall`/`wait_for_previous` starts a new phase, run after the previous one finished;
//! `new_group` starts a new reporting group ([`FioRunJob::group`]) without waiting;
//! `wait_for=NAME` starts after NAME (see [`FioRun::plan`]).
//!
//! Mapped (see [`map_option`]): the rw family with `:N` and trims (`trim`, `randtrim`,
//! `trimwrite` as discards), bs/bsrange/bssplit (one for reads and one for writes too)/ba, size/io_size/filesize/offset/
//! nrfiles/filename_format/file_service_type/openfiles (not below nrfiles)/
//! offset_increment, iodepth, numjobs, rwmix*, percentage_random, random_distribution (random,
//! zipf, pareto, normal, zoned), norandommap, runtime/time_based/startdelay (with ranges)/
//! ramp_time, thinktime with thinktime_blocks/_blocks_type/_spin, rate/rate_iops/rate_min/
//! rate_cycle/rate_process, loops, number_ios, fsync/fdatasync/end_fsync/fsync_on_close,
//! verify/do_verify/verify_backlog, cmdprio_percentage/cmdprio_bssplit/cmdprio_class/cmdprio,
//! zonemode=strided
//! with zonesize/zonerange/zoneskip, zonemode=zbd with zonesize/max_open_zones/
//! zone_reset_threshold/zone_reset_frequency/read_beyond_wp on a zoned device (`crate::zbd`,
//! whose "Deviations from fio" apply), exitall/exit_what, direct/buffered, prio/prioclass, the
//! block engines `job` knows, the passthrough engines (sg with sg_write_mode, libzbc,
//! io_uring_cmd, xnvme), the null engine, flow/flow_id/flow_sleep, latency_target/latency_window/
//! latency_percentile/latency_run, steadystate with ss_dur/ss_ramp/ss_interval,
//! random_generator, numa_cpu_nodes/numa_mem_policy on node 0, allow_file_create, fallocate,
//! create_serialize/create_on_open/create_fsync/create_only (when files are set up:
//! [`FioRunJob::places`]), file_append ([`FioRunJob::appended`]), pre_read
//! ([`FioRunJob::pre_read_issuers`]), the issuer's CPU profile ([`crate::IssuerCpu`], for the
//! blk-mq host's CPU model, issue 18): cpus_allowed/cpumask with cpus_allowed_policy (split
//! counted over fio's thread numbers, [`FioRun::first_thread`]), iodepth_batch(_submit),
//! hipri, fixedbufs, registerfiles, sqthread_poll/sqthread_poll_cpu (refused, as fio refuses
//! them, on an engine without them),
//! and a full filesystem's ENOSPC with fill_device/continue_on_error/ignore_error/error_dump
//! (fio's backend.c `io_u_sync_complete`, td_error.c: `job` implements the rules).
//! `read_iolog` with `replay_*` and `write_iolog` are `crate::iolog`'s (fio-compat.md §6; its
//! "Deviations from fio" apply): a replaying job's clones are `ReplayIssuer`s, a logging
//! job's clones are wrapped in `IologWriter`s.
//!
//! Options that change only fio's reports and logs (`write_bw_log`, `write_lat_log`,
//! `write_iops_log`, `log_avg_msec`, `percentile_list`, `per_job_logs`, `log_offset`,
//! `log_prio`, `gtod_reduce`, ... — the `REPORTING` list) are carried on the planned job in
//! [`FioRunJob::reporting`] for the report writers. An option the simulator cannot honour is
//! refused with its file, line and name; it is never silently ignored.
//!
//! `elevator sim FILE.fio --max-size SIZE --max-runtime TIME` caps every job
//! ([`FioRun::capped`]), so fio's examples, written for whole disks, run in seconds.
//!
//! # Deviations from fio
//!
//! * ENOSPC is the one error the simulator raises (a write into a full filesystem); a write
//!   that finds part of its blocks free allocates those and fails whole (fio's would be a short
//!   write). `ignore_error` knows the names EIO, ENOSPC, EILSEQ and EDQUOT (fio's `str2error`
//!   knows every errno name) and numbers. fio lets a `continue_on_error` written after
//!   `ignore_error` clear the bits the lists set; here the lists always add theirs.
//! * `fallocate=native`/`posix`/`keep` (fio's default, native) preallocate a writing job's file
//!   by laying it out as a reading job's is; fio's fallocate leaves unwritten extents, which
//!   only reads of never-written blocks would tell apart.
//! * `filename` names a simulated device (`sdb` or `/dev/sdb`) when every name is one;
//!   otherwise, and with `directory`, the job's files are regular files on the first
//!   device's filesystem, laid out before the run (fio lays them out by writing them before
//!   the job starts), each of its share of `size` (fio's split: the first files a block
//!   larger while blocks are left over) or of `filesize`; several directories are refused. A
//!   job with neither `filename` nor `directory` gets fio's `NAME.CLONE.FILE` files, `nrfiles`
//!   per clone, or `filename_format`'s names (fio's working directory is the first device's
//!   filesystem here); `$clientuid` (a fio client's address) is refused.
//! * A `filesize` range is drawn per file from the run's seed (a stream per job and clone),
//!   with fio's formula (`lo + (hi - lo) · u`, cut to a multiple of the smallest block) but
//!   not fio's generator, so the sizes are fio's in law, not in value. Clones sharing a file
//!   name (a `filename_format` without `$jobnum`) share the file at the first clone's size.
//! * `file_service_type`'s skewed laws (`zipf`, `pareto`, `normal`/`gauss`) draw over `files
//!   << 10` ranks unhashed, as fio's file service does; zipf and pareto rotate the ranks by a
//!   seeded offset (fio's `rand_off`, a draw of its own generator), so which file is hottest
//!   depends on the seed as in fio but is not fio's file; their `:c` centre is refused. `random`
//!   draws with our generator. A file is done once its size was served (fio: once
//!   `fill_io_u` finds nothing left in it), which for a random pattern with `norandommap`
//!   also ends a file that fio would keep serving until the job's amount is done.
//! * `file_service_type=zipf:θ` with θ ≤ 0 and a `:0` switch count are refused; fio takes
//!   any θ but 1 and, with `:0`, never switches file (its count of I/Os left wraps).
//! * `openfiles` below the job's file count is refused: fio then keeps that many open and
//!   opens another only when one is done and closed, which changes which file its service
//!   picks (`get_next_file_rr` returns EBUSY); every file stays open here.
//! * File setup takes no simulated time: fio writes a file out before its job (or before all
//!   jobs, `create_serialize=1`) and `create_fsync` syncs it; here layouts are allocations
//!   made before the run, so `create_fsync` changes nothing. With `create_serialize=0` a job
//!   with `size` still has its file laid out before the run (fio lays it out as the job starts,
//!   after the earlier groups, so its blocks may land after theirs); a job without `size`
//!   takes each file's size when each clone starts — its layout plus the earlier jobs'
//!   completed writes — where fio's job thread measures it once. A file holding less than a
//!   block then gives the clone nothing to do, where fio fails the job ("you need to specify
//!   size="). Such a job's region is planned over the whole filesystem and only cut at its
//!   start, so an `offset` past the end of the file is not refused at plan time.
//! * `create_on_open=1`: a read of a block nothing wrote reads nothing and completes at once,
//!   counted with its size in the simulator's figures; fio's async engines count it as a read
//!   of 0 bytes. fio's synchronous engines fail it with EIO, so `create_on_open=1` with reads
//!   on a synchronous engine is refused.
//! * `create_only=1`: the job's files are set up as they would be for its I/O (laid out,
//!   preallocated or left to the writes, see above) and its clones do no I/O; they stay in the
//!   run, so every output lists the job with zero I/O, where fio's normal (text) output leaves
//!   a job without I/O out (stat.c `show_thread_status_normal`) and only its json/terse list
//!   it.
//! * `file_append=1` is honoured for a job whose files are set up before the run
//!   (`create_serialize=1`, without `fill_device`, `ramp_time`, `nrfiles`/`filesize` or
//!   `read_iolog`): its region starts at the size its file has after the earlier jobs' setup
//!   (fio's `real_file_size`, the largest extent a job gave the file, not the earlier jobs'
//!   writes), `offset` and `offset_increment` not counting, as fio's `get_start_offset`
//!   returns first; the file is laid out (or preallocated) to that size plus `size`. fio
//!   would size each file at its own size; a job whose files differ in size, and the cases
//!   above (where fio takes a file's size as its job starts), are refused, as is
//!   `ioengine=null` (no file to size). On a device it changes nothing, as in fio.
//! * `pre_read=1`: the job's clones read their regions sequentially through the page cache
//!   (buffered, one read at a time, blocks of the job's largest read size) in a phase of its
//!   own before the group's (`JOB (pre_read)`), so its reads stay out of the job's figures as
//!   fio's do (fio reads before its job's clock starts); the other jobs of the group wait for
//!   it, where fio starts them meanwhile. A region that is not a multiple of the block leaves
//!   its tail unread (fio reads the tail short). Refused with `direct=1` (fio's O_DIRECT
//!   pre-read from an unaligned buffer fails the job), `ioengine=null` (fio's fails: no
//!   file), the passthrough engines and `read_iolog`.
//! * A group's jobs all start at once; fio starts them within a few milliseconds of each other.
//! * `randrepeat=0` asks fio for a clock-seeded sequence; a simulation is always seeded from
//!   the run's seed, so the sequence repeats whatever `randrepeat` says.
//! * `ramp_time` runs as a phase of its own before the measured phase (named `JOB (ramp)`):
//!   the device drains between the two, and the jobs' positions and random maps restart, where
//!   fio keeps running and only resets its statistics. Every job of a group must have the same
//!   ramp.
//! * `wait_for=NAME` waits for NAME's whole group; a NAME that shares its group with other
//!   jobs is refused rather than waited for alone.
//! * `exitall` stops the rest of the job's phase: fio's `exit_what` (group, stonewall set, all
//!   running jobs) are the same set of jobs here, since a phase is all three.
//! * `verify` reads back every block written, after the writes (or after every
//!   `verify_backlog` blocks), in the order written; the check itself is trivially true in a
//!   simulator, which moves no data, so `verify_pattern`, `verify_fatal`, `verify_dump` and the
//!   buffer and dedupe options (the `DATA_ONLY` list) change nothing.
//! * `fdatasync` is a sync like `fsync` (the simulator's sync has one kind), and
//!   `fsync_on_close` is `end_fsync` (files are closed once, at the end).
//! * `fsync=N` (`fdatasync=N`) syncs after every N-th *write* only, as fio 3.38 does (commit
//!   704a8cfe); fio up to 3.37, whose output layout we otherwise follow (3.36), also syncs
//!   after a read that follows an N-th write, so on a mixed job fio 3.33 issued 133 syncs
//!   where this issues 62 (`randrw`, `fsync=16`, measured on a loop device).
//! * `thinktime_spin` is part of the pause, as in fio; the simulator models no CPU, so busy
//!   and sleeping pauses look the same to the device. `io_submit_mode=offload` likewise
//!   changes no I/O timing.
//! * `thinktime` with `thinktime_blocks_type=complete` counts completions as they arrive; fio
//!   counts them as it reaps them (when its queue is full, for async engines).
//! * The passthrough engines' commands are the reads and writes they carry, flagged
//!   passthrough (past the scheduler, unmerged). `sg_write_mode=verify*` (SCSI VERIFY) is a
//!   read of the range — the device reads the medium; BYTCHK's data sent to the device is not
//!   modelled — and its comparison always passes, since no data moves: fio reports the
//!   miscompare of a block that differs (`sg_verify-fail.fio`). WRITE SAME writes the range.
//!   `write_and_verify` is refused.
//! * `ioengine=libzbc` is a passthrough engine like sg: one command at a time (fio's libzbc
//!   engine is `FIO_SYNCIO`, each libzbc call one `SG_IO`), on a zoned device only. Its zone
//!   resets are passthrough commands too (fio's `reset_wp` hook: libzbc's RESET WRITE
//!   POINTER, not the `BLKRESETZONE` ioctl), so they also bypass the scheduler. libzbc's
//!   SCSI/ATA backends would not open a zoned NVMe device; the simulated devices carry no
//!   transport, so libzbc on `zns-2020` is accepted.
//! * Passthrough engines with `zonemode=zbd` (libzbc, io_uring_cmd, xnvme) bypass the block
//!   layer's zone write ordering, in Linux and here: fio's zone locks and the job's
//!   `iodepth` are all that keep a zone's writes in order, and a write that reaches the device
//!   off its zone's write pointer fails there (`zone_write_errors`). Like fio and the kernel,
//!   a zoned passthrough job with `iodepth` > 1 is not refused. The simulated devices take
//!   commands in the order they are sent, so such a job's writes do not fail here, where a
//!   real NVMe controller may reorder them (why uring-cmd-zoned.fio asks for QD1).
//! * io_uring's CPU-side options (`sqthread_poll`, `sqthread_poll_cpu`, `registerfiles`,
//!   `fixedbufs`, `hipri`), `iodepth_batch_submit` and the CPU affinity (`cpus_allowed`,
//!   `cpumask`, `cpus_allowed_policy`) change no I/O order or device timing here; they are
//!   the issuer's CPU profile, which only the blk-mq host's CPU model charges and places by.
//!   `nonvectored` changes nothing. `random_generator=tausworthe*` changes nothing; `lfsr` is
//!   the random map (each block once per pass, fio's guarantee), in another order.
//! * `iodepth_batch_submit` does not hold I/Os back in the issuer: each is submitted as it is
//!   formed, and the batch is [`crate::IssuerCpu::batch_submit`], for the host to group into
//!   system calls and plugs (blk-mq-host.md §2.2). Until the blk-mq host does, a batch
//!   reaches the device one I/O at a time, where fio's reaches it together.
//! * `cpus_allowed` is parsed strictly: fio's `atoi` parser reads `x` as CPU 0, a reversed
//!   range `3-1` as no CPU, and stops at an empty piece; each is refused here. A `cpumask`
//!   with a bit above 31 (fio reads 32 bits) or of 0 (fio's `sched_setaffinity` fails) is
//!   refused. A CPU the host lacks is refused by the simulator, which knows the host.
//! * `sqthread_poll_cpu` without `sqthread_poll` is accepted and changes nothing, as in fio.
//! * A `create_only` clone reports its job's CPU profile though it does no I/O; a `pre_read`
//!   runs on its job's clones' CPUs, as fio's job thread pre-reads after setting affinity.
//! * `numa_cpu_nodes`/`numa_mem_policy` are honoured for node 0, the simulated host's only
//!   node; another node is refused.
//! * `flow`'s counters are shared by the jobs of one phase (fio shares them among all jobs
//!   running with the flow_id, the same set here); a job held back without `flow_sleep`
//!   retries at its next completion, or after 1 µs (fio spins on a CPU).
//! * `steadystate` with `group_reporting` is judged over the job's clones, not over the
//!   whole reporting group when it holds other jobs.
//! * `latency_target`'s final window is not measured apart: fio resets its statistics for
//!   it, the simulator's figures cover the whole search. A failure at depth 1 with
//!   `latency_percentile=100` (fio's ETIMEDOUT) ends the clone and counts
//!   `latency_target_failures`.
//! * zipf, pareto and normal scatter their ranks with a 64-bit hash of our own, standing for
//!   fio's `__hash_u64` (so the hot blocks are fio's in share, not in place); normal draws
//!   with Box-Muller; the `:c` hot-spot centre is refused.

use elevator_core::{Duration, ParamError, Prng, units};

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::fio::{FioJob, FioJobFile, FioValue, Location};
use crate::job::{GroupExit, JobConfig, SharedFlow};
use crate::{FileSpec, PhasePlan, Place, Target, WorkloadPlan, WorkloadSpec};

/// What a job file's job asks of fio's reports and logs, for the report writers: the options
/// that change only fio's output, as written (see [`WorkloadSpec::fio_reporting`]).
#[derive(Clone, Debug, PartialEq)]
pub struct FioReporting {
    /// The job's name.
    pub job: String,
    /// Its reporting group (fio's `groupid`): `stonewall` and `new_group` start a new one.
    pub group: u32,
    /// `write_bw_log`, `log_avg_msec`, `percentile_list`, `per_job_logs`, ... in file order
    /// (the last occurrence of a name wins, as in fio).
    pub options: Vec<(&'static str, FioValue)>,
}

/// One job of the file, as a `job` workload.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FioRunJob {
    /// fio's job name.
    pub(crate) name: String,
    /// Whether it waits for every earlier job (`stonewall`, `wait_for_previous`): a new phase.
    pub(crate) new_group: bool,
    /// Its reporting group (fio's `groupid`): `stonewall` and `new_group` start a new one;
    /// `new_group` alone does not wait (fio-compat.md §2.1 "Jobs and groups"). For the report
    /// writers.
    pub(crate) group: u32,
    /// `exitall`: when it finishes, the rest of its phase stops (fio's `exit_what`: the group,
    /// the stonewall set and all running jobs are one phase here).
    pub(crate) exitall: bool,
    /// Its mapped workload.
    pub(crate) spec: WorkloadSpec,
    /// Where its section starts, for errors found when it is planned.
    pub(crate) at: Location,
    /// `filename`'s names as written (devices or regular files), and where.
    pub(crate) filenames: Option<(Vec<String>, Location)>,
    /// `directory`, where fio puts the job's regular files.
    pub(crate) directory: Option<String>,
    /// `size`: a regular file's size (fio lays files out at this size first).
    pub(crate) size_bytes: Option<u64>,
    /// `numjobs`.
    pub(crate) clones: u32,
    /// `nrfiles` (default 1): files per clone when `filename` names none.
    pub(crate) nrfiles: u32,
    /// `filesize`: each file's size, fixed (`lo == hi`) or drawn per file in `lo..hi`.
    pub(crate) filesize: Option<(u64, u64)>,
    /// `filename_format` (fio's default `$jobname.$jobnum.$filenum`).
    pub(crate) filename_format: Option<String>,
    /// Options that change only fio's reports and logs (`write_bw_log`, `log_avg_msec`,
    /// `percentile_list`, `per_job_logs`, ...), as written, in file order: for the report
    /// writers (fio-compat.md §4). They do not change the simulated I/O.
    pub(crate) reporting: Vec<(&'static str, FioValue)>,
    /// `wait_for`: the earlier job this one starts after.
    pub(crate) wait_for: Option<(String, Location)>,
    /// `ramp_time`: I/O done before measuring, run as a phase of its own.
    pub(crate) ramp: Option<Duration>,
    /// `allow_file_create` (default 1): with 0, fio refuses a job whose files do not exist.
    pub(crate) allow_file_create: bool,
    /// `fill_device`: its file is not laid out (fio writes it until ENOSPC) and, without
    /// `size`, spans the filesystem (fio's `size=-1`, init.c).
    pub(crate) fill_device: bool,
    /// `fallocate` allocates a writing job's file before it runs (fio's default, `native`;
    /// `posix`, `keep`); `none` and `truncate` leave it to the writes.
    pub(crate) preallocate: bool,
    /// `create_serialize` (default 1): its files are set up before any job starts, in job
    /// order (fio's `run_threads`); with 0 the job sets them up as it starts (`thread_main`),
    /// so a file without `size` has the size earlier jobs left it.
    pub(crate) create_serialize: bool,
    /// `create_on_open` (default 0): its files are not laid out; the job's open creates each
    /// empty (`O_CREAT`, filesetup.c `file_open`) and its extent is `size` (fio sets
    /// `real_file_size` to it): writes allocate, reads of what nothing wrote read nothing.
    pub(crate) create_on_open: bool,
    /// `read_iolog`: the job replays a log instead of its own pattern (`crate::iolog`).
    pub(crate) replay: Option<crate::iolog::Replay>,
    /// `write_iolog`: the path its clones log their I/O to, and where it was written.
    pub(crate) write_iolog: Option<(String, Location)>,
    /// `create_only`: the job sets its files up and does no I/O (fio's `setup_files` marks
    /// the job done, filesetup.c; `keep_running` then ends it before its first I/O).
    pub(crate) create_only: bool,
    /// `file_append`, where it was written: a regular file's region starts at the file's size
    /// (fio's filesetup.c `get_start_offset` returns `real_file_size`), so the job's writes
    /// extend it; no effect on a device (fio: "ignored on non-regular files").
    pub(crate) file_append: Option<Location>,
    /// `pre_read`: before its I/O, each clone reads its region of each file through the page
    /// cache (fio's filesetup.c `pre_read_files`), in a phase of its own ([`FioRun::plan`]).
    pub(crate) pre_read: bool,
}

/// A job file ready to plan.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FioRun {
    /// The file as given.
    pub(crate) path: String,
    /// Its jobs, in order.
    pub(crate) jobs: Vec<FioRunJob>,
}

fn refuse(at: &Location, problem: String) -> ParamError {
    ParamError::Impossible { component: format!("fio {at}"), key: "option", problem }
}

/// Options that change only fio's own reports and logs, carried on the planned job
/// ([`FioRunJob::reporting`]) for the report writers (fio-compat.md §2.1 "Logging and
/// reporting", §4): they do not change the I/O.
const REPORTING: &[&str] = &[
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "log_hist_msec",
    "log_hist_coarseness",
    "log_max_value",
    "log_window_value",
    "per_job_logs",
    "log_offset",
    "log_prio",
    "log_issue_time",
    "percentile_list",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "significant_figures",
    "unified_rw_reporting",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "gtod_reduce",
    "bwavgtime",
    "iopsavgtime",
    "disk_util",
    "group_reporting",
    // What fio prints about each failed I/O.
    "error_dump",
    "description",
    "name",
    "stats",
];

/// Options that change how fio checks or fills data, not which I/O it does: the simulator
/// moves no data, so nothing is checked (fio-compat.md §2.1 "Trim, verify, buffers": N).
const DATA_ONLY: &[&str] = &[
    "verify_pattern",
    "verify_interval",
    "verify_offset",
    "verify_fatal",
    "verify_dump",
    "verify_async",
    "zero_buffers",
    "refill_buffers",
    "scramble_buffers",
    "buffer_pattern",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    "dedupe_global",
];

/// What `job` keys (and values) an fio option becomes; empty for an option with no effect
/// on the I/O. Errors name the option; the caller adds where it was written.
fn map_option(name: &str, value: &FioValue) -> Result<Vec<(&'static str, String)>, String> {
    let not_honoured = || {
        Err(format!(
            "`{name}={value}` is not honoured by the simulator, so the job cannot run as fio would run it"
        ))
    };
    let int = |value: &FioValue| match value {
        FioValue::Int(n) => Some(*n),
        FioValue::Float(x) if x.fract() == 0.0 && *x >= 0.0 => Some(*x as u64),
        _ => None,
    };
    // One value for both directions, or the same for reads and writes (and trims, if given).
    let single = |value: &FioValue| -> Option<FioValue> {
        match value {
            FioValue::PerDirection(parts) => {
                let given: Vec<&FioValue> = parts.iter().take(3).flatten().collect();
                match given.as_slice() {
                    [one] if parts.len() == 1 => Some((*one).clone()),
                    [first, rest @ ..]
                        if parts.iter().take(3).all(Option::is_some)
                            && rest.iter().all(|other| other == first) =>
                    {
                        Some((*first).clone())
                    }
                    [read, write] if read == write => Some((*read).clone()),
                    _ => None,
                }
            }
            other => Some(other.clone()),
        }
    };
    let time = |value: &FioValue| match value {
        FioValue::TimeNs(ns) => Some(Duration::from_nanos(*ns).to_string()),
        _ => None,
    };
    let flag = |value: &FioValue| match value {
        FioValue::Bool(on) => Some(u8::from(*on).to_string()),
        FioValue::Int(n) if *n <= 1 => Some(n.to_string()),
        _ => None,
    };
    let one = |key: &'static str, text: Option<String>| match text {
        Some(text) => Ok(vec![(key, text)]),
        None => not_honoured(),
    };
    if REPORTING.contains(&name) || DATA_ONLY.contains(&name) {
        return Ok(Vec::new());
    }
    match name {
        // Ordering (handled by the caller), and options whose effect the simulator has by
        // construction: fio's `thread` (threads or processes) and the tiobench profile's
        // `threads` change no I/O; `randrepeat` asks for a repeatable sequence, which a
        // simulation always is (seeded from the run's seed).
        "stonewall" | "wait_for_previous" | "new_group" | "wait_for" | "thread" | "threads"
        | "exitall" | "exit_what" | "randrepeat" => Ok(Vec::new()),
        "rw" => match value {
            FioValue::Choice { value: rw, suffix }
                if matches!(
                    rw.as_str(),
                    "read"
                        | "write"
                        | "randread"
                        | "randwrite"
                        | "rw"
                        | "readwrite"
                        | "randrw"
                        | "trim"
                        | "randtrim"
                        | "trimwrite"
                ) =>
            {
                let mut keys = vec![("rw", rw.clone())];
                if let Some(step) = suffix {
                    keys.push(("rw_step", step.trim().to_owned()));
                }
                Ok(keys)
            }
            _ => not_honoured(),
        },
        "bs" => one("bs", single(value).as_ref().and_then(int).map(|b| b.to_string())),
        "ba" => one("blockalign", single(value).as_ref().and_then(int).map(|b| b.to_string())),
        "bssplit" => {
            let text = |entries: &[(u64, f64)]| {
                let entries: Vec<String> =
                    entries.iter().map(|(bytes, percent)| format!("{bytes}/{percent}")).collect();
                entries.join(":")
            };
            match (single(value), value) {
                (Some(FioValue::Split(entries)), _) => Ok(vec![("bssplit", text(&entries))]),
                // Reads and writes differ (trims, if given, as the writes: `job` trims none
                // of a mixed pattern).
                (None, FioValue::PerDirection(parts)) => match parts.as_slice() {
                    [Some(FioValue::Split(reads)), Some(FioValue::Split(writes)), rest @ ..]
                        if rest
                            .iter()
                            .all(|trim| trim.is_none() || trim.as_ref() == parts[1].as_ref()) =>
                    {
                        Ok(vec![("bssplit", text(reads)), ("bssplit_write", text(writes))])
                    }
                    _ => not_honoured(),
                },
                _ => not_honoured(),
            }
        }
        // Per direction, reads then writes; entries `SIZE/PERCENT[/CLASS/LEVEL]`.
        "cmdprio_bssplit" => match value {
            FioValue::Str(text) => {
                let parts: Vec<&str> = text.split(',').map(str::trim).collect();
                match parts.as_slice() {
                    [both] => Ok(vec![
                        ("cmdprio_bssplit", (*both).to_owned()),
                        ("cmdprio_bssplit_write", (*both).to_owned()),
                    ]),
                    [reads, writes] => Ok(vec![
                        ("cmdprio_bssplit", (*reads).to_owned()),
                        ("cmdprio_bssplit_write", (*writes).to_owned()),
                    ]),
                    _ => not_honoured(),
                }
            }
            _ => not_honoured(),
        },
        "bsrange" => match single(value) {
            Some(FioValue::Range { lo, hi }) => Ok(vec![("bsrange", format!("{lo}-{hi}"))]),
            _ => not_honoured(),
        },
        "zonemode" => match value {
            FioValue::Choice { value: mode, .. } if mode == "strided" => Ok(Vec::new()),
            FioValue::Choice { value: mode, .. } if mode == "zbd" => Ok(vec![("zbd", "1".into())]),
            _ => not_honoured(),
        },
        "max_open_zones" | "zone_reset_threshold" | "zone_reset_frequency" | "read_beyond_wp" => {
            map_zbd_option(canonical(name), value)
                .map_or_else(not_honoured, |text| Ok(vec![(canonical(name), text)]))
        }
        "zonesize" | "zonerange" | "zoneskip" => {
            one(canonical(name), int(value).map(|n| n.to_string()))
        }
        "cmdprio_percentage" | "cmdprio_class" | "cmdprio" => {
            one(canonical(name), single(value).as_ref().and_then(int).map(|n| n.to_string()))
        }
        "size" | "io_size" | "offset_increment" | "iodepth" | "numjobs" | "rwmixread"
        | "rwmixwrite" | "prio" | "prioclass" | "loops" | "fsync" | "verify_backlog"
        | "number_ios" | "thinktime_blocks" => {
            one(canonical(name), int(value).map(|n| n.to_string()))
        }
        // fdatasync skips the metadata fsync also writes; the simulator's sync is one kind.
        "fdatasync" => one("fsync", int(value).map(|n| n.to_string())),
        "rate" | "rate_min" => {
            one(canonical(name), single(value).as_ref().and_then(int).map(|n| n.to_string()))
        }
        "rate_iops" => {
            one("rate_iops", single(value).as_ref().and_then(int).map(|n| n.to_string()))
        }
        // A bare rate_cycle is in milliseconds (fio's).
        "rate_cycle" => one("rate_cycle", int(value).map(|ms| format!("{ms}ms"))),
        "percentage_random" => {
            one("percentage_random", single(value).as_ref().and_then(int).map(|n| n.to_string()))
        }
        "offset" => match value {
            FioValue::Int(bytes) => Ok(vec![("offset", bytes.to_string())]),
            FioValue::Percent(percent) => Ok(vec![("offset", format!("{percent}%"))]),
            _ => not_honoured(),
        },
        "runtime" | "thinktime" => one(canonical(name), time(value)),
        // `lo-hi` is drawn per clone (fio's `startdelay` range).
        "startdelay" => match value {
            FioValue::TimeNs(ns) => Ok(vec![("startdelay", Duration::from_nanos(*ns).to_string())]),
            FioValue::TimeRangeNs { lo_ns, hi_ns } => Ok(vec![(
                "startdelay",
                format!("{}-{}", Duration::from_nanos(*lo_ns), Duration::from_nanos(*hi_ns)),
            )]),
            _ => not_honoured(),
        },
        // The busy part of the pause: the pause is as long, and the simulator models no CPU.
        "thinktime_spin" => match time(value) {
            Some(_) => Ok(Vec::new()),
            None => not_honoured(),
        },
        "time_based" | "norandommap" | "end_fsync" => one(canonical(name), flag(value)),
        // Files are closed once, at the end of the job, in the simulator.
        "fsync_on_close" => one("end_fsync", flag(value)),
        // ENOSPC, the one error the simulator raises (a full filesystem), as fio handles it
        // (backend.c `io_u_sync_complete`/`check_error`, td_error.c): `job` implements the rules.
        "fill_device" => one("fill_device", flag(value)),
        "continue_on_error" => match value {
            FioValue::Choice { value: choice, .. } => {
                let choice = match choice.as_str() {
                    "0" => "none",
                    "1" => "all",
                    other => other,
                };
                one("continue_on_error", Some(choice.to_owned()))
            }
            _ => not_honoured(),
        },
        // fio separates the READ,WRITE,VERIFY lists with commas, which separate `job`'s keys.
        "ignore_error" => match value {
            FioValue::Str(text) => one("ignore_error", Some(text.replace(',', "/"))),
            _ => not_honoured(),
        },
        "direct" | "buffered" => match value {
            FioValue::Bool(on) => {
                let direct = if name == "buffered" { !on } else { *on };
                Ok(vec![("direct", u8::from(direct).to_string())])
            }
            _ => not_honoured(),
        },
        "random_distribution" => match value {
            FioValue::Choice { value: kind, suffix }
                if matches!(kind.as_str(), "random" | "zipf" | "pareto" | "normal" | "zoned") =>
            {
                let text = match suffix {
                    Some(suffix) => format!("{kind}:{suffix}"),
                    None => kind.clone(),
                };
                Ok(vec![("random_distribution", text)])
            }
            _ => not_honoured(),
        },
        "rate_process" | "thinktime_blocks_type" => match value {
            FioValue::Choice { value: choice, suffix: None } => {
                Ok(vec![(canonical(name), choice.clone())])
            }
            _ => not_honoured(),
        },
        "latency_target" | "latency_window" => one(canonical(name), time(value)),
        "latency_percentile" => match value {
            FioValue::Float(percent) => Ok(vec![("latency_percentile", percent.to_string())]),
            FioValue::Int(percent) => Ok(vec![("latency_percentile", percent.to_string())]),
            _ => not_honoured(),
        },
        "latency_run" => one("latency_run", flag(value)),
        // fio's generators differ in sequence, not in kind: tausworthe stands for our PRNG;
        // lfsr never repeats an offset within a pass, which the random map gives (set below).
        "random_generator" => match value {
            FioValue::Choice { value: generator, .. }
                if matches!(generator.as_str(), "tausworthe" | "tausworthe64" | "lfsr") =>
            {
                Ok(Vec::new())
            }
            _ => not_honoured(),
        },
        // fio's flow weight is an integer (a fraction is refused).
        "flow" => one("flow", int(value).map(|n| n.to_string())),
        "flow_id" => one("flow_id", int(value).map(|n| n.to_string())),
        // In microseconds (fio's `flow_sleep`).
        "flow_sleep" => one("flow_sleep", int(value).map(|us| format!("{us}us"))),
        "steadystate" => match value {
            FioValue::Str(text) => Ok(vec![("steadystate", text.clone())]),
            _ => not_honoured(),
        },
        "steadystate_duration" | "steadystate_ramp_time" | "steadystate_check_interval" => {
            one(canonical(name), time(value))
        }
        // io_uring_cmd's only command set (fio's `cmd_type=nvme`, the default).
        "cmd_type" => match value {
            FioValue::Choice { value: kind, .. } if kind == "nvme" => Ok(Vec::new()),
            _ => not_honoured(),
        },
        // How the submitting thread talks to the kernel and where it runs: the issuer's CPU
        // profile (`crate::IssuerCpu`), which the blk-mq host's CPU model (issue 18) charges
        // and places by. Which engines take the io_uring flags is checked by `job`.
        "sqthread_poll" | "registerfiles" | "fixedbufs" | "hipri" => {
            one(canonical(name), flag(value))
        }
        "sqthread_poll_cpu" => one("sqthread_poll_cpu", int(value).map(|cpu| cpu.to_string())),
        "iodepth_batch" => one("iodepth_batch_submit", int(value).map(|n| n.to_string())),
        // fio's list `0-3,6`: `job` separates its keys with `,`, its pieces with `:`.
        "cpus_allowed" => match value {
            FioValue::Str(text) => {
                crate::job::parse_cpu_list(text)?;
                Ok(vec![("cpus_allowed", text.trim().replace(',', ":"))])
            }
            FioValue::List(pieces) => {
                let text = pieces.join(":");
                crate::job::parse_cpu_list(&text)?;
                Ok(vec![("cpus_allowed", text)])
            }
            _ => not_honoured(),
        },
        "cpumask" => match value {
            FioValue::Str(text) => Ok(vec![("cpus_allowed", cpumask_list(text)?)]),
            FioValue::Int(mask) => Ok(vec![("cpus_allowed", cpumask_list(&mask.to_string())?)]),
            _ => not_honoured(),
        },
        "cpus_allowed_policy" => match value {
            FioValue::Choice { value: policy, suffix: None } => {
                Ok(vec![("cpus_allowed_policy", policy.clone())])
            }
            _ => not_honoured(),
        },
        // One buffer per command instead of an iovec: the same bytes reach the device, and
        // the CPU model charges io_uring's read/write alike either way.
        "nonvectored" => Ok(Vec::new()),
        // The numbering of the host's NUMA nodes (fio's `numa_cpu_nodes`, `numa_mem_policy`):
        // the host model is one node, node 0. Binding to it (or to every node) is what the
        // host does anyway; another node does not exist here, as libnuma would refuse it on a
        // one-node machine.
        "numa_cpu_nodes" | "numa_mem_policy" => match value {
            FioValue::Str(text) if numa_on_node_zero(name, text) => Ok(Vec::new()),
            _ => Err(format!(
                "`{name}={value}` names a NUMA node the simulated host lacks: it has one node, \
                 0 (accepted: 0 or all; numa_mem_policy default, local, or \
                 prefer/bind/interleave:0)"
            )),
        },
        // The submitting thread changes no I/O timing in a simulation, which models no CPU.
        "io_submit_mode" => match value {
            FioValue::Choice { value: mode, .. } if mode == "inline" || mode == "offload" => {
                Ok(Vec::new())
            }
            _ => not_honoured(),
        },
        "verify" | "do_verify" => match value {
            FioValue::Choice { value: kind, .. } => {
                Ok(vec![("verify", u8::from(kind != "0" && kind != "none").to_string())])
            }
            FioValue::Bool(on) => Ok(vec![("verify", u8::from(*on).to_string())]),
            _ => not_honoured(),
        },
        "ioengine" => match value {
            FioValue::Choice { value: engine, .. }
                if matches!(
                    engine.as_str(),
                    "io_uring"
                        | "libaio"
                        | "posixaio"
                        | "psync"
                        | "sync"
                        | "pvsync"
                        | "pvsync2"
                        | "sg"
                        | "libzbc"
                        | "io_uring_cmd"
                        | "xnvme"
                        | "null"
                ) =>
            {
                Ok(vec![("ioengine", engine.clone())])
            }
            _ => not_honoured(),
        },
        _ => not_honoured(),
    }
}

/// fio's `cpumask` (options.c `str_cpumask_cb`: an integer, decimal or `0x` hex, whose set
/// bits are the CPUs allowed; fio reads only its low 32 bits) as `job`'s `cpus_allowed` list.
/// A mask with a bit above 31, which fio would drop unsaid, and an empty mask, on which fio's
/// `sched_setaffinity` fails, are refused.
fn cpumask_list(text: &str) -> Result<String, String> {
    let text = text.trim();
    let mask = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse::<u64>(),
    }
    .map_err(|_| format!("`cpumask={text}`: accepted a CPU bit mask, decimal or 0x hex"))?;
    if mask == 0 || mask >> 32 != 0 {
        return Err(format!(
            "`cpumask={text}`: accepted a non-zero mask of CPUs 0 to 31 (fio reads 32 bits; \
             use cpus_allowed for other CPUs)"
        ));
    }
    let cpus: Vec<String> =
        (0..32).filter(|bit| mask & (1 << bit) != 0).map(|cpu: u32| cpu.to_string()).collect();
    Ok(cpus.join(":"))
}

/// Whether a `numa_cpu_nodes` or `numa_mem_policy` value names only node 0 (or all nodes),
/// the simulated host's one node (fio's syntax: a node list `0`, `0-1`, `all`; a policy
/// `default`, `local`, or `prefer|bind|interleave:NODES`).
fn numa_on_node_zero(name: &str, text: &str) -> bool {
    let nodes_zero = |nodes: &str| matches!(nodes.trim(), "0" | "all" | "0-0");
    if name == "numa_cpu_nodes" {
        return nodes_zero(text);
    }
    match text.trim().split_once(':') {
        None => matches!(text.trim(), "default" | "local"),
        Some((policy, nodes)) => {
            matches!(policy, "prefer" | "bind" | "interleave") && nodes_zero(nodes)
        }
    }
}

/// `name` as a `'static` `job` key (the keys `map_option` passes through unchanged).
/// The value of a `zonemode=zbd` option (`crate::zbd`) as a `job` key's text.
fn map_zbd_option(name: &str, value: &FioValue) -> Option<String> {
    match (name, value) {
        ("max_open_zones", FioValue::Int(count)) => Some(count.to_string()),
        ("zone_reset_threshold" | "zone_reset_frequency", FioValue::Float(fraction)) => {
            Some(fraction.to_string())
        }
        ("zone_reset_threshold" | "zone_reset_frequency", FioValue::Int(whole)) if *whole <= 1 => {
            Some(whole.to_string())
        }
        ("read_beyond_wp", FioValue::Bool(on)) => Some(u8::from(*on).to_string()),
        ("read_beyond_wp", FioValue::Int(n)) if *n <= 1 => Some(n.to_string()),
        _ => None,
    }
}

/// `zonemode=zbd`'s keys: `zonesize` must match the device's (checked when planned), and
/// strided zones' `zonerange`/`zoneskip` are refused (fio's zoneskip under zbd skips whole
/// zones, not modelled).
fn zbd_keys(job: &FioJob, keys: &mut Vec<(&'static str, String)>) -> Result<(), ParamError> {
    if let Some(option) =
        job.options.iter().find(|option| matches!(option.name, "zonerange" | "zoneskip"))
    {
        return Err(refuse(
            &option.at,
            format!("`{}` with zonemode=zbd is not honoured by the simulator", option.name),
        ));
    }
    for (key, _) in keys.iter_mut() {
        if *key == "zonesize" {
            *key = "zbd_zonesize";
        }
    }
    Ok(())
}

fn canonical(name: &str) -> &'static str {
    crate::job::KEYS.iter().find(|key| key.key == name).map_or("", |key| key.key)
}

/// Maps one job; errors name its file, line and option.
fn map_job(job: &FioJob) -> Result<FioRunJob, ParamError> {
    job.runnable().map_err(|problem| refuse(&job.at, problem))?;
    // fio's defaults where `job`'s differ (§2.1: ioengine psync, direct 0, the random map).
    let mut keys: Vec<(&'static str, String)> =
        vec![("ioengine", "psync".into()), ("direct", "0".into()), ("norandommap", "0".into())];
    let (mut new_group, mut starts_group, mut exitall) = (false, false, false);
    let (mut filenames, mut directory, mut size_bytes, mut clones) = (None, None, None, 1);
    let (mut reporting, mut wait_for, mut ramp, mut filesize) = (Vec::new(), None, None, None);
    let mut verify_off = false;
    let (mut nrfiles, mut filename_format, mut openfiles) = (1_u32, None, None);
    let (mut sg_write_mode, mut allow_file_create, mut fill_device) = (None, true, false);
    let mut preallocate = true;
    let (mut create_serialize, mut create_on_open) = (true, false);
    let (mut create_only, mut file_append, mut pre_read) = (false, None, None);
    let mut iolog = crate::iolog::IologOptions::default();
    for (index, option) in job.options.iter().enumerate() {
        // The last occurrence wins (§1.7): map only that one.
        if job.options[index + 1..].iter().any(|later| later.name == option.name) {
            continue;
        }
        // read_iolog, write_iolog and replay_*: fio-compat.md §6, `crate::iolog`.
        if crate::iolog::take_option(&mut iolog, option) {
            continue;
        }
        let on = !matches!(option.value, FioValue::Bool(false));
        if matches!(option.name, "stonewall" | "wait_for_previous") && on {
            new_group = true;
        }
        if matches!(option.name, "stonewall" | "wait_for_previous" | "new_group") && on {
            starts_group = true;
        }
        if option.name == "exitall" {
            exitall = on;
            continue;
        }
        if option.name == "exit_what" {
            continue;
        }
        match (option.name, &option.value) {
            ("filename", FioValue::List(names)) => {
                filenames = Some((names.clone(), option.at.clone()));
                continue;
            }
            ("filename", FioValue::Str(name)) => {
                filenames = Some((vec![name.clone()], option.at.clone()));
                continue;
            }
            ("directory", FioValue::Str(dir)) => {
                directory = Some(dir.clone());
                continue;
            }
            // Several directories (fio spreads files over them) stay refused below.
            ("directory", FioValue::List(dirs)) if dirs.len() == 1 => {
                directory = Some(dirs[0].clone());
                continue;
            }
            ("size", FioValue::Int(bytes)) => size_bytes = Some(*bytes),
            // fio's per-file size, fixed or a range drawn per file (filesetup.c
            // `setup_files`, `get_rand_file_size`); `size` then defaults to the files' total.
            ("filesize", FioValue::Int(bytes)) => {
                filesize = Some((*bytes, *bytes));
                continue;
            }
            ("filesize", FioValue::Range { lo, hi }) => {
                filesize = Some((*lo.min(hi), *lo.max(hi)));
                continue;
            }
            ("nrfiles", FioValue::Int(count)) => {
                nrfiles = u32::try_from(*count).ok().filter(|&n| n > 0).ok_or_else(|| {
                    refuse(&option.at, format!("`nrfiles={count}`: accepted 1 to {}", u32::MAX))
                })?;
                continue;
            }
            ("filename_format", FioValue::Str(format)) => {
                // fio's init.c `make_filename` knows $jobname, $jobnum, $filenum and
                // $clientuid (any case); the last is the client's address in fio's
                // client/server mode, which has no meaning here.
                if format.to_ascii_lowercase().contains("$clientuid") {
                    return Err(refuse(
                        &option.at,
                        format!(
                            "`filename_format={format}`: $clientuid (the address of a fio \
                             client, --client mode) is not supported (accepted: $jobname, \
                             $jobnum, $filenum)"
                        ),
                    ));
                }
                filename_format = Some(format.clone());
                continue;
            }
            ("openfiles", FioValue::Int(count)) => {
                openfiles = Some((*count, option.at.clone()));
                continue;
            }
            ("file_service_type", FioValue::Choice { value: kind, suffix }) => {
                let text = match suffix {
                    Some(suffix) => format!("{kind}:{}", suffix.trim()),
                    None => kind.clone(),
                };
                keys.retain(|(given, _)| *given != "file_service_type");
                keys.push(("file_service_type", text));
                continue;
            }
            ("sg_write_mode", FioValue::Choice { value: mode, .. }) => {
                sg_write_mode = Some((mode.clone(), option.at.clone()));
                continue;
            }
            ("fill_device", FioValue::Bool(on)) => fill_device = *on,
            ("fallocate", FioValue::Choice { value: mode, .. }) => {
                preallocate = !matches!(mode.as_str(), "none" | "0" | "truncate");
                continue;
            }
            ("allow_file_create", FioValue::Bool(on)) => {
                allow_file_create = *on;
                continue;
            }
            // When files are set up (fio's backend.c `run_threads`, `thread_main`;
            // filesetup.c `setup_files`, `file_open`): see `FioRunJob::places`.
            ("create_serialize", FioValue::Bool(on)) => {
                // fio's init.c `fixup_options`: the zone setup needs every file first.
                if !*on && job.options.iter().any(|other| {
                    other.name == "zonemode"
                        && matches!(&other.value, FioValue::Choice { value, .. } if value == "zbd")
                }) {
                    return Err(refuse(
                        &option.at,
                        "`create_serialize=0` with zonemode=zbd: fio refuses the two together \
                         (\"--zonemode=zbd and --create_serialize=0 are not compatible\")"
                            .into(),
                    ));
                }
                create_serialize = *on;
                continue;
            }
            ("create_on_open", FioValue::Bool(on)) => {
                create_on_open = *on;
                continue;
            }
            // fio-compat.md §2.1 "Files": setup only; see `FioRunJob::create_only`.
            ("create_only", FioValue::Bool(on)) => {
                create_only = *on;
                continue;
            }
            // See `FioRunJob::pre_read`; the engines it cannot work with are refused below.
            ("pre_read", FioValue::Bool(on)) => {
                pre_read = on.then(|| option.at.clone());
                continue;
            }
            // See `FioRunJob::file_append`; what it cannot honour is refused in `plan`.
            ("file_append", FioValue::Bool(on)) => {
                file_append = on.then(|| option.at.clone());
                // fio's init.c `fixup_options`: an engine that cannot extend a file
                // (`FIO_NOEXTEND`: libzbc, xnvme among the engines mapped here) fails the job.
                let engine = job.options.iter().rev().find(|o| o.name == "ioengine");
                if *on
                    && let Some(FioValue::Choice { value: engine, .. }) = engine.map(|o| &o.value)
                    && matches!(engine.as_str(), "libzbc" | "xnvme")
                {
                    return Err(refuse(
                        &option.at,
                        format!(
                            "`file_append=1` with ioengine={engine}: fio refuses it (\"can't \
                             append/extent with IO engine {engine}\"): the engine cannot \
                             extend a file"
                        ),
                    ));
                }
                continue;
            }
            // fsync after laying a file out (default 1): the simulator's layout allocates the
            // file before the run without writing through the page cache, so there is nothing
            // dirty to sync and the option changes no I/O either way.
            ("create_fsync", FioValue::Bool(_)) => continue,
            ("wait_for", FioValue::Str(name)) => {
                wait_for = Some((name.clone(), option.at.clone()));
            }
            ("do_verify", FioValue::Bool(false)) => verify_off = true,
            ("ramp_time", FioValue::TimeNs(ns)) => {
                ramp = (*ns > 0).then(|| Duration::from_nanos(*ns));
                continue;
            }
            // group_reporting also makes the steady state one judgement over the job's clones
            // (fio judges a reporting group's aggregate).
            ("group_reporting", value) => {
                reporting.push(("group_reporting", value.clone()));
                keys.retain(|(given, _)| *given != "steadystate_group");
                keys.push(("steadystate_group", u8::from(on).to_string()));
                continue;
            }
            (name, value) if REPORTING.contains(&name) => reporting.push((name, value.clone())),
            ("numjobs", FioValue::Int(count)) => clones = u32::try_from(*count).unwrap_or(u32::MAX),
            _ => {}
        }
        let mapped = map_option(option.name, &option.value)
            .map_err(|problem| refuse(&option.at, problem))?;
        for (key, value) in mapped {
            keys.retain(|(given, _)| *given != key);
            keys.push((key, value));
        }
    }
    // Engine options fio looks up in the selected engine's table only: elsewhere fio fails
    // the job ("Bad option"); refused here at the option's line (`job` would name only the key).
    let engine = keys.iter().rev().find(|(key, _)| *key == "ioengine").map(|(_, v)| v.clone());
    let engine = engine.unwrap_or_default();
    if let Some(option) = job.options.iter().find(|option| {
        matches!(
            option.name,
            "hipri" | "fixedbufs" | "registerfiles" | "sqthread_poll" | "sqthread_poll_cpu"
        ) && !crate::job::engines_with(option.name).contains(&engine.as_str())
    }) {
        return Err(refuse(
            &option.at,
            format!(
                "`{}` is not an option of ioengine={engine}: fio refuses it (\"Bad option\"); \
                 engines that have it: {}",
                option.name,
                crate::job::engines_with(option.name).join(", ")
            ),
        ));
    }
    // A read of a block nothing wrote in a file created empty at open (`create_on_open`)
    // returns 0 bytes: fio's synchronous engines fail it (backend.c `io_u_sync_complete`'s
    // "full resid", EIO), an error the simulator does not raise; async engines count it as
    // a read of 0 bytes (io_u.c `io_completed`), which the simulator's read past the end is.
    let text =
        |name: &str| keys.iter().rev().find(|(key, _)| *key == name).map(|(_, v)| v.as_str());
    let reads = matches!(text("rw"), Some("read" | "randread" | "rw" | "readwrite" | "randrw"));
    let sync_engine = matches!(text("ioengine"), Some("psync" | "sync" | "pvsync" | "pvsync2"));
    if create_on_open
        && reads
        && sync_engine
        && let Some(option) = job.options.iter().rev().find(|o| o.name == "create_on_open")
    {
        return Err(refuse(
            &option.at,
            format!(
                "`create_on_open=1` with reads on ioengine={}: fio fails a read of the empty \
                 file with EIO (\"full resid\"), an error the simulator does not raise \
                 (accepted: an async engine, libaio, io_uring or posixaio)",
                text("ioengine").unwrap_or("psync")
            ),
        ));
    }
    // fio's pre-read (filesetup.c `pre_read_file`) reads with `read(2)` on the job's own
    // descriptor into a `calloc`ed buffer: with `direct=1` that is an O_DIRECT read from an
    // unaligned buffer (EINVAL: fio fails the job, "pre_read") that would fill no page cache
    // anyway; the null engine opens no file (its `lseek` fails: "failed to lseek pre-read
    // file"). The passthrough engines' pre-read (a character device's is skipped, a block
    // device's goes through its page cache) is not modelled.
    if let Some(at) = &pre_read {
        let engine = text("ioengine").unwrap_or("psync");
        let why = if text("direct") == Some("1") {
            Some(
                "with direct=1: fio's pre-read then reads O_DIRECT from an unaligned buffer, \
                  which fails (EINVAL) and fails the job; it needs a buffered job (direct=0)"
                    .to_owned(),
            )
        } else if engine == "null" {
            Some(
                "with ioengine=null: the null engine opens no file, so fio's pre-read fails \
                  (\"failed to lseek pre-read file\")"
                    .to_owned(),
            )
        } else if matches!(engine, "sg" | "libzbc" | "io_uring_cmd" | "xnvme") {
            Some(format!("with ioengine={engine}: a passthrough engine's pre-read is not modelled"))
        } else if job.options.iter().any(|option| option.name == "read_iolog") {
            Some("with read_iolog: the pre-read of a replayed log's files is not modelled".into())
        } else {
            None
        };
        if let Some(why) = why {
            return Err(refuse(at, format!("`pre_read=1` {why}")));
        }
    }
    let strided = job.options.iter().rev().find(|option| option.name == "zonemode").is_some_and(
        |option| matches!(&option.value, FioValue::Choice { value, .. } if value == "strided"),
    );
    let zbd = keys.iter().any(|(key, _)| *key == "zbd");
    if zbd {
        zbd_keys(job, &mut keys)?;
    } else if !strided
        && let Some(option) = job.options.iter().find(|option| option.name == "zonesize")
    {
        return Err(refuse(
            &option.at,
            "zonesize needs zonemode=strided (fio refuses zonemode=none with a zonesize)".into(),
        ));
    }
    if verify_off {
        keys.retain(|(given, _)| *given != "verify");
    }
    let lfsr = job.options.iter().rev().find(|option| option.name == "random_generator").filter(
        |option| matches!(&option.value, FioValue::Choice { value, .. } if value == "lfsr"),
    );
    if let Some(option) = lfsr {
        // lfsr visits every block once per pass whatever `norandommap` says (fio's HOWTO);
        // it only draws uniformly.
        if keys.iter().any(|(key, value)| *key == "random_distribution" && value != "random") {
            return Err(refuse(
                &option.at,
                "random_generator=lfsr draws uniformly: it cannot follow random_distribution"
                    .into(),
            ));
        }
        keys.retain(|(key, _)| *key != "norandommap");
        keys.push(("norandommap", "0".into()));
    }
    if let Some((mode, at)) = sg_write_mode {
        sg_write(&mut keys, &mode).map_err(|problem| refuse(&at, problem))?;
    }
    // fio opens at most `openfiles` files at once (init.c: 0 or more than nrfiles is
    // nrfiles) and opens the next only when one closes, which changes which files its
    // service may pick; that is not modelled.
    let files_used = filenames.as_ref().map_or(nrfiles as u64, |(names, _)| names.len() as u64);
    if let Some((count, at)) = openfiles
        && count > 0
        && count < files_used
    {
        return Err(refuse(
            &at,
            format!(
                "`openfiles={count}` below the job's {files_used} files: fio then keeps only \
                 {count} open and opens the next as one closes, which changes which file it \
                 serves; the simulator keeps every file open (accepted: 0 or at least \
                 {files_used})"
            ),
        ));
    }
    // One file of a fixed `filesize` (and no `size`): the job's size is the file's.
    if let Some((lo, hi)) = filesize
        && lo == hi
        && nrfiles == 1
        && filename_format.is_none()
        && filenames.as_ref().is_none_or(|(names, _)| names.len() == 1)
    {
        if size_bytes.is_none() {
            keys.push(("size", lo.to_string()));
        }
        size_bytes = Some(size_bytes.unwrap_or(lo));
        filesize = None;
    }
    let (replay, write_iolog) = crate::iolog::finish(job, iolog, REPORTING)?;
    let text: Vec<String> = keys.iter().map(|(key, value)| format!("{key}={value}")).collect();
    let spec = WorkloadSpec::parse(&format!("job:{}", text.join(",")))
        .map_err(|error| refuse(&job.at, format!("job `{}`: {error}", job.name())))?;
    Ok(FioRunJob {
        name: job.name().to_owned(),
        new_group,
        group: u32::from(starts_group),
        exitall,
        spec,
        at: job.at.clone(),
        filenames,
        directory,
        size_bytes,
        clones,
        nrfiles,
        filesize,
        filename_format,
        reporting,
        wait_for,
        ramp,
        allow_file_create,
        fill_device,
        preallocate,
        create_serialize,
        create_on_open,
        replay,
        write_iolog,
        create_only,
        file_append,
        pre_read: pre_read.is_some(),
    })
}

/// What fio's `sg_write_mode` makes of the sg engine's writes (fio's HOWTO, engines/sg.c): the
/// SCSI command each write becomes, as the device's work on the written range.
fn sg_write(keys: &mut [(&'static str, String)], mode: &str) -> Result<(), String> {
    let engine = keys.iter().find(|(key, _)| *key == "ioengine").map_or("", |(_, v)| v.as_str());
    if engine != "sg" {
        return Err(format!("sg_write_mode is an option of ioengine=sg, not of {engine}"));
    }
    match mode {
        // WRITE, and WRITE SAME (one block, or none with NDOB, written over the whole range):
        // the device writes every block of the range either way.
        "write" | "write_same" | "write_same_ndob" => Ok(()),
        // VERIFY: the device reads the range from the medium (and with BYTCHK compares it with
        // the block(s) sent); nothing is written.
        "verify" | "verify_bytchk_00" | "verify_bytchk_01" | "verify_bytchk_11" => {
            let Some((_, rw)) = keys.iter_mut().find(|(key, _)| *key == "rw") else {
                return Err("sg_write_mode=verify* needs rw=write or randwrite".into());
            };
            *rw = match rw.as_str() {
                "write" => "read".into(),
                "randwrite" => "randread".into(),
                other => {
                    return Err(format!(
                        "sg_write_mode={mode} with rw={other}: only a pure write pattern \
                         (write, randwrite) becomes VERIFY commands here"
                    ));
                }
            };
            Ok(())
        }
        _ => Err(format!(
            "sg_write_mode={mode} (WRITE AND VERIFY) is not modelled: the device's write and \
             read-back as one command"
        )),
    }
}

impl FioRunJob {
    /// Whether its clones take their files' sizes as they start: `create_serialize=0`
    /// without `size` or `fill_device` (fio's `setup_files` in the job's thread).
    fn sized_at_start(&self) -> bool {
        !self.create_serialize
            && self.size_bytes.is_none()
            && self.filesize.is_none()
            && !self.fill_device
    }

    /// Whether its files are sized one by one, as fio's `setup_files` sizes them: `nrfiles`
    /// files (named by `filename_format`), a `filename` list sharing `size`, or `filesize`
    /// over several files or as a range.
    fn sized_per_file(&self) -> bool {
        match &self.filenames {
            None => self.nrfiles > 1 || self.filename_format.is_some() || self.filesize.is_some(),
            Some((names, _)) => {
                self.filesize.is_some() || (names.len() > 1 && self.size_bytes.is_some())
            }
        }
    }

    /// Whether its regular files are left to the writes rather than laid out before the run.
    fn allocated_by_writes(&self) -> bool {
        let writes_only = matches!(self.spec.params.text("rw"), "write" | "randwrite");
        self.fill_device
            || (writes_only && !self.preallocate)
            || self.create_on_open
            || (self.size_bytes.is_none() && self.filesize.is_none() && !self.create_serialize)
    }

    /// Clone `clone`'s file names (before `directory`): `filename`'s when given (fio's
    /// rule: they override `nrfiles`), else `nrfiles` names from `filename_format`.
    pub(crate) fn file_names(&self, clone: u32) -> Vec<String> {
        match &self.filenames {
            Some((names, _)) => names.clone(),
            None => (0..self.nrfiles)
                .map(|file| file_name(self.filename_format.as_deref(), &self.name, clone, file))
                .collect(),
        }
    }

    /// The sizes of `count` files, as fio's `setup_files` gives them: `filesize` (a range
    /// drawn per file from `prng`, `lo + (hi - lo) · u` cut to a multiple of the smallest
    /// block, fio's `get_rand_file_size`), else `size` divided among them, the first files
    /// a block larger while the division leaves blocks over. `existing[i]`: a size file i
    /// already has, kept when it is within the `filesize` range (fio keeps a file whose size
    /// is in range).
    pub(crate) fn file_sizes_bytes(
        &self,
        existing: &[Option<u64>],
        prng: &mut Prng,
    ) -> Result<Vec<u64>, ParamError> {
        let count = existing.len() as u64;
        let min_bs = JobConfig::from_params(&self.spec.params)
            .map_err(|error| refuse(&self.at, format!("job `{}`: {error}", self.name)))?
            .min_block_bytes();
        if let Some((lo, hi)) = self.filesize {
            return Ok(existing
                .iter()
                .map(|given| match given {
                    Some(bytes) if (lo..=hi).contains(bytes) => *bytes,
                    _ if lo == hi => lo,
                    _ => {
                        let bytes = lo + ((hi - lo) as f64 * prng.unit_f64()) as u64;
                        bytes - bytes % min_bs
                    }
                })
                .collect());
        }
        let Some(total) = self.size_bytes else {
            return Err(refuse(
                &self.at,
                format!(
                    "job `{}`: its {count} files need `size` or `filesize` (fio's rule)",
                    self.name
                ),
            ));
        };
        let each = total / count;
        if each == 0 {
            return Err(refuse(
                &self.at,
                format!(
                    "job `{}`: size={total} leaves nothing for each of {count} files",
                    self.name
                ),
            ));
        }
        let mut extra = (total - each * count) / min_bs;
        Ok((0..count)
            .map(|_| {
                let grown = extra > 0;
                extra = extra.saturating_sub(1);
                each + if grown { min_bs } else { 0 }
            })
            .collect())
    }

    /// [`FioRunJob::places`] for files sized one by one ([`FioRunJob::sized_per_file`]): per
    /// clone its files (shared by the clones when `filename` names them), each its own size;
    /// a live run's files are its devices, named by their paths.
    fn places_per_file(
        &self,
        targets: &[Target],
        files: &mut Vec<FileSpec>,
        prng: &Prng,
        in_directory: &dyn Fn(&str) -> String,
    ) -> Result<Vec<Vec<(Place, Target)>>, ParamError> {
        let device = |name: &str| {
            let name = name.strip_prefix("/dev/").unwrap_or(name);
            targets.iter().position(|target| target.name == name)
        };
        let clones = if self.filenames.is_some() { 1 } else { self.clones };
        let mut sets: Vec<Vec<(String, u64)>> = Vec::new();
        for clone in 0..clones {
            let names: Vec<String> =
                self.file_names(clone).iter().map(|name| in_directory(name)).collect();
            let existing: Vec<Option<u64>> = names
                .iter()
                .map(|name| {
                    files.iter().find(|file| &file.name == name).map(|file| file.size_bytes)
                })
                .collect();
            let mut draws = prng.fork_indexed("filesize", u64::from(clone));
            let sizes = self.file_sizes_bytes(&existing, &mut draws)?;
            sets.push(names.into_iter().zip(sizes).collect());
        }
        let all_devices = sets.iter().flatten().all(|(name, _)| device(name).is_some());
        let layout = !self.allocated_by_writes();
        let mut out = Vec::with_capacity(sets.len());
        for set in sets {
            let mut places = Vec::with_capacity(set.len());
            for (name, size_bytes) in set {
                if all_devices {
                    let index = device(&name).expect("checked");
                    let target = &targets[index];
                    if size_bytes > target.capacity_bytes {
                        return Err(refuse(
                            &self.at,
                            format!(
                                "job `{}`: file `{name}` of {size_bytes} bytes is larger than \
                                 its target ({} bytes)",
                                self.name, target.capacity_bytes
                            ),
                        ));
                    }
                    let target = Target { capacity_bytes: size_bytes, ..target.clone() };
                    places.push((Place::Device(index), target));
                    continue;
                }
                let index = match files.iter().position(|file| file.name == name) {
                    Some(index) => {
                        if layout {
                            files[index].size_bytes = files[index].size_bytes.max(size_bytes);
                        }
                        index
                    }
                    None => {
                        let laid_out = if layout { size_bytes } else { 0 };
                        files.push(FileSpec {
                            name: name.clone(),
                            device: 0,
                            size_bytes: laid_out,
                        });
                        files.len() - 1
                    }
                };
                places.push((
                    Place::File(index),
                    Target { name, capacity_bytes: size_bytes, zones: None },
                ));
            }
            out.push(places);
        }
        Ok(out)
    }

    /// Per clone, the places its I/O goes to: `filename`'s devices when every name is one
    /// (`sdb` or `/dev/sdb`), else regular files — `filename`'s, shared by the clones, or
    /// fio's `NAME.CLONE.0` per clone under `directory` (the working directory without one,
    /// as fio names a job's files) — on the first device's filesystem, added to `files`.
    fn places(
        &self,
        targets: &[Target],
        files: &mut Vec<FileSpec>,
        prng: &Prng,
    ) -> Result<Vec<Vec<(Place, Target)>>, ParamError> {
        let device = |name: &str| {
            let name = name.strip_prefix("/dev/").unwrap_or(name);
            targets.iter().position(|target| target.name == name)
        };
        if self.spec.params.text("ioengine") == "null" {
            // fio's null engine is diskless (`FIO_DISKLESSIO`): it opens and lays out no file;
            // its offsets span `size` bytes (fio's default when no size: nothing to do).
            let Some(size_bytes) = self.size_bytes else {
                return Err(refuse(
                    &self.at,
                    format!("job `{}`: ioengine=null needs `size` (fio's rule)", self.name),
                ));
            };
            let target = Target { name: "null".into(), capacity_bytes: size_bytes, zones: None };
            return Ok(vec![vec![(Place::Device(0), target)]]);
        }
        if let (Some((names, at)), None) = (&self.filenames, &self.directory) {
            let devices: Vec<Option<usize>> = names.iter().map(|name| device(name)).collect();
            if devices.iter().all(Option::is_some) {
                // fio's libzbc engine opens its device with libzbc's SCSI and ATA backends
                // (`zbc_open`), which take only a zoned (ZBC/ZAC) drive.
                let plain = devices.iter().flatten().find(|index| targets[**index].zones.is_none());
                if let (Some(index), "libzbc") = (plain, self.spec.params.text("ioengine")) {
                    return Err(refuse(
                        at,
                        format!(
                            "ioengine=libzbc opens only a zoned (ZBC/ZAC) device; `{}` is not \
                             (a zoned preset: smr-hm-2016)",
                            targets[*index].name
                        ),
                    ));
                }
                let places = devices
                    .into_iter()
                    .flatten()
                    .map(|index| (Place::Device(index), targets[index].clone()))
                    .collect();
                return Ok(vec![places]);
            }
            if let Some(name) =
                names.iter().find(|name| name.starts_with("/dev/") && device(name).is_none())
            {
                let accepted: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
                return Err(refuse(
                    at,
                    format!("filename: no device `{name}` (accepted: {})", accepted.join(", ")),
                ));
            }
        }
        // A live run opens each of a job's regular files as a device of its own, named by the
        // file's path (`elevator run` with several targets): when every file the job would
        // use is such a device, its I/O goes there, as to `filename`'s devices above.
        let in_directory = |name: &str| match &self.directory {
            Some(dir) => format!("{}/{name}", dir.trim_end_matches('/')),
            None => name.to_owned(),
        };
        if self.sized_per_file() {
            if !self.allow_file_create {
                return Err(refuse(
                    &self.at,
                    format!(
                        "job `{}`: allow_file_create=0 and its files do not exist before the \
                         run; fio refuses to create them",
                        self.name
                    ),
                ));
            }
            return self.places_per_file(targets, files, prng, &in_directory);
        }
        let named_device = |name: String| {
            let index = device(&name)?;
            Some((Place::Device(index), targets[index].clone()))
        };
        let as_devices: Option<Vec<Vec<(Place, Target)>>> = match &self.filenames {
            Some((names, _)) => names
                .iter()
                .map(|name| named_device(in_directory(name)))
                .collect::<Option<_>>()
                .map(|places| vec![places]),
            None => (0..self.clones)
                .map(|clone| named_device(in_directory(&format!("{}.{clone}.0", self.name))))
                .map(|place| place.map(|place| vec![place]))
                .collect(),
        };
        if let Some(places) = as_devices.filter(|places| !places.is_empty()) {
            return Ok(places);
        }
        if !self.allow_file_create {
            // The simulated filesystem starts empty: every regular file is created for the run.
            return Err(refuse(
                &self.at,
                format!(
                    "job `{}`: allow_file_create=0 and its files (regular files, not devices) \
                     do not exist before the run; fio refuses to create them",
                    self.name
                ),
            ));
        }
        // fio's `get_file_sizes`: a file without `size` is as large as it is when the job
        // sets it up — before the run for `create_serialize=1`, after the earlier jobs'
        // layouts (one named file that an earlier job laid out); at the job's start for 0,
        // which the clones measure then (`JobConfig::size_at_start`), bounded here by the
        // filesystem.
        let existing = match &self.filenames {
            Some((names, _)) if names.len() == 1 => {
                let name = match &self.directory {
                    Some(dir) => format!("{}/{}", dir.trim_end_matches('/'), names[0]),
                    None => names[0].clone(),
                };
                files.iter().find(|file| file.name == name).map(|file| file.size_bytes)
            }
            _ => None,
        }
        .filter(|&bytes| bytes > 0);
        let size_bytes = match (self.size_bytes, targets.first(), existing) {
            (Some(bytes), ..) => bytes,
            // fio's `size=-1`: the writes end at ENOSPC, within the filesystem's device.
            (None, Some(target), _) if self.fill_device => target.capacity_bytes,
            (None, Some(target), _) if !self.create_serialize => target.capacity_bytes,
            (None, Some(_), Some(bytes)) => bytes,
            _ => {
                return Err(refuse(
                    &self.at,
                    format!("job `{}`: a regular file needs `size` (fio's rule)", self.name),
                ));
            }
        };
        // fio lays a file out (writes it whole before the job) for a job that reads it; a
        // writing job's file it only preallocates (`fallocate`, filesetup.c `extend_file`,
        // `fallocate_file`), here laid out alike. With `fallocate=none` (or `truncate`) the
        // writes allocate, which is where a full filesystem fails them (ENOSPC); a
        // fill_device file is never preallocated.
        let layout_bytes = if self.allocated_by_writes() { 0 } else { size_bytes };
        let mut file = |name: String| {
            let index = match files.iter().position(|file| file.name == name) {
                Some(index) => {
                    files[index].size_bytes = files[index].size_bytes.max(layout_bytes);
                    index
                }
                None => {
                    let size_bytes = layout_bytes;
                    files.push(FileSpec { name: name.clone(), device: 0, size_bytes });
                    files.len() - 1
                }
            };
            (Place::File(index), Target { name, capacity_bytes: size_bytes, zones: None })
        };
        Ok(match &self.filenames {
            Some((names, _)) => vec![names.iter().map(|name| file(in_directory(name))).collect()],
            None => (0..self.clones)
                .map(|clone| vec![file(in_directory(&format!("{}.{clone}.0", self.name)))])
                .collect(),
        })
    }
}

impl FioRunJob {
    /// `pre_read=1`: per clone, a sequential buffered read of the clone's region of each of
    /// its files, in blocks of the job's largest read block (fio's `pre_read_file` reads
    /// `io_size` bytes from `file_offset` in `max_bs[DDIR_READ]` chunks), file after file.
    /// Only the region keys (`size`, `offset`, `offset_increment`) of the job's `spec` are
    /// kept, on the same `places`, so the pre-read covers what the job's I/O will address,
    /// and its CPU keys: clone i pre-reads as process `first_process + i + 1` on the CPUs
    /// of fio's thread `first_thread + i`.
    fn pre_read_issuers(
        &self,
        spec: &WorkloadSpec,
        targets: &[Target],
        places: &[Vec<(Place, Target)>],
        prng: &Prng,
        (first_process, first_thread): (u32, u32),
        file_sizes: &crate::job::FileSizes,
    ) -> Result<Vec<Box<dyn crate::Issuer>>, ParamError> {
        let error = |error| refuse(&self.at, format!("job `{}` pre_read: {error}", self.name));
        let block_bytes =
            JobConfig::from_params(&spec.params).map_err(error)?.block_bounds_bytes().1;
        let text = spec.to_string();
        let body = text.strip_prefix("job:").or_else(|| text.strip_prefix("job")).unwrap_or("");
        let mut keys: Vec<String> = body
            .split(',')
            .filter(|pair| {
                // fio's job thread pre-reads after setting its affinity (backend.c
                // `thread_main`), so the pre-read runs where the job's clones run.
                ["size=", "offset=", "offset_increment=", "numjobs=", "cpus_allowed"]
                    .iter()
                    .any(|key| pair.starts_with(key))
            })
            .map(str::to_owned)
            .collect();
        keys.extend([
            "rw=read".to_owned(),
            format!("bs={block_bytes}"),
            "ioengine=psync".to_owned(),
            "direct=0".to_owned(),
            "file_service_type=sequential".to_owned(),
        ]);
        let spec = WorkloadSpec::parse(&format!("job:{}", keys.join(","))).map_err(error)?;
        let mut config = JobConfig::from_params(&spec.params).map_err(error)?;
        config.first_thread = first_thread;
        config.file_sizes = Some(file_sizes.clone());
        config.size_at_start = self.sized_at_start();
        config.whole_files = self.sized_per_file();
        let plan = config
            .plan_as(&spec.params, targets, prng, first_process, &self.name, places)
            .map_err(error)?;
        Ok(plan.phases.into_iter().flat_map(|phase| phase.issuers).collect())
    }

    /// `file_append=1` on the places [`FioRunJob::places`] gave: a regular file's region
    /// starts at the file's size as fio's setup finds it (`set_up_bytes`, by file index, for
    /// files that existed before this job: `files_before`), fio's `get_start_offset`, which
    /// returns before `offset` and `offset_increment` count; the file is laid out (or
    /// preallocated) to that size plus the job's `size`, as fio's `setup_files` extends it
    /// (`io_size + file_offset`). A device keeps its places (fio: no effect on a non-regular
    /// file). Returns the job's spec with that `offset`.
    fn appended(
        &self,
        at: &Location,
        places: &mut [Vec<(Place, Target)>],
        files: &mut [FileSpec],
        set_up_bytes: &[u64],
        files_before: usize,
    ) -> Result<WorkloadSpec, ParamError> {
        let refused = |why: &str| refuse(at, format!("`file_append=1` {why}"));
        if self.spec.params.text("ioengine") == "null" {
            return Err(refused(
                "with ioengine=null: the null engine's file is never opened, so it has no size to \
                 append at",
            ));
        }
        let sized_at_setup = self.create_serialize && !self.fill_device && self.ramp.is_none();
        if !sized_at_setup || self.sized_per_file() {
            return Err(refused(
                "is honoured for a job whose files are set up before the run, one size per job \
                 (create_serialize=1, no fill_device, no ramp_time, no nrfiles/filesize): fio \
                 would take each file's size as its job starts, which is not modelled",
            ));
        }
        let mut existing: Option<u64> = None;
        for (place, _) in places.iter().flatten() {
            let Place::File(index) = *place else { continue };
            let bytes = if index < files_before { set_up_bytes.get(index).copied() } else { None };
            let bytes = bytes.unwrap_or(0);
            if existing.is_some_and(|other| other != bytes) {
                return Err(refused(
                    "on files of different sizes: the simulator starts every file of a job at \
                     one offset (fio starts each at its own size)",
                ));
            }
            existing = Some(bytes);
        }
        // Devices only (no effect), or new files: they start empty, at offset 0.
        let Some(existing) = existing.filter(|&bytes| bytes > 0) else {
            return Ok(self.spec.clone());
        };
        let Some(size) = self.size_bytes else {
            return Err(refused(
                "without `size`: fio's job then has nothing past the file's end to do (\"file \
                 may be ignored\")",
            ));
        };
        let layout = !self.allocated_by_writes();
        for (place, target) in places.iter_mut().flatten() {
            if let Place::File(index) = *place {
                target.capacity_bytes = existing + size;
                if layout {
                    files[index].size_bytes = files[index].size_bytes.max(existing + size);
                }
            }
        }
        let text = self.spec.to_string();
        let body = text.strip_prefix("job:").or_else(|| text.strip_prefix("job")).unwrap_or("");
        let mut keys: Vec<String> = body
            .split(',')
            .filter(|pair| {
                !pair.is_empty()
                    && !pair.starts_with("offset=")
                    && !pair.starts_with("offset_increment=")
            })
            .map(str::to_owned)
            .collect();
        keys.push(format!("offset={existing}"));
        WorkloadSpec::parse(&format!("job:{}", keys.join(",")))
            .map_err(|error| refuse(at, format!("job `{}` file_append: {error}", self.name)))
    }
}

impl FioRun {
    /// The same jobs with each `write_iolog` path tagged `tag` ([`crate::WorkloadSpec::fio_tagged`]).
    pub(crate) fn tagged(&self, tag: &str) -> FioRun {
        let mut run = self.clone();
        for job in &mut run.jobs {
            if let Some((path, _)) = &mut job.write_iolog {
                *path = tagged_path(path, tag);
            }
        }
        run
    }
}

/// A file name as fio's init.c `make_filename` makes it: `format`'s `$jobname`, `$jobnum`
/// (the clone) and `$filenum` (any case) replaced, or `JOB.CLONE.FILE` without a format
/// (fio's default `$jobname.$jobnum.$filenum`). The mapping refuses `$clientuid`.
pub fn file_name(format: Option<&str>, job: &str, clone: u32, file: u32) -> String {
    let Some(format) = format.filter(|format| !format.is_empty()) else {
        return format!("{job}.{clone}.{file}");
    };
    let mut name = format.to_owned();
    for (keyword, value) in [
        ("$jobname", job.to_owned()),
        ("$jobnum", clone.to_string()),
        ("$filenum", file.to_string()),
    ] {
        let mut from = 0;
        while let Some(found) = name[from..].to_ascii_lowercase().find(keyword) {
            let at = from + found;
            name.replace_range(at..at + keyword.len(), &value);
            from = at + value.len();
        }
    }
    name
}

/// `path` with `.TAG` before its extension (`w.log` → `w.TAG.log`), or after its name when it
/// has none (`w` → `w.TAG`), as the fio log files of several schedulers are named.
fn tagged_path(path: &str, tag: &str) -> String {
    let name_start = path.rfind('/').map_or(0, |slash| slash + 1);
    match path[name_start..].rfind('.') {
        Some(dot) if dot > 0 => {
            let dot = name_start + dot;
            format!("{}.{tag}{}", &path[..dot], &path[dot..])
        }
        _ => format!("{path}.{tag}"),
    }
}

impl FioRunJob {
    /// With `write_iolog`, each clone's issuer logging its I/O (`crate::iolog`), clone `i`'s
    /// files being `places[i mod n]`; without, the issuers as they are.
    fn iolog_writers(
        &self,
        issuers: Vec<Box<dyn crate::Issuer>>,
        places: &[Vec<(Place, Target)>],
        targets: &[Target],
        files: &[FileSpec],
    ) -> Result<Vec<Box<dyn crate::Issuer>>, ParamError> {
        let Some((path, at)) = &self.write_iolog else { return Ok(issuers) };
        let sink = crate::iolog::IologFile::open(path, at)?;
        let named = |place: Place| (place, crate::iolog::logged_name(place, targets, files));
        let known: Vec<(Place, String)> = (0..targets.len())
            .map(Place::Device)
            .chain((0..files.len()).map(Place::File))
            .map(named)
            .collect();
        Ok(issuers
            .into_iter()
            .enumerate()
            .map(|(clone, issuer)| {
                let names = match places.get(clone % places.len().max(1)) {
                    Some(clone_places) => clone_places.iter().map(|(p, _)| named(*p)).collect(),
                    None => vec![named(Place::Device(0))],
                };
                Box::new(crate::iolog::IologWriter::new(issuer, sink.clone(), names, known.clone()))
                    as Box<dyn crate::Issuer>
            })
            .collect())
    }
}

impl FioRun {
    /// Each job's reporting options and group, in file order.
    pub(crate) fn reporting(&self) -> Vec<FioReporting> {
        self.jobs
            .iter()
            .map(|job| FioReporting {
                job: job.name.clone(),
                group: job.group,
                options: job.reporting.clone(),
            })
            .collect()
    }

    /// Maps every job of `file`, read from `path`.
    pub(crate) fn new(path: &str, file: &FioJobFile) -> Result<FioRun, ParamError> {
        if file.jobs.is_empty() {
            return Err(ParamError::Impossible {
                component: format!("fio {path}"),
                key: "jobs",
                problem: "the file defines no job".into(),
            });
        }
        let mut jobs: Vec<FioRunJob> = file.jobs.iter().map(map_job).collect::<Result<_, _>>()?;
        // Number the reporting groups: each job that starts one adds one.
        let mut group = 0;
        for (index, job) in jobs.iter_mut().enumerate() {
            if index > 0 && job.group == 1 {
                group += 1;
            }
            job.group = group;
        }
        Ok(FioRun { path: path.to_owned(), jobs })
    }

    /// Caps every job (fio-compat.md §0: a documented override so fio's examples run
    /// quickly): `size` and `io_size` at most `max_size_bytes`, and `runtime` at most
    /// `max_runtime` (a job without a runtime gets it, so no job runs longer). Regular files
    /// shrink with the jobs' sizes. `elevator sim FILE.fio --max-size SIZE --max-runtime TIME`.
    pub(crate) fn capped(
        &self,
        max_size_bytes: Option<u64>,
        max_runtime: Option<Duration>,
    ) -> Result<FioRun, ParamError> {
        let mut capped = self.clone();
        for job in &mut capped.jobs {
            let text = job.spec.to_string();
            let body = text.strip_prefix("job:").or_else(|| text.strip_prefix("job")).unwrap_or("");
            let mut keys: Vec<(String, String)> = body
                .split(',')
                .filter_map(|pair| pair.split_once('='))
                .map(|(key, value)| (key.to_owned(), value.to_owned()))
                .collect();
            let size_of = |value: &str| units::parse_size_bytes(value).ok();
            if let Some(max) = max_size_bytes {
                let mut has_size = false;
                for (key, value) in &mut keys {
                    if key == "size" || key == "io_size" {
                        has_size |= key == "size";
                        if size_of(value).is_none_or(|bytes| bytes > max) {
                            *value = max.to_string();
                        }
                    }
                }
                // A job sized by its files when it starts (`create_serialize=0`) reads what
                // the earlier, capped jobs left: capping its size would size it otherwise.
                if !job.sized_at_start() {
                    if !has_size {
                        keys.push(("size".into(), max.to_string()));
                    }
                    job.size_bytes = Some(job.size_bytes.map_or(max, |bytes| bytes.min(max)));
                }
                // Each file at most the cap too (a job's files would otherwise outgrow it).
                job.filesize = job.filesize.map(|(lo, hi)| (lo.min(max), hi.min(max)));
            }
            if let Some(max) = max_runtime {
                let given = keys.iter_mut().find(|(key, _)| key == "runtime");
                match given {
                    Some((_, value)) => {
                        let shorter = units::parse_duration(value, 1_000_000_000)
                            .map_or(true, |time| time > max);
                        if shorter {
                            *value = max.to_string();
                        }
                    }
                    None => keys.push(("runtime".into(), max.to_string())),
                }
                job.ramp = job.ramp.map(|ramp| ramp.min(max));
            }
            let text: Vec<String> =
                keys.iter().map(|(key, value)| format!("{key}={value}")).collect();
            job.spec = WorkloadSpec::parse(&format!("job:{}", text.join(",")))
                .map_err(|error| refuse(&job.at, format!("job `{}` capped: {error}", job.name)))?;
        }
        Ok(capped)
    }

    /// fio's thread number (0-based) of job `index`'s first clone: fio numbers every clone of
    /// every job of the file in order (init.c `get_new_job`), whatever group it runs in; what
    /// `cpus_allowed_policy=split` counts with (backend.c `thread_main`).
    fn first_thread(&self, index: usize) -> u32 {
        self.jobs[..index].iter().fold(0_u32, |sum, job| sum.saturating_add(job.clones))
    }

    /// One phase per group; each job's clones are processes numbered after the previous
    /// jobs' in the same phase, and each job draws from its own random stream. A job with
    /// `wait_for=NAME` starts a new phase when NAME's group is the last one (so it starts
    /// after NAME finished), or joins the last group when NAME finished in an earlier one.
    /// A group whose jobs have a `ramp_time` gets a ramp phase first, the same jobs run
    /// time-based for the ramp, whose I/O is reported apart from the measured phase.
    pub(crate) fn plan(&self, targets: &[Target], prng: &Prng) -> Result<WorkloadPlan, ParamError> {
        let mut phases: Vec<PhasePlan> = Vec::new();
        let mut files = Vec::new();
        // zonemode=zbd: one view of each zoned device for the whole file (fio's per-file zbd_info).
        let zbd_registry = crate::zbd::ZbdRegistry::default();
        // Each regular file's size as the run goes (laid out, then grown by completed writes),
        // for the jobs that take a file's size when they start (`create_serialize=0`).
        let file_sizes = crate::job::FileSizes::default();
        // Each regular file's size as fio's setup leaves it (`real_file_size`, the largest
        // extent a job gave it so far), by file index: where `file_append` starts.
        let mut set_up_bytes: Vec<u64> = Vec::new();
        // Per phase, the jobs in it.
        let mut members: Vec<Vec<usize>> = Vec::new();
        // Per phase, the pre-reads of its `pre_read` jobs, run before it.
        let mut pre_reads: Vec<PhasePlan> = Vec::new();
        // Per phase, the flag an `exitall` job raises when it finishes.
        let mut exits: Vec<Arc<AtomicBool>> = Vec::new();
        // Per phase, its flows by `flow_id` (fio's flows are shared by the jobs running).
        let mut flows: Vec<std::collections::BTreeMap<u64, SharedFlow>> = Vec::new();
        for (index, job) in self.jobs.iter().enumerate() {
            let job_prng = prng.fork_indexed("fio", index as u64);
            let mut new_phase = index == 0 || job.new_group;
            if let Some((name, at)) = &job.wait_for
                && !job.new_group
            {
                let earlier = self.jobs[..index].iter().position(|other| &other.name == name);
                let Some(awaited) = earlier else {
                    return Err(refuse(at, format!("wait_for={name}: no earlier job `{name}`")));
                };
                let last = members.last().expect("a job came before");
                if last.contains(&awaited) {
                    if last.iter().any(|&other| self.jobs[other].name != *name) {
                        return Err(refuse(
                            at,
                            format!(
                                "wait_for={name}: `{name}` runs in a group with other jobs; \
                                 the simulator starts a job after a whole group, not one job of it"
                            ),
                        ));
                    }
                    new_phase = true;
                }
            }
            if new_phase {
                phases.push(PhasePlan {
                    name: String::new(),
                    issuers: Vec::new(),
                    stonewall: false,
                });
                members.push(Vec::new());
                pre_reads.push(PhasePlan {
                    name: String::new(),
                    issuers: Vec::new(),
                    stonewall: false,
                });
                exits.push(Arc::new(AtomicBool::new(false)));
                flows.push(std::collections::BTreeMap::new());
            }
            members.last_mut().expect("a phase was pushed").push(index);
            let phase = phases.last_mut().expect("a phase was pushed");
            let first_process = phase.issuers.len() as u32;
            if let (Some(_), Some(at)) = (&job.replay, &job.file_append) {
                return Err(refuse(
                    at,
                    "`file_append=1` with read_iolog: the log's offsets are replayed as logged, \
                     which the simulator does not shift to the file's end"
                        .into(),
                ));
            }
            if let Some(replay) = &job.replay {
                let issuers = replay.issuers(
                    job,
                    targets,
                    &mut files,
                    (first_process, self.first_thread(index)),
                    &GroupExit {
                        flag: exits.last().expect("a phase was pushed").clone(),
                        sets: job.exitall,
                    },
                )?;
                if !phase.name.is_empty() {
                    phase.name.push('+');
                }
                phase.name.push_str(&job.name);
                phase.issuers.extend(setup_only(job, issuers));
                continue;
            }
            let files_before = files.len();
            let mut places =
                job.places(targets, &mut files, &prng.fork_indexed("fio_files", index as u64))?;
            let spec = match &job.file_append {
                Some(at) => {
                    job.appended(at, &mut places, &mut files, &set_up_bytes, files_before)?
                }
                None => job.spec.clone(),
            };
            set_up_bytes.resize(files.len(), 0);
            for (place, target) in places.iter().flatten() {
                if let Place::File(file) = place {
                    set_up_bytes[*file] = set_up_bytes[*file].max(target.capacity_bytes);
                }
            }
            let mut config = JobConfig::from_params(&spec.params)
                .map_err(|error| refuse(&job.at, format!("job `{}`: {error}", job.name)))?;
            config.file_sizes = Some(file_sizes.clone());
            config.size_at_start = job.sized_at_start();
            config.whole_files = job.sized_per_file();
            config.first_thread = self.first_thread(index);
            // fio pre-reads a create_only job's files too (`thread_main` pre-reads before its
            // loop, which the job marked done then leaves at once).
            if job.pre_read {
                let pre = pre_reads.last_mut().expect("a phase was pushed");
                let issuers = job.pre_read_issuers(
                    &spec,
                    targets,
                    &places,
                    &prng.fork_indexed("fio-pre-read", index as u64),
                    (pre.issuers.len() as u32, self.first_thread(index)),
                    &file_sizes,
                )?;
                if !pre.name.is_empty() {
                    pre.name.push('+');
                }
                pre.name.push_str(&job.name);
                pre.issuers.extend(issuers);
            }
            let phase_flows = flows.last_mut().expect("a phase was pushed");
            config.flow = Some(phase_flows.entry(config.flow_id).or_default().clone());
            if let Some(zbd) = &mut config.zbd {
                zbd.2 = zbd_registry.clone();
            }
            config.group_exit = Some(GroupExit {
                flag: exits.last().expect("a phase was pushed").clone(),
                sets: job.exitall,
            });
            let plan = config
                .plan_as(&spec.params, targets, &job_prng, first_process, &job.name, &places)
                .map_err(|error| refuse(&job.at, format!("job `{}`: {error}", job.name)))?;
            files.extend(plan.files);
            for planned in plan.phases {
                if !phase.name.is_empty() {
                    phase.name.push('+');
                }
                phase.name.push_str(&job.name);
                let issuers = job.iolog_writers(planned.issuers, &places, targets, &files)?;
                phase.issuers.extend(setup_only(job, issuers));
            }
        }
        let mut out = Vec::with_capacity(phases.len());
        for ((phase, jobs), mut pre_read) in phases.into_iter().zip(&members).zip(pre_reads) {
            if !pre_read.issuers.is_empty() {
                pre_read.name.push_str(" (pre_read)");
                out.push(pre_read);
            }
            if let Some(ramp_phase) =
                self.ramp_phase(jobs, targets, prng, &mut files, &zbd_registry, &file_sizes)?
            {
                out.push(ramp_phase);
            }
            out.push(phase);
        }
        *file_sizes.0.lock().expect("file sizes lock") =
            files.iter().map(|file| file.size_bytes).collect();
        Ok(WorkloadPlan { files, phases: out })
    }

    /// The ramp phase of a group whose jobs all have the same `ramp_time`: the same jobs,
    /// time-based for the ramp, from streams of their own. Mixed ramps in a group are refused.
    /// With `zonemode=zbd` the ramp shares the file's view of each zoned device
    /// (`zbd_registry`): the measured phase writes on from the write pointers the ramp left,
    /// as fio's one `zbd_info` per file does across its ramp.
    fn ramp_phase(
        &self,
        jobs: &[usize],
        targets: &[Target],
        prng: &Prng,
        files: &mut Vec<FileSpec>,
        zbd_registry: &crate::zbd::ZbdRegistry,
        file_sizes: &crate::job::FileSizes,
    ) -> Result<Option<PhasePlan>, ParamError> {
        let ramps: Vec<Option<Duration>> = jobs.iter().map(|&j| self.jobs[j].ramp).collect();
        let Some(ramp) = ramps[0] else {
            if let Some(&j) = jobs.iter().find(|&&j| self.jobs[j].ramp.is_some()) {
                return Err(refuse(
                    &self.jobs[j].at,
                    format!(
                        "job `{}`: ramp_time differs within its group (the simulator ramps a whole group)",
                        self.jobs[j].name
                    ),
                ));
            }
            return Ok(None);
        };
        if let Some(&j) = jobs.iter().find(|&&j| self.jobs[j].ramp != Some(ramp)) {
            return Err(refuse(
                &self.jobs[j].at,
                format!(
                    "job `{}`: ramp_time differs within its group (the simulator ramps a whole group)",
                    self.jobs[j].name
                ),
            ));
        }
        let mut phase = PhasePlan { name: String::new(), issuers: Vec::new(), stonewall: false };
        for &index in jobs {
            let job = &self.jobs[index];
            let text = job.spec.to_string();
            let body = text.strip_prefix("job:").or_else(|| text.strip_prefix("job")).unwrap_or("");
            let mut keys: Vec<&str> = body
                .split(',')
                .filter(|pair| {
                    !pair.is_empty()
                        && !["runtime=", "time_based=", "verify=", "end_fsync="]
                            .iter()
                            .any(|key| pair.starts_with(key))
                })
                .collect();
            let runtime = format!("runtime={ramp}");
            keys.extend(["time_based=1", runtime.as_str()]);
            let spec = WorkloadSpec::parse(&format!("job:{}", keys.join(",")))
                .map_err(|error| refuse(&job.at, format!("job `{}` ramp: {error}", job.name)))?;
            let places =
                job.places(targets, files, &prng.fork_indexed("fio_files", index as u64))?;
            let first_process = phase.issuers.len() as u32;
            let ramp_error = |error| refuse(&job.at, format!("job `{}`: {error}", job.name));
            let mut config = JobConfig::from_params(&spec.params).map_err(ramp_error)?;
            config.first_thread = self.first_thread(index);
            config.file_sizes = Some(file_sizes.clone());
            config.size_at_start = job.sized_at_start();
            config.whole_files = job.sized_per_file();
            if let Some(zbd) = &mut config.zbd {
                zbd.2 = zbd_registry.clone();
            }
            let plan = config
                .plan_as(
                    &spec.params,
                    targets,
                    &prng.fork_indexed("fio-ramp", index as u64),
                    first_process,
                    &job.name,
                    &places,
                )
                .map_err(ramp_error)?;
            if !phase.name.is_empty() {
                phase.name.push('+');
            }
            phase.name.push_str(&job.name);
            for planned in plan.phases {
                phase.issuers.extend(setup_only(job, planned.issuers));
            }
        }
        phase.name.push_str(" (ramp)");
        Ok(Some(phase))
    }
}

/// `create_only=1`: the job's clones, planned (so their files are set up as fio sets them
/// up), replaced by clones that do no I/O and end at once, as fio's job marked done by its
/// file setup; they stay in the run so that fio's reports list the job with no I/O.
fn setup_only(
    job: &FioRunJob,
    issuers: Vec<Box<dyn crate::Issuer>>,
) -> Vec<Box<dyn crate::Issuer>> {
    if !job.create_only {
        return issuers;
    }
    issuers
        .into_iter()
        .map(|issuer| {
            let done: Box<dyn crate::Issuer> = Box::new(SetupOnly {
                name: issuer.name().to_owned(),
                process: issuer.process(),
                cpu: issuer.cpu(),
            });
            done
        })
        .collect()
}

/// A clone of a `create_only=1` job: no I/O (see [`setup_only`]).
#[derive(Debug)]
struct SetupOnly {
    name: String,
    process: elevator_core::ProcessId,
    /// The clone's thread's CPUs and engine: fio's marked-done thread still starts there.
    cpu: crate::IssuerCpu,
}

impl crate::Issuer for SetupOnly {
    fn name(&self) -> &str {
        &self.name
    }

    fn cpu(&self) -> crate::IssuerCpu {
        self.cpu.clone()
    }

    fn process(&self) -> elevator_core::ProcessId {
        self.process
    }

    fn poll(&mut self, _now: elevator_core::Instant) -> crate::Poll {
        crate::Poll::Done
    }

    fn complete(&mut self, _now: elevator_core::Instant, _io: crate::IoId) {}
}

impl WorkloadSpec {
    /// For one live target (`elevator run`, `elevator kernel compare`; issue 17): every job of
    /// a `fio:FILE` workload does its I/O on the device named `device`, as if its `filename`
    /// named it (the caller checked that the file's own `filename`s, if any, are that target);
    /// `None` for a workload that is no job file. Added for the live slice; the mapping is
    /// unchanged.
    pub fn fio_on_one_device(&self, device: &str) -> Option<WorkloadSpec> {
        let mut run = (**self.fio.as_ref()?).clone();
        for job in &mut run.jobs {
            let at = job.filenames.as_ref().map_or_else(|| job.at.clone(), |(_, at)| at.clone());
            job.filenames = Some((vec![device.to_owned()], at));
            job.directory = None;
        }
        Some(WorkloadSpec { fio: Some(Box::new(run)), ..self.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IoKind;
    use crate::testing::{devices, run};

    // Proves a job's regular files that are devices of their own (a live run's targets, named
    // by path) take the job's I/O there: `b`'s two clones each on their `b.N.0`, `c` on
    // `sub/c.0.0`, `a` on `x`, and no simulated file is laid out; without such devices the
    // same jobs use regular files on the filesystem.
    #[test]
    fn regular_files_named_as_devices_are_those_devices() {
        let text = "[global]\nsize=64k\nbs=4k\nrw=write\n[a]\nfilename=x\n[b]\nnumjobs=2\n\
                    [c]\ndirectory=sub/\n";
        let spec = parse("as_devices", text).unwrap();
        let names = ["x", "b.0.0", "b.1.0", "sub/c.0.0"];
        let live = devices(&names.map(|name| (name, 1 << 20)));
        let plan = spec.plan(&live, &Prng::new(1)).unwrap();
        assert!(plan.files.is_empty(), "no simulated file");
        let result = run(plan, |_| Duration::ZERO);
        for issuer in 0..4 {
            let mine: Vec<Place> =
                result.records.iter().filter(|r| r.issuer == issuer).map(|r| r.io.place).collect();
            assert_eq!(mine.len(), 16, "issuer {issuer}: 64 KiB in 4 KiB writes");
            assert!(mine.iter().all(|place| *place == Place::Device(issuer)), "issuer {issuer}");
        }
        let plain = spec.plan(&targets(), &Prng::new(1)).unwrap();
        assert_eq!(plain.files.len(), 4, "regular files on the simulated filesystem");
        // Under /dev/ (tmpfs /dev/shm) a path names its device less `/dev/`, as `filename`.
        let shm = parse("as_devices_shm", "[c]\nsize=64k\ndirectory=/dev/shm\n").unwrap();
        let plan = shm.plan(&devices(&[("sda", 1 << 20), ("shm/c.0.0", 1 << 20)]), &Prng::new(1));
        let result = run(plan.unwrap(), |_| Duration::ZERO);
        assert!(result.records.iter().all(|record| record.io.place == Place::Device(1)));
    }

    // Proves each scheduler's write_iolog gets its own file name: the tag goes before the
    // extension of the file name only (not of a directory), or after a name without one.
    #[test]
    fn tagged_iolog_paths() {
        assert_eq!(tagged_path("w.log", "bfq"), "w.bfq.log");
        assert_eq!(tagged_path("logs.d/w", "bfq"), "logs.d/w.bfq");
        assert_eq!(tagged_path("/tmp/a.b/w.iolog", "none"), "/tmp/a.b/w.none.iolog");
        assert_eq!(tagged_path(".hidden", "none"), ".hidden.none");
    }

    /// Writes `text` to a file of this test's own and parses it as `fio:FILE`.
    fn parse(test: &str, text: &str) -> Result<WorkloadSpec, ParamError> {
        let dir = std::env::temp_dir().join(format!("elevator-fio-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{test}.fio"));
        std::fs::write(&path, text).unwrap();
        WorkloadSpec::parse(&format!("fio:{}", path.display()))
    }

    fn targets() -> Vec<Target> {
        devices(&[("sda", 1 << 30), ("sdb", 1 << 30)])
    }

    const TWO_JOBS: &str = "[global]\nsize=1m\n\n[reader]\nrw=randread\nbs=4k\niodepth=4\n\
                            ioengine=libaio\ndirect=1\n\n[writer]\nrw=write\nbs=64k\n";

    // Proves the jobs of a group share one phase as distinct processes, each with its own
    // pattern and amount, and both make progress at once: their operations interleave in time
    // (neither runs only after the other finished).
    #[test]
    fn a_group_runs_its_jobs_concurrently() {
        let spec = parse("two", TWO_JOBS).unwrap();
        let plan = spec.plan(&targets(), &Prng::new(3)).unwrap();
        assert_eq!(plan.phases.len(), 1);
        let names: Vec<&str> = plan.phases[0].issuers.iter().map(|i| i.name()).collect();
        assert_eq!(names, ["reader/0", "writer/0"]);
        let processes: Vec<u32> = plan.phases[0].issuers.iter().map(|i| i.process().0).collect();
        assert_eq!(processes, [1, 2]);
        let result = run(plan, |_| Duration::from_micros(100));
        let reader: Vec<_> = result.records.iter().filter(|r| r.issuer == 0).collect();
        let writer: Vec<_> = result.records.iter().filter(|r| r.issuer == 1).collect();
        assert_eq!(reader.len(), 256, "1 MiB in 4 KiB reads");
        assert!(reader.iter().all(|r| r.io.kind == IoKind::Read && r.io.size_bytes == 4096));
        assert_eq!(writer.len(), 16, "1 MiB in 64 KiB writes");
        assert!(
            writer.iter().all(|r| r.io.kind == IoKind::Write && !r.io.direct),
            "fio's direct=0"
        );
        let reader_end = reader.iter().map(|r| r.submitted).max().unwrap();
        let writer_end = writer.iter().map(|r| r.submitted).max().unwrap();
        let reader_start = reader.iter().map(|r| r.submitted).min().unwrap();
        let writer_start = writer.iter().map(|r| r.submitted).min().unwrap();
        assert!(writer_start < reader_end && reader_start < writer_end, "interleaved in time");
    }

    // Proves `stonewall` puts a job in a new phase, run after the first group finished, while
    // `new_group` alone starts a new reporting group whose jobs still run at once with the
    // previous ones (fio: only stonewall waits).
    #[test]
    fn stonewall_starts_a_new_phase() {
        let text = format!("{TWO_JOBS}stonewall\n");
        let plan = parse("stonewall", &text).unwrap().plan(&targets(), &Prng::new(3)).unwrap();
        let names: Vec<&str> = plan.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["reader", "writer"]);
        let result = run(plan, |_| Duration::from_micros(100));
        let first_end = result.phase(0).iter().map(|r| r.completed).max().unwrap();
        let second_start = result.phase(1).iter().map(|r| r.submitted).min().unwrap();
        assert!(second_start >= first_end);
        assert!(result.phase(1).iter().all(|r| r.io.kind == IoKind::Write));
        let text = format!("{TWO_JOBS}new_group\n");
        let spec = parse("new_group", &text).unwrap();
        let groups: Vec<u32> = spec.fio.as_ref().unwrap().jobs.iter().map(|j| j.group).collect();
        assert_eq!(groups, [0, 1], "new_group starts reporting group 1");
        let plan = spec.plan(&targets(), &Prng::new(3)).unwrap();
        let names: Vec<&str> = plan.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["reader+writer"], "new_group does not wait");
    }

    // Proves an option the simulator does not honour, and an engine doing no block I/O, are
    // refused naming the file, the line and the option or engine.
    #[test]
    fn unsupported_options_are_refused_with_their_line() {
        let error = parse("zbd", "[a]\nrw=write\nzonemode=zip\n").unwrap_err().to_string();
        assert!(error.contains("zbd.fio:3") && error.contains("zonemode"), "{error}");
        let error = parse("net", "[a]\nioengine=net\n").unwrap_err().to_string();
        assert!(error.contains("net.fio:1") && error.contains("ioengine=net"), "{error}");
        let error = parse("mmap", "[a]\nsize=1m\nioengine=mmap\n").unwrap_err().to_string();
        assert!(error.contains("mmap.fio:3") && error.contains("ioengine=mmap"), "{error}");
        let error = parse("zonesize", "[a]\nsize=1m\nzonesize=64k\n").unwrap_err().to_string();
        assert!(error.contains("zonesize.fio:3") && error.contains("zonemode=strided"), "{error}");
        let text = "[a]\nsize=1m\nrw=randread\ncmdprio_percentage=10\n";
        let error = parse("cmdprio", text).unwrap_err().to_string();
        assert!(
            error.contains("cmdprio.fio:1") && error.contains("io_uring and libaio"),
            "{error}"
        );
        // Plan-time refusals name the job's section or the option's line: a regular file
        // without a size, a /dev/ name that is no device.
        let spec = parse("file", "[global]\n[a]\nfilename=scratch.dat\n").unwrap();
        let error = spec.plan(&targets(), &Prng::new(1)).unwrap_err().to_string();
        assert!(error.contains("file.fio:2") && error.contains("needs `size`"), "{error}");
        let spec = parse("nodev", "[a]\nsize=1m\nfilename=/dev/sdq\n").unwrap();
        let error = spec.plan(&targets(), &Prng::new(1)).unwrap_err().to_string();
        assert!(error.contains("nodev.fio:3: option: filename: no device `/dev/sdq`"), "{error}");
    }

    // Proves a regular `filename` becomes one file of `size` on the first device, shared by
    // the clones and by another job naming it, and `directory` without `filename` gives each
    // clone its own file `NAME.CLONE.0` there, as fio names them.
    #[test]
    fn regular_files_become_plan_files() {
        let text = "[global]\nsize=1m\n[a]\nfilename=data\nnumjobs=2\n[b]\nfilename=data\n\
                    rw=write\n[c]\ndirectory=/scratch/\nnumjobs=2\n";
        let plan = parse("files", text).unwrap().plan(&targets(), &Prng::new(2)).unwrap();
        let names: Vec<(&str, usize, u64)> =
            plan.files.iter().map(|f| (f.name.as_str(), f.device, f.size_bytes)).collect();
        let expected =
            [("data", 0, 1 << 20), ("/scratch/c.0.0", 0, 1 << 20), ("/scratch/c.1.0", 0, 1 << 20)];
        assert_eq!(names, expected);
        let result = run(plan, |_| Duration::from_micros(100));
        let places = |issuer: usize| {
            let places: std::collections::BTreeSet<String> = result
                .records
                .iter()
                .filter(|r| r.issuer == issuer)
                .map(|r| format!("{:?}", r.io.place))
                .collect();
            places.into_iter().collect::<Vec<_>>()
        };
        for (issuer, file) in
            [(0, "File(0)"), (1, "File(0)"), (2, "File(0)"), (3, "File(1)"), (4, "File(2)")]
        {
            assert_eq!(places(issuer), [file], "issuer {issuer}");
        }
        assert!(result.records.iter().all(|r| r.io.offset_bytes + r.io.size_bytes <= 1 << 20));
        // Scaling (compare's --scale) shrinks the files with the jobs' sizes.
        let scaled = parse("files_scaled", text).unwrap().scaled(0.25).unwrap();
        let plan = scaled.plan(&targets(), &Prng::new(2)).unwrap();
        assert!(plan.files.iter().all(|file| file.size_bytes == 256 << 10));
    }

    // Proves fio's `create_serialize=0` (files set up as the job starts, fio's `thread_main`):
    // a reader without `size` reads the file as far as the earlier job's completed writes
    // took it — 2 MiB written into an empty 4 MiB region (`fallocate=none`: nothing laid out),
    // so neither the region nor any layout gives that size — while with the default
    // (`create_serialize=1`, set up before any job runs) the same reader finds no file and is
    // refused naming its section, as fio's "you need to specify size=". A reader of a file an
    // earlier job laid out before the run takes that layout's size (fio sets files up in job
    // order).
    #[test]
    fn create_serialize_sizes_a_job_by_its_files_when_it_starts() {
        let writer = "[writer]\nfilename=data\nrw=write\nbs=64k\nsize=4m\nio_size=2m\n";
        let reader = "[reader]\nstonewall\nfilename=data\nrw=read\nbs=64k\n";
        let text = format!("{writer}fallocate=none\n\n{reader}create_serialize=0\n");
        let plan = parse("serialize0", &text).unwrap().plan(&targets(), &Prng::new(1)).unwrap();
        assert_eq!(plan.files.iter().map(|f| f.size_bytes).collect::<Vec<_>>(), [0]);
        let result = run(plan, |_| Duration::from_micros(100));
        let written: u64 = result.phase(0).iter().map(|r| r.io.size_bytes).sum();
        let reads = result.phase(1);
        assert_eq!(written, 2 << 20);
        assert!(reads.iter().all(|r| r.io.kind == IoKind::Read));
        assert_eq!(reads.iter().map(|r| r.io.size_bytes).sum::<u64>(), 2 << 20);
        assert!(reads.iter().all(|r| r.io.offset_bytes + r.io.size_bytes <= 2 << 20));
        let text = format!("{writer}fallocate=none\n\n{reader}");
        let spec = parse("serialize1", &text).unwrap();
        let error = spec.plan(&targets(), &Prng::new(1)).unwrap_err().to_string();
        assert!(error.contains("serialize1.fio:9") && error.contains("needs `size`"), "{error}");
        // Laid out before the run (fallocate's default): the reader finds 4 MiB.
        let plan = parse("laid_out", &format!("{writer}\n{reader}"))
            .unwrap()
            .plan(&targets(), &Prng::new(1));
        let result = run(plan.unwrap(), |_| Duration::from_micros(100));
        assert_eq!(result.phase(1).iter().map(|r| r.io.size_bytes).sum::<u64>(), 4 << 20);
    }

    // Proves fio's `create_on_open=1`: the job's file is not laid out before the run (it is
    // created empty when the job opens it) while its I/O still spans `size`; without it the
    // same reading job's file is laid out whole. Also that `create_serialize=0` with
    // zonemode=zbd is refused as fio's init.c refuses it, and a value that is not a boolean
    // is refused naming the file, line and option.
    #[test]
    fn create_on_open_and_refusals() {
        let job = "[a]\nfilename=data\nsize=1m\nrw=randrw\nbs=4k\nioengine=libaio\n";
        let sizes = |test: &str, text: &str| {
            let plan = parse(test, text).unwrap().plan(&targets(), &Prng::new(1)).unwrap();
            let sizes: Vec<u64> = plan.files.iter().map(|f| f.size_bytes).collect();
            let result = run(plan, |_| Duration::from_micros(100));
            let end = result.records.iter().map(|r| r.io.offset_bytes + r.io.size_bytes).max();
            (sizes, end.unwrap_or(0))
        };
        let (laid_out, end) = sizes("open0", job);
        assert_eq!(laid_out, [1 << 20]);
        assert!(end > 1 << 19 && end <= 1 << 20, "{end}");
        let (laid_out, end) = sizes("open1", &format!("{job}create_on_open=1\n"));
        assert_eq!(laid_out, [0]);
        assert!(end > 1 << 19 && end <= 1 << 20, "{end}");
        let text = "[a]\nfilename=/dev/sda\nzonemode=zbd\nrw=write\ncreate_serialize=0\n";
        let error = parse("zbd_serialize", text).unwrap_err().to_string();
        assert!(
            error.contains("zbd_serialize.fio:5") && error.contains("not compatible"),
            "{error}"
        );
        let error = parse("bad_bool", &format!("{job}create_on_open=2\n")).unwrap_err().to_string();
        assert!(error.contains("bad_bool.fio:7") && error.contains("create_on_open"), "{error}");
        // A synchronous engine's read of the empty file fails in fio (EIO): refused.
        let text = "[a]\nfilename=data\nsize=1m\nrw=randread\ncreate_on_open=1\n";
        let error = parse("open_sync", text).unwrap_err().to_string();
        assert!(error.contains("open_sync.fio:5") && error.contains("full resid"), "{error}");
    }

    // Proves `create_only=1` sets a job's files up and does no I/O: its two clones stay in the
    // plan (fio reports the job) but submit nothing, its file is laid out at `size`, and a
    // later job without `size` reads that file whole; the same job without create_only does
    // its reads.
    #[test]
    fn create_only_sets_up_and_does_no_io() {
        let lay = "[lay]\nfilename=data\nsize=1m\nrw=randread\nnumjobs=2\n";
        let after = "[after]\nfilename=data\nrw=read\nbs=64k\nstonewall\n";
        let text = format!("{lay}create_only=1\n{after}");
        let plan = parse("create_only", &text).unwrap().plan(&targets(), &Prng::new(1)).unwrap();
        assert_eq!(plan.phases[0].issuers.len(), 2, "both clones reported");
        assert_eq!(plan.files.iter().map(|f| f.size_bytes).collect::<Vec<_>>(), [1 << 20]);
        let result = run(plan, |_| Duration::from_micros(100));
        assert!(result.records.iter().all(|r| r.phase == 1), "no I/O from the create_only job");
        let read: u64 = result.records.iter().map(|r| r.io.size_bytes).sum();
        assert_eq!(read, 1 << 20, "the later job reads the file laid out");
        let plan = parse("create_only0", &format!("{lay}create_only=0\n{after}"))
            .unwrap()
            .plan(&targets(), &Prng::new(1))
            .unwrap();
        let result = run(plan, |_| Duration::from_micros(100));
        let first: u64 =
            result.records.iter().filter(|r| r.phase == 0).map(|r| r.io.size_bytes).sum();
        assert_eq!(first, 2 << 20, "each clone reads its 1m without create_only");
    }

    // Proves `file_append=1` starts a job's writes at its file's size as set up by the
    // earlier job (1 MiB), whatever `offset` says, and extends the file's layout by `size`;
    // on a new file it starts at 0; on a device it changes nothing (fio ignores it there);
    // and it is refused naming its line with an engine that cannot extend a file (fio's
    // rule) and where the simulator cannot give fio's size (create_serialize=0).
    #[test]
    fn file_append_writes_past_the_end() {
        let first = "[first]\nfilename=log\nsize=1m\nrw=write\nbs=64k\n";
        let append = "[append]\nfilename=log\nsize=256k\nrw=write\nbs=64k\noffset=128k\n\
                      stonewall\n";
        let span = |test: &str, text: &str| {
            let plan = parse(test, text).unwrap().plan(&targets(), &Prng::new(1)).unwrap();
            let sizes: Vec<u64> = plan.files.iter().map(|f| f.size_bytes).collect();
            let result = run(plan, |_| Duration::from_micros(100));
            let of = |phase| {
                let ios = result.records.iter().filter(|r| r.phase == phase);
                let ends: Vec<(u64, u64)> =
                    ios.map(|r| (r.io.offset_bytes, r.io.offset_bytes + r.io.size_bytes)).collect();
                let lo = ends.iter().map(|e| e.0).min().unwrap_or(0);
                let hi = ends.iter().map(|e| e.1).max().unwrap_or(0);
                (lo, hi)
            };
            (sizes, of(0), of(1))
        };
        let (sizes, _, appended) = span("append1", &format!("{first}{append}file_append=1\n"));
        assert_eq!(appended, (1 << 20, (1 << 20) + (256 << 10)));
        assert_eq!(sizes, [(1 << 20) + (256 << 10)], "laid out to its end");
        let inside = append.replace("offset=128k\n", "");
        let (sizes, _, within) = span("append0", &format!("{first}{inside}file_append=0\n"));
        assert_eq!(within, (0, 256 << 10), "within the file without file_append");
        assert_eq!(sizes, [1 << 20]);
        let alone = "[new]\nfilename=fresh\nsize=256k\nrw=write\nbs=64k\nfile_append=1\n";
        let (_, new, _) = span("append_new", alone);
        assert_eq!(new, (0, 256 << 10), "a new file is empty: append starts at 0");
        let device = "[dev]\nfilename=/dev/sdb\nsize=256k\nrw=write\nbs=64k\nfile_append=1\n";
        let (_, on_device, _) = span("append_dev", device);
        assert_eq!(on_device, (0, 256 << 10), "no effect on a device");
        let text = format!("{alone}ioengine=libzbc\n");
        let error = parse("append_zbc", &text).unwrap_err().to_string();
        assert!(error.contains("append_zbc.fio:6") && error.contains("can't append"), "{error}");
        let text = format!("{first}{append}file_append=1\ncreate_serialize=0\n");
        let error = parse("append_serial", &text)
            .unwrap()
            .plan(&targets(), &Prng::new(1))
            .unwrap_err()
            .to_string();
        assert!(error.contains("append_serial.fio:13") && error.contains("file_append"), "{error}");
    }

    // Proves `pre_read=1` reads each clone's region once, sequentially, buffered, in the job's
    // largest read block, in a phase of its own before the job's (so out of its figures), and
    // leaves the job's own I/O as it was; pre_read=0 adds nothing; direct=1 and the null
    // engine are refused naming the line, as fio fails those pre-reads.
    #[test]
    fn pre_read_reads_the_region_before_the_job() {
        let job = "[a]\nfilename=/dev/sdb\nsize=1m\noffset=256k\nrw=randread\nbsrange=4k-16k\n\
                   ioengine=libaio\niodepth=4\nnumjobs=2\noffset_increment=2m\n";
        let ran = |test: &str, text: &str| {
            let plan = parse(test, text).unwrap().plan(&targets(), &Prng::new(3)).unwrap();
            let names: Vec<String> = plan.phases.iter().map(|p| p.name.clone()).collect();
            (names, run(plan, |_| Duration::from_micros(50)).records)
        };
        let (names, plain) = ran("pre_read0", &format!("{job}pre_read=0\n"));
        assert_eq!(names, ["a"]);
        let (names, records) = ran("pre_read1", &format!("{job}pre_read=1\n"));
        assert_eq!(names, ["a (pre_read)", "a"]);
        for clone in 0..2 {
            let reads: Vec<&crate::Io> = records
                .iter()
                .filter(|r| r.phase == 0 && r.issuer == clone)
                .map(|r| &r.io)
                .collect();
            let start = (256 << 10) + clone as u64 * (2 << 20);
            let offsets: Vec<u64> = reads.iter().map(|io| io.offset_bytes).collect();
            let expected: Vec<u64> = (0..64).map(|i| start + i * (16 << 10)).collect();
            assert_eq!(offsets, expected, "clone {clone}: its region, in order, once");
            assert!(reads.iter().all(|io| io.kind == IoKind::Read && !io.direct));
            assert!(reads.iter().all(|io| io.size_bytes == 16 << 10), "largest read block");
        }
        assert!(records.iter().filter(|r| r.phase == 0).all(|r| r.in_flight == 1), "one at a time");
        let measured: Vec<(usize, u64, u64)> = records
            .iter()
            .filter(|r| r.phase == 1)
            .map(|r| (r.issuer, r.io.offset_bytes, r.io.size_bytes))
            .collect();
        let before: Vec<(usize, u64, u64)> =
            plain.iter().map(|r| (r.issuer, r.io.offset_bytes, r.io.size_bytes)).collect();
        assert_eq!(measured, before, "the job's own I/O is unchanged");
        let error =
            parse("pre_direct", &format!("{job}pre_read=1\ndirect=1\n")).unwrap_err().to_string();
        assert!(error.contains("pre_direct.fio:11") && error.contains("direct=1"), "{error}");
        // A regular file (laid out first): its whole region, once, on the file.
        let (_, records) =
            ran("pre_file", "[f]\nfilename=data\nsize=256k\nrw=randread\npre_read=1\n");
        let pre: Vec<&crate::Io> = records.iter().filter(|r| r.phase == 0).map(|r| &r.io).collect();
        assert_eq!(
            pre.iter().map(|io| io.offset_bytes).collect::<Vec<_>>(),
            (0..64).map(|i| i * 4096).collect::<Vec<_>>()
        );
        assert!(pre.iter().all(|io| matches!(io.place, Place::File(0)) && !io.direct));
        let text = "[n]\nioengine=null\nsize=1m\nrw=read\npre_read=1\n";
        let error = parse("pre_null", text).unwrap_err().to_string();
        assert!(error.contains("pre_null.fio:5") && error.contains("null"), "{error}");
    }

    // Proves bssplit's shares are honoured: over 20,000 operations each size's share is its
    // percentage within 1.5 points, the blank share taking the rest (fio's rule).
    #[test]
    fn bssplit_shares_are_honoured() {
        let text = "[a]\nrw=randread\nbssplit=4k/10:64k/50:32k/\nio_size=1000m\nbs=4k\n";
        let error = parse("bs_and_split", text).unwrap_err().to_string();
        assert!(error.contains("give one of bs, bsrange and bssplit"), "{error}");
        // fio's job files need a `size` (its `a.0.0` file); `io_size` then loops over it.
        let text = "[a]\nrw=randread\nbssplit=4k/10:64k/50:32k/\nsize=64m\nio_size=1000m\n";
        let plan = parse("bssplit", text).unwrap().plan(&targets(), &Prng::new(9)).unwrap();
        let result = run(plan, |_| Duration::from_micros(1));
        let ops: Vec<u64> = result.records.iter().take(20_000).map(|r| r.io.size_bytes).collect();
        assert_eq!(ops.len(), 20_000);
        for (size, percent) in [(4096, 10.0), (65536, 50.0), (32768, 40.0)] {
            let share = ops.iter().filter(|&&s| s == size).count() as f64 / 200.0;
            assert!((share - percent).abs() < 1.5, "{size}: {share}%");
        }
        let error = parse("bad_split", "[a]\nbssplit=4k/70:8k/50\n").unwrap_err().to_string();
        assert!(error.contains("bad_split.fio:2") && error.contains("over 100"), "{error}");
    }

    // Proves fio's defaults apply where the file is silent (psync: one operation in flight even
    // with iodepth; buffered), the last occurrence wins, `/dev/` names pick devices, and
    // bsrange's sizes come out in even shares (4 sizes, each 25% within 3 points).
    #[test]
    fn options_map_with_fio_defaults() {
        let text = "[a]\nrw=randread\niodepth=8\nbsrange=4k-16k\nsize=64m\n\
                    filename=/dev/sda\nfilename=/dev/sdb\n";
        let plan = parse("defaults", text).unwrap().plan(&targets(), &Prng::new(5)).unwrap();
        let result = run(plan, |_| Duration::from_micros(100));
        assert!(result.records.iter().all(|r| r.in_flight <= 1), "psync keeps depth 1");
        assert!(
            result.records.iter().all(|r| !r.io.direct && r.io.place == crate::Place::Device(1))
        );
        let total = result.records.len() as f64;
        for size in [4096, 8192, 12288, 16384] {
            let count = result.records.iter().filter(|r| r.io.size_bytes == size).count();
            let share = count as f64 / total;
            assert!((share - 0.25).abs() < 0.03, "{size}: {share}");
        }
    }

    /// Plans `text` (a job file) on [`targets`] with seed `seed` and runs it, each I/O taking
    /// `latency`.
    fn run_file(test: &str, text: &str, seed: u64, latency: Duration) -> crate::testing::Run {
        let plan = parse(test, text).unwrap().plan(&targets(), &Prng::new(seed)).unwrap();
        run(plan, |_| latency)
    }

    /// Per block (offset / 4 KiB), how many I/Os it took.
    fn block_counts(records: &[crate::testing::Record]) -> Vec<u64> {
        let mut counts = std::collections::BTreeMap::new();
        for record in records {
            *counts.entry(record.io.offset_bytes / 4096).or_insert(0u64) += 1;
        }
        counts.into_values().collect()
    }

    // Proves zipf:θ skews as the law implies: over 64 MiB of 4 KiB blocks, the hottest 10 % of
    // the blocks take the share Σ_{k≤n/10} k^-θ / Σ_{k≤n} k^-θ (computed here from the law,
    // within 3 points: ranks are scattered by a hash, as fio does, which may merge a few),
    // and far more than the 10 % a uniform draw gives.
    #[test]
    fn zipf_skews_as_its_theta_implies() {
        let text = "[a]\nrw=randread\nsize=64m\nio_size=400m\nrandom_distribution=zipf:1.2\n";
        let result = run_file("zipf", text, 11, Duration::from_micros(1));
        let total = result.records.len() as f64;
        assert_eq!(total, 102_400.0);
        let blocks = 16_384usize;
        let law = |k: usize| (k as f64).powf(-1.2);
        let expected = (1..=blocks / 10).map(law).sum::<f64>() / (1..=blocks).map(law).sum::<f64>();
        let mut counts = block_counts(&result.records);
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let hottest: u64 = counts.iter().take(blocks / 10).sum();
        let share = hottest as f64 / total;
        assert!((share - expected).abs() < 0.03, "hottest 10%: {share}, the law: {expected}");
        assert!(share > 0.5, "{share}");
    }

    // Proves `rate` and `rate_iops` cap the achieved rate within 2 %: 1 MiB/s of 4 KiB reads
    // over 20 s on a device fast enough for far more, and 500 IOPS with poisson gaps (whose
    // gaps then vary: not all equal).
    #[test]
    fn rates_are_capped() {
        let text = "[a]\nrw=randread\nsize=64m\ntime_based\nruntime=20s\nrate=1m\n";
        let result = run_file("rate", text, 2, Duration::from_micros(50));
        let bytes: u64 = result.records.iter().map(|r| r.io.size_bytes).sum();
        let achieved = bytes as f64 / 20.0;
        assert!((achieved / f64::from(1 << 20) - 1.0).abs() < 0.02, "{achieved} B/s");
        let text = "[a]\nrw=randread\nsize=64m\ntime_based\nruntime=20s\nrate_iops=500\n\
                    rate_process=poisson\nioengine=libaio\niodepth=8\ndirect=1\n";
        let result = run_file("poisson", text, 2, Duration::from_micros(50));
        let iops = result.records.len() as f64 / 20.0;
        assert!((iops / 500.0 - 1.0).abs() < 0.02, "{iops} IOPS");
        let gaps: std::collections::BTreeSet<u64> = result
            .records
            .windows(2)
            .map(|pair| pair[1].submitted.saturating_since(pair[0].submitted).as_nanos())
            .collect();
        assert!(gaps.len() > 100, "poisson gaps vary");
    }

    // Proves `wait_for=NAME` starts the job after NAME finished (a new phase, when NAME's
    // group holds only NAME), joins the running group when NAME finished in an earlier one,
    // and is refused naming its line when NAME shares its group with others or is unknown.
    #[test]
    fn wait_for_orders_jobs() {
        let text = "[global]\nsize=1m\n[w]\nrw=write\n[r]\nwait_for=w\nrw=randread\n\
                    [r2]\nwait_for=w\nrw=read\n";
        let plan = parse("wait_for", text).unwrap().plan(&targets(), &Prng::new(1)).unwrap();
        let names: Vec<&str> = plan.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["w", "r+r2"]);
        let result = run(plan, |_| Duration::from_micros(100));
        let writes_end = result.phase(0).iter().map(|r| r.completed).max().unwrap();
        assert!(result.phase(1).iter().all(|r| r.submitted >= writes_end));
        let text = "[global]\nsize=1m\n[w]\nrw=write\n[x]\n[r]\nwait_for=w\n";
        let error = parse("wait_shared", text).unwrap().plan(&targets(), &Prng::new(1));
        let error = error.unwrap_err().to_string();
        assert!(error.contains("wait_shared.fio:7") && error.contains("other jobs"), "{error}");
        let text = "[global]\nsize=1m\n[r]\nwait_for=nobody\n";
        let error = parse("wait_none", text).unwrap().plan(&targets(), &Prng::new(1));
        assert!(error.unwrap_err().to_string().contains("no earlier job `nobody`"));
    }

    // Proves ramp_time's I/O is done but kept out of the measured phase: a ramp phase of
    // 1 s comes first, the measured phase starts after it and lasts the 2 s runtime, and
    // every I/O of the ramp is in the ramp phase.
    #[test]
    fn ramp_time_is_not_measured() {
        let text = "[a]\nrw=randread\nsize=64m\ntime_based\nruntime=2s\nramp_time=1s\n";
        let plan = parse("ramp", text).unwrap().plan(&targets(), &Prng::new(1)).unwrap();
        let names: Vec<&str> = plan.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a (ramp)", "a"]);
        let result = run(plan, |_| Duration::from_millis(1));
        let ramp = result.phase(0);
        let measured = result.phase(1);
        let ramp_end = ramp.iter().map(|r| r.completed).max().unwrap();
        assert!(ramp_end.as_nanos() <= 1_001_000_000, "the ramp lasts 1 s");
        assert!(measured.iter().all(|r| r.submitted >= ramp_end));
        let ratio = measured.len() as f64 / ramp.len() as f64;
        assert!((ratio - 2.0).abs() < 0.01, "2 s measured against a 1 s ramp: {ratio}");
    }

    // Proves the random map: by default (fio's) each block is read once per pass — 256
    // reads of a 1 MiB region touch all 256 blocks once, and a second pass again once each;
    // with norandommap blocks repeat; randrepeat's sequence is the same run to run with the
    // seed and differs with another seed.
    #[test]
    fn random_map_and_randrepeat() {
        let text = "[a]\nrw=randread\nsize=1m\nio_size=2m\n";
        let result = run_file("map", text, 4, Duration::from_micros(10));
        assert_eq!(result.records.len(), 512);
        let first: Vec<u64> = block_counts(&result.records[..256]);
        assert_eq!(first, vec![1; 256], "every block once in the first pass");
        assert_eq!(block_counts(&result.records), vec![2; 256], "and once more in the second");
        let text = "[a]\nrw=randread\nsize=1m\nnorandommap\nrandrepeat=1\n";
        let result = run_file("nomap", text, 4, Duration::from_micros(10));
        let counts = block_counts(&result.records);
        assert!(counts.len() < 256 && counts.iter().any(|&n| n > 1), "repeats without the map");
        let offsets = |seed| {
            let result = run_file("nomap", text, seed, Duration::from_micros(10));
            result.records.iter().map(|r| r.io.offset_bytes).collect::<Vec<_>>()
        };
        assert_eq!(offsets(4), offsets(4));
        assert_ne!(offsets(4), offsets(5));
    }

    // Proves the rw family's extras: `read:-8k` reads 4 KiB blocks backwards from 8 KiB
    // before the end; `write:4k` leaves a 4 KiB hole after each write; `trimwrite` discards
    // each block then writes it; `randread:4` takes a new random offset every 4 I/Os and
    // reads on sequentially in between.
    #[test]
    fn rw_suffixes_and_trims() {
        let offsets = |test: &str, text: &str| -> Vec<(IoKind, u64)> {
            let result = run_file(test, text, 1, Duration::from_micros(10));
            result.records.iter().map(|r| (r.io.kind, r.io.offset_bytes)).collect()
        };
        let back = offsets("back", "[a]\nrw=read:-8k\nsize=64k\nfilename=/dev/sda\nbs=4k\n");
        let expected: Vec<(IoKind, u64)> =
            [56, 52, 48].iter().map(|k| (IoKind::Read, (k << 10) as u64)).collect();
        assert_eq!(back[..3], expected);
        let holes = offsets("holes", "[a]\nrw=write:4k\nsize=64k\nfilename=/dev/sda\n");
        let expected: Vec<(IoKind, u64)> = (0..4).map(|i| (IoKind::Write, i * 8192)).collect();
        assert_eq!(holes[..4], expected);
        let trimwrite = offsets("tw", "[a]\nrw=trimwrite\nsize=16k\nfilename=/dev/sda\n");
        let expected: Vec<(IoKind, u64)> =
            (0..4).flat_map(|i| [(IoKind::Discard, i * 4096), (IoKind::Write, i * 4096)]).collect();
        assert_eq!(trimwrite, expected);
        let runs = offsets("runs", "[a]\nrw=randread:4\nsize=64m\nio_size=64k\n");
        for chunk in runs.chunks(4) {
            for pair in chunk.windows(2) {
                assert_eq!(pair[1].1, pair[0].1 + 4096, "sequential within a run of 4");
            }
        }
        let starts: std::collections::BTreeSet<u64> = runs.chunks(4).map(|c| c[0].1).collect();
        assert_eq!(starts.len(), 4, "each run starts at a new random offset");
    }

    // Proves verify reads back every written block after the writes, in write order;
    // fsync=4 syncs after every 4 writes; end_fsync syncs once at the end.
    #[test]
    fn verify_and_fsync() {
        let text = "[a]\nrw=randwrite\nsize=64k\nverify=crc32c\n";
        let result = run_file("verify", text, 1, Duration::from_micros(10));
        let (writes, reads) = result.records.split_at(16);
        assert!(writes.iter().all(|r| r.io.kind == IoKind::Write));
        assert!(reads.iter().all(|r| r.io.kind == IoKind::Read));
        let written: Vec<u64> = writes.iter().map(|r| r.io.offset_bytes).collect();
        let read: Vec<u64> = reads.iter().map(|r| r.io.offset_bytes).collect();
        assert_eq!(written, read);
        let write_end = writes.iter().map(|r| r.completed).max().unwrap();
        assert!(reads.iter().all(|r| r.submitted >= write_end));
        let text = "[a]\nrw=write\nsize=64k\nfsync=4\nend_fsync=1\n";
        let result = run_file("fsync", text, 1, Duration::from_micros(10));
        let kinds: Vec<IoKind> = result.records.iter().map(|r| r.io.kind).collect();
        let syncs: Vec<usize> = (0..kinds.len()).filter(|&i| kinds[i] == IoKind::Sync).collect();
        assert_eq!(syncs, [4, 9, 14, 19, 20], "after every 4 writes, and one at the end");
    }

    // Proves zoned shares, strided zones, startdelay and cmdprio: `zoned:60/10:40/` puts 60 %
    // of reads in the first tenth (within 2 points); strided zones read zonesize then jump
    // zonerange + zoneskip; a job with startdelay=1s starts 1 s in; cmdprio_percentage=25
    // sends about a quarter of the I/Os (within 3 points) as realtime.
    #[test]
    fn distributions_zones_delays_and_cmdprio() {
        let text = "[a]\nrw=randread\nsize=100m\nio_size=200m\n\
                    random_distribution=zoned:60/10:40/\n";
        let result = run_file("zoned", text, 3, Duration::from_micros(1));
        let first_tenth =
            result.records.iter().filter(|r| r.io.offset_bytes < 10 << 20).count() as f64;
        let share = first_tenth / result.records.len() as f64;
        assert!((share - 0.6).abs() < 0.02, "{share}");
        let text = "[a]\nrw=read\nbs=64k\nsize=1m\nzonemode=strided\nzonesize=128k\n\
                    zoneskip=256k\nfilename=/dev/sda\n";
        let result = run_file("strided", text, 3, Duration::from_micros(1));
        let offsets: Vec<u64> = result.records.iter().map(|r| r.io.offset_bytes >> 10).collect();
        assert_eq!(offsets[..6], [0, 64, 384, 448, 768, 832]);
        let text = "[a]\nrw=read\nsize=64k\nstartdelay=1\n";
        let result = run_file("delay", text, 3, Duration::from_micros(1));
        assert_eq!(result.records[0].submitted.as_nanos(), 1_000_000_000);
        let text = "[a]\nrw=randread\nsize=64m\nio_size=40m\nioengine=libaio\n\
                    cmdprio_percentage=25\ncmdprio_class=1\nprioclass=3\n";
        let result = run_file("cmdprio", text, 3, Duration::from_micros(1));
        let realtime = result
            .records
            .iter()
            .filter(|r| r.priority == elevator_core::IoPriority::realtime(0).unwrap())
            .count() as f64;
        let share = realtime / result.records.len() as f64;
        assert!((share - 0.25).abs() < 0.03, "{share}");
        assert!(result.records.iter().any(|r| r.priority == elevator_core::IoPriority::idle()));
    }

    // Proves the caps (`--max-size`, `--max-runtime`): a 10 GiB job is cut to 1 MiB, a job
    // without a runtime gets the cap, a shorter runtime stays, and the reporting options are
    // carried on the planned job, not dropped.
    #[test]
    fn caps_and_carried_reporting_options() {
        let text = "[a]\nrw=read\nsize=10g\nwrite_bw_log=a\nlog_avg_msec=500\n\
                    [b]\nrw=read\nsize=1m\nruntime=100ms\ntime_based\n";
        let spec = parse("caps", text).unwrap();
        let reporting = spec.fio_reporting();
        let carried: Vec<&str> = reporting[0].options.iter().map(|(name, _)| *name).collect();
        assert_eq!(carried, ["write_bw_log", "log_avg_msec"]);
        let capped = spec.fio_capped(Some(1 << 20), Some(Duration::from_secs(1))).unwrap();
        let result =
            run(capped.plan(&targets(), &Prng::new(1)).unwrap(), |_| Duration::from_micros(100));
        let a: Vec<_> = result.records.iter().filter(|r| r.issuer == 0).collect();
        assert_eq!(a.len(), 256, "1 MiB of 4 KiB reads");
        let b_end = result.records.iter().filter(|r| r.issuer == 1).map(|r| r.submitted).max();
        assert!(b_end.unwrap().as_nanos() < 100_000_000, "b keeps its 100 ms");
    }

    // Proves bssplit per direction and cmdprio_bssplit: reads draw from the read split and
    // writes from the write split; 64 KiB reads go realtime level 1 a quarter of the time
    // and idle three quarters (within 3 points), 1 MiB I/Os never carry a cmdprio priority.
    #[test]
    fn per_direction_bssplit_and_cmdprio_bssplit() {
        let text = "[a]\nrw=randrw\nsize=256m\nio_size=8g\nioengine=libaio\n\
                    bssplit=64k/40:1024k/60,1024k/100\n\
                    cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0\n";
        let result = run_file("cmdprio_split", text, 5, Duration::from_micros(1));
        // The last I/O may be cut short by the amount left, as fio's is.
        let records = &result.records[..result.records.len() - 1];
        let writes: Vec<_> = records.iter().filter(|r| r.io.kind == IoKind::Write).collect();
        assert!(writes.len() > 100 && writes.iter().all(|r| r.io.size_bytes == 1 << 20));
        let small: Vec<_> = result
            .records
            .iter()
            .filter(|r| r.io.kind == IoKind::Read && r.io.size_bytes == 64 << 10)
            .collect();
        assert!(small.len() > 1500, "{}", small.len());
        let realtime = elevator_core::IoPriority::realtime(1).unwrap();
        let share =
            small.iter().filter(|r| r.priority == realtime).count() as f64 / small.len() as f64;
        assert!((share - 0.25).abs() < 0.03, "{share}");
        assert!(
            small
                .iter()
                .all(|r| r.priority == realtime || r.priority == elevator_core::IoPriority::idle())
        );
        let default = elevator_core::IoPriority::DEFAULT;
        assert!(
            result
                .records
                .iter()
                .filter(|r| r.io.size_bytes == 1 << 20)
                .all(|r| r.priority == default)
        );
    }

    // Proves number_ios stops a job after that many I/Os, exitall then stops the rest of its
    // group (a time-based job meant to run 10 s ends with it), and loops repeats the job's
    // amount: 64 KiB read three times over the same offsets.
    #[test]
    fn number_ios_exitall_and_loops() {
        let text = "[global]\nsize=1m\n[a]\nrw=read\nnumber_ios=10\nexitall\n\
                    [b]\nrw=randread\ntime_based\nruntime=10s\n";
        let result = run_file("exitall", text, 1, Duration::from_millis(1));
        let a: Vec<_> = result.records.iter().filter(|r| r.issuer == 0).collect();
        assert_eq!(a.len(), 10);
        let a_end = a.iter().map(|r| r.completed).max().unwrap();
        let b_last = result.records.iter().filter(|r| r.issuer == 1).map(|r| r.submitted).max();
        assert!(b_last.unwrap() <= a_end, "b stops when a finished, not after 10 s");
        let without = text.replace("exitall\n", "");
        let result = run_file("no_exitall", &without, 1, Duration::from_millis(1));
        let b_last = result.records.iter().filter(|r| r.issuer == 1).map(|r| r.submitted).max();
        assert!(b_last.unwrap().as_nanos() > 9_000_000_000, "without exitall b runs its 10 s");
        let text = "[a]\nrw=read\nsize=64k\nloops=3\nfilename=/dev/sda\n";
        let result = run_file("loops", text, 1, Duration::from_micros(10));
        let offsets: Vec<u64> = result.records.iter().map(|r| r.io.offset_bytes).collect();
        let pass: Vec<u64> = (0..16).map(|i| i * 4096).collect();
        assert_eq!(offsets, [pass.clone(), pass.clone(), pass].concat());
    }

    // Proves the passthrough engines' mapping: every sg/io_uring_cmd/xnvme command is direct
    // and flagged PASSTHROUGH (so the queue dispatches it past the scheduler), sg keeps one
    // command in flight (SG_IO on a block device) where io_uring_cmd takes its iodepth,
    // sg_write_mode=verify_bytchk_01 turns the writes into reads of the same blocks (VERIFY
    // reads the medium) while write_same_ndob stays a write; a regular file, sg_write_mode with
    // another engine and WRITE AND VERIFY are refused naming their line.
    #[test]
    fn passthrough_engines() {
        use elevator_core::RequestFlags;
        let latency = Duration::from_micros(100);
        let text = "[global]\nfilename=/dev/sdb\nbs=512\nnumber_ios=20\nstonewall\n\
                    ioengine=sg\nrw=write\niodepth=8\n[precon]\n\
                    [verify]\nsg_write_mode=verify_bytchk_01\n\
                    [same]\nsg_write_mode=write_same_ndob\n\
                    [nvme]\nioengine=io_uring_cmd\ncmd_type=nvme\nsqthread_poll=1\nrw=randread\n";
        let run = run_file("passthrough", text, 7, latency);
        for record in &run.records {
            assert!(record.io.direct && record.io.flags.contains(RequestFlags::PASSTHROUGH));
            assert_eq!(record.io.place, Place::Device(1), "filename=/dev/sdb");
        }
        let kinds = |phase: usize| -> Vec<crate::IoKind> {
            run.phase(phase).iter().map(|record| record.io.kind).collect()
        };
        assert_eq!(kinds(0), vec![crate::IoKind::Write; 20]);
        assert_eq!(kinds(1), vec![crate::IoKind::Read; 20], "VERIFY reads");
        assert_eq!(kinds(2), vec![crate::IoKind::Write; 20], "WRITE SAME writes");
        let deepest =
            |phase: usize| run.phase(phase).iter().map(|record| record.in_flight).max().unwrap();
        assert_eq!((deepest(0), deepest(1)), (1, 1), "SG_IO is synchronous");
        assert_eq!(deepest(3), 8, "io_uring_cmd keeps iodepth in flight");
        let offsets: Vec<u64> = run.phase(1).iter().map(|record| record.io.offset_bytes).collect();
        assert_eq!(offsets, (0..20).map(|block| block * 512).collect::<Vec<_>>());

        let text = "[a]\nioengine=sg\nsize=1m\nfilename=scratch\n";
        let error = parse("sgfile", text).unwrap().plan(&targets(), &Prng::new(1)).unwrap_err();
        assert!(error.to_string().contains("filename must name one"), "{error}");
        let text = "[a]\nioengine=libaio\nrw=write\nsg_write_mode=verify\n";
        let error = parse("sgmode", text).unwrap_err().to_string();
        assert!(error.contains("sgmode.fio:4") && error.contains("ioengine=sg"), "{error}");
        let text = "[a]\nioengine=sg\nrw=write\nsg_write_mode=write_and_verify\n";
        let error = parse("wav", text).unwrap_err().to_string();
        assert!(error.contains("wav.fio:4") && error.contains("WRITE AND VERIFY"), "{error}");
    }

    // Proves NUMA binding is honoured for the host's one node and refused for any other,
    // naming the line: node 0 and `all` run, `0-1` and `bind:1` do not.
    #[test]
    fn numa_nodes() {
        for ok in [
            "numa_cpu_nodes=0",
            "numa_cpu_nodes=all",
            "numa_mem_policy=bind:0",
            "numa_mem_policy=local",
            "numa_mem_policy=interleave:all",
        ] {
            parse("numa_ok", &format!("[a]\nsize=1m\n{ok}\n")).unwrap();
        }
        for bad in ["numa_cpu_nodes=0-1", "numa_mem_policy=bind:1", "numa_mem_policy=prefer:0-1"] {
            let error = parse("numa_bad", &format!("[a]\nsize=1m\n{bad}\n")).unwrap_err();
            let error = error.to_string();
            assert!(error.contains("numa_bad.fio:3") && error.contains("one node, 0"), "{error}");
        }
    }

    // Proves steadystate ends a job when its criterion holds over the window, as fio's does:
    // at a constant 1 ms per I/O, `ss=iops:10%` with `ss_ramp=2s` and `ss_dur=5s` stops a
    // 60 s time_based job once five samples after the ramp are in (7 s); `ss=bw_slope:0%`
    // (no slope is below 0) never holds and the job runs its 20 s; with group_reporting the
    // two clones are judged together and stop at the same instant.
    #[test]
    fn steadystate_stops_the_job() {
        let last = |run: &crate::testing::Run| {
            run.records.iter().map(|record| record.submitted).max().unwrap()
        };
        let latency = Duration::from_millis(1);
        let text = "[ss]\nsize=64m\nbs=4k\nrw=randread\ntime_based\nruntime=60s\n\
                    ss=iops:10%\nss_dur=5s\nss_ramp=2s\n";
        let run = run_file("ss_iops", text, 3, latency);
        let ended = last(&run).as_nanos();
        assert!((6_999_000_000..7_000_000_000).contains(&ended), "ended at {ended} ns");
        let text = "[ss]\nsize=64m\nbs=4k\nrw=randread\ntime_based\nruntime=20s\n\
                    ss=bw_slope:0%\nss_dur=2s\n";
        let run = run_file("ss_never", text, 3, latency);
        assert!(last(&run).as_nanos() >= 20_000_000_000 - 1_000_000, "runs its runtime");
        let text = "[ss]\nsize=64m\nbs=4k\nrw=randread\ntime_based\nruntime=60s\nnumjobs=2\n\
                    group_reporting\nss=iops:10%\nss_dur=3s\n";
        let run = run_file("ss_group", text, 3, latency);
        let per_clone: Vec<u64> = (0..2)
            .map(|clone| {
                let records = run.records.iter().filter(|record| record.issuer == clone);
                records.map(|record| record.submitted.as_nanos()).max().unwrap()
            })
            .collect();
        assert!(
            per_clone.iter().all(|&t| (2_999_000_000..3_000_000_000).contains(&t)),
            "{per_clone:?}"
        );
    }

    // Proves fio's flow control: jobs sharing a flow issue in the ratio of their weights
    // (HOWTO `flow`: "3:2:1"), where without flow two equal jobs at the same latency issue the
    // same. flow=1 against flow=8 with flow_sleep=1000 comes out 1:8 within 2 %, and 3 against
    // 1 without flow_sleep (fio retries at once) 3:1 within 2 %; a job in another flow_id is
    // not held back by them.
    #[test]
    fn flow_keeps_the_weights_ratio() {
        let latency = Duration::from_micros(100);
        let ops = |text: &str, test: &str| -> Vec<f64> {
            let run = run_file(test, text, 5, latency);
            let count = |issuer: usize| run.records.iter().filter(|r| r.issuer == issuer).count();
            (0..3).map(|issuer| count(issuer) as f64).collect()
        };
        let jobs = |a: &str, b: &str, c: &str| {
            format!(
                "[global]\nsize=64m\nbs=4k\nrw=randread\nioengine=libaio\ndirect=1\niodepth=4\n\
                 time_based\nruntime=2s\n[a]\n{a}\n[b]\n{b}\n[c]\n{c}\n"
            )
        };
        let plain = ops(&jobs("", "", "flow=1\nflow_id=1"), "flow_none");
        assert_eq!(plain[0], plain[1], "equal jobs issue the same without flow");
        let run = ops(
            &jobs("flow=1\nflow_sleep=1000", "flow=8\nflow_sleep=1000", "flow=1\nflow_id=1"),
            "flow_8",
        );
        let ratio = run[1] / run[0];
        assert!((ratio - 8.0).abs() < 0.16, "1:8 came out 1:{ratio} ({run:?})");
        assert_eq!(run[2], plain[2], "another flow_id is not held back");
        let run = ops(&jobs("flow=3", "flow=1", "flow=1\nflow_id=1"), "flow_3");
        let ratio = run[0] / run[1];
        assert!((ratio - 3.0).abs() < 0.06, "3:1 came out {ratio}:1 ({run:?})");
    }

    /// The file index (`Place::File`) of each I/O of `records`, in submission order, with
    /// the fences of `end_fsync` and the like left out.
    fn file_order(records: &[crate::testing::Record]) -> Vec<usize> {
        records
            .iter()
            .filter(|record| record.io.size_bytes > 0)
            .map(|record| match record.io.place {
                Place::File(file) => file,
                Place::Device(device) => panic!("I/O on device {device}, not a file"),
            })
            .collect()
    }

    /// Per file index, how many of `order`'s I/Os went there.
    fn per_file(order: &[usize], files: usize) -> Vec<usize> {
        let mut counts = vec![0; files];
        order.iter().for_each(|&file| counts[file] += 1);
        counts
    }

    // Proves `nrfiles` gives each clone its own files named as fio names them (default
    // `$jobname.$jobnum.$filenum`, `filename_format` with its keywords in any case, under
    // `directory`), `size` divided among them, and each clone's I/O on its own files, each
    // file written whole once (256 KiB / 4 KiB = 64 writes) — and a `filename` list
    // overriding `nrfiles` (fio's rule: two files, not four).
    #[test]
    fn nrfiles_names_sizes_and_split() {
        let text = "[global]\nsize=1m\nbs=4k\nrw=write\nnrfiles=4\n[a]\nnumjobs=2\n\
                    directory=/d\n[b]\nfilename_format=f.$JOBNUM.$filenum.$jobname\n";
        let plan = parse("nrfiles", text).unwrap().plan(&targets(), &Prng::new(5)).unwrap();
        let names: Vec<(&str, u64)> =
            plan.files.iter().map(|f| (f.name.as_str(), f.size_bytes)).collect();
        let mut expected = Vec::new();
        for clone in 0..2 {
            for file in 0..4 {
                expected.push((format!("/d/a.{clone}.{file}"), 256 << 10));
            }
        }
        for file in 0..4 {
            expected.push((format!("f.0.{file}.b"), 256 << 10));
        }
        let expected: Vec<(&str, u64)> = expected.iter().map(|(n, b)| (n.as_str(), *b)).collect();
        assert_eq!(names, expected);
        let result = run(plan, |_| Duration::from_micros(10));
        for issuer in 0..3 {
            let mine: Vec<crate::testing::Record> =
                result.records.iter().filter(|r| r.issuer == issuer).copied().collect();
            let order = file_order(&mine);
            let counts = per_file(&order, 12);
            let own = issuer * 4..issuer * 4 + 4;
            for (file, count) in counts.iter().enumerate() {
                let want = if own.contains(&file) { 64 } else { 0 };
                assert_eq!(*count, want, "issuer {issuer} file {file}: {counts:?}");
            }
            assert!(mine.iter().all(|r| r.io.offset_bytes + r.io.size_bytes <= 256 << 10));
        }
        let text = "[a]\nsize=1m\nnrfiles=4\nfilename=x:y\n";
        let plan = parse("nrfiles_list", text).unwrap().plan(&targets(), &Prng::new(5)).unwrap();
        let names: Vec<(&str, u64)> =
            plan.files.iter().map(|f| (f.name.as_str(), f.size_bytes)).collect();
        assert_eq!(names, [("x", 512 << 10), ("y", 512 << 10)]);
    }

    // Proves a `filesize` range draws each file's size from the run's seed: the same seed
    // gives the same sizes, another seed others; every size is within the range and a
    // multiple of the smallest block (fio's `get_rand_file_size`), the sizes differ from
    // file to file, and without `size` the job reads exactly its files' total (fio's `size`
    // defaults to it), each file wholly.
    #[test]
    fn filesize_ranges_are_seeded_and_within_range() {
        let text = "[a]\nnrfiles=8\nfilesize=64k-1m\nbs=4k\nrw=read\n";
        let sizes = |seed: u64| -> Vec<u64> {
            let plan = parse("filesize", text).unwrap().plan(&targets(), &Prng::new(seed));
            plan.unwrap().files.iter().map(|file| file.size_bytes).collect()
        };
        let (first, again, other) = (sizes(7), sizes(7), sizes(8));
        assert_eq!(first, again, "reproducible from the seed");
        assert_ne!(first, other, "another seed, other sizes");
        assert_eq!(first.len(), 8);
        for size in &first {
            assert!((64 << 10..=1 << 20).contains(size) && size % 4096 == 0, "{first:?}");
        }
        let distinct: std::collections::BTreeSet<u64> = first.iter().copied().collect();
        assert!(distinct.len() > 4, "drawn per file: {first:?}");
        let result = run_file("filesize", text, 7, Duration::from_micros(10));
        let total: u64 = result.records.iter().map(|r| r.io.size_bytes).sum();
        assert_eq!(total, first.iter().sum::<u64>());
        let order = file_order(&result.records);
        let counts = per_file(&order, 8);
        let whole: Vec<usize> = first.iter().map(|size| (size / 4096) as usize).collect();
        assert_eq!(counts, whole, "each file read whole");
    }

    /// The file order of a 4-file, 1 MiB random read with `file_service_type=SERVICE`.
    fn service_order(test: &str, service: &str, seed: u64) -> Vec<usize> {
        let text =
            format!("[a]\nsize=1m\nnrfiles=4\nbs=4k\nrw=randread\nfile_service_type={service}\n");
        file_order(&run_file(test, &text, seed, Duration::from_micros(10)).records)
    }

    // Proves fio's uniform file services: `roundrobin` (the default) takes the files in turn,
    // one I/O each, and `roundrobin:3` three I/Os each; `sequential` serves each file until
    // it is done before the next; `random` spreads over every file in no fixed order, and
    // `random:4` switches only after runs of 4 — while each file, once done (its 64 blocks
    // served), is passed over, so every service gives each file exactly its 64 I/Os.
    #[test]
    fn uniform_file_services() {
        let default = service_order("fst_default", "roundrobin", 1);
        assert_eq!(default[..8], [0, 1, 2, 3, 0, 1, 2, 3]);
        let by_three = service_order("fst_rr3", "roundrobin:3", 1);
        assert_eq!(by_three[..14], [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0, 0]);
        let sequential = service_order("fst_seq", "sequential", 1);
        let mut sorted = sequential.clone();
        sorted.sort_unstable();
        assert_eq!(sequential, sorted, "one file after another");
        let random = service_order("fst_random", "random", 1);
        assert_ne!(random[..16], default[..16], "not in turn");
        let early = per_file(&random[..64], 4);
        assert!(early.iter().all(|&count| count >= 6), "spread over all files: {early:?}");
        let random4 = service_order("fst_random4", "random:4", 1);
        let mut runs = Vec::new();
        let mut length = 1;
        for pair in random4.windows(2) {
            if pair[0] == pair[1] {
                length += 1;
            } else {
                runs.push(length);
                length = 1;
            }
        }
        runs.push(length);
        assert!(runs.iter().all(|run| run % 4 == 0), "runs of 4: {runs:?}");
        assert!(runs.len() > 8, "it switches: {runs:?}");
        for order in [&default, &by_three, &sequential, &random, &random4] {
            assert_eq!(per_file(order, 4), [64; 4]);
        }
    }

    // Proves the skewed file services follow fio's unhashed laws over `files << 10` ranks:
    // with zipf:1.2 over 8 files the 1024 hottest ranks fall on two neighbouring files (fio
    // rotates the ranks by a seeded offset and does not hash them), which take at least the
    // law's share of those ranks, Σ_{k≤1024} k^-1.2 / Σ_{k≤8192} k^-1.2, less 3 points; a
    // done file is started again (the job reads 5 times the files' bytes); normal (fio's
    // gauss, no rotation) centres on the middle files, 3 and 4.
    #[test]
    fn skewed_file_services() {
        let text = "[a]\nsize=8m\nio_size=40m\nnrfiles=8\nbs=4k\nrw=randread\n\
                    file_service_type=zipf:1.2\n";
        let order = file_order(&run_file("fst_zipf", text, 3, Duration::from_micros(1)).records);
        assert_eq!(order.len(), 10240);
        let counts = per_file(&order, 8);
        let mut ranked: Vec<usize> = (0..8).collect();
        ranked.sort_by_key(|&file| std::cmp::Reverse(counts[file]));
        let (hot, next) = (ranked[0], ranked[1]);
        assert!((hot + 1) % 8 == next || (next + 1) % 8 == hot, "neighbours: {counts:?}");
        let law = |n: u64| (1..=n).map(|k| (k as f64).powf(-1.2)).sum::<f64>();
        let share = (counts[hot] + counts[next]) as f64 / order.len() as f64;
        let expected = law(1024) / law(8192);
        assert!(share > expected - 0.03, "share {share} < {expected}: {counts:?}");
        let text = "[a]\nsize=8m\nio_size=16m\nnrfiles=8\nbs=4k\nrw=randread\n\
                    file_service_type=normal\n";
        let order = file_order(&run_file("fst_normal", text, 3, Duration::from_micros(1)).records);
        let counts = per_file(&order, 8);
        let middle = (counts[3] + counts[4]) as f64 / order.len() as f64;
        assert!(middle > 0.6, "centred: {counts:?}");
        assert!(counts[3] > counts[1] && counts[4] > counts[6], "{counts:?}");
    }

    // Proves what the file options refuse, naming file and line: `openfiles` below the job's
    // files (fio would close and open files, changing which it serves), `$clientuid` in
    // `filename_format`, an unknown service and a bad `:N`; `openfiles` at least nrfiles runs.
    #[test]
    fn file_option_refusals() {
        let error = parse("openfiles", "[a]\nsize=1m\nnrfiles=4\nopenfiles=2\n").unwrap_err();
        let error = error.to_string();
        assert!(error.contains("openfiles.fio:4") && error.contains("openfiles=2"), "{error}");
        assert!(parse("openfiles4", "[a]\nsize=1m\nnrfiles=4\nopenfiles=4\n").is_ok());
        let error = parse("clientuid", "[a]\nsize=1m\nfilename_format=$clientuid.$filenum\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("clientuid.fio:3") && error.contains("$clientuid"), "{error}");
        let error = parse("fst_bad", "[a]\nsize=1m\nfile_service_type=roundrobin:x\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("fst_bad.fio") && error.contains("roundrobin:x"), "{error}");
        let error = parse("fst_unknown", "[a]\nsize=1m\nfile_service_type=lottery\n");
        assert!(error.unwrap_err().to_string().contains("fst_unknown.fio:3"));
    }

    /// Each issuer's `cpu()` over the plan's phases, in order.
    fn cpus(spec: &WorkloadSpec) -> Vec<crate::IssuerCpu> {
        let plan = spec.plan(&targets(), &Prng::new(1)).unwrap();
        plan.phases.iter().flat_map(|phase| phase.issuers.iter().map(|i| i.cpu())).collect()
    }

    /// Just the CPU lists of [`cpus`].
    fn cpu_lists(spec: &WorkloadSpec) -> Vec<Vec<u32>> {
        cpus(spec).into_iter().map(|cpu| cpu.cpus_allowed).collect()
    }

    // Proves cpus_allowed_policy=split gives fio's clone k the (k mod N)-th CPU of the set
    // (options.c `fio_cpus_split`), round robin when there are more clones than CPUs, and
    // counts fio's thread numbers over the whole file: a later job (here in a later group)
    // goes on from where the earlier job's clones stopped; `shared` gives every clone all.
    #[test]
    fn split_gives_each_clone_its_cpu_as_fio() {
        let four =
            "[a]\nsize=64k\nrw=read\ncpus_allowed=0-3\ncpus_allowed_policy=split\nnumjobs=4\n";
        let spec = parse("split4", four).unwrap();
        assert_eq!(cpu_lists(&spec), [vec![0], vec![1], vec![2], vec![3]]);
        let more =
            "[a]\nsize=64k\nrw=read\ncpus_allowed=1,3\ncpus_allowed_policy=split\nnumjobs=5\n";
        let spec = parse("split_more", more).unwrap();
        assert_eq!(cpu_lists(&spec), [vec![1], vec![3], vec![1], vec![3], vec![1]]);
        let two_jobs = "[global]\nsize=64k\nrw=read\ncpus_allowed=0-3\ncpus_allowed_policy=split\n\
                        [a]\nnumjobs=2\n[b]\nstonewall\nnumjobs=3\n";
        let spec = parse("split_jobs", two_jobs).unwrap();
        assert_eq!(cpu_lists(&spec), [vec![0], vec![1], vec![2], vec![3], vec![0]]);
        let shared = "[a]\nsize=64k\nrw=read\ncpus_allowed=0-1\nnumjobs=2\n";
        let spec = parse("shared", shared).unwrap();
        assert_eq!(cpu_lists(&spec), [vec![0, 1], vec![0, 1]]);
    }

    // Proves io_uring's options reach the issuer's profile: the batch, registered buffers and
    // files, polling; sqthread_poll brings its CPU and turns registered files on (fio's
    // io_uring engine does); a batch of 0 or above iodepth is iodepth (fio's fixup_options).
    #[test]
    fn io_uring_options_show_in_the_profile() {
        let text = "[a]\nsize=64k\nrw=randread\nioengine=io_uring\niodepth=16\n\
                    iodepth_batch_submit=8\nfixedbufs=1\nregisterfiles=1\nhipri=1\n";
        let cpu = cpus(&parse("uring", text).unwrap()).remove(0);
        let expected = crate::IssuerCpu {
            cpus_allowed: Vec::new(),
            engine: crate::SubmitEngine::IoUring,
            batch_submit: 8,
            fixed_buffers: true,
            registered_files: true,
            polled: true,
            sq_poll: None,
        };
        assert_eq!(cpu, expected);
        let text = "[a]\nsize=64k\nrw=randread\nioengine=io_uring\nsqthread_poll=1\n\
                    sqthread_poll_cpu=2\n";
        let cpu = cpus(&parse("sqpoll", text).unwrap()).remove(0);
        assert_eq!(cpu.sq_poll, Some(crate::SqPoll { cpu: Some(2) }));
        assert!(cpu.registered_files, "sqthread_poll implies registerfiles");
        assert!(!cpu.fixed_buffers && !cpu.polled);
        for (batch, expected) in [("0", 16), ("64", 16), ("4", 4)] {
            let text = format!(
                "[a]\nsize=64k\nrw=randread\nioengine=libaio\niodepth=16\niodepth_batch={batch}\n"
            );
            let cpu = cpus(&parse("batch", &text).unwrap()).remove(0);
            assert_eq!((cpu.engine, cpu.batch_submit), (crate::SubmitEngine::Libaio, expected));
        }
    }

    // Proves a synchronous engine submits one I/O per call whatever the batch asks, and a job
    // without any CPU option has the default profile (fio's default engine is psync).
    #[test]
    fn sync_engine_and_default_profile() {
        let text = "[a]\nsize=64k\nrw=read\nioengine=psync\niodepth_batch_submit=8\n";
        let cpu = cpus(&parse("psync", text).unwrap()).remove(0);
        assert_eq!((cpu.engine, cpu.batch_submit), (crate::SubmitEngine::Sync, 1));
        let cpu = cpus(&parse("plain", "[a]\nsize=64k\nrw=read\n").unwrap()).remove(0);
        assert_eq!(cpu, crate::IssuerCpu::default());
        let text = "[a]\nsize=64k\nrw=read\nioengine=pvsync2\nhipri=1\n";
        let cpu = cpus(&parse("pvsync2", text).unwrap()).remove(0);
        assert!(cpu.polled, "pvsync2's hipri is RWF_HIPRI");
    }

    // Proves cpumask becomes the same CPU list (the later of it and cpus_allowed wins), and
    // that bad CPU options are refused naming the file's line: a reversed range, a word, an
    // empty mask, a mask beyond fio's 32 bits, and an io_uring option on libaio (fio's "Bad
    // option").
    #[test]
    fn cpumask_and_refusals() {
        let text = "[a]\nsize=64k\nrw=read\ncpus_allowed=7\ncpumask=0x5\n";
        assert_eq!(cpu_lists(&parse("cpumask", text).unwrap()), [vec![0, 2]]);
        let text = "[a]\nsize=64k\nrw=read\ncpumask=5\ncpus_allowed=7\n";
        assert_eq!(cpu_lists(&parse("cpumask_then", text).unwrap()), [vec![7]]);
        for (line, why) in [
            ("cpus_allowed=3-1", "reversed range"),
            ("cpus_allowed=x", "not a CPU number"),
            ("cpus_allowed=1,,2", "empty piece"),
            ("cpumask=0", "non-zero mask"),
            ("cpumask=0x100000000", "32 bits"),
            ("hipri=1", "not an option of ioengine=libaio"),
            ("sqthread_poll_cpu=1", "engines that have it: io_uring, io_uring_cmd"),
        ] {
            let text = format!("[a]\nsize=64k\nioengine=libaio\n{line}\n");
            let error = parse("cpu_bad", &text).unwrap_err().to_string();
            assert!(error.contains("cpu_bad.fio:4") && error.contains(why), "{line}: {error}");
        }
    }

    // Proves a job's pre-read runs on the CPUs its clones run on (fio's job thread pre-reads
    // after setting its affinity), each pre-reading clone on its own clone's share, and that
    // a create_only job's clones keep their CPUs though they do no I/O.
    #[test]
    fn pre_read_and_create_only_keep_the_cpus() {
        let text = "[a]\nsize=64k\nrw=read\npre_read=1\ncpus_allowed=2-3\n\
                    cpus_allowed_policy=split\nnumjobs=2\n[b]\nsize=64k\ncreate_only=1\n\
                    cpus_allowed=5,7\n";
        let spec = parse("pre_read_cpus", text).unwrap();
        let plan = spec.plan(&targets(), &Prng::new(1)).unwrap();
        let lists: Vec<(String, Vec<Vec<u32>>)> = plan
            .phases
            .iter()
            .map(|phase| {
                let cpus = phase.issuers.iter().map(|i| i.cpu().cpus_allowed).collect();
                (phase.name.clone(), cpus)
            })
            .collect();
        assert_eq!(
            lists,
            [
                ("a (pre_read)".to_owned(), vec![vec![2], vec![3]]),
                ("a+b".to_owned(), vec![vec![2], vec![3], vec![5, 7]]),
            ]
        );
    }
}
