//! The bios each request carries, as singly-linked chains in one slab, so that merging a bio
//! into a request or fusing two requests never allocates (the kernel's `rq->bio` chain).

use crate::request::BioTag;

const NIL: u32 = u32::MAX;

/// A request's bios in sector order: head, tail and count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BioChain {
    head: u32,
    tail: u32,
    pub(crate) count: u32,
}

impl BioChain {
    pub(crate) const EMPTY: BioChain = BioChain { head: NIL, tail: NIL, count: 0 };
}

#[derive(Clone, Copy, Debug)]
struct BioEntry {
    tag: BioTag,
    next: u32,
}

/// Storage for every outstanding bio of a queue.
#[derive(Clone, Debug)]
pub(crate) struct BioTable {
    entries: Vec<BioEntry>,
    free: Vec<u32>,
    limit: usize,
}

impl BioTable {
    /// A table that refuses to hold more than `limit` bios (the queue's bound on outstanding
    /// bios: every issuer's bios must fit, or a run is misconfigured).
    pub(crate) fn new(limit: usize) -> BioTable {
        BioTable { entries: Vec::new(), free: Vec::new(), limit: limit.min(NIL as usize) }
    }

    pub(crate) fn has_room(&self) -> bool {
        !self.free.is_empty() || self.entries.len() < self.limit
    }

    pub(crate) fn outstanding(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    fn alloc(&mut self, tag: BioTag) -> u32 {
        let entry = BioEntry { tag, next: NIL };
        if let Some(index) = self.free.pop() {
            self.entries[index as usize] = entry;
            index
        } else {
            assert!(self.entries.len() < self.limit, "bio table over its limit; check has_room");
            self.entries.push(entry);
            (self.entries.len() - 1) as u32
        }
    }

    /// A chain holding just `tag`.
    pub(crate) fn single(&mut self, tag: BioTag) -> BioChain {
        let index = self.alloc(tag);
        BioChain { head: index, tail: index, count: 1 }
    }

    /// Adds `tag` after the chain's last bio (a back merge).
    pub(crate) fn push_back(&mut self, chain: &mut BioChain, tag: BioTag) {
        let single = self.single(tag);
        self.append(chain, single);
    }

    /// Adds `tag` before the chain's first bio (a front merge).
    pub(crate) fn push_front(&mut self, chain: &mut BioChain, tag: BioTag) {
        let mut single = self.single(tag);
        self.append(&mut single, *chain);
        *chain = single;
    }

    /// Moves every bio of `other` after those of `chain` (fusing two requests).
    pub(crate) fn append(&mut self, chain: &mut BioChain, other: BioChain) {
        if other.count == 0 {
            return;
        }
        if chain.count == 0 {
            *chain = other;
            return;
        }
        self.entries[chain.tail as usize].next = other.head;
        chain.tail = other.tail;
        chain.count += other.count;
    }

    /// Appends the chain's tags to `out` in chain order, keeping the chain.
    pub(crate) fn tags(&self, chain: BioChain, out: &mut Vec<BioTag>) {
        let mut index = chain.head;
        while index != NIL {
            let entry = self.entries[index as usize];
            out.push(entry.tag);
            index = entry.next;
        }
    }

    /// Frees the chain, handing each tag to `out` in chain order.
    pub(crate) fn release(&mut self, chain: BioChain, out: &mut Vec<BioTag>) {
        let mut index = chain.head;
        while index != NIL {
            let entry = self.entries[index as usize];
            out.push(entry.tag);
            self.free.push(index);
            index = entry.next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that front and back merges and fusion keep sector order and lose nothing.
    #[test]
    fn chains_keep_order_through_merges() {
        let mut table = BioTable::new(16);
        let mut a = table.single(BioTag(2));
        table.push_back(&mut a, BioTag(3));
        table.push_front(&mut a, BioTag(1));
        let mut b = table.single(BioTag(4));
        table.push_back(&mut b, BioTag(5));
        table.append(&mut a, b);
        assert_eq!(a.count, 5);
        let mut listed = Vec::new();
        table.tags(a, &mut listed);
        assert_eq!(listed, [1, 2, 3, 4, 5].map(BioTag), "listing keeps the chain");
        let mut out = Vec::new();
        table.release(a, &mut out);
        assert_eq!(out, [1, 2, 3, 4, 5].map(BioTag));
        assert_eq!(table.outstanding(), 0);
    }

    #[test]
    fn the_limit_is_reported_before_it_is_hit() {
        let mut table = BioTable::new(1);
        assert!(table.has_room());
        let chain = table.single(BioTag(0));
        assert!(!table.has_room());
        table.release(chain, &mut Vec::new());
        assert!(table.has_room());
    }
}
