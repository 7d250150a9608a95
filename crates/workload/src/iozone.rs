//! `iozone`: iozone's throughput mode, `iozone -s SIZE -r RECORD -i 0 -i 1 -t N -+u`
//! (`/work/shared/specs/workload-mechanisms.md` §5.1, source IOZ).
//!
//! N children, each a process with its own file on a filesystem. Test 0 writes every file
//! from its start in `record`-sized `write(2)` calls (phase `write`, which creates the files),
//! then writes them again over the existing data (`rewrite`); test 1 reads them sequentially
//! (`read`) and reads them again (`reread`, normally served from the page cache). I/O is
//! buffered through the page cache unless `direct` (`-I`).
//!
//! How the children run, as iozone does it (§5.1):
//!
//! * **Fork per phase.** Every test forks fresh children, so each phase's children are new
//!   processes (new PIDs, hence new CFQ/AS I/O contexts); the previous phase's children have
//!   exited.
//! * **Start barrier.** Each child opens its file and spins until the parent releases them
//!   all; then each starts its own timer. Here every child of a phase starts at the phase's
//!   first instant.
//! * **Phase barrier.** The parent waits for every child's exit before the next test, so no
//!   child of a test starts before every child of the previous one has exited (after its
//!   final fsync).
//! * **The timed loop.** A child's timed region is its `write` or `read` calls (plus an
//!   `fsync` with `-e`, key `fsync`).
//! * **Stonewall.** The first child to finish its loop sets a shared stop flag. Every other
//!   child, at its next call boundary, records its rate at that moment — bytes so far over its
//!   own elapsed time; a writer then keeps writing to the end of its file, a reader stops.
//!   The first finisher's rate is its whole file over its whole loop.
//! * **After the timing.** Every child — writer or reader — then calls `fsync(fd)` and
//!   `close(fd)` and exits, so a write test's bulk flush is N concurrent fsyncs from the
//!   children's own processes, inside the phase's time ("Parent sees") but outside each
//!   child's rate. A reader's fsync finds nothing dirty.
//! * **Figures.** Each child reports its rate through the counter `children_bytes_per_s`; its
//!   sum over the phase is iozone's "Children see throughput".
//!
//! # Plan
//!
//! * Files `iozone.DUMMY.C` for child C, on device `C mod devices`, created by the write test
//!   (`size_bytes` 0 in the plan; each grows to `size`).
//! * One stonewalled phase per test, named `write`, `rewrite`, `read`, `reread`, in that order.
//! * One issuer per child per phase, `iozone/C`, process id `K × N + C + 1` in the K-th phase
//!   run (from 0): `size / record` sequential operations covering its file (a reader stops at
//!   the stonewall), then with `fsync=1` in the write tests a timed `fsync`, then the untimed
//!   `fsync` of every child.
//!
//! # Keys
//!
//! | key | default | iozone | meaning |
//! |---|---|---|---|
//! | `threads` | 1 | `-t N` | children, 1..=256 |
//! | `size` | 512m | `-s` | bytes per child's file; a whole number of records |
//! | `record` | 4k | `-r` | bytes per call; a multiple of 512, at most 16m and `size` |
//! | `tests` | write+rewrite+read+reread | `-i 0 -i 1` | `+`/`/`-separated, in that order |
//! | `fsync` | 0 | `-e` | fsync at the end of write and rewrite, inside the timing |
//! | `direct` | 0 | `-I` | O_DIRECT |
//! | `devices` | 1 | `-F` paths | files round robin over the first N devices |
//!
//! # Differences from the real tool
//!
//! * Between tests the parent calls `sync()` and sleeps 2 s, untimed (§5.1); neither is
//!   modelled: the next test starts when the last child exits. The spec notes the sync finds
//!   little left (each writer fsynced its own file); the 2 s of idle time, in which pdflush
//!   and kjournald would run undisturbed, is missing.
//! * `-+u`: iozone sums each child's `getrusage` CPU over its timed region; the report here
//!   takes the host's CPU time of each child's whole life, the final fsync included.
//! * A stonewalled child records its rate when its current call returns, as iozone checks the
//!   flag between calls; with `-e` the first finisher sets the flag at the end of its loop,
//!   before its timed fsync.
//! * `close` costs nothing and flushes nothing (true of Linux filesystems without `-c`), so it
//!   is not an operation here.
//! * Sizes are bytes with binary suffixes (`size=24g,record=512k`); iozone's bare numbers are
//!   KiB (`-s24g -r512`).
//! * `tests` is a subset of write, rewrite, read and reread, in that order and starting with
//!   write (which creates the files), rather than iozone's test numbers, which always pair
//!   write with rewrite and read with reread.
//! * Files are neither reopened by the same process between tests (a new child opens them)
//!   nor deleted at the end (`-w`), and the size is never rounded down to a whole number of
//!   records: it must be one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use elevator_core::{Instant, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId};

use crate::process::{Syscalls, check_files_fit, check_sectors, check_whole_chunks, device_count};
use crate::{FileSpec, IoId, IoKind, Issuer, PhasePlan, Place, Poll, Target, WorkloadPlan};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str =
    "iozone throughput mode: N children, write/rewrite/read/reread of a file each, stonewalled";

/// The tests in the order iozone runs them.
const TEST_NAMES: [&str; 4] = ["write", "rewrite", "read", "reread"];

/// The keys of `iozone`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "threads",
        kind: KeyKind::Integer { min: 1, max: 256 },
        default: "1",
        help: "children (-t), each a process with its own file",
    },
    KeySpec {
        key: "size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 50 },
        default: "512m",
        help: "bytes per child's file (-s), a whole number of records",
    },
    KeySpec {
        key: "record",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 16 << 20 },
        default: "4k",
        help: "bytes per read or write call (-r), a multiple of 512",
    },
    KeySpec {
        key: "tests",
        kind: KeyKind::Text,
        default: "write+rewrite+read+reread",
        help: "tests in iozone's order, +-separated, starting with write (-i 0 -i 1)",
    },
    KeySpec {
        key: "fsync",
        kind: KeyKind::Flag,
        default: "0",
        help: "fsync at the end of write and rewrite, inside the timing (-e)",
    },
    KeySpec { key: "direct", kind: KeyKind::Flag, default: "0", help: "O_DIRECT (-I)" },
    KeySpec {
        key: "devices",
        kind: KeyKind::Integer { min: 1, max: 256 },
        default: "1",
        help: "spread the children's files round robin over the first N devices",
    },
];

/// The checked configuration of an `iozone` run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IozoneConfig {
    children: u32,
    size_bytes: u64,
    pub(crate) record_bytes: u64,
    /// Indexes into [`TEST_NAMES`], increasing, starting with 0 (write).
    tests: Vec<usize>,
    fsync: bool,
    direct: bool,
}

impl IozoneConfig {
    pub(crate) fn from_params(params: &Params) -> Result<IozoneConfig, ParamError> {
        let record_bytes = params.size("record");
        check_sectors(params, "record", record_bytes)?;
        let size_bytes = params.size("size");
        check_whole_chunks(params, "size", size_bytes, "record", record_bytes)?;
        let text = params.text("tests");
        let mut tests = Vec::new();
        for name in text.split(['+', '/']).map(str::trim) {
            let Some(test) = TEST_NAMES.iter().position(|known| *known == name) else {
                return Err(params.impossible(
                    "tests",
                    format!("unknown test `{name}` (accepted: {})", TEST_NAMES.join(", ")),
                ));
            };
            if tests.last().is_some_and(|&last| last >= test) {
                return Err(params.impossible(
                    "tests",
                    format!("`{text}`: tests run once each in the order {}", TEST_NAMES.join("+")),
                ));
            }
            tests.push(test);
        }
        if tests.first() != Some(&0) {
            return Err(params.impossible(
                "tests",
                format!("`{text}`: write must come first, since it creates the files"),
            ));
        }
        Ok(IozoneConfig {
            children: params.integer("threads") as u32,
            size_bytes,
            record_bytes,
            tests,
            fsync: params.flag("fsync"),
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
        let files: Vec<FileSpec> = (0..self.children as usize)
            .map(|child| FileSpec {
                name: format!("iozone.DUMMY.{child}"),
                device: child % devices,
                size_bytes: 0,
            })
            .collect();
        let eventual: Vec<(usize, u64)> =
            files.iter().map(|file| (file.device, self.size_bytes)).collect();
        check_files_fit(params, "size", &eventual, targets)?;
        let children = self.children;
        let phases = self
            .tests
            .iter()
            .enumerate()
            .map(|(run_index, &test)| {
                let writes = test < 2;
                // The children of one test share iozone's stop flag (shared memory in iozone).
                let stop = Arc::new(StopFlag::default());
                let issuers = (0..children)
                    .map(|child| {
                        Box::new(Child {
                            name: format!("iozone/{child}"),
                            // Forked afresh for every test: new processes, new I/O contexts.
                            process: ProcessId(run_index as u32 * children + child + 1),
                            file: child as usize,
                            kind: if writes { IoKind::Write } else { IoKind::Read },
                            size_bytes: self.size_bytes,
                            record_bytes: self.record_bytes,
                            direct: self.direct,
                            timed_fsync: writes && self.fsync,
                            stop: Arc::clone(&stop),
                            step: Step::Loop,
                            next_offset_bytes: 0,
                            done_bytes: 0,
                            started: None,
                            rate_bytes_per_s: None,
                            calls: Syscalls::default(),
                        }) as Box<dyn Issuer>
                    })
                    .collect();
                PhasePlan { name: TEST_NAMES[test].to_owned(), issuers, stonewall: true }
            })
            .collect();
        Ok(WorkloadPlan { files, phases })
    }
}

/// iozone's stonewall flag for one test: the instant, in nanoseconds, at which the first
/// child finished its loop, or `u64::MAX` while none has.
#[derive(Debug)]
struct StopFlag(AtomicU64);

impl Default for StopFlag {
    fn default() -> StopFlag {
        StopFlag(AtomicU64::new(u64::MAX))
    }
}

impl StopFlag {
    fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed) != u64::MAX
    }

    /// Sets it at `now` unless another child set it first.
    fn set(&self, now: Instant) {
        let _ =
            self.0.compare_exchange(u64::MAX, now.as_nanos(), Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Where a child is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Its timed `write`/`read` loop.
    Loop,
    /// Its timed fsync (`-e`) is in flight.
    TimedFsync,
    /// Its untimed fsync before close is in flight.
    FinalFsync,
    /// Closed; it exits.
    Exited,
}

/// One iozone child in one test.
#[derive(Debug)]
struct Child {
    name: String,
    process: ProcessId,
    file: usize,
    kind: IoKind,
    size_bytes: u64,
    record_bytes: u64,
    direct: bool,
    /// `-e` in a write test: fsync inside the timed region.
    timed_fsync: bool,
    stop: Arc<StopFlag>,
    step: Step,
    next_offset_bytes: u64,
    /// Bytes its returned loop calls moved.
    done_bytes: u64,
    /// When the parent released it (its timer's start).
    started: Option<Instant>,
    /// Its recorded rate, once recorded (at the stonewall or at the end of its loop).
    rate_bytes_per_s: Option<u64>,
    calls: Syscalls,
}

impl Child {
    /// Stores its rate: the bytes done so far over its own elapsed time.
    fn record_rate(&mut self, now: Instant) {
        if self.rate_bytes_per_s.is_some() {
            return;
        }
        let started = self.started.expect("a child records its rate after starting");
        let elapsed_ns = now.saturating_since(started).as_nanos();
        let rate = if elapsed_ns == 0 {
            0
        } else {
            (u128::from(self.done_bytes) * 1_000_000_000 / u128::from(elapsed_ns)) as u64
        };
        self.rate_bytes_per_s = Some(rate);
    }

    /// The end of its timing: it stores its rate, raises the stop flag if it is the first, and
    /// goes on to its fsync and close.
    fn end_timing(&mut self, now: Instant) -> Poll {
        self.record_rate(now);
        self.step = Step::FinalFsync;
        self.calls.call(IoKind::Sync, Place::File(self.file), 0, 0, self.direct)
    }
}

impl Issuer for Child {
    fn name(&self) -> &str {
        &self.name
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn poll(&mut self, now: Instant) -> Poll {
        if self.calls.busy() {
            return Poll::Wait;
        }
        // The parent releases every child of the test at once: its first poll.
        self.started.get_or_insert(now);
        match self.step {
            Step::Loop => {
                let stopped_reader = self.kind == IoKind::Read && self.stop.is_set();
                if self.next_offset_bytes < self.size_bytes && !stopped_reader {
                    let offset = self.next_offset_bytes;
                    self.next_offset_bytes += self.record_bytes;
                    let place = Place::File(self.file);
                    return self.calls.call(
                        self.kind,
                        place,
                        offset,
                        self.record_bytes,
                        self.direct,
                    );
                }
                if !stopped_reader {
                    // The first child through its loop stonewalls the others.
                    self.stop.set(now);
                }
                if self.timed_fsync {
                    self.step = Step::TimedFsync;
                    return self.calls.call(
                        IoKind::Sync,
                        Place::File(self.file),
                        0,
                        0,
                        self.direct,
                    );
                }
                self.end_timing(now)
            }
            Step::TimedFsync => self.end_timing(now),
            Step::FinalFsync => {
                self.step = Step::Exited;
                Poll::Done
            }
            Step::Exited => Poll::Done,
        }
    }

    fn complete(&mut self, now: Instant, io: IoId) {
        self.calls.returned(io);
        if self.step == Step::Loop {
            self.done_bytes += self.record_bytes;
            // iozone checks the stop flag after every call of its loop.
            if self.stop.is_set() {
                self.record_rate(now);
            }
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("children_bytes_per_s", self.rate_bytes_per_s.unwrap_or(0))]
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::Duration;

    use super::*;
    use crate::testing::{devices, parse_error, plan, plan_error, run};
    use crate::{Place, WorkloadSpec};

    fn targets() -> Vec<Target> {
        devices(&[("sda", 1 << 30), ("sdb", 1 << 30)])
    }

    // Proves each child gets its own file, created by the write test (size 0 in the plan), and
    // the files go round robin over the first `devices` devices.
    #[test]
    fn one_file_per_child_spread_over_devices() {
        let plan = plan("iozone:threads=3,size=64k,devices=2", &targets());
        let devices: Vec<usize> = plan.files.iter().map(|file| file.device).collect();
        assert_eq!(devices, [0, 1, 0]);
        assert!(plan.files.iter().all(|file| file.size_bytes == 0));
        assert_eq!(plan.files[2].name, "iozone.DUMMY.2");
        let processes: Vec<Vec<u32>> = plan
            .phases
            .iter()
            .map(|phase| phase.issuers.iter().map(|issuer| issuer.process().0).collect())
            .collect();
        // iozone forks new children for every test: new processes, new I/O contexts.
        assert_eq!(processes, [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]);
    }

    // Proves the phases are write, rewrite, read, reread, all stonewalled, and a subset keeps
    // that order.
    #[test]
    fn phases_in_order_with_stonewall() {
        let plan = plan("iozone:size=64k", &targets());
        let names: Vec<&str> = plan.phases.iter().map(|phase| phase.name.as_str()).collect();
        assert_eq!(names, ["write", "rewrite", "read", "reread"]);
        assert!(plan.phases.iter().all(|phase| phase.stonewall));
        let subset = crate::testing::plan("iozone:size=64k,tests=write/read", &targets());
        let names: Vec<&str> = subset.phases.iter().map(|phase| phase.name.as_str()).collect();
        assert_eq!(names, ["write", "read"]);
    }

    // Proves every child's operations in every phase are record-sized, sequential, of the
    // phase's kind, on its own file, one at a time, and cover the file exactly, followed by
    // the one fsync every child makes before close.
    #[test]
    fn record_sized_sequential_operations_cover_the_file() {
        let run = run(plan("iozone:threads=2,size=64k,record=16k", &targets()), |_| {
            Duration::from_micros(50)
        });
        for (phase, kind) in
            [(0, IoKind::Write), (1, IoKind::Write), (2, IoKind::Read), (3, IoKind::Read)]
        {
            for child in 0..2 {
                let mut records: Vec<_> =
                    run.phase(phase).into_iter().filter(|r| r.issuer == child).collect();
                let last = records.pop().unwrap();
                assert_eq!((last.io.kind, last.io.place), (IoKind::Sync, Place::File(child)));
                let offsets: Vec<u64> = records.iter().map(|r| r.io.offset_bytes).collect();
                assert_eq!(offsets, [0, 16 << 10, 32 << 10, 48 << 10]);
                for record in &records {
                    assert_eq!(record.io.kind, kind);
                    assert_eq!(record.io.size_bytes, 16 << 10);
                    assert_eq!(record.io.place, Place::File(child));
                    assert!(!record.io.direct);
                    assert_eq!(record.in_flight, 1);
                }
            }
        }
    }

    // Proves fsync=1 adds a timed fsync of the child's file after its last write in write and
    // rewrite only, before the untimed fsync every child makes, and direct=1 makes every
    // operation O_DIRECT.
    #[test]
    fn fsync_at_the_end_of_the_write_tests() {
        let run = run(plan("iozone:size=32k,record=16k,fsync=1,direct=1", &targets()), |_| {
            Duration::from_micros(50)
        });
        let kinds = |phase| run.phase(phase).iter().map(|r| r.io.kind).collect::<Vec<_>>();
        let (write, read, sync) = (IoKind::Write, IoKind::Read, IoKind::Sync);
        assert_eq!(kinds(0), [write, write, sync, sync]);
        assert_eq!(kinds(1), [write, write, sync, sync]);
        assert_eq!(kinds(2), [read, read, sync]);
        assert_eq!(run.phase(0)[2].io.place, Place::File(0));
        assert!(run.records.iter().all(|r| r.io.direct));
    }

    /// Child C's file is C + 1 times slower per operation; fsyncs take `fsync_us`.
    fn skewed(fsync_us: u64) -> impl Fn(&crate::Io) -> Duration {
        move |io| match (io.kind, io.place) {
            (IoKind::Sync, _) => Duration::from_micros(fsync_us),
            (_, Place::File(child)) => Duration::from_micros(100 * (child as u64 + 1)),
            _ => unreachable!("iozone addresses files"),
        }
    }

    // Proves the start and phase barriers: every child of a test makes its first call at the
    // same instant, and no child of a test starts before every child of the previous test has
    // returned from its last call (its fsync), however uneven the children are.
    #[test]
    fn children_start_together_and_tests_do_not_overlap() {
        let run = run(plan("iozone:threads=3,size=64k,record=16k", &targets()), skewed(5_000));
        for phase in 0..4 {
            let records = run.phase(phase);
            let start = records[0].submitted;
            for child in 0..3 {
                let first = records.iter().find(|r| r.issuer == child).unwrap();
                assert_eq!(first.submitted, start, "phase {phase}: child {child} started late");
            }
            if phase > 0 {
                let previous_end = run.phase(phase - 1).iter().map(|r| r.completed).max().unwrap();
                assert!(start >= previous_end, "phase {phase} began before {}", phase - 1);
            }
        }
    }

    // Proves the stonewall: the first child through its loop stops the readers (the slow
    // child reads less than its file) but not the writers (it writes all of it), and each
    // child's rate — summed into children_bytes_per_s — is its bytes when it saw the flag over
    // its own time, the final fsync excluded.
    #[test]
    fn stonewall_stops_readers_not_writers_and_rates_exclude_the_fsync() {
        let text = "iozone:threads=2,size=64k,record=16k,tests=write+read";
        let run = run(plan(text, &targets()), skewed(1_000_000));
        let of = |phase, child, kind| {
            run.phase(phase).into_iter().filter(|r| r.issuer == child && r.io.kind == kind).count()
        };
        assert_eq!(of(0, 1, IoKind::Write), 4, "a stonewalled writer writes to the end");
        // Child 0 finishes its 4 reads at 400 us; child 1 (200 us each) has 2 done by then and
        // sees the flag when its third returns at 600 us.
        assert_eq!(of(1, 1, IoKind::Read), 3, "a stonewalled reader stops");
        assert_eq!(of(1, 1, IoKind::Sync), 1, "and still fsyncs before close");
        // Rates: child 0, 64 KiB in 400 us; child 1, 48 KiB in 600 us — the 1 s fsyncs are
        // outside both.
        let expected = (64 << 10) * 1_000_000 / 400 + (48 << 10) * 1_000_000 / 600;
        assert_eq!(run.counter(0, "children_bytes_per_s"), expected);
        assert_eq!(run.counter(1, "children_bytes_per_s"), expected);
    }

    // Proves bad input names the key: a record over the size, a size that is not a whole
    // number of records, an unknown or misordered test, more devices or bytes than there are.
    #[test]
    fn bad_input_names_the_key() {
        assert!(parse_error("iozone:threads=0").contains("threads=0 is not valid"));
        assert!(parse_error("iozone:size=4k,record=8k").contains("record: record (8192 bytes)"));
        assert!(parse_error("iozone:size=12k,record=8k").contains("size: 12288 bytes"));
        assert!(parse_error("iozone:record=1000").contains("record: 1000 bytes"));
        assert!(parse_error("iozone:tests=write+randread").contains("unknown test `randread`"));
        assert!(parse_error("iozone:tests=read+write").contains("tests run once each"));
        assert!(parse_error("iozone:tests=read").contains("write must come first"));
        let plan_error = |text: &str| plan_error(text, &targets());
        assert!(plan_error("iozone:devices=3").contains("devices: 3 devices asked for"));
        let exactly_full = WorkloadSpec::parse("iozone:threads=3,size=512m,devices=2").unwrap();
        assert!(exactly_full.plan(&targets(), &Prng::new(1)).is_ok());
        assert!(
            plan_error("iozone:threads=5,size=512m,devices=2").contains("size: the files on sda")
        );
    }
}
