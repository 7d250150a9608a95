//! `iozone`: iozone's throughput mode, `iozone -s SIZE -r RECORD -i 0 -i 1 -t N -+u`.
//!
//! N children, each a process with its own file on a filesystem. Test 0 writes every file
//! from its start in `record`-sized `write(2)` calls (phase `write`, which creates the files),
//! then writes them again over the existing data (`rewrite`); test 1 reads them sequentially
//! (`read`) and reads them again (`reread`, normally served from the page cache). The children
//! of a test start together and the test is stonewalled: when the first child finishes, every
//! child's throughput counts what it had done by then ([`PhasePlan::stonewall`]); the report's
//! "Children see throughput" is the sum of those per-child rates, and `-+u`'s CPU figure comes
//! from the host model. I/O is buffered through the page cache unless `direct` (`-I`).
//!
//! Sources: iozone(1) and the IOzone documentation (`/work/shared/specs/ecosystem.md` §2.1).
//!
//! # Plan
//!
//! * Files `iozone.DUMMY.C` for child C, on device `C mod devices`, created by the write test
//!   (`size_bytes` 0 in the plan; each grows to `size`).
//! * One stonewalled phase per test, named `write`, `rewrite`, `read`, `reread`, in that order.
//! * One issuer per child per phase, `iozone/C` with process id C + 1 in every phase: `size /
//!   record` sequential operations covering its file exactly, then, with `fsync=1` and in the
//!   write tests, one `fsync` of the file.
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
//! # Deviations from iozone
//!
//! * Sizes are bytes with binary suffixes (`size=24g,record=512k`); iozone's bare numbers are
//!   KiB (`-s24g -r512`).
//! * `tests` is a subset of write, rewrite, read and reread, in that order and starting with
//!   write (which creates the files), rather than iozone's test numbers, which always pair
//!   write with rewrite and read with reread.
//! * Every child runs to the end of its file in every test. iozone lets stonewalled writers
//!   finish too (so that readers later find full files) but stops stonewalled readers; here the
//!   report's stonewall only stops the counting, so reads past the stop still load the device
//!   until the phase ends.
//! * Files are neither closed and reopened between tests nor deleted at the end (`-w`), and
//!   the size is never rounded down to a whole number of records: it must be one.

use elevator_core::{KeyKind, KeySpec, ParamError, Params, Prng, ProcessId};

use crate::process::{
    SequentialPass, check_files_fit, check_sectors, check_whole_chunks, device_count,
};
use crate::{FileSpec, IoKind, Issuer, PhasePlan, Target, WorkloadPlan};

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
        let phases = self
            .tests
            .iter()
            .map(|&test| {
                let writes = test < 2;
                let issuers = (0..self.children)
                    .map(|child| {
                        let mut pass = SequentialPass::new(
                            format!("iozone/{child}"),
                            ProcessId(child + 1),
                            child as usize,
                            if writes { IoKind::Write } else { IoKind::Read },
                            self.size_bytes,
                            self.record_bytes,
                            self.direct,
                        );
                        pass.sync_at_end = writes && self.fsync;
                        Box::new(pass) as Box<dyn Issuer>
                    })
                    .collect();
                PhasePlan { name: TEST_NAMES[test].to_owned(), issuers, stonewall: true }
            })
            .collect();
        Ok(WorkloadPlan { files, phases })
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
        assert_eq!(processes, vec![vec![1, 2, 3]; 4], "the same child keeps its pid");
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
    // phase's kind, on its own file, one at a time, and cover the file exactly; no fsync by
    // default.
    #[test]
    fn record_sized_sequential_operations_cover_the_file() {
        let run = run(plan("iozone:threads=2,size=64k,record=16k", &targets()), |_| {
            Duration::from_micros(50)
        });
        for (phase, kind) in
            [(0, IoKind::Write), (1, IoKind::Write), (2, IoKind::Read), (3, IoKind::Read)]
        {
            for child in 0..2 {
                let records: Vec<_> =
                    run.phase(phase).into_iter().filter(|r| r.issuer == child).collect();
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

    // Proves fsync=1 adds one fsync of the child's file after its last write in write and
    // rewrite only, and direct=1 makes every operation O_DIRECT.
    #[test]
    fn fsync_at_the_end_of_the_write_tests() {
        let run = run(plan("iozone:size=32k,record=16k,fsync=1,direct=1", &targets()), |_| {
            Duration::from_micros(50)
        });
        let kinds = |phase| run.phase(phase).iter().map(|r| r.io.kind).collect::<Vec<_>>();
        assert_eq!(kinds(0), [IoKind::Write, IoKind::Write, IoKind::Sync]);
        assert_eq!(kinds(1), [IoKind::Write, IoKind::Write, IoKind::Sync]);
        assert_eq!(kinds(2), [IoKind::Read, IoKind::Read]);
        assert_eq!(run.phase(0)[2].io.place, Place::File(0));
        assert!(run.records.iter().all(|r| r.io.direct));
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
