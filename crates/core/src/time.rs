//! Simulated and real time as integer nanoseconds.
//!
//! `Instant` is a point on the queue's clock (nanoseconds since the clock's origin) and
//! `Duration` a span. Both are plain `u64` nanoseconds so that the simulator never accumulates
//! floating-point time and so that one seed reproduces a run byte for byte. Arithmetic that can
//! overflow is checked: `+` and `-` panic on overflow (a programmer error: 2^64 ns is 584 years),
//! and the `checked_*` / `saturating_*` forms are there for code that must not.
//!
//! The 2.6 schedulers kept time in jiffies. [`HZ`] is fixed at 1000, so one jiffy is one
//! millisecond; [`Instant::jiffies`] and [`Instant::from_jiffies`] let a scheduler reproduce the
//! kernel's integer jiffy comparisons ("expired" means strictly after the deadline jiffy) and
//! timers that fire on jiffy boundaries. A blk-mq host's kernel has a tick rate of its own
//! ([`TickRate`], 250 Hz by default), which the blk-mq queue and schedulers count in.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

use serde::{Deserialize, Serialize};

/// The kernel tick rate that the 2.6 schedulers are modelled at (RHEL5 x86_64 `CONFIG_HZ=1000`).
pub const HZ: u64 = 1000;

const NANOS_PER_JIFFY: u64 = 1_000_000_000 / HZ;

/// A kernel's tick rate (`CONFIG_HZ`), for code that must count in that kernel's jiffies: the
/// blk-mq hosts' delayed queue run (`msecs_to_jiffies(BLK_MQ_BUDGET_DELAY)`), mq-deadline's
/// sysfs rounding. [`HZ`] stays the 2.6 schedulers' fixed 1000 (RHEL 5); a blk-mq host takes its
/// running kernel's rate, [`TickRate::BLK_MQ_DEFAULT`] (250, the rate the comparison in
/// modern-vs-kernel.md §0 measured) unless told otherwise.
///
/// Jiffy boundaries lie at whole multiples of `1 s / hz` from the clock's origin (jiffy `n`
/// starts at `n × 10⁹ / hz` ns, rounded down): the kernel's phase of the tick against the
/// workload is not modelled.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct TickRate(u32);

impl TickRate {
    /// 2.6 hosts (RHEL 5 x86_64): 1000 Hz, the same as [`HZ`].
    pub const LEGACY: TickRate = TickRate(HZ as u32);
    /// A blk-mq host's default: 250 Hz (`CONFIG_HZ_250`, the kernel measured in
    /// modern-vs-kernel.md §0 and most distribution kernels).
    pub const BLK_MQ_DEFAULT: TickRate = TickRate(250);
    /// The rates a kernel can be configured with (`kernel/Kconfig.hz`: 100, 250, 300, 1000).
    pub const ACCEPTED: [u32; 4] = [100, 250, 300, 1000];

    /// `hz` if it is one of [`TickRate::ACCEPTED`].
    pub fn new(hz: u32) -> Option<TickRate> {
        TickRate::ACCEPTED.contains(&hz).then_some(TickRate(hz))
    }

    /// Ticks per second.
    pub const fn hz(self) -> u32 {
        self.0
    }

    /// The jiffy that contains `at`.
    pub const fn jiffies(self, at: Instant) -> u64 {
        (at.0 as u128 * self.0 as u128 / 1_000_000_000) as u64
    }

    /// The first nanosecond of jiffy `jiffies`.
    pub const fn jiffy_start(self, jiffies: u64) -> Instant {
        let nanos = (jiffies as u128 * 1_000_000_000).div_ceil(self.0 as u128);
        Instant(if nanos > u64::MAX as u128 { u64::MAX } else { nanos as u64 })
    }

    /// When a timer armed at `now` for `delay` jiffies fires: at the start of jiffy
    /// `jiffies(now) + delay` (`mod_timer(jiffies + delay)`; a delay of 0 fires at once).
    pub const fn timer_at(self, now: Instant, delay: u64) -> Instant {
        if delay == 0 {
            return now;
        }
        self.jiffy_start(self.jiffies(now) + delay)
    }

    /// `msecs_to_jiffies`: milliseconds to jiffies, rounded up.
    pub const fn msecs_to_jiffies(self, millis: u64) -> u64 {
        (millis as u128 * self.0 as u128).div_ceil(1000) as u64
    }

    /// `jiffies_to_msecs`: jiffies to milliseconds, rounded up (exact at 100, 250, 1000 Hz).
    pub const fn jiffies_to_msecs(self, jiffies: u64) -> u64 {
        (jiffies as u128 * 1000).div_ceil(self.0 as u128) as u64
    }
}

impl Default for TickRate {
    fn default() -> TickRate {
        TickRate::LEGACY
    }
}

/// A point in time: nanoseconds since the clock's origin.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Instant(u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Duration(u64);

impl Instant {
    /// The clock's origin.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant; useful as "never".
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Instant {
        Instant(nanos)
    }

    /// An instant `millis` milliseconds after the origin.
    pub const fn from_millis(millis: u64) -> Instant {
        Instant(millis * 1_000_000)
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The jiffy (at [`HZ`]) that contains this instant.
    pub const fn jiffies(self) -> u64 {
        self.0 / NANOS_PER_JIFFY
    }

    /// The first nanosecond of jiffy `jiffies`: where a kernel timer for that jiffy fires.
    pub const fn from_jiffies(jiffies: u64) -> Instant {
        Instant(jiffies.saturating_mul(NANOS_PER_JIFFY))
    }

    /// The span from `earlier` to `self`, or `None` if `earlier` is later.
    pub const fn checked_since(self, earlier: Instant) -> Option<Duration> {
        match self.0.checked_sub(earlier.0) {
            Some(nanos) => Some(Duration(nanos)),
            None => None,
        }
    }

    /// The span from `earlier` to `self`, or zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// `self + span`, or `None` on overflow.
    pub const fn checked_add(self, span: Duration) -> Option<Instant> {
        match self.0.checked_add(span.0) {
            Some(nanos) => Some(Instant(nanos)),
            None => None,
        }
    }

    /// `self + span`, clamped at [`Instant::MAX`].
    pub const fn saturating_add(self, span: Duration) -> Instant {
        Instant(self.0.saturating_add(span.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span.
    pub const MAX: Duration = Duration(u64::MAX);

    /// A span of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: u64) -> Duration {
        Duration(nanos)
    }

    /// A span of `micros` microseconds.
    pub const fn from_micros(micros: u64) -> Duration {
        Duration(micros * 1_000)
    }

    /// A span of `millis` milliseconds.
    pub const fn from_millis(millis: u64) -> Duration {
        Duration(millis * 1_000_000)
    }

    /// A span of `secs` seconds.
    pub const fn from_secs(secs: u64) -> Duration {
        Duration(secs * 1_000_000_000)
    }

    /// A span of `jiffies` ticks at [`HZ`].
    pub const fn from_jiffies(jiffies: u64) -> Duration {
        Duration(jiffies.saturating_mul(NANOS_PER_JIFFY))
    }

    /// Length in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Length in whole microseconds (truncated).
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }

    /// Length in whole milliseconds (truncated).
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }

    /// Length in whole jiffies at [`HZ`] (truncated).
    pub const fn as_jiffies(self) -> u64 {
        self.0 / NANOS_PER_JIFFY
    }

    /// Length in seconds as a float, for reports only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// `self + other`, or `None` on overflow.
    pub const fn checked_add(self, other: Duration) -> Option<Duration> {
        match self.0.checked_add(other.0) {
            Some(nanos) => Some(Duration(nanos)),
            None => None,
        }
    }

    /// `self - other`, or `None` if `other` is longer.
    pub const fn checked_sub(self, other: Duration) -> Option<Duration> {
        match self.0.checked_sub(other.0) {
            Some(nanos) => Some(Duration(nanos)),
            None => None,
        }
    }

    /// `self - other`, or zero if `other` is longer.
    pub const fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }

    /// `self * factor`, or `None` on overflow.
    pub const fn checked_mul(self, factor: u64) -> Option<Duration> {
        match self.0.checked_mul(factor) {
            Some(nanos) => Some(Duration(nanos)),
            None => None,
        }
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, span: Duration) -> Instant {
        self.checked_add(span).expect("Instant + Duration overflowed u64 nanoseconds")
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, span: Duration) {
        *self = *self + span;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.checked_since(earlier).expect("Instant - Instant: the right side is later")
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, other: Duration) -> Duration {
        self.checked_add(other).expect("Duration + Duration overflowed u64 nanoseconds")
    }
}

impl AddAssign for Duration {
    fn add_assign(&mut self, other: Duration) {
        *self = *self + other;
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, other: Duration) -> Duration {
        self.checked_sub(other).expect("Duration - Duration: the right side is longer")
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t+{}", Duration(self.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Duration {
    /// Prints the largest unit that keeps the value exact: `6ms`, `1500us`, `17ns`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0;
        if nanos == 0 {
            return f.write_str("0s");
        }
        for (unit, per) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
            if nanos % per == 0 {
                return write!(f, "{}{unit}", nanos / per);
            }
        }
        write!(f, "{nanos}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the tick-rate arithmetic the blk-mq rules rest on: at 250 Hz jiffies are 4 ms,
    // `msecs_to_jiffies` rounds up (3 ms → 1 jiffy, 10 ms → 3), a timer for one jiffy fires at
    // the next tick (not 4 ms after arming), a 0-jiffy timer fires at once, and 300 Hz's
    // uneven ticks start at the nanosecond rounded up.
    #[test]
    fn tick_rates_count_whole_jiffies() {
        let hz250 = TickRate::new(250).unwrap();
        assert_eq!(hz250.jiffies(Instant::from_nanos(3_999_999)), 0);
        assert_eq!(hz250.jiffies(Instant::from_millis(4)), 1);
        assert_eq!(hz250.msecs_to_jiffies(3), 1);
        assert_eq!(hz250.msecs_to_jiffies(10), 3);
        assert_eq!(hz250.jiffies_to_msecs(3), 12);
        assert_eq!(hz250.timer_at(Instant::from_millis(5), 1), Instant::from_millis(8));
        assert_eq!(hz250.timer_at(Instant::from_millis(5), 0), Instant::from_millis(5));
        let hz300 = TickRate::new(300).unwrap();
        assert_eq!(hz300.jiffy_start(1), Instant::from_nanos(3_333_334));
        assert_eq!(hz300.jiffies(Instant::from_nanos(3_333_334)), 1);
        assert_eq!(hz300.jiffies(Instant::from_nanos(3_333_333)), 0);
        assert_eq!(TickRate::new(1000).unwrap().msecs_to_jiffies(3), 3);
        assert_eq!(TickRate::new(1000), Some(TickRate::LEGACY));
        assert_eq!(TickRate::new(500), None);
    }

    // Proves jiffy conversion truncates like the kernel's: an instant inside jiffy 5 reports 5,
    // and a timer for jiffy 5 fires at its first nanosecond.
    #[test]
    fn jiffies_truncate_and_timers_fire_on_boundaries() {
        let inside = Instant::from_nanos(5 * 1_000_000 + 999_999);
        assert_eq!(inside.jiffies(), 5);
        assert_eq!(Instant::from_jiffies(5).as_nanos(), 5_000_000);
        assert_eq!(Duration::from_millis(500).as_jiffies(), 500);
    }

    // Proves the checked forms report underflow instead of wrapping.
    #[test]
    fn checked_arithmetic_reports_underflow() {
        let early = Instant::from_millis(1);
        let late = Instant::from_millis(3);
        assert_eq!(late.checked_since(early), Some(Duration::from_millis(2)));
        assert_eq!(early.checked_since(late), None);
        assert_eq!(early.saturating_since(late), Duration::ZERO);
        assert_eq!(Instant::MAX.checked_add(Duration::from_nanos(1)), None);
    }

    #[test]
    #[should_panic(expected = "right side is later")]
    fn subtracting_a_later_instant_panics() {
        let _ = Instant::from_millis(1) - Instant::from_millis(2);
    }

    #[test]
    fn durations_print_in_the_largest_exact_unit() {
        assert_eq!(Duration::from_millis(6).to_string(), "6ms");
        assert_eq!(Duration::from_micros(1500).to_string(), "1500us");
        assert_eq!(Duration::from_secs(2).to_string(), "2s");
        assert_eq!(Duration::from_nanos(17).to_string(), "17ns");
    }
}
