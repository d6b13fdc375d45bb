//! Range scans, one leaf at a time. No sibling links: each batch descends from the root with
//! the scan's current bound and the leaf's fence (the nearest separator beyond it) says where the
//! next leaf starts. Latches are held only while one leaf is copied out, so a scan never blocks
//! writers for long and a caller may write between batches. Not a snapshot: each key is seen at
//! most once, in order, with a value current at the time its leaf was read.
use super::{Env, TreeCore, DEPTH_MAX};
use crate::buffer::PageRef;
use crate::page::{node, node::Entry, PageBuf, PageKind};
use crate::Result;
use std::ops::Bound;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    pub lo: Bound<Vec<u8>>,
    pub hi: Bound<Vec<u8>>,
}

/// Entries of one leaf, in scan order.
pub type ScanBatch = Vec<Entry>;

pub fn below_hi(k: &[u8], hi: &Bound<Vec<u8>>) -> bool {
    match hi {
        Bound::Unbounded => true,
        Bound::Included(h) => k <= h.as_slice(),
        Bound::Excluded(h) => k < h.as_slice(),
    }
}
pub fn above_lo(k: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Unbounded => true,
        Bound::Included(l) => k >= l.as_slice(),
        Bound::Excluded(l) => k > l.as_slice(),
    }
}

impl TreeCore {
    /// Descends from the root to a leaf, latching one node at a time. `choose` picks the child
    /// position in an inner node and the fence it offers; the deepest fence offered is returned
    /// with the latched leaf.
    fn descend<'e>(
        &self,
        env: Env<'e>,
        choose: impl Fn(&PageBuf) -> (usize, Option<Vec<u8>>),
    ) -> Result<(PageRef<'e>, Option<Vec<u8>>)> {
        let mut pid = self.root;
        let mut fence = None;
        for _ in 0..DEPTH_MAX {
            let g = env.pool.read(pid)?;
            if self.check_page(pid, g.bytes())? == PageKind::Leaf {
                return Ok((g, fence));
            }
            let (pos, offered) = choose(g.bytes());
            if offered.is_some() {
                fence = offered;
            }
            pid = node::child_at_pos(g.bytes(), pos);
        }
        Err(self.too_deep())
    }

    /// The next ascending entries within `b` (one leaf's worth); empty when the range is done.
    pub fn scan_forward(&self, env: Env<'_>, b: &Bounds) -> Result<ScanBatch> {
        let _s = self.shared();
        let mut lo = b.lo.clone();
        // Each hop moves to a later leaf, so the leaf count bounds the hops.
        for _ in 0..=env.pool.page_capacity() {
            // The fence: the separator right of the path, where the next leaf's keys begin.
            let (leaf, fence) = self.descend(env, |p| {
                let pos = match &lo {
                    Bound::Unbounded => 0,
                    Bound::Included(k) | Bound::Excluded(k) => node::child_pos_for(p, k),
                };
                (pos, (pos < node::slot_count(p)).then(|| node::key(p, pos).to_vec()))
            })?;
            let p = leaf.bytes();
            let start = match &lo {
                Bound::Unbounded => 0,
                Bound::Included(k) => node::search(p, k).unwrap_or_else(|i| i),
                Bound::Excluded(k) => node::search(p, k).map_or_else(|i| i, |i| i + 1),
            };
            let mut out = Vec::new();
            for i in start..node::slot_count(p) {
                let k = node::key(p, i);
                if !below_hi(k, &b.hi) {
                    return Ok(out);
                }
                out.push((k.to_vec(), node::value(p, i).to_vec()));
            }
            if !out.is_empty() {
                return Ok(out);
            }
            match fence {
                Some(f) if below_hi(&f, &b.hi) => lo = Bound::Included(f),
                _ => return Ok(out),
            }
        }
        Err(self.too_deep())
    }

    /// The next descending entries within `b` (one leaf's worth); empty when the range is done.
    pub fn scan_backward(&self, env: Env<'_>, b: &Bounds) -> Result<ScanBatch> {
        let _s = self.shared();
        let mut hi = b.hi.clone();
        for _ in 0..=env.pool.page_capacity() {
            // The fence: the separator left of the path, above every earlier leaf's keys.
            let (leaf, fence) = self.descend(env, |p| {
                let pos = match &hi {
                    Bound::Unbounded => node::slot_count(p),
                    Bound::Included(k) => node::child_pos_for(p, k),
                    Bound::Excluded(k) => node::child_pos_below(p, k),
                };
                (pos, (pos > 0).then(|| node::key(p, pos - 1).to_vec()))
            })?;
            let p = leaf.bytes();
            let end = match &hi {
                Bound::Unbounded => node::slot_count(p),
                Bound::Included(k) => node::search(p, k).map_or_else(|i| i, |i| i + 1),
                Bound::Excluded(k) => node::search(p, k).unwrap_or_else(|i| i),
            };
            let mut out = Vec::new();
            for i in (0..end).rev() {
                let k = node::key(p, i);
                if !above_lo(k, &b.lo) {
                    return Ok(out);
                }
                out.push((k.to_vec(), node::value(p, i).to_vec()));
            }
            if !out.is_empty() {
                return Ok(out);
            }
            // Earlier leaves hold keys below the fence; stop when those are all below `lo`.
            match fence {
                Some(f) if above_lo_strict_room(&f, &b.lo) => hi = Bound::Excluded(f),
                _ => return Ok(out),
            }
        }
        Err(self.too_deep())
    }
}

/// Whether keys strictly below `f` can still satisfy `lo`.
fn above_lo_strict_room(f: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Unbounded => true,
        Bound::Included(l) | Bound::Excluded(l) => f > l.as_slice(),
    }
}
