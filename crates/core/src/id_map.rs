//! [`IdMap`]: a map from operation ids to small values, for the per-I/O bookkeeping of
//! issuers and recorders (an operation's size or direction, from submission to completion).
//!
//! Those maps are inserted into once and removed from once per operation and never walked, and
//! their keys are ids handed out in increasing order, a few dozen live at once. A general hash
//! map (`hashbrown` with `FxHash`) costs about 70 instructions an insertion and 45 a removal
//! there, a tenth of a simulated I/O's whole block-layer cost; this one is open addressing
//! with linear probing on a Fibonacci hash of the id (consecutive ids land in distinct slots),
//! removal by backward shift (no tombstones, so a long run never degrades it), kept at most
//! half full. Like [`crate::LookupMap`] it is never iterated, so no order can reach a result.

/// Multiplier of Fibonacci hashing (2^64 / φ, odd): consecutive keys spread over the table.
const FIBONACCI: u64 = 0x9E37_79B9_7F4A_7C15;

/// Slots of a map's first table (a power of two).
const FIRST_SLOTS: usize = 16;

/// A map from `u64` ids to `V`, for lookups only (see the module's documentation).
#[derive(Clone, Debug)]
pub struct IdMap<V> {
    /// A power of two of slots (or none before the first insertion).
    slots: Vec<Option<(u64, V)>>,
    len: usize,
    /// log2 of `slots.len()`.
    bits: u32,
}

impl<V> Default for IdMap<V> {
    fn default() -> IdMap<V> {
        IdMap { slots: Vec::new(), len: 0, bits: 0 }
    }
}

impl<V> IdMap<V> {
    /// An empty map (allocates at its first insertion).
    pub fn new() -> IdMap<V> {
        IdMap::default()
    }

    /// How many entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot `key` hashes to.
    #[inline]
    fn home(&self, key: u64) -> usize {
        // The top `bits` bits of the product: Fibonacci hashing. `bits` is at least 4 once
        // there are slots, so the shift is below 64.
        (key.wrapping_mul(FIBONACCI) >> (64 - self.bits)) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// Where `key` is, if present.
    #[inline]
    fn find(&self, key: u64) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask();
        let mut index = self.home(key);
        loop {
            match &self.slots[index] {
                None => return None,
                Some((held, _)) if *held == key => return Some(index),
                Some(_) => index = (index + 1) & mask,
            }
        }
    }

    /// The value of `key`, if present.
    #[inline]
    pub fn get(&self, key: u64) -> Option<&V> {
        self.find(key).and_then(|index| self.slots[index].as_ref().map(|(_, value)| value))
    }

    /// Sets `key` to `value`; returns the value it replaced, if any.
    #[inline]
    pub fn insert(&mut self, key: u64, value: V) -> Option<V> {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.mask();
        let mut index = self.home(key);
        loop {
            match &mut self.slots[index] {
                slot @ None => {
                    *slot = Some((key, value));
                    self.len += 1;
                    return None;
                }
                Some((held, old)) if *held == key => return Some(std::mem::replace(old, value)),
                Some(_) => index = (index + 1) & mask,
            }
        }
    }

    /// Takes `key` out; returns its value, if it was present.
    #[inline]
    pub fn remove(&mut self, key: u64) -> Option<V> {
        // Inlined at the caller: maps of what is seldom configured (a job's write ends, its
        // latency target's submission times) are asked once per I/O and are empty.
        if self.len == 0 {
            return None;
        }
        self.remove_held(key)
    }

    /// [`IdMap::remove`] in a map with entries.
    fn remove_held(&mut self, key: u64) -> Option<V> {
        let found = self.find(key)?;
        let (_, value) = self.slots[found].take().expect("found holds an entry");
        self.len -= 1;
        // Backward shift: each entry after the hole that may live there (its home is not
        // between the hole and it) moves into it, so no probe ever stops early at a gap.
        let mask = self.mask();
        let mut hole = found;
        let mut next = (hole + 1) & mask;
        while let Some((key, _)) = &self.slots[next] {
            let home = self.home(*key);
            if next.wrapping_sub(home) & mask >= next.wrapping_sub(hole) & mask {
                self.slots[hole] = self.slots[next].take();
                hole = next;
            }
            next = (next + 1) & mask;
        }
        Some(value)
    }

    /// Removes every entry, keeping the table.
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|slot| *slot = None);
        self.len = 0;
    }

    /// Doubles the table (or makes the first one) and puts every entry back.
    fn grow(&mut self) {
        let slots = (self.slots.len() * 2).max(FIRST_SLOTS);
        let old = std::mem::replace(&mut self.slots, (0..slots).map(|_| None).collect());
        self.bits = slots.trailing_zeros();
        self.len = 0;
        for (key, value) in old.into_iter().flatten() {
            self.insert(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[allow(clippy::disallowed_types)]
    type Model = std::collections::HashMap<u64, u32>;

    #[derive(Clone, Debug)]
    enum Step {
        Insert(u64, u32),
        Remove(u64),
        Get(u64),
    }

    /// Keys from a small range (so removals and replacements hit), from a range shaped like
    /// the ids an issuer hands out, and from all of u64 (so probe runs wrap and collide).
    fn key() -> impl Strategy<Value = u64> {
        prop_oneof![
            0u64..64,
            1_000_000u64..1_000_200,
            any::<u64>(),
            (0u64..64).prop_map(|k| k << 58)
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (key(), any::<u32>()).prop_map(|(k, v)| Step::Insert(k, v)),
            key().prop_map(Step::Remove),
            key().prop_map(Step::Get),
        ]
    }

    proptest! {
        // Proves the map answers every insertion, removal and lookup as std's HashMap does,
        // whatever the keys (clustered, sequential, colliding in the top bits): the backward
        // shift never loses an entry or leaves one unreachable, and growth keeps them all.
        #[test]
        fn behaves_as_a_hash_map(steps in proptest::collection::vec(step(), 0..400)) {
            let mut map = IdMap::new();
            let mut model = Model::default();
            for step in steps {
                match step {
                    Step::Insert(key, value) => {
                        prop_assert_eq!(map.insert(key, value), model.insert(key, value));
                    }
                    Step::Remove(key) => prop_assert_eq!(map.remove(key), model.remove(&key)),
                    Step::Get(key) => prop_assert_eq!(map.get(key), model.get(&key)),
                }
                prop_assert_eq!(map.len(), model.len());
            }
            for (key, value) in &model {
                prop_assert_eq!(map.get(*key), Some(value));
            }
        }
    }

    // Proves the issuer's pattern (ids in increasing order, a window of them live, each
    // removed once, out of order) keeps the table at its first size: removal frees slots for
    // reuse rather than leaving tombstones that would force growth over a long run.
    #[test]
    fn a_sliding_window_of_ids_never_grows_the_table() {
        let mut map = IdMap::new();
        let mut live = std::collections::VecDeque::new();
        for id in 0..100_000u64 {
            map.insert(id, id);
            live.push_back(id);
            if live.len() > 7 {
                // Out of order: every other time the second oldest completes first.
                let gone = live.remove(usize::from(id % 2 == 0)).expect("eight live");
                assert_eq!(map.remove(gone), Some(gone), "id {gone}");
            }
        }
        assert_eq!(map.slots.len(), FIRST_SLOTS);
        assert!(map.len() <= 8);
        map.clear();
        assert!(map.is_empty());
        assert_eq!(map.get(99_999), None);
    }
}
