//! B-WF2Q+, the fair-queueing engine under bfq (modern-schedulers.md §3.3).
//!
//! Each I/O priority class has a **service tree**: a virtual time `V`, the sum `wsum` of the
//! weights of the entities it counts, an **active** set of backlogged entities ordered by
//! virtual finish time `F` (with a second index by virtual start time `S`, which plays the part
//! of the kernel's subtree-minimum augmentation), and an **idle** set of entities that emptied
//! while their `F` was still ahead of `V`. Idle entities keep their weight in `wsum` and keep
//! their timestamps, so that a queue that empties for a moment cannot come back with a fresh,
//! smaller start time than it earned.
//!
//! Timestamps are fixed point: serving `s` sectors at weight `w` advances a finish time by
//! `(s << 22) / w` ([`delta`]). Serving `s` sectors advances `V` by `(s << 22) / wsum`.
//!
//! The engine knows nothing of requests: its caller (`mod.rs`) decides when an entity becomes
//! backlogged, is served, is requeued after an expiration or is deactivated, and which class to
//! look in. Entities are indexed by the caller's queue slot. Only leaf entities exist (no
//! cgroup hierarchy), so the entity in service is always out of every tree, as the kernel keeps
//! a queue in service.

use std::collections::BTreeSet;

/// Fixed-point shift of virtual times (`WFQ_SERVICE_SHIFT`).
pub(super) const SERVICE_SHIFT: u32 = 22;

/// Service trees: real-time, best-effort, idle.
pub(super) const CLASSES: usize = 3;

/// The virtual time `service` sectors take at `weight`: `(service << 22) / weight`. Saturates
/// instead of wrapping (it would take 2^42 sectors at weight 1 to get there).
pub(super) fn delta(service: u64, weight: u64) -> u64 {
    let scaled = u128::from(service) << SERVICE_SHIFT;
    u64::try_from(scaled / u128::from(weight.max(1))).unwrap_or(u64::MAX)
}

/// Which set of its class an entity is in.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(super) enum Membership {
    /// In no set: never activated, forgotten, or in service.
    #[default]
    None,
    /// Backlogged, waiting for service.
    Active,
    /// Emptied with `F > V`; remembered until `V` passes `F`.
    Idle,
}

/// One schedulable entity (a bfq queue's `bfq_entity`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Entity {
    /// Virtual start time `S`.
    pub(super) start: u64,
    /// Virtual finish time `F`.
    pub(super) finish: u64,
    /// Sectors it may receive in its current slot.
    pub(super) budget: u64,
    /// Sectors charged to it in its current slot.
    pub(super) service: u64,
    /// Its weight now (the queue's priority weight times its raising coefficient).
    pub(super) weight: u64,
    /// The service tree it belongs to: 0 real-time, 1 best-effort, 2 idle.
    pub(super) class: usize,
    /// Which set of that tree holds it.
    pub(super) membership: Membership,
    /// Its weight is counted in its tree's `wsum` (in a set, or in service).
    pub(super) counted: bool,
}

/// One class's service tree.
#[derive(Clone, Debug, Default)]
struct ServiceTree {
    vtime: u64,
    wsum: u64,
    /// Active entities by (F, slot).
    by_finish: BTreeSet<(u64, u32)>,
    /// Active entities by (S, slot): the smallest start time, for the eligibility jump.
    by_start: BTreeSet<(u64, u32)>,
    /// Idle entities by (F, slot).
    idle: BTreeSet<(u64, u32)>,
}

/// The service trees of every class and the entities they order.
#[derive(Clone, Debug, Default)]
pub(super) struct Wf2q {
    trees: [ServiceTree; CLASSES],
    entities: Vec<Entity>,
    in_service: Option<u32>,
    /// Entities dropped from an idle tree (and from `wsum`) since the caller last took them:
    /// their queues may now be freed.
    pub(super) forgotten: Vec<u32>,
}

impl Wf2q {
    /// An engine with no entities.
    pub(super) fn new() -> Wf2q {
        Wf2q::default()
    }

    /// The entity of slot `index`.
    pub(super) fn entity(&self, index: u32) -> &Entity {
        &self.entities[index as usize]
    }

    /// The entity of slot `index`, to set its budget or service.
    pub(super) fn entity_mut(&mut self, index: u32) -> &mut Entity {
        &mut self.entities[index as usize]
    }

    /// Puts a fresh entity in slot `index` (a new or reused queue slot).
    pub(super) fn install(&mut self, index: u32, weight: u64, class: usize) {
        let entity = Entity { weight, class, ..Entity::default() };
        let slot = index as usize;
        if slot == self.entities.len() {
            self.entities.push(entity);
        } else {
            assert!(!self.entities[slot].counted, "bfq: reusing a slot whose entity is counted");
            self.entities[slot] = entity;
        }
    }

    /// `V` of `class`.
    #[cfg(test)]
    pub(super) fn vtime(&self, class: usize) -> u64 {
        self.trees[class].vtime
    }

    /// `wsum` of `class`.
    #[cfg(test)]
    pub(super) fn weight_sum(&self, class: usize) -> u64 {
        self.trees[class].wsum
    }

    /// Whether `class` has backlogged entities waiting.
    pub(super) fn has_active(&self, class: usize) -> bool {
        !self.trees[class].by_finish.is_empty()
    }

    /// Activation of an entity that is neither active nor in service: it comes back from the
    /// idle set with `S = max(V, F)`, or (forgotten) with `S = V` and its weight added to
    /// `wsum`. With `backshift` (a queue that recovers a hole, §3.7), `F` rather than `V` is the
    /// lower bound when `V` has passed `F`. `update` is a pending weight or class change.
    pub(super) fn activate(
        &mut self,
        index: u32,
        backshift: bool,
        update: Option<(u64, usize)>,
        wr_coeff: u64,
    ) {
        let entity = self.entities[index as usize];
        assert!(
            entity.membership != Membership::Active && self.in_service != Some(index),
            "bfq: activating an entity that is active or in service"
        );
        let vtime = self.trees[entity.class].vtime;
        let backshifted = backshift && vtime > entity.finish;
        let min_start = if backshifted { entity.finish } else { vtime };
        let start = if entity.membership == Membership::Idle {
            self.idle_extract(index);
            min_start.max(entity.finish)
        } else {
            debug_assert!(!entity.counted, "bfq: an entity in no set is counted");
            self.trees[entity.class].wsum += entity.weight;
            self.entities[index as usize].counted = true;
            min_start
        };
        self.entities[index as usize].start = start;
        self.enqueue_with_finish(index, backshifted, update, wr_coeff);
    }

    /// Requeue: of the entity in service at its expiration (its start moves to the finish its
    /// service earned), or of an active entity whose budget changed (repositioned with a new
    /// finish). `update` is a pending weight or class change.
    pub(super) fn requeue(&mut self, index: u32, update: Option<(u64, usize)>, wr_coeff: u64) {
        if self.in_service == Some(index) {
            let service = self.entities[index as usize].service;
            self.calc_finish(index, service);
            let entity = &mut self.entities[index as usize];
            entity.start = entity.finish;
        } else {
            assert_eq!(
                self.entities[index as usize].membership,
                Membership::Active,
                "bfq: repositioning an entity that is not active"
            );
            self.active_extract(index);
        }
        self.enqueue_with_finish(index, false, update, wr_coeff);
    }

    /// Deactivation of an entity that has emptied: its finish is recomputed from the service it
    /// actually received; it goes to the idle set if `to_idle` and `F > V`, else it is
    /// forgotten. An entity not in service loses its service count here; the one in service
    /// keeps it for its caller (a hole recovery needs it) and leaves service.
    pub(super) fn deactivate(&mut self, index: u32, to_idle: bool) {
        let entity = self.entities[index as usize];
        if !entity.counted {
            return;
        }
        let in_service = self.in_service == Some(index);
        // Out of its set first: the sets are keyed by the timestamps about to change.
        match entity.membership {
            Membership::Active => self.active_extract(index),
            Membership::Idle if !in_service => self.idle_extract(index),
            _ => {}
        }
        self.calc_finish(index, entity.service);
        if in_service {
            self.in_service = None;
        } else {
            self.entities[index as usize].service = 0;
        }
        let entity = self.entities[index as usize];
        if !to_idle || entity.finish <= self.trees[entity.class].vtime {
            self.forget(index);
        } else {
            self.idle_insert(index);
        }
    }

    /// Charges `sectors` to `index`: its service grows and `V` of its class advances by
    /// `delta(sectors, wsum)`; an idle entity that `V` has passed is forgotten.
    pub(super) fn served(&mut self, index: u32, sectors: u64) {
        let class = self.entities[index as usize].class;
        self.entities[index as usize].service += sectors;
        let tree = &mut self.trees[class];
        tree.vtime = tree.vtime.saturating_add(delta(sectors, tree.wsum));
        self.forget_idle(class);
    }

    /// The entity of `class` to serve next: the eligible one (`S ≤ V`) with the smallest `F`.
    /// If none is eligible, `V` jumps to the smallest `S` first (only when `may_jump`: with an
    /// entity in service the kernel looks without moving `V`, and then reports the entity
    /// eligible at the jumped time).
    pub(super) fn lookup(&mut self, class: usize, may_jump: bool) -> Option<u32> {
        let tree = &self.trees[class];
        let &(min_start, _) = tree.by_start.first()?;
        let eligible_at = min_start.max(tree.vtime);
        if may_jump && eligible_at > tree.vtime {
            self.trees[class].vtime = eligible_at;
            self.forget_idle(class);
        }
        let entities = &self.entities;
        self.trees[class]
            .by_finish
            .iter()
            .find(|&&(_, index)| entities[index as usize].start <= eligible_at)
            .map(|&(_, index)| index)
    }

    /// Puts `index` (chosen by [`Wf2q::lookup`]) in service: out of the active set, still in
    /// `wsum`.
    pub(super) fn set_in_service(&mut self, index: u32) {
        assert!(self.in_service.is_none(), "bfq: two entities in service");
        self.active_extract(index);
        self.in_service = Some(index);
    }

    /// Ends the service of the entity in service, which its caller has already requeued or
    /// deactivated.
    pub(super) fn reset_in_service(&mut self) {
        self.in_service = None;
    }

    /// Applies a weight or class change to an entity in no set (in service, or being enqueued):
    /// its weight moves between the `wsum`s, and a new class starts it at that tree's `V`.
    pub(super) fn change_weight(&mut self, index: u32, weight: u64, class: usize) {
        let entity = self.entities[index as usize];
        debug_assert!(entity.membership == Membership::None, "bfq: reweighing a queued entity");
        if entity.counted {
            self.trees[entity.class].wsum -= entity.weight;
            self.trees[class].wsum += weight;
        }
        let entity = &mut self.entities[index as usize];
        entity.weight = weight;
        if class != entity.class {
            entity.class = class;
            entity.start = self.trees[class].vtime;
        }
    }

    fn enqueue_with_finish(
        &mut self,
        index: u32,
        backshifted: bool,
        update: Option<(u64, usize)>,
        wr_coeff: u64,
    ) {
        if let Some((weight, class)) = update {
            self.change_weight(index, weight, class);
        }
        let budget = self.entities[index as usize].budget;
        self.calc_finish(index, budget);
        let entity = self.entities[index as usize];
        let vtime = self.trees[entity.class].vtime;
        // Back-shifted timestamps that fell far behind V are pushed up to it (less so for a
        // raised queue), so that a queue that often empties briefly cannot hoard the device.
        if backshifted && vtime > entity.finish {
            let shift = (vtime - entity.finish) / wr_coeff.max(1);
            let entity = &mut self.entities[index as usize];
            entity.start += shift;
            entity.finish += shift;
        }
        self.active_insert(index);
    }

    fn calc_finish(&mut self, index: u32, service: u64) {
        let entity = &mut self.entities[index as usize];
        entity.finish = entity.start.saturating_add(delta(service, entity.weight));
    }

    fn active_insert(&mut self, index: u32) {
        let entity = &mut self.entities[index as usize];
        entity.membership = Membership::Active;
        let tree = &mut self.trees[entity.class];
        tree.by_finish.insert((entity.finish, index));
        tree.by_start.insert((entity.start, index));
    }

    fn active_extract(&mut self, index: u32) {
        let entity = &mut self.entities[index as usize];
        let tree = &mut self.trees[entity.class];
        let removed = tree.by_finish.remove(&(entity.finish, index))
            && tree.by_start.remove(&(entity.start, index));
        assert!(removed, "bfq: active set out of step for entity {index}");
        entity.membership = Membership::None;
    }

    fn idle_insert(&mut self, index: u32) {
        let entity = &mut self.entities[index as usize];
        entity.membership = Membership::Idle;
        self.trees[entity.class].idle.insert((entity.finish, index));
    }

    fn idle_extract(&mut self, index: u32) {
        let entity = &mut self.entities[index as usize];
        let removed = self.trees[entity.class].idle.remove(&(entity.finish, index));
        assert!(removed, "bfq: idle set out of step for entity {index}");
        entity.membership = Membership::None;
    }

    /// Drops `index` from its tree's `wsum`.
    fn forget(&mut self, index: u32) {
        let entity = &mut self.entities[index as usize];
        self.trees[entity.class].wsum -= entity.weight;
        entity.counted = false;
        self.forgotten.push(index);
    }

    /// Forgets idle entities that `V` has passed: the first one, or the whole idle set when
    /// nothing is active and `V` has passed even the last one.
    fn forget_idle(&mut self, class: usize) {
        let tree = &self.trees[class];
        let vtime = tree.vtime;
        let whole = tree.by_finish.is_empty()
            && tree.idle.last().is_some_and(|&(finish, _)| finish <= vtime);
        let count = if whole { tree.idle.len() } else { 1 };
        for _ in 0..count {
            let Some(&(finish, index)) = self.trees[class].idle.first() else { break };
            if finish > vtime {
                break;
            }
            self.idle_extract(index);
            self.forget(index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BE: usize = 1;

    /// An engine with entities of the given weights, each activated (forgotten before, so
    /// `S = V = 0`) with the given budget.
    fn engine(entities: &[(u64, u64)]) -> Wf2q {
        let mut wf2q = Wf2q::new();
        for (index, &(weight, budget)) in entities.iter().enumerate() {
            wf2q.install(index as u32, weight, BE);
            wf2q.entity_mut(index as u32).budget = budget;
            wf2q.activate(index as u32, false, None, 1);
        }
        wf2q
    }

    // Proves the timestamps of §3.3: activation from nothing starts at V and finishes
    // budget/weight later, in 2^22 fixed point; wsum counts every activated entity.
    #[test]
    fn activation_stamps_start_at_v_and_finish_one_budget_later() {
        let wf2q = engine(&[(40, 1000), (80, 1000)]);
        assert_eq!(wf2q.entity(0).start, 0);
        assert_eq!(wf2q.entity(0).finish, (1000 << 22) / 40);
        assert_eq!(wf2q.entity(1).finish, (1000 << 22) / 80);
        assert_eq!(wf2q.weight_sum(BE), 120);
    }

    // Proves selection: of three entities, the one with the smallest finish time is not
    // eligible (S > V); B-WF2Q+ picks the eligible one with the smallest finish, not the
    // smallest finish overall. With nothing eligible, V jumps to the smallest start.
    #[test]
    fn the_eligible_entity_with_the_smallest_finish_is_served() {
        let mut wf2q = engine(&[(10, 4000), (10, 1000), (10, 2000)]);
        // Serve entity 1 for a slot and requeue it with a tiny next budget: its start moves to
        // the finish it earned, past V, while its new finish is the smallest of the three.
        wf2q.set_in_service(1);
        wf2q.served(1, 1000);
        wf2q.entity_mut(1).budget = 10;
        wf2q.requeue(1, None, 1);
        wf2q.reset_in_service();
        wf2q.entity_mut(1).service = 0;
        let vtime = wf2q.vtime(BE);
        let (e0, e1, e2) = (*wf2q.entity(0), *wf2q.entity(1), *wf2q.entity(2));
        assert!(e1.start > vtime, "entity 1 is not eligible");
        assert!(e1.finish < e2.finish && e2.finish < e0.finish, "entity 1 has the smallest F");
        assert_eq!(wf2q.lookup(BE, true), Some(2), "eligible with the smallest F");
        // With only an ineligible entity left, V jumps to its start and it is served.
        let mut wf2q = engine(&[(10, 1000), (30, 1000)]);
        wf2q.set_in_service(0);
        wf2q.served(0, 1000);
        wf2q.requeue(0, None, 1);
        wf2q.reset_in_service();
        wf2q.set_in_service(1);
        wf2q.deactivate(1, false);
        let start = wf2q.entity(0).start;
        assert!(start > wf2q.vtime(BE));
        assert_eq!(wf2q.lookup(BE, true), Some(0));
        assert_eq!(wf2q.vtime(BE), start);
    }

    // Proves the idle set: an entity that empties with F > V is remembered (still in wsum) and
    // comes back at S = max(V, F) rather than at V; once V passes F it is forgotten.
    #[test]
    fn an_entity_that_empties_briefly_keeps_its_timestamps() {
        let mut wf2q = engine(&[(10, 1000), (10, 1000)]);
        wf2q.set_in_service(0);
        wf2q.served(0, 500);
        wf2q.deactivate(0, true);
        assert_eq!(wf2q.entity(0).membership, Membership::Idle);
        assert_eq!(wf2q.weight_sum(BE), 20);
        let finish = wf2q.entity(0).finish;
        assert!(finish > wf2q.vtime(BE));
        wf2q.entity_mut(0).budget = 1000;
        wf2q.activate(0, false, None, 1);
        assert_eq!(wf2q.entity(0).start, finish);
        // Deactivate again and let the other entity's service push V past it.
        wf2q.deactivate(0, true);
        wf2q.forgotten.clear();
        wf2q.set_in_service(1);
        for _ in 0..10 {
            wf2q.served(1, 1000);
        }
        assert_eq!(wf2q.entity(0).membership, Membership::None);
        assert!(!wf2q.entity(0).counted);
        assert_eq!(wf2q.weight_sum(BE), 10);
        assert_eq!(wf2q.forgotten, [0]);
    }
}
