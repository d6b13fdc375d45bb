//! `Db::check`: walks every tree, the free list and the store's space metadata, and reports every
//! violation found instead of stopping at the first (docs/internals/btree.md, "Checking a database").
//! Pages are read through the buffer pool, so a page that is not resident is read from the
//! device and its checksum verified; resident pages are checked structurally.
use super::blob_state::BlobState;
use super::catalog;
use super::inner::DbInner;
use crate::btree::DEPTH_MAX;
use crate::page::{self, node, PageBuf, PageId, PageKind};
use crate::Result;
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// One thing found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The page concerned, when there is one.
    pub page_id: Option<PageId>,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every violation says what is wrong; the page is context only.
        debug_assert!(!self.message.is_empty(), "a violation without a message");
        match self.page_id {
            Some(pid) => write!(f, "page {pid}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// What [`crate::Db::check`] walked and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Trees walked, the catalog included.
    pub trees: u64,
    /// Tree pages (leaves and inner nodes) and free-list pages read.
    pub tree_pages: u64,
    pub free_pages: u64,
    /// Entries in user trees' leaves.
    pub entries: u64,
    /// Pages below the high-water mark: superblock, tree pages, free pages and leaks.
    pub high_water_pages: u64,
    pub violations: Vec<Violation>,
}

impl CheckReport {
    pub fn is_clean(&self) -> bool {
        // The walk counts the catalog as a tree: a report of a walk that ran has one at least.
        debug_assert!(self.trees > 0 || !self.violations.is_empty() || self.tree_pages == 0);
        self.violations.is_empty()
    }
}

impl std::fmt::Display for CheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} trees, {} tree pages, {} free pages, {} entries, high water {} pages: ",
            self.trees, self.tree_pages, self.free_pages, self.entries, self.high_water_pages
        )?;
        // Entries are counted in the leaves the walk read: none without a page read.
        debug_assert!(self.entries == 0 || self.tree_pages > 0, "entries in no page: {self:?}");
        if self.is_clean() {
            return f.write_str("clean");
        }
        writeln!(f, "{} violations", self.violations.len())?;
        for v in &self.violations {
            writeln!(f, "  {v}")?;
        }
        Ok(())
    }
}

/// Who owns a page: nobody yet, the superblock, the free list, or a tree (by id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    None,
    Superblock,
    FreeList,
    Tree(u32),
    /// A blob a key names, or a free extent of the blob space.
    Blob,
    BlobFree,
}

/// Leaks listed one by one up to this many; beyond, one line counts the rest.
const LEAKS_LISTED_MAX: u64 = 1000;

/// A page to visit: its keys must lie in `[lo, hi)` (None: unbounded), the fences its parent's
/// separators set.
struct Visit {
    pid: PageId,
    depth: usize,
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
}

struct Walk<'a> {
    inner: &'a DbInner,
    owner: Vec<Owner>,
    report: CheckReport,
    /// Values are tagged: each user tree's values are decoded and their blobs' runs kept here.
    blob_runs: Option<Vec<std::ops::Range<PageId>>>,
}

impl Walk<'_> {
    fn violation(&mut self, page_id: Option<PageId>, message: String) {
        // A report line with no words tells the reader nothing about what broke.
        debug_assert!(!message.is_empty(), "a violation without a message");
        self.report.violations.push(Violation { page_id, message });
    }

    /// Claims `pid` for `who`; false (with a violation) when it is out of range or owned.
    fn claim(&mut self, pid: PageId, who: Owner) -> bool {
        // Every claim names its owner: `None` marks the pages nobody reached (the leaks).
        debug_assert_ne!(who, Owner::None, "page {pid} claimed for nobody");
        let Some(slot) = self.owner.get(pid as usize).copied() else {
            let hw = self.owner.len();
            self.violation(Some(pid), format!("{who:?} reaches it, beyond the high water {hw}"));
            return false;
        };
        if slot != Owner::None {
            self.violation(Some(pid), format!("owned twice: by {slot:?} and by {who:?}"));
            return false;
        }
        self.owner[pid as usize] = who;
        true
    }

    /// Reads `pid` through the pool (verifying a page loaded from the device).
    fn read(&mut self, pid: PageId) -> Option<Box<PageBuf>> {
        // Pages are read only once claimed: an unclaimed read would walk a page twice.
        debug_assert!(self.owner.get(pid as usize).is_some_and(|o| *o != Owner::None), "{pid}");
        match self.inner.pool.read(pid) {
            Ok(g) => Some(Box::new(*g.bytes())),
            Err(e) => {
                self.violation(Some(pid), format!("unreadable: {e}"));
                None
            }
        }
    }

    /// Walks one tree; returns its leaf entries when `collect` (the catalog's).
    fn tree(&mut self, id: u32, root: PageId, collect: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.report.trees += 1;
        let mut out = Vec::new();
        let mut stack = vec![Visit { pid: root, depth: 0, lo: None, hi: None }];
        let mut leaf_depth: Option<usize> = None;
        let mut prev_key: Option<Vec<u8>> = None;
        // Bounded: every page is claimed once before its children are pushed.
        for _ in 0..=self.owner.len() {
            let Some(v) = stack.pop() else { break };
            if v.depth >= DEPTH_MAX {
                self.violation(Some(v.pid), format!("tree {id} deeper than {DEPTH_MAX} levels"));
                continue;
            }
            if !self.claim(v.pid, Owner::Tree(id)) {
                continue;
            }
            let Some(p) = self.read(v.pid) else { continue };
            self.report.tree_pages += 1;
            let Some(kind) = self.node_kind(id, v.pid, &p) else { continue };
            self.fences(id, &v, &p);
            if kind == PageKind::Inner {
                self.push_children(&v, &p, &mut stack);
                continue;
            }
            if *leaf_depth.get_or_insert(v.depth) != v.depth {
                self.violation(
                    Some(v.pid),
                    format!("tree {id}: leaves at depths {leaf_depth:?} and {}", v.depth),
                );
            }
            let n = node::slot_count(&p);
            if let (Some(prev), true) = (&prev_key, n > 0) {
                if prev.as_slice() >= node::key(&p, 0) {
                    self.violation(
                        Some(v.pid),
                        format!("tree {id}: first key not above the previous leaf's last"),
                    );
                }
            }
            if n > 0 {
                prev_key = Some(node::key(&p, n - 1).to_vec());
            }
            if id != catalog::CATALOG_TREE_ID {
                self.report.entries += n as u64;
            }
            if let (Some(runs), false) = (&mut self.blob_runs, id == catalog::CATALOG_TREE_ID) {
                let mut bad = Vec::new();
                for i in 0..n {
                    match crate::blob::decode_stored(node::value(&p, i)) {
                        Ok(crate::blob::Stored::Blob(r)) if r.pages() > 0 => {
                            runs.push(r.page_range())
                        }
                        Ok(_) => {}
                        Err(e) => bad.push(format!("tree {id}: stored value {i}: {e}")),
                    }
                }
                for m in bad {
                    self.violation(Some(v.pid), m);
                }
            }
            if collect {
                out.extend(
                    (0..n).map(|i| (node::key(&p, i).to_vec(), node::value(&p, i).to_vec())),
                );
            }
        }
        debug_assert!(self.report.tree_pages <= self.owner.len() as u64, "a page counted twice");
        out
    }

    /// The page's kind when it is a well-formed node of tree `id`.
    fn node_kind(&mut self, id: u32, pid: PageId, p: &PageBuf) -> Option<PageKind> {
        // `tree` claimed the page for this tree before reading it.
        debug_assert_eq!(self.owner.get(pid as usize), Some(&Owner::Tree(id)), "page {pid}");
        let kind = page::kind(p);
        let Some(kind @ (PageKind::Leaf | PageKind::Inner)) = kind else {
            self.violation(Some(pid), format!("tree {id} reaches a page of kind {kind:?}"));
            return None;
        };
        if page::tree_id(p) != id {
            self.violation(
                Some(pid),
                format!("tree {id} reaches a page of tree {}", page::tree_id(p)),
            );
        }
        if page::page_id(p) != pid {
            self.violation(Some(pid), format!("header names page {}", page::page_id(p)));
        }
        // Dirty resident pages were never verified by a load: indexing needs this first.
        if let Err(e) = node::check_structure(p, kind) {
            self.violation(Some(pid), format!("malformed node: {e}"));
            return None;
        }
        Some(kind)
    }

    /// Every key within the fences its parent set (order within the node is check_structure's).
    fn fences(&mut self, id: u32, v: &Visit, p: &PageBuf) {
        // Checked only on a page `tree` claimed for this tree, so a violation names its owner.
        debug_assert_eq!(self.owner.get(v.pid as usize), Some(&Owner::Tree(id)), "{}", v.pid);
        let n = node::slot_count(p);
        for i in 0..n {
            let k = node::key(p, i);
            let below = v.lo.as_deref().is_some_and(|lo| k < lo);
            let above = v.hi.as_deref().is_some_and(|hi| k >= hi);
            if below || above {
                self.violation(
                    Some(v.pid),
                    format!("tree {id}: key {i} outside its parent's fences"),
                );
                return;
            }
        }
    }

    fn push_children(&mut self, v: &Visit, p: &PageBuf, stack: &mut Vec<Visit>) {
        let n = node::slot_count(p);
        // `tree` stops at the depth bound before it descends: children stay within it.
        debug_assert!(v.depth < DEPTH_MAX, "children pushed below the depth bound");
        // Reverse, so the leftmost child is visited first and leaves come in key order.
        for pos in (0..=n).rev() {
            let lo = if pos == 0 { v.lo.clone() } else { Some(node::key(p, pos - 1).to_vec()) };
            let hi = if pos == n { v.hi.clone() } else { Some(node::key(p, pos).to_vec()) };
            let pid = node::child_at_pos(p, pos);
            stack.push(Visit { pid, depth: v.depth + 1, lo, hi });
        }
    }

    /// The garbage tree and every detached subtree it records, each owned by the tree it was
    /// cut from until its pages are freed.
    fn garbage(&mut self, id: u32, root: PageId) {
        // The garbage tree is an engine tree of its own, never the catalog walked before it.
        debug_assert_ne!(id, catalog::CATALOG_TREE_ID, "the catalog walked as garbage");
        let runs = self.blob_runs.take();
        let entries = self.tree(id, root, true);
        self.blob_runs = runs;
        for (k, v) in entries {
            match super::garbage::decode(&k, &v) {
                Ok((pid, tree_id)) => {
                    self.tree(tree_id, pid, false);
                    // A subtree is part of a tree, not one more.
                    self.report.trees -= 1;
                }
                Err(e) => self.violation(None, format!("garbage tree: {e}")),
            }
        }
    }

    fn free_list(&mut self, head: PageId, count: u64) {
        let mut pid = head;
        let mut seen = 0u64;
        // Bounded by the recorded count (+1 to notice a longer list).
        while pid != 0 && seen <= count {
            if !self.claim(pid, Owner::FreeList) {
                return;
            }
            seen += 1;
            let Some(p) = self.read(pid) else { return };
            if page::kind(&p) != Some(PageKind::Free) {
                self.violation(Some(pid), format!("on the free list as kind {:?}", page::kind(&p)));
            }
            pid = page::aux(&p);
        }
        // The walk stops one page past the count: a longer list is reported, not walked.
        debug_assert!(seen <= count.saturating_add(1), "{seen} free pages walked of {count}");
        self.report.free_pages = seen;
        if seen != count || pid != 0 {
            self.violation(
                None,
                format!("free list holds {seen}+ pages, the allocator counts {count}"),
            );
        }
    }

    /// Claims every page of a blob or of a free blob extent.
    fn claim_run(&mut self, run: std::ops::Range<PageId>, who: Owner) {
        // Runs are the blob space's: tree and free-list pages are claimed page by page.
        debug_assert!(matches!(who, Owner::Blob | Owner::BlobFree), "a run claimed for {who:?}");
        // Bounded by the run, itself bounded by the page ids (claim refuses the rest).
        for pid in run {
            if !self.claim(pid, who) {
                break;
            }
        }
    }

    fn leaks(&mut self) {
        // The scan below starts at page 1: page 0 must be the superblock's already.
        debug_assert!(self.owner.first().is_none_or(|o| *o == Owner::Superblock));
        let leaked: Vec<PageId> = (1..self.owner.len() as u64)
            .filter(|pid| self.owner[*pid as usize] == Owner::None)
            .collect();
        for pid in leaked.iter().take(LEAKS_LISTED_MAX as usize) {
            self.violation(Some(*pid), "leaked: in no tree and not on the free list".into());
        }
        if leaked.len() as u64 > LEAKS_LISTED_MAX {
            self.violation(None, format!("{} leaked pages in all", leaked.len()));
        }
    }
}

impl Walk<'_> {
    /// Walks every tree the catalog lists (the catalog itself first) and checks each against
    /// its open handle; returns the tree ids listed, by name.
    fn catalog_trees(&mut self, trees: &OpenTrees) -> HashMap<u32, String> {
        let inner = self.inner;
        let entries = self.tree(catalog::CATALOG_TREE_ID, inner.catalog.root, true);
        let mut listed: HashMap<u32, String> = HashMap::new();
        for (name, value) in entries {
            let name = String::from_utf8_lossy(&name).into_owned();
            let Ok((id, root)) = catalog::decode(&value) else {
                self.violation(None, format!("catalog entry {name:?} does not decode"));
                continue;
            };
            if let Some(other) = listed.insert(id, name.clone()) {
                self.violation(None, format!("trees {other:?} and {name:?} share id {id}"));
                continue;
            }
            let blob_tree = inner.blobs.get().filter(|_| name == crate::blob::FREE_TREE_NAME);
            if let Some(b) = blob_tree {
                self.blob_free_tree(b, id, root);
                continue;
            }
            if name == super::garbage::GARBAGE_TREE_NAME {
                self.garbage(id, root);
            }
            match trees.get(&name) {
                Some(core) if core.id == id && core.root == root => {}
                Some(core) => self.violation(
                    None,
                    format!(
                        "tree {name:?}: catalog says id {id} root {root}, open handle {} root {}",
                        core.id, core.root
                    ),
                ),
                None => self.violation(None, format!("catalog tree {name:?} is not loaded")),
            }
            if name != super::garbage::GARBAGE_TREE_NAME {
                self.tree(id, root, false);
            }
        }
        // Each tree listed walked once (a garbage subtree counts as part of its tree), and the
        // catalog itself: the report's count is the catalog's.
        debug_assert_eq!(self.report.trees, listed.len() as u64 + 1);
        listed
    }

    /// The blob space's free-extent tree (catalog id `id`, root `root`): its entries against
    /// what its last fold wrote, and the free extents claimed.
    fn blob_free_tree(&mut self, b: &BlobState, id: u32, root: PageId) {
        // Only a database with blobs has this tree, and its walk keeps their runs.
        debug_assert!(self.blob_runs.is_some(), "a free-extent tree without blob runs");
        if b.tree.id != id || b.tree.root != root {
            self.violation(None, format!("blob free-extent tree: catalog id {id} root {root}"));
        }
        // Its values are extent lengths, not stored values.
        let runs = self.blob_runs.take();
        let extents = self.tree(id, root, true);
        self.blob_runs = runs;
        let mut entries = std::collections::BTreeMap::new();
        for (k, v) in extents {
            match crate::blob::decode_extent(&k, &v) {
                Some((start, len)) => {
                    entries.insert(start, len);
                }
                None => self.violation(None, "blob free-extent entry does not decode".into()),
            }
        }
        // The tree lags the free extents by the changes since its last fold.
        let space = b.lock_space();
        if !space.tree_matches(&entries) {
            self.violation(
                None,
                "blob free-extent tree differs from what its last fold wrote".into(),
            );
        }
        let free: Vec<_> = space.free_extents().collect();
        drop(space);
        for run in free {
            self.claim_run(run, Owner::BlobFree);
        }
    }
}

/// The open trees by name, as `Db::check` holds them.
type OpenTrees = HashMap<String, std::sync::Arc<crate::btree::TreeCore>>;

impl DbInner {
    /// See [`crate::Db::check`]. The caller holds writers off.
    pub(super) fn check_quiesced(&self, trees: &OpenTrees) -> Result<CheckReport> {
        let alloc = self.alloc.state();
        let hw = alloc.high_water.min(self.pool.page_capacity());
        let mut walk = Walk {
            inner: self,
            owner: vec![Owner::None; hw as usize],
            report: CheckReport { high_water_pages: alloc.high_water, ..CheckReport::default() },
            blob_runs: self.blobs.get().map(|_| Vec::new()),
        };
        if alloc.high_water > self.pool.page_capacity() {
            walk.violation(
                None,
                format!("high water {} beyond the page capacity", alloc.high_water),
            );
        }
        if hw > 0 {
            walk.owner[0] = Owner::Superblock;
        }
        let listed = walk.catalog_trees(trees);
        if let Some(runs) = walk.blob_runs.take() {
            for run in runs {
                walk.claim_run(run, Owner::Blob);
            }
        }
        let system_trees = usize::from(self.blobs.get().is_some());
        if trees.len() + system_trees != listed.len() {
            walk.violation(
                None,
                format!("{} trees loaded, {} in the catalog", trees.len(), listed.len()),
            );
        }
        walk.free_list(alloc.free_head, alloc.free_count);
        walk.leaks();
        for message in self.pool.store().check_space() {
            walk.violation(None, format!("page store: {message}"));
        }
        if self.poisoned.load(Ordering::Relaxed) {
            walk.violation(None, "database is poisoned by an earlier error".into());
        }
        // One owner slot per page below the high water the store holds, walked or leaked.
        debug_assert_eq!(walk.owner.len() as u64, hw);
        Ok(walk.report)
    }
}
