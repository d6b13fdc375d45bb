//! Structure modifications, run under a tree's exclusive structure latch: splits (two- or
//! three-way, balanced by bytes), leaf merges and removal of empty nodes (an empty leaf is
//! unlinked and freed; a leaf under a quarter full merges with a leaf sibling; an inner node
//! left with one child is spliced out; the root absorbs a lone child).
//!
//! Deletes therefore never leak pages: every page of a tree is reachable and non-empty, except
//! the root. Inner nodes are not merged when merely sparse, and leaves may sit at different
//! depths after splices; searches do not depend on equal depth.
use super::types::{Env, Exclusive, DEPTH_MAX};
use crate::alloc::{stamp, stamp_image, Reservation};
use crate::buffer::PageMut;
use crate::page::{self, node, node::Entry, PageChange, PageId, PageKind};
use crate::{Error, Result};
use std::sync::atomic::Ordering;

type Path = Vec<(PageId, usize)>;

/// A non-root leaf with fewer live bytes than this tries to merge with a sibling.
pub const UNDERFULL_BYTES: usize = node::USABLE_BYTES / 4;
/// Two leaves merge only when their live bytes fit in this much of a page.
pub const MERGE_MAX_BYTES: usize = node::USABLE_BYTES * 3 / 4;

/// A node's entries after a change (what a split lays out), and the entries put in to get
/// them from the node's current ones (what the log records for the part that stays).
struct Change<'a> {
    entries: Vec<Entry>,
    insert: &'a [Entry],
}

/// Where a node that overflowed is cut: part `i` holds `entries[starts[i]..starts[i + 1]]`
/// (`starts` runs from 0 to the entry count), and whether it is an ascending load's append
/// split (every entry but the new last one stays where it was).
struct Cut {
    starts: Vec<usize>,
    append: bool,
}

/// A split's entries, the ones put in by this change, and where they are cut.
#[derive(Clone, Copy)]
struct Parts<'a> {
    kind: PageKind,
    entries: &'a [Entry],
    insert: &'a [Entry],
    cut: &'a Cut,
}

/// Cuts `entries` (sorted, of a node of `kind`) into parts balanced by bytes, or, for an
/// append to a full leaf, into the old entries and the new last one.
fn plan_split(kind: PageKind, entries: &[Entry], appended: bool) -> Cut {
    assert!(!entries.is_empty() && entries.windows(2).all(|w| w[0].0 < w[1].0), "sorted keys");
    let sizes: Vec<usize> =
        entries.iter().map(|(k, v)| node::entry_bytes(kind, k.len(), v.len())).collect();
    let mut starts = node::partition(&sizes, node::USABLE_BYTES);
    let last = entries.len() - 1;
    let append = appended
        && kind == PageKind::Leaf
        && starts.len() == 2
        && last > 0
        && sizes[..last].iter().sum::<usize>() <= node::USABLE_BYTES;
    if append {
        starts = vec![0, last];
    }
    starts.push(entries.len());
    // Paired with `node::partition`: the parts ascend, cover every entry, and each fits a page.
    assert_eq!((starts[0], starts[starts.len() - 1]), (0, entries.len()));
    for w in starts.windows(2) {
        assert!(w[0] < w[1], "an empty part at {}", w[0]);
        assert!(sizes[w[0]..w[1]].iter().sum::<usize>() <= node::USABLE_BYTES, "a part fits");
    }
    Cut { starts, append }
}

/// After the first page changes, a failure leaves the tree in an unknown state: poison the DB.
fn poison_on_err<T>(env: Env<'_>, r: Result<T>) -> Result<T> {
    // Liveness is checked before the first page changes, under the latch a drop needs: a
    // dropped tree met here would poison the database for a write that changed nothing.
    debug_assert!(!matches!(r, Err(Error::TreeDropped(_))), "a drop raced a structure change");
    if r.is_err() {
        env.poisoned.store(true, Ordering::Relaxed);
    }
    r
}

impl Exclusive<'_> {
    fn corrupt(&self, what: &'static str) -> Error {
        // `self` holds the structure change open: a shape seen with it closed could be a
        // split in progress, not a corrupt tree.
        debug_assert!(self.core.structure.begin().is_none(), "{what} seen outside a change");
        crate::Corruption::TreeShape { tree: self.core.id, what }.into()
    }

    /// Inner nodes from the root to the leaf covering `key`, with the child position taken.
    pub(super) fn path_to_leaf(&self, env: Env<'_>, key: &[u8]) -> Result<(Path, PageId)> {
        let mut path = Vec::new();
        let mut pid = self.core.root;
        for _ in 0..DEPTH_MAX {
            let g = env.pool.read(pid)?;
            if self.core.check_page(pid, g.bytes())? == PageKind::Leaf {
                return Ok((path, pid));
            }
            let pos = node::child_pos_for(g.bytes(), key);
            // Paired with `unlink_child` and `rebalance_leaf`, which index the parent with it.
            assert!(pos <= node::slot_count(g.bytes()), "child position {pos} past the node");
            path.push((pid, pos));
            pid = node::child_at_pos(g.bytes(), pos);
        }
        Err(self.core.too_deep())
    }

    pub fn put(&self, env: Env<'_>, key: &[u8], value: &[u8]) -> Result<()> {
        // Batches come here directly: sizes are checked, with typed errors, before that.
        assert!(key.len() <= node::MAX_KEY_BYTES && value.len() <= node::MAX_VALUE_BYTES);
        self.core.check_live()?;
        let (path, leaf) = self.path_to_leaf(env, key)?;
        // Worst case: a three-way split on every level plus a root split.
        let r = env.alloc.reserve(3 * (path.len() as u64 + 2))?;
        let mut g = env.pool.write(leaf)?;
        if node::leaf_put(g.bytes_mut(), key, value) {
            let change = PageChange::LeafPut { tree_id: self.core.id, key, value };
            stamp(env.logger, &mut g, &change);
            return Ok(());
        }
        let mut entries = node::entries(g.bytes());
        // A key past every key of the full leaf (an ascending load) splits off alone: the
        // leaf stays full instead of two half-full leaves, so a sorted load fills its pages.
        let appended = match entries.binary_search_by(|(k, _)| k.as_slice().cmp(key)) {
            Ok(i) => {
                entries[i].1 = value.to_vec();
                false
            }
            Err(i) => {
                entries.insert(i, (key.to_vec(), value.to_vec()));
                env.append_split && i + 1 == entries.len()
            }
        };
        let insert = [(key.to_vec(), value.to_vec())];
        let done = self.split(env, &r, g, Change { entries, insert: &insert }, path, appended);
        poison_on_err(env, done)
    }

    /// Writes `change.entries` into the node `g`, splitting it and inserting separators upwards
    /// when they do not fit.
    fn split(
        &self,
        env: Env<'_>,
        r: &Reservation<'_>,
        mut g: PageMut<'_>,
        change: Change<'_>,
        mut path: Path,
        appended: bool,
    ) -> Result<()> {
        let Change { entries, insert } = change;
        let pid = g.pid();
        let kind = page::kind(g.bytes()).ok_or_else(|| self.corrupt("split of a non-node"))?;
        let cut = plan_split(kind, &entries, appended);
        if cut.starts.len() == 2 {
            return self.rebuild_logged(env, &mut g, insert.to_vec(), entries.len());
        }
        let parts = Parts { kind, entries: &entries, insert, cut: &cut };
        let (separators, first_child) = self.write_parts(env, r, &mut g, &parts)?;
        // Paired with the parent's rebuild below: a separator for every part but the first,
        // ascending (each part's first key).
        assert_eq!(separators.len(), cut.starts.len() - 2);
        assert!(separators.windows(2).all(|w| w[0].0 < w[1].0), "separators ascend");
        if pid == self.core.root {
            page::format(g.bytes_mut(), pid, PageKind::Inner, self.core.id, first_child);
            node::build(g.bytes_mut(), &separators);
            stamp_image(env.logger, &mut g);
            return Ok(());
        }
        drop(g);
        let (parent, _) = path.pop().ok_or_else(|| self.corrupt("non-root node without parent"))?;
        let pg = env.pool.write(parent)?;
        let mut parent_entries = node::entries(pg.bytes());
        parent_entries.extend(separators.iter().cloned());
        parent_entries.sort_by(|a, b| a.0.cmp(&b.0));
        let change = Change { entries: parent_entries, insert: &separators };
        self.split(env, r, pg, change, path, false)
    }

    /// Writes each part of a split node: the first stays in `g` (unless `g` is the root,
    /// which keeps its page id and becomes the parts' parent), the others go to new pages.
    /// Returns a separator for each part that starts with a key the parent must name, and the
    /// page of the part that needs none (a new root's first child).
    fn write_parts(
        &self,
        env: Env<'_>,
        r: &Reservation<'_>,
        g: &mut PageMut<'_>,
        parts: &Parts<'_>,
    ) -> Result<(Vec<Entry>, PageId)> {
        let Parts { kind, entries, insert, cut } = *parts;
        let starts = &cut.starts;
        let old_aux = page::aux(g.bytes());
        let is_root = g.pid() == self.core.root;
        let mut separators: Vec<Entry> = Vec::with_capacity(starts.len());
        let mut first_child = g.pid();
        for (j, w) in starts.windows(2).enumerate() {
            let group = &entries[w[0]..w[1]];
            let (aux, body, sep) = match (kind, j) {
                (PageKind::Inner, 0) => (old_aux, group, None),
                (PageKind::Inner, _) => {
                    (node::decode_child(&group[0].1), &group[1..], Some(group[0].0.clone()))
                }
                (_, 0) => (0, group, None),
                (_, _) => (0, group, Some(group[0].0.clone())),
            };
            if j == 0 && !is_root && cut.append {
                // The leaf keeps exactly the entries it had (the failed put left it unchanged):
                // nothing to rebuild or log (a page image less in the WAL per split).
                continue;
            }
            if j == 0 && !is_root {
                // The entries put in that stay here (below part 1's first key).
                let boundary = &entries[starts[1]].0;
                let stay: Vec<Entry> =
                    insert.iter().filter(|(k, _)| k < boundary).cloned().collect();
                self.rebuild_logged(env, g, stay, body.len())?;
                continue;
            }
            let mut c = env.alloc.allocate(env.pool, r, kind, self.core.id)?;
            // The parent (or the root, made the parts' parent) will name this page as a child.
            assert!(c.pid() != page::meta::META_PAGE_ID && c.pid() != g.pid(), "a part's page");
            page::set_aux(c.bytes_mut(), aux);
            node::build(c.bytes_mut(), body);
            stamp_image(env.logger, &mut c);
            match sep {
                Some(s) => separators.push((s, node::child_value(c.pid()))),
                None => first_child = c.pid(),
            }
        }
        Ok((separators, first_child))
    }

    /// Rebuilds the node `g` from its own entries with `insert` put in, keeping the first
    /// `keep`, and logs that (`PageChange::NodeRebuild`, a few bytes) instead of the page's
    /// image. The live page is built by the same function redo runs, so both agree.
    fn rebuild_logged(
        &self,
        env: Env<'_>,
        g: &mut PageMut<'_>,
        insert: Vec<Entry>,
        keep: usize,
    ) -> Result<()> {
        page::change::rebuild(g.bytes_mut(), &insert, keep)
            .map_err(|source| crate::Corruption::NodeRebuild { tree: self.core.id, source })?;
        // Paired with the callers' counts (a split's first part, a node that fits whole): the
        // log records `keep`, and redo rebuilds exactly that many.
        assert_eq!(node::slot_count(g.bytes()), keep, "a rebuild kept another count");
        let change = PageChange::NodeRebuild { tree_id: self.core.id, insert: &insert, keep };
        stamp(env.logger, g, &change);
        Ok(())
    }

    /// Fixes the leaf covering `key` after deletes: an empty leaf is unlinked and freed; a leaf
    /// under a quarter full merges with a leaf sibling (left preferred) when the two fit in three
    /// quarters of a page. The gap between the thresholds keeps split/merge from ping-ponging.
    pub fn rebalance_leaf(&self, env: Env<'_>, key: &[u8]) -> Result<()> {
        self.core.check_live()?;
        let (mut path, leaf) = self.path_to_leaf(env, key)?;
        if leaf == self.core.root {
            return Ok(());
        }
        let mut g = env.pool.write(leaf)?;
        // Merges below move entries as leaf cells; the exclusive latch kept it a leaf.
        assert_eq!(page::kind(g.bytes()), Some(PageKind::Leaf), "page {leaf} is not a leaf");
        if node::slot_count(g.bytes()) == 0 {
            env.alloc.free(env.logger, g);
            let done = self.unlink_child(env, path);
            return poison_on_err(env, done);
        }
        let used = node::used_bytes(g.bytes());
        if used >= UNDERFULL_BYTES {
            return Ok(()); // Refilled by a writer between the delete and this call.
        }
        let (parent, pos) = *path.last().ok_or_else(|| self.corrupt("leaf without parent"))?;
        let (left, right) = {
            let pg = env.pool.read(parent)?;
            let n = node::slot_count(pg.bytes());
            let left = (pos > 0).then(|| node::child_at_pos(pg.bytes(), pos - 1));
            let right = (pos < n).then(|| node::child_at_pos(pg.bytes(), pos + 1));
            (left, right)
        };
        let fits = |other: &page::PageBuf| {
            page::kind(other) == Some(PageKind::Leaf)
                && used + node::used_bytes(other) <= MERGE_MAX_BYTES
        };
        if let Some(left) = left {
            let mut lg = env.pool.write(left)?;
            if fits(lg.bytes()) {
                let mut es = node::entries(lg.bytes());
                es.extend(node::entries(g.bytes()));
                node::build(lg.bytes_mut(), &es);
                stamp_image(env.logger, &mut lg);
                drop(lg);
                env.alloc.free(env.logger, g);
                let done = self.unlink_child(env, path);
                return poison_on_err(env, done);
            }
        }
        if let Some(right) = right {
            let rg = env.pool.write(right)?;
            if fits(rg.bytes()) {
                let mut es = node::entries(g.bytes());
                es.extend(node::entries(rg.bytes()));
                node::build(g.bytes_mut(), &es);
                stamp_image(env.logger, &mut g);
                drop(g);
                env.alloc.free(env.logger, rg);
                if let Some(last) = path.last_mut() {
                    last.1 = pos + 1;
                }
                let done = self.unlink_child(env, path);
                return poison_on_err(env, done);
            }
        }
        Ok(())
    }

    /// Removes the (already freed) child at the end of `path` from its parent.
    fn unlink_child(&self, env: Env<'_>, mut path: Path) -> Result<()> {
        for _ in 0..DEPTH_MAX {
            let (ppid, pos) = path.pop().ok_or_else(|| self.corrupt("unlink without parent"))?;
            let mut pg = env.pool.write(ppid)?;
            let mut es = node::entries(pg.bytes());
            // Paired with `path_to_leaf`, whose positions name one of the node's children.
            assert!(pos <= es.len(), "child position {pos} past parent {ppid}");
            if es.is_empty() {
                // The child was the parent's only child: the parent is empty as well.
                if ppid == self.core.root {
                    page::format(pg.bytes_mut(), ppid, PageKind::Leaf, self.core.id, 0);
                    stamp_image(env.logger, &mut pg);
                    return Ok(());
                }
                env.alloc.free(env.logger, pg);
                continue;
            }
            if pos == 0 {
                let first = es.remove(0);
                page::set_aux(pg.bytes_mut(), node::decode_child(&first.1));
            } else {
                es.remove(pos - 1);
            }
            node::build(pg.bytes_mut(), &es);
            if !es.is_empty() {
                stamp_image(env.logger, &mut pg);
                return Ok(());
            }
            // One child left: splice this node out.
            if ppid == self.core.root {
                return self.absorb_into_root(env, pg);
            }
            let only = page::aux(pg.bytes());
            let (gpid, gpos) = *path.last().ok_or_else(|| self.corrupt("splice without parent"))?;
            let mut gg = env.pool.write(gpid)?;
            node::set_child_at_pos(gg.bytes_mut(), gpos, only);
            stamp_image(env.logger, &mut gg);
            env.alloc.free(env.logger, pg);
            return Ok(());
        }
        Err(self.core.too_deep())
    }

    /// While the root is an inner node with a single child, moves that child into the root.
    pub(super) fn absorb_into_root(&self, env: Env<'_>, mut root: PageMut<'_>) -> Result<()> {
        let rpid = root.pid();
        // It rewrites the page in place as the tree's root: only the root keeps its id so.
        assert_eq!(rpid, self.core.root, "absorbing into page {rpid}, not the root");
        for _ in 0..DEPTH_MAX {
            let is_lone = page::kind(root.bytes()) == Some(PageKind::Inner)
                && node::slot_count(root.bytes()) == 0;
            if !is_lone {
                stamp_image(env.logger, &mut root);
                return Ok(());
            }
            let child = env.pool.write(page::aux(root.bytes()))?;
            let kind = self.core.check_page(child.pid(), child.bytes())?;
            let es = node::entries(child.bytes());
            let aux = page::aux(child.bytes());
            page::format(root.bytes_mut(), rpid, kind, self.core.id, aux);
            node::build(root.bytes_mut(), &es);
            env.alloc.free(env.logger, child);
        }
        Err(self.core.too_deep())
    }
}
