//! The boot-time scheduler choice, per kernel generation: which ways of making a choice
//! survive a reboot exist on the running kernel for a given device, how each is written, and
//! which one wins when several apply.
//!
//! | Generation | Per-boot forms | Run time |
//! |---|---|---|
//! | 2.4 | none: every queue runs the one elevator (`elevator_linus`); its tunables are set per device with `elvtune`, from `/etc/rc.local` | `elvtune` |
//! | 2.6.0–2.6.9 | `elevator=` on the boot line, else the Kconfig default | none |
//! | 2.6.10–4.x, single-queue device | `elevator=`, else the Kconfig default; a udev rule at device add | `queue/scheduler` |
//! | 2.6.10–4.x, blk-mq device | a udev rule (`elevator=` never applies to it) | `queue/scheduler` |
//! | 5.0+ | a udev rule (`elevator=` is ignored) | `queue/scheduler` |
//!
//! Sources, as checked:
//! * `Documentation/block/switching-sched.txt` (2.6.x): `elevator=NAME` picks the scheduler at
//!   boot; "as of the Linux 2.6.10 kernel" a device's scheduler can be changed on the fly
//!   through `/sys/block/DEV/queue/scheduler`.
//! * `Documentation/kernel-parameters.txt`: `elevator=` takes `as`, later spelled out
//!   `anticipatory`, `cfq`, `deadline`, `noop`; `block/Kconfig.iosched`'s "Default I/O
//!   scheduler" choice (`CONFIG_DEFAULT_IOSCHED`) is what a queue gets without it.
//! * The anticipatory scheduler left in 2.6.33 (Linux Magazine, "2.6.33 is Out! Say Good Bye
//!   to the Anticipatory Scheduler").
//! * Linux 5.0 removed the legacy schedulers and the single-queue path (commit f382fb0bcef4,
//!   "block: remove legacy IO schedulers"); later kernels log at boot "Kernel parameter
//!   elevator= does not have any effect anymore. Please use sysfs to set IO scheduler for
//!   individual devices."
//!
//! Which form wins [D, from the order in which the kernel and udev act]: a single-queue device
//! gets its elevator when its queue is set up, from `elevator=` or the Kconfig default; udev
//! runs a rule on the device's `add` event, which the kernel sends after the queue exists, so a
//! rule that matches the device switches it afterwards and wins for it. `elevator=` still
//! decides for every other single-queue device. A write to `queue/scheduler` at run time beats
//! both until the next boot (or the rule's next `change` event).
//!
//! Deviations from Linux: `cfq` is accepted on every 2.6 kernel, although it arrived during
//! 2.6 (not checked which release); the anticipatory scheduler's boot-line spelling is `as`
//! before 2.6.18 and `anticipatory` from 2.6.18 [D: the kernel-parameters.txt wording changed
//! in between; the registered name is `anticipatory`].

use std::path::{Path, PathBuf};

use crate::error::KernelError;
use crate::queue::Setting;
use crate::sysfs::BlockDevice;

/// A kernel release as `uname -r` prints it (`2.6.32-754.el6.x86_64`, `2.4.21-27.EL`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRelease {
    /// The whole string.
    pub text: String,
    /// `2` of 2.6.32.
    pub major: u32,
    /// `6` of 2.6.32.
    pub minor: u32,
    /// `32` of 2.6.32 (0 when the release has only two numbers, as `5.14-rc1`).
    pub patch: u32,
}

/// The block-layer generation a kernel release belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// 2.4.x: one elevator, tuned per device with `elvtune`; no scheduler to choose.
    Elevator2_4,
    /// 2.6.0–4.x: the single-queue block layer with its choice of elevators (`elevator=`,
    /// the Kconfig default; sysfs from 2.6.10). Devices whose driver uses blk-mq (3.13 on,
    /// and RHEL 7's backport) ignore `elevator=`.
    SingleQueue,
    /// 5.0 and later: blk-mq only; `elevator=` does nothing.
    BlkMqOnly,
}

impl KernelRelease {
    /// Parses a release string: `MAJOR.MINOR[.PATCH][-anything]`. Errors name the string and
    /// say what is accepted.
    pub fn parse(text: &str) -> Result<KernelRelease, KernelError> {
        let text = text.trim();
        let bad = |why: &str| KernelError::BadRelease { release: text.to_owned(), why: why.into() };
        let numbers: Vec<&str> = text
            .split(|c: char| !c.is_ascii_digit() && c != '.')
            .next()
            .unwrap_or_default()
            .split('.')
            .collect();
        let number = |index: usize| -> Result<Option<u32>, KernelError> {
            match numbers.get(index) {
                None | Some(&"") if index == 2 => Ok(None),
                None | Some(&"") => Err(bad("expected MAJOR.MINOR[.PATCH], as `uname -r` prints")),
                Some(digits) => digits.parse().map(Some).map_err(|_| bad("a number is too large")),
            }
        };
        let major = number(0)?.unwrap_or_default();
        let minor = number(1)?.unwrap_or_default();
        let patch = number(2)?.unwrap_or(0);
        let release = KernelRelease { text: text.to_owned(), major, minor, patch };
        match (major, minor) {
            (2, 4) | (2, 6) | (3..=4, _) | (5.., _) => Ok(release),
            (2, 5) => {
                Err(bad("2.5 was a development series; accepted: 2.4.x, 2.6.x, 3.x and later"))
            }
            _ => Err(bad(
                "kernels before 2.4 are not covered; accepted: 2.4.x, 2.6.x, 3.x and later",
            )),
        }
    }

    /// The running kernel's release, from `ROOT/proc/sys/kernel/osrelease` (what `uname -r`
    /// prints), so that a test can give a fake root.
    pub fn read(system_root: &Path) -> Result<KernelRelease, KernelError> {
        let path = system_root.join("proc/sys/kernel/osrelease");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| KernelError::io(&path, "reading the kernel release", e))?;
        KernelRelease::parse(&text)
    }

    /// Its generation.
    pub fn generation(&self) -> Generation {
        match (self.major, self.minor) {
            (2, 4) => Generation::Elevator2_4,
            (2, _) | (3..=4, _) => Generation::SingleQueue,
            _ => Generation::BlkMqOnly,
        }
    }

    /// Whether it is at least `major.minor.patch`.
    pub fn at_least(&self, major: u32, minor: u32, patch: u32) -> bool {
        (self.major, self.minor, self.patch) >= (major, minor, patch)
    }

    /// Whether `queue/scheduler` switches a device at run time (2.6.10 on, per
    /// switching-sched.txt); before it, only `elevator=` chose.
    pub fn switches_at_run_time(&self) -> bool {
        self.at_least(2, 6, 10)
    }

    /// A Red Hat Enterprise Linux kernel (`2.4.21-27.EL`, `2.6.32-754.el6`).
    pub fn is_red_hat(&self) -> bool {
        self.text.contains(".EL") || self.text.contains(".el")
    }
}

impl std::fmt::Display for KernelRelease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// How a device's request queue is driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// The legacy single-queue request queue: `elevator=` applies to it.
    SingleQueue,
    /// blk-mq (the device has `/sys/block/DEV/mq/`): `elevator=` never applies to it.
    BlkMq,
}

impl QueueKind {
    /// A blk-mq device has `mq/` (its hardware queues) in its sysfs directory.
    pub fn of(device: &BlockDevice) -> QueueKind {
        if device.dir.join("mq").is_dir() { QueueKind::BlkMq } else { QueueKind::SingleQueue }
    }
}

/// The single-queue elevators of 2.6–4.x, by the name `queue/scheduler` lists.
const SINGLE_QUEUE_SCHEDULERS: [&str; 4] = ["noop", "anticipatory", "deadline", "cfq"];

/// The name `queue/scheduler` uses for `name` on a single-queue device of `release`, or the
/// error that says what that kernel has.
pub fn single_queue_scheduler(
    release: &KernelRelease,
    name: &str,
) -> Result<&'static str, KernelError> {
    // The anticipatory scheduler left in 2.6.33.
    let anticipatory = !release.at_least(2, 6, 33);
    let accepted: Vec<String> = SINGLE_QUEUE_SCHEDULERS
        .iter()
        .filter(|&&s| anticipatory || s != "anticipatory")
        .map(|s| (*s).to_owned())
        .collect();
    let canonical = if name == "as" { "anticipatory" } else { name };
    if let Some(found) = SINGLE_QUEUE_SCHEDULERS
        .iter()
        .find(|s| **s == canonical && accepted.contains(&s.to_string()))
    {
        return Ok(found);
    }
    let why = match canonical {
        "anticipatory" => "the anticipatory scheduler left in 2.6.33".to_owned(),
        "mq-deadline" | "kyber" | "bfq" | "none" => format!(
            "`{name}` is a blk-mq scheduler; single-queue devices of this kernel take the \
             single-queue elevators"
        ),
        _ => format!("`{name}` is not one of this kernel's single-queue elevators"),
    };
    Err(KernelError::NotInGeneration {
        release: release.text.clone(),
        scheduler: name.to_owned(),
        why,
        accepted,
    })
}

/// The word for `scheduler` on the boot line of `release`: `elevator=NAME`.
pub fn boot_word(release: &KernelRelease, scheduler: &str) -> String {
    // kernel-parameters.txt spelled the anticipatory scheduler `as` until it was spelled out.
    let name =
        if scheduler == "anticipatory" && !release.at_least(2, 6, 18) { "as" } else { scheduler };
    format!("elevator={name}")
}

/// How the machine's boot line is changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BootLoader {
    /// `grubby` (Red Hat): edits every installed kernel's entry.
    Grubby {
        /// Where it is, on the host (`/sbin/grubby`).
        path: PathBuf,
        /// Whether `/etc/default/grub` exists too (GRUB 2 with grubby, RHEL 7 on): a later
        /// `grub2-mkconfig` rebuilds the entries from it.
        default_grub: bool,
    },
    /// GRUB 2 without grubby: `GRUB_CMDLINE_LINUX` in `/etc/default/grub`, then the
    /// configuration rebuilt.
    Grub2 {
        /// The command that rebuilds `grub.cfg`, as printed.
        mkconfig: String,
        /// Whether that command is installed.
        mkconfig_present: bool,
    },
    /// Legacy GRUB: the `kernel` lines of `menu.lst` / `grub.conf`, read at every boot.
    Legacy {
        /// The file, on the host (`/boot/grub/grub.conf`).
        config: PathBuf,
    },
    /// None found.
    Unknown,
}

/// Where `program` is installed under `root` (its sbin and bin directories), as a path on the
/// host.
fn installed(root: &Path, program: &str) -> Option<PathBuf> {
    ["usr/sbin", "sbin", "usr/bin", "bin"]
        .iter()
        .map(|dir| Path::new("/").join(dir).join(program))
        .find(|path| on(root, path).is_file())
}

/// `path` (absolute, as on the host) under `root`.
fn on(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// The file GRUB 2's defaults live in.
pub const DEFAULT_GRUB: &str = "/etc/default/grub";

impl BootLoader {
    /// What the machine under `root` boots with: grubby when installed (it knows the
    /// distribution's layout), else GRUB 2's `/etc/default/grub`, else legacy GRUB's
    /// `menu.lst` or `grub.conf`.
    pub fn detect(root: &Path) -> BootLoader {
        let default_grub = on(root, Path::new(DEFAULT_GRUB)).is_file();
        if let Some(path) = installed(root, "grubby") {
            return BootLoader::Grubby { path, default_grub };
        }
        if default_grub {
            // Debian's wrapper first; Red Hat names GRUB 2's tools grub2-*.
            let (mkconfig, present) = if let Some(path) = installed(root, "update-grub") {
                (path.display().to_string(), true)
            } else if let Some(path) = installed(root, "grub2-mkconfig") {
                (format!("{} -o /boot/grub2/grub.cfg", path.display()), true)
            } else if let Some(path) = installed(root, "grub-mkconfig") {
                (format!("{} -o /boot/grub/grub.cfg", path.display()), true)
            } else if on(root, Path::new("/boot/grub2")).is_dir() {
                ("grub2-mkconfig -o /boot/grub2/grub.cfg".to_owned(), false)
            } else {
                ("update-grub".to_owned(), false)
            };
            return BootLoader::Grub2 { mkconfig, mkconfig_present: present };
        }
        for config in ["/boot/grub/grub.conf", "/boot/grub/menu.lst"] {
            if on(root, Path::new(config)).is_file() {
                return BootLoader::Legacy { config: PathBuf::from(config) };
            }
        }
        BootLoader::Unknown
    }
}

/// A configuration file as it is to be rewritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEdit {
    /// The file, on the host (`/etc/default/grub`).
    pub path: PathBuf,
    /// Its new content.
    pub text: String,
    /// The lines that changed, as they will read.
    pub changed_lines: Vec<String>,
    /// The `elevator=` word the file had before elevator first changed it, if any.
    pub before: Option<String>,
}

/// The boot-line form of a choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootLinePlan {
    /// `elevator=NAME`.
    pub word: String,
    /// How it gets onto the boot line.
    pub loader: BootLoader,
    /// The file edit, for GRUB 2 and legacy GRUB.
    pub edit: Option<FileEdit>,
    /// What to run (after the edit, if any), as printed.
    pub commands: Vec<String>,
    /// How to take it back.
    pub undo: String,
    /// The form as printed: `#` comments, the changed lines and the commands.
    pub text: String,
}

/// The first line of the note elevator leaves in a boot-loader file it edits.
const MARK: &str = "# elevator: ";

/// Removes every `elevator=` word from a kernel command line and appends `word`. Returns the
/// new line and the first word removed.
pub fn with_elevator(cmdline: &str, word: &str) -> (String, Option<String>) {
    let mut before = None;
    let mut words: Vec<&str> = Vec::new();
    for w in cmdline.split_whitespace() {
        if w.starts_with("elevator=") {
            before.get_or_insert_with(|| w.to_owned());
        } else {
            words.push(w);
        }
    }
    words.push(word);
    (words.join(" "), before)
}

/// `text` (a boot-loader file) with elevator's note and every line `edit_line` changes, or
/// `None` when no line changed. The note records what the file had before elevator first
/// changed it, and is replaced rather than repeated when elevator changes it again.
fn edit_file(
    path: &Path,
    text: &str,
    word: &str,
    command: &str,
    edit_line: impl Fn(&str) -> Option<(String, Option<String>)>,
) -> Option<FileEdit> {
    let mut before_first: Option<Option<String>> = None;
    let mut before_now: Option<String> = None;
    let mut lines = Vec::new();
    let mut changed_lines = Vec::new();
    for line in text.lines() {
        if let Some(note) = line.strip_prefix(MARK) {
            // An earlier run's note: keep what it recorded as the original.
            if let Some(was) = note.split("before: ").nth(1) {
                let was = was.split(';').next().unwrap_or_default().trim();
                before_first.get_or_insert(
                    was.strip_prefix('`').and_then(|w| w.strip_suffix('`').map(str::to_owned)),
                );
            }
            continue;
        }
        match edit_line(line) {
            Some((new, before)) => {
                before_now = before_now.or(before);
                changed_lines.push(new.clone());
                lines.push(new);
            }
            None => lines.push(line.to_owned()),
        }
    }
    if changed_lines.is_empty() {
        return None;
    }
    let before = before_first.unwrap_or(before_now);
    let was = before.as_ref().map_or_else(|| "no elevator= word".to_owned(), |w| format!("`{w}`"));
    let backup = format!("{}.elevator-orig", path.display());
    let mut out = format!(
        "{MARK}`{command}` set `{word}` here; before: {was}; the file before that is {backup}\n"
    );
    for line in lines {
        out.push_str(&line);
        out.push('\n');
    }
    Some(FileEdit { path: path.to_owned(), text: out, changed_lines, before })
}

/// The value of a shell assignment's right-hand side and the quote it used.
fn unquote(value: &str) -> (&str, Option<char>) {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|v| v.rsplit_once(quote)) {
            return (inner.0, Some(quote));
        }
    }
    (value.split_whitespace().next().unwrap_or_default(), None)
}

/// `/etc/default/grub` with `word` in `GRUB_CMDLINE_LINUX` (the line added when missing).
pub fn edit_default_grub(text: &str, word: &str, command: &str) -> FileEdit {
    let path = Path::new(DEFAULT_GRUB);
    let key = "GRUB_CMDLINE_LINUX=";
    let edit = |line: &str| {
        let value = line.trim_start().strip_prefix(key)?;
        let (inner, quote) = unquote(value);
        let (new, before) = with_elevator(inner, word);
        let quote = quote.unwrap_or('"');
        Some((format!("{key}{quote}{new}{quote}"), before))
    };
    edit_file(path, text, word, command, edit).unwrap_or_else(|| {
        let mut text = text.to_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        // An empty one, which the edit then fills.
        text.push_str(&format!("{key}\"\"\n"));
        edit_file(path, &text, word, command, edit).expect("the line just added")
    })
}

/// A legacy GRUB file with `word` on every `kernel` line, or the error when it has none.
pub fn edit_legacy_grub(
    path: &Path,
    text: &str,
    word: &str,
    command: &str,
) -> Result<FileEdit, KernelError> {
    let edit = |line: &str| {
        let trimmed = line.trim_start();
        let rest = trimmed.strip_prefix("kernel")?;
        if !rest.starts_with([' ', '\t']) {
            return None;
        }
        let indent = &line[..line.len() - trimmed.len()];
        let (new, before) = with_elevator(rest, word);
        Some((format!("{indent}kernel {new}"), before))
    };
    edit_file(path, text, word, command, edit).ok_or_else(|| {
        KernelError::BootLoader(format!("{}: no `kernel` line to add {word} to", path.display()))
    })
}

/// The boot-line form that sets `scheduler` (a single-queue name, checked) at every boot of
/// the machine under `root`: through grubby, GRUB 2's defaults or legacy GRUB's file.
/// `booted_with` is the `elevator=` word of the running kernel's command line, which grubby's
/// undo puts back (the files record their own).
pub fn plan_boot_line(
    root: &Path,
    release: &KernelRelease,
    scheduler: &str,
    command: &str,
    booted_with: Option<&str>,
) -> Result<BootLinePlan, KernelError> {
    let word = boot_word(release, scheduler);
    let loader = BootLoader::detect(root);
    let mut edit = None;
    let mut commands = Vec::new();
    let mut text = format!("# Boot line: {word} (every single-queue device, at boot)\n");
    let undo;
    match &loader {
        BootLoader::Grubby { path, default_grub } => {
            commands.push(format!("{} --update-kernel=ALL --args=\"{word}\"", path.display()));
            undo = match booted_with {
                Some(before) => {
                    format!("{} --update-kernel=ALL --args=\"{before}\"", path.display())
                }
                None => {
                    format!("{} --update-kernel=ALL --remove-args=\"elevator\"", path.display())
                }
            };
            if *default_grub {
                text.push_str(&format!(
                    "# {DEFAULT_GRUB} exists: add {word} to its GRUB_CMDLINE_LINUX too, or a \
                     later grub2-mkconfig drops it\n"
                ));
            }
        }
        BootLoader::Grub2 { mkconfig, .. } => {
            let current = std::fs::read_to_string(on(root, Path::new(DEFAULT_GRUB)))
                .map_err(|e| KernelError::io(Path::new(DEFAULT_GRUB), "reading", e))?;
            let planned = edit_default_grub(&current, &word, command);
            text.push_str(&format!("# {DEFAULT_GRUB}, edited:\n"));
            for line in &planned.changed_lines {
                text.push_str(&format!("#   {line}\n"));
            }
            commands.push(mkconfig.clone());
            undo = format!(
                "restore {DEFAULT_GRUB} from {DEFAULT_GRUB}.elevator-orig (or remove {word} \
                 from GRUB_CMDLINE_LINUX), then run {mkconfig}"
            );
            edit = Some(planned);
        }
        BootLoader::Legacy { config } => {
            let current = std::fs::read_to_string(on(root, config))
                .map_err(|e| KernelError::io(config, "reading", e))?;
            let planned = edit_legacy_grub(config, &current, &word, command)?;
            text.push_str(&format!("# {}, every kernel line:\n", config.display()));
            for line in &planned.changed_lines {
                text.push_str(&format!("#   {}\n", line.trim_start()));
            }
            undo = format!(
                "restore {0} from {0}.elevator-orig (or remove {word} from its kernel lines)",
                config.display()
            );
            edit = Some(planned);
        }
        BootLoader::Unknown => {
            text.push_str(&format!(
                "# No grubby, {DEFAULT_GRUB}, /boot/grub/grub.conf or menu.lst here: add {word} \
                 to the kernel command line in the boot loader's configuration\n"
            ));
            undo = format!("remove {word} from the kernel command line");
        }
    }
    for line in &commands {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&format!("# Undo: {undo}\n"));
    Ok(BootLinePlan { word, loader, edit, commands, undo, text })
}

/// Whether [`apply_boot_line`] can apply `plan` on the machine under `root` (running the
/// commands when `run`): the error that it would stop at, found before anything is written
/// (so that `persist --apply` changes nothing, neither the rule nor the boot line, when the
/// boot line cannot be applied). Returns whether commands would run.
pub fn check_boot_line(plan: &BootLinePlan, root: &Path, run: bool) -> Result<bool, KernelError> {
    let runnable = match &plan.loader {
        BootLoader::Unknown => {
            return Err(KernelError::BootLoader(format!(
                "no boot loader configuration found (grubby, {DEFAULT_GRUB}, \
                 /boot/grub/grub.conf, /boot/grub/menu.lst): add {} to the kernel command \
                 line by hand",
                plan.word
            )));
        }
        BootLoader::Grub2 { mkconfig, mkconfig_present: false } if run => {
            return Err(KernelError::BootLoader(format!(
                "`{}` is not installed, so an edited {DEFAULT_GRUB} would not reach the boot \
                 line; with --no-reload elevator writes the file only",
                mkconfig.split_whitespace().next().unwrap_or_default()
            )));
        }
        _ => run && !plan.commands.is_empty(),
    };
    if runnable && root != Path::new("/") {
        return Err(KernelError::BootLoader(
            "boot-loader commands change the running system's boot entries: not run under \
             another system root (use --no-reload to write the files only)"
                .into(),
        ));
    }
    Ok(runnable)
}

/// Applies the boot-line form on the machine under `root`: writes the edited file (keeping
/// the file as it was before elevator first changed it as `FILE.elevator-orig`) and runs the
/// commands, unless `run` is false. Commands run only on the real root, and only when
/// installed ([`check_boot_line`]). Returns what the user should know.
pub fn apply_boot_line(
    plan: &BootLinePlan,
    root: &Path,
    run: bool,
) -> Result<Vec<String>, KernelError> {
    let runnable = check_boot_line(plan, root, run)?;
    let mut notes = Vec::new();
    if let Some(edit) = &plan.edit {
        let path = on(root, &edit.path);
        let backup = PathBuf::from(format!("{}.elevator-orig", path.display()));
        if !backup.exists() {
            std::fs::copy(&path, &backup)
                .map_err(|e| KernelError::io(&backup, "keeping the original", e))?;
        }
        let temporary = PathBuf::from(format!("{}.elevator-tmp", path.display()));
        std::fs::write(&temporary, &edit.text)
            .map_err(|e| KernelError::io(&temporary, "writing", e))?;
        std::fs::rename(&temporary, &path)
            .map_err(|e| KernelError::io(&path, "installing the edited file", e))?;
        notes.push(format!("wrote {} (the original is {})", path.display(), backup.display()));
    }
    if !runnable {
        if !plan.commands.is_empty() {
            notes.push(format!("not run: {}", plan.commands.join("; ")));
        }
        return Ok(notes);
    }
    for line in &plan.commands {
        let words = shell_words(line);
        let Some((program, args)) = words.split_first() else { continue };
        let output = std::process::Command::new(program)
            .args(args)
            .output()
            .map_err(|e| KernelError::BootLoader(format!("running `{line}`: {e}")))?;
        if !output.status.success() {
            return Err(KernelError::BootLoader(format!(
                "`{line}` failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        notes.push(format!("ran {line}"));
    }
    Ok(notes)
}

/// Splits a command line this module printed into words (double quotes group, and are
/// dropped).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// What a 2.4 host offers: `elvtune` lines for `/etc/rc.local`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElvtunePlan {
    /// The `elvtune` command, if any tunable was given.
    pub command: Option<String>,
    /// The form as printed.
    pub text: String,
    /// What the user should know.
    pub warnings: Vec<String>,
}

/// The names the 2.4 elevator answers to here.
const ELEVATOR_2_4: [&str; 2] = ["elevator_linus", "linus"];

/// Where a 2.4 host's boot-time commands go.
pub const RC_LOCAL: &str = "/etc/rc.local";

/// The 2.4 form: there is no scheduler to choose (every queue runs `elevator_linus`), so a
/// choice persists as its `elvtune` tunables, set per device from `/etc/rc.local`
/// (linux-2.4-elevator.md §2: `-r` read_latency, `-w` write_latency, `-b` max_bomb_segments,
/// non-negative integers in cost units; negatives are refused by the kernel).
pub fn plan_elvtune(
    release: &KernelRelease,
    device: &str,
    scheduler: &str,
    settings: &[Setting],
) -> Result<ElvtunePlan, KernelError> {
    if !ELEVATOR_2_4.contains(&scheduler) {
        return Err(KernelError::NotInGeneration {
            release: release.text.clone(),
            scheduler: scheduler.to_owned(),
            why: "a 2.4 kernel has one elevator for every queue and no way to choose another; \
                  persist its elvtune tunables instead"
                .into(),
            accepted: ELEVATOR_2_4.iter().map(|s| (*s).to_owned()).collect(),
        });
    }
    let device = device.trim_start_matches("/dev/");
    let mut flags = Vec::new();
    let mut warnings = Vec::new();
    for setting in settings {
        let flag = match setting.key.as_str() {
            "read_latency" => "-r",
            "write_latency" => "-w",
            "max_bomb_segments" => "-b",
            _ => {
                return Err(KernelError::UnknownKey {
                    device: device.to_owned(),
                    key: setting.key.clone(),
                    scheduler: "elevator_linus".into(),
                    accepted: ["read_latency", "write_latency", "max_bomb_segments"]
                        .map(str::to_owned)
                        .to_vec(),
                    hint: " (elvtune's -r, -w, -b)".into(),
                });
            }
        };
        // The ioctl takes C ints and refuses negatives (spec §2).
        if setting.value.parse::<i32>().map_or(true, |v| v < 0) {
            return Err(KernelError::BadSetting {
                device: device.to_owned(),
                setting: format!("{}={}", setting.key, setting.value),
                why: "expected a non-negative integer in cost units (a budget, not a time)".into(),
            });
        }
        if flag == "-b" && !release.is_red_hat() {
            warnings.push(format!(
                "{release} looks like a vanilla 2.4 kernel, which does not store \
                 max_bomb_segments (elvtune -b is ignored and reads back 0)"
            ));
        }
        flags.push(format!("{flag} {}", setting.value));
    }
    let mut text = format!(
        "# Linux {release}: every queue runs the 2.4 elevator (elevator_linus); no boot \
         parameter or file chooses another.\n# Its tunables are per device and last until \
         reboot: set them at boot from {RC_LOCAL}.\n"
    );
    let command = if flags.is_empty() {
        text.push_str(
            "# Nothing to persist: give read_latency=, write_latency= or max_bomb_segments=.\n",
        );
        None
    } else {
        let line = format!("elvtune {} /dev/{device}", flags.join(" "));
        text.push_str(&line);
        text.push('\n');
        Some(line)
    };
    Ok(ElvtunePlan { command, text, warnings })
}

/// Says which form decides `device`'s scheduler at boot, given the forms offered.
pub fn which_wins(
    release: &KernelRelease,
    queue: QueueKind,
    device: &str,
    rule: bool,
    boot_line: Option<&str>,
) -> String {
    match (release.generation(), queue, boot_line) {
        (Generation::Elevator2_4, _, _) => format!(
            "Linux {release} has one elevator; {RC_LOCAL}'s elvtune line sets {device}'s \
             tunables at each boot, and a later elvtune changes them until the next."
        ),
        (Generation::SingleQueue, QueueKind::SingleQueue, Some(word)) if rule => format!(
            "Which wins on {device}: at boot the kernel gives every single-queue device the \
             elevator {word} names (the Kconfig default without it); udev runs the rule when \
             {device} is added, after its queue exists, so the rule wins for {device} and \
             {word} decides for the single-queue devices no rule matches. A write to \
             queue/scheduler at run time beats both until the next boot."
        ),
        (Generation::SingleQueue, QueueKind::SingleQueue, Some(word)) => format!(
            "Linux {release} switches no scheduler at run time (2.6.10 brought that): {word} on \
             the boot line is the one way, for every device, and wins over the Kconfig default."
        ),
        (Generation::SingleQueue, QueueKind::BlkMq, _) => format!(
            "{device} is a blk-mq device: elevator= on the boot line never applies to it (it \
             sets the single-queue devices only), so the udev rule is the way; a write to \
             queue/scheduler at run time beats it until the next boot."
        ),
        _ => format!(
            "Linux {release} is blk-mq only: elevator= is ignored, so the udev rule is the way; a \
             write to queue/scheduler at run time beats it until the next boot."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(text: &str) -> KernelRelease {
        KernelRelease::parse(text).unwrap()
    }

    // Proves the generation boundaries: 2.4 / 2.6.0–4.x / 5.0+, with the run-time switch from
    // 2.6.10 and bad releases refused with what is accepted.
    #[test]
    fn releases_fall_into_their_generation() {
        assert_eq!(release("2.4.21-27.EL").generation(), Generation::Elevator2_4);
        assert_eq!(release("2.6.9-5.ELsmp").generation(), Generation::SingleQueue);
        assert!(!release("2.6.9-5.ELsmp").switches_at_run_time());
        assert!(release("2.6.10").switches_at_run_time());
        assert_eq!(release("2.6.32-754.el6.x86_64").generation(), Generation::SingleQueue);
        assert_eq!(release("3.10.0-1160.el7.x86_64").generation(), Generation::SingleQueue);
        assert_eq!(release("4.20.17").generation(), Generation::SingleQueue);
        assert_eq!(release("5.0.0").generation(), Generation::BlkMqOnly);
        assert_eq!(release("6.8.0-45-generic").generation(), Generation::BlkMqOnly);
        assert_eq!(release("5.14").patch, 0);
        for bad in ["", "linux", "2.5.75", "2.2.26", "x.y"] {
            let error = KernelRelease::parse(bad).unwrap_err();
            assert!(
                error.to_string().contains("accepted") || error.to_string().contains("expected"),
                "{bad}: {error}"
            );
        }
    }

    // Proves the single-queue names per release: `as` is anticipatory until 2.6.33 took it
    // away, blk-mq names are refused, and the boot word spells as/anticipatory per era.
    #[test]
    fn single_queue_names_follow_the_release() {
        let rhel6 = release("2.6.32-754.el6.x86_64");
        assert_eq!(single_queue_scheduler(&rhel6, "as").unwrap(), "anticipatory");
        assert_eq!(single_queue_scheduler(&rhel6, "deadline").unwrap(), "deadline");
        let rhel7 = release("3.10.0-1160.el7.x86_64");
        let error = single_queue_scheduler(&rhel7, "anticipatory").unwrap_err();
        assert!(error.to_string().contains("2.6.33"), "{error}");
        let error = single_queue_scheduler(&rhel7, "mq-deadline").unwrap_err();
        assert!(error.to_string().contains("noop, deadline, cfq"), "{error}");
        assert_eq!(boot_word(&release("2.6.9-5.EL"), "anticipatory"), "elevator=as");
        assert_eq!(boot_word(&rhel6, "anticipatory"), "elevator=anticipatory");
    }

    // Proves the edits: an existing elevator= is replaced (not doubled) and recorded as the
    // original, quotes are kept, a missing GRUB_CMDLINE_LINUX is added, and a second run keeps
    // the first run's record of the original.
    #[test]
    fn grub_files_are_edited_in_place_and_remember_the_original() {
        let grub = "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n\
                    GRUB_CMDLINE_LINUX='crashkernel=auto elevator=cfq rhgb'\n";
        let first = edit_default_grub(grub, "elevator=deadline", "cmd");
        assert_eq!(
            first.changed_lines,
            ["GRUB_CMDLINE_LINUX='crashkernel=auto rhgb elevator=deadline'"]
        );
        assert_eq!(first.before.as_deref(), Some("elevator=cfq"));
        assert!(first.text.contains("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n"), "{}", first.text);
        let second = edit_default_grub(&first.text, "elevator=noop", "cmd");
        assert_eq!(second.before.as_deref(), Some("elevator=cfq"), "{}", second.text);
        assert_eq!(second.text.matches(MARK).count(), 1, "{}", second.text);
        assert!(second.text.contains("'crashkernel=auto rhgb elevator=noop'"), "{}", second.text);
        let added = edit_default_grub("GRUB_TIMEOUT=5", "elevator=deadline", "cmd");
        assert_eq!(added.changed_lines, ["GRUB_CMDLINE_LINUX=\"elevator=deadline\""]);
        assert_eq!(added.before, None);

        let menu = "default=0\ntitle RHEL\n\troot (hd0,0)\n\tkernel /vmlinuz ro root=/dev/sda2\n\
                    \tinitrd /initrd.img\ntitle old\n\tkernel /vmlinuz-old ro elevator=as\n";
        let path = Path::new("/boot/grub/grub.conf");
        let edit = edit_legacy_grub(path, menu, "elevator=deadline", "cmd").unwrap();
        assert_eq!(
            edit.changed_lines,
            [
                "\tkernel /vmlinuz ro root=/dev/sda2 elevator=deadline",
                "\tkernel /vmlinuz-old ro elevator=deadline"
            ]
        );
        assert!(edit.text.contains("\tinitrd /initrd.img\n"));
        assert!(edit_legacy_grub(path, "default=0\n", "elevator=noop", "cmd").is_err());
    }

    // Proves the 2.4 form: elvtune's flags in its order of the settings, negative or timed
    // values refused, other keys refused with the accepted list, and a 2.6 name refused.
    #[test]
    fn a_2_4_host_gets_an_elvtune_line() {
        let rhel3 = release("2.4.21-27.EL");
        let settings = [
            Setting::parse("sdb", "read_latency=1024").unwrap(),
            Setting::parse("sdb", "write_latency=2048").unwrap(),
            Setting::parse("sdb", "max_bomb_segments=6").unwrap(),
        ];
        let plan = plan_elvtune(&rhel3, "/dev/sdb", "elevator_linus", &settings).unwrap();
        assert_eq!(plan.command.as_deref(), Some("elvtune -r 1024 -w 2048 -b 6 /dev/sdb"));
        assert!(plan.warnings.is_empty());
        let vanilla = release("2.4.21");
        assert_eq!(plan_elvtune(&vanilla, "sdb", "linus", &settings).unwrap().warnings.len(), 1);
        for bad in ["read_latency=-1", "write_latency=250ms"] {
            let setting = [Setting::parse("sdb", bad).unwrap()];
            let error = plan_elvtune(&rhel3, "sdb", "linus", &setting).unwrap_err();
            assert!(error.to_string().contains("non-negative integer"), "{error}");
        }
        let setting = [Setting::parse("sdb", "fifo_batch=8").unwrap()];
        let error = plan_elvtune(&rhel3, "sdb", "linus", &setting).unwrap_err();
        assert!(error.to_string().contains("read_latency, write_latency"), "{error}");
        let error = plan_elvtune(&rhel3, "sdb", "deadline", &[]).unwrap_err();
        assert!(matches!(error, KernelError::NotInGeneration { .. }), "{error}");
    }

    #[test]
    fn printed_commands_split_back_into_words() {
        assert_eq!(
            shell_words("/sbin/grubby --update-kernel=ALL --args=\"elevator=deadline\""),
            ["/sbin/grubby", "--update-kernel=ALL", "--args=elevator=deadline"]
        );
    }
}
