//! The 2.6 block layer as the simulated host drives it (host-mechanisms.md §1, §2): bios as the
//! kernel formed them, plugging by kernel release, merging into requests, and which writes are
//! sync — whole runs through `elevator_sim::run`.

use elevator_report::Run;
use elevator_sched::SchedulerSpec;
use elevator_sim::{DeviceSpec, HostSpec, QueueSettings, SimConfig, run};
use elevator_workload::WorkloadSpec;

fn simulate(device: &str, host: &str, plugging: bool, scheduler: &str, workload: &str) -> Run {
    let mut config = SimConfig::new(7, DeviceSpec::parse(device).unwrap());
    config.host = HostSpec::parse(host).unwrap();
    config.queue = QueueSettings { plugging, ..QueueSettings::default() };
    let scheduler = SchedulerSpec::parse(scheduler).unwrap();
    let workload = WorkloadSpec::parse(workload).unwrap();
    run(&config, &scheduler, &workload).unwrap_or_else(|error| panic!("{workload}: {error}"))
}

fn merges(run: &Run) -> u64 {
    run.queue_stats.back_merges + run.queue_stats.front_merges
}

// Proves a buffered sequential write reaches the device as the kernel's bios merged into
// large requests: ext3 writes back one 4 KiB bio per block (no `writepages`), so 1 MiB is 256
// bios, and plugging and merging make them requests of up to `max_sectors_kb` — a handful of
// requests (the data's and the journal commit's), every other bio merged.
#[test]
fn a_buffered_sequential_write_reaches_the_device_merged() {
    let run = simulate("hdd", "host", true, "noop", "dd:mode=write,bs=1m,count=1,fdatasync=1");
    let stats = &run.queue_stats;
    // 256 data bios, one per 4 KiB block, then the fsync's journal commit: a descriptor, an
    // inode block and the commit block.
    assert!((256..=260).contains(&stats.bios), "one bio per 4 KiB block: {stats:?}");
    // ext3's indirect block (after logical block 11) breaks the data's run on disk: a 48 KiB
    // request, then a few bios on their own while 2.6.18's noop, which tries only
    // `last_merge`, has none to merge into, then requests of `max_sectors_kb` again.
    assert!(
        stats.requests_issued <= 8,
        "{} bios became {} requests",
        stats.bios,
        stats.requests_issued
    );
    assert_eq!(merges(&run), stats.bios - stats.requests_issued, "{stats:?}");
    assert!(stats.plugs >= 1);
}

// Proves XFS writes back clustered bios as large as a request, so there is little to merge:
// the same 1 MiB is a few bios.
#[test]
fn xfs_writes_back_large_bios() {
    let run =
        simulate("hdd", "host:fs=xfs", true, "noop", "dd:mode=write,bs=1m,count=1,fdatasync=1");
    assert!(run.queue_stats.bios <= 4, "{:?}", run.queue_stats);
}

// Proves O_DIRECT bios of a sequential writer merge while the queue is plugged — a deep
// device (a RAM disk, 128 commands) would otherwise take each 4 KiB bio as its own request —
// and that random ones do not; and that 2.6.18, whose O_DIRECT writes are `WRITE_SYNC` and run
// the queue at once, merges far less than 2.6.9, whose plain writes wait for the plug.
#[test]
fn direct_sequential_writes_merge_under_the_plug_and_random_ones_do_not() {
    let sequential = "job:rw=write,bs=4k,direct=1,iodepth=16,io_size=1m";
    let random = "job:rw=randwrite,bs=4k,direct=1,iodepth=16,io_size=1m";
    let old = "host:kernel=2.6.9";
    let plugged = simulate("ram", old, true, "noop", sequential);
    assert!(merges(&plugged) >= 200, "{:?}", plugged.queue_stats);
    let unplugged = simulate("ram", old, false, "noop", sequential);
    assert_eq!(merges(&unplugged), 0, "{:?}", unplugged.queue_stats);
    let scattered = simulate("ram", old, true, "noop", random);
    assert!(merges(&scattered) <= 2, "{:?}", scattered.queue_stats);
    let sync = simulate("ram", "host:kernel=2.6.18", true, "noop", sequential);
    assert!(merges(&sync) * 4 < merges(&plugged), "2.6.18 {:?}", sync.queue_stats);
}

// Proves a buffered read of a raw block device goes through the block device's page cache one
// bio per block, the block size being the largest of 512 B–4 KiB that divides the device
// (host-mechanisms.md §1.5): a device of an odd number of KiB gets 1 KiB blocks, one of whole
// pages 4 KiB blocks; merging makes requests of them either way.
#[test]
fn raw_device_reads_are_one_bio_per_block() {
    let read = "dd:mode=read,bs=1m,count=2";
    // 1 GiB + 1 KiB: 1 KiB blocks.
    let odd = simulate("ram:capacity=1048577k", "host", true, "noop", read);
    let even = simulate("ram:capacity=1g", "host", true, "noop", read);
    assert_eq!(odd.queue_stats.bios, 4 * even.queue_stats.bios, "{odd:?}");
    assert!(even.queue_stats.bios >= 512, "{:?}", even.queue_stats);
    assert!(odd.queue_stats.requests_issued * 64 < odd.queue_stats.bios, "{:?}", odd.queue_stats);
}

// Proves every phase carries its own block-layer figures, and that they partition the run's:
// the phases' bios and merges add up to no more than the run's (write-back may go on after
// the last phase), each phase's longest wait and seek are at most the run's, and a phase that
// only reads cached data shows no device work of its own.
#[test]
fn phases_say_why_on_their_own() {
    let run = simulate("hdd", "host", true, "deadline", "iozone:threads=2,size=16m,fsync=1");
    let phases: Vec<_> =
        run.phases.iter().map(|phase| phase.queue_stats.clone().expect("simulated")).collect();
    assert!(phases.len() >= 2);
    let total = &run.queue_stats;
    let bios: u64 = phases.iter().map(|queue| queue.bios).sum();
    let merges: u64 = phases.iter().map(|queue| queue.back_merges + queue.front_merges).sum();
    assert!(bios <= total.bios && merges <= total.back_merges + total.front_merges);
    assert!(phases[0].bios > 0, "the write phase's fsync writes back: {:?}", phases[0]);
    let reads = phases.last().unwrap();
    assert_eq!(reads.bios, 0, "the re-read finds everything cached: {reads:?}");
    for queue in &phases {
        assert!(queue.max_wait_ns <= total.max_wait_ns);
        assert!(queue.seek_distance_max_sectors <= total.seek_distance_max_sectors);
    }
    if bios == total.bios {
        let longest = phases.iter().map(|queue| queue.max_wait_ns).max();
        assert_eq!(longest, Some(total.max_wait_ns), "no I/O outside the phases");
    }
}

fn counter(run: &Run, name: &str) -> u64 {
    run.scheduler_stats.counters[name]
}

// Proves an O_DIRECT write is classified as the host's kernel did (host-mechanisms.md §1.6):
// `WRITE_SYNC` in 2.6.18, so anticipatory serves a lone O_DIRECT writer in its sync (read)
// batches, and a plain `WRITE` in 2.6.9, so anticipatory serves it in write batches; 2.6.18's
// cfq compares the data direction only and files the
// same writes in an async queue, which it never idles for — unlike a reader's sync queue.
#[test]
fn direct_writes_are_sync_or_async_as_the_kernel_classified_them() {
    let writer = "job:rw=write,bs=4k,direct=1,iodepth=1,io_size=2m";
    let new = simulate("hdd", "host:kernel=2.6.18", true, "anticipatory", writer);
    assert_eq!(counter(&new, "write_batches"), 0, "{:?}", new.scheduler_stats);
    assert!(counter(&new, "read_batches") >= 1, "{:?}", new.scheduler_stats);
    let old = simulate("hdd", "host:kernel=2.6.9", true, "anticipatory", writer);
    // It starts in the write direction and never leaves it: no sync batch is ever started.
    assert_eq!(counter(&old, "read_batches"), 0, "{:?}", old.scheduler_stats);

    let cfq_writer = simulate("hdd", "host:kernel=2.6.18", true, "cfq", writer);
    assert_eq!(counter(&cfq_writer, "idle_waits"), 0, "{:?}", cfq_writer.scheduler_stats);
    let reader = "job:rw=read,bs=4k,direct=1,iodepth=1,io_size=2m";
    let cfq_reader = simulate("hdd", "host:kernel=2.6.18", true, "cfq", reader);
    assert!(counter(&cfq_reader, "idle_waits") > 0, "{:?}", cfq_reader.scheduler_stats);
}

// Proves a reader that sleeps on a page being read runs the queue (the kernel's `sync_page`),
// so plugging costs a sequential buffered reader nothing: its read-ahead windows, which no
// insertion would unplug (one request each), are not left waiting for the 3 ms plug timer.
#[test]
fn a_reader_waiting_on_its_page_unplugs_the_queue() {
    let read = "dd:mode=read,bs=2m,count=16";
    for host in ["host:kernel=2.6.18", "host:kernel=2.6.9"] {
        let plugged = simulate("hdd", host, true, "noop", read);
        let unplugged = simulate("hdd", host, false, "noop", read);
        let rate = |run: &Run| run.phases.last().unwrap().throughput_bytes_per_s;
        assert!(plugged.queue_stats.plugs > 0, "{host}");
        assert!(
            rate(&plugged) > 0.97 * rate(&unplugged),
            "{host}: {} vs {}",
            rate(&plugged),
            rate(&unplugged)
        );
    }
}

// Proves the picture of an IDE disk under ten buffered writers: the drive takes one
// command, the scheduler holds many requests and so has something to order; deadline's sorted
// sweep and hash merging move the head far less than 2.6.18's noop, which merges only into
// `last_merge` (host-mechanisms.md §2.2) and so sends the other streams' 4 KiB bios as requests
// of their own, in arrival order.
#[test]
fn ten_buffered_writers_on_ide_fill_the_scheduler_and_noop_and_deadline_part() {
    let disk = "hitachi-hds722516vlat80:driver=ide-lba48";
    let host = "host:ram=256m,reserve=64m";
    let writers = "iozone:threads=10,size=32m,record=64k,tests=write,fsync=1";
    let noop = simulate(disk, host, true, "noop", writers);
    let deadline = simulate(disk, host, true, "deadline", writers);
    for run in [&noop, &deadline] {
        let queue = &run.queue_stats;
        assert!(queue.device_queue_mean <= 1.0 + 1e-9, "{queue:?}");
        assert!(queue.sched_queue_mean > 20.0, "{}: {queue:?}", run.scheduler);
    }
    let moved = |run: &Run| run.device_stats.seek_distance_sectors;
    assert!(
        moved(&noop) > 2 * moved(&deadline),
        "noop {} deadline {}",
        moved(&noop),
        moved(&deadline)
    );
    assert!(noop.queue_stats.requests_issued > 4 * deadline.queue_stats.requests_issued);
}

// Proves a bare `cfq` runs the version the host's kernel has (workload-mechanisms.md §4.4):
// cfq v1 on RHEL 4 — named `cfq@2.6.9` in the report, with v1's counters and the 8192
// `nr_requests` selecting it sets (§4.1) — and 2.6.18's cfq, under its bare name and the
// default 128, on a 2.6.18 host; a named version is run as named whatever the host.
#[test]
fn the_host_kernel_picks_the_cfq_version() {
    let reader = "job:rw=randread,bs=4k,direct=1,iodepth=1,io_size=256k";
    let old = simulate("hdd", "host:kernel=2.6.9-5.EL", true, "cfq", reader);
    assert_eq!(old.scheduler, "cfq@2.6.9");
    assert!(counter(&old, "refills") > 0, "{:?}", old.scheduler_stats);
    let nr_requests: Vec<&String> = old
        .config
        .iter()
        .filter(|(key, _)| key.ends_with(".nr_requests"))
        .map(|(_, v)| v)
        .collect();
    assert!(!nr_requests.is_empty() && nr_requests.iter().all(|v| *v == "8192"), "{nr_requests:?}");

    let new = simulate("hdd", "host:kernel=2.6.18", true, "cfq", reader);
    assert_eq!(new.scheduler, "cfq");
    assert!(!new.scheduler_stats.counters.contains_key("refills"), "{:?}", new.scheduler_stats);
    assert!(new.config.iter().any(|(key, v)| key.ends_with(".nr_requests") && v == "128"));

    let pinned = simulate("hdd", "host:kernel=2.6.18", true, "cfq@2.6.9", reader);
    assert_eq!(pinned.scheduler, "cfq@2.6.9");
    assert!(counter(&pinned, "refills") > 0, "{:?}", pinned.scheduler_stats);
}
