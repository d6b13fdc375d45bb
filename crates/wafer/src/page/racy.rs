//! Reads of a page that a writer may be changing at the same moment: an optimistic reader's view
//! of a buffer frame (`buffer::latch`). Nothing read here is trusted until the reader validates
//! the page's version; until then a value may be torn or stale, so every read is clamped into
//! the page (a decoded offset or length can never lead outside the 4 KiB) and every loop over
//! decoded counts is bounded by the page size. Node code runs on this view through
//! [`super::node::NodeRead`], the same code that runs on a latched page.
use super::node::NodeRead;
use super::{PageBuf, PAGE_SIZE};
use std::cmp::Ordering;
use std::marker::PhantomData;

/// A page's bytes, read without a latch. `'a` is the buffer pool's lifetime: the frame's memory
/// stays allocated (though not unchanged) as long as the pool does.
#[derive(Debug, Clone, Copy)]
pub struct RacyPage<'a> {
    start: *const u8,
    _pool: PhantomData<&'a PageBuf>,
}

impl<'a> RacyPage<'a> {
    /// # Safety
    /// `start` points at `PAGE_SIZE` bytes that stay allocated for `'a`. Other threads may write
    /// them meanwhile: this view only reads them as raw bytes (never through a reference).
    pub unsafe fn new(start: *const u8) -> RacyPage<'a> {
        RacyPage { start, _pool: PhantomData }
    }

    /// Copies `out.len()` bytes from `off`, clamped so the copy stays inside the page.
    pub fn copy_out(self, off: usize, out: &mut [u8]) {
        let n = out.len().min(PAGE_SIZE);
        let off = off.min(PAGE_SIZE - n);
        // SAFETY: `off + n <= PAGE_SIZE`, inside the allocation `new` was given; `out` is a
        // local buffer no other thread sees. The source may be written concurrently: this is the
        // seqlock pattern, which Rust cannot express without a data race until it has an atomic
        // per-byte memcpy (RFC 3301; crossbeam's `AtomicCell` says the same of its own): the
        // bytes copied may be torn, and the caller uses them only after its version validates.
        unsafe { std::ptr::copy_nonoverlapping(self.start.add(off), out.as_mut_ptr(), n) };
    }

    pub fn u32_at(self, off: usize) -> u32 {
        u32::from_le_bytes(self.array(off))
    }

    fn array<const N: usize>(self, off: usize) -> [u8; N] {
        let off = off.min(PAGE_SIZE - N);
        // SAFETY: as `copy_out`: clamped into the page; `[u8; N]` has alignment 1. One plain
        // load (a volatile read of an array would be N byte loads): each value is read once
        // into a register, clamped at its use, and trusted only after validation.
        unsafe { std::ptr::read_unaligned(self.start.add(off).cast::<[u8; N]>()) }
    }
}

impl NodeRead for RacyPage<'_> {
    fn u8_at(self, off: usize) -> u8 {
        self.array::<1>(off)[0]
    }
    fn u16_at(self, off: usize) -> u16 {
        u16::from_le_bytes(self.array(off))
    }
    fn u64_at(self, off: usize) -> u64 {
        u64::from_le_bytes(self.array(off))
    }

    fn cmp_bytes(self, off: usize, len: usize, k: &[u8]) -> Ordering {
        let off = off.min(PAGE_SIZE);
        let len = len.min(PAGE_SIZE - off);
        let common = len.min(k.len());
        // Eight bytes at a time as big-endian numbers (their order is the bytes' order), the
        // tail byte by byte. Bound: `common <= PAGE_SIZE`.
        let mut done = 0;
        while done + 8 <= common {
            let mine = u64::from_be_bytes(self.array(off + done));
            let theirs = u64::from_be_bytes(k[done..done + 8].try_into().unwrap_or([0; 8]));
            match mine.cmp(&theirs) {
                Ordering::Equal => done += 8,
                decided => return decided,
            }
        }
        while done < common {
            match self.u8_at(off + done).cmp(&k[done]) {
                Ordering::Equal => done += 1,
                decided => return decided,
            }
        }
        len.cmp(&k.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::{format, node, PageKind};

    fn racy(p: &PageBuf) -> RacyPage<'_> {
        // SAFETY: `p` outlives the view and nobody writes it meanwhile.
        unsafe { RacyPage::new(p.as_ptr()) }
    }

    #[test]
    fn node_reads_agree_with_the_latched_ones() {
        let mut p = Box::new([0u8; PAGE_SIZE]);
        format(&mut p, 3, PageKind::Leaf, 1, 0);
        for i in 0..50u32 {
            let k = format!("user{:012}", i * 7);
            assert!(node::leaf_put(&mut p, k.as_bytes(), &[i as u8; 40]));
        }
        let r = racy(&p);
        for i in 0..360u32 {
            let k = format!("user{:012}", i);
            assert_eq!(node::search_in(r, k.as_bytes()), node::search(&p, k.as_bytes()), "{k}");
        }
        let mut out = [0u8; 40];
        let (off, len) = node::value_span(r, 5);
        assert_eq!(len, 40);
        r.copy_out(off, &mut out);
        assert_eq!(out, [5u8; 40]);
    }

    #[test]
    fn garbage_never_reads_outside_the_page() {
        // Every offset and length decodes as 0xffff: reads clamp, searches end.
        let p = Box::new([0xffu8; PAGE_SIZE]);
        let r = racy(&p);
        assert_eq!(r.u64_at(PAGE_SIZE - 1), u64::MAX);
        let _ = node::search_in(r, b"any key at all");
        let _ = node::child_at_pos_in(r, 70_000);
        let (off, len) = node::value_span(r, 65_535);
        let mut out = vec![0u8; len.min(node::MAX_VALUE_BYTES)];
        r.copy_out(off, &mut out);
        assert_eq!(r.cmp_bytes(PAGE_SIZE + 10, 65_535, b"k"), Ordering::Less);
    }
}
