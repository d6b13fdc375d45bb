//! A heap buffer aligned to [`ALIGN_BYTES`]: what O_DIRECT needs, and what buffer-pool frames use
//! so that a frame can be handed to a direct-I/O device without a bounce copy.
use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Alignment of every [`AlignedBuf`]: the largest logical sector size O_DIRECT asks for.
pub const ALIGN_BYTES: usize = 4096;

/// Zero-initialised bytes at an address that is a multiple of [`ALIGN_BYTES`].
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively (like a Box<[u8]>); no interior mutability.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only give out `&[u8]`, which is Sync.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zeroed bytes. `len` must be positive (a zero-sized allocation has no
    /// address to align) and is usually a multiple of 4096.
    pub fn zeroed(len: usize) -> AlignedBuf {
        assert!(len > 0, "an aligned buffer needs at least one byte");
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size (asserted above).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else { alloc::handle_alloc_error(layout) };
        let buf = AlignedBuf { ptr, len };
        assert!(is_aligned(buf.as_ptr()));
        buf
    }

    /// An aligned copy of `data` (which must not be empty).
    pub fn copy_of(data: &[u8]) -> AlignedBuf {
        let mut buf = AlignedBuf::zeroed(data.len());
        buf.copy_from_slice(data);
        buf
    }

    fn layout(len: usize) -> Layout {
        match Layout::from_size_align(len, ALIGN_BYTES) {
            Ok(layout) => layout,
            // Only reachable for lengths near isize::MAX: no caller can allocate that anyway.
            Err(_) => panic!("aligned buffer of {len} bytes is too large"),
        }
    }
}

/// True when `ptr` can be handed to O_DIRECT as is.
pub fn is_aligned(ptr: *const u8) -> bool {
    (ptr as usize).is_multiple_of(ALIGN_BYTES)
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes for as long as self lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len initialised bytes and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr came from alloc_zeroed with exactly this layout and is freed only here.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

impl Clone for AlignedBuf {
    fn clone(&self) -> AlignedBuf {
        AlignedBuf::copy_of(self)
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf").field("len", &self.len).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_aligned_and_writable() {
        for len in [1, 512, 4096, 3 * 4096 + 7] {
            let mut buf = AlignedBuf::zeroed(len);
            assert!(is_aligned(buf.as_ptr()));
            assert_eq!(buf.len(), len);
            assert!(buf.iter().all(|b| *b == 0));
            buf[len - 1] = 9;
            let copy = buf.clone();
            assert!(is_aligned(copy.as_ptr()));
            assert_eq!(copy[len - 1], 9);
        }
    }
}
