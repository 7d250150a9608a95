//! fio job files and command-line jobs, parsed into resolved jobs
//! (`/work/shared/specs/fio-compat.md` §1, option catalog §2.1, engines §2.2).
//!
//! [`parse_file`] and [`parse_str`] read a job file, [`parse_command_line`] fio's
//! `--name=a --rw=randread …` jobs; both give a [`FioJobFile`]: its jobs in order, each with
//! its section name, where the section starts, and its options resolved — the global
//! defaults as they stood at the section's header, then its own lines — in the order fio
//! applies them, each with a typed [`FioValue`]. Nothing is run here.
//!
//! How the mapping onto the simulator's workloads consumes it: walk `jobs` in order; for each
//! job, [`FioJob::runnable`] first (non-block engines are refused naming the engine); then read
//! values with [`FioJob::get`], which gives the *last* occurrence (fio's "last wins", §1.7),
//! falling back to fio's defaults (§2.1) when `None`. [`FioJob::options`] keeps every
//! occurrence in order, with the text as written, for fio's JSON `job options` echo and for
//! recording options the simulator does not honour. Percentages ([`FioValue::Percent`]) and
//! ranges drawn per clone stay unresolved: they need the target's size and the run's seed.
//!
//! # Deviations from fio
//!
//! * Environment variables and fio's keywords (`$pagesize`, `$mb_memory`, `$ncpus`) come from
//!   a [`FioEnv`] the caller fills, never from the process, so results are reproducible
//!   (R7). Keyword arithmetic is computed here rather than by `bc`.
//! * Arithmetic in parentheses is always available (Debian's build lacks it, §1.5).
//! * A time with an unknown unit (`runtime=5x`) is an error; sizes ignore an unknown tail as
//!   fio does.
//! * Engine options are known whatever the job's engine (fio looks them up only in the
//!   selected engine's table, §1.7); options of engines that do no block I/O are recorded
//!   untyped, since such jobs cannot run.
//! * `include` looks for the file relative to the including file's directory first when the
//!   name is relative, then as given (fio tries it as given first, i.e. relative to its working
//!   directory); a cycle is an error instead of a stack overflow.
//! * Lines are not limited to 8192 bytes, and section names not to 255 characters.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

pub mod catalog;
mod value;

pub use catalog::{OptionSpec, TimeUnit, ValueType};
pub use value::FioValue;
// fio's file names (`nrfiles`, `filename_format`), for the live runs' targets.
pub use crate::fio_run::file_name;

use value::expression;

/// What `${VAR}` and fio's reserved keywords expand to (§1.4).
#[derive(Clone, Debug, Default)]
pub struct FioEnv {
    /// The environment `${NAME}` reads (unset names expand to nothing).
    pub vars: BTreeMap<String, String>,
    /// `$pagesize`, in bytes.
    pub page_size_bytes: u64,
    /// `$mb_memory`: the host's memory in MiB.
    pub memory_mib: u64,
    /// `$ncpus`: online CPUs.
    pub cpus: u64,
}

/// A parsed job file (or command line).
#[derive(Clone, Debug, Default)]
pub struct FioJobFile {
    /// The jobs, in the order they are defined.
    pub jobs: Vec<FioJob>,
}

/// One option occurrence.
#[derive(Clone, Debug)]
pub struct FioOption {
    /// Its canonical name (aliases resolved).
    pub name: &'static str,
    /// The text after `=` as written (after `${}` and keyword substitution); `None` for a
    /// value-less flag.
    pub written: Option<String>,
    /// The typed value.
    pub value: FioValue,
    /// Whether it came from a global section (or the command line before the first `--name`).
    pub global: bool,
    /// Where it was written.
    pub at: Location,
}

/// A place in a job file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Location {
    /// The file (`command line` for command-line jobs).
    pub file: String,
    /// The 1-based line (argument number on the command line).
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One job: a non-global section.
#[derive(Clone, Debug)]
pub struct FioJob {
    /// Its section's name.
    pub section: String,
    /// Where its section header is.
    pub at: Location,
    /// Its options in the order fio applies them: globals first, then its own.
    pub options: Vec<FioOption>,
}

impl FioJob {
    /// The job's name: the last `name=` (a global one renames later jobs, §1.1), else the
    /// section name.
    pub fn name(&self) -> &str {
        match self.get("name") {
            Some(FioValue::Str(name)) if !name.is_empty() => name,
            _ => &self.section,
        }
    }

    /// The value of option `name` (canonical), the last occurrence winning (§1.7); `None`
    /// when neither the job nor its globals set it.
    pub fn get(&self, name: &str) -> Option<&FioValue> {
        self.options.iter().rev().find(|option| option.name == name).map(|option| &option.value)
    }

    /// The I/O engine: `ioengine`, or fio's default `psync` (§2.2).
    pub fn engine(&self) -> &str {
        match self.get("ioengine") {
            Some(FioValue::Choice { value, .. }) => value,
            _ => "psync",
        }
    }

    /// Whether elevator can run this job: engines that do no block I/O to a local device, or
    /// only CPU or metadata work, cannot (§2.2 "N → reject"); the error names the engine.
    pub fn runnable(&self) -> Result<(), String> {
        let engine = self.engine();
        if catalog::NON_BLOCK_ENGINES.contains(&engine) {
            return Err(format!(
                "job `{}` ({}): ioengine={engine} does no block I/O to a local device, so \
                 elevator cannot run it; runnable engines: {}, and {} (as scheduler none)",
                self.name(),
                self.at,
                catalog::BLOCK_ENGINES.join(", "),
                catalog::PASSTHROUGH_ENGINES.join(", "),
            ));
        }
        Ok(())
    }
}

/// A job file or command line that fio would refuse (§1.8).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FioError {
    /// Where.
    pub at: Location,
    /// The option concerned, when there is one.
    pub option: Option<String>,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl fmt::Display for FioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.option {
            Some(option) => write!(f, "{}: option `{option}`: {}", self.at, self.message),
            None => write!(f, "{}: {}", self.at, self.message),
        }
    }
}

impl std::error::Error for FioError {}

/// An option line waiting for its section's end (options are applied in §1.7's order).
struct Line {
    at: Location,
    name: String,
    value: Option<String>,
}

/// A section being read.
struct Section {
    name: String,
    at: Location,
    lines: Vec<Line>,
}

/// Reads the job file at `path`.
pub fn parse_file(path: &Path, env: &FioEnv) -> Result<FioJobFile, FioError> {
    let mut parser = Parser::new(env);
    parser.read_file(path, None, &mut Vec::new())?;
    parser.finish()
}

/// Reads job-file text; `file` names it in errors and `include`s are relative to `dir`.
pub fn parse_str(text: &str, file: &str, dir: &Path, env: &FioEnv) -> Result<FioJobFile, FioError> {
    let mut parser = Parser::new(env);
    parser.read_text(text, file, dir, &mut Vec::new())?;
    parser.finish()
}

/// Reads fio's command-line jobs (§1.9): `--opt=value` or a bare `--flag`; `--name=X` starts a
/// job (`--name=global…` a global block); options before the first `--name` are global. Long
/// options may be abbreviated to a unique prefix, as getopt allows. Every argument must be a
/// job option: the caller takes out job files and fio's own flags (`--output`, …) first.
pub fn parse_command_line<S: AsRef<str>>(args: &[S], env: &FioEnv) -> Result<FioJobFile, FioError> {
    let mut parser = Parser::new(env);
    parser.read_command_line(args)?;
    parser.finish()
}

/// Reads a whole `fio` command line's jobs as fio does (§1.9): the command-line jobs first,
/// then the job files in order. Options given on the command line before its first `--name`
/// are global to the command-line jobs and to the first job file (PerfKitBenchmarker passes
/// `--filename=DEV jobfile`); each further file starts from no globals. With `sections`, only
/// the job sections named run, and the others are dropped unread (fio does not validate
/// them); global sections are always read.
pub fn parse_invocation<S: AsRef<str>>(
    command_line: &[S],
    files: &[&Path],
    sections: &[String],
    env: &FioEnv,
) -> Result<FioJobFile, FioError> {
    let mut parser = Parser::new(env);
    parser.sections = sections.to_vec();
    parser.read_command_line(command_line)?;
    for (index, path) in files.iter().enumerate() {
        parser.close_section()?;
        if index > 0 {
            parser.globals.clear();
        }
        parser.read_file(path, None, &mut Vec::new())?;
    }
    parser.finish()
}

const COMMAND_LINE: &str = "command line";

/// The catalogued name `prefix` abbreviates: itself when it is a name, else the one option
/// that starts with it.
fn complete_prefix(prefix: &str) -> Result<&'static str, String> {
    if let Some(spec) = catalog::lookup(prefix) {
        return Ok(spec.name);
    }
    let matches: Vec<&'static str> = catalog::OPTIONS
        .iter()
        .flat_map(|spec| std::iter::once(&spec.name).chain(spec.aliases.iter()))
        .filter(|name| name.starts_with(prefix))
        .copied()
        .collect();
    match matches.as_slice() {
        [] if prefix.is_empty() => Err("an option name is required".into()),
        [] => Err(unknown_message(prefix)),
        [one] => Ok(catalog::lookup(one).map_or(one, |spec| spec.name)),
        many => Err(format!("ambiguous abbreviation: {}", many.join(", "))),
    }
}

/// "unknown option", with fio's hint when a known name is close (§1.8: edit distance at most
/// half the name).
fn unknown_message(name: &str) -> String {
    let best = catalog::OPTIONS
        .iter()
        .flat_map(|spec| std::iter::once(&spec.name).chain(spec.aliases.iter()))
        .map(|known| (edit_distance(name, known), *known))
        .min();
    match best {
        Some((distance, known)) if distance * 2 <= name.len() => {
            format!("unknown option; did you mean `{known}`? (`elevator list` names the options)")
        }
        _ => "unknown option: not one of fio 3.33's job options".into(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// Every section whose name starts with `global` is global (§1.1, *observed*).
fn is_global(section: &str) -> bool {
    section.starts_with("global")
}

/// Options applied before the others of their section (`parse.c` `sort_options`, §1.7).
const FIRST: &[&str] = &["kb_base", "unit_base", "lockfile", "cpus_allowed_policy"];

struct Parser<'env> {
    env: &'env FioEnv,
    /// `--section`: the job sections to keep (all when empty).
    sections: Vec<String>,
    /// The defaults: every global option so far, in order.
    globals: Vec<FioOption>,
    current: Option<Section>,
    jobs: Vec<FioJob>,
}

impl<'env> Parser<'env> {
    fn new(env: &'env FioEnv) -> Self {
        Parser { env, sections: Vec::new(), globals: Vec::new(), current: None, jobs: Vec::new() }
    }

    /// Reads command-line job options (see [`parse_command_line`]).
    fn read_command_line<S: AsRef<str>>(&mut self, args: &[S]) -> Result<(), FioError> {
        self.current = Some(Section {
            name: "global".into(),
            at: Location { file: COMMAND_LINE.into(), line: 0 },
            lines: Vec::new(),
        });
        for (index, arg) in args.iter().enumerate() {
            let at = Location { file: COMMAND_LINE.into(), line: index + 1 };
            let arg = arg.as_ref();
            let Some(option) = arg.strip_prefix("--") else {
                return Err(FioError {
                    at,
                    option: None,
                    message: format!("`{arg}` is not a job option (`--name=value`)"),
                });
            };
            let (name, value) = match option.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (option, None),
            };
            let name = complete_prefix(name).map_err(|message| FioError {
                at: at.clone(),
                option: Some(name.to_string()),
                message,
            })?;
            if name == "name" {
                let section = value.clone().unwrap_or_default();
                self.close_section()?;
                self.current =
                    Some(Section { name: section.clone(), at: at.clone(), lines: Vec::new() });
                // Command-line jobs list `name` among their options (§4.2, *observed*).
                if !is_global(&section) {
                    self.push_line(Line { at, name: name.into(), value })?;
                }
                continue;
            }
            self.push_line(Line { at, name: name.into(), value })?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<FioJobFile, FioError> {
        self.close_section()?;
        Ok(FioJobFile { jobs: self.jobs })
    }

    /// Reads `path`; `including` is the file that includes it (whose sections it may not
    /// add to); `stack` the files being read, to catch cycles.
    fn read_file(
        &mut self,
        path: &Path,
        including: Option<&Location>,
        stack: &mut Vec<PathBuf>,
    ) -> Result<(), FioError> {
        let shown = path.display().to_string();
        let fail = |message: String| FioError {
            at: including.cloned().unwrap_or(Location { file: shown.clone(), line: 0 }),
            option: None,
            message,
        };
        let canonical =
            path.canonicalize().map_err(|error| fail(format!("cannot open {shown}: {error}")))?;
        if stack.contains(&canonical) {
            return Err(fail(format!("{shown} includes itself (an include cycle)")));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|error| fail(format!("cannot read {shown}: {error}")))?;
        let dir = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        stack.push(canonical);
        let before = self.current.as_ref().map(|section| section.at.clone());
        let result = self.read_text(&text, &shown, &dir, stack);
        stack.pop();
        result?;
        if including.is_some() && self.current.as_ref().map(|s| s.at.clone()) != before {
            return Err(fail(format!("{shown}: no new sections in included files")));
        }
        Ok(())
    }

    fn read_text(
        &mut self,
        text: &str,
        file: &str,
        dir: &Path,
        stack: &mut Vec<PathBuf>,
    ) -> Result<(), FioError> {
        for (index, raw) in text.lines().enumerate() {
            let at = Location { file: file.to_string(), line: index + 1 };
            // All text from the first `;` or `#` is a comment (§1.1).
            let line = raw.find([';', '#']).map_or(raw, |end| &raw[..end]).trim();
            if line.is_empty() {
                continue;
            }
            if let Some(header) = line.strip_prefix('[') {
                self.close_section()?;
                // fio takes the rest of the line minus its last character (§1.1).
                let name = header.strip_suffix(']').unwrap_or_else(|| {
                    let mut chars = header.chars();
                    chars.next_back();
                    chars.as_str()
                });
                self.current = Some(Section { name: name.to_string(), at, lines: Vec::new() });
                continue;
            }
            if let Some(name) = line.strip_prefix("include") {
                let name = name.trim();
                let given = Path::new(name);
                let path = if given.is_relative() && dir.join(given).exists() {
                    dir.join(given)
                } else {
                    given.to_path_buf()
                };
                self.read_file(&path, Some(&at), stack)?;
                continue;
            }
            let line = self.substitute(line, &at)?;
            let (name, value) = match line.split_once('=') {
                Some((name, value)) => (name.trim().to_string(), Some(value.to_string())),
                None => (line.trim().to_string(), None),
            };
            self.push_line(Line { at, name, value })?;
        }
        Ok(())
    }

    /// `${NAME}` from the environment, then fio's keywords; keyword arithmetic (§1.4).
    fn substitute(&self, line: &str, at: &Location) -> Result<String, FioError> {
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let Some(end) = rest[start..].find('}') else {
                return Err(FioError {
                    at: at.clone(),
                    option: None,
                    message: "`${` without a closing `}`".into(),
                });
            };
            let name = &rest[start + 2..start + end];
            out.push_str(self.env.vars.get(name).map_or("", String::as_str));
            rest = &rest[start + end + 1..];
        }
        out.push_str(rest);
        let keywords = [
            ("$pagesize", self.env.page_size_bytes),
            ("$mb_memory", self.env.memory_mib),
            ("$ncpus", self.env.cpus),
        ];
        let mut substituted = false;
        for (keyword, value) in keywords {
            if out.contains(keyword) {
                out = out.replace(keyword, &value.to_string());
                substituted = true;
            }
        }
        if substituted {
            if let Some((name, value)) = out.split_once('=') {
                if value.contains(['+', '-', '*', '/']) {
                    let result = expression::evaluate(value, expression::Context::Integer)
                        .map_err(|message| FioError {
                            at: at.clone(),
                            option: Some(name.trim().to_string()),
                            message,
                        })?;
                    out = format!("{name}={}", result as i64);
                }
            }
        }
        Ok(out)
    }

    fn push_line(&mut self, line: Line) -> Result<(), FioError> {
        match &mut self.current {
            Some(section) => {
                section.lines.push(line);
                Ok(())
            }
            None => Err(FioError {
                message: format!("option `{}` outside of [] job section", line.name),
                at: line.at,
                option: Some(line.name),
            }),
        }
    }

    /// Types the current section's lines and files it as a global block or a job.
    fn close_section(&mut self) -> Result<(), FioError> {
        let Some(mut section) = self.current.take() else {
            return Ok(());
        };
        let global = is_global(&section.name);
        if !global && !self.sections.is_empty() && !self.sections.contains(&section.name) {
            // `--section` leaves it out, unread (§1.8: skipped sections are not validated).
            return Ok(());
        }
        section.lines.sort_by_key(|line| !FIRST.contains(&line.name.as_str()));
        let mut options: Vec<FioOption> = Vec::with_capacity(section.lines.len());
        for line in section.lines {
            let Some(spec) = catalog::lookup(&line.name) else {
                let message = unknown_message(&line.name);
                let written = match &line.value {
                    Some(value) => format!("{}={value}", line.name),
                    None => line.name.clone(),
                };
                return Err(FioError {
                    at: line.at,
                    option: Some(line.name),
                    message: format!("bad option <{written}>: {message}"),
                });
            };
            let kb_base = kb_base(self.globals.iter().chain(options.iter()));
            let value =
                value::parse_value(spec, line.value.as_deref(), kb_base).map_err(|message| {
                    FioError { at: line.at.clone(), option: Some(spec.name.into()), message }
                })?;
            if spec.name == "kb_base" && !matches!(value, FioValue::Int(1000 | 1024)) {
                return Err(FioError {
                    at: line.at,
                    option: Some(spec.name.into()),
                    message: format!("`{value}`: accepts 1000 or 1024"),
                });
            }
            options.push(FioOption {
                name: spec.name,
                written: line.value,
                value,
                global,
                at: line.at,
            });
        }
        if global {
            self.globals.extend(options);
        } else {
            let mut all = self.globals.clone();
            all.extend(options);
            self.jobs.push(FioJob { section: section.name, at: section.at, options: all });
        }
        Ok(())
    }
}

/// The `kb_base` in effect after `options` (default 1024, §1.6).
fn kb_base<'a>(options: impl Iterator<Item = &'a FioOption>) -> u64 {
    options
        .filter(|option| option.name == "kb_base")
        .filter_map(|option| match option.value {
            FioValue::Int(base) => Some(base),
            _ => None,
        })
        .last()
        .unwrap_or(1024)
}

#[cfg(test)]
mod tests;
