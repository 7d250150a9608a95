//! Which Linux kernel a simulated host runs: the release decides every version-dependent
//! value and behaviour of the block layer and the host above it (specs/host-mechanisms.md
//! §7, §7.1, §7.2).
//!
//! `kernel=2.6.9` or `kernel=2.6.18` alone does not fix what the classic study's machines
//! did: Red Hat's builds of those kernels differ from vanilla in what matters to a scheduler
//! (RHEL 4's congestion threshold and ext3 reservation windows; RHEL 5.5's cfq treating
//! O_DIRECT writes as sync). So a host names a *release*; the two vanilla versions are
//! releases too. Each question the host or the queue asks is a method here, answered from
//! the spec's tables, so that a newcomer finds every version difference in one place — except
//! which version of a scheduler a release runs: the scheduler registry answers that
//! (`SchedulerKind::for_kernel` in `elevator-sched`, e.g. `cfq` on 2.6.18-194.8.1.el5 is
//! `cfq@2.6.18-194.8.1.el5`).

use std::fmt;

/// The mainline version a release is built on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelBase {
    /// Linux 2.4.21 (RHEL 3): one elevator (`elevator_linus`), buffer heads, `tq_disk`
    /// (linux-2.4-elevator.md).
    V2_4_21,
    /// Linux 2.6.9 (RHEL 4).
    V2_6_9,
    /// Linux 2.6.18 (RHEL 5).
    V2_6_18,
}

/// A kernel release a host runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelVersion {
    /// Vanilla 2.4.21 (linux-2.4-elevator.md §0.2 `vanilla-2.4.21`).
    Linux2_4_21,
    /// RHEL 3 U4, 2.4.21-27.EL: the `rhel3` profile of linux-2.4-elevator.md §0.2 (15.EL to
    /// 63.EL); the study's RHEL 3 baseline most likely ran U4 or U5, both this profile.
    Rhel3,
    /// Vanilla 2.6.9 (anticipatory by default, congestion off at 111, no ext3 reservation
    /// windows).
    Linux2_6_9,
    /// RHEL 4 GA/U1, 2.6.9-5.EL / 2.6.9-11.EL: what a June 2005 RHEL 4 machine ran (§7).
    Rhel4,
    /// Vanilla 2.6.18.
    Linux2_6_18,
    /// RHEL 5.0, 2.6.18-8.el5: its schedulers and block layer equal vanilla 2.6.18's.
    Rhel5_0,
    /// RHEL 5.2, 2.6.18-92.el5: cfq's first change (legacy-vs-kernel.md C92: the queue is
    /// kicked only when the driver is empty); otherwise as 8.el5, and no XFS yet.
    Rhel5_2,
    /// RHEL 5.5 GA, 2.6.18-194.el5: deadline's 2.6.24 batch start and cfq's back-ports
    /// (cooperating queues, per-queue seek statistics, per-process async queues; C194).
    Rhel5_5Ga,
    /// RHEL 5.5 errata 2.6.18-194.8.1.el5: cfq files O_DIRECT writes as sync and shares one
    /// async queue per priority (C194.8).
    Rhel5_5Errata8,
    /// RHEL 5.5, 2.6.18-194.11.4.el5 (the iozone file server's): schedulers as 194.8.1.el5,
    /// XFS is the 5.4 backport.
    Rhel5_5,
}

/// Every release, in the order `elevator list` shows them.
pub const KERNEL_VERSIONS: [KernelVersion; 10] = [
    KernelVersion::Linux2_4_21,
    KernelVersion::Rhel3,
    KernelVersion::Linux2_6_9,
    KernelVersion::Rhel4,
    KernelVersion::Linux2_6_18,
    KernelVersion::Rhel5_0,
    KernelVersion::Rhel5_2,
    KernelVersion::Rhel5_5Ga,
    KernelVersion::Rhel5_5Errata8,
    KernelVersion::Rhel5_5,
];

/// The names `host:kernel=` accepts, canonical names first, then aliases.
pub const KERNEL_NAMES: &[&str] = &[
    "2.4.21",
    "2.4.21-27.EL",
    "2.6.9",
    "2.6.9-5.EL",
    "2.6.18",
    "2.6.18-8.el5",
    "2.6.18-92.el5",
    "2.6.18-194.el5",
    "2.6.18-194.8.1.el5",
    "2.6.18-194.11.4.el5",
    "rhel3",
    "rhel4",
    "rhel5.0",
    "rhel5.2",
    "rhel5.5",
];

/// How an insertion unplugs a plugged queue once enough requests wait (§2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnplugTest {
    /// Vanilla 2.6.9 and RHEL 4 up to U4: only an insertion that makes the count *exactly*
    /// the threshold unplugs; one that finds more leaves it to the timer or a waiting task.
    Exactly,
    /// RHEL 4 from U5, 2.6.18 and RHEL 5: at or above the threshold.
    AtLeast,
}

/// How a sequential buffered reader's read-ahead is decided (§1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadAheadAlgorithm {
    /// 2.6.9 and RHEL 4 up to U2: called once per page, current and ahead windows.
    PerPage,
    /// 2.6.18 (Pratt and Pai's rewrite): called once per `read()`.
    PerCall,
    /// 2.4.21's `generic_file_readahead` (linux-2.4-elevator.md §6.3): `ramax` doubling up to
    /// vm.max-readahead (31 pages), page by page.
    Generic2_4,
}

impl KernelVersion {
    /// The release a name denotes (canonical name or alias), if any.
    pub fn parse(name: &str) -> Option<KernelVersion> {
        Some(match name {
            "2.4.21" => KernelVersion::Linux2_4_21,
            "2.4.21-27.EL" | "rhel3" => KernelVersion::Rhel3,
            "2.6.9" => KernelVersion::Linux2_6_9,
            "2.6.9-5.EL" | "2.6.9-11.EL" | "rhel4" => KernelVersion::Rhel4,
            "2.6.18" => KernelVersion::Linux2_6_18,
            "2.6.18-8.el5" | "rhel5.0" => KernelVersion::Rhel5_0,
            "2.6.18-92.el5" | "rhel5.2" => KernelVersion::Rhel5_2,
            "2.6.18-194.el5" => KernelVersion::Rhel5_5Ga,
            "2.6.18-194.8.1.el5" => KernelVersion::Rhel5_5Errata8,
            "2.6.18-194.11.4.el5" | "rhel5.5" => KernelVersion::Rhel5_5,
            _ => return None,
        })
    }

    /// The canonical name (`uname -r` of the release).
    pub const fn name(self) -> &'static str {
        match self {
            KernelVersion::Linux2_4_21 => "2.4.21",
            KernelVersion::Rhel3 => "2.4.21-27.EL",
            KernelVersion::Linux2_6_9 => "2.6.9",
            KernelVersion::Rhel4 => "2.6.9-5.EL",
            KernelVersion::Linux2_6_18 => "2.6.18",
            KernelVersion::Rhel5_0 => "2.6.18-8.el5",
            KernelVersion::Rhel5_2 => "2.6.18-92.el5",
            KernelVersion::Rhel5_5Ga => "2.6.18-194.el5",
            KernelVersion::Rhel5_5Errata8 => "2.6.18-194.8.1.el5",
            KernelVersion::Rhel5_5 => "2.6.18-194.11.4.el5",
        }
    }

    /// One line for `elevator list`.
    pub const fn help(self) -> &'static str {
        match self {
            KernelVersion::Linux2_4_21 => {
                "vanilla 2.4.21: one elevator (elevator_linus), buffer heads, tq_disk plugging"
            }
            KernelVersion::Rhel3 => {
                "RHEL 3 U4 (2.4.21-27.EL): elevator_linus with read-latency2 and a one-hit merge cache, 512 + 512 requests on 4 GB"
            }
            KernelVersion::Linux2_6_9 => {
                "vanilla 2.6.9: anticipatory default, congestion off at 111, no ext3 reservation windows"
            }
            KernelVersion::Rhel4 => {
                "RHEL 4 GA/U1 (2.6.9-5.EL, 11.EL): cfq default, congestion off at 103, ext3 reservation windows"
            }
            KernelVersion::Linux2_6_18 => "vanilla 2.6.18",
            KernelVersion::Rhel5_0 => {
                "RHEL 5.0 (2.6.18-8.el5): block layer and schedulers as vanilla 2.6.18"
            }
            KernelVersion::Rhel5_2 => {
                "RHEL 5.2 (2.6.18-92.el5): as 5.0 but cfq kicks the queue only when the driver is empty"
            }
            KernelVersion::Rhel5_5Ga => {
                "RHEL 5.5 GA (2.6.18-194.el5): deadline 2.6.24 batches, cfq cooperating queues, XFS the 5.4 backport"
            }
            KernelVersion::Rhel5_5Errata8 => {
                "RHEL 5.5 errata (2.6.18-194.8.1.el5): as 194.el5, cfq O_DIRECT writes sync, async queues per priority"
            }
            KernelVersion::Rhel5_5 => {
                "RHEL 5.5 (2.6.18-194.11.4.el5): schedulers as 194.8.1.el5, XFS the 5.4 backport"
            }
        }
    }

    /// The mainline version it is built on.
    pub const fn base(self) -> KernelBase {
        match self {
            KernelVersion::Linux2_4_21 | KernelVersion::Rhel3 => KernelBase::V2_4_21,
            KernelVersion::Linux2_6_9 | KernelVersion::Rhel4 => KernelBase::V2_6_9,
            KernelVersion::Linux2_6_18
            | KernelVersion::Rhel5_0
            | KernelVersion::Rhel5_2
            | KernelVersion::Rhel5_5Ga
            | KernelVersion::Rhel5_5Errata8
            | KernelVersion::Rhel5_5 => KernelBase::V2_6_18,
        }
    }

    /// Whether it is Red Hat's build rather than vanilla.
    pub const fn is_rhel(self) -> bool {
        !matches!(
            self,
            KernelVersion::Linux2_4_21 | KernelVersion::Linux2_6_9 | KernelVersion::Linux2_6_18
        )
    }

    /// Whether the release builds XFS: vanilla does; RHEL 5 only from 164.el5 (5.4) on, so
    /// 8.el5 and 92.el5 do not (host-mechanisms.md §4.2). RHEL 4 is not asked (ext3 only).
    pub const fn builds_xfs(self) -> bool {
        !matches!(self, KernelVersion::Rhel5_0 | KernelVersion::Rhel5_2)
    }

    /// The scheduler a queue starts with (§0: anticipatory in vanilla 2.6.9, cfq elsewhere;
    /// 2.4 has one elevator and no choice, linux-2.4-elevator.md §3.7).
    pub const fn default_scheduler(self) -> &'static str {
        match self {
            KernelVersion::Linux2_4_21 | KernelVersion::Rhel3 => "elevator_linus",
            KernelVersion::Linux2_6_9 => "anticipatory",
            _ => "cfq",
        }
    }

    /// How an insertion tests the unplug threshold (§2.1).
    pub const fn unplug_test(self) -> UnplugTest {
        match self.base() {
            KernelBase::V2_6_9 => UnplugTest::Exactly,
            // 2.4 has no request-count threshold at all (linux-2.4-elevator.md §4.2); the
            // block layer's 2.4 plugging does not ask.
            KernelBase::V2_6_18 | KernelBase::V2_4_21 => UnplugTest::AtLeast,
        }
    }

    /// The request count below which a congested pool class clears, for `nr_requests` `n`
    /// (§2.4): `n − n/8 − 1` in vanilla 2.6.9 (111 for 128), `n − n/8 − n/16 − 1` in every
    /// RHEL 4 kernel and in 2.6.18 (103).
    pub const fn congestion_off(self, nr_requests: u32) -> u32 {
        let n = nr_requests;
        let off = match self {
            KernelVersion::Linux2_6_9 => n - n / 8 - 1,
            _ => n - n / 8 - n / 16 - 1,
        };
        if off < 1 { 1 } else { off }
    }

    /// Whether an O_DIRECT write is a `WRITE_SYNC` bio (2.6.18: sync for anticipatory, and
    /// it unplugs the queue at once) rather than a plain `WRITE` (2.6.9) (§1.4, §1.6).
    pub const fn direct_writes_sync(self) -> bool {
        matches!(self.base(), KernelBase::V2_6_18)
    }

    /// Whether writes inside `fsync`/`fdatasync`/`O_SYNC` are sync for anticipatory
    /// (2.6.9's `PF_SYNCWRITE`); 2.6.18 sends them async (§1.6).
    pub const fn fsync_writes_sync(self) -> bool {
        matches!(self.base(), KernelBase::V2_6_9)
    }

    /// Whether the legacy block layer merges a sync bio into an async request (and fuses
    /// such requests) as long as the data direction matches: `elv_rq_merge_ok` and
    /// `attempt_merge` of 2.6.18 and of every RHEL 5 build up to 274.el5 test only the
    /// direction (legacy-vs-kernel.md row 5). 2.6.9 and RHEL 4 are taken to have the same
    /// direction-only test, which 2.6.18 carries unchanged (not re-read from a 2.6.9 tree:
    /// the spec cites none). A later release that refuses such merges would answer `false`.
    pub const fn merges_ignore_sync(self) -> bool {
        true
    }

    /// Read-ahead's algorithm (§1.1; RHEL 4 from U3 runs it at `next_index`, not modelled:
    /// the RHEL 4 release here is GA/U1).
    pub const fn read_ahead(self) -> ReadAheadAlgorithm {
        match self.base() {
            KernelBase::V2_4_21 => ReadAheadAlgorithm::Generic2_4,
            KernelBase::V2_6_9 => ReadAheadAlgorithm::PerPage,
            KernelBase::V2_6_18 => ReadAheadAlgorithm::PerCall,
        }
    }

    /// The largest request a driver's `max_sectors` (in sectors) allows (§2.3): 2.6.9 takes
    /// the driver's value; 2.6.18 caps it at `BLK_DEF_MAX_SECTORS` (1024 sectors, 512 KiB).
    pub const fn max_sectors(self, driver_sectors: u32) -> u32 {
        match self.base() {
            KernelBase::V2_4_21 | KernelBase::V2_6_9 => driver_sectors,
            KernelBase::V2_6_18 => {
                if driver_sectors < 1024 {
                    driver_sectors
                } else {
                    1024
                }
            }
        }
    }

    /// cfq's `nr_requests` once attached: 8192 on vanilla 2.6.9 and RHEL 4 up to U5 (no limit
    /// below 8191 per direction), the queue's own elsewhere (§2.4).
    pub const fn cfq_nr_requests(self) -> Option<u32> {
        match self.base() {
            KernelBase::V2_6_9 => Some(8192),
            KernelBase::V2_6_18 | KernelBase::V2_4_21 => None,
        }
    }

    /// The most blocks an ext3 reservation window grows to: none in vanilla 2.6.9, 1024 in
    /// RHEL 4, 1027 in 2.6.18 (§4.1).
    pub const fn ext3_reservation_max_blocks(self) -> Option<u32> {
        match self {
            // 2.4's ext3 has no reservation windows (they came in 2.6.10).
            KernelVersion::Linux2_4_21 | KernelVersion::Rhel3 | KernelVersion::Linux2_6_9 => None,
            KernelVersion::Rhel4 => Some(1024),
            _ => Some(1027),
        }
    }

    /// Buffers kjournald submits per batch of ordered data (`j_wbufsize`): 64 in 2.4.21
    /// (linux-2.4-elevator.md §6.4), 2.6.9 and RHEL 4, 512 in 2.6.18 (§4.1).
    pub const fn journal_batch_blocks(self) -> u32 {
        match self.base() {
            KernelBase::V2_4_21 | KernelBase::V2_6_9 => 64,
            KernelBase::V2_6_18 => 512,
        }
    }
}

/// 2.4's unit of submission: one 4 KiB filesystem block, a buffer head (linux-2.4-elevator.md
/// §1), in sectors.
pub const BH_SECTORS_2_4: u32 = 8;

impl KernelVersion {
    /// A 2.4 queue's requests per direction for a host with `usable_ram_mib` of memory
    /// (linux-2.4-elevator.md §5, `blk_init_queue` sizing the pool once): RHEL 3 takes twice
    /// the memory in MiB, rounded down to a multiple of 16, within 32 ..= 1024, dealt
    /// alternately to reads and writes (512 + 512 on 4 GB, 256 + 256 on 256 MiB, 16 + 16 on
    /// 20 MiB); vanilla 2.4.21 has 128 (64 below 32 MiB), so 64 + 64. `None` on 2.6, whose
    /// `nr_requests` is the queue's tunable.
    pub const fn requests_2_4(self, usable_ram_mib: u64) -> Option<u32> {
        match self {
            KernelVersion::Rhel3 => {
                let doubled = 2 * usable_ram_mib;
                let rounded = doubled - doubled % 16;
                let total = if rounded < 32 {
                    32
                } else if rounded > 1024 {
                    1024
                } else {
                    rounded as u32
                };
                // An even total (a multiple of 16) dealt alternately: half each.
                Some(total / 2)
            }
            KernelVersion::Linux2_4_21 => Some(if usable_ram_mib < 32 { 32 } else { 64 }),
            _ => None,
        }
    }

    /// Whether a 2.4 task sleeping for a free request retries after 1 s: RHEL 3 does,
    /// vanilla 2.4.21 sleeps until woken (linux-2.4-elevator.md §5).
    pub const fn timed_pool_wait(self) -> bool {
        matches!(self, KernelVersion::Rhel3)
    }

    /// The largest super buffer head of 2.4 direct I/O, in sectors (linux-2.4-elevator.md
    /// §6.6): RHEL 3 groups contiguous bhs into one that goes to the tail of the queue
    /// unmerged, ≤ 32 KiB before 32.EL — the RHEL 3 release here is 27.EL — (≤ 64 KiB from
    /// 32.EL on). `None`: no super bhs (vanilla 2.4.21 submits the 4 KiB bhs one by one; 2.6
    /// has bios).
    pub const fn direct_io_group_sectors(self) -> Option<u32> {
        match self {
            KernelVersion::Rhel3 => Some(64),
            _ => None,
        }
    }
}

impl fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves every name `host:kernel=` accepts parses, and each release's canonical name
    // parses back to it.
    #[test]
    fn names_round_trip() {
        for name in KERNEL_NAMES {
            assert!(KernelVersion::parse(name).is_some(), "{name}");
        }
        for version in KERNEL_VERSIONS {
            assert_eq!(KernelVersion::parse(version.name()), Some(version));
        }
        assert_eq!(KernelVersion::parse("2.6.10"), None);
    }

    // Proves the version tables give the spec's values: congestion off 111 (vanilla 2.6.9)
    // and 103 (RHEL 4, 2.6.18) for 128 requests, the 2.6.18 cap on max_sectors, the unplug
    // test and the sync rules.
    #[test]
    fn values_per_release() {
        assert_eq!(KernelVersion::Linux2_6_9.congestion_off(128), 111);
        assert_eq!(KernelVersion::Rhel4.congestion_off(128), 103);
        assert_eq!(KernelVersion::Linux2_6_18.congestion_off(128), 103);
        assert_eq!(KernelVersion::Linux2_6_9.max_sectors(2048), 2048);
        assert_eq!(KernelVersion::Rhel5_0.max_sectors(2048), 1024);
        assert_eq!(KernelVersion::Rhel5_0.max_sectors(128), 128);
        assert_eq!(KernelVersion::Rhel4.unplug_test(), UnplugTest::Exactly);
        assert_eq!(KernelVersion::Rhel5_5.unplug_test(), UnplugTest::AtLeast);
        assert!(KernelVersion::Linux2_6_18.direct_writes_sync());
        assert!(!KernelVersion::Rhel4.direct_writes_sync());
        assert!(KernelVersion::Rhel4.fsync_writes_sync());
        assert!(KernelVersion::Rhel5_5Ga.builds_xfs());
        assert!(!KernelVersion::Rhel5_2.builds_xfs());
        assert!(KernelVersion::Rhel5_2.is_rhel() && !KernelVersion::Linux2_6_18.is_rhel());
        assert_eq!(KernelVersion::Linux2_6_9.default_scheduler(), "anticipatory");
        assert_eq!(KernelVersion::Rhel4.default_scheduler(), "cfq");
    }

    // Proves §7.11's pool sizes per direction: RHEL 3 gives 512 on 4000 MiB (clamped at 1024
    // in all), 256 on 256 MiB, 16 on 20 MiB (raised to 32 in all), rounding 2 × MiB down to a
    // multiple of 16 in between (100 and 103 MiB: 192 → 96; 104 MiB: 208 → 104); vanilla 2.4.21 64 (32 below 32 MiB);
    // 2.6 none. And which 2.4 release times its pool waits and groups direct I/O.
    #[test]
    fn pool_sizes_of_2_4() {
        let rhel3 = KernelVersion::Rhel3;
        assert_eq!(rhel3.requests_2_4(4000), Some(512));
        assert_eq!(rhel3.requests_2_4(256), Some(256));
        assert_eq!(rhel3.requests_2_4(20), Some(16));
        assert_eq!(rhel3.requests_2_4(100), Some(96));
        assert_eq!(rhel3.requests_2_4(103), Some(96));
        assert_eq!(rhel3.requests_2_4(104), Some(104));
        assert_eq!(KernelVersion::Linux2_4_21.requests_2_4(4000), Some(64));
        assert_eq!(KernelVersion::Linux2_4_21.requests_2_4(20), Some(32));
        assert_eq!(KernelVersion::Rhel4.requests_2_4(4000), None);
        assert!(rhel3.timed_pool_wait() && !KernelVersion::Linux2_4_21.timed_pool_wait());
        assert_eq!(rhel3.direct_io_group_sectors(), Some(64));
        assert_eq!(KernelVersion::Linux2_4_21.direct_io_group_sectors(), None);
    }
}
