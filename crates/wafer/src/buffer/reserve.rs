//! The clean-frame reserve (000 sec. 6.2, "securing clean buffer frames for GC reads"): DB GC
//! loads pages only into free or clean frames, never writing a dirty page back to make room
//! (it may run inside an eviction, under the store's `writer` mutex). So evictions keep at
//! least `reserve_frames` frames clean or free: when fewer would remain after a batch's victims
//! are freed, the batch also writes back a few dirty, unreferenced frames just ahead of the clock
//! hand - the pages it would evict soon anyway - and keeps them cached, clean.
//!
//! Why in the eviction: it is the normal write-back path (write-ahead rule, write-back limit,
//! one store call), no GC cycle is running in this thread when it picks (GC runs inside the
//! store call that follows, and only ever `try_` latches, so the frames being cleaned are just
//! skipped by it), and the pool is full exactly when evictions happen, which is when the
//! reserve can run short. Checkpoints clean every frame anyway.
use super::{BufferPool, FrameMut, MissState, NO_PAGE};
use crate::page;
use crate::Result;
use std::sync::atomic::Ordering;

/// Upper bound of `Options::clean_reserve_percent`: half the pool kept clean would turn every
/// eviction into a flush.
pub const CLEAN_RESERVE_PERCENT_MAX: u32 = 50;

impl BufferPool {
    /// Keeps `percent` of the frames (rounded up) clean or free for GC reads.
    pub fn with_clean_reserve_percent(mut self, percent: u32) -> Result<BufferPool> {
        if percent > CLEAN_RESERVE_PERCENT_MAX {
            return Err(crate::OptionsError::OutOfRange {
                option: "clean_reserve_percent",
                value: percent.into(),
                limit: crate::Limit::AtMost(CLEAN_RESERVE_PERCENT_MAX.into()),
            }
            .into());
        }
        self.reserve_frames = (self.frames.len() * percent as usize).div_ceil(100);
        assert!(self.reserve_frames <= self.frames.len() / 2);
        Ok(self)
    }

    /// Dirty frames to write back with `victims` (and keep cached) so that clean-or-free frames
    /// stay at or above the reserve; at most one eviction batch. Caller holds the miss mutex.
    pub(super) fn pick_to_clean<'a>(
        &'a self,
        st: &MissState,
        victims: &[FrameMut<'a>],
    ) -> Vec<FrameMut<'a>> {
        if self.reserve_frames == 0 {
            return Vec::new();
        }
        let n = self.frames.len();
        let dirty_victims = victims.iter().filter(|g| g.g.dirty).count();
        // Relaxed counts: a heuristic, off by the few transitions in flight.
        let dirty_after =
            self.dirty_frames.load(Ordering::Relaxed).saturating_sub(dirty_victims).min(n);
        let clean_after = n - dirty_after;
        if clean_after >= self.reserve_frames {
            return Vec::new();
        }
        let want = (self.reserve_frames - clean_after).min(self.batch_pages);
        let limit = self.logger.write_back_limit();
        let mut picked = Vec::with_capacity(want);
        // Bound: one turn ahead of the hand, which does not move (nor clear reference bits):
        // the picked frames are the eviction's next candidates, cleaned early.
        for k in 0..n {
            if picked.len() >= want {
                break;
            }
            let i = (st.hand + k) % n;
            if self.referenced[i].load(Ordering::Relaxed) {
                continue;
            }
            // The victims are latched by us already: try_write skips them.
            if let Some(g) = self.try_latch_exclusive(i as u32) {
                let writable = !g.g.writing && page::lsn(g.bytes()) <= limit;
                if g.pid() != NO_PAGE && g.g.dirty && writable {
                    picked.push(g);
                }
            }
        }
        // At most one batch, none of them an eviction victim (those are latched by us).
        debug_assert!(picked.len() <= want && want <= self.batch_pages);
        debug_assert!(picked.iter().all(|p| victims.iter().all(|v| v.frame != p.frame)));
        picked
    }
}
