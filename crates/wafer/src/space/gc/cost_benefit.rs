//! Cost-benefit victim selection (LFS): benefit / cost = age * (1 - u) / (2u), u the valid
//! ratio (live bytes over the zone's bytes), age the space clock since the zone's last append. Old, cold zones are taken at higher
//! utilisation than young, hot ones, which still lose pages on their own. A zone with u = 0
//! costs nothing and is taken first.
use super::{is_candidate, SpaceView, VictimChoice, VictimPolicy, VictimPolicyKind};
use crate::space::zone::{Zone, ZoneId};

/// A zone's benefit / cost at space clock `now` (infinite for a zone with nothing valid).
pub(super) fn score(z: &Zone, now: u64, slots_per_zone: f64) -> f64 {
    // Per page: what GC would copy (a packed slot with one live page costs that page).
    let u = z.live_bytes() as f64 / (slots_per_zone * crate::space::map::SLOT_BYTES as f64);
    // The zone table's live bytes fit the zone: a utilisation past 1 would score negative.
    debug_assert!((0.0..=1.0).contains(&u), "utilisation {u} of {z:?}");
    // +1: a zone written at this very tick still has a positive age.
    let age = (now.saturating_sub(z.last_write_clock()) + 1) as f64;
    if z.live_bytes() == 0 {
        f64::INFINITY
    } else {
        age * (1.0 - u) / (2.0 * u)
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CostBenefit;

impl VictimPolicy for CostBenefit {
    fn name(&self) -> &'static str {
        // Configuration and reports spell the policy alike: one name, the kind's.
        VictimPolicyKind::CostBenefit.name()
    }

    fn choose(&self, view: &SpaceView<'_>) -> Option<VictimChoice> {
        let (zones, now) = (view.zones, view.clock);
        let slots = f64::from(zones.slots_per_zone());
        // The score divides by the zone's bytes: a zone of no slots would score NaN.
        debug_assert!(slots > 0.0, "zones of {slots} slots");
        let mut best: Option<(f64, ZoneId)> = None;
        for (id, z) in zones.iter().filter(|(_, z)| is_candidate(z)) {
            let score = score(z, now, slots);
            // Strictly greater: the lowest id wins ties, deterministically.
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, id));
            }
        }
        // A NaN score, once best, would never be beaten (`>` is false): no zone may score it.
        debug_assert!(best.is_none_or(|(s, _)| !s.is_nan()), "NaN benefit/cost: {best:?}");
        best.map(|(_, id)| VictimChoice::copyback(id, view))
    }
}
