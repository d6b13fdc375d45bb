//! Range scans, one leaf at a time. No sibling links: each batch descends from the root with
//! the scan's current bound and the leaf's fence (the nearest separator beyond it) says where the
//! next leaf starts. Latches are held only while one leaf is copied out, so a scan never blocks
//! writers for long and a caller may write between batches. On the latest pages ([`Latest`])
//! this is not a snapshot: each key is seen at most once, in order, with a value current at the
//! time its leaf was read. On a snapshot's pages ([`AtEpoch`]) every leaf is as the snapshot
//! began.
use super::{Env, TreeCore, DEPTH_MAX};
use crate::buffer::{BufferPool, PageRef};
use crate::page::{self, node, node::Entry, PageBuf, PageId, PageKind};
use crate::{Error, Result};
use std::ops::{Bound, Deref};
use std::sync::Arc;

/// Where a descent reads its nodes, one at a time.
pub trait Nodes {
    type Node: Deref<Target = PageBuf>;
    fn node(&self, pid: PageId) -> Result<Self::Node>;
    /// Bounds the leaves one scan call may hop over (the page ids).
    fn page_capacity(&self) -> u64;
}

/// The pages as they are now, latched shared while read.
#[derive(Debug, Clone, Copy)]
pub struct Latest<'e>(pub Env<'e>);

impl<'e> Nodes for Latest<'e> {
    type Node = PageRef<'e>;
    fn node(&self, pid: PageId) -> Result<PageRef<'e>> {
        let g = self.0.pool.read(pid)?;
        // Paired with `descend`, which follows the children of this frame as `pid`'s.
        assert_eq!(g.pid(), pid, "the pool latched another page");
        Ok(g)
    }
    fn page_capacity(&self) -> u64 {
        let cap = self.0.pool.page_capacity();
        // Scans bound their hops by it: at least the superblock and a root are in the pool.
        debug_assert!(cap > page::meta::META_PAGE_ID + 1, "a pool of {cap} pages");
        cap
    }
}

/// The pages as a snapshot (`epoch`) sees them (`buffer/versions.rs`).
#[derive(Debug, Clone, Copy)]
pub struct AtEpoch<'e> {
    pub pool: &'e BufferPool,
    pub epoch: u64,
}

impl Nodes for AtEpoch<'_> {
    type Node = Arc<PageBuf>;
    fn node(&self, pid: PageId) -> Result<Arc<PageBuf>> {
        let p = self.pool.read_at(pid, self.epoch)?;
        // Checked after the read: an expiry drops versions, and a read that raced it may have
        // found the page as it is now instead.
        if self.pool.versions().is_expired(self.epoch) {
            return Err(Error::SnapshotExpired);
        }
        // Paired with the pool's `check_pid`: a version is kept only for a page the pool holds.
        debug_assert!(pid < self.pool.page_capacity(), "a version of page {pid} past the pool");
        Ok(p)
    }
    fn page_capacity(&self) -> u64 {
        let cap = self.pool.page_capacity();
        // As `Latest`'s: a snapshot's scan hops over the same page ids.
        debug_assert!(cap > page::meta::META_PAGE_ID + 1, "a pool of {cap} pages");
        cap
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    pub lo: Bound<Vec<u8>>,
    pub hi: Bound<Vec<u8>>,
}

/// Entries of one leaf, in scan order.
pub type ScanBatch = Vec<Entry>;

pub fn below_hi(k: &[u8], hi: &Bound<Vec<u8>>) -> bool {
    // Callers hand over keys and fences read off pages: a longer one is not a stored key.
    debug_assert!(k.len() <= node::MAX_KEY_BYTES, "a {}-byte key", k.len());
    match hi {
        Bound::Unbounded => true,
        Bound::Included(h) => k <= h.as_slice(),
        Bound::Excluded(h) => k < h.as_slice(),
    }
}
pub fn above_lo(k: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    // As in `below_hi`: keys and fences read off pages.
    debug_assert!(k.len() <= node::MAX_KEY_BYTES, "a {}-byte key", k.len());
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
    fn descend<N: Nodes>(
        &self,
        nodes: &N,
        choose: impl Fn(&PageBuf) -> (usize, Option<Vec<u8>>),
    ) -> Result<(N::Node, Option<Vec<u8>>)> {
        let mut pid = self.root;
        let mut fence = None;
        for _ in 0..DEPTH_MAX {
            let g = nodes.node(pid)?;
            if self.check_page(pid, &g)? == PageKind::Leaf {
                return Ok((g, fence));
            }
            let (pos, offered) = choose(&g);
            // Paired with the callers' `choose`: a position names one of the node's children.
            assert!(pos <= node::slot_count(&g), "child position {pos} past the node");
            if offered.is_some() {
                fence = offered;
            }
            pid = node::child_at_pos(&g, pos);
        }
        Err(self.too_deep())
    }

    /// The value of `key` in `nodes` (a snapshot's lookup; the latest pages have faster ones).
    pub fn get_in<N: Nodes>(&self, nodes: &N, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (leaf, _) = self.descend(nodes, |p| (node::child_pos_for(p, key), None))?;
        assert_eq!(page::kind(&leaf), Some(PageKind::Leaf), "a lookup searched an inner node");
        Ok(node::search(&leaf, key).ok().map(|i| node::value(&leaf, i).to_vec()))
    }

    /// The next ascending entries within `b` (one leaf's worth); empty when the range is done.
    pub fn scan_forward(&self, env: Env<'_>, b: &Bounds) -> Result<ScanBatch> {
        let _s = self.shared();
        let batch = self.scan_forward_in(&Latest(env), b)?;
        // Paired with the iterators, which yield the batch as is: every key within `b`.
        debug_assert!(batch.iter().all(|(k, _)| above_lo(k, &b.lo) && below_hi(k, &b.hi)));
        Ok(batch)
    }

    /// As [`TreeCore::scan_forward`], on `nodes`.
    pub fn scan_forward_in<N: Nodes>(&self, nodes: &N, b: &Bounds) -> Result<ScanBatch> {
        let mut lo = b.lo.clone();
        // Each hop moves to a later leaf, so the leaf count bounds the hops.
        for _ in 0..=nodes.page_capacity() {
            // The fence: the separator right of the path, where the next leaf's keys begin.
            let (leaf, fence) = self.descend(nodes, |p| {
                let pos = match &lo {
                    Bound::Unbounded => 0,
                    Bound::Included(k) | Bound::Excluded(k) => node::child_pos_for(p, k),
                };
                (pos, (pos < node::slot_count(p)).then(|| node::key(p, pos).to_vec()))
            })?;
            let p: &PageBuf = &leaf;
            let start = match &lo {
                Bound::Unbounded => 0,
                Bound::Included(k) => node::search(p, k).unwrap_or_else(|i| i),
                Bound::Excluded(k) => node::search(p, k).map_or_else(|i| i, |i| i + 1),
            };
            // Paired with `node::search`, whose positions run to the slot count.
            assert!(start <= node::slot_count(p), "scan start {start} past the leaf");
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
        let batch = self.scan_backward_in(&Latest(env), b)?;
        // Paired with the iterators, which yield the batch as is: every key within `b`.
        debug_assert!(batch.iter().all(|(k, _)| above_lo(k, &b.lo) && below_hi(k, &b.hi)));
        Ok(batch)
    }

    /// As [`TreeCore::scan_backward`], on `nodes`.
    pub fn scan_backward_in<N: Nodes>(&self, nodes: &N, b: &Bounds) -> Result<ScanBatch> {
        let mut hi = b.hi.clone();
        for _ in 0..=nodes.page_capacity() {
            // The fence: the separator left of the path, above every earlier leaf's keys.
            let (leaf, fence) = self.descend(nodes, |p| {
                let pos = match &hi {
                    Bound::Unbounded => node::slot_count(p),
                    Bound::Included(k) => node::child_pos_for(p, k),
                    Bound::Excluded(k) => node::child_pos_below(p, k),
                };
                (pos, (pos > 0).then(|| node::key(p, pos - 1).to_vec()))
            })?;
            let p: &PageBuf = &leaf;
            let end = match &hi {
                Bound::Unbounded => node::slot_count(p),
                Bound::Included(k) => node::search(p, k).map_or_else(|i| i, |i| i + 1),
                Bound::Excluded(k) => node::search(p, k).unwrap_or_else(|i| i),
            };
            // Paired with `node::search`, whose positions run to the slot count.
            assert!(end <= node::slot_count(p), "scan end {end} past the leaf");
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
    // `f` is a separator of an inner node, which holds keys no longer than a leaf's.
    debug_assert!(f.len() <= node::MAX_KEY_BYTES, "a {}-byte fence", f.len());
    match lo {
        Bound::Unbounded => true,
        Bound::Included(l) | Bound::Excluded(l) => f > l.as_slice(),
    }
}
