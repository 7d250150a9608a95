//! The command line as the user types it (clap's "low" arguments). Validation into built
//! objects happens in the command modules.

use clap::{Parser, Subcommand, ValueEnum};

/// Run, measure and compare Linux I/O schedulers.
///
/// elevator re-implements the kernel's I/O schedulers (noop, deadline, cfq; anticipatory and
/// the blk-mq set are coming) with their tunables, sysfs names and defaults, and runs them in a
/// deterministic simulator, live in front of a real device, or side by side with the kernel's
/// own.
#[derive(Debug, Parser)]
#[command(name = "elevator", version, about, long_about, propagate_version = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List schedulers with their tunables (units, defaults, ranges).
    ///
    /// `elevator list schedulers deadline:fifo_batch=8` shows the tunables a spec resolves to,
    /// which is also a way to check a spec before using it.
    List(ListArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// What to list.
    #[arg(value_enum, default_value_t = ListWhat::Schedulers)]
    pub(crate) what: ListWhat,

    /// Scheduler specs (NAME[:key=value,...]) to show resolved instead of every scheduler's
    /// defaults.
    #[arg(value_name = "SPEC")]
    pub(crate) specs: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub(crate) format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ListWhat {
    /// I/O schedulers.
    Schedulers,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Human-readable tables.
    Table,
    /// JSON on one document.
    Json,
}
