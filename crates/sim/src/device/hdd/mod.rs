//! `hdd`: a hard disk after Ruemmler & Wilkes (IEEE Computer, March 1994) with DiskSim's
//! parameters (devices.md §1).
//!
//! A command first pays the controller's overhead (see "The controller" below). A read
//! is then served from the buffer if a segment holds all of it (a hit: a transfer at the bus
//! rate), or by the read-ahead in progress if that is about to bring its sectors in (it waits
//! for them and streams them out), or else it goes to the internal queue for the head. The
//! head serves one media access at a time: a seek along the seek curve (or a head switch, plus
//! the write settle time for writes), a rotational wait until the first sector comes round —
//! the platter's angle is a function of absolute time, `(t·rpm/60) mod 1`, never "half a
//! revolution on average" — and the transfer at the zone's media rate, crossing tracks with a
//! head switch or a one-cylinder seek that the track and cylinder skews hide.
//!
//! After a read miss the head keeps reading ahead into the read's segment, up to a segment's
//! worth past the request, while no other command needs it (a command that does stops it: the
//! read fence). Reads that hit or wait on the read-ahead push its limit on, so a sequential
//! stream of small reads runs at the media rate; queued reads that the read-ahead comes to
//! cover leave the queue and stream from it too. A read that hits a segment whose read-ahead
//! has stopped restarts it when the head is otherwise idle (read-ahead goes before an idle-time
//! destage). Segments are reused least recently used first.
//!
//! With `write_cache=1` a write finishes once its data has crossed the bus into a segment
//! (merged with adjacent dirty data when it fits); dirty segments are destaged when the head
//! has nothing else to do, or at once, ahead of read-ahead and ordered with the queued commands
//! by positioning time, when a write is waiting for room or a flush for the cache to empty. By
//! default one segment is kept for reads (see `write_segments`). FUA writes, writes larger than the write space, and every
//! write with `write_cache=0` take the full mechanical path before they finish.
//!
//! With `depth` above 1 (NCQ/TCQ) the head takes the queued command `queue_policy` names.
//! `sptf` (the default) takes the one with the shortest positioning time (seek plus rotation
//! from where the head is, at the instant it is free), oldest first among equals, weighing
//! dirty segments with them. The others are DiskSim's ioqueue policies by logical block
//! (`src/disksim_ioqueue.c`), which order the commands only (a destage, when one is due, goes
//! first): `fcfs` in the order commands reached the head's queue; `cycle-lbn` (C-LOOK) the
//! lowest start at or above the last chosen command's start, else the lowest start;
//! `sstf-lbn` the start nearest to where the last chosen command ended, up or down, exact ties
//! alternating between up and down; `elevator-lbn` (LOOK) the nearest start in the current
//! direction from the last chosen start, turning only when nothing lies ahead (DiskSim's
//! SSTF with the whole disk added to the distance behind). Among equal starts the command that
//! queued first goes first. With `depth=1` there is only ever one, so the order is the host's.
//!
//! # The controller (DiskSim's disk controller, `src/disksim_diskctlr.c`)
//!
//! DiskSim charges each command one of eight command overheads on arrival: by kind (read or
//! write), by cache outcome, and by the kind of the command the drive last completed (its
//! `lastflags`, which starts as a read). A read is a "hit" when the buffer holds its first
//! sector on (all of it, or a prefix: DiskSim's whole and partial hits) or the read-ahead in
//! progress is reading towards it; a write is a "hit" when it will be acknowledged from the
//! buffer (DiskSim picks the write-hit overheads whenever fast writes are on). Here the eight
//! are `overhead_{read,write}_{hit,miss}_after_{read,write}`, each defaulting to
//! `overhead_read` / `overhead_write`; flushes and discards (which DiskSim has not) pay
//! `overhead_write`. The overhead runs before the command does anything else, as DiskSim's
//! `overhead_done` holds back the mechanism. DiskSim's read and write completion overheads
//! (`overhead_read_complete`, `overhead_write_complete`) delay the completion's arrival at
//! the host after the command's data is done.
//!
//! The host interface moves a sector in the larger of `bus_rate`'s time for 512 bytes and
//! `bulk_sector_time` (DiskSim's `disk_get_blktranstime` takes the maximum of the bus's
//! per-block time and the drive's "Bulk sector transfer time"). The validated drives run with
//! "Hold bus entire read xfer" = 0, water marks 0 set by request size, so DiskSim reconnects
//! once one sector of a read miss is in the buffer (its read water mark is `max(1, 0·n)`) and
//! then sends sector after sector, each no earlier than the media has read it. The model does
//! the same in closed form: a read miss's data ends at the later of (first sector ready + n
//! sectors of interface time) and (last sector ready + one sector's). When the interface is
//! slower than the media (the Cheetah 9LP: 0.105 ms per sector on the interface, 254 sectors
//! per 5.97 ms revolution = 0.0235 ms per sector on its outer zone), the interface bounds it:
//! an 8-sector read miss takes overhead + seek + rotation + 0.0235 ms for the first sector +
//! 8 × 0.105 ms, and a 561-sector sequential read costs 561 × 0.105 = 58.9 ms of interface
//! time, however fast the media: DiskSim's Cheetah 9LP delivers at most 512 B / 0.105 ms =
//! 4.9 MB/s to the host (its controllers, `disksim_ctlrsmart.c`, `disksim_ctlrdumb.c` and
//! `disksim_iosim.c`, time each block at the larger of the device's and their own block
//! time, and the device's is this maximum). A cached write finishes when its data has crossed the
//! interface; a write miss at the later of that and the end of its media write.
//!
//! `write_segments` is DiskSim's "Maximum number of write segments": the most segments that
//! hold write data at once, up to all of them (default: all but one, which is then kept for
//! reads; a read miss finding no free segment is not cached). With
//! `write_segment_separate` ("Use separate write segment") the first segment holds all write
//! data and nothing else, whatever `write_segments` says (as in DiskSim, which then ignores
//! its write segment count); reads neither use it nor hit on it. `combine_writes` ("Combine
//! seq writes", on by default as the model always did) lets a write join a segment holding
//! adjacent or overlapping write data; off, every write takes fresh segments.
//! `read_hits_on_writes` ("Allow read hits on write data", on by default as before): off,
//! reads never hit data that writes put in the buffer, and that data leaves the buffer once
//! it is on the media. `buffer_cache` ("Enable caching in buffer", on by default): off, the
//! buffer only matches speeds and serves no read; it needs `write_cache=0` (DiskSim refuses
//! fast writes without caching) and `read_ahead=0`.
//!
//! `write_back` says when buffered writes go to the media. `idle` (the default, and the
//! model's behaviour before the key) is a modern drive's write cache: destage when the head
//! has nothing else to do, reads first. `immediate` and `limited` are DiskSim's fast writes,
//! "Fast write level" 2 and 1 (`disksim_diskctlr.c`, `disk_write_arrive`,
//! `disk_buffer_stopable_access`, `disk_release_hda`). A fast write still completes once
//! its data has crossed the interface, but the drive writes it to the media at once, as the
//! head's next job: its media access starts when its overhead ends (the positioning overlaps
//! the interface transfer) and nothing else gets the head until it is done (a read-ahead in
//! progress is stopped for it, once past `read_ahead_min`). With `depth=1` the host sends
//! the next command when the write completes; that command's overhead overlaps the media
//! write, but a read miss or another write then waits for the head: a write crosses the
//! interface only when nothing holds the head (DiskSim disconnects it until then), so its
//! completion comes after the media write before it. Read hits are served from the buffer
//! meanwhile. The one exception is an appending write: one that starts where the data being
//! written ends, in the same segment (so only with `combine_writes`), joins the media write
//! in progress: it crosses the interface and completes at once, and its sectors are written
//! right after the ones before (with no rotational wait when they are in the buffer in time).
//! The two levels differ only in when an appending write may join: `immediate` (level 2)
//! when the queue would take it next (DiskSim asks its ioqueue; an appending write needs no
//! positioning and lies at LBN distance 0, so every policy but `fcfs` with an older command
//! pending takes it), `limited` (level 1) only when no other command is pending (DiskSim's
//! `ioqueue_get_number_pending == 1`, counting commands still paying their overhead). In
//! DiskSim 4.0's code a level-1 write that does not append is still acknowledged once its
//! data is in the buffer, after the media write before it, exactly as at level 2; the
//! manual's "write-back caching is enabled for contiguous sequential write request streams"
//! describes the effect, not a different completion rule, and the model follows the code.
//!
//! # Read-ahead (DiskSim's `disk_buffer_get_max_readahead` and prefetch rules)
//!
//! After a read the read-ahead runs to a limit that `read_ahead_to` ("Buffer continuous
//! read") sets: `segment` (3, the default and the model's behaviour before these keys)
//! `read_ahead_max` sectors past the read ("Maximum read-ahead", default a segment's worth);
//! `track` (1) and `cylinder` (2) the same but never past the end of the track or cylinder
//! holding the read's last sector (DiskSim's background read refuses a head switch or a seek);
//! `next-track` (4) to the end of the track holding the sector after the read, plus the
//! sectors of one more track when the segment already held data before that track (DiskSim's
//! sequential-stream test; `read_ahead_max` does not apply, as in DiskSim). A read that waits
//! on the read-ahead, or hits a segment it is filling, pushes the limit on by the same rule.
//! Without `read_ahead_max`, `read_ahead_over_requested` ("Read-ahead over requested", off by
//! default as the model behaved) stops the read-ahead once the segment is full counting the
//! read's own sectors (a segment from the read's start; if the read leaves less than
//! `read_ahead_min`, that minimum past it), where off it goes a whole segment past the read.
//! This follows DiskSim's code, which stores the value as `keeprequestdata` and keeps the
//! request's data when it is 1; the manual's sentence ("whether newly prefetched data can
//! replace ... data returned to the host") reads the other way round. DiskSim's value -1
//! (erase the request's data from the segment) has no key. With `read_ahead_max` set the flag
//! does nothing, as in DiskSim, where a maximum read-ahead takes precedence.
//! `read_ahead_min` ("Minimum read-ahead") is how far past a read the read-ahead must get
//! before another command may stop it (the head waits for it). `read_ahead_on_idle_hit`
//! ("Read-ahead on idle hit", on by default as before) lets a read that hits a segment whose
//! read-ahead has stopped restart it when the head is idle. `read_any_free` ("Read any free
//! blocks") keeps, in a read miss's empty segment, the sectors of the target's track that
//! pass under the head while it waits for the first requested one (only those logically
//! before the request on the same track, and only as many as the segment holds beside it).
//! `write_hit_stop_read_ahead` ("Write hit stop prefetch") stops the read-ahead when a write
//! arrives whose first or last sector falls in what the read-ahead's segment holds (DiskSim's
//! overlap test), at once, or once the reads waiting on it have their sectors.
//!
//! A long sequential read from the start of the disk runs at the outer zone's sustained rate
//! ([`Hdd::sustained_read_bytes_per_s`]: a cylinder's tracks plus its track and cylinder
//! skews, capped by the interface: `bus_rate` or `bulk_sector_time`) within 5 %: the first seek and rotation, and the per-command
//! overhead that read-ahead does not hide, are the difference (`tests/device_conformance.rs`
//! checks every preset).
//!
//! Everything is deterministic: there is no spindle-speed jitter (DiskSim's "percent error in
//! rpms" is out of scope), no clock and no randomness.
//!
//! # Keys
//!
//! Times take a unit (`0.8ms`, `30us`); bare numbers are milliseconds. The defaults are the
//! `desktop-7200-2005` drive, except the skews, which are derived by default.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `rpm` | 7200 | spindle speed |
//! | `cylinders` | 106400 | cylinders; with the zones and surfaces this fixes the capacity |
//! | `surfaces` | 10 | recording surfaces (heads) |
//! | `zones` | (unset) | explicit zones, outer first: `CYLINDERS@SPT/CYLINDERS@SPT/...` (the cylinders must add up to `cylinders`), or inclusive ranges `FIRST-LAST@SPT/...`, ascending, not overlapping (cylinders in no range hold no data); all entries in one form |
//! | `zone_count` | 30 | without `zones`: this many zones of equal cylinder count... |
//! | `spt_outer` | 1242 | ...with sectors per track from this at the outer edge... |
//! | `spt_inner` | 594 | ...to this at the inner edge, linearly in between |
//! | `zone_skews` | (unset) | per zone `TRACK:CYLINDER` skews in sectors (DiskSim's "Skew for track/cylinder switch"; decimals truncated to whole sectors as DiskSim does); replaces `track_skew` and `cylinder_skew` |
//! | `zone_offsets` | 0:0 each | per zone `OFFSET:EMPTY`: the angle of the zone's first track's sector 0 in sectors ("Offset of first block", truncated) and the sectors at the zone's front that hold no LBN ("Empty space at zone front") |
//! | `mapping` | conventional | DiskSim's LBN-to-PBN mapping 0/1/2: `conventional`, `serpentine` (odd cylinders of a zone take their surfaces last to first), `serpentine-global` (odd cylinders by absolute number) |
//! | `sparing` | none | DiskSim's sparing scheme by name (`none` 0 ... `per-zone-slip-to-end` 10); implemented: `none`, `tracks` (1), `per-track` (3), `at-end` (7), `per-range` (8), `per-zone` (9), `per-zone-slip-to-end` (10); the per-cylinder ones (2, 4, 5, 6) are refused |
//! | `sparing_range` | 1 | DiskSim's "Rangesize for sparing": cylinders per spare range with `per-range` |
//! | `zone_spares` | 0 each | per zone "Number of spares": sectors at the end of each track (`per-track`), range (`per-range`) or the zone (`per-zone...`), or whole tracks at the zone's end (`tracks`) |
//! | `slips` | (none) | `ZONE:N+N/...`: DiskSim's slips, sector indices within the zone counted from its first sector (empty front included), track indices with `tracks`; ascending |
//! | `defects` | (none) | `ZONE:DEFECT>REPLACEMENT+.../...` in the units of `slips`; the replacement must lie in the zone's spare space |
//! | `block_count` | (unset) | LBNs the disk exposes; refused when the layout holds fewer; unset: all it holds |
//! | `track_skew` | (derived) | angle from one surface's sector 0 to the next's, as the time the platter takes to turn through it; default `head_switch + write_settle` |
//! | `cylinder_skew` | (derived) | the same across a cylinder boundary; default one-cylinder seek `+ write_settle` |
//! | `seek` | curve | `curve`, `hpl` or `table` |
//! | `seek_single` | 0.8ms | `curve`: one-cylinder seek |
//! | `seek_avg` | 8.5ms | `curve`: average over random pairs of distinct cylinders |
//! | `seek_full` | 16ms | `curve`: full-stroke seek |
//! | `hpl` | (unset) | `hpl`: `V1/V2/V3/V4/V5/V6` (V1 in cylinders, the rest ms, V6 = -1 for none) |
//! | `seek_table` | (unset) | `table`: `DISTANCE:MS/DISTANCE:MS/...`, distances ascending |
//! | `seek_first_ten` | (unset) | `hpl`: ten times `MS/MS/...` for distances 1..10 (DiskSim's `hplplus10`); the equation beyond |
//! | `head_switch` | 0.9ms | switching heads within a cylinder |
//! | `write_settle` | 0.5ms | extra settling before writing after the head moved |
//! | `overhead_read` | 0.03ms | controller time per read |
//! | `overhead_write` | 0.03ms | controller time per write, flush or discard |
//! | `overhead_read_hit_after_read` | `overhead_read` | a read hit after a read (see "The controller") |
//! | `overhead_read_hit_after_write` | `overhead_read` | a read hit after a write |
//! | `overhead_read_miss_after_read` | `overhead_read` | a read miss after a read |
//! | `overhead_read_miss_after_write` | `overhead_read` | a read miss after a write |
//! | `overhead_write_hit_after_read` | `overhead_write` | a write acknowledged from the buffer, after a read |
//! | `overhead_write_hit_after_write` | `overhead_write` | the same after a write |
//! | `overhead_write_miss_after_read` | `overhead_write` | a write that finishes on the media, after a read |
//! | `overhead_write_miss_after_write` | `overhead_write` | the same after a write |
//! | `overhead_read_complete` | 0 | from a read's end to its completion at the host |
//! | `overhead_write_complete` | 0 | from a write's end to its completion at the host |
//! | `bulk_sector_time` | 0 | least interface time per 512-byte sector |
//! | `write_segments` | (segments − 1) | most segments holding write data at once (1..=`segments`, with 2 or more segments) |
//! | `write_segment_separate` | 0 | segment 0 holds all write data, and reads never use it |
//! | `bus_rate` | 300 | host interface in MB/s (10^6 bytes) |
//! | `segments` | 16 | buffer segments |
//! | `segment_size` | 512k | bytes per segment (a multiple of 512) |
//! | `read_ahead` | 1 | read on after a read miss |
//! | `read_ahead_to` | segment | `segment`, `track`, `cylinder` or `next-track` (see "Read-ahead") |
//! | `read_ahead_min` | 0 | sectors read ahead before another command may stop it (at most a segment) |
//! | `read_ahead_max` | (a segment) | most sectors read ahead past a read (at most a segment) |
//! | `read_ahead_over_requested` | 0 | without `read_ahead_max`: read ahead only to a segment from the read's start |
//! | `read_ahead_on_idle_hit` | 1 | a hit restarts its segment's stopped read-ahead |
//! | `read_any_free` | 0 | a miss keeps the sectors passing before it on its track |
//! | `write_hit_stop_read_ahead` | 0 | a write overlapping the read-ahead's segment stops it |
//! | `read_hits_on_writes` | 1 | reads may hit data that writes put in the buffer |
//! | `buffer_cache` | 1 | the buffer caches (0: no read is served from it) |
//! | `combine_writes` | 1 | a write may join a segment holding adjacent write data |
//! | `write_cache` | 1 | acknowledge writes from the buffer (write-back) |
//! | `write_back` | idle | with `write_cache=1`: `idle` (destage when the head is idle), `immediate` or `limited` (DiskSim's fast write levels 2 and 1: to the media at once; see "The controller") |
//! | `depth` | 1 | commands accepted at once (1: no command queuing) |
//! | `queue_policy` | sptf | `fcfs`, `sptf`, `sstf-lbn`, `elevator-lbn` or `cycle-lbn` (with `depth` above 1) |
//! | `driver` | generic | the driver in front of it (`device/driver.rs`): its queue's depth and largest request |
//!
//! The capacity is derived (unless `block_count` caps it): the sum over zones of cylinders ×
//! surfaces × sectors per track, less each zone's empty front, its spares and, where the
//! sparing scheme says so, its slips (DiskSim's `dm_layout_g1_compute_blksinband`). Skews
//! given as times are converted per zone to whole sectors, rounded up, so that the switch
//! always fits in the gap. `layout.rs` describes the mapping.
//!
//! # Deviations from Ruemmler & Wilkes and DiskSim
//!
//! * Sparing schemes 2, 4, 5 and 6 (spares per cylinder) are refused: none of the four
//!   validated drives uses them, DiskSim's own mapping for them moves an LBN pushed past
//!   a cylinder's data by slips onto the next cylinder's first LBNs (two LBNs on one
//!   sector), and its "front" variants place spares at the front only when mapping back.
//!   With `per-track`, DiskSim counts the empty front in LBNs rather than sectors (one
//!   track holds fewer LBNs than sectors); that is kept. Scheme 0
//!   follows DiskSim's documented meaning (DiskSim 4.0's own code for it does not map).
//!   `at-end` keeps no spares in a zone and remaps no defects (they would go to the end of
//!   the disk, which is not modelled); its zone spare counts must be 0 (the four files'
//!   are).
//! * A zone's skews are whole sectors, as DiskSim's are when given in sectors; skews in
//!   revolutions ("Skew units") are not offered. Without `zone_skews`, one skew time per kind
//!   (track, cylinder) for the whole disk is converted per zone.
//! * DiskSim ignores its "Block count" and exposes all the layout holds; `block_count` caps
//!   the disk at it (a drive exposes its block count).
//! * Slips and defects may not be given with `sparing=none` (DiskSim ignores them there).
//! * A seek that also changes the surface costs the seek alone; DiskSim takes the larger of
//!   the seek and the head switch.
//! * One write settle time for every distance; writes settle after head switches too.
//! * The host transfer overlaps the media transfer; the bus is one resource, reserved in the
//!   order transfers are planned (a transfer planned for later can delay a cache hit that
//!   arrives meanwhile, only possible with `depth` above 1).
//! * A read that finds only a prefix of itself in a clean segment reads the rest from the
//!   media; any other partial hit is a miss. Read-ahead stops at the end of the disk.
//! * A command's overhead is one delay before anything else; DiskSim overlaps parts of it
//!   with the bus (reconnection, data preparation and disconnect overheads, all 0 in the
//!   validated drives, are not modelled). The completion overheads delay the host only, not
//!   the drive's next command. The "previous command" is the last one whose completion
//!   reached the host, as DiskSim sets it when the completion starts.
//! * A write larger than the write segments goes to the media and pays a write-miss overhead
//!   even with the write cache on (DiskSim picks the write-hit one whenever fast writes are on).
//! * The interface/media overlap is the closed form above, exact while the media rate is
//!   steady; a track or cylinder switch in the middle of a read whose interface outruns the
//!   media is not followed sector by sector.
//! * With `write_segment_separate` or `read_hits_on_writes=0` a read of sectors held as
//!   write data goes to the media at once; DiskSim makes it wait until the write data is on
//!   the media (a "collision"). Only which sectors are held is tracked, not their contents.
//! * `buffer_cache=0` refuses read-ahead instead of modelling a read-ahead whose data no read
//!   can use.
//! * `read_ahead_to=track`/`cylinder` bound the limit at the end of the read's last track or
//!   cylinder; a read-ahead restarted on an idle hit repositions the head if it must, where
//!   DiskSim's would not start off the head's current track.
//! * `write_hit_stop_read_ahead` lets reads already waiting on the read-ahead (and a
//!   `read_ahead_min` hold) finish before it stops; DiskSim cuts the minimum too.
//! * `read_any_free` counts the sectors passing during the rotational wait as whole sectors
//!   from the head's arrival; the ones physically before the track's first sector (logically
//!   after the request) are not kept.
//! * The LBN queue policies order commands by their first sector; DiskSim's sequential-stream
//!   grouping in its ioqueue (off in the validated drives) is not modelled.
//! * `fcfs` serves commands in the order they finished their overheads (DiskSim's queue
//!   holds them from arrival: with unequal overheads the two orders can differ). The LBN
//!   policies and FCFS leave destages to positioning time, first when one is due; DiskSim has
//!   no deferred destage to order (`write_back=idle` is not DiskSim's).
//! * Fast writes (`immediate`, `limited`): a write's media access may start before its data
//!   is all in the buffer (it is not held back sector by sector, as for a write miss); an
//!   appending write's sectors are written as a second media access right after the first,
//!   from where the head is (no wait when the platter is there, a revolution otherwise),
//!   where DiskSim extends the access in progress. `immediate` takes an appending write as
//!   the queue's choice under every policy but `fcfs` instead of asking the policy. A fast
//!   write waiting for the head is chosen among the queued commands by the queue policy as a
//!   write miss would be. A fast write larger than the write segments takes the mechanical
//!   path (as with `idle`).
//! * The read and write water marks and "Immed transfer partial hit" have no keys: a miss
//!   reconnects after one sector and a cached prefix goes out at once, which is what DiskSim
//!   does with water marks 0 set by request size (all four validated drives), where that
//!   flag makes no difference.
//! * A segment's dirty sectors are one range (the hull of its writes); writes larger than a
//!   segment take several fresh segments and never merge.
//! * Only which sectors are buffered is tracked, not their contents: a write does not
//!   invalidate older copies in other segments (the same time as updating them).
//! * A flush waits for the buffer's write data only; writes still queued for the media are the
//!   block layer's to order (it drains before a flush).
//! * SPTF is not aged: a command can wait as long as closer ones keep arriving.
//! * No spindle-speed jitter, no seek-time variance, no thermal recalibration.

mod cache;
#[cfg(test)]
mod controller_tests;
mod disksim_presets;
mod layout;
#[cfg(test)]
mod layout_tests;
mod seek;
#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use elevator_core::{
    Duration, Instant, KeyKind, KeySpec, Op, ParamError, Params, SECTOR_SIZE_BYTES,
};

use super::driver::DRIVER_KEY;
use super::{Command, CommandId, DeviceModel, DeviceStats, Preset};
use cache::{Cache, Lookup, Progress, Segment, Stream};
use layout::{
    Geometry, LayoutSpec, Mapping, Mechanics, Piece, Sparing, Target, TargetMemo, Track,
    UNITS_PER_REVOLUTION, ZoneSpec,
};
use seek::SeekCurve;

/// One line for `elevator list devices`.
pub const SUMMARY: &str = "hard disk: zoned geometry, seek curve, rotation tracked from time, \
                           segmented read-ahead and write-back cache, SPTF command queue";

const fn time_key(key: &'static str, default: &'static str, help: &'static str) -> KeySpec {
    KeySpec {
        key,
        kind: KeyKind::Time { min: Duration::ZERO, max: Duration::from_secs(1), bare_unit: "ms" },
        default,
        help,
    }
}

/// The keys of `hdd`.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "rpm",
        kind: KeyKind::Integer { min: 1_000, max: 30_000 },
        default: "7200",
        help: "spindle speed in revolutions per minute",
    },
    KeySpec {
        key: "cylinders",
        kind: KeyKind::Integer { min: 1, max: 10_000_000 },
        default: "106400",
        help: "cylinders (the capacity follows from cylinders, surfaces and zones)",
    },
    KeySpec {
        key: "surfaces",
        kind: KeyKind::Integer { min: 1, max: 64 },
        default: "10",
        help: "recording surfaces (heads)",
    },
    KeySpec {
        key: "zones",
        kind: KeyKind::Text,
        default: "",
        help: "explicit zones outer to inner, CYLINDERS@SPT/CYLINDERS@SPT/...; overrides \
               zone_count, spt_outer and spt_inner",
    },
    KeySpec {
        key: "zone_count",
        kind: KeyKind::Integer { min: 1, max: 1_000 },
        default: "30",
        help: "zones of equal cylinder count (without `zones`)",
    },
    KeySpec {
        key: "spt_outer",
        kind: KeyKind::Integer { min: 1, max: 100_000 },
        default: "1242",
        help: "sectors per track in the outermost zone (without `zones`)",
    },
    KeySpec {
        key: "spt_inner",
        kind: KeyKind::Integer { min: 1, max: 100_000 },
        default: "594",
        help: "sectors per track in the innermost zone (without `zones`)",
    },
    KeySpec {
        key: "zone_skews",
        kind: KeyKind::Text,
        default: "",
        help: "per-zone skews in sectors, TRACK:CYLINDER/TRACK:CYLINDER/... one per zone \
               (DiskSim's skews for track and cylinder switch; decimals truncated to whole \
               sectors as DiskSim does); replaces track_skew and cylinder_skew",
    },
    KeySpec {
        key: "zone_offsets",
        kind: KeyKind::Text,
        default: "",
        help: "per-zone OFFSET:EMPTY/... in sectors: DiskSim's offset of first block (angle of \
               the zone's first sector; decimals truncated) and empty space at zone front \
               (sectors holding no LBN); default 0:0 each",
    },
    KeySpec {
        key: "mapping",
        kind: KeyKind::Choice(&["conventional", "serpentine", "serpentine-global"]),
        default: "conventional",
        help: "DiskSim's LBN-to-PBN mapping scheme 0/1/2: surfaces in order on every cylinder, \
               or reversed on odd cylinders (counted per zone, or absolute)",
    },
    KeySpec {
        key: "sparing",
        kind: KeyKind::Choice(SPARING_NAMES),
        default: "none",
        help: "DiskSim's sparing scheme 0..10 by name; implemented: none, tracks, per-track, \
               at-end, per-range, per-zone, per-zone-slip-to-end",
    },
    KeySpec {
        key: "sparing_range",
        kind: KeyKind::Integer { min: 1, max: 10_000_000 },
        default: "1",
        help: "DiskSim's rangesize for sparing (cylinders per spare range; used by per-range \
               only)",
    },
    KeySpec {
        key: "zone_spares",
        kind: KeyKind::Text,
        default: "",
        help: "per-zone spare counts N/N/... (sectors, or tracks with sparing=tracks); default \
               0 each",
    },
    KeySpec {
        key: "slips",
        kind: KeyKind::Text,
        default: "",
        help: "slipped locations ZONE:N+N+.../ZONE:N+..., zone index from 0, numbers as \
               DiskSim's slips list them (sector index within the zone counting its empty \
               front, or track index with sparing=tracks), ascending",
    },
    KeySpec {
        key: "defects",
        kind: KeyKind::Text,
        default: "",
        help: "remapped defects ZONE:DEFECT>REPLACEMENT+.../..., in the units of slips; the \
               replacement must be a spare location",
    },
    KeySpec {
        key: "block_count",
        kind: KeyKind::Integer { min: 1, max: 1 << 48 },
        default: "",
        help: "LBNs the disk exposes (DiskSim's block count); default all the layout holds",
    },
    time_key(
        "track_skew",
        "",
        "rotation of the next surface's first sector, as time; default head_switch + \
         write_settle",
    ),
    time_key(
        "cylinder_skew",
        "",
        "rotation of the next cylinder's first sector, as time; default one-cylinder seek + \
         write_settle",
    ),
    KeySpec {
        key: "seek",
        kind: KeyKind::Choice(&["curve", "hpl", "table"]),
        default: "curve",
        help: "seek model: Lee & Katz curve, Ruemmler & Wilkes HPL, or a measured table",
    },
    time_key("seek_single", "0.8ms", "seek=curve: one-cylinder seek"),
    time_key("seek_avg", "8.5ms", "seek=curve: average seek over random cylinder pairs"),
    time_key("seek_full", "16ms", "seek=curve: full-stroke seek"),
    KeySpec {
        key: "hpl",
        kind: KeyKind::Text,
        default: "",
        help: "seek=hpl: V1/V2/V3/V4/V5/V6 (V6 for d=1 unless -1; V2+V3*sqrt(d) below V1 \
               cylinders; V4+V5*d from V1), times in ms",
    },
    KeySpec {
        key: "seek_table",
        kind: KeyKind::Text,
        default: "",
        help: "seek=table: DISTANCE:MS/DISTANCE:MS/... ascending, linear in between",
    },
    KeySpec {
        key: "seek_first_ten",
        kind: KeyKind::Text,
        default: "",
        help: "seek=hpl: MS/MS/... exactly ten times for distances 1..10 (DiskSim's \
               hplplus10); the hpl equation covers longer seeks",
    },
    time_key("head_switch", "0.9ms", "switching heads within a cylinder"),
    time_key("write_settle", "0.5ms", "extra settling before a write after the head moved"),
    time_key("overhead_read", "0.03ms", "controller overhead per read"),
    time_key("overhead_write", "0.03ms", "controller overhead per write, flush or discard"),
    time_key(
        "overhead_read_hit_after_read",
        "",
        "overhead of a read the buffer holds (or is reading) after a read; default overhead_read",
    ),
    time_key(
        "overhead_read_hit_after_write",
        "",
        "overhead of a read the buffer holds (or is reading) after a write; default \
         overhead_read",
    ),
    time_key(
        "overhead_read_miss_after_read",
        "",
        "overhead of a read that goes to the media after a read; default overhead_read",
    ),
    time_key(
        "overhead_read_miss_after_write",
        "",
        "overhead of a read that goes to the media after a write; default overhead_read",
    ),
    time_key(
        "overhead_write_hit_after_read",
        "",
        "overhead of a write acknowledged from the buffer after a read; default overhead_write",
    ),
    time_key(
        "overhead_write_hit_after_write",
        "",
        "overhead of a write acknowledged from the buffer after a write; default \
         overhead_write",
    ),
    time_key(
        "overhead_write_miss_after_read",
        "",
        "overhead of a write that finishes on the media after a read; default overhead_write",
    ),
    time_key(
        "overhead_write_miss_after_write",
        "",
        "overhead of a write that finishes on the media after a write; default overhead_write",
    ),
    time_key("overhead_read_complete", "0", "controller time from a read's end to its completion"),
    time_key(
        "overhead_write_complete",
        "0",
        "controller time from a write's end to its completion",
    ),
    time_key(
        "bulk_sector_time",
        "0",
        "least interface time per 512-byte sector (the interface takes the larger of this and \
         bus_rate's)",
    ),
    KeySpec {
        key: "write_segments",
        kind: KeyKind::Integer { min: 1, max: 255 },
        default: "",
        help: "most segments holding write data at once (1..=segments); default all but one",
    },
    KeySpec {
        key: "write_segment_separate",
        kind: KeyKind::Flag,
        default: "0",
        help: "one segment holds all write data and reads never use it",
    },
    KeySpec {
        key: "read_ahead_to",
        kind: KeyKind::Choice(&["segment", "track", "cylinder", "next-track"]),
        default: "segment",
        help: "how far read-ahead goes: read_ahead_max past the read (segment), no further \
               than the end of its last track (track) or cylinder (cylinder), or to the end \
               of the track after it (next-track)",
    },
    KeySpec {
        key: "read_ahead_min",
        kind: KeyKind::Integer { min: 0, max: 1 << 21 },
        default: "0",
        help: "sectors read ahead after a read before another command may stop it",
    },
    KeySpec {
        key: "read_ahead_max",
        kind: KeyKind::Integer { min: 1, max: 1 << 21 },
        default: "",
        help: "most sectors read ahead past a read (at most a segment); default a segment",
    },
    KeySpec {
        key: "read_ahead_over_requested",
        kind: KeyKind::Flag,
        default: "0",
        help: "without read_ahead_max: read ahead only as far as the segment holds beside the \
               read (a segment from its start) instead of a segment past its end",
    },
    KeySpec {
        key: "read_ahead_on_idle_hit",
        kind: KeyKind::Flag,
        default: "1",
        help: "a read the buffer holds whole restarts its segment's stopped read-ahead",
    },
    KeySpec {
        key: "read_any_free",
        kind: KeyKind::Flag,
        default: "0",
        help: "a read miss also keeps the sectors before it that pass under the head while it \
               waits for its first sector",
    },
    KeySpec {
        key: "write_hit_stop_read_ahead",
        kind: KeyKind::Flag,
        default: "0",
        help: "a write overlapping the read-ahead's segment stops the read-ahead",
    },
    KeySpec {
        key: "read_hits_on_writes",
        kind: KeyKind::Flag,
        default: "1",
        help: "reads may hit data that writes put in the buffer",
    },
    KeySpec {
        key: "buffer_cache",
        kind: KeyKind::Flag,
        default: "1",
        help: "the buffer caches (0: speed matching only, no read hits; needs write_cache=0 \
               and read_ahead=0)",
    },
    KeySpec {
        key: "combine_writes",
        kind: KeyKind::Flag,
        default: "1",
        help: "a write may join a segment holding adjacent or overlapping write data",
    },
    KeySpec {
        key: "bus_rate",
        kind: KeyKind::Float { min: 0.1, max: 100_000.0, unit: "MB/s" },
        default: "300",
        help: "host interface rate in MB/s (10^6 bytes per second)",
    },
    KeySpec {
        key: "segments",
        kind: KeyKind::Integer { min: 1, max: 256 },
        default: "16",
        help: "buffer segments",
    },
    KeySpec {
        key: "segment_size",
        kind: KeyKind::Size { min_bytes: 512, max_bytes: 1 << 30 },
        default: "512k",
        help: "bytes per buffer segment (a multiple of 512)",
    },
    KeySpec {
        key: "read_ahead",
        kind: KeyKind::Flag,
        default: "1",
        help: "keep reading into the segment after a read miss",
    },
    KeySpec {
        key: "write_cache",
        kind: KeyKind::Flag,
        default: "1",
        help: "acknowledge writes once buffered and destage them later",
    },
    KeySpec {
        key: "write_back",
        kind: KeyKind::Choice(&["idle", "immediate", "limited"]),
        default: "idle",
        help: "with write_cache=1, when buffered writes go to the media: idle (when the head \
               has nothing else to do), immediate (at once, before any other command: DiskSim \
               fast write level 2), limited (level 1: only a write with no other command \
               pending joins a media write in progress)",
    },
    KeySpec {
        key: "depth",
        kind: KeyKind::Integer { min: 1, max: 256 },
        default: "1",
        help: "commands accepted at once (above 1: NCQ/TCQ with SPTF)",
    },
    KeySpec {
        key: "queue_policy",
        kind: KeyKind::Choice(&["fcfs", "sptf", "sstf-lbn", "elevator-lbn", "cycle-lbn"]),
        default: "sptf",
        help: "order the drive serves its queued commands in (depth above 1)",
    },
    DRIVER_KEY,
];

/// The presets; the first is what bare `hdd` means.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "desktop-7200-2005",
        help: "Hitachi Deskstar 7K500-like 500 GB SATA disk (2005). Media rate 76.3 -> 36.5 \
               MB/s (1242 -> 594 sectors per track, 30 zones) and sustained 64.8 -> 31.0 MB/s \
               from the datasheet (devices.md 1.6); 10 heads; skews 1.4/1.8 ms are the IBM \
               Deskstar 60GXP's head/cylinder switch, which reproduce the sustained rates by \
               Hitachi's formula (65.1/31.1 MB/s). Seek 0.8/8.5/16 ms, write +0.5 ms, 8 MB \
               buffer as 16 x 512 KiB, SATA 300 MB/s, write cache on as shipped. Depth 1: the \
               2.6 elevators were built for disks that take one command at a time; set \
               depth=31 for NCQ. Overheads 30 us are a guess. Write-back destaged when the \
               head is idle (write_back=idle: drives of the 2000s reorder and coalesce cached \
               writes; the 1990s SCSI drives DiskSim validated wrote each at once) [U]",
        values: &[("track_skew", "1.4ms"), ("cylinder_skew", "1.8ms"), ("write_back", "idle")],
    },
    Preset {
        name: "sas-10k-2008",
        help: "typical 300 GB 10k-rpm SAS disk (2008), class values from devices.md 1.6 [U]: \
               seek 0.3/4.3/8.5 ms, write +0.5 ms, sustained about 125 -> 73 MB/s (1660 -> \
               970 sectors per track, 24 zones, 8 heads), 16 MB buffer as 16 x 1 MiB (a \
               segment holds more than a track, so read-ahead restarting after a full segment \
               does not starve a reader), SAS 300 MB/s, TCQ depth 32, write cache off as enterprise disks are run",
        values: &[
            ("rpm", "10000"),
            ("cylinders", "55697"),
            ("surfaces", "8"),
            ("zone_count", "24"),
            ("spt_outer", "1660"),
            ("spt_inner", "970"),
            ("seek_single", "0.3ms"),
            ("seek_avg", "4.3ms"),
            ("seek_full", "8.5ms"),
            ("head_switch", "0.3ms"),
            ("write_settle", "0.5ms"),
            ("segments", "16"),
            ("segment_size", "1m"),
            ("write_cache", "0"),
            ("depth", "32"),
        ],
    },
    Preset {
        name: "sas-15k-2008",
        help: "Seagate Cheetah 15K.6-like 450 GB SAS disk (2008): sustained 171 -> 112 MB/s \
               and 2.0 ms average latency from the datasheet, avg seek 3.4 ms read / 3.9 ms \
               write (devices.md 1.6); single/full 0.2/6.6 ms, 8 heads, 24 zones of 1570 -> \
               1028 sectors per track (sized so the sustained rates come out with the derived \
               skews) are assumptions. 16 MB buffer as 16 x 1 MiB, SAS 300 MB/s, TCQ depth \
               32, write cache off",
        values: &[
            ("rpm", "15000"),
            ("cylinders", "84593"),
            ("surfaces", "8"),
            ("zone_count", "24"),
            ("spt_outer", "1570"),
            ("spt_inner", "1028"),
            ("seek_single", "0.2ms"),
            ("seek_avg", "3.4ms"),
            ("seek_full", "6.6ms"),
            ("head_switch", "0.2ms"),
            ("write_settle", "0.5ms"),
            ("segments", "16"),
            ("segment_size", "1m"),
            ("write_cache", "0"),
            ("depth", "32"),
        ],
    },
    Preset {
        name: "scsi-15k-2005",
        help: "the classic study's dd server disk: a Seagate Cheetah 15K.4-class 146 GB Ultra320 \
               SCSI disk (2005), about 96 -> 58 MB/s sustained as the class was sold [U]; 4 \
               heads, 16 zones of 850 -> 515 sectors per track, seek 0.2/3.5/7.0 ms, write +0.5 \
               ms, 8 MB buffer as 8 x 1 MiB, Ultra320 bus (320 MB/s), write cache off, 32 tags \
               [U] (the queue takes the lesser of this and the driver's depth). Driver mptspi: the LSI 53C1030 was the \
               Ultra320 chip on most 2005-2006 two-socket servers' boards (Dell PowerEdge \
               1850/2850, IBM x336/x346) [U: the write-up names no controller]; aic79xx would \
               give 4 commands in RHEL builds. Under the server's RHEL 5.0 mptspi allows 64 \
               commands (the disk's 32 bind) and CONFIG_FUSION_MAX_SGE 40 limits requests to \
               160 KiB (2.6.9: 31 commands, 160 KiB) (host-mechanisms.md 2.3)",
        values: &[
            ("rpm", "15000"),
            ("cylinders", "104000"),
            ("surfaces", "4"),
            ("zone_count", "16"),
            ("spt_outer", "850"),
            ("spt_inner", "515"),
            ("seek_single", "0.2ms"),
            ("seek_avg", "3.5ms"),
            ("seek_full", "7.0ms"),
            ("head_switch", "0.2ms"),
            ("write_settle", "0.5ms"),
            ("segments", "8"),
            ("segment_size", "1m"),
            ("bus_rate", "320"),
            ("write_cache", "0"),
            ("depth", "32"),
            ("driver", "mptspi"),
        ],
    },
    disksim_presets::CHEETAH_9LP,
    disksim_presets::ULTRASTAR_18ES,
    disksim_presets::ATLAS_10K,
    disksim_presets::HP_C2247A,
    Preset {
        name: "ide-7200-2004",
        help: "a 2004 7200-rpm PATA desktop disk (Barracuda 7200.7 / Deskstar 7K250 class, values \
               typical of the class, not one datasheet [U]): 160 GB, 4 heads, 16 zones of 1152 -> \
               634 sectors per track giving about 60 -> 33 MB/s sustained with 1.4/1.8 ms skews, \
               seek 0.8/8.5/17 ms, write +0.5 ms, 8 MB buffer as 16 x 512 KiB, ATA/100 (100 \
               MB/s), 40 us overheads, write cache on, no command queuing. Write-back destaged \
               when the head is idle (write_back=idle: drives of the 2000s reorder and coalesce \
               cached writes; the 1990s SCSI drives DiskSim validated wrote each at once) [U]",
        values: &[
            ("cylinders", "87508"),
            ("surfaces", "4"),
            ("zone_count", "16"),
            ("spt_outer", "1152"),
            ("spt_inner", "634"),
            ("track_skew", "1.4ms"),
            ("cylinder_skew", "1.8ms"),
            ("seek_full", "17ms"),
            ("overhead_read", "0.04ms"),
            ("overhead_write", "0.04ms"),
            ("bus_rate", "100"),
            ("write_back", "idle"),
        ],
    },
    // The hdparm desktop's four drives (the `jbod` preset: hda..hdd). All 160 GB, 7200 rpm,
    // two 80 GB platters (4 heads), 312,581,808 sectors (IDEMA's count for 160 GB); 16 zones
    // whose outer and inner sectors per track give the drive's sustained rates by Hitachi's
    // formula (devices.md 1.1) with 1.4/1.8 ms head/cylinder switches (the IBM Deskstar
    // 60GXP's, devices.md 1.6; the other makers' are not published [U]). Where a maker gives
    // only its peak media bit rate, the sustained rates are the Deskstar 7K250's scaled by
    // the ratio of peak bit rates (same formatting efficiency assumed [D/U]). Each on a
    // UDMA/100 chipset port (a 2004 desktop's ICH5/ICH6 has no UDMA/133 [U]).
    Preset {
        name: "maxtor-6y160p0",
        help: "hda: Maxtor DiamondMax Plus 9 6Y160P0 (160 GB PATA, 7200 rpm, 8 MB buffer: the 8 \
               MB version, Tom's Hardware review). Average seek 9.3 ms (the figure the \
               competition quoted beside Hitachi's 8.5 and WD's 8.9 in Tom's Hardware's 2004 \
               roundup [S]); single/full 0.8/17.8 ms [U]; peak media rate 741 Mbit/s [U] -> \
               sustained about 60 -> 29 MB/s (1154 -> 559 sectors per track) [D]; ATA/133 \
               interface run at UDMA/100; overheads 40 us [U]; write cache on, no queuing. \
               Write-back destaged when the head is idle (write_back=idle: drives of the 2000s \
               reorder and coalesce cached writes; the 1990s SCSI drives DiskSim validated wrote \
               each at once) [U]",
        values: &[
            ("cylinders", "91238"),
            ("surfaces", "4"),
            ("zone_count", "16"),
            ("spt_outer", "1154"),
            ("spt_inner", "559"),
            ("track_skew", "1.4ms"),
            ("cylinder_skew", "1.8ms"),
            ("seek_single", "0.8ms"),
            ("seek_avg", "9.3ms"),
            ("seek_full", "17.8ms"),
            ("overhead_read", "0.04ms"),
            ("overhead_write", "0.04ms"),
            ("bus_rate", "100"),
            ("segments", "16"),
            ("segment_size", "512k"),
            ("write_back", "idle"),
        ],
    },
    Preset {
        name: "seagate-st3160021a",
        help: "hdb: Seagate Barracuda 7200.7 ST3160021A (160 GB PATA, 7200 rpm, 4 heads; average \
               seek 8.5 ms, peak media rate 683 Mbit/s, 2 or 8 MB buffer by model, Red Hill's \
               drive history [S]; this model's 2 MB [U], as 4 x 512 KiB). Sustained about 55 -> \
               27 MB/s (1064 -> 515 sectors per track) from the bit-rate ratio [D]; single/full \
               0.8/17 ms [U]; ATA/100; overheads 40 us [U]; write cache on, no queuing. \
               Write-back destaged when the head is idle (write_back=idle: drives of the 2000s \
               reorder and coalesce cached writes; the 1990s SCSI drives DiskSim validated wrote \
               each at once) [U]",
        values: &[
            ("cylinders", "98981"),
            ("surfaces", "4"),
            ("zone_count", "16"),
            ("spt_outer", "1064"),
            ("spt_inner", "515"),
            ("track_skew", "1.4ms"),
            ("cylinder_skew", "1.8ms"),
            ("seek_single", "0.8ms"),
            ("seek_avg", "8.5ms"),
            ("seek_full", "17ms"),
            ("overhead_read", "0.04ms"),
            ("overhead_write", "0.04ms"),
            ("bus_rate", "100"),
            ("segments", "4"),
            ("segment_size", "512k"),
            ("write_back", "idle"),
        ],
    },
    Preset {
        name: "wd-wd1600jb",
        help: "hdc: Western Digital Caviar SE WD1600JB (160 GB PATA, 7200 rpm, 8 MB buffer; \
               average read seek 8.9 ms, Tom's Hardware on the WD1200JB of the same series [S]). \
               WD's ATA spec sheets of the Caviar line (WD400BB) give write seek 10.9 ms (+2.0 ms \
               settle), track-to-track 2.0 ms, full stroke 21 ms and 0.3 ms average controller \
               overhead [S for the series, U for this model]; peak media rate 748 Mbit/s [U] -> \
               sustained about 61 -> 29 MB/s (1172 -> 566 sectors per track, with a 2.0 ms \
               cylinder skew: the track-to-track seek must fit in it) [D]; ATA/100; write cache \
               on, no queuing. Write-back destaged when the head is idle (write_back=idle: drives \
               of the 2000s reorder and coalesce cached writes; the 1990s SCSI drives DiskSim \
               validated wrote each at once) [U]",
        values: &[
            ("cylinders", "89925"),
            ("surfaces", "4"),
            ("zone_count", "16"),
            ("spt_outer", "1172"),
            ("spt_inner", "566"),
            ("track_skew", "1.4ms"),
            ("cylinder_skew", "2.0ms"),
            ("seek_single", "2.0ms"),
            ("seek_avg", "8.9ms"),
            ("seek_full", "21ms"),
            ("write_settle", "2.0ms"),
            ("overhead_read", "0.3ms"),
            ("overhead_write", "0.3ms"),
            ("bus_rate", "100"),
            ("segments", "16"),
            ("segment_size", "512k"),
            ("write_back", "idle"),
        ],
    },
    Preset {
        name: "hitachi-hds722516vlat80",
        help: "hdd: Hitachi Deskstar 7K250 HDS722516VLAT80 (160 GB PATA, 7200 rpm, 8 MB buffer, \
               80 GB platters; average read seek 8.5 ms, sustained 61.4 -> 29.7 MB/s, peak media \
               rate 757 Mbit/s: The Tech Report's and Tom's Hardware's copies of the spec sheet \
               [S]) -> 1179 -> 570 sectors per track; single/full 0.8/17 ms [U] (its ancestor the \
               Deskstar 60GXP's 14.7 ms full stroke, devices.md 1.6, cannot go with an 8.5 ms \
               average on this seek curve); ATA/133 run at UDMA/100; overheads 40 us [U]; write \
               cache on, no queuing. Write-back destaged when the head is idle (write_back=idle: \
               drives of the 2000s reorder and coalesce cached writes; the 1990s SCSI drives \
               DiskSim validated wrote each at once) [U]",
        values: &[
            ("cylinders", "89360"),
            ("surfaces", "4"),
            ("zone_count", "16"),
            ("spt_outer", "1179"),
            ("spt_inner", "570"),
            ("track_skew", "1.4ms"),
            ("cylinder_skew", "1.8ms"),
            ("seek_single", "0.8ms"),
            ("seek_avg", "8.5ms"),
            ("seek_full", "17ms"),
            ("overhead_read", "0.04ms"),
            ("overhead_write", "0.04ms"),
            ("bus_rate", "100"),
            ("segments", "16"),
            ("segment_size", "512k"),
            ("write_back", "idle"),
        ],
    },
];

/// The hard disk.
#[derive(Debug)]
pub struct Hdd {
    mechanics: Mechanics,
    cache: Cache,
    /// The base read overhead, which the read overheads default to (tests compare with it).
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the tests only"))]
    overhead_read: Duration,
    /// The base write overhead: flushes and discards pay it; the write overheads default to it.
    overhead_write: Duration,
    overheads: Overheads,
    bus_bytes_per_s: u64,
    /// The least interface time per sector (DiskSim's bulk sector transfer time).
    bulk_sector_ns: u64,
    /// `bus_time` for 0..BUS_TABLE_SECTORS sectors, to spare the division on every command.
    bus_ns_table: Vec<u64>,
    read_ahead: bool,
    read_ahead_to: ReadAheadTo,
    /// Sectors read ahead past a read (`read_ahead_max`); unset, a segment's worth (see
    /// `read_ahead_over_requested`).
    read_ahead_max_sectors: Option<u64>,
    /// DiskSim's "Read-ahead over requested" as its code reads it: see
    /// [`Hdd::read_ahead_limit`].
    read_ahead_over_requested: bool,
    /// Sectors read ahead after a read before it may be stopped (`read_ahead_min`).
    read_ahead_min_sectors: u64,
    read_ahead_on_idle_hit: bool,
    /// DiskSim's "Read any free blocks": see [`Hdd::free_sectors_before`].
    read_any_free: bool,
    /// DiskSim's "Write hit stop prefetch": see [`Hdd::write_stops_read_ahead`].
    write_hit_stop_read_ahead: bool,
    write_cache: bool,
    /// When buffered writes go to the media (`write_back`).
    write_back: WriteBack,
    depth: u32,
    queue_policy: QueuePolicy,
    /// The LBN policies' reference point: where the last command they chose starts (elevator,
    /// cycle) or ends (SSTF).
    policy_lbn: u64,
    /// The elevator's direction: ascending (DiskSim's ioqueue keeps it for SSTF too, where it
    /// weighs nothing).
    policy_ascending: bool,
    /// SSTF's tie-break: the next tie between equally distant commands goes downward.
    policy_tie_down: bool,
    /// The last command to finish was not a read (DiskSim starts as if after a read).
    last_was_write: bool,
    seek_description: String,
    /// The seek curve's mean over random pairs of distinct cylinders, for `describe`.

    /// Commands inside, by slot; `free_slots` lists the unused ones.
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    inside: u32,
    next_seq: u64,
    /// The next [`Slot::media_order`].
    next_media_order: u64,
    /// Commands whose controller overhead ends at the instant: `(ready, seq, slot)`.
    arrivals: BinaryHeap<Reverse<(Instant, u64, u32)>>,
    /// Commands whose finish time is known: `(finish, seq, slot)`.
    completions: BinaryHeap<Reverse<(Instant, u64, u32)>>,
    /// Slots waiting for the head, in the order they became ready.
    media_queue: Vec<u32>,
    /// Scratch for [`Hdd::serve_queue_from_stream`].
    serve_scratch: Vec<u32>,
    /// Writes waiting for buffer room, oldest first.
    space_queue: Vec<u32>,
    /// Flushes waiting for the buffer to be clean.
    flush_queue: Vec<u32>,

    /// Where the head is when it is not reading ahead.
    head: Track,
    /// The media access in progress (a command's or a destage), which nothing interrupts.
    job: Option<Job>,
    /// Read-ahead in progress.
    stream: Option<Stream>,
    /// Read-ahead to resume when the head is idle: `(segment, limit)`.
    stream_wanted: Option<(usize, u64)>,
    /// When the head next needs a decision (the end of a job or of a hold on read-ahead).
    wake: Option<Instant>,
    /// When the host interface is next free.
    bus_free_at: Instant,
    /// The sector after the last one the head accessed, for `seek_distance_sectors`.
    last_media_lbn: u64,

    busy_since: Option<Instant>,
    stats: DeviceStats,
    counters: Counters,
}

/// One zone of a disk, for tools and reports ([`Hdd::zone_summaries`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZoneSummary {
    /// Its first LBN.
    pub first_lbn: u64,
    /// LBNs it holds.
    pub lbn_count: u64,
    /// Its first cylinder.
    pub first_cylinder: u32,
    /// Cylinders it spans.
    pub cylinder_count: u32,
    /// Sectors on each track (spares and slipped sectors included).
    pub sectors_per_track: u32,
    /// Track skew in sectors.
    pub track_skew_sectors: u32,
    /// Cylinder skew in sectors.
    pub cylinder_skew_sectors: u32,
    /// The rate under the head within a track: sectors per track × 512 per revolution.
    pub media_bytes_per_s: f64,
    /// A long sequential read's rate: the media rate less the skews and the sectors that
    /// hold no data (`Hdd::sustained_read_bytes_per_s` for zone 0, before the interface).
    pub sustained_bytes_per_s: f64,
}

/// A command inside the drive.
#[derive(Clone, Copy, Debug)]
struct Slot {
    command: Command,
    seq: u64,
    state: State,
    /// For a write that goes to the media: when its data has crossed the bus.
    bus_end: Instant,
    /// When it joined the media queue, as a count: the queue is kept in cylinder order,
    /// and whatever serves queued commands in arrival order sorts by this.
    media_order: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    /// Paying the controller overhead.
    Overhead,
    /// Waiting for the head: `sector_count` sectors from `lbn`, into `segment` for a read that
    /// extends a cached prefix.
    Media {
        lbn: u64,
        sector_count: u64,
        segment: Option<usize>,
        target: Target,
    },
    /// A write waiting for buffer room.
    Space,
    /// A flush waiting for the buffer to be clean.
    Flush,
    /// Finish time known.
    Done,
}

/// A media access in progress.
#[derive(Clone, Copy, Debug)]
struct Job {
    end: Instant,
    kind: JobKind,
}

#[derive(Clone, Copy, Debug)]
enum JobKind {
    /// A read miss filling `segment` (if it got one) up to `end_lbn`; `rest` is the rest of
    /// its last track, where read-ahead continues without repositioning; `free_from` is the
    /// first sector it holds (before the requested ones with `read_any_free`);
    /// `request_start` is where the command's read starts.
    Read {
        segment: Option<usize>,
        end_lbn: u64,
        rest: Option<Piece>,
        free_from: u64,
        request_start: u64,
    },
    /// A write to the media for a command.
    Write,
    /// A destage of `segment`'s dirty range.
    Destage { segment: usize },
}

/// What the head does next.
#[derive(Clone, Copy, Debug)]
enum Choice {
    /// The command at this index of `media_queue`.
    Command(usize),
    /// Destage this segment.
    Destage(usize),
}

/// The controller's per-command overheads: by kind, by cache outcome and by the kind of the
/// command that finished last, `[after a read, after a write]`; and its completion overheads.
#[derive(Clone, Copy, Debug)]
struct Overheads {
    read_hit: [Duration; 2],
    read_miss: [Duration; 2],
    write_hit: [Duration; 2],
    write_miss: [Duration; 2],
    read_complete: Duration,
    write_complete: Duration,
}

impl Overheads {
    fn from_params(params: &Params) -> Overheads {
        let pair = |after_read: &str, after_write: &str, default: &str| {
            let one = |key: &str| params.time(if params.has(key) { key } else { default });
            [one(after_read), one(after_write)]
        };
        Overheads {
            read_hit: pair(
                "overhead_read_hit_after_read",
                "overhead_read_hit_after_write",
                "overhead_read",
            ),
            read_miss: pair(
                "overhead_read_miss_after_read",
                "overhead_read_miss_after_write",
                "overhead_read",
            ),
            write_hit: pair(
                "overhead_write_hit_after_read",
                "overhead_write_hit_after_write",
                "overhead_write",
            ),
            write_miss: pair(
                "overhead_write_miss_after_read",
                "overhead_write_miss_after_write",
                "overhead_write",
            ),
            read_complete: params.time("overhead_read_complete"),
            write_complete: params.time("overhead_write_complete"),
        }
    }

    /// Whether a read's overhead depends on its cache outcome (only then is it looked up).
    fn read_outcome_matters(&self) -> bool {
        self.read_hit != self.read_miss
    }

    /// The time from a command's finish to its completion reaching the host.
    fn complete(&self, op: Op) -> Duration {
        match op {
            Op::Read => self.read_complete,
            Op::Write => self.write_complete,
            Op::Flush | Op::Discard => Duration::ZERO,
        }
    }
}

/// Where read-ahead stops (DiskSim's "Buffer continuous read" 3 / 1 / 2 / 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadAheadTo {
    /// `read_ahead_max` sectors past the read (a segment by default).
    Segment,
    /// As `Segment`, but never past the end of the track holding the read's last sector.
    Track,
    /// As `Segment`, but never past the end of the cylinder holding the read's last sector.
    Cylinder,
    /// To the end of the track holding the sector after the read, and one track's worth
    /// more when the segment already held sectors before that track (a sequential stream).
    NextTrack,
}

/// When buffered writes go to the media (`write_back`; DiskSim's "Fast write level").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WriteBack {
    /// Destaged when the head is idle, or when room or a flush needs it.
    Idle,
    /// DiskSim's fast write level 2: on the media at once, as the head's next job.
    Immediate,
    /// DiskSim's fast write level 1: as `Immediate`, but a write joins a media write in
    /// progress only when no other command is pending.
    Limited,
}

/// The order the drive serves its queued commands in (DiskSim's ioqueue policies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QueuePolicy {
    /// Arrival order (DiskSim 1).
    Fcfs,
    /// Shortest positioning time first (DiskSim 8, SPTF_OPT).
    Sptf,
    /// Nearest starting LBN to where the last chosen command ended (DiskSim 4).
    SstfLbn,
    /// LOOK by LBN: on in the current direction, turning when nothing lies ahead (DiskSim 2).
    ElevatorLbn,
    /// C-LOOK by LBN: the lowest start at or above the last chosen start, else the lowest
    /// (DiskSim 3).
    CycleLbn,
}

/// Model-specific counters, reported in `DeviceStats::extra` in this order.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    cache_hits: u64,
    streamed_reads: u64,
    read_misses: u64,
    cached_writes: u64,
    media_writes: u64,
    cache_full_waits: u64,
    destages: u64,
    destaged_sectors: u64,
    read_ahead_sectors: u64,
    flushes: u64,
}

impl Hdd {
    /// A disk from checked parameters; values impossible together are refused naming the key
    /// to change.
    pub fn from_params(params: &Params) -> Result<Hdd, ParamError> {
        let rpm = params.integer("rpm") as u32;
        let cylinders = params.integer("cylinders") as u32;
        let surfaces = params.integer("surfaces") as u32;
        let zone_layout = zone_layout(params, cylinders)?;

        let seek = seek_curve(params, cylinders)?;
        let head_switch_ns = params.time("head_switch").as_nanos();
        let write_settle_ns = params.time("write_settle").as_nanos();
        let track_skew_ns = if params.has("track_skew") {
            params.time("track_skew").as_nanos()
        } else {
            head_switch_ns + write_settle_ns
        };
        let cylinder_skew_ns = if params.has("cylinder_skew") {
            params.time("cylinder_skew").as_nanos()
        } else {
            seek.seek_ns(1) + write_settle_ns
        };
        let (zones, layout) =
            zone_specs(params, &zone_layout, cylinders, rpm, track_skew_ns, cylinder_skew_ns)?;
        let geometry = Geometry::new(&zones, &layout, surfaces, rpm)
            .map_err(|refusal| params.impossible(refusal.key, refusal.problem))?;

        let segment_bytes = params.size("segment_size");
        if segment_bytes % SECTOR_SIZE_BYTES != 0 {
            return Err(params.impossible(
                "segment_size",
                format!(
                    "{segment_bytes} bytes is not a whole number of 512-byte sectors (expected \
                     a multiple of 512 in 512..=1g)"
                ),
            ));
        }
        let segment_count = params.integer("segments") as usize;
        let mut cache = Cache::new(segment_count, segment_bytes / SECTOR_SIZE_BYTES);
        if params.has("write_segments") {
            let write_segments = params.integer("write_segments") as usize;
            // As DiskSim, up to every segment; a one-segment buffer keeps its segment for
            // reads (see `Cache::new`).
            if write_segments > segment_count || segment_count < 2 {
                return Err(params.impossible(
                    "write_segments",
                    format!(
                        "{write_segments} write segments in a buffer of {segment_count} \
                         (expected 1..=segments, with segments >= 2)"
                    ),
                ));
            }
            cache.write_segments_max = write_segments;
        }
        cache.combine_writes = params.flag("combine_writes");
        cache.read_hits_on_writes = params.flag("read_hits_on_writes");
        cache.caching = params.flag("buffer_cache");
        // DiskSim refuses fast writes without caching; read-ahead into a buffer that serves
        // no reads is refused too rather than modelled (it could only cost head time).
        if !cache.caching && (params.flag("write_cache") || params.flag("read_ahead")) {
            return Err(params.impossible(
                "buffer_cache",
                "buffer_cache=0 needs write_cache=0 and read_ahead=0 (a buffer that caches \
                 nothing acknowledges no writes and keeps no read-ahead)",
            ));
        }
        let write_back = match params.text("write_back") {
            "immediate" => WriteBack::Immediate,
            "limited" => WriteBack::Limited,
            _ => WriteBack::Idle,
        };
        if write_back != WriteBack::Idle && !params.flag("write_cache") {
            return Err(params.impossible(
                "write_back",
                "write_back=immediate or limited needs write_cache=1 (without the write cache \
                 every write finishes on the media)",
            ));
        }
        if params.flag("write_segment_separate") {
            if segment_count < 2 {
                return Err(params.impossible(
                    "write_segment_separate",
                    "a separate write segment needs segments >= 2 (one for writes, the rest \
                     for reads)",
                ));
            }
            cache.separate_write_segment = true;
            cache.write_segments_max = 1;
        }
        let segment_sectors = segment_bytes / SECTOR_SIZE_BYTES;
        // DiskSim bounds both read-ahead limits by the segment size.
        let within_segment = |key: &'static str, default: u64| {
            if !params.has(key) {
                return Ok(default);
            }
            let sectors = params.integer(key) as u64;
            if sectors > segment_sectors {
                return Err(params.impossible(
                    key,
                    format!(
                        "{sectors} sectors is more than a segment holds (expected at most \
                         segment_size, {segment_sectors} sectors)"
                    ),
                ));
            }
            Ok(sectors)
        };
        let read_ahead_max_sectors = if params.has("read_ahead_max") {
            Some(within_segment("read_ahead_max", segment_sectors)?)
        } else {
            None
        };
        let read_ahead_min_sectors = within_segment("read_ahead_min", 0)?;
        let bus_bytes_per_s = (params.float("bus_rate") * 1e6).round() as u64;
        let bulk_sector_ns = params.time("bulk_sector_time").as_nanos();
        let depth = params.integer("depth") as u32;
        let seek_description = seek.to_string();
        Ok(Hdd {
            mechanics: Mechanics {
                geometry,
                seek_monotone: seek.is_monotone(cylinders.saturating_sub(1)),
                seek,
                head_switch_ns,
                write_settle_ns,
                last_target: TargetMemo::default(),
            },
            cache,
            overhead_read: params.time("overhead_read"),
            overhead_write: params.time("overhead_write"),
            overheads: Overheads::from_params(params),
            bus_bytes_per_s,
            bulk_sector_ns,
            bus_ns_table: (0..BUS_TABLE_SECTORS)
                .map(|n| bus_ns(n, bus_bytes_per_s, bulk_sector_ns))
                .collect(),
            read_ahead: params.flag("read_ahead"),
            read_ahead_to: match params.text("read_ahead_to") {
                "track" => ReadAheadTo::Track,
                "cylinder" => ReadAheadTo::Cylinder,
                "next-track" => ReadAheadTo::NextTrack,
                _ => ReadAheadTo::Segment,
            },
            read_ahead_max_sectors,
            read_ahead_over_requested: params.flag("read_ahead_over_requested"),
            read_ahead_min_sectors,
            read_ahead_on_idle_hit: params.flag("read_ahead_on_idle_hit"),
            read_any_free: params.flag("read_any_free"),
            write_hit_stop_read_ahead: params.flag("write_hit_stop_read_ahead"),
            write_cache: params.flag("write_cache"),
            write_back,
            depth,
            queue_policy: match params.text("queue_policy") {
                "fcfs" => QueuePolicy::Fcfs,
                "sstf-lbn" => QueuePolicy::SstfLbn,
                "elevator-lbn" => QueuePolicy::ElevatorLbn,
                "cycle-lbn" => QueuePolicy::CycleLbn,
                _ => QueuePolicy::Sptf,
            },
            policy_lbn: 0,
            policy_ascending: true,
            policy_tie_down: false,
            last_was_write: false,
            seek_description,
            slots: Vec::with_capacity(depth as usize),
            free_slots: Vec::with_capacity(depth as usize),
            inside: 0,
            next_seq: 0,
            next_media_order: 0,
            arrivals: BinaryHeap::with_capacity(depth as usize),
            completions: BinaryHeap::with_capacity(depth as usize),
            media_queue: Vec::with_capacity(depth as usize),
            serve_scratch: Vec::new(),
            space_queue: Vec::with_capacity(depth as usize),
            flush_queue: Vec::with_capacity(depth as usize),
            head: Track::default(),
            job: None,
            stream: None,
            stream_wanted: None,
            wake: None,
            bus_free_at: Instant::ZERO,
            last_media_lbn: 0,
            busy_since: None,
            stats: DeviceStats::default(),
            counters: Counters::default(),
        })
    }

    /// The sustained rate of a long sequential read from the outermost zone, in bytes per
    /// second: a cylinder's tracks, one revolution each, plus a track skew between surfaces and
    /// a cylinder skew to the next cylinder (the datasheet formula), capped by the host interface ([`Hdd::interface_bytes_per_s`]).
    /// Slipped sectors pass under the head without data, so the zone's data share
    /// (`Geometry::data_share`) scales the bytes; spares and the empty front lie outside a
    /// long transfer's path.
    /// A large sequential transfer runs within 5 % of it: the rest is the first positioning
    /// and the per-command overhead that read-ahead does not hide.
    pub fn sustained_read_bytes_per_s(&self) -> f64 {
        self.zone_summaries()[0].sustained_bytes_per_s.min(self.interface_bytes_per_s())
    }

    /// Each zone as tools and reports show it, outer first: where its LBNs are, its
    /// geometry, and its media rates (the interface not counted).
    pub fn zone_summaries(&self) -> Vec<ZoneSummary> {
        let geometry = &self.mechanics.geometry;
        let revolution_ns = 60e9 / geometry.rpm() as f64;
        let surfaces = f64::from(geometry.surfaces());
        geometry
            .zones()
            .iter()
            .map(|zone| {
                let spt = f64::from(zone.sectors_per_track);
                let sector_ns = revolution_ns / spt;
                // A cylinder's tracks, one revolution each, a track skew between surfaces and
                // a cylinder skew to the next cylinder (the datasheet formula); slipped and
                // spare sectors on the way pass under the head without data.
                let cylinder_ns = surfaces * revolution_ns
                    + (surfaces - 1.0) * f64::from(zone.track_skew_sectors) * sector_ns
                    + f64::from(zone.cylinder_skew_sectors) * sector_ns;
                let cylinder_bytes = surfaces * spt * 512.0 * geometry.data_share(zone);
                ZoneSummary {
                    first_lbn: zone.first_lbn,
                    lbn_count: zone.lbn_count,
                    first_cylinder: zone.first_cylinder,
                    cylinder_count: zone.cylinder_count,
                    sectors_per_track: zone.sectors_per_track,
                    track_skew_sectors: zone.track_skew_sectors,
                    cylinder_skew_sectors: zone.cylinder_skew_sectors,
                    media_bytes_per_s: spt * 512.0 / revolution_ns * 1e9,
                    sustained_bytes_per_s: cylinder_bytes / cylinder_ns * 1e9,
                }
            })
            .collect()
    }

    /// The host interface's rate in bytes per second: `bus_rate`, or one sector per
    /// `bulk_sector_time` when that is slower (DiskSim takes the slower per-sector time).
    pub fn interface_bytes_per_s(&self) -> f64 {
        let bus = self.bus_bytes_per_s as f64;
        if self.bulk_sector_ns == 0 {
            return bus;
        }
        bus.min(SECTOR_SIZE_BYTES as f64 * 1e9 / self.bulk_sector_ns as f64)
    }

    /// The seek curve's mean over random pairs of distinct cylinders, ms (the datasheet
    /// definition, devices.md §1.6).
    pub fn average_seek_ms(&self) -> f64 {
        self.mechanics.seek.average_ms(self.mechanics.geometry.cylinders())
    }

    /// The seek time for a move of `distance_cylinders`, for tests and tools.
    pub fn seek_time(&self, distance_cylinders: u32) -> Duration {
        Duration::from_nanos(self.mechanics.seek.seek_ns(distance_cylinders))
    }

    /// Time for `sector_count` sectors on the host interface, rounded up.
    fn bus_time(&self, sector_count: u64) -> Duration {
        match self.bus_ns_table.get(sector_count as usize) {
            Some(&nanos) => Duration::from_nanos(nanos),
            None => Duration::from_nanos(bus_ns(
                sector_count,
                self.bus_bytes_per_s,
                self.bulk_sector_ns,
            )),
        }
    }

    /// Reserves the bus from `at` for `sector_count` sectors; returns when the transfer ends.
    fn bus_transfer(&mut self, at: Instant, sector_count: u64) -> Instant {
        let end = at.max(self.bus_free_at) + self.bus_time(sector_count);
        self.bus_free_at = end;
        end
    }

    /// Records `slot`'s finish time.
    /// The completion reaches the host after the controller's completion overhead for its
    /// kind.
    fn finish_at(&mut self, slot: u32, at: Instant) {
        let entry = &mut self.slots[slot as usize];
        entry.state = State::Done;
        let at = at + self.overheads.complete(entry.command.op);
        self.completions.push(Reverse((at, entry.seq, slot)));
    }

    /// The controller overhead `command` pays on arrival at `now`: DiskSim's per-command
    /// overhead for its kind, its cache outcome and the kind of the command that finished
    /// last. A read is a hit when the buffer holds any of it from its first sector or the
    /// read-ahead in progress is bringing that in; a write when it will be acknowledged from
    /// the buffer (write cache on, not FUA, small enough for the write segments).
    fn command_overhead(&mut self, command: &Command, now: Instant) -> Duration {
        let after = usize::from(self.last_was_write);
        // Each arm reads the one figure it needs (copying all of them cost more than the rest).
        match command.op {
            Op::Read if self.overheads.read_outcome_matters() => {
                if self.read_is_buffered(command.start.0, command.end().0, now) {
                    self.overheads.read_hit[after]
                } else {
                    self.overheads.read_miss[after]
                }
            }
            Op::Read => self.overheads.read_miss[after],
            Op::Write => {
                if self.write_is_cached(command) {
                    self.overheads.write_hit[after]
                } else {
                    self.overheads.write_miss[after]
                }
            }
            Op::Flush | Op::Discard => self.overhead_write,
        }
    }

    /// Whether the buffer holds `start..` from its first sector at `now` (all of it or a
    /// prefix) or the read-ahead in progress is reading towards it.
    fn read_is_buffered(&mut self, start: u64, end: u64, now: Instant) -> bool {
        if let Some(stream) = &self.stream
            && self.cache.segments[stream.segment].start <= start
            && start <= stream.limit
        {
            self.sync_stream(now);
            if self.stream.is_some() {
                return true;
            }
        }
        self.cache.lookup(start, end) != Lookup::Miss
    }

    /// Whether a write is acknowledged once its data is in the buffer.
    fn write_is_cached(&self, command: &Command) -> bool {
        let fits = u64::from(command.sector_count)
            <= self.cache.segment_sectors * self.cache.write_segments_max as u64;
        self.write_cache && !command.fua && fits
    }

    fn next_internal(&self) -> Option<Instant> {
        let arrival = self.arrivals.peek().map(|Reverse((at, _, _))| *at);
        match (arrival, self.wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Processes internal events up to `limit`, or, with `None`, up to the earliest known
    /// finish time: the latter is only valid when the drive is full, because then no command
    /// can arrive before a completion and everything up to it is already decided.
    ///
    /// Most calls (every submit, every advance for a completion alone) find nothing due: that
    /// test is inlined, and the loop with the whole step behind it is entered only when there
    /// is work.
    #[inline]
    fn run(&mut self, limit: Option<Instant>) {
        let Some(at) = self.next_internal() else { return };
        let due = match limit {
            Some(limit) => at <= limit,
            None => self.completions.peek().is_none_or(|Reverse((done, _, _))| at <= *done),
        };
        if due {
            self.run_due(limit);
        }
    }

    /// [`Hdd::run`] once something is due.
    #[inline(never)]
    fn run_due(&mut self, limit: Option<Instant>) {
        while let Some(at) = self.next_internal() {
            let bound = match limit {
                Some(limit) => limit,
                None => self.completions.peek().map_or(Instant::MAX, |Reverse((at, _, _))| *at),
            };
            if at > bound {
                break;
            }
            self.step(at);
        }
    }

    /// Runs everything due at `at`: the end of the media job, commands done with their
    /// overhead, then the head's next decision.
    fn step(&mut self, at: Instant) {
        if self.wake == Some(at) {
            self.wake = None;
        }
        if let Some(job) = self.job
            && job.end <= at
        {
            self.job = None;
            self.finish_job(job, at);
        }
        while let Some(&Reverse((ready, _, slot))) = self.arrivals.peek() {
            if ready > at {
                break;
            }
            self.arrivals.pop();
            self.classify(slot, at);
        }
        self.dispatch(at);
    }

    fn finish_job(&mut self, job: Job, at: Instant) {
        match job.kind {
            JobKind::Read { segment, end_lbn, rest, free_from, request_start } => {
                if let Some(segment) = segment {
                    self.cache.segments[segment].filling = false;
                    self.cache.extend(segment, end_lbn);
                    let held = &mut self.cache.segments[segment];
                    held.start = held.start.min(free_from);
                    self.cache.touch(segment);
                    let limit = self.read_ahead_limit(segment, request_start, end_lbn);
                    if self.read_ahead && end_lbn < limit {
                        let piece = match rest {
                            Some(piece) => piece,
                            None => self.mechanics.piece(self.head, at, end_lbn, false),
                        };
                        self.start_stream(segment, limit, piece);
                        self.hold_for_minimum(end_lbn);
                    }
                }
            }
            JobKind::Write => {}
            JobKind::Destage { segment } => {
                let held = &mut self.cache.segments[segment];
                held.destaging = false;
                // Without read hits on write data, written data leaves the buffer once it is
                // on the media (unless newer write data joined it meanwhile).
                if !self.cache.read_hits_on_writes && !held.needs_destage() {
                    held.start = held.end;
                }
                self.cache.recount();
                self.retry_space(at);
                if !self.flush_queue.is_empty() && self.cache.write_segment_count() == 0 {
                    for index in 0..self.flush_queue.len() {
                        let slot = self.flush_queue[index];
                        self.finish_at(slot, at);
                    }
                    self.flush_queue.clear();
                }
            }
        }
    }

    /// Decides what a command whose overhead ended at `at` needs.
    fn classify(&mut self, slot: u32, at: Instant) {
        let command = self.slots[slot as usize].command;
        let (start, end) = (command.start.0, command.end().0);
        let sector_count = u64::from(command.sector_count);
        match command.op {
            Op::Read | Op::Write if sector_count == 0 => self.finish_at(slot, at),
            Op::Read => {
                self.stats.sectors_read += sector_count;
                if let Err(lookup) = self.read_from_buffer(slot, at) {
                    let (lbn, segment) = match lookup {
                        Lookup::Prefix(segment) => {
                            (self.cache.segments[segment].end, Some(segment))
                        }
                        _ => (start, None),
                    };
                    let target = self.mechanics.target(lbn);
                    let state = State::Media { lbn, sector_count: end - lbn, segment, target };
                    self.slots[slot as usize].state = state;
                    self.enqueue_media(slot);
                }
            }
            Op::Write => {
                self.stats.sectors_written += sector_count;
                if self.write_hit_stop_read_ahead {
                    self.write_stops_read_ahead(start, end, at);
                }
                if self.write_is_cached(&command) {
                    if self.write_back != WriteBack::Idle && !self.fast_write_may_enter(slot, at) {
                        // DiskSim disconnects it: its data crosses the bus once it has the
                        // head (see `start_job`).
                        let target = self.mechanics.target(start);
                        let state =
                            State::Media { lbn: start, sector_count, segment: None, target };
                        self.slots[slot as usize].state = state;
                        self.enqueue_media(slot);
                    } else if self.place_write(start, end, at) {
                        self.counters.cached_writes += 1;
                        let done = self.bus_transfer(at, sector_count);
                        self.finish_at(slot, done);
                    } else {
                        self.counters.cache_full_waits += 1;
                        self.slots[slot as usize].state = State::Space;
                        self.space_queue.push(slot);
                    }
                } else {
                    let bus_end = self.bus_transfer(at, sector_count);
                    let target = self.mechanics.target(start);
                    let entry = &mut self.slots[slot as usize];
                    entry.bus_end = bus_end;
                    entry.state = State::Media { lbn: start, sector_count, segment: None, target };
                    self.enqueue_media(slot);
                }
            }
            Op::Flush => {
                self.counters.flushes += 1;
                if self.cache.write_segment_count() == 0 {
                    self.finish_at(slot, at);
                } else {
                    self.slots[slot as usize].state = State::Flush;
                    self.flush_queue.push(slot);
                }
            }
            Op::Discard => self.finish_at(slot, at),
        }
    }

    /// Serves the read in `slot` from the buffer if it can: a hit, or sectors the read-ahead
    /// is about to bring in. Otherwise says what the buffer holds of it.
    fn read_from_buffer(&mut self, slot: u32, at: Instant) -> Result<(), Lookup> {
        let command = self.slots[slot as usize].command;
        let (start, end) = (command.start.0, command.end().0);
        let sector_count = u64::from(command.sector_count);
        // Only a read at or past the start of the read-ahead's segment can involve it.
        if let Some(stream) = &self.stream
            && self.cache.segments[stream.segment].start <= start
            && start <= stream.limit
        {
            self.sync_stream(at);
        }
        let lookup = self.cache.lookup(start, end);
        if let Lookup::Hit(segment) = lookup {
            self.counters.cache_hits += 1;
            self.cache.touch(segment);
            self.read_ahead_after_hit(segment, start, end);
            let done = self.bus_transfer(at, sector_count);
            self.finish_at(slot, done);
            return Ok(());
        }
        let Some(ready) = self.stream_serves(start, end) else { return Err(lookup) };
        self.counters.streamed_reads += 1;
        // The data leaves on the bus as it arrives: the end is bounded by the bus and by the
        // last sector's arrival.
        let bus_end = at.max(self.bus_free_at) + self.bus_time(sector_count);
        let done = bus_end.max(ready + self.bus_time(1));
        self.bus_free_at = done;
        self.finish_at(slot, done);
        Ok(())
    }

    /// Queued reads that the read-ahead now covers (it started when an earlier read in the
    /// queue finished) leave the queue and take their data from it, as a drive serves
    /// queued sequential reads from its buffer.
    fn serve_queue_from_stream(&mut self, at: Instant) {
        let Some(stream) = self.stream else { return };
        let (low, high) = (self.cache.segments[stream.segment].start, stream.limit);
        // Only reads starting in the stream's reach; others keep their queue place without a
        // buffer lookup. Served in arrival order, since each takes the bus in turn.
        let mut candidates = std::mem::take(&mut self.serve_scratch);
        candidates.clear();
        candidates.extend(self.media_queue.iter().copied().filter(|&slot| {
            let command = self.slots[slot as usize].command;
            command.op == Op::Read && (low..=high).contains(&command.start.0)
        }));
        if !candidates.is_empty() {
            candidates.sort_unstable_by_key(|&slot| self.slots[slot as usize].media_order);
            candidates.retain(|&slot| self.read_from_buffer(slot, at).is_ok());
            // A served slot has left the media state; keep the others in place.
            let slots = &self.slots;
            self.media_queue
                .retain(|&slot| matches!(slots[slot as usize].state, State::Media { .. }));
        }
        self.serve_scratch = candidates;
    }

    /// If the read-ahead in progress will bring in `start..end` (it is filling the segment
    /// `start` falls in, or is about to reach it), extends it to cover the read and returns
    /// when the last sector arrives.
    fn stream_serves(&mut self, start: u64, end: u64) -> Option<Instant> {
        let stream = self.stream.as_ref()?;
        let segment = &self.cache.segments[stream.segment];
        if !(segment.start <= start && start <= stream.limit) {
            return None;
        }
        let index = stream.segment;
        let wanted = self.read_ahead_limit(index, start, end);
        let stream = self.stream.as_mut().expect("checked above");
        stream.limit = stream.limit.max(wanted);
        let ready = stream.time_of(&self.mechanics, end);
        stream.hold_until = stream.hold_until.max(ready);
        self.hold_for_minimum(end);
        self.cache.touch(index);
        Some(ready)
    }

    /// Where read-ahead into `segment` after a read of `start..end` stops (DiskSim's
    /// `disk_buffer_get_max_readahead`, with "Buffer continuous read" 1 and 2's refusal to
    /// switch heads or seek as a bound at the track's or cylinder's end). Never before `end`.
    /// Without `read_ahead_max` the distance is a segment's worth past the read, or, with
    /// `read_ahead_over_requested`, what the segment holds beside the read (a segment from its
    /// start), or `read_ahead_min` past it when that leaves less than the minimum.
    fn read_ahead_limit(&self, segment: usize, start: u64, end: u64) -> u64 {
        let capacity = self.mechanics.geometry.capacity_sectors();
        let segment_sectors = self.cache.segment_sectors;
        let ahead = match self.read_ahead_max_sectors {
            Some(max) => end + max,
            None if self.read_ahead_over_requested => {
                let size = end - start;
                if size >= segment_sectors || segment_sectors - size < self.read_ahead_min_sectors {
                    end + self.read_ahead_min_sectors
                } else {
                    start + segment_sectors
                }
            }
            None => end + segment_sectors,
        }
        .min(capacity);
        match self.read_ahead_to {
            ReadAheadTo::Segment => ahead,
            ReadAheadTo::Track => ahead.min(self.track_end(end.saturating_sub(1))),
            ReadAheadTo::Cylinder => {
                // Track by track while the cylinder stays the same.
                let cylinder = self.mechanics.target(end.saturating_sub(1)).location.track.cylinder;
                let mut limit = self.track_end(end.saturating_sub(1));
                while limit < ahead
                    && self.mechanics.target(limit).location.track.cylinder == cylinder
                {
                    limit = self.track_end(limit);
                }
                ahead.min(limit)
            }
            ReadAheadTo::NextTrack => {
                if end >= capacity {
                    return capacity;
                }
                let location = self.mechanics.target(end).location;
                let track_start = end - u64::from(location.sector_in_track);
                let track_end = self.track_end(end);
                let stream = self.cache.segments[segment].start < track_start;
                // DiskSim adds the sectors per track of the track its range starts on.
                let one_more = if stream {
                    let first = self.cache.segments[segment].start;
                    u64::from(self.mechanics.target(first).location.sectors_per_track)
                } else {
                    0
                };
                (track_end + one_more).min(capacity)
            }
        }
    }

    /// The sector after the last one of the track holding `lbn`.
    fn track_end(&self, lbn: u64) -> u64 {
        let location = self.mechanics.target(lbn).location;
        lbn - u64::from(location.sector_in_track) + u64::from(location.sectors_per_track)
    }

    /// With `read_ahead_min`: the read-ahead in progress may not be stopped before it has read
    /// that many sectors past `end` (DiskSim's minimum read-ahead block).
    fn hold_for_minimum(&mut self, end: u64) {
        if self.read_ahead_min_sectors == 0 {
            return;
        }
        let Some(stream) = self.stream.as_mut() else { return };
        let minimum = (end + self.read_ahead_min_sectors).min(stream.limit);
        if minimum > stream.piece.lbn {
            let until = stream.time_of(&self.mechanics, minimum);
            stream.hold_until = stream.hold_until.max(until);
        }
    }

    /// After a hit in `segment` up to `end`: keep its read-ahead a segment ahead.
    fn read_ahead_after_hit(&mut self, segment: usize, start: u64, end: u64) {
        if !self.read_ahead || !self.cache.segments[segment].reusable() {
            return;
        }
        let wanted = self.read_ahead_limit(segment, start, end);
        match &mut self.stream {
            Some(stream) if stream.segment == segment => {
                stream.limit = stream.limit.max(wanted);
                self.hold_for_minimum(end);
            }
            Some(_) => {}
            None => {
                // DiskSim's "Read-ahead on idle hit": only then does a hit restart it.
                if self.read_ahead_on_idle_hit && self.cache.segments[segment].end < wanted {
                    self.stream_wanted = Some((segment, wanted));
                }
            }
        }
    }

    /// With `write_hit_stop_read_ahead`: a write overlapping what the read-ahead's segment
    /// holds (DiskSim's test: its first sector inside, or its end inside) ends the read-ahead
    /// now, or, when reads are waiting on it, as soon as they have their sectors.
    fn write_stops_read_ahead(&mut self, start: u64, end: u64, at: Instant) {
        self.sync_stream(at);
        let Some(stream) = self.stream else { return };
        let held = &self.cache.segments[stream.segment];
        let overlaps =
            (held.start <= start && start < held.end) || (held.start < end && end <= held.end);
        if !overlaps {
            return;
        }
        if stream.hold_until <= at {
            self.stop_stream(at);
            return;
        }
        let mut ahead = stream;
        let read_to = match ahead.sync(&self.mechanics, stream.hold_until) {
            Progress::Running { read_to } | Progress::Finished { read_to, .. } => read_to,
        };
        // Never below the track piece it is reading (the reads' sectors are past it).
        if let Some(stream) = self.stream.as_mut() {
            stream.limit = stream.limit.min(read_to.max(stream.piece.lbn));
        }
    }

    /// With fast writes (`write_back` other than `idle`): whether the write in `slot`, its
    /// overhead done at `at`, may cross the bus into the buffer now (DiskSim's
    /// `disk_write_arrive`: when nothing holds the head, or when the media access in
    /// progress is a fast write it appends to, `disk_buffer_stopable_access`). Otherwise it
    /// waits for the head like a write miss.
    fn fast_write_may_enter(&self, slot: u32, at: Instant) -> bool {
        let command = self.slots[slot as usize].command;
        let start = command.start.0;
        // Commands pending besides this one: DiskSim's ioqueue holds a command from its
        // arrival, so those still paying their overhead count too.
        let mut others = self.slots.iter().enumerate().filter(|&(index, entry)| {
            index != slot as usize
                && matches!(entry.state, State::Overhead | State::Media { .. } | State::Space)
        });
        match self.job {
            None => {
                let holding = self.stream.is_some_and(|stream| stream.hold_until > at);
                self.media_queue.is_empty() && !self.cache.destage_pending() && !holding
            }
            Some(Job { kind: JobKind::Destage { segment }, .. }) => {
                let held = &self.cache.segments[segment];
                let appends = self.cache.combine_writes
                    && start == held.end
                    && command.end().0 - held.start <= self.cache.segment_sectors;
                // Level 1 lets it join only as the one pending command; level 2 when the
                // queue would serve it next, which an appending write always is (it needs
                // no positioning and lies at LBN distance 0) except under FCFS behind an
                // older command.
                let next = match self.write_back {
                    WriteBack::Limited => others.next().is_none(),
                    _ if self.queue_policy == QueuePolicy::Fcfs => {
                        let seq = self.slots[slot as usize].seq;
                        others.all(|(_, entry)| entry.seq > seq)
                    }
                    _ => true,
                };
                appends && next
            }
            Some(_) => false,
        }
    }

    /// Puts a write in the buffer, taking the read-ahead's segment only as a last resort.
    fn place_write(&mut self, start: u64, end: u64, at: Instant) -> bool {
        let streaming = self.stream.map(|stream| stream.segment);
        if self.cache.place_write(start, end, streaming) {
            self.forget_wanted_if_reused();
            return true;
        }
        if let Some(stream) = self.stream
            && stream.hold_until <= at
            && self.cache.write_segment_count() < self.cache.write_segments_max
        {
            self.stop_stream(at);
            if self.cache.place_write(start, end, None) {
                self.forget_wanted_if_reused();
                return true;
            }
        }
        false
    }

    fn forget_wanted_if_reused(&mut self) {
        if let Some((segment, _)) = self.stream_wanted
            && !self.cache.segments[segment].reusable()
        {
            self.stream_wanted = None;
        }
    }

    /// Gives room to waiting writes, oldest first, as far as it goes.
    fn retry_space(&mut self, at: Instant) {
        let mut placed = 0;
        while placed < self.space_queue.len() {
            let slot = self.space_queue[placed];
            let command = self.slots[slot as usize].command;
            if !self.place_write(command.start.0, command.end().0, at) {
                break;
            }
            self.counters.cached_writes += 1;
            let done = self.bus_transfer(at, u64::from(command.sector_count));
            self.finish_at(slot, done);
            placed += 1;
        }
        self.space_queue.drain(..placed);
    }

    /// Brings the read-ahead up to `at`: records what it has read, and ends it if it reached
    /// its limit.
    fn sync_stream(&mut self, at: Instant) {
        let Some(stream) = &mut self.stream else { return };
        let progress = stream.sync(&self.mechanics, at);
        let (read_to, finished) = match progress {
            Progress::Running { read_to } => (read_to, false),
            Progress::Finished { read_to, .. } => (read_to, true),
        };
        let segment = stream.segment;
        let track = stream.piece.track;
        let held = self.cache.segments[segment].end;
        if read_to > held {
            self.counters.read_ahead_sectors += read_to - held;
            self.cache.extend(segment, read_to);
        }
        if finished {
            self.head = track;
            self.last_media_lbn = read_to;
            self.stream = None;
        }
    }

    /// The read fence: stops read-ahead at `at`, keeping what it has read.
    fn stop_stream(&mut self, at: Instant) {
        self.sync_stream(at);
        if let Some(stream) = self.stream.take() {
            let piece = stream.piece;
            // Stopped mid-switch, the head is taken to be where it came from.
            self.head = if at >= piece.on_track { piece.track } else { piece.from };
            self.last_media_lbn = self.cache.segments[stream.segment].end;
        }
    }

    /// Starts read-ahead into `segment` up to `limit` with `piece`, which starts at the
    /// segment's end.
    fn start_stream(&mut self, segment: usize, limit: u64, piece: Piece) {
        debug_assert_eq!(piece.lbn, self.cache.segments[segment].end);
        self.stats.seek_distance_sectors += piece.lbn.abs_diff(self.last_media_lbn);
        let hold_until = piece.on_track;
        self.stream = Some(Stream { segment, limit, hold_until, piece });
        self.stream_wanted = None;
    }

    /// The head's decision at `at`: a queued command or a destage (shortest positioning time
    /// first), else read-ahead, else an idle-time destage.
    fn dispatch(&mut self, at: Instant) {
        if self.job.is_some() {
            return;
        }
        if !self.space_queue.is_empty() {
            self.retry_space(at);
        }
        if self.stream.is_some() && !self.media_queue.is_empty() {
            self.serve_queue_from_stream(at);
        }
        let pressure = !self.space_queue.is_empty() || !self.flush_queue.is_empty();
        let destage_ready = self.cache.destage_pending();
        // Fast writes go to the media before anything else.
        let fast = self.write_back != WriteBack::Idle;
        let urgent = !self.media_queue.is_empty() || ((pressure || fast) && destage_ready);
        if let Some(stream) = &self.stream {
            if stream.hold_until > at {
                // Reads are waiting on the read-ahead: it may not be stopped before then.
                if urgent {
                    self.wake = Some(stream.hold_until);
                }
                return;
            }
            if urgent {
                self.stop_stream(at);
            } else {
                self.sync_stream(at);
                if let Some(stream) = &self.stream {
                    // Read-ahead goes on; an idle-time destage waits for it to finish.
                    if destage_ready {
                        self.wake = Some(stream.time_of(&self.mechanics, stream.limit));
                    }
                    return;
                }
            }
        }
        if urgent {
            let fast_destage = fast.then(|| self.first_dirty_segment()).flatten();
            let choice = match fast_destage {
                Some(segment) => Choice::Destage(segment),
                None => self.pick(at, pressure && destage_ready),
            };
            self.start_job(choice, at);
            return;
        }
        if let Some((segment, limit)) = self.stream_wanted.take() {
            let held = self.cache.segments[segment];
            if held.reusable() && held.end < limit {
                let piece = self.mechanics.piece(self.head, at, held.end, false);
                self.start_stream(segment, limit, piece);
                if destage_ready && let Some(stream) = &self.stream {
                    self.wake = Some(stream.time_of(&self.mechanics, limit));
                }
                return;
            }
        }
        if destage_ready {
            let choice = self.pick(at, true);
            self.start_job(choice, at);
        }
    }

    /// The dirty segment waiting for a destage with the lowest first dirty sector: with fast
    /// writes the one to write next (a write spread over several segments goes out in LBN
    /// order).
    fn first_dirty_segment(&self) -> Option<usize> {
        let segments = self.cache.segments.iter().enumerate();
        let dirty = segments.filter(|(_, segment)| segment.needs_destage());
        dirty.min_by_key(|(_, segment)| segment.dirty_start).map(|(index, _)| index)
    }

    /// The head's next job under the queue policy. SPTF weighs queued commands and dirty
    /// segments together ([`Hdd::choose`]); the other policies order only the commands, so
    /// with `destages` (a write waits for room, a flush for a clean buffer, or nothing is
    /// queued) they destage first, the nearest dirty segment by positioning time.
    fn pick(&mut self, at: Instant, destages: bool) -> Choice {
        if self.queue_policy == QueuePolicy::Sptf {
            return self.choose(at, destages);
        }
        if destages {
            let queue = std::mem::take(&mut self.media_queue);
            let choice = self.choose(at, true);
            self.media_queue = queue;
            return choice;
        }
        Choice::Command(self.choose_by_lbn())
    }

    /// The index in `media_queue` of the command FCFS or an LBN policy serves next, updating
    /// the policy's reference point and direction as DiskSim's ioqueue does. Commands are
    /// placed by their first LBN; among equal LBNs the one that queued first goes first.
    fn choose_by_lbn(&mut self) -> usize {
        let key = |hdd: &Hdd, index: usize| {
            let entry = &hdd.slots[hdd.media_queue[index] as usize];
            (entry.command.start.0, entry.media_order)
        };
        let indices = 0..self.media_queue.len();
        let last = self.policy_lbn;
        // The lowest start at or above the reference, and the highest below it.
        let top = indices.clone().filter(|&i| key(self, i).0 >= last).min_by_key(|&i| key(self, i));
        let bottom = indices
            .clone()
            .filter(|&i| key(self, i).0 < last)
            .min_by_key(|&i| (Reverse(key(self, i).0), key(self, i).1));
        let chosen = match self.queue_policy {
            QueuePolicy::Fcfs => {
                indices.min_by_key(|&i| key(self, i).1).expect("a command is queued")
            }
            QueuePolicy::CycleLbn => {
                top.or_else(|| indices.min_by_key(|&i| key(self, i))).expect("a command is queued")
            }
            QueuePolicy::SstfLbn | QueuePolicy::ElevatorLbn => {
                // The nearer of the two by LBN distance; the elevator adds the whole disk to
                // the distance behind it, so it turns only when nothing lies ahead. Exact ties
                // alternate between up and down.
                let penalty = if self.queue_policy == QueuePolicy::ElevatorLbn {
                    self.mechanics.geometry.capacity_sectors()
                } else {
                    0
                };
                match (top, bottom) {
                    (Some(top), None) => top,
                    (None, Some(bottom)) => bottom,
                    (Some(top), Some(bottom)) => {
                        let mut up = key(self, top).0 - last;
                        let mut down = last - key(self, bottom).0;
                        if self.policy_ascending {
                            down += penalty;
                        } else if up > 0 {
                            up += penalty;
                        }
                        let choice = if up < down {
                            top
                        } else if up > down || self.policy_tie_down {
                            bottom
                        } else {
                            top
                        };
                        if up == down {
                            self.policy_tie_down = !self.policy_tie_down;
                        }
                        choice
                    }
                    (None, None) => unreachable!("a command is queued"),
                }
            }
            QueuePolicy::Sptf => unreachable!("SPTF chooses by positioning time"),
        };
        let start = key(self, chosen).0;
        if start != last {
            self.policy_ascending = start > last;
        }
        let entry = &self.slots[self.media_queue[chosen] as usize];
        self.policy_lbn = match self.queue_policy {
            QueuePolicy::SstfLbn => start + u64::from(entry.command.sector_count),
            _ => start,
        };
        chosen
    }

    /// Shortest positioning time first among the queued commands (and the dirty segments
    /// when `destages`), oldest first among equals; a lone candidate is taken as it is.
    fn choose(&self, at: Instant, destages: bool) -> Choice {
        if self.media_queue.len() == 1 && !destages {
            return Choice::Command(0);
        }
        let mechanics = &self.mechanics;
        let head = self.head;
        let angle_at_units = mechanics.geometry.angle_units(at);
        // The best `((cost, tie-break), choice)` so far. A candidate is costed exactly only
        // when it can match the best cost (ties go to the lower tie-break).
        let mut best: Option<((u64, u64), Choice)> = None;
        let limit = |best: &Option<((u64, u64), Choice)>| best.map_or(u64::MAX, |((ns, _), _)| ns);
        let consider = |best: &mut Option<((u64, u64), Choice)>,
                        switch_ns: u64,
                        target: Target,
                        tie: u64,
                        choice: Choice| {
            let Some(cost) =
                mechanics.positioning_within_ns(switch_ns, angle_at_units, target, limit(best))
            else {
                return;
            };
            if best.is_none_or(|(best_key, _)| (cost, tie) < best_key) {
                *best = Some(((cost, tie), choice));
            }
        };
        if destages {
            for (index, segment) in self.cache.segments.iter().enumerate() {
                if segment.needs_destage() {
                    let target = mechanics.target(segment.dirty_start);
                    let switch_ns = mechanics.switch_ns(head, target.location.track, true);
                    // After any command at equal cost.
                    consider(
                        &mut best,
                        switch_ns,
                        target,
                        u64::MAX - index as u64,
                        Choice::Destage(index),
                    );
                }
            }
        }
        let media = |index: usize| {
            let entry = &self.slots[self.media_queue[index] as usize];
            let State::Media { target, .. } = entry.state else {
                unreachable!("media queue holds a slot in state {:?}", entry.state)
            };
            (target, entry.command.op == Op::Write, entry.seq)
        };
        if !mechanics.seek_monotone {
            for index in 0..self.media_queue.len() {
                let (target, write, seq) = media(index);
                let switch_ns = mechanics.switch_ns(head, target.location.track, write);
                consider(&mut best, switch_ns, target, seq, Choice::Command(index));
            }
            return best.expect("choose is called with at least one candidate").1;
        }
        // The queue is in cylinder order: scan outward from the head on both sides, nearer
        // side first, and close a side once the seek to it alone costs more than the best
        // so far. Every command left unscanned costs strictly more, so the choice is the
        // full scan's.
        let split =
            self.media_queue.partition_point(|&slot| self.cylinder_of(slot) < head.cylinder);
        let (mut down, mut up) = (split, split);
        let (mut down_open, mut up_open) = (down > 0, up < self.media_queue.len());
        while down_open || up_open {
            let down_distance =
                down_open.then(|| head.cylinder - self.cylinder_of(self.media_queue[down - 1]));
            let up_distance =
                up_open.then(|| self.cylinder_of(self.media_queue[up]) - head.cylinder);
            let take_down = match (down_distance, up_distance) {
                (Some(d), Some(u)) => d <= u,
                (Some(_), None) => true,
                _ => false,
            };
            let (index, distance) = if take_down {
                (down - 1, down_distance.expect("open"))
            } else {
                (up, up_distance.expect("open"))
            };
            let seek_ns = mechanics.seek.seek_ns(distance);
            if seek_ns > limit(&best) {
                if take_down {
                    down_open = false;
                } else {
                    up_open = false;
                }
                continue;
            }
            let (target, write, seq) = media(index);
            let switch_ns =
                mechanics.switch_with_seek_ns(head, target.location.track, write, seek_ns);
            consider(&mut best, switch_ns, target, seq, Choice::Command(index));
            if take_down {
                down -= 1;
                down_open = down > 0;
            } else {
                up += 1;
                up_open = up < self.media_queue.len();
            }
        }
        best.expect("choose is called with at least one candidate").1
    }

    /// The cylinder a queued media command starts on.
    fn cylinder_of(&self, slot: u32) -> u32 {
        match self.slots[slot as usize].state {
            State::Media { target, .. } => target.location.track.cylinder,
            ref state => unreachable!("media queue holds a slot in state {state:?}"),
        }
    }

    /// Queues a media command, keeping the queue in cylinder order (ties in arrival order)
    /// for [`Hdd::choose`]'s pruned scan.
    fn enqueue_media(&mut self, slot: u32) {
        self.slots[slot as usize].media_order = self.next_media_order;
        self.next_media_order += 1;
        let cylinder = self.cylinder_of(slot);
        let index =
            self.media_queue.partition_point(|&queued| self.cylinder_of(queued) <= cylinder);
        self.media_queue.insert(index, slot);
    }

    fn start_job(&mut self, choice: Choice, at: Instant) {
        if let Choice::Command(index) = choice
            && self.write_back != WriteBack::Idle
        {
            let slot = self.media_queue[index];
            let command = self.slots[slot as usize].command;
            if command.op == Op::Write && self.write_is_cached(&command) {
                // A fast write that waited for the head: its data crosses the bus now, it
                // completes when that is done, and its media write starts at once (the
                // positioning overlaps the transfer, as DiskSim's does).
                let sector_count = u64::from(command.sector_count);
                let bus_end = self.bus_transfer(at, sector_count);
                if self.place_write(command.start.0, command.end().0, at) {
                    self.media_queue.remove(index);
                    self.counters.cached_writes += 1;
                    self.finish_at(slot, bus_end);
                    let segment = self.first_dirty_segment();
                    let segment = segment.expect("a placed fast write leaves a dirty segment");
                    return self.start_job(Choice::Destage(segment), at);
                }
                // No room (every write segment busy with read data): the mechanical path.
                self.slots[slot as usize].bus_end = bus_end;
            }
        }
        let (target, sector_count, write, command) = match choice {
            Choice::Command(index) => {
                let slot = self.media_queue.remove(index);
                let entry = self.slots[slot as usize];
                let State::Media { sector_count, segment, target, .. } = entry.state else {
                    unreachable!("media queue holds a slot in state {:?}", entry.state)
                };
                (target, sector_count, entry.command.op == Op::Write, Some((slot, segment)))
            }
            Choice::Destage(index) => {
                let segment = &self.cache.segments[index];
                let target = self.mechanics.target(segment.dirty_start);
                (target, segment.dirty_end - segment.dirty_start, true, None)
            }
        };
        let lbn = target.lbn;
        let access = self.mechanics.access(self.head, at, target, sector_count, write);
        let kind = match (choice, command) {
            (Choice::Command(_), Some((slot, _))) if write => {
                self.counters.media_writes += 1;
                let bus_end = self.slots[slot as usize].bus_end;
                self.finish_at(slot, access.end.max(bus_end));
                JobKind::Write
            }
            (Choice::Command(_), Some((slot, prefix))) => {
                self.counters.read_misses += 1;
                let segment = self.read_segment(prefix, lbn);
                // The host transfer overlaps the media transfer: it can start once the first
                // sector is in the buffer (at once when a cached prefix comes first: DiskSim
                // reconnects at a read water mark of one sector) and ends no earlier than
                // just after the last one.
                let command = self.slots[slot as usize].command;
                // The access's first piece, planned again: when the head reaches the track
                // and when the first sector is in.
                let first = self.mechanics.piece_to(self.head, at, target, false);
                let first_ready = if command.start.0 < lbn { at } else { first.time_of(1) };
                let free_from = match segment {
                    Some(index)
                        if self.read_any_free && {
                            let held = &self.cache.segments[index];
                            held.start == held.end
                        } =>
                    {
                        self.free_sectors_before(&first, target, sector_count)
                    }
                    _ => lbn,
                };
                let bus_start = self.bus_free_at.max(first_ready);
                let done = (bus_start + self.bus_time(command.sector_count.into()))
                    .max(access.end + self.bus_time(1));
                self.bus_free_at = done;
                self.finish_at(slot, done);
                let rest = access.last.continuation(access.last_done);
                JobKind::Read {
                    segment,
                    end_lbn: lbn + sector_count,
                    rest,
                    free_from,
                    request_start: command.start.0,
                }
            }
            (Choice::Destage(index), _) => {
                let segment = &mut self.cache.segments[index];
                segment.dirty_start = segment.dirty_end;
                segment.destaging = true;
                self.cache.recount();
                self.counters.destages += 1;
                self.counters.destaged_sectors += sector_count;
                JobKind::Destage { segment: index }
            }
            (Choice::Command(_), None) => unreachable!("a command choice carries its slot"),
        };
        self.stats.seek_distance_sectors += lbn.abs_diff(self.last_media_lbn);
        self.last_media_lbn = lbn + sector_count;
        self.head = access.track();
        self.job = Some(Job { end: access.end, kind });
        self.wake = Some(access.end);
    }

    /// With `read_any_free`: the first LBN a read miss into an empty segment holds, counting
    /// the sectors of the target's track that pass under the head between its arrival on the
    /// track (`first.on_track`) and the target sector (DiskSim's "Read any free blocks": the
    /// segment may take blocks before the request while it is empty), as long as the
    /// segment can hold them with the request.
    fn free_sectors_before(&self, first: &Piece, target: Target, sector_count: u64) -> u64 {
        let location = target.location;
        let wait_units = (first.transfer_start().as_nanos() - first.on_track.as_nanos())
            * self.mechanics.geometry.rpm();
        let sector_units = UNITS_PER_REVOLUTION / u64::from(location.sectors_per_track);
        let room = self.cache.segment_sectors.saturating_sub(sector_count);
        // Only whole sectors, and only those of this track before the target (the ones
        // physically before sector 0 of the track are logically after the request).
        let passed = (wait_units / sector_units).min(u64::from(location.sector_in_track));
        target.lbn - passed.min(room)
    }

    /// The segment a read miss of `lbn..` fills: the one whose cached prefix it extends, if
    /// that still holds, else the least recently used reusable one (none if all hold write
    /// data: the read is then not cached).
    fn read_segment(&mut self, prefix: Option<usize>, lbn: u64) -> Option<usize> {
        let extends = prefix.filter(|&index| {
            let segment = &self.cache.segments[index];
            segment.reusable() && segment.end == lbn && segment.start < lbn
        });
        let index = match extends {
            Some(index) => index,
            None => {
                let index = self.cache.least_recent(None)?;
                self.cache.segments[index] = Segment {
                    start: lbn,
                    end: lbn,
                    dirty_start: lbn,
                    dirty_end: lbn,
                    ..Default::default()
                };
                index
            }
        };
        if self.stream_wanted.is_some_and(|(segment, _)| segment == index) {
            self.stream_wanted = None;
        }
        self.cache.segments[index].filling = true;
        self.cache.touch(index);
        Some(index)
    }
}

impl DeviceModel for Hdd {
    fn describe(&self) -> String {
        let geometry = &self.mechanics.geometry;
        let zones = geometry.zones();
        format!(
            "hdd: {} rpm, {} cylinders x {} surfaces, {} zones of {}->{} sectors/track, {}, \
             seek {} (average {:.2} ms), {} x {} buffer, write cache {}, depth {}",
            geometry.rpm(),
            geometry.cylinders(),
            geometry.surfaces(),
            zones.len(),
            zones[0].sectors_per_track,
            zones[zones.len() - 1].sectors_per_track,
            elevator_core::format_size(geometry.capacity_sectors() * SECTOR_SIZE_BYTES),
            self.seek_description,
            // Computed here, not at build: it walks every cylinder, and an array builds
            // many drives but describes them once.
            self.mechanics.seek.average_ms(geometry.cylinders()),
            self.cache.segments.len(),
            elevator_core::format_size(self.cache.segment_sectors * SECTOR_SIZE_BYTES),
            match (self.write_cache, self.write_back) {
                (false, _) => "off",
                (true, WriteBack::Idle) => "on",
                (true, WriteBack::Immediate) => "on (written at once)",
                (true, WriteBack::Limited) => "on (written at once, limited)",
            },
            self.depth
        )
    }

    fn capacity_sectors(&self) -> u64 {
        self.mechanics.geometry.capacity_sectors()
    }

    fn queue_depth(&self) -> u32 {
        self.depth
    }

    fn rotational(&self) -> bool {
        true
    }

    fn submit(&mut self, now: Instant, command: Command) {
        assert!(self.inside < self.depth, "hdd: submit beyond depth {}", self.depth);
        assert!(
            command.end().0 <= self.capacity_sectors(),
            "hdd: {command:?} ends past the capacity {}",
            self.capacity_sectors()
        );
        // Internal events before `now` happen before the command arrives.
        self.run(Some(now));
        let slot = match self.free_slots.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Slot {
                    command,
                    seq: 0,
                    state: State::Free,
                    bus_end: Instant::ZERO,
                    media_order: 0,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.slots[slot as usize] =
            Slot { command, seq, state: State::Overhead, bus_end: Instant::ZERO, media_order: 0 };
        let overhead = self.command_overhead(&command, now);
        self.arrivals.push(Reverse((now + overhead, seq, slot)));
        self.inside += 1;
        self.busy_since.get_or_insert(now);
        if self.inside == self.depth {
            self.run(None);
        }
    }

    fn next_event(&self) -> Option<Instant> {
        let completion = self.completions.peek().map(|Reverse((at, _, _))| *at);
        match (completion, self.next_internal()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: Instant, finished: &mut Vec<CommandId>) {
        self.run(Some(now));
        while let Some(&Reverse((at, _, slot))) = self.completions.peek() {
            if at > now {
                break;
            }
            self.completions.pop();
            let entry = &mut self.slots[slot as usize];
            debug_assert_eq!(entry.state, State::Done);
            entry.state = State::Free;
            self.last_was_write = entry.command.op != Op::Read;
            finished.push(entry.command.id);
            self.free_slots.push(slot);
            self.stats.commands += 1;
            self.inside -= 1;
            if self.inside == 0
                && let Some(since) = self.busy_since.take()
            {
                self.stats.busy_ns += at.saturating_since(since).as_nanos();
            }
        }
        if self.inside == self.depth {
            self.run(None);
        }
    }

    fn stats(&self) -> DeviceStats {
        let c = &self.counters;
        let mut stats = self.stats.clone();
        stats.extra = vec![
            ("cache_hits", c.cache_hits),
            ("streamed_reads", c.streamed_reads),
            ("read_misses", c.read_misses),
            ("cached_writes", c.cached_writes),
            ("media_writes", c.media_writes),
            ("mechanical_accesses", c.read_misses + c.media_writes + c.destages),
            ("cache_full_waits", c.cache_full_waits),
            ("destages", c.destages),
            ("destaged_sectors", c.destaged_sectors),
            ("read_ahead_sectors", c.read_ahead_sectors),
            ("flushes", c.flushes),
        ];
        stats
    }
}

/// Transfers up to this many sectors have their bus time precomputed.
const BUS_TABLE_SECTORS: u64 = 257;

/// Nanoseconds for `sector_count` sectors at `bytes_per_s` (rounded up), or at
/// `bulk_sector_ns` per sector if that is slower: DiskSim's `disk_get_blktranstime` takes the
/// larger of the bus's time for a sector and the drive's bulk sector transfer time.
fn bus_ns(sector_count: u64, bytes_per_s: u64, bulk_sector_ns: u64) -> u64 {
    let bytes = u128::from(sector_count) * u128::from(SECTOR_SIZE_BYTES);
    let at_rate = (bytes * 1_000_000_000).div_ceil(u128::from(bytes_per_s)) as u64;
    at_rate.max(sector_count * bulk_sector_ns)
}

/// DiskSim's sparing schemes 0..=10 by name, in DiskSim's order (the `sparing` key's
/// choices; the DiskSim reader maps "Sparing scheme used" N to the Nth).
pub const SPARING_NAMES: &[&str] = &[
    "none",
    "tracks",
    "per-cylinder",
    "per-track",
    "per-cylinder-slip-to-end",
    "per-cylinder-front",
    "per-cylinder-front-slip-to-end",
    "at-end",
    "per-range",
    "per-zone",
    "per-zone-slip-to-end",
];

/// The zones as `(first cylinder, cylinders, sectors per track)`, outer first, from `zones`
/// (counts or explicit ranges) or from `zone_count`, `spt_outer` and `spt_inner`.
fn zone_layout(params: &Params, cylinders: u32) -> Result<Vec<(u32, u32, u32)>, ParamError> {
    if params.has("zones") {
        let text = params.text("zones");
        let expected = "CYLINDERS@SECTORS_PER_TRACK zones separated by `/`, outer first, e.g. \
                        3000@1242/3000@1200, or inclusive cylinder ranges FIRST-LAST@SPT, \
                        ascending and not overlapping, e.g. 0-846@254/848-1643@245; all \
                        entries in one form; cylinders >= 1, sectors per track 1..=100000";
        let mut zones: Vec<(u32, u32, u32)> = Vec::new();
        let mut ranges = None;
        for zone in text.split('/').map(str::trim) {
            let bad = || {
                params.impossible("zones", format!("`{zone}` is not a zone (expected {expected})"))
            };
            let (cylinder_part, spt) = zone.split_once('@').ok_or_else(bad)?;
            let spt = spt.trim().parse::<u32>().ok().filter(|spt| (1..=100_000).contains(spt));
            let spt = spt.ok_or_else(bad)?;
            let is_range = cylinder_part.contains('-');
            if *ranges.get_or_insert(is_range) != is_range {
                return Err(params.impossible(
                    "zones",
                    format!("`{zone}` mixes counts and ranges (expected {expected})"),
                ));
            }
            if let Some((first, last)) = cylinder_part.split_once('-') {
                let first = first.trim().parse::<u32>().map_err(|_| bad())?;
                let last = last.trim().parse::<u32>().map_err(|_| bad())?;
                if last < first {
                    return Err(bad());
                }
                if let Some(&(previous_first, previous_count, _)) = zones.last()
                    && u64::from(first) < u64::from(previous_first) + u64::from(previous_count)
                {
                    return Err(params.impossible(
                        "zones",
                        format!(
                            "`{zone}` overlaps or precedes the zone before it (ranges must be \
                             ascending and not overlap)"
                        ),
                    ));
                }
                if last >= cylinders {
                    return Err(params.impossible(
                        "zones",
                        format!(
                            "`{zone}` reaches past the disk's cylinders={cylinders} (cylinders \
                             0..={})",
                            cylinders.saturating_sub(1)
                        ),
                    ));
                }
                zones.push((first, last - first + 1, spt));
            } else {
                let count = cylinder_part.trim().parse::<u32>().ok().filter(|&count| count > 0);
                let count = count.ok_or_else(bad)?;
                let first = zones.last().map_or(0, |&(first, count, _)| first + count);
                zones.push((first, count, spt));
            }
        }
        if ranges == Some(false) {
            let total: u64 = zones.iter().map(|&(_, count, _)| u64::from(count)).sum();
            if total != u64::from(cylinders) {
                return Err(params.impossible(
                    "zones",
                    format!(
                        "the zones cover {total} cylinders but the disk has \
                         cylinders={cylinders}; their cylinder counts must add up to it"
                    ),
                ));
            }
        }
        return Ok(zones);
    }
    let zone_count = params.integer("zone_count") as u32;
    if zone_count > cylinders {
        return Err(params.impossible(
            "zone_count",
            format!("{zone_count} zones cannot share {cylinders} cylinders (1..={cylinders})"),
        ));
    }
    let outer = params.integer("spt_outer") as f64;
    let inner = params.integer("spt_inner") as f64;
    let (base, extra) = (cylinders / zone_count, cylinders % zone_count);
    let mut first = 0;
    Ok((0..zone_count)
        .map(|index| {
            let count = base + u32::from(index < extra);
            let fraction =
                if zone_count == 1 { 0.0 } else { f64::from(index) / f64::from(zone_count - 1) };
            let spt = (outer + (inner - outer) * fraction).round() as u32;
            first += count;
            (first - count, count, spt)
        })
        .collect())
}

/// A zone list key's entries, one per zone; `None` when the key is unset.
fn zone_list<'a>(
    params: &'a Params,
    key: &'static str,
    zone_count: usize,
    expected: &str,
) -> Result<Option<Vec<&'a str>>, ParamError> {
    if !params.has(key) {
        return Ok(None);
    }
    let entries: Vec<&str> = params.text(key).split('/').map(str::trim).collect();
    if entries.len() != zone_count {
        return Err(params.impossible(
            key,
            format!(
                "{} entries for {zone_count} zones (expected one per zone, outer first, \
                 separated by `/`: {expected})",
                entries.len()
            ),
        ));
    }
    Ok(Some(entries))
}

/// A sector count that may be a decimal, truncated to whole sectors as DiskSim's
/// `layout_g1_zone` truncates skews and offsets given in sectors (`(int)d`).
fn whole_sectors(text: &str) -> Option<u32> {
    let value: f64 = text.trim().parse().ok()?;
    (value.is_finite() && (0.0..=1e6).contains(&value)).then_some(value as u32)
}

/// A per-zone sparse list (`slips`, `defects`): `ZONE:ITEM+ITEM/ZONE:...`, each zone at most
/// once; the items of each zone parsed by `item`.
fn zone_items<T>(
    params: &Params,
    key: &'static str,
    zone_count: usize,
    expected: &str,
    item: impl Fn(&str) -> Option<T>,
) -> Result<Vec<Vec<T>>, ParamError> {
    let mut lists: Vec<Option<Vec<T>>> = (0..zone_count).map(|_| None).collect();
    if params.has(key) {
        for entry in params.text(key).split('/').map(str::trim) {
            let bad = |why: &str| {
                params.impossible(key, format!("`{entry}`: {why} (expected {expected})"))
            };
            let (zone, items) = entry.split_once(':').ok_or_else(|| bad("no ZONE:"))?;
            let zone: usize = zone.trim().parse().map_err(|_| bad("not a zone index"))?;
            let slot = lists
                .get_mut(zone)
                .ok_or_else(|| bad(&format!("zone {zone} does not exist (0..{zone_count})")))?;
            if slot.is_some() {
                return Err(bad(&format!("zone {zone} is listed twice")));
            }
            let parsed: Option<Vec<T>> = items.split('+').map(|text| item(text.trim())).collect();
            *slot = Some(parsed.ok_or_else(|| bad("an item is malformed"))?);
        }
    }
    Ok(lists.into_iter().map(Option::unwrap_or_default).collect())
}

/// The zones and the layout choices, from the zone layout and the layout keys. Skews come
/// from `zone_skews` in sectors, or else from the skew times converted per zone to whole
/// sectors, rounded up so that the switch fits in the gap: ⌈t·spt·rpm / 60·10⁹⌉.
fn zone_specs(
    params: &Params,
    zone_layout: &[(u32, u32, u32)],
    cylinders: u32,
    rpm: u32,
    track_skew_ns: u64,
    cylinder_skew_ns: u64,
) -> Result<(Vec<ZoneSpec>, LayoutSpec), ParamError> {
    let count = zone_layout.len();
    let skew_sectors = |nanos: u64, sectors_per_track: u32| -> u32 {
        let units = u128::from(nanos) * u128::from(sectors_per_track) * u128::from(rpm);
        units.div_ceil(u128::from(UNITS_PER_REVOLUTION)).min(u128::from(u32::MAX)) as u32
    };
    let skew_expected = "TRACK:CYLINDER skews in sectors >= 0, e.g. 97:133/96:132";
    let skews = zone_list(params, "zone_skews", count, skew_expected)?;
    let offset_expected = "OFFSET:EMPTY in sectors >= 0, e.g. 0:1632/14:0";
    let offsets = zone_list(params, "zone_offsets", count, offset_expected)?;
    let spares_expected = "a spare count >= 0 per zone, e.g. 1270/1225";
    let spares = zone_list(params, "zone_spares", count, spares_expected)?;
    let slips = zone_items(
        params,
        "slips",
        count,
        "ZONE:N+N+.../ZONE:N+..., zone index from 0, numbers >= 0 ascending, e.g. 0:468+526/1:231",
        |text| text.parse::<u64>().ok(),
    )?;
    let defects = zone_items(
        params,
        "defects",
        count,
        "ZONE:DEFECT>REPLACEMENT+.../..., zone index from 0, e.g. 0:100>9000",
        |text| {
            let (defect, replacement) = text.split_once('>')?;
            Some((defect.trim().parse::<u64>().ok()?, replacement.trim().parse::<u64>().ok()?))
        },
    )?;
    let mut zones = Vec::with_capacity(count);
    for (index, &(first_cylinder, cylinder_count, sectors_per_track)) in
        zone_layout.iter().enumerate()
    {
        let (track_skew_sectors, cylinder_skew_sectors) = match &skews {
            Some(entries) => {
                let entry = entries[index];
                entry
                    .split_once(':')
                    .and_then(|(track, cylinder)| {
                        Some((whole_sectors(track)?, whole_sectors(cylinder)?))
                    })
                    .ok_or_else(|| {
                        params.impossible(
                            "zone_skews",
                            format!("zone {index}: `{entry}` is not {skew_expected}"),
                        )
                    })?
            }
            None => (
                skew_sectors(track_skew_ns, sectors_per_track),
                skew_sectors(cylinder_skew_ns, sectors_per_track),
            ),
        };
        let (first_block_offset_sectors, front_empty_sectors) = match &offsets {
            Some(entries) => {
                let entry = entries[index];
                entry
                    .split_once(':')
                    .and_then(|(offset, empty)| {
                        Some((whole_sectors(offset)?, empty.trim().parse::<u64>().ok()?))
                    })
                    .ok_or_else(|| {
                        params.impossible(
                            "zone_offsets",
                            format!("zone {index}: `{entry}` is not {offset_expected}"),
                        )
                    })?
            }
            None => (0, 0),
        };
        let spares = match &spares {
            Some(entries) => entries[index].parse::<u64>().map_err(|_| {
                params.impossible(
                    "zone_spares",
                    format!("zone {index}: `{}` is not {spares_expected}", entries[index]),
                )
            })?,
            None => 0,
        };
        zones.push(ZoneSpec {
            first_cylinder,
            cylinder_count,
            sectors_per_track,
            track_skew_sectors,
            cylinder_skew_sectors,
            first_block_offset_sectors,
            front_empty_sectors,
            spares,
            slips: slips[index].clone(),
            defects: defects[index].clone(),
        });
    }
    let mapping = match params.text("mapping") {
        "serpentine" => Mapping::Serpentine,
        "serpentine-global" => Mapping::SerpentineGlobal,
        _ => Mapping::Conventional,
    };
    let sparing = match params.text("sparing") {
        "none" => Sparing::None,
        "tracks" => Sparing::Tracks,
        "per-track" => Sparing::PerTrack,
        "at-end" => Sparing::AtEnd,
        "per-range" => Sparing::PerRange,
        "per-zone" => Sparing::PerZone,
        "per-zone-slip-to-end" => Sparing::PerZoneSlipToEnd,
        other => {
            return Err(params.impossible(
                "sparing",
                format!(
                    "DiskSim's sparing scheme `{other}` is not implemented (implemented: none, \
                     tracks, per-track, at-end, per-range, per-zone, per-zone-slip-to-end)"
                ),
            ));
        }
    };
    let block_count = params.has("block_count").then(|| params.integer("block_count") as u64);
    let range_cylinders = params.integer("sparing_range") as u32;
    Ok((zones, LayoutSpec { cylinders, mapping, sparing, block_count, range_cylinders }))
}

/// The seek curve the keys describe.
fn seek_curve(params: &Params, cylinders: u32) -> Result<SeekCurve, ParamError> {
    let longest = cylinders.saturating_sub(1);
    let (key, curve) = match params.text("seek") {
        "hpl" => {
            if !params.has("hpl") {
                return Err(params.impossible(
                    "hpl",
                    "seek=hpl needs hpl=V1/V2/V3/V4/V5/V6, e.g. 300/3.81/0.33/7.75/0.0059/-1",
                ));
            }
            let curve = SeekCurve::parse_hpl(params.text("hpl"))
                .map_err(|problem| params.impossible("hpl", problem))?;
            ("hpl", curve)
        }
        "table" => {
            if !params.has("seek_table") {
                return Err(params.impossible(
                    "seek_table",
                    "seek=table needs seek_table=DISTANCE:MS/..., e.g. 1:0.8/100:2.1/5000:9",
                ));
            }
            let curve = SeekCurve::parse_table(params.text("seek_table"))
                .map_err(|problem| params.impossible("seek_table", problem))?;
            ("seek_table", curve)
        }
        _ => {
            let ms = |key| params.time(key).as_nanos() as f64 / 1e6;
            let (single, average, full) = (ms("seek_single"), ms("seek_avg"), ms("seek_full"));
            if !(single <= average && average <= full) {
                return Err(params.impossible(
                    "seek_avg",
                    format!(
                        "needs seek_single <= seek_avg <= seek_full, got {single} ms, \
                         {average} ms, {full} ms"
                    ),
                ));
            }
            let curve = SeekCurve::fit_curve(single, average, full, cylinders)
                .map_err(|problem| params.impossible("seek_avg", problem))?;
            ("seek_avg", curve)
        }
    };
    let (key, curve) = if params.has("seek_first_ten") {
        let curve = curve
            .with_first_ten(params.text("seek_first_ten"))
            .map_err(|problem| params.impossible("seek_first_ten", problem))?;
        ("seek_first_ten", curve)
    } else {
        (key, curve)
    };
    curve.check(longest).map_err(|problem| params.impossible(key, problem))?;
    Ok(curve)
}
