//! The out-of-place page store: every write-back batch is appended to an open zone with one
//! sequential device write per run, synced, then the page map is pointed at it; reads go through
//! the map. Page 0 (the superblock) alone stays at a fixed offset, written in place.
//!
//! Locks: `writer` serialises everything that changes the map or the device's zones (write
//! batches, frees, GC cycles, snapshots): appends to a zone then reach the device in order (ZNS
//! requires it) and GC sees no concurrent map change. `state` guards the metadata and is held
//! only for short, I/O-free sections, so reads proceed while a batch is being written.
use super::free::{free_header, FreePages};
use super::journal;
use super::layout::{Layout, USER_GROUP};
use super::options::OutOfPlaceOptions;
use super::OutOfPlaceStats;
use crate::buffer::{GcCopyCounts, GcPageCache, PageStore};
use crate::device::{AlignedBuf, Device, WriteOp, WritePurpose};
use crate::page::{self, PageBuf, PageId, PAGE_SIZE};
use crate::space::{io as space_io, snapshot, Location, Lsn, Space, SpaceError, SLOT_BYTES};
use crate::wal::{Durability, Lsn as WalLsn, Wal};
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};

/// Map lookups retried when GC moved the page while it was being read.
const READ_ATTEMPTS_MAX: usize = 16;

#[derive(Debug)]
pub(super) struct State {
    pub space: Space,
    pub free: FreePages,
    /// Journal LSN of the last map change (commit, GC move, free).
    pub map_lsn: Lsn,
    /// Every map change up to here is durable (journal flushed or in a durable snapshot):
    /// zones whose pages moved out at or before it may be reused.
    pub durable_lsn: Lsn,
    /// Journal LSN of the snapshot in each area (0: none): the journal is kept from the older.
    pub area_lsn: [Lsn; 2],
    /// The snapshot area the next snapshot goes to (the other holds the latest durable one).
    pub next_area: usize,
    pub snapshots: u64,
    pub snapshot_bytes: u64,
    pub gc_cycles: u64,
    pub gc_moved_pages: u64,
    /// Where GC's copies came from (pool frames, device into the pool, device only).
    pub gc_sources: GcCopyCounts,
    pub zones_reset: u64,
    pub journal_flushes: u64,
}

#[derive(Debug)]
pub(super) struct Inner {
    pub device: Arc<dyn Device>,
    pub layout: Layout,
    pub options: OutOfPlaceOptions,
    /// Map changes, logged after the data they point to is synced (journal.rs).
    pub journal: Wal,
    pub state: Mutex<State>,
    pub writer: Mutex<()>,
    /// Background GC: the flag says "stop", the condvar wakes the thread.
    pub shutdown: Mutex<bool>,
    pub wake: Condvar,
    pub poisoned: AtomicBool,
    /// The buffer pool GC reads through, bound after the pool is built (`attach_gc_cache`);
    /// unset (tests of the store alone) or gone (pool dropped): GC reads into its own buffer.
    pub gc_cache: OnceLock<Weak<dyn GcPageCache>>,
}

/// The page store of `WriteMode::OutOfPlace`. See docs/design.md §9.
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

    /// Writes a snapshot of the map and the free pages to the older area at a journal mark,
    /// syncs, truncates the journal before the other area's snapshot (kept for a torn write of
    /// this one), then releases the zones waiting for durability. Caller holds `writer`, so
    /// the map cannot change meanwhile; all page data it points to was synced by its batch.
    pub fn write_snapshot(&self) -> Result<()> {
        let (bytes, free, lsn, area) = {
            let mut st = self.lock_state();
            st.snapshots += 1;
            let mark = self.journal.append(journal::KIND_MARK, &st.snapshots.to_le_bytes())?;
            // Durable now: a later snapshot truncates the journal at this mark, and the log
            // can be truncated only where it is durable.
            self.journal.commit(mark, Durability::Sync)?;
            let mark = mark.0;
            let s = &st.space;
            (
                snapshot::encode(s.map(), mark, s.zone_count(), s.slots_per_zone()),
                st.free.encode(mark),
                mark,
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
        let keep = {
            let mut st = self.lock_state();
            st.next_area = 1 - area;
            st.area_lsn[area] = lsn;
            // Every change so far is in this durable snapshot.
            st.durable_lsn = st.durable_lsn.max(st.map_lsn);
            st.snapshot_bytes += (map_bytes.len() + free_bytes.len()) as u64;
            st.area_lsn[1 - area]
        };
        if keep > self.journal.start_lsn().0 {
            self.journal.truncate_before(WalLsn(keep))?;
        }
        self.release_ready()
    }

    /// Makes every logged map change durable (one journal flush), then releases the zones
    /// that waited for it.
    pub fn make_durable(&self) -> Result<()> {
        let lsn = self.lock_state().map_lsn;
        if lsn > self.lock_state().durable_lsn {
            self.journal.commit(WalLsn(lsn), Durability::Sync)?;
            let mut st = self.lock_state();
            st.durable_lsn = st.durable_lsn.max(lsn);
            st.journal_flushes += 1;
        }
        self.release_ready()
    }

    /// A snapshot once a quarter of the journal was written since the last one: bounds replay
    /// and keeps the journal (held from the older snapshot) under half full.
    pub fn maybe_snapshot(&self) -> Result<()> {
        let last = {
            let st = self.lock_state();
            st.area_lsn[1 - st.next_area]
        };
        if self.journal.next_lsn().0.saturating_sub(last) >= self.layout.journal_bytes / 4 {
            self.write_snapshot()?;
        }
        Ok(())
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

    /// The pool GC reads through, if bound and alive.
    pub fn gc_cache(&self) -> Option<Arc<dyn GcPageCache>> {
        self.gc_cache.get().and_then(Weak::upgrade)
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
                Err(SpaceError::AwaitingDurability { .. }) => self.make_durable()?,
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
    /// entries. Caller holds `writer`. The write is one sequential `WriteOp` per run (a run is
    /// contiguous), split only where the pages' purpose changes.
    /// `gc_from`: the pages' old locations when GC moves them (a page that moved meanwhile is
    /// not moved again: its slot is abandoned and nothing is logged). `new_versions` (GC only,
    /// else empty): the pages whose copy is their dirty in-memory version; their bytes count as
    /// `UserEviction`, the write-back they replace, the others as `purpose`. Ok(true): every
    /// page's map entry now points at its new copy.
    pub fn append(
        &self,
        pages: &[(PageId, &PageBuf)],
        group: u32,
        purpose: WritePurpose,
        gc_allowed: bool,
        gc_from: Option<&[Location]>,
        new_versions: &[bool],
    ) -> Result<bool> {
        assert!(gc_from.is_none_or(|f| f.len() == pages.len()));
        assert!(
            new_versions.is_empty() || (new_versions.len() == pages.len() && gc_from.is_some())
        );
        assert!(!pages.is_empty());
        let page_purpose = |i: usize| match new_versions.get(i) {
            Some(true) => WritePurpose::UserEviction,
            _ => purpose,
        };
        let runs = self.reserve(pages.len() as u32, group, purpose, gc_allowed)?;
        let user_versions = new_versions.iter().filter(|&&n| n).count();
        if user_versions > 0 {
            self.lock_state().space.reclassify_issue(
                purpose,
                WritePurpose::UserEviction,
                user_versions as u32,
            );
        }
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
            let mut ops: Vec<WriteOp<'_>> = Vec::with_capacity(runs.len());
            let mut first_page = 0usize;
            for (run, buf) in runs.iter().zip(&bufs) {
                let offset = st.space.run_offset_bytes(run);
                let placement = st.space.placement(run.zone);
                let mut start = 0usize;
                // Bound: one op per stretch of equal purpose, at most one per page of the run.
                for end in 1..=run.slots as usize {
                    let here = page_purpose(first_page + start);
                    if end < run.slots as usize && page_purpose(first_page + end) == here {
                        continue;
                    }
                    ops.push(WriteOp {
                        offset: offset + (start * PAGE_SIZE) as u64,
                        data: &buf[start * PAGE_SIZE..end * PAGE_SIZE],
                        purpose: here,
                        placement,
                    });
                    start = end;
                }
                first_page += run.slots as usize;
            }
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
        let mut logged: Result<bool> = Ok(true);
        for (i, (pid, loc)) in targets.into_iter().enumerate() {
            let moved = gc_from.is_some_and(|f| st.space.location(pid) != Some(f[i]));
            if moved || logged.is_err() {
                st.space.abandon(loc);
                if moved {
                    logged = logged.map(|_| false);
                }
                continue;
            }
            // The data is synced: now the record may become durable at any time.
            match self.journal.append(journal::KIND_SET, &journal::set_payload(pid, loc)) {
                Ok(lsn) => {
                    st.map_lsn = lsn.0;
                    st.space.commit(pid, loc, lsn.0);
                    st.free.remove(pid);
                }
                Err(e) => {
                    st.space.abandon(loc);
                    logged = Err(e.into());
                }
            }
        }
        logged
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
        if device.zoned().is_some() {
            // The superblock and the snapshot areas are rewritten in place, which a zone
            // refuses; they need a conventional region, which the emulated ZNS lacks.
            return Err(Error::InvalidOptions(
                "out-of-place mode on a zoned device needs a conventional region for its \
                 superblock and map snapshots; not supported yet"
                    .into(),
            ));
        }
        let layout = Layout::compute(device.capacity_bytes(), data_offset_bytes, &options)?;
        let mut sb = AlignedBuf::zeroed(PAGE_SIZE);
        device.read_at(layout.superblock_offset_bytes, &mut sb)?;
        let fresh = sb.iter().all(|b| *b == 0);
        let slice: Arc<dyn Device> = Arc::new(journal::SliceDevice::new(
            device.clone(),
            layout.journal_offset_bytes,
            layout.journal_bytes,
        ));
        let wal_options = journal::wal_options(layout.journal_bytes);
        let (state, journal) = if fresh {
            let journal = Wal::create(slice, wal_options)?;
            let lsn = journal.next_lsn().0;
            (State::new(Space::new(layout.space)?, FreePages::default(), lsn), journal)
        } else {
            Self::recover(&*device, slice, &layout)?
        };
        let inner = Arc::new(Inner {
            device,
            layout,
            options,
            journal,
            state: Mutex::new(state),
            writer: Mutex::new(()),
            shutdown: Mutex::new(false),
            wake: Condvar::new(),
            poisoned: AtomicBool::new(false),
            gc_cache: OnceLock::new(),
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

    /// The newer of the two areas whose map and free-page sections both decode, the journal
    /// replayed from its mark, then map -> zones (empty ones reset).
    fn recover(
        device: &dyn Device,
        journal_device: Arc<dyn Device>,
        layout: &Layout,
    ) -> Result<(State, Wal)> {
        let (map, free, journal, area, area_lsn) =
            Self::recover_map(device, journal_device, layout)?;
        let (space, to_reset) = Space::rebuild_from_map(layout.space, map)?;
        space_io::reset_zones(device, &space, &to_reset)?;
        let lsn = journal.next_lsn().0;
        let mut st = State::new(space, free, lsn);
        st.next_area = 1 - area;
        st.area_lsn = area_lsn;
        Ok((st, journal))
    }

    /// Snapshot + journal: the recovered map and free pages, the journal ready to append, the
    /// area used and both areas' snapshot LSNs (0 for an invalid one).
    #[allow(clippy::type_complexity)]
    fn recover_map(
        device: &dyn Device,
        journal_device: Arc<dyn Device>,
        layout: &Layout,
    ) -> Result<(crate::space::PageMap, FreePages, Wal, usize, [Lsn; 2])> {
        let mut best: Option<(usize, snapshot::MapSnapshot, FreePages)> = None;
        let mut area_lsn = [0; 2];
        let mut errors = Vec::new();
        for (area, lsn) in area_lsn.iter_mut().enumerate() {
            match Self::read_area(device, layout, area) {
                Ok((snap, free)) => {
                    *lsn = snap.header.lsn;
                    if best.as_ref().is_none_or(|(_, b, _)| snap.header.lsn > b.header.lsn) {
                        best = Some((area, snap, free));
                    }
                }
                Err(e) => errors.push(format!("area {area}: {e}")),
            }
        }
        let Some((area, snap, mut free)) = best else {
            return Err(Error::Corrupt(format!("no valid map snapshot: {}", errors.join("; "))));
        };
        let mut map = snap.map;
        let journal = journal::replay(
            journal_device,
            journal::wal_options(layout.journal_bytes),
            snap.header.lsn,
            &mut map,
            &mut free,
            layout.page_capacity,
        )?;
        Ok((map, free, journal, area, area_lsn))
    }

    /// The page map a crashed or closed device recovers to (tests and tools: no store opened,
    /// nothing reset).
    pub fn recovered_map(
        device: Arc<dyn Device>,
        data_offset_bytes: u64,
        options: &OutOfPlaceOptions,
    ) -> Result<crate::space::PageMap> {
        let layout = Layout::compute(device.capacity_bytes(), data_offset_bytes, options)?;
        let slice: Arc<dyn Device> = Arc::new(journal::SliceDevice::new(
            device.clone(),
            layout.journal_offset_bytes,
            layout.journal_bytes,
        ));
        Ok(Self::recover_map(&*device, slice, &layout)?.0)
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
        // Before the FREE records too: a run of batches holding only freed pages (deleting a
        // lot) would otherwise fill the journal without ever reaching a snapshot.
        inner.maybe_snapshot()?;
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
                // The allocator links a free page only to a page id it handed out (or 0);
                // recovery refuses anything else, so it must never reach the journal.
                assert!(
                    page::aux(page) < inner.layout.page_capacity,
                    "free page {pid} links to page {} beyond the page capacity",
                    page::aux(page)
                );
                let mut st = inner.lock_state();
                let payload = journal::free_payload(*pid, page::aux(page), page::lsn(page));
                let lsn = inner.journal.append(journal::KIND_FREE, &payload)?.0;
                st.map_lsn = lsn;
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
        inner.append(&data, USER_GROUP, purpose, true, None, &[])?;
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
            area_lsn: [0, 0],
            next_area: 0,
            snapshots: 0,
            snapshot_bytes: 0,
            gc_cycles: 0,
            gc_moved_pages: 0,
            gc_sources: GcCopyCounts::default(),
            zones_reset: 0,
            journal_flushes: 0,
        }
    }
}

impl Drop for OutOfPlaceStore {
    fn drop(&mut self) {
        *self.inner.shutdown.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.inner.wake.notify_all();
        if let Some(h) = self.background.take() {
            // The GC thread may hold the last reference to the pool (an upgraded `gc_cache`),
            // which owns this store: then this drop runs on that thread, which must not join
            // itself; it sees `shutdown` and returns once its cycle ends.
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
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

    fn attach_gc_cache(&self, cache: Weak<dyn GcPageCache>) {
        // Bound once per open; a second call would be a wiring bug, and the first pool wins.
        let bound = self.inner.gc_cache.set(cache).is_ok();
        debug_assert!(bound, "GC cache bound twice");
    }

    fn out_of_place_stats(&self) -> Option<OutOfPlaceStats> {
        Some(self.stats())
    }
}

const _: () = assert!(SLOT_BYTES == PAGE_SIZE as u64);
