//! Page allocation: a high-water mark plus a free list linked through the free pages themselves
//! (each free page's `aux` names the next). Head, count and high-water mark live in the
//! superblock, so the free list survives close and reopen.
//!
//! Structure changes reserve their worst-case page need up front, so a full device fails the
//! operation cleanly before it changes anything instead of half way through a split.
use crate::buffer::{BufferPool, PageMut};
use crate::page::{self, PageChange, PageId, PageKind, PageLogger};
use crate::{Error, Result};
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
}

#[derive(Debug)]
pub struct Allocator {
    inner: Mutex<Inner>,
    page_capacity: u64,
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
        Allocator { inner: Mutex::new(Inner { s: state, reserved: 0 }), page_capacity }
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn state(&self) -> AllocState {
        self.lock().s
    }
    /// Pages in use (meta page included).
    pub fn allocated_pages(&self) -> u64 {
        let s = self.state();
        s.high_water - s.free_count
    }
    fn available(&self, g: &Inner) -> u64 {
        g.s.free_count + (self.page_capacity - g.s.high_water) - g.reserved
    }

    pub fn reserve(&self, pages: u64) -> Result<Reservation<'_>> {
        let mut g = self.lock();
        let available = self.available(&g);
        if available < pages {
            return Err(Error::OutOfSpace(format!(
                "device full: {pages} pages needed, {available} free of {}",
                self.page_capacity
            )));
        }
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
            st.s.free_head = page::aux(g.bytes());
            st.s.free_count -= 1;
            g
        } else {
            assert!(st.s.high_water < self.page_capacity, "reservation guarantees a page");
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
        let left = self.page_capacity - st.s.high_water;
        let pages = pages.max(want.min(left.saturating_sub(st.reserved) / 16));
        if left.saturating_sub(st.reserved) < pages {
            return Err(Error::OutOfSpace(format!(
                "blob space: {pages} contiguous page ids needed, {} left above the high water",
                left.saturating_sub(st.reserved)
            )));
        }
        let start = st.s.high_water;
        st.s.high_water += pages;
        assert!(st.s.high_water <= self.page_capacity);
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
        assert!(pid != 0 && pid < st.s.high_water);
        page::format(g.bytes_mut(), pid, PageKind::Free, 0, st.s.free_head);
        st.s.free_head = pid;
        st.s.free_count += 1;
        drop(st);
        stamp_image(logger, &mut g);
    }
}
