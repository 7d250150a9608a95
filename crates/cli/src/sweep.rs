//! `elevator sweep`: the seeded simulation sweep of `elevator_sim::sweep`, on threads, printed
//! in seed order; or, given a GRID.toml, a grid of simulations on this machine's cores
//! ([`grid`]) or on Ray through the Python package (`--ray`). Exit code 1 when a case failed.

mod grid;

use std::io::Write;

use anyhow::{Context, Result};
use elevator_sim::sweep::{self, CaseResult, Outcome, Summary};
use serde_json::{Value, json};

use crate::CheckFailed;
use crate::args::{ListFormat, SweepArgs};
use crate::term;

pub(crate) fn run_command(args: &SweepArgs, stdout: &mut dyn Write) -> Result<()> {
    if let Some(grid) = &args.grid {
        return run_grid(grid, args, stdout);
    }
    let results = match args.seed {
        Some(seed) => vec![sweep::run_seed(seed, true)],
        None => {
            let seeds = args.from..args.from.saturating_add(args.seeds);
            let jobs = args
                .jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let progress = term::simulation_counter(args.seeds as usize);
            let results = sweep::run_seeds(seeds, jobs, &|_| progress.inc(1));
            progress.finish_and_clear();
            results
        }
    };
    let mut summary = Summary::default();
    for result in &results {
        summary.add(result);
    }
    match (args.format, args.seed) {
        (ListFormat::Table, Some(_)) => write_case(stdout, &results[0])?,
        (ListFormat::Table, None) => write_summary(stdout, args, &summary)?,
        (ListFormat::Json, Some(_)) => {
            serde_json::to_writer_pretty(&mut *stdout, &case_json(&results[0]))?;
            writeln!(stdout)?;
        }
        (ListFormat::Json, None) => {
            serde_json::to_writer_pretty(&mut *stdout, &summary_json(args, &summary))?;
            writeln!(stdout)?;
        }
    }
    match summary.failures.len() {
        0 => Ok(()),
        failed => {
            Err(CheckFailed(format!("{failed} of {} sweep cases failed", summary.cases)).into())
        }
    }
}

/// The interpreter that runs the Python package: `ELEVATOR_PYTHON`, else `python3`.
const PYTHON_ENV: &str = "ELEVATOR_PYTHON";

/// `elevator sweep GRID.toml`: the grid on this machine's cores ([`grid`]), the rows to `-o`
/// (`.csv` or `.jsonl`) or as CSV to stdout; each failed configuration is named on stderr and
/// makes the exit code 1. With `--ray` the Python package runs it instead.
fn run_grid(path: &std::path::Path, args: &SweepArgs, stdout: &mut dyn Write) -> Result<()> {
    if args.ray.is_some() {
        return run_grid_on_ray(path, args);
    }
    let output = args.output.as_deref();
    let jsonl = output.is_some_and(|path| path.extension().is_some_and(|ext| ext == "jsonl"));
    if output.is_some_and(|path| !jsonl && path.extension().is_none_or(|ext| ext != "csv")) {
        anyhow::bail!("-o {}: not .csv or .jsonl", output.unwrap_or(path).display());
    }
    if args.jobs == Some(0) {
        anyhow::bail!("-j 0: at least 1");
    }
    let configs = grid::load(path)?;
    let threads = args.jobs.unwrap_or_else(elevator_sim::parallel::processors);
    let progress = term::simulation_counter(configs.len());
    let outcome = grid::run(&configs, threads, args.resume.as_deref(), |_| progress.inc(1))?;
    progress.finish_and_clear();
    match output {
        Some(file) => {
            let mut writer = std::io::BufWriter::new(
                std::fs::File::create(file)
                    .with_context(|| format!("-o {}: cannot create it", file.display()))?,
            );
            if jsonl {
                grid::write_jsonl(&mut writer, &outcome.rows)?;
            } else {
                grid::write_csv(&mut writer, &outcome.rows)?;
            }
            writer.flush().with_context(|| format!("-o {}: writing it", file.display()))?;
        }
        None => grid::write_csv(stdout, &outcome.rows)?,
    }
    for (index, message) in &outcome.failed {
        term::note(&format!("configuration {index}: {message}"));
    }
    match outcome.failed.len() {
        0 => Ok(()),
        failed => Err(CheckFailed(format!(
            "{failed} of {} configurations of the grid failed",
            configs.len()
        ))
        .into()),
    }
}

/// `elevator sweep GRID.toml --ray [ADDRESS]`: the grid runs through the Python package's
/// sweep (`python3 -m elevator.sweep`, python/elevator/sweep.py) on Ray. Its exit code is
/// passed on: 1 when a configuration failed, 2 for bad input.
fn run_grid_on_ray(grid: &std::path::Path, args: &SweepArgs) -> Result<()> {
    let python = std::env::var_os(PYTHON_ENV).unwrap_or_else(|| "python3".into());
    let mut command = std::process::Command::new(&python);
    command.args(["-m", "elevator.sweep"]).arg(grid);
    if let Some(address) = &args.ray {
        command.arg("--ray");
        if !address.is_empty() {
            command.arg(address);
        }
    }
    if let Some(jobs) = args.jobs {
        command.arg("--workers").arg(jobs.to_string());
    }
    if let Some(resume) = &args.resume {
        command.arg("--resume").arg(resume);
    }
    if let Some(output) = &args.output {
        command.arg("--output").arg(output);
    }
    let status = command.status().map_err(|error| {
        anyhow::anyhow!(
            "running {} -m elevator.sweep: {error} (install the Python package with `pip \
             install ./python`, or name its interpreter in {PYTHON_ENV})",
            python.to_string_lossy()
        )
    })?;
    match status.code() {
        Some(0) => Ok(()),
        Some(1) => Err(CheckFailed("a configuration of the grid failed".to_owned()).into()),
        // The package is missing: say how to get it (python prints `No module named ...`).
        _ => anyhow::bail!(
            "{} -m elevator.sweep {} failed ({status}); is the Python package installed (`pip \
             install ./python`, or its interpreter in {PYTHON_ENV})?",
            python.to_string_lossy(),
            grid.display()
        ),
    }
}

fn replay(seed: u64) -> String {
    format!("elevator sweep --seed {seed}")
}

fn write_case(out: &mut dyn Write, result: &CaseResult) -> Result<()> {
    writeln!(out, "seed       {}", result.seed)?;
    if let Some(case) = &result.case {
        let queue = &case.queue;
        writeln!(out, "scheduler  {}", case.scheduler_text)?;
        writeln!(out, "device     {}", case.device_text)?;
        writeln!(out, "host       {}", case.host_text)?;
        writeln!(
            out,
            "queue      nr_requests={} max_sectors_kb={} read_ahead_kb={} plugging={} depth={}",
            queue.nr_requests,
            queue.max_sectors_kb.map_or_else(|| "driver".to_owned(), |kb| kb.to_string()),
            queue.read_ahead_kb,
            u8::from(queue.plugging),
            queue.depth.map_or_else(|| "device".to_owned(), |depth| depth.to_string())
        )?;
        writeln!(out, "workload   {}", case.workload_text)?;
    }
    let outcome = match &result.outcome {
        Outcome::Ok => format!("ok, {} events", result.events),
        Outcome::Expected { reason } => format!("expected error: {reason}"),
        Outcome::Failed { kind, detail } => format!("FAILED ({}): {detail}", kind.name()),
    };
    writeln!(out, "outcome    {outcome}")?;
    writeln!(
        out,
        "determinism {}",
        if result.determinism_checked { "checked" } else { "not checked" }
    )?;
    if let Some(line) = result.command_line() {
        writeln!(out, "replay     {line}")?;
    }
    Ok(())
}

fn write_summary(out: &mut dyn Write, args: &SweepArgs, summary: &Summary) -> Result<()> {
    for failure in &summary.failures {
        writeln!(out, "seed {}: {}: {}", failure.seed, failure.kind.name(), failure.detail)?;
        writeln!(out, "  replay: {}", replay(failure.seed))?;
        if let Some(line) = &failure.command_line {
            writeln!(out, "          {line}")?;
        }
    }
    let seeds: Vec<String> = summary.failures.iter().map(|f| f.seed.to_string()).collect();
    let failed = if seeds.is_empty() {
        "0 failed".to_owned()
    } else {
        format!("{} failed (seeds {})", seeds.len(), seeds.join(", "))
    };
    writeln!(
        out,
        "sweep: seeds {}..{}: {} configurations, {} ok, {} expected errors, {failed}; \
         {} checked for determinism; {} events",
        args.from,
        args.from.saturating_add(args.seeds),
        summary.cases,
        summary.ok,
        summary.expected,
        summary.determinism_checked,
        summary.events
    )?;
    Ok(())
}

fn case_json(result: &CaseResult) -> Value {
    let (outcome, detail) = match &result.outcome {
        Outcome::Ok => ("ok".to_owned(), Value::Null),
        Outcome::Expected { reason } => ("expected".to_owned(), json!(reason)),
        Outcome::Failed { kind, detail } => (format!("failed:{}", kind.name()), json!(detail)),
    };
    let case = result.case.as_ref().map(|case| {
        json!({
            "scheduler": case.scheduler_text,
            "device": case.device_text,
            "host": case.host_text,
            "workload": case.workload_text,
            "queue": {
                "nr_requests": case.queue.nr_requests,
                "max_sectors_kb": case.queue.max_sectors_kb,
                "read_ahead_kb": case.queue.read_ahead_kb,
                "plugging": case.queue.plugging,
                "depth": case.queue.depth,
            },
        })
    });
    json!({
        "schema": "elevator.sweep-case/1",
        "seed": result.seed,
        "case": case,
        "outcome": outcome,
        "detail": detail,
        "events": result.events,
        "determinism_checked": result.determinism_checked,
        "replay": result.command_line(),
    })
}

fn summary_json(args: &SweepArgs, summary: &Summary) -> Value {
    let failures: Vec<Value> = summary
        .failures
        .iter()
        .map(|failure| {
            json!({
                "seed": failure.seed,
                "kind": failure.kind.name(),
                "detail": failure.detail,
                "replay": replay(failure.seed),
                "command_line": failure.command_line,
            })
        })
        .collect();
    json!({
        "schema": "elevator.sweep/1",
        "from": args.from,
        "seeds": args.seeds,
        "cases": summary.cases,
        "ok": summary.ok,
        "expected": summary.expected,
        "determinism_checked": summary.determinism_checked,
        "events": summary.events,
        "failures": failures,
    })
}
