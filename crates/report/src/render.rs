//! Renderers: the same [`Report`] as tables for people, JSON for tools, CSV for spreadsheets.
//!
//! A run with host CPU figures (`Run::host_cpu`, `blk-mq-host.md` §6.4) gets, after its "why"
//! lines, tables of its cores, threads, scheduler locks and where a request's time went, and
//! its "why" line ends with what limits it ([`crate::model::HostCpu::bottleneck`]). Runs
//! without them render as before.
//!
//! # Deviations from Linux
//!
//! * The device's busy share in the bottleneck verdict is the run's `DeviceStats::busy_ns`
//!   over the CPU window. With several devices that is their summed busy time, so "device"
//!   means the devices together were busy ≥ 95 % of one window — two devices at 50 % each
//!   read as saturated, and one saturated device beside an idle one does not. Linux's
//!   `%util` (iostat) is per device; a per-device figure needs the simulator to report one.
//! * The saturation thresholds (lock 90 %, core 95 %, device 95 %) are a reporting choice,
//!   not anything Linux or fio computes.

use std::io::{self, Write};

use comfy_table::{CellAlignment, Table, presets};

use crate::model::{
    Bottleneck, CONFIG_BASELINE, CONFIG_MACHINE, CONFIG_SCALE, CONFIG_TITLE, CoreCpu, HostCpu,
    Phase, Report, Run,
};

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Aligned tables, a row per scheduler.
    Table,
    /// The full report, pretty-printed.
    Json,
    /// One row per run and phase.
    Csv,
    /// The report's main chart as an SVG image ([`crate::html::render_svg`]).
    Svg,
    /// One self-contained HTML page: tables and charts ([`crate::html::render_html`]).
    Html,
}

/// Writes `report` to `out` in `format`.
pub fn render(report: &Report, format: Format, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Json => {
            // Keep the kind of an I/O error underneath (a closed pipe) visible to the caller.
            serde_json::to_writer_pretty(&mut *out, report).map_err(|error| {
                io::Error::new(error.io_error_kind().unwrap_or(io::ErrorKind::Other), error)
            })?;
            writeln!(out)
        }
        Format::Csv => render_csv(report, out),
        Format::Table => render_table(report, out),
        Format::Svg => crate::html::render_svg(report, out),
        Format::Html => crate::html::render_html(report, out),
    }
}

pub(crate) fn millis(nanos: u64) -> String {
    format!("{:.3}", nanos as f64 / 1e6)
}

pub(crate) fn megabytes_per_s(bytes_per_s: f64) -> String {
    format!("{:.2}", bytes_per_s / 1e6)
}

/// Runs that belong in one table: same experiment, device and workload.
pub(crate) fn groups(report: &Report) -> Vec<Vec<&Run>> {
    let mut groups: Vec<Vec<&Run>> = Vec::new();
    for run in &report.runs {
        let key = |r: &Run| (r.experiment.clone(), r.device.clone(), r.workload.clone());
        match groups.iter_mut().find(|group| key(group[0]) == key(run)) {
            Some(group) => group.push(run),
            None => groups.push(vec![run]),
        }
    }
    groups
}

fn new_table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table.load_style(presets::NOTHING);
    table.set_header(header.to_vec());
    for index in 1..header.len() {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

fn write_table(out: &mut dyn Write, table: &Table) -> io::Result<()> {
    for line in table.to_string().lines() {
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

pub(crate) fn render_table(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    for (index, group) in groups(report).iter().enumerate() {
        if index > 0 {
            writeln!(out)?;
        }
        let first = group[0];
        let title = match &first.experiment {
            Some(experiment) => {
                let title = first.config.get(CONFIG_TITLE).map_or("", String::as_str);
                let machine = first.config.get(CONFIG_MACHINE).map_or("", String::as_str);
                let scale = match first.config.get(CONFIG_SCALE) {
                    Some(scale) => format!(" [sizes and host RAM x{scale}]"),
                    None => String::new(),
                };
                // The experiment's kernel is its rows' own; a baseline row (the database
                // experiments' RHEL 3) ran another, which its row and the machine line name.
                let own = group.iter().find(|run| !run.config.contains_key(CONFIG_BASELINE));
                let kernel = match own.unwrap_or(&first).config.get("host.kernel") {
                    Some(kernel) => format!(", kernel {kernel}"),
                    None => String::new(),
                };
                format!(
                    "{experiment} — {title}{scale}\n  {machine}\n  {} on {}{kernel}",
                    first.workload, first.device
                )
            }
            None => {
                let how = match first.mode {
                    crate::model::Mode::Sim => match first.config.get("host.kernel") {
                        Some(kernel) => format!("simulated, seed {}, kernel {kernel}", report.seed),
                        None => format!("simulated, seed {}", report.seed),
                    },
                    crate::model::Mode::Live => "live, our schedulers".to_owned(),
                    crate::model::Mode::Kernel => "the kernel's schedulers".to_owned(),
                };
                format!("{} on {} ({how})", first.workload, first.device)
            }
        };
        writeln!(out, "{title}")?;
        if let Some(table) = crate::tools::tool_table(group) {
            render_tool_table(out, group, &table)?;
            write_why(out, group)?;
            write_host_cpu(out, group)?;
            continue;
        }
        let phase_names: Vec<&str> = first.phases.iter().map(|p| p.name.as_str()).collect();
        // Simulated runs say why per phase; the others (live, kernel) once per run.
        let mut why_per_phase = !phase_names.is_empty();
        for name in phase_names {
            let rows: Vec<(&Run, &Phase)> = group
                .iter()
                .filter_map(|run| run.phases.iter().find(|p| p.name == name).map(|p| (*run, p)))
                .collect();
            writeln!(out, "phase {name}:")?;
            let mut table = new_table(&PHASE_COLUMNS);
            for (run, phase) in &rows {
                table.add_row(phase_cells(run, phase));
            }
            write_table(out, &table)?;
            if rows.iter().any(|(_, phase)| phase.issuers.len() > 1) {
                let mut issuers = new_table(&[
                    " scheduler",
                    "issuer",
                    "MB/s",
                    "ops",
                    "p50 ms",
                    "p99 ms",
                    "max ms",
                ]);
                for (run, phase) in &rows {
                    for issuer in &phase.issuers {
                        issuers.add_row(vec![
                            format!(" {}", run.scheduler),
                            issuer.name.clone(),
                            megabytes_per_s(issuer.throughput_bytes_per_s),
                            issuer.ops.to_string(),
                            millis(issuer.latency_ns.p50),
                            millis(issuer.latency_ns.p99),
                            millis(issuer.latency_ns.max),
                        ]);
                    }
                }
                write_table(out, &issuers)?;
            }
            if rows.len() > 1 {
                writeln!(out, "{}", best_line(&rows))?;
            }
            if rows.iter().all(|(_, phase)| phase.queue_stats.is_some()) {
                writeln!(out, "why ({name}):")?;
                for (run, phase) in &rows {
                    let queue = phase.queue_stats.as_ref().expect("checked above");
                    let line = why_line(&run.scheduler, queue, queue.idle_ns);
                    let cpu = bottleneck_why(run);
                    writeln!(out, "  {line}{}{cpu}", iscsi_why(&phase.counters))?;
                }
            } else {
                why_per_phase = false;
            }
        }
        writeln!(out, "{PHASE_TABLE_UNITS}")?;
        if !why_per_phase {
            write_why(out, group)?;
        }
        write_host_cpu(out, group)?;
    }
    Ok(())
}

/// The columns of a phase table (the first is indented, as comfy-table prints no border).
pub(crate) const PHASE_COLUMNS: [&str; 10] = [
    " scheduler",
    "MB/s",
    "IOPS",
    "mean ms",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "max ms",
    "merged",
    "idle ms",
];

/// A phase table's row for `phase` of `run`, as [`PHASE_COLUMNS`] name them: the text table
/// and the HTML page show the same figures.
pub(crate) fn phase_cells(run: &Run, phase: &Phase) -> Vec<String> {
    let latency = phase.latency_ns;
    // The phase's own block-layer figures where the run has them.
    let (merged, idle_ns) = match &phase.queue_stats {
        Some(queue) => {
            (queue.back_merges + queue.front_merges + queue.requests_fused, queue.idle_ns)
        }
        None => (run.scheduler_stats.merged, run.scheduler_stats.idle_ns),
    };
    vec![
        format!(" {}", run.scheduler),
        megabytes_per_s(phase.throughput_bytes_per_s),
        format!("{:.0}", phase.iops),
        millis(latency.mean),
        millis(latency.p50),
        millis(latency.p99),
        millis(latency.p99_9),
        millis(latency.max),
        merged.to_string(),
        millis(idle_ns),
    ]
}

/// One compact line per run saying why its figures are what they are: what the scheduler had
/// to work with (merges, plugs, how many requests it held, how many the device did), how far
/// the head moved, how long the scheduler idled, how long processes waited for a request, and
/// the longest any request waited. The same figures are in the JSON's `queue_stats` and
/// `scheduler_stats`.
fn write_why(out: &mut dyn Write, group: &[&Run]) -> io::Result<()> {
    writeln!(out, "why:")?;
    for run in group {
        let line = why_line(&run.scheduler, &run.queue_stats, run.scheduler_stats.idle_ns);
        // An iSCSI target's phases say how the initiator's reads reached its scheduler.
        let iscsi =
            run.phases.iter().map(|phase| iscsi_why(&phase.counters)).find(|s| !s.is_empty());
        writeln!(out, "  {line}{}{}", iscsi.unwrap_or_default(), bottleneck_why(run))?;
    }
    Ok(())
}

fn why_line(scheduler: &str, queue: &crate::model::QueueStats, idle_ns: u64) -> String {
    format!(
        "{}: merges {} back + {} front, {} plugs; held {:.1} in the scheduler, {:.1} at the \
         device; seeks mean {} max {} sectors; idle {} ms; blocked {} ms; longest wait {} ms",
        scheduler,
        queue.back_merges,
        queue.front_merges,
        queue.plugs,
        queue.sched_queue_mean,
        queue.device_queue_mean,
        crate::tools::compact_count(queue.seek_distance_mean_sectors),
        crate::tools::compact_count(queue.seek_distance_max_sectors as f64),
        millis(idle_ns),
        millis(queue.blocked_ns),
        millis(queue.max_wait_ns),
    )
}

/// What limits the run, for the end of its "why" line (`; bottleneck: lock mq-deadline
/// (occupied 97 %, wait p99 4.1 µs)`), by [`HostCpu::bottleneck`]; empty when the run has no
/// `host_cpu`. The figure is over the whole run, so a run of several phases says so.
///
/// The device's busy share is `DeviceStats::busy_ns` over `HostCpu::window_ns`. With several
/// devices `busy_ns` is their sum, so the share can pass 100 % and "device" then means the
/// devices together, not that one of them is saturated (see the module's deviations).
pub(crate) fn bottleneck_why(run: &Run) -> String {
    let Some(cpu) = &run.host_cpu else { return String::new() };
    let device_percent = device_busy_percent(run, cpu);
    let over = if run.phases.len() > 1 { " over the run" } else { "" };
    let what = match cpu.bottleneck(device_percent) {
        Bottleneck::Lock { name } => {
            let lock = cpu.locks.iter().find(|lock| lock.name == name).expect("named by it");
            format!(
                "lock {name} (occupied {:.0} %, wait p99 {})",
                lock.occupancy_percent(cpu.window_ns),
                duration_text(lock.wait_p99_ns as f64)
            )
        }
        Bottleneck::Core { core } => {
            let busy = cpu.cores.iter().find(|c| c.core == core).map_or(0.0, |c| c.busy_percent);
            format!("core {core} ({busy:.0} % busy)")
        }
        Bottleneck::Device => format!("device (busy {device_percent:.0} %)"),
        Bottleneck::None => {
            // Say how far from saturated the busiest candidates were.
            let busiest = cpu
                .cores
                .iter()
                .fold(None::<&CoreCpu>, |best, core| match best {
                    Some(best) if best.busy_percent >= core.busy_percent => Some(best),
                    _ => Some(core),
                })
                .map_or(String::new(), |core| {
                    format!(", busiest core {} {:.0} %", core.core, core.busy_percent)
                });
            format!("none (device busy {device_percent:.0} %{busiest})")
        }
    };
    format!("; bottleneck{over}: {what}")
}

/// The devices' busy time over the CPU window, in percent (0 for an empty window).
fn device_busy_percent(run: &Run, cpu: &HostCpu) -> f64 {
    share_percent(run.device_stats.busy_ns, cpu.window_ns)
}

/// `part` of `whole` in percent; 0 when `whole` is 0.
fn share_percent(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 / whole as f64 * 100.0 }
}

/// A duration in nanoseconds in the unit that reads best: `850 ns`, `4.1 µs`, `2.3 ms`.
fn duration_text(nanos: f64) -> String {
    if nanos < 1e3 {
        format!("{nanos:.0} ns")
    } else if nanos < 1e6 {
        format!("{:.1} µs", nanos / 1e3)
    } else {
        format!("{:.1} ms", nanos / 1e6)
    }
}

/// The footnote of the host CPU tables.
const HOST_CPU_UNITS: &str = "units: % of the window on one core; ms = 10^-3 s; \
                              µs = 10^-6 s; ns = 10^-9 s";

/// For each run of `group` that has `host_cpu` (`blk-mq-host.md` §6.4): its cores (busy, and
/// user/sys/irq/softirq/spin as shares of the window), threads (CPU, time waiting for a core,
/// CPU other contexts spent on their I/O), scheduler locks (acquisitions, contention, wait,
/// cross-core hand-offs, occupancy) and where a request's time went (mean per step, share of
/// the steps' sum). Writes nothing for runs without it, so their reports are unchanged.
fn write_host_cpu(out: &mut dyn Write, group: &[&Run]) -> io::Result<()> {
    for run in group {
        let Some(cpu) = &run.host_cpu else { continue };
        let window = cpu.window_ns;
        writeln!(
            out,
            "host CPU ({}): {} cores over {} ms, {} requests",
            run.scheduler,
            cpu.cores.len(),
            millis(window),
            cpu.requests
        )?;
        let percent = |nanos: u64| format!("{:.1}", share_percent(nanos, window));
        if !cpu.cores.is_empty() {
            let mut cores = new_table(&[
                " core",
                "busy %",
                "user %",
                "sys %",
                "irq %",
                "softirq %",
                "spin %",
                "run queue",
            ]);
            for core in &cpu.cores {
                cores.add_row(vec![
                    format!(" {}", core.core),
                    format!("{:.1}", core.busy_percent),
                    percent(core.user_ns),
                    percent(core.sys_ns),
                    percent(core.irq_ns),
                    percent(core.softirq_ns),
                    percent(core.spin_ns),
                    format!("{:.2}", core.run_queue_mean),
                ]);
            }
            write_table(out, &cores)?;
        }
        if !cpu.threads.is_empty() {
            let mut threads = new_table(&[
                " thread",
                "kind",
                "core",
                "cpu %",
                "spin %",
                "core wait ms",
                "attributed ms",
            ]);
            // The kind is a word, not a figure.
            if let Some(column) = threads.column_mut(1) {
                column.set_cell_alignment(CellAlignment::Left);
            }
            for thread in &cpu.threads {
                threads.add_row(vec![
                    format!(" {}", thread.name),
                    thread.kind.clone(),
                    thread.core.to_string(),
                    format!("{:.1}", thread.cpu_percent),
                    percent(thread.spin_ns),
                    millis(thread.core_wait_ns),
                    millis(thread.attributed_ns),
                ]);
            }
            write_table(out, &threads)?;
        }
        if !cpu.locks.is_empty() {
            let mut locks = new_table(&[
                " lock",
                "acquisitions",
                "contended %",
                "wait mean µs",
                "wait p99 µs",
                "hand-offs",
                "occupied %",
            ]);
            for lock in &cpu.locks {
                locks.add_row(vec![
                    format!(" {}", lock.name),
                    lock.acquisitions.to_string(),
                    format!("{:.1}", share_percent(lock.contended, lock.acquisitions)),
                    format!("{:.3}", lock.wait_mean_ns / 1e3),
                    format!("{:.3}", lock.wait_p99_ns as f64 / 1e3),
                    lock.cross_core_handoffs.to_string(),
                    format!("{:.1}", lock.occupancy_percent(window)),
                ]);
            }
            write_table(out, &locks)?;
        }
        let steps = cpu.path_steps();
        if !steps.is_empty() && cpu.requests > 0 {
            writeln!(out, "where the time went, per request:")?;
            // Saturating: a hand-edited report must not overflow the sum.
            let total = cpu.path_ns.values().fold(0u64, |sum, &nanos| sum.saturating_add(nanos));
            let mut path = new_table(&[" step", "mean ns", "share %"]);
            for step in steps {
                let nanos = cpu.path_ns[step];
                path.add_row(vec![
                    format!(" {step}"),
                    format!("{:.0}", nanos as f64 / cpu.requests as f64),
                    format!("{:.1}", share_percent(nanos, total)),
                ]);
            }
            write_table(out, &path)?;
        }
        writeln!(out, "{HOST_CPU_UNITS}")?;
    }
    Ok(())
}

/// On an iSCSI topology, what reached the target's scheduler and from whom: the distinct
/// worker threads each LUN saw requests from, the most threads busy at once, the share of
/// commands that waited for a thread or for the session window, and the initiator's deepest
/// per-LUN queue. Empty for other runs.
fn iscsi_why(counters: &std::collections::BTreeMap<String, u64>) -> String {
    let Some(&commands) = counters.get("iscsi_commands") else { return String::new() };
    let get = |name: &str| counters.get(name).copied().unwrap_or(0);
    let share = |count: u64| {
        if commands > 0 { 100.0 * count as f64 / commands as f64 } else { 0.0 }
    };
    format!(
        "; target: {} commands from {}-{} threads per LUN, at most {} busy, {:.0}% waited for a \
         thread, {:.0}% for the window; initiator: up to {} reads pending per LUN",
        commands,
        get("iscsi_threads_per_lun_min"),
        get("iscsi_threads_per_lun_max"),
        get("iscsi_busy_threads_peak"),
        share(get("iscsi_thread_waits")),
        share(get("iscsi_window_waits")),
        get("iscsi_vdev_pending_peak"),
    )
}

/// The footnote of the phase tables: fio's convention (kB, MB powers of ten; KiB, MiB powers
/// of two), of which these tables use the decimal MB.
pub(crate) const PHASE_TABLE_UNITS: &str = "units: MB = 10^6 bytes (MiB = 2^20); ms = 10^-3 s";

/// A tool's table: a row per scheduler, then the best of each column.
fn render_tool_table(
    out: &mut dyn Write,
    group: &[&Run],
    table: &crate::tools::ToolTable,
) -> io::Result<()> {
    let mut headers = vec![" scheduler".to_owned()];
    headers.extend(table.columns.iter().map(|column| column.header.clone()));
    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut rendered = new_table(&header_refs);
    for (row, run) in group.iter().enumerate() {
        let mut cells = vec![format!(" {}", run.scheduler)];
        for column in &table.columns {
            cells.push(match column.values[row] {
                Some(value) => format!("{value:.*}", column.decimals),
                None => "-".to_owned(),
            });
        }
        rendered.add_row(cells);
    }
    write_table(out, &rendered)?;
    writeln!(out, "{}", table.units)?;
    let schedulers: Vec<&str> = group.iter().map(|run| run.scheduler.as_str()).collect();
    let lines = crate::tools::best_lines(table, &schedulers);
    if !lines.is_empty() {
        writeln!(out, "best per column:")?;
        for line in lines {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// Names the best scheduler for throughput and for p99 latency, with the margin over the
/// worst.
pub(crate) fn best_line(rows: &[(&Run, &Phase)]) -> String {
    let by_throughput = |a: &&(&Run, &Phase), b: &&(&Run, &Phase)| {
        a.1.throughput_bytes_per_s.total_cmp(&b.1.throughput_bytes_per_s)
    };
    let best = rows.iter().max_by(by_throughput).expect("rows");
    let worst = rows.iter().min_by(by_throughput).expect("rows");
    let margin = |best: f64, worst: f64| {
        if worst > 0.0 { format!("{:+.1}%", (best / worst - 1.0) * 100.0) } else { "n/a".into() }
    };
    let fastest = rows.iter().min_by_key(|row| row.1.latency_ns.p99).expect("rows");
    let slowest = rows.iter().max_by_key(|row| row.1.latency_ns.p99).expect("rows");
    format!(
        "best: MB/s (higher is better) {} ({} over {}); p99 (lower is better) {} ({} of {}'s)",
        best.0.scheduler,
        margin(best.1.throughput_bytes_per_s, worst.1.throughput_bytes_per_s),
        worst.0.scheduler,
        fastest.0.scheduler,
        if slowest.1.latency_ns.p99 > 0 {
            format!(
                "{:.1}%",
                fastest.1.latency_ns.p99 as f64 / slowest.1.latency_ns.p99 as f64 * 100.0
            )
        } else {
            "n/a".into()
        },
        slowest.0.scheduler
    )
}

/// The CSV columns of a run's host CPU totals, written only when some run of the report has
/// them (so other reports' CSV is unchanged). They are the run's, repeated on each of its
/// phase rows: CPU time summed over cores, time threads waited for a core, the window, and the
/// bottleneck verdict (`lock NAME`, `core N`, `device`, `none`).
const HOST_CPU_CSV_COLUMNS: [&str; 8] = [
    "host_cpu_window_ns",
    "host_cpu_user_ns",
    "host_cpu_sys_ns",
    "host_cpu_irq_ns",
    "host_cpu_softirq_ns",
    "host_cpu_spin_ns",
    "host_cpu_core_wait_ns",
    "host_cpu_bottleneck",
];

/// `run`'s cells for [`HOST_CPU_CSV_COLUMNS`]; empty cells when it has no host CPU figures.
fn host_cpu_csv_cells(run: &Run) -> Vec<String> {
    let Some(cpu) = &run.host_cpu else {
        return vec![String::new(); HOST_CPU_CSV_COLUMNS.len()];
    };
    let sum = |field: fn(&CoreCpu) -> u64| {
        cpu.cores.iter().map(field).fold(0u64, u64::saturating_add).to_string()
    };
    let bottleneck = match cpu.bottleneck(device_busy_percent(run, cpu)) {
        Bottleneck::Lock { name } => format!("lock {name}"),
        Bottleneck::Core { core } => format!("core {core}"),
        Bottleneck::Device => "device".to_owned(),
        Bottleneck::None => "none".to_owned(),
    };
    vec![
        cpu.window_ns.to_string(),
        sum(|core| core.user_ns),
        sum(|core| core.sys_ns),
        sum(|core| core.irq_ns),
        sum(|core| core.softirq_ns),
        sum(|core| core.spin_ns),
        cpu.threads
            .iter()
            .map(|thread| thread.core_wait_ns)
            .fold(0u64, u64::saturating_add)
            .to_string(),
        bottleneck,
    ]
}

fn render_csv(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let with_cpu = report.runs.iter().any(|run| run.host_cpu.is_some());
    let mut writer = csv::Writer::from_writer(out);
    let mut header = vec![
        "experiment",
        "mode",
        "device",
        "workload",
        "scheduler",
        "phase",
        "duration_ns",
        "bytes",
        "ops",
        "throughput_bytes_per_s",
        "iops",
        "latency_ns_mean",
        "latency_ns_p50",
        "latency_ns_p90",
        "latency_ns_p99",
        "latency_ns_p99_9",
        "latency_ns_max",
        "cpu_utilization_percent",
        "dispatched",
        "merged",
        "idle_ns",
        "device_busy_ns",
        "device_seek_distance_sectors",
    ];
    if with_cpu {
        header.extend(HOST_CPU_CSV_COLUMNS);
    }
    writer.write_record(&header)?;
    for run in &report.runs {
        for phase in &run.phases {
            let latency = phase.latency_ns;
            let mode = serde_json::to_value(run.mode).map_err(io::Error::other)?;
            let mut record = vec![
                run.experiment.clone().unwrap_or_default(),
                mode.as_str().unwrap_or_default().to_owned(),
                run.device.clone(),
                run.workload.clone(),
                run.scheduler.clone(),
                phase.name.clone(),
                phase.duration_ns.to_string(),
                phase.bytes.to_string(),
                phase.ops.to_string(),
                phase.throughput_bytes_per_s.to_string(),
                phase.iops.to_string(),
                latency.mean.to_string(),
                latency.p50.to_string(),
                latency.p90.to_string(),
                latency.p99.to_string(),
                latency.p99_9.to_string(),
                latency.max.to_string(),
                phase.cpu_utilization_percent.map(|cpu| cpu.to_string()).unwrap_or_default(),
                run.scheduler_stats.dispatched.to_string(),
                run.scheduler_stats.merged.to_string(),
                run.scheduler_stats.idle_ns.to_string(),
                run.device_stats.busy_ns.to_string(),
                run.device_stats.seek_distance_sectors.to_string(),
            ];
            if with_cpu {
                record.extend(host_cpu_csv_cells(run));
            }
            writer.write_record(&record)?;
        }
    }
    writer.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::host_cpu;

    /// A simulated run of one phase with figures in every column, `host_cpu` absent.
    fn run(scheduler: &str) -> Run {
        serde_json::from_value(serde_json::json!({
            "mode": "sim", "device": "nvme-gen4-consumer", "workload": "fio:randread",
            "scheduler": scheduler, "config": {},
            "phases": [{
                "name": "randread", "duration_ns": 1_000_000_000u64, "bytes": 4_096_000_000u64,
                "ops": 1_000_000, "throughput_bytes_per_s": 4.096e9, "iops": 1.0e6,
                "latency_ns": {"mean": 60_000, "p50": 55_000, "p90": 80_000, "p99": 120_000,
                               "p99_9": 200_000, "max": 900_000},
                "latency_method": {"kind": "histogram", "significant_digits": 3},
                "cpu_utilization_percent": 80.0, "issuers": []
            }],
            "scheduler_stats": {"dispatched": 1_000_000, "merged": 3, "idle_ns": 0,
                                "counters": {}},
            "queue_stats": {
                "bios": 1_000_000, "back_merges": 2, "front_merges": 1, "requests_fused": 0,
                "requests_issued": 1_000_000, "blocked": 0, "held": 0, "plugs": 7,
                "seek_distance_sectors": 0, "sched_queue_mean": 1.5, "device_queue_mean": 30.0,
                "max_wait_ns": 40_000
            },
            "device_stats": {
                "requests": 1_000_000, "busy_ns": 990_000_000u64, "seek_distance_sectors": 0,
                "extra": {}
            }
        }))
        .unwrap_or_else(|e| panic!("a minimal run: {e}"))
    }

    fn text(report: &Report) -> String {
        let mut out = Vec::new();
        render(report, Format::Table, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn report(runs: Vec<Run>) -> Report {
        let mut report = Report::new(42, "0.0.0");
        report.runs = runs;
        report
    }

    // Proves a run without `host_cpu` renders exactly as the text report did before the CPU
    // tables existed (this text was captured from the renderer before they were added).
    #[test]
    fn a_run_without_host_cpu_renders_as_before() {
        let text = text(&report(vec![run("none"), run("mq-deadline")]));
        assert_eq!(text, GOLDEN_WITHOUT_HOST_CPU);
    }

    // Proves a simulated run whose phases carry their own block-layer figures (the "why" per
    // phase) renders as before when it has no `host_cpu`.
    #[test]
    fn a_run_with_phase_why_and_without_host_cpu_renders_as_before() {
        let text = text(&report(vec![with_phase_queue(run("kyber"))]));
        assert_eq!(text, GOLDEN_PHASE_WHY_WITHOUT_HOST_CPU);
    }

    /// The text report of a run with a "why" per phase and without `host_cpu`, as rendered
    /// before it existed.
    const GOLDEN_PHASE_WHY_WITHOUT_HOST_CPU: &str = concat!(
        "fio:randread on nvme-gen4-consumer (simulated, seed 42)\n",
        "phase randread:\n",
        "  scheduler     MB/s     IOPS  mean ms  p50 ms  p99 ms  p99.9 ms  max ms  merged  idle ms\n",
        "  kyber      4096.00  1000000    0.060   0.055   0.120     0.200   0.900       3    0.000\n",
        "why (randread):\n",
        "  kyber: merges 2 back + 1 front, 7 plugs; held 1.5 in the scheduler, 30.0 at the device; seeks mean 0 max 0 sectors; idle 0.000 ms; blocked 0.000 ms; longest wait 0.040 ms\n",
        "units: MB = 10^6 bytes (MiB = 2^20); ms = 10^-3 s\n",
    );

    /// `run` with its phase's own block-layer figures, as simulated runs have them.
    fn with_phase_queue(mut run: Run) -> Run {
        for phase in &mut run.phases {
            phase.queue_stats = Some(run.queue_stats.clone());
        }
        run
    }

    // Proves a run with host CPU figures gets its core, thread, lock and per-request tables
    // after its "why", with shares computed over the window (core 0: 600 ms sys of 1 s =
    // 60.0 %; lock: 500 K of 2 M contended = 25.0 %, 500+100 ms of 1 s occupied = 60.0 %;
    // submit: 1.5 s over 1 M requests = 1500 ns), path steps in request order, and the why
    // line naming the device at 99 % busy (990 ms of the 1 s window).
    #[test]
    fn host_cpu_tables_and_the_device_bottleneck_are_rendered() {
        let cpu_run = Run { host_cpu: Some(host_cpu()), ..run("mq-deadline") };
        let text = text(&report(vec![run("none"), cpu_run]));
        let lines: Vec<&str> = text.lines().collect();
        let line = |start: &str| -> &str {
            lines.iter().find(|line| line.starts_with(start)).unwrap_or_else(|| panic!("{text}"))
        };
        assert!(
            line("  mq-deadline: merges").ends_with("; bottleneck: device (busy 99 %)"),
            "{text}"
        );
        assert!(line("  none: merges").ends_with("longest wait 0.040 ms"), "{text}");
        let words = |line: &str| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert!(
            line("host CPU (mq-deadline): 2 cores over 1000.000 ms, 1000000 requests")
                .starts_with("host CPU")
        );
        assert_eq!(
            words(line("  0 ")),
            ["0", "90.0", "10.0", "60.0", "5.0", "2.0", "13.0", "1.25"]
        );
        assert_eq!(
            words(line("  job/0")),
            ["job/0", "application", "0", "73.0", "13.0", "7.000", "150.000"]
        );
        assert_eq!(
            words(line("  mq-deadline nvme0n1")),
            ["mq-deadline", "nvme0n1", "2000000", "25.0", "0.250", "4.100", "400000", "60.0"]
        );
        let submit = lines.iter().position(|line| line.starts_with("  submit")).unwrap();
        let device = lines.iter().position(|line| line.starts_with("  device")).unwrap();
        assert!(submit < device, "{text}");
        assert_eq!(words(lines[submit]), ["submit", "1500", "2.4"]);
        assert_eq!(words(lines[device]), ["device", "60000", "97.6"]);
        // The tables come after the why lines, and only for the run that has the figures.
        assert!(text.find("host CPU").unwrap() > text.find("why:").unwrap());
        assert_eq!(text.matches("host CPU (").count(), 1);
    }

    // Proves the why line names a saturated lock (with its occupancy and wait p99) or a
    // saturated core, in the per-phase why of simulated runs too, says "over the run" when
    // the run has several phases, and otherwise says nothing is saturated and how close the
    // device and the busiest core came.
    #[test]
    fn the_why_line_names_the_lock_the_core_or_nothing() {
        let why = |cpu: HostCpu, phases: usize| {
            let mut run = with_phase_queue(run("bfq"));
            let second = Phase { name: "second".to_owned(), ..run.phases[0].clone() };
            run.phases.extend(std::iter::repeat_n(second, phases - 1));
            run.host_cpu = Some(cpu);
            let text = text(&report(vec![run]));
            let line = text.lines().find(|line| line.starts_with("  bfq: merges")).unwrap();
            line.split_once("; bottleneck").map(|(_, why)| why.to_owned()).unwrap()
        };
        let mut cpu = host_cpu();
        cpu.locks[0].hold_ns = 870_000_000;
        assert_eq!(
            why(cpu.clone(), 1),
            ": lock mq-deadline nvme0n1 (occupied 97 %, wait p99 4.1 µs)"
        );
        cpu.locks[0].hold_ns = 0;
        cpu.cores[1].busy_percent = 99.4;
        assert_eq!(why(cpu.clone(), 2), " over the run: core 1 (99 % busy)");
        cpu.cores[1].busy_percent = 10.0;
        cpu.window_ns = 2_000_000_000;
        assert_eq!(why(cpu, 1), ": none (device busy 50 %, busiest core 0 90 %)");
    }

    fn csv(report: &Report) -> String {
        let mut out = Vec::new();
        render(report, Format::Csv, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    // Proves the CSV gains the host CPU columns only when a run has the figures: a report
    // without them keeps its header and rows, one with them sums the cores' time (core 0 and
    // the empty core 1: 600 ms sys), names the bottleneck, and leaves a run without figures
    // blank in those columns.
    #[test]
    fn csv_has_host_cpu_columns_only_when_a_run_has_them() {
        let plain = csv(&report(vec![run("none")]));
        assert!(!plain.contains("host_cpu"), "{plain}");
        assert_eq!(plain.lines().next().unwrap().split(',').count(), 23);
        let cpu_run = Run { host_cpu: Some(host_cpu()), ..run("mq-deadline") };
        let both = csv(&report(vec![run("none"), cpu_run]));
        let rows: Vec<Vec<&str>> = both.lines().map(|line| line.split(',').collect()).collect();
        assert_eq!(rows[0][23..], HOST_CPU_CSV_COLUMNS);
        assert_eq!(rows[1][..23], plain.lines().nth(1).unwrap().split(',').collect::<Vec<_>>());
        assert!(rows[1][23..].iter().all(|cell| cell.is_empty()), "{both}");
        assert_eq!(
            rows[2][23..],
            [
                "1000000000",
                "100000000",
                "600000000",
                "50000000",
                "20000000",
                "130000000",
                "7000000",
                "device"
            ]
        );
    }

    // Proves a hand-edited report whose host CPU figures would overflow when summed renders
    // as text and CSV instead of panicking.
    #[test]
    fn huge_host_cpu_figures_do_not_overflow() {
        let mut cpu = host_cpu();
        cpu.path_ns.values_mut().for_each(|nanos| *nanos = u64::MAX);
        cpu.cores.iter_mut().for_each(|core| core.user_ns = u64::MAX);
        cpu.threads.iter_mut().for_each(|thread| thread.core_wait_ns = u64::MAX);
        cpu.locks[0].hold_ns = u64::MAX;
        cpu.locks[0].handoff_ns = u64::MAX;
        let report = report(vec![Run { host_cpu: Some(cpu), ..run("bfq") }]);
        assert!(text(&report).contains("; bottleneck: lock mq-deadline nvme0n1"));
        assert!(csv(&report).contains(&u64::MAX.to_string()));
    }

    /// The text report of two runs without `host_cpu`, as rendered before it existed.
    const GOLDEN_WITHOUT_HOST_CPU: &str = concat!(
        "fio:randread on nvme-gen4-consumer (simulated, seed 42)\n",
        "phase randread:\n",
        "  scheduler       MB/s     IOPS  mean ms  p50 ms  p99 ms  p99.9 ms  max ms  merged  idle ms\n",
        "  none         4096.00  1000000    0.060   0.055   0.120     0.200   0.900       3    0.000\n",
        "  mq-deadline  4096.00  1000000    0.060   0.055   0.120     0.200   0.900       3    0.000\n",
        "best: MB/s (higher is better) mq-deadline (+0.0% over none); p99 (lower is better) none (100.0% of mq-deadline's)\n",
        "units: MB = 10^6 bytes (MiB = 2^20); ms = 10^-3 s\n",
        "why:\n",
        "  none: merges 2 back + 1 front, 7 plugs; held 1.5 in the scheduler, 30.0 at the device; seeks mean 0 max 0 sectors; idle 0.000 ms; blocked 0.000 ms; longest wait 0.040 ms\n",
        "  mq-deadline: merges 2 back + 1 front, 7 plugs; held 1.5 in the scheduler, 30.0 at the device; seeks mean 0 max 0 sectors; idle 0.000 ms; blocked 0.000 ms; longest wait 0.040 ms\n",
    );
}
