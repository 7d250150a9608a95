//! Peak-rate estimation (modern-schedulers.md §3.10): how fast the device moves sectors when it
//! streams, measured from dispatches over windows of up to a second and low-pass filtered.
//!
//! Rates are in sectors per microsecond, fixed point with 16 fractional bits (the kernel's
//! `BFQ_RATE_SHIFT`): 14000 is about 0.21 sectors/µs, 109 MB/s.

use elevator_core::{Duration, Instant};

/// Fractional bits of a rate.
pub(super) const RATE_SHIFT: u32 = 16;
/// Reference peak rates of a rotational and a non-rotational device (`ref_rate`).
pub(super) const REFERENCE_RATE: [u64; 2] = [14_000, 33_000];
/// A window needs this many dispatches to count.
const MIN_SAMPLES: u64 = 32;
/// ... and must last this long.
const MIN_INTERVAL: Duration = Duration::from_millis(300);
/// A window closes once it lasts this long.
const REFERENCE_INTERVAL: Duration = Duration::from_secs(1);
/// A dispatch this long after the previous one, with nothing in flight, closes the window.
const DEVICE_IDLE: Duration = Duration::from_millis(100);
/// A dispatch counts as sequential if the device was busy or finished less than this ago.
pub(super) const MIN_TT: Duration = Duration::from_millis(2);
/// Rates above 20 M sectors/s are measurement artefacts.
const MAX_RATE: u64 = 20 << RATE_SHIFT;

/// The estimator's state (the rate fields of `bfq_data`).
#[derive(Clone, Debug)]
pub(super) struct PeakRate {
    /// The estimate.
    pub(super) rate: u64,
    /// Dispatches in the current window (0: no window open).
    samples: u64,
    sequential_samples: u64,
    sectors: u64,
    /// The largest request of the last up to 32 dispatches.
    pub(super) last_max_sectors: u64,
    first_dispatch: Instant,
    last_dispatch: Instant,
    window: Duration,
    /// How many times the estimate was updated.
    pub(super) updates: u64,
}

/// A dispatch as the estimator sees it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sample {
    /// When.
    pub(super) now: Instant,
    /// Requests at the device before this one.
    pub(super) in_driver: u32,
    /// Its size.
    pub(super) sectors: u64,
    /// It starts near where the previous dispatch ended.
    pub(super) near: bool,
    /// When the last request completed.
    pub(super) last_completion: Instant,
}

impl PeakRate {
    /// Starts at two thirds of the rotational reference rate.
    pub(super) fn new() -> PeakRate {
        PeakRate {
            rate: REFERENCE_RATE[0] * 2 / 3,
            samples: 0,
            sequential_samples: 0,
            sectors: 0,
            last_max_sectors: 0,
            first_dispatch: Instant::ZERO,
            last_dispatch: Instant::ZERO,
            window: Duration::ZERO,
            updates: 0,
        }
    }

    /// The estimate in sectors per second.
    pub(super) fn sectors_per_second(&self) -> u64 {
        ((u128::from(self.rate) * 1_000_000) >> RATE_SHIFT) as u64
    }

    /// Takes a dispatch into the window (`bfq_update_peak_rate`). True if the estimate
    /// changed.
    pub(super) fn on_dispatch(&mut self, sample: Sample) -> bool {
        let now = sample.now;
        let mut updated = false;
        if self.samples == 0 {
            self.reset(Some(sample));
        } else if now.saturating_since(self.last_dispatch) > DEVICE_IDLE && sample.in_driver == 0 {
            updated = self.update_and_reset(Some(sample), sample.last_completion);
        } else {
            self.samples += 1;
            let busy =
                sample.in_driver > 0 || now.saturating_since(sample.last_completion) < MIN_TT;
            if busy && sample.near {
                self.sequential_samples += 1;
            }
            self.sectors += sample.sectors;
            self.last_max_sectors = if self.samples % 32 != 0 {
                self.last_max_sectors.max(sample.sectors)
            } else {
                sample.sectors
            };
            self.window = now.saturating_since(self.first_dispatch);
            if self.window >= REFERENCE_INTERVAL {
                updated = self.update_and_reset(Some(sample), sample.last_completion);
            }
        }
        self.last_dispatch = now;
        updated
    }

    /// A completion that took so long that the requests of the window cannot have been served
    /// at a plausible rate (under 1 M sectors/s) closes the window. True if the estimate
    /// changed.
    pub(super) fn on_completion(&mut self, now: Instant, last_completion: Instant) -> bool {
        let delta_us = now.saturating_since(last_completion).as_micros();
        if delta_us > MIN_TT.as_micros()
            && (self.last_max_sectors << RATE_SHIFT) / delta_us < 1 << (RATE_SHIFT - 10)
        {
            return self.update_and_reset(None, last_completion);
        }
        false
    }

    /// Closes the window: computes its rate if it is long and full enough, filters it into the
    /// estimate, and opens a new window at `next` (or none).
    fn update_and_reset(&mut self, next: Option<Sample>, last_completion: Instant) -> bool {
        let mut updated = false;
        if self.samples >= MIN_SAMPLES && self.window >= MIN_INTERVAL {
            let window = self.window.max(last_completion.saturating_since(self.first_dispatch));
            let rate = (self.sectors << RATE_SHIFT) / window.as_micros().max(1);
            let mostly_random = self.sequential_samples < (3 * self.samples) >> 2;
            if !(mostly_random && rate <= self.rate || rate > MAX_RATE) {
                // The new rate weighs more the more sequential and the longer its window was:
                // weight 0..=8, divisor 10 down to 2.
                let weight = 9 * self.sequential_samples / self.samples;
                let weight = (weight * window.as_nanos() / REFERENCE_INTERVAL.as_nanos()).min(8);
                let divisor = 10 - weight;
                self.rate = (self.rate * (divisor - 1) / divisor + rate / divisor).max(1);
                self.updates += 1;
                updated = true;
            }
        }
        self.reset(next);
        updated
    }

    fn reset(&mut self, next: Option<Sample>) {
        match next {
            Some(sample) => {
                self.first_dispatch = sample.now;
                self.last_dispatch = sample.now;
                self.samples = 1;
                self.sequential_samples = 0;
                self.sectors = sample.sectors;
                self.last_max_sectors = sample.sectors;
                self.window = Duration::ZERO;
            }
            None => self.samples = 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the estimator converges on a streaming device's rate: 256-sector requests every
    // 1.28 ms (200 sectors/ms, 0.2 sectors/µs) back to back for five seconds move the estimate
    // from its initial two thirds of the reference to within 2 % of the truth.
    #[test]
    fn a_streaming_device_is_measured() {
        let mut peak = PeakRate::new();
        let start_rate = peak.rate;
        let mut now = Instant::ZERO;
        for _ in 0..4000 {
            let sample =
                Sample { now, in_driver: 1, sectors: 256, near: true, last_completion: now };
            peak.on_dispatch(sample);
            now += Duration::from_micros(1280);
        }
        let truth = (200u64 << RATE_SHIFT) / 1000;
        assert!(peak.updates >= 4, "{} updates", peak.updates);
        assert_ne!(peak.rate, start_rate);
        assert!(peak.rate.abs_diff(truth) * 50 < truth, "{} vs {truth}", peak.rate);
        assert_eq!(peak.sectors_per_second(), (peak.rate * 1_000_000) >> RATE_SHIFT);
    }
}
