//! Tables in the shape the classic tools printed: iozone's "Children see throughput" in KB/s
//! with its CPU utilisation, hdparm's MB/sec for `-T` and `-t`, dd's MB/s, seconds and CPU
//! seconds, transactions per minute for OLTP, scan throughput for DSS, MB/s for sequential
//! readers. A row per scheduler, a column per measured phase, a line stating the table's units,
//! and a line per column naming the best scheduler with its margin over the worst.
//!
//! Units follow fio's convention: kB and MB are powers of ten, KiB and MiB powers of two. The
//! tools that printed KB/s or MB/sec in powers of two (iozone, hdparm) keep their label, and
//! their table says `kb_base=1024` under it, as fio does for that setting.

use crate::model::{Phase, Run};

/// The name `run`'s `index`th device has in the run's own config (`device.model.0` is
/// `sda: hdd: ...` in the simulator), so the table never guesses a name the run did not use.
fn device_name(run: &Run, index: usize) -> Option<&str> {
    let model = run.config.get(&format!("device.model.{index}"))?;
    Some(model.split_once(':')?.0)
}

/// Which way a column is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Better {
    /// More is better (throughput, transactions).
    Higher,
    /// Less is better (seconds, latency).
    Lower,
}

impl Better {
    fn describe(self) -> &'static str {
        match self {
            Better::Higher => "higher is better",
            Better::Lower => "lower is better",
        }
    }
}

/// One column: its header, a value per row, and how the best of it is judged.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub(crate) header: String,
    pub(crate) values: Vec<Option<f64>>,
    pub(crate) better: Better,
    pub(crate) decimals: usize,
    /// For a CPU column: each row's CPU time per MB moved, in microseconds, which the best
    /// line judges instead of `values`. A scheduler that moves less data in the same time
    /// also burns less CPU per second; per byte it is not cheaper, and must not win for it.
    pub(crate) cpu_us_per_mb: Option<Vec<Option<f64>>>,
}

/// A tool's table for a group of runs (one per scheduler).
#[derive(Clone, Debug)]
pub(crate) struct ToolTable {
    pub(crate) columns: Vec<Column>,
    /// The table's footnote on units (and names), printed under it.
    pub(crate) units: String,
}

/// The hdparm experiment's machine called its four PATA disks `hda`..`hdd`; the simulator
/// names every device the SCSI way (`sda`..). The table shows the machine's names, and its
/// footnote says which simulated device each is.
/// A count in three significant figures with a k/M/G suffix (powers of ten): `950`, `12.3k`,
/// `4.19M`.
pub(crate) fn compact_count(value: f64) -> String {
    let (scaled, suffix) = match value {
        v if v >= 1e9 => (v / 1e9, "G"),
        v if v >= 1e6 => (v / 1e6, "M"),
        v if v >= 1e3 => (v / 1e3, "k"),
        v => return format!("{v:.0}"),
    };
    let decimals = if scaled >= 100.0 {
        0
    } else if scaled >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.decimals$}{suffix}")
}

fn hdparm_disk_name(index: usize) -> String {
    format!("hd{}", (b'a' + index as u8) as char)
}

fn phase<'a>(run: &'a Run, name: &str) -> Option<&'a Phase> {
    run.phases.iter().find(|phase| phase.name == name)
}

fn column(
    runs: &[&Run],
    header: impl Into<String>,
    better: Better,
    decimals: usize,
    value: impl Fn(&Run) -> Option<f64>,
) -> Column {
    Column {
        header: header.into(),
        values: runs.iter().map(|run| value(run)).collect(),
        better,
        decimals,
        cpu_us_per_mb: None,
    }
}

/// A CPU column, judged by `cpu_seconds` per byte of `phase_name` moved.
fn cpu_column(
    runs: &[&Run],
    header: impl Into<String>,
    decimals: usize,
    phase_name: &str,
    value: impl Fn(&Phase) -> Option<f64>,
    cpu_seconds: impl Fn(&Phase) -> Option<f64>,
) -> Column {
    let mut column =
        column(runs, header, Better::Lower, decimals, |run| value(phase(run, phase_name)?));
    column.cpu_us_per_mb = Some(
        runs.iter()
            .map(|run| {
                let phase = phase(run, phase_name)?;
                let megabytes = phase.bytes as f64 / 1e6;
                (megabytes > 0.0).then_some(cpu_seconds(phase)? * 1e6 / megabytes)
            })
            .collect(),
    );
    column
}

/// The table for `runs` if their workload is one of the classic tools.
pub(crate) fn tool_table(runs: &[&Run]) -> Option<ToolTable> {
    let tool = runs[0].workload.split(':').next().unwrap_or_default();
    const DECIMAL: &str = "MB = 10^6 bytes";
    let (columns, units) = match tool {
        "iozone" => (
            iozone(runs),
            "kb_base=1024: KB = 1024 bytes, as iozone prints; CPU judged per MB (10^6 bytes) moved"
                .to_owned(),
        ),
        "hdparm" => {
            let columns = hdparm(runs);
            let disks = columns.len() / 2;
            let names: Vec<String> = (0..disks)
                .filter_map(|index| {
                    let simulated = device_name(runs[0], index)?;
                    Some(format!("{} = {simulated}", hdparm_disk_name(index)))
                })
                .collect();
            let mut units = "kb_base=1024: MB = 2^20 bytes, as hdparm prints; -T as the hdparm \
                             version prints it (doubled up to 6.8; the write-up's version is \
                             unknown); disks by the study machine's names"
                .to_owned();
            if !names.is_empty() {
                units.push_str(&format!(" (simulated as: {})", names.join(", ")));
            }
            (columns, units)
        }
        "dd" => (dd(runs), format!("{DECIMAL}, as dd prints; CPU judged per MB moved")),
        "oltp" => (oltp(runs), "tpm = transactions per minute; ms = 10^-3 s".to_owned()),
        "dss" => (dss(runs), DECIMAL.to_owned()),
        "seqread" => (seqread(runs), DECIMAL.to_owned()),
        _ => return None,
    };
    let mut units = format!("units: {units}");
    // The study's database tables are relative to RHEL 3's elevator, as its Figure 1 is.
    let baseline = runs.iter().find_map(|run| run.config.get(crate::model::CONFIG_BASELINE));
    if let Some(baseline) = baseline
        && columns.iter().any(|column| column.header == "relative %")
    {
        units.push_str(&format!("; relative % = of the {baseline} row"));
    }
    Some(ToolTable { columns, units })
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
            column(runs, format!("{label} KB/s"), Better::Higher, 0, move |run| {
                let phase = phase(run, name)?;
                // The children's own rates under iozone's stonewall rule when the workload
                // reports them, else the recorder's per-issuer rates.
                let own = phase.counters.get("children_bytes_per_s").map(|&rate| rate as f64);
                let sum = own.unwrap_or_else(|| {
                    phase.issuers.iter().map(|i| i.throughput_bytes_per_s).sum::<f64>()
                });
                Some(sum / 1024.0)
            })
        })
        .collect();
    for &(name, _) in &tests {
        if runs.iter().any(|run| phase(run, name).is_some()) {
            // CPU% is CPU time over the phase's wall time.
            columns.push(cpu_column(
                runs,
                format!("CPU% {name}"),
                1,
                name,
                |phase| phase.cpu_utilization_percent,
                |phase| {
                    let percent = phase.cpu_utilization_percent?;
                    Some(percent / 100.0 * phase.duration_ns as f64 / 1e9)
                },
            ));
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
        let name = hdparm_disk_name(device);
        for (phase_name, label) in [(cached, "-T"), (buffered, "-t")] {
            columns.push(column(
                runs,
                format!("{name} {label} MB/s"),
                Better::Higher,
                2,
                move |run| {
                    let phase = phase(run, &phase_name)?;
                    // What hdparm prints: doubled for -T up to 6.8 (workload `printed_bytes`).
                    let counters = &phase.counters;
                    let printed = counters.get("printed_bytes").or(counters.get("timed_bytes"));
                    let bytes = *printed? as f64;
                    let nanos = *phase.counters.get("timed_ns")? as f64;
                    (nanos > 0.0).then(|| bytes / (1 << 20) as f64 / (nanos / 1e9))
                },
            ));
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
    let (n1, n2) = (name.clone(), name.clone());
    // `time`'s user and sys seconds are CPU time already; each is judged per byte on its own.
    let user = move |phase: &Phase| cpu(phase, true);
    let system = move |phase: &Phase| cpu(phase, false);
    vec![
        column(runs, "MB/s", Better::Higher, 1, move |run| {
            let phase = phase(run, &n1)?;
            Some(copied(phase) as f64 / 1e6 / seconds(phase))
        }),
        column(runs, "seconds", Better::Lower, 3, move |run| Some(seconds(phase(run, &n2)?))),
        cpu_column(runs, "user s", 3, &name, user, user),
        cpu_column(runs, "sys s", 3, &name, system, system),
    ]
}

fn per_minute(phase: &Phase, counter: &str) -> Option<f64> {
    let count = *phase.counters.get(counter)? as f64;
    Some(count / (phase.duration_ns as f64 / 60e9))
}

/// Each value as a share of the baseline run's (the study's RHEL 3 row, as its Figure 1 is
/// drawn), or of the best when no run is a baseline.
fn relative(runs: &[&Run], values: &[Option<f64>]) -> Column {
    let baseline = runs
        .iter()
        .position(|run| run.config.contains_key(crate::model::CONFIG_BASELINE))
        .and_then(|index| values[index]);
    let best = values.iter().flatten().copied().fold(0.0, f64::max);
    let reference = baseline.unwrap_or(best);
    Column {
        header: "relative %".to_owned(),
        values: values
            .iter()
            .map(|value| value.map(|v| if reference > 0.0 { 100.0 * v / reference } else { 0.0 }))
            .collect(),
        better: Better::Higher,
        decimals: 1,
        cpu_us_per_mb: None,
    }
}

/// Transactions per minute and their share of the best, the I/O p99, and why commits took
/// what they took: the mean `log file sync` wait, where the workload counts it (Oracle's
/// processes). Group-commit sizes are in the JSON's counters: a larger group is a symptom of
/// slower log writes, not better or worse in itself, so it has no "best" to name here.
fn oltp(runs: &[&Run]) -> Vec<Column> {
    let tpm = column(runs, "tpm", Better::Higher, 0, |run| {
        per_minute(phase(run, "oltp")?, "transactions")
    });
    let p99 = column(runs, "I/O p99 ms", Better::Lower, 2, |run| {
        Some(phase(run, "oltp")?.latency_ns.p99 as f64 / 1e6)
    });
    let ratio = |run: &Run, numerator: &str, denominator: &str| {
        let counters = &phase(run, "oltp")?.counters;
        let (above, below) = (*counters.get(numerator)?, *counters.get(denominator)?);
        (below > 0).then(|| above as f64 / below as f64)
    };
    let log_sync = column(runs, "log sync ms", Better::Lower, 2, |run| {
        Some(ratio(run, "log_file_sync_ns", "log_file_sync_waits")? / 1e6)
    });
    let relative = relative(runs, &tpm.values);
    let mut columns = vec![tpm, relative, p99];
    // A load without Oracle's counters: leave the column out.
    if log_sync.values.iter().any(Option::is_some) {
        columns.push(log_sync);
    }
    columns
}

/// Scan (query) throughput in MB/s, scans per minute and the share of the best.
fn dss(runs: &[&Run]) -> Vec<Column> {
    let rate = column(runs, "MB/s", Better::Higher, 1, |run| {
        Some(phase(run, "dss")?.throughput_bytes_per_s / 1e6)
    });
    let scans =
        column(runs, "scans/min", Better::Higher, 2, |run| per_minute(phase(run, "dss")?, "scans"));
    let relative = relative(runs, &rate.values);
    vec![rate, relative, scans]
}

/// Aggregate MB/s of the readers, and the slowest reader's.
fn seqread(runs: &[&Run]) -> Vec<Column> {
    vec![
        column(runs, "MB/s", Better::Higher, 1, |run| {
            Some(phase(run, "read")?.throughput_bytes_per_s / 1e6)
        }),
        column(runs, "slowest reader MB/s", Better::Higher, 1, |run| {
            phase(run, "read")?
                .issuers
                .iter()
                .map(|issuer| issuer.throughput_bytes_per_s / 1e6)
                .reduce(f64::min)
        }),
    ]
}

/// "best per column" lines: the best scheduler of each column, which way is better, and its
/// margin over the worst. Values are compared as printed, so schedulers that tie at the
/// column's precision are named together, and a column where every scheduler prints the same
/// says so. A CPU column is judged by CPU time per MB moved (printed to 0.1 µs/MB).
pub(crate) fn best_lines(table: &ToolTable, schedulers: &[&str]) -> Vec<String> {
    table
        .columns
        .iter()
        .filter_map(|column| {
            let (values, decimals, better, label, unit) = match &column.cpu_us_per_mb {
                Some(per_mb) => (
                    per_mb,
                    1,
                    Better::Lower,
                    format!("{} (per MB moved, {})", column.header, Better::Lower.describe()),
                    " µs/MB",
                ),
                None => (
                    &column.values,
                    column.decimals,
                    column.better,
                    format!("{} ({})", column.header, column.better.describe()),
                    "",
                ),
            };
            best_line(values, decimals, better, &label, unit, schedulers)
        })
        .collect()
}

fn best_line(
    values: &[Option<f64>],
    decimals: usize,
    better: Better,
    label: &str,
    unit: &str,
    schedulers: &[&str],
) -> Option<String> {
    let scale = 10f64.powi(decimals as i32);
    let shown = |value: f64| (value * scale).round();
    let present: Vec<(usize, f64)> =
        values.iter().enumerate().filter_map(|(index, value)| value.map(|v| (index, v))).collect();
    if present.len() < 2 {
        return None;
    }
    // Ranks by the printed value, better first.
    let rank = |value: f64| match better {
        Better::Higher => -shown(value),
        Better::Lower => shown(value),
    };
    let best_rank = present.iter().map(|&(_, v)| rank(v)).reduce(f64::min)?;
    let worst_rank = present.iter().map(|&(_, v)| rank(v)).reduce(f64::max)?;
    let value_text = |value: f64| format!("{value:.decimals$}{unit}");
    if best_rank == worst_rank {
        return Some(format!("  {label}: all equal at {}", value_text(present[0].1)));
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
    } else {
        match better {
            Better::Higher => {
                format!("{:+.1}% over {}", (best / worst - 1.0) * 100.0, names(worst_rank))
            }
            Better::Lower => {
                format!("{:.1}% less than {}", (1.0 - best / worst) * 100.0, names(worst_rank))
            }
        }
    };
    Some(format!("  {label}: {} {} ({margin})", names(best_rank), value_text(best)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(better: Better, decimals: usize, values: &[f64]) -> ToolTable {
        ToolTable {
            columns: vec![Column {
                header: "x".to_owned(),
                values: values.iter().map(|&v| Some(v)).collect(),
                better,
                decimals,
                cpu_us_per_mb: None,
            }],
            units: String::new(),
        }
    }

    const SCHEDULERS: [&str; 4] = ["noop", "anticipatory", "deadline", "cfq"];

    // Proves the best line names the best and the worst with the margin between them, for
    // both directions of "better".
    #[test]
    fn best_line_names_best_and_worst_with_the_margin() {
        let higher =
            best_lines(&table(Better::Higher, 1, &[100.0, 80.0, 120.0, 90.0]), &SCHEDULERS);
        assert_eq!(higher, ["  x (higher is better): deadline 120.0 (+50.0% over anticipatory)"]);
        let lower = best_lines(&table(Better::Lower, 1, &[100.0, 80.0, 120.0, 90.0]), &SCHEDULERS);
        assert_eq!(lower, ["  x (lower is better): anticipatory 80.0 (33.3% less than deadline)"]);
    }

    // Proves ties are judged as printed: schedulers equal at the column's precision are
    // named together, and a column where all print the same says so instead of inventing a
    // winner.
    #[test]
    fn ties_at_the_printed_precision_are_named_together() {
        let tied = best_lines(
            &table(Better::Higher, 0, &[28031.2, 24185.0, 28030.9, 25598.0]),
            &SCHEDULERS,
        );
        assert_eq!(
            tied,
            ["  x (higher is better): noop = deadline 28031 (+15.9% over anticipatory)"]
        );
        let equal =
            best_lines(&table(Better::Higher, 1, &[89.21, 89.24, 89.19, 89.2]), &SCHEDULERS);
        assert_eq!(equal, ["  x (higher is better): all equal at 89.2"]);
        let zero = best_lines(&table(Better::Higher, 2, &[0.0, 0.0, 1.0, 0.0]), &SCHEDULERS);
        assert_eq!(
            zero,
            ["  x (higher is better): deadline 1.00 (noop = anticipatory = cfq at 0)"]
        );
    }

    // Proves a column with fewer than two values (one scheduler, or the rest missing) gets
    // no best line.
    #[test]
    fn a_single_value_has_no_best_line() {
        let mut one = table(Better::Higher, 1, &[1.0, 2.0]);
        one.columns[0].values[1] = None;
        assert!(best_lines(&one, &SCHEDULERS).is_empty());
    }

    // Proves a CPU column is judged per byte moved: a scheduler that moved half the data at a
    // lower CPU% spent more CPU per MB and is not called best, the line says the column was
    // judged per MB and that lower is better.
    #[test]
    fn cpu_is_judged_per_byte_moved() {
        let run = |name: &str, bytes: u64, percent: f64| -> Run {
            serde_json::from_value(serde_json::json!({
                "mode": "sim", "device": "d", "workload": "iozone:threads=1",
                "scheduler": name, "config": {},
                "phases": [{
                    "name": "write", "duration_ns": 10_000_000_000u64, "bytes": bytes,
                    "ops": 1, "throughput_bytes_per_s": bytes as f64 / 10.0, "iops": 0.1,
                    "latency_ns": {"mean": 0, "p50": 0, "p90": 0, "p99": 0, "p99_9": 0, "max": 0},
                    "latency_method": {"kind": "exact-nearest-rank"},
                    "cpu_utilization_percent": percent, "issuers": []
                }],
                "scheduler_stats": {"dispatched": 0, "merged": 0, "idle_ns": 0, "counters": {}},
                "queue_stats": {
                    "bios": 0, "back_merges": 0, "front_merges": 0, "requests_fused": 0,
                    "requests_issued": 0, "blocked": 0, "held": 0, "plugs": 0,
                    "seek_distance_sectors": 0
                },
                "device_stats": {
                    "requests": 0, "busy_ns": 0, "seek_distance_sectors": 0, "extra": {}
                }
            }))
            .unwrap_or_else(|e| panic!("a minimal run: {e}"))
        };
        // fast: 1000 MB in 10 s at 20 % = 2 s of CPU, 2000 µs/MB; slow: 500 MB at 15 % =
        // 1.5 s, 3000 µs/MB. By CPU% alone, slow would have won.
        let (fast, slow) = (run("fast", 1_000_000_000, 20.0), run("slow", 500_000_000, 15.0));
        let table = tool_table(&[&fast, &slow]).unwrap();
        let lines = best_lines(&table, &["fast", "slow"]);
        let cpu = lines.iter().find(|line| line.contains("CPU% write")).unwrap();
        assert_eq!(
            cpu,
            "  CPU% write (per MB moved, lower is better): fast 2000.0 µs/MB (33.3% less than \
             slow)"
        );
        assert!(table.units.contains("kb_base=1024"), "{}", table.units);
    }
}
