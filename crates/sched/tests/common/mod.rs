//! Helpers shared by the integration tests that replay committed kernel captures
//! (`tests/data/*.sched`, see its README).

#![allow(dead_code)] // each test binary uses its own part

use std::path::PathBuf;

use elevator_sched::conform::{ConformOptions, ConformReport, replay};
use elevator_trace::sched_log::{self, SchedCapture};

/// Reads the committed capture `tests/data/NAME`, panicking with its path on an error.
pub(crate) fn capture_file(name: &str) -> SchedCapture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    sched_log::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Replays the committed capture `NAME` with the default options and prints its report.
pub(crate) fn replay_file(name: &str) -> ConformReport {
    let report = replay(&capture_file(name), ConformOptions::default())
        .unwrap_or_else(|error| panic!("{name}: {error}"));
    // The figures go in the test's output (`--nocapture`), as the issue asks.
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{name}:\n{report}");
    }
    report
}
