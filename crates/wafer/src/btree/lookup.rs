//! Point lookups without latches (LeanStore's optimistic latch coupling): a descent reads each
//! node through the buffer pool's optimistic view and validates the node's version before it
//! follows the child pointer it read, and the leaf's version after copying the value out. It
//! takes no lock and writes no shared cache line (a clock bit found clear aside).
//!
//! Structure modifications change several nodes one after the other without latching the
//! parent while the child changes (a split rebuilds the leaf, then gives the parent its
//! separator), so per-node versions alone could let a descent reach the left half of a split
//! leaf through a parent read before the split, and miss a key moved right. Each tree therefore
//! keeps a structure version ([`StructureVersion`](super::structure::StructureVersion)), odd while the tree's structure latch is
//! held exclusive (splits, rebalances, batches: `super::Exclusive` holds it); a lookup reads it
//! first and validates it last, so it sees a batch whole or not at all, as latched readers do.
//! Leaf-only writes (a put that fits, a delete) do not touch it: the leaf's own version covers
//! them.
//!
//! A lookup that finds a page not cached, or a node that validates yet fails the tree check
//! (corruption), goes to the latched path, which reads the device and reports errors; one that
//! keeps meeting writers does too after [`OPTIMISTIC_ATTEMPTS`].
use super::types::{Env, TreeCore, DEPTH_MAX};
use crate::buffer::Optimistic;
use crate::page::{self, node, node::NodeRead, PageKind};
use crate::Result;

/// Optimistic tries of one lookup before it latches (each one met a writer or a structure
/// change): a writer holds a page for microseconds, an eviction write-back for milliseconds.
pub const OPTIMISTIC_ATTEMPTS: u32 = 8;
/// Values up to this size are copied to the stack on the first try; larger ones (rare) cost a
/// second descent with a buffer of `MAX_VALUE_BYTES`.
const SMALL_VALUE_BYTES: usize = 256;

/// One optimistic try.
enum Try {
    /// The key's value, `len` bytes, the first `min(len, buffer)` of them copied out.
    Found(usize),
    Absent,
    /// A writer or a structure change got in the way.
    Retry,
    /// Only the latched path can go on (a page to read, or an error to report).
    Latched,
}

impl TreeCore {
    /// Calls `f` on the value of `key` (None: no such key). Optimistic first: the value is
    /// copied out of its leaf to the stack and `f` runs after validation; no allocation.
    pub fn get_with<R>(
        &self,
        env: Env<'_>,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let mut small = [0u8; SMALL_VALUE_BYTES];
        match self.lookup_attempts(env, key, &mut small)? {
            Try::Found(len) if len <= small.len() => return Ok(Some(f(&small[..len]))),
            Try::Found(_) => {}
            Try::Absent => return Ok(None),
            Try::Retry | Try::Latched => return self.get_latched(env, key, f),
        }
        // A value larger than the first buffer: validated values are at most MAX_VALUE_BYTES.
        let mut large = [0u8; node::MAX_VALUE_BYTES];
        match self.lookup_attempts(env, key, &mut large)? {
            Try::Found(len) => {
                // Paired with `lookup_optimistic`: a validated value fits this buffer whole.
                assert!(len <= large.len(), "a validated value of {len} bytes");
                Ok(Some(f(&large[..len.min(large.len())])))
            }
            Try::Absent => Ok(None),
            Try::Retry | Try::Latched => self.get_latched(env, key, f),
        }
    }

    /// Optimistic tries until one answers (Found, Absent) or [`OPTIMISTIC_ATTEMPTS`] are spent
    /// or the latched path is needed (Latched).
    fn lookup_attempts(&self, env: Env<'_>, key: &[u8], out: &mut [u8]) -> Result<Try> {
        // `get_with` retries with a buffer for any value: only its two sizes come here.
        assert!(
            out.len() == SMALL_VALUE_BYTES || out.len() == node::MAX_VALUE_BYTES,
            "a lookup buffer of {} bytes",
            out.len()
        );
        for _ in 0..OPTIMISTIC_ATTEMPTS {
            match self.lookup_optimistic(env, key, out)? {
                Try::Retry => std::hint::spin_loop(),
                answer => return Ok(answer),
            }
        }
        Ok(Try::Latched)
    }

    /// The latched lookup: structure latch shared, each level's frame latched shared.
    fn get_latched<R>(
        &self,
        env: Env<'_>,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let _s = self.shared();
        let g = self.leaf_read(env, key)?;
        assert_eq!(page::kind(g.bytes()), Some(PageKind::Leaf), "a lookup searched an inner node");
        Ok(node::search(g.bytes(), key).ok().map(|i| f(node::value(g.bytes(), i))))
    }

    /// Descends to `key`'s leaf without latches and copies its value into `out`.
    fn lookup_optimistic(&self, env: Env<'_>, key: &[u8], out: &mut [u8]) -> Result<Try> {
        let Some(structure) = self.structure.begin() else { return Ok(Try::Retry) };
        let mut pid = self.root;
        for depth in 1..=DEPTH_MAX as u64 {
            let page = match env.pool.optimistic(pid)? {
                Optimistic::Page(page) => page,
                Optimistic::Locked => return Ok(Try::Retry),
                Optimistic::Missing => return Ok(Try::Latched),
            };
            let p = page.bytes();
            let kind = p.u8_at(page::OFF_KIND);
            let leaf = kind == PageKind::Leaf as u8;
            if p.u32_at(page::OFF_TREE_ID) != self.id || !(leaf || kind == PageKind::Inner as u8) {
                // Torn or reused meanwhile (retry), or corrupt (the latched path says so).
                return Ok(if page.validate() { Try::Latched } else { Try::Retry });
            }
            if !leaf {
                let child = node::child_at_pos_in(p, node::child_pos_for_in(p, key));
                if !page.validate() {
                    return Ok(Try::Retry);
                }
                pid = child;
                continue;
            }
            let found = node::search_in(p, key).ok().map(|i| {
                let (off, len) = node::value_span(p, i);
                let n = len.min(out.len());
                p.copy_out(off, &mut out[..n]);
                len
            });
            if !page.validate() || !self.structure.validate(structure) {
                return Ok(Try::Retry);
            }
            // Validated, so the leaf passed `page::verify` whole: `get_with` relies on the bound.
            if let Some(len) = found {
                assert!(len <= node::MAX_VALUE_BYTES, "a validated value of {len} bytes");
            }
            env.pool.count_hits(depth);
            return Ok(found.map_or(Try::Absent, Try::Found));
        }
        Ok(Try::Latched)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{AllocState, Allocator};
    use crate::buffer::{BufferPool, InPlaceStore};
    use crate::device::MemoryDevice;
    use crate::page::{NoopLogger, PageId};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn key(i: u32) -> Vec<u8> {
        format!("user{i:08}").into_bytes()
    }

    /// A descent that read the parent before a split and the leaf after it: the leaf alone
    /// validates (the split left it unlocked, without its upper keys), so only the structure
    /// version keeps the lookup from answering "absent" for a key that moved right.
    #[test]
    fn a_descent_across_a_split_fails_only_the_structure_check() {
        let dev = Arc::new(MemoryDevice::new(4 << 20));
        let store = Arc::new(InPlaceStore::new(dev, 0));
        let logger = Arc::new(NoopLogger::new(0));
        let pool = BufferPool::new(store, 1 << 20, 8, 0, logger.clone()).unwrap();
        let state = AllocState { high_water: 1, free_head: 0, free_count: 0 };
        let alloc = Allocator::new(state, pool.page_capacity());
        let poisoned = AtomicBool::new(false);
        let env = Env {
            pool: &pool,
            logger: &*logger,
            alloc: &alloc,
            poisoned: &poisoned,
            append_split: false,
        };
        let root = alloc.allocate_one(&pool, PageKind::Leaf, 1).unwrap().pid();
        let core = TreeCore::new(1, root);
        for i in 0..200 {
            core.put(env, &key(i * 10), &[7u8; 100]).unwrap();
        }
        // The parent read first, optimistically: the leaf of the last key of its leaf.
        let target = key(1000);
        let seen = core.structure.begin().unwrap();
        let Optimistic::Page(parent) = pool.optimistic(root).unwrap() else { panic!() };
        assert_eq!(parent.bytes().u8_at(page::OFF_KIND), PageKind::Inner as u8);
        let leaf: PageId =
            node::child_at_pos_in(parent.bytes(), node::child_pos_for_in(parent.bytes(), &target));
        assert!(parent.validate());
        let last = {
            let g = pool.read(leaf).unwrap();
            node::key(g.bytes(), node::slot_count(g.bytes()) - 1).to_vec()
        };
        // Then the leaf splits: keys put just below its last key until it does.
        let mut j = 0;
        while core.structure.validate(seen) {
            let mut k = last.clone();
            k.extend_from_slice(format!("-{j:03}").as_bytes());
            k[last.len() - 1] -= 1;
            core.put(env, &k, &[8u8; 100]).unwrap();
            j += 1;
            assert!(j < 100, "no split");
        }
        // The leaf read after the split validates, and no longer holds the last key.
        let Optimistic::Page(l) = pool.optimistic(leaf).unwrap() else { panic!() };
        let found = node::search_in(l.bytes(), &last).is_ok();
        assert!(l.validate());
        assert!(!found, "the split kept the last key left; the test needs a key that moved");
        assert!(!core.structure.validate(seen));
        // And a lookup from the start finds it.
        assert!(core.get(env, &last).unwrap().is_some());
    }
}
