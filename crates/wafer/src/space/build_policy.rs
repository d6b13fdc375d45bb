//! Building a placement policy from its kind. Apart from `placement.rs` because it names every
//! policy, GDT included, while GDT builds on `placement.rs`'s types: the kinds stay low, the
//! factory sits above them all.
use crate::rng::SplitMix64;

use super::gdt::Gdt;
use super::options::ArtifactOptions;
use super::placement::{EdtCounters, PlacementKind, PlacementPolicy, Random, Separate};

impl PlacementKind {
    pub fn build(self) -> Box<dyn PlacementPolicy> {
        let policy = self.build_with(ArtifactOptions::default());
        // A new policy has scored no prediction: `EdtCounters::since` subtracts from it.
        debug_assert_eq!(policy.edt_counters(), EdtCounters::default(), "{policy:?}");
        policy
    }

    /// The policy following the artifact's placement choices where it has them (GDT's
    /// `batch_one_zone` and `lsn_history`).
    pub fn build_with(self, artifact: ArtifactOptions) -> Box<dyn PlacementPolicy> {
        let policy: Box<dyn PlacementPolicy> = match self {
            PlacementKind::Separate => Box::new(Separate),
            PlacementKind::Random { seed } => Box::new(Random { rng: SplitMix64::new(seed) }),
            PlacementKind::Gdt => Box::new(Gdt::with(artifact)),
        };
        // Reports name the policy that runs: it must be the one configuration asked for.
        debug_assert_eq!(policy.name(), self.name(), "{self:?} built another policy");
        policy
    }
}
