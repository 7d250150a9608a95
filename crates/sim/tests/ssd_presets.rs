//! Today's SSD presets against their datasheets (blk-mq-host.md §7.3, §8.1 V6, V7, V9): each
//! preset's ceilings — 4 KiB random reads at a high queue depth, sequential MB/s, the QD 1
//! read latency — within a stated tolerance of the published value where the model reaches
//! it, and at the model's own bound (with the gap named) where it does not; the SLC write
//! cliff of the consumer drive, scaled; and the NVMe queues × depth bound. Figures and the
//! reasons for each gap: `docs/validation.md`, "Today's SSDs".
//!
//! Runs are small (tens of thousands of commands) so that `cargo test` stays fast; the
//! ceilings are reached well inside them (Little's law: a few thousand commands fill any of
//! these devices).

use elevator_core::{Op, Prng, Sector};
use elevator_sched::SchedulerSpec;
use elevator_sim::device::{DeviceSpec, Probe, Timed, iops};
use elevator_sim::{SimConfig, run};
use elevator_workload::WorkloadSpec;

fn probe(text: &str) -> Probe {
    Probe::new(DeviceSpec::parse(text).unwrap().build().unwrap())
}

/// `count` aligned 4 KiB random reads or writes over the whole device.
fn random_4k(spec: &str, op: Op, count: usize, seed: u64) -> Vec<(Op, Sector, u32)> {
    let capacity = DeviceSpec::parse(spec).unwrap().build().unwrap().capacity_sectors();
    let mut prng = Prng::new(seed);
    (0..count).map(|_| (op, Sector(prng.below(capacity / 8) * 8), 8)).collect()
}

/// `count` consecutive 1 MiB commands from sector 0.
fn sequential_1m(op: Op, count: u64) -> Vec<(Op, Sector, u32)> {
    (0..count).map(|i| (op, Sector(i * 2048), 2048)).collect()
}

/// Bytes per second between the first and the last completion of `run` (in completion
/// order): the rate the device delivers once busy, without the fill and drain of the queue.
fn completion_rate_bytes_per_s(run: &[Timed]) -> f64 {
    let mut ends: Vec<_> = run.iter().map(|timed| timed.finished).collect();
    ends.sort();
    let span = (ends[ends.len() - 1] - ends[0]).as_secs_f64();
    (run.len() - 1) as f64 * run[0].command.size_bytes() as f64 / span
}

fn mean_latency_us(run: &[Timed]) -> f64 {
    let total: u64 = run.iter().map(|timed| (timed.finished - timed.submitted).as_nanos()).sum();
    total as f64 / run.len() as f64 / 1000.0
}

fn assert_near(measured: f64, expected: f64, tolerance: f64, what: &str) {
    let error = measured / expected - 1.0;
    assert!(
        error.abs() <= tolerance,
        "{what}: measured {measured:.1}, expected {expected:.1} ({:+.1} %, allowed {:.0} %)",
        error * 100.0,
        tolerance * 100.0
    );
}

/// What a preset's datasheet says, and how close the model must come.
struct Datasheet {
    preset: &'static str,
    /// 4 KiB random-read IOPS at high QD, and the queue depth to measure at.
    random_read_iops: f64,
    random_read_depth: u32,
    sequential_read_mb_s: f64,
    sequential_write_mb_s: f64,
    qd1_read_us: f64,
}

const SHEETS: &[Datasheet] = &[
    // Samsung 980 PRO 1 TB (§7.3): 1,000 K IOPS, 7,000 / 5,000 MB/s, QD 1 50-75 us [U].
    Datasheet {
        preset: "nvme-gen4-consumer",
        random_read_iops: 1_000_000.0,
        random_read_depth: 256,
        sequential_read_mb_s: 7_000.0,
        sequential_write_mb_s: 5_000.0,
        qd1_read_us: 62.5,
    },
    // Samsung PM983 3.84 TB (§7.3): 540 K IOPS, 3,200 / ≈ 2,000 [U] MB/s, 85 us.
    Datasheet {
        preset: "nvme-gen3-dc",
        random_read_iops: 540_000.0,
        random_read_depth: 256,
        sequential_read_mb_s: 3_200.0,
        sequential_write_mb_s: 2_000.0,
        qd1_read_us: 85.0,
    },
    // Samsung 870 EVO 1 TB (§7.3): 98 K IOPS at QD 32, 560 / 530 MB/s, 13 K IOPS at QD 1.
    Datasheet {
        preset: "sata-ssd-2021",
        random_read_iops: 98_000.0,
        random_read_depth: 32,
        sequential_read_mb_s: 560.0,
        sequential_write_mb_s: 530.0,
        qd1_read_us: 1e6 / 13_000.0,
    },
    // Intel P4800X 375 GB (§7.3, AnandTech): 585 K IOPS at QD 16, 8.9 us at QD 1; Intel's
    // 2,400 / 2,000 MB/s sequential [U: not in the spec].
    Datasheet {
        preset: "optane-ref",
        random_read_iops: 585_000.0,
        random_read_depth: 16,
        sequential_read_mb_s: 2_400.0,
        sequential_write_mb_s: 2_000.0,
        qd1_read_us: 8.9,
    },
];

/// The model's measured ceilings for one preset.
struct Measured {
    random_read_iops: f64,
    sequential_read_mb_s: f64,
    sequential_write_mb_s: f64,
    qd1_read_us: f64,
    /// The host link's 4 KiB IOPS bound, host_rate / 4 KiB.
    link_iops: f64,
}

fn measure(sheet: &Datasheet) -> Measured {
    let preset = sheet.preset;
    let reads = random_4k(preset, Op::Read, 40_000, 1);
    let random_read_iops = iops(&probe(preset).closed_loop(reads.clone(), sheet.random_read_depth));
    let qd1_read_us = mean_latency_us(&probe(preset).closed_loop(reads[..200].to_vec(), 1));
    let depth = 32;
    let sequential_read_mb_s = completion_rate_bytes_per_s(
        &probe(preset).closed_loop(sequential_1m(Op::Read, 600), depth),
    ) / 1e6;
    let sequential_write_mb_s = completion_rate_bytes_per_s(
        &probe(preset).closed_loop(sequential_1m(Op::Write, 600), depth),
    ) / 1e6;
    let link_iops = DeviceSpec::parse(preset).unwrap().params().size("host_rate") as f64 / 4096.0;
    Measured {
        random_read_iops,
        sequential_read_mb_s,
        sequential_write_mb_s,
        qd1_read_us,
        link_iops,
    }
}

fn sheet(preset: &str) -> &'static Datasheet {
    SHEETS.iter().find(|sheet| sheet.preset == preset).unwrap()
}

// Proves V6/V7 on the 980 PRO preset (fresh, SLC cache active, as its datasheet): 4 KiB random
// reads at QD 256 reach the datasheet's 1 M IOPS within 10 % (die-bound: 64 planes / (t_R +
// t_x) = 1.2 M, random reads pile up unevenly), sequential reads the 7,000 MB/s within 5 %
// (link-bound, 7.2 GB/s derived), sequential writes into the SLC cache the 5,000 MB/s within
// 5 %, and the QD 1 read lies in the spec's 50-75 us.
#[test]
fn nvme_gen4_consumer_meets_its_datasheet() {
    let sheet = sheet("nvme-gen4-consumer");
    let got = measure(sheet);
    assert_near(got.random_read_iops, sheet.random_read_iops, 0.10, "random 4 KiB reads");
    assert_near(got.sequential_read_mb_s, sheet.sequential_read_mb_s, 0.05, "sequential reads");
    assert_near(got.sequential_write_mb_s, sheet.sequential_write_mb_s, 0.05, "SLC writes");
    assert!((50.0..=75.0).contains(&got.qd1_read_us), "QD 1 read {:.1} us", got.qd1_read_us);
}

// Proves V6/V7 on the PM983 preset where they hold — sequential reads within 15 % of 3,200
// MB/s (the link's derived 3.6 GB/s), the QD 1 read within 20 % of 85 us — and pins the gap
// where they do not: 4 KiB random reads run at the link's bound (3.6 GB/s / 4 KiB ≈ 880 K,
// within 3 %), above the datasheet's 540 K, because the model has no controller limit on
// commands per second; steady-state (gc=1) sequential writes pay the random-write WA and fall
// below half the ≈ 2,000 MB/s [U] once past the write cache.
#[test]
fn nvme_gen3_dc_holds_where_stated_and_is_link_bound_for_reads() {
    let sheet = sheet("nvme-gen3-dc");
    let got = measure(sheet);
    assert_near(got.sequential_read_mb_s, sheet.sequential_read_mb_s, 0.15, "sequential reads");
    assert_near(got.qd1_read_us, sheet.qd1_read_us, 0.20, "QD 1 read");
    assert_near(got.random_read_iops, got.link_iops, 0.03, "random reads at the link bound");
    assert!(got.random_read_iops > sheet.random_read_iops * 1.5, "the documented gap closed?");
    // Past the 256 MiB write cache (cut to 4 MiB so that the run is past it).
    let past_cache =
        probe("nvme-gen3-dc:cache_size=4m").closed_loop(sequential_1m(Op::Write, 300), 32);
    let steady_mb_s = completion_rate_bytes_per_s(&past_cache[100..]) / 1e6;
    assert!(steady_mb_s < sheet.sequential_write_mb_s / 2.0, "WA on sequential: {steady_mb_s:.0}");
}

// Proves V6 on the PM983 preset's steady-state random writes: with a small write cache (so the
// run is past it), 4 KiB random writes at QD 256 run at the datasheet's sustained 50 K IOPS
// within 10 %. Nothing is fitted: it follows from 128 planes, t_PROG 600 us, t_R 60 us, t_ERASE
// 4 ms of 384-page blocks and WA = (1+op)/(2 op) with op = 4 TiB / 3.84 TB - 1, one page
// program per 4 KiB write: 128 / 2.59 ms ≈ 49.5 K.
#[test]
fn nvme_gen3_dc_sustains_its_random_write_rate() {
    let spec = "nvme-gen3-dc:cache_size=4m";
    let run = probe(spec).closed_loop(random_4k(spec, Op::Write, 12_000, 2), 256);
    // The second half: the cache is full and every write waits for a program.
    assert_near(iops(&run[6_000..]), 50_000.0, 0.10, "steady-state random writes");
    let fresh = "nvme-gen3-dc:cache_size=4m,gc=0";
    let fresh_run = probe(fresh).closed_loop(random_4k(fresh, Op::Write, 12_000, 2), 256);
    assert!(iops(&fresh_run[6_000..]) > 3.0 * iops(&run[6_000..]), "gc=1 is what slows them");
}

// Proves V6/V7 on the 870 EVO preset where they hold — sequential reads and writes within
// 15 % of 560 / 530 MB/s (the SATA link's 600 MB/s), the QD 1 read within 10 % of 77 us
// (13 K IOPS) — and pins the gap where it does not: 4 KiB random reads at NCQ 32 run at the
// link's 600 MB/s / 4 KiB ≈ 146 K, above the datasheet's 98 K (AHCI's per-command FIS
// exchanges on the link are not modelled).
#[test]
fn sata_ssd_2021_holds_where_stated_and_is_link_bound_for_reads() {
    let sheet = sheet("sata-ssd-2021");
    let got = measure(sheet);
    assert_near(got.sequential_read_mb_s, sheet.sequential_read_mb_s, 0.15, "sequential reads");
    assert_near(got.sequential_write_mb_s, sheet.sequential_write_mb_s, 0.15, "sequential writes");
    assert_near(got.qd1_read_us, sheet.qd1_read_us, 0.10, "QD 1 read");
    assert_near(got.random_read_iops, got.link_iops, 0.03, "random reads at the link bound");
    assert!(got.random_read_iops > sheet.random_read_iops * 1.3, "the documented gap closed?");
    // The 2010 drive keeps its name and values.
    let classic = DeviceSpec::parse("sata-ssd").unwrap().build().unwrap();
    assert_eq!(classic.queue_depth(), 32);
    let described = classic.describe();
    assert!(described.contains("8 channels x 4 dies x 2 planes, 4k pages"), "{described}");
    assert!(described.contains("read 52500ns / program 900us"), "{described}");
}

// Proves V6/V7 on the Optane preset: the QD 1 read is AnandTech's 8.9 us within 2 % (by
// construction: read_time is derived from it), sequential reads and writes are Intel's 2,400 /
// 2,000 MB/s within 5 % (by construction too), and — the one prediction — 4 KiB random reads
// at QD 16 come within 15 % of AnandTech's 585 K (ours 525 K: at QD 16 two reads sometimes
// share a channel) and at QD 256 within 3 %, because a 4 KiB read spreads over all channels
// and the channels carry the same 2.4 GB/s as a sequential read. No write cliff: sequential
// writes run at one rate from first to last.
#[test]
fn optane_ref_meets_its_review_figures() {
    let sheet = sheet("optane-ref");
    let got = measure(sheet);
    assert_near(got.qd1_read_us, sheet.qd1_read_us, 0.02, "QD 1 read");
    assert_near(got.sequential_read_mb_s, sheet.sequential_read_mb_s, 0.05, "sequential reads");
    assert_near(got.sequential_write_mb_s, sheet.sequential_write_mb_s, 0.05, "sequential writes");
    assert_near(got.random_read_iops, sheet.random_read_iops, 0.15, "random reads at QD 16");
    let deep =
        iops(&probe("optane-ref").closed_loop(random_4k("optane-ref", Op::Read, 40_000, 1), 256));
    assert_near(deep, sheet.random_read_iops, 0.03, "random reads at QD 256: the channels' bound");
    let run = probe("optane-ref").closed_loop(sequential_1m(Op::Write, 600), 32);
    let first = completion_rate_bytes_per_s(&run[..300]);
    let last = completion_rate_bytes_per_s(&run[300..]);
    assert_near(last, first, 0.02, "no cliff");
}

// Proves V9 scaled: on `nvme-gen4-consumer` with the SLC cache cut from 113 GB to 256 MiB
// (same rates), sequential 1 MiB writes at QD 32 run at the SLC rate (64 x 16 KiB / (200 us +
// 13.7 us load) = 4.9 GB/s; datasheet 5,000 MB/s) until 256 MiB are written, then at the
// native TLC rate (64 x 16 KiB / 613.7 us = 1.71 GB/s), within 15 % of TechPowerUp's ≈ 1.5
// GB/s after the cache — a cliff of about 2.9x — and at full size they average TechPowerUp's
// 1.9 GB/s over a whole-drive fill. Exactly the cache's bytes are programmed in
// SLC mode, and a drive without the cache writes at the TLC rate from the start.
#[test]
fn consumer_drive_falls_off_the_slc_cliff_after_the_cache() {
    let spec = "nvme-gen4-consumer:slc_cache=256m";
    let mut cached = probe(spec);
    let run = cached.closed_loop(sequential_1m(Op::Write, 768), 32);
    let in_cache = completion_rate_bytes_per_s(&run[..240]) / 1e6;
    let after = completion_rate_bytes_per_s(&run[300..]) / 1e6;
    assert_near(in_cache, 5_000.0, 0.05, "in the SLC cache");
    assert_near(after, 1_500.0, 0.15, "after the SLC cache (TechPowerUp)");
    assert!(in_cache / after > 2.5, "the cliff: {in_cache:.0} then {after:.0} MB/s");
    // At full size (113 GB of cache on 1,000.2 GB) these two rates fill the drive at an
    // average of TechPowerUp's whole-drive 1.9 GB/s within 5 %.
    let (cache_mb, drive_mb) = (113_000.0, 1_000_204.0);
    let fill_s = cache_mb / in_cache + (drive_mb - cache_mb) / after;
    assert_near(drive_mb / fill_s, 1_900.0, 0.05, "whole-drive fill average");
    let stats = cached.device().stats();
    let slc_pages = stats.extra.iter().find(|(key, _)| *key == "slc_pages").unwrap().1;
    assert_eq!(slc_pages, (256 << 20) / (16 << 10), "the cache's bytes, in 16 KiB pages");
    let plain =
        probe("nvme-gen4-consumer:slc_cache=0").closed_loop(sequential_1m(Op::Write, 300), 32);
    assert_near(completion_rate_bytes_per_s(&plain) / 1e6, after, 0.03, "no cache: TLC rate");
}

// Proves the queue keys bound the commands the device holds: queue_depth() is queues x depth
// (980 PRO: 32 x 1023; 870 EVO: 1 x 32), and through the whole simulator a QD 64 random-read
// job on an NVMe drive cut to 1 queue of 8 tags runs at Little's law's 8 / L (L the QD 1
// latency, within 5 %), while 8 queues of 8 let all 64 in and run over 4x faster (at 64 in
// flight random reads start to pile up on dies, so not the full 8x).
#[test]
fn queues_times_depth_bound_the_commands_held() {
    let held = |spec: &str| DeviceSpec::parse(spec).unwrap().build().unwrap().queue_depth();
    assert_eq!(held("nvme-gen4-consumer"), 32 * 1023);
    assert_eq!(held("nvme-gen3-dc"), 64 * 1023);
    assert_eq!(held("sata-ssd-2021"), 32);
    assert_eq!(held("ssd:queues=4,depth=8"), 32);
    let scheduler = SchedulerSpec::parse("noop").unwrap();
    let workload =
        WorkloadSpec::parse("job:rw=randread,bs=4k,iodepth=64,direct=1,size=64m").unwrap();
    // The device alone: a host whose calls cost no CPU (a 2005 host's ≈ 17 µs per direct call
    // would bound one process first).
    let free_host = "host:syscall=0us,user=0us,bio_cost=0us,request_cost=0us,interrupt_cost=0us";
    let job_iops = |spec: &str| {
        let mut config = SimConfig::new(7, DeviceSpec::parse(spec).unwrap());
        config.host = elevator_sim::HostSpec::parse(free_host).unwrap();
        run(&config, &scheduler, &workload).unwrap().phases[0].iops
    };
    let narrow = job_iops("nvme-gen4-consumer:queues=1,depth=8");
    let wide = job_iops("nvme-gen4-consumer:queues=8,depth=8");
    let qd1 = mean_latency_us(
        &probe("nvme-gen4-consumer")
            .closed_loop(random_4k("nvme-gen4-consumer", Op::Read, 200, 3), 1),
    );
    assert_near(narrow, 8.0 / (qd1 * 1e-6), 0.05, "8 commands held: 8 / L");
    assert!(wide > narrow * 4.0, "8 queues of 8: {wide:.0} vs {narrow:.0}");
}

// Proves the new keys are refused when impossible or meaningless, naming the key and what it
// accepts: an SLC cache without its program time, a program time without a cache, and more
// commands than the model holds.
#[test]
fn impossible_queue_and_slc_keys_are_refused() {
    let message = |text: &str| DeviceSpec::parse(text).unwrap_err().to_string();
    assert!(message("ssd:slc_cache=1g").contains("slc_program_time: is required"));
    assert!(message("ssd:slc_program_time=200us").contains("applies only with slc_cache"));
    assert!(message("nvme-gen4-consumer:slc_cache=0,slc_program_time=1us").contains("applies"));
    assert!(DeviceSpec::parse("nvme-gen4-consumer:slc_cache=0").is_ok());
    assert!(message("ssd:queues=1024,depth=65536").contains("queues x depth <= 1048576"));
    assert!(message("ssd:queues=0").contains("queues=0"));
    assert!(DeviceSpec::parse("ssd:slc_cache=1g,slc_program_time=150us").is_ok());
}
