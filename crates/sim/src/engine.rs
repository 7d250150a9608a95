//! The event queue: events ordered by (time, sequence), ties first in, first out.
//!
//! The sequence number is a monotonic insertion counter, so two events at the same nanosecond
//! always run in the order they were scheduled — never by address, hash or thread.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use elevator_core::Instant;

#[derive(Debug)]
struct Entry<E> {
    at: Instant,
    sequence: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.sequence) == (other.at, other.sequence)
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.sequence).cmp(&(other.at, other.sequence))
    }
}

/// Pending events, earliest first.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    next_sequence: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue { heap: BinaryHeap::new(), next_sequence: 0 }
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
        self.heap.push(Reverse(Entry { at, sequence, event }));
    }

    /// Takes the earliest event.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        self.heap.pop().map(|Reverse(entry)| (entry.at, entry.event))
    }

    /// When the earliest event is due.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(entry)| entry.at)
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
}
