//! The out-of-place page store's entry points: open and recovery, reads through the map, and
//! the write entry point, which asks the placement policy for a plan and hands it to the
//! orchestrator (orchestrate.rs) with the append executor (append.rs) and GC (gc.rs) as its
//! steps. Page 0 (the superblock) alone stays at a fixed offset, written in place. Locks and
//! shared state: state.rs.
use super::append::Append;
use super::append_steps::AppendSteps;
use super::free::{free_header, FreePages};
use super::gc::GcLoop;
use super::journal;
use super::layout::Layout;
use super::options::OutOfPlaceOptions;
use super::orchestrate::{self, Collect, Durable, Outcome};
use super::state::{Inner, State};
use super::OutOfPlaceStats;
use crate::device::{AlignedBuf, Device, WriteOp, WritePurpose};
use crate::page::{self, PageBuf, PageId, PAGE_SIZE};
use crate::pagestore::{GcPageCache, LogicalBytes, LogicalCounter, PageStore};
use crate::space::{io as space_io, snapshot, Lsn, PageDesc, Space, SpaceError, SLOT_BYTES};
use crate::wal::Wal;
use crate::{Corruption, Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};

/// Map lookups retried when GC moved the page while it was being read.
const READ_ATTEMPTS_MAX: usize = 16;

/// The page store of `WriteMode::OutOfPlace`. See docs/internals/oop.md.
#[derive(Debug)]
pub struct OutOfPlaceStore {
    pub(super) inner: Arc<Inner>,
    background: Option<std::thread::JoinHandle<()>>,
}

/// What recovery reads back before the space is rebuilt.
struct Recovered {
    map: crate::space::PageMap,
    free: FreePages,
    journal: Wal,
    area: usize,
    area_lsn: [Lsn; 2],
    nowa: Option<crate::space::snapshot::NoWaSnapshot>,
}

impl OutOfPlaceStore {
    /// Opens the store on `device` (the superblock at `data_offset_bytes`). A device whose
    /// superblock block is all zeros is fresh: empty map. Otherwise the newer valid of the two
    /// snapshots (map and free pages) is loaded, the zones rebuilt from it
    /// (`Space::rebuild_from_map`) and the empty ones reset. The superblock itself is the
    /// caller's to check.
    /// `journal`: the map journal's device (the log device's tail, [`super::journal_bytes_on_log`]);
    /// None: a region of `device`.
    pub fn open(
        device: Arc<dyn Device>,
        data_offset_bytes: u64,
        options: OutOfPlaceOptions,
        journal: Option<Arc<dyn Device>>,
    ) -> Result<OutOfPlaceStore> {
        // The superblock sits at `data_offset_bytes`: a page boundary (`check_options`).
        debug_assert!(data_offset_bytes.is_multiple_of(PAGE_SIZE as u64), "{data_offset_bytes}");
        Self::open_growable(device, data_offset_bytes, options, journal, None)
    }

    /// As [`OutOfPlaceStore::open`], for a file that may grow to `max_file_bytes`: a fresh
    /// device gets a layout sized for that ([`super::layout::layout_bytes_on`]), an existing
    /// one the layout its superblock records, and [`PageStore::grow_to`] adds zones.
    pub fn open_growable(
        device: Arc<dyn Device>,
        data_offset_bytes: u64,
        options: OutOfPlaceOptions,
        journal: Option<Arc<dyn Device>>,
        max_file_bytes: Option<u64>,
    ) -> Result<OutOfPlaceStore> {
        let options = options.for_device(&device.capabilities());
        let layout_bytes =
            super::layout::layout_bytes_on(&*device, data_offset_bytes, max_file_bytes)?;
        let (layout, slice) =
            Self::layout_on(&device, data_offset_bytes, &options, journal, layout_bytes)?;
        // `layout_bytes_on` read the superblock at `data_offset_bytes`: the layout must keep it
        // there, or the layout was sized from another block's bytes.
        debug_assert_eq!(layout.superblock_offset_bytes, data_offset_bytes, "superblock moved");
        super::grow::hold_zones(&*device, &layout)?;
        let mut sb = AlignedBuf::zeroed(PAGE_SIZE);
        device.read_at(layout.superblock_offset_bytes, &mut sb)?;
        let fresh = sb.iter().all(|b| *b == 0);
        let wal_options = journal::wal_options(layout.journal_bytes, layout.journal_on_data);
        let (state, journal) = if fresh {
            let journal = Wal::create(slice, wal_options)?;
            let lsn = journal.next_lsn().0;
            let space = Space::new(layout.space)?;
            space_io::reset_written_zones(&*device, &space)?;
            (State::new(space, FreePages::default(), lsn), journal)
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
            logical: LogicalCounter::default(),
            codec: super::codec::CodecCounters::default(),
            stored_cache: Default::default(),
            page_capacity: AtomicU64::new(layout.page_capacity),
            layout_bytes,
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
                    .map_err(|source| Error::Spawn { thread: "background_gc", source })?,
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
        let Recovered { map, free, journal, area, area_lsn, nowa } =
            Self::recover_map(device, journal_device, layout)?;
        let (mut space, to_reset) = Space::rebuild_from_map(layout.space, map)?;
        if let Some(nowa) = nowa {
            space.restore_nowa(&nowa);
        }
        space_io::reset_zones(device, &space, &to_reset)?;
        space_io::finish_zones(device, &space)?;
        let lsn = journal.next_lsn().0;
        let mut st = State::new(space, free, lsn);
        // Snapshots alternate between the two areas: the next goes to the one not loaded.
        debug_assert!(area < 2, "snapshot area {area}");
        st.next_area = 1 - area;
        st.area_lsn = area_lsn;
        Ok((st, journal))
    }

    /// Snapshot + journal: the recovered map and free pages, the journal ready to append, the
    /// area used, both areas' snapshot LSNs (0 for an invalid one) and NoWA's saved model.
    fn recover_map(
        device: &dyn Device,
        journal_device: Arc<dyn Device>,
        layout: &Layout,
    ) -> Result<Recovered> {
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
            return Err(Corruption::NoMapSnapshot { areas: errors }.into());
        };
        let (mut map, nowa) = (snap.map, snap.nowa);
        let journal = journal::replay(
            journal_device,
            journal::wal_options(layout.journal_bytes, layout.journal_on_data),
            snap.header.lsn,
            &mut map,
            &mut free,
            layout.page_capacity,
        )?;
        // Map LSNs only ascend: the journal resumes at or after the snapshot it replayed from.
        assert!(journal.next_lsn().0 >= snap.header.lsn, "the journal resumes before its snapshot");
        Ok(Recovered { map, free, journal, area, area_lsn, nowa })
    }

    /// The page map a crashed or closed device recovers to (tests and tools: no store opened,
    /// nothing reset).
    pub fn recovered_map(
        device: Arc<dyn Device>,
        data_offset_bytes: u64,
        options: &OutOfPlaceOptions,
        journal: Option<Arc<dyn Device>>,
    ) -> Result<crate::space::PageMap> {
        let options = options.for_device(&device.capabilities());
        let layout_bytes = super::layout::layout_bytes_on(&*device, data_offset_bytes, None)?;
        let (layout, slice) =
            Self::layout_on(&device, data_offset_bytes, &options, journal, layout_bytes)?;
        let map = Self::recover_map(&*device, slice, &layout)?.map;
        // The snapshot's span and the journal's ids were refused past the layout's page ids:
        // callers index pages by what this map holds.
        let (span, pages) = (map.pid_span(), layout.page_capacity);
        debug_assert!(span <= pages, "a recovered map of {span} page ids, {pages} in the layout");
        Ok(map)
    }

    /// The layout on `device` (made for `layout_bytes` when not 0: a file that grows) and the
    /// map journal's device: `journal` when given (its whole capacity), else the layout's
    /// region of `device`.
    fn layout_on(
        device: &Arc<dyn Device>,
        data_offset_bytes: u64,
        options: &OutOfPlaceOptions,
        journal: Option<Arc<dyn Device>>,
        layout_bytes: u64,
    ) -> Result<(Layout, Arc<dyn Device>)> {
        let capacity = device.capacity_bytes();
        super::device_append::check_device(options.compression, &device.capabilities())?;
        let zones = device.capabilities().zones;
        let on_data = journal.is_none();
        let mut layout = match layout_bytes {
            0 => Layout::compute_for(capacity, data_offset_bytes, options, on_data, zones)?,
            l => Layout::compute_growable(capacity, l, data_offset_bytes, options, on_data)?,
        };
        let journal: Arc<dyn Device> = match journal {
            Some(j) => {
                layout.journal_offset_bytes = 0;
                layout.journal_bytes = j.capacity_bytes();
                j
            }
            None => Arc::new(journal::SliceDevice::new(
                device.clone(),
                layout.journal_offset_bytes,
                layout.journal_bytes,
            )),
        };
        if layout.journal_bytes < 4 * SLOT_BYTES {
            let bytes = layout.journal_bytes;
            return Err(crate::OptionsError::JournalTooSmall { bytes }.into());
        }
        // Snapshot marks and trims are sized by the layout's figure: it must be the device's.
        debug_assert_eq!(journal.capacity_bytes(), layout.journal_bytes, "journal size");
        Ok((layout, journal))
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
            let (span, pages) = (snap.map.pid_span(), layout.page_capacity);
            return Err(Corruption::MapSnapshotSpan { span, pages }.into());
        }
        let len = layout.snapshot_area_bytes - layout.free_section_offset_bytes;
        let mut bytes = AlignedBuf::zeroed(len as usize);
        device.read_at(offset + layout.free_section_offset_bytes, &mut bytes)?;
        let free = FreePages::decode(&bytes, snap.header.lsn, layout.page_capacity)
            .map_err(Corruption::FreePages)?;
        if let Some(pid) = free.pids().find(|p| snap.map.get(*p).is_some()) {
            return Err(Corruption::FreePageMapped { page_id: pid }.into());
        }
        // `FreePages::decode` refused ids past the layout: recovery indexes the map by them.
        debug_assert!(free.pids().all(|p| p > 0 && p < layout.page_capacity), "free page id");
        Ok((snap, free))
    }

    pub fn layout(&self) -> &Layout {
        // The layout is the one made at open; growth only raises the page capacity past it.
        debug_assert!(self.inner.layout.page_capacity <= self.inner.page_capacity());
        &self.inner.layout
    }

    pub fn stats(&self) -> OutOfPlaceStats {
        let st = self.inner.lock_state();
        let stats = super::stats_of(&self.inner, &st);
        // Counted under one lock: each kind of zone is among the zones.
        debug_assert!(
            stats.zones_empty <= stats.zone_count && stats.zones_open <= stats.zone_count,
            "{stats:?}"
        );
        stats
    }

    /// Runs GC cycles until the free-zone target is met or no victim remains (what the
    /// background thread does; exposed for tests and tools).
    pub fn gc_until_satisfied(&self) -> Result<u32> {
        let _w = self.inner.lock_writer();
        let r = super::gc::gc_until_satisfied(&self.inner);
        // The orchestrator's bound: a cycle per zone at most (more would be GC feeding on itself).
        debug_assert!(
            r.as_ref().map_or(true, |c| *c <= self.inner.lock_state().space.zone_count()),
            "{r:?} cycles"
        );
        self.inner.poison(r)
    }

    /// Checks the space manager's invariants and that every free page is unmapped.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let st = self.inner.lock_state();
        // Free pages are page ids: never more of them than ids.
        debug_assert!(st.free.count() as u64 <= self.inner.page_capacity());
        st.space.check_invariants()?;
        if let Some(pid) = st.free.pids().find(|p| st.space.location(*p).is_some()) {
            return Err(format!("free page {pid} is still mapped"));
        }
        Ok(())
    }

    /// `stored[i]`: page i compressed (None: raw, or not a data page), made before the
    /// writer lock by `write_batch`; `survivors[i]` (empty: none): page i is a GC survivor.
    fn write_pages(
        &self,
        pages: &[(PageId, &PageBuf)],
        mut stored: Vec<Option<Vec<u8>>>,
        purpose: WritePurpose,
        survivors: &[bool],
    ) -> Result<()> {
        let inner = &self.inner;
        assert_eq!(stored.len(), pages.len());
        assert!(survivors.is_empty() || survivors.len() == pages.len());
        let _w = inner.lock_writer();
        // Before the FREE records too: a run of batches holding only freed pages (deleting a
        // lot) would otherwise fill the journal without ever reaching a snapshot.
        inner.maybe_snapshot()?;
        let mut data: Vec<(PageId, &PageBuf)> = Vec::with_capacity(pages.len());
        let mut data_stored = Vec::with_capacity(pages.len());
        let mut data_survivors: Vec<bool> = Vec::with_capacity(survivors.len());
        for (i, (pid, page)) in pages.iter().enumerate() {
            assert!(*pid < inner.page_capacity(), "page {pid} beyond the page capacity");
            if *pid == crate::page::meta::META_PAGE_ID {
                let buf = AlignedBuf::copy_of(&page[..]);
                inner.device.write_batch(&[WriteOp {
                    offset: inner.layout.superblock_offset_bytes,
                    data: &buf,
                    purpose,
                    placement: crate::device::Placement::None,
                }])?;
            } else if !self.keep_free_header(*pid, page)? {
                data.push((*pid, *page));
                data_stored.push(stored[i].take());
                data_survivors.extend(survivors.get(i));
            }
        }
        if data.is_empty() {
            return Ok(());
        }
        let descs = descs_of(&data, &data_stored, purpose, &data_survivors);
        let plan = inner.lock_state().space.plan_write(&descs);
        let append = Append {
            pages: &data,
            stored: &data_stored,
            packing: inner.options.packing,
            plan: &plan,
            purpose,
            gc_from: None,
            new_versions: &[],
            survivors: &data_survivors,
        };
        let mut steps = Writing { append: AppendSteps { inner, append }, gc: GcLoop(inner) };
        orchestrate::write(&mut steps)?;
        if inner.options.background_gc && !inner.lock_state().space.gc_satisfied() {
            inner.wake.notify_one();
        }
        Ok(())
    }

    /// Page `pid` stored at `loc`, whose slots are the device bytes `range`: one aligned 4 KiB
    /// read (two for a page concatenated across a slot's end), into `buf` directly when the
    /// page is stored raw in one slot, else decoded from the slots.
    fn read_stored(
        &self,
        pid: PageId,
        loc: crate::space::Location,
        range: std::ops::Range<u64>,
        buf: &mut PageBuf,
    ) -> Result<()> {
        let inner = &self.inner;
        if inner.options.compression == super::codec::Compression::Device {
            return super::device_append::read_page(inner, pid, loc, buf);
        }
        let slots = (range.end - range.start) / PAGE_SIZE as u64;
        assert!(slots == 1 || (slots == 2 && loc.crosses()), "{loc:?} reads {range:?}");
        inner.codec.note_read(slots);
        if usize::from(loc.stored_bytes) == PAGE_SIZE && !loc.crosses() {
            return Ok(inner.device.read_at(range.start, buf)?);
        }
        let mut slot = AlignedBuf::zeroed(slots as usize * PAGE_SIZE);
        inner.device.read_at(range.start, &mut slot)?;
        let start = usize::from(loc.offset_bytes);
        let stored = &slot[start..start + usize::from(loc.stored_bytes)];
        inner
            .codec
            .decode(stored, buf)
            .map_err(|e| Error::CorruptPage { page_id: pid, reason: e.to_string() })
    }

    /// A free page within the free-page section's bound is kept as its header only: unmapped,
    /// a FREE record logged. Returns false for any other page (it is written as data).
    fn keep_free_header(&self, pid: PageId, page: &PageBuf) -> Result<bool> {
        let inner = &self.inner;
        let Some(h) = free_header(page) else { return Ok(false) };
        let mut st = inner.lock_state();
        if st.free.count() >= inner.layout.free_pages_max as usize {
            return Ok(false);
        }
        // The allocator links a free page only to a page id it handed out (or 0); recovery
        // refuses anything else, so it must never reach the journal.
        assert!(
            page::aux(page) < inner.page_capacity(),
            "free page {pid} links to page {} beyond the page capacity",
            page::aux(page)
        );
        let payload = journal::free_payload(pid, page::aux(page), page::lsn(page));
        let lsn = inner.journal.append(journal::KIND_FREE, &payload)?.0;
        st.map_lsn = lsn;
        st.space.free_pid(pid, lsn);
        st.free.insert(pid, h);
        Ok(true)
    }
}

/// What the placement policy sees of each page of a write-back batch; a GC survivor is
/// planned with the write-back it rides in, as a GC copy.
fn descs_of(
    data: &[(PageId, &PageBuf)],
    stored: &[Option<Vec<u8>>],
    purpose: WritePurpose,
    survivors: &[bool],
) -> Vec<PageDesc> {
    assert_eq!(data.len(), stored.len());
    let descs: Vec<PageDesc> = data
        .iter()
        .zip(stored)
        .enumerate()
        .map(|(i, ((pid, page), s))| {
            let survivor = survivors.get(i) == Some(&true);
            let purpose = if survivor { WritePurpose::GcCopy } else { purpose };
            // The header's history is oldest first with zeros for unused entries.
            let mut write_history = crate::page::write_history(page);
            write_history.reverse();
            PageDesc {
                stored_bytes: s.as_ref().map_or(PAGE_SIZE, Vec::len) as u32,
                write_history,
                tree: crate::page::tree_id(page),
                lsn: crate::page::lsn(page),
                ..PageDesc::plain(*pid, purpose)
            }
        })
        .collect();
    assert_eq!(descs.len(), data.len());
    descs
}

impl Drop for OutOfPlaceStore {
    fn drop(&mut self) {
        *self.inner.shutdown.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.inner.wake.notify_all();
        if let Some(h) = self.background.take() {
            // The one background thread this store spawns is its GC thread.
            debug_assert_eq!(h.thread().name(), Some("wafer-gc"));
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
        let pages = self.inner.page_capacity();
        // Growth adds zones to the layout made at open, never takes any away.
        debug_assert!(pages >= self.inner.layout.page_capacity, "{pages} pages after a shrink");
        pages
    }
    fn layout_bytes(&self) -> u64 {
        let bytes = self.inner.layout_bytes;
        // The superblock records this and the next open sizes its layout from it: it must be
        // the size this layout was made for (0: the device's own, which the layout then spans).
        debug_assert!(bytes == 0 || bytes == self.inner.layout.layout_bytes, "{bytes} recorded");
        bytes
    }
    fn page_capacity_max(&self) -> u64 {
        let max = match self.inner.layout_bytes {
            0 => self.page_capacity(),
            _ => self
                .inner
                .layout
                .with_zone_count(self.inner.layout.zone_count_max)
                .map_or(self.page_capacity(), |l| l.page_capacity),
        };
        // Growing only adds zones: the cap at the most zones bounds the cap now.
        assert!(
            max >= self.page_capacity(),
            "page capacity {} past its maximum {max}",
            self.page_capacity()
        );
        max
    }
    fn grow_to(&self, pages: u64) -> Result<u64> {
        self.inner.check_poisoned()?;
        let r = super::grow::add_zones(&self.inner, pages);
        // The caller hands out ids up to `pages` next: a grow that holds fewer maps nothing there.
        debug_assert!(r.as_ref().map_or(true, |held| *held >= pages), "grew short of {pages}");
        self.inner.poison(r)
    }

    fn stop_background(&self) {
        // The GC thread would wait here for the writer mutex its own cycle holds.
        debug_assert!(
            self.background.as_ref().is_none_or(|h| h.thread().id() != std::thread::current().id()),
            "the GC thread stopping itself"
        );
        *self.inner.shutdown.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.inner.wake.notify_all();
        // A cycle in flight holds `writer`: once we hold it, it is done, and the thread checks
        // `shutdown` under `writer` before any other.
        drop(self.inner.lock_writer());
    }

    fn check_space(&self) -> Vec<String> {
        let violations: Vec<String> = self.check_invariants().err().into_iter().collect();
        // A failed check says what failed: `Db::check` reports these messages alone.
        debug_assert!(violations.iter().all(|v| !v.is_empty()), "{violations:?}");
        violations
    }

    fn read_page(&self, pid: PageId, buf: &mut PageBuf) -> Result<()> {
        let inner = &self.inner;
        if pid == crate::page::meta::META_PAGE_ID {
            return Ok(inner.device.read_at(inner.layout.superblock_offset_bytes, buf)?);
        }
        for _ in 0..READ_ATTEMPTS_MAX {
            let (loc, range) = {
                let st = inner.lock_state();
                match st.space.location(pid) {
                    Some(loc) => {
                        let range = st.space.byte_range(loc);
                        // A mapped page lies in the zones, never on the superblock's slot.
                        let superblock_end = inner.layout.superblock_offset_bytes + SLOT_BYTES;
                        debug_assert!(range.start >= superblock_end, "{pid} at {range:?}");
                        (loc, range)
                    }
                    None => {
                        if !st.free.read(pid, buf) {
                            // Never written: zeros, which the pool's verify refuses.
                            buf.fill(0);
                        }
                        return Ok(());
                    }
                }
            };
            let r = self.read_stored(pid, loc, range, buf);
            // GC may have moved the page and reset its old zone during the read: the result
            // counts only if the map still points where we read.
            if inner.lock_state().space.location(pid) == Some(loc) {
                return r;
            }
        }
        Err(Corruption::PageKeptMoving { page_id: pid }.into())
    }

    fn read_page_cached(
        &self,
        pid: PageId,
        buf: &mut PageBuf,
        cache_bytes_max: u64,
    ) -> Result<bool> {
        // Cached reads are of blob pages; the superblock has its own slot and path.
        debug_assert_ne!(pid, crate::page::meta::META_PAGE_ID, "the superblock read cached");
        match super::cached_read::read(&self.inner, pid, buf, cache_bytes_max)? {
            Some(hit) => Ok(hit),
            None => self.read_page(pid, buf).map(|()| false),
        }
    }

    fn write_batch(&self, pages: &[(PageId, &PageBuf)], purpose: WritePurpose) -> Result<()> {
        // The pool writes only ids the store holds: one past the capacity has no map entry.
        debug_assert!(
            pages.iter().all(|(pid, _)| *pid < self.inner.page_capacity()),
            "{purpose:?}"
        );
        self.write_batch_with_survivors(pages, purpose, &vec![false; pages.len()])
    }

    fn write_batch_with_survivors(
        &self,
        pages: &[(PageId, &PageBuf)],
        purpose: WritePurpose,
        survivors: &[bool],
    ) -> Result<()> {
        assert_eq!(pages.len(), survivors.len());
        self.inner.check_poisoned()?;
        if pages.is_empty() {
            return Ok(());
        }
        let survivor_count = survivors.iter().filter(|s| **s).count();
        self.inner.logical.add_pages(purpose, pages.len() - survivor_count);
        self.inner.logical.add_pages(WritePurpose::GcCopy, survivor_count);
        let survivors = if survivor_count > 0 { survivors } else { &[] };
        // Compressed here, off the writer lock: the batch is already copied out of the frames.
        let compression = self.inner.options.compression;
        let stored: Vec<Option<Vec<u8>>> = pages
            .iter()
            .map(|(pid, page)| {
                let data = *pid != crate::page::meta::META_PAGE_ID && free_header(page).is_none();
                let compress = data && compression.on_host();
                compress.then(|| self.inner.codec.encode(compression, page)).flatten()
            })
            .collect();
        // One location per page id in a batch: a page twice would map only its later copy
        // while both count as valid in their zones.
        check_distinct_pids(pages);
        let r = self.write_pages(pages, stored, purpose, survivors);
        self.inner.poison(r)
    }

    fn sync(&self) -> Result<()> {
        // A growable file grows only up to its layout: the device never outgrew it.
        debug_assert!(
            self.inner.layout_bytes == 0
                || self.inner.device.capacity_bytes() <= self.inner.layout_bytes
        );
        Ok(self.inner.device.sync()?)
    }

    /// Written as any batch (placement, compression, packing: the policy sees purpose Blob),
    /// then the journal is flushed so the map finds them after a crash.
    fn write_blobs(&self, pages: &[(PageId, &PageBuf)]) -> Result<()> {
        debug_assert!(pages.iter().all(|(pid, _)| *pid != crate::page::meta::META_PAGE_ID));
        self.write_batch(pages, WritePurpose::Blob)?;
        let _w = self.inner.lock_writer();
        let r = self.inner.make_durable().and_then(|()| self.inner.maybe_snapshot());
        self.inner.poison(r)
    }

    fn discard(&self, runs: &[std::ops::Range<PageId>]) -> Result<()> {
        self.inner.check_poisoned()?;
        let inner = &self.inner;
        let _w = inner.lock_writer();
        let r = (|| {
            // As before any journal records: a long run of drops must reach a snapshot too.
            inner.maybe_snapshot()?;
            for chunk in runs.chunks(journal::BATCH_MAX) {
                let live: Vec<std::ops::Range<PageId>> = {
                    let st = inner.lock_state();
                    let mapped = |r: &std::ops::Range<PageId>| {
                        assert!(r.end <= inner.page_capacity(), "run {r:?} beyond the capacity");
                        r.clone().any(|pid| st.space.location(pid).is_some())
                    };
                    chunk.iter().filter(|r| mapped(r)).cloned().collect()
                };
                if live.is_empty() {
                    continue;
                }
                let lsn =
                    inner.journal.append(journal::KIND_DROPS, &journal::drops_payload(&live))?.0;
                let mut st = inner.lock_state();
                st.map_lsn = lsn;
                for pid in live.iter().flat_map(|r| r.clone()) {
                    if st.space.location(pid).is_some() {
                        st.space.free_pid(pid, lsn);
                    }
                }
                drop(st);
                // A small journal must not fill with one long run of drops.
                inner.maybe_snapshot()?;
            }
            Ok(())
        })();
        inner.poison(r)
    }

    fn checkpoint(&self) -> Result<()> {
        self.inner.check_poisoned()?;
        let _w = self.inner.lock_writer();
        let before = self.inner.lock_state().snapshots;
        let r = self.inner.write_snapshot();
        // A checkpoint that returns Ok wrote a snapshot (the map is durable in it).
        debug_assert!(r.is_err() || self.inner.lock_state().snapshots > before);
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
        // Each loop's bound, in cycles: twice the zones for every zone, the zones otherwise.
        let bound =
            u64::from(self.inner.lock_state().space.zone_count()) * if every_zone { 2 } else { 1 };
        debug_assert!(r.as_ref().map_or(true, |c| u64::from(*c) <= bound), "{r:?} cycles");
        self.inner.poison(r)
    }

    fn attach_gc_cache(&self, cache: Weak<dyn GcPageCache>) {
        // Bound once per open; a second call would be a wiring bug, and the first pool wins.
        let bound = self.inner.gc_cache.set(cache).is_ok();
        debug_assert!(bound, "GC cache bound twice");
    }

    fn logical_bytes(&self) -> LogicalBytes {
        let bytes = self.inner.logical.snapshot();
        // Logical writes are whole pages, whatever the codec made of them.
        debug_assert!(bytes.by_purpose.iter().all(|b| b.is_multiple_of(PAGE_SIZE as u64)));
        bytes
    }

    fn out_of_place_stats(&self) -> Option<OutOfPlaceStats> {
        let stats = self.stats();
        // A layout has zones, and each holds slots: no figure below is per nothing.
        debug_assert!(stats.zone_count > 0 && stats.slots_per_zone > 0, "{stats:?}");
        Some(stats)
    }
}

/// Asserts that no page id appears twice in `pages` (in debug builds only: it sorts).
fn check_distinct_pids(pages: &[(PageId, &PageBuf)]) {
    if !cfg!(debug_assertions) {
        return;
    }
    let mut pids: Vec<PageId> = pages.iter().map(|(pid, _)| *pid).collect();
    pids.sort_unstable();
    debug_assert!(pids.windows(2).all(|w| w[0] != w[1]), "a write batch names a page twice");
}

const _: () = assert!(SLOT_BYTES == PAGE_SIZE as u64);

/// The write entry point's steps: the executor for this batch, GC when it runs short.
#[derive(Debug)]
struct Writing<'a> {
    append: AppendSteps<'a>,
    gc: GcLoop<'a>,
}

impl Durable for Writing<'_> {
    type Error = Error;
    fn try_append(&mut self) -> Result<Outcome> {
        // A batch and the GC that makes room for it act on one store.
        debug_assert!(std::ptr::eq(self.append.inner, self.gc.0), "GC of another store");
        self.append.try_append()
    }
    fn make_durable(&mut self) -> Result<()> {
        // A batch and the GC that makes room for it act on one store.
        debug_assert!(std::ptr::eq(self.append.inner, self.gc.0), "GC of another store");
        self.append.make_durable()
    }
    fn out_of_space(&self) -> SpaceError {
        // A batch and the GC that makes room for it act on one store.
        debug_assert!(std::ptr::eq(self.append.inner, self.gc.0), "GC of another store");
        self.append.out_of_space()
    }
}

impl Collect for Writing<'_> {
    type Error = Error;
    fn gc_cycle(&mut self) -> Result<bool> {
        // A batch and the GC that makes room for it act on one store.
        debug_assert!(std::ptr::eq(self.append.inner, self.gc.0), "GC of another store");
        self.gc.gc_cycle()
    }
    fn needs_gc(&self) -> bool {
        // A batch and the GC that makes room for it act on one store.
        debug_assert!(std::ptr::eq(self.append.inner, self.gc.0), "GC of another store");
        self.gc.needs_gc()
    }
    fn gc_satisfied(&self) -> bool {
        // A batch and the GC that makes room for it act on one store.
        debug_assert!(std::ptr::eq(self.append.inner, self.gc.0), "GC of another store");
        self.gc.gc_satisfied()
    }
    fn zone_count(&self) -> u32 {
        // A batch and the GC that makes room for it act on one store.
        debug_assert!(std::ptr::eq(self.append.inner, self.gc.0), "GC of another store");
        self.gc.zone_count()
    }
}
