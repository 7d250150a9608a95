//! `hdparm`: `hdparm -tT /dev/sdX ...`, the cached-read and device-read timings
//! (`/work/shared/specs/workload-mechanisms.md` §5.3, source HDP).
//!
//! Each test, in the order hdparm runs them for `-tT` (`-T` first), as system calls:
//!
//! * `-T` (cached reads): `sync()` and a 3 s sleep; one priming `read(block)` at offset 0 — a
//!   disk read, the cache being empty at the start and after every earlier test's final
//!   flush; then the pause before the timed loop, which depends on the version: up to 8.1
//!   `sync()` + 1 s, so the primed pages stay cached and every timed read is a page-cache hit;
//!   from 8.2 a full cache flush (`BLKFLSBUF`) + 1 s, so the first timed read comes from disk.
//!   Then `lseek(0)` + `read(block)` over and over until `cached_time` has passed; then the
//!   cache flush (`fsync` + `BLKFLSBUF`).
//! * `-t` (device reads): `sync()` and a 3 s sleep — no flush of its own: with `-tT` it follows
//!   `-T`'s final flush, so the cache is empty — then consecutive `read(block)` calls on the
//!   buffered device from offset 0 until `device_time` has passed or the device ends (so the
//!   disk sees one sync sequential read-ahead stream); then the cache flush.
//!
//! hdparm prints `N MB in T seconds = R MB/sec` over its timed loop only, so each issuer
//! measures that loop itself and reports it through [`Issuer::counters`]: `timed_bytes`, the
//! bytes the loop read, `timed_ns`, from the issue of its first read to the completion of its
//! last, and `printed_bytes`, the amount hdparm prints: up to version 6.8 the `-T` MB count is
//! doubled before printing ("fix X2 over-reporting of -T results", 6.9), so the printed `-T`
//! figure is twice the real copy rate.
//!
//! # Plan
//!
//! * No files: everything is the raw device.
//! * For each device D of the first `devices`, in order, two phases: `cached-D` (`-T`) then
//!   `device-D` (`-t`), hdparm's order for `-tT`.
//! * One issuer per phase, `hdparm`, process id 1 throughout: it is one process testing the
//!   devices one after another.
//!
//! # Keys
//!
//! | key | default | hdparm | meaning |
//! |---|---|---|---|
//! | `block` | 2m | `TIMING_BUF_MB` | bytes per read call, a multiple of 512 |
//! | `cached_time` | 2s | the `-T` timer | length of the `-T` loop |
//! | `device_time` | 3s | the `-t` timer | length of the `-t` loop (shorter if the device ends) |
//! | `direct` | 0 | `--direct` | O_DIRECT for both tests |
//! | `devices` | 1 | the device arguments | test the first N devices one after another |
//! | `version` | 6.0 | the release | `MAJOR.MINOR`: ≤ 6.8 doubles the printed `-T` figure; ≥ 8.2 flushes before the `-T` loop |
//!
//! The default version 6.0 is the spec's inference (§5.3): the study's write-up does not give
//! its hdparm version; every release before 2006-10-25 is ≤ 6.8, and 6.0 (2005-04-19) sits
//! mid-period. Reports should say the write-up's version is unknown.
//!
//! # Differences from the real tool
//!
//! * `sync()` is the device's own fsync: it flushes only this device's dirty data, where
//!   `sync()` flushes every filesystem. In these experiments nothing is dirty either way.
//! * The cache flush is `fsync` + `BLKFLSBUF` for every version; from 8.2 hdparm adds
//!   `sync`, `fdatasync` and more `sync` calls (all finding nothing dirty here), and up to 8.1
//!   a null drive command to await completion, which is not modelled.
//! * The loops stop at the first completion at or after their time, measured in simulated time;
//!   hdparm's interval timer interrupts the same way, but hdparm then also times the bare
//!   `lseek` calls of the `-T` loop and subtracts them, which cost nothing here.
//! * The 2 MiB buffer's `mlock`/`SHM_LOCK` is not modelled (no memory pressure here).
//! * `--offset` is not modelled; `-t` always starts at byte 0.

use std::collections::VecDeque;

use elevator_core::{Duration, Instant, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId};

use crate::process::{Syscalls, check_sectors, device_count};
use crate::{IoId, IoKind, Issuer, PhasePlan, Place, Poll, Target, WorkloadPlan};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str =
    "hdparm -tT: cached reads of one block, then sequential raw device reads, per device";

const MAX_TIME: Duration = Duration::from_secs(3600);

/// The sleep after the `sync()` that starts each test (spec §5.3, hdparm 6.0 to 9.x).
const TEST_PAUSE: Duration = Duration::from_secs(3);

/// The pause between priming the cache and timing it (hdparm's `sleep(1)`, §5.3).
const CACHED_PAUSE: Duration = Duration::from_secs(1);

/// The first release that flushes the cache before the `-T` loop (2008-02-19, §5.3).
const FLUSH_BEFORE_CACHED_LOOP: (u32, u32) = (8, 2);

/// The last release that doubles the printed `-T` figure (6.9 removed it, §5.3).
const LAST_DOUBLING: (u32, u32) = (6, 8);

/// The keys of `hdparm`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "block",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 64 << 20 },
        default: "2m",
        help: "bytes per read call, a multiple of 512",
    },
    KeySpec {
        key: "cached_time",
        kind: KeyKind::Time { min: Duration::from_millis(1), max: MAX_TIME, bare_unit: "s" },
        default: "2s",
        help: "length of the -T loop of cached reads",
    },
    KeySpec {
        key: "device_time",
        kind: KeyKind::Time { min: Duration::from_millis(1), max: MAX_TIME, bare_unit: "s" },
        default: "3s",
        help: "length of the -t loop of device reads (shorter if the device ends)",
    },
    KeySpec { key: "direct", kind: KeyKind::Flag, default: "0", help: "O_DIRECT (--direct)" },
    KeySpec {
        key: "devices",
        kind: KeyKind::Integer { min: 1, max: 256 },
        default: "1",
        help: "test the first N devices one after another",
    },
    KeySpec {
        key: "version",
        kind: KeyKind::Text,
        default: "6.0",
        help: "hdparm release MAJOR.MINOR: <= 6.8 prints -T doubled, >= 8.2 flushes before -T",
    },
];

/// The checked configuration of an `hdparm` run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct HdparmConfig {
    block_bytes: u64,
    cached_time: Duration,
    device_time: Duration,
    direct: bool,
    /// (major, minor) release.
    version: (u32, u32),
}

/// `MAJOR.MINOR` (`6.0`, `9.43`): hdparm numbers its minor releases as integers.
fn parse_version(params: &Params) -> Result<(u32, u32), ParamError> {
    let text = params.text("version");
    let bad = || params.impossible("version", format!("`{text}` is not MAJOR.MINOR, e.g. 6.0"));
    let (major, minor) = text.split_once('.').ok_or_else(bad)?;
    let major = major.parse::<u32>().map_err(|_| bad())?;
    let minor = minor.parse::<u32>().map_err(|_| bad())?;
    Ok((major, minor))
}

impl HdparmConfig {
    pub(crate) fn from_params(params: &Params) -> Result<HdparmConfig, ParamError> {
        let block_bytes = params.size("block");
        check_sectors(params, "block", block_bytes)?;
        Ok(HdparmConfig {
            block_bytes,
            cached_time: params.time("cached_time"),
            device_time: params.time("device_time"),
            direct: params.flag("direct"),
            version: parse_version(params)?,
        })
    }

    /// What a test does before its timed loop.
    fn prelude(&self, test: Test) -> VecDeque<Action> {
        let mut actions = VecDeque::from([Action::Sync, Action::Pause(TEST_PAUSE)]);
        if test == Test::Cached {
            actions.push_back(Action::Prime);
            if self.version >= FLUSH_BEFORE_CACHED_LOOP {
                actions.extend([Action::Sync, Action::Flush]);
            } else {
                actions.push_back(Action::Sync);
            }
            actions.push_back(Action::Pause(CACHED_PAUSE));
        }
        actions
    }

    pub(crate) fn plan(
        &self,
        params: &Params,
        targets: &[Target],
        _prng: &Prng,
    ) -> Result<WorkloadPlan, ParamError> {
        let devices = device_count(params, "devices", targets)?;
        let mut phases = Vec::with_capacity(2 * devices);
        for (device, target) in targets.iter().enumerate().take(devices) {
            let max_blocks = target.capacity_bytes / self.block_bytes;
            if max_blocks == 0 {
                return Err(params.impossible(
                    "block",
                    format!(
                        "a block is larger than {} ({} bytes)",
                        target.name, target.capacity_bytes
                    ),
                ));
            }
            for test in [Test::Cached, Test::Device] {
                let printed_factor =
                    if test == Test::Cached && self.version <= LAST_DOUBLING { 2 } else { 1 };
                let issuer = HdparmIssuer {
                    test,
                    device,
                    block_bytes: self.block_bytes,
                    time: if test == Test::Cached { self.cached_time } else { self.device_time },
                    max_blocks,
                    direct: self.direct,
                    printed_factor,
                    prelude: self.prelude(test),
                    // flush_buffer_cache: fsync, then BLKFLSBUF (§5.3).
                    epilogue: VecDeque::from([Action::Sync, Action::Flush]),
                    pause_until: None,
                    step: Step::Prelude,
                    timed_start: None,
                    timed_blocks: 0,
                    timed_ns: 0,
                    calls: Syscalls::default(),
                };
                phases.push(PhasePlan {
                    name: format!("{}-{device}", test.name()),
                    issuers: vec![Box::new(issuer)],
                    stonewall: false,
                });
            }
        }
        Ok(WorkloadPlan { files: Vec::new(), phases })
    }
}

/// Which timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Test {
    /// `-T`.
    Cached,
    /// `-t`.
    Device,
}

impl Test {
    fn name(self) -> &'static str {
        match self {
            Test::Cached => "cached",
            Test::Device => "device",
        }
    }
}

/// An untimed step around a timed loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// `sync()` (or the `fsync` of the device in a flush).
    Sync,
    /// `sleep`.
    Pause(Duration),
    /// `-T`'s priming read of the block at offset 0.
    Prime,
    /// `BLKFLSBUF`: drop the device's cached pages.
    Flush,
}

/// Where a timing is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Before the timed loop.
    Prelude,
    /// In the timed loop.
    Timed,
    /// After the loop's time is up (or the device ended): the final flush.
    Epilogue,
}

/// hdparm running one timing on one device.
#[derive(Debug)]
struct HdparmIssuer {
    test: Test,
    device: usize,
    block_bytes: u64,
    time: Duration,
    /// Whole blocks on the device: `-t` stops after this many.
    max_blocks: u64,
    direct: bool,
    /// What hdparm multiplies the loop's MB count by before printing it.
    printed_factor: u64,
    prelude: VecDeque<Action>,
    epilogue: VecDeque<Action>,
    /// The end of the pause in progress.
    pause_until: Option<Instant>,
    step: Step,
    /// The issue of the first timed read.
    timed_start: Option<Instant>,
    /// Timed reads completed.
    timed_blocks: u64,
    /// From `timed_start` to the completion of the last timed read.
    timed_ns: u64,
    calls: Syscalls,
}

impl HdparmIssuer {
    fn timed_read(&mut self, now: Instant) -> Poll {
        self.timed_start.get_or_insert(now);
        let offset = match self.test {
            Test::Cached => 0,
            // One timed read in flight at a time, so the next block is the completed count.
            Test::Device => self.timed_blocks * self.block_bytes,
        };
        let place = Place::Device(self.device);
        self.calls.call(IoKind::Read, place, offset, self.block_bytes, self.direct)
    }

    /// Runs the first of `actions`: the call to make or the sleep, or `None` when there is
    /// none left.
    fn untimed(&mut self, now: Instant, before_loop: bool) -> Option<Poll> {
        let actions = if before_loop { &mut self.prelude } else { &mut self.epilogue };
        let action = actions.pop_front()?;
        let place = Place::Device(self.device);
        Some(match action {
            Action::Pause(pause) => {
                let until = *self.pause_until.get_or_insert_with(|| now.saturating_add(pause));
                if now < until {
                    // Not over yet: it stays first.
                    actions.push_front(action);
                    return Some(Poll::Sleep { until });
                }
                self.pause_until = None;
                return self.untimed(now, before_loop);
            }
            // The flushes act on the page cache, whatever `--direct` says of the reads.
            Action::Sync => self.calls.call(IoKind::Sync, place, 0, 0, false),
            Action::Flush => self.calls.call(IoKind::DropCaches, place, 0, 0, false),
            Action::Prime => self.calls.call(IoKind::Read, place, 0, self.block_bytes, self.direct),
        })
    }
}

impl Issuer for HdparmIssuer {
    fn name(&self) -> &str {
        "hdparm"
    }

    fn process(&self) -> ProcessId {
        ProcessId(1)
    }

    fn poll(&mut self, now: Instant) -> Poll {
        if self.calls.busy() {
            return Poll::Wait;
        }
        match self.step {
            Step::Prelude => {
                if let Some(poll) = self.untimed(now, true) {
                    return poll;
                }
                self.step = Step::Timed;
                self.timed_read(now)
            }
            Step::Timed => self.timed_read(now),
            Step::Epilogue => self.untimed(now, false).unwrap_or(Poll::Done),
        }
    }

    fn complete(&mut self, now: Instant, io: IoId) {
        self.calls.returned(io);
        if self.step != Step::Timed {
            return;
        }
        let start = self.timed_start.expect("a timed read before the loop started");
        self.timed_blocks += 1;
        let elapsed = now.saturating_since(start);
        self.timed_ns = elapsed.as_nanos();
        let device_ended = self.test == Test::Device && self.timed_blocks >= self.max_blocks;
        if elapsed >= self.time || device_ended {
            self.step = Step::Epilogue;
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let timed_bytes = self.timed_blocks * self.block_bytes;
        vec![
            ("timed_bytes", timed_bytes),
            ("timed_ns", self.timed_ns),
            ("printed_bytes", timed_bytes * self.printed_factor),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkloadSpec;
    use crate::testing::{devices, parse_error, plan, run};

    fn targets() -> Vec<Target> {
        devices(&[("hda", 1 << 30), ("hdb", 8 << 20)])
    }

    // Proves the phases are cached-D then device-D for each of the first `devices` devices, one
    // process throughout.
    #[test]
    fn two_phases_per_device() {
        let plan = plan("hdparm:devices=2", &targets());
        let names: Vec<&str> = plan.phases.iter().map(|phase| phase.name.as_str()).collect();
        assert_eq!(names, ["cached-0", "device-0", "cached-1", "device-1"]);
        assert!(plan.phases.iter().all(|phase| phase.issuers.len() == 1
            && phase.issuers[0].process() == ProcessId(1)));
        assert!(plan.files.is_empty());
    }

    /// The kinds of a phase's operations, runs of timed reads folded into one `Read`.
    fn shape(records: &[crate::testing::Record]) -> Vec<IoKind> {
        let mut kinds: Vec<IoKind> = Vec::new();
        for (index, record) in records.iter().enumerate() {
            let repeat = index > 1 && record.io.kind == IoKind::Read;
            if !(repeat && kinds.last() == Some(&IoKind::Read)) {
                kinds.push(record.io.kind);
            }
        }
        kinds
    }

    // Proves -T as hdparm 6.0 runs it: sync + 3 s, one priming read at offset 0, sync + 1 s
    // (no flush, so the timed reads hit the cache), reads of offset 0 until cached_time, then
    // the flush (fsync + BLKFLSBUF); its counters are exactly the timed loop, and the printed
    // figure is doubled, as up to 6.8.
    #[test]
    fn cached_reads_as_hdparm_6_0() {
        let run = run(plan("hdparm:cached_time=10ms", &targets()), |_| Duration::from_micros(300));
        let cached = run.phase(0);
        let (sync, read, flush) = (IoKind::Sync, IoKind::Read, IoKind::DropCaches);
        assert_eq!(shape(&cached), [sync, read, sync, read, sync, flush]);
        assert_eq!(cached[1].submitted, Instant::from_nanos(300_000) + TEST_PAUSE);
        let reads: Vec<_> = cached.iter().filter(|r| r.io.kind == read).collect();
        assert!(reads.iter().all(|r| r.io.offset_bytes == 0
            && r.io.size_bytes == 2 << 20
            && r.io.place == Place::Device(0)
            && !r.io.direct));
        let timed = &cached[3..cached.len() - 2];
        assert_eq!(timed[0].submitted, cached[2].completed + CACHED_PAUSE);
        // 300 us per read: the 34th completes at 10.2 ms, the first at or after 10 ms.
        assert_eq!(timed.len(), 34);
        let timed_ns = timed.last().unwrap().completed - timed[0].submitted;
        assert_eq!(run.counter(0, "timed_ns"), timed_ns.as_nanos());
        assert_eq!(run.counter(0, "timed_ns"), 10_200_000);
        assert_eq!(run.counter(0, "timed_bytes"), 34 * (2 << 20));
        assert_eq!(run.counter(0, "printed_bytes"), 2 * 34 * (2 << 20), "6.0 prints -T x2");
        assert_eq!(run.counter(1, "printed_bytes"), run.counter(1, "timed_bytes"), "-t is not");
    }

    // Proves the version's other two behaviours: 6.9 to 8.1 print -T as measured and do not
    // flush before the loop; from 8.2 a flush (fsync + BLKFLSBUF) precedes the 1 s pause, so
    // the first timed read is not served from the primed cache.
    #[test]
    fn cached_reads_by_version() {
        let (sync, read, flush) = (IoKind::Sync, IoKind::Read, IoKind::DropCaches);
        for (version, shape_wanted, factor) in [
            ("6.9", vec![sync, read, sync, read, sync, flush], 1),
            ("8.1", vec![sync, read, sync, read, sync, flush], 1),
            ("8.2", vec![sync, read, sync, flush, read, sync, flush], 1),
            ("9.43", vec![sync, read, sync, flush, read, sync, flush], 1),
            ("6.8", vec![sync, read, sync, read, sync, flush], 2),
        ] {
            let text = format!("hdparm:cached_time=10ms,version={version}");
            let run = run(plan(&text, &targets()), |_| Duration::from_micros(300));
            assert_eq!(shape(&run.phase(0)), shape_wanted, "{version}");
            let timed_bytes = run.counter(0, "timed_bytes");
            assert_eq!(run.counter(0, "printed_bytes"), factor * timed_bytes, "{version}");
        }
    }

    // Proves -t is sync + 3 s (no flush of its own: -T's final flush emptied the cache), then
    // sequential reads from 0 until device_time with counters equal to that loop, then the
    // flush.
    #[test]
    fn device_reads_follow_the_cached_flush_and_read_sequentially() {
        let run =
            run(plan("hdparm:device_time=5ms,block=1m", &targets()), |_| Duration::from_millis(1));
        let device = run.phase(1);
        let (sync, read, flush) = (IoKind::Sync, IoKind::Read, IoKind::DropCaches);
        assert_eq!(shape(&device), [sync, read, sync, flush]);
        assert_eq!(run.phase(0).last().unwrap().io.kind, flush, "-T ends with the flush");
        assert_eq!(device[1].submitted, device[0].completed + TEST_PAUSE);
        let reads = &device[1..device.len() - 2];
        let offsets: Vec<u64> = reads.iter().map(|r| r.io.offset_bytes >> 20).collect();
        assert_eq!(offsets, [0, 1, 2, 3, 4]);
        assert!(reads.iter().all(|r| r.io.size_bytes == 1 << 20 && r.io.place == Place::Device(0)));
        assert_eq!(run.counter(1, "timed_bytes"), 5 << 20);
        assert_eq!(run.counter(1, "timed_ns"), 5_000_000);
    }

    // Proves -t stops at the end of the device even with time left, and direct reaches every
    // read.
    #[test]
    fn device_reads_stop_at_the_device_end() {
        let run = run(plan("hdparm:devices=2,direct=1", &targets()), |_| Duration::from_millis(1));
        let device = run.phase(3);
        let reads: Vec<_> = device.iter().filter(|r| r.io.kind == IoKind::Read).collect();
        let offsets: Vec<u64> = reads.iter().map(|r| r.io.offset_bytes >> 20).collect();
        assert_eq!(offsets, [0, 2, 4, 6], "4 blocks of 2 MiB on the 8 MiB hdb");
        assert!(device.iter().all(|r| r.io.place == Place::Device(1)));
        assert!(reads.iter().all(|r| r.io.direct));
        assert_eq!(run.counter(3, "timed_bytes"), 8 << 20);
        assert_eq!(run.counter(3, "timed_ns"), 4_000_000);
    }

    // Proves bad input names the key: an unaligned or oversized block, a zero time, more
    // devices than the plan has.
    #[test]
    fn bad_input_names_the_key() {
        assert!(parse_error("hdparm:block=1000").contains("block: 1000 bytes"));
        assert!(parse_error("hdparm:cached_time=0").contains("cached_time=0 is not valid"));
        assert!(parse_error("hdparm:devices=0").contains("devices=0 is not valid"));
        assert!(parse_error("hdparm:version=6").contains("version: `6` is not MAJOR.MINOR"));
        assert!(parse_error("hdparm:version=x.1").contains("version: `x.1` is not"));
        let plan_error = |text: &str, capacity_bytes| {
            let targets = [Target { name: "hda".into(), capacity_bytes, zones: None }];
            WorkloadSpec::parse(text)
                .unwrap()
                .plan(&targets, &Prng::new(1))
                .unwrap_err()
                .to_string()
        };
        assert!(plan_error("hdparm:devices=2", 1 << 30).contains("devices: 2 devices asked for"));
        assert!(plan_error("hdparm", 1 << 20).contains("block: a block is larger than hda"));
    }
}
