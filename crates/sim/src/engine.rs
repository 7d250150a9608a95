//! The event queue: events ordered by (time, sequence), ties first in, first out.
//!
//! The sequence number is a monotonic insertion counter, so two events at the same nanosecond
//! always run in the order they were scheduled — never by address, hash or thread.

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
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            events: Vec::new(),
            free: Vec::new(),
            next_sequence: 0,
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

    /// Takes the earliest event.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let Reverse(key) = self.heap.pop()?;
        let event = self.events[key.slot as usize].take().expect("a queued slot holds its event");
        self.free.push(key.slot);
        Some((key.at, event))
    }

    /// When the earliest event is due.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(key)| key.at)
    }

    /// How many events are pending.
    pub fn count(&self) -> usize {
        self.heap.len()
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
