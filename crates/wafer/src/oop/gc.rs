//! DB garbage collection, the mechanism half (the policy is `space::gc`): move a victim zone's
//! valid pages to a GC zone, then free the zone once the moves are durable.
//!
//! Valid pages are read straight from the device into a GC buffer, not through the buffer pool.
//! Bytes are the same either way: each valid page is written once more (GcCopy); only a device
//! read of a page that happens to be resident is saved by the pool, and reads do not count in
//! WAF. It is safe against concurrent eviction because a cycle runs under the store's `writer`
//! lock, like every write-back batch: no page of the victim can be rewritten or freed while the
//! cycle runs (and `commit_gc_move` still drops a move whose page changed). Going through the
//! pool would instead need frames from inside an eviction, which holds latches of its own
//! victims; the pool's clean-frame reserve that would make that safe is left for later.
use super::layout::GC_GROUP;
use super::store::Inner;
use crate::device::{AlignedBuf, ReadOp, WritePurpose};
use crate::page::{self, PageBuf, PageId, PAGE_SIZE};
use crate::space::Location;
use crate::{Error, Result};
use std::time::Duration;

/// Background thread wake-up period when nobody signals it.
const BACKGROUND_PERIOD: Duration = Duration::from_millis(50);

/// One GC cycle under the caller's `writer` lock. Ok(false): no zone would free anything.
pub(super) fn gc_cycle(inner: &Inner) -> Result<bool> {
    let Some(plan) = inner.lock_state().space.plan_gc() else { return Ok(false) };
    let r = move_pages(inner, &plan.valid);
    let mut st = inner.lock_state();
    if let Err(e) = r {
        st.space.abort_victim(plan.zone);
        return Err(e);
    }
    let lsn = st.map_lsn;
    st.space.finish_victim(plan.zone, lsn);
    st.gc_cycles += 1;
    st.gc_moved_pages += plan.valid.len() as u64;
    drop(st);
    inner.release_ready()?;
    Ok(true)
}

/// Reads the victim's valid pages in slot order, `gc_batch_pages` at a time, and appends them
/// to the GC group's zone.
fn move_pages(inner: &Inner, valid: &[(PageId, Location)]) -> Result<()> {
    let batch = inner.options.gc_batch_pages as usize;
    for chunk in valid.chunks(batch) {
        let mut buf = AlignedBuf::zeroed(chunk.len() * PAGE_SIZE);
        {
            let offsets: Vec<u64> = {
                let st = inner.lock_state();
                chunk.iter().map(|(_, loc)| st.space.offset_bytes(*loc)).collect()
            };
            let mut ops: Vec<ReadOp<'_>> = buf
                .chunks_mut(PAGE_SIZE)
                .zip(&offsets)
                .map(|(b, offset)| ReadOp { offset: *offset, buf: b })
                .collect();
            inner.device.read_batch(&mut ops)?;
        }
        let mut pages: Vec<(PageId, &PageBuf)> = Vec::with_capacity(chunk.len());
        for ((pid, _), bytes) in chunk.iter().zip(buf.chunks(PAGE_SIZE)) {
            let p: &PageBuf = bytes
                .try_into()
                .map_err(|_| Error::Corrupt("GC buffer is not page sized".into()))?;
            // Copying a corrupt page would launder it under a fresh location: stop instead.
            page::verify(p, *pid).map_err(|reason| Error::CorruptPage { page_id: *pid, reason })?;
            pages.push((*pid, p));
        }
        let froms: Vec<Location> = chunk.iter().map(|(_, l)| *l).collect();
        inner.maybe_snapshot()?;
        inner.append(&pages, GC_GROUP, WritePurpose::GcCopy, false, Some(&froms))?;
    }
    Ok(())
}

/// GC until the free-zone target is met, a bounded number of cycles. Caller holds `writer`.
pub(super) fn gc_until_satisfied(inner: &Inner) -> Result<u32> {
    let mut cycles = 0;
    for _ in 0..inner.layout.space.zone_count() {
        if inner.lock_state().space.gc_satisfied() {
            break;
        }
        if !gc_cycle(inner)? {
            break;
        }
        cycles += 1;
    }
    Ok(cycles)
}

/// GC on every zone holding an invalid slot (tools, leak checks), then a snapshot so the freed
/// zones are released. Caller holds `writer`.
pub(super) fn gc_every_zone(inner: &Inner) -> Result<u32> {
    let mut cycles = 0;
    // Bound: no user writes meanwhile, so each victim's pages land in zones that stay valid;
    // more cycles than twice the zones would mean GC feeds on itself.
    for _ in 0..2 * inner.layout.space.zone_count() {
        if !gc_cycle(inner)? {
            break;
        }
        cycles += 1;
    }
    inner.write_snapshot()?;
    Ok(cycles)
}

/// The background GC thread: wakes when a writer sees free zones below the high mark (or every
/// `BACKGROUND_PERIOD`), runs one cycle at a time under `writer` so writers interleave, and
/// makes the moves durable when most free zones only wait for it.
pub(super) fn background(inner: &Inner) {
    loop {
        {
            let stop = inner.shutdown.lock().unwrap_or_else(|e| e.into_inner());
            if *stop {
                return;
            }
            let (stop, _) =
                inner.wake.wait_timeout(stop, BACKGROUND_PERIOD).unwrap_or_else(|e| e.into_inner());
            if *stop {
                return;
            }
        }
        if inner.poisoned.load(std::sync::atomic::Ordering::Relaxed) {
            continue;
        }
        for _ in 0..inner.layout.space.zone_count() {
            if *inner.shutdown.lock().unwrap_or_else(|e| e.into_inner()) {
                return;
            }
            let _w = inner.lock_writer();
            let (satisfied, awaiting) = {
                let st = inner.lock_state();
                let s = &st.space;
                (s.gc_satisfied(), s.empty_zone_count() < s.options().gc_free_zones_low)
            };
            let r = if !satisfied {
                gc_cycle(inner)
            } else if awaiting {
                // Enough zones are free but most wait for durability: one journal flush
                // releases them all, off the writers' path.
                inner.make_durable().map(|()| false)
            } else {
                Ok(false)
            };
            match inner.poison(r) {
                Ok(true) => {}
                Ok(false) | Err(_) => break,
            }
        }
    }
}
