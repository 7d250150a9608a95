//! `elevator`: parse the command line, run the command, render, exit.
//!
//! Exit codes: 0 success, 1 a check or comparison failed, 2 a usage or input error, 75 the
//! kernel said busy (try again), 128 + the signal for a live or kernel run stopped by one
//! (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP), after printing its partial report. stdout
//! carries only the requested output; diagnostics go to stderr. A closed stdout (`| head`)
//! counts as success.

mod advise;
mod args;
mod calibrate;
mod compare;
mod conform;
mod fio_front;
mod fio_live;
mod kernel;
mod list;
mod manual;
mod plan;
mod replay;
mod report_cmd;
mod run;
mod sim;
mod sweep;
mod term;
mod trace;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::args::{Args, Command};

/// Usage or input error.
const EXIT_USAGE: u8 = 2;
/// The kernel refused for now (EBUSY): try again (sysexits' EX_TEMPFAIL).
const EXIT_TEMPORARY: u8 = 75;
/// A check failed (a verified block read back wrong, an I/O failed).
const EXIT_CHECK_FAILED: u8 = 1;
/// A live or kernel run stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// The run was stopped by a signal; its partial report was printed. Exit code 128 + the
/// signal (130 when the signal is not known).
#[derive(Debug, Default)]
pub(crate) struct Interrupted {
    /// The signal, when known.
    pub(crate) signal: Option<i32>,
}

impl Interrupted {
    fn exit_code(&self) -> u8 {
        self.signal.and_then(|signal| u8::try_from(128 + signal).ok()).unwrap_or(EXIT_INTERRUPTED)
    }
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// A check that failed: the command ran, and what it found is wrong. Exit code 1.
#[derive(Debug)]
pub(crate) struct CheckFailed(pub(crate) String);

impl std::fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckFailed {}

/// `fio`'s command line: fio's exit codes (§1.8: 1 for bad input), nothing on stderr on
/// success, and a closed stdout counts as success.
fn fio_main(args: &[String]) -> ExitCode {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let result = fio_front::run(args, &mut out).and_then(|()| {
        out.flush().map_err(|error| fio_front::FioFailure {
            message: format!("fio: writing the output: {error}"),
            code: 1,
        })
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) if failure.message.contains("Broken pipe") => ExitCode::SUCCESS,
        Err(failure) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("{}", failure.message);
            }
            ExitCode::from(failure.code)
        }
    }
}

fn main() -> ExitCode {
    // Invoked as `fio` (a link or copy of this binary), the whole command line is fio's.
    let mut raw = std::env::args_os();
    if raw.next().is_some_and(|program| fio_front::invoked_as_fio(&program)) {
        let rest: Vec<String> = raw.map(|arg| arg.to_string_lossy().into_owned()).collect();
        return fio_main(&rest);
    }
    let args = Args::parse();
    term::set_quiet(args.quiet);
    if let Command::Fio(fio_args) = &args.command {
        return fio_main(&fio_args.args);
    }
    if let Some(interval) = args.command.series_interval() {
        elevator_report::series::set_interval(interval).expect("--interval checked when parsed");
    }
    let stdout = io::stdout();
    let mut out = stdout.lock();
    // A report file name no format has is refused before the run, not after it.
    let result = report_cmd::check_output(&args.command).and_then(|()| match &args.command {
        Command::List(list_args) => list::run(list_args, &mut out),
        Command::Sim(sim_args) => sim::run_command(sim_args, &mut out),
        Command::Compare(compare_args) => compare::run_command(compare_args, &mut out),
        Command::Advise(advise_args) => advise::run_command(advise_args, &mut out),
        Command::Sweep(sweep_args) => sweep::run_command(sweep_args, &mut out),
        Command::Run(run_args) => run::run_command(run_args, &mut out),
        Command::Replay(replay_args) => replay::run_command(replay_args, &mut out),
        Command::Kernel(kernel_args) => kernel::run_command(kernel_args, &mut out),
        Command::Conform(conform_args) => conform::run_command(conform_args, &mut out),
        Command::Trace(trace_args) => trace::run_command(trace_args, &mut out),
        Command::Calibrate(calibrate_args) => calibrate::run_command(calibrate_args, &mut out),
        Command::Completions(completions) => manual::completions(completions.shell, &mut out),
        Command::Man(man) => manual::man(man.output.as_deref(), &mut out),
        Command::Report(report_args) => report_cmd::run(report_args, &mut out),
        Command::Fio(_) => unreachable!("handled above"),
    });
    let result = result.and_then(|()| out.flush().map_err(anyhow::Error::from));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) if error.downcast_ref::<Interrupted>().is_some() => {
            ExitCode::from(error.downcast_ref::<Interrupted>().map_or(130, Interrupted::exit_code))
        }
        Err(error) if is_busy(&error) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("elevator: {error:#}");
            }
            ExitCode::from(EXIT_TEMPORARY)
        }
        Err(error) => {
            // stderr is the only place left to say what went wrong.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("elevator: {error:#}");
            }
            if error.downcast_ref::<CheckFailed>().is_some() {
                ExitCode::from(EXIT_CHECK_FAILED)
            } else {
                ExitCode::from(EXIT_USAGE)
            }
        }
    }
}

/// The kernel refused for now (a busy queue): trying again may work.
fn is_busy(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<elevator_kernel::KernelError>().is_some_and(|e| e.is_retryable())
    })
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<elevator_report::WriteError>().is_some_and(|e| e.is_broken_pipe())
            || cause
                .downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(|json| json.io_error_kind())
                .is_some_and(|kind| kind == io::ErrorKind::BrokenPipe)
    })
}
