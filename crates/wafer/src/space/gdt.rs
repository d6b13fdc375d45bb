//! Grouping by deathtime (000 sec. 4.2): a placement policy that estimates each page's expected
//! deathtime (EDT) from its write history, sends pages that should die together to the same
//! zone, and orders GC's copies by EDT so the coldest pages go with the coldest.
//!
//! EDT = WH_newest + (WH_newest - WH_oldest) / (k - 1) over the k >= 2 write times a page's
//! header holds (n = 4; the newest is the write-back being placed, so WH_newest is "now"): the
//! mean recent rewrite interval, extrapolated. A page with a single write time (a load, a new
//! page) has no interval: such pages are grouped by tree (000: "by B-tree index ID") and count as
//! cold. GC moves never update the history (the buffer pool stamps user write-backs only).
//!
//! Groups `0..user` take user write-backs, `user..max_open_zones` GC copies, never mixed. Each
//! group with an open zone holds an EDT range: the mean log2 lifetime (EDT - now when placed)
//! of the pages placed in it while its zone is open. A page goes to the group whose mean is
//! closest; where none is within a factor of 2, a group without an open zone takes it and opens
//! a zone (within the open-zone limit), else the closest one does. A group whose zone filled loses
//! its range and takes the next range that needs one: a zone emptied by GC and opened again starts
//! with whatever range is new, most often the hottest (hot ranges fill their zones first), while
//! full zones keep the cold pages they hold; this is how ranges are reassigned after GC.
use std::ops::Range;

use super::map::PageId;
use super::placement::{
    EdtCounters, PageDesc, PlacementPolicy, PlacementView, WritePlan, WRITE_HISTORY_LEN,
};
use super::zone::ZoneId;

/// A page's EDT is not known (never written back by a user in this process): coldest.
const EDT_UNKNOWN: u64 = u64::MAX;
/// Pages GC moves without a known EDT are grouped as one "tree" of their own.
const UNKNOWN_TREE: u32 = u32::MAX;
/// Write times per page with the artifact's LSN-stamped histories (ZLeanStore keeps 8).
pub const LSN_HISTORY_LEN: usize = 8;
/// A range takes a page whose log2 lifetime is within this of its mean (a factor of 2).
const CLOSE_LOG2: f64 = 1.0;

/// Expected deathtime from a write history, newest first (0: no entry), or None when fewer
/// than two write times are known. Never panics on odd histories (they come from page bytes).
pub fn expected_deathtime(history: &[u64]) -> Option<u64> {
    let known = history.iter().take_while(|&&t| t != 0).count();
    if known < 2 {
        return None;
    }
    let (newest, oldest) = (history[0], history[known - 1]);
    let interval = newest.saturating_sub(oldest) / (known as u64 - 1);
    // A page rewritten at the same clock tick still lives at least one tick.
    let edt = newest.saturating_add(interval.max(1));
    // The death lies ahead of the newest write (lifetimes are log2'd: never zero or less).
    debug_assert!(edt > newest || edt == u64::MAX, "EDT {edt} of {history:?}");
    Some(edt)
}

/// How a page is grouped: by log2 of its expected remaining lifetime (EDT - now, at least one
/// tick), or (no interval known) by tree. A zone fills within a short window, so pages of
/// similar remaining lifetime placed together die together; comparing lifetimes rather than
/// absolute EDTs keeps a range from drifting as its zone fills.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Key {
    Life(f64),
    Tree(u32),
}

impl Key {
    /// Hottest first; pages without an interval after every lifetime, by tree.
    fn order(&self, other: &Key) -> std::cmp::Ordering {
        // `total_cmp` sorts NaN past every lifetime: a NaN key would pass for the coldest.
        debug_assert!(
            [self, other].iter().all(|k| !matches!(k, Key::Life(l) if !l.is_finite())),
            "keys {self:?} {other:?}"
        );
        match (self, other) {
            (Key::Life(a), Key::Life(b)) => a.total_cmp(b),
            (Key::Life(_), Key::Tree(_)) => std::cmp::Ordering::Less,
            (Key::Tree(_), Key::Life(_)) => std::cmp::Ordering::Greater,
            (Key::Tree(a), Key::Tree(b)) => a.cmp(b),
        }
    }
}

/// The EDT range a group holds while its zone is open.
#[derive(Debug, Clone, Copy, PartialEq)]
enum GroupRange {
    /// No open zone: takes the next range that needs one.
    Free,
    /// Mean log2 lifetime of the pages placed (sum and count).
    Life { sum: f64, pages: u64 },
    /// Pages of one tree without an interval.
    Tree(u32),
}

/// The GDT placement policy. Keeps each page's predicted EDT (8 bytes per page id) so GC can
/// sort the pages it moves without reading them first.
#[derive(Debug)]
pub(super) struct Gdt {
    ranges: Vec<GroupRange>,
    edt_by_pid: Vec<u64>,
    /// Newest write time seen (the policy's "now").
    now: u64,
    /// Groups without a zone this plan may still give a range (and so open a zone).
    free_budget: u32,
    counters: EdtCounters,
    /// The artifact's choices this policy follows (`batch_one_zone`, `lsn_history`).
    artifact: super::ArtifactOptions,
    /// With `lsn_history`: per page id, the LSNs of its last user write-backs, newest first
    /// (0: none). Empty otherwise.
    lsn_history_by_pid: Vec<[u64; LSN_HISTORY_LEN]>,
}

impl Gdt {
    #[cfg(test)]
    pub(super) fn new() -> Gdt {
        let gdt = Gdt::with(super::ArtifactOptions::default());
        // The tests of `new` are those of the header's write-clock histories, per page.
        debug_assert!(!gdt.artifact.lsn_history && !gdt.artifact.batch_one_zone, "{gdt:?}");
        gdt
    }

    pub(super) fn with(artifact: super::ArtifactOptions) -> Gdt {
        let gdt = Gdt {
            ranges: Vec::new(),
            edt_by_pid: Vec::new(),
            now: 0,
            free_budget: 0,
            counters: EdtCounters::default(),
            artifact,
            lsn_history_by_pid: Vec::new(),
        };
        // `history_of` copies a header's history into an LSN history's array.
        const { assert!(WRITE_HISTORY_LEN <= LSN_HISTORY_LEN) };
        gdt
    }

    /// The page's write times, newest first, for this write-back: the header's 4 write-clock
    /// times, or (`lsn_history`) the policy's 8 LSNs with this write-back's LSN pushed in. A
    /// page never logged (LSN 0), or beyond the page-id limit, gets no new entry.
    fn history_of(&mut self, d: &PageDesc) -> [u64; LSN_HISTORY_LEN] {
        let mut out = [0u64; LSN_HISTORY_LEN];
        if !self.artifact.lsn_history {
            out[..WRITE_HISTORY_LEN].copy_from_slice(&d.write_history);
            return out;
        }
        let index = usize::try_from(d.pid).unwrap_or(usize::MAX);
        if index >= super::map::PAGE_ID_LIMIT as usize {
            return out;
        }
        if index >= self.lsn_history_by_pid.len() {
            self.lsn_history_by_pid.resize(index + 1, [0; LSN_HISTORY_LEN]);
        }
        let h = &mut self.lsn_history_by_pid[index];
        // A write-back without a change since the last one adds no death.
        if d.lsn != 0 && d.lsn != h[0] {
            h.copy_within(0..LSN_HISTORY_LEN - 1, 1);
            h[0] = d.lsn;
        }
        // The write-back being placed is the newest entry: EDT extrapolates from "now".
        debug_assert!(d.lsn == 0 || h[0] == d.lsn, "page {}: {h:?} lacks LSN {}", d.pid, d.lsn);
        *h
    }

    /// GC's groups of `max_open_zones`: the last quarter (at least one); users take the rest.
    fn gc_groups(max_open_zones: u32) -> Range<u32> {
        assert!(max_open_zones >= 2, "GDT needs a user and a GC group");
        let gc = (max_open_zones / 4).max(1);
        max_open_zones - gc..max_open_zones
    }

    /// Groups whose zone filled lose their ranges.
    fn refresh(&mut self, view: &PlacementView<'_>) {
        let groups = view.max_open_zones as usize;
        assert_eq!(view.room_slots.len(), groups);
        self.ranges.resize(groups, GroupRange::Free);
        for (range, room) in self.ranges.iter_mut().zip(view.room_slots) {
            if *room == 0 {
                *range = GroupRange::Free;
            }
        }
    }

    /// log2 of the lifetime left until `edt` (at least one tick).
    fn life_key(&self, edt: u64) -> Key {
        let life = (edt.saturating_sub(self.now).max(1) as f64).log2();
        // At least one tick: ranges average these, and a negative or NaN mean misplaces pages.
        debug_assert!(life.is_finite() && life >= 0.0, "life {life} of EDT {edt}");
        Key::Life(life)
    }

    /// The group of `groups` a page of `key` goes to; its range takes the page.
    fn choose(&mut self, key: Key, groups: Range<u32>) -> u32 {
        assert!(!groups.is_empty() && groups.end as usize <= self.ranges.len());
        let free = groups
            .clone()
            .find(|&g| self.ranges[g as usize] == GroupRange::Free)
            .filter(|_| self.free_budget > 0);
        let chosen = match key {
            Key::Life(life) => self.choose_life(life, groups, free),
            Key::Tree(tree) => self.choose_tree(tree, groups, free),
        };
        let claim = self.free_budget > 0;
        let range = &mut self.ranges[chosen as usize];
        match (key, *range) {
            // Out of budget, a page may still land in a group without a zone (no other
            // choice): it does not claim the group's range.
            (_, GroupRange::Free) if !claim => {}
            (Key::Life(life), GroupRange::Free) => {
                *range = GroupRange::Life { sum: life, pages: 1 };
                self.free_budget -= 1;
            }
            (Key::Life(life), GroupRange::Life { sum, pages }) => {
                *range = GroupRange::Life { sum: sum + life, pages: pages + 1 }
            }
            (Key::Tree(tree), GroupRange::Free) => {
                *range = GroupRange::Tree(tree);
                self.free_budget -= 1;
            }
            // A page placed where its key does not match (no free group) leaves the range.
            _ => {}
        }
        chosen
    }

    fn choose_life(&self, life: f64, groups: Range<u32>, free: Option<u32>) -> u32 {
        let closest = groups
            .clone()
            .filter_map(|g| match self.ranges[g as usize] {
                GroupRange::Life { sum, pages } => Some((g, (sum / pages as f64 - life).abs())),
                _ => None,
            })
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let chosen = match (closest, free) {
            (Some((g, distance)), _) if distance <= CLOSE_LOG2 => g,
            (_, Some(f)) => f,
            (Some((g, _)), None) => g,
            // Every group holds pages without an interval: the first takes it.
            (None, None) => groups.start,
        };
        // `choose` indexes the ranges by this: one of the groups it offered, the free one too.
        debug_assert!(groups.contains(&chosen), "group {chosen} outside {groups:?}");
        chosen
    }

    fn choose_tree(&self, tree: u32, groups: Range<u32>, free: Option<u32>) -> u32 {
        let holding = |want: Option<u32>| {
            groups.clone().find(|&g| match self.ranges[g as usize] {
                GroupRange::Tree(t) => want.is_none_or(|w| w == t),
                _ => false,
            })
        };
        let chosen = holding(Some(tree)).or(free).or_else(|| holding(None)).unwrap_or_else(|| {
            // Only lifetime ranges: the coldest (longest mean lifetime) takes the page.
            let coldest = groups.clone().max_by(|&a, &b| {
                let mean = |g: u32| match self.ranges[g as usize] {
                    GroupRange::Life { sum, pages } => sum / pages as f64,
                    _ => f64::MAX,
                };
                mean(a).total_cmp(&mean(b))
            });
            coldest.unwrap_or(groups.start)
        });
        // As `choose_life`: one of the groups `choose` offered.
        debug_assert!(groups.contains(&chosen), "group {chosen} outside {groups:?}");
        chosen
    }

    /// The batch's groups fitted to whole slots (`group_pack`): pages of a group's emptiest
    /// slot move to a neighbouring range where that saves a slot; the ranges follow them.
    fn settle(&mut self, groups: &mut [u32], sizes: &[u16], keys: &[Key]) {
        // One group, size and key per page of the batch: `group_pack` and `keys[page]` index
        // all three by the same page number.
        debug_assert!(groups.len() == sizes.len() && sizes.len() == keys.len(), "batch columns");
        let mut order: Vec<u32> = Vec::new();
        for &g in groups.iter() {
            if !order.contains(&g) {
                order.push(g);
            }
        }
        let range_key = |r: &GroupRange| match *r {
            GroupRange::Life { sum, pages } => Key::Life(sum / pages.max(1) as f64),
            GroupRange::Tree(t) => Key::Tree(t),
            GroupRange::Free => Key::Tree(UNKNOWN_TREE),
        };
        order.sort_by(|a, b| {
            let (ka, kb) =
                (range_key(&self.ranges[*a as usize]), range_key(&self.ranges[*b as usize]));
            ka.order(&kb).then(a.cmp(b))
        });
        for (page, from, to) in super::group_pack::settle(groups, sizes, &order) {
            let Key::Life(life) = keys[page] else { continue };
            if let GroupRange::Life { sum, pages } = self.ranges[from as usize] {
                self.ranges[from as usize] = match pages {
                    0 | 1 => GroupRange::Free,
                    _ => GroupRange::Life { sum: sum - life, pages: pages - 1 },
                };
            }
            if let GroupRange::Life { sum, pages } = self.ranges[to as usize] {
                self.ranges[to as usize] = GroupRange::Life { sum: sum + life, pages: pages + 1 };
            }
        }
    }

    /// A user write-back of `d`: its death, if predicted, is scored; its new EDT is kept.
    fn observe(&mut self, d: &PageDesc) -> Key {
        let history = self.history_of(d);
        let (now, previous) = (history[0], history[1]);
        self.now = self.now.max(now);
        let index = usize::try_from(d.pid).unwrap_or(usize::MAX);
        let predicted = self.edt_by_pid.get(index).copied().unwrap_or(EDT_UNKNOWN);
        if predicted != EDT_UNKNOWN && previous != 0 && now > previous && predicted > previous {
            let (observed_life, predicted_life) = (now - previous, predicted - previous);
            let c = &mut self.counters;
            c.predictions += 1;
            c.within_2x += u64::from(
                observed_life <= 2 * predicted_life && predicted_life <= 2 * observed_life,
            );
            c.abs_error_sum += now.abs_diff(predicted);
            c.observed_lifetime_sum += observed_life;
            // Reported as a fraction of the predictions: it must stay within 0..=1.
            debug_assert!(c.within_2x <= c.predictions, "{c:?}");
        }
        let edt = expected_deathtime(&history);
        if index < super::map::PAGE_ID_LIMIT as usize {
            if index >= self.edt_by_pid.len() {
                self.edt_by_pid.resize(index + 1, EDT_UNKNOWN);
            }
            self.edt_by_pid[index] = edt.unwrap_or(EDT_UNKNOWN);
        }
        edt.map_or(Key::Tree(d.tree), |e| self.life_key(e))
    }

    /// GC's copies of `pages` sorted coldest first, each to the group of `targets` whose range
    /// is closest; the plan's stretches follow the sorted order.
    fn plan_copies(
        &mut self,
        pages: &[PageId],
        targets: Range<u32>,
        view: &PlacementView<'_>,
    ) -> WritePlan {
        assert!(!pages.is_empty() && !targets.is_empty());
        self.refresh(view);
        // GC cannot wait for zones: it opens new ranges only while half the empty zones
        // remain for the copies' volume.
        self.free_budget = view.empty_zones / 2;
        let keys: Vec<Key> = pages.iter().map(|p| self.gc_key(*p)).collect();
        let mut sorted: Vec<usize> = (0..pages.len()).collect();
        sorted.sort_by(|&a, &b| keys[b].order(&keys[a]).then(a.cmp(&b)));
        let mut groups = vec![targets.start; pages.len()];
        for &i in &sorted {
            groups[i] = self.choose(keys[i], targets.clone());
        }
        // Coldest first: the plan's stretches follow the sorted order.
        let in_order: Vec<u32> = sorted.iter().map(|&i| groups[i]).collect();
        let plan = WritePlan::by_group(&in_order);
        let order = plan.order.iter().map(|&k| sorted[k as usize] as u32).collect();
        WritePlan { order, groups: plan.groups }
    }

    /// The artifact's placement of a whole batch: the user group whose range is closest to
    /// the batch's mean log2 lifetime (a batch of pages without an interval: by its first
    /// page's tree); the range takes every page's lifetime.
    fn choose_for_batch(&mut self, keys: &[Key], users: Range<u32>) -> u32 {
        assert!(!keys.is_empty());
        let lives: Vec<f64> = keys
            .iter()
            .filter_map(|k| if let Key::Life(l) = k { Some(*l) } else { None })
            .collect();
        let Some(first) = keys.first().copied() else { return users.start };
        if lives.is_empty() {
            return self.choose(first, users);
        }
        let total: f64 = lives.iter().sum();
        let mean = total / lives.len() as f64;
        let group = self.choose(Key::Life(mean), users);
        // `choose` counted the mean once; the range holds each page's lifetime instead.
        if let GroupRange::Life { sum, pages } = self.ranges[group as usize] {
            let range =
                GroupRange::Life { sum: sum - mean + total, pages: pages - 1 + lives.len() as u64 };
            self.ranges[group as usize] = range;
        }
        group
    }

    /// GC's key for `pid`: its predicted EDT; one that passed already (the page outlived its
    /// prediction) is pushed out by as long as it is overdue; unknown ones are the coldest.
    fn gc_key(&self, pid: PageId) -> Key {
        let edt = usize::try_from(pid)
            .ok()
            .and_then(|i| self.edt_by_pid.get(i).copied())
            .unwrap_or(EDT_UNKNOWN);
        let key = match edt {
            EDT_UNKNOWN => Key::Tree(UNKNOWN_TREE),
            e if e <= self.now => self.life_key(self.now.saturating_add(self.now - e)),
            e => self.life_key(e),
        };
        // GC groups its copies apart from user trees: a lifetime, or the unknown "tree".
        debug_assert!(matches!(key, Key::Life(_) | Key::Tree(UNKNOWN_TREE)), "{key:?}");
        key
    }
}

impl PlacementPolicy for Gdt {
    fn name(&self) -> &'static str {
        // Per-page LSN histories exist only when the artifact asks for them (memory per page).
        debug_assert!(self.artifact.lsn_history || self.lsn_history_by_pid.is_empty());
        // Configuration and reports spell the policy alike: one name, the kind's.
        super::placement::PlacementKind::Gdt.name()
    }

    /// The batch sorted by EDT (pages without an interval after, by tree), each page to the
    /// user group whose range is closest.
    fn plan(&mut self, batch: &[PageDesc], view: &PlacementView<'_>) -> WritePlan {
        assert!(!batch.is_empty());
        self.refresh(view);
        // User writes may open every free group: short of zones, they wait for GC.
        self.free_budget = u32::MAX;
        let keys: Vec<Key> = batch.iter().map(|d| self.observe(d)).collect();
        let mut sorted: Vec<usize> = (0..batch.len()).collect();
        sorted.sort_by(|&a, &b| keys[a].order(&keys[b]).then(a.cmp(&b)));
        let users = 0..Self::gc_groups(view.max_open_zones).start;
        if self.artifact.batch_one_zone {
            let group = self.choose_for_batch(&keys, users.clone());
            return WritePlan::single(batch.len() as u32, group);
        }
        let mut groups = vec![0u32; batch.len()];
        for i in sorted {
            groups[i] = self.choose(keys[i], users.clone());
        }
        let sizes: Vec<u16> = batch
            .iter()
            .map(|d| d.stored_bytes.clamp(1, super::map::SLOT_BYTES as u32) as u16)
            .collect();
        self.settle(&mut groups, &sizes, &keys);
        assert!(groups.iter().all(|g| users.contains(g)));
        WritePlan::by_group(&groups)
    }

    fn gc_group(&self, view: &PlacementView<'_>) -> u32 {
        let group = Self::gc_groups(view.max_open_zones).start;
        // GC's groups are the last quarter: at least one user group lies before them.
        debug_assert!(0 < group && group < view.max_open_zones, "GC group {group} of {view:?}");
        group
    }

    /// The pages sorted coldest first, each to the GC group whose range is closest; the
    /// victim policy's group is not used (GDT's GC groups are its own).
    fn plan_gc(
        &mut self,
        pages: &[PageId],
        _dest_group: u32,
        view: &PlacementView<'_>,
    ) -> WritePlan {
        let plan = self.plan_copies(pages, Self::gc_groups(view.max_open_zones), view);
        // GC's batch commits each page by the plan's order: it must cover the copies once.
        debug_assert_eq!(plan.check(pages.len()), Ok(()), "a GC plan of another batch");
        plan
    }

    /// The artifact's way: the pages coldest first, each to the user group whose range is
    /// closest, beside the user write-backs.
    fn plan_gc_with_user(&mut self, pages: &[PageId], view: &PlacementView<'_>) -> WritePlan {
        let users = 0..Self::gc_groups(view.max_open_zones).start;
        let plan = self.plan_copies(pages, users, view);
        debug_assert_eq!(plan.check(pages.len()), Ok(()), "a GC plan of another batch");
        plan
    }

    fn zone_opened(&mut self, group: u32, _zone: ZoneId) {
        // Zones open for the groups of a plan, which `refresh` sized the ranges for.
        debug_assert!((group as usize) < self.ranges.len(), "group {group} of {:?}", self.ranges);
    }

    fn edt_counters(&self) -> EdtCounters {
        let c = self.counters;
        // Each scored prediction adds its observed lifetime: within-2x ones are among them.
        debug_assert!(c.within_2x <= c.predictions, "{c:?}");
        debug_assert!(c.predictions == 0 || c.observed_lifetime_sum > 0, "{c:?}");
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::WritePurpose;
    use crate::space::placement::GroupRun;

    fn desc(pid: PageId, history: [u64; 4]) -> PageDesc {
        PageDesc { write_history: history, ..PageDesc::plain(pid, WritePurpose::UserEviction) }
    }

    #[test]
    fn edt_extrapolates_the_mean_rewrite_interval() {
        assert_eq!(expected_deathtime(&[100, 90, 80, 70]), Some(110));
        assert_eq!(expected_deathtime(&[100, 40, 0, 0]), Some(160));
        assert_eq!(expected_deathtime(&[100, 0, 0, 0]), None, "written once: no interval");
        assert_eq!(expected_deathtime(&[0; 4]), None);
        assert_eq!(expected_deathtime(&[5, 5, 5, 5]), Some(6), "same tick: one tick on");
        // Histories come from page bytes: out of order or huge, they must not panic.
        assert_eq!(expected_deathtime(&[3, 9, 0, 0]), Some(4));
        assert_eq!(expected_deathtime(&[u64::MAX, 1, 0, 0]), Some(u64::MAX));
    }

    fn view(room: &[u32]) -> PlacementView<'_> {
        PlacementView {
            clock: 0,
            max_open_zones: room.len() as u32,
            room_slots: room,
            empty_zones: 64,
        }
    }

    #[test]
    fn pages_of_similar_deathtime_share_a_group_and_far_ones_do_not() {
        let mut p = Gdt::new();
        let room = [0u32; 8]; // nothing open yet: 6 user groups, 2 GC groups
        let batch = [
            desc(1, [1000, 990, 980, 970]), // EDT 1010: hot
            desc(2, [1000, 100, 0, 0]),     // EDT 1900: cold
            desc(3, [1000, 992, 984, 976]), // EDT 1008: hot
            desc(4, [1000, 0, 0, 0]),       // no interval: by tree
        ];
        let plan = p.plan(&batch, &view(&room));
        plan.check(4).unwrap();
        let group_of = |i: u32| {
            let mut at = 0;
            for run in &plan.groups {
                let stretch = &plan.order[at..at + run.pages as usize];
                if stretch.contains(&i) {
                    return run.group;
                }
                at += run.pages as usize;
            }
            unreachable!()
        };
        assert_eq!(group_of(0), group_of(2), "hot pages together");
        assert_ne!(group_of(0), group_of(1));
        assert_ne!(group_of(3), group_of(0));
        assert_ne!(group_of(3), group_of(1));
        assert!(plan.groups.iter().all(|r| r.group < 6), "user groups only");
    }

    #[test]
    fn gc_sends_the_coldest_first_to_its_own_groups_and_deaths_are_scored() {
        let mut p = Gdt::new();
        let room = [0u32; 4]; // 3 user groups, 1 GC group
        p.plan(&[desc(1, [100, 90, 0, 0]), desc(2, [100, 20, 0, 0])], &view(&room));
        // Page 1 predicted to die at 110; it dies at 112 (within 2x of its 10-tick lifetime).
        p.plan(&[desc(1, [112, 100, 90, 0])], &view(&room));
        let c = p.edt_counters();
        assert_eq!((c.predictions, c.within_2x, c.abs_error_sum), (1, 1, 2));
        let plan = p.plan_gc(&[1, 2, 7], 0, &view(&room));
        plan.check(3).unwrap();
        assert!(plan.groups.iter().all(|r| r.group == 3));
        // Unknown (page 7) is coldest, then page 2 (EDT 180), then page 1 (EDT 124).
        assert_eq!(plan.order, vec![2, 1, 0]);
    }

    fn artifact(f: impl FnOnce(&mut crate::space::ArtifactOptions)) -> Gdt {
        let mut a = crate::space::ArtifactOptions::default();
        f(&mut a);
        Gdt::with(a)
    }

    /// `gc_with_user`: the same coldest-first order, into user groups instead of GC groups.
    #[test]
    fn gc_with_user_plans_coldest_first_into_user_groups() {
        let mut p = Gdt::new();
        let room = [0u32; 4]; // 3 user groups, 1 GC group
        p.plan(&[desc(1, [100, 90, 0, 0]), desc(2, [100, 20, 0, 0])], &view(&room));
        let plan = p.plan_gc_with_user(&[1, 2, 7], &view(&room));
        plan.check(3).unwrap();
        assert!(plan.groups.iter().all(|r| r.group < 3), "{:?}", plan.groups);
        assert_eq!(plan.order, vec![2, 1, 0], "unknown, then EDT 180, then EDT 110");
    }

    /// `batch_one_zone`: a batch of hot and cold pages goes whole to one group, the one whose
    /// range is closest to the batch's mean; that range then holds every page.
    #[test]
    fn batch_one_zone_sends_a_batch_to_the_closest_range() {
        let mut p = artifact(|a| a.batch_one_zone = true);
        let room = [8u32; 8]; // every group has room: ranges stay
                              // Two batches set up two ranges: lifetime 10 (log2 3.3) and 1000 (log2 10).
        let hot = p.plan(&[desc(1, [100, 90, 0, 0]), desc(2, [100, 90, 0, 0])], &view(&room));
        let cold = p.plan(&[desc(3, [1100, 100, 0, 0])], &view(&room));
        assert_eq!((hot.groups.len(), cold.groups.len()), (1, 1));
        assert_ne!(hot.groups[0].group, cold.groups[0].group);
        // Mean lifetime log2 of (8, 16, 16) ~ 3.7: the hot range, all three pages.
        let batch =
            [desc(4, [1108, 1100, 0, 0]), desc(5, [1116, 1100, 0, 0]), desc(6, [1116, 1100, 0, 0])];
        let plan = p.plan(&batch, &view(&room));
        plan.check(3).unwrap();
        assert_eq!(plan.groups, vec![GroupRun { group: hot.groups[0].group, pages: 3 }]);
        match p.ranges[hot.groups[0].group as usize] {
            GroupRange::Life { pages, .. } => assert_eq!(pages, 5),
            other => panic!("{other:?}"),
        }
    }

    /// `lsn_history`: deathtimes come from the page LSNs of the policy's own 8-entry history,
    /// not from the header's write clock; a write-back with an unchanged LSN adds no entry.
    #[test]
    fn lsn_history_predicts_from_eight_lsn_stamps() {
        let mut p = artifact(|a| a.lsn_history = true);
        let room = [8u32; 4];
        let at = |lsn: u64| PageDesc { lsn, ..desc(1, [5, 4, 3, 2]) };
        for lsn in [10, 20, 20, 30, 40, 50, 60, 70, 80, 90, 100] {
            p.plan(&[at(lsn)], &view(&room));
        }
        assert_eq!(p.lsn_history_by_pid[1], [100, 90, 80, 70, 60, 50, 40, 30]);
        assert_eq!(p.edt_by_pid[1], 110, "interval 10 over the 8 stamps");
        assert_eq!(p.now, 100);
        // The header's history would say EDT 6: not used.
        let plain = &mut Gdt::new();
        plain.plan(&[at(100)], &view(&room));
        assert_eq!(plain.edt_by_pid[1], 6);
        assert!(plain.lsn_history_by_pid.is_empty());
    }

    /// 000 Figure 5: eight pages with deathtimes 1, 2, 4, 6, 35, 50, 60, 74 written at time 0
    /// into zones of four. Grouped by deathtime, the zone collected at time 10 holds no valid
    /// page; placed at random (one fixed interleaving), it is half valid.
    #[test]
    fn figure_5_grouping_empties_the_first_victim() {
        let deaths = [1u64, 2, 4, 6, 35, 50, 60, 74];
        let mut p = Gdt::new();
        let room = [0u32; 4];
        // Write times that give these EDTs at time 100 (shifted by 100 so times stay > 0).
        let batch: Vec<PageDesc> =
            deaths.iter().enumerate().map(|(i, d)| desc(i as u64, [100, 100 - d, 0, 0])).collect();
        let plan = p.plan(&batch, &view(&room));
        plan.check(8).unwrap();
        // Each group fills a zone of its own.
        let mut at = 0usize;
        let zones: Vec<Vec<u64>> = plan
            .groups
            .iter()
            .map(|run| {
                let stretch = &plan.order[at..at + run.pages as usize];
                at += run.pages as usize;
                stretch.iter().map(|&i| deaths[i as usize]).collect()
            })
            .collect();
        assert!(zones.iter().all(|z| z.len() <= 4), "{zones:?}");
        let valid_at = |zone: &Vec<u64>, t: u64| zone.iter().filter(|&&d| d > t).count();
        let gdt_victim = zones.iter().map(|z| valid_at(z, 10)).min().unwrap_or(4);
        assert_eq!(gdt_victim, 0, "grouped: {zones:?}");
        let random = [vec![1u64, 35, 4, 60], vec![2, 50, 6, 74]];
        let random_victim = random.iter().map(|z| valid_at(z, 10)).min().unwrap_or(4);
        assert_eq!(random_victim, 2, "random placement: 50% valid");
    }
}
