//! The out-of-place page store: every write-back batch is appended to an open zone with one
//! sequential device write per run, synced, then the page map is pointed at it; reads go through
//! the map. Page 0 (the superblock) alone stays at a fixed offset, written in place.
//!
//! Locks: `writer` serialises everything that changes the map or the device's zones (write
//! batches, frees, GC cycles, snapshots): appends to a zone then reach the device in order (ZNS
//! requires it) and GC sees no concurrent map change. `state` guards the metadata and is held
//! only for short, I/O-free sections, so reads proceed while a batch is being written.
use super::free::{free_header, FreePages};
use super::layout::{Layout, USER_GROUP};
use super::options::OutOfPlaceOptions;
use super::OutOfPlaceStats;
use crate::buffer::PageStore;
use crate::device::{AlignedBuf, Device, WriteOp, WritePurpose};
use crate::page::{PageBuf, PageId, PAGE_SIZE};
use crate::space::{io as space_io, snapshot, Location, Lsn, Space, SpaceError, SLOT_BYTES};
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Map lookups retried when GC moved the page while it was being read.
const READ_ATTEMPTS_MAX: usize = 16;

#[derive(Debug)]
pub(super) struct State {
    pub space: Space,
    pub free: FreePages,
    /// LSN of the last map change (commit, GC move, free). Store-local until the WAL logs map
    /// records: then these become WAL LSNs.
    pub map_lsn: Lsn,
    /// Every map change up to here is in a durable snapshot: zones whose pages moved out at or
    /// before it may be reused.
    pub durable_lsn: Lsn,
    /// The snapshot area the next snapshot goes to (the other holds the latest durable one).
    pub next_area: usize,
    pub snapshots: u64,
    pub snapshot_bytes: u64,
    pub gc_cycles: u64,
    pub gc_moved_pages: u64,
    pub zones_reset: u64,
}

#[derive(Debug)]
pub(super) struct Inner {
    pub device: Arc<dyn Device>,
    pub layout: Layout,
    pub options: OutOfPlaceOptions,
    pub state: Mutex<State>,
    pub writer: Mutex<()>,
    /// Background GC: the flag says "stop", the condvar wakes the thread.
    pub shutdown: Mutex<bool>,
    pub wake: Condvar,
    pub poisoned: AtomicBool,
}

/// The page store of `WriteMode::OutOfPlace`. See OUT_OF_PLACE.md beside this file.
#[derive(Debug)]
pub struct OutOfPlaceStore {
    pub(super) inner: Arc<Inner>,
    background: Option<std::thread::JoinHandle<()>>,
}

impl Inner {
    pub fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn lock_writer(&self) -> MutexGuard<'_, ()> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn check_poisoned(&self) -> Result<()> {
        if self.poisoned.load(Ordering::Relaxed) {
            return Err(Error::Poisoned);
        }
        Ok(())
    }
    /// Marks the store unusable after an I/O error left the device state unknown.
    pub fn poison<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            if !matches!(e, Error::OutOfSpace(_)) {
                self.poisoned.store(true, Ordering::Relaxed);
            }
        }
        r
    }

    /// Writes a snapshot of the map (every change up to `map_lsn`) to the older area, syncs,
    /// then releases the zones waiting for it and resets them. Caller holds `writer`, so the
    /// map cannot change meanwhile; all page data it points to was synced by its batch.
    pub fn write_snapshot(&self) -> Result<()> {
        let (bytes, free, lsn, area) = {
            let st = self.lock_state();
            let s = &st.space;
            (
                snapshot::encode(s.map(), st.map_lsn, s.zone_count(), s.slots_per_zone()),
                st.free.encode(st.map_lsn),
                st.map_lsn,
                st.next_area,
            )
        };
        let layout = &self.layout;
        assert!(bytes.len() as u64 <= layout.free_section_offset_bytes);
        assert!(layout.free_section_offset_bytes + free.len() as u64 <= layout.snapshot_area_bytes);
        let offset = layout.snapshot_offsets_bytes[area];
        let map_bytes = AlignedBuf::copy_of(&bytes);
        let free_bytes = AlignedBuf::copy_of(&free);
        space_io::write_snapshot(&*self.device, offset, &map_bytes)?;
        space_io::write_snapshot(
            &*self.device,
            offset + layout.free_section_offset_bytes,
            &free_bytes,
        )?;
        self.device.sync()?;
        {
            let mut st = self.lock_state();
            st.next_area = 1 - area;
            st.durable_lsn = lsn;
            st.snapshots += 1;
            st.snapshot_bytes += (map_bytes.len() + free_bytes.len()) as u64;
        }
        self.release_ready()
    }

    /// Resets (trim / ZNS reset) the zones whose moves are durable. Caller holds `writer`:
    /// nobody can open a released zone before its reset is done.
    pub fn release_ready(&self) -> Result<()> {
        let zones = {
            let mut st = self.lock_state();
            let durable = st.durable_lsn;
            let zones = st.space.release_ready(durable);
            st.zones_reset += zones.len() as u64;
            zones
        };
        if zones.is_empty() {
            return Ok(());
        }
        let st = self.lock_state();
        // The reset only needs the geometry; holding the state lock here keeps reads of the
        // map out for the few trims (no page read can target an empty zone anyway).
        space_io::reset_zones(&*self.device, &st.space, &zones)?;
        Ok(())
    }

    /// Reserves `n` slots for `purpose`, running GC or making moves durable as the space asks.
    /// Caller holds `writer`. `gc_allowed` is false inside GC (no nested cycles).
    pub fn reserve(
        &self,
        n: u32,
        group: u32,
        purpose: WritePurpose,
        gc_allowed: bool,
    ) -> Result<Vec<crate::space::SlotRun>> {
        let zone_count = self.layout.space.zone_count();
        // Bound: each retry follows a GC cycle that freed a zone or a snapshot that released
        // the waiting ones.
        for _ in 0..=2 * zone_count + 2 {
            let r = self.lock_state().space.reserve_batch(n, group, purpose);
            match r {
                Ok(runs) => return Ok(runs),
                Err(SpaceError::NeedsGc { .. }) if gc_allowed => {
                    if !super::gc::gc_cycle(self)? {
                        break;
                    }
                }
                Err(SpaceError::AwaitingDurability { .. }) => self.write_snapshot()?,
                Err(e) => return Err(e.into()),
            }
        }
        let st = self.lock_state();
        Err(SpaceError::OutOfSpace {
            needed_slots: u64::from(n),
            free_slots: u64::from(st.space.empty_zone_count())
                * u64::from(st.space.slots_per_zone()),
            live_slots: st.space.live_slots(),
            capacity_slots: st.space.capacity_slots(),
        }
        .into())
    }

    /// Appends `pages` (already sealed) to reserved zone space, syncs, and commits their map
    /// entries. Caller holds `writer`. The write is one `WriteOp` per run: a run is contiguous.
    pub fn append(
        &self,
        pages: &[(PageId, &PageBuf)],
        group: u32,
        purpose: WritePurpose,
        gc_allowed: bool,
        mut commit: impl FnMut(&mut State, PageId, Location, Lsn),
    ) -> Result<()> {
        assert!(!pages.is_empty());
        let runs = self.reserve(pages.len() as u32, group, purpose, gc_allowed)?;
        let mut bufs = Vec::with_capacity(runs.len());
        let mut targets = Vec::with_capacity(pages.len());
        let mut next = 0usize;
        for run in &runs {
            let mut buf = AlignedBuf::zeroed(run.slots as usize * PAGE_SIZE);
            for i in 0..run.slots as usize {
                let (pid, data) = pages[next + i];
                buf[i * PAGE_SIZE..(i + 1) * PAGE_SIZE].copy_from_slice(&data[..]);
                targets.push((pid, run.location(i as u32, PAGE_SIZE as u16)));
            }
            next += run.slots as usize;
            bufs.push(buf);
        }
        assert_eq!(next, pages.len());
        let written = {
            let st = self.lock_state();
            let ops: Vec<WriteOp<'_>> = runs
                .iter()
                .zip(&bufs)
                .map(|(run, buf)| WriteOp {
                    offset: st.space.run_offset_bytes(run),
                    data: &buf[..],
                    purpose,
                    placement: st.space.placement(run.zone),
                })
                .collect();
            drop(st);
            // Page data durable before the map points at it (000 sec. 6.2).
            self.device.write_batch(&ops).and_then(|()| self.device.sync())
        };
        let mut st = self.lock_state();
        if let Err(e) = written {
            for (_, loc) in &targets {
                st.space.abandon(*loc);
            }
            return Err(e.into());
        }
        for (pid, loc) in targets {
            st.map_lsn += 1;
            let lsn = st.map_lsn;
            commit(&mut st, pid, loc, lsn);
        }
        Ok(())
    }

    fn free_zones_low_for_background(&self) -> bool {
        let st = self.lock_state();
        !st.space.gc_satisfied()
    }
}

impl OutOfPlaceStore {
    /// Opens the store on `device` (the superblock at `data_offset_bytes`). A device whose
    /// superblock block is all zeros is fresh: empty map. Otherwise the newer valid of the two
    /// snapshots (map and free pages) is loaded, the zones rebuilt from it
    /// (`Space::rebuild_from_map`) and the empty ones reset. The superblock itself is the
    /// caller's to check.
    pub fn open(
        device: Arc<dyn Device>,
        data_offset_bytes: u64,
        options: OutOfPlaceOptions,
    ) -> Result<OutOfPlaceStore> {
        let layout = Layout::compute(device.capacity_bytes(), data_offset_bytes, &options)?;
        let mut sb = AlignedBuf::zeroed(PAGE_SIZE);
        device.read_at(layout.superblock_offset_bytes, &mut sb)?;
        let fresh = sb.iter().all(|b| *b == 0);
        let state = if fresh {
            State::new(Space::new(layout.space)?, FreePages::default(), 0)
        } else {
            Self::recover(&*device, &layout)?
        };
        let inner = Arc::new(Inner {
            device,
            layout,
            options,
            state: Mutex::new(state),
            writer: Mutex::new(()),
            shutdown: Mutex::new(false),
            wake: Condvar::new(),
            poisoned: AtomicBool::new(false),
        });
        if fresh {
            // Both areas get an empty snapshot, so a stale one from an earlier database on the
            // same device can never be taken for ours.
            let _w = inner.lock_writer();
            inner.write_snapshot()?;
            inner.write_snapshot()?;
        }
        let background = if options.background_gc {
            let i = inner.clone();
            Some(
                std::thread::Builder::new()
                    .name("wafer-gc".into())
                    .spawn(move || super::gc::background(&i))
                    .map_err(|e| Error::InvalidOptions(format!("cannot start GC thread: {e}")))?,
            )
        } else {
            None
        };
        Ok(OutOfPlaceStore { inner, background })
    }

    /// The newer of the two areas whose map and free-page sections both decode; map -> zones.
    fn recover(device: &dyn Device, layout: &Layout) -> Result<State> {
        let mut best: Option<(usize, snapshot::MapSnapshot, FreePages)> = None;
        let mut errors = Vec::new();
        for area in 0..2 {
            match Self::read_area(device, layout, area) {
                Ok((snap, free)) => {
                    if best.as_ref().is_none_or(|(_, b, _)| snap.header.lsn > b.header.lsn) {
                        best = Some((area, snap, free));
                    }
                }
                Err(e) => errors.push(format!("area {area}: {e}")),
            }
        }
        let Some((area, snap, free)) = best else {
            return Err(Error::Corrupt(format!("no valid map snapshot: {}", errors.join("; "))));
        };
        let lsn = snap.header.lsn;
        let (space, to_reset) = Space::rebuild_from_map(layout.space, snap.map)?;
        space_io::reset_zones(device, &space, &to_reset)?;
        let mut st = State::new(space, free, lsn);
        st.next_area = 1 - area;
        Ok(st)
    }

    fn read_area(
        device: &dyn Device,
        layout: &Layout,
        area: usize,
    ) -> Result<(snapshot::MapSnapshot, FreePages)> {
        let offset = layout.snapshot_offsets_bytes[area];
        let (zones, slots) = (layout.space.zone_count(), layout.space.slots_per_zone());
        let snap = space_io::read_snapshot(device, offset, zones, slots)?;
        if snap.map.pid_span() > layout.page_capacity {
            return Err(Error::Corrupt(format!(
                "map snapshot spans {} page ids, the device holds {}",
                snap.map.pid_span(),
                layout.page_capacity
            )));
        }
        let len = layout.snapshot_area_bytes - layout.free_section_offset_bytes;
        let mut bytes = AlignedBuf::zeroed(len as usize);
        device.read_at(offset + layout.free_section_offset_bytes, &mut bytes)?;
        let free = FreePages::decode(&bytes, snap.header.lsn, layout.page_capacity)
            .map_err(Error::Corrupt)?;
        if let Some(pid) = free.pids().find(|p| snap.map.get(*p).is_some()) {
            return Err(Error::Corrupt(format!("free page {pid} is also mapped")));
        }
        Ok((snap, free))
    }

    pub fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    pub fn stats(&self) -> OutOfPlaceStats {
        let st = self.inner.lock_state();
        OutOfPlaceStats::of(&st)
    }

    /// Runs GC cycles until the free-zone target is met or no victim remains (what the
    /// background thread does; exposed for tests and tools).
    pub fn gc_until_satisfied(&self) -> Result<u32> {
        let _w = self.inner.lock_writer();
        let r = super::gc::gc_until_satisfied(&self.inner);
        self.inner.poison(r)
    }

    /// Checks the space manager's invariants and that every free page is unmapped.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let st = self.inner.lock_state();
        st.space.check_invariants()?;
        if let Some(pid) = st.free.pids().find(|p| st.space.location(*p).is_some()) {
            return Err(format!("free page {pid} is still mapped"));
        }
        Ok(())
    }

    fn write_pages(&self, pages: &[(PageId, &PageBuf)], purpose: WritePurpose) -> Result<()> {
        let inner = &self.inner;
        let _w = inner.lock_writer();
        let mut data: Vec<(PageId, &PageBuf)> = Vec::with_capacity(pages.len());
        for (pid, page) in pages {
            assert!(*pid < inner.layout.page_capacity, "page {pid} beyond the page capacity");
            if *pid == crate::page::meta::META_PAGE_ID {
                let buf = AlignedBuf::copy_of(&page[..]);
                inner.device.write_batch(&[WriteOp {
                    offset: inner.layout.superblock_offset_bytes,
                    data: &buf,
                    purpose,
                    placement: crate::device::Placement::None,
                }])?;
            } else if let Some(h) = free_header(page) {
                let mut st = inner.lock_state();
                st.map_lsn += 1;
                let lsn = st.map_lsn;
                st.space.free_pid(*pid, lsn);
                st.free.insert(*pid, h);
            } else {
                data.push((*pid, *page));
            }
        }
        if data.is_empty() {
            return Ok(());
        }
        if inner.lock_state().space.needs_gc() {
            super::gc::gc_until_satisfied(inner)?;
        }
        inner.append(&data, USER_GROUP, purpose, true, |st, pid, loc, lsn| {
            st.space.commit(pid, loc, lsn);
            st.free.remove(pid);
        })?;
        if inner.options.background_gc && inner.free_zones_low_for_background() {
            inner.wake.notify_one();
        }
        Ok(())
    }
}

impl State {
    fn new(space: Space, free: FreePages, lsn: Lsn) -> State {
        State {
            space,
            free,
            map_lsn: lsn,
            durable_lsn: lsn,
            next_area: 0,
            snapshots: 0,
            snapshot_bytes: 0,
            gc_cycles: 0,
            gc_moved_pages: 0,
            zones_reset: 0,
        }
    }
}

impl Drop for OutOfPlaceStore {
    fn drop(&mut self) {
        *self.inner.shutdown.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.inner.wake.notify_all();
        if let Some(h) = self.background.take() {
            let _ = h.join();
        }
    }
}

impl PageStore for OutOfPlaceStore {
    fn page_capacity(&self) -> u64 {
        self.inner.layout.page_capacity
    }

    fn read_page(&self, pid: PageId, buf: &mut PageBuf) -> Result<()> {
        let inner = &self.inner;
        if pid == crate::page::meta::META_PAGE_ID {
            return Ok(inner.device.read_at(inner.layout.superblock_offset_bytes, buf)?);
        }
        for _ in 0..READ_ATTEMPTS_MAX {
            let (loc, offset) = {
                let st = inner.lock_state();
                match st.space.location(pid) {
                    Some(loc) => (loc, st.space.offset_bytes(loc)),
                    None => {
                        if !st.free.read(pid, buf) {
                            // Never written: zeros, which the pool's verify refuses.
                            buf.fill(0);
                        }
                        return Ok(());
                    }
                }
            };
            let r = inner.device.read_at(offset, buf);
            // GC may have moved the page and reset its old zone during the read: the result
            // counts only if the map still points where we read.
            if inner.lock_state().space.location(pid) == Some(loc) {
                return Ok(r?);
            }
        }
        Err(Error::Corrupt(format!("page {pid} kept moving while it was read")))
    }

    fn write_batch(&self, pages: &[(PageId, &PageBuf)], purpose: WritePurpose) -> Result<()> {
        self.inner.check_poisoned()?;
        if pages.is_empty() {
            return Ok(());
        }
        let r = self.write_pages(pages, purpose);
        self.inner.poison(r)
    }

    fn sync(&self) -> Result<()> {
        Ok(self.inner.device.sync()?)
    }

    fn checkpoint(&self) -> Result<()> {
        self.inner.check_poisoned()?;
        let _w = self.inner.lock_writer();
        let r = self.inner.write_snapshot();
        self.inner.poison(r)
    }

    fn collect_garbage(&self, every_zone: bool) -> Result<u32> {
        self.inner.check_poisoned()?;
        let _w = self.inner.lock_writer();
        let r = if every_zone {
            super::gc::gc_every_zone(&self.inner)
        } else {
            super::gc::gc_until_satisfied(&self.inner)
        };
        self.inner.poison(r)
    }

    fn out_of_place_stats(&self) -> Option<OutOfPlaceStats> {
        Some(self.stats())
    }
}

const _: () = assert!(SLOT_BYTES == PAGE_SIZE as u64);
