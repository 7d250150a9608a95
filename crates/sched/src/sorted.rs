//! An ordered map for the schedulers' sector trees (the kernel's `sort_list` rbtrees): sorted
//! blocks of at most [`BLOCK_MAX`] entries, found through an array of the blocks' first keys.
//!
//! The trees hold from a handful of requests (one process's queue in cfq or bfq) to a few
//! thousand (a blk-mq queue's scheduler tags), and every request costs an insertion, a removal
//! and one or two neighbour lookups. `std`'s `BTreeMap` paid a walk down its nodes for each,
//! with a pointer chase per level; here a lookup is a binary search of one flat array of first
//! keys and one of a block of contiguous entries, and an insertion or removal moves at most a
//! block's tail. Blocks are split when full and merged when they run low, and their buffers are
//! kept for reuse, so the steady state allocates nothing.
//!
//! It answers exactly what a `BTreeMap` answers for the same operations (the differential test
//! below checks that), so the schedulers' choices, and the simulator's output, do not change.

/// Entries per block at most. Small enough that moving a block's tail costs less than a cache
/// miss or two; large enough that the first-key array stays short (a 4096-deep queue has
/// about 250 blocks).
///
/// Tuned by instruction counts (issue 20: callgrind over the `per_request` bench's
/// `scheduler/deadline`, divided by the calls to `Deadline::insert`): per request with 128
/// queued, 8 → 1,030, 16 → 1,031, 24 → 1,041, 32 → 1,053, 64 → 1,095 instructions; with
/// 4,096 queued 16 costs 5 % more than 32 (the first-key array's moves on split and merge
/// grow), 24 the same. 24 is the best of both.
const BLOCK_MAX: usize = 24;

/// A block shorter than this is merged into a neighbour when they fit in one block together.
const BLOCK_LOW: usize = BLOCK_MAX / 4;

/// The entries just below and just above a key: (`before`, `after`).
pub(crate) type Neighbours<K, V> = (Option<(K, V)>, Option<(K, V)>);

/// An ordered map of `Copy` keys to `Copy` values (see the module header).
#[derive(Clone, Debug)]
pub(crate) struct SortedMap<K, V> {
    /// The first key of each block, in order: the index searched first.
    firsts: Vec<K>,
    /// Non-empty sorted blocks; every key of a block is below the next block's first key.
    blocks: Vec<Vec<(K, V)>>,
    /// Buffers of blocks merged away or emptied, for the next split.
    spare: Vec<Vec<(K, V)>>,
    len: usize,
}

impl<K: Ord + Copy, V: Copy> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap::new()
    }
}

impl<K: Ord + Copy, V: Copy> SortedMap<K, V> {
    /// An empty map.
    pub(crate) const fn new() -> Self {
        SortedMap { firsts: Vec::new(), blocks: Vec::new(), spare: Vec::new(), len: 0 }
    }

    /// How many entries it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The block that holds `key` if any block does: the last whose first key is at most
    /// `key` (block 0 for a key below every first key).
    fn block_of(&self, key: &K) -> usize {
        self.firsts.partition_point(|first| first <= key).saturating_sub(1)
    }

    /// The value at `key`.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let block = self.blocks.get(self.block_of(key))?;
        let at = block.partition_point(|(k, _)| k < key);
        block.get(at).filter(|(k, _)| k == key).map(|&(_, v)| v)
    }

    /// The value at `key`, to change it.
    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let index = self.block_of(key);
        let block = self.blocks.get_mut(index)?;
        let at = block.partition_point(|(k, _)| k < key);
        block.get_mut(at).filter(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value at `key`, a default one put there first if the key is free
    /// (`entry(key).or_default()`).
    pub(crate) fn get_or_insert_default(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        // Ok when it was free (now taken by the default); either way it is there now.
        let _ = self.insert_vacant(key, V::default());
        self.get_mut(&key).expect("just made sure the key is held")
    }

    /// Puts `value` at `key` unless the key is taken; answers the value that holds it then.
    pub(crate) fn insert_vacant(&mut self, key: K, value: V) -> Result<(), V> {
        if self.blocks.is_empty() {
            let mut block = self.spare.pop().unwrap_or_default();
            block.push((key, value));
            self.blocks.push(block);
            self.firsts.push(key);
            self.len = 1;
            return Ok(());
        }
        let index = self.block_of(&key);
        let block = &mut self.blocks[index];
        let at = block.partition_point(|(k, _)| *k < key);
        if let Some(&(k, v)) = block.get(at)
            && k == key
        {
            return Err(v);
        }
        block.insert(at, (key, value));
        if at == 0 {
            self.firsts[index] = key;
        }
        self.len += 1;
        if self.blocks[index].len() > BLOCK_MAX {
            self.split(index);
        }
        Ok(())
    }

    /// Puts `value` at `key`, which must be free (debug builds check).
    pub(crate) fn insert(&mut self, key: K, value: V) {
        let vacant = self.insert_vacant(key, value);
        debug_assert!(vacant.is_ok(), "sorted map: key inserted twice");
    }

    /// Takes the entry at `key` out; answers its value.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let index = self.block_of(key);
        let block = self.blocks.get_mut(index)?;
        let at = block.partition_point(|(k, _)| k < key);
        if block.get(at).is_none_or(|(k, _)| k != key) {
            return None;
        }
        let (_, value) = block.remove(at);
        self.len -= 1;
        if block.is_empty() {
            let block = self.blocks.remove(index);
            self.firsts.remove(index);
            self.spare.push(block);
            return Some(value);
        }
        if at == 0 {
            self.firsts[index] = block[0].0;
        }
        if block.len() < BLOCK_LOW {
            self.merge_low(index);
        }
        Some(value)
    }

    /// The entry with the lowest key.
    pub(crate) fn first(&self) -> Option<(K, V)> {
        self.blocks.first().map(|block| block[0])
    }

    /// The entry with the lowest key at or above `key` (`range(key..).next()`).
    pub(crate) fn at_or_after(&self, key: &K) -> Option<(K, V)> {
        let index = self.block_of(key);
        let block = self.blocks.get(index)?;
        let at = block.partition_point(|(k, _)| k < key);
        match block.get(at) {
            Some(&entry) => Some(entry),
            None => self.blocks.get(index + 1).map(|next| next[0]),
        }
    }

    /// The entry with the lowest key above `key` (`range((Excluded(key), Unbounded)).next()`).
    pub(crate) fn after(&self, key: &K) -> Option<(K, V)> {
        let index = self.block_of(key);
        let block = self.blocks.get(index)?;
        let at = block.partition_point(|(k, _)| k <= key);
        match block.get(at) {
            Some(&entry) => Some(entry),
            None => self.blocks.get(index + 1).map(|next| next[0]),
        }
    }

    /// The entry with the highest key below `key` (`range(..key).next_back()`).
    pub(crate) fn before(&self, key: &K) -> Option<(K, V)> {
        // The last block whose first key is below `key` holds it, if any does.
        let index = self.firsts.partition_point(|first| first < key).checked_sub(1)?;
        let block = &self.blocks[index];
        let at = block.partition_point(|(k, _)| k < key);
        Some(block[at - 1])
    }

    /// The entries just below and just above `key` (held or not), with one search: what
    /// `range(..key).next_back()` and `range((Excluded(key), Unbounded)).next()` answer.
    pub(crate) fn neighbours(&self, key: &K) -> Neighbours<K, V> {
        let index = self.block_of(key);
        let Some(block) = self.blocks.get(index) else {
            return (None, None);
        };
        let below = block.partition_point(|(k, _)| k < key);
        let above = if block.get(below).is_some_and(|(k, _)| k == key) { below + 1 } else { below };
        let before = match below.checked_sub(1) {
            Some(at) => Some(block[at]),
            None => index
                .checked_sub(1)
                .map(|previous| *self.blocks[previous].last().expect("blocks are never empty")),
        };
        let after = match block.get(above) {
            Some(&entry) => Some(entry),
            None => self.blocks.get(index + 1).map(|next| next[0]),
        };
        (before, after)
    }

    /// Takes the entry at `key` out and answers its value and the entry that follows it, with
    /// one search: `remove(key)` and then `after(key)`.
    pub(crate) fn remove_then_after(&mut self, key: &K) -> (Option<V>, Option<(K, V)>) {
        let index = self.block_of(key);
        let Some(block) = self.blocks.get_mut(index) else {
            return (None, None);
        };
        let at = block.partition_point(|(k, _)| k < key);
        if block.get(at).is_none_or(|(k, _)| k != key) {
            return (None, self.after(key));
        }
        let (_, value) = block.remove(at);
        self.len -= 1;
        if block.is_empty() {
            let block = self.blocks.remove(index);
            self.firsts.remove(index);
            self.spare.push(block);
            return (Some(value), self.blocks.get(index).map(|next| next[0]));
        }
        if at == 0 {
            self.firsts[index] = block[0].0;
        }
        let after = match block.get(at) {
            Some(&entry) => Some(entry),
            None => self.blocks.get(index + 1).map(|next| next[0]),
        };
        if self.blocks[index].len() < BLOCK_LOW {
            self.merge_low(index);
        }
        (Some(value), after)
    }

    /// Every entry in key order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (K, V)> + '_ {
        self.blocks.iter().flatten().copied()
    }

    /// Splits the over-full block `index` in two halves.
    fn split(&mut self, index: usize) {
        let mut upper = self.spare.pop().unwrap_or_default();
        let block = &mut self.blocks[index];
        upper.extend(block.drain(block.len() / 2..));
        self.firsts.insert(index + 1, upper[0].0);
        self.blocks.insert(index + 1, upper);
    }

    /// Merges the short block `index` into a neighbour it fits in with.
    fn merge_low(&mut self, index: usize) {
        let fits = |this: &Self, a: usize, b: usize| {
            this.blocks[a].len() + this.blocks[b].len() <= BLOCK_MAX
        };
        let (lower, upper) = if index + 1 < self.blocks.len() && fits(self, index, index + 1) {
            (index, index + 1)
        } else if index > 0 && fits(self, index - 1, index) {
            (index - 1, index)
        } else {
            return;
        };
        let mut taken = self.blocks.remove(upper);
        self.firsts.remove(upper);
        self.blocks[lower].append(&mut taken);
        self.spare.push(taken);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::Bound::{Excluded, Unbounded};

    use elevator_core::Prng;

    use super::*;

    // Proves the map answers every lookup exactly as std's BTreeMap does through a long random
    // run of insertions and removals that grows past many blocks, drains to nothing and grows
    // again (splits, merges, emptied blocks, keys below and above every block).
    #[test]
    fn answers_as_a_btreemap_does() {
        let mut prng = Prng::new(20);
        let mut ours: SortedMap<u64, u32> = SortedMap::new();
        let mut reference: BTreeMap<u64, u32> = BTreeMap::new();
        let pair = |(&k, &v): (&u64, &u32)| (k, v);
        for step in 0..60_000_u32 {
            // Phases: grow to ~2000, shrink to empty, grow small again.
            let grow = match step / 20_000 {
                0 => prng.below(10) < 7,
                1 => prng.below(10) < 3,
                _ => prng.below(10) < 5,
            };
            let key = prng.below(4_000);
            if grow {
                let expected = match reference.get(&key) {
                    Some(&held) => Err(held),
                    None => {
                        reference.insert(key, step);
                        Ok(())
                    }
                };
                assert_eq!(ours.insert_vacant(key, step), expected, "insert {key}");
            } else if prng.below(3) == 0 {
                assert_eq!(ours.remove(&key), reference.remove(&key), "remove {key}");
            } else if prng.below(2) == 0 {
                // Through get_mut / get_or_insert_default, as entry().or_default() and get_mut.
                if let (Some(ours), Some(theirs)) = (ours.get_mut(&key), reference.get_mut(&key)) {
                    *ours += 1;
                    *theirs += 1;
                }
                let value = *ours.get_or_insert_default(key + 1);
                assert_eq!(value, *reference.entry(key + 1).or_default(), "or_default {key}");
            } else {
                let removed = reference.remove(&key);
                let after = reference.range((Excluded(key), Unbounded)).next().map(pair);
                assert_eq!(ours.remove_then_after(&key), (removed, after), "remove {key}");
            }
            let probe = prng.below(4_100);
            assert_eq!(ours.get(&probe), reference.get(&probe).copied());
            assert_eq!(ours.at_or_after(&probe), reference.range(probe..).next().map(pair));
            assert_eq!(
                ours.after(&probe),
                reference.range((Excluded(probe), Unbounded)).next().map(pair)
            );
            assert_eq!(ours.before(&probe), reference.range(..probe).next_back().map(pair));
            assert_eq!(
                ours.neighbours(&probe),
                (
                    reference.range(..probe).next_back().map(pair),
                    reference.range((Excluded(probe), Unbounded)).next().map(pair)
                )
            );
            assert_eq!(ours.first(), reference.iter().next().map(pair));
            assert_eq!(ours.len(), reference.len());
            assert_eq!(ours.is_empty(), reference.is_empty());
            if step % 997 == 0 {
                assert!(ours.iter().eq(reference.iter().map(pair)));
                assert!(
                    ours.blocks.iter().all(|block| !block.is_empty() && block.len() <= BLOCK_MAX)
                );
            }
        }
    }
}
