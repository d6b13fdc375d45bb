//! A file that grows: zones added at the end of the data area when the page ids run out
//! (`PageStore::grow_to`, asked by the allocator). The layout was made at creation for the
//! largest size the file may reach (`Layout::compute_growable`): snapshot areas, map journal
//! and page-id bound never move, so growing is extending the file and adding Empty zones.
//!
//! Order: the device is extended durably first, then the zones join the space under
//! `writer` (no append or GC in flight), then the page capacity is raised. A crash after the
//! extension leaves a larger file with empty zones, which a reopen finds as such; no page id
//! past the old capacity is handed out before the zones that hold it exist on the device.
use super::layout::Layout;
use super::state::Inner;
use crate::pagestore::growth_refused;
use crate::{OutOfSpaceError, Result};
use std::sync::atomic::Ordering;

/// Extends `device` to hold `layout`'s zones: a file created smaller than the fewest zones its
/// layout needs grows to them at open.
pub(super) fn hold_zones(device: &dyn crate::device::Device, layout: &Layout) -> Result<()> {
    let bytes = layout.device_bytes_for(layout.space.zone_count());
    if bytes <= device.capacity_bytes() {
        return Ok(());
    }
    device.grow_to(bytes).map_err(|e| growth_refused(bytes, e))?;
    assert!(device.capacity_bytes() >= bytes, "the device grew short of its zones");
    Ok(())
}

/// Grows the store until its page capacity reaches `pages`; returns the new capacity.
pub(super) fn add_zones(inner: &Inner, pages: u64) -> Result<u64> {
    let layout = &inner.layout;
    if inner.layout_bytes == 0 {
        let held_pages = inner.page_capacity();
        return Err(OutOfSpaceError::LayoutFixed { needed_pages: pages, held_pages }.into());
    }
    let _w = inner.lock_writer();
    let held = inner.page_capacity();
    if pages <= held {
        return Ok(held);
    }
    let Some(wanted) = layout.zones_for_pages(pages) else {
        let max_bytes = inner.layout_bytes;
        return Err(OutOfSpaceError::LayoutLimit { needed_pages: pages, max_bytes }.into());
    };
    let zones = wanted.max(inner.lock_state().space.zone_count());
    let bytes = layout.device_bytes_for(zones);
    if bytes > inner.device.capacity_bytes() {
        inner.device.grow_to(bytes).map_err(|e| growth_refused(bytes, e))?;
    }
    let sized = layout.with_zone_count(zones)?;
    assert!(sized.page_capacity >= pages, "{zones} zones hold {} pages", sized.page_capacity);
    inner.lock_state().space.grow(sized.space)?;
    inner.page_capacity.fetch_max(sized.page_capacity, Ordering::AcqRel);
    tracing::info!(zones, pages = sized.page_capacity, "data file grown");
    Ok(inner.page_capacity())
}
