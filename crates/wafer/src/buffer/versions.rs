//! Page versions kept for snapshots. A snapshot is an epoch; while one lives, the first
//! exclusive latch of a page after the newest live epoch began saves the page's bytes, tagged
//! with that epoch, before any change. A snapshot at epoch `s` reads a page as the saved
//! version with the smallest tag `>= s`, or as the page is when none exists: a version tagged
//! `t` holds the page as it was when epoch `t` began, and no change happened between `s` and
//! `t` began unless a version with a smaller tag holds it.
//!
//! The saved bytes are bounded (`Options::snapshot_bytes_max`): a write that would go past the
//! bound expires the oldest snapshots first, whose reads then fail with
//! [`crate::Error::SnapshotExpired`]; writers never wait for or fail because of a snapshot.
//! Versions no live snapshot reads are dropped when a snapshot ends or expires.
use crate::page::{PageBuf, PageId, PAGE_SIZE};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// What the saved versions cost, for `DbStats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SnapshotStats {
    /// Snapshots alive now.
    pub live: u64,
    /// Page versions kept for them, and their bytes.
    pub pages_kept: u64,
    pub bytes_kept: u64,
    /// Snapshots expired because the kept versions reached the bound.
    pub expired: u64,
}

#[derive(Debug, Default)]
struct Inner {
    /// Live epochs, each with its count of snapshots.
    live: BTreeMap<u64, u64>,
    /// Per page, its saved versions by increasing tag.
    pages: HashMap<PageId, Vec<(u64, Arc<PageBuf>)>>,
    kept_pages: u64,
    /// Epochs below this are expired.
    expired_below: u64,
    expired: u64,
}

#[derive(Debug)]
pub struct PageVersions {
    inner: Mutex<Inner>,
    /// The newest live epoch (0: none, the writers' fast path).
    newest: AtomicU64,
    /// The last epoch handed out.
    last_epoch: AtomicU64,
    bytes_max: u64,
}

impl PageVersions {
    pub fn new(bytes_max: u64) -> PageVersions {
        let versions = PageVersions {
            inner: Mutex::default(),
            newest: AtomicU64::new(0),
            last_epoch: AtomicU64::new(0),
            bytes_max,
        };
        // The writers' fast path reads `newest == 0` as "no snapshot": a new pool starts
        // with none live and none expired.
        let g = versions.lock();
        debug_assert!(g.live.is_empty() && g.kept_pages == 0, "{g:?}");
        drop(g);
        versions
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        // Every holder leaves the live epochs unexpired (`expire_oldest` moves the mark past
        // what it removes): a live one below it would read versions already pruned.
        debug_assert!(g.live.keys().next().is_none_or(|&e| e >= g.expired_below), "{g:?}");
        g
    }

    /// Starts a snapshot: its epoch. The caller holds every writer off, so the pages are
    /// exactly as the last commit left them.
    pub fn begin(&self) -> u64 {
        let mut g = self.lock();
        let epoch = self.last_epoch.fetch_add(1, Ordering::Relaxed) + 1;
        *g.live.entry(epoch).or_insert(0) += 1;
        self.newest.store(epoch, Ordering::Release);
        assert!(epoch >= g.expired_below, "a new epoch is never expired");
        epoch
    }

    /// Ends a snapshot at `epoch` (expired or not), dropping what only it read.
    pub fn end(&self, epoch: u64) {
        let mut g = self.lock();
        // An epoch `begin` handed out, still live or expired since.
        debug_assert!(epoch > 0 && epoch <= self.last_epoch.load(Ordering::Relaxed));
        debug_assert!(g.live.contains_key(&epoch) || epoch < g.expired_below, "epoch {epoch}");
        if let Some(n) = g.live.get_mut(&epoch) {
            *n -= 1;
            if *n == 0 {
                g.live.remove(&epoch);
            }
        }
        self.newest.store(g.live.keys().next_back().copied().unwrap_or(0), Ordering::Release);
        prune(&mut g);
    }

    pub fn is_expired(&self, epoch: u64) -> bool {
        // An epoch `begin` handed out: 0 is no snapshot's, and a later one is no snapshot yet.
        debug_assert!(epoch > 0 && epoch <= self.last_epoch.load(Ordering::Relaxed), "{epoch}");
        epoch < self.lock().expired_below
    }

    /// Called with page `pid` latched exclusive, before any change to `bytes`.
    pub fn before_write(&self, pid: PageId, bytes: &PageBuf) {
        if self.newest.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut g = self.lock();
        // Read again under the lock: the last snapshot may have ended since the fast check,
        // and a version saved for it then would be kept for nobody.
        let Some(&newest) = g.live.keys().next_back() else { return };
        let saved = g.pages.get(&pid).and_then(|v| v.last()).is_some_and(|(t, _)| *t >= newest);
        if saved {
            return;
        }
        if (g.kept_pages + 1) * PAGE_SIZE as u64 > self.bytes_max {
            self.expire_oldest(&mut g);
            if g.live.is_empty() {
                return; // Every snapshot expired: nothing reads this version.
            }
        }
        let copy = Arc::new(*bytes);
        let tag = *g.live.keys().next_back().unwrap_or(&newest);
        assert!(tag <= newest, "the newest epoch only grows under the lock");
        g.pages.entry(pid).or_default().push((tag, copy));
        g.kept_pages += 1;
    }

    /// Expires the oldest live snapshots until the bound has room for a page (all of them if
    /// need be).
    fn expire_oldest(&self, g: &mut Inner) {
        let count = g.live.len();
        for _ in 0..count {
            let Some((&oldest, _)) = g.live.iter().next() else { break };
            g.live.remove(&oldest);
            g.expired_below = g.expired_below.max(oldest + 1);
            g.expired += 1;
            prune(g);
            if (g.kept_pages + 1) * PAGE_SIZE as u64 <= self.bytes_max {
                break;
            }
        }
        // Room for one more page, or no snapshot left to keep versions for.
        let room = (g.kept_pages + 1) * PAGE_SIZE as u64 <= self.bytes_max;
        debug_assert!(room || (g.live.is_empty() && g.kept_pages == 0));
        self.newest.store(g.live.keys().next_back().copied().unwrap_or(0), Ordering::Release);
    }

    /// Page `pid` as epoch `epoch` saw it, if a version was saved since; None: as it is now.
    /// The caller holds the page latched (shared), so no writer saves a version meanwhile.
    pub fn find(&self, pid: PageId, epoch: u64) -> Option<Arc<PageBuf>> {
        let g = self.lock();
        let versions = g.pages.get(&pid)?;
        // Saved in epoch order (`before_write` saves only past the last tag): the first at or
        // after `epoch` is what it saw.
        debug_assert!(versions.windows(2).all(|w| w[0].0 < w[1].0), "page {pid}");
        versions.iter().find(|(t, _)| *t >= epoch).map(|(_, p)| p.clone())
    }

    pub fn stats(&self) -> SnapshotStats {
        let g = self.lock();
        // `end` removes an epoch with its last snapshot: a live epoch counts at least one.
        debug_assert!(g.live.values().all(|&n| n > 0), "{:?}", g.live);
        SnapshotStats {
            live: g.live.values().sum(),
            pages_kept: g.kept_pages,
            bytes_kept: g.kept_pages * PAGE_SIZE as u64,
            expired: g.expired,
        }
    }
}

/// Drops every version no live epoch reads: a version tagged `t` after one tagged `p` is read
/// by the live epochs in `p+1..=t` (the first by those in `1..=t`).
fn prune(g: &mut Inner) {
    let live: Vec<u64> = g.live.keys().copied().collect();
    let mut dropped = 0u64;
    g.pages.retain(|_, versions| {
        let mut prev = 0u64;
        versions.retain(|(t, _)| {
            let lo = prev;
            prev = *t;
            let read = live.iter().any(|s| *s > lo && *s <= *t);
            dropped += u64::from(!read);
            read
        });
        !versions.is_empty()
    });
    assert!(dropped <= g.kept_pages, "dropped more versions than kept");
    g.kept_pages -= dropped;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(fill: u8) -> PageBuf {
        [fill; PAGE_SIZE]
    }

    #[test]
    fn a_snapshot_reads_the_page_as_it_was_when_it_began() {
        let v = PageVersions::new(1 << 20);
        v.before_write(1, &page(1)); // No snapshot: nothing kept.
        assert_eq!(v.stats().pages_kept, 0);
        let s1 = v.begin();
        v.before_write(1, &page(1)); // First change after s1: keeps 1.
        v.before_write(1, &page(2)); // Second: already kept.
        let s2 = v.begin();
        v.before_write(1, &page(3)); // First after s2: keeps 3 (the page when s2 began).
        assert_eq!(v.find(1, s1).map(|p| p[0]), Some(1));
        assert_eq!(v.find(1, s2).map(|p| p[0]), Some(3));
        assert_eq!(v.find(2, s1), None, "an unchanged page is read as it is");
        v.end(s1);
        assert_eq!(v.stats().pages_kept, 1, "only s2's version stays");
        assert_eq!(v.find(1, s2).map(|p| p[0]), Some(3));
        v.end(s2);
        assert_eq!(v.stats(), SnapshotStats { live: 0, pages_kept: 0, bytes_kept: 0, expired: 0 });
        v.before_write(1, &page(4));
        assert_eq!(v.stats().pages_kept, 0);
    }

    #[test]
    fn the_bound_expires_the_oldest_snapshot_first() {
        let v = PageVersions::new(3 * PAGE_SIZE as u64);
        let old = v.begin();
        v.before_write(1, &page(1));
        v.before_write(2, &page(1));
        let new = v.begin();
        v.before_write(3, &page(1));
        // A fourth page is over the bound: the old snapshot goes, and what only it read.
        v.before_write(4, &page(1));
        assert!(v.is_expired(old) && !v.is_expired(new));
        let s = v.stats();
        assert_eq!((s.live, s.pages_kept, s.expired), (1, 2, 1));
        assert!(v.find(1, new).is_none() && v.find(3, new).is_some());
        v.end(old); // Dropping an expired snapshot is harmless.
        assert_eq!(v.stats().live, 1);
    }
}
