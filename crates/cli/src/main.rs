//! `elevator`: parse the command line, run the command, render, exit.
//!
//! Exit codes: 0 success, 1 a check or comparison failed, 2 a usage or input error. stdout
//! carries only the requested output; diagnostics go to stderr. A closed stdout (`| head`)
//! counts as success.

mod args;
mod compare;
mod list;
mod sim;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::args::{Args, Command};

/// Usage or input error.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let args = Args::parse();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let result = match &args.command {
        Command::List(list_args) => list::run(list_args, &mut out),
        Command::Sim(sim_args) => sim::run_command(sim_args, &mut out),
        Command::Compare(compare_args) => compare::run_command(compare_args, &mut out),
    };
    let result = result.and_then(|()| out.flush().map_err(anyhow::Error::from));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            // stderr is the only place left to say what went wrong.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("elevator: {error:#}");
            }
            ExitCode::from(EXIT_USAGE)
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(|json| json.io_error_kind())
                .is_some_and(|kind| kind == io::ErrorKind::BrokenPipe)
    })
}
