//! `dss`: decision support, the study's Oracle DSS load: full table scans by parallel query
//! slaves, 100 % sequential reads of 32–256 KiB.
//!
//! The table fills a datafile of `size` bytes on each of the first `luns` devices. Its logical
//! order is striped over the datafiles in `extent`-sized extents, round robin, the way a
//! locally managed tablespace hands out uniform extents across its datafiles: logical extent
//! `e` is extent `e / luns` of LUN `e mod luns`. A parallel scan splits the table's extents
//! into `streams` contiguous shares (block-range granules); each stream, a process, reads its
//! share from start to end in reads of random sizes from `bsrange` (multiples of its minimum,
//! never crossing an extent), and when it reaches the end starts over, counting one `scans`.
//! Streams stop starting reads once `runtime` has passed.
//!
//! # Plan
//!
//! * Files `dss.data.L` of `size` bytes on device L for each of the first `luns` devices, all
//!   existing before the run.
//! * One phase `dss`, one issuer per stream (`dss/S`, process id S + 1), random streams forked
//!   as `dss-stream` S. Stream S's share is logical extents `S × E / streams` up to
//!   `(S + 1) × E / streams`, E being the table's extents.
//!
//! # Keys
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `streams` | 4 | parallel query slaves, each a process, 1..=1024 |
//! | `bsrange` | 32k-256k | `MIN-MAX` read sizes, drawn uniformly among multiples of MIN |
//! | `extent` | 1m | bytes per extent, a multiple of MIN and at least MAX |
//! | `luns` | all devices | datafiles on the first N devices, one each |
//! | `size` | 1g | bytes of table per datafile, a whole number of extents |
//! | `runtime` | 60s | how long streams start reads, s if bare |
//! | `direct` | 1 | O_DIRECT (Oracle's filesystemio_options=setall) |
//!
//! # Deviations from an Oracle DSS load
//!
//! * Only the scans' reads: no sorts, hash joins or temporary-tablespace writes, and no query
//!   coordinator; a query is not a unit here, `scans` counts each stream's passes over its
//!   share.
//! * Oracle sizes multiblock reads by `db_file_multiblock_read_count` and the extents' cached
//!   blocks; here each read's size is drawn uniformly from the range.

use elevator_core::{Duration, Instant, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId};

use crate::process::{
    Syscalls, check_files_fit, check_whole_chunks, device_count, parse_block_range,
};
use crate::{FileSpec, IoId, IoKind, Issuer, PhasePlan, Place, Poll, Target, WorkloadPlan};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str =
    "DSS database: parallel full-table scans, sequential 32-256k reads over striped datafiles";

const MAX_TIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// The keys of `dss`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "streams",
        kind: KeyKind::Integer { min: 1, max: 1024 },
        default: "4",
        help: "parallel query slaves, each a process scanning its share",
    },
    KeySpec {
        key: "bsrange",
        kind: KeyKind::Text,
        default: "32k-256k",
        help: "MIN-MAX read sizes, drawn uniformly among multiples of MIN",
    },
    KeySpec {
        key: "extent",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 30 },
        default: "1m",
        help: "bytes per extent striped round robin over the datafiles",
    },
    KeySpec {
        key: "luns",
        kind: KeyKind::Integer { min: 1, max: 256 },
        default: "",
        help: "datafiles on the first N devices (default: every device)",
    },
    KeySpec {
        key: "size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 50 },
        default: "1g",
        help: "bytes of table per datafile, a whole number of extents",
    },
    KeySpec {
        key: "runtime",
        kind: KeyKind::Time { min: Duration::from_millis(1), max: MAX_TIME, bare_unit: "s" },
        default: "60s",
        help: "how long streams start reads",
    },
    KeySpec {
        key: "direct",
        kind: KeyKind::Flag,
        default: "1",
        help: "O_DIRECT (Oracle's filesystemio_options=setall)",
    },
];

/// The checked configuration of a `dss` load.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DssConfig {
    streams: u32,
    min_read_bytes: u64,
    max_read_bytes: u64,
    pub(crate) extent_bytes: u64,
    size_bytes: u64,
    runtime: Duration,
    direct: bool,
}

impl DssConfig {
    pub(crate) fn from_params(params: &Params) -> Result<DssConfig, ParamError> {
        let (min_read_bytes, max_read_bytes) = parse_block_range(params, "bsrange", 64 << 20)?;
        let extent_bytes = params.size("extent");
        if extent_bytes % min_read_bytes != 0 || extent_bytes < max_read_bytes {
            return Err(params.impossible(
                "extent",
                format!(
                    "{extent_bytes} bytes must be a multiple of the smallest read \
                     ({min_read_bytes}) and at least the largest ({max_read_bytes})"
                ),
            ));
        }
        let size_bytes = params.size("size");
        check_whole_chunks(params, "size", size_bytes, "extent", extent_bytes)?;
        Ok(DssConfig {
            streams: params.integer("streams") as u32,
            min_read_bytes,
            max_read_bytes,
            extent_bytes,
            size_bytes,
            runtime: params.time("runtime"),
            direct: params.flag("direct"),
        })
    }

    pub(crate) fn plan(
        &self,
        params: &Params,
        targets: &[Target],
        prng: &Prng,
    ) -> Result<WorkloadPlan, ParamError> {
        let luns = device_count(params, "luns", targets)?;
        let files: Vec<FileSpec> = (0..luns)
            .map(|lun| FileSpec {
                name: format!("dss.data.{lun}"),
                device: lun,
                size_bytes: self.size_bytes,
            })
            .collect();
        let sizes: Vec<(usize, u64)> = files.iter().map(|f| (f.device, f.size_bytes)).collect();
        check_files_fit(params, "size", &sizes, targets)?;
        let table_extents = self.size_bytes / self.extent_bytes * luns as u64;
        let streams = u64::from(self.streams);
        if table_extents < streams {
            return Err(params.impossible(
                "streams",
                format!("{streams} streams cannot share a table of {table_extents} extents"),
            ));
        }
        let issuers = (0..streams)
            .map(|stream| {
                let first_extent = stream * table_extents / streams;
                let end_extent = (stream + 1) * table_extents / streams;
                Box::new(DssStream {
                    name: format!("dss/{stream}"),
                    process: ProcessId(stream as u32 + 1),
                    config: self.clone(),
                    luns: luns as u64,
                    share_start_bytes: first_extent * self.extent_bytes,
                    share_bytes: (end_extent - first_extent) * self.extent_bytes,
                    position_bytes: 0,
                    prng: prng.fork_indexed("dss-stream", stream),
                    deadline: None,
                    scan_ends_in_flight: false,
                    scans: 0,
                    calls: Syscalls::default(),
                }) as Box<dyn Issuer>
            })
            .collect();
        Ok(WorkloadPlan {
            files,
            phases: vec![PhasePlan { name: "dss".to_owned(), issuers, stonewall: false }],
        })
    }
}

/// One parallel query slave.
#[derive(Debug)]
struct DssStream {
    name: String,
    process: ProcessId,
    config: DssConfig,
    luns: u64,
    /// Where its share starts in the table's logical order, in bytes.
    share_start_bytes: u64,
    share_bytes: u64,
    /// The next read, relative to the share's start.
    position_bytes: u64,
    prng: Prng,
    deadline: Option<Instant>,
    /// The read in flight is the last of a pass over the share.
    scan_ends_in_flight: bool,
    scans: u64,
    calls: Syscalls,
}

impl Issuer for DssStream {
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
        let runtime = self.config.runtime;
        let deadline = *self.deadline.get_or_insert_with(|| now.saturating_add(runtime));
        if now >= deadline {
            return Poll::Done;
        }
        let config = &self.config;
        let multiples = config.max_read_bytes / config.min_read_bytes;
        let drawn_bytes = config.min_read_bytes * self.prng.range_inclusive(1, multiples);
        let logical_bytes = self.share_start_bytes + self.position_bytes;
        let extent = logical_bytes / config.extent_bytes;
        let within_extent_bytes = logical_bytes % config.extent_bytes;
        // Positions are multiples of the smallest read and so is the extent, so a read cut at
        // the extent's end is still a multiple of the smallest read.
        let size_bytes = drawn_bytes.min(config.extent_bytes - within_extent_bytes);
        let lun = (extent % self.luns) as usize;
        let offset_bytes = extent / self.luns * config.extent_bytes + within_extent_bytes;
        self.position_bytes += size_bytes;
        if self.position_bytes == self.share_bytes {
            self.position_bytes = 0;
            self.scan_ends_in_flight = true;
        }
        self.calls.call(IoKind::Read, Place::File(lun), offset_bytes, size_bytes, config.direct)
    }

    fn complete(&mut self, _now: Instant, io: IoId) {
        self.calls.returned(io);
        if self.scan_ends_in_flight {
            self.scan_ends_in_flight = false;
            self.scans += 1;
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("scans", self.scans)]
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::testing::{Record, Run, parse_error, plan, plan_error, run};

    fn targets() -> Vec<Target> {
        (0..2).map(|i| Target { name: format!("lun{i}"), capacity_bytes: 1 << 30 }).collect()
    }

    fn dss(text: &str) -> Run {
        run(plan(text, &targets()), |_| Duration::from_micros(100))
    }

    /// A record's position in the table's logical order, for 1 MiB extents over 2 LUNs.
    fn logical_bytes(record: &Record) -> u64 {
        let Place::File(lun) = record.io.place else { panic!("dss reads files") };
        let extent = record.io.offset_bytes >> 20;
        ((extent * 2 + lun as u64) << 20) + record.io.offset_bytes % (1 << 20)
    }

    // Proves read sizes stay in the range, are multiples of its minimum, all of them occur,
    // and every read is a direct read of a datafile.
    #[test]
    fn sizes_in_range_and_multiples_of_the_minimum() {
        let run = dss("dss:streams=2,size=16m,runtime=50ms");
        let records = run.phase(0);
        let sizes: BTreeSet<u64> = records.iter().map(|r| r.io.size_bytes >> 10).collect();
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [32, 64, 96, 128, 160, 192, 224, 256]);
        assert!(records.iter().all(|r| r.io.kind == IoKind::Read && r.io.direct));
        assert!(records.iter().all(|r| r.in_flight == 1));
    }

    // Proves each stream reads its share sequentially in the table's logical order, wrapping
    // to the share's start, and counts one scan per pass.
    #[test]
    fn streams_scan_their_shares_sequentially_and_count_scans() {
        // 2 streams over 2 x 4 MiB: each share is 4 extents (4 MiB), read in 128k..256k steps.
        let run = dss("dss:streams=2,size=4m,bsrange=128k-256k,runtime=100ms");
        for stream in 0..2u64 {
            let records: Vec<Record> =
                run.phase(0).into_iter().filter(|r| r.issuer as u64 == stream).collect();
            let share_start = stream * (4 << 20);
            let mut expected = share_start;
            let mut passes = 0;
            for record in &records {
                let at = logical_bytes(record);
                assert_eq!(at, expected, "stream {stream} jumped");
                assert!(at % (1 << 20) + record.io.size_bytes <= 1 << 20, "crossed an extent");
                expected = at + record.io.size_bytes;
                if expected == share_start + (4 << 20) {
                    expected = share_start;
                    passes += 1;
                }
            }
            assert!(passes >= 2, "stream {stream} made {passes} passes");
        }
        let passes_of_both: u64 = {
            let mut passes = 0;
            for record in run.phase(0) {
                let stream_end = (record.issuer as u64 + 1) * (4 << 20);
                if logical_bytes(&record) + record.io.size_bytes == stream_end {
                    passes += 1;
                }
            }
            passes
        };
        assert_eq!(run.counter(0, "scans"), passes_of_both);
    }

    // Proves the extents stripe over the LUNs: a share's consecutive extents alternate LUNs.
    #[test]
    fn extents_alternate_luns() {
        let run = dss("dss:streams=1,size=4m,bsrange=256k-256k,runtime=10ms");
        let places: Vec<Place> =
            run.phase(0).iter().step_by(4).take(4).map(|r| r.io.place).collect();
        assert_eq!(places, [0, 1, 0, 1].map(Place::File));
    }

    // Proves bad input names the key: a malformed or inverted range, an extent that does not
    // fit the range, a size that is not whole extents, more streams than extents.
    #[test]
    fn bad_input_names_the_key() {
        assert!(parse_error("dss:streams=0").contains("streams=0 is not valid"));
        assert!(parse_error("dss:bsrange=256k-32k").contains("bsrange: needs 0 < MIN <= MAX"));
        assert!(parse_error("dss:bsrange=lots").contains("bsrange: `lots` is not MIN-MAX"));
        assert!(parse_error("dss:bsrange=1000-2000").contains("bsrange: 1000 bytes"));
        assert!(parse_error("dss:extent=128k").contains("extent: 131072 bytes must be"));
        assert!(parse_error("dss:size=1536k").contains("size: 1572864 bytes is not a whole"));
        let plan_error = |text: &str| plan_error(text, &targets());
        assert!(plan_error("dss:streams=5,size=2m").contains("streams: 5 streams cannot share"));
        assert!(plan_error("dss:size=2g").contains("size: the files on lun0"));
        assert!(plan_error("dss:luns=3").contains("luns: 3 devices asked for"));
    }
}
