//! Making a scheduler choice survive a reboot: a udev rule that finds the device by an
//! attribute that does not change when disks are probed in another order, and sets the
//! scheduler, then its tunables, then queue attributes (switching resets `nr_requests`, so
//! the order matters and udev keeps it).
//!
//! On Linux 5.0 and later the kernel command line is not a way: `elevator=` has had no effect
//! since the legacy block layer left in 5.0; current kernels only log that it is ignored. On
//! the single-queue kernels before it (RHEL 6's 2.6.32, RHEL 7's 3.10) `elevator=` still sets
//! single-queue devices at boot, and the rule runs after it: [`crate::bootline`] offers that
//! form and says which wins; [`plan_on`] words the rule for the kernel it is for.
//!
//! [`Rule::parse`] reads back the one-line rules this module writes (and hand-written ones of
//! the same shape), and [`Rule::matches`] evaluates a rule's match keys against a device the
//! way udev would for an `add` or `change` event, so that a test can check a rendered rule
//! without udevd.

use std::path::{Path, PathBuf};

use elevator_sched::{BlockLayer, SchedulerKind};

use crate::bootline::{Generation, KernelRelease, QueueKind, single_queue_scheduler};
use crate::error::KernelError;
use crate::queue::{Setting, check_scheduler_name, scheduler_tunables, sysfs_value};
use crate::sysfs::{BlockDevice, Sysfs};

/// The machine a rule is for: its kernel release and command line, read under a root that a
/// test can point at a fake tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// The root its files are read under (`/` for this machine).
    pub root: PathBuf,
    /// The running kernel's release.
    pub release: KernelRelease,
    /// `/proc/cmdline`, when readable.
    pub cmdline: Option<String>,
}

impl Host {
    /// The machine under `root`: `ROOT/proc/sys/kernel/osrelease` and `ROOT/proc/cmdline`.
    pub fn read(root: &Path) -> Result<Host, KernelError> {
        Ok(Host {
            root: root.to_owned(),
            release: KernelRelease::read(root)?,
            cmdline: std::fs::read_to_string(root.join("proc/cmdline")).ok(),
        })
    }

    /// This machine; a kernel whose release cannot be read is taken for a blk-mq-only one.
    pub fn running() -> Host {
        Host::read(Path::new("/")).unwrap_or_else(|_| Host {
            root: PathBuf::from("/"),
            release: KernelRelease {
                text: "unknown (taken for 5.0 or later)".into(),
                major: 5,
                minor: 0,
                patch: 0,
            },
            cmdline: None,
        })
    }

    /// Whether `elevator=` on its boot line applies to `device` (a single-queue device of a
    /// single-queue kernel).
    pub fn boot_line_applies(&self, device: &BlockDevice) -> bool {
        self.release.generation() == Generation::SingleQueue
            && QueueKind::of(device) == QueueKind::SingleQueue
    }

    /// The `elevator=` word on its command line, if any.
    pub fn boot_elevator(&self) -> Option<&str> {
        self.cmdline.as_deref()?.split_whitespace().find(|w| w.starts_with("elevator="))
    }
}

/// The comment a rule file for a blk-mq-only kernel (5.0+) carries about `elevator=`; on older
/// kernels [`parameter_note`] words it for the device.
pub const ELEVATOR_PARAMETER_NOTE: &str = "The `elevator=` kernel command-line parameter has \
     had no effect since Linux 5.0 (blk-mq): the kernel ignores it and logs so. A udev rule \
     (or TuneD) is how a scheduler choice persists.";

/// Where rules go unless told otherwise.
pub const RULES_DIR: &str = "/etc/udev/rules.d";

/// One `KEY{attr}OP"value"` of a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleKey {
    /// `ACTION`, `SUBSYSTEM`, `ATTR{queue/scheduler}`, ...
    pub key: String,
    /// `==`, `!=`, `=`, `+=`, `-=` or `:=`.
    pub op: String,
    /// The value between the quotes.
    pub value: String,
}

impl RuleKey {
    fn new(key: &str, op: &str, value: &str) -> RuleKey {
        RuleKey { key: key.to_owned(), op: op.to_owned(), value: value.to_owned() }
    }

    /// Whether it tests rather than assigns.
    pub fn is_match(&self) -> bool {
        self.op == "==" || self.op == "!="
    }
}

/// A one-line udev rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Its keys in order: matches, then assignments.
    pub keys: Vec<RuleKey>,
}

/// How a rule finds the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StableMatch {
    /// The match key (`ATTRS{wwid}`).
    pub key: RuleKey,
    /// In words, for the rule's comment.
    pub description: String,
    /// False when only the kernel name was available (it can change between boots).
    pub stable: bool,
}

/// A rendered rule file and what to tell the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistPlan {
    /// The file name under the rules directory.
    pub file_name: String,
    /// The whole file.
    pub text: String,
    /// The rule in it.
    pub rule: Rule,
    /// What the user should know (an unstable match, `elevator=` on the command line,
    /// tunables elevator could not check).
    pub warnings: Vec<String>,
}

/// Characters that udev would read as a pattern, or that would break the quoting.
fn is_literal(value: &str) -> bool {
    !value.is_empty()
        && !value.chars().any(|c| matches!(c, '"' | '\\' | '*' | '?' | '[' | ']' | '|' | '\n'))
}

/// The most stable attribute that identifies `device`, best first: a SCSI/SATA WWID, an NVMe
/// or virtio serial or WWID, a loop device's backing file, an md/dm UUID; the kernel name
/// when there is nothing better.
pub fn stable_match(sysfs: &Sysfs, device: &BlockDevice) -> StableMatch {
    let candidates: [(&str, &str, &str); 6] = [
        ("device/wwid", "ATTRS{wwid}", "its WWID"),
        ("wwid", "ATTR{wwid}", "its WWID"),
        ("serial", "ATTR{serial}", "its serial number"),
        ("loop/backing_file", "ATTR{loop/backing_file}", "its backing file"),
        ("md/uuid", "ATTR{md/uuid}", "its md UUID"),
        ("dm/uuid", "ATTR{dm/uuid}", "its device-mapper UUID"),
    ];
    for (attr, key, description) in candidates {
        if let Some(value) = sysfs.read_optional(&device.dir.join(attr))
            && is_literal(&value)
        {
            return StableMatch {
                key: RuleKey::new(key, "==", &value),
                description: description.to_owned(),
                stable: true,
            };
        }
    }
    StableMatch {
        key: RuleKey::new("KERNEL", "==", &device.name),
        description: "its kernel name".to_owned(),
        stable: false,
    }
}

/// Renders the rule that sets `scheduler` and `settings` on `device` at every boot (and on
/// every `change` event), after checking them: the scheduler against what the device offers
/// (or the kernel's blk-mq names), each tunable against the scheduler's tunables. For this
/// machine's kernel ([`Host::running`]); [`plan_on`] takes another.
pub fn plan(
    sysfs: &Sysfs,
    device: &BlockDevice,
    scheduler: &str,
    settings: &[Setting],
    command: &str,
) -> Result<PersistPlan, KernelError> {
    plan_on(sysfs, device, scheduler, settings, command, &Host::running())
}

/// [`plan`] for the kernel of `host`: on a single-queue device of a single-queue kernel the
/// scheduler is one of that kernel's single-queue elevators, its tunables are checked against
/// elevator's table of that elevator, and the rule's comment says it wins over `elevator=`;
/// elsewhere the comment says `elevator=` does not apply.
pub fn plan_on(
    sysfs: &Sysfs,
    device: &BlockDevice,
    scheduler: &str,
    settings: &[Setting],
    command: &str,
    host: &Host,
) -> Result<PersistPlan, KernelError> {
    let line = sysfs.scheduler(device)?;
    let single_queue = host.boot_line_applies(device);
    let scheduler = if single_queue {
        single_queue_scheduler(&host.release, scheduler)?
    } else {
        check_scheduler_name(device, &line, scheduler)?
    };
    let mut warnings = Vec::new();
    if !line.available.iter().any(|s| s == scheduler) {
        warnings.push(format!(
            "{device} does not list `{scheduler}` now; the rule loads its module when it runs, \
             if the kernel has one"
        ));
    }
    let known = if single_queue && line.current != scheduler {
        // The single-queue elevators' tunables are elevator's 2.6 tables, by the kernel's names.
        SchedulerKind::from_name(scheduler)
            .filter(|kind| kind.block_layer() == BlockLayer::Legacy && kind.name() == scheduler)
            .map(|kind| kind.tunables().iter().map(|t| t.name.to_owned()).collect())
    } else {
        scheduler_tunables(sysfs, device, &line, scheduler)
    };
    let mut iosched = Vec::new();
    let mut attributes = Vec::new();
    for setting in settings {
        if setting.is_queue_attribute() {
            if !device.queue_attr(&setting.key).exists() {
                return Err(KernelError::BadSetting {
                    device: device.name.clone(),
                    setting: format!("{}={}", setting.key, setting.value),
                    why: "this device has no such queue attribute".into(),
                });
            }
            attributes.push((setting, sysfs_value(&device.name, scheduler, setting)?));
            continue;
        }
        match &known {
            Some(names) if !names.contains(&setting.key) => {
                return Err(KernelError::UnknownKey {
                    device: device.name.clone(),
                    key: setting.key.clone(),
                    scheduler: scheduler.to_owned(),
                    accepted: names.clone(),
                    hint: String::new(),
                });
            }
            Some(_) => {}
            None => warnings.push(format!(
                "`{}` could not be checked: {scheduler} is not current on {device} and \
                 elevator has no table for it",
                setting.key
            )),
        }
        iosched.push((setting, sysfs_value(&device.name, scheduler, setting)?));
    }
    let matched = stable_match(sysfs, device);
    if !matched.stable {
        warnings.push(format!(
            "{device} has no WWID, serial or UUID in sysfs: the rule matches the kernel name \
             `{}`, which can change between boots",
            device.name
        ));
    }
    match host.boot_elevator() {
        Some(word) if single_queue => warnings.push(format!(
            "the kernel command line has `{word}`: it still sets the other single-queue \
             devices at boot; for {device} the rule, which runs later, wins"
        )),
        Some(word) if host.release.generation() == Generation::BlkMqOnly => {
            warnings.push(format!(
                "the kernel command line has `{word}`, which this kernel ignores; remove it to \
                 avoid confusion"
            ));
        }
        Some(word) => warnings.push(format!(
            "the kernel command line has `{word}`, which sets single-queue devices only: \
             {device} is a blk-mq device and ignores it"
        )),
        None => {}
    }
    let mut keys = vec![
        RuleKey::new("ACTION", "==", "add|change"),
        RuleKey::new("SUBSYSTEM", "==", "block"),
        RuleKey::new("ENV{DEVTYPE}", "==", "disk"),
        matched.key.clone(),
        RuleKey::new("ATTR{queue/scheduler}", "=", scheduler),
    ];
    for (setting, value) in iosched {
        keys.push(RuleKey::new(&format!("ATTR{{queue/iosched/{}}}", setting.key), "=", &value));
    }
    for (setting, value) in attributes {
        keys.push(RuleKey::new(&format!("ATTR{{queue/{}}}", setting.key), "=", &value));
    }
    let rule = Rule { keys };
    let file_name = format!("99-elevator-{}.rules", device.name);
    let header = format!(
        "Written by `{command}` (elevator {version}). Sets the I/O scheduler of {device} \
         (matched by {description}) when it appears and on every change event. {note}",
        version = env!("CARGO_PKG_VERSION"),
        description = matched.description,
        note = parameter_note(host, device, single_queue),
    );
    let mut text = String::new();
    for line in wrap(&header, 92) {
        text.push_str(&format!("# {line}\n"));
    }
    text.push_str(&format!(
        "# To apply now: udevadm control --reload-rules && udevadm trigger --action=change \
         --subsystem-match=block --sysname-match={device}\n{}\n",
        rule.render()
    ));
    Ok(PersistPlan { file_name, text, rule, warnings })
}

/// Writes the plan's file into `dir` (atomically: a temporary file renamed over it) and,
/// when `reload` is set, has udev reload its rules and replay a change event for `device`.
/// Returns the file written and what the user should know (no `udevadm` on this machine).
pub fn apply(
    plan: &PersistPlan,
    device: &BlockDevice,
    dir: &Path,
    reload: bool,
) -> Result<(PathBuf, Vec<String>), KernelError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| KernelError::io(dir, "creating the rules directory", e))?;
    let path = dir.join(&plan.file_name);
    let temporary = dir.join(format!(".{}.tmp", plan.file_name));
    std::fs::write(&temporary, &plan.text)
        .map_err(|e| KernelError::io(&temporary, "writing the rule", e))?;
    std::fs::rename(&temporary, &path)
        .map_err(|e| KernelError::io(&path, "installing the rule", e))?;
    let mut notes = Vec::new();
    if !reload {
        return Ok((path, notes));
    }
    let runs = |args: &[&str]| -> Result<bool, KernelError> {
        match std::process::Command::new("udevadm").args(args).output() {
            Ok(output) if output.status.success() => Ok(true),
            Ok(output) => Err(KernelError::Udev(format!(
                "`udevadm {}` failed ({}): {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(KernelError::Udev(format!("running udevadm: {error}"))),
        }
    };
    if runs(&["control", "--reload-rules"])? {
        let sysname = format!("--sysname-match={}", device.name);
        runs(&["trigger", "--action=change", "--subsystem-match=block", &sysname])?;
    } else {
        notes.push(format!(
            "udevadm is not installed here: {} is written and takes effect when udev next \
             starts (at boot)",
            path.display()
        ));
    }
    Ok((path, notes))
}

/// What the rule's comment says about `elevator=` on `host`'s kernel.
pub fn parameter_note(host: &Host, device: &BlockDevice, single_queue: bool) -> String {
    let release = &host.release;
    match release.generation() {
        Generation::BlkMqOnly => ELEVATOR_PARAMETER_NOTE.to_owned(),
        _ if single_queue => format!(
            "On Linux {release} the `elevator=` kernel parameter (or the Kconfig default) gives \
             {device} its elevator at boot; this rule runs when udev adds {device}, after that, \
             and wins for it."
        ),
        _ => format!(
            "{device} is a blk-mq device: the `elevator=` kernel parameter of Linux {release} \
             sets single-queue devices only and does not apply to it."
        ),
    }
}

/// Splits `text` into lines of at most `width` characters at spaces (a longer word stays
/// whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}

impl Rule {
    /// The rule as one line: `KEY=="value", ATTR{x}="value"`.
    pub fn render(&self) -> String {
        let keys: Vec<String> =
            self.keys.iter().map(|k| format!("{}{}\"{}\"", k.key, k.op, k.value)).collect();
        keys.join(", ")
    }

    /// Parses one rule line (comments and blank lines are not rules). Errors say where the
    /// line stops making sense.
    pub fn parse(line: &str) -> Result<Rule, String> {
        const OPS: [&str; 6] = ["==", "!=", "+=", "-=", ":=", "="];
        let mut keys = Vec::new();
        let mut rest = line.trim();
        while !rest.is_empty() {
            let name_len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .ok_or_else(|| format!("`{rest}`: a key without an operator"))?;
            let mut key = rest[..name_len].to_owned();
            rest = &rest[name_len..];
            if let Some(after) = rest.strip_prefix('{') {
                let close = after.find('}').ok_or_else(|| format!("`{key}{{`: no closing `}}`"))?;
                key = format!("{key}{{{}}}", &after[..close]);
                rest = &after[close + 1..];
            }
            if key.is_empty() || !key.starts_with(|c: char| c.is_ascii_uppercase()) {
                return Err(format!("`{rest}`: expected an upper-case key such as ATTR{{...}}"));
            }
            let op = OPS
                .iter()
                .find(|op| rest.starts_with(**op))
                .ok_or_else(|| format!("`{key}`: expected one of {}", OPS.join(" ")))?;
            rest = rest[op.len()..]
                .strip_prefix('"')
                .ok_or_else(|| format!("`{key}{op}`: the value must be in double quotes"))?;
            let close = rest.find('"').ok_or_else(|| format!("`{key}{op}`: unterminated value"))?;
            let value = &rest[..close];
            rest = rest[close + 1..].trim_start();
            let parsed = RuleKey::new(&key, op, value);
            let match_only = ["ACTION", "SUBSYSTEM", "KERNEL", "DEVPATH", "DRIVERS", "SUBSYSTEMS"];
            let base = key.split('{').next().unwrap_or_default();
            if match_only.contains(&base) && !parsed.is_match() {
                return Err(format!("`{key}` can only be matched (== or !=), not assigned"));
            }
            if base == "ATTRS" && !parsed.is_match() {
                return Err("ATTRS{...} can only be matched".to_owned());
            }
            keys.push(parsed);
            if rest.is_empty() {
                break;
            }
            rest = rest
                .strip_prefix(',')
                .ok_or_else(|| format!("`{rest}`: keys are separated by commas"))?
                .trim_start();
        }
        if keys.is_empty() {
            return Err("an empty rule".into());
        }
        Ok(Rule { keys })
    }

    /// The assignments the rule makes for `device` on an `add` or `change` event, or `None`
    /// when one of its match keys does not match — what udev would do, for the keys this
    /// module writes (ACTION, SUBSYSTEM, ENV{DEVTYPE}, KERNEL, ATTR{...}, ATTRS{...}).
    pub fn matches(&self, sysfs: &Sysfs, device: &BlockDevice) -> Option<Vec<(String, String)>> {
        let mut assignments = Vec::new();
        for key in &self.keys {
            if !key.is_match() {
                let attr = key.key.strip_prefix("ATTR{")?.strip_suffix('}')?;
                assignments.push((attr.to_owned(), key.value.clone()));
                continue;
            }
            let alternatives: Vec<&str> = key.value.split('|').collect();
            let actual: Option<String> = match key.key.as_str() {
                "ACTION" => {
                    Some(if alternatives.contains(&"change") { "change" } else { "add" }.into())
                }
                "SUBSYSTEM" => Some("block".into()),
                "ENV{DEVTYPE}" => Some("disk".into()),
                "KERNEL" => Some(device.name.clone()),
                other => {
                    if let Some(attr) =
                        other.strip_prefix("ATTR{").and_then(|a| a.strip_suffix('}'))
                    {
                        sysfs.read_optional(&device.dir.join(attr))
                    } else if let Some(attr) =
                        other.strip_prefix("ATTRS{").and_then(|a| a.strip_suffix('}'))
                    {
                        // udev walks from the device up through its parents.
                        let start =
                            std::fs::canonicalize(&device.dir).unwrap_or(device.dir.clone());
                        start
                            .ancestors()
                            .chain([device.dir.join("device").as_path()])
                            .find_map(|dir| sysfs.read_optional(&dir.join(attr)))
                    } else {
                        return None;
                    }
                }
            };
            let equal = actual.is_some_and(|actual| alternatives.contains(&actual.as_str()));
            if equal != (key.op == "==") {
                return None;
            }
        }
        Some(assignments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves rendering and parsing agree, and that malformed lines are refused with a reason.
    #[test]
    fn rules_round_trip_and_bad_lines_are_refused() {
        let rule = Rule {
            keys: vec![
                RuleKey::new("ACTION", "==", "add|change"),
                RuleKey::new("ATTRS{wwid}", "==", "naa.5000c500a1b2c3d4"),
                RuleKey::new("ATTR{queue/scheduler}", "=", "bfq"),
            ],
        };
        assert_eq!(Rule::parse(&rule.render()).unwrap(), rule);
        for bad in [
            "ACTION=\"add\"",
            "ACTION==add",
            "ATTR{queue/scheduler=\"bfq\"",
            "ATTR{x}=\"1\" ATTR{y}=\"2\"",
            "ATTRS{wwid}=\"x\"",
            "ACTION==\"add",
            "",
        ] {
            assert!(Rule::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn patterns_and_quotes_are_not_literal_values() {
        assert!(is_literal("/var/tmp/disk.img"));
        for bad in ["a*b", "x\"y", "", "[0]", "a|b"] {
            assert!(!is_literal(bad), "{bad}");
        }
    }
}
