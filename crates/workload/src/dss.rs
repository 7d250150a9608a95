//! `dss`: decision support, the study's Oracle DSS load: a full table scan by parallel query
//! slaves issuing direct-path multiblock reads of 32–256 KiB
//! (`/work/shared/specs/workload-mechanisms.md` §1.1, §1.8, §6).
//!
//! Oracle 10g runs a parallel scan with DOP slave processes (P000, P001, …), each its own OS
//! process and I/O context (§1.1). A slave reads its part of the table with `direct path
//! read`: multiblock reads into its own memory (not the buffer cache), submitted with
//! `io_submit` when `disk_asynch_io` and the file allow it, so that a few reads are in flight
//! while it works on the blocks already read; it waits only when the next block it needs is
//! not read yet (ORA-REF "direct path read", §1.1). With `filesystemio_options=setall` the
//! datafiles are O_DIRECT and the reads truly asynchronous (§1.2); with `none` they go through
//! the page cache, and AIO on a buffered ext3 file degrades to a synchronous call inside
//! `io_submit` (LSE-AIO, §1.2), so each slave has one read in flight.
//!
//! The table fills a datafile of `size` bytes on each of the first `luns` devices. Its logical
//! order is striped over the datafiles in `extent`-sized extents, round robin, the way a
//! locally managed tablespace hands out uniform extents across its datafiles: logical extent
//! `e` is extent `e / luns` of LUN `e mod luns`. The scan splits the table's extents into
//! `streams` contiguous block-range granules, one per slave; each slave reads its granule from
//! start to end in reads of random sizes from `bsrange` (multiples of its minimum — the
//! multiblock read count times the block — never crossing an extent), consuming them in order,
//! and when it reaches the end starts over, counting one `scans`. Slaves stop starting reads
//! once `runtime` has passed and finish when their reads in flight have returned.
//!
//! # Plan
//!
//! * Files `dss.data.L` of `size` bytes on device L for each of the first `luns` devices, all
//!   existing before the run.
//! * One phase `dss`, one issuer per slave (`dss/S`, process id S + 1), random streams forked
//!   as `dss-stream` S. Slave S's granule is logical extents `S × E / streams` up to
//!   `(S + 1) × E / streams`, E being the table's extents.
//! * A slave keeps up to `depth` reads in flight when `direct` and `async` are both on, else
//!   one. A read's buffer is free again only once the slave has consumed it, which it does in
//!   the table's order: a read that returns before an older one holds its slot until the older
//!   one returns (the slave waits for the block it needs next, not for any completion).
//!
//! # Keys
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `streams` | 8 | degree of parallelism: query slaves, each a process, 1..=1024 (§1.1: CPU_COUNT 4 × PARALLEL_THREADS_PER_CPU 2) |
//! | `bsrange` | 32k-256k | `MIN-MAX` read sizes, drawn uniformly among multiples of MIN (§1.8: MBRC 4–32 at 8 KiB) |
//! | `extent` | 1m | bytes per extent, a multiple of MIN and at least MAX |
//! | `luns` | all devices | datafiles on the first N devices, one each |
//! | `size` | 1g | bytes of table per datafile, a whole number of extents |
//! | `runtime` | 60s | how long slaves start reads, s if bare |
//! | `direct` | 1 | O_DIRECT datafiles (`filesystemio_options=setall`); 0 is `none` |
//! | `async` | 1 | `disk_asynch_io` (TRUE by default, §1.1); only effective with `direct` |
//! | `depth` | 2 | async reads in flight per slave, 1..=8 (§1.1: 2–4 typical, 1–8 seen **[unverified]**) |
//!
//! The study's `dss:streams=4,bsrange=32k-256k,size=1g,runtime=60s` keeps its meaning:
//! `streams` was always the number of slaves; it now also sets how many processes have reads in
//! flight at once, `streams × depth` reads in all.
//!
//! # Differences from the real tool (deviations from an Oracle DSS load)
//!
//! * Only the scans' reads: no sorts, hash joins or temporary-tablespace writes, and no query
//!   coordinator; a query is not a unit here, `scans` counts each slave's passes over its
//!   granule, and a slave starts over instead of the next query starting.
//! * One granule per slave, fixed at the start. Oracle cuts a table into more block-range
//!   granules than slaves and the coordinator hands them out as slaves finish (§1.8 "its own
//!   range (granules)"); how many granules 10g makes is not in the spec.
//! * Oracle sizes multiblock reads by `db_file_multiblock_read_count` (one size for a query,
//!   cut short at extent ends and by blocks already cached); here each read's size is drawn
//!   uniformly from the range, as the study's description gives only the range.
//! * `depth` is a constant: Oracle's number of direct-read slots is hidden and may grow during a
//!   scan **[unverified]**; the default is the low end of the spec's typical range.
//! * No CPU time per block between reads: a slave consumes a block as soon as it is read.
//! * A serial (non-parallel) scan — one session, `db file scattered read` through the buffer
//!   cache, one sync read at a time (§1.8) — is `streams=1,async=0,direct=0` only
//!   approximately: the page cache here is the host's, not Oracle's buffer cache.

use std::collections::VecDeque;

use elevator_core::{
    Duration, Instant, KeyKind, KeySpec, ParamError, Params, Prng, ProcessId, RequestFlags,
};

use crate::process::{check_files_fit, check_whole_chunks, device_count, parse_block_range};
use crate::{FileSpec, Io, IoId, IoKind, Issuer, PhasePlan, Place, Poll, Target, WorkloadPlan};

/// One line for `elevator list workloads`.
pub const SUMMARY: &str = "DSS database: parallel query slaves, async direct 32-256k reads over \
                           striped datafiles";

const MAX_TIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// The keys of `dss`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "streams",
        kind: KeyKind::Integer { min: 1, max: 1024 },
        // Oracle's default degree of parallelism on the study's database server: CPU_COUNT 4
        // (2 CPUs with Hyper-Threading) x PARALLEL_THREADS_PER_CPU 2 (spec §1.1).
        default: "8",
        help: "degree of parallelism: query slaves, each a process scanning its granule",
    },
    KeySpec {
        key: "bsrange",
        kind: KeyKind::Text,
        default: "32k-256k",
        help: "MIN-MAX multiblock read sizes, drawn uniformly among multiples of MIN",
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
        help: "how long slaves start reads",
    },
    KeySpec {
        key: "direct",
        kind: KeyKind::Flag,
        default: "1",
        help: "O_DIRECT datafiles (filesystemio_options=setall; 0 is none)",
    },
    KeySpec {
        key: "async",
        kind: KeyKind::Flag,
        default: "1",
        help: "asynchronous direct reads (disk_asynch_io); buffered files read synchronously",
    },
    KeySpec {
        key: "depth",
        kind: KeyKind::Integer { min: 1, max: 8 },
        // Spec §1.1: "a few per slave: 2-4 typical [unverified, range 1-8]"; the low end.
        default: "2",
        help: "asynchronous reads in flight per slave",
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
    /// Reads a slave keeps in flight: `depth` with async direct I/O, else 1.
    reads_in_flight: usize,
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
        let direct = params.flag("direct");
        // Kernel AIO on a buffered ext3 file runs synchronously inside io_submit (spec §1.2,
        // LSE-AIO), so without O_DIRECT a slave has one read in flight whatever disk_asynch_io
        // says.
        let reads_in_flight =
            if direct && params.flag("async") { params.integer("depth") as usize } else { 1 };
        Ok(DssConfig {
            streams: params.integer("streams") as u32,
            min_read_bytes,
            max_read_bytes,
            extent_bytes,
            size_bytes,
            runtime: params.time("runtime"),
            direct,
            reads_in_flight,
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
                format!("{streams} slaves cannot share a table of {table_extents} extents"),
            ));
        }
        let issuers = (0..streams)
            .map(|stream| {
                let first_extent = stream * table_extents / streams;
                let end_extent = (stream + 1) * table_extents / streams;
                Box::new(QuerySlave {
                    name: format!("dss/{stream}"),
                    process: ProcessId(stream as u32 + 1),
                    config: self.clone(),
                    luns: luns as u64,
                    granule_start_bytes: first_extent * self.extent_bytes,
                    granule_bytes: (end_extent - first_extent) * self.extent_bytes,
                    position_bytes: 0,
                    prng: prng.fork_indexed("dss-stream", stream),
                    deadline: None,
                    slots: VecDeque::new(),
                    next_id: 0,
                    scans: 0,
                }) as Box<dyn Issuer>
            })
            .collect();
        Ok(WorkloadPlan {
            files,
            phases: vec![PhasePlan { name: "dss".to_owned(), issuers, stonewall: false }],
        })
    }
}

/// A read a slave has submitted and not consumed yet.
#[derive(Clone, Copy, Debug)]
struct Slot {
    id: IoId,
    returned: bool,
    /// It is the last read of a pass over the granule.
    ends_scan: bool,
}

/// One parallel query slave (P00n).
#[derive(Debug)]
struct QuerySlave {
    name: String,
    process: ProcessId,
    config: DssConfig,
    luns: u64,
    /// Where its granule starts in the table's logical order, in bytes.
    granule_start_bytes: u64,
    granule_bytes: u64,
    /// The next read, relative to the granule's start.
    position_bytes: u64,
    prng: Prng,
    deadline: Option<Instant>,
    /// Its reads in flight or returned but not yet consumed, oldest first: the buffers of its
    /// direct reads.
    slots: VecDeque<Slot>,
    next_id: u64,
    scans: u64,
}

impl QuerySlave {
    /// The next multiblock read of its granule.
    fn next_read(&mut self) -> Poll {
        let config = &self.config;
        let multiples = config.max_read_bytes / config.min_read_bytes;
        let drawn_bytes = config.min_read_bytes * self.prng.range_inclusive(1, multiples);
        let logical_bytes = self.granule_start_bytes + self.position_bytes;
        let extent = logical_bytes / config.extent_bytes;
        let within_extent_bytes = logical_bytes % config.extent_bytes;
        // Positions are multiples of the smallest read and so is the extent, so a read cut at
        // the extent's end is still a multiple of the smallest read.
        let size_bytes = drawn_bytes.min(config.extent_bytes - within_extent_bytes);
        let lun = (extent % self.luns) as usize;
        let offset_bytes = extent / self.luns * config.extent_bytes + within_extent_bytes;
        self.position_bytes += size_bytes;
        let ends_scan = self.position_bytes == self.granule_bytes;
        if ends_scan {
            self.position_bytes = 0;
        }
        let id = IoId(self.next_id);
        self.next_id += 1;
        self.slots.push_back(Slot { id, returned: false, ends_scan });
        Poll::Submit(Io {
            id,
            kind: IoKind::Read,
            place: Place::File(lun),
            offset_bytes,
            size_bytes,
            direct: config.direct,
            // Someone waits for every read: Linux marks reads synchronous.
            flags: RequestFlags::SYNC,
        })
    }
}

impl Issuer for QuerySlave {
    fn name(&self) -> &str {
        &self.name
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn poll(&mut self, now: Instant) -> Poll {
        let runtime = self.config.runtime;
        let deadline = *self.deadline.get_or_insert_with(|| now.saturating_add(runtime));
        if now >= deadline {
            return if self.slots.is_empty() { Poll::Done } else { Poll::Wait };
        }
        if self.slots.len() < self.config.reads_in_flight {
            return self.next_read();
        }
        Poll::Wait
    }

    fn complete(&mut self, _now: Instant, io: IoId) {
        let slot = self.slots.iter_mut().find(|slot| slot.id == io);
        let slot = slot.expect("a completion of a read the slave did not submit");
        assert!(!slot.returned, "a read returned twice");
        slot.returned = true;
        // The slave consumes its blocks in the table's order: every returned read at the head
        // frees its buffer; one behind a read still in flight waits for it.
        while self.slots.front().is_some_and(|slot| slot.returned) {
            let consumed = self.slots.pop_front().expect("checked above");
            if consumed.ends_scan {
                self.scans += 1;
            }
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("scans", self.scans)]
    }

    fn finishing(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|deadline| now >= deadline)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::testing::{Record, Run, parse_error, plan, plan_error, run};

    fn targets() -> Vec<Target> {
        (0..2)
            .map(|i| Target { name: format!("lun{i}"), capacity_bytes: 1 << 30, zones: None })
            .collect()
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
        assert!(records.iter().all(|r| r.io.flags == RequestFlags::SYNC));
    }

    // Proves the parallel scan's concurrency: every one of N slaves, each its own process,
    // has `depth` direct reads of the range's sizes in flight at once (2 by default), so the
    // device sees N x depth reads outstanding — never more per slave.
    #[test]
    fn every_slave_keeps_depth_reads_in_flight() {
        for (text, depth) in [
            ("dss:streams=4,size=16m,runtime=20ms", 2),
            ("dss:streams=4,size=16m,runtime=20ms,depth=4", 4),
        ] {
            let run = dss(text);
            let records = run.phase(0);
            for slave in 0..4 {
                let mine: Vec<&Record> = records.iter().filter(|r| r.issuer == slave).collect();
                let peak = mine.iter().map(|r| r.in_flight).max().unwrap();
                assert_eq!(peak, depth, "{text}: slave {slave}");
            }
            // At the start, before any completion, all 4 x depth reads were submitted.
            let at_start = records.iter().filter(|r| r.submitted == Instant::ZERO).count();
            assert_eq!(at_start, 4 * depth, "{text}");
            assert!(records.iter().all(|r| (32 << 10..=256 << 10).contains(&r.io.size_bytes)));
        }
        let plan = plan("dss:streams=3,size=16m", &targets());
        let processes: Vec<u32> = plan.phases[0].issuers.iter().map(|i| i.process().0).collect();
        assert_eq!(processes, [1, 2, 3], "one process per slave");
    }

    // Proves without async direct I/O a slave has one read in flight: buffered datafiles
    // (filesystemio_options=none, where AIO runs synchronously) and disk_asynch_io off alike.
    #[test]
    fn one_read_in_flight_without_async_direct_io() {
        for text in [
            "dss:streams=2,size=16m,runtime=20ms,direct=0,depth=4",
            "dss:streams=2,size=16m,runtime=20ms,async=0,depth=4",
        ] {
            let records = dss(text).records;
            assert!(records.iter().all(|r| r.in_flight == 1), "{text}");
        }
        assert!(
            dss("dss:streams=1,size=4m,runtime=5ms,direct=0").records.iter().all(|r| !r.io.direct)
        );
    }

    // Proves a slave consumes its reads in table order: a read that returns before an older
    // one keeps its buffer until the older returns, so no new read starts while the oldest is
    // still out, however many younger ones are back.
    #[test]
    fn a_slave_waits_for_the_block_it_needs_next() {
        // The granule's first read (offset 0 of LUN 0) takes 10 ms, every other 100 us.
        let plan = plan("dss:streams=1,size=4m,bsrange=64k-64k,runtime=30ms", &targets());
        let slow = |io: &Io| {
            let first = io.offset_bytes == 0 && io.place == Place::File(0);
            Duration::from_micros(if first { 10_000 } else { 100 })
        };
        let records = run(plan, slow).records;
        assert_eq!(records[0].io.offset_bytes, 0);
        assert_eq!(records[1].submitted, Instant::ZERO, "two reads in flight from the start");
        assert_eq!(records[1].completed, Instant::from_nanos(100_000));
        assert_eq!(
            records[2].submitted, records[0].completed,
            "the third read waits for the oldest, not for the first completion"
        );
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
        let run = dss("dss:streams=1,size=4m,bsrange=256k-256k,runtime=10ms,depth=1");
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
        assert!(parse_error("dss:depth=9").contains("depth=9 is not valid"));
        assert!(parse_error("dss:extent=128k").contains("extent: 131072 bytes must be"));
        assert!(parse_error("dss:size=1536k").contains("size: 1572864 bytes is not a whole"));
        let plan_error = |text: &str| plan_error(text, &targets());
        assert!(plan_error("dss:streams=5,size=2m").contains("streams: 5 slaves cannot share"));
        assert!(plan_error("dss:size=2g").contains("size: the files on lun0"));
        assert!(plan_error("dss:luns=3").contains("luns: 3 devices asked for"));
    }
}
