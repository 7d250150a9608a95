//! The project's one real clock. Everything else takes time as an argument; the live engine
//! reads it here, as nanoseconds since the engine started, so that the same `BlockQueue`
//! and schedulers run on it as in the simulator.

use elevator_core::{Duration, Instant};

/// Monotonic time since a start, in the core's `Instant`.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: std::time::Instant,
}

impl Clock {
    /// A clock whose zero is now.
    #[allow(clippy::disallowed_methods)] // The one place a real clock is read.
    pub fn start() -> Clock {
        Clock { origin: std::time::Instant::now() }
    }

    /// Time since the start.
    pub fn now(&self) -> Instant {
        // u64 nanoseconds last 584 years.
        Instant::from_nanos(self.origin.elapsed().as_nanos() as u64)
    }

    /// The wall clock at this clock's zero, in ns since the Unix epoch: what fio's reports
    /// date a live run's jobs by (`job_start`, `timestamp`, `time`; fio-compat.md §4.2),
    /// while everything measured stays on the monotonic clock.
    #[allow(clippy::disallowed_methods)] // The one place a real clock is read.
    pub fn unix_ns_at_zero(&self) -> u64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64);
        now.saturating_sub(self.origin.elapsed().as_nanos() as u64)
    }

    /// How long from now until `at` (zero if it has passed).
    pub fn until(&self, at: Instant) -> Duration {
        at.saturating_since(self.now())
    }
}
