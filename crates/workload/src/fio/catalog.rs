//! The option catalog: every option name fio 3.33 accepts in a job file, its aliases and the
//! type of its value (`/work/shared/specs/fio-compat.md` §2.1; names, aliases and types from
//! fio's `options.c` `fio_options[]` and the engines' option tables, §1.7).
//!
//! Only names and value types live here for now; defaults and fidelity come with the mapping
//! onto the simulator's workloads.

/// The unit a bare number means in a time option (§1.6).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TimeUnit {
    /// Seconds (`runtime`, `startdelay`, `ramp_time`, `thinktime_iotime`).
    Seconds,
    /// Milliseconds.
    Milliseconds,
    /// Microseconds (`thinktime`, `latency_target`, `max_latency`, …).
    Microseconds,
}

impl TimeUnit {
    /// Nanoseconds in one unit.
    pub(crate) fn ns(self) -> u64 {
        match self {
            TimeUnit::Seconds => 1_000_000_000,
            TimeUnit::Milliseconds => 1_000_000,
            TimeUnit::Microseconds => 1_000,
        }
    }
}

/// The type of an option's value (§1.6).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ValueType {
    /// A size or integer with unit suffixes (`4k`, `0x1000`), kb_base-dependent.
    Size,
    /// A size, or `N%` of the target, or `Nz` zones (`size`, `offset`, `io_size`, …).
    SizeOrPercent,
    /// A decimal number (`rwmixread` accepts only integers in fio, but floats are harmless).
    Float,
    /// A time: digits with `us ms s m h d`; a bare number is in the unit given.
    Time(TimeUnit),
    /// A time or a `lo-hi` range of times drawn per clone (`startdelay`).
    TimeRange(TimeUnit),
    /// `0` or `1`, value required.
    Bool,
    /// Value optional (= 1); `0`/`1` otherwise.
    Flag,
    /// One of a list, compared exactly up to an optional `:suffix`.
    Choice(&'static [&'static str]),
    /// Free text.
    Str,
    /// Free text or nothing (`write_bw_log` alone: the job name is the prefix, §4.6).
    OptionalStr,
    /// A `:`-separated list of names; `\:` is a literal colon (`filename`, `directory`).
    StrList,
    /// `lo-hi` or `lo:hi` sizes (`bsrange`, `filesize` also takes a single size).
    SizeRange,
    /// `SIZE/PCT:SIZE/PCT…` (`bssplit`).
    Split,
    /// `a:b:c` decimals (`percentile_list`, at most 20).
    FloatList,
    /// Accepted and recorded, never interpreted: profile options (`threads`, §1.7) and
    /// options of engines that do no block I/O, whose jobs cannot run anyway.
    Recorded,
}

/// One catalogued option.
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    /// The canonical name (what fio's JSON echoes).
    pub name: &'static str,
    /// Other names for it (§1.7).
    pub aliases: &'static [&'static str],
    /// Its value's type.
    pub value_type: ValueType,
    /// Whether it takes one value per direction, `read,write,trim` (§1.6 "Per direction").
    pub per_direction: bool,
}

const fn opt(name: &'static str, value_type: ValueType) -> OptionSpec {
    OptionSpec { name, aliases: &[], value_type, per_direction: false }
}

const fn alias(
    name: &'static str,
    aliases: &'static [&'static str],
    value_type: ValueType,
) -> OptionSpec {
    OptionSpec { name, aliases, value_type, per_direction: false }
}

const fn alias_per_dir(
    name: &'static str,
    aliases: &'static [&'static str],
    value_type: ValueType,
) -> OptionSpec {
    OptionSpec { name, aliases, value_type, per_direction: true }
}

const fn per_dir(name: &'static str, value_type: ValueType) -> OptionSpec {
    OptionSpec { name, aliases: &[], value_type, per_direction: true }
}

use TimeUnit::{Microseconds as Us, Seconds as S};
use ValueType::*;

/// `rw` (§2.1 "I/O type").
const RW: &[&str] = &[
    "read",
    "write",
    "trim",
    "randread",
    "randwrite",
    "randtrim",
    "rw",
    "readwrite",
    "randrw",
    "trimwrite",
    "randtrimwrite",
];

/// Engines that do block or file I/O through the kernel (§2.2, first rows).
pub const BLOCK_ENGINES: &[&str] = &[
    "psync", "sync", "pvsync", "pvsync2", "vsync", "libaio", "io_uring", "posixaio", "mmap",
    "splice", "null",
];

/// Engines that bypass the kernel I/O scheduler but still do block I/O (§2.2): runnable as
/// scheduler `none` once mapped.
pub const PASSTHROUGH_ENGINES: &[&str] =
    &["io_uring_cmd", "sg", "libzbc", "xnvme", "libblkio", "spdk"];

/// Engines that do no block I/O to a local device, or only CPU or metadata work (§2.2 "N →
/// reject"), plus the engines of fio 3.33 that later releases dropped (`pmemblk`,
/// `librpma_*`) and the external engine examples (`cpp_null`).
pub const NON_BLOCK_ENGINES: &[&str] = &[
    "net",
    "netsplice",
    "rdma",
    "http",
    "rbd",
    "rados",
    "gfapi",
    "gfapi_async",
    "libhdfs",
    "nfs",
    "dfs",
    "ime_psync",
    "ime_psyncv",
    "ime_aio",
    "nbd",
    "libiscsi",
    "dev-dax",
    "libpmem",
    "pmemblk",
    "libcufile",
    "libhipfile",
    "mtd",
    "windowsaio",
    "solarisaio",
    "external",
    "librpma_apm_client",
    "librpma_apm_server",
    "librpma_gpspm_client",
    "librpma_gpspm_server",
    "cpp_null",
    "cpuio",
    "exec",
    "falloc",
    "ftruncate",
    "e4defrag",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "page_fault",
];

const ENGINES: &[&str] = &[
    "psync",
    "sync",
    "pvsync",
    "pvsync2",
    "vsync",
    "libaio",
    "io_uring",
    "posixaio",
    "mmap",
    "splice",
    "null",
    "io_uring_cmd",
    "sg",
    "libzbc",
    "xnvme",
    "libblkio",
    "spdk",
    "net",
    "netsplice",
    "rdma",
    "http",
    "rbd",
    "rados",
    "gfapi",
    "gfapi_async",
    "libhdfs",
    "nfs",
    "dfs",
    "ime_psync",
    "ime_psyncv",
    "ime_aio",
    "nbd",
    "libiscsi",
    "dev-dax",
    "libpmem",
    "pmemblk",
    "libcufile",
    "libhipfile",
    "mtd",
    "windowsaio",
    "solarisaio",
    "external",
    "librpma_apm_client",
    "librpma_apm_server",
    "librpma_gpspm_client",
    "librpma_gpspm_server",
    "cpp_null",
    "cpuio",
    "exec",
    "falloc",
    "ftruncate",
    "e4defrag",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "page_fault",
];

const VERIFY: &[&str] = &[
    "0",
    "md5",
    "crc64",
    "crc32c",
    "crc32c-intel",
    "crc32",
    "crc16",
    "crc7",
    "xxhash",
    "sha1",
    "sha256",
    "sha512",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "meta",
    "pattern",
    "pattern_hdr",
    "null",
];

const DISTRIBUTIONS: &[&str] =
    &["random", "zipf", "pareto", "normal", "gauss", "zoned", "zoned_abs", "sequence"];

/// The catalog, in §2.1's group order, then the engine options of §2.2's engines.
pub const OPTIONS: &[OptionSpec] = &[
    // I/O type.
    alias("rw", &["readwrite"], Choice(RW)),
    opt("rw_sequencer", Choice(&["sequential", "identical"])),
    opt("rwmixread", Float),
    opt("rwmixwrite", Float),
    per_dir("percentage_random", Float),
    alias("randrepeat", &["allrandrepeat"], Bool),
    opt("randseed", Size),
    opt("norandommap", Flag),
    opt("random_distribution", Choice(DISTRIBUTIONS)),
    opt("random_generator", Choice(&["tausworthe", "lfsr", "tausworthe64"])),
    // Sizes and files.
    opt("size", SizeOrPercent),
    alias("io_size", &["io_limit"], SizeOrPercent),
    opt("filesize", SizeRange),
    alias("offset", &["fileoffset"], SizeOrPercent),
    opt("offset_align", Size),
    opt("offset_increment", SizeOrPercent),
    opt("number_ios", Size),
    alias("nrfiles", &["nr_files"], Size),
    opt("filename", StrList),
    opt("directory", StrList),
    opt("filename_format", Str),
    opt(
        "file_service_type",
        Choice(&["random", "roundrobin", "sequential", "zipf", "pareto", "normal", "gauss"]),
    ),
    opt("openfiles", Size),
    alias("fill_device", &["fill_fs"], Bool),
    opt("unique_filename", Bool),
    opt("fallocate", Choice(&["none", "native", "posix", "keep", "truncate", "0", "1"])),
    opt("create_serialize", Bool),
    opt("create_on_open", Bool),
    opt("create_only", Bool),
    opt("allow_file_create", Bool),
    opt("allow_mounted_write", Bool),
    opt("overwrite", Bool),
    opt("invalidate", Bool),
    opt("pre_read", Bool),
    opt("unlink", Bool),
    opt("unlink_each_loop", Bool),
    opt("lockfile", Choice(&["none", "exclusive", "readwrite"])),
    opt("file_append", Bool),
    // Block sizes.
    alias_per_dir("bs", &["blocksize"], Size),
    alias_per_dir("bsrange", &["blocksize_range"], SizeRange),
    opt("bssplit", Split),
    alias("bs_unaligned", &["blocksize_unaligned"], Flag),
    alias_per_dir("ba", &["blockalign"], Size),
    opt("bs_is_seq_rand", Bool),
    // Engine, depth, sync.
    opt("ioengine", Choice(ENGINES)),
    opt("iodepth", Size),
    alias("iodepth_batch", &["iodepth_batch_submit"], Size),
    alias("iodepth_batch_complete_min", &["iodepth_batch_complete"], Size),
    opt("iodepth_batch_complete_max", Size),
    opt("iodepth_low", Size),
    opt("io_submit_mode", Choice(&["inline", "offload"])),
    opt("direct", Bool),
    opt("buffered", Bool),
    opt("atomic", Bool),
    opt("sync", Choice(&["none", "0", "sync", "1", "dsync"])),
    opt("fsync", Size),
    opt("fdatasync", Size),
    opt("end_fsync", Bool),
    opt("fsync_on_close", Bool),
    opt("write_barrier", Size),
    opt("sync_file_range", Str),
    // Timing and rate.
    alias("runtime", &["timeout"], Time(S)),
    opt("time_based", Flag),
    opt("ramp_time", Time(S)),
    opt("startdelay", TimeRange(S)),
    opt("thinktime", Time(Us)),
    opt("thinktime_blocks", Size),
    opt("thinktime_blocks_type", Choice(&["complete", "issue"])),
    opt("thinktime_spin", Time(Us)),
    opt("thinktime_iotime", Time(S)),
    per_dir("rate", Size),
    per_dir("rate_iops", Size),
    alias_per_dir("rate_min", &["ratemin"], Size),
    per_dir("rate_iops_min", Size),
    alias("rate_cycle", &["ratecycle"], Size),
    opt("rate_process", Choice(&["linear", "poisson"])),
    opt("rate_ignore_thinktime", Bool),
    opt("latency_target", Time(Us)),
    opt("latency_window", Time(Us)),
    opt("latency_percentile", Float),
    opt("latency_run", Bool),
    per_dir("max_latency", Time(Us)),
    // Jobs and groups.
    opt("name", Str),
    opt("description", Str),
    opt("numjobs", Size),
    opt("loops", Size),
    opt("group_reporting", Flag),
    alias("stonewall", &["wait_for_previous"], Flag),
    opt("new_group", Flag),
    opt("wait_for", Str),
    opt("exitall", Flag),
    opt("exit_what", Choice(&["group", "stonewall", "all"])),
    opt("exitall_on_error", Flag),
    opt("stats", Bool),
    opt("flow", Float),
    opt("flow_id", Size),
    opt("flow_sleep", Size),
    opt("thread", Flag),
    // Priorities and scheduler.
    opt("prioclass", Size),
    opt("prio", Size),
    opt("priohint", Size),
    opt("nice", Float),
    per_dir("cmdprio_percentage", Size),
    per_dir("cmdprio_class", Size),
    per_dir("cmdprio", Size),
    per_dir("cmdprio_hint", Size),
    opt("cmdprio_bssplit", Str),
    opt("ioscheduler", Str),
    // Trim, verify, buffers.
    opt("verify", Choice(VERIFY)),
    opt("do_verify", Bool),
    opt("verify_backlog", Size),
    opt("verify_backlog_batch", Size),
    opt("verify_pattern", Str),
    opt("verify_interval", Size),
    opt("verify_offset", Size),
    opt("verify_fatal", Bool),
    opt("verify_dump", Bool),
    opt("verify_async", Size),
    opt("verify_state_save", Bool),
    opt("verify_state_load", Bool),
    opt("verify_only", Flag),
    opt("experimental_verify", Bool),
    opt("trim_percentage", Size),
    opt("trim_backlog", Size),
    opt("trim_backlog_batch", Size),
    opt("trim_verify_zero", Bool),
    opt("zero_buffers", Flag),
    opt("refill_buffers", Flag),
    opt("scramble_buffers", Bool),
    opt("buffer_compress_percentage", Size),
    opt("buffer_compress_chunk", Size),
    opt("buffer_pattern", Str),
    opt("dedupe_percentage", Size),
    opt("dedupe_mode", Choice(&["repeat", "working_set"])),
    opt("dedupe_working_set_percentage", Size),
    opt("dedupe_global", Bool),
    // Logging and reporting.
    opt("write_bw_log", OptionalStr),
    opt("write_lat_log", OptionalStr),
    opt("write_iops_log", OptionalStr),
    opt("write_hist_log", OptionalStr),
    opt("log_avg_msec", Size),
    opt("log_hist_msec", Size),
    opt("log_hist_coarseness", Size),
    opt("per_job_logs", Bool),
    opt("log_offset", Bool),
    opt("log_prio", Bool),
    opt("log_compression", Size),
    opt("log_store_compressed", Bool),
    alias("log_alternate_epoch", &["log_unix_epoch"], Bool),
    opt("bwavgtime", Size),
    opt("iopsavgtime", Size),
    opt("percentile_list", FloatList),
    opt("clat_percentiles", Bool),
    opt("lat_percentiles", Bool),
    opt("slat_percentiles", Bool),
    opt("significant_figures", Size),
    opt("kb_base", Size),
    opt("unit_base", Choice(&["0", "8", "1"])),
    opt("unified_rw_reporting", Choice(&["none", "mixed", "both", "0", "1"])),
    opt("disable_lat", Bool),
    opt("disable_clat", Bool),
    opt("disable_slat", Bool),
    alias("disable_bw_measurement", &["disable_bw"], Bool),
    opt("gtod_reduce", Bool),
    opt("disk_util", Bool),
    opt("block_error_percentiles", Bool),
    // Zones.
    opt("zonemode", Choice(&["none", "strided", "zbd"])),
    opt("zonesize", Size),
    opt("zonerange", Size),
    opt("zoneskip", SizeOrPercent),
    opt("zonecapacity", Size),
    opt("max_open_zones", Size),
    opt("read_beyond_wp", Bool),
    opt("zone_reset_threshold", Float),
    opt("zone_reset_frequency", Float),
    // Replay.
    opt("read_iolog", Str),
    opt("write_iolog", Str),
    opt("replay_no_stall", Bool),
    opt("replay_time_scale", Size),
    opt("replay_redirect", Str),
    opt("replay_align", Size),
    opt("replay_scale", Size),
    opt("replay_skip", Str),
    opt("read_iolog_chunked", Bool),
    opt("merge_blktrace_file", Str),
    opt("merge_blktrace_scalars", Str),
    opt("merge_blktrace_iters", Str),
    // Steady state.
    alias("steadystate", &["ss"], Str),
    alias("steadystate_duration", &["ss_dur"], Time(S)),
    alias("steadystate_ramp_time", &["ss_ramp"], Time(S)),
    alias("steadystate_check_interval", &["ss_interval"], Time(S)),
    // Host and CPU.
    opt("cpus_allowed", Str),
    opt("cpus_allowed_policy", Choice(&["shared", "split"])),
    opt("cpumask", Str),
    opt("numa_cpu_nodes", Str),
    opt("numa_mem_policy", Str),
    opt("uid", Size),
    opt("gid", Size),
    opt("cgroup", Str),
    opt("cgroup_weight", Size),
    opt("cgroup_nodelete", Bool),
    opt("clocksource", Choice(&["gettimeofday", "clock_gettime", "cpu"])),
    opt("gtod_cpu", Size),
    alias("mem", &["iomem"], Str),
    alias("iomem_align", &["mem_align"], Size),
    opt("hugepage-size", Size),
    opt("continue_on_error", Choice(&["none", "read", "write", "io", "verify", "all", "0", "1"])),
    opt("ignore_error", Str),
    opt("error_dump", Bool),
    opt("fadvise_hint", Str),
    opt("write_hint", Str),
    opt("exec_prerun", Str),
    opt("exec_postrun", Str),
    opt("ioscheduler_restore", Bool),
    // The rest of fio's general table (`options.c`, upstream after 3.33 included: the spec's
    // baseline reaches 3.42, §0), typed as fio types them; deprecated ones are recorded.
    opt("filetype", Choice(&["none", "file", "block", "char"])),
    opt("opendir", Str),
    opt("serialize_overlap", Bool),
    opt("num_range", Size),
    opt("softrandommap", Bool),
    opt("sprandom", Bool),
    opt("spr_num_regions", Size),
    opt("spr_op", FloatList),
    opt("spr_cs", Size),
    opt("random_sequence_stride", Bool),
    opt("ramp_size", Size),
    opt("verify_policy", Str),
    opt("verify_pattern_interval", Size),
    opt("verify_async_cpus", Str),
    opt("verify_write_sequence", Bool),
    opt("verify_header_seed", Bool),
    opt("job_max_open_zones", Size),
    opt("ignore_zone_limits", Bool),
    opt("recover_zbd_write_error", Bool),
    opt("write_zone_remainder", Bool),
    opt("fdp", Bool),
    alias("dataplacement", &["data_placement"], Choice(&["none", "fdp", "streams"])),
    alias("plid_select", &["fdp_pli_select"], Choice(&["random", "roundrobin", "scheme"])),
    alias("plids", &["fdp_pli"], Str),
    opt("dp_scheme", Str),
    opt("lockmem", Size),
    opt("comm", Str),
    opt("thinkcycles", Size),
    opt("create_fsync", Bool),
    opt("end_syncfs", Bool),
    opt("log_entries", Size),
    alias("log_window_value", &["log_max_value"], Choice(&["avg", "max", "both", "0", "1"])),
    opt("log_issue_time", Bool),
    opt("log_compression_cpus", Str),
    opt("log_alternate_epoch_clock_id", Size),
    opt("job_start_clock_id", Size),
    opt("profile", Str),
    opt("percentage_sequential", Recorded),
    opt("verifysort", Recorded),
    opt("verifysort_nr", Recorded),
    opt("rwmixcycle", Recorded),
    opt("flow_watermark", Recorded),
    // Profile options sharing the table (§1.7): accepted and recorded.
    opt("threads", Recorded),
    opt("block", Recorded),
    opt("numruns", Recorded),
    opt("dir", Recorded),
    // Engine options of block engines (§1.7, §2.2).
    opt("hipri", Flag),
    opt("fixedbufs", Flag),
    opt("registerfiles", Flag),
    opt("sqthread_poll", Flag),
    opt("sqthread_poll_cpu", Size),
    opt("nonvectored", Size),
    opt("force_async", Size),
    opt("uncached", Size),
    opt("nowait", Flag),
    opt("userspace_reap", Flag),
    opt("cmd_type", Choice(&["nvme"])),
    opt(
        "sg_write_mode",
        Choice(&[
            "write",
            "write_and_verify",
            "verify",
            "write_same",
            "write_same_ndob",
            "verify_bytchk_00",
            "verify_bytchk_01",
            "verify_bytchk_11",
        ]),
    ),
    opt("readfua", Bool),
    opt("writefua", Bool),
    opt("hipri_percentage", Size),
    opt("busy_wait_polling", Bool),
    // Engine options of engines that do no block I/O (§2.2): known, so such files parse, and
    // recorded — their jobs are reported as not runnable.
    opt("hostname", Recorded),
    opt("port", Recorded),
    opt("protocol", Recorded),
    opt("listen", Recorded),
    opt("pingpong", Recorded),
    opt("ttl", Recorded),
    opt("interface", Recorded),
    opt("serverip", Recorded),
    opt("verb", Recorded),
    opt("bindname", Recorded),
    opt("gpu_dev_id", Recorded),
    opt("gpu_dev_ids", Recorded),
    opt("cuda_io", Recorded),
    opt("http_host", Recorded),
    opt("http_mode", Recorded),
    opt("http_verbose", Recorded),
    opt("https", Recorded),
    opt("http_user", Recorded),
    opt("http_pass", Recorded),
    opt("http_s3_region", Recorded),
    opt("http_s3_key", Recorded),
    opt("http_s3_keyid", Recorded),
    opt("http_s3_storage_class", Recorded),
    opt("http_s3_sse_customer_key", Recorded),
    opt("http_s3_sse_customer_algorithm", Recorded),
    opt("http_swift_auth_token", Recorded),
    opt("nfs_url", Recorded),
    opt("uri", Recorded),
    opt("clientname", Recorded),
    opt("clustername", Recorded),
    opt("pool", Recorded),
    opt("rbdname", Recorded),
    opt("busy_poll", Recorded),
    opt("conf", Recorded),
    opt("cont", Recorded),
    opt("chunk_size", Recorded),
    opt("object_class", Recorded),
    opt("svcl", Recorded),
    opt("brick", Recorded),
    opt("volume", Recorded),
    opt("namenode", Recorded),
    opt("hdfsdirectory", Recorded),
    opt("initiator", Recorded),
    opt("skip_bad", Recorded),
    opt("direct_write_to_pmem", Recorded),
    opt("program", Recorded),
    opt("arguments", Recorded),
    opt("grace_time", Recorded),
    opt("std_redirect", Recorded),
    opt("cpuload", Recorded),
    opt("cpumode", Recorded),
    opt("cpuchunks", Recorded),
    opt("exit_on_io_done", Recorded),
    opt("donorname", Recorded),
    opt("inplace", Recorded),
];

/// The catalogued option called `name` (canonical name or alias, exact and case-sensitive,
/// §1.7).
pub fn lookup(name: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|spec| spec.name == name || spec.aliases.contains(&name))
}
