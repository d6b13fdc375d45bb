//! Which page ids blobs may use: free extents of the blob region, taken before a batch and
//! given back by it. The committed free extents are the system tree's entries (start -> length);
//! this keeps a mirror of them and what is in flight, and returns the tree changes a batch must
//! log. Protocol: the module doc of [`crate::blob`].
use crate::page::PageId;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;

/// A change the batch applies to the free-extent tree (keys: start, values: length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeOp {
    Put { start: PageId, len: u64 },
    Delete { start: PageId },
}

/// When freed pages may be taken again: once the commit that freed them is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Durable once the log is durable past this commit record.
    Lsn(u64),
    /// Without a log: durable at the next flush.
    Flush,
}

#[derive(Debug, Default)]
pub struct BlobSpace {
    /// Committed free extents: exactly the tree's entries.
    free: BTreeMap<PageId, u64>,
    /// Free extents that may be taken now: `free` less what is taken or gated.
    avail: Avail,
    /// Freed by a commit not yet known durable (in `free`, not in `avail`).
    gated: VecDeque<(Range<PageId>, Gate)>,
    /// Freed in the batch under way: gated once its commit record has an LSN.
    unsealed: Vec<Range<PageId>>,
    /// Taken pages that no commit has claimed yet (extents of blobs being written).
    taken_pages: u64,
    /// Pages whose gates opened, waiting for the store to drop them before they are taken.
    dropping: u64,
}

/// The extents that may be taken, by start and by (length, start): a take finds its best fit
/// in log time however fragmented the space is.
#[derive(Debug, Default)]
struct Avail {
    by_start: BTreeMap<PageId, u64>,
    by_len: BTreeSet<(u64, PageId)>,
}

impl Avail {
    fn insert(&mut self, start: PageId, len: u64) {
        self.by_start.insert(start, len);
        self.by_len.insert((len, start));
    }
    fn remove(&mut self, start: PageId) -> Option<u64> {
        let len = self.by_start.remove(&start)?;
        let had = self.by_len.remove(&(len, start));
        assert!(had, "extent {start}+{len} indexed by start but not by length");
        Some(len)
    }
    /// Adds `r`, merged with the extents it touches.
    fn insert_merged(&mut self, r: Range<PageId>) {
        let (mut start, mut end) = (r.start, r.end);
        if let Some((&s, &l)) = self.by_start.range(..start).next_back() {
            assert!(s + l <= start, "extent {s}+{l} overlaps {start}");
            if s + l == start {
                self.remove(s);
                start = s;
            }
        }
        if let Some(l) = self.remove(end) {
            end += l;
        }
        self.insert(start, end - start);
    }
    /// The smallest extent of at least `pages` pages.
    fn best_fit(&self, pages: u64) -> Option<(PageId, u64)> {
        self.by_len.range((pages, 0)..).next().map(|(l, s)| (*s, *l))
    }
}

fn insert_merged(
    map: &mut BTreeMap<PageId, u64>,
    r: Range<PageId>,
) -> (Range<PageId>, Vec<TreeOp>) {
    let mut ops = Vec::new();
    let (mut start, mut end) = (r.start, r.end);
    if let Some((&s, &l)) = map.range(..start).next_back() {
        assert!(s + l <= start, "extent {s}+{l} overlaps {start}");
        if s + l == start {
            map.remove(&s);
            start = s;
        }
    }
    if let Some(&l) = map.get(&end) {
        map.remove(&end);
        ops.push(TreeOp::Delete { start: end });
        end += l;
    }
    if let Some((&s, _)) = map.range(r.start..end).next() {
        assert!(s >= end, "extent at {s} overlaps {}..{end}", r.start);
    }
    map.insert(start, end - start);
    ops.push(TreeOp::Put { start, len: end - start });
    (start..end, ops)
}

/// Removes `r` from the extent of `map` that contains it; the tree ops that mirror it.
fn remove_within(map: &mut BTreeMap<PageId, u64>, r: Range<PageId>) -> Option<Vec<TreeOp>> {
    let (&s, &l) = map.range(..=r.start).next_back()?;
    if s + l < r.end {
        return None;
    }
    map.remove(&s);
    let mut ops = Vec::new();
    if s < r.start {
        map.insert(s, r.start - s);
        ops.push(TreeOp::Put { start: s, len: r.start - s });
    } else {
        ops.push(TreeOp::Delete { start: s });
    }
    if r.end < s + l {
        map.insert(r.end, s + l - r.end);
        ops.push(TreeOp::Put { start: r.end, len: s + l - r.end });
    }
    Some(ops)
}

impl BlobSpace {
    /// The space as recovered: every committed free extent may be taken (recovery replayed
    /// only durable commits).
    pub fn new(extents: impl IntoIterator<Item = (PageId, u64)>) -> BlobSpace {
        let free: BTreeMap<PageId, u64> = extents.into_iter().filter(|(_, l)| *l > 0).collect();
        let mut avail = Avail::default();
        for (s, l) in &free {
            avail.insert(*s, *l);
        }
        BlobSpace { avail, free, ..BlobSpace::default() }
    }

    pub fn free_extents(&self) -> impl Iterator<Item = Range<PageId>> + '_ {
        self.free.iter().map(|(s, l)| *s..*s + *l)
    }
    pub fn free_pages(&self) -> u64 {
        self.free.values().sum()
    }
    pub fn taken_pages(&self) -> u64 {
        self.taken_pages
    }
    pub fn gated_pages(&self) -> u64 {
        self.gated.iter().map(|(r, _)| r.end - r.start).sum::<u64>() + self.dropping
    }

    /// Takes `pages` contiguous page ids, best fit, from the end of the smallest extent that
    /// holds them (so an extent shrinks with one tree change). None: no extent is long enough.
    pub fn take(&mut self, pages: u64) -> Option<Range<PageId>> {
        assert!(pages > 0);
        let (s, l) = self.avail.best_fit(pages)?;
        self.avail.remove(s);
        if l > pages {
            self.avail.insert(s, l - pages);
        }
        self.taken_pages += pages;
        Some(s + l - pages..s + l)
    }

    /// A taken run that no commit will claim (the batch failed): it may be taken again.
    pub fn untake(&mut self, r: Range<PageId>) {
        self.taken_pages -= r.end - r.start;
        self.avail.insert_merged(r);
    }

    /// Under the writer mutex: the batch claims the taken run `r`. Returns the tree ops.
    pub fn claim(&mut self, r: Range<PageId>) -> Vec<TreeOp> {
        self.taken_pages -= r.end - r.start;
        remove_within(&mut self.free, r.clone())
            .unwrap_or_else(|| panic!("claimed run {r:?} is not within a free extent"))
    }

    /// Under the writer mutex: the batch frees `r` (a blob its keys no longer name). Returns
    /// the tree ops; the run may be taken again once the batch is durable ([`Self::seal`]).
    pub fn release(&mut self, r: Range<PageId>) -> Vec<TreeOp> {
        assert!(r.start < r.end);
        let (_, ops) = insert_merged(&mut self.free, r.clone());
        self.unsealed.push(r);
        ops
    }

    /// Under the writer mutex: new ids for the blob region (it grew down by `r`).
    pub fn grow(&mut self, r: Range<PageId>) -> Vec<TreeOp> {
        let (_, ops) = insert_merged(&mut self.free, r.clone());
        self.avail.insert_merged(r);
        ops
    }

    /// Under the writer mutex: the free extent that ends at `high_water`, when none of it is
    /// taken or gated, leaves the blob space (the allocator lowers its high-water mark to its
    /// start, so tree pages may use the ids again). Returns its start and the tree ops.
    pub fn shrink_top(&mut self, high_water: PageId) -> Option<(PageId, Vec<TreeOp>)> {
        let (&s, &l) = self.free.range(..high_water).next_back()?;
        if s + l != high_water || self.avail.by_start.get(&s) != Some(&l) {
            return None;
        }
        self.free.remove(&s);
        self.avail.remove(s);
        Some((s, vec![TreeOp::Delete { start: s }]))
    }

    /// The batch's commit record is at `gate`: what it freed waits for that to be durable.
    /// Returns the runs it freed (the store may drop their pages once durable as well).
    pub fn seal(&mut self, gate: Gate) -> Vec<Range<PageId>> {
        let runs: Vec<Range<PageId>> = std::mem::take(&mut self.unsealed);
        self.gated.extend(runs.iter().cloned().map(|r| (r, gate)));
        runs
    }

    /// The batch under way failed: the database is poisoned, nothing it freed may be reused.
    pub fn forget_unsealed(&mut self) {
        self.unsealed.clear();
    }

    /// Opens the gates passed: `durable_lsn` (None: a flush completed, every gate is open).
    /// Returns the runs whose gates opened; they may be taken once handed to
    /// [`Self::make_available`], which the caller does after the store dropped their pages
    /// (else a blob written into a run meanwhile could lose its pages to that drop).
    pub fn open_gates(&mut self, durable_lsn: Option<u64>) -> Vec<Range<PageId>> {
        let passed = |g: &Gate| match (g, durable_lsn) {
            (_, None) => true,
            (Gate::Lsn(l), Some(d)) => d > *l,
            (Gate::Flush, Some(_)) => false,
        };
        // Gates are sealed in commit order, so the open ones are at the front.
        let mut runs: Vec<Range<PageId>> = Vec::new();
        while let Some((r, g)) = self.gated.front() {
            if !passed(g) {
                break;
            }
            runs.push(r.clone());
            self.gated.pop_front();
        }
        self.dropping += runs.iter().map(|r| r.end - r.start).sum::<u64>();
        runs
    }

    /// Runs from [`Self::open_gates`] whose pages the store no longer holds.
    pub fn make_available(&mut self, runs: &[Range<PageId>]) {
        for r in runs {
            self.dropping -= r.end - r.start;
            self.avail.insert_merged(r.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree the ops build, for comparison with the mirror.
    fn apply(tree: &mut BTreeMap<PageId, u64>, ops: &[TreeOp]) {
        for op in ops {
            match *op {
                TreeOp::Put { start, len } => {
                    tree.insert(start, len);
                }
                TreeOp::Delete { start } => {
                    assert!(tree.remove(&start).is_some(), "delete of a missing extent");
                }
            }
        }
    }

    #[test]
    fn take_claim_release_keep_the_tree_and_the_mirror_equal() {
        let mut s = BlobSpace::new([(100, 10)]);
        let mut tree: BTreeMap<PageId, u64> = [(100, 10)].into();
        let a = s.take(3).unwrap();
        assert_eq!(a, 107..110);
        apply(&mut tree, &s.claim(a.clone()));
        assert_eq!(tree, s.free);
        let b = s.take(7).unwrap();
        apply(&mut tree, &s.claim(b.clone()));
        assert!(s.take(1).is_none());
        apply(&mut tree, &s.release(a.clone()));
        assert_eq!(tree, s.free);
        assert!(s.take(1).is_none(), "freed pages wait for their commit to be durable");
        s.seal(Gate::Lsn(50));
        assert!(s.open_gates(Some(50)).is_empty());
        assert_eq!(s.open_gates(Some(51)), vec![a.clone()]);
        assert!(s.take(1).is_none(), "not before the store dropped the run's pages");
        s.make_available(&[a]);
        apply(&mut tree, &s.release(b.clone()));
        s.seal(Gate::Flush);
        let opened = s.open_gates(None);
        s.make_available(&opened);
        assert_eq!(tree, [(100, 10)].into(), "adjacent extents merge");
        assert_eq!(s.take(10), Some(100..110));
        s.untake(100..110);
        assert_eq!(s.taken_pages(), 0);
        apply(&mut tree, &s.grow(90..100));
        assert_eq!(tree, [(90, 20)].into());
        assert_eq!(tree, s.free);
    }

    #[test]
    fn random_operations_match_a_page_set_model() {
        let mut rng = 0x9e3779b97f4a7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut s = BlobSpace::new([(1000, 64)]);
        let mut tree: BTreeMap<PageId, u64> = [(1000, 64)].into();
        let mut held: Vec<Range<PageId>> = Vec::new();
        for step in 0..2000 {
            if next() % 2 == 0 {
                if let Some(r) = s.take(1 + next() % 5) {
                    apply(&mut tree, &s.claim(r.clone()));
                    held.push(r);
                }
            } else if !held.is_empty() {
                let r = held.swap_remove((next() % held.len() as u64) as usize);
                apply(&mut tree, &s.release(r));
                s.seal(Gate::Lsn(step));
            }
            let opened = s.open_gates(Some(step.saturating_sub(3)));
            s.make_available(&opened);
            assert_eq!(tree, s.free);
            let held_pages: u64 = held.iter().map(|r| r.end - r.start).sum();
            assert_eq!(held_pages + s.free_pages(), 64);
        }
    }
}
