//! The host model through the whole pipeline: page cache, read-ahead, write-back, throttling,
//! fsync, file layout, and what the schedulers see of them.

mod common;

use common::Script;
use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, HostSpec, SimConfig, run_plan};
use elevator_workload::{FileSpec, IoKind, Issuer, PhasePlan, Place, WorkloadPlan};

fn phase(name: &str, issuers: Vec<Script>) -> PhasePlan {
    PhasePlan {
        name: name.to_owned(),
        issuers: issuers.into_iter().map(|s| Box::new(s) as Box<dyn Issuer>).collect(),
        stonewall: false,
    }
}

fn simulate(
    device: &str,
    host: &str,
    scheduler: &str,
    files: Vec<FileSpec>,
    phases: Vec<PhasePlan>,
) -> Run {
    let mut config = SimConfig::new(1, DeviceSpec::parse(device).unwrap());
    config.host = HostSpec::parse(host).unwrap();
    config.check_invariants = true;
    let scheduler = SchedulerSpec::parse(scheduler).unwrap();
    run_plan(&config, &scheduler, WorkloadPlan { files, phases }, "script", &[]).unwrap()
}

/// noop on a 2.6 host; on 2.4, which has one elevator, `elevator_linus`.
fn one_elevator(host: &HostSpec) -> &'static str {
    if host.kernel().base() == elevator_core::KernelBase::V2_4_21 {
        "elevator_linus"
    } else {
        "noop"
    }
}

fn file(device: usize, size_bytes: u64) -> FileSpec {
    FileSpec { name: "f".into(), device, size_bytes }
}

const MIB: u64 = 1 << 20;

fn host_stat(run: &Run, name: &str) -> u64 {
    run.host_stats.get(name).copied().unwrap_or(0)
}

// Proves a re-read of cached data does no device I/O: reading 64 MiB twice costs the device
// exactly what reading it once does, and the second pass is all cache hits at memory speed.
#[test]
fn a_cached_reread_does_no_device_io() {
    let read = |p| Script::sequential(p, IoKind::Read, Place::File(0), 0, MIB, 64);
    let once = simulate(
        "hdd",
        "host",
        "deadline",
        vec![file(0, 64 * MIB)],
        vec![phase("read", vec![read(1)])],
    );
    let twice = simulate(
        "hdd",
        "host",
        "deadline",
        vec![file(0, 64 * MIB)],
        vec![phase("read", vec![read(1)]), phase("reread", vec![read(1)])],
    );
    assert_eq!(twice.device_stats.requests, once.device_stats.requests);
    // Every page of the second pass is a hit. (The first pass misses only the pages not yet
    // up to date when its call began: read-ahead brings some in before their call.)
    assert_eq!(host_stat(&twice, "cache_miss_pages"), host_stat(&once, "cache_miss_pages"));
    assert_eq!(
        host_stat(&twice, "cache_hit_pages") - host_stat(&once, "cache_hit_pages"),
        64 * MIB / 4096
    );
    let reread = &twice.phases[1];
    assert!(reread.throughput_bytes_per_s > 1e9, "memory speed: {}", reread.throughput_bytes_per_s);
}

// Proves 4 KiB sequential reads reach the disk as read-ahead windows: with read_ahead_kb=128
// the device sees about one 128 KiB request per 32 reads, and reads run at the media rate.
#[test]
fn sequential_small_reads_become_read_ahead_requests() {
    let reads = Script::sequential(1, IoKind::Read, Place::File(0), 0, 4096, 4096);
    let run =
        simulate("hdd", "host", "noop", vec![file(0, 16 * MIB)], vec![phase("read", vec![reads])]);
    let requests = run.device_stats.requests;
    // One request per window, plus one more per 4 MiB: ext3's indirect block ends a bio.
    assert!(
        requests <= 16 * MIB / (128 << 10) + 16 * MIB / (4 * MIB) + 4,
        "{requests} requests for 16 MiB"
    );
    assert!(host_stat(&run, "read_ahead_pages") > 3000);
    assert!(
        run.phases[0].throughput_bytes_per_s > 55e6,
        "{}",
        run.phases[0].throughput_bytes_per_s
    );
}

// Proves random reads trigger no read-ahead: every 4 KiB read is one 4 KiB request.
#[test]
fn random_reads_get_no_read_ahead() {
    let offsets = [913u64, 17, 4444, 2020, 77, 3001, 650, 1999].map(|block| block * 1_048_576);
    let reads =
        Script::new(1, offsets.iter().map(|&offset| (IoKind::Read, Place::File(0), offset, 4096)));
    let run = simulate(
        "hdd",
        "host",
        "noop",
        vec![file(0, 5000 * MIB)],
        vec![phase("read", vec![reads])],
    );
    assert_eq!(run.device_stats.requests, 8);
    assert_eq!(host_stat(&run, "read_ahead_pages"), 0);
}

// Proves the dirty limit: a writer of 512 MiB into a 256 MiB page cache (dirty_ratio 40) is
// throttled and never holds much more than the limit dirty or under write-back.
#[test]
fn dirty_memory_stays_under_dirty_ratio_and_writers_are_throttled() {
    let writes = Script::sequential(1, IoKind::Write, Place::File(0), 0, MIB, 512);
    let run = simulate(
        "hdd",
        "host:ram=320m,reserve=64m",
        "deadline",
        vec![file(0, 0)],
        vec![phase("write", vec![writes])],
    );
    let limit = host_stat(&run, "dirty_bytes_limit");
    let peak = host_stat(&run, "dirty_bytes_peak");
    // The reserve (64 MiB) counts as mapped memory: 25 % of the 256 MiB cache, so the
    // kernel's clamp min(40, unmapped 75 % / 2) gives 37 % (host-mechanisms.md §3.2).
    assert_eq!(limit, (256 * MIB / 4096) * 37 / 100 * 4096);
    // Overshoot of at most one ratelimit (65536 pages / (2 CPUs · 32) = 1024 pages, 4 MiB:
    // below the limit a writer balances only that often, §3.3) plus one write's megabyte.
    assert!(peak <= limit + 4 * MIB + MIB, "peak {peak} over limit {limit}");
    assert!(host_stat(&run, "throttled_writes") > 0);
    // Throttled, the writer runs at about the disk's rate, not memory's.
    assert!(run.phases[0].throughput_bytes_per_s < 150e6);
}

// Proves fsync returns only once its data is on the device: buffered writes of 8 MiB return
// at memory speed, the fsync after them takes as long as the disk needs to write 8 MiB.
#[test]
fn fsync_returns_after_the_data_is_on_the_device() {
    let mut calls: Vec<_> = (0..8).map(|i| (IoKind::Write, Place::File(0), i * MIB, MIB)).collect();
    calls.push((IoKind::Sync, Place::File(0), 0, 0));
    let run = simulate(
        "hdd:write_cache=0",
        "host",
        "deadline",
        vec![file(0, 0)],
        vec![phase("write", vec![Script::new(1, calls)])],
    );
    let phase = &run.phases[0];
    assert_eq!(phase.ops, 9);
    // The slowest call is the fsync; 8 MiB at ~65 MB/s takes over 100 ms.
    assert!(phase.latency_ns.max > 100_000_000, "{}", phase.latency_ns.max);
    assert!(phase.latency_ns.p50 < 5_000_000, "writes return from memory");
    assert!(run.device_stats.requests > 0);
}

// Proves concurrent writers' files interleave on disk and write-back then sends the head
// between them: noop, in arrival order, moves the head farther than deadline's sweep.
#[test]
fn ten_buffered_writers_interleave_and_noop_seeks_farther_than_deadline() {
    let writers = || {
        (0..10u32)
            .map(|i| {
                Script::sequential(i + 1, IoKind::Write, Place::File(i as usize), 0, 512 << 10, 64)
            })
            .collect()
    };
    let files: Vec<_> = (0..10).map(|_| file(0, 0)).collect();
    let host = "host:ram=512m";
    let noop = simulate("hdd", host, "noop", files.clone(), vec![phase("write", writers())]);
    let deadline = simulate("hdd", host, "deadline", files, vec![phase("write", writers())]);
    let distance = |run: &Run| run.device_stats.seek_distance_sectors;
    assert!(
        distance(&noop) > distance(&deadline),
        "noop {} vs deadline {}",
        distance(&noop),
        distance(&deadline)
    );
}

// Proves what cfq sees: write-back lands in its async queues and reads in processes' sync
// queues.
#[test]
fn cfq_files_write_back_as_async_and_reads_as_sync() {
    let writer = Script::sequential(1, IoKind::Write, Place::File(0), 0, MIB, 64);
    let mut calls: Vec<_> = (0..32).map(|i| (IoKind::Read, Place::File(1), i * MIB, MIB)).collect();
    calls.push((IoKind::Sync, Place::File(0), 0, 0));
    let reader = Script::new(2, calls);
    let run = simulate(
        "hdd",
        "host",
        "cfq",
        vec![file(0, 0), file(0, 64 * MIB)],
        vec![phase("mixed", vec![writer, reader])],
    );
    let counter = |name: &str| run.scheduler_stats.counters[name];
    assert!(counter("sync_requests") > 0, "reads go to sync queues");
    assert!(counter("async_requests") > 0, "write-back goes to async queues");

    let writes_only = Script::sequential(1, IoKind::Write, Place::File(0), 0, MIB, 64);
    let run =
        simulate("hdd", "host", "cfq", vec![file(0, 0)], vec![phase("write", vec![writes_only])]);
    assert_eq!(run.scheduler_stats.counters["sync_requests"], 0, "write-back is never sync");
}

// Proves the filesystems' layouts reach the disk: two files written at once in 64 KiB calls
// and read back one after the other. Vanilla 2.6.9's ext3 (no reservation windows)
// interleaves them call by call, so reading one back jumps over the other's blocks every
// 64 KiB: many more, smaller requests and a slower read than 2.6.18's ext3, whose windows
// keep ≈ 4 MiB runs, or XFS, which allocates each file's dirty range as one extent at
// write-back.
#[test]
fn files_written_together_lay_out_as_their_filesystem_does() {
    let read_back = |host: &str| {
        let writers = vec![
            Script::sequential(1, IoKind::Write, Place::File(0), 0, 64 << 10, 256),
            Script::sequential(17, IoKind::Write, Place::File(1), 0, 64 << 10, 256),
        ];
        let reader = Script::sequential(3, IoKind::Read, Place::File(0), 0, MIB, 16);
        let run = simulate(
            "hdd",
            host,
            // One scheduler with hash merging for all three hosts, so that only the layout
            // differs (a bare `noop` would be 2.6.9's on the vanilla 2.6.9 host).
            "deadline",
            vec![file(0, 0), file(0, 0)],
            vec![
                phase("write", writers),
                phase("drop", vec![Script::new(4, [(IoKind::DropCaches, Place::Device(0), 0, 0)])]),
                phase("read", vec![reader]),
            ],
        );
        let read = &run.phases[2];
        assert_eq!(read.bytes, 16 * MIB);
        (read.throughput_bytes_per_s, run.device_stats.requests)
    };
    let vanilla = read_back("host:kernel=2.6.9");
    let windows = read_back("host:kernel=2.6.18");
    let xfs = read_back("host:kernel=2.6.18,fs=xfs");
    assert!(vanilla.0 < windows.0, "{vanilla:?} vs {windows:?}");
    assert!(vanilla.0 < xfs.0, "{vanilla:?} vs {xfs:?}");
    // The whole run's requests: the interleaved file's writes and reads come in pieces.
    assert!(vanilla.1 > 3 * windows.1, "{vanilla:?} vs {windows:?}");
}

// Proves ext3's indirect blocks end a sequential read's bios every 4 MiB while XFS maps
// whole extents: the same 64 MiB file, laid out before the run and read in 1 MiB calls, takes
// at least one more request per 4 MiB on ext3 than on XFS.
#[test]
fn ext3_reads_break_at_indirect_blocks_and_xfs_reads_do_not() {
    let requests = |host: &str| {
        let reader = Script::sequential(1, IoKind::Read, Place::File(0), 0, MIB, 64);
        let run = simulate(
            "hdd",
            host,
            "noop",
            vec![file(0, 64 * MIB)],
            vec![phase("read", vec![reader])],
        );
        assert_eq!(run.phases[0].bytes, 64 * MIB);
        run.device_stats.requests
    };
    let (ext3, xfs) = (requests("host"), requests("host:fs=xfs"));
    assert!(ext3 >= xfs + 64 / 4, "ext3 {ext3} vs xfs {xfs} requests");
}

// Proves the same seed gives the same report, byte for byte, with buffered I/O too.
#[test]
fn buffered_runs_are_deterministic() {
    let make = || {
        let writers = (0..3u32)
            .map(|i| Script::sequential(i + 1, IoKind::Write, Place::File(i as usize), 0, MIB, 32))
            .collect();
        simulate(
            "hdd",
            "host:ram=256m,reserve=64m",
            "cfq",
            (0..3).map(|_| file(0, 0)).collect(),
            vec![phase("write", writers)],
        )
    };
    assert_eq!(serde_json::to_string(&make()).unwrap(), serde_json::to_string(&make()).unwrap());
}

// Proves a reader survives memory too small for what it read ahead, as the kernel's does:
// twenty readers with 8 MiB read-ahead windows (setra 16386) in a 64 MiB page cache each read
// 4 MiB, while their windows bring in 4 MiB more each (80 MiB in all); reading on, they find
// read-ahead pages evicted (by the others' arrivals) before they got there and read those
// pages again, alone (counted), and every reader gets all its bytes instead of waiting
// forever for pages that are gone.
#[test]
fn readers_reread_pages_evicted_before_use() {
    const READERS: u32 = 20;
    const CALL: u64 = 4 * MIB;
    let files = (0..READERS).map(|_| file(0, 32 * MIB)).collect();
    let readers = |first: u64, calls: u64| {
        (0..READERS)
            .map(|i| {
                let place = Place::File(i as usize);
                Script::sequential(i + 1, IoKind::Read, place, first * CALL, CALL, calls)
            })
            .collect()
    };
    let mut config = SimConfig::new(1, DeviceSpec::parse("hdd").unwrap());
    config.host = HostSpec::parse("host:ram=64m,reserve=0").unwrap();
    config.queue.read_ahead_kb = 8192;
    config.check_invariants = true;
    let phases = vec![phase("start", readers(0, 1)), phase("rest", readers(1, 7))];
    let plan = WorkloadPlan { files, phases };
    let scheduler = SchedulerSpec::parse("deadline").unwrap();
    let run = run_plan(&config, &scheduler, plan, "script", &[]).unwrap();
    assert_eq!(run.phases[1].bytes, u64::from(READERS) * 28 * MIB);
    assert!(run.phases[1].issuers.iter().all(|issuer| issuer.bytes == 28 * MIB));
    assert!(host_stat(&run, "reread_evicted_pages") > 0, "{:?}", run.host_stats);
    assert!(host_stat(&run, "single_page_reads") >= host_stat(&run, "reread_evicted_pages"));
}

/// One sequential reader of a 16 MiB file in `call` byte `read()`s on `kernel`, with `readers`
/// such readers (each its own file) at once; the device's requests and the host's counters.
fn sequential_readers(kernel: &str, readers: u32, file_bytes: u64, call: u64) -> Run {
    let files = (0..readers).map(|_| file(0, file_bytes)).collect();
    let issuers = (0..readers)
        .map(|i| {
            let calls = file_bytes / call;
            Script::sequential(i + 1, IoKind::Read, Place::File(i as usize), 0, call, calls)
        })
        .collect();
    let host = format!("host:kernel={kernel}");
    let scheduler = one_elevator(&HostSpec::parse(&host).unwrap());
    simulate("hdd", &host, scheduler, files, vec![phase("read", issuers)])
}

// Proves the two kernels' read-ahead reach the device differently for the same sequential
// reader (4 KiB reads, 128 KiB maximum): 2.6.9 opens with a 64 KiB window, 2.6.18 with
// 16 KiB, so 2.6.18 makes more, smaller requests at the start — while both read every page
// once, all of it through read-ahead, none alone.
#[test]
fn kernels_read_ahead_differently() {
    // On XFS, whose whole-extent mapping ends no bio of its own: ext3's first indirect block
    // (after logical block 11, §1.2) would split 2.6.9's first window in two.
    let old = sequential_readers("2.6.9,fs=xfs", 1, 256 << 10, 4096);
    let new = sequential_readers("2.6.18,fs=xfs", 1, 256 << 10, 4096);
    for run in [&old, &new] {
        assert_eq!(host_stat(run, "read_ahead_pages"), 64, "{:?}", run.host_stats);
        assert_eq!(host_stat(run, "single_page_reads"), 0);
        assert_eq!(run.phases[0].bytes, 256 << 10);
    }
    // 2.6.9: windows of 16, 17, 25 pages and the first ahead window (the last 6 pages);
    // 2.6.18: 4, 8, 16, 32 and the last 4 — unless merging joins some of them.
    assert!(old.device_stats.requests <= 4, "2.6.9: {}", old.device_stats.requests);
    assert!(
        new.device_stats.requests > old.device_stats.requests,
        "2.6.18 {} vs 2.6.9 {}",
        new.device_stats.requests,
        old.device_stats.requests
    );
}

// Proves read congestion collapses 2.6.9 readers and not 2.6.18 ones (§1.1, §2.4): 160
// concurrent sequential readers fill the read pool past its congestion mark (113); 2.6.9
// then skips every window and reads page by page — most of its pages are read alone, its mean
// request near 4 KiB — while 2.6.18 still reads its blocking windows and only drops its
// non-blocking ahead windows, so its requests stay several pages long.
#[test]
fn read_congestion_collapses_2_6_9_readers_to_single_pages() {
    const READERS: u32 = 160;
    const FILE: u64 = 512 << 10;
    let old = sequential_readers("2.6.9", READERS, FILE, 4096);
    let new = sequential_readers("2.6.18", READERS, FILE, 4096);
    let total_pages = u64::from(READERS) * FILE / 4096;
    for run in [&old, &new] {
        assert_eq!(run.phases[0].bytes, u64::from(READERS) * FILE);
        assert!(host_stat(run, "read_ahead_dropped_pages") > 0, "{:?}", run.host_stats);
    }
    assert!(
        host_stat(&old, "single_page_reads") > total_pages / 2,
        "2.6.9 alone: {} of {total_pages}",
        host_stat(&old, "single_page_reads")
    );
    assert!(
        host_stat(&new, "single_page_reads") < total_pages / 10,
        "2.6.18 alone: {} of {total_pages}",
        host_stat(&new, "single_page_reads")
    );
    let mean_bytes = |run: &Run| run.phases[0].bytes / run.device_stats.requests;
    assert!(mean_bytes(&old) < 8 << 10, "2.6.9 mean request {} bytes", mean_bytes(&old));
    assert!(mean_bytes(&new) > 16 << 10, "2.6.18 mean request {} bytes", mean_bytes(&new));
}

// Proves buffered reads under either kernel's read-ahead give the same report for the same
// seed, byte for byte.
#[test]
fn buffered_reads_are_deterministic() {
    for kernel in ["2.6.9", "2.6.18"] {
        let run = || serde_json::to_string(&sequential_readers(kernel, 4, MIB, 12 << 10)).unwrap();
        assert_eq!(run(), run(), "{kernel}");
    }
}

// Proves throttling starts at the dirty limit, not before: on a 256 MiB page cache (limit
// ≈ 95 MiB) a 32 MiB buffered write finishes at memory speed, while a 512 MiB one runs at
// about the disk's pace because its writer writes back itself once past the limit.
#[test]
fn a_write_under_the_dirty_limit_runs_at_memory_speed_and_one_over_it_at_the_disks() {
    let run = |mib: u64| {
        let writes = Script::sequential(1, IoKind::Write, Place::File(0), 0, MIB, mib);
        simulate(
            "hdd",
            "host:ram=320m,reserve=64m",
            "deadline",
            vec![file(0, 0)],
            vec![phase("write", vec![writes])],
        )
    };
    let small = run(32);
    assert_eq!(host_stat(&small, "throttled_writes"), 0);
    assert!(
        small.phases[0].throughput_bytes_per_s > 1e9,
        "{}",
        small.phases[0].throughput_bytes_per_s
    );
    let large = run(512);
    assert!(host_stat(&large, "throttled_writes") > 0);
    assert!(
        large.phases[0].throughput_bytes_per_s < 150e6,
        "{}",
        large.phases[0].throughput_bytes_per_s
    );
}

/// `simulate` with the queue's `read_ahead_kb` set (`blockdev --setra`).
fn simulate_with_read_ahead(
    host: &str,
    read_ahead_kb: u32,
    files: Vec<FileSpec>,
    phases: Vec<PhasePlan>,
) -> Run {
    let mut config = SimConfig::new(1, DeviceSpec::parse("hdd").unwrap());
    config.host = HostSpec::parse(host).unwrap();
    config.queue.read_ahead_kb = read_ahead_kb;
    config.check_invariants = true;
    let scheduler = SchedulerSpec::parse(one_elevator(&config.host)).unwrap();
    run_plan(&config, &scheduler, WorkloadPlan { files, phases }, "script", &[]).unwrap()
}

// Proves 2.4's read-ahead through the whole host (linux-2.4-elevator.md §7.13, §6.1): 8 KiB
// random buffered reads on RHEL 3 each read 16 KiB — the page read alone plus a 3-page chunk,
// every page its own 4 KiB bio merged into one request — and `read_ahead_kb` changes nothing
// on a 2.4 host, while it does on 2.6.9.
#[test]
fn rhel3_random_8k_reads_read_16k_whatever_read_ahead_kb() {
    let offsets = [913u64, 17, 4444, 2020, 77, 3001, 650, 1999].map(|block| block * MIB);
    let reads = || {
        Script::new(1, offsets.iter().map(|&offset| (IoKind::Read, Place::File(0), offset, 8192)))
    };
    let run = |host: &str, read_ahead_kb| {
        simulate_with_read_ahead(
            host,
            read_ahead_kb,
            vec![file(0, 5000 * MIB)],
            vec![phase("read", vec![reads()])],
        )
    };
    let rhel3 = run("host:kernel=rhel3", 128);
    assert_eq!(host_stat(&rhel3, "single_page_reads"), 8);
    assert_eq!(host_stat(&rhel3, "read_ahead_pages"), 8 * 3);
    assert_eq!(rhel3.device_stats.requests, 8, "4 contiguous 4 KiB bios merge into one request");
    let setra = run("host:kernel=rhel3", 4);
    assert_eq!(setra.host_stats, rhel3.host_stats);
    assert_eq!(setra.device_stats.requests, rhel3.device_stats.requests);
    // 2.6.9 with read-ahead off (4 KiB) reads only what is asked: read_ahead_kb matters there.
    let rhel4 = run("host:kernel=rhel4", 4);
    assert_eq!(host_stat(&rhel4, "read_ahead_pages"), 0);
}

// Proves a 2.4 sequential 4 KiB reader reads the file through read-ahead chunks: page 0 alone,
// every other page read ahead, and the device sees requests of at most the chunks' size
// (32 pages, 128 KiB) however the pages merge.
#[test]
fn rhel3_sequential_reader_reads_ahead_in_chunks() {
    let run = sequential_readers("rhel3", 1, 4 * MIB, 4096);
    assert_eq!(run.phases[0].bytes, 4 * MIB);
    assert_eq!(host_stat(&run, "single_page_reads"), 1);
    assert_eq!(host_stat(&run, "read_ahead_pages"), 4 * MIB / 4096 - 1);
    // 1 + 3, 7, 13, 25, then 32-page chunks: at least one request per chunk.
    assert!(
        run.device_stats.requests >= 4 + (4 * MIB / 4096 - 49) / 32,
        "{}",
        run.device_stats.requests
    );
}

// Proves 2.4 write-back through the whole pipeline (linux-2.4-elevator.md §6.4): a writer of
// 512 MiB into a 256 MiB page cache on RHEL 3 is throttled at nfract_sync (80 % of the cache
// dirty, not 2.6's dirty ratio), its dirty data never passes that by more than one write
// call, every write-back bio is one 4 KiB buffer, and the run ends with its data written.
#[test]
fn rhel3_writers_are_throttled_at_nfract_sync() {
    let writes = Script::sequential(1, IoKind::Write, Place::File(0), 0, MIB, 512);
    let run = simulate(
        "hdd",
        "host:kernel=rhel3,ram=320m,reserve=64m",
        "elevator_linus",
        vec![file(0, 0)],
        vec![phase("write", vec![writes])],
    );
    let limit = host_stat(&run, "dirty_bytes_limit");
    assert_eq!(limit, (256 * MIB / 4096) * 80 / 100 * 4096);
    let peak = host_stat(&run, "dirty_bytes_peak");
    // The peak counts dirty and in-flight pages together; dirty alone stays at nfract_sync.
    assert!(peak > 256 * MIB / 2, "above nfract (50 %): {peak}");
    assert!(host_stat(&run, "throttled_writes") > 0);
    assert!(host_stat(&run, "writeback_pages") >= (512 - 256) * MIB / 4096);
    // Throttled: far below the host's copy rate (0.47 ns/B, over 2 GB/s). Not the disk's
    // rate: beside the dirty pages, 2.4's request pool (320 write requests of up to 512 KiB
    // on this 320 MiB host, freed only at dispatch) holds written data too.
    assert!(
        run.phases[0].throughput_bytes_per_s < 500e6,
        "{}",
        run.phases[0].throughput_bytes_per_s
    );
}
