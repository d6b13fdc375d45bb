//! Which page ids blobs may use: free extents of the blob region, taken before a batch and
//! given back by it. This holds the committed free extents and what is in flight, and the
//! extent changes of the batch under way (its commit record carries them). The system tree
//! (start -> length) holds the free extents as of its last fold ([`BlobSpace::fold`], before
//! every checkpoint record); recovery replays the changes committed since onto it
//! ([`replay_extents`]). Protocol: the module doc of [`crate::blob`].
use crate::durable::ExtentOp;
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
    /// Committed free extents.
    free: BTreeMap<PageId, u64>,
    /// What the free-extent tree holds: `free` as of the last fold.
    tree: BTreeMap<PageId, u64>,
    /// The extent changes of the batch under way, in order (its commit record logs them).
    batch: Vec<ExtentOp>,
    /// The batch under way is a fold (its commit record says so).
    batch_folds: bool,
    /// The extent changes committed since the last fold, in order: what the tree lacks (every
    /// checkpoint record carries them, since redo starts there).
    since_fold: Vec<ExtentOp>,
    /// Free extents that may be taken now: `free` less what is taken or gated.
    avail: Avail,
    /// Freed by a commit not yet known durable (in `free`, not in `avail`).
    gated: VecDeque<(Range<PageId>, Gate, u64)>,
    /// Seals so far: each gated run carries the count at its seal.
    seals: u64,
    /// Snapshots alive, by the first seal they pin: runs sealed from then on stay gated while
    /// they live (a snapshot may read the blobs those runs held).
    pins: BTreeMap<u64, u64>,
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

/// Adds `r` to `map`, merged with the extents it touches; Err when it overlaps one.
fn insert_merged(map: &mut BTreeMap<PageId, u64>, r: Range<PageId>) -> Result<(), String> {
    let (mut start, mut end) = (r.start, r.end);
    if let Some((&s, &l)) = map.range(..start).next_back() {
        if s + l > start {
            return Err(format!("extent {s}+{l} overlaps {r:?}"));
        }
        if s + l == start {
            start = s;
        }
    }
    if let Some((&s, _)) = map.range(r.start..r.end).next() {
        return Err(format!("extent at {s} overlaps {r:?}"));
    }
    if start < r.start {
        map.remove(&start);
    }
    if let Some(l) = map.remove(&end) {
        end += l;
    }
    map.insert(start, end - start);
    Ok(())
}

/// Removes `r` from the extent of `map` that contains it; Err when none does.
fn remove_within(map: &mut BTreeMap<PageId, u64>, r: Range<PageId>) -> Result<(), String> {
    let found = map.range(..=r.start).next_back().map(|(s, l)| (*s, *l));
    let Some((s, l)) = found.filter(|(s, l)| s + l >= r.end) else {
        return Err(format!("{r:?} is not within a free extent"));
    };
    map.remove(&s);
    if s < r.start {
        map.insert(s, r.start - s);
    }
    if r.end < s + l {
        map.insert(r.end, s + l - r.end);
    }
    Ok(())
}

/// The free extents after `ops` (recovered from the log, in order) on `extents` (the tree's
/// entries as redone). Err names the first change that does not apply: log and tree disagree.
pub fn replay_extents(
    extents: impl IntoIterator<Item = (PageId, u64)>,
    ops: &[ExtentOp],
) -> Result<Vec<(PageId, u64)>, String> {
    let mut map: BTreeMap<PageId, u64> = BTreeMap::new();
    for (s, l) in extents.into_iter().filter(|(_, l)| *l > 0) {
        let end = s.checked_add(l).ok_or_else(|| format!("extent {s}+{l} wraps"))?;
        insert_merged(&mut map, s..end)?;
    }
    for (i, op) in ops.iter().enumerate() {
        let r = match op {
            ExtentOp::Take(r) => remove_within(&mut map, r.clone()),
            ExtentOp::Give(r) => insert_merged(&mut map, r.clone()),
        };
        r.map_err(|e| format!("extent change {i} of {}: {e}", ops.len()))?;
    }
    Ok(map.into_iter().collect())
}

/// The tree changes that turn `tree` into `free`.
fn diff(tree: &BTreeMap<PageId, u64>, free: &BTreeMap<PageId, u64>) -> Vec<TreeOp> {
    let gone = tree.keys().filter(|s| !free.contains_key(s)).map(|&start| TreeOp::Delete { start });
    let changed = free
        .iter()
        .filter(|(s, l)| tree.get(s) != Some(l))
        .map(|(&start, &len)| TreeOp::Put { start, len });
    gone.chain(changed).collect()
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
        BlobSpace { avail, tree: free.clone(), free, ..BlobSpace::default() }
    }

    /// The space after a crash: the tree's `entries` as redone, and the extent changes the log
    /// holds since its last fold (kept for the next checkpoint record). Err: they disagree.
    pub fn recovered(
        entries: Vec<(PageId, u64)>,
        since_fold: Vec<ExtentOp>,
    ) -> Result<Self, String> {
        let free = replay_extents(entries.iter().copied(), &since_fold)?;
        let mut space = BlobSpace::new(free);
        space.tree = entries.into_iter().filter(|(_, l)| *l > 0).collect();
        space.since_fold = since_fold;
        Ok(space)
    }

    pub fn free_extents(&self) -> impl Iterator<Item = Range<PageId>> + '_ {
        self.free.iter().map(|(s, l)| *s..*s + *l)
    }
    pub fn free_pages(&self) -> u64 {
        self.free.values().sum()
    }
    #[cfg(test)]
    pub fn taken_pages(&self) -> u64 {
        self.taken_pages
    }
    pub fn gated_pages(&self) -> u64 {
        self.gated.iter().map(|(r, _, _)| r.end - r.start).sum::<u64>() + self.dropping
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

    /// Under the writer mutex: the batch claims the taken run `r`.
    pub fn claim(&mut self, r: Range<PageId>) {
        self.taken_pages -= r.end - r.start;
        if let Err(e) = remove_within(&mut self.free, r.clone()) {
            panic!("claimed run {r:?}: {e}");
        }
        self.batch.push(ExtentOp::Take(r));
    }

    /// Under the writer mutex: the batch frees `r` (a blob its keys no longer name). The run
    /// may be taken again once the batch is durable ([`Self::seal`]).
    ///
    /// The run comes from a blob reference read off a page: one that is empty or overlaps a
    /// free extent (a damaged or doubled reference) is an Err, with nothing changed.
    pub fn release(&mut self, r: Range<PageId>) -> Result<(), String> {
        if r.start >= r.end {
            return Err(format!("released run {r:?} is empty"));
        }
        insert_merged(&mut self.free, r.clone()).map_err(|e| format!("released run {r:?}: {e}"))?;
        self.unsealed.push(r.clone());
        self.batch.push(ExtentOp::Give(r));
        Ok(())
    }

    /// Under the writer mutex: new ids for the blob region (it grew down by `r`).
    pub fn grow(&mut self, r: Range<PageId>) {
        if let Err(e) = insert_merged(&mut self.free, r.clone()) {
            panic!("grown run {r:?}: {e}");
        }
        self.avail.insert_merged(r.clone());
        self.batch.push(ExtentOp::Give(r));
    }

    /// Under the writer mutex: the free extent that ends at `high_water`, when none of it is
    /// taken or gated, leaves the blob space (the allocator lowers its high-water mark to its
    /// start, so tree pages may use the ids again). Returns its start.
    pub fn shrink_top(&mut self, high_water: PageId) -> Option<PageId> {
        let (&s, &l) = self.free.range(..high_water).next_back()?;
        if s + l != high_water || self.avail.by_start.get(&s) != Some(&l) {
            return None;
        }
        self.free.remove(&s);
        self.avail.remove(s);
        self.batch.push(ExtentOp::Take(s..s + l));
        Some(s)
    }

    /// Under the writer mutex, as the batch under way commits to the log: its extent changes
    /// for the commit record, and whether it is a fold.
    pub fn commit_batch(&mut self) -> (Vec<ExtentOp>, bool) {
        let ops = std::mem::take(&mut self.batch);
        let folds = std::mem::take(&mut self.batch_folds);
        if folds {
            assert!(ops.is_empty(), "a fold ends its batch: no extent changes after it");
            self.since_fold.clear();
        }
        self.since_fold.extend(ops.iter().cloned());
        (ops, folds)
    }

    /// Without a log: the batch under way ends with nothing to record (flushes fold).
    pub fn discard_batch(&mut self) {
        self.batch.clear();
        self.batch_folds = false;
    }

    /// The extent changes committed since the last fold (for a checkpoint record).
    pub fn since_fold(&self) -> &[ExtentOp] {
        &self.since_fold
    }

    /// The most tree changes a fold now would make: three per extent change since the last
    /// one (a change splits or merges at most three extents), and never more than the tree's
    /// entries and the free extents together (`diff` deletes or puts each at most once).
    pub fn fold_ops_bound(&self) -> usize {
        let pending = self.since_fold.len() + self.batch.len();
        (3 * pending).min(self.tree.len() + self.free.len())
    }

    /// Extent changes the batch under way made so far.
    pub fn batch_changes(&self) -> usize {
        self.batch.len()
    }

    /// Under the writer mutex, last in a batch: the tree changes that bring the free-extent
    /// tree up to the free extents, this batch's changes included (the caller applies them in
    /// the batch, whose commit then says it folds and carries no change). Cost: a walk of
    /// both maps, and a tree change per extent that differs.
    pub fn fold(&mut self) -> Vec<TreeOp> {
        let ops = diff(&self.tree, &self.free);
        self.tree.clone_from(&self.free);
        self.batch.clear();
        self.batch_folds = true;
        ops
    }

    /// Whether the free-extent tree's `entries` are what the last fold left.
    pub fn tree_matches(&self, entries: &BTreeMap<PageId, u64>) -> bool {
        self.tree == *entries
    }

    /// The batch's commit record is at `gate`: what it freed waits for that to be durable.
    /// Returns the runs it freed (the store may drop their pages once durable as well).
    pub fn seal(&mut self, gate: Gate) -> Vec<Range<PageId>> {
        let runs: Vec<Range<PageId>> = std::mem::take(&mut self.unsealed);
        self.seals += 1;
        let seal = self.seals;
        self.gated.extend(runs.iter().cloned().map(|r| (r, gate, seal)));
        runs
    }

    /// A snapshot begins: what later batches free stays gated until [`Self::unpin`] with the
    /// returned mark. The caller holds every writer off, so no batch is half applied.
    pub fn pin(&mut self) -> u64 {
        let mark = self.seals + 1;
        *self.pins.entry(mark).or_insert(0) += 1;
        mark
    }

    pub fn unpin(&mut self, mark: u64) {
        if let Some(n) = self.pins.get_mut(&mark) {
            *n -= 1;
            if *n == 0 {
                self.pins.remove(&mark);
            }
        }
    }

    /// The batch under way failed: the database is poisoned, nothing it freed may be reused.
    pub fn forget_unsealed(&mut self) {
        self.unsealed.clear();
        self.discard_batch();
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
        let pinned_from = self.pins.keys().next().copied().unwrap_or(u64::MAX);
        while let Some((r, g, seal)) = self.gated.front() {
            if !passed(g) || *seal >= pinned_from {
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

    /// The tree the ops build, for comparison with the committed extents.
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

    fn extents(s: &BlobSpace) -> Vec<(PageId, u64)> {
        s.free_extents().map(|r| (r.start, r.end - r.start)).collect()
    }

    #[test]
    fn take_claim_release_log_changes_that_replay_to_the_same_extents() {
        let mut s = BlobSpace::new([(100, 10)]);
        let a = s.take(3).unwrap();
        assert_eq!(a, 107..110);
        s.claim(a.clone());
        assert_eq!(s.commit_batch().0, vec![ExtentOp::Take(a.clone())]);
        let b = s.take(7).unwrap();
        s.claim(b.clone());
        assert!(s.take(1).is_none());
        s.release(a.clone()).unwrap();
        let logged = [vec![ExtentOp::Take(a.clone())], s.commit_batch().0].concat();
        assert_eq!(replay_extents([(100, 10)], &logged), Ok(extents(&s)));
        assert!(s.take(1).is_none(), "freed pages wait for their commit to be durable");
        s.seal(Gate::Lsn(50));
        assert!(s.open_gates(Some(50)).is_empty());
        assert_eq!(s.open_gates(Some(51)), vec![a.clone()]);
        assert!(s.take(1).is_none(), "not before the store dropped the run's pages");
        s.make_available(&[a]);
        s.release(b.clone()).unwrap();
        s.seal(Gate::Flush);
        let opened = s.open_gates(None);
        s.make_available(&opened);
        assert_eq!(extents(&s), vec![(100, 10)], "adjacent extents merge");
        let _ = s.commit_batch().0;
        assert!(s.fold().is_empty(), "the tree already holds 100+10");
        assert_eq!(s.commit_batch(), (Vec::new(), true));
        assert!(s.since_fold().is_empty());
        assert_eq!(s.take(10), Some(100..110));
        s.untake(100..110);
        assert_eq!(s.taken_pages(), 0);
        s.grow(90..100);
        assert_eq!(s.commit_batch().0, vec![ExtentOp::Give(90..100)]);
        let mut tree: BTreeMap<PageId, u64> = [(100, 10)].into();
        apply(&mut tree, &s.fold());
        assert_eq!(s.commit_batch(), (Vec::new(), true));
        assert_eq!(tree, [(90, 20)].into());
        assert!(s.tree_matches(&tree));
        assert_eq!(s.shrink_top(110), Some(90));
        assert_eq!(s.commit_batch().0, vec![ExtentOp::Take(90..110)]);
        assert_eq!(s.since_fold(), &[ExtentOp::Take(90..110)]);
        let r = BlobSpace::recovered(vec![(90, 20)], s.since_fold().to_vec()).unwrap();
        assert_eq!(extents(&r), extents(&s));
        assert!(r.tree_matches(&[(90, 20)].into()), "the tree still lacks the shrink");
    }

    /// Frees `r` in a batch of its own and makes it available (its commit durable, the store
    /// done with its pages).
    fn free_now(s: &mut BlobSpace, r: Range<PageId>) {
        s.release(r).unwrap();
        let _ = s.commit_batch();
        s.seal(Gate::Flush);
        let opened = s.open_gates(None);
        s.make_available(&opened);
    }

    #[test]
    fn the_fold_bound_is_three_per_change_but_never_more_than_the_extents() {
        let mut s = BlobSpace::new((0..10).map(|i| (4 * i, 1)));
        free_now(&mut s, 2..3);
        assert_eq!(s.fold_ops_bound(), 3, "three tree changes per extent change at most");
        // Many changes on one page: three per change would say 3 x 41, the diff is at most
        // one per extent of the tree (10) and of the space (11).
        for _ in 0..20 {
            let r = s.take(1).unwrap();
            s.claim(r.clone());
            let _ = s.commit_batch();
            free_now(&mut s, r);
        }
        assert_eq!(s.since_fold().len(), 41);
        assert_eq!(s.fold_ops_bound(), 21);
        let ops = s.fold();
        assert_eq!(
            ops,
            vec![TreeOp::Put { start: 2, len: 1 }],
            "only the new extent reaches the tree"
        );
        assert!(ops.len() <= 21);
    }

    #[test]
    fn a_release_of_a_free_or_empty_run_is_refused_and_changes_nothing() {
        let mut s = BlobSpace::new([(100, 10)]);
        assert!(s.release(104..106).is_err(), "already free");
        assert!(s.release(95..101).is_err(), "overlaps the free extent");
        assert!(s.release(120..120).is_err(), "empty");
        assert_eq!(extents(&s), vec![(100, 10)]);
        assert_eq!(s.commit_batch().0, Vec::new());
    }

    #[test]
    fn a_pin_keeps_what_later_batches_free_gated_until_it_goes() {
        let mut s = BlobSpace::new([(100, 10)]);
        let (a, b) = (s.take(2).unwrap(), s.take(2).unwrap());
        s.claim(a.clone());
        s.claim(b.clone());
        s.release(a.clone()).unwrap();
        s.seal(Gate::Lsn(5)); // Freed before the snapshot: not pinned.
        let mark = s.pin();
        s.release(b.clone()).unwrap();
        s.seal(Gate::Lsn(6));
        assert_eq!(s.open_gates(Some(10)), vec![a.clone()], "the run freed later stays");
        s.make_available(&[a]);
        assert!(s.open_gates(None).is_empty());
        s.unpin(mark);
        assert_eq!(s.open_gates(Some(10)), vec![b]);
    }

    #[test]
    fn replay_refuses_changes_the_extents_do_not_allow() {
        assert!(replay_extents([(10, 5)], &[ExtentOp::Take(12..16)]).is_err());
        assert!(replay_extents([(10, 5)], &[ExtentOp::Give(14..20)]).is_err());
        assert!(replay_extents([(10, 5)], &[ExtentOp::Give(5..11)]).is_err());
        assert!(replay_extents([(10, 5), (12, 1)], &[]).is_err(), "overlapping tree entries");
        assert!(replay_extents([(u64::MAX, 5)], &[]).is_err());
        let merged = replay_extents([(10, 5), (20, 5)], &[ExtentOp::Give(15..20)]);
        assert_eq!(merged, Ok(vec![(10, 15)]));
        let split = replay_extents([(10, 15)], &[ExtentOp::Take(12..13)]);
        assert_eq!(split, Ok(vec![(10, 2), (13, 12)]));
    }

    #[test]
    fn random_operations_match_a_page_set_model_and_replay_from_any_fold() {
        let mut rng = 0x9e3779b97f4a7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut s = BlobSpace::new([(1000, 64)]);
        let mut tree: BTreeMap<PageId, u64> = [(1000, 64)].into();
        let mut since_fold: Vec<ExtentOp> = Vec::new();
        let mut held: Vec<Range<PageId>> = Vec::new();
        for step in 0..2000 {
            if next() % 2 == 0 {
                if let Some(r) = s.take(1 + next() % 5) {
                    s.claim(r.clone());
                    held.push(r);
                }
            } else if !held.is_empty() {
                let r = held.swap_remove((next() % held.len() as u64) as usize);
                s.release(r).unwrap();
                s.seal(Gate::Lsn(step));
            }
            since_fold.extend(s.commit_batch().0);
            assert_eq!(s.since_fold(), &since_fold[..]);
            if next() % 16 == 0 {
                apply(&mut tree, &s.fold());
                assert!(s.commit_batch().1);
                since_fold.clear();
                assert!(s.tree_matches(&tree));
            }
            let recovered = replay_extents(tree.iter().map(|(a, b)| (*a, *b)), &since_fold);
            assert_eq!(recovered, Ok(extents(&s)), "step {step}");
            let opened = s.open_gates(Some(step.saturating_sub(3)));
            s.make_available(&opened);
            let held_pages: u64 = held.iter().map(|r| r.end - r.start).sum();
            assert_eq!(held_pages + s.free_pages(), 64);
        }
    }
}
