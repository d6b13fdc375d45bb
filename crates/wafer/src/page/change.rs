//! The logging seam. Every page modification is one of a few deterministic page-level operations;
//! after applying it, the caller hands it to a [`PageLogger`] and stamps the returned LSN into the
//! page header. A WAL implements the logger; redo replays a record on a page only when
//! `page_lsn < record_lsn` (ARIES-style physiological redo).
use super::{Lsn, PageId};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, Copy)]
pub enum PageChange<'a> {
    /// `node::leaf_put(page, key, value)` on a leaf of `tree_id`.
    LeafPut { tree_id: u32, key: &'a [u8], value: &'a [u8] },
    /// `node::leaf_delete(page, key)` on a leaf of `tree_id`.
    LeafDelete { tree_id: u32, key: &'a [u8] },
    /// The whole page after the change (splits, merges, root changes, frees, catalog updates).
    /// The header's LSN and checksum fields are not meaningful in the image.
    Image { page: &'a [u8] },
    /// A node of `tree_id` rebuilt from its own entries: each of `insert` put in (replacing an
    /// equal key), then the first `keep` entries kept and laid out by `node::build`. What a
    /// split leaves in the page that stays (its left part) and a parent that takes a separator
    /// without splitting: a few bytes in the log instead of a page image.
    NodeRebuild { tree_id: u32, insert: &'a [super::node::Entry], keep: usize },
}

/// Receives every page modification, in per-page order (called under the page's exclusive latch).
pub trait PageLogger: Send + Sync + std::fmt::Debug {
    /// Logs `change` to page `pid` and returns its LSN; LSNs returned for one page increase.
    fn log(&self, pid: PageId, change: &PageChange<'_>) -> Lsn;
    /// The highest LSN handed out so far (persisted in the superblock at close).
    fn last_lsn(&self) -> Lsn;
    /// The write-ahead rule: the buffer pool calls this before writing back pages whose
    /// `page_lsn <= lsn`, and writes nothing until it returns Ok (the log is durable to `lsn`).
    fn make_durable(&self, _lsn: Lsn) -> crate::Result<()> {
        Ok(())
    }
    /// Pages whose `page_lsn` is above this hold changes of a batch still being applied and
    /// must not be written back yet (the pool skips them). No limit by default.
    fn write_back_limit(&self) -> Lsn {
        Lsn::MAX
    }
    /// DB GC runs under the store's writer lock, where it must not make the log durable when
    /// a log flush may itself need the store (out-of-line values: `crate::blob`). Then this is
    /// Some(limit): GC copies dirty versions up to `limit` (already durable) without asking
    /// for durability, and reads the device version of the rest. None: `make_durable` as usual.
    fn gc_durable_limit(&self) -> Option<Lsn> {
        None
    }
}

/// Logs nothing; hands out increasing LSNs from a counter (no durability beyond `close()`).
#[derive(Debug)]
pub struct NoopLogger {
    next: AtomicU64,
}

impl NoopLogger {
    /// Starts after `last_lsn` so LSNs keep increasing across reopen.
    pub fn new(last_lsn: Lsn) -> NoopLogger {
        NoopLogger { next: AtomicU64::new(last_lsn + 1) }
    }
}

impl PageLogger for NoopLogger {
    fn log(&self, _pid: PageId, _change: &PageChange<'_>) -> Lsn {
        self.next.fetch_add(1, Ordering::Relaxed)
    }
    fn last_lsn(&self) -> Lsn {
        self.next.load(Ordering::Relaxed) - 1
    }
}

/// Redo: applies `change` (logged at `lsn`) to page `pid` if the page does not already contain
/// it (`page_lsn < lsn`), then stamps `lsn`. Returns whether it applied. A leaf operation that
/// no longer fits means the page and the log disagree: reported as corruption, never a panic.
pub fn redo(
    page: &mut super::PageBuf,
    pid: PageId,
    change: &PageChange<'_>,
    lsn: Lsn,
) -> crate::Result<bool> {
    use super::{node, PageKind, PAGE_SIZE};
    if super::lsn(page) >= lsn {
        return Ok(false);
    }
    let corrupt = |reason: String| crate::Error::CorruptPage { page_id: pid, reason };
    match change {
        PageChange::Image { page: image } => {
            if image.len() != PAGE_SIZE {
                return Err(corrupt(format!("page image of {} bytes", image.len())));
            }
            page.copy_from_slice(image);
        }
        PageChange::LeafPut { key, value, .. } => {
            if super::kind(page) != Some(PageKind::Leaf)
                || key.len() > node::MAX_KEY_BYTES
                || value.len() > node::MAX_VALUE_BYTES
            {
                return Err(corrupt("leaf put redone on a non-leaf or with oversize entry".into()));
            }
            if !node::leaf_put(page, key, value) {
                return Err(corrupt(format!("redo of leaf put at LSN {lsn} does not fit")));
            }
        }
        PageChange::LeafDelete { key, .. } => {
            if super::kind(page) != Some(PageKind::Leaf) {
                return Err(corrupt("leaf delete redone on a non-leaf".into()));
            }
            node::leaf_delete(page, key);
        }
        PageChange::NodeRebuild { insert, keep, .. } => {
            rebuild(page, insert, *keep).map_err(|e| corrupt(e.to_string()))?;
        }
    }
    super::set_lsn(page, lsn);
    Ok(true)
}

/// `PageChange::NodeRebuild` on `page` (live and in redo alike); Err when the page and the
/// change disagree (not a node, `keep` beyond the entries, the result does not fit).
/// Why a node could not be rebuilt with the entries asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RebuildError {
    #[error("node rebuild on a page that is no node")]
    NotANode,
    #[error("node rebuild keeps {keep} of {entries} entries")]
    KeepsMore { keep: usize, entries: usize },
    #[error("node rebuild of {bytes} bytes does not fit or names no child")]
    DoesNotFit { bytes: usize },
}

pub fn rebuild(
    page: &mut super::PageBuf,
    insert: &[super::node::Entry],
    keep: usize,
) -> Result<(), RebuildError> {
    use super::{node, PageKind};
    let kind = super::kind(page);
    if !matches!(kind, Some(PageKind::Leaf) | Some(PageKind::Inner)) {
        return Err(RebuildError::NotANode);
    }
    let kind = kind.unwrap_or(PageKind::Leaf);
    let mut entries = node::entries(page);
    for (k, v) in insert {
        match entries.binary_search_by(|(e, _)| e.as_slice().cmp(k)) {
            Ok(i) => entries[i].1.clone_from(v),
            Err(i) => entries.insert(i, (k.clone(), v.clone())),
        }
    }
    if keep > entries.len() {
        return Err(RebuildError::KeepsMore { keep, entries: entries.len() });
    }
    entries.truncate(keep);
    let bytes: usize = entries.iter().map(|(k, v)| node::entry_bytes(kind, k.len(), v.len())).sum();
    let inner_child_ok = kind == PageKind::Leaf || entries.iter().all(|(_, v)| v.len() == 8);
    if bytes > node::USABLE_BYTES || !inner_child_ok {
        return Err(RebuildError::DoesNotFit { bytes });
    }
    node::build(page, &entries);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::{format, node, PageKind, PAGE_SIZE};

    #[test]
    fn redo_replays_a_logged_history_and_skips_applied_records() {
        let mut live = Box::new([0u8; PAGE_SIZE]);
        format(&mut live, 5, PageKind::Leaf, 1, 0);
        let start = live.clone();
        let mut log: Vec<(Lsn, Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        let mut x = 12345u64;
        for lsn in 1..=3000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = format!("k{}", (x >> 33) % 150).into_bytes();
            if x.is_multiple_of(4) {
                node::leaf_delete(&mut live, &k);
                log.push((lsn, k, None));
            } else {
                let v = vec![lsn as u8; ((x >> 20) % 30) as usize];
                if !node::leaf_put(&mut live, &k, &v) {
                    continue;
                }
                log.push((lsn, k, Some(v)));
            }
            crate::page::set_lsn(&mut live, lsn);
        }
        let mut replay = start;
        for pass in 0..2 {
            for (lsn, k, v) in &log {
                let change = match v {
                    Some(v) => PageChange::LeafPut { tree_id: 1, key: k, value: v },
                    None => PageChange::LeafDelete { tree_id: 1, key: k },
                };
                assert_eq!(redo(&mut replay, 5, &change, *lsn).unwrap(), pass == 0);
            }
        }
        assert_eq!(node::entries(&replay), node::entries(&live));
        assert_eq!(crate::page::lsn(&replay), crate::page::lsn(&live));
    }
}
