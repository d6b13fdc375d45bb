//! The append executor on a CCZNS device (`compression = device`; 002 sec. III): pages go
//! down uncompressed in compressed writes (CW), the device compresses each and reports where it
//! put it and the size a read must name, and those fill the map; reads and GC's reads are
//! decompressed reads (DR). The host compresses nothing.
//!
//! The space reserves slots before a write, but only the device knows how many a CW takes. So
//! each step reserves the worst case (a slot per page: a chunk is stored raw when it does not
//! shrink, rounded to the device's 32-byte unit it still fits a slot) within the room of the
//! group's open zone (a fresh zone when it has none), sends those pages as one CW into the
//! zone, opened as a padding zone so every CW ends on a slot boundary, and gives the unused
//! tail back (valid: the step is its zone's last reservation, under the writer lock). Before
//! the first step the whole batch's worst case is checked against the free zones, so a batch
//! is refused (NeedsGc, AwaitingDurability) before anything changes, as the packing executor's
//! is: steps open fresh zones only when the open one is full, so they never need more zones
//! than the worst case. Then sync, log, commit as every append (append.rs).
use super::append::{commit, Append};
use super::codec::Compression;
use super::orchestrate::Outcome;
use super::state::Inner;
use crate::device::{CwChunk, CwDone, DeviceCapabilities, DeviceError, Zoned};
use crate::page::{PageBuf, PageId, PAGE_SIZE};
use crate::space::{io as space_io, Location, SlotRun, SpaceError, WritePlan, SLOT_BYTES};
use crate::{Error, OptionsError, Result};

/// The engine's map addresses page starts in these units; the device must place chunks on
/// them (`cczns.chunk_align_bytes`).
const MAP_UNIT_BYTES: u32 = crate::space::PACK_ALIGN_BYTES as u32;

/// Refuses `compression = device` on a device that cannot carry it out, with what it needs.
pub(super) fn check_device(compression: Compression, caps: &DeviceCapabilities) -> Result<()> {
    // Every length is a multiple of 0 only when 0: a zero unit would accept any alignment.
    const { assert!(MAP_UNIT_BYTES > 0) };
    if compression != Compression::Device {
        return Ok(());
    }
    let Some(c) = caps.in_storage_compression else {
        return Err(OptionsError::DeviceDoesNotCompress.into());
    };
    if caps.zones.is_none() {
        return Err(OptionsError::CompressionNotZoned.into());
    }
    if !c.chunk_align_bytes.is_multiple_of(MAP_UNIT_BYTES) {
        let chunk_align_bytes = c.chunk_align_bytes;
        return Err(
            OptionsError::ChunkAlign { chunk_align_bytes, unit_bytes: MAP_UNIT_BYTES }.into()
        );
    }
    Ok(())
}

/// Carries out `a` with compressed writes: see the module comment.
pub(super) fn execute(inner: &Inner, a: &Append<'_>) -> Result<Outcome> {
    assert_eq!(inner.options.compression, Compression::Device);
    a.check();
    match inner.lock_state().space.can_reserve(a.plan, a.purpose) {
        Ok(()) => {}
        Err(SpaceError::NeedsGc { .. }) => return Ok(Outcome::NeedsGc),
        Err(SpaceError::AwaitingDurability { .. }) => return Ok(Outcome::AwaitingDurability),
        Err(e) => return Err(e.into()),
    }
    let zoned = inner
        .device
        .zoned()
        .ok_or(DeviceError::Unsupported("compression = device on a device without zones"))?;
    let mut targets: Vec<(usize, Location)> = Vec::with_capacity(a.pages.len());
    let mut written: Result<()> = Ok(());
    let mut next = 0usize;
    for stretch in &a.plan.groups {
        let indices = &a.plan.order[next..next + stretch.pages as usize];
        next += stretch.pages as usize;
        written = write_stretch(inner, zoned, a, stretch.group, indices, &mut targets);
        if written.is_err() {
            break;
        }
    }
    if written.is_ok() {
        assert_eq!(targets.len(), a.pages.len());
        // Page data is durable before the map points at it (000 sec. 6.2).
        written = inner.device.sync().map_err(Error::from);
    }
    let all_committed = commit(inner, a, targets, written)?;
    Ok(Outcome::Done { all_committed })
}

/// Writes one group's pages (batch indices) step by step, each step one CW into the group's
/// open zone; pushes each page's location.
fn write_stretch(
    inner: &Inner,
    zoned: &dyn Zoned,
    a: &Append<'_>,
    group: u32,
    indices: &[u32],
    targets: &mut Vec<(usize, Location)>,
) -> Result<()> {
    let mut left = indices;
    // Bound: every step writes at least one page.
    for _ in 0..indices.len() {
        if left.is_empty() {
            break;
        }
        let step = reserve_step(inner, zoned, group, left.len() as u32, a.purpose)?;
        let (these, rest) = left.split_at(step.run.slots as usize);
        let placed = write_step(inner, zoned, a, &step, these);
        match placed {
            Ok(placed) => settle(inner, a, &step, group, these, &placed, targets),
            Err(e) => {
                abandon_run(inner, step.run);
                return Err(e);
            }
        }
        left = rest;
    }
    assert!(left.is_empty(), "a stretch was not written");
    Ok(())
}

/// One step's reservation: its run (one zone) and where it is.
#[derive(Debug)]
struct Step {
    run: SlotRun,
    /// Device offset of the run's first slot.
    offset: u64,
    device_zone: u32,
}

/// Reserves the worst case for up to `pages` pages in the first zone `group`'s route takes.
fn reserve_step(
    inner: &Inner,
    zoned: &dyn Zoned,
    group: u32,
    pages: u32,
    purpose: crate::device::WritePurpose,
) -> Result<Step> {
    let mut st = inner.lock_state();
    // The first run of the route the space would take: the group's open zone, else the zone
    // it opens or NoWA sends it to.
    let take = st.space.stretch_rooms(&[], group, pages)[0];
    assert!(take >= 1 && take <= pages, "a step of {take} of {pages} pages");
    let runs = st.space.reserve_plan(&WritePlan::single(take, group), purpose)?;
    assert_eq!(runs.len(), 1, "a step within one zone's room took {runs:?}");
    let run = runs[0];
    // The worst case for `take` pages, inside one zone: the CW must not run past its end.
    assert_eq!(run.slots, take, "a step of {take} pages reserved {run:?}");
    assert!(run.first_slot + run.slots <= st.space.slots_per_zone(), "{run:?} leaves its zone");
    let offset = st.space.run_offset_bytes(&run);
    let device_zone = space_io::device_zone(zoned, &st.space, run.zone)?;
    Ok(Step { run, offset, device_zone })
}

/// Sends the step's pages as one CW (a fresh zone is opened as a padding zone first) and
/// checks what the device did against the reservation: each page's location and the slots
/// used.
fn write_step(
    inner: &Inner,
    zoned: &dyn Zoned,
    a: &Append<'_>,
    step: &Step,
    these: &[u32],
) -> Result<(Vec<Location>, u32, u64)> {
    if step.run.first_slot == 0 {
        zoned.zone_open_padding(step.device_zone)?;
    }
    let chunks: Vec<CwChunk<'_>> = these
        .iter()
        .map(|&i| CwChunk { data: &a.pages[i as usize].1[..], purpose: a.page_purpose(i as usize) })
        .collect();
    let done = zoned.compressed_write(step.offset, &chunks)?;
    let placed = locations(step, &done, these.len())?;
    // What `locations` accepted: a location per page sent, within the reserved run (`settle`
    // gives the rest back).
    assert_eq!(placed.0.len(), these.len());
    assert!(placed.1 >= 1 && placed.1 <= step.run.slots, "{} slots of {:?}", placed.1, step.run);
    let stored: u64 = done.chunks.iter().map(|c| u64::from(c.stored_bytes)).sum();
    inner.codec.note_slots(u64::from(placed.1), stored);
    Ok((placed.0, placed.1, stored))
}

/// The map location of each chunk of `done` and the slots it used, or why the device's
/// placement is not one the reservation allows: every chunk written, none finishing the zone,
/// chunks back to back from the run's start on 32-byte units, ending on a slot boundary
/// within the run.
fn locations(step: &Step, done: &CwDone, sent: usize) -> Result<(Vec<Location>, u32)> {
    let mismatch = |reason: String| {
        Error::from(DeviceError::CompressedWriteMismatch { offset: step.offset, reason })
    };
    if done.chunks.len() != sent || done.zone_finished {
        let n = done.chunks.len();
        return Err(mismatch(format!("{n} of {sent} chunks placed in a run that fits them all")));
    }
    let run_bytes = u64::from(step.run.slots) * SLOT_BYTES;
    let used_bytes = done.write_pointer.checked_sub(step.offset).unwrap_or(u64::MAX);
    if used_bytes == 0 || used_bytes > run_bytes || !used_bytes.is_multiple_of(SLOT_BYTES) {
        return Err(mismatch(format!("write pointer {} outside the run", done.write_pointer)));
    }
    let zone_start = step.offset - u64::from(step.run.first_slot) * SLOT_BYTES;
    let mut at = step.offset;
    let mut locs = Vec::with_capacity(sent);
    for c in &done.chunks {
        let in_zone = c.offset.wrapping_sub(zone_start);
        let loc = u16::try_from(c.feedback_bytes).ok().and_then(|feedback| {
            let slot = u32::try_from(in_zone / SLOT_BYTES).ok()?;
            Location::checked_chunk(step.run.zone, slot, (in_zone % SLOT_BYTES) as u16, feedback)
        });
        match loc {
            Some(loc) if c.offset == at => locs.push(loc),
            _ => return Err(mismatch(format!("chunk {c:?} where {at} was next"))),
        }
        at += u64::from(c.feedback_bytes);
    }
    if at != done.write_pointer {
        return Err(mismatch(format!(
            "chunks end at {at}, the pointer is at {}",
            done.write_pointer
        )));
    }
    // `settle` zips these with the step's batch indices: one location per chunk sent.
    debug_assert_eq!(locs.len(), sent, "{} locations for {sent} chunks", locs.len());
    Ok((locs, (used_bytes / SLOT_BYTES) as u32))
}

/// After a step's CW: the unused tail goes back to the zone, slots holding several pages (or
/// part of one crossing a slot's end) are declared shared before any commit, slots holding
/// only dirty versions GC wrote count as the write-backs they replace, and each page's
/// location joins the batch's.
fn settle(
    inner: &Inner,
    a: &Append<'_>,
    step: &Step,
    group: u32,
    these: &[u32],
    placed: &(Vec<Location>, u32, u64),
    targets: &mut Vec<(usize, Location)>,
) {
    let (locs, used_slots) = (&placed.0, placed.1);
    let run = step.run;
    let mut st = inner.lock_state();
    st.space.give_back(run, used_slots, group, a.purpose);
    let mut purposes = Vec::with_capacity(used_slots as usize);
    for slot in run.first_slot..run.first_slot + used_slots {
        let touching: Vec<usize> =
            (0..locs.len()).filter(|&k| locs[k].slots().contains(&slot)).collect();
        // `locations` checked the chunks tile the used slots.
        assert!(!touching.is_empty(), "slot {slot} of {run:?} holds no chunk");
        let crossing = touching.iter().any(|&k| locs[k].crosses());
        if touching.len() >= 2 || crossing {
            st.space.share_slot(run.zone, slot, touching.len() as u16);
        }
        purposes.push(a.slot_purpose_of(touching.iter().map(|&k| these[k] as usize)));
    }
    super::append::reclassify(&mut st.space, a.purpose, &purposes);
    targets.extend(these.iter().zip(locs).map(|(&i, loc)| (i as usize, *loc)));
}

/// A step whose CW failed: every slot of its run is dead (what the device holds there is never
/// mapped; the store is poisoned by the error anyway).
fn abandon_run(inner: &Inner, run: SlotRun) {
    let mut st = inner.lock_state();
    assert!(run.first_slot + run.slots <= st.space.slots_per_zone(), "{run:?} leaves its zone");
    for slot in run.first_slot..run.first_slot + run.slots {
        st.space.abandon(Location::new(run.zone, slot, PAGE_SIZE as u16));
    }
}

/// Reads page `pid` stored at `loc` by the device: one decompressed read naming the chunk's
/// address and feedback size; anything but a whole page back is a corrupt page.
pub(super) fn read_page(
    inner: &Inner,
    pid: PageId,
    loc: Location,
    buf: &mut PageBuf,
) -> Result<()> {
    // The superblock is read from its own slot, never through the map.
    debug_assert_ne!(pid, crate::page::meta::META_PAGE_ID, "the superblock read as a chunk");
    let offset = inner.lock_state().space.offset_bytes(loc) + u64::from(loc.offset_bytes);
    let zoned = inner
        .device
        .zoned()
        .ok_or(DeviceError::Unsupported("compression = device on a device without zones"))?;
    inner.codec.note_read(u64::from(loc.slots().end - loc.slots().start));
    let n = zoned.decompressed_read(offset, u32::from(loc.stored_bytes), &mut buf[..])?;
    if n != PAGE_SIZE {
        let reason = format!("the device's chunk decompressed to {n} bytes, not a page");
        return Err(Error::CorruptPage { page_id: pid, reason });
    }
    Ok(())
}
