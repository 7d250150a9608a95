//! `hdparm`: `hdparm -tT /dev/sdX ...`, the cached-read and device-read timings.
//!
//! * `-T` (cached reads): read the device's first `block` once so that it is in the page cache,
//!   pause 1 s, then read that same block at offset 0 over and over until `cached_time` has
//!   passed. No disk I/O after the first read: it measures the host's copy speed (or, with
//!   `--direct`, the drive's own cache).
//! * `-t` (device reads): drop the device's cached pages (`BLKFLSBUF`), then read the raw
//!   device sequentially in `block`-sized calls from offset 0 until `device_time` has passed or
//!   the device ends. Buffered, so the device's read-ahead applies, unless `--direct`.
//!
//! hdparm prints `N MB in T seconds = R MB/sec` over its timed loop only, so each issuer
//! measures that loop itself and reports it through [`Issuer::counters`]: `timed_bytes`, the
//! bytes the loop read, and `timed_ns`, from the issue of its first read to the completion of
//! its last.
//!
//! Sources: hdparm(8) and hdparm 9.65's timing functions (`/work/shared/specs/ecosystem.md`
//! §2.2).
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
//!
//! # Deviations from hdparm
//!
//! * The loops stop at the first completion at or after their time, measured in simulated time;
//!   hdparm's interval timer interrupts the same way, but hdparm then also times the bare
//!   `lseek` calls of the `-T` loop and subtracts them, which cost nothing here.
//! * hdparm's preparation (`sync()` and a 3 s pause before each test, and the `sync`/`fsync`
//!   before `BLKFLSBUF`) is left out: in these experiments nothing is dirty, so it would only
//!   idle.
//! * `--offset` is not modelled; `-t` always starts at byte 0.

use elevator_core::{Duration, Instant, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId};

use crate::process::{Syscalls, check_sectors, device_count};
use crate::{IoId, IoKind, Issuer, PhasePlan, Place, Poll, Target, WorkloadPlan};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str =
    "hdparm -tT: cached reads of one block, then sequential raw device reads, per device";

const MAX_TIME: Duration = Duration::from_secs(3600);

/// The pause between populating the cache and timing it (hdparm's `sleep(1)`).
const CACHED_PAUSE: Duration = Duration::from_secs(1);

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
];

/// The checked configuration of an `hdparm` run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct HdparmConfig {
    block_bytes: u64,
    cached_time: Duration,
    device_time: Duration,
    direct: bool,
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
        })
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
                let issuer = HdparmIssuer {
                    test,
                    device,
                    block_bytes: self.block_bytes,
                    time: if test == Test::Cached { self.cached_time } else { self.device_time },
                    max_blocks,
                    direct: self.direct,
                    step: Step::Prepare,
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

/// Where a timing is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Nothing done yet: populate the cache (`-T`) or drop it (`-t`).
    Prepare,
    /// Waiting for the preparation to return.
    Preparing,
    /// `-T`'s pause after populating; `None` until it starts.
    Pause(Option<Instant>),
    /// In the timed loop.
    Timed,
    /// The loop's time is up (or the device ended).
    Finished,
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
        let place = Place::Device(self.device);
        match self.step {
            Step::Prepare => {
                self.step = Step::Preparing;
                match self.test {
                    Test::Cached => {
                        self.calls.call(IoKind::Read, place, 0, self.block_bytes, self.direct)
                    }
                    Test::Device => self.calls.call(IoKind::DropCaches, place, 0, 0, false),
                }
            }
            Step::Preparing => unreachable!("the preparation returned without moving on"),
            Step::Pause(None) => {
                let until = now.saturating_add(CACHED_PAUSE);
                self.step = Step::Pause(Some(until));
                Poll::Sleep { until }
            }
            Step::Pause(Some(until)) if now < until => Poll::Sleep { until },
            Step::Pause(Some(_)) => {
                self.step = Step::Timed;
                self.timed_read(now)
            }
            Step::Timed => self.timed_read(now),
            Step::Finished => Poll::Done,
        }
    }

    fn complete(&mut self, now: Instant, io: IoId) {
        self.calls.returned(io);
        match self.step {
            Step::Preparing => {
                self.step = match self.test {
                    Test::Cached => Step::Pause(None),
                    Test::Device => Step::Timed,
                };
            }
            Step::Timed => {
                let start = self.timed_start.expect("a timed read before the loop started");
                self.timed_blocks += 1;
                let elapsed = now.saturating_since(start);
                self.timed_ns = elapsed.as_nanos();
                let device_ended =
                    self.test == Test::Device && self.timed_blocks >= self.max_blocks;
                if elapsed >= self.time || device_ended {
                    self.step = Step::Finished;
                }
            }
            step => unreachable!("a completion while {step:?}"),
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("timed_bytes", self.timed_blocks * self.block_bytes), ("timed_ns", self.timed_ns)]
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

    // Proves -T reads the first block once, pauses 1 s, then reads offset 0 until cached_time,
    // and its counters are exactly the timed loop: the reads after the pause, from the issue
    // of the first to the completion of the last.
    #[test]
    fn cached_reads_populate_pause_and_loop_at_offset_zero() {
        let run = run(plan("hdparm:cached_time=10ms", &targets()), |_| Duration::from_micros(300));
        let cached = run.phase(0);
        assert!(cached.iter().all(|r| r.io.kind == IoKind::Read
            && r.io.offset_bytes == 0
            && r.io.size_bytes == 2 << 20
            && r.io.place == Place::Device(0)
            && !r.io.direct));
        assert_eq!(cached[0].submitted, Instant::ZERO);
        let timed = &cached[1..];
        assert_eq!(timed[0].submitted, Instant::from_nanos(300_000) + CACHED_PAUSE);
        // 300 us per read: the 34th completes at 10.2 ms, the first at or after 10 ms.
        assert_eq!(timed.len(), 34);
        let timed_ns = timed.last().unwrap().completed - timed[0].submitted;
        assert_eq!(run.counter(0, "timed_ns"), timed_ns.as_nanos());
        assert_eq!(run.counter(0, "timed_ns"), 10_200_000);
        assert_eq!(run.counter(0, "timed_bytes"), 34 * (2 << 20));
    }

    // Proves -t drops the device's cache first, then reads sequentially from 0 until
    // device_time, with counters equal to that loop.
    #[test]
    fn device_reads_drop_the_cache_then_read_sequentially() {
        let run =
            run(plan("hdparm:device_time=5ms,block=1m", &targets()), |_| Duration::from_millis(1));
        let device = run.phase(1);
        assert_eq!(device[0].io.kind, IoKind::DropCaches);
        assert_eq!(device[0].io.place, Place::Device(0));
        let offsets: Vec<u64> = device[1..].iter().map(|r| r.io.offset_bytes >> 20).collect();
        assert_eq!(offsets, [0, 1, 2, 3, 4]);
        assert!(
            device[1..].iter().all(|r| r.io.kind == IoKind::Read && r.io.size_bytes == 1 << 20)
        );
        assert_eq!(run.counter(1, "timed_bytes"), 5 << 20);
        assert_eq!(run.counter(1, "timed_ns"), 5_000_000);
    }

    // Proves -t stops at the end of the device even with time left, and direct reaches every
    // read.
    #[test]
    fn device_reads_stop_at_the_device_end() {
        let run = run(plan("hdparm:devices=2,direct=1", &targets()), |_| Duration::from_millis(1));
        let device = run.phase(3);
        let reads: Vec<u64> = device[1..].iter().map(|r| r.io.offset_bytes >> 20).collect();
        assert_eq!(reads, [0, 2, 4, 6], "4 blocks of 2 MiB on the 8 MiB hdb");
        assert!(device.iter().all(|r| r.io.place == Place::Device(1)));
        assert!(device[1..].iter().all(|r| r.io.direct));
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
        let plan_error = |text: &str, capacity_bytes| {
            let targets = [Target { name: "hda".into(), capacity_bytes }];
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
