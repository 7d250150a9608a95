//! Device-model conformance: the properties every registered device model keeps, checked for
//! every preset of every kind in `DeviceKind::ALL` (a new kind or preset joins by being
//! registered), driving each model through the `DeviceModel` trait alone — `submit`,
//! `next_event`, `advance` — with no runner or block queue in between.
//!
//! * every command completes exactly once, and never before it was submitted plus the least
//!   time its kind's stated parameters allow ([`min_service`] says how, per kind);
//! * the same commands at the same times give the same completion times and statistics;
//! * large sequential reads run at the model's stated bandwidth within the tolerance its
//!   module header documents ([`stated_bandwidth`]);
//! * a model never has more commands inside than its `queue_depth()`: the driver keeps to it,
//!   as the trait asks of the engine, and a submission beyond it is asserted by the model.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use elevator_core::{Duration, Instant, Op, Prng, SECTOR_SIZE_BYTES, Sector};
use elevator_sim::device::hdd::Hdd;
use elevator_sim::device::table::Table;
use elevator_sim::device::{Command, CommandId, DeviceKind, DeviceModel, DeviceSpec};

/// Every registered model: each preset of each kind, parsed by name.
fn every_model() -> Vec<DeviceSpec> {
    let specs: Vec<DeviceSpec> = DeviceKind::ALL
        .iter()
        .flat_map(|kind| kind.presets())
        .map(|preset| DeviceSpec::parse(preset.name).expect("a preset parses"))
        .collect();
    assert!(specs.len() > DeviceKind::ALL.len(), "the registry lists presets");
    specs
}

/// The least time `command` can take on `spec`'s model, from its stated parameters. Transfers
/// are rounded down, so the bound never exceeds a model's own rounding up.
///
/// * `ram`: `latency`, plus the transfer at `bandwidth` for reads and writes.
/// * `hdd`: the least of the command kind's four overheads (DiskSim's hit/miss after a
///   read/write; `overhead_read` or `overhead_write` where unset; flushes and discards pay
///   `overhead_write`), plus the transfer at the interface's rate (`bus_rate`, or one sector per
///   `bulk_sector_time` when slower) for reads and writes (a cache hit still crosses the bus; a
///   write-back write finishes once it has).
/// * `ssd`: `command_time`; a read adds `read_time` and the bytes at `host_rate` (the link
///   carries all of them after the first sense); a write adds the bytes at `host_rate` and,
///   unless the write cache takes it, `program_time` (the lesser of it and
///   `slc_program_time` on a drive with an SLC cache).
/// * `array`, `san`: the controller's `overhead` (a write-back write or a cached read need
///   nothing more).
/// * `jbod`: one of its disks, the `disk` spec (built as one device: the first of a
///   `+`-joined list); `iscsi`: its `member` (one of the target's disks).
/// * `zoned`: its `media`'s for reads and flushes; 0 for writes and discards (one that breaks a
///   zone rule, or a zone reset, finishes at once).
fn min_service(spec: &DeviceSpec, command: &Command) -> Duration {
    let params = spec.params();
    let data = matches!(command.op, Op::Read | Op::Write);
    let transfer = |bytes_per_s: u64| {
        let bytes = if data { u128::from(command.size_bytes()) } else { 0 };
        Duration::from_nanos((bytes * 1_000_000_000 / u128::from(bytes_per_s)) as u64)
    };
    match spec.kind() {
        DeviceKind::Ram => params.time("latency") + transfer(params.size("bandwidth")),
        DeviceKind::Hdd => {
            // The least of the overheads that can apply: a read's or a write's four (hit or
            // miss, after a read or a write), each `overhead_read` / `overhead_write` unless
            // set; flushes and discards pay `overhead_write`.
            let kind = match command.op {
                Op::Read => Some(("read", "overhead_read")),
                Op::Write => Some(("write", "overhead_write")),
                Op::Flush | Op::Discard => None,
            };
            let overhead = match kind {
                None => params.time("overhead_write"),
                Some((kind, fallback)) => {
                    ["hit_after_read", "hit_after_write", "miss_after_read", "miss_after_write"]
                        .iter()
                        .map(|case| {
                            let key = format!("overhead_{kind}_{case}");
                            params.time(if params.has(&key) { &key } else { fallback })
                        })
                        .min()
                        .expect("four overheads")
                }
            };
            let sectors = if data { u64::from(command.sector_count) } else { 0 };
            let bulk = Duration::from_nanos(sectors * params.time("bulk_sector_time").as_nanos());
            overhead + transfer((params.float("bus_rate") * 1e6).round() as u64).max(bulk)
        }
        DeviceKind::Ssd => {
            let host = transfer(params.size("host_rate"));
            let cached = params.flag("write_cache") && !command.fua;
            // A write into the SLC cache programs in `slc_program_time`.
            let program = if params.size("slc_cache") > 0 {
                params.time("program_time").min(params.time("slc_program_time"))
            } else {
                params.time("program_time")
            };
            params.time("command_time")
                + match command.op {
                    Op::Read => params.time("read_time") + host,
                    Op::Write if cached => host,
                    Op::Write => host + program,
                    Op::Flush | Op::Discard => Duration::ZERO,
                }
        }
        DeviceKind::Array | DeviceKind::San => params.time("overhead"),
        DeviceKind::Jbod => min_service(&member_spec(first_disk(params.text("disk"))), command),
        // Built as one device, an iSCSI target's disk is its member.
        DeviceKind::Iscsi => min_service(&member_spec(params.text("member")), command),
        // A write or discard may break a zone rule (or be a reset) and finish at once.
        DeviceKind::Zoned if matches!(command.op, Op::Write | Op::Discard) => Duration::ZERO,
        DeviceKind::Zoned => min_service(&member_spec(params.text("media")), command),
        // A table's QD1 latency of the faster pattern for the size (a ceiling only adds).
        DeviceKind::Table => Table::from_params(params)
            .expect("a parsed spec builds")
            .min_service(command.op, if data { command.size_bytes() } else { 0 }),
    }
}

/// The first disk of a jbod's `disk` list (`A+B+...`), the one a jbod built as one device is.
fn first_disk(list: &str) -> &str {
    list.split('+').next().unwrap_or(list)
}

/// A member written `kind/key=value/key=value` as a spec `kind:key=value,key=value`.
fn member_spec(text: &str) -> DeviceSpec {
    let spec = text.replacen('/', ":", 1).replace('/', ",");
    DeviceSpec::parse(&spec).unwrap_or_else(|error| panic!("member `{text}`: {error}"))
}

/// The bandwidth of large sequential reads a model states, in bytes per second, and the
/// tolerance (a fraction) its header documents.
///
/// * `ram`: `bandwidth`, within 1 %.
/// * `ssd`: the least of the host link, the channels (`channels × channel_rate`) and the dies
///   (`channels × dies` each sensing `planes` pages in `read_time` and shifting them out),
///   within 5 %.
/// * `hdd`: [`Hdd::sustained_read_bytes_per_s`] (outer zone, skews, bus), within 5 %.
/// * `jbod`: its disk's; `iscsi`: its member's; `zoned`: its media's.
/// * `array`, `san` (one LUN; the link is outside the model): the member's bandwidth times the
///   members holding distinct data — RAID 0 all, RAID 1 one, RAID 10 half, RAID 5 all but
///   one — within 5 %.
fn stated_bandwidth(spec: &DeviceSpec) -> (f64, f64) {
    let params = spec.params();
    match spec.kind() {
        DeviceKind::Ram => (params.size("bandwidth") as f64, 0.01),
        DeviceKind::Ssd => {
            let channels = params.integer("channels") as f64;
            let dies = params.integer("dies") as f64;
            let planes = params.integer("planes") as f64;
            let page_bytes = params.size("page_size") as f64;
            let channel = params.size("channel_rate") as f64;
            let host = params.size("host_rate") as f64;
            let die_s = params.time("read_time").as_secs_f64() + planes * page_bytes / channel;
            let die_bound = channels * dies * planes * page_bytes / die_s;
            (host.min(channels * channel).min(die_bound), 0.05)
        }
        DeviceKind::Hdd => {
            let hdd = Hdd::from_params(params).expect("a parsed spec builds");
            (hdd.sustained_read_bytes_per_s(), 0.05)
        }
        DeviceKind::Jbod => stated_bandwidth(&member_spec(first_disk(params.text("disk")))),
        DeviceKind::Iscsi => stated_bandwidth(&member_spec(params.text("member"))),
        DeviceKind::Zoned => stated_bandwidth(&member_spec(params.text("media"))),
        // `table`: the read ceiling (the key or the best sequential rate), within 5 %.
        DeviceKind::Table => (
            Table::from_params(params).expect("a parsed spec builds").read_bandwidth_bytes_per_s(),
            0.05,
        ),
        DeviceKind::Array | DeviceKind::San => {
            let (member, _) = stated_bandwidth(&member_spec(params.text("member")));
            let members = params.integer("members") as f64;
            let distinct = match params.text("raid") {
                "0" => members,
                "1" => 1.0,
                "10" => members / 2.0,
                "5" => members - 1.0,
                other => panic!("{spec}: RAID level {other} has no stated bandwidth here"),
            };
            (distinct * member, 0.05)
        }
    }
}

/// A command's life at the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Timed {
    command: Command,
    submitted: Instant,
    finished: Instant,
}

/// The most events one run may take before the model counts as stuck.
const EVENT_LIMIT: u64 = 50_000_000;

/// Runs `arrivals` (in time order) against `model`, submitting each at its time or, if the
/// model is full, as soon as a command finishes. Checks on every step that the model keeps
/// the trait's contract and that each command finishes exactly once; returns every command
/// with its times, in submission order.
fn drive(model: &mut dyn DeviceModel, arrivals: &[(Instant, Command)]) -> Vec<Timed> {
    let depth = model.queue_depth() as usize;
    assert!(depth >= 1, "{}: queue depth 0", model.describe());
    let mut inside: BTreeMap<CommandId, Timed> = BTreeMap::new();
    let mut done: Vec<Timed> = Vec::with_capacity(arrivals.len());
    let mut pending = arrivals.iter().peekable();
    let mut finished = Vec::new();
    let mut now = Instant::ZERO;
    let mut events = 0u64;
    loop {
        while inside.len() < depth {
            let Some(&(at, command)) = pending.next_if(|(at, _)| *at <= now) else { break };
            assert!(at <= now);
            model.submit(now, command);
            let timed = Timed { command, submitted: now, finished: Instant::MAX };
            assert!(inside.insert(command.id, timed).is_none(), "id {:?} reused", command.id);
        }
        let next_arrival = pending.peek().map(|(at, _)| *at).filter(|_| inside.len() < depth);
        let next_event = model.next_event();
        if let Some(at) = next_event {
            assert!(at >= now, "{}: next event {at} before now {now}", model.describe());
        }
        let at = match (next_event, next_arrival) {
            (Some(event), Some(arrival)) => event.min(arrival),
            (Some(event), None) => event,
            (None, Some(arrival)) => arrival,
            (None, None) => {
                assert!(
                    inside.is_empty(),
                    "{}: {} commands inside but no next event",
                    model.describe(),
                    inside.len()
                );
                // With nothing inside, a pending arrival would have been the next step.
                break;
            }
        };
        now = at;
        finished.clear();
        model.advance(now, &mut finished);
        for id in finished.drain(..) {
            let mut timed = inside.remove(&id).unwrap_or_else(|| {
                panic!("{}: finished {id:?}, which is unknown or done", model.describe())
            });
            timed.finished = now;
            done.push(timed);
        }
        events += 1;
        assert!(events < EVENT_LIMIT, "{}: more than {EVENT_LIMIT} events", model.describe());
    }
    assert_eq!(done.len(), arrivals.len(), "{}: every command finishes", model.describe());
    done.sort_by_key(|timed| timed.command.id);
    done
}

/// A mixed script: reads and writes of 1 to 256 sectors (runs of sequential ones and random
/// ones), some FUA, some flushes and discards, arriving with gaps of 0 to 2 ms.
fn mixed(capacity_sectors: u64, seed: u64, count: u64) -> Vec<(Instant, Command)> {
    let mut prng = Prng::new(seed);
    let mut at = Instant::ZERO;
    let mut next_start = 0;
    (0..count)
        .map(|index| {
            at += Duration::from_nanos(prng.below(2_000_000));
            let sector_count = 1 + prng.below(256) as u32;
            let start =
                if prng.below(2) == 0 { next_start } else { prng.below(capacity_sectors - 256) };
            let start = start.min(capacity_sectors - u64::from(sector_count));
            next_start = start + u64::from(sector_count);
            let (op, sector_count, fua) = match prng.below(20) {
                0 => (Op::Flush, 0, false),
                1 => (Op::Discard, sector_count, false),
                2..=10 => (Op::Write, sector_count, prng.below(8) == 0),
                _ => (Op::Read, sector_count, false),
            };
            let command =
                Command { id: CommandId(index), op, start: Sector(start), sector_count, fua };
            (at, command)
        })
        .collect()
}

// Proves every model completes each command of a mixed script exactly once, no earlier than
// its submission plus its kind's minimum service time, with next_event never in the past.
#[test]
fn every_command_completes_once_and_no_faster_than_the_parameters_allow() {
    for spec in every_model() {
        let mut model = spec.build().unwrap();
        let script = mixed(model.capacity_sectors(), 1, 300);
        for timed in drive(model.as_mut(), &script) {
            let least = min_service(&spec, &timed.command);
            assert!(
                timed.finished >= timed.submitted + least,
                "{spec}: {:?} took {} but needs at least {least}",
                timed.command,
                timed.finished - timed.submitted
            );
        }
        assert_eq!(model.next_event(), None, "{spec}: idle after the last completion");
    }
}

// Proves determinism: two fresh models given the same script finish every command at the
// same instant and report the same statistics.
#[test]
fn identical_inputs_give_identical_times() {
    for spec in every_model() {
        let (mut first, mut second) = (spec.build().unwrap(), spec.build().unwrap());
        let script = mixed(first.capacity_sectors(), 2, 200);
        assert_eq!(drive(first.as_mut(), &script), drive(second.as_mut(), &script), "{spec}");
        assert_eq!(first.stats(), second.stats(), "{spec}");
    }
}

// Proves each model's stated bandwidth: 1 MiB sequential reads, kept `min(depth, 8)` deep,
// run at the bandwidth its header states within its documented tolerance.
#[test]
fn large_sequential_reads_run_at_the_stated_bandwidth() {
    const SECTORS: u32 = 2048;
    for spec in every_model() {
        let (stated, tolerance) = stated_bandwidth(&spec);
        let mut model = spec.build().unwrap();
        // At least half a second's worth, so the first positioning does not count.
        let count = ((stated * 0.5) as u64 / (u64::from(SECTORS) * SECTOR_SIZE_BYTES)).max(64);
        let script: Vec<_> = (0..count)
            .map(|index| {
                let command = Command {
                    id: CommandId(index),
                    op: Op::Read,
                    start: Sector(index * u64::from(SECTORS)),
                    sector_count: SECTORS,
                    fua: false,
                };
                (Instant::ZERO, command)
            })
            .collect();
        let depth = model.queue_depth().min(8);
        let run = drive_closed(model.as_mut(), &script, depth);
        let bytes: u64 = run.iter().map(|timed| timed.command.size_bytes()).sum();
        let span = run.iter().map(|timed| timed.finished).max().unwrap() - Instant::ZERO;
        let measured = bytes as f64 / span.as_secs_f64();
        assert!(
            (measured / stated - 1.0).abs() <= tolerance,
            "{spec}: {:.2} MB/s measured vs {:.2} MB/s stated (± {} %)",
            measured / 1e6,
            stated / 1e6,
            tolerance * 100.0
        );
    }
}

/// [`drive`] with at most `depth` commands inside (a closed loop when every arrival is at 0).
fn drive_closed(
    model: &mut dyn DeviceModel,
    script: &[(Instant, Command)],
    depth: u32,
) -> Vec<Timed> {
    /// Shows the model a smaller depth, so that `drive` keeps to it.
    #[derive(Debug)]
    struct Shallow<'a> {
        model: &'a mut dyn DeviceModel,
        depth: u32,
    }
    impl DeviceModel for Shallow<'_> {
        fn describe(&self) -> String {
            self.model.describe()
        }
        fn capacity_sectors(&self) -> u64 {
            self.model.capacity_sectors()
        }
        fn queue_depth(&self) -> u32 {
            self.depth
        }
        fn rotational(&self) -> bool {
            self.model.rotational()
        }
        fn submit(&mut self, now: Instant, command: Command) {
            self.model.submit(now, command);
        }
        fn next_event(&self) -> Option<Instant> {
            self.model.next_event()
        }
        fn advance(&mut self, now: Instant, finished: &mut Vec<CommandId>) {
            self.model.advance(now, finished);
        }
        fn stats(&self) -> elevator_sim::device::DeviceStats {
            self.model.stats()
        }
    }
    drive(&mut Shallow { model, depth }, script)
}

// Proves the depth contract from the model's side: with `queue_depth()` commands inside, one
// more submission is refused by an assertion rather than silently queued.
#[test]
fn submitting_beyond_the_queue_depth_is_asserted() {
    for spec in every_model() {
        let mut model = spec.build().unwrap();
        let depth = u64::from(model.queue_depth());
        let read = |index: u64| Command {
            id: CommandId(index),
            op: Op::Read,
            start: Sector(index * 8),
            sector_count: 8,
            fua: false,
        };
        for index in 0..depth {
            model.submit(Instant::ZERO, read(index));
        }
        let beyond = catch_unwind(AssertUnwindSafe(|| model.submit(Instant::ZERO, read(depth))));
        let payload =
            beyond.expect_err(&format!("{spec}: took command {} at depth {depth}", depth + 1));
        // The refusal names the depth, so it is the depth check and not some other panic.
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|text| (*text).to_owned()))
            .unwrap_or_default();
        assert!(message.contains(&depth.to_string()), "{spec}: panicked with `{message}`");
    }
}
