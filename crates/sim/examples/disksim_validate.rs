//! Replays one of DiskSim 4.0's drive validation traces against a device spec and prints how
//! the simulated response times compare with the real drive's (docs/validation.md).
//!
//! ```text
//! cargo run --release -p elevator-sim --example disksim_validate -- \
//!     cheetah9lp /path/to/disksim/valid/cheetah9LP.trace
//! ```
//!
//! The traces are in DiskSim's `valid/` directory (https://github.com/benh/disksim); they are
//! not part of this repository. The device is any `-d` spec (`cheetah9lp`,
//! `disksim:PATH.parv`, `hdd:...`). Exit code 2 on a bad spec or trace.

// A command-line tool: printing its result is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use elevator_sim::DeviceSpec;
use elevator_sim::device::validate::{Fit, parse_trace, replay};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [device, trace] = args.as_slice() else {
        eprintln!("usage: disksim_validate DEVICE_SPEC VALIDATION_TRACE");
        return ExitCode::from(2);
    };
    let spec = match DeviceSpec::parse(device) {
        Ok(spec) => spec,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(trace) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: {trace}: {error}");
            return ExitCode::from(2);
        }
    };
    let requests = match parse_trace(trace, &text) {
        Ok(requests) if !requests.is_empty() => requests,
        Ok(_) => {
            eprintln!("error: {trace}: no requests");
            return ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let mut model = match spec.build() {
        Ok(model) => model,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let simulated = match replay(model.as_mut(), &requests) {
        Ok(simulated) => simulated,
        Err(problem) => {
            eprintln!("error: {trace}: {problem}");
            return ExitCode::from(2);
        }
    };
    let measured: Vec<u64> = requests.iter().map(|request| request.measured_ns).collect();
    println!("{}: {}", spec, Fit::new(&measured, &simulated));
    for (name, is_read) in [("reads", true), ("writes", false)] {
        let (m, s): (Vec<u64>, Vec<u64>) = requests
            .iter()
            .zip(&simulated)
            .filter(|(request, _)| (request.op == elevator_core::Op::Read) == is_read)
            .map(|(request, &sim)| (request.measured_ns, sim))
            .unzip();
        if !m.is_empty() {
            println!("  {name}: {}", Fit::new(&m, &s));
        }
    }
    ExitCode::SUCCESS
}
