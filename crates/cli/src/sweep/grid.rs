//! `elevator sweep GRID.toml` on this machine's cores: the Python package's local sweep
//! (python/elevator/sweep.py) done in Rust, so that a sweep needs no Python unless it goes to
//! Ray (`--ray`, which hands the grid to the package).
//!
//! The grid file, its expansion, the table written and the resume journal are the package's,
//! byte for byte (python/tests/test_sweep.py compares them):
//!
//! * GRID.toml: `[grid]`, a table whose values are lists of choices (a value that is not a
//!   list is one choice), expanded to their product in the keys' order, the last key varying
//!   fastest; `[[config]]` tables, one configuration each, coming first; `seed`, the seed of
//!   configurations that name none (1 by default). Keys are `elevator.sim`'s keyword
//!   arguments: device, workload, schedulers, seed, host, max_size, max_runtime_ns,
//!   nr_requests, read_ahead_kb, max_sectors_kb, plugging, depth.
//! * The rows: per configuration its report's rows (run × phase × job, as the package's
//!   `Report.rows`, `report_rows` in python/elevator/_report.py), headed by `config` (its index),
//!   `error` (empty, or why it failed: then it is that one row) and `cfg.<key>` (its
//!   arguments; a list comma-joined); the columns in first-seen order. CSV as Python's `csv`
//!   module writes it (`\r\n` lines, values as Python's `str`: `1.5e-05`, `True`), or JSON
//!   Lines as `json.dumps` (`", "` and `": "` separators, ASCII only).
//! * `--resume PATH`: JSON Lines `{"key": <the configuration as json.dumps(sort_keys=True)>,
//!   "result": {"rows": [...]} | {"error": "..."}}`, appended as each configuration finishes;
//!   configurations found there without an error are not run again.
//!
//! # Deviations
//!
//! * A value of the wrong type (`nr_requests = "x"`, `plugging = 1`) fails its configuration
//!   with this module's message (`nr_requests "x": not a whole number in 0..=4294967295`)
//!   where the package raises Python's `TypeError`/`OverflowError` text.
//! * A TOML date-time as a value is written in TOML's syntax where Python writes
//!   `datetime.__str__` (`2024-01-01 00:00:00`); no `elevator.sim` argument takes one.
//! * Each configuration's schedulers run one after the other on its worker thread (the package
//!   gives each its own thread); the results are the same, the simulation being deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};
use elevator_report::Report;
use elevator_sim::plan::{self, PlanArgs};
use serde::Deserialize;

/// `elevator.sim`'s block-queue keywords, as the package's `QUEUE_KEYS`.
const QUEUE_KEYS: [&str; 5] =
    ["nr_requests", "read_ahead_kb", "max_sectors_kb", "plugging", "depth"];

/// Every keyword `elevator.sim` takes, in the order its error message lists them.
const SIM_KEYS: [&str; 9] = [
    "device",
    "workload",
    "schedulers",
    "seed",
    "host",
    "max_size",
    "max_runtime_ns",
    "dispatch_samples",
    "interval",
];

/// One configuration: `elevator.sim`'s keyword arguments in the file's order (its `seed`
/// last when the sweep's was added).
#[derive(Debug, Clone)]
pub(crate) struct Config {
    params: Vec<(String, toml::Value)>,
}

impl Config {
    fn get(&self, key: &str) -> Option<&toml::Value> {
        self.params.iter().find(|(name, _)| name == key).map(|(_, value)| value)
    }

    /// Its identity in a resume file: `json.dumps(config, sort_keys=True, default=str)`.
    fn key(&self) -> String {
        let sorted: BTreeMap<&str, &toml::Value> =
            self.params.iter().map(|(key, value)| (key.as_str(), value)).collect();
        let mut out = String::from("{");
        for (index, (key, value)) in sorted.into_iter().enumerate() {
            if index > 0 {
                out.push_str(", ");
            }
            py_json_str(&mut out, key);
            out.push_str(": ");
            py_json_toml(&mut out, value);
        }
        out.push('}');
        out
    }
}

/// A table cell: the JSON scalars a report row holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
}

impl Cell {
    fn from_json(value: &serde_json::Value) -> Cell {
        match value {
            serde_json::Value::Null => Cell::Null,
            serde_json::Value::Bool(flag) => Cell::Bool(*flag),
            serde_json::Value::Number(number) => match (number.as_i64(), number.as_u64()) {
                (Some(int), _) => Cell::Int(int.into()),
                (None, Some(int)) => Cell::Int(int.into()),
                _ => Cell::Float(number.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(text) => Cell::Str(text.clone()),
            // Rows hold scalars only; anything else is kept as its JSON text.
            other => Cell::Str(other.to_string()),
        }
    }

    /// As the package's `_cell`: a list is its items' `str` comma-joined.
    fn from_toml(value: &toml::Value) -> Cell {
        match value {
            toml::Value::String(text) => Cell::Str(text.clone()),
            toml::Value::Integer(int) => Cell::Int((*int).into()),
            toml::Value::Float(float) => Cell::Float(*float),
            toml::Value::Boolean(flag) => Cell::Bool(*flag),
            toml::Value::Array(items) => {
                Cell::Str(items.iter().map(py_str).collect::<Vec<_>>().join(","))
            }
            other => Cell::Str(py_str(other)),
        }
    }

    /// Python's `str(value)`, as the `csv` module writes it (None: empty).
    fn csv_text(&self) -> String {
        match self {
            Cell::Null => String::new(),
            Cell::Bool(flag) => if *flag { "True" } else { "False" }.to_owned(),
            Cell::Int(int) => int.to_string(),
            Cell::Float(float) => py_float(*float, false),
            Cell::Str(text) => text.clone(),
        }
    }

    /// `json.dumps(value)`.
    fn write_json(&self, out: &mut String) {
        match self {
            Cell::Null => out.push_str("null"),
            Cell::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
            Cell::Int(int) => {
                let _ = write!(out, "{int}");
            }
            Cell::Float(float) => out.push_str(&py_float(*float, true)),
            Cell::Str(text) => py_json_str(out, text),
        }
    }
}

/// One row of the table: column name and cell, in the package's key order.
pub(crate) type Row = Vec<(String, Cell)>;

/// An ordered JSON object of scalars (a row in a resume file; serde_json's map sorts keys).
struct OrderedRow(Row);

impl<'de> Deserialize<'de> for OrderedRow {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = OrderedRow;
            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a row object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<OrderedRow, A::Error> {
                let mut row = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, serde_json::Value>()? {
                    row.push((key, Cell::from_json(&value)));
                }
                Ok(OrderedRow(row))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A line of a resume file.
#[derive(Deserialize)]
struct JournalEntry {
    key: String,
    result: JournalResult,
}

#[derive(Deserialize)]
struct JournalResult {
    rows: Option<Vec<OrderedRow>>,
    error: Option<serde_json::Value>,
}

/// The grid file's tables with the position of every value, so that keys keep the file's
/// order (toml's maps sort them; Python's `tomllib` keeps them).
#[derive(Deserialize)]
struct GridFile {
    grid: Option<BTreeMap<String, toml::Spanned<toml::Value>>>,
    #[serde(default)]
    config: Vec<BTreeMap<String, toml::Spanned<toml::Value>>>,
    seed: Option<toml::Value>,
}

/// `params` in the file's order.
fn in_file_order(
    table: BTreeMap<String, toml::Spanned<toml::Value>>,
) -> Vec<(String, toml::Value)> {
    let mut params: Vec<_> = table.into_iter().collect();
    params.sort_by_key(|(_, value)| value.span().start);
    params.into_iter().map(|(key, value)| (key, value.into_inner())).collect()
}

/// The configurations of the grid file at `path`, in the package's order (`_load_grid`).
pub(crate) fn load(path: &Path) -> Result<Vec<Config>> {
    let name = path.display();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("{name}: cannot read the grid"))?;
    let document: toml::Table = text.parse().map_err(|error: toml::de::Error| {
        let line = error.span().map_or(1, |span| text[..span.start].lines().count().max(1));
        anyhow::anyhow!("{name}: line {line}: {}", error.message().trim())
    })?;
    let unknown: Vec<&str> = document
        .keys()
        .map(String::as_str)
        .filter(|key| !["grid", "config", "seed"].contains(key))
        .collect();
    if !unknown.is_empty() {
        bail!("{name}: unknown table {} (accepted: grid, config, seed)", unknown.join(", "));
    }
    if document.get("grid").is_some_and(|grid| !grid.is_table()) {
        bail!("{name}: grid: not a table");
    }
    match document.get("config") {
        Some(toml::Value::Array(configs)) => {
            if let Some(index) = configs.iter().position(|config| !config.is_table()) {
                bail!("{name}: config[{index}]: not a table");
            }
        }
        Some(_) => bail!("{name}: config[0]: not a table"),
        None => {}
    }
    let file: GridFile = toml::from_str(&text).with_context(|| format!("{name}: reading it"))?;
    let seed = file.seed.unwrap_or(toml::Value::Integer(1));
    let mut configs: Vec<Config> =
        file.config.into_iter().map(|table| Config { params: in_file_order(table) }).collect();
    if let Some(grid) = file.grid {
        configs.extend(expand(&in_file_order(grid)));
    }
    for config in &mut configs {
        if config.get("seed").is_none() {
            config.params.push(("seed".to_owned(), seed.clone()));
        }
    }
    if configs.is_empty() {
        bail!("{name}: no [grid] and no [[config]]: nothing to run");
    }
    Ok(configs)
}

/// The product of `grid`'s choices, the last key varying fastest (`itertools.product`).
fn expand(grid: &[(String, toml::Value)]) -> Vec<Config> {
    let choices: Vec<Vec<&toml::Value>> = grid
        .iter()
        .map(|(_, value)| match value {
            toml::Value::Array(items) => items.iter().collect(),
            one => vec![one],
        })
        .collect();
    let mut configs = vec![Vec::new()];
    for (choice, (key, _)) in choices.iter().zip(grid) {
        configs = configs
            .into_iter()
            .flat_map(|config: Vec<(String, toml::Value)>| {
                choice.iter().map(move |value| {
                    let mut config = config.clone();
                    config.push((key.clone(), (*value).clone()));
                    config
                })
            })
            .collect();
    }
    configs.into_iter().map(|params| Config { params }).collect()
}

/// Runs one configuration as `elevator.sim(**config)`: its rows, or its error message.
fn run_config(config: &Config) -> Result<Vec<Row>, String> {
    let report = simulate(config).map_err(|error| format!("{error:#}"))?;
    let json = serde_json::to_value(&report).map_err(|error| error.to_string())?;
    Ok(report_rows(&json))
}

/// `elevator.sim`'s checks (python/elevator/__init__.py) then the extension's plan
/// ([`elevator_sim::plan::build`], which it calls too) and `run_plan` (crates/py/src/lib.rs),
/// in their order so that the same first error is reported.
fn simulate(config: &Config) -> Result<Report> {
    let mut unknown: Vec<&str> = config
        .params
        .iter()
        .map(|(key, _)| key.as_str())
        .filter(|key| !SIM_KEYS.contains(key) && !QUEUE_KEYS.contains(key))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        bail!(
            "unknown keyword {} (accepted: {}, {})",
            unknown.join(", "),
            SIM_KEYS.join(", "),
            QUEUE_KEYS.join(", ")
        );
    }
    let seed = match config.get("seed") {
        None => 1,
        Some(toml::Value::Integer(seed)) if *seed >= 0 => *seed as u64,
        Some(other) => bail!("seed {}: not a whole number >= 0", py_repr(other)),
    };
    let text =
        |key: &str, default: &str| config.get(key).map_or_else(|| default.to_owned(), py_str);
    let schedulers: Vec<String> = match config.get("schedulers") {
        None => Vec::new(),
        Some(toml::Value::Array(items)) => items.iter().map(py_str).collect(),
        Some(toml::Value::String(one)) => vec![one.clone()],
        Some(other) => bail!("schedulers {}: not a list or a string", py_repr(other)),
    };
    let number = |key: &str, max: u64| -> Result<Option<u64>> {
        match config.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(value))
                if (0..=max as i128).contains(&i128::from(*value)) =>
            {
                Ok(Some(*value as u64))
            }
            Some(other) => bail!("{key} {}: not a whole number in 0..={max}", py_repr(other)),
        }
    };
    let small = |key: &str| -> Result<Option<u32>> {
        Ok(number(key, u64::from(u32::MAX))?.map(|value| value as u32))
    };
    let queue_depth = small("depth")?;
    let nr_requests = small("nr_requests")?;
    let read_ahead_kb = small("read_ahead_kb")?;
    let max_sectors_kb = small("max_sectors_kb")?;
    let plugging = match config.get("plugging") {
        None => None,
        Some(toml::Value::Boolean(flag)) => Some(*flag),
        Some(other) => bail!("plugging {}: not true or false", py_repr(other)),
    };
    let max_size = number("max_size", u64::MAX)?;
    let max_runtime_ns = number("max_runtime_ns", u64::MAX)?;
    let dispatch_samples = number("dispatch_samples", usize::MAX as u64)?;
    let device = text("device", elevator_sim::DEFAULT_DEVICE);
    let workload = text("workload", elevator_sim::DEFAULT_WORKLOAD);
    let host = text("host", elevator_sim::DEFAULT_HOST);
    let interval = config.get("interval").map(py_str);
    let plan = plan::build(&PlanArgs {
        device: &device,
        workload: &workload,
        schedulers: &schedulers,
        seed,
        host: &host,
        nr_requests,
        read_ahead_kb,
        max_sectors_kb,
        plugging,
        depth: queue_depth,
        max_size_bytes: max_size,
        max_runtime_ns,
        dispatch_samples: dispatch_samples.map(|samples| samples as usize),
        interval: interval.as_deref(),
    })?;
    let mut report = Report::new(seed, env!("CARGO_PKG_VERSION"));
    for scheduler in &plan.schedulers {
        report.runs.push(
            elevator_sim::run(&plan.config, scheduler, &plan.workload)
                .with_context(|| format!("simulating under {scheduler}"))?,
        );
    }
    Ok(report)
}

/// The "why" counters, as the package's `WHY_COUNTERS`.
const WHY_COUNTERS: [&str; 12] = [
    "bios",
    "back_merges",
    "front_merges",
    "requests_fused",
    "plugs",
    "sched_queue_mean",
    "device_queue_mean",
    "seek_distance_mean_sectors",
    "seek_distance_max_sectors",
    "max_wait_ns",
    "blocked_ns",
    "idle_ns",
];

/// The rows of a report's JSON: run × phase × job, as the package's `report_rows`.
fn report_rows(report: &serde_json::Value) -> Vec<Row> {
    use serde_json::Value;
    let null = Value::Null;
    let get = |value: &Value, key: &str| Cell::from_json(value.get(key).unwrap_or(&null));
    let mut rows = Vec::new();
    let runs = report["runs"].as_array().map_or(&[][..], Vec::as_slice);
    for (run_index, run) in runs.iter().enumerate() {
        let base: Row = vec![
            ("run".into(), Cell::Int(run_index as i128)),
            ("mode".into(), get(run, "mode")),
            ("experiment".into(), get(run, "experiment")),
            ("device".into(), get(run, "device")),
            ("workload".into(), get(run, "workload")),
            ("scheduler".into(), get(run, "scheduler")),
            ("seed".into(), get(report, "seed")),
            ("dispatched".into(), get(&run["scheduler_stats"], "dispatched")),
            ("merged".into(), get(&run["scheduler_stats"], "merged")),
            ("device_requests".into(), get(&run["device_stats"], "requests")),
            ("device_busy_ns".into(), get(&run["device_stats"], "busy_ns")),
        ];
        let phases = run["phases"].as_array().map_or(&[][..], Vec::as_slice);
        for phase in phases {
            // `phase.get("queue_stats") or run["queue_stats"]`: an empty or null one falls back.
            let why = match phase.get("queue_stats") {
                Some(Value::Object(stats)) if !stats.is_empty() => &phase["queue_stats"],
                _ => &run["queue_stats"],
            };
            let latency = &phase["latency_ns"];
            let mut phase_part: Row = vec![
                ("phase".into(), get(phase, "name")),
                ("phase_duration_ns".into(), get(phase, "duration_ns")),
                ("phase_bytes".into(), get(phase, "bytes")),
                ("phase_ops".into(), get(phase, "ops")),
                ("phase_throughput_bytes_per_s".into(), get(phase, "throughput_bytes_per_s")),
                ("phase_iops".into(), get(phase, "iops")),
            ];
            for key in ["mean", "p50", "p90", "p99", "p99_9", "max"] {
                phase_part.push((format!("phase_latency_ns_{key}"), get(latency, key)));
            }
            phase_part
                .push(("cpu_utilization_percent".into(), get(phase, "cpu_utilization_percent")));
            for key in WHY_COUNTERS {
                phase_part.push((key.into(), get(why, key)));
            }
            let issuers = phase["issuers"].as_array().map_or(&[][..], Vec::as_slice);
            let issuers: Vec<Option<&Value>> =
                if issuers.is_empty() { vec![None] } else { issuers.iter().map(Some).collect() };
            for issuer in issuers {
                let mut job_part: Row = match issuer {
                    None => ["job", "job_bytes", "job_ops", "job_throughput_bytes_per_s"]
                        .into_iter()
                        .map(|key| (key.to_owned(), Cell::Null))
                        .collect(),
                    Some(issuer) => vec![
                        ("job".into(), get(issuer, "name")),
                        ("job_bytes".into(), get(issuer, "bytes")),
                        ("job_ops".into(), get(issuer, "ops")),
                        (
                            "job_throughput_bytes_per_s".into(),
                            get(issuer, "throughput_bytes_per_s"),
                        ),
                    ],
                };
                for key in ["p50", "p99", "max"] {
                    let cell = issuer.map_or(Cell::Null, |issuer| get(&issuer["latency_ns"], key));
                    job_part.push((format!("job_latency_ns_{key}"), cell));
                }
                rows.push(base.iter().chain(&phase_part).chain(&job_part).cloned().collect());
            }
        }
    }
    rows
}

/// What `run` did: the table's rows and the failed configurations' messages.
pub(crate) struct Outcome {
    /// Every row, configurations in grid order.
    pub(crate) rows: Vec<Row>,
    /// `(index, message)` of each failed configuration, in grid order.
    pub(crate) failed: Vec<(usize, String)>,
}

/// Runs `configs` on `threads` threads, skipping those `resume` holds and appending each
/// finished one to it; `done` is called as each finishes.
pub(crate) fn run(
    configs: &[Config],
    threads: usize,
    resume: Option<&Path>,
    done: impl Fn(usize) + Sync,
) -> Result<Outcome> {
    let keys: Vec<String> = configs.iter().map(Config::key).collect();
    let (mut finished, torn) = resume.map(read_journal).transpose()?.unwrap_or_default();
    let todo: Vec<usize> =
        (0..configs.len()).filter(|&index| !finished.contains_key(&keys[index])).collect();
    let journal = resume
        .map(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| {
                    // A torn last line (a sweep killed while writing) is ended, so that the
                    // first entry appended now is a line of its own.
                    if torn {
                        file.write_all(b"\n")?;
                    }
                    Ok(file)
                })
                .with_context(|| format!("--resume {}: cannot open it", path.display()))
        })
        .transpose()?
        .map(Mutex::new);
    let results = elevator_sim::parallel::map_in_order(
        todo.len(),
        threads,
        |slot| {
            let index = todo[slot];
            let result = run_config(&configs[index]);
            let journaled = journal.as_ref().map_or(Ok(()), |file| {
                let line = journal_line(&keys[index], &result);
                // One write per line, flushed as it finishes, as the package's journal.
                file.lock().expect("no thread panics holding it").write_all(line.as_bytes())
            });
            (result, journaled)
        },
        done,
    );
    let mut fresh: BTreeMap<usize, Result<Vec<Row>, String>> = BTreeMap::new();
    for (slot, (result, journaled)) in results.into_iter().enumerate() {
        journaled.context("--resume: writing the journal")?;
        fresh.insert(todo[slot], result);
    }
    let mut outcome = Outcome { rows: Vec::new(), failed: Vec::new() };
    for (index, config) in configs.iter().enumerate() {
        let result = match fresh.remove(&index) {
            Some(result) => result,
            None => Ok(finished.remove(&keys[index]).unwrap_or_default()),
        };
        let mut head: Row = vec![
            ("config".into(), Cell::Int(index as i128)),
            ("error".into(), result.as_ref().err().map_or(Cell::Null, |e| Cell::Str(e.clone()))),
        ];
        head.extend(
            config.params.iter().map(|(key, value)| (format!("cfg.{key}"), Cell::from_toml(value))),
        );
        match result {
            Err(message) => {
                outcome.failed.push((index, message));
                outcome.rows.push(head);
            }
            Ok(rows) if rows.is_empty() => outcome.rows.push(head),
            Ok(rows) => outcome
                .rows
                .extend(rows.into_iter().map(|row| head.iter().cloned().chain(row).collect())),
        }
    }
    Ok(outcome)
}

/// The journal's line for one finished configuration (`_Journal.write`).
fn journal_line(key: &str, result: &Result<Vec<Row>, String>) -> String {
    let mut line = String::from("{\"key\": ");
    py_json_str(&mut line, key);
    line.push_str(", \"result\": ");
    match result {
        Err(message) => {
            line.push_str("{\"error\": ");
            py_json_str(&mut line, message);
            line.push('}');
        }
        Ok(rows) => {
            line.push_str("{\"rows\": [");
            for (index, row) in rows.iter().enumerate() {
                if index > 0 {
                    line.push_str(", ");
                }
                write_json_row(&mut line, row);
            }
            line.push_str("]}");
        }
    }
    line.push_str("}\n");
    line
}

/// The finished configurations of a resume file, by key (`_read_resume`): a torn line (a sweep
/// killed while writing) and failed configurations are ignored. Also whether the file ends
/// with a torn line.
fn read_journal(path: &Path) -> Result<(BTreeMap<String, Vec<Row>>, bool)> {
    let mut done = BTreeMap::new();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok((done, false)),
        Err(error) => return Err(error).with_context(|| format!("--resume {}", path.display())),
    };
    for line in text.lines() {
        let Ok(entry) = serde_json::from_str::<JournalEntry>(line) else { continue };
        if entry.result.error.is_none() {
            let rows = entry.result.rows.unwrap_or_default();
            done.insert(entry.key, rows.into_iter().map(|row| row.0).collect());
        }
    }
    Ok((done, !text.is_empty() && !text.ends_with('\n')))
}

/// Every column of `rows` in first-seen order (the package's `_columns`).
fn columns(rows: &[Row]) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    let mut known = BTreeSet::new();
    for row in rows {
        for (key, _) in row {
            if known.insert(key.as_str()) {
                seen.push(key);
            }
        }
    }
    if seen.is_empty() {
        seen.push("config");
    }
    seen
}

/// The table as Python's `csv.DictWriter` writes it (QUOTE_MINIMAL, `\r\n`).
pub(crate) fn write_csv(out: &mut dyn Write, rows: &[Row]) -> std::io::Result<()> {
    let columns = columns(rows);
    let line = |cells: Vec<String>| {
        let mut text = cells.iter().map(|cell| csv_field(cell)).collect::<Vec<_>>().join(",");
        text.push_str("\r\n");
        text
    };
    out.write_all(line(columns.iter().map(|&name| name.to_owned()).collect()).as_bytes())?;
    for row in rows {
        let cells = columns
            .iter()
            .map(|&name| {
                row.iter()
                    .find(|(key, _)| key == name)
                    .map_or_else(String::new, |(_, cell)| cell.csv_text())
            })
            .collect();
        out.write_all(line(cells).as_bytes())?;
    }
    Ok(())
}

/// A CSV field, quoted when it holds the delimiter, a quote or a line break (`QUOTE_MINIMAL`).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// The table as JSON Lines: `json.dumps(row)` per row.
pub(crate) fn write_jsonl(out: &mut dyn Write, rows: &[Row]) -> std::io::Result<()> {
    for row in rows {
        let mut line = String::new();
        write_json_row(&mut line, row);
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

fn write_json_row(out: &mut String, row: &Row) {
    out.push('{');
    for (index, (key, cell)) in row.iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        py_json_str(out, key);
        out.push_str(": ");
        cell.write_json(out);
    }
    out.push('}');
}

/// Python's `repr(float)` (`json` spells the non-finite ones `NaN`, `Infinity`): the shortest
/// digits that read back to the same value, fixed notation for 1e-4 <= |x| < 1e16, else
/// `d.ddde±XX` (Python's `float_repr_style` "short", Objects/floatobject.c).
fn py_float(value: f64, json: bool) -> String {
    if value.is_nan() {
        return if json { "NaN" } else { "nan" }.to_owned();
    }
    if value.is_infinite() {
        let sign = if value < 0.0 { "-" } else { "" };
        return format!("{sign}{}", if json { "Infinity" } else { "inf" });
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip digits too: `1.2345e-7`.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific.split_once('e').expect("{:e} has an exponent");
    let exponent: i32 = exponent.parse().expect("{:e}'s exponent is a number");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if value < 0.0 { "-" } else { "" };
    // The decimal point's place after the first digit, as Python's `decpt`.
    let point = exponent + 1;
    let body = if !(-4 < point && point <= 16) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!("{first}{fraction}e{exp_sign}{:02}", exponent.abs())
    } else if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    };
    format!("{sign}{body}")
}

/// `json.dumps(text)` (ASCII only: everything outside space..`~` escaped).
fn py_json_str(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// `json.dumps(value, sort_keys=True, default=str)` of a TOML value.
fn py_json_toml(out: &mut String, value: &toml::Value) {
    match value {
        toml::Value::String(text) => py_json_str(out, text),
        toml::Value::Integer(int) => {
            let _ = write!(out, "{int}");
        }
        toml::Value::Float(float) => out.push_str(&py_float(*float, true)),
        toml::Value::Boolean(flag) => out.push_str(if *flag { "true" } else { "false" }),
        toml::Value::Datetime(datetime) => py_json_str(out, &datetime.to_string()),
        toml::Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                py_json_toml(out, item);
            }
            out.push(']');
        }
        toml::Value::Table(table) => {
            out.push('{');
            for (index, (key, item)) in table.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                py_json_str(out, key);
                out.push_str(": ");
                py_json_toml(out, item);
            }
            out.push('}');
        }
    }
}

/// Python's `str(value)` of a TOML value.
fn py_str(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => text.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr(value)` of a TOML value (as a message quotes it).
fn py_repr(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => {
            // Single quotes unless the text holds one and no double quote (`unicode_repr`).
            let quote = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
            let mut out = String::from(quote);
            for c in text.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
            out
        }
        toml::Value::Integer(int) => int.to_string(),
        toml::Value::Float(float) => py_float(*float, false),
        toml::Value::Boolean(flag) => if *flag { "True" } else { "False" }.to_owned(),
        toml::Value::Datetime(datetime) => datetime.to_string(),
        toml::Value::Array(items) => {
            format!("[{}]", items.iter().map(py_repr).collect::<Vec<_>>().join(", "))
        }
        toml::Value::Table(table) => {
            let items: Vec<String> = table
                .iter()
                .map(|(key, item)| {
                    format!("{}: {}", py_repr(&toml::Value::String(key.clone())), py_repr(item))
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves floats are written as Python's repr writes them (the cases where Rust's own
    // formatting differs: exponents, the `.0` of whole numbers, the fixed/scientific switch).
    #[test]
    fn floats_are_written_as_python_writes_them() {
        let cases = [
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e-7, "1.5e-07"),
            (1e16, "1e+16"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
            (123_456_789_012_345_680.0, "1.2345678901234568e+17"),
            (1234.5678, "1234.5678"),
            (-0.0, "-0.0"),
            (f64::INFINITY, "inf"),
        ];
        for (value, python) in cases {
            assert_eq!(py_float(value, false), python, "{value:e}");
        }
        assert_eq!(py_float(f64::NEG_INFINITY, true), "-Infinity");
    }

    // Proves strings are escaped as `json.dumps` escapes them: ASCII only, astral characters
    // as surrogate pairs, control characters as \u00XX.
    #[test]
    fn strings_are_escaped_as_json_dumps() {
        let mut out = String::new();
        py_json_str(&mut out, "a\"b\\c\nd\u{1}é😀\u{7f}");
        assert_eq!(out, r#""a\"b\\c\nd\u0001\u00e9\ud83d\ude00\u007f""#);
    }

    // Proves a grid expands to its product with the last key varying fastest, in the file's
    // key order (not toml's sorted one), [[config]] first, and the file's seed added last.
    #[test]
    fn a_grid_file_expands_in_the_packages_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grid.toml");
        std::fs::write(
            &path,
            "seed = 7\n[[config]]\ndevice = 'ssd'\nseed = 2\n[grid]\nworkload = ['a', 'b']\n\
             device = ['hdd', 'ssd']\nhost = 'host'\n",
        )
        .unwrap();
        let configs = load(&path).unwrap();
        let keys: Vec<String> = configs.iter().map(Config::key).collect();
        assert_eq!(keys[0], r#"{"device": "ssd", "seed": 2}"#);
        let order: Vec<Vec<String>> = configs[1..]
            .iter()
            .map(|config| {
                config
                    .params
                    .iter()
                    .map(|(key, value)| format!("{key}={}", py_str(value)))
                    .collect()
            })
            .collect();
        assert_eq!(
            order,
            [["a", "hdd"], ["a", "ssd"], ["b", "hdd"], ["b", "ssd"]].map(|[w, d]| vec![
                format!("workload={w}"),
                format!("device={d}"),
                "host=host".into(),
                "seed=7".into()
            ])
        );
    }

    // Proves bad grid files are refused naming the file and what is accepted.
    #[test]
    fn bad_grid_files_name_the_file_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        for (text, message) in [
            ("[gird]\n", "bad.toml: unknown table gird (accepted: grid, config, seed)"),
            ("grid = 3\n", "bad.toml: grid: not a table"),
            ("config = [1]\n", "bad.toml: config[0]: not a table"),
            ("seed = 1\n", "bad.toml: no [grid] and no [[config]]: nothing to run"),
            ("[grid\n", "bad.toml: line 1: "),
        ] {
            std::fs::write(&path, text).unwrap();
            let error = format!("{:#}", load(&path).unwrap_err());
            assert!(error.contains(message), "{text:?}: {error}");
        }
    }
}
