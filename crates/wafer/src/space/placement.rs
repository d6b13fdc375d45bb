//! Where pages go: the placement half of the space's policies (the victim half is `gc`). A
//! [`PlacementPolicy`] reads a batch's page descriptors and returns a [`WritePlan`]: the pages
//! in write order, cut into stretches per write group. Each group has at most one open zone;
//! the policy also chooses the placement hint a zone carries when it opens (FDP handle). The
//! policy decides only; `Space::reserve_plan` turns the plan into slot runs and the store's
//! append executor writes them. Compression, grouping by deathtime and NoWA are further
//! policies behind the same trait (000 sec. 3-5).
use flashemu::rng::SplitMix64;

use super::map::PageId;
use super::zone::ZoneId;
use crate::device::{Placement, WritePurpose};

/// Write history entries a page descriptor carries (000 sec. 4: n = 4).
pub const WRITE_HISTORY_LEN: usize = 4;

/// What a placement policy knows of one page of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageDesc {
    pub pid: PageId,
    pub purpose: WritePurpose,
    /// Logical write times of the page's last user write-backs, newest first (0: none).
    pub write_history: [u64; WRITE_HISTORY_LEN],
    /// Bytes the page takes on the device (4096 uncompressed).
    pub stored_bytes: u32,
}

impl PageDesc {
    /// An uncompressed page with no write history.
    pub fn plain(pid: PageId, purpose: WritePurpose) -> PageDesc {
        PageDesc { pid, purpose, write_history: [0; WRITE_HISTORY_LEN], stored_bytes: 4096 }
    }
}

/// A stretch of a plan: the next `pages` entries of [`WritePlan::order`] go to `group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupRun {
    pub group: u32,
    pub pages: u32,
}

/// A placement decision for one batch: `order` lists every batch index exactly once, in the
/// order the pages are written; `groups` cuts it into stretches, one write group each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritePlan {
    pub order: Vec<u32>,
    pub groups: Vec<GroupRun>,
}

impl WritePlan {
    /// All `pages` pages of a batch, in batch order, to one group.
    pub fn single(pages: u32, group: u32) -> WritePlan {
        assert!(pages >= 1);
        WritePlan { order: (0..pages).collect(), groups: vec![GroupRun { group, pages }] }
    }

    pub fn page_count(&self) -> u32 {
        self.order.len() as u32
    }

    /// Checks the plan covers a batch of `pages` pages exactly once, in non-empty stretches.
    pub fn check(&self, pages: usize) -> Result<(), String> {
        let covered: u64 = self.groups.iter().map(|g| u64::from(g.pages)).sum();
        if covered != self.order.len() as u64 || self.order.len() != pages {
            return Err(format!(
                "plan of {} pages in stretches of {covered} for a batch of {pages}",
                self.order.len()
            ));
        }
        if self.groups.iter().any(|g| g.pages == 0) {
            return Err("empty stretch".into());
        }
        let mut seen = vec![false; pages];
        for &i in &self.order {
            match seen.get_mut(i as usize) {
                Some(s) if !*s => *s = true,
                _ => return Err(format!("batch index {i} missing or twice")),
            }
        }
        Ok(())
    }
}

/// What a placement policy may read of the space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacementView {
    /// Slots reserved so far (the space's logical clock).
    pub clock: u64,
    /// Zones that may be open at once: groups are `0..max_open_zones`.
    pub max_open_zones: u32,
}

/// Decides where a batch goes and which hint a zone carries. Deterministic for a given
/// sequence of calls (policies with randomness own a seeded generator).
pub trait PlacementPolicy: std::fmt::Debug + Send + Sync {
    fn name(&self) -> &'static str;
    /// The plan for a batch of user write-back pages (`batch` is not empty).
    fn plan(&mut self, batch: &[PageDesc], view: &PlacementView) -> WritePlan;
    /// The group GC copyback goes to, apart from user writes.
    fn gc_group(&self, view: &PlacementView) -> u32;
    /// The hint every write to `zone` carries while it is open for `group`.
    fn zone_hint(&self, group: u32, zone: ZoneId) -> Placement;
}

/// Placement policies by name, as configuration picks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlacementKind {
    /// One user group (0) and one GC group (1): user write-back and GC copyback fill separate
    /// open zones, so GC's old pages do not mix with freshly written ones.
    #[default]
    Separate,
    /// 000's naive out-of-place placement (sec. 7.2 "random placement"): every batch goes to
    /// one of `max_open_zones - 1` user zones chosen at random; GC copies to the last group.
    Random { seed: u64 },
}

impl PlacementKind {
    /// `handles`: FDP reclaim unit handles (0: no hint).
    pub fn build(self, handles: u16) -> Box<dyn PlacementPolicy> {
        match self {
            PlacementKind::Separate => Box::new(Separate { handles }),
            PlacementKind::Random { seed } => {
                Box::new(Random { handles, rng: SplitMix64::new(seed) })
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PlacementKind::Separate => "separate",
            PlacementKind::Random { .. } => "random",
        }
    }

    /// Open zones this policy needs at least (one user group and the GC group).
    pub fn min_open_zones(self) -> u32 {
        2
    }
}

/// The hint of zone `zone` with `handles` FDP handles: zone index modulo the handle count, so
/// consecutive zones spread over every reclaim unit handle.
fn fdp_hint(handles: u16, zone: ZoneId) -> Placement {
    if handles == 0 {
        Placement::None
    } else {
        Placement::Fdp((zone % u32::from(handles)) as u16)
    }
}

/// User group 0, GC group 1.
#[derive(Debug, Clone)]
struct Separate {
    handles: u16,
}

impl PlacementPolicy for Separate {
    fn name(&self) -> &'static str {
        "separate"
    }
    fn plan(&mut self, batch: &[PageDesc], _view: &PlacementView) -> WritePlan {
        assert!(!batch.is_empty());
        WritePlan::single(batch.len() as u32, 0)
    }
    fn gc_group(&self, view: &PlacementView) -> u32 {
        assert!(view.max_open_zones >= 2);
        1
    }
    fn zone_hint(&self, _group: u32, zone: ZoneId) -> Placement {
        fdp_hint(self.handles, zone)
    }
}

/// A random user group per batch; the last group for GC.
#[derive(Debug, Clone)]
struct Random {
    handles: u16,
    rng: SplitMix64,
}

impl PlacementPolicy for Random {
    fn name(&self) -> &'static str {
        "random"
    }
    fn plan(&mut self, batch: &[PageDesc], view: &PlacementView) -> WritePlan {
        assert!(!batch.is_empty());
        let user_groups = view.max_open_zones - 1;
        assert!(user_groups >= 1);
        let group = (self.rng.next_u64() % u64::from(user_groups)) as u32;
        WritePlan::single(batch.len() as u32, group)
    }
    fn gc_group(&self, view: &PlacementView) -> u32 {
        assert!(view.max_open_zones >= 2);
        view.max_open_zones - 1
    }
    fn zone_hint(&self, _group: u32, zone: ZoneId) -> Placement {
        fdp_hint(self.handles, zone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(n: u64) -> Vec<PageDesc> {
        (0..n).map(|pid| PageDesc::plain(pid, WritePurpose::UserEviction)).collect()
    }

    #[test]
    fn separate_keeps_user_and_gc_apart() {
        let mut p = PlacementKind::Separate.build(0);
        let view = PlacementView { clock: 0, max_open_zones: 2 };
        let plan = p.plan(&batch(5), &view);
        plan.check(5).unwrap();
        assert_eq!(plan.groups, vec![GroupRun { group: 0, pages: 5 }]);
        assert_eq!(p.gc_group(&view), 1);
        assert_eq!(p.zone_hint(0, 7), Placement::None);
        assert_eq!(PlacementKind::Separate.build(3).zone_hint(0, 7), Placement::Fdp(1));
    }

    #[test]
    fn random_spreads_batches_over_the_user_groups_only() {
        let mut p = PlacementKind::Random { seed: 9 }.build(0);
        let view = PlacementView { clock: 0, max_open_zones: 16 };
        let mut used = [0u32; 16];
        for _ in 0..1600 {
            let plan = p.plan(&batch(3), &view);
            plan.check(3).unwrap();
            assert_eq!(plan.groups.len(), 1);
            used[plan.groups[0].group as usize] += 1;
        }
        assert_eq!(p.gc_group(&view), 15);
        assert_eq!(used[15], 0, "the GC group never takes user batches");
        assert!(used[..15].iter().all(|&n| (60..=160).contains(&n)), "{used:?}");
    }

    #[test]
    fn plan_check_finds_gaps_and_duplicates() {
        let mut plan = WritePlan::single(3, 0);
        plan.check(3).unwrap();
        assert!(plan.check(4).is_err());
        plan.order[2] = 0;
        assert!(plan.check(3).is_err());
    }
}
