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
/// Values are compared as printed, so schedulers that tie at the column's precision are
/// named together, and a column where every scheduler prints the same says so.
pub(crate) fn best_lines(table: &ToolTable, schedulers: &[&str]) -> Vec<String> {
    table
        .columns
        .iter()
        .filter_map(|column| {
            let scale = 10f64.powi(column.decimals as i32);
            let shown = |value: f64| (value * scale).round();
            let present: Vec<(usize, f64)> = column
                .values
                .iter()
                .enumerate()
                .filter_map(|(index, value)| value.map(|v| (index, v)))
                .collect();
            if present.len() < 2 {
                return None;
            }
            // Ranks by the printed value, better first.
            let rank =
                |value: f64| if column.higher_is_better { -shown(value) } else { shown(value) };
            let best_rank = present.iter().map(|&(_, v)| rank(v)).reduce(f64::min)?;
            let worst_rank = present.iter().map(|&(_, v)| rank(v)).reduce(f64::max)?;
            let value_text = |value: f64| format!("{:.*}", column.decimals, value);
            if best_rank == worst_rank {
                return Some(format!(
                    "  {}: all equal at {}",
                    column.header,
                    value_text(present[0].1)
                ));
            }
            let names = |target: f64| {
                let matching: Vec<&str> = present
                    .iter()
                    .filter(|&&(_, v)| rank(v) == target)
                    .map(|&(index, _)| schedulers[index])
                    .collect();
                matching.join(" = ")
            };
            let value_of = |target: f64| {
                present.iter().find(|&&(_, v)| rank(v) == target).map(|&(_, v)| v).unwrap_or(0.0)
            };
            let (best, worst) = (value_of(best_rank), value_of(worst_rank));
            let margin = if worst == 0.0 {
                format!("{} at 0", names(worst_rank))
            } else if column.higher_is_better {
                format!("{:+.1}% over {}", (best / worst - 1.0) * 100.0, names(worst_rank))
            } else {
                format!("{:.1}% less than {}", (1.0 - best / worst) * 100.0, names(worst_rank))
            };
            Some(format!(
                "  {}: {} {} ({margin})",
                column.header,
                names(best_rank),
                value_text(best)
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(higher_is_better: bool, decimals: usize, values: &[f64]) -> ToolTable {
        ToolTable {
            columns: vec![Column {
                header: "x".to_owned(),
                values: values.iter().map(|&v| Some(v)).collect(),
                higher_is_better,
                decimals,
            }],
        }
    }

    const SCHEDULERS: [&str; 4] = ["noop", "anticipatory", "deadline", "cfq"];

    // Proves the best line names the best and the worst with the margin between them, for
    // both directions of "better".
    #[test]
    fn best_line_names_best_and_worst_with_the_margin() {
        let higher = best_lines(&table(true, 1, &[100.0, 80.0, 120.0, 90.0]), &SCHEDULERS);
        assert_eq!(higher, ["  x: deadline 120.0 (+50.0% over anticipatory)"]);
        let lower = best_lines(&table(false, 1, &[100.0, 80.0, 120.0, 90.0]), &SCHEDULERS);
        assert_eq!(lower, ["  x: anticipatory 80.0 (33.3% less than deadline)"]);
    }

    // Proves ties are judged as printed: schedulers equal at the column's precision are
    // named together, and a column where all print the same says so instead of inventing a
    // winner.
    #[test]
    fn ties_at_the_printed_precision_are_named_together() {
        let tied = best_lines(&table(true, 0, &[28031.2, 24185.0, 28030.9, 25598.0]), &SCHEDULERS);
        assert_eq!(tied, ["  x: noop = deadline 28031 (+15.9% over anticipatory)"]);
        let equal = best_lines(&table(true, 1, &[89.21, 89.24, 89.19, 89.2]), &SCHEDULERS);
        assert_eq!(equal, ["  x: all equal at 89.2"]);
        let zero = best_lines(&table(true, 2, &[0.0, 0.0, 1.0, 0.0]), &SCHEDULERS);
        assert_eq!(zero, ["  x: deadline 1.00 (noop = anticipatory = cfq at 0)"]);
    }

    // Proves a column with fewer than two values (one scheduler, or the rest missing) gets
    // no best line.
    #[test]
    fn a_single_value_has_no_best_line() {
        let mut one = table(true, 1, &[1.0, 2.0]);
        one.columns[0].values[1] = None;
        assert!(best_lines(&one, &SCHEDULERS).is_empty());
    }
}
