//! What cfq knows about each process on the device (the kernel's `cfq_io_context`): its queues,
//! when its last sync request ended, where its last sync request ended, and the decaying means
//! of its think time and seek distance that decide whether idling for it pays.
//!
//! The means use the fixed point of legacy-schedulers.md §0.2 (1.0 = 256, integer division):
//! the sample weight runs 0, 32, 60, 84, 105, ... and counts as valid above 80, i.e. from the
//! third sample on.

use elevator_core::Sector;

use super::rr::QueueIndex;

/// A mean of this many samples (fixed point) or fewer is not trusted yet (`sample_valid`).
const VALID_SAMPLES: u64 = 80;

/// A process whose mean seek exceeds this many sectors (64 MiB) is seeky (`CIC_SEEKY`).
pub(super) const SEEKY_MEAN_SECTORS: u64 = 128 * 1024;

/// One process's context.
#[derive(Clone, Debug)]
pub(super) struct Process {
    /// False once the process has exited: cfq no longer idles for it. A process that issues
    /// I/O again after that gets a fresh context.
    pub(super) alive: bool,
    /// Its sync queue (reads, in 2.6.18). Outlives the context until its requests are done.
    pub(super) sync_queue: Option<QueueIndex>,
    /// The shared async queue its last write went to.
    pub(super) async_queue: Option<QueueIndex>,
    /// When its last sync request completed (set to the context's creation at first).
    pub(super) last_end_request_jiffies: u64,
    /// End of its last sync request: where its next one would continue.
    pub(super) last_request_pos: Sector,
    think_samples: u64,
    think_total: u64,
    think_mean_jiffies: u64,
    /// Its seek statistics (vanilla; from 194.el5 cfq keeps them per queue instead).
    pub(super) seek: SeekStats,
}

/// The decaying mean of a stream's seek distances (`seek_samples`, `seek_total`, `seek_mean`):
/// a process's in vanilla 2.6.18, a queue's from 2.6.18-194.el5 (C194, R4).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SeekStats {
    samples: u64,
    total: u64,
    mean_sectors: u64,
}

impl SeekStats {
    /// Feeds one seek of `distance` sectors, capped so that one odd request cannot swamp the
    /// mean (looser for the first samples).
    pub(super) fn update(&mut self, distance: u64) {
        let slack = if self.samples <= 60 { 2 * 1024 * 1024 } else { 2 * 1024 * 64 };
        let cap = self.mean_sectors.saturating_mul(4).saturating_add(slack);
        let distance = distance.min(cap);
        self.samples = (7 * self.samples + 256) / 8;
        // Saturating: only distances beyond 2^56 sectors could overflow the fixed point.
        self.total =
            (self.total.saturating_mul(7).saturating_add(distance.saturating_mul(256))) / 8;
        self.mean_sectors = (self.total + self.samples / 2) / self.samples;
    }

    /// Whether enough samples were taken to trust the mean (`sample_valid`).
    pub(super) fn is_valid(&self) -> bool {
        self.samples > VALID_SAMPLES
    }

    /// The mean seek distance in sectors.
    pub(super) fn mean_sectors(&self) -> u64 {
        self.mean_sectors
    }
}

impl Process {
    pub(super) fn new(now_jiffies: u64) -> Process {
        Process {
            alive: true,
            sync_queue: None,
            async_queue: None,
            last_end_request_jiffies: now_jiffies,
            last_request_pos: Sector(0),
            think_samples: 0,
            think_total: 0,
            think_mean_jiffies: 0,
            seek: SeekStats::default(),
        }
    }

    /// A process that issues I/O after it exited: a new context, keeping the queue the kernel
    /// would still find by its pid.
    pub(super) fn revive(&mut self, now_jiffies: u64) {
        let sync_queue = self.sync_queue;
        *self = Process::new(now_jiffies);
        self.sync_queue = sync_queue;
    }

    /// Feeds the think time of a sync request arriving now: the time since the process's last
    /// sync completion, capped at twice `slice_idle`. 2.6.18 takes the sample at every sync
    /// arrival, even with other requests of the process still outstanding.
    pub(super) fn update_think_time(&mut self, now_jiffies: u64, slice_idle_jiffies: u64) {
        let elapsed = now_jiffies.saturating_sub(self.last_end_request_jiffies);
        let think = elapsed.min(slice_idle_jiffies.saturating_mul(2));
        self.think_samples = (7 * self.think_samples + 256) / 8;
        self.think_total = (7 * self.think_total + 256 * think) / 8;
        self.think_mean_jiffies = (self.think_total + 128) / self.think_samples;
    }

    /// Feeds the seek distance of a sync request starting at `start`, measured from the end of
    /// the process's previous sync request (from sector 0 for its first one: vanilla).
    pub(super) fn update_seek(&mut self, start: Sector) {
        self.seek.update(start.distance(self.last_request_pos));
    }

    /// The idle-window decision at a sync arrival (`cfq_update_idle_window`), from the queue's
    /// current setting: off with `slice_idle` 0 or for a seeky stream on a queuing device
    /// (`seeky_on_hw_tag`: the caller's `hw_tag` and seek test, per process in vanilla, per
    /// queue from 194.el5); otherwise, once the think-time mean is valid, on exactly when it
    /// is within `slice_idle`.
    pub(super) fn idle_window(
        &self,
        current: bool,
        slice_idle_jiffies: u64,
        seeky_on_hw_tag: bool,
    ) -> bool {
        if slice_idle_jiffies == 0 || seeky_on_hw_tag {
            false
        } else if self.think_samples > VALID_SAMPLES {
            self.think_mean_jiffies <= slice_idle_jiffies
        } else {
            current
        }
    }

    /// Seeky with a valid seek mean (vanilla's per-process test): the idle wait for it shrinks
    /// to 2 ms.
    pub(super) fn is_seeky(&self) -> bool {
        self.seek.is_valid() && self.seek.mean_sectors() > SEEKY_MEAN_SECTORS
    }

    #[cfg(test)]
    pub(super) fn think_mean_jiffies(&self) -> u64 {
        self.think_mean_jiffies
    }

    #[cfg(test)]
    pub(super) fn seek_mean_sectors(&self) -> u64 {
        self.seek.mean_sectors()
    }
}
