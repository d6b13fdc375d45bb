//! Greedy victim selection: the candidate with the fewest live bytes (fewest valid slots for
//! uncompressed pages; per page, not per slot, for packed ones); the least recently written
//! on a tie, then the lowest id, so runs are deterministic. Optimal for uniform random writes
//! (000 sec. 4.1); one O(zones) scan per choice (a few hundred zones at production scale).
use super::{
    is_candidate, SpaceView, VictimChoice, VictimPolicy, VictimPolicyKind, VICTIMS_PER_CYCLE_MAX,
};
use crate::space::zone::{Zone, ZoneState};

#[derive(Debug, Clone, Copy, Default)]
pub struct Greedy;

impl VictimPolicy for Greedy {
    fn name(&self) -> &'static str {
        // Configuration and reports spell the policy alike: one name, the kind's.
        VictimPolicyKind::Greedy.name()
    }

    fn choose(&self, view: &SpaceView<'_>) -> Option<VictimChoice> {
        let pick = view
            .zones
            .iter()
            .filter(|(_, z)| is_candidate(z))
            .min_by_key(|(id, z)| {
                (view.valid_rank(z), view.sharing(*id), z.last_write_clock(), *id)
            })
            .map(|(id, _)| id)?;
        // Group-mode NoWA may prefer a victim that does not leave its group imbalanced.
        let pick = match view.groups() {
            Some(_) => {
                let mut ids = vec![pick];
                let others = view.zones.iter().filter(|(id, z)| *id != pick && is_candidate(z));
                ids.extend(others.map(|(id, _)| id));
                view.balanced_order(&ids, 1).first().copied().unwrap_or(pick)
            }
            None => pick,
        };
        assert!(is_candidate(view.zones.get(pick)));
        Some(VictimChoice::copyback(pick, view))
    }
}

/// GDT-aware victims (000 sec. 4.2): candidates in `order`, taken until what they free (their
/// slots less their live bytes' worth, which GC repacks) adds up to one zone, so one cycle frees a zone's worth and sorts all their valid pages by
/// deathtime together. Victims are freed only when the cycle ends, so their valid pages must
/// fit the empty zones GC may open: the choice stops before it would not (always at least the
/// first victim, which GC's reserve zones guarantee room for).
#[derive(Debug, Clone, Copy)]
pub struct UntilZone {
    pub order: VictimOrder,
}

/// The order [`UntilZone`] takes candidates in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VictimOrder {
    /// Fewest valid slots first (000's choice).
    Greedy,
    /// Highest LFS benefit / cost first: young zones whose pages still die on their own wait.
    CostBenefit,
}

impl VictimPolicy for UntilZone {
    fn name(&self) -> &'static str {
        // Configuration and reports spell the policy alike: one name, the kind's.
        match self.order {
            VictimOrder::Greedy => VictimPolicyKind::GreedyUntilZone.name(),
            VictimOrder::CostBenefit => VictimPolicyKind::CostBenefitUntilZone.name(),
        }
    }

    fn choose(&self, view: &SpaceView<'_>) -> Option<VictimChoice> {
        let spz = view.zones.slots_per_zone();
        let mut candidates: Vec<_> = view.zones.iter().filter(|(_, z)| is_candidate(z)).collect();
        match self.order {
            VictimOrder::Greedy => candidates.sort_by_key(|(id, z)| {
                (view.valid_rank(z), view.sharing(*id), z.last_write_clock(), *id)
            }),
            VictimOrder::CostBenefit => {
                let score = |z: &Zone| super::cost_benefit::score(z, view.clock, f64::from(spz));
                candidates.sort_by(|a, b| score(b.1).total_cmp(&score(a.1)).then(a.0.cmp(&b.0)))
            }
        }
        if self.order == VictimOrder::Greedy && view.groups().is_some() {
            // Group-mode NoWA: the artifact's imbalance-aware picks, one after another.
            let ids: Vec<_> = candidates.iter().map(|(id, _)| *id).collect();
            let order = view.balanced_order(&ids, VICTIMS_PER_CYCLE_MAX);
            candidates = order.iter().map(|id| (*id, view.zones.get(*id))).collect();
        }
        let empty = view.zones.count(|z| z.state() == ZoneState::Empty);
        // Room for the copies: the empty zones less one, kept for the user writes that wait.
        let room_slots = u64::from(empty.saturating_sub(1)) * u64::from(spz);
        let mut choice = VictimChoice::copyback(candidates.first()?.0, view);
        let (mut invalid, mut valid) = (0u64, 0u64);
        for (i, (id, z)) in candidates.iter().take(VICTIMS_PER_CYCLE_MAX).enumerate() {
            let more_valid = valid + u64::from(z.valid_slots());
            if i > 0 && (invalid >= u64::from(spz) || more_valid > room_slots) {
                break;
            }
            if i > 0 {
                choice.zones.push(*id);
            }
            invalid += u64::from(z.reclaimable_slots());
            valid = more_valid;
        }
        assert!(!choice.zones.is_empty() && choice.zones.len() <= VICTIMS_PER_CYCLE_MAX);
        Some(choice)
    }
}

/// The artifact's GC burst: the candidates in greedy order, up to [`VICTIMS_PER_CYCLE_MAX`] in
/// one cycle, as many as the empty zones (less one, kept for the user writes that wait) take
/// the copies of; always at least the first, which GC's reserve zones guarantee room for.
/// Unlike [`UntilZone`] it does not stop once a zone's worth is freed: ZLeanStore collects
/// its 16 best victims whenever it runs out of zones.
#[derive(Debug, Clone, Copy, Default)]
pub struct Burst;

impl VictimPolicy for Burst {
    fn name(&self) -> &'static str {
        // Built by the artifact's `gc_burst`, never by a configured kind.
        "greedy-burst"
    }

    fn choose(&self, view: &SpaceView<'_>) -> Option<VictimChoice> {
        let spz = u64::from(view.zones.slots_per_zone());
        let mut candidates: Vec<_> = view.zones.iter().filter(|(_, z)| is_candidate(z)).collect();
        candidates.sort_by_key(|(id, z)| (view.valid_rank(z), z.last_write_clock(), *id));
        let empty = view.zones.count(|z| z.state() == ZoneState::Empty);
        let room_slots = u64::from(empty.saturating_sub(1)) * spz;
        let mut choice = VictimChoice::copyback(candidates.first()?.0, view);
        let mut valid = u64::from(candidates[0].1.valid_slots());
        for (id, z) in candidates.iter().skip(1).take(VICTIMS_PER_CYCLE_MAX - 1) {
            valid += u64::from(z.valid_slots());
            if valid > room_slots {
                break;
            }
            choice.zones.push(*id);
        }
        assert!(!choice.zones.is_empty() && choice.zones.len() <= VICTIMS_PER_CYCLE_MAX);
        Some(choice)
    }
}
