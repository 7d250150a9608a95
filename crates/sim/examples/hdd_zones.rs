//! Per-zone media rates and the mean random-read service time of `hdd` device specs, as
//! docs/validation.md reports them for DiskSim's validated drives.
//!
//! ```text
//! cargo run --release -p elevator-sim --example hdd_zones -- cheetah9lp atlas10k
//! ```
//!
//! For each zone: its cylinders and sectors per track, the media rate under the head, the
//! sustained rate the skews and slipped sectors allow (`Hdd::zone_summaries`), and the rate a
//! simulated sequential read from the zone's first LBN measures with the interface made
//! infinitely fast (so that the media is what is measured). Then, on the device as given,
//! the mean service time of 2,000 random 4 KiB reads at depth 1 (seed 1), beside the
//! datasheet estimate: average seek + half a revolution + the read-miss overhead + the 8
//! sectors' interface time. Exit code 2 on a bad spec.

// A command-line tool: printing its result is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use elevator_core::{Op, Prng, Sector};
use elevator_sim::DeviceSpec;
use elevator_sim::device::hdd::Hdd;
use elevator_sim::device::{DeviceKind, DeviceModel, Probe, throughput_bytes_per_s};

/// Sectors per sequential read, and how many per zone.
const SEQUENTIAL_SECTORS: u32 = 256;
const SEQUENTIAL_READS: u64 = 64;
/// Random reads for the mean service time.
const RANDOM_READS: u64 = 2_000;

fn main() -> ExitCode {
    let names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        eprintln!("usage: hdd_zones DEVICE_SPEC...");
        return ExitCode::from(2);
    }
    for name in &names {
        if let Err(problem) = report(name) {
            eprintln!("error: {problem}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

fn report(name: &str) -> Result<(), String> {
    let spec = DeviceSpec::parse(name).map_err(|error| error.to_string())?;
    if spec.kind() != DeviceKind::Hdd {
        return Err(format!("{name} is not an hdd"));
    }
    let hdd = Hdd::from_params(spec.params()).map_err(|error| error.to_string())?;
    // The media alone: the same drive behind an interface that costs nothing.
    let fast = DeviceSpec::parse(&format!("{spec},bulk_sector_time=0,bus_rate=100000"))
        .or_else(|_| DeviceSpec::parse(&format!("{spec}:bulk_sector_time=0,bus_rate=100000")))
        .map_err(|error| error.to_string())?;
    println!("{spec}");
    println!("  zone  cylinders    spt  skews    media MB/s  sustained MB/s  measured MB/s");
    for (index, zone) in hdd.zone_summaries().iter().enumerate() {
        let span = u64::from(SEQUENTIAL_SECTORS) * SEQUENTIAL_READS;
        let measured = if zone.lbn_count >= span {
            let mut probe = Probe::new(fast.build().map_err(|error| error.to_string())?);
            let run = probe.closed_loop(
                (0..SEQUENTIAL_READS).map(|i| {
                    let lbn = zone.first_lbn + i * u64::from(SEQUENTIAL_SECTORS);
                    (Op::Read, Sector(lbn), SEQUENTIAL_SECTORS)
                }),
                1,
            );
            format!("{:.2}", throughput_bytes_per_s(&run) / 1e6)
        } else {
            "-".to_owned()
        };
        println!(
            "  {index:>4}  {:>5}-{:<5}  {:>4}  {:>3}/{:<3}  {:>10.2}  {:>14.2}  {:>13}",
            zone.first_cylinder,
            zone.first_cylinder + zone.cylinder_count - 1,
            zone.sectors_per_track,
            zone.track_skew_sectors,
            zone.cylinder_skew_sectors,
            zone.media_bytes_per_s / 1e6,
            zone.sustained_bytes_per_s / 1e6,
            measured
        );
    }
    let capacity = hdd.capacity_sectors();
    let mut prng = Prng::new(1);
    let reads: Vec<(Op, Sector, u32)> =
        (0..RANDOM_READS).map(|_| (Op::Read, Sector(prng.below(capacity / 8) * 8), 8)).collect();
    let mut probe = Probe::new(spec.build().map_err(|error| error.to_string())?);
    let run = probe.closed_loop(reads, 1);
    let mean_ms =
        run.iter().map(|timed| (timed.finished - timed.submitted).as_secs_f64() * 1e3).sum::<f64>()
            / run.len() as f64;
    let params = spec.params();
    let miss_key = if params.has("overhead_read_miss_after_read") {
        "overhead_read_miss_after_read"
    } else {
        "overhead_read"
    };
    let revolution_ms = 60e3 / params.integer("rpm") as f64;
    let interface_ms = 8.0 * 512.0 / hdd.interface_bytes_per_s() * 1e3;
    let estimate_ms = hdd.average_seek_ms()
        + revolution_ms / 2.0
        + params.time(miss_key).as_secs_f64() * 1e3
        + interface_ms;
    println!(
        "  random 4 KiB reads, depth 1: mean service {mean_ms:.2} ms; datasheet estimate \
         {estimate_ms:.2} ms (average seek {:.2} + half a revolution {:.2} + read-miss overhead \
         + interface {:.2})",
        hdd.average_seek_ms(),
        revolution_ms / 2.0,
        interface_ms
    );
    Ok(())
}
