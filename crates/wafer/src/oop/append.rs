//! The append executor: carries out one write plan. Pack each write group's pages into slots
//! (best-fit decreasing when they are compressed and packing is on, concatenated across slot
//! boundaries when they are compressed blob pages or packing is off, else one page per slot),
//! reserve the slots (all or nothing), write each slot run as one sequential device write
//! (split only where the slots' purpose changes), sync, log one map record per page, commit. It never runs GC and never flushes the
//! journal: when the space has no room it reports why ([`Outcome`]) and changes nothing, and
//! the orchestrator (orchestrate.rs) decides what to do. Caller holds `writer`.
use super::journal;
use super::orchestrate::Outcome;
use super::state::Inner;
use crate::device::{AlignedBuf, DeviceError, WriteOp, WritePurpose, ZoneAppend, Zoned};
use crate::page::{PageBuf, PageId, PAGE_SIZE};
use crate::space::io as space_io;
use crate::space::pack::{self, SlotFill};
use crate::space::{GroupRun, Location, SlotRun, SpaceError, WritePlan};
use crate::Result;

/// One batch to append: sealed pages, their stored form, where the plan puts them, and what
/// they count as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Append<'a> {
    pub pages: &'a [(PageId, &'a PageBuf)],
    /// Each page's stored form by batch index (codec.rs); None, or an empty slice: raw.
    pub stored: &'a [Option<Vec<u8>>],
    /// Pack compressed pages several to a slot.
    pub packing: bool,
    pub plan: &'a WritePlan,
    pub purpose: WritePurpose,
    /// GC only: each page's location when the victim was planned (by batch index). A page
    /// that moved meanwhile is not moved again: its new slot is abandoned, nothing logged.
    pub gc_from: Option<&'a [Location]>,
    /// GC only (else empty): the pages whose copy is their dirty in-memory version; their bytes
    /// count as `UserEviction`, the write-back they replace.
    pub new_versions: &'a [bool],
    /// User write-backs only (else empty): the pages that are DB GC survivors the pool held
    /// (`gc_in_pool`), written unchanged; their bytes count as `GcCopy`.
    pub survivors: &'a [bool],
}

impl Append<'_> {
    /// What page `index`'s bytes count as: the user write-back it replaces when GC writes its
    /// dirty version, else `purpose`.
    pub(super) fn page_purpose(&self, index: usize) -> WritePurpose {
        // `get` below would read a missing index as "not a new version": catch it instead.
        assert!(index < self.pages.len(), "page {index} of a batch of {}", self.pages.len());
        if self.new_versions.get(index) == Some(&true) {
            WritePurpose::UserEviction
        } else if self.survivors.get(index) == Some(&true) {
            WritePurpose::GcCopy
        } else {
            self.purpose
        }
    }

    /// What a slot holding the pages `indices` counts as: their purpose when they share one
    /// (dirty versions GC wrote count as the user write-back they replace, 000's accounting of
    /// GC through the pool; GC survivors in a write-back as GC copies), else `purpose`.
    pub(super) fn slot_purpose_of(&self, mut indices: impl Iterator<Item = usize>) -> WritePurpose {
        let first = indices.next();
        // Both layouts hand over the pages of a slot they filled (`touching`, `settle` check
        // it): a slot no page touches would be reserved, then written as nothing.
        debug_assert!(first.is_some(), "the purpose of a slot no page touches");
        let Some(first) = first else { return self.purpose };
        let p = self.page_purpose(first);
        if indices.all(|i| self.page_purpose(i) == p) {
            p
        } else {
            self.purpose
        }
    }

    /// The bytes page `index` is stored as.
    fn stored_bytes(&self, index: usize) -> &[u8] {
        let bytes = match self.stored.get(index) {
            Some(Some(bytes)) => bytes,
            _ => &self.pages[index].1[..],
        };
        // The layout packs stored forms into slots: one that is empty or larger than a slot
        // would be laid out wrong, not refused.
        debug_assert!(!bytes.is_empty() && bytes.len() <= PAGE_SIZE, "{} bytes", bytes.len());
        bytes
    }

    /// What both executors rely on: the plan places every page of the batch once, and the
    /// per-page slices are indexed by batch index (empty when unused).
    pub(super) fn check(&self) {
        let n = self.pages.len();
        assert!(n > 0, "an empty batch");
        assert_eq!(self.plan.page_count() as usize, n, "the write plan does not cover the batch");
        // Each page once, in non-empty stretches: O(pages), so in debug builds only.
        debug_assert_eq!(self.plan.check(n), Ok(()));
        assert!(self.stored.is_empty() || self.stored.len() == n);
        assert!(self.gc_from.is_none_or(|f| f.len() == n));
        assert!(
            self.new_versions.is_empty()
                || (self.new_versions.len() == n && self.gc_from.is_some())
        );
        assert!(self.survivors.is_empty() || (self.survivors.len() == n && self.gc_from.is_none()));
    }

    /// Compressed pages run end to end across slot ends: with packing off, and for blob
    /// pages always. A blob page is read alone, never for a neighbour, and most are of one
    /// size (one value's chunk): best fit leaves the same gap at every slot's end (about a
    /// tenth of a slot for 1 KB values), where end to end one page in eight or so crosses
    /// into the next slot and is read as one two-slot read.
    pub(super) fn concatenates(&self) -> bool {
        // GC moves blob pages under its own purpose: they are packed then, as any page.
        debug_assert!(self.purpose != WritePurpose::Blob || self.gc_from.is_none());
        !self.packing || self.purpose == WritePurpose::Blob
    }

    /// Each group's pages cut into slots: the slot plan to reserve (one stretch per group, in
    /// slots) and, slot by slot in its order, the pages starting in each (batch index, offset).
    /// `rooms(earlier, group, slots_max)`: the runs a stretch of `group` after the `earlier`
    /// ones will be reserved as ([`crate::space::Space::stretch_rooms`]), for the concatenated
    /// layout, which must not run a page across a run's end.
    fn slots(
        &self,
        rooms: impl Fn(&[GroupRun], u32, u32) -> Vec<u32>,
    ) -> (WritePlan, Vec<SlotFill>) {
        let mut fills: Vec<SlotFill> = Vec::with_capacity(self.pages.len());
        let mut groups = Vec::with_capacity(self.plan.groups.len());
        let mut next = 0usize;
        for stretch in &self.plan.groups {
            let indices = &self.plan.order[next..next + stretch.pages as usize];
            next += stretch.pages as usize;
            let sizes: Vec<u16> =
                indices.iter().map(|&i| self.stored_bytes(i as usize).len() as u16).collect();
            let compressed = sizes.iter().any(|&s| usize::from(s) < PAGE_SIZE);
            let local = match (compressed, self.concatenates()) {
                (true, false) => pack::best_fit_decreasing(&sizes),
                (true, true) => {
                    // The layout never needs more slots than pages (`pack::concatenate`).
                    pack::concatenate(&sizes, &rooms(&groups, stretch.group, stretch.pages))
                }
                (false, _) => pack::one_per_slot(sizes.len()),
            };
            groups.push(GroupRun { group: stretch.group, pages: local.len() as u32 });
            fills.extend(local.into_iter().map(|fill| {
                fill.into_iter().map(|(k, offset)| (indices[k as usize], offset)).collect()
            }));
        }
        assert_eq!(next, self.pages.len());
        // Every page of the batch starts in exactly one slot of the layout.
        debug_assert_eq!(fills.iter().map(Vec::len).sum::<usize>(), self.pages.len());
        let plan = WritePlan { order: (0..fills.len() as u32).collect(), groups };
        (plan, fills)
    }

    /// Per slot in layout order, the pages touching it: those starting in it and one crossing
    /// in from the slot before.
    fn touching(&self, fills: &[SlotFill]) -> Vec<SlotPages> {
        let crosses = |&(i, offset): &(u32, u16)| {
            usize::from(offset) + self.stored_bytes(i as usize).len() > PAGE_SIZE
        };
        let mut out: Vec<SlotPages> = Vec::with_capacity(fills.len());
        let mut carried: Option<u32> = None;
        for fill in fills {
            let out_of = fill.iter().find(|p| crosses(p)).map(|p| p.0);
            let mut pages: Vec<u32> = carried.into_iter().collect();
            pages.extend(fill.iter().map(|p| p.0));
            assert!(!pages.is_empty(), "a slot of the layout holds nothing");
            out.push(SlotPages { pages, crossing: carried.is_some() || out_of.is_some() });
            carried = out_of;
        }
        assert!(carried.is_none(), "the last slot's page crosses out of the batch");
        out
    }
}

/// The pages (batch indices) touching one slot of a layout, and whether one crosses into or
/// out of it: such a slot is shared even with one page.
#[derive(Debug)]
struct SlotPages {
    pages: Vec<u32>,
    crossing: bool,
}

impl SlotPages {
    /// The page count the slot is declared shared for, or None: one whole page needs no
    /// declaration.
    fn shared(&self) -> Option<u16> {
        // The slot header stores the count in 16 bits: a 4 KiB slot holds far fewer pages.
        debug_assert!(self.pages.len() <= PAGE_SIZE, "{} pages in a slot", self.pages.len());
        let n = self.pages.len() as u16;
        (n >= 2 || self.crossing).then_some(n)
    }
}

/// Carries out `a` with host-side packing: see the module comment. `Done { all_committed:
/// false }`: a GC copy was dropped because its page moved. Not for `compression = device`
/// (device_append.rs; append_steps.rs picks).
pub(super) fn execute(inner: &Inner, a: &Append<'_>) -> Result<Outcome> {
    assert!(inner.options.compression != super::codec::Compression::Device);
    a.check();
    let (runs, fills, purposes) = match reserve(inner, a) {
        Ok(runs) => runs,
        Err(SpaceError::NeedsGc { .. }) => return Ok(Outcome::NeedsGc),
        Err(SpaceError::AwaitingDurability { .. }) => return Ok(Outcome::AwaitingDurability),
        Err(e) => return Err(e.into()),
    };
    let (bufs, targets) = fill_runs(a, &runs, &fills);
    let written = write_runs(inner, &runs, &bufs, &purposes);
    if written.is_ok() {
        let packed: usize = (0..a.pages.len()).map(|i| a.stored_bytes(i).len()).sum();
        inner.codec.note_slots(fills.len() as u64, packed as u64);
    }
    let all_committed = commit(inner, a, targets, written)?;
    Ok(Outcome::Done { all_committed })
}

/// A reserved layout: the runs, the pages in each slot, and each slot's write purpose.
type Reserved = (Vec<SlotRun>, Vec<SlotFill>, Vec<WritePurpose>);

/// Lays the pages out in slots and reserves them (under one hold of the state, so the zones'
/// room the layout assumed is the room reserved), declares the packed ones shared, and counts
/// slots holding only dirty versions GC wrote as the user write-back they replace.
fn reserve(inner: &Inner, a: &Append<'_>) -> std::result::Result<Reserved, SpaceError> {
    let mut st = inner.lock_state();
    let rooms =
        |earlier: &[GroupRun], group, slots_max| st.space.stretch_rooms(earlier, group, slots_max);
    let (slot_plan, fills) = a.slots(rooms);
    let runs = st.space.reserve_plan(&slot_plan, a.purpose)?;
    let slots = runs.iter().flat_map(|r| (0..r.slots).map(move |i| (r.zone, r.first_slot + i)));
    let touching = a.touching(&fills);
    // The space reserved exactly the slots the layout filled, one run slot per filled slot.
    let reserved: u64 = runs.iter().map(|r| u64::from(r.slots)).sum();
    assert_eq!(reserved, touching.len() as u64, "reserved slots differ from the laid-out ones");
    for ((zone, slot), slot_pages) in slots.zip(&touching) {
        if let Some(pages) = slot_pages.shared() {
            st.space.share_slot(zone, slot, pages);
        }
    }
    let purposes: Vec<WritePurpose> =
        touching.iter().map(|t| a.slot_purpose_of(t.pages.iter().map(|i| *i as usize))).collect();
    reclassify(&mut st.space, a.purpose, &purposes);
    Ok((runs, fills, purposes))
}

/// Moves the issued-slot counts of the slots whose purpose is not the batch's (`purposes`, one
/// per slot) to theirs.
pub(super) fn reclassify(
    space: &mut crate::space::Space,
    batch: WritePurpose,
    purposes: &[WritePurpose],
) {
    let other = [WritePurpose::UserEviction, WritePurpose::GcCopy];
    for to in other.into_iter().filter(|p| *p != batch) {
        let slots = purposes.iter().filter(|p| **p == to).count() as u32;
        if slots > 0 {
            space.reclassify_issue(batch, to, slots);
        }
    }
    // Only these two ever differ from a batch's purpose (`Append::page_purpose`).
    assert!(purposes.iter().all(|p| *p == batch || other.contains(p)));
}

/// The runs' buffers and each page's batch index and location, in slot order.
fn fill_runs(
    a: &Append<'_>,
    runs: &[SlotRun],
    fills: &[SlotFill],
) -> (Vec<AlignedBuf>, Vec<(usize, Location)>) {
    let mut bufs = Vec::with_capacity(runs.len());
    let mut targets = Vec::with_capacity(a.pages.len());
    let mut next = 0usize;
    for run in runs {
        let mut buf = AlignedBuf::zeroed(run.slots as usize * PAGE_SIZE);
        for i in 0..run.slots {
            for &(index, offset) in &fills[next + i as usize] {
                let bytes = a.stored_bytes(index as usize);
                let at = i as usize * PAGE_SIZE + usize::from(offset);
                // A concatenated page crosses into the next slot of its own run, never out of
                // it: the layout followed the zones' room.
                assert!(at + bytes.len() <= buf.len(), "page {index} crosses its run's end");
                buf[at..at + bytes.len()].copy_from_slice(bytes);
                let size = bytes.len() as u16;
                let slot = run.first_slot + i;
                let loc = Location::concatenated(run.zone, slot, offset, size);
                assert!(a.concatenates() || !loc.crosses(), "packing crossed a slot's end");

                targets.push((index as usize, loc));
            }
        }
        next += run.slots as usize;
        bufs.push(buf);
    }
    assert_eq!(next, fills.len());
    assert_eq!(targets.len(), a.pages.len());
    (bufs, targets)
}

/// One sequential write per stretch of equal purpose of each run (a zone append on a zoned
/// device), then a sync: page data is durable before the map points at it (000 sec. 6.2).
fn write_runs(
    inner: &Inner,
    runs: &[SlotRun],
    bufs: &[AlignedBuf],
    purposes: &[WritePurpose],
) -> Result<()> {
    let st = inner.lock_state();
    let zoned = inner.device.zoned();
    let mut ops: Vec<WriteOp<'_>> = Vec::with_capacity(runs.len());
    // The device zone of each op, on a zoned device.
    let mut op_zones: Vec<u32> = Vec::new();
    let mut first_page = 0usize;
    for (run, buf) in runs.iter().zip(bufs) {
        let offset = st.space.run_offset_bytes(run);
        let placement = st.space.placement(run.zone);
        let zone = zoned.map(|z| space_io::device_zone(z, &st.space, run.zone)).transpose()?;
        let purpose_at = |i: usize| purposes[first_page + i];
        let mut start = 0usize;
        // Bound: one op per stretch of equal purpose, at most one per page of the run.
        for end in 1..=run.slots as usize {
            let here = purpose_at(start);
            if end < run.slots as usize && purpose_at(end) == here {
                continue;
            }
            ops.push(WriteOp {
                offset: offset + (start * PAGE_SIZE) as u64,
                data: &buf[start * PAGE_SIZE..end * PAGE_SIZE],
                purpose: here,
                placement,
            });
            op_zones.extend(zone);
            start = end;
        }
        first_page += run.slots as usize;
    }
    drop(st);
    assert!(ops.len() >= runs.len());
    match zoned {
        Some(zoned) => append_ops(zoned, &ops, &op_zones)?,
        None => inner.device.write_batch(&ops)?,
    }
    Ok(inner.device.sync()?)
}

/// On a zoned device the stretches go down as zone appends, all in one submission (000 sec.
/// 5.1: the device picks the address). The space reserved the slots each append takes (the
/// writer lock orders the appends of a zone), so the address the device returns must be the
/// reserved one; a different one means host and device disagree about a write pointer, and
/// the batch fails before the map records anything.
fn append_ops(zoned: &dyn Zoned, ops: &[WriteOp<'_>], zones: &[u32]) -> Result<()> {
    assert_eq!(ops.len(), zones.len());
    let appends: Vec<ZoneAppend<'_>> = ops
        .iter()
        .zip(zones)
        .map(|(op, zone)| ZoneAppend { zone: *zone, data: op.data, purpose: op.purpose })
        .collect();
    let offsets = zoned.zone_append_batch(&appends)?;
    assert_eq!(offsets.len(), ops.len());
    for (op, landed) in ops.iter().zip(offsets) {
        if landed != op.offset {
            return Err(DeviceError::AppendMisplaced { expected: op.offset, landed }.into());
        }
    }
    Ok(())
}

/// Logs and commits every written slot (abandons them all if the write failed). Ok(false): a
/// GC copy whose page moved meanwhile was dropped.
pub(super) fn commit(
    inner: &Inner,
    a: &Append<'_>,
    targets: Vec<(usize, Location)>,
    written: Result<()>,
) -> Result<bool> {
    assert!(targets.iter().all(|(i, _)| *i < a.pages.len()), "a target names no page");
    // A written batch placed every page: none may go unlogged while its slot stays reserved.
    assert!(written.is_err() || targets.len() == a.pages.len(), "a written page has no slot");
    let mut st = inner.lock_state();
    if let Err(e) = written {
        for (_, loc) in &targets {
            st.space.abandon(*loc);
        }
        return Err(e);
    }
    let mut logged: Result<bool> = Ok(true);
    let mut entries: Vec<(PageId, Location)> = Vec::with_capacity(targets.len());
    for (index, loc) in targets {
        let pid = a.pages[index].0;
        if a.gc_from.is_some_and(|f| st.space.location(pid) != Some(f[index])) {
            st.space.abandon(loc);
            logged = Ok(false);
            continue;
        }
        entries.push((pid, loc));
    }
    // The data is synced: now the records may become durable at any time.
    for chunk in entries.chunks(journal::BATCH_MAX) {
        let appended = match logged {
            Ok(_) => inner.journal.append(journal::KIND_SETS, &journal::sets_payload(chunk)),
            // After a failed append the rest is abandoned too.
            Err(_) => {
                chunk.iter().for_each(|(_, loc)| st.space.abandon(*loc));
                continue;
            }
        };
        match appended {
            Ok(lsn) => {
                // Journal records ascend: a later batch's map changes replay after this one's.
                assert!(lsn.0 > st.map_lsn, "journal record {} not after {}", lsn.0, st.map_lsn);
                st.map_lsn = lsn.0;
                for &(pid, loc) in chunk {
                    st.space.commit(pid, loc, lsn.0);
                    st.free.remove(pid);
                }
            }
            Err(e) => {
                chunk.iter().for_each(|(_, loc)| st.space.abandon(*loc));
                logged = Err(e.into());
            }
        }
    }
    logged
}
