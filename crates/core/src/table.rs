//! The bounded slab that owns every request of a queue, and per-request side tables.
//!
//! Requests live in one [`RequestTable`] owned by the [`BlockQueue`](crate::BlockQueue); everyone
//! else holds a [`RequestId`]. An id is a slot index plus a generation, so an id kept past the
//! request's completion is detected instead of silently naming the slot's next occupant.
//!
//! Schedulers keep their per-request data (FIFO deadlines, list links, the kernel's
//! `elevator_private`) in a [`SideTable`] indexed by the same slot, which needs no allocation per
//! request and no hashing.

use std::fmt;
use std::num::NonZeroU64;

use crate::request::Request;

/// A handle to a request in a [`RequestTable`]: slot index and generation.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(NonZeroU64);

impl RequestId {
    fn new(index: u32, generation: u32) -> RequestId {
        debug_assert!(generation > 0);
        let packed = (u64::from(generation) << 32) | u64::from(index);
        RequestId(NonZeroU64::new(packed).expect("generation is never zero"))
    }

    /// The slot index: stable while the request lives, reused afterwards. Side tables use it.
    pub const fn index(self) -> usize {
        (self.0.get() & 0xffff_ffff) as usize
    }

    /// The generation of the slot when this id was handed out.
    pub const fn generation(self) -> u32 {
        (self.0.get() >> 32) as u32
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}g{}", self.index(), self.generation())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[derive(Clone, Debug)]
struct Slot {
    generation: u32,
    request: Option<Request>,
}

/// A bounded slab of requests with generational ids.
#[derive(Clone, Debug)]
pub struct RequestTable {
    slots: Vec<Slot>,
    /// Free slot indexes; the lowest index is reused first so that runs are reproducible and
    /// side tables stay dense.
    free: Vec<u32>,
    live_count: usize,
}

impl RequestTable {
    /// A table that holds at most `capacity` requests at once.
    pub fn with_capacity(capacity: usize) -> RequestTable {
        assert!(capacity > 0 && capacity < u32::MAX as usize, "request table capacity {capacity}");
        RequestTable {
            slots: (0..capacity).map(|_| Slot { generation: 1, request: None }).collect(),
            free: (0..capacity as u32).rev().collect(),
            live_count: 0,
        }
    }

    /// Grows to hold `capacity` requests; existing ids stay valid.
    pub fn grow(&mut self, capacity: usize) {
        assert!(capacity < u32::MAX as usize, "request table capacity {capacity}");
        let old = self.slots.len();
        if capacity <= old {
            return;
        }
        self.slots.resize_with(capacity, || Slot { generation: 1, request: None });
        // Keep "lowest free index first": new slots go under the existing free ones.
        let mut free: Vec<u32> = (old as u32..capacity as u32).rev().collect();
        free.append(&mut self.free);
        self.free = free;
    }

    /// How many requests it can hold at once; side tables are this long.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// How many requests it holds now.
    pub fn live_count(&self) -> usize {
        self.live_count
    }

    /// Stores `request` and returns its id, or gives it back if the table is full.
    pub fn insert(&mut self, request: Request) -> Result<RequestId, Request> {
        let Some(index) = self.free.pop() else { return Err(request) };
        let slot = &mut self.slots[index as usize];
        debug_assert!(slot.request.is_none());
        slot.request = Some(request);
        self.live_count += 1;
        Ok(RequestId::new(index, slot.generation))
    }

    /// Removes the request and makes its id stale. Panics on a stale id (a programmer error).
    pub fn remove(&mut self, id: RequestId) -> Request {
        let slot = self.slot_mut(id);
        let request = slot.request.take().expect("live slot");
        // Generations skip zero so that a packed id is never zero.
        slot.generation = slot.generation.checked_add(1).unwrap_or(1);
        self.live_count -= 1;
        self.free.push(id.index() as u32);
        request
    }

    /// The request, or `None` if the id is stale.
    pub fn get(&self, id: RequestId) -> Option<&Request> {
        let slot = self.slots.get(id.index())?;
        if slot.generation == id.generation() { slot.request.as_ref() } else { None }
    }

    /// The request for mutation, or `None` if the id is stale.
    pub fn get_mut(&mut self, id: RequestId) -> Option<&mut Request> {
        let slot = self.slots.get_mut(id.index())?;
        if slot.generation == id.generation() { slot.request.as_mut() } else { None }
    }

    /// Whether `id` names a live request.
    pub fn contains(&self, id: RequestId) -> bool {
        self.get(id).is_some()
    }

    /// Live requests in slot order (deterministic).
    pub fn iter(&self) -> impl Iterator<Item = (RequestId, &Request)> + '_ {
        self.slots.iter().enumerate().filter_map(|(index, slot)| {
            let request = slot.request.as_ref()?;
            Some((RequestId::new(index as u32, slot.generation), request))
        })
    }

    fn slot_mut(&mut self, id: RequestId) -> &mut Slot {
        let slot = &mut self.slots[id.index()];
        assert!(
            slot.generation == id.generation() && slot.request.is_some(),
            "stale request id {id:?} (slot generation {})",
            slot.generation
        );
        slot
    }
}

impl std::ops::Index<RequestId> for RequestTable {
    type Output = Request;

    /// Panics on a stale id: holding one is a programmer error.
    fn index(&self, id: RequestId) -> &Request {
        self.get(id).unwrap_or_else(|| panic!("stale request id {id:?}"))
    }
}

impl std::ops::IndexMut<RequestId> for RequestTable {
    fn index_mut(&mut self, id: RequestId) -> &mut Request {
        self.slot_mut(id).request.as_mut().expect("checked live")
    }
}

/// Per-request data kept outside the request, indexed by the request's slot.
///
/// A slot's entry is whatever the last occupant left; write it when a request arrives.
#[derive(Clone, Debug)]
pub struct SideTable<T> {
    entries: Vec<T>,
}

impl<T: Clone + Default> SideTable<T> {
    /// One default entry per slot of a table of `capacity`.
    pub fn new(capacity: usize) -> SideTable<T> {
        SideTable { entries: vec![T::default(); capacity] }
    }

    /// Grows to `capacity` entries if shorter: a scheduler sizes its tables on the first
    /// request it sees, since it is built before it knows which queue it will serve.
    pub fn ensure_capacity(&mut self, capacity: usize) {
        if self.entries.len() < capacity {
            self.entries.resize(capacity, T::default());
        }
    }
}

impl<T> std::ops::Index<RequestId> for SideTable<T> {
    type Output = T;
    fn index(&self, id: RequestId) -> &T {
        &self.entries[id.index()]
    }
}

impl<T> std::ops::IndexMut<RequestId> for SideTable<T> {
    fn index_mut(&mut self, id: RequestId) -> &mut T {
        &mut self.entries[id.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Bio, BioTag, ProcessId, Sector};
    use crate::time::Instant;

    fn request() -> Request {
        Request::from_bio(&Bio::read(ProcessId(1), Sector(0), 8, BioTag(0)), Instant::ZERO)
    }

    // Proves that an id kept past its request's removal no longer resolves, even after the slot
    // has been reused.
    #[test]
    fn stale_ids_do_not_resolve_after_reuse() {
        let mut table = RequestTable::with_capacity(1);
        let first = table.insert(request()).unwrap();
        table.remove(first);
        let second = table.insert(request()).unwrap();
        assert_eq!(first.index(), second.index());
        assert!(table.get(first).is_none());
        assert!(table.get(second).is_some());
    }

    // Proves the table is bounded: a full table hands the request back.
    #[test]
    fn a_full_table_refuses() {
        let mut table = RequestTable::with_capacity(2);
        table.insert(request()).unwrap();
        table.insert(request()).unwrap();
        assert!(table.insert(request()).is_err());
        assert_eq!(table.live_count(), 2);
    }

    #[test]
    #[should_panic(expected = "stale request id")]
    fn removing_twice_panics() {
        let mut table = RequestTable::with_capacity(1);
        let id = table.insert(request()).unwrap();
        table.remove(id);
        table.remove(id);
    }

    #[test]
    fn lowest_free_slot_is_reused_first() {
        let mut table = RequestTable::with_capacity(4);
        let ids: Vec<_> = (0..4).map(|_| table.insert(request()).unwrap()).collect();
        assert_eq!(ids.iter().map(|id| id.index()).collect::<Vec<_>>(), [0, 1, 2, 3]);
    }
}
