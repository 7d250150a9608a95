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

    /// How long from now until `at` (zero if it has passed).
    pub fn until(&self, at: Instant) -> Duration {
        at.saturating_since(self.now())
    }
}
