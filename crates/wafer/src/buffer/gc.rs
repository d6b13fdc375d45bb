//! The pool as DB GC's page cache (000 sec. 4.1 step 2, sec. 6.2 "sharing the buffer pool as a
//! cache for GC"). For each valid page of a GC chunk:
//!
//! - resident and clean (frame latched shared with `try_read`): its bytes are the mapped
//!   version, copied without a device read;
//! - resident and dirty, the frame latched exclusive with `try_write`, its LSN within the
//!   logger's write-back limit and not a freed page: the in-memory version is stamped and sealed
//!   as a write-back would, the log made durable to its LSN, and written AS the GC copy; once
//!   the copy is committed the frame is marked clean. The newer version replaces the valid
//!   on-disk one in one write, instead of GC copying the old one and the eviction writing the
//!   new one later (a second write of the same page). A freed page is not: the store unmaps
//!   freed pages (write_batch), a GC copy would map it;
//! - any other resident page (latched by someone, or dirty but not writable yet): the device
//!   version is copied (read into GC's buffer) - the valid version stays valid either way;
//! - not resident: read from the device, then kept in a frame if one is free or clean,
//!   unlatched and unreferenced (`try_write`), so GC prefetches; otherwise only GC's buffer
//!   holds it. No dirty page is ever written back to make room. The clean frames are taken
//!   just ahead of the clock hand, which neither moves nor clears reference bits: GC displaces
//!   only pages the next evictions would drop anyway, and its pages (unreferenced) are the next
//!   to go unless a reader uses them first. So GC's prefetch costs the hit ratio little (a
//!   separate GC hand displacing clean pages anywhere cost `demo --quick` about 3 points of hit
//!   ratio); at most a chunk's worth of its pages sits ahead of the hand.
//!
//! Locks: called under the store's `writer` mutex, possibly inside an eviction holding its
//! victims' latches, by threads that may hold other frame latches. Frames are only ever
//! `try_` latched, so GC never waits for a latch holder (who may be waiting for `writer`). The
//! miss mutex is taken blocking: no holder of it waits on the store, and while holding it a
//! thread only `try_` latches frames or latches a frame just taken off the free list, which
//! nobody else holds (GC keeps latches only on frames off the free list). Device reads happen
//! before a frame is claimed, so no frame is held latched across a GC read.
use super::{BufferPool, FrameMut, MissState, NO_PAGE};
use crate::device::AlignedBuf;
use crate::page::{self, PageBuf, PageId, PageKind, PAGE_SIZE};
use crate::pagestore::{GcCopyCounts, GcIo, GcPage, GcPageCache};
use crate::{Error, Result};
use std::sync::atomic::Ordering;

/// Frames GC looks at for a clean one to load a page into, per page: bounds its time under the
/// miss mutex (a full turn of a large pool per page would stall every miss).
const LOAD_SCAN_FRAMES_MAX: usize = 64;

/// Where one page's GC copy comes from.
enum Source<'a> {
    /// Copied from a clean frame.
    Pool,
    /// The dirty frame's version, latched exclusive until the copy is committed.
    Dirty(FrameMut<'a>),
    /// A GC survivor's frame (`gc_in_pool`): dirty only for GC, its bytes the mapped version,
    /// copied as a clean frame is and marked clean once the copy is committed.
    Survivor(FrameMut<'a>),
    /// The device version; `load`: not resident, keep it in a frame afterwards.
    Device { load: bool },
}

impl GcPageCache for BufferPool {
    /// Copies `pages` for GC: each from a clean frame, its dirty frame's newer version, or
    /// the device (loaded into a frame when one is free), appended through `io` as one batch.
    fn gc_copy(&self, pages: &[GcPage], io: &mut dyn GcIo) -> Result<GcCopyCounts> {
        assert!(!pages.is_empty());
        let mut buf = AlignedBuf::zeroed(pages.len() * PAGE_SIZE);
        // Read once: the dirty versions taken and the log made durable must agree on it.
        let durable_limit = self.logger.gc_durable_limit();
        let limit = durable_limit.unwrap_or_else(|| self.logger.write_back_limit());
        let mut sources = self.gc_gather(pages, limit, io, &mut buf)?;
        self.gc_seal_dirty(&mut sources, durable_limit.is_some(), &mut buf)?;
        let mut counts = GcCopyCounts::default();
        // Frames ahead of the hand already given to this chunk's loads.
        let mut ahead = 0usize;
        let mut copies: Vec<(PageId, &PageBuf)> = Vec::with_capacity(pages.len());
        for ((p, s), bytes) in pages.iter().zip(&sources).zip(buf.chunks(PAGE_SIZE)) {
            let b: &PageBuf = bytes
                .try_into()
                .map_err(|_| crate::Corruption::BufferNotPageSized { buffer: "GC" })?;
            // Copying a corrupt page would launder it under a fresh location: stop instead.
            let kind = page::verify(b, p.pid)
                .map_err(|reason| Error::CorruptPage { page_id: p.pid, reason })?;
            counts.blob_pages += u64::from(kind == PageKind::Blob);
            match s {
                Source::Pool | Source::Survivor(_) => counts.from_pool += 1,
                Source::Dirty(_) => {}
                // Blob pages never live in the pool: their ids are rewritten around it.
                Source::Device { load: true }
                    if kind != PageKind::Blob && self.gc_load(p.pid, b, &mut ahead) =>
                {
                    counts.loaded += 1
                }
                Source::Device { .. } => counts.private_reads += 1,
            }
            copies.push((p.pid, b));
        }
        let new_versions: Vec<bool> =
            sources.iter().map(|s| matches!(s, Source::Dirty(_))).collect();
        let all_committed = io.append(&copies, &new_versions)?;
        for s in sources.iter_mut() {
            if let (Source::Survivor(g), true) = (&mut *s, all_committed) {
                // Its copy is the mapped version now: nothing left for eviction to write.
                g.mark_written();
            }
            if let Source::Dirty(g) = s {
                if all_committed {
                    // Its version is the mapped one now: nothing left to write back.
                    g.g.dirty = false;
                    self.dirty_frames.fetch_sub(1, Ordering::Relaxed);
                    counts.dirty_from_pool += 1;
                } else {
                    // Written but maybe not mapped: stays dirty, the eviction writes it again.
                    counts.private_reads += 1;
                }
            }
        }
        // Paired with the store's accounting of the move: every page asked for is copied
        // once, from exactly one source.
        let sourced = counts.from_pool + counts.dirty_from_pool + counts.loaded;
        assert_eq!(sourced + counts.private_reads, pages.len() as u64, "{counts:?}");
        Ok(counts)
    }

    fn gc_hand_over(&self, pages: &[GcPage], io: &mut dyn GcIo) -> Result<Vec<bool>> {
        let taken = self.hand_over_survivors(pages, io)?;
        // Paired with the store, which reads the answer page by page: one flag per page.
        debug_assert_eq!(taken.len(), pages.len(), "hand-over answers");
        Ok(taken)
    }
}

impl BufferPool {
    /// Where each GC page's copy comes from, with the device's versions read into `buf` (one
    /// slot per page, in `pages`' order).
    fn gc_gather<'a>(
        &'a self,
        pages: &[GcPage],
        limit: u64,
        io: &mut dyn GcIo,
        buf: &mut AlignedBuf,
    ) -> Result<Vec<Source<'a>>> {
        let mut sources = Vec::with_capacity(pages.len());
        for (p, out) in pages.iter().zip(buf.chunks_mut(PAGE_SIZE)) {
            sources.push(self.gc_source(p.pid, limit, out)?);
        }
        let mut wanted = Vec::new();
        let mut outs: Vec<&mut PageBuf> = Vec::new();
        for (b, (p, _)) in buf
            .chunks_mut(PAGE_SIZE)
            .zip(pages.iter().zip(&sources))
            .filter(|(_, (_, s))| matches!(s, Source::Device { .. }))
        {
            let b: &mut PageBuf =
                b.try_into().map_err(|_| crate::Corruption::BufferNotPageSized { buffer: "GC" })?;
            wanted.push(*p);
            outs.push(b);
        }
        if !wanted.is_empty() {
            io.read(&wanted, &mut outs)?;
        }
        assert_eq!(sources.len(), pages.len(), "a source for every page");
        Ok(sources)
    }

    /// Seals the dirty versions GC copies into `buf` and makes the log durable up to them,
    /// as a write-back does (the write-ahead rule), unless they were taken only up to what is
    /// durable already (`durable`).
    fn gc_seal_dirty(
        &self,
        sources: &mut [Source<'_>],
        durable: bool,
        buf: &mut AlignedBuf,
    ) -> Result<()> {
        let mut max_lsn = None;
        for (s, out) in sources.iter_mut().zip(buf.chunks_mut(PAGE_SIZE)) {
            if let Source::Dirty(g) = s {
                // As `gc_source` took it: dirty, no survivor, no flush writing it.
                debug_assert!(g.g.dirty && !g.g.survivor && !g.g.writing);
                let lsn = self.stamp_and_seal(g);
                max_lsn = max_lsn.max(Some(lsn));
                out.copy_from_slice(g.bytes());
            }
        }
        // With a durable limit every dirty version copied is durable already.
        if let (Some(lsn), false) = (max_lsn, durable) {
            if let Err(e) = self.logger.make_durable(lsn) {
                self.poisoned.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    }
}

impl BufferPool {
    /// Where page `pid`'s GC copy comes from; a clean resident page is copied into `out` here.
    fn gc_source<'a>(
        &'a self,
        pid: PageId,
        limit: page::Lsn,
        out: &mut [u8],
    ) -> Result<Source<'a>> {
        let idx = self.check_pid(pid)?;
        let Some(f) = self.table[idx].frame() else {
            return Ok(Source::Device { load: true });
        };
        match self.try_latch_shared(f) {
            Some(g) if g.pid() == pid && !g.g.dirty => {
                out.copy_from_slice(g.bytes());
                return Ok(Source::Pool);
            }
            // Dirty: needs the exclusive latch, tried below.
            Some(g) if g.pid() == pid => drop(g),
            // Latched (maybe being loaded or evicted), or the table entry was stale.
            Some(_) | None => return Ok(Source::Device { load: false }),
        }
        let Some(g) = self.try_latch_exclusive(f) else {
            return Ok(Source::Device { load: false });
        };
        if g.pid() != pid {
            return Ok(Source::Device { load: false });
        }
        if !g.g.dirty {
            // Written back between the two latches.
            out.copy_from_slice(g.bytes());
            return Ok(Source::Pool);
        }
        // Latched exclusive and holding the page: its entry names this frame, so the copy the
        // caller makes from it is the page's cached version.
        debug_assert_eq!(self.table[idx].frame(), Some(f), "page {pid} latched but unmapped");
        if g.g.survivor && !g.g.writing {
            out.copy_from_slice(g.bytes());
            return Ok(Source::Survivor(g));
        }
        let freed = page::kind(g.bytes()) == Some(PageKind::Free);
        // A page a flush is writing: its copy goes through the store after (or before) this one.
        if freed || g.g.writing || page::lsn(g.bytes()) > limit {
            // Freed pages leave through write_batch (unmapped); a batch in progress holds the
            // other: the valid version on the device is copied instead.
            return Ok(Source::Device { load: false });
        }
        Ok(Source::Dirty(g))
    }

    /// Keeps `bytes` (page `pid`'s mapped version, verified) in a free frame or in a clean,
    /// unlatched, unreferenced one at least `ahead` frames past the clock hand (`ahead` then
    /// moves past it, so a chunk's loads do not displace each other); false when none is found
    /// or the page got loaded meanwhile.
    /// The caller holds the store's `writer`, so `bytes` is still the mapped version: a newer
    /// one would need a write-back, which waits for `writer`, and whoever would write it holds
    /// a table entry for the page, which we check.
    fn gc_load(&self, pid: PageId, bytes: &PageBuf, ahead: &mut usize) -> bool {
        // Paired with the store's hand-over: a page cached here is later read as verified.
        debug_assert!(page::verify(bytes, pid).is_ok(), "GC loads an unverified page {pid}");
        self.gc_load_as(pid, bytes, ahead, false)
    }

    /// As [`BufferPool::gc_load`]; `survivor`: the page is loaded dirty, a GC survivor
    /// (`gc_in_pool`), for eviction to write out.
    pub(super) fn gc_load_as(
        &self,
        pid: PageId,
        bytes: &PageBuf,
        ahead: &mut usize,
        survivor: bool,
    ) -> bool {
        let idx = pid as usize;
        let mut st = self.lock_miss();
        if self.table[idx].frame().is_some() {
            return false;
        }
        let Some(mut g) = self.gc_claim_frame(&mut st, ahead) else { return false };
        // Mapped under the miss mutex, as a miss maps its frame: nobody maps the page meanwhile.
        g.map(pid);
        drop(st);
        g.bytes_mut().copy_from_slice(bytes);
        if survivor {
            g.mark_survivor();
        }
        // A prefetched page earns its reference bit when it is used; a survivor is so the
        // next to be written out, among the user pages of the next evictions.
        self.referenced[g.frame as usize].store(false, Ordering::Relaxed);
        assert_eq!(g.g.survivor, survivor);
        true
    }

    /// A free frame, or a clean, unlatched, unreferenced one at least `ahead` frames past the
    /// hand (its page dropped), latched exclusive and free; None when none is found. The caller
    /// holds the miss mutex (`st`).
    fn gc_claim_frame(&self, st: &mut MissState, ahead: &mut usize) -> Option<FrameMut<'_>> {
        if let Some(f) = st.free.pop() {
            self.note_touched(f);
            match self.try_latch_exclusive(f) {
                Some(g) => {
                    // The free list holds only frames without a page.
                    debug_assert!(g.pid() == NO_PAGE && !g.g.dirty, "free frame {f} holds a page");
                    return Some(g);
                }
                // A reader with a stale table entry is checking it: leave the frame be.
                None => st.free.push(f),
            }
        }
        let n = self.frames.len();
        // Bound: LOAD_SCAN_FRAMES_MAX frames, and never a second turn.
        for k in 0..LOAD_SCAN_FRAMES_MAX.min(n.saturating_sub(*ahead)) {
            let i = (st.hand + *ahead + k) % n;
            if self.referenced[i].load(Ordering::Relaxed) {
                continue;
            }
            if let Some(mut g) = self.try_latch_exclusive(i as u32) {
                if g.pid() != NO_PAGE && !g.g.dirty {
                    // Waiters with the old page's table entry see the pid change and retry.
                    g.unmap();
                    *ahead += k + 1;
                    debug_assert!(*ahead <= n, "a claim never takes a second turn");
                    return Some(g);
                }
            }
        }
        None
    }
}
