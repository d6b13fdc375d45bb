//! Page allocation: a high-water mark plus a free list linked through the free pages themselves
//! (each free page's `aux` names the next). Head, count and high-water mark live in the
//! superblock, so the free list survives close and reopen.
//!
//! Structure changes reserve their worst-case page need up front, so a full device fails the
//! operation cleanly before it changes anything instead of half way through a split.
//!
//! A reservation the page ids cannot cover grows the store first, when the allocator was given
//! room to grow ([`Allocator::with_growth`]): [`growth_target_pages`] decides how far, the
//! buffer pool carries it out (store, then page table), and only then does the high-water
//! mark pass the old end. A reservation that growth cannot cover fails as before.
use crate::buffer::{BufferPool, PageMut};
use crate::page::{self, PageChange, PageId, PageKind, PageLogger};
use crate::{Error, OutOfSpaceError, Result};
use std::sync::Arc;
use std::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocState {
    pub high_water: PageId,
    pub free_head: PageId,
    pub free_count: u64,
}

#[derive(Debug)]
struct Inner {
    s: AllocState,
    reserved: u64,
    /// Page ids `0..page_capacity` exist; raised only by a growth that completed.
    page_capacity: u64,
}

/// Where growth goes: the pool that grows the store, and the most page ids it may reach.
#[derive(Debug)]
struct Growth {
    pool: Arc<BufferPool>,
    max_pages: u64,
}

#[derive(Debug)]
pub struct Allocator {
    inner: Mutex<Inner>,
    growth: Option<Growth>,
}

/// The smallest growth worth a file extension and its sync: 1 MiB of pages.
const GROWTH_PAGES_MIN: u64 = 256;

/// How far to grow a store of `capacity` pages that needs `needed`: by a quarter of its size
/// (so a store grown 20x took about 14 steps, and the syncs they cost stay a vanishing share
/// of the writes), at least `needed` and [`GROWTH_PAGES_MIN`] more, at most `max`. None when
/// `max` cannot cover `needed`.
pub fn growth_target_pages(capacity: u64, needed: u64, max: u64) -> Option<u64> {
    if needed > max {
        return None;
    }
    let step = (capacity / 4).max(GROWTH_PAGES_MIN);
    Some(needed.max(capacity.saturating_add(step)).min(max))
}

/// Pages promised to one structure change; unused ones go back on drop.
#[derive(Debug)]
pub struct Reservation<'a> {
    alloc: &'a Allocator,
    remaining: std::cell::Cell<u64>,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut g = self.alloc.lock();
        g.reserved -= self.remaining.get();
    }
}

/// Writes the change's LSN into the page: the one place pages get stamped.
pub fn stamp(logger: &dyn PageLogger, g: &mut PageMut<'_>, change: &PageChange<'_>) {
    let lsn = logger.log(g.pid(), change);
    page::set_lsn(g.bytes_mut(), lsn);
}

/// Logs the page's full image and stamps the LSN.
pub fn stamp_image(logger: &dyn PageLogger, g: &mut PageMut<'_>) {
    let lsn = logger.log(g.pid(), &PageChange::Image { page: &g.bytes()[..] });
    page::set_lsn(g.bytes_mut(), lsn);
}

impl Allocator {
    pub fn new(state: AllocState, page_capacity: u64) -> Allocator {
        assert!(state.high_water <= page_capacity);
        let inner = Inner { s: state, reserved: 0, page_capacity };
        Allocator { inner: Mutex::new(inner), growth: None }
    }

    /// Lets a reservation grow `pool`'s store up to `max_pages` page ids.
    pub fn with_growth(mut self, pool: Arc<BufferPool>, max_pages: u64) -> Allocator {
        assert_eq!(
            pool.page_capacity(),
            self.lock().page_capacity,
            "the pool this allocator serves"
        );
        self.growth = Some(Growth { pool, max_pages });
        self
    }

    /// Makes `pages` more page ids available than are now, growing the store (under the
    /// allocator's lock, so no allocation sees the ids before they exist). Errors when the
    /// allocator may not grow or the store refuses; nothing changed then.
    fn grow(&self, g: &mut Inner, pages: u64) -> Result<()> {
        let Some(growth) = &self.growth else {
            return Err(OutOfSpaceError::NoGrowth.into());
        };
        let needed = g.page_capacity.saturating_add(pages);
        let Some(target) = growth_target_pages(g.page_capacity, needed, growth.max_pages) else {
            let max_pages = growth.max_pages;
            return Err(OutOfSpaceError::FileLimit { needed_pages: needed, max_pages }.into());
        };
        let grown = growth.pool.grow_to(target)?;
        assert!(grown >= needed && grown >= g.page_capacity);
        g.page_capacity = grown;
        tracing::info!(pages = grown, "data file grown");
        Ok(())
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn state(&self) -> AllocState {
        self.lock().s
    }
    fn available(g: &Inner) -> u64 {
        g.s.free_count + (g.page_capacity - g.s.high_water) - g.reserved
    }

    pub fn reserve(&self, pages: u64) -> Result<Reservation<'_>> {
        let mut g = self.lock();
        let available = Self::available(&g);
        if available < pages {
            self.grow(&mut g, pages - available).map_err(|e| match e {
                Error::OutOfSpace(why) => Error::OutOfSpace(OutOfSpaceError::DeviceFull {
                    needed_pages: pages,
                    free_pages: available,
                    capacity_pages: g.page_capacity,
                    cause: Box::new(why),
                }),
                other => other,
            })?;
        }
        assert!(Self::available(&g) >= pages);
        g.reserved += pages;
        Ok(Reservation { alloc: self, remaining: std::cell::Cell::new(pages) })
    }

    /// A formatted, empty page (not yet logged: the caller fills it and logs its image).
    pub fn allocate<'p>(
        &self,
        pool: &'p BufferPool,
        r: &Reservation<'_>,
        kind: PageKind,
        tree_id: u32,
    ) -> Result<PageMut<'p>> {
        assert!(std::ptr::eq(r.alloc, self));
        let left = r.remaining.get();
        assert!(left > 0, "allocation beyond the reservation");
        let mut st = self.lock();
        let mut g = if st.s.free_head != 0 {
            let pid = st.s.free_head;
            let g = pool.write(pid)?;
            if page::kind(g.bytes()) != Some(PageKind::Free) {
                return Err(Error::CorruptPage {
                    page_id: pid,
                    reason: "free-list page is not marked free".into(),
                });
            }
            // The next link is on-disk bytes: checked as `free` wrote it (an allocated id).
            let next = page::aux(g.bytes());
            if next >= st.s.high_water || st.s.free_count == 0 {
                return Err(Error::CorruptPage {
                    page_id: pid,
                    reason: format!("free-list link to page {next} past the high water mark"),
                });
            }
            st.s.free_head = next;
            st.s.free_count -= 1;
            g
        } else {
            assert!(st.s.high_water < st.page_capacity, "reservation guarantees a page");
            let g = pool.create(st.s.high_water)?;
            st.s.high_water += 1;
            g
        };
        st.reserved -= 1;
        r.remaining.set(left - 1);
        drop(st);
        let pid = g.pid();
        page::format(g.bytes_mut(), pid, kind, tree_id, 0);
        Ok(g)
    }

    /// A fresh page outside any reservation (database creation).
    pub fn allocate_one<'p>(
        &self,
        pool: &'p BufferPool,
        kind: PageKind,
        tree_id: u32,
    ) -> Result<PageMut<'p>> {
        let r = self.reserve(1)?;
        self.allocate(pool, &r, kind, tree_id)
    }

    /// Takes never-allocated page ids from the high-water mark, with no frame and no
    /// image: the blob space owns them from here on (`crate::blob`). Covered, as every
    /// allocation, by the commit record's allocator state.
    /// Takes `pages` ids, or up to `want` when a sixteenth of what is left allows (so a
    /// small device keeps room for tree pages).
    pub fn take_high_water_run(&self, pages: u64, want: u64) -> Result<std::ops::Range<PageId>> {
        let mut st = self.lock();
        let left = st.page_capacity - st.s.high_water;
        if left.saturating_sub(st.reserved) < pages {
            // Blob runs grow the store as tree pages do; a failed growth is reported below.
            let short = pages - left.saturating_sub(st.reserved);
            match self.grow(&mut st, short) {
                Ok(()) | Err(Error::OutOfSpace(_)) => {}
                Err(e) => return Err(e),
            }
        }
        let left = st.page_capacity - st.s.high_water;
        let pages = pages.max(want.min(left.saturating_sub(st.reserved) / 16));
        if left.saturating_sub(st.reserved) < pages {
            let left_pages = left.saturating_sub(st.reserved);
            return Err(OutOfSpaceError::BlobPageIds { needed_pages: pages, left_pages }.into());
        }
        let start = st.s.high_water;
        st.s.high_water += pages;
        assert!(st.s.high_water <= st.page_capacity);
        Ok(start..start + pages)
    }

    /// Gives the ids `start..high_water` back to the never-allocated range (the blob space
    /// held them free); covered by the commit record's allocator state like any allocation.
    pub fn lower_high_water(&self, start: PageId) {
        let mut st = self.lock();
        assert!(start >= 1 && start <= st.s.high_water, "lowering to {start}");
        st.s.high_water = start;
    }

    /// Puts the page on the free list; the image is logged so redo can rebuild the list.
    pub fn free(&self, logger: &dyn PageLogger, mut g: PageMut<'_>) {
        let pid = g.pid();
        let mut st = self.lock();
        // Paired with `allocate`'s check of each link: only allocated ids enter the list.
        assert!(pid != 0 && pid < st.s.high_water && st.s.free_head < st.s.high_water);
        page::format(g.bytes_mut(), pid, PageKind::Free, 0, st.s.free_head);
        st.s.free_head = pid;
        st.s.free_count += 1;
        drop(st);
        stamp_image(logger, &mut g);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_steps_by_a_quarter_within_the_limit() {
        // A quarter of the size, at least 1 MiB of pages, at least what is needed.
        assert_eq!(growth_target_pages(4096, 4097, u64::MAX), Some(5120));
        assert_eq!(growth_target_pages(64, 65, u64::MAX), Some(64 + GROWTH_PAGES_MIN));
        assert_eq!(growth_target_pages(4096, 9000, u64::MAX), Some(9000));
        // Capped at the limit, refused past it.
        assert_eq!(growth_target_pages(4096, 4100, 4200), Some(4200));
        assert_eq!(growth_target_pages(4096, 4300, 4200), None);
        // Twentyfold growth takes a bounded number of steps.
        let (mut pages, mut steps) = (1024u64, 0);
        while pages < 20 * 1024 {
            pages = growth_target_pages(pages, pages + 1, u64::MAX).unwrap();
            steps += 1;
        }
        assert!(steps <= 14, "{steps} steps");
    }
}
