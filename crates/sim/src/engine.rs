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

    fn lane_order(&self) -> Option<u128> {
        self.first_lane.and_then(|lane| self.lanes[lane].as_ref().map(|(order, _, _)| *order))
    }

    /// Takes the earliest event.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
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
        match (heap, lane) {
            (Some(heap), Some(lane)) => Some(heap.min(lane)),
            (heap, lane) => heap.or(lane),
        }
    }

    /// How many events are pending.
    pub fn count(&self) -> usize {
        self.heap.len() + self.lanes.iter().filter(|slot| slot.is_some()).count()
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
