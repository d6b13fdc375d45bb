//! Space manager of the out-of-place write mode (000 sec. 2, 4.1, 6.2 "Space metadata"):
//! zones, the page map and its reverse, where a write-back batch goes, and DB GC's policy half.
//! Pure metadata plus two small I/O helpers ([`io`]); the out-of-place `PageStore` owns a
//! [`Space`] and does the page I/O. See docs/internals/space.md for states, encodings,
//! memory and the durability protocol.
//!
//! # API for the integrator
//!
//! ```text
//! let mut space = Space::new(SpaceOptions::production(data_offset, data_bytes))?;
//!
//! write-back of n pages (group = stream / GDT group hint, purpose = UserEviction, ...):
//!   runs = space.reserve_batch(n, group, purpose)?      // Vec<SlotRun>, contiguous per run
//!   for run: device write at space.run_offset_bytes(&run), placement space.placement(run.zone)
//!   device sync; log one map record per page at lsn L (page data durable before the record)
//!   space.commit(pid, run.location(i, stored_bytes), L)  -> old location (now invalid)
//!   (a reserved slot that will not be committed: space.abandon(loc))
//! page freed by the tree: space.free_pid(pid, L)
//! read: space.location(pid) -> Location; space.offset_bytes(loc)
//!
//! GC (before reserving when space.needs_gc(), until space.gc_satisfied() or no plan):
//!   plan = space.plan_gc()?                  // victim chosen by the policy, now Victim
//!   for (pid, from) in plan.valid: read the page (buffer pool or device at from),
//!     reserve_batch(.., GC group, WritePurpose::GcCopy), write, sync, log at L,
//!     space.commit_gc_move(pid, from, to, L)  // false: the page moved meanwhile; `to` is dead
//!   space.finish_victim(plan.zone, L)        // PendingReset until the log is durable to L'
//!   after each log flush: zones = space.release_ready(durable_lsn);
//!     io::reset_zones(device, &space, &zones)  // trim (conventional) or zone reset (ZNS)
//!
//! reserve_batch errors (nothing changed on any of them; see oop/model_device.rs `write_batch`):
//!   NeedsGc -> run one GC cycle, retry;
//!   AwaitingDurability { lsn_needed } -> flush the log, release_ready, retry;
//!   OutOfSpace -> final: live data fills the device; fail the write.
//!
//! checkpoint (every record <= lsn durable):
//!   bytes = snapshot::encode(space.map(), lsn, space.zone_count(), space.slots_per_zone());
//!   io::write_snapshot(device, offset, &bytes); device sync   // 4 KiB blocks, Metadata purpose
//! recovery:
//!   snap = io::read_snapshot(device, offset, zone_count, slots_per_zone)?;
//!   replay map records after snap.header.lsn with snap.map.set(pid, loc) / .clear(pid);
//!   (space, to_reset) = Space::rebuild_from_map(options, snap.map)?;
//!   io::reset_zones(device, &space, &to_reset)?;
//! accounting: space.counters() (slots issued by purpose, GC victims' valid ratio, DB WAF).
//! ```
use std::collections::VecDeque;

mod alloc;
mod build_policy;
mod error;
pub mod gc;
mod gdt;
mod group_pack;
mod invariants;
pub mod io;
mod map;
pub mod nowa;
pub mod nowa_groups;
mod options;
pub mod pack;
pub mod placement;
mod recovery;
pub mod snapshot;
mod stats;
mod zone;

#[cfg(test)]
mod tests;

pub use alloc::SlotRun;
pub use error::{SnapshotError, SpaceError};
pub use gc::{GcPlan, VictimPolicy, VictimPolicyKind};
#[cfg(test)]
pub use map::SlotEntry;
pub use map::{Location, PageId, PageMap, ReverseMap, PACK_ALIGN_BYTES, SLOT_BYTES};
pub use options::{ArtifactOptions, SpaceOptions, ZONE_BYTES_DEFAULT};
pub use placement::{GroupRun, PageDesc, PlacementKind, PlacementPolicy, PlacementView, WritePlan};
pub use stats::{GcRecord, SpaceCounters, VALID_RATIO_BINS};
pub use zone::{Lsn, ZoneId, ZoneState, ZoneTable};

use crate::device::Placement;

/// The space manager: zone table, page map, reverse map, free queue, open zones, GC policy and
/// counters. Single-threaded: the owner serialises calls (one write path at a time).
#[derive(Debug)]
pub struct Space {
    options: SpaceOptions,
    zones: ZoneTable,
    map: PageMap,
    reverse: ReverseMap,
    /// Empty zones, oldest reset first: FIFO reuse spreads erases evenly.
    empty: VecDeque<ZoneId>,
    /// Zones freed by GC waiting for the log (state PendingReset).
    pending_reset: Vec<ZoneId>,
    /// Victims whose survivors the buffer pool holds (state Victim), oldest first: each
    /// finishes when the write-backs have moved its last valid page out (`gc/drain.rs`).
    draining: VecDeque<ZoneId>,
    /// The open zone of each write group (`group % max_open_zones`).
    open_by_group: Vec<Option<ZoneId>>,
    /// Where batches go (decides write plans and zone hints).
    placement: Box<dyn PlacementPolicy>,
    policy: Box<dyn VictimPolicy>,
    stats: stats::SpaceStats,
    /// Slots reserved so far: the logical clock age-aware policies measure age with.
    clock: u64,
    /// NoWA's estimate of the SSD's layout, when NoWA is on.
    nowa: Option<nowa::SsdModel>,
}

impl Space {
    /// An empty data area: every zone Empty, no page mapped.
    pub fn new(options: SpaceOptions) -> Result<Space, SpaceError> {
        options.validate()?;
        let zone_count = options.zone_count();
        let slots_per_zone = options.slots_per_zone();
        Ok(Space {
            options,
            zones: ZoneTable::new(zone_count, slots_per_zone),
            map: PageMap::new(),
            reverse: ReverseMap::new(zone_count, slots_per_zone),
            empty: (0..zone_count).collect(),
            pending_reset: Vec::new(),
            draining: VecDeque::new(),
            open_by_group: vec![None; options.max_open_zones as usize],
            placement: options.placement.build_with(options.artifact),
            policy: match options.artifact.gc_burst {
                true => Box::new(gc::Burst),
                false => options.policy.build(),
            },
            stats: stats::SpaceStats::default(),
            clock: 0,
            nowa: options.nowa.map(|o| nowa::SsdModel::new(o, zone_count)),
        })
    }

    pub fn options(&self) -> &SpaceOptions {
        &self.options
    }

    /// The data area grew (the file holds more zones): `options` name the new zone count, the
    /// same zones otherwise. The new zones are Empty and queue behind the empty ones there are.
    /// NoWA models a fixed SSD and never grows.
    pub fn grow(&mut self, options: SpaceOptions) -> Result<(), SpaceError> {
        options.validate()?;
        let (old, new) = (self.zone_count(), options.zone_count());
        let same_zones = options.zone_bytes == self.options.zone_bytes
            && options.zone_stride_bytes == self.options.zone_stride_bytes
            && options.data_offset_bytes == self.options.data_offset_bytes;
        assert!(new >= old && same_zones && self.nowa.is_none() && options.nowa.is_none());
        self.zones.grow(new);
        self.reverse.grow(new);
        self.empty.extend(old..new);
        self.options = options;
        assert_eq!(self.zone_count(), new);
        Ok(())
    }
    pub fn zones(&self) -> &ZoneTable {
        &self.zones
    }
    pub fn map(&self) -> &PageMap {
        &self.map
    }
    #[cfg(test)]
    pub fn reverse(&self) -> &ReverseMap {
        &self.reverse
    }
    pub fn location(&self, pid: PageId) -> Option<Location> {
        self.map.get(pid)
    }
    pub fn slots_per_zone(&self) -> u32 {
        self.zones.slots_per_zone()
    }
    pub fn zone_count(&self) -> u32 {
        self.zones.len()
    }
    /// Data-area slots in all zones.
    pub fn capacity_slots(&self) -> u64 {
        u64::from(self.zone_count()) * u64::from(self.slots_per_zone())
    }
    /// Slots holding live pages (= mapped page ids, one page per slot).
    pub fn live_slots(&self) -> u64 {
        self.map.mapped_count()
    }
    /// Zones open for appends now (never more than `max_open_zones`).
    pub fn open_zone_count(&self) -> u32 {
        self.open_by_group.iter().filter(|z| z.is_some()).count() as u32
    }
    pub fn empty_zone_count(&self) -> u32 {
        self.empty.len() as u32
    }
    pub fn pending_reset_zone_count(&self) -> u32 {
        self.pending_reset.len() as u32
    }
    #[cfg(test)]
    /// The logical clock: slots reserved so far.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    #[cfg(test)]
    /// NoWA's model of the SSD, when NoWA is on.
    pub fn nowa(&self) -> Option<&nowa::SsdModel> {
        self.nowa.as_ref()
    }

    /// NoWA's model as a snapshot keeps it (None when NoWA is off).
    pub fn nowa_snapshot(&self) -> Option<snapshot::NoWaSnapshot> {
        let model = self.nowa.as_ref()?;
        let spans = model.spans().collect();
        Some(snapshot::NoWaSnapshot { stream_slots: model.stream_slots(), spans })
    }

    /// After [`Space::rebuild_from_map`]: NoWA's model from the snapshot, for the zones that
    /// still hold data. A zone holding data the snapshot has no span for was opened after it;
    /// it gets a zone's worth of stream after the saved position (its place is unknown, so it
    /// is modelled as written next). Nothing happens when NoWA is off.
    pub fn restore_nowa(&mut self, saved: &snapshot::NoWaSnapshot) {
        let Some(unit) = self.nowa.as_ref().map(|m| m.options().unit_slots) else { return };
        let zone_count = self.zones.len();
        let holds_data =
            |z: ZoneId| z < zone_count && self.zones.get(z).state() != ZoneState::Empty;
        let mut known = vec![false; zone_count as usize];
        let mut spans: Vec<(ZoneId, u64, u64)> = Vec::with_capacity(saved.spans.len());
        for &(zone, first, last) in saved.spans.iter().filter(|(z, _, _)| holds_data(*z)) {
            known[zone as usize] = true;
            spans.push((zone, first, last));
        }
        let spz = u64::from(self.zones.slots_per_zone());
        let mut stream = saved.stream_slots;
        for zone in (0..zone_count).filter(|z| holds_data(*z) && !known[*z as usize]) {
            spans.push((zone, stream / unit, (stream + spz - 1) / unit));
            stream += spz;
        }
        if let Some(model) = self.nowa.as_mut() {
            model.restore(stream, &spans);
        }
    }

    /// `bytes` were written to the device outside the zones (snapshots): NoWA's stream
    /// estimate counts them.
    pub fn note_metadata_write(&mut self, bytes: u64) {
        if let Some(model) = self.nowa.as_mut() {
            model.metadata(bytes.div_ceil(SLOT_BYTES));
        }
    }

    /// What the placement policy sees, given each group's room (`room_by_group`).
    fn placement_view<'a>(&self, room_slots: &'a [u32]) -> PlacementView<'a> {
        assert_eq!(room_slots.len(), self.options.max_open_zones as usize);
        PlacementView {
            clock: self.clock,
            max_open_zones: self.options.max_open_zones,
            room_slots,
            empty_zones: self.empty_zone_count(),
        }
    }

    /// Per group, the slots left in its open zone (what the placement policy sees).
    fn room_by_group(&self) -> Vec<u32> {
        (0..self.options.max_open_zones).map(|g| self.room_slots(g)).collect()
    }

    /// The placement policy's plan for a batch of user write-back pages.
    pub fn plan_write(&mut self, batch: &[PageDesc]) -> WritePlan {
        assert!(!batch.is_empty());
        let room = self.room_by_group();
        let view = self.placement_view(&room);
        let plan = self.placement.plan(batch, &view);
        if let Err(why) = plan.check(batch.len()) {
            panic!("placement {} planned wrongly: {why}", self.placement.name());
        }
        assert!(plan.groups.iter().all(|g| g.group < self.options.max_open_zones));
        plan
    }

    /// The group GC copyback goes to: the placement policy's, or with the artifact's
    /// `gc_with_user` user group 0 (every policy's first user group).
    pub fn gc_group(&self) -> u32 {
        if self.options.artifact.gc_with_user {
            return 0;
        }
        let room = self.room_by_group();
        let view = self.placement_view(&room);
        self.placement.gc_group(&view)
    }

    /// The placement policy's plan for GC's copies of `pages`, which the victim policy sends
    /// to `dest_group`.
    pub(super) fn plan_gc_copies(&mut self, pages: &[PageId], dest_group: u32) -> WritePlan {
        assert!(!pages.is_empty());
        let room = self.room_by_group();
        let view = self.placement_view(&room);
        // The artifact mixes the survivors into the user write stream.
        let plan = match self.options.artifact.gc_with_user {
            true => self.placement.plan_gc_with_user(pages, &view),
            false => self.placement.plan_gc(pages, dest_group, &view),
        };
        if let Err(why) = plan.check(pages.len()) {
            panic!("placement {} planned GC wrongly: {why}", self.placement.name());
        }
        assert!(plan.groups.iter().all(|g| g.group < self.options.max_open_zones));
        // Counting each page as a slot bounds the zones the copies open from above; GC cannot
        // wait for room, so a plan that might not fit goes to the victim policy's group,
        // whose room the victim policy checked.
        // Less one empty zone: the victim policy leaves it for the user writes that wait.
        if self.zones_needed(&plan) > self.empty_zone_count().saturating_sub(1) {
            return WritePlan::single(pages.len() as u32, dest_group);
        }
        plan
    }

    /// Device byte offset of a location.
    pub fn offset_bytes(&self, loc: Location) -> u64 {
        assert!(loc.zone < self.zone_count() && loc.slot < self.slots_per_zone());
        self.zone_offset_bytes(loc.zone) + u64::from(loc.slot) * SLOT_BYTES
    }

    /// The device bytes to read for a location: its whole 4 KiB slot, or two adjacent ones for
    /// a page that crosses (packing off). The one function that turns a location into a byte
    /// range.
    pub fn byte_range(&self, loc: Location) -> std::ops::Range<u64> {
        let start = self.offset_bytes(loc);
        let slots = loc.slots();
        assert!(slots.end <= self.slots_per_zone(), "{loc:?} crosses its zone's end");
        assert!(loc.end_bytes() <= 2 * SLOT_BYTES);
        start..start + u64::from(slots.end - slots.start) * SLOT_BYTES
    }

    /// Device byte offset of a zone's first slot.
    pub fn zone_offset_bytes(&self, zone: ZoneId) -> u64 {
        assert!(zone < self.zone_count());
        self.options.data_offset_bytes + u64::from(zone) * self.options.zone_stride_bytes
    }

    /// The FDP handle of a zone opening in open-zone slot `owner`: the slot modulo the
    /// handles, so zones open at the same time (at most `placement_handles` of them, checked
    /// by the options) never share a reclaim unit handle and each fills reclaim units of its
    /// own (000 sec. 5.5). A full zone's handle no longer matters (nothing appends to it), so
    /// recovery, which closes every open zone, needs none persisted.
    pub(super) fn fdp_hint(&self, owner: u32) -> Placement {
        match self.options.placement_handles {
            0 => Placement::None,
            handles => Placement::Fdp((owner % u32::from(handles)) as u16),
        }
    }

    /// The placement hint writes to `zone` carry.
    pub fn placement(&self, zone: ZoneId) -> Placement {
        self.zones.get(zone).placement()
    }

    /// Accounting since creation (subtract two for an interval).
    pub fn counters(&self) -> SpaceCounters {
        let (nowa_compensations, nowa_compensation_slots) =
            self.nowa.as_ref().map_or((0, 0), |m| m.compensation_counts());
        SpaceCounters {
            edt: self.placement.edt_counters(),
            nowa_compensations,
            nowa_compensation_slots,
            nowa_live_units: self.nowa.as_ref().map_or(0, |m| m.live_units()),
            ..self.stats.counters()
        }
    }
}
