//! `elevator completions` and `elevator man`: shell completions and manual pages, generated
//! from the same clap definition the binary parses with, so they cannot drift from it.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::args::Args;

/// Writes the completion script for `shell`.
pub(crate) fn completions(shell: Shell, stdout: &mut dyn Write) -> Result<()> {
    let mut command = Args::command();
    clap_complete::generate(shell, &mut command, "elevator", stdout);
    Ok(())
}

/// Writes the top manual page to `stdout`, or every page (one per subcommand, nested ones
/// named `elevator-kernel-show.1`) into `directory`, printing the paths written.
pub(crate) fn man(directory: Option<&Path>, stdout: &mut dyn Write) -> Result<()> {
    let command = Args::command();
    let Some(directory) = directory else {
        clap_mangen::Man::new(command).render(stdout)?;
        return Ok(());
    };
    std::fs::create_dir_all(directory)
        .with_context(|| format!("creating {}", directory.display()))?;
    let mut command = command;
    // Subcommand pages name their parent (`elevator-kernel`), which clap fills in only when
    // the tree is built.
    command.build();
    write_pages(&command, directory, stdout)
}

fn write_pages(command: &clap::Command, directory: &Path, stdout: &mut dyn Write) -> Result<()> {
    let name = command.get_display_name().unwrap_or_else(|| command.get_name());
    let path = directory.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone()).render(&mut page)?;
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    writeln!(stdout, "{}", path.display())?;
    for subcommand in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        write_pages(subcommand, directory, stdout)?;
    }
    Ok(())
}
