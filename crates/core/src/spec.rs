//! Component specs: `NAME[:key=value[,key=value…]]`, the one syntax for schedulers, devices and
//! workloads (`cfq:slice_idle=0,quantum=8`, `hdd:rpm=15000`, `job:rw=randread,bs=4k`).
//!
//! This module only splits the text and checks its shape; what names and keys mean is the
//! business of the registry that owns the component kind. Errors say which part of the text is
//! wrong and what the shape should be.

use std::fmt;

/// A parsed spec: a name and its parameters in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentSpec {
    /// The component name, e.g. `cfq`.
    pub name: String,
    /// `key=value` pairs in the order given; keys are unique.
    pub params: Vec<Param>,
}

/// One `key=value` parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The key as given.
    pub key: String,
    /// The value as given (not yet interpreted).
    pub value: String,
}

/// A spec whose shape is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} spec `{text}`: {problem} (expected NAME[:key=value[,key=value...]])")]
pub struct SpecError {
    /// What kind of component the spec was for (`scheduler`, `device`, `workload`).
    pub kind: &'static str,
    /// The whole spec as given.
    pub text: String,
    /// What is wrong with it.
    pub problem: SpecProblem,
}

/// What is wrong with a spec's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecProblem {
    /// No name before the `:`.
    MissingName,
    /// The name has characters other than letters, digits, `-`, `_` and `.`.
    BadName(String),
    /// A parameter without `=`.
    MissingValue(String),
    /// A parameter with an empty key, or a key with characters other than letters, digits and
    /// `_`.
    BadKey(String),
    /// A key given twice.
    DuplicateKey(String),
    /// A `,` with nothing before or after it.
    EmptyParameter,
}

impl fmt::Display for SpecProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecProblem::MissingName => f.write_str("no name"),
            SpecProblem::BadName(name) => write!(f, "`{name}` is not a valid name"),
            SpecProblem::MissingValue(param) => write!(f, "`{param}` has no `=value`"),
            SpecProblem::BadKey(key) => write!(f, "`{key}` is not a valid key"),
            SpecProblem::DuplicateKey(key) => write!(f, "`{key}` is given twice"),
            SpecProblem::EmptyParameter => f.write_str("empty parameter between commas"),
        }
    }
}

fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_key(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ComponentSpec {
    /// Splits `text` into a name and parameters. `kind` names the component in errors.
    pub fn parse(kind: &'static str, text: &str) -> Result<ComponentSpec, SpecError> {
        let error = |problem| SpecError { kind, text: text.to_owned(), problem };
        let trimmed = text.trim();
        let (name, rest) = match trimmed.split_once(':') {
            Some((name, rest)) => (name.trim(), Some(rest)),
            None => (trimmed, None),
        };
        if name.is_empty() {
            return Err(error(SpecProblem::MissingName));
        }
        if !is_name(name) {
            return Err(error(SpecProblem::BadName(name.to_owned())));
        }
        let mut params: Vec<Param> = Vec::new();
        if let Some(rest) = rest {
            for part in rest.split(',') {
                let part = part.trim();
                if part.is_empty() {
                    return Err(error(SpecProblem::EmptyParameter));
                }
                let Some((key, value)) = part.split_once('=') else {
                    return Err(error(SpecProblem::MissingValue(part.to_owned())));
                };
                let key = key.trim();
                if !is_key(key) {
                    return Err(error(SpecProblem::BadKey(key.to_owned())));
                }
                if params.iter().any(|param| param.key == key) {
                    return Err(error(SpecProblem::DuplicateKey(key.to_owned())));
                }
                params.push(Param { key: key.to_owned(), value: value.trim().to_owned() });
            }
        }
        Ok(ComponentSpec { name: name.to_owned(), params })
    }
}

impl fmt::Display for ComponentSpec {
    /// The canonical form: `name:key=value,...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for (index, param) in self.params.iter().enumerate() {
            let separator = if index == 0 { ':' } else { ',' };
            write!(f, "{separator}{}={}", param.key, param.value)?;
        }
        Ok(())
    }
}

/// A list of specs as an option takes it, comma separated or repeated, that does not split
/// into specs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{kind} list `{text}`: {problem} (expected NAME[:key=value,...][,NAME[:key=value,...]...])"
)]
pub struct SpecListError {
    /// What kind of component the list names (`scheduler`).
    pub kind: &'static str,
    /// The option's value as given.
    pub text: String,
    /// What is wrong with it.
    pub problem: SpecListProblem,
}

/// What is wrong with a list of specs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecListProblem {
    /// Nothing between two commas, or before the first, or after the last.
    EmptyEntry,
    /// A `key=value` with no spec before it to belong to (`fifo_batch=8` first in the list).
    ParameterFirst(String),
    /// A `key=value` after a spec that has no parameters yet, so it cannot tell whether the
    /// comma was meant as `:` (`deadline,fifo_batch=8`).
    ParameterWithoutColon {
        /// The spec before it.
        spec: String,
        /// The `key=value`.
        parameter: String,
    },
}

impl fmt::Display for SpecListProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecListProblem::EmptyEntry => f.write_str("empty entry between commas"),
            SpecListProblem::ParameterFirst(parameter) => {
                write!(f, "`{parameter}` is a key=value with no name before it")
            }
            SpecListProblem::ParameterWithoutColon { spec, parameter } => {
                write!(
                    f,
                    "`{parameter}` follows `{spec}`, which has no `:` (write {spec}:{parameter})"
                )
            }
        }
    }
}

/// Splits the values of a repeatable option that takes comma-separated specs
/// (`-s deadline,cfq:slice_idle=0,quantum=8 -s noop`) into one text per spec, in order.
///
/// A spec's own parameters are separated by commas too, so a comma starts a new spec unless
/// the piece after it is a parameter — a `key=value` whose key has no `:` — and the spec before
/// it already has a `:`. `cfq:slice_idle=0,quantum=8,noop` is `cfq:slice_idle=0,quantum=8` and
/// `noop`; `cfq:slice_idle=0,bfq:low_latency=0` is two specs. Each value is split on its own,
/// pieces are trimmed, and what cannot be read one way only (an empty piece, a parameter first
/// or after a spec without `:`) is an error rather than a guess. The texts are not parsed:
/// schedulers, kernel schedulers and devices each have their own parser.
pub fn split_spec_list<S: AsRef<str>>(
    kind: &'static str,
    values: &[S],
) -> Result<Vec<String>, SpecListError> {
    let mut specs: Vec<String> = Vec::new();
    for value in values {
        let value = value.as_ref();
        let error = |problem| SpecListError { kind, text: value.to_owned(), problem };
        let first_of_value = specs.len();
        for piece in value.split(',').map(str::trim) {
            if piece.is_empty() {
                return Err(error(SpecListProblem::EmptyEntry));
            }
            let is_parameter = piece.split_once('=').is_some_and(|(key, _)| !key.contains(':'));
            if !is_parameter {
                specs.push(piece.to_owned());
                continue;
            }
            let in_this_value = specs.len() > first_of_value;
            match specs.last_mut() {
                Some(spec) if in_this_value && spec.contains(':') => {
                    spec.push(',');
                    spec.push_str(piece);
                }
                Some(spec) if in_this_value => {
                    let (spec, parameter) = (spec.clone(), piece.to_owned());
                    return Err(error(SpecListProblem::ParameterWithoutColon { spec, parameter }));
                }
                _ => return Err(error(SpecListProblem::ParameterFirst(piece.to_owned()))),
            }
        }
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_parameters_split() {
        let spec = ComponentSpec::parse("scheduler", "cfq:slice_idle=0, quantum=8").unwrap();
        assert_eq!(spec.name, "cfq");
        assert_eq!(spec.params.len(), 2);
        assert_eq!(spec.params[1], Param { key: "quantum".into(), value: "8".into() });
        assert_eq!(spec.to_string(), "cfq:slice_idle=0,quantum=8");
        assert_eq!(ComponentSpec::parse("scheduler", "noop").unwrap().params, []);
    }

    // Proves the list splitter keeps a spec's own comma-separated parameters whole and splits
    // between specs, across repeated values, the way both `-s` splitters it replaces did.
    #[test]
    fn spec_lists_split_between_specs_not_parameters() {
        let split = |values: &[&str]| split_spec_list("scheduler", values).unwrap();
        assert_eq!(
            split(&["deadline,cfq:slice_idle=0,quantum=8", "noop"]),
            ["deadline", "cfq:slice_idle=0,quantum=8", "noop"]
        );
        assert_eq!(
            split(&["mq-deadline:fifo_batch=8,read_expire=100,bfq,kyber"]),
            ["mq-deadline:fifo_batch=8,read_expire=100", "bfq", "kyber"]
        );
        assert_eq!(split(&["none"]), ["none"]);
        assert_eq!(split(&["deadline", "cfq"]), ["deadline", "cfq"]);
        // A piece with its own name and `:` is a new spec even after one with parameters.
        assert_eq!(
            split(&["cfq:slice_idle=0,bfq:low_latency=0"]),
            ["cfq:slice_idle=0", "bfq:low_latency=0"]
        );
        // Blanks around commas are the shell's, not the spec's.
        assert_eq!(split(&[" deadline , cfq:quantum=8 "]), ["deadline", "cfq:quantum=8"]);
        // A value with `:` after the `=` is still a parameter.
        assert_eq!(split(&["job:filename=sda:sdb,bs=4k"]), ["job:filename=sda:sdb,bs=4k"]);
        assert_eq!(split(&[] as &[&str]), [] as [String; 0]);
    }

    // Proves the lists that cannot be read one way only are errors naming the piece.
    #[test]
    fn ambiguous_spec_lists_are_errors() {
        let problem = |values: &[&str]| split_spec_list("scheduler", values).unwrap_err().problem;
        assert_eq!(problem(&["deadline,,cfq"]), SpecListProblem::EmptyEntry);
        assert_eq!(problem(&["deadline,"]), SpecListProblem::EmptyEntry);
        assert_eq!(
            problem(&["fifo_batch=8"]),
            SpecListProblem::ParameterFirst("fifo_batch=8".into())
        );
        // A parameter does not reach back into the previous value of a repeated option.
        assert_eq!(
            problem(&["cfq:slice_idle=0", "quantum=8"]),
            SpecListProblem::ParameterFirst("quantum=8".into())
        );
        let message =
            split_spec_list("scheduler", &["deadline,fifo_batch=8"]).unwrap_err().to_string();
        assert_eq!(
            message,
            "scheduler list `deadline,fifo_batch=8`: `fifo_batch=8` follows `deadline`, which \
             has no `:` (write deadline:fifo_batch=8) \
             (expected NAME[:key=value,...][,NAME[:key=value,...]...])"
        );
    }

    // Proves each malformed shape is named in the error.
    #[test]
    fn malformed_specs_say_what_is_wrong() {
        let problem = |text| ComponentSpec::parse("scheduler", text).unwrap_err().problem;
        assert_eq!(problem(""), SpecProblem::MissingName);
        assert_eq!(problem(":a=1"), SpecProblem::MissingName);
        assert_eq!(problem("cf q"), SpecProblem::BadName("cf q".into()));
        assert_eq!(problem("cfq:slice_idle"), SpecProblem::MissingValue("slice_idle".into()));
        assert_eq!(problem("cfq:=1"), SpecProblem::BadKey(String::new()));
        assert_eq!(problem("cfq:a=1,a=2"), SpecProblem::DuplicateKey("a".into()));
        assert_eq!(problem("cfq:a=1,"), SpecProblem::EmptyParameter);
        let message = ComponentSpec::parse("scheduler", "cfq:slice_idle").unwrap_err().to_string();
        assert_eq!(
            message,
            "scheduler spec `cfq:slice_idle`: `slice_idle` has no `=value` \
             (expected NAME[:key=value[,key=value...]])"
        );
    }
}

/// The keys a component accepts, with their kinds, defaults and help: the same table drives
/// parsing, validation, `elevator list` and the report's echo of the resolved configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeySpec {
    /// The key as written in a spec.
    pub key: &'static str,
    /// What values it takes.
    pub kind: KeyKind,
    /// The default, as a user would write it; empty when the key has no default (unset).
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
}

/// What values a key takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyKind {
    /// A size in bytes, written with binary suffixes (`512k`, `24g`).
    Size {
        /// Smallest accepted, in bytes.
        min_bytes: u64,
        /// Largest accepted, in bytes.
        max_bytes: u64,
    },
    /// A time, written with a unit (`6ms`, `500us`, `2s`); a bare number is in `bare_unit`.
    Time {
        /// Smallest accepted.
        min: crate::Duration,
        /// Largest accepted.
        max: crate::Duration,
        /// The unit of a bare number (`"ms"`, `"us"`, `"s"`, `"ns"`).
        bare_unit: &'static str,
    },
    /// A whole number.
    Integer {
        /// Smallest accepted.
        min: i64,
        /// Largest accepted.
        max: i64,
    },
    /// A real number in `unit`.
    Float {
        /// Smallest accepted.
        min: f64,
        /// Largest accepted.
        max: f64,
        /// What it measures, for messages and listings.
        unit: &'static str,
    },
    /// 0 or 1 (also true/false, on/off, yes/no).
    Flag,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// Free text (a path, a list in a key's own syntax).
    Text,
}

impl KeyKind {
    /// What the kind accepts, for messages and listings.
    pub fn describe(&self) -> String {
        match *self {
            KeyKind::Size { min_bytes, max_bytes } => {
                format!("a size {}..={}", format_size(min_bytes), format_size(max_bytes))
            }
            KeyKind::Time { min, max, bare_unit } => {
                format!("a time {min}..={max} (bare numbers in {bare_unit})")
            }
            KeyKind::Integer { min, max } => format!("an integer {min}..={max}"),
            KeyKind::Float { min, max, unit } => format!("a number {min}..={max} {unit}"),
            KeyKind::Flag => "0 or 1".to_owned(),
            KeyKind::Choice(choices) => format!("one of {}", choices.join(", ")),
            KeyKind::Text => "text".to_owned(),
        }
    }
}

/// `bytes` with the largest binary suffix that keeps it exact: `512k`, `24g`, `4097`.
pub fn format_size(bytes: u64) -> String {
    for (suffix, per) in [("t", 1u64 << 40), ("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)] {
        if bytes >= per && bytes % per == 0 {
            return format!("{}{suffix}", bytes / per);
        }
    }
    bytes.to_string()
}

fn bare_unit_nanos(unit: &str) -> u64 {
    match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        _ => 1_000_000_000,
    }
}

/// A component's key that is unknown, malformed or impossible.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// The spec's shape is wrong.
    #[error(transparent)]
    Shape(#[from] SpecError),
    /// No component of that name.
    #[error("unknown {kind} `{name}` (accepted: {})", accepted.join(", "))]
    UnknownName {
        /// `device`, `workload`, ...
        kind: &'static str,
        /// The name given.
        name: String,
        /// Every accepted name.
        accepted: Vec<&'static str>,
    },
    /// The component has no such key.
    #[error("{component} has no key `{key}` (accepted: {})", accepted.join(", "))]
    UnknownKey {
        /// The component.
        component: String,
        /// The key given.
        key: String,
        /// Every key it has.
        accepted: Vec<&'static str>,
    },
    /// A value that does not parse or is out of range.
    #[error("{component}: {key}={value} is not valid (expected {expected})")]
    BadValue {
        /// The component.
        component: String,
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// Values that are valid alone but impossible together (a block size over the device).
    #[error("{component}: {key}: {problem}")]
    Impossible {
        /// The component.
        component: String,
        /// The key to change.
        key: &'static str,
        /// Why.
        problem: String,
    },
}

/// A spec's values checked against a component's keys; defaults filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    component: String,
    keys: &'static [KeySpec],
    /// Per key (same order as `keys`): the text in force and whether the user gave it.
    values: Vec<(String, bool)>,
}

impl Params {
    /// Checks `spec`'s parameters against `keys`, filling in the defaults (`presets` first:
    /// `(key, value)` pairs that replace a key's default, as a named preset does).
    pub fn resolve(
        spec: &ComponentSpec,
        keys: &'static [KeySpec],
        presets: &[(&str, &str)],
    ) -> Result<Params, ParamError> {
        let component = spec.name.clone();
        let mut values: Vec<(String, bool)> = keys
            .iter()
            .map(|key| {
                let preset = presets.iter().find(|(name, _)| *name == key.key);
                (preset.map_or(key.default, |(_, value)| value).to_owned(), false)
            })
            .collect();
        for param in &spec.params {
            let Some(index) = keys.iter().position(|key| key.key == param.key) else {
                return Err(ParamError::UnknownKey {
                    component,
                    key: param.key.clone(),
                    accepted: keys.iter().map(|key| key.key).collect(),
                });
            };
            if param.value.trim().is_empty() {
                // `key=` would leave a key the component expects without a value (a panic at
                // use) or silently drop it: a given key must say something.
                return Err(ParamError::BadValue {
                    component,
                    key: keys[index].key,
                    value: String::new(),
                    expected: keys[index].kind.describe(),
                });
            }
            values[index] = (param.value.clone(), true);
        }
        let params = Params { component, keys, values };
        for (index, key) in keys.iter().enumerate() {
            let (value, _) = &params.values[index];
            if !value.is_empty() {
                params.check(key, value)?;
            }
        }
        Ok(params)
    }

    /// The component's name.
    pub fn component(&self) -> &str {
        &self.component
    }

    fn check(&self, key: &'static KeySpec, value: &str) -> Result<(), ParamError> {
        let bad = || ParamError::BadValue {
            component: self.component.clone(),
            key: key.key,
            value: value.to_owned(),
            expected: key.kind.describe(),
        };
        match key.kind {
            KeyKind::Size { min_bytes, max_bytes } => {
                let bytes = crate::units::parse_size_bytes(value).map_err(|_| bad())?;
                if !(min_bytes..=max_bytes).contains(&bytes) {
                    return Err(bad());
                }
            }
            KeyKind::Time { min, max, bare_unit } => {
                let time = crate::units::parse_duration(value, bare_unit_nanos(bare_unit))
                    .map_err(|_| bad())?;
                if !(min..=max).contains(&time) {
                    return Err(bad());
                }
            }
            KeyKind::Integer { min, max } => {
                let number = crate::units::parse_integer(value, "an integer").map_err(|_| bad())?;
                if !(min..=max).contains(&number) {
                    return Err(bad());
                }
            }
            KeyKind::Float { min, max, .. } => {
                let number: f64 = value.trim().parse().map_err(|_| bad())?;
                if !number.is_finite() || !(min..=max).contains(&number) {
                    return Err(bad());
                }
            }
            KeyKind::Flag => {
                parse_flag(value).ok_or_else(bad)?;
            }
            KeyKind::Choice(choices) => {
                if !choices.contains(&value.trim()) {
                    return Err(bad());
                }
            }
            KeyKind::Text => {}
        }
        Ok(())
    }

    fn entry(&self, key: &str) -> (&'static KeySpec, &str) {
        let index =
            self.keys.iter().position(|spec| spec.key == key).unwrap_or_else(|| {
                panic!("{}: key `{key}` is not in its own table", self.component)
            });
        (&self.keys[index], self.values[index].0.trim())
    }

    /// Whether the user set `key` (as opposed to a default or preset).
    pub fn is_set(&self, key: &str) -> bool {
        let index = self.keys.iter().position(|spec| spec.key == key);
        index.is_some_and(|index| self.values[index].1)
    }

    /// Whether `key` has a value (given, preset or default).
    pub fn has(&self, key: &str) -> bool {
        !self.entry(key).1.is_empty()
    }

    /// A size key in bytes. Panics if `key` is not a size key with a value (a table bug).
    pub fn size(&self, key: &str) -> u64 {
        let (_, value) = self.entry(key);
        crate::units::parse_size_bytes(value).unwrap_or_else(|e| panic!("{key}: {e}"))
    }

    /// A time key.
    pub fn time(&self, key: &str) -> crate::Duration {
        let (spec, value) = self.entry(key);
        let KeyKind::Time { bare_unit, .. } = spec.kind else { panic!("{key} is not a time") };
        crate::units::parse_duration(value, bare_unit_nanos(bare_unit))
            .unwrap_or_else(|e| panic!("{key}: {e}"))
    }

    /// An integer key.
    pub fn integer(&self, key: &str) -> i64 {
        let (_, value) = self.entry(key);
        crate::units::parse_integer(value, "an integer").unwrap_or_else(|e| panic!("{key}: {e}"))
    }

    /// A real-number key.
    pub fn float(&self, key: &str) -> f64 {
        let (_, value) = self.entry(key);
        value.parse().unwrap_or_else(|e| panic!("{key}: {e}"))
    }

    /// A flag key.
    pub fn flag(&self, key: &str) -> bool {
        let (_, value) = self.entry(key);
        parse_flag(value).unwrap_or_else(|| panic!("{key}: not a flag"))
    }

    /// A choice or text key (empty if unset).
    pub fn text(&self, key: &str) -> &str {
        self.entry(key).1
    }

    /// An error about `key` for values that are impossible together.
    pub fn impossible(&self, key: &'static str, problem: impl Into<String>) -> ParamError {
        ParamError::Impossible { component: self.component.clone(), key, problem: problem.into() }
    }

    /// Every key with the value in force, in table order (for reports).
    pub fn resolved(&self) -> Vec<(&'static str, String)> {
        self.keys
            .iter()
            .zip(&self.values)
            .filter(|(_, (value, _))| !value.is_empty())
            .map(|(key, (value, _))| (key.key, value.trim().to_owned()))
            .collect()
    }
}

fn parse_flag(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;
    use crate::Duration;

    const KEYS: &[KeySpec] = &[
        KeySpec {
            key: "rpm",
            kind: KeyKind::Integer { min: 1, max: 30_000 },
            default: "7200",
            help: "",
        },
        KeySpec {
            key: "cache",
            kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 30 },
            default: "8m",
            help: "",
        },
        KeySpec {
            key: "overhead",
            kind: KeyKind::Time {
                min: Duration::ZERO,
                max: Duration::from_secs(1),
                bare_unit: "ms",
            },
            default: "0.3",
            help: "",
        },
        KeySpec { key: "seek", kind: KeyKind::Choice(&["hpl", "table"]), default: "hpl", help: "" },
        KeySpec { key: "wce", kind: KeyKind::Flag, default: "1", help: "" },
        KeySpec {
            key: "skew",
            kind: KeyKind::Float { min: 0.0, max: 1.0, unit: "rev" },
            default: "",
            help: "",
        },
    ];

    fn resolve(text: &str) -> Result<Params, ParamError> {
        Params::resolve(&ComponentSpec::parse("device", text).unwrap(), KEYS, &[("rpm", "5400")])
    }

    // Proves defaults, presets and given values resolve in that order of precedence, with
    // units.
    #[test]
    fn values_resolve_with_presets_and_units() {
        let params = resolve("hdd:cache=16m,overhead=500us").unwrap();
        assert_eq!(params.integer("rpm"), 5400, "preset beats default");
        assert_eq!(params.size("cache"), 16 << 20);
        assert_eq!(params.time("overhead"), Duration::from_micros(500));
        assert!(params.flag("wce"));
        assert_eq!(params.text("seek"), "hpl");
        assert!(!params.has("skew"));
        assert!(params.is_set("cache") && !params.is_set("rpm"));
        let resolved = params.resolved();
        assert_eq!(resolved[0], ("rpm", "5400".to_owned()));
        assert_eq!(resolve("hdd").unwrap().time("overhead"), Duration::from_micros(300));
    }

    // Proves unknown keys and bad values are named with what is accepted.
    #[test]
    fn bad_keys_and_values_say_what_is_accepted() {
        let message = |text| resolve(text).unwrap_err().to_string();
        assert_eq!(
            message("hdd:rpms=1"),
            "hdd has no key `rpms` (accepted: rpm, cache, overhead, seek, wce, skew)"
        );
        assert_eq!(message("hdd:rpm=0"), "hdd: rpm=0 is not valid (expected an integer 1..=30000)");
        assert!(message("hdd:seek=curve").contains("expected one of hpl, table"));
        assert!(message("hdd:cache=2g").contains("a size 0..=1g"));
        assert!(message("hdd:overhead=2s").contains("a time 0s..=1s"));
        assert!(message("hdd:skew=nan").contains("a number 0..=1 rev"));
        assert!(message("hdd:wce=2").contains("0 or 1"));
    }

    // Proves an empty value is refused for every kind of key, naming the key and what it takes
    // (issue 14: `job:bs=` panicked later, and keys with no default silently lost the value).
    #[test]
    fn an_empty_value_is_refused_naming_the_key() {
        for key in KEYS {
            let text = format!("hdd:{}=", key.key);
            let error = resolve(&text).unwrap_err();
            let ParamError::BadValue { key: named, ref value, ref expected, .. } = error else {
                panic!("{text}: {error:?}");
            };
            assert_eq!((named, value.as_str()), (key.key, ""));
            assert_eq!(*expected, key.kind.describe());
            assert!(error.to_string().starts_with(&format!("hdd: {}= is not valid", key.key)));
        }
    }

    #[test]
    fn sizes_format_with_the_largest_exact_suffix() {
        assert_eq!(format_size(512 << 10), "512k");
        assert_eq!(format_size(24 << 30), "24g");
        assert_eq!(format_size(4097), "4097");
        assert_eq!(format_size(0), "0");
    }
}
