//! The command line as the user types it (clap's "low" arguments). Validation into built
//! objects happens in the command modules; defaults come from the libraries that own them.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use elevator_live::EngineOptions;
use elevator_sim::QueueSettings;

/// The unit convention, said once for `--help` and the man pages (the report's tables say it
/// in their own footnote).
const UNITS_HELP: &str = "\
Units (fio's convention): kB, MB, GB are powers of ten (10^3, 10^6, 10^9 bytes); KiB, MiB, GiB
are powers of two. Rates in tables are MB/s. Tools that printed KB/s or MB/sec in powers of two
(iozone, hdparm) keep their label with kb_base=1024 stated under the table. Sizes typed in specs
take binary suffixes: 512k = 512 KiB, 24g = 24 GiB; times take ns, us, ms, s. JSON field names
carry their unit (bytes, ns, bytes_per_s).";

/// Run, measure and compare Linux I/O schedulers.
///
/// elevator re-implements the kernel's I/O schedulers with their tunables, sysfs names and
/// defaults, and runs them in a deterministic simulator, live in front of a real device, or
/// side by side with the kernel's own.
#[derive(Debug, Parser)]
#[command(
    name = "elevator",
    version,
    about,
    long_about,
    propagate_version = true,
    after_long_help = UNITS_HELP
)]
pub(crate) struct Args {
    /// No progress bars or spinners on stderr (they appear only on a terminal anyway, and only
    /// for runs longer than about two seconds).
    #[arg(long, short = 'q', global = true)]
    pub(crate) quiet: bool,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List schedulers, devices, hosts and workloads with their keys, units and defaults.
    ///
    /// `elevator list schedulers deadline:fifo_batch=8` shows the tunables a spec resolves to,
    /// which is also a way to check a spec before using it.
    List(ListArgs),
    /// Simulate a workload on a device under one or more schedulers, side by side.
    ///
    /// With no arguments: two sequential readers 200 GiB apart on a 2005 desktop disk, under
    /// every scheduler.
    Sim(SimArgs),
    /// Compare schedulers: with no arguments, the classic 2005-2010 study re-run in the
    /// simulator; with -w, any workloads on any device.
    ///
    /// The classic study runs iozone on a SAN file server, hdparm on four IDE disks, dd on a
    /// SCSI disk, OLTP and DSS loads on MegaRAID LUNs and sequential readers on an iSCSI pool,
    /// each under noop, deadline, anticipatory and cfq, and prints each experiment's table as
    /// the tool printed it, with the best scheduler of each column.
    Compare(CompareArgs),
    /// Which scheduler, with which tunables, for this device and this workload: ranked in the
    /// simulator by a goal, explained, and the commands that apply and persist it.
    ///
    /// Tries every scheduler TARGET's kernel offers (or, for a model, every scheduler of its
    /// era) with a small grid of their main tunables, ranks them by --goal, explains the
    /// winner against the runner-up with the mechanism counters that differ most, says how
    /// confident it is (the margin against the simulator's validated error) and prints
    /// `elevator kernel set/tune`, a udev rule and a TuneD snippet. --apply does it on TARGET
    /// (`elevator kernel restore TARGET` undoes it); --live confirms the top 3 with the
    /// kernel's schedulers.
    Advise(crate::advise::AdviseArgs),
    /// Run thousands of random simulations with every invariant check on (a seeded sweep).
    ///
    /// Each seed derives a scheduler with tunables, a device, a host, queue settings and a
    /// small workload, runs it with tight bounds and checks that every request completes
    /// exactly once, time never goes back and memory stays bounded; every 8th seed runs twice
    /// to check identical output. Failures print their seed and a replaying command line;
    /// the exit code is 1 if any case failed.
    ///
    /// With GRID.toml: a parameter study instead, every configuration of the grid simulated
    /// on this machine's cores (-j threads), or with --ray as Ray tasks through the Python
    /// package (`pip install ./python`); one CSV row per configuration × run × phase × job, a
    /// failed configuration one row with its `error` (exit 1), --resume to skip what a
    /// stopped sweep finished. Put --ray after GRID.toml or write --ray=ADDRESS.
    Sweep(SweepArgs),
    /// Run a workload live: our schedulers in front of a real file or block device, over
    /// io_uring with O_DIRECT, once per scheduler on the same target.
    ///
    /// The target is a regular file (created with real data when missing, at --size) or a
    /// block device. Writing is refused to a device that has partitions, is mounted, in use
    /// or carries any signature blkid finds (filesystem, RAID, LVM, swap, partition table...),
    /// and to a file elevator did not create, unless --force. One run per target at a time:
    /// a target in use is refused, naming the PID using it. A new file must fit the free
    /// space. Ctrl-C stops issuing (or creating the file, which is then removed), waits for
    /// in-flight I/O and prints the partial report (exit 130). With --verify, any block that
    /// reads back wrong fails the run (exit 1).
    Run(RunArgs),
    /// Replay a block trace (fio iolog, blkparse text, MSR CSV, compact) under schedulers: in
    /// the simulator (-d), or live on a file or device (--live).
    ///
    /// Each process of the trace is its own issuer (its pid and I/O priority), so cfq and bfq
    /// see the processes the trace saw. Each I/O is issued at its recorded time (open loop, as
    /// btreplay), scaled by --speed, or as fast as possible with --afap; the report's
    /// counters say how far the replay drifted from the trace (replay_drift_mean_ns,
    /// replay_drift_max_ns, replay_ios_late). The same as `elevator sim -w trace:TRACE` or
    /// `elevator run -w trace:TRACE`; `elevator kernel compare DEV --trace TRACE` replays it
    /// under the kernel's schedulers.
    Replay(ReplayArgs),
    /// Show, switch, tune, persist and benchmark the kernel's own I/O schedulers.
    ///
    /// Reads and writes /sys/block/DEV/queue. `compare` switches the device through each
    /// scheduler it offers, runs the workload with user-space scheduling off, and puts the
    /// original scheduler, tunables and nr_requests back when it ends, fails or is
    /// interrupted. Changing anything needs root.
    Kernel(KernelArgs),
    /// Capture the kernel's own schedulers' decisions through their tracepoints and replay
    /// them into ours: the kernel as the oracle (issue 25).
    ///
    /// For each scheduler of -s (with its tunables): attaches it afresh on DEV (default: a
    /// scratch loop device over a RAM-backed file, made and removed here), runs the workload
    /// (-w: a spec or an fio job file) with user-space scheduling off, captures every insert,
    /// merge, issue, requeue and completion (and kyber's own events) through tracefs, and
    /// writes DIR/conform-SCHED.sched; the device's queue is put back as found. A capture
    /// that lost events is refused. Needs root. Each capture is then replayed into our
    /// scheduler of the same name and tunables, decision by decision: agreement, the first
    /// disagreements with both sides' state, disagreements by cause (DIR/conform-SCHED.json
    /// has it all). `--replay FILE.sched ...` replays saved captures without root.
    Conform(crate::conform::ConformArgs),
    /// Capture a block device's I/O through tracefs block tracepoints, as fio's iolog or
    /// blkparse's text.
    ///
    /// Records each request's dispatch (D) and completion (C), with --queue each bio's
    /// arrival (Q) and insertion (I), in a tracefs instance of its own (the global trace
    /// buffer and other tracing stay untouched), for --duration or until Ctrl-C. Mounts
    /// tracefs at /sys/kernel/tracing when it is not mounted, and unmounts it afterwards;
    /// the instance is removed on every exit. Needs root.
    Trace(crate::trace::TraceArgs),
    /// Measure a device or file and write a device preset for `-d ./FILE.toml`.
    ///
    /// Sequential and random I/O by block size and queue depth through the live engine,
    /// reads only unless --write (on a block device only with --force); the preset is a
    /// `table` device with every measurement recorded (`elevator calibrate --help`).
    Calibrate(crate::calibrate::CalibrateArgs),
    /// Print a shell completion script: bash, zsh, fish, elvish or powershell.
    ///
    /// bash: `elevator completions bash > ~/.local/share/bash-completion/completions/elevator`;
    /// zsh: `elevator completions zsh > ~/.zfunc/_elevator` (with ~/.zfunc on $fpath);
    /// fish: `elevator completions fish > ~/.config/fish/completions/elevator.fish`.
    Completions(CompletionsArgs),
    /// Write the manual pages (roff): the top page to stdout, or with -o DIR elevator.1 and a
    /// page per subcommand (elevator-sim.1, elevator-kernel-show.1, ...) into DIR.
    ///
    /// Read the top page with `elevator man | man -l -`; install all of them with
    /// `elevator man -o ~/.local/share/man/man1`.
    Man(ManArgs),
    /// Render a saved report (the JSON elevator wrote) as a table, CSV, SVG or one HTML page.
    ///
    /// `elevator report run.json -o report.html` writes one self-contained page (tables, bar
    /// charts of the "why" counters, latency CDFs, per-process shares) that opens offline;
    /// `-o chart.svg` the main chart; no -o prints the table.
    Report(crate::report_cmd::ReportCmdArgs),
    /// Run fio's command line: job files and command-line jobs, fio's flags and outputs.
    ///
    /// `elevator fio --output-format=json job.fio` reads what fio reads and writes what fio
    /// writes (normal, terse, json, json+), nothing on stderr on success, exit 1 on bad input
    /// as fio; the binary invoked through a link named `fio` behaves the same, so tools that
    /// run fio (bench-fio, PerfKitBenchmarker, cbt) can run elevator. The jobs run in the
    /// simulator; ELEVATOR_FIO_DEVICE, ELEVATOR_FIO_SCHEDULER and ELEVATOR_FIO_SEED choose
    /// the device, scheduler and seed (`elevator fio --help` lists fio's flags).
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Fio(FioArgs),
}

/// `elevator fio`: fio's own command line, read by `fio_front`.
#[derive(Debug, clap::Args)]
pub(crate) struct FioArgs {
    /// fio's arguments, as fio takes them.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub(crate) args: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct SweepArgs {
    /// A grid of simulations to run in parallel on this machine's cores instead of the seeded
    /// sweep; the rows (per configuration its report's run × phase × job rows, headed by
    /// `config`, `error` and `cfg.<key>`) go to stdout as CSV. GRID.toml: `[grid]`, lists of
    /// choices whose product runs (the last key varying fastest), and/or `[[config]]` tables
    /// (run first), of `elevator.sim`'s keyword arguments (device, workload, schedulers, seed,
    /// host, max_size, max_runtime_ns, dispatch_samples, interval, nr_requests,
    /// read_ahead_kb, max_sectors_kb, plugging, depth); a top-level `seed` for those naming
    /// none. The Python package's `elevator.sweep` reads the same file and writes the same rows.
    #[arg(value_name = "GRID.toml", conflicts_with_all = ["seed", "seeds", "from", "format"])]
    pub(crate) grid: Option<PathBuf>,

    /// With a grid: run it on Ray, on the cluster at ADDRESS (without one: a local Ray),
    /// through the Python package (`pip install ./python`; its interpreter: ELEVATOR_PYTHON,
    /// else python3).
    #[arg(long, value_name = "ADDRESS", num_args = 0..=1, default_missing_value = "",
          requires = "grid")]
    pub(crate) ray: Option<String>,

    /// With a grid: append each finished configuration to this JSON Lines file, and skip those
    /// it already holds.
    #[arg(long, value_name = "PATH", requires = "grid")]
    pub(crate) resume: Option<PathBuf>,

    /// With a grid: write the rows to FILE.csv or FILE.jsonl instead of stdout.
    #[arg(short, long, value_name = "FILE", requires = "grid")]
    pub(crate) output: Option<PathBuf>,

    /// How many seeds to run.
    #[arg(long, default_value_t = 1000, conflicts_with = "seed")]
    pub(crate) seeds: u64,

    /// The first seed.
    #[arg(long, value_name = "SEED", default_value_t = 0, conflicts_with = "seed")]
    pub(crate) from: u64,

    /// Replay one seed: print its configuration and outcome.
    #[arg(long)]
    pub(crate) seed: Option<u64>,

    /// Threads (default: the machine's processors).
    #[arg(short, long)]
    pub(crate) jobs: Option<usize>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub(crate) format: ListFormat,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ManArgs {
    /// Write every page into this directory (created if missing) instead of the top page to
    /// stdout.
    #[arg(short, long, value_name = "DIR")]
    pub(crate) output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct KernelArgs {
    /// Read and write this sysfs tree instead of /sys (for tests and dry runs).
    #[arg(long, value_name = "DIR", default_value = "/sys", hide = true, global = true)]
    pub(crate) sysfs_root: PathBuf,

    /// Keep snapshots of changed devices here instead of /run/elevator (for /sys) or
    /// SYSFS_ROOT/elevator-state (for another tree), for tests.
    #[arg(long, value_name = "DIR", hide = true, global = true)]
    pub(crate) state_dir: Option<PathBuf>,

    /// Read the kernel release, command line and boot-loader files under this root instead
    /// of / (for tests and dry runs).
    #[arg(long, value_name = "DIR", default_value = "/", hide = true, global = true)]
    pub(crate) system_root: PathBuf,

    #[command(subcommand)]
    pub(crate) command: KernelCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum KernelCommand {
    /// The scheduler line (current in brackets), queue attributes, hardware queue depth and
    /// the current scheduler's tunables of every block device, or of one.
    Show(KernelShowArgs),
    /// Switch DEV to SCHED now (until reboot; see `persist`).
    Set(KernelSetArgs),
    /// Set the current scheduler's tunables or queue attributes (nr_requests, read_ahead_kb,
    /// max_sectors_kb, nomerges, ...): KEY=VALUE in the attribute's own unit, or with a unit
    /// (`read_expire=250ms`) for tunables elevator knows.
    Tune(KernelTuneArgs),
    /// Print (or with --apply, install) a udev rule that sets SCHED and its tunables on DEV
    /// at every boot. The `elevator=` boot parameter has no effect on blk-mq kernels (5.0+);
    /// on older kernels, for a single-queue device, the boot-line form (grubby or GRUB) is
    /// offered too, with which one wins; on 2.4, an `elvtune` line for /etc/rc.local.
    Persist(KernelPersistArgs),
    /// Run a workload under each of the kernel's schedulers on DEV and compare.
    Compare(KernelCompareArgs),
    /// Put back what an elevator command killed mid-change left changed (the snapshot it
    /// kept in /run/elevator), on DEV or on every device with a snapshot, and print what
    /// changed.
    Restore(KernelRestoreArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct KernelRestoreArgs {
    /// The device; default: every device with a snapshot.
    pub(crate) device: Option<String>,
    /// Forget the snapshot instead: the device keeps the settings it has now.
    #[arg(long)]
    pub(crate) discard: bool,
}

#[derive(Debug, clap::Args)]
pub(crate) struct KernelShowArgs {
    /// A device (`sda`, `/dev/sda`, a partition: its disk); default: every block device.
    pub(crate) device: Option<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub(crate) format: ListFormat,
}

#[derive(Debug, clap::Args)]
pub(crate) struct KernelSetArgs {
    /// The device (`sda`, `/dev/sda`).
    pub(crate) device: String,
    /// The scheduler (`none`, `mq-deadline`, `kyber`, `bfq`, as the device offers).
    pub(crate) scheduler: String,
}

#[derive(Debug, clap::Args)]
pub(crate) struct KernelTuneArgs {
    /// The device.
    pub(crate) device: String,
    /// KEY=VALUE settings, applied in order after all are checked.
    #[arg(required = true, value_name = "KEY=VALUE")]
    pub(crate) settings: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct KernelPersistArgs {
    /// The device.
    pub(crate) device: String,
    /// The scheduler the rule sets.
    pub(crate) scheduler: String,
    /// Tunables and queue attributes the rule sets after the scheduler.
    #[arg(value_name = "KEY=VALUE")]
    pub(crate) settings: Vec<String>,
    /// Install the rule under --rules-dir and have udev reload and apply it.
    #[arg(long)]
    pub(crate) apply: bool,
    /// Where --apply writes the rule.
    #[arg(long, value_name = "DIR", default_value = elevator_kernel::persist::RULES_DIR)]
    pub(crate) rules_dir: PathBuf,
    /// With --apply: write the files only, do not run udevadm or the boot loader's tool.
    #[arg(long, requires = "apply")]
    pub(crate) no_reload: bool,
}

/// `elevator replay`: sugar over `sim` and `run` with `-w trace:TRACE` (`crate::replay`).
#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// The trace file (its format is found from its content).
    #[arg(value_name = "TRACE")]
    pub(crate) trace: String,

    /// The simulated device (default: as `elevator sim`).
    #[arg(short, long, conflicts_with = "live")]
    pub(crate) device: Option<String>,

    /// Schedulers, comma separated or repeated (default: every registered scheduler).
    #[arg(short, long = "scheduler", value_name = "SCHED,...")]
    pub(crate) schedulers: Vec<String>,

    /// Replay this many times as fast as recorded (2: gaps halved).
    #[arg(long, value_name = "X", conflicts_with = "afap")]
    pub(crate) speed: Option<f64>,

    /// As fast as possible: ignore the recorded times, keep each process's order.
    #[arg(long)]
    pub(crate) afap: bool,

    /// Replay live on this regular file or block device instead (as `elevator run -t`; a
    /// missing file is created as large as the trace reaches).
    #[arg(long, value_name = "TARGET")]
    pub(crate) live: Option<PathBuf>,

    /// With --live: write even where the safety checks refuse. This destroys data.
    #[arg(long, requires = "live")]
    pub(crate) force: bool,

    /// The seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,

    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

#[derive(Debug, clap::Args)]
pub(crate) struct KernelCompareArgs {
    /// The device (`loop0`, `/dev/sdb`). May be left out when the job file names its
    /// devices (`filename=`); given beside them, it must be one of them. Alone (no JOBFILE,
    /// no -w) it is read as the job file: `elevator kernel compare FILE.fio`.
    #[arg(value_name = "DEV")]
    pub(crate) device: Option<String>,

    /// An fio job file (the same as `-w fio:FILE`): its jobs run as fio runs them, on the
    /// device, or on every block device its `filename`s name (each gets the scheduler).
    #[arg(value_name = "JOBFILE", conflicts_with = "workload")]
    pub(crate) job_file: Option<String>,

    /// The workload: block-level jobs run direct (`job:rw=randread,bs=4k,iodepth=32`);
    /// buffered ones (`job:direct=0`, iozone, dd, hdparm, seqread) go through the page cache,
    /// their files laid out one after another on the device.
    #[arg(short, long)]
    pub(crate) workload: Option<String>,

    /// A block trace to replay (the same as `-w trace:TRACE`): each of its processes issues
    /// its I/O at the recorded times (see `elevator replay`).
    #[arg(long, value_name = "TRACE", conflicts_with_all = ["workload", "job_file"])]
    pub(crate) trace: Option<String>,

    /// With a job file: write fio's output instead of elevator's report, in fio's formats
    /// (comma separated: `normal`, `json`, `json+`, `terse`), measured on the real target.
    /// With several schedulers, `-o FILE` is required and each scheduler's output goes to
    /// FILE with `.SCHEDULER` before its extension.
    #[arg(long, value_name = "FORMAT[,FORMAT]", conflicts_with = "format")]
    pub(crate) output_format: Option<String>,

    /// fio's `--minimal`: the same as `--output-format terse`.
    #[arg(long, conflicts_with_all = ["output_format", "format"])]
    pub(crate) minimal: bool,

    /// Kernel schedulers with optional tunables, comma separated or repeated
    /// (`-s mq-deadline:fifo_batch=8,bfq` or `-s mq-deadline:fifo_batch=8 -s bfq`; default:
    /// every one the device offers).
    #[arg(short, long = "scheduler", value_name = "SCHED[:K=V]")]
    pub(crate) schedulers: Vec<String>,

    /// Where the workload drops caches (and before each scheduler's run), drop the whole
    /// page cache (`echo 3 > /proc/sys/vm/drop_caches`) instead of the device's own pages.
    #[arg(long)]
    pub(crate) drop_caches: bool,

    #[command(flatten)]
    pub(crate) io: RealIoArgs,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CompareArgs {
    /// The device for -w workloads (default: hdd).
    #[arg(short, long)]
    pub(crate) device: Option<String>,

    /// A workload to compare on; repeat for several. Without -w: the classic study.
    #[arg(short, long = "workload", value_name = "WORKLOAD")]
    pub(crate) workloads: Vec<String>,

    /// Schedulers, comma separated or repeated (`-s deadline,cfq:slice_idle=0`; default: the
    /// 2.6 set noop, deadline, anticipatory, cfq).
    #[arg(short, long = "scheduler", value_name = "SCHED,...")]
    pub(crate) schedulers: Vec<String>,

    /// Every registered scheduler.
    #[arg(long, conflicts_with = "schedulers")]
    pub(crate) all: bool,

    /// Run only these experiments of the classic study (comma separated): iozone-1,
    /// iozone-10, hdparm, dd-read, dd-write, dd-copy, oltp, dss, seqread-1, seqread-2.
    #[arg(long, value_name = "ID,...", value_delimiter = ',')]
    pub(crate) only: Vec<String>,

    /// Multiply every amount of data and run time, and the study hosts' RAM, by this factor
    /// (0 < F <= 1) for a quick look; the report says so.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) scale: f64,

    /// The seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,

    /// The host for -w workloads (default: host).
    #[arg(long)]
    pub(crate) host: Option<String>,

    /// `read_ahead_kb` (KiB) for -w workloads (default: 128).
    #[arg(long)]
    pub(crate) read_ahead_kb: Option<u32>,

    /// Keep up to this many dispatched requests, sampled evenly, in the report (their time,
    /// sector, size, process and device): what an HTML report draws as each elevator's sector
    /// over time. 0: none; an `.html` output keeps 20000 unless this says otherwise.
    #[arg(long, value_name = "N")]
    pub(crate) dispatch_samples: Option<usize>,

    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// An fio job file to run live (the same as `-w fio:FILE`): its jobs run as fio runs them,
    /// on the target its `filename` names or `--target`; an option the live engine cannot
    /// honour (fio's default buffered I/O among them: say `direct=1`) is refused.
    #[arg(value_name = "JOBFILE", conflicts_with = "workload")]
    pub(crate) job_file: Option<String>,

    /// The target: a regular file or a block device (default: a scratch file
    /// /var/tmp/elevator.scratch, created at --size when missing; 1 GiB without --size).
    #[arg(short, long, value_name = "PATH")]
    pub(crate) target: Option<PathBuf>,

    /// The workload: block-level (`job`, `dd:mode=read`, `hdparm`), e.g.
    /// `job:rw=randread,bs=4k,iodepth=32,numjobs=2,runtime=10s`.
    #[arg(short, long, default_value = elevator_live::run::DEFAULT_WORKLOAD)]
    pub(crate) workload: String,

    /// With a job file: write fio's output instead of elevator's report, in fio's formats
    /// (comma separated: `normal`, `json`, `json+`, `terse`), measured on the real target.
    /// With several schedulers, `-o FILE` is required and each scheduler's output goes to
    /// FILE with `.SCHEDULER` before its extension.
    #[arg(long, value_name = "FORMAT[,FORMAT]", conflicts_with = "format")]
    pub(crate) output_format: Option<String>,

    /// fio's `--minimal`: the same as `--output-format terse`.
    #[arg(long, conflicts_with_all = ["output_format", "format"])]
    pub(crate) minimal: bool,

    /// Schedulers, comma separated or repeated (`-s deadline,cfq:slice_idle=0`; default: every
    /// registered scheduler).
    #[arg(short, long = "scheduler", value_name = "SCHED,...")]
    pub(crate) schedulers: Vec<String>,

    /// Transfers in flight at once: the device queue depth the scheduler sees (default: the
    /// workload's I/Os in flight, iodepth × numjobs over its jobs; 32 when it has no iodepth).
    #[arg(long)]
    pub(crate) depth: Option<u32>,

    /// The request pool's size per direction (`nr_requests`; default: twice the depth, at
    /// least 128).
    #[arg(long)]
    pub(crate) nr_requests: Option<u32>,

    /// The largest request in KiB (`max_sectors_kb`); larger I/Os are split.
    #[arg(long, default_value_t = EngineOptions::default().max_sectors_kb)]
    pub(crate) max_sectors_kb: u32,

    /// Size of the scratch file to create when the target does not exist (default 1g; k, m, g
    /// are KiB, MiB, GiB); for an existing target, the least size it must have.
    #[arg(long)]
    pub(crate) size: Option<String>,

    /// Stamp every written block with its offset and a generation and check every read.
    #[arg(long)]
    pub(crate) verify: bool,

    /// Inject faults between the queue and the device, repeatable:
    /// `fail:op=read,every=100,errno=EIO` or `delay:op=write,by=20ms` (keys: op, every, after,
    /// count, offset, length, errno, by).
    #[arg(long, value_name = "FAULT")]
    pub(crate) inject: Vec<String>,

    #[command(flatten)]
    pub(crate) io: RealIoArgs,
}

/// What every command doing real I/O takes: safety override, backend, seed, report.
#[derive(Debug, clap::Args)]
pub(crate) struct RealIoArgs {
    /// Write even where the safety checks refuse (a mounted, held or signed device, a file
    /// elevator did not create). This destroys data.
    #[arg(long)]
    pub(crate) force: bool,

    /// The I/O backend: io_uring with the thread pool as fallback (auto), or either alone.
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    pub(crate) engine: EngineChoice,

    /// The seed of the workload's random streams.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,

    /// Go on after failed I/O of these kinds, as fio's continue_on_error: none (stop at the
    /// first failure, exit 1), read, write, io, verify, all (bare flag: all). Tolerated
    /// failures are still counted in the report, but do not fail the run.
    #[arg(long, value_name = "KIND", num_args = 0..=1, default_missing_value = "all",
          default_value = "none")]
    pub(crate) continue_on_error: String,

    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum EngineChoice {
    /// io_uring, or the thread pool (saying why) where io_uring is unavailable.
    Auto,
    /// io_uring only.
    IoUring,
    /// A thread pool of positional reads and writes.
    Threads,
}

impl From<EngineChoice> for elevator_live::BackendChoice {
    fn from(choice: EngineChoice) -> Self {
        match choice {
            EngineChoice::Auto => elevator_live::BackendChoice::Auto,
            EngineChoice::IoUring => elevator_live::BackendChoice::IoUring,
            EngineChoice::Threads => elevator_live::BackendChoice::Threads,
        }
    }
}

/// Where a report goes and in what form.
#[derive(Debug, clap::Args)]
pub(crate) struct ReportArgs {
    /// Output format (default: from the -o file's extension, else table).
    #[arg(long, value_enum)]
    pub(crate) format: Option<ReportFormat>,

    /// Write the report here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,

    /// The length of each interval of the report's time series (`phases[].series` in the
    /// JSON): simulated time in the simulator, wall time live; 1ms to 3600s.
    #[arg(
        long,
        value_name = "TIME",
        default_value = "1s",
        value_parser = elevator_report::series::parse_interval
    )]
    pub(crate) interval: elevator_core::Duration,
}

impl Command {
    /// The `--interval` of a command that records time series (those with a report).
    pub(crate) fn series_interval(&self) -> Option<elevator_core::Duration> {
        match self {
            Command::Sim(args) => Some(args.report.interval),
            Command::Compare(args) => Some(args.report.interval),
            Command::Run(args) => Some(args.io.report.interval),
            Command::Kernel(kernel) => match &kernel.command {
                KernelCommand::Compare(args) => Some(args.io.report.interval),
                _ => None,
            },
            _ => None,
        }
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// What to list (default: everything).
    #[arg(value_enum)]
    pub(crate) what: Option<ListWhat>,

    /// Specs to show resolved instead of every default (schedulers, devices, hosts or
    /// workloads).
    #[arg(value_name = "SPEC")]
    pub(crate) specs: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub(crate) format: ListFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ListWhat {
    /// I/O schedulers.
    Schedulers,
    /// Simulated device models and their presets.
    Devices,
    /// Simulated hosts (memory, processors, write-back) and their presets.
    Hosts,
    /// Workloads.
    Workloads,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ListFormat {
    /// Human-readable tables.
    Table,
    /// One JSON document.
    Json,
}

#[derive(Debug, clap::Args)]
pub(crate) struct SimArgs {
    /// An fio job file to run (the same as `-w fio:FILE`): its jobs run as fio runs them, the
    /// jobs of a group at once; an option the simulator cannot honour is refused.
    #[arg(value_name = "JOBFILE", conflicts_with = "workload")]
    pub(crate) job_file: Option<String>,

    /// With a job file: cap every job's `size` and `io_size` at this many bytes (e.g. `16m`),
    /// so fio's examples, written for whole disks, run in seconds.
    #[arg(long, value_name = "SIZE", value_parser = parse_size_arg, requires = "job_file")]
    pub(crate) max_size: Option<u64>,

    /// With a job file: cap every job's `runtime` at this (e.g. `2s`); jobs without a runtime
    /// get it.
    #[arg(long, value_name = "TIME", value_parser = parse_time_arg, requires = "job_file")]
    pub(crate) max_runtime: Option<elevator_core::Duration>,

    /// The device: a kind or preset with keys, e.g. `hdd`, `sas-15k-2008:depth=1`, `ssd`, or
    /// a DiskSim 4.0 parameter file, `disksim:PATH.parv[:key=value,...]`.
    #[arg(short, long, default_value = elevator_sim::DEFAULT_DEVICE)]
    pub(crate) device: String,

    /// The workload, e.g. `job:rw=randread,bs=4k,iodepth=32,numjobs=2,size=1g`.
    #[arg(short, long, default_value = elevator_sim::DEFAULT_WORKLOAD)]
    pub(crate) workload: String,

    /// Schedulers, comma separated or repeated (`-s deadline,cfq:slice_idle=0 -s noop`;
    /// default: every registered scheduler).
    #[arg(short, long = "scheduler", value_name = "SCHED,...")]
    pub(crate) schedulers: Vec<String>,

    /// The seed; the same seed and arguments give byte-identical JSON.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,

    /// Keep up to this many dispatched requests, sampled evenly, in the report (their time,
    /// sector, size, process and device): what an HTML report draws as each elevator's sector
    /// over time. 0: none; an `.html` output keeps 20000 unless this says otherwise.
    #[arg(long, value_name = "N")]
    pub(crate) dispatch_samples: Option<usize>,

    #[command(flatten)]
    pub(crate) report: ReportArgs,

    /// With a job file (positional or `-w fio:FILE`): write fio's output instead of elevator's
    /// report, in fio's formats (comma separated, as fio: `normal`, `json`, `json+`, `terse`).
    /// With several schedulers, `-o FILE` is required and each scheduler's output goes to FILE
    /// with `.SCHEDULER` before its extension.
    #[arg(long, value_name = "FORMAT[,FORMAT]", conflicts_with = "format")]
    pub(crate) output_format: Option<String>,

    /// fio's `--minimal`: the same as `--output-format terse`.
    #[arg(long, conflicts_with_all = ["output_format", "format"])]
    pub(crate) minimal: bool,

    /// The host: memory, processors, write-back tunables, e.g. `fileserver-2007` or
    /// `host:ram=12g,cpus=4,dirty_ratio=20` (used by buffered I/O).
    #[arg(long, default_value = elevator_sim::DEFAULT_HOST)]
    pub(crate) host: String,

    /// Requests per pool class (`nr_requests`).
    #[arg(long, default_value_t = QueueSettings::default().nr_requests)]
    pub(crate) nr_requests: u32,

    /// Largest read-ahead window of buffered reads in KiB (`read_ahead_kb`).
    #[arg(long, default_value_t = QueueSettings::default().read_ahead_kb)]
    pub(crate) read_ahead_kb: u32,

    /// Largest request in KiB (`max_sectors_kb`; default: a calibrated preset's recorded
    /// value, else the device driver's limit under the host's kernel).
    #[arg(long)]
    pub(crate) max_sectors_kb: Option<u32>,

    /// Commands at the device at once (default: the device's own queue depth).
    #[arg(long)]
    pub(crate) depth: Option<u32>,

    /// Plug an empty queue for up to 3 ms so that bios merge first, as every 2.6 kernel did:
    /// `on` (the default) or `off`.
    #[arg(
        long,
        value_name = "on|off",
        default_value = "on",
        num_args = 0..=1,
        default_missing_value = "on",
        value_parser = parse_on_off
    )]
    pub(crate) plugging: bool,

    /// Audit the block queue after every event (slow; for debugging).
    #[arg(long)]
    pub(crate) check: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    /// Aligned tables, a row per scheduler.
    Table,
    /// The full report (schema elevator.report/1).
    Json,
    /// A row per run and phase.
    Csv,
    /// The main chart (a bar per scheduler), as SVG.
    Svg,
    /// One self-contained HTML page: tables and charts.
    Html,
}

/// `on` or `off` (also `1`/`0`, `yes`/`no`, `true`/`false`).
fn parse_on_off(text: &str) -> Result<bool, String> {
    match text {
        "on" | "1" | "yes" | "true" => Ok(true),
        "off" | "0" | "no" | "false" => Ok(false),
        _ => Err(format!("`{text}` is neither on nor off (accepted: on, off)")),
    }
}

/// A size argument (`16m`, `1g`, bytes if bare).
fn parse_size_arg(text: &str) -> Result<u64, String> {
    elevator_core::units::parse_size_bytes(text).map_err(|error| error.to_string())
}

/// A time argument (`2s`, `500ms`, seconds if bare).
fn parse_time_arg(text: &str) -> Result<elevator_core::Duration, String> {
    elevator_core::units::parse_duration(text, 1_000_000_000).map_err(|error| error.to_string())
}
