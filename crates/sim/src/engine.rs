//! The event queue: events ordered by (time, sequence), ties first in, first out.
//!
//! The sequence number is a monotonic insertion counter, so two events at the same nanosecond
//! always run in the order they were scheduled — never by address, hash or thread.
//!
//! Besides the heap the queue has *lanes*: slots that each hold at most one pending event, for
//! a source that never has two at once (a blk-mq core's running item ends once). An event in a
//! lane takes its sequence from the same counter and pops in the same (time, sequence) order
//! as if it were in the heap; it only skips the heap's sifting, which is most of an event's
//! cost when one core's items end every few hundred nanoseconds.
//!
//! And it has *timers*: wake-ups that are moved rather than added to (a device's next step,
//! a queue's plug or idle timeout). Setting a timer that is already set replaces its event in
//! place — the new one takes a fresh sequence number, exactly as a new push would — and
//! clearing one removes it, so a superseded wake-up never sits in the heap until its time only
//! to be ignored (issue 20: they were a fifth of the classic study's events, and most of the
//! heap a RAM disk's plugging kept). The timers are a small heap of their own, indexed by
//! timer, so moving one is a sift among the few timers rather than a push into the big heap.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use elevator_core::Instant;

/// A pending event's place in the heap: its order and where its payload waits. The heap moves
/// these small keys while it sifts; the events themselves (32 bytes or more) stay put in a
/// slab until popped, which halves the bytes each sift step copies.
#[derive(Clone, Copy, Debug)]
struct Key {
    at: Instant,
    sequence: u64,
    slot: u32,
}

impl Key {
    /// (time, sequence) as one number: one branch-free comparison per sift step instead of two
    /// dependent ones.
    fn order(&self) -> u128 {
        (u128::from(self.at.as_nanos()) << 64) | u128::from(self.sequence)
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.order() == other.order()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        // The slot is not part of the order: (time, sequence) is unique.
        self.order().cmp(&other.order())
    }
}

/// Pending events, earliest first.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Key>>,
    /// Payloads by slot; `None` where free.
    events: Vec<Option<E>>,
    /// Free slots, reused last freed first (the order is private: it never affects which
    /// event pops, only where its payload is kept).
    free: Vec<u32>,
    next_sequence: u64,
    /// One pending event at most per lane: its key's order and the event.
    lanes: Vec<Option<(u128, Instant, E)>>,
    /// The lane with the earliest event, if any lane holds one.
    first_lane: Option<usize>,
    /// Timers (see the module doc).
    timers: Timers<E>,
}

/// Where a timer that is not set has its heap position.
const NOT_SET: u32 = u32::MAX;

/// Timers by index, each set (with its time and event) or not, and a binary heap of the set
/// ones by order that knows each one's position, so a timer can be moved or removed.
#[derive(Debug)]
struct Timers<E> {
    /// Each timer's pending event, if set: its time and payload.
    entries: Vec<Option<(Instant, E)>>,
    /// Each timer's index in `heap`, or [`NOT_SET`].
    position: Vec<u32>,
    /// The set timers, a binary min-heap of (order, timer): the order kept beside the index so
    /// a sift compares without looking the timer up.
    heap: Vec<(u128, u32)>,
    /// The latest time a timer was set for and then moved or cleared before it fired.
    cancelled_horizon: Option<Instant>,
}

impl<E> Default for Timers<E> {
    fn default() -> Self {
        Timers {
            entries: Vec::new(),
            position: Vec::new(),
            heap: Vec::new(),
            cancelled_horizon: None,
        }
    }
}

impl<E> Timers<E> {
    fn place(&mut self, index: usize, entry: (u128, u32)) {
        self.heap[index] = entry;
        self.position[entry.1 as usize] = index as u32;
    }

    fn sift_up(&mut self, mut index: usize) {
        let entry = self.heap[index];
        while index > 0 {
            let parent = (index - 1) / 2;
            if self.heap[parent].0 <= entry.0 {
                break;
            }
            self.place(index, self.heap[parent]);
            index = parent;
        }
        self.place(index, entry);
    }

    fn sift_down(&mut self, mut index: usize) {
        let entry = self.heap[index];
        let len = self.heap.len();
        loop {
            let left = 2 * index + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child =
                if right < len && self.heap[right].0 < self.heap[left].0 { right } else { left };
            if self.heap[child].0 >= entry.0 {
                break;
            }
            self.place(index, self.heap[child]);
            index = child;
        }
        self.place(index, entry);
    }

    /// Sets timer `timer` to `order`; returns the time it was set for before, if it was.
    fn set(&mut self, timer: usize, order: u128, at: Instant, event: E) -> Option<Instant> {
        let previous = self.entries[timer].replace((at, event)).map(|(at, _)| at);
        let index = self.position[timer];
        if index == NOT_SET {
            self.heap.push((order, timer as u32));
            let last = self.heap.len() - 1;
            self.position[timer] = last as u32;
            self.sift_up(last);
        } else {
            let index = index as usize;
            let before = std::mem::replace(&mut self.heap[index].0, order);
            if order < before {
                self.sift_up(index);
            } else {
                self.sift_down(index);
            }
        }
        previous
    }

    /// Takes timer `timer` out of the heap and returns its time and event.
    fn remove(&mut self, timer: usize) -> Option<(Instant, E)> {
        let index = self.position[timer];
        if index == NOT_SET {
            return None;
        }
        let index = index as usize;
        self.position[timer] = NOT_SET;
        let last = self.heap.pop().expect("a set timer is in the heap");
        if index < self.heap.len() {
            let before = self.heap[index].0;
            self.place(index, last);
            if last.0 < before {
                self.sift_up(index);
            } else {
                self.sift_down(index);
            }
        }
        self.entries[timer].take()
    }

    fn first_order(&self) -> Option<u128> {
        self.heap.first().map(|&(order, _)| order)
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            events: Vec::new(),
            free: Vec::new(),
            next_sequence: 0,
            lanes: Vec::new(),
            first_lane: None,
            timers: Timers::default(),
        }
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `event` at `at`.
    pub fn push(&mut self, at: Instant, event: E) {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.events[slot as usize] = Some(event);
                slot
            }
            None => {
                let slot =
                    u32::try_from(self.events.len()).expect("fewer than 2^32 pending events");
                self.events.push(Some(event));
                slot
            }
        };
        self.heap.push(Reverse(Key { at, sequence, slot }));
    }

    /// Gives the queue `count` lanes (see the module doc), all empty.
    pub fn set_lanes(&mut self, count: usize) {
        assert!(self.first_lane.is_none(), "lanes are set while none holds an event");
        self.lanes = (0..count).map(|_| None).collect();
    }

    /// Schedules `event` at `at` in lane `lane`, which must be empty.
    ///
    /// # Panics
    ///
    /// If the lane does not exist or already holds an event.
    pub fn push_lane(&mut self, lane: usize, at: Instant, event: E) {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let order = (u128::from(at.as_nanos()) << 64) | u128::from(sequence);
        let slot = &mut self.lanes[lane];
        assert!(slot.is_none(), "lane {lane} already holds an event");
        *slot = Some((order, at, event));
        let earlier = match self.first_lane {
            Some(first) => self.lanes[first].as_ref().is_none_or(|(o, _, _)| order < *o),
            None => true,
        };
        if earlier {
            self.first_lane = Some(lane);
        }
    }

    /// Gives the queue `count` timers (see the module doc), none set.
    pub fn set_timers(&mut self, count: usize) {
        assert!(self.timers.heap.is_empty(), "timers are set while none is pending");
        self.timers.entries = (0..count).map(|_| None).collect();
        self.timers.position = vec![NOT_SET; count];
    }

    /// Sets timer `timer` to fire `event` at `at`, replacing its pending event if it has one;
    /// the event takes its place among equal times as if pushed now.
    ///
    /// # Panics
    ///
    /// If the timer does not exist.
    pub fn set_timer(&mut self, timer: usize, at: Instant, event: E) {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let order = (u128::from(at.as_nanos()) << 64) | u128::from(sequence);
        if let Some(previous) = self.timers.set(timer, order, at, event) {
            self.timers.cancelled_horizon = self.timers.cancelled_horizon.max(Some(previous));
        }
    }

    /// Clears timer `timer`: its pending event, if any, never fires.
    pub fn clear_timer(&mut self, timer: usize) {
        if let Some((at, _)) = self.timers.remove(timer) {
            self.timers.cancelled_horizon = self.timers.cancelled_horizon.max(Some(at));
        }
    }

    /// The latest time a timer's event was due when it was moved or cleared: the time the
    /// queue would have reached had the superseded event stayed queued and been ignored.
    pub fn cancelled_horizon(&self) -> Option<Instant> {
        self.timers.cancelled_horizon
    }

    fn lane_order(&self) -> Option<u128> {
        self.first_lane.and_then(|lane| self.lanes[lane].as_ref().map(|(order, _, _)| *order))
    }

    /// Takes the earliest event.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        if let Some(timer_order) = self.timers.first_order()
            && self.heap.peek().is_none_or(|Reverse(key)| timer_order < key.order())
            && self.lane_order().is_none_or(|lane_order| timer_order < lane_order)
        {
            let timer = self.timers.heap[0].1 as usize;
            let (at, event) = self.timers.remove(timer).expect("the first timer is set");
            return Some((at, event));
        }
        if let Some(lane_order) = self.lane_order()
            && self.heap.peek().is_none_or(|Reverse(key)| lane_order < key.order())
        {
            let lane = self.first_lane.expect("a lane holds the earliest event");
            let (_, at, event) = self.lanes[lane].take().expect("the first lane holds an event");
            self.first_lane = self
                .lanes
                .iter()
                .enumerate()
                .filter_map(|(index, slot)| slot.as_ref().map(|(order, _, _)| (*order, index)))
                .min()
                .map(|(_, index)| index);
            return Some((at, event));
        }
        let Reverse(key) = self.heap.pop()?;
        let event = self.events[key.slot as usize].take().expect("a queued slot holds its event");
        self.free.push(key.slot);
        Some((key.at, event))
    }

    /// When the earliest event is due.
    pub fn peek_time(&self) -> Option<Instant> {
        let heap = self.heap.peek().map(|Reverse(key)| key.at);
        let lane = self.first_lane.and_then(|lane| self.lanes[lane].as_ref().map(|(_, at, _)| *at));
        let timer =
            self.timers.first_order().map(|order| Instant::from_nanos((order >> 64) as u64));
        [heap, lane, timer].into_iter().flatten().min()
    }

    /// How many events are pending.
    pub fn count(&self) -> usize {
        self.heap.len()
            + self.lanes.iter().filter(|slot| slot.is_some()).count()
            + self.timers.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves events come out by time, and in insertion order at equal times.
    #[test]
    fn ties_are_first_in_first_out() {
        let mut queue = EventQueue::new();
        queue.push(Instant::from_nanos(5), "late");
        queue.push(Instant::from_nanos(1), "first");
        queue.push(Instant::from_nanos(1), "second");
        queue.push(Instant::from_nanos(1), "third");
        let order: Vec<_> = std::iter::from_fn(|| queue.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["first", "second", "third", "late"]);
    }

    // Proves lane events pop in the same (time, sequence) order as heap events: a random mix of
    // heap pushes and lane pushes (one pending per lane) comes out exactly as a sorted
    // reference of (time, insertion) says, ties included, and `count`/`peek_time` agree.
    #[test]
    fn lanes_keep_the_heap_order() {
        let mut queue = EventQueue::new();
        queue.set_lanes(3);
        let mut prng = elevator_core::Prng::new(7);
        let mut reference: Vec<(u64, u64)> = Vec::new();
        let mut popped: Vec<(u64, u64)> = Vec::new();
        let mut lane_busy = [false; 3];
        let mut next = 0u64;
        let mut now = 0u64;
        for _ in 0..5000 {
            if prng.below(3) > 0 {
                let at = now + prng.below(4);
                let lane = prng.below(4) as usize;
                if lane < 3 && !lane_busy[lane] {
                    lane_busy[lane] = true;
                    queue.push_lane(lane, Instant::from_nanos(at), (at, next, Some(lane)));
                } else {
                    queue.push(Instant::from_nanos(at), (at, next, None));
                }
                reference.push((at, next));
                next += 1;
            } else if let Some(time) = queue.peek_time() {
                assert_eq!(queue.count(), reference.len() - popped.len());
                let (at, (stamp, order, lane)) = queue.pop().unwrap();
                assert_eq!(Some(at), Some(time));
                assert_eq!(at.as_nanos(), stamp);
                if let Some(lane) = lane {
                    lane_busy[lane] = false;
                }
                now = stamp;
                popped.push((stamp, order));
            }
        }
        while let Some((_, (stamp, order, _))) = queue.pop() {
            popped.push((stamp, order));
        }
        reference.sort_unstable();
        assert_eq!(popped, reference);
    }

    // Proves timers keep the queue's (time, sequence) order: a random mix of heap pushes,
    // lane pushes, timer sets (new and moved) and clears comes out exactly as a sorted
    // reference of the live events says — a moved timer fires once, at its new time, in the
    // place a push at the moment of the move would have had among equal times; a cleared one
    // never fires — and the cancelled horizon is the latest time a timer was moved or cleared
    // from.
    #[test]
    fn timers_move_in_place_and_keep_the_heap_order() {
        let mut queue = EventQueue::new();
        queue.set_lanes(2);
        queue.set_timers(4);
        let mut prng = elevator_core::Prng::new(11);
        // Live events: (time, insertion, source), source 0-3 a timer, 4-5 a lane, 6 the heap.
        let mut reference: Vec<(u64, u64, usize)> = Vec::new();
        let mut popped: Vec<(u64, u64, usize)> = Vec::new();
        let mut timer_at: [Option<(u64, u64)>; 4] = [None; 4];
        let mut lane_busy = [false; 2];
        let mut horizon: Option<u64> = None;
        let (mut next, mut now) = (0u64, 0u64);
        for _ in 0..20_000 {
            match prng.below(6) {
                0 | 1 => {
                    let timer = prng.below(4) as usize;
                    let at = now + prng.below(5);
                    if let Some((old, order)) = timer_at[timer].take() {
                        reference.retain(|&(_, o, _)| o != order);
                        horizon = horizon.max(Some(old));
                    }
                    queue.set_timer(timer, Instant::from_nanos(at), (at, next, timer));
                    timer_at[timer] = Some((at, next));
                    reference.push((at, next, timer));
                    next += 1;
                }
                2 => {
                    let timer = prng.below(4) as usize;
                    queue.clear_timer(timer);
                    if let Some((old, order)) = timer_at[timer].take() {
                        reference.retain(|&(_, o, _)| o != order);
                        horizon = horizon.max(Some(old));
                    }
                }
                3 => {
                    let at = now + prng.below(5);
                    let lane = prng.below(2) as usize;
                    if lane_busy[lane] {
                        queue.push(Instant::from_nanos(at), (at, next, 6));
                        reference.push((at, next, 6));
                    } else {
                        lane_busy[lane] = true;
                        queue.push_lane(lane, Instant::from_nanos(at), (at, next, 4 + lane));
                        reference.push((at, next, 4 + lane));
                    }
                    next += 1;
                }
                _ => {
                    let expected = reference.len() - popped.len();
                    assert_eq!(queue.count(), expected);
                    if let Some(time) = queue.peek_time() {
                        let (at, (stamp, order, source)) = queue.pop().unwrap();
                        assert_eq!((at, at.as_nanos()), (time, stamp));
                        match source {
                            0..4 => timer_at[source] = None,
                            4 | 5 => lane_busy[source - 4] = false,
                            _ => {}
                        }
                        now = stamp;
                        popped.push((stamp, order, source));
                    }
                }
            }
            assert_eq!(queue.cancelled_horizon(), horizon.map(Instant::from_nanos));
        }
        while let Some((_, event)) = queue.pop() {
            popped.push(event);
        }
        reference.sort_unstable();
        assert_eq!(popped, reference);
    }

    // Proves payloads follow their keys when slots are reused: events pushed after others were
    // popped (so into freed slots) still come out with their own times, in (time, insertion)
    // order, against a sorted reference.
    #[test]
    fn reused_slots_keep_each_event_with_its_time() {
        let mut queue = EventQueue::new();
        let mut reference: Vec<(u64, u64)> = Vec::new();
        let mut popped: Vec<(u64, u64)> = Vec::new();
        let mut sequence = 0;
        // A fixed pseudo-random pattern of times, with repeats so ties occur.
        let mut state = 12345_u64;
        for round in 0..50 {
            for _ in 0..(round % 7) + 1 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let at = popped.last().map_or(0, |&(at, _)| at) + (state >> 60);
                queue.push(Instant::from_nanos(at), sequence);
                reference.push((at, sequence));
                sequence += 1;
            }
            for _ in 0..(round % 5) {
                if let Some((at, event)) = queue.pop() {
                    popped.push((at.as_nanos(), event));
                }
            }
        }
        while let Some((at, event)) = queue.pop() {
            popped.push((at.as_nanos(), event));
        }
        assert_eq!(queue.count(), 0);
        // Each event came out with the time it was pushed at.
        let mut by_event = popped.clone();
        by_event.sort_by_key(|&(_, event)| event);
        assert_eq!(by_event, reference);
        // And in order: by time, ties by insertion (pushes never go before the last pop).
        let mut sorted = popped.clone();
        sorted.sort();
        assert_eq!(popped, sorted);
    }
}
