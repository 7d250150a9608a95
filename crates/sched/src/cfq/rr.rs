//! The round-robin lists of 2.6.18 cfq and the level window that refills the current round.
//!
//! Busy queues wait on one of eleven lists: `rr_list[0..8]` (best-effort queues per level),
//! `cur_rr` (the round being served: real-time queues, and best-effort queues spliced in from
//! one level list), `busy_rr` (best-effort queues re-filed while requests of theirs were still
//! out) and `idle_rr` (the idle class). The lists are intrusive and doubly linked over queue
//! indexes, so moving a queue is O(1) and the kernel's insertion positions (after a given
//! queue, before the tail) can be reproduced exactly.

/// Levels of the real-time and best-effort classes (`IOPRIO_BE_NR`).
pub(super) const LEVELS: u8 = 8;

/// How many lists there are: one per level, then current, busy and idle.
const LIST_COUNT: usize = LEVELS as usize + 3;

/// A queue's slot in the scheduler's queue slab.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub(super) struct QueueIndex(pub(super) u32);

impl QueueIndex {
    pub(super) const fn slot(self) -> usize {
        self.0 as usize
    }
}

/// One of the round-robin lists.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum ListId {
    /// `rr_list[level]`: best-effort queues of one level, least recently served first.
    Level(u8),
    /// `cur_rr`: the round being served.
    Current,
    /// `busy_rr`: best-effort queues that were re-filed with requests still out.
    Busy,
    /// `idle_rr`: idle-class queues.
    Idle,
}

impl ListId {
    /// The order 2.6.18's forced dispatch empties the lists in.
    pub(super) const DRAIN_ORDER: [ListId; LIST_COUNT] = [
        ListId::Level(0),
        ListId::Level(1),
        ListId::Level(2),
        ListId::Level(3),
        ListId::Level(4),
        ListId::Level(5),
        ListId::Level(6),
        ListId::Level(7),
        ListId::Busy,
        ListId::Current,
        ListId::Idle,
    ];

    const fn index(self) -> usize {
        match self {
            ListId::Level(level) => level as usize,
            ListId::Current => LEVELS as usize,
            ListId::Busy => LEVELS as usize + 1,
            ListId::Idle => LEVELS as usize + 2,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Links {
    list: Option<ListId>,
    prev: Option<QueueIndex>,
    next: Option<QueueIndex>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Ends {
    head: Option<QueueIndex>,
    tail: Option<QueueIndex>,
}

/// The lists, and the window of levels (`cur_prio..=cur_end_prio`) the next refill of the
/// current round searches.
#[derive(Clone, Debug)]
pub(super) struct RoundRobin {
    ends: [Ends; LIST_COUNT],
    links: Vec<Links>,
    cur_prio: u8,
    cur_end_prio: u8,
}

impl RoundRobin {
    pub(super) fn new() -> RoundRobin {
        RoundRobin {
            ends: [Ends::default(); LIST_COUNT],
            links: Vec::new(),
            cur_prio: 0,
            cur_end_prio: 0,
        }
    }

    /// Makes room for the links of `queue`.
    pub(super) fn ensure(&mut self, queue: QueueIndex) {
        if self.links.len() <= queue.slot() {
            self.links.resize(queue.slot() + 1, Links::default());
        }
    }

    pub(super) fn front(&self, list: ListId) -> Option<QueueIndex> {
        self.ends[list.index()].head
    }

    pub(super) fn back(&self, list: ListId) -> Option<QueueIndex> {
        self.ends[list.index()].tail
    }

    pub(super) fn is_empty(&self, list: ListId) -> bool {
        self.ends[list.index()].head.is_none()
    }

    pub(super) fn next(&self, queue: QueueIndex) -> Option<QueueIndex> {
        self.links[queue.slot()].next
    }

    pub(super) fn prev(&self, queue: QueueIndex) -> Option<QueueIndex> {
        self.links[queue.slot()].prev
    }

    /// The list `queue` is on, if any.
    pub(super) fn list_of(&self, queue: QueueIndex) -> Option<ListId> {
        self.links[queue.slot()].list
    }

    /// Every queue of `list`, front to back.
    pub(super) fn members(&self, list: ListId) -> Vec<QueueIndex> {
        std::iter::successors(self.front(list), |&queue| self.next(queue)).collect()
    }

    /// Takes `queue` off its list; a queue on no list is left alone.
    pub(super) fn remove(&mut self, queue: QueueIndex) {
        let links = self.links[queue.slot()];
        let Some(list) = links.list else { return };
        match links.prev {
            Some(prev) => self.links[prev.slot()].next = links.next,
            None => self.ends[list.index()].head = links.next,
        }
        match links.next {
            Some(next) => self.links[next.slot()].prev = links.prev,
            None => self.ends[list.index()].tail = links.prev,
        }
        self.links[queue.slot()] = Links::default();
    }

    /// Puts `queue` (on no list) between `prev` and `next` of `list`.
    fn link(
        &mut self,
        list: ListId,
        prev: Option<QueueIndex>,
        next: Option<QueueIndex>,
        queue: QueueIndex,
    ) {
        assert!(self.links[queue.slot()].list.is_none(), "{queue:?} is already on a list");
        self.links[queue.slot()] = Links { list: Some(list), prev, next };
        match prev {
            Some(prev) => self.links[prev.slot()].next = Some(queue),
            None => self.ends[list.index()].head = Some(queue),
        }
        match next {
            Some(next) => self.links[next.slot()].prev = Some(queue),
            None => self.ends[list.index()].tail = Some(queue),
        }
    }

    pub(super) fn push_back(&mut self, list: ListId, queue: QueueIndex) {
        self.link(list, self.back(list), None, queue);
    }

    pub(super) fn push_front(&mut self, list: ListId, queue: QueueIndex) {
        self.link(list, None, self.front(list), queue);
    }

    pub(super) fn insert_after(&mut self, list: ListId, anchor: QueueIndex, queue: QueueIndex) {
        self.link(list, Some(anchor), self.next(anchor), queue);
    }

    pub(super) fn insert_before(&mut self, list: ListId, anchor: QueueIndex, queue: QueueIndex) {
        self.link(list, self.prev(anchor), Some(anchor), queue);
    }

    /// Refills the empty current round from the first non-empty level in the window
    /// (`cfq_get_next_prio_level`), and moves the window on. Returns the level spliced in, or
    /// `None` when no level list holds a queue.
    ///
    /// The window starts as `[0, 0]`; a search that finds nothing in it restarts from level 0
    /// with the window one level wider (giving up after wrapping twice); after a splice the
    /// search continues above the level taken, and once that passes the window's end the window
    /// grows by one and the search restarts at 0. With every level busy this visits
    /// `0 | 0 1 | 0 1 2 | ... | 0 1 ... 7`; with only levels 0 and 7 busy it visits level 0
    /// eight times for each visit of level 7.
    pub(super) fn refill_current(&mut self) -> Option<u8> {
        debug_assert!(self.is_empty(ListId::Current), "refill of a non-empty current round");
        let mut wrapped = false;
        let level = loop {
            let window = self.cur_prio..=self.cur_end_prio;
            if let Some(level) = window.into_iter().find(|&l| !self.is_empty(ListId::Level(l))) {
                break level;
            }
            self.cur_prio = 0;
            self.cur_end_prio += 1;
            if self.cur_end_prio == LEVELS {
                self.cur_end_prio = 0;
                if wrapped {
                    return None;
                }
                wrapped = true;
            }
        };
        // The kernel splices at the head of cur_rr; it is empty here, so the order is kept.
        while let Some(queue) = self.front(ListId::Level(level)) {
            self.remove(queue);
            self.push_back(ListId::Current, queue);
        }
        self.cur_prio = level + 1;
        if self.cur_prio > self.cur_end_prio {
            self.cur_end_prio = self.cur_prio;
            self.cur_prio = 0;
        }
        if self.cur_end_prio == LEVELS {
            self.cur_prio = 0;
            self.cur_end_prio = 0;
        }
        Some(level)
    }
}
