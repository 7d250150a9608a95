//! Fault injection: a backend wrapper that fails chosen transfers with chosen errno values, or
//! delays them — for tests of what a run does when a device misbehaves, and for users who want
//! to see how a scheduler copes (`elevator run --inject fail:op=read,every=100,errno=EIO`).
//!
//! This machine's kernel offers neither device-mapper's `error`/`delay` targets nor fault
//! injection (`fail_make_request`), so faults are made here, between the reactor and the real
//! backend: a failed transfer never reaches the device and completes at the next wait with
//! `-errno`; a delayed one reaches the device `by` later. Everything above — the queue, the
//! scheduler, the report — sees exactly what a failing or slow device would show it.
//!
//! A fault is written as a component spec, `fail:KEY=VALUE,...` or `delay:KEY=VALUE,...`:
//!
//! | key | values | default | meaning |
//! |---|---|---|---|
//! | `op` | `read`, `write`, `flush`, `any` | `any` | which transfers it applies to |
//! | `every` | 1.. | 1 | the Nth, 2Nth, … matching transfer (1: every one) |
//! | `after` | 0.. | 0 | matching transfers let through before the first fault |
//! | `count` | 0.. | 0 | most faults to inject (0: no limit) |
//! | `offset`, `length` | bytes | whole target | only transfers overlapping this byte range |
//! | `errno` | `EIO`, `ENOSPC`, `EROFS`, `ENXIO`, `EAGAIN`, `ETIMEDOUT`, `EBADMSG`, or a number | `EIO` | (`fail`) the error |
//! | `by` | a time | 10ms | (`delay`) how much later the transfer reaches the device |

use std::collections::VecDeque;
use std::io;

use elevator_core::{ComponentSpec, Duration, Instant, KeyKind, KeySpec, ParamError, Params};

use super::{Backend, Done, Transfer, TransferOp, Waker};
use crate::clock::Clock;

/// The keys of a fault spec.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "op",
        kind: KeyKind::Choice(&["read", "write", "flush", "any"]),
        default: "any",
        help: "which transfers it applies to",
    },
    KeySpec {
        key: "every",
        kind: KeyKind::Integer { min: 1, max: i64::MAX },
        default: "1",
        help: "the Nth, 2Nth, ... matching transfer (1: every one)",
    },
    KeySpec {
        key: "after",
        kind: KeyKind::Integer { min: 0, max: i64::MAX },
        default: "0",
        help: "matching transfers let through before the first fault",
    },
    KeySpec {
        key: "count",
        kind: KeyKind::Integer { min: 0, max: i64::MAX },
        default: "0",
        help: "most faults to inject (0: no limit)",
    },
    KeySpec {
        key: "offset",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 62 },
        default: "0",
        help: "start of the byte range it applies to",
    },
    KeySpec {
        key: "length",
        kind: KeyKind::Size { min_bytes: 0, max_bytes: 1 << 62 },
        default: "0",
        help: "length of the byte range (0: to the end)",
    },
    KeySpec {
        key: "errno",
        kind: KeyKind::Text,
        default: "EIO",
        help: "(fail) the error: EIO, ENOSPC, EROFS, ENXIO, EAGAIN, ETIMEDOUT, EBADMSG or a number",
    },
    KeySpec {
        key: "by",
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_secs(60), bare_unit: "ms" },
        default: "10ms",
        help: "(delay) how much later the transfer reaches the device",
    },
];

/// The errno names a fault accepts.
const ERRNO_NAMES: &[(&str, i32)] = &[
    ("EIO", libc::EIO),
    ("ENOSPC", libc::ENOSPC),
    ("EROFS", libc::EROFS),
    ("ENXIO", libc::ENXIO),
    ("EAGAIN", libc::EAGAIN),
    ("ETIMEDOUT", libc::ETIMEDOUT),
    ("EBADMSG", libc::EBADMSG),
];

/// What a fault does to a transfer it picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// It never reaches the device and fails with this errno.
    Fail {
        /// The positive errno.
        errno: i32,
    },
    /// It reaches the device this much later.
    Delay {
        /// The delay.
        by: Duration,
    },
}

/// One fault, parsed and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    text: String,
    op: Option<TransferOpFilter>,
    every: u64,
    after: u64,
    count: u64,
    range: (u64, u64),
    action: FaultAction,
}

/// Which transfers a fault applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TransferOpFilter {
    Read,
    Write,
    Flush,
}

impl Fault {
    /// Parses `fail:...` or `delay:...`; an error names the bad part and what is accepted.
    pub fn parse(text: &str) -> Result<Fault, ParamError> {
        let spec = ComponentSpec::parse("fault", text)?;
        if !matches!(spec.name.as_str(), "fail" | "delay") {
            return Err(ParamError::UnknownName {
                kind: "fault",
                name: spec.name,
                accepted: vec!["fail", "delay"],
            });
        }
        let params = Params::resolve(&spec, KEYS, &[])?;
        let op = match params.text("op") {
            "read" => Some(TransferOpFilter::Read),
            "write" => Some(TransferOpFilter::Write),
            "flush" => Some(TransferOpFilter::Flush),
            _ => None,
        };
        let action = if spec.name == "fail" {
            let text = params.text("errno");
            let errno = ERRNO_NAMES
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(text))
                .map(|&(_, errno)| errno)
                .or_else(|| text.parse::<i32>().ok().filter(|errno| (1..4096).contains(errno)));
            let Some(errno) = errno else {
                let names: Vec<&str> = ERRNO_NAMES.iter().map(|(name, _)| *name).collect();
                return Err(ParamError::BadValue {
                    component: "fail".to_owned(),
                    key: "errno",
                    value: text.to_owned(),
                    expected: format!("{}, or a number 1..=4095", names.join(", ")),
                });
            };
            FaultAction::Fail { errno }
        } else {
            FaultAction::Delay { by: params.time("by") }
        };
        let offset = params.size("offset");
        let end = match params.size("length") {
            0 => u64::MAX,
            length => offset.saturating_add(length),
        };
        Ok(Fault {
            text: text.trim().to_owned(),
            op,
            every: params.integer("every") as u64,
            after: params.integer("after") as u64,
            count: params.integer("count") as u64,
            range: (offset, end),
            action,
        })
    }

    /// What it does.
    pub fn action(&self) -> FaultAction {
        self.action
    }

    fn applies_to(&self, op: TransferOp, start: u64, end: u64) -> bool {
        let op_matches = match self.op {
            None => true,
            Some(TransferOpFilter::Read) => op == TransferOp::Read,
            Some(TransferOpFilter::Write) => op == TransferOp::Write,
            Some(TransferOpFilter::Flush) => op == TransferOp::Flush,
        };
        // A flush carries no range: it matches any range.
        let range_matches = op == TransferOp::Flush || (start < self.range.1 && end > self.range.0);
        op_matches && range_matches
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A fault and how often it has matched and fired.
#[derive(Debug)]
struct Armed {
    fault: Fault,
    matched: u64,
    fired: u64,
}

impl Armed {
    /// Counts a matching transfer; whether the fault fires on it.
    fn fires(&mut self) -> bool {
        self.matched += 1;
        let exhausted = self.fault.count > 0 && self.fired >= self.fault.count;
        if exhausted || self.matched <= self.fault.after {
            return false;
        }
        let fire = (self.matched - self.fault.after) % self.fault.every == 0;
        self.fired += u64::from(fire);
        fire
    }
}

/// How many faults fired, for a run's report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InjectStats {
    /// Transfers failed.
    pub failed: u64,
    /// Transfers delayed.
    pub delayed: u64,
}

/// A backend with faults in front of it.
pub(crate) struct Inject {
    inner: Box<dyn Backend>,
    clock: Clock,
    faults: Vec<Armed>,
    /// Failed transfers, completed at the next wait.
    failed: Vec<Done>,
    /// Delayed transfers and when they go to the device, in that order.
    delayed: VecDeque<(Instant, Transfer)>,
    stats: InjectStats,
}

impl Inject {
    /// `inner` behind `faults` (the first fault that fires on a transfer decides).
    pub(crate) fn new(inner: Box<dyn Backend>, clock: Clock, faults: &[Fault]) -> Inject {
        let faults = faults
            .iter()
            .map(|fault| Armed { fault: fault.clone(), matched: 0, fired: 0 })
            .collect();
        Inject {
            inner,
            clock,
            faults,
            failed: Vec::new(),
            delayed: VecDeque::new(),
            stats: InjectStats::default(),
        }
    }

    /// Starts the delayed transfers whose time has come.
    fn release_due(&mut self) -> io::Result<()> {
        let now = self.clock.now();
        while let Some(&(at, transfer)) = self.delayed.front() {
            if at > now {
                break;
            }
            self.delayed.pop_front();
            self.inner.start(transfer)?;
        }
        Ok(())
    }
}

impl Backend for Inject {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn start(&mut self, transfer: Transfer) -> io::Result<()> {
        let (start, end) = (transfer.offset, transfer.offset.saturating_add(transfer.length_bytes));
        let action = self
            .faults
            .iter_mut()
            .filter(|armed| armed.fault.applies_to(transfer.op, start, end))
            .find_map(|armed| armed.fires().then_some(armed.fault.action));
        match action {
            None => self.inner.start(transfer),
            Some(FaultAction::Fail { errno }) => {
                self.stats.failed += 1;
                self.failed.push(Done { token: transfer.token, result: -errno });
                Ok(())
            }
            Some(FaultAction::Delay { by }) => {
                self.stats.delayed += 1;
                let at = self.clock.now() + by;
                // Equal delays keep their order; a shorter one may overtake a longer one, as
                // on a device that reorders.
                let index = self.delayed.partition_point(|&(due, _)| due <= at);
                self.delayed.insert(index, (at, transfer));
                Ok(())
            }
        }
    }

    fn wait(&mut self, timeout: Option<Duration>, done: &mut Vec<Done>) -> io::Result<()> {
        self.release_due()?;
        let timeout = if self.failed.is_empty() {
            match (timeout, self.delayed.front()) {
                (timeout, Some(&(at, _))) => {
                    let until = self.clock.until(at);
                    Some(timeout.map_or(until, |timeout| timeout.min(until)))
                }
                (timeout, None) => timeout,
            }
        } else {
            Some(Duration::ZERO)
        };
        self.inner.wait(timeout, done)?;
        done.append(&mut self.failed);
        self.release_due()
    }

    fn register_buffer(&mut self, ptr: *mut u8, len: usize) -> Option<u16> {
        self.inner.register_buffer(ptr, len)
    }

    fn waker(&self) -> Waker {
        self.inner.waker()
    }

    fn inject_stats(&self) -> InjectStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the spec: defaults, every/after/count, ranges, errno names and numbers, and
    // errors that name what is accepted.
    #[test]
    fn faults_parse_and_fire_as_written() {
        let fault = Fault::parse("fail:op=read,every=3,after=2,count=2,errno=ENOSPC").unwrap();
        assert_eq!(fault.action(), FaultAction::Fail { errno: libc::ENOSPC });
        let mut armed = Armed { fault, matched: 0, fired: 0 };
        let fired: Vec<bool> = (0..14).map(|_| armed.fires()).collect();
        // Two let through, then every third, twice.
        let expected = [false, false, false, false, true, false, false, true];
        assert_eq!(&fired[..8], expected);
        assert!(fired[8..].iter().all(|fired| !fired), "count=2 caps it");

        let delay = Fault::parse("delay:by=5ms,offset=4k,length=4k").unwrap();
        assert_eq!(delay.action(), FaultAction::Delay { by: Duration::from_millis(5) });
        assert!(delay.applies_to(TransferOp::Write, 0, 4097), "overlaps the range");
        assert!(!delay.applies_to(TransferOp::Write, 8192, 9000), "past the range");
        assert!(delay.applies_to(TransferOp::Flush, 0, 0), "a flush has no range");
        assert_eq!(Fault::parse("fail:errno=5").unwrap().action(), FaultAction::Fail { errno: 5 });

        let message = |text| Fault::parse(text).unwrap_err().to_string();
        assert!(
            message("fail:errno=EWHAT").contains("EIO, ENOSPC"),
            "{}",
            message("fail:errno=EWHAT")
        );
        assert!(message("break:op=read").contains("accepted: fail, delay"));
        assert!(message("fail:every=0").contains("every=0 is not valid"));
        assert!(message("fail:op=trim").contains("one of read, write, flush, any"));
    }
}
