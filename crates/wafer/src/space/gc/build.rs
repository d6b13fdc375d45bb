//! Building a victim policy from its kind. Apart from `mod.rs` because it names every policy,
//! while the policies build on `mod.rs`'s types.
use super::{CostBenefit, Greedy, UntilZone, VictimOrder, VictimPolicy, VictimPolicyKind};

impl VictimPolicyKind {
    pub fn build(self) -> Box<dyn VictimPolicy> {
        let policy: Box<dyn VictimPolicy> = match self {
            VictimPolicyKind::Greedy => Box::new(Greedy),
            VictimPolicyKind::CostBenefit => Box::new(CostBenefit),
            VictimPolicyKind::GreedyUntilZone => Box::new(UntilZone { order: VictimOrder::Greedy }),
            VictimPolicyKind::CostBenefitUntilZone => {
                Box::new(UntilZone { order: VictimOrder::CostBenefit })
            }
        };
        // Reports name the policy that runs: it must be the one configuration asked for.
        debug_assert_eq!(policy.name(), self.name(), "{self:?} built another policy");
        policy
    }
}
