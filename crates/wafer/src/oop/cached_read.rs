//! Reads of pages the buffer pool does not hold (blob pages) through the stored-bytes cache
//! (`stored_cache.rs`): a hit decodes cached bytes, a miss reads the slot and keeps the page's
//! stored bytes. Either way the result counts only if the map still points where it looked,
//! as for any read (GC may move the page meanwhile).
use super::codec::Compression;
use super::state::Inner;
use super::stored_cache::StoredKey;
use crate::device::AlignedBuf;
use crate::page::{PageBuf, PageId, PAGE_SIZE};
use crate::space::Location;
use crate::{Error, Result};

/// Map lookups retried when GC moved the page while it was being read.
const ATTEMPTS_MAX: usize = 16;

/// Where page `pid` lies, the zone's erase count, or None when the cache does not serve it
/// (unmapped, or stored raw: the plain read path handles those). A compressed page that
/// crosses a slot's end (a blob page, or any page with packing off) is cached as any other.
fn cacheable(inner: &Inner, pid: PageId) -> Option<(Location, StoredKey, u64)> {
    // The superblock is not in the map: its reads take their own path in `read_page`.
    debug_assert_ne!(pid, crate::page::meta::META_PAGE_ID, "the superblock read cached");
    let st = inner.lock_state();
    let loc = st.space.location(pid)?;
    if usize::from(loc.stored_bytes) >= PAGE_SIZE {
        return None;
    }
    let erase_count = st.space.zones().get(loc.zone).erase_count();
    debug_assert!(loc.stored_bytes > 0, "{pid} mapped with no stored bytes");
    // The slot's device offset, taken under the same lock: a miss reads it without relocking.
    let slot_start = st.space.byte_range(loc).start;
    Some((loc, StoredKey::new(loc, erase_count), slot_start))
}

/// Reads page `pid` into `buf` as `PageStore::read_page` does, through the cache within
/// `cache_bytes_max`; Ok(Some(hit)) when the cache path served it, Ok(None) when the caller
/// must read it the plain way.
pub(super) fn read(
    inner: &Inner,
    pid: PageId,
    buf: &mut PageBuf,
    cache_bytes_max: u64,
) -> Result<Option<bool>> {
    if inner.options.compression == Compression::Device || cache_bytes_max == 0 {
        return Ok(None);
    }
    let mut stored = Vec::with_capacity(PAGE_SIZE);
    for _ in 0..ATTEMPTS_MAX {
        let Some((loc, key, slot_start)) = cacheable(inner, pid) else { return Ok(None) };
        let hit = inner.stored_cache.get(&key, &mut stored);
        if !hit {
            read_stored(inner, pid, loc, slot_start, &mut stored)?;
        }
        debug_assert_eq!(stored.len(), usize::from(loc.stored_bytes), "{pid} at {loc:?}");
        let decoded = inner
            .codec
            .decode(&stored, buf)
            .map_err(|e| Error::CorruptPage { page_id: pid, reason: e.to_string() });
        if inner.lock_state().space.location(pid) != Some(loc) {
            continue;
        }
        decoded?;
        if !hit {
            inner.stored_cache.insert(key, &stored, cache_bytes_max);
        }
        return Ok(Some(hit));
    }
    Err(crate::Corruption::PageKeptMoving { page_id: pid }.into())
}

/// The stored bytes of `pid` at `loc`, read from the device into `out`: its slot, or the two
/// it crosses, in one read.
fn read_stored(
    inner: &Inner,
    pid: PageId,
    loc: Location,
    slot_start: u64,
    out: &mut Vec<u8>,
) -> Result<()> {
    // Only compressed pages come here (`cacheable`): at most a slot's bytes, so two at most.
    debug_assert!(usize::from(loc.stored_bytes) < PAGE_SIZE, "{loc:?} stored raw");
    let slots: u64 = if loc.crosses() { 2 } else { 1 };
    inner.codec.note_read(slots);
    let mut slot = AlignedBuf::zeroed(slots as usize * PAGE_SIZE);
    inner.device.read_at(slot_start, &mut slot)?;
    let start = usize::from(loc.offset_bytes);
    let end = start + usize::from(loc.stored_bytes);
    let bytes = slot.get(start..end).ok_or_else(|| Error::CorruptPage {
        page_id: pid,
        reason: format!("map location {loc:?} runs past its slots"),
    })?;
    out.clear();
    out.extend_from_slice(bytes);
    Ok(())
}
