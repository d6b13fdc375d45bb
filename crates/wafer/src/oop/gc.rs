//! DB garbage collection, the mechanism half (the policy is `space::gc`): move a victim zone's
//! valid pages to a GC zone, then free the zone once the moves are durable.
//!
//! Valid pages are read through the buffer pool (000 sec. 4.1, 6.2), bound late as a
//! `GcPageCache` (the pool owns the store): resident pages are copied from their frames (a dirty
//! one in its newer version, its frame then clean), the others read from the device and kept in
//! clean frames when the pool has one to spare (buffer/gc.rs has the rules; the pool's
//! clean-frame reserve, buffer/reserve.rs, keeps such frames around). Without a pool (the store
//! alone, or the pool gone) GC reads into its own buffer. A cycle runs under the store's
//! `writer` lock, like every write-back batch: no page of the victim can be rewritten or freed
//! while the cycle runs (and `commit_gc_move` still drops a move whose page changed), so the
//! device version GC reads stays the mapped one. Inside an eviction the pool is reentered with
//! the victims latched: the pool's side only `try_` latches frames (deadlock argument in
//! docs/internals/gc.md).
use super::append::Append;
use super::append_steps::AppendSteps;
use super::orchestrate::{self, Collect};
use super::state::Inner;
use crate::device::{AlignedBuf, ReadOp, WritePurpose};
use crate::page::{self, PageBuf, PageId, PAGE_SIZE};
use crate::pagestore::{GcCopyCounts, GcIo, GcPage, GcPageCache};
use crate::space::{GcPlan, Location, WritePlan};
use crate::{Error, Result};
use std::time::Duration;

/// Background thread wake-up period when nobody signals it.
const BACKGROUND_PERIOD: Duration = Duration::from_millis(50);

/// One GC cycle under the caller's `writer` lock. `via_pool`: with `gc_in_pool` the space may
/// have the survivors handed to the buffer pool (`space::gc::drain`), whose evictions then
/// move them; otherwise (tools' every-zone GC, no pool bound) every page is copied here.
/// Ok(false): no zone would free anything; Ok(true) also when a log flush released zones
/// instead (the caller checks its targets again).
fn gc_cycle(inner: &Inner, via_pool: bool) -> Result<bool> {
    if release_before_compensating(inner)? {
        return Ok(true);
    }
    let cache = inner.gc_cache().filter(|_| via_pool && inner.options.artifact.gc_in_pool);
    let Some(cycle) = inner.lock_state().space.plan_cycle(cache.is_some()) else {
        return Ok(false);
    };
    let plan = &cycle.plan;
    assert_eq!(plan.valid.len(), plan.groups.len(), "a group for every page to move");
    // Moves and pages handed to the pool keep every page mapped exactly once; nothing else
    // maps or unmaps a page while the caller holds `writer`.
    let mapped_before = inner.lock_state().space.map().mapped_count();
    let _span = tracing::debug_span!("wafer.gc_cycle", zones = plan.zones.len()).entered();
    let r = match (&cache, cycle.hand_over) {
        (Some(c), true) => hand_over(inner, &**c, plan),
        _ => move_pages(inner, plan).map(|()| 0),
    };
    let mut st = inner.lock_state();
    let to_pool = match r {
        Ok(to_pool) => to_pool,
        Err(e) => {
            for zone in &plan.zones {
                st.space.abort_victim(*zone);
            }
            return Err(e);
        }
    };
    let lsn = st.map_lsn;
    if cycle.hand_over {
        st.space.hand_over_victims(&plan.zones, lsn);
    } else {
        for zone in &plan.zones {
            st.space.finish_victim(*zone, lsn);
        }
    }
    assert!(to_pool <= plan.valid.len() as u64);
    let mapped_after = st.space.map().mapped_count();
    assert_eq!(mapped_after, mapped_before, "a GC cycle changed the number of mapped pages");
    st.gc_cycles += 1;
    st.gc_moved_pages += plan.valid.len() as u64 - to_pool;
    drop(st);
    inner.release_ready()?;
    Ok(true)
}

/// Flushes the journal when NoWA would compensate although the emptied zones waiting for it
/// already free enough units (`Space::nowa_awaits_resets`). Without the flush a compensation
/// burst ran on until some other flush or snapshot (a checkpoint, a quarter of the journal)
/// reset the zones, taking ever fuller units. Returns whether zones were released.
fn release_before_compensating(inner: &Inner) -> Result<bool> {
    let waiting = {
        let st = inner.lock_state();
        if !st.space.nowa_awaits_resets() {
            return Ok(false);
        }
        st.space.pending_reset_zone_count()
    };
    assert!(waiting > 0, "NoWA awaits resets with no zone waiting");
    inner.make_durable()?;
    let left = inner.lock_state().space.pending_reset_zone_count();
    // A flush only releases zones (nothing finishes a victim meanwhile: `writer` is held).
    assert!(left <= waiting, "{left} zones wait after a flush, {waiting} before");
    Ok(left < waiting)
}

/// Copies the victims' valid pages in the plan's order, `gc_batch_pages` at a time, each to
/// its group: through the pool when one is bound, else read into GC's own buffer.
fn move_pages(inner: &Inner, plan: &GcPlan) -> Result<()> {
    let batch = inner.options.gc_batch_pages as usize;
    assert!(batch >= 1);
    assert_eq!(plan.valid.len(), plan.groups.len());
    let cache = inner.gc_cache();
    let indices: Vec<usize> = (0..plan.valid.len()).collect();
    for chunk in indices.chunks(batch) {
        copy_chunk(inner, cache.as_deref(), plan, chunk)?;
    }
    Ok(())
}

/// Hands the victims' valid pages to the pool, `gc_batch_pages` at a time; the pages it does
/// not take are copied at once, chunk by chunk. Returns the pages the pool took.
fn hand_over(inner: &Inner, cache: &dyn GcPageCache, plan: &GcPlan) -> Result<u64> {
    let batch = inner.options.gc_batch_pages as usize;
    assert!(batch >= 1);
    assert_eq!(plan.valid.len(), plan.groups.len());
    let mut to_pool = 0u64;
    let indices: Vec<usize> = (0..plan.valid.len()).collect();
    for chunk in indices.chunks(batch) {
        let (pages, froms, groups) = chunk_of(plan, chunk);
        let mut io = ChunkIo::new(inner, &froms, plan.purpose, &groups);
        let taken = cache.gc_hand_over(&pages, &mut io)?;
        assert_eq!(taken.len(), chunk.len());
        let rest: Vec<usize> =
            chunk.iter().zip(&taken).filter(|(_, t)| !**t).map(|(i, _)| *i).collect();
        to_pool += (chunk.len() - rest.len()) as u64;
        if !rest.is_empty() {
            copy_chunk(inner, Some(cache), plan, &rest)?;
        }
    }
    inner.lock_state().gc_sources.add(GcCopyCounts { to_pool, ..GcCopyCounts::default() });
    Ok(to_pool)
}

/// The GC pages, their locations and groups of `plan.valid[indices]`, as one chunk.
fn chunk_of(plan: &GcPlan, indices: &[usize]) -> (Vec<GcPage>, Vec<Location>, Vec<u32>) {
    let pages: Vec<GcPage> = indices
        .iter()
        .enumerate()
        .map(|(index, &i)| GcPage { pid: plan.valid[i].0, index })
        .collect();
    let froms: Vec<Location> = indices.iter().map(|&i| plan.valid[i].1).collect();
    let groups: Vec<u32> = indices.iter().map(|&i| plan.groups[i]).collect();
    assert!(pages.len() == froms.len() && froms.len() == groups.len());
    (pages, froms, groups)
}

/// Copies `plan.valid[indices]` (one chunk) through the pool when one is bound, else through
/// GC's own buffer.
fn copy_chunk(
    inner: &Inner,
    cache: Option<&dyn GcPageCache>,
    plan: &GcPlan,
    indices: &[usize],
) -> Result<()> {
    let (pages, froms, groups) = chunk_of(plan, indices);
    let mut io = ChunkIo::new(inner, &froms, plan.purpose, &groups);
    let counts = match cache {
        Some(c) => c.gc_copy(&pages, &mut io)?,
        None => copy_privately(&pages, &mut io)?,
    };
    let sourced = counts.from_pool + counts.dirty_from_pool + counts.loaded;
    assert_eq!(sourced + counts.private_reads, pages.len() as u64);
    inner.lock_state().gc_sources.add(counts);
    Ok(())
}

/// The store's side of one chunk: reads of the valid versions and the copies' append.
struct ChunkIo<'a> {
    inner: &'a Inner,
    froms: &'a [Location],
    purpose: WritePurpose,
    /// The chunk's write plan (its pages' groups).
    plan: WritePlan,
    /// By chunk index: the stored (compressed) bytes read from the device, moved as they are.
    stored: Vec<Option<Vec<u8>>>,
}

impl<'a> ChunkIo<'a> {
    fn new(
        inner: &'a Inner,
        froms: &'a [Location],
        purpose: WritePurpose,
        groups: &[u32],
    ) -> ChunkIo<'a> {
        assert_eq!(froms.len(), groups.len());
        let plan = WritePlan::by_group(groups);
        ChunkIo { inner, froms, purpose, plan, stored: vec![None; froms.len()] }
    }
}

impl GcIo for ChunkIo<'_> {
    fn read(&mut self, pages: &[GcPage], out: &mut [&mut PageBuf]) -> Result<()> {
        assert_eq!(pages.len(), out.len());
        if self.inner.options.compression == super::codec::Compression::Device {
            // Decompressed reads, one per page; the copies go down raw again (the device
            // compresses them on their CW).
            for (p, page_out) in pages.iter().zip(out.iter_mut()) {
                super::device_append::read_page(self.inner, p.pid, self.froms[p.index], page_out)?;
            }
            return Ok(());
        }
        // Each slot once: packed pages share them. A concatenated page's two slots are
        // adjacent on the device, hence adjacent in the sorted list: its bytes are contiguous.
        let ranges: Vec<std::ops::Range<u64>> = {
            let st = self.inner.lock_state();
            pages.iter().map(|p| st.space.byte_range(self.froms[p.index])).collect()
        };
        let mut slot_offsets: Vec<u64> =
            ranges.iter().flat_map(|r| r.clone().step_by(PAGE_SIZE)).collect();
        slot_offsets.sort_unstable();
        slot_offsets.dedup();
        let mut slots = AlignedBuf::zeroed(slot_offsets.len() * PAGE_SIZE);
        {
            let mut ops: Vec<ReadOp<'_>> = slots
                .chunks_mut(PAGE_SIZE)
                .zip(&slot_offsets)
                .map(|(buf, offset)| ReadOp { offset: *offset, buf })
                .collect();
            self.inner.device.read_batch(&mut ops)?;
        }
        for ((p, page_out), range) in pages.iter().zip(out.iter_mut()).zip(ranges) {
            let k = slot_offsets.binary_search(&range.start).unwrap_or_default();
            assert_eq!(slot_offsets[k], range.start);
            let loc = self.froms[p.index];
            let start = k * PAGE_SIZE + usize::from(loc.offset_bytes);
            let stored = &slots[start..start + usize::from(loc.stored_bytes)];
            self.inner
                .codec
                .decode(stored, page_out)
                .map_err(|e| Error::CorruptPage { page_id: p.pid, reason: e.to_string() })?;
            // Kept as read (raw ones too, with compression on), so the copy is not compressed
            // again: an incompressible page would only fail to shrink a second time.
            let compressing = self.inner.options.compression.on_host();
            if stored.len() < PAGE_SIZE || compressing {
                self.stored[p.index] = Some(stored.to_vec());
            }
        }
        Ok(())
    }
    fn append(&mut self, pages: &[(PageId, &PageBuf)], new_versions: &[bool]) -> Result<bool> {
        assert_eq!(pages.len(), self.froms.len());
        self.inner.maybe_snapshot()?;
        let stored = self.stored_forms(pages, new_versions);
        let append = Append {
            pages,
            stored: &stored,
            packing: self.inner.options.packing,
            plan: &self.plan,
            purpose: self.purpose,
            gc_from: Some(self.froms),
            new_versions,
            survivors: &[],
        };
        let all = orchestrate::write_copies(&mut AppendSteps { inner: self.inner, append })?;
        if all {
            // The dirty versions replaced their write-backs (the pool marks them clean now).
            let versions = new_versions.iter().filter(|&&n| n).count();
            self.inner.logical.add_pages(WritePurpose::UserEviction, versions);
        }
        Ok(all)
    }
}

impl ChunkIo<'_> {
    /// Each copy's stored form: the bytes read from the device as they are (no recompression);
    /// a dirty version, or a page copied from a pool frame, compressed now (the codecs are
    /// deterministic: a clean page compresses to the bytes it was stored as).
    fn stored_forms(
        &mut self,
        pages: &[(PageId, &PageBuf)],
        new_versions: &[bool],
    ) -> Vec<Option<Vec<u8>>> {
        assert!(new_versions.is_empty() || new_versions.len() == pages.len());
        let compression = self.inner.options.compression;
        let mut forms = Vec::with_capacity(pages.len());
        for (i, (_, page)) in pages.iter().enumerate() {
            let fresh = new_versions.get(i) == Some(&true);
            let kept = if fresh { None } else { self.stored.get_mut(i).and_then(Option::take) };
            forms.push(match kept {
                Some(bytes) => Some(bytes),
                None if !compression.on_host() => None,
                None => self.inner.codec.encode(compression, page),
            });
        }
        // The executor indexes stored forms by batch index.
        assert_eq!(forms.len(), pages.len());
        forms
    }
}

/// No pool to share: every valid page is read from the device into one buffer, verified, and
/// appended.
fn copy_privately(pages: &[GcPage], io: &mut dyn GcIo) -> Result<GcCopyCounts> {
    // A victim's valid pages, each once: a page copied twice would be mapped to the later
    // copy while the earlier one stays counted valid in its zone.
    check_distinct_pids(pages);
    let mut buf = AlignedBuf::zeroed(pages.len() * PAGE_SIZE);
    {
        let mut outs: Vec<&mut PageBuf> = Vec::with_capacity(pages.len());
        for b in buf.chunks_mut(PAGE_SIZE) {
            outs.push(
                b.try_into().map_err(|_| crate::Corruption::BufferNotPageSized { buffer: "GC" })?,
            );
        }
        io.read(pages, &mut outs)?;
    }
    let mut copies: Vec<(PageId, &PageBuf)> = Vec::with_capacity(pages.len());
    let mut blob_pages = 0;
    for (p, bytes) in pages.iter().zip(buf.chunks(PAGE_SIZE)) {
        let b: &PageBuf =
            bytes.try_into().map_err(|_| crate::Corruption::BufferNotPageSized { buffer: "GC" })?;
        // Copying a corrupt page would launder it under a fresh location: stop instead.
        let kind = page::verify(b, p.pid)
            .map_err(|reason| Error::CorruptPage { page_id: p.pid, reason })?;
        blob_pages += u64::from(kind == crate::page::PageKind::Blob);
        copies.push((p.pid, b));
    }
    // A GC move keeps the page count: every page read is appended, or the zone reset loses it.
    assert_eq!(copies.len(), pages.len(), "GC copied {} of {} pages", copies.len(), pages.len());
    io.append(&copies, &[])?;
    Ok(GcCopyCounts { private_reads: pages.len() as u64, blob_pages, ..GcCopyCounts::default() })
}

/// Asserts that no page id appears twice among `pages` (in debug builds only: it sorts).
fn check_distinct_pids(pages: &[GcPage]) {
    if !cfg!(debug_assertions) {
        return;
    }
    let mut pids: Vec<PageId> = pages.iter().map(|p| p.pid).collect();
    pids.sort_unstable();
    debug_assert!(pids.windows(2).all(|w| w[0] != w[1]), "a GC chunk names a page twice");
}

/// GC as the orchestrator's [`Collect`] steps.
#[derive(Debug, Clone, Copy)]
pub(super) struct GcLoop<'a>(pub &'a Inner);

impl Collect for GcLoop<'_> {
    type Error = Error;
    fn gc_cycle(&mut self) -> Result<bool> {
        // The orchestrator runs under `writer` (a write, `gc_until_satisfied`): GC moves pages
        // the map points to, which a concurrent writer would race.
        debug_assert!(self.0.writer.try_lock().is_err(), "a GC cycle without the writer mutex");
        gc_cycle(self.0, true)
    }
    fn needs_gc(&self) -> bool {
        let st = self.0.lock_state();
        let needs = st.space.needs_gc();
        // The orchestrator collects from "needed" until "satisfied": with the thresholds
        // validated low <= high the two never hold at once, or a write would skip GC it needs.
        debug_assert!(!needs || !st.space.gc_satisfied(), "GC both needed and satisfied");
        needs
    }
    fn gc_satisfied(&self) -> bool {
        let st = self.0.lock_state();
        let satisfied = st.space.gc_satisfied();
        // `needs_gc`'s pair: "satisfied" ends the loop "needed" starts, so never both at once.
        debug_assert!(!satisfied || !st.space.needs_gc(), "GC both satisfied and needed");
        satisfied
    }
    fn zone_count(&self) -> u32 {
        let zones = self.0.lock_state().space.zone_count();
        // The orchestrator bounds its loops by this: within what the layout sized metadata for,
        // and at least one (its own assertion, on the other side of the hand-over).
        debug_assert!(zones > 0 && zones <= self.0.layout.zone_count_max, "{zones} zones");
        zones
    }
}

/// GC until the free-zone target is met, a bounded number of cycles. Caller holds `writer`.
pub(super) fn gc_until_satisfied(inner: &Inner) -> Result<u32> {
    // GC moves pages the map points to: a writer changing the map meanwhile would race it.
    debug_assert!(inner.writer.try_lock().is_err(), "GC without the writer mutex");
    orchestrate::gc_until_satisfied(&mut GcLoop(inner))
}

/// GC on every zone holding an invalid slot (tools, leak checks), then a snapshot so the freed
/// zones are released. Caller holds `writer`.
pub(super) fn gc_every_zone(inner: &Inner) -> Result<u32> {
    // GC moves pages the map points to: a writer changing the map meanwhile would race it.
    debug_assert!(inner.writer.try_lock().is_err(), "GC without the writer mutex");
    let mut cycles = 0;
    // Bound: no user writes meanwhile, so each victim's pages land in zones that stay valid;
    // more cycles than twice the zones would mean GC feeds on itself.
    let zones = inner.lock_state().space.zone_count();
    for _ in 0..2 * zones {
        if !gc_cycle(inner, false)? {
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
        let zones = inner.lock_state().space.zone_count();
        // The zones bound the cycles per wake-up: a layout of none would never collect.
        debug_assert!(zones > 0, "background GC over a layout of no zones");
        for _ in 0..zones {
            if *inner.shutdown.lock().unwrap_or_else(|e| e.into_inner()) {
                return;
            }
            let _w = inner.lock_writer();
            // Checked again under `writer`: `stop_background` sets it, then waits for `writer`.
            if *inner.shutdown.lock().unwrap_or_else(|e| e.into_inner()) {
                return;
            }
            let (satisfied, awaiting) = {
                let st = inner.lock_state();
                let s = &st.space;
                (s.gc_satisfied(), s.empty_zone_count() < s.options().gc_free_zones_low)
            };
            let r = if !satisfied {
                gc_cycle(inner, true)
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
