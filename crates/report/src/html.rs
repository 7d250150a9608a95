//! Pictures of a report: its main chart as SVG (`-o FILE.svg`) and one self-contained HTML page
//! (`-o FILE.html`) with every experiment's tables and charts.
//!
//! The page loads nothing: its CSS is inline, its charts are inline SVG drawn by
//! [`crate::charts`], it has no script, and no font but the viewer's own `sans-serif` and
//! `monospace`. It opens from a file, offline, and is the same bytes for the same report.
//!
//! Per experiment (the runs a text table puts together: same experiment, device and workload)
//! the page shows:
//!
//! * where the text report prints a tool's own table (dd, iozone, hdparm...), that table, a
//!   bar chart of its first column and the "why" counters of the runs;
//! * per phase, the phase table with the text table's columns and figures
//!   (`render::phase_cells`; not for tool tables, which stand for it), MB/s and p99 latency
//!   per scheduler, and the "why" counters: merges, the mean number of requests in the
//!   scheduler and at the device, idle, blocked and the longest wait (the phase's own
//!   block-layer figures where the run has them, else the run's);
//! * latency CDFs per scheduler: from the issuers' fio completion-latency histograms
//!   (`clat_hist`, fio's buckets) where the run kept them, else from the percentile points;
//! * per-process shares (bytes and operations per issuer, a stacked bar per scheduler) when a
//!   phase had more than one issuer;
//! * the `host_cpu` bottleneck of each run that has one;
//! * the whole text report of the experiment, folded, so every figure of it is on the page.
//!
//! # Deviations
//!
//! * A CDF from percentile points has only the points the report keeps (p50, p90, p99,
//!   p99.9, max) joined by straight lines: the shape between them is not measured. A report
//!   read back from JSON has no histograms (`IssuerSummary::fio` is not serialised), so its
//!   CDFs are of this kind; the chart's title says which kind it is.
//! * Throughput over time and the dispatch scatter ([`crate::charts::throughput_over_time`],
//!   [`crate::charts::dispatch_scatter`]) are not on the page yet: the report does not hold
//!   per-interval series or dispatch records.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::charts;
use crate::fio::hist::PlatHistogram;
use crate::model::{Phase, QueueStats, Report, Run};
use crate::render::{self, PHASE_COLUMNS};

/// The inline style sheet: readable tables and charts that wrap on narrow windows.
const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1600px}\
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;margin-top:2em}\
h3{font-size:1.05em}table{border-collapse:collapse;margin:.5em 0}\
th,td{padding:.2em .6em;border-bottom:1px solid #eee;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}\
.charts{display:flex;flex-wrap:wrap;gap:.5em}.charts svg{max-width:100%;height:auto}\
pre{background:#f8f8f8;padding:.5em;overflow-x:auto;font-family:monospace}\
.note{color:#666;font-size:.9em}";

/// Text for HTML: `&`, `<`, `>` and `"` escaped.
pub(crate) fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// An SVG drawn by plotters made fit for inlining in HTML: HTML's parser puts `<svg>` in the
/// SVG namespace itself, so the `xmlns` attribute (a URL, though never fetched) is dropped and
/// the page refers to no address at all.
fn inline_svg(svg: &str) -> String {
    let mut inline = svg.trim_end().replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    inline.push('\n');
    inline
}

/// A phase of a group: each run with its phase of that name, when it has one.
struct Section<'a> {
    /// The phase's name.
    name: String,
    /// Each run of the group with its phase of that name.
    rows: Vec<(&'a Run, Option<&'a Phase>)>,
}

/// The group's phases, named in the order the runs first have them (a run that stopped early
/// may lack some).
fn sections<'a>(group: &[&'a Run]) -> Vec<Section<'a>> {
    let mut names: Vec<&str> = Vec::new();
    for phase in group.iter().flat_map(|run| &run.phases) {
        if !names.contains(&phase.name.as_str()) {
            names.push(&phase.name);
        }
    }
    names
        .into_iter()
        .map(|name| Section {
            name: name.to_owned(),
            rows: group
                .iter()
                .map(|run| (*run, run.phases.iter().find(|p| p.name == name)))
                .collect(),
        })
        .collect()
}

/// A group's heading: the experiment and its title, or the workload, device and mode.
fn group_title(report: &Report, group: &[&Run]) -> String {
    let first = group[0];
    match &first.experiment {
        Some(experiment) => match first.config.get(crate::model::CONFIG_TITLE) {
            Some(title) => {
                format!("{experiment} — {title}: {} on {}", first.workload, first.device)
            }
            None => format!("{experiment}: {} on {}", first.workload, first.device),
        },
        None => {
            let how = match first.mode {
                crate::model::Mode::Sim => format!("simulated, seed {}", report.seed),
                crate::model::Mode::Live => "live, our schedulers".to_owned(),
                crate::model::Mode::Kernel => "the kernel's schedulers".to_owned(),
            };
            format!("{} on {} ({how})", first.workload, first.device)
        }
    }
}

/// A phase's MB/s and p99 latency in ms per run (0 for a run without the phase).
fn phase_metrics(section: &Section<'_>) -> (Vec<f64>, Vec<f64>) {
    let pick = |f: &dyn Fn(&Phase) -> f64| -> Vec<f64> {
        section.rows.iter().map(|(_, phase)| phase.map_or(0.0, f)).collect()
    };
    (pick(&|p| p.throughput_bytes_per_s / 1e6), pick(&|p| p.latency_ns.p99 as f64 / 1e6))
}

/// The first column of a tool's table (its header and a value per run, 0 where it has none):
/// the main metric of a group the text report shows as the tool printed it.
fn tool_metric(table: &crate::tools::ToolTable) -> Option<(String, Vec<f64>)> {
    let column = table.columns.first()?;
    Some((
        column.header.trim().to_owned(),
        column.values.iter().map(|v| v.unwrap_or(0.0)).collect(),
    ))
}

/// Writes the report's main chart as one SVG: per experiment, the first column of its tool
/// table where the text report prints one, and per phase its MB/s (unless a tool table stands
/// for it) and p99 latency, a bar per scheduler.
pub fn render_svg(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut panels = Vec::new();
    for group in render::groups(report) {
        let title = group_title(report, &group);
        let names: Vec<String> = group.iter().map(|run| run.scheduler.clone()).collect();
        let tool = crate::tools::tool_table(&group);
        if let Some((metric, values)) = tool.as_ref().and_then(tool_metric) {
            panels.push((format!("{title}: {metric}"), metric, names.clone(), values));
        }
        for section in sections(&group) {
            let (mb_s, p99) = phase_metrics(&section);
            let heading = format!("{title}, {}", section.name);
            if tool.is_none() {
                panels.push((format!("{heading}: MB/s"), "MB/s".to_owned(), names.clone(), mb_s));
            }
            panels.push((format!("{heading}: p99"), "p99 ms".to_owned(), names.clone(), p99));
        }
    }
    let rows = panels.len().div_ceil(2);
    let columns = if panels.len() > 1 { 2 } else { 1 };
    let svg = charts::svg_grid(rows, columns, |areas| {
        for ((title, y_label, names, values), area) in panels.iter().zip(areas) {
            charts::draw_bars(area, title, y_label, names, values)?;
        }
        Ok(())
    })?;
    out.write_all(svg.as_bytes())?;
    writeln!(out)
}

/// Writes the whole report as one self-contained HTML page (see the module's documentation).
pub fn render_html(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut page = String::new();
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    page.push_str("<title>elevator report</title>\n<style>");
    page.push_str(STYLE);
    page.push_str("</style>\n</head>\n<body>\n<h1>elevator report</h1>\n");
    let _ = writeln!(
        page,
        "<table class=\"settings\"><tr><th>tool</th><td>{} {}</td></tr><tr><th>schema</th><td>{}</td></tr><tr><th>seed</th><td>{}</td></tr><tr><th>runs</th><td>{}</td></tr></table>",
        escape(&report.tool.name),
        escape(&report.tool.version),
        escape(&report.schema),
        report.seed,
        report.runs.len()
    );
    for (index, group) in render::groups(report).iter().enumerate() {
        write_group(&mut page, report, index, group)?;
    }
    page.push_str("</body>\n</html>\n");
    out.write_all(page.as_bytes())
}

fn write_group(page: &mut String, report: &Report, index: usize, group: &[&Run]) -> io::Result<()> {
    let first = group[0];
    let _ = writeln!(page, "<section class=\"experiment\" id=\"experiment-{index}\">");
    let _ = writeln!(page, "<h2>{}</h2>", escape(&group_title(report, group)));
    let schedulers: Vec<&str> = group.iter().map(|run| run.scheduler.as_str()).collect();
    let _ = writeln!(
        page,
        "<p>device <b>{}</b>, workload <b>{}</b>, schedulers <b>{}</b></p>",
        escape(&first.device),
        escape(&first.workload),
        escape(&schedulers.join(", "))
    );
    // Every run's resolved settings, a column per scheduler (the scheduler's tunables differ).
    let keys: std::collections::BTreeSet<&String> =
        group.iter().flat_map(|run| run.config.keys()).collect();
    if !keys.is_empty() {
        page.push_str(
            "<details><summary>settings</summary><table class=\"config\">\n<tr><th>key</th>",
        );
        for scheduler in &schedulers {
            let _ = write!(page, "<th>{}</th>", escape(scheduler));
        }
        page.push_str("</tr>\n");
        for key in keys {
            let _ = write!(page, "<tr><td>{}</td>", escape(key));
            for run in group {
                let value = run.config.get(key).map_or("", String::as_str);
                let _ = write!(page, "<td>{}</td>", escape(value));
            }
            page.push_str("</tr>\n");
        }
        page.push_str("</table></details>\n");
    }
    let names: Vec<String> = schedulers.iter().map(|s| (*s).to_owned()).collect();
    let tool = crate::tools::tool_table(group);
    // A tool's table stands for the whole group, as in the text report; the "why" counters
    // are then the runs'.
    if let Some(table) = &tool {
        write_tool_table(page, group, table);
        page.push_str("<div class=\"charts\">\n");
        if let Some((metric, values)) = tool_metric(table) {
            page.push_str(&inline_svg(&charts::bar_chart(&metric, &metric, &names, &values)?));
        }
        let runs: Vec<(&Run, Option<&Phase>)> = group.iter().map(|run| (*run, None)).collect();
        write_why_charts(page, &runs, &names)?;
        page.push_str("</div>\n");
    }
    for section in sections(group) {
        let _ = writeln!(page, "<h3>phase {}</h3>", escape(&section.name));
        if tool.is_none() {
            write_phase_table(page, &section);
        }
        page.push_str("<div class=\"charts\">\n");
        let (mb_s, p99) = phase_metrics(&section);
        page.push_str(&inline_svg(&charts::bar_chart("MB/s", "MB/s", &names, &mb_s)?));
        page.push_str(&inline_svg(&charts::bar_chart("p99 latency", "p99 ms", &names, &p99)?));
        if tool.is_none() {
            write_why_charts(page, &section.rows, &names)?;
        }
        write_cdf(page, &section)?;
        write_shares(page, &section)?;
        write_throughput_over_time(page, &section)?;
        page.push_str("</div>\n");
    }
    write_dispatches(page, group)?;
    let bottlenecks: Vec<String> = group
        .iter()
        .map(|run| (run, render::bottleneck_why(run)))
        .filter(|(_, why)| !why.is_empty())
        .map(|(run, why)| format!("{}{why}", run.scheduler))
        .collect();
    if !bottlenecks.is_empty() {
        page.push_str("<p>host CPU:</p><ul class=\"bottleneck\">\n");
        for line in bottlenecks {
            let _ = writeln!(page, "<li>{}</li>", escape(&line));
        }
        page.push_str("</ul>\n");
    }
    // The experiment's whole text report: every figure the table view prints.
    let mut text = Vec::new();
    let sub = Report { runs: group.iter().map(|run| (*run).clone()).collect(), ..report.clone() };
    render::render_table(&sub, &mut text)?;
    let _ = writeln!(
        page,
        "<details><summary>text report</summary><pre>{}</pre></details>\n</section>",
        escape(&String::from_utf8_lossy(&text))
    );
    Ok(())
}

/// Throughput over time, a line per scheduler: each run's per-interval series of the phase
/// (every job and direction summed), at the middle of each interval, from the phase's start.
fn write_throughput_over_time(page: &mut String, section: &Section<'_>) -> io::Result<()> {
    let lines: Vec<(String, Vec<(f64, f64)>)> = section
        .rows
        .iter()
        .filter_map(|(run, phase)| {
            let series = phase.as_ref()?.series.as_ref()?;
            // Every line covers the phase with the same intervals: sum them index by index.
            let mut totals: Vec<(u64, u64, u64)> = Vec::new();
            for line in &series.lines {
                for (index, interval) in line.intervals.iter().enumerate() {
                    if totals.len() <= index {
                        totals.push((interval.start_ns, interval.duration_ns, 0));
                    }
                    totals[index].2 += interval.bytes;
                }
            }
            let points = totals
                .iter()
                .filter(|&&(_, duration_ns, _)| duration_ns > 0)
                .map(|&(start_ns, duration_ns, bytes)| {
                    let middle_s = (start_ns as f64 + duration_ns as f64 / 2.0) / 1e9;
                    (middle_s, bytes as f64 / 1e6 / (duration_ns as f64 / 1e9))
                })
                .collect::<Vec<_>>();
            (!points.is_empty()).then(|| (run.scheduler.clone(), points))
        })
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    page.push_str(&inline_svg(&charts::throughput_over_time(&lines)?));
    Ok(())
}

/// What the elevator did: the sector of each dispatched request over time, one panel per
/// scheduler, a colour per process — from the runs' dispatch samples, when they were kept.
fn write_dispatches(page: &mut String, group: &[&Run]) -> io::Result<()> {
    let panels: Vec<charts::DispatchPanel> = group
        .iter()
        .filter_map(|run| {
            let samples = run.dispatches.as_ref()?;
            // Processes by order of first appearance, so colours are stable within a panel.
            let mut processes: Vec<u32> = Vec::new();
            let points = (0..samples.len())
                .map(|index| {
                    let process = samples.process[index];
                    let colour = match processes.iter().position(|&seen| seen == process) {
                        Some(position) => position,
                        None => {
                            processes.push(process);
                            processes.len() - 1
                        }
                    };
                    (samples.time_ns[index] as f64 / 1e9, samples.sector[index], colour)
                })
                .collect();
            Some((run.scheduler.clone(), points))
        })
        .collect();
    if panels.is_empty() {
        return Ok(());
    }
    page.push_str("<h3>What the elevator did: sector of each dispatched request over time</h3>\n");
    page.push_str(&inline_svg(&charts::dispatch_scatter(&panels)?));
    Ok(())
}

fn write_phase_table(page: &mut String, section: &Section<'_>) {
    page.push_str("<table class=\"figures\">\n<tr>");
    for column in PHASE_COLUMNS {
        let _ = write!(page, "<th>{}</th>", escape(column.trim()));
    }
    page.push_str("</tr>\n");
    for (run, phase) in &section.rows {
        let Some(phase) = phase else { continue };
        page.push_str("<tr>");
        for cell in render::phase_cells(run, phase) {
            let _ = write!(page, "<td>{}</td>", escape(cell.trim()));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table>\n");
    let rows: Vec<(&Run, &Phase)> =
        section.rows.iter().filter_map(|(run, phase)| phase.map(|p| (*run, p))).collect();
    if rows.len() > 1 {
        let _ = writeln!(page, "<p>{}</p>", escape(&render::best_line(&rows)));
    }
    let _ = writeln!(page, "<p class=\"note\">{}</p>", escape(render::PHASE_TABLE_UNITS));
}

fn write_tool_table(page: &mut String, group: &[&Run], table: &crate::tools::ToolTable) {
    page.push_str("<table class=\"figures\">\n<tr><th>scheduler</th>");
    for column in &table.columns {
        let _ = write!(page, "<th>{}</th>", escape(column.header.trim()));
    }
    page.push_str("</tr>\n");
    for (row, run) in group.iter().enumerate() {
        let _ = write!(page, "<tr><td>{}</td>", escape(&run.scheduler));
        for column in &table.columns {
            let cell = match column.values[row] {
                Some(value) => format!("{value:.*}", column.decimals),
                None => "-".to_owned(),
            };
            let _ = write!(page, "<td>{cell}</td>");
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table>\n");
    let _ = writeln!(page, "<p class=\"note\">{}</p>", escape(&table.units));
}

/// The "why" counters, a small chart each: a phase's own block-layer figures where the run has
/// them, else the run's.
fn write_why_charts(
    page: &mut String,
    rows: &[(&Run, Option<&Phase>)],
    names: &[String],
) -> io::Result<()> {
    let queues: Vec<(&QueueStats, u64)> = rows
        .iter()
        .map(|(run, phase)| match phase.and_then(|p| p.queue_stats.as_ref()) {
            Some(queue) => (queue, queue.idle_ns),
            None => (&run.queue_stats, run.scheduler_stats.idle_ns),
        })
        .collect();
    let figure = |pick: &dyn Fn(&QueueStats, u64) -> f64| -> Vec<f64> {
        queues.iter().map(|(queue, idle)| pick(queue, *idle)).collect()
    };
    let counters: [(&str, &str, Vec<f64>); 6] = [
        (
            "merges (back + front + fused)",
            "merges",
            figure(&|q, _| (q.back_merges + q.front_merges + q.requests_fused) as f64),
        ),
        ("requests held in the scheduler (mean)", "requests", figure(&|q, _| q.sched_queue_mean)),
        ("requests at the device (mean)", "requests", figure(&|q, _| q.device_queue_mean)),
        ("scheduler idle", "ms", figure(&|_, idle| idle as f64 / 1e6)),
        ("blocked for a request", "ms", figure(&|q, _| q.blocked_ns as f64 / 1e6)),
        ("longest wait", "ms", figure(&|q, _| q.max_wait_ns as f64 / 1e6)),
    ];
    for (title, unit, values) in counters {
        page.push_str(&inline_svg(&charts::bar_chart(title, unit, names, &values)?));
    }
    Ok(())
}

/// Fractions a CDF is drawn through when only the percentiles are known.
const PERCENTILE_POINTS: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 1.0];

/// Latency CDFs of the section's runs: from the issuers' fio histograms when every run has
/// them, else from each phase's percentile points.
fn write_cdf(page: &mut String, section: &Section<'_>) -> io::Result<()> {
    let phases: Vec<(&Run, &Phase)> =
        section.rows.iter().filter_map(|(run, phase)| phase.map(|p| (*run, p))).collect();
    if phases.is_empty() || phases.iter().all(|(_, p)| p.ops == 0) {
        return Ok(());
    }
    let histograms: Option<Vec<PlatHistogram>> =
        phases.iter().map(|(_, phase)| histogram(phase)).collect();
    let (title, curves) = match histograms {
        Some(histograms) => {
            let curves = phases
                .iter()
                .zip(&histograms)
                .map(|((run, _), histogram)| {
                    let total = histogram.total().max(1) as f64;
                    let mut seen = 0u64;
                    let points = histogram
                        .bins()
                        .map(|(value_ns, count)| {
                            seen += count;
                            (value_ns as f64 / 1e6, seen as f64 / total)
                        })
                        .collect();
                    (run.scheduler.clone(), points)
                })
                .collect::<Vec<_>>();
            ("latency CDF (fio clat histograms)", curves)
        }
        None => {
            let curves = phases
                .iter()
                .map(|(run, phase)| {
                    let l = phase.latency_ns;
                    let values = [l.p50, l.p90, l.p99, l.p99_9, l.max];
                    let points = values
                        .iter()
                        .zip(PERCENTILE_POINTS)
                        .map(|(&ns, fraction)| (ns as f64 / 1e6, fraction))
                        .collect();
                    (run.scheduler.clone(), points)
                })
                .collect::<Vec<_>>();
            ("latency CDF (percentile points)", curves)
        }
    };
    page.push_str(&inline_svg(&charts::latency_cdf(title, &curves)?));
    Ok(())
}

/// The phase's completion latencies over every issuer and direction, when its issuers kept fio
/// figures (and counted some).
fn histogram(phase: &Phase) -> Option<PlatHistogram> {
    let mut all = PlatHistogram::default();
    for issuer in &phase.issuers {
        for direction in &issuer.fio.as_ref()?.directions {
            all.merge(&direction.clat_hist);
        }
    }
    (all.total() > 0).then_some(all)
}

/// Bytes and operations per issuer, a stacked bar per scheduler, when a phase had several.
fn write_shares(page: &mut String, section: &Section<'_>) -> io::Result<()> {
    let phases: Vec<(&Run, &Phase)> =
        section.rows.iter().filter_map(|(run, phase)| phase.map(|p| (*run, p))).collect();
    let Some(widest) = phases.iter().map(|(_, p)| p).max_by_key(|p| p.issuers.len()) else {
        return Ok(());
    };
    if widest.issuers.len() < 2 {
        return Ok(());
    }
    let processes: Vec<String> = widest.issuers.iter().map(|i| i.name.clone()).collect();
    for (title, pick) in [
        ("bytes per process", (|i: &crate::model::IssuerSummary| i.bytes as f64) as fn(&_) -> f64),
        ("operations per process", |i: &crate::model::IssuerSummary| i.ops as f64),
    ] {
        let bars: Vec<(String, Vec<f64>)> = phases
            .iter()
            .map(|(run, phase)| (run.scheduler.clone(), phase.issuers.iter().map(pick).collect()))
            .collect();
        page.push_str(&inline_svg(&charts::stacked_shares(title, &processes, &bars)?));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IssuerSummary, LatencySummary};

    /// A run of `scheduler` with phases `write` and `read`, two issuers each; figures scale
    /// with `speed` so schedulers differ.
    fn run(scheduler: &str, speed: u64) -> Run {
        let issuer = |name: &str, bytes: u64| {
            serde_json::from_value::<IssuerSummary>(serde_json::json!({
                "name": name, "bytes": bytes, "ops": bytes / 4096,
                "throughput_bytes_per_s": bytes as f64,
                "latency_ns": {"p50": 50_000, "p99": 120_000, "max": 900_000}
            }))
            .unwrap()
        };
        let phase = |name: &str| Phase {
            name: name.to_owned(),
            duration_ns: 1_000_000_000,
            bytes: speed * 3_000_000,
            ops: speed * 700,
            throughput_bytes_per_s: speed as f64 * 3e6,
            iops: speed as f64 * 700.0,
            latency_ns: LatencySummary {
                mean: 60_000 * speed,
                p50: 55_000 * speed,
                p90: 90_000 * speed,
                p99: 120_000 * speed,
                p99_9: 200_000 * speed,
                max: 900_000 * speed,
            },
            latency_method: crate::model::LatencyMethod::Histogram { significant_digits: 3 },
            cpu_utilization_percent: None,
            cpu_user_ns: None,
            cpu_sys_ns: None,
            issuers: vec![issuer("job/0", speed * 2_000_000), issuer("job/1", speed * 1_000_000)],
            counters: Default::default(),
            stonewall_ns: None,
            errors: Default::default(),
            queue_stats: Some(QueueStats {
                back_merges: speed,
                max_wait_ns: 40_000,
                ..Default::default()
            }),
            directions: Default::default(),
            series: None,
        };
        Run {
            mode: crate::model::Mode::Sim,
            experiment: None,
            device: "ssd".to_owned(),
            workload: "fio:randrw".to_owned(),
            scheduler: scheduler.to_owned(),
            config: [("device.model".to_owned(), "ssd <fast> & cheap".to_owned())].into(),
            phases: vec![phase("write"), phase("read")],
            scheduler_stats: Default::default(),
            queue_stats: Default::default(),
            device_stats: Default::default(),
            host_stats: Default::default(),
            partial: false,
            partial_reason: None,
            host_cpu: None,
            dispatches: None,
        }
    }

    fn report() -> Report {
        let mut report = Report::new(7, "0.1.0");
        report.runs = vec![run("none", 1), run("mq-deadline", 2), run("bfq", 3)];
        let mut other = run("kyber", 1);
        other.device = "hdd".to_owned();
        report.runs.push(other);
        report
    }

    fn html(report: &Report) -> String {
        let mut out = Vec::new();
        render_html(report, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn svg(report: &Report) -> String {
        let mut out = Vec::new();
        render_svg(report, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    // Proves the main chart parses as XML and has one bar per scheduler in each panel: each
    // scheduler's colour fills exactly one rect per panel (MB/s and p99 per phase of each
    // experiment), and the same report gives the same bytes.
    #[test]
    fn the_main_chart_has_a_bar_per_scheduler_per_panel() {
        let report = report();
        let text = svg(&report);
        let document = roxmltree::Document::parse(&text).expect("the SVG is XML");
        let count = |index: usize| {
            let hex = charts::colour_hex(index);
            document
                .descendants()
                .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(hex.as_str()))
                .count()
        };
        // Two groups (ssd, hdd) × two phases × two panels; the hdd group has one scheduler.
        assert_eq!(count(0), 8);
        assert_eq!(count(1), 4);
        assert_eq!(count(2), 4);
        assert_eq!(count(3), 0);
        assert_eq!(text, svg(&report), "deterministic");
    }

    // Proves the page refers to nothing outside itself (no URL, no external script or style
    // sheet), escapes the report's text, and has every experiment's tables and charts with
    // the table's figures.
    #[test]
    fn the_page_is_self_contained_and_has_every_table_and_chart() {
        let page = html(&report());
        assert!(!page.contains("http://") && !page.contains("https://"), "a URL in the page");
        assert!(!page.contains("<script") && !page.contains("<link"), "external resources");
        assert!(page.contains("ssd &lt;fast&gt; &amp; cheap"), "config escaped");
        assert!(!page.contains("<fast>"));
        assert_eq!(page.matches("<section class=\"experiment\"").count(), 2);
        // A figures table per phase of each group.
        assert_eq!(page.matches("<table class=\"figures\">").count(), 4);
        // mq-deadline's write phase: 6.00 MB/s, p99 0.240 ms, as the text table prints them.
        assert!(page.contains("<td>mq-deadline</td><td>6.00</td><td>1400</td>"), "row");
        assert!(page.contains("<td>0.240</td>"));
        // Per phase: 2 main + 6 why + 1 CDF + 2 shares charts.
        assert_eq!(page.matches("<svg").count(), 4 * 11);
        assert!(page.contains("latency CDF (percentile points)"));
        assert!(page.contains("bytes per process") && page.contains("job/1"));
        assert_eq!(page, html(&report()), "deterministic");
    }

    // Proves odd reports draw rather than fail: no runs at all, a run without phases, and a
    // phase without operations (nothing to put on a log axis).
    #[test]
    fn empty_reports_draw() {
        let empty = Report::new(1, "0.1.0");
        assert!(roxmltree::Document::parse(&svg(&empty)).is_ok());
        assert!(html(&empty).contains("</html>"));
        let mut report = report();
        report.runs.truncate(2);
        report.runs[0].phases.clear();
        for phase in &mut report.runs[1].phases {
            phase.ops = 0;
            phase.bytes = 0;
            phase.latency_ns = LatencySummary::default();
            phase.issuers.clear();
        }
        let page = html(&report);
        assert_eq!(page.matches("<section class=\"experiment\"").count(), 1);
        // The second run's phases are shown though the first run has none.
        assert!(page.contains("<h3>phase write</h3>") && page.contains("<h3>phase read</h3>"));
        assert!(roxmltree::Document::parse(&svg(&report)).is_ok());
    }

    // Proves the CDF comes from the issuers' fio histograms when they are there: its line has
    // a vertex per non-empty bucket, and the title says which kind it is.
    #[test]
    fn the_cdf_uses_fio_histograms_when_present() {
        let mut report = report();
        report.runs.truncate(1);
        for phase in &mut report.runs[0].phases {
            for issuer in &mut phase.issuers {
                let mut stats = crate::fio::JobStats::default();
                for latency_ns in [10_000, 20_000, 40_000, 80_000, 160_000] {
                    stats.directions[0].clat_hist.add(latency_ns);
                }
                issuer.fio = Some(Box::new(stats));
            }
        }
        let page = html(&report);
        assert!(page.contains("latency CDF (fio clat histograms)"));
        assert!(!page.contains("latency CDF (percentile points)"));
        // The CDF's own SVG, parsed: scheduler 0's line is the longest in its colour.
        let start =
            page[..page.find("latency CDF (fio clat histograms)").unwrap()].rfind("<svg").unwrap();
        let end = start + page[start..].find("</svg>").unwrap() + "</svg>".len();
        let chart =
            page[start..end].replacen("<svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"", 1);
        let document = roxmltree::Document::parse(&chart).unwrap();
        let hex = charts::colour_hex(0);
        let points = document
            .descendants()
            .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some(hex.as_str()))
            .map(|n| n.attribute("points").unwrap().to_owned())
            .max_by_key(|points| points.split_whitespace().count())
            .unwrap();
        assert_eq!(points.split_whitespace().count(), 5, "{points}");
    }
}
