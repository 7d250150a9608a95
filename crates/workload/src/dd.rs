//! `dd`: GNU dd copying `count` blocks of `bs` bytes, one `read(2)` and one `write(2)` at a
//! time, timed from its start to its end (`dd if=SRC of=DST bs=2M count=300`).
//!
//! Three cases from the classic study, chosen by `mode`:
//!
//! * `read`: `dd if=/dev/sdX of=/dev/null` — reads of the raw device (through the block
//!   device's page cache, so read-ahead applies, unless `direct`); the writes to /dev/null cost
//!   no I/O and are left out.
//! * `write`: `dd if=/dev/zero of=/tmp/dd.out` — buffered writes of zeros to a new file on the
//!   device's filesystem; reads of /dev/zero cost no I/O and are left out. Without `fdatasync`
//!   dd ends when the last write is in the page cache.
//! * `copy`: `dd if=/dev/sdX of=/tmp/dd.out` — the raw device into a new file on the same
//!   device, alternating a read of one block and its write, so that reads and write-back
//!   compete for the disk.
//!
//! What reaches the disk, as GNU dd does it (`/work/shared/specs/workload-mechanisms.md` §5.2):
//!
//! * With `bs=` set, dd reads and writes in calls of exactly `bs` bytes (`2M` = 2,097,152):
//!   `count` reads alternating with `count` writes, one process, nothing else.
//! * Reads of the raw partition are buffered through the block device's page cache: the disk
//!   sees dd's synchronous read-ahead stream, not `bs`-sized requests.
//! * Writes are buffered: `write()` returns once the data is in the page cache. dd issues no
//!   fsync (the study's command line has no `conv=`) and its `close()` flushes nothing, so dd
//!   exits — and its time ends — with the data still dirty unless it crossed the dirty limits,
//!   where dd itself writes back while throttled; the rest is left to pdflush and kjournald,
//!   which is the host model's. `conv=fdatasync` (key `fdatasync`) adds one fsync, timed.
//! * A copy alternates a synchronous read with a buffered write, so dd's reads compete with
//!   the write-back of what it wrote.
//!
//! Sources: GNU coreutils dd documentation and dd(1) (`/work/shared/specs/ecosystem.md` §2.3),
//! the spec's §5.2 (CU).
//!
//! # Plan
//!
//! * `write` and `copy`: one file `/tmp/dd.out` on `device`, created by the writes.
//! * One phase named after the mode, with one issuer `dd` (process id 1). Input block `i`
//!   (from 0) is read at byte `(skip + i) × bs` of the device; output block `i` is written at
//!   byte `i × bs` of the file. With `fdatasync=1`, one `fsync` of the file after the last
//!   write.
//!
//! # Keys
//!
//! | key | default | dd | meaning |
//! |---|---|---|---|
//! | `mode` | read | `if=`, `of=` | read: device to /dev/null; write: zeros to a file; copy |
//! | `bs` | 512 | `bs=` | bytes per read and write |
//! | `count` | 1 | `count=` | input blocks to copy, 1..=2^32 |
//! | `skip` | 0 | `skip=` | input blocks to skip at the start of the device |
//! | `direct` | 0 | `iflag=`, `oflag=direct` | O_DIRECT both sides; `bs` a multiple of 512 |
//! | `fdatasync` | 0 | `conv=fdatasync` | one fsync of the output at the end, inside the timing |
//! | `device` | 0 | the partition | index of the device read from and holding /tmp |
//!
//! # Differences from the real tool
//!
//! * `conv=fdatasync` arrived in coreutils 5.3.0; RHEL 4's 5.2.1 lacks it (§5.2), but the key is
//!   accepted whatever the host's kernel.
//! * `time`'s user and sys are the host model's CPU time of the dd process.
//! * Reading past the end of the device is a plan error, where dd would stop at the short read
//!   and report fewer records.
//! * `/tmp` lives on the same device as the partition read (the study's single-disk server);
//!   the file's placement on it is the host model's.
//! * `fdatasync` is the host's fsync of the file (data and metadata); dd's fdatasync skips the
//!   metadata.
//! * `skip` with `mode=write` is an error rather than a no-op read of /dev/zero, and
//!   `fdatasync` with `mode=read` is an error rather than a sync of /dev/null.

use elevator_core::{Instant, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId};

use crate::process::{Syscalls, check_files_fit, check_sectors};
use crate::{FileSpec, IoId, IoKind, Issuer, PhasePlan, Place, Poll, Target, WorkloadPlan};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str =
    "dd: read a raw device, write zeros to a file, or copy the device into a file, bs by bs";

/// The keys of `dd`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "mode",
        kind: KeyKind::Choice(&["read", "write", "copy"]),
        default: "read",
        help: "read: device to /dev/null; write: zeros to a file; copy: device to a file",
    },
    KeySpec {
        key: "bs",
        kind: KeyKind::Size { min_bytes: 1, max_bytes: 1 << 30 },
        default: "512",
        help: "bytes per read and write (dd's bs=)",
    },
    KeySpec {
        key: "count",
        kind: KeyKind::Integer { min: 1, max: 1 << 32 },
        default: "1",
        help: "input blocks to copy",
    },
    KeySpec {
        key: "skip",
        kind: KeyKind::Integer { min: 0, max: 1 << 32 },
        default: "0",
        help: "input blocks to skip at the start of the device",
    },
    KeySpec {
        key: "direct",
        kind: KeyKind::Flag,
        default: "0",
        help: "O_DIRECT on the device and the file (iflag=direct, oflag=direct)",
    },
    KeySpec {
        key: "fdatasync",
        kind: KeyKind::Flag,
        default: "0",
        help: "one fsync of the output at the end, inside the timing (conv=fdatasync)",
    },
    KeySpec {
        key: "device",
        kind: KeyKind::Integer { min: 0, max: 255 },
        default: "0",
        help: "index of the device read from and holding /tmp",
    },
];

/// What dd copies from and to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Read,
    Write,
    Copy,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
            Mode::Copy => "copy",
        }
    }

    fn reads(self) -> bool {
        self != Mode::Write
    }

    fn writes(self) -> bool {
        self != Mode::Read
    }
}

/// The checked configuration of a `dd` run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DdConfig {
    mode: Mode,
    block_bytes: u64,
    count: u64,
    skip: u64,
    direct: bool,
    fdatasync: bool,
    device: usize,
}

impl DdConfig {
    pub(crate) fn from_params(params: &Params) -> Result<DdConfig, ParamError> {
        let mode = match params.text("mode") {
            "read" => Mode::Read,
            "write" => Mode::Write,
            _ => Mode::Copy,
        };
        let block_bytes = params.size("bs");
        let direct = params.flag("direct");
        if direct {
            check_sectors(params, "bs", block_bytes)?;
        }
        let skip = params.integer("skip") as u64;
        if mode == Mode::Write && skip > 0 {
            return Err(params.impossible("skip", "mode=write reads /dev/zero, which has no skip"));
        }
        let fdatasync = params.flag("fdatasync");
        if mode == Mode::Read && fdatasync {
            return Err(params.impossible("fdatasync", "mode=read writes to /dev/null"));
        }
        Ok(DdConfig {
            mode,
            block_bytes,
            count: params.integer("count") as u64,
            skip,
            direct,
            fdatasync,
            device: params.integer("device") as usize,
        })
    }

    pub(crate) fn plan(
        &self,
        params: &Params,
        targets: &[Target],
        _prng: &Prng,
    ) -> Result<WorkloadPlan, ParamError> {
        let Some(target) = targets.get(self.device) else {
            return Err(params.impossible(
                "device",
                format!(
                    "no device {} (the plan has {})",
                    self.device,
                    crate::process::describe_targets(targets)
                ),
            ));
        };
        // The inputs are at most 2^33 blocks of at most 1 GiB, so these products fit in u64.
        let copied_bytes = self.count * self.block_bytes;
        if self.mode.reads() {
            let end_bytes = (self.skip + self.count) * self.block_bytes;
            if end_bytes > target.capacity_bytes {
                return Err(params.impossible(
                    "count",
                    format!(
                        "skip + count blocks end at byte {end_bytes}, \
                         past the end of {} ({} bytes)",
                        target.name, target.capacity_bytes
                    ),
                ));
            }
        }
        let files = if self.mode.writes() {
            check_files_fit(params, "count", &[(self.device, copied_bytes)], targets)?;
            vec![FileSpec { name: "/tmp/dd.out".to_owned(), device: self.device, size_bytes: 0 }]
        } else {
            Vec::new()
        };
        let issuer = DdIssuer {
            config: self.clone(),
            blocks_read: 0,
            blocks_written: 0,
            synced: false,
            calls: Syscalls::default(),
        };
        Ok(WorkloadPlan {
            files,
            phases: vec![PhasePlan {
                name: self.mode.name().to_owned(),
                issuers: vec![Box::new(issuer)],
                stonewall: false,
            }],
        })
    }
}

/// The dd process.
#[derive(Debug)]
struct DdIssuer {
    config: DdConfig,
    blocks_read: u64,
    blocks_written: u64,
    synced: bool,
    calls: Syscalls,
}

/// The output file's index in the plan.
const OUTPUT_FILE: usize = 0;

impl Issuer for DdIssuer {
    fn name(&self) -> &str {
        "dd"
    }

    fn process(&self) -> ProcessId {
        ProcessId(1)
    }

    fn poll(&mut self, _now: Instant) -> Poll {
        if self.calls.busy() {
            return Poll::Wait;
        }
        let config = &self.config;
        let block = config.block_bytes;
        // A block is written once it has been read (copy), or straight away (write); reads run
        // ahead of writes by at most the one block dd holds in its buffer.
        let read_next = config.mode.reads()
            && self.blocks_read < config.count
            && (!config.mode.writes() || self.blocks_read == self.blocks_written);
        if read_next {
            let offset = (config.skip + self.blocks_read) * block;
            self.blocks_read += 1;
            let place = Place::Device(config.device);
            return self.calls.call(IoKind::Read, place, offset, block, config.direct);
        }
        let readable = if config.mode.reads() { self.blocks_read } else { config.count };
        if config.mode.writes() && self.blocks_written < readable {
            let offset = self.blocks_written * block;
            self.blocks_written += 1;
            let place = Place::File(OUTPUT_FILE);
            return self.calls.call(IoKind::Write, place, offset, block, config.direct);
        }
        if config.fdatasync && !self.synced {
            self.synced = true;
            return self.calls.call(IoKind::Sync, Place::File(OUTPUT_FILE), 0, 0, config.direct);
        }
        Poll::Done
    }

    fn complete(&mut self, _now: Instant, io: IoId) {
        self.calls.returned(io);
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::Duration;

    use super::*;
    use crate::WorkloadSpec;
    use crate::testing::{Record, devices, parse_error, plan, plan_error, run};

    fn targets() -> Vec<Target> {
        devices(&[("sda", 1 << 30), ("sdb", 64 << 20)])
    }

    fn records(text: &str) -> Vec<Record> {
        run(plan(text, &targets()), |_| Duration::from_micros(100)).records
    }

    // Proves mode=read reads count blocks of bs from the raw device after skip blocks, buffered
    // unless direct, one at a time, with no file, in a phase named read.
    #[test]
    fn read_counts_and_skips_on_the_raw_device() {
        let plan = plan("dd:mode=read,bs=2m,count=3,skip=2,device=1", &targets());
        assert!(plan.files.is_empty());
        assert_eq!(plan.phases[0].name, "read");
        assert_eq!(plan.phases[0].issuers[0].name(), "dd");
        let log = run(plan, |_| Duration::from_micros(100)).records;
        let offsets: Vec<u64> = log.iter().map(|r| r.io.offset_bytes).collect();
        assert_eq!(offsets, [4 << 20, 6 << 20, 8 << 20]);
        for record in &log {
            assert_eq!((record.io.kind, record.io.place), (IoKind::Read, Place::Device(1)));
            assert_eq!(record.io.size_bytes, 2 << 20);
            assert!(!record.io.direct);
            assert_eq!(record.in_flight, 1);
        }
        assert!(records("dd:bs=4k,count=2,direct=1").iter().all(|r| r.io.direct));
        assert_eq!(records("dd").len(), 1, "dd's defaults: one 512-byte block");
    }

    // Proves mode=write writes count blocks to a new file on the device, sequentially from 0,
    // and fdatasync adds one fsync of the file at the end.
    #[test]
    fn write_fills_a_new_file_and_fdatasync_syncs_it() {
        let plan = plan("dd:mode=write,bs=1m,count=4", &targets());
        assert_eq!(plan.files, [FileSpec { name: "/tmp/dd.out".into(), device: 0, size_bytes: 0 }]);
        let log = run(plan, |_| Duration::from_micros(100)).records;
        let offsets: Vec<u64> = log.iter().map(|r| r.io.offset_bytes).collect();
        assert_eq!(offsets, [0, 1 << 20, 2 << 20, 3 << 20]);
        assert!(log.iter().all(|r| r.io.kind == IoKind::Write && r.io.place == Place::File(0)));
        let synced = records("dd:mode=write,bs=1m,count=2,fdatasync=1");
        let kinds: Vec<IoKind> = synced.iter().map(|r| r.io.kind).collect();
        assert_eq!(kinds, [IoKind::Write, IoKind::Write, IoKind::Sync]);
        assert_eq!(synced[2].io.place, Place::File(0));
    }

    // Proves mode=copy alternates a read of device block skip+i with the write of file block
    // i, then syncs once with fdatasync.
    #[test]
    fn copy_alternates_reads_and_writes() {
        let log = records("dd:mode=copy,bs=2m,count=3,skip=1,fdatasync=1");
        let steps: Vec<(IoKind, Place, u64)> =
            log.iter().map(|r| (r.io.kind, r.io.place, r.io.offset_bytes >> 20)).collect();
        let (read, write) = (IoKind::Read, IoKind::Write);
        let (device, file) = (Place::Device(0), Place::File(0));
        assert_eq!(
            steps,
            [
                (read, device, 2),
                (write, file, 0),
                (read, device, 4),
                (write, file, 2),
                (read, device, 6),
                (write, file, 4),
                (IoKind::Sync, file, 0),
            ]
        );
        assert!(log.iter().all(|r| r.in_flight == 1));
    }

    // Proves bad input names the key: an unknown mode, a zero count, an unaligned direct bs,
    // skip without input, fdatasync without output, reads past the device end, a missing
    // device, a file larger than its device.
    #[test]
    fn bad_input_names_the_key() {
        assert!(parse_error("dd:mode=append").contains("expected one of read, write, copy"));
        assert!(parse_error("dd:count=0").contains("count=0 is not valid"));
        assert!(parse_error("dd:bs=1000,direct=1").contains("bs: 1000 bytes"));
        assert!(parse_error("dd:mode=write,skip=1").contains("skip: mode=write"));
        assert!(parse_error("dd:fdatasync=1").contains("fdatasync: mode=read"));
        let plan_error = |text: &str| plan_error(text, &targets());
        assert!(plan_error("dd:bs=1m,count=64,skip=1,device=1").contains("count: skip + count"));
        assert!(plan_error("dd:device=2").contains("device: no device 2 (the plan has 2 (sda"));
        assert!(plan_error("dd:mode=write,bs=1m,count=65,device=1").contains("count: the files"));
        let fits = WorkloadSpec::parse("dd:bs=1m,count=64,device=1").unwrap();
        assert!(fits.plan(&targets(), &Prng::new(1)).is_ok());
    }
}
