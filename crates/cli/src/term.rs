//! What the person at the terminal sees besides the requested output: one-line notes and
//! progress, all on stderr so that stdout carries only the report. indicatif hides the
//! progress when stderr is not a terminal.

use elevator_live::run::Progress;
use indicatif::{ProgressBar, ProgressStyle};

/// Live progress appears only for runs longer than this; short runs would just flicker.
const LIVE_PROGRESS_AFTER_SECS: f64 = 3.0;

/// SIGINT, SIGTERM and SIGHUP ask a run to stop: the first sets `stop` (the run stops issuing,
/// lets in-flight I/O finish, restores what it changed, reports what it did); a second of the
/// same signal ends the process at once, with 128 + the signal.
#[derive(Debug)]
pub(crate) struct StopSignals {
    /// Set by the first signal.
    pub(crate) stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The last signal received (0: none).
    signal: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl StopSignals {
    pub(crate) fn install() -> anyhow::Result<StopSignals> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let signal = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for number in [SIGINT, SIGTERM, SIGHUP] {
            // In this order: the shutdown sees `stop` still false on the first signal.
            signal_hook::flag::register_conditional_shutdown(number, 128 + number, stop.clone())?;
            signal_hook::flag::register(number, stop.clone())?;
            signal_hook::flag::register_usize(number, signal.clone(), number as usize)?;
        }
        Ok(StopSignals { stop, signal })
    }

    /// Only remembers which of SIGINT, SIGTERM and SIGHUP arrived, beside a handler of the
    /// caller's own (kernel compare's, which restores the device on a second signal);
    /// `stop` is never set.
    pub(crate) fn record_only() -> anyhow::Result<StopSignals> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let signal = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for number in [SIGINT, SIGTERM, SIGHUP] {
            // signal-hook chains to the handler installed before it.
            signal_hook::flag::register_usize(number, signal.clone(), number as usize)?;
        }
        Ok(StopSignals { stop, signal })
    }

    /// The signal that stopped the run, if one did.
    pub(crate) fn received(&self) -> Option<i32> {
        match self.signal.load(std::sync::atomic::Ordering::SeqCst) {
            0 => None,
            number => i32::try_from(number).ok(),
        }
    }

    /// Why a run that a signal stopped is partial: `interrupted by SIGTERM`.
    pub(crate) fn reason(&self) -> Option<String> {
        let name = match self.received()? {
            signal_hook::consts::SIGINT => "SIGINT".to_owned(),
            signal_hook::consts::SIGTERM => "SIGTERM".to_owned(),
            signal_hook::consts::SIGHUP => "SIGHUP".to_owned(),
            other => format!("signal {other}"),
        };
        Some(format!("interrupted by {name}: issuing stopped, I/O in flight completed"))
    }
}

/// Says something to the person at the terminal, on stderr.
pub(crate) fn note(text: &str) {
    #[allow(clippy::print_stderr)]
    {
        eprintln!("elevator: {text}");
    }
}

/// The spinner line of a live run (ours or the kernel's): what runs, for how long, how much it
/// moved. Sizes are in MB (10^6 bytes), as in every table.
#[derive(Debug)]
pub(crate) struct LiveProgress {
    bar: ProgressBar,
}

impl LiveProgress {
    pub(crate) fn new() -> LiveProgress {
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("a valid template"));
        LiveProgress { bar }
    }

    /// Shows where the run `label` is, once it has run long enough to be worth showing.
    pub(crate) fn show(&self, label: &str, now: &Progress) {
        let seconds = now.elapsed.as_secs_f64();
        if seconds < LIVE_PROGRESS_AFTER_SECS {
            return;
        }
        self.bar.set_message(format!(
            "{label} {}: {seconds:.1} s, {:.1} MB, {:.0} IOPS",
            now.phase,
            now.bytes as f64 / 1e6,
            now.ios as f64 / seconds
        ));
        self.bar.tick();
    }

    /// Removes the line, before the report is printed.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A bar counting finished simulations out of `total`.
pub(crate) fn simulation_counter(total: usize) -> ProgressBar {
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} {msg}")
            .expect("a valid template"),
    );
    bar
}
