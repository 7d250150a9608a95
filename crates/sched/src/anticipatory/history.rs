//! What anticipatory learns about processes (legacy-schedulers.md §4.4): per process, decaying
//! averages of think time and seek distance; over all processes, the same for new processes and
//! two exit probabilities. Everything is integer fixed point with 1.0 = 256, computed exactly as
//! 2.6.18 does, so decisions flip after the same number of samples. The sample weight runs
//! 0→32→60→84→105→123… and passes 80 (what the spec calls "valid") at the third sample; AS
//! itself asks only whether a process has any sample yet.

use elevator_core::{HZ, Sector};

/// 1.0 in the fixed point of the decaying averages and probabilities.
pub(super) const FIXED_ONE: u64 = 256;
/// Think times are capped just below this (HZ/50, 20 ms).
const MAX_THINK_TIME_JIFFIES: u64 = HZ / 50;
/// Seek samples are capped at 4 × mean plus this while a process has at most two samples …
const SEEK_SLACK_YOUNG_SECTORS: u64 = 2 * 1024 * 1024;
/// … and plus this afterwards, so that one odd far request does not swamp the mean.
const SEEK_SLACK_SECTORS: u64 = 2 * 1024 * 64;
/// The fixed-point sample count up to which a history counts as young (two samples: 32, 60).
const YOUNG_SAMPLES: u64 = 60;

/// Per-process history (the kernel's `as_io_context`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ProcessStats {
    /// Not exited.
    pub(super) running: bool,
    /// Has queued a synchronous request.
    pub(super) io_started: bool,
    /// Has had a synchronous request complete.
    pub(super) io_running: bool,
    /// Requests in the scheduler.
    pub(super) queued_count: u32,
    /// Requests moved out and not yet taken by the device.
    pub(super) dispatched_count: u32,
    /// Requests that hold the history alive: queued, or moved and not yet complete.
    pub(super) references: u32,
    pub(super) last_end_request_jiffies: u64,
    /// End of its last synchronous request: where a sequential reader continues.
    pub(super) last_request_end: Sector,
    pub(super) ttime_samples: u64,
    pub(super) ttime_total: u64,
    pub(super) ttime_mean_jiffies: u64,
    pub(super) seek_samples: u64,
    pub(super) seek_total: u64,
    pub(super) seek_mean_sectors: u64,
}

/// What AS has learned about processes in general: how new ones behave and how often an
/// awaited one exits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct History {
    /// Fixed-point probability that an awaited process with no history exits or stalls.
    pub(super) exit_prob: u64,
    /// Fixed-point probability that no cooperating request follows an awaited exited process.
    pub(super) exit_no_coop: u64,
    pub(super) new_ttime_total: u64,
    pub(super) new_ttime_mean_jiffies: u64,
    pub(super) new_seek_total: u64,
    pub(super) new_seek_mean_sectors: u64,
}

impl ProcessStats {
    pub(super) fn new() -> ProcessStats {
        ProcessStats {
            running: true,
            io_started: false,
            io_running: false,
            queued_count: 0,
            dispatched_count: 0,
            references: 0,
            last_end_request_jiffies: 0,
            last_request_end: Sector(0),
            ttime_samples: 0,
            ttime_total: 0,
            ttime_mean_jiffies: 0,
            seek_samples: 0,
            seek_total: 0,
            seek_mean_sectors: 0,
        }
    }

    /// A synchronous request from this process arrives (the kernel's `as_update_iohist`): one
    /// think-time and one seek sample, except for its very first request. Think time counts
    /// only when nothing of its own was outstanding: the time since its last completion.
    pub(super) fn record_sync_request(
        &mut self,
        history: &mut History,
        now_jiffies: u64,
        start: Sector,
        end: Sector,
    ) {
        if self.io_started || self.io_running {
            let idle = self.queued_count == 0 && self.dispatched_count == 0;
            let think_jiffies = if self.io_running && idle {
                now_jiffies
                    .saturating_sub(self.last_end_request_jiffies)
                    .min(MAX_THINK_TIME_JIFFIES - 1)
            } else {
                0
            };
            self.record_think_time(history, think_jiffies);
            self.record_seek(history, start.distance(self.last_request_end));
        }
        self.last_request_end = end;
        self.io_started = true;
    }

    pub(super) fn record_think_time(&mut self, history: &mut History, think_jiffies: u64) {
        if self.ttime_samples == 0 {
            // A process's first sample feeds what new processes are expected to do; one that
            // came back at all makes "awaited processes exit" less likely.
            history.new_ttime_total = decay(history.new_ttime_total, FIXED_ONE * think_jiffies);
            history.new_ttime_mean_jiffies = history.new_ttime_total / FIXED_ONE;
            history.exit_prob = decay(history.exit_prob, 0);
        }
        self.ttime_samples = decay(self.ttime_samples, FIXED_ONE);
        self.ttime_total = decay(self.ttime_total, FIXED_ONE * think_jiffies);
        self.ttime_mean_jiffies = (self.ttime_total + FIXED_ONE / 2) / self.ttime_samples;
    }

    pub(super) fn record_seek(&mut self, history: &mut History, distance_sectors: u64) {
        if self.seek_samples == 0 {
            let sample = distance_sectors.saturating_mul(FIXED_ONE);
            history.new_seek_total = decay(history.new_seek_total, sample);
            history.new_seek_mean_sectors = history.new_seek_total / FIXED_ONE;
        }
        let slack = if self.seek_samples <= YOUNG_SAMPLES {
            SEEK_SLACK_YOUNG_SECTORS
        } else {
            SEEK_SLACK_SECTORS
        };
        let capped = distance_sectors.min(self.seek_mean_sectors.saturating_mul(4) + slack);
        self.seek_samples = decay(self.seek_samples, FIXED_ONE);
        self.seek_total = decay(self.seek_total, capped.saturating_mul(FIXED_ONE));
        self.seek_mean_sectors = (self.seek_total + self.seek_samples / 2) / self.seek_samples;
    }
}

/// One step of a decaying average in fixed point: seven eighths of the old value plus an
/// eighth of the new sample (already scaled by [`FIXED_ONE`]), rounded down.
pub(super) const fn decay(old: u64, sample: u64) -> u64 {
    old.saturating_mul(7).saturating_add(sample) / 8
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the decaying averages step by step: the fixed-point sample count runs
    // 0→32→60→84→105→123 and passes the "valid" mark (80) at the third sample; a steady 1 ms
    // think time gives means 5, 3, 2 (the +128 rounding dominates while samples are few); a
    // 20 ms think time is capped at 19 and gives 23 after one sample. A process's first
    // sample also feeds the new-process average and decays exit_prob.
    #[test]
    fn think_time_samples_decay_in_fixed_point() {
        let mut history = History { exit_prob: 128, ..History::default() };
        let mut stats = ProcessStats::new();
        let mut samples = Vec::new();
        let mut means = Vec::new();
        for _ in 0..5 {
            stats.record_think_time(&mut history, 1);
            samples.push(stats.ttime_samples);
            means.push(stats.ttime_mean_jiffies);
        }
        assert_eq!(samples, [32, 60, 84, 105, 123]);
        assert_eq!(samples.iter().position(|&count| count > 80), Some(2));
        assert_eq!(means[..3], [5, 3, 2]);
        assert_eq!(history.new_ttime_total, 32, "only the first sample counts as new");
        assert_eq!(history.exit_prob, 112);

        // Through the arrival path: the first request is no sample; think time is measured
        // from the last completion only when nothing of the process is outstanding.
        let mut stats = ProcessStats::new();
        stats.record_sync_request(&mut history, 0, Sector(0), Sector(8));
        assert_eq!(stats.ttime_samples, 0);
        stats.io_running = true;
        stats.last_end_request_jiffies = 5;
        stats.record_sync_request(&mut history, 25, Sector(8), Sector(16));
        assert_eq!((stats.ttime_total, stats.ttime_mean_jiffies), (608, 23));
        stats.queued_count = 1;
        stats.record_sync_request(&mut history, 90, Sector(16), Sector(24));
        assert_eq!(stats.ttime_total, 532, "outstanding I/O: a zero sample");
    }

    // Proves the seek average and its cap: the first sample of 10 000 000 sectors feeds the
    // new-process mean uncapped (1 250 000) but the process's own mean capped at 4·0 +
    // 2 097 152; the young cap holds for the second and third samples, the tight cap (4·mean +
    // 131 072) from the fourth.
    #[test]
    fn seek_samples_are_capped() {
        let mut history = History::default();
        let mut stats = ProcessStats::new();
        stats.record_seek(&mut history, 10_000_000);
        assert_eq!(history.new_seek_mean_sectors, 1_250_000);
        assert_eq!(stats.seek_mean_sectors, 2_097_152);
        stats.record_seek(&mut history, 0);
        stats.record_seek(&mut history, 0);
        assert_eq!(stats.seek_samples, 84);
        let mean = stats.seek_mean_sectors;
        let total = stats.seek_total;
        stats.record_seek(&mut history, u64::MAX);
        let capped = 4 * mean + 131_072;
        assert_eq!(stats.seek_total, (7 * total + 256 * capped) / 8);
        assert_eq!(history.new_seek_mean_sectors, 1_250_000, "not a new process any more");
    }
}
