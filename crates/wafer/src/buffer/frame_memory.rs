//! The frames' page bytes: one anonymous private mapping. The kernel backs a frame with memory
//! when it is first touched, so a pool larger than the pages it holds costs only the frames it
//! used, and what the rest of the budget leaves is memory the engine may give another cache
//! (blob pages, `BufferPool::untouched_bytes`). Zero-filled by the kernel, as a fresh page must
//! be.
use crate::page::{PageBuf, PAGE_SIZE};
use std::cell::UnsafeCell;
use std::ptr::NonNull;

/// One frame's page bytes, 4 KiB-aligned so O_DIRECT devices can use them without a bounce
/// copy. All frames' pages are one array, so a page's address is computed from its frame index
/// (no pointer to load on a lookup).
#[derive(Debug)]
#[repr(C, align(4096))]
pub(super) struct PageCell(pub(super) UnsafeCell<PageBuf>);
const _: () = assert!(std::mem::size_of::<PageCell>() == PAGE_SIZE);
const _: () = assert!(std::mem::align_of::<PageCell>() == PAGE_SIZE);

// SAFETY: a frame's bytes are shared under its latch: `&PageBuf` only while the frame's latch
// is held shared or exclusive (`PageRef`, `FrameMut::bytes`), `&mut PageBuf` only while it is
// held exclusive (`FrameMut::bytes_mut`). Optimistic readers take no latch and read the bytes
// only through `RacyPage` (raw, clamped reads validated against the page's version afterwards).
unsafe impl Sync for PageCell {}

pub(super) struct FrameMemory {
    cells: NonNull<PageCell>,
    count: usize,
}

// SAFETY: the mapping is owned by this value alone and freed only in `drop`; sharing the cells
// between threads is governed by `PageCell`'s own `Sync` (the frame latches).
unsafe impl Send for FrameMemory {}
// SAFETY: as above; `&FrameMemory` hands out only `&[PageCell]`.
unsafe impl Sync for FrameMemory {}

impl FrameMemory {
    /// `count` zeroed, page-aligned cells (`count` > 0).
    pub(super) fn new(count: usize) -> std::io::Result<FrameMemory> {
        assert!(count > 0, "a pool has frames");
        let len = count.checked_mul(PAGE_SIZE).ok_or(std::io::ErrorKind::OutOfMemory)?;
        // SAFETY: a fresh anonymous mapping: no address hint, no file; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // mmap returns page-aligned memory, and a cell is one page.
        debug_assert_eq!(p as usize % std::mem::align_of::<PageCell>(), 0);
        let cells = NonNull::new(p.cast::<PageCell>()).ok_or(std::io::ErrorKind::OutOfMemory)?;
        Ok(FrameMemory { cells, count })
    }
}

impl std::ops::Deref for FrameMemory {
    type Target = [PageCell];
    fn deref(&self) -> &[PageCell] {
        debug_assert!(self.count > 0, "a mapping of no frames");
        // SAFETY: `count` cells mapped readable and writable, aligned, zero-filled (all-zero
        // bytes are a valid `PageCell`), alive until `drop`.
        unsafe { std::slice::from_raw_parts(self.cells.as_ptr(), self.count) }
    }
}

impl Drop for FrameMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, unmapped once; no reference outlives `self`.
        let rc = unsafe { libc::munmap(self.cells.as_ptr().cast(), self.count * PAGE_SIZE) };
        debug_assert_eq!(rc, 0, "munmap of the pool's own mapping");
    }
}

impl std::fmt::Debug for FrameMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_assert_eq!(self.cells.as_ptr() as usize % PAGE_SIZE, 0, "frames are page-aligned");
        write!(f, "FrameMemory({} frames)", self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_zeroed_aligned_and_writable() {
        let m = FrameMemory::new(3).unwrap();
        assert_eq!(m.len(), 3);
        for cell in m.iter() {
            assert_eq!(cell as *const PageCell as usize % PAGE_SIZE, 0);
            // SAFETY: the test holds the only reference to the cells.
            let page = unsafe { &mut *cell.0.get() };
            assert!(page.iter().all(|b| *b == 0));
            page[0] = 1;
        }
    }
}
