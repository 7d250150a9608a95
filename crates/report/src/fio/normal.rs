//! fio's normal (text) output (fio-compat.md §4.1; fio's `stat.c`
//! `show_thread_status_normal`, `show_ddir_status`, `show_latencies`, `show_group_stats`,
//! `display_lat`, `show_clat_percentiles`; `lib/num2str.c`).

use std::io::{self, Write};

use super::stats::{IoStat, JobStats, distribution};
use super::{FIO_VERSION, FioSetup, GroupTotals, Reported, ctime, percent_of_aggregate, reported};
use crate::model::Run;

/// fio's `num2str`: `num` in at most `max_len` digits, dividing by 1000 (or 1024 with
/// `pow2`) and adding the prefix, with the remainder as decimals where there is room.
pub(crate) fn num2str(mut num: u64, max_len: usize, pow2: bool, unit: &str) -> String {
    const SI: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    const IEC: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let prefixes = if pow2 { IEC } else { SI };
    let mut post = 0;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < SI.len() {
        if num.to_string().len() <= max_len {
            break;
        }
        let rest = num % thousand;
        modulo = Some(rest);
        num /= thousand;
        carry = rest >= thousand / 2;
        post += 1;
    }
    if post >= SI.len() {
        post = 0;
    }
    let Some(modulo) = modulo else {
        return format!("{num}{}{unit}", prefixes[post]);
    };
    let digits = num.to_string().len();
    if max_len as i64 - digits as i64 <= 1 {
        let num = if carry { num + 1 } else { num };
        return format!("{num}{}{unit}", prefixes[post]);
    }
    let decimals = max_len - digits - 1;
    let fraction = format!("{:.*}", decimals, modulo as f64 / thousand as f64);
    // fio keeps what follows "0." (a fraction rounding up to 1 keeps its zeros).
    format!("{num}.{}{}{unit}", &fraction[2..], prefixes[post])
}

/// fio's `display_lat`: the unit chosen by `nsec_to_msec`/`nsec_to_usec`.
fn display_lat(name: &str, stat: &IoStat, out: &mut String) {
    if stat.samples == 0 {
        return;
    }
    let (mut min, mut max, mut mean, mut dev) = (stat.min, stat.max, stat.mean, stat.stddev());
    let mut unit = "nsec";
    for (scale, label, min_limit, max_limit) in
        [(1_000_000u64, "msec", 2_000_000u64, 99_999_999u64), (1000, "usec", 2000, 99_999)]
    {
        if min > min_limit && max > max_limit && dev > scale as f64 {
            min /= scale;
            max /= scale;
            mean /= scale as f64;
            dev /= scale as f64;
            unit = label;
            break;
        }
    }
    out.push_str(&format!(
        "    {name} ({unit}): min={}, max={}, avg={mean:5.02}, stdev={dev:5.02}\n",
        num2str(min, 6, false, ""),
        num2str(max, 6, false, "")
    ));
}

/// fio's `show_clat_percentiles` for latency `name` (`clat`, `lat`): four per line, in the
/// unit the range calls for. lat is clat here (no submission latency): one histogram.
fn show_percentiles(job: &Reported<'_>, index: usize, name: &str, out: &mut String) {
    let stats = &job.stats.directions[index];
    if stats.clat.samples == 0 || job.percentiles.is_empty() {
        return;
    }
    let values = stats.clat_hist.percentiles(&job.percentiles, stats.clat.samples);
    let (min, max) =
        (values.iter().copied().min().unwrap_or(0), values.iter().copied().max().unwrap_or(0));
    let (scale_down, divisor, unit) = if min > 2_000_000 && max > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if min > 2000 && max > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let width = 5usize.max(((max / divisor).max(1) as f64).log10() as usize + 1);
    out.push_str(&format!("    {name} percentiles ({unit}):\n     |"));
    let last = job.percentiles.len() - 1;
    for (j, (p, value)) in job.percentiles.iter().zip(values).enumerate() {
        if j != 0 && j % 4 == 0 {
            out.push_str("     |");
        }
        let mut value = value;
        for _ in 0..scale_down {
            value = value.div_ceil(1000);
        }
        let end = if j == last { '\n' } else { ',' };
        out.push_str(&format!(" {p:5.2}th=[{value:width$}]{end}"));
        if j == last {
            break;
        }
        if j % 4 == 3 {
            out.push('\n');
        }
    }
}

fn direction(job: &Reported<'_>, index: usize, totals: &GroupTotals, out: &mut String) {
    let stats = &job.stats.directions[index];
    let runtime = stats.runtime_ms;
    if runtime == 0 {
        return;
    }
    let bw = 1000 * stats.io_bytes / runtime;
    let iops = 1000 * stats.total_ios / runtime;
    out.push_str(&format!(
        "  {}: IOPS={}, BW={} ({})({}/{runtime}msec)\n",
        if job.setup.unified_mixed { "mixed" } else { ["read", "write", "trim"][index] },
        num2str(iops, 4, false, ""),
        num2str(bw, 4, true, "B/s"),
        num2str(bw, 4, false, "B/s"),
        num2str(stats.io_bytes, 4, true, "B"),
    ));
    display_lat("slat", &stats.slat, out);
    display_lat("clat", &stats.clat, out);
    display_lat(" lat", &stats.lat, out);
    // fio's show_ddir_status: slat's (never sampled here), clat's, then lat's, as switched.
    let switches = job.setup.percentile_switches;
    if switches.clat {
        show_percentiles(job, index, "clat", out);
    }
    if switches.lat {
        show_percentiles(job, index, "lat", out);
    }
    let bw_stat = &stats.bw;
    if bw_stat.samples > 0 {
        let agg = percent_of_aggregate(bw_stat.mean, totals.agg_bytes_per_s[index]);
        let (mut min, mut max, mut mean, mut dev) =
            (bw_stat.min, bw_stat.max, bw_stat.mean, bw_stat.stddev());
        let unit = if mean > 1024.0 * 1024.0 {
            min /= 1024;
            max /= 1024;
            mean /= 1024.0;
            dev /= 1024.0;
            "MiB"
        } else {
            "KiB"
        };
        out.push_str(&format!(
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={agg:3.2}%, avg={mean:5.2}, \
             stdev={dev:5.2}, samples={}\n",
            bw_stat.samples
        ));
    }
    let iops_stat = &stats.iops;
    if iops_stat.samples > 0 {
        out.push_str(&format!(
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}\n",
            iops_stat.min,
            iops_stat.max,
            iops_stat.mean,
            iops_stat.stddev(),
            iops_stat.samples
        ));
    }
}

/// fio's `show_lat`: the buckets of at least 0.01 %, five per line.
fn show_lat(percents: &[f64], ranges: &[&str], unit: &str, out: &mut String) {
    let shown: Vec<String> = percents
        .iter()
        .zip(ranges)
        .filter(|(percent, _)| **percent >= 0.01)
        .map(|(percent, range)| format!("{range}={percent:3.2}%"))
        .collect();
    for line in shown.chunks(5) {
        out.push_str(&format!("  lat ({unit})   : {}\n", line.join(", ")));
    }
}

fn job_block(job: &Reported<'_>, totals: &GroupTotals, pid: usize, date: &str, out: &mut String) {
    let stats: &JobStats = &job.stats;
    let members = job.stats.members.max(1);
    out.push_str(&format!(
        "{}: (groupid={}, jobs={members}): err= 0: pid={pid}: {date}\n",
        job.setup.name, job.groupid
    ));
    if let Some(description) = &job.setup.description {
        out.push_str(&format!("  Description  : [{description}]\n"));
    }
    for index in 0..3 {
        direction(job, index, totals, out);
    }
    // unified_rw_reporting=both: then the mixed one (fio's show_mixed_ddir_status).
    super::with_mixed(job, |mixed| direction(mixed, 0, totals, out));
    let rw = stats.rw_ios();
    let ten = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
    show_lat(&distribution(&stats.lat_n, rw), &ten, "nsec", out);
    show_lat(&distribution(&stats.lat_u, rw), &ten, "usec", out);
    let twelve = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"];
    show_lat(&distribution(&stats.lat_m, rw), &twelve, "msec", out);
    let cpu = |ns: u64| stats.cpu_percent(ns);
    out.push_str(&format!(
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}\n",
        cpu(stats.usr_ns),
        cpu(stats.sys_ns),
        stats.ctx,
        stats.majf,
        stats.minf
    ));
    let line = |keys: &[&str], counts: &[u64], total: u64| {
        keys.iter()
            .zip(distribution(counts, total))
            .map(|(key, percent)| format!("{key}={percent:3.1}%"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let batches = ["0", "4", "8", "16", "32", "64", ">=64"];
    out.push_str(&format!(
        "  IO depths    : {}\n",
        line(&["1", "2", "4", "8", "16", "32", ">=64"], &stats.depth_map, rw)
    ));
    out.push_str(&format!(
        "     submit    : {}\n",
        line(&batches, &stats.submit_map, stats.total_submit)
    ));
    out.push_str(&format!(
        "     complete  : {}\n",
        line(&batches, &stats.complete_map, stats.total_complete)
    ));
    let d = &stats.directions;
    out.push_str(&format!(
        "     issued rwts: total={},{},{},{} short={},{},{},{} dropped={},{},{},{}\n",
        d[0].total_ios,
        d[1].total_ios,
        d[2].total_ios,
        d[3].total_ios,
        d[0].short_ios,
        d[1].short_ios,
        d[2].short_ios,
        0,
        d[0].drop_ios,
        d[1].drop_ios,
        d[2].drop_ios,
        0
    ));
    out.push_str(&format!(
        "     latency   : target=0, window=0, percentile=100.00%, depth={}\n",
        job.setup.iodepth.max(1)
    ));
}

/// fio's `show_group_stats` for group `groupid`.
fn group_block(groupid: usize, jobs: &[Reported<'_>], totals: &GroupTotals, out: &mut String) {
    out.push_str(&format!("\nRun status group {groupid} (all jobs):\n"));
    // fio's rs->unified_rw_rep is its jobs' values OR-ed (mixed 1, both 2): a group mixing
    // the two has 3, which is neither, and prints plain directions.
    let group = || jobs.iter().filter(|job| job.groupid == groupid);
    let any_mixed = group().any(|job| job.setup.unified_mixed);
    let any_both = group().any(|job| job.setup.unified_both);
    let (mixed, both) = (any_mixed && !any_both, any_both && !any_mixed);
    // Per direction shown: aggregate, slowest and fastest job (B/s), bytes, shortest and
    // longest run (ms).
    let mut shown: Vec<(u64, u64, u64, u64, u64, u64)> = Vec::new();
    for (index, label) in ["   READ", "  WRITE", "   TRIM"].into_iter().enumerate() {
        let label = if mixed { "  MIXED" } else { label };
        let members: Vec<&super::stats::DirectionStats> = group()
            .map(|job| &job.stats.directions[index])
            .filter(|stats| stats.runtime_ms > 0)
            .collect();
        if members.is_empty() {
            continue;
        }
        let bws: Vec<u64> =
            members.iter().map(|stats| stats.io_bytes * 1000 / stats.runtime_ms).collect();
        let runs: Vec<u64> = members.iter().map(|stats| stats.runtime_ms).collect();
        let bytes: u64 = members.iter().map(|stats| stats.io_bytes).sum();
        let agg = totals.agg_bytes_per_s[index];
        let (min_bw, max_bw) = (*bws.iter().min().unwrap(), *bws.iter().max().unwrap());
        let (min_run, max_run) = (*runs.iter().min().unwrap(), *runs.iter().max().unwrap());
        group_line(label, (agg, min_bw, max_bw, bytes, min_run, max_run), out);
        shown.push((agg, min_bw, max_bw, bytes, min_run, max_run));
    }
    // unified_rw_reporting=both: fio's show_mixed_group_stats sums the shown directions'
    // aggregates and bytes, takes the extremes of their bandwidths and runs.
    if both && !shown.is_empty() {
        let sum = shown.iter().fold((0, u64::MAX, 0, 0, u64::MAX, 0), |acc, row| {
            (
                acc.0 + row.0,
                acc.1.min(row.1),
                acc.2.max(row.2),
                acc.3 + row.3,
                acc.4.min(row.4),
                acc.5.max(row.5),
            )
        });
        group_line("  MIXED", sum, out);
    }
}

/// One line of `show_group_stats`: `(agg, min_bw, max_bw, bytes, min_run, max_run)`.
fn group_line(label: &str, row: (u64, u64, u64, u64, u64, u64), out: &mut String) {
    let (agg, min_bw, max_bw, bytes, min_run, max_run) = row;
    out.push_str(&format!(
        "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={min_run}-{max_run}msec\n",
        num2str(agg, 4, true, "B/s"),
        num2str(agg, 4, false, "B/s"),
        num2str(min_bw, 4, true, "B/s"),
        num2str(max_bw, 4, true, "B/s"),
        num2str(min_bw, 4, false, "B/s"),
        num2str(max_bw, 4, false, "B/s"),
        num2str(bytes, 4, true, "B"),
        num2str(bytes, 4, false, "B"),
    ));
}

/// The lines fio prints as it starts (§4.1 (1)–(3)): a banner per job (`...` for further
/// clones), the version, `Starting N processes`.
pub fn render_banners(setup: &FioSetup, out: &mut dyn Write) -> io::Result<()> {
    let mut text = String::new();
    let mut group = 0;
    for (index, job) in setup.jobs.iter().enumerate() {
        if index > 0 && job.new_group {
            group += 1;
        }
        let size = |(lo, hi): (u64, u64)| {
            format!("{}-{}", num2str(lo, 4, true, "B"), num2str(hi, 4, true, "B"))
        };
        text.push_str(&format!(
            "{}: (g={group}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}\n",
            job.name,
            job.rw,
            size(job.block_sizes[0]),
            size(job.block_sizes[1]),
            size(job.block_sizes[2]),
            job.ioengine,
            job.iodepth.max(1)
        ));
        if job.clones > 1 {
            text.push_str("...\n");
        }
    }
    let processes: u32 = setup.jobs.iter().map(|job| job.clones).sum();
    let plural = if processes == 1 { "process" } else { "processes" };
    text.push_str(&format!("{FIO_VERSION}\nStarting {processes} {plural}\n"));
    out.write_all(text.as_bytes())
}

/// Writes `run` as fio's normal text report (jobs, then each group's status line), its jobs
/// those of `setup`.
pub fn render_normal(run: &Run, setup: &FioSetup, out: &mut dyn Write) -> io::Result<()> {
    let (jobs, groups) = reported(run, setup).map_err(io::Error::other)?;
    let end_ms = jobs
        .iter()
        .map(|job| job.stats.start_ns / 1_000_000 + job.stats.job_runtime_ms)
        .max()
        .unwrap_or(0);
    let date = ctime(end_ms / 1000);
    let mut text = String::from("\n");
    let mut pid = 1;
    for job in &jobs {
        job_block(job, &groups[job.groupid], pid, &date, &mut text);
        pid += job.stats.members.max(1) as usize;
    }
    for (groupid, totals) in groups.iter().enumerate() {
        group_block(groupid, &jobs, totals, &mut text);
    }
    // fio's show_disk_util (normal).
    let disks = super::disk_utils(run, setup);
    if !disks.is_empty() {
        text.push_str("\nDisk stats (read/write):\n");
        for disk in disks {
            text.push_str(&format!(
                "  {}: ios={}/{}, sectors={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, \
                 util={:3.2}%\n",
                disk.name,
                disk.ios[0],
                disk.ios[1],
                disk.sectors[0],
                disk.sectors[1],
                disk.merges[0],
                disk.merges[1],
                disk.ticks[0],
                disk.ticks[1],
                disk.in_queue,
                disk.util
            ));
        }
    }
    out.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves num2str's forms against fio's observed output (§4.1): 32 MiB is `32.0MiB`, a
    // rate of 167 772 160 B/s is `160MiB/s` and `168MB/s`, 4 087 808 B/s is `3992KiB/s` and
    // `4088kB/s`, 41 000 IOPS `41.0k`, and short numbers stay whole.
    #[test]
    fn num2str_matches_fio() {
        assert_eq!(num2str(32 << 20, 4, true, "B"), "32.0MiB");
        assert_eq!(num2str(167_772_160, 4, true, "B/s"), "160MiB/s");
        assert_eq!(num2str(167_772_160, 4, false, "B/s"), "168MB/s");
        assert_eq!(num2str(4_087_808, 4, true, "B/s"), "3992KiB/s");
        assert_eq!(num2str(4_087_808, 4, false, "B/s"), "4088kB/s");
        assert_eq!(num2str(41_000, 4, false, ""), "41.0k");
        assert_eq!(num2str(4096, 4, true, "B"), "4096B");
        assert_eq!(num2str(186_154, 6, false, ""), "186154");
    }
}
