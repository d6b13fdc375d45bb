//! Where pages go: the placement half of the space's policies (the victim half is `gc`). A
//! [`PlacementPolicy`] reads a batch's page descriptors and returns a [`WritePlan`]: the pages
//! in write order, cut into stretches per write group. Each group has at most one open zone;
//! the policy also chooses the placement hint a zone carries when it opens (FDP handle). The
//! policy decides only; `Space::reserve_plan` turns the plan into slot runs and the store's
//! append executor writes them. Compression, grouping by deathtime and NoWA are further
//! policies behind the same trait (000 sec. 3-5).
use crate::rng::SplitMix64;

use super::map::PageId;
use super::zone::ZoneId;
use crate::device::WritePurpose;

/// Write history entries a page descriptor carries (000 sec. 4: n = 4).
pub const WRITE_HISTORY_LEN: usize = 4;

/// What a placement policy knows of one page of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageDesc {
    pub pid: PageId,
    pub purpose: WritePurpose,
    /// Logical write times of the page's last user write-backs, newest first (0: none); the
    /// newest is this write-back's own.
    pub write_history: [u64; WRITE_HISTORY_LEN],
    /// The tree the page belongs to (pages without a history are grouped by it).
    pub tree: u32,
    /// Bytes the page takes on the device (4096 uncompressed).
    pub stored_bytes: u32,
    /// The page's LSN at this write-back (0: not known), the artifact's history stamp.
    pub lsn: u64,
}

impl PageDesc {
    /// An uncompressed page with no write history.
    pub fn plain(pid: PageId, purpose: WritePurpose) -> PageDesc {
        // The map names no page id past its limit: a write-back of one has no place to go.
        debug_assert!(pid < super::map::PAGE_ID_LIMIT, "page id {pid}");
        let desc = PageDesc {
            pid,
            purpose,
            write_history: [0; WRITE_HISTORY_LEN],
            tree: 0,
            stored_bytes: 4096,
            lsn: 0,
        };
        // Uncompressed: the page fills exactly one slot.
        debug_assert_eq!(u64::from(desc.stored_bytes), super::map::SLOT_BYTES, "{desc:?}");
        desc
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

    /// Page `i` of a batch to `groups[i]`: one stretch per group, in order of each group's
    /// first page, pages within a group in batch order.
    pub fn by_group(groups: &[u32]) -> WritePlan {
        assert!(!groups.is_empty() && groups.len() <= u32::MAX as usize);
        let mut firsts: Vec<u32> = Vec::new();
        for &g in groups {
            if !firsts.contains(&g) {
                firsts.push(g);
            }
        }
        let mut order = Vec::with_capacity(groups.len());
        let mut stretches = Vec::with_capacity(firsts.len());
        for &g in &firsts {
            let before = order.len();
            order.extend((0..groups.len() as u32).filter(|&i| groups[i as usize] == g));
            stretches.push(GroupRun { group: g, pages: (order.len() - before) as u32 });
        }
        assert_eq!(order.len(), groups.len());
        WritePlan { order, groups: stretches }
    }

    pub fn page_count(&self) -> u32 {
        // Reservation takes this many slots and runs the stretches: they must agree.
        debug_assert_eq!(
            self.groups.iter().map(|g| u64::from(g.pages)).sum::<u64>(),
            self.order.len() as u64,
            "stretches do not cover the plan's order"
        );
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
        // As many distinct indices below `pages` as pages: every one of the batch is written.
        debug_assert!(seen.iter().all(|s| *s), "a batch index not covered");
        Ok(())
    }
}

/// What a placement policy may read of the space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacementView<'a> {
    /// Slots reserved so far (the space's logical clock).
    pub clock: u64,
    /// Zones that may be open at once: groups are `0..max_open_zones`.
    pub max_open_zones: u32,
    /// Per group, slots left in its open zone (0: none open; its next write opens one).
    pub room_slots: &'a [u32],
    /// Empty zones now: GC's copies must fit them (a GC plan that opens more zones than
    /// there are is replaced by one to the victim policy's group).
    pub empty_zones: u32,
}

/// Accounting of a policy's deathtime predictions (000 sec. 4.2): each user write-back of a
/// page whose death was predicted compares the predicted lifetime with the observed one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EdtCounters {
    /// Deaths observed of pages with a prediction.
    pub predictions: u64,
    /// Of those, observed lifetime within a factor of 2 of the predicted one.
    pub within_2x: u64,
    /// Sum over them of |observed - predicted| death time, in write-clock units.
    pub abs_error_sum: u64,
    /// Sum of the observed lifetimes (to scale the error).
    pub observed_lifetime_sum: u64,
}

impl EdtCounters {
    pub fn since(&self, earlier: &EdtCounters) -> EdtCounters {
        // Cumulative counts: an earlier reading of the same counters is never ahead of this.
        debug_assert!(
            earlier.predictions <= self.predictions && earlier.within_2x <= self.within_2x,
            "EDT counters went backwards"
        );
        EdtCounters {
            predictions: self.predictions.saturating_sub(earlier.predictions),
            within_2x: self.within_2x.saturating_sub(earlier.within_2x),
            abs_error_sum: self.abs_error_sum.saturating_sub(earlier.abs_error_sum),
            observed_lifetime_sum: self
                .observed_lifetime_sum
                .saturating_sub(earlier.observed_lifetime_sum),
        }
    }
}

/// Decides where a batch goes and which hint a zone carries. Deterministic for a given
/// sequence of calls (policies with randomness own a seeded generator).
pub trait PlacementPolicy: std::fmt::Debug + Send + Sync {
    fn name(&self) -> &'static str;
    /// The plan for a batch of user write-back pages (`batch` is not empty).
    fn plan(&mut self, batch: &[PageDesc], view: &PlacementView<'_>) -> WritePlan;
    /// The group GC copyback goes to, apart from user writes.
    fn gc_group(&self, view: &PlacementView<'_>) -> u32;
    /// The plan for GC's copies of `pages` (a victim's valid pages, or several victims'), which
    /// the victim policy sends to `dest_group`: the copy order and the group of each.
    fn plan_gc(
        &mut self,
        pages: &[PageId],
        dest_group: u32,
        _view: &PlacementView<'_>,
    ) -> WritePlan {
        // A plan of no pages is one empty stretch, which `WritePlan::check` refuses.
        debug_assert!(!pages.is_empty(), "a GC plan for no pages");
        WritePlan::single(pages.len() as u32, dest_group)
    }
    /// The plan for GC's copies of `pages` mixed into the user write stream (the artifact's
    /// `gc_with_user`): user groups only. By default all to user group 0.
    fn plan_gc_with_user(&mut self, pages: &[PageId], _view: &PlacementView<'_>) -> WritePlan {
        debug_assert!(!pages.is_empty(), "a GC plan for no pages");
        WritePlan::single(pages.len() as u32, 0)
    }
    /// `zone` opens for `group` (the space chooses its FDP handle: `Space::fdp_hint`).
    fn zone_opened(&mut self, group: u32, zone: ZoneId);
    /// Deathtime prediction accounting (zeros for policies that predict none).
    fn edt_counters(&self) -> EdtCounters {
        // GDT predicts deaths: reporting zeros for it would hide its accuracy.
        debug_assert_ne!(self.name(), PlacementKind::Gdt.name(), "GDT reports its own counters");
        EdtCounters::default()
    }
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
    /// Grouping by deathtime (000 sec. 4.2, `gdt.rs`): pages to the group whose EDT range is
    /// closest; GC's copies sorted coldest first into GC groups of their own.
    Gdt,
}

impl PlacementKind {
    pub fn name(self) -> &'static str {
        let name = match self {
            PlacementKind::Separate => "separate",
            PlacementKind::Random { .. } => "random",
            PlacementKind::Gdt => "gdt",
        };
        // Configuration matches names as typed, lowercased: one with a capital never matches.
        debug_assert!(name.bytes().all(|b| b.is_ascii_lowercase()), "{name}");
        name
    }

    /// Open zones this policy needs at least (one user group and the GC group).
    pub fn min_open_zones(self) -> u32 {
        let min = 2;
        // With that few open zones the policy's GC group is still one of them, after a user
        // group (options validate `max_open_zones` against this alone).
        debug_assert!(
            {
                let room = [0; 2];
                let view = PlacementView {
                    clock: 0,
                    max_open_zones: min,
                    room_slots: &room,
                    empty_zones: 0,
                };
                let gc = self.build().gc_group(&view);
                0 < gc && gc < min
            },
            "{self:?} needs more than {min} open zones"
        );
        min
    }
}

/// User group 0, GC group 1.
#[derive(Debug, Clone)]
pub(super) struct Separate;

impl PlacementPolicy for Separate {
    fn name(&self) -> &'static str {
        // Configuration and reports spell the policy alike: one name, the kind's.
        PlacementKind::Separate.name()
    }
    fn plan(&mut self, batch: &[PageDesc], _view: &PlacementView<'_>) -> WritePlan {
        assert!(!batch.is_empty());
        WritePlan::single(batch.len() as u32, 0)
    }
    fn gc_group(&self, view: &PlacementView<'_>) -> u32 {
        assert!(view.max_open_zones >= 2);
        1
    }
    fn zone_opened(&mut self, group: u32, zone: ZoneId) {
        // Groups are open zones and zones are named by locations: both within what they name.
        debug_assert!(zone < super::map::ZONE_COUNT_LIMIT, "zone {zone}");
        debug_assert!(group < super::map::ZONE_COUNT_LIMIT, "group {group}");
    }
}

/// A random user group per batch; the last group for GC.
#[derive(Debug, Clone)]
pub(super) struct Random {
    pub(super) rng: SplitMix64,
}

impl PlacementPolicy for Random {
    fn name(&self) -> &'static str {
        // Configuration and reports spell the policy alike: one name, the kind's.
        // (The name does not carry the seed.)
        PlacementKind::Random { seed: 0 }.name()
    }
    fn plan(&mut self, batch: &[PageDesc], view: &PlacementView<'_>) -> WritePlan {
        assert!(!batch.is_empty());
        let user_groups = view.max_open_zones - 1;
        assert!(user_groups >= 1);
        let group = (self.rng.next_u64() % u64::from(user_groups)) as u32;
        WritePlan::single(batch.len() as u32, group)
    }
    fn gc_group(&self, view: &PlacementView<'_>) -> u32 {
        assert!(view.max_open_zones >= 2);
        view.max_open_zones - 1
    }
    /// As a user batch: one random user group.
    fn plan_gc_with_user(&mut self, pages: &[PageId], view: &PlacementView<'_>) -> WritePlan {
        let user_groups = view.max_open_zones - 1;
        assert!(user_groups >= 1 && !pages.is_empty());
        let group = (self.rng.next_u64() % u64::from(user_groups)) as u32;
        WritePlan::single(pages.len() as u32, group)
    }
    fn zone_opened(&mut self, group: u32, zone: ZoneId) {
        // Groups are open zones and zones are named by locations: both within what they name.
        debug_assert!(zone < super::map::ZONE_COUNT_LIMIT, "zone {zone}");
        debug_assert!(group < super::map::ZONE_COUNT_LIMIT, "group {group}");
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
        let mut p = PlacementKind::Separate.build();
        let view =
            PlacementView { clock: 0, max_open_zones: 2, room_slots: &[0, 0], empty_zones: 8 };
        let plan = p.plan(&batch(5), &view);
        plan.check(5).unwrap();
        assert_eq!(plan.groups, vec![GroupRun { group: 0, pages: 5 }]);
        assert_eq!(p.gc_group(&view), 1);
    }

    #[test]
    fn random_spreads_batches_over_the_user_groups_only() {
        let mut p = PlacementKind::Random { seed: 9 }.build();
        let view =
            PlacementView { clock: 0, max_open_zones: 16, room_slots: &[0; 16], empty_zones: 32 };
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
    fn by_group_makes_one_stretch_per_group_in_first_seen_order() {
        let plan = WritePlan::by_group(&[3, 1, 3, 0, 1]);
        plan.check(5).unwrap();
        assert_eq!(plan.order, vec![0, 2, 1, 4, 3]);
        let runs: Vec<(u32, u32)> = plan.groups.iter().map(|r| (r.group, r.pages)).collect();
        assert_eq!(runs, vec![(3, 2), (1, 2), (0, 1)]);
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
