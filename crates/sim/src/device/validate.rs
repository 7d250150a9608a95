//! Replaying DiskSim's drive validation traces against a device model.
//!
//! DiskSim 4.0 ships, beside each validated drive's parameters, the trace it was validated
//! with (`valid/STEM.trace`, format "validate", read by `iotrace_validate_get_ioreq_event` in
//! DiskSim's `src/disksim_iotrace.c`): one request per line,
//!
//! ```text
//! R Hit    1975456   4  15362.00000  56074.00000
//! ```
//!
//! the direction (`R`/`W`), the drive's buffer outcome as the logic analyser saw it (`Hit`,
//! `Miss`, `Doub`, `Trip`: ignored here, as DiskSim ignores it for timing), the first block
//! and the block count (512-byte blocks), the response time the real drive gave in
//! microseconds, and the host's think time in microseconds from this request's completion to
//! the next one's arrival (DiskSim reads the next line when a request completes). DiskSim
//! replays the trace so and compares its simulated response times with the measured ones; so
//! does [`replay`], and [`Fit`] gives
//! the comparison as Ruemmler & Wilkes's demerit figure (the root-mean-square horizontal
//! distance between the two response-time distributions, devices.md §1.1), which DiskSim's
//! `valid/runvalid` quotes per drive ("rms should be about ...").

use std::fmt;

use elevator_core::{Instant, Op, Sector};

use super::{Command, CommandId, DeviceModel};

/// One request of a validation trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceRequest {
    /// Read or write.
    pub op: Op,
    /// First 512-byte block.
    pub start: Sector,
    /// Blocks.
    pub sector_count: u32,
    /// The real drive's response time, ns.
    pub measured_ns: u64,
    /// From this request's completion to the next one's arrival (the host's think time), ns.
    pub next_arrival_ns: u64,
}

/// A line of a validation trace that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {problem}")]
pub struct TraceError {
    /// The trace's name as the user gave it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong and what is accepted.
    pub problem: String,
}

/// Reads a DiskSim "validate" trace; `file` names it in errors.
pub fn parse_trace(file: &str, text: &str) -> Result<Vec<TraceRequest>, TraceError> {
    let expected = "expected `R|W ACTION BLOCK COUNT RESPONSE_US NEXT_ARRIVAL_US`, e.g. \
                    `R Hit 1975456 4 15362.0 56074.0`";
    let mut requests = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let error =
            |problem: String| TraceError { file: file.to_owned(), line: index + 1, problem };
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        if fields.len() != 6 {
            return Err(error(format!("{} fields; {expected}", fields.len())));
        }
        let op = match fields[0] {
            "R" => Op::Read,
            "W" => Op::Write,
            other => return Err(error(format!("direction `{other}`: {expected}"))),
        };
        let start: u64 =
            fields[2].parse().map_err(|_| error(format!("block `{}`: {expected}", fields[2])))?;
        let sector_count: u32 = fields[3]
            .parse()
            .ok()
            .filter(|&count| count > 0)
            .ok_or_else(|| error(format!("count `{}` (1 or more): {expected}", fields[3])))?;
        let micros = |field: &str, what: &str| -> Result<u64, TraceError> {
            field
                .parse::<f64>()
                .ok()
                .filter(|value| value.is_finite() && *value >= 0.0 && *value < 1e12)
                .map(|value| (value * 1e3).round() as u64)
                .ok_or_else(|| error(format!("{what} `{field}` (microseconds >= 0): {expected}")))
        };
        requests.push(TraceRequest {
            op,
            start: Sector(start),
            sector_count,
            measured_ns: micros(fields[4], "response time")?,
            next_arrival_ns: micros(fields[5], "inter-arrival time")?,
        });
    }
    Ok(requests)
}

/// The most device events a replay may take per request before it is declared stuck.
const EVENTS_PER_REQUEST: usize = 100_000;

/// Replays `trace` against `device` as DiskSim's validate mode does (`src/disksim_iodriver.c`:
/// the driver reads the next trace line when a request's physical access is done): request
/// `i + 1` arrives `next_arrival_ns` after request `i` completes, so the drive holds one
/// request at a time and the trace's gaps are the host's think time. Returns each request's
/// simulated response time (completion minus arrival) in ns, in trace order, which DiskSim
/// compares with the measured one. A request that runs past the end of the device is refused
/// with its index.
pub fn replay(device: &mut dyn DeviceModel, trace: &[TraceRequest]) -> Result<Vec<u64>, String> {
    let capacity = device.capacity_sectors();
    let mut response_ns = Vec::with_capacity(trace.len());
    let mut now = Instant::ZERO;
    let mut finished = Vec::new();
    for (index, request) in trace.iter().enumerate() {
        if request.start.0 + u64::from(request.sector_count) > capacity {
            return Err(format!(
                "request {} ({} blocks at {}) runs past the device's {capacity} sectors",
                index + 1,
                request.sector_count,
                request.start.0
            ));
        }
        // Let the drive do what it does while the host thinks (destages, read-ahead).
        let arrival = now;
        while let Some(event) = device.next_event().filter(|&event| event <= arrival) {
            finished.clear();
            device.advance(event, &mut finished);
        }
        let id = CommandId(index as u64);
        device.submit(
            arrival,
            Command {
                id,
                op: request.op,
                start: request.start,
                sector_count: request.sector_count,
                fua: false,
            },
        );
        let mut events = 0usize;
        let completed = loop {
            let Some(event) = device.next_event() else {
                return Err(format!("request {} never completed: the device went idle", index + 1));
            };
            finished.clear();
            device.advance(event, &mut finished);
            if finished.contains(&id) {
                break event;
            }
            events += 1;
            if events > EVENTS_PER_REQUEST {
                return Err(format!("request {} never completed", index + 1));
            }
        };
        response_ns.push(completed.as_nanos() - arrival.as_nanos());
        now = Instant::from_nanos(completed.as_nanos() + request.next_arrival_ns);
    }
    Ok(response_ns)
}

/// How a simulated response-time distribution compares with a measured one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// Requests compared.
    pub requests: usize,
    /// Mean measured response time, ms.
    pub measured_mean_ms: f64,
    /// Mean simulated response time, ms.
    pub simulated_mean_ms: f64,
    /// Ruemmler & Wilkes's demerit figure: the root-mean-square horizontal distance between
    /// the two cumulative distributions, ms (the distance at each of the `requests` quantiles:
    /// both samples sorted and compared element by element).
    pub demerit_ms: f64,
}

impl Fit {
    /// Compares `simulated_ns` with `measured_ns` (equally long, not empty).
    pub fn new(measured_ns: &[u64], simulated_ns: &[u64]) -> Fit {
        assert!(
            !measured_ns.is_empty() && measured_ns.len() == simulated_ns.len(),
            "two equally long samples"
        );
        let mut measured = measured_ns.to_vec();
        let mut simulated = simulated_ns.to_vec();
        measured.sort_unstable();
        simulated.sort_unstable();
        let count = measured.len() as f64;
        let mean_ms =
            |sample: &[u64]| sample.iter().map(|&ns| ns as f64).sum::<f64>() / count / 1e6;
        let squares: f64 = measured
            .iter()
            .zip(&simulated)
            .map(|(&a, &b)| {
                let difference_ms = (a as f64 - b as f64) / 1e6;
                difference_ms * difference_ms
            })
            .sum();
        Fit {
            requests: measured.len(),
            measured_mean_ms: mean_ms(&measured),
            simulated_mean_ms: mean_ms(&simulated),
            demerit_ms: (squares / count).sqrt(),
        }
    }

    /// The demerit as a percentage of the measured mean, as DiskSim's manual quotes it.
    pub fn demerit_percent(&self) -> f64 {
        100.0 * self.demerit_ms / self.measured_mean_ms
    }
}

impl fmt::Display for Fit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} requests: mean measured {:.3} ms, simulated {:.3} ms ({:+.1} %); demerit {:.3} ms \
             ({:.1} % of the measured mean)",
            self.requests,
            self.measured_mean_ms,
            self.simulated_mean_ms,
            100.0 * (self.simulated_mean_ms / self.measured_mean_ms - 1.0),
            self.demerit_ms,
            self.demerit_percent()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DeviceSpec;

    // Proves a trace line's fields land where DiskSim reads them (µs -> ns) and bad lines are
    // refused with their line number.
    #[test]
    fn parses_lines_and_names_bad_ones() {
        let text = "R Hit    1975456   4  15362.00000  56074.00000\n\nW Miss 8 16 1.5 2\n";
        let requests = parse_trace("t", text).unwrap();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].op, Op::Read);
        assert_eq!(requests[0].start, Sector(1_975_456));
        assert_eq!(requests[0].sector_count, 4);
        assert_eq!(requests[0].measured_ns, 15_362_000);
        assert_eq!(requests[0].next_arrival_ns, 56_074_000);
        assert_eq!(requests[1].op, Op::Write);
        assert_eq!(requests[1].measured_ns, 1_500);
        for (bad, line) in [("X Hit 1 1 1 1", 1), ("R Hit 1 1 1", 1), ("\nR Hit 1 0 1 1", 2)] {
            let error = parse_trace("t", bad).unwrap_err();
            assert_eq!(error.line, line, "{bad:?}: {error}");
        }
    }

    // Proves the replay is DiskSim's validate mode: the next request arrives its think time
    // after the previous one completes, so requests never queue even when the think time is
    // shorter than the service time (an open-loop replay would make them wait), and every
    // response time is the bare service time.
    #[test]
    fn replay_issues_each_request_after_the_previous_completes() {
        // A RAM disk: 1 ms per command whatever its size, depth 4 (room to queue).
        let spec = DeviceSpec::parse("ram:latency=1ms,bandwidth=100g,depth=4").unwrap();
        let mut device = spec.build().unwrap();
        let request = |next_arrival_ns| TraceRequest {
            op: Op::Read,
            start: Sector(0),
            sector_count: 1,
            measured_ns: 1_000_000,
            next_arrival_ns,
        };
        let trace = [request(500_000), request(0), request(2_000_000), request(0)];
        let response = replay(device.as_mut(), &trace).unwrap();
        let service = response[0];
        assert!(service >= 1_000_000, "{response:?}");
        assert!(response.iter().all(|&each| each == service), "{response:?}");
    }

    // Proves the demerit is the RMS of the sorted samples' differences: a constant shift gives
    // exactly that shift, and the same values in another order give zero.
    #[test]
    fn demerit_is_the_horizontal_distance_between_distributions() {
        let measured = [1_000_000, 2_000_000, 3_000_000];
        let shifted = [1_500_000, 2_500_000, 3_500_000];
        let fit = Fit::new(&measured, &shifted);
        assert!((fit.demerit_ms - 0.5).abs() < 1e-12, "{fit}");
        assert!((fit.simulated_mean_ms - 2.5).abs() < 1e-12, "{fit}");
        let reordered = [3_000_000, 1_000_000, 2_000_000];
        assert_eq!(Fit::new(&measured, &reordered).demerit_ms, 0.0);
    }
}
