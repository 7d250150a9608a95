//! Scheduler tunables: one static table per scheduler, read by everything.
//!
//! A [`TunableSpec`] is what `/sys/block/DEV/queue/iosched/NAME` is in the kernel: the sysfs
//! name, the unit its number is in, the kernel's default, the accepted range and one line of
//! help. The spec parser, `elevator list`, the report's echo of the configuration and the kernel
//! driver all read the same table, so a default or a range is written exactly once.
//!
//! Values are `i64` in the tunable's own unit (what sysfs prints). [`TunableSpec::parse`]
//! accepts the unit's natural suffixes: a millisecond tunable takes `500`, `500ms` or `2s`; a
//! KiB tunable takes `16384` or `16m`.

use std::fmt;

use serde::Serialize;

use crate::units::{self, QuantityError};

/// The unit of a tunable's value.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Milliseconds (jiffies at HZ=1000 for the 2.6 schedulers).
    Milliseconds,
    /// Microseconds.
    Microseconds,
    /// Nanoseconds (kyber's `*_lat_nsec`).
    Nanoseconds,
    /// KiB (cfq's `back_seek_max`).
    Kibibytes,
    /// 512-byte sectors (bfq's `max_budget`).
    Sectors,
    /// A number of requests.
    Requests,
    /// A plain count.
    Count,
    /// A multiplier.
    Factor,
    /// 0 or 1.
    Bool,
}

impl Unit {
    /// The short name printed next to values.
    pub const fn symbol(self) -> &'static str {
        match self {
            Unit::Milliseconds => "ms",
            Unit::Microseconds => "us",
            Unit::Nanoseconds => "ns",
            Unit::Kibibytes => "KiB",
            Unit::Sectors => "sectors",
            Unit::Requests => "requests",
            Unit::Count => "count",
            Unit::Factor => "factor",
            Unit::Bool => "bool",
        }
    }

    /// What a value in this unit may look like, for messages.
    pub const fn accepted_forms(self) -> &'static str {
        match self {
            Unit::Milliseconds => "milliseconds: 500, 500ms, 2s",
            Unit::Microseconds => "microseconds: 250, 250us, 2ms",
            Unit::Nanoseconds => "nanoseconds: 2000000, 2ms, 500us",
            Unit::Kibibytes => "KiB: 16384, 512k, 16m",
            Unit::Sectors => "sectors: 1024, 512k",
            Unit::Requests | Unit::Count | Unit::Factor => "an integer",
            Unit::Bool => "0 or 1 (or true/false, on/off)",
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// One tunable: sysfs name, unit, kernel default, accepted range and help.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TunableSpec {
    /// The sysfs attribute name, e.g. `read_expire`.
    pub name: &'static str,
    /// The unit of the value.
    pub unit: Unit,
    /// The kernel's default.
    pub default: i64,
    /// The smallest accepted value.
    pub min: i64,
    /// The largest accepted value.
    pub max: i64,
    /// One line of help.
    pub help: &'static str,
}

/// A tunable that could not be found, parsed or set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TunableError {
    /// No tunable of that name.
    #[error("{owner} has no tunable `{name}` ({})", describe_accepted(accepted))]
    Unknown {
        /// The scheduler (or component) asked.
        owner: String,
        /// The name as given.
        name: String,
        /// Every name it has.
        accepted: Vec<&'static str>,
    },
    /// The value did not parse.
    #[error("{name}: {}", parse_message(problem, expected))]
    Parse {
        /// The tunable.
        name: &'static str,
        /// What went wrong. (Not a `source`: the message already includes it.)
        problem: QuantityError,
        /// What the unit accepts.
        expected: &'static str,
    },
    /// The value is outside the accepted range.
    #[error("{name}: {value} is out of range (accepted: {min}..={max} {unit})")]
    Range {
        /// The tunable.
        name: &'static str,
        /// The rejected value in the tunable's unit.
        value: i64,
        /// The smallest accepted value.
        min: i64,
        /// The largest accepted value.
        max: i64,
        /// The unit.
        unit: Unit,
    },
}

impl TunableSpec {
    /// Parses `text` in this tunable's unit and checks the range.
    pub fn parse(&self, text: &str) -> Result<i64, TunableError> {
        self.check(self.parse_number(text)?)
    }

    /// Parses `text` in this tunable's unit without checking the range: a non-negative number
    /// (a `Bool` tunable also takes any integer, which its range then judges), for callers
    /// that apply the kernel's own out-of-range rule (sysfs clamping).
    pub fn parse_number(&self, text: &str) -> Result<i64, TunableError> {
        let parse_error = |problem| TunableError::Parse {
            name: self.name,
            problem,
            expected: self.unit.accepted_forms(),
        };
        let unsigned = |result: Result<u64, QuantityError>| -> Result<i64, TunableError> {
            let value = result.map_err(parse_error)?;
            i64::try_from(value).map_err(|_| TunableError::Range {
                name: self.name,
                value: i64::MAX,
                min: self.min,
                max: self.max,
                unit: self.unit,
            })
        };
        let value = match self.unit {
            Unit::Milliseconds => unsigned(units::parse_time_in(text, 1_000_000, "milliseconds"))?,
            Unit::Microseconds => unsigned(units::parse_time_in(text, 1_000, "microseconds"))?,
            Unit::Nanoseconds => unsigned(units::parse_time_in(text, 1, "nanoseconds"))?,
            Unit::Kibibytes => unsigned(units::parse_size_in(text, 1024, "KiB"))?,
            Unit::Sectors => unsigned(units::parse_size_in(text, 512, "sectors"))?,
            Unit::Bool => match text.trim().to_ascii_lowercase().as_str() {
                "true" | "on" | "yes" => 1,
                "false" | "off" | "no" => 0,
                other => units::parse_integer(other, "0 or 1").map_err(|_| {
                    parse_error(QuantityError::Malformed {
                        text: text.trim().to_owned(),
                        expected: "0 or 1",
                    })
                })?,
            },
            Unit::Requests | Unit::Count | Unit::Factor => {
                units::parse_integer(text, "an integer").map_err(parse_error)?
            }
        };
        Ok(value)
    }

    /// Checks that `value` is in range.
    pub fn check(&self, value: i64) -> Result<i64, TunableError> {
        if (self.min..=self.max).contains(&value) {
            Ok(value)
        } else {
            Err(TunableError::Range {
                name: self.name,
                value,
                min: self.min,
                max: self.max,
                unit: self.unit,
            })
        }
    }
}

fn describe_accepted(accepted: &[&'static str]) -> String {
    if accepted.is_empty() {
        "it has no tunables".to_owned()
    } else {
        format!("accepted: {}", accepted.join(", "))
    }
}

/// Finds `name` in `specs`, or says what `owner` accepts.
pub fn find<'a>(
    specs: &'a [TunableSpec],
    owner: &str,
    name: &str,
) -> Result<&'a TunableSpec, TunableError> {
    specs.iter().find(|spec| spec.name == name).ok_or_else(|| TunableError::Unknown {
        owner: owner.to_owned(),
        name: name.to_owned(),
        accepted: specs.iter().map(|spec| spec.name).collect(),
    })
}

/// The largest value a kernel `int` tunable accepts (`INT_MAX`).
pub const INT_MAX: i64 = i32::MAX as i64;

/// A parse error's text, with what the unit accepts said once (an empty value's message
/// already says what it expected).
fn parse_message(problem: &QuantityError, expected: &str) -> String {
    match problem {
        QuantityError::Empty { .. } => format!("empty value (expected {expected})"),
        _ => format!("{problem} (expected {expected})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPIRE: TunableSpec = TunableSpec {
        name: "read_expire",
        unit: Unit::Milliseconds,
        default: 500,
        min: 0,
        max: INT_MAX,
        help: "",
    };

    // Proves values parse in the tunable's unit, with suffixes, and are range-checked.
    #[test]
    fn values_parse_in_the_tunables_unit() {
        assert_eq!(EXPIRE.parse("500"), Ok(500));
        assert_eq!(EXPIRE.parse("6ms"), Ok(6));
        assert_eq!(EXPIRE.parse("2s"), Ok(2000));
        assert!(matches!(EXPIRE.parse("-1"), Err(TunableError::Parse { .. })));
        assert!(matches!(EXPIRE.parse("500us"), Err(TunableError::Parse { .. })));
        assert!(matches!(EXPIRE.parse("3000000000"), Err(TunableError::Range { .. })));
        let kib = TunableSpec { unit: Unit::Kibibytes, ..EXPIRE };
        assert_eq!(kib.parse("512k"), Ok(512));
        assert_eq!(kib.parse("16m"), Ok(16384));
        let flag = TunableSpec { unit: Unit::Bool, min: 0, max: 1, ..EXPIRE };
        assert_eq!(flag.parse("on"), Ok(1));
        assert!(flag.parse("2").is_err());
        let count = TunableSpec { unit: Unit::Count, min: i64::MIN, max: i64::MAX, ..EXPIRE };
        assert_eq!(count.parse("-2"), Ok(-2));
    }

    #[test]
    fn unknown_names_list_what_is_accepted() {
        let error = find(&[EXPIRE], "deadline", "read_expiry").unwrap_err();
        assert_eq!(
            error.to_string(),
            "deadline has no tunable `read_expiry` (accepted: read_expire)"
        );
    }

    // Proves an empty value says what is accepted once, not twice.
    #[test]
    fn an_empty_value_says_what_is_accepted_once() {
        let spec = TunableSpec {
            name: "slice_idle",
            unit: Unit::Milliseconds,
            default: 8,
            min: 0,
            max: INT_MAX,
            help: "",
        };
        let message = spec.parse("").unwrap_err().to_string();
        assert_eq!(message.matches("expected").count(), 1, "{message}");
        assert!(message.starts_with("slice_idle: empty value (expected"), "{message}");
    }
}
