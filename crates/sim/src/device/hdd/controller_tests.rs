//! Tests of the controller, buffer and queue keys (DiskSim's disk controller) on a small disk
//! whose every time can be worked out by hand.
//!
//! The disk: 6000 rpm (a revolution is 10 ms), one zone of 200 cylinders × 1 surface × 100
//! sectors per track (a sector passes in 0.1 ms), so LBN `100·c + j` is sector `j` of cylinder
//! `c`, at physical sector `(j + 10·c) mod 100` (a 1 ms cylinder skew is 10 sectors; one
//! surface, so no track skew). Seek table 1:1/10:2/100:4/199:6 ms: a 55-cylinder seek is
//! 2 + (55 − 10)/(100 − 10)·2 = 3 ms. Write settle 0.5 ms. The host interface is 10⁵ MB/s
//! (5.12 ns a sector) but the bulk sector time is 0.2 ms, so every transfer costs 0.2 ms a
//! sector on the interface, twice the media's 0.1 ms. The eight overheads all differ, so a
//! wrong choice shows.

use elevator_core::{ComponentSpec, Sector};

use super::*;

const DISK: &[(&str, &str)] = &[
    ("rpm", "6000"),
    ("cylinders", "200"),
    ("surfaces", "1"),
    ("zone_count", "1"),
    ("spt_outer", "100"),
    ("spt_inner", "100"),
    ("track_skew", "0"),
    ("cylinder_skew", "1ms"),
    ("seek", "table"),
    ("seek_table", "1:1/10:2/100:4/199:6"),
    ("head_switch", "0.2ms"),
    ("write_settle", "0.5ms"),
    ("bus_rate", "100000"),
    ("bulk_sector_time", "0.2ms"),
    ("read_ahead", "0"),
    ("overhead_read_hit_after_read", "0.11ms"),
    ("overhead_read_hit_after_write", "0.12ms"),
    ("overhead_read_miss_after_read", "0.13ms"),
    ("overhead_read_miss_after_write", "0.14ms"),
    ("overhead_write_hit_after_read", "0.21ms"),
    ("overhead_write_hit_after_write", "0.22ms"),
    ("overhead_write_miss_after_read", "0.23ms"),
    ("overhead_write_miss_after_write", "0.24ms"),
    ("overhead_read_complete", "0.05ms"),
    ("overhead_write_complete", "0.07ms"),
];

/// The test disk with `extra` keys (`key=value,...`) over it.
fn params(extra: &str) -> Result<Params, String> {
    let text = if extra.is_empty() { "hdd".to_string() } else { format!("hdd:{extra}") };
    let spec = ComponentSpec::parse("device", &text).map_err(|error| format!("{error:?}"))?;
    Params::resolve(&spec, KEYS, DISK).map_err(|error| error.to_string())
}

fn disk(extra: &str) -> Hdd {
    Hdd::from_params(&params(extra).unwrap()).unwrap()
}

fn ms(value: f64) -> Instant {
    Instant::from_nanos((value * 1e6).round() as u64)
}

/// Submits one command at `at` and runs the device until it finishes; returns when.
fn run_one(device: &mut Hdd, at: Instant, op: Op, lbn: u64, sector_count: u32) -> Instant {
    let id = CommandId(lbn ^ at.as_nanos() ^ 0x5a5a);
    device.submit(at, Command { id, op, start: Sector(lbn), sector_count, fua: false });
    let mut finished = Vec::new();
    loop {
        let next = device.next_event().expect("a command inside has an event");
        device.advance(next, &mut finished);
        if finished.contains(&id) {
            return next;
        }
    }
}

fn extra(device: &Hdd, name: &str) -> u64 {
    device.stats().extra.iter().find(|(key, _)| *key == name).unwrap().1
}

// Proves a read miss after a read, decomposed: the drive starts as if after a read (DiskSim's
// initial `lastflags`), so the overhead is read-miss-after-read, 0.13 ms. Seek 0 → 55
// cylinders by table interpolation, 3 ms: on track at 3.13 ms, angle 0.313 revolution. LBN
// 5500 is sector 0 of cylinder 55, skewed to physical sector 55·10 mod 100 = 50, angle 0.5:
// the rotational wait is 1.87 ms and the media transfer runs 5.0 → 5.8 ms. The first sector
// is in the buffer at 5.1 ms; the interface then needs 8 × 0.2 ms = 1.6 ms, slower than the
// media, so the data is out at 6.7 ms (not at 5.8 + 0.2). The read completion overhead makes
// it 6.75 ms. Then a read hit after a read: the same 8 sectors at 10 ms are in the buffer:
// read-hit-after-read 0.11 ms + 1.6 ms on the interface + 0.05 ms = 11.76 ms.
#[test]
fn read_miss_and_hit_after_a_read_decompose_by_hand() {
    let mut device = disk("");
    assert_eq!(device.seek_time(55), Duration::from_millis(3));
    assert_eq!(run_one(&mut device, Instant::ZERO, Op::Read, 5500, 8), ms(6.75));
    assert_eq!(run_one(&mut device, ms(10.0), Op::Read, 5500, 8), ms(11.76));
    assert_eq!(extra(&device, "cache_hits"), 1);
}

// Proves a write without write-back and a read miss after a write, decomposed. With
// `write_cache=0` the write pays write-miss-after-read 0.23 ms; its data crosses the
// interface 0.23 → 1.83 ms; the seek of 55 cylinders (3 ms) plus the 0.5 ms write settle puts
// the head on track at 3.73 ms, angle 0.373; physical sector 50 comes at 5.0 ms and the
// write ends at 5.8 ms; + write completion 0.07 ms = 5.87 ms. A read of LBN 0 (8 sectors) at
// 20 ms then pays read-miss-after-write 0.14 ms; seek 55 back, 3 ms: on track at 23.14 ms,
// angle 0.314; sector 0 (physical 0) comes round at 30.0 ms, the first sector is in at 30.1
// ms, the interface ends at 30.1 + 1.6 = 31.7 ms, + 0.05 = 31.75 ms.
#[test]
fn write_through_and_read_miss_after_a_write_decompose_by_hand() {
    let mut device = disk("write_cache=0");
    assert_eq!(run_one(&mut device, Instant::ZERO, Op::Write, 5500, 8), ms(5.87));
    assert_eq!(run_one(&mut device, ms(20.0), Op::Read, 0, 8), ms(31.75));
    assert_eq!(extra(&device, "media_writes"), 1);
}

// Proves a write with write-back and a read hit after a write, decomposed. With
// `write_cache=1` the write is acknowledged from the buffer: write-hit-after-read 0.21 ms,
// then 8 × 0.2 ms on the interface = 1.81 ms, + 0.07 ms = 1.88 ms (the destage that follows
// is not waited for). A read of the same sectors at 1.88 ms hits the buffered write data:
// read-hit-after-write 0.12 ms + 1.6 ms + 0.05 ms = 3.65 ms. A second write at 10 ms is
// after a read: write-hit-after-read again, 10 + 0.21 + 1.6 + 0.07 = 11.88 ms; a third right
// after it pays write-hit-after-write, 0.22 ms: 11.88 + 0.22 + 1.6 + 0.07 = 13.77 ms.
#[test]
fn write_back_and_read_hit_after_a_write_decompose_by_hand() {
    let mut device = disk("write_cache=1");
    assert_eq!(run_one(&mut device, Instant::ZERO, Op::Write, 5500, 8), ms(1.88));
    assert_eq!(run_one(&mut device, ms(1.88), Op::Read, 5500, 8), ms(3.65));
    assert_eq!(run_one(&mut device, ms(10.0), Op::Write, 7000, 8), ms(11.88));
    assert_eq!(run_one(&mut device, ms(11.88), Op::Write, 7008, 8), ms(13.77));
    assert_eq!(extra(&device, "cached_writes"), 3);
}

// Proves the interface takes the larger of the bus's and the bulk sector time: 8 sectors at
// 1 MB/s are 8 × 512 µs = 4.096 ms, slower than 8 × 0.2 ms; at 10⁵ MB/s the bulk time rules,
// 1.6 ms; with no bulk time the bus alone, ⌈8·512·10⁹ / 10¹¹⌉ = 41 ns.
#[test]
fn the_interface_takes_the_slower_of_bus_and_bulk_sector_time() {
    assert_eq!(disk("bus_rate=1").bus_time(8), Duration::from_nanos(4_096_000));
    assert_eq!(disk("").bus_time(8), Duration::from_micros(1600));
    assert_eq!(disk("bulk_sector_time=0").bus_time(8), Duration::from_nanos(41));
}

/// Submits reads of 8 sectors at `starts` at one instant `at` and runs them; returns the
/// starts in the order they finish, and when the last did.
fn run_batch(device: &mut Hdd, at: Instant, starts: &[u64]) -> (Vec<u64>, Instant) {
    for &start in starts {
        let command = Command {
            id: CommandId(start),
            op: Op::Read,
            start: Sector(start),
            sector_count: 8,
            fua: false,
        };
        device.submit(at, command);
    }
    let mut finished = Vec::new();
    let mut last = at;
    while finished.len() < starts.len() {
        last = device.next_event().expect("commands are inside");
        device.advance(last, &mut finished);
    }
    (finished.into_iter().map(|id| id.0).collect(), last)
}

/// Runs one read at cylinder 55 alone (it sets the LBN policies' reference: start 5500, end
/// 5508, going up), then reads at `starts` together; returns the order they finish in.
fn service_order(policy: &str, starts: &[u64]) -> Vec<u64> {
    let mut device = disk(&format!("depth=8,queue_policy={policy}"));
    let first = run_one(&mut device, Instant::ZERO, Op::Read, 5500, 8);
    run_batch(&mut device, first + Duration::from_millis(1), starts).0
}

// Proves the queue policies serve a hand-made queue in DiskSim's orders. After a read at 5500
// (8 sectors), reads at 5000, 2000, 8000, 1000, 6000, 9500 arrive together. FCFS: as they
// came. C-LOOK (cycle-lbn) from 5500: up 6000, 8000, 9500, then from the lowest 1000, 2000,
// 5000. LOOK (elevator-lbn) from 5500 going up: 6000, 8000, 9500, then down 5000, 2000,
// 1000. SSTF by LBN from the end 5508: 6000 (492 away, against 508 down), from 6008 5000
// (1008 against 1992 up), from 5008 8000 (2992 against 3008), from 8008 9500 (1492 against
// 6008), then 2000 and 1000.
#[test]
fn queue_policies_serve_in_their_orders() {
    let starts = [5000, 2000, 8000, 1000, 6000, 9500];
    assert_eq!(service_order("fcfs", &starts), starts);
    assert_eq!(service_order("cycle-lbn", &starts), [6000, 8000, 9500, 1000, 2000, 5000]);
    assert_eq!(service_order("elevator-lbn", &starts), [6000, 8000, 9500, 5000, 2000, 1000]);
    assert_eq!(service_order("sstf-lbn", &starts), [6000, 5000, 8000, 9500, 2000, 1000]);
}

// Proves SSTF's exact ties alternate between up and down. From the end 5508 of a first read,
// reads at 5008 and 6008 are both 500 away: the first tie goes up (6008), then 5008. From its
// end 5016, reads at 4516 and 5516 are again 500 each way: this tie goes down (4516), then
// 5516. Always going up would serve 5516 first.
#[test]
fn sstf_ties_alternate_up_and_down() {
    let mut device = disk("depth=8,queue_policy=sstf-lbn");
    let first = run_one(&mut device, Instant::ZERO, Op::Read, 5500, 8);
    let (order, last) = run_batch(&mut device, first + Duration::from_millis(1), &[5008, 6008]);
    assert_eq!(order, [6008, 5008]);
    let (order, _) = run_batch(&mut device, last + Duration::from_millis(1), &[5516, 4516]);
    assert_eq!(order, [4516, 5516]);
}

// Proves `write_segments`: with 3 segments and the default (two may hold write data), two
// writes far apart are both acknowledged from the buffer at once; with `write_segments=1` the
// second waits for the first's destage before it is buffered.
#[test]
fn write_segments_limits_the_segments_holding_write_data() {
    for (limit, waits) in [("", 0), ("write_segments=1", 1)] {
        let keys = if limit.is_empty() { String::new() } else { format!(",{limit}") };
        let mut device = disk(&format!("depth=2,segments=3,segment_size=8k{keys}"));
        for (index, start) in [1000u64, 9000].into_iter().enumerate() {
            let command = Command {
                id: CommandId(index as u64),
                op: Op::Write,
                start: Sector(start),
                sector_count: 8,
                fua: false,
            };
            device.submit(Instant::ZERO, command);
        }
        let mut finished = Vec::new();
        while finished.len() < 2 {
            let next = device.next_event().expect("commands are inside");
            device.advance(next, &mut finished);
        }
        assert_eq!(extra(&device, "cache_full_waits"), waits, "{limit}");
    }
}

// Proves the new keys' impossible values are refused by name: more write segments than
// segments (or any in a one-segment buffer), an unknown queue policy, read-ahead limits
// beyond a segment, a separate write segment in a one-segment buffer, and a cacheless
// buffer with write-back or read-ahead.
#[test]
fn impossible_controller_keys_are_refused_by_name() {
    let refuse = |extra: &str, key: &str| {
        let error = match params(extra) {
            Err(error) => error,
            Ok(params) => Hdd::from_params(&params).unwrap_err().to_string(),
        };
        assert!(error.contains(key), "{extra}: {error}");
    };
    refuse("segments=4,write_segments=5", "write_segments");
    refuse("segments=1,write_segments=1", "write_segments");
    refuse("queue_policy=scan", "queue_policy");
    refuse("bulk_sector_time=-1", "bulk_sector_time");
    refuse("segment_size=4k,read_ahead_max=9", "read_ahead_max");
    refuse("segment_size=4k,read_ahead_min=9", "read_ahead_min");
    refuse("read_ahead_to=sector", "read_ahead_to");
    refuse("segments=1,write_segment_separate=1", "write_segment_separate");
    refuse("write_cache=1,buffer_cache=0", "buffer_cache");
    refuse("write_cache=0,read_ahead=1,buffer_cache=0", "buffer_cache");
}

/// Runs reads of `(lbn, sectors)` one at a time, each 50 ms after the previous one
/// finished (time enough for any read-ahead to end), on the test disk with `keys`; returns
/// how many the buffer served whole.
fn hits_of(keys: &str, reads: &[(u64, u32)]) -> u64 {
    let mut device = disk(keys);
    let mut at = Instant::ZERO;
    for &(lbn, sector_count) in reads {
        at = run_one(&mut device, at, Op::Read, lbn, sector_count) + Duration::from_millis(50);
    }
    extra(&device, "cache_hits")
}

// Proves `read_ahead_max`: after an 8-sector miss at 5500, read-ahead stops 16 sectors past
// the read with `read_ahead_max=16`, so 5508..5524 is a hit; with 8 it stops at 5516 and the
// same read is not.
#[test]
fn read_ahead_max_bounds_the_read_ahead() {
    let reads = [(5500, 8), (5508, 16)];
    assert_eq!(hits_of("read_ahead=1,read_ahead_max=16", &reads), 1);
    assert_eq!(hits_of("read_ahead=1,read_ahead_max=8", &reads), 0);
}

// Proves `read_ahead_to` track, cylinder and segment, on the disk with 2 surfaces (LBN
// 200·c + 100·s + j): an 8-sector miss at 5490 ends on surface 0 of cylinder 27 (5400..5600).
// Track: read-ahead stops at that track's end, 5500, so 5500 is a miss. Cylinder: it goes on
// to the cylinder's end, 5600: 5500 hits, 5600 misses. Segment: a segment's worth (1024
// sectors) on: both hit.
#[test]
fn read_ahead_to_stops_at_the_track_or_cylinder_end() {
    let hits = |mode: &str, lbn: u64| {
        let keys = format!("surfaces=2,read_ahead=1,read_ahead_to={mode}");
        hits_of(&keys, &[(5490, 8), (lbn, 8)])
    };
    assert_eq!(hits("track", 5500), 0);
    assert_eq!(hits("cylinder", 5500), 1);
    assert_eq!(hits("cylinder", 5600), 0);
    assert_eq!(hits("segment", 5500), 1);
    assert_eq!(hits("segment", 5600), 1);
}

// Proves `read_ahead_to=next-track` (one surface: a track is LBN 100·c..100·c + 100): a
// 10-sector miss at 5495 ends at 5505, on track 5500..5600; the segment started before that
// track (a stream), so read-ahead goes on to 5600 plus one track's 100 sectors, 5700: 5650
// hits. With `track`, read-ahead stops at 5600 and 5650 misses. A miss at 5510 (ends 5518,
// same track, segment starting on it) reads ahead only to 5600, so 5600 misses.
#[test]
fn read_ahead_to_next_track_stays_a_track_ahead_of_a_stream() {
    let next = "read_ahead=1,read_ahead_to=next-track";
    assert_eq!(hits_of(next, &[(5495, 10), (5650, 8)]), 1);
    assert_eq!(hits_of("read_ahead=1,read_ahead_to=track", &[(5495, 10), (5650, 8)]), 0);
    assert_eq!(hits_of(next, &[(5510, 8), (5592, 8)]), 1);
    assert_eq!(hits_of(next, &[(5510, 8), (5600, 8)]), 0);
}

// Proves `read_ahead_min`, decomposed. The 8-sector miss at 5500 ends its media transfer at
// 5.8 ms and completes at 6.75 ms (see the first test); read-ahead goes on from 5508 at 0.1
// ms a sector. A read of LBN 0 submitted at 6.75 ms is ready at 6.88 ms (read-miss-after-
// read 0.13 ms). Without a minimum it stops the read-ahead at once: seek 55 cylinders, 3 ms,
// on track at 9.88 ms (angle 0.988), sector 0 at 10.0 ms, interface 10.1 + 1.6 = 11.7 ms,
// + 0.05 ms = 11.75 ms. With `read_ahead_min=50` the read-ahead must first read 5508..5558,
// until 5.8 + 50 × 0.1 = 10.8 ms: on track at 13.8 ms (angle 0.38), sector 0 at 20.0 ms,
// done 20.1 + 1.6 + 0.05 = 21.75 ms.
#[test]
fn read_ahead_min_holds_the_head_for_the_minimum() {
    for (keys, expected) in [("read_ahead=1", 11.75), ("read_ahead=1,read_ahead_min=50", 21.75)] {
        let mut device = disk(keys);
        assert_eq!(run_one(&mut device, Instant::ZERO, Op::Read, 5500, 8), ms(6.75));
        assert_eq!(run_one(&mut device, ms(6.75), Op::Read, 0, 8), ms(expected), "{keys}");
    }
}

// Proves `read_ahead_on_idle_hit`: with read-ahead of 8 sectors, a miss at 5500 leaves
// 5500..5516 in the buffer; a hit on 5508..5516 restarts read-ahead to 5524 when the head is
// idle, so 5516 then hits too. With the flag off the hit does not restart it, and 5516 misses.
#[test]
fn read_ahead_on_idle_hit_restarts_read_ahead_after_a_hit() {
    let reads = [(5500, 8), (5508, 8), (5516, 8)];
    assert_eq!(hits_of("read_ahead=1,read_ahead_max=8", &reads), 2);
    assert_eq!(hits_of("read_ahead=1,read_ahead_max=8,read_ahead_on_idle_hit=0", &reads), 1);
}

// Proves `read_any_free`, by hand. A miss of 8 sectors at 5590 (sector 90 of cylinder 55,
// physical (90 + 50) mod 100 = 40, angle 0.4) reaches the track at 3.13 ms (0.13 ms overhead
// + 3 ms seek), angle 0.313: 0.87 ms of rotation, in which 8 whole sectors pass under the
// head, LBNs 5582..5590. With the flag the segment keeps them: a read at 5582 hits, one at
// 5581 does not; without it 5582 misses. A miss at 5510 (sector 10, physical 60: 2.87 ms of
// rotation, 28 sectors) keeps only the 10 of its track before it, from 5500.
#[test]
fn read_any_free_keeps_the_sectors_passing_before_a_miss() {
    assert_eq!(hits_of("read_any_free=1", &[(5590, 8), (5582, 8)]), 1);
    assert_eq!(hits_of("read_any_free=1", &[(5590, 8), (5581, 8)]), 0);
    assert_eq!(hits_of("read_any_free=0", &[(5590, 8), (5582, 8)]), 0);
    assert_eq!(hits_of("read_any_free=1", &[(5510, 8), (5500, 8)]), 1);
    assert_eq!(hits_of("read_any_free=1", &[(5510, 8), (5499, 8)]), 0);
}

// Proves `combine_writes`: with 3 segments (2 for writes) and the write cache on, writes at
// 1000 and 1008 (adjacent) and 3000 arrive together. Combined, the first two share a segment
// and all three are buffered at once; without combining each takes its own segment and the
// third waits for room.
#[test]
fn combine_writes_lets_sequential_writes_share_a_segment() {
    for (combine, waits) in [("1", 0), ("0", 1)] {
        let mut device = disk(&format!(
            "depth=3,segments=3,segment_size=8k,write_cache=1,combine_writes={combine}"
        ));
        for (index, start) in [1000u64, 1008, 3000].into_iter().enumerate() {
            let command = Command {
                id: CommandId(index as u64),
                op: Op::Write,
                start: Sector(start),
                sector_count: 8,
                fua: false,
            };
            device.submit(Instant::ZERO, command);
        }
        let mut finished = Vec::new();
        while finished.len() < 3 {
            let next = device.next_event().expect("commands are inside");
            device.advance(next, &mut finished);
        }
        assert_eq!(extra(&device, "cache_full_waits"), waits, "combine_writes={combine}");
    }
}

// Proves `write_segment_separate` with 2 segments: reads (5500, 7000, then 5500 again) have
// both segments without it, so the third read hits; with it segment 0 is for writes only,
// the second read takes the one read segment from the first, and the third misses. A read of
// sectors just written hits the buffered write data without it, and misses with it (reads do
// not use the write segment).
#[test]
fn write_segment_separate_keeps_one_segment_for_writes_only() {
    let reads = [(5500, 8), (7000, 8), (5500, 8)];
    assert_eq!(hits_of("segments=2", &reads), 1);
    assert_eq!(hits_of("segments=2,write_segment_separate=1", &reads), 0);
    for (keys, hits) in [("segments=2", 1), ("segments=2,write_segment_separate=1", 0)] {
        let mut device = disk(&format!("{keys},write_cache=1"));
        let written = run_one(&mut device, Instant::ZERO, Op::Write, 1000, 8);
        run_one(&mut device, written, Op::Read, 1000, 8);
        assert_eq!(extra(&device, "cached_writes"), 1, "{keys}");
        assert_eq!(extra(&device, "cache_hits"), hits, "{keys}");
    }
}

// Proves `write_hit_stop_read_ahead`: after a miss at 5500 (media done 5.8 ms, completion
// 6.75 ms) read-ahead runs on from 5508 at 0.1 ms a sector. A buffered write of 5504..5512
// submitted at 6.75 ms is classified at 6.96 ms (write-hit-after-read 0.21 ms), when the
// segment holds 5500..5519: it overlaps, and with the flag the
// read-ahead stops there, so a read of 5540 at 50 ms misses; without it read-ahead goes on a
// segment's worth and the read hits.
#[test]
fn write_hit_stop_read_ahead_stops_read_ahead_on_an_overlapping_write() {
    for (flag, hits) in [("0", 1), ("1", 0)] {
        let keys = format!("read_ahead=1,write_cache=1,write_hit_stop_read_ahead={flag}");
        let mut device = disk(&keys);
        let done = run_one(&mut device, Instant::ZERO, Op::Read, 5500, 8);
        let written = run_one(&mut device, done, Op::Write, 5504, 8);
        run_one(&mut device, written + Duration::from_millis(50), Op::Read, 5540, 8);
        assert_eq!(extra(&device, "cache_hits"), hits, "write_hit_stop_read_ahead={flag}");
    }
}

// Proves `read_hits_on_writes`: with the write cache on, a read of the 8 sectors just written
// hits the buffered write data, and so does one 50 ms later, when they are on the media; with
// the flag off both miss (write data serves no read, and leaves the buffer once destaged).
#[test]
fn read_hits_on_writes_decides_whether_write_data_serves_reads() {
    for (flag, hits) in [("1", 1), ("0", 0)] {
        for wait_ms in [0, 50] {
            let mut device = disk(&format!("write_cache=1,read_hits_on_writes={flag}"));
            let written = run_one(&mut device, Instant::ZERO, Op::Write, 1000, 8);
            run_one(&mut device, written + Duration::from_millis(wait_ms), Op::Read, 1000, 8);
            assert_eq!(extra(&device, "destages"), 1, "read_hits_on_writes={flag}");
            assert_eq!(extra(&device, "cache_hits"), hits, "{flag} after {wait_ms} ms");
        }
    }
}

// Proves `buffer_cache`: reading the same 8 sectors twice hits the second time with caching,
// and misses without it (the buffer only matches speeds).
#[test]
fn buffer_cache_off_serves_no_read_from_the_buffer() {
    let reads = [(5500, 8), (5500, 8)];
    assert_eq!(hits_of("write_cache=0,buffer_cache=1", &reads), 1);
    assert_eq!(hits_of("write_cache=0,buffer_cache=0", &reads), 0);
}

// Proves a buffer whose every segment may hold write data (the Cheetah 9LP's 3 of 3) keeps its
// books through a mix of random and sequential reads and writes with read-ahead and flushes,
// at depth 1 and 4: every command finishes, nothing stays dirty, and reads add up.
#[test]
fn every_segment_for_writes_finishes_a_mixed_load() {
    use crate::device::Probe;
    for depth in [1u32, 4] {
        let keys = format!(
            "depth={depth},segments=3,segment_size=287232,write_segments=3,write_cache=1,\
             read_ahead=1"
        );
        let mut probe = Probe::new(Box::new(disk(&keys)));
        let capacity = probe.device().capacity_sectors();
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            state >> 33
        };
        let script: Vec<(Op, Sector, u32)> = (0..2000u64)
            .map(|i| match next() % 8 {
                0..=2 => (Op::Read, Sector(next() % (capacity - 64)), 8),
                3 => (Op::Read, Sector(i * 32 % (capacity - 64)), 32),
                4 | 5 => (Op::Write, Sector(next() % (capacity - 64)), 16),
                6 => (Op::Write, Sector(i * 8 % (capacity - 64)), 8),
                _ => (Op::Flush, Sector(0), 0),
            })
            .collect();
        let run = probe.closed_loop(script, depth);
        assert_eq!(run.len(), 2000, "{keys}");
        probe.settle();
        assert_eq!(probe.device().next_event(), None, "{keys}");
        let stats = probe.device().stats();
        let extra = |name| stats.extra.iter().find(|(key, _)| *key == name).unwrap().1;
        let reads = run.iter().filter(|timed| timed.command.op == Op::Read).count() as u64;
        assert_eq!(extra("cache_hits") + extra("streamed_reads") + extra("read_misses"), reads);
    }
}

// Proves `read_ahead_over_requested` (16-sector segments, no `read_ahead_max`): after a miss
// of 5500..5508, read-ahead goes a segment past the read, to 5524, so 5516..5524 hits; with
// the flag it stops when the segment is full counting the read, at 5500 + 16 = 5516, and the
// same read misses. With `read_ahead_min=10` the 8 sectors left beside the read are below the
// minimum, so read-ahead goes the minimum past the read, to 5518: 5516..5518 hits, 5518..5520
// does not. A `read_ahead_max` overrides the flag.
#[test]
fn read_ahead_over_requested_keeps_the_request_in_the_segment() {
    let base = "read_ahead=1,segment_size=8k";
    let hits =
        |keys: &str, read: (u64, u32)| hits_of(&format!("{base},{keys}"), &[(5500, 8), read]);
    assert_eq!(hits("read_ahead_over_requested=0", (5516, 8)), 1);
    assert_eq!(hits("read_ahead_over_requested=1", (5516, 8)), 0);
    assert_eq!(hits("read_ahead_over_requested=1,read_ahead_min=10", (5516, 2)), 1);
    assert_eq!(hits("read_ahead_over_requested=1,read_ahead_min=10", (5518, 2)), 0);
    assert_eq!(hits("read_ahead_over_requested=1,read_ahead_max=16", (5516, 8)), 1);
}

// ---- write_back: DiskSim's fast writes (levels 2 and 1) against the idle-time destage ----
//
// Shared figures: LBN 5500 is sector 0 of cylinder 55, physical sector 50 (angle 0.5); 5508
// is physical 58, 5516 physical 66, 5524 physical 74; 5560 is physical 10 (angle 0.1). A
// write of 8 sectors after a read pays write-hit-after-read 0.21 ms and crosses the
// interface in 1.6 ms; its completion overhead is 0.07 ms. From cylinder 0 a write's seek
// to 55 is 3 ms plus the 0.5 ms settle.

/// Submits `commands` (`(op, lbn, sectors)`) at `at` in order and runs until all finish;
/// returns each one's finish time, in submission order.
fn run_together(device: &mut Hdd, at: Instant, commands: &[(Op, u64, u32)]) -> Vec<Instant> {
    for (index, &(op, lbn, sector_count)) in commands.iter().enumerate() {
        let id = CommandId(1000 + index as u64);
        device.submit(at, Command { id, op, start: Sector(lbn), sector_count, fua: false });
    }
    let mut done = vec![Instant::ZERO; commands.len()];
    let mut finished = Vec::new();
    while done.contains(&Instant::ZERO) {
        let next = device.next_event().expect("commands are inside");
        device.advance(next, &mut finished);
        for id in finished.drain(..) {
            done[(id.0 - 1000) as usize] = next;
        }
    }
    done
}

// Proves `write_back=immediate` (DiskSim level 2) at depth 1: the write of 5500 completes at
// 0.21 + 1.6 + 0.07 = 1.88 ms, but its media write starts at 0.21 ms (seek 3 ms + settle 0.5:
// on track at 3.71 ms, angle 0.371; physical 50 comes at 5.0 ms; written by 5.8 ms). The read
// of 5560 submitted at 1.88 ms pays read-miss-after-write 0.14 ms (ready at 2.02 ms) and waits
// for that media write: at 5.8 ms the head is on cylinder 55 already (no seek), angle 0.58,
// so physical 10 comes round at 11.0 ms; the first sector is in at 11.1 ms, 8 × 0.2 ms on the
// interface makes 12.7 ms, + 0.05 ms = 12.75 ms. With `idle` the same pair takes the same
// times: the head is idle when the write arrives, so its idle-time destage starts at once.
#[test]
fn immediate_write_completes_from_the_buffer_and_a_read_waits_for_its_media_write() {
    for mode in ["immediate", "idle"] {
        let mut device = disk(&format!("write_cache=1,write_back={mode}"));
        assert_eq!(run_one(&mut device, Instant::ZERO, Op::Write, 5500, 8), ms(1.88), "{mode}");
        assert_eq!(run_one(&mut device, ms(1.88), Op::Read, 5560, 8), ms(12.75), "{mode}");
        assert_eq!(extra(&device, "destages"), 1, "{mode}");
    }
}

// Proves `immediate` stops read-ahead for the write's media access where `idle` lets the
// next read go first. A read miss of LBN 0 at 0 (read-miss-after-read 0.13 ms; physical 0
// comes at 10.0 ms; first sector in at 10.1 ms; + 1.6 + 0.05 = 11.75 ms) leaves read-ahead
// running on cylinder 0. The write of 5500 submitted at 11.75 ms is ready at 11.96 ms and
// completes at 11.96 + 1.6 + 0.07 = 13.63 ms in both modes. The read of 5560 submitted then
// is ready at 13.77 ms (read-miss-after-write 0.14 ms).
// * `idle`: the write waits in the buffer (read-ahead goes before an idle-time destage); the
//   read stops the read-ahead and goes first: seek 55, 3 ms, on track at 16.77 ms (angle
//   0.677); physical 10 at 21.0 ms; 21.1 + 1.6 + 0.05 = 22.75 ms.
// * `immediate`: the write's media access stops the read-ahead at 11.96 ms: seek 3 + settle
//   0.5, on track at 15.46 ms (angle 0.546), physical 50 at 25.0 ms, written by 25.8 ms; the
//   read then needs no seek, physical 10 comes at 31.0 ms: 31.1 + 1.6 + 0.05 = 32.75 ms.
#[test]
fn immediate_write_goes_to_the_media_before_the_next_read_and_idle_lets_the_read_first() {
    for (mode, read_done) in [("idle", 22.75), ("immediate", 32.75)] {
        let mut device = disk(&format!("read_ahead=1,write_cache=1,write_back={mode}"));
        assert_eq!(run_one(&mut device, Instant::ZERO, Op::Read, 0, 8), ms(11.75), "{mode}");
        assert_eq!(run_one(&mut device, ms(11.75), Op::Write, 5500, 8), ms(13.63), "{mode}");
        assert_eq!(run_one(&mut device, ms(13.63), Op::Read, 5560, 8), ms(read_done), "{mode}");
    }
}

// Proves `limited` (DiskSim level 1) lets an appending write join the media write in
// progress, and makes any other write wait for it. The write of 5500 completes at 1.88 ms and
// is on the media 0.21 → 5.8 ms (as above).
// * An appending write of 5508 submitted at 1.88 ms (write-hit-after-write 0.22 ms, ready at
//   2.10 ms) crosses the interface at once: 2.10 + 1.6 + 0.07 = 3.77 ms. Its sectors follow
//   under the head: at 5.8 ms the platter is at angle 0.58, physical 58, so they are written
//   5.8 → 6.6 ms with no rotational wait, and a read of 5560 submitted at 3.77 ms (ready at
//   3.91 ms) finds physical 10 at 11.0 ms: 11.1 + 1.6 + 0.05 = 12.75 ms.
// * A write of 7000 (not appending) submitted at 1.88 ms waits for the head: at 5.8 ms its
//   data crosses the interface, 5.8 + 1.6 + 0.07 = 7.47 ms.
#[test]
fn limited_lets_an_appending_write_join_and_others_wait() {
    let mut device = disk("write_cache=1,write_back=limited");
    assert_eq!(run_one(&mut device, Instant::ZERO, Op::Write, 5500, 8), ms(1.88));
    assert_eq!(run_one(&mut device, ms(1.88), Op::Write, 5508, 8), ms(3.77));
    assert_eq!(run_one(&mut device, ms(3.77), Op::Read, 5560, 8), ms(12.75));
    let mut device = disk("write_cache=1,write_back=limited");
    assert_eq!(run_one(&mut device, Instant::ZERO, Op::Write, 5500, 8), ms(1.88));
    assert_eq!(run_one(&mut device, ms(1.88), Op::Write, 7000, 8), ms(7.47));
}

// Proves the difference between `limited` and `immediate`: with another command pending an
// appending write joins only under `immediate`. At depth 2, after the write of 5500 (done
// 1.88 ms, on the media until 5.8 ms), a read of 5560 (ready 2.02 ms) and a write of 5508
// (ready 2.10 ms) are submitted together at 1.88 ms. `immediate`: the write joins, 2.10 +
// 1.6 + 0.07 = 3.77 ms. `limited`: the read is pending, so the write waits; at 5.8 ms SPTF
// takes it (physical 58 is under the head, no wait), its data crosses 5.8 → 7.4 ms, done at
// 7.47 ms. Either way its sectors are written 5.8 → 6.6 ms and the read finishes at 12.75 ms
// (physical 10 at 11.0 ms).
#[test]
fn limited_refuses_a_join_while_another_command_is_pending() {
    for (mode, write_done) in [("immediate", 3.77), ("limited", 7.47)] {
        let mut device = disk(&format!("depth=2,write_cache=1,write_back={mode}"));
        assert_eq!(run_one(&mut device, Instant::ZERO, Op::Write, 5500, 8), ms(1.88), "{mode}");
        let done =
            run_together(&mut device, ms(1.88), &[(Op::Read, 5560, 8), (Op::Write, 5508, 8)]);
        assert_eq!(done, [ms(12.75), ms(write_done)], "{mode}");
    }
}

// Proves a sequential stream of small writes under `immediate` streams to the media when
// writes combine, and loses revolutions when they do not. Four writes of 8 sectors from 5500,
// each submitted when the one before completes (depth 1), each ready 0.22 ms after (0.21 ms
// for the first) and done 1.67 ms after that unless it waits.
// * `combine_writes=1`: each appends to the segment being written: 1.88, 2.10 + 1.67 = 3.77,
//   3.99 + 1.67 = 5.66, 5.88 + 1.67 = 7.55 ms; the media writes run back to back from 5.0 ms:
//   5508..5524 5.8 → 7.4 ms, 5524..5532 7.4 → 8.2 ms (three destages in all).
// * `combine_writes=0`: no write appends. The second waits until 5.8 ms: 7.47 ms (written
//   5.8 → 6.6 ms, physical 58 under the head); the third, ready at 7.69 ms, finds the head
//   free: 9.36 ms, but physical 66 has just passed (angle 0.769): written 16.6 → 17.4 ms; the
//   fourth, ready at 9.58 ms, waits until 17.4 ms: 19.07 ms.
#[test]
fn immediate_sequential_writes_stream_only_when_combined() {
    for (combine, acks) in [("1", [1.88, 3.77, 5.66, 7.55]), ("0", [1.88, 7.47, 9.36, 19.07])] {
        let mut device =
            disk(&format!("write_cache=1,write_back=immediate,combine_writes={combine}"));
        let mut at = Instant::ZERO;
        for (index, ack) in acks.into_iter().enumerate() {
            at = run_one(&mut device, at, Op::Write, 5500 + 8 * index as u64, 8);
            assert_eq!(at, ms(ack), "combine_writes={combine}, write {index}");
        }
        let mut probe_done = Vec::new();
        device.advance(ms(100.0), &mut probe_done);
        assert_eq!(device.next_event(), None, "combine_writes={combine}");
        assert_eq!(extra(&device, "destages"), if combine == "1" { 3 } else { 4 });
        assert_eq!(extra(&device, "destaged_sectors"), 32);
    }
}

// Proves `write_back` is refused, naming it, without the write cache or with an unknown
// value, and accepted as `idle` without it.
#[test]
fn write_back_needs_the_write_cache() {
    let refuse = |extra: &str, key: &str| {
        let error = match params(extra) {
            Err(error) => error,
            Ok(params) => Hdd::from_params(&params).unwrap_err().to_string(),
        };
        assert!(error.contains(key), "{extra}: {error}");
    };
    refuse("write_cache=0,write_back=immediate", "write_back");
    refuse("write_cache=0,write_back=limited", "write_back");
    refuse("write_back=full", "write_back");
    assert!(Hdd::from_params(&params("write_cache=0,write_back=idle").unwrap()).is_ok());
}

// Proves fast writes keep their books through a mixed random and sequential load with
// read-ahead and flushes, at depth 1 and 4 and under every queue policy: every command
// finishes and nothing stays dirty.
#[test]
fn fast_writes_finish_a_mixed_load() {
    use crate::device::Probe;
    for mode in ["immediate", "limited"] {
        for (depth, policy) in [(1u32, "sptf"), (4, "sptf"), (4, "fcfs"), (4, "cycle-lbn")] {
            let keys = format!(
                "depth={depth},queue_policy={policy},segments=4,segment_size=64k,\
                 write_cache=1,write_back={mode},read_ahead=1"
            );
            let mut probe = Probe::new(Box::new(disk(&keys)));
            let capacity = probe.device().capacity_sectors();
            let mut state = 11u64;
            let mut next = || {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                state >> 33
            };
            let script: Vec<(Op, Sector, u32)> = (0..1000u64)
                .map(|i| match next() % 8 {
                    0..=2 => (Op::Read, Sector(next() % (capacity - 256)), 8),
                    3 => (Op::Write, Sector(next() % (capacity - 256)), 200),
                    4 | 5 => (Op::Write, Sector(i * 8 % (capacity - 64)), 8),
                    6 => (Op::Write, Sector(next() % (capacity - 64)), 16),
                    _ => (Op::Flush, Sector(0), 0),
                })
                .collect();
            let run = probe.closed_loop(script, depth);
            assert_eq!(run.len(), 1000, "{keys}");
            probe.settle();
            assert_eq!(probe.device().next_event(), None, "{keys}");
        }
    }
}
