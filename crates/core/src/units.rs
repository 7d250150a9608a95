//! Quantities with units as users type them: `500`, `500ms`, `6ms`, `1.5s`, `512k`, `24g`.
//!
//! Sizes take binary suffixes (`k` = KiB, `m` = MiB, `g` = GiB, `t` = TiB; `kib`, `kb` and the
//! upper-case forms mean the same) and times take `ns`, `us`, `ms` or `s`. A bare number has the
//! unit the caller names. Decimal fractions are accepted when the result is a whole number of
//! the target unit (`1.5s` is 1500 ms; `0.5ms` as whole milliseconds is an error).

use crate::time::Duration;

/// Why a quantity did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Nothing was given.
    #[error("empty value (expected {expected})")]
    Empty {
        /// What would have been accepted.
        expected: &'static str,
    },
    /// Not a number with a known suffix.
    #[error("`{text}` is not {expected}")]
    Malformed {
        /// The text as given.
        text: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// Too large to represent.
    #[error("`{text}` is too large")]
    Overflow {
        /// The text as given.
        text: String,
    },
    /// A fraction of the unit the value is kept in.
    #[error("`{text}` is not a whole number of {unit}")]
    NotWhole {
        /// The text as given.
        text: String,
        /// The unit the value must be a whole number of.
        unit: &'static str,
    },
}

/// What a time value accepts, for messages.
pub const TIME_EXPECTED: &str = "a time such as 500, 6ms, 500us, 2s";
/// What a size value accepts, for messages.
pub const SIZE_EXPECTED: &str = "a size such as 4096, 512k, 16m, 24g";

/// A non-negative decimal number split into an integer mantissa and a power of ten:
/// `1.25` is (125, 2).
fn split_decimal(number: &str) -> Option<(u128, u32)> {
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (number, ""),
    };
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    if !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    if fraction.len() > 18 {
        return None;
    }
    let digits: String = [whole, fraction].concat();
    let mantissa = digits.parse::<u128>().ok()?;
    Some((mantissa, fraction.len() as u32))
}

/// `mantissa / 10^scale * multiplier / divisor` if it is a whole number that fits in u64.
fn scale_exact(
    text: &str,
    (mantissa, scale): (u128, u32),
    multiplier: u128,
    divisor: u128,
    unit: &'static str,
) -> Result<u64, QuantityError> {
    let overflow = || QuantityError::Overflow { text: text.to_owned() };
    let numerator = mantissa.checked_mul(multiplier).ok_or_else(overflow)?;
    let denominator = 10u128.pow(scale) * divisor;
    if numerator % denominator != 0 {
        return Err(QuantityError::NotWhole { text: text.to_owned(), unit });
    }
    u64::try_from(numerator / denominator).map_err(|_| overflow())
}

fn split_suffix(text: &str) -> (&str, String) {
    let at = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len());
    (&text[..at], text[at..].to_ascii_lowercase())
}

/// Nanoseconds per unit for a time suffix.
fn time_suffix_nanos(suffix: &str) -> Option<u128> {
    Some(match suffix {
        "ns" | "nsec" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        _ => return None,
    })
}

/// Parses a time into whole units of `unit_nanos` nanoseconds (named `unit` in messages); a
/// bare number is already in that unit.
pub fn parse_time_in(
    text: &str,
    unit_nanos: u64,
    unit: &'static str,
) -> Result<u64, QuantityError> {
    parse_time_scaled(text, unit_nanos, unit_nanos, unit)
}

/// Parses a time; a bare number is in units of `bare_unit_nanos` nanoseconds.
pub fn parse_duration(text: &str, bare_unit_nanos: u64) -> Result<Duration, QuantityError> {
    parse_time_scaled(text, bare_unit_nanos, 1, "nanoseconds").map(Duration::from_nanos)
}

fn parse_time_scaled(
    text: &str,
    bare_unit_nanos: u64,
    target_unit_nanos: u64,
    unit: &'static str,
) -> Result<u64, QuantityError> {
    let scale = Scale { expected: TIME_EXPECTED, suffix: time_suffix_nanos };
    scale.parse(text, bare_unit_nanos, target_unit_nanos, unit)
}

/// A family of suffixed quantities: what the messages say it accepts, and the size of the base
/// unit (nanoseconds, bytes) each suffix stands for.
struct Scale {
    expected: &'static str,
    suffix: fn(&str) -> Option<u128>,
}

impl Scale {
    /// Parses `text` into whole `target` units; a bare number counts `bare` base units each.
    fn parse(
        &self,
        text: &str,
        bare: u64,
        target: u64,
        unit: &'static str,
    ) -> Result<u64, QuantityError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(QuantityError::Empty { expected: self.expected });
        }
        let malformed =
            || QuantityError::Malformed { text: text.to_owned(), expected: self.expected };
        let (number, suffix) = split_suffix(text);
        let decimal = split_decimal(number).ok_or_else(malformed)?;
        let per_unit = if suffix.is_empty() {
            u128::from(bare)
        } else {
            (self.suffix)(&suffix).ok_or_else(malformed)?
        };
        scale_exact(text, decimal, per_unit, u128::from(target), unit)
    }
}

/// Bytes per unit for a size suffix (binary multiples).
fn size_suffix_bytes(suffix: &str) -> Option<u128> {
    Some(match suffix {
        "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    })
}

/// Parses a size into whole units of `unit_bytes` bytes (named `unit` in messages); a bare
/// number is already in that unit.
pub fn parse_size_in(
    text: &str,
    unit_bytes: u64,
    unit: &'static str,
) -> Result<u64, QuantityError> {
    let scale = Scale { expected: SIZE_EXPECTED, suffix: size_suffix_bytes };
    scale.parse(text, unit_bytes, unit_bytes, unit)
}

/// Parses a size in bytes; a bare number is bytes.
pub fn parse_size_bytes(text: &str) -> Result<u64, QuantityError> {
    parse_size_in(text, 1, "bytes")
}

/// Parses a plain integer, possibly negative.
pub fn parse_integer(text: &str, expected: &'static str) -> Result<i64, QuantityError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(QuantityError::Empty { expected });
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(QuantityError::Malformed { text: text.to_owned(), expected });
    }
    text.parse::<i64>().map_err(|_| QuantityError::Overflow { text: text.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the forms DESIGN §4 promises: bare numbers in the caller's unit, suffixes, and
    // exact fractions.
    #[test]
    fn times_convert_exactly() {
        assert_eq!(parse_time_in("500", 1_000_000, "ms"), Ok(500));
        assert_eq!(parse_time_in("500ms", 1_000_000, "ms"), Ok(500));
        assert_eq!(parse_time_in("2s", 1_000_000, "ms"), Ok(2000));
        assert_eq!(parse_time_in("1.5s", 1_000_000, "ms"), Ok(1500));
        assert_eq!(parse_time_in("2ms", 1, "ns"), Ok(2_000_000));
        assert!(matches!(
            parse_time_in("500us", 1_000_000, "ms"),
            Err(QuantityError::NotWhole { .. })
        ));
        assert!(matches!(
            parse_time_in("5 fortnights", 1, "ns"),
            Err(QuantityError::Malformed { .. })
        ));
        assert!(matches!(parse_time_in("", 1, "ns"), Err(QuantityError::Empty { .. })));
        assert!(matches!(parse_time_in(".", 1, "ns"), Err(QuantityError::Malformed { .. })));
        assert!(matches!(
            parse_time_in("99999999999999999999s", 1, "ns"),
            Err(QuantityError::Overflow { .. })
        ));
        assert_eq!(parse_duration("6ms", 1_000_000), Ok(Duration::from_millis(6)));
        assert_eq!(parse_duration("6", 1_000_000), Ok(Duration::from_millis(6)));
        assert_eq!(parse_duration("1.5", 1_000_000), Ok(Duration::from_micros(1500)));
    }

    #[test]
    fn sizes_use_binary_suffixes() {
        assert_eq!(parse_size_bytes("4096"), Ok(4096));
        assert_eq!(parse_size_bytes("512k"), Ok(512 << 10));
        assert_eq!(parse_size_bytes("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size_bytes("24g"), Ok(24 << 30));
        assert_eq!(parse_size_bytes("1.5m"), Ok(3 << 19));
        assert_eq!(parse_size_in("16m", 1024, "KiB"), Ok(16384));
        assert_eq!(parse_size_in("512k", 512, "sectors"), Ok(1024));
        assert!(matches!(parse_size_in("100", 512, "sectors"), Ok(100)));
        assert!(matches!(
            parse_size_in("1000b", 512, "sectors"),
            Err(QuantityError::NotWhole { .. })
        ));
        assert!(matches!(parse_size_bytes("-1k"), Err(QuantityError::Malformed { .. })));
    }

    #[test]
    fn integers_reject_junk() {
        assert_eq!(parse_integer("-3", "an integer"), Ok(-3));
        assert_eq!(parse_integer("+3", "an integer"), Ok(3));
        assert!(parse_integer("3x", "an integer").is_err());
        assert!(parse_integer("-", "an integer").is_err());
        assert!(parse_integer("99999999999999999999", "an integer").is_err());
    }
}

/// A UTC calendar date and time of day, from seconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtcTime {
    /// The year (1970 on).
    pub year: i64,
    /// The month, 1 to 12.
    pub month: u32,
    /// The day of the month, 1 to 31.
    pub day: u32,
    /// Hours, minutes and seconds of the day.
    pub hour: u32,
    /// Minutes of the hour.
    pub minute: u32,
    /// Seconds of the minute.
    pub second: u32,
    /// Whole days since 1970-01-01 (a Thursday), for the day of the week.
    pub days_since_epoch: u64,
}

impl UtcTime {
    /// The calendar time `seconds` after the epoch (Howard Hinnant's `civil_from_days`, the
    /// proleptic Gregorian calendar).
    pub fn from_unix_seconds(seconds: u64) -> UtcTime {
        let days = seconds / 86_400;
        let rest = seconds % 86_400;
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        UtcTime {
            year,
            month,
            day,
            hour: (rest / 3600) as u32,
            minute: (rest / 60 % 60) as u32,
            second: (rest % 60) as u32,
            days_since_epoch: days,
        }
    }

    /// RFC 3339 in UTC: `2026-11-27T20:49:11Z`.
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

#[cfg(test)]
mod utc_tests {
    use super::UtcTime;

    // Proves the calendar conversion at known instants: the epoch, a leap day, the turn of a
    // century that is not a leap year and one that is, and this project's own date.
    #[test]
    fn known_instants() {
        let at = |seconds| UtcTime::from_unix_seconds(seconds).rfc3339();
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(at(1_795_812_551), "2026-11-27T20:49:11Z");
        assert_eq!(UtcTime::from_unix_seconds(86_400 * 3).days_since_epoch % 7, 3);
    }
}
