//! The host's keys and presets: RAM, CPUs, costs and the virtual-memory tunables.

use std::fmt;

use elevator_core::kernel::KERNEL_NAMES;
use elevator_core::{ComponentSpec, Duration, KernelVersion, KeyKind, KeySpec, ParamError, Params};

use crate::device::Preset;

/// The keys of `host`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "kernel",
        kind: KeyKind::Choice(KERNEL_NAMES),
        default: "2.6.18",
        help: "the kernel release: every version-dependent block-layer and host behaviour follows it (2.4.21, 2.4.21-27.EL = rhel3, 2.6.9, 2.6.9-5.EL = rhel4, 2.6.18, 2.6.18-8.el5 = rhel5.0, 2.6.18-194.11.4.el5 = rhel5.5)",
    },
    KeySpec {
        key: "fs",
        kind: KeyKind::Choice(&["ext3", "xfs"]),
        default: "ext3",
        help: "the filesystem of the workload's files, which decides their layout: ext3 in ordered mode (blocks allocated at write() from a pid-coloured start, through reservation windows of up to 4 MiB except on vanilla 2.6.9, an indirect block every 4 MiB, the journal at the device's start) or XFS (delayed allocation: each file's whole dirty range becomes one extent at write-back; the log mid-device)",
    },
    KeySpec {
        key: "ram",
        kind: KeyKind::Size { min_bytes: 64 << 20, max_bytes: 1 << 42 },
        default: "4g",
        help: "memory; the page cache may use all of it but the reserve",
    },
    KeySpec {
        key: "reserve",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 40 },
        default: "256m",
        help: "memory the page cache cannot use (kernel, programs)",
    },
    KeySpec {
        key: "cpus",
        kind: KeyKind::Integer { min: 1, max: 1024 },
        default: "2",
        help: "processors (cores) that run system calls and copies; with a blk-mq scheduler every I/O's submission, dispatch and completion work runs on them and a thread uses at most one (blk-mq-host.md §1)",
    },
    KeySpec {
        key: "copy_rate",
        kind: KeyKind::Size { min_bytes: 1 << 20, max_bytes: 1 << 40 },
        default: "2g",
        help: "bytes per second a processor copies between page cache and a process, system time (host-mechanisms.md §6: 0.2-0.7 ns/B, 1.5-3 GB/s NetBurst Xeon, 3-5 GB/s Opteron and Core 2; 2g = 0.47 ns/B)",
    },
    KeySpec {
        key: "syscall",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_millis(10),
            bare_unit: "us",
        },
        default: "2us",
        help: "system time of one read or write call, besides copying and page, bio and request work",
    },
    KeySpec {
        key: "user",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_millis(10),
            bare_unit: "us",
        },
        default: "1us",
        help: "user time a tool spends around each call",
    },
    KeySpec {
        key: "page_cost",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_millis(10),
            bare_unit: "us",
        },
        default: "2us",
        help: "system time per page a read allocates (miss or read-ahead) or a write dirties: allocation, radix tree, LRU, lock, dirty and write-back accounting, reclaim (host-mechanisms.md §6: 1-3 us)",
    },
    KeySpec {
        key: "bio_cost",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_millis(10),
            bare_unit: "us",
        },
        default: "1500ns",
        help: "system time per bio, merged or not: allocation, generic_make_request, merge lookup, completion (host-mechanisms.md §6: 1-2 us)",
    },
    KeySpec {
        key: "request_cost",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_millis(10),
            bare_unit: "us",
        },
        default: "8us",
        help: "system time per request allocated (a bio that merges pays none): elevator, SCSI command, queuecommand, completion softirq, before the scheduler's own cost; with interrupt_cost, a request's whole cost (host-mechanisms.md §6: 5-20 us with its interrupt; 8 + 4 = 12 us, 1.5 x the 8 us per I/O of 2009-10 for a 2005 core)",
    },
    KeySpec {
        key: "interrupt_cost",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_millis(10),
            bare_unit: "us",
        },
        default: "4us",
        help: "system time of a command's completion interrupt, one per request, charged to the process whose request completed (host-mechanisms.md §6: 2-10 us)",
    },
    KeySpec {
        key: "mq_user",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "362ns",
        help: "blk-mq host (a blk-mq scheduler): user time per I/O, the application's own work and its CQE reap (blk-mq-host.md 2.12 rows 15-16: 12 + 350 ns; docs/blk-mq-costs.md 5)",
    },
    KeySpec {
        key: "mq_syscall",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "200ns",
        help: "blk-mq host: one io_uring_enter or read/write call, divided among the I/Os of its batch (2.12 row 1; measured 114-229 ns here)",
    },
    KeySpec {
        key: "mq_submit",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "265ns",
        help: "blk-mq host: SQE prep, bio allocation, submit checks, tag and request init per I/O (2.12 rows 2, 4, 5, 7: 90 + 45 + 70 + 60 ns)",
    },
    KeySpec {
        key: "mq_pin",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "150ns",
        help: "blk-mq host: pinning the user page of an I/O (2.12 row 3)",
    },
    KeySpec {
        key: "mq_pin_fixed",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "5ns",
        help: "blk-mq host: a registered buffer's lookup instead of pinning (fixedbufs; 2.12 row 3 peak)",
    },
    KeySpec {
        key: "mq_merge",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "20ns",
        help: "blk-mq host: a bio's merge attempt (2.12 row 6); under a scheduler's lock for mq-deadline and bfq",
    },
    KeySpec {
        key: "mq_driver",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "115ns",
        help: "blk-mq host: NVMe driver prep, DMA map, SQE copy per request (2.12 row 8)",
    },
    KeySpec {
        key: "mq_doorbell",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "200ns",
        help: "blk-mq host: the SQ doorbell write, divided among the I/Os of a batch (2.12 row 9)",
    },
    KeySpec {
        key: "mq_irq",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "700ns",
        help: "blk-mq host: interrupt entry and exit, once per interrupt; completions that find the handler running or waiting share it (2.12 row 10)",
    },
    KeySpec {
        key: "mq_cqe",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "45ns",
        help: "blk-mq host: per completion, CQE fetch and tag to request (2.12 row 11)",
    },
    KeySpec {
        key: "mq_end_request",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "115ns",
        help: "blk-mq host: ending a request: accounting, freeing tags, end_io, unpin (2.12 row 13)",
    },
    KeySpec {
        key: "mq_softirq",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "1000ns",
        help: "blk-mq host: a BLOCK_SOFTIRQ completing a request of a one-queue device (2.12 row 12; ksoftirqd 0.6-1.1 us per I/O measured here)",
    },
    KeySpec {
        key: "mq_task_work",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "90ns",
        help: "blk-mq host: io_uring task_work and CQE post on the submitting thread (2.12 row 14)",
    },
    KeySpec {
        key: "mq_framework",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "470ns",
        help: "blk-mq host: the elevator framework per request with any scheduler but none: insert, one-by-one dispatch, lost direct issue and batching (docs/blk-mq-costs.md 5 S-F, derived from kernel measurements here)",
    },
    KeySpec {
        key: "mq_kblockd",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "2500ns",
        help: "blk-mq host: a hardware-queue run punted to kblockd: wake-up and two switches, on the kworker (spec 5; 2.1-2.6 us measured here)",
    },
    KeySpec {
        key: "mq_bfq_surplus",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "500ns",
        help: "blk-mq host: bfq's bookkeeping under its lock beyond our bfq's measured cost (docs/blk-mq-costs.md 5 S-B)",
    },
    KeySpec {
        key: "mq_lock_handoff",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_millis(1), bare_unit: "ns" },
        default: "127ns",
        help: "blk-mq host: delta0, a scheduler lock's hand-off penalty between cores (spec 3.6; with mq_lock_growth a least-squares fit to the published mq-deadline ceilings 3.90 M IOPS on 2 cores, 1.56 M on 4, 0.90 M on 16; docs/validation.md)",
    },
    KeySpec {
        key: "mq_lock_growth",
        kind: KeyKind::Float { min: 0.0, max: 100.0, unit: "per waiter" },
        default: "0.14",
        help: "blk-mq host: alpha, how the hand-off penalty grows per core spinning: delta(W) = delta0 (1 + alpha (W - 1)) (spec 3.6; fitted with mq_lock_handoff)",
    },
    KeySpec {
        key: "dirty_ratio",
        kind: KeyKind::Integer { min: 1, max: 100 },
        default: "40",
        help: "percent of page-cache memory that may be dirty before writers write back themselves (2.6.18: 40); a 2.4 host ignores it: bdflush starts at 50 % and writers write at 80 % (linux-2.4-elevator.md §6.4)",
    },
    KeySpec {
        key: "dirty_background_ratio",
        kind: KeyKind::Integer { min: 0, max: 100 },
        default: "10",
        help: "percent dirty at which the flusher starts writing back (2.6.18: 10); not on a 2.4 host",
    },
    KeySpec {
        key: "dirty_expire",
        kind: KeyKind::Time {
            min: Duration::ZERO,
            max: Duration::from_secs(86_400),
            bare_unit: "s",
        },
        default: "30s",
        help: "age at which dirty data is written back by the periodic flusher (2.6; 2.4 kupdated: 30 s)",
    },
    KeySpec {
        key: "dirty_writeback_interval",
        kind: KeyKind::Time {
            min: Duration::from_millis(10),
            max: Duration::from_secs(86_400),
            bare_unit: "s",
        },
        default: "5s",
        help: "how often the periodic flusher wakes (2.6; 2.4 kupdated: 5 s)",
    },
    KeySpec {
        key: "fsync",
        kind: KeyKind::Choice(&["kernel", "sync", "async"]),
        default: "kernel",
        help: "how fsync's write-back requests are flagged: kernel = as the release did (sync in 2.6.9, PF_SYNCWRITE; async in 2.6.18), or forced sync or async",
    },
    KeySpec {
        key: "mq_hz",
        kind: KeyKind::Choice(&["100", "250", "300", "1000"]),
        default: "250",
        help: "blk-mq host: the running kernel's tick rate (CONFIG_HZ), in whose jiffies mq-deadline's deadlines and tunables, kyber's timer and the queue's delayed run count (modern-vs-kernel.md rows 1, 11, 19; 250 as the kernel it measured); the legacy schedulers keep their kernel's 1000 (RHEL 5) whatever this says",
    },
];

/// `host`'s presets; the first is what the bare name means.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "host",
        help: "a 2005-era two-processor machine with 4 GiB, vanilla 2.6.18; CPU costs inside host-mechanisms.md §6's 2005 ranges (copy 0.47 ns/B, page 2 us, bio 1.5 us, request 8 + interrupt 4 us)",
        values: &[],
    },
    Preset {
        name: "fileserver-2007",
        help: "the classic study's IBM x3650-class file server: 4 processors, 12 GiB, RHEL 5.5 (2.6.18-194.11.4.el5, as its write-up gives); x3650s shipped with Core-microarchitecture Xeons (5100/5300, an inference: the write-up names no CPU), so host-mechanisms.md §6's Opteron/Core 2 end: copy 3 GiB/s (0.31 ns/B), page 1 us, bio 1 us, request 6 + interrupt 3 us",
        values: &[
            ("ram", "12g"),
            ("cpus", "4"),
            ("copy_rate", "3g"),
            ("kernel", "2.6.18-194.11.4.el5"),
            ("fs", "xfs"),
            ("page_cost", "1us"),
            ("bio_cost", "1us"),
            ("request_cost", "6us"),
            ("interrupt_cost", "3us"),
        ],
    },
    Preset {
        name: "desktop-2004",
        help: "the classic study's desktop with four IDE disks: one processor, 1 GiB; a self-built vanilla kernel whose version the write-up does not give: a default scheduler chosen in its configuration suggests a kernel after 2.6.9, so 2.6.18 is assumed (host-mechanisms.md §7.2); its CPU is not given either: the default 2005-era costs, copying at a NetBurst-class 1.5 GiB/s",
        values: &[("ram", "1g"), ("cpus", "1"), ("copy_rate", "1500m"), ("reserve", "128m")],
    },
    Preset {
        name: "server-2006",
        help: "the classic study's dd server with one SCSI disk, RHEL 5.0 (2.6.18-8.el5, from its boot-loader line). The write-up gives neither its memory nor its processors. Memory 512 MiB, RHEL 5's stated minimum: its 629 MB buffered dd ran at about the disk's sequential speed, so the dirty limit was well below 629 MB, and 2.6.18's limit is 40 % of page-cache memory (host-mechanisms.md 3.2) -- 2 GiB would allow about 780 MiB dirty and the whole write would finish at memory speed; 512 MiB less a 256 MiB reserve (kernel, daemons) leaves 256 MiB of page cache, a dirty limit of at most about 102 MiB (107 MB), and with the reserve counted as mapped and anonymous memory (half the RAM) 2.6.18's clamp of 3.2 lowers the ratio to 25 %, about 64 MiB: most of the write runs at the disk's pace. 2 processors assumed [U]; its CPU is not given: the default 2005-era costs",
        values: &[("ram", "512m"), ("reserve", "256m"), ("cpus", "2"), ("kernel", "2.6.18-8.el5")],
    },
    Preset {
        name: "dbserver-2005",
        help: "the classic study's database server: 2 Hyper-Threading processors (4 logical), 4 GiB, RHEL 4 GA/U1 (2.6.9-5.EL; inferred from the article's date, June 2005); Hyper-Threading in 2005 means NetBurst Xeons, so host-mechanisms.md §6's slow end: copy 1.5 GiB/s (0.64 ns/B), page 3 us, bio 2 us, request 12 + interrupt 6 us (1.5-3 x the 2009-10 8 us per I/O)",
        values: &[
            ("ram", "4g"),
            ("cpus", "4"),
            ("copy_rate", "1500m"),
            ("kernel", "2.6.9-5.EL"),
            ("page_cost", "3us"),
            ("bio_cost", "2us"),
            ("request_cost", "12us"),
            ("interrupt_cost", "6us"),
        ],
    },
    Preset {
        name: "dbserver-2004",
        help: "dbserver-2005's hardware (2 Hyper-Threading processors, 4 GiB, the same CPU costs) running RHEL 3 (2.4.21-27.EL): the RHEL 3 baseline of Red Hat's 2005 scheduler comparison, whose kernel the article does not name; June 2005 makes U4 (27.EL) or U5 (32.EL) most likely, and both run the same elevator and host (linux-2.4-elevator.md §0.2)",
        values: &[
            ("ram", "4g"),
            ("cpus", "4"),
            ("copy_rate", "1500m"),
            ("kernel", "2.4.21-27.EL"),
            ("page_cost", "3us"),
            ("bio_cost", "2us"),
            ("request_cost", "12us"),
            ("interrupt_cost", "6us"),
        ],
    },
];

/// One line for `elevator list`.
pub const SUMMARY: &str =
    "host: page cache, read-ahead, write-back with the kernel's dirty thresholds, CPU costs";

/// The filesystem a host's files live on (host-mechanisms.md §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filesystem {
    /// ext3 with `data=ordered`, 4 KiB blocks.
    Ext3,
    /// XFS.
    Xfs,
}

/// A host as written, checked: `host[:key=value,...]` or a preset.
#[derive(Clone, Debug, PartialEq)]
pub struct HostSpec {
    preset: &'static Preset,
    pub(crate) params: Params,
}

impl HostSpec {
    /// Parses `host[:key=value,...]` or a preset name.
    pub fn parse(text: &str) -> Result<HostSpec, ParamError> {
        let spec = ComponentSpec::parse("host", text)?;
        let Some(preset) = PRESETS.iter().find(|preset| preset.name == spec.name) else {
            return Err(ParamError::UnknownName {
                kind: "host",
                name: spec.name,
                accepted: PRESETS.iter().map(|preset| preset.name).collect(),
            });
        };
        let params = Params::resolve(&spec, KEYS, preset.values)?;
        if params.size("reserve") >= params.size("ram") {
            return Err(params.impossible("reserve", "must be less than ram"));
        }
        if params.text("fs") == "xfs"
            && KernelVersion::parse(params.text("kernel"))
                .is_some_and(|kernel| !kernel.builds_xfs())
        {
            return Err(params.impossible(
                "fs",
                "RHEL 5.0 (2.6.18-8.el5) and 5.2 (2.6.18-92.el5) did not build XFS; Red Hat shipped it from RHEL 5.4 (use kernel=2.6.18 or 2.6.18-194.11.4.el5)",
            ));
        }
        if params.integer("dirty_background_ratio") > params.integer("dirty_ratio") {
            return Err(params.impossible(
                "dirty_background_ratio",
                "must not exceed dirty_ratio (the flusher starts before writers are throttled)",
            ));
        }
        Ok(HostSpec { preset, params })
    }

    /// The kernel release the host runs.
    pub fn kernel(&self) -> KernelVersion {
        KernelVersion::parse(self.params.text("kernel"))
            .expect("the key accepts release names only")
    }

    /// The tick rate of a blk-mq host's kernel (the `mq_hz` key).
    pub fn tick_rate(&self) -> elevator_core::TickRate {
        self.params
            .text("mq_hz")
            .parse()
            .ok()
            .and_then(elevator_core::TickRate::new)
            .expect("the key accepts CONFIG_HZ choices only")
    }

    /// The filesystem of the workload's files.
    pub fn filesystem(&self) -> Filesystem {
        match self.params.text("fs") {
            "xfs" => Filesystem::Xfs,
            _ => Filesystem::Ext3,
        }
    }

    /// The default host.
    pub fn default_host() -> HostSpec {
        HostSpec::parse("host").expect("the default host is valid")
    }

    /// Every key with its value in force.
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        self.params.resolved()
    }

    /// The same host with its memory (`ram` and `reserve`) multiplied by `factor`, whole
    /// mebibytes, at least the smallest `ram` accepted: a study shrunk by `factor` keeps the
    /// ratio of its files to the page cache, so what was cached stays cached and what
    /// overflowed still overflows. The virtual-memory timings are the kernel's and stay.
    pub fn scaled(&self, factor: f64) -> Result<HostSpec, ParamError> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(self
                .params
                .impossible("scale", format!("{factor} is not a positive factor")));
        }
        const MIB: u64 = 1 << 20;
        let scale = |bytes: u64| (bytes as f64 * factor / MIB as f64).round() as u64 * MIB;
        let ram = scale(self.params.size("ram")).max(64 * MIB);
        let reserve = scale(self.params.size("reserve")).min(ram / 2);
        let mut text =
            format!("{}:ram={}m,reserve={}m", self.preset.name, ram / MIB, reserve / MIB);
        for (key, value) in self.params.resolved() {
            if self.params.is_set(key) && key != "ram" && key != "reserve" {
                text.push_str(&format!(",{key}={value}"));
            }
        }
        HostSpec::parse(&text)
    }
}

impl fmt::Display for HostSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.preset.name)?;
        let mut separator = ':';
        for (key, value) in self.params.resolved() {
            if self.params.is_set(key) {
                write!(f, "{separator}{key}={value}")?;
                separator = ',';
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_keys() {
        let host = HostSpec::parse("fileserver-2007:dirty_ratio=20").unwrap();
        assert_eq!(host.params.size("ram"), 12 << 30);
        assert_eq!(host.params.integer("dirty_ratio"), 20);
        assert_eq!(host.to_string(), "fileserver-2007:dirty_ratio=20");
        let error = HostSpec::parse("host:dirty_background_ratio=50,dirty_ratio=20").unwrap_err();
        assert!(error.to_string().contains("dirty_background_ratio"), "{error}");
        assert!(HostSpec::parse("host:ram=1g,reserve=2g").is_err());
        assert_eq!(HostSpec::parse("fileserver-2007").unwrap().filesystem(), Filesystem::Xfs);
        assert_eq!(HostSpec::parse("dbserver-2005").unwrap().kernel(), KernelVersion::Rhel4);
        // The RHEL 3 preset is dbserver-2005's hardware with the 2.4 kernel.
        let rhel3 = HostSpec::parse("dbserver-2004").unwrap();
        let rhel4 = HostSpec::parse("dbserver-2005").unwrap();
        assert_eq!(rhel3.kernel(), KernelVersion::Rhel3);
        for (key, value) in rhel4.params.resolved() {
            if key != "kernel" {
                assert_eq!(
                    rhel3.params.resolved().iter().find(|(k, _)| *k == key).map(|(_, v)| v),
                    Some(&value),
                    "{key}"
                );
            }
        }
        let error = HostSpec::parse("host:kernel=rhel5.0,fs=xfs").unwrap_err();
        assert!(error.to_string().contains("did not build XFS"), "{error}");
        assert!(HostSpec::parse("host:kernel=2.6.10").unwrap_err().to_string().contains("2.6.18"));
        assert!(HostSpec::parse("mainframe").unwrap_err().to_string().contains("fileserver-2007"));
    }
}
