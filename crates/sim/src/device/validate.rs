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
//! microseconds, and the time in microseconds from this request's arrival to the next one's.
//! DiskSim replays the arrivals open loop, one disk behind a FIFO driver queue, and compares
//! its simulated response times with the measured ones; so does [`replay`], and [`Fit`] gives
//! the comparison as Ruemmler & Wilkes's demerit figure (the root-mean-square horizontal
//! distance between the two response-time distributions, devices.md §1.1), which DiskSim's
//! `valid/runvalid` quotes per drive ("rms should be about ...").

use std::collections::VecDeque;
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
    /// From this request's arrival to the next one's, ns.
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
const EVENTS_PER_REQUEST: usize = 10_000;

/// Replays `trace` open loop against `device`: request `i + 1` arrives `next_arrival_ns` after
/// request `i`; requests wait in arrival order for room in the device (its
/// [`DeviceModel::queue_depth`]), as behind DiskSim's FCFS driver queue. Returns each request's
/// simulated response time (completion minus arrival) in ns, in trace order. A request that
/// runs past the end of the device is refused with its index.
pub fn replay(device: &mut dyn DeviceModel, trace: &[TraceRequest]) -> Result<Vec<u64>, String> {
    let capacity = device.capacity_sectors();
    let mut arrivals = Vec::with_capacity(trace.len());
    let mut at = 0u64;
    for (index, request) in trace.iter().enumerate() {
        if request.start.0 + u64::from(request.sector_count) > capacity {
            return Err(format!(
                "request {} ({} blocks at {}) runs past the device's {capacity} sectors",
                index + 1,
                request.sector_count,
                request.start.0
            ));
        }
        arrivals.push(at);
        at += request.next_arrival_ns;
    }
    let depth = device.queue_depth().max(1) as usize;
    let mut response_ns = vec![0u64; trace.len()];
    let mut waiting: VecDeque<usize> = VecDeque::new();
    let mut inside = 0usize;
    let mut next = 0usize;
    let mut done = 0usize;
    let mut now = Instant::ZERO;
    let mut finished = Vec::new();
    let mut events = 0usize;
    while done < trace.len() {
        // Admit what has arrived, oldest first, while the device has room.
        while next < trace.len() && arrivals[next] <= now.as_nanos() {
            waiting.push_back(next);
            next += 1;
        }
        while inside < depth {
            let Some(index) = waiting.pop_front() else { break };
            let request = &trace[index];
            device.submit(
                now,
                Command {
                    id: CommandId(index as u64),
                    op: request.op,
                    start: request.start,
                    sector_count: request.sector_count,
                    fua: false,
                },
            );
            inside += 1;
        }
        let arrival = (next < trace.len()).then(|| Instant::from_nanos(arrivals[next]));
        let step = match (device.next_event(), arrival) {
            (Some(event), Some(arrival)) => event.min(arrival),
            (Some(event), None) => event,
            (None, Some(arrival)) => arrival,
            (None, None) => return Err(format!("the device holds {inside} requests but is idle")),
        };
        now = now.max(step);
        finished.clear();
        device.advance(now, &mut finished);
        for id in finished.drain(..) {
            let index = id.0 as usize;
            response_ns[index] = now.as_nanos() - arrivals[index];
            inside -= 1;
            done += 1;
        }
        events += 1;
        if events > EVENTS_PER_REQUEST.saturating_mul(trace.len().max(1)) {
            return Err("the device never finished the trace".to_owned());
        }
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

    // Proves the replay is open loop behind a FIFO queue: on a device that takes one command
    // at a time and serves each in a fixed time, requests arriving faster than that queue, and
    // their response times grow by the backlog exactly.
    #[test]
    fn replay_queues_arrivals_behind_a_busy_device() {
        // A RAM disk: 1 ms per command whatever its size (bandwidth high), depth 1.
        let spec = DeviceSpec::parse("ram:latency=1ms,bandwidth=100g,depth=1").unwrap();
        let mut device = spec.build().unwrap();
        let request = |next_arrival_ns| TraceRequest {
            op: Op::Read,
            start: Sector(0),
            sector_count: 1,
            measured_ns: 1_000_000,
            next_arrival_ns,
        };
        // Arrivals at 0, 0.5, 1.0 ms; service 1 ms each, one at a time.
        let trace = [request(500_000), request(500_000), request(0)];
        let response = replay(device.as_mut(), &trace).unwrap();
        let service = response[0];
        assert!(service >= 1_000_000, "{response:?}");
        // The second waits for the first: it finishes at 2 × service, arrived at 0.5 ms.
        assert_eq!(response[1], 2 * service - 500_000, "{response:?}");
        assert_eq!(response[2], 3 * service - 1_000_000, "{response:?}");
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
