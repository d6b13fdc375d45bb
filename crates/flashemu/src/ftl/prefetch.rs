//! A cache prefetch hint. It never faults, never changes memory, and compiles to nothing where
//! there is no instruction for it.

/// Starts loading the cache line holding `entry` so a store to it soon finds it cached.
#[inline(always)]
pub(super) fn for_write(entry: &u32) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 belongs to SSE, which every x86_64 CPU has. A prefetch reads
        // nothing architecturally and cannot fault; the address comes from a live reference.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(entry).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = entry;
}
