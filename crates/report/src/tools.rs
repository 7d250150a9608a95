//! Tables in the shape the classic tools printed: iozone's "Children see throughput" in KB/s
//! with its CPU utilisation, hdparm's MB/sec for `-T` and `-t`, dd's MB/s, seconds and CPU
//! seconds, transactions per minute for OLTP, scan throughput for DSS, MB/s for sequential
//! readers. A row per scheduler, a column per measured phase, and a line naming the best
//! scheduler of each column with its margin over the worst.

use crate::model::{Phase, Run};

/// One column: its header, a value per row, and which way is better.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub(crate) header: String,
    pub(crate) values: Vec<Option<f64>>,
    pub(crate) higher_is_better: bool,
    pub(crate) decimals: usize,
}

/// A tool's table for a group of runs (one per scheduler).
#[derive(Clone, Debug)]
pub(crate) struct ToolTable {
    pub(crate) columns: Vec<Column>,
}

fn phase<'a>(run: &'a Run, name: &str) -> Option<&'a Phase> {
    run.phases.iter().find(|phase| phase.name == name)
}

fn column(
    runs: &[&Run],
    header: impl Into<String>,
    higher_is_better: bool,
    decimals: usize,
    value: impl Fn(&Run) -> Option<f64>,
) -> Column {
    Column {
        header: header.into(),
        values: runs.iter().map(|run| value(run)).collect(),
        higher_is_better,
        decimals,
    }
}

/// The table for `runs` if their workload is one of the classic tools.
pub(crate) fn tool_table(runs: &[&Run]) -> Option<ToolTable> {
    let tool = runs[0].workload.split(':').next().unwrap_or_default();
    let columns = match tool {
        "iozone" => iozone(runs),
        "hdparm" => hdparm(runs),
        "dd" => dd(runs),
        "oltp" => oltp(runs),
        "dss" => dss(runs),
        "seqread" => seqread(runs),
        _ => return None,
    };
    Some(ToolTable { columns })
}

/// iozone's "Children see throughput" (the sum of each child's rate, KB/s of 1024 bytes)
/// per test, then its `-+u` CPU utilisation per test.
fn iozone(runs: &[&Run]) -> Vec<Column> {
    let tests = [
        ("write", "initial writers"),
        ("rewrite", "rewriters"),
        ("read", "readers"),
        ("reread", "re-readers"),
    ];
    let mut columns: Vec<Column> = tests
        .iter()
        .filter(|(name, _)| runs.iter().any(|run| phase(run, name).is_some()))
        .map(|&(name, label)| {
            column(runs, format!("{label} KB/s"), true, 0, move |run| {
                let phase = phase(run, name)?;
                Some(phase.issuers.iter().map(|i| i.throughput_bytes_per_s).sum::<f64>() / 1024.0)
            })
        })
        .collect();
    for &(name, _) in &tests {
        if runs.iter().any(|run| phase(run, name).is_some()) {
            columns.push(column(runs, format!("CPU% {name}"), false, 1, move |run| {
                phase(run, name)?.cpu_utilization_percent
            }));
        }
    }
    columns
}

/// hdparm's "N MB in T seconds = R MB/sec" (MB of 2^20 bytes) over its timed loops.
fn hdparm(runs: &[&Run]) -> Vec<Column> {
    let mut columns = Vec::new();
    for device in 0.. {
        let cached = format!("cached-{device}");
        let buffered = format!("device-{device}");
        if !runs.iter().any(|run| phase(run, &cached).is_some()) {
            break;
        }
        let name = format!("sd{}", (b'a' + device as u8) as char);
        for (phase_name, label) in [(cached, "-T"), (buffered, "-t")] {
            columns.push(column(runs, format!("{name} {label} MB/s"), true, 2, move |run| {
                let phase = phase(run, &phase_name)?;
                let bytes = *phase.counters.get("timed_bytes")? as f64;
                let nanos = *phase.counters.get("timed_ns")? as f64;
                (nanos > 0.0).then(|| bytes / (1 << 20) as f64 / (nanos / 1e9))
            }));
        }
    }
    columns
}

/// dd's summary: the rate in MB/s (10^6 bytes), the seconds, and `time`'s user and sys.
fn dd(runs: &[&Run]) -> Vec<Column> {
    let Some(first) = runs[0].phases.first() else { return Vec::new() };
    let name = first.name.clone();
    // A copy moves every byte twice (read and write); dd counts it once.
    let copied = |phase: &Phase| if phase.name == "copy" { phase.bytes / 2 } else { phase.bytes };
    let seconds = |phase: &Phase| phase.duration_ns as f64 / 1e9;
    let cpu = |phase: &Phase, user: bool| -> Option<f64> {
        let total: Option<u64> =
            phase.issuers.iter().map(|i| if user { i.cpu_user_ns } else { i.cpu_sys_ns }).sum();
        total.map(|nanos| nanos as f64 / 1e9)
    };
    let (n1, n2, n3, n4) = (name.clone(), name.clone(), name.clone(), name);
    vec![
        column(runs, "MB/s", true, 1, move |run| {
            let phase = phase(run, &n1)?;
            Some(copied(phase) as f64 / 1e6 / seconds(phase))
        }),
        column(runs, "seconds", false, 3, move |run| Some(seconds(phase(run, &n2)?))),
        column(runs, "user s", false, 3, move |run| cpu(phase(run, &n3)?, true)),
        column(runs, "sys s", false, 3, move |run| cpu(phase(run, &n4)?, false)),
    ]
}

fn per_minute(phase: &Phase, counter: &str) -> Option<f64> {
    let count = *phase.counters.get(counter)? as f64;
    Some(count / (phase.duration_ns as f64 / 60e9))
}

fn relative(values: &[Option<f64>]) -> Column {
    let best = values.iter().flatten().copied().fold(0.0, f64::max);
    Column {
        header: "relative %".to_owned(),
        values: values
            .iter()
            .map(|value| value.map(|v| if best > 0.0 { 100.0 * v / best } else { 0.0 }))
            .collect(),
        higher_is_better: true,
        decimals: 1,
    }
}

/// Transactions per minute and their share of the best.
fn oltp(runs: &[&Run]) -> Vec<Column> {
    let tpm = column(runs, "tpm", true, 0, |run| per_minute(phase(run, "oltp")?, "transactions"));
    let p99 = column(runs, "I/O p99 ms", false, 2, |run| {
        Some(phase(run, "oltp")?.latency_ns.p99 as f64 / 1e6)
    });
    let relative = relative(&tpm.values);
    vec![tpm, relative, p99]
}

/// Scan (query) throughput in MB/s, scans per minute and the share of the best.
fn dss(runs: &[&Run]) -> Vec<Column> {
    let rate =
        column(runs, "MB/s", true, 1, |run| Some(phase(run, "dss")?.throughput_bytes_per_s / 1e6));
    let scans = column(runs, "scans/min", true, 2, |run| per_minute(phase(run, "dss")?, "scans"));
    let relative = relative(&rate.values);
    vec![rate, relative, scans]
}

/// Aggregate MB/s of the readers, and the slowest reader's.
fn seqread(runs: &[&Run]) -> Vec<Column> {
    vec![
        column(runs, "MB/s", true, 1, |run| Some(phase(run, "read")?.throughput_bytes_per_s / 1e6)),
        column(runs, "slowest reader MB/s", true, 1, |run| {
            phase(run, "read")?
                .issuers
                .iter()
                .map(|issuer| issuer.throughput_bytes_per_s / 1e6)
                .reduce(f64::min)
        }),
    ]
}

/// "best per column" lines: the best scheduler of each column and its margin over the worst.
pub(crate) fn best_lines(table: &ToolTable, schedulers: &[&str]) -> Vec<String> {
    table
        .columns
        .iter()
        .filter_map(|column| {
            let present: Vec<(usize, f64)> = column
                .values
                .iter()
                .enumerate()
                .filter_map(|(index, value)| value.map(|v| (index, v)))
                .collect();
            if present.len() < 2 {
                return None;
            }
            let order = |a: &&(usize, f64), b: &&(usize, f64)| a.1.total_cmp(&b.1);
            let (best, worst) = if column.higher_is_better {
                (present.iter().max_by(order)?, present.iter().min_by(order)?)
            } else {
                (present.iter().min_by(order)?, present.iter().max_by(order)?)
            };
            let margin = if worst.1 == 0.0 {
                "n/a".to_owned()
            } else if column.higher_is_better {
                format!("{:+.1}% over {}", (best.1 / worst.1 - 1.0) * 100.0, schedulers[worst.0])
            } else {
                format!(
                    "{:.1}% less than {}",
                    (1.0 - best.1 / worst.1) * 100.0,
                    schedulers[worst.0]
                )
            };
            Some(format!(
                "  {}: {} {:.*} ({margin})",
                column.header, schedulers[best.0], column.decimals, best.1
            ))
        })
        .collect()
}
