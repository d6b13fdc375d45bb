//! Range removal under a tree's exclusive structure latch: every entry with a key in a range
//! goes. Subtrees wholly inside the range are detached, not read: the cut unlinks them and
//! hands their roots to the caller, who records them and frees their pages later in bounded
//! batches ([`reclaim_page`]). Only the nodes that straddle a bound (at most two per level)
//! are read and rewritten, so a cut of any size is a small batch.
//!
//! Two steps, so a caller can size the log before anything changes: [`Exclusive::plan_cut`]
//! walks the range and returns the whole change as a [`CutPlan`] (read only), and
//! [`Exclusive::execute_cut`] carries it out. Leaves keep their depth: a node that loses
//! children keeps the rest (an inner node may be left with one child, which searches do not
//! mind), an emptied node is freed and its parent drops it, and a root left with nothing
//! becomes an empty leaf (one left with a single child absorbs it, as after deletes).
use super::{Bounds, Exclusive, DEPTH_MAX};
use crate::alloc::{stamp, stamp_image};
use crate::page::{self, node, PageChange, PageId, PageKind, PAGE_SIZE};
use crate::{Error, Result};
use std::ops::Bound;

/// Log bytes of one freed page's record: the image of a free page (an 80-byte header and
/// zeros) compresses to about 120 bytes (pinned by a test below), framing included.
pub const FREE_RECORD_BYTES_MAX: u64 = 256;
/// Log bytes of one rewritten node's image record (a page and its framing, uncompressed).
pub const IMAGE_RECORD_BYTES_MAX: u64 = PAGE_SIZE as u64 + 64;
/// A straddling leaf losing at most this many entries logs one delete record per entry
/// instead of its image.
const TRIM_DELETES_MAX: usize = 8;
/// Log bytes of a delete record besides its key.
const DELETE_RECORD_OVERHEAD_BYTES: u64 = 48;

/// One change of a cut, in the order it is carried out (children before their parent).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// A straddling page emptied by the cut goes to the free list.
    Free(PageId),
    /// A subtree wholly inside the range: unlinked by its parent's step, freed later.
    Detach(PageId),
    /// A leaf loses its entries in slots `from..to`.
    Trim { pid: PageId, from: usize, to: usize, keys: Vec<Vec<u8>> },
    /// An inner node keeps only the children at these positions (at least one).
    Keep { pid: PageId, children: Vec<usize> },
    /// The root lost every child: it becomes an empty leaf.
    EmptyRoot,
}

/// What removing a range changes, decided before anything is written.
#[derive(Debug, Default)]
pub struct CutPlan {
    steps: Vec<Step>,
    /// Pages it frees now.
    pub pages_freed: u64,
}

impl CutPlan {
    /// The most log bytes carrying the plan out can take.
    pub fn log_bytes_max(&self) -> u64 {
        self.steps
            .iter()
            .map(|s| match s {
                Step::Free(_) => FREE_RECORD_BYTES_MAX,
                Step::Detach(_) => 0,
                Step::Trim { keys, .. } if keys.len() <= TRIM_DELETES_MAX => {
                    // Paired with `plan_node`, which plans no empty trim: an empty one costs
                    // nothing here yet would be carried out.
                    assert!(!keys.is_empty(), "an empty trim planned");
                    keys.iter().map(|k| k.len() as u64 + DELETE_RECORD_OVERHEAD_BYTES).sum()
                }
                Step::Trim { .. } | Step::Keep { .. } | Step::EmptyRoot => IMAGE_RECORD_BYTES_MAX,
            })
            .sum()
    }
    /// Roots of the subtrees the cut detaches (the caller frees them later).
    pub fn detached(&self) -> impl Iterator<Item = PageId> + '_ {
        self.steps.iter().filter_map(|s| match s {
            Step::Detach(pid) => {
                // Read from a parent that named it as a child: never the superblock.
                assert_ne!(*pid, page::meta::META_PAGE_ID, "the superblock detached");
                Some(*pid)
            }
            _ => None,
        })
    }
}

/// A node's key span: keys at or above `lo` and below `hi` (None: unbounded).
#[derive(Debug, Clone)]
struct Span {
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
}

/// How a child's span relates to the range being removed.
#[derive(Debug, PartialEq, Eq)]
enum Overlap {
    Outside,
    Inside,
    Partial,
}

fn overlap(span: &Span, range: &Bounds) -> Overlap {
    // Every key of the span is >= span.lo and < span.hi.
    let below_range = match (&span.hi, &range.lo) {
        (_, Bound::Unbounded) | (None, _) => false,
        (Some(h), Bound::Included(l) | Bound::Excluded(l)) => h <= l,
    };
    let above_range = match (&span.lo, &range.hi) {
        (_, Bound::Unbounded) | (None, _) => false,
        (Some(l), Bound::Included(h)) => l > h,
        (Some(l), Bound::Excluded(h)) => l >= h,
    };
    if below_range || above_range {
        return Overlap::Outside;
    }
    let from_lo = match (&span.lo, &range.lo) {
        (_, Bound::Unbounded) => true,
        (None, _) => false,
        (Some(l), lo) => super::scan_bounds::above_lo(l, lo),
    };
    let to_hi = match (&span.hi, &range.hi) {
        (_, Bound::Unbounded) => true,
        (None, _) => false,
        (Some(h), Bound::Included(x) | Bound::Excluded(x)) => h <= x,
    };
    let class = if from_lo && to_hi { Overlap::Inside } else { Overlap::Partial };
    // Cross-checks the bound arithmetic above with `in_range`: when the whole span goes, so
    // does its lowest key (unless the span is empty, which only a stale page could make).
    debug_assert!(
        class != Overlap::Inside
            || span
                .lo
                .as_ref()
                .is_none_or(|l| { span.hi.as_ref().is_some_and(|h| l >= h) || in_range(l, range) }),
        "a span inside the range whose lowest key is not"
    );
    class
}

fn in_range(k: &[u8], range: &Bounds) -> bool {
    // `k` comes off a node (a key or a span's separator); a longer one was read from the
    // wrong bytes, and the cut would plan around garbage.
    debug_assert!(k.len() <= node::MAX_KEY_BYTES, "a {}-byte key", k.len());
    super::scan_bounds::above_lo(k, &range.lo) && super::scan_bounds::below_hi(k, &range.hi)
}

impl Exclusive<'_> {
    /// Walks the part of the tree `range` covers and decides the cut, changing nothing.
    /// `removed` sees every value the cut removes (out-of-line values are freed from it).
    pub fn plan_cut(
        &self,
        env: super::Env<'_>,
        range: &Bounds,
        removed: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<CutPlan> {
        let mut plan = CutPlan::default();
        let root_span = Span { lo: None, hi: None };
        let emptied =
            self.plan_node(env, self.core.root, &root_span, range, 0, &mut plan, removed)?;
        assert!(!emptied, "the root is never freed by a cut");
        assert_eq!(
            plan.pages_freed,
            plan.steps.iter().filter(|s| matches!(s, Step::Free(_))).count() as u64
        );
        Ok(plan)
    }

    /// Plans the cut below `pid`; Ok(true) when the node is freed whole (never the root).
    #[allow(clippy::too_many_arguments)]
    fn plan_node(
        &self,
        env: super::Env<'_>,
        pid: PageId,
        span: &Span,
        range: &Bounds,
        depth: usize,
        plan: &mut CutPlan,
        removed: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<bool> {
        if depth >= DEPTH_MAX {
            return Err(self.core.too_deep());
        }
        let is_root = pid == self.core.root;
        if !is_root && overlap(span, range) == Overlap::Inside {
            plan.steps.push(Step::Detach(pid));
            return Ok(true);
        }
        let g = env.pool.read(pid)?;
        if self.core.check_page(pid, g.bytes())? == PageKind::Leaf {
            let p = g.bytes();
            let n = node::slot_count(p);
            let from = (0..n).find(|i| in_range(node::key(p, *i), range)).unwrap_or(n);
            let to = (from..n).find(|i| !in_range(node::key(p, *i), range)).unwrap_or(n);
            // Keys ascend and the range is an interval, so the trim's run holds all it covers.
            debug_assert!((to..n).all(|i| !in_range(node::key(p, i), range)), "a split run");
            for i in from..to {
                removed(node::value(p, i))?;
            }
            if from == to {
                return Ok(false);
            }
            if from == 0 && to == n && !is_root {
                plan.steps.push(Step::Free(pid));
                plan.pages_freed += 1;
                return Ok(true);
            }
            let keys = (from..to).map(|i| node::key(p, i).to_vec()).collect();
            plan.steps.push(Step::Trim { pid, from, to, keys });
            return Ok(false);
        }
        let children = child_spans(g.bytes(), span);
        drop(g);
        let mut kept = Vec::with_capacity(children.len());
        for (pos, (child, cspan)) in children.iter().enumerate() {
            let gone = overlap(cspan, range) != Overlap::Outside
                && self.plan_node(env, *child, cspan, range, depth + 1, plan, removed)?;
            if !gone {
                kept.push(pos);
            }
        }
        if kept.len() == children.len() {
            return Ok(false);
        }
        if !kept.is_empty() {
            plan.steps.push(Step::Keep { pid, children: kept });
            return Ok(false);
        }
        if is_root {
            plan.steps.push(Step::EmptyRoot);
            return Ok(false);
        }
        plan.steps.push(Step::Free(pid));
        plan.pages_freed += 1;
        Ok(true)
    }

    /// Carries out a plan made under this same latch (the tree cannot have changed between).
    /// A failure part way leaves the tree changed: the caller poisons the database.
    pub fn execute_cut(&self, env: super::Env<'_>, plan: CutPlan) -> Result<()> {
        let steps = plan.steps.len();
        let mut freed = 0u64;
        for step in plan.steps {
            match step {
                Step::Free(pid) => {
                    assert_ne!(pid, self.core.root, "a cut frees the root");
                    let g = env.pool.write(pid)?;
                    env.alloc.free(env.logger, g);
                    freed += 1;
                }
                Step::Detach(_) => {}
                Step::Trim { pid, from, to, keys } => self.trim_leaf(env, pid, from..to, &keys)?,
                Step::Keep { pid, children } => self.keep_children(env, pid, &children)?,
                Step::EmptyRoot => {
                    let mut g = env.pool.write(self.core.root)?;
                    page::format(g.bytes_mut(), self.core.root, PageKind::Leaf, self.core.id, 0);
                    stamp_image(env.logger, &mut g);
                }
            }
        }
        assert_eq!(freed, plan.pages_freed, "{steps} steps freed other pages than planned");
        Ok(())
    }

    fn trim_leaf(
        &self,
        env: super::Env<'_>,
        pid: PageId,
        slots: std::ops::Range<usize>,
        keys: &[Vec<u8>],
    ) -> Result<()> {
        let mut g = env.pool.write(pid)?;
        assert_eq!(slots.len(), keys.len());
        if keys.len() <= TRIM_DELETES_MAX {
            for key in keys {
                if !node::leaf_delete(g.bytes_mut(), key) {
                    return Err(self.corrupt_cut(pid));
                }
                stamp(env.logger, &mut g, &PageChange::LeafDelete { tree_id: self.core.id, key });
            }
            return Ok(());
        }
        let mut es = node::entries(g.bytes());
        if slots.end > es.len() || es[slots.start].0 != keys[0] {
            return Err(self.corrupt_cut(pid));
        }
        es.drain(slots);
        node::build(g.bytes_mut(), &es);
        stamp_image(env.logger, &mut g);
        Ok(())
    }

    /// Rewrites an inner node with only the children at `keep`: the first kept child takes
    /// the node's lowest span (what the dropped children before it held was all removed),
    /// every other keeps its own separator and extends over the dropped ones after it.
    fn keep_children(&self, env: super::Env<'_>, pid: PageId, keep: &[usize]) -> Result<()> {
        let mut g = env.pool.write(pid)?;
        // Paired with `plan_node`, which lists kept positions in order: the separators below
        // are taken in that order and must ascend.
        assert!(keep.windows(2).all(|w| w[0] < w[1]), "kept positions out of order");
        let p = g.bytes();
        let n = node::slot_count(p);
        if keep.is_empty() || keep.iter().any(|pos| *pos > n) {
            return Err(self.corrupt_cut(pid));
        }
        let aux = node::child_at_pos(p, keep[0]);
        let es: Vec<node::Entry> = keep[1..]
            .iter()
            .map(|pos| {
                (node::key(p, pos - 1).to_vec(), node::child_value(node::child_at_pos(p, *pos)))
            })
            .collect();
        page::set_aux(g.bytes_mut(), aux);
        node::build(g.bytes_mut(), &es);
        if pid == self.core.root && es.is_empty() {
            return self.absorb_into_root(env, g);
        }
        stamp_image(env.logger, &mut g);
        Ok(())
    }

    fn corrupt_cut(&self, pid: PageId) -> Error {
        // Plans are made and executed under one exclusive latch, whose structure change stays
        // open: only a page changed outside the latch can end here.
        debug_assert!(self.core.structure.begin().is_none(), "a cut outside its latch");
        debug_assert_ne!(pid, page::meta::META_PAGE_ID, "a cut planned over the superblock");
        Error::CorruptPage {
            page_id: pid,
            reason: format!(
                "tree {}: the page changed between a cut's plan and its execution",
                self.core.id
            ),
        }
    }
}

/// Frees one page of a detached subtree (`tree_id` is the tree it was cut from): a leaf's
/// values go to `removed` first, an inner node's children are returned (they are detached
/// roots now). Anything but a node of that tree is an error, with nothing changed.
pub fn reclaim_page(
    env: super::Env<'_>,
    pid: PageId,
    tree_id: u32,
    removed: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<Vec<PageId>> {
    let g = env.pool.write(pid)?;
    let p = g.bytes();
    let kind = page::kind(p);
    if page::tree_id(p) != tree_id || !matches!(kind, Some(PageKind::Leaf | PageKind::Inner)) {
        return Err(Error::CorruptPage {
            page_id: pid,
            reason: format!(
                "a detached page of tree {tree_id} is a {kind:?} of tree {}",
                page::tree_id(p)
            ),
        });
    }
    node::check_structure(p, kind.unwrap_or(PageKind::Leaf))
        .map_err(|reason| Error::CorruptPage { page_id: pid, reason })?;
    // Paired with the pool, whose reads verify the header names the page asked for.
    assert_eq!(page::page_id(p), pid, "reclaim was handed another page");
    let n = node::slot_count(p);
    let children = if kind == Some(PageKind::Inner) {
        (0..=n).map(|pos| node::child_at_pos(p, pos)).collect()
    } else {
        for i in 0..n {
            removed(node::value(p, i))?;
        }
        Vec::new()
    };
    env.alloc.free(env.logger, g);
    Ok(children)
}

/// Each child of an inner node with the span it covers.
fn child_spans(p: &page::PageBuf, span: &Span) -> Vec<(PageId, Span)> {
    // Paired with `plan_node`, which reads a leaf's keys, not children, when it meets one.
    assert_eq!(page::kind(p), Some(PageKind::Inner), "child spans of a non-inner page");
    let n = node::slot_count(p);
    (0..=n)
        .map(|pos| {
            let lo = if pos == 0 { span.lo.clone() } else { Some(node::key(p, pos - 1).to_vec()) };
            let hi = if pos == n { span.hi.clone() } else { Some(node::key(p, pos).to_vec()) };
            (node::child_at_pos(p, pos), Span { lo, hi })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Bounds {
        let own = |b: Bound<&[u8]>| match b {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Bounds { lo: own(lo), hi: own(hi) }
    }
    fn span(lo: Option<&[u8]>, hi: Option<&[u8]>) -> Span {
        Span { lo: lo.map(<[u8]>::to_vec), hi: hi.map(<[u8]>::to_vec) }
    }

    #[test]
    fn overlap_classifies_spans_against_bounds() {
        let r = bounds(Bound::Included(b"c"), Bound::Excluded(b"m"));
        assert_eq!(overlap(&span(Some(b"a"), Some(b"c")), &r), Overlap::Outside);
        assert_eq!(overlap(&span(Some(b"m"), None), &r), Overlap::Outside);
        assert_eq!(overlap(&span(Some(b"c"), Some(b"m")), &r), Overlap::Inside);
        assert_eq!(overlap(&span(Some(b"d"), Some(b"e")), &r), Overlap::Inside);
        assert_eq!(overlap(&span(Some(b"b"), Some(b"e")), &r), Overlap::Partial);
        assert_eq!(overlap(&span(None, Some(b"e")), &r), Overlap::Partial);
        let incl = bounds(Bound::Excluded(b"c"), Bound::Included(b"m"));
        // Keys at "c" are not in (c, m]: a span from "c" only partly is.
        assert_eq!(overlap(&span(Some(b"c"), Some(b"d")), &incl), Overlap::Partial);
        // "m" is in the range, so a span starting there is partly inside.
        assert_eq!(overlap(&span(Some(b"m"), Some(b"n")), &incl), Overlap::Partial);
        let all = bounds(Bound::Unbounded, Bound::Unbounded);
        assert_eq!(overlap(&span(None, None), &all), Overlap::Inside);
    }

    #[test]
    fn a_free_page_record_fits_its_bound() {
        let mut p = [0u8; PAGE_SIZE];
        page::format(&mut p, u64::MAX >> 8, PageKind::Free, 0, u64::MAX >> 8);
        page::set_lsn(&mut p, u64::MAX >> 4);
        let mut payload = Vec::new();
        let kind =
            crate::durable::record::encode_change(7, &PageChange::Image { page: &p }, &mut payload);
        let mut packed = Vec::new();
        let compressed = crate::durable::record::compress(kind, &payload, &mut packed);
        assert!(compressed.is_some(), "a free page's image is stored compressed");
        // The compressed payload (its raw-length prefix included) and the frame header.
        let stored = packed.len() + crate::wal::format::RECORD_HEADER_BYTES;
        assert!(
            stored as u64 <= FREE_RECORD_BYTES_MAX,
            "a free page's record takes {stored} bytes"
        );
    }
}
