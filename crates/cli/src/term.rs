//! What the person at the terminal sees besides the requested output: one-line notes and
//! progress, all on stderr so that stdout carries only the report. indicatif hides the
//! progress when stderr is not a terminal.

use elevator_live::run::Progress;
use indicatif::{ProgressBar, ProgressStyle};

/// Progress appears only for runs longer than this; short runs would just flicker.
const PROGRESS_AFTER_SECS: f64 = 2.0;

/// `--quiet`: no progress at all.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns progress display off (`--quiet`) or on, for the whole process.
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
}

/// A bar that draws on stderr, or a hidden one under `--quiet` (indicatif hides it anyway
/// when stderr is not a terminal).
fn visible(bar: ProgressBar) -> ProgressBar {
    if QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar
}

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
        let bar = visible(ProgressBar::new_spinner());
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("a valid template"));
        LiveProgress { bar }
    }

    /// Shows where the run `label` is, once it has run long enough to be worth showing.
    pub(crate) fn show(&self, label: &str, now: &Progress) {
        let seconds = now.elapsed.as_secs_f64();
        if seconds < PROGRESS_AFTER_SECS {
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

/// The line of simulations running side by side (`elevator sim`): for each, its label, its
/// phase and the simulated time it reached, shown once the runs took long enough.
pub(crate) fn watch_simulations(
    runs: &[(String, std::sync::Arc<elevator_sim::SimProgress>)],
    finished: impl Fn() -> bool,
) {
    // The CLI reads the real clock: when to start showing progress is about the person waiting.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let bar = visible(ProgressBar::new_spinner());
    bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("a valid template"));
    while !finished() {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if started.elapsed().as_secs_f64() < PROGRESS_AFTER_SECS {
            continue;
        }
        let parts: Vec<String> = runs
            .iter()
            .map(|(label, progress)| {
                let (phase, phases) = progress.phase();
                let at = progress.simulated().as_secs_f64();
                format!("{label}: phase {phase}/{phases}, {at:.2} s simulated")
            })
            .collect();
        bar.set_message(format!("simulating: {}", parts.join("; ")));
        bar.tick();
    }
    bar.finish_and_clear();
}

/// A bar counting finished simulations out of `total`.
pub(crate) fn simulation_counter(total: usize) -> ProgressBar {
    let bar = visible(ProgressBar::new(total as u64));
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} {msg}")
            .expect("a valid template"),
    );
    bar
}
