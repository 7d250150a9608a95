//! fio's `json` and `json+` output (fio-compat.md §4.2; fio's `stat.c`
//! `show_thread_status_json`, `add_ddir_status_json`, `add_ddir_lat_json`; `json.c`).

use std::io::{self, Write};

use super::stats::{IoStat, JobStats, distribution};
use super::{FIO_VERSION, FioSetup, GroupTotals, Reported, ctime, percent_of_aggregate, reported};
use crate::model::Run;

/// A JSON value as fio's `json.c` builds and prints it.
#[derive(Clone, Debug)]
enum Value {
    Int(u64),
    Float(f64),
    Str(String),
    Object(Vec<(String, Value)>),
    Array(Vec<Value>),
}

/// An object under construction, its keys in insertion order (fio's order).
#[derive(Default)]
struct Object(Vec<(String, Value)>);

impl Object {
    fn int(&mut self, key: &str, value: u64) -> &mut Self {
        self.0.push((key.to_owned(), Value::Int(value)));
        self
    }
    fn float(&mut self, key: &str, value: f64) -> &mut Self {
        self.0.push((key.to_owned(), Value::Float(value)));
        self
    }
    fn str(&mut self, key: &str, value: &str) -> &mut Self {
        self.0.push((key.to_owned(), Value::Str(value.to_owned())));
        self
    }
    fn object(&mut self, key: &str, value: Object) -> &mut Self {
        self.0.push((key.to_owned(), Value::Object(value.0)));
        self
    }
}

/// `json.c`'s printer: two spaces per level, `"key" : value`, floats as `%f` (six decimals,
/// never an exponent; NaN and infinities as 0), strings escaping `\` and `"`.
fn print(value: &Value, level: usize, out: &mut String) {
    let indent = |level: usize, out: &mut String| out.push_str(&"  ".repeat(level));
    match value {
        Value::Int(int) => out.push_str(&int.to_string()),
        Value::Float(float) => {
            let float = if float.is_finite() { *float } else { 0.0 };
            out.push_str(&format!("{float:.6}"));
        }
        Value::Str(text) => {
            out.push('"');
            for c in text.chars() {
                if c == '\\' || c == '"' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        }
        Value::Object(pairs) => {
            out.push_str("{\n");
            for (index, (key, value)) in pairs.iter().enumerate() {
                if index > 0 {
                    out.push_str(",\n");
                }
                indent(level + 1, out);
                print(&Value::Str(key.clone()), level + 1, out);
                out.push_str(" : ");
                print(value, level + 1, out);
            }
            out.push('\n');
            indent(level, out);
            out.push('}');
        }
        Value::Array(values) => {
            out.push_str("[\n");
            for (index, value) in values.iter().enumerate() {
                if index > 0 {
                    out.push_str(",\n");
                }
                indent(level + 1, out);
                print(value, level + 1, out);
            }
            out.push('\n');
            indent(level, out);
            out.push(']');
        }
    }
}

/// fio's latency object: min, max, mean, stddev, N; `percentile` when `percentiles` is
/// given and there were samples; json+'s `bins` with them.
fn latency(
    stat: &IoStat,
    hist: Option<&super::hist::PlatHistogram>,
    percentiles: Option<&[f64]>,
    plus: bool,
) -> Object {
    let mut object = Object::default();
    let (min, max, mean, dev) = if stat.samples > 0 {
        (stat.min, stat.max, stat.mean, stat.stddev())
    } else {
        (0, 0, 0.0, 0.0)
    };
    object.int("min", min).int("max", max).float("mean", mean).float("stddev", dev);
    object.int("N", stat.samples);
    if let (Some(list), Some(hist)) = (percentiles, hist)
        && stat.samples > 0
    {
        let mut values = Object::default();
        for (p, value) in list.iter().zip(hist.percentiles(list, stat.samples)) {
            values.int(&format!("{p:.6}"), value);
        }
        object.object("percentile", values);
        if plus {
            let mut bins = Object::default();
            for (value, count) in hist.bins() {
                bins.int(&value.to_string(), count);
            }
            object.object("bins", bins);
        }
    }
    object
}

fn direction(job: &Reported<'_>, index: usize, totals: &GroupTotals, plus: bool) -> Object {
    let stats = &job.stats.directions[index];
    let mut object = Object::default();
    let switches = job.setup.percentile_switches;
    let list = |on: bool| on.then_some(job.percentiles.as_slice());
    if index == 3 {
        // `sync`: fsyncs, their latency with percentiles when `lat_percentiles |
        // clat_percentiles`.
        object.int("total_ios", stats.total_ios);
        let list = list(switches.clat || switches.lat);
        object.object("lat_ns", latency(&stats.clat, Some(&stats.clat_hist), list, plus));
        return object;
    }
    let (bw_bytes, iops) = match stats.runtime_ms {
        0 => (0, 0.0),
        runtime => {
            (1000 * stats.io_bytes / runtime, 1000.0 * stats.total_ios as f64 / runtime as f64)
        }
    };
    object
        .int("io_bytes", stats.io_bytes)
        .int("io_kbytes", stats.io_bytes >> 10)
        .int("bw_bytes", bw_bytes)
        .int("bw", bw_bytes / 1024)
        .float("iops", iops)
        .int("runtime", stats.runtime_ms)
        .int("total_ios", stats.total_ios)
        .int("short_ios", stats.short_ios)
        .int("drop_ios", stats.drop_ios);
    // Each latency's percentiles as its switch says (fio's add_ddir_status_json). lat is
    // clat here (no submission latency), so its histogram is clat's; slat has no samples.
    object.object("slat_ns", latency(&stats.slat, None, list(switches.slat), plus));
    let clat = latency(&stats.clat, Some(&stats.clat_hist), list(switches.clat), plus);
    object.object("clat_ns", clat);
    let lat = latency(&stats.lat, Some(&stats.clat_hist), list(switches.lat), plus);
    object.object("lat_ns", lat);
    let bw = &stats.bw;
    let (min, max, mean, dev, agg) = if bw.samples > 0 {
        let agg = percent_of_aggregate(bw.mean, totals.agg_bytes_per_s[index]);
        (bw.min, bw.max, bw.mean, bw.stddev(), agg)
    } else {
        (0, 0, 0.0, 0.0, 0.0)
    };
    object.int("bw_min", min).int("bw_max", max).float("bw_agg", agg).float("bw_mean", mean);
    object.float("bw_dev", dev).int("bw_samples", bw.samples);
    let iops = &stats.iops;
    let (min, max, mean, dev) = if iops.samples > 0 {
        (iops.min, iops.max, iops.mean, iops.stddev())
    } else {
        (0, 0, 0.0, 0.0)
    };
    object.int("iops_min", min).int("iops_max", max).float("iops_mean", mean);
    object.float("iops_stddev", dev).int("iops_samples", iops.samples);
    object
}

fn percent_object(keys: &[&str], counts: &[u64], total: u64) -> Object {
    let mut object = Object::default();
    for (key, percent) in keys.iter().zip(distribution(counts, total)) {
        object.float(key, percent);
    }
    object
}

fn job_object(
    run: &Run,
    seed: u64,
    job: &Reported<'_>,
    totals: &GroupTotals,
    elapsed_ms: u64,
    plus: bool,
) -> Value {
    let stats: &JobStats = &job.stats;
    let mut object = Object::default();
    object
        .str("jobname", &job.setup.name)
        .int("groupid", job.groupid as u64)
        .int("job_start", stats.start_ns / 1_000_000)
        .int("error", 0)
        .int("eta", 0)
        .int("elapsed", elapsed_ms.div_ceil(1000));
    if !job.setup.options.is_empty() {
        let mut options = Object::default();
        for (key, value) in &job.setup.options {
            options.str(key, value);
        }
        object.object("job options", options);
    }
    // unified_rw_reporting=mixed: only the folded first direction, as `mixed` (fio's
    // add_ddir_status_json returns for the others, sync included).
    let names: &[&str] =
        if job.setup.unified_mixed { &["mixed"] } else { &["read", "write", "trim", "sync"] };
    for (index, name) in names.iter().enumerate() {
        object.object(name, direction(job, index, totals, plus));
    }
    // unified_rw_reporting=both: `mixed` after sync (fio's add_mixed_ddir_status_json).
    if let Some(mixed) = super::with_mixed(job, |mixed| direction(mixed, 0, totals, plus)) {
        object.object("mixed", mixed);
    }
    let cpu = |ns: u64| stats.cpu_percent(ns);
    object
        .int("job_runtime", stats.job_runtime_ms)
        .float("usr_cpu", cpu(stats.usr_ns))
        .float("sys_cpu", cpu(stats.sys_ns))
        .int("ctx", stats.ctx)
        .int("majf", stats.majf)
        .int("minf", stats.minf);
    let rw = stats.rw_ios();
    let batches = ["0", "4", "8", "16", "32", "64", ">=64"];
    object.object(
        "iodepth_level",
        percent_object(&["1", "2", "4", "8", "16", "32", ">=64"], &stats.depth_map, rw),
    );
    object
        .object("iodepth_submit", percent_object(&batches, &stats.submit_map, stats.total_submit));
    object.object(
        "iodepth_complete",
        percent_object(&batches, &stats.complete_map, stats.total_complete),
    );
    let ten = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
    object.object("latency_ns", percent_object(&ten, &stats.lat_n, rw));
    object.object("latency_us", percent_object(&ten, &stats.lat_u, rw));
    let twelve = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"];
    object.object("latency_ms", percent_object(&twelve, &stats.lat_m, rw));
    object
        .int("latency_depth", job.setup.iodepth.max(1))
        .int("latency_target", 0)
        .float("latency_percentile", 100.0)
        .int("latency_window", 0);
    if let Some(description) = &job.setup.description {
        object.str("desc", description);
    }
    let mut elevator = Object::default();
    elevator
        .str(
            "mode",
            match run.mode {
                crate::model::Mode::Sim => "sim",
                crate::model::Mode::Live => "live",
                crate::model::Mode::Kernel => "kernel",
            },
        )
        .str("scheduler", &run.scheduler)
        .str("device", &run.device)
        .int("seed", seed);
    object.object("elevator", elevator);
    Value::Object(object.0)
}

/// Writes `run` as fio's JSON document (`plus`: json+, with latency `bins`), its jobs those of
/// `setup` (see the module's notes). `seed` is the run's seed.
pub fn render_json(
    run: &Run,
    seed: u64,
    setup: &FioSetup,
    plus: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let (jobs, groups) = reported(run, setup).map_err(io::Error::other)?;
    let end_ns = jobs
        .iter()
        .map(|job| job.stats.start_ns + job.stats.job_runtime_ms * 1_000_000)
        .max()
        .unwrap_or(0)
        .max(run.phases.iter().map(|phase| phase.duration_ns).sum());
    let end_ms = end_ns / 1_000_000;
    // fio's `elapsed` is seconds since fio started (its genesis): the simulated clock's epoch
    // in a simulation; in a live or kernel run, whose dates are the wall clock, the first
    // job's start stands for it.
    let genesis_ms = match run.mode {
        crate::model::Mode::Sim => 0,
        _ => jobs.iter().map(|job| job.stats.start_ns).min().unwrap_or(0) / 1_000_000,
    };
    let elapsed_ms = end_ms.saturating_sub(genesis_ms);
    let mut top = Object::default();
    top.str("fio version", FIO_VERSION)
        .int("timestamp", end_ms / 1000)
        .int("timestamp_ms", end_ms)
        .str("time", &ctime(end_ms / 1000));
    if !setup.global_options.is_empty() {
        let mut options = Object::default();
        for (key, value) in &setup.global_options {
            options.str(key, value);
        }
        top.object("global options", options);
    }
    let values = jobs
        .iter()
        .map(|job| job_object(run, seed, job, &groups[job.groupid], elapsed_ms, plus))
        .collect();
    top.0.push(("jobs".to_owned(), Value::Array(values)));
    // fio's json_array_add_disk_util, one object per device; none when none were recorded.
    let disks: Vec<Value> = super::disk_utils(run, setup)
        .into_iter()
        .map(|disk| {
            let mut object = Object::default();
            object
                .str("name", &disk.name)
                .int("read_ios", disk.ios[0])
                .int("write_ios", disk.ios[1])
                .int("read_sectors", disk.sectors[0])
                .int("write_sectors", disk.sectors[1])
                .int("read_merges", disk.merges[0])
                .int("write_merges", disk.merges[1])
                .int("read_ticks", disk.ticks[0])
                .int("write_ticks", disk.ticks[1])
                .int("in_queue", disk.in_queue)
                .float("util", disk.util);
            Value::Object(object.0)
        })
        .collect();
    if !disks.is_empty() {
        top.0.push(("disk_util".to_owned(), Value::Array(disks)));
    }
    let mut text = String::new();
    print(&Value::Object(top.0), 0, &mut text);
    text.push('\n');
    out.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves json.c's number and string forms: whole floats keep six decimals, NaN prints as
    // 0, quotes and backslashes are escaped, nesting indents two spaces per level.
    #[test]
    fn printer_matches_fio_forms() {
        let mut object = Object::default();
        let mut inner = Object::default();
        inner.float("iops", 2.0).float("bad", f64::NAN);
        object.str("name", "a\"b\\c").int("n", 7).object("read", inner);
        let mut text = String::new();
        print(&Value::Object(object.0), 0, &mut text);
        assert_eq!(
            text,
            "{\n  \"name\" : \"a\\\"b\\\\c\",\n  \"n\" : 7,\n  \"read\" : {\n    \"iops\" : \
             2.000000,\n    \"bad\" : 0.000000\n  }\n}"
        );
    }
}
