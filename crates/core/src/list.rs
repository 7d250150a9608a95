//! An intrusive doubly-linked list of request ids: O(1) append, removal from anywhere and
//! neighbour lookup, with the links in a [`SideTable`] so no node is ever allocated.
//!
//! This is what the kernel's `list_head` in a request gives its schedulers: noop's FIFO (whose
//! list neighbours are also its merge neighbours), deadline's per-direction FIFOs, and so on.
//! A request can be in one list per [`ListLinks`] table; a scheduler that needs a request in two
//! lists at once keeps two link tables.

use crate::table::{RequestId, SideTable};

#[derive(Clone, Copy, Debug, Default)]
struct Link {
    prev: Option<RequestId>,
    next: Option<RequestId>,
    linked: bool,
}

/// The links of every request for one family of lists.
#[derive(Clone, Debug)]
pub struct ListLinks {
    links: SideTable<Link>,
}

impl ListLinks {
    /// Links for a request table of `capacity`.
    pub fn new(capacity: usize) -> ListLinks {
        ListLinks { links: SideTable::new(capacity) }
    }

    /// Grows to `capacity` slots if shorter.
    pub fn ensure_capacity(&mut self, capacity: usize) {
        self.links.ensure_capacity(capacity);
    }

    /// Whether `id` is in some list of this family.
    pub fn is_linked(&self, id: RequestId) -> bool {
        self.links[id].linked
    }
}

/// One list: head, tail and how many ids it holds.
#[derive(Clone, Debug, Default)]
pub struct IdList {
    head: Option<RequestId>,
    tail: Option<RequestId>,
    count: usize,
}

impl IdList {
    /// An empty list.
    pub const fn new() -> IdList {
        IdList { head: None, tail: None, count: 0 }
    }

    /// How many ids it holds.
    pub const fn count(&self) -> usize {
        self.count
    }

    /// Whether it holds nothing.
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The oldest id.
    pub const fn front(&self) -> Option<RequestId> {
        self.head
    }

    /// The newest id.
    pub const fn back(&self) -> Option<RequestId> {
        self.tail
    }

    /// Appends `id`, which must not be in any list of `links`.
    pub fn push_back(&mut self, links: &mut ListLinks, id: RequestId) {
        assert!(!links.links[id].linked, "{id:?} is already in a list");
        links.links[id] = Link { prev: self.tail, next: None, linked: true };
        match self.tail {
            Some(tail) => links.links[tail].next = Some(id),
            None => self.head = Some(id),
        }
        self.tail = Some(id);
        self.count += 1;
    }

    /// Inserts `id` right after `anchor`, which must be in this list.
    pub fn insert_after(&mut self, links: &mut ListLinks, anchor: RequestId, id: RequestId) {
        assert!(!links.links[id].linked, "{id:?} is already in a list");
        let next = links.links[anchor].next;
        links.links[id] = Link { prev: Some(anchor), next, linked: true };
        links.links[anchor].next = Some(id);
        match next {
            Some(next) => links.links[next].prev = Some(id),
            None => self.tail = Some(id),
        }
        self.count += 1;
    }

    /// Removes `id`, which must be in this list.
    pub fn remove(&mut self, links: &mut ListLinks, id: RequestId) {
        let link = links.links[id];
        assert!(link.linked, "{id:?} is not in a list");
        match link.prev {
            Some(prev) => links.links[prev].next = link.next,
            None => self.head = link.next,
        }
        match link.next {
            Some(next) => links.links[next].prev = link.prev,
            None => self.tail = link.prev,
        }
        links.links[id] = Link::default();
        self.count -= 1;
    }

    /// Removes and returns the oldest id.
    pub fn pop_front(&mut self, links: &mut ListLinks) -> Option<RequestId> {
        let head = self.head?;
        self.remove(links, head);
        Some(head)
    }

    /// The id after `id` in this list.
    pub fn next(&self, links: &ListLinks, id: RequestId) -> Option<RequestId> {
        links.links[id].next
    }

    /// The id before `id` in this list.
    pub fn prev(&self, links: &ListLinks, id: RequestId) -> Option<RequestId> {
        links.links[id].prev
    }

    /// Front to back.
    pub fn iter<'a>(&self, links: &'a ListLinks) -> impl Iterator<Item = RequestId> + 'a {
        std::iter::successors(self.head, move |&id| links.links[id].next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Bio, BioTag, ProcessId, Request, Sector};
    use crate::table::RequestTable;
    use crate::time::Instant;

    fn ids(count: usize) -> (RequestTable, Vec<RequestId>) {
        let mut table = RequestTable::with_capacity(count);
        let ids = (0..count)
            .map(|i| {
                let bio = Bio::read(ProcessId(1), Sector(i as u64 * 8), 8, BioTag(i as u64));
                table.insert(Request::from_bio(&bio, Instant::ZERO)).unwrap()
            })
            .collect();
        (table, ids)
    }

    // Proves removal from the middle, front and back keeps order and neighbours right.
    #[test]
    fn removal_anywhere_keeps_order() {
        let (_table, ids) = ids(5);
        let mut links = ListLinks::new(5);
        let mut list = IdList::new();
        for &id in &ids {
            list.push_back(&mut links, id);
        }
        list.remove(&mut links, ids[2]);
        assert_eq!(list.iter(&links).collect::<Vec<_>>(), [ids[0], ids[1], ids[3], ids[4]]);
        assert_eq!(list.next(&links, ids[1]), Some(ids[3]));
        assert_eq!(list.prev(&links, ids[3]), Some(ids[1]));
        list.remove(&mut links, ids[4]);
        assert_eq!(list.back(), Some(ids[3]));
        assert_eq!(list.pop_front(&mut links), Some(ids[0]));
        list.insert_after(&mut links, ids[1], ids[2]);
        assert_eq!(list.iter(&links).collect::<Vec<_>>(), [ids[1], ids[2], ids[3]]);
        assert_eq!(list.count(), 3);
        assert!(!links.is_linked(ids[0]));
    }

    #[test]
    #[should_panic(expected = "already in a list")]
    fn an_id_cannot_be_in_two_lists_of_one_family() {
        let (_table, ids) = ids(1);
        let mut links = ListLinks::new(1);
        let (mut a, mut b) = (IdList::new(), IdList::new());
        a.push_back(&mut links, ids[0]);
        b.push_back(&mut links, ids[0]);
    }
}
