//! GC policy: choose a victim from superblock metadata only. Greedy reads the valid-count
//! buckets (O(1) amortised); FIFO, cost-benefit and random-d look at the superblocks directly
//! (FIFO and cost-benefit scan them all: GC runs once per slots-per-superblock x (1 - victim
//! valid ratio) host writes, about one comparison per host write at a few hundred
//! superblocks).
use crate::config::GcPolicy;
use crate::ftl::buckets::ValidBuckets;
use crate::ftl::SuperblockState;
use crate::rng::SplitMix64;

/// Bound on random draws per sample in `RandomD` (draws that hit a non-sealed superblock are
/// retried); after it the policy falls back to greedy.
const RANDOM_DRAWS_PER_SAMPLE: u32 = 64;

#[derive(Debug)]
pub(crate) struct Candidates<'a> {
    /// Settled (`ValidBuckets::settle`) before the policy runs.
    pub(crate) buckets: &'a ValidBuckets,
    pub(crate) state: &'a [SuperblockState],
    pub(crate) valid: &'a [u32],
    pub(crate) sealed_at: &'a [u64],
    pub(crate) slots_per_superblock: u32,
    pub(crate) now: u64,
}

pub(crate) fn choose(
    policy: GcPolicy,
    random_d: u32,
    c: &Candidates<'_>,
    rng: &mut SplitMix64,
) -> Option<u32> {
    match policy {
        GcPolicy::Greedy => greedy(c),
        GcPolicy::Fifo => fifo(c),
        GcPolicy::CostBenefit => cost_benefit(c),
        GcPolicy::RandomD => random_d_choices(c, random_d, rng).or_else(|| greedy(c)),
    }
}

/// Fewest valid slots; ties go to the earliest sealed, then the lowest index.
fn greedy(c: &Candidates<'_>) -> Option<u32> {
    c.buckets.min(c.valid, c.sealed_at)
}

/// The same choice by a scan of every superblock, for tests of the buckets.
#[cfg(test)]
fn greedy_scan(c: &Candidates<'_>) -> Option<u32> {
    (0..c.state.len())
        .filter(|&i| c.state[i] == SuperblockState::Sealed)
        .min_by_key(|&i| (c.valid[i], c.sealed_at[i], i))
        .map(|i| i as u32)
}

/// Oldest sealed superblock, whatever its valid count: the LRU/FIFO cleaner of the models.
fn fifo(c: &Candidates<'_>) -> Option<u32> {
    let mut best: Option<(u64, u32)> = None;
    for (index, &state) in c.state.iter().enumerate() {
        if state == SuperblockState::Sealed
            && best.is_none_or(|(sealed_at, _)| c.sealed_at[index] < sealed_at)
        {
            best = Some((c.sealed_at[index], index as u32));
        }
    }
    best.map(|(_, index)| index)
}

/// Maximises age * (1 - u) / (2u) (Rosenblum and Ousterhout's LFS cleaner), u = valid ratio.
/// Compared exactly in integers: age * (S - v) / (2v), cross-multiplied.
fn cost_benefit(c: &Candidates<'_>) -> Option<u32> {
    let slots = u128::from(c.slots_per_superblock);
    // (numerator, denominator, index); an empty superblock has infinite benefit.
    let mut best: Option<(u128, u128, u32)> = None;
    for (index, &state) in c.state.iter().enumerate() {
        if state != SuperblockState::Sealed {
            continue;
        }
        let valid = u128::from(c.valid[index]);
        if valid == 0 {
            return Some(index as u32);
        }
        let age = u128::from(c.now.saturating_sub(c.sealed_at[index])) + 1;
        let numerator = age * (slots - valid);
        let denominator = 2 * valid;
        let better = match best {
            None => true,
            Some((n, d, _)) => numerator * d > n * denominator,
        };
        if better {
            best = Some((numerator, denominator, index as u32));
        }
    }
    best.map(|(_, _, index)| index)
}

/// Greedy among `d` sealed superblocks drawn uniformly at random (with replacement).
fn random_d_choices(c: &Candidates<'_>, d: u32, rng: &mut SplitMix64) -> Option<u32> {
    let count = c.state.len() as u64;
    let mut best: Option<(u32, u32)> = None;
    let mut samples = 0u32;
    for _ in 0..d.saturating_mul(RANDOM_DRAWS_PER_SAMPLE) {
        if samples == d {
            break;
        }
        let index = rng.below(count) as usize;
        if c.state[index] != SuperblockState::Sealed {
            continue;
        }
        samples += 1;
        if best.is_none_or(|(valid, _)| c.valid[index] < valid) {
            best = Some((c.valid[index], index as u32));
        }
    }
    best.map(|(_, index)| index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use SuperblockState::{Free, Open, Sealed};

    /// Buckets as the FTL would hold them: sealed superblocks inserted in sealing order.
    fn bucketed(state: &[SuperblockState], valid: &[u32], sealed_at: &[u64]) -> ValidBuckets {
        let mut order: Vec<usize> = (0..state.len()).filter(|&i| state[i] == Sealed).collect();
        order.sort_by_key(|&i| sealed_at[i]);
        let mut buckets = ValidBuckets::new(100, state.len() as u32);
        for i in order {
            buckets.insert(i as u32, valid[i]);
        }
        buckets.settle();
        buckets
    }

    fn candidates<'a>(
        buckets: &'a ValidBuckets,
        state: &'a [SuperblockState],
        valid: &'a [u32],
        sealed_at: &'a [u64],
    ) -> Candidates<'a> {
        Candidates { buckets, state, valid, sealed_at, slots_per_superblock: 100, now: 1000 }
    }

    #[test]
    fn greedy_takes_fewest_valid_sealed_ties_to_oldest() {
        let state = [Sealed, Open, Sealed, Free, Sealed, Sealed];
        let valid = [50, 0, 30, 0, 30, 90];
        let sealed_at = [10, 0, 500, 0, 400, 1];
        let buckets = bucketed(&state, &valid, &sealed_at);
        let c = candidates(&buckets, &state, &valid, &sealed_at);
        // Open and free superblocks are never victims, however empty.
        assert_eq!(greedy(&c), Some(4));
        let mut rng = SplitMix64::new(1);
        assert_eq!(choose(GcPolicy::Greedy, 1, &c, &mut rng), Some(4));
    }

    #[test]
    fn fifo_takes_oldest_sealed() {
        let state = [Sealed, Sealed, Open, Sealed];
        let valid = [10, 99, 0, 5];
        let sealed_at = [300, 100, 0, 200];
        let buckets = bucketed(&state, &valid, &sealed_at);
        assert_eq!(fifo(&candidates(&buckets, &state, &valid, &sealed_at)), Some(1));
    }

    #[test]
    fn cost_benefit_weighs_age_against_utilisation() {
        let state = [Sealed, Sealed, Sealed];
        // Young and fairly empty vs old and fuller: benefit/cost = age (1-u) / 2u.
        // #0: age 11, u 0.2 -> 11 * 0.8 / 0.4 = 22; #1: age 901, u 0.5 -> 901 * 0.5 / 1 = 450.5;
        // #2: age 1, u 0.1 -> 1 * 0.9 / 0.2 = 4.5.
        let valid = [20, 50, 10];
        let sealed_at = [990, 100, 1000];
        let buckets = bucketed(&state, &valid, &sealed_at);
        let c = candidates(&buckets, &state, &valid, &sealed_at);
        assert_eq!(cost_benefit(&c), Some(1));
        // An empty superblock wins at once.
        let valid = [20, 50, 0];
        assert_eq!(cost_benefit(&candidates(&buckets, &state, &valid, &sealed_at)), Some(2));
    }

    #[test]
    fn random_d_is_greedy_among_samples_and_falls_back() {
        let state = [Sealed, Sealed, Sealed, Sealed];
        let valid = [40, 10, 30, 20];
        let sealed_at = [1, 2, 3, 4];
        let buckets = bucketed(&state, &valid, &sealed_at);
        let c = candidates(&buckets, &state, &valid, &sealed_at);
        let mut rng = SplitMix64::new(7);
        // With d far above the count every superblock is drawn: the global minimum.
        assert_eq!(random_d_choices(&c, 64, &mut rng), Some(1));
        // d = 1 picks a sealed superblock at random.
        for _ in 0..32 {
            assert!(random_d_choices(&c, 1, &mut rng).is_some());
        }
        // Nothing sealed: no victim from sampling, and none from the greedy fallback either.
        let state = [Open, Free, Free, Open];
        let buckets = bucketed(&state, &valid, &sealed_at);
        let c = candidates(&buckets, &state, &valid, &sealed_at);
        assert_eq!(choose(GcPolicy::RandomD, 4, &c, &mut rng), None);
    }

    #[test]
    fn buckets_agree_with_a_scan_under_random_churn() {
        let mut rng = SplitMix64::new(42);
        let count = 64usize;
        let mut state = vec![Free; count];
        let mut valid = vec![0u32; count];
        let mut sealed_at = vec![0u64; count];
        // 1000 slots: buckets 8 wide, so the in-bucket scan and the tie-breaks are exercised.
        let mut buckets = ValidBuckets::new(1000, count as u32);
        for step in 0..20_000 {
            let i = rng.below(count as u64) as usize;
            match (state[i], rng.below(4)) {
                (Free, _) => {
                    state[i] = Sealed;
                    valid[i] = rng.below(1001) as u32;
                    sealed_at[i] = rng.below(8);
                    buckets.insert(i as u32, valid[i]);
                }
                (Sealed, 0) => {
                    buckets.remove(i as u32);
                    state[i] = Free;
                }
                (Sealed, _) if valid[i] > 0 => {
                    valid[i] -= 1;
                    buckets.decremented(i as u32, valid[i]);
                }
                _ => {}
            }
            buckets.settle();
            let c = candidates(&buckets, &state, &valid, &sealed_at);
            assert_eq!(greedy(&c), greedy_scan(&c), "step {step}");
        }
        buckets.check().unwrap_or_else(|e| panic!("{e}"));
    }
}
