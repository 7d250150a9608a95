//! fio's terse output, version 3 (`--output-format=terse`, `--minimal`; fio-compat.md §4.5;
//! fio's `stat.c` `show_thread_status_terse_all`, `show_ddir_status_terse`; HOWTO "Terse
//! output"). One `;`-separated line per job (or merged group): 121 fields, then nine per
//! simulated device (`disk_util`: 130 with one device, as fio run locally prints).

use std::io::{self, Write};

use super::stats::{IoStat, distribution};
use super::{
    DiskUtil, FIO_VERSION, FioSetup, GroupTotals, Reported, percent_of_aggregate, reported,
};
use crate::model::Run;

/// Most percentiles a line carries (fio's `FIO_IO_U_LIST_MAX_LEN`).
const PERCENTILE_FIELDS: usize = 20;

/// min, max (integers), mean, stddev (`%f`) in µs; zeros without samples.
fn latency_us(stat: &IoStat, line: &mut String) {
    if stat.samples > 0 {
        line.push_str(&format!(
            ";{};{};{:.6};{:.6}",
            stat.min / 1000,
            stat.max / 1000,
            stat.mean / 1000.0,
            stat.stddev() / 1000.0
        ));
    } else {
        line.push_str(";0;0;0.000000;0.000000");
    }
}

fn direction(job: &Reported<'_>, index: usize, totals: &GroupTotals, line: &mut String) {
    let stats = &job.stats.directions[index];
    let (bw, iops) = match stats.runtime_ms {
        0 => (0, 0),
        runtime => (1000 * stats.io_bytes / runtime / 1024, 1000 * stats.total_ios / runtime),
    };
    line.push_str(&format!(";{};{bw};{iops};{}", stats.io_bytes >> 10, stats.runtime_ms));
    latency_us(&stats.slat, line);
    latency_us(&stats.clat, line);
    // lat's percentiles with lat_percentiles, else clat's with clat_percentiles, else none
    // (fio's show_ddir_status_terse): the list's values in µs, `0%=0` past its end. lat is
    // clat here (no submission latency): one histogram.
    let switches = job.setup.percentile_switches;
    let listed: &[f64] = if switches.lat || switches.clat { &job.percentiles } else { &[] };
    let values = stats.clat_hist.percentiles(listed, stats.clat.samples);
    for (p, value) in listed.iter().zip(&values) {
        line.push_str(&format!(";{p:.6}%={}", value / 1000));
    }
    for _ in listed.len()..PERCENTILE_FIELDS {
        line.push_str(";0%=0");
    }
    latency_us(&stats.lat, line);
    let bw_stat = &stats.bw;
    if bw_stat.samples > 0 {
        let agg = percent_of_aggregate(bw_stat.mean, totals.agg_bytes_per_s[index]);
        line.push_str(&format!(
            ";{};{};{agg:.6}%;{:.6};{:.6}",
            bw_stat.min,
            bw_stat.max,
            bw_stat.mean,
            bw_stat.stddev()
        ));
    } else {
        line.push_str(";0;0;0.000000%;0.000000;0.000000");
    }
}

fn job_line(job: &Reported<'_>, totals: &GroupTotals, disks: &[DiskUtil]) -> String {
    let stats = &job.stats;
    let mut line = format!("3;{FIO_VERSION};{};{};0", job.setup.name, job.groupid);
    // Read (or mixed), then write unless unified_rw_reporting=mixed (fio's
    // show_thread_status_terse_all).
    direction(job, 0, totals, &mut line);
    if !job.setup.unified_mixed {
        direction(job, 1, totals, &mut line);
    }
    // unified_rw_reporting=both: the mixed block after them (show_mixed_ddir_status_terse).
    super::with_mixed(job, |mixed| direction(mixed, 0, totals, &mut line));
    let cpu = |ns: u64| stats.cpu_percent(ns);
    line.push_str(&format!(
        ";{:.6}%;{:.6}%;{};{};{}",
        cpu(stats.usr_ns),
        cpu(stats.sys_ns),
        stats.ctx,
        stats.majf,
        stats.minf
    ));
    let rw = stats.rw_ios();
    for percent in distribution(&stats.depth_map, rw) {
        line.push_str(&format!(";{percent:3.1}%"));
    }
    // µs buckets with the ns ones folded into the first (fio's `stat_calc_lat_nu`).
    let mut micro = stats.lat_u;
    micro[0] += stats.lat_n.iter().sum::<u64>();
    for percent in distribution(&micro, rw).into_iter().chain(distribution(&stats.lat_m, rw)) {
        line.push_str(&format!(";{percent:3.2}%"));
    }
    // fio's print_disk_util (terse): nine fields per device, on every job's line.
    for disk in disks {
        line.push_str(&format!(
            ";{};{};{};{};{};{};{};{};{:3.2}%",
            disk.name,
            disk.ios[0],
            disk.ios[1],
            disk.merges[0],
            disk.merges[1],
            disk.ticks[0],
            disk.ticks[1],
            disk.in_queue,
            disk.util
        ));
    }
    if let Some(description) = &job.setup.description {
        line.push_str(&format!(";{description}"));
    }
    line
}

/// Writes `run` as fio's terse v3 lines, its jobs those of `setup`.
pub fn render_terse(run: &Run, setup: &FioSetup, out: &mut dyn Write) -> io::Result<()> {
    let (jobs, groups) = reported(run, setup).map_err(io::Error::other)?;
    let disks = super::disk_utils(run, setup);
    for job in &jobs {
        writeln!(out, "{}", job_line(job, &groups[job.groupid], &disks))?;
    }
    Ok(())
}
