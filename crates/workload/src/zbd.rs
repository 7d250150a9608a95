//! fio's `zonemode=zbd`: I/O on a zoned block device, with fio's own view of each zone's
//! write pointer (fio-compat.md §2; fio's `zbd.c` and HOWTO "zonemode", read to learn the
//! behaviour, not copied).
//!
//! fio reports the device's zones when a job starts and from then on keeps each sequential
//! zone's write pointer itself, shared by every job using the device. Then, per I/O:
//!
//! * **writes** go to a *write target zone*: the zone the job's offset falls in, if it is one
//!   already or there is room for one more (`max_open_zones`, or the device's own limit when
//!   that is 0); otherwise one of the current ones, picked by where the offset lies in the
//!   job's range. The write starts at that zone's write pointer and is shortened (to a whole
//!   number of the smallest block) not to pass the zone's capacity. A zone with less than the
//!   smallest block left is **reset** first (the write then starts at the zone's start), after
//!   the job's outstanding I/O completed (fio quiesces before its synchronous reset). A zone
//!   that fills stops being a write target.
//! * `zone_reset_threshold` and `zone_reset_frequency`: once the written bytes of the job's
//!   zones reach `threshold × the job's size`, one write in every `1 / frequency` resets its
//!   zone first.
//! * **reads** with `read_beyond_wp=0` (the default) only read written data: a read whose zone
//!   holds less than the smallest block moves to the nearest zone that does (nothing left: the
//!   job ends), a random read lands inside the written part, and no read passes the write
//!   pointer. `read_beyond_wp=1` reads anywhere.
//! * Conventional zones take I/O as any disk, except that a write may not cross into a
//!   sequential zone.
//! * The job's region is aligned to zones when it holds sequential zones (a writer's start
//!   rounds up and end down; a reader's end down); `direct=0` writers are refused, as are a
//!   `zonesize` other than the device's and a `max_open_zones` above the device's limit.
//!
//! # Deviations from fio
//!
//! * fio's per-zone mutex is modelled as a zone lock in this shared state: an issuer's reads
//!   (with `read_beyond_wp=0`) and writes of a sequential zone hold it until they complete (it
//!   is recursive, so one issuer may have several in flight); another issuer that draws that
//!   zone waits (after its own I/O completed, as fio's `io_u_quiesce`) until it is released,
//!   then **draws a new offset** where fio retries the same one. A waiting issuer is re-polled
//!   after 1 s at the latest even if no release wakes it.
//! * A zone reset is a discard of the zone's first sector, counted among the job's I/Os (512
//!   bytes, as a trim) where fio's `BLKRESETZONE` ioctl is not an I/O (fio reports resets
//!   separately: "N zone resets", not shown here). A passthrough engine's reset (fio calls
//!   the engine's `reset_wp`: libzbc's RESET WRITE POINTER, io_uring_cmd's and xnvme's NVMe
//!   Zone Management Send) is that discard flagged passthrough, past the scheduler like the
//!   engine's writes.
//! * A zone leaves the write targets when a write that fills it is issued (fio: when it
//!   completes).
//! * fio's handling of zone remainders (`write_zone_remainder`, zone finish when a remainder is
//!   smaller than the block) is not modelled: a zone with a remainder smaller than the block is
//!   reset like a full one.
//! * `zonemode=zbd` on a regular file (fio emulates zones of `zonesize` there) is refused.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::{Target, TargetZones};

/// A job's `zonemode=zbd` options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ZbdOptions {
    /// `max_open_zones` (0: the device's limit).
    pub(crate) max_open_zones: u32,
    /// `zone_reset_threshold`: fraction of the job's size written before resets start.
    pub(crate) reset_threshold: f64,
    /// `zone_reset_frequency`: fraction of writes that reset their zone past the threshold.
    pub(crate) reset_frequency: f64,
    /// `read_beyond_wp`.
    pub(crate) read_beyond_wp: bool,
}

/// fio's view of one zoned device, shared by every job that uses it.
#[derive(Debug)]
pub(crate) struct ZbdDevice {
    zone_bytes: u64,
    capacity_bytes: u64,
    conventional: usize,
    /// Each zone's write pointer, in bytes from the device's start.
    write_pointer: Vec<u64>,
    /// Write target zones, in the order they became one.
    write_zones: Vec<usize>,
    max_write_zones: usize,
    /// Bytes written in sequential zones (fio's `wp_valid_data_bytes`).
    valid_bytes: u64,
    /// Writes past the threshold left until the next frequency-driven reset (set at the
    /// first such write).
    writes_to_reset: Option<u64>,
    /// Zone resets issued.
    pub(crate) resets: u64,
    /// fio's zone locks: the issuer (index in its phase) with I/O of the zone in flight or
    /// decided, and how many.
    owners: Vec<Option<(usize, u32)>>,
    /// Issuers waiting for a zone lock, woken (posted) when one is released.
    waiters: Vec<usize>,
}

/// A zone another issuer holds: the I/O must wait (fio blocks on the zone's mutex).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ZoneBusy;

/// Shared handle.
pub(crate) type SharedZbd = Arc<Mutex<ZbdDevice>>;

/// fio's views of the zoned devices a job file uses, by target index: one per device, shared
/// by every job and clone (fio's `zbd_info` belongs to the file, not the job).
#[derive(Clone, Debug, Default)]
pub(crate) struct ZbdRegistry(Arc<Mutex<BTreeMap<usize, SharedZbd>>>);

impl PartialEq for ZbdRegistry {
    fn eq(&self, other: &ZbdRegistry) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl ZbdRegistry {
    /// The view of target `index`, made at its first use; errors say why the job cannot use
    /// it (not zoned, `zonesize` or `max_open_zones` at odds with the device).
    pub(crate) fn device(
        &self,
        index: usize,
        target: &Target,
        options: &ZbdOptions,
        zone_size_bytes: u64,
    ) -> Result<SharedZbd, String> {
        let Some(zones) = target.zones else {
            return Err(format!(
                "zonemode=zbd needs a zoned device; `{}` is not (a zoned preset: smr-hm-2016, \
                 zns-2020)",
                target.name
            ));
        };
        if zone_size_bytes != 0 && zone_size_bytes != zones.zone_size_bytes {
            return Err(format!(
                "zonesize {zone_size_bytes} does not match the device zone size {} (fio \
                 refuses it)",
                zones.zone_size_bytes
            ));
        }
        let mut devices = self.0.lock().expect("zbd registry");
        if let Some(device) = devices.get(&index) {
            return Ok(Arc::clone(device));
        }
        let device = ZbdDevice::new(zones, target.capacity_bytes, options.max_open_zones)?;
        let shared = Arc::new(Mutex::new(device));
        devices.insert(index, Arc::clone(&shared));
        Ok(shared)
    }
}

/// What a write becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ZbdWrite {
    /// Write `size` bytes at `offset`.
    Write { offset: u64, size: u64 },
    /// Reset the zone starting at `zone_start` first, then write.
    ResetThenWrite { zone_start: u64, offset: u64, size: u64 },
}

impl ZbdDevice {
    /// fio's view after its zone report of a freshly built device (every zone empty), with
    /// `max_open_zones` from the job (fio refuses more than the device allows).
    pub(crate) fn new(
        zones: TargetZones,
        capacity_bytes: u64,
        max_open_zones: u32,
    ) -> Result<ZbdDevice, String> {
        let count = (capacity_bytes / zones.zone_size_bytes) as usize;
        let device_limit = zones.max_open_zones;
        if device_limit > 0 && max_open_zones > device_limit {
            return Err(format!(
                "max_open_zones={max_open_zones} is larger than the device's {device_limit} (fio \
                 refuses it)"
            ));
        }
        let max_write_zones = if max_open_zones > 0 { max_open_zones } else { device_limit };
        Ok(ZbdDevice {
            zone_bytes: zones.zone_size_bytes,
            capacity_bytes: zones.zone_capacity_bytes,
            conventional: zones.conventional_zones as usize,
            write_pointer: (0..count as u64).map(|zone| zone * zones.zone_size_bytes).collect(),
            write_zones: Vec::new(),
            max_write_zones: max_write_zones as usize,
            valid_bytes: 0,
            writes_to_reset: None,
            resets: 0,
            owners: vec![None; count],
            waiters: Vec::new(),
        })
    }

    /// A job's region `start..start + length` aligned to zones, as fio's
    /// `zbd_zone_align_file_sizes` does for a region holding sequential zones: a writing job's
    /// start rounds up and end down to zone boundaries, a reading job's end down.
    pub(crate) fn align(
        &self,
        start: u64,
        length: u64,
        writes: bool,
    ) -> Result<(u64, u64), String> {
        let end = start + length;
        if end <= self.conventional as u64 * self.zone_bytes {
            return Ok((start, length));
        }
        let new_start = if writes { start.next_multiple_of(self.zone_bytes) } else { start };
        let new_end = end - end % self.zone_bytes;
        if new_end <= new_start {
            return Err("io_size must be at least one zone (fio's rule)".into());
        }
        Ok((new_start, new_end - new_start))
    }

    fn start(&self, zone: usize) -> u64 {
        zone as u64 * self.zone_bytes
    }

    fn written(&self, zone: usize) -> u64 {
        self.write_pointer[zone] - self.start(zone)
    }

    fn remainder(&self, zone: usize) -> u64 {
        self.start(zone) + self.capacity_bytes - self.write_pointer[zone]
    }

    /// Whether `issuer` may take `zone`'s lock (free, or its own: fio's zone mutexes are
    /// recursive).
    fn lockable(&self, zone: usize, issuer: usize) -> bool {
        self.owners[zone].is_none_or(|(owner, _)| owner == issuer)
    }

    /// Takes `zone`'s lock for `count` more I/Os of `issuer`.
    fn lock(&mut self, zone: usize, issuer: usize, count: u32) {
        let held = self.owners[zone].map_or(0, |(_, held)| held);
        self.owners[zone] = Some((issuer, held + count));
    }

    /// One I/O of `zone` finished: releases its lock when it was the last, moving the issuers
    /// that waited into `woken`.
    pub(crate) fn unlock(&mut self, zone: usize, woken: &mut Vec<usize>) {
        if let Some((owner, held)) = self.owners[zone] {
            self.owners[zone] = (held > 1).then_some((owner, held - 1));
            if held == 1 {
                woken.append(&mut self.waiters);
            }
        }
    }

    /// `issuer` waits for a zone lock.
    pub(crate) fn wait(&mut self, issuer: usize) {
        if !self.waiters.contains(&issuer) {
            self.waiters.push(issuer);
        }
    }

    /// How many zones at the start are conventional.
    pub(crate) fn conventional_zones(&self) -> usize {
        self.conventional
    }

    /// The zone holding `offset`.
    pub(crate) fn zone_of(&self, offset: u64) -> usize {
        (offset / self.zone_bytes) as usize
    }

    /// The write pointer of `zone`.
    #[cfg(test)]
    pub(crate) fn write_pointer(&self, zone: usize) -> u64 {
        self.write_pointer[zone]
    }

    /// A write of `size` bytes the job drew at `offset` (`random`: at random) within its range
    /// `range.0..range.1` (whole zones, aligned by the planner); `None` when it cannot be done
    /// (fio's end of the job). The zone is locked for `issuer` until the write completes;
    /// [`ZoneBusy`] when another issuer holds it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write(
        &mut self,
        options: &ZbdOptions,
        offset: u64,
        size: u64,
        min_bs: u64,
        random: bool,
        range: (u64, u64),
        issuer: usize,
    ) -> Result<Option<ZbdWrite>, ZoneBusy> {
        let mut zone = (offset / self.zone_bytes) as usize;
        if !random && zone >= self.conventional && offset >= self.start(zone) + self.capacity_bytes
        {
            // A sequential writer at a zone's capacity goes on at the next zone's start (fio's
            // `setup_zbd_zone_mode`), wrapping to the range's start.
            zone += 1;
            if self.start(zone) >= range.1 {
                zone = (range.0 / self.zone_bytes) as usize;
            }
        }
        if zone < self.conventional {
            // A conventional write must not cross into a sequential zone.
            let limit = if zone + 1 == self.conventional { self.start(zone + 1) } else { u64::MAX };
            let size = size.min(limit.saturating_sub(offset)) / min_bs * min_bs;
            return Ok((size > 0).then_some(ZbdWrite::Write { offset, size }));
        }
        if size > self.zone_bytes {
            return Ok(None);
        }
        let zone = self.write_target(zone, offset, range);
        if !self.lockable(zone, issuer) {
            return Err(ZoneBusy);
        }
        let mut reset = self.remainder(zone) < min_bs;
        if options.reset_frequency > 0.0 {
            let range_bytes = range.1 - range.0;
            if self.valid_bytes as f64 >= range_bytes as f64 * options.reset_threshold {
                // fio's write count: every trunc(1 / frequency)-th write past the threshold
                // resets its zone, counting from the job's start.
                let every = (1.0 / options.reset_frequency).min(f64::from(u32::MAX)) as u64;
                let left = self.writes_to_reset.get_or_insert(every);
                *left = left.saturating_sub(1);
                if *left == 0 {
                    *left = every;
                    reset = true;
                }
            }
        }
        let room = if reset { self.capacity_bytes } else { self.remainder(zone) };
        if size.min(room) / min_bs * min_bs == 0 {
            // Too short to write (the job's last bytes): nothing is reset or written.
            return Ok(None);
        }
        if reset {
            self.valid_bytes -= self.written(zone);
            self.write_pointer[zone] = self.start(zone);
            self.resets += 1;
            if !self.write_zones.contains(&zone) {
                self.write_zones.push(zone);
            }
        }
        let offset = self.write_pointer[zone];
        let size = size.min(self.remainder(zone)) / min_bs * min_bs;
        if size == 0 {
            return Ok(None);
        }
        // Held until the write (and the reset before it) completes.
        self.lock(zone, issuer, if reset { 2 } else { 1 });
        self.write_pointer[zone] += size;
        self.valid_bytes += size;
        if self.remainder(zone) == 0 {
            self.write_zones.retain(|&target| target != zone);
        }
        Ok(Some(if reset {
            ZbdWrite::ResetThenWrite { zone_start: self.start(zone), offset, size }
        } else {
            ZbdWrite::Write { offset, size }
        }))
    }

    /// The zone a write drawn in `zone` goes to: it, if it is a write target or can become
    /// one, else a current target picked by where `offset` lies in the range.
    fn write_target(&mut self, zone: usize, offset: u64, range: (u64, u64)) -> usize {
        if self.write_zones.contains(&zone) {
            return zone;
        }
        if self.max_write_zones == 0 || self.write_zones.len() < self.max_write_zones {
            self.write_zones.push(zone);
            return zone;
        }
        let count = self.write_zones.len() as u64;
        let at = (offset - range.0) * count / (range.1 - range.0).max(1);
        self.write_zones[at.min(count - 1) as usize]
    }

    /// A read of `size` bytes drawn at `offset`: where it goes and how long it is, or `None`
    /// when no zone of the range holds written data (fio's end of the job).
    /// The zone it reads is locked for `issuer` until it completes (sequential zones only).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn read(
        &mut self,
        options: &ZbdOptions,
        offset: u64,
        size: u64,
        min_bs: u64,
        random: bool,
        range: (u64, u64),
        issuer: usize,
    ) -> Result<Option<(u64, u64)>, ZoneBusy> {
        let original = (offset / self.zone_bytes) as usize;
        if original < self.conventional || options.read_beyond_wp {
            return Ok(Some((offset, size)));
        }
        let mut zone = original;
        let mut offset = offset;
        if self.written(zone) < min_bs || (!random && offset + min_bs > self.write_pointer[zone]) {
            let Some(found) = self.next_with_data(zone, min_bs, random, range) else {
                return Ok(None);
            };
            zone = found;
            if !random {
                offset = self.start(zone);
            }
        }
        let range_bytes = self.written(zone);
        if zone < self.conventional {
            return Ok(Some((self.start(zone), size)));
        }
        if !self.lockable(zone, issuer) {
            return Err(ZoneBusy);
        }
        if range_bytes <= size {
            offset = self.start(zone);
        } else if random {
            let within = (offset - self.start(original)) % (range_bytes - size);
            offset = self.start(zone) + within / min_bs * min_bs;
        }
        let size = size.min(self.write_pointer[zone] - offset) / min_bs * min_bs;
        if size == 0 {
            return Ok(None);
        }
        self.lock(zone, issuer, 1);
        Ok(Some((offset, size)))
    }

    /// The next zone after `zone` in the range that holds at least `min_bs` written bytes
    /// (conventional zones always do); for random I/O the nearest one, looking after and
    /// before it alternately (fio's `zbd_find_zone`).
    fn next_with_data(
        &self,
        zone: usize,
        min_bs: u64,
        random: bool,
        range: (u64, u64),
    ) -> Option<usize> {
        let first = (range.0 / self.zone_bytes) as usize;
        let end = (range.1.div_ceil(self.zone_bytes) as usize).min(self.write_pointer.len());
        let has_data =
            |candidate: usize| candidate < self.conventional || self.written(candidate) >= min_bs;
        for distance in 1..=end.saturating_sub(first) {
            if zone + distance < end && has_data(zone + distance) {
                return Some(zone + distance);
            }
            if random && zone >= first + distance && has_data(zone - distance) {
                return Some(zone - distance);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn device(max_open: u32) -> ZbdDevice {
        let zones = TargetZones {
            zone_size_bytes: 4 * MIB,
            zone_capacity_bytes: 3 * MIB,
            conventional_zones: 1,
            max_open_zones: 0,
        };
        ZbdDevice::new(zones, 16 * MIB, max_open).unwrap()
    }

    fn options() -> ZbdOptions {
        ZbdOptions {
            max_open_zones: 0,
            reset_threshold: 1.0,
            reset_frequency: 0.0,
            read_beyond_wp: false,
        }
    }

    // Proves random writes land only at write pointers: each write drawn anywhere in a
    // sequential zone starts at that zone's pointer, which then moves by the write; a zone
    // stops at its capacity (the last write shortened to whole blocks), and the next write
    // there resets it and starts at the zone's start.
    #[test]
    fn writes_go_to_the_write_pointer_and_full_zones_are_reset() {
        let mut zbd = device(0);
        let range = (0, 16 * MIB);
        let write = |zbd: &mut ZbdDevice, offset| {
            zbd.write(&options(), offset, 512 << 10, 4096, true, range, 0).unwrap().unwrap()
        };
        assert_eq!(
            write(&mut zbd, 4 * MIB + 123 * 4096),
            ZbdWrite::Write { offset: 4 * MIB, size: 512 << 10 }
        );
        assert_eq!(
            write(&mut zbd, 6 * MIB),
            ZbdWrite::Write { offset: 4 * MIB + (512 << 10), size: 512 << 10 }
        );
        for _ in 0..4 {
            write(&mut zbd, 5 * MIB);
        }
        assert_eq!(zbd.write_pointer(1), 7 * MIB, "full at its 3 MiB capacity");
        assert_eq!(
            write(&mut zbd, 4 * MIB),
            ZbdWrite::ResetThenWrite { zone_start: 4 * MIB, offset: 4 * MIB, size: 512 << 10 }
        );
        assert_eq!(zbd.resets, 1);
        // Conventional zone 0: written where drawn, not across into zone 1.
        assert_eq!(write(&mut zbd, 8192), ZbdWrite::Write { offset: 8192, size: 512 << 10 });
        assert_eq!(
            write(&mut zbd, 4 * MIB - 8192),
            ZbdWrite::Write { offset: 4 * MIB - 8192, size: 8192 }
        );
    }

    // Proves max_open_zones: with 2 write targets, a write drawn in a third zone goes to one of
    // the two (by where its offset lies), and a zone becomes a target again once one fills.
    #[test]
    fn max_open_zones_limits_the_write_targets() {
        let mut zbd = device(2);
        let range = (4 * MIB, 16 * MIB);
        let options = options();
        zbd.write(&options, 4 * MIB, MIB, 4096, true, range, 0).unwrap().unwrap();
        zbd.write(&options, 8 * MIB, MIB, 4096, true, range, 0).unwrap().unwrap();
        let third = zbd.write(&options, 15 * MIB, MIB, 4096, true, range, 0).unwrap().unwrap();
        assert_eq!(third, ZbdWrite::Write { offset: 9 * MIB, size: MIB }, "the second target");
        assert_eq!(zbd.write_pointer(3), 12 * MIB, "zone 3 never written");
        zbd.write(&options, 4 * MIB, 2 * MIB, 4096, true, range, 0).unwrap().unwrap();
        assert_eq!(
            zbd.write(&options, 15 * MIB, MIB, 4096, true, range, 0).unwrap().unwrap(),
            ZbdWrite::Write { offset: 12 * MIB, size: MIB },
            "zone 1 filled, so zone 3 may become a target"
        );
    }

    // Proves zone_reset_threshold/frequency: below the threshold nothing resets; past it,
    // every second write (frequency 0.5) resets its zone, as fio's write count does.
    #[test]
    fn reset_threshold_and_frequency() {
        let mut zbd = device(0);
        let options = ZbdOptions { reset_threshold: 0.25, reset_frequency: 0.5, ..options() };
        let range = (4 * MIB, 16 * MIB);
        let resets: Vec<bool> = [4, 8, 12, 4, 8, 12, 4]
            .into_iter()
            .map(|zone_mib| {
                let write = zbd
                    .write(&options, zone_mib * MIB, MIB, 4096, true, range, 0)
                    .unwrap()
                    .unwrap();
                matches!(write, ZbdWrite::ResetThenWrite { .. })
            })
            .collect();
        // 3 MiB written (= 0.25 x 12 MiB) after the third write: the fifth and seventh reset.
        assert_eq!(resets, [false, false, false, false, true, false, true]);
        assert_eq!(zbd.write_pointer(2), 9 * MIB, "zone 2 reset, then written once");
    }

    // Proves read_beyond_wp=0: reads stay below the write pointer (random ones within the
    // written part, sequential ones move to the nearest zone with data), an empty range ends
    // the job, and read_beyond_wp=1 reads anywhere.
    #[test]
    fn reads_stay_below_the_write_pointer() {
        let mut zbd = device(0);
        let range = (4 * MIB, 16 * MIB);
        let options = options();
        assert_eq!(
            zbd.read(&options, 4 * MIB, 4096, 4096, false, range, 0).unwrap(),
            None,
            "nothing written"
        );
        zbd.write(&options, 8 * MIB, MIB, 4096, true, range, 0).unwrap().unwrap();
        assert_eq!(
            zbd.read(&options, 4 * MIB, 4096, 4096, false, range, 0).unwrap(),
            Some((8 * MIB, 4096))
        );
        for draw in 0..64 {
            let (offset, size) = zbd
                .read(&options, 8 * MIB + draw * 40960, 8192, 4096, true, range, 0)
                .unwrap()
                .unwrap();
            assert!(offset >= 8 * MIB && offset + size <= 9 * MIB, "{offset} {size}");
        }
        // Past the last written zone a sequential reader finds nothing ahead (fio looks only
        // forward for sequential I/O); a random reader finds the zone behind.
        assert_eq!(zbd.read(&options, 12 * MIB, 4096, 4096, false, range, 0).unwrap(), None);
        assert_eq!(
            zbd.read(&options, 12 * MIB, 4096, 4096, true, range, 0).unwrap(),
            Some((8 * MIB, 4096))
        );
        let beyond = ZbdOptions { read_beyond_wp: true, ..options };
        assert_eq!(
            zbd.read(&beyond, 12 * MIB, 4096, 4096, false, range, 0).unwrap(),
            Some((12 * MIB, 4096))
        );
    }

    // Proves a sequential writer that reaches a zone's capacity (3 MiB of a 4 MiB zone) goes
    // on at the next zone's start instead of resetting the zone it filled.
    #[test]
    fn sequential_writes_skip_the_capacity_gap() {
        let mut zbd = device(0);
        let range = (4 * MIB, 16 * MIB);
        for at in [4, 5, 6] {
            let write =
                zbd.write(&options(), at * MIB, MIB, 4096, false, range, 0).unwrap().unwrap();
            assert_eq!(write, ZbdWrite::Write { offset: at * MIB, size: MIB });
        }
        let next = zbd.write(&options(), 7 * MIB, MIB, 4096, false, range, 0).unwrap().unwrap();
        assert_eq!(next, ZbdWrite::Write { offset: 8 * MIB, size: MIB });
        assert_eq!(zbd.resets, 0);
    }

    /// A 64 MiB zoned disk of 4 MiB zones (3 MiB writable), the first conventional.
    fn zoned_targets() -> Vec<crate::Target> {
        let mut targets = crate::testing::devices(&[("sda", 64 * MIB)]);
        targets[0].zones = Some(TargetZones {
            zone_size_bytes: 4 * MIB,
            zone_capacity_bytes: 3 * MIB,
            conventional_zones: 1,
            max_open_zones: 0,
        });
        targets
    }

    fn fio_plan(test: &str, text: &str) -> Result<crate::WorkloadPlan, String> {
        let dir = std::env::temp_dir().join(format!("elevator-zbd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{test}.fio"));
        std::fs::write(&path, text).unwrap();
        crate::WorkloadSpec::parse(&format!("fio:{}", path.display()))
            .and_then(|spec| spec.plan(&zoned_targets(), &elevator_core::Prng::new(3)))
            .map_err(|error| error.to_string())
    }

    // Proves a zonemode=zbd job file's random writes, from 4 clones at depth 4, land only at
    // write pointers: replaying the writes in issue order, each starts where the last write
    // of its zone ended, or at the zone's start right after a reset (a discard at the zone's
    // start, issued when nothing of the clone is in flight), and none crosses a zone's
    // capacity; max_open_zones=2 keeps to 2 zones between resets.
    #[test]
    fn a_job_files_random_writes_land_at_write_pointers() {
        let text = "[w]\nrw=randwrite\nzonemode=zbd\nmax_open_zones=2\nbs=256k\n\
                    filename=/dev/sda\ndirect=1\nioengine=libaio\niodepth=4\nnumjobs=4\n\
                    offset=4m\nio_size=40m\n";
        let plan = fio_plan("randwrite", text).unwrap();
        let run = crate::testing::run(plan, |_| elevator_core::Duration::from_micros(100));
        let mut pointers = std::collections::BTreeMap::new();
        let (mut writes, mut resets) = (0, 0);
        for record in &run.records {
            let io = record.io;
            let zone = io.offset_bytes / (4 * MIB);
            assert!(zone >= 1, "the job starts at 4 MiB");
            match io.kind {
                crate::IoKind::Discard => {
                    assert_eq!(io.offset_bytes, zone * 4 * MIB, "a reset at the zone's start");
                    assert_eq!(record.in_flight, 1, "issued with nothing else in flight");
                    pointers.insert(zone, zone * 4 * MIB);
                    resets += 1;
                }
                crate::IoKind::Write => {
                    let pointer = pointers.entry(zone).or_insert(zone * 4 * MIB);
                    assert_eq!(io.offset_bytes, *pointer, "write off the pointer of zone {zone}");
                    *pointer += io.size_bytes;
                    assert!(*pointer <= zone * 4 * MIB + 3 * MIB, "past the zone's capacity");
                    writes += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(writes >= 160 && resets > 0, "{writes} writes, {resets} resets");
        assert!(pointers.len() <= 2 + resets, "{} zones written", pointers.len());
    }

    // Proves the planner's zbd rules: a zonesize other than the device's, buffered writes, a
    // regular file and a device that is not zoned are refused naming why; a writer's region
    // is rounded to whole zones (offset up, end down).
    #[test]
    fn zbd_jobs_are_checked_against_the_device() {
        let job = |extra: &str| {
            format!("[w]\nrw=write\nzonemode=zbd\nbs=64k\nfilename=/dev/sda\ndirect=1\n{extra}")
        };
        let error = fio_plan("zonesize", &job("zonesize=8m\n")).unwrap_err();
        assert!(error.contains("does not match the device zone size 4194304"), "{error}");
        let error = fio_plan("buffered", &job("direct=0\n")).unwrap_err();
        assert!(error.contains("need direct=1"), "{error}");
        let text = "[w]\nrw=write\nzonemode=zbd\nfilename=data\nsize=8m\ndirect=1\n";
        let error = fio_plan("file", text).unwrap_err();
        assert!(error.contains("regular file"), "{error}");
        let plan = fio_plan("aligned", &job("offset=5m\nsize=10m\nio_size=1m\n")).unwrap();
        let run = crate::testing::run(plan, |_| elevator_core::Duration::from_micros(100));
        let offsets: Vec<u64> = run.records.iter().map(|r| r.io.offset_bytes).collect();
        assert_eq!(offsets.first(), Some(&(8 * MIB)), "5 MiB rounds up to the zone at 8 MiB");
        assert!(offsets.iter().all(|&offset| offset < 12 * MIB), "15 MiB rounds down to 12");
    }

    // Proves a passthrough engine's zoned writes land at write pointers too (fio's zone
    // locking, not the block layer, keeps them there): libzbc (depth 1, as fio's FIO_SYNCIO
    // libzbc engine) and io_uring_cmd at the example's iodepth=1 — every write starts where
    // the last one of its zone ended (or at the zone's start after a reset), every command
    // including the zone resets goes to the device flagged PASSTHROUGH, and libzbc on a
    // device that is not zoned is refused (libzbc opens only ZBC/ZAC drives).
    #[test]
    fn passthrough_zoned_writes_land_at_write_pointers() {
        use elevator_core::RequestFlags;
        for engine in ["libzbc", "io_uring_cmd"] {
            let text = format!(
                "[w]\nrw=randwrite\nzonemode=zbd\nmax_open_zones=2\nbs=256k\n\
                 filename=/dev/sda\nioengine={engine}\niodepth=1\nnumjobs=2\noffset=4m\n\
                 io_size=40m\n"
            );
            let plan = fio_plan(engine, &text).unwrap();
            let run = crate::testing::run(plan, |_| elevator_core::Duration::from_micros(100));
            let mut pointers = std::collections::BTreeMap::new();
            let (mut writes, mut resets) = (0, 0);
            for record in &run.records {
                let io = record.io;
                assert!(io.flags.contains(RequestFlags::PASSTHROUGH), "{engine}: {io:?}");
                assert_eq!(record.in_flight, 1, "{engine}: one command at a time");
                let zone = io.offset_bytes / (4 * MIB);
                match io.kind {
                    crate::IoKind::Discard => {
                        assert_eq!(io.offset_bytes, zone * 4 * MIB, "{engine}: reset");
                        pointers.insert(zone, zone * 4 * MIB);
                        resets += 1;
                    }
                    crate::IoKind::Write => {
                        let pointer = pointers.entry(zone).or_insert(zone * 4 * MIB);
                        assert_eq!(
                            io.offset_bytes, *pointer,
                            "{engine}: off zone {zone}'s pointer"
                        );
                        *pointer += io.size_bytes;
                        assert!(*pointer <= zone * 4 * MIB + 3 * MIB, "past the capacity");
                        writes += 1;
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
            assert!(writes >= 300 && resets > 0, "{engine}: {writes} writes, {resets} resets");
        }
        let dir = std::env::temp_dir().join(format!("elevator-zbd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("libzbc-plain.fio");
        std::fs::write(&path, "[r]\nrw=read\nfilename=/dev/sda\nioengine=libzbc\nsize=1m\n")
            .unwrap();
        let error = crate::WorkloadSpec::parse(&format!("fio:{}", path.display()))
            .and_then(|spec| {
                spec.plan(
                    &crate::testing::devices(&[("sda", 64 * MIB)]),
                    &elevator_core::Prng::new(3),
                )
            })
            .unwrap_err()
            .to_string();
        assert!(error.contains("libzbc-plain.fio:3") && error.contains("zoned"), "{error}");
    }
}
