//! Typed option values and the parsers of §1.5-§1.6 (`/work/shared/specs/fio-compat.md`):
//! sizes with fio's units and `kb_base`, times, ranges, splits, per-direction lists and
//! arithmetic in parentheses.

use super::catalog::{OptionSpec, TimeUnit, ValueType};

/// A resolved option value.
#[derive(Clone, PartialEq, Debug)]
pub enum FioValue {
    /// A size in bytes, or a plain integer (`iodepth`, `numjobs`).
    Int(u64),
    /// `N%` of the target (`size`, `offset`, `offset_increment`, `io_size`).
    Percent(f64),
    /// `Nz`: a number of zones.
    Zones(u64),
    /// A decimal number (`rwmixread`, `flow`).
    Float(f64),
    /// A time, in nanoseconds.
    TimeNs(u64),
    /// A `lo-hi` time range (`startdelay`), drawn per clone, in nanoseconds.
    TimeRangeNs {
        /// The low end.
        lo_ns: u64,
        /// The high end.
        hi_ns: u64,
    },
    /// A boolean or flag.
    Bool(bool),
    /// A choice, with its optional `:suffix` (`rw=randread:8`, `random_distribution=zipf:1.2`).
    Choice {
        /// The choice.
        value: String,
        /// What followed the first `:`.
        suffix: Option<String>,
    },
    /// Free text.
    Str(String),
    /// A list of names (`filename=a:b`).
    List(Vec<String>),
    /// A range of sizes in bytes (`bsrange=4k-64k`), swapped into order.
    Range {
        /// The low end.
        lo: u64,
        /// The high end.
        hi: u64,
    },
    /// `bssplit` entries: (size in bytes, percent); blank percentages already share the rest.
    Split(Vec<(u64, f64)>),
    /// A list of decimals (`percentile_list`).
    Floats(Vec<f64>),
    /// One value per direction, `read, write, trim`; `None` keeps that direction's default.
    PerDirection(Vec<Option<FioValue>>),
    /// Accepted and recorded, not interpreted (the raw text).
    Recorded(String),
}

impl std::fmt::Display for FioValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FioValue::Int(n) => write!(f, "{n}"),
            FioValue::Percent(p) => write!(f, "{p}%"),
            FioValue::Zones(z) => write!(f, "{z}z"),
            FioValue::Float(x) => write!(f, "{x}"),
            FioValue::TimeNs(ns) => write!(f, "{ns}ns"),
            FioValue::TimeRangeNs { lo_ns, hi_ns } => write!(f, "{lo_ns}ns-{hi_ns}ns"),
            FioValue::Bool(b) => write!(f, "{}", u8::from(*b)),
            FioValue::Choice { value, suffix: Some(suffix) } => write!(f, "{value}:{suffix}"),
            FioValue::Choice { value, suffix: None } => f.write_str(value),
            FioValue::Str(s) | FioValue::Recorded(s) => f.write_str(s),
            FioValue::List(items) => f.write_str(&items.join(":")),
            FioValue::Range { lo, hi } => write!(f, "{lo}-{hi}"),
            FioValue::Split(entries) => {
                let parts: Vec<String> =
                    entries.iter().map(|(size, pct)| format!("{size}/{pct}")).collect();
                f.write_str(&parts.join(":"))
            }
            FioValue::Floats(list) => {
                let parts: Vec<String> = list.iter().map(f64::to_string).collect();
                f.write_str(&parts.join(":"))
            }
            FioValue::PerDirection(parts) => {
                let parts: Vec<String> = parts
                    .iter()
                    .map(|part| part.as_ref().map_or_else(|| "default".into(), |v| v.to_string()))
                    .collect();
                f.write_str(&parts.join(","))
            }
        }
    }
}

/// `bssplit` holds at most this many entries per direction (§1.6).
const MAX_SPLIT_ENTRIES: usize = 64;
/// `percentile_list` holds at most this many entries (§1.6).
const MAX_PERCENTILES: usize = 20;

/// Parses `raw` (the text after `=`, or `None` when the option had no `=`) as `spec`'s type.
/// `kb_base` is 1000 or 1024 (§1.6). Errors say what is accepted.
pub(crate) fn parse_value(
    spec: &OptionSpec,
    raw: Option<&str>,
    kb_base: u64,
) -> Result<FioValue, String> {
    if spec.per_direction {
        let raw = raw.ok_or("a value is required")?;
        return per_direction(raw, |part| parse_one(spec.value_type, part, kb_base));
    }
    match (spec.value_type, raw) {
        (ValueType::Flag, None) => Ok(FioValue::Bool(true)),
        (ValueType::Recorded, None) => Ok(FioValue::Recorded(String::new())),
        (ValueType::OptionalStr, None) => Ok(FioValue::Str(String::new())),
        (ValueType::Bool, None) => Err("a value is required: 0 or 1".into()),
        (ValueType::Choice(choices), None) => {
            Err(format!("a value is required: {}", choices.join(", ")))
        }
        (_, None) => Err("a value is required".into()),
        (value_type, Some(raw)) => parse_one(value_type, raw, kb_base),
    }
}

fn parse_one(value_type: ValueType, raw: &str, kb_base: u64) -> Result<FioValue, String> {
    // Numbers skip leading blanks (`rwmixread = 30` works); choices do not (`rw = read` fails,
    // §1.6 "choice").
    let text = raw.trim();
    match value_type {
        ValueType::Size => parse_size(text, kb_base).map(FioValue::Int),
        ValueType::SizeOrPercent => {
            if let Some(number) = text.strip_suffix('%') {
                let pct: f64 = number
                    .trim()
                    .parse()
                    .map_err(|_| format!("`{text}`: accepts a size, N% or Nz"))?;
                if !(0.0..=100.0).contains(&pct) {
                    return Err(format!("`{text}`: a percentage is at most 100"));
                }
                Ok(FioValue::Percent(pct))
            } else if let Some(number) = text.strip_suffix(['z', 'Z']) {
                number
                    .trim()
                    .parse()
                    .map(FioValue::Zones)
                    .map_err(|_| format!("`{text}`: accepts a size, N% or Nz"))
            } else {
                parse_size(text, kb_base).map(FioValue::Int)
            }
        }
        ValueType::Float => {
            let number = leading_number(text);
            number.parse().map(FioValue::Float).map_err(|_| format!("`{text}`: accepts a number"))
        }
        ValueType::Time(unit) => parse_time(text, unit).map(FioValue::TimeNs),
        ValueType::TimeRange(unit) => match split_range(text) {
            Some((lo, hi)) => {
                let (lo, hi) = (parse_time(lo, unit)?, parse_time(hi, unit)?);
                Ok(FioValue::TimeRangeNs { lo_ns: lo.min(hi), hi_ns: lo.max(hi) })
            }
            None => parse_time(text, unit).map(|ns| FioValue::TimeRangeNs { lo_ns: ns, hi_ns: ns }),
        },
        ValueType::Bool | ValueType::Flag => match text {
            "0" => Ok(FioValue::Bool(false)),
            "1" => Ok(FioValue::Bool(true)),
            _ => Err(format!("`{text}`: accepts 0 or 1")),
        },
        ValueType::Choice(choices) => {
            let (value, suffix) = match raw.split_once(':') {
                Some((value, suffix)) => (value, Some(suffix.to_string())),
                None => (raw, None),
            };
            if choices.contains(&value) {
                Ok(FioValue::Choice { value: value.to_string(), suffix })
            } else {
                Err(format!("`{raw}`: accepts {}", choices.join(", ")))
            }
        }
        ValueType::Str | ValueType::OptionalStr => Ok(FioValue::Str(text.to_string())),
        ValueType::Recorded => Ok(FioValue::Recorded(text.to_string())),
        ValueType::StrList => Ok(FioValue::List(split_names(text))),
        ValueType::SizeRange => match split_range(text) {
            Some((lo, hi)) => {
                let (lo, hi) = (parse_size(lo, kb_base)?, parse_size(hi, kb_base)?);
                Ok(FioValue::Range { lo: lo.min(hi), hi: lo.max(hi) })
            }
            // `filesize` takes a single size too.
            None => parse_size(text, kb_base).map(|n| FioValue::Range { lo: n, hi: n }),
        },
        ValueType::Split => per_direction(text, |part| parse_split(part, kb_base)),
        ValueType::FloatList => {
            let list = text
                .split(':')
                .map(|item| item.trim().parse::<f64>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| format!("`{text}`: accepts numbers separated by `:`"))?;
            if list.len() > MAX_PERCENTILES {
                return Err(format!("`{text}`: at most {MAX_PERCENTILES} entries"));
            }
            Ok(FioValue::Floats(list))
        }
    }
}

/// `read,write,trim` (§1.6 "Per direction"): an empty part keeps the default; the last part
/// given fills later directions unless the value ends with `,`.
fn per_direction(
    raw: &str,
    parse: impl Fn(&str) -> Result<FioValue, String>,
) -> Result<FioValue, String> {
    let parts: Vec<&str> = raw.trim().split(',').collect();
    if parts.len() > 3 {
        return Err(format!("`{raw}`: accepts at most three values, read,write,trim"));
    }
    let mut values: Vec<Option<FioValue>> = Vec::with_capacity(3);
    for part in &parts {
        values.push(if part.trim().is_empty() { None } else { Some(parse(part)?) });
    }
    let ends_with_comma = parts.len() > 1 && parts.last().is_some_and(|p| p.trim().is_empty());
    let last = values.iter().rev().find_map(Clone::clone);
    while values.len() < 3 {
        values.push(if ends_with_comma { None } else { last.clone() });
    }
    Ok(FioValue::PerDirection(values))
}

fn parse_split(text: &str, kb_base: u64) -> Result<FioValue, String> {
    let mut entries: Vec<(u64, Option<f64>)> = Vec::new();
    for entry in text.split(':') {
        let (size, pct) = match entry.split_once('/') {
            Some((size, pct)) => (size, Some(pct.trim())),
            None => (entry, None),
        };
        let size = parse_size(size, kb_base)?;
        let pct = match pct {
            Some("") | None => None,
            Some(pct) => Some(
                pct.parse::<f64>()
                    .map_err(|_| format!("`{entry}`: accepts SIZE/PERCENT entries"))?,
            ),
        };
        entries.push((size, pct));
    }
    if entries.len() > MAX_SPLIT_ENTRIES {
        return Err(format!("`{text}`: at most {MAX_SPLIT_ENTRIES} entries"));
    }
    let given: f64 = entries.iter().filter_map(|(_, pct)| *pct).sum();
    if given > 100.0 {
        return Err(format!("`{text}`: the percentages add up to {given}, over 100"));
    }
    // Blank percentages share what the others leave (options.c `bssplit_ddir`).
    let blanks = entries.iter().filter(|(_, pct)| pct.is_none()).count();
    let share = if blanks == 0 { 0.0 } else { (100.0 - given) / blanks as f64 };
    Ok(FioValue::Split(
        entries.into_iter().map(|(size, pct)| (size, pct.unwrap_or(share))).collect(),
    ))
}

/// `lo-hi` or `lo:hi`; `None` for a single value. A leading `-` is not a separator.
fn split_range(text: &str) -> Option<(&str, &str)> {
    let at = text.char_indices().skip(1).find(|&(_, c)| c == '-' || c == ':')?.0;
    Some((&text[..at], &text[at + 1..]))
}

/// `a:b\:c` → `["a", "b:c"]` (§1.6 "string").
fn split_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                current.push(':');
            }
            ':' => names.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    names.push(current);
    names
}

/// The leading decimal number of `text` (digits, one `.`, a leading sign).
fn leading_number(text: &str) -> &str {
    let end = text
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '-' || c == '+'))))
        .map_or(text.len(), |(i, _)| i);
    &text[..end]
}

/// The multiplier of a size suffix (§1.6 "size/int"): with `kb_base=1024`, `k` is 1024 and
/// `ki` 1000 (fio inverts them deliberately); with 1000 the other way round. An unknown tail
/// is ignored, as fio's `get_mult_bytes` does (`size=8*1024` is 8 bytes, *observed*).
fn size_multiplier(suffix: &str, kb_base: u64) -> u64 {
    let lower = suffix.to_ascii_lowercase();
    let other_base: u64 = if kb_base == 1000 { 1024 } else { 1000 };
    let powers = ["k", "m", "g", "t", "p"];
    for (exponent, prefix) in powers.iter().enumerate() {
        let exponent = exponent as u32 + 1;
        if lower == *prefix || lower == format!("{prefix}b") {
            return kb_base.pow(exponent);
        }
        if lower == format!("{prefix}i") || lower == format!("{prefix}ib") {
            return other_base.pow(exponent);
        }
    }
    1
}

/// A size or integer: `[0x]digits[suffix]`, or `(expression)` (§1.5).
pub(crate) fn parse_size(text: &str, kb_base: u64) -> Result<u64, String> {
    let text = text.trim();
    if text.starts_with('(') {
        let bytes = expression::evaluate(text, expression::Context::Size)?;
        if bytes < 0.0 {
            return Err(format!("`{text}`: a size cannot be negative"));
        }
        return Ok(bytes.round() as u64);
    }
    let accepted = || format!("`{text}`: accepts a number with an optional unit (4k, 1m, 0x1000)");
    let (digits, radix, rest) =
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            let end = hex.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(hex.len());
            (&hex[..end], 16, &hex[end..])
        } else {
            let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
            (&text[..end], 10, &text[end..])
        };
    if digits.is_empty() {
        return Err(accepted());
    }
    let number = u64::from_str_radix(digits, radix).map_err(|_| accepted())?;
    number
        .checked_mul(size_multiplier(rest.trim(), kb_base))
        .ok_or_else(|| format!("`{text}`: too large"))
}

/// Nanoseconds of a time suffix (§1.6 "time"), or `None` when unknown.
fn time_multiplier_ns(suffix: &str) -> Option<u64> {
    Some(match suffix.to_ascii_lowercase().as_str() {
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    })
}

/// A time in nanoseconds: `digits[unit]`, a bare number in `unit`, or `(expression)`.
pub(crate) fn parse_time(text: &str, unit: TimeUnit) -> Result<u64, String> {
    let text = text.trim();
    if text.starts_with('(') {
        let ns = expression::evaluate(text, expression::Context::Time)?;
        if ns < 0.0 {
            return Err(format!("`{text}`: a time cannot be negative"));
        }
        return Ok(ns.round() as u64);
    }
    let accepted = || format!("`{text}`: accepts a time (90, 500ms, 1m, 2h)");
    let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let number: u64 = text[..end].parse().map_err(|_| accepted())?;
    let multiplier = match text[end..].trim() {
        "" => unit.ns(),
        suffix => time_multiplier_ns(suffix).ok_or_else(accepted)?,
    };
    number.checked_mul(multiplier).ok_or_else(|| format!("`{text}`: too large"))
}

/// Arithmetic in values (§1.5, fio's `exp/expression-parser.y`): `+ - * / % ^`, parentheses,
/// decimals and hex; units `k m g t p` (+`b`) as powers of 1024 and `kib mib gib tib pib` as
/// powers of 1000 whatever `kb_base` says; times `us ms s m h d`, a bare number in a time
/// option being µs. Also evaluates the integer arithmetic fio hands to `bc` after keyword
/// substitution (§1.4).
pub(crate) mod expression {
    /// What the numbers' units mean.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(crate) enum Context {
        /// Sizes: the result is in bytes.
        Size,
        /// Times: the result is in nanoseconds.
        Time,
        /// `bc` with `scale=0`: plain integers, division truncates.
        Integer,
    }

    struct Parser<'a> {
        text: &'a [u8],
        at: usize,
        context: Context,
    }

    /// Evaluates `text` in `context`.
    pub(crate) fn evaluate(text: &str, context: Context) -> Result<f64, String> {
        let mut parser = Parser { text: text.as_bytes(), at: 0, context };
        let value = parser.sum()?;
        parser.blanks();
        if parser.at != parser.text.len() {
            return Err(format!("`{text}`: cannot evaluate beyond `{}`", &text[parser.at..]));
        }
        if !value.is_finite() {
            return Err(format!("`{text}`: the result is not a finite number"));
        }
        Ok(value)
    }

    impl Parser<'_> {
        fn blanks(&mut self) {
            while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
                self.at += 1;
            }
        }

        fn peek(&mut self) -> Option<u8> {
            self.blanks();
            self.text.get(self.at).copied()
        }

        fn sum(&mut self) -> Result<f64, String> {
            let mut value = self.product()?;
            while let Some(op @ (b'+' | b'-')) = self.peek() {
                self.at += 1;
                let rhs = self.product()?;
                value = if op == b'+' { value + rhs } else { value - rhs };
            }
            Ok(value)
        }

        fn product(&mut self) -> Result<f64, String> {
            let mut value = self.power()?;
            while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
                self.at += 1;
                let rhs = self.power()?;
                if op != b'*' && rhs == 0.0 {
                    return Err("division by zero".into());
                }
                value = match op {
                    b'*' => value * rhs,
                    b'/' if self.context == Context::Integer => (value / rhs).trunc(),
                    b'/' => value / rhs,
                    _ => value % rhs,
                };
            }
            Ok(value)
        }

        fn power(&mut self) -> Result<f64, String> {
            let base = self.unary()?;
            if self.peek() == Some(b'^') {
                self.at += 1;
                // Right-associative.
                return Ok(base.powf(self.power()?));
            }
            Ok(base)
        }

        fn unary(&mut self) -> Result<f64, String> {
            match self.peek() {
                Some(b'-') => {
                    self.at += 1;
                    Ok(-self.unary()?)
                }
                Some(b'(') => {
                    self.at += 1;
                    let value = self.sum()?;
                    if self.peek() != Some(b')') {
                        return Err("a `(` is not closed".into());
                    }
                    self.at += 1;
                    Ok(value)
                }
                Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
                _ => Err("expected a number or `(`".into()),
            }
        }

        fn number(&mut self) -> Result<f64, String> {
            let text = std::str::from_utf8(self.text).unwrap_or_default();
            let start = self.at;
            let value = if text[start..].starts_with("0x") || text[start..].starts_with("0X") {
                self.at += 2;
                let digits_start = self.at;
                while self.text.get(self.at).is_some_and(u8::is_ascii_hexdigit) {
                    self.at += 1;
                }
                u64::from_str_radix(&text[digits_start..self.at], 16)
                    .map_err(|_| format!("bad hex number `{}`", &text[start..self.at]))?
                    as f64
            } else {
                while self.text.get(self.at).is_some_and(|c| c.is_ascii_digit() || *c == b'.') {
                    self.at += 1;
                }
                text[start..self.at]
                    .parse::<f64>()
                    .map_err(|_| format!("bad number `{}`", &text[start..self.at]))?
            };
            let suffix_start = self.at;
            while self.text.get(self.at).is_some_and(u8::is_ascii_alphabetic) {
                self.at += 1;
            }
            let suffix = text[suffix_start..self.at].to_ascii_lowercase();
            Ok(value * self.multiplier(&suffix)?)
        }

        fn multiplier(&self, suffix: &str) -> Result<f64, String> {
            let unknown = || format!("unknown unit `{suffix}`");
            match self.context {
                Context::Integer if suffix.is_empty() => Ok(1.0),
                Context::Integer => Err(unknown()),
                Context::Time => {
                    if suffix.is_empty() {
                        return Ok(1_000.0);
                    }
                    super::time_multiplier_ns(suffix).map(|ns| ns as f64).ok_or_else(unknown)
                }
                Context::Size => {
                    if suffix.is_empty() || suffix == "b" {
                        return Ok(1.0);
                    }
                    for (exponent, prefix) in ["k", "m", "g", "t", "p"].iter().enumerate() {
                        let exponent = exponent as i32 + 1;
                        if suffix == *prefix || suffix == format!("{prefix}b") {
                            return Ok(1024f64.powi(exponent));
                        }
                        if suffix == format!("{prefix}ib") || suffix == format!("{prefix}i") {
                            return Ok(1000f64.powi(exponent));
                        }
                    }
                    Err(unknown())
                }
            }
        }
    }
}
