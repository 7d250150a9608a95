//! `seqread`: concurrent sequential readers of separate existing files, the iSCSI file server
//! experiment (one reader, then two at once), as `cat`- or `dd`-like processes do it.
//!
//! Each reader is a process that reads its own file from start to end in `bs`-sized
//! `read(2)` calls, buffered through the page cache (so read-ahead applies) unless `direct`.
//!
//! # Plan
//!
//! * Files `seqread.R` of `size` bytes for reader R, on device `R mod devices`, existing before
//!   the run.
//! * One phase `read`, one issuer per reader (`seqread/R`, process id R + 1), each reading its
//!   file exactly once.
//!
//! # Keys
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `readers` | 1 | concurrent readers, each a process with its own file, 1..=1024 |
//! | `size` | 1g | bytes per file, a whole number of `bs` |
//! | `bs` | 1m | bytes per read call, a multiple of 512 |
//! | `direct` | 0 | O_DIRECT |
//! | `devices` | 1 | spread the files round robin over the first N devices |
//!
//! # Deviations from the experiment
//!
//! * The study read files on a ZFS pool over iSCSI: on an `iscsi` device (`iscsi-zfs`, the
//!   study's) the readers are the initiator's processes, their files lie on its ZFS pool and
//!   ZFS's prefetch reads ahead (the simulator's `iscsi` module). On any other device the files
//!   are contiguous on the device's filesystem and the host's read-ahead and page cache stand
//!   in for ZFS's.
//! * The readers are not stonewalled: the aggregate rate is over the time until both finish.

use elevator_core::{KeyKind, KeySpec, ParamError, Params, Prng, ProcessId};

use crate::process::{
    SequentialPass, check_files_fit, check_sectors, check_whole_chunks, device_count,
};
use crate::{FileSpec, IoKind, Issuer, PhasePlan, Target, WorkloadPlan};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str = "sequential readers of separate existing files, one process each";

/// The keys of `seqread`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "readers",
        kind: KeyKind::Integer { min: 1, max: 1024 },
        default: "1",
        help: "concurrent readers, each a process with its own file",
    },
    KeySpec {
        key: "size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 50 },
        default: "1g",
        help: "bytes per file, a whole number of bs",
    },
    KeySpec {
        key: "bs",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 64 << 20 },
        default: "1m",
        help: "bytes per read call, a multiple of 512",
    },
    KeySpec { key: "direct", kind: KeyKind::Flag, default: "0", help: "O_DIRECT" },
    KeySpec {
        key: "devices",
        kind: KeyKind::Integer { min: 1, max: 256 },
        default: "1",
        help: "spread the files round robin over the first N devices",
    },
];

/// The checked configuration of a `seqread` run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SeqreadConfig {
    readers: u32,
    size_bytes: u64,
    pub(crate) block_bytes: u64,
    direct: bool,
}

impl SeqreadConfig {
    pub(crate) fn from_params(params: &Params) -> Result<SeqreadConfig, ParamError> {
        let block_bytes = params.size("bs");
        check_sectors(params, "bs", block_bytes)?;
        let size_bytes = params.size("size");
        check_whole_chunks(params, "size", size_bytes, "bs", block_bytes)?;
        Ok(SeqreadConfig {
            readers: params.integer("readers") as u32,
            size_bytes,
            block_bytes,
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
        let files: Vec<FileSpec> = (0..self.readers as usize)
            .map(|reader| FileSpec {
                name: format!("seqread.{reader}"),
                device: reader % devices,
                size_bytes: self.size_bytes,
            })
            .collect();
        let sizes: Vec<(usize, u64)> = files.iter().map(|f| (f.device, f.size_bytes)).collect();
        check_files_fit(params, "size", &sizes, targets)?;
        let issuers = (0..self.readers)
            .map(|reader| {
                Box::new(SequentialPass::new(
                    format!("seqread/{reader}"),
                    ProcessId(reader + 1),
                    reader as usize,
                    IoKind::Read,
                    self.size_bytes,
                    self.block_bytes,
                    self.direct,
                )) as Box<dyn Issuer>
            })
            .collect();
        Ok(WorkloadPlan {
            files,
            phases: vec![PhasePlan { name: "read".to_owned(), issuers, stonewall: false }],
        })
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::Duration;

    use super::*;
    use crate::Place;
    use crate::testing::{devices, parse_error, plan, plan_error, run};

    fn targets() -> Vec<Target> {
        devices(&[("sda", 1 << 30), ("sdb", 1 << 30)])
    }

    // Proves each reader has its own existing file, spread over `devices`, and reads it once,
    // sequentially in bs calls, one at a time.
    #[test]
    fn one_file_per_reader_read_sequentially() {
        let plan = plan("seqread:readers=3,size=4m,devices=2", &targets());
        let files: Vec<(usize, u64)> =
            plan.files.iter().map(|f| (f.device, f.size_bytes)).collect();
        assert_eq!(files, [(0, 4 << 20), (1, 4 << 20), (0, 4 << 20)]);
        assert_eq!(plan.phases.len(), 1);
        assert_eq!(plan.phases[0].name, "read");
        let run = run(plan, |_| Duration::from_micros(100));
        for reader in 0..3 {
            let records: Vec<_> = run.records.iter().filter(|r| r.issuer == reader).collect();
            let offsets: Vec<u64> = records.iter().map(|r| r.io.offset_bytes >> 20).collect();
            assert_eq!(offsets, [0, 1, 2, 3]);
            assert!(records.iter().all(|r| r.io.place == Place::File(reader)
                && r.io.kind == IoKind::Read
                && !r.io.direct
                && r.in_flight == 1));
        }
    }

    // Proves bad input names the key: zero readers, a size that is not whole blocks, files
    // that do not fit, more devices than the plan has.
    #[test]
    fn bad_input_names_the_key() {
        assert!(parse_error("seqread:readers=0").contains("readers=0 is not valid"));
        assert!(parse_error("seqread:size=1536k").contains("size: 1572864 bytes"));
        assert!(parse_error("seqread:bs=2m,size=1m").contains("bs: bs (2097152 bytes)"));
        let plan_error = |text: &str| plan_error(text, &targets());
        assert!(plan_error("seqread:readers=2").contains("size: the files on sda need"));
        assert!(plan_error("seqread:devices=3").contains("devices: 3 devices asked for"));
    }
}
