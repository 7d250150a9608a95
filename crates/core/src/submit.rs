//! `Submitter`: the process side of a [`BlockQueue`] — one submit path for the simulator, the
//! live engine and the test harness.
//!
//! In the kernel a process hands a bio to `generic_make_request`; when the request pool has
//! nothing for it, `get_request_wait` puts the process to sleep until a request frees, and it
//! then tries again, its later bios still behind the one that blocked. A [`BlockQueue`] only
//! answers [`Submitted::Blocked`]; this type does the rest, the same way for every driver:
//!
//! * **split** an I/O into bios no larger than the queue's `max_sectors_kb`
//!   ([`Submitter::split`]);
//! * **park** a bio the pool refuses, and every later bio of the same process behind it, in
//!   submission order ([`Submitter::submit`] answers [`Offered::Parked`]);
//! * **resubmit** the parked bios of each process the queue woke, in order, until one is
//!   refused again ([`Submitter::resubmit_woken`]), telling the driver which ones got in.
//!
//! The driver owns everything else: the clock, the device, and what a bio's tag stands for.
//! It calls `resubmit_woken` after each completion it hands to the queue (that is when the pool
//! frees a request), and it never submits to the queue behind the submitter's back, or a
//! process's bios could overtake its parked ones.

use std::collections::{BTreeMap, VecDeque};

use crate::kernel::BH_SECTORS_2_4;
use crate::queue::{BlockQueue, SubmitError, Submitted};
use crate::request::{Bio, BioTag, Op, ProcessId, Sector};
use crate::table::RequestId;
use crate::time::Instant;

/// What became of a bio offered to a [`Submitter`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Offered {
    /// It joined a queued request; it completes with that request.
    Merged {
        /// The request it joined.
        into: RequestId,
    },
    /// A new request carries it.
    Queued {
        /// The new request.
        request: RequestId,
    },
    /// Its process waits for a request: the bio is parked (refused by the pool, or behind the
    /// process's bios parked earlier) and goes in when the queue wakes the process.
    Parked,
}

impl From<Offered> for Submitted {
    /// The queue's own answer: a parked bio was not taken, which the queue calls blocked.
    fn from(offered: Offered) -> Submitted {
        match offered {
            Offered::Merged { into } => Submitted::Merged { into },
            Offered::Queued { request } => Submitted::Queued { request },
            Offered::Parked => Submitted::Blocked,
        }
    }
}

/// A [`BlockQueue`] with the process side in front of it: splitting, parking, resubmitting.
#[derive(Debug)]
pub struct Submitter {
    queue: BlockQueue,
    /// Bios waiting for their process to be let back into the request pool, per process, in
    /// submission order. A process with an entry here has at least one bio parked.
    parked: BTreeMap<ProcessId, VecDeque<Bio>>,
    /// Since when each process with parked bios has been waiting.
    parked_since: BTreeMap<ProcessId, Instant>,
    /// Time processes spent waiting, summed, for waits that ended.
    blocked_ns: u64,
    /// Bios the pool refused when first offered.
    refused_count: u64,
}

impl Submitter {
    /// The submit side of `queue`.
    pub fn new(queue: BlockQueue) -> Submitter {
        Submitter {
            queue,
            parked: BTreeMap::new(),
            parked_since: BTreeMap::new(),
            blocked_ns: 0,
            refused_count: 0,
        }
    }

    /// The queue.
    // Hot from the simulator's crate (several calls per I/O): inline there.
    #[inline]
    pub fn queue(&self) -> &BlockQueue {
        &self.queue
    }

    /// The queue, for everything but submitting (issuing, completing, switching schedulers).
    // Hot from the simulator's crate (several calls per I/O): inline there.
    #[inline]
    pub fn queue_mut(&mut self) -> &mut BlockQueue {
        &mut self.queue
    }

    /// Appends to `out` the bios of an I/O of `sector_count` sectors from `start`, each at most
    /// `max_sectors_kb`, as copies of `template` (operation, flags, priority, process, tag).
    /// A flush is one bio with no sectors; any other I/O of no sectors is no bio at all.
    /// On a 2.4 queue the pieces are 4 KiB buffer heads ([`BH_SECTORS_2_4`]): 2.4 has no
    /// multi-page bios, requests grow only by merging (linux-2.4-elevator.md §1, §6.1).
    pub fn split(&self, template: Bio, start: Sector, sector_count: u64, out: &mut Vec<Bio>) {
        let unit_sectors = match self.queue.config().linux_2_4 {
            Some(_) => BH_SECTORS_2_4,
            None => self.queue.config().max_sectors(),
        };
        self.split_at(template, start, sector_count, unit_sectors, out);
    }

    /// As [`Submitter::split`], in pieces of at most `unit_sectors` (capped at
    /// `max_sectors_kb`): 2.4 direct I/O's super buffer heads (linux-2.4-elevator.md §6.6).
    pub fn split_at(
        &self,
        template: Bio,
        start: Sector,
        sector_count: u64,
        unit_sectors: u32,
        out: &mut Vec<Bio>,
    ) {
        if template.op == Op::Flush {
            out.push(Bio { start, sector_count: 0, ..template });
            return;
        }
        let max_sectors =
            u64::from(unit_sectors.clamp(1, self.queue.config().max_sectors().max(1)));
        let mut done = 0;
        while done < sector_count {
            let count = (sector_count - done).min(max_sectors);
            // `count` is at most `max_sectors`, a u32.
            out.push(Bio { start: Sector(start.0 + done), sector_count: count as u32, ..template });
            done += count;
        }
    }

    /// Offers `bio` to the queue, or parks it behind its process's parked bios. An error is a
    /// bio the queue can never take (checked before anything is parked).
    pub fn submit(&mut self, now: Instant, bio: Bio) -> Result<Offered, SubmitError> {
        if let Some(parked) = self.parked.get_mut(&bio.process) {
            self.queue.check(&bio)?;
            parked.push_back(bio);
            return Ok(Offered::Parked);
        }
        Ok(match self.queue.submit(now, bio)? {
            Submitted::Merged { into } => Offered::Merged { into },
            Submitted::Queued { request } => Offered::Queued { request },
            Submitted::Blocked => {
                self.refused_count += 1;
                self.parked.entry(bio.process).or_default().push_back(bio);
                self.parked_since.insert(bio.process, now);
                Offered::Parked
            }
        })
    }

    /// Lets every process the queue woke submit its parked bios, in order, until one is
    /// refused again (it stays first in line). Appends the tag of each bio that got in to
    /// `accepted`, in submission order.
    pub fn resubmit_woken(
        &mut self,
        now: Instant,
        accepted: &mut Vec<BioTag>,
    ) -> Result<(), SubmitError> {
        while let Some(process) = self.queue.pop_woken() {
            let Some(mut parked) = self.parked.remove(&process) else { continue };
            while let Some(bio) = parked.pop_front() {
                if self.queue.submit(now, bio)? == Submitted::Blocked {
                    parked.push_front(bio);
                    break;
                }
                accepted.push(bio.tag);
            }
            if parked.is_empty() {
                if let Some(since) = self.parked_since.remove(&process) {
                    self.blocked_ns += now.saturating_since(since).as_nanos();
                }
            } else {
                self.parked.insert(process, parked);
            }
        }
        Ok(())
    }

    /// The queue's counters up to `now`, with the time processes spent waiting for a request
    /// (waits still going on counted up to `now`).
    pub fn stats(&self, now: Instant) -> crate::QueueStats {
        let mut stats = self.queue.stats(now);
        let ongoing: u64 =
            self.parked_since.values().map(|&since| now.saturating_since(since).as_nanos()).sum();
        stats.blocked_ns = self.blocked_ns + ongoing;
        stats
    }

    /// Bios parked now.
    pub fn parked_count(&self) -> usize {
        self.parked.values().map(VecDeque::len).sum()
    }

    /// Whether `process` has bios parked.
    pub fn is_parked(&self, process: ProcessId) -> bool {
        self.parked.contains_key(&process)
    }

    /// Bios the pool refused when they were first offered, since the start.
    pub fn refused_count(&self) -> u64 {
        self.refused_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::QueueConfig;
    use crate::request::BioTag;
    use crate::scheduler::{Ctx, Dispatch, Scheduler};
    use crate::tunable::{TunableError, TunableSpec};
    use crate::{Pull, RequestFlags};

    #[derive(Debug, Default)]
    struct Fifo(VecDeque<RequestId>);

    impl Scheduler for Fifo {
        fn name(&self) -> &'static str {
            "fifo"
        }
        fn insert(&mut self, _cx: &Ctx<'_>, id: RequestId) {
            self.0.push_back(id);
        }
        fn dispatch(&mut self, _cx: &Ctx<'_>) -> Dispatch {
            self.0.pop_front().map_or(Dispatch::Empty, Dispatch::Issue)
        }
        fn drain(&mut self, _cx: &Ctx<'_>, out: &mut Vec<RequestId>) {
            out.extend(self.0.drain(..));
        }
        fn queued(&self) -> usize {
            self.0.len()
        }
        fn tunables(&self) -> &'static [TunableSpec] {
            &[]
        }
        fn tunable(&self, name: &str) -> Result<i64, TunableError> {
            crate::tunable::find(&[], "fifo", name).map(|_| 0)
        }
        fn set_tunable(&mut self, name: &str, _value: i64) -> Result<(), TunableError> {
            crate::tunable::find(&[], "fifo", name).map(|_| ())
        }
    }

    fn submitter(nr_requests: u32) -> Submitter {
        let config = QueueConfig { nr_requests, ..QueueConfig::default() };
        Submitter::new(BlockQueue::new(config, Box::<Fifo>::default()).unwrap())
    }

    fn write(process: u32, start: u64, tag: u64) -> Bio {
        Bio::write(ProcessId(process), Sector(start), 8, BioTag(tag))
    }

    // Proves splitting: 1300 sectors at max_sectors_kb 512 (1024 sectors) are two bios, the
    // second starting where the first ends; a flush is one bio of no sectors; a read of no
    // sectors is no bio.
    #[test]
    fn an_io_splits_at_max_sectors_kb() {
        let submitter = submitter(128);
        let template = Bio::read(ProcessId(1), Sector(0), 0, BioTag(7));
        let mut bios = Vec::new();
        submitter.split(template, Sector(100), 1300, &mut bios);
        let extents: Vec<_> = bios.iter().map(|bio| (bio.start.0, bio.sector_count)).collect();
        assert_eq!(extents, [(100, 1024), (1124, 276)]);
        assert!(bios.iter().all(|bio| bio.tag == BioTag(7)));
        bios.clear();
        submitter.split(Bio { op: Op::Flush, ..template }, Sector(0), 0, &mut bios);
        assert_eq!(bios.len(), 1);
        assert_eq!(bios[0].sector_count, 0);
        bios.clear();
        submitter.split(template, Sector(0), 0, &mut bios);
        assert!(bios.is_empty());
    }

    /// Offers writes of process 1, far apart so that none merges, until the pool refuses one;
    /// returns how many got in.
    fn fill_pool(submitter: &mut Submitter) -> u64 {
        for tag in 0..64 {
            if submitter.submit(Instant::ZERO, write(1, tag * 1000, tag)).unwrap()
                == Offered::Parked
            {
                return tag;
            }
        }
        panic!("the pool never filled");
    }

    // Proves parking keeps a process's order: once the pool refuses a write, it is parked, and
    // the next write — which nothing refused — waits behind it. As requests complete, the
    // queue wakes the process and its parked writes go in, in submission order, and the driver
    // is told which got in; a bio submitted while others are parked queues behind them.
    #[test]
    fn parked_bios_go_in_in_order_when_the_process_is_woken() {
        let mut submitter = submitter(4);
        let now = Instant::ZERO;
        let taken = fill_pool(&mut submitter);
        let refused = BioTag(taken);
        assert_eq!(submitter.submit(now, write(1, 99_000, 99)).unwrap(), Offered::Parked);
        assert_eq!(submitter.refused_count(), 1, "the second was parked, not refused");
        assert_eq!(submitter.parked_count(), 2);
        assert!(submitter.is_parked(ProcessId(1)));

        let mut accepted = Vec::new();
        let mut completed = 0;
        while accepted.is_empty() {
            let Pull::Issue(id) = submitter.queue_mut().next_request(now) else { panic!() };
            submitter.queue_mut().complete(now, id, &mut Vec::new());
            completed += 1;
            assert!(completed <= taken, "no completion woke the process");
            submitter.resubmit_woken(now, &mut accepted).unwrap();
        }
        assert_eq!(accepted[0], refused, "the refused write goes in first");
        assert!(accepted.len() <= 2);
        if accepted.len() == 1 {
            assert_eq!(submitter.submit(now, write(1, 98_000, 98)).unwrap(), Offered::Parked);
            assert_eq!(submitter.parked_count(), 2, "a new bio queues behind the parked one");
        }
    }

    // Proves the occupancy and waiting figures a report explains itself with: two reads
    // queued at 0 behind a device that takes one at a time, served 2 ms each — the scheduler
    // held one request for 2 of 4 ms (mean 0.5), the device one all along (mean 1.0), the
    // second read waited 2 ms for the device, the head moved 992 sectors at most; and a
    // process parked on a full pool from 0 to 10 ms waited 10 ms.
    #[test]
    fn occupancy_waits_and_blocked_time_are_counted() {
        let mut submitter = submitter(128);
        let t = Instant::from_millis;
        let read = |start, tag| Bio::read(ProcessId(1), Sector(start), 8, BioTag(tag));
        submitter.submit(t(0), read(0, 1)).unwrap();
        submitter.submit(t(0), read(1000, 2)).unwrap();
        let Pull::Issue(first) = submitter.queue_mut().next_request(t(0)) else { panic!() };
        submitter.queue_mut().complete(t(2), first, &mut Vec::new());
        let Pull::Issue(second) = submitter.queue_mut().next_request(t(2)) else { panic!() };
        submitter.queue_mut().complete(t(4), second, &mut Vec::new());
        let stats = submitter.stats(t(4));
        assert_eq!(stats.observed_ns, 4_000_000);
        assert!((stats.sched_queue_mean() - 0.5).abs() < 1e-9, "{}", stats.sched_queue_mean());
        assert!((stats.device_queue_mean() - 1.0).abs() < 1e-9, "{}", stats.device_queue_mean());
        assert_eq!(stats.max_wait_ns, 2_000_000);
        assert_eq!(stats.seek_distance_max_sectors, 992);
        assert_eq!(stats.blocked_ns, 0);

        let mut submitter = self::submitter(4);
        fill_pool(&mut submitter);
        assert_eq!(submitter.stats(t(3)).blocked_ns, 3_000_000, "a wait still going on");
        let mut accepted = Vec::new();
        while submitter.is_parked(ProcessId(1)) {
            let Pull::Issue(id) = submitter.queue_mut().next_request(t(10)) else { panic!() };
            submitter.queue_mut().complete(t(10), id, &mut Vec::new());
            submitter.resubmit_woken(t(10), &mut accepted).unwrap();
        }
        assert_eq!(submitter.stats(t(20)).blocked_ns, 10_000_000, "the wait ended at 10 ms");
    }

    // Proves a bio the queue can never take is an error at once, even behind parked bios,
    // rather than a parked bio that fails later.
    #[test]
    fn an_invalid_bio_is_refused_before_it_is_parked() {
        let mut submitter = submitter(4);
        let now = Instant::ZERO;
        fill_pool(&mut submitter);
        assert!(submitter.is_parked(ProcessId(1)));
        let empty = Bio::write(ProcessId(1), Sector(0), 0, BioTag(9));
        assert!(matches!(submitter.submit(now, empty), Err(SubmitError::Empty { .. })));
        let flush_with_data = Bio { op: Op::Flush, flags: RequestFlags::NONE, ..write(1, 0, 9) };
        assert!(submitter.submit(now, flush_with_data).is_err());
        assert_eq!(submitter.parked_count(), 1);
    }
}
