//! Victims drained through the buffer pool (the artifact's `gc_in_pool`): GC hands a victim's
//! survivors to the pool as dirty pages instead of copying them, and the victim stays a Victim
//! ("draining") while normal write-backs move its pages out. Its zone is reused only once the
//! last valid page has moved ([`Space::finish_drained`], called by every invalidation) and the
//! log is durable past the move (the PendingReset rule of every victim): until then the map
//! points at the old copies, which stay readable. A crash recovers the map and with it the
//! draining zones as Full ones.
//!
//! The space decides what the next cycle does ([`Space::plan_cycle`]); the out-of-place store
//! carries it out. Bound: at most [`DRAINING_ZONES_MAX`] victims drain at once; when the
//! queue is full, the free zones are down to GC's reserve, or no new victim is left, the
//! oldest draining victim's remaining pages are copied directly, which always frees it.
use super::limits::{DRAINING_ZONES_MAX, VICTIMS_PER_CYCLE_MAX};
use super::GcPlan;
use crate::device::WritePurpose;
use crate::space::zone::{Lsn, ZoneId, ZoneState};
use crate::space::Space;

/// What the next GC cycle does.
#[derive(Debug, Clone, PartialEq)]
pub struct GcCycle {
    pub plan: GcPlan,
    /// The survivors go to the buffer pool (the victims then drain); false: copied directly.
    pub hand_over: bool,
}

impl Space {
    /// Victims whose survivors the buffer pool holds.
    pub fn draining_zone_count(&self) -> u32 {
        // `plan_cycle` hands no more victims over than the queue's bound.
        debug_assert!(
            self.draining.len() <= DRAINING_ZONES_MAX,
            "{} draining",
            self.draining.len()
        );
        self.draining.len() as u32
    }

    /// The next cycle. `pool`: survivors may go to the buffer pool. The oldest draining victim
    /// is copied directly when the pool may not be used, the draining queue could not take a
    /// whole burst more, the free zones are down to GC's reserve (the write-backs did not
    /// drain victims in time), or no new victim is left; else the policy's victims, handed to
    /// the pool when `pool`. None: nothing would free anything.
    pub fn plan_cycle(&mut self, pool: bool) -> Option<GcCycle> {
        let free = self.empty_zone_count() + self.pending_reset_zone_count();
        let queue_full = self.draining.len() + VICTIMS_PER_CYCLE_MAX > DRAINING_ZONES_MAX;
        let short = free <= self.options.gc_reserve_zones;
        if !self.draining.is_empty() && (!pool || queue_full || short) {
            return self.plan_drain().map(|plan| GcCycle { plan, hand_over: false });
        }
        if let Some(plan) = self.plan_gc() {
            // The cycle's progress is its victims: a plan names at least one.
            debug_assert!(!plan.zones.is_empty(), "a GC plan without a victim");
            return Some(GcCycle { plan, hand_over: pool });
        }
        self.plan_drain().map(|plan| GcCycle { plan, hand_over: false })
    }

    /// The oldest draining victim, taken off the queue, as a plan to copy its remaining valid
    /// pages directly (it was counted as a victim when it was chosen). None: none drains.
    fn plan_drain(&mut self) -> Option<GcPlan> {
        let zone = self.draining.pop_front()?;
        let z = self.zones.get(zone);
        assert_eq!(z.state(), ZoneState::Victim, "draining zone {zone} in {:?}", z.state());
        let valid_ratio = f64::from(z.valid_slots()) / f64::from(self.slots_per_zone());
        let pages = self.current_pages(zone);
        let (valid, groups) = self.order_copies(pages, self.gc_group());
        assert_eq!(valid.len(), groups.len());
        let purpose = WritePurpose::GcCopy;
        Some(GcPlan { zones: vec![zone], purpose, valid, groups, valid_ratio })
    }

    /// The survivors of `zones` (victims of the cycle just carried out) are in the buffer pool
    /// now, the last move logged at `lsn`: a victim with no valid page left finishes at once,
    /// the others drain. Returns how many drain.
    pub fn hand_over_victims(&mut self, zones: &[ZoneId], lsn: Lsn) -> u32 {
        assert!(zones.len() <= VICTIMS_PER_CYCLE_MAX);
        let before = self.draining.len();
        for &zone in zones {
            assert!(!self.draining.contains(&zone), "zone {zone} handed over twice");
            if self.zones.get(zone).valid_slots() == 0 {
                self.finish_victim(zone, lsn);
            } else {
                assert_eq!(self.zones.get(zone).state(), ZoneState::Victim);
                self.draining.push_back(zone);
            }
        }
        assert!(self.draining.len() <= DRAINING_ZONES_MAX, "draining queue over its bound");
        (self.draining.len() - before) as u32
    }

    /// After an invalidation in `zone` at `lsn`: a draining victim whose last valid slot it
    /// was finishes (PendingReset until the log is durable past its moves).
    pub(in crate::space) fn finish_drained(&mut self, zone: ZoneId, lsn: Lsn) {
        if self.zones.get(zone).valid_slots() > 0 {
            return;
        }
        let Some(at) = self.draining.iter().position(|z| *z == zone) else { return };
        self.draining.remove(at);
        self.finish_victim(zone, lsn);
        assert!(!self.draining.contains(&zone));
    }

    /// Draining zones, oldest first (invariant checks).
    pub(in crate::space) fn draining_zones(&self) -> impl Iterator<Item = ZoneId> + '_ {
        // A draining zone stays a Victim until its last page moves (`finish_drained`).
        debug_assert!(
            self.draining.iter().all(|z| self.zones.get(*z).state() == ZoneState::Victim),
            "a draining zone left the Victim state: {:?}",
            self.draining
        );
        self.draining.iter().copied()
    }
}
