//! The out-of-place store's shared state and its durability steps: the metadata behind the
//! `state` lock, the device, the map journal, and the three ways map changes become durable
//! (journal flush, snapshot) and free zones are released. Below the executor (append.rs), GC
//! (gc.rs) and the store's entry points (store.rs); it calls none of them.
//!
//! Locks: `writer` serialises everything that changes the map or the device's zones (write
//! batches, frees, GC cycles, snapshots): appends to a zone then reach the device in order (ZNS
//! requires it) and GC sees no concurrent map change. `state` guards the metadata and is held
//! only for short, I/O-free sections, so reads proceed while a batch is being written.
use super::free::FreePages;
use super::journal;
use super::layout::Layout;
use super::options::OutOfPlaceOptions;
use crate::device::{AlignedBuf, Device};
use crate::pagestore::{GcCopyCounts, GcPageCache, LogicalCounter};
use crate::space::{io as space_io, snapshot, Lsn, Space};
use crate::wal::{Durability, Lsn as WalLsn, Wal};
use crate::{Error, Result};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};

#[derive(Debug)]
pub(crate) struct State {
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
pub(crate) struct Inner {
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
    /// Page bytes handed to the store by purpose (GC's dirty versions count as the eviction
    /// they replace).
    pub logical: LogicalCounter,
    /// Compression, packing and read counters.
    pub codec: super::codec::CodecCounters,
    /// Stored bytes of pages read outside the buffer pool (blob pages): `cached_read.rs`.
    pub stored_cache: super::stored_cache::StoredCache,
    /// Page ids `0..page_capacity`: the layout's at open, raised as the file grows.
    pub page_capacity: AtomicU64,
    /// The size the layout was made for when the file may grow (the superblock records it);
    /// 0: the device's, and no growth.
    pub layout_bytes: u64,
}

impl Inner {
    pub fn page_capacity(&self) -> u64 {
        let pages = self.page_capacity.load(Ordering::Acquire);
        // Page ids 0 (superblock) and 1 (catalog root) exist in every layout.
        debug_assert!(pages > 1, "a layout of {pages} page ids");
        pages
    }
    pub fn lock_state(&self) -> MutexGuard<'_, State> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // The next snapshot area indexes `area_lsn`: one of the two areas.
        debug_assert!(st.next_area < 2, "snapshot area {}", st.next_area);
        st
    }
    pub fn lock_writer(&self) -> MutexGuard<'_, ()> {
        // Writers append map changes to the journal: it made durable only what it holds.
        debug_assert!(self.journal.durable_lsn() <= self.journal.next_lsn());
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn check_poisoned(&self) -> Result<()> {
        // A growable file grows only up to its layout: the device never outgrew it.
        debug_assert!(
            self.layout_bytes == 0 || self.device.capacity_bytes() <= self.layout_bytes,
            "device beyond its layout of {} bytes",
            self.layout_bytes
        );
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
        // Only "no space" leaves the store usable: any other error refuses the writes after it.
        debug_assert!(
            r.is_ok()
                || matches!(r, Err(Error::OutOfSpace(_)))
                || self.poisoned.load(Ordering::Relaxed)
        );
        r
    }

    /// Writes a snapshot of the map and the free pages to the older area at a journal mark,
    /// syncs, truncates the journal before the other area's snapshot (kept for a torn write of
    /// this one), then releases the zones waiting for durability. Caller holds `writer`, so
    /// the map cannot change meanwhile; all page data it points to was synced by its batch.
    pub fn write_snapshot(&self) -> Result<()> {
        let (map, geometry, nowa, free, lsn, area) = {
            let mut st = self.lock_state();
            st.snapshots += 1;
            let mark = self.journal.append(journal::KIND_MARK, &st.snapshots.to_le_bytes())?;
            // Durable now: a later snapshot truncates the journal at this mark, and the log
            // can be truncated only where it is durable.
            self.journal.commit(mark, Durability::Sync)?;
            let mark = mark.0;
            let s = &st.space;
            // A copy, encoded (packed: milliseconds) after the lock, which readers need; the
            // writer lock held meanwhile keeps the map from changing.
            let (map, nowa) = (s.map().clone(), s.nowa_snapshot());
            (
                map,
                (s.zone_count(), s.slots_per_zone()),
                nowa,
                st.free.encode(mark),
                mark,
                st.next_area,
            )
        };
        let bytes = snapshot::encode(&map, lsn, geometry.0, geometry.1, nowa.as_ref());
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
            st.space.note_metadata_write((map_bytes.len() + free_bytes.len()) as u64);
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
            // The journal's own durable point now covers every record behind `map_lsn`.
            assert!(self.journal.durable_lsn().0 > lsn, "journal durable below {lsn}");
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
        // The newer area's mark is a journal position already written.
        assert!(last <= self.journal.next_lsn().0, "snapshot mark {last} past the journal");
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
        debug_assert!(zones.windows(2).all(|w| w[0] != w[1]), "a zone released twice: {zones:?}");
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
        // GC reads pages by id through the pool: ids 0 and 1 exist in every layout.
        debug_assert!(self.page_capacity.load(Ordering::Acquire) > 1);
        self.gc_cache.get().and_then(Weak::upgrade)
    }
}

impl State {
    /// `next_lsn`: the journal's append position. Every record before it is durable (it was
    /// recovered, or there is none); the next record starts *at* it, so it must not count as
    /// durable: the marks are one below. (They were `next_lsn`, which let a zone whose pages
    /// moved out in the first record after an open be reset before that record was flushed:
    /// a power cut then lost the pages. NoWA's crash test found it: its compensations run
    /// GC right after recovery.)
    pub fn new(space: Space, free: FreePages, next_lsn: Lsn) -> State {
        let last = next_lsn.saturating_sub(1);
        assert!(next_lsn > 0, "a journal position is past its header");
        State {
            space,
            free,
            map_lsn: last,
            durable_lsn: last,
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
