//! Range iterators: leaf-sized batches from the B+tree, consumed from either end. Each yield
//! narrows the remaining range (front: `lo = Excluded(key)`, back: `hi = Excluded(key)`), so
//! the two ends never yield a key twice and refills resume where the last batch ended.
use super::inner::{DbInner, Tree};
use super::view::At;
use crate::btree::scan_bounds::{above_lo, below_hi};
use crate::btree::{Bounds, TreeCore};
use crate::page::node::Entry;
use crate::{ReadError, Result};
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

/// Keys deleted under an iterator it passes over in one call at most: far more than a range
/// can lose to deletes in one step, and a bound on a loop that must end.
const SKIPS_MAX: u64 = 1 << 32;

/// An entry decoded, or a key to pass over.
enum Decoded {
    Entry(Option<Result<Entry>>),
    Skip,
}

#[derive(Debug)]
pub struct Iter {
    db: Arc<DbInner>,
    /// None: the catalog tree.
    core: Option<Arc<TreeCore>>,
    bounds: Bounds,
    front: VecDeque<Entry>,
    back: VecDeque<Entry>,
    done: bool,
    /// Values are tagged (`crate::blob`): yield them decoded, blobs read.
    decode: bool,
    /// Reading a snapshot's view (kept alive while the iterator lives), not the latest pages.
    at: Option<Arc<At>>,
}

impl Iter {
    pub(super) fn new(tree: Tree, bounds: Bounds) -> Iter {
        let decode = tree.db.blobs.get().is_some();
        // A user's tree handle: its values are decoded, which the catalog's never are.
        debug_assert_ne!(tree.core.id, super::catalog::CATALOG_TREE_ID, "catalog as a tree");
        Iter { decode, ..Iter::with(tree.db, Some(tree.core), bounds) }
    }
    pub(super) fn new_core_of(db: Arc<DbInner>, core: Arc<TreeCore>, bounds: Bounds) -> Iter {
        // The catalog is iterated through `new_core` (no core), never as a tree of its own.
        debug_assert_ne!(core.id, super::catalog::CATALOG_TREE_ID, "the catalog as a core");
        Iter::with(db, Some(core), bounds)
    }
    pub(super) fn new_core(db: Arc<DbInner>, catalog: &TreeCore, bounds: Bounds) -> Iter {
        // No core stands for the database's own catalog (`leaf_batch`): it must be that one.
        assert!(std::ptr::eq(catalog, &db.catalog), "a catalog iterator over another tree");
        Iter::with(db, None, bounds)
    }
    /// Over a snapshot's view of a tree (None: the tree did not exist then, nothing to yield).
    pub(super) fn at(at: Arc<At>, core: Option<Arc<TreeCore>>, bounds: Bounds) -> Iter {
        let done = core.is_none();
        // A snapshot's view of a named tree: the catalog is read through the view itself.
        debug_assert!(core.as_ref().is_none_or(|c| c.id != super::catalog::CATALOG_TREE_ID));
        let decode = at.db.blobs.get().is_some();
        let db = at.db.clone();
        Iter { done, decode, at: Some(at), ..Iter::with(db, core, bounds) }
    }
    fn with(db: Arc<DbInner>, core: Option<Arc<TreeCore>>, bounds: Bounds) -> Iter {
        // No core stands for the catalog (`leaf_batch`), so a core must not be the catalog.
        debug_assert!(!core.as_ref().is_some_and(|c| std::ptr::eq(&**c, &db.catalog)));
        Iter {
            db,
            core,
            bounds,
            front: VecDeque::new(),
            back: VecDeque::new(),
            done: false,
            decode: false,
            at: None,
        }
    }

    /// One leaf's worth of entries from the front (`forward`) or the back of the range.
    fn leaf_batch(&self, forward: bool) -> Result<Vec<Entry>> {
        // Callers refill only a live iterator: an ended one must not read pages again.
        debug_assert!(!self.done, "a refill after the iterator ended");
        let core = self.core.as_deref().unwrap_or(&self.db.catalog);
        let batch = match (&self.at, forward) {
            (Some(at), true) => core.scan_forward_in(&at.nodes(), &self.bounds),
            (Some(at), false) => core.scan_backward_in(&at.nodes(), &self.bounds),
            (None, true) => core.scan_forward(self.db.env(), &self.bounds),
            (None, false) => core.scan_backward(self.db.env(), &self.bounds),
        }?;
        // The scan's side of the hand-over: keys in the order asked, past the end already
        // yielded. The yields above rely on it to never repeat a key; pages that break it are
        // corrupt, not a reason to yield garbage.
        let ordered = batch.windows(2).all(|w| match forward {
            true => w[0].0 < w[1].0,
            false => w[0].0 > w[1].0,
        });
        let fresh = batch.first().is_none_or(|(k, _)| match forward {
            true => above_lo(k, &self.bounds.lo),
            false => below_hi(k, &self.bounds.hi),
        });
        if !(ordered && fresh) {
            return Err(crate::Corruption::KeysOutOfOrder { tree: core.id }.into());
        }
        Ok(batch)
    }

    /// The entry as the user sees it: the stored value decoded, a blob read. `Skip`: the key
    /// was deleted after its leaf was read and before its blob could be.
    fn decoded(&mut self, entry: Option<Result<Entry>>) -> Decoded {
        if !self.decode {
            return Decoded::Entry(entry);
        }
        // The catalog (no core, no snapshot) holds untagged entries: it is never decoded.
        debug_assert!(self.core.is_some() || self.at.is_some(), "the catalog decoded");
        let (k, v) = match entry {
            None => return Decoded::Entry(None),
            Some(Ok(e)) => e,
            Some(Err(e)) => return Decoded::Entry(Some(Err(e))),
        };
        let resolved = match (&self.at, &self.core) {
            (Some(at), _) => at.resolve(v).map(Some),
            (None, Some(core)) => self.db.resolve_stored(core, &k, v),
            (None, None) => return Decoded::Entry(None),
        };
        match resolved {
            Ok(Some(v)) => Decoded::Entry(Some(Ok((k, v)))),
            Ok(None) => Decoded::Skip,
            Err(e) => Decoded::Entry(self.fail(e)),
        }
    }

    /// The next entry from `step` (the front or the back), decoded, passing over keys
    /// deleted under the iterator. Each pass consumes an entry of the range, so the range's
    /// end bounds the loop; the count only guards against a bug that stops consuming.
    fn next_decoded(
        &mut self,
        step: fn(&mut Iter) -> Option<Result<Entry>>,
    ) -> Option<Result<Entry>> {
        // No tries would report a stall without a step taken.
        const { assert!(SKIPS_MAX > 0) };
        for _ in 0..SKIPS_MAX {
            let e = step(self);
            match self.decoded(e) {
                Decoded::Entry(out) => return out,
                Decoded::Skip => {}
            }
        }
        Some(Err(crate::Corruption::IteratorStalled.into()))
    }

    fn fail(&mut self, e: crate::Error) -> Option<Result<Entry>> {
        // An error ends the iterator once: nothing is yielded after it, and no second one.
        debug_assert!(!self.done, "an ended iterator failed again");
        self.done = true;
        Some(Err(e))
    }

    pub(super) fn next_entry(&mut self) -> Option<Result<Entry>> {
        // At most one refill per call: a refill returns a non-empty batch or ends the range.
        for _ in 0..2 {
            if self.done {
                return None;
            }
            if let Some((k, v)) = self.front.pop_front() {
                if !below_hi(&k, &self.bounds.hi) {
                    self.done = true; // The back end already yielded it.
                    return None;
                }
                // `leaf_batch` handed over ascending keys past the last yield: never a repeat.
                debug_assert!(above_lo(&k, &self.bounds.lo), "front keys ascend");
                self.bounds.lo = Bound::Excluded(k.clone());
                return Some(Ok((k, v)));
            }
            if let Err(e) = self.db.check_open() {
                return self.fail(e);
            }
            match self.leaf_batch(true) {
                Ok(batch) if batch.is_empty() => self.done = true,
                Ok(batch) => self.front = batch.into(),
                Err(e) => return self.fail(e),
            }
        }
        None
    }

    fn next_back_entry(&mut self) -> Option<Result<Entry>> {
        for _ in 0..2 {
            if self.done {
                return None;
            }
            if let Some((k, v)) = self.back.pop_front() {
                if !above_lo(&k, &self.bounds.lo) {
                    self.done = true;
                    return None;
                }
                debug_assert!(below_hi(&k, &self.bounds.hi), "back keys descend");
                self.bounds.hi = Bound::Excluded(k.clone());
                return Some(Ok((k, v)));
            }
            if let Err(e) = self.db.check_open() {
                return self.fail(e);
            }
            match self.leaf_batch(false) {
                Ok(batch) if batch.is_empty() => self.done = true,
                Ok(batch) => self.back = batch.into(),
                Err(e) => return self.fail(e),
            }
        }
        None
    }
}

/// Items are [`ReadError`]s, as for the other reads: the internal `crate::Result` converts
/// here, where an entry becomes an item.
impl Iterator for Iter {
    type Item = std::result::Result<(Vec<u8>, Vec<u8>), ReadError>;
    fn next(&mut self) -> Option<Self::Item> {
        let out = self.next_decoded(Iter::next_entry);
        // Decoding hands back the key it was given: the front narrowed to exactly that key.
        debug_assert!(match &out {
            Some(Ok((k, _))) => matches!(&self.bounds.lo, Bound::Excluded(lo) if lo == k),
            _ => true,
        });
        out.map(|r| r.map_err(ReadError::from))
    }
}

impl DoubleEndedIterator for Iter {
    fn next_back(&mut self) -> Option<Self::Item> {
        let out = self.next_decoded(Iter::next_back_entry);
        // Decoding hands back the key it was given: the back narrowed to exactly that key.
        debug_assert!(match &out {
            Some(Ok((k, _))) => matches!(&self.bounds.hi, Bound::Excluded(hi) if hi == k),
            _ => true,
        });
        out.map(|r| r.map_err(ReadError::from))
    }
}
