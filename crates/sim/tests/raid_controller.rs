//! The LSI MegaRAID-class controller's cache policies (`device/array.rs`,
//! workload-mechanisms.md §2.2): write-back only with a battery, read-ahead after every read or
//! only while reads are sequential, and clean read data giving way to writes. Each device runs
//! alone under a `Probe`, over RAM members whose times are exact, so a cache hit is told from a
//! member access by its latency alone.

use elevator_core::{Duration, Op, Sector};
use elevator_sim::device::{DeviceModel, DeviceSpec, Probe, Timed};

/// 64 KiB in sectors: the stripe unit of the controllers below.
const STRIP_SECTORS: u64 = 128;
/// The controller's processing per command: all a cache hit costs.
const OVERHEAD: Duration = Duration::from_micros(10);
/// Each member access costs at least this (the RAM member's latency).
const MEMBER_LATENCY: Duration = Duration::from_millis(1);

fn device(text: &str) -> Box<dyn DeviceModel> {
    DeviceSpec::parse(text).unwrap_or_else(|error| panic!("{text}: {error}")).build().unwrap()
}

/// One RAM member behind a controller with `keys`: 64 KiB stripes, 10 us per command.
fn controller(keys: &str) -> Probe {
    Probe::new(device(&format!(
        "array:raid=0,members=1,member=ram/latency=1ms/bandwidth=100m,stripe=64k,\
         overhead=10us,{keys}"
    )))
}

/// A 64 KiB read of strip `strip`.
fn strip_read(strip: u64) -> (Op, Sector, u32) {
    (Op::Read, Sector(strip * STRIP_SECTORS), STRIP_SECTORS as u32)
}

fn latency(timed: &Timed) -> Duration {
    timed.finished - timed.submitted
}

fn extra(probe: &Probe, name: &str) -> u64 {
    let stats = probe.device().stats();
    stats.extra.iter().find(|(key, _)| *key == name).map(|&(_, value)| value).unwrap()
}

/// Reads strips `history` one at a time, lets the controller finish its read-ahead, then reads
/// strip `then`: its latency.
fn read_after(probe: &mut Probe, history: &[u64], then: u64) -> Duration {
    probe.closed_loop(history.iter().map(|&strip| strip_read(strip)), 1);
    probe.settle();
    latency(&probe.closed_loop([strip_read(then)], 1)[0])
}

// Proves the adaptive policy: once the two most recent reads were sequential the controller
// reads the next strip into its cache, so that strip is served in the command overhead alone;
// after random reads nothing is read ahead and the same kind of read goes to the member.
#[test]
fn adaptive_read_ahead_follows_sequential_reads_only() {
    let mut sequential = controller("cache=8m,read_policy=adaptive");
    assert_eq!(read_after(&mut sequential, &[10, 11, 12], 13), OVERHEAD);
    assert!(extra(&sequential, "read_ahead_bytes") > 0);
    // Strip 12 came from the read-ahead that read 11 started (the host's read waited for it),
    // strip 13 from read 12's.
    assert_eq!(extra(&sequential, "cache_read_hits"), 2);

    let mut random = controller("cache=8m,read_policy=adaptive");
    assert!(read_after(&mut random, &[10, 500, 90], 91) >= MEMBER_LATENCY);
    assert_eq!(extra(&random, "read_ahead_bytes"), 0);
    assert_eq!(extra(&random, "cache_read_hits"), 0);

    // A single sequential pair is enough ("the two most recent accesses"), and one random read
    // after a sequential run turns read-ahead off again.
    let mut pair = controller("cache=8m,read_policy=adaptive");
    assert_eq!(read_after(&mut pair, &[40, 41], 42), OVERHEAD);
    let mut reverted = controller("cache=8m,read_policy=adaptive");
    assert!(read_after(&mut reverted, &[10, 11, 12, 700], 701) >= MEMBER_LATENCY);
}

// Proves the other read policies: `ahead` reads ahead after a random read too, `normal` (LSI's
// default) never does, and without a cache there is nowhere to read ahead into.
#[test]
fn read_ahead_always_and_never() {
    let mut always = controller("cache=8m,read_policy=ahead");
    assert_eq!(read_after(&mut always, &[500], 501), OVERHEAD);
    let mut normal = controller("cache=8m");
    assert!(read_after(&mut normal, &[10, 11, 12], 13) >= MEMBER_LATENCY);
    assert_eq!(extra(&normal, "read_ahead_bytes"), 0);
    let mut no_cache = controller("cache=0,read_policy=ahead");
    assert!(read_after(&mut no_cache, &[10, 11, 12], 13) >= MEMBER_LATENCY);
}

// Proves a sequential stream one read at a time gains from adaptive read-ahead: the next
// strip's member read overlaps the host's handling of the current one, so the stream beats the
// same stream under `normal` by most of a member latency per read.
#[test]
fn adaptive_read_ahead_speeds_a_sequential_stream() {
    let stream = |policy: &str| {
        let mut probe = controller(&format!("cache=8m,read_policy={policy}"));
        let run = probe.closed_loop((0..64).map(strip_read), 1);
        let last = run.iter().map(|timed| timed.finished).max().unwrap();
        (last - run[0].submitted, extra(&probe, "cache_read_hits"))
    };
    let (normal, normal_hits) = stream("normal");
    let (adaptive, adaptive_hits) = stream("adaptive");
    assert_eq!(normal_hits, 0);
    // Every read after the first two finds its strip in the cache or on its way there.
    assert_eq!(adaptive_hits, 62);
    assert!(adaptive < normal, "adaptive {adaptive:?} vs normal {normal:?}");
}

// Proves the write policy: write-back needs a battery — without one the firmware writes
// through (a write waits for the member) unless "write back with bad BBU" is chosen, and
// `write_policy=wt` writes through whatever the battery.
#[test]
fn write_back_only_with_a_battery() {
    let write = [(Op::Write, Sector(0), STRIP_SECTORS as u32)];
    for (keys, cached) in [
        ("cache=8m", true),
        ("cache=8m,bbu=absent", false),
        ("cache=8m,bbu=absent,write_policy=wb-bad-bbu", true),
        ("cache=8m,write_policy=wt", false),
        ("cache=0,write_policy=wb-bad-bbu", false),
    ] {
        let mut probe = controller(keys);
        let took = latency(&probe.closed_loop(write, 1)[0]);
        if cached {
            assert_eq!(took, OVERHEAD, "{keys}");
        } else {
            assert!(took >= MEMBER_LATENCY, "{keys}: {took:?}");
        }
    }
}

// Proves clean read-ahead data gives way to writes: a cache full of read-ahead still takes a
// burst of writes at controller speed (the clean data is evicted, not destaged or waited for),
// and a write to a read-ahead strip replaces the clean copy rather than being counted twice.
#[test]
fn clean_data_gives_way_to_writes() {
    // 256 KiB of cache: four strips.
    let mut probe = controller("cache=256k,read_policy=ahead");
    probe.closed_loop((0..8).map(|strip| strip_read(strip * 2)), 1);
    probe.settle();
    assert!(extra(&probe, "read_ahead_bytes") >= 4 * STRIP_SECTORS * 512);
    let burst =
        probe.closed_loop((0..4).map(|strip| (Op::Write, Sector(strip * STRIP_SECTORS), 128)), 1);
    assert!(burst.iter().all(|timed| latency(timed) == OVERHEAD), "{burst:?}");
}

// Proves the study's presets carry the controller's policies: write-back with a battery, no
// read-ahead, and the battery's absence turning them write-through.
#[test]
fn megaraid_presets_state_the_controller() {
    for name in ["megaraid-8", "megaraid-lun"] {
        let text = device(name).describe();
        assert!(text.contains("write-back") && text.contains("read normal"), "{name}: {text}");
        let text = device(&format!("{name}:bbu=absent")).describe();
        assert!(text.contains("write-through"), "{name}: {text}");
    }
    let error = DeviceSpec::parse("megaraid-8:read_policy=sometimes").unwrap_err().to_string();
    assert!(error.contains("read_policy") && error.contains("adaptive"), "{error}");
}
